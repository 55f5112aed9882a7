# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Runs at install time (install(CODE) in CMakeLists.txt): writes dat.pc for
# the prefix of this install, CMAKE_INSTALL_PREFIX as `cmake --install
# --prefix` set it.  Input: DAT_PC_IN, DAT_PC_OUT, DAT_PC_LIBDIR,
# DAT_PC_INCLUDEDIR (as configured, relative to the prefix or absolute),
# DAT_PC_VERSION.
set(DAT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
if(DAT_PC_PREFIX MATCHES "^(.+)/$")
	set(DAT_PC_PREFIX "${CMAKE_MATCH_1}")
endif()
foreach(d LIBDIR INCLUDEDIR)
	if(NOT IS_ABSOLUTE "${DAT_PC_${d}}")
		# pkg-config expands ${prefix}; --define-prefix and
		# PKG_CONFIG_SYSROOT_DIR then work on a staged (DESTDIR) tree
		set(DAT_PC_${d} "\${prefix}/${DAT_PC_${d}}")
	endif()
endforeach()
configure_file("${DAT_PC_IN}" "${DAT_PC_OUT}" @ONLY)
