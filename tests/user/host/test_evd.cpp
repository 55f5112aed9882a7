// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Event dispatchers' library side, against the protocol fake: dequeue
// without a system call, dat_evd_wait's look at the ring before it blocks
// in the kernel (threshold, timeout, wake sequence), one waiter at a time,
// dat_evd_set_unwaitable waking a blocked waiter, what dat_evd_post_se
// sends, overflow reports from the ring's `dropped` count, and the
// library-side query/resize/free.  Events come from the test
// (fake::Kernel::inject), as the kernel would write them.
//
// The kernel's own rules (QUEUE_FULL of a full ring, EVD_IN_USE, a wait
// sleeping in the kernel) are tested in the guest: objects_test.cpp and
// process_test.cpp (README.md here).
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
		sref = ref<kdat::Evd>(se);
	}

	void TearDown() override
	{
		EXPECT_OK(dat_evd_free(se));
		s.close();
		FakeKernelTest::TearDown();
	}

	/* The kernel writes a software event into se's ring. */
	void event(void *p)
	{
		ASSERT_TRUE(kernel.inject(sref, software_event(p)));
	}

	Side s;
	DAT_EVD_HANDLE se = nullptr;
	fake::Ref sref;
};

} // namespace

TEST_F(Evd, DequeueTakesEventsWithoutASystemCall)
{
	DAT_EVENT e;
	int a, b;

	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	event(&a);
	event(&b);
	kernel.reset_counts();
	ASSERT_OK(dat_evd_dequeue(se, &e));
	EXPECT_EQ(DAT_SOFTWARE_EVENT, e.event_number);
	EXPECT_EQ(se, e.evd_handle);
	EXPECT_EQ(&a, e.event_data.software_event_data.pointer);
	EXPECT_EQ(1u, kernel.ring(sref)->head);	/* the slot went back */
	ASSERT_OK(dat_evd_dequeue(se, &e));
	EXPECT_EQ(&b, e.event_data.software_event_data.pointer);
	EXPECT_EQ(2u, kernel.ring(sref)->head);
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	EXPECT_EQ(0u, kernel.total_ioctls());
}

/*
 * Busy polling: a spinner's empty dequeues (the second in a row on) ask
 * the kernel to run the DTO EVD's poller, KDAT_EVD_CTL_POLL; an event a
 * wait returned ends the spin; a module that refuses the op is not asked
 * again for that EVD, a passing failure is; an EVD without DTO
 * completions never asks.
 */
TEST_F(Evd, ASpinnerBusyPollsADtoEvdAndASleeperDoesNot)
{
	DAT_EVENT e;
	DAT_COUNT more;
	auto polls = [&] {
		std::uint64_t n = 0;
		for (const auto &c : kernel.calls(KDAT_IOC_EVD_CTL))
			n += c.as<struct kdat_ioc_evd_ctl>().op ==
			     KDAT_EVD_CTL_POLL;
		return n;
	};

	kernel.reset_counts();
	for (int i = 0; i < 3; i++)
		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	EXPECT_EQ(2u, polls());
	EXPECT_EQ(kid<kdat::Evd>(se),
		  kernel.last<kdat_ioc_evd_ctl>(KDAT_IOC_EVD_CTL).evd);

	/* woken with an event: a drain's one empty answer is no spin */
	event(nullptr);
	ASSERT_OK(dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 1, &e, &more));
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* a passing failure: asked again; a refusal: never again */
	kernel.status_next(KDAT_IOC_EVD_CTL,
			   DAT_ERROR(DAT_INSUFFICIENT_RESOURCES, 0));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	EXPECT_EQ(2u, polls());
	kernel.status_next(KDAT_IOC_EVD_CTL,
			   DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	kernel.reset_counts();
	for (int i = 0; i < 3; i++)
		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* a software-only EVD has no completions to poll */
	DAT_EVD_HANDLE sw;
	ASSERT_OK(dat_evd_create(s.ia, 8, nullptr, DAT_EVD_SOFTWARE_FLAG, &sw));
	kernel.reset_counts();
	for (int i = 0; i < 3; i++)
		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(sw, &e));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_evd_free(sw));
}

/*
 * An event that a busy poll brings in ends the run of empty answers, as
 * any returned event does: the next empty answer is a first one again.
 */
TEST_F(Evd, AnEventABusyPollBringsEndsTheRun)
{
	DAT_EVENT e;
	fake::Kernel &k = kernel;
	const fake::Ref r = sref;

	kernel.answer<kdat_ioc_evd_ctl>(KDAT_IOC_EVD_CTL, [&k, r](auto &) {
		EXPECT_TRUE(k.inject(r, software_event(nullptr)));
		return (DAT_RETURN)DAT_SUCCESS;
	});
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	kernel.reset_counts();
	/* the second empty answer polls, and the poll brings the event */
	ASSERT_OK(dat_evd_dequeue(se, &e));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_CTL));
	kernel.answer_raw(KDAT_IOC_EVD_CTL, {});
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	EXPECT_EQ(0u, kernel.total_ioctls());
}

/*
 * A consumer whose dat_evd_wait finds its events in the ring (it never
 * sleeps) and that looks at another EVD in between, which is empty each
 * time, is no spinner: an event returned between two empty answers ends
 * the run of them, whichever EVD returned it.
 */
TEST_F(Evd, AnEventBetweenTwoEmptyAnswersIsNoSpin)
{
	DAT_EVD_HANDLE b = nullptr;
	DAT_EVENT e;
	DAT_COUNT more;

	ASSERT_OK(dat_evd_create(s.ia, 8, nullptr, DAT_EVD_DTO_FLAG, &b));
	kernel.reset_counts();
	for (int i = 0; i < 3; i++) {
		event(nullptr);
		ASSERT_OK(dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 1, &e, &more));
		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(b, &e));
		event(nullptr);
		ASSERT_OK(dat_evd_dequeue(se, &e));
		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(b, &e));
	}
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_evd_free(b));
}

/*
 * A consumer that sleeps on a CNO and then drains each of its EVDs once
 * is no spinner: empty answers count in a row per EVD, and a CNO wait is
 * a sleep like dat_evd_wait's, so neither the second EVD's empty answer
 * nor the next wake-up's asks the kernel to poll.  Two empty answers in a
 * row from one EVD still do.
 */
TEST_F(Evd, DrainingEachEvdOnceAfterACnoWakeIsNoSpin)
{
	DAT_CNO_HANDLE c = nullptr;
	DAT_EVD_HANDLE a = nullptr, b = nullptr, got = nullptr;
	DAT_EVENT e;

	ASSERT_OK(dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &c));
	ASSERT_OK(dat_evd_create(s.ia, 8, c, DAT_EVD_DTO_FLAG, &a));
	ASSERT_OK(dat_evd_create(s.ia, 8, c, DAT_EVD_DTO_FLAG, &b));
	const std::uint32_t akid = kid<kdat::Evd>(a);
	kernel.answer<kdat_ioc_cno_wait>(KDAT_IOC_CNO_WAIT, [akid](auto &w) {
		w.evd = akid;
		return (DAT_RETURN)DAT_SUCCESS;
	});
	for (int round = 0; round < 3; round++) {
		ASSERT_OK(dat_cno_wait(c, DAT_TIMEOUT_INFINITE, &got));
		EXPECT_EQ(a, got);
		kernel.reset_counts();
		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(a, &e));
		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(b, &e));
		EXPECT_EQ(0u, kernel.total_ioctls()) << "round " << round;
	}
	/* the spinner: b answers empty twice in a row */
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(b, &e));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_CTL));
	EXPECT_EQ((__u32)KDAT_EVD_CTL_POLL,
		  kernel.last<kdat_ioc_evd_ctl>(KDAT_IOC_EVD_CTL).op);
	EXPECT_EQ(kid<kdat::Evd>(b),
		  kernel.last<kdat_ioc_evd_ctl>(KDAT_IOC_EVD_CTL).evd);
	EXPECT_OK(dat_evd_free(a));
	EXPECT_OK(dat_evd_free(b));
	EXPECT_OK(dat_cno_free(c));
}

TEST_F(Evd, WaitReturnsAtOnceWhenTheThresholdIsMet)
{
	DAT_EVENT e;
	DAT_COUNT more = -1;

	event(nullptr);
	event(nullptr);
	event(nullptr);
	kernel.reset_counts();
	ASSERT_OK(dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 3, &e, &more));
	EXPECT_EQ(2, more);
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
	ASSERT_OK(dat_evd_wait(se, 0, 1, &e, &more));
	EXPECT_EQ(1, more);
	EXPECT_EQ(0u, kernel.total_ioctls());
}

/*
 * Too few events: the kernel is asked to wait for the threshold, for no
 * longer than the caller's timeout, with the wake sequence read before
 * the look; its timeout ends the call with the count.  A zero timeout
 * only looks.
 */
TEST_F(Evd, WaitTimesOutWithTheCount)
{
	DAT_EVENT e;
	DAT_COUNT more = -1;

	event(nullptr);
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_TIMEOUT_EXPIRED), dat_evd_wait(se, 30000, 2, &e, &more));
	EXPECT_EQ(1, more);
	auto calls = kernel.calls(KDAT_IOC_EVD_WAIT);
	ASSERT_GE(calls.size(), 1u);
	auto w = calls.front().as<kdat_ioc_evd_wait>();
	EXPECT_EQ(sref.id, w.evd);
	EXPECT_EQ(2, w.threshold);
	EXPECT_EQ((__u32)KDAT_WAIT_SEQ, w.flags);
	EXPECT_EQ(kernel.ring(sref)->wakes, w.wake_seq);
	EXPECT_GT(w.timeout_us, 0u);
	EXPECT_LE(w.timeout_us, 30000u);

	kernel.reset_counts();
	EXPECT_DAT(E(DAT_TIMEOUT_EXPIRED), dat_evd_wait(se, 0, 2, &e, &more));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
	ASSERT_OK(dat_evd_dequeue(se, &e));
}

/* The kernel's wait ends once the ring holds the threshold; one call. */
TEST_F(Evd, WaitBlocksInTheKernelUntilTheThresholdIsMet)
{
	DAT_EVENT e;
	DAT_COUNT more = -1;
	DAT_RETURN r = E(DAT_INTERNAL_ERROR);
	int x;

	kernel.reset_counts();
	std::thread t([&] { r = dat_evd_wait(se, 5000000, 2, &e, &more); });
	kernel.await_waiters(sref, 1);
	event(&x);
	event(&x);
	t.join();
	ASSERT_OK(r);
	EXPECT_EQ(&x, e.event_data.software_event_data.pointer);
	EXPECT_EQ(1, more);
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
	ASSERT_OK(dat_evd_dequeue(se, &e));
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
	DAT_RETURN r = E(DAT_INTERNAL_ERROR);
	int x;

	kernel.reset_counts();
	std::thread t([&] {
		r = dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 1, &e, &more);
	});
	kernel.await_waiters(sref, 1);
	event(&x);
	t.join();
	ASSERT_OK(r);
	EXPECT_EQ(&x, e.event_data.software_event_data.pointer);
	EXPECT_EQ(0, more);
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
	EXPECT_EQ(DAT_TIMEOUT_INFINITE,
		  kernel.last<kdat_ioc_evd_wait>(KDAT_IOC_EVD_WAIT).timeout_us);
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
	kernel.await_waiters(sref, 1);
	ASSERT_OK(dat_evd_set_unwaitable(se));
	w.join();
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE), r);
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_WAIT));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EVD_CTL));
	auto c = kernel.last<kdat_ioc_evd_ctl>(KDAT_IOC_EVD_CTL);
	EXPECT_EQ(sref.id, c.evd);
	EXPECT_EQ((__u32)KDAT_EVD_CTL_UNWAITABLE, c.op);
	ASSERT_OK(dat_evd_clear_unwaitable(se));
	EXPECT_EQ((__u32)KDAT_EVD_CTL_WAITABLE,
		  kernel.last<kdat_ioc_evd_ctl>(KDAT_IOC_EVD_CTL).op);
}

/* The kernel refusing set_unwaitable leaves the EVD waitable. */
TEST_F(Evd, UnwaitableRefusedByTheKernelChangesNothing)
{
	DAT_EVENT e;
	DAT_COUNT more;
	DAT_EVD_PARAM p;

	kernel.status_next(KDAT_IOC_EVD_CTL, E(DAT_INTERNAL_ERROR));
	EXPECT_DAT(E(DAT_INTERNAL_ERROR), dat_evd_set_unwaitable(se));
	ASSERT_OK(dat_evd_query(se, DAT_EVD_FIELD_ALL, &p));
	EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_WAITABLE);
	event(nullptr);
	EXPECT_OK(dat_evd_wait(se, 0, 1, &e, &more));
}

TEST_F(Evd, OneWaiterAtATimeAndUnwaitableWakesIt)
{
	DAT_EVENT e;
	DAT_COUNT more;
	DAT_RETURN first = DAT_SUCCESS;

	std::thread w([&] {
		first = dat_evd_wait(se, DAT_TIMEOUT_INFINITE, 1, &e, &more);
	});
	kernel.await_waiters(sref, 1);
	DAT_EVENT e2;
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER),
		   dat_evd_wait(se, 0, 1, &e2, &more));
	ASSERT_OK(dat_evd_set_unwaitable(se));
	w.join();
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE), first);
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE),
		   dat_evd_wait(se, 0, 1, &e2, &more));
	EXPECT_EQ(0u, kernel.total_ioctls());
	/* dequeue still works on an unwaitable EVD */
	event(nullptr);
	EXPECT_OK(dat_evd_dequeue(se, &e2));
	ASSERT_OK(dat_evd_clear_unwaitable(se));
	event(nullptr);
	EXPECT_OK(dat_evd_wait(se, 0, 1, &e2, &more));
}

/*
 * dat_evd_post_se hands the pointer to the kernel (KDAT_IOC_EVD_POST_SE),
 * whose answer comes back unchanged; the event is the kernel's to write.
 */
TEST_F(Evd, PostSeSendsThePointerAndTakesTheKernelsVerdict)
{
	DAT_EVENT ev = {}, e;
	int x;

	ev.event_number = DAT_SOFTWARE_EVENT;
	ev.event_data.software_event_data.pointer = &x;
	kernel.reset_counts();
	ASSERT_OK(dat_evd_post_se(se, &ev));
	EXPECT_EQ(1u, kernel.total_ioctls());
	auto p = kernel.last<kdat_ioc_evd_post_se>(KDAT_IOC_EVD_POST_SE);
	EXPECT_EQ(sref.id, p.evd);
	EXPECT_EQ((__u64)(uintptr_t)&x, p.pointer);
	EXPECT_EQ(0u, p.pad);
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(se, &e));
	kernel.status_next(KDAT_IOC_EVD_POST_SE, E(DAT_QUEUE_FULL));
	EXPECT_DAT(E(DAT_QUEUE_FULL), dat_evd_post_se(se, &ev));
	/* only software events are posted at all */
	ev.event_number = DAT_DTO_COMPLETION_EVENT;
	EXPECT_DAT(ARG(2), dat_evd_post_se(se, &ev));
	EXPECT_EQ(2u, kernel.total_ioctls());
}

/*
 * Events the kernel lost to a full ring are the kernel's to report
 * (DAT_ASYNC_ERROR_EVD_OVERFLOW on the async EVD): the library makes no
 * event of its own for them, so none is reported twice.
 */
TEST_F(Evd, DroppedEventsAreLeftToTheKernelsReport)
{
	DAT_EVD_HANDLE small;
	ASSERT_OK(dat_evd_create(s.ia, 2, nullptr, DAT_EVD_DTO_FLAG, &small));
	fake::Ref r = ref<kdat::Evd>(small);
	ASSERT_EQ(2u, kernel.ring(r)->entries);
	for (int i = 0; i < 5; i++)
		kernel.inject(r, dto_event(0, i));
	EXPECT_EQ(3u, kernel.ring(r)->dropped);

	DAT_EVENT e;
	ASSERT_OK(dat_evd_dequeue(small, &e));
	EXPECT_EQ(0u, e.event_data.dto_completion_event_data.user_cookie.as_64);
	ASSERT_OK(dat_evd_dequeue(small, &e));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(small, &e));
	EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(s.async, &e));
	EXPECT_OK(dat_evd_free(small));
}

TEST_F(Evd, QueryResizeFree)
{
	DAT_EVD_PARAM p;

	kernel.reset_counts();
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
	event(nullptr);
	event(nullptr);
	EXPECT_DAT(E(DAT_INVALID_STATE), dat_evd_resize(se, 1));
	EXPECT_OK(dat_evd_resize(se, 8));
	DAT_EVENT e;
	while (dat_evd_dequeue(se, &e) == DAT_SUCCESS)
		;

	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_ASYNC),
		   dat_evd_free(s.async));
	EXPECT_OK(dat_evd_modify_cno(se, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO), dat_evd_modify_cno(se, &e));
	/* all of it the library's: the EVD state is not the kernel's */
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* free: the kernel's verdict; a refused free keeps the EVD */
	kernel.status_next(KDAT_IOC_FREE,
			   E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE),
		   dat_evd_free(se));
	ASSERT_OK(dat_evd_query(se, DAT_EVD_FIELD_ALL, &p));
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ(sref.id, f.handle);
	EXPECT_EQ(kdat::ktype::EVD, f.type);
}
