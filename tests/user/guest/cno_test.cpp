// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Consumer Notification Objects on the real module (kernel/cno.c): the
// kernel triggers a CNO where it writes an event to an enabled EVD of it
// that no dat_evd_wait waits on; dat_cno_wait returns that EVD.  Exact
// return codes, the trigger on software events and on DTO completions,
// no trigger while disabled or while waited on, two EVDs on one CNO, the
// refused free, bad handles, and the races: a wait against a post, a
// free, an IA close, and a process that dies (or closes /dev/kdat) while
// a thread is in dat_cno_wait.
#include <dat/dat_kdat.h>
#include <uapi/kdat_abi.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "fixture.hpp"

using namespace kt;

namespace {

#define EXPECT_RET(want, expr) EXPECT_EQ((DAT_RETURN)(want), (DAT_RETURN)(expr))
#define ASSERT_RET(want, expr) ASSERT_EQ((DAT_RETURN)(want), (DAT_RETURN)(expr))

constexpr DAT_RETURN kTimeout = DAT_ERROR(DAT_TIMEOUT_EXPIRED, 0);

/*
 * Is thread @tid of process @pid asleep inside ioctl()?  The kernel
 * decides a CNO wait and an EVD wait in the ioctl before it sleeps, so a
 * thread seen here is past that point (no sleep as synchronisation: we
 * look at what the kernel says the thread is doing).
 */
bool asleep_in_ioctl(pid_t pid, pid_t tid)
{
	std::string base = "/proc/" + std::to_string(pid) + "/task/" +
			   std::to_string(tid);
	std::ifstream st(base + "/stat");
	std::string s((std::istreambuf_iterator<char>(st)),
		      std::istreambuf_iterator<char>());
	auto p = s.rfind(')');
	if (p == std::string::npos || p + 2 >= s.size() || s[p + 2] != 'S')
		return false;
	std::ifstream sc(base + "/syscall");
	long nr = -1;
	sc >> nr;
	return nr == SYS_ioctl;
}

class Cno : public ::testing::Test {
protected:
	Side s;
	long baseline = 0;

	void SetUp() override
	{
		baseline = live_objects();
		ASSERT_OK(s.open(srv_ia(), 4096));
	}

	void TearDown() override
	{
		s.close();
		EXPECT_TRUE(wait_for([&] { return live_objects() == baseline; }))
			<< live_objects() << " live objects, expected " << baseline;
	}

	DAT_CNO_HANDLE cno(DAT_IA_HANDLE ia = DAT_HANDLE_NULL)
	{
		DAT_CNO_HANDLE c = DAT_HANDLE_NULL;
		EXPECT_RET(DAT_SUCCESS,
			   dat_cno_create(ia ? ia : s.ia,
					  DAT_OS_WAIT_PROXY_AGENT_NULL, &c));
		return c;
	}

	DAT_EVD_HANDLE sw_evd(DAT_CNO_HANDLE c)
	{
		DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
		EXPECT_RET(DAT_SUCCESS, dat_evd_create(s.ia, 16, c,
						       DAT_EVD_SOFTWARE_FLAG, &e));
		return e;
	}

	static DAT_RETURN post(DAT_EVD_HANDLE e, void *p = nullptr)
	{
		DAT_EVENT ev{};
		ev.event_number = DAT_SOFTWARE_EVENT;
		ev.event_data.software_event_data.pointer = p;
		return dat_evd_post_se(e, &ev);
	}

	static void drain(DAT_EVD_HANDLE e)
	{
		DAT_EVENT ev;
		while (dat_evd_dequeue(e, &ev) == DAT_SUCCESS)
			;
	}
};

} // namespace

TEST_F(Cno, SoftwareEventTriggersAndWaitNamesTheEvd)
{
	DAT_CNO_HANDLE c = cno();
	DAT_EVD_HANDLE e = sw_evd(c), got = DAT_HANDLE_NULL;

	/* nothing yet: the timeout, exactly, also for a zero timeout */
	EXPECT_RET(kTimeout, dat_cno_wait(c, 0, &got));
	EXPECT_RET(kTimeout, dat_cno_wait(c, 20000, &got));
	ASSERT_RET(DAT_SUCCESS, post(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_wait(c, 10000000, &got));
	EXPECT_EQ(e, got);
	/* the event is still the EVD's */
	DAT_EVENT ev;
	ASSERT_RET(DAT_SUCCESS, dat_evd_dequeue(e, &ev));
	EXPECT_EQ(DAT_SOFTWARE_EVENT, ev.event_number);
	/* trigger taken, EVD empty: nothing to return for */
	EXPECT_RET(kTimeout, dat_cno_wait(c, 20000, &got));

	/* events left after the trigger was taken still count */
	ASSERT_RET(DAT_SUCCESS, post(e));
	ASSERT_RET(DAT_SUCCESS, post(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_wait(c, 0, &got));
	EXPECT_EQ(e, got);
	ASSERT_RET(DAT_SUCCESS, dat_evd_dequeue(e, &ev));
	ASSERT_RET(DAT_SUCCESS, dat_cno_wait(c, 0, &got));
	EXPECT_EQ(e, got);
	drain(e);
	EXPECT_RET(kTimeout, dat_cno_wait(c, 0, &got));

	DAT_EVD_PARAM p;
	ASSERT_RET(DAT_SUCCESS, dat_evd_query(e, DAT_EVD_FIELD_ALL, &p));
	EXPECT_EQ(c, p.cno_handle);
	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(c));
}

TEST_F(Cno, TwoEvdsOnOneCnoEachNamedWhenItFires)
{
	DAT_CNO_HANDLE c = cno();
	DAT_EVD_HANDLE e1 = sw_evd(c), e2 = sw_evd(DAT_HANDLE_NULL), got;

	/* e2 joins through dat_evd_modify_cno */
	ASSERT_RET(DAT_SUCCESS, dat_evd_modify_cno(e2, c));
	for (int round = 0; round < 3; round++) {
		ASSERT_RET(DAT_SUCCESS, post(e2));
		ASSERT_RET(DAT_SUCCESS, dat_cno_wait(c, 10000000, &got));
		EXPECT_EQ(e2, got);
		drain(e2);
		ASSERT_RET(DAT_SUCCESS, post(e1));
		ASSERT_RET(DAT_SUCCESS, dat_cno_wait(c, 10000000, &got));
		EXPECT_EQ(e1, got);
		drain(e1);
	}
	/* detached (DAT_HANDLE_NULL): its events trigger nothing */
	ASSERT_RET(DAT_SUCCESS, dat_evd_modify_cno(e2, DAT_HANDLE_NULL));
	ASSERT_RET(DAT_SUCCESS, post(e2));
	EXPECT_RET(kTimeout, dat_cno_wait(c, 20000, &got));
	/* a trigger withdrawn with its EVD: e1 fires, then leaves the CNO */
	ASSERT_RET(DAT_SUCCESS, post(e1));
	ASSERT_RET(DAT_SUCCESS, dat_evd_modify_cno(e1, DAT_HANDLE_NULL));
	EXPECT_RET(kTimeout, dat_cno_wait(c, 20000, &got));
	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e1));
	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e2));
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(c));
}

TEST_F(Cno, NoTriggerWhileDisabled)
{
	DAT_CNO_HANDLE c = cno();
	DAT_EVD_HANDLE e = sw_evd(c), got;

	ASSERT_RET(DAT_SUCCESS, dat_evd_disable(e));
	ASSERT_RET(DAT_SUCCESS, post(e));
	EXPECT_RET(kTimeout, dat_cno_wait(c, 20000, &got));
	/* enabled again with an event queued: the CNO sees it */
	ASSERT_RET(DAT_SUCCESS, dat_evd_enable(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_wait(c, 0, &got));
	EXPECT_EQ(e, got);
	drain(e);
	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(c));
}

TEST_F(Cno, NoTriggerWhileAnEvdWaitWaits)
{
	DAT_CNO_HANDLE c = cno();
	DAT_EVD_HANDLE e = sw_evd(c), got;
	std::atomic<pid_t> tid{0};
	DAT_RETURN wr = DAT_INTERNAL_ERROR;
	DAT_COUNT more = -1;
	DAT_EVENT ev;

	std::thread w([&] {
		tid = (pid_t)::syscall(SYS_gettid);
		wr = dat_evd_wait(e, DAT_TIMEOUT_INFINITE, 2, &ev, &more);
	});
	ASSERT_TRUE(wait_for([&] { return tid && asleep_in_ioctl(getpid(), tid); }));
	ASSERT_RET(DAT_SUCCESS, post(e));
	/* the EVD is waited on: its event is the waiter's, no trigger */
	EXPECT_RET(kTimeout, dat_cno_wait(c, 50000, &got));
	ASSERT_RET(DAT_SUCCESS, post(e));
	w.join();
	ASSERT_RET(DAT_SUCCESS, wr);
	EXPECT_EQ(1, more);
	/* the waiter left one event behind: the EVD counts again */
	ASSERT_RET(DAT_SUCCESS, dat_cno_wait(c, 10000000, &got));
	EXPECT_EQ(e, got);
	drain(e);
	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(c));
}

TEST_F(Cno, FreeRefusedWhileAnEvdHoldsIt)
{
	DAT_CNO_HANDLE c = cno();
	DAT_EVD_HANDLE e = sw_evd(c);

	EXPECT_RET(DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE),
		   dat_cno_free(c));
	/* still a CNO */
	DAT_CNO_PARAM p;
	ASSERT_RET(DAT_SUCCESS, dat_cno_query(c, DAT_CNO_FIELD_ALL, &p));
	EXPECT_EQ(s.ia, p.ia_handle);
	ASSERT_RET(DAT_SUCCESS, dat_evd_modify_cno(e, DAT_HANDLE_NULL));
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(c));
	EXPECT_RET(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO),
		   dat_cno_free(c));

	/* freeing the EVD lets the CNO go too */
	c = cno();
	ASSERT_RET(DAT_SUCCESS, dat_evd_modify_cno(e, c));
	EXPECT_RET(DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE),
		   dat_cno_free(c));
	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(c));
	EXPECT_EQ(0, kdat_counter("cno")) << "no CNO left behind";
}

/*
 * The IA's async EVD may hold a CNO too.  An abrupt close frees the
 * async EVD last, after the CNOs: the CNO must not stay behind (it was
 * refused as in use, and the IA leaked with it).
 */
TEST_F(Cno, AnAsyncEvdsCnoGoesWithAnAbruptClose)
{
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	ASSERT_RET(DAT_SUCCESS, dat_ia_query(s.ia, &async, 0, nullptr, 0,
					      nullptr));
	ASSERT_NE(DAT_HANDLE_NULL, async);
	DAT_CNO_HANDLE c = cno();
	ASSERT_RET(DAT_SUCCESS, dat_evd_modify_cno(async, c));
	EXPECT_RET(DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE),
		   dat_cno_free(c));
	ASSERT_RET(DAT_SUCCESS, dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
	s.ia = DAT_HANDLE_NULL;
	EXPECT_TRUE(wait_for([&] { return live_objects() == baseline; }))
		<< live_objects() << " live objects, expected " << baseline;
	EXPECT_EQ(0, kdat_counter("cno")) << "no CNO left behind";
}

TEST_F(Cno, BadHandlesAndExactCodes)
{
	DAT_CNO_HANDLE c = cno();
	DAT_EVD_HANDLE e = sw_evd(DAT_HANDLE_NULL), x = DAT_HANDLE_NULL, got;
	const DAT_RETURN bad_cno =
		DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
	int junk;

	EXPECT_RET(bad_cno, dat_cno_wait((DAT_CNO_HANDLE)&junk, 0, &got));
	EXPECT_RET(bad_cno, dat_cno_wait(e, 0, &got));
	EXPECT_RET(bad_cno, dat_evd_modify_cno(e, (DAT_CNO_HANDLE)&junk));
	EXPECT_RET(bad_cno, dat_evd_modify_cno(e, e));
	EXPECT_RET(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3),
		   dat_cno_wait(c, 0, nullptr));
	EXPECT_RET(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA),
		   dat_cno_create((DAT_IA_HANDLE)&junk,
				  DAT_OS_WAIT_PROXY_AGENT_NULL, &c));

	/* a CNO of another IA is no CNO for this IA's EVDs */
	Side o;
	ASSERT_OK(o.open(cli_ia(), 4096));
	DAT_CNO_HANDLE oc = cno(o.ia);
	EXPECT_RET(bad_cno, dat_evd_modify_cno(e, oc));
	EXPECT_RET(bad_cno, dat_evd_create(s.ia, 8, oc, DAT_EVD_SOFTWARE_FLAG,
					   &x));
	/* a freed CNO is no CNO */
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(oc));
	EXPECT_RET(bad_cno, dat_cno_wait(oc, 0, &got));
	EXPECT_RET(bad_cno, dat_evd_modify_cno(e, oc));
	o.close();

	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(c));
}

/* The raw ABI: the kernel checks what a library would never send. */
TEST_F(Cno, KernelRefusesForeignAndWrongIds)
{
	int fd = -1;
	ASSERT_RET(DAT_SUCCESS, dat_kdat_get_fd(s.ia, &fd));
	kdat_ioc_evd_notify n{};
	n.hdr.size = sizeof(n);
	n.evd = 0x7fffffff;
	ASSERT_EQ(0, ::ioctl(fd, KDAT_IOC_EVD_NOTIFY, &n));
	EXPECT_RET(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_ASYNC),
		   n.hdr.status);
	kdat_ioc_cno_wait w{};
	w.hdr.size = sizeof(w);
	w.cno = 0x7fffffff;
	ASSERT_EQ(0, ::ioctl(fd, KDAT_IOC_CNO_WAIT, &w));
	EXPECT_RET(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO),
		   w.hdr.status);
	w.pad = 1;
	EXPECT_EQ(-1, ::ioctl(fd, KDAT_IOC_CNO_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(Cno, DtoCompletionsTrigger)
{
	Side c;
	ASSERT_OK(c.open(cli_ia()));
	DAT_CNO_HANDLE sc = cno(), cc = cno(c.ia);
	ASSERT_RET(DAT_SUCCESS, dat_evd_modify_cno(s.dto, sc));
	ASSERT_RET(DAT_SUCCESS, dat_evd_modify_cno(c.dto, cc));

	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE se, ce;
	ASSERT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &a, &se));
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce));
	DAT_PSP_HANDLE psp;
	ASSERT_OK(dat_psp_create(s.ia, 7345, s.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	DAT_LMR_TRIPLET rt = s.seg(0, 64);
	ASSERT_OK(dat_ep_post_recv(se, 1, &rt, cookie(1),
				   DAT_COMPLETION_DEFAULT_FLAG));
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = inet_addr(srv_addr());
	ASSERT_OK(dat_ep_connect(ce, (DAT_IA_ADDRESS_PTR)&sin, 7345,
				 DAT_TIMEOUT_INFINITE, 0, nullptr,
				 DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.cr, &ev));
	ASSERT_OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
				se, 0, nullptr));
	ASSERT_TRUE(wait_event(s.conn, &ev));
	ASSERT_TRUE(wait_event(c.conn, &ev));

	DAT_LMR_TRIPLET st = c.seg(0, 64);
	ASSERT_OK(dat_ep_post_send(ce, 1, &st, cookie(2),
				   DAT_COMPLETION_DEFAULT_FLAG));
	DAT_EVD_HANDLE got = DAT_HANDLE_NULL;
	/* the send's completion on the client, the receive's on the server */
	ASSERT_RET(DAT_SUCCESS, dat_cno_wait(cc, 10000000, &got));
	EXPECT_EQ(c.dto, got);
	ASSERT_RET(DAT_SUCCESS, dat_evd_dequeue(c.dto, &ev));
	EXPECT_EQ(DAT_DTO_COMPLETION_EVENT, ev.event_number);
	EXPECT_EQ(2u, ev.event_data.dto_completion_event_data.user_cookie.as_64);
	ASSERT_RET(DAT_SUCCESS, dat_cno_wait(sc, 10000000, &got));
	EXPECT_EQ(s.dto, got);
	ASSERT_RET(DAT_SUCCESS, dat_evd_dequeue(s.dto, &ev));
	EXPECT_EQ(1u, ev.event_data.dto_completion_event_data.user_cookie.as_64);
	EXPECT_EQ(64u, ev.event_data.dto_completion_event_data.transfered_length);
	c.close();
}

/* A waiter against a poster, many times: every wait returns the EVD. */
TEST_F(Cno, RaceWaitAgainstPost)
{
	DAT_CNO_HANDLE c = cno();
	DAT_EVD_HANDLE e = sw_evd(c);

	for (int i = 0; i < 200; i++) {
		DAT_EVD_HANDLE got = DAT_HANDLE_NULL;
		DAT_RETURN r = DAT_INTERNAL_ERROR;
		std::thread w([&] {
			r = dat_cno_wait(c, DAT_TIMEOUT_INFINITE, &got);
		});
		ASSERT_RET(DAT_SUCCESS, post(e));
		w.join();
		ASSERT_RET(DAT_SUCCESS, r) << "round " << i;
		ASSERT_EQ(e, got);
		drain(e);
	}
	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e));
	ASSERT_RET(DAT_SUCCESS, dat_cno_free(c));
}

/*
 * A thread sleeps in dat_cno_wait: its EVD is freed (the waiter sleeps
 * on), the CNO's free is refused (in use by the waiter), and closing the
 * IA wakes it with DAT_INVALID_STATE_CNO_DEAD.
 */
TEST_F(Cno, RaceWaiterAgainstEvdFreeCnoFreeAndIaClose)
{
	DAT_CNO_HANDLE c = cno();
	DAT_EVD_HANDLE e = sw_evd(c);
	std::atomic<pid_t> tid{0};
	DAT_RETURN r = DAT_INTERNAL_ERROR;
	DAT_EVD_HANDLE got = DAT_HANDLE_NULL;

	std::thread w([&] {
		tid = (pid_t)::syscall(SYS_gettid);
		r = dat_cno_wait(c, DAT_TIMEOUT_INFINITE, &got);
	});
	ASSERT_TRUE(wait_for([&] { return tid && asleep_in_ioctl(getpid(), tid); }));
	ASSERT_RET(DAT_SUCCESS, dat_evd_free(e));
	EXPECT_RET(DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE),
		   dat_cno_free(c));
	EXPECT_TRUE(asleep_in_ioctl(getpid(), tid));
	ASSERT_RET(DAT_SUCCESS, dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
	s.ia = DAT_HANDLE_NULL;
	w.join();
	EXPECT_RET(DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_DEAD), r);
	EXPECT_EQ(DAT_HANDLE_NULL, got);
}

/*
 * A process dies while a thread sleeps in dat_cno_wait: killed, or
 * closing /dev/kdat and exiting from another thread.  Everything it made
 * is gone afterwards.
 */
TEST_F(Cno, ProcessDiesOrClosesTheDeviceDuringAWait)
{
	for (int how = 0; how < 2; how++) {
		int ready[2];
		ASSERT_EQ(0, ::pipe(ready));
		pid_t pid = ::fork();
		if (pid == 0) {
			::close(ready[0]);
			Side x;
			DAT_CNO_HANDLE cx;
			DAT_EVD_HANDLE ex, got;
			if (x.open(cli_ia(), 4096) ||
			    dat_cno_create(x.ia, DAT_OS_WAIT_PROXY_AGENT_NULL,
					   &cx) ||
			    dat_evd_create(x.ia, 8, cx, DAT_EVD_SOFTWARE_FLAG,
					   &ex))
				::_exit(2);
			/* made: what sleeps in an ioctl now is the CNO wait */
			if (::write(ready[1], "r", 1) != 1)
				::_exit(5);
			if (how == 1) {
				int fd = -1;
				pid_t main_tid = (pid_t)::syscall(SYS_gettid);
				if (dat_kdat_get_fd(x.ia, &fd))
					::_exit(3);
				std::thread([fd, main_tid] {
					while (!asleep_in_ioctl(getpid(), main_tid))
						std::this_thread::yield();
					::close(fd);
					::_exit(0);
				}).detach();
			}
			dat_cno_wait(cx, DAT_TIMEOUT_INFINITE, &got);
			::_exit(4);	/* the wait must never return */
		}
		ASSERT_GT(pid, 0);
		::close(ready[1]);
		char b;
		ASSERT_EQ(1, ::read(ready[0], &b, 1));
		::close(ready[0]);
		if (how == 0) {
			ASSERT_TRUE(wait_for([&] { return asleep_in_ioctl(pid, pid); }));
			::kill(pid, SIGKILL);
		}
		int st = 0;
		ASSERT_EQ(pid, ::waitpid(pid, &st, 0));
		if (how == 0)
			EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		else
			EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
	}
}
