// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * /dev/kdat: the control path of libdat.  Each open file owns the IAs it
 * opens and every object under them; objects are named by per-file IDs
 * (an xarray), never by kernel pointers.  Closing the file - also when
 * the process is killed - closes its IAs abruptly, which frees everything.
 *
 * The ioctls call the very provider functions kernel consumers reach
 * through the registry: there is one implementation of the SRQ semantics.
 * What differs for user space is where events go and where SRQ receives
 * come from: mmapped rings (struct kdat_ring_hdr in the uapi header).
 *
 *   event ring (one per EVD): the provider writes DAT events, translated
 *     to IDs; the user reads them without a syscall and publishes its
 *     head.  An event counts as reaped (an SRQ buffer stops being
 *     outstanding) when the kernel sees the user's head pass it.
 *   SRQ post ring: the user writes receive descriptors and publishes its
 *     tail; the kernel drains them into the SRQ (srq.c) on completions, on
 *     a kick, and before a query.
 *
 * Nothing in shared memory is trusted: the kernel keeps its own copy of
 * every index, clamps the user's, and copies each entry once before it
 * validates it.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/version.h>
#include <linux/sched/signal.h>

#include "kdat_core.h"
#include <uapi/kdat_abi.h>

struct kdat_ufile {
	struct kref ref;		/* the file + one per ring */
	struct mutex lock;		/* rings, next_pgoff */
	struct xarray objs;		/* ID -> kdat_obj */
	u32 next_id;
	struct xarray rings;		/* mmap page offset -> kdat_uring */
	unsigned long next_pgoff;
	wait_queue_head_t poll_wq;
};

struct kdat_uring {
	struct kdat_ufile *uf;
	void *mem;			/* vmalloc_user, mmapped */
	size_t size;
	unsigned long pgoff;
	u32 entries, entry_size, entry_offset;
	u32 khead, ktail;		/* the kernel's own indices */
	u32 reaped;			/* event ring: reaped up to here */
	struct kdat_srq **shadow;	/* event ring: SRQ of each entry */
	wait_queue_head_t wq;
	bool unwaitable;		/* event ring: dat_evd_set_unwaitable */
	u32 wakes;			/* event ring: KDAT_IOC_EVD_CTL calls */
};

static void kdat_ufile_release(struct kref *ref)
{
	struct kdat_ufile *uf = container_of(ref, struct kdat_ufile, ref);

	xa_destroy(&uf->objs);
	xa_destroy(&uf->rings);
	kfree(uf);
}

/* ---------------------------------------------------------------------- */
/* IDs                                                                     */

int kdat_ufile_add(struct kdat_ufile *uf, struct kdat_obj *obj)
{
	u32 id;
	int ret;

	/* cyclic: a freed ID is not handed out again soon */
	ret = xa_alloc_cyclic(&uf->objs, &id, obj, xa_limit_31b, &uf->next_id,
			      GFP_KERNEL);
	if (ret < 0)
		return ret;
	obj->uid = id;
	return 0;
}

void kdat_ufile_remove(struct kdat_ufile *uf, struct kdat_obj *obj)
{
	xa_erase(&uf->objs, obj->uid);
}

/* Look an ID up and pin the object; NULL if absent or of another type. */
static struct kdat_obj *kdat_uget(struct kdat_ufile *uf, u32 id,
				  DAT_HANDLE_TYPE type)
{
	struct kdat_obj *obj;

	if (!id)
		return NULL;
	rcu_read_lock();
	obj = xa_load(&uf->objs, id);
	if (obj && (obj->type != type || !kref_get_unless_zero(&obj->ref)))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

static u32 kdat_uid(DAT_HANDLE h)
{
	return h ? ((struct kdat_obj *)h)->uid : 0;
}

/* ---------------------------------------------------------------------- */
/* Rings                                                                   */

struct kdat_ring_hdr *kdat_uring_hdr(struct kdat_uring *r)
{
	return r->mem;
}

u32 kdat_uring_mask(struct kdat_uring *r)
{
	return r->entries - 1;
}

void *kdat_uring_entry(struct kdat_uring *r, u32 idx)
{
	return r->mem + r->entry_offset + (idx & (r->entries - 1)) *
	       r->entry_size;
}

static struct kdat_uring *kdat_uring_alloc(struct kdat_ufile *uf,
					   u32 min_entries, u32 entry_size,
					   bool events)
{
	struct kdat_ring_hdr *h;
	struct kdat_uring *r;
	u32 entries = roundup_pow_of_two(max_t(u32, min_entries, 2));
	int ret;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return NULL;
	r->entries = entries;
	r->entry_size = entry_size;
	r->entry_offset = ALIGN(sizeof(*h), 64);
	r->size = PAGE_ALIGN(r->entry_offset + (size_t)entries * entry_size);
	init_waitqueue_head(&r->wq);
	r->mem = vmalloc_user(r->size);
	if (!r->mem)
		goto err;
	if (events) {
		r->shadow = kvcalloc(entries, sizeof(*r->shadow), GFP_KERNEL);
		if (!r->shadow)
			goto err;
	}
	h = r->mem;
	h->entries = entries;
	h->entry_size = entry_size;
	h->entry_offset = r->entry_offset;

	mutex_lock(&uf->lock);
	r->pgoff = uf->next_pgoff;
	ret = xa_insert(&uf->rings, r->pgoff, r, GFP_KERNEL);
	if (!ret)
		uf->next_pgoff += r->size >> PAGE_SHIFT;
	mutex_unlock(&uf->lock);
	if (ret)
		goto err;
	kref_get(&uf->ref);
	r->uf = uf;
	return r;
err:
	kvfree(r->shadow);
	vfree(r->mem);
	kfree(r);
	return NULL;
}

/*
 * The pages stay alive while a process still maps them (the mapping holds
 * page references), so the ring can go with its object.
 */
void kdat_uring_free(struct kdat_uring *r)
{
	struct kdat_ufile *uf;

	if (!r)
		return;
	uf = r->uf;
	mutex_lock(&uf->lock);
	xa_erase(&uf->rings, r->pgoff);
	mutex_unlock(&uf->lock);
	kref_put(&uf->ref, kdat_ufile_release);
	kvfree(r->shadow);
	vfree(r->mem);
	kfree(r);
}

struct kdat_uring *kdat_uring_alloc_events(struct kdat_ufile *uf, u32 qlen)
{
	return kdat_uring_alloc(uf, qlen, sizeof(struct kdat_uevent), true);
}

/*
 * The post ring of an SRQ of @depth receives of up to @max_iov segments.
 * An entry holds @max_iov segments rounded up to a cache line (64 bytes
 * hold two): a one-segment post writes one line, as in a hardware WQE,
 * instead of the 400 bytes of an entry with room for KDAT_MAX_IOV.
 */
struct kdat_uring *kdat_uring_alloc_srq(struct kdat_ufile *uf, u32 depth,
					u32 max_iov)
{
	size_t sz = offsetof(struct kdat_srq_wqe, seg) +
		    min_t(u32, max_iov, KDAT_MAX_IOV) *
		    sizeof(struct kdat_useg);

	sz = min(ALIGN(sz, 64), sizeof(struct kdat_srq_wqe));
	/*
	 * No NEED_KICK yet: a new SRQ has no buffer, but no EP either, so
	 * nothing can consume one; the flag is raised once an EP joins a
	 * starved SRQ (kdat_srq_drain).
	 */
	return kdat_uring_alloc(uf, depth, sz, false);
}

/* Segments one entry of post ring @r has room for. */
u32 kdat_uring_max_seg(struct kdat_uring *r)
{
	return (r->entry_size - offsetof(struct kdat_srq_wqe, seg)) /
	       sizeof(struct kdat_useg);
}

/* The user's head, clamped between what we reaped and what we wrote. */
static u32 kdat_uevd_user_head(struct kdat_uring *r)
{
	u32 head = READ_ONCE(kdat_uring_hdr(r)->head);

	if (head - r->reaped > r->ktail - r->reaped)
		head = r->reaped;	/* garbage: nothing consumed */
	return head;
}

/*
 * Reap what the user consumed since last time.  The SRQ accounting is done
 * under evd->lock with the index it follows, so whoever returns from here
 * - an ioctl about to post into the SRQ, while a completion collects on
 * another CPU - finds every consumed event counted (lock order: evd->lock,
 * then srq->lock).  A last SRQ reference dropped here is released from a
 * work item (kdat_obj_put defers when it may not sleep).
 */
void kdat_uevd_collect(struct kdat_evd *evd)
{
	struct kdat_uring *r = evd->uring;
	struct kdat_event e;
	unsigned long flags;

	spin_lock_irqsave(&evd->lock, flags);
	while (r->reaped != kdat_uevd_user_head(r)) {
		u32 slot = r->reaped & (r->entries - 1);

		e.srq = r->shadow[slot];
		r->shadow[slot] = NULL;
		r->reaped++;
		kdat_event_reaped(&e);
	}
	spin_unlock_irqrestore(&evd->lock, flags);
}

static void kdat_uevent_fill(struct kdat_uevent *u, const DAT_EVENT *ev)
{
	const DAT_EVENT_DATA *d = &ev->event_data;
	u32 len;

	memset(u, 0, sizeof(*u));
	u->event_number = ev->event_number;
	u->evd = kdat_uid(ev->evd_handle);
	switch (ev->event_number) {
	case DAT_DTO_COMPLETION_EVENT:
		u->handle = kdat_uid(d->dto_completion_event_data.ep_handle);
		u->status = d->dto_completion_event_data.status;
		u->cookie = d->dto_completion_event_data.user_cookie.as_64;
		u->length = d->dto_completion_event_data.transfered_length;
		break;
	case DAT_CONNECTION_REQUEST_EVENT:
		u->cr = kdat_uid(d->cr_arrival_event_data.cr_handle);
		u->sp = kdat_uid(d->cr_arrival_event_data.sp_handle.psp_handle);
		u->conn_qual = d->cr_arrival_event_data.conn_qual;
		break;
	case DAT_SOFTWARE_EVENT:
		u->pointer = (uintptr_t)d->software_event_data.pointer;
		break;
	default:
		if (ev->event_number >= DAT_CONNECTION_EVENT_ESTABLISHED &&
		    ev->event_number <= DAT_CONNECTION_EVENT_UNREACHABLE) {
			u->handle = kdat_uid(d->connect_event_data.ep_handle);
			len = min_t(u32, d->connect_event_data.private_data_size,
				    KDAT_PDATA_LEN);
			if (d->connect_event_data.private_data && len) {
				memcpy(u->pdata, d->connect_event_data.private_data,
				       len);
				u->pdata_size = len;
			}
		} else {
			u->handle = kdat_uid(d->asynch_error_event_data.dat_handle);
			u->reason = d->asynch_error_event_data.reason;
		}
		break;
	}
}

/* Write one translated event to the user's ring (or count it lost). */
static void kdat_uevd_write(struct kdat_evd *evd, const struct kdat_uevent *u,
			    struct kdat_srq *srq)
{
	struct kdat_uring *r = evd->uring;
	struct kdat_ring_hdr *h = kdat_uring_hdr(r);
	unsigned long flags;
	bool lost;

	spin_lock_irqsave(&evd->lock, flags);
	lost = evd->dead || r->ktail - kdat_uevd_user_head(r) >= r->entries;
	if (lost) {
		h->dropped++;
	} else {
		memcpy(kdat_uring_entry(r, r->ktail), u, sizeof(*u));
		r->shadow[r->ktail & (r->entries - 1)] = srq;
		r->ktail++;
		smp_store_release(&h->tail, r->ktail);
	}
	spin_unlock_irqrestore(&evd->lock, flags);

	if (lost) {
		struct kdat_event e = { .srq = srq };

		kdat_event_reaped(&e);
		return;
	}
	wake_up(&r->wq);
	wake_up(&r->uf->poll_wq);
}

void kdat_uevd_post(struct kdat_evd *evd, const DAT_EVENT *ev,
		    struct kdat_srq *srq)
{
	struct kdat_uevent u;

	kdat_uevent_fill(&u, ev);
	u.evd = evd->obj.uid;
	/* tells the library which completions return SRQ buffers */
	u.srq = srq ? srq->obj.uid : 0;
	kdat_uevd_write(evd, &u, srq);
	kdat_uevd_collect(evd);
}

/*
 * A malformed SRQ ring entry: the buffer comes back to the user as an
 * asynchronous event on the IA's async EVD naming the SRQ, with its cookie
 * and the reason it was refused.
 */
void kdat_srq_ring_error(struct kdat_srq *srq, u64 cookie, DAT_RETURN why)
{
	struct kdat_evd *aevd = srq->obj.ia->async_evd;
	struct kdat_uevent u = {};

	if (!aevd || !aevd->uring)
		return;
	u.event_number = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
	u.evd = aevd->obj.uid;
	u.handle = srq->obj.uid;
	u.reason = DAT_SRQ_OTHER_ERROR;
	u.cookie = cookie;
	u.status = DAT_GET_TYPE(why) == DAT_PROTECTION_VIOLATION ?
		   DAT_DTO_ERR_LOCAL_PROTECTION : DAT_DTO_ERR_LOCAL_LENGTH;
	u.length = why;
	kdat_uevd_write(aevd, &u, NULL);
}

/* The EVD is freed: what the user never consumed is reaped now. */
void kdat_uevd_destroy(struct kdat_evd *evd)
{
	struct kdat_uring *r = evd->uring;
	struct kdat_event e;
	unsigned long flags;

	wake_up_all(&r->wq);
	for (;;) {
		spin_lock_irqsave(&evd->lock, flags);
		if (r->reaped == r->ktail) {
			spin_unlock_irqrestore(&evd->lock, flags);
			return;
		}
		e.srq = r->shadow[r->reaped & (r->entries - 1)];
		r->shadow[r->reaped & (r->entries - 1)] = NULL;
		r->reaped++;
		spin_unlock_irqrestore(&evd->lock, flags);
		kdat_event_reaped(&e);
	}
}

/* Reap what the user consumed on every EVD of @ia. */
void kdat_uevd_collect_ia(struct kdat_ia *ia)
{
	struct kdat_obj *o;

	mutex_lock(&ia->lock);
	list_for_each_entry(o, &ia->objs, ia_node) {
		struct kdat_evd *evd = container_of(o, struct kdat_evd, obj);

		if (o->type == DAT_HANDLE_TYPE_EVD && evd->uring)
			kdat_uevd_collect(evd);
	}
	mutex_unlock(&ia->lock);
}

static u32 kdat_uevd_count(struct kdat_evd *evd)
{
	struct kdat_uring *r = evd->uring;

	return READ_ONCE(r->ktail) - kdat_uevd_user_head(r);
}

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

#define DEFINE_IOC(name, type)						\
	static DAT_RETURN kdat_ioc_##name(struct kdat_ufile *uf, type *a)

#define HANDLE_ERR(sub)	KDAT_ERR(DAT_INVALID_HANDLE, (sub))

DEFINE_IOC(version, struct kdat_ioc_version)
{
	a->abi_version = KDAT_ABI_VERSION;
	return DAT_SUCCESS;
}

static int kdat_list_one(const char *ia_name, void *data)
{
	struct kdat_ioc_ia_list *a = data;
	char name[KDAT_NAME_LEN] = {};
	char __user *u = u64_to_user_ptr(a->names);

	if (a->count < a->max) {
		strscpy(name, ia_name, sizeof(name));
		if (copy_to_user(u + a->count * KDAT_NAME_LEN, name,
				 sizeof(name)))
			return -EFAULT;
	}
	a->count++;
	return 0;
}

DEFINE_IOC(ia_list, struct kdat_ioc_ia_list)
{
	a->count = 0;
	if (kdat_registry_for_each(kdat_list_one, a))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	return DAT_SUCCESS;
}

DEFINE_IOC(ia_open, struct kdat_ioc_ia_open)
{
	struct kdat_ia *ia;
	DAT_RETURN ret;

	a->name[KDAT_NAME_LEN - 1] = '\0';
	ret = kdat_ia_open(a->name, a->async_qlen, uf, &ia);
	if (ret != DAT_SUCCESS)
		return ret;
	if (kdat_ufile_add(uf, &ia->obj)) {
		kdat_ib_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
		kdat_obj_put(&ia->obj);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	a->ia = ia->obj.uid;
	a->async_evd = ia->async_evd->obj.uid;
	a->async_ring_offset = (u64)ia->async_evd->uring->pgoff << PAGE_SHIFT;
	a->async_ring_size = ia->async_evd->uring->size;
	kdat_obj_put(&ia->obj);		/* the tables keep it */
	return DAT_SUCCESS;
}

DEFINE_IOC(ia_close, struct kdat_ioc_ia_close)
{
	struct kdat_obj *o = kdat_uget(uf, a->ia, DAT_HANDLE_TYPE_IA);
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA);
	ret = kdat_ib_ia_close(o, a->flags);
	if (ret == DAT_SUCCESS)
		kdat_ufile_remove(uf, o);
	kdat_obj_put(o);
	return ret;
}

DEFINE_IOC(ia_query, struct kdat_ioc_ia_query)
{
	struct kdat_obj *o = kdat_uget(uf, a->ia, DAT_HANDLE_TYPE_IA);
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
	a->async_evd = kdat_uid(ia->async_evd);
	kdat_obj_put(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(free, struct kdat_ioc_free)
{
	static const u32 subtype[KDAT_NTYPES] = {
		[DAT_HANDLE_TYPE_CR] = DAT_INVALID_HANDLE_CR,
		[DAT_HANDLE_TYPE_EP] = DAT_INVALID_HANDLE_EP,
		[DAT_HANDLE_TYPE_EVD] = DAT_INVALID_HANDLE_EVD_ASYNC,
		[DAT_HANDLE_TYPE_LMR] = DAT_INVALID_HANDLE_LMR,
		[DAT_HANDLE_TYPE_PSP] = DAT_INVALID_HANDLE_PSP,
		[DAT_HANDLE_TYPE_PZ] = DAT_INVALID_HANDLE_PZ,
		[DAT_HANDLE_TYPE_SRQ] = DAT_INVALID_HANDLE_SRQ,
	};
	struct kdat_obj *o;
	DAT_RETURN ret;

	if (a->type >= KDAT_NTYPES || a->type == DAT_HANDLE_TYPE_IA ||
	    !subtype[a->type])
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	o = kdat_uget(uf, a->handle, a->type);
	if (!o)
		return HANDLE_ERR(subtype[a->type]);
	switch (a->type) {
	case DAT_HANDLE_TYPE_CR:
		ret = kdat_ib_cr_reject(o);
		break;
	case DAT_HANDLE_TYPE_EP:
		ret = kdat_ib_ep_free(o);
		break;
	case DAT_HANDLE_TYPE_EVD:
		/* the IA's async EVD goes with the IA */
		ret = o == &o->ia->async_evd->obj ?
		      KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_ASYNC) :
		      kdat_ib_evd_free(o);
		break;
	case DAT_HANDLE_TYPE_LMR:
		ret = kdat_ib_lmr_free(o);
		break;
	case DAT_HANDLE_TYPE_PSP:
		ret = kdat_ib_psp_free(o);
		break;
	case DAT_HANDLE_TYPE_PZ:
		ret = kdat_ib_pz_free(o);
		break;
	default:
		ret = kdat_ib_srq_free(o);
		break;
	}
	kdat_obj_put(o);
	return ret;
}

/* Most creates name their IA first: pin it, or fail the call. */
#define GET_IA(ia_id)							\
	struct kdat_obj *ia_o = kdat_uget(uf, (ia_id), DAT_HANDLE_TYPE_IA); \
	if (!ia_o)							\
		return HANDLE_ERR(DAT_INVALID_HANDLE_IA)

/* The handle in @id as a kernel handle, or a never-valid one. */
static DAT_HANDLE kdat_uhandle(struct kdat_ufile *uf, u32 id)
{
	struct kdat_obj *o;

	if (!id)
		return DAT_HANDLE_NULL;
	rcu_read_lock();
	o = xa_load(&uf->objs, id);
	rcu_read_unlock();
	/*
	 * The provider re-checks this handle in its own table and pins it,
	 * so a concurrent free only turns it into DAT_INVALID_HANDLE there.
	 * A stale or foreign ID becomes a pointer no table holds.
	 */
	return o ? (DAT_HANDLE)o : (DAT_HANDLE)uf;
}

DEFINE_IOC(pz_create, struct kdat_ioc_pz_create)
{
	DAT_PZ_HANDLE pz;
	DAT_RETURN ret;
	GET_IA(a->ia);

	ret = kdat_ib_pz_create(ia_o, &pz);
	if (ret == DAT_SUCCESS)
		a->pz = kdat_uid(pz);
	kdat_obj_put(ia_o);
	return ret;
}

DEFINE_IOC(evd_create, struct kdat_ioc_evd_create)
{
	struct kdat_evd *evd;
	DAT_EVD_HANDLE h;
	DAT_RETURN ret;
	GET_IA(a->ia);

	/* user EVDs never upcall; the ring is their delivery */
	ret = kdat_ib_evd_kcreate(ia_o, a->qlen, DAT_UPCALL_DISABLE, NULL,
				  a->flags, &h);
	if (ret == DAT_SUCCESS) {
		evd = h;
		a->evd = evd->obj.uid;
		a->ring_offset = (u64)evd->uring->pgoff << PAGE_SHIFT;
		a->ring_size = evd->uring->size;
	}
	kdat_obj_put(ia_o);
	return ret;
}

/* Has something happened that a waiter on @evd must return for? */
static bool kdat_uevd_woken(struct kdat_evd *evd, u32 threshold,
			    bool seq, u32 wake_seq)
{
	struct kdat_uring *r = evd->uring;

	return kdat_uevd_count(evd) >= threshold || READ_ONCE(evd->dead) ||
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
DEFINE_IOC(evd_wait, struct kdat_ioc_evd_wait)
{
	struct kdat_obj *o = kdat_uget(uf, a->evd, DAT_HANDLE_TYPE_EVD);
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
	t = wait_event_interruptible_timeout(evd->uring->wq,
					     kdat_uevd_woken(evd, a->threshold,
							     seq, a->wake_seq),
					     t);
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
	kdat_obj_put(o);
	return ret;
}

/*
 * dat_evd_set_unwaitable / _clear_unwaitable, and a plain wake-up.  Each
 * bumps the ring header's `wakes` before it wakes the waiters, so a
 * waiter that read `wakes` before it looked at its events cannot sleep
 * through the change.
 */
DEFINE_IOC(evd_ctl, struct kdat_ioc_evd_ctl)
{
	struct kdat_obj *o = kdat_uget(uf, a->evd, DAT_HANDLE_TYPE_EVD);
	struct kdat_uring *r;
	struct kdat_ring_hdr *h;
	unsigned long flags;
	struct kdat_evd *evd;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EVD_ASYNC);
	if (a->op < KDAT_EVD_CTL_UNWAITABLE || a->op > KDAT_EVD_CTL_WAKE) {
		kdat_obj_put(o);
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	}
	evd = container_of(o, struct kdat_evd, obj);
	r = evd->uring;
	h = kdat_uring_hdr(r);
	spin_lock_irqsave(&evd->lock, flags);
	if (a->op != KDAT_EVD_CTL_WAKE)
		WRITE_ONCE(r->unwaitable, a->op == KDAT_EVD_CTL_UNWAITABLE);
	r->wakes++;
	smp_store_release(&h->wakes, r->wakes);
	spin_unlock_irqrestore(&evd->lock, flags);
	wake_up_all(&r->wq);
	kdat_obj_put(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(evd_post_se, struct kdat_ioc_evd_post_se)
{
	struct kdat_obj *o = kdat_uget(uf, a->evd, DAT_HANDLE_TYPE_EVD);
	DAT_EVENT ev = { .event_number = DAT_SOFTWARE_EVENT };
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EVD_ASYNC);
	ev.event_data.software_event_data.pointer =
		(DAT_PVOID)(uintptr_t)a->pointer;
	ret = kdat_ib_evd_post_se(o, &ev);
	kdat_obj_put(o);
	return ret;
}

DEFINE_IOC(lmr_create, struct kdat_ioc_lmr_create)
{
	struct kdat_lmr *lmr;
	DAT_RETURN ret;
	GET_IA(a->ia);

	ret = kdat_lmr_create_user(container_of(ia_o, struct kdat_ia, obj),
				   kdat_uhandle(uf, a->pz), a->addr, a->length,
				   a->priv, &lmr);
	if (ret == DAT_SUCCESS) {
		a->lmr = lmr->obj.uid;
		a->lmr_context = lmr->context;
		a->rmr_context = lmr->rmr_context;
		a->registered_size = lmr->length;
		a->registered_address = a->addr;
		kdat_obj_put(&lmr->obj);
	}
	kdat_obj_put(ia_o);
	return ret;
}

DEFINE_IOC(srq_create, struct kdat_ioc_srq_create)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = a->max_recv_dtos,
			    .max_recv_iov = a->max_recv_iov,
			    .low_watermark = a->low_watermark };
	struct kdat_srq *srq;
	DAT_SRQ_HANDLE h;
	DAT_RETURN ret;
	GET_IA(a->ia);

	ret = kdat_ib_srq_create(ia_o, kdat_uhandle(uf, a->pz), &sa, &h);
	if (ret == DAT_SUCCESS) {
		srq = h;
		a->srq = srq->obj.uid;
		a->ring_offset = (u64)srq->uring->pgoff << PAGE_SHIFT;
		a->ring_size = srq->uring->size;
	}
	kdat_obj_put(ia_o);
	return ret;
}

static struct kdat_srq *kdat_uget_srq(struct kdat_ufile *uf, u32 id)
{
	struct kdat_obj *o = kdat_uget(uf, id, DAT_HANDLE_TYPE_SRQ);

	return o ? container_of(o, struct kdat_srq, obj) : NULL;
}

DEFINE_IOC(srq_query, struct kdat_ioc_srq_query)
{
	struct kdat_srq *srq = kdat_uget_srq(uf, a->srq);
	DAT_SRQ_PARAM p;
	DAT_RETURN ret;

	if (!srq)
		return HANDLE_ERR(DAT_INVALID_HANDLE_SRQ);
	/*
	 * What the user reaped and what it posted count before we answer;
	 * reaped first, so buffers it re-posted after a dequeue find room.
	 */
	kdat_uevd_collect_ia(srq->obj.ia);
	kdat_srq_drain(srq);
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
	kdat_obj_put(&srq->obj);
	return ret;
}

static DAT_RETURN kdat_srq_op(struct kdat_ufile *uf, struct kdat_ioc_srq_op *a,
			      unsigned int cmd)
{
	struct kdat_srq *srq = kdat_uget_srq(uf, a->srq);
	DAT_RETURN ret = DAT_SUCCESS;

	if (!srq)
		return HANDLE_ERR(DAT_INVALID_HANDLE_SRQ);
	kdat_uevd_collect_ia(srq->obj.ia);
	kdat_srq_drain(srq);
	if (cmd == KDAT_IOC_SRQ_RESIZE)
		ret = kdat_ib_srq_resize(srq, a->value);
	else if (cmd == KDAT_IOC_SRQ_SET_LW)
		ret = kdat_ib_srq_set_lw(srq, a->value);
	kdat_obj_put(&srq->obj);
	return ret;
}

static void kdat_useg_to_triplets(const struct kdat_useg *s, u32 n,
				  DAT_LMR_TRIPLET *t)
{
	u32 i;

	for (i = 0; i < n; i++) {
		t[i].lmr_context = s[i].lmr_context;
		t[i].virtual_address = s[i].addr;
		t[i].segment_length = s[i].length;
	}
}

DEFINE_IOC(srq_post, struct kdat_ioc_srq_post)
{
	struct kdat_srq *srq = kdat_uget_srq(uf, a->srq);
	DAT_LMR_TRIPLET t[KDAT_MAX_IOV];
	DAT_DTO_COOKIE c = { .as_64 = a->cookie };
	DAT_RETURN ret;

	if (!srq)
		return HANDLE_ERR(DAT_INVALID_HANDLE_SRQ);
	if (a->nseg > KDAT_MAX_IOV) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	} else {
		kdat_useg_to_triplets(a->seg, a->nseg, t);
		kdat_uevd_collect_ia(srq->obj.ia);
		ret = kdat_srq_post_one(srq, a->nseg, t, c);
	}
	kdat_obj_put(&srq->obj);
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

DEFINE_IOC(ep_create, struct kdat_ioc_ep_create)
{
	DAT_EP_ATTR attr;
	DAT_EP_HANDLE ep;
	DAT_RETURN ret;
	GET_IA(a->ia);

	kdat_uep_attr_in(&a->attr, &attr);
	if (a->srq)
		ret = kdat_ib_ep_create_with_srq(ia_o, kdat_uhandle(uf, a->pz),
						 kdat_uhandle(uf, a->recv_evd),
						 kdat_uhandle(uf, a->request_evd),
						 kdat_uhandle(uf, a->connect_evd),
						 kdat_uhandle(uf, a->srq),
						 a->has_attr ? &attr : NULL,
						 &ep);
	else
		ret = kdat_ib_ep_create(ia_o, kdat_uhandle(uf, a->pz),
					kdat_uhandle(uf, a->recv_evd),
					kdat_uhandle(uf, a->request_evd),
					kdat_uhandle(uf, a->connect_evd),
					a->has_attr ? &attr : NULL, &ep);
	if (ret == DAT_SUCCESS)
		a->ep = kdat_uid(ep);
	kdat_obj_put(ia_o);
	return ret;
}

static struct kdat_obj *kdat_uget_ep(struct kdat_ufile *uf, u32 id)
{
	return kdat_uget(uf, id, DAT_HANDLE_TYPE_EP);
}

DEFINE_IOC(ep_query, struct kdat_ioc_ep_query)
{
	struct kdat_obj *o = kdat_uget_ep(uf, a->ep);
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
	kdat_obj_put(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(ep_connect, struct kdat_ioc_ep_connect)
{
	struct kdat_obj *o = kdat_uget_ep(uf, a->ep);
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
	kdat_obj_put(o);
	return ret;
}

/*
 * dat_ep_modify: the attributes @a->mask names, through the provider's
 * own modify (which checks the mask, the values and the EP's state).
 */
DEFINE_IOC(ep_modify, struct kdat_ioc_ep_modify)
{
	struct kdat_obj *o = kdat_uget_ep(uf, a->ep);
	DAT_EP_PARAM p;
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	memset(&p, 0, sizeof(p));
	kdat_uep_attr_in(&a->attr, &p.ep_attr);
	ret = kdat_ib_ep_modify(o, a->mask, &p);
	kdat_obj_put(o);
	return ret;
}

static DAT_RETURN kdat_ep_op(struct kdat_ufile *uf, struct kdat_ioc_ep_op *a,
			     unsigned int cmd)
{
	struct kdat_obj *o = kdat_uget_ep(uf, a->ep);
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	ret = cmd == KDAT_IOC_EP_RESET ? kdat_ib_ep_reset(o) :
	      kdat_ib_ep_disconnect(o, a->value);
	kdat_obj_put(o);
	return ret;
}

DEFINE_IOC(ep_post, struct kdat_ioc_ep_post)
{
	struct kdat_obj *o = kdat_uget_ep(uf, a->ep);
	DAT_LMR_TRIPLET t[KDAT_MAX_IOV];
	DAT_DTO_COOKIE c = { .as_64 = a->cookie };
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
	switch (a->op) {
	case KDAT_POST_SEND:
		ret = kdat_ib_ep_post_send(o, a->nseg, t, c, a->flags);
		break;
	case KDAT_POST_RECV:
		ret = kdat_ib_ep_post_recv(o, a->nseg, t, c, a->flags);
		break;
	case KDAT_POST_RDMA_WRITE:
		ret = kdat_ib_ep_post_rdma_write(o, a->nseg, t, c, &r,
						 a->flags);
		break;
	case KDAT_POST_RDMA_READ:
		ret = kdat_ib_ep_post_rdma_read(o, a->nseg, t, c, &r, a->flags);
		break;
	default:
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		break;
	}
out:
	kdat_obj_put(o);
	return ret;
}

DEFINE_IOC(ep_status, struct kdat_ioc_ep_status)
{
	struct kdat_obj *o = kdat_uget_ep(uf, a->ep);
	DAT_EP_STATE state;
	DAT_BOOLEAN ri, qi;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_EP);
	kdat_ib_ep_get_status(o, &state, &ri, &qi);
	a->state = state;
	a->recv_idle = ri;
	a->request_idle = qi;
	kdat_obj_put(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(psp_create, struct kdat_ioc_psp_create)
{
	DAT_PSP_HANDLE psp;
	DAT_RETURN ret;
	GET_IA(a->ia);

	ret = kdat_ib_psp_create(ia_o, a->conn_qual, kdat_uhandle(uf, a->evd),
				 a->flags, &psp);
	if (ret == DAT_SUCCESS)
		a->psp = kdat_uid(psp);
	kdat_obj_put(ia_o);
	return ret;
}

DEFINE_IOC(cr_query, struct kdat_ioc_cr_query)
{
	struct kdat_obj *o = kdat_uget(uf, a->cr, DAT_HANDLE_TYPE_CR);
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
	kdat_obj_put(o);
	return DAT_SUCCESS;
}

DEFINE_IOC(cr_accept, struct kdat_ioc_cr_accept)
{
	struct kdat_obj *o = kdat_uget(uf, a->cr, DAT_HANDLE_TYPE_CR);
	DAT_RETURN ret;

	if (!o)
		return HANDLE_ERR(DAT_INVALID_HANDLE_CR);
	if (a->pdata_size > KDAT_PDATA_LEN)
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	else
		ret = kdat_ib_cr_accept(o, kdat_uhandle(uf, a->ep),
					a->pdata_size, a->pdata);
	kdat_obj_put(o);
	return ret;
}

/* One table entry per ioctl: the argument size and its handler. */
#define IOC(nr, name, type)						\
	[_IOC_NR(nr)] = { nr, sizeof(type),				\
			  (DAT_RETURN (*)(struct kdat_ufile *, void *))	\
			  kdat_ioc_##name }

static const struct {
	unsigned int cmd;
	size_t size;
	DAT_RETURN (*fn)(struct kdat_ufile *uf, void *arg);
} kdat_iocs[] = {
	IOC(KDAT_IOC_VERSION, version, struct kdat_ioc_version),
	IOC(KDAT_IOC_IA_LIST, ia_list, struct kdat_ioc_ia_list),
	IOC(KDAT_IOC_IA_OPEN, ia_open, struct kdat_ioc_ia_open),
	IOC(KDAT_IOC_IA_CLOSE, ia_close, struct kdat_ioc_ia_close),
	IOC(KDAT_IOC_IA_QUERY, ia_query, struct kdat_ioc_ia_query),
	IOC(KDAT_IOC_FREE, free, struct kdat_ioc_free),
	IOC(KDAT_IOC_PZ_CREATE, pz_create, struct kdat_ioc_pz_create),
	IOC(KDAT_IOC_EVD_CREATE, evd_create, struct kdat_ioc_evd_create),
	IOC(KDAT_IOC_EVD_WAIT, evd_wait, struct kdat_ioc_evd_wait),
	IOC(KDAT_IOC_EVD_POST_SE, evd_post_se, struct kdat_ioc_evd_post_se),
	IOC(KDAT_IOC_LMR_CREATE, lmr_create, struct kdat_ioc_lmr_create),
	IOC(KDAT_IOC_SRQ_CREATE, srq_create, struct kdat_ioc_srq_create),
	IOC(KDAT_IOC_SRQ_QUERY, srq_query, struct kdat_ioc_srq_query),
	[_IOC_NR(KDAT_IOC_SRQ_RESIZE)] = { KDAT_IOC_SRQ_RESIZE,
					   sizeof(struct kdat_ioc_srq_op) },
	[_IOC_NR(KDAT_IOC_SRQ_SET_LW)] = { KDAT_IOC_SRQ_SET_LW,
					   sizeof(struct kdat_ioc_srq_op) },
	[_IOC_NR(KDAT_IOC_SRQ_KICK)] = { KDAT_IOC_SRQ_KICK,
					 sizeof(struct kdat_ioc_srq_op) },
	IOC(KDAT_IOC_SRQ_POST, srq_post, struct kdat_ioc_srq_post),
	IOC(KDAT_IOC_EP_CREATE, ep_create, struct kdat_ioc_ep_create),
	IOC(KDAT_IOC_EP_QUERY, ep_query, struct kdat_ioc_ep_query),
	IOC(KDAT_IOC_EP_CONNECT, ep_connect, struct kdat_ioc_ep_connect),
	[_IOC_NR(KDAT_IOC_EP_DISCONNECT)] = { KDAT_IOC_EP_DISCONNECT,
					      sizeof(struct kdat_ioc_ep_op) },
	[_IOC_NR(KDAT_IOC_EP_RESET)] = { KDAT_IOC_EP_RESET,
					 sizeof(struct kdat_ioc_ep_op) },
	IOC(KDAT_IOC_EP_POST, ep_post, struct kdat_ioc_ep_post),
	IOC(KDAT_IOC_EP_STATUS, ep_status, struct kdat_ioc_ep_status),
	IOC(KDAT_IOC_PSP_CREATE, psp_create, struct kdat_ioc_psp_create),
	IOC(KDAT_IOC_CR_QUERY, cr_query, struct kdat_ioc_cr_query),
	IOC(KDAT_IOC_CR_ACCEPT, cr_accept, struct kdat_ioc_cr_accept),
	IOC(KDAT_IOC_EVD_CTL, evd_ctl, struct kdat_ioc_evd_ctl),
	IOC(KDAT_IOC_EP_MODIFY, ep_modify, struct kdat_ioc_ep_modify),
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
};

/* Reserved fields must be zero, so a later ABI can give them a meaning. */
static bool kdat_reserved_zero(unsigned int cmd, const union kdat_ioc_any *k)
{
	switch (cmd) {
	case KDAT_IOC_EP_CREATE:
		return !k->ep_create.attr.pad;
	case KDAT_IOC_EP_CONNECT:
		return !k->ep_connect.pad && !memchr_inv(k->ep_connect.pad2, 0,
						     sizeof(k->ep_connect.pad2));
	case KDAT_IOC_EP_POST:
		return !k->ep_post.pad;
	case KDAT_IOC_EVD_POST_SE:
		return !k->evd_post_se.pad;
	case KDAT_IOC_EP_MODIFY:
		return !k->ep_modify.pad && !k->ep_modify.attr.pad;
	default:
		return true;
	}
}

static long kdat_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct kdat_ufile *uf = f->private_data;
	void __user *u = (void __user *)arg;
	unsigned int nr = _IOC_NR(cmd);
	union kdat_ioc_any *k;
	DAT_RETURN st;
	size_t ks;
	int ret;

	if (_IOC_TYPE(cmd) != KDAT_IOC_MAGIC || nr >= ARRAY_SIZE(kdat_iocs) ||
	    kdat_iocs[nr].cmd != cmd)
		return -ENOTTY;
	ks = kdat_iocs[nr].size;
	k = kmalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	ret = kdat_copy_in(k, ks, u);
	if (ret)
		goto out;
	if (!kdat_reserved_zero(cmd, k)) {
		ret = -EINVAL;
		goto out;
	}
	switch (cmd) {
	case KDAT_IOC_SRQ_RESIZE:
	case KDAT_IOC_SRQ_SET_LW:
	case KDAT_IOC_SRQ_KICK:
		st = kdat_srq_op(uf, (void *)k, cmd);
		break;
	case KDAT_IOC_EP_DISCONNECT:
	case KDAT_IOC_EP_RESET:
		st = kdat_ep_op(uf, (void *)k, cmd);
		break;
	default:
		st = kdat_iocs[nr].fn(uf, k);
		break;
	}
	ret = kdat_copy_out(u, k, ks, st);
out:
	kfree(k);
	return ret;
}

static int kdat_open(struct inode *inode, struct file *f)
{
	struct kdat_ufile *uf = kzalloc(sizeof(*uf), GFP_KERNEL);

	if (!uf)
		return -ENOMEM;
	kref_init(&uf->ref);
	mutex_init(&uf->lock);
	xa_init_flags(&uf->objs, XA_FLAGS_ALLOC1);
	xa_init(&uf->rings);
	init_waitqueue_head(&uf->poll_wq);
	f->private_data = uf;
	return nonseekable_open(inode, f);
}

/* Close every IA the file opened; that frees everything under them. */
static int kdat_release(struct inode *inode, struct file *f)
{
	struct kdat_ufile *uf = f->private_data;
	struct kdat_obj *o;
	unsigned long id;

	xa_for_each(&uf->objs, id, o) {
		if (o->type != DAT_HANDLE_TYPE_IA || !kref_get_unless_zero(&o->ref))
			continue;
		kdat_ib_ia_close(o, DAT_CLOSE_ABRUPT_FLAG);
		kdat_ufile_remove(uf, o);
		kdat_obj_put(o);
	}
	kref_put(&uf->ref, kdat_ufile_release);
	return 0;
}

static int kdat_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct kdat_ufile *uf = f->private_data;
	struct kdat_uring *r;
	int ret = -EINVAL;

	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	mutex_lock(&uf->lock);
	r = xa_load(&uf->rings, vma->vm_pgoff);
	if (r && vma->vm_end - vma->vm_start <= r->size) {
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
		vm_flags_clear(vma, VM_MAYEXEC);
#else
		vma->vm_flags &= ~VM_MAYEXEC;
#endif
		ret = remap_vmalloc_range(vma, r->mem, 0);
	}
	mutex_unlock(&uf->lock);
	return ret;
}

static __poll_t kdat_poll(struct file *f, poll_table *wait)
{
	struct kdat_ufile *uf = f->private_data;
	struct kdat_obj *o;
	unsigned long id;
	__poll_t mask = 0;

	poll_wait(f, &uf->poll_wq, wait);
	rcu_read_lock();
	xa_for_each(&uf->objs, id, o) {
		struct kdat_evd *evd;

		if (o->type != DAT_HANDLE_TYPE_EVD)
			continue;
		evd = container_of(o, struct kdat_evd, obj);
		if (evd->uring && kdat_uevd_count(evd)) {
			mask = EPOLLIN | EPOLLRDNORM;
			break;
		}
	}
	rcu_read_unlock();
	return mask;
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
