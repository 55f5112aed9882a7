// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The conversions of the EP, SRQ, CR, PSP/RSP/CSP and RMR families of the
// DAT 2.0 provider (ep.cpp, srq.cpp, cm.cpp), here so the host tests can
// check every field and constant both ways.
//
// Every value is converted by name (dat-facts.md): DAT 2.0 inserted
// DAT_EP_FIELD_COMM (0x4), so the EP_PARAM mask bits below 0x1000 moved;
// DAT_SRQ_STATE is {ERROR, OPERATIONAL, SHUTDOWN} in 2.0 and
// {OPERATIONAL, ERROR} in 1.2; DAT_EP_ATTR's message and RDMA sizes are
// 32 bits in 2.0 (DAT_SEG_LENGTH) and 64 in 1.2; the triplets differ.
// Flag bits a standard does not name are passed through unchanged, so the
// core (and the kernel) judge them as they judge any unknown bit.
#pragma once

#include "convert.hpp"
#include "errors.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kdat::dat2p {

/* ------------------------------------------------------------------ */
/* Integers and enums                                                   */

/* A DAT 1.2 64-bit size in DAT 2.0's 32-bit DAT_SEG_LENGTH (saturated). */
inline ::dat2::DAT_SEG_LENGTH seg_length(DAT_VLEN v) noexcept
{
	constexpr DAT_VLEN max = std::numeric_limits<::dat2::DAT_SEG_LENGTH>::max();

	return static_cast<::dat2::DAT_SEG_LENGTH>(v > max ? max : v);
}

inline DAT_DTO_COOKIE cookie12(::dat2::DAT_DTO_COOKIE c) noexcept
{
	DAT_DTO_COOKIE d;

	d.as_64 = c.as_64;
	return d;
}

/* DAT_QOS */
inline constexpr BitPair kQos[] = {
	{ ::dat2::DAT_QOS_HIGH_THROUGHPUT, ::DAT_QOS_HIGH_THROUGHPUT },
	{ ::dat2::DAT_QOS_LOW_LATENCY, ::DAT_QOS_LOW_LATENCY },
	{ ::dat2::DAT_QOS_ECONOMY, ::DAT_QOS_ECONOMY },
	{ ::dat2::DAT_QOS_PREMIUM, ::DAT_QOS_PREMIUM },
};

/* DAT_CONNECT_FLAGS (2.0's MULTIPATH_REQUIRED is unknown to 1.2) */
inline constexpr BitPair kConnectFlags[] = {
	{ ::dat2::DAT_CONNECT_MULTIPATH_FLAG, ::DAT_CONNECT_MULTIPATH_FLAG },
};

/* DAT_CLOSE_FLAGS */
inline constexpr BitPair kCloseFlags[] = {
	{ ::dat2::DAT_CLOSE_GRACEFUL_FLAG, ::DAT_CLOSE_GRACEFUL_FLAG },
};

/* DAT_PSP_FLAGS */
inline constexpr BitPair kPspFlags[] = {
	{ ::dat2::DAT_PSP_PROVIDER_FLAG, ::DAT_PSP_PROVIDER_FLAG },
};

/*
 * DAT_EP_PARAM_MASK.  DAT_EP_FIELD_COMM (2.0 only) has no pair: the
 * callers decide what it means (ep_query fills DAT_COMM itself; ep_modify
 * sends kEpCommBit12, a bit DAT 1.2 leaves unused, which the kernel
 * refuses like every field it cannot modify).
 */
inline constexpr BitPair kEpMask[] = {
	{ ::dat2::v_DAT_EP_FIELD_IA_HANDLE, DAT_EP_FIELD_IA_HANDLE },
	{ ::dat2::v_DAT_EP_FIELD_EP_STATE, DAT_EP_FIELD_EP_STATE },
	{ ::dat2::v_DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR, DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR },
	{ ::dat2::v_DAT_EP_FIELD_LOCAL_PORT_QUAL, DAT_EP_FIELD_LOCAL_PORT_QUAL },
	{ ::dat2::v_DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR, DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR },
	{ ::dat2::v_DAT_EP_FIELD_REMOTE_PORT_QUAL, DAT_EP_FIELD_REMOTE_PORT_QUAL },
	{ ::dat2::v_DAT_EP_FIELD_PZ_HANDLE, DAT_EP_FIELD_PZ_HANDLE },
	{ ::dat2::v_DAT_EP_FIELD_RECV_EVD_HANDLE, DAT_EP_FIELD_RECV_EVD_HANDLE },
	{ ::dat2::v_DAT_EP_FIELD_REQUEST_EVD_HANDLE, DAT_EP_FIELD_REQUEST_EVD_HANDLE },
	{ ::dat2::v_DAT_EP_FIELD_CONNECT_EVD_HANDLE, DAT_EP_FIELD_CONNECT_EVD_HANDLE },
	{ ::dat2::v_DAT_EP_FIELD_SRQ_HANDLE, DAT_EP_FIELD_SRQ_HANDLE },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE, DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_QOS, DAT_EP_FIELD_EP_ATTR_QOS },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS, DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV, DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW, DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR, DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR, DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR, DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR },
	{ ::dat2::v_DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR },
};

inline constexpr std::uint64_t kEpComm2 = DAT_EP_FIELD_COMM;	/* 2.0 only */
inline constexpr std::uint64_t kEpCommBit12 = 0x800;	/* unused in 1.2 */
static_assert((kEpCommBit12 & DAT_EP_FIELD_ALL) == 0);

/* The SRQ, CR, PSP, RSP and RMR masks: same names (values checked by the tests) */
inline constexpr BitPair kSrqMask[] = {
	{ ::dat2::DAT_SRQ_FIELD_IA_HANDLE, ::DAT_SRQ_FIELD_IA_HANDLE },
	{ ::dat2::DAT_SRQ_FIELD_SRQ_STATE, ::DAT_SRQ_FIELD_SRQ_STATE },
	{ ::dat2::DAT_SRQ_FIELD_PZ_HANDLE, ::DAT_SRQ_FIELD_PZ_HANDLE },
	{ ::dat2::DAT_SRQ_FIELD_MAX_RECV_DTO, ::DAT_SRQ_FIELD_MAX_RECV_DTO },
	{ ::dat2::DAT_SRQ_FIELD_MAX_RECV_IOV, ::DAT_SRQ_FIELD_MAX_RECV_IOV },
	{ ::dat2::DAT_SRQ_FIELD_LOW_WATERMARK, ::DAT_SRQ_FIELD_LOW_WATERMARK },
	{ ::dat2::DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT, ::DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT },
	{ ::dat2::DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT, ::DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT },
};

inline constexpr BitPair kCrMask[] = {
	{ ::dat2::DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR, ::DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR },
	{ ::dat2::DAT_CR_FIELD_REMOTE_PORT_QUAL, ::DAT_CR_FIELD_REMOTE_PORT_QUAL },
	{ ::dat2::DAT_CR_FIELD_PRIVATE_DATA_SIZE, ::DAT_CR_FIELD_PRIVATE_DATA_SIZE },
	{ ::dat2::DAT_CR_FIELD_PRIVATE_DATA, ::DAT_CR_FIELD_PRIVATE_DATA },
	{ ::dat2::DAT_CR_FIELD_LOCAL_EP_HANDLE, ::DAT_CR_FIELD_LOCAL_EP_HANDLE },
};

inline constexpr BitPair kPspMask[] = {
	{ ::dat2::DAT_PSP_FIELD_IA_HANDLE, ::DAT_PSP_FIELD_IA_HANDLE },
	{ ::dat2::DAT_PSP_FIELD_CONN_QUAL, ::DAT_PSP_FIELD_CONN_QUAL },
	{ ::dat2::DAT_PSP_FIELD_EVD_HANDLE, ::DAT_PSP_FIELD_EVD_HANDLE },
	{ ::dat2::DAT_PSP_FIELD_PSP_FLAGS, ::DAT_PSP_FIELD_PSP_FLAGS },
};

inline constexpr BitPair kRspMask[] = {
	{ ::dat2::DAT_RSP_FIELD_IA_HANDLE, ::DAT_RSP_FIELD_IA_HANDLE },
	{ ::dat2::DAT_RSP_FIELD_CONN_QUAL, ::DAT_RSP_FIELD_CONN_QUAL },
	{ ::dat2::DAT_RSP_FIELD_EVD_HANDLE, ::DAT_RSP_FIELD_EVD_HANDLE },
	{ ::dat2::DAT_RSP_FIELD_EP_HANDLE, ::DAT_RSP_FIELD_EP_HANDLE },
};

/* 2.0's RMR_SCOPE and VA_TYPE have no pair: rmr_query fills them */
inline constexpr BitPair kRmrMask[] = {
	{ ::dat2::DAT_RMR_FIELD_IA_HANDLE, ::DAT_RMR_FIELD_IA_HANDLE },
	{ ::dat2::DAT_RMR_FIELD_PZ_HANDLE, ::DAT_RMR_FIELD_PZ_HANDLE },
	{ ::dat2::DAT_RMR_FIELD_LMR_TRIPLET, ::DAT_RMR_FIELD_LMR_TRIPLET },
	{ ::dat2::DAT_RMR_FIELD_MEM_PRIV, ::DAT_RMR_FIELD_MEM_PRIV },
	{ ::dat2::DAT_RMR_FIELD_RMR_CONTEXT, ::DAT_RMR_FIELD_RMR_CONTEXT },
};

/* ------------------------------------------------------------------ */
/* States                                                               */

::dat2::DAT_EP_STATE ep_state2(DAT_EP_STATE s) noexcept;
::dat2::DAT_SRQ_STATE srq_state2(DAT_SRQ_STATE s) noexcept;

/* ------------------------------------------------------------------ */
/* Structures                                                           */

/* DAT_NAMED_ATTR is {const char *name, *value} in both: the arrays are shared */
static_assert(sizeof(::dat2::DAT_NAMED_ATTR) == sizeof(::DAT_NAMED_ATTR));
static_assert(offsetof(::dat2::DAT_NAMED_ATTR, name) == offsetof(::DAT_NAMED_ATTR, name));
static_assert(offsetof(::dat2::DAT_NAMED_ATTR, value) == offsetof(::DAT_NAMED_ATTR, value));

/* Every field of a DAT_EP_ATTR (DAT_HW_DEFAULT etc. pass as values). */
void ep_attr12(const ::dat2::DAT_EP_ATTR &in, DAT_EP_ATTR &out) noexcept;
void ep_attr2(const DAT_EP_ATTR &in, ::dat2::DAT_EP_ATTR &out) noexcept;

/* The fields the DAT 2.0 @mask names (DAT_COMM: zeroes, 1.2 has none). */
void ep_param2(const DAT_EP_PARAM &in, std::uint64_t mask,
	       ::dat2::DAT_EP_PARAM &out) noexcept;
void ep_param12(const ::dat2::DAT_EP_PARAM &in, std::uint64_t mask,
		DAT_EP_PARAM &out) noexcept;

void srq_param2(const DAT_SRQ_PARAM &in, std::uint64_t mask,
		::dat2::DAT_SRQ_PARAM &out) noexcept;
void cr_param2(const DAT_CR_PARAM &in, std::uint64_t mask,
	       ::dat2::DAT_CR_PARAM &out) noexcept;
void psp_param2(const DAT_PSP_PARAM &in, std::uint64_t mask,
		::dat2::DAT_PSP_PARAM &out) noexcept;
void rsp_param2(const DAT_RSP_PARAM &in, std::uint64_t mask,
		::dat2::DAT_RSP_PARAM &out) noexcept;
void rmr_param2(const DAT_RMR_PARAM &in, std::uint64_t mask,
		::dat2::DAT_RMR_PARAM &out) noexcept;

/*
 * How many of @n triplets to convert: the core refuses a list longer than
 * the ABI carries (KDAT_MAX_IOV) before it reads any, so a longer one is
 * never converted whole (a consumer's num_segments of 2^31 must be an
 * ARG2 refusal, not a 48 GB allocation).
 */
inline DAT_COUNT to_convert(DAT_COUNT n) noexcept
{
	return n > KDAT_MAX_IOV ? KDAT_MAX_IOV : n;
}

/* One DAT 2.0 RMR triplet ({va, u32 len, ctx}) as DAT 1.2's. */
inline DAT_RMR_TRIPLET rmr_triplet12(const ::dat2::DAT_RMR_TRIPLET &t) noexcept
{
	DAT_RMR_TRIPLET d = {};

	d.rmr_context = t.rmr_context;
	d.target_address = t.virtual_address;
	d.segment_length = t.segment_length;
	return d;
}

/*
 * A remote_iov argument: NULL stays NULL (the core answers for it), else
 * a DAT 1.2 copy that lives as long as this object.
 */
class RmrArg {
public:
	explicit RmrArg(const ::dat2::DAT_RMR_TRIPLET *t) noexcept
	{
		if (t) {
			t_ = rmr_triplet12(*t);
			p_ = &t_;
		}
	}
	RmrArg(const RmrArg &) = delete;
	RmrArg &operator=(const RmrArg &) = delete;
	const DAT_RMR_TRIPLET *get() const noexcept { return p_; }

private:
	DAT_RMR_TRIPLET t_;
	const DAT_RMR_TRIPLET *p_ = nullptr;
};

/* ------------------------------------------------------------------ */
/* Entries                                                              */

/*
 * A handle of @type the library knows right now (the table the core
 * checks; nothing is pinned): for the 2.0-only calls, which answer a
 * bad handle as DAT_INVALID_HANDLE before "not supported".
 */
bool live(DAT_HANDLE h, DAT_HANDLE_TYPE type) noexcept;

/* Run @f (a DAT 1.2 status, exceptions caught) and return it in DAT 2.0. */
template <class F>
inline ::dat2::DAT_RETURN run(F &&f) noexcept
{
	return ret2(::kdat::guard(std::forward<F>(f)));
}

/* The SRQ entries (srq.cpp) and CR/PSP/RSP/CSP entries (cm.cpp). */
void fill_srq(::dat2::DAT_PROVIDER &t);
void fill_cm(::dat2::DAT_PROVIDER &t);

/* The IB extension (ib_ext.cpp): one post, and the table's entry. */
::dat2::DAT_RETURN post_ext2(::dat2::DAT_HANDLE h, const ExtPost &p) noexcept;
::dat2::DAT_HANDLE_EXTENDEDOP_FUNC extendedop_func() noexcept;

} // namespace kdat::dat2p
