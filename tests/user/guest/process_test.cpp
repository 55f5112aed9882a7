// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// What only user space can do to the provider: other processes, killed
// processes, hostile shared memory, the memlock limit.
#include "fixture.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uapi/kdat_abi.h>

#include <set>

using namespace kt;

namespace {

// A raw /dev/kdat context, for what libdat would never send.
struct Raw {
	int fd = ::open("/dev/kdat", O_RDWR | O_CLOEXEC);
	std::vector<std::pair<void *, size_t>> maps;
	~Raw()
	{
		// a mapping keeps the file (and its objects) alive: unmap first
		for (auto &m : maps)
			::munmap(m.first, m.second);
		if (fd >= 0)
			::close(fd);
	}
	template <class T> DAT_RETURN ioc(unsigned long cmd, T &a)
	{
		a.hdr.size = sizeof(a);
		return ::ioctl(fd, cmd, &a) ? 0xffffffffu : a.hdr.status;
	}
	void *map(uint64_t off, uint64_t size)
	{
		void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, off);
		if (p == MAP_FAILED)
			return nullptr;
		maps.emplace_back(p, size);
		return p;
	}
};

int child_status(pid_t pid)
{
	int st = 0;
	::waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(Process, HandlesOfAnotherProcessAreInvalid)
{
	Raw a;
	ASSERT_GE(a.fd, 0);
	kdat_ioc_ia_open o{};
	std::strcpy(o.name, srv_ia());
	o.async_qlen = 8;
	ASSERT_OK(a.ioc(KDAT_IOC_IA_OPEN, o));
	kdat_ioc_pz_create p{};
	p.ia = o.ia;
	ASSERT_OK(a.ioc(KDAT_IOC_PZ_CREATE, p));

	pid_t pid = ::fork();
	if (pid == 0) {
		// a process with its own context names the parent's IDs
		Raw b;
		kdat_ioc_pz_create p2{};
		p2.ia = o.ia;
		kdat_ioc_free f{};
		f.handle = p.pz;
		f.type = 6; // kernel DAT_HANDLE_TYPE_PZ
		bool ok = b.fd >= 0 &&
			  DAT_GET_TYPE(b.ioc(KDAT_IOC_PZ_CREATE, p2)) ==
				  DAT_INVALID_HANDLE &&
			  DAT_GET_TYPE(b.ioc(KDAT_IOC_FREE, f)) ==
				  DAT_INVALID_HANDLE;
		// and through libdat: a handle value from elsewhere is unknown
		Side x;
		ok = ok && x.open(cli_ia(), 4096) == DAT_SUCCESS &&
		     DAT_GET_TYPE(dat_pz_free((DAT_PZ_HANDLE)(uintptr_t)0x1234560)) ==
			     DAT_INVALID_HANDLE;
		::_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(child_status(pid), 0);
	// the parent's objects are untouched
	kdat_ioc_free f{};
	f.handle = p.pz;
	f.type = 6;
	ASSERT_OK(a.ioc(KDAT_IOC_FREE, f));
}

// fork(): the child inherits the file but none of the parent's objects.
// Through libdat every inherited handle is DAT_INVALID_HANDLE (the SRQ
// post fast path included), through the raw ABI the kernel refuses the
// child's calls on the inherited file, the rings are not mapped in the
// child, and the child's own new IA works.
TEST(Process, ForkedChildCannotUseInheritedHandlesOrRings)
{
	Side x;
	ASSERT_OK(x.open(srv_ia(), 1 << 16));
	DAT_SRQ_ATTR sa = {16, 1, 0};
	DAT_SRQ_HANDLE srq;
	ASSERT_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	DAT_LMR_TRIPLET t = {x.lctx, 0, (DAT_VADDR)(uintptr_t)x.buf.get(), 256};
	DAT_DTO_COOKIE ck = {};
	ASSERT_OK(dat_srq_post_recv(srq, 1, &t, ck));	// caches the channel

	Raw a;
	ASSERT_GE(a.fd, 0);
	kdat_ioc_ia_open o{};
	std::strcpy(o.name, srv_ia());
	o.async_qlen = 8;
	ASSERT_OK(a.ioc(KDAT_IOC_IA_OPEN, o));
	void *ring = a.map(o.async_ring_offset, o.async_ring_size);
	ASSERT_NE(ring, nullptr);

	pid_t pid = ::fork();
	if (pid == 0) {
		int bad = 0;
		DAT_SRQ_PARAM p;
		unsigned char vec[1];

		if (DAT_GET_TYPE(dat_srq_post_recv(srq, 1, &t, ck)) !=
		    DAT_INVALID_HANDLE)
			bad |= 1;
		if (DAT_GET_TYPE(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p)) !=
		    DAT_INVALID_HANDLE)
			bad |= 2;
		if (DAT_GET_TYPE(dat_ia_close(x.ia, DAT_CLOSE_ABRUPT_FLAG)) !=
		    DAT_INVALID_HANDLE)
			bad |= 4;
		kdat_ioc_pz_create pz{};
		pz.ia = o.ia;
		if (DAT_GET_TYPE(a.ioc(KDAT_IOC_PZ_CREATE, pz)) !=
		    DAT_INVALID_HANDLE)
			bad |= 8;
		// VM_DONTCOPY: the parent's ring is not mapped here
		if (::mincore(ring, 4096, vec) == 0 || errno != ENOMEM)
			bad |= 16;
		if (::mmap(nullptr, o.async_ring_size, PROT_READ | PROT_WRITE,
			   MAP_SHARED, a.fd, o.async_ring_offset) != MAP_FAILED)
			bad |= 32;
		Side y;
		if (y.open(cli_ia(), 4096) != DAT_SUCCESS)
			bad |= 64;
		::_exit(bad);
	}
	ASSERT_EQ(child_status(pid), 0);
	// the parent's objects are untouched
	DAT_SRQ_PARAM p;
	ASSERT_OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p));
	EXPECT_EQ(p.available_dto_count, 1);
	ASSERT_OK(dat_srq_free(srq));
	kdat_ioc_ia_close c{};
	c.ia = o.ia;
	c.flags = DAT_CLOSE_ABRUPT_FLAG;
	ASSERT_OK(a.ioc(KDAT_IOC_IA_CLOSE, c));
}

TEST(Process, SigkillMidTrafficLeaksNothing)
{
	long baseline = live_objects();
	int pfd[2];
	ASSERT_EQ(::pipe(pfd), 0);
	pid_t pid = ::fork();
	if (pid == 0) {
		// a server and a client streaming through one SRQ, forever
		Side s, c;
		DAT_SRQ_ATTR sa{64, 1, 0};
		DAT_SRQ_HANDLE srq;
		DAT_PSP_HANDLE psp;
		DAT_EP_HANDLE se, ce;
		DAT_EP_ATTR a = ep_attr();
		DAT_EVENT ev;
		sockaddr_in sin{};
		if (s.open(srv_ia()) || c.open(cli_ia()) ||
		    dat_srq_create(s.ia, s.pz, &sa, &srq) ||
		    dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn, srq,
					   &a, &se) ||
		    dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce) ||
		    dat_psp_create(s.ia, 7001, s.cr, DAT_PSP_CONSUMER_FLAG, &psp))
			::_exit(2);
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = inet_addr(srv_addr());
		if (dat_ep_connect(ce, (DAT_IA_ADDRESS_PTR)&sin, 7001,
				   DAT_TIMEOUT_INFINITE, 0, nullptr,
				   DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG) ||
		    !wait_event(s.cr, &ev) ||
		    dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
				  se, 0, nullptr) ||
		    !wait_event(c.conn, &ev))
			::_exit(3);
		for (int i = 0; i < 64; i++) {
			DAT_LMR_TRIPLET t = s.seg(i * 64, 64);
			dat_srq_post_recv(srq, 1, &t, cookie(i));
		}
		(void)!::write(pfd[1], "r", 1);
		for (uint64_t n = 0;; n++) {
			DAT_LMR_TRIPLET t = c.seg(0, 32);
			dat_ep_post_send(ce, 1, &t, cookie(n),
					 DAT_COMPLETION_DEFAULT_FLAG);
			if (dat_evd_dequeue(s.dto, &ev) == DAT_SUCCESS) {
				DAT_LMR_TRIPLET r = s.seg(
					(ev.event_data.dto_completion_event_data
						 .user_cookie.as_64 % 64) * 64, 64);
				dat_srq_post_recv(srq, 1, &r,
						  ev.event_data.dto_completion_event_data
							  .user_cookie);
			}
			while (dat_evd_dequeue(c.dto, &ev) == DAT_SUCCESS)
				;
		}
	}
	char ch;
	ASSERT_EQ(::read(pfd[0], &ch, 1), 1) << "child never got going";
	EXPECT_GT(live_objects(), baseline);
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	::kill(pid, SIGKILL);
	EXPECT_EQ(child_status(pid), 128 + SIGKILL);
	EXPECT_TRUE(wait_for([&] { return live_objects() == baseline; }))
		<< live_objects() << " objects left after SIGKILL";
}

TEST(Process, CorruptedRingsGiveErrorEventsNotCrashes)
{
	long baseline = live_objects();
	{
		Raw r;
		kdat_ioc_ia_open o{};
		std::strcpy(o.name, srv_ia());
		o.async_qlen = 256;
		ASSERT_OK(r.ioc(KDAT_IOC_IA_OPEN, o));
		auto *ah = static_cast<kdat_ring_hdr *>(
			r.map(o.async_ring_offset, o.async_ring_size));
		ASSERT_NE(ah, nullptr);
		kdat_ioc_pz_create p{};
		p.ia = o.ia;
		ASSERT_OK(r.ioc(KDAT_IOC_PZ_CREATE, p));
		std::vector<char> mem(65536);
		kdat_ioc_lmr_create l{};
		l.ia = o.ia, l.pz = p.pz, l.addr = (uintptr_t)mem.data();
		l.length = mem.size();
		l.priv = DAT_MEM_PRIV_LOCAL_WRITE_FLAG;
		ASSERT_OK(r.ioc(KDAT_IOC_LMR_CREATE, l));
		kdat_ioc_srq_create sc{};
		sc.ia = o.ia, sc.pz = p.pz, sc.max_recv_dtos = 16;
		sc.max_recv_iov = 1;
		ASSERT_OK(r.ioc(KDAT_IOC_SRQ_CREATE, sc));
		auto *sh = static_cast<kdat_ring_hdr *>(
			r.map(sc.ring_offset, sc.ring_size));
		ASSERT_NE(sh, nullptr);
		auto entry = [&](uint32_t i) {
			return reinterpret_cast<kdat_srq_wqe *>(
				reinterpret_cast<char *>(sh) + sh->entry_offset +
				(i & (sh->entries - 1)) * sh->entry_size);
		};
		// bad context, overlong segment, too many segments, good one
		kdat_srq_wqe *w = entry(0);
		w->cookie = 1, w->nseg = 1, w->seg[0] = {0x7777, 0, 0, 64};
		w = entry(1);
		w->cookie = 2, w->nseg = 1;
		w->seg[0] = {l.lmr_context, 0, (uintptr_t)mem.data(), 1u << 30};
		w = entry(2);
		w->cookie = 3, w->nseg = 1000;
		w = entry(3);
		w->cookie = 4, w->nseg = 1;
		w->seg[0] = {l.lmr_context, 0, (uintptr_t)mem.data(), 64};
		__atomic_store_n(&sh->tail, 4u, __ATOMIC_RELEASE);
		kdat_ioc_srq_query q{};
		q.srq = sc.srq, q.mask = DAT_SRQ_FIELD_ALL;
		ASSERT_OK(r.ioc(KDAT_IOC_SRQ_QUERY, q));
		EXPECT_EQ(q.available_dto_count, 1) << "only the good one posted";
		std::set<uint64_t> refused;
		while (ah->head != __atomic_load_n(&ah->tail, __ATOMIC_ACQUIRE)) {
			auto *e = reinterpret_cast<kdat_uevent *>(
				reinterpret_cast<char *>(ah) + ah->entry_offset +
				(ah->head & (ah->entries - 1)) * ah->entry_size);
			EXPECT_EQ(e->handle, sc.srq);
			EXPECT_EQ(e->reason, (uint32_t)DAT_SRQ_OTHER_ERROR);
			refused.insert(e->cookie);
			__atomic_store_n(&ah->head, ah->head + 1,
					 __ATOMIC_RELEASE);
		}
		EXPECT_EQ(refused, (std::set<uint64_t>{1, 2, 3}));
		// garbage indices: a tail far ahead is clamped to one ring
		__atomic_store_n(&sh->tail, 4u + 1000000000u, __ATOMIC_RELEASE);
		ASSERT_OK(r.ioc(KDAT_IOC_SRQ_QUERY, q));
		EXPECT_LE(q.available_dto_count, 16);
		// a head beyond the event ring's tail consumes nothing
		__atomic_store_n(&ah->head, ah->head + 12345u, __ATOMIC_RELEASE);
		ASSERT_OK(r.ioc(KDAT_IOC_SRQ_QUERY, q));
		// unknown ioctls and unknown trailing bytes are refused
		kdat_ioc_version v{};
		EXPECT_EQ(::ioctl(r.fd, _IOWR(0xDA, 0x7f, kdat_ioc_version), &v),
			  -1);
		EXPECT_EQ(errno, ENOTTY);
		struct {
			kdat_ioc_version v;
			uint64_t extra;
		} big{};
		big.v.hdr.size = sizeof(big);
		big.extra = 1;
		EXPECT_EQ(::ioctl(r.fd, KDAT_IOC_VERSION, &big), -1);
		EXPECT_EQ(errno, E2BIG);
	} // closing the file frees everything
	EXPECT_TRUE(wait_for([&] { return live_objects() == baseline; }));
}

TEST(Process, MemlockLimitIsHonoured)
{
	long baseline = live_objects();
	pid_t pid = ::fork();
	if (pid == 0) {
		Side x;
		if (x.open(srv_ia(), 4096))
			::_exit(2);
		// an unprivileged process with a 64 KiB memlock limit
		rlimit rl{64 << 10, 64 << 10};
		if (::setrlimit(RLIMIT_MEMLOCK, &rl) || ::setgid(65534) ||
		    ::setuid(65534))
			::_exit(3);
		size_t big = 4 << 20;
		void *m = std::aligned_alloc(4096, big);
		std::memset(m, 1, big);
		DAT_LMR_HANDLE l;
		DAT_LMR_CONTEXT ctx;
		DAT_RETURN r = x.register_mem(x.pz, m, big,
					      DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &l,
					      &ctx);
		if (DAT_GET_TYPE(r) != DAT_INSUFFICIENT_RESOURCES)
			::_exit(4);
		// within the limit it works
		r = x.register_mem(x.pz, m, 16 << 10,
				   DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &l, &ctx);
		::_exit(r == DAT_SUCCESS ? 0 : 5);
	}
	EXPECT_EQ(child_status(pid), 0);
	EXPECT_TRUE(wait_for([&] { return live_objects() == baseline; }));
}

// A software-event EVD of 8 entries on @s, opened on the server IA.
DAT_EVD_HANDLE software_evd(Side &s)
{
	DAT_EVD_HANDLE sw = DAT_HANDLE_NULL;
	EXPECT_EQ(s.open(srv_ia(), 4096), (DAT_RETURN)DAT_SUCCESS);
	EXPECT_EQ(dat_evd_create(s.ia, 8, DAT_HANDLE_NULL,
				 DAT_EVD_SOFTWARE_FLAG, &sw),
		  (DAT_RETURN)DAT_SUCCESS);
	return sw;
}

DAT_RETURN post_software_event(DAT_EVD_HANDLE evd, void *pointer)
{
	DAT_EVENT ev{};
	ev.event_number = DAT_SOFTWARE_EVENT;
	ev.event_data.software_event_data.pointer = pointer;
	return dat_evd_post_se(evd, &ev);
}

TEST(Process, PollReportsEvents)
{
	Side s;
	DAT_EVD_HANDLE sw = software_evd(s);
	int x;
	ASSERT_OK(post_software_event(sw, &x));
	DAT_EVENT got;
	ASSERT_TRUE(wait_event(sw, &got));
	EXPECT_EQ(got.event_number, DAT_SOFTWARE_EVENT);
	EXPECT_EQ(got.event_data.software_event_data.pointer, &x);
	DAT_COUNT more;
	EXPECT_EQ(DAT_GET_TYPE(dat_evd_wait(sw, 1000, 1, &got, &more)),
		  (DAT_RETURN)DAT_TIMEOUT_EXPIRED);
}

// One dat_evd_wait(forever) in its own thread: its result, its event and
// how often the thread went to sleep (voluntary context switches).
struct Waiter {
	DAT_RETURN r = DAT_SUCCESS;
	DAT_EVENT ev{};
	long sleeps = 0;
	std::thread t;

	explicit Waiter(DAT_EVD_HANDLE evd)
		: t([this, evd] {
			  DAT_COUNT more;
			  long before = nvcsw();
			  r = dat_evd_wait(evd, DAT_TIMEOUT_INFINITE, 1, &ev,
					   &more);
			  sleeps = nvcsw() - before;
		  })
	{
	}
	static long nvcsw()
	{
		struct rusage ru = {};
		::getrusage(RUSAGE_THREAD, &ru);
		return ru.ru_nvcsw;
	}
};

/*
 * dat_evd_wait sleeps in the kernel, once, for as long as it must: a
 * waiter woken by another thread's dat_evd_set_unwaitable after 400 ms
 * slept about once (a library that polled in slices would have slept
 * several times) and returns DAT_INVALID_STATE; a waiter woken by an
 * event the same, with DAT_SUCCESS.
 */
TEST(Process, EvdWaitSleepsInTheKernelUntilWoken)
{
	Side s;
	DAT_EVD_HANDLE sw = software_evd(s);

	Waiter w1(sw);
	std::this_thread::sleep_for(std::chrono::milliseconds(400));
	EXPECT_EQ(dat_evd_set_unwaitable(sw), (DAT_RETURN)DAT_SUCCESS);
	w1.t.join();
	EXPECT_EQ(DAT_GET_TYPE(w1.r), (DAT_RETURN)DAT_INVALID_STATE);
	EXPECT_EQ(DAT_GET_SUBTYPE(w1.r),
		  (DAT_RETURN)DAT_INVALID_STATE_EVD_UNWAITABLE);
	EXPECT_LE(w1.sleeps, 2) << "the waiter woke up " << w1.sleeps << " times";
	ASSERT_OK(dat_evd_clear_unwaitable(sw));

	Waiter w2(sw);
	std::this_thread::sleep_for(std::chrono::milliseconds(400));
	int x;
	EXPECT_EQ(post_software_event(sw, &x), (DAT_RETURN)DAT_SUCCESS);
	w2.t.join();
	ASSERT_OK(w2.r);
	EXPECT_EQ(w2.ev.event_data.software_event_data.pointer, &x);
	EXPECT_LE(w2.sleeps, 2) << "the waiter woke up " << w2.sleeps << " times";
	ASSERT_OK(dat_evd_free(sw));
}

} // namespace
