// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Local Memory Regions for kernel memory.  A kernel consumer registers a
 * physically contiguous buffer from the linear map (kmalloc, alloc_pages)
 * by its virtual address; it is DMA-mapped once here.  Each LMR gets its
 * own lmr_context from a per-IA table, so every triplet a consumer posts
 * is checked against its registration: the context must name a live LMR
 * of this IA, the range must lie inside it, the LMR's PZ must match the
 * posting object's PZ (else DAT_PROTECTION_VIOLATION) and its privileges
 * must allow the access (else DAT_PRIVILEGES_VIOLATION).
 *
 * The PZ check is the provider's, in software; the SGE's lkey is the
 * caller's, from the ib_pd the work request's QP or SRQ lives in.
 */
#include <linux/slab.h>
#include <linux/mm.h>

#include "kdat_core.h"

#define KDAT_MEM_PRIV_REMOTE	(DAT_MEM_PRIV_REMOTE_READ_FLAG | \
				 DAT_MEM_PRIV_REMOTE_WRITE_FLAG | \
				 KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG)
#define KDAT_MEM_PRIV_ALL	(DAT_MEM_PRIV_LOCAL_READ_FLAG | \
				 DAT_MEM_PRIV_REMOTE_READ_FLAG | \
				 DAT_MEM_PRIV_LOCAL_WRITE_FLAG | \
				 DAT_MEM_PRIV_REMOTE_WRITE_FLAG | \
				 KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG)

/*
 * No post finds @lmr's context once this returns: posts look it up under
 * RCU, so the grace period lets those that found it finish first.
 */
static void kdat_lmr_forget(struct kdat_ia *ia, struct kdat_lmr *lmr)
{
	cmpxchg(kdat_lmr_slot(ia, lmr->context), lmr, NULL);
	xa_erase(&ia->lmrs, lmr->context);
	synchronize_rcu();
}

KDAT_DATA_PATH(kdat_lmr_to_sge, 512)
DAT_RETURN kdat_lmr_to_sge(struct kdat_ia *ia, struct kdat_pz *pz,
			   const DAT_LMR_TRIPLET *t, struct ib_sge *sge,
			   DAT_MEM_PRIV_FLAGS need)
{
	DAT_RETURN ret;

	rcu_read_lock();
	ret = kdat_lmr_to_sge_rcu(ia, pz, t, sge, need);
	rcu_read_unlock();
	return ret;
}

static void kdat_lmr_release(struct kdat_obj *obj)
{
	struct kdat_lmr *lmr = container_of(obj, struct kdat_lmr, obj);

	if (lmr->pz)
		kdat_obj_put(&lmr->pz->obj);
}

/*
 * Give a DMA-mapped (kernel) or registered (user) region its LMR: an
 * object, an lmr_context and a handle.  On success the LMR owns @pz's
 * use and reference and the mapping or @mr; on failure the caller still
 * does.
 */
static DAT_RETURN kdat_lmr_new(struct kdat_ia *ia, struct kdat_pz *pz,
			       void *va, u64 dma, u64 length,
			       DAT_MEM_PRIV_FLAGS priv, struct ib_mr *mr,
			       u32 rmr_context, struct kdat_lmr **lmrp)
{
	DAT_RETURN ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES,
				  DAT_RESOURCE_MEMORY_REGION);
	struct kdat_lmr *lmr;
	int err;
	u32 id;

	lmr = kzalloc(sizeof(*lmr), GFP_KERNEL_ACCOUNT);
	if (!lmr)
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	kdat_obj_init(&lmr->obj, DAT_HANDLE_TYPE_LMR, ia->obj.provider, ia,
		      kdat_lmr_release);
	lmr->pz = pz;
	lmr->va = va;
	lmr->dma = dma;
	lmr->length = length;
	lmr->priv = priv;
	lmr->mr = mr;
	lmr->rmr_context = rmr_context;
	lmr->mapped = true;
	mutex_init(&lmr->hw_lock);
	if (xa_alloc_cyclic(&ia->lmrs, &id, lmr, xa_limit_31b, &ia->next_lmr,
			    GFP_KERNEL) < 0)
		goto err;
	lmr->context = id;
	cmpxchg_release(kdat_lmr_slot(ia, id), NULL, lmr);
	if (kdat_obj_publish(&lmr->obj))
		goto err_forget;
	err = kdat_ia_link(ia, &lmr->obj);
	if (err) {
		kdat_obj_unpublish(&lmr->obj);
		ret = kdat_ia_link_error(err);
		goto err_forget;
	}
	*lmrp = lmr;			/* the caller owns our reference */
	return DAT_SUCCESS;
err_forget:
	kdat_lmr_forget(ia, lmr);
err:
	lmr->pz = NULL;			/* the caller keeps the PZ */
	lmr->mapped = false;
	kdat_obj_put(&lmr->obj);
	return ret;
}

/*
 * Register user memory for a /dev/kdat IA, in the caller's context: the
 * pages are pinned and charged to its RLIMIT_MEMLOCK by ib_core (over the
 * limit: DAT_INSUFFICIENT_RESOURCES).  The LMR's "DMA address" is the user
 * virtual address, which is the MR's iova.
 */
DAT_RETURN kdat_lmr_create_user(struct kdat_ia *ia, DAT_PZ_HANDLE pz_handle,
				u64 addr, u64 length, DAT_MEM_PRIV_FLAGS priv,
				struct kdat_lmr **lmrp)
{
	struct kdat_pz *pz;
	struct ib_mr *mr;
	DAT_RETURN ret;
	int access = 0;

	if (!addr || !length || addr + length < addr ||
	    length > ia->ibdev->attrs.max_mr_size)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (!priv || (priv & ~KDAT_MEM_PRIV_ALL))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
	if (priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG)
		access |= IB_ACCESS_LOCAL_WRITE;
	if (priv & DAT_MEM_PRIV_REMOTE_READ_FLAG)
		access |= IB_ACCESS_REMOTE_READ;
	if (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
		access |= IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	if (priv & KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG)
		access |= IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_LOCAL_WRITE;
	ret = kdat_pz_use(ia, pz_handle, &pz);
	if (ret != DAT_SUCCESS)
		return ret;
	mr = ib_reg_user_mr(pz->pd, addr, length, addr, access);
	if (IS_ERR(mr)) {
		/* -ENOMEM also when RLIMIT_MEMLOCK would be exceeded */
		ret = PTR_ERR(mr) == -EFAULT ?
		      KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3) :
		      KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_pz;
	}
	ret = kdat_lmr_new(ia, pz, (void *)(uintptr_t)addr, addr, length, priv,
			   mr, priv & KDAT_MEM_PRIV_REMOTE ? mr->rkey : 0, lmrp);
	if (ret != DAT_SUCCESS) {
		ib_dereg_mr(mr);
		goto err_pz;
	}
	return DAT_SUCCESS;
err_pz:
	kdat_pz_unuse(pz);
	return ret;
}

DAT_RETURN kdat_ib_lmr_kcreate(DAT_IA_HANDLE h, DAT_MEM_TYPE type,
			       DAT_REGION_DESCRIPTION region, DAT_VLEN length,
			       DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS priv,
			       DAT_MEM_OPTIMIZE_FLAGS opt,
			       DAT_LMR_HANDLE *lmr_handle,
			       DAT_LMR_CONTEXT *lctx, DAT_RMR_CONTEXT *rctx,
			       DAT_VLEN *reg_size, DAT_VADDR *reg_addr)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);
	struct kdat_lmr *lmr;
	struct kdat_pz *pz;
	struct ib_mr *amr;
	void *va = region.for_va;
	DAT_RETURN ret;
	u64 dma;

	if (type != DAT_MEM_TYPE_VIRTUAL)
		return KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
	if (!va || !length || length > ia->ibdev->attrs.max_mr_size)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	/* only the linear map is physically contiguous and DMA-mappable */
	if (!virt_addr_valid(va) || !virt_addr_valid(va + length - 1))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (!priv || (priv & ~KDAT_MEM_PRIV_ALL))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
	if ((priv & KDAT_MEM_PRIV_REMOTE) && !kdat_remote_access())
		return KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);

	if (!lmr_handle || !lctx)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
	ret = kdat_pz_use(ia, pz_handle, &pz);
	if (ret != DAT_SUCCESS)
		return ret;
	/* remote atomics: the PZ's atomic DMA MR, if the device has one */
	amr = READ_ONCE(pz->atomic_mr);
	if ((priv & KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG) && !amr) {
		ret = KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
		goto err_pz;
	}
	dma = ib_dma_map_single(ia->ibdev, va, length, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ia->ibdev, dma)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES,
			       DAT_RESOURCE_MEMORY_REGION);
		goto err_pz;
	}
	/*
	 * Peers name this memory by its DMA address and the PZ's global rkey
	 * (pz.c); local triplets keep using the consumer's virtual address.
	 */
	ret = kdat_lmr_new(ia, pz, va, dma, length, priv, NULL,
			   (priv & KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG) ?
			   amr->rkey :
			   (priv & KDAT_MEM_PRIV_REMOTE) ?
			   pz->pd->unsafe_global_rkey : 0, &lmr);
	if (ret != DAT_SUCCESS) {
		ib_dma_unmap_single(ia->ibdev, dma, length, DMA_BIDIRECTIONAL);
		goto err_pz;
	}
	*lmr_handle = lmr;
	*lctx = lmr->context;
	if (rctx)
		*rctx = lmr->rmr_context;
	if (reg_size)
		*reg_size = length;
	if (reg_addr)
		*reg_addr = lmr->rmr_context ? lmr->dma : (DAT_VADDR)(uintptr_t)va;
	kdat_obj_put(&lmr->obj);
	return DAT_SUCCESS;
err_pz:
	kdat_pz_unuse(pz);
	return ret;
}

DAT_RETURN kdat_ib_lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask,
			     DAT_LMR_PARAM *p)
{
	struct kdat_lmr *lmr = container_of((struct kdat_obj *)h,
					    struct kdat_lmr, obj);

	if (mask & ~DAT_LMR_FIELD_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!p)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	memset(p, 0, sizeof(*p));
	p->ia_handle = lmr->obj.ia;
	p->mem_type = DAT_MEM_TYPE_VIRTUAL;
	p->region_desc.for_va = lmr->va;
	p->length = lmr->length;
	p->pz_handle = lmr->pz;
	p->mem_priv = lmr->priv;
	p->lmr_context = lmr->context;
	p->rmr_context = lmr->rmr_context;
	p->registered_size = lmr->length;
	p->registered_address = lmr->rmr_context ? lmr->dma :
				(DAT_VADDR)(uintptr_t)lmr->va;
	return DAT_SUCCESS;
}

/*
 * Unmap and forget the context.  Idempotent: free and device removal may
 * both call it, and the one that comes second waits on hw_lock until the
 * MR is gone (its caller may release the PZ, whose PD the MR holds).
 */
void kdat_lmr_hw_destroy(struct kdat_lmr *lmr)
{
	struct kdat_ia *ia = lmr->obj.ia;
	struct ib_mr *mr;

	mutex_lock(&lmr->hw_lock);
	if (!READ_ONCE(lmr->mapped))
		goto out;
	WRITE_ONCE(lmr->mapped, false);
	kdat_lmr_forget(ia, lmr);
	mr = xchg(&lmr->mr, NULL);
	if (mr)
		ib_dereg_mr(mr);
	else
		ib_dma_unmap_single(ia->ibdev, lmr->dma, lmr->length,
				    DMA_BIDIRECTIONAL);
out:
	mutex_unlock(&lmr->hw_lock);
}

/* The destroy claim is held (object.c): this runs once per LMR. */
DAT_RETURN kdat_ib_lmr_free(DAT_LMR_HANDLE h)
{
	struct kdat_lmr *lmr = container_of((struct kdat_obj *)h,
					    struct kdat_lmr, obj);

	kdat_ia_unlink(&lmr->obj);
	kdat_obj_unpublish(&lmr->obj);
	kdat_lmr_hw_destroy(lmr);
	atomic_dec(&lmr->pz->users);
	return DAT_SUCCESS;
}
