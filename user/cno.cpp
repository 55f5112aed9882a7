// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Consumer Notification Objects: dat_cno_create, _modify_agent, _query,
// _free, _wait (dat_evd_create's cno and dat_evd_modify_cno: evd.cpp).
//
// The CNO is the kernel's (kernel/cno.c): the kernel triggers it where it
// writes an event to an enabled EVD of it that no dat_evd_wait waits on,
// and dat_cno_wait blocks in KDAT_IOC_CNO_WAIT.  The library keeps the
// proxy agent, which DAT lets the consumer set and query; it is not
// called: the trigger happens in the kernel, where no consumer code can
// run, and the library has no thread of its own to run it from
// (docs/user-api.md).  Events the library makes itself (an overflow
// report on the async EVD) trigger no CNO.
#include <chrono>

#include "dispatch.hpp"
#include "objects.hpp"

namespace kdat {

DAT_RETURN Ia::cno_create(DAT_OS_WAIT_PROXY_AGENT agent,
			  DAT_CNO_HANDLE *cno_handle)
{
	if (!cno_handle)
		return bad_arg(3);

	/* a module without CNOs: the call is not implemented there */
	struct kdat_ioc_version v = {};
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_VERSION, v);
	if (!ok(r))
		return r;
	if (!(v.features & KDAT_FEATURE_CNO))
		return err(DAT_NOT_IMPLEMENTED);

	struct kdat_ioc_cno_create c = {};
	c.ia = kid;
	r = call(*ctx->dev, KDAT_IOC_CNO_CREATE, c);
	if (!ok(r))
		return r;
	KernelObjectGuard owner(*ctx, c.cno, ktype::CNO);

	auto cno = make_object<Cno>(ctx);
	cno->kid = c.cno;
	cno->agent = agent;
	ctx->publish(cno);
	owner.release();
	*cno_handle = cno->handle();
	return DAT_SUCCESS;
}

DAT_RETURN Cno::query(std::uint64_t mask, DAT_CNO_PARAM *param)
{
	DAT_RETURN r = query_args(mask, DAT_CNO_FIELD_ALL, param);

	if (!ok(r))
		return r;
	std::lock_guard<std::mutex> g(agent_lock);
	param->ia_handle = ctx->ia_handle;
	param->agent = agent;
	return DAT_SUCCESS;
}

DAT_RETURN Cno::modify_agent(DAT_OS_WAIT_PROXY_AGENT a)
{
	std::lock_guard<std::mutex> g(agent_lock);

	agent = a;
	return DAT_SUCCESS;
}

/*
 * Block in the kernel until the CNO is triggered.  A trigger whose EVD
 * was freed meanwhile (the kernel names no EVD, or one we no longer
 * know) is no notification: wait on, for what is left of the timeout.
 */
DAT_RETURN Cno::wait(DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd)
{
	using clock = std::chrono::steady_clock;

	if (!evd)
		return bad_arg(3);
	const bool forever = timeout == DAT_TIMEOUT_INFINITE;
	const clock::time_point deadline =
		clock::now() + std::chrono::microseconds(forever ? 0 : timeout);

	for (;;) {
		struct kdat_ioc_cno_wait w = {};
		w.cno = kid;
		w.timeout_us = DAT_TIMEOUT_INFINITE;
		if (!forever) {
			auto left = std::chrono::duration_cast<
				std::chrono::microseconds>(deadline -
							   clock::now());
			w.timeout_us = left.count() <= 0 ?
					       0 :
					       (std::uint32_t)std::min<std::int64_t>(
						       left.count(),
						       DAT_TIMEOUT_INFINITE - 1);
		}
		/* one that sleeps here spins on no EVD (Ep::ring_post) */
		if (w.timeout_us)
			ctx->sleeping();
		DAT_RETURN r = call(*ctx->dev, KDAT_IOC_CNO_WAIT, w);
		if (!ok(r))
			return r;
		if (auto e = ctx->find<Evd>(w.evd)) {
			*evd = e->handle();
			return DAT_SUCCESS;
		}
		if (!forever && w.timeout_us == 0)
			return err(DAT_TIMEOUT_EXPIRED);
	}
}

DAT_RETURN Cno::free()
{
	return free_object();
}

} // namespace kdat

/* The built-in provider's entries (dispatch.hpp). */
namespace kdat::builtin {

DAT_RETURN cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent,
		      DAT_CNO_HANDLE *cno)
{
	return KDAT_BUILTIN(Ia, ia, dat_cno_create, cno_create(agent, cno), ia,
			    agent, cno);
}

DAT_RETURN cno_modify_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT agent)
{
	return KDAT_BUILTIN(Cno, cno, dat_cno_modify_agent,
			    modify_agent(agent), cno, agent);
}

DAT_RETURN cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask,
		     DAT_CNO_PARAM *param)
{
	return KDAT_BUILTIN(Cno, cno, dat_cno_query, query(raw(mask), param),
			    cno, mask, param);
}

DAT_RETURN cno_free(DAT_CNO_HANDLE cno)
{
	return KDAT_BUILTIN(Cno, cno, dat_cno_free, free(), cno);
}

DAT_RETURN cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout,
		    DAT_EVD_HANDLE *evd)
{
	return KDAT_BUILTIN(Cno, cno, dat_cno_wait, wait(timeout, evd), cno,
			    timeout, evd);
}

} // namespace kdat::builtin
