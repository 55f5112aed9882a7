#!/usr/bin/env bash
# cross.sh - libdat and the module built for other architectures than the
# build machine's, with Debian's cross compilers; libdat's host unit tests
# run under qemu-user (no binfmt_misc needed: ctest calls
# "qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=... BINARY"
# through the toolchain file's CMAKE_CROSSCOMPILING_EMULATOR).  The
# targets are the kinds of machine Debian runs RDMA on that the build
# machine is not: arm64, 32-bit arm (armhf), 32-bit x86 (i386: a __u64 in
# a struct is 4-byte aligned), big-endian s390x and ppc64el (POWER: its
# own ioctl number encoding; qemu-user reports 4 KiB pages, so the 64 KiB
# of Debian's ppc64el kernel are not exercised here).
#
#   scripts/cross.sh [PART...]     parts: abi libdat module armhf i386
#                                  s390x ppc64el (default: all seven)
#   scripts/cross.sh --kdir        fetch (once) and print the arm64
#                                  kernel build tree, build nothing
#
# Prints PASS:/FAIL: lines (tests/run-tests.sh's host stage counts them):
#   abi     cross_arm64_abi_layout_matches_x86_64, cross_armhf_...,
#           cross_i386_..., cross_s390x_..., cross_ppc64el_...: every
#           struct of include/uapi/kdat_abi.h (size, alignment, member
#           offsets, scripts/abi-layout.awk) and every ioctl (direction,
#           type, number, size: decoded, as powerpc's _IOC encoding
#           differs), as the target sees them under qemu-user, equal the
#           build machine's
#   libdat  cross_arm64_gtest_builds, cross_arm64_libdat_builds_without_warnings
#           (libdat, tools, examples, host unit tests: the CMake project
#           less the guest suite, -Werror, cmake/toolchain-aarch64.cmake),
#           then one cross_arm64_ctest_<test> per ctest case; a
#           cross_arm64_ctest_all_reported FAIL when fewer than `ctest -N`
#           lists reported
#   armhf   the same for 32-bit arm (cross_armhf_...)
#   i386    the same for 32-bit x86 (cross_i386_...)
#   s390x   the same for big-endian s390x (cross_s390x_...)
#   ppc64el the same for little-endian POWER (cross_ppc64el_...)
#   module  cross_arm64_kernel_headers, cross_arm64_module_builds_w1_without_warnings,
#           cross_arm64_test_modules_build_w1_without_warnings (tests/kernel,
#           examples/kernel, tests/bench)
# A missing cross compiler or qemu-user is a FAIL, not a skip
# (scripts/deps.sh build installs them).  Output goes to build/cross-<arch>/,
# the lines also to build/cross-results.txt; the last line is
# "N passed, M failed", the exit status non-zero if anything failed.
#
# The arm64 kernel tree is Debian's own linux-headers-<abi>-arm64 (the
# arm64 kernel's .config and Module.symvers, so modpost checks every symbol
# kdat.ko takes from ib_core and rdma_cm) with its -common part, at the
# version of the installed linux-headers-amd64 (or, when Debian's arm64
# index lacks that upload or it cannot be fetched, the other arm64
# uploads of the same upstream version, then of the same 6.1 series,
# newest first, each in turn; a failed fetch leaves nothing in the
# cache), built by the installed linux-kbuild-6.1's x86 host programs
# (fixdep, modpost).  The two .debs are fetched with apt-get download
# through a private arm64 package index and unpacked; nothing is
# installed and the system's dpkg architectures stay as they are.  The
# cache lives outside the clone (KDAT_ARM64_KERNEL_CACHE, default
# /var/cache/kdat/arm64-kernel/<version>-<hash>, or <version>-for-<amd64
# version>-<hash> for another upload), ~80 MB each, "ok" written last.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CACHE_ROOT=${KDAT_ARM64_KERNEL_CACHE:-/var/cache/kdat/arm64-kernel}
KBUILD_VER=
JOBS=${JOBS:-2}
PATH=$PATH:/usr/sbin:/sbin # modinfo

log() { echo "cross: $*" >&2; }

# The cross builds start from nothing in every fresh clone: ccache (its own
# directory outside the clone, KDAT_CROSS_CCACHE; paths under the clone
# rewritten relative, though the host tests' absolute-path definitions
# still miss in a clone at another path) makes a rerun on the same machine
# cost seconds.  Without ccache they still build.
LAUNCHER=()
CCACHE_DIR=${KDAT_CROSS_CCACHE:-/var/cache/kdat/ccache-cross}
if command -v ccache >/dev/null && mkdir -p "$CCACHE_DIR" 2>/dev/null &&
	[ -w "$CCACHE_DIR" ]; then
	export CCACHE_DIR
	export CCACHE_BASEDIR=$ROOT CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-2G}
	export CCACHE_NOHASHDIR=1
	LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# -O2 as RelWithDebInfo (the optimiser's warnings, the real atomics) but
# without -g: debug info of the GoogleTest sources is most of the time
OPT=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG"
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG")

# ---------------------------------------------------------------- libdat

# gtest_build ARCH OUT: GoogleTest from Debian's source package
# (/usr/src/googletest) built with the cross toolchain, installed in
# OUT/gtest; rebuilt when the package version changes.
gtest_build() {
	local arch=$1 out=$2 ver
	ver=$(dpkg-query -W -f='${Version}' googletest 2>/dev/null) || ver=
	[ -n "$ver" ] && [ -e /usr/src/googletest/CMakeLists.txt ] || {
		echo "no /usr/src/googletest (apt-get install googletest)"
		return 1
	}
	if [ "$(cat "$out/gtest/stamp" 2>/dev/null)" = "$ver" ]; then
		return 0
	fi
	rm -rf "$out/gtest-build" "$out/gtest"
	cmake -S /usr/src/googletest -B "$out/gtest-build" \
		-DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchain-$arch.cmake" \
		-DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF "${LAUNCHER[@]}" \
		-DCMAKE_INSTALL_PREFIX="$out/gtest" &&
		cmake --build "$out/gtest-build" -j"$JOBS" &&
		cmake --install "$out/gtest-build" &&
		echo "$ver" >"$out/gtest/stamp"
}

# part_libdat NAME TOOLCHAIN TRIPLE QEMU MACHINE: NAME names the results
# (cross_NAME_...) and build/cross-NAME; cmake/toolchain-TOOLCHAIN.cmake;
# MACHINE is what file(1) says of the target's ELF objects.
part_libdat() {
	local name=$1 arch=$2 triple=$3 qemu=$4 machine=$5 p out b planned got t0 t1 t2 tool
	p=cross_${name}_
	out=$ROOT/build/cross-$name
	b=$out/user
	mkdir -p "$out"
	t0=$(date +%s)
	for tool in "$triple-gcc" "$triple-g++" "$qemu"; do
		command -v "$tool" >/dev/null && continue
		echo "FAIL: ${p}libdat_builds_without_warnings (no $tool: scripts/deps.sh build installs g++-$triple and qemu-user)"
		return
	done
	if gtest_build "$arch" "$out" >"$out/gtest-build.log" 2>&1; then
		echo "PASS: ${p}gtest_builds"
	else
		echo "FAIL: ${p}gtest_builds (see $out/gtest-build.log)"
		return
	fi
	# what `make user` builds but the guest suite (it runs only in the x86
	# guest): libdat, its header check, tools, examples, host unit tests;
	# warnings are errors (DAT_WERROR, the default)
	if cmake -S "$ROOT" -B "$b" "${OPT[@]}" "${LAUNCHER[@]}" \
		-DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchain-$arch.cmake" \
		-DDAT_CROSS_PREFIX="$out/gtest" \
		-DGTest_DIR="$out/gtest/lib/cmake/GTest" >"$out/user-build.log" 2>&1 &&
		cmake --build "$b" -j"$JOBS" --target dat dat_header_check datinfo \
			datperf srq_server srq_client srq_pingpong dat_host_tests \
			dat_test_provider dat_abi_tests dat_loader_tests \
			>>"$out/user-build.log" 2>&1 &&
		file -L "$b/user/libdat.so" | grep -Eq "$machine"; then
		echo "PASS: ${p}libdat_builds_without_warnings"
	else
		echo "FAIL: ${p}libdat_builds_without_warnings (see $out/user-build.log)"
		return
	fi
	t1=$(date +%s)
	# the host unit tests under qemu-user, one line per ctest case
	planned=$(cd "$b" && ctest -N 2>/dev/null |
		sed -n 's/^Total Tests: *\([0-9]*\).*/\1/p')
	(cd "$b" && ctest --output-on-failure -j"$JOBS" --timeout 600) >"$out/ctest.log" 2>&1
	sed -n "s/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) \.*  *Passed.*/PASS: ${p}ctest_\1/p;
		s/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) \.*.*\(Failed\|Exception\|Timeout\|Not Run\).*/FAIL: ${p}ctest_\1/p" \
		"$out/ctest.log" >"$out/ctest.txt"
	cat "$out/ctest.txt"
	grep -q "tests passed" "$out/ctest.log" ||
		echo "FAIL: ${p}ctest_ran (see $out/ctest.log)"
	got=$(grep -c . "$out/ctest.txt")
	if [ -z "$planned" ] || [ "$planned" = 0 ]; then
		echo "FAIL: ${p}ctest_plan_known (ctest -N lists no tests)"
	elif [ "$got" -lt "$planned" ]; then
		echo "FAIL: ${p}ctest_all_reported ($got of $planned reported, see $out/ctest.log)"
	fi
	# the tests ran on the target's CPU model, not the build machine's
	grep -q "Test command: .*$qemu" <(cd "$b" && ctest -V -N 2>/dev/null) ||
		echo "FAIL: ${p}ctest_runs_under_qemu (see ctest -V -N in $b)"
	t2=$(date +%s)
	log "$name libdat: build $((t1 - t0)) s, $got of $planned ctest cases $((t2 - t1)) s"
}

# ---------------------------------------------------------------- module

APT_DIR=
apt_arm64() {
	apt-get -q -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
		-o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" \
		-o Dir::State::status="$APT_DIR/status" -o Debug::NoLocking=1 "$@"
}
apt_cache_arm64() {
	apt-cache -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
		-o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" \
		-o Dir::State::status="$APT_DIR/status" "$@"
}

# arm64_headers_versions: every linux-headers-arm64 version the private
# index lists, newest first (binary lines only: with deb-src entries
# madison lists source versions too)
arm64_headers_versions() {
	apt_cache_arm64 madison linux-headers-arm64 2>/dev/null |
		awk -F'|' '$3 ~ /Packages/ { gsub(/ /, "", $2); print $2 }' | sort -urV
}

# arm64_headers_candidates VER: the arm64 uploads to try, best first: VER
# when the index has it, then every upload of the same upstream version,
# then every one of the same series (6.1.x, built by the installed
# linux-kbuild-6.1's tools), newest first.  The security archive publishes
# each architecture's build on its own: seen amd64 6.1.192-3 in it while
# arm64 still had only -2.  Nothing when the index has no headers of that
# series at all.
arm64_headers_candidates() {
	local want=$1 v pat
	local -a all
	mapfile -t all < <(arm64_headers_versions)
	# the whole version, then without the Debian revision, then without
	# the upstream patch level (pat is a pattern on purpose)
	# shellcheck disable=SC2295
	for pat in '' '-*' '.*'; do
		for v in "${all[@]}"; do
			[ "${v%$pat}" = "${want%$pat}" ] || continue
			echo "$v"
		done
	done | awk '!seen[$0]++'
}

# cached_tree DIR: print DIR's kernel tree if DIR was fetched whole
cached_tree() {
	[ -f "$1/ok" ] && cat "$1/kdir"
}

# tree_dir VER WANT: the cache directory of arm64 headers VER fetched for
# the installed amd64 headers WANT
tree_dir() {
	local key
	# the layout of the cache, so a change to it makes a new one
	key=$(printf '%s\n' "$1" "$KBUILD_VER" "debian-headers-arm64 v1" | sha256sum | cut -c1-16)
	if [ "$1" = "$2" ]; then
		echo "$CACHE_ROOT/$1-$key"
	else
		echo "$CACHE_ROOT/$1-for-$2-$key"
	fi
}

# kernel_tree: print the arm64 kernel build tree (fetched once); messages
# to stderr.
kernel_tree() {
	local ver want dir
	local -a cands
	KBUILD_VER=$(dpkg-query -W -f='${Version}' linux-kbuild-6.1 2>/dev/null) || KBUILD_VER=
	if [ -z "$KBUILD_VER" ] || ! [ -x /usr/lib/linux-kbuild-6.1/scripts/mod/modpost ]; then
		log "linux-kbuild-6.1 is not installed (apt-get install linux-headers-amd64)"
		return 1
	fi
	# the arm64 twin of the amd64 headers the module builds against; the
	# kbuild tools may be a newer upload of the same kernel (the amd64
	# headers ask for linux-kbuild-6.1 >= theirs: seen 6.1.192-3 tools
	# with 6.1.192-2 headers, and no arm64 headers -3 in the archive)
	want=$(dpkg-query -W -f='${Version}' linux-headers-amd64 2>/dev/null) || want=
	[ -n "$want" ] || want=$KBUILD_VER
	# fetched before: no index, no network
	dir=$(tree_dir "$want" "$want")
	cached_tree "$dir" && return 0
	mkdir -p "$CACHE_ROOT" || return 1
	exec 8>"$CACHE_ROOT/.lock"
	flock 8 # one fetch at a time; a second caller waits and reuses it
	cached_tree "$dir" && return 0
	APT_DIR=$CACHE_ROOT/apt
	mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
	: >"$APT_DIR/status"
	# the arm64 index (its own directory: the system's apt state and
	# architectures are untouched), refreshed when it lacks this very
	# version and is more than an hour old: a stale index may lack an
	# upload the archive now has, and a machine that made do with another
	# upload takes the right one once the archive has it, without asking
	# the archive on every run meanwhile
	if ! arm64_headers_versions | grep -qxF "$want" &&
		[ -z "$(find "$APT_DIR/lists" -maxdepth 1 -name '*Packages*' -mmin -60 2>/dev/null)" ]; then
		log "fetching Debian's arm64 package index into $APT_DIR"
		apt_arm64 update >&2 || log "apt-get update reported errors (carrying on)"
	fi
	mapfile -t cands < <(arm64_headers_candidates "$want")
	if [ "${#cands[@]}" = 0 ]; then
		log "Debian's arm64 index has no linux-headers-arm64 $want (the installed linux-headers-amd64) nor any other ${want%.*} kernel; it lists: $(arm64_headers_versions | tr '\n' ' ')"
		return 1
	fi
	[ "${cands[0]}" = "$want" ] ||
		log "no linux-headers-arm64 $want in Debian's arm64 index; trying the uploads of ${want%-*}, then of ${want%.*}, newest first"
	for ver in "${cands[@]}"; do
		[ "$ver" = "$want" ] || log "trying linux-headers-arm64 $ver"
		fetch_tree "$ver" "$want" && return 0
	done
	return 1
}

# unpack_debs DIR ROOT: every .deb in DIR unpacked into ROOT
unpack_debs() {
	local d
	for d in "$1"/*.deb; do
		dpkg-deb -x "$d" "$2" || return 1
	done
}

# fetch_tree VER WANT: print the tree of arm64 headers VER (for the amd64
# headers WANT), fetched and unpacked unless the cache has it.  Built in
# DIR.tmp and renamed into place when whole, so a failed or killed fetch
# never leaves a DIR behind.
fetch_tree() {
	local ver=$1 want=$2 dir tmp abi
	local -a pkgs
	dir=$(tree_dir "$ver" "$want")
	cached_tree "$dir" && return 0
	abi=$(apt_cache_arm64 show "linux-headers-arm64=$ver" 2>/dev/null |
		sed -n 's/^Depends: .*linux-headers-\([0-9.]*-[0-9]*\)-arm64 .*/\1/p' | head -n1)
	if [ -z "$abi" ]; then
		log "cannot read the ABI name from linux-headers-arm64 $ver"
		return 1
	fi
	pkgs=("linux-headers-$abi-arm64=$ver" "linux-headers-$abi-common=$ver")
	tmp=$dir.tmp
	rm -rf "$dir" "$tmp"
	mkdir -p "$tmp/debs" "$tmp/root" || return 1
	log "fetching ${pkgs[*]} into $dir"
	# the -arm64 part includes the -common part's Makefile by absolute
	# path (rewritten to where the tree will be); scripts/ and tools/ are
	# links to the build machine's kbuild
	if (cd "$tmp/debs" && apt_arm64 -o APT::Sandbox::User=root download "${pkgs[@]}") >&2 &&
		unpack_debs "$tmp/debs" "$tmp/root" &&
		sed -i "s#^include /usr/src/#include $dir/root/usr/src/#" \
			"$tmp/root/usr/src/linux-headers-$abi-arm64/Makefile" &&
		mkdir -p "$tmp/root/usr/lib" &&
		ln -sfn /usr/lib/linux-kbuild-6.1 "$tmp/root/usr/lib/linux-kbuild-6.1" &&
		rm -rf "$tmp/debs" &&
		echo "$dir/root/usr/src/linux-headers-$abi-arm64" >"$tmp/kdir" &&
		touch "$tmp/ok" && mv "$tmp" "$dir"; then
		cat "$dir/kdir"
		return 0
	fi
	log "could not fetch or unpack linux-headers-arm64 $ver"
	rm -rf "$tmp"
	return 1
}

part_module() {
	local out=$ROOT/build/cross-arm64 b kdir t0 t1 st d ok=1
	local kmake=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- W=1 KCFLAGS=-Werror)
	mkdir -p "$out"
	t0=$(date +%s)
	if ! command -v aarch64-linux-gnu-gcc-12 >/dev/null; then
		echo "FAIL: cross_arm64_module_builds_w1_without_warnings (no aarch64-linux-gnu-gcc-12: scripts/deps.sh build installs gcc-aarch64-linux-gnu)"
		return
	fi
	if kdir=$(kernel_tree 2>"$out/kernel-headers.log") && [ -e "$kdir/Module.symvers" ]; then
		echo "PASS: cross_arm64_kernel_headers"
	else
		echo "FAIL: cross_arm64_kernel_headers (see $out/kernel-headers.log)"
		return
	fi
	t1=$(date +%s)
	# copies of the sources, same relative layout (the Kbuild files use
	# -I$(src)/../include): the x86 objects in kernel/ stay as they are
	b=$out/module
	rm -rf "$b"
	mkdir -p "$b/tests" "$b/examples"
	cp -a kernel include "$b/"
	cp -a tests/kernel "$b/tests/"
	[ -d examples/kernel ] && cp -a examples/kernel "$b/examples/"
	[ -d tests/bench ] && cp -a tests/bench "$b/tests/"
	find "$b" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd' \
		-o -name Module.symvers -o -name modules.order \) -delete
	# W=1 with -Werror, and no warning line at all (modpost's included):
	# the .ko must be an aarch64 module for the arm64 kernel
	make -C "$kdir" M="$b/kernel" "${kmake[@]}" modules >"$out/module-build.log" 2>&1
	st=$?
	if [ "$st" = 0 ] && ! grep -qiw warning "$out/module-build.log" &&
		file "$b/kernel/kdat.ko" | grep -q 'ARM aarch64' &&
		modinfo -F vermagic "$b/kernel/kdat.ko" | grep -q aarch64; then
		echo "PASS: cross_arm64_module_builds_w1_without_warnings"
	else
		echo "FAIL: cross_arm64_module_builds_w1_without_warnings (see $out/module-build.log)"
		return
	fi
	: >"$out/test-modules-build.log"
	for d in tests/kernel examples/kernel tests/bench; do
		[ -e "$b/$d/Kbuild" ] || continue
		make -C "$kdir" M="$b/$d" "${kmake[@]}" \
			KBUILD_EXTRA_SYMBOLS="$b/kernel/Module.symvers" modules \
			>>"$out/test-modules-build.log" 2>&1 || ok=0
	done
	if [ "$ok" = 1 ] && ! grep -qiw warning "$out/test-modules-build.log" &&
		file "$b/tests/kernel/kdat_test.ko" | grep -q 'ARM aarch64'; then
		echo "PASS: cross_arm64_test_modules_build_w1_without_warnings"
	else
		echo "FAIL: cross_arm64_test_modules_build_w1_without_warnings (see $out/test-modules-build.log)"
	fi
	log "arm64 module: kernel tree $((t1 - t0)) s, modules $(($(date +%s) - t1)) s"
}

# ---------------------------------------------------------------- ABI

# part_abi NAME TRIPLE QEMU: the /dev/kdat ABI (every struct's size,
# alignment and member offsets, every ioctl's direction, type, number and
# size) is the same for the target as for the build machine (x86_64):
# 32-bit processes reach a 64-bit kernel through compat_ptr_ioctl, which
# converts nothing.  The ioctls are compared decoded: powerpc encodes the
# direction in other bits.
part_abi() {
	local name=$1 triple=$2 qemu=$3 out=$ROOT/build/cross-abi tool
	mkdir -p "$out"
	for tool in "$triple-gcc" "$qemu"; do
		command -v "$tool" >/dev/null && continue
		echo "FAIL: cross_${name}_abi_layout_matches_x86_64 (no $tool: scripts/deps.sh build installs gcc-$triple and qemu-user)"
		return
	done
	if awk -f scripts/abi-layout.awk include/uapi/kdat_abi.h >"$out/layout.c" &&
		gcc -std=c11 -Wall -Wextra -Werror -Iinclude -o "$out/layout-x86_64" \
			"$out/layout.c" >"$out/$name.log" 2>&1 &&
		"$out/layout-x86_64" >"$out/x86_64.txt" &&
		grep -q '^I KDAT_IOC_' "$out/x86_64.txt" &&
		"$triple-gcc" -std=c11 -Wall -Wextra -Werror -Iinclude -o "$out/layout-$name" \
			"$out/layout.c" >>"$out/$name.log" 2>&1 &&
		"$qemu" -L "/usr/$triple" -E LD_LIBRARY_PATH="/usr/$triple/lib" \
			"$out/layout-$name" >"$out/$name.txt" &&
		diff -u "$out/x86_64.txt" "$out/$name.txt" >>"$out/$name.log"; then
		echo "PASS: cross_${name}_abi_layout_matches_x86_64"
	else
		echo "FAIL: cross_${name}_abi_layout_matches_x86_64 (see $out/$name.log)"
	fi
}

if [ "${1:-}" = --kdir ]; then
	kernel_tree
	exit
fi
all_parts=(abi libdat module armhf i386 s390x ppc64el)
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=("${all_parts[@]}")
for part in "${parts[@]}"; do
	[[ " ${all_parts[*]} " == *" $part "* ]] && continue
	echo "usage: $0 [$(IFS='|'; echo "${all_parts[*]}")]... | --kdir" >&2
	exit 2
done
mkdir -p build
res=$ROOT/build/cross-results.txt
for part in "${parts[@]}"; do
	case $part in
	libdat) part_libdat arm64 aarch64 aarch64-linux-gnu qemu-aarch64 \
		'ELF 64-bit LSB .*ARM aarch64' ;;
	armhf) part_libdat armhf armhf arm-linux-gnueabihf qemu-arm \
		'ELF 32-bit LSB .*ARM, EABI5' ;;
	module) part_module ;;
	i386) part_libdat i386 i686 i686-linux-gnu qemu-i386 \
		'ELF 32-bit LSB .*Intel 80386' ;;
	s390x) part_libdat s390x s390x s390x-linux-gnu qemu-s390x \
		'ELF 64-bit MSB .*IBM S/390' ;;
	ppc64el) part_libdat ppc64el ppc64le powerpc64le-linux-gnu qemu-ppc64le \
		'ELF 64-bit LSB .*64-bit PowerPC' ;;
	abi)
		part_abi arm64 aarch64-linux-gnu qemu-aarch64
		part_abi armhf arm-linux-gnueabihf qemu-arm
		part_abi i386 i686-linux-gnu qemu-i386
		part_abi s390x s390x-linux-gnu qemu-s390x
		part_abi ppc64el powerpc64le-linux-gnu qemu-ppc64le
		;;
	esac
done | tee "$res"
passed=$(grep -c '^PASS' "$res")
failed=$(grep -c '^FAIL' "$res")
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
