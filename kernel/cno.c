// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Consumer Notification Objects (uDAPL's dat_cno_*; kDAPL has none, so
 * only IAs opened through /dev/kdat make them).  A CNO gathers the
 * notifications of the EVDs associated with it (dat_evd_create's cno,
 * dat_evd_modify_cno), so one thread can wait for any of them.
 *
 * Trigger: an event written to the ring of an EVD that has a CNO, is
 * enabled and has no dat_evd_wait waiter sleeping in the kernel triggers
 * the CNO, which remembers the first such EVD until a dat_cno_wait takes
 * it (kdat_cno_evd_posted, called where the event is written, under
 * evd->lock, in any context: softirq for completions).  A wait that finds
 * the CNO untriggered also returns at once for an enabled, unwaited EVD
 * of it that still holds unconsumed events: a trigger names one EVD, so
 * others that got events meanwhile, or events left after the consumer
 * took fewer than were queued, would otherwise wait for the next event.
 *
 * Lifetime: an EVD holds a reference on its CNO and counts in its users,
 * so dat_cno_free refuses (DAT_INVALID_STATE_CNO_IN_USE) while an EVD
 * names it; freeing an EVD detaches it first and withdraws a trigger it
 * raised.  A waiter holds a use of the CNO (a free racing it gets
 * DAT_INVALID_STATE); an IA close wakes it (DAT_INVALID_STATE_CNO_DEAD)
 * before it waits for the calls inside.  The wait runs outside
 * kdat_srcu: a CNO has no hardware, device removal leaves it alone.
 *
 * Locks: evd->lock, then cno->lock (both spinlocks, interrupts off).
 */
#include <linux/slab.h>
#include <linux/sched/signal.h>

#include "kdat_core.h"
#include "uobj.h"

static void kdat_cno_release(struct kdat_obj *obj)
{
	struct kdat_cno *cno = container_of(obj, struct kdat_cno, obj);

	WARN_ON_ONCE(!list_empty(&cno->evds));
}

DAT_RETURN kdat_cno_create(struct kdat_ia *ia, struct kdat_cno **cnop)
{
	struct kdat_cno *cno;
	int err;

	/* the trigger is the write to a user EVD's ring */
	if (!ia->ufile)
		return KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
	if (kdat_ia_dead(ia))
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	cno = kzalloc(sizeof(*cno), GFP_KERNEL_ACCOUNT);
	if (!cno)
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	kdat_obj_init(&cno->obj, KDAT_HANDLE_TYPE_CNO, ia->obj.provider, ia,
		      kdat_cno_release);
	spin_lock_init(&cno->lock);
	INIT_LIST_HEAD(&cno->evds);
	init_waitqueue_head(&cno->wq);
	if (kdat_obj_publish(&cno->obj)) {
		kdat_obj_put(&cno->obj);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	err = kdat_ia_link(ia, &cno->obj);
	if (err) {
		kdat_obj_unpublish(&cno->obj);
		kdat_obj_put(&cno->obj);
		return kdat_ia_link_error(err);
	}
	*cnop = cno;
	kdat_obj_put(&cno->obj);
	return DAT_SUCCESS;
}

/* The destroy claim is held (object.c): this runs once per CNO. */
DAT_RETURN kdat_cno_free(DAT_HANDLE h)
{
	struct kdat_cno *cno = container_of((struct kdat_obj *)h,
					    struct kdat_cno, obj);
	struct kdat_ia *ia = cno->obj.ia;
	unsigned long flags;

	mutex_lock(&ia->lock);
	if (atomic_read(&cno->users)) {
		mutex_unlock(&ia->lock);
		return KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE);
	}
	list_del_init(&cno->obj.ia_node);
	mutex_unlock(&ia->lock);
	kdat_obj_unpublish(&cno->obj);
	spin_lock_irqsave(&cno->lock, flags);
	cno->dead = true;
	cno->trig = NULL;
	spin_unlock_irqrestore(&cno->lock, flags);
	wake_up_all(&cno->wq);
	return DAT_SUCCESS;
}

/* Would an event of @evd trigger its CNO now?  evd->lock held. */
static bool kdat_cno_evd_live(const struct kdat_evd *evd)
{
	return !evd->cno_disabled && !evd->uwaiters && !evd->dead;
}

/* An event was written to @evd's ring; evd->lock held, any context. */
void kdat_cno_evd_posted(struct kdat_evd *evd)
{
	struct kdat_cno *cno = evd->cno;

	if (!cno || !kdat_cno_evd_live(evd))
		return;
	spin_lock(&cno->lock);
	if (!cno->trig && !cno->dead)
		cno->trig = evd;
	spin_unlock(&cno->lock);
	wake_up(&cno->wq);
}

/*
 * A dat_evd_wait waiter enters (@begin) or leaves the kernel.  One that
 * leaves events behind makes the EVD count for its CNO's waiters again.
 */
void kdat_cno_evd_wait(struct kdat_evd *evd, bool begin)
{
	unsigned long flags;

	spin_lock_irqsave(&evd->lock, flags);
	if (begin)
		evd->uwaiters++;
	else
		evd->uwaiters--;
	if (!begin && evd->cno && !evd->uwaiters && evd->uring &&
	    kdat_uevd_count(evd))
		wake_up(&evd->cno->wq);
	spin_unlock_irqrestore(&evd->lock, flags);
}

/*
 * Make @cno (pinned and counted by the caller, or NULL) @evd's CNO, with
 * @enabled.  The old CNO loses its trigger by this EVD.  Returns the CNO
 * whose reference and count the caller drops: the old one, or @cno
 * itself if it was the EVD's CNO already.
 */
static struct kdat_cno *kdat_evd_swap_cno(struct kdat_evd *evd,
					  struct kdat_cno *cno, bool enabled)
{
	struct kdat_cno *old;
	unsigned long flags;

	spin_lock_irqsave(&evd->lock, flags);
	old = evd->cno;
	if (old != cno) {
		if (old) {
			spin_lock(&old->lock);
			list_del_init(&evd->cno_node);
			if (old->trig == evd)
				old->trig = NULL;
			spin_unlock(&old->lock);
		}
		evd->cno = cno;
		if (cno) {
			spin_lock(&cno->lock);
			list_add_tail(&evd->cno_node, &cno->evds);
			spin_unlock(&cno->lock);
		}
	}
	evd->cno_disabled = !enabled;
	/* enabled (or attached) with events queued: a waiter looks again */
	if (evd->cno && kdat_cno_evd_live(evd) && evd->uring &&
	    kdat_uevd_count(evd))
		wake_up(&evd->cno->wq);
	spin_unlock_irqrestore(&evd->lock, flags);
	return old;
}

static void kdat_cno_unuse(struct kdat_cno *cno)
{
	atomic_dec(&cno->users);
	kdat_obj_put(&cno->obj);
}

/*
 * dat_evd_modify_cno (@cno NULL: none), dat_evd_enable/_disable
 * (@enabled).  The caller holds uses of @evd and @cno.
 */
DAT_RETURN kdat_evd_set_cno(struct kdat_evd *evd, struct kdat_cno *cno,
			    bool enabled)
{
	struct kdat_ia *ia = evd->obj.ia;
	struct kdat_cno *drop;

	if (!evd->uring)
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_ASYNC);
	if (cno) {
		if (cno->obj.ia != ia)
			return KDAT_ERR(DAT_INVALID_HANDLE,
					DAT_INVALID_HANDLE_CNO);
		if (!kdat_ia_add_user(ia, &cno->obj, &cno->users))
			return KDAT_ERR(DAT_INVALID_HANDLE,
					DAT_INVALID_HANDLE_CNO);
		kdat_obj_hold(&cno->obj);
	}
	drop = kdat_evd_swap_cno(evd, cno, enabled);
	if (drop)
		kdat_cno_unuse(drop);
	return DAT_SUCCESS;
}

/* The EVD is being freed (dead, no call inside): it lets its CNO go. */
void kdat_evd_drop_cno(struct kdat_evd *evd)
{
	struct kdat_cno *old = kdat_evd_swap_cno(evd, NULL, false);

	if (old)
		kdat_cno_unuse(old);
}

/* Is there something a waiter must return for?  Takes the trigger. */
static bool kdat_cno_take(struct kdat_cno *cno, u32 *evd_id, bool *dead)
{
	struct kdat_evd *evd;
	unsigned long flags;
	bool ret = false;

	spin_lock_irqsave(&cno->lock, flags);
	if (cno->dead || READ_ONCE(cno->obj.ia->closing)) {
		*dead = true;
		ret = true;
	} else if (cno->trig) {
		*evd_id = kdat_uid(cno->trig);
		cno->trig = NULL;
		ret = true;
	} else {
		list_for_each_entry(evd, &cno->evds, cno_node) {
			if (!READ_ONCE(evd->cno_disabled) &&
			    !READ_ONCE(evd->uwaiters) && !READ_ONCE(evd->dead) &&
			    kdat_uevd_count(evd)) {
				*evd_id = kdat_uid(evd);
				ret = true;
				break;
			}
		}
	}
	spin_unlock_irqrestore(&cno->lock, flags);
	return ret;
}

/* dat_cno_wait's kernel part; the caller holds a use of @cno. */
DAT_RETURN kdat_cno_wait(struct kdat_cno *cno, u32 timeout_us, u32 *evd)
{
	bool dead = false;
	long t;

	*evd = 0;
	t = timeout_us == U32_MAX ? MAX_SCHEDULE_TIMEOUT :
	    usecs_to_jiffies(timeout_us);
	t = wait_event_interruptible_timeout(cno->wq,
					     kdat_cno_take(cno, evd, &dead), t);
	if (t < 0)
		return KDAT_ERR(DAT_INTERRUPTED_CALL, 0);
	if (!t)
		return KDAT_ERR(DAT_TIMEOUT_EXPIRED, 0);
	if (dead)
		return KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_DEAD);
	return DAT_SUCCESS;
}

/* The IA is closing: its CNOs' waiters return (kdat_cno_take). */
void kdat_cno_wake_ia(struct kdat_ia *ia)
{
	struct kdat_obj *o;

	mutex_lock(&ia->lock);
	list_for_each_entry(o, &ia->objs, ia_node)
		if (o->type == KDAT_HANDLE_TYPE_CNO)
			wake_up_all(&container_of(o, struct kdat_cno, obj)->wq);
	mutex_unlock(&ia->lock);
}
