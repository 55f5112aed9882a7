// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The object layer every DAT object lives in, whoever names it: kernel
 * consumers by handle (the object's address), /dev/kdat users by a
 * per-file ID (uobj.c).  It knows nothing of SRQs or EPs; it is shaped
 * like uverbs' rdma_core.c:
 *
 *   lifetime   a kref; memory goes back through RCU, so a lookup that
 *              races a free never touches freed memory.
 *   use count  every call holds one on each object it operates on
 *              (shared, >0); a destroy claims the object exclusively
 *              (-1), which succeeds only when no call is inside it.  So
 *              a destroy runs exactly once and never under a user: of two
 *              racing frees one wins, the other finds the claim (or the
 *              object gone) and gets DAT_INVALID_HANDLE; a free racing
 *              another call on the object gets DAT_INVALID_STATE.
 *   publish    the handle table holds a reference; an object becomes
 *              reachable by handle only after its create built it, and
 *              joins its IA's child list only while the IA is neither
 *              closing nor dead, so a closing IA refuses new children.
 *   devices    every call runs inside kdat_srcu; device removal marks its
 *              IAs dead, waits for the calls in flight (creates that
 *              already checked "dead" finish and link their objects),
 *              and only then releases the hardware.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/debugfs.h>
#include <linux/hash.h>
#include <linux/seq_file.h>
#include <linux/llist.h>
#include <linux/srcu.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

#include "kdat_core.h"

DEFINE_STATIC_SRCU(kdat_srcu);

KDAT_DATA_PATH(kdat_call_begin, 32)
int kdat_call_begin(void) __acquires(&kdat_srcu)
{
	return srcu_read_lock(&kdat_srcu);
}

KDAT_DATA_PATH(kdat_call_end, 64)
void kdat_call_end(int idx) __releases(&kdat_srcu)
{
	srcu_read_unlock(&kdat_srcu, idx);
}

/*
 * Wait for every DAT call that began before now (device removal): those in
 * kdat_srcu, and the calls that never sleep and run in an RCU section
 * instead (dat_srq_post_recv: kdat_post_section_begin(), an RCU-sched
 * reader - plain RCU on PREEMPT_RT - that synchronize_rcu() waits for).
 */
void kdat_calls_sync(void)
{
	synchronize_srcu(&kdat_srcu);
	synchronize_rcu();
}

/* ---------------------------------------------------------------------- */
/* Handle table and live-object counters                                   */

static DEFINE_XARRAY(kdat_handles);

/*
 * Handles are object addresses, all from the linear map and 8-byte
 * aligned.  Keyed by their offset in the linear map the xarray stays a few
 * levels deep instead of eleven; a lookup must then check that the entry
 * is the very address asked for (an unaligned fake would share a key).
 */
static unsigned long kdat_handle_key(const void *h)
{
	return kdat_obj_key(h);
}

/*
 * The hot calls look their handle up in a direct-mapped cache of published
 * objects first: one load and a compare, where xa_load costs a few hundred
 * ns under emulation (docs/benchmarks.md).  An object takes its slot at
 * publish when the slot is free and gives it back at unpublish, so it is
 * in the slot only while it is in the xarray; a miss falls back to that.
 */
struct kdat_obj *kdat_handle_cache[1 << KDAT_HANDLE_CACHE_BITS];

static struct kdat_obj **kdat_handle_slot(const void *h)
{
	return &kdat_handle_cache[kdat_handle_hash(h)];
}

/* A miss in the cache: the xarray (kdat_handle_lookup).  Under RCU. */
struct kdat_obj *kdat_handle_lookup_xa(DAT_HANDLE h)
{
	struct kdat_obj *obj = xa_load(&kdat_handles, kdat_handle_key(h));

	return (void *)obj == h ? obj : NULL;
}

static atomic_long_t kdat_live[KDAT_NTYPES];

static const char *const kdat_type_names[KDAT_NTYPES] = {
	[DAT_HANDLE_TYPE_CR] = "cr",	[DAT_HANDLE_TYPE_EP] = "ep",
	[DAT_HANDLE_TYPE_EVD] = "evd",	[DAT_HANDLE_TYPE_IA] = "ia",
	[DAT_HANDLE_TYPE_LMR] = "lmr",	[DAT_HANDLE_TYPE_PSP] = "psp",
	[DAT_HANDLE_TYPE_PZ] = "pz",	[DAT_HANDLE_TYPE_RMR] = "rmr",
	[DAT_HANDLE_TYPE_RSP] = "rsp",	[DAT_HANDLE_TYPE_SRQ] = "srq",
	[KDAT_HANDLE_TYPE_CNO] = "cno",
};

/*
 * A kernel handle is its object's address, so freed memory the allocator
 * handed out again at once would give a new object the handle of one just
 * freed.  The memory of the last KDAT_QUARANTINE released objects is held
 * back (FIFO) before it goes back through RCU: a freed handle is not
 * reused before that many more objects were freed.
 */
#define KDAT_QUARANTINE	256

static DEFINE_SPINLOCK(kdat_quarantine_lock);
static LIST_HEAD(kdat_quarantine);
static unsigned int kdat_quarantined;

static void kdat_obj_quarantine(struct kdat_obj *obj)
{
	struct kdat_obj *old = NULL;
	unsigned long flags;

	spin_lock_irqsave(&kdat_quarantine_lock, flags);
	/* unlinked from its IA long ago: ia_node is free to reuse */
	list_add_tail(&obj->ia_node, &kdat_quarantine);
	if (++kdat_quarantined > KDAT_QUARANTINE) {
		old = list_first_entry(&kdat_quarantine, struct kdat_obj,
				       ia_node);
		list_del(&old->ia_node);
		kdat_quarantined--;
	}
	spin_unlock_irqrestore(&kdat_quarantine_lock, flags);
	/* every object embeds kdat_obj first, so this frees the container */
	if (old)
		kfree_rcu(old, rcu);
}

/* Module unload: every object is released, give their memory back. */
static void kdat_obj_quarantine_drain(void)
{
	struct kdat_obj *obj, *t;
	unsigned long flags;
	LIST_HEAD(all);

	spin_lock_irqsave(&kdat_quarantine_lock, flags);
	list_splice_init(&kdat_quarantine, &all);
	kdat_quarantined = 0;
	spin_unlock_irqrestore(&kdat_quarantine_lock, flags);
	list_for_each_entry_safe(obj, t, &all, ia_node)
		kfree_rcu(obj, rcu);
}

static void kdat_obj_do_release(struct kdat_obj *obj)
{
	DAT_HANDLE_TYPE type = obj->type;
	struct kdat_ia *ia = type == DAT_HANDLE_TYPE_IA ? NULL : obj->ia;

	obj->release(obj);
	kdat_obj_quarantine(obj);
	atomic_long_dec(&kdat_live[type]);
	/* children pin their IA (and so the device table) */
	if (ia)
		kdat_obj_put(&ia->obj);
}

/*
 * The last reference can go where sleeping is not allowed: a user EVD's
 * completions are handled in softirq (IB_POLL_SOFTIRQ), and reaping an
 * event there drops the reference it held on its SRQ.  Releases may sleep
 * (a PZ's ib_dealloc_pd, a ring's file lock), so those run from a work
 * item instead.
 */
static LLIST_HEAD(kdat_deferred);
static atomic_long_t kdat_deferred_count;	/* debugfs: deferred_releases */

static void kdat_deferred_fn(struct work_struct *work)
{
	struct llist_node *n = llist_del_all(&kdat_deferred);
	struct kdat_obj *obj, *t;

	llist_for_each_entry_safe(obj, t, n, deferred)
		kdat_obj_do_release(obj);
}

static DECLARE_WORK(kdat_deferred_work, kdat_deferred_fn);

static void kdat_obj_release(struct kref *ref)
{
	struct kdat_obj *obj = container_of(ref, struct kdat_obj, ref);

	/*
	 * softirq, or a lock held (preemptible() is always false without
	 * CONFIG_PREEMPT_COUNT: then every release is deferred), or inside a
	 * preemptible RCU section (dat_evd_dequeue's on PREEMPT_RT, where
	 * its call section is plain RCU: kdat_post_section_begin)
	 */
	if (!preemptible() || rcu_preempt_depth()) {
		atomic_long_inc(&kdat_deferred_count);
		if (llist_add(&obj->deferred, &kdat_deferred))
			schedule_work(&kdat_deferred_work);
		return;
	}
	kdat_obj_do_release(obj);
}

/* Wait for the releases deferred so far (unload, leak checks). */
void kdat_obj_flush_deferred(void)
{
	flush_work(&kdat_deferred_work);
}

void kdat_obj_init(struct kdat_obj *obj, DAT_HANDLE_TYPE type,
		   DAT_PROVIDER *provider, struct kdat_ia *ia,
		   void (*release)(struct kdat_obj *obj))
{
	obj->provider = provider;
	obj->type = type;
	kref_init(&obj->ref);
	atomic_set(&obj->usecnt, 0);
	obj->ia = ia;
	if (ia)
		kdat_obj_hold(&ia->obj);
	INIT_LIST_HEAD(&obj->ia_node);
	obj->release = release;
	atomic_long_inc(&kdat_live[type]);
}

/*
 * Make the object reachable by its kernel handle; the table owns one
 * reference.  Objects of a /dev/kdat IA also get an ID in that file,
 * reserved but invisible until the creating ioctl commits it (uobj.c).
 */
int kdat_obj_publish(struct kdat_obj *obj)
{
	struct kdat_ia *ia = obj->ia;
	int ret;

	kdat_obj_hold(obj);
	/* charged to the creator's memory cgroup (a kernel thread: none) */
	ret = xa_insert(&kdat_handles, kdat_handle_key(obj), obj,
			GFP_KERNEL_ACCOUNT);
	if (ret) {
		kref_put(&obj->ref, kdat_obj_release);
		return ret;
	}
	/*
	 * Before the bit: an unpublish (a free through a stale handle) can
	 * only start after it, and then finds the slot to clear.
	 */
	cmpxchg_release(kdat_handle_slot(obj), NULL, obj);
	set_bit(KDAT_OBJ_PUBLISHED, &obj->flags);
	if (ia && ia->uops) {
		ret = ia->uops->reserve(ia, obj);
		if (ret) {
			kdat_obj_unpublish(obj);
			return ret;
		}
	}
	return 0;
}

/*
 * An object the provider creates on its own (a CR, from the CM handler)
 * has no ioctl to commit it: it becomes visible by ID as soon as it is
 * built, before any event names it.
 */
void kdat_obj_commit(struct kdat_obj *obj)
{
	struct kdat_ia *ia = obj->ia;

	if (ia && ia->uops)
		ia->uops->commit(ia, obj);
}

/*
 * After this no lookup can find the object; drops the table's reference.
 * Runs once whoever calls it (the test_and_clear): a destroy and its own
 * create's unwinding may both reach here.
 */
void kdat_obj_unpublish(struct kdat_obj *obj)
{
	struct kdat_ia *ia = obj->ia;

	if (!test_and_clear_bit(KDAT_OBJ_PUBLISHED, &obj->flags))
		return;
	if (ia && ia->uops)
		ia->uops->forget(ia, obj);
	cmpxchg(kdat_handle_slot(obj), obj, NULL);
	xa_erase(&kdat_handles, kdat_handle_key(obj));
	set_bit(KDAT_OBJ_GONE, &obj->flags);
	/* a teardown waiting in kdat_obj_claim_wait() sees it gone */
	smp_mb__after_atomic();
	wake_up_var(&obj->usecnt);
	kref_put(&obj->ref, kdat_obj_release);
}

/*
 * Put a child on its IA's list, unless the IA is closing or its device is
 * gone: then the create must unwind (a closing IA refuses new children).
 * Called with ia->lock held by creates that count users in the same
 * critical section; kdat_ia_link() takes it.
 */
int kdat_ia_link_locked(struct kdat_ia *ia, struct kdat_obj *obj)
{
	lockdep_assert_held(&ia->lock);
	if (ia->closing)
		return -ESHUTDOWN;
	if (kdat_ia_dead(ia))
		return -ENODEV;
	list_add_tail(&obj->ia_node, &ia->objs);
	return 0;
}

/*
 * What a create refused by kdat_ia_link() returns: its IA was closed under
 * it (the handle it named is gone), or its device was.
 */
DAT_RETURN kdat_ia_link_error(int err)
{
	return err == -ESHUTDOWN ?
	       KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA) :
	       KDAT_ERR(DAT_INVALID_STATE, 0);
}

int kdat_ia_link(struct kdat_ia *ia, struct kdat_obj *obj)
{
	int ret;

	mutex_lock(&ia->lock);
	ret = kdat_ia_link_locked(ia, obj);
	mutex_unlock(&ia->lock);
	return ret;
}

void kdat_ia_unlink(struct kdat_obj *obj)
{
	struct kdat_ia *ia = obj->ia;

	mutex_lock(&ia->lock);
	list_del_init(&obj->ia_node);
	mutex_unlock(&ia->lock);
}

/* ---------------------------------------------------------------------- */
/* Use counts                                                              */

/* Before waiting for @obj's uses: from now on every unuse wakes. */
static void kdat_obj_wait_uses(struct kdat_obj *obj)
{
	set_bit(KDAT_OBJ_USE_WAITER, &obj->flags);
	smp_mb__after_atomic();	/* the flag before the waiter reads usecnt */
}

/* Look @h up, pin it and take a shared use; NULL if it is not a live @type. */
KDAT_DATA_PATH(kdat_obj_get_use, 256)
struct kdat_obj *kdat_obj_get_use(DAT_HANDLE h, DAT_HANDLE_TYPE type)
{
	struct kdat_obj *obj = kdat_obj_get(h, type);

	if (obj && !kdat_obj_use(obj)) {
		kdat_obj_put(obj);
		obj = NULL;
	}
	return obj;
}

/*
 * A create that unwinds after its object was published: wait until no call
 * uses the object, and keep new ones out, before the hardware goes.  Unlike
 * kdat_obj_claim_wait it waits also for an object already unpublished.
 */
void kdat_obj_drain_uses(struct kdat_obj *obj)
{
	might_sleep();
	kdat_obj_wait_uses(obj);
	wait_var_event(&obj->usecnt,
		       atomic_cmpxchg(&obj->usecnt, 0, -1) == 0);
}

KDAT_DATA_PATH(kdat_obj_put_use, 128)
void kdat_obj_put_use(struct kdat_obj *obj)
{
	kdat_obj_unuse(obj);
	kdat_obj_put(obj);
}

/*
 * Claim @obj for its destroy, as a call that holds @held shared uses of
 * it itself (0 or 1).  DAT_SUCCESS: the caller destroys it (or gives the
 * claim back with kdat_obj_unclaim if the destroy refuses).  Otherwise:
 * another destroy has it (DAT_INVALID_HANDLE) or other calls are inside
 * it (DAT_INVALID_STATE, like uverbs' -EBUSY).
 */
DAT_RETURN kdat_obj_claim(struct kdat_obj *obj, int held)
{
	int old = atomic_cmpxchg(&obj->usecnt, held, -1);

	if (old == held)
		return DAT_SUCCESS;
	if (old < 0 || test_bit(KDAT_OBJ_GONE, &obj->flags))
		return KDAT_ERR(DAT_INVALID_HANDLE, 0);
	return KDAT_ERR(DAT_INVALID_STATE, 0);
}

/*
 * The same for a teardown that must not fail (IA close, file release,
 * device removal): wait for the calls inside to leave.  False if the
 * object went meanwhile (a racing free destroyed it).  Callers have made
 * new uses impossible first (ia->closing) and woken the waiters of their
 * EVDs, so the wait is short.
 */
bool kdat_obj_claim_wait(struct kdat_obj *obj, int held)
{
	bool mine = false;

	kdat_obj_wait_uses(obj);
	wait_var_event(&obj->usecnt,
		       (mine = atomic_cmpxchg(&obj->usecnt, held, -1) == held) ||
		       test_bit(KDAT_OBJ_GONE, &obj->flags));
	return mine;
}

/* A consumer's free of @obj (claimed) runs: see kdat_ia.frees. */
void kdat_free_begin(struct kdat_obj *obj)
{
	atomic_inc(&obj->ia->frees);
}

void kdat_free_end(struct kdat_obj *obj)
{
	struct kdat_ia *ia = obj->ia;

	if (atomic_dec_and_test(&ia->frees))
		wake_up_var(&ia->frees);
}

void kdat_obj_unclaim(struct kdat_obj *obj, int held)
{
	atomic_set(&obj->usecnt, held);
	smp_mb();	/* the new count before wake_up_var's waiter check */
	wake_up_var(&obj->usecnt);
}

/* ---------------------------------------------------------------------- */
/* Lookups by kernel handle                                                */

KDAT_DATA_PATH(kdat_obj_get, 256)
struct kdat_obj *kdat_obj_get(DAT_HANDLE h, DAT_HANDLE_TYPE type)
{
	struct kdat_obj *obj;

	if (!h)
		return NULL;
	rcu_read_lock();
	obj = kdat_handle_lookup(h);
	if (obj && (obj->type != type || !kref_get_unless_zero(&obj->ref)))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

/* The generic helpers (consumer context, handle type) work on any type. */
struct kdat_obj *kdat_obj_get_any(DAT_HANDLE h)
{
	struct kdat_obj *obj;

	if (!h)
		return NULL;
	rcu_read_lock();
	obj = kdat_handle_lookup(h);
	if (obj && !kref_get_unless_zero(&obj->ref))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

KDAT_DATA_PATH(kdat_obj_put, 128)
void kdat_obj_put(struct kdat_obj *obj)
{
	if (obj)
		kref_put(&obj->ref, kdat_obj_release);
}

long kdat_live_objects(void)
{
	long n = 0;
	int i;

	for (i = 0; i < KDAT_NTYPES; i++)
		n += atomic_long_read(&kdat_live[i]);
	return n;
}
/* For the test consumer: proves every test leaves no object behind. */
EXPORT_SYMBOL_GPL(kdat_live_objects);

/* ---------------------------------------------------------------------- */
/* debugfs: /sys/kernel/debug/kdat/objects                                 */

static struct dentry *kdat_debugfs;

static int kdat_objects_show(struct seq_file *m, void *v)
{
	int i;

	for (i = 0; i < KDAT_NTYPES; i++)
		if (kdat_type_names[i])
			seq_printf(m, "%s %ld\n", kdat_type_names[i],
				   atomic_long_read(&kdat_live[i]));
	seq_printf(m, "total %ld\n", kdat_live_objects());
	seq_printf(m, "deferred_releases %ld\n",
		   atomic_long_read(&kdat_deferred_count));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kdat_objects);

int kdat_debugfs_init(void)
{
	kdat_debugfs = debugfs_create_dir("kdat", NULL);
	debugfs_create_file("objects", 0444, kdat_debugfs, NULL,
			    &kdat_objects_fops);
	kdat_fault_debugfs_init(kdat_debugfs);
	return 0;
}

/* Last at unload (main.c): every object was released by then. */
void kdat_debugfs_exit(void)
{
	debugfs_remove_recursive(kdat_debugfs);
	kdat_obj_flush_deferred();
	kdat_obj_quarantine_drain();
}
