// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Protection Zones: dat_pz_create, dat_pz_query, dat_pz_free.
// A PZ is the kernel's protection domain; the library only names it.
#include "dispatch.hpp"
#include "objects.hpp"

namespace kdat {

DAT_RETURN Ia::pz_create(DAT_PZ_HANDLE *pz_handle)
{
	if (!pz_handle)
		return bad_arg(2);

	struct kdat_ioc_pz_create c = {};
	c.ia = kid;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_PZ_CREATE, c);
	if (!ok(r))
		return r;
	KernelObjectGuard owner(*ctx, c.pz, ktype::PZ);

	auto pz = make_object<Pz>(ctx);
	pz->kid = c.pz;
	ctx->publish(pz);
	owner.release();
	*pz_handle = pz->handle();
	return DAT_SUCCESS;
}

DAT_RETURN Pz::query(std::uint64_t mask, DAT_PZ_PARAM *param)
{
	DAT_RETURN r = query_args(mask, DAT_PZ_FIELD_ALL, param);

	if (!ok(r))
		return r;
	param->ia_handle = ctx->ia_handle;
	return DAT_SUCCESS;
}

DAT_RETURN Pz::free()
{
	return free_object();
}

} // namespace kdat

/* The built-in provider's entries (dispatch.hpp). */
namespace kdat::builtin {

DAT_RETURN pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	return KDAT_BUILTIN(Ia, ia, dat_pz_create, pz_create(pz), ia, pz);
}

DAT_RETURN pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask,
		    DAT_PZ_PARAM *param)
{
	return KDAT_BUILTIN(Pz, pz, dat_pz_query, query(raw(mask), param), pz,
			    mask, param);
}

DAT_RETURN pz_free(DAT_PZ_HANDLE pz)
{
	return KDAT_BUILTIN(Pz, pz, dat_pz_free, free(), pz);
}

} // namespace kdat::builtin

using namespace kdat;

#define IA_BAD bad_handle(DAT_INVALID_HANDLE_IA)
#define PZ_BAD bad_handle(DAT_INVALID_HANDLE_PZ)

extern "C" {

DAT_RETURN dat_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	return dispatch<&DAT_PROVIDER::pz_create_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(pz, DAT_HANDLE_TYPE_PZ), ia,
		pz);
}

DAT_RETURN dat_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask,
			DAT_PZ_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_PZ, PZ_BAD, pz_query_func, pz, mask,
			 param);
}

DAT_RETURN dat_pz_free(DAT_PZ_HANDLE pz)
{
	return dispatch<&DAT_PROVIDER::pz_free_func>(DAT_HANDLE_TYPE_PZ, PZ_BAD,
						     erased(pz), pz);
}

} // extern "C"
