#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Kernel coding style of the kernel C code, one line per check:
#
#   lint_kernel_checkpatch_clean    checkpatch.pl --file finds nothing in
#                                   kernel/ and the kernel consumers
#                                   (tests/kernel, tests/bench,
#                                   examples/kernel)
#   lint_kernel_sparse_clean        kdat.ko built with sparse (C=2): no
#                                   warning
#   lint_test_modules_sparse_clean  the same for the kernel consumers
#   lint_kernel_data_path_layout    every KDAT_DATA_PATH(name, align) of
#                                   kernel/*.c is a section of that
#                                   kdat.ko holding its function, no
#                                   larger than its alignment (so within
#                                   one page: kernel/kdat_core.h)
#
# after "PLAN: 4" first (tests/run-tests.sh counts the lines against it)
# and "N passed, N failed" last; exits non-zero if anything failed.  A
# missing tool is a FAIL: the host stage of `make test` enforces this.
#
# checkpatch.pl is, first found: $CHECKPATCH, the one in the debug
# kernel's tree (scripts/debug-kernel.sh --path), or the one in
# linux-source-6.1's tarball, extracted once into build/lint/checkpatch/.
# sparse builds copies of the sources in build/lint/sparse/ (the objects
# in kernel/ and tests/ stay as they are) against $KDIR (default:
# scripts/kdir.sh, the kernel the test rig builds for).

set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/build/lint
cd "$repo" || exit 1
mkdir -p "$out"
shopt -s nullglob

passed=0
failed=0
sparse_ko=""	# set when sparse_checks built kdat.ko in this run

pass() {
	echo "PASS: $1"
	passed=$((passed + 1))
}

# fail NAME WHY [LOG]: the log's first lines follow, indented
fail() {
	echo "FAIL: $1 ($2)"
	if [ -n "${3:-}" ] && [ -s "$3" ]; then
		sed 's/^/    /' "$3" | head -n 40
	fi
	failed=$((failed + 1))
}

# ---- checkpatch ------------------------------------------------------------

# checkpatch findings allowed, as FILE:TYPE (only in that file): false
# positives, each one explained.
cp_allow=(
	# "#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)" (an out-of-tree
	# module builds before and after vm_flags_mod); checkpatch wants no
	# version test and reads it as a constant left of a comparison
	kernel/uring.c:LINUX_VERSION_CODE
	kernel/uring.c:CONSTANT_COMPARISON
	# BUILD_BUG_ONs that compare pairs of constants (uapi against DAT)
	kernel/registry.c:CONSTANT_COMPARISON
	# "int kdat_call_begin(void) __acquires(&kdat_srcu);" reads as an
	# argument "void" without a name
	kernel/kdat_core.h:FUNCTION_ARGUMENTS
	# KDAT_DATA_PATH is two attributes, which no parentheses may enclose
	kernel/kdat_core.h:COMPLEX_MACRO
)
# The test modules only: CHECK() and its kin end a failed case with
# "goto out", as a test harness's assertions do.
cp_ignore_tests=(MACRO_WITH_FLOW_CONTROL)

# Drop the allowed findings ("file:line: TYPE: ..." lines) from stdin.
cp_filter() {
	local line key
	while IFS= read -r line; do
		if [[ $line =~ ^([^:]+):[0-9]+:\ (ERROR|WARNING|CHECK):([A-Z_0-9]+): ]]; then
			key="${BASH_REMATCH[1]}:${BASH_REMATCH[3]}"
			[[ " ${cp_allow[*]} " == *" $key "* ]] && continue
		fi
		printf '%s\n' "$line"
	done
}

# The path of a usable checkpatch.pl (with the files it reads), or nothing.
find_checkpatch() {
	local d tarball=/usr/src/linux-source-6.1.tar.xz top=linux-source-6.1
	local x=$out/checkpatch stamp
	if [ -n "${CHECKPATCH:-}" ]; then
		echo "$CHECKPATCH"
		return
	fi
	d=$(scripts/debug-kernel.sh --path 2>/dev/null)/src/scripts
	if [ -f "$d/checkpatch.pl" ] && [ -f "$d/spelling.txt" ]; then
		echo "$d/checkpatch.pl"
		return
	fi
	[ -f "$tarball" ] || return
	# extracted once per tarball (a new linux-source-6.1 has a new one)
	stamp=$(stat -c '%s %Y' "$tarball")
	if [ "$(cat "$x/ok" 2>/dev/null)" != "$stamp" ]; then
		rm -rf "$x"
		mkdir -p "$x"
		tar -xJf "$tarball" -C "$x" --strip-components=2 --wildcards \
			"$top/scripts/checkpatch.pl" "$top/scripts/spelling.txt" \
			"$top/scripts/const_structs.checkpatch" >&2 || return
		echo "$stamp" >"$x/ok"
	fi
	echo "$x/checkpatch.pl"
}

# run_checkpatch IGNORE FILE...: findings, one a line, on stdout
run_checkpatch() {
	local ignore=$1
	shift
	[ $# -gt 0 ] || return 0
	# checkpatch knows only the kernel's typedefs: "DAT_RETURN (*fn)(...)"
	# would read as a call (ia.c), and a definition after a line of
	# KDAT_DATA_PATH as a statement whose "DAT_EVENT *ev" multiplies.
	# Only these: with the other DAT typedefs it misreads some prototypes.
	perl "$checkpatch" --no-tree --file --terse --show-types --no-summary \
		--typedefsfile "$out/typedefs" ${ignore:+--ignore "$ignore"} "$@" 2>&1
}

checkpatch_check() {
	local log=$out/checkpatch.log n files=() tests=() f
	checkpatch=$(find_checkpatch)
	if [ -z "$checkpatch" ] || ! [ -f "$checkpatch" ]; then
		fail lint_kernel_checkpatch_clean "no checkpatch.pl: apt-get install linux-source-6.1, or set CHECKPATCH"
		return
	fi
	if ! command -v perl >/dev/null; then
		fail lint_kernel_checkpatch_clean "no perl"
		return
	fi
	printf '%s\n' DAT_RETURN DAT_LMR_TRIPLET DAT_RMR_TRIPLET DAT_EVENT_DATA \
		DAT_EVENT DAT_DTO_COMPLETION_EVENT_DATA >"$out/typedefs"
	for f in kernel/*.[ch] tests/bench/*.[ch] examples/kernel/*.[ch]; do
		case $f in *.mod.c) continue ;; esac
		files+=("$f")
	done
	for f in tests/kernel/*.[ch]; do
		case $f in *.mod.c) continue ;; esac
		tests+=("$f")
	done
	{
		run_checkpatch "" "${files[@]}"
		run_checkpatch "$(IFS=,; echo "${cp_ignore_tests[*]}")" \
			"${tests[@]}"
	} | cp_filter >"$log"
	n=$(grep -cE '^[^:]+:[0-9]+: (ERROR|WARNING|CHECK):' "$log")
	if [ "${#files[@]}" = 0 ] || [ "${#tests[@]}" = 0 ]; then
		fail lint_kernel_checkpatch_clean "no sources found"
	elif [ "$n" != 0 ]; then
		fail lint_kernel_checkpatch_clean "$n findings, see $log" "$log"
	elif [ -s "$log" ]; then
		# no finding but some output: checkpatch itself went wrong
		fail lint_kernel_checkpatch_clean "checkpatch output, see $log" "$log"
	else
		pass lint_kernel_checkpatch_clean
	fi
}

# ---- sparse ----------------------------------------------------------------

# sparse_build LOG DIR [MAKE ARGS...]: build the copy in DIR with sparse
# on every source; prints why it is not clean (nothing if it is).
sparse_build() {
	local log=$1 dir=$2 want got n st
	shift 2
	want=$(find "$dir" -maxdepth 1 -name '*.c' ! -name '*.mod.c' | wc -l)
	make -C "$KDIR" M="$dir" C=2 CHECK=sparse "$@" modules >"$log" 2>&1
	st=$?
	got=$(grep -c '^  CHECK ' "$log")
	grep -E ': (warning|error):' "$log" >"$log.found"
	n=$(grep -c . "$log.found")
	if [ "$st" != 0 ]; then
		tail -n 40 "$log" >"$log.found"
		echo "build failed, see $log"
	elif [ "$n" != 0 ]; then
		echo "$n warnings, see $log"
	elif [ "$got" -lt "$want" ]; then
		# a build that checked nothing is no evidence
		echo "$got of $want sources checked, see $log"
	fi
}

sparse_checks() {
	local b=$out/sparse d dirs=() why="" w log wlog=""
	if ! command -v sparse >/dev/null; then
		why="no sparse: apt-get install sparse"
	elif [ -z "${KDIR:-}" ]; then
		KDIR=$(scripts/kdir.sh 2>/dev/null)
	fi
	if [ -z "$why" ] && ! [ -f "${KDIR:-}/Makefile" ]; then
		why="no kernel headers at '${KDIR:-}': set KDIR"
	fi
	if [ -n "$why" ]; then
		fail lint_kernel_sparse_clean "$why"
		fail lint_test_modules_sparse_clean "$why"
		return
	fi
	# copies in the same layout (the Kbuild files use -I$(src)/../include)
	for d in tests/kernel tests/bench examples/kernel; do
		[ -e "$d/Kbuild" ] && dirs+=("$d")
	done
	rm -rf "$b"
	mkdir -p "$b/tests" "$b/examples"
	cp -a kernel include "$b/"
	for d in "${dirs[@]}"; do
		cp -a "$d" "$b/$d"
	done
	find "$b" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' \
		-o -name '.*.cmd' -o -name Module.symvers \
		-o -name modules.order \) -delete
	log=$out/sparse-kernel.log
	why=$(sparse_build "$log" "$b/kernel" -j"$(nproc)")
	if [ -n "$why" ]; then
		fail lint_kernel_sparse_clean "$why" "$log.found"
	else
		pass lint_kernel_sparse_clean
	fi
	[ -f "$b/kernel/kdat.ko" ] && sparse_ko=1
	if ! [ -f "$b/kernel/Module.symvers" ]; then
		fail lint_test_modules_sparse_clean "kdat.ko did not build"
		return
	fi
	# one line for all the consumers, naming the first one not clean
	why=""
	for d in "${dirs[@]}"; do
		log=$out/sparse-$(echo "$d" | tr / -).log
		w=$(sparse_build "$log" "$b/$d" \
			KBUILD_EXTRA_SYMBOLS="$b/kernel/Module.symvers")
		if [ -n "$w" ] && [ -z "$why" ]; then
			why="$d: $w"
			wlog=$log.found
		fi
	done
	if [ "${#dirs[@]}" = 0 ]; then
		fail lint_test_modules_sparse_clean "no test modules found"
	elif [ -n "$why" ]; then
		fail lint_test_modules_sparse_clean "$why" "$wlog"
	else
		pass lint_test_modules_sparse_clean
	fi
}

# ---- data-path layout --------------------------------------------------

# The sections KDAT_DATA_PATH makes in the kdat.ko sparse_checks built in
# this run (the compiler and flags of `make module`): each listed function
# (or a clone of it, name.*) is in its section .text.kdat_dp.name, which
# is aligned as listed and no larger; every such section is listed.
layout_check() {
	local ko=$out/sparse/kernel/kdat.ko want secs funcs bad="" name align
	local nr size al
	if [ -z "$sparse_ko" ] || ! [ -f "$ko" ]; then
		fail lint_kernel_data_path_layout "kdat.ko did not build in this run"
		return
	fi
	want=$(sed -n 's/^KDAT_DATA_PATH(\([A-Za-z0-9_]*\), *\([0-9]*\))$/\1 \2/p' \
		kernel/*.c)
	# "nr name size align" of every .text.kdat_dp.* section
	secs=$(readelf -SW "$ko" | sed -n 's/^ *\[ *\([0-9]*\)\] *\.text\.kdat_dp\./\1 /p' |
		while read -r nr name _ _ _ size _ _ _ _ al; do
			echo "$nr $name $((0x$size)) $al"
		done)
	# "section-index name" of every function symbol
	funcs=$(readelf -sW "$ko" | awk '$4 == "FUNC" { print $7, $8 }')
	while read -r name align; do
		read -r nr size al < <(awk -v n="$name" '$2 == n { print $1, $3, $4 }' <<<"$secs")
		if [ -z "$nr" ]; then
			bad+="$name: no section .text.kdat_dp.$name"$'\n'
		elif ! awk -v nr="$nr" -v n="$name" '$1 == nr && ($2 == n || index($2, n ".") == 1) { f = 1 }
			END { exit !f }' <<<"$funcs"; then
			bad+="$name: not in its section (renamed or inlined?)"$'\n'
		elif [ "$al" != "$align" ]; then
			bad+="$name: aligned to $al, not $align"$'\n'
		elif [ "$size" -gt "$align" ]; then
			bad+="$name: $size bytes, more than its alignment $align"$'\n'
		fi
	done <<<"$want"
	while read -r nr name _; do
		awk -v n="$name" '$1 == n { f = 1 } END { exit !f }' <<<"$want" ||
			bad+="$name: a section without its KDAT_DATA_PATH line"$'\n'
	done <<<"$secs"
	if [ -z "$want" ]; then
		fail lint_kernel_data_path_layout "no KDAT_DATA_PATH in kernel/*.c"
	elif [ -n "$bad" ]; then
		printf '%s' "$bad" >"$out/layout.found"
		fail lint_kernel_data_path_layout \
			"$(grep -c . "$out/layout.found") functions" "$out/layout.found"
	else
		pass lint_kernel_data_path_layout
	fi
}

echo "PLAN: 4"
checkpatch_check
sparse_checks
layout_check

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
