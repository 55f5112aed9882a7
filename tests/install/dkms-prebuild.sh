#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Host side of the guest install test: build the kdat DKMS package for
# kernel KVER in a private DKMS tree (nothing is installed on the host) and
# pack it as a regular DKMS tarball: the package source plus the module
# DKMS built for KVER.
#
#   tests/install/dkms-prebuild.sh KVER [OUT.dkms.tar.gz]
#
# OUT defaults to build/install/kdat-<ver>-KVER.dkms.tar.gz, where
# tests/install/guest-install.sh looks for it.
#
# The guest then installs it with DKMS itself (`dkms ldtarball` registers
# the source in /usr/src/kdat-<ver> and the built module in /var/lib/dkms;
# `dkms install` puts it into /lib/modules/KVER/updates/dkms and runs
# depmod), exactly as on a machine that gets a prebuilt DKMS package.  Only
# the compile step of `dkms build` moves to the host: under QEMU TCG it
# takes about 12 minutes (measured: 721 s for scripts/dkms.sh install in
# the guest), natively about 10 s.  The compile uses the same dkms.conf,
# the same source files as scripts/dkms.sh stages, and the headers of the
# very kernel the guest boots.  tests/install/guest-install.sh
# DKMS_BUILD=guest runs the whole `scripts/dkms.sh install` in the guest
# instead.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kver=${1:?usage: $0 KVER [OUT.dkms.tar.gz]}
NAME=kdat
VER=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$ROOT/dkms.conf")
out=${2:-$ROOT/build/install/$NAME-$VER-$kver.dkms.tar.gz}
command -v dkms >/dev/null || { echo "kdat: dkms is not installed (apt-get install dkms)" >&2; exit 1; }
case $out in /*) ;; *) out=$(pwd)/$out ;; esac

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/kdat-dkms-tarball.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src=$tmp/src/$NAME-$VER
# the files scripts/dkms.sh stages into /usr/src/kdat-<ver>
mkdir -p "$src" "$tmp/tree"
cp -r "$ROOT/kernel" "$ROOT/include" "$ROOT/dkms.conf" "$src/"
find "$src/kernel" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' \
	-o -name '.*.cmd' -o -name '.*.d' -o -name 'Module.symvers' \
	-o -name 'modules.order' \) -delete

T=(--dkmstree "$tmp/tree" --sourcetree "$tmp/src" -m "$NAME" -v "$VER")
dkms add "${T[@]}" >/dev/null
dkms build "${T[@]}" -k "$kver"
ko=$(find "$tmp/tree/$NAME/$VER/$kver" -name "$NAME.ko*" | head -1)
[ -n "$ko" ] || { echo "kdat: dkms built no module" >&2; exit 1; }
grep -q "^version: *$VER" <<<"$(modinfo "$ko")" || { echo "kdat: modinfo shows no version $VER" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
rm -f "$out"
dkms mktarball "${T[@]}" -k "$kver" --archive "$out" >/dev/null
list=$(tar -tzf "$out")
grep -q "dkms_main_tree/$kver/.*/$NAME.ko" <<<"$list" ||
	{ echo "kdat: $out holds no $NAME.ko for $kver" >&2; exit 1; }
echo "kdat: dkms built $(basename "$ko") $VER for $kver; tarball $out"
