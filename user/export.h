/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Force-included (-include) into every libdat source, which is built with
 * -fvisibility=hidden: the DAT API as the public headers declare it gets
 * default visibility, everything else stays inside the library.  Which of
 * the visible symbols are exported, and at which version, is libdat.map;
 * the checked-in list libdat.symbols is what the exports test compares
 * the built library with (tests/user/host/check_exports.sh).
 */
#ifndef KDAT_LIBDAT_EXPORT_H
#define KDAT_LIBDAT_EXPORT_H

#pragma GCC visibility push(default)
#include <dat/udat.h>
#include <dat/dat_kdat.h>
#pragma GCC visibility pop

#endif
