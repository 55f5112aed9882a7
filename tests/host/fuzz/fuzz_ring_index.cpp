// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libFuzzer target for the kernel's ring-index arithmetic
// (kernel/ring_index.h, compiled here unchanged): whatever user space
// writes into a ring's indices, the kernel never reads more than one
// ring's worth of post-ring entries, never counts an event as consumed
// that it did not write, and never reads past an entry's own segments.
// A broken promise aborts, which libFuzzer reports with the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "../../../kernel/ring_index.h"
#include <uapi/kdat_abi.h>

namespace {

template <class T> T take(const uint8_t *&p, size_t &n)
{
	T v{};
	size_t k = n < sizeof(T) ? n : sizeof(T);

	std::memcpy(&v, p, k);
	p += k;
	n -= k;
	return v;
}

void require(bool ok)
{
	if (!ok)
		std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data;
	size_t n = size;
	__u32 head = take<__u32>(p, n);
	__u32 user_tail = take<__u32>(p, n);
	__u32 entries = 1u << (take<uint8_t>(p, n) % 25);	/* 1 .. 2^24 */
	__u32 reaped = take<__u32>(p, n);
	__u32 written = take<__u32>(p, n) % (entries + 1);
	__u32 ktail = reaped + written;		/* the kernel's invariant */
	__u32 user_head = take<__u32>(p, n);
	__u32 entry_size = take<uint16_t>(p, n);

	/* post ring: at most one ring of entries past the kernel's head */
	__u32 t = kdat_ring_clamp_tail(head, user_tail, entries);
	require(t - head <= entries);
	if (user_tail - head <= entries)
		require(t == user_tail);	/* honest tails pass untouched */

	/* event ring: consumed only what the kernel wrote */
	__u32 h = kdat_ring_user_head(reaped, ktail, user_head);
	require(h - reaped <= ktail - reaped);
	if (user_head - reaped <= written)
		require(h == user_head);

	/* an entry's segments stay inside the entry */
	__u32 off = offsetof(struct kdat_srq_wqe, seg);
	__u32 segsz = sizeof(struct kdat_useg);
	__u32 max = kdat_wqe_max_seg(entry_size, off, segsz);
	if (max)
		require(off + (uint64_t)max * segsz <= entry_size);
	if (entry_size >= off + segsz)
		require(max >= 1);
	return 0;
}
