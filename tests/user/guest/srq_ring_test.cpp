// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// SRQ semantics around the post ring, through libdat (and the raw ABI
// where only the ring header shows it) against the real module.  These
// were checked on the host against a fake /dev/kdat that re-implemented
// the kernel's SRQ rules; the rules are the kernel's, so they are checked
// here, and the host keeps only the library's side of the protocol
// (tests/user/host/README.md has the map).
#include "fixture.hpp"

#include <dat/dat_kdat.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <set>

#include <uapi/kdat_abi.h>

using namespace kt;

namespace {

class SrqRing : public Pair {
protected:
	// A server EP on the SRQ with its own receive and request EVDs, and
	// a client EP, connected.
	DAT_EVD_HANDLE recv = DAT_HANDLE_NULL, req = DAT_HANDLE_NULL;

	void open_split_pair(DAT_COUNT depth, DAT_COUNT recv_qlen = 64)
	{
		ASSERT_OK(dat_evd_create(s.ia, recv_qlen, DAT_HANDLE_NULL,
					 DAT_EVD_DTO_FLAG, &recv));
		ASSERT_OK(dat_evd_create(s.ia, 64, DAT_HANDLE_NULL,
					 DAT_EVD_DTO_FLAG, &req));
		make_srq(depth, 1);
		if (HasFatalFailure())
			return;
		DAT_EP_ATTR a = ep_attr();
		DAT_EP_HANDLE se, ce;
		ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, recv, req, s.conn,
						 srq, &a, &se));
		ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a,
					&ce));
		connect(se, ce, 1);
		sep.push_back(se);
		cep.push_back(ce);
	}
};

// A ring entry whose LMR was freed before the kernel took it is refused:
// it comes back as an async error event on the SRQ, the library reports
// it (dat_kdat_srq_get_refused) and counts its buffer as returned, and the
// kernel never counted it.
TEST_F(SrqRing, RefusedEntryComesBackAndReturnsItsBuffer)
{
	make_srq(4, 1);
	std::vector<char> mem(8192);
	DAT_LMR_HANDLE l2;
	DAT_LMR_CONTEXT c2;
	ASSERT_OK(s.register_mem(s.pz, mem.data(), mem.size(),
				 DAT_MEM_PRIV_ALL_FLAG, &l2, &c2));
	ASSERT_OK(post_srq(0, 64, 1));
	DAT_LMR_TRIPLET t{c2, 0, (DAT_VADDR)(uintptr_t)mem.data(), 64};
	ASSERT_OK(dat_srq_post_recv(srq, 1, &t, cookie(0xabc)));
	// no EP: the entries wait in the ring; the LMR goes first
	ASSERT_OK(dat_lmr_free(l2));
	DAT_SRQ_PARAM q = query();	// drains
	EXPECT_EQ(q.available_dto_count, 1);
	EXPECT_EQ(q.outstanding_dto_count, 1);

	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.async_evd, &ev));
	EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, srq);
	EXPECT_EQ(ev.event_data.asynch_error_event_data.reason,
		  DAT_SRQ_OTHER_ERROR);
	DAT_DTO_COOKIE got;
	DAT_RETURN why;
	ASSERT_OK(dat_kdat_srq_get_refused(srq, &got, &why));
	EXPECT_EQ(got.as_64, 0xabcu);
	EXPECT_EQ(DAT_GET_TYPE(why), (DAT_RETURN)DAT_INVALID_PARAMETER)
		<< std::hex << why;
	ASSERT_DAT(dat_kdat_srq_get_refused(srq, &got, &why), DAT_QUEUE_EMPTY);

	// the refused buffer is back: three more fit, not four
	for (int i = 0; i < 3; i++)
		ASSERT_OK(post_srq((i + 1) * 64, 64, 10 + i));
	ASSERT_DAT(post_srq(4 * 64, 64, 20), DAT_INSUFFICIENT_RESOURCES);
	q = query();
	EXPECT_EQ(q.available_dto_count, 4);
	EXPECT_EQ(q.outstanding_dto_count, 4);
	EXPECT_TRUE(no_event(s.async_evd));
}

// An SRQ resized past its post ring (made for the first size) takes every
// post up to the new size: a full ring is drained on a kick.
TEST_F(SrqRing, GrowingPastThePostRingStillTakesEveryPost)
{
	make_srq(8, 1);
	for (int i = 0; i < 8; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	ASSERT_OK(dat_srq_resize(srq, 20));
	for (int i = 8; i < 20; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	DAT_SRQ_PARAM q = query();
	EXPECT_GE(q.max_recv_dtos, 20);
	EXPECT_EQ(q.available_dto_count, 20);
	EXPECT_EQ(q.outstanding_dto_count, 20);
}

// Posters on four threads never get more buffers into the SRQ than it
// holds: exactly max_recv_dtos succeed, the rest are refused.
TEST_F(SrqRing, ConcurrentPostersNeverExceedMaxRecvDtos)
{
	make_srq(512, 1);
	const int max = query().max_recv_dtos;
	ASSERT_GE(max, 512);
	ASSERT_LE(max, 800);
	std::atomic<int> posted{0}, refused{0}, other{0};
	std::vector<std::thread> t;
	for (int k = 0; k < 4; k++)
		t.emplace_back([&, k] {
			for (int i = 0; i < 200; i++) {
				DAT_RETURN r = post_srq((k * 200 + i) * 64, 64,
							k * 200 + i);
				if (r == DAT_SUCCESS)
					posted++;
				else if (DAT_GET_TYPE(r) ==
					 DAT_INSUFFICIENT_RESOURCES)
					refused++;
				else
					other++;
			}
		});
	for (auto &x : t)
		x.join();
	EXPECT_EQ(posted.load(), max);
	EXPECT_EQ(refused.load(), 800 - max);
	EXPECT_EQ(other.load(), 0);
	DAT_SRQ_PARAM q = query();
	EXPECT_EQ(q.available_dto_count, max);
	EXPECT_EQ(q.outstanding_dto_count, max);
}

// Both buffers taken, both completions queued: the SRQ is starved.  The
// consumer reaps one and reposts it; the kernel drains before it sees the
// reaping, so only the library's second kick gets the buffer in - and the
// next message lands in it (else it would wait for a buffer forever).
TEST_F(SrqRing, RepostAfterTheSrqRanDryReachesTheKernel)
{
	open_split_pair(2);
	if (HasFatalFailure())
		return;
	ASSERT_OK(post_srq(0, 64, 0));
	ASSERT_OK(post_srq(64, 64, 1));
	std::strcpy(c.buf.get(), "one");
	std::strcpy(c.buf.get() + 64, "two");
	std::strcpy(c.buf.get() + 128, "three");
	ASSERT_TRUE(send(0, 0, 4));
	ASSERT_TRUE(send(0, 64, 4));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(recv, &ev));
	uint64_t ck = ev.event_data.dto_completion_event_data.user_cookie.as_64;
	ASSERT_LT(ck, 2u);
	EXPECT_STREQ(s.buf.get() + ck * 64, "one");
	ASSERT_OK(post_srq(ck * 64, 64, ck));
	ASSERT_TRUE(send(0, 128, 6)) << "the reposted buffer never reached the SRQ";
	ASSERT_TRUE(wait_event(recv, &ev));
	uint64_t two = ev.event_data.dto_completion_event_data.user_cookie.as_64;
	EXPECT_STREQ(s.buf.get() + two * 64, "two");
	ASSERT_TRUE(wait_event(recv, &ev));
	EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, ck);
	EXPECT_STREQ(s.buf.get() + ck * 64, "three");
	EXPECT_TRUE(no_event(recv));
}

// Three messages taken, their completions reaped, the buffers reposted
// (into the ring: the SRQ still had one).  The kernel's query drains
// before it sees the reaping; the library asks again, so the counts
// include the reposted buffers.
TEST_F(SrqRing, QueryCountsReceivesRepostedAfterReaping)
{
	open_split_pair(4);
	if (HasFatalFailure())
		return;
	for (int i = 0; i < 4; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	for (int i = 0; i < 3; i++)
		ASSERT_TRUE(send(0, 0, 8));
	for (int i = 0; i < 3; i++) {
		DAT_EVENT ev;
		ASSERT_TRUE(wait_event(recv, &ev));
		uint64_t ck = ev.event_data.dto_completion_event_data.user_cookie.as_64;
		ASSERT_OK(post_srq(ck * 64, 64, ck));
	}
	DAT_SRQ_PARAM q = query();
	EXPECT_EQ(q.available_dto_count, 4);
	EXPECT_EQ(q.outstanding_dto_count, 4);
}

// Receive completions the kernel lost to a full EVD ring still return
// their SRQ buffers; the library reports the loss once, on the async EVD.
TEST_F(SrqRing, DroppedCompletionsReturnTheirBuffersAndAreReportedOnce)
{
	open_split_pair(16, 2);
	if (HasFatalFailure())
		return;
	for (int i = 0; i < 16; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	for (int i = 0; i < 8; i++)
		ASSERT_TRUE(send(0, 0, 8));
	ASSERT_TRUE(wait_for([&] { return query().available_dto_count == 8; }));
	int got = 0;
	// dequeue what the ring kept until the kernel counts every buffer
	// back (lost ones at once, kept ones once reaped)
	ASSERT_TRUE(wait_for([&] {
		DAT_EVENT e;
		while (dat_evd_dequeue(recv, &e) == DAT_SUCCESS)
			got++;
		return query().outstanding_dto_count == 8;
	}));
	EXPECT_GE(got, 1);
	EXPECT_LT(got, 8) << "nothing was lost: the ring is larger than asked";
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.async_evd, &ev));
	EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_EVD_OVERFLOW);
	EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, recv);
	EXPECT_EQ(ev.event_data.asynch_error_event_data.reason,
		  DAT_EVD_OVERFLOW_ERROR);
	EXPECT_TRUE(no_event(s.async_evd)) << "reported twice";
	EXPECT_EQ(query().available_dto_count, 8);
}

// /dev/kdat through the raw ABI, for what only the ring header shows.
struct Raw {
	int fd = ::open("/dev/kdat", O_RDWR | O_CLOEXEC);
	std::vector<std::pair<void *, size_t>> maps;

	~Raw()
	{
		for (auto &m : maps)
			::munmap(m.first, m.second);
		if (fd >= 0)
			::close(fd);
	}
	template <class T> long ioc(unsigned long cmd, T &a)
	{
		a.hdr.size = sizeof(a);
		a.hdr.status = 0;
		return ::ioctl(fd, cmd, &a) ? -errno : (long)a.hdr.status;
	}
	kdat_ring_hdr *map(uint64_t off, uint64_t size)
	{
		void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, off);
		if (p == MAP_FAILED)
			return nullptr;
		maps.emplace_back(p, size);
		return static_cast<kdat_ring_hdr *>(p);
	}
};

uint32_t flags_of(kdat_ring_hdr *h)
{
	return __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);
}

uint32_t head_of(kdat_ring_hdr *h)
{
	return __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
}

// One counter of /sys/kernel/debug/kdat/srq_limit (the device SRQ limit
// of user SRQs: events handled, ring entries they posted, arms), -1 if
// absent.
long srq_limit_counter(const char *key)
{
	return kdat_counter(key, "srq_limit");
}

// Receives waiting in the post ring reach the SRQ when the device runs low
// (its SRQ limit, a quarter of the SRQ, raises IB_EVENT_SRQ_LIMIT_REACHED
// as it takes a buffer), with no kick and before the completion of that
// buffer could drain them; the limit is armed again after the event, and
// a resize moves it with the size.
TEST_F(SrqRing, DeviceLimitDrainsThePostRingWithoutKickOrCompletion)
{
	open_split_pair(8);
	if (HasFatalFailure())
		return;
	ASSERT_GE(srq_limit_counter("events"), 0) << "no debugfs kdat/srq_limit";
	// two buffers in the SRQ (the query drains the second), limit 8/4 = 2
	ASSERT_OK(post_srq(0, 64, 0));
	ASSERT_OK(post_srq(64, 64, 1));
	DAT_SRQ_PARAM q = query();
	ASSERT_EQ(q.available_dto_count, 2);
	// four more wait in the ring: the SRQ is not starved, nothing kicks
	for (int i = 2; i < 6; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	long ev0 = srq_limit_counter("events");
	long dr0 = srq_limit_counter("drained");
	long arms0 = srq_limit_counter("arms");
	// the device takes one, one is left (< 2): the event posts the four
	// from the responder, before the sender's ACK, so before send()
	// returns; the completion of the buffer taken comes later
	std::strcpy(c.buf.get(), "one");
	ASSERT_TRUE(send(0, 0, 4));
	EXPECT_EQ(srq_limit_counter("events"), ev0 + 1);
	EXPECT_EQ(srq_limit_counter("drained"), dr0 + 4);
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(recv, &ev));
	EXPECT_LT(ev.event_data.dto_completion_event_data.user_cookie.as_64, 2u);
	q = query();
	EXPECT_EQ(q.available_dto_count, 5);
	EXPECT_EQ(q.outstanding_dto_count, 5);
	// the event disarmed the limit; its work item arms it again
	EXPECT_TRUE(wait_for([&] { return srq_limit_counter("arms") > arms0; }));

	// resized to 20 the limit is 5, armed with the new size: five on the
	// SRQ, three more in the ring; the next buffer taken leaves four
	arms0 = srq_limit_counter("arms");
	ASSERT_OK(dat_srq_resize(srq, 20));
	EXPECT_GT(srq_limit_counter("arms"), arms0);
	for (int i = 6; i < 9; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	ev0 = srq_limit_counter("events");
	dr0 = srq_limit_counter("drained");
	ASSERT_TRUE(send(0, 0, 4));
	EXPECT_EQ(srq_limit_counter("events"), ev0 + 1);
	EXPECT_EQ(srq_limit_counter("drained"), dr0 + 3);
	ASSERT_TRUE(wait_event(recv, &ev));
	q = query();
	EXPECT_EQ(q.available_dto_count, 7);
	EXPECT_EQ(q.outstanding_dto_count, 7);
	EXPECT_TRUE(no_event(s.async_evd));
}

// The kernel asks for a kick (KDAT_RING_NEED_KICK) only while an EP could
// take a buffer and the SRQ has none: not for a new SRQ, nor for receives
// posted before any EP (an EP joining drains them), but once an EP joined
// a starved SRQ, until a kick brings a buffer in.
TEST(SrqRingAbi, NeedKickOnlyWhileAnEpCouldTakeABuffer)
{
	long baseline = live_objects();
	{
		Raw r;
		ASSERT_GE(r.fd, 0);
		kdat_ioc_ia_open o{};
		std::strncpy(o.name, srv_ia(), sizeof(o.name) - 1);
		o.async_qlen = 16;
		ASSERT_EQ(r.ioc(KDAT_IOC_IA_OPEN, o), (long)DAT_SUCCESS);
		kdat_ioc_pz_create p{};
		p.ia = o.ia;
		ASSERT_EQ(r.ioc(KDAT_IOC_PZ_CREATE, p), (long)DAT_SUCCESS);
		kdat_ioc_evd_create dto{}, conn{};
		dto.ia = conn.ia = o.ia;
		dto.qlen = conn.qlen = 16;
		dto.flags = DAT_EVD_DTO_FLAG;
		conn.flags = DAT_EVD_CONNECTION_FLAG;
		ASSERT_EQ(r.ioc(KDAT_IOC_EVD_CREATE, dto), (long)DAT_SUCCESS);
		ASSERT_EQ(r.ioc(KDAT_IOC_EVD_CREATE, conn), (long)DAT_SUCCESS);
		std::vector<char> mem(65536);
		kdat_ioc_lmr_create l{};
		l.ia = o.ia, l.pz = p.pz, l.addr = (uintptr_t)mem.data();
		l.length = mem.size();
		l.priv = DAT_MEM_PRIV_LOCAL_WRITE_FLAG;
		ASSERT_EQ(r.ioc(KDAT_IOC_LMR_CREATE, l), (long)DAT_SUCCESS);

		auto make_srq = [&](kdat_ring_hdr **h) {
			kdat_ioc_srq_create sc{};
			sc.ia = o.ia, sc.pz = p.pz, sc.max_recv_dtos = 8;
			sc.max_recv_iov = 1;
			EXPECT_EQ(r.ioc(KDAT_IOC_SRQ_CREATE, sc), (long)DAT_SUCCESS);
			*h = r.map(sc.ring_offset, sc.ring_size);
			return sc.srq;
		};
		auto post = [&](kdat_ring_hdr *h, uint64_t ck) {
			uint32_t t = h->tail;
			auto *w = reinterpret_cast<kdat_srq_wqe *>(
				reinterpret_cast<char *>(h) + h->entry_offset +
				(t & (h->entries - 1)) * h->entry_size);
			w->cookie = ck, w->nseg = 1, w->pad = 0;
			w->seg[0] = {l.lmr_context, 0,
				     (uintptr_t)mem.data() + ck * 64, 64};
			__atomic_store_n(&h->tail, t + 1, __ATOMIC_SEQ_CST);
		};
		auto make_ep = [&](uint32_t srq) {
			kdat_ioc_ep_create ec{};
			ec.ia = o.ia, ec.pz = p.pz, ec.srq = srq;
			ec.recv_evd = ec.request_evd = dto.evd;
			ec.connect_evd = conn.evd;
			ec.has_attr = 1;
			ec.attr.max_message_size = 4096;
			ec.attr.max_request_dtos = 16;
			ec.attr.max_request_iov = 1;
			ec.attr.max_recv_dtos = 16;
			ec.attr.max_recv_iov = 1;
			EXPECT_EQ(r.ioc(KDAT_IOC_EP_CREATE, ec), (long)DAT_SUCCESS);
		};
		auto available = [&](uint32_t srq) {
			kdat_ioc_srq_query q{};
			q.srq = srq, q.mask = DAT_SRQ_FIELD_ALL;
			EXPECT_EQ(r.ioc(KDAT_IOC_SRQ_QUERY, q), (long)DAT_SUCCESS);
			return q.available_dto_count;
		};

		// a new SRQ, and receives posted before any EP: no kick wanted,
		// the entries wait in the ring
		kdat_ring_hdr *h1;
		uint32_t s1 = make_srq(&h1);
		ASSERT_NE(h1, nullptr);
		EXPECT_EQ(flags_of(h1), 0u);
		post(h1, 0);
		post(h1, 1);
		EXPECT_EQ(flags_of(h1), 0u);
		EXPECT_EQ(head_of(h1), 0u);
		// an EP joining drains them into the SRQ, which is not starved
		make_ep(s1);
		EXPECT_EQ(head_of(h1), 2u);
		EXPECT_EQ(flags_of(h1), 0u);
		EXPECT_EQ(available(s1), 2);

		// an EP joining a starved SRQ raises the flag
		kdat_ring_hdr *h2;
		uint32_t s2 = make_srq(&h2);
		ASSERT_NE(h2, nullptr);
		EXPECT_EQ(flags_of(h2), 0u);
		make_ep(s2);
		EXPECT_EQ(flags_of(h2), (uint32_t)KDAT_RING_NEED_KICK);
		// a post alone is not taken; the kick takes it and clears it
		post(h2, 2);
		EXPECT_EQ(head_of(h2), 0u);
		EXPECT_EQ(flags_of(h2), (uint32_t)KDAT_RING_NEED_KICK);
		kdat_ioc_srq_op k{};
		k.srq = s2;
		ASSERT_EQ(r.ioc(KDAT_IOC_SRQ_KICK, k), (long)DAT_SUCCESS);
		EXPECT_EQ(head_of(h2), 1u);
		EXPECT_EQ(flags_of(h2), 0u);
		EXPECT_EQ(available(s2), 1);
	} // closing the file frees everything
	EXPECT_TRUE(wait_for([&] { return live_objects() == baseline; }));
}

} // namespace
