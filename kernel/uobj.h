/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * /dev/kdat internals shared by its three files: the per-file object
 * table (uobj.c), the rings (uring.c) and the ioctl handlers (chardev.c).
 * The provider never includes this: it reaches the char device through
 * struct kdat_uops only.
 */
#ifndef KDAT_UOBJ_H
#define KDAT_UOBJ_H

#include "kdat_core.h"

#define KDAT_UOBJ_CACHE	64

struct kdat_ufile {
	struct kref ref;		/* the file + one per ring */
	struct mutex lock;		/* rings, next_pgoff, ring_bytes */
	struct xarray objs;		/* ID -> kdat_obj (reserved: none) */
	u32 next_id;
	/* committed objects whose slot was free (ID % size), objs' lock */
	struct kdat_obj *id_cache[KDAT_UOBJ_CACHE];
	atomic_t nobjs;			/* IDs held, against max_objects */
	struct xarray rings;		/* mmap page offset -> kdat_uring */
	unsigned long next_pgoff;
	size_t ring_bytes;		/* against max_ring_mb */
	wait_queue_head_t poll_wq;
	struct mm_struct *mm;		/* the opener's: others are refused */
};

/* What one ioctl holds and creates, committed or aborted at its end. */
struct kdat_ucall {
	struct kdat_ufile *uf;
	struct kdat_obj *ia;		/* a use of its IA, while it runs */
	struct kdat_obj *created[2];	/* IA open: the IA, its async EVD */
	int ncreated;
};

extern const struct kdat_uops kdat_file_uops;

/* uobj.c */
struct kdat_ufile *kdat_ufile_new(void);
void kdat_ufile_close(struct kdat_ufile *uf);
void kdat_ufile_put(struct kdat_ufile *uf);
bool kdat_ufile_mine(struct kdat_ufile *uf);
__poll_t kdat_ufile_poll(struct kdat_ufile *uf);
int kdat_ufile_reserve(struct kdat_ufile *uf, size_t bytes);
void kdat_ufile_unreserve(struct kdat_ufile *uf, size_t bytes);
int kdat_ufile_add_ring(struct kdat_ufile *uf, struct kdat_uring *r);
void kdat_ufile_del_ring(struct kdat_ufile *uf, struct kdat_uring *r);
struct kdat_ring_pages;
void kdat_ring_pages_get(struct kdat_ring_pages *p);
void kdat_ring_pages_put(struct kdat_ring_pages *p);
struct kdat_obj *kdat_uget(struct kdat_ufile *uf, u32 id,
			   DAT_HANDLE_TYPE type);
void kdat_uput(struct kdat_obj *obj);
DAT_RETURN kdat_ufree(struct kdat_ufile *uf, u32 id, DAT_HANDLE_TYPE type,
		      DAT_RETURN (*destroy)(struct kdat_obj *obj),
		      DAT_RETURN invalid);
DAT_HANDLE kdat_uhandle(struct kdat_ufile *uf, u32 id);
void kdat_ucall_hold_ia(struct kdat_ucall *c, struct kdat_obj *ia);
void kdat_ucall_put_ia(struct kdat_ucall *c);
void kdat_ucall_created(struct kdat_ucall *c, struct kdat_obj *obj);
void kdat_ucall_finish(struct kdat_ucall *c, bool copied);

/* uring.c */
int kdat_uevd_init(struct kdat_evd *evd);
bool kdat_uevd_post(struct kdat_evd *evd, const DAT_EVENT *ev,
		    struct kdat_srq *srq, bool must_fit);
void kdat_uevd_destroy(struct kdat_evd *evd);
void kdat_uevd_collect(struct kdat_evd *evd);
void kdat_uevd_collect_ia(struct kdat_ia *ia);
bool kdat_uevd_ready(struct kdat_evd *evd);
u32 kdat_uevd_count(struct kdat_evd *evd);
int kdat_uevd_cq_account(struct kdat_evd *evd, long bytes);
void kdat_uevd_wake_ia(struct kdat_ia *ia);
int kdat_usrq_init(struct kdat_srq *srq);
bool kdat_srq_ring_error(struct kdat_srq *srq, u64 cookie, DAT_RETURN why);
void kdat_uring_free(struct kdat_uring *r);
int kdat_uring_mmap(struct kdat_ufile *uf, struct vm_area_struct *vma);

static inline u32 kdat_uid(DAT_HANDLE h)
{
	return h ? READ_ONCE(((struct kdat_obj *)h)->uid) : 0;
}

#endif /* KDAT_UOBJ_H */
