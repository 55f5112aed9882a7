// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// SRQ and EVD semantics of issue 11, through libdat against the real
// module: DAT_HW_DEFAULT attributes, refused post-ring entries beyond
// what the async EVD holds, the low watermark counting ring-posted
// buffers, a full receive EVD, handle reuse, and SRQ returns counted
// from the events' own SRQ field without asking the kernel.
#include "fixture.hpp"

#include <dat/dat_kdat.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <set>

#include <uapi/kdat_abi.h>

using namespace kt;

namespace {

class SrqSemantics : public Pair {
protected:
	// @n messages from client EP 0, each received on s.dto.
	void receive(int n)
	{
		DAT_EVENT ev;

		for (int i = 0; i < n; i++) {
			ASSERT_TRUE(send(0, 0, 8));
			ASSERT_TRUE(wait_event(s.dto, &ev));
		}
	}

	// The SRQ's low watermark event came; one more receive fires no
	// other (once per arming) and leaves @left on the SRQ.
	void expect_lw_fired_once(DAT_COUNT left)
	{
		DAT_EVENT ev;

		ASSERT_TRUE(wait_event(s.async_evd, &ev));
		EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, srq);
		EXPECT_EQ(ev.event_data.asynch_error_event_data.reason,
			  DAT_SRQ_LOW_WATERMARK_EVENT);
		receive(1);
		EXPECT_TRUE(no_event(s.async_evd)) << "fired twice for one arming";
		EXPECT_EQ(query().available_dto_count, left);
	}

	// One server EP on the SRQ (its receives on @recv, s.dto if none)
	// connected to a client EP.
	void connect_srq_pair(DAT_EVD_HANDLE recv = DAT_HANDLE_NULL)
	{
		DAT_EP_ATTR a = ep_attr();
		DAT_EP_HANDLE se, ce;
		ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, recv ? recv : s.dto,
						 s.dto, s.conn, srq, &a, &se));
		ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a,
					&ce));
		connect(se, ce, 1);
		if (HasFatalFailure())
			return;
		sep.push_back(se);
		cep.push_back(ce);
	}

	// Into the post ring (no EP, so nothing drains them yet): @bad
	// receives whose LMR is freed before the kernel sees them (it
	// refuses each), then @good ones behind them.
	void post_refused_then_good(int bad, int good)
	{
		std::vector<char> mem(4096);
		DAT_LMR_HANDLE l;
		DAT_LMR_CONTEXT lc;

		ASSERT_OK(s.register_mem(s.pz, mem.data(), mem.size(),
					 DAT_MEM_PRIV_ALL_FLAG, &l, &lc));
		for (int i = 0; i < bad; i++) {
			DAT_LMR_TRIPLET t{lc, 0,
					  (DAT_VADDR)(uintptr_t)mem.data(), 64};
			ASSERT_OK(dat_srq_post_recv(srq, 1, &t, cookie(i)));
		}
		ASSERT_OK(dat_lmr_free(l));
		for (int i = 0; i < good; i++)
			ASSERT_OK(post_srq(0, 64, 1000 + i));
	}

	// Async events of @srq with @reason waiting on the async EVD now.
	int take_async(DAT_SRQ_HANDLE h, DAT_COUNT reason, int *other = nullptr)
	{
		DAT_EVENT ev;
		int n = 0;

		while (dat_evd_dequeue(s.async_evd, &ev) == DAT_SUCCESS) {
			auto &d = ev.event_data.asynch_error_event_data;
			if (ev.event_number ==
				    DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR &&
			    d.dat_handle == h && d.reason == reason)
				n++;
			else if (other)
				(*other)++;
		}
		return n;
	}
};

// DAT_HW_DEFAULT for every SRQ attribute and an EVD's qlen: the provider
// chooses (docs/user-api.md) and query reports the choice, which is real.
TEST_F(SrqSemantics, HwDefaultAttributesAreChosenAndReported)
{
	DAT_SRQ_ATTR sa{DAT_HW_DEFAULT, DAT_HW_DEFAULT, DAT_HW_DEFAULT};
	ASSERT_OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	DAT_SRQ_PARAM q = query();
	DAT_IA_ATTR ia;
	ASSERT_OK(dat_ia_query(s.ia, nullptr, DAT_IA_FIELD_ALL, &ia, 0, nullptr));
	EXPECT_EQ(q.max_recv_dtos, std::min<DAT_COUNT>(ia.max_recv_per_srq, 256));
	EXPECT_GE(q.max_recv_iov, 1);
	EXPECT_LE(q.max_recv_iov, 16);
	EXPECT_EQ(q.low_watermark, DAT_SRQ_LW_DEFAULT);
	EXPECT_EQ(q.srq_state, DAT_SRQ_STATE_OPERATIONAL);
	EXPECT_TRUE(no_event(s.async_evd));
	for (DAT_COUNT i = 0; i < q.max_recv_dtos; i++)
		ASSERT_OK(post_srq(0, 64, i));
	ASSERT_DAT(post_srq(0, 64, 9999), DAT_INSUFFICIENT_RESOURCES);
	q = query();
	EXPECT_EQ(q.available_dto_count, q.max_recv_dtos);

	DAT_EVD_HANDLE evd;
	DAT_EVD_PARAM ep;
	ASSERT_OK(dat_evd_create(s.ia, DAT_HW_DEFAULT, DAT_HANDLE_NULL,
				 DAT_EVD_DTO_FLAG, &evd));
	ASSERT_OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	EXPECT_EQ(ep.evd_qlen, std::min<DAT_COUNT>(ia.max_evd_qlen, 256));
	EXPECT_EQ(dat_evd_free(evd), DAT_SUCCESS);
}

// More refused ring entries (4096) than the async EVD holds (64) and than
// the library once kept (1024): every one is reported, none is lost to an
// overflow, every cookie comes back exactly once, and the counts are exact.
TEST_F(SrqSemantics, EveryRefusedRingEntryIsReportedNeverDropped)
{
	const int depth = 256, rounds = 16;
	make_srq(depth, 1);
	std::vector<char> mem(4096);
	int reported = 0, other = 0;

	for (int round = 0; round < rounds; round++) {
		DAT_LMR_HANDLE l;
		DAT_LMR_CONTEXT lc;
		ASSERT_OK(s.register_mem(s.pz, mem.data(), mem.size(),
					 DAT_MEM_PRIV_ALL_FLAG, &l, &lc));
		// no EP: the entries wait in the ring; then their LMR goes
		for (int i = 0; i < depth; i++) {
			DAT_LMR_TRIPLET t{lc, 0, (DAT_VADDR)(uintptr_t)mem.data(),
					  64};
			ASSERT_OK(dat_srq_post_recv(
				srq, 1, &t, cookie(round * depth + i)));
		}
		ASSERT_OK(dat_lmr_free(l));
		// each query drains what the async EVD has room for; what
		// waits behind a refusal held for room is still posted
		int got = 0;
		for (int tries = 0; got < depth && tries < 4 * depth; tries++) {
			DAT_SRQ_PARAM q = query();
			ASSERT_EQ(q.available_dto_count, q.outstanding_dto_count);
			ASSERT_LT(q.outstanding_dto_count, depth - got);
			got += take_async(srq, DAT_SRQ_OTHER_ERROR, &other);
		}
		ASSERT_EQ(got, depth) << "round " << round;
		DAT_SRQ_PARAM q = query();
		ASSERT_EQ(q.available_dto_count, 0);
		ASSERT_EQ(q.outstanding_dto_count, 0);
		reported += got;
	}
	EXPECT_EQ(reported, depth * rounds);
	EXPECT_EQ(other, 0) << "an overflow or another async event";
	std::set<uint64_t> cookies;
	DAT_DTO_COOKIE c;
	DAT_RETURN why;
	while (dat_kdat_srq_get_refused(srq, &c, &why) == DAT_SUCCESS) {
		EXPECT_EQ(DAT_GET_TYPE(why), (DAT_RETURN)DAT_INVALID_PARAMETER);
		EXPECT_TRUE(cookies.insert(c.as_64).second) << c.as_64;
	}
	EXPECT_EQ(cookies.size(), (size_t)(depth * rounds));
	// every refused buffer is back: the SRQ takes a full load again
	for (int i = 0; i < depth; i++)
		ASSERT_OK(post_srq(0, 64, i));
	ASSERT_DAT(post_srq(0, 64, depth), DAT_INSUFFICIENT_RESOURCES);
	EXPECT_EQ(query().available_dto_count, depth);
}

// A refusal the kernel holds back while the async EVD is full also holds
// back every entry behind it; dequeuing the refusals must let the kernel
// go on (the consumer may post nothing more): after one query that fills
// the async EVD, no query and no post, yet every refusal and every good
// buffer behind them gets through.
TEST_F(SrqSemantics, RefusalsHeldForRoomDoNotStallTheEntriesBehind)
{
	const int bad = 150, good = 8;	// bad > the async EVD's 64
	make_srq(256, 1);
	post_refused_then_good(bad, good);
	if (HasFatalFailure())
		return;
	// one drain (a query drains the ring first): the async EVD fills
	(void)query();
	int got = 0, other = 0;
	for (int tries = 0; got < bad && tries < 10 * bad; tries++)
		got += take_async(srq, DAT_SRQ_OTHER_ERROR, &other);
	EXPECT_EQ(got, bad) << "refusals stuck behind a full async EVD";
	EXPECT_EQ(other, 0);
	EXPECT_EQ(query().available_dto_count, good);
}

// Buffers held in the post ring behind a refusal that waits for room on
// the full async EVD were accepted by dat_srq_post_recv: query counts
// them, and resize refuses to shrink below them (DAT_INVALID_STATE, the
// SRQ unchanged), as it refuses below the buffers on the device.
TEST_F(SrqSemantics, ResizeAndQueryCountBuffersHeldBehindARefusal)
{
	const int bad = 100, good = 8;	// bad > the async EVD's 64
	make_srq(256, 1);
	post_refused_then_good(bad, good);
	if (HasFatalFailure())
		return;
	// the query's drain fills the async EVD and holds the next refusal
	DAT_SRQ_PARAM q = query();
	EXPECT_EQ(q.available_dto_count, q.outstanding_dto_count);
	EXPECT_GT(q.outstanding_dto_count, good)
		<< "buffers held in the ring are not counted";
	EXPECT_LT(q.outstanding_dto_count, bad + good)
		<< "the drain refused nothing: no refusal is held";
	ASSERT_DAT(dat_srq_resize(srq, good), DAT_INVALID_STATE);
	EXPECT_EQ(query().max_recv_dtos, 256);
	int got = 0, other = 0;
	for (int tries = 0; got < bad && tries < 10 * bad; tries++)
		got += take_async(srq, DAT_SRQ_OTHER_ERROR, &other);
	ASSERT_EQ(got, bad);
	EXPECT_EQ(other, 0);
	q = query();
	EXPECT_EQ(q.available_dto_count, good);
	EXPECT_EQ(q.outstanding_dto_count, good);
	ASSERT_DAT(dat_srq_resize(srq, good - 1), DAT_INVALID_STATE);
	ASSERT_OK(dat_srq_resize(srq, good));
	EXPECT_EQ(query().max_recv_dtos, good);
}

// The low watermark counts the buffers posted through the ring (no
// system call) as on the SRQ: set_lw evaluates after them, and an EP
// taking one fires it exactly when available drops below it, once.
TEST_F(SrqSemantics, LowWatermarkCountsRingPostedBuffers)
{
	make_srq(16, 1);
	for (int i = 0; i < 8; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	ASSERT_OK(dat_srq_set_lw(srq, 8));	// 8 on the SRQ: not below
	EXPECT_TRUE(no_event(s.async_evd));
	ASSERT_OK(dat_srq_set_lw(srq, 9));	// 8 < 9: fires in the call
	EXPECT_EQ(take_async(srq, DAT_SRQ_LOW_WATERMARK_EVENT), 1);
	ASSERT_OK(dat_srq_set_lw(srq, 8));	// re-armed, not below
	EXPECT_TRUE(no_event(s.async_evd));
	EXPECT_EQ(query().low_watermark, 8);

	connect_srq_pair();
	if (HasFatalFailure())
		return;
	EXPECT_TRUE(no_event(s.async_evd)) << "fired before a buffer was taken";
	receive(1);
	expect_lw_fired_once(6);
}

// Buffers posted through the ring after the watermark was armed are on
// the SRQ too: a receive that takes one of the buffers the SRQ held when
// armed must not fire a watermark that the ring's buffers keep it above.
// (The kernel used to check the watermark before it moved the ring's
// buffers into the SRQ, and fired with 8 buffers posted against 6.)
TEST_F(SrqSemantics, LowWatermarkCountsBuffersPostedAfterArming)
{
	make_srq(16, 1);
	for (int i = 0; i < 6; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	ASSERT_OK(dat_srq_set_lw(srq, 6));	// 6 on the SRQ: armed
	EXPECT_TRUE(no_event(s.async_evd));

	connect_srq_pair();
	if (HasFatalFailure())
		return;
	// three more, through the ring: the SRQ holds buffers, so no kick
	for (int i = 6; i < 9; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	// 9 on the SRQ; two receives leave 7: never below 6.  The second
	// completion is handled after the first, so by its event any
	// watermark the first fired is on the async EVD.
	receive(2);
	EXPECT_TRUE(no_event(s.async_evd))
		<< "fired with buffers posted after arming still on the SRQ";
	EXPECT_EQ(query().available_dto_count, 7);
	receive(2);	// 6, then 5: below
	expect_lw_fired_once(4);
}

// Buffers posted through the ring that the kernel could not move into
// the SRQ yet are on the SRQ too.  The kernel learns that the consumer
// reaped an event on another EVD only later (it collects that per IA,
// under a mutex), so a completion's drain sees the SRQ of 4 full and
// leaves the two buffers re-posted after reaping in the ring: the
// watermark (2) must count them, not fire with 1 + 2 posted.
TEST_F(SrqSemantics, LowWatermarkCountsBuffersTheDrainLeftInTheRing)
{
	make_srq(4, 1);
	DAT_EVD_HANDLE other;
	ASSERT_OK(dat_evd_create(s.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				 &other));
	for (int i = 0; i < 4; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	ASSERT_OK(dat_srq_set_lw(srq, 2));	// 4 on the SRQ: armed
	connect_srq_pair();			// EP 0: receives on s.dto
	if (HasFatalFailure())
		return;
	connect_srq_pair(other);		// EP 1: receives on other
	if (HasFatalFailure())
		return;
	// EP 1 takes two (2 left: not below); the consumer reaps them once
	// both are on the EVD, so the kernel, which collects an EVD's reaped
	// events when it writes the next one there, still counts them
	for (int i = 0; i < 2; i++)
		ASSERT_TRUE(send(1, 0, 8));
	DAT_EVENT ev;
	DAT_COUNT more = 0;
	ASSERT_OK(dat_evd_wait(other, 10 * 1000 * 1000, 2, &ev, &more));
	EXPECT_EQ(more, 1);
	ASSERT_OK(dat_evd_dequeue(other, &ev));
	EXPECT_TRUE(no_event(s.async_evd));
	// re-posted through the ring: the SRQ holds buffers, so no kick
	for (int i = 4; i < 6; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	receive(1);	// EP 0 takes one: 1 in the SRQ, 2 in the ring
	EXPECT_TRUE(no_event(s.async_evd))
		<< "fired with 3 buffers posted against a watermark of 2";
	EXPECT_EQ(query().available_dto_count, 3);
	receive(1);	// 2: not below
	EXPECT_TRUE(no_event(s.async_evd));
	receive(1);	// 1: below
	expect_lw_fired_once(0);
}

// dat_kdat_srq_post_recv_ioctl posts through a system call, and its room
// check counts the buffers the ring already took: on an SRQ of 4 with 4
// accepted through the ring (most still in it: only an empty SRQ asks
// for a kick), a fifth is DAT_INSUFFICIENT_RESOURCES, and the SRQ holds 4.
TEST_F(SrqSemantics, IoctlPostCountsBuffersStillInTheRing)
{
	make_srq(4, 1);
	for (int i = 0; i < 4; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	DAT_LMR_TRIPLET t = s.seg(4 * 64, 64);
	ASSERT_DAT(dat_kdat_srq_post_recv_ioctl(srq, 1, &t, cookie(4)),
		   DAT_INSUFFICIENT_RESOURCES);
	DAT_SRQ_PARAM q = query();
	EXPECT_EQ(q.available_dto_count, 4);
	EXPECT_EQ(q.outstanding_dto_count, 4);
}

// The whole DAT_RETURN of the SRQ family's bad-input answers through the
// real module: class, type and subtype (the other cases compare types).
#define EXPECT_DAT_EXACT(expr, want)                                         \
	do {                                                                 \
		DAT_RETURN r_ = (expr);                                      \
		EXPECT_EQ(r_, (DAT_RETURN)(want))                            \
			<< #expr << " returned 0x" << std::hex << r_;        \
	} while (0)

TEST_F(SrqSemantics, BadInputAnswersAreExact)
{
	constexpr DAT_RETURN kArg2 = DAT_CLASS_ERROR | DAT_INVALID_PARAMETER |
				     DAT_INVALID_ARG2;
	constexpr DAT_RETURN kArg3 = DAT_CLASS_ERROR | DAT_INVALID_PARAMETER |
				     DAT_INVALID_ARG3;
	DAT_SRQ_ATTR bad{0, 1, DAT_SRQ_LW_DEFAULT};
	DAT_SRQ_HANDLE other;
	EXPECT_DAT_EXACT(dat_srq_create(s.ia, s.pz, &bad, &other), kArg3);
	EXPECT_DAT_EXACT(dat_srq_create(s.ia, s.pz, nullptr, &other), kArg3);

	make_srq(16, 1);
	DAT_LMR_TRIPLET t = s.seg(0, 64);
	// (0 segments is a valid post: a buffer for a zero-length message)
	EXPECT_DAT_EXACT(dat_srq_post_recv(srq, -1, &t, cookie(1)), kArg2);
	EXPECT_DAT_EXACT(dat_srq_post_recv(srq, 1, nullptr, cookie(1)), kArg3);
	DAT_SRQ_PARAM p;
	EXPECT_DAT_EXACT(dat_srq_query(srq, (DAT_SRQ_PARAM_MASK)~0u, &p), kArg2);
	EXPECT_DAT_EXACT(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, nullptr), kArg3);
	EXPECT_DAT_EXACT(dat_srq_resize(srq, 0), kArg2);
	EXPECT_DAT_EXACT(dat_srq_set_lw(srq, -1), kArg2);
	EXPECT_DAT_EXACT(dat_srq_set_lw(srq, 17), kArg2);
	// below the watermark, then below the outstanding buffers
	ASSERT_OK(dat_srq_set_lw(srq, 8));
	EXPECT_DAT_EXACT(dat_srq_resize(srq, 7),
			 DAT_CLASS_ERROR | DAT_INVALID_STATE |
				 DAT_INVALID_STATE_SRQ_OPERATIONAL);
	ASSERT_OK(dat_srq_set_lw(srq, DAT_SRQ_LW_DEFAULT));
	for (int i = 0; i < 10; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));
	EXPECT_DAT_EXACT(dat_srq_resize(srq, 9),
			 DAT_CLASS_ERROR | DAT_INVALID_STATE |
				 DAT_INVALID_STATE_SRQ_OPERATIONAL);
	EXPECT_EQ(query().max_recv_dtos, 16);
}

// A receive EVD too small for its completions: events the consumer took
// without a system call are not overwritten unaccounted, lost ones return
// their buffers, the overflow is reported once on the async EVD, and the
// counts (kernel's and library's) stay exact.  dat_evd_post_se on a full
// EVD is DAT_QUEUE_FULL.
TEST_F(SrqSemantics, FullRecvEvdKeepsCountsExactAndReportsOverflow)
{
	DAT_EVD_HANDLE recv, req;
	ASSERT_OK(dat_evd_create(s.ia, 2, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				 &recv));
	ASSERT_OK(dat_evd_create(s.ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				 &req));
	make_srq(16, 1);
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE se, ce;
	ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, recv, req, s.conn, srq, &a,
					 &se));
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce));
	connect(se, ce, 1);
	if (HasFatalFailure())
		return;
	sep.push_back(se);
	cep.push_back(ce);
	for (int i = 0; i < 16; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));

	// take events with dequeue alone: the kernel does not see the head
	// move until it next writes the ring
	auto take = [&](int n) {
		int got = 0;
		return wait_for([&] {
			DAT_EVENT e;
			while (got < n && dat_evd_dequeue(recv, &e) == DAT_SUCCESS)
				got++;
			return got == n;
		});
	};
	for (int round = 0; round < 3; round++) {
		ASSERT_TRUE(send(0, 0, 8));
		ASSERT_TRUE(send(0, 0, 8));
		ASSERT_TRUE(take(2)) << "round " << round;
	}
	DAT_SRQ_PARAM q = query();
	EXPECT_EQ(q.available_dto_count, 10);
	EXPECT_EQ(q.outstanding_dto_count, 10) << "an event overwritten unreaped";
	EXPECT_TRUE(no_event(s.async_evd));

	// four more, nobody dequeuing: two fit, two are lost
	for (int i = 0; i < 4; i++)
		ASSERT_TRUE(send(0, 0, 8));
	ASSERT_TRUE(wait_for([&] { return query().available_dto_count == 6; }));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.async_evd, &ev));
	EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_EVD_OVERFLOW);
	EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, recv);
	EXPECT_EQ(ev.event_data.asynch_error_event_data.reason,
		  DAT_EVD_OVERFLOW_ERROR);
	EXPECT_TRUE(no_event(s.async_evd)) << "overflow reported twice";
	// the two lost ones are no longer outstanding; the two kept are
	q = query();
	EXPECT_EQ(q.outstanding_dto_count, 8);
	ASSERT_TRUE(take(2));
	q = query();
	EXPECT_EQ(q.available_dto_count, 6);
	EXPECT_EQ(q.outstanding_dto_count, 6);
	// the library agrees: exactly ten more fit
	for (int i = 0; i < 10; i++)
		ASSERT_OK(post_srq(i * 64, 64, 100 + i));
	ASSERT_DAT(post_srq(0, 64, 200), DAT_INSUFFICIENT_RESOURCES);
	EXPECT_EQ(query().outstanding_dto_count, 16);

	DAT_EVD_HANDLE sw;
	DAT_EVENT se_ev{};
	se_ev.event_number = DAT_SOFTWARE_EVENT;
	ASSERT_OK(dat_evd_create(s.ia, 2, DAT_HANDLE_NULL,
				 DAT_EVD_SOFTWARE_FLAG, &sw));
	ASSERT_OK(dat_evd_post_se(sw, &se_ev));
	ASSERT_OK(dat_evd_post_se(sw, &se_ev));
	ASSERT_DAT(dat_evd_post_se(sw, &se_ev), DAT_QUEUE_FULL);
	ASSERT_OK(dat_evd_dequeue(sw, &ev));
	ASSERT_OK(dat_evd_post_se(sw, &se_ev));
	EXPECT_TRUE(no_event(s.async_evd)) << "post_se overflowed";
}

// A freed handle is not handed out again soon, and stays invalid.
TEST_F(SrqSemantics, FreedHandlesAreNotReusedSoon)
{
	std::set<DAT_HANDLE> freed;
	for (int i = 0; i < 16; i++) {
		DAT_PZ_HANDLE pz;
		DAT_SRQ_HANDLE h;
		DAT_SRQ_ATTR sa{4, 1, DAT_SRQ_LW_DEFAULT};
		ASSERT_OK(dat_pz_create(s.ia, &pz));
		ASSERT_OK(dat_srq_create(s.ia, s.pz, &sa, &h));
		EXPECT_FALSE(freed.count(pz)) << "PZ handle reused, round " << i;
		EXPECT_FALSE(freed.count(h)) << "SRQ handle reused, round " << i;
		ASSERT_OK(dat_pz_free(pz));
		ASSERT_OK(dat_srq_free(h));
		freed.insert(pz);
		freed.insert(h);
		DAT_SRQ_PARAM p;
		DAT_PZ_PARAM pp;
		ASSERT_DAT(dat_srq_query(h, DAT_SRQ_FIELD_ALL, &p),
			   DAT_INVALID_HANDLE);
		ASSERT_DAT(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pp),
			   DAT_INVALID_HANDLE);
		ASSERT_DAT(dat_srq_free(h), DAT_INVALID_HANDLE);
	}
}

// Forbid KDAT_IOC_SRQ_QUERY to the calling thread only (seccomp filters
// are per thread): the call fails with EPERM instead.
bool forbid_srq_query_here()
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
			 (uint32_t)KDAT_IOC_SRQ_QUERY, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};

	return !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) &&
	       !syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

// One EVD carries the receive and request completions of an SRQ EP and
// the completions of an EP without SRQ: the library counts exactly the
// SRQ's returns from the events (they name the SRQ) and re-posts a full
// load each round without ever asking the kernel (a query ioctl is
// forbidden to the thread that does it); the counts end exact.
TEST_F(SrqSemantics, SharedEvdReturnsAreCountedWithoutAQuery)
{
	const int depth = 8, rounds = 6;
	make_srq(depth, 1);
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE se, ce, pe, pc;
	// the SRQ EP: receives and sends on s.dto
	ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn, srq,
					 &a, &se));
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce));
	connect(se, ce, 1);
	if (HasFatalFailure())
		return;
	sep.push_back(se);
	cep.push_back(ce);
	// an EP without SRQ on the same EVD
	ASSERT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &a, &pe));
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &pc));
	DAT_LMR_TRIPLET pt = s.seg(8192, 64);
	ASSERT_OK(dat_ep_post_recv(pe, 1, &pt, cookie(0xeeee),
				   DAT_COMPLETION_DEFAULT_FLAG));
	connect(pe, pc, 2);
	if (HasFatalFailure())
		return;
	sep.push_back(pe);
	cep.push_back(pc);
	for (int i = 0; i < depth; i++)
		ASSERT_OK(post_srq(i * 64, 64, i));

	std::string failure;
	std::thread t([&] {
		if (!forbid_srq_query_here()) {
			failure = "seccomp";
			return;
		}
		DAT_SRQ_PARAM p;
		if (dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p) == DAT_SUCCESS) {
			failure = "the filter does not hold";
			return;
		}
		for (int round = 0; round < rounds; round++) {
			int srq_recv = 0, other = 0;
			for (int i = 0; i < depth; i++)
				if (!send(0, 0, 8)) {
					failure = "send";
					return;
				}
			// a send of the SRQ EP, and a message for the other EP
			DAT_LMR_TRIPLET ct = c.seg(0, 8);
			DAT_LMR_TRIPLET st = s.seg(4096, 8);
			if (dat_ep_post_recv(cep[0], 1, &ct, cookie(1),
					     DAT_COMPLETION_DEFAULT_FLAG) ||
			    dat_ep_post_send(sep[0], 1, &st, cookie(0xaaaa),
					     DAT_COMPLETION_DEFAULT_FLAG)) {
				failure = "post";
				return;
			}
			DAT_EVENT ev;
			if (!wait_event(c.dto, &ev)) {
				failure = "client recv";
				return;
			}
			if (round == 0 && !send(1, 0, 8)) {
				failure = "send to the other EP";
				return;
			}
			int want = depth + 1 + (round == 0);
			while (srq_recv + other < want) {
				if (!wait_event(s.dto, &ev)) {
					failure = "server events";
					return;
				}
				auto &d = ev.event_data.dto_completion_event_data;
				if (d.ep_handle == sep[0] &&
				    d.user_cookie.as_64 < (uint64_t)depth)
					srq_recv++;
				else
					other++;
			}
			if (srq_recv != depth) {
				failure = "srq completions";
				return;
			}
			for (int i = 0; i < depth; i++)
				if (post_srq(i * 64, 64, i) != DAT_SUCCESS) {
					failure = "re-post in round " +
						  std::to_string(round);
					return;
				}
			if (post_srq(0, 64, 99) == DAT_SUCCESS) {
				failure = "one too many fit";
				return;
			}
		}
	});
	t.join();
	ASSERT_EQ(failure, "");
	DAT_SRQ_PARAM q = query();
	EXPECT_EQ(q.available_dto_count, depth);
	EXPECT_EQ(q.outstanding_dto_count, depth);
}

} // namespace
