/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/dat_platform_specific.h - base types of the DAT 1.2 API on Linux.
 *
 * The same file serves both sides:
 *
 *   __KERNEL__ defined   kDAPL: kernel modules (consumers and providers).
 *                        Only kernel headers are used; the fixed-width
 *                        types are the kernel's u32/u64/s32.
 *   otherwise            uDAPL: applications and libdat, C11 or C++20.
 *                        Only the C library's <stdint.h>, <stddef.h>,
 *                        <sys/types.h>, <sys/socket.h> and <netinet/in.h>.
 *
 * Either way the sizes are the same, so a structure built from these
 * types has one layout on both sides of the kernel boundary.
 *
 * IA addresses are the operating system's socket addresses: a
 * DAT_IA_ADDRESS_PTR is a struct sockaddr pointer to storage of the size
 * its sa_family needs (struct sockaddr_in for AF_INET, struct
 * sockaddr_in6 for AF_INET6).  The caller owns that storage.
 */
#ifndef DAT_PLATFORM_SPECIFIC_H_
#define DAT_PLATFORM_SPECIFIC_H_

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/stddef.h>	/* NULL */
#include <linux/socket.h>	/* struct sockaddr, AF_INET, AF_INET6 */
#include <linux/in6.h>		/* struct sockaddr_in6 */
#else
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __KERNEL__
typedef u32			DAT_UINT32;	/* host order, 32 bits */
typedef u64			DAT_UINT64;	/* host order, 64 bits */
typedef s32			DAT_COUNT;	/* counts and sizes */
#define DAT_UINT64_C(c)		(c##ULL)
#else
typedef uint32_t		DAT_UINT32;	/* host order, 32 bits */
typedef uint64_t		DAT_UINT64;	/* host order, 64 bits */
typedef int32_t			DAT_COUNT;	/* counts and sizes */
#define DAT_UINT64_C(c)		UINT64_C(c)
#endif

typedef unsigned long long	DAT_UVERYLONG;	/* widest native unsigned */
typedef void			*DAT_PVOID;
typedef DAT_UINT64		DAT_PADDR;	/* physical / bus address */

typedef struct sockaddr		DAT_SOCK_ADDR;
typedef struct sockaddr_in6	DAT_SOCK_ADDR6;

#define DAT_AF_INET		AF_INET
#define DAT_AF_INET6		AF_INET6

/*
 * Buffer alignment that gives the best transfer performance.  Providers
 * report their own value in optimal_buffer_alignment; portable consumers
 * align to this one.
 */
#ifndef DAT_OPTIMAL_ALIGNMENT
#define DAT_OPTIMAL_ALIGNMENT	256
#endif

/*
 * Calling-convention marker of the standard headers.  Linux has only one
 * convention, so it is empty; it exists so code written against other
 * DAT headers still compiles.
 */
#ifndef DAT_API
#define DAT_API
#endif

#ifdef __cplusplus
}
#endif

#endif /* DAT_PLATFORM_SPECIFIC_H_ */
