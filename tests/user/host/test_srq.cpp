// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The SRQ family's library side, against the protocol fake: what the
// library writes into the post ring and when it makes a system call (the
// kick protocol, the queries it needs), its own limit on outstanding
// buffers and how it learns from the kernel's counts, the events it
// translates (receive completions, refused ring entries, the low
// watermark), the fallback to the ioctl post path, the post cache, and
// what it sends the kernel for create, resize, set_lw and free.
//
// What the kernel decides (counts, watermark firing, resize refusals,
// drain order, where messages land) is tested against the real module:
// tests/user/guest/srq_test.cpp, srq_library_test.cpp (README.md here).
#include <atomic>
#include <cstdlib>
#include <new>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "alloc_fail.hpp"
#include "test_util.hpp"

namespace {

class Srq : public FakeKernelTest {
protected:
	void SetUp() override
	{
		FakeKernelTest::SetUp();
		srv.open("rxe0");
	}

	void TearDown() override
	{
		srv.close();
		FakeKernelTest::TearDown();
	}

	DAT_SRQ_HANDLE make_srq(DAT_COUNT max, DAT_COUNT iov = 1)
	{
		DAT_SRQ_ATTR a = { max, iov, DAT_SRQ_LW_DEFAULT };
		DAT_SRQ_HANDLE h = nullptr;
		EXPECT_OK(dat_srq_create(srv.ia, srv.pz, &a, &h));
		return h;
	}

	DAT_EP_HANDLE make_ep(DAT_SRQ_HANDLE srq, DAT_EVD_HANDLE recv,
			      DAT_EVD_HANDLE req)
	{
		DAT_EP_ATTR at = ep_attr();
		DAT_EP_HANDLE ep = nullptr;
		EXPECT_OK(dat_ep_create_with_srq(srv.ia, srv.pz, recv, req,
						 srv.conn, srq, &at, &ep));
		return ep;
	}

	DAT_LMR_TRIPLET seg_of(int i, std::size_t len = 256)
	{
		return srv.seg((std::size_t)i * len % srv.buf.size(), len);
	}

	DAT_RETURN post(DAT_SRQ_HANDLE srq, int i, std::size_t len = 256)
	{
		DAT_LMR_TRIPLET t = seg_of(i, len);
		DAT_DTO_COOKIE c;
		c.as_64 = 1000 + i;
		return dat_srq_post_recv(srq, 1, &t, c);
	}

	DAT_SRQ_PARAM query(DAT_SRQ_HANDLE srq)
	{
		DAT_SRQ_PARAM p = {};
		EXPECT_OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p));
		return p;
	}

	/* The kernel answers every SRQ query with these counts. */
	void kernel_counts(DAT_COUNT available, DAT_COUNT outstanding)
	{
		kernel.answer<kdat_ioc_srq_query>(
			KDAT_IOC_SRQ_QUERY, [=](kdat_ioc_srq_query &q) {
				q.available_dto_count = available;
				q.outstanding_dto_count = outstanding;
				return DAT_SUCCESS;
			});
	}

	/* "Nothing came back": every buffer the kernel took is outstanding. */
	void kernel_counts_nothing_returned(DAT_SRQ_HANDLE srq)
	{
		fake::Ref s = ref<kdat::Srq>(srq);
		kernel.answer<kdat_ioc_srq_query>(
			KDAT_IOC_SRQ_QUERY, [this, s](kdat_ioc_srq_query &q) {
				q.outstanding_dto_count =
					(DAT_COUNT)kernel.taken(s).size();
				q.available_dto_count = q.outstanding_dto_count;
				return DAT_SUCCESS;
			});
	}

	Side srv;
};

} // namespace

/* ---- the post ring -------------------------------------------------- */

TEST_F(Srq, PostsWriteOneRingEntryEachAndMakeNoSystemCall)
{
	DAT_SRQ_HANDLE srq = make_srq(64);
	fake::Ref s = ref<kdat::Srq>(srq);

	kernel.reset_counts();
	for (int i = 0; i < 64; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_EQ(64u, kernel.unconsumed(s));

	kernel.take(s);
	auto w = kernel.taken(s);
	ASSERT_EQ(64u, w.size());
	for (int i = 0; i < 64; i++) {
		DAT_LMR_TRIPLET t = seg_of(i);
		EXPECT_EQ(1000u + i, w[i].cookie);
		EXPECT_EQ(1u, w[i].nseg);
		EXPECT_EQ(0u, w[i].pad);
		EXPECT_EQ(srv.lctx, w[i].seg[0].lmr_context);
		EXPECT_EQ(0u, w[i].seg[0].pad);
		EXPECT_EQ(t.virtual_address, w[i].seg[0].addr);
		EXPECT_EQ(256u, w[i].seg[0].length);
	}
	EXPECT_OK(dat_srq_free(srq));
}

/* Receives with no segment and with several go into the ring alike. */
TEST_F(Srq, RingEntriesCarryEverySegmentInOrder)
{
	DAT_SRQ_HANDLE srq = make_srq(8, 3);
	fake::Ref s = ref<kdat::Srq>(srq);
	DAT_LMR_TRIPLET t[3] = { seg_of(1), seg_of(5), seg_of(2) };
	DAT_DTO_COOKIE c;

	kernel.reset_counts();
	c.as_64 = 7;
	ASSERT_OK(dat_srq_post_recv(srq, 3, t, c));
	c.as_64 = 8;
	ASSERT_OK(dat_srq_post_recv(srq, 0, nullptr, c));
	EXPECT_EQ(0u, kernel.total_ioctls());
	kernel.take(s);
	auto w = kernel.taken(s);
	ASSERT_EQ(2u, w.size());
	EXPECT_EQ(7u, w[0].cookie);
	ASSERT_EQ(3u, w[0].nseg);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(t[i].virtual_address, w[0].seg[i].addr);
		EXPECT_EQ(t[i].segment_length, w[0].seg[i].length);
	}
	EXPECT_EQ(8u, w[1].cookie);
	EXPECT_EQ(0u, w[1].nseg);
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * The ring describes its own entry size: a scatter list longer than an
 * entry holds goes through KDAT_IOC_SRQ_POST instead.
 */
TEST_F(Srq, LongScatterListsGoThroughTheIoctl)
{
	kernel.next_ring(8, (std::uint32_t)(kdat::ring::kWqeHeader +
					     sizeof(struct kdat_useg)));
	DAT_SRQ_HANDLE srq = make_srq(8, 4);
	fake::Ref s = ref<kdat::Srq>(srq);
	DAT_LMR_TRIPLET t[2] = { seg_of(0), seg_of(1) };
	DAT_DTO_COOKIE c;

	kernel.reset_counts();
	c.as_64 = 1;
	ASSERT_OK(dat_srq_post_recv(srq, 1, t, c));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_EQ(1u, kernel.unconsumed(s));
	c.as_64 = 2;
	ASSERT_OK(dat_srq_post_recv(srq, 2, t, c));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_SRQ_POST));
	EXPECT_EQ(1u, kernel.unconsumed(s));
	auto p = kernel.last<kdat_ioc_srq_post>(KDAT_IOC_SRQ_POST);
	EXPECT_EQ(s.id, p.srq);
	EXPECT_EQ(2u, p.nseg);
	EXPECT_EQ(2u, p.cookie);
	EXPECT_EQ(t[1].virtual_address, p.seg[1].addr);
	EXPECT_OK(dat_srq_free(srq));
}

/* ---- the kick protocol ---------------------------------------------- */

TEST_F(Srq, PostsKickOnlyWhenTheKernelAsks)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);

	kernel.reset_counts();
	for (int i = 0; i < 3; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* the kernel is starved: the next post kicks it, once */
	kernel.set_need_kick(s, true);
	ASSERT_OK(post(srq, 3));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	EXPECT_EQ(1u, kernel.total_ioctls());
	EXPECT_EQ(s.id, kernel.last<kdat_ioc_srq_op>(KDAT_IOC_SRQ_KICK).srq);
	EXPECT_EQ(0u, kernel.unconsumed(s));
	EXPECT_EQ(4u, kernel.taken(s).size());

	kernel.set_need_kick(s, false);
	kernel.reset_counts();
	ASSERT_OK(post(srq, 4));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * A kick that leaves entries in the ring is repeated once; if entries
 * still remain, the next post kicks again even though the kernel did not
 * ask (the kernel's NEED_KICK does not cover a full SRQ).
 */
TEST_F(Srq, KicksAgainWhileTheRingKeepsEntries)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);

	kernel.set_need_kick(s, true);
	kernel.drain(s, { 0 });		/* the first kick takes nothing */
	kernel.reset_counts();
	ASSERT_OK(post(srq, 0));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	EXPECT_EQ(0u, kernel.unconsumed(s));

	kernel.drain(s, { 0, 0 });	/* two kicks take nothing */
	kernel.reset_counts();
	ASSERT_OK(post(srq, 1));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	EXPECT_EQ(1u, kernel.unconsumed(s));

	kernel.set_need_kick(s, false);
	kernel.reset_counts();
	ASSERT_OK(post(srq, 2));	/* kicks without being asked */
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	EXPECT_EQ(0u, kernel.unconsumed(s));
	kernel.reset_counts();
	ASSERT_OK(post(srq, 3));	/* and stops once the ring is empty */
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_srq_free(srq));
}

/* A kick that fails with a vanished SRQ says so; a posted receive stays posted. */
TEST_F(Srq, KickFailureOnlyReportsAVanishedSrq)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);

	kernel.set_need_kick(s, true);
	kernel.status_next(KDAT_IOC_SRQ_KICK,
			   E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY));
	EXPECT_OK(post(srq, 0));
	kernel.status_next(KDAT_IOC_SRQ_KICK, BAD(DAT_INVALID_HANDLE_SRQ));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), post(srq, 1));
	EXPECT_EQ(2u, kernel.taken(s).size() + kernel.unconsumed(s));
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * A system call some thread of the library is in, held there by the test
 * until released: hold() runs inside the fake's answer (the fake's lock
 * held, so whoever is released must not need the fake meanwhile).
 */
class Gate {
public:
	/* In the answer: say so, then wait for release() (or give up). */
	void hold()
	{
		std::unique_lock<std::mutex> g(m_);
		entered_ = true;
		cv_.notify_all();
		/* a bound only so that a broken library fails instead of hanging */
		released_in_time_ = cv_.wait_for(g, std::chrono::seconds(60),
						 [this] { return released_; });
	}
	/* Wait until a thread is inside hold(). */
	void await_entered()
	{
		std::unique_lock<std::mutex> g(m_);
		cv_.wait(g, [this] { return entered_; });
	}
	void release()
	{
		std::lock_guard<std::mutex> g(m_);
		released_ = true;
		cv_.notify_all();
	}
	bool released_in_time() const { return released_in_time_; }

private:
	std::mutex m_;
	std::condition_variable cv_;
	bool entered_ = false, released_ = false, released_in_time_ = false;
};

/*
 * No lock of the post path is held across a system call: while one thread
 * is inside the kick its post asked for, another thread's post to the same
 * SRQ goes through the ring and returns (with the kick made under the
 * SRQ's post lock, the second post would wait for the first kick).
 */
TEST_F(Srq, PostsDoNotWaitForAKickInProgress)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);
	Gate gate;
	int kicks = 0;

	kernel.answer<kdat_ioc_srq_op>(KDAT_IOC_SRQ_KICK,
				       [&](kdat_ioc_srq_op &) {
					       kernel.set_need_kick(s, false);
					       if (kicks++ == 0)
						       gate.hold();
					       return DAT_SUCCESS;
				       });
	kernel.set_need_kick(s, true);
	DAT_RETURN first = DAT_INTERNAL_ERROR;
	std::thread kicker([&] { first = post(srq, 0); });
	gate.await_entered();

	/* the kick is in progress: this post needs no system call */
	DAT_RETURN second = post(srq, 1);
	gate.release();
	kicker.join();
	EXPECT_TRUE(gate.released_in_time()) << "the second post waited for the kick";
	EXPECT_OK(second);
	EXPECT_OK(first);
	EXPECT_EQ(2u, kernel.taken(s).size() + kernel.unconsumed(s));
	kernel.answer_raw(KDAT_IOC_SRQ_KICK, nullptr);
	EXPECT_OK(dat_srq_free(srq));
}

/* ---- the library's count of outstanding buffers --------------------- */

TEST_F(Srq, RefusesAtMaxRecvDtosWithoutASystemCall)
{
	DAT_SRQ_HANDLE srq = make_srq(10);
	fake::Ref s = ref<kdat::Srq>(srq);

	for (int i = 0; i < 10; i++)
		ASSERT_OK(post(srq, i));
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
		   post(srq, 10));
	/* every return is in shared memory: nothing to ask, nothing posted */
	EXPECT_EQ(0u, kernel.total_ioctls());
	kernel.take(s);
	EXPECT_EQ(10u, kernel.taken(s).size());
	EXPECT_EQ(0u, kernel.unconsumed(s));
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * Buffers the kernel counted back without an event the library saw
 * (lost to a full ring, left in a freed EVD) are read from the post
 * ring header's `unseen`, once the library's own count is full: no query.
 */
TEST_F(Srq, ReturnsOnlyTheKernelSawAreReadFromTheRingHeader)
{
	DAT_SRQ_HANDLE srq = make_srq(4);
	fake::Ref s = ref<kdat::Srq>(srq);

	for (int i = 0; i < 4; i++)
		ASSERT_OK(post(srq, i));
	__atomic_store_n(&kernel.ring(s)->unseen, 3u, __ATOMIC_RELEASE);
	kernel.reset_counts();
	for (int i = 4; i < 7; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
		   post(srq, 7));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	/* the counter is free running: one more wraps nothing */
	__atomic_store_n(&kernel.ring(s)->unseen, 4u, __ATOMIC_RELEASE);
	ASSERT_OK(post(srq, 8));
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
		   post(srq, 9));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * A receive completion names its SRQ (kdat_uevent.srq): dequeuing it makes
 * room without asking the kernel.  A completion not dequeued yet does not.
 */
TEST_F(Srq, DequeuedRecvCompletionsFreeRoomWithoutAQuery)
{
	DAT_EVD_HANDLE recv, req;
	ASSERT_OK(dat_evd_create(srv.ia, 64, nullptr, DAT_EVD_DTO_FLAG, &recv));
	ASSERT_OK(dat_evd_create(srv.ia, 64, nullptr, DAT_EVD_DTO_FLAG, &req));
	DAT_SRQ_HANDLE srq = make_srq(4);
	DAT_EP_HANDLE ep = make_ep(srq, recv, req);
	const auto srq_id = kid<kdat::Srq>(srq), ep_id = kid<kdat::Ep>(ep);

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 4; i++)
			ASSERT_OK(post(srq, i));
		kernel.take(ref<kdat::Srq>(srq));	/* the SRQ has them */
		for (int i = 0; i < 4; i++)
			ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(recv),
						  dto_event(ep_id, 1000 + i, 8,
							    DAT_DTO_SUCCESS,
							    srq_id)));
		/* in the ring, not dequeued: still outstanding */
		kernel.reset_counts();
		EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
			   post(srq, 9));
		EXPECT_EQ(0u, kernel.total_ioctls());
		for (int i = 0; i < 4; i++) {
			DAT_EVENT e = next_event(recv, DAT_DTO_COMPLETION_EVENT);
			EXPECT_EQ(ep, e.event_data.dto_completion_event_data.ep_handle);
		}
		kernel.reset_counts();
		for (int i = 0; i < 4; i++)
			ASSERT_OK(post(srq, i));
		EXPECT_EQ(0u, kernel.total_ioctls());
		kernel.take(ref<kdat::Srq>(srq));
		/* and they come back again */
		for (int i = 0; i < 4; i++)
			ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(recv),
						  dto_event(ep_id, 1000 + i, 0,
							    DAT_DTO_SUCCESS,
							    srq_id)));
		for (int i = 0; i < 4; i++)
			next_event(recv, DAT_DTO_COMPLETION_EVENT);
	}
	EXPECT_OK(dat_ep_free(ep));
	EXPECT_OK(dat_srq_free(srq));
	EXPECT_OK(dat_evd_free(recv));
	EXPECT_OK(dat_evd_free(req));
}

/*
 * recv_evd == request_evd: a receive completion names the SRQ, a send
 * completion does not; the library counts exactly the former, no query.
 */
TEST_F(Srq, CompletionsOnASharedEvdCountByTheSrqTheyName)
{
	DAT_SRQ_HANDLE srq = make_srq(4);
	DAT_EP_HANDLE ep = make_ep(srq, srv.dto, srv.dto);
	const auto ep_id = kid<kdat::Ep>(ep), srq_id = kid<kdat::Srq>(srq);

	for (int i = 0; i < 4; i++)
		ASSERT_OK(post(srq, i));
	kernel.take(ref<kdat::Srq>(srq));
	for (int i = 0; i < 3; i++) {
		kernel.inject(ref<kdat::Evd>(srv.dto),
			      dto_event(ep_id, 1000 + i, 0, DAT_DTO_SUCCESS,
					srq_id));
		kernel.inject(ref<kdat::Evd>(srv.dto), dto_event(ep_id, 77));
	}
	for (int i = 0; i < 6; i++)
		next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	kernel.reset_counts();
	for (int i = 0; i < 3; i++)
		ASSERT_OK(post(srq, 4 + i));
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
		   post(srq, 8));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	EXPECT_OK(dat_ep_free(ep));
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * The kernel marks the post ring of an SRQ in the error state
 * (KDAT_RING_SRQ_ERROR): a post then fails as the ioctl path's does,
 * DAT_INSUFFICIENT_RESOURCES, writes nothing and makes no system call;
 * argument checks still come first.
 */
TEST_F(Srq, PostToAnSrqInTheErrorStateFailsLikeTheIoctl)
{
	DAT_SRQ_HANDLE srq = make_srq(4);
	fake::Ref s = ref<kdat::Srq>(srq);

	ASSERT_OK(post(srq, 0));
	__atomic_or_fetch(&kernel.ring(s)->flags, KDAT_RING_SRQ_ERROR,
			  __ATOMIC_RELEASE);
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ), post(srq, 1));
	DAT_LMR_TRIPLET t = seg_of(2);
	DAT_DTO_COOKIE c;
	c.as_64 = 2;
	EXPECT_DAT(E(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2),
		   dat_srq_post_recv(srq, 2, &t, c));
	/*
	 * The receive still in the ring is handed to the kernel (one kick),
	 * which refuses it as an async event: nothing waits there for a
	 * drain that no completion of an SRQ in error will bring.
	 */
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	EXPECT_EQ(1u, kernel.total_ioctls());
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * A completion of a freed EP still names the EP's old handle and still
 * returns its SRQ buffer (its receives are flushed after the free).
 */
TEST_F(Srq, CompletionOfAFreedEpStillNamesItAndReturnsItsBuffer)
{
	DAT_EVD_HANDLE recv, req;
	ASSERT_OK(dat_evd_create(srv.ia, 64, nullptr, DAT_EVD_DTO_FLAG, &recv));
	ASSERT_OK(dat_evd_create(srv.ia, 64, nullptr, DAT_EVD_DTO_FLAG, &req));
	DAT_SRQ_HANDLE srq = make_srq(4);
	DAT_EP_HANDLE ep = make_ep(srq, recv, req);
	const auto srq_id = kid<kdat::Srq>(srq), ep_id = kid<kdat::Ep>(ep);

	for (int i = 0; i < 4; i++)
		ASSERT_OK(post(srq, i));
	kernel.take(ref<kdat::Srq>(srq));	/* the SRQ has them */
	ASSERT_OK(dat_ep_free(ep));
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(recv),
				  dto_event(ep_id, 1002, 0, DAT_DTO_ERR_FLUSHED,
					    srq_id)));
	DAT_EVENT e = next_event(recv, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(ep, e.event_data.dto_completion_event_data.ep_handle);
	EXPECT_EQ(DAT_DTO_ERR_FLUSHED, e.event_data.dto_completion_event_data.status);
	EXPECT_EQ(1002u, e.event_data.dto_completion_event_data.user_cookie.as_64);
	kernel.reset_counts();
	ASSERT_OK(post(srq, 4));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_srq_free(srq));
	EXPECT_OK(dat_evd_free(recv));
	EXPECT_OK(dat_evd_free(req));
}

TEST_F(Srq, ConcurrentPostersNeverExceedMaxRecvDtos)
{
	const int max = 512;
	DAT_SRQ_HANDLE srq = make_srq(max);
	fake::Ref s = ref<kdat::Srq>(srq);
	std::atomic<int> posted{ 0 }, refused{ 0 };
	std::vector<std::thread> t;

	kernel_counts_nothing_returned(srq);
	for (int k = 0; k < 4; k++) {
		t.emplace_back([&, k] {
			for (int i = 0; i < 200; i++) {
				DAT_RETURN r = post(srq, k * 200 + i, 64);
				if (r == DAT_SUCCESS)
					posted++;
				else if (r == E(DAT_INSUFFICIENT_RESOURCES,
						DAT_RESOURCE_SRQ))
					refused++;
			}
		});
	}
	for (auto &x : t)
		x.join();
	EXPECT_EQ(max, posted.load());
	EXPECT_EQ(800 - max, refused.load());
	kernel.take(s);
	auto w = kernel.taken(s);
	ASSERT_EQ((std::size_t)max, w.size());
	std::set<std::uint64_t> cookies;
	for (auto &x : w)
		cookies.insert(x.cookie);
	EXPECT_EQ((std::size_t)max, cookies.size()) << "an entry written twice";
	EXPECT_OK(dat_srq_free(srq));
}

/* ---- refused ring entries ------------------------------------------- */

/*
 * The kernel returns a ring entry it refused as an async event on the
 * SRQ: the library reports it (dat_kdat_srq_get_refused) and counts the
 * buffer as returned once the consumer dequeued the event; until then a
 * full count stays full.
 */
TEST_F(Srq, RefusedRingEntryReturnsItsBufferWhenDequeued)
{
	DAT_SRQ_HANDLE srq = make_srq(2);
	fake::Ref s = ref<kdat::Srq>(srq);
	DAT_DTO_COOKIE c;

	ASSERT_OK(post(srq, 0));
	DAT_LMR_TRIPLET t = seg_of(1);
	c.as_64 = 0xabc;
	ASSERT_OK(dat_srq_post_recv(srq, 1, &t, c));
	kernel.take(s);
	struct kdat_uevent u = async_event(s.id, DAT_SRQ_OTHER_ERROR);
	u.cookie = 0xabc;
	u.status = DAT_DTO_ERR_LOCAL_LENGTH;
	u.length = ARG(3);
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.async), u));

	/* the refusal waits in the async ring: the SRQ counts as full */
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ), post(srq, 2));
	EXPECT_EQ(0u, kernel.total_ioctls());

	DAT_EVENT e = next_event(srv.async, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	EXPECT_EQ(srq, e.event_data.asynch_error_event_data.dat_handle);
	EXPECT_EQ(DAT_SRQ_OTHER_ERROR, e.event_data.asynch_error_event_data.reason);
	EXPECT_EQ(srv.async, e.evd_handle);
	DAT_DTO_COOKIE got;
	DAT_RETURN why;
	ASSERT_OK(dat_kdat_srq_get_refused(srq, &got, &why));
	EXPECT_EQ(0xabcu, got.as_64);
	EXPECT_EQ(ARG(3), why);
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_kdat_srq_get_refused(srq, &got, &why));

	/* dequeued: the buffer is back, no query needed */
	kernel.reset_counts();
	EXPECT_OK(post(srq, 3));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * A refusal whose bookkeeping runs out of memory: the dequeue fails with
 * DAT_INSUFFICIENT_RESOURCES and leaves the event in its ring, and the
 * next dequeue delivers it.  Its buffer comes back exactly once (counted
 * twice, the SRQ would take one buffer more than max_recv_dtos without
 * the kernel), and every refusal is reported, in order.
 */
TEST_F(Srq, RefusalDequeuedAfterAnAllocationFailureCountsItsBufferOnce)
{
	constexpr int rounds = 600;	/* the refusals kept grow past a node */
	DAT_SRQ_HANDLE srq = make_srq(1);
	fake::Ref s = ref<kdat::Srq>(srq);
	int failed = 0;

	for (int i = 0; i < rounds; i++) {
		ASSERT_OK(post(srq, i)) << "round " << i;
		kernel.take(s);
		struct kdat_uevent u = async_event(s.id, DAT_SRQ_OTHER_ERROR);
		u.cookie = 1000 + i;
		u.status = DAT_DTO_ERR_LOCAL_LENGTH;
		u.length = ARG(3);
		ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.async), u));

		DAT_EVENT e;
		alloc_fail::every(true);
		DAT_RETURN r = dat_evd_dequeue(srv.async, &e);
		alloc_fail::every(false);
		if (r != DAT_SUCCESS) {
			ASSERT_EQ(DAT_INSUFFICIENT_RESOURCES, DAT_GET_TYPE(r))
				<< "round " << i;
			failed++;
			ASSERT_OK(dat_evd_dequeue(srv.async, &e));
		}
		ASSERT_EQ(DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, e.event_number);
		ASSERT_EQ(srq, e.event_data.asynch_error_event_data.dat_handle);
	}
	ASSERT_GT(failed, 0) << "no dequeue needed memory: the case tested nothing";

	/* one buffer of room, not two */
	ASSERT_OK(post(srq, rounds));
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
		   post(srq, rounds + 1));

	DAT_DTO_COOKIE got;
	DAT_RETURN why;
	for (int i = 0; i < rounds; i++) {
		ASSERT_OK(dat_kdat_srq_get_refused(srq, &got, &why));
		ASSERT_EQ((DAT_UINT64)(1000 + i), got.as_64);
		ASSERT_EQ(ARG(3), why);
	}
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_kdat_srq_get_refused(srq, &got, &why));
	EXPECT_OK(dat_srq_free(srq));
}

/* An SRQ that went into the error state is not a refused entry. */
TEST_F(Srq, SrqErrorEventReturnsNoBuffer)
{
	DAT_SRQ_HANDLE srq = make_srq(1);
	fake::Ref s = ref<kdat::Srq>(srq);

	ASSERT_OK(post(srq, 0));
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.async),
				  async_event(s.id, DAT_SRQ_TRANSFER_TO_ERROR)));
	DAT_EVENT e = next_event(srv.async, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	EXPECT_EQ(srq, e.event_data.asynch_error_event_data.dat_handle);
	DAT_DTO_COOKIE got;
	DAT_RETURN why;
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_kdat_srq_get_refused(srq, &got, &why));
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ), post(srq, 1));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_srq_free(srq));
}

/* ---- query, set_lw, resize, free ------------------------------------ */

TEST_F(Srq, QueryHandsBackTheKernelsAnswer)
{
	DAT_SRQ_HANDLE srq = make_srq(10, 2);
	fake::Ref s = ref<kdat::Srq>(srq);

	kernel.answer<kdat_ioc_srq_query>(KDAT_IOC_SRQ_QUERY,
					  [](kdat_ioc_srq_query &q) {
						  q.max_recv_dtos = 12;
						  q.max_recv_iov = 3;
						  q.low_watermark = 4;
						  q.available_dto_count = 2;
						  q.outstanding_dto_count = 3;
						  q.state = DAT_SRQ_STATE_ERROR;
						  return DAT_SUCCESS;
					  });
	kernel.reset_counts();
	DAT_SRQ_PARAM p = query(srq);
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	auto q = kernel.last<kdat_ioc_srq_query>(KDAT_IOC_SRQ_QUERY);
	EXPECT_EQ(s.id, q.srq);
	EXPECT_EQ((__u32)DAT_SRQ_FIELD_ALL, q.mask);
	EXPECT_EQ(srv.ia, p.ia_handle);
	EXPECT_EQ(srv.pz, p.pz_handle);
	EXPECT_EQ(DAT_SRQ_STATE_ERROR, p.srq_state);
	EXPECT_EQ(12, p.max_recv_dtos);
	EXPECT_EQ(3, p.max_recv_iov);
	EXPECT_EQ(4, p.low_watermark);
	EXPECT_EQ(2, p.available_dto_count);
	EXPECT_EQ(3, p.outstanding_dto_count);

	/* what the library checks itself never reaches the kernel */
	kernel.reset_counts();
	EXPECT_DAT(ARG(2), dat_srq_query(srq, (DAT_SRQ_PARAM_MASK)0x100, &p));
	EXPECT_DAT(ARG(3), dat_srq_query(srq, DAT_SRQ_FIELD_ALL, nullptr));
	EXPECT_EQ(0u, kernel.total_ioctls());
	kernel.status_next(KDAT_IOC_SRQ_QUERY, E(DAT_INTERNAL_ERROR));
	EXPECT_DAT(E(DAT_INTERNAL_ERROR), dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p));
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * The kernel drains the post ring before it answers a query; entries it
 * left there (reposted after reaping, before the kernel saw the reaping)
 * make the library ask once more, so the answer counts them.
 */
TEST_F(Srq, QueryAsksAgainWhileTheRingKeepsEntries)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);

	for (int i = 0; i < 3; i++)
		ASSERT_OK(post(srq, i));
	kernel.drain(s, { 0 });		/* the first query takes nothing */
	kernel_counts_nothing_returned(srq);
	kernel.reset_counts();
	DAT_SRQ_PARAM p = query(srq);
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	EXPECT_EQ(3, p.available_dto_count);
	EXPECT_EQ(3, p.outstanding_dto_count);

	kernel.reset_counts();
	query(srq);
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, SetLwSendsTheWatermarkAndItsEventNamesTheSrq)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);

	kernel.reset_counts();
	EXPECT_OK(dat_srq_set_lw(srq, 3));
	auto o = kernel.last<kdat_ioc_srq_op>(KDAT_IOC_SRQ_SET_LW);
	EXPECT_EQ(s.id, o.srq);
	EXPECT_EQ(3, o.value);
	/* the kernel's verdict comes back unchanged */
	kernel.status_next(KDAT_IOC_SRQ_SET_LW, ARG(2));
	EXPECT_DAT(ARG(2), dat_srq_set_lw(srq, 9));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_SET_LW));

	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.async),
				  async_event(s.id, DAT_SRQ_LOW_WATERMARK_EVENT)));
	DAT_EVENT e = next_event(srv.async, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	EXPECT_EQ(srq, e.event_data.asynch_error_event_data.dat_handle);
	EXPECT_EQ(DAT_SRQ_LOW_WATERMARK_EVENT,
		  e.event_data.asynch_error_event_data.reason);
	/* an async event on no object names the IA */
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.async),
				  async_event(0, DAT_IA_CATASTROPHIC_ERROR)));
	e = next_event(srv.async, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	EXPECT_EQ(srv.ia, e.event_data.asynch_error_event_data.dat_handle);
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * Resize: the kernel decides; the library only refuses what it can tell
 * alone (0 and below) and takes the new limit once the kernel agreed.
 */
TEST_F(Srq, ResizeTakesTheKernelsVerdictAndItsNewLimit)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);

	for (int i = 0; i < 6; i++)
		ASSERT_OK(post(srq, i));
	kernel.status_next(KDAT_IOC_SRQ_RESIZE,
			   E(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_OPERATIONAL));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_OPERATIONAL),
		   dat_srq_resize(srq, 5));
	kernel.reset_counts();
	EXPECT_DAT(ARG(2), dat_srq_resize(srq, 0));
	EXPECT_DAT(ARG(2), dat_srq_resize(srq, -3));
	EXPECT_EQ(0u, kernel.total_ioctls());
	/* the refused resize left the limit at 8 */
	ASSERT_OK(post(srq, 6));
	ASSERT_OK(post(srq, 7));
	EXPECT_EQ(0u, kernel.total_ioctls());

	ASSERT_OK(dat_srq_resize(srq, 10));
	auto o = kernel.last<kdat_ioc_srq_op>(KDAT_IOC_SRQ_RESIZE);
	EXPECT_EQ(s.id, o.srq);
	EXPECT_EQ(10, o.value);
	kernel.reset_counts();
	ASSERT_OK(post(srq, 8));
	ASSERT_OK(post(srq, 9));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	kernel_counts_nothing_returned(srq);
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ), post(srq, 10));
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * An SRQ grown past its post ring: a full ring makes the post kick the
 * kernel for room, and refuses only if the kernel took nothing.
 */
TEST_F(Srq, GrowingPastThePostRingKicksTheKernelForRoom)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);

	ASSERT_EQ(8u, kernel.ring(s)->entries);
	kernel.drain(s, {}, 0);		/* kicks take nothing */
	for (int i = 0; i < 8; i++)
		ASSERT_OK(post(srq, i));
	ASSERT_OK(dat_srq_resize(srq, 20));
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ), post(srq, 8));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	EXPECT_EQ(8u, kernel.unconsumed(s));

	kernel.drain(s, {}, fake::Kernel::kAll);
	kernel.reset_counts();
	for (int i = 8; i < 20; i++)
		ASSERT_OK(post(srq, i)) << i;
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	EXPECT_EQ(20u, kernel.taken(s).size() + kernel.unconsumed(s));
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, FreeTakesTheKernelsVerdict)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);

	kernel.status_next(KDAT_IOC_FREE,
			   E(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE),
		   dat_srq_free(srq));
	EXPECT_OK(post(srq, 0));	/* still there */
	kernel.reset_counts();
	EXPECT_OK(dat_srq_free(srq));
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ(s.id, f.handle);
	EXPECT_EQ(kdat::ktype::SRQ, f.type);
	EXPECT_FALSE(kernel.alive(s));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), post(srq, 1));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), dat_srq_free(srq));
	EXPECT_EQ(1u, kernel.total_ioctls());
}

/* ---- create, EPs, the ioctl path ------------------------------------ */

TEST_F(Srq, CreateAndEpWithSrqSendTheirArgumentsAndTakeTheVerdict)
{
	DAT_SRQ_ATTR a = { 10, 2, 3 };
	DAT_SRQ_HANDLE srq;
	const std::size_t handles = kdat::handles().size();

	kernel.status_next(KDAT_IOC_SRQ_CREATE, ARG(3));
	EXPECT_DAT(ARG(3), dat_srq_create(srv.ia, srv.pz, &a, &srq));
	EXPECT_EQ(handles, kdat::handles().size());
	ASSERT_OK(dat_srq_create(srv.ia, srv.pz, &a, &srq));
	auto c = kernel.last<kdat_ioc_srq_create>(KDAT_IOC_SRQ_CREATE);
	EXPECT_EQ(kid<kdat::Ia>(srv.ia), c.ia);
	EXPECT_EQ(kid<kdat::Pz>(srv.pz), c.pz);
	EXPECT_EQ(10, c.max_recv_dtos);
	EXPECT_EQ(2, c.max_recv_iov);
	EXPECT_EQ(3, c.low_watermark);

	DAT_EP_ATTR at = ep_attr(7);
	DAT_EP_HANDLE ep;
	kernel.reset_counts();
	EXPECT_DAT(ARG(7), dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto,
						  srv.dto, srv.conn, srq,
						  nullptr, &ep));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ),
		   dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto, srv.dto,
					  srv.conn, nullptr, &at, &ep));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ),
		   dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto, srv.dto,
					  srv.conn, srv.pz, &at, &ep));
	EXPECT_EQ(0u, kernel.total_ioctls());
	kernel.status_next(KDAT_IOC_EP_CREATE, ARG(2));
	EXPECT_DAT(ARG(2), dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto,
						  srv.dto, srv.conn, srq, &at,
						  &ep));
	EXPECT_EQ(handles + 1, kdat::handles().size());
	ASSERT_OK(dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto, srv.dto,
					 srv.conn, srq, &at, &ep));
	auto e = kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE);
	EXPECT_EQ(kid<kdat::Srq>(srq), e.srq);
	EXPECT_EQ(kid<kdat::Evd>(srv.dto), e.recv_evd);
	EXPECT_EQ(kid<kdat::Evd>(srv.dto), e.request_evd);
	EXPECT_EQ(kid<kdat::Evd>(srv.conn), e.connect_evd);
	EXPECT_EQ(1u, e.has_attr);
	EXPECT_EQ(7, e.attr.max_recv_dtos);
	EXPECT_EQ(4096u, e.attr.max_message_size);
	EXPECT_EQ(0u, e.attr.pad);

	/* the EP's handles are the library's own objects */
	DAT_EP_PARAM p;
	ASSERT_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
	EXPECT_EQ(srq, p.srq_handle);
	EXPECT_EQ(srv.pz, p.pz_handle);
	EXPECT_EQ(srv.dto, p.recv_evd_handle);
	EXPECT_EQ(srv.conn, p.connect_evd_handle);
	EXPECT_OK(dat_ep_free(ep));
	EXPECT_OK(dat_srq_free(srq));
}

/* A ring the library cannot use: the kernel's SRQ is freed again. */
TEST_F(Srq, CreateWithAnUnusableRingFreesTheKernelsSrq)
{
	DAT_SRQ_ATTR a = { 8, 1, 0 };
	DAT_SRQ_HANDLE srq;
	const std::size_t handles = kdat::handles().size();

	kernel.next_ring(8, 8);		/* entries too small for a segment */
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INTERNAL_ERROR), dat_srq_create(srv.ia, srv.pz, &a, &srq));
	EXPECT_EQ(handles, kdat::handles().size());
	ASSERT_EQ(1u, kernel.ioctls(KDAT_IOC_FREE));
	auto c = kernel.last<kdat_ioc_srq_create>(KDAT_IOC_SRQ_CREATE);
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ(c.srq, f.handle);
	EXPECT_EQ(kdat::ktype::SRQ, f.type);
}

TEST_F(Srq, IoctlPostPathOnRequest)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	fake::Ref s = ref<kdat::Srq>(srq);
	DAT_LMR_TRIPLET t = srv.seg(64, 64);
	DAT_DTO_COOKIE c;

	c.as_64 = 42;
	kernel.reset_counts();
	ASSERT_OK(dat_kdat_srq_post_recv_ioctl(srq, 1, &t, c));
	ASSERT_OK(dat_kdat_srq_post_recv_ioctl(srq, 1, &t, c));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_POST));
	auto p = kernel.last<kdat_ioc_srq_post>(KDAT_IOC_SRQ_POST);
	EXPECT_EQ(s.id, p.srq);
	EXPECT_EQ(1u, p.nseg);
	EXPECT_EQ(42u, p.cookie);
	EXPECT_EQ(srv.lctx, p.seg[0].lmr_context);
	EXPECT_EQ(0u, p.seg[0].pad);
	EXPECT_EQ(t.virtual_address, p.seg[0].addr);
	EXPECT_EQ(64u, p.seg[0].length);
	EXPECT_EQ(0u, kernel.unconsumed(s));
	EXPECT_DAT(ARG(2), dat_kdat_srq_post_recv_ioctl(srq, 2, &t, c));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_POST));
	/* the kernel's verdict comes back unchanged */
	kernel.status_next(KDAT_IOC_SRQ_POST,
			   E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ));
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
		   dat_kdat_srq_post_recv_ioctl(srq, 1, &t, c));
	EXPECT_OK(dat_srq_free(srq));

	setenv("KDAT_SRQ_POST", "ioctl", 1);
	srq = make_srq(8);
	s = ref<kdat::Srq>(srq);
	kernel.reset_counts();
	for (int i = 0; i < 3; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_EQ(3u, kernel.ioctls(KDAT_IOC_SRQ_POST));
	EXPECT_EQ(3u, kernel.total_ioctls());
	EXPECT_EQ(0u, kernel.unconsumed(s));
	EXPECT_OK(dat_srq_free(srq));
}

/* ---- the post cache ------------------------------------------------- */

/*
 * A thread's post fast path remembers the SRQ it posted to last; a freed
 * SRQ must still be DAT_INVALID_HANDLE there, also after its post channel
 * went to a new SRQ.
 */
TEST_F(Srq, PostAfterFreeIsInvalidHandleOnTheCachedPath)
{
	DAT_SRQ_HANDLE old = make_srq(8);

	ASSERT_OK(post(old, 0));
	ASSERT_OK(post(old, 1));	/* the cached path */
	EXPECT_OK(dat_srq_free(old));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), post(old, 2));

	DAT_SRQ_HANDLE neu = make_srq(8);	/* takes the recycled channel */
	fake::Ref s = ref<kdat::Srq>(neu);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), post(old, 3));
	ASSERT_OK(post(neu, 4));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), post(old, 5));
	ASSERT_OK(post(neu, 6));
	kernel.take(s);
	auto w = kernel.taken(s);
	ASSERT_EQ(2u, w.size());
	EXPECT_EQ(1004u, w[0].cookie);
	EXPECT_EQ(1006u, w[1].cookie);
	EXPECT_OK(dat_srq_free(neu));
}

/*
 * Posting while another thread frees the SRQ (a consumer bug, but no
 * reason to crash): every post either succeeds or says
 * DAT_INVALID_HANDLE, and once the free has returned they all say so.
 * The free comes after a different number of posts each round.
 */
TEST_F(Srq, PostRacingFreeIsSuccessOrInvalidHandle)
{
	for (int round = 0; round < 20; round++) {
		DAT_SRQ_HANDLE srq = make_srq(4096);
		std::atomic<bool> freed{ false };
		std::atomic<int> done{ 0 };
		int bad = 0, after_free_ok = 0;

		std::thread poster([&] {
			for (int i = 0; i < 4000; i++) {
				bool was_freed = freed.load();
				DAT_RETURN r = post(srq, i);

				done++;
				if (r == DAT_SUCCESS) {
					after_free_ok += was_freed;
					continue;
				}
				if (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE)
					bad++;
			}
		});
		while (done.load() < round * 150)
			std::this_thread::yield();
		EXPECT_OK(dat_srq_free(srq));
		freed = true;
		poster.join();
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, after_free_ok);
	}
}
