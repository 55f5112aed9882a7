#!/usr/bin/env bash
# The whole test run: host stage, guest stage, install stage, then one
# summary line.
#   tests/run-tests.sh              all three stages
#   STAGES=host tests/run-tests.sh  (stages: host guest install)
# Every stage writes PASS:/FAIL: lines to build/test/<stage>.txt; the last
# line printed is "N passed, N failed" over all of them.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=$ROOT/build/test
STAGES=${STAGES:-host guest install}
mkdir -p "$OUT"
rm -f "$OUT"/*.txt

KDIR=$(scripts/kdir.sh) || exit 1
export KDIR

stage_host() {
	local r=$OUT/host.txt
	: >"$r"
	echo "== host stage"
	# every public header alone, as C and C++, and in a kernel module
	KDIR=$KDIR bash tests/host/headers/check-headers.sh 2>&1 |
		grep -E '^(PASS|FAIL)' >>"$r"
	# the module and the test consumer, W=1, warnings are errors
	if make -s module KDIR="$KDIR" WERROR=1 >"$OUT/module-build.log" 2>&1; then
		echo "PASS: module_builds_w1_without_warnings" >>"$r"
	else
		echo "FAIL: module_builds_w1_without_warnings (see $OUT/module-build.log)" >>"$r"
	fi
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
	# libdat and its host unit tests (no kernel needed)
	if make -s user >"$OUT/user-build.log" 2>&1; then
		echo "PASS: libdat_builds_without_warnings" >>"$r"
		(cd build/user && ctest --output-on-failure -j2) >"$OUT/ctest.log" 2>&1
		sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) \.*  *Passed.*/PASS: host_\1/p;
			s/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) \.*.*\(Failed\|Exception\|Timeout\|Not Run\).*/FAIL: host_\1/p' \
			"$OUT/ctest.log" >>"$r"
		grep -q "tests passed" "$OUT/ctest.log" ||
			echo "FAIL: host_ctest_ran (see $OUT/ctest.log)" >>"$r"
	else
		echo "FAIL: libdat_builds_without_warnings (see $OUT/user-build.log)" >>"$r"
	fi
	# make install / uninstall into a staging root; out-of-tree builds
	# against the installed pkg-config file and CMake package
	if [ -e build/user/user/libdat.so ]; then
		bash tests/install/host-install.sh 2>"$OUT/host-install.log" |
			grep -E '^(PASS|FAIL)' >>"$r"
	fi
	# the DKMS package builds for the Debian kernel, in a private tree
	if scripts/dkms.sh check "$(basename "$(dirname "$KDIR")")" \
		>"$OUT/dkms.log" 2>&1; then
		echo "PASS: dkms_builds_module_with_version" >>"$r"
	else
		echo "FAIL: dkms_builds_module_with_version (see $OUT/dkms.log)" >>"$r"
	fi
	grep -c '^PASS' "$r" | sed 's/$/ host checks passed/'
	grep '^FAIL' "$r" || true
}

stage_guest() {
	local r=$OUT/guest.txt st
	echo "== guest stage (Debian kernel under QEMU, rdma_rxe)"
	if ! [ -e kernel/kdat.ko ] || ! [ -e tests/kernel/kdat_test.ko ]; then
		echo "FAIL: guest_stage_has_modules" >"$r"
		return
	fi
	# only the -o directory is writable from the guest
	mkdir -p "$OUT/vm"
	rm -f "$OUT/vm/guest.txt"
	tests/vm/guest-run.sh -q -o "$OUT/vm" -t 900 -- \
		env RESULTS="$OUT/vm/guest.txt" tests/guest/kernel-tests.sh
	st=$?
	cp "$OUT/vm/guest.txt" "$r" 2>/dev/null || : >"$r"
	case $st in
	0) echo "PASS: guest_kernel_log_clean" >>"$r" ;;
	99) echo "FAIL: guest_kernel_log_clean (BUG/WARNING/Oops, see $OUT/vm/dmesg.txt)" >>"$r" ;;
	*) echo "FAIL: guest_run_completed (status $st, see $OUT/vm/console.log)" >>"$r" ;;
	esac
	grep '^FAIL' "$r" || true
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

for s in $STAGES; do
	"stage_$s"
done

cat "$OUT"/*.txt >"$OUT/all-results.txt" 2>/dev/null
passed=$(grep -c '^PASS' "$OUT/all-results.txt")
failed=$(grep -c '^FAIL' "$OUT/all-results.txt")
for s in $STAGES; do
	[ -e "$OUT/$s.txt" ] || continue
	printf '%s stage: %s passed, %s failed\n' "$s" \
		"$(grep -c '^PASS' "$OUT/$s.txt")" "$(grep -c '^FAIL' "$OUT/$s.txt")"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
