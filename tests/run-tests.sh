#!/usr/bin/env bash
# The whole test run: host, guest, dat2, install and debug stages,
# then one summary line (docs/testing.md).
#   tests/run-tests.sh              all five stages
#   STAGES=host tests/run-tests.sh  (stages: host guest dat2 install debug)
# Every stage writes PASS:/FAIL: lines to build/test/<stage>.txt; the last
# line printed is "N passed, N failed" over all of them.  Every part of a
# stage knows how many cases it expects (a plan, a list, a case table) and
# reports a FAIL when fewer reported; a non-zero exit without a FAIL line
# is a FAIL.  Stage times go to build/test/times.log.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=$ROOT/build/test
STAGES=${STAGES:-host guest dat2 install debug}
# what a stage prints of its results: the failures, and the kernel stacks
# of a timed-out case's threads (tests/user/common/kdat_harness.h)
FAIL_REPORT='^(FAIL|# thread [0-9]+ kernel stack:|#   )'
mkdir -p "$OUT"
rm -f "$OUT"/*.txt "$OUT/times.log"

KDIR=$(scripts/kdir.sh) || exit 1
export KDIR

# run_listed PREFIX SECONDS LOG CMD...: run a program that prints PASS:/FAIL:
# lines (and maybe "PLAN: N" first), print its lines with PREFIX added where
# missing, plus a FAIL when it timed out, reported fewer than its plan, or
# exited non-zero without a FAIL line.
run_listed() {
	local pfx=$1 secs=$2 log=$3 st plan got
	shift 3
	timeout -k 10 "$secs" "$@" >"$log" 2>&1 </dev/null
	st=$?
	grep -E '^(PASS|FAIL): ' "$log" | sed -E "s/^(PASS|FAIL): ($pfx)?/\1: $pfx/"
	got=$(grep -cE '^(PASS|FAIL): ' "$log")
	plan=$(sed -n 's/^PLAN: *\([0-9]*\).*/\1/p' "$log" | head -n1)
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then
		echo "FAIL: ${pfx}completed (killed after ${secs}s, see $log)"
	elif [ "$st" != 0 ] && ! grep -q '^FAIL: ' "$log"; then
		echo "FAIL: ${pfx}exit_status ($st with no FAIL line, see $log)"
	fi
	if [ -n "$plan" ] && [ "$got" -lt "$plan" ]; then
		echo "FAIL: ${pfx}all_cases_reported ($got of $plan)"
	elif [ "$got" = 0 ]; then
		echo "FAIL: ${pfx}reported_cases (none, see $log)"
	fi
}

stage_host() {
	local r=$OUT/host.txt st sum got planned t
	: >"$r"
	echo "== host stage"
	# every public header alone, as C and C++, and in a kernel module; it
	# ends with its own "N passed, M failed": all of them must be here
	KDIR=$KDIR bash tests/host/headers/check-headers.sh >"$OUT/headers.log" 2>&1
	st=$?
	grep -E '^(PASS|FAIL)' "$OUT/headers.log" >>"$r"
	sed -n 's/^SKIP: \(.*\)/FAIL: headers_not_skipped (\1)/p' "$OUT/headers.log" >>"$r"
	sum=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$OUT/headers.log" | tail -n1)
	got=$(grep -cE '^(PASS|FAIL)' "$OUT/headers.log")
	if [ -z "$sum" ]; then
		echo "FAIL: headers_check_completed (no summary, see $OUT/headers.log)" >>"$r"
	elif [ "$got" -lt $((${sum% *} + ${sum#* })) ]; then
		echo "FAIL: headers_check_all_reported ($got of $((${sum% *} + ${sum#* })))" >>"$r"
	fi
	[ "$st" = 0 ] || grep -q '^FAIL' "$OUT/headers.log" ||
		echo "FAIL: headers_check_exit_status ($st)" >>"$r"
	# the module and the test consumer, W=1, warnings are errors
	if make -s module KDIR="$KDIR" WERROR=1 >"$OUT/module-build.log" 2>&1; then
		echo "PASS: module_builds_w1_without_warnings" >>"$r"
	else
		echo "FAIL: module_builds_w1_without_warnings (see $OUT/module-build.log)" >>"$r"
	fi
	# kernel coding style: checkpatch over the kernel C code, sparse over
	# kdat.ko and the test modules (lint_* lines, counted against its plan)
	run_listed lint_ 900 "$OUT/lint.log" bash tests/host/lint.sh >>"$r"
	if make -s build/abi_smoke >>"$OUT/module-build.log" 2>&1; then
		echo "PASS: abi_smoke_builds" >>"$r"
	else
		echo "FAIL: abi_smoke_builds" >>"$r"
	fi
	if make -s test-modules KDIR="$KDIR" WERROR=1 >>"$OUT/module-build.log" 2>&1; then
		echo "PASS: test_modules_build_w1_without_warnings" >>"$r"
	else
		echo "FAIL: test_modules_build_w1_without_warnings" >>"$r"
	fi
	# the raw-ABI race and fuzz binaries the guest stages run (when their
	# sources exist: a source that does not build fails the run)
	for t in race fuzz; do
		[ -e "tests/user/$t/kdat_$t.c" ] || continue
		if make -s "build/kdat_$t" >>"$OUT/module-build.log" 2>&1; then
			echo "PASS: ${t}_builds_without_warnings" >>"$r"
		else
			echo "FAIL: ${t}_builds_without_warnings (see $OUT/module-build.log)" >>"$r"
		fi
	done
	# libdat and its host unit tests (no kernel needed)
	if make -s user >"$OUT/user-build.log" 2>&1; then
		echo "PASS: libdat_builds_without_warnings" >>"$r"
		planned=$(cd build/user && ctest -N 2>/dev/null |
			sed -n 's/^Total Tests: *\([0-9]*\).*/\1/p')
		(cd build/user && ctest --output-on-failure -j2 --timeout 600) >"$OUT/ctest.log" 2>&1
		sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) \.*  *Passed.*/PASS: host_\1/p;
			s/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) \.*.*\(Failed\|Exception\|Timeout\|Not Run\).*/FAIL: host_\1/p' \
			"$OUT/ctest.log" >"$OUT/ctest.txt.part"
		cat "$OUT/ctest.txt.part" >>"$r"
		grep -q "tests passed" "$OUT/ctest.log" ||
			echo "FAIL: host_ctest_ran (see $OUT/ctest.log)" >>"$r"
		got=$(grep -c . "$OUT/ctest.txt.part")
		rm -f "$OUT/ctest.txt.part"
		if [ -z "$planned" ] || [ "$planned" = 0 ]; then
			echo "FAIL: host_ctest_plan_known (ctest -N lists no tests)" >>"$r"
		elif [ "$got" -lt "$planned" ]; then
			echo "FAIL: host_ctest_all_reported ($got of $planned reported, see $OUT/ctest.log)" >>"$r"
		fi
	else
		echo "FAIL: libdat_builds_without_warnings (see $OUT/user-build.log)" >>"$r"
	fi
	# cross builds: libdat for arm64, armhf, i386, s390x and ppc64el with
	# its host unit tests under qemu-user (one line per ctest case, counted
	# against ctest -N), kdat.ko and the kernel test modules for arm64
	# with W=1
	t=$(date +%s)
	run_listed cross_ 1800 "$OUT/cross.log" scripts/cross.sh >>"$r"
	{
		echo "cross builds took $(($(date +%s) - t)) s"
		sed -n 's/^cross: /  cross: /p' "$OUT/cross.log"
	} >>"$OUT/times.log"
	# make install / uninstall into a staging root; out-of-tree builds
	# against the installed pkg-config file and CMake package
	if [ -e build/user/user/libdat.so ]; then
		bash tests/install/host-install.sh >"$OUT/host-install.out" 2>"$OUT/host-install.log"
		st=$?
		grep -E '^(PASS|FAIL)' "$OUT/host-install.out" >>"$r"
		[ "$st" = 0 ] || grep -q '^FAIL' "$OUT/host-install.out" ||
			echo "FAIL: host_install_exit_status ($st, see $OUT/host-install.log)" >>"$r"
	fi
	# the DKMS package builds for the Debian kernel, in a private tree
	if scripts/dkms.sh check "$(basename "$(dirname "$KDIR")")" \
		>"$OUT/dkms.log" 2>&1; then
		echo "PASS: dkms_builds_module_with_version" >>"$r"
	else
		echo "FAIL: dkms_builds_module_with_version (see $OUT/dkms.log)" >>"$r"
	fi
	# libFuzzer targets of the host-side parsers, when there are any:
	# PASS:/FAIL: lines, optionally a "PLAN: N" first
	if [ -e tests/host/fuzz/run.sh ]; then
		run_listed host_fuzz_ 1800 "$OUT/host-fuzz.log" bash tests/host/fuzz/run.sh >>"$r"
	fi
	grep -c '^PASS' "$r" | sed 's/$/ host checks passed/'
	grep '^FAIL' "$r" || true
}

stage_guest() {
	local r=$OUT/guest.txt st built
	echo "== guest stage (Debian kernel under QEMU, rdma_rxe)"
	if ! [ -e kernel/kdat.ko ] || ! [ -e tests/kernel/kdat_test.ko ]; then
		echo "FAIL: guest_stage_has_modules" >"$r"
		return
	fi
	# the raw-ABI binaries are plain user space: (re)built here if stale
	built=$(raw_tests_build)
	# only the -o directory is writable from the guest
	mkdir -p "$OUT/vm"
	rm -f "$OUT/vm/guest.txt"
	tests/vm/guest-run.sh -q -o "$OUT/vm" -t 1200 -- \
		env RESULTS="$OUT/vm/guest.txt" tests/guest/kernel-tests.sh
	st=$?
	{ [ -z "$built" ] || echo "$built"; cat "$OUT/vm/guest.txt" 2>/dev/null; } >"$r"
	guest_verdict guest_ "$st" "$OUT/vm" >>"$r"
	grep -E "$FAIL_REPORT" "$r" || true
}

# raw_tests_build: make the raw-ABI binaries whose sources exist (a no-op
# when they are up to date); a FAIL line if that fails.  The guest suite
# then reports each missing binary too.
raw_tests_build() {
	make -s raw-tests >"$OUT/raw-tests-build.log" 2>&1 ||
		echo "FAIL: raw_abi_tests_build (see $OUT/raw-tests-build.log)"
}

# guest_verdict PREFIX STATUS OUTDIR: guest-run.sh's status as a check.
guest_verdict() {
	case $2 in
	0) echo "PASS: ${1}kernel_log_clean" ;;
	99) echo "FAIL: ${1}kernel_log_clean (kernel problems, see $3/dmesg.txt$([ -s "$3/kmemleak.txt" ] && echo ", $3/kmemleak.txt"))" ;;
	*) echo "FAIL: ${1}run_completed (status $2, see $3/console.log)" ;;
	esac
}

# The guest suite again, on the debug kernel (scripts/debug-kernel.sh:
# KASAN, lockdep, kmemleak, UBSAN, KFENCE, DEBUG_LIST/OBJECTS), with the
# module and the kernel test modules built against that kernel in
# build/debug/ (the stock build in kernel/ and tests/kernel/ stays as it
# is).  Results are debug_<check>.  The kernel is built once per machine
# (~15-30 min on 2 cores) and cached outside the clone.  kdat_race's
# per-case deadline only catches a hang: on this kernel a case takes
# 10-60 s where the stock one takes 1-5 s, so it gets 300 s, and each
# suite binary 1500 s in all (kdat_race took 514 s).
stage_debug() {
	local r=$OUT/debug.txt st dir b t0 t1 t2 t3 kbuild_s
	echo "== debug stage (the guest suite on a KASAN/lockdep/kmemleak kernel)"
	: >"$r"
	t0=$(date +%s)
	dir=$(scripts/debug-kernel.sh --path)
	[ -f "$dir/ok" ] ||
		echo "building the debug kernel once for this machine (15-30 min on 2 cores; $OUT/debug-kernel.log, $dir/build.log)"
	if ! dir=$(scripts/debug-kernel.sh 2>"$OUT/debug-kernel.log"); then
		echo "FAIL: debug_kernel_builds (see $OUT/debug-kernel.log)" >>"$r"
		grep '^FAIL' "$r"
		return
	fi
	echo "PASS: debug_kernel_builds" >>"$r"
	t1=$(date +%s)
	kbuild_s=$((t1 - t0))
	# copies of the sources, same relative layout (the Kbuild files use
	# -I$(src)/../include and -I$(src)/../../include)
	b=$ROOT/build/debug
	rm -rf "$b"
	mkdir -p "$b/tests"
	cp -a kernel include "$b/"
	cp -a tests/kernel "$b/tests/"
	for d in kernel tests/kernel; do
		make -s -C "$dir/src" M="$b/$d" clean >/dev/null 2>&1
	done
	if make -C "$dir/src" M="$b/kernel" modules >"$OUT/debug-build.log" 2>&1 &&
		make -C "$dir/src" M="$b/tests/kernel" \
			KBUILD_EXTRA_SYMBOLS="$b/kernel/Module.symvers" modules \
			>>"$OUT/debug-build.log" 2>&1; then
		echo "PASS: debug_modules_build" >>"$r"
	else
		echo "FAIL: debug_modules_build (see $OUT/debug-build.log)" >>"$r"
		grep '^FAIL' "$r"
		return
	fi
	raw_tests_build >>"$r"
	t2=$(date +%s)
	mkdir -p "$OUT/dvm"
	rm -f "$OUT/dvm/guest.txt"
	RIG_KERNEL_DIR=$dir tests/vm/guest-run.sh -q -o "$OUT/dvm" -t 2700 -- \
		env RESULTS="$OUT/dvm/guest.txt" KDAT_KO="$b/kernel/kdat.ko" \
		KDAT_TEST_DIR="$b/tests/kernel" KDAT_TIMEOUT=1500 \
		KDAT_RACE_DEADLINE=300 tests/guest/kernel-tests.sh
	st=$?
	t3=$(date +%s)
	sed 's/^\(PASS\|FAIL\): /\1: debug_/' "$OUT/dvm/guest.txt" >>"$r" 2>/dev/null
	guest_verdict debug_ "$st" "$OUT/dvm" >>"$r"
	# the boot line's preempt=none closes 6.1's RCU-tasks boot deadlock
	# (guest-run.sh); a kernel that ignored it would hang boots again
	if grep -q "Dynamic Preempt: none" "$OUT/dvm/console.log" 2>/dev/null; then
		echo "PASS: debug_kernel_preempt_none" >>"$r"
	else
		echo "FAIL: debug_kernel_preempt_none (no 'Dynamic Preempt: none' in $OUT/dvm/console.log)" >>"$r"
	fi
	printf 'debug stage: %d s (kernel build or cache %d s, module build %d s, guest %d s)\n' \
		$((t3 - t0)) "$kbuild_s" $((t2 - t1)) $((t3 - t2)) | tee -a "$OUT/times.log"
	grep -E "$FAIL_REPORT" "$r" || true
}

stage_install() {
	local r=$OUT/install.txt st ver kver tarball
	echo "== install stage (DKMS package, make install, out-of-tree builds, in the guest)"
	: >"$r"
	ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
	kver=$(basename "$(dirname "$KDIR")")
	tarball=$ROOT/build/install/kdat-$ver-$kver.dkms.tar.gz
	mkdir -p "$ROOT/build/install" "$OUT/inst"
	# the compile of `dkms build` runs on the host (minutes under TCG)
	if ! bash tests/install/dkms-prebuild.sh "$kver" "$tarball" \
		>"$OUT/dkms-prebuild.log" 2>&1; then
		echo "FAIL: install_dkms_prebuild (see $OUT/dkms-prebuild.log)" >>"$r"
		return
	fi
	rm -f "$OUT/inst/install.txt"
	tests/vm/guest-run.sh -q -o "$OUT/inst" -t 1500 -- \
		env RESULTS="$OUT/inst/install.txt" DKMS_TARBALL="$tarball" \
		tests/install/guest-install.sh >/dev/null
	st=$?
	sed 's/^\(PASS\|FAIL\): /\1: guest_install_/' "$OUT/inst/install.txt" \
		>>"$r" 2>/dev/null
	[ "$st" = 0 ] || echo "FAIL: guest_install_run_completed (status $st)" >>"$r"
	grep '^FAIL' "$r" || true
}

# Debian's dapl2-utils (dtest, dtestsrq, dtestcm, dtestx, dapltest) against
# OFED's DAT 2.0 provider and kdat's libdaplkdat.so.2 in one guest run
# (tests/guest/dat2-stage.sh); the side-by-side table goes to
# build/test/dat2/dat2-table.md.
stage_dat2() {
	local r=$OUT/dat2.txt st
	echo "== dat2 stage (dapl2-utils on OFED's provider and on libdaplkdat, in the guest)"
	: >"$r"
	if ! [ -e build/user/user/dat2/libdaplkdat.so.2 ]; then
		echo "FAIL: dat2_stage_has_libdaplkdat (libdapl-dev missing at build time?)" >>"$r"
		return
	fi
	mkdir -p "$OUT/dat2"
	rm -f "$OUT/dat2/dat2.txt"
	tests/vm/guest-run.sh -q -o "$OUT/dat2" -t 1500 -- \
		env RESULTS="$OUT/dat2/dat2.txt" OUT_DIR="$OUT/dat2" \
		tests/guest/dat2-stage.sh >/dev/null
	st=$?
	cat "$OUT/dat2/dat2.txt" >>"$r" 2>/dev/null
	guest_verdict dat2_ "$st" "$OUT/dat2" >>"$r"
	grep -E '^(FAIL|GAP)' "$r" || true
}

for s in $STAGES; do
	declare -F "stage_$s" >/dev/null || { echo "run-tests: no stage $s" >&2; exit 2; }
	t=$(date +%s)
	"stage_$s"
	echo "$s stage took $(($(date +%s) - t)) s" >>"$OUT/times.log"
done

cat "$OUT"/*.txt >"$OUT/all-results.txt" 2>/dev/null
passed=$(grep -c '^PASS' "$OUT/all-results.txt")
failed=$(grep -c '^FAIL' "$OUT/all-results.txt")
for s in $STAGES; do
	[ -e "$OUT/$s.txt" ] || continue
	gaps=$(grep -c '^GAP' "$OUT/$s.txt")
	printf '%s stage: %s passed, %s failed%s\n' "$s" \
		"$(grep -c '^PASS' "$OUT/$s.txt")" "$(grep -c '^FAIL' "$OUT/$s.txt")" \
		"$([ "$gaps" = 0 ] || echo ", $gaps known gaps (GAP: lines, README)")"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
