// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection Zones: one ib_pd each.  A PZ cannot be freed while an LMR,
 * SRQ or EP still uses it (DAT_INVALID_STATE).
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "kdat_core.h"

/*
 * RDMA Read/Write targets need an rkey.  Kernel memory has no user pages
 * to register, and a fast registration needs a connected QP, which an LMR
 * does not have; so a kernel PZ carries the device's global rkey and an
 * LMR with remote privileges hands it out as its rmr_context.  Any peer
 * connected to an EP of that PZ can then reach all DMA-mapped memory: the
 * trade-off kernel ULPs make with IB_PD_UNSAFE_GLOBAL_RKEY, so it is off
 * by default: a kernel LMR asking for remote privileges then gets
 * DAT_MODEL_NOT_SUPPORTED, and only this node's own reads and writes to
 * peers work.  Load with remote_access=1 to accept the trade-off.
 */
static bool remote_access;
module_param(remote_access, bool, 0644);
MODULE_PARM_DESC(remote_access,
		 "give kernel LMRs with remote privileges the PZ's global rkey (default N: remote privileges are refused)");

bool kdat_remote_access(void)
{
	return remote_access;
}

/*
 * The PD's global rkey allows remote read and write only.  A kernel LMR
 * that peers may run atomics on (KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG) gets the
 * rkey of a second DMA MR with remote atomic access too, made as ib_core
 * makes the PD's own (__ib_alloc_pd: the driver's get_dma_mr, released
 * through its dereg_mr before the PD goes), on the same terms: only with
 * remote_access, only where the device does atomics.  NULL otherwise.
 */
static struct ib_mr *kdat_pz_atomic_mr(struct ib_pd *pd)
{
	struct ib_device *dev = pd->device;
	struct ib_mr *mr;

	if (dev->attrs.atomic_cap == IB_ATOMIC_NONE || !dev->ops.get_dma_mr ||
	    !dev->ops.dereg_mr)
		return NULL;
	mr = dev->ops.get_dma_mr(pd, IB_ACCESS_LOCAL_WRITE |
				 IB_ACCESS_REMOTE_READ |
				 IB_ACCESS_REMOTE_WRITE |
				 IB_ACCESS_REMOTE_ATOMIC);
	if (IS_ERR(mr))
		return NULL;
	mr->device = dev;
	mr->pd = pd;
	mr->type = IB_MR_TYPE_DMA;
	mr->uobject = NULL;
	mr->need_inval = false;
	return mr;
}

static void kdat_pz_release(struct kdat_obj *obj)
{
	struct kdat_pz *pz = container_of(obj, struct kdat_pz, obj);

	WARN_ON_ONCE(pz->pd);
}

/*
 * Pin the PZ named by @h for a new object of @ia (LMR, SRQ) and count it
 * as a user, so dat_pz_free refuses until the object is gone.
 */
DAT_RETURN kdat_pz_use(struct kdat_ia *ia, DAT_PZ_HANDLE h,
		       struct kdat_pz **pzp)
{
	struct kdat_obj *o = kdat_obj_get(h, DAT_HANDLE_TYPE_PZ);
	DAT_RETURN ret;

	if (!o || o->ia != ia) {
		ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
		goto err;
	}
	if (kdat_ia_dead(ia)) {
		ret = KDAT_ERR(DAT_INVALID_STATE, 0);
		goto err;
	}
	*pzp = container_of(o, struct kdat_pz, obj);
	if (!kdat_ia_add_user(ia, o, &(*pzp)->users)) {
		ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
		goto err;
	}
	return DAT_SUCCESS;
err:
	kdat_obj_put(o);
	return ret;
}

void kdat_pz_unuse(struct kdat_pz *pz)
{
	atomic_dec(&pz->users);
	kdat_obj_put(&pz->obj);
}

DAT_RETURN kdat_ib_pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *pz_handle)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);
	struct kdat_pz *pz;
	struct ib_pd *pd;
	int err;

	if (!pz_handle)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (kdat_ia_dead(ia))
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	pz = kzalloc(sizeof(*pz), GFP_KERNEL_ACCOUNT);
	if (!pz)
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	/* user memory has real registrations: never a global rkey there */
	pd = ib_alloc_pd(ia->ibdev, remote_access && !ia->ufile ?
			 IB_PD_UNSAFE_GLOBAL_RKEY : 0);
	if (IS_ERR(pd)) {
		kfree(pz);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_PROTECTION_DOMAIN);
	}
	kdat_obj_init(&pz->obj, DAT_HANDLE_TYPE_PZ, ia->obj.provider, ia,
		      kdat_pz_release);
	pz->pd = pd;
	if (remote_access && !ia->ufile)
		pz->atomic_mr = kdat_pz_atomic_mr(pd);
	if (kdat_obj_publish(&pz->obj)) {
		kdat_pz_hw_destroy(pz);
		kdat_obj_put(&pz->obj);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	err = kdat_ia_link(ia, &pz->obj);
	if (err) {
		kdat_obj_unpublish(&pz->obj);
		kdat_pz_hw_destroy(pz);
		kdat_obj_put(&pz->obj);
		return kdat_ia_link_error(err);
	}
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

/*
 * Release the ib_pd and its atomic MR.  Idempotent: device removal and
 * free may both call it.  Whoever takes the PD owns both, so the MR is
 * always gone before its PD is.
 */
void kdat_pz_hw_destroy(struct kdat_pz *pz)
{
	struct ib_pd *pd = xchg(&pz->pd, NULL);
	struct ib_mr *mr;

	if (!pd)
		return;
	mr = xchg(&pz->atomic_mr, NULL);
	if (mr)
		WARN_ON(mr->device->ops.dereg_mr(mr, NULL));
	ib_dealloc_pd(pd);
}

/* The destroy claim is held (object.c): this runs once per PZ. */
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
	kdat_obj_unpublish(&pz->obj);
	kdat_pz_hw_destroy(pz);
	return DAT_SUCCESS;
}
