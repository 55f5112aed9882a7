// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Connection management: Public Service Points (dat_psp_create, _query,
// _free, _create_any), Connection Requests (dat_cr_query, _accept,
// _reject, _handoff) and Reserved Service Points (dat_rsp_create, _query,
// _free; the kernel keeps the reserved EP's state).  dat_ep_connect and
// dat_ep_disconnect are in ep.cpp.
//
// A CR is born in the kernel when a request reaches a PSP; the library
// makes its CR object the first time it sees the CR's ID in a
// DAT_CONNECTION_REQUEST_EVENT (evd.cpp).  Accepting or rejecting
// consumes it.
#include <cstring>

#include "dispatch.hpp"
#include "objects.hpp"

namespace kdat {

DAT_RETURN Ia::psp_create(DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd_h,
			  std::uint64_t flags, DAT_PSP_HANDLE *psp_handle)
{
	if (!psp_handle)
		return bad_arg(5);
	auto evd = lookup<Evd>(evd_h);
	if (!evd || evd->ctx != ctx)
		return bad_handle(DAT_INVALID_HANDLE_EVD_CR);

	struct kdat_ioc_psp_create c = {};
	c.ia = kid;
	c.evd = evd->kid;
	c.conn_qual = qual;
	c.flags = (__u32)flags;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_PSP_CREATE, c);
	if (!ok(r))
		return r;
	KernelObjectGuard owner(*ctx, c.psp, ktype::PSP);

	auto psp = make_object<Psp>(ctx);
	psp->kid = c.psp;
	psp->evd = evd;
	psp->conn_qual = qual;
	psp->flags = (DAT_PSP_FLAGS)flags;
	ctx->publish(psp);
	owner.release();
	*psp_handle = psp->handle();
	return DAT_SUCCESS;
}

DAT_RETURN Ia::rsp_create(DAT_CONN_QUAL qual, DAT_EP_HANDLE ep_h,
			  DAT_EVD_HANDLE evd_h, DAT_RSP_HANDLE *rsp_handle)
{
	/* (ia, conn_qual, ep, evd, rsp_handle), in the kernel's order */
	if (qual == 0 || qual > 65535)
		return bad_arg(2);
	if (!rsp_handle)
		return bad_arg(5);
	auto ep = lookup<Ep>(ep_h);
	if (!ep || ep->ctx != ctx)
		return bad_handle(DAT_INVALID_HANDLE_EP);
	auto evd = lookup<Evd>(evd_h);
	if (!evd || evd->ctx != ctx)
		return bad_handle(DAT_INVALID_HANDLE_EVD_CR);

	/* a module without RSPs does not know the ioctl */
	struct kdat_ioc_version v = {};
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_VERSION, v);
	if (!ok(r))
		return r;
	if (!(v.features & KDAT_FEATURE_RSP))
		return err(DAT_NOT_IMPLEMENTED);

	struct kdat_ioc_rsp_create c = {};
	c.ia = kid;
	c.ep = ep->kid;
	c.evd = evd->kid;
	c.conn_qual = qual;
	r = call(*ctx->dev, KDAT_IOC_RSP_CREATE, c);
	if (!ok(r))
		return r;
	KernelObjectGuard owner(*ctx, c.rsp, ktype::RSP);

	auto rsp = make_object<Rsp>(ctx);
	rsp->kid = c.rsp;
	rsp->evd = evd;
	rsp->ep = ep;
	ctx->publish(rsp);
	owner.release();
	*rsp_handle = rsp->handle();
	return DAT_SUCCESS;
}

DAT_RETURN Rsp::query(std::uint64_t mask, DAT_RSP_PARAM *p)
{
	DAT_RETURN r = query_args(mask, DAT_RSP_FIELD_ALL, p);

	if (!ok(r))
		return r;
	struct kdat_ioc_rsp_query q = {};
	q.rsp = kid;
	r = call(*ctx->dev, KDAT_IOC_RSP_QUERY, q);
	if (!ok(r))
		return r;
	/* the kernel's IDs are this RSP's own EP and EVD */
	p->ia_handle = ctx->ia_handle;
	p->conn_qual = q.conn_qual;
	p->evd_handle = q.evd == evd->kid ? evd->handle() : DAT_HANDLE_NULL;
	p->ep_handle = q.ep == ep->kid ? ep->handle() : DAT_HANDLE_NULL;
	return DAT_SUCCESS;
}

DAT_RETURN Rsp::free()
{
	/* a request already queued still names it */
	Tomb t;

	t.handle = handle();
	t.type = DAT_HANDLE_TYPE_RSP;
	return free_object(&t);
}

DAT_RETURN Psp::query(std::uint64_t mask, DAT_PSP_PARAM *p)
{
	DAT_RETURN r = query_args(mask, DAT_PSP_FIELD_ALL, p);

	if (!ok(r))
		return r;
	p->ia_handle = ctx->ia_handle;
	p->conn_qual = conn_qual;
	p->evd_handle = evd->handle();
	p->psp_flags = flags;
	return DAT_SUCCESS;
}

DAT_RETURN Psp::free()
{
	/* a request already queued still names it */
	Tomb t;

	t.handle = handle();
	t.type = DAT_HANDLE_TYPE_PSP;
	return free_object(&t);
}

std::shared_ptr<Cr> Cr::get(const std::shared_ptr<Context> &ctx,
			    std::uint32_t kid, DAT_CONN_QUAL qual)
{
	if (!kid)
		return nullptr;
	if (auto cr = ctx->find<Cr>(kid))
		return cr;
	auto cr = make_object<Cr>(ctx);
	cr->kid = kid;
	cr->conn_qual = qual;
	ctx->publish(cr);
	return cr;
}

DAT_RETURN Cr::query(std::uint64_t mask, DAT_CR_PARAM *p)
{
	DAT_RETURN r = query_args(mask, DAT_CR_FIELD_ALL, p);

	if (!ok(r))
		return r;

	struct kdat_ioc_cr_query q = {};
	q.cr = kid;
	r = call(*ctx->dev, KDAT_IOC_CR_QUERY, q);
	if (!ok(r)) {
		if (is_type(r, DAT_INVALID_HANDLE))
			ctx->retire(*this);	/* gone with its PSP or IA */
		return r;
	}
	std::uint32_t n = q.pdata_size < KDAT_PDATA_LEN ? q.pdata_size :
							  KDAT_PDATA_LEN;
	std::memset(p, 0, sizeof(*p));
	{
		std::lock_guard<std::mutex> g(lock);
		sockaddr_from_abi(q.remote_addr, sizeof(q.remote_addr), remote);
		std::memcpy(pdata, q.pdata, n);
	}
	p->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&remote;
	p->remote_port_qual = q.remote_port;
	p->private_data_size = (DAT_COUNT)n;
	p->private_data = n ? pdata : nullptr;
	/* an RSP's request names its reserved EP; a PSP's none */
	p->local_ep_handle = DAT_HANDLE_NULL;
	if (q.local_ep) {
		if (auto ep = ctx->find<Ep>(q.local_ep))
			p->local_ep_handle = ep->handle();
	}
	return DAT_SUCCESS;
}

DAT_RETURN Cr::accept(DAT_EP_HANDLE ep_h, DAT_COUNT pdata_size,
		      const DAT_PVOID p)
{
	/* (cr, ep, private_data_size, private_data): ARG3, ARG4 */
	if (pdata_size < 0 || pdata_size > KDAT_PDATA_LEN)
		return bad_arg(3);
	if (pdata_size && !p)
		return bad_arg(4);
	/* NULL: the request's reserved EP (RSP), which the kernel knows */
	std::shared_ptr<Ep> ep;
	if (ep_h) {
		ep = lookup<Ep>(ep_h);
		if (!ep || ep->ctx != ctx)
			return bad_handle(DAT_INVALID_HANDLE_EP);
	}

	struct kdat_ioc_cr_accept a = {};
	a.cr = kid;
	a.ep = ep ? ep->kid : 0;
	a.pdata_size = (__u32)pdata_size;
	if (pdata_size)
		std::memcpy(a.pdata, p, (std::size_t)pdata_size);
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_CR_ACCEPT, a);
	if (ok(r)) {
		ctx->retire(*this);
		return r;
	}
	/* a failure after the kernel took the CR consumed it all the same */
	struct kdat_ioc_cr_query q = {};
	q.cr = kid;
	if (is_type(call(*ctx->dev, KDAT_IOC_CR_QUERY, q), DAT_INVALID_HANDLE))
		ctx->retire(*this);
	return r;
}

DAT_RETURN Cr::reject()
{
	DAT_RETURN r = ctx->kfree(kid, ktype::CR);

	if (ok(r) || is_type(r, DAT_INVALID_HANDLE))
		ctx->retire(*this);
	return r;
}

} // namespace kdat

/* The built-in provider's entries (dispatch.hpp). */
namespace kdat::builtin {

DAT_RETURN psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
		      DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp)
{
	return KDAT_BUILTIN(Ia, ia, dat_psp_create,
			    psp_create(qual, evd, raw(flags), psp), ia, qual,
			    evd, flags, psp);
}

DAT_RETURN psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual,
			  DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
			  DAT_PSP_HANDLE *psp)
{
	return on_builtin<Ia>(
		ia, dat_psp_create_any,
		[](Ia &) { return err(DAT_NOT_IMPLEMENTED); }, ia, qual, evd,
		flags, psp);
}

DAT_RETURN psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask,
		     DAT_PSP_PARAM *param)
{
	return KDAT_BUILTIN(Psp, psp, dat_psp_query, query(raw(mask), param),
			    psp, mask, param);
}

DAT_RETURN psp_free(DAT_PSP_HANDLE psp)
{
	return KDAT_BUILTIN(Psp, psp, dat_psp_free, free(), psp);
}

DAT_RETURN cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask,
		    DAT_CR_PARAM *param)
{
	return KDAT_BUILTIN(Cr, cr, dat_cr_query, query(raw(mask), param), cr,
			    mask, param);
}

DAT_RETURN cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep, DAT_COUNT pdata_size,
		     const DAT_PVOID pdata)
{
	return KDAT_BUILTIN(Cr, cr, dat_cr_accept,
			    accept(ep, pdata_size, pdata), cr, ep, pdata_size,
			    pdata);
}

DAT_RETURN cr_reject(DAT_CR_HANDLE cr)
{
	return KDAT_BUILTIN(Cr, cr, dat_cr_reject, reject(), cr);
}

DAT_RETURN cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL handoff)
{
	return on_builtin<Cr>(
		cr, dat_cr_handoff,
		[](Cr &) { return err(DAT_NOT_IMPLEMENTED); }, cr, handoff);
}

DAT_RETURN rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep,
		      DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *rsp)
{
	return KDAT_BUILTIN(Ia, ia, dat_rsp_create,
			    rsp_create(qual, ep, evd, rsp), ia, qual, ep, evd,
			    rsp);
}

DAT_RETURN rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask,
		     DAT_RSP_PARAM *param)
{
	return KDAT_BUILTIN(Rsp, rsp, dat_rsp_query, query(raw(mask), param),
			    rsp, mask, param);
}

DAT_RETURN rsp_free(DAT_RSP_HANDLE rsp)
{
	return KDAT_BUILTIN(Rsp, rsp, dat_rsp_free, free(), rsp);
}

} // namespace kdat::builtin

using namespace kdat;

#define IA_BAD bad_handle(DAT_INVALID_HANDLE_IA)
#define PSP_BAD bad_handle(DAT_INVALID_HANDLE_PSP)
#define CR_BAD bad_handle(DAT_INVALID_HANDLE_CR)
#define RSP_BAD bad_handle(DAT_INVALID_HANDLE_RSP)

extern "C" {

DAT_RETURN dat_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			  DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
			  DAT_PSP_HANDLE *psp)
{
	return dispatch<&DAT_PROVIDER::psp_create_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(psp, DAT_HANDLE_TYPE_PSP), ia,
		qual, evd, flags, psp);
}

DAT_RETURN dat_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual,
			      DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
			      DAT_PSP_HANDLE *psp)
{
	return dispatch<&DAT_PROVIDER::psp_create_any_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(psp, DAT_HANDLE_TYPE_PSP), ia,
		qual, evd, flags, psp);
}

DAT_RETURN dat_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask,
			 DAT_PSP_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_PSP, PSP_BAD, psp_query_func, psp,
			 mask, param);
}

DAT_RETURN dat_psp_free(DAT_PSP_HANDLE psp)
{
	return dispatch<&DAT_PROVIDER::psp_free_func>(
		DAT_HANDLE_TYPE_PSP, PSP_BAD, erased(psp), psp);
}

DAT_RETURN dat_cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask,
			DAT_CR_PARAM *param)
{
	/*
	 * A provider-made EP arrives with its request; named again by a
	 * later query, it keeps its tracking (a free of it may be running).
	 */
	auto after = [&](DAT_RETURN r, const HandleEntry &e) {
		if (ok(r) && param &&
		    (raw(mask) & DAT_CR_FIELD_LOCAL_EP_HANDLE))
			track_foreign(r, param->local_ep_handle,
				      DAT_HANDLE_TYPE_EP, e, true);
	};
	return dispatch<&DAT_PROVIDER::cr_query_func>(
		DAT_HANDLE_TYPE_CR, CR_BAD, after, cr, mask, param);
}

DAT_RETURN dat_cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep,
			 DAT_COUNT pdata_size, const DAT_PVOID pdata)
{
	return dispatch<&DAT_PROVIDER::cr_accept_func>(
		DAT_HANDLE_TYPE_CR, CR_BAD, erased(cr), cr, ep, pdata_size,
		pdata);
}

DAT_RETURN dat_cr_reject(DAT_CR_HANDLE cr)
{
	return dispatch<&DAT_PROVIDER::cr_reject_func>(
		DAT_HANDLE_TYPE_CR, CR_BAD, erased(cr), cr);
}

DAT_RETURN dat_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL handoff)
{
	return dispatch<&DAT_PROVIDER::cr_handoff_func>(
		DAT_HANDLE_TYPE_CR, CR_BAD, erased(cr), cr, handoff);
}

/* Reserved Service Points */

DAT_RETURN dat_rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			  DAT_EP_HANDLE ep, DAT_EVD_HANDLE evd,
			  DAT_RSP_HANDLE *rsp)
{
	return dispatch<&DAT_PROVIDER::rsp_create_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(rsp, DAT_HANDLE_TYPE_RSP), ia,
		qual, ep, evd, rsp);
}

DAT_RETURN dat_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask,
			 DAT_RSP_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_RSP, RSP_BAD, rsp_query_func, rsp,
			 mask, param);
}

DAT_RETURN dat_rsp_free(DAT_RSP_HANDLE rsp)
{
	return dispatch<&DAT_PROVIDER::rsp_free_func>(
		DAT_HANDLE_TYPE_RSP, RSP_BAD, erased(rsp), rsp);
}

} // extern "C"
