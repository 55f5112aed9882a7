# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Cross-build libdat for s390x (IBM Z, RoCE through mlx5) with Debian's
# g++-s390x-linux-gnu; run the tests under qemu-user (qemu-s390x).  The
# big-endian target: any code that reads a value through a narrower or
# wider view of its bytes gives another answer there.
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(DAT_CROSS_TRIPLE s390x-linux-gnu)
set(DAT_CROSS_QEMU qemu-s390x)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross-debian.cmake)
