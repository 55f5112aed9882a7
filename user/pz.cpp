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
	auto pz = make_object<Pz>(ctx);
	pz->kid = c.pz;
	ctx->publish(pz);
	*pz_handle = pz->handle();
	return DAT_SUCCESS;
}

DAT_RETURN Pz::query(std::uint64_t mask, DAT_PZ_PARAM *param)
{
	if (mask & ~DAT_PZ_FIELD_ALL)
		return bad_arg(2);
	if (!param)
		return bad_arg(3);
	param->ia_handle = ctx->ia_handle;
	return DAT_SUCCESS;
}

DAT_RETURN Pz::free()
{
	DAT_RETURN r = ctx->kfree(kid, ktype::PZ);

	if (ok(r))
		ctx->retire(*this);
	return r;
}

} // namespace kdat

using namespace kdat;

extern "C" {

DAT_RETURN dat_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	return dispatch<Ia>(
		ia, bad_handle(DAT_INVALID_HANDLE_IA),
		[&](Ia &o) { return o.pz_create(pz); },
		[&](const HandleEntry &e) {
			DAT_RETURN r = call_provider(e.provider->pz_create_func,
						     ia, pz);
			track_foreign(r, pz ? *pz : nullptr, DAT_HANDLE_TYPE_PZ,
				      e);
			return r;
		});
}

DAT_RETURN dat_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask,
			DAT_PZ_PARAM *param)
{
	return KDAT_DISPATCH(Pz, pz, bad_handle(DAT_INVALID_HANDLE_PZ),
			     query(raw(mask), param), pz_query_func, pz, mask,
			     param);
}

DAT_RETURN dat_pz_free(DAT_PZ_HANDLE pz)
{
	return dispatch<Pz>(
		pz, bad_handle(DAT_INVALID_HANDLE_PZ),
		[&](Pz &o) { return o.free(); },
		[&](const HandleEntry &e) {
			DAT_RETURN r = call_provider(e.provider->pz_free_func,
						     pz);
			if (ok(r))
				handles().erase(pz);
			return r;
		});
}

} // extern "C"
