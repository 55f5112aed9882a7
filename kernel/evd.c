// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Event Dispatchers.  An EVD is a ring of DAT events of the consumer's
 * qlen.  A DTO EVD also owns an ib_cq (polled from a workqueue) that its
 * EPs and SRQ buffers complete into.  Kernel consumers either dequeue
 * events or get them through an upcall; an event handed to an upcall is
 * reaped when the upcall returns.
 *
 * Upcalls run in process context (the CQ workqueue, the CM handler, or
 * this module's work item when the event came from atomic context), one
 * at a time per EVD: whoever finds no dispatcher running becomes it and
 * drains the ring, so upcalls for one EVD never run concurrently and
 * never re-enter.
 *
 * An event handed to an upcall is reaped as it is handed over, so the
 * upcall can re-post the very SRQ buffer it was given even when the SRQ
 * is full.
 */
#include <linux/slab.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/irq_poll.h>

#include "kdat_core.h"

#define KDAT_EVD_FLAGS_ALL	(DAT_EVD_SOFTWARE_FLAG | DAT_EVD_CR_FLAG | \
				 DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG | \
				 DAT_EVD_RMR_BIND_FLAG | DAT_EVD_ASYNC_FLAG)
/* What DAT_HW_DEFAULT asks for as an EVD's qlen (docs/user-api.md) */
#define KDAT_EVD_DEFAULT_QLEN	256

static bool kdat_upcall_on(const struct kdat_evd *evd)
{
	/*
	 * At unload every kernel consumer is gone: the upcall of an IA one
	 * left open (closed by remove_one) would enter its unloaded code.
	 */
	return (evd->policy == DAT_UPCALL_SINGLE_INSTANCE ||
		evd->policy == DAT_UPCALL_MANY) && !READ_ONCE(kdat_unloading);
}

/* Account for a consumed event: an SRQ buffer stops being outstanding. */
void kdat_event_reaped(struct kdat_event *e)
{
	if (e->srq) {
		kdat_srq_reaped(e->srq);
		e->srq = NULL;
	}
}

/*
 * Every dispatch runs inside it: a consumer module's unload turns off the
 * upcalls into it, then waits here for those already running (ia.c).
 */
DEFINE_STATIC_SRCU(kdat_upcall_srcu);

void kdat_upcalls_sync(void)
{
	synchronize_srcu(&kdat_upcall_srcu);
}

KDAT_DATA_PATH(kdat_evd_dispatch, 1024)
static void kdat_evd_dispatch(struct kdat_evd *evd)
{
	struct kdat_event e;
	DAT_UPCALL_OBJECT up;
	unsigned long flags;
	bool more;
	int idx;

	for (;;) {
		spin_lock_irqsave(&evd->lock, flags);
		if (!evd->count || !kdat_upcall_on(evd)) {
			evd->in_upcall = false;
			evd->upcall_task = NULL;
			evd->upcall_run = NULL;
			spin_unlock_irqrestore(&evd->lock, flags);
			/*
			 * Only a quiesce waits here (kdat_evd_quiesce): the
			 * waitqueue's lock is not taken on every dispatch.
			 * The barrier pairs with its prepare_to_wait's.
			 */
			if (wq_has_sleeper(&evd->upcall_wq))
				wake_up_all(&evd->upcall_wq);
			return;
		}
		/*
		 * One section per upcall, not per drain (an EVD fed without
		 * pause must not hold up a module's unload), entered under
		 * the lock that turning the upcall off takes.
		 */
		idx = srcu_read_lock(&kdat_upcall_srcu);
		e = evd->ring[evd->head];
		evd->head = (evd->head + 1) % evd->qlen;
		evd->count--;
		more = evd->count > 0;
		up = evd->upcall;
		evd->upcall_task = current;
		spin_unlock_irqrestore(&evd->lock, flags);

		kdat_event_reaped(&e);
		up.upcall_func(up.instance_data, &e.ev, more);
		srcu_read_unlock(&kdat_upcall_srcu, idx);
	}
}

static void kdat_evd_upcall_work(struct work_struct *w)
{
	struct kdat_evd *evd = container_of(w, struct kdat_evd, upcall_work);

	kdat_evd_dispatch(evd);
	kdat_obj_put(&evd->obj);
}

static void kdat_evd_kick(struct kdat_evd *evd)
{
	kdat_obj_queue_work(&evd->obj, system_wq, &evd->upcall_work);
}

/*
 * Queue one event.  @srq is set for an SRQ receive completion; the caller
 * gave us a reference on it that reaping the event drops.
 */
/*
 * Queue @ev.  A full EVD drops it and reports the overflow, unless
 * @must_fit: then nothing is queued or reported and the answer is false.
 */
KDAT_DATA_PATH(__kdat_evd_post, 1024)
static bool __kdat_evd_post(struct kdat_evd *evd, const DAT_EVENT *ev,
			    struct kdat_srq *srq, bool may_upcall,
			    bool must_fit)
{
	struct kdat_ia *ia = evd->obj.ia;
	struct kdat_event *e;
	unsigned long flags;
	bool dispatch = false, dropped = false, report = false;

	/* a /dev/kdat EVD delivers into its mmapped ring */
	if (evd->uring)
		return ia->uops->evd_post(evd, ev, srq, must_fit);

	spin_lock_irqsave(&evd->lock, flags);
	if (must_fit && (evd->count == evd->qlen || evd->dead)) {
		spin_unlock_irqrestore(&evd->lock, flags);
		return false;
	}
	if (evd->count == evd->qlen || evd->dead) {
		dropped = true;
		report = !evd->overflowed && !evd->dead;
		evd->overflowed = true;
	} else {
		e = &evd->ring[(evd->head + evd->count) % evd->qlen];
		e->ev = *ev;
		e->ev.evd_handle = evd;
		e->srq = srq;
		evd->count++;
		/* the next loss is a new overflow, as on a user EVD's ring */
		evd->overflowed = false;
		if (kdat_upcall_on(evd) && !evd->in_upcall) {
			evd->in_upcall = true;
			evd->upcall_run = may_upcall ? current_work() :
						       &evd->upcall_work;
			dispatch = true;
		}
	}
	spin_unlock_irqrestore(&evd->lock, flags);

	if (dropped) {
		struct kdat_event lost = { .srq = srq };

		kdat_event_reaped(&lost);
		if (report && !(evd->flags & DAT_EVD_ASYNC_FLAG))
			kdat_ia_async_error(ia, DAT_ASYNC_ERROR_EVD_OVERFLOW,
					    evd, DAT_EVD_OVERFLOW_ERROR, may_upcall);
		return false;
	}
	if (dispatch) {
		if (may_upcall)
			kdat_evd_dispatch(evd);
		else
			kdat_evd_kick(evd);
	}
	return true;
}

KDAT_DATA_PATH(kdat_evd_post, 32)
void kdat_evd_post(struct kdat_evd *evd, const DAT_EVENT *ev,
		   struct kdat_srq *srq, bool may_upcall)
{
	__kdat_evd_post(evd, ev, srq, may_upcall, false);
}

/* dat_evd_post_se: all or nothing, never an overflow */
bool kdat_evd_post_fit(struct kdat_evd *evd, const DAT_EVENT *ev)
{
	return __kdat_evd_post(evd, ev, NULL, false, true);
}

/*
 * The CQ of a kernel EVD freed from an upcall a CQ's poller ran inline
 * (maybe this EVD's own).  ib_free_cq there waits for the poller's run to
 * end: its own, which never ends (the free runs in it), or another CQ's,
 * which lockdep (one class for every CQ's work) reports as recursion.
 * This work waits for
 * that run instead, then frees the CQ.  It holds the EVD (the rest of the
 * run posts to it, dropped as dead, and its dispatcher returns through it;
 * the SRQs it pins stay while a completion may name them) and counts as a
 * free in flight (ia->frees): an IA close and a device removal wait until
 * the CQ is gone.  Module exit drains kdat_evd_wq.
 */
static struct workqueue_struct *kdat_evd_wq;

/*
 * ib_core's poll function, the same for every workqueue CQ, noted at a
 * kernel EVD's create: only those CQs run upcalls, so a run of it is the
 * only poller that can call a free.  Compared, never called.
 */
static work_func_t kdat_cq_poll_fn;

/*
 * Is the caller a run of a kernel EVD's CQ poller (an upcall's)?  Freeing
 * a CQ there waits for that run: its own, or another CQ's, which lockdep
 * (one class for every CQ's work) reports as recursion.
 */
bool kdat_in_a_cq_poller(void)
{
	struct work_struct *w = current_work();

	return w && w->func == READ_ONCE(kdat_cq_poll_fn);
}

/*
 * Runs of CQ pollers that wait, from an upcall, for other CQs' pollers (a
 * free's or reset's QP drain, kdat_ep_teardown_must_defer).  Two such
 * runs that wait for each other would wait for ever, and lockdep cannot
 * tell: a drain waits on a completion.  A run may start to wait only for
 * pollers none of which is waiting itself, checked and recorded under one
 * lock; the last wait added to a cycle would have had to wait for a
 * waiting run, so no cycle forms.  A run refused here hands its drain to
 * a work item instead.
 */
static DEFINE_SPINLOCK(kdat_poller_waits_lock);
static LIST_HEAD(kdat_poller_waits);

/* May run @w wait for run @target (not its own, nor one that waits)? */
static bool kdat_run_may_wait_for(struct work_struct *w,
				  struct work_struct *target)
{
	struct kdat_poller_wait *o;

	lockdep_assert_held(&kdat_poller_waits_lock);
	if (!target)
		return true;
	if (target == w)
		return false;
	list_for_each_entry(o, &kdat_poller_waits, node)
		if (o->work == target)
			return false;
	return true;
}

/*
 * Did run @w record a wait for any run (an IA close)?  Then it may wait
 * for any: no run waited when it recorded that, and none may wait for it
 * since, so nothing it waits for can be waiting for it.
 */
static bool kdat_run_waits_for_any(struct work_struct *w)
{
	struct kdat_poller_wait *o;

	lockdep_assert_held(&kdat_poller_waits_lock);
	list_for_each_entry(o, &kdat_poller_waits, node)
		if (o->work == w && o->any)
			return true;
	return false;
}

/*
 * May the caller wait for the pollers of @cqs (NULLs skipped)?  True at
 * once outside a CQ poller's run; in one, true (and recorded in @pw until
 * kdat_poller_wait_end) when none of them is the caller's own or waits.
 * The waits lock saves interrupts: an EVD's wait for its upcall is
 * recorded under the EVD's lock, which a device's event handler takes.
 */
bool kdat_poller_wait_begin(struct kdat_poller_wait *pw,
			    struct ib_cq *const *cqs, int n)
{
	struct work_struct *w = current_work();
	unsigned long flags;
	int i;

	pw->work = NULL;
	pw->any = false;
	if (!kdat_in_a_cq_poller())
		return true;
	/* addresses only: the CQs are not dereferenced */
	spin_lock_irqsave(&kdat_poller_waits_lock, flags);
	for (i = 0; i < n; i++)
		if (cqs[i] && !kdat_run_may_wait_for(w, &cqs[i]->work))
			goto refused;
	pw->work = w;
	list_add(&pw->node, &kdat_poller_waits);
	spin_unlock_irqrestore(&kdat_poller_waits_lock, flags);
	return true;
refused:
	spin_unlock_irqrestore(&kdat_poller_waits_lock, flags);
	return false;
}

/*
 * As kdat_poller_wait_begin, for a wait for the run dispatching @evd's
 * upcall, if any (not the caller's: that returns at once).  Called with
 * evd->lock held, so the run cannot change under it; the caller turns the
 * upcall off in the same section, so none starts elsewhere after it.
 * @wait: whether there is an upcall to wait for.
 */
static bool kdat_evd_quiesce_begin(struct kdat_evd *evd,
				   struct kdat_poller_wait *pw, bool *wait)
{
	struct work_struct *w = current_work();
	unsigned long flags;
	bool ok;

	lockdep_assert_held(&evd->lock);
	pw->work = NULL;
	pw->any = false;
	*wait = evd->in_upcall && evd->upcall_task != current;
	if (!*wait || !kdat_in_a_cq_poller())
		return true;
	spin_lock_irqsave(&kdat_poller_waits_lock, flags);
	if (kdat_run_waits_for_any(w)) {
		ok = true;	/* an IA close's free: recorded already */
	} else {
		ok = kdat_run_may_wait_for(w, evd->upcall_run);
		if (ok) {
			pw->work = w;
			list_add(&pw->node, &kdat_poller_waits);
		}
	}
	spin_unlock_irqrestore(&kdat_poller_waits_lock, flags);
	return ok;
}

/*
 * As kdat_poller_wait_begin, for a caller that may wait for any poller
 * (an IA close, through the frees of all its children): in a poller's
 * run, only while no poller waits at all.
 */
bool kdat_poller_wait_any_begin(struct kdat_poller_wait *pw)
{
	unsigned long flags;
	bool ok;

	pw->work = NULL;
	pw->any = true;
	if (!kdat_in_a_cq_poller())
		return true;
	spin_lock_irqsave(&kdat_poller_waits_lock, flags);
	ok = list_empty(&kdat_poller_waits);
	if (ok) {
		pw->work = current_work();
		list_add(&pw->node, &kdat_poller_waits);
	}
	spin_unlock_irqrestore(&kdat_poller_waits_lock, flags);
	return ok;
}

/* Is the caller a run of @evd's CQ poller (its upcall)?  Address only. */
bool kdat_evd_polls_here(struct kdat_evd *evd)
{
	struct work_struct *w = current_work();
	struct ib_cq *cq = READ_ONCE(evd->cq);

	return w && cq && w == &cq->work;
}

void kdat_poller_wait_end(struct kdat_poller_wait *pw)
{
	unsigned long flags;

	if (!pw->work)
		return;
	spin_lock_irqsave(&kdat_poller_waits_lock, flags);
	list_del(&pw->node);
	spin_unlock_irqrestore(&kdat_poller_waits_lock, flags);
	pw->work = NULL;
}

/*
 * Deliver every completion the device put in @cq so far, before the caller
 * goes on: ib_free_cq cancels a poll that has not run yet, and the
 * completions still in the CQ would be lost with the SRQ buffers they
 * return (an SRQ EP's QP is drained of its sends only).  Process context,
 * not in @cq's own poller (it would wait for itself).  The CQ stays armed.
 */
void kdat_cq_flush(struct ib_cq *cq)
{
	might_sleep();
	switch (cq->poll_ctx) {
	case IB_POLL_WORKQUEUE:
	case IB_POLL_UNBOUND_WORKQUEUE:
		/*
		 * A run that starts after this polls every entry there now
		 * (one run polls up to 64k, more than a CQ of ours holds).
		 */
		queue_work(cq->comp_wq, &cq->work);
		flush_work(&cq->work);
		break;
	case IB_POLL_SOFTIRQ:
		/*
		 * Stop the irq_poll: the run in progress ends (a disabled
		 * poller does not reschedule itself however busy the CQ),
		 * then no other can start.  Poll what is there in place, at
		 * most the CQ's capacity, as a bottom half would, then let
		 * the poller go and kick it: a completion notified meanwhile
		 * found it disabled, and the kick re-arms the CQ.
		 */
		irq_poll_disable(&cq->iop);
		local_bh_disable();
		ib_process_cq_direct(cq, cq->cqe);
		local_bh_enable();
		irq_poll_enable(&cq->iop);
		local_bh_disable();
		irq_poll_sched(&cq->iop);
		local_bh_enable();
		break;
	default:
		break;
	}
}

/*
 * Free an EVD's CQ, with what is still in it delivered first, also by a
 * destroyed SRQ QP's late poll (kdat_srq_qp_gone).
 */
static void kdat_evd_cq_free(struct ib_cq *cq)
{
	kdat_cq_flush(cq);
	kdat_srq_qp_gone_sync(cq);
	ib_free_cq(cq);
}

static void kdat_evd_cq_free_work(struct work_struct *w)
{
	struct kdat_evd *evd = container_of(w, struct kdat_evd, cq_free_work);
	struct ib_cq *cq = evd->cq_dying;

	/* a kick queued before the free finds the EVD dead: let it end */
	kdat_obj_cancel_work_sync(&evd->obj, &evd->upcall_work);
	/*
	 * The run the free interrupted may have queued another for what it
	 * left in the CQ: let that deliver (to the dead EVD, which reaps it:
	 * SRQ buffers are counted back) instead of being cancelled with it.
	 */
	kdat_evd_cq_free(cq);
	evd->cq_dying = NULL;
	kdat_free_end(&evd->obj);
	kdat_obj_put(&evd->obj);
}

int kdat_evd_init(void)
{
	kdat_evd_wq = alloc_workqueue("kdat_evd", WQ_UNBOUND, 0);
	return kdat_evd_wq ? 0 : -ENOMEM;
}

/* Module exit: every CQ handed to kdat_evd_cq_free_work is freed first. */
void kdat_evd_exit(void)
{
	destroy_workqueue(kdat_evd_wq);
}

/*
 * A create that fails after making its CQ: no QP ever used it, so there
 * is nothing to flush (and the create may run in an upcall of a CQ's
 * poller, where flushing another CQ's work is what lockdep reports).
 */
static void kdat_evd_unused_cq_free(struct kdat_evd *evd)
{
	if (evd->cq) {
		ib_free_cq(evd->cq);
		evd->cq = NULL;
	}
}

static void kdat_evd_release(struct kdat_obj *obj)
{
	struct kdat_evd *evd = container_of(obj, struct kdat_evd, obj);
	struct kdat_obj *srq;
	unsigned long i;

	/* the CQ is gone: no completion can name these SRQs any more */
	WARN_ON_ONCE(evd->cq || evd->cq_dying);
	xa_for_each(&evd->srqs, i, srq)
		kdat_obj_put(srq);
	xa_destroy(&evd->srqs);

	kvfree(evd->ring);
	if (evd->uring)
		obj->ia->uops->ring_free(evd->uring);
}

DAT_RETURN kdat_ib_evd_kcreate(DAT_IA_HANDLE h, DAT_COUNT qlen,
			       DAT_UPCALL_POLICY policy,
			       const DAT_UPCALL_OBJECT *upcall,
			       DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd_handle)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);
	struct kdat_evd *evd;
	int err;

	/* DAT_HW_DEFAULT: the provider's choice, reported by dat_evd_query */
	if (qlen == DAT_HW_DEFAULT)
		qlen = min_t(int, ia->ibdev->attrs.max_cqe,
			     KDAT_EVD_DEFAULT_QLEN);
	if (qlen <= 0 || qlen > ia->ibdev->attrs.max_cqe)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (policy != DAT_UPCALL_DISABLE &&
	    policy != DAT_UPCALL_SINGLE_INSTANCE && policy != DAT_UPCALL_MANY)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (policy != DAT_UPCALL_DISABLE && (!upcall || !upcall->upcall_func))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (!flags || (flags & ~KDAT_EVD_FLAGS_ALL))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	if (!evd_handle)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
	if (kdat_ia_dead(ia))
		return KDAT_ERR(DAT_INVALID_STATE, 0);

	evd = kzalloc(sizeof(*evd), GFP_KERNEL_ACCOUNT);
	if (!evd)
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	/* a user EVD's events go to its mmapped ring instead */
	evd->ring = kvcalloc(ia->uops ? 1 : qlen, sizeof(*evd->ring),
			     GFP_KERNEL_ACCOUNT);
	if (!evd->ring) {
		kfree(evd);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	kdat_obj_init(&evd->obj, DAT_HANDLE_TYPE_EVD, ia->obj.provider, ia,
		      kdat_evd_release);
	spin_lock_init(&evd->lock);
	xa_init_flags(&evd->srqs, XA_FLAGS_ACCOUNT);
	init_waitqueue_head(&evd->upcall_wq);
	INIT_LIST_HEAD(&evd->cno_node);
	INIT_WORK(&evd->upcall_work, kdat_evd_upcall_work);
	INIT_WORK(&evd->cq_free_work, kdat_evd_cq_free_work);
	evd->flags = flags;
	evd->qlen = qlen;
	mutex_init(&evd->cq_lock);
	evd->policy = policy;
	if (upcall) {
		evd->upcall = *upcall;
		kdat_consumer_upcall(upcall->upcall_func);
	}
	if (ia->uops && ia->uops->evd_init(evd)) {
		kdat_obj_put(&evd->obj);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}

	if (flags & DAT_EVD_DTO_FLAG) {
		/*
		 * A user EVD's completions only write its mmapped ring and
		 * wake its waiter, so they are handled in softirq, without
		 * a hop through a kworker (about a fifth of the message rate
		 * at 128 EPs on rxe).  Kernel EVDs keep the workqueue:
		 * their upcalls run in process context.
		 */
		evd->cq = ib_alloc_cq(ia->ibdev, evd, qlen, 0,
				      evd->uring ? IB_POLL_SOFTIRQ :
						   IB_POLL_WORKQUEUE);
		if (IS_ERR(evd->cq)) {
			evd->cq = NULL;
			kdat_obj_put(&evd->obj);
			return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES,
					DAT_RESOURCE_TEVD);
		}
		if (!evd->uring)
			WRITE_ONCE(kdat_cq_poll_fn, evd->cq->work.func);
	}
	if (kdat_obj_publish(&evd->obj)) {
		kdat_obj_drain_uses(&evd->obj);
		kdat_evd_unused_cq_free(evd);
		kdat_obj_put(&evd->obj);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	err = kdat_ia_link(ia, &evd->obj);
	if (err) {
		kdat_obj_unpublish(&evd->obj);
		/* a dequeue that found the handle meanwhile leaves first */
		kdat_obj_drain_uses(&evd->obj);
		kdat_evd_unused_cq_free(evd);
		kdat_obj_put(&evd->obj);
		return kdat_ia_link_error(err);
	}
	*evd_handle = evd;
	kdat_obj_put(&evd->obj);
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask,
			     DAT_EVD_PARAM *param)
{
	struct kdat_evd *evd = container_of((struct kdat_obj *)h,
					    struct kdat_evd, obj);
	unsigned long flags;

	if (mask & ~DAT_EVD_FIELD_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!param)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	spin_lock_irqsave(&evd->lock, flags);
	param->ia_handle = evd->obj.ia;
	param->evd_qlen = evd->qlen;
	param->upcall_policy = evd->policy;
	param->upcall = evd->upcall;
	param->evd_flags = evd->flags;
	spin_unlock_irqrestore(&evd->lock, flags);
	return DAT_SUCCESS;
}

/*
 * Wait until the upcall kdat_evd_quiesce_begin found running has ended
 * (none starts: the upcall is off), then drop the wait's record.
 */
static void kdat_evd_quiesce(struct kdat_evd *evd,
			     struct kdat_poller_wait *pw, bool wait)
{
	if (wait) {
		atomic_inc(&evd->quiescers);
		wait_event(evd->upcall_wq, !READ_ONCE(evd->in_upcall));
		atomic_dec(&evd->quiescers);
	}
	kdat_poller_wait_end(pw);
}

/* For the test consumer: does a call wait for @h's upcall to end? */
bool kdat_test_evd_quiescing(DAT_EVD_HANDLE h)
{
	struct kdat_obj *o = kdat_obj_get(h, DAT_HANDLE_TYPE_EVD);
	bool ret;

	if (!o)
		return false;
	ret = atomic_read(&container_of(o, struct kdat_evd, obj)->quiescers);
	kdat_obj_put(o);
	return ret;
}
EXPORT_SYMBOL_GPL(kdat_test_evd_quiescing);

/*
 * A consumer module unloads (ia.c): if @evd's upcall function lies in
 * @mod (with @all, any upcall function), turn the upcall off and forget
 * the function, so a later modify cannot turn it on again without a new
 * one.  Under the IA lock, not waiting: the caller waits for upcalls
 * already running (kdat_upcalls_sync).  True if the upcall was on.
 */
bool kdat_evd_upcall_drop(struct kdat_evd *evd, const struct module *mod,
			  bool all)
{
	unsigned long fn, flags;
	bool on = false;

	lockdep_assert_held(&evd->obj.ia->lock);
	spin_lock_irqsave(&evd->lock, flags);
	fn = (unsigned long)evd->upcall.upcall_func;
	if (!evd->uring && fn && (all || within_module(fn, mod))) {
		on = kdat_upcall_on(evd);
		evd->policy = DAT_UPCALL_DISABLE;
		evd->upcall.upcall_func = NULL;
	}
	spin_unlock_irqrestore(&evd->lock, flags);
	return on;
}

DAT_RETURN kdat_ib_evd_modify_upcall(DAT_EVD_HANDLE h,
				     DAT_UPCALL_POLICY policy,
				     const DAT_UPCALL_OBJECT *upcall)
{
	struct kdat_evd *evd = container_of((struct kdat_obj *)h,
					    struct kdat_evd, obj);
	struct kdat_poller_wait pw = {};
	bool kick = false, wait = false;
	unsigned long flags;

	if (policy != DAT_UPCALL_DISABLE &&
	    policy != DAT_UPCALL_SINGLE_INSTANCE &&
	    policy != DAT_UPCALL_MANY && policy != DAT_UPCALL_TEARDOWN)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (upcall)
		kdat_consumer_upcall(upcall->upcall_func);
	spin_lock_irqsave(&evd->lock, flags);
	/* the function the EVD would call: the new object's, or the old */
	if ((policy == DAT_UPCALL_SINGLE_INSTANCE ||
	     policy == DAT_UPCALL_MANY) &&
	    !(upcall ? upcall->upcall_func : evd->upcall.upcall_func)) {
		spin_unlock_irqrestore(&evd->lock, flags);
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	}
	/*
	 * TEARDOWN (or off): stop upcalls, and return once running ones are
	 * done.  From an upcall of a CQ's poller, not if the upcall's run
	 * waits itself (for this one, maybe): nothing changes then.
	 */
	if ((policy == DAT_UPCALL_DISABLE || policy == DAT_UPCALL_TEARDOWN) &&
	    !kdat_evd_quiesce_begin(evd, &pw, &wait)) {
		spin_unlock_irqrestore(&evd->lock, flags);
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	}
	evd->policy = policy == DAT_UPCALL_TEARDOWN ? DAT_UPCALL_DISABLE :
						      policy;
	if (upcall)
		evd->upcall = *upcall;
	if (kdat_upcall_on(evd) && evd->count && !evd->in_upcall) {
		evd->in_upcall = true;
		evd->upcall_run = &evd->upcall_work;
		kick = true;
	}
	spin_unlock_irqrestore(&evd->lock, flags);
	if (kick)
		kdat_evd_kick(evd);
	kdat_evd_quiesce(evd, &pw, wait);
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen)
{
	struct kdat_evd *evd = container_of((struct kdat_obj *)h,
					    struct kdat_evd, obj);
	struct kdat_event *ring, *old;
	unsigned long flags;
	u32 i;

	if (qlen <= 0 || qlen > evd->obj.ia->ibdev->attrs.max_cqe)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	ring = kvcalloc(qlen, sizeof(*ring), GFP_KERNEL_ACCOUNT);
	if (!ring)
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	/* grow only: the CQ may hold more than qlen (kdat_evd_cq_charge) */
	mutex_lock(&evd->cq_lock);
	if (evd->cq && qlen > evd->cq->cqe && ib_resize_cq(evd->cq, qlen)) {
		mutex_unlock(&evd->cq_lock);
		kvfree(ring);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
	}
	mutex_unlock(&evd->cq_lock);
	spin_lock_irqsave(&evd->lock, flags);
	if (qlen < evd->count) {
		spin_unlock_irqrestore(&evd->lock, flags);
		kvfree(ring);
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	}
	for (i = 0; i < evd->count; i++)
		ring[i] = evd->ring[(evd->head + i) % evd->qlen];
	old = evd->ring;
	evd->ring = ring;
	evd->head = 0;
	evd->qlen = qlen;
	spin_unlock_irqrestore(&evd->lock, flags);
	kvfree(old);
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT *ev)
{
	struct kdat_evd *evd = container_of((struct kdat_obj *)h,
					    struct kdat_evd, obj);

	if (!ev || ev->event_number != DAT_SOFTWARE_EVENT)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!(evd->flags & DAT_EVD_SOFTWARE_FLAG))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	/*
	 * Checked and queued in one step: a completion arriving meanwhile
	 * cannot make this event the one dropped.  A user EVD's queue is its
	 * ring (what the user has not consumed), which may hold more than
	 * qlen: qlen is checked first.
	 */
	if ((evd->uring &&
	     evd->obj.ia->uops->evd_count(evd) >= (u32)evd->qlen) ||
	    !kdat_evd_post_fit(evd, ev))
		return KDAT_ERR(DAT_QUEUE_FULL, 0);
	return DAT_SUCCESS;
}

KDAT_DATA_PATH(kdat_ib_evd_dequeue, 512)
DAT_RETURN kdat_ib_evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT *ev)
{
	struct kdat_evd *evd = container_of((struct kdat_obj *)h,
					    struct kdat_evd, obj);
	struct kdat_event e;
	unsigned long flags;

	if (!ev)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	spin_lock_irqsave(&evd->lock, flags);
	if (!evd->count) {
		spin_unlock_irqrestore(&evd->lock, flags);
		return KDAT_ERR(DAT_QUEUE_EMPTY, 0);
	}
	e = evd->ring[evd->head];
	evd->head = (evd->head + 1) % evd->qlen;
	evd->count--;
	spin_unlock_irqrestore(&evd->lock, flags);
	*ev = e.ev;
	kdat_event_reaped(&e);
	return DAT_SUCCESS;
}

/*
 * Grow @cq to hold @size completions, the device's largest CQ at most.  A
 * device that cannot resize (siw) keeps its CQ: the guarantee is then the
 * consumer's, as it was before.
 */
int kdat_cq_grow(struct ib_cq *cq, int size)
{
	int ret;

	size = min(size, cq->device->attrs.max_cqe);
	if (size <= cq->cqe)
		return 0;
	ret = ib_resize_cq(cq, size);
	return ret == -EOPNOTSUPP ? 0 : ret;
}

/*
 * The bytes a CQ of @cqe entries is counted as (kdat_evd_cq_grow_user):
 * drivers round the slots up to a power of two (rxe: 2^k - 1 entries of
 * 128 bytes).
 */
static s64 kdat_cq_bytes(int cqe)
{
	return (s64)roundup_pow_of_two((unsigned long)cqe + 1) *
	       KDAT_CQE_BYTES;
}

/*
 * Grow a user EVD's CQ to @size, else to @need: the device memory it
 * takes counts against the file's cap.  What it may take is reserved
 * first, then only what it took (cqe after the resize; nothing on a
 * device that cannot resize) is kept.
 */
static int kdat_evd_cq_grow_user(struct kdat_evd *evd, int need, int size)
{
	const struct kdat_uops *uops = evd->obj.ia->uops;
	struct ib_cq *cq = evd->cq;
	s64 old = kdat_cq_bytes(cq->cqe), held, took;
	int ret;

	/* at the device's largest already: nothing grows, nothing counts */
	if (size <= cq->cqe)
		return 0;
	held = kdat_cq_bytes(size) - old;
	ret = uops->evd_cq_account(evd, held);
	if (ret && size > need) {
		/* no room to double: just what it needs */
		size = need;
		held = kdat_cq_bytes(size) - old;
		ret = uops->evd_cq_account(evd, held);
	}
	if (ret)
		return ret;
	ret = kdat_cq_grow(cq, size);
	took = ret ? 0 : kdat_cq_bytes(cq->cqe) - old;
	if (took < held)
		uops->evd_cq_account(evd, took - held);
	return ret;
}

/*
 * Charge @n completions to the CQ: the work requests a QP (or an SRQ's
 * receives) may have in it at once, and the QP's drain marker.  A QP's
 * flush puts all it holds into its CQs before the poller runs; a CQ that
 * overflows loses completions, the drain's marker with them, and the drain
 * (free, reset, device removal) never ends.  So the CQ grows to what its
 * QPs may hold together, up to the device's largest CQ, whatever qlen the
 * EVD was given (its ring, not the CQ, reports an overflow as DAT says).
 * It never shrinks; the EP or SRQ holding the EVD keeps the CQ meanwhile.
 */
int kdat_evd_cq_charge(struct kdat_evd *evd, int n)
{
	int need, want, size, max_cqe, ret = 0;
	struct ib_cq *cq;

	mutex_lock(&evd->cq_lock);
	cq = evd->cq;
	need = evd->cq_need + n;
	if (cq && cq->cqe < need) {
		max_cqe = cq->device->attrs.max_cqe;
		want = min(need, max_cqe);
		/* doubling: thousands of EPs joining copy the CQ few times */
		size = min(max(need, 2 * cq->cqe), max_cqe);
		/* a user's: the growth counts against its file's cap */
		if (evd->uring)
			ret = kdat_evd_cq_grow_user(evd, want, size);
		else
			ret = kdat_cq_grow(cq, size);
	}
	if (!ret)
		evd->cq_need = need;
	mutex_unlock(&evd->cq_lock);
	return ret;
}

void kdat_evd_cq_uncharge(struct kdat_evd *evd, int n)
{
	mutex_lock(&evd->cq_lock);
	evd->cq_need -= n;
	mutex_unlock(&evd->cq_lock);
}

/*
 * For the test consumer: how many completions the EVD's CQ holds (0 with
 * none), to check what the charges above promise.
 */
int kdat_test_evd_cq_size(DAT_EVD_HANDLE h)
{
	struct kdat_evd *evd;
	struct kdat_obj *o;
	int n = -EINVAL, idx;

	/*
	 * As a call: a free cannot claim the EVD while we use it, and a
	 * device removal frees the CQ only after the call section ends.
	 */
	idx = kdat_call_begin();
	o = kdat_obj_get_use(h, DAT_HANDLE_TYPE_EVD);
	if (!o)
		goto out;
	evd = container_of(o, struct kdat_evd, obj);
	n = 0;
	if (!kdat_ia_dead(o->ia)) {
		mutex_lock(&evd->cq_lock);
		n = evd->cq ? evd->cq->cqe : 0;
		mutex_unlock(&evd->cq_lock);
	}
	kdat_obj_put_use(o);
out:
	kdat_call_end(idx);
	return n;
}
EXPORT_SYMBOL_GPL(kdat_test_evd_cq_size);

/*
 * Count an EP of another IA as a user of @evd, its connection EVD: under
 * the EVD's own IA lock, which the caller must not hold another IA lock
 * around (two creates crossing the same two IAs would deadlock).  Refused
 * if the EVD was freed or its IA is closing (the handle is going), or if
 * its IA lost its device (ia->dead is set under the same lock): that
 * IA's consumer can only free what it has, so no new EP reports there.
 */
DAT_RETURN kdat_evd_add_foreign_user(struct kdat_evd *evd)
{
	struct kdat_ia *owner = evd->obj.ia;
	DAT_RETURN ret = DAT_SUCCESS;

	mutex_lock(&owner->lock);
	if (owner->closing || list_empty(&evd->obj.ia_node)) {
		ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
	} else if (kdat_ia_dead(owner)) {
		ret = KDAT_ERR(DAT_INVALID_STATE, 0);
	} else {
		atomic_inc(&evd->users);
		atomic_inc(&evd->foreign_users);
	}
	mutex_unlock(&owner->lock);
	return ret;
}

/* The EP is gone: under the same lock, so a free reads both counts whole. */
void kdat_evd_drop_foreign_user(struct kdat_evd *evd)
{
	struct kdat_ia *owner = evd->obj.ia;

	mutex_lock(&owner->lock);
	atomic_dec(&evd->users);
	atomic_dec(&evd->foreign_users);
	mutex_unlock(&owner->lock);
}

/*
 * KDAT_EVD_CTL_POLL, for a consumer that spins on an empty ring: run the
 * CQ's poller on this CPU now.  Otherwise a completion waits for the
 * device's notification; rxe posts that as a tasklet, which runs only
 * after the softirq that made the completion has also carried the ACK
 * back and completed the sender: most of a ping-pong's one-way time under
 * emulation.  ib_core's irq_poll polls a CQ on one CPU at a time (a poll
 * scheduled elsewhere makes this a no-op), so events keep the device's
 * order.  The caller holds a use of the EVD (no free) inside a call
 * section (device removal waits, then frees the CQ).
 */
KDAT_DATA_PATH(kdat_evd_busy_poll, 128)
void kdat_evd_busy_poll(struct kdat_evd *evd)
{
	struct ib_cq *cq;

	if (kdat_ia_dead(evd->obj.ia))
		return;
	cq = READ_ONCE(evd->cq);
	if (!cq || cq->poll_ctx != IB_POLL_SOFTIRQ || !cq->comp_handler)
		return;
	local_bh_disable();
	cq->comp_handler(cq, cq->cq_context);
	/* the poll runs here, or in this CPU's ksoftirqd if it is runnable */
	local_bh_enable();
}

/* Release the CQ.  Idempotent: device removal and free may both call it. */
void kdat_evd_hw_destroy(struct kdat_evd *evd)
{
	struct ib_cq *cq = xchg(&evd->cq, NULL);

	/* the QPs are flushed: their last completions are delivered first */
	if (cq)
		kdat_evd_cq_free(cq);
}

/* The destroy claim is held (object.c): this runs once per EVD. */
DAT_RETURN kdat_ib_evd_free(DAT_EVD_HANDLE h)
{
	struct kdat_evd *evd = container_of((struct kdat_obj *)h,
					    struct kdat_evd, obj);
	struct kdat_ia *ia = evd->obj.ia;
	struct kdat_poller_wait pw = {};
	struct kdat_event e;
	unsigned long flags;
	struct ib_cq *cq;
	bool wait;

	mutex_lock(&ia->lock);
	/*
	 * EPs of another IA that report their connections here keep the EVD
	 * from its consumer, not from its IA's close: it dies under them and
	 * their later events are dropped (evd->dead).
	 */
	if (atomic_read(&evd->users) >
	    (ia->closing ? atomic_read(&evd->foreign_users) : 0)) {
		mutex_unlock(&ia->lock);
		return KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
	}
	/*
	 * Off while still on the IA's list: a consumer module's unload
	 * (ia.c) looks for upcalls into it there, and must find each EVD
	 * either listed or with its upcall off.
	 */
	spin_lock_irqsave(&evd->lock, flags);
	/*
	 * The free waits for an upcall in progress.  From an upcall of a
	 * CQ's poller, not if the upcall's run waits itself (for this one,
	 * maybe): the EVD is in use then.  (An IA close's own frees may: it
	 * recorded a wait for any run.)
	 */
	if (!kdat_evd_quiesce_begin(evd, &pw, &wait)) {
		spin_unlock_irqrestore(&evd->lock, flags);
		mutex_unlock(&ia->lock);
		return KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
	}
	evd->policy = DAT_UPCALL_DISABLE;
	evd->dead = true;
	spin_unlock_irqrestore(&evd->lock, flags);
	list_del_init(&evd->obj.ia_node);
	mutex_unlock(&ia->lock);
	kdat_obj_unpublish(&evd->obj);

	kdat_evd_drop_cno(evd);
	kdat_evd_quiesce(evd, &pw, wait);
	cq = xchg(&evd->cq, NULL);
	if (cq && !evd->uring && kdat_in_a_cq_poller()) {
		/*
		 * In an upcall a CQ's poller ran, maybe this CQ's: the CQ
		 * goes once that run ends (kdat_evd_cq_free_work).  Anywhere
		 * else (a consumer's own work item too) it goes now, so the
		 * free returns with its SRQ accounting settled.  Not a user
		 * EVD (never freed from a poller): its ring, destroyed below,
		 * must outlive its CQ.
		 */
		evd->cq_dying = cq;
		kdat_obj_hold(&evd->obj);
		kdat_free_begin(&evd->obj);
		queue_work(kdat_evd_wq, &evd->cq_free_work);
	} else {
		/*
		 * Not from the work itself (an upcall dispatched by it freeing
		 * its own EVD): flushing the running work would wait for
		 * ourselves.  A kick cancelled before it ran gives back the
		 * reference it held.
		 */
		if (current_work() != &evd->upcall_work)
			kdat_obj_cancel_work_sync(&evd->obj,
						  &evd->upcall_work);
		/* what is still in the CQ goes to the dead EVD: reaped */
		if (cq)
			kdat_evd_cq_free(cq);
	}
	if (evd->uring)
		ia->uops->evd_destroy(evd);

	/* events nobody will reap still give back their SRQ accounting */
	spin_lock_irqsave(&evd->lock, flags);
	while (evd->count) {
		e = evd->ring[evd->head];
		evd->head = (evd->head + 1) % evd->qlen;
		evd->count--;
		spin_unlock_irqrestore(&evd->lock, flags);
		kdat_event_reaped(&e);
		spin_lock_irqsave(&evd->lock, flags);
	}
	spin_unlock_irqrestore(&evd->lock, flags);
	return DAT_SUCCESS;
}
