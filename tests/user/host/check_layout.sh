#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# check_layout.sh NM LIBRARY NAME=ALIGN...
#
# Every listed data-path function of LIBRARY (a C name, or a demangled C++
# name up to its parameter list; every clone but the cold part counts)
# exists, starts on its KDAT_DATA_PATH alignment and is no larger than it,
# so it lies within one page whatever the layout (user/hot.hpp says why).
# A function that outgrew its alignment fails here with its size.
set -u
nm=$1 lib=$2
shift 2
syms=$("$nm" -nSC --defined-only "$lib") || exit 1
status=0
for arg in "$@"; do
	f=${arg%=*} align=${arg##*=}
	found=$(printf '%s\n' "$syms" | awk -v f="$f" '
		$3 ~ /^[tTW]$/ {
			name = $0
			sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", name)
			if ((name == f || index(name, f "(") == 1) &&
			    name !~ /\[clone \.cold\]$/)
				print $1, $2, name
		}')
	if [ -z "$found" ]; then
		echo "FAIL: $f: not in $lib (renamed or inlined? update the list)"
		status=1
		continue
	fi
	while read -r addr size name; do
		if [ $((0x$size)) -gt "$align" ]; then
			echo "FAIL: $name: $((0x$size)) bytes, more than its alignment $align (raise its KDAT_DATA_PATH)"
			status=1
		elif [ $((0x$addr % align)) -ne 0 ]; then
			echo "FAIL: $name: at 0x$addr, not aligned to $align"
			status=1
		else
			echo "ok: $name: $((0x$size)) of $align bytes"
		fi
	done <<EOT
$found
EOT
done
exit $status
