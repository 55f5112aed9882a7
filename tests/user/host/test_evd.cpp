// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Event dispatchers through the library on the fake kernel: dequeue
// without a system call, dat_evd_wait's threshold and timeout, one waiter
// at a time, dat_evd_set_unwaitable waking a blocked waiter, software
// events, overflow reports, query/resize/free.
#include <chrono>
#include <thread>

#include "test_util.hpp"

namespace {

class Evd : public FakeKernelTest {
protected:
	void SetUp() override
	{
		FakeKernelTest::SetUp();
		s.open("rxe0");
		ASSERT_OK(dat_evd_create(s.ia, 8, nullptr,
					 (DAT_EVD_FLAGS)(DAT_EVD_SOFTWARE_FLAG |
							 DAT_EVD_DTO_FLAG),
					 &se));
	}

	void TearDown() override
	{
		EXPECT_OK(dat_evd_free(se));
		s.close();
		FakeKernelTest::TearDown();
	}

	void post(void *p)
	{
		DAT_EVENT e = {};
		e.event_number = DAT_SOFTWARE_EVENT;
		e.event_data.software_event_data.pointer = p;
		ASSERT_OK(dat_evd_post_se(se, &e));
	}

	Side s;
	DAT_EVD_HANDLE se = nullptr;
};

} // namespace

TEST_F(Evd, DequeueTakesEventsWithoutASystemCall)
{
	DAT_EVENT e;
	int a, b;

	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	post(&a);
	post(&b);
	kernel.reset_counts();
	ASSERT_OK(dat_evd_dequeue(se, &e));
	EXPECT_EQ(DAT_SOFTWARE_EVENT, e.event_number);
	EXPECT_EQ(se, e.evd_handle);
	EXPECT_EQ(&a, e.event_data.software_event_data.pointer);
	ASSERT_OK(dat_evd_dequeue(se, &e));
	EXPECT_EQ(&b, e.event_data.software_event_data.pointer);
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	EXPECT_EQ(0u, kernel.total_ioctls());
}

TEST_F(Evd, WaitReturnsAtOnceWhenTheThresholdIsMet)
{
	DAT_EVENT e;
	DAT_COUNT more = -1;

	post(nullptr);
	post(nullptr);
	post(nullptr);
	kernel.reset_counts();
	ASSERT_OK(dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 3, &e, &more));
	EXPECT_EQ(2, more);
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
	ASSERT_OK(dat_evd_wait(se, 0, 1, &e, &more));
	EXPECT_EQ(1, more);
}

TEST_F(Evd, WaitTimesOutWithTheCount)
{
	DAT_EVENT e;
	DAT_COUNT more = -1;

	post(nullptr);
	auto t0 = std::chrono::steady_clock::now();
	EXPECT_DAT(E(DAT_TIMEOUT_EXPIRED), dat_evd_wait(se, 30000, 2, &e, &more));
	auto dt = std::chrono::steady_clock::now() - t0;
	EXPECT_EQ(1, more);
	EXPECT_GE(dt, std::chrono::milliseconds(25));
	EXPECT_LT(dt, std::chrono::seconds(2));
	EXPECT_GE(kernel.ioctls(KDAT_IOC_EVD_WAIT), 1u);
	/* a zero timeout only looks */
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_TIMEOUT_EXPIRED), dat_evd_wait(se, 0, 2, &e, &more));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
	ASSERT_OK(dat_evd_dequeue(se, &e));
}

TEST_F(Evd, WaitBlocksInTheKernelUntilAnotherThreadPosts)
{
	DAT_EVENT e;
	DAT_COUNT more;
	int x;

	std::thread t([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		post(&x);
		post(&x);
	});
	ASSERT_OK(dat_evd_wait(se, 5000000, 2, &e, &more));
	EXPECT_EQ(&x, e.event_data.software_event_data.pointer);
	EXPECT_EQ(1, more);
	t.join();
	ASSERT_OK(dat_evd_dequeue(se, &e));
	EXPECT_GE(kernel.ioctls(KDAT_IOC_EVD_WAIT), 1u);
}

/*
 * A waiter sleeps in the kernel for as long as the ring is short of its
 * threshold: one KDAT_IOC_EVD_WAIT however long it waits (no polling in
 * slices), and the event that arrives ends it.
 */
TEST_F(Evd, WaitBlocksInOneKernelCallUntilTheEventArrives)
{
	DAT_EVENT e;
	DAT_COUNT more = -1;
	int x;

	kernel.reset_counts();
	std::thread t([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(350));
		post(&x);
	});
	ASSERT_OK(dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 1, &e, &more));
	t.join();
	EXPECT_EQ(&x, e.event_data.software_event_data.pointer);
	EXPECT_EQ(0, more);
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
}

/* set_unwaitable reaches the kernel, so a waiter there returns at once. */
TEST_F(Evd, UnwaitableEndsTheKernelWaitItself)
{
	DAT_EVENT e;
	DAT_COUNT more;
	DAT_RETURN r = DAT_SUCCESS;

	kernel.reset_counts();
	std::thread w([&] {
		r = dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 1, &e, &more);
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(350));
	ASSERT_OK(dat_evd_set_unwaitable(se));
	w.join();
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE), r);
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_CTL));
	ASSERT_OK(dat_evd_clear_unwaitable(se));
}

TEST_F(Evd, OneWaiterAtATimeAndUnwaitableWakesIt)
{
	DAT_EVENT e;
	DAT_COUNT more;
	DAT_RETURN first = DAT_SUCCESS;

	std::thread w([&] {
		first = dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 1, &e, &more);
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	DAT_EVENT e2;
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER),
		   dat_evd_wait(se, 0, 1, &e2, &more));
	auto t0 = std::chrono::steady_clock::now();
	ASSERT_OK(dat_evd_set_unwaitable(se));
	w.join();
	EXPECT_LT(std::chrono::steady_clock::now() - t0,
		  std::chrono::milliseconds(500));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE), first);
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE),
		   dat_evd_wait(se, 0, 1, &e2, &more));
	/* dequeue still works on an unwaitable EVD */
	post(nullptr);
	EXPECT_OK(dat_evd_dequeue(se, &e2));
	ASSERT_OK(dat_evd_clear_unwaitable(se));
	post(nullptr);
	EXPECT_OK(dat_evd_wait(se, 0, 1, &e2, &more));
}

TEST_F(Evd, PostSeOnAFullRingIsQueueFull)
{
	DAT_EVENT e;

	for (int i = 0; i < 8; i++)
		post(nullptr);
	/* the ring (8) is full: the fake kernel refuses like the real one */
	DAT_EVENT ev = {};
	ev.event_number = DAT_SOFTWARE_EVENT;
	EXPECT_DAT(E(DAT_QUEUE_FULL), dat_evd_post_se(se, &ev));
	ASSERT_OK(dat_evd_dequeue(se, &e));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(s.async, &e));
	while (dat_evd_dequeue(se, &e) == DAT_SUCCESS)
		;
}

TEST_F(Evd, DroppedEventsBecomeOneOverflowEvent)
{
	DAT_SRQ_ATTR sa = { 64, 1, 0 };
	DAT_SRQ_HANDLE srq;
	DAT_EVD_HANDLE small;
	DAT_EP_HANDLE sep, cep;
	Side c;
	c.open("rxe1");
	ASSERT_OK(dat_evd_create(s.ia, 2, nullptr, DAT_EVD_DTO_FLAG, &small));
	ASSERT_OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	connect_pair(s, c, srq, sep, cep, 4100, small, s.dto);
	for (int i = 0; i < 8; i++) {
		DAT_LMR_TRIPLET t = s.seg(i * 64, 64);
		DAT_DTO_COOKIE ck = {};
		ASSERT_OK(dat_srq_post_recv(srq, 1, &t, ck));
	}
	for (int i = 0; i < 5; i++)
		send_text(c, cep, "z");
	DAT_EVENT e;
	ASSERT_OK(dat_evd_dequeue(small, &e));
	EXPECT_EQ(DAT_DTO_COMPLETION_EVENT, e.event_number);
	e = next_event(s.async, DAT_ASYNC_ERROR_EVD_OVERFLOW);
	EXPECT_EQ(small, e.event_data.asynch_error_event_data.dat_handle);
	EXPECT_EQ(DAT_EVD_OVERFLOW_ERROR,
		  e.event_data.asynch_error_event_data.reason);
	EXPECT_EQ(s.async, e.evd_handle);
	ASSERT_OK(dat_evd_dequeue(small, &e));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(small, &e));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(s.async, &e));
	/* the lost completions still came back to the SRQ */
	DAT_SRQ_PARAM p;
	ASSERT_OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p));
	EXPECT_EQ(3, p.outstanding_dto_count);
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_srq_free(srq));
	EXPECT_OK(dat_evd_free(small));
	c.close();
}

TEST_F(Evd, QueryResizeFree)
{
	DAT_EVD_PARAM p;

	ASSERT_OK(dat_evd_query(se, DAT_EVD_FIELD_ALL, &p));
	EXPECT_EQ(s.ia, p.ia_handle);
	EXPECT_EQ(8, p.evd_qlen);
	EXPECT_EQ(nullptr, p.cno_handle);
	EXPECT_EQ(DAT_EVD_SOFTWARE_FLAG | DAT_EVD_DTO_FLAG, (int)p.evd_flags);
	EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_ENABLED);
	EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_WAITABLE);
	EXPECT_DAT(ARG(2), dat_evd_query(se, (DAT_EVD_PARAM_MASK)0x100, &p));
	EXPECT_DAT(ARG(3), dat_evd_query(se, DAT_EVD_FIELD_ALL, nullptr));

	ASSERT_OK(dat_evd_disable(se));
	ASSERT_OK(dat_evd_query(se, DAT_EVD_FIELD_ALL, &p));
	EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_DISABLED);
	ASSERT_OK(dat_evd_enable(se));

	EXPECT_OK(dat_evd_resize(se, 4));
	ASSERT_OK(dat_evd_query(se, DAT_EVD_FIELD_ALL, &p));
	EXPECT_EQ(4, p.evd_qlen);
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD),
		   dat_evd_resize(se, 9));
	post(nullptr);
	post(nullptr);
	EXPECT_DAT(E(DAT_INVALID_STATE), dat_evd_resize(se, 1));
	EXPECT_OK(dat_evd_resize(se, 8));
	DAT_EVENT e;
	while (dat_evd_dequeue(se, &e) == DAT_SUCCESS)
		;

	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_ASYNC),
		   dat_evd_free(s.async));
	EXPECT_OK(dat_evd_modify_cno(se, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO), dat_evd_modify_cno(se, &e));
	DAT_CNO_HANDLE cno;
	EXPECT_DAT(E(DAT_NOT_IMPLEMENTED),
		   dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));

	/* an EVD an EP uses cannot go */
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE ep;
	ASSERT_OK(dat_ep_create(s.ia, s.pz, se, se, nullptr, &at, &ep));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE),
		   dat_evd_free(se));
	EXPECT_OK(dat_ep_free(ep));
}
