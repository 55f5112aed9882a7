// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The IA family of libdaplkdat's DAT 2.0 table: ia_open/query/close, the
// calls on any handle, PZs, CNOs and what DAT 2.0 added at the IA level.
// Every entry converts its arguments, calls libdat's own DAT 1.2 function
// (which checks and pins the handle and dispatches to the built-in
// provider) and converts the results back.
#include "convert.hpp"

#include "dispatch.hpp"
#include "ep_convert.hpp"
#include "ib_ext.hpp"

#include <cstring>
#include <new>

namespace kdat::dat2p {

namespace d2 = ::dat2;

DAT_RETURN ia_open(const char *name, const std::string &kernel_name,
		   DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
		   DAT_IA_HANDLE *ia, const void *face)
{
	return guard([&]() -> DAT_RETURN {
		/*
		 * DAT 2.0 programs (dtestsrq) wait for an EP_BROKEN async
		 * event naming each SRQ EP after its connection ends, as
		 * OFED's provider raises: the kernel's opt-in
		 */
		return Ia::open(provider12(), name, kernel_name, qlen,
				async_evd, ia, face,
				KDAT_IA_OPEN_SRQ_EP_BROKEN);
	});
}

namespace {

/* What the IA was opened under: the dat.conf line's info, or DAT 2.0's default. */
d2::DAT_PROVIDER_INFO info_of(DAT_IA_HANDLE ia)
{
	d2::DAT_PROVIDER_INFO i;

	std::memset(&i, 0, sizeof(i));
	i.dapl_version_major = 2;
	i.dapl_version_minor = 0;
	i.is_thread_safe = d2::DAT_TRUE;
	HandleEntry e = handles().find(ia, DAT_HANDLE_TYPE_IA);
	if (e.builtin()) {
		if (const Served *s = served_by_table(e.obj->face))
			i = s->info;
	}
	return i;
}

template <bool ThreadSafe>
d2::DAT_RETURN ia_open2(const d2::DAT_NAME_PTR name, d2::DAT_COUNT qlen,
			d2::DAT_EVD_HANDLE *async_evd, d2::DAT_IA_HANDLE *ia) try
{
	if (!name)
		return ret2(bad_arg(1));
	if (!async_evd)
		return ret2(bad_arg(3));
	if (!ia)
		return ret2(bad_handle(DAT_INVALID_HANDLE_IA));
	const Served *s = served(name, ThreadSafe);
	std::string kernel = s ? s->kernel_name : std::string(name);
	const void *face = s ? (const void *)&s->table : &provider_table;
	DAT_EVD_HANDLE a = *async_evd == d2::v_DAT_EVD_ASYNC_EXISTS ?
				   DAT_EVD_ASYNC_EXISTS : *async_evd;
	DAT_IA_HANDLE h = nullptr;
	DAT_RETURN r = ia_open(name, kernel, qlen, &a, &h, face);

	if (r == DAT_SUCCESS) {
		*ia = h;
		*async_evd = a;
	}
	return ret2(r);
} catch (const std::bad_alloc &) {
	return ret2(err(DAT_INSUFFICIENT_RESOURCES));
} catch (...) {
	/* nothing may unwind into libdat2's C frames */
	return ret2(err(DAT_INTERNAL_ERROR));
}

d2::DAT_RETURN ia_query2(d2::DAT_IA_HANDLE ia, d2::DAT_EVD_HANDLE *async_evd,
			 d2::DAT_IA_ATTR_MASK ia_mask, d2::DAT_IA_ATTR *ia_attr,
			 d2::DAT_PROVIDER_ATTR_MASK pmask,
			 d2::DAT_PROVIDER_ATTR *pattr) try
{
	DAT_IA_ATTR a1;
	DAT_PROVIDER_ATTR p1;
	/*
	 * Every field is filled whatever the mask names; the IA attributes
	 * are asked for the provider's too (the adapter names the device
	 * whose MTU they report).  A NULL the consumer gave with a mask
	 * stays NULL: the core refuses it.
	 */
	DAT_IA_ATTR *ap = ia_mask ? (ia_attr ? &a1 : nullptr) :
				    (pmask ? &a1 : nullptr);
	DAT_RETURN r = ::dat_ia_query(ia, async_evd,
				      ia_mask || ap ? DAT_IA_FIELD_ALL : 0,
				      ap, pmask ? DAT_PROVIDER_FIELD_ALL : 0,
				      pattr ? &p1 : nullptr);
	if (r != DAT_SUCCESS)
		return ret2(r);
	/* the IB extension, where the module does it (KDAT_UIA_IB_EXT) */
	std::uint32_t kflags = 0;
	r = ::kdat::ia_kernel_flags(ia, kflags);
	if (r != DAT_SUCCESS)
		return ret2(r);
	if (ia_mask) {
		ia_attr2(a1, *ia_attr);
		ib_ext_attr2(kflags, *ia_attr);
	}
	if (pmask) {
		provider_attr2(p1, info_of(ia), *pattr);
		char adapter[sizeof(a1.adapter_name) + 1] = {};
		std::memcpy(adapter, a1.adapter_name, sizeof(a1.adapter_name));
		provider_specific2(p1, transport_mtu("/sys",
						     adapter),
				   *pattr, kflags);
	}
	return d2::DAT_SUCCESS;
} catch (const std::bad_alloc &) {
	return ret2(err(DAT_INSUFFICIENT_RESOURCES));
} catch (...) {
	/* nothing may unwind into libdat2's C frames */
	return ret2(err(DAT_INTERNAL_ERROR));
}

d2::DAT_RETURN ia_close2(d2::DAT_IA_HANDLE ia, d2::DAT_CLOSE_FLAGS flags)
{
	std::uint64_t f = raw(flags);
	DAT_CLOSE_FLAGS f1;

	if (f == d2::DAT_CLOSE_ABRUPT_FLAG)
		f1 = DAT_CLOSE_ABRUPT_FLAG;
	else if (f == d2::DAT_CLOSE_GRACEFUL_FLAG)
		f1 = DAT_CLOSE_GRACEFUL_FLAG;
	else	/* not a name: the core refuses it (after the handle) */
		std::memcpy(&f1, &f, sizeof(f1));
	/* its PSPs and RSPs go with it: forgotten first, as a free does */
	const auto quals = sp_quals_of_ia_take(ia);
	::DAT_RETURN r = ::dat_ia_close(ia, f1);

	if (r != ::DAT_SUCCESS)
		sp_quals_restore(ia, quals);
	return ret2(r);
}

d2::DAT_RETURN set_context2(d2::DAT_HANDLE h, d2::DAT_CONTEXT c)
{
	DAT_CONTEXT c1;

	c1.as_64 = c.as_64;
	return ret2(::dat_set_consumer_context(h, c1));
}

d2::DAT_RETURN get_context2(d2::DAT_HANDLE h, d2::DAT_CONTEXT *c)
{
	DAT_CONTEXT c1;
	DAT_RETURN r = ::dat_get_consumer_context(h, c ? &c1 : nullptr);

	if (r == DAT_SUCCESS)
		c->as_64 = c1.as_64;
	return ret2(r);
}

d2::DAT_RETURN handle_type2_(d2::DAT_HANDLE h, d2::DAT_HANDLE_TYPE *t)
{
	DAT_HANDLE_TYPE t1;
	DAT_RETURN r = ::dat_get_handle_type(h, t ? &t1 : nullptr);

	if (r == DAT_SUCCESS)
		*t = (d2::DAT_HANDLE_TYPE)handle_type2(t1);
	return ret2(r);
}

/* ---- PZ ---- */

d2::DAT_RETURN pz_create2(d2::DAT_IA_HANDLE ia, d2::DAT_PZ_HANDLE *pz)
{
	return ret2(::dat_pz_create(ia, pz));
}

d2::DAT_RETURN pz_query2(d2::DAT_PZ_HANDLE pz, d2::DAT_PZ_PARAM_MASK mask,
			 d2::DAT_PZ_PARAM *param)
{
	std::uint64_t m = raw(mask);
	DAT_PZ_PARAM p1;
	DAT_PZ_PARAM_MASK m1;

	/* DAT_PZ_FIELD_IA_HANDLE is the only field in both */
	std::uint64_t v = (m & d2::DAT_PZ_FIELD_IA_HANDLE) ?
				  (std::uint64_t)DAT_PZ_FIELD_IA_HANDLE : 0;
	v |= m & ~(std::uint64_t)d2::DAT_PZ_FIELD_ALL;	/* the core refuses */
	std::memcpy(&m1, &v, sizeof(m1));
	DAT_RETURN r = ::dat_pz_query(pz, m1, param ? &p1 : nullptr);
	if (r == DAT_SUCCESS)
		param->ia_handle = p1.ia_handle;
	return ret2(r);
}

d2::DAT_RETURN pz_free2(d2::DAT_PZ_HANDLE pz)
{
	return ret2(::dat_pz_free(pz));
}

/* ---- CNO: libdat's (the kernel's CNO) ---- */

d2::DAT_RETURN cno_create2(d2::DAT_IA_HANDLE ia, d2::DAT_OS_WAIT_PROXY_AGENT a,
			   d2::DAT_CNO_HANDLE *cno)
{
	DAT_OS_WAIT_PROXY_AGENT a1;

	a1.instance_data = a.instance_data;
	a1.proxy_agent_func = (DAT_AGENT_FUNC)a.proxy_agent_func;
	return ret2(::dat_cno_create(ia, a1, cno));
}

d2::DAT_RETURN cno_modify_agent2(d2::DAT_CNO_HANDLE cno,
				 d2::DAT_OS_WAIT_PROXY_AGENT a)
{
	DAT_OS_WAIT_PROXY_AGENT a1;

	a1.instance_data = a.instance_data;
	a1.proxy_agent_func = (DAT_AGENT_FUNC)a.proxy_agent_func;
	return ret2(::dat_cno_modify_agent(cno, a1));
}

d2::DAT_RETURN cno_query2(d2::DAT_CNO_HANDLE cno, d2::DAT_CNO_PARAM_MASK,
			  d2::DAT_CNO_PARAM *param)
{
	DAT_CNO_PARAM p1;
	DAT_RETURN r = ::dat_cno_query(cno, DAT_CNO_FIELD_ALL,
				       param ? &p1 : nullptr);

	if (r == DAT_SUCCESS) {
		std::memset(param, 0, sizeof(*param));
		param->ia_handle = p1.ia_handle;
		param->proxy_type = d2::DAT_PROXY_TYPE_AGENT;
		param->proxy.agent.instance_data = p1.agent.instance_data;
		param->proxy.agent.proxy_agent_func =
			(d2::DAT_AGENT_FUNC)p1.agent.proxy_agent_func;
	}
	return ret2(r);
}

d2::DAT_RETURN cno_free2(d2::DAT_CNO_HANDLE cno)
{
	return ret2(::dat_cno_free(cno));
}

d2::DAT_RETURN cno_wait2(d2::DAT_CNO_HANDLE cno, d2::DAT_TIMEOUT t,
			 d2::DAT_EVD_HANDLE *evd)
{
	return ret2(::dat_cno_wait(cno, t, evd));
}

/*
 * DAT 2.0 only: a CNO with a file descriptor, and dat_cno_trigger (the
 * EVD of the last trigger, without waiting).  Not models kdat's CNOs
 * have: DAT_MODEL_NOT_SUPPORTED, as OFED's providers answer both.
 */
d2::DAT_RETURN cno_fd_create2(d2::DAT_IA_HANDLE ia, d2::DAT_FD *,
			      d2::DAT_CNO_HANDLE *)
{
	if (!handles().find(ia, DAT_HANDLE_TYPE_IA))
		return ret2(bad_handle(DAT_INVALID_HANDLE_IA));
	return ret2(err(DAT_MODEL_NOT_SUPPORTED));
}

d2::DAT_RETURN cno_trigger2(d2::DAT_CNO_HANDLE cno, d2::DAT_EVD_HANDLE *)
{
	if (!handles().find(cno, DAT_HANDLE_TYPE_CNO))
		return ret2(bad_handle(DAT_INVALID_HANDLE_CNO));
	return ret2(err(DAT_MODEL_NOT_SUPPORTED));
}

/* DAT 2.0 only: high availability is not a model kdat has */
d2::DAT_RETURN ia_ha_related2(d2::DAT_IA_HANDLE ia, const d2::DAT_NAME_PTR,
			      d2::DAT_BOOLEAN *)
{
	if (!handles().find(ia, DAT_HANDLE_TYPE_IA))
		return ret2(bad_handle(DAT_INVALID_HANDLE_IA));
	return ret2(err(DAT_MODEL_NOT_SUPPORTED));
}

} // namespace

d2::DAT_IA_OPEN_FUNC ia_open_for(bool thread_safe) noexcept
{
	return thread_safe ? ia_open2<true> : ia_open2<false>;
}

void fill_ia(d2::DAT_PROVIDER &t)
{
	t.ia_open_func = ia_open2<false>;
	t.ia_query_func = ia_query2;
	t.ia_close_func = ia_close2;
	t.set_consumer_context_func = set_context2;
	t.get_consumer_context_func = get_context2;
	t.get_handle_type_func = handle_type2_;
	t.pz_create_func = pz_create2;
	t.pz_query_func = pz_query2;
	t.pz_free_func = pz_free2;
	t.cno_create_func = cno_create2;
	t.cno_modify_agent_func = cno_modify_agent2;
	t.cno_query_func = cno_query2;
	t.cno_free_func = cno_free2;
	t.cno_wait_func = cno_wait2;
	t.cno_fd_create_func = cno_fd_create2;
	t.cno_trigger_func = cno_trigger2;
	t.ia_ha_related_func = ia_ha_related2;
	t.handle_extendedop_func = extendedop_func();
}

} // namespace kdat::dat2p
