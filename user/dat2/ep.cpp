// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The EP and RMR entries of the DAT 2.0 table, and fill_ep_srq_cm (the
// SRQ entries are in srq.cpp, CR/PSP/RSP/CSP in cm.cpp).
//
// Each entry converts its arguments to DAT 1.2 (ep_convert.hpp), calls
// libdat's own DAT 1.2 function of the same name (which checks and pins
// the handle and dispatches to the built-in provider: one implementation,
// the kernel's), converts what comes back, and returns the status as DAT
// 2.0 spells it.  Handles are the same pointers in both worlds.
//
// DAT 2.0 calls with no DAT 1.2 counterpart check their handle (so a bad
// one is DAT_INVALID_HANDLE, as for every other call) and then answer
// DAT_NOT_IMPLEMENTED: ep_common_connect, ep_post_rdma_read_to_rmr,
// rmr_create_for_ep.  An option kdat cannot honour in a call it has is
// DAT_MODEL_NOT_SUPPORTED: ep_post_send_with_invalidate with
// invalidate_flag set (without it, the call is dat_ep_post_send), a
// zero-based rmr_bind.
//
// The post path (ep_post_send/recv/rdma_*) adds no allocation and no lock
// for up to 8 segments: the triplets are converted on the stack.
#include "ep_convert.hpp"

#include "dispatch.hpp"
#include "hot.hpp"

namespace kdat::dat2p {

/* ------------------------------------------------------------------ */
/* Conversions                                                          */

::dat2::DAT_EP_STATE ep_state2(DAT_EP_STATE s) noexcept
{
	switch (raw(s)) {
	case ::DAT_EP_STATE_UNCONNECTED: return ::dat2::DAT_EP_STATE_UNCONNECTED;
	case ::DAT_EP_STATE_UNCONFIGURED_UNCONNECTED: return ::dat2::DAT_EP_STATE_UNCONFIGURED_UNCONNECTED;
	case ::DAT_EP_STATE_RESERVED: return ::dat2::DAT_EP_STATE_RESERVED;
	case ::DAT_EP_STATE_UNCONFIGURED_RESERVED: return ::dat2::DAT_EP_STATE_UNCONFIGURED_RESERVED;
	case ::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING: return ::dat2::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
	case ::DAT_EP_STATE_UNCONFIGURED_PASSIVE: return ::dat2::DAT_EP_STATE_UNCONFIGURED_PASSIVE;
	case ::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING: return ::dat2::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
	case ::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING: return ::dat2::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
	case ::DAT_EP_STATE_UNCONFIGURED_TENTATIVE: return ::dat2::DAT_EP_STATE_UNCONFIGURED_TENTATIVE;
	case ::DAT_EP_STATE_CONNECTED: return ::dat2::DAT_EP_STATE_CONNECTED;
	case ::DAT_EP_STATE_DISCONNECT_PENDING: return ::dat2::DAT_EP_STATE_DISCONNECT_PENDING;
	case ::DAT_EP_STATE_DISCONNECTED: return ::dat2::DAT_EP_STATE_DISCONNECTED;
	case ::DAT_EP_STATE_COMPLETION_PENDING: return ::dat2::DAT_EP_STATE_COMPLETION_PENDING;
	default: return ::dat2::DAT_EP_STATE_DISCONNECTED;	/* DAT_EP_STATE_ERROR */
	}
}

static ::dat2::DAT_SERVICE_TYPE service_type2(DAT_SERVICE_TYPE s) noexcept
{
	if (raw(s) == ::DAT_SERVICE_TYPE_RC)
		return ::dat2::DAT_SERVICE_TYPE_RC;
	return as_enum<::dat2::DAT_SERVICE_TYPE>(raw(s));
}

static DAT_SERVICE_TYPE service_type12(::dat2::DAT_SERVICE_TYPE s) noexcept
{
	/* any other (an extension's UD) is for the core to refuse */
	if (raw(s) == ::dat2::DAT_SERVICE_TYPE_RC)
		return ::DAT_SERVICE_TYPE_RC;
	return as_enum<DAT_SERVICE_TYPE>(raw(s));
}

/* One field of DAT_EP_ATTR, DAT 2.0 -> 1.2 or back, by the 2.0 mask bit. */
#define EP_ATTR_FIELDS(X)                                                     \
	X(MAX_RECV_DTOS, max_recv_dtos)                                       \
	X(MAX_REQUEST_DTOS, max_request_dtos)                                 \
	X(MAX_RECV_IOV, max_recv_iov)                                         \
	X(MAX_REQUEST_IOV, max_request_iov)                                   \
	X(MAX_RDMA_READ_IN, max_rdma_read_in)                                 \
	X(MAX_RDMA_READ_OUT, max_rdma_read_out)                               \
	X(SRQ_SOFT_HW, srq_soft_hw)                                           \
	X(MAX_RDMA_READ_IOV, max_rdma_read_iov)                               \
	X(MAX_RDMA_WRITE_IOV, max_rdma_write_iov)                             \
	X(NUM_TRANSPORT_ATTR, ep_transport_specific_count)                    \
	X(NUM_PROVIDER_ATTR, ep_provider_specific_count)

/* A DAT 2.0 EP size as DAT 1.2's: DAT_HW_DEFAULT stays the default. */
static DAT_VLEN size12(::dat2::DAT_SEG_LENGTH v) noexcept
{
	if (v == (::dat2::DAT_SEG_LENGTH)DAT_HW_DEFAULT)
		return (DAT_VLEN)DAT_HW_DEFAULT;
	return v;
}

static void ep_attr12_masked(const ::dat2::DAT_EP_ATTR &in, std::uint64_t m,
			     DAT_EP_ATTR &out) noexcept
{
#define X(bit, f)                                                             \
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_##bit)                         \
		out.f = in.f;
	EP_ATTR_FIELDS(X)
#undef X
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE)
		out.service_type = service_type12(in.service_type);
	/* DAT 2.0's sizes are 32 bits: its DAT_HW_DEFAULT is 0xffffffff */
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE)
		out.max_message_size = size12(in.max_message_size);
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE)
		out.max_rdma_size = size12(in.max_rdma_size);
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_QOS)
		out.qos = as_enum<DAT_QOS>(a_to_b(raw(in.qos), kQos));
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS)
		out.recv_completion_flags = as_enum<DAT_COMPLETION_FLAGS>(
			a_to_b(raw(in.recv_completion_flags), kCompletionFlags));
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS)
		out.request_completion_flags = as_enum<DAT_COMPLETION_FLAGS>(
			a_to_b(raw(in.request_completion_flags),
			       kCompletionFlags));
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR)
		out.ep_transport_specific =
			reinterpret_cast<DAT_NAMED_ATTR *>(in.ep_transport_specific);
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR)
		out.ep_provider_specific =
			reinterpret_cast<DAT_NAMED_ATTR *>(in.ep_provider_specific);
}

static void ep_attr2_masked(const DAT_EP_ATTR &in, std::uint64_t m,
			    ::dat2::DAT_EP_ATTR &out) noexcept
{
#define X(bit, f)                                                             \
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_##bit)                         \
		out.f = in.f;
	EP_ATTR_FIELDS(X)
#undef X
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE)
		out.service_type = service_type2(in.service_type);
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE)
		out.max_message_size = seg_length(in.max_message_size);
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE)
		out.max_rdma_size = seg_length(in.max_rdma_size);
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_QOS)
		out.qos = as_enum<::dat2::DAT_QOS>(b_to_a(raw(in.qos), kQos));
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS)
		out.recv_completion_flags = as_enum<::dat2::DAT_COMPLETION_FLAGS>(
			b_to_a(raw(in.recv_completion_flags), kCompletionFlags));
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS)
		out.request_completion_flags =
			as_enum<::dat2::DAT_COMPLETION_FLAGS>(
				b_to_a(raw(in.request_completion_flags),
				       kCompletionFlags));
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR)
		out.ep_transport_specific = reinterpret_cast<::dat2::DAT_NAMED_ATTR *>(
			in.ep_transport_specific);
	if (m & ::dat2::v_DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR)
		out.ep_provider_specific = reinterpret_cast<::dat2::DAT_NAMED_ATTR *>(
			in.ep_provider_specific);
}

void ep_attr12(const ::dat2::DAT_EP_ATTR &in, DAT_EP_ATTR &out) noexcept
{
	out = DAT_EP_ATTR{};
	ep_attr12_masked(in, ::dat2::v_DAT_EP_FIELD_EP_ATTR_ALL, out);
}

/*
 * The attributes of an EP being created on @ia.  OFED's providers read
 * zero sizes and zero outstanding RDMA reads as "the provider's default",
 * the device's limits, and OFED's programs rely on it: dtest and dtestcm
 * leave the sizes zero (dtest's default run then RDMA-writes 4 MiB), and
 * dapltest and dtest post RDMA reads on EPs created with 0 reads in and
 * out.  DAT 1.2 (the kernel) refuses zero sizes and takes zero reads
 * literally, so each such zero is asked for as the IA's maximum.
 */
static void ep_create_attr12(DAT_IA_HANDLE ia, const ::dat2::DAT_EP_ATTR &in,
			     DAT_EP_ATTR &out) noexcept
{
	ep_attr12(in, out);
	if (out.max_message_size && out.max_rdma_size &&
	    out.max_rdma_read_in && out.max_rdma_read_out)
		return;

	::DAT_IA_ATTR a = {};

	/* a bad IA handle is the create's to report */
	if (::dat_ia_query(ia, nullptr,
			   DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE |
				   DAT_IA_FIELD_IA_MAX_RDMA_SIZE |
				   DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN |
				   DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT,
			   &a, 0, nullptr) != ::DAT_SUCCESS)
		return;
	if (!out.max_message_size)
		out.max_message_size = a.max_message_size;
	if (!out.max_rdma_size)
		out.max_rdma_size = a.max_rdma_size;
	if (!out.max_rdma_read_in)
		out.max_rdma_read_in = a.max_rdma_read_per_ep_in;
	if (!out.max_rdma_read_out)
		out.max_rdma_read_out = a.max_rdma_read_per_ep_out;
}

void ep_attr2(const DAT_EP_ATTR &in, ::dat2::DAT_EP_ATTR &out) noexcept
{
	out = ::dat2::DAT_EP_ATTR{};
	ep_attr2_masked(in, ::dat2::v_DAT_EP_FIELD_EP_ATTR_ALL, out);
}

/* The DAT_EP_PARAM fields the two standards hold alike (mask bit, field). */
#define EP_PARAM_FIELDS(X)                                                    \
	X(IA_HANDLE, ia_handle)                                               \
	X(LOCAL_IA_ADDRESS_PTR, local_ia_address_ptr)                         \
	X(LOCAL_PORT_QUAL, local_port_qual)                                   \
	X(REMOTE_IA_ADDRESS_PTR, remote_ia_address_ptr)                       \
	X(REMOTE_PORT_QUAL, remote_port_qual)                                 \
	X(PZ_HANDLE, pz_handle)                                               \
	X(RECV_EVD_HANDLE, recv_evd_handle)                                   \
	X(REQUEST_EVD_HANDLE, request_evd_handle)                             \
	X(CONNECT_EVD_HANDLE, connect_evd_handle)                             \
	X(SRQ_HANDLE, srq_handle)

#define X(bit, f)                                                             \
	if (m & ::dat2::v_DAT_EP_FIELD_##bit)                                 \
		out.f = in.f;

void ep_param2(const DAT_EP_PARAM &in, std::uint64_t m,
	       ::dat2::DAT_EP_PARAM &out) noexcept
{
	if (m & ::dat2::v_DAT_EP_FIELD_EP_STATE)
		out.ep_state = ep_state2(in.ep_state);
	if (m & kEpComm2)
		out.comm = ::dat2::DAT_COMM{};	/* no communicator in 1.2 */
	EP_PARAM_FIELDS(X)
	ep_attr2_masked(in.ep_attr, m, out.ep_attr);
}

void ep_param12(const ::dat2::DAT_EP_PARAM &in, std::uint64_t m,
		DAT_EP_PARAM &out) noexcept
{
	if (m & ::dat2::v_DAT_EP_FIELD_EP_STATE) {
		/* by name; 2.0's multipath states are connected ones */
		switch (raw(in.ep_state)) {
#define S(n)                                                                  \
	case ::dat2::DAT_EP_STATE_##n:                                        \
		out.ep_state = ::DAT_EP_STATE_##n;                            \
		break;
		S(UNCONNECTED)
		S(UNCONFIGURED_UNCONNECTED)
		S(RESERVED)
		S(UNCONFIGURED_RESERVED)
		S(PASSIVE_CONNECTION_PENDING)
		S(UNCONFIGURED_PASSIVE)
		S(ACTIVE_CONNECTION_PENDING)
		S(TENTATIVE_CONNECTION_PENDING)
		S(UNCONFIGURED_TENTATIVE)
		S(CONNECTED)
		S(DISCONNECT_PENDING)
		S(DISCONNECTED)
		S(COMPLETION_PENDING)
#undef S
		case ::dat2::DAT_EP_STATE_CONNECTED_SINGLE_PATH:
		case ::dat2::DAT_EP_STATE_CONNECTED_MULTI_PATH:
			out.ep_state = ::DAT_EP_STATE_CONNECTED;
			break;
		default:
			out.ep_state = as_enum<DAT_EP_STATE>(raw(in.ep_state));
			break;
		}
	}
	EP_PARAM_FIELDS(X)
	ep_attr12_masked(in.ep_attr, m, out.ep_attr);
}

#undef X

void rmr_param2(const DAT_RMR_PARAM &in, std::uint64_t m,
		::dat2::DAT_RMR_PARAM &out) noexcept
{
	if (m & ::dat2::DAT_RMR_FIELD_IA_HANDLE)
		out.ia_handle = in.ia_handle;
	if (m & ::dat2::DAT_RMR_FIELD_PZ_HANDLE)
		out.pz_handle = in.pz_handle;
	if (m & ::dat2::DAT_RMR_FIELD_LMR_TRIPLET) {
		out.lmr_triplet.lmr_context = in.lmr_triplet.lmr_context;
		out.lmr_triplet.virtual_address = in.lmr_triplet.virtual_address;
		out.lmr_triplet.segment_length =
			seg_length(in.lmr_triplet.segment_length);
	}
	if (m & ::dat2::DAT_RMR_FIELD_MEM_PRIV)
		out.mem_priv = as_enum<::dat2::DAT_MEM_PRIV_FLAGS>(
			b_to_a(raw(in.mem_priv), kMemPriv));
	if (m & ::dat2::DAT_RMR_FIELD_RMR_CONTEXT)
		out.rmr_context = in.rmr_context;
	/* DAT 1.2 RMRs are PZ-scoped and virtually addressed */
	if (m & ::dat2::DAT_RMR_FIELD_RMR_SCOPE)
		out.rmr_scope = ::dat2::DAT_RMR_SCOPE_PZ;
	if (m & ::dat2::DAT_RMR_FIELD_VA_TYPE)
		out.va_type = ::dat2::DAT_VA_TYPE_VA;
}

bool live(DAT_HANDLE h, DAT_HANDLE_TYPE type) noexcept
{
	try {
		return static_cast<bool>(handles().find(h, type));
	} catch (...) {
		return false;
	}
}

namespace {

/* ------------------------------------------------------------------ */
/* EP entries                                                           */

::dat2::DAT_RETURN ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv,
		     DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn,
		     const ::dat2::DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
{
	return run([&]() -> ::DAT_RETURN {
		::DAT_EP_ATTR a;

		if (attr)
			ep_create_attr12(ia, *attr, a);
		return ::dat_ep_create(ia, pz, recv, req, conn,
				       attr ? &a : nullptr, ep);
	});
}

::dat2::DAT_RETURN ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			      DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req,
			      DAT_EVD_HANDLE conn, DAT_SRQ_HANDLE srq,
			      const ::dat2::DAT_EP_ATTR *attr,
			      DAT_EP_HANDLE *ep)
{
	return run([&]() -> ::DAT_RETURN {
		::DAT_EP_ATTR a;

		if (attr)
			ep_create_attr12(ia, *attr, a);
		return ::dat_ep_create_with_srq(ia, pz, recv, req, conn, srq,
						attr ? &a : nullptr, ep);
	});
}

::dat2::DAT_RETURN ep_query(DAT_EP_HANDLE ep, ::dat2::DAT_EP_PARAM_MASK mask,
		    ::dat2::DAT_EP_PARAM *param)
{
	return run([&]() -> ::DAT_RETURN {
		const std::uint64_t m = raw(mask);
		::DAT_EP_PARAM p = {};
		/* DAT_COMM is ours to fill: the core has no such field */
		::DAT_RETURN r = ::dat_ep_query(
			ep, a_to_b(m & ~kEpComm2, kEpMask), param ? &p : nullptr);

		if (r == ::DAT_SUCCESS)
			ep_param2(p, m, *param);
		return r;
	});
}

::dat2::DAT_RETURN ep_modify(DAT_EP_HANDLE ep, ::dat2::DAT_EP_PARAM_MASK mask,
		     const ::dat2::DAT_EP_PARAM *param)
{
	return run([&]() -> ::DAT_RETURN {
		const std::uint64_t m = raw(mask);
		std::uint64_t m12 = a_to_b(m & ~kEpComm2, kEpMask);
		::DAT_EP_PARAM p = {};

		if (m & kEpComm2)
			m12 |= kEpCommBit12;
		if (param)
			ep_param12(*param, m, p);
		return ::dat_ep_modify(ep, m12, param ? &p : nullptr);
	});
}

::dat2::DAT_RETURN ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr,
		      DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
		      DAT_COUNT pdata_size, const DAT_PVOID pdata,
		      ::dat2::DAT_QOS qos, ::dat2::DAT_CONNECT_FLAGS flags)
{
	return run([&]() -> ::DAT_RETURN {
		return ::dat_ep_connect(
			ep, addr, port_qual(qual), timeout, pdata_size, pdata,
			as_enum<::DAT_QOS>(a_to_b(raw(qos), kQos)),
			as_enum<::DAT_CONNECT_FLAGS>(
				a_to_b(raw(flags), kConnectFlags)));
	});
}

::dat2::DAT_RETURN ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup,
			  DAT_TIMEOUT timeout, DAT_COUNT pdata_size,
			  const DAT_PVOID pdata, ::dat2::DAT_QOS qos)
{
	return run([&]() -> ::DAT_RETURN {
		return ::dat_ep_dup_connect(
			ep, dup, timeout, pdata_size, pdata,
			as_enum<::DAT_QOS>(a_to_b(raw(qos), kQos)));
	});
}

/* DAT 2.0 only (a connection named by the address alone): not in kdat */
::dat2::DAT_RETURN ep_common_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR,
			     DAT_TIMEOUT, DAT_COUNT, const DAT_PVOID)
{
	return run([&]() -> ::DAT_RETURN {
		if (!live(ep, ::DAT_HANDLE_TYPE_EP))
			return bad_handle(::DAT_INVALID_HANDLE_EP);
		return err(::DAT_NOT_IMPLEMENTED);
	});
}

::dat2::DAT_RETURN ep_disconnect(DAT_EP_HANDLE ep, ::dat2::DAT_CLOSE_FLAGS flags)
{
	return run([&]() -> ::DAT_RETURN {
		return ::dat_ep_disconnect(
			ep, as_enum<::DAT_CLOSE_FLAGS>(
				    a_to_b(raw(flags), kCloseFlags)));
	});
}

inline ::DAT_COMPLETION_FLAGS flags12(::dat2::DAT_COMPLETION_FLAGS f) noexcept
{
	return as_enum<::DAT_COMPLETION_FLAGS>(
		a_to_b(raw(f), kCompletionFlags));
}

KDAT_DATA_PATH(256)
::dat2::DAT_RETURN ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n,
			::dat2::DAT_LMR_TRIPLET *iov,
			::dat2::DAT_DTO_COOKIE cookie,
			::dat2::DAT_COMPLETION_FLAGS flags)
{
	return run([&]() -> ::DAT_RETURN {
		Triplets t(iov, to_convert(n));

		return ::dat_ep_post_send(ep, n, t.get(), cookie12(cookie),
					  flags12(flags));
	});
}

::dat2::DAT_RETURN ep_post_send_with_invalidate(DAT_EP_HANDLE ep, DAT_COUNT n,
					::dat2::DAT_LMR_TRIPLET *iov,
					::dat2::DAT_DTO_COOKIE cookie,
					::dat2::DAT_COMPLETION_FLAGS flags,
					::dat2::DAT_BOOLEAN invalidate,
					DAT_RMR_CONTEXT)
{
	if (raw(invalidate) == ::dat2::DAT_FALSE)
		return ep_post_send(ep, n, iov, cookie, flags);
	return run([&]() -> ::DAT_RETURN {
		if (!live(ep, ::DAT_HANDLE_TYPE_EP))
			return bad_handle(::DAT_INVALID_HANDLE_EP);
		return err(::DAT_MODEL_NOT_SUPPORTED);
	});
}

KDAT_DATA_PATH(512)
::dat2::DAT_RETURN ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n,
			::dat2::DAT_LMR_TRIPLET *iov,
			::dat2::DAT_DTO_COOKIE cookie,
			::dat2::DAT_COMPLETION_FLAGS flags)
{
	return run([&]() -> ::DAT_RETURN {
		Triplets t(iov, to_convert(n));

		return ::dat_ep_post_recv(ep, n, t.get(), cookie12(cookie),
					  flags12(flags));
	});
}

KDAT_DATA_PATH(512)
::dat2::DAT_RETURN ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n,
			     ::dat2::DAT_LMR_TRIPLET *iov,
			     ::dat2::DAT_DTO_COOKIE cookie,
			     const ::dat2::DAT_RMR_TRIPLET *remote,
			     ::dat2::DAT_COMPLETION_FLAGS flags)
{
	return run([&]() -> ::DAT_RETURN {
		Triplets t(iov, to_convert(n));
		RmrArg r(remote);

		return ::dat_ep_post_rdma_read(ep, n, t.get(), cookie12(cookie),
					       r.get(), flags12(flags));
	});
}

/* DAT 2.0 only (an RMR as the local buffer): not in kdat */
::dat2::DAT_RETURN ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep,
				    const ::dat2::DAT_RMR_TRIPLET *,
				    ::dat2::DAT_DTO_COOKIE,
				    const ::dat2::DAT_RMR_TRIPLET *,
				    ::dat2::DAT_COMPLETION_FLAGS)
{
	return run([&]() -> ::DAT_RETURN {
		if (!live(ep, ::DAT_HANDLE_TYPE_EP))
			return bad_handle(::DAT_INVALID_HANDLE_EP);
		return err(::DAT_NOT_IMPLEMENTED);
	});
}

KDAT_DATA_PATH(512)
::dat2::DAT_RETURN ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n,
			      ::dat2::DAT_LMR_TRIPLET *iov,
			      ::dat2::DAT_DTO_COOKIE cookie,
			      const ::dat2::DAT_RMR_TRIPLET *remote,
			      ::dat2::DAT_COMPLETION_FLAGS flags)
{
	return run([&]() -> ::DAT_RETURN {
		Triplets t(iov, to_convert(n));
		RmrArg r(remote);

		return ::dat_ep_post_rdma_write(ep, n, t.get(),
						cookie12(cookie), r.get(),
						flags12(flags));
	});
}

::dat2::DAT_RETURN ep_get_status(DAT_EP_HANDLE ep, ::dat2::DAT_EP_STATE *state,
			 ::dat2::DAT_BOOLEAN *recv_idle,
			 ::dat2::DAT_BOOLEAN *request_idle)
{
	return run([&]() -> ::DAT_RETURN {
		::DAT_EP_STATE s = ::DAT_EP_STATE_UNCONNECTED;
		::DAT_BOOLEAN ri = ::DAT_FALSE, qi = ::DAT_FALSE;
		::DAT_RETURN r = ::dat_ep_get_status(
			ep, state ? &s : nullptr, recv_idle ? &ri : nullptr,
			request_idle ? &qi : nullptr);

		if (r != ::DAT_SUCCESS)
			return r;
		if (state)
			*state = ep_state2(s);
		if (recv_idle)
			*recv_idle = ri == ::DAT_TRUE ? ::dat2::DAT_TRUE :
							::dat2::DAT_FALSE;
		if (request_idle)
			*request_idle = qi == ::DAT_TRUE ? ::dat2::DAT_TRUE :
							   ::dat2::DAT_FALSE;
		return r;
	});
}

::dat2::DAT_RETURN ep_free(DAT_EP_HANDLE ep)
{
	return run([&]() -> ::DAT_RETURN { return ::dat_ep_free(ep); });
}

::dat2::DAT_RETURN ep_reset(DAT_EP_HANDLE ep)
{
	return run([&]() -> ::DAT_RETURN { return ::dat_ep_reset(ep); });
}

::dat2::DAT_RETURN ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs, DAT_COUNT *span)
{
	return run([&]() -> ::DAT_RETURN {
		return ::dat_ep_recv_query(ep, nbufs, span);
	});
}

::dat2::DAT_RETURN ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft, DAT_COUNT hard)
{
	return run([&]() -> ::DAT_RETURN {
		return ::dat_ep_set_watermark(ep, soft, hard);
	});
}

/* ------------------------------------------------------------------ */
/* RMR entries (what libdat does: kdat has no RMRs, the core says so)  */

::dat2::DAT_RETURN rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr)
{
	return run([&]() -> ::DAT_RETURN { return ::dat_rmr_create(pz, rmr); });
}

/* DAT 2.0 only (an EP-scoped window): not in kdat */
::dat2::DAT_RETURN rmr_create_for_ep(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *)
{
	return run([&]() -> ::DAT_RETURN {
		if (!live(pz, ::DAT_HANDLE_TYPE_PZ))
			return bad_handle(::DAT_INVALID_HANDLE_PZ);
		return err(::DAT_NOT_IMPLEMENTED);
	});
}

::dat2::DAT_RETURN rmr_query(DAT_RMR_HANDLE rmr, ::dat2::DAT_RMR_PARAM_MASK mask,
		     ::dat2::DAT_RMR_PARAM *param)
{
	return run([&]() -> ::DAT_RETURN {
		const std::uint64_t m = raw(mask);
		::DAT_RMR_PARAM p = {};
		::DAT_RETURN r = ::dat_rmr_query(
			rmr,
			as_enum<::DAT_RMR_PARAM_MASK>(a_to_b(
				m & ~static_cast<std::uint64_t>(
					    ::dat2::DAT_RMR_FIELD_RMR_SCOPE |
					    ::dat2::DAT_RMR_FIELD_VA_TYPE),
				kRmrMask)),
			param ? &p : nullptr);

		if (r == ::DAT_SUCCESS)
			rmr_param2(p, m, *param);
		return r;
	});
}

::dat2::DAT_RETURN rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE,
		    const ::dat2::DAT_LMR_TRIPLET *triplet,
		    ::dat2::DAT_MEM_PRIV_FLAGS priv, ::dat2::DAT_VA_TYPE va_type,
		    DAT_EP_HANDLE ep, ::dat2::DAT_RMR_COOKIE cookie,
		    ::dat2::DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT *context)
{
	return run([&]() -> ::DAT_RETURN {
		if (raw(va_type) != ::dat2::DAT_VA_TYPE_VA) {
			/* DAT 1.2 binds virtual addresses only */
			if (!live(rmr, ::DAT_HANDLE_TYPE_RMR))
				return bad_handle(::DAT_INVALID_HANDLE_RMR);
			return err(::DAT_MODEL_NOT_SUPPORTED);
		}
		/* the LMR handle is 2.0's; 1.2 finds it by the triplet */
		Triplets t(triplet, triplet ? 1 : 0);
		::DAT_RMR_COOKIE c;

		c.as_64 = cookie.as_64;
		return ::dat_rmr_bind(
			rmr, t.get(),
			as_enum<::DAT_MEM_PRIV_FLAGS>(a_to_b(raw(priv), kMemPriv)),
			ep, c, flags12(flags), context);
	});
}

::dat2::DAT_RETURN rmr_free(DAT_RMR_HANDLE rmr)
{
	return run([&]() -> ::DAT_RETURN { return ::dat_rmr_free(rmr); });
}

} // namespace

void fill_ep_srq_cm(::dat2::DAT_PROVIDER &t)
{
	t.ep_create_func = ep_create;
	t.ep_create_with_srq_func = ep_create_with_srq;
	t.ep_query_func = ep_query;
	t.ep_modify_func = ep_modify;
	t.ep_connect_func = ep_connect;
	t.ep_dup_connect_func = ep_dup_connect;
	t.ep_common_connect_func = ep_common_connect;
	t.ep_disconnect_func = ep_disconnect;
	t.ep_post_send_func = ep_post_send;
	t.ep_post_send_with_invalidate_func = ep_post_send_with_invalidate;
	t.ep_post_recv_func = ep_post_recv;
	t.ep_post_rdma_read_func = ep_post_rdma_read;
	t.ep_post_rdma_read_to_rmr_func = ep_post_rdma_read_to_rmr;
	t.ep_post_rdma_write_func = ep_post_rdma_write;
	t.ep_get_status_func = ep_get_status;
	t.ep_free_func = ep_free;
	t.ep_reset_func = ep_reset;
	t.ep_recv_query_func = ep_recv_query;
	t.ep_set_watermark_func = ep_set_watermark;
	t.rmr_create_func = rmr_create;
	t.rmr_create_for_ep_func = rmr_create_for_ep;
	t.rmr_query_func = rmr_query;
	t.rmr_bind_func = rmr_bind;
	t.rmr_free_func = rmr_free;
	fill_srq(t);
	fill_cm(t);
}

} // namespace kdat::dat2p
