// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared Receive Queues: dat_srq_create, _free, _post_recv, _query,
 * _resize and _set_lw on an ib_srq.
 *
 * The provider keeps the two counts dat_srq_query reports, exactly:
 *   available   - posted to the SRQ and not yet taken by an EP.  It drops
 *                 when the device completes a receive (a message arrived
 *                 or an EP's in-progress buffer was flushed).
 *   outstanding - posted and whose completion the consumer has not reaped
 *                 yet (dequeued or handed to an upcall), including those
 *                 lying on a recv EVD.
 * Both change under srq->lock, in the same critical section as the post
 * or the completion that changes them, so a query always sees a pair that
 * really existed.
 *
 * The low watermark is armed by dat_srq_set_lw and fires once: the first
 * time available drops below it, or in set_lw itself when it already is.
 * For a /dev/kdat user's SRQ, buffers still in its post ring count
 * beside available (kdat_srq_ring_left); query and resize count those
 * held behind a refusal that waits for room (kdat_srq_ring_held).
 *
 * Receive buffers are tracked by preallocated kdat_srq_buf entries so
 * posting never allocates; resize grows the pool and shrinks only the
 * limit (the memory goes with the SRQ).
 *
 * A /dev/kdat user's SRQ also arms the device's SRQ limit (IB_SRQ_LIMIT,
 * a quarter of max_recv_dtos): when the device takes a buffer and fewer
 * than that are left, IB_EVENT_SRQ_LIMIT_REACHED drains the post ring at
 * once, without waiting for the completion of the buffer taken.  The
 * event disarms the limit; a work item arms it again (ib_modify_srq may
 * sleep).  The device limit is not the DAT low watermark: that one is
 * counted by the provider (available and what waits in the ring), armed
 * by dat_srq_set_lw and fires once per arming, whatever the device limit
 * does.  Kernel SRQs have no ring and arm no limit.
 */
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

#include "kdat_core.h"
#include <uapi/kdat_abi.h>

/* Largest scatter list a receive may name; bounds the on-stack SGE array. */
#define KDAT_SRQ_MAX_IOV	16
/* DAT_HW_DEFAULT's max_recv_dtos (docs/user-api.md), device permitting */
#define KDAT_SRQ_DEFAULT_DTOS	256
/* Ring entries drained per hold of the ring lock (interrupts are off). */
#define KDAT_DRAIN_BATCH	64

/* What the device limits did, module-wide: debugfs kdat/srq_limit */
static atomic_long_t kdat_limit_events;		/* LIMIT_REACHED handled */
static atomic_long_t kdat_limit_drained;	/* ring entries they posted */
static atomic_long_t kdat_limit_arms;		/* ib_modify_srq(LIMIT) ok */
static atomic_long_t kdat_limit_arm_errors;	/* ... failed */
struct workqueue_struct *kdat_ring_wq;	/* limit_work, drain_work, sring_work */

static u32 __kdat_srq_drain(struct kdat_srq *srq, bool one_batch);

/* Sleep-safe callers (kick, query) give the CPU away between batches. */
static void cond_resched_if_sleepable(void)
{
	if (preemptible())
		cond_resched();
}

struct kdat_srq_chunk {
	struct list_head node;
	DAT_COUNT n;
	struct kdat_srq_buf bufs[];
};

static DAT_DTO_COMPLETION_STATUS kdat_wc_status(enum ib_wc_status s)
{
	switch (s) {
	case IB_WC_SUCCESS:
		return DAT_DTO_SUCCESS;
	case IB_WC_WR_FLUSH_ERR:
		return DAT_DTO_ERR_FLUSHED;
	case IB_WC_LOC_LEN_ERR:
		return DAT_DTO_ERR_LOCAL_LENGTH;
	case IB_WC_LOC_PROT_ERR:
		return DAT_DTO_ERR_LOCAL_PROTECTION;
	case IB_WC_LOC_EEC_OP_ERR:
	case IB_WC_LOC_QP_OP_ERR:
		return DAT_DTO_ERR_LOCAL_EP;
	case IB_WC_BAD_RESP_ERR:
		return DAT_DTO_ERR_BAD_RESPONSE;
	case IB_WC_REM_ACCESS_ERR:
		return DAT_DTO_ERR_REMOTE_ACCESS;
	case IB_WC_REM_INV_REQ_ERR:
	case IB_WC_REM_OP_ERR:
		return DAT_DTO_ERR_REMOTE_RESPONDER;
	case IB_WC_RETRY_EXC_ERR:
		return DAT_DTO_ERR_TRANSPORT;
	case IB_WC_RNR_RETRY_EXC_ERR:
		return DAT_DTO_ERR_RECEIVER_NOT_READY;
	default:
		return DAT_DTO_FAILURE;
	}
}

KDAT_DATA_PATH(kdat_dto_status, 64)
DAT_DTO_COMPLETION_STATUS kdat_dto_status(enum ib_wc_status s)
{
	return kdat_wc_status(s);
}

/* @may_upcall: the consumer's upcall may run here (kdat_evd_post). */
static void kdat_srq_fire_lw(struct kdat_srq *srq, bool may_upcall)
{
	kdat_ia_async_error(srq->obj.ia, KDAT_SRQ_LW_EVENT, srq,
			    DAT_SRQ_LOW_WATERMARK_EVENT, may_upcall);
}

/*
 * Called with srq->lock held; true if the armed watermark just fired.
 * @in_ring: buffers still in the post ring (kdat_srq_ring_left).
 */
static bool kdat_srq_check_lw(struct kdat_srq *srq, u32 in_ring)
{
	if (srq->lw_armed &&
	    (s64)srq->available + in_ring < srq->low_watermark) {
		srq->lw_armed = false;
		return true;
	}
	return false;
}

KDAT_DATA_PATH(kdat_srq_reaped, 128)
void kdat_srq_reaped(struct kdat_srq *srq)
{
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	srq->outstanding--;
	spin_unlock_irqrestore(&srq->lock, flags);
	kdat_obj_put(&srq->obj);
}

/*
 * The same for a buffer whose event its /dev/kdat user never saw (lost to
 * a full event ring, left in a freed EVD's ring, or reported to no one):
 * the post ring's header counts it (`unseen`), so the library's count of
 * outstanding buffers stays exact without asking the kernel.
 */
void kdat_srq_reaped_unseen(struct kdat_srq *srq)
{
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	srq->outstanding--;
	if (srq->uring) {
		/* pairs with the acquire in PostProducer::unseen() */
		smp_store_release(&kdat_uring_hdr(srq->uring)->unseen,
				  ++srq->unseen);
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	kdat_obj_put(&srq->obj);
}

/* No buffer can be posted: the SRQ is in the error state or has no device. */
static bool kdat_srq_broken(struct kdat_srq *srq)
{
	lockdep_assert_held(&srq->lock);
	return !srq->srq || srq->state == DAT_SRQ_STATE_ERROR ||
	       kdat_ia_dead(srq->obj.ia);
}

/*
 * Tell a /dev/kdat user's post path that the SRQ takes no buffer any more
 * (KDAT_RING_SRQ_ERROR), so its posts fail as the ioctl's do.  Any context;
 * srq->lock not held.
 */
static void kdat_srq_ring_mark_error(struct kdat_srq *srq)
{
	struct kdat_ring_hdr *h;
	unsigned long flags;

	if (!srq->uring)
		return;
	h = kdat_uring_hdr(srq->uring);
	spin_lock_irqsave(&srq->ring_lock, flags);
	WRITE_ONCE(h->flags, READ_ONCE(h->flags) | KDAT_RING_SRQ_ERROR);
	spin_unlock_irqrestore(&srq->ring_lock, flags);
}

/* The key of a QP in its SRQ's table: its address, never dereferenced. */
unsigned long kdat_qp_key(const struct ib_qp *qp)
{
	return ((unsigned long)qp - PAGE_OFFSET) >> 3;
}

/*
 * Entries of a /dev/kdat user's post ring that a drain left there (under
 * ring_lock, so no drain moves them into the SRQ while the caller, holding
 * it and then srq->lock, counts them beside `available`): the SRQ
 * seemed full (its count still held buffers whose events the user had
 * consumed on another EVD; that count is collected per IA, under a mutex,
 * not in a completion), or a refusal waits for room on the async EVD.
 * The tail is the user's: clamped to one ring's worth (a user who lies
 * only keeps its own watermark event away).
 */
static u32 kdat_srq_ring_left(struct kdat_srq *srq)
{
	struct kdat_uring *r = srq->uring;
	u32 head, tail;

	lockdep_assert_held(&srq->ring_lock);
	if (!r)
		return 0;
	head = srq->ring_head;
	tail = kdat_ring_clamp_tail(head, READ_ONCE(kdat_uring_hdr(r)->tail),
				    kdat_uring_mask(r) + 1);
	/* a refusal held for room on the async EVD is no buffer */
	return tail - head - (tail != head && srq->ring_refusal);
}

/*
 * What dat_srq_query and dat_srq_resize count beside the SRQ's own
 * counts (ring_lock, then srq->lock): the entries held in the post ring
 * behind a refusal that waits for room on the async EVD, which the drain
 * would otherwise have moved into the SRQ, as many as the SRQ has room
 * for.  Not entries left for want of room: they are not on the SRQ (and
 * a buffer the user reaped but the kernel has not collected yet would
 * count twice, in `outstanding` and as its re-post).
 */
static u32 kdat_srq_ring_held(struct kdat_srq *srq)
{
	s64 room = (s64)srq->max_recv_dtos - srq->outstanding;

	lockdep_assert_held(&srq->lock);
	if (!srq->ring_refusal || room <= 0)
		return 0;
	return min_t(s64, kdat_srq_ring_left(srq), room);
}

/*
 * A buffer of this SRQ completed on some EP: report it on that EP's recv
 * EVD with that EP's handle (not the SRQ's), successful or flushed.
 *
 * The EP is found through the SRQ's table of its QPs, by the completion's
 * QP address, without touching the QP: a device that raises no
 * LAST_WQE_REACHED (rxe) can complete a flushed buffer after the QP was
 * destroyed.  Such a buffer is counted back (it is no longer available
 * nor outstanding) but reported to no one: its EP is gone.  Its address
 * stays taken in the table until the CQ was polled past it
 * (kdat_srq_qp_gone), so a new QP made there meanwhile is never named.
 */
KDAT_DATA_PATH(kdat_srq_recv_done, 1024)
void kdat_srq_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kdat_srq_buf *buf = container_of(wc->wr_cqe,
						struct kdat_srq_buf, cqe);
	struct kdat_srq *srq = buf->srq;
	struct kdat_ep *ep;
	DAT_EVENT ev = {};
	unsigned long flags;
	bool fire;

	rcu_read_lock();
	ep = xa_load(&srq->qps, kdat_qp_key(wc->qp));
	if (xa_is_value(ep) || (ep && !kref_get_unless_zero(&ep->obj.ref)))
		ep = NULL;
	rcu_read_unlock();

	ev.event_number = DAT_DTO_COMPLETION_EVENT;
	ev.event_data.dto_completion_event_data.ep_handle = ep;
	ev.event_data.dto_completion_event_data.status =
		kdat_wc_status(wc->status);
	ev.event_data.dto_completion_event_data.transfered_length =
		wc->status == IB_WC_SUCCESS ? wc->byte_len : 0;
	kdat_dto_recv_op(wc, &ev.event_data.dto_completion_event_data);

	spin_lock_irqsave(&srq->lock, flags);
	ev.event_data.dto_completion_event_data.user_cookie = buf->cookie;
	list_add(&buf->node, &srq->free_bufs);
	srq->available--;
	/* a kernel consumer's SRQ has no post ring: every buffer is counted */
	fire = !srq->uring && kdat_srq_check_lw(srq, 0);
	spin_unlock_irqrestore(&srq->lock, flags);

	/* the queued event pins the SRQ until it is reaped */
	kdat_obj_hold(&srq->obj);
	if (ep && ep->recv_evd)
		kdat_evd_post(ep->recv_evd, &ev, srq, true);
	else	/* nobody listens: reaped now */
		kdat_srq_reaped_unseen(srq);
	if (srq->uring) {
		/*
		 * A buffer was taken: refill from the user's post ring, then
		 * look at the watermark.  What dat_srq_post_recv accepted is
		 * on the SRQ for the consumer, so buffers still in the ring
		 * count, also those the drain left there.  With bottom halves
		 * off (a user EVD's poller, or a flush of its CQ) one batch:
		 * the user sizes the ring, and drain_work moves the rest.
		 */
		__kdat_srq_drain(srq, !in_task() || in_softirq());
		spin_lock_irqsave(&srq->ring_lock, flags);
		spin_lock(&srq->lock);
		fire = kdat_srq_check_lw(srq, kdat_srq_ring_left(srq));
		spin_unlock(&srq->lock);
		spin_unlock_irqrestore(&srq->ring_lock, flags);
	}
	/*
	 * Not from the SRQ's own CQ: an upcall there that freed the SRQ
	 * would wait in ib_free_cq for the work it runs in.
	 */
	if (fire)
		kdat_srq_fire_lw(srq, cq != READ_ONCE(srq->recv_cq));
	if (ep)
		kdat_obj_put(&ep->obj);
}

/*
 * The poll of a destroyed SRQ QP's recv CQ, for a teardown that ran in an
 * upcall of a CQ's poller (kdat_srq_qp_gone).  It holds the SRQ; the CQ
 * stays until it ran: a free of an EVD's or SRQ's CQ waits for those of
 * its CQ first (kdat_srq_qp_gone_sync), listed here until they end.
 * Module exit drains the queue.
 */
static struct workqueue_struct *kdat_qp_gone_wq;
static DEFINE_SPINLOCK(kdat_qp_gone_lock);
static LIST_HEAD(kdat_qp_gone_list);

struct kdat_qp_gone {
	struct work_struct work;
	struct list_head node;		/* kdat_qp_gone_list */
	struct kdat_srq *srq;
	struct ib_cq *cq;
	unsigned long key;
};

static void kdat_srq_qp_gone_now(struct kdat_srq *srq, unsigned long key,
				 struct ib_cq *cq)
{
	kdat_cq_flush(cq);
	xa_cmpxchg(&srq->qps, key, KDAT_QP_GONE, NULL, GFP_KERNEL);
}

static void kdat_srq_qp_gone_work(struct work_struct *w)
{
	struct kdat_qp_gone *g = container_of(w, struct kdat_qp_gone, work);

	kdat_srq_qp_gone_now(g->srq, g->key, g->cq);
	/* first: a close that waits for the CQ's free finds the SRQ gone */
	kdat_obj_put(&g->srq->obj);
	spin_lock(&kdat_qp_gone_lock);
	list_del(&g->node);
	spin_unlock(&kdat_qp_gone_lock);
	smp_mb();	/* the list before wake_up_var's waiter check */
	wake_up_var(&kdat_qp_gone_list);
	kfree(g);
}

/*
 * The SRQ QP of @key was destroyed (its EP's teardown marked it
 * KDAT_QP_GONE when it took the QP): deliver what its recv CQ @cq holds,
 * completions naming the address among them, then give the address back.
 * Until then kdat_ep_create_qp does not use a QP made there.  In place,
 * or, from an upcall a CQ's poller runs (maybe @cq's own, which would
 * wait for itself), in a work item.
 */
void kdat_srq_qp_gone(struct kdat_srq *srq, unsigned long key,
		      struct ib_cq *cq)
{
	struct kdat_qp_gone *g;

	if (!kdat_in_a_cq_poller()) {
		kdat_srq_qp_gone_now(srq, key, cq);
		return;
	}
	/* small, and without it the address would stay taken for good */
	g = kmalloc(sizeof(*g), GFP_KERNEL | __GFP_NOFAIL);
	INIT_WORK(&g->work, kdat_srq_qp_gone_work);
	kdat_obj_hold(&srq->obj);
	g->srq = srq;
	g->cq = cq;
	g->key = key;
	spin_lock(&kdat_qp_gone_lock);
	list_add(&g->node, &kdat_qp_gone_list);
	spin_unlock(&kdat_qp_gone_lock);
	queue_work(kdat_qp_gone_wq, &g->work);
}

static bool kdat_srq_qp_gone_pending(struct ib_cq *cq)
{
	struct kdat_qp_gone *g;
	bool found = false;

	spin_lock(&kdat_qp_gone_lock);
	list_for_each_entry(g, &kdat_qp_gone_list, node)
		if (g->cq == cq) {
			found = true;
			break;
		}
	spin_unlock(&kdat_qp_gone_lock);
	return found;
}

/*
 * Before @cq (an EVD's or SRQ's) is freed: a kdat_srq_qp_gone work may
 * still poll it.  Only those of @cq: another CQ's poller, stuck in its
 * consumer's upcall, holds up no one else's free.  Not from such a work,
 * nor from a CQ's poller.
 */
void kdat_srq_qp_gone_sync(struct ib_cq *cq)
{
	wait_var_event(&kdat_qp_gone_list, !kdat_srq_qp_gone_pending(cq));
}

static int kdat_srq_add_bufs(struct kdat_srq *srq, DAT_COUNT n)
{
	struct kdat_srq_chunk *c;
	unsigned long flags;
	DAT_COUNT i;

	c = kvzalloc(struct_size(c, bufs, n), GFP_KERNEL_ACCOUNT);
	if (!c)
		return -ENOMEM;
	c->n = n;
	for (i = 0; i < n; i++) {
		c->bufs[i].srq = srq;
		c->bufs[i].cqe.done = kdat_srq_recv_done;
	}
	spin_lock_irqsave(&srq->lock, flags);
	list_add(&c->node, &srq->chunks);
	for (i = 0; i < n; i++)
		list_add_tail(&c->bufs[i].node, &srq->free_bufs);
	srq->nbufs += n;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

/*
 * Arm the device's SRQ limit at srq->hw_limit: the next buffer the device
 * takes with fewer than that left raises IB_EVENT_SRQ_LIMIT_REACHED (once;
 * the event disarms it).  Under resize_lock, which keeps the ib_srq.
 * False if the device refused.
 */
static bool kdat_srq_arm_limit(struct kdat_srq *srq)
{
	struct ib_srq_attr sa = { .srq_limit = srq->hw_limit };

	lockdep_assert_held(&srq->resize_lock);
	if (!srq->hw_limit || !srq->srq)
		return true;
	if (ib_modify_srq(srq->srq, &sa, IB_SRQ_LIMIT)) {
		atomic_long_inc(&kdat_limit_arm_errors);
		return false;
	}
	atomic_long_inc(&kdat_limit_arms);
	return true;
}

/* The device limit of a user SRQ of @max receives. */
static u32 kdat_srq_hw_limit_for(DAT_COUNT max)
{
	return max_t(u32, 1, max / 4);
}

/*
 * Arm the limit again (the event disarmed it), then drain what reached the
 * ring while it was disarmed.  Holds a reference on the SRQ, taken when it
 * was queued.  A destroyed SRQ's ring is left alone (draining it would
 * refuse its entries after dat_srq_free); the drain runs outside
 * resize_lock, as every other drain does (it may drop the last reference
 * of an EVD, whose release takes the file's lock).
 */
static void kdat_srq_limit_work(struct work_struct *w)
{
	struct kdat_srq *srq = container_of(w, struct kdat_srq, limit_work);
	bool alive;

	mutex_lock(&srq->resize_lock);
	alive = srq->srq;
	kdat_srq_arm_limit(srq);
	mutex_unlock(&srq->resize_lock);
	if (alive)
		__kdat_srq_drain(srq, false);
	kdat_obj_put(&srq->obj);
}

/*
 * IB_EVENT_SRQ_LIMIT_REACHED: the device took a buffer and has fewer than
 * hw_limit left.  Any context (rxe: its responder, before the completion
 * of that buffer exists; an HCA: its event interrupt).  Move one batch of
 * what waits in the post ring into the SRQ now, then have the limit armed
 * again and the rest drained by the work item.  With
 * nothing in the ring no kick is asked for before the SRQ is empty: a
 * kick is a system call per post, which costs more than the completions
 * that drain the ring anyway (measured on rxe: more RNR NAKs, not fewer).
 */
static void kdat_srq_limit_reached(struct kdat_srq *srq)
{
	if (!srq->uring)
		return;		/* a kernel SRQ arms no limit */
	atomic_long_inc(&kdat_limit_events);
	atomic_long_add(__kdat_srq_drain(srq, true), &kdat_limit_drained);
	kdat_obj_queue_work(&srq->obj, kdat_ring_wq, &srq->limit_work);
}

/* The receive CQ is gone: a second hw_destroy waiting for it returns. */
static void kdat_srq_recv_cq_freed(struct kdat_srq *srq)
{
	/* pairs with the acquire in kdat_srq_hw_destroy */
	smp_store_release(&srq->recv_cq_freeing, false);
	smp_mb();	/* the store before wake_up_var's waiter check */
	wake_up_var(&srq->recv_cq_freeing);
}

/*
 * The receive CQ of an SRQ freed from an upcall a CQ's poller ran:
 * ib_free_cq there waits for another run of CQ work, which lockdep (one
 * class for every CQ's work) reports as recursion.  This work frees it
 * instead.  It holds the SRQ and counts as a free in flight (ia->frees):
 * an IA close and a device removal wait until the CQ is gone.  Module
 * exit drains kdat_ring_wq.
 */
static void kdat_srq_cq_free_work(struct work_struct *w)
{
	struct kdat_srq *srq = container_of(w, struct kdat_srq, cq_free_work);

	kdat_srq_qp_gone_sync(srq->cq_dying);
	ib_free_cq(srq->cq_dying);
	srq->cq_dying = NULL;
	kdat_srq_recv_cq_freed(srq);
	kdat_free_end(&srq->obj);
	kdat_obj_put(&srq->obj);
}

/*
 * What a drain left in the post ring when it used up its budget (a user
 * who keeps rewriting the tail cannot keep one call running): drained
 * here, in process context, one budget at a time.  Holds a reference on
 * the SRQ, taken when it was queued; a destroyed SRQ's ring is left alone.
 */
static void kdat_srq_drain_work(struct work_struct *w)
{
	struct kdat_srq *srq = container_of(to_delayed_work(w), struct kdat_srq,
					    drain_work);
	bool alive;

	mutex_lock(&srq->resize_lock);
	alive = srq->srq;
	mutex_unlock(&srq->resize_lock);
	if (alive)
		__kdat_srq_drain(srq, false);
	kdat_obj_put(&srq->obj);
}

/* Drains that used up their budget and left the rest to a work item. */
atomic_long_t kdat_ring_spills[2];

static int kdat_ring_spills_show(struct seq_file *m, void *v)
{
	seq_printf(m, "srq %ld\nep %ld\n",
		   atomic_long_read(&kdat_ring_spills[KDAT_SPILL_SRQ]),
		   atomic_long_read(&kdat_ring_spills[KDAT_SPILL_EP]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kdat_ring_spills);

static int kdat_srq_limit_show(struct seq_file *m, void *v)
{
	seq_printf(m, "events %ld\ndrained %ld\narms %ld\narm_errors %ld\n",
		   atomic_long_read(&kdat_limit_events),
		   atomic_long_read(&kdat_limit_drained),
		   atomic_long_read(&kdat_limit_arms),
		   atomic_long_read(&kdat_limit_arm_errors));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kdat_srq_limit);

/* After kdat_debugfs_init: the counters go next to kdat/objects. */
int kdat_srq_init(void)
{
	struct dentry *dir;

	kdat_ring_wq = alloc_workqueue("kdat_ring", WQ_UNBOUND, 0);
	if (!kdat_ring_wq)
		return -ENOMEM;
	kdat_qp_gone_wq = alloc_workqueue("kdat_qp_gone", WQ_UNBOUND, 0);
	if (!kdat_qp_gone_wq) {
		destroy_workqueue(kdat_ring_wq);
		return -ENOMEM;
	}
	dir = debugfs_lookup("kdat", NULL);
	if (!IS_ERR_OR_NULL(dir)) {	/* an error without CONFIG_DEBUG_FS */
		debugfs_create_file("srq_limit", 0444, dir, NULL,
				    &kdat_srq_limit_fops);
		debugfs_create_file("ring_spills", 0444, dir, NULL,
				    &kdat_ring_spills_fops);
		dput(dir);
	}
	return 0;
}

/*
 * Runs what is queued (each drops its SRQ reference) before unload.  A
 * ring drain's delayed work (drain_work, sring_work) is never left with
 * its timer armed here: only objects of a /dev/kdat file queue one, and
 * their frees, all done before the file can close, cancel it.
 */
void kdat_srq_exit(void)
{
	destroy_workqueue(kdat_qp_gone_wq);	/* each holds an SRQ */
	destroy_workqueue(kdat_ring_wq);
}

/*
 * The device put the SRQ into the error state: it takes no buffer any
 * more (dat_srq_post_recv: DAT_INSUFFICIENT_RESOURCES), query reports
 * DAT_SRQ_STATE_ERROR, resize and set_lw are DAT_INVALID_STATE, free
 * works.  Reported once, as an asynchronous error naming the SRQ with
 * reason DAT_SRQ_TRANSFER_TO_ERROR.
 */
static void kdat_srq_event(struct ib_event *e, void *ctx)
{
	struct kdat_srq *srq = ctx;
	unsigned long flags;
	bool report;

	if (e->event == IB_EVENT_SRQ_LIMIT_REACHED) {
		kdat_srq_limit_reached(srq);
		return;
	}
	if (e->event != IB_EVENT_SRQ_ERR)
		return;
	spin_lock_irqsave(&srq->lock, flags);
	report = srq->state != DAT_SRQ_STATE_ERROR;
	srq->state = DAT_SRQ_STATE_ERROR;
	spin_unlock_irqrestore(&srq->lock, flags);
	kdat_srq_ring_mark_error(srq);
	/* may run in atomic context: the upcall goes through a work item */
	if (report)
		kdat_ia_async_error(srq->obj.ia,
				    DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
				    srq, DAT_SRQ_TRANSFER_TO_ERROR, false);
}

/*
 * For the test consumer: what the device does when an SRQ fails
 * (IB_EVENT_SRQ_ERR), through the SRQ's own event handler.
 */
DAT_RETURN kdat_test_srq_error(DAT_SRQ_HANDLE h)
{
	struct kdat_obj *o = kdat_obj_get(h, DAT_HANDLE_TYPE_SRQ);
	struct kdat_srq *srq;
	struct ib_event e = { .event = IB_EVENT_SRQ_ERR };

	if (!o)
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
	srq = container_of(o, struct kdat_srq, obj);
	e.device = srq->obj.ia->ibdev;
	e.element.srq = srq->srq;
	kdat_srq_event(&e, srq);
	kdat_obj_put(o);
	return DAT_SUCCESS;
}
EXPORT_SYMBOL_GPL(kdat_test_srq_error);

static void kdat_srq_release(struct kdat_obj *obj)
{
	struct kdat_srq *srq = container_of(obj, struct kdat_srq, obj);
	struct kdat_srq_chunk *c, *t;

	list_for_each_entry_safe(c, t, &srq->chunks, node)
		kvfree(c);
	xa_destroy(&srq->qps);
	if (srq->uring)
		obj->ia->uops->ring_free(srq->uring);
	if (srq->pz)
		kdat_obj_put(&srq->pz->obj);
}

DAT_RETURN kdat_ib_srq_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_handle,
			      DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *srq_handle)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);
	const struct ib_device_attr *d = &ia->ibdev->attrs;
	struct ib_srq_init_attr init = {};
	DAT_SRQ_ATTR a;
	struct kdat_srq *srq;
	struct kdat_pz *pz;
	DAT_RETURN ret;
	bool fire;
	int err;

	ret = kdat_pz_use(ia, pz_handle, &pz);
	if (ret != DAT_SUCCESS)
		return ret;
	if (!attr || !srq_handle) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER,
			       attr ? DAT_INVALID_ARG4 : DAT_INVALID_ARG3);
		goto err_pz;
	}
	if (!d->max_srq) {
		ret = KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
		goto err_pz;
	}
	/* DAT_HW_DEFAULT: the provider's choice, reported by dat_srq_query */
	a = *attr;
	attr = &a;
	if (a.max_recv_dtos == DAT_HW_DEFAULT)
		a.max_recv_dtos = min_t(int, d->max_srq_wr,
					KDAT_SRQ_DEFAULT_DTOS);
	if (a.max_recv_iov == DAT_HW_DEFAULT)
		a.max_recv_iov = min_t(int, d->max_srq_sge, KDAT_SRQ_MAX_IOV);
	if (a.low_watermark == DAT_HW_DEFAULT)
		a.low_watermark = DAT_SRQ_LW_DEFAULT;
	if (attr->max_recv_dtos <= 0 || attr->max_recv_dtos > d->max_srq_wr ||
	    attr->max_recv_iov <= 0 ||
	    attr->max_recv_iov > min_t(int, d->max_srq_sge,
				       KDAT_SRQ_MAX_IOV) ||
	    attr->low_watermark < 0 ||
	    attr->low_watermark > attr->max_recv_dtos) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
		goto err_pz;
	}

	srq = kzalloc(sizeof(*srq), GFP_KERNEL_ACCOUNT);
	if (!srq) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_pz;
	}
	kdat_obj_init(&srq->obj, DAT_HANDLE_TYPE_SRQ, ia->obj.provider, ia,
		      kdat_srq_release);
	srq->pz = pz;			/* the PZ reference moves to the SRQ */
	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->ring_lock);
	mutex_init(&srq->resize_lock);
	INIT_WORK(&srq->limit_work, kdat_srq_limit_work);
	INIT_DELAYED_WORK(&srq->drain_work, kdat_srq_drain_work);
	INIT_WORK(&srq->cq_free_work, kdat_srq_cq_free_work);
	INIT_LIST_HEAD(&srq->free_bufs);
	INIT_LIST_HEAD(&srq->chunks);
	xa_init_flags(&srq->qps, XA_FLAGS_ACCOUNT);
	srq->state = DAT_SRQ_STATE_OPERATIONAL;
	srq->max_recv_dtos = attr->max_recv_dtos;
	srq->cq_charge = attr->max_recv_dtos;
	srq->max_recv_iov = attr->max_recv_iov;

	if (kdat_srq_add_bufs(srq, attr->max_recv_dtos)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_obj;
	}
	if (ia->uops && ia->uops->srq_init(srq)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_obj;
	}
	init.event_handler = kdat_srq_event;
	init.srq_context = srq;
	init.srq_type = IB_SRQT_BASIC;
	init.attr.max_wr = attr->max_recv_dtos;
	init.attr.max_sge = attr->max_recv_iov;
	srq->srq = ib_create_srq(pz->pd, &init);
	if (IS_ERR(srq->srq)) {
		srq->srq = NULL;
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
		goto err_obj;
	}
	srq->dma_lkey = pz->pd->local_dma_lkey;
	if (srq->uring) {
		/* no limit on a device without one: completions still drain */
		mutex_lock(&srq->resize_lock);
		srq->hw_limit = kdat_srq_hw_limit_for(attr->max_recv_dtos);
		if (!kdat_srq_arm_limit(srq))
			srq->hw_limit = 0;
		mutex_unlock(&srq->resize_lock);
	}
	if (kdat_obj_publish(&srq->obj)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_hw;
	}
	err = kdat_ia_link(ia, &srq->obj);
	if (err) {
		kdat_obj_unpublish(&srq->obj);
		ret = kdat_ia_link_error(err);
		goto err_hw;
	}

	/* a non-default watermark at create is armed like set_lw does */
	spin_lock_irq(&srq->lock);
	srq->low_watermark = attr->low_watermark;
	srq->lw_armed = attr->low_watermark != DAT_SRQ_LW_DEFAULT;
	fire = kdat_srq_check_lw(srq, 0);
	spin_unlock_irq(&srq->lock);
	*srq_handle = srq;
	if (fire)
		kdat_srq_fire_lw(srq, false);
	kdat_obj_put(&srq->obj);
	return DAT_SUCCESS;

err_hw:
	/* a post that found the handle meanwhile leaves first */
	kdat_obj_drain_uses(&srq->obj);
	ib_destroy_srq(srq->srq);
	srq->srq = NULL;
err_obj:
	atomic_dec(&pz->users);
	kdat_obj_put(&srq->obj);	/* drops the PZ reference too */
	return ret;
err_pz:
	kdat_pz_unuse(pz);
	return ret;
}

/*
 * Validate one receive and post it: the only way buffers reach the SRQ.
 * Under RCU (the LMR lookups): dat_srq_post_recv's call section is an
 * RCU section already.
 */
KDAT_DATA_PATH(kdat_srq_post_one, 1024)
DAT_RETURN kdat_srq_post_one(struct kdat_srq *srq, DAT_COUNT n,
			     const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie)
{
	struct ib_sge sge[KDAT_SRQ_MAX_IOV] __uninitialized;	/* [0, n) set */
	struct kdat_ia *ia = srq->obj.ia;
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {};
	struct kdat_srq_buf *buf;
	unsigned long flags;
	DAT_RETURN ret;
	DAT_COUNT i;

	RCU_LOCKDEP_WARN(!rcu_read_lock_any_held(), "SRQ post outside RCU");
	if (n < 0 || n > srq->max_recv_iov)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (n && !iov)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	for (i = 0; i < n; i++) {
		ret = kdat_lmr_to_sge_rcu(ia, srq->pz, &iov[i], &sge[i],
					  DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
		if (ret != DAT_SUCCESS)
			return ret;
		/* kernel memory is addressed through the PD's DMA lkey */
		if (!ia->ufile)
			sge[i].lkey = srq->dma_lkey;
	}
	wr.sg_list = sge;
	wr.num_sge = n;

	spin_lock_irqsave(&srq->lock, flags);
	/*
	 * The call is valid in every state of the SRQ (its page lists no
	 * DAT_INVALID_STATE): an SRQ in the error state, or whose device is
	 * gone, has no room for a buffer, and the consumer keeps it.
	 */
	if (kdat_srq_broken(srq)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
		goto out;
	}
	if (srq->outstanding >= srq->max_recv_dtos ||
	    list_empty(&srq->free_bufs)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
		goto out;
	}
	buf = list_first_entry(&srq->free_bufs, struct kdat_srq_buf, node);
	buf->cookie = cookie;
	wr.wr_cqe = &buf->cqe;
	if (ib_post_srq_recv(srq->srq, &wr, &bad)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
		goto out;
	}
	list_del(&buf->node);
	srq->available++;
	srq->outstanding++;
	ret = DAT_SUCCESS;
out:
	spin_unlock_irqrestore(&srq->lock, flags);
	return ret;
}

KDAT_DATA_PATH(kdat_ib_srq_post_recv, 16)
DAT_RETURN kdat_ib_srq_post_recv(DAT_SRQ_HANDLE h, DAT_COUNT n,
				 DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie)
{
	return kdat_srq_post_one(container_of((struct kdat_obj *)h,
					      struct kdat_srq, obj),
				 n, iov, cookie);
}

/*
 * Move what a /dev/kdat user wrote to its post ring into the SRQ.  Runs on
 * every receive completion, on a kick and before a query.  The tail is the
 * user's: read once, clamped to one ring's worth; each entry is copied
 * once before it is checked; a refused entry goes back to the user as an
 * error event instead of being posted.  When the SRQ has no buffer left
 * the ring asks the user to kick after its next post.
 */
KDAT_DATA_PATH(__kdat_srq_drain, 2048)
static u32 __kdat_srq_drain(struct kdat_srq *srq, bool one_batch)
{
	struct kdat_uring *r = srq->uring;
	DAT_LMR_TRIPLET t[KDAT_MAX_IOV];
	struct kdat_ring_hdr *h;
	struct kdat_srq_wqe *w;
	unsigned long flags;
	u32 head, tail, raw, n, max_seg, batch, budget;
	bool retried = false, blocked = false, broken, more = false;
	bool rest = false;
	DAT_DTO_COOKIE c;
	DAT_RETURN ret;
	u32 posted = 0;

	if (!r)
		return 0;
	h = kdat_uring_hdr(r);
	max_seg = kdat_uring_max_seg(r);
	/*
	 * KDAT_DRAIN_RINGS rings' worth of entries per call, however often
	 * the user rewrites its tail meanwhile: the rest goes to drain_work.
	 * More than a producer that waits for our published head can write
	 * while one call runs, so what was posted before a query is drained
	 * by that query.
	 */
	budget = KDAT_DRAIN_RINGS * (kdat_uring_mask(r) + 1);
	spin_lock_irqsave(&srq->ring_lock, flags);
	head = srq->ring_head;
again:
	/*
	 * Freed: nothing is refused or reported any more (a completion
	 * still in the CQ, or the limit's work, may drain after the free).
	 */
	if (srq->ring_freed) {
		spin_unlock_irqrestore(&srq->ring_lock, flags);
		return posted;
	}
	kdat_fault_rewrite_tail(h, head, kdat_uring_mask(r) + 1);
	/* pairs with the tail exchange in PostProducer::publish() */
	raw = smp_load_acquire(&h->tail);
	tail = kdat_ring_clamp_tail(head, raw, kdat_uring_mask(r) + 1);
	batch = 0;
	while (head != tail) {
		if (!budget) {
			more = true;
			break;
		}
		/*
		 * The user sizes the ring: let interrupts in every
		 * KDAT_DRAIN_BATCH entries (the head is ours, published
		 * before the lock drops, so another drainer resumes here).
		 */
		if (++batch > KDAT_DRAIN_BATCH) {
			/*
			 * a device event (maybe a hard IRQ) or a softirq
			 * poller: drain_work drains the rest
			 */
			if (one_batch) {
				rest = true;
				break;
			}
			srq->ring_head = head;
			/* a refusal held before is behind us: passed */
			srq->ring_refusal = false;
			/* as below: pairs with PostProducer::pending() */
			smp_store_release(&h->head, head);
			spin_unlock_irqrestore(&srq->ring_lock, flags);
			cond_resched_if_sleepable();
			spin_lock_irqsave(&srq->ring_lock, flags);
			head = srq->ring_head;
			goto again;
		}
		budget--;
		w = kdat_uring_entry(r, head);
		c.as_64 = READ_ONCE(w->cookie);
		n = READ_ONCE(w->nseg);
		spin_lock(&srq->lock);
		broken = kdat_srq_broken(srq);
		spin_unlock(&srq->lock);
		if (broken) {
			/* what dat_srq_post_recv says in this state */
			ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES,
				       DAT_RESOURCE_SRQ);
		} else if (n > max_seg) {
			/* never read past this entry's own segments */
			ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		} else {
			kdat_useg_to_triplets(w->seg, n, t);
			rcu_read_lock();
			ret = kdat_srq_post_one(srq, n, t, c);
			rcu_read_unlock();
			/* full: leave it for the next drain, nothing is lost */
			if (DAT_GET_TYPE(ret) == DAT_INSUFFICIENT_RESOURCES)
				break;
			if (ret == DAT_SUCCESS)
				posted++;
		}
		/*
		 * A refused entry is reported on the async EVD, or - that
		 * ring full - left in the post ring until the consumer made
		 * room: a refusal is never dropped.
		 */
		if (ret != DAT_SUCCESS &&
		    !srq->obj.ia->uops->srq_ring_error(srq, c.as_64, ret)) {
			blocked = true;
			break;
		}
		head++;
	}
	srq->ring_head = head;
	srq->ring_refusal = blocked;
	/* the entries are read: pairs with PostProducer::pending()'s acquire */
	smp_store_release(&h->head, head);
	/*
	 * No buffer left on the SRQ (whether or not entries wait in the ring
	 * for room) while an EP could take one: ask the user to kick after
	 * its next post, so a buffer it re-posts after reaping an event gets
	 * drained.  An SRQ without EPs needs no kick: whatever waits in the
	 * ring is drained when an EP joins (and again when it is accepted or
	 * connects), before any message can arrive.
	 */
	spin_lock(&srq->lock);
	broken = kdat_srq_broken(srq);
	spin_unlock(&srq->lock);
	if (blocked ||
	    (READ_ONCE(srq->available) == 0 && atomic_read(&srq->eps))) {
		WRITE_ONCE(h->flags, KDAT_RING_NEED_KICK |
			   (broken ? KDAT_RING_SRQ_ERROR : 0));
		/*
		 * Pairs with the user's fence between its tail and flags: a
		 * post that raced with the flag is drained now.  Once only, so
		 * a user rewriting its tail cannot keep us here.
		 */
		smp_mb();
		if (!blocked && READ_ONCE(h->tail) != raw && !retried) {
			retried = true;
			goto again;
		}
	} else {
		WRITE_ONCE(h->flags, broken ? KDAT_RING_SRQ_ERROR : 0);
	}
	spin_unlock_irqrestore(&srq->ring_lock, flags);
	if (more)
		atomic_long_inc(&kdat_ring_spills[KDAT_SPILL_SRQ]);
	if (more || rest)
		kdat_obj_queue_drain(&srq->obj, kdat_ring_wq, &srq->drain_work);
	return posted;
}

void kdat_srq_drain(struct kdat_srq *srq)
{
	__kdat_srq_drain(srq, false);
}

DAT_RETURN kdat_ib_srq_query(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK mask,
			     DAT_SRQ_PARAM *p)
{
	struct kdat_srq *srq = container_of((struct kdat_obj *)h,
					    struct kdat_srq, obj);
	unsigned long flags;
	u32 in_ring;

	if (mask & ~DAT_SRQ_FIELD_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!p)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	/* buffers held in the post ring are posted (a drain's lock order) */
	spin_lock_irqsave(&srq->ring_lock, flags);
	spin_lock(&srq->lock);
	in_ring = kdat_srq_ring_held(srq);
	p->ia_handle = srq->obj.ia;
	p->srq_state = kdat_srq_broken(srq) ? DAT_SRQ_STATE_ERROR : srq->state;
	p->pz_handle = srq->pz;
	p->max_recv_dtos = srq->max_recv_dtos;
	p->max_recv_iov = srq->max_recv_iov;
	p->low_watermark = srq->low_watermark;
	p->available_dto_count = srq->available + in_ring;
	p->outstanding_dto_count = srq->outstanding + in_ring;
	spin_unlock(&srq->lock);
	spin_unlock_irqrestore(&srq->ring_lock, flags);
	return DAT_SUCCESS;
}

/* The size of recv_cq for @n receives (the device's largest at most). */
static int kdat_srq_recv_cq_size(struct kdat_srq *srq, DAT_COUNT n)
{
	return min(n + 1, srq->obj.ia->ibdev->attrs.max_cqe);
}

/*
 * The CQ of the receives of the SRQ's EPs that have no recv EVD: one per
 * SRQ, made by the first such EP, sized for all the SRQ's receives and
 * grown with it (kdat_srq_cq_grow), freed with the ib_srq.
 */
struct ib_cq *kdat_srq_recv_cq(struct kdat_srq *srq)
{
	struct ib_cq *cq;

	mutex_lock(&srq->resize_lock);
	cq = srq->recv_cq;
	if (!srq->srq) {
		cq = ERR_PTR(-ENODEV);
	} else if (!cq) {
		cq = ib_alloc_cq(srq->obj.ia->ibdev, srq,
				 kdat_srq_recv_cq_size(srq, srq->cq_charge), 0,
				 IB_POLL_WORKQUEUE);
		if (!IS_ERR(cq))
			srq->recv_cq = cq;
	}
	mutex_unlock(&srq->resize_lock);
	return cq;
}

/* @o if it is an EVD whose completions may name the SRQ of @key, or NULL. */
static struct kdat_evd *kdat_srq_pinning_evd(struct kdat_obj *o,
					     unsigned long key)
{
	struct kdat_evd *evd = container_of(o, struct kdat_evd, obj);

	return o->type == DAT_HANDLE_TYPE_EVD && xa_load(&evd->srqs, key) ?
	       evd : NULL;
}

/*
 * Charge the growth to @max receives to the CQ of every EVD whose
 * completions may name the SRQ (ep.c pins it there), before the device
 * may hold them: the CQs must still fit a QP's flush and drain marker
 * beside all the SRQ's receives (kdat_evd_cq_charge).  All or nothing
 * for the charges; CQs grown before a refusal keep their size (a CQ never
 * shrinks), and a user EVD's its count against the file's cap.
 */
static int kdat_srq_cq_grow(struct kdat_srq *srq, DAT_COUNT max)
{
	struct kdat_ia *ia = srq->obj.ia;
	unsigned long key = kdat_obj_key(&srq->obj);
	struct kdat_evd *evd;
	struct kdat_obj *o;
	int n, ret = 0;

	lockdep_assert_held(&srq->resize_lock);
	mutex_lock(&ia->lock);
	n = max - srq->cq_charge;
	if (n <= 0)
		goto out;
	if (srq->recv_cq) {
		ret = kdat_cq_grow(srq->recv_cq,
				   kdat_srq_recv_cq_size(srq, max));
		if (ret)
			goto out;
	}
	list_for_each_entry(o, &ia->objs, ia_node) {
		evd = kdat_srq_pinning_evd(o, key);
		ret = evd ? kdat_evd_cq_charge(evd, n) : 0;
		if (ret)
			break;
	}
	if (!ret) {
		WRITE_ONCE(srq->cq_charge, max);
		goto out;
	}
	list_for_each_entry_continue_reverse(o, &ia->objs, ia_node) {
		evd = kdat_srq_pinning_evd(o, key);
		if (evd)
			kdat_evd_cq_uncharge(evd, n);
	}
out:
	mutex_unlock(&ia->lock);
	return ret;
}

/*
 * Resize never loses a buffer: it refuses below the outstanding count or
 * the watermark.  Growing grows the ib_srq and the tracker pool; shrinking
 * lowers the limit and asks the device to shrink, which it may decline
 * (the seed allows success without shrinking).
 */
DAT_RETURN kdat_ib_srq_resize(DAT_SRQ_HANDLE h, DAT_COUNT max)
{
	struct kdat_srq *srq = container_of((struct kdat_obj *)h,
					    struct kdat_srq, obj);
	struct ib_srq_attr sa = {};
	DAT_COUNT old, need;
	DAT_RETURN ret = DAT_SUCCESS;

	if (max <= 0 || max > srq->obj.ia->ibdev->attrs.max_srq_wr)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	mutex_lock(&srq->resize_lock);
	/*
	 * A drain's lock order: buffers held in the post ring behind a
	 * refusal are outstanding too, and stay where they are meanwhile.
	 */
	spin_lock_irq(&srq->ring_lock);
	spin_lock(&srq->lock);
	if (kdat_srq_broken(srq)) {
		ret = KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_ERROR);
	} else if ((s64)max < (s64)srq->outstanding + kdat_srq_ring_held(srq) ||
		   max < srq->low_watermark) {
		ret = KDAT_ERR(DAT_INVALID_STATE,
			       DAT_INVALID_STATE_SRQ_OPERATIONAL);
	}
	old = srq->max_recv_dtos;
	need = max - srq->nbufs;
	/* shrinking takes effect for new posts at once */
	if (ret == DAT_SUCCESS && max < old)
		srq->max_recv_dtos = max;
	spin_unlock(&srq->lock);
	spin_unlock_irq(&srq->ring_lock);
	if (ret != DAT_SUCCESS || max == old)
		goto out;

	if (max > old) {
		if ((need > 0 && kdat_srq_add_bufs(srq, need)) ||
		    kdat_srq_cq_grow(srq, max)) {
			ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES,
				       DAT_RESOURCE_MEMORY);
			goto out;
		}
		sa.max_wr = max;
		if (ib_modify_srq(srq->srq, &sa, IB_SRQ_MAX_WR)) {
			ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES,
				       DAT_RESOURCE_SRQ);
			goto out;
		}
		spin_lock_irq(&srq->lock);
		srq->max_recv_dtos = max;
		spin_unlock_irq(&srq->lock);
		/* the device limit follows the size (and is armed again) */
		if (srq->hw_limit) {
			srq->hw_limit = kdat_srq_hw_limit_for(max);
			kdat_srq_arm_limit(srq);
		}
	} else {
		/* first the limit: a device may refuse a size below it */
		if (srq->hw_limit) {
			srq->hw_limit = kdat_srq_hw_limit_for(max);
			kdat_srq_arm_limit(srq);
		}
		sa.max_wr = max;
		/* best effort: the limit above already holds */
		ib_modify_srq(srq->srq, &sa, IB_SRQ_MAX_WR);
	}
out:
	mutex_unlock(&srq->resize_lock);
	return ret;
}

DAT_RETURN kdat_ib_srq_set_lw(DAT_SRQ_HANDLE h, DAT_COUNT lw)
{
	struct kdat_srq *srq = container_of((struct kdat_obj *)h,
					    struct kdat_srq, obj);
	DAT_RETURN ret = DAT_SUCCESS;
	bool fire = false;

	/* a drain's order; the ring's entries stay where they are meanwhile */
	spin_lock_irq(&srq->ring_lock);
	spin_lock(&srq->lock);
	if (lw < 0 || lw > srq->max_recv_dtos) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	} else if (kdat_srq_broken(srq)) {
		/* no buffer comes or goes any more: nothing to watch */
		ret = KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_ERROR);
	} else {
		srq->low_watermark = lw;
		srq->lw_armed = lw != DAT_SRQ_LW_DEFAULT;
		fire = kdat_srq_check_lw(srq, kdat_srq_ring_left(srq));
	}
	spin_unlock(&srq->lock);
	spin_unlock_irq(&srq->ring_lock);
	if (fire)
		kdat_srq_fire_lw(srq, false);
	return ret;
}

/*
 * Destroy the ib_srq and its receive CQ.  Idempotent: free and device
 * removal may both call it, and the one that comes second returns only
 * when the CQ is gone too.  Under the resize lock, so a resize's
 * ib_modify_srq or ib_resize_cq never runs on a destroyed SRQ or CQ.
 */
void kdat_srq_hw_destroy(struct kdat_srq *srq)
{
	struct ib_srq *s;
	struct ib_cq *cq;

	mutex_lock(&srq->resize_lock);
	spin_lock_irq(&srq->lock);
	s = srq->srq;
	srq->srq = NULL;
	/* device removal: what is left of the SRQ reports the error state */
	srq->state = DAT_SRQ_STATE_ERROR;
	/*
	 * No low watermark from completions still in the receive CQ (its
	 * poller may run until cq_free_work frees it): the handle is gone.
	 */
	srq->lw_armed = false;
	spin_unlock_irq(&srq->lock);
	kdat_srq_ring_mark_error(srq);
	if (s)
		ib_destroy_srq(s);
	/* its QPs are gone (the SRQ had no EPs, or removal took them) */
	cq = srq->recv_cq;
	srq->recv_cq = NULL;
	if (cq)
		srq->recv_cq_freeing = true;
	mutex_unlock(&srq->resize_lock);
	/*
	 * Outside the lock: freeing the CQ waits for its poller, which drops
	 * references (an EP's, whose release may take other locks).
	 */
	if (cq && kdat_in_a_cq_poller()) {
		/* a free from an upcall: the CQ goes in cq_free_work */
		srq->cq_dying = cq;
		kdat_obj_hold(&srq->obj);
		kdat_free_begin(&srq->obj);
		queue_work(kdat_ring_wq, &srq->cq_free_work);
	} else if (cq) {
		kdat_srq_qp_gone_sync(cq);
		ib_free_cq(cq);
		kdat_srq_recv_cq_freed(srq);
	} else {
		bool *freeing = &srq->recv_cq_freeing;

		/* pairs with the release above, in the caller that frees it */
		wait_var_event(freeing, !smp_load_acquire(freeing));
	}
}

/* The destroy claim is held (object.c): this runs once per SRQ. */
DAT_RETURN kdat_ib_srq_free(DAT_SRQ_HANDLE h)
{
	struct kdat_srq *srq = container_of((struct kdat_obj *)h,
					    struct kdat_srq, obj);
	struct kdat_ia *ia = srq->obj.ia;

	mutex_lock(&ia->lock);
	if (list_empty(&srq->obj.ia_node)) {
		mutex_unlock(&ia->lock);
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
	}
	if (atomic_read(&srq->eps)) {
		mutex_unlock(&ia->lock);
		return KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE);
	}
	list_del_init(&srq->obj.ia_node);
	mutex_unlock(&ia->lock);
	kdat_obj_unpublish(&srq->obj);
	/* a drain inside finishes its batch first; later ones do nothing */
	spin_lock_irq(&srq->ring_lock);
	srq->ring_freed = true;
	spin_unlock_irq(&srq->ring_lock);
	kdat_srq_hw_destroy(srq);
	/*
	 * A drain handed on before the free reports nothing after it: wait
	 * for one that runs (it finds the SRQ gone or drains first), drop
	 * one not started.  No lock held: the work takes resize_lock.
	 */
	kdat_obj_cancel_drain_sync(&srq->obj, &srq->drain_work);
	atomic_dec(&srq->pz->users);
	return DAT_SUCCESS;
}
