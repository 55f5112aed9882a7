// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The EVD family of libdaplkdat's DAT 2.0 table.  dequeue and wait take a
// DAT 1.2 event from libdat's own dat_evd_dequeue / dat_evd_wait and hand
// it back in DAT 2.0's layout (event2, convert.cpp); handles are the same
// pointers in both worlds.
#include "convert.hpp"
#include "hot.hpp"
#include "ib_ext.hpp"

#include <cstring>

namespace kdat::dat2p {

namespace d2 = ::dat2;

namespace {

d2::DAT_RETURN evd_create2(d2::DAT_IA_HANDLE ia, d2::DAT_COUNT qlen,
			   d2::DAT_CNO_HANDLE cno, d2::DAT_EVD_FLAGS flags,
			   d2::DAT_EVD_HANDLE *evd)
{
	DAT_EVD_FLAGS f1;

	if (!evd_flags1(raw(flags), f1))	/* a flag DAT 1.2 lacks */
		return ret2(bad_arg(4));
	return ret2(::dat_evd_create(ia, qlen, cno, f1, evd));
}

d2::DAT_RETURN evd_query2(d2::DAT_EVD_HANDLE evd, d2::DAT_EVD_PARAM_MASK mask,
			  d2::DAT_EVD_PARAM *param)
{
	std::uint64_t m = raw(mask), v = 0;
	const struct {
		std::uint64_t v2, v12;
	} fields[] = {
		{ d2::DAT_EVD_FIELD_IA_HANDLE, DAT_EVD_FIELD_IA_HANDLE },
		{ d2::DAT_EVD_FIELD_EVD_QLEN, DAT_EVD_FIELD_EVD_QLEN },
		{ d2::DAT_EVD_FIELD_EVD_STATE, DAT_EVD_FIELD_EVD_STATE },
		{ d2::DAT_EVD_FIELD_CNO, DAT_EVD_FIELD_CNO },
		{ d2::DAT_EVD_FIELD_EVD_FLAGS, DAT_EVD_FIELD_EVD_FLAGS },
	};
	for (const auto &f : fields)
		if (m & f.v2)
			v |= f.v12;
	v |= m & ~(std::uint64_t)d2::DAT_EVD_FIELD_ALL;	/* the core refuses */
	DAT_EVD_PARAM_MASK m1;
	std::memcpy(&m1, &v, sizeof(m1));
	DAT_EVD_PARAM p1;
	DAT_RETURN r = ::dat_evd_query(evd, m1, param ? &p1 : nullptr);
	if (r == DAT_SUCCESS)
		evd_param2(p1, *param);
	return ret2(r);
}

d2::DAT_RETURN evd_modify_cno2(d2::DAT_EVD_HANDLE evd, d2::DAT_CNO_HANDLE cno)
{
	return ret2(::dat_evd_modify_cno(evd, cno));
}

d2::DAT_RETURN evd_enable2(d2::DAT_EVD_HANDLE evd)
{
	return ret2(::dat_evd_enable(evd));
}

d2::DAT_RETURN evd_disable2(d2::DAT_EVD_HANDLE evd)
{
	return ret2(::dat_evd_disable(evd));
}

d2::DAT_RETURN evd_wait2(d2::DAT_EVD_HANDLE evd, d2::DAT_TIMEOUT timeout,
			 d2::DAT_COUNT threshold, d2::DAT_EVENT *event,
			 d2::DAT_COUNT *nmore)
{
	DAT_EVENT e1;
	::kdat::DtoExt x;
	DAT_RETURN r = ::kdat::evd_wait_ext(evd, timeout, threshold,
					    event ? &e1 : nullptr, nmore, x);

	if (r == DAT_SUCCESS) {
		event2(e1, *event);
		dto_ext2(x.op, x.flags, x.immed_data, *event);
	}
	return ret2(r);
}

d2::DAT_RETURN evd_resize2(d2::DAT_EVD_HANDLE evd, d2::DAT_COUNT qlen)
{
	return ret2(::dat_evd_resize(evd, qlen));
}

d2::DAT_RETURN evd_post_se2(d2::DAT_EVD_HANDLE evd, const d2::DAT_EVENT *event)
{
	DAT_EVENT e1;

	if (event)
		event1(*event, e1);
	return ret2(::dat_evd_post_se(evd, event ? &e1 : nullptr));
}

KDAT_DATA_PATH(256)
d2::DAT_RETURN evd_dequeue2(d2::DAT_EVD_HANDLE evd, d2::DAT_EVENT *event)
{
	DAT_EVENT e1;
	::kdat::DtoExt x;
	DAT_RETURN r = ::kdat::evd_dequeue_ext(evd, event ? &e1 : nullptr, x);

	if (r == DAT_SUCCESS) {
		event2(e1, *event);
		dto_ext2(x.op, x.flags, x.immed_data, *event);
	}
	// OFED's providers answer an empty queue with the bare type, no
	// error class, and DAT 2.0 programs test for it with == (dtest -p)
	if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY)
		return d2::DAT_QUEUE_EMPTY;
	return ret2(r);
}

d2::DAT_RETURN evd_free2(d2::DAT_EVD_HANDLE evd)
{
	return ret2(::dat_evd_free(evd));
}

d2::DAT_RETURN evd_set_unwaitable2(d2::DAT_EVD_HANDLE evd)
{
	return ret2(::dat_evd_set_unwaitable(evd));
}

d2::DAT_RETURN evd_clear_unwaitable2(d2::DAT_EVD_HANDLE evd)
{
	return ret2(::dat_evd_clear_unwaitable(evd));
}

} // namespace

void fill_evd(d2::DAT_PROVIDER &t)
{
	t.evd_create_func = evd_create2;
	t.evd_query_func = evd_query2;
	t.evd_modify_cno_func = evd_modify_cno2;
	t.evd_enable_func = evd_enable2;
	t.evd_disable_func = evd_disable2;
	t.evd_wait_func = evd_wait2;
	t.evd_resize_func = evd_resize2;
	t.evd_post_se_func = evd_post_se2;
	t.evd_dequeue_func = evd_dequeue2;
	t.evd_free_func = evd_free2;
	t.evd_set_unwaitable_func = evd_set_unwaitable2;
	t.evd_clear_unwaitable_func = evd_clear_unwaitable2;
}

} // namespace kdat::dat2p
