# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Cross-build libdat for 32-bit arm (armhf) with Debian's
# g++-arm-linux-gnueabihf; run the tests under qemu-user (qemu-arm).
# A 32-bit target: size_t and pointers are 4 bytes, __u64 ABI fields are
# 8-byte aligned, 64-bit atomics are not single instructions.
set(CMAKE_SYSTEM_PROCESSOR arm)
set(DAT_CROSS_TRIPLE arm-linux-gnueabihf)
set(DAT_CROSS_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross-debian.cmake)
