// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Connections through the library on the fake kernel: a connection
// request creates its CR handle, CR queries and private data, accept and
// reject, the established/rejected/disconnected events and their private
// data, EP and PSP queries, plain (non-SRQ) send/receive completions.
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

	Side srv, cli;
};

} // namespace

TEST_F(Cm, RequestAcceptEstablishedWithPrivateData)
{
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE sep, cep;
	DAT_PSP_HANDLE psp;
	struct sockaddr_in sin = ipv4("192.0.2.1");
	const char req[] = "hello server", rep[] = "welcome";

	ASSERT_OK(dat_ep_create(srv.ia, srv.pz, srv.dto, srv.dto, srv.conn, &at, &sep));
	ASSERT_OK(dat_ep_create(cli.ia, cli.pz, cli.dto, cli.dto, cli.conn, &at, &cep));
	ASSERT_OK(dat_psp_create(srv.ia, 5001, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	EXPECT_DAT(E(DAT_CONN_QUAL_IN_USE),
		   dat_psp_create(srv.ia, 5001, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	DAT_PSP_PARAM pp;
	ASSERT_OK(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp));
	EXPECT_EQ(srv.ia, pp.ia_handle);
	EXPECT_EQ(5001u, pp.conn_qual);
	EXPECT_EQ(srv.cr, pp.evd_handle);
	EXPECT_EQ(DAT_PSP_CONSUMER_FLAG, pp.psp_flags);

	ASSERT_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, 5001, 1000000,
				 sizeof(req), (DAT_PVOID)req, DAT_QOS_BEST_EFFORT,
				 DAT_CONNECT_DEFAULT_FLAG));
	DAT_EVENT e = next_event(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
	auto &cr = e.event_data.cr_arrival_event_data;
	EXPECT_EQ(psp, cr.sp_handle.psp_handle);
	EXPECT_EQ(5001u, cr.conn_qual);
	auto *local = (struct sockaddr_in *)cr.local_ia_address_ptr;
	ASSERT_NE(nullptr, local);
	EXPECT_EQ(sin.sin_addr.s_addr, local->sin_addr.s_addr);
	DAT_HANDLE_TYPE t;
	ASSERT_OK(dat_get_handle_type(cr.cr_handle, &t));
	EXPECT_EQ(DAT_HANDLE_TYPE_CR, t);

	DAT_CR_PARAM p;
	ASSERT_OK(dat_cr_query(cr.cr_handle, DAT_CR_FIELD_ALL, &p));
	EXPECT_EQ((DAT_COUNT)sizeof(req), p.private_data_size);
	EXPECT_STREQ(req, (const char *)p.private_data);
	auto *remote = (struct sockaddr_in *)p.remote_ia_address_ptr;
	EXPECT_EQ(ipv4("192.0.2.2").sin_addr.s_addr, remote->sin_addr.s_addr);
	EXPECT_EQ(nullptr, p.local_ep_handle);
	EXPECT_DAT(ARG(3), dat_cr_query(cr.cr_handle, DAT_CR_FIELD_ALL, nullptr));
	EXPECT_DAT(ARG(3), dat_cr_accept(cr.cr_handle, sep, -1, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_cr_accept(cr.cr_handle, cli.pz, 0, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_cr_accept(cr.cr_handle, cep, 0, nullptr)); /* other IA */

	ASSERT_OK(dat_cr_accept(cr.cr_handle, sep, sizeof(rep), (DAT_PVOID)rep));
	/* consumed */
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CR),
		   dat_cr_query(cr.cr_handle, DAT_CR_FIELD_ALL, &p));
	e = next_event(srv.conn, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(sep, e.event_data.connect_event_data.ep_handle);
	e = next_event(cli.conn, DAT_CONNECTION_EVENT_ESTABLISHED);
	EXPECT_EQ(cep, e.event_data.connect_event_data.ep_handle);
	EXPECT_EQ((DAT_COUNT)sizeof(rep),
		  e.event_data.connect_event_data.private_data_size);
	EXPECT_STREQ(rep, (const char *)e.event_data.connect_event_data.private_data);

	DAT_EP_PARAM ep;
	ASSERT_OK(dat_ep_query(cep, DAT_EP_FIELD_ALL, &ep));
	EXPECT_EQ(DAT_EP_STATE_CONNECTED, ep.ep_state);
	EXPECT_EQ(cli.ia, ep.ia_handle);
	EXPECT_EQ(cli.pz, ep.pz_handle);
	EXPECT_EQ(cli.dto, ep.recv_evd_handle);
	EXPECT_EQ(cli.conn, ep.connect_evd_handle);
	EXPECT_EQ(nullptr, ep.srq_handle);
	EXPECT_EQ(5001u, ep.remote_port_qual);
	EXPECT_EQ(sin.sin_addr.s_addr,
		  ((struct sockaddr_in *)ep.remote_ia_address_ptr)->sin_addr.s_addr);
	EXPECT_EQ(4096u, ep.ep_attr.max_message_size);
	EXPECT_EQ(DAT_SERVICE_TYPE_RC, ep.ep_attr.service_type);

	DAT_EP_STATE st;
	DAT_BOOLEAN ri, qi;
	ASSERT_OK(dat_ep_get_status(sep, &st, &ri, &qi));
	EXPECT_EQ(DAT_EP_STATE_CONNECTED, st);

	/* disconnect: both sides hear it */
	ASSERT_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	e = next_event(cli.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_EQ(cep, e.event_data.connect_event_data.ep_handle);
	EXPECT_EQ(0, e.event_data.connect_event_data.private_data_size);
	e = next_event(srv.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_EQ(sep, e.event_data.connect_event_data.ep_handle);
	ASSERT_OK(dat_ep_reset(cep));
	ASSERT_OK(dat_ep_get_status(cep, &st, nullptr, nullptr));
	EXPECT_EQ(DAT_EP_STATE_UNCONNECTED, st);

	EXPECT_OK(dat_psp_free(psp));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_PSP), dat_psp_free(psp));
	EXPECT_OK(dat_ep_free(sep));
	EXPECT_OK(dat_ep_free(cep));
}

TEST_F(Cm, RejectAndUnreachable)
{
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE cep;
	DAT_PSP_HANDLE psp;
	struct sockaddr_in sin = ipv4("192.0.2.1");

	ASSERT_OK(dat_ep_create(cli.ia, cli.pz, cli.dto, cli.dto, cli.conn, &at, &cep));
	ASSERT_OK(dat_psp_create(srv.ia, 5002, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	ASSERT_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, 5002, 1000000, 0,
				 nullptr, DAT_QOS_BEST_EFFORT,
				 DAT_CONNECT_DEFAULT_FLAG));
	DAT_EVENT e = next_event(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
	DAT_CR_HANDLE cr = e.event_data.cr_arrival_event_data.cr_handle;
	ASSERT_OK(dat_cr_reject(cr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CR), dat_cr_reject(cr));
	next_event(cli.conn, DAT_CONNECTION_EVENT_PEER_REJECTED);

	/* nobody listens on that qualifier */
	ASSERT_OK(dat_ep_reset(cep));
	ASSERT_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, 5003, 1000000, 0,
				 nullptr, DAT_QOS_BEST_EFFORT,
				 DAT_CONNECT_DEFAULT_FLAG));
	next_event(cli.conn, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	EXPECT_OK(dat_ep_free(cep));
}

TEST_F(Cm, SendAndReceiveCompletionsNameTheirEp)
{
	DAT_EP_HANDLE sep, cep;
	connect_pair(srv, cli, nullptr, sep, cep, 5004);
	DAT_LMR_TRIPLET r = srv.seg(1024, 64);
	DAT_DTO_COOKIE c;
	c.as_64 = 0x5151;
	ASSERT_OK(dat_ep_post_recv(sep, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG));

	send_text(cli, cep, "ping", 0, 0x1212);
	DAT_EVENT e = next_event(cli.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(cep, e.event_data.dto_completion_event_data.ep_handle);
	EXPECT_EQ(0x1212u, e.event_data.dto_completion_event_data.user_cookie.as_64);
	EXPECT_EQ(5u, e.event_data.dto_completion_event_data.transfered_length);
	e = next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(sep, e.event_data.dto_completion_event_data.ep_handle);
	EXPECT_EQ(0x5151u, e.event_data.dto_completion_event_data.user_cookie.as_64);
	EXPECT_EQ(DAT_DTO_SUCCESS, e.event_data.dto_completion_event_data.status);
	EXPECT_STREQ("ping", srv.buf.data() + 1024);

	/* freeing a connected EP: the peer is told, its receives flushed */
	ASSERT_OK(dat_ep_post_recv(sep, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG));
	ASSERT_OK(dat_ep_free(cep));
	next_event(srv.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
	e = next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(DAT_DTO_ERR_FLUSHED, e.event_data.dto_completion_event_data.status);
	EXPECT_OK(dat_ep_free(sep));
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
			  DAT_COMPLETION_SOLICITED_WAIT_FLAG |
			  DAT_COMPLETION_EVD_THRESHOLD_FLAG,
		  (int)p.completion_flags_supported);
	ASSERT_GT(p.num_provider_specific_attr, 0);
	EXPECT_STREQ("kdat_device", p.provider_specific_attr[0].name);

	/* the PZ, LMR queries hand back what was created */
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

	/* an LMR of an LMR registers the same memory again */
	DAT_REGION_DESCRIPTION r;
	r.for_lmr_handle = srv.lmr;
	DAT_LMR_HANDLE l2;
	DAT_LMR_CONTEXT c2;
	DAT_VADDR a2;
	ASSERT_OK(dat_lmr_create(srv.ia, DAT_MEM_TYPE_LMR, r, 4096, srv.pz,
				 DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &l2, &c2,
				 nullptr, nullptr, &a2));
	EXPECT_NE(srv.lctx, c2);
	EXPECT_EQ((DAT_VADDR)(uintptr_t)srv.buf.data(), a2);
	EXPECT_DAT(E(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE),
		   dat_pz_free(srv.pz));
	EXPECT_OK(dat_lmr_free(l2));
}

TEST_F(Cm, GracefulCloseRefusedWhileObjectsLive)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;
	DAT_PZ_HANDLE pz;

	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
	ASSERT_OK(dat_pz_create(ia, &pz));
	EXPECT_DAT(E(DAT_INVALID_STATE), dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
	EXPECT_OK(dat_pz_free(pz));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

/*
 * dat_ep_modify (KDAT_IOC_EP_MODIFY): the kernel's kdat_ib_ep_modify
 * decides; the library only marshals, and checks only the NULL param the
 * ABI cannot carry, with the kernel's code.
 */
TEST_F(Cm, EpModifyChangesAttributesSeenByQueryAndPosts)
{
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE sep, cep;
	DAT_EP_PARAM before, after, p = {};

	ASSERT_OK(dat_ep_create(srv.ia, srv.pz, srv.dto, srv.dto, srv.conn, &at, &sep));
	ASSERT_OK(dat_ep_create(cli.ia, cli.pz, cli.dto, cli.dto, cli.conn, &at, &cep));
	ASSERT_OK(dat_ep_query(cep, DAT_EP_FIELD_ALL, &before));

	/* every field the kernel lets change, plus values of fields not in
	   the mask that must be ignored */
	p.ep_attr = before.ep_attr;
	p.ep_attr.max_request_dtos = 32;
	p.ep_attr.max_request_iov = 2;
	p.ep_attr.max_message_size = 8192;
	p.ep_attr.max_rdma_size = 65536;
	p.ep_attr.max_rdma_read_in = 4;
	p.ep_attr.max_rdma_read_out = 2;
	p.ep_attr.max_recv_dtos = 99;		/* not in the mask */
	p.ep_attr.max_recv_iov = 7;		/* not in the mask */
	kernel.reset_counts();
	ASSERT_OK(dat_ep_modify(cep,
				DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS |
				DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV |
				DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE |
				DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE |
				DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
				DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT, &p));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EP_MODIFY));
	EXPECT_EQ(1u, kernel.total_ioctls());

	ASSERT_OK(dat_ep_query(cep, DAT_EP_FIELD_ALL, &after));
	EXPECT_EQ(32, after.ep_attr.max_request_dtos);
	EXPECT_EQ(2, after.ep_attr.max_request_iov);
	EXPECT_EQ(8192u, after.ep_attr.max_message_size);
	EXPECT_EQ(65536u, after.ep_attr.max_rdma_size);
	EXPECT_EQ(4, after.ep_attr.max_rdma_read_in);
	EXPECT_EQ(2, after.ep_attr.max_rdma_read_out);
	EXPECT_EQ(before.ep_attr.max_recv_dtos, after.ep_attr.max_recv_dtos);
	EXPECT_EQ(before.ep_attr.max_recv_iov, after.ep_attr.max_recv_iov);
	EXPECT_EQ(DAT_EP_STATE_UNCONNECTED, after.ep_state);

	/* a mask of nothing changes nothing and succeeds */
	ASSERT_OK(dat_ep_modify(cep, 0, &p));
	ASSERT_OK(dat_ep_query(cep, DAT_EP_FIELD_ALL, &after));
	EXPECT_EQ(2, after.ep_attr.max_request_iov);

	/* the new max_request_iov governs the posts of the connection */
	connect_eps(srv, cli, sep, cep, 5010);
	DAT_EVENT e;
	DAT_LMR_TRIPLET r = srv.seg(1024, 64);
	DAT_DTO_COOKIE c;
	c.as_64 = 1;
	ASSERT_OK(dat_ep_post_recv(sep, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG));
	std::memcpy(cli.buf.data(), "ab", 2);
	std::memcpy(cli.buf.data() + 100, "c", 2);
	DAT_LMR_TRIPLET two[2] = { cli.seg(0, 2), cli.seg(100, 2) };
	ASSERT_OK(dat_ep_post_send(cep, 2, two, c, DAT_COMPLETION_DEFAULT_FLAG));
	e = next_event(cli.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_EQ(4u, e.event_data.dto_completion_event_data.transfered_length);
	e = next_event(srv.dto, DAT_DTO_COMPLETION_EVENT);
	EXPECT_STREQ("abc", srv.buf.data() + 1024);

	EXPECT_OK(dat_ep_free(cep));
	next_event(srv.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_OK(dat_ep_free(sep));
}

/* Fields the mask does not name are never read: they may hold anything. */
TEST_F(Cm, EpModifyReadsOnlyTheFieldsTheMaskNames)
{
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM p, q;

	ASSERT_OK(dat_ep_create(cli.ia, cli.pz, cli.dto, cli.dto, cli.conn, &at, &ep));
	std::memset(&p, 0xa5, sizeof(p));	/* garbage, enums included */
	p.ep_attr.max_request_dtos = 24;
	ASSERT_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &p));
	ASSERT_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
	EXPECT_EQ(24, q.ep_attr.max_request_dtos);
	EXPECT_EQ(at.max_request_iov, q.ep_attr.max_request_iov);
	EXPECT_EQ(at.max_message_size, q.ep_attr.max_message_size);
	EXPECT_OK(dat_ep_free(ep));
}

TEST_F(Cm, EpModifyRefusesBadMaskValuesAndHandlesWithKernelCodes)
{
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE ep, freed;
	DAT_EP_PARAM before, after, p = {};

	ASSERT_OK(dat_ep_create(cli.ia, cli.pz, cli.dto, cli.dto, cli.conn, &at, &ep));
	ASSERT_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &before));
	p.ep_attr = before.ep_attr;

	/* fields the kernel can not change: DAT_INVALID_ARG2, from the kernel */
	for (DAT_EP_PARAM_MASK m :
	     { DAT_EP_FIELD_SRQ_HANDLE, DAT_EP_FIELD_RECV_EVD_HANDLE,
	       DAT_EP_FIELD_REQUEST_EVD_HANDLE, DAT_EP_FIELD_CONNECT_EVD_HANDLE,
	       DAT_EP_FIELD_PZ_HANDLE, DAT_EP_FIELD_EP_STATE,
	       DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS,
	       DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS,
	       DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE,
	       DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS | DAT_EP_FIELD_EP_ATTR_QOS,
	       DAT_EP_FIELD_ALL, DAT_EP_PARAM_MASK(1) << 40 }) {
		kernel.reset_counts();
		EXPECT_DAT(ARG(2), dat_ep_modify(ep, m, &p)) << std::hex << m;
		EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EP_MODIFY)) << std::hex << m;
	}

	/* values the kernel refuses: DAT_INVALID_ARG3 */
	struct Bad {
		DAT_EP_PARAM_MASK mask;
		void (*set)(DAT_EP_ATTR &);
	} bad[] = {
		{ DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
		  [](DAT_EP_ATTR &a) { a.max_request_dtos = 0; } },
		{ DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
		  [](DAT_EP_ATTR &a) { a.max_request_dtos = -1; } },
		{ DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV,
		  [](DAT_EP_ATTR &a) { a.max_request_iov = 0; } },
		{ DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV,
		  [](DAT_EP_ATTR &a) { a.max_request_iov = KDAT_MAX_IOV + 1; } },
		{ DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE,
		  [](DAT_EP_ATTR &a) { a.max_message_size = 0; } },
		{ DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE,
		  [](DAT_EP_ATTR &a) { a.max_message_size = (1ull << 31) + 1; } },
		{ DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE,
		  [](DAT_EP_ATTR &a) { a.max_rdma_size = 1ull << 32; } },
		{ DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN,
		  [](DAT_EP_ATTR &a) { a.max_rdma_read_in = -1; } },
		{ DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT,
		  [](DAT_EP_ATTR &a) { a.max_rdma_read_out = -1; } },
	};
	for (const Bad &b : bad) {
		DAT_EP_PARAM q = p;
		b.set(q.ep_attr);
		EXPECT_DAT(ARG(3), dat_ep_modify(ep, b.mask, &q)) << std::hex << b.mask;
	}
	/* a bad value outside the mask is not looked at */
	{
		DAT_EP_PARAM q = p;
		q.ep_attr.max_request_dtos = 0;
		q.ep_attr.max_rdma_read_in = 2;
		EXPECT_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, &q));
		q.ep_attr.max_rdma_read_in = before.ep_attr.max_rdma_read_in;
		EXPECT_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, &q));
	}

	/* NULL param: the kernel's first check, so also before the mask */
	kernel.reset_counts();
	EXPECT_DAT(ARG(3), dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
					 nullptr));
	EXPECT_DAT(ARG(3), dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, nullptr));
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* nothing of the refused calls stuck */
	ASSERT_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &after));
	EXPECT_EQ(0, std::memcmp(&before.ep_attr, &after.ep_attr,
				 sizeof(before.ep_attr)));

	/* handles: NULL, wrong type, freed */
	ASSERT_OK(dat_ep_create(cli.ia, cli.pz, cli.dto, cli.dto, cli.conn, &at, &freed));
	ASSERT_OK(dat_ep_free(freed));
	kernel.reset_counts();
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_ep_modify(nullptr, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &p));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_ep_modify(cli.pz, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &p));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EP),
		   dat_ep_modify(freed, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &p));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_ep_free(ep));
}

TEST_F(Cm, EpModifyRefusedUnlessUnconnected)
{
	DAT_EP_HANDLE sep, cep;
	DAT_EP_PARAM before, after, p = {};
	const DAT_EP_PARAM_MASK m = DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS;

	connect_pair(srv, cli, nullptr, sep, cep, 5011);
	ASSERT_OK(dat_ep_query(cep, DAT_EP_FIELD_ALL, &before));
	p.ep_attr = before.ep_attr;
	p.ep_attr.max_request_dtos = before.ep_attr.max_request_dtos * 2;

	const DAT_RETURN notready =
		E(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	EXPECT_DAT(notready, dat_ep_modify(cep, m, &p));
	EXPECT_DAT(notready, dat_ep_modify(sep, m, &p));
	/* the kernel checks the mask and the values before the state */
	EXPECT_DAT(ARG(2), dat_ep_modify(cep, DAT_EP_FIELD_SRQ_HANDLE, &p));
	{
		DAT_EP_PARAM q = p;
		q.ep_attr.max_request_dtos = 0;
		EXPECT_DAT(ARG(3), dat_ep_modify(cep, m, &q));
	}

	/* disconnected: still refused; after dat_ep_reset it works again */
	ASSERT_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	next_event(cli.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
	next_event(srv.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_DAT(notready, dat_ep_modify(cep, m, &p));
	ASSERT_OK(dat_ep_query(cep, DAT_EP_FIELD_ALL, &after));
	EXPECT_EQ(before.ep_attr.max_request_dtos, after.ep_attr.max_request_dtos);
	ASSERT_OK(dat_ep_reset(cep));
	ASSERT_OK(dat_ep_modify(cep, m, &p));
	ASSERT_OK(dat_ep_query(cep, DAT_EP_FIELD_ALL, &after));
	EXPECT_EQ(p.ep_attr.max_request_dtos, after.ep_attr.max_request_dtos);

	/* an EP waiting for its connection is not unconnected either */
	struct sockaddr_in sin = ipv4("192.0.2.1");
	DAT_PSP_HANDLE psp;
	ASSERT_OK(dat_psp_create(srv.ia, 5012, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	ASSERT_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, 5012, 1000000, 0,
				 nullptr, DAT_QOS_BEST_EFFORT,
				 DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_DAT(notready, dat_ep_modify(cep, m, &p));
	DAT_EVENT e = next_event(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
	ASSERT_OK(dat_cr_reject(e.event_data.cr_arrival_event_data.cr_handle));
	next_event(cli.conn, DAT_CONNECTION_EVENT_PEER_REJECTED);

	EXPECT_OK(dat_psp_free(psp));
	EXPECT_OK(dat_ep_free(cep));
	EXPECT_OK(dat_ep_free(sep));
}

TEST_F(Cm, EpModifyOfSrqEpKeepsItsSrq)
{
	DAT_SRQ_ATTR sa = { 16, 1, DAT_SRQ_LW_DEFAULT };
	DAT_SRQ_HANDLE srq, srq2;
	DAT_EP_ATTR at = ep_attr(0);
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM p = {}, q;

	ASSERT_OK(dat_srq_create(srv.ia, srv.pz, &sa, &srq));
	ASSERT_OK(dat_srq_create(srv.ia, srv.pz, &sa, &srq2));
	ASSERT_OK(dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto, srv.dto,
					 srv.conn, srq, &at, &ep));
	p.srq_handle = srq2;
	p.ep_attr = at;
	p.ep_attr.max_request_iov = 3;
	EXPECT_DAT(ARG(2), dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, &p));
	ASSERT_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, &p));
	ASSERT_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
	EXPECT_EQ(srq, q.srq_handle);
	EXPECT_EQ(3, q.ep_attr.max_request_iov);
	EXPECT_OK(dat_ep_free(ep));
	EXPECT_OK(dat_srq_free(srq2));
	EXPECT_OK(dat_srq_free(srq));
}
