/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/dat_kdat.h - provider-specific extensions of libdat's built-in
 * provider ("kdat_ib", the uDAPL face of the kdat kernel module).
 *
 * Everything here is outside the DAT 1.2 standard.  Portable programs do
 * not need it; programs that want to multiplex DAT events with other file
 * descriptors, or measure the cost of the receive paths, do.
 *
 * Each call checks its handle like every DAT call: a NULL, freed, stale
 * or wrong-type handle, or a handle of another provider, gives
 * DAT_INVALID_HANDLE.
 */
#ifndef DAT_KDAT_EXT_H_
#define DAT_KDAT_EXT_H_

#include <dat/udat.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Name of the built-in provider, as dat_ia_query reports it. */
#define DAT_KDAT_PROVIDER_NAME	"kdat_ib"

/*
 * The file descriptor of the IA's /dev/kdat file, which every IA of the
 * process shares (the same descriptor for each; add it to an epoll set
 * once).  poll(), select() and epoll report it readable (POLLIN) while
 * any EVD of any IA of the process - async EVDs included - holds an
 * event; then dat_evd_dequeue() the EVDs.  The library owns it: do not
 * read, write or close it.  It stays valid while any IA of the process
 * is open, at least until dat_ia_close() of this IA succeeds.
 */
DAT_RETURN dat_kdat_get_fd(DAT_IA_HANDLE ia_handle, int *fd);

/*
 * dat_srq_post_recv() without the shared post ring: one ioctl per
 * receive (KDAT_IOC_SRQ_POST).  Same arguments, checks and return codes
 * as dat_srq_post_recv().  The environment variable KDAT_SRQ_POST=ioctl,
 * read when an SRQ is created, makes dat_srq_post_recv() of that SRQ take
 * this path too.  Exists for benchmarks and as the fallback for scatter
 * lists longer than a ring entry holds.
 */
DAT_RETURN dat_kdat_srq_post_recv_ioctl(DAT_SRQ_HANDLE srq_handle,
					DAT_COUNT num_segments,
					DAT_LMR_TRIPLET *local_iov,
					DAT_DTO_COOKIE user_cookie);

/*
 * A receive the kernel refused when it drained the SRQ's post ring (for
 * example, its LMR was freed after dat_srq_post_recv() returned).  Each
 * refusal is also reported on the IA's async EVD as
 * DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR { dat_handle = the SRQ,
 * reason = DAT_SRQ_OTHER_ERROR }; this call hands out the cookies of
 * those buffers, oldest first, and why they were refused.  Returns
 * DAT_QUEUE_EMPTY when there is none left.  The library keeps the last
 * 1024 refusals of each SRQ.
 */
DAT_RETURN dat_kdat_srq_get_refused(DAT_SRQ_HANDLE srq_handle,
				    DAT_DTO_COOKIE *user_cookie,
				    DAT_RETURN *reason);

#ifdef __cplusplus
}
#endif

#endif /* DAT_KDAT_EXT_H_ */
