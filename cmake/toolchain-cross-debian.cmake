# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Shared part of the cross toolchain files (toolchain-aarch64.cmake and
# the others): Debian's cross compilers (g++-<triple>, their
# libraries under /usr/<triple>) and qemu-user to run what they build.
# The including file sets CMAKE_SYSTEM_PROCESSOR, DAT_CROSS_TRIPLE and
# DAT_CROSS_QEMU.
#
# Built programs run through CMAKE_CROSSCOMPILING_EMULATOR: ctest and
# gtest_discover_tests call "qemu-<arch> -L /usr/<triple> -E
# LD_LIBRARY_PATH=/usr/<triple>/lib <binary>", so no
# binfmt_misc registration is needed (CI's container has none).  Extra
# search roots for target libraries (GoogleTest built for the target by
# scripts/cross.sh) go in DAT_CROSS_PREFIX (a list, also read from
# the environment so that try_compile projects see it).

set(CMAKE_SYSTEM_NAME Linux)

if(NOT DAT_CROSS_PREFIX AND DEFINED ENV{DAT_CROSS_PREFIX})
	set(DAT_CROSS_PREFIX "$ENV{DAT_CROSS_PREFIX}")
endif()

set(CMAKE_C_COMPILER ${DAT_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${DAT_CROSS_TRIPLE}-g++)

# Libraries, headers and CMake packages only from the target's tree (never
# the build machine's /usr/lib/x86_64-linux-gnu); programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${DAT_CROSS_TRIPLE} ${DAT_CROSS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# LD_LIBRARY_PATH: the target's dynamic linker reads the build machine's
# /etc/ld.so.cache, which lists the multilib i386 libraries of /usr/lib32
# (another build of glibc than the cross one's ld.so: an i386 test then
# hangs inside libc); the path is searched before the cache.
find_program(DAT_CROSS_QEMU_PATH ${DAT_CROSS_QEMU})
if(DAT_CROSS_QEMU_PATH)
	set(CMAKE_CROSSCOMPILING_EMULATOR
		${DAT_CROSS_QEMU_PATH};-L;/usr/${DAT_CROSS_TRIPLE};-E;LD_LIBRARY_PATH=/usr/${DAT_CROSS_TRIPLE}/lib)
endif()
