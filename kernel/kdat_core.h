/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Internal definitions of the kdat module: the DAT registry and the ib_core
 * provider.  Consumers never include this file; they use <dat/kdat.h>.
 *
 * Object model
 *   Every DAT object starts with struct kdat_obj, whose first member is the
 *   provider table pointer (DAT_HANDLE_TO_PROVIDER).  A DAT handle is the
 *   object's address.  The registry keeps every live handle in one xarray,
 *   so a NULL, freed, stale or wrong-type handle is refused with
 *   DAT_INVALID_HANDLE before anything is dereferenced.  Objects are
 *   reference counted; memory is returned through RCU so a lookup racing
 *   with a free never touches freed memory.
 *
 *   Every object belongs to one IA and sits on the IA's object list so an
 *   abrupt close or a device removal can tear everything down in
 *   dependency order: RSP, EP, CR, PSP, SRQ, LMR, EVD, PZ, CNO (user IAs).
 */
#ifndef KDAT_CORE_H
#define KDAT_CORE_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/hash.h>
#include <linux/rcupdate.h>
#include <linux/wait_bit.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/socket.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include <dat/kdat.h>
#include "kdat_hooks.h"
#include "uring.h"

/*
 * The kDAPL provider's version.  1.1: the kernel flavour's
 * DAT_DTO_COMPLETION_EVENT_DATA carries kdat_operation, kdat_flags and
 * kdat_immed_data, so DAT_EVENT grew; a consumer module built against
 * 1.0 headers must be rebuilt (modversions refuses to load it).
 */
#define KDAT_VERSION_MAJOR	1
#define KDAT_VERSION_MINOR	1
#define KDAT_PROVIDER_NAME	"kdat_ib"

/*
 * A function of a data path (a post, a completion, a dequeue, the ioctl
 * entry), in a section of its own aligned to a power of two at least its
 * size, so that it lies within one 4 KiB page (the module loader aligns
 * each section; a section's own alignment, not padding between functions
 * that objtool would see after a noreturn call).  The test rig's QEMU TCG
 * does not chain a jump into another page, it looks the target up: one
 * straddling function made libdat's receive post 60% dearer
 * (user/hot.hpp).  On hardware it keeps a path's code in few pages.
 * tests/host/lint.sh fails when one outgrows its alignment.
 */
#define KDAT_DATA_PATH(name, align) \
	__section(".text.kdat_dp." #name) __aligned(align)

/*
 * Number of handle types we count.  CNOs are uDAPL only: the kernel
 * flavour's DAT_HANDLE_TYPE has none, so theirs follows the last one
 * (the number /dev/kdat's KDAT_TYPE_CNO names).
 */
#define KDAT_HANDLE_TYPE_CNO	((DAT_HANDLE_TYPE)(DAT_HANDLE_TYPE_SRQ + 1))
#define KDAT_NTYPES		(KDAT_HANDLE_TYPE_CNO + 1)

struct kdat_ia;
struct kdat_evd;
struct kdat_srq;
struct kdat_ufile;
struct kdat_uring;

/* kdat_obj.flags bits */
enum {
	KDAT_OBJ_PUBLISHED,		/* in the handle table */
	KDAT_OBJ_GONE,			/* destroyed: unpublished for good */
	KDAT_OBJ_TORN,			/* IA teardown visited it */
	KDAT_OBJ_HW_GONE,		/* device removal visited it */
	KDAT_OBJ_USE_WAITER,		/* someone waited for its uses to go */
	KDAT_OBJ_CHARGED,		/* charged to an rdma cgroup (uobj.c) */
};

struct kdat_obj {
	DAT_PROVIDER *provider;		/* must stay first */
	DAT_HANDLE_TYPE type;
	struct kref ref;		/* memory */
	atomic_t usecnt;		/* >0 calls inside, -1 destroy claimed */
	unsigned long flags;		/* KDAT_OBJ_* */
	struct kdat_ia *ia;		/* the IA itself for an IA */
	struct list_head ia_node;	/* on ia->objs, under ia->lock */
	DAT_CONTEXT context;
	struct rcu_head rcu;
	struct llist_node deferred;	/* last put where sleeping is barred */
	u32 uid;			/* ID in the owning file, 0 if none */
	/* a user object's rdma cgroup charge, while KDAT_OBJ_CHARGED */
	struct ib_rdmacg_object cg;
	/* frees the containing object; called once, from the last put */
	void (*release)(struct kdat_obj *obj);
};

/* ---- object layer (object.c) ---- */
void kdat_obj_init(struct kdat_obj *obj, DAT_HANDLE_TYPE type,
		   DAT_PROVIDER *provider, struct kdat_ia *ia,
		   void (*release)(struct kdat_obj *obj));
int kdat_obj_publish(struct kdat_obj *obj);
void kdat_obj_flush_deferred(void);
void kdat_obj_unpublish(struct kdat_obj *obj);
void kdat_obj_commit(struct kdat_obj *obj);
struct kdat_obj *kdat_obj_get(DAT_HANDLE h, DAT_HANDLE_TYPE type);
struct kdat_obj *kdat_obj_get_any(DAT_HANDLE h);
void kdat_obj_put(struct kdat_obj *obj);
static inline void kdat_obj_hold(struct kdat_obj *obj)
{
	kref_get(&obj->ref);
}
/*
 * A work item of @obj that holds a reference while it is queued: the
 * caller holds one too, so dropping ours when it was queued already is
 * never the last.  Any context.
 */
static inline void kdat_obj_queue_work(struct kdat_obj *obj,
				       struct workqueue_struct *wq,
				       struct work_struct *w)
{
	kdat_obj_hold(obj);
	if (!queue_work(wq, w))
		kdat_obj_put(obj);
}
/* Wait for such a work item to end; one cancelled gives its reference. */
static inline void kdat_obj_cancel_work_sync(struct kdat_obj *obj,
					     struct work_struct *w)
{
	if (cancel_work_sync(w))
		kdat_obj_put(obj);
}
/*
 * The rest of a ring drain that used up its budget (drain_work,
 * sring_work).  Handed on by a kick or a completion: at once.  By that
 * work itself (the user refilled the ring as fast as it was read, or
 * keeps rewriting its tail): a jiffy later, so a user cannot keep a
 * kernel worker busy without a pause, which starved every user task of
 * the debug kernel's guest.
 */
static inline void kdat_obj_queue_drain(struct kdat_obj *obj,
					struct workqueue_struct *wq,
					struct delayed_work *dw)
{
	kdat_obj_hold(obj);
	if (!queue_delayed_work(wq, dw, current_work() == &dw->work ? 1 : 0))
		kdat_obj_put(obj);
}
static inline void kdat_obj_cancel_drain_sync(struct kdat_obj *obj,
					      struct delayed_work *dw)
{
	if (cancel_delayed_work_sync(dw))
		kdat_obj_put(obj);
}
/* An object's address as a compact xarray index (linear map, 8-aligned). */
static inline unsigned long kdat_obj_key(const struct kdat_obj *obj)
{
	return ((unsigned long)obj - PAGE_OFFSET) >> 3;
}
struct kdat_obj *kdat_obj_get_use(DAT_HANDLE h, DAT_HANDLE_TYPE type);
void kdat_obj_drain_uses(struct kdat_obj *obj);
void kdat_obj_put_use(struct kdat_obj *obj);
DAT_RETURN kdat_obj_claim(struct kdat_obj *obj, int held);
bool kdat_obj_claim_wait(struct kdat_obj *obj, int held);
void kdat_obj_unclaim(struct kdat_obj *obj, int held);
void kdat_free_begin(struct kdat_obj *obj);
void kdat_free_end(struct kdat_obj *obj);
int kdat_call_begin(void) __acquires(&kdat_srcu);
void kdat_call_end(int idx) __releases(&kdat_srcu);
void kdat_calls_sync(void);
int kdat_registry_init(void);
void kdat_registry_exit(void);
int kdat_debugfs_init(void);
void kdat_debugfs_exit(void);

/* ---- fault injection for the race tests (fault.c) ---- */
struct dentry;
struct kdat_ep;
void kdat_fault_debugfs_init(struct dentry *dir);
extern unsigned int kdat_fault_cm;	/* a kdat_fault_cm_at, or 0 */
/* where an active EP's CM handler may park (kdat/fault_cm_hold's values) */
enum kdat_fault_cm_at {
	KDAT_FAULT_CM_NONE,
	KDAT_FAULT_CM_ADDR,		/* ADDR_RESOLVED, before acting on it */
	KDAT_FAULT_CM_ROUTE,		/* ROUTE_RESOLVED, before acting on it */
	KDAT_FAULT_CM_REQUEST,		/* QP made, EP found connecting */
};
bool __kdat_fault_cm_park(struct kdat_ep *ep, enum kdat_fault_cm_at at);
void kdat_fault_cm_resume(void);
extern unsigned int kdat_fault_no_opener;
extern unsigned int kdat_fault_new_qp_post_on;

/*
 * A new QP's post of the @n-th receive waiting in its EP's ring (from 0):
 * fail it if told (kdat/fault_new_qp_post).
 */
static inline bool kdat_fault_new_qp_post(u32 n)
{
	return unlikely(READ_ONCE(kdat_fault_new_qp_post_on)) && n == 1;
}

/*
 * An EP's CM handler at @at: park if told (fault.c).  True if it parked;
 * the caller then reports its return with kdat_fault_cm_resume().
 */
static inline bool kdat_fault_cm_park(struct kdat_ep *ep,
				      enum kdat_fault_cm_at at)
{
	if (unlikely(READ_ONCE(kdat_fault_cm)))
		return __kdat_fault_cm_park(ep, at);
	return false;
}

/* a path of one EP that kdat_test parks (fault.c) */
struct kdat_fault_park {
	struct kdat_ep *ep;		/* whose path parks; NULL: nobody's */
	atomic_t parked;		/* parks so far */
};
extern struct kdat_fault_park kdat_fault_gone, kdat_fault_qp;
void __kdat_fault_park(struct kdat_fault_park *p, struct kdat_ep *ep,
		       const u32 *gen);

/*
 * The CM handler's end of connection generation @gen of @ep, the EP just
 * made Disconnected: park if kdat_test said so for this EP.
 */
static inline void kdat_fault_gone_park(struct kdat_ep *ep, u32 gen)
{
	if (unlikely(READ_ONCE(kdat_fault_gone.ep) == ep))
		__kdat_fault_park(&kdat_fault_gone, ep, &gen);
}

/* @ep's QP was just destroyed: park if kdat_test said so. */
static inline void kdat_fault_qp_park(struct kdat_ep *ep)
{
	if (unlikely(READ_ONCE(kdat_fault_qp.ep) == ep))
		__kdat_fault_park(&kdat_fault_qp, ep, NULL);
}

/* ---- device / IA (ia.c) ---- */
struct kdat_device {
	struct ib_device *ibdev;
	struct kref ref;		/* client + one per IA */
	DAT_PROVIDER provider;		/* per-device copy, device_name set */
	DAT_PROVIDER_INFO info;
	struct mutex lock;		/* protects ias */
	struct list_head ias;
	bool removed;			/* remove_one ran: no new IAs */
	struct list_head node;		/* kdat_devices, until released */
	struct list_head exit_node;	/* module exit's sweep */
};

/*
 * What an IA opened through /dev/kdat needs from the char device.  The
 * provider reaches the char device only through these (uobj.c).
 */
struct kdat_uops {
	/* a per-file ID for @obj, reserved until the ioctl commits it */
	int (*reserve)(struct kdat_ia *ia, struct kdat_obj *obj);
	void (*commit)(struct kdat_ia *ia, struct kdat_obj *obj);
	void (*forget)(struct kdat_ia *ia, struct kdat_obj *obj);
	/* the EVD's mmapped event ring */
	int (*evd_init)(struct kdat_evd *evd);
	/* @must_fit: false (nothing written, nothing reported) if full */
	bool (*evd_post)(struct kdat_evd *evd, const DAT_EVENT *ev,
			 struct kdat_srq *srq, bool must_fit);
	void (*evd_destroy)(struct kdat_evd *evd);
	/*
	 * Count @bytes more (or, negative, fewer) of the EVD's CQ against
	 * the file's cap; -ENOMEM past it.  Under evd->cq_lock.
	 */
	int (*evd_cq_account)(struct kdat_evd *evd, long bytes);
	/* give back @obj's rdma cgroup charge now (its device is going) */
	void (*uncharge)(struct kdat_obj *obj);
	/* wait for the uncharges others are making (an IA close's) */
	void (*uncharge_sync)(struct kdat_ia *ia);
	u32 (*evd_count)(struct kdat_evd *evd);	/* events not consumed */
	/* the SRQ's mmapped post ring, and a refused entry of it */
	int (*srq_init)(struct kdat_srq *srq);
	/* false: no room to report it now, the entry stays in the ring */
	bool (*srq_ring_error)(struct kdat_srq *srq, u64 cookie,
			       DAT_RETURN why);
	void (*ring_free)(struct kdat_uring *r);
	/* the IA is closing: wake every waiter of its EVDs */
	void (*ia_closing)(struct kdat_ia *ia);
};

#define KDAT_LMR_CACHE	64

struct kdat_ia {
	struct kdat_obj obj;
	struct kdat_device *dev;
	struct ib_device *ibdev;
	struct list_head dev_node;	/* on dev->ias */
	struct mutex lock;		/* object list, teardown */
	struct list_head objs;
	/* set once at open; RCU: posters pin it while the IA closes */
	struct kdat_evd __rcu *async_evd;
	bool closing;			/* under lock: refuses new children */
	atomic_t uncharging;		/* rdma cgroup uncharges running (uobj.c) */
	bool dead;			/* device removed: calls fail */
	/*
	 * Frees of children running outside the IA teardown (a consumer's
	 * dat_*_free): such a free unpublishes its object early but drops
	 * its parents' users counts last, so the teardown waits for it
	 * before it frees the parents.
	 */
	atomic_t frees;
	struct sockaddr_storage addr;	/* the IA address (IPv4 of port 1) */
	struct xarray lmrs;		/* lmr_context -> LMR */
	u32 next_lmr;
	/* posts' first look for a context (lmr.c): LMRs whose slot was free */
	struct kdat_lmr *lmr_cache[KDAT_LMR_CACHE];
	struct kdat_ufile *ufile;	/* owning /dev/kdat file, or NULL */
	const struct kdat_uops *uops;	/* its ops, or NULL */
	struct net *net;		/* the opener's network namespace */
	u32 flags;			/* KDAT_IA_OPEN_* (READ_ONCE) */
	/*
	 * A kernel IA's consumer module, set before the IA is listed, or
	 * NULL (ia.c, "kernel consumers that unload").
	 */
	struct module *owner;
};

extern struct ib_client kdat_ib_client;
/* module exit: remove_one closes the IAs kernel consumers left open */
extern bool kdat_unloading;
void kdat_close_leaked_ias(void);
void kdat_consumer_upcall(DAT_UPCALL_FUNC fn);
int kdat_consumers_init(void);
void kdat_consumers_exit(void);
extern const DAT_PROVIDER kdat_ib_provider_template;
void kdat_ia_fill_addr(struct kdat_ia *ia);
void kdat_ia_async_error(struct kdat_ia *ia, DAT_EVENT_NUMBER num,
			 DAT_HANDLE h, DAT_COUNT reason, bool may_upcall);

/*
 * DAT 1.2 has no event number of its own for the SRQ low watermark: it is
 * an affiliated asynchronous error whose data names the SRQ and carries
 * the reason DAT_SRQ_LOW_WATERMARK_EVENT.
 */
#define KDAT_SRQ_LW_EVENT	DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR
int kdat_ia_link(struct kdat_ia *ia, struct kdat_obj *obj);
int kdat_ia_link_locked(struct kdat_ia *ia, struct kdat_obj *obj);
DAT_RETURN kdat_ia_link_error(int err);
void kdat_ia_unlink(struct kdat_obj *obj);
struct kdat_evd *kdat_ia_get_async_evd(struct kdat_ia *ia);
bool kdat_ia_add_user(struct kdat_ia *ia, struct kdat_obj *obj,
		      atomic_t *users);

/* ---- PZ (pz.c) ---- */
struct kdat_pz {
	struct kdat_obj obj;
	struct ib_pd *pd;
	atomic_t users;			/* EPs, SRQs, LMRs using it */
	struct ib_mr *atomic_mr;	/* global rkey with atomics, or NULL */
};

bool kdat_remote_access(void);
DAT_RETURN kdat_pz_use(struct kdat_ia *ia, DAT_PZ_HANDLE h,
		       struct kdat_pz **pzp);
void kdat_pz_unuse(struct kdat_pz *pz);
void kdat_pz_hw_destroy(struct kdat_pz *pz);

/* ---- EVD (evd.c) ---- */
struct kdat_srq;

/* One queued event plus what reaping it must account for. */
struct kdat_event {
	DAT_EVENT ev;
	struct kdat_srq *srq;		/* SRQ receive: outstanding-- on reap */
};

struct kdat_evd {
	struct kdat_obj obj;
	spinlock_t lock;
	DAT_EVD_FLAGS flags;
	DAT_COUNT qlen;
	struct kdat_event *ring;
	u32 head, count;
	DAT_UPCALL_POLICY policy;
	DAT_UPCALL_OBJECT upcall;
	bool in_upcall;			/* one dispatcher at a time */
	struct task_struct *upcall_task;	/* the dispatcher, if any */
	/*
	 * The run that dispatches (or will) while in_upcall: upcall_work, or
	 * the work that posted the event and dispatches inline (a CQ
	 * poller's, or any other), or NULL (a thread); what a wait for the
	 * upcall waits for (kdat_evd_quiesce_begin)
	 */
	struct work_struct *upcall_run;
	atomic_t quiescers;		/* waiting for the upcall to end */
	bool dead;			/* freed: drop new events */
	struct kdat_uring *uring;	/* user EVD: the mmapped event ring */
	wait_queue_head_t upcall_wq;	/* TEARDOWN waits here */
	struct work_struct upcall_work;	/* dispatch from atomic context */
	struct ib_cq *cq;		/* DTO stream only */
	/*
	 * A CQ whose EVD was freed inside a work item (an upcall a CQ's
	 * poller ran): cq_free_work frees it once that run ends.
	 */
	struct ib_cq *cq_dying;
	struct work_struct cq_free_work;
	struct mutex cq_lock;		/* cq's size and cq_need */
	int cq_need;			/* completions its QPs may hold */
	atomic_t users;			/* EPs / PSPs feeding it */
	/* of users: EPs of another IA, connection events only (ep.c) */
	atomic_t foreign_users;
	DAT_COMPLETION_FLAGS dto_class;	/* completion-flag class of streams */
	int dto_streams;		/* DTO streams (under ia->lock) */
	bool overflowed;
	/*
	 * SRQs whose EPs completed into this EVD's CQ, pinned until the EVD
	 * goes: a flushed receive's completion may still wait in the CQ
	 * after its EP and SRQ were freed, and it names the SRQ's memory.
	 */
	struct xarray srqs;
	/*
	 * Under lock: the CNO this (user) EVD triggers, referenced and
	 * counted in its users; on cno->evds through cno_node (also under
	 * cno->lock); whether it is disabled (dat_evd_disable) and how many
	 * dat_evd_wait waiters sleep in the kernel: neither triggers (cno.c).
	 */
	struct kdat_cno *cno;
	struct list_head cno_node;
	bool cno_disabled;
	int uwaiters;
};

void kdat_evd_post(struct kdat_evd *evd, const DAT_EVENT *ev,
		   struct kdat_srq *srq, bool may_upcall);
bool kdat_evd_post_fit(struct kdat_evd *evd, const DAT_EVENT *ev);
void kdat_event_reaped(struct kdat_event *e);
void kdat_evd_hw_destroy(struct kdat_evd *evd);
DAT_RETURN kdat_evd_add_foreign_user(struct kdat_evd *evd);
void kdat_evd_busy_poll(struct kdat_evd *evd);
void kdat_evd_drop_foreign_user(struct kdat_evd *evd);
int kdat_cq_grow(struct ib_cq *cq, int size);
void kdat_cq_flush(struct ib_cq *cq);
/* a CQ poller's run that waits for other CQs' pollers (evd.c) */
struct kdat_poller_wait {
	struct list_head node;
	struct work_struct *work;	/* the waiting run; NULL: not recorded */
	bool any;			/* for any run (kdat_poller_wait_any_begin) */
};

bool kdat_poller_wait_begin(struct kdat_poller_wait *pw,
			    struct ib_cq *const *cqs, int n);
bool kdat_in_a_cq_poller(void);
bool kdat_poller_wait_any_begin(struct kdat_poller_wait *pw);
void kdat_poller_wait_end(struct kdat_poller_wait *pw);
bool kdat_evd_polls_here(struct kdat_evd *evd);
/*
 * What one completion of a grown CQ is counted as against a user file's
 * cap: the largest entry of the queues of rxe (72 bytes, rounded up to
 * 128) and mlx5 (64 or 128).
 */
#define KDAT_CQE_BYTES	128
int kdat_evd_cq_charge(struct kdat_evd *evd, int n);
void kdat_evd_cq_uncharge(struct kdat_evd *evd, int n);
int kdat_evd_init(void);
void kdat_evd_exit(void);

/* ---- LMR (lmr.c) ---- */
struct kdat_lmr {
	struct kdat_obj obj;
	struct kdat_pz *pz;
	u32 context;
	void *va;
	u64 length;
	u64 dma;
	u32 rmr_context;		/* global rkey if remote privileges */
	struct ib_mr *mr;		/* user memory: registered, pinned */
	bool mapped;			/* read by posts under RCU */
	struct mutex hw_lock;		/* the teardown of the mapping */
	DAT_MEM_PRIV_FLAGS priv;
};

/* Translate one consumer triplet into an SGE, checking LMR, PZ and range. */
DAT_RETURN kdat_lmr_to_sge(struct kdat_ia *ia, struct kdat_pz *pz,
			   const DAT_LMR_TRIPLET *t, struct ib_sge *sge,
			   DAT_MEM_PRIV_FLAGS need);
void kdat_lmr_hw_destroy(struct kdat_lmr *lmr);

/* ---- SRQ (srq.c) ---- */
struct kdat_srq_buf {
	struct ib_cqe cqe;
	struct kdat_srq *srq;
	DAT_DTO_COOKIE cookie;
	struct list_head node;		/* free list */
};

struct kdat_srq {
	struct kdat_obj obj;
	struct kdat_pz *pz;
	struct ib_srq *srq;
	u32 dma_lkey;			/* kernel SRQ: its PD's local DMA lkey */
	spinlock_t lock;
	DAT_SRQ_STATE state;
	DAT_COUNT max_recv_dtos;	/* what query reports */
	DAT_COUNT max_recv_iov;
	DAT_COUNT low_watermark;
	bool lw_armed;
	DAT_COUNT available;		/* on the SRQ, not taken by an EP */
	DAT_COUNT outstanding;		/* posted, completion not reaped */
	DAT_COUNT nbufs;		/* trackers allocated */
	struct list_head free_bufs;
	struct list_head chunks;	/* tracker memory */
	struct mutex resize_lock;
	atomic_t eps;			/* EPs using it */
	/*
	 * QP address -> EP, for completions; KDAT_QP_GONE for a QP destroyed
	 * while its completions may still be in a CQ (kdat_srq_qp_gone)
	 */
	struct xarray qps;
	struct kdat_uring *uring;	/* user SRQ: the mmapped post ring */
	spinlock_t ring_lock;		/* one drainer at a time */
	u32 ring_head;			/* our copy of the ring's head */
	bool ring_refusal;		/* ring_lock: head is a refusal held */
	bool ring_freed;		/* ring_lock: dat_srq_free began */
	u32 unseen;			/* lock: returns never seen */
	/*
	 * User SRQ: the device's SRQ limit (not the DAT low watermark) is
	 * armed at hw_limit, so a device running low drains the post ring
	 * (srq.c); the event disarms it, limit_work arms it again.
	 */
	u32 hw_limit;			/* resize_lock; 0: not armed */
	struct work_struct limit_work;
	/* drains on what one drain call left in the post ring (its budget) */
	struct delayed_work drain_work;
	/*
	 * Receives charged to each recv EVD's CQ and to recv_cq (never
	 * shrinks); written under resize_lock and ia->lock.
	 */
	DAT_COUNT cq_charge;
	/* resize_lock: the receives of EPs without a recv EVD, or NULL */
	struct ib_cq *recv_cq;
	bool recv_cq_freeing;		/* hw_destroy frees it, lock dropped */
	/* recv_cq of an SRQ freed from an upcall, freed by cq_free_work */
	struct ib_cq *cq_dying;
	struct work_struct cq_free_work;
};

void kdat_srq_recv_done(struct ib_cq *cq, struct ib_wc *wc);
DAT_DTO_COMPLETION_STATUS kdat_dto_status(enum ib_wc_status s);
void kdat_srq_reaped(struct kdat_srq *srq);
void kdat_srq_reaped_unseen(struct kdat_srq *srq);
void kdat_srq_hw_destroy(struct kdat_srq *srq);
struct ib_cq *kdat_srq_recv_cq(struct kdat_srq *srq);
int kdat_srq_init(void);
void kdat_srq_exit(void);
/* SRQ limit and ring drain work: destroyed (run dry) at unload */
extern struct workqueue_struct *kdat_ring_wq;
/*
 * One drain call of a user's post or send ring takes at most this many
 * rings' worth of entries; a work item takes the rest.
 */
#define KDAT_DRAIN_RINGS	4
/* debugfs kdat/ring_spills: drains that left their rest to a work item */
enum { KDAT_SPILL_SRQ, KDAT_SPILL_EP };
extern atomic_long_t kdat_ring_spills[2];

/* ---- EP (ep.c) and connection management (cm.c) ---- */
struct kdat_ep;

struct kdat_wr {
	struct ib_cqe cqe;
	struct kdat_ep *ep;
	DAT_DTO_COOKIE cookie;
	u32 length;
	u32 nsge;			/* receive ring: SGEs kept for late post */
	bool suppress;			/* no event on success */
	u8 op;				/* send ring: KDAT_DTO_OP_* */
};

/* Free-running indices; slot = index % size (size need not be 2^n). */
struct kdat_wr_ring {
	struct kdat_wr *wr;
	struct ib_sge *sge;		/* receive ring only: size * iov */
	u32 size, iov;
	u32 head;			/* next post */
	u32 posted;			/* handed to the QP (receive ring) */
	u32 tail;			/* next completion */
};

/*
 * Work requests a QP's queue holds beyond what its EP takes: the marker
 * of ib_drain_qp (teardown) in each, and in the receive queue of an EP
 * without SRQ also gone_work's (kdat_ep_rq_flushed); the two may be
 * outstanding at once (a free from an upcall while gone_work waits).
 */
#define KDAT_SQ_MARKERS	1
#define KDAT_RQ_MARKERS	2
/* what a consumer may ask of either queue (ib_device_attr @d) */
#define KDAT_MAX_DTO_PER_EP(d)	((d)->max_qp_wr - KDAT_RQ_MARKERS)

struct kdat_ep {
	struct kdat_obj obj;
	/*
	 * Serialises the EP's control operations (connect, accept,
	 * disconnect, reset, modify, free, device removal) with each other;
	 * QP drains (reset, free, removal) run after dropping it, marked by
	 * resetting / hw_teardown.  The CM handler never takes it: it runs
	 * under the CM ID's handler
	 * lock and ignores an ID the EP no longer owns (kdat_ep_detach_qp
	 * takes that lock to let the ID go).
	 */
	struct mutex op_lock;
	/*
	 * The CM handler holds it from its last look at the state to the
	 * connection request's send (rdma_connect_locked); a disconnect and
	 * a free around their rdma_disconnect: that then comes before the
	 * look (no request goes out) or after the send (its QP goes to the
	 * error state, the attempt fails at the CM).  Taken under the CM
	 * ID's handler lock or under op_lock; nothing takes either while
	 * holding it.
	 */
	struct mutex connect_lock;
	/* a reset, free or device removal draining a QP it took */
	atomic_t hw_teardown;
	int cq_charge_s, cq_charge_r;	/* the QP's share of its EVDs' CQs */
	struct kdat_pz *pz;
	struct kdat_evd *recv_evd, *request_evd, *connect_evd;
	struct kdat_srq *srq;
	DAT_EP_ATTR attr;
	spinlock_t lock;		/* state, rings, post path */
	DAT_EP_STATE state;
	struct rdma_cm_id *cm_id;
	struct ib_qp *qp;
	struct ib_cq *own_cq;		/* for a stream with no EVD */
	struct kdat_wr_ring sq, rq;
	struct kdat_cr *cr;		/* accepting this CR */
	struct sockaddr_storage remote;
	DAT_PORT_QUAL remote_qual;
	DAT_PORT_QUAL local_qual;
	u8 private_data[DAT_MAX_PRIVATE_DATA_SIZE];
	DAT_COUNT private_data_size;
	/*
	 * The connection event that ends a connection waits for the recv
	 * CQ's poller in gone_work (kdat_ep_gone_work), never in the CM
	 * handler or under op_lock.  Under lock: the event and the
	 * connection generation it belongs to (conn_gen moves on at a
	 * reset; a free sets freed; after device removal the event is still
	 * posted, without the wait), whether one is pending,
	 * whether the work is waiting for the poller now (freeing the EP
	 * waits for that to end before it lets its EVDs go), and freed
	 * (also under op_lock: no event any more).
	 */
	struct work_struct gone_work;
	DAT_EVENT_NUMBER gone_event;
	u32 gone_gen;
	u32 conn_gen;
	bool gone_pending;
	bool gone_waiting;
	bool freed;
	/*
	 * gone_work's marker behind a QP's flushed receives (no SRQ): its
	 * completion says the device flushed them all (kdat_ep_rq_flushed).
	 */
	struct ib_cqe rq_marker;
	struct completion rq_marker_done;
	bool qp_error;		/* kdat moved this QP to error (lock) */
	/*
	 * Under lock: DAT_ASYNC_ERROR_EP_BROKEN was raised for connection
	 * generation broken_gen (a QP error, or the end of an SRQ EP's
	 * connection on an IA opened with KDAT_IA_OPEN_SRQ_EP_BROKEN).
	 */
	bool broken;
	u32 broken_gen;
	/*
	 * Under lock and op_lock: a reset took the QP and drains it without
	 * op_lock (the drain's upcalls may take it).  Until it is done the
	 * state stays as it was and nothing that would create a QP starts
	 * (connect, accept, reservation, modify: DAT_INVALID_STATE); another
	 * reset waits.  From an upcall of a poller the drain waits for, the
	 * reset hands its drain to reset_work (reset_id, reset_qp, reset_cq:
	 * the reset's, while resetting).
	 */
	bool resetting;
	struct work_struct reset_work;
	struct rdma_cm_id *reset_id;
	struct ib_qp *reset_qp;
	struct ib_cq *reset_cq;
	/*
	 * A free from an upcall of a poller its drain waits for hands the
	 * drain and the rest to free_work (what the free took: free_id,
	 * free_qp, free_cq, free_cr), counted as a free in flight.
	 */
	struct work_struct free_work;
	struct rdma_cm_id *free_id;
	struct ib_qp *free_qp;
	struct ib_cq *free_cq;
	struct kdat_cr *free_cr;
	/*
	 * Under lock: the RSP this EP is reserved for (state
	 * DAT_EP_STATE_RESERVED), until that RSP delivers its connection
	 * request or is freed.  Only compared, never dereferenced.
	 */
	struct kdat_psp *rsp;
	/*
	 * A /dev/kdat user's send ring (KDAT_FEATURE_SEND_RING, ep.c), set
	 * before the EP is visible.  sring_lock serialises its drainers;
	 * sring_head and sring_dead (no entry is posted any more: freed or
	 * device gone) are under it.  Under lock: sring_retired (send queue
	 * completions plus refused entries, published as the header's
	 * retired) and sq_reporting (completions popped from sq whose event
	 * is not posted yet: a refused entry waits for them, to stay in
	 * order).
	 */
	struct kdat_uring *sring;
	/* drains on what one drain call left in the ring (its budget) */
	struct delayed_work sring_work;
	spinlock_t sring_lock;
	u32 sring_head;
	u32 sring_retired;
	u32 sq_reporting;
	bool sring_dead;
};

/*
 * Under ep->lock: is the EP's own connect still wanted?  A
 * dat_ep_disconnect (or free) during address or route resolution finds no
 * connection to tear down (rdma_disconnect fails before rdma_connect),
 * reports DISCONNECTED and leaves the ID resolving: neither the CM
 * handler (cm.c) nor the QP it makes (kdat_ep_create_qp) may go on.
 */
static inline bool kdat_ep_connect_wanted(const struct kdat_ep *ep)
{
	return ep->state == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING &&
	       !ep->freed;
}

/*
 * Under ep->lock: is connection generation @gen still the EP's, with no
 * dat_ep_reset (a new generation) or dat_ep_free begun since?  What may
 * still be done or reported for that connection.
 */
static inline bool kdat_ep_gen_live(const struct kdat_ep *ep, u32 gen)
{
	return !ep->freed && ep->conn_gen == gen;
}

struct kdat_psp {
	struct kdat_obj obj;
	struct kdat_evd *evd;
	struct rdma_cm_id *cm_id;
	DAT_CONN_QUAL conn_qual;
	DAT_PSP_FLAGS flags;
	atomic_t pending;		/* CRs not yet accepted or rejected */
	/*
	 * An RSP (obj.type DAT_HANDLE_TYPE_RSP) is a PSP bound to one EP,
	 * which it holds a reference on; NULL for a PSP.
	 */
	struct kdat_ep *ep;
};

struct kdat_cr {
	struct kdat_obj obj;
	struct kdat_psp *psp;		/* holds a reference */
	struct rdma_cm_id *cm_id;	/* owned until accept/reject */
	struct sockaddr_storage remote;
	DAT_CONN_QUAL remote_port;
	u8 private_data[DAT_MAX_PRIVATE_DATA_SIZE];
	DAT_COUNT private_data_size;
	bool counted;			/* in psp->pending */
	/* an RSP's request: its reserved EP (holds a reference), or NULL */
	struct kdat_ep *ep;
};

/* Most segments of one EP work request. */
#define KDAT_EP_MAX_IOV			16
/* Defaults for EP attributes given as DAT_HW_DEFAULT (or no attributes) */
#define KDAT_EP_DEFAULT_MSG_SIZE	(1U << 20)
#define KDAT_EP_DEFAULT_DTOS		16

int kdat_rdma_read_iov_max(const struct ib_device *dev);
int kdat_rdma_write_iov_max(const struct ib_device *dev);
bool kdat_srq_ep_pz_may_differ(const struct ib_device *dev);
/* for kdat_ep_gone_later: flush, post no connection event */
#define KDAT_EP_GONE_NO_EVENT	((DAT_EVENT_NUMBER)0)
void kdat_ep_gone_later(struct kdat_ep *ep, DAT_EVENT_NUMBER num, u32 gen);
void kdat_ep_qp_error(struct kdat_ep *ep, struct ib_qp *qp);
int kdat_ep_init(void);
void kdat_ep_exit(void);
int kdat_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
unsigned long kdat_qp_key(const struct ib_qp *qp);
#define KDAT_QP_GONE	xa_mk_value(0)
void kdat_srq_qp_gone(struct kdat_srq *srq, unsigned long key,
		      struct ib_cq *cq);
void kdat_srq_qp_gone_sync(struct ib_cq *cq);
/*
 * 0; or -EIO: the EP keeps the QP (in the error state) and @id, for its
 * end to drain; other errors: the EP took no QP, and an accept's @id
 * stays the caller's (a connect's ID is the EP's from dat_ep_connect).
 */
int kdat_ep_create_qp(struct kdat_ep *ep, struct rdma_cm_id *id);
void kdat_ep_await_reset(struct kdat_ep *ep);
void kdat_ep_hw_destroy(struct kdat_ep *ep);
void kdat_psp_hw_destroy(struct kdat_psp *psp);
void kdat_cr_hw_destroy(struct kdat_cr *cr);
u32 kdat_ep_busy_subtype(DAT_EP_STATE state);
bool kdat_ep_connection_event(struct kdat_ep *ep, DAT_EVENT_NUMBER num,
			      u32 gen);
void kdat_ep_srq_broken(struct kdat_ep *ep, u32 gen);

/* ---- CNO (cno.c): Consumer Notification Objects, user IAs only ---- */
struct kdat_cno {
	struct kdat_obj obj;
	spinlock_t lock;		/* inside evd->lock */
	struct list_head evds;		/* EVDs feeding it, under lock */
	struct kdat_evd *trig;		/* lock: triggered by, or NULL */
	atomic_t users;			/* EVDs holding it */
	bool dead;			/* lock: freed */
	wait_queue_head_t wq;		/* dat_cno_wait */
};

DAT_RETURN kdat_cno_create(struct kdat_ia *ia, struct kdat_cno **cnop);
DAT_RETURN kdat_cno_free(DAT_HANDLE h);
DAT_RETURN kdat_cno_wait(struct kdat_cno *cno, u32 timeout_us, u32 *evd);
DAT_RETURN kdat_evd_set_cno(struct kdat_evd *evd, struct kdat_cno *cno,
			    bool enabled);
void kdat_evd_drop_cno(struct kdat_evd *evd);
bool kdat_evd_upcall_drop(struct kdat_evd *evd, const struct module *mod,
			  bool all);
void kdat_upcalls_sync(void);
void kdat_cno_evd_posted(struct kdat_evd *evd);
void kdat_cno_evd_wait(struct kdat_evd *evd, bool begin);
void kdat_cno_wake_ia(struct kdat_ia *ia);

/* ---- /dev/kdat (chardev.c, uobj.c, uring.c) ---- */
int kdat_chardev_init(void);
void kdat_chardev_exit(void);
int kdat_registry_for_each(int (*fn)(const char *name, void *data),
			   void *data);

/* ---- user variants of creates (ia.c, lmr.c, srq.c) ---- */
DAT_RETURN kdat_ia_open(const char *name, DAT_COUNT qlen,
			struct kdat_ufile *uf, const struct kdat_uops *uops,
			unsigned long opener_ip, struct kdat_ia **iap);
void kdat_ia_close(struct kdat_ia *ia, int held);
DAT_RETURN kdat_obj_destroy(struct kdat_obj *obj);
DAT_RETURN kdat_lmr_create_user(struct kdat_ia *ia, DAT_PZ_HANDLE pz,
				u64 addr, u64 length, DAT_MEM_PRIV_FLAGS priv,
				struct kdat_lmr **lmrp);
void kdat_srq_drain(struct kdat_srq *srq);
/* the EP send ring of a /dev/kdat user (KDAT_FEATURE_SEND_RING) */
int kdat_uep_init(struct kdat_ep *ep);
void kdat_ep_ring_drain(struct kdat_ep *ep);
void kdat_ep_ring_kick(struct kdat_ep *ep, bool defer);
void kdat_ep_ring_sync(struct kdat_ep *ep);
DAT_RETURN kdat_ep_post_user(struct kdat_ep *ep, u32 op, u32 n,
			     const DAT_LMR_TRIPLET *t, DAT_DTO_COOKIE ck,
			     const DAT_RMR_TRIPLET *r, u64 compare_add,
			     u64 swap, u32 immed_data, u32 flags);
/* Under RCU (any flavour): the LMR lookups rely on it. */
DAT_RETURN kdat_srq_post_one(struct kdat_srq *srq, DAT_COUNT n,
			     const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie);

/* ---- provider entry points (one per DAT call, kdat_ib_*) ---- */
DAT_RETURN kdat_ib_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			   DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia);
DAT_RETURN kdat_ib_ia_open_from(const DAT_NAME_PTR name, DAT_COUNT qlen,
				DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia,
				unsigned long opener_ip);
DAT_RETURN kdat_ib_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags);
DAT_RETURN kdat_ib_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd,
			    DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
			    DAT_PROVIDER_ATTR_MASK pmask,
			    DAT_PROVIDER_ATTR *pattr);
DAT_RETURN kdat_ib_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz);
DAT_RETURN kdat_ib_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask,
			    DAT_PZ_PARAM *param);
DAT_RETURN kdat_ib_pz_free(DAT_PZ_HANDLE pz);
DAT_RETURN kdat_ib_evd_kcreate(DAT_IA_HANDLE ia, DAT_COUNT qlen,
			       DAT_UPCALL_POLICY policy,
			       const DAT_UPCALL_OBJECT *upcall,
			       DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd);
DAT_RETURN kdat_ib_evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask,
			     DAT_EVD_PARAM *param);
DAT_RETURN kdat_ib_evd_modify_upcall(DAT_EVD_HANDLE evd,
				     DAT_UPCALL_POLICY policy,
				     const DAT_UPCALL_OBJECT *upcall);
DAT_RETURN kdat_ib_evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT qlen);
DAT_RETURN kdat_ib_evd_post_se(DAT_EVD_HANDLE evd, const DAT_EVENT *ev);
DAT_RETURN kdat_ib_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *ev);
DAT_RETURN kdat_ib_evd_free(DAT_EVD_HANDLE evd);
DAT_RETURN kdat_ib_lmr_kcreate(DAT_IA_HANDLE ia, DAT_MEM_TYPE type,
			       DAT_REGION_DESCRIPTION region, DAT_VLEN length,
			       DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
			       DAT_MEM_OPTIMIZE_FLAGS opt, DAT_LMR_HANDLE *lmr,
			       DAT_LMR_CONTEXT *lctx, DAT_RMR_CONTEXT *rctx,
			       DAT_VLEN *reg_size, DAT_VADDR *reg_addr);
DAT_RETURN kdat_ib_lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask,
			     DAT_LMR_PARAM *param);
DAT_RETURN kdat_ib_lmr_free(DAT_LMR_HANDLE lmr);
DAT_RETURN kdat_ib_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			      DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *srq);
DAT_RETURN kdat_ib_srq_free(DAT_SRQ_HANDLE srq);
DAT_RETURN kdat_ib_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n,
				 DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie);
DAT_RETURN kdat_ib_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask,
			     DAT_SRQ_PARAM *param);
DAT_RETURN kdat_ib_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT max);
DAT_RETURN kdat_ib_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT lw);
DAT_RETURN kdat_ib_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			     DAT_EVD_HANDLE recv_evd,
			     DAT_EVD_HANDLE request_evd,
			     DAT_EVD_HANDLE connect_evd,
			     const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep);
DAT_RETURN kdat_ib_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
				      DAT_EVD_HANDLE recv_evd,
				      DAT_EVD_HANDLE request_evd,
				      DAT_EVD_HANDLE connect_evd,
				      DAT_SRQ_HANDLE srq,
				      const DAT_EP_ATTR *attr,
				      DAT_EP_HANDLE *ep);
DAT_RETURN kdat_ib_ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
			    DAT_EP_PARAM *param);
DAT_RETURN kdat_ib_ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
			     const DAT_EP_PARAM *param);
DAT_RETURN kdat_ib_ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr,
			      DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
			      DAT_COUNT pdata_size, const DAT_PVOID pdata,
			      DAT_QOS qos, DAT_CONNECT_FLAGS flags);
DAT_RETURN kdat_ib_ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags);
DAT_RETURN kdat_ib_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n,
				DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				DAT_COMPLETION_FLAGS flags);
DAT_RETURN kdat_ib_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n,
				DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				DAT_COMPLETION_FLAGS flags);
DAT_RETURN kdat_ib_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n,
				     DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				     const DAT_RMR_TRIPLET *remote,
				     DAT_COMPLETION_FLAGS flags);
DAT_RETURN kdat_ib_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n,
				      DAT_LMR_TRIPLET *iov,
				      DAT_DTO_COOKIE cookie,
				      const DAT_RMR_TRIPLET *remote,
				      DAT_COMPLETION_FLAGS flags);

/* IB extensions (kdat.h kdat_ep_post_*); the handle is a kdat EP. */
DAT_RETURN kdat_ib_ep_post_rdma_write_immed(DAT_EP_HANDLE ep, DAT_COUNT n,
					    DAT_LMR_TRIPLET *iov,
					    DAT_DTO_COOKIE cookie,
					    const DAT_RMR_TRIPLET *remote,
					    u32 immed_data,
					    DAT_COMPLETION_FLAGS flags);
DAT_RETURN kdat_ib_ep_post_atomic(DAT_EP_HANDLE ep, bool cmp_swap,
				  u64 compare_add, u64 swap,
				  const DAT_LMR_TRIPLET *local,
				  DAT_DTO_COOKIE cookie,
				  const DAT_RMR_TRIPLET *remote,
				  DAT_COMPLETION_FLAGS flags);
void kdat_dto_recv_op(const struct ib_wc *wc,
		      DAT_DTO_COMPLETION_EVENT_DATA *d);
DAT_RETURN kdat_ib_ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *state,
				 DAT_BOOLEAN *recv_idle,
				 DAT_BOOLEAN *request_idle);
DAT_RETURN kdat_ib_ep_free(DAT_EP_HANDLE ep);
DAT_RETURN kdat_ib_ep_reset(DAT_EP_HANDLE ep);
DAT_RETURN kdat_ib_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs,
				 DAT_COUNT *span);
DAT_RETURN kdat_ib_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft,
				    DAT_COUNT hard);
DAT_RETURN kdat_ib_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			      DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
			      DAT_PSP_HANDLE *psp);
DAT_RETURN kdat_ib_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask,
			     DAT_PSP_PARAM *param);
DAT_RETURN kdat_ib_psp_free(DAT_PSP_HANDLE psp);
DAT_RETURN kdat_ib_rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			      DAT_EP_HANDLE ep, DAT_EVD_HANDLE evd,
			      DAT_RSP_HANDLE *rsp);
DAT_RETURN kdat_ib_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask,
			     DAT_RSP_PARAM *param);
DAT_RETURN kdat_ib_rsp_free(DAT_RSP_HANDLE rsp);
DAT_RETURN kdat_ib_cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask,
			    DAT_CR_PARAM *param);
DAT_RETURN kdat_ib_cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep,
			     DAT_COUNT pdata_size, const DAT_PVOID pdata);
DAT_RETURN kdat_ib_cr_reject(DAT_CR_HANDLE cr);

/* Small helpers shared by the object files. */
#define KDAT_ERR(type, sub)	((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (sub)))

static inline bool kdat_ia_dead(struct kdat_ia *ia)
{
	return READ_ONCE(ia->dead);
}

/*
 * The triplets of @n segments of an ioctl argument or of a ring entry the
 * user may be rewriting meanwhile: each field is read once.
 */
static inline void kdat_useg_to_triplets(const struct kdat_useg *s, u32 n,
					 DAT_LMR_TRIPLET *t)
{
	u32 i;

	for (i = 0; i < n; i++) {
		t[i].lmr_context = READ_ONCE(s[i].lmr_context);
		t[i].virtual_address = READ_ONCE(s[i].addr);
		t[i].segment_length = READ_ONCE(s[i].length);
	}
}

/*
 * The hot path's object layer, inline: under emulation every call and
 * return costs as much as the work of a small function, and the receive
 * post makes a dozen of them otherwise (docs/benchmarks.md).
 */
#define KDAT_HANDLE_CACHE_BITS	10
extern struct kdat_obj *kdat_handle_cache[1 << KDAT_HANDLE_CACHE_BITS];
struct kdat_obj *kdat_handle_lookup_xa(DAT_HANDLE h);

static inline unsigned int kdat_handle_hash(const void *h)
{
	return hash_long(kdat_obj_key(h), KDAT_HANDLE_CACHE_BITS);
}

/* The published object whose handle is @h, or NULL.  Under RCU. */
static __always_inline struct kdat_obj *kdat_handle_lookup(DAT_HANDLE h)
{
	struct kdat_obj *obj;

	/* pairs with kdat_obj_publish()'s cmpxchg_release: a hit is built */
	obj = smp_load_acquire(&kdat_handle_cache[kdat_handle_hash(h)]);
	if (likely((void *)obj == h))
		return obj;
	return kdat_handle_lookup_xa(h);
}

/*
 * Drop a shared use.  A call that claimed the object it was using (an IA
 * close, kdat_obj_claim_wait with @held 1) finds the claim here and has
 * nothing left to drop.  Only a teardown waits for the count to drop
 * (kdat_obj_wait_uses): the fully ordered decrement pairs with the
 * barrier after its flag, so either it sees the new count or we see the
 * flag.  The flag stays once set (a claim given back leaves it): later
 * uses of that object only check the wait queue as well.
 */
static __always_inline void kdat_obj_unuse(struct kdat_obj *obj)
{
	int old = atomic_fetch_add_unless(&obj->usecnt, -1, -1);

	if (unlikely(old > 0 && old <= 2 &&
		     test_bit(KDAT_OBJ_USE_WAITER, &obj->flags)))
		wake_up_var(&obj->usecnt);
}

/*
 * Take a shared use of a pinned object: fails once a destroy claimed it,
 * and for the children of a closing IA (and a closing IA itself), so a
 * close waits only for calls that were already inside.
 */
static __always_inline bool kdat_obj_use(struct kdat_obj *obj)
{
	/* fully ordered: the closing test below cannot pass the increment */
	if (unlikely(!atomic_inc_unless_negative(&obj->usecnt)))
		return false;
	if (unlikely(obj->ia && READ_ONCE(obj->ia->closing))) {
		kdat_obj_unuse(obj);
		return false;
	}
	return true;
}

/*
 * The receive post's call section: rcu_read_lock_sched() is inline where
 * rcu_read_lock() is two calls in a preemptible kernel.  Not on
 * PREEMPT_RT, whose spinlocks (the SRQ's, the device's) sleep and so may
 * not be taken with preemption off.  synchronize_rcu() waits for both.
 */
static __always_inline void kdat_post_section_begin(void)
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		rcu_read_lock();
	else
		rcu_read_lock_sched();
}

static __always_inline void kdat_post_section_end(void)
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		rcu_read_unlock();
	else
		rcu_read_unlock_sched();
}

/*
 * The receive post's lookup: a call that never sleeps, made entirely inside
 * kdat_post_section_begin() (which is then also its call section, see
 * kdat_calls_sync: synchronize_rcu() waits for preempt-disabled readers
 * too), takes a shared use of @h and no reference.  The memory stays
 * (released objects go back through RCU), and while the use is held no
 * destroy can claim the object; the handle table's reference goes only in
 * a claimed destroy or in its create's unwinding, which drains the uses
 * first (kdat_obj_drain_uses), so the release cannot run under the call.
 * The same failures as kdat_obj_get_use: NULL if @h is not a live, usable
 * @type.  Undo with kdat_obj_unuse() before the section ends.
 */
static __always_inline struct kdat_obj *
kdat_obj_use_rcu(DAT_HANDLE h, DAT_HANDLE_TYPE type)
{
	struct kdat_obj *obj;

	RCU_LOCKDEP_WARN(!rcu_read_lock_any_held(),
			 "handle lookup outside an RCU section");
	if (unlikely(!h))
		return NULL;
	obj = kdat_handle_lookup(h);
	if (unlikely(!obj || obj->type != type || !kdat_obj_use(obj)))
		return NULL;
	/* a create that is unwinding took it out of the table */
	if (unlikely(!test_bit(KDAT_OBJ_PUBLISHED, &obj->flags))) {
		kdat_obj_unuse(obj);
		return NULL;
	}
	return obj;
}

/*
 * A post finds its LMR by context in a direct-mapped cache of the IA's
 * LMRs before the xarray (as object.c does for handles): an LMR holds its
 * slot, if it found it free, from the moment its context is set until its
 * context is forgotten (lmr.c).
 */
static inline struct kdat_lmr **kdat_lmr_slot(struct kdat_ia *ia, u32 context)
{
	return &ia->lmr_cache[context % KDAT_LMR_CACHE];
}

/* Under RCU: the LMR of @context in @ia, or NULL. */
static __always_inline struct kdat_lmr *kdat_lmr_lookup(struct kdat_ia *ia,
							u32 context)
{
	struct kdat_lmr *lmr = READ_ONCE(*kdat_lmr_slot(ia, context));

	if (likely(lmr && lmr->context == context))
		return lmr;
	return xa_load(&ia->lmrs, context);
}

/*
 * Check one triplet against its registration and fill its SGE: the
 * context must name a live LMR of this IA, the range must lie inside it,
 * its PZ must be @pz and its privileges must include @need.  Under RCU
 * (any flavour): the receive post's call section is one already.
 */
static __always_inline DAT_RETURN
kdat_lmr_to_sge_rcu(struct kdat_ia *ia, struct kdat_pz *pz,
		    const DAT_LMR_TRIPLET *t, struct ib_sge *sge,
		    DAT_MEM_PRIV_FLAGS need)
{
	DAT_VLEN len = t->segment_length;
	DAT_VADDR va = t->virtual_address, start;
	struct kdat_lmr *lmr;

	RCU_LOCKDEP_WARN(!rcu_read_lock_any_held(), "LMR lookup outside RCU");
	lmr = kdat_lmr_lookup(ia, t->lmr_context);
	if (unlikely(!lmr || !READ_ONCE(lmr->mapped)))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	start = (DAT_VADDR)(uintptr_t)lmr->va;
	/* outside the registration: the seeds name no LENGTH_ERROR */
	if (unlikely(len > U32_MAX || va < start || len > lmr->length ||
		     va - start > lmr->length - len))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (unlikely(lmr->pz != pz))
		return KDAT_ERR(DAT_PROTECTION_VIOLATION, 0);
	if (unlikely((lmr->priv & need) != need))
		return KDAT_ERR(DAT_PRIVILEGES_VIOLATION, 0);
	sge->addr = lmr->dma + (va - start);
	sge->length = (u32)len;
	/* a user LMR has its own registration; kernel ones use the PD's */
	sge->lkey = lmr->mr ? lmr->mr->lkey : 0;
	return DAT_SUCCESS;
}

#endif /* KDAT_CORE_H */
