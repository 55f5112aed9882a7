// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The connection-management entries of the DAT 2.0 table: CRs, PSPs, RSPs
// (libdat's DAT 1.2 calls, arguments converted) and CSPs (DAT 2.0 only).
//
// - cr_reject carries private data in DAT 2.0; DAT 1.2 (and the kernel)
//   cannot send any, so a reject with private data is refused as
//   DAT_MODEL_NOT_SUPPORTED and leaves the CR pending (the consumer may
//   reject it without data); without data it is dat_cr_reject.
// - RSPs are libdat's (the kernel's): the same calls, the same EP states
//   and DAT_INVALID_STATE_EP_* subtypes; a CR from an RSP names it as
//   sp_handle and its reserved EP as local_ep_handle, and dat_cr_accept
//   with a NULL EP takes that EP.
// - CSPs: csp_create checks the IA and is DAT_NOT_IMPLEMENTED; no CSP
//   handle ever exists, so csp_query/csp_free answer
//   DAT_INVALID_HANDLE/DAT_INVALID_HANDLE_CSP, as the core answers an
//   RMR call (kdat makes none of them either).
#include "ep_convert.hpp"

namespace kdat::dat2p {

void cr_param2(const DAT_CR_PARAM &in, std::uint64_t m,
	       ::dat2::DAT_CR_PARAM &out) noexcept
{
	if (m & ::dat2::DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR)
		out.remote_ia_address_ptr = in.remote_ia_address_ptr;
	if (m & ::dat2::DAT_CR_FIELD_REMOTE_PORT_QUAL)
		out.remote_port_qual = in.remote_port_qual;
	if (m & ::dat2::DAT_CR_FIELD_PRIVATE_DATA_SIZE)
		out.private_data_size = in.private_data_size;
	if (m & ::dat2::DAT_CR_FIELD_PRIVATE_DATA)
		out.private_data = in.private_data;
	if (m & ::dat2::DAT_CR_FIELD_LOCAL_EP_HANDLE)
		out.local_ep_handle = in.local_ep_handle;
}

void psp_param2(const DAT_PSP_PARAM &in, std::uint64_t m,
		::dat2::DAT_PSP_PARAM &out) noexcept
{
	if (m & ::dat2::DAT_PSP_FIELD_IA_HANDLE)
		out.ia_handle = in.ia_handle;
	if (m & ::dat2::DAT_PSP_FIELD_CONN_QUAL)
		out.conn_qual = in.conn_qual;
	if (m & ::dat2::DAT_PSP_FIELD_EVD_HANDLE)
		out.evd_handle = in.evd_handle;
	if (m & ::dat2::DAT_PSP_FIELD_PSP_FLAGS)
		out.psp_flags = as_enum<::dat2::DAT_PSP_FLAGS>(
			b_to_a(raw(in.psp_flags), kPspFlags));
}

void rsp_param2(const DAT_RSP_PARAM &in, std::uint64_t m,
		::dat2::DAT_RSP_PARAM &out) noexcept
{
	if (m & ::dat2::DAT_RSP_FIELD_IA_HANDLE)
		out.ia_handle = in.ia_handle;
	if (m & ::dat2::DAT_RSP_FIELD_CONN_QUAL)
		out.conn_qual = in.conn_qual;
	if (m & ::dat2::DAT_RSP_FIELD_EVD_HANDLE)
		out.evd_handle = in.evd_handle;
	if (m & ::dat2::DAT_RSP_FIELD_EP_HANDLE)
		out.ep_handle = in.ep_handle;
}

namespace {

/* ------------------------------------------------------------------ */
/* CR                                                                   */

::dat2::DAT_RETURN cr_query(DAT_CR_HANDLE cr, ::dat2::DAT_CR_PARAM_MASK mask,
			    ::dat2::DAT_CR_PARAM *param)
{
	return run([&]() -> ::DAT_RETURN {
		const std::uint64_t m = raw(mask);
		::DAT_CR_PARAM p = {};
		::DAT_RETURN r = ::dat_cr_query(
			cr, as_enum<::DAT_CR_PARAM_MASK>(a_to_b(m, kCrMask)),
			param ? &p : nullptr);

		if (r == ::DAT_SUCCESS)
			cr_param2(p, m, *param);
		return r;
	});
}

::dat2::DAT_RETURN cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep,
			     DAT_COUNT pdata_size, const DAT_PVOID pdata)
{
	return run([&]() -> ::DAT_RETURN {
		return ::dat_cr_accept(cr, ep, pdata_size, pdata);
	});
}

::dat2::DAT_RETURN cr_reject(DAT_CR_HANDLE cr, DAT_COUNT pdata_size,
			     const DAT_PVOID pdata)
{
	return run([&]() -> ::DAT_RETURN {
		if (pdata_size == 0)
			return ::dat_cr_reject(cr);
		/* (cr, private_data_size, private_data) */
		if (!live(cr, ::DAT_HANDLE_TYPE_CR))
			return bad_handle(::DAT_INVALID_HANDLE_CR);
		if (pdata_size < 0)
			return bad_arg(2);
		if (!pdata)
			return bad_arg(3);
		return err(::DAT_MODEL_NOT_SUPPORTED);
	});
}

::dat2::DAT_RETURN cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL qual)
{
	return run([&]() -> ::DAT_RETURN { return ::dat_cr_handoff(cr, qual); });
}

/*
 * Free a PSP or RSP through @destroy: its consumer qualifier forgotten first
 * (a handle libdat hands out again at once is not erased), put back if the
 * free fails.
 */
template <class Handle>
::DAT_RETURN sp_free(Handle sp, ::DAT_RETURN (*destroy)(Handle))
{
	const SpQual was = sp_qual_freed(sp);
	::DAT_RETURN r = destroy(sp);

	if (r != ::DAT_SUCCESS)
		sp_qual_restore(sp, was);
	return r;
}

/* ------------------------------------------------------------------ */
/* PSP                                                                  */

::dat2::DAT_RETURN psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			      DAT_EVD_HANDLE evd, ::dat2::DAT_PSP_FLAGS flags,
			      DAT_PSP_HANDLE *psp)
{
	return run([&]() -> ::DAT_RETURN {
		::DAT_RETURN r = ::dat_psp_create(
			ia, port_qual(qual), evd,
			as_enum<::DAT_PSP_FLAGS>(a_to_b(raw(flags), kPspFlags)),
			psp);

		if (r == ::DAT_SUCCESS)
			sp_qual_created(ia, *psp, qual);
		return r;
	});
}

::dat2::DAT_RETURN psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual,
				  DAT_EVD_HANDLE evd,
				  ::dat2::DAT_PSP_FLAGS flags,
				  DAT_PSP_HANDLE *psp)
{
	return run([&]() -> ::DAT_RETURN {
		::DAT_RETURN r = ::dat_psp_create_any(
			ia, qual, evd,
			as_enum<::DAT_PSP_FLAGS>(a_to_b(raw(flags), kPspFlags)),
			psp);

		if (r == ::DAT_SUCCESS)
			sp_qual_freed(*psp);	/* a port of kdat's choice */
		return r;
	});
}

::dat2::DAT_RETURN psp_query(DAT_PSP_HANDLE psp,
			     ::dat2::DAT_PSP_PARAM_MASK mask,
			     ::dat2::DAT_PSP_PARAM *param)
{
	return run([&]() -> ::DAT_RETURN {
		const std::uint64_t m = raw(mask);
		::DAT_PSP_PARAM p = {};
		::DAT_RETURN r = ::dat_psp_query(
			psp, as_enum<::DAT_PSP_PARAM_MASK>(a_to_b(m, kPspMask)),
			param ? &p : nullptr);

		if (r == ::DAT_SUCCESS) {
			psp_param2(p, m, *param);
			if (m & ::dat2::DAT_PSP_FIELD_CONN_QUAL)
				param->conn_qual = sp_qual(psp, p.conn_qual);
		}
		return r;
	});
}

::dat2::DAT_RETURN psp_free(DAT_PSP_HANDLE psp)
{
	return run([&]() -> ::DAT_RETURN { return sp_free(psp, ::dat_psp_free); });
}

/* ------------------------------------------------------------------ */
/* RSP                                                                  */

::dat2::DAT_RETURN rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			      DAT_EP_HANDLE ep, DAT_EVD_HANDLE evd,
			      DAT_RSP_HANDLE *rsp)
{
	return run([&]() -> ::DAT_RETURN {
		::DAT_RETURN r =
			::dat_rsp_create(ia, port_qual(qual), ep, evd, rsp);

		if (r == ::DAT_SUCCESS)
			sp_qual_created(ia, *rsp, qual);
		return r;
	});
}

::dat2::DAT_RETURN rsp_query(DAT_RSP_HANDLE rsp,
			     ::dat2::DAT_RSP_PARAM_MASK mask,
			     ::dat2::DAT_RSP_PARAM *param)
{
	return run([&]() -> ::DAT_RETURN {
		const std::uint64_t m = raw(mask);
		::DAT_RSP_PARAM p = {};
		::DAT_RETURN r = ::dat_rsp_query(
			rsp, as_enum<::DAT_RSP_PARAM_MASK>(a_to_b(m, kRspMask)),
			param ? &p : nullptr);

		if (r == ::DAT_SUCCESS) {
			rsp_param2(p, m, *param);
			if (m & ::dat2::DAT_RSP_FIELD_CONN_QUAL)
				param->conn_qual = sp_qual(rsp, p.conn_qual);
		}
		return r;
	});
}

::dat2::DAT_RETURN rsp_free(DAT_RSP_HANDLE rsp)
{
	return run([&]() -> ::DAT_RETURN { return sp_free(rsp, ::dat_rsp_free); });
}

/* ------------------------------------------------------------------ */
/* CSP (DAT 2.0 only)                                                   */

/* The DAT 2.0 status of a call on a CSP handle: none exists. */
::dat2::DAT_RETURN no_csp()
{
	return ::dat2::v_DAT_CLASS_ERROR | ::dat2::DAT_INVALID_HANDLE |
	       ::dat2::DAT_INVALID_HANDLE_CSP;
}

::dat2::DAT_RETURN csp_create(DAT_IA_HANDLE ia, ::dat2::DAT_COMM *,
			      DAT_IA_ADDRESS_PTR, DAT_EVD_HANDLE,
			      ::dat2::DAT_CSP_HANDLE *)
{
	return run([&]() -> ::DAT_RETURN {
		if (!live(ia, ::DAT_HANDLE_TYPE_IA))
			return bad_handle(::DAT_INVALID_HANDLE_IA);
		return err(::DAT_NOT_IMPLEMENTED);
	});
}

::dat2::DAT_RETURN csp_query(::dat2::DAT_CSP_HANDLE,
			     ::dat2::DAT_CSP_PARAM_MASK,
			     ::dat2::DAT_CSP_PARAM *)
{
	return no_csp();
}

::dat2::DAT_RETURN csp_free(::dat2::DAT_CSP_HANDLE)
{
	return no_csp();
}

} // namespace

void fill_cm(::dat2::DAT_PROVIDER &t)
{
	t.cr_query_func = cr_query;
	t.cr_accept_func = cr_accept;
	t.cr_reject_func = cr_reject;
	t.cr_handoff_func = cr_handoff;
	t.psp_create_func = psp_create;
	t.psp_create_any_func = psp_create_any;
	t.psp_query_func = psp_query;
	t.psp_free_func = psp_free;
	t.rsp_create_func = rsp_create;
	t.rsp_query_func = rsp_query;
	t.rsp_free_func = rsp_free;
	t.csp_create_func = csp_create;
	t.csp_query_func = csp_query;
	t.csp_free_func = csp_free;
}

} // namespace kdat::dat2p
