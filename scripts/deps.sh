#!/usr/bin/env bash
# Make sure the packages the build, the guest rig and the tests need are
# installed.  On Debian/Ubuntu as root (or with sudo) it installs what is
# missing; elsewhere it prints one line naming what is missing and fails.
#   scripts/deps.sh [build|guest|debug|all]
# debug: what the debug stage (scripts/debug-kernel.sh: the guest's kernel
# rebuilt from linux-source-6.1 with KASAN/lockdep/kmemleak) and the host
# fuzz targets (clang's libFuzzer) need; `make test` runs both, so "all"
# includes them.
set -euo pipefail

what=${1:-all}
# the cross builds of the host stage (scripts/cross.sh): libdat for
# arm64, armhf, i386, s390x and ppc64el, its unit tests under qemu-user with
# GoogleTest built from Debian's source package, the module against Debian's arm64 headers
# (fetched by the script, not installed); ccache for its reruns; sparse
# for the lint check (tests/host/lint.sh)
build_pkgs=(make gcc g++ cmake pkg-config libgtest-dev libgmock-dev python3
	    linux-headers-amd64 kmod sparse
	    g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-i686-linux-gnu
	    g++-s390x-linux-gnu g++-powerpc64le-linux-gnu qemu-user
	    googletest file ccache libdapl-dev)
guest_pkgs=(linux-image-amd64 qemu-system-x86 busybox-static cpio
	    rdma-core ibverbs-utils ibverbs-providers libibverbs-dev
	    librdmacm-dev rdmacm-utils perftest iproute2 dkms jq
	    dapl2-utils libdapl2 gnuplot-nox)
debug_pkgs=(linux-source-6.1 flex bison bc libelf-dev libssl-dev dwarves
	    xz-utils clang libclang-rt-14-dev)
case $what in
build) pkgs=("${build_pkgs[@]}") ;;
guest) pkgs=("${build_pkgs[@]}" "${guest_pkgs[@]}") ;;
debug) pkgs=("${debug_pkgs[@]}") ;;
all) pkgs=("${build_pkgs[@]}" "${guest_pkgs[@]}" "${debug_pkgs[@]}") ;;
*) echo "usage: $0 [build|guest|debug|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
# the Debian kernel the guest boots must have matching headers
if ! ls -d /usr/src/linux-headers-*-amd64 >/dev/null 2>&1; then
	missing+=(linux-headers-amd64)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "kdat: missing packages (no apt-get here): ${missing[*]}" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo=sudo
	else
		echo "kdat: missing packages, run as root: apt-get install ${missing[*]}" >&2
		exit 1
	fi
fi
echo "kdat: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
