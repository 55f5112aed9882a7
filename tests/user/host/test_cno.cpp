// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Consumer Notification Objects, library side, against the protocol fake:
// what dat_cno_create, dat_evd_create's cno, dat_evd_modify_cno,
// dat_evd_enable/_disable, dat_cno_wait and dat_cno_free send to the
// kernel and how the library turns the answers into DAT results.  The
// trigger, the refusals and the races are the kernel's (kernel/cno.c) and
// are tested against the module in the guest (tests/user/guest/cno_test.cpp).
#include "test_util.hpp"

namespace {

class Cno : public FakeKernelTest {
protected:
	void SetUp() override
	{
		FakeKernelTest::SetUp();
		s.open("rxe0");
	}

	void TearDown() override
	{
		s.close();
		FakeKernelTest::TearDown();
	}

	DAT_CNO_HANDLE make_cno()
	{
		DAT_CNO_HANDLE c = nullptr;

		EXPECT_OK(dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &c));
		return c;
	}

	DAT_EVD_HANDLE make_evd(DAT_CNO_HANDLE c)
	{
		DAT_EVD_HANDLE e = nullptr;

		EXPECT_OK(dat_evd_create(s.ia, 8, c, DAT_EVD_SOFTWARE_FLAG, &e));
		return e;
	}

	Side s;
};

void agent_fn(DAT_PVOID, DAT_EVD_HANDLE) {}

} // namespace

TEST_F(Cno, CreateAsksTheKernelAndKeepsTheAgent)
{
	int data;
	DAT_OS_WAIT_PROXY_AGENT a = { &data, agent_fn };
	DAT_CNO_HANDLE c = nullptr;

	kernel.reset_counts();
	ASSERT_OK(dat_cno_create(s.ia, a, &c));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_CNO_CREATE));
	EXPECT_EQ(kid<kdat::Ia>(s.ia),
		  kernel.last<kdat_ioc_cno_create>(KDAT_IOC_CNO_CREATE).ia);
	DAT_HANDLE_TYPE t;
	ASSERT_OK(dat_get_handle_type(c, &t));
	EXPECT_EQ(DAT_HANDLE_TYPE_CNO, t);

	DAT_CNO_PARAM p = {};
	ASSERT_OK(dat_cno_query(c, DAT_CNO_FIELD_ALL, &p));
	EXPECT_EQ(s.ia, p.ia_handle);
	EXPECT_EQ(&data, p.agent.instance_data);
	EXPECT_EQ(&agent_fn, p.agent.proxy_agent_func);
	ASSERT_OK(dat_cno_modify_agent(c, DAT_OS_WAIT_PROXY_AGENT_NULL));
	ASSERT_OK(dat_cno_query(c, DAT_CNO_FIELD_AGENT, &p));
	EXPECT_EQ(nullptr, p.agent.proxy_agent_func);
	EXPECT_DAT(ARG(2), dat_cno_query(c, (DAT_CNO_PARAM_MASK)0x4, &p));
	EXPECT_DAT(ARG(3), dat_cno_query(c, DAT_CNO_FIELD_ALL, nullptr));
	EXPECT_DAT(ARG(3),
		   dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, nullptr));

	kernel.reset_counts();
	ASSERT_OK(dat_cno_free(c));
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ((std::uint32_t)KDAT_TYPE_CNO, f.type);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO), dat_cno_free(c));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO),
		   dat_cno_query(c, DAT_CNO_FIELD_ALL, &p));
}

TEST_F(Cno, AModuleWithoutCnosMakesNone)
{
	kernel.answer<kdat_ioc_version>(KDAT_IOC_VERSION, [](auto &v) {
		v.features &= ~KDAT_FEATURE_CNO;
		return (DAT_RETURN)DAT_SUCCESS;
	});
	DAT_CNO_HANDLE c = nullptr;
	kernel.reset_counts();
	EXPECT_DAT(E(DAT_NOT_IMPLEMENTED),
		   dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &c));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_CNO_CREATE));
	kernel.answer_raw(KDAT_IOC_VERSION, {});
}

TEST_F(Cno, EvdCreateAndModifyTellTheKernel)
{
	DAT_CNO_HANDLE c = make_cno(), c2 = make_cno();

	kernel.reset_counts();
	DAT_EVD_HANDLE e = make_evd(c);
	auto n = kernel.last<kdat_ioc_evd_notify>(KDAT_IOC_EVD_NOTIFY);
	EXPECT_EQ(kid<kdat::Evd>(e), n.evd);
	EXPECT_EQ(kid<kdat::Cno>(c), n.cno);
	EXPECT_EQ((std::uint32_t)KDAT_EVD_NOTIFY_ENABLED, n.flags);
	DAT_EVD_PARAM p;
	ASSERT_OK(dat_evd_query(e, DAT_EVD_FIELD_ALL, &p));
	EXPECT_EQ(c, p.cno_handle);

	/* disable / enable go to the kernel while there is a CNO */
	kernel.reset_counts();
	ASSERT_OK(dat_evd_disable(e));
	EXPECT_EQ(0u, kernel.last<kdat_ioc_evd_notify>(KDAT_IOC_EVD_NOTIFY).flags);
	ASSERT_OK(dat_evd_enable(e));
	EXPECT_EQ((std::uint32_t)KDAT_EVD_NOTIFY_ENABLED,
		  kernel.last<kdat_ioc_evd_notify>(KDAT_IOC_EVD_NOTIFY).flags);
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_EVD_NOTIFY));

	/* another CNO, then none */
	ASSERT_OK(dat_evd_modify_cno(e, c2));
	EXPECT_EQ(kid<kdat::Cno>(c2),
		  kernel.last<kdat_ioc_evd_notify>(KDAT_IOC_EVD_NOTIFY).cno);
	ASSERT_OK(dat_evd_modify_cno(e, DAT_HANDLE_NULL));
	EXPECT_EQ(0u, kernel.last<kdat_ioc_evd_notify>(KDAT_IOC_EVD_NOTIFY).cno);
	ASSERT_OK(dat_evd_query(e, DAT_EVD_FIELD_CNO, &p));
	EXPECT_EQ(nullptr, p.cno_handle);

	/* without a CNO the enable state stays the library's */
	kernel.reset_counts();
	ASSERT_OK(dat_evd_disable(e));
	ASSERT_OK(dat_evd_enable(e));
	ASSERT_OK(dat_evd_modify_cno(e, DAT_HANDLE_NULL));
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* the kernel's refusal is the call's answer; nothing changes */
	kernel.status_next(KDAT_IOC_EVD_NOTIFY,
			   E(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO), dat_evd_modify_cno(e, c));
	ASSERT_OK(dat_evd_query(e, DAT_EVD_FIELD_CNO, &p));
	EXPECT_EQ(nullptr, p.cno_handle);

	ASSERT_OK(dat_evd_free(e));
	ASSERT_OK(dat_cno_free(c));
	ASSERT_OK(dat_cno_free(c2));
}

TEST_F(Cno, BadCnoHandlesAreRefusedBeforeTheKernel)
{
	DAT_EVD_HANDLE e = make_evd(nullptr), x = nullptr;
	int junk;

	kernel.reset_counts();
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO),
		   dat_evd_create(s.ia, 8, (DAT_CNO_HANDLE)&junk,
				  DAT_EVD_SOFTWARE_FLAG, &x));
	/* an EVD is no CNO */
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO), dat_evd_modify_cno(e, e));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO), dat_cno_free(e));
	DAT_EVD_HANDLE got;
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO), dat_cno_wait(e, 0, &got));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO),
		   dat_cno_modify_agent(nullptr, DAT_OS_WAIT_PROXY_AGENT_NULL));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_IA),
		   dat_cno_create(&junk, DAT_OS_WAIT_PROXY_AGENT_NULL, &x));
	ASSERT_OK(dat_evd_free(e));
}

TEST_F(Cno, WaitReturnsTheEvdTheKernelNames)
{
	DAT_CNO_HANDLE c = make_cno();
	DAT_EVD_HANDLE e = make_evd(c), got = nullptr;
	const std::uint32_t ekid = kid<kdat::Evd>(e);

	kernel.answer<kdat_ioc_cno_wait>(KDAT_IOC_CNO_WAIT, [ekid](auto &w) {
		w.evd = ekid;
		return (DAT_RETURN)DAT_SUCCESS;
	});
	kernel.reset_counts();
	ASSERT_OK(dat_cno_wait(c, DAT_TIMEOUT_INFINITE, &got));
	EXPECT_EQ(e, got);
	auto w = kernel.last<kdat_ioc_cno_wait>(KDAT_IOC_CNO_WAIT);
	EXPECT_EQ(kid<kdat::Cno>(c), w.cno);
	EXPECT_EQ(0xffffffffu, w.timeout_us);

	/* an EVD freed since it triggered: no notification, time runs out */
	kernel.answer<kdat_ioc_cno_wait>(KDAT_IOC_CNO_WAIT, [](auto &w2) {
		w2.evd = 0;
		return (DAT_RETURN)DAT_SUCCESS;
	});
	EXPECT_DAT(E(DAT_TIMEOUT_EXPIRED), dat_cno_wait(c, 0, &got));

	/* the kernel's verdicts pass through */
	kernel.answer_raw(KDAT_IOC_CNO_WAIT, {});
	EXPECT_DAT(E(DAT_TIMEOUT_EXPIRED), dat_cno_wait(c, 1000, &got));
	EXPECT_LE(kernel.last<kdat_ioc_cno_wait>(KDAT_IOC_CNO_WAIT).timeout_us,
		  1000u);
	kernel.status_next(KDAT_IOC_CNO_WAIT, E(DAT_INTERRUPTED_CALL));
	EXPECT_DAT(E(DAT_INTERRUPTED_CALL), dat_cno_wait(c, 1000, &got));
	EXPECT_DAT(ARG(3), dat_cno_wait(c, 0, nullptr));

	/* the kernel refuses to free a CNO an EVD holds: it stays */
	kernel.status_next(KDAT_IOC_FREE,
			   E(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE),
		   dat_cno_free(c));
	DAT_CNO_PARAM p;
	EXPECT_OK(dat_cno_query(c, DAT_CNO_FIELD_ALL, &p));
	ASSERT_OK(dat_evd_free(e));
	ASSERT_OK(dat_cno_free(c));
}
