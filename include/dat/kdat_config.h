/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/kdat_config.h - kDAPL build configuration: the DAT version these
 * headers describe and the thread safety dat_ia_open asks for.
 */
#ifndef DAT_KDAT_CONFIG_H_
#define DAT_KDAT_CONFIG_H_

#ifdef __cplusplus
extern "C" {
#endif

#define DAT_VERSION_MAJOR	1
#define DAT_VERSION_MINOR	2

/*
 * dat_ia_open() requests a provider of this thread safety; a registry
 * that matches on it refuses a provider registered with a different
 * is_thread_safe (DAT_PROVIDER_NOT_FOUND, DAT_THREAD_SAFETY_NOT_FOUND).  As
 * in the standard, the default is thread safe; a module that wants
 * otherwise defines DAT_THREADSAFE (e.g. ccflags-y +=
 * -DDAT_THREADSAFE=DAT_NONTHREADSAFE) before including any DAT header.
 * DAT_NONTHREADSAFE is this project's readable spelling of DAT_FALSE.
 */
#define DAT_NONTHREADSAFE	DAT_FALSE

#ifndef DAT_THREADSAFE
#define DAT_THREADSAFE		DAT_TRUE
#endif

#ifdef __cplusplus
}
#endif

#endif /* DAT_KDAT_CONFIG_H_ */
