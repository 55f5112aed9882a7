// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The EP send ring's library side, against the protocol fake with send
// rings on (fake::Kernel::send_rings): a post writes its entry into the
// ring and makes no system call while the kernel says its send queue is
// busy; when the kernel flags it idle (KDAT_RING_NEED_KICK) the post kicks
// (KDAT_IOC_EP_KICK), and whether that kick carries KDAT_EP_KICK_DEFER is
// the rule of Ep::ring_post:
//   - only a post that asks for no completion (DAT_COMPLETION_SUPPRESS_FLAG)
//   - that is part of a stream: no event reaped on any EVD of the IA since
//     its EP's previous post (Context::reaped), the completions of the
//     consumer's own sends and RDMA writes not counting (Evd::pop)
//   - and whose consumer sleeps for its events: one that spins on
//     dat_evd_dequeue (Context::polls) kicks inline
//   - or any post of a sleeping consumer while completions it asked for
//     on the IA's EPs are still to be dequeued (Context::awaited): a
//     pipeline, or many connections' requests in flight, which inline
//     kicks would run one after the other
//   - KDAT_EP_KICK=inline / =defer, read at EP creation, override it.
// Events come from the test, as the kernel would write them; the fake
// connects nothing, so the test publishes the EP's state in the header.
//
// What a kick does on the device (inline or in softirq) is the kernel's:
// tests/user/guest and the user benchmarks (docs/benchmarks-user.md).
#include <thread>

#include "test_util.hpp"

namespace {

constexpr std::uint32_t kInline = 0, kDefer = KDAT_EP_KICK_DEFER;
constexpr DAT_COMPLETION_FLAGS kSuppress = DAT_COMPLETION_SUPPRESS_FLAG;

class EpRing : public FakeKernelTest {
protected:
	void SetUp() override
	{
		FakeKernelTest::SetUp();
		unsetenv("KDAT_EP_KICK");
		unsetenv("KDAT_EP_POST");
		kernel.send_rings(true);
		s.open("rxe0");
		ep = make_ep();
		ASSERT_NE(nullptr, ep);
	}

	void TearDown() override
	{
		s.close();
		unsetenv("KDAT_EP_KICK");
		FakeKernelTest::TearDown();
	}

	/* A connected EP on the ring path (RDMA too: its limits allow it). */
	DAT_EP_HANDLE make_ep()
	{
		DAT_EP_ATTR at = ep_attr();
		DAT_EP_HANDLE h = nullptr;

		at.max_rdma_size = 1 << 20;
		at.max_rdma_read_in = 1;
		at.max_rdma_read_out = 1;
		at.max_rdma_read_iov = 1;
		at.max_rdma_write_iov = 1;
		EXPECT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &at,
					&h));
		if (!h)
			return nullptr;
		/* mapped, or every post would go through KDAT_IOC_EP_POST */
		EXPECT_NE(0u, kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE)
				      .ring_size);
		kernel.set_ep_state(ref<kdat::Ep>(h), DAT_EP_STATE_CONNECTED);
		return h;
	}

	/* A connected EP that posts by ioctl (KDAT_EP_POST=ioctl set). */
	DAT_EP_HANDLE make_ep_on_ioctl()
	{
		DAT_EP_ATTR at = ep_attr();
		DAT_EP_HANDLE h = nullptr;

		EXPECT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &at,
					&h));
		if (h)
			kernel.set_ep_state(ref<kdat::Ep>(h),
					    DAT_EP_STATE_CONNECTED);
		return h;
	}

	DAT_RETURN send(DAT_EP_HANDLE e, DAT_COMPLETION_FLAGS flags = kSuppress)
	{
		DAT_LMR_TRIPLET t = s.seg(0, 64);
		DAT_DTO_COOKIE c;

		c.as_64 = ++cookie;
		return dat_ep_post_send(e, 1, &t, c, flags);
	}

	/*
	 * The `value` of the one system call a post made on @e with the ring
	 * flagged: a kick (~0u: something else happened).
	 */
	template <class Post>
	std::uint32_t kick_of(DAT_EP_HANDLE e, Post post)
	{
		kernel.reset_counts();
		EXPECT_OK(post());
		auto k = kernel.calls(KDAT_IOC_EP_KICK);
		EXPECT_EQ(1u, kernel.total_ioctls());
		EXPECT_EQ(1u, k.size());
		if (k.size() != 1)
			return ~0u;
		auto a = k.back().as<kdat_ioc_ep_op>();
		EXPECT_EQ(kid<kdat::Ep>(e), a.ep);
		/* what the kick took completes: room for the next post */
		retire_taken(ref<kdat::Ep>(e));
		return a.value;
	}

	/* Every entry the kernel took from @r's ring completes. */
	void retire_taken(const fake::Ref &r)
	{
		kernel.retire(r, (std::uint32_t)kernel.sent(r).size() -
					 kernel.ring(r)->retired);
	}

	std::uint32_t kick_of_send(DAT_EP_HANDLE e,
				   DAT_COMPLETION_FLAGS flags = kSuppress)
	{
		return kick_of(e, [&] { return send(e, flags); });
	}

	/* The kernel completes one of @e's requests (KDAT_UDTO_@op). */
	struct kdat_uevent completion(DAT_EP_HANDLE e, std::uint32_t op)
	{
		struct kdat_uevent u = dto_event(kid<kdat::Ep>(e), 7, 64);

		u.dto_op = op;
		return u;
	}

	/* The consumer takes the event the kernel wrote, as a sleeper does. */
	void reap(DAT_EVD_HANDLE evd, const struct kdat_uevent &u,
		  DAT_EVENT_NUMBER expected = DAT_DTO_COMPLETION_EVENT)
	{
		ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(evd), u));
		next_event(evd, expected);
	}

	/*
	 * The consumer sleeps in dat_evd_wait (it no longer spins) until the
	 * kernel writes @u, which the wait returns.
	 */
	void sleep_until(const struct kdat_uevent &u)
	{
		DAT_EVENT e;
		DAT_COUNT more;
		DAT_RETURN r = E(DAT_INTERNAL_ERROR);
		std::thread t([&] {
			r = dat_evd_wait(s.dto, DAT_TIMEOUT_INFINITE, 1, &e,
					 &more);
		});

		kernel.await_waiters(ref<kdat::Evd>(s.dto), 1);
		EXPECT_TRUE(kernel.inject(ref<kdat::Evd>(s.dto), u));
		t.join();
		EXPECT_OK(r);
	}

	/* Two empty dequeues in a row: the consumer spins. */
	void spin()
	{
		DAT_EVENT e;

		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(s.dto, &e));
		EXPECT_DAT(E(DAT_QUEUE_EMPTY), dat_evd_dequeue(s.dto, &e));
	}

	Side s;
	DAT_EP_HANDLE ep = nullptr;
	std::uint64_t cookie = 0;
};

} // namespace

/*
 * Posts while the send queue is busy (no NEED_KICK) go into the ring and
 * make no system call: the completions drain them.  Once the kernel
 * flags the queue idle, the next post kicks, and the kick hands over
 * whatever the ring holds.
 */
TEST_F(EpRing, NoKickWhileTheSendQueueIsBusy)
{
	const fake::Ref r = ref<kdat::Ep>(ep);
	DAT_LMR_TRIPLET t = s.seg(128, 32);
	DAT_RMR_TRIPLET remote = { 0x77, 0, 0x123000, 32 };
	DAT_DTO_COOKIE c;

	kernel.set_need_kick(r, false);
	kernel.reset_counts();
	ASSERT_OK(send(ep));
	c.as_64 = 0xabc;
	ASSERT_OK(dat_ep_post_rdma_write(ep, 1, &t, c, &remote,
					 DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_EQ(2u, kernel.unconsumed(r));
	EXPECT_EQ(2u, kernel.ring(r)->tail);

	/* the entries as the kernel reads them */
	kernel.take(r);
	auto sent = kernel.sent(r);
	ASSERT_EQ(2u, sent.size());
	EXPECT_EQ((__u32)KDAT_POST_SEND, sent[0].op);
	EXPECT_EQ((__u32)DAT_COMPLETION_SUPPRESS_FLAG, sent[0].flags);
	EXPECT_EQ(1u, sent[0].nseg);
	EXPECT_EQ(cookie, sent[0].cookie);
	EXPECT_EQ(s.lctx, sent[0].seg[0].lmr_context);
	EXPECT_EQ(s.seg(0, 64).virtual_address, sent[0].seg[0].addr);
	EXPECT_EQ(64u, sent[0].seg[0].length);
	EXPECT_EQ((__u32)KDAT_POST_RDMA_WRITE, sent[1].op);
	EXPECT_EQ((__u32)DAT_COMPLETION_DEFAULT_FLAG, sent[1].flags);
	EXPECT_EQ(0xabcu, sent[1].cookie);
	EXPECT_EQ(0x77u, sent[1].rmr_context);
	EXPECT_EQ(0x123000u, sent[1].remote_addr);
	EXPECT_EQ(32u, sent[1].remote_length);
	EXPECT_EQ(t.virtual_address, sent[1].seg[0].addr);

	/* idle: the next post kicks, and the kick takes what the ring holds */
	ASSERT_OK(send(ep));
	ASSERT_OK(send(ep));
	kernel.set_need_kick(r, true);
	/* the posts that made no kick were the stream's too */
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_EQ(0u, kernel.unconsumed(r));
	EXPECT_EQ(5u, kernel.sent(r).size());
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_EP_POST));
}

/* An EP's first post follows no post of its own: it is no stream. */
TEST_F(EpRing, TheFirstPostOfAnEpKicksInline)
{
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(1u, kernel.sent(ref<kdat::Ep>(ep)).size());
}

/* Suppressed posts with nothing reaped in between: a stream, deferred. */
TEST_F(EpRing, ASuppressedStreamDefersItsKicks)
{
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	/* the flag is the kick's only difference: it still takes the entry */
	EXPECT_EQ(3u, kernel.sent(ref<kdat::Ep>(ep)).size());
	EXPECT_EQ(0u, kernel.unconsumed(ref<kdat::Ep>(ep)));
}

/*
 * A post after a receive completion was reaped answers it (request /
 * response): it kicks inline.  A completion written but not yet reaped is
 * nothing the post can answer, and the posts after the response stream
 * again.
 */
TEST_F(EpRing, APostAfterAReapedReceiveKicksInline)
{
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(s.dto),
				  completion(ep, KDAT_UDTO_RECV)));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	next_event(s.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));
}

/*
 * The completions of the consumer's own sends and RDMA writes are no
 * event a post answers: refilling the send window after them is a stream.
 */
TEST_F(EpRing, OwnSendAndWriteCompletionsLeaveAStream)
{
	EXPECT_EQ(kInline, kick_of_send(ep));
	for (std::uint32_t op : { KDAT_UDTO_SEND, KDAT_UDTO_RDMA_WRITE,
				  KDAT_UDTO_RDMA_WRITE_IMMED }) {
		SCOPED_TRACE(op);
		reap(s.dto, completion(ep, op));
		EXPECT_EQ(kDefer, kick_of_send(ep));
	}
	/* a window's worth at once, an error status among them */
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	reap(s.dto, completion(ep, KDAT_UDTO_RDMA_WRITE));
	struct kdat_uevent flushed = completion(ep, KDAT_UDTO_SEND);
	flushed.status = DAT_DTO_ERR_FLUSHED;
	reap(s.dto, flushed);
	EXPECT_EQ(kDefer, kick_of_send(ep));
}

/* An RDMA read's result may be what the next post answers (read, notify). */
TEST_F(EpRing, AnRdmaReadCompletionEndsAStream)
{
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	reap(s.dto, completion(ep, KDAT_UDTO_RDMA_READ));
	EXPECT_EQ(kInline, kick_of_send(ep));
	/* among the consumer's own completions it still counts */
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	reap(s.dto, completion(ep, KDAT_UDTO_RDMA_READ));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	EXPECT_EQ(kInline, kick_of_send(ep));
}

/*
 * Every other event counts, on any EVD of the IA: atomics' results,
 * receives of an RDMA write with immediate data, completions of a module
 * that does not say which operation completed, connection and async
 * events.
 */
TEST_F(EpRing, EveryOtherEventEndsAStream)
{
	const std::uint32_t id = kid<kdat::Ep>(ep);
	struct Case {
		const char *what;
		DAT_EVD_HANDLE evd;
		struct kdat_uevent u;
		DAT_EVENT_NUMBER number;
	} cases[] = {
		{ "compare and swap", s.dto,
		  completion(ep, KDAT_UDTO_CMP_AND_SWAP),
		  DAT_DTO_COMPLETION_EVENT },
		{ "fetch and add", s.dto,
		  completion(ep, KDAT_UDTO_FETCH_AND_ADD),
		  DAT_DTO_COMPLETION_EVENT },
		{ "receive of a write with immediate", s.dto,
		  completion(ep, KDAT_UDTO_RECV_RDMA_IMMED),
		  DAT_DTO_COMPLETION_EVENT },
		{ "operation unknown", s.dto, completion(ep, KDAT_UDTO_UNKNOWN),
		  DAT_DTO_COMPLETION_EVENT },
		{ "connection established", s.conn,
		  connection_event(DAT_CONNECTION_EVENT_ESTABLISHED, id),
		  DAT_CONNECTION_EVENT_ESTABLISHED },
		{ "async error", s.async,
		  async_event(id, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR),
		  DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR },
	};

	EXPECT_EQ(kInline, kick_of_send(ep));
	for (const Case &c : cases) {
		SCOPED_TRACE(c.what);
		EXPECT_EQ(kDefer, kick_of_send(ep));
		reap(c.evd, c.u, c.number);
		EXPECT_EQ(kInline, kick_of_send(ep));
	}
}

/*
 * A post whose completion is waited for kicks inline, in a stream too, as
 * long as no completion asked for before is still to be dequeued; other
 * flags beside the suppression change nothing, and a signalled post does
 * not end the stream it is part of.
 */
TEST_F(EpRing, ASignalledPostKicksInlineUnlessOneIsAwaited)
{
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	EXPECT_EQ(kInline,
		  kick_of_send(ep, DAT_COMPLETION_SOLICITED_WAIT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_BARRIER_FENCE_FLAG));
	/* that one's completion is still to be dequeued: a pipeline */
	EXPECT_EQ(kDefer, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_EQ(kDefer,
		  kick_of_send(ep, (DAT_COMPLETION_FLAGS)(
					   DAT_COMPLETION_SUPPRESS_FLAG |
					   DAT_COMPLETION_SOLICITED_WAIT_FLAG |
					   DAT_COMPLETION_BARRIER_FENCE_FLAG)));
}

/* RDMA writes and reads through the ring follow the same rule. */
TEST_F(EpRing, RdmaPostsFollowTheRule)
{
	DAT_LMR_TRIPLET t = s.seg(256, 16);
	DAT_RMR_TRIPLET remote = { 0x77, 0, 0x123000, 16 };
	DAT_DTO_COOKIE c;
	auto write = [&](DAT_COMPLETION_FLAGS f) {
		return kick_of(ep, [&] {
			return dat_ep_post_rdma_write(ep, 1, &t, c, &remote, f);
		});
	};
	auto read = [&](DAT_COMPLETION_FLAGS f) {
		return kick_of(ep, [&] {
			return dat_ep_post_rdma_read(ep, 1, &t, c, &remote, f);
		});
	};

	c.as_64 = 1;
	EXPECT_EQ(kInline, write(kSuppress));
	EXPECT_EQ(kDefer, write(kSuppress));
	EXPECT_EQ(kDefer, read(kSuppress));
	EXPECT_EQ(kInline, read(DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_RDMA_READ));
	EXPECT_EQ(kInline, write(kSuppress));
	auto sent = kernel.sent(ref<kdat::Ep>(ep));
	ASSERT_EQ(5u, sent.size());
	EXPECT_EQ((__u32)KDAT_POST_RDMA_READ, sent[2].op);
	EXPECT_EQ((__u32)KDAT_POST_RDMA_WRITE, sent[4].op);
}

/*
 * A consumer that spins on dat_evd_dequeue keeps a CPU busy: its posts
 * kick inline, stream or not, for as long as it spins - the events its
 * dequeues find included; once it sleeps in dat_evd_wait, its streams
 * defer again.
 */
TEST_F(EpRing, ASpinningConsumerKicksInline)
{
	DAT_EVENT e;

	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	spin();
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kInline, kick_of_send(ep));
	/* its dequeue finds its own send's completion: a stream, a spinner */
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(s.dto),
				  completion(ep, KDAT_UDTO_SEND)));
	ASSERT_OK(dat_evd_dequeue(s.dto, &e));
	EXPECT_EQ(kInline, kick_of_send(ep));

	/* it sleeps in the kernel until its next send completes */
	sleep_until(completion(ep, KDAT_UDTO_SEND));
	EXPECT_EQ(kDefer, kick_of_send(ep));
}

/*
 * A consumer that sleeps in dat_cno_wait sleeps for its events as one in
 * dat_evd_wait does: its streams defer again after the spin that came
 * before the wait.
 */
TEST_F(EpRing, ACnoWaitEndsASpin)
{
	DAT_CNO_HANDLE c = nullptr;
	DAT_EVD_HANDLE got = nullptr;

	ASSERT_OK(dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &c));
	EXPECT_EQ(kInline, kick_of_send(ep));
	spin();
	EXPECT_EQ(kInline, kick_of_send(ep));
	/* a wait of no time is a look, not a sleep */
	EXPECT_DAT(E(DAT_TIMEOUT_EXPIRED), dat_cno_wait(c, 0, &got));
	EXPECT_EQ(kInline, kick_of_send(ep));
	/* no trigger scripted: the wait times out at once, but it slept */
	EXPECT_DAT(E(DAT_TIMEOUT_EXPIRED), dat_cno_wait(c, 10000000, &got));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_OK(dat_cno_free(c));
}

/*
 * Streams are per EP (another EP's post is no event between), events
 * per IA (one reaped on any EVD of it ends every EP's stream).
 */
TEST_F(EpRing, StreamsArePerEpAndEventsPerIa)
{
	DAT_EP_HANDLE b = make_ep();

	ASSERT_NE(nullptr, b);
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kInline, kick_of_send(b));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(b));
	reap(s.dto, completion(b, KDAT_UDTO_RECV));
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kInline, kick_of_send(b));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_OK(dat_ep_free(b));
}

/*
 * While a completion the consumer asked for, on any EP of the IA, is
 * still to be dequeued, a sleeping consumer's posts defer, signalled or
 * answering an event.  Dequeuing the last of them (any request: send,
 * RDMA) gives the rule back.
 */
TEST_F(EpRing, APostWhileACompletionIsAwaitedDefers)
{
	DAT_LMR_TRIPLET t = s.seg(256, 16);
	DAT_RMR_TRIPLET remote = { 0x77, 0, 0x123000, 16 };
	DAT_DTO_COOKIE c;
	auto write = [&] {
		return kick_of(ep, [&] {
			return dat_ep_post_rdma_write(ep, 1, &t, c, &remote,
						      DAT_COMPLETION_DEFAULT_FLAG);
		});
	};
	auto read = [&] {
		return kick_of(ep, [&] {
			return dat_ep_post_rdma_read(ep, 1, &t, c, &remote,
						     DAT_COMPLETION_DEFAULT_FLAG);
		});
	};
	DAT_EP_HANDLE b = make_ep();

	ASSERT_NE(nullptr, b);
	c.as_64 = 1;
	EXPECT_EQ(kInline, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(kDefer, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	/* answering a receive, or asking for its completion: deferred */
	reap(s.dto, completion(ep, KDAT_UDTO_RECV));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_EQ(kDefer, write());

	/* b's send dequeued: ep's own awaited completions count as well */
	reap(s.dto, completion(b, KDAT_UDTO_SEND));
	EXPECT_EQ(kDefer, read());
	EXPECT_EQ(kDefer, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	reap(s.dto, completion(ep, KDAT_UDTO_RDMA_WRITE));
	reap(s.dto, completion(ep, KDAT_UDTO_RDMA_READ));
	EXPECT_EQ(kDefer, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));

	/* b's two dequeued: nothing awaited, the rule again */
	reap(s.dto, completion(b, KDAT_UDTO_SEND));
	reap(s.dto, completion(b, KDAT_UDTO_SEND));
	reap(s.dto, completion(b, KDAT_UDTO_RECV));
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_OK(dat_ep_free(b));
}

/*
 * A post by ioctl that asks for a completion is awaited too, and given
 * back when the kernel refuses it; an EP without a request EVD gives the
 * consumer no completion to dequeue, and none is awaited.
 */
TEST_F(EpRing, PostsByIoctlAreAwaitedAndEpsWithoutRequestEvdsAreNot)
{
	setenv("KDAT_EP_POST", "ioctl", 1);
	DAT_EP_HANDLE io = make_ep_on_ioctl();
	unsetenv("KDAT_EP_POST");
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE norq = nullptr;

	ASSERT_NE(nullptr, io);
	ASSERT_OK(dat_ep_create(s.ia, s.pz, s.dto, DAT_HANDLE_NULL, s.conn,
				&at, &norq));
	kernel.set_ep_state(ref<kdat::Ep>(norq), DAT_EP_STATE_CONNECTED);

	/* refused by the kernel: nothing awaited */
	kernel.status_next(KDAT_IOC_EP_POST, E(DAT_INSUFFICIENT_RESOURCES));
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES),
		   send(io, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));

	/* the EP without a request EVD: nothing awaited */
	EXPECT_EQ(kInline, kick_of_send(norq, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_RECV));
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));

	/* posted by ioctl: awaited until its completion is dequeued */
	EXPECT_OK(send(io, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(kDefer, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));
	reap(s.dto, completion(io, KDAT_UDTO_SEND));
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_OK(dat_ep_free(norq));
	EXPECT_OK(dat_ep_free(io));
}

/*
 * A spinning consumer kicks inline whatever is awaited; completions
 * beyond what was asked for (a suppressed request that failed) do not
 * take the count below nothing; a freed EP's awaited completions leave
 * the IA's.
 */
TEST_F(EpRing, AwaitedCompletionsAreCountedExactly)
{
	DAT_EP_HANDLE b = make_ep();

	ASSERT_NE(nullptr, b);
	EXPECT_EQ(kInline, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));
	spin();
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));

	/* b: one asked for, two completions (one a suppressed send's) */
	reap(s.dto, completion(b, KDAT_UDTO_SEND));
	reap(s.dto, completion(b, KDAT_UDTO_SEND));
	EXPECT_EQ(kInline, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));
	/* a sleeper again: it sleeps until that post's completion comes */
	sleep_until(completion(b, KDAT_UDTO_SEND));
	/* one asked for and dequeued: b's count is back at nothing */
	EXPECT_EQ(kInline, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(kDefer, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(ep, KDAT_UDTO_SEND));

	/* b freed with its completion awaited: ep follows the rule again */
	EXPECT_OK(dat_ep_free(b));
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
}

/*
 * Dequeuing the completion of any request gives its count back - an RDMA
 * write with immediate data, a compare-and-swap, a fetch-and-add (the
 * DAT 2.0 extension's operations) - and a receive that an RDMA write with
 * immediate data took gives none.  A suppressed post answering an event
 * shows the count: it defers while anything is awaited.
 */
TEST_F(EpRing, EveryRequestCompletionGivesItsCountBack)
{
	DAT_EP_HANDLE b = make_ep();

	ASSERT_NE(nullptr, b);
	EXPECT_EQ(kInline, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(kDefer, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(kDefer, kick_of_send(b, DAT_COMPLETION_DEFAULT_FLAG));
	/* three awaited */
	reap(s.dto, completion(b, KDAT_UDTO_RECV_RDMA_IMMED));
	reap(s.dto, completion(b, KDAT_UDTO_RDMA_WRITE_IMMED));
	reap(s.dto, completion(b, KDAT_UDTO_CMP_AND_SWAP));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	reap(s.dto, completion(b, KDAT_UDTO_FETCH_AND_ADD));
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_OK(dat_ep_free(b));
}

/*
 * A post the library refuses before it writes the ring (the EP not
 * connected: DAT_INVALID_STATE; no room: DAT_INSUFFICIENT_RESOURCES)
 * asks for nothing the consumer could dequeue: nothing is awaited.
 */
TEST_F(EpRing, ARefusedRingPostAwaitsNothing)
{
	const fake::Ref r = ref<kdat::Ep>(ep);

	kernel.set_ep_state(r, DAT_EP_STATE_DISCONNECTED);
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED),
		   send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(0u, kernel.total_ioctls());
	kernel.set_ep_state(r, DAT_EP_STATE_CONNECTED);

	/* no room: the send queue busy, its completions not come */
	kernel.set_need_kick(r, false);
	DAT_RETURN full = DAT_SUCCESS;
	for (int i = 0; i < 4096 && full == DAT_SUCCESS; i++)
		full = send(ep);
	ASSERT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP), full);
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP),
		   send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(0u, kernel.total_ioctls());
	/* the kernel takes and completes them all; the queue is idle */
	kernel.take(r);
	retire_taken(r);
	kernel.set_need_kick(r, true);

	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	/* that post is awaited: the next of a sleeper defers */
	EXPECT_EQ(kDefer, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
}

/*
 * KDAT_EP_KICK=inline (for benchmarks) never defers; it is read when the
 * EP is made, so an EP made before keeps the rule.
 */
TEST_F(EpRing, KickInlineInTheEnvironmentNeverDefers)
{
	setenv("KDAT_EP_KICK", "inline", 1);
	DAT_EP_HANDLE in = make_ep();
	unsetenv("KDAT_EP_KICK");

	ASSERT_NE(nullptr, in);
	EXPECT_EQ(kInline, kick_of_send(in));
	EXPECT_EQ(kInline, kick_of_send(in));
	EXPECT_EQ(kInline, kick_of_send(in));
	reap(s.dto, completion(in, KDAT_UDTO_SEND));
	EXPECT_EQ(kInline, kick_of_send(in));

	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));
	EXPECT_OK(dat_ep_free(in));
}

/*
 * KDAT_EP_KICK=defer defers every suppressed post - a first one, one
 * answering a receive, one of a spinner - and no signalled one.
 */
TEST_F(EpRing, KickDeferInTheEnvironmentDefersEverySuppressedPost)
{
	setenv("KDAT_EP_KICK", "defer", 1);
	DAT_EP_HANDLE d = make_ep();
	unsetenv("KDAT_EP_KICK");

	ASSERT_NE(nullptr, d);
	EXPECT_EQ(kDefer, kick_of_send(d));
	reap(s.dto, completion(d, KDAT_UDTO_RECV));
	EXPECT_EQ(kDefer, kick_of_send(d));
	EXPECT_EQ(kInline, kick_of_send(d, DAT_COMPLETION_DEFAULT_FLAG));
	reap(s.dto, completion(d, KDAT_UDTO_SEND));

	/* the EP made before follows the rule */
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_EQ(kDefer, kick_of_send(ep));

	spin();
	EXPECT_EQ(kDefer, kick_of_send(d));
	EXPECT_EQ(kInline, kick_of_send(ep));
	EXPECT_OK(dat_ep_free(d));
}

/*
 * The entry is in the ring once published: a kick that fails changes no
 * post's answer, but one that finds the EP gone (freed by another
 * thread) does.
 */
TEST_F(EpRing, OnlyAVanishedEpIsAKicksNews)
{
	kernel.status_next(KDAT_IOC_EP_KICK, E(DAT_INSUFFICIENT_RESOURCES));
	EXPECT_OK(send(ep));
	kernel.status_next(KDAT_IOC_EP_KICK, BAD(DAT_INVALID_HANDLE_EP));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP), send(ep));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_EP_KICK));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_EP_POST));
	EXPECT_EQ(2u, kernel.unconsumed(ref<kdat::Ep>(ep)));
}

/*
 * A post that asked for a completion on an EP another thread freed under
 * it (its kick finds the EP gone) awaits nothing: no completion comes.
 */
TEST_F(EpRing, APostOnAVanishedEpAwaitsNothing)
{
	DAT_EP_HANDLE b = make_ep();

	ASSERT_NE(nullptr, b);
	kernel.status_next(KDAT_IOC_EP_KICK, BAD(DAT_INVALID_HANDLE_EP));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   send(b, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(kInline, kick_of_send(ep, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_OK(dat_ep_free(b));
}

/* Without send_rings() the fake offers none: every post is an ioctl. */
TEST_F(EpRing, WithoutARingEveryPostIsAnIoctl)
{
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE h = nullptr;

	kernel.send_rings(false);
	ASSERT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &at, &h));
	EXPECT_EQ(0u, kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE)
			      .ring_size);
	kernel.reset_counts();
	ASSERT_OK(send(h));
	ASSERT_OK(send(h));
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_EP_POST));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_EP_KICK));
	EXPECT_OK(dat_ep_free(h));
}
