#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The shared library's symbol table, checked (ctest dat_exports,
# dat_no_plain_getenv; see tests/user/host/CMakeLists.txt).
#
#   check_exports.sh exports NM LIB SYMBOLS   what LIB exports (defined
#       dynamic symbols: type, name@@version) is exactly the list SYMBOLS
#   check_exports.sh imports NM LIB           LIB imports no getenv: every
#       variable libdat reads goes through secure_getenv
set -eu

mode=$1 nm=$2 lib=$3

case $mode in
exports)
	want=$4
	have=$("$nm" -D --defined-only "$lib" | awk '{ print $2, $3 }' | LC_ALL=C sort)
	if ! printf '%s\n' "$have" | diff -u "$want" - ; then
		cat >&2 <<MSG

FAIL: $lib does not export exactly what $want lists
(lines with - are listed but not exported, + exported but not listed).

- A symbol that should not be exported: keep it out of user/libdat.map
  (the library is built with -fvisibility=hidden; only the DAT API headers
  forced in by user/export.h are visible).
- A new DAT call or kdat extension meant for applications: declare it in
  the public header, name it in user/libdat.map (a new version node if the
  library already shipped), then refresh the list:
      nm -D --defined-only $lib | awk '{ print \$2, \$3 }' | LC_ALL=C sort > $want
  and commit both.  Removing or changing an export breaks the ABI of
  libdat.so.1: bump the SONAME instead.
MSG
		exit 1
	fi
	echo "ok: $lib exports exactly $(printf '%s\n' "$have" | wc -l) symbols of $want"
	;;
imports)
	bad=$("$nm" -D --undefined-only "$lib" | awk '{ print $2 }' |
		sed 's/@.*//' | grep -x -e getenv -e __getenv || true)
	if [ -n "$bad" ]; then
		echo "FAIL: $lib imports $bad: read the environment with" \
		     "secure_getenv (a set-ID program must not follow its" \
		     "caller's DAT_OVERRIDE, KDAT_DEVICE, ...)" >&2
		exit 1
	fi
	echo "ok: $lib reads the environment with secure_getenv only"
	;;
*)
	echo "usage: $0 exports NM LIB SYMBOLS | imports NM LIB" >&2
	exit 2
	;;
esac
