// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The SRQ entries of the DAT 2.0 table (dat_ep_create_with_srq is in
// ep.cpp): libdat's DAT 1.2 dat_srq_* with the arguments converted.
// DAT_SRQ_ATTR and DAT_SRQ_PARAM have the same layout in both standards,
// but DAT_SRQ_STATE does not ({ERROR, OPERATIONAL, SHUTDOWN} in 2.0), so
// every field is copied by name.
//
// srq_post_recv is the hot path: the triplets are converted on the stack
// (up to 8), then dat_srq_post_recv takes its own cached, syscall-free way.
#include "ep_convert.hpp"
#include "hot.hpp"

namespace kdat::dat2p {

::dat2::DAT_SRQ_STATE srq_state2(DAT_SRQ_STATE s) noexcept
{
	switch (raw(s)) {
	case ::DAT_SRQ_STATE_OPERATIONAL: return ::dat2::DAT_SRQ_STATE_OPERATIONAL;
	case ::DAT_SRQ_STATE_ERROR: return ::dat2::DAT_SRQ_STATE_ERROR;
	default: return ::dat2::DAT_SRQ_STATE_ERROR;
	}
}

void srq_param2(const DAT_SRQ_PARAM &in, std::uint64_t m,
		::dat2::DAT_SRQ_PARAM &out) noexcept
{
	if (m & ::dat2::DAT_SRQ_FIELD_IA_HANDLE)
		out.ia_handle = in.ia_handle;
	if (m & ::dat2::DAT_SRQ_FIELD_SRQ_STATE)
		out.srq_state = srq_state2(in.srq_state);
	if (m & ::dat2::DAT_SRQ_FIELD_PZ_HANDLE)
		out.pz_handle = in.pz_handle;
	if (m & ::dat2::DAT_SRQ_FIELD_MAX_RECV_DTO)
		out.max_recv_dtos = in.max_recv_dtos;
	if (m & ::dat2::DAT_SRQ_FIELD_MAX_RECV_IOV)
		out.max_recv_iov = in.max_recv_iov;
	if (m & ::dat2::DAT_SRQ_FIELD_LOW_WATERMARK)
		out.low_watermark = in.low_watermark;
	if (m & ::dat2::DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT)
		out.available_dto_count = in.available_dto_count;
	if (m & ::dat2::DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT)
		out.outstanding_dto_count = in.outstanding_dto_count;
}

namespace {

::dat2::DAT_RETURN srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			      ::dat2::DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *srq)
{
	return run([&]() -> ::DAT_RETURN {
		::DAT_SRQ_ATTR a = {};

		if (attr) {
			a.max_recv_dtos = attr->max_recv_dtos;
			a.max_recv_iov = attr->max_recv_iov;
			a.low_watermark = attr->low_watermark;
		}
		::DAT_RETURN r =
			::dat_srq_create(ia, pz, attr ? &a : nullptr, srq);
		if (r == ::DAT_SUCCESS && attr) {
			/* whatever the core wrote back (it may, in 1.2) */
			attr->max_recv_dtos = a.max_recv_dtos;
			attr->max_recv_iov = a.max_recv_iov;
			attr->low_watermark = a.low_watermark;
		}
		return r;
	});
}

::dat2::DAT_RETURN srq_free(DAT_SRQ_HANDLE srq)
{
	return run([&]() -> ::DAT_RETURN { return ::dat_srq_free(srq); });
}

KDAT_DATA_PATH(512)
::dat2::DAT_RETURN srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n,
				 ::dat2::DAT_LMR_TRIPLET *iov,
				 ::dat2::DAT_DTO_COOKIE cookie)
{
	return run([&]() -> ::DAT_RETURN {
		Triplets t(iov, to_convert(n));

		return ::dat_srq_post_recv(srq, n, t.get(), cookie12(cookie));
	});
}

::dat2::DAT_RETURN srq_query(DAT_SRQ_HANDLE srq,
			     ::dat2::DAT_SRQ_PARAM_MASK mask,
			     ::dat2::DAT_SRQ_PARAM *param)
{
	return run([&]() -> ::DAT_RETURN {
		const std::uint64_t m = raw(mask);
		::DAT_SRQ_PARAM p = {};
		::DAT_RETURN r = ::dat_srq_query(
			srq, as_enum<::DAT_SRQ_PARAM_MASK>(a_to_b(m, kSrqMask)),
			param ? &p : nullptr);

		if (r == ::DAT_SUCCESS)
			srq_param2(p, m, *param);
		return r;
	});
}

::dat2::DAT_RETURN srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT max)
{
	return run([&]() -> ::DAT_RETURN { return ::dat_srq_resize(srq, max); });
}

::dat2::DAT_RETURN srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT lw)
{
	return run([&]() -> ::DAT_RETURN { return ::dat_srq_set_lw(srq, lw); });
}

} // namespace

void fill_srq(::dat2::DAT_PROVIDER &t)
{
	t.srq_create_func = srq_create;
	t.srq_free_func = srq_free;
	t.srq_post_recv_func = srq_post_recv;
	t.srq_query_func = srq_query;
	t.srq_resize_func = srq_resize;
	t.srq_set_lw_func = srq_set_lw;
}

} // namespace kdat::dat2p
