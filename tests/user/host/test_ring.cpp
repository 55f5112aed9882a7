// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The ring protocol of ring.hpp against a "kernel" written here: the test
// lays out struct kdat_ring_hdr and the entries exactly as
// include/uapi/kdat_abi.h describes, plays the kernel's side (produce
// events, consume post-ring entries, set KDAT_RING_NEED_KICK) and checks
// what the library's side sees and publishes: order, full ring,
// wraparound of the free-running indices, garbage indices, the kick flag.
#include <dat/udat.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ring.hpp"

using namespace kdat::ring;
using u64 = std::uint64_t;

namespace {

/* A ring as the kernel lays it out, in ordinary memory. */
struct FakeRing {
	FakeRing(u32 entries, u32 entry_size, u32 head = 0)
	{
		entry_offset = (sizeof(struct kdat_ring_hdr) + 63) & ~63u;
		size = entry_offset + (std::size_t)entries * entry_size;
		mem.assign(size, std::byte{ 0 });
		hdr()->entries = entries;
		hdr()->entry_size = entry_size;
		hdr()->entry_offset = entry_offset;
		hdr()->head = hdr()->tail = head;
		ktail = khead = head;
	}

	struct kdat_ring_hdr *hdr()
	{
		return reinterpret_cast<struct kdat_ring_hdr *>(mem.data());
	}
	std::byte *slot(u32 i)
	{
		return mem.data() + entry_offset +
		       (std::size_t)(i & (hdr()->entries - 1)) *
			       hdr()->entry_size;
	}
	Layout layout(std::size_t min_entry)
	{
		auto l = validate(mem.data(), mem.size(), min_entry);
		EXPECT_TRUE(l.has_value());
		return *l;
	}

	/*
	 * kernel side of an event ring: false if the user has no room (the
	 * kernel then drops the event and counts it, unless @retry)
	 */
	bool produce(u32 event_number, u64 cookie, bool retry = false)
	{
		u32 head = aref(hdr()->head).load(std::memory_order_acquire);
		if (ktail - head >= hdr()->entries) {
			if (!retry)
				hdr()->dropped++;
			return false;
		}
		struct kdat_uevent u = {};
		u.event_number = event_number;
		u.cookie = cookie;
		std::memcpy(slot(ktail), &u, sizeof(u));
		ktail++;
		aref(hdr()->tail).store(ktail, std::memory_order_release);
		return true;
	}

	/* kernel side of a post ring: take one entry if there is one */
	bool consume(struct kdat_srq_wqe &w)
	{
		u32 tail = aref(hdr()->tail).load(std::memory_order_acquire);
		if (tail == khead)
			return false;
		std::memcpy(&w, slot(khead),
			    std::min<std::size_t>(sizeof(w), hdr()->entry_size));
		khead++;
		aref(hdr()->head).store(khead, std::memory_order_release);
		return true;
	}

	std::vector<std::byte> mem;
	std::size_t size;
	u32 entry_offset;
	u32 ktail, khead;
};

struct kdat_useg useg(u32 ctx, u64 addr, u64 len)
{
	struct kdat_useg s = {};
	s.lmr_context = ctx;
	s.addr = addr;
	s.length = len;
	return s;
}

} // namespace

TEST(RingLayout, AcceptsWhatTheKernelDescribes)
{
	FakeRing r(8, sizeof(struct kdat_uevent));
	auto l = validate(r.mem.data(), r.mem.size(), sizeof(struct kdat_uevent));

	ASSERT_TRUE(l);
	EXPECT_EQ(8u, l->entries);
	EXPECT_EQ(sizeof(struct kdat_uevent), l->entry_size);
	EXPECT_EQ(r.entry_offset, l->entry_offset);
	EXPECT_EQ(r.slot(3), l->slot(3));
	EXPECT_EQ(r.slot(3), l->slot(11));	/* index & (entries - 1) */
}

TEST(RingLayout, RefusesHeadersThatDoNotDescribeARing)
{
	const u32 es = sizeof(struct kdat_uevent);
	auto bad = [&](auto mutate, std::size_t len_delta = 0) {
		FakeRing r(8, es);
		mutate(*r.hdr());
		return !validate(r.mem.data(), r.mem.size() - len_delta, es);
	};

	EXPECT_TRUE(bad([](auto &h) { h.entries = 0; }));
	EXPECT_TRUE(bad([](auto &h) { h.entries = 6; }));
	EXPECT_TRUE(bad([](auto &h) { h.entries = 16; }));	/* past the end */
	EXPECT_TRUE(bad([&](auto &h) { h.entry_size = es - 8; }));
	EXPECT_TRUE(bad([&](auto &h) { h.entry_size = es + 4; }));	/* unaligned */
	EXPECT_TRUE(bad([](auto &h) { h.entry_offset = 8; }));	/* inside hdr */
	EXPECT_TRUE(bad([](auto &h) { h.entry_offset += 4; }));
	EXPECT_TRUE(bad([](auto &) {}, 1));	/* mapping one byte short */
	EXPECT_TRUE(bad([](auto &h) { h.entries = 0x80000000u; }));
	EXPECT_FALSE(validate(nullptr, 4096, es));
	std::vector<std::byte> tiny(16);
	EXPECT_FALSE(validate(tiny.data(), tiny.size(), es));
	EXPECT_FALSE(bad([](auto &) {}));
}

TEST(EventRing, ConsumesInOrderAndPublishesHead)
{
	FakeRing k(4, sizeof(struct kdat_uevent));
	EventConsumer c(k.layout(sizeof(struct kdat_uevent)));
	struct kdat_uevent u;

	EXPECT_EQ(0u, c.available());
	EXPECT_FALSE(c.pop(u));
	ASSERT_TRUE(k.produce(DAT_DTO_COMPLETION_EVENT, 1));
	ASSERT_TRUE(k.produce(DAT_SOFTWARE_EVENT, 2));
	EXPECT_EQ(2u, c.available());
	ASSERT_TRUE(c.pop(u));
	EXPECT_EQ((u32)DAT_DTO_COMPLETION_EVENT, u.event_number);
	EXPECT_EQ(1u, u.cookie);
	EXPECT_EQ(1u, k.hdr()->head);	/* slot handed back */
	ASSERT_TRUE(c.pop(u));
	EXPECT_EQ(2u, u.cookie);
	EXPECT_EQ(2u, k.hdr()->head);
	EXPECT_FALSE(c.pop(u));
}

TEST(EventRing, FullRingMakesTheKernelDropAndCount)
{
	FakeRing k(4, sizeof(struct kdat_uevent));
	EventConsumer c(k.layout(sizeof(struct kdat_uevent)));
	struct kdat_uevent u;

	for (u64 i = 0; i < 4; i++)
		ASSERT_TRUE(k.produce(DAT_SOFTWARE_EVENT, i));
	EXPECT_FALSE(k.produce(DAT_SOFTWARE_EVENT, 99));
	EXPECT_EQ(1u, c.dropped());
	EXPECT_EQ(4u, c.available());
	ASSERT_TRUE(c.pop(u));
	EXPECT_EQ(0u, u.cookie);
	EXPECT_TRUE(k.produce(DAT_SOFTWARE_EVENT, 4));	/* room again */
	for (u64 i = 1; i <= 4; i++) {
		ASSERT_TRUE(c.pop(u));
		EXPECT_EQ(i, u.cookie);
	}
}

TEST(EventRing, FreeRunningIndicesWrapAround32Bits)
{
	/* start just below 2^32 so the indices overflow during the test */
	FakeRing k(8, sizeof(struct kdat_uevent), 0xfffffff0u);
	EventConsumer c(k.layout(sizeof(struct kdat_uevent)));
	struct kdat_uevent u;
	u64 next = 0, want = 0;

	for (int round = 0; round < 200; round++) {
		int burst = 1 + round % 8;
		for (int i = 0; i < burst && c.available() < 8; i++)
			ASSERT_TRUE(k.produce(DAT_SOFTWARE_EVENT, next++));
		int take = 1 + (round * 7) % 8;
		for (int i = 0; i < take && c.pop(u); i++)
			ASSERT_EQ(want++, u.cookie);
	}
	while (c.pop(u))
		ASSERT_EQ(want++, u.cookie);
	EXPECT_EQ(next, want);
	EXPECT_LT(k.hdr()->head, 0xfffffff0u);	/* it did wrap */
}

TEST(EventRing, GarbageTailIsClampedToOneRing)
{
	FakeRing k(4, sizeof(struct kdat_uevent));
	EventConsumer c(k.layout(sizeof(struct kdat_uevent)));

	k.hdr()->tail = 1000;
	EXPECT_EQ(4u, c.available());
	k.hdr()->tail = 0xffffffffu;	/* "behind" the head */
	EXPECT_EQ(4u, c.available());
}

TEST(EventRing, ConcurrentProducerAndConsumerKeepOrder)
{
	FakeRing k(16, sizeof(struct kdat_uevent));
	EventConsumer c(k.layout(sizeof(struct kdat_uevent)));
	const u64 n = 100000;

	std::thread kernel([&] {
		for (u64 i = 0; i < n;) {
			if (k.produce(DAT_SOFTWARE_EVENT, i, true))
				i++;
			else
				std::this_thread::yield();
		}
	});
	struct kdat_uevent u;
	for (u64 want = 0; want < n;) {
		if (c.pop(u)) {
			ASSERT_EQ(want, u.cookie);
			want++;
		} else {
			std::this_thread::yield();
		}
	}
	kernel.join();
	EXPECT_EQ(0u, c.dropped());
}

TEST(PostRing, PushWritesTheEntryAndPublishesTail)
{
	FakeRing k(4, sizeof(struct kdat_srq_wqe));
	PostProducer p(k.layout(kWqeHeader + sizeof(struct kdat_useg)));
	struct kdat_useg s[2] = { useg(7, 0x1000, 64), useg(8, 0x2000, 32) };
	struct kdat_srq_wqe w;

	EXPECT_EQ((u32)KDAT_MAX_IOV, p.max_segments());
	EXPECT_FALSE(p.full());
	EXPECT_FALSE(p.push(42, 2, s));
	EXPECT_EQ(1u, k.hdr()->tail);
	EXPECT_EQ(1u, p.pending());
	ASSERT_TRUE(k.consume(w));
	EXPECT_EQ(42u, w.cookie);
	EXPECT_EQ(2u, w.nseg);
	EXPECT_EQ(7u, w.seg[0].lmr_context);
	EXPECT_EQ(0x1000u, w.seg[0].addr);
	EXPECT_EQ(64u, w.seg[0].length);
	EXPECT_EQ(8u, w.seg[1].lmr_context);
	EXPECT_EQ(0u, p.pending());
	/* zero segments is a valid receive */
	p.push(43, 0, nullptr);
	ASSERT_TRUE(k.consume(w));
	EXPECT_EQ(43u, w.cookie);
	EXPECT_EQ(0u, w.nseg);
}

TEST(PostRing, FullUntilTheKernelTakesEntries)
{
	FakeRing k(4, sizeof(struct kdat_srq_wqe));
	PostProducer p(k.layout(kWqeHeader + sizeof(struct kdat_useg)));
	struct kdat_useg s = useg(1, 0x1000, 8);
	struct kdat_srq_wqe w;

	for (u64 i = 0; i < 4; i++) {
		ASSERT_FALSE(p.full());
		p.push(i, 1, &s);
	}
	EXPECT_TRUE(p.full());
	EXPECT_EQ(4u, p.pending());
	ASSERT_TRUE(k.consume(w));
	EXPECT_EQ(0u, w.cookie);
	EXPECT_FALSE(p.full());
	p.push(4, 1, &s);
	EXPECT_TRUE(p.full());
	for (u64 i = 1; i <= 4; i++) {
		ASSERT_TRUE(k.consume(w));
		EXPECT_EQ(i, w.cookie);
	}
	EXPECT_FALSE(k.consume(w));
}

TEST(PostRing, WrapsAround32BitsWithoutLosingEntries)
{
	FakeRing k(8, sizeof(struct kdat_srq_wqe), 0xfffffffau);
	PostProducer p(k.layout(kWqeHeader + sizeof(struct kdat_useg)));
	struct kdat_useg s = useg(1, 0x1000, 8);
	struct kdat_srq_wqe w;
	u64 next = 0, want = 0;

	for (int round = 0; round < 100; round++) {
		for (int i = 0; i < 1 + round % 5 && !p.full(); i++)
			p.push(next++, 1, &s);
		for (int i = 0; i < 1 + round % 3 && k.consume(w); i++)
			ASSERT_EQ(want++, w.cookie);
	}
	while (k.consume(w))
		ASSERT_EQ(want++, w.cookie);
	EXPECT_EQ(next, want);
	EXPECT_LT(p.tail(), 0xfffffffau);
}

TEST(PostRing, ReportsTheKernelsKickRequest)
{
	FakeRing k(4, sizeof(struct kdat_srq_wqe));
	PostProducer p(k.layout(kWqeHeader + sizeof(struct kdat_useg)));
	struct kdat_useg s = useg(1, 0x1000, 8);

	k.hdr()->flags = KDAT_RING_NEED_KICK;	/* a new SRQ: starved */
	EXPECT_TRUE(p.push(1, 1, &s));
	k.hdr()->flags = 0;			/* the kernel drained, has buffers */
	EXPECT_FALSE(p.push(2, 1, &s));
	k.hdr()->flags = KDAT_RING_NEED_KICK;
	EXPECT_TRUE(p.push(3, 1, &s));
}

TEST(PostRing, SmallEntriesHoldFewerSegments)
{
	u32 es = (u32)(kWqeHeader + 2 * sizeof(struct kdat_useg));
	FakeRing k(4, es);
	PostProducer p(k.layout(kWqeHeader + sizeof(struct kdat_useg)));
	struct kdat_useg s[2] = { useg(1, 0x1000, 8), useg(2, 0x2000, 8) };
	struct kdat_srq_wqe w;

	EXPECT_EQ(2u, p.max_segments());
	p.push(9, 2, s);
	p.push(10, 2, s);
	ASSERT_TRUE(k.consume(w));
	EXPECT_EQ(9u, w.cookie);
	ASSERT_TRUE(k.consume(w));
	EXPECT_EQ(10u, w.cookie);
	EXPECT_EQ(2u, w.seg[1].lmr_context);
}

TEST(PostRing, GarbageHeadIsClamped)
{
	FakeRing k(4, sizeof(struct kdat_srq_wqe));
	PostProducer p(k.layout(kWqeHeader + sizeof(struct kdat_useg)));

	struct kdat_useg seg = {};
	for (int i = 0; i < 4; i++)
		p.push(i, 1, &seg);
	EXPECT_TRUE(p.full());
	k.hdr()->head = 12345;	/* a kernel bug must not look like room */
	EXPECT_EQ(4u, p.pending());
	EXPECT_TRUE(p.full());
}

/* The head is read again only when the ring looks full; room then shows. */
TEST(PostRing, FullRereadsTheKernelHead)
{
	FakeRing k(4, sizeof(struct kdat_srq_wqe));
	PostProducer p(k.layout(kWqeHeader + sizeof(struct kdat_useg)));
	struct kdat_useg seg = {};

	for (int i = 0; i < 4; i++) {
		EXPECT_FALSE(p.full());
		p.push(i, 1, &seg);
	}
	EXPECT_TRUE(p.full());
	k.hdr()->head = 3;	/* the kernel took three */
	EXPECT_FALSE(p.full());
	EXPECT_EQ(1u, p.pending());
}

/* ---- EP send ring (SendProducer) ------------------------------------- */

namespace {

struct kdat_ep_sqe *sqe_at(FakeRing &k, u32 i)
{
	return reinterpret_cast<struct kdat_ep_sqe *>(k.slot(i));
}

/* Write one request as ep.cpp does, publish it; true: kick asked. */
bool send_one(SendProducer &p, u64 cookie, u32 op = KDAT_POST_SEND)
{
	struct kdat_ep_sqe *w = p.next_slot();

	w->op = op;
	w->flags = 0;
	w->nseg = 1;
	w->cookie = cookie;
	w->seg[0] = useg(7, 0x1000 + cookie, 8);
	return p.publish();
}

} // namespace

/* Room is depth - (posted - retired): the kernel's retired count frees it. */
TEST(SendRing, RoomFollowsTheKernelsDepthAndRetiredCount)
{
	FakeRing k(8, 128);
	k.hdr()->depth = 5;
	SendProducer p(k.layout(kSqeHeader + sizeof(struct kdat_useg)));

	EXPECT_EQ(5u, p.room(0));
	for (int i = 0; i < 3; i++)
		send_one(p, i);
	EXPECT_EQ(2u, p.room(0));
	EXPECT_EQ(0u, p.room(2)) << "two posts by ioctl are in flight too";
	send_one(p, 3);
	send_one(p, 4);
	EXPECT_EQ(0u, p.room(0));
	k.hdr()->head = 5;		/* drained: still in the send queue */
	EXPECT_EQ(0u, p.room(0));
	k.hdr()->retired = 2;		/* two completed */
	EXPECT_EQ(2u, p.room(0));
	/* an ioctl post the kernel retired before we counted it */
	k.hdr()->retired = 6;
	EXPECT_EQ(5u, p.room(0));
	/* a depth beyond the ring is held to the ring */
	k.hdr()->depth = 1000;
	k.hdr()->retired = 5;
	EXPECT_EQ(8u, p.room(0));
}

/* What the library writes is what the kernel reads, slot by slot. */
TEST(SendRing, EntriesCarryTheRequestAndWrapAround)
{
	FakeRing k(4, 128, 0xfffffffeu);
	k.hdr()->depth = 4;
	SendProducer p(k.layout(kSqeHeader + sizeof(struct kdat_useg)));

	EXPECT_EQ(2u, p.max_segments());
	for (u64 i = 0; i < 6; i++) {
		send_one(p, 100 + i, i % 2 ? KDAT_POST_RDMA_WRITE : KDAT_POST_SEND);
		struct kdat_ep_sqe *w = sqe_at(k, 0xfffffffeu + (u32)i);
		EXPECT_EQ(100 + i, w->cookie);
		EXPECT_EQ(1u, w->nseg);
		EXPECT_EQ(0x1000 + 100 + i, w->seg[0].addr);
		EXPECT_EQ(i % 2 ? (u32)KDAT_POST_RDMA_WRITE : (u32)KDAT_POST_SEND,
			  w->op);
		EXPECT_EQ(0xfffffffeu + (u32)i + 1, k.hdr()->tail);
		k.hdr()->head = k.hdr()->retired = k.hdr()->tail;
	}
	EXPECT_EQ(4u, p.room(0));
}

/* NEED_KICK (the kernel's send queue is idle) is what publish reports. */
TEST(SendRing, PublishReportsTheKernelsKickRequest)
{
	FakeRing k(4, 128);
	k.hdr()->depth = 4;
	SendProducer p(k.layout(kSqeHeader + sizeof(struct kdat_useg)));

	k.hdr()->flags = KDAT_RING_NEED_KICK;	/* a new EP: idle */
	EXPECT_TRUE(send_one(p, 1));
	k.hdr()->flags = 0;			/* requests in flight */
	EXPECT_FALSE(send_one(p, 2));
	EXPECT_EQ(2u, p.unconsumed());
	k.hdr()->head = 2;
	EXPECT_EQ(0u, p.unconsumed());
	k.hdr()->flags = KDAT_RING_NEED_KICK;
	EXPECT_TRUE(send_one(p, 3));
}

/* The state word is the kernel's, read as published. */
TEST(SendRing, StateIsWhatTheKernelPublished)
{
	FakeRing k(4, 128);
	SendProducer p(k.layout(kSqeHeader + sizeof(struct kdat_useg)));

	EXPECT_EQ((u32)DAT_EP_STATE_UNCONNECTED, p.ep_state());
	k.hdr()->ep_state = DAT_EP_STATE_CONNECTED;
	EXPECT_EQ((u32)DAT_EP_STATE_CONNECTED, p.ep_state());
}

/*
 * The kick protocol against a kernel thread that drains and, when its
 * queue is idle, sets NEED_KICK, fences and re-reads the tail (as
 * kdat_ep_ring_drain): no post is ever left undrained.
 */
TEST(SendRing, KickProtocolNeverStrandsAPost)
{
	FakeRing k(1024, 128);
	k.hdr()->depth = 1024;
	k.hdr()->flags = KDAT_RING_NEED_KICK;
	SendProducer p(k.layout(kSqeHeader + sizeof(struct kdat_useg)));
	std::atomic<u32> kicks{0}, drained{0};
	std::atomic<bool> stop{false};
	const u32 n = 200000;

	/* the kernel: drains on a kick or when a completion comes */
	auto drain = [&] {
		u32 head = k.khead;
		for (;;) {
			u32 raw = aref(k.hdr()->tail).load(std::memory_order_acquire);
			while (head != raw)
				head++;
			k.khead = head;
			aref(k.hdr()->head).store(head, std::memory_order_release);
			aref(k.hdr()->retired).store(head, std::memory_order_release);
			drained.store(head);
			/* idle: set the flag, fence, re-read the tail once */
			aref(k.hdr()->flags).store(KDAT_RING_NEED_KICK,
						   std::memory_order_relaxed);
			std::atomic_thread_fence(std::memory_order_seq_cst);
			if (aref(k.hdr()->tail).load(std::memory_order_relaxed) == raw)
				return;
		}
	};
	std::atomic<u32> pending_kicks{0};
	std::atomic<bool> kbusy{false};
	std::thread kernel([&] {
		while (!stop.load()) {
			if (pending_kicks.load()) {
				kbusy = true;
				pending_kicks--;
				drain();
				kbusy = false;
			} else {
				std::this_thread::yield();
			}
		}
	});
	/*
	 * Stranded, decided without timing: published entries, no drain
	 * running and none to come (no kick, no completion queued).
	 */
	auto stranded = [&] {
		return pending_kicks.load() == 0 && !kbusy.load() &&
		       drained.load() != p.tail();
	};
	bool lost = false;
	for (u32 i = 0; i < n && !lost; i++) {
		while (!p.room(0) && !lost) {
			lost = stranded();
			std::this_thread::yield();
		}
		if (lost)
			break;
		/* a busy kernel clears the flag now and then */
		if (i % 7 == 0)
			aref(k.hdr()->flags).store(0, std::memory_order_relaxed),
				pending_kicks++;	/* ...and a completion comes */
		if (send_one(p, i)) {
			kicks++;
			pending_kicks++;
		}
	}
	while (!lost && drained.load() != n) {
		lost = stranded();
		std::this_thread::yield();
	}
	stop = true;
	kernel.join();
	EXPECT_FALSE(lost) << "a post was stranded at " << drained.load();
	EXPECT_EQ(n, drained.load());
	EXPECT_LT(kicks.load(), n) << "every post kicked";
}
