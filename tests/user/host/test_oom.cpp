// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Every create call, with each of its allocations failing in turn (the
// first, the second, ... until one run needs no more): the call answers
// DAT_INSUFFICIENT_RESOURCES and leaves nothing behind, no handle in the
// library's table and no object in the kernel (the fake device counts
// them), and the next run works.  The library's memory only: the kernel's
// (the fake's) never fails here (alloc_fail.hpp).
#include <functional>

#include "alloc_fail.hpp"
#include "test_util.hpp"

namespace {

class Oom : public FakeKernelTest {
protected:
	void SetUp() override
	{
		FakeKernelTest::SetUp();
		s.open("rxe0");
		ASSERT_OK(dat_srq_create(s.ia, s.pz, &srq_attr, &srq));
	}

	void TearDown() override
	{
		alloc_fail::nth(-1);
		s.close();
		FakeKernelTest::TearDown();
	}

	/*
	 * Run @create (-> a status, the new handle in *h) with allocation n
	 * failing, n = 0, 1, ...; each failed run must be a clean
	 * DAT_INSUFFICIENT_RESOURCES, each run that succeeds is undone with
	 * @destroy.  Stops at the first run in which no allocation failed.
	 * Returns how many allocations the call makes (the runs that failed
	 * one).
	 */
	int every_allocation_fails(
		const std::function<DAT_RETURN(DAT_HANDLE *)> &create,
		const std::function<DAT_RETURN(DAT_HANDLE)> &destroy)
	{
		for (long n = 0; n < 1000; n++) {
			const std::size_t handles0 = kdat::handles().size();
			const std::size_t objects0 = kernel.objects();
			const std::size_t ids0 = ids(), lmrs0 = ctx().lmrs();
			DAT_HANDLE h = nullptr;

			alloc_fail::nth(n);
			DAT_RETURN r = create(&h);
			const bool fired = alloc_fail::fired();
			alloc_fail::nth(-1);
			if (!fired) {
				EXPECT_OK(r) << "with every allocation";
				if (r == DAT_SUCCESS) {
					EXPECT_OK(destroy(h));
				}
				RecordProperty("allocations", (int)n);
				return (int)n;
			}
			if (r == DAT_SUCCESS) {
				/* a failure the call could do without */
				EXPECT_OK(destroy(h)) << "allocation " << n;
				continue;
			}
			EXPECT_EQ(DAT_INSUFFICIENT_RESOURCES, DAT_GET_TYPE(r))
				<< "allocation " << n << ": " << Ret{ r };
			EXPECT_EQ(handles0, kdat::handles().size())
				<< "allocation " << n << " left a handle";
			EXPECT_EQ(objects0, kernel.objects())
				<< "allocation " << n << " left a kernel object";
			EXPECT_EQ(ids0, ids())
				<< "allocation " << n << " left an ID published";
			EXPECT_EQ(lmrs0, ctx().lmrs())
				<< "allocation " << n << " left an LMR entry";
			if (::testing::Test::HasFailure())
				return -1;
		}
		ADD_FAILURE() << "no run without a failed allocation";
		return -1;
	}

	/* the library's per-file and per-IA tables */
	kdat::Context &ctx() { return *kdat::lookup<kdat::Ia>(s.ia)->ctx; }
	std::size_t ids() { return ctx().file->ids.size(); }

	Side s;
	DAT_SRQ_ATTR srq_attr = { 16, 1, DAT_SRQ_LW_DEFAULT };
	DAT_SRQ_HANDLE srq = nullptr;
};

} // namespace

TEST_F(Oom, PzCreate)
{
	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) { return dat_pz_create(s.ia, h); },
		[](DAT_HANDLE h) { return dat_pz_free(h); }));
}

TEST_F(Oom, EvdCreate)
{
	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			return dat_evd_create(s.ia, 64, nullptr,
					      DAT_EVD_DTO_FLAG, h);
		},
		[](DAT_HANDLE h) { return dat_evd_free(h); }));
}

TEST_F(Oom, CnoCreate)
{
	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			return dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL,
					      h);
		},
		[](DAT_HANDLE h) { return dat_cno_free(h); }));
}

TEST_F(Oom, LmrCreate)
{
	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			DAT_REGION_DESCRIPTION r;
			DAT_LMR_CONTEXT lctx;
			DAT_RMR_CONTEXT rctx;
			DAT_VLEN len;
			DAT_VADDR addr;

			r.for_va = s.buf.data();
			return dat_lmr_create(s.ia, DAT_MEM_TYPE_VIRTUAL, r, 4096,
					      s.pz, DAT_MEM_PRIV_LOCAL_READ_FLAG,
					      h, &lctx, &rctx, &len, &addr);
		},
		[](DAT_HANDLE h) { return dat_lmr_free(h); }));
}

TEST_F(Oom, SrqCreate)
{
	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			return dat_srq_create(s.ia, s.pz, &srq_attr, h);
		},
		[](DAT_HANDLE h) { return dat_srq_free(h); }));
}

TEST_F(Oom, EpCreate)
{
	DAT_EP_ATTR a = ep_attr();

	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			return dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn,
					     &a, h);
		},
		[](DAT_HANDLE h) { return dat_ep_free(h); }));
}

TEST_F(Oom, EpCreateWithSrq)
{
	DAT_EP_ATTR a = ep_attr();

	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			return dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto,
						      s.conn, srq, &a, h);
		},
		[](DAT_HANDLE h) { return dat_ep_free(h); }));
}

TEST_F(Oom, PspCreate)
{
	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			return dat_psp_create(s.ia, 5001, s.cr,
					      DAT_PSP_CONSUMER_FLAG, h);
		},
		[](DAT_HANDLE h) { return dat_psp_free(h); }));
}

TEST_F(Oom, RspCreate)
{
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ep = nullptr;

	ASSERT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &a, &ep));
	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			return dat_rsp_create(s.ia, 5002, ep, s.cr, h);
		},
		[](DAT_HANDLE h) { return dat_rsp_free(h); }));
	EXPECT_OK(dat_ep_free(ep));
}

/* An IA of its own (the fixture's keeps the /dev/kdat file open). */
TEST_F(Oom, IaOpen)
{
	EXPECT_LT(0, every_allocation_fails(
		[&](DAT_HANDLE *h) {
			DAT_EVD_HANDLE async = DAT_HANDLE_NULL;

			return dat_ia_open((DAT_NAME_PTR) "rxe1", 16, &async, h);
		},
		[](DAT_HANDLE h) {
			return dat_ia_close(h, DAT_CLOSE_ABRUPT_FLAG);
		}));
}
