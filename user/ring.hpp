// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The user side of the mmapped rings of /dev/kdat (struct kdat_ring_hdr in
// include/uapi/kdat_abi.h).  Header-only and free of system calls, so the
// unit tests drive it against a "kernel" written in the test.
//
// A ring is single-producer/single-consumer with free-running __u32
// indices; slot = index & (entries - 1).  The consumer publishes head with
// a release store once it is done with an entry; the producer publishes
// tail with a release store once it wrote one.  The ring describes itself
// (entries, entry size, entry offset): nothing here hard-codes the layout,
// and a header that does not describe a sane ring is refused.
//
//   EventConsumer  event ring, kernel produces, we consume (one per EVD).
//   PostProducer   SRQ post ring, we produce, the kernel consumes.  The
//                  tail is published with a full barrier, then the kernel's
//                  KDAT_RING_NEED_KICK flag says whether it is starved and
//                  must be kicked (KDAT_IOC_SRQ_KICK); the kernel sets the
//                  flag, then fences, then re-reads tail, so one side always
//                  sees the other.
//   SendProducer   EP send ring, we produce struct kdat_ep_sqe, the kernel
//                  consumes.  The same publish/flag protocol (NEED_KICK:
//                  the send queue is idle, KDAT_IOC_EP_KICK); room comes
//                  from the kernel's depth and retired count, the EP's
//                  state from the header's ep_state.
//
// Neither class locks: the owner serializes consumers (resp. producers).
//
// Portability: the entries are in the byte order of this CPU (the kernel
// that reads and writes them runs on it), all multi-byte fields are read
// and written in place at their natural alignment (validate() keeps every
// slot 8-byte aligned; the ring is page aligned), the indices are 32-bit
// atomics, and the ordering comes from C++ atomics only (no
// architecture's barrier instruction is assumed).
#pragma once

#include <uapi/kdat_abi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace kdat::ring {

using u32 = std::uint32_t;

/*
 * The ring layouts the kernel shares with us, as any ABI (32- or 64-bit,
 * any architecture) must see them: fields at natural alignment, no
 * padding the compiler chose.
 */
static_assert(sizeof(struct kdat_useg) == 24);
static_assert(offsetof(struct kdat_srq_wqe, seg) == 16);
static_assert(sizeof(struct kdat_srq_wqe) == 16 + KDAT_MAX_IOV * 24);
static_assert(offsetof(struct kdat_uevent, cookie) == 16);
static_assert(offsetof(struct kdat_uevent, conn_qual) == 48);
static_assert(offsetof(struct kdat_uevent, srq) == 64 + KDAT_PDATA_LEN);
static_assert(offsetof(struct kdat_ring_hdr, tail) == 64);
static_assert(offsetof(struct kdat_ring_hdr, flags) == 128);
static_assert(offsetof(struct kdat_ring_hdr, ep_state) == 156);
static_assert(offsetof(struct kdat_ep_sqe, seg) == 64);
static_assert(sizeof(struct kdat_ep_sqe) == 64 + KDAT_MAX_IOV * 24);
static_assert(std::atomic_ref<u32>::is_always_lock_free);

inline std::atomic_ref<u32> aref(u32 &x)
{
	return std::atomic_ref<u32>(x);
}

/* A validated view of one mapped ring. */
struct Layout {
	struct kdat_ring_hdr *hdr = nullptr;
	std::byte *base = nullptr;
	u32 entries = 0;
	u32 entry_size = 0;
	u32 entry_offset = 0;

	std::byte *slot(u32 index) const
	{
		return base + entry_offset +
		       (std::size_t)(index & (entries - 1)) * entry_size;
	}
};

/*
 * Whether the environment variable @var asks for the ioctl path instead
 * of the ring (KDAT_SRQ_POST=ioctl, KDAT_EP_POST=ioctl), or for inline
 * kicks only (KDAT_EP_KICK=inline): for comparison in benchmarks.
 */
inline bool env_is(const char *var, const char *value)
{
	const char *v = secure_getenv(var);

	return v && !std::strcmp(v, value);
}

inline bool env_wants_ioctl(const char *var)
{
	return env_is(var, "ioctl");
}

/*
 * Check that @len bytes at @mem hold a ring whose entries are at least
 * @min_entry bytes.  The kernel wrote the header before we mapped it and
 * never changes these fields.
 */
inline std::optional<Layout> validate(void *mem, std::size_t len,
				      std::size_t min_entry)
{
	Layout l;

	if (!mem || len < sizeof(struct kdat_ring_hdr))
		return std::nullopt;
	l.hdr = static_cast<struct kdat_ring_hdr *>(mem);
	l.base = static_cast<std::byte *>(mem);
	l.entries = aref(l.hdr->entries).load(std::memory_order_relaxed);
	l.entry_size = aref(l.hdr->entry_size).load(std::memory_order_relaxed);
	l.entry_offset =
		aref(l.hdr->entry_offset).load(std::memory_order_relaxed);
	if (l.entries == 0 || (l.entries & (l.entries - 1)) != 0)
		return std::nullopt;
	if (l.entry_size < min_entry || l.entry_size % 8 != 0)
		return std::nullopt;
	if (l.entry_offset < sizeof(struct kdat_ring_hdr) ||
	    l.entry_offset % 8 != 0)
		return std::nullopt;
	if ((std::uint64_t)l.entry_offset +
		    (std::uint64_t)l.entries * l.entry_size > len)
		return std::nullopt;
	return l;
}

/* Event ring: the kernel produces struct kdat_uevent, we consume. */
class EventConsumer {
public:
	EventConsumer() = default;
	explicit EventConsumer(const Layout &l)
		: l_(l),
		  head_(aref(l.hdr->head).load(std::memory_order_relaxed)) {}

	bool valid() const { return l_.hdr != nullptr; }
	u32 capacity() const { return l_.entries; }

	/* Entries the kernel has published and we have not consumed. */
	u32 available() const
	{
		u32 tail = aref(l_.hdr->tail).load(std::memory_order_acquire);
		u32 n = tail - head_;

		/* a tail that ran past a whole ring is not believed */
		return n > l_.entries ? l_.entries : n;
	}

	/* Copy the oldest entry out, keeping its slot. */
	bool peek(struct kdat_uevent &out) const
	{
		if (!available())
			return false;
		std::memcpy(&out, l_.slot(head_), sizeof(out));
		return true;
	}

	/*
	 * Hand the oldest entry's slot back.  The kernel counts an event as
	 * reaped once it sees the head pass it, so whatever the event
	 * implies is accounted before this.
	 */
	void advance()
	{
		head_++;
		aref(l_.hdr->head).store(head_, std::memory_order_release);
	}

	/* Copy the oldest entry out and hand its slot back. */
	bool pop(struct kdat_uevent &out)
	{
		if (!peek(out))
			return false;
		advance();
		return true;
	}

	/* Call @f on a copy of every entry not yet consumed, oldest first. */
	template <class F>
	void for_each_pending(F &&f) const
	{
		u32 n = available();

		for (u32 i = 0; i < n; i++) {
			struct kdat_uevent u;

			std::memcpy(&u, l_.slot(head_ + i), sizeof(u));
			f(u);
		}
	}

	/* KDAT_IOC_EVD_CTL calls so far (read before looking at the ring). */
	u32 wakes() const
	{
		return aref(l_.hdr->wakes).load(std::memory_order_acquire);
	}

	/* Events the kernel lost because the ring was full. */
	u32 dropped() const
	{
		return aref(l_.hdr->dropped).load(std::memory_order_relaxed);
	}

private:
	Layout l_;
	u32 head_ = 0;
};

/* The bytes of a post-ring entry before its segments. */
constexpr std::size_t kWqeHeader = offsetof(struct kdat_srq_wqe, seg);

/* SRQ post ring: we produce struct kdat_srq_wqe, the kernel consumes. */
class PostProducer {
public:
	PostProducer() = default;
	explicit PostProducer(const Layout &l)
		: l_(l),
		  tail_(aref(l.hdr->tail).load(std::memory_order_relaxed)),
		  head_seen_(tail_ - pending())
	{
		std::size_t n = (l_.entry_size - kWqeHeader) /
				sizeof(struct kdat_useg);

		max_seg_ = n > KDAT_MAX_IOV ? KDAT_MAX_IOV : (u32)n;
	}

	bool valid() const { return l_.hdr != nullptr; }
	u32 capacity() const { return l_.entries; }

	/* Segments one entry holds (never more than the ABI's maximum). */
	u32 max_segments() const { return max_seg_; }

	/* Entries published and not yet taken by the kernel. */
	u32 pending() const
	{
		u32 head = aref(l_.hdr->head).load(std::memory_order_acquire);
		u32 n = tail_ - head;

		return n > l_.entries ? l_.entries : n;
	}

	/*
	 * Entries published and not yet taken, from the shared header alone:
	 * for threads that do not hold the producer's lock.
	 */
	u32 unconsumed() const
	{
		u32 tail = aref(l_.hdr->tail).load(std::memory_order_acquire);
		u32 head = aref(l_.hdr->head).load(std::memory_order_acquire);
		u32 n = tail - head;

		return n > l_.entries ? l_.entries : n;
	}

	/*
	 * No slot free?  Answered from the head seen last while that leaves
	 * room (the kernel's head only moves forward, so a stale one can only
	 * make the ring look fuller than it is), io_uring style: the
	 * kernel-written line is read once per ring's worth of posts.
	 */
	bool full()
	{
		if (tail_ - head_seen_ < l_.entries)
			return false;
		head_seen_ = tail_ - pending();
		return tail_ - head_seen_ >= l_.entries;
	}

	/* The slot the next publish() hands over (the caller checked !full()). */
	struct kdat_srq_wqe *next_slot() const
	{
		return reinterpret_cast<struct kdat_srq_wqe *>(l_.slot(tail_));
	}

	/*
	 * Hand the slot next_slot() gave to the kernel; true if the kernel
	 * asked to be kicked.  The tail is published by a sequentially
	 * consistent exchange and the flags read by a sequentially consistent
	 * load: the load cannot be satisfied before the tail is visible (x86:
	 * one locked instruction, the load needs nothing; arm64: swpal or
	 * stlxr, then ldar, which may not pass it; POWER: hwsync), which
	 * pairs with the kernel's smp_mb() between setting the flag and
	 * re-reading tail.  A release store would need a fence after it.
	 */
	bool publish()
	{
		tail_++;
		aref(l_.hdr->tail).exchange(tail_, std::memory_order_seq_cst);
		return aref(l_.hdr->flags).load(std::memory_order_seq_cst) &
		       KDAT_RING_NEED_KICK;
	}

	/* Write one receive (n <= max_segments(), !full()) and publish it. */
	bool push(std::uint64_t cookie, u32 n, const struct kdat_useg *segs)
	{
		/* slots are 8-byte aligned (validate); write the fields in place */
		struct kdat_srq_wqe *w = next_slot();

		w->cookie = cookie;
		w->nseg = n;
		w->pad = 0;
		for (u32 i = 0; i < n; i++)
			w->seg[i] = segs[i];
		return publish();
	}

	u32 tail() const { return tail_; }

	/* The kernel asked for a kick (it left entries, or it is starved). */
	bool needs_kick() const
	{
		return aref(l_.hdr->flags).load(std::memory_order_acquire) &
		       KDAT_RING_NEED_KICK;
	}

	/* The kernel says the SRQ takes no buffer (error state, no device). */
	bool srq_error() const
	{
		return aref(l_.hdr->flags).load(std::memory_order_acquire) &
		       KDAT_RING_SRQ_ERROR;
	}

	/* Buffers the kernel counted back without an event we saw (ABI). */
	u32 unseen() const
	{
		return aref(l_.hdr->unseen).load(std::memory_order_acquire);
	}

private:
	Layout l_;
	u32 tail_ = 0;
	u32 head_seen_ = 0;
	u32 max_seg_ = 0;
};

/* The bytes of a send-ring entry before its segments. */
constexpr std::size_t kSqeHeader = offsetof(struct kdat_ep_sqe, seg);

/* EP send ring: we produce struct kdat_ep_sqe, the kernel consumes. */
class SendProducer {
public:
	SendProducer() = default;
	explicit SendProducer(const Layout &l)
		: l_(l),
		  tail_(aref(l.hdr->tail).load(std::memory_order_relaxed))
	{
		std::size_t n = (l_.entry_size - kSqeHeader) /
				sizeof(struct kdat_useg);

		max_seg_ = n > KDAT_MAX_IOV ? KDAT_MAX_IOV : (u32)n;
	}

	bool valid() const { return l_.hdr != nullptr; }
	u32 capacity() const { return l_.entries; }
	u32 max_segments() const { return max_seg_; }

	/* The EP's DAT_EP_STATE as the kernel last published it. */
	u32 ep_state() const
	{
		return aref(l_.hdr->ep_state).load(std::memory_order_acquire);
	}

	/*
	 * Requests the send queue can still take: depth (max_request_dtos,
	 * at most the ring) less those in flight, i.e. published to the ring
	 * or posted by ioctl (@by_ioctl, our count of those) and not yet
	 * retired by the kernel.  In flight never exceeds the ring, so a
	 * positive room is also a free slot.
	 */
	u32 room(u32 by_ioctl) const
	{
		u32 depth = aref(l_.hdr->depth).load(std::memory_order_relaxed);
		u32 retired =
			aref(l_.hdr->retired).load(std::memory_order_acquire);
		std::int32_t inflight = (std::int32_t)(tail_ + by_ioctl - retired);

		if (depth > l_.entries)
			depth = l_.entries;
		/* an ioctl post may retire before we counted it */
		if (inflight < 0)
			inflight = 0;
		return (u32)inflight >= depth ? 0 : depth - (u32)inflight;
	}

	/* The slot the next publish() hands over (the caller checked room). */
	struct kdat_ep_sqe *next_slot() const
	{
		return reinterpret_cast<struct kdat_ep_sqe *>(l_.slot(tail_));
	}

	/*
	 * Hand the slot over; true if the kernel asked to be kicked (its send
	 * queue was idle).  PostProducer::publish's ordering.
	 */
	bool publish()
	{
		tail_++;
		aref(l_.hdr->tail).exchange(tail_, std::memory_order_seq_cst);
		return aref(l_.hdr->flags).load(std::memory_order_seq_cst) &
		       KDAT_RING_NEED_KICK;
	}

	u32 tail() const { return tail_; }

	/* Entries published and not yet taken, from the shared header alone. */
	u32 unconsumed() const
	{
		u32 tail = aref(l_.hdr->tail).load(std::memory_order_acquire);
		u32 head = aref(l_.hdr->head).load(std::memory_order_acquire);
		u32 n = tail - head;

		return n > l_.entries ? l_.entries : n;
	}

	bool needs_kick() const
	{
		return aref(l_.hdr->flags).load(std::memory_order_acquire) &
		       KDAT_RING_NEED_KICK;
	}

private:
	Layout l_;
	u32 tail_ = 0;
	u32 max_seg_ = 0;
};

} // namespace kdat::ring
