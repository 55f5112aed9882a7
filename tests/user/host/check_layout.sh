#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# check_layout.sh NM LIBRARY FUNCTION...
#
# Every listed data-path function of LIBRARY (a C name, or a demangled C++
# name up to its parameter list; every clone but the cold part counts)
# exists and lies within one 4 KiB page: user/hot.hpp says why.  A
# function that outgrew its KDAT_DATA_PATH alignment fails here with its
# size.
set -u
nm=$1 lib=$2
shift 2
syms=$("$nm" -nSC --defined-only "$lib") || exit 1
status=0
for f in "$@"; do
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
		start=$((0x$addr))
		end=$((start + 0x$size - 1))
		if [ $((start / 4096)) -ne $((end / 4096)) ]; then
			echo "FAIL: $name: $((0x$size)) bytes at 0x$addr straddle a page (raise its KDAT_DATA_PATH alignment)"
			status=1
		else
			echo "ok: $name: $((0x$size)) bytes at 0x$addr"
		fi
	done <<EOT
$found
EOT
done
exit $status
