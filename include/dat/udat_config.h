/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/udat_config.h - uDAPL build configuration: the DAT version these
 * headers describe and the thread safety dat_ia_open asks for.
 */
#ifndef DAT_UDAT_CONFIG_H_
#define DAT_UDAT_CONFIG_H_

#ifdef __cplusplus
extern "C" {
#endif

#define DAT_VERSION_MAJOR	1
#define DAT_VERSION_MINOR	2

/*
 * dat_ia_open() requests a provider of this thread safety; a registry
 * that matches on it refuses a provider registered with a different
 * is_thread_safe (DAT_PROVIDER_NOT_FOUND, DAT_THREAD_SAFETY_NOT_FOUND).  The
 * standard default is thread safe.  A program that wants the
 * non-thread-safe variant defines DAT_THREADSAFE before including any
 * DAT header, normally on the command line:
 *
 *	cc -DDAT_THREADSAFE=DAT_NONTHREADSAFE ...
 *
 * DAT_NONTHREADSAFE is this project's readable spelling of DAT_FALSE.
 */
#define DAT_NONTHREADSAFE	DAT_FALSE

#ifndef DAT_THREADSAFE
#define DAT_THREADSAFE		DAT_TRUE
#endif

#ifdef __cplusplus
}
#endif

#endif /* DAT_UDAT_CONFIG_H_ */
