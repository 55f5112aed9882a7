// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Connections, endpoints and IAs: the library side, against the protocol
// fake.  What the library sends (PSP create, connect, accept, reject,
// disconnect, posts, EP modify, IA close), how it translates what the
// kernel writes and answers (connection requests become CR handles, CR
// and EP queries, private data of connection events, completions naming
// their EP, IA attributes), and what it decides alone.  Events come from
// the test, as the kernel would write them; the fake connects nothing.
//
// Connecting for real, rejection, flushes, the kernel's refusals (qualifier
// in use, EP modify rules, graceful close, PZ in use) are tested against
// the real module: tests/user/guest/cm_test.cpp, ep_modify_test.cpp,
// objects_test.cpp (README.md here).
#include "test_util.hpp"

namespace {

class Cm : public FakeKernelTest {
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

	DAT_EP_HANDLE make_ep(Side &s)
	{
		DAT_EP_ATTR at = ep_attr();
		DAT_EP_HANDLE ep = nullptr;
		EXPECT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &at,
					&ep));
		return ep;
	}

	/* The kernel reports a connection request for @psp on @s's CR EVD. */
	DAT_CR_HANDLE request(Side &s, DAT_PSP_HANDLE psp, DAT_CONN_QUAL qual,
			      const fake::CrInfo &info = {})
	{
		struct kdat_uevent u = {};
		u.event_number = DAT_CONNECTION_REQUEST_EVENT;
		u.cr = kernel.make_cr(ref<kdat::Ia>(s.ia), info);
		u.sp = kid<kdat::Psp>(psp);
		u.conn_qual = qual;
		EXPECT_TRUE(kernel.inject(ref<kdat::Evd>(s.cr), u));
		DAT_EVENT e = next_event(s.cr, DAT_CONNECTION_REQUEST_EVENT);
		return e.event_data.cr_arrival_event_data.cr_handle;
	}

	Side srv, cli;
};

} // namespace

TEST_F(Cm, PspCreateSendsItsArgumentsAndQueryIsTheLibrarys)
{
	DAT_PSP_HANDLE psp, psp2;

	kernel.reset_counts();
	ASSERT_OK(dat_psp_create(srv.ia, 5001, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	auto c = kernel.last<kdat_ioc_psp_create>(KDAT_IOC_PSP_CREATE);
	EXPECT_EQ(kid<kdat::Ia>(srv.ia), c.ia);
	EXPECT_EQ(kid<kdat::Evd>(srv.cr), c.evd);
	EXPECT_EQ(5001u, c.conn_qual);
	EXPECT_EQ((__u32)DAT_PSP_CONSUMER_FLAG, c.flags);
	/* the kernel's refusal comes back unchanged, and makes no handle */
	const std::size_t handles = kdat::handles().size();
	kernel.status_next(KDAT_IOC_PSP_CREATE, E(DAT_CONN_QUAL_IN_USE));
	EXPECT_DAT(E(DAT_CONN_QUAL_IN_USE),
		   dat_psp_create(srv.ia, 5001, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp2));
	EXPECT_EQ(handles, kdat::handles().size());

	kernel.reset_counts();
	DAT_PSP_PARAM pp;
	ASSERT_OK(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp));
	EXPECT_EQ(srv.ia, pp.ia_handle);
	EXPECT_EQ(5001u, pp.conn_qual);
	EXPECT_EQ(srv.cr, pp.evd_handle);
	EXPECT_EQ(DAT_PSP_CONSUMER_FLAG, pp.psp_flags);
	EXPECT_EQ(0u, kernel.total_ioctls());
	/* an EVD of another IA never reaches the kernel */
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EVD_CR),
		   dat_psp_create(srv.ia, 5002, cli.cr, DAT_PSP_CONSUMER_FLAG, &psp2));
	EXPECT_EQ(0u, kernel.total_ioctls());

	EXPECT_OK(dat_psp_free(psp));
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ(kdat::ktype::PSP, f.type);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_PSP), dat_psp_free(psp));
	EXPECT_EQ(1u, kernel.total_ioctls());
}

TEST_F(Cm, ConnectSendsAddressQualifierAndPrivateData)
{
	DAT_EP_HANDLE cep = make_ep(cli);
	struct sockaddr_in sin = ipv4("192.0.2.1");
	const char req[] = "hello server";

	kernel.reset_counts();
	ASSERT_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, 5001, 1000000,
				 sizeof(req), (DAT_PVOID)req, DAT_QOS_BEST_EFFORT,
				 DAT_CONNECT_DEFAULT_FLAG));
	ASSERT_EQ(1u, kernel.total_ioctls());
	auto c = kernel.last<kdat_ioc_ep_connect>(KDAT_IOC_EP_CONNECT);
	EXPECT_EQ(kid<kdat::Ep>(cep), c.ep);
	EXPECT_EQ(5001u, c.conn_qual);
	EXPECT_EQ(1000000u, c.timeout_us);
	EXPECT_EQ(0, std::memcmp(c.addr, &sin, sizeof(sin)));
	EXPECT_EQ(sizeof(req), c.pdata_size);
	EXPECT_STREQ(req, (const char *)c.pdata);
	EXPECT_EQ((__u32)DAT_QOS_BEST_EFFORT, c.qos);
	/* DAT_TIMEOUT_INFINITE is the kernel's forever too */
	ASSERT_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, 5001,
				 DAT_TIMEOUT_INFINITE, 0, nullptr,
				 DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_EQ(0xffffffffu,
		  kernel.last<kdat_ioc_ep_connect>(KDAT_IOC_EP_CONNECT).timeout_us);
	EXPECT_OK(dat_ep_free(cep));
}

/*
 * A connection request names a CR the library makes a handle for; its
 * query, accept (with private data) and the ESTABLISHED event with the
 * peer's private data are the library's translations.
 */
TEST_F(Cm, RequestAcceptEstablishedWithPrivateData)
{
	DAT_EP_HANDLE sep = make_ep(srv), cep = make_ep(cli);
	DAT_PSP_HANDLE psp;
	const char req[] = "hello server", rep[] = "welcome";
	fake::CrInfo info;

	ASSERT_OK(dat_psp_create(srv.ia, 5001, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	info.pdata.assign(req, req + sizeof(req));
	info.remote = ipv4("192.0.2.2");
	info.remote_port = 40001;
	struct kdat_uevent u = {};
	u.event_number = DAT_CONNECTION_REQUEST_EVENT;
	u.cr = kernel.make_cr(ref<kdat::Ia>(srv.ia), info);
	u.sp = kid<kdat::Psp>(psp);
	u.conn_qual = 5001;
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.cr), u));
	DAT_EVENT e = next_event(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
	auto &cr = e.event_data.cr_arrival_event_data;
	EXPECT_EQ(psp, cr.sp_handle.psp_handle);
	EXPECT_EQ(5001u, cr.conn_qual);
	EXPECT_EQ(srv.cr, e.evd_handle);
	auto *local = (struct sockaddr_in *)cr.local_ia_address_ptr;
	ASSERT_NE(nullptr, local);
	EXPECT_EQ(ipv4("192.0.2.1").sin_addr.s_addr, local->sin_addr.s_addr);
	DAT_HANDLE_TYPE t;
	ASSERT_OK(dat_get_handle_type(cr.cr_handle, &t));
	EXPECT_EQ(DAT_HANDLE_TYPE_CR, t);

	DAT_CR_PARAM p;
	kernel.reset_counts();
	ASSERT_OK(dat_cr_query(cr.cr_handle, DAT_CR_FIELD_ALL, &p));
	EXPECT_EQ(u.cr, kernel.last<kdat_ioc_cr_query>(KDAT_IOC_CR_QUERY).cr);
	EXPECT_EQ((DAT_COUNT)sizeof(req), p.private_data_size);
	EXPECT_STREQ(req, (const char *)p.private_data);
	auto *remote = (struct sockaddr_in *)p.remote_ia_address_ptr;
	EXPECT_EQ(ipv4("192.0.2.2").sin_addr.s_addr, remote->sin_addr.s_addr);
	EXPECT_EQ(40001u, p.remote_port_qual);
	EXPECT_EQ(nullptr, p.local_ep_handle);
	/* what the library refuses itself */
	kernel.reset_counts();
	EXPECT_DAT(ARG(3), dat_cr_query(cr.cr_handle, DAT_CR_FIELD_ALL, nullptr));
	EXPECT_DAT(ARG(3), dat_cr_accept(cr.cr_handle, sep, -1, nullptr));
	EXPECT_DAT(ARG(3), dat_cr_accept(cr.cr_handle, sep, KDAT_PDATA_LEN + 1,
					 (DAT_PVOID)rep));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_cr_accept(cr.cr_handle, cli.pz, 0, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_cr_accept(cr.cr_handle, cep, 0, nullptr)); /* other IA */
	EXPECT_EQ(0u, kernel.total_ioctls());

	ASSERT_OK(dat_cr_accept(cr.cr_handle, sep, sizeof(rep), (DAT_PVOID)rep));
	auto a = kernel.last<kdat_ioc_cr_accept>(KDAT_IOC_CR_ACCEPT);
	EXPECT_EQ(u.cr, a.cr);
	EXPECT_EQ(kid<kdat::Ep>(sep), a.ep);
	EXPECT_EQ(sizeof(rep), a.pdata_size);
	EXPECT_STREQ(rep, (const char *)a.pdata);
	/* consumed */
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CR),
		   dat_cr_query(cr.cr_handle, DAT_CR_FIELD_ALL, &p));

	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.conn),
				  connection_event(DAT_CONNECTION_EVENT_ESTABLISHED,
						   kid<kdat::Ep>(sep))));
	e = next_event(srv.conn, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(sep, e.event_data.connect_event_data.ep_handle);
	EXPECT_EQ(0, e.event_data.connect_event_data.private_data_size);
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(cli.conn),
				  connection_event(DAT_CONNECTION_EVENT_ESTABLISHED,
						   kid<kdat::Ep>(cep), rep,
						   sizeof(rep))));
	e = next_event(cli.conn, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(cep, e.event_data.connect_event_data.ep_handle);
	EXPECT_EQ((DAT_COUNT)sizeof(rep),
		  e.event_data.connect_event_data.private_data_size);
	EXPECT_STREQ(rep, (const char *)e.event_data.connect_event_data.private_data);
	/* a length beyond the ABI's buffer is cut to it */
	struct kdat_uevent big = connection_event(
		DAT_CONNECTION_EVENT_DISCONNECTED, kid<kdat::Ep>(cep));
	big.pdata_size = 100000;
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(cli.conn), big));
	e = next_event(cli.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_EQ(KDAT_PDATA_LEN, e.event_data.connect_event_data.private_data_size);

	EXPECT_OK(dat_psp_free(psp));
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
}

/*
 * A failed accept: the CR handle stays only if the kernel still has the
 * CR (it answers a CR query); one it consumed anyway is gone.
 */
TEST_F(Cm, FailedAcceptKeepsTheCrOnlyIfTheKernelStillHasIt)
{
	DAT_EP_HANDLE sep = make_ep(srv);
	DAT_PSP_HANDLE psp;
	ASSERT_OK(dat_psp_create(srv.ia, 5001, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	DAT_CR_HANDLE cr = request(srv, psp, 5001);
	DAT_CR_PARAM p;

	kernel.status_next(KDAT_IOC_CR_ACCEPT, E(DAT_INVALID_STATE));
	EXPECT_DAT(E(DAT_INVALID_STATE), dat_cr_accept(cr, sep, 0, nullptr));
	ASSERT_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &p));

	/* this time the kernel consumed the CR although the accept failed */
	kernel.answer<kdat_ioc_cr_accept>(KDAT_IOC_CR_ACCEPT,
					  [](kdat_ioc_cr_accept &) {
						  return E(DAT_INTERNAL_ERROR);
					  });
	EXPECT_DAT(E(DAT_INTERNAL_ERROR), dat_cr_accept(cr, sep, 0, nullptr));
	kernel.reset_counts();
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CR), dat_cr_query(cr, DAT_CR_FIELD_ALL, &p));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_psp_free(psp));
	EXPECT_OK(dat_ep_free(sep));
}

TEST_F(Cm, RejectFreesTheCrAndRejectionEventsNameTheEp)
{
	DAT_EP_HANDLE cep = make_ep(cli);
	DAT_PSP_HANDLE psp;
	ASSERT_OK(dat_psp_create(srv.ia, 5002, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	DAT_CR_HANDLE cr = request(srv, psp, 5002);
	const auto cr_id = kid<kdat::Cr>(cr);

	kernel.reset_counts();
	ASSERT_OK(dat_cr_reject(cr));
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ(cr_id, f.handle);
	EXPECT_EQ(kdat::ktype::CR, f.type);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CR), dat_cr_reject(cr));
	EXPECT_EQ(1u, kernel.total_ioctls());

	/* a CR the kernel no longer has: the handle goes too */
	cr = request(srv, psp, 5002);
	kernel.status_next(KDAT_IOC_FREE, BAD(DAT_INVALID_HANDLE_CR));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CR), dat_cr_reject(cr));
	DAT_HANDLE_TYPE t;
	EXPECT_DAT(E(DAT_INVALID_HANDLE), dat_get_handle_type(cr, &t));

	for (DAT_EVENT_NUMBER n : { DAT_CONNECTION_EVENT_PEER_REJECTED,
				    DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
				    DAT_CONNECTION_EVENT_UNREACHABLE,
				    DAT_CONNECTION_EVENT_TIMED_OUT }) {
		ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(cli.conn),
					  connection_event(n, kid<kdat::Ep>(cep))));
		DAT_EVENT e = next_event(cli.conn, n);
		EXPECT_EQ(cep, e.event_data.connect_event_data.ep_handle);
	}
	EXPECT_OK(dat_psp_free(psp));
	EXPECT_OK(dat_ep_free(cep));
}

/* A request still queued for a freed PSP names the PSP's old handle. */
TEST_F(Cm, RequestOfAFreedPspStillNamesIt)
{
	DAT_PSP_HANDLE psp;
	ASSERT_OK(dat_psp_create(srv.ia, 5003, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	struct kdat_uevent u = {};
	u.event_number = DAT_CONNECTION_REQUEST_EVENT;
	u.cr = kernel.make_cr(ref<kdat::Ia>(srv.ia), {});
	u.sp = kid<kdat::Psp>(psp);
	u.conn_qual = 5003;
	ASSERT_OK(dat_psp_free(psp));
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.cr), u));
	DAT_EVENT e = next_event(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
	EXPECT_EQ(psp, e.event_data.cr_arrival_event_data.sp_handle.psp_handle);
	EXPECT_OK(dat_cr_reject(e.event_data.cr_arrival_event_data.cr_handle));
}

/*
 * RSPs: what dat_rsp_create sends, what the library refuses itself, the
 * kernel's refusals unchanged (no handle), a query from the kernel's IDs,
 * and the free.
 */
TEST_F(Cm, RspCreateSendsItsArgumentsQueryAndFree)
{
	DAT_EP_HANDLE sep = make_ep(srv), cep = make_ep(cli);
	DAT_RSP_HANDLE rsp = nullptr, rsp2 = nullptr;

	kernel.reset_counts();
	ASSERT_OK(dat_rsp_create(srv.ia, 5001, sep, srv.cr, &rsp));
	auto c = kernel.last<kdat_ioc_rsp_create>(KDAT_IOC_RSP_CREATE);
	EXPECT_EQ(kid<kdat::Ia>(srv.ia), c.ia);
	EXPECT_EQ(kid<kdat::Ep>(sep), c.ep);
	EXPECT_EQ(kid<kdat::Evd>(srv.cr), c.evd);
	EXPECT_EQ(5001u, c.conn_qual);
	DAT_HANDLE_TYPE t;
	ASSERT_OK(dat_get_handle_type(rsp, &t));
	EXPECT_EQ(DAT_HANDLE_TYPE_RSP, t);

	/* the kernel's refusals come back unchanged and make no handle */
	const std::size_t handles = kdat::handles().size();
	kernel.status_next(KDAT_IOC_RSP_CREATE,
			   E(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_RESERVED));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_RESERVED),
		   dat_rsp_create(srv.ia, 5002, sep, srv.cr, &rsp2));
	kernel.status_next(KDAT_IOC_RSP_CREATE, E(DAT_CONN_QUAL_IN_USE));
	EXPECT_DAT(E(DAT_CONN_QUAL_IN_USE),
		   dat_rsp_create(srv.ia, 5001, sep, srv.cr, &rsp2));
	EXPECT_EQ(handles, kdat::handles().size());
	EXPECT_EQ(nullptr, rsp2);

	/* what never reaches the kernel: (ia, conn_qual, ep, evd, rsp) */
	kernel.reset_counts();
	EXPECT_DAT(ARG(2), dat_rsp_create(srv.ia, 0, sep, srv.cr, &rsp2));
	EXPECT_DAT(ARG(2), dat_rsp_create(srv.ia, 65536, sep, srv.cr, &rsp2));
	EXPECT_DAT(ARG(5), dat_rsp_create(srv.ia, 5002, sep, srv.cr, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_rsp_create(srv.ia, 5002, nullptr, srv.cr, &rsp2));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_rsp_create(srv.ia, 5002, cep, srv.cr, &rsp2));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EVD_CR),
		   dat_rsp_create(srv.ia, 5002, sep, cli.cr, &rsp2));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_IA),
		   dat_rsp_create(srv.pz, 5002, sep, srv.cr, &rsp2));
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* a module without RSPs */
	kernel.answer<kdat_ioc_version>(KDAT_IOC_VERSION, [](kdat_ioc_version &v) {
		v.features &= ~KDAT_FEATURE_RSP;
		return DAT_SUCCESS;
	});
	EXPECT_DAT(E(DAT_NOT_IMPLEMENTED),
		   dat_rsp_create(srv.ia, 5002, sep, srv.cr, &rsp2));
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_RSP_CREATE));
	kernel.answer_raw(KDAT_IOC_VERSION, {});

	DAT_RSP_PARAM rp;
	kernel.reset_counts();
	ASSERT_OK(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_RSP_QUERY));
	EXPECT_EQ(srv.ia, rp.ia_handle);
	EXPECT_EQ(5001u, rp.conn_qual);
	EXPECT_EQ(srv.cr, rp.evd_handle);
	EXPECT_EQ(sep, rp.ep_handle);
	EXPECT_DAT(ARG(2), dat_rsp_query(rsp, (DAT_RSP_PARAM_MASK)0x10, &rp));
	EXPECT_DAT(ARG(3), dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_RSP),
		   dat_rsp_query(sep, DAT_RSP_FIELD_ALL, &rp));

	/* a refused free keeps the handle */
	kernel.status_next(KDAT_IOC_FREE, E(DAT_INVALID_STATE));
	EXPECT_DAT(E(DAT_INVALID_STATE), dat_rsp_free(rsp));
	kernel.reset_counts();
	EXPECT_OK(dat_rsp_free(rsp));
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ(kdat::ktype::RSP, f.type);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_RSP), dat_rsp_free(rsp));
	EXPECT_EQ(1u, kernel.total_ioctls());
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
}

/*
 * An RSP's request: the event names the RSP (also once it is freed), the
 * CR query its reserved EP, and an accept with a NULL EP leaves the
 * choice to the kernel (ID 0).
 */
TEST_F(Cm, RspRequestNamesTheRspAndItsEpAndNullAcceptSendsNoEp)
{
	DAT_EP_HANDLE sep = make_ep(srv);
	DAT_RSP_HANDLE rsp;
	ASSERT_OK(dat_rsp_create(srv.ia, 5004, sep, srv.cr, &rsp));
	fake::CrInfo info;
	info.local_ep = kid<kdat::Ep>(sep);
	struct kdat_uevent u = {};
	u.event_number = DAT_CONNECTION_REQUEST_EVENT;
	u.cr = kernel.make_cr(ref<kdat::Ia>(srv.ia), info);
	u.sp = kid<kdat::Rsp>(rsp);
	u.conn_qual = 5004;
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.cr), u));
	DAT_EVENT e = next_event(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
	auto &c = e.event_data.cr_arrival_event_data;
	EXPECT_EQ(rsp, c.sp_handle.rsp_handle);
	EXPECT_EQ(5004u, c.conn_qual);
	DAT_CR_PARAM p;
	ASSERT_OK(dat_cr_query(c.cr_handle, DAT_CR_FIELD_ALL, &p));
	EXPECT_EQ(sep, p.local_ep_handle);

	kernel.reset_counts();
	ASSERT_OK(dat_cr_accept(c.cr_handle, nullptr, 0, nullptr));
	auto a = kernel.last<kdat_ioc_cr_accept>(KDAT_IOC_CR_ACCEPT);
	EXPECT_EQ(u.cr, a.cr);
	EXPECT_EQ(0u, a.ep);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CR),
		   dat_cr_query(c.cr_handle, DAT_CR_FIELD_ALL, &p));

	/* a request still queued for a freed RSP names its old handle */
	u.cr = kernel.make_cr(ref<kdat::Ia>(srv.ia), info);
	const auto rsp_id = kid<kdat::Rsp>(rsp);
	ASSERT_OK(dat_rsp_free(rsp));
	u.sp = rsp_id;
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.cr), u));
	e = next_event(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
	EXPECT_EQ(rsp, e.event_data.cr_arrival_event_data.sp_handle.rsp_handle);
	EXPECT_OK(dat_cr_reject(e.event_data.cr_arrival_event_data.cr_handle));
	EXPECT_OK(dat_ep_free(sep));
}

TEST_F(Cm, EpQueryStatusDisconnectAndResetTranslateTheKernel)
{
	DAT_EP_HANDLE cep = make_ep(cli);
	const auto ep_id = kid<kdat::Ep>(cep);
	struct sockaddr_in sin = ipv4("192.0.2.1");

	kernel.answer<kdat_ioc_ep_query>(KDAT_IOC_EP_QUERY, [&](kdat_ioc_ep_query &q) {
		q.state = DAT_EP_STATE_CONNECTED;
		q.local_port = 40001;
		q.remote_port = 5001;
		std::memcpy(q.remote_addr, &sin, sizeof(sin));
		q.attr.max_message_size = 8192;
		q.attr.max_request_dtos = 32;
		return DAT_SUCCESS;
	});
	DAT_EP_PARAM ep;
	kernel.reset_counts();
	ASSERT_OK(dat_ep_query(cep, DAT_EP_FIELD_ALL, &ep));
	EXPECT_EQ(ep_id, kernel.last<kdat_ioc_ep_query>(KDAT_IOC_EP_QUERY).ep);
	EXPECT_EQ(DAT_EP_STATE_CONNECTED, ep.ep_state);
	EXPECT_EQ(cli.ia, ep.ia_handle);
	EXPECT_EQ(cli.pz, ep.pz_handle);
	EXPECT_EQ(cli.dto, ep.recv_evd_handle);
	EXPECT_EQ(cli.dto, ep.request_evd_handle);
	EXPECT_EQ(cli.conn, ep.connect_evd_handle);
	EXPECT_EQ(nullptr, ep.srq_handle);
	EXPECT_EQ(5001u, ep.remote_port_qual);
	EXPECT_EQ(40001u, ep.local_port_qual);
	EXPECT_EQ(sin.sin_addr.s_addr,
		  ((struct sockaddr_in *)ep.remote_ia_address_ptr)->sin_addr.s_addr);
	EXPECT_EQ(ipv4("192.0.2.2").sin_addr.s_addr,
		  ((struct sockaddr_in *)ep.local_ia_address_ptr)->sin_addr.s_addr);
	EXPECT_EQ(8192u, ep.ep_attr.max_message_size);
	EXPECT_EQ(32, ep.ep_attr.max_request_dtos);
	EXPECT_EQ(DAT_SERVICE_TYPE_RC, ep.ep_attr.service_type);
	EXPECT_EQ(DAT_QOS_BEST_EFFORT, ep.ep_attr.qos);

	kernel.answer<kdat_ioc_ep_status>(KDAT_IOC_EP_STATUS, [](kdat_ioc_ep_status &s) {
		s.state = DAT_EP_STATE_CONNECTED;
		s.recv_idle = 0;
		s.request_idle = 1;
		return DAT_SUCCESS;
	});
	DAT_EP_STATE st;
	DAT_BOOLEAN ri, qi;
	ASSERT_OK(dat_ep_get_status(cep, &st, &ri, &qi));
	EXPECT_EQ(DAT_EP_STATE_CONNECTED, st);
	EXPECT_EQ(DAT_FALSE, ri);
	EXPECT_EQ(DAT_TRUE, qi);
	ASSERT_OK(dat_ep_get_status(cep, &st, nullptr, nullptr));

	ASSERT_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	auto d = kernel.last<kdat_ioc_ep_op>(KDAT_IOC_EP_DISCONNECT);
	EXPECT_EQ(ep_id, d.ep);
	EXPECT_EQ((__u32)DAT_CLOSE_GRACEFUL_FLAG, d.value);
	ASSERT_OK(dat_ep_reset(cep));
	EXPECT_EQ(ep_id, kernel.last<kdat_ioc_ep_op>(KDAT_IOC_EP_RESET).ep);
	kernel.status_next(KDAT_IOC_EP_RESET, E(DAT_INVALID_STATE));
	EXPECT_DAT(E(DAT_INVALID_STATE), dat_ep_reset(cep));

	/* what the library answers alone */
	kernel.reset_counts();
	DAT_COUNT n, span;
	EXPECT_OK(dat_ep_recv_query(cep, &n, &span));
	EXPECT_EQ(DAT_VALUE_UNKNOWN, n);
	EXPECT_DAT(E(DAT_MODEL_NOT_SUPPORTED), dat_ep_set_watermark(cep, 1, 1));
	EXPECT_DAT(E(DAT_NOT_IMPLEMENTED),
		   dat_ep_dup_connect(cep, cep, 0, 0, nullptr, DAT_QOS_BEST_EFFORT));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_ep_free(cep));
}

/*
 * Every EP post is one KDAT_IOC_EP_POST with the operation, the
 * segments, the cookie and the flags; completions name the EP the kernel
 * named, also after the EP was freed.
 */
TEST_F(Cm, PostsSendTheirWorkAndCompletionsNameTheirEp)
{
	DAT_EP_HANDLE ep = make_ep(srv);
	const auto ep_id = kid<kdat::Ep>(ep);
	DAT_LMR_TRIPLET r = srv.seg(1024, 64), two[2] = { srv.seg(0, 8), srv.seg(64, 8) };
	DAT_RMR_TRIPLET remote = { 0x77, 0, 0x123000, 16 };
	DAT_DTO_COOKIE c;

	kernel.reset_counts();
	c.as_64 = 0x5151;
	ASSERT_OK(dat_ep_post_recv(ep, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG));
	auto p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ(ep_id, p.ep);
	EXPECT_EQ((__u32)KDAT_POST_RECV, p.op);
	EXPECT_EQ(1u, p.nseg);
	EXPECT_EQ(0x5151u, p.cookie);
	EXPECT_EQ(r.virtual_address, p.seg[0].addr);
	EXPECT_EQ(64u, p.seg[0].length);
	EXPECT_EQ(srv.lctx, p.seg[0].lmr_context);

	c.as_64 = 0x1212;
	ASSERT_OK(dat_ep_post_send(ep, 2, two, c, DAT_COMPLETION_SUPPRESS_FLAG));
	p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ((__u32)KDAT_POST_SEND, p.op);
	EXPECT_EQ(2u, p.nseg);
	EXPECT_EQ((__u32)DAT_COMPLETION_SUPPRESS_FLAG, p.flags);
	EXPECT_EQ(two[1].virtual_address, p.seg[1].addr);

	ASSERT_OK(dat_ep_post_rdma_write(ep, 1, two, c, &remote,
					 DAT_COMPLETION_DEFAULT_FLAG));
	p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ((__u32)KDAT_POST_RDMA_WRITE, p.op);
	EXPECT_EQ(0x77u, p.rmr_context);
	EXPECT_EQ(0x123000u, p.remote_addr);
	EXPECT_EQ(16u, p.remote_length);
	ASSERT_OK(dat_ep_post_rdma_read(ep, 1, two, c, &remote,
					DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ((__u32)KDAT_POST_RDMA_READ,
		  kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST).op);
	EXPECT_EQ(4u, kernel.total_ioctls());
	/* the kernel's verdict comes back unchanged */
	kernel.status_next(KDAT_IOC_EP_POST,
			   E(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED),
		   dat_ep_post_send(ep, 1, two, c, DAT_COMPLETION_DEFAULT_FLAG));

	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.dto),
				  dto_event(ep_id, 0x1212, 5)));
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.dto),
				  dto_event(ep_id, 0x5151, 64)));
	DAT_EVENT e = next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(ep, e.event_data.dto_completion_event_data.ep_handle);
	EXPECT_EQ(0x1212u, e.event_data.dto_completion_event_data.user_cookie.as_64);
	EXPECT_EQ(5u, e.event_data.dto_completion_event_data.transfered_length);
	EXPECT_EQ(srv.dto, e.evd_handle);
	e = next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(0x5151u, e.event_data.dto_completion_event_data.user_cookie.as_64);
	EXPECT_EQ(DAT_DTO_SUCCESS, e.event_data.dto_completion_event_data.status);

	/* a flushed receive of a freed EP still names it */
	ASSERT_OK(dat_ep_free(ep));
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ(ep_id, f.handle);
	EXPECT_EQ(kdat::ktype::EP, f.type);
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.dto),
				  dto_event(ep_id, 0x5151, 0, DAT_DTO_ERR_FLUSHED)));
	e = next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(ep, e.event_data.dto_completion_event_data.ep_handle);
	EXPECT_EQ(DAT_DTO_ERR_FLUSHED, e.event_data.dto_completion_event_data.status);
}

TEST_F(Cm, IaQueryBuildsIaAndProviderAttributes)
{
	DAT_IA_ATTR a;
	DAT_PROVIDER_ATTR p;
	DAT_EVD_HANDLE async;

	ASSERT_OK(dat_ia_query(srv.ia, &async, DAT_IA_FIELD_ALL, &a,
			       DAT_PROVIDER_FIELD_ALL, &p));
	EXPECT_EQ(srv.async, async);
	EXPECT_STREQ("rxe0", a.adapter_name);
	EXPECT_STREQ("fake", a.vendor_name);
	EXPECT_EQ(2u, a.firmware_version_major);
	EXPECT_EQ(3u, a.firmware_version_minor);
	EXPECT_EQ(AF_INET, a.ia_address_ptr->sa_family);
	EXPECT_EQ(ipv4("192.0.2.1").sin_addr.s_addr,
		  ((struct sockaddr_in *)a.ia_address_ptr)->sin_addr.s_addr);
	EXPECT_EQ(64, a.max_srqs);
	EXPECT_EQ(16384, a.max_recv_per_srq);
	EXPECT_EQ(KDAT_MAX_IOV, a.max_iov_segments_per_dto);

	EXPECT_STREQ("kdat_ib", p.provider_name);
	EXPECT_EQ(1u, p.dapl_version_major);
	EXPECT_EQ(2u, p.dapl_version_minor);
	EXPECT_EQ(DAT_TRUE, p.srq_supported);
	EXPECT_EQ(1, p.srq_watermarks_supported);
	EXPECT_EQ(DAT_FALSE, p.srq_ep_pz_difference_supported);
	EXPECT_EQ(1, p.srq_info_supported);
	EXPECT_EQ(0, p.ep_recv_info_supported);
	EXPECT_EQ(55, p.max_private_data_size);
	EXPECT_EQ(DAT_TRUE, p.is_thread_safe);
	EXPECT_EQ(64u, p.optimal_buffer_alignment);
	EXPECT_EQ(DAT_COMPLETION_DEFAULT_FLAG | DAT_COMPLETION_SUPPRESS_FLAG |
			  DAT_COMPLETION_UNSIGNALLED_FLAG |
			  DAT_COMPLETION_EVD_THRESHOLD_FLAG,
		  (int)p.completion_flags_supported);
	ASSERT_GT(p.num_provider_specific_attr, 0);
	EXPECT_STREQ("kdat_device", p.provider_specific_attr[0].name);

	/* an IA without SRQs says so */
	kernel.answer<kdat_ioc_ia_query>(KDAT_IOC_IA_QUERY, [](kdat_ioc_ia_query &q) {
		q.attr.max_srqs = 0;
		return DAT_SUCCESS;
	});
	ASSERT_OK(dat_ia_query(srv.ia, nullptr, 0, nullptr,
			       DAT_PROVIDER_FIELD_ALL, &p));
	EXPECT_EQ(DAT_FALSE, p.srq_supported);
	kernel.answer_raw(KDAT_IOC_IA_QUERY, nullptr);

	/* the PZ, LMR queries hand back what was created */
	kernel.reset_counts();
	DAT_PZ_PARAM pz;
	ASSERT_OK(dat_pz_query(srv.pz, DAT_PZ_FIELD_ALL, &pz));
	EXPECT_EQ(srv.ia, pz.ia_handle);
	DAT_LMR_PARAM l;
	ASSERT_OK(dat_lmr_query(srv.lmr, DAT_LMR_FIELD_ALL, &l));
	EXPECT_EQ(srv.ia, l.ia_handle);
	EXPECT_EQ(srv.pz, l.pz_handle);
	EXPECT_EQ(srv.lctx, l.lmr_context);
	EXPECT_EQ(srv.buf.size(), l.length);
	EXPECT_EQ((DAT_VADDR)(uintptr_t)srv.buf.data(), l.registered_address);
	EXPECT_EQ(DAT_MEM_TYPE_VIRTUAL, l.mem_type);
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* an LMR of an LMR registers the same memory again */
	DAT_REGION_DESCRIPTION r;
	r.for_lmr_handle = srv.lmr;
	DAT_LMR_HANDLE l2;
	DAT_LMR_CONTEXT c2;
	DAT_VADDR a2;
	ASSERT_OK(dat_lmr_create(srv.ia, DAT_MEM_TYPE_LMR, r, 4096, srv.pz,
				 DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &l2, &c2,
				 nullptr, nullptr, &a2));
	auto lc = kernel.last<kdat_ioc_lmr_create>(KDAT_IOC_LMR_CREATE);
	EXPECT_EQ((__u64)(uintptr_t)srv.buf.data(), lc.addr);
	EXPECT_EQ(4096u, lc.length);
	EXPECT_EQ((__u32)DAT_MEM_PRIV_LOCAL_WRITE_FLAG, lc.priv);
	EXPECT_EQ(kid<kdat::Pz>(srv.pz), lc.pz);
	EXPECT_NE(srv.lctx, c2);
	EXPECT_EQ((DAT_VADDR)(uintptr_t)srv.buf.data(), a2);
	/* the kernel's refusal to free a PZ in use comes back unchanged */
	kernel.status_next(KDAT_IOC_FREE,
			   E(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE));
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE),
		   dat_pz_free(srv.pz));
	ASSERT_OK(dat_pz_query(srv.pz, DAT_PZ_FIELD_ALL, &pz));
	EXPECT_OK(dat_lmr_free(l2));
}

/* A graceful close the kernel refuses leaves every handle of the IA valid. */
TEST_F(Cm, GracefulCloseTakesTheKernelsVerdict)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;
	DAT_PZ_HANDLE pz;

	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
	ASSERT_OK(dat_pz_create(ia, &pz));
	kernel.status_next(KDAT_IOC_IA_CLOSE, E(DAT_INVALID_STATE));
	EXPECT_DAT(E(DAT_INVALID_STATE), dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
	EXPECT_EQ((__u32)DAT_CLOSE_GRACEFUL_FLAG,
		  kernel.last<kdat_ioc_ia_close>(KDAT_IOC_IA_CLOSE).flags);
	DAT_PZ_PARAM p;
	EXPECT_OK(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &p));
	EXPECT_OK(dat_pz_free(pz));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
	DAT_HANDLE_TYPE t;
	EXPECT_DAT(E(DAT_INVALID_HANDLE), dat_get_handle_type(async, &t));
}

/* ---- dat_ep_modify -------------------------------------------------- */

/*
 * The kernel's modify decides everything; the library sends the mask as
 * given and the attribute fields it names, nothing else (the others may be
 * garbage), in one ioctl.
 */
TEST_F(Cm, EpModifySendsTheMaskAndOnlyTheFieldsItNames)
{
	DAT_EP_HANDLE ep = make_ep(cli);
	DAT_EP_PARAM p;
	const DAT_EP_PARAM_MASK all =
		DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS |
		DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV |
		DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE |
		DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE |
		DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
		DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT;

	std::memset(&p, 0xa5, sizeof(p));	/* garbage, enums included */
	p.ep_attr.max_request_dtos = 32;
	p.ep_attr.max_request_iov = 2;
	p.ep_attr.max_message_size = 8192;
	p.ep_attr.max_rdma_size = 65536;
	p.ep_attr.max_rdma_read_in = 4;
	p.ep_attr.max_rdma_read_out = 2;
	kernel.reset_counts();
	ASSERT_OK(dat_ep_modify(ep, all, &p));
	EXPECT_EQ(1u, kernel.total_ioctls());
	auto m = kernel.last<kdat_ioc_ep_modify>(KDAT_IOC_EP_MODIFY);
	EXPECT_EQ(kid<kdat::Ep>(ep), m.ep);
	EXPECT_EQ((__u64)all, m.mask);
	EXPECT_EQ(32, m.attr.max_request_dtos);
	EXPECT_EQ(2, m.attr.max_request_iov);
	EXPECT_EQ(8192u, m.attr.max_message_size);
	EXPECT_EQ(65536u, m.attr.max_rdma_size);
	EXPECT_EQ(4, m.attr.max_rdma_read_in);
	EXPECT_EQ(2, m.attr.max_rdma_read_out);
	EXPECT_EQ(0, m.attr.max_recv_dtos);	/* not in the mask */
	EXPECT_EQ(0, m.attr.max_recv_iov);
	EXPECT_EQ(0u, m.attr.recv_completion_flags);
	EXPECT_EQ(0u, m.pad);
	EXPECT_EQ(0u, m.attr.pad);

	ASSERT_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &p));
	m = kernel.last<kdat_ioc_ep_modify>(KDAT_IOC_EP_MODIFY);
	EXPECT_EQ(32, m.attr.max_request_dtos);
	EXPECT_EQ(0, m.attr.max_request_iov);
	EXPECT_EQ(0u, m.attr.max_message_size);

	/* a mask of nothing, and bits the kernel refuses, go to the kernel */
	ASSERT_OK(dat_ep_modify(ep, 0, &p));
	EXPECT_EQ(0u, kernel.last<kdat_ioc_ep_modify>(KDAT_IOC_EP_MODIFY).mask);
	ASSERT_OK(dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, &p));
	EXPECT_EQ((__u64)DAT_EP_FIELD_SRQ_HANDLE,
		  kernel.last<kdat_ioc_ep_modify>(KDAT_IOC_EP_MODIFY).mask);
	EXPECT_EQ(4u, kernel.ioctls(KDAT_IOC_EP_MODIFY));
	EXPECT_OK(dat_ep_free(ep));
}

TEST_F(Cm, EpModifyPassesTheKernelsCodesAndChecksOnlyTheNullParam)
{
	DAT_EP_HANDLE ep = make_ep(cli), freed = make_ep(cli);
	DAT_EP_PARAM p = {};

	for (DAT_RETURN r : { ARG(2), ARG(3),
			      E(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY) }) {
		kernel.status_next(KDAT_IOC_EP_MODIFY, r);
		EXPECT_DAT(r, dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &p));
	}

	/* NULL param cannot cross the ABI: the kernel's code, no ioctl */
	ASSERT_OK(dat_ep_free(freed));
	kernel.reset_counts();
	EXPECT_DAT(ARG(3), dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
					 nullptr));
	EXPECT_DAT(ARG(3), dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, nullptr));
	/* handles: NULL, wrong type, freed */
	const DAT_EP_PARAM_MASK m = DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS;
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP), dat_ep_modify(nullptr, m, &p));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP), dat_ep_modify(cli.pz, m, &p));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP), dat_ep_modify(freed, m, &p));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_ep_free(ep));
}

/* A modified SRQ EP still reports its SRQ: the handle is the library's. */
TEST_F(Cm, EpModifyOfSrqEpKeepsItsSrq)
{
	DAT_SRQ_ATTR sa = { 16, 1, DAT_SRQ_LW_DEFAULT };
	DAT_SRQ_HANDLE srq;
	DAT_EP_ATTR at = ep_attr(0);
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM p = {}, q;

	ASSERT_OK(dat_srq_create(srv.ia, srv.pz, &sa, &srq));
	ASSERT_OK(dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto, srv.dto,
					 srv.conn, srq, &at, &ep));
	p.ep_attr = at;
	p.ep_attr.max_request_iov = 3;
	ASSERT_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, &p));
	ASSERT_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
	EXPECT_EQ(srq, q.srq_handle);
	EXPECT_OK(dat_ep_free(ep));
	EXPECT_OK(dat_srq_free(srq));
}
