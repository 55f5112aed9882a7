// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The SRQ family through the library on the fake kernel: posting through
// the ring without a system call, the kick protocol, the library's own
// limit on outstanding buffers, refused ring entries coming back, the
// seed's dat_srq_query worked example, the low watermark event, resize,
// free, the ioctl post path, and concurrent posters.
#include <thread>

#include "test_util.hpp"

namespace {

class Srq : public FakeKernelTest {
protected:
	void SetUp() override
	{
		FakeKernelTest::SetUp();
		srv.open("rxe0");
		cli.open("rxe1");
	}

	void TearDown() override
	{
		srv.close();
		cli.close();
		FakeKernelTest::TearDown();
	}

	DAT_SRQ_HANDLE make_srq(DAT_COUNT max, DAT_COUNT iov = 1)
	{
		DAT_SRQ_ATTR a = { max, iov, DAT_SRQ_LW_DEFAULT };
		DAT_SRQ_HANDLE h = nullptr;
		EXPECT_OK(dat_srq_create(srv.ia, srv.pz, &a, &h));
		return h;
	}

	DAT_RETURN post(DAT_SRQ_HANDLE srq, int i, std::size_t len = 256)
	{
		DAT_LMR_TRIPLET t = srv.seg((std::size_t)i * len % srv.buf.size(),
					    len);
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

	Side srv, cli;
};

} // namespace

TEST_F(Srq, SteadyStatePostsMakeNoSystemCall)
{
	DAT_SRQ_HANDLE srq = make_srq(64);

	/* no EP can take a buffer yet: filling the SRQ makes no syscall */
	kernel.reset_counts();
	for (int i = 0; i < 64; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_EQ(0u, kernel.total_ioctls());

	DAT_SRQ_PARAM p = query(srq);
	EXPECT_EQ(64, p.max_recv_dtos);
	EXPECT_EQ(64, p.available_dto_count);
	EXPECT_EQ(64, p.outstanding_dto_count);
	EXPECT_EQ(srv.ia, p.ia_handle);
	EXPECT_EQ(srv.pz, p.pz_handle);
	EXPECT_EQ(DAT_SRQ_STATE_OPERATIONAL, p.srq_state);
	EXPECT_EQ(1, p.max_recv_iov);
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, RefusesBeyondMaxRecvDtosAndRingSize)
{
	DAT_SRQ_HANDLE srq = make_srq(10);

	for (int i = 0; i < 10; i++)
		ASSERT_OK(post(srq, i));
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
		   post(srq, 10));
	/* one query to learn that nothing came back, nothing posted */
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_POST));
	EXPECT_EQ(10, query(srq).outstanding_dto_count);
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, QueryWorkedExampleOfTheSeed)
{
	/* "Consumer created SRQ with 10 entries and associated 1 EP with it.
	 * 3 Recv buffers have been posted to it." */
	DAT_SRQ_HANDLE srq = make_srq(10);
	DAT_EP_HANDLE sep, cep;
	connect_pair(srv, cli, srq, sep, cep);
	for (int i = 0; i < 3; i++)
		ASSERT_OK(post(srq, i));
	DAT_SRQ_PARAM p = query(srq);
	EXPECT_EQ(10, p.max_recv_dtos);
	EXPECT_EQ(3, p.available_dto_count);
	EXPECT_EQ(3, p.outstanding_dto_count);

	/* "After a Send message arrival" */
	send_text(cli, cep, "hello", 0, 77);
	next_event(cli.dto, DAT_DTO_COMPLETION_EVENT);
	p = query(srq);
	EXPECT_EQ(10, p.max_recv_dtos);
	EXPECT_EQ(2, p.available_dto_count);
	EXPECT_EQ(3, p.outstanding_dto_count);

	/* "After Consumer dequeues Recv completion": it names the EP */
	DAT_EVENT e;
	ASSERT_OK(dat_evd_dequeue(srv.dto, &e));
	ASSERT_EQ(DAT_DTO_COMPLETION_EVENT, e.event_number);
	auto &d = e.event_data.dto_completion_event_data;
	EXPECT_EQ(sep, d.ep_handle);
	EXPECT_EQ(srv.dto, e.evd_handle);
	EXPECT_EQ(DAT_DTO_SUCCESS, d.status);
	EXPECT_EQ(6u, d.transfered_length);
	EXPECT_GE(d.user_cookie.as_64, 1000u);
	EXPECT_LT(d.user_cookie.as_64, 1003u);
	EXPECT_STREQ("hello",
		     srv.buf.data() + (d.user_cookie.as_64 - 1000) * 256);
	p = query(srq);
	EXPECT_EQ(10, p.max_recv_dtos);
	EXPECT_EQ(2, p.available_dto_count);
	EXPECT_EQ(2, p.outstanding_dto_count);

	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE),
		   dat_srq_free(srq));
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_srq_free(srq));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), dat_srq_free(srq));
}

TEST_F(Srq, ReapedCompletionsFreeRoomWithoutAQuery)
{
	/* separate recv and request EVDs: every recv completion is an SRQ
	 * buffer for sure, so the library counts it itself */
	DAT_EVD_HANDLE recv, req;
	ASSERT_OK(dat_evd_create(srv.ia, 64, nullptr, DAT_EVD_DTO_FLAG, &recv));
	ASSERT_OK(dat_evd_create(srv.ia, 64, nullptr, DAT_EVD_DTO_FLAG, &req));
	DAT_SRQ_HANDLE srq = make_srq(4);
	DAT_EP_HANDLE sep, cep;
	connect_pair(srv, cli, srq, sep, cep, 4001, recv, req);

	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 4; i++)
			ASSERT_OK(post(srq, i));
		for (int i = 0; i < 4; i++) {
			send_text(cli, cep, "m", 0);
			next_event(cli.dto, DAT_DTO_COMPLETION_EVENT);
			next_event(recv, DAT_DTO_COMPLETION_EVENT);
		}
		kernel.reset_counts();
		ASSERT_OK(post(srq, 0));	/* room again, no query needed */
		EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
		/* give it back: one more message */
		send_text(cli, cep, "m", 0);
		next_event(cli.dto, DAT_DTO_COMPLETION_EVENT);
		next_event(recv, DAT_DTO_COMPLETION_EVENT);
	}
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_srq_free(srq));
	EXPECT_OK(dat_evd_free(recv));
	EXPECT_OK(dat_evd_free(req));
}

TEST_F(Srq, SharedRecvAndRequestEvdStillCountsRight)
{
	/* recv_evd == request_evd: the library cannot tell a receive from a
	 * send completion and learns the count from the kernel when full */
	DAT_SRQ_HANDLE srq = make_srq(4);
	DAT_EP_HANDLE sep, cep;
	connect_pair(srv, cli, srq, sep, cep);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 4; i++)
			ASSERT_OK(post(srq, i)) << round << " " << i;
		for (int i = 0; i < 4; i++) {
			send_text(cli, cep, "x", 0);
			next_event(cli.dto, DAT_DTO_COMPLETION_EVENT);
			next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
			/* a send of the server EP on the same EVD */
			send_text(srv, sep, "y", 4096);
			next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
		}
	}
	EXPECT_EQ(0, query(srq).outstanding_dto_count);
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, RefusedRingEntryComesBackAsAnAsyncEvent)
{
	kernel.set_auto_drain(false);
	DAT_SRQ_HANDLE srq = make_srq(2);
	DAT_REGION_DESCRIPTION r;
	std::vector<char> mem(4096);
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT ctx;
	r.for_va = mem.data();
	ASSERT_OK(dat_lmr_create(srv.ia, DAT_MEM_TYPE_VIRTUAL, r, mem.size(),
				 srv.pz, DAT_MEM_PRIV_ALL_FLAG, &lmr, &ctx,
				 nullptr, nullptr, nullptr));
	DAT_LMR_TRIPLET t = { ctx, 0, (DAT_VADDR)(uintptr_t)mem.data(), 64 };
	DAT_DTO_COOKIE c;
	c.as_64 = 0xabc;
	ASSERT_OK(post(srq, 0));
	ASSERT_OK(dat_srq_post_recv(srq, 1, &t, c));	/* checked: fine */
	/* the LMR goes before the kernel drains the ring */
	ASSERT_OK(dat_lmr_free(lmr));
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ), post(srq, 1));

	/* a query drains: the kernel refuses the entry */
	DAT_SRQ_PARAM p = query(srq);
	EXPECT_EQ(1, p.outstanding_dto_count);
	DAT_EVENT e = next_event(srv.async,
				 DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	EXPECT_EQ(srq, e.event_data.asynch_error_event_data.dat_handle);
	EXPECT_EQ(DAT_SRQ_OTHER_ERROR, e.event_data.asynch_error_event_data.reason);
	EXPECT_EQ(srv.async, e.evd_handle);

	DAT_DTO_COOKIE got;
	DAT_RETURN why;
	ASSERT_OK(dat_kdat_srq_get_refused(srq, &got, &why));
	EXPECT_EQ(0xabcu, got.as_64);
	EXPECT_EQ(ARG(3), why);
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_kdat_srq_get_refused(srq, &got, &why));

	/* the buffer counts as returned: the slot is free again */
	kernel.reset_counts();
	EXPECT_OK(post(srq, 1));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_QUERY));
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, LowWatermarkFiresOncePerArming)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	DAT_EP_HANDLE sep, cep;
	DAT_EVENT e;
	connect_pair(srv, cli, srq, sep, cep);
	for (int i = 0; i < 4; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_OK(dat_srq_set_lw(srq, 3));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(srv.async, &e));
	EXPECT_DAT(ARG(2), dat_srq_set_lw(srq, 9));	/* > max_recv_dtos */

	send_text(cli, cep, "a");
	send_text(cli, cep, "b");
	e = next_event(srv.async, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	EXPECT_EQ(srq, e.event_data.asynch_error_event_data.dat_handle);
	EXPECT_EQ(DAT_SRQ_LOW_WATERMARK_EVENT,
		  e.event_data.asynch_error_event_data.reason);
	/* the second message found it disarmed */
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(srv.async, &e));
	EXPECT_EQ(3, query(srq).low_watermark);
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, ResizePassesTheKernelsVerdictThrough)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	for (int i = 0; i < 6; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_OPERATIONAL),
		   dat_srq_resize(srq, 5));
	EXPECT_DAT(ARG(2), dat_srq_resize(srq, 0));
	EXPECT_OK(dat_srq_resize(srq, 6));
	EXPECT_EQ(6, query(srq).max_recv_dtos);
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ), post(srq, 6));
	/* growing past the ring (8 entries) still works: the kernel drains */
	EXPECT_OK(dat_srq_resize(srq, 20));
	for (int i = 6; i < 20; i++)
		ASSERT_OK(post(srq, i)) << i;
	EXPECT_EQ(20, query(srq).outstanding_dto_count);
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, IoctlPostPathOnRequest)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	DAT_LMR_TRIPLET t = srv.seg(0, 64);
	DAT_DTO_COOKIE c = {};

	kernel.reset_counts();
	ASSERT_OK(dat_kdat_srq_post_recv_ioctl(srq, 1, &t, c));
	ASSERT_OK(dat_kdat_srq_post_recv_ioctl(srq, 1, &t, c));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_POST));
	EXPECT_DAT(ARG(2), dat_kdat_srq_post_recv_ioctl(srq, 2, &t, c));
	EXPECT_EQ(2, query(srq).outstanding_dto_count);
	EXPECT_OK(dat_srq_free(srq));

	setenv("KDAT_SRQ_POST", "ioctl", 1);
	srq = make_srq(8);
	kernel.reset_counts();
	for (int i = 0; i < 3; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_EQ(3u, kernel.ioctls(KDAT_IOC_SRQ_POST));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	EXPECT_EQ(3, query(srq).outstanding_dto_count);
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, ConcurrentPostersNeverExceedMaxRecvDtos)
{
	const int max = 512;
	DAT_SRQ_HANDLE srq = make_srq(max);
	std::atomic<int> posted{ 0 }, refused{ 0 };
	std::vector<std::thread> t;

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
	DAT_SRQ_PARAM p = query(srq);
	EXPECT_EQ(max, p.outstanding_dto_count);
	EXPECT_EQ(max, p.available_dto_count);
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, KernelCheckedCreateAndEpArguments)
{
	DAT_SRQ_ATTR bad = { 0, 1, 0 };
	DAT_SRQ_HANDLE srq;

	EXPECT_DAT(ARG(3), dat_srq_create(srv.ia, srv.pz, &bad, &srq));
	bad = { 8, 1, 9 };	/* watermark above max_recv_dtos */
	EXPECT_DAT(ARG(3), dat_srq_create(srv.ia, srv.pz, &bad, &srq));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_PZ),
		   dat_srq_create(srv.ia, nullptr, &bad, &srq));
	srq = make_srq(8);
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE ep;
	DAT_PZ_HANDLE pz2;
	ASSERT_OK(dat_pz_create(srv.ia, &pz2));
	/* srq_ep_pz_difference_supported is false for user IAs */
	EXPECT_DAT(ARG(2), dat_ep_create_with_srq(srv.ia, pz2, srv.dto, srv.dto,
						  srv.conn, srq, &at, &ep));
	EXPECT_DAT(ARG(7), dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto,
						  srv.dto, srv.conn, srq,
						  nullptr, &ep));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ),
		   dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto, srv.dto,
					  srv.conn, nullptr, &at, &ep));
	ASSERT_OK(dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto, srv.dto,
					 srv.conn, srq, &at, &ep));
	DAT_EP_PARAM ep_p;
	ASSERT_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &ep_p));
	EXPECT_EQ(srq, ep_p.srq_handle);
	EXPECT_EQ(srv.pz, ep_p.pz_handle);
	EXPECT_EQ(DAT_EP_STATE_UNCONNECTED, ep_p.ep_state);
	DAT_LMR_TRIPLET t = srv.seg(0, 8);
	DAT_DTO_COOKIE c = {};
	/* receives of an SRQ EP go to its SRQ */
	EXPECT_DAT(E(DAT_INVALID_STATE),
		   dat_ep_post_recv(ep, 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_OK(dat_ep_free(ep));
	EXPECT_OK(dat_pz_free(pz2));
	EXPECT_OK(dat_srq_free(srq));
}

/*
 * Receives posted before any EP exists wait in the ring without a kick;
 * the EP's creation moves them into the SRQ, so the first messages find
 * them.  Once an EP could take a buffer, a post into the starved SRQ
 * kicks.
 */
TEST_F(Srq, KicksOnlyOnceAnEpCouldTakeABuffer)
{
	DAT_SRQ_HANDLE srq = make_srq(8);

	kernel.reset_counts();
	for (int i = 0; i < 3; i++)
		ASSERT_OK(post(srq, i));
	EXPECT_EQ(0u, kernel.total_ioctls());
	DAT_EP_HANDLE sep, cep;
	connect_pair(srv, cli, srq, sep, cep, 4003);
	for (const char *t : { "a", "b", "c" })
		send_text(cli, cep, t);
	for (int i = 0; i < 3; i++)
		next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	/* starved now, with an EP: the next post kicks, once */
	kernel.reset_counts();
	ASSERT_OK(post(srq, 3));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	send_text(cli, cep, "d");
	next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_srq_free(srq));
}

TEST_F(Srq, RepostAfterTheSrqRanDryReachesTheKernel)
{
	/*
	 * Both buffers taken, both completions queued: the kernel asks for a
	 * kick.  The consumer reaps one and reposts it; the kick's drain
	 * still counts the reaped buffer as outstanding (the kernel drains
	 * before it collects the consumer's head), so the library kicks
	 * again and the buffer reaches the SRQ: the next message lands.
	 */
	DAT_EVD_HANDLE recv, req;
	ASSERT_OK(dat_evd_create(srv.ia, 16, nullptr, DAT_EVD_DTO_FLAG, &recv));
	ASSERT_OK(dat_evd_create(srv.ia, 16, nullptr, DAT_EVD_DTO_FLAG, &req));
	DAT_SRQ_HANDLE srq = make_srq(2);
	DAT_EP_HANDLE sep, cep;
	connect_pair(srv, cli, srq, sep, cep, 4002, recv, req);
	ASSERT_OK(post(srq, 0));
	ASSERT_OK(post(srq, 1));
	send_text(cli, cep, "one");
	send_text(cli, cep, "two");
	DAT_EVENT e = next_event(recv, DAT_DTO_COMPLETION_EVENT);
	kernel.reset_counts();
	ASSERT_OK(post(srq, (int)e.event_data.dto_completion_event_data
				    .user_cookie.as_64 - 1000));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_SRQ_KICK));
	send_text(cli, cep, "three");
	next_event(recv, DAT_DTO_COMPLETION_EVENT);	/* "two" */
	e = next_event(recv, DAT_DTO_COMPLETION_EVENT);	/* "three" */
	EXPECT_STREQ("three",
		     srv.buf.data() +
			     (e.event_data.dto_completion_event_data.user_cookie.as_64 -
			      1000) * 256);
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_srq_free(srq));
	EXPECT_OK(dat_evd_free(recv));
	EXPECT_OK(dat_evd_free(req));
}

TEST_F(Srq, QueryCountsReceivesRepostedAfterReaping)
{
	/*
	 * Three messages taken, their completions reaped, the buffers
	 * reposted (into the ring: the SRQ still had one).  The kernel's
	 * query drains before it sees the reaping, so the library asks again
	 * and the counts include the reposted buffers.
	 */
	DAT_EVD_HANDLE recv, req;
	ASSERT_OK(dat_evd_create(srv.ia, 16, nullptr, DAT_EVD_DTO_FLAG, &recv));
	ASSERT_OK(dat_evd_create(srv.ia, 16, nullptr, DAT_EVD_DTO_FLAG, &req));
	DAT_SRQ_HANDLE srq = make_srq(4);
	DAT_EP_HANDLE sep, cep;
	connect_pair(srv, cli, srq, sep, cep, 4003, recv, req);
	for (int i = 0; i < 4; i++)
		ASSERT_OK(post(srq, i));
	for (int i = 0; i < 3; i++) {
		send_text(cli, cep, "m");
		next_event(cli.dto, DAT_DTO_COMPLETION_EVENT);
	}
	for (int i = 0; i < 3; i++) {
		DAT_EVENT e = next_event(recv, DAT_DTO_COMPLETION_EVENT);
		ASSERT_OK(post(srq, (int)e.event_data.dto_completion_event_data
					    .user_cookie.as_64 - 1000));
	}
	DAT_SRQ_PARAM p = query(srq);
	EXPECT_EQ(4, p.available_dto_count);
	EXPECT_EQ(4, p.outstanding_dto_count);
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_srq_free(srq));
	EXPECT_OK(dat_evd_free(recv));
	EXPECT_OK(dat_evd_free(req));
}

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
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), post(old, 3));
	ASSERT_OK(post(neu, 4));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ), post(old, 5));
	ASSERT_OK(post(neu, 6));
	EXPECT_EQ(2, query(neu).outstanding_dto_count);
	EXPECT_OK(dat_srq_free(neu));
}

/*
 * Posting while another thread frees the SRQ (a consumer bug, but no
 * reason to crash): every post either succeeds or says
 * DAT_INVALID_HANDLE, and once the free has returned they all say so.
 */
TEST_F(Srq, PostRacingFreeIsSuccessOrInvalidHandle)
{
	for (int round = 0; round < 20; round++) {
		DAT_SRQ_HANDLE srq = make_srq(4096);
		std::atomic<bool> freed{false}, go{false};
		int bad = 0, after_free_ok = 0;

		std::thread poster([&] {
			while (!go.load())
				;
			for (int i = 0; i < 4000; i++) {
				bool was_freed = freed.load();
				DAT_RETURN r = post(srq, i);

				if (r == DAT_SUCCESS) {
					after_free_ok += was_freed;
					continue;
				}
				if (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE)
					bad++;
			}
		});
		go = true;
		std::this_thread::sleep_for(std::chrono::microseconds(50 * round));
		EXPECT_OK(dat_srq_free(srq));
		freed = true;
		poster.join();
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, after_free_ok);
	}
}
