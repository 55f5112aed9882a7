#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Host libFuzzer targets of libdat (no kernel, no device):
#   dat_conf     the dat.conf parser (user/registry.cpp)
#   ring_layout  the ring header sizes libdat trusts (user/ring.hpp)
#   ring_index   the kernel's clamping of user-written ring indices
#                (kernel/ring_index.h, compiled unchanged)
# Builds them into build/fuzz/ with clang++ -fsanitize=fuzzer,address,
# undefined from the library's own sources, then runs each for a fixed
# time from a fixed seed, starting from the committed corpus
# (tests/host/fuzz/corpus/<target>, copied: the run never writes there).
# Prints "PASS: hostfuzz_<target> (<runs> runs)" or "FAIL: ...", then
# "N passed, M failed"; exits non-zero if a target failed.
#
#   tests/host/fuzz/run.sh [SECONDS [SEED]]     (default 15 s, seed 1)
#   env CXX=clang++-14 CC=clang-14 to pick the compiler
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
TIME=${1:-15}
SEED=${2:-1}
OUT=build/fuzz
CXX=${CXX:-$(command -v clang++ || command -v clang++-14)}
CC=${CC:-$(command -v clang || command -v clang-14)}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
CXXFLAGS="-std=c++20 -g -O1 $SAN -Iinclude -Iuser/include -Iuser"
mkdir -p "$OUT"

npass=0
nfail=0
pass() { echo "PASS: $*"; npass=$((npass + 1)); }
fail() { echo "FAIL: $*"; nfail=$((nfail + 1)); }

if [[ -z $CXX || -z $CC ]]; then
	fail "hostfuzz_build no clang/clang++ (apt-get install clang-14 libclang-rt-14-dev)"
	echo "$npass passed, $nfail failed"
	exit 1
fi

# libdat's sources (every user/*.cpp, as user/CMakeLists.txt builds
# them), instrumented.
build_lib() {
	local objs=() s o
	for s in user/*.cpp; do
		o=$OUT/obj/$(basename "$s" .cpp).o
		mkdir -p "$OUT/obj"
		if [[ ! $o -nt $s ]] || [[ -n $(find user include -newer "$o" -name '*.h*' -print -quit) ]]; then
			$CXX $CXXFLAGS -fsanitize=fuzzer-no-link -c "$s" -o "$o" || return 1
		fi
		objs+=("$o")
	done
	o=$OUT/obj/strerror.o
	$CC -std=gnu11 -g -O1 $SAN -fsanitize=fuzzer-no-link -Iinclude -c kernel/strerror.c -o "$o" ||
		return 1
	objs+=("$o")
	LIBOBJS=("${objs[@]}")
}

LIBOBJS=()
if ! build_lib; then
	fail "hostfuzz_build libdat sources did not compile"
	echo "$npass passed, $nfail failed"
	exit 1
fi

run_target() {
	local t=$1 bin=$OUT/fuzz_$1 log=$OUT/$1.log work=$OUT/corpus-$1 runs
	shift
	if ! $CXX $CXXFLAGS -fsanitize=fuzzer "tests/host/fuzz/fuzz_$t.cpp" "$@" \
		-o "$bin" -ldl -pthread >"$OUT/$t.build.log" 2>&1; then
		fail "hostfuzz_$t build failed (see $OUT/$t.build.log)"
		return
	fi
	rm -rf "$work"
	mkdir -p "$work"
	cp tests/host/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null
	"$bin" -seed="$SEED" -max_total_time="$TIME" -print_final_stats=1 \
		-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$OUT/$t-" \
		"$work" >"$log" 2>&1
	local rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [[ $rc == 0 && -n $runs ]]; then
		pass "hostfuzz_$t ($runs runs)"
	else
		local why
		why=$(grep -m1 -E 'ERROR: |runtime error|fuzz_[a-z_]+: |SUMMARY' "$log")
		fail "hostfuzz_$t exit $rc after ${runs:-?} runs: ${why:-see $log} (crash input: $OUT/$t-*)"
	fi
}

run_target dat_conf "${LIBOBJS[@]}"
run_target ring_layout
run_target ring_index
echo "$npass passed, $nfail failed"
[[ $nfail == 0 ]]
