# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Cross-build libdat for ppc64el (POWER, mlx5 HCAs) with Debian's
# g++-powerpc64le-linux-gnu; run the tests under qemu-user (qemu-ppc64le).
# POWER has its own ioctl number encoding and a weaker memory model than
# x86 (which qemu-user on an x86 machine does not reproduce).
set(CMAKE_SYSTEM_PROCESSOR ppc64le)
set(DAT_CROSS_TRIPLE powerpc64le-linux-gnu)
set(DAT_CROSS_QEMU qemu-ppc64le)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross-debian.cmake)
