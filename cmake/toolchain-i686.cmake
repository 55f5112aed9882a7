# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Cross-build libdat for 32-bit x86 (i386) with Debian's
# g++-i686-linux-gnu; run the tests under qemu-user (qemu-i386).  The
# strictest 32-bit target for the /dev/kdat ABI: a __u64 in a struct is
# 4-byte aligned there (8 on x86_64 and armhf), so a layout that relies on
# implicit padding differs from the 64-bit kernel's.
set(CMAKE_SYSTEM_PROCESSOR i686)
set(DAT_CROSS_TRIPLE i686-linux-gnu)
set(DAT_CROSS_QEMU qemu-i386)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross-debian.cmake)
