// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * /dev/kdat: the control path of libdat.  This file holds the ioctl
 * handlers, one per DAT call, and the file operations; the per-file
 * object table is uobj.c and the mmapped rings are uring.c.
 *
 * The handlers call the very provider functions kernel consumers reach
 * through the registry: there is one implementation of the SRQ semantics.
 * Each runs inside kdat_srcu (device removal waits for it), holds a
 * shared use of every object it names, and commits the objects it creates
 * only after its results reached user space (uobj.c).
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat_core.h"
#include "uobj.h"

/* ---------------------------------------------------------------------- */
/* ioctls                                                                  */

/* Copy an argument in: sizes may differ, unknown bytes must be zero. */
static int kdat_copy_in(void *k, size_t ksize, void __user *u)
{
	struct kdat_ioc_hdr hdr;
	int ret;

	if (copy_from_user(&hdr, u, sizeof(hdr)))
		return -EFAULT;
	if (hdr.size < sizeof(hdr) || hdr.size > PAGE_SIZE)
		return -EINVAL;
	ret = copy_struct_from_user(k, ksize, u, hdr.size);
	if (ret)
		return ret;
	((struct kdat_ioc_hdr *)k)->size = hdr.size;
	return 0;
}

static int kdat_copy_out(void __user *u, void *k, size_t ksize,
			 DAT_RETURN status)
{
	struct kdat_ioc_hdr *hdr = k;
	size_t n = min_t(size_t, hdr->size, ksize);

	hdr->status = status;
	return copy_to_user(u, k, n) ? -EFAULT : 0;
}

/*
 * The handler of ioctl <name>, its argument a struct kdat_ioc_<arg>
 * (__kdat_ioc_<name>), and the entry the table calls it by
 * (kdat_ioc_<name>): through a pointer of exactly its own type, as kCFI
 * requires of every indirect call.
 */
#define DEFINE_IOC(name, arg)						\
	static DAT_RETURN __kdat_ioc_##name(struct kdat_ucall *c,	\
					    struct kdat_ioc_##arg *a);	\
	static DAT_RETURN kdat_ioc_##name(struct kdat_ucall *c, void *a) \
	{								\
		return __kdat_ioc_##name(c, a);				\
	}								\
	static DAT_RETURN __kdat_ioc_##name(struct kdat_ucall *c,	\
					    struct kdat_ioc_##arg *a)

#define HANDLE_ERR(sub)	KDAT_ERR(DAT_INVALID_HANDLE, (sub))

DEFINE_IOC(version, version)
{
	a->abi_version = KDAT_ABI_VERSION;
	a->min_abi_version = KDAT_ABI_MIN_COMPAT;
	a->features = KDAT_FEATURES_ALL;
	return DAT_SUCCESS;
}

/* IA names are copied under the registry lock, then out without it. */
#define KDAT_LIST_MAX	4096	/* names filled at most; count is exact */

struct kdat_ia_names {
	u32 max, count;
	char (*names)[KDAT_NAME_LEN];
};

static int kdat_list_one(const char *ia_name, void *data)
{
	struct kdat_ia_names *l = data;

	if (l->count < l->max)
		strscpy(l->names[l->count], ia_name, KDAT_NAME_LEN);
	l->count++;
	return 0;
}

DEFINE_IOC(ia_list, ia_list)
{
	struct kdat_ia_names l = { .max = min_t(u32, a->max, KDAT_LIST_MAX) };
	DAT_RETURN ret = DAT_SUCCESS;

	if (l.max) {
		l.names = kvcalloc(l.max, KDAT_NAME_LEN, GFP_KERNEL_ACCOUNT);
		if (!l.names)
			return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES,
					DAT_RESOURCE_MEMORY);
	}
	kdat_registry_for_each(kdat_list_one, &l);
	if (copy_to_user(u64_to_user_ptr(a->names), l.names,
			 (size_t)min(l.count, l.max) * KDAT_NAME_LEN))
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	a->count = l.count;
	kvfree(l.names);
	return ret;
}

DEFINE_IOC(ia_open, ia_open)
{
	struct kdat_evd *aevd;
	struct kdat_ia *ia;
	DAT_RETURN ret;

	a->name[KDAT_NAME_LEN - 1] = '\0';
	if (a->flags & ~KDAT_IA_OPEN_FLAGS_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	ret = kdat_ia_open(a->name, a->async_qlen, c->uf, &kdat_file_uops, 0,
			   &ia);
	if (ret != DAT_SUCCESS)
		return ret;
	/* before any child exists: no connection of the IA has ended yet */
	WRITE_ONCE(ia->flags, a->flags);
	aevd = rcu_dereference_protected(ia->async_evd, true);
	a->ia = kdat_uid(ia);
	a->async_evd = kdat_uid(aevd);
	a->async_ring_offset = (u64)aevd->uring->pgoff << PAGE_SHIFT;
	a->async_ring_size = aevd->uring->size;
	/* visible once the answer reached user space (uobj.c) */
	kdat_ucall_created(c, &ia->obj);
	kdat_ucall_created(c, &aevd->obj);
	kdat_obj_put(&ia->obj);
	return DAT_SUCCESS;
}

DEFINE_IOC(ia_close, ia_close)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->ia, DAT_HANDLE_TYPE_IA);
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ret = kdat_ib_ia_close(o, a->flags);
	kdat_uput(o);
	return ret;
}

DEFINE_IOC(ia_query, ia_query)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->ia, DAT_HANDLE_TYPE_IA);
	struct kdat_ia *ia;
	DAT_IA_ATTR attr;
	struct kdat_uia_attr *u = &a->attr;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ia = container_of(o, struct kdat_ia, obj);
	kdat_ib_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &attr, 0, NULL);
	memset(u, 0, sizeof(*u));
	strscpy(u->adapter_name, attr.adapter_name, sizeof(u->adapter_name));
	strscpy(u->vendor_name, attr.vendor_name, sizeof(u->vendor_name));
	memcpy(u->ia_address, &ia->addr,
	       min(sizeof(u->ia_address), sizeof(ia->addr)));
	u->hw_ver = attr.hardware_version_major;
	if (kdat_srq_ep_pz_may_differ(ia->ibdev))
		u->flags |= KDAT_UIA_SRQ_EP_PZ_DIFF;
	u->flags |= KDAT_UIA_IB_EXT;
	if (ia->ibdev->attrs.atomic_cap != IB_ATOMIC_NONE)
		u->flags |= KDAT_UIA_ATOMICS;
	u->fw_ver = (u64)attr.firmware_version_major << 32 |
		    attr.firmware_version_minor;
	u->max_eps = attr.max_eps;
	u->max_dto_per_ep = attr.max_dto_per_ep;
	u->max_rdma_read_per_ep_in = attr.max_rdma_read_per_ep_in;
	u->max_rdma_read_per_ep_out = attr.max_rdma_read_per_ep_out;
	u->max_evds = attr.max_evds;
	u->max_evd_qlen = attr.max_evd_qlen;
	u->max_iov_segments_per_dto = min_t(int, attr.max_iov_segments_per_dto,
					    KDAT_MAX_IOV);
	u->max_lmrs = attr.max_lmrs;
	u->max_lmr_block_size = attr.max_lmr_block_size;
	u->max_pzs = attr.max_pzs;
	u->max_srqs = attr.max_srqs;
	u->max_ep_per_srq = attr.max_ep_per_srq;
	u->max_recv_per_srq = attr.max_recv_per_srq;
	u->max_message_size = attr.max_message_size;
	u->max_rdma_size = attr.max_rdma_size;
	a->async_evd = kdat_uid(rcu_access_pointer(ia->async_evd));
	kdat_uput(o);
	return DAT_SUCCESS;
}

/* The IA's async EVD goes with the IA, never alone. */
static DAT_RETURN kdat_uobj_destroy(struct kdat_obj *o)
{
	if (o->type == DAT_HANDLE_TYPE_EVD &&
	    o == (struct kdat_obj *)rcu_access_pointer(o->ia->async_evd))
		return KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_ASYNC);
	return kdat_obj_destroy(o);
}

/* dat_*_free and dat_cr_reject: the destroy claim, then the type's free. */
DEFINE_IOC(free, free)
{
	static const u32 subtype[KDAT_NTYPES] = {
		[DAT_HANDLE_TYPE_CR] = DAT_INVALID_HANDLE_CR,
		[DAT_HANDLE_TYPE_EP] = DAT_INVALID_HANDLE_EP,
		[DAT_HANDLE_TYPE_EVD] = DAT_INVALID_HANDLE_EVD_ASYNC,
		[DAT_HANDLE_TYPE_LMR] = DAT_INVALID_HANDLE_LMR,
		[DAT_HANDLE_TYPE_PSP] = DAT_INVALID_HANDLE_PSP,
		[DAT_HANDLE_TYPE_PZ] = DAT_INVALID_HANDLE_PZ,
		[DAT_HANDLE_TYPE_RSP] = DAT_INVALID_HANDLE_RSP,
		[DAT_HANDLE_TYPE_SRQ] = DAT_INVALID_HANDLE_SRQ,
		[KDAT_HANDLE_TYPE_CNO] = DAT_INVALID_HANDLE_CNO,
	};
	u32 type = a->type;
	DAT_RETURN ret;

	if (type >= KDAT_NTYPES)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	type = array_index_nospec(type, KDAT_NTYPES);
	if (!subtype[type])
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	ret = kdat_ufree(c->uf, a->handle, type, kdat_uobj_destroy,
			 HANDLE_ERR(subtype[type]));
	/* a CNO busy with a dat_cno_wait is in use too (as OFED's says) */
	if (type == KDAT_HANDLE_TYPE_CNO &&
	    ret == KDAT_ERR(DAT_INVALID_STATE, 0))
		ret = KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE);
	return ret;
}

/*
 * A create names its IA first: take a use of it, held until the handler
 * returns (an IA close waits for that, not for the copy out), or NULL.
 */
static struct kdat_obj *kdat_ucall_get_ia(struct kdat_ucall *c, u32 id)
{
	struct kdat_obj *ia_o = kdat_uget(c->uf, id, DAT_HANDLE_TYPE_IA);

	if (ia_o)
		kdat_ucall_hold_ia(c, ia_o);
	return ia_o;
}

DEFINE_IOC(pz_create, pz_create)
{
	struct kdat_obj *ia_o = kdat_ucall_get_ia(c, a->ia);
	DAT_PZ_HANDLE pz;
	DAT_RETURN ret;

	if (!ia_o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ret = kdat_ib_pz_create(ia_o, &pz);
	if (ret == DAT_SUCCESS) {
		a->pz = kdat_uid(pz);
		kdat_ucall_created(c, pz);
	}
	return ret;
}

DEFINE_IOC(evd_create, evd_create)
{
	struct kdat_obj *ia_o = kdat_ucall_get_ia(c, a->ia);
	struct kdat_evd *evd;
	DAT_EVD_HANDLE h;
	DAT_RETURN ret;

	if (!ia_o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	/* user EVDs never upcall; the ring is their delivery */
	ret = kdat_ib_evd_kcreate(ia_o, a->qlen, DAT_UPCALL_DISABLE, NULL,
				  a->flags, &h);
	if (ret == DAT_SUCCESS) {
		evd = h;
		a->evd = kdat_uid(evd);
		a->qlen = evd->qlen;	/* DAT_HW_DEFAULT resolved */
		a->ring_offset = (u64)evd->uring->pgoff << PAGE_SHIFT;
		a->ring_size = evd->uring->size;
		kdat_ucall_created(c, &evd->obj);
	}
	return ret;
}

/* Has something happened that a waiter on @evd must return for? */
static bool kdat_uevd_woken(struct kdat_evd *evd, u32 threshold,
			    bool seq, u32 wake_seq)
{
	struct kdat_uring *r = evd->uring;

	return kdat_uevd_count(evd) >= threshold || READ_ONCE(evd->dead) ||
	       READ_ONCE(evd->obj.ia->closing) ||
	       READ_ONCE(r->unwaitable) ||
	       (seq && READ_ONCE(r->wakes) != wake_seq);
}

/*
 * dat_evd_wait's blocking part.  The library calls it only when its ring
 * holds fewer than @threshold events; it returns as soon as the ring
 * does, or the EVD became unwaitable (DAT_INVALID_STATE), or someone woke
 * the waiter through KDAT_EVD_CTL_WAKE (DAT_SUCCESS with fewer events:
 * the library looks again), or the timeout ends (DAT_TIMEOUT_EXPIRED).
 */
DEFINE_IOC(evd_wait, evd_wait)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->evd, DAT_HANDLE_TYPE_EVD);
	bool seq = a->flags & KDAT_WAIT_SEQ;
	struct kdat_evd *evd;
	long t;
	DAT_RETURN ret = DAT_SUCCESS;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EVD_ASYNC);
	evd = container_of(o, struct kdat_evd, obj);
	if (a->threshold <= 0 || a->threshold > evd->qlen) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
		goto out;
	}
	if (a->flags & ~KDAT_WAIT_SEQ) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
		goto out;
	}
	kdat_uevd_collect(evd);
	t = a->timeout_us == U32_MAX ? MAX_SCHEDULE_TIMEOUT :
	    usecs_to_jiffies(a->timeout_us);
	kdat_cno_evd_wait(evd, true);	/* a waited EVD triggers no CNO */
	t = wait_event_interruptible_timeout(evd->uring->wq,
					     kdat_uevd_woken(evd, a->threshold,
							     seq, a->wake_seq),
					     t);
	kdat_cno_evd_wait(evd, false);
	a->count = kdat_uevd_count(evd);
	if (t < 0)
		ret = KDAT_ERR(DAT_INTERRUPTED_CALL, 0);
	else if (a->count >= (u32)a->threshold)
		ret = DAT_SUCCESS;
	else if (READ_ONCE(evd->uring->unwaitable))
		ret = KDAT_ERR(DAT_INVALID_STATE,
			       DAT_INVALID_STATE_EVD_UNWAITABLE);
	else if (!t)
		ret = KDAT_ERR(DAT_TIMEOUT_EXPIRED, 0);
out:
	kdat_uput(o);
	return ret;
}

/*
 * dat_evd_set_unwaitable / _clear_unwaitable, and a plain wake-up.  Each
 * bumps the ring header's `wakes` before it wakes the waiters, so a
 * waiter that read `wakes` before it looked at its events cannot sleep
 * through the change.
 */
DEFINE_IOC(evd_ctl, evd_ctl)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->evd, DAT_HANDLE_TYPE_EVD);
	struct kdat_uring *r;
	struct kdat_ring_hdr *h;
	unsigned long flags;
	struct kdat_evd *evd;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EVD_ASYNC);
	if (a->op < KDAT_EVD_CTL_UNWAITABLE || a->op > KDAT_EVD_CTL_POLL) {
		kdat_uput(o);
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	}
	evd = container_of(o, struct kdat_evd, obj);
	if (a->op == KDAT_EVD_CTL_POLL) {
		/* our use keeps a free out; the call section, device removal */
		kdat_evd_busy_poll(evd);
		kdat_uput(o);
		return DAT_SUCCESS;
	}
	r = evd->uring;
	h = kdat_uring_hdr(r);
	spin_lock_irqsave(&evd->lock, flags);
	if (a->op != KDAT_EVD_CTL_WAKE)
		WRITE_ONCE(r->unwaitable, a->op == KDAT_EVD_CTL_UNWAITABLE);
	r->wakes++;
	/* pairs with the acquire in EventConsumer::wakes() (user/ring.hpp) */
	smp_store_release(&h->wakes, r->wakes);
	spin_unlock_irqrestore(&evd->lock, flags);
	wake_up_all(&r->wq);
	kdat_uput(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(evd_post_se, evd_post_se)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->evd, DAT_HANDLE_TYPE_EVD);
	DAT_EVENT ev = { .event_number = DAT_SOFTWARE_EVENT };
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EVD_ASYNC);
	ev.event_data.software_event_data.pointer =
		(DAT_PVOID)(uintptr_t)a->pointer;
	ret = kdat_ib_evd_post_se(o, &ev);
	kdat_uput(o);
	return ret;
}

DEFINE_IOC(lmr_create, lmr_create)
{
	struct kdat_obj *ia_o = kdat_ucall_get_ia(c, a->ia);
	struct kdat_lmr *lmr;
	DAT_RETURN ret;

	if (!ia_o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ret = kdat_lmr_create_user(container_of(ia_o, struct kdat_ia, obj),
				   kdat_uhandle(c->uf, a->pz), a->addr, a->length,
				   a->priv, &lmr);
	if (ret == DAT_SUCCESS) {
		a->lmr = kdat_uid(lmr);
		a->lmr_context = lmr->context;
		a->rmr_context = lmr->rmr_context;
		a->registered_size = lmr->length;
		a->registered_address = a->addr;
		kdat_ucall_created(c, &lmr->obj);
		kdat_obj_put(&lmr->obj);
	}
	return ret;
}

DEFINE_IOC(srq_create, srq_create)
{
	struct kdat_obj *ia_o = kdat_ucall_get_ia(c, a->ia);
	DAT_SRQ_ATTR sa = { .max_recv_dtos = a->max_recv_dtos,
			    .max_recv_iov = a->max_recv_iov,
			    .low_watermark = a->low_watermark };
	struct kdat_srq *srq;
	DAT_SRQ_HANDLE h;
	DAT_RETURN ret;

	if (!ia_o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ret = kdat_ib_srq_create(ia_o, kdat_uhandle(c->uf, a->pz), &sa, &h);
	if (ret == DAT_SUCCESS) {
		srq = h;
		a->srq = kdat_uid(srq);
		/* the values chosen for DAT_HW_DEFAULT */
		a->max_recv_dtos = srq->max_recv_dtos;
		a->max_recv_iov = srq->max_recv_iov;
		a->low_watermark = srq->low_watermark;
		a->ring_offset = (u64)srq->uring->pgoff << PAGE_SHIFT;
		a->ring_size = srq->uring->size;
		kdat_ucall_created(c, &srq->obj);
	}
	return ret;
}

/*
 * What the user reaped and what it posted count before the SRQ answers.
 * Reaped first, so buffers it re-posted after a dequeue find room; and
 * reaped again after the drain: the user consumes an event (head) before
 * it re-posts the buffer (tail), so every re-post the drain saw had its
 * event consumed before, and counting that only now would count the
 * buffer as outstanding twice.
 */
static void kdat_srq_settle(struct kdat_srq *srq)
{
	kdat_uevd_collect_ia(srq->obj.ia);
	kdat_srq_drain(srq);
	kdat_uevd_collect_ia(srq->obj.ia);
}

static struct kdat_srq *kdat_uget_srq(struct kdat_ufile *uf, u32 id)
{
	struct kdat_obj *o = kdat_uget(uf, id, DAT_HANDLE_TYPE_SRQ);

	return o ? container_of(o, struct kdat_srq, obj) : NULL;
}

DEFINE_IOC(srq_query, srq_query)
{
	struct kdat_srq *srq = kdat_uget_srq(c->uf, a->srq);
	DAT_SRQ_PARAM p;
	DAT_RETURN ret;

	if (!srq)
		return HANDLE_ERR(DAT_INVALID_HANDLE_SRQ);
	kdat_srq_settle(srq);
	ret = kdat_ib_srq_query(srq, a->mask, &p);
	if (ret == DAT_SUCCESS) {
		a->ia = kdat_uid(p.ia_handle);
		a->pz = kdat_uid(p.pz_handle);
		a->state = p.srq_state;
		a->max_recv_dtos = p.max_recv_dtos;
		a->max_recv_iov = p.max_recv_iov;
		a->low_watermark = p.low_watermark;
		a->available_dto_count = p.available_dto_count;
		a->outstanding_dto_count = p.outstanding_dto_count;
	}
	kdat_uput(&srq->obj);
	return ret;
}

/*
 * resize, set_lw and kick: what the user reaped and posted counts first,
 * so a resize sees the real outstanding count.
 */
static DAT_RETURN kdat_srq_op(struct kdat_ucall *c, struct kdat_ioc_srq_op *a,
			      DAT_RETURN (*op)(DAT_SRQ_HANDLE, DAT_COUNT))
{
	struct kdat_srq *srq = kdat_uget_srq(c->uf, a->srq);
	DAT_RETURN ret = DAT_SUCCESS;

	if (!srq)
		return HANDLE_ERR(DAT_INVALID_HANDLE_SRQ);
	kdat_srq_settle(srq);
	if (op)
		ret = op(srq, a->value);
	kdat_uput(&srq->obj);
	return ret;
}

DEFINE_IOC(srq_resize, srq_op)
{
	return kdat_srq_op(c, a, kdat_ib_srq_resize);
}

DEFINE_IOC(srq_set_lw, srq_op)
{
	return kdat_srq_op(c, a, kdat_ib_srq_set_lw);
}

DEFINE_IOC(srq_kick, srq_op)
{
	return kdat_srq_op(c, a, NULL);
}

/*
 * Reserved segment fields must be zero, so a later ABI can use them.  Only
 * the segments the call names count (a larger nseg is refused later).
 */
static bool kdat_useg_pads_zero(const struct kdat_useg *s, u32 n)
{
	u32 i;

	for (i = 0; i < min_t(u32, n, KDAT_MAX_IOV); i++)
		if (s[i].pad)
			return false;
	return true;
}

DEFINE_IOC(srq_post, srq_post)
{
	struct kdat_srq *srq = kdat_uget_srq(c->uf, a->srq);
	DAT_LMR_TRIPLET t[KDAT_MAX_IOV];
	DAT_DTO_COOKIE ck = { .as_64 = a->cookie };
	DAT_RETURN ret;

	if (!srq)
		return HANDLE_ERR(DAT_INVALID_HANDLE_SRQ);
	if (a->nseg > KDAT_MAX_IOV) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	} else {
		kdat_useg_to_triplets(a->seg, a->nseg, t);
		/*
		 * What the ring holds counts first: the post's room check
		 * must see the buffers dat_srq_post_recv already accepted.
		 */
		kdat_srq_settle(srq);
		rcu_read_lock();
		ret = kdat_srq_post_one(srq, a->nseg, t, ck);
		rcu_read_unlock();
	}
	kdat_uput(&srq->obj);
	return ret;
}

static void kdat_uep_attr_in(const struct kdat_uep_attr *u, DAT_EP_ATTR *a)
{
	memset(a, 0, sizeof(*a));
	a->service_type = DAT_SERVICE_TYPE_RC;
	a->max_message_size = u->max_message_size;
	a->max_rdma_size = u->max_rdma_size;
	a->qos = DAT_QOS_BEST_EFFORT;
	a->recv_completion_flags = u->recv_completion_flags;
	a->request_completion_flags = u->request_completion_flags;
	a->max_recv_dtos = u->max_recv_dtos;
	a->max_request_dtos = u->max_request_dtos;
	a->max_recv_iov = u->max_recv_iov;
	a->max_request_iov = u->max_request_iov;
	a->max_rdma_read_in = u->max_rdma_read_in;
	a->max_rdma_read_out = u->max_rdma_read_out;
	a->srq_soft_hw = u->srq_soft_hw;
	a->max_rdma_read_iov = u->max_rdma_read_iov;
	a->max_rdma_write_iov = u->max_rdma_write_iov;
}

static void kdat_uep_attr_out(const DAT_EP_ATTR *a, struct kdat_uep_attr *u)
{
	memset(u, 0, sizeof(*u));
	u->max_message_size = a->max_message_size;
	u->max_rdma_size = a->max_rdma_size;
	u->recv_completion_flags = a->recv_completion_flags;
	u->request_completion_flags = a->request_completion_flags;
	u->max_recv_dtos = a->max_recv_dtos;
	u->max_request_dtos = a->max_request_dtos;
	u->max_recv_iov = a->max_recv_iov;
	u->max_request_iov = a->max_request_iov;
	u->max_rdma_read_in = a->max_rdma_read_in;
	u->max_rdma_read_out = a->max_rdma_read_out;
	u->srq_soft_hw = a->srq_soft_hw;
	u->max_rdma_read_iov = a->max_rdma_read_iov;
	u->max_rdma_write_iov = a->max_rdma_write_iov;
}

DEFINE_IOC(ep_create, ep_create)
{
	struct kdat_obj *ia_o = kdat_ucall_get_ia(c, a->ia);
	DAT_EP_ATTR attr;
	DAT_EP_HANDLE ep;
	DAT_RETURN ret;

	if (!ia_o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	kdat_uep_attr_in(&a->attr, &attr);
	if (a->srq)
		ret = kdat_ib_ep_create_with_srq(ia_o, kdat_uhandle(c->uf, a->pz),
						 kdat_uhandle(c->uf, a->recv_evd),
						 kdat_uhandle(c->uf, a->request_evd),
						 kdat_uhandle(c->uf, a->connect_evd),
						 kdat_uhandle(c->uf, a->srq),
						 a->has_attr ? &attr : NULL,
						 &ep);
	else
		ret = kdat_ib_ep_create(ia_o, kdat_uhandle(c->uf, a->pz),
					kdat_uhandle(c->uf, a->recv_evd),
					kdat_uhandle(c->uf, a->request_evd),
					kdat_uhandle(c->uf, a->connect_evd),
					a->has_attr ? &attr : NULL, &ep);
	if (ret == DAT_SUCCESS) {
		struct kdat_ep *e = container_of((struct kdat_obj *)ep,
						 struct kdat_ep, obj);

		a->ep = kdat_uid(ep);
		/*
		 * A library that knows the send ring gets one; without memory
		 * for it (or within the file's cap) it posts by ioctl.
		 */
		if (a->hdr.size >= offsetofend(struct kdat_ioc_ep_create,
					       ring_size) &&
		    !kdat_uep_init(e)) {
			a->ring_offset = (u64)e->sring->pgoff << PAGE_SHIFT;
			a->ring_size = e->sring->size;
		}
		kdat_ucall_created(c, ep);
	}
	return ret;
}

static struct kdat_obj *kdat_uget_ep(struct kdat_ufile *uf, u32 id)
{
	return kdat_uget(uf, id, DAT_HANDLE_TYPE_EP);
}

DEFINE_IOC(ep_query, ep_query)
{
	struct kdat_obj *o = kdat_uget_ep(c->uf, a->ep);
	struct kdat_ep *ep;
	DAT_EP_PARAM p;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	ep = container_of(o, struct kdat_ep, obj);
	kdat_ib_ep_query(ep, DAT_EP_FIELD_ALL, &p);
	a->state = p.ep_state;
	a->ia = kdat_uid(p.ia_handle);
	a->pz = kdat_uid(p.pz_handle);
	a->recv_evd = kdat_uid(p.recv_evd_handle);
	a->request_evd = kdat_uid(p.request_evd_handle);
	a->connect_evd = kdat_uid(p.connect_evd_handle);
	a->srq = kdat_uid(p.srq_handle);
	a->local_port = p.local_port_qual;
	a->remote_port = p.remote_port_qual;
	memcpy(a->remote_addr, &ep->remote,
	       min(sizeof(a->remote_addr), sizeof(ep->remote)));
	kdat_uep_attr_out(&p.ep_attr, &a->attr);
	kdat_uput(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(ep_connect, ep_connect)
{
	struct kdat_obj *o = kdat_uget_ep(c->uf, a->ep);
	struct sockaddr_storage ss = {};
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	if (a->pdata_size > KDAT_PDATA_LEN) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	} else {
		memcpy(&ss, a->addr, min(sizeof(ss), sizeof(a->addr)));
		ret = kdat_ib_ep_connect(o, (DAT_IA_ADDRESS_PTR)&ss,
					 a->conn_qual, a->timeout_us,
					 a->pdata_size, a->pdata, a->qos,
					 a->flags);
	}
	kdat_uput(o);
	return ret;
}

/*
 * dat_ep_modify: the attributes @a->mask names, through the provider's
 * own modify (which checks the mask, the values and the EP's state).
 */
DEFINE_IOC(ep_modify, ep_modify)
{
	struct kdat_obj *o = kdat_uget_ep(c->uf, a->ep);
	DAT_EP_PARAM p;
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	memset(&p, 0, sizeof(p));
	kdat_uep_attr_in(&a->attr, &p.ep_attr);
	ret = kdat_ib_ep_modify(o, a->mask, &p);
	kdat_uput(o);
	return ret;
}

DEFINE_IOC(ep_disconnect, ep_op)
{
	struct kdat_obj *o = kdat_uget_ep(c->uf, a->ep);
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	ret = kdat_ib_ep_disconnect(o, a->value);
	kdat_uput(o);
	return ret;
}

DEFINE_IOC(ep_reset, ep_op)
{
	struct kdat_obj *o = kdat_uget_ep(c->uf, a->ep);
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	ret = a->value ? KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2) :
	      kdat_ib_ep_reset(o);
	kdat_uput(o);
	return ret;
}

DEFINE_IOC(ep_post, ep_post)
{
	struct kdat_obj *o = kdat_uget_ep(c->uf, a->ep);
	DAT_LMR_TRIPLET t[KDAT_MAX_IOV];
	DAT_DTO_COOKIE ck = { .as_64 = a->cookie };
	DAT_RMR_TRIPLET r = { .rmr_context = a->rmr_context,
			      .target_address = a->remote_addr,
			      .segment_length = a->remote_length };
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	if (a->nseg > KDAT_MAX_IOV) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		goto out;
	}

	kdat_useg_to_triplets(a->seg, a->nseg, t);
	/*
	 * A software device (rxe) sends from a kernel QP in a tasklet.
	 * Raised here in process context it would wake ksoftirqd, and the
	 * request, its ACK and its completion would wait for that thread to
	 * be scheduled.  With bottom halves held off over the post, the
	 * local_bh_enable() runs them on this CPU now, as a user QP's post
	 * does in its caller.  Nothing in the post path sleeps.  (The send
	 * ring's drain does the same.)
	 */
	local_bh_disable();
	ret = kdat_ep_post_user(container_of(o, struct kdat_ep, obj), a->op,
				a->nseg, t, ck, &r, a->compare_add, a->swap,
				a->immed_data, a->flags);
	local_bh_enable();
out:
	kdat_uput(o);
	return ret;
}

/* KDAT_IOC_EP_KICK: drain the EP's send ring (KDAT_FEATURE_SEND_RING). */
DEFINE_IOC(ep_kick, ep_op)
{
	struct kdat_obj *o = kdat_uget_ep(c->uf, a->ep);
	struct kdat_ep *ep;
	DAT_RETURN ret = DAT_SUCCESS;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	ep = container_of(o, struct kdat_ep, obj);
	if (a->value & ~KDAT_EP_KICK_FLAGS_ALL)
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	else if (!ep->sring)
		ret = KDAT_ERR(DAT_INVALID_STATE, 0);
	else
		kdat_ep_ring_kick(ep, a->value & KDAT_EP_KICK_DEFER);
	kdat_uput(o);
	return ret;
}

DEFINE_IOC(ep_status, ep_status)
{
	struct kdat_obj *o = kdat_uget_ep(c->uf, a->ep);
	DAT_EP_STATE state;
	DAT_BOOLEAN ri, qi;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	kdat_ib_ep_get_status(o, &state, &ri, &qi);
	a->state = state;
	a->recv_idle = ri;
	a->request_idle = qi;
	kdat_uput(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(psp_create, psp_create)
{
	struct kdat_obj *ia_o = kdat_ucall_get_ia(c, a->ia);
	DAT_PSP_HANDLE psp;
	DAT_RETURN ret;

	if (!ia_o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ret = kdat_ib_psp_create(ia_o, a->conn_qual, kdat_uhandle(c->uf, a->evd),
				 a->flags, &psp);
	if (ret == DAT_SUCCESS) {
		a->psp = kdat_uid(psp);
		kdat_ucall_created(c, psp);
	}
	return ret;
}

DEFINE_IOC(cr_query, cr_query)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->cr, DAT_HANDLE_TYPE_CR);
	DAT_CR_PARAM p;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_CR);
	kdat_ib_cr_query(o, DAT_CR_FIELD_ALL, &p);
	a->remote_port = p.remote_port_qual;
	memcpy(a->remote_addr, p.remote_ia_address_ptr,
	       min_t(size_t, sizeof(a->remote_addr),
		     sizeof(struct sockaddr_storage)));
	a->pdata_size = min_t(u32, p.private_data_size, KDAT_PDATA_LEN);
	memcpy(a->pdata, p.private_data, a->pdata_size);
	a->local_ep = kdat_uid(p.local_ep_handle);
	kdat_uput(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(cr_accept, cr_accept)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->cr, DAT_HANDLE_TYPE_CR);
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_CR);
	if (a->pdata_size > KDAT_PDATA_LEN)
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	else
		ret = kdat_ib_cr_accept(o, kdat_uhandle(c->uf, a->ep),
					a->pdata_size, a->pdata);
	kdat_uput(o);
	return ret;
}

DEFINE_IOC(rsp_create, rsp_create)
{
	struct kdat_obj *ia_o = kdat_ucall_get_ia(c, a->ia);
	DAT_RSP_HANDLE rsp;
	DAT_RETURN ret;

	if (!ia_o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ret = kdat_ib_rsp_create(ia_o, a->conn_qual, kdat_uhandle(c->uf, a->ep),
				 kdat_uhandle(c->uf, a->evd), &rsp);
	if (ret == DAT_SUCCESS) {
		a->rsp = kdat_uid(rsp);
		kdat_ucall_created(c, rsp);
	}
	return ret;
}

DEFINE_IOC(rsp_query, rsp_query)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->rsp, DAT_HANDLE_TYPE_RSP);
	DAT_RSP_PARAM p;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_RSP);
	kdat_ib_rsp_query(o, DAT_RSP_FIELD_ALL, &p);
	a->ia = kdat_uid(p.ia_handle);
	a->conn_qual = p.conn_qual;
	a->evd = kdat_uid(p.evd_handle);
	a->ep = kdat_uid(p.ep_handle);
	kdat_uput(o);
	return DAT_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Consumer Notification Objects (cno.c)                                   */

DEFINE_IOC(cno_create, cno_create)
{
	struct kdat_obj *ia_o = kdat_ucall_get_ia(c, a->ia);
	struct kdat_cno *cno;
	DAT_RETURN ret;

	if (!ia_o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ret = kdat_cno_create(container_of(ia_o, struct kdat_ia, obj), &cno);
	if (ret == DAT_SUCCESS) {
		a->cno = kdat_uid(cno);
		kdat_ucall_created(c, &cno->obj);
	}
	return ret;
}

DEFINE_IOC(cno_wait, cno_wait)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->cno, KDAT_HANDLE_TYPE_CNO);
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_CNO);
	ret = kdat_cno_wait(container_of(o, struct kdat_cno, obj),
			    a->timeout_us, &a->evd);
	kdat_uput(o);
	return ret;
}

DEFINE_IOC(evd_notify, evd_notify)
{
	struct kdat_obj *o = kdat_uget(c->uf, a->evd, DAT_HANDLE_TYPE_EVD);
	struct kdat_obj *co = NULL;
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EVD_ASYNC);
	if (a->flags & ~KDAT_EVD_NOTIFY_FLAGS_ALL) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
		goto out;
	}
	if (a->cno) {
		co = kdat_uget(c->uf, a->cno, KDAT_HANDLE_TYPE_CNO);
		if (!co) {
			ret = HANDLE_ERR(DAT_INVALID_HANDLE_CNO);
			goto out;
		}
	}
	ret = kdat_evd_set_cno(container_of(o, struct kdat_evd, obj),
			       co ? container_of(co, struct kdat_cno, obj) :
				    NULL,
			       a->flags & KDAT_EVD_NOTIFY_ENABLED);
	if (co)
		kdat_uput(co);
out:
	kdat_uput(o);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Dispatch                                                                */

/*
 * Reserved fields must be zero, so a later ABI can give them a meaning.
 * Fields that are only written by the kernel are not checked.
 */
static bool kdat_ioc_reserved_zero(unsigned int nr, const void *k)
{
	switch (nr) {
	case _IOC_NR(KDAT_IOC_VERSION): {
		const struct kdat_ioc_version *a = k;

		return !a->pad && !a->reserved;
	}
	case _IOC_NR(KDAT_IOC_IA_OPEN): {
		const struct kdat_ioc_ia_open *a = k;

		return !a->reserved;
	}
	case _IOC_NR(KDAT_IOC_EP_CREATE): {
		const struct kdat_ioc_ep_create *a = k;

		return !a->attr.pad;
	}
	case _IOC_NR(KDAT_IOC_EP_CONNECT): {
		const struct kdat_ioc_ep_connect *a = k;

		return !a->pad && !memchr_inv(a->pad2, 0, sizeof(a->pad2));
	}
	case _IOC_NR(KDAT_IOC_EP_POST): {
		const struct kdat_ioc_ep_post *a = k;

		return !a->pad && !a->reserved &&
		       kdat_useg_pads_zero(a->seg, a->nseg);
	}
	case _IOC_NR(KDAT_IOC_SRQ_POST): {
		const struct kdat_ioc_srq_post *a = k;

		return kdat_useg_pads_zero(a->seg, a->nseg);
	}
	case _IOC_NR(KDAT_IOC_EVD_POST_SE): {
		const struct kdat_ioc_evd_post_se *a = k;

		return !a->pad;
	}
	case _IOC_NR(KDAT_IOC_EP_MODIFY): {
		const struct kdat_ioc_ep_modify *a = k;

		return !a->pad && !a->attr.pad;
	}
	case _IOC_NR(KDAT_IOC_CNO_WAIT): {
		const struct kdat_ioc_cno_wait *a = k;

		return !a->pad;
	}
	case _IOC_NR(KDAT_IOC_EVD_NOTIFY): {
		const struct kdat_ioc_evd_notify *a = k;

		return !a->pad;
	}
	case _IOC_NR(KDAT_IOC_CR_QUERY): {
		const struct kdat_ioc_cr_query *a = k;

		return !memchr_inv(a->pad, 0, sizeof(a->pad)) && !a->reserved;
	}
	default:
		return true;
	}
}

/*
 * One entry per ioctl number: the argument's size in this ABI and its
 * handler.  The command is matched by number and direction only: the size
 * bits of the command word say what the caller was built with, and
 * hdr.size carries the same information, so a library built with a
 * larger or smaller struct still reaches the handler (copy_struct_from_user
 * rules: missing fields read as zero, unknown trailing bytes must be zero).
 */
#define IOC(nr, name, type)						\
	[_IOC_NR(nr)] = { sizeof(type), kdat_ioc_##name }

/*
 * A call that may sleep for as long as user space says (evd_wait; ia_list,
 * which writes the names to user memory a FUSE or userfaultfd mapping can
 * stall) touches no hardware and runs outside kdat_srcu, so device removal
 * never waits for it.
 */
#define IOC_SLEEPS(nr, name, type)					\
	[_IOC_NR(nr)] = { sizeof(type), kdat_ioc_##name, true }

static const struct {
	size_t size;
	DAT_RETURN (*fn)(struct kdat_ucall *c, void *arg);
	bool sleeps;
} kdat_iocs[] = {
	IOC(KDAT_IOC_VERSION, version, struct kdat_ioc_version),
	IOC_SLEEPS(KDAT_IOC_IA_LIST, ia_list, struct kdat_ioc_ia_list),
	IOC(KDAT_IOC_IA_OPEN, ia_open, struct kdat_ioc_ia_open),
	IOC(KDAT_IOC_IA_CLOSE, ia_close, struct kdat_ioc_ia_close),
	IOC(KDAT_IOC_IA_QUERY, ia_query, struct kdat_ioc_ia_query),
	IOC(KDAT_IOC_FREE, free, struct kdat_ioc_free),
	IOC(KDAT_IOC_PZ_CREATE, pz_create, struct kdat_ioc_pz_create),
	IOC(KDAT_IOC_EVD_CREATE, evd_create, struct kdat_ioc_evd_create),
	IOC_SLEEPS(KDAT_IOC_EVD_WAIT, evd_wait, struct kdat_ioc_evd_wait),
	IOC(KDAT_IOC_EVD_POST_SE, evd_post_se, struct kdat_ioc_evd_post_se),
	IOC(KDAT_IOC_LMR_CREATE, lmr_create, struct kdat_ioc_lmr_create),
	IOC(KDAT_IOC_SRQ_CREATE, srq_create, struct kdat_ioc_srq_create),
	IOC(KDAT_IOC_SRQ_QUERY, srq_query, struct kdat_ioc_srq_query),
	IOC(KDAT_IOC_SRQ_RESIZE, srq_resize, struct kdat_ioc_srq_op),
	IOC(KDAT_IOC_SRQ_SET_LW, srq_set_lw, struct kdat_ioc_srq_op),
	IOC(KDAT_IOC_SRQ_KICK, srq_kick, struct kdat_ioc_srq_op),
	IOC(KDAT_IOC_SRQ_POST, srq_post, struct kdat_ioc_srq_post),
	IOC(KDAT_IOC_EP_CREATE, ep_create, struct kdat_ioc_ep_create),
	IOC(KDAT_IOC_EP_QUERY, ep_query, struct kdat_ioc_ep_query),
	IOC(KDAT_IOC_EP_CONNECT, ep_connect, struct kdat_ioc_ep_connect),
	IOC(KDAT_IOC_EP_DISCONNECT, ep_disconnect, struct kdat_ioc_ep_op),
	IOC(KDAT_IOC_EP_RESET, ep_reset, struct kdat_ioc_ep_op),
	IOC(KDAT_IOC_EP_POST, ep_post, struct kdat_ioc_ep_post),
	IOC(KDAT_IOC_EP_STATUS, ep_status, struct kdat_ioc_ep_status),
	IOC(KDAT_IOC_PSP_CREATE, psp_create, struct kdat_ioc_psp_create),
	IOC(KDAT_IOC_CR_QUERY, cr_query, struct kdat_ioc_cr_query),
	IOC(KDAT_IOC_CR_ACCEPT, cr_accept, struct kdat_ioc_cr_accept),
	IOC(KDAT_IOC_EVD_CTL, evd_ctl, struct kdat_ioc_evd_ctl),
	IOC(KDAT_IOC_EP_MODIFY, ep_modify, struct kdat_ioc_ep_modify),
	IOC(KDAT_IOC_CNO_CREATE, cno_create, struct kdat_ioc_cno_create),
	IOC_SLEEPS(KDAT_IOC_CNO_WAIT, cno_wait, struct kdat_ioc_cno_wait),
	IOC(KDAT_IOC_EVD_NOTIFY, evd_notify, struct kdat_ioc_evd_notify),
	IOC(KDAT_IOC_RSP_CREATE, rsp_create, struct kdat_ioc_rsp_create),
	IOC(KDAT_IOC_RSP_QUERY, rsp_query, struct kdat_ioc_rsp_query),
	IOC(KDAT_IOC_EP_KICK, ep_kick, struct kdat_ioc_ep_op),
};

/* Large enough for every argument struct above. */
union kdat_ioc_any {
	struct kdat_ioc_ep_create ep_create;
	struct kdat_ioc_evd_post_se evd_post_se;
	struct kdat_ioc_ep_post ep_post;
	struct kdat_ioc_ep_connect ep_connect;
	struct kdat_ioc_srq_post srq_post;
	struct kdat_ioc_ia_query ia_query;
	struct kdat_ioc_cr_query cr_query;
	struct kdat_ioc_ep_query ep_query;
	struct kdat_ioc_cr_accept cr_accept;
	struct kdat_ioc_ep_modify ep_modify;
	struct kdat_ioc_ia_open ia_open;
};

/*
 * The argument is held on the stack (464 bytes at most, KDAT_IOC_STACK):
 * no allocation per call on the data path's kicks, polls and posts.  The
 * stack is the calling thread's own: a call that user space stalls in the
 * copy out holds no memory for it beyond the objects it created, which
 * are charged when made.
 */
#define KDAT_IOC_STACK	512

KDAT_DATA_PATH(kdat_ioctl, 2048)
static long kdat_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct kdat_ucall c = { .uf = f->private_data };
	void __user *u = (void __user *)arg;
	unsigned int nr = _IOC_NR(cmd);
	union kdat_ioc_any kbuf;
	void *k = &kbuf;
	DAT_RETURN st;
	size_t ks;
	int ret, idx;

	BUILD_BUG_ON(sizeof(kbuf) > KDAT_IOC_STACK);

	if (_IOC_TYPE(cmd) != KDAT_IOC_MAGIC ||
	    _IOC_DIR(cmd) != (_IOC_READ | _IOC_WRITE) ||
	    nr >= ARRAY_SIZE(kdat_iocs))
		return -ENOTTY;
	nr = array_index_nospec(nr, ARRAY_SIZE(kdat_iocs));
	if (!kdat_iocs[nr].fn)
		return -ENOTTY;
	ks = kdat_iocs[nr].size;
	/* every argument struct must fit the union (a new ioctl's too) */
	if (unlikely(ks > sizeof(kbuf)))
		return -EINVAL;
	ret = kdat_copy_in(k, ks, u);
	if (ret)
		return ret;
	if (!kdat_ioc_reserved_zero(nr, k))
		return -EINVAL;
	if (!kdat_ufile_mine(c.uf)) {
		/* a forked child, or a process the file was passed to */
		st = KDAT_ERR(DAT_INVALID_HANDLE, 0);
		return kdat_copy_out(u, k, ks, st);
	}
	if (kdat_iocs[nr].sleeps) {
		st = kdat_iocs[nr].fn(&c, k);
		kdat_ucall_put_ia(&c);
	} else {
		idx = kdat_call_begin();
		st = kdat_iocs[nr].fn(&c, k);
		/*
		 * Out of the section device removal waits for, and holding no
		 * use an IA close (inside it) waits for, before touching user
		 * memory again, which user space can make block for ever (a
		 * FUSE or userfaultfd mapping).  What follows needs no live
		 * hardware or IA: a commit only publishes an ID; an abort's
		 * free copes with a dead or closed IA.
		 */
		kdat_ucall_put_ia(&c);
		kdat_call_end(idx);
	}
	ret = kdat_copy_out(u, k, ks, st);
	/* what the call created becomes visible, or goes again */
	kdat_ucall_finish(&c, !ret);
	return ret;
}

static int kdat_open(struct inode *inode, struct file *f)
{
	struct kdat_ufile *uf;

	/* the file belongs to the opener's address space (its rings) */
	if (!current->mm)
		return -EINVAL;
	uf = kdat_ufile_new();
	if (!uf)
		return -ENOMEM;
	f->private_data = uf;
	return nonseekable_open(inode, f);
}

static int kdat_release(struct inode *inode, struct file *f)
{
	kdat_ufile_close(f->private_data);
	return 0;
}

static int kdat_mmap(struct file *f, struct vm_area_struct *vma)
{
	return kdat_uring_mmap(f->private_data, vma);
}

static __poll_t kdat_poll(struct file *f, poll_table *wait)
{
	struct kdat_ufile *uf = f->private_data;

	poll_wait(f, &uf->poll_wq, wait);
	return kdat_ufile_poll(uf);
}

static const struct file_operations kdat_fops = {
	.owner = THIS_MODULE,
	.open = kdat_open,
	.release = kdat_release,
	.unlocked_ioctl = kdat_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = kdat_mmap,
	.poll = kdat_poll,
	.llseek = no_llseek,
};

static struct miscdevice kdat_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = KDAT_DEVICE_NAME,
	.fops = &kdat_fops,
	.mode = 0600,	/* udev/90-kdat.rules opens it to group rdma */
};

int kdat_chardev_init(void)
{
	return misc_register(&kdat_misc);
}

void kdat_chardev_exit(void)
{
	misc_deregister(&kdat_misc);
}
