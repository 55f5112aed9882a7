// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Local Memory Regions: dat_lmr_create, _query, _free, _sync_rdma_read,
// _sync_rdma_write; Remote Memory Regions (not implemented by the kernel
// provider: RMR calls on its handles give DAT_NOT_IMPLEMENTED).
//
// dat_lmr_create registers user memory in the kernel (KDAT_IOC_LMR_CREATE:
// pinned and charged to RLIMIT_MEMLOCK, over the limit ->
// DAT_INSUFFICIENT_RESOURCES).  The library remembers each LMR's context,
// PZ, range and privileges so dat_srq_post_recv can refuse a bad triplet
// synchronously, with the kernel's codes, before it goes into the ring.
#include "dispatch.hpp"
#include "objects.hpp"

namespace kdat {

constexpr std::uint64_t kPrivAll =
	DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG |
	DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG |
	KDAT_MEM_PRIV_REMOTE_ATOMIC;	/* kdat extension (KDAT_FEATURE_IB_EXT) */

DAT_RETURN Ia::lmr_create(std::uint64_t type, DAT_REGION_DESCRIPTION region,
			  DAT_VLEN length, DAT_PZ_HANDLE pz_handle,
			  std::uint64_t priv, DAT_LMR_HANDLE *lmr_handle,
			  DAT_LMR_CONTEXT *lmr_context,
			  DAT_RMR_CONTEXT *rmr_context,
			  DAT_VLEN *registered_length,
			  DAT_VADDR *registered_address)
{
	DAT_VADDR addr;

	switch (type) {
	case DAT_MEM_TYPE_VIRTUAL:
		addr = (DAT_VADDR)(std::uintptr_t)region.for_va;
		break;
	case DAT_MEM_TYPE_SHARED_VIRTUAL:
		/* registered by address: every process gets its own LMR */
		addr = (DAT_VADDR)(std::uintptr_t)
			       region.for_shared_memory.virtual_address;
		break;
	case DAT_MEM_TYPE_LMR: {
		auto other = lookup<Lmr>(region.for_lmr_handle);
		if (!other || other->ctx != ctx)
			return bad_handle(DAT_INVALID_HANDLE_LMR);
		addr = other->registered_address;
		break;
	}
	default:
		return bad_arg(2);
	}
	/* the kernel's order: range, privileges, PZ */
	if (!addr || !length || addr + length < addr)
		return bad_arg(4);
	if (!priv || (priv & ~kPrivAll))
		return bad_arg(6);
	auto pz = lookup<Pz>(pz_handle);
	if (!pz || pz->ctx != ctx)
		return bad_handle(DAT_INVALID_HANDLE_PZ);
	if (!lmr_handle)
		return bad_arg(7);

	struct kdat_ioc_lmr_create c = {};
	c.ia = kid;
	c.pz = pz->kid;
	c.addr = addr;
	c.length = length;
	c.priv = (__u32)priv;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_LMR_CREATE, c);
	if (!ok(r))
		return r;
	KernelObjectGuard owner(*ctx, c.lmr, ktype::LMR);

	auto lmr = make_object<Lmr>(ctx);
	lmr->kid = c.lmr;
	lmr->pz = pz;
	lmr->mem_type = (DAT_MEM_TYPE)type;
	lmr->region = region;
	lmr->length = length;
	lmr->priv = (DAT_MEM_PRIV_FLAGS)priv;
	lmr->lmr_context = c.lmr_context;
	lmr->rmr_context = c.rmr_context;
	lmr->registered_size = c.registered_size;
	lmr->registered_address = c.registered_address;
	ctx->add_lmr(c.lmr_context, LmrInfo{ pz->kid, c.registered_address,
					     c.registered_size,
					     (DAT_MEM_PRIV_FLAGS)priv });
	try {
		ctx->publish(lmr);
	} catch (...) {
		ctx->remove_lmr(c.lmr_context);
		throw;
	}
	owner.release();

	*lmr_handle = lmr->handle();
	if (lmr_context)
		*lmr_context = c.lmr_context;
	if (rmr_context)
		*rmr_context = c.rmr_context;
	if (registered_length)
		*registered_length = c.registered_size;
	if (registered_address)
		*registered_address = c.registered_address;
	return DAT_SUCCESS;
}

DAT_RETURN Lmr::query(std::uint64_t mask, DAT_LMR_PARAM *p)
{
	DAT_RETURN r = query_args(mask, DAT_LMR_FIELD_ALL, p);

	if (!ok(r))
		return r;
	p->ia_handle = ctx->ia_handle;
	p->mem_type = mem_type;
	p->region_desc = region;
	p->length = length;
	p->pz_handle = pz->handle();
	p->mem_priv = priv;
	p->lmr_context = lmr_context;
	p->rmr_context = rmr_context;
	p->registered_size = registered_size;
	p->registered_address = registered_address;
	return DAT_SUCCESS;
}

DAT_RETURN Lmr::free()
{
	DAT_RETURN r = free_object();

	if (ok(r))
		ctx->remove_lmr(lmr_context);
	return r;
}

/*
 * RDMA and CPU see the same memory on the platforms this runs on
 * (lmr_sync_req is false): the calls only check their triplets.
 */
DAT_RETURN Ia::lmr_sync(const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
{
	if (n && !segs)
		return bad_arg(2);
	for (DAT_VLEN i = 0; i < n; i++) {
		DAT_RETURN r = ctx->check_triplet(segs[i], 0,
						  DAT_MEM_PRIV_NONE_FLAG);

		/* any PZ will do here */
		if (!ok(r) && !is_type(r, DAT_PROTECTION_VIOLATION))
			return bad_arg(2);
	}
	return DAT_SUCCESS;
}

} // namespace kdat

/* The built-in provider's entries (dispatch.hpp). */
namespace kdat::builtin {

DAT_RETURN lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE type,
		      DAT_REGION_DESCRIPTION region, DAT_VLEN length,
		      DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
		      DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lmr_context,
		      DAT_RMR_CONTEXT *rmr_context,
		      DAT_VLEN *registered_length,
		      DAT_VADDR *registered_address)
{
	return KDAT_BUILTIN(Ia, ia, dat_lmr_create,
			    lmr_create(raw(type), region, length, pz,
				       raw(priv), lmr, lmr_context,
				       rmr_context, registered_length,
				       registered_address),
			    ia, type, region, length, pz, priv, lmr,
			    lmr_context, rmr_context, registered_length,
			    registered_address);
}

DAT_RETURN lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask,
		     DAT_LMR_PARAM *param)
{
	return KDAT_BUILTIN(Lmr, lmr, dat_lmr_query, query(raw(mask), param),
			    lmr, mask, param);
}

DAT_RETURN lmr_free(DAT_LMR_HANDLE lmr)
{
	return KDAT_BUILTIN(Lmr, lmr, dat_lmr_free, free(), lmr);
}

DAT_RETURN lmr_sync_rdma_read(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *segs,
			      DAT_VLEN n)
{
	return KDAT_BUILTIN(Ia, ia, dat_lmr_sync_rdma_read, lmr_sync(segs, n),
			    ia, segs, n);
}

DAT_RETURN lmr_sync_rdma_write(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *segs,
			       DAT_VLEN n)
{
	return KDAT_BUILTIN(Ia, ia, dat_lmr_sync_rdma_write, lmr_sync(segs, n),
			    ia, segs, n);
}

/* Remote Memory Regions: the built-in provider has none. */
DAT_RETURN rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr)
{
	return on_builtin<Pz>(
		pz, dat_rmr_create,
		[](Pz &) { return err(DAT_NOT_IMPLEMENTED); }, pz, rmr);
}

} // namespace kdat::builtin

using namespace kdat;

#define IA_BAD bad_handle(DAT_INVALID_HANDLE_IA)
#define LMR_BAD bad_handle(DAT_INVALID_HANDLE_LMR)
#define RMR_BAD bad_handle(DAT_INVALID_HANDLE_RMR)

extern "C" {

DAT_RETURN dat_lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE type,
			  DAT_REGION_DESCRIPTION region, DAT_VLEN length,
			  DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
			  DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lmr_context,
			  DAT_RMR_CONTEXT *rmr_context,
			  DAT_VLEN *registered_length,
			  DAT_VADDR *registered_address)
{
	return dispatch<&DAT_PROVIDER::lmr_create_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(lmr, DAT_HANDLE_TYPE_LMR), ia,
		type, region, length, pz, priv, lmr, lmr_context, rmr_context,
		registered_length, registered_address);
}

DAT_RETURN dat_lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask,
			 DAT_LMR_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_LMR, LMR_BAD, lmr_query_func, lmr,
			 mask, param);
}

DAT_RETURN dat_lmr_free(DAT_LMR_HANDLE lmr)
{
	return dispatch<&DAT_PROVIDER::lmr_free_func>(
		DAT_HANDLE_TYPE_LMR, LMR_BAD, erased(lmr), lmr);
}

DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE ia,
				  const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_IA, IA_BAD, lmr_sync_rdma_read_func,
			 ia, segs, n);
}

DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE ia,
				   const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_IA, IA_BAD, lmr_sync_rdma_write_func,
			 ia, segs, n);
}

/* Remote Memory Regions: only a loaded provider may have them. */

DAT_RETURN dat_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr)
{
	return dispatch<&DAT_PROVIDER::rmr_create_func>(
		DAT_HANDLE_TYPE_PZ, bad_handle(DAT_INVALID_HANDLE_PZ),
		track(rmr, DAT_HANDLE_TYPE_RMR), pz, rmr);
}

DAT_RETURN dat_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask,
			 DAT_RMR_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_RMR, RMR_BAD, rmr_query_func, rmr,
			 mask, param);
}

DAT_RETURN dat_rmr_bind(DAT_RMR_HANDLE rmr, const DAT_LMR_TRIPLET *triplet,
			DAT_MEM_PRIV_FLAGS priv, DAT_EP_HANDLE ep,
			DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
			DAT_RMR_CONTEXT *context)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_RMR, RMR_BAD, rmr_bind_func, rmr,
			 triplet, priv, ep, cookie, flags, context);
}

DAT_RETURN dat_rmr_free(DAT_RMR_HANDLE rmr)
{
	return dispatch<&DAT_PROVIDER::rmr_free_func>(
		DAT_HANDLE_TYPE_RMR, RMR_BAD, erased(rmr), rmr);
}

} // extern "C"
