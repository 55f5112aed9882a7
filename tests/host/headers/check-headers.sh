#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
#
# Checks of the public DAT headers in include/dat/:
#
#   1. every user-usable header (all but kdat*.h) compiles alone, as C11
#      (-pedantic) and as C++20, with -Wall -Wextra -Werror;
#   2. the kernel-only headers refuse to be used from user space;
#   3. the values and layouts listed in dat_checks.h hold, as static
#      assertions and as a run-time report (one line per check), in C and
#      in C++ (layout.c);
#   4. if kernel headers are installed, the kernel flavour builds as a
#      module with W=1 -Werror: each kernel-usable header (all but udat*.h)
#      alone, and <dat/kdat.h> with the checks of dat_checks.h
#      (kheaders/).
#
# Prints one line per check and ends with "N passed, N failed[, N skipped]";
# exits non-zero if anything failed.  All output files go to
# build/headers-check/ under the repository root.
#
# Environment: CC, CXX (default gcc, g++); KDIR to pick the kernel build
# directory (default: /usr/src/linux-headers-$(uname -r), else the newest
# /usr/src/linux-headers-*-amd64); NO_KERNEL=1 to skip step 4.

set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=$repo/build/headers-check
CC=${CC:-gcc}
CXX=${CXX:-g++}
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic -I"$repo/include")
cxxflags=(-std=c++20 -Wall -Wextra -Werror -I"$repo/include")

passed=0
failed=0
skipped=0

rm -rf "$out"
mkdir -p "$out/user" "$out/logs"

pass() {
	echo "PASS: $1"
	passed=$((passed + 1))
}

# fail NAME [LOG]
fail() {
	echo "FAIL: $1"
	if [ -n "${2:-}" ] && [ -s "$2" ]; then
		sed 's/^/    /' "$2" | head -n 40
	fi
	failed=$((failed + 1))
}

skip() {
	echo "SKIP: $1"
	skipped=$((skipped + 1))
}

# run NAME COMMAND...: one check that passes if the command succeeds.
run() {
	local name=$1 log
	shift
	log=$out/logs/$(echo "$name" | tr -c 'A-Za-z0-9_.-' '_').log
	if "$@" >"$log" 2>&1; then
		pass "$name"
	else
		fail "$name" "$log"
	fi
}

cd "$repo" || exit 1
headers=()
for h in include/dat/*.h; do
	headers+=("$(basename "$h" .h)")
done
if [ ${#headers[@]} -eq 0 ]; then
	fail "no headers found in include/dat"
fi

# ---- 1. each user-usable header alone, C and C++ --------------------------
for h in "${headers[@]}"; do
	case $h in kdat*) continue ;; esac
	src=$out/user/$h
	# the typedef keeps a macro-only header from being an empty TU
	printf '#include <dat/%s.h>\ntypedef int dat_header_check;\n' "$h" \
		>"$src.c"
	cp "$src.c" "$src.cpp"
	run "C11 alone: <dat/$h.h>" \
		"$CC" "${cflags[@]}" -fsyntax-only "$src.c"
	run "C++20 alone: <dat/$h.h>" \
		"$CXX" "${cxxflags[@]}" -fsyntax-only "$src.cpp"
done

# ---- 2. kernel-only headers refuse user space ----------------------------
for h in kdat kdat_redirection; do
	[ -f "include/dat/$h.h" ] || continue
	src=$out/user/refuse_$h.c
	printf '#include <dat/%s.h>\n' "$h" >"$src"
	log=$out/logs/refuse_$h.log
	if "$CC" "${cflags[@]}" -fsyntax-only "$src" >"$log" 2>&1; then
		fail "user space refused: <dat/$h.h> (it compiled)" "$log"
	elif grep -q 'kernel flavour' "$log"; then
		pass "user space refused: <dat/$h.h>"
	else
		fail "user space refused: <dat/$h.h> (wrong error)" "$log"
	fi
done

# ---- 3. values and layouts ------------------------------------------------
run "C11 static checks (layout.c)" \
	"$CC" "${cflags[@]}" -fsyntax-only "$here/layout.c"
run "C++20 static checks (layout.c)" \
	"$CXX" "${cxxflags[@]}" -x c++ -fsyntax-only "$here/layout.c"

# runtime LANG COMPILER FLAGS...: build the reporting variant, count its lines
runtime() {
	local lang=$1 bin=$out/layout_$1 log=$out/logs/layout_$1.log line
	shift
	if ! "$@" -DDAT_CHECK_RUNTIME "$here/layout.c" -o "$bin" >"$log" 2>&1
	then
		fail "$lang run-time checks build" "$log"
		return
	fi
	"$bin" >"$log" 2>&1
	while IFS= read -r line; do
		case $line in
		PASS:*) pass "${line#PASS: }" ;;
		FAIL:*) fail "${line#FAIL: }" ;;
		*) echo "$line" ;;
		esac
	done <"$log"
}
runtime c "$CC" "${cflags[@]}"
runtime cxx "$CXX" "${cxxflags[@]}" -x c++

# ---- 4. kernel flavour ----------------------------------------------------
find_kdir() {
	local d
	if [ -n "${KDIR:-}" ]; then
		echo "$KDIR"
		return
	fi
	d=/usr/src/linux-headers-$(uname -r)
	if [ -f "$d/Makefile" ]; then
		echo "$d"
		return
	fi
	for d in $(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V -r)
	do
		if [ -f "$d/Makefile" ]; then
			echo "$d"
			return
		fi
	done
}

kdir=$(find_kdir)
if [ "${NO_KERNEL:-0}" = 1 ]; then
	skip "kernel flavour (NO_KERNEL=1)"
elif [ ! -d "$here/kheaders" ]; then
	skip "kernel flavour (no tests/host/headers/kheaders)"
elif [ -z "$kdir" ] || [ ! -f "$kdir/Makefile" ]; then
	skip "kernel flavour (no kernel headers; set KDIR)"
else
	kout=$out/kheaders
	cp -r "$here/kheaders" "$kout"
	cp "$here/dat_checks.h" "$out/dat_checks.h"
	kheaders=()
	for h in "${headers[@]}"; do
		case $h in udat*) continue ;; esac
		kheaders+=("$h")
		printf '%s\n%s\n' '// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)' \
			"#include <dat/$h.h>" >"$kout/hdr_$h.c"
	done
	log=$out/logs/kernel.log
	# -k: build every object even if one fails, to report each one
	make -k -C "$kdir" M="$kout" W=1 \
		ccflags-y="-I$repo/include -Werror" modules >"$log" 2>&1
	kstatus=$?
	kver=$(basename "$kdir")
	for h in "${kheaders[@]}"; do
		if [ -f "$kout/hdr_$h.o" ]; then
			pass "kernel ($kver) alone: <dat/$h.h>"
		else
			grep -A8 "hdr_$h\.[co]" "$log" >"$log.$h"
			fail "kernel ($kver) alone: <dat/$h.h>" "$log.$h"
		fi
	done
	if [ -f "$kout/main.o" ]; then
		pass "kernel ($kver) <dat/kdat.h> with static checks"
	else
		grep -A12 'main\.[co]' "$log" >"$log.main"
		fail "kernel ($kver) <dat/kdat.h> with static checks" \
			"$log.main"
	fi
	if [ $kstatus -eq 0 ] && [ -f "$kout/dat_kheaders.ko" ]; then
		pass "kernel ($kver) module dat_kheaders.ko links"
	else
		fail "kernel ($kver) module dat_kheaders.ko links" "$log"
	fi
fi

if [ $skipped -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ $failed -eq 0 ]
