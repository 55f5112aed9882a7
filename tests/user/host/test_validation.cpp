// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// What the library refuses before it makes any system call: NULL, freed,
// stale, garbage and wrong-type handles (DAT_INVALID_HANDLE with the
// call's subtype), handles of another IA, and bad arguments it must check
// itself because the kernel never sees them (output pointers, segment
// counts, triplets of SRQ receives).  Each check also proves, through the
// protocol fake's ioctl counter, that nothing reached the device.
#include <functional>

#include "test_util.hpp"

namespace {

struct Call {
	const char *name;
	DAT_RETURN expected;
	std::function<DAT_RETURN(DAT_HANDLE)> fn;
};

DAT_EVENT ev;
DAT_COUNT cnt;
DAT_LMR_TRIPLET trip;
DAT_RMR_TRIPLET rtrip;
DAT_DTO_COOKIE cookie;

std::vector<Call> every_call()
{
	DAT_REGION_DESCRIPTION r;
	r.for_va = &ev;
	static DAT_IA_ATTR ia_attr;
	static DAT_PROVIDER_ATTR p_attr;
	static DAT_EVD_PARAM evd_p;
	static DAT_EP_PARAM ep_p;
	static DAT_SRQ_PARAM srq_p;
	static DAT_LMR_PARAM lmr_p;
	static DAT_PZ_PARAM pz_p;
	static DAT_PSP_PARAM psp_p;
	static DAT_CR_PARAM cr_p;
	static DAT_SRQ_ATTR srq_a = { 8, 1, 0 };
	static DAT_EP_ATTR ep_a = ep_attr();
	static DAT_HANDLE out;
	static DAT_CONTEXT ctx;
	static DAT_HANDLE_TYPE type;
	static DAT_EP_STATE state;
	static struct sockaddr_in sin = ipv4("192.0.2.1");
	static DAT_CONN_QUAL qual;
	static DAT_LMR_CONTEXT lctx;
	static int fd;

	const DAT_RETURN IA = BAD(DAT_INVALID_HANDLE_IA),
			 EVD = BAD(DAT_INVALID_HANDLE_EVD_ASYNC),
			 PZ = BAD(DAT_INVALID_HANDLE_PZ),
			 LMR = BAD(DAT_INVALID_HANDLE_LMR),
			 EP = BAD(DAT_INVALID_HANDLE_EP),
			 SRQ = BAD(DAT_INVALID_HANDLE_SRQ),
			 PSP = BAD(DAT_INVALID_HANDLE_PSP),
			 CR = BAD(DAT_INVALID_HANDLE_CR),
			 CNO = BAD(DAT_INVALID_HANDLE_CNO),
			 RMR = BAD(DAT_INVALID_HANDLE_RMR),
			 RSP = BAD(DAT_INVALID_HANDLE_RSP),
			 ANY = E(DAT_INVALID_HANDLE);

	return {
		{ "ia_query", IA, [](auto h) { return dat_ia_query(h, nullptr, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &p_attr); } },
		{ "ia_close", IA, [](auto h) { return dat_ia_close(h, DAT_CLOSE_ABRUPT_FLAG); } },
		{ "kdat_get_fd", IA, [](auto h) { return dat_kdat_get_fd(h, &fd); } },
		{ "set_consumer_context", ANY, [](auto h) { return dat_set_consumer_context(h, ctx); } },
		{ "get_consumer_context", ANY, [](auto h) { return dat_get_consumer_context(h, &ctx); } },
		{ "get_handle_type", ANY, [](auto h) { return dat_get_handle_type(h, &type); } },
		{ "pz_create", IA, [](auto h) { return dat_pz_create(h, &out); } },
		{ "pz_query", PZ, [](auto h) { return dat_pz_query(h, DAT_PZ_FIELD_ALL, &pz_p); } },
		{ "pz_free", PZ, [](auto h) { return dat_pz_free(h); } },
		{ "evd_create", IA, [](auto h) { return dat_evd_create(h, 8, nullptr, DAT_EVD_DTO_FLAG, &out); } },
		{ "evd_query", EVD, [](auto h) { return dat_evd_query(h, DAT_EVD_FIELD_ALL, &evd_p); } },
		{ "evd_resize", EVD, [](auto h) { return dat_evd_resize(h, 8); } },
		{ "evd_post_se", EVD, [](auto h) { ev.event_number = DAT_SOFTWARE_EVENT; return dat_evd_post_se(h, &ev); } },
		{ "evd_dequeue", EVD, [](auto h) { return dat_evd_dequeue(h, &ev); } },
		{ "evd_wait", EVD, [](auto h) { return dat_evd_wait(h, 0, 1, &ev, &cnt); } },
		{ "evd_enable", EVD, [](auto h) { return dat_evd_enable(h); } },
		{ "evd_disable", EVD, [](auto h) { return dat_evd_disable(h); } },
		{ "evd_set_unwaitable", EVD, [](auto h) { return dat_evd_set_unwaitable(h); } },
		{ "evd_clear_unwaitable", EVD, [](auto h) { return dat_evd_clear_unwaitable(h); } },
		{ "evd_modify_cno", EVD, [](auto h) { return dat_evd_modify_cno(h, nullptr); } },
		{ "evd_free", EVD, [](auto h) { return dat_evd_free(h); } },
		{ "cno_create", IA, [](auto h) { return dat_cno_create(h, DAT_OS_WAIT_PROXY_AGENT_NULL, &out); } },
		{ "cno_modify_agent", CNO, [](auto h) { return dat_cno_modify_agent(h, DAT_OS_WAIT_PROXY_AGENT_NULL); } },
		{ "cno_query", CNO, [](auto h) { DAT_CNO_PARAM p; return dat_cno_query(h, DAT_CNO_FIELD_ALL, &p); } },
		{ "cno_free", CNO, [](auto h) { return dat_cno_free(h); } },
		{ "cno_wait", CNO, [](auto h) { return dat_cno_wait(h, 0, &out); } },
		{ "lmr_create", IA, [r](auto h) { return dat_lmr_create(h, DAT_MEM_TYPE_VIRTUAL, r, 8, nullptr, DAT_MEM_PRIV_ALL_FLAG, &out, &lctx, nullptr, nullptr, nullptr); } },
		{ "lmr_query", LMR, [](auto h) { return dat_lmr_query(h, DAT_LMR_FIELD_ALL, &lmr_p); } },
		{ "lmr_free", LMR, [](auto h) { return dat_lmr_free(h); } },
		{ "lmr_sync_rdma_read", IA, [](auto h) { return dat_lmr_sync_rdma_read(h, &trip, 0); } },
		{ "lmr_sync_rdma_write", IA, [](auto h) { return dat_lmr_sync_rdma_write(h, &trip, 0); } },
		{ "rmr_create", PZ, [](auto h) { return dat_rmr_create(h, &out); } },
		{ "rmr_query", RMR, [](auto h) { DAT_RMR_PARAM p; return dat_rmr_query(h, DAT_RMR_FIELD_ALL, &p); } },
		{ "rmr_bind", RMR, [](auto h) { DAT_RMR_CONTEXT c; return dat_rmr_bind(h, &trip, DAT_MEM_PRIV_ALL_FLAG, nullptr, cookie, DAT_COMPLETION_DEFAULT_FLAG, &c); } },
		{ "rmr_free", RMR, [](auto h) { return dat_rmr_free(h); } },
		{ "srq_create", IA, [](auto h) { return dat_srq_create(h, nullptr, &srq_a, &out); } },
		{ "srq_free", SRQ, [](auto h) { return dat_srq_free(h); } },
		{ "srq_post_recv", SRQ, [](auto h) { return dat_srq_post_recv(h, 1, &trip, cookie); } },
		{ "kdat_srq_post_recv_ioctl", SRQ, [](auto h) { return dat_kdat_srq_post_recv_ioctl(h, 1, &trip, cookie); } },
		{ "kdat_srq_get_refused", SRQ, [](auto h) { DAT_RETURN w; return dat_kdat_srq_get_refused(h, &cookie, &w); } },
		{ "srq_query", SRQ, [](auto h) { return dat_srq_query(h, DAT_SRQ_FIELD_ALL, &srq_p); } },
		{ "srq_resize", SRQ, [](auto h) { return dat_srq_resize(h, 8); } },
		{ "srq_set_lw", SRQ, [](auto h) { return dat_srq_set_lw(h, 1); } },
		{ "ep_create", IA, [](auto h) { return dat_ep_create(h, nullptr, nullptr, nullptr, nullptr, &ep_a, &out); } },
		{ "ep_create_with_srq", IA, [](auto h) { return dat_ep_create_with_srq(h, nullptr, nullptr, nullptr, nullptr, nullptr, &ep_a, &out); } },
		{ "ep_query", EP, [](auto h) { return dat_ep_query(h, DAT_EP_FIELD_ALL, &ep_p); } },
		{ "ep_modify", EP, [](auto h) { return dat_ep_modify(h, 0, &ep_p); } },
		{ "ep_connect", EP, [](auto h) { return dat_ep_connect(h, (DAT_IA_ADDRESS_PTR)&sin, 1, 0, 0, nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG); } },
		{ "ep_dup_connect", EP, [](auto h) { return dat_ep_dup_connect(h, nullptr, 0, 0, nullptr, DAT_QOS_BEST_EFFORT); } },
		{ "ep_disconnect", EP, [](auto h) { return dat_ep_disconnect(h, DAT_CLOSE_ABRUPT_FLAG); } },
		{ "ep_post_send", EP, [](auto h) { return dat_ep_post_send(h, 1, &trip, cookie, DAT_COMPLETION_DEFAULT_FLAG); } },
		{ "ep_post_recv", EP, [](auto h) { return dat_ep_post_recv(h, 1, &trip, cookie, DAT_COMPLETION_DEFAULT_FLAG); } },
		{ "ep_post_rdma_read", EP, [](auto h) { return dat_ep_post_rdma_read(h, 1, &trip, cookie, &rtrip, DAT_COMPLETION_DEFAULT_FLAG); } },
		{ "ep_post_rdma_write", EP, [](auto h) { return dat_ep_post_rdma_write(h, 1, &trip, cookie, &rtrip, DAT_COMPLETION_DEFAULT_FLAG); } },
		{ "ep_get_status", EP, [](auto h) { return dat_ep_get_status(h, &state, nullptr, nullptr); } },
		{ "ep_free", EP, [](auto h) { return dat_ep_free(h); } },
		{ "ep_reset", EP, [](auto h) { return dat_ep_reset(h); } },
		{ "ep_recv_query", EP, [](auto h) { return dat_ep_recv_query(h, &cnt, &cnt); } },
		{ "ep_set_watermark", EP, [](auto h) { return dat_ep_set_watermark(h, 1, 1); } },
		{ "psp_create", IA, [](auto h) { return dat_psp_create(h, 1, nullptr, DAT_PSP_CONSUMER_FLAG, &out); } },
		{ "psp_create_any", IA, [](auto h) { return dat_psp_create_any(h, &qual, nullptr, DAT_PSP_CONSUMER_FLAG, &out); } },
		{ "psp_query", PSP, [](auto h) { return dat_psp_query(h, DAT_PSP_FIELD_ALL, &psp_p); } },
		{ "psp_free", PSP, [](auto h) { return dat_psp_free(h); } },
		{ "rsp_create", IA, [](auto h) { return dat_rsp_create(h, 1, nullptr, nullptr, &out); } },
		{ "rsp_query", RSP, [](auto h) { DAT_RSP_PARAM p; return dat_rsp_query(h, DAT_RSP_FIELD_ALL, &p); } },
		{ "rsp_free", RSP, [](auto h) { return dat_rsp_free(h); } },
		{ "cr_query", CR, [](auto h) { return dat_cr_query(h, DAT_CR_FIELD_ALL, &cr_p); } },
		{ "cr_accept", CR, [](auto h) { return dat_cr_accept(h, nullptr, 0, nullptr); } },
		{ "cr_reject", CR, [](auto h) { return dat_cr_reject(h); } },
		{ "cr_handoff", CR, [](auto h) { return dat_cr_handoff(h, 1); } },
	};
}

class Validation : public FakeKernelTest {
protected:
	void check_all(DAT_HANDLE h, const char *what,
		       const std::function<bool(const Call &)> &skip)
	{
		for (const Call &c : every_call()) {
			if (skip(c))
				continue;
			kernel.reset_counts();
			EXPECT_DAT(c.expected, c.fn(h)) << what << " " << c.name;
			EXPECT_EQ(0u, kernel.total_ioctls())
				<< what << " " << c.name;
		}
	}
};

} // namespace

TEST_F(Validation, NullHandleIsInvalidForEveryCall)
{
	check_all(nullptr, "NULL", [](const Call &) { return false; });
}

TEST_F(Validation, GarbageHandlesAreNeverDereferenced)
{
	long junk[64] = {};
	/* a "handle" whose first word looks like a provider pointer */
	junk[0] = (long)&junk[8];
	check_all(junk, "stack address", [](const Call &) { return false; });
	check_all((DAT_HANDLE)0x1, "0x1", [](const Call &) { return false; });
	check_all((DAT_HANDLE)0xdeadbeef000ull, "wild",
		  [](const Call &) { return false; });
}

TEST_F(Validation, WrongTypeAndFreedHandles)
{
	Side s;
	s.open("rxe0");
	DAT_PZ_HANDLE pz2;
	ASSERT_OK(dat_pz_create(s.ia, &pz2));

	/* a live PZ passed where another type is wanted */
	check_all(pz2, "PZ as other type", [](const Call &c) {
		std::string n = c.name;
		return n.rfind("pz_", 0) == 0 || n == "rmr_create" ||
		       c.expected == E(DAT_INVALID_HANDLE);
	});
	/* a live EVD as an IA / SRQ / EP */
	check_all(s.dto, "EVD as other type", [](const Call &c) {
		std::string n = c.name;
		return n.rfind("evd_", 0) == 0 ||
		       c.expected == E(DAT_INVALID_HANDLE);
	});

	ASSERT_OK(dat_pz_free(pz2));
	check_all(pz2, "freed PZ", [](const Call &) { return false; });
	DAT_IA_HANDLE ia = s.ia;
	s.close();
	/* everything of a closed IA is stale */
	check_all(ia, "closed IA", [](const Call &) { return false; });
	check_all(s.async, "closed IA's async EVD",
		  [](const Call &) { return false; });
	check_all(s.lmr, "closed IA's LMR", [](const Call &) { return false; });
}

TEST_F(Validation, HandlesOfAnotherIaAreRefused)
{
	Side a, b;
	a.open("rxe0");
	b.open("rxe1");
	DAT_SRQ_ATTR sa = { 8, 1, 0 };
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep;
	DAT_PSP_HANDLE psp;
	DAT_EP_ATTR at = ep_attr();

	kernel.reset_counts();
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_PZ),
		   dat_srq_create(a.ia, b.pz, &sa, &srq));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EVD_RECV),
		   dat_ep_create(a.ia, a.pz, b.dto, a.dto, a.conn, &at, &ep));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EVD_REQUEST),
		   dat_ep_create(a.ia, a.pz, a.dto, b.dto, a.conn, &at, &ep));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EVD_CONN),
		   dat_ep_create(a.ia, a.pz, a.dto, a.dto, b.conn, &at, &ep));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EVD_CR),
		   dat_psp_create(a.ia, 5000, b.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	ASSERT_OK(dat_srq_create(b.ia, b.pz, &sa, &srq));
	kernel.reset_counts();
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_SRQ),
		   dat_ep_create_with_srq(a.ia, a.pz, a.dto, a.dto, a.conn, srq,
					  &at, &ep));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_OK(dat_srq_free(srq));
	a.close();
	b.close();
}

TEST_F(Validation, ArgumentsTheKernelNeverSees)
{
	Side s;
	s.open("rxe0");
	DAT_HANDLE out;
	DAT_EVENT e;
	DAT_IA_ATTR ia_attr;
	DAT_REGION_DESCRIPTION r;
	r.for_va = s.buf.data();
	DAT_SRQ_ATTR sa = { 8, 1, 0 };
	DAT_EP_ATTR at = ep_attr();

	kernel.reset_counts();
	EXPECT_DAT(ARG(4), dat_ia_query(s.ia, nullptr, DAT_IA_FIELD_ALL,
					nullptr, 0, nullptr));
	EXPECT_DAT(ARG(6), dat_ia_query(s.ia, nullptr, 0, &ia_attr,
					DAT_PROVIDER_FIELD_ALL, nullptr));
	EXPECT_DAT(ARG(2), dat_ia_close(s.ia, (DAT_CLOSE_FLAGS)7));
	EXPECT_DAT(ARG(2), dat_pz_create(s.ia, nullptr));
	EXPECT_DAT(ARG(2), dat_evd_create(s.ia, 0, nullptr, DAT_EVD_DTO_FLAG, &out));
	EXPECT_DAT(ARG(4), dat_evd_create(s.ia, 8, nullptr, (DAT_EVD_FLAGS)0, &out));
	EXPECT_DAT(ARG(4), dat_evd_create(s.ia, 8, nullptr, (DAT_EVD_FLAGS)0x2, &out));
	EXPECT_DAT(ARG(5), dat_evd_create(s.ia, 8, nullptr, DAT_EVD_DTO_FLAG, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_CNO),
		   dat_evd_create(s.ia, 8, &e, DAT_EVD_DTO_FLAG, &out));
	EXPECT_DAT(ARG(2), dat_evd_dequeue(s.dto, nullptr));
	EXPECT_DAT(ARG(3), dat_evd_wait(s.dto, 0, 0, &e, nullptr));
	EXPECT_DAT(ARG(3), dat_evd_wait(s.dto, 0, 257, &e, nullptr));
	EXPECT_DAT(ARG(4), dat_evd_wait(s.dto, 0, 1, nullptr, nullptr));
	e.event_number = DAT_DTO_COMPLETION_EVENT;
	EXPECT_DAT(ARG(2), dat_evd_post_se(s.dto, &e));
	EXPECT_DAT(ARG(2), dat_evd_post_se(s.dto, nullptr));
	EXPECT_DAT(ARG(2), dat_lmr_create(s.ia, (DAT_MEM_TYPE)0x40, r, 8, s.pz,
					  DAT_MEM_PRIV_ALL_FLAG, &out, nullptr,
					  nullptr, nullptr, nullptr));
	EXPECT_DAT(ARG(4), dat_lmr_create(s.ia, DAT_MEM_TYPE_VIRTUAL, r, 0, s.pz,
					  DAT_MEM_PRIV_ALL_FLAG, &out, nullptr,
					  nullptr, nullptr, nullptr));
	EXPECT_DAT(ARG(6), dat_lmr_create(s.ia, DAT_MEM_TYPE_VIRTUAL, r, 8, s.pz,
					  DAT_MEM_PRIV_NONE_FLAG, &out, nullptr,
					  nullptr, nullptr, nullptr));
	EXPECT_DAT(ARG(7), dat_lmr_create(s.ia, DAT_MEM_TYPE_VIRTUAL, r, 8, s.pz,
					  DAT_MEM_PRIV_ALL_FLAG, nullptr, nullptr,
					  nullptr, nullptr, nullptr));
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_LMR),
		   dat_lmr_create(s.ia, DAT_MEM_TYPE_LMR, r, 8, s.pz,
				  DAT_MEM_PRIV_ALL_FLAG, &out, nullptr, nullptr,
				  nullptr, nullptr));
	EXPECT_DAT(ARG(3), dat_srq_create(s.ia, s.pz, nullptr, &out));
	EXPECT_DAT(ARG(4), dat_srq_create(s.ia, s.pz, &sa, nullptr));
	EXPECT_DAT(ARG(7), dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &at,
					 nullptr));
	EXPECT_DAT(ARG(5), dat_psp_create(s.ia, 7, s.cr, DAT_PSP_CONSUMER_FLAG,
					  nullptr));
	EXPECT_DAT(ARG(2), dat_get_consumer_context(s.pz, nullptr));
	EXPECT_DAT(ARG(2), dat_get_handle_type(s.pz, nullptr));
	EXPECT_DAT(ARG(2), dat_kdat_get_fd(s.ia, nullptr));
	EXPECT_DAT(ARG(2), dat_lmr_sync_rdma_read(s.ia, nullptr, 1));
	DAT_LMR_TRIPLET t = s.seg(0, 8);
	t.lmr_context += 1000;
	EXPECT_DAT(ARG(2), dat_lmr_sync_rdma_write(s.ia, &t, 1));
	t = s.seg(0, 8);
	EXPECT_OK(dat_lmr_sync_rdma_write(s.ia, &t, 1));
	EXPECT_EQ(0u, kernel.total_ioctls());
	s.close();
}

TEST_F(Validation, SrqPostRecvChecksBeforeAnySyscall)
{
	Side s;
	s.open("rxe0");
	DAT_PZ_HANDLE other_pz;
	DAT_LMR_HANDLE ro, other;
	DAT_LMR_CONTEXT ro_ctx, other_ctx;
	DAT_REGION_DESCRIPTION r;
	std::vector<char> b2(4096);
	ASSERT_OK(dat_pz_create(s.ia, &other_pz));
	r.for_va = s.buf.data();
	ASSERT_OK(dat_lmr_create(s.ia, DAT_MEM_TYPE_VIRTUAL, r, 4096, s.pz,
				 DAT_MEM_PRIV_LOCAL_READ_FLAG, &ro, &ro_ctx,
				 nullptr, nullptr, nullptr));
	r.for_va = b2.data();
	ASSERT_OK(dat_lmr_create(s.ia, DAT_MEM_TYPE_VIRTUAL, r, 4096, other_pz,
				 DAT_MEM_PRIV_ALL_FLAG, &other, &other_ctx,
				 nullptr, nullptr, nullptr));
	DAT_SRQ_ATTR sa = { 8, 2, 0 };
	DAT_SRQ_HANDLE srq;
	ASSERT_OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	DAT_DTO_COOKIE c = {};
	DAT_LMR_TRIPLET t[3] = { s.seg(0, 64), s.seg(64, 64), s.seg(128, 64) };

	kernel.reset_counts();
	EXPECT_DAT(ARG(2), dat_srq_post_recv(srq, 3, t, c));	/* > max_recv_iov */
	EXPECT_DAT(ARG(2), dat_srq_post_recv(srq, -1, t, c));
	EXPECT_DAT(ARG(2), dat_srq_post_recv(srq, KDAT_MAX_IOV + 1, t, c));
	EXPECT_DAT(ARG(3), dat_srq_post_recv(srq, 1, nullptr, c));
	DAT_LMR_TRIPLET bad = s.seg(0, 64);
	bad.lmr_context = 0x7777;
	EXPECT_DAT(ARG(3), dat_srq_post_recv(srq, 1, &bad, c));
	bad = s.seg(s.buf.size() - 8, 64);	/* runs past the LMR */
	EXPECT_DAT(ARG(3), dat_srq_post_recv(srq, 1, &bad, c));
	bad = s.seg(0, 64);
	bad.virtual_address -= 1;		/* starts before it */
	EXPECT_DAT(ARG(3), dat_srq_post_recv(srq, 1, &bad, c));
	bad = s.seg(0, 1ull << 33);		/* longer than any SGE */
	EXPECT_DAT(ARG(3), dat_srq_post_recv(srq, 1, &bad, c));
	bad.lmr_context = other_ctx;		/* the LMR of another PZ */
	bad.virtual_address = (DAT_VADDR)(uintptr_t)b2.data();
	bad.segment_length = 64;
	EXPECT_DAT(E(DAT_PROTECTION_VIOLATION), dat_srq_post_recv(srq, 1, &bad, c));
	bad = s.seg(0, 64);
	bad.lmr_context = ro_ctx;		/* read-only LMR */
	EXPECT_DAT(E(DAT_PRIVILEGES_VIOLATION), dat_srq_post_recv(srq, 1, &bad, c));
	/* the second segment is checked too */
	DAT_LMR_TRIPLET two[2] = { s.seg(0, 64), bad };
	EXPECT_DAT(E(DAT_PRIVILEGES_VIOLATION), dat_srq_post_recv(srq, 2, two, c));
	EXPECT_EQ(0u, kernel.total_ioctls());

	/* a freed LMR is forgotten at once */
	ASSERT_OK(dat_lmr_free(ro));
	kernel.reset_counts();
	EXPECT_DAT(ARG(3), dat_srq_post_recv(srq, 1, &bad, c));
	EXPECT_EQ(0u, kernel.total_ioctls());

	EXPECT_OK(dat_srq_free(srq));
	s.close();
}

TEST_F(Validation, EpPostAndConnectArguments)
{
	Side s;
	s.open("rxe0");
	DAT_EP_ATTR at = ep_attr();
	DAT_EP_HANDLE ep;
	ASSERT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &at, &ep));
	DAT_DTO_COOKIE c = {};
	DAT_LMR_TRIPLET t = s.seg(0, 8);
	struct sockaddr_in sin = ipv4("192.0.2.2");
	char pdata[256] = {};

	kernel.reset_counts();
	EXPECT_DAT(ARG(2), dat_ep_post_send(ep, -1, &t, c, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_DAT(ARG(2), dat_ep_post_send(ep, KDAT_MAX_IOV + 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_DAT(ARG(3), dat_ep_post_recv(ep, 1, nullptr, c, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_DAT(ARG(5), dat_ep_post_rdma_write(ep, 1, &t, c, nullptr, DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_DAT(E(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED),
		   dat_ep_connect(ep, nullptr, 1, 0, 0, nullptr,
				  DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_DAT(ARG(5), dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, 1, 0, -1,
					  pdata, DAT_QOS_BEST_EFFORT,
					  DAT_CONNECT_DEFAULT_FLAG));
	/* private_data is ARG6 */
	EXPECT_DAT(ARG(6), dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, 1, 0, 8,
					  nullptr, DAT_QOS_BEST_EFFORT,
					  DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_DAT(ARG(5), dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, 1, 0,
					  KDAT_PDATA_LEN + 1, pdata,
					  DAT_QOS_BEST_EFFORT,
					  DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_DAT(ARG(3), dat_ep_query(ep, DAT_EP_FIELD_ALL, nullptr));
	EXPECT_DAT(ARG(2), dat_ep_query(ep, ~0ull, nullptr));
	EXPECT_EQ(0u, kernel.total_ioctls());
	/* the kernel's own checks (here: 56 bytes of private data, more
	   than a REQ carries) are left to it, their code comes back */
	kernel.status_next(KDAT_IOC_EP_CONNECT, ARG(5));
	EXPECT_DAT(ARG(5), dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, 1, 0, 56,
					  pdata, DAT_QOS_BEST_EFFORT,
					  DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_EQ(1u, kernel.ioctls(KDAT_IOC_EP_CONNECT));
	EXPECT_EQ(56u, kernel.last<kdat_ioc_ep_connect>(KDAT_IOC_EP_CONNECT)
			       .pdata_size);
	EXPECT_OK(dat_ep_free(ep));
	s.close();
}

/*
 * The core reaches the built-in provider through its DAT_PROVIDER table,
 * like any loaded provider's: an entry swapped in the table is what the
 * dat_* call runs (the hot paths included, the cached SRQ post too).
 */
namespace {
int table_calls;
DAT_PZ_QUERY_FUNC real_pz_query;
DAT_SRQ_POST_RECV_FUNC real_srq_post_recv;
DAT_EVD_DEQUEUE_FUNC real_evd_dequeue;

DAT_RETURN counting_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK m,
			     DAT_PZ_PARAM *p)
{
	table_calls++;
	return real_pz_query(pz, m, p);
}

DAT_RETURN counting_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n,
				  DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE c)
{
	table_calls++;
	return real_srq_post_recv(srq, n, iov, c);
}

DAT_RETURN counting_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *e)
{
	table_calls++;
	return real_evd_dequeue(evd, e);
}
} // namespace

TEST_F(Validation, EveryCallGoesThroughTheProviderTable)
{
	Side s;
	s.open("rxe0");
	DAT_PROVIDER *p = DAT_HANDLE_TO_PROVIDER(s.pz);
	DAT_SRQ_ATTR a = { 8, 1, DAT_SRQ_LW_DEFAULT };
	DAT_SRQ_HANDLE srq = nullptr;
	ASSERT_OK(dat_srq_create(s.ia, s.pz, &a, &srq));

	real_pz_query = p->pz_query_func;
	real_srq_post_recv = p->srq_post_recv_func;
	real_evd_dequeue = p->evd_dequeue_func;
	p->pz_query_func = counting_pz_query;
	p->srq_post_recv_func = counting_srq_post_recv;
	p->evd_dequeue_func = counting_evd_dequeue;
	table_calls = 0;

	DAT_PZ_PARAM pp;
	EXPECT_OK(dat_pz_query(s.pz, DAT_PZ_FIELD_ALL, &pp));
	EXPECT_EQ(s.ia, pp.ia_handle);
	EXPECT_EQ(1, table_calls);
	DAT_EVENT e;
	EXPECT_DAT(E(DAT_QUEUE_EMPTY, DAT_NO_SUBTYPE), dat_evd_dequeue(s.dto, &e));
	EXPECT_EQ(2, table_calls);
	/* the first post finds the SRQ, the next ones are cached */
	DAT_LMR_TRIPLET t = s.seg(0, 64);
	DAT_DTO_COOKIE c;
	c.as_64 = 1;
	for (int i = 0; i < 3; i++)
		EXPECT_OK(dat_srq_post_recv(srq, 1, &t, c));
	EXPECT_EQ(5, table_calls);
	/* a bad handle never reaches a provider */
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_PZ),
		   dat_pz_query(s.ia, DAT_PZ_FIELD_ALL, &pp));
	EXPECT_EQ(5, table_calls);

	p->pz_query_func = real_pz_query;
	p->srq_post_recv_func = real_srq_post_recv;
	p->evd_dequeue_func = real_evd_dequeue;
	EXPECT_OK(dat_srq_free(srq));
	s.close();
}

TEST_F(Validation, ConsumerContextAndHandleTypes)
{
	Side s;
	s.open("rxe0");
	DAT_CONTEXT c, got;
	DAT_HANDLE_TYPE t;

	c.as_64 = 0x1234567890abcdefull;
	EXPECT_OK(dat_set_consumer_context(s.pz, c));
	EXPECT_OK(dat_get_consumer_context(s.pz, &got));
	EXPECT_EQ(c.as_64, got.as_64);
	c.as_ptr = &s;
	EXPECT_OK(dat_set_consumer_context(s.ia, c));
	EXPECT_OK(dat_get_consumer_context(s.ia, &got));
	EXPECT_EQ((void *)&s, got.as_ptr);

	struct {
		DAT_HANDLE h;
		DAT_HANDLE_TYPE t;
	} want[] = { { s.ia, DAT_HANDLE_TYPE_IA },   { s.async, DAT_HANDLE_TYPE_EVD },
		     { s.dto, DAT_HANDLE_TYPE_EVD }, { s.pz, DAT_HANDLE_TYPE_PZ },
		     { s.lmr, DAT_HANDLE_TYPE_LMR } };
	for (auto &w : want) {
		EXPECT_OK(dat_get_handle_type(w.h, &t));
		EXPECT_EQ(w.t, t);
		/* DAT_HANDLE_TO_PROVIDER works on every handle */
		EXPECT_STREQ("rxe0", DAT_HANDLE_TO_PROVIDER(w.h)->device_name);
	}
	/* calling through the provider table checks handles just the same */
	DAT_PROVIDER *p = DAT_HANDLE_TO_PROVIDER(s.pz);
	DAT_PZ_PARAM pp;
	EXPECT_OK(p->pz_query_func(s.pz, DAT_PZ_FIELD_ALL, &pp));
	EXPECT_EQ(s.ia, pp.ia_handle);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_PZ),
		   p->pz_query_func(s.ia, DAT_PZ_FIELD_ALL, &pp));
	int fd = 0;
	EXPECT_OK(dat_kdat_get_fd(s.ia, &fd));
	EXPECT_EQ(-1, fd);	/* the fake device has no descriptor */
	s.close();
}
