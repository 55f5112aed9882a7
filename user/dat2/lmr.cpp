// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The LMR family of libdaplkdat's DAT 2.0 table.  DAT 2.0's lmr_create
// adds a DAT_VA_TYPE: DAT_VA_TYPE_VA is what kdat registers; zero-based
// addressing is a model it does not have (DAT_MODEL_NOT_SUPPORTED, and
// ia_query says zb_supported DAT_FALSE).  Memory types, region
// descriptions and privileges are converted by name.  The sync calls take
// DAT 2.0's 16-byte triplets (Triplets, convert.hpp).
#include "convert.hpp"

#include <cstring>

namespace kdat::dat2p {

namespace d2 = ::dat2;

namespace {

d2::DAT_RETURN lmr_create2(d2::DAT_IA_HANDLE ia, d2::DAT_MEM_TYPE type,
			   d2::DAT_REGION_DESCRIPTION region, d2::DAT_VLEN len,
			   d2::DAT_PZ_HANDLE pz, d2::DAT_MEM_PRIV_FLAGS priv,
			   d2::DAT_VA_TYPE va_type, d2::DAT_LMR_HANDLE *lmr,
			   d2::DAT_LMR_CONTEXT *lctx, d2::DAT_RMR_CONTEXT *rctx,
			   d2::DAT_VLEN *reg_len, d2::DAT_VADDR *reg_addr)
{
	DAT_REGION_DESCRIPTION r1;
	DAT_MEM_TYPE t1;

	std::memset(&r1, 0, sizeof(r1));
	switch (raw(type)) {
	case d2::DAT_MEM_TYPE_VIRTUAL:
		t1 = DAT_MEM_TYPE_VIRTUAL;
		r1.for_va = region.for_va;
		break;
	case d2::DAT_MEM_TYPE_LMR:
		t1 = DAT_MEM_TYPE_LMR;
		r1.for_lmr_handle = region.for_lmr_handle;
		break;
	case d2::DAT_MEM_TYPE_SHARED_VIRTUAL:
		t1 = DAT_MEM_TYPE_SHARED_VIRTUAL;
		r1.for_shared_memory.virtual_address =
			region.for_shared_memory.virtual_address;
		r1.for_shared_memory.shared_memory_id =
			region.for_shared_memory.shared_memory_id;
		break;
	default:
		return ret2(bad_arg(2));
	}
	switch (raw(va_type)) {
	case d2::DAT_VA_TYPE_VA:
		break;
	case d2::DAT_VA_TYPE_ZB:
		return ret2(err(DAT_MODEL_NOT_SUPPORTED));
	default:
		return ret2(bad_arg(7));
	}
	DAT_MEM_PRIV_FLAGS p1;
	if (!mem_priv1(raw(priv), p1))
		return ret2(bad_arg(6));
	/*
	 * InfiniBand cannot deny local reads, and OFED's providers never
	 * check them: its programs send from LMRs registered for local
	 * write only (dtest).  DAT 1.2 checks the flag, so it is granted.
	 */
	p1 = static_cast<DAT_MEM_PRIV_FLAGS>(p1 | DAT_MEM_PRIV_LOCAL_READ_FLAG);
	return ret2(::dat_lmr_create(ia, t1, r1, len, pz, p1, lmr, lctx, rctx,
				     reg_len, reg_addr));
}

d2::DAT_RETURN lmr_query2(d2::DAT_LMR_HANDLE lmr, d2::DAT_LMR_PARAM_MASK mask,
			  d2::DAT_LMR_PARAM *param)
{
	std::uint64_t m1;

	if (!lmr_mask1(raw(mask), m1)) {
		/* a field DAT 2.0 does not have: the handle first, as the core */
		if (!handles().find(lmr, DAT_HANDLE_TYPE_LMR))
			return ret2(bad_handle(DAT_INVALID_HANDLE_LMR));
		return ret2(bad_arg(2));
	}
	DAT_LMR_PARAM_MASK mm;
	std::memcpy(&mm, &m1, sizeof(mm));
	DAT_LMR_PARAM p1;
	DAT_RETURN r = ::dat_lmr_query(lmr, mm, param ? &p1 : nullptr);
	if (r == DAT_SUCCESS)
		lmr_param2(p1, *param);
	return ret2(r);
}

d2::DAT_RETURN lmr_free2(d2::DAT_LMR_HANDLE lmr)
{
	return ret2(::dat_lmr_free(lmr));
}

/*
 * The sync calls check their triplets only.  They convert and check them
 * 8 at a time (on the stack): no allocation however large the count, and
 * the IA handle and a NULL list are checked first, as the core does.
 */
template <class Sync>
d2::DAT_RETURN lmr_sync2(Sync sync, d2::DAT_IA_HANDLE ia,
			 const d2::DAT_LMR_TRIPLET *iov, d2::DAT_VLEN n)
{
	DAT_RETURN r = sync(ia, nullptr, 0);

	if (r != DAT_SUCCESS)
		return ret2(r);
	if (n && !iov)
		return ret2(bad_arg(2));
	for (d2::DAT_VLEN i = 0; i < n; i += 8) {
		const DAT_COUNT k = (DAT_COUNT)(n - i < 8 ? n - i : 8);
		Triplets t(iov + i, k);

		r = sync(ia, t.get(), (DAT_VLEN)k);
		if (r != DAT_SUCCESS)
			return ret2(r);
	}
	return ret2(DAT_SUCCESS);
}

d2::DAT_RETURN lmr_sync_read2(d2::DAT_IA_HANDLE ia,
			      const d2::DAT_LMR_TRIPLET *iov, d2::DAT_VLEN n)
{
	return lmr_sync2(::dat_lmr_sync_rdma_read, ia, iov, n);
}

d2::DAT_RETURN lmr_sync_write2(d2::DAT_IA_HANDLE ia,
			       const d2::DAT_LMR_TRIPLET *iov, d2::DAT_VLEN n)
{
	return lmr_sync2(::dat_lmr_sync_rdma_write, ia, iov, n);
}

} // namespace

void fill_lmr(d2::DAT_PROVIDER &t)
{
	t.lmr_create_func = lmr_create2;
	t.lmr_query_func = lmr_query2;
	t.lmr_free_func = lmr_free2;
	t.lmr_sync_rdma_read_func = lmr_sync_read2;
	t.lmr_sync_rdma_write_func = lmr_sync_write2;
}

} // namespace kdat::dat2p
