/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The arithmetic by which the kernel refuses to trust the indices user
 * space writes into the shared rings.  Pure functions of plain integers,
 * so the host build compiles this very file into a libFuzzer target
 * (tests/host/fuzz/fuzz_ring_index.cpp) that checks their promises on
 * any input: what they return never reaches past what the kernel wrote
 * or past one ring's worth of entries.
 */
#ifndef KDAT_RING_INDEX_H
#define KDAT_RING_INDEX_H

#include <linux/types.h>

/*
 * SRQ post ring: the user's tail, clamped to at most one ring of entries
 * past the kernel's own head.  Garbage becomes "a full ring"; the entries
 * it names are then each checked on their own.
 */
static inline __u32 kdat_ring_clamp_tail(__u32 head, __u32 user_tail,
					 __u32 entries)
{
	if (user_tail - head > entries)
		return head + entries;
	return user_tail;
}

/*
 * Event ring: the user's head, valid only between what the kernel has
 * reaped and what it wrote; anything else means nothing was consumed.
 */
static inline __u32 kdat_ring_user_head(__u32 reaped, __u32 ktail,
					__u32 user_head)
{
	if (user_head - reaped > ktail - reaped)
		return reaped;
	return user_head;
}

/* Segments an SRQ ring entry of @entry_size bytes has room for. */
static inline __u32 kdat_wqe_max_seg(__u32 entry_size, __u32 seg_offset,
				     __u32 seg_size)
{
	return entry_size < seg_offset ? 0 :
	       (entry_size - seg_offset) / seg_size;
}

#endif /* KDAT_RING_INDEX_H */
