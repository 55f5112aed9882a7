// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection Zones: one ib_pd each.  A PZ cannot be freed while an LMR,
 * SRQ or EP still uses it (DAT_INVALID_STATE).
 */
#include <linux/slab.h>

#include "kdat_core.h"

static void kdat_pz_release(struct kdat_obj *obj)
{
	struct kdat_pz *pz = container_of(obj, struct kdat_pz, obj);

	WARN_ON_ONCE(pz->pd);
}

DAT_RETURN kdat_ib_pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *pz_handle)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);
	struct kdat_pz *pz;
	struct ib_pd *pd;

	if (!pz_handle)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (kdat_ia_dead(ia))
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	pz = kzalloc(sizeof(*pz), GFP_KERNEL);
	if (!pz)
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	pd = ib_alloc_pd(ia->ibdev, 0);
	if (IS_ERR(pd)) {
		kfree(pz);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_PROTECTION_DOMAIN);
	}
	kdat_obj_init(&pz->obj, DAT_HANDLE_TYPE_PZ, ia->obj.provider, ia,
		      kdat_pz_release);
	pz->pd = pd;
	if (kdat_obj_publish(&pz->obj)) {
		ib_dealloc_pd(pd);
		pz->pd = NULL;
		kdat_obj_put(&pz->obj);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	kdat_ia_link(ia, &pz->obj);
	*pz_handle = pz;
	kdat_obj_put(&pz->obj);
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask,
			    DAT_PZ_PARAM *param)
{
	struct kdat_pz *pz = container_of((struct kdat_obj *)h, struct kdat_pz,
					  obj);

	if (!param)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (mask & ~DAT_PZ_FIELD_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	param->ia_handle = pz->obj.ia;
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_pz_free(DAT_PZ_HANDLE h)
{
	struct kdat_pz *pz = container_of((struct kdat_obj *)h, struct kdat_pz,
					  obj);
	struct kdat_ia *ia = pz->obj.ia;

	mutex_lock(&ia->lock);
	if (atomic_read(&pz->users)) {
		mutex_unlock(&ia->lock);
		return KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
	}
	list_del_init(&pz->obj.ia_node);
	mutex_unlock(&ia->lock);
	if (pz->pd) {
		ib_dealloc_pd(pz->pd);
		pz->pd = NULL;
	}
	kdat_obj_unpublish(&pz->obj);
	return DAT_SUCCESS;
}
