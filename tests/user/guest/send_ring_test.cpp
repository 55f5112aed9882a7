// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The EP send ring (KDAT_FEATURE_SEND_RING): dat_ep_post_send,
// _post_rdma_write and _post_rdma_read of a user EP go through an mmapped
// ring the kernel drains on send completions, on a kick when its send
// queue is idle, and on state changes.  These tests hold it to the DAT
// semantics the ioctl path had: order, cookies and lengths, synchronous
// return codes, every post completing exactly once (flushed at a
// disconnect), two threads on one EP, posts racing disconnect and free,
// and a kick protocol that never strands a post.  A raw entry written
// into the mapped ring behind the library's back (what a lying process
// can do) comes back as an error completion and is never posted.
#include <dat/udat.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uapi/kdat_abi.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "fixture.hpp"

using namespace kt;

namespace {

constexpr DAT_COUNT kDepth = 37;	/* max_request_dtos: finds the ring */

/* An error as the calls return it (the class bit, the type, the subtype). */
constexpr DAT_RETURN code(unsigned type, unsigned sub)
{
	return (DAT_RETURN)(DAT_CLASS_ERROR | type | sub);
}

class SendRing : public Pair {
protected:
	DAT_EP_HANDLE se = DAT_HANDLE_NULL, ce = DAT_HANDLE_NULL;
	DAT_RMR_CONTEXT srv_rmr = 0;

	void open_one(DAT_COUNT srq_depth = 1024)
	{
		make_srq(srq_depth);
		if (HasFatalFailure())
			return;
		DAT_EP_ATTR a = ep_attr();
		a.max_request_dtos = 16;	/* not kDepth: one ring has it */
		a.max_rdma_read_out = 4;
		a.max_rdma_read_in = 4;
		ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto,
						 s.conn, srq, &a, &se));
		a.max_request_dtos = kDepth;
		ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a,
					&ce));
		connect(se, ce, 1);
		DAT_LMR_PARAM lp{};
		ASSERT_OK(dat_lmr_query(s.lmr, DAT_LMR_FIELD_ALL, &lp));
		srv_rmr = lp.rmr_context;
	}

	DAT_RETURN send(size_t off, size_t n, uint64_t ck,
			DAT_COMPLETION_FLAGS f = DAT_COMPLETION_DEFAULT_FLAG)
	{
		DAT_LMR_TRIPLET t = c.seg(off, n);
		return dat_ep_post_send(ce, 1, &t, cookie(ck), f);
	}

	DAT_RMR_TRIPLET remote(size_t off, size_t n)
	{
		DAT_RMR_TRIPLET r{};
		r.rmr_context = srv_rmr;
		r.target_address = (DAT_VADDR)(uintptr_t)(s.buf.get() + off);
		r.segment_length = n;
		return r;
	}

	// The next DTO event of @evd (10 s at most).
	bool dto(DAT_EVD_HANDLE evd, DAT_DTO_COMPLETION_EVENT_DATA &d)
	{
		DAT_EVENT ev;
		if (!wait_event(evd, &ev) ||
		    ev.event_number != DAT_DTO_COMPLETION_EVENT)
			return false;
		d = ev.event_data.dto_completion_event_data;
		return true;
	}

	// Every DTO event of @evd until it stays empty for a while.
	std::vector<DAT_DTO_COMPLETION_EVENT_DATA> drain(DAT_EVD_HANDLE evd)
	{
		std::vector<DAT_DTO_COMPLETION_EVENT_DATA> v;
		DAT_EVENT ev;
		DAT_COUNT more;
		while (dat_evd_wait(evd, 300 * 1000, 1, &ev, &more) ==
		       DAT_SUCCESS)
			if (ev.event_number == DAT_DTO_COMPLETION_EVENT)
				v.push_back(ev.event_data.dto_completion_event_data);
		return v;
	}
};

// The send ring this process maps whose depth is kDepth (there is one).
struct kdat_ring_hdr *find_send_ring()
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	struct kdat_ring_hdr *found = nullptr;

	while (std::getline(maps, line)) {
		if (line.find("/dev/kdat") == std::string::npos)
			continue;
		unsigned long lo, hi;
		if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2)
			continue;
		auto *h = reinterpret_cast<struct kdat_ring_hdr *>(lo);
		if (h->depth == (unsigned)kDepth && h->entry_size % 64 == 0 &&
		    h->entry_size >= sizeof(struct kdat_useg) + 64)
			found = h;
	}
	return found;
}

int count_send_rings()
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	int n = 0;

	while (std::getline(maps, line)) {
		if (line.find("/dev/kdat") == std::string::npos)
			continue;
		unsigned long lo, hi;
		if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2)
			continue;
		auto *h = reinterpret_cast<struct kdat_ring_hdr *>(lo);
		if (h->depth == (unsigned)kDepth)
			n++;
	}
	return n;
}

} // namespace

// Sends, RDMA Writes and Reads through the ring: completions in order,
// with their cookies and lengths; the data arrives.
TEST_F(SendRing, SendsAndRdmaArriveInOrderWithCookiesAndLengths)
{
	open_one();
	if (HasFatalFailure())
		return;
	ASSERT_NE(find_send_ring(), nullptr) << "no send ring mapped";
	const int n = 300;
	for (int i = 0; i < n; i++)
		ASSERT_OK(post_srq(4096 + i * 64, 64, 1000 + i));
	for (int i = 0; i < 64; i++)
		c.buf.get()[i] = (char)(i + 1);

	int posted = 0, done = 0;
	while (done < n) {
		// keep up to the depth in flight: the ring, no syscall
		while (posted < n && posted - done < kDepth) {
			DAT_RETURN r = send(0, 1 + posted % 64, posted);
			if (DAT_GET_TYPE(r) == DAT_INSUFFICIENT_RESOURCES)
				break;
			ASSERT_OK(r);
			posted++;
		}
		DAT_DTO_COMPLETION_EVENT_DATA d;
		ASSERT_TRUE(dto(c.dto, d)) << "after " << done;
		ASSERT_EQ(d.status, DAT_DTO_SUCCESS);
		ASSERT_EQ(d.user_cookie.as_64, (uint64_t)done);
		ASSERT_EQ(d.transfered_length, (DAT_VLEN)(1 + done % 64));
		done++;
	}
	for (int i = 0; i < n; i++) {
		DAT_DTO_COMPLETION_EVENT_DATA d;
		ASSERT_TRUE(dto(s.dto, d));
		ASSERT_EQ(d.status, DAT_DTO_SUCCESS);
		ASSERT_EQ(d.user_cookie.as_64, (uint64_t)(1000 + i));
		ASSERT_EQ(d.transfered_length, (DAT_VLEN)(1 + i % 64));
	}

	// RDMA Write then Read back, through the same ring
	for (int i = 0; i < 128; i++)
		c.buf.get()[8192 + i] = (char)(0x5a ^ i);
	DAT_LMR_TRIPLET w = c.seg(8192, 128), rd = c.seg(16384, 128);
	DAT_RMR_TRIPLET rw = remote(65536, 128);
	ASSERT_OK(dat_ep_post_rdma_write(ce, 1, &w, cookie(7001), &rw,
					 DAT_COMPLETION_DEFAULT_FLAG));
	ASSERT_OK(dat_ep_post_rdma_read(ce, 1, &rd, cookie(7002), &rw,
					DAT_COMPLETION_DEFAULT_FLAG));
	DAT_DTO_COMPLETION_EVENT_DATA d;
	ASSERT_TRUE(dto(c.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 7001u);
	EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
	EXPECT_EQ(d.transfered_length, 128u);
	ASSERT_TRUE(dto(c.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 7002u);
	EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
	EXPECT_EQ(d.transfered_length, 128u);
	EXPECT_EQ(std::memcmp(s.buf.get() + 65536, c.buf.get() + 8192, 128), 0);
	EXPECT_EQ(std::memcmp(c.buf.get() + 16384, c.buf.get() + 8192, 128), 0);
}

// What the DAT calls make a return code is returned by the call.
TEST_F(SendRing, ErrorsAreSynchronousWithTheKernelsCodes)
{
	make_srq(256);
	if (HasFatalFailure())
		return;
	DAT_EP_ATTR a = ep_attr();
	a.max_request_dtos = kDepth;
	ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn, srq,
					 &a, &se));
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce));

	// unconnected
	EXPECT_EQ(DAT_GET_TYPE(send(0, 8, 1)), DAT_INVALID_STATE);
	connect(se, ce, 2);
	if (HasFatalFailure())
		return;

	DAT_LMR_TRIPLET t[3] = {c.seg(0, 8), c.seg(8, 8), c.seg(16, 8)};
	// more segments than max_request_iov (2)
	EXPECT_EQ(dat_ep_post_send(ce, 3, t, cookie(1),
				   DAT_COMPLETION_DEFAULT_FLAG),
		  code(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
	EXPECT_EQ(dat_ep_post_send(ce, 1, nullptr, cookie(1),
				   DAT_COMPLETION_DEFAULT_FLAG),
		  code(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
	// a flag a request may not carry
	EXPECT_EQ(dat_ep_post_send(ce, 1, t, cookie(1),
				   DAT_COMPLETION_UNSIGNALLED_FLAG),
		  code(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));
	// a triplet naming no LMR
	DAT_LMR_TRIPLET bad = c.seg(0, 8);
	bad.lmr_context ^= 0x5a5a5a;
	EXPECT_EQ(DAT_GET_TYPE(dat_ep_post_send(ce, 1, &bad, cookie(1),
						DAT_COMPLETION_DEFAULT_FLAG)),
		  DAT_INVALID_PARAMETER);
	// an LMR of another PZ
	DAT_PZ_HANDLE pz2;
	DAT_LMR_HANDLE l2;
	DAT_LMR_CONTEXT x2;
	ASSERT_OK(dat_pz_create(c.ia, &pz2));
	ASSERT_OK(c.register_mem(pz2, c.buf.get() + 512 * 1024, 4096,
				 DAT_MEM_PRIV_ALL_FLAG, &l2, &x2));
	DAT_LMR_TRIPLET other{};
	other.lmr_context = x2;
	other.segment_length = 64;
	other.virtual_address = (DAT_VADDR)(uintptr_t)(c.buf.get() + 512 * 1024);
	EXPECT_EQ(DAT_GET_TYPE(dat_ep_post_send(ce, 1, &other, cookie(1),
						DAT_COMPLETION_DEFAULT_FLAG)),
		  DAT_PROTECTION_VIOLATION);
	// an LMR without local write, as an RDMA Read target
	DAT_LMR_HANDLE l3;
	DAT_LMR_CONTEXT x3;
	ASSERT_OK(c.register_mem(c.pz, c.buf.get() + 768 * 1024, 4096,
				 DAT_MEM_PRIV_LOCAL_READ_FLAG, &l3, &x3));
	DAT_LMR_TRIPLET ro{};
	ro.lmr_context = x3;
	ro.segment_length = 64;
	ro.virtual_address = (DAT_VADDR)(uintptr_t)(c.buf.get() + 768 * 1024);
	DAT_RMR_TRIPLET rr{};
	rr.rmr_context = 1;
	rr.segment_length = 64;
	EXPECT_EQ(DAT_GET_TYPE(dat_ep_post_rdma_read(ce, 1, &ro, cookie(1), &rr,
						     DAT_COMPLETION_DEFAULT_FLAG)),
		  DAT_INVALID_STATE) << "max_rdma_read_out is 0";
	// longer than max_message_size (4096)
	DAT_LMR_TRIPLET big[2] = {c.seg(0, 4096), c.seg(4096, 8)};
	EXPECT_EQ(DAT_GET_TYPE(dat_ep_post_send(ce, 2, big, cookie(1),
						DAT_COMPLETION_DEFAULT_FLAG)),
		  DAT_LENGTH_ERROR);
	// longer than the remote segment
	DAT_RMR_TRIPLET shortr{};
	shortr.rmr_context = 1;
	shortr.segment_length = 4;
	EXPECT_EQ(DAT_GET_TYPE(dat_ep_post_rdma_write(ce, 1, t, cookie(1),
						      &shortr,
						      DAT_COMPLETION_DEFAULT_FLAG)),
		  DAT_LENGTH_ERROR);
	EXPECT_TRUE(no_event(c.dto)) << "a refused post completed";

	// the queue full: no receive buffer on the peer holds every send
	for (int i = 0; i < kDepth; i++)
		ASSERT_EQ(send(0, 8, 100 + i), DAT_SUCCESS) << i;
	EXPECT_EQ(send(0, 8, 999),
		  code(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP));
	// buffers: every send completes, in order, the refused one never
	for (int i = 0; i < kDepth; i++)
		ASSERT_OK(post_srq(4096 + i * 16, 16, i));
	for (int i = 0; i < kDepth; i++) {
		DAT_DTO_COMPLETION_EVENT_DATA d;
		ASSERT_TRUE(dto(c.dto, d)) << i;
		EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
		EXPECT_EQ(d.user_cookie.as_64, (uint64_t)(100 + i));
	}
	EXPECT_TRUE(no_event(c.dto));
}

// Raw entries written into the mapped ring behind the library's back are
// never posted: each completes, in order, with the status its fault
// names.
TEST_F(SendRing, RawMalformedEntriesComeBackAsErrorCompletions)
{
	open_one(64);
	if (HasFatalFailure())
		return;
	struct kdat_ring_hdr *h = find_send_ring();
	ASSERT_NE(h, nullptr);
	// one real send, held by the peer's lack of a buffer
	ASSERT_OK(send(0, 16, 1));
	uint32_t tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
	auto slot = [&](uint32_t i) {
		return reinterpret_cast<struct kdat_ep_sqe *>(
			reinterpret_cast<char *>(h) + h->entry_offset +
			(size_t)(i & (h->entries - 1)) * h->entry_size);
	};
	struct kdat_ep_sqe *e = slot(tail);
	std::memset(e, 0, h->entry_size);
	e->op = KDAT_POST_SEND;		/* an LMR that is not there */
	e->nseg = 1;
	e->cookie = 2;
	e->seg[0].lmr_context = 0xdeadbeef;
	e->seg[0].addr = 0x1000;
	e->seg[0].length = 16;
	e = slot(tail + 1);
	std::memset(e, 0, h->entry_size);
	e->op = 99;			/* no such operation */
	e->cookie = 3;
	e = slot(tail + 2);
	std::memset(e, 0, h->entry_size);
	e->op = KDAT_POST_SEND;		/* more segments than it holds */
	e->nseg = 1000;
	e->cookie = 4;
	e = slot(tail + 3);
	std::memset(e, 0, h->entry_size);
	e->op = KDAT_POST_RECV;		/* a receive in the send ring */
	e->cookie = 5;
	__atomic_store_n(&h->tail, tail + 4, __ATOMIC_SEQ_CST);

	// the real send completes once the peer has a buffer, then the rest
	ASSERT_OK(post_srq(4096, 64, 77));
	ASSERT_OK(post_srq(8192, 64, 78));
	DAT_DTO_COMPLETION_EVENT_DATA d;
	ASSERT_TRUE(dto(c.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 1u);
	EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
	ASSERT_TRUE(dto(c.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 2u);
	EXPECT_EQ(d.status, DAT_DTO_ERR_LOCAL_PROTECTION);
	EXPECT_EQ(d.transfered_length, 0u);
	ASSERT_TRUE(dto(c.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 3u);
	EXPECT_EQ(d.status, DAT_DTO_ERR_LOCAL_EP);
	ASSERT_TRUE(dto(c.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 4u);
	EXPECT_EQ(d.status, DAT_DTO_ERR_LOCAL_LENGTH);
	ASSERT_TRUE(dto(c.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 5u);
	EXPECT_EQ(d.status, DAT_DTO_ERR_LOCAL_EP);
	// nothing of them reached the wire: one receive only
	ASSERT_TRUE(dto(s.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 77u);
	EXPECT_EQ(d.transfered_length, 16u);
	auto rest = drain(s.dto);
	EXPECT_TRUE(rest.empty()) << rest.size() << " more receives";
	EXPECT_TRUE(drain(c.dto).empty());
	// the kernel's head passed them all, its retired count too
	EXPECT_EQ(__atomic_load_n(&h->head, __ATOMIC_ACQUIRE), tail + 4);
	EXPECT_EQ(__atomic_load_n(&h->retired, __ATOMIC_ACQUIRE), tail + 4);
}

// Requests still in the ring or the queue at a disconnect complete as
// flushed, each exactly once, in order; the EP then refuses posts.
TEST_F(SendRing, DisconnectFlushesEveryRequestExactlyOnce)
{
	open_one(64);
	if (HasFatalFailure())
		return;
	// no buffer on the peer: the first send waits, the rest in the ring
	for (int i = 0; i < kDepth; i++)
		ASSERT_OK(send(0, 8, i));
	ASSERT_OK(dat_ep_disconnect(ce, DAT_CLOSE_ABRUPT_FLAG));
	EXPECT_EQ(DAT_GET_TYPE(send(0, 8, 500)), DAT_INVALID_STATE);
	auto v = drain(c.dto);
	ASSERT_EQ(v.size(), (size_t)kDepth);
	for (int i = 0; i < kDepth; i++) {
		EXPECT_EQ(v[i].user_cookie.as_64, (uint64_t)i);
		EXPECT_NE(v[i].status, DAT_DTO_SUCCESS);
	}
	EXPECT_EQ(v.back().status, DAT_DTO_ERR_FLUSHED);
}

// Two threads posting on one EP: every post completes exactly once, and
// each thread's posts in its order.
TEST_F(SendRing, TwoThreadsPostOnOneEp)
{
	open_one(2048);
	if (HasFatalFailure())
		return;
	const int per = 400;
	for (int i = 0; i < 2 * per; i++)
		ASSERT_OK(post_srq(4096 + (i % 64) * 64, 64, i));
	std::atomic<int> failures{0};
	auto poster = [&](uint64_t base) {
		for (int i = 0; i < per;) {
			DAT_RETURN r = send(0, 8, base + i);
			if (DAT_GET_TYPE(r) == DAT_INSUFFICIENT_RESOURCES) {
				std::this_thread::yield();
				continue;
			}
			if (r != DAT_SUCCESS)
				failures++;
			i++;
		}
	};
	std::thread a(poster, 0), b(poster, 1u << 20);
	std::map<uint64_t, int> seen;
	uint64_t next_a = 0, next_b = 1u << 20;
	int got = 0;
	bool ordered = true;
	while (got < 2 * per) {
		DAT_DTO_COMPLETION_EVENT_DATA d;
		if (!dto(c.dto, d))
			break;
		got++;
		EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
		uint64_t ck = d.user_cookie.as_64;
		seen[ck]++;
		if (ck < (1u << 20))
			ordered &= ck == next_a++;
		else
			ordered &= ck == next_b++;
	}
	a.join();
	b.join();
	EXPECT_EQ(failures.load(), 0);
	EXPECT_EQ(got, 2 * per);
	EXPECT_EQ(seen.size(), (size_t)(2 * per));
	EXPECT_TRUE(ordered);
	EXPECT_TRUE(drain(c.dto).empty());
}

// A thread posting while the EP is disconnected: every post that returned
// DAT_SUCCESS completes exactly once, the others never.
TEST_F(SendRing, PostRacingDisconnectCompletesEachSuccessOnce)
{
	make_srq(4096);
	if (HasFatalFailure())
		return;
	for (int i = 0; i < 2048; i++)
		ASSERT_OK(post_srq(4096 + (i % 64) * 64, 64, i));
	for (int round = 0; round < 5; round++) {
		DAT_EP_ATTR a = ep_attr();
		a.max_request_dtos = 16;
		ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto,
						 s.conn, srq, &a, &se));
		a.max_request_dtos = kDepth;
		ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a,
					&ce));
		connect(se, ce, 10 + round);
		if (HasFatalFailure())
			return;
		std::atomic<bool> stop{false};
		std::set<uint64_t> ok_posts;
		const uint64_t base = (uint64_t)round << 32;
		std::thread t([&] {
			for (uint64_t i = 0; !stop.load(); i++) {
				DAT_RETURN r = send(0, 8, base + i);
				if (r == DAT_SUCCESS)
					ok_posts.insert(base + i);
				else if (DAT_GET_TYPE(r) == DAT_INVALID_STATE)
					break;
			}
		});
		// some traffic first, then the disconnect races the poster
		DAT_DTO_COMPLETION_EVENT_DATA d;
		std::map<uint64_t, int> seen;
		for (int i = 0; i < 20 * (round + 1) && dto(c.dto, d); i++)
			seen[d.user_cookie.as_64]++;
		ASSERT_OK(dat_ep_disconnect(ce, DAT_CLOSE_ABRUPT_FLAG));
		stop = true;
		t.join();
		for (auto &e : drain(c.dto))
			seen[e.user_cookie.as_64]++;
		for (auto &[ck, n] : seen) {
			EXPECT_EQ(n, 1) << "cookie " << ck;
			EXPECT_TRUE(ok_posts.count(ck)) << "cookie " << ck;
		}
		EXPECT_EQ(seen.size(), ok_posts.size()) << "round " << round;
		ASSERT_OK(dat_ep_free(ce));
		ASSERT_OK(dat_ep_free(se));
		drain(s.dto);
		drain(s.conn);
		drain(c.conn);
	}
}

// A thread posting while the EP is freed (then the IA closed): no crash,
// no post completes twice, nothing leaks (the fixture counts objects).
TEST_F(SendRing, PostRacingFreeAndIaClose)
{
	open_one(4096);
	if (HasFatalFailure())
		return;
	for (int i = 0; i < 256; i++)
		ASSERT_OK(post_srq(4096 + (i % 64) * 64, 64, i));
	std::atomic<bool> stop{false};
	std::thread t([&] {
		for (uint64_t i = 0; !stop.load(); i++) {
			DAT_RETURN r = send(0, 8, i);
			if (DAT_GET_TYPE(r) == DAT_INVALID_HANDLE ||
			    DAT_GET_TYPE(r) == DAT_INVALID_STATE)
				break;
		}
	});
	DAT_DTO_COMPLETION_EVENT_DATA d;
	for (int i = 0; i < 10 && dto(c.dto, d); i++)
		;
	// A free that finds the poster's kick inside the EP is refused with
	// DAT_INVALID_STATE (the object layer's EBUSY) and destroys nothing:
	// the consumer tries again; the poster's next call is a new one.
	DAT_RETURN fr;
	while (DAT_GET_TYPE(fr = dat_ep_free(ce)) == DAT_INVALID_STATE)
		std::this_thread::yield();
	ASSERT_OK(fr);
	stop = true;
	t.join();
	std::map<uint64_t, int> seen;
	for (auto &e : drain(c.dto))
		seen[e.user_cookie.as_64]++;
	for (auto &[ck, n] : seen)
		EXPECT_EQ(n, 1) << "cookie " << ck;
	c.close();
}

// One post at a time, and two: each completes without anyone kicking
// but the library (the NEED_KICK protocol never strands a post, whether
// the completion that idles the queue races the post or not).
TEST_F(SendRing, KickWhenIdleNeverStrandsAPost)
{
	open_one(4096);
	if (HasFatalFailure())
		return;
	const int n = 1000;
	for (int i = 0; i < 3 * n; i++)
		ASSERT_OK(post_srq(4096 + (i % 64) * 64, 64, i));
	DAT_DTO_COMPLETION_EVENT_DATA d;
	for (int i = 0; i < n; i++) {
		ASSERT_OK(send(0, 8, i));
		ASSERT_TRUE(dto(c.dto, d)) << "post " << i << " stranded";
		ASSERT_EQ(d.user_cookie.as_64, (uint64_t)i);
	}
	for (int i = 0; i < n; i++) {
		ASSERT_OK(send(0, 8, 2 * i));
		ASSERT_OK(send(0, 8, 2 * i + 1));
		ASSERT_TRUE(dto(c.dto, d)) << "pair " << i << " stranded";
		ASSERT_EQ(d.user_cookie.as_64, (uint64_t)(2 * i));
		ASSERT_TRUE(dto(c.dto, d)) << "pair " << i << " stranded";
		ASSERT_EQ(d.user_cookie.as_64, (uint64_t)(2 * i + 1));
	}
}

// KDAT_EP_POST=ioctl: the EP gets no ring, posts work by ioctl.
TEST_F(SendRing, EnvironmentForcesTheIoctlPath)
{
	make_srq(64);
	if (HasFatalFailure())
		return;
	int before = count_send_rings();
	DAT_EP_ATTR a = ep_attr();
	a.max_request_dtos = kDepth;
	ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn, srq,
					 &a, &se));
	setenv("KDAT_EP_POST", "ioctl", 1);
	DAT_RETURN r = dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce);
	unsetenv("KDAT_EP_POST");
	ASSERT_OK(r);
	EXPECT_EQ(count_send_rings(), before + 1) << "only the server EP's";
	connect(se, ce, 3);
	if (HasFatalFailure())
		return;
	ASSERT_OK(post_srq(4096, 64, 1));
	ASSERT_OK(send(0, 32, 42));
	DAT_DTO_COMPLETION_EVENT_DATA d;
	ASSERT_TRUE(dto(c.dto, d));
	EXPECT_EQ(d.user_cookie.as_64, 42u);
	EXPECT_EQ(d.transfered_length, 32u);
}
