#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Install or uninstall libdat, its headers, tools, pkg-config and CMake
# files, man pages, examples, the udev rule and dat.conf, like a package.
#
#   scripts/install.sh install     (make install)
#   scripts/install.sh uninstall   (make uninstall)
#
# Environment:
#   PREFIX     installation prefix (default /usr/local)
#   DESTDIR    staging root prepended to every path (default: none)
#   BUILD      the CMake build directory (default <repo>/build/user); it is
#              configured and built first if it has no libdat yet
#   DAT_CONF   "no": do not install /etc/dat.conf (see below)
#
# `cmake --install --prefix $PREFIX` does the copying.  What it installed is
# recorded, with what this script adds, in
#     $DESTDIR$PREFIX/share/dat/install_manifest.txt
# (paths without DESTDIR), so that uninstall removes exactly those files and
# the directories the install created, even after `make clean`, and nothing
# else: directories that existed before stay, as do files that were put
# into our directories by someone else.
#
# /etc/dat.conf is a configuration file: it is installed only if there is
# none (libdat reads /etc/dat.conf whatever the prefix), and uninstall
# removes it only if it is still the one installed (unchanged).  The
# shipped file names the test rig's IAs rxe0 and rxe1; libdat offers every
# kernel IA under its own name whether or not dat.conf lists it.
#
# The kernel module is not installed here: scripts/dkms.sh install (make
# dkms-install) does that through DKMS.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
BUILD=${BUILD:-$ROOT/build/user}
SYSCONFDIR=/etc			# where libdat reads dat.conf (user/registry.cpp)
cmd=${1:-}

die() { echo "install.sh: $*" >&2; exit 1; }
note() { echo "install.sh: $*"; }

case $PREFIX in
/*) PREFIX=${PREFIX%/}; [ -n "$PREFIX" ] || PREFIX=/ ;;
*) die "PREFIX must be an absolute path (not '$PREFIX')" ;;
esac
if [ -n "$DESTDIR" ]; then
	case $DESTDIR in /*) ;; *) DESTDIR=$(pwd)/$DESTDIR ;; esac
	DESTDIR=${DESTDIR%/}
fi
PFX=${PREFIX%/}			# "" for PREFIX=/
MANIFEST_REL=$PFX/share/dat/install_manifest.txt
MANIFEST=$DESTDIR$MANIFEST_REL

# Write permission for the target, or a clear message instead of a
# failure halfway.
check_writable() {
	local d=$DESTDIR$PFX
	while [ ! -e "$d" ] && [ "$d" != "${d%/*}" ]; do d=${d%/*}; [ -n "$d" ] || d=/; done
	[ -w "$d" ] || die "cannot write to $d (run as root: sudo make install, or set DESTDIR)"
}

sha() { sha256sum "$1" | cut -d' ' -f1; }

# Existing directories among the parents of the given root-relative paths
# are not ours; print the ones that do not exist yet (deepest last).
missing_dirs() {
	local p d
	while read -r p; do
		d=${p%/*}
		while [ -n "$d" ]; do
			echo "$d"
			d=${d%/*}
		done
	done | sort -u | while read -r d; do
		[ -e "$DESTDIR$d" ] || echo "$d"
	done
}

ensure_built() {
	if [ ! -e "$BUILD/CMakeCache.txt" ] || ! compgen -G "$BUILD/user/libdat.so.*" >/dev/null; then
		command -v cmake >/dev/null || die "cmake is missing (apt-get install cmake)"
		note "building in $BUILD"
		cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DCMAKE_INSTALL_PREFIX="$PREFIX" >/dev/null
		cmake --build "$BUILD" -j"$(nproc)"
	fi
	[ -e "$BUILD/cmake_install.cmake" ] || die "$BUILD is not a CMake build directory"
}

# Run `cmake --install` into root $1 (DESTDIR); print the installed files,
# root-relative, one per line.
cmake_install() {
	local root=$1 list
	DESTDIR=$root cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
	list=$BUILD/install_manifest.txt
	[ -s "$list" ] || die "cmake --install wrote no $list"
	# the manifest lists $root$path; strip the staging root
	sed "s|^$root||" "$list"
	echo
}

udev_reload() {
	[ -z "$DESTDIR" ] || return 0
	command -v udevadm >/dev/null || return 0
	udevadm control --ping >/dev/null 2>&1 || return 0	# no udevd (container, guest)
	udevadm control --reload-rules || true
	# an existing /dev/kdat gets the rule's group and mode now
	udevadm trigger --action=change --subsystem-match=misc --sysname-match=kdat 2>/dev/null || true
}

do_uninstall() {
	local quiet=${1:-} kind path sum left=0 e
	local -a entries files=() dirs=() kept=()
	if [ ! -e "$MANIFEST" ]; then
		[ -n "$quiet" ] || note "nothing installed under $DESTDIR$PREFIX (no $MANIFEST)"
		return 0
	fi
	mapfile -t entries <"$MANIFEST"
	# files (the manifest last) ...
	for e in "${entries[@]}"; do
		read -r kind path sum <<<"$e"
		case $kind in
		file)
			[ "$path" = "$MANIFEST_REL" ] || files+=("$DESTDIR$path")
			;;
		conf)
			[ -e "$DESTDIR$path" ] || continue
			if [ "$(sha "$DESTDIR$path")" = "$sum" ]; then
				files+=("$DESTDIR$path")
			else
				note "kept $DESTDIR$path: changed since it was installed"
			fi
			;;
		dir)
			dirs+=("$DESTDIR$path")
			;;
		esac
	done
	[ ${#files[@]} = 0 ] || rm -f -- "${files[@]}"
	rm -f -- "$MANIFEST"
	# ... then the directories the install created, deepest first; one
	# that is not empty now holds someone else's files and stays
	if [ ${#dirs[@]} -gt 0 ]; then
		mapfile -t dirs < <(printf '%s\n' "${dirs[@]}" | sort -r)
		rmdir -- "${dirs[@]}" 2>/dev/null || true
		for e in "${dirs[@]}"; do
			[ ! -d "$e" ] || kept+=("$e")
		done
		if [ ${#kept[@]} -gt 0 ]; then
			note "kept, not empty: ${kept[*]}"
			left=1
		fi
	fi
	[ -n "$quiet" ] || note "uninstalled from $DESTDIR$PREFIX"
	if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then
		ldconfig
	fi
	udev_reload
	return $left
}

do_install() {
	check_writable
	ensure_built

	# Upgrade: remove what an earlier install left, so files dropped from
	# the package do not linger.
	if [ -e "$MANIFEST" ]; then
		note "removing the previous installation first"
		do_uninstall quiet || true
	fi

	# 1. Stage, to learn the file list before touching the target: the
	#    directories the real install will create are recorded as ours.
	local files dirs conf_src conf_dst
	STAGE=$(mktemp -d "${TMPDIR:-/tmp}/kdat-install.XXXXXX")
	trap 'rm -rf "$STAGE"' EXIT
	files=$(cmake_install "$STAGE" | sed '/^$/d')
	# the manifest itself and, when we install it, /etc/dat.conf
	conf_src=$PFX/share/dat/dat.conf
	conf_dst=$SYSCONFDIR/dat.conf
	local want_conf=0
	if [ "${DAT_CONF:-yes}" != no ] && [ ! -e "$DESTDIR$conf_dst" ]; then
		want_conf=1
	fi
	dirs=$( { echo "$files"; echo "$MANIFEST_REL";
		  [ $want_conf = 0 ] || echo "$conf_dst"; } | missing_dirs)

	# 2. The real install.
	local real
	real=$(cmake_install "$DESTDIR" | sed '/^$/d')
	[ "$real" = "$files" ] || die "the installed file list differs from the staged one"

	# 3. /etc/dat.conf, only where there is none.
	if [ $want_conf = 1 ]; then
		install -D -m 0644 "$DESTDIR$conf_src" "$DESTDIR$conf_dst"
	elif [ "${DAT_CONF:-yes}" != no ]; then
		if cmp -s "$DESTDIR$conf_src" "$DESTDIR$conf_dst"; then
			note "$DESTDIR$conf_dst exists (same as ours), left alone"
		else
			note "$DESTDIR$conf_dst exists, left alone; ours is $DESTDIR$conf_src"
		fi
	fi

	# 4. The manifest: kind path [sha256].
	{
		echo "# kdat/libdat install manifest: PREFIX=$PREFIX (paths without DESTDIR)"
		echo "$files" | sed 's/^/file /'
		[ $want_conf = 0 ] || echo "conf $conf_dst $(sha "$DESTDIR$conf_dst")"
		echo "file $MANIFEST_REL"
		[ -z "$dirs" ] || echo "$dirs" | sed 's/^/dir /'
	} >"$MANIFEST.new"
	mv "$MANIFEST.new" "$MANIFEST"

	if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then
		ldconfig
	fi
	udev_reload
	case $PFX in
	/usr | /usr/local) ;;
	*) note "udev reads no rules from $PFX/lib/udev/rules.d: copy 90-kdat.rules to /etc/udev/rules.d to use it" ;;
	esac
	note "installed $(echo "$files" | wc -l) files under $DESTDIR$PREFIX (manifest: $MANIFEST)"
}

case $cmd in
install)
	do_install
	;;
uninstall)
	check_writable
	do_uninstall
	;;
*)
	echo "usage: [PREFIX=/usr/local] [DESTDIR=dir] $0 install|uninstall" >&2
	exit 2
	;;
esac
