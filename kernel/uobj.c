// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The per-file object table of /dev/kdat: what uverbs' rdma_core.c is to
 * uverbs.  User space names objects by per-file IDs, never pointers.
 *
 *   alloc_begin  a create reserves the object's ID (kdat_uobj_reserve,
 *                through the IA's ops when the object layer publishes it);
 *                the ID finds nothing yet.
 *   commit       the ioctl copied its results out: the ID now finds the
 *                object (kdat_ucall_finish).
 *   abort        the copy out failed: the object is destroyed again.
 *   lookup       kdat_uget() pins the object and takes a shared use;
 *                kdat_ufree() claims it for its destroy, exactly once.
 *
 * A create holds a use of its IA while its handler runs, not while its
 * results are copied out: that copy may stall for as long as user space
 * likes (a FUSE or userfaultfd page), and an IA close, inside the section
 * device removal waits for, must not wait for it.  An IA close racing the
 * copy tears the new object down with the rest (its ID is forgotten, so
 * the commit stores nothing) and the ID the call returns finds nothing.
 * A file belongs to the process that opened it: a
 * forked child (or any other process handed the file) gets
 * DAT_INVALID_HANDLE for every call and cannot map its rings.
 */
#include <linux/cgroup_rdma.h>
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "kdat_core.h"
#include "uobj.h"

/*
 * Per-file limits: user space sizes these, so a file may not take more.
 * Ring pages are also charged to the opener's memory cgroup.
 */
static unsigned int max_objects = 65536;
module_param(max_objects, uint, 0644);
MODULE_PARM_DESC(max_objects, "DAT objects one /dev/kdat file may own (default 65536)");

static unsigned int max_ring_mb = 256;
module_param(max_ring_mb, uint, 0644);
MODULE_PARM_DESC(max_ring_mb, "MiB of mmapped rings, and of CQ growth of their EVDs, one /dev/kdat file may own (default 256)");

static void kdat_ufile_release(struct kref *ref)
{
	struct kdat_ufile *uf = container_of(ref, struct kdat_ufile, ref);

	xa_destroy(&uf->objs);
	xa_destroy(&uf->rings);
	mmdrop(uf->mm);
	kfree(uf);
}

void kdat_ufile_put(struct kdat_ufile *uf)
{
	kref_put(&uf->ref, kdat_ufile_release);
}

/* The file belongs to the process that opened it. */
bool kdat_ufile_mine(struct kdat_ufile *uf)
{
	return current->mm == uf->mm;
}

/* ---------------------------------------------------------------------- */
/* IDs                                                                     */

/*
 * A user object counts against the rdma cgroup of the process that
 * creates it, as uverbs' objects do: an IA as an HCA handle, every other
 * object it creates as an HCA object (not a CR, which the CM makes).  So
 * rdma.max bounds what a group of users takes of a device through kdat,
 * whatever number of files they open.  Given back when the object's ID
 * goes, or when its device does (kdat_uobj_uncharge, from the removal:
 * the device's cgroup accounting ends with it).
 */
#ifdef CONFIG_CGROUP_RDMA
static enum rdmacg_resource_type kdat_uobj_cg_type(struct kdat_obj *obj)
{
	return obj->type == DAT_HANDLE_TYPE_IA ? RDMACG_RESOURCE_HCA_HANDLE :
						  RDMACG_RESOURCE_HCA_OBJECT;
}
#endif

static int kdat_uobj_charge(struct kdat_ia *ia, struct kdat_obj *obj)
{
#ifdef CONFIG_CGROUP_RDMA
	int ret;

	if (obj->type == DAT_HANDLE_TYPE_CR)
		return 0;
	ret = rdmacg_try_charge(&obj->cg.cg, &ia->ibdev->cg_device,
				kdat_uobj_cg_type(obj));
	if (ret)
		return ret;
	set_bit(KDAT_OBJ_CHARGED, &obj->flags);
#endif
	return 0;
}

static void kdat_uobj_uncharge(struct kdat_obj *obj)
{
#ifdef CONFIG_CGROUP_RDMA
	struct kdat_ia *ia = obj->ia;

	/* counted before the bit is taken: see kdat_uobj_uncharge_sync */
	atomic_inc(&ia->uncharging);
	if (test_and_clear_bit(KDAT_OBJ_CHARGED, &obj->flags)) {
		might_sleep();
		rdmacg_uncharge(obj->cg.cg, &ia->ibdev->cg_device,
				kdat_uobj_cg_type(obj));
	}
	if (atomic_dec_and_test(&ia->uncharging))
		wake_up_var(&ia->uncharging);
#endif
}

/*
 * A device removal that found a charge of @ia already taken by someone
 * else (an IA close running at the same time) waits here for that
 * uncharge to be done, before the device's cgroup accounting ends.  A
 * dead IA makes no new charges, so this ends.
 */
static void kdat_uobj_uncharge_sync(struct kdat_ia *ia)
{
	wait_var_event(&ia->uncharging, !atomic_read(&ia->uncharging));
}

/* alloc_begin: an ID for @obj that finds nothing until it is committed. */
static int kdat_uobj_reserve(struct kdat_ia *ia, struct kdat_obj *obj)
{
	struct kdat_ufile *uf = ia->ufile;
	u32 id;
	int ret;

	if (atomic_inc_return(&uf->nobjs) > max_objects) {
		atomic_dec(&uf->nobjs);
		return -EMFILE;
	}
	ret = kdat_uobj_charge(ia, obj);
	if (ret) {
		atomic_dec(&uf->nobjs);
		return ret;
	}
	/* cyclic: a freed ID is not handed out again soon */
	ret = xa_alloc_cyclic(&uf->objs, &id, NULL, xa_limit_31b,
			      &uf->next_id, GFP_KERNEL_ACCOUNT);
	if (ret < 0) {
		kdat_uobj_uncharge(obj);
		atomic_dec(&uf->nobjs);
		return ret;
	}
	WRITE_ONCE(obj->uid, id);
	return 0;
}

/*
 * Every ioctl looks its IDs up: a direct-mapped cache in front of the
 * xarray answers with one load and a compare (xa_load costs a few hundred
 * ns under emulation; object.c does the same for kernel handles).  An
 * object takes its slot at commit if the slot is free and leaves it when
 * its ID is forgotten, both under the xarray's lock, so a hit is exactly
 * an xarray hit.
 */
static struct kdat_obj **kdat_uobj_slot(struct kdat_ufile *uf, u32 id)
{
	return &uf->id_cache[id % KDAT_UOBJ_CACHE];
}

/* Under RCU: the committed object named by @id, or NULL. */
static struct kdat_obj *kdat_uobj_lookup(struct kdat_ufile *uf, u32 id)
{
	struct kdat_obj *obj = READ_ONCE(*kdat_uobj_slot(uf, id));

	if (obj && READ_ONCE(obj->uid) == id)
		return obj;
	return xa_load(&uf->objs, id);
}

/*
 * The object is being destroyed: its ID finds nothing from now on.  uid
 * is cleared under the xarray lock, so a commit racing this (an IA close
 * tearing down an object whose create has not committed yet) cannot store
 * the object back.
 */
static void kdat_uobj_forget(struct kdat_ia *ia, struct kdat_obj *obj)
{
	struct kdat_ufile *uf = ia->ufile;
	u32 id;

	xa_lock(&uf->objs);
	id = obj->uid;
	WRITE_ONCE(obj->uid, 0);
	if (id) {
		if (*kdat_uobj_slot(uf, id) == obj)
			WRITE_ONCE(*kdat_uobj_slot(uf, id), NULL);
		__xa_erase(&uf->objs, id);
	}
	xa_unlock(&uf->objs);
	if (id) {
		kdat_uobj_uncharge(obj);
		atomic_dec(&uf->nobjs);
	}
}

/* commit: the ID finds the object now, unless it was destroyed already. */
static void kdat_uobj_commit(struct kdat_ia *ia, struct kdat_obj *obj)
{
	struct kdat_ufile *uf = ia->ufile;

	xa_lock(&uf->objs);
	if (obj->uid) {
		__xa_store(&uf->objs, obj->uid, obj, GFP_ATOMIC);
		if (!*kdat_uobj_slot(uf, obj->uid)) {
			/*
			 * Built and committed: a reader that hits may use it
			 * (pairs with kdat_uobj_lookup()'s dependent loads).
			 */
			smp_store_release(kdat_uobj_slot(uf, obj->uid), obj);
		}
	}
	xa_unlock(&uf->objs);
}

/* Pin (kref only) the committed object of @type named by @id, or NULL. */
KDAT_DATA_PATH(kdat_uobj_pin, 256)
static struct kdat_obj *kdat_uobj_pin(struct kdat_ufile *uf, u32 id,
				      DAT_HANDLE_TYPE type)
{
	struct kdat_obj *obj;

	if (!id)
		return NULL;
	rcu_read_lock();
	obj = kdat_uobj_lookup(uf, id);
	if (obj && (obj->type != type || !kref_get_unless_zero(&obj->ref)))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

/* Pin the object named by @id and take a shared use of it, or NULL. */
struct kdat_obj *kdat_uget(struct kdat_ufile *uf, u32 id,
			   DAT_HANDLE_TYPE type)
{
	struct kdat_obj *obj = kdat_uobj_pin(uf, id, type);

	if (obj && !kdat_obj_use(obj)) {
		kdat_obj_put(obj);
		obj = NULL;
	}
	return obj;
}

void kdat_uput(struct kdat_obj *obj)
{
	kdat_obj_put_use(obj);
}

/*
 * Destroy the object named by @id through @destroy, once: of racing frees
 * one gets DAT_SUCCESS and the others DAT_INVALID_HANDLE; a free racing
 * another call inside the object gets DAT_INVALID_STATE.
 */
DAT_RETURN kdat_ufree(struct kdat_ufile *uf, u32 id, DAT_HANDLE_TYPE type,
		      DAT_RETURN (*destroy)(struct kdat_obj *obj),
		      DAT_RETURN invalid)
{
	struct kdat_obj *obj = kdat_uobj_pin(uf, id, type);
	DAT_RETURN ret;

	if (!obj)
		return invalid;
	ret = kdat_obj_claim(obj, 0);
	if (ret == DAT_SUCCESS) {
		ret = destroy(obj);
		if (ret != DAT_SUCCESS)
			kdat_obj_unclaim(obj, 0);
	} else if (DAT_GET_TYPE(ret) == DAT_INVALID_HANDLE) {
		ret = invalid;
	}
	kdat_obj_put(obj);
	return ret;
}

/* The object behind @id as a kernel handle for the provider, or a dud. */
DAT_HANDLE kdat_uhandle(struct kdat_ufile *uf, u32 id)
{
	struct kdat_obj *o;

	if (!id)
		return DAT_HANDLE_NULL;
	rcu_read_lock();
	o = kdat_uobj_lookup(uf, id);
	rcu_read_unlock();
	/*
	 * The provider re-checks this handle in its own table and pins it,
	 * so a concurrent free only turns it into DAT_INVALID_HANDLE there.
	 * A stale, foreign or uncommitted ID becomes a pointer no table
	 * holds.
	 */
	return o ? (DAT_HANDLE)o : (DAT_HANDLE)uf;
}

/* ---------------------------------------------------------------------- */
/* One ioctl: the IA it creates in, the objects it creates                 */

/* Keep @ia's use until the handler returned (taken by the caller). */
void kdat_ucall_hold_ia(struct kdat_ucall *c, struct kdat_obj *ia)
{
	c->ia = ia;
}

/* The handler returned: its IA may close now, before the copy out. */
void kdat_ucall_put_ia(struct kdat_ucall *c)
{
	if (c->ia)
		kdat_uput(c->ia);
	c->ia = NULL;
}

void kdat_ucall_created(struct kdat_ucall *c, struct kdat_obj *obj)
{
	if (WARN_ON_ONCE(c->ncreated >= ARRAY_SIZE(c->created)))
		return;
	kdat_obj_hold(obj);
	c->created[c->ncreated++] = obj;
}

/*
 * Commit what the call created if its results reached user space, else
 * destroy it again (either finds nothing to do if an IA close tore it
 * down meanwhile).  An IA that was created is closed on abort, which
 * takes its async EVD with it.
 */
void kdat_ucall_finish(struct kdat_ucall *c, bool copied)
{
	struct kdat_obj *o;
	int i;

	for (i = 0; i < c->ncreated; i++) {
		o = c->created[i];
		if (copied)
			kdat_obj_commit(o);
		else if (o->type == DAT_HANDLE_TYPE_IA)
			kdat_ia_close(container_of(o, struct kdat_ia, obj), 0);
		/*
		 * no call can use an uncommitted object, and an IA close
		 * that claimed it first destroys it: the wait is short
		 */
		else if (kdat_obj_claim_wait(o, 0) &&
			 kdat_obj_destroy(o) != DAT_SUCCESS)
			kdat_obj_unclaim(o, 0);
	}
	for (i = 0; i < c->ncreated; i++)
		kdat_obj_put(c->created[i]);
}

/* ---------------------------------------------------------------------- */
/* The file                                                                */

struct kdat_ufile *kdat_ufile_new(void)
{
	struct kdat_ufile *uf = kzalloc(sizeof(*uf), GFP_KERNEL_ACCOUNT);

	if (!uf)
		return NULL;
	kref_init(&uf->ref);
	mutex_init(&uf->lock);
	xa_init_flags(&uf->objs, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	xa_init_flags(&uf->rings, XA_FLAGS_ACCOUNT);
	init_waitqueue_head(&uf->poll_wq);
	uf->mm = current->mm;
	mmgrab(uf->mm);
	return uf;
}

/*
 * The file's next object of @type after ID *@id, referenced, or NULL.
 * Only the RCU section keeps an entry's memory while it is looked at.
 */
static struct kdat_obj *kdat_ufile_next(struct kdat_ufile *uf,
					unsigned long *id, DAT_HANDLE_TYPE type)
{
	struct kdat_obj *o;

	rcu_read_lock();
	do {
		o = xa_find_after(&uf->objs, id, ULONG_MAX, XA_PRESENT);
	} while (o && (o->type != type || !kref_get_unless_zero(&o->ref)));
	rcu_read_unlock();
	return o;
}

/*
 * The last close (also of a killed process): no ioctl of this file runs
 * any more, so every IA it opened closes abruptly, which frees everything.
 */
void kdat_ufile_close(struct kdat_ufile *uf)
{
	struct kdat_obj *o;
	unsigned long id = 0;

	while ((o = kdat_ufile_next(uf, &id, DAT_HANDLE_TYPE_IA))) {
		kdat_ia_close(container_of(o, struct kdat_ia, obj), 0);
		kdat_obj_put(o);
	}
	kdat_ufile_put(uf);
}

/* Is there an event to read on any EVD of the file? */
__poll_t kdat_ufile_poll(struct kdat_ufile *uf)
{
	struct kdat_obj *o;
	unsigned long id = 0;
	bool ready = false;

	/* each EVD pinned while we look: its ring goes with its last ref */
	while ((o = kdat_ufile_next(uf, &id, DAT_HANDLE_TYPE_EVD))) {
		ready = kdat_uevd_ready(container_of(o, struct kdat_evd, obj));
		kdat_obj_put(o);
		if (ready)
			break;
	}
	return ready ? EPOLLIN | EPOLLRDNORM : 0;
}

/* ---------------------------------------------------------------------- */
/* Ring accounting                                                         */

/*
 * Count @bytes of ring against the file's cap (max_ring_mb) before they
 * are allocated, so concurrent creates cannot each allocate past it.
 */
int kdat_ufile_reserve(struct kdat_ufile *uf, size_t bytes)
{
	size_t cap = (size_t)max_ring_mb << 20;
	int ret = 0;

	mutex_lock(&uf->lock);
	/* the cap may have been lowered below what the file holds */
	if (uf->ring_bytes > cap || bytes > cap - uf->ring_bytes)
		ret = -ENOMEM;
	else
		uf->ring_bytes += bytes;
	mutex_unlock(&uf->lock);
	return ret;
}

void kdat_ufile_unreserve(struct kdat_ufile *uf, size_t bytes)
{
	mutex_lock(&uf->lock);
	uf->ring_bytes -= bytes;
	mutex_unlock(&uf->lock);
}

/*
 * A ring of bytes reserved with kdat_ufile_reserve: mappable now.  Its
 * pages stay counted until the ring is freed and no mapping is left.
 */
int kdat_ufile_add_ring(struct kdat_ufile *uf, struct kdat_uring *r)
{
	struct kdat_ring_pages *p;
	int ret;

	p = kmalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return -ENOMEM;
	refcount_set(&p->ref, 1);
	p->size = r->size;
	mutex_lock(&uf->lock);
	r->pgoff = uf->next_pgoff;
	ret = xa_insert(&uf->rings, r->pgoff, r, GFP_KERNEL_ACCOUNT);
	if (!ret) {
		uf->next_pgoff += r->size >> PAGE_SHIFT;
		kref_get(&uf->ref);
		p->uf = uf;
		r->uf = uf;
		r->pages = p;
	}
	mutex_unlock(&uf->lock);
	if (ret)
		kfree(p);
	return ret;
}

void kdat_ring_pages_get(struct kdat_ring_pages *p)
{
	refcount_inc(&p->ref);
}

void kdat_ring_pages_put(struct kdat_ring_pages *p)
{
	struct kdat_ufile *uf = p->uf;

	if (!refcount_dec_and_test(&p->ref))
		return;
	kdat_ufile_unreserve(uf, p->size);
	kfree(p);
	kdat_ufile_put(uf);
}

void kdat_ufile_del_ring(struct kdat_ufile *uf, struct kdat_uring *r)
{
	mutex_lock(&uf->lock);
	xa_erase(&uf->rings, r->pgoff);
	uf->ring_bytes -= r->side_bytes;
	mutex_unlock(&uf->lock);
	kdat_ring_pages_put(r->pages);
}

const struct kdat_uops kdat_file_uops = {
	.reserve = kdat_uobj_reserve,
	.commit = kdat_uobj_commit,
	.forget = kdat_uobj_forget,
	.evd_init = kdat_uevd_init,
	.evd_post = kdat_uevd_post,
	.evd_destroy = kdat_uevd_destroy,
	.evd_cq_account = kdat_uevd_cq_account,
	.uncharge = kdat_uobj_uncharge,
	.uncharge_sync = kdat_uobj_uncharge_sync,
	.evd_count = kdat_uevd_count,
	.srq_init = kdat_usrq_init,
	.srq_ring_error = kdat_srq_ring_error,
	.ring_free = kdat_uring_free,
	.ia_closing = kdat_uevd_wake_ia,
};
