// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Reserved Service Points through libdat against the real module: the
// reserved EP's states as the kernel keeps them, the request naming the
// RSP and its EP, dat_cr_accept with a NULL EP, the codes of what a
// reserved EP refuses, and what a process leaves behind when it exits
// with RSPs (the leak check of the fixture).
#include "fixture.hpp"

#include <sys/wait.h>
#include <unistd.h>

using namespace kt;

namespace {

#define EXPECT_EXACT(expr, want) \
	EXPECT_EQ((DAT_RETURN)(expr), (DAT_RETURN)(want)) << #expr

class Rsp : public Pair {
protected:
	DAT_EP_HANDLE plain_ep(Side &x)
	{
		DAT_EP_ATTR a = ep_attr();
		DAT_EP_HANDLE e = DAT_HANDLE_NULL;
		EXPECT_EQ(dat_ep_create(x.ia, x.pz, x.dto, x.dto, x.conn, &a, &e),
			  (DAT_RETURN)DAT_SUCCESS);
		return e;
	}

	static DAT_EP_STATE state(DAT_EP_HANDLE e)
	{
		DAT_EP_PARAM p{};
		if (dat_ep_query(e, DAT_EP_FIELD_EP_STATE, &p) != DAT_SUCCESS)
			return (DAT_EP_STATE)-1;
		return p.ep_state;
	}

	DAT_RETURN connect_to(DAT_EP_HANDLE ce, DAT_CONN_QUAL q,
			      const void *pdata = nullptr, DAT_COUNT n = 0)
	{
		sockaddr_in sin{};
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = inet_addr(srv_addr());
		return dat_ep_connect(ce, (DAT_IA_ADDRESS_PTR)&sin, q,
				      DAT_TIMEOUT_INFINITE, n, (DAT_PVOID)pdata,
				      DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
	}
};

const DAT_RETURN kReserved =
	DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_RESERVED);
const DAT_RETURN kTentative =
	DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_TENTCONNPENDING);

} // namespace

// The dapltest -T T -r flow: receives posted, an RSP on the EP, the
// request names the RSP, accept with NULL, data, the RSP freed after.
TEST_F(Rsp, RequestNamesTheRspAndNullAcceptConnectsTheReservedEp)
{
	DAT_EP_HANDLE se = plain_ep(s), other = plain_ep(s), ce = plain_ep(c);
	const DAT_CONN_QUAL q = ++qual;
	DAT_LMR_TRIPLET rt = s.seg(0, 64);
	ASSERT_OK(dat_ep_post_recv(se, 1, &rt, cookie(11),
				   DAT_COMPLETION_DEFAULT_FLAG));

	DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL, rsp2;
	ASSERT_OK(dat_rsp_create(s.ia, q, se, s.cr, &rsp));
	DAT_HANDLE_TYPE t;
	ASSERT_OK(dat_get_handle_type(rsp, &t));
	EXPECT_EQ(t, DAT_HANDLE_TYPE_RSP);
	EXPECT_EQ(state(se), DAT_EP_STATE_RESERVED);
	DAT_RSP_PARAM rp{};
	ASSERT_OK(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp));
	EXPECT_EQ(rp.ia_handle, s.ia);
	EXPECT_EQ(rp.conn_qual, q);
	EXPECT_EQ(rp.evd_handle, s.cr);
	EXPECT_EQ(rp.ep_handle, se);
	EXPECT_EXACT(connect_to(se, q), kReserved);
	EXPECT_EXACT(dat_ep_free(se), kReserved);
	EXPECT_EXACT(dat_rsp_create(s.ia, q + 500, se, s.cr, &rsp2), kReserved);
	DAT_PSP_HANDLE psp2;
	ASSERT_DAT(dat_psp_create(s.ia, q, s.cr, DAT_PSP_CONSUMER_FLAG, &psp2),
		   DAT_CONN_QUAL_IN_USE);

	const char req[] = "dapltest";
	ASSERT_OK(connect_to(ce, q, req, sizeof(req)));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.cr, &ev));
	ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	auto &cra = ev.event_data.cr_arrival_event_data;
	EXPECT_EQ(cra.sp_handle.rsp_handle, rsp);
	EXPECT_EQ(cra.conn_qual, q);
	DAT_CR_HANDLE cr = cra.cr_handle;
	EXPECT_EQ(state(se), DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
	DAT_CR_PARAM crp;
	ASSERT_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
	EXPECT_EQ(crp.local_ep_handle, se);
	ASSERT_EQ(crp.private_data_size, (DAT_COUNT)sizeof(req));
	EXPECT_STREQ((const char *)crp.private_data, req);
	EXPECT_EXACT(dat_ep_free(se), kTentative);
	EXPECT_EXACT(dat_cr_accept(cr, other, 0, nullptr),
		     DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
	EXPECT_EQ(state(other), DAT_EP_STATE_UNCONNECTED);
	ASSERT_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, nullptr));
	ASSERT_TRUE(wait_event(s.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, se);
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);

	std::memcpy(c.buf.get(), req, sizeof(req));
	DAT_LMR_TRIPLET st = c.seg(0, sizeof(req));
	ASSERT_OK(dat_ep_post_send(ce, 1, &st, cookie(1),
				   DAT_COMPLETION_DEFAULT_FLAG));
	ASSERT_TRUE(wait_event(c.dto, &ev));
	EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
	ASSERT_TRUE(wait_event(s.dto, &ev));
	auto &d = ev.event_data.dto_completion_event_data;
	EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
	EXPECT_EQ(d.ep_handle, se);
	EXPECT_EQ(d.user_cookie.as_64, 11u);
	EXPECT_EQ(d.transfered_length, sizeof(req));
	EXPECT_STREQ(s.buf.get(), req);

	ASSERT_OK(dat_rsp_free(rsp));
	EXPECT_EQ(state(se), DAT_EP_STATE_CONNECTED);
	EXPECT_EXACT(dat_rsp_free(rsp),
		     DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP));
}

// One request per RSP; a reject gives the EP back, Unconnected; a free
// of a still-reserved RSP too.
TEST_F(Rsp, RejectAndFreeGiveTheEpBack)
{
	DAT_EP_HANDLE se = plain_ep(s), c1 = plain_ep(c), c2 = plain_ep(c);
	const DAT_CONN_QUAL q = ++qual;
	DAT_RSP_HANDLE rsp;
	ASSERT_OK(dat_rsp_create(s.ia, q, se, s.cr, &rsp));
	ASSERT_OK(connect_to(c1, q));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.cr, &ev));
	DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
	ASSERT_OK(connect_to(c2, q));
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, c2);
	EXPECT_TRUE(ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED ||
		    ev.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED)
		<< std::hex << ev.event_number;
	EXPECT_TRUE(no_event(s.cr));

	ASSERT_OK(dat_cr_reject(cr));
	EXPECT_EQ(state(se), DAT_EP_STATE_UNCONNECTED);
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_PEER_REJECTED);
	ASSERT_OK(dat_rsp_free(rsp));

	ASSERT_OK(dat_rsp_create(s.ia, q, se, s.cr, &rsp));
	EXPECT_EQ(state(se), DAT_EP_STATE_RESERVED);
	ASSERT_OK(dat_rsp_free(rsp));
	EXPECT_EQ(state(se), DAT_EP_STATE_UNCONNECTED);
	ASSERT_OK(dat_ep_free(se));
}

// A process that exits with a reserved EP, a tentative one and a pending
// CR leaves no kernel object behind.
TEST_F(Rsp, ProcessExitWithRspsLeavesNothing)
{
	const long before = live_objects();
	const DAT_CONN_QUAL q = qual += 2;
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		Side a, b;
		int bad = 0;
		if (a.open(srv_ia()) || b.open(cli_ia()))
			_exit(2);
		DAT_EP_ATTR at = ep_attr();
		DAT_EP_HANDLE e1, e2, ce;
		DAT_RSP_HANDLE r1, r2;
		bad |= dat_ep_create(a.ia, a.pz, a.dto, a.dto, a.conn, &at, &e1);
		bad |= dat_ep_create(a.ia, a.pz, a.dto, a.dto, a.conn, &at, &e2);
		bad |= dat_ep_create(b.ia, b.pz, b.dto, b.dto, b.conn, &at, &ce);
		bad |= dat_rsp_create(a.ia, q - 1, e1, a.cr, &r1);
		bad |= dat_rsp_create(a.ia, q, e2, a.cr, &r2);
		sockaddr_in sin{};
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = inet_addr(srv_addr());
		bad |= dat_ep_connect(ce, (DAT_IA_ADDRESS_PTR)&sin, q,
				      DAT_TIMEOUT_INFINITE, 0, nullptr,
				      DAT_QOS_BEST_EFFORT,
				      DAT_CONNECT_DEFAULT_FLAG);
		DAT_EVENT ev;
		if (bad || !wait_event(a.cr, &ev))
			_exit(3);
		_exit(0);	/* no close: the file's release tears down */
	}
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
	EXPECT_TRUE(wait_for([&] { return live_objects() == before; }))
		<< live_objects() << " live, " << before << " before";
}
