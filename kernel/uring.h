/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The rings /dev/kdat shares with user space (layout in
 * <uapi/kdat_abi.h>): an SRQ's post ring, which the provider drains
 * (srq.c), and an EVD's event ring, which the char device fills
 * (uring.c).  The kernel keeps its own copy of every index it owns and
 * never trusts what user space wrote.
 */
#ifndef KDAT_URING_H
#define KDAT_URING_H

#include <linux/refcount.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <uapi/kdat_abi.h>
#include "ring_index.h"

struct kdat_ufile;
struct kdat_srq;

/*
 * A ring's pages as counted against its file's cap: until the ring is
 * freed and the last mapping of them is gone (a mapping holds the pages).
 */
struct kdat_ring_pages {
	refcount_t ref;			/* the ring, and each VMA of it */
	struct kdat_ufile *uf;		/* a reference */
	size_t size;
};

struct kdat_uring {
	struct kdat_ufile *uf;
	struct kdat_ring_pages *pages;
	void *mem;			/* vmalloc'ed, charged, mmapped */
	size_t size;
	unsigned long pgoff;
	u32 entries, entry_size, entry_offset;
	u32 khead, ktail;		/* the kernel's own indices */
	u32 reaped;			/* event ring: reaped up to here */
	struct kdat_srq **shadow;	/* event ring: SRQ of each entry */
	wait_queue_head_t wq;
	bool unwaitable;		/* event ring: dat_evd_set_unwaitable */
	u32 wakes;			/* event ring: KDAT_IOC_EVD_CTL calls */
	/*
	 * Counted against the file's cap with the ring, and given back when
	 * the ring goes (uobj.c): an event ring's shadow array and its EVD's
	 * CQ growth.
	 */
	size_t side_bytes;
};

static inline struct kdat_ring_hdr *kdat_uring_hdr(struct kdat_uring *r)
{
	return r->mem;
}

static inline u32 kdat_uring_mask(struct kdat_uring *r)
{
	return r->entries - 1;
}

static inline void *kdat_uring_entry(struct kdat_uring *r, u32 idx)
{
	return r->mem + r->entry_offset + (idx & (r->entries - 1)) *
	       r->entry_size;
}

/* Segments one entry of post ring @r has room for. */
static inline u32 kdat_uring_max_seg(struct kdat_uring *r)
{
	return kdat_wqe_max_seg(r->entry_size,
				offsetof(struct kdat_srq_wqe, seg),
				sizeof(struct kdat_useg));
}

/*
 * Fault injection (fault.c): before each read of a post or send ring's
 * tail, a drain moves that tail one ring past @head itself, as a process
 * rewriting it from another CPU would if it always won the race.
 */
extern unsigned int kdat_fault_ring_tail;

static inline void kdat_fault_rewrite_tail(struct kdat_ring_hdr *h, u32 head,
					   u32 entries)
{
	if (unlikely(READ_ONCE(kdat_fault_ring_tail)))
		WRITE_ONCE(h->tail, head + entries);
}

#endif /* KDAT_URING_H */
