// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rings of /dev/kdat (layout in <uapi/kdat_abi.h>, accessors in
 * uring.h):
 *
 *   event ring (one per EVD): the provider's events, translated to IDs,
 *     are written here; the user reads them without a syscall and
 *     publishes its head.  An event counts as reaped (an SRQ buffer stops
 *     being outstanding) when the kernel sees the user's head pass it.
 *   SRQ post ring: the user writes receive descriptors and publishes its
 *     tail; the provider drains them into the SRQ (srq.c).
 *
 * Ring memory is vmalloc'ed with __GFP_ACCOUNT (charged to the opener's
 * memory cgroup) within the file's cap, and mapped page by page into the
 * opener only: VM_DONTCOPY, so a forked child inherits no ring unless the
 * process undid that (MADV_DOFORK; harmless, nothing in a ring is
 * trusted).  The pages count against the cap until the ring is freed and
 * no mapping of them is left (struct kdat_ring_pages).
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/version.h>

#include "kdat_core.h"
#include "uobj.h"

/* Events reaped per hold of the EVD lock (interrupts are off). */
#define KDAT_COLLECT_BATCH	64

static struct kdat_uring *kdat_uring_alloc(struct kdat_ufile *uf,
					   u32 min_entries, u32 entry_size,
					   bool events)
{
	size_t offset = ALIGN(sizeof(struct kdat_ring_hdr), 64), bytes, size;
	size_t side;
	struct kdat_ring_hdr *h;
	struct kdat_uring *r;
	u32 entries;

	/* both are bounded by the device's limits before we get here */
	if (min_entries > (1U << 24))
		return NULL;
	entries = roundup_pow_of_two(max_t(u32, min_entries, 2));
	if (check_mul_overflow((size_t)entries, (size_t)entry_size, &bytes) ||
	    check_add_overflow(offset, bytes, &size) || size > SIZE_MAX / 2)
		return NULL;
	size = PAGE_ALIGN(size);
	side = events ? entries * sizeof(*r->shadow) : 0;
	/* the file's cap, before the memory: not after allocating it */
	if (kdat_ufile_reserve(uf, size + side))
		return NULL;
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		goto err_unreserve;
	r->entries = entries;
	r->entry_size = entry_size;
	r->entry_offset = offset;
	r->size = size;
	r->side_bytes = side;
	init_waitqueue_head(&r->wq);
	r->mem = __vmalloc(r->size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!r->mem)
		goto err;
	if (events) {
		r->shadow = kvcalloc(entries, sizeof(*r->shadow),
				     GFP_KERNEL_ACCOUNT);
		if (!r->shadow)
			goto err;
	}
	h = r->mem;
	h->entries = entries;
	h->entry_size = entry_size;
	h->entry_offset = r->entry_offset;
	if (kdat_ufile_add_ring(uf, r))
		goto err;
	return r;
err:
	kvfree(r->shadow);
	vfree(r->mem);
	kfree(r);
err_unreserve:
	kdat_ufile_unreserve(uf, size + side);
	return NULL;
}

/*
 * The pages stay alive while a process still maps them (the mapping holds
 * page references), so the ring can go with its object; they stay counted
 * against the file's cap until the last mapping goes (kdat_ring_vm_ops).
 */
void kdat_uring_free(struct kdat_uring *r)
{
	if (!r)
		return;
	kdat_ufile_del_ring(r->uf, r);
	kvfree(r->shadow);
	vfree(r->mem);
	kfree(r);
}

/* Each VMA of a ring holds its pages' count (a split or a copy too). */
static void kdat_ring_vm_open(struct vm_area_struct *vma)
{
	kdat_ring_pages_get(vma->vm_private_data);
}

static void kdat_ring_vm_close(struct vm_area_struct *vma)
{
	kdat_ring_pages_put(vma->vm_private_data);
}

static const struct vm_operations_struct kdat_ring_vm_ops = {
	.open = kdat_ring_vm_open,
	.close = kdat_ring_vm_close,
};

int kdat_uring_mmap(struct kdat_ufile *uf, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start, off;
	struct kdat_uring *r;
	int ret = -EINVAL;

	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	/* a forked child or another process handed the file: no rings */
	if (!kdat_ufile_mine(uf))
		return -EACCES;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP,
		     VM_MAYEXEC);
#else
	vma->vm_flags |= VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_flags &= ~VM_MAYEXEC;
#endif
	mutex_lock(&uf->lock);
	r = xa_load(&uf->rings, vma->vm_pgoff);
	if (r && len <= r->size) {
		for (off = 0, ret = 0; off < len && !ret; off += PAGE_SIZE)
			ret = vm_insert_page(vma, vma->vm_start + off,
					     vmalloc_to_page(r->mem + off));
		if (!ret) {
			kdat_ring_pages_get(r->pages);
			vma->vm_private_data = r->pages;
			vma->vm_ops = &kdat_ring_vm_ops;
		}
	}
	mutex_unlock(&uf->lock);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Event rings                                                             */

int kdat_uevd_init(struct kdat_evd *evd)
{
	evd->uring = kdat_uring_alloc(evd->obj.ia->ufile, evd->qlen,
				      sizeof(struct kdat_uevent), true);
	return evd->uring ? 0 : -ENOMEM;
}

/* The user's head, clamped between what we reaped and what we wrote. */
static u32 kdat_uevd_user_head(struct kdat_uring *r)
{
	return kdat_ring_user_head(r->reaped, r->ktail,
				   READ_ONCE(kdat_uring_hdr(r)->head));
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

	u32 batch = 0;

	spin_lock_irqsave(&evd->lock, flags);
	while (r->reaped != kdat_uevd_user_head(r)) {
		u32 slot = r->reaped & (r->entries - 1);

		/* the user sizes the ring: let interrupts in now and then */
		if (++batch % KDAT_COLLECT_BATCH == 0) {
			spin_unlock_irqrestore(&evd->lock, flags);
			spin_lock_irqsave(&evd->lock, flags);
			continue;
		}
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
		u->dto_op = d->dto_completion_event_data.kdat_operation;
		u->dto_flags = d->dto_completion_event_data.kdat_flags;
		u->immed_data = d->dto_completion_event_data.kdat_immed_data;
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

/*
 * Write one translated event to the user's ring.  @must_fit (a refused
 * post-ring entry): when the ring is full nothing is written and false
 * is returned, the caller keeps the event.  Otherwise a full ring loses
 * the event: the header's `dropped` counts it, its SRQ buffer is counted
 * back as unseen, and the first loss since the ring last took an event
 * is reported as DAT_ASYNC_ERROR_EVD_OVERFLOW on the IA's async EVD.
 *
 * The slot written may hold an event the user consumed (its head passed
 * it) that was not reaped yet: it is reaped here, before it is
 * overwritten, so its SRQ buffer is counted back exactly once.
 */
KDAT_DATA_PATH(kdat_uevd_write, 1024)
static bool kdat_uevd_write(struct kdat_evd *evd, const struct kdat_uevent *u,
			    struct kdat_srq *srq, bool must_fit)
{
	struct kdat_uring *r = evd->uring;
	struct kdat_ring_hdr *h = kdat_uring_hdr(r);
	struct kdat_event old = {};
	unsigned long flags;
	bool lost, report = false;

	spin_lock_irqsave(&evd->lock, flags);
	lost = evd->dead || r->ktail - kdat_uevd_user_head(r) >= r->entries;
	if (lost && must_fit) {
		spin_unlock_irqrestore(&evd->lock, flags);
		return evd->dead;	/* a dead EVD: nobody to tell */
	}
	if (lost) {
		h->dropped++;
		report = !evd->overflowed && !evd->dead;
		evd->overflowed = true;
	} else {
		u32 slot = r->ktail & (r->entries - 1);

		if (r->ktail - r->reaped >= r->entries) {
			/*
			 * consumed (not lost), not reaped yet: count it back
			 * here, under evd->lock, as kdat_uevd_collect does
			 */
			old.srq = r->shadow[slot];
			r->reaped++;
			kdat_event_reaped(&old);
		}
		memcpy(kdat_uring_entry(r, r->ktail), u, sizeof(*u));
		r->shadow[slot] = srq;
		r->ktail++;
		evd->overflowed = false;
		/* pairs with the acquire in EventConsumer::available() */
		smp_store_release(&h->tail, r->ktail);
		kdat_cno_evd_posted(evd);
	}
	spin_unlock_irqrestore(&evd->lock, flags);

	if (lost) {
		if (srq)
			kdat_srq_reaped_unseen(srq);
		if (report && !(evd->flags & DAT_EVD_ASYNC_FLAG))
			kdat_ia_async_error(evd->obj.ia,
					    DAT_ASYNC_ERROR_EVD_OVERFLOW, evd,
					    DAT_EVD_OVERFLOW_ERROR, false);
		return !must_fit;
	}
	wake_up(&r->wq);
	wake_up(&r->uf->poll_wq);
	return true;
}

bool kdat_uevd_post(struct kdat_evd *evd, const DAT_EVENT *ev,
		    struct kdat_srq *srq, bool must_fit)
{
	struct kdat_uevent u;
	bool done;

	kdat_uevent_fill(&u, ev);
	u.evd = kdat_uid(evd);
	/* tells the library which completions return SRQ buffers */
	u.srq = srq ? kdat_uid(srq) : 0;
	done = kdat_uevd_write(evd, &u, srq, must_fit);
	kdat_uevd_collect(evd);
	return done;
}

/*
 * A malformed SRQ ring entry: the buffer comes back to the user as an
 * asynchronous event on the IA's async EVD naming the SRQ, with its cookie
 * and the reason it was refused.  False if that ring is full: the entry
 * waits in the post ring (srq.c) until the consumer made room.
 */
bool kdat_srq_ring_error(struct kdat_srq *srq, u64 cookie, DAT_RETURN why)
{
	struct kdat_evd *aevd = kdat_ia_get_async_evd(srq->obj.ia);
	struct kdat_uevent u = {};
	bool done = true;

	if (!aevd)
		return true;	/* the IA is closing: nobody to tell */
	if (aevd->uring) {
		u.event_number = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
		u.evd = kdat_uid(aevd);
		u.handle = kdat_uid(srq);
		u.reason = DAT_SRQ_OTHER_ERROR;
		u.cookie = cookie;
		u.status = DAT_GET_TYPE(why) == DAT_PROTECTION_VIOLATION ?
			   DAT_DTO_ERR_LOCAL_PROTECTION :
			   DAT_DTO_ERR_LOCAL_LENGTH;
		u.length = why;
		done = kdat_uevd_write(aevd, &u, NULL, true);
	}
	kdat_obj_put(&aevd->obj);
	return done;
}

/*
 * The device memory of a CQ that grew past what the EVD's qlen gave it
 * (kdat_evd_cq_charge: an SRQ pinned there, QPs feeding it) counts
 * against the file's ring cap, and goes with the ring: else one SRQ of
 * the device's largest size, pinned in any number of one-entry EVDs, grew
 * each EVD's CQ to that size, accounted nowhere.
 */
int kdat_uevd_cq_account(struct kdat_evd *evd, long bytes)
{
	struct kdat_uring *r = evd->uring;

	lockdep_assert_held(&evd->cq_lock);
	if (bytes < 0) {
		kdat_ufile_unreserve(r->uf, -bytes);
		r->side_bytes += bytes;
		return 0;
	}
	if (kdat_ufile_reserve(r->uf, bytes))
		return -ENOMEM;
	r->side_bytes += bytes;
	return 0;
}

/*
 * The EVD is freed: what the user consumed is reaped, what it never
 * consumed is reaped as unseen (the library never counted it).
 */
void kdat_uevd_destroy(struct kdat_evd *evd)
{
	struct kdat_uring *r = evd->uring;
	struct kdat_srq *srq;
	unsigned long flags;
	bool seen;

	wake_up_all(&r->wq);
	for (;;) {
		spin_lock_irqsave(&evd->lock, flags);
		if (r->reaped == r->ktail) {
			spin_unlock_irqrestore(&evd->lock, flags);
			return;
		}
		seen = r->reaped != kdat_uevd_user_head(r);
		srq = r->shadow[r->reaped & (r->entries - 1)];
		r->shadow[r->reaped & (r->entries - 1)] = NULL;
		r->reaped++;
		spin_unlock_irqrestore(&evd->lock, flags);
		if (srq && seen)
			kdat_srq_reaped(srq);
		else if (srq)
			kdat_srq_reaped_unseen(srq);
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

/*
 * Unlocked (poll, waits): one read of our tail, the user's head judged
 * against it.  Events written, consumed and reaped between our reads can
 * put reaped (and so the head) past that tail: nothing new then, never a
 * wrapped count; and never more than the ring holds.
 */
u32 kdat_uevd_count(struct kdat_evd *evd)
{
	struct kdat_uring *r = evd->uring;
	u32 ktail = READ_ONCE(r->ktail);
	u32 head = kdat_ring_user_head(READ_ONCE(r->reaped), ktail,
				       READ_ONCE(kdat_uring_hdr(r)->head));

	if ((s32)(ktail - head) < 0)
		return 0;
	return min(ktail - head, r->entries);
}


/* Is there an event for the user to read? (poll) */
bool kdat_uevd_ready(struct kdat_evd *evd)
{
	return evd->uring && kdat_uevd_count(evd);
}

/*
 * The IA is closing: every waiter of its EVDs returns (evd_wait tests
 * ia->closing), so the close's wait for the calls inside is short.
 */
void kdat_uevd_wake_ia(struct kdat_ia *ia)
{
	struct kdat_obj *o;

	mutex_lock(&ia->lock);
	list_for_each_entry(o, &ia->objs, ia_node) {
		struct kdat_evd *evd = container_of(o, struct kdat_evd, obj);

		if (o->type == DAT_HANDLE_TYPE_EVD && evd->uring)
			wake_up_all(&evd->uring->wq);
	}
	mutex_unlock(&ia->lock);
	kdat_cno_wake_ia(ia);
}

/* ---------------------------------------------------------------------- */
/* SRQ post rings                                                          */

/*
 * The post ring of an SRQ of max_recv_dtos receives of up to max_recv_iov
 * segments.  An entry holds max_recv_iov segments rounded up to a cache
 * line (64 bytes hold two): a one-segment post writes one line, as in a
 * hardware WQE, instead of the 400 bytes of an entry with room for
 * KDAT_MAX_IOV.
 *
 * No NEED_KICK yet: a new SRQ has no buffer, but no EP either, so nothing
 * can consume one; the flag is raised once an EP joins a starved SRQ
 * (kdat_srq_drain).
 */
int kdat_usrq_init(struct kdat_srq *srq)
{
	size_t sz = offsetof(struct kdat_srq_wqe, seg) +
		    min_t(u32, srq->max_recv_iov, KDAT_MAX_IOV) *
		    sizeof(struct kdat_useg);

	sz = min(ALIGN(sz, 64), sizeof(struct kdat_srq_wqe));
	srq->uring = kdat_uring_alloc(srq->obj.ia->ufile, srq->max_recv_dtos,
				      sz, false);
	return srq->uring ? 0 : -ENOMEM;
}

/* ---------------------------------------------------------------------- */
/* EP send rings (KDAT_FEATURE_SEND_RING)                                  */

/*
 * The send ring of a user EP: at least max_request_dtos entries, each a
 * 64-byte header and room for max_request_iov segments, rounded up to a
 * cache line (a one-segment post writes two lines).  Drained by ep.c.
 */
int kdat_uep_init(struct kdat_ep *ep)
{
	size_t sz = offsetof(struct kdat_ep_sqe, seg) +
		    min_t(u32, ep->attr.max_request_iov, KDAT_MAX_IOV) *
		    sizeof(struct kdat_useg);
	struct kdat_ring_hdr *h;
	struct kdat_uring *r;

	sz = min(ALIGN(sz, 64), sizeof(struct kdat_ep_sqe));
	r = kdat_uring_alloc(ep->obj.ia->ufile, ep->attr.max_request_dtos, sz,
			     false);
	if (!r)
		return -ENOMEM;
	h = kdat_uring_hdr(r);
	h->depth = min_t(u32, ep->attr.max_request_dtos, r->entries);
	h->ep_state = ep->state;
	/* the send queue is idle: the first post kicks */
	h->flags = KDAT_RING_NEED_KICK;
	ep->sring = r;
	return 0;
}
