#!/usr/bin/env bash
# DKMS helper: stage the module source as /usr/src/kdat-<version> and drive
# dkms for it.
#   scripts/dkms.sh install [KVER]   add + build + install (default: all
#                                    installed kernels with headers)
#   scripts/dkms.sh remove           remove every version of kdat
#   scripts/dkms.sh check KVER       build in a private DKMS tree, install
#                                    nothing (used by the host tests)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NAME=kdat
VER=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$ROOT/dkms.conf")
cmd=${1:-}
kver=${2:-}

stage() {	# stage <dir>: the files dkms.conf builds from
	rm -rf "$1"
	mkdir -p "$1"
	cp -r "$ROOT/kernel" "$ROOT/include" "$ROOT/dkms.conf" "$1/"
	# no build products of the work tree
	find "$1/kernel" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' \
		-o -name '.*.cmd' -o -name 'Module.symvers' -o -name 'modules.order' \) -delete
}

case $cmd in
install)
	command -v dkms >/dev/null || { echo "kdat: dkms is not installed (apt-get install dkms)" >&2; exit 1; }
	stage "/usr/src/$NAME-$VER"
	dkms status -m "$NAME" -v "$VER" | grep -q . || dkms add -m "$NAME" -v "$VER"
	if [ -n "$kver" ]; then
		dkms install -m "$NAME" -v "$VER" -k "$kver" --force
	else
		dkms autoinstall
	fi
	;;
remove)
	command -v dkms >/dev/null || exit 0
	for v in $(dkms status -m "$NAME" 2>/dev/null | sed -n 's/^[^/]*\/\([^,:]*\).*/\1/p' | sort -u); do
		dkms remove -m "$NAME" -v "$v" --all || true
		rm -rf "/usr/src/$NAME-$v"
	done
	;;
check)
	[ -n "$kver" ] || { echo "usage: $0 check KVER" >&2; exit 2; }
	tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/kdat-dkms.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	stage "$tmp/src/$NAME-$VER"
	mkdir -p "$tmp/tree"
	dkms add --dkmstree "$tmp/tree" --sourcetree "$tmp/src" -m "$NAME" -v "$VER" >/dev/null
	dkms build --dkmstree "$tmp/tree" --sourcetree "$tmp/src" -m "$NAME" -v "$VER" -k "$kver"
	ko=$(find "$tmp/tree/$NAME/$VER/$kver" -name "$NAME.ko*" | head -1)
	[ -n "$ko" ] || { echo "kdat: dkms built no module" >&2; exit 1; }
	modinfo "$ko" | grep -q "^version: *$VER" || { echo "kdat: modinfo shows no version $VER" >&2; exit 1; }
	echo "kdat: dkms built $(basename "$ko") $VER for $kver"
	;;
*)
	echo "usage: $0 install [KVER] | remove | check KVER" >&2
	exit 2
	;;
esac
