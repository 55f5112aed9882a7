#!/usr/bin/env bash
# Print the kernel build directory of the newest installed Debian kernel
# that has both an image (for the guest) and headers (for the build).
set -euo pipefail
if [ -n "${KVER:-}" ]; then
	echo "/lib/modules/$KVER/build"
	exit 0
fi
for d in $(ls -d /lib/modules/*/ 2>/dev/null | sort -Vr); do
	v=$(basename "$d")
	if [ -e "/boot/vmlinuz-$v" ] && [ -e "/lib/modules/$v/build/Makefile" ]; then
		echo "/lib/modules/$v/build"
		exit 0
	fi
done
echo "kdat: no installed kernel with headers (apt-get install linux-image-amd64 linux-headers-amd64)" >&2
exit 1
