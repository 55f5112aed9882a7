# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Cross-build libdat for arm64 with Debian's g++-aarch64-linux-gnu; run the
# tests under qemu-user (package qemu-user).  scripts/cross.sh uses it:
#   cmake -S . -B build/cross-arm64/user \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(DAT_CROSS_TRIPLE aarch64-linux-gnu)
set(DAT_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross-debian.cmake)
