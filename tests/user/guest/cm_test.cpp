// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Connections and plain (non-SRQ) endpoints through libdat against the
// real module: what the host once checked against a fake /dev/kdat that
// connected its own EPs (tests/user/host/README.md has the map).  Codes
// are compared by type where the spec fixes only the type.
#include "fixture.hpp"

#include <dat/dat_kdat.h>
#include <poll.h>

using namespace kt;

namespace {

class Cm : public Pair {
protected:
	DAT_EP_HANDLE plain_ep(Side &x)
	{
		DAT_EP_ATTR a = ep_attr();
		DAT_EP_HANDLE e = DAT_HANDLE_NULL;
		EXPECT_EQ(dat_ep_create(x.ia, x.pz, x.dto, x.dto, x.conn, &a, &e),
			  (DAT_RETURN)DAT_SUCCESS);
		return e;
	}

	static sockaddr_in server_address()
	{
		sockaddr_in sin{};
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = inet_addr(srv_addr());
		return sin;
	}

	static in_addr_t ia_address(DAT_IA_HANDLE ia)
	{
		DAT_IA_ATTR a;
		EXPECT_EQ(dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &a, 0, nullptr),
			  (DAT_RETURN)DAT_SUCCESS);
		return ((sockaddr_in *)a.ia_address_ptr)->sin_addr.s_addr;
	}

	DAT_RETURN connect_to(DAT_EP_HANDLE ce, DAT_CONN_QUAL q,
			      const void *pdata = nullptr, DAT_COUNT n = 0)
	{
		sockaddr_in sin = server_address();
		return dat_ep_connect(ce, (DAT_IA_ADDRESS_PTR)&sin, q,
				      DAT_TIMEOUT_INFINITE, n, (DAT_PVOID)pdata,
				      DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
	}
};

// Request, accept with private data both ways, the events and queries of
// both sides, disconnect and reset; the qualifier in use; a REQ's private
// data limit; an EP waiting for its connection is not unconnected.
TEST_F(Cm, ConnectAcceptWithPrivateDataBothWaysAndTheQueriesSeeIt)
{
	DAT_EP_HANDLE se = plain_ep(s), ce = plain_ep(c);
	const DAT_CONN_QUAL q = ++qual;
	DAT_PSP_HANDLE psp, psp2;
	ASSERT_OK(dat_psp_create(s.ia, q, s.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	ASSERT_DAT(dat_psp_create(s.ia, q, s.cr, DAT_PSP_CONSUMER_FLAG, &psp2),
		   DAT_CONN_QUAL_IN_USE);

	char big[56] = {};
	EXPECT_EQ(connect_to(ce, q, big, sizeof(big)),
		  (DAT_RETURN)DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));
	const char req[] = "hello server", rep[] = "welcome";
	ASSERT_OK(connect_to(ce, q, req, sizeof(req)));

	// waiting for the server: not unconnected, no modify
	DAT_EP_PARAM p;
	ASSERT_OK(dat_ep_query(ce, DAT_EP_FIELD_ALL, &p));
	EXPECT_EQ(p.ep_state, DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	DAT_EP_PARAM m{};
	m.ep_attr = p.ep_attr;
	m.ep_attr.max_request_dtos = p.ep_attr.max_request_dtos / 2;
	EXPECT_EQ(dat_ep_modify(ce, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &m),
		  (DAT_RETURN)DAT_ERROR(DAT_INVALID_STATE,
					DAT_INVALID_STATE_EP_NOTREADY));

	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.cr, &ev));
	ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	auto &cra = ev.event_data.cr_arrival_event_data;
	EXPECT_EQ(cra.sp_handle.psp_handle, psp);
	EXPECT_EQ(cra.conn_qual, q);
	ASSERT_NE(cra.local_ia_address_ptr, nullptr);
	EXPECT_EQ(((sockaddr_in *)cra.local_ia_address_ptr)->sin_addr.s_addr,
		  inet_addr(srv_addr()));
	DAT_CR_HANDLE cr = cra.cr_handle;
	DAT_HANDLE_TYPE t;
	ASSERT_OK(dat_get_handle_type(cr, &t));
	EXPECT_EQ(t, DAT_HANDLE_TYPE_CR);
	DAT_CR_PARAM crp;
	ASSERT_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
	ASSERT_EQ(crp.private_data_size, (DAT_COUNT)sizeof(req));
	EXPECT_STREQ((const char *)crp.private_data, req);
	EXPECT_EQ(((sockaddr_in *)crp.remote_ia_address_ptr)->sin_addr.s_addr,
		  ia_address(c.ia));
	EXPECT_EQ(crp.local_ep_handle, DAT_HANDLE_NULL);

	ASSERT_OK(dat_cr_accept(cr, se, sizeof(rep), (DAT_PVOID)rep));
	ASSERT_DAT(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp), DAT_INVALID_HANDLE);
	ASSERT_TRUE(wait_event(s.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, se);
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, ce);
	ASSERT_EQ(ev.event_data.connect_event_data.private_data_size,
		  (DAT_COUNT)sizeof(rep));
	EXPECT_STREQ((const char *)ev.event_data.connect_event_data.private_data,
		     rep);

	ASSERT_OK(dat_ep_query(ce, DAT_EP_FIELD_ALL, &p));
	EXPECT_EQ(p.ep_state, DAT_EP_STATE_CONNECTED);
	EXPECT_EQ(p.ia_handle, c.ia);
	EXPECT_EQ(p.pz_handle, c.pz);
	EXPECT_EQ(p.recv_evd_handle, c.dto);
	EXPECT_EQ(p.connect_evd_handle, c.conn);
	EXPECT_EQ(p.srq_handle, DAT_HANDLE_NULL);
	EXPECT_EQ(p.remote_port_qual, q);
	EXPECT_EQ(((sockaddr_in *)p.remote_ia_address_ptr)->sin_addr.s_addr,
		  inet_addr(srv_addr()));
	ASSERT_OK(dat_ep_query(se, DAT_EP_FIELD_ALL, &p));
	EXPECT_EQ(p.ep_state, DAT_EP_STATE_CONNECTED);
	EXPECT_EQ(((sockaddr_in *)p.remote_ia_address_ptr)->sin_addr.s_addr,
		  ia_address(c.ia));
	DAT_EP_STATE st;
	ASSERT_OK(dat_ep_get_status(se, &st, nullptr, nullptr));
	EXPECT_EQ(st, DAT_EP_STATE_CONNECTED);

	ASSERT_OK(dat_ep_disconnect(ce, DAT_CLOSE_GRACEFUL_FLAG));
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, ce);
	EXPECT_EQ(ev.event_data.connect_event_data.private_data_size, 0);
	ASSERT_TRUE(wait_event(s.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, se);
	ASSERT_OK(dat_ep_reset(ce));
	ASSERT_OK(dat_ep_get_status(ce, &st, nullptr, nullptr));
	EXPECT_EQ(st, DAT_EP_STATE_UNCONNECTED);

	ASSERT_OK(dat_psp_free(psp));
	ASSERT_DAT(dat_psp_free(psp), DAT_INVALID_HANDLE);
}

// A rejected request reaches the client as PEER_REJECTED; a qualifier
// nobody listens on as NON_PEER_REJECTED.
TEST_F(Cm, RejectReachesTheClientAndNoListenerIsNonPeerRejected)
{
	DAT_EP_HANDLE ce = plain_ep(c);
	const DAT_CONN_QUAL q = ++qual;
	DAT_PSP_HANDLE psp;
	ASSERT_OK(dat_psp_create(s.ia, q, s.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	ASSERT_OK(connect_to(ce, q));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.cr, &ev));
	ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
	ASSERT_OK(dat_cr_reject(cr));
	ASSERT_DAT(dat_cr_reject(cr), DAT_INVALID_HANDLE);
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_PEER_REJECTED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, ce);
	ASSERT_OK(dat_psp_free(psp));

	ASSERT_OK(dat_ep_reset(ce));
	ASSERT_OK(connect_to(ce, ++qual));
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, ce);
	EXPECT_TRUE(no_event(s.cr));
}

// Plain EPs: a send lands in the posted receive, both completions name
// their EP; when the peer EP is freed the connection goes down and a
// receive still posted is flushed, once.
TEST_F(Cm, PlainEpSendRecvAndFlushWhenThePeerGoes)
{
	DAT_EP_HANDLE se = plain_ep(s), ce = plain_ep(c);
	connect(se, ce, 5);
	if (HasFatalFailure())
		return;
	DAT_LMR_TRIPLET r = s.seg(1024, 64);
	ASSERT_OK(dat_ep_post_recv(se, 1, &r, cookie(0x5151),
				   DAT_COMPLETION_DEFAULT_FLAG));
	std::strcpy(c.buf.get(), "ping");
	DAT_LMR_TRIPLET t = c.seg(0, 5);
	ASSERT_OK(dat_ep_post_send(ce, 1, &t, cookie(0x1212),
				   DAT_COMPLETION_DEFAULT_FLAG));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(c.dto, &ev));
	auto &d = ev.event_data.dto_completion_event_data;
	EXPECT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(d.ep_handle, ce);
	EXPECT_EQ(d.user_cookie.as_64, 0x1212u);
	EXPECT_EQ(d.transfered_length, 5u);
	EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
	ASSERT_TRUE(wait_event(s.dto, &ev));
	EXPECT_EQ(d.ep_handle, se);
	EXPECT_EQ(d.user_cookie.as_64, 0x5151u);
	EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
	EXPECT_EQ(d.transfered_length, 5u);
	EXPECT_STREQ(s.buf.get() + 1024, "ping");

	ASSERT_OK(dat_ep_post_recv(se, 1, &r, cookie(0x5152),
				   DAT_COMPLETION_DEFAULT_FLAG));
	ASSERT_OK(dat_ep_free(ce));
	ASSERT_TRUE(wait_event(s.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, se);
	ASSERT_TRUE(wait_event(s.dto, &ev));
	EXPECT_EQ(d.ep_handle, se);
	EXPECT_EQ(d.user_cookie.as_64, 0x5152u);
	EXPECT_EQ(d.status, DAT_DTO_ERR_FLUSHED);
	EXPECT_TRUE(no_event(s.dto));
}

// A connection EVD may be of another IA of the process (OFED's dapltest
// -T L -w 2 does this; every IA of a process shares its /dev/kdat file):
// the EP's connection events arrive there, naming the EP, and not on its
// own IA's EVD; dat_ep_query names that EVD.  Its free is refused while
// the EP uses it; its IA's abrupt close still succeeds and the EP stays
// connected.  A DTO EVD of another IA stays refused.
TEST_F(Cm, ConnectionEvdOfAnotherIaOfTheProcess)
{
	Side x;
	ASSERT_OK(x.open(cli_ia(), 4096));
	int fd_c = -1, fd_x = -2;
	ASSERT_OK(dat_kdat_get_fd(c.ia, &fd_c));
	ASSERT_OK(dat_kdat_get_fd(x.ia, &fd_x));
	EXPECT_EQ(fd_c, fd_x) << "the IAs of a process share one file";

	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ce = DAT_HANDLE_NULL, bad = DAT_HANDLE_NULL;
	EXPECT_EQ(dat_ep_create(c.ia, c.pz, x.dto, c.dto, c.conn, &a, &bad),
		  (DAT_RETURN)DAT_ERROR(DAT_INVALID_HANDLE,
					DAT_INVALID_HANDLE_EVD_RECV));
	EXPECT_EQ(dat_ep_create(c.ia, c.pz, c.dto, c.dto, x.cr, &a, &bad),
		  (DAT_RETURN)DAT_ERROR(DAT_INVALID_HANDLE,
					DAT_INVALID_HANDLE_EVD_CONN));
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, x.conn, &a, &ce));
	DAT_EP_HANDLE se = plain_ep(s);
	DAT_EP_PARAM p;
	ASSERT_OK(dat_ep_query(ce, DAT_EP_FIELD_ALL, &p));
	EXPECT_EQ(p.ia_handle, c.ia);
	EXPECT_EQ(p.connect_evd_handle, x.conn);

	const DAT_CONN_QUAL q = ++qual;
	DAT_PSP_HANDLE psp;
	ASSERT_OK(dat_psp_create(s.ia, q, s.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	ASSERT_OK(connect_to(ce, q));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.cr, &ev));
	ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	ASSERT_OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
				se, 0, nullptr));
	ASSERT_TRUE(wait_event(s.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	ASSERT_TRUE(wait_event(x.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, ce);
	EXPECT_TRUE(no_event(c.conn));

	EXPECT_EQ(dat_evd_free(x.conn),
		  (DAT_RETURN)DAT_ERROR(DAT_INVALID_STATE,
					DAT_INVALID_STATE_EVD_IN_USE));
	ASSERT_OK(dat_ia_close(x.ia, DAT_CLOSE_ABRUPT_FLAG));
	x.ia = DAT_HANDLE_NULL;
	DAT_EP_STATE st;
	ASSERT_OK(dat_ep_get_status(ce, &st, nullptr, nullptr));
	EXPECT_EQ(st, DAT_EP_STATE_CONNECTED);
	ASSERT_OK(dat_ep_disconnect(ce, DAT_CLOSE_GRACEFUL_FLAG));
	ASSERT_TRUE(wait_event(s.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_TRUE(no_event(c.conn));
	ASSERT_OK(dat_ep_free(ce));
	ASSERT_OK(dat_psp_free(psp));
}

// The other way round: the EP's IA closes while a connection event for
// the EP waits on the (still open) connection EVD of another IA.  The
// event still names the EP's handle, as after dat_ep_free, never NULL.
TEST_F(Cm, ConnectionEventOfAClosedIasEpStillNamesIt)
{
	Side x;
	ASSERT_OK(x.open(cli_ia(), 4096));
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ce = DAT_HANDLE_NULL;
	ASSERT_OK(dat_ep_create(x.ia, x.pz, x.dto, x.dto, c.conn, &a, &ce));
	DAT_EP_HANDLE se = plain_ep(s);
	const DAT_CONN_QUAL q = ++qual;
	DAT_PSP_HANDLE psp;
	ASSERT_OK(dat_psp_create(s.ia, q, s.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	ASSERT_OK(connect_to(ce, q));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.cr, &ev));
	ASSERT_OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
				se, 0, nullptr));
	ASSERT_TRUE(wait_event(s.conn, &ev));
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, ce);

	// the server ends it; the client's DISCONNECTED lands on c.conn,
	// the only EVD of the process with an event once s.conn is read
	ASSERT_OK(dat_ep_disconnect(se, DAT_CLOSE_GRACEFUL_FLAG));
	ASSERT_TRUE(wait_event(s.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	int fd = -1;
	ASSERT_OK(dat_kdat_get_fd(c.ia, &fd));
	pollfd p{fd, POLLIN, 0};
	ASSERT_EQ(::poll(&p, 1, 10000), 1) << "no event for the client";
	ASSERT_OK(dat_ia_close(x.ia, DAT_CLOSE_ABRUPT_FLAG));
	x.ia = DAT_HANDLE_NULL;
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, ce);
	EXPECT_TRUE(no_event(c.conn));
	ASSERT_OK(dat_psp_free(psp));
}

} // namespace
