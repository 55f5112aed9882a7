// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The IB extensions (KDAT_FEATURE_IB_EXT) as libdat's internal calls: RDMA
// Write with immediate data, compare-and-swap, fetch-and-add, and the
// operation and immediate data of DTO completions.  DAT 1.2 has no call
// for them; the DAT 2.0 provider (user/dat2/) reaches them here and turns
// them into DAT 2.0's dat_extension_op and DAT_IB_DTO_EVENT.  Not exported
// from libdat.so.1.  Each call checks its handle as the core's dispatch
// does (DAT_INVALID_HANDLE for anything not a live built-in object of the
// type) and holds the object for the call.
#ifndef KDAT_USER_IB_EXT_HPP
#define KDAT_USER_IB_EXT_HPP

#include <cstdint>

#include <dat/udat.h>

#include "objects.hpp"

namespace kdat {

/* The IA's KDAT_UIA_* flags (KDAT_UIA_IB_EXT, KDAT_UIA_ATOMICS). */
DAT_RETURN ia_kernel_flags(DAT_IA_HANDLE ia, std::uint32_t &flags);

/* dat_evd_wait / dat_evd_dequeue that also say what a DTO event is. */
DAT_RETURN evd_wait_ext(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout,
			DAT_COUNT threshold, DAT_EVENT *event,
			DAT_COUNT *nmore, DtoExt &ext);
DAT_RETURN evd_dequeue_ext(DAT_EVD_HANDLE evd, DAT_EVENT *event,
			   DtoExt &ext);

/*
 * Post KDAT_POST_RDMA_WRITE_IMMED (@n segments), _CMP_AND_SWAP or
 * _FETCH_AND_ADD (one segment, @iov) with @x.  The kernel checks the rest
 * (kdat.h kdat_ep_post_*); argument numbers in its codes are those of the
 * kernel calls.
 */
DAT_RETURN ep_post_ext(DAT_EP_HANDLE ep, std::uint32_t op, DAT_COUNT n,
		       const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
		       const DAT_RMR_TRIPLET *remote, const PostExt &x,
		       std::uint64_t flags);

} // namespace kdat

#endif
