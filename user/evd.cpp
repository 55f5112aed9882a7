// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Event Dispatchers: dat_evd_create, _query, _resize, _post_se,
// _dequeue, _wait, _enable, _disable, _set_unwaitable,
// _clear_unwaitable, _modify_cno, _free (CNOs: cno.cpp).
//
// Each EVD has an event ring the kernel writes and we read without a
// system call (ring.hpp).  dat_evd_wait blocks in the kernel
// (KDAT_IOC_EVD_WAIT) only while the ring holds fewer events than the
// threshold.  Translating a ring entry into a DAT_EVENT turns kernel IDs
// into our handles and does the bookkeeping the event implies:
//   - an SRQ receive completion returns a buffer to the SRQ's count;
//   - a refused SRQ ring entry (async event on the SRQ, reason
//     DAT_SRQ_OTHER_ERROR, with a DTO status) returns its buffer too;
//   - a connection request creates the CR object of its ID;
//   - private data is copied into the EP, valid until its next event.
// Events the kernel dropped because a ring was full are reported by the
// kernel, once per overflow, on the IA's async EVD
// (DAT_ASYNC_ERROR_EVD_OVERFLOW); their SRQ buffers come back through the
// post ring header's `unseen` count (srq.cpp).
//
// An SRQ receive completion is recognised by the SRQ the kernel names in
// it (kdat_uevent.srq), whatever EVDs its EP has: no guessing, no query.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "dispatch.hpp"
#include "hot.hpp"
#include "objects.hpp"

namespace kdat {

constexpr std::uint64_t kEvdFlagsAll =
	DAT_EVD_SOFTWARE_FLAG | DAT_EVD_CR_FLAG | DAT_EVD_DTO_FLAG |
	DAT_EVD_CONNECTION_FLAG | DAT_EVD_RMR_BIND_FLAG | DAT_EVD_ASYNC_FLAG;

/*
 * Map the event ring the kernel made.  An old kernel that does not report
 * the ring size gets its header read first.
 */
DAT_RETURN Evd::attach(std::uint64_t offset, std::uint64_t size)
{
	DAT_RETURN r;

	if (!size) {
		/* the page size of this machine (4 KiB, 16 KiB, 64 KiB...) */
		long ps = sysconf(_SC_PAGESIZE);
		const std::uint64_t page = ps > 0 ? (std::uint64_t)ps : 4096;
		Mapping probe;
		r = Mapping::map(ctx->dev, page, offset, probe);
		if (!ok(r))
			return r;
		auto *h = static_cast<struct kdat_ring_hdr *>(probe.get());
		size = (std::uint64_t)h->entry_offset +
		       (std::uint64_t)h->entries * h->entry_size;
		size = (size + page - 1) & ~(page - 1);
	}
	r = Mapping::map(ctx->dev, size, offset, map);
	if (!ok(r))
		return r;
	auto l = ring::validate(map.get(), map.size(),
				sizeof(struct kdat_uevent));
	if (!l)
		return err(DAT_INTERNAL_ERROR);
	ring = ring::EventConsumer(*l);
	return DAT_SUCCESS;
}

DAT_RETURN Ia::evd_create(DAT_COUNT qlen, DAT_CNO_HANDLE cno,
			  std::uint64_t flags, DAT_EVD_HANDLE *evd_handle)
{
	/* DAT_HW_DEFAULT (the provider chooses) goes to the kernel as is */
	if (qlen <= 0 && qlen != DAT_HW_DEFAULT)
		return bad_arg(2);
	std::shared_ptr<Cno> cno_obj;
	if (cno != DAT_HANDLE_NULL) {
		cno_obj = lookup<Cno>(cno);
		if (!cno_obj || cno_obj->ctx != ctx)
			return bad_handle(DAT_INVALID_HANDLE_CNO);
	}
	if (!flags || (flags & ~kEvdFlagsAll))
		return bad_arg(4);
	if (!evd_handle)
		return bad_arg(5);

	struct kdat_ioc_evd_create c = {};
	c.ia = kid;
	c.qlen = qlen;
	c.flags = (__u32)flags;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_EVD_CREATE, c);
	if (!ok(r))
		return r;
	KernelObjectGuard owner(*ctx, c.evd, ktype::EVD);

	auto evd = make_object<Evd>(ctx);
	evd->kid = c.evd;
	evd->flags = (DAT_EVD_FLAGS)flags;
	evd->busy_poll = (flags & DAT_EVD_DTO_FLAG) != 0;
	/* DAT_HW_DEFAULT comes back as the kernel's choice */
	evd->kqlen = c.qlen;
	evd->qlen = c.qlen;
	r = evd->attach(c.ring_offset, c.ring_size);
	if (!ok(r))
		return r;
	if (cno_obj) {
		r = evd->set_cno(std::move(cno_obj));
		if (!ok(r))
			return r;
	}
	ctx->publish(evd);
	owner.release();
	*evd_handle = evd->handle();
	return DAT_SUCCESS;
}

std::uint32_t Evd::count()
{
	std::lock_guard<std::mutex> g(consume_lock);

	return ring.available();
}

DAT_RETURN Evd::ctl(std::uint32_t op)
{
	struct kdat_ioc_evd_ctl c = {};

	c.evd = kid;
	c.op = op;
	return call(*ctx->dev, KDAT_IOC_EVD_CTL, c);
}

/* What the kernel must know for the CNO: which, and whether enabled. */
static DAT_RETURN notify(Evd &e, std::uint32_t cno_kid, bool on)
{
	struct kdat_ioc_evd_notify n = {};

	n.evd = e.kid;
	n.cno = cno_kid;
	n.flags = on ? KDAT_EVD_NOTIFY_ENABLED : 0;
	return call(*e.ctx->dev, KDAT_IOC_EVD_NOTIFY, n);
}

/* Only an EVD with a CNO tells the kernel: nothing else depends on it. */
DAT_RETURN Evd::set_enabled(bool on)
{
	std::lock_guard<std::mutex> g(notify_lock);

	if (cno) {
		DAT_RETURN r = notify(*this, cno->kid, on);
		if (!ok(r))
			return r;
	}
	enabled = on;
	return DAT_SUCCESS;
}

DAT_RETURN Evd::set_cno(std::shared_ptr<Cno> c)
{
	std::lock_guard<std::mutex> g(notify_lock);

	if (c || cno) {
		DAT_RETURN r = notify(*this, c ? c->kid : 0, enabled);
		if (!ok(r))
			return r;
	}
	cno = std::move(c);
	return DAT_SUCCESS;
}

DAT_RETURN Evd::set_waitable(bool on)
{
	/* the kernel's state and ours change together */
	std::lock_guard<std::mutex> g(waitable_lock);
	DAT_RETURN r = ctl(on ? KDAT_EVD_CTL_WAITABLE : KDAT_EVD_CTL_UNWAITABLE);

	if (ok(r))
		waitable = on;
	return r;
}

static bool is_async_event(std::uint32_t n)
{
	return n >= DAT_ASYNC_ERROR_EVD_OVERFLOW &&
	       n <= DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
}

/*
 * An SRQ post-ring entry the kernel refused: an async event on the SRQ
 * with reason DAT_SRQ_OTHER_ERROR that carries a DTO status (an SRQ that
 * went into the error state reports DAT_DTO_SUCCESS there).
 */
bool is_refusal(const struct kdat_uevent &u)
{
	return is_async_event(u.event_number) &&
	       u.reason == DAT_SRQ_OTHER_ERROR && u.status != DAT_DTO_SUCCESS;
}

/* Any operation of the send queue (a send, an RDMA, an atomic). */
static bool is_request(std::uint32_t dto_op)
{
	switch (dto_op) {
	case KDAT_UDTO_SEND:
	case KDAT_UDTO_RDMA_WRITE:
	case KDAT_UDTO_RDMA_WRITE_IMMED:
	case KDAT_UDTO_RDMA_READ:
	case KDAT_UDTO_CMP_AND_SWAP:
	case KDAT_UDTO_FETCH_AND_ADD:
		return true;
	default:
		return false;
	}
}

/*
 * The completion of one of the consumer's own sends or RDMA writes: a
 * post after it refills a window, it answers nothing (Context::reaped).
 * An RDMA read's or atomic's result may be what the next post answers
 * (read, then notify), so those count as events, as do receives.
 */
static bool is_request_completion(const struct kdat_uevent &u)
{
	if (u.event_number != DAT_DTO_COMPLETION_EVENT)
		return false;
	switch (u.dto_op) {
	case KDAT_UDTO_SEND:
	case KDAT_UDTO_RDMA_WRITE:
	case KDAT_UDTO_RDMA_WRITE_IMMED:
		return true;
	default:
		return false;
	}
}

/*
 * Take the oldest event.  It is translated - and the SRQ accounting it
 * implies done - before its slot goes back, so by the time the kernel can
 * see it reaped the library has counted it too: the kernel counts a
 * buffer as unseen only for an event whose slot never went back.
 */
KDAT_DATA_PATH(1024)
bool Evd::pop(DAT_EVENT &ev, DtoExt *ext)
{
	struct kdat_uevent u;
	std::shared_ptr<Srq> refused;
	{
		std::lock_guard<std::mutex> g(consume_lock);

		if (!ring.peek(u))
			return false;
		translate(u, ev, refused, ext);
		ring.advance();
	}
	if (!is_request_completion(u))
		ctx->reaped.fetch_add(1, std::memory_order_relaxed);
	/* after consume_lock: it may make a system call */
	if (refused)
		refused->after_refusal_dequeued();
	return true;
}

static bool is_connection_event(std::uint32_t n)
{
	return n >= DAT_CONNECTION_EVENT_ESTABLISHED &&
	       n <= DAT_CONNECTION_EVENT_UNREACHABLE;
}

KDAT_DATA_PATH(4096)
void Evd::translate(const struct kdat_uevent &u, DAT_EVENT &ev,
		    std::shared_ptr<Srq> &refused, DtoExt *ext)
{
	DAT_EVENT_DATA &d = ev.event_data;
	Tomb t;

	if (ext) {
		*ext = DtoExt{};
		if (u.event_number == DAT_DTO_COMPLETION_EVENT)
			*ext = DtoExt{ u.dto_op, u.dto_flags, u.immed_data };
	}

	std::memset(&ev, 0, sizeof(ev));
	ev.event_number = (DAT_EVENT_NUMBER)u.event_number;
	ev.evd_handle = handle();

	if (u.event_number == DAT_DTO_COMPLETION_EVENT) {
		auto &c = d.dto_completion_event_data;

		c.user_cookie.as_64 = u.cookie;
		c.status = (DAT_DTO_COMPLETION_STATUS)u.status;
		c.transfered_length = u.length;
		if (auto ep = ctx->find<Ep>(u.handle)) {
			c.ep_handle = ep->handle();
			if (is_request(u.dto_op))
				ep->request_reaped();
		} else if (ctx->tomb(u.handle, t)) {
			c.ep_handle = t.handle;	/* the EP was freed */
		}
		/* the kernel names the SRQ a returned buffer came from */
		if (u.srq) {
			if (auto srq = ctx->find<Srq>(u.srq))
				srq->on_recv_completion();
		}
	} else if (u.event_number == DAT_CONNECTION_REQUEST_EVENT) {
		auto &c = d.cr_arrival_event_data;

		if (auto psp = ctx->find<Psp>(u.sp))
			c.sp_handle.psp_handle = psp->handle();
		else if (auto rsp = ctx->find<Rsp>(u.sp))
			c.sp_handle.rsp_handle = rsp->handle();
		else if (ctx->tomb(u.sp, t))
			c.sp_handle.psp_handle = t.handle;
		c.local_ia_address_ptr = ctx->address();
		c.conn_qual = u.conn_qual;
		if (auto cr = Cr::get(ctx, u.cr, u.conn_qual))
			c.cr_handle = cr->handle();
	} else if (is_connection_event(u.event_number)) {
		auto &c = d.connect_event_data;
		std::uint32_t n = u.pdata_size < KDAT_PDATA_LEN ?
					  u.pdata_size : KDAT_PDATA_LEN;

		if (auto ep = ctx->find<Ep>(u.handle)) {
			c.ep_handle = ep->handle();
			if (n) {
				std::lock_guard<std::mutex> g(ep->lock);
				std::memcpy(ep->pdata, u.pdata, n);
				c.private_data_size = (DAT_COUNT)n;
				c.private_data = ep->pdata;
			}
		} else if (ctx->tomb(u.handle, t)) {
			c.ep_handle = t.handle;
		}
	} else if (is_async_event(u.event_number)) {
		auto &c = d.asynch_error_event_data;

		c.reason = (DAT_COUNT)u.reason;
		if (!u.handle) {
			c.dat_handle = ctx->ia_handle;
		} else if (auto o = ctx->find(u.handle)) {
			c.dat_handle = o->handle();
			/* a ring entry the kernel refused: the buffer is back */
			if (o->type == DAT_HANDLE_TYPE_SRQ && is_refusal(u)) {
				refused = std::static_pointer_cast<Srq>(o);
				refused->on_refused(u.cookie,
						    (DAT_RETURN)u.length);
			}
		} else if (ctx->tomb(u.handle, t)) {
			c.dat_handle = t.handle;
		}
	} else if (u.event_number == DAT_SOFTWARE_EVENT) {
		d.software_event_data.pointer =
			(DAT_PVOID)(std::uintptr_t)u.pointer;
	}
}

KDAT_DATA_PATH(512)
DAT_RETURN Evd::dequeue(DAT_EVENT *event, DtoExt *ext)
{
	if (!event)
		return bad_arg(2);
	if (!pop(*event, ext)) {
		/*
		 * A consumer that spins here keeps a CPU busy (Ep::ring_post).
		 * One empty answer is a drain after a wait; two in a row from
		 * this EVD, with no event returned and no sleep between, are
		 * a spin.
		 */
		const std::uint32_t epoch =
			ctx->epoch.load(std::memory_order_relaxed) << 2;
		const std::uint32_t e = empties.load(std::memory_order_relaxed);
		const unsigned n = (e & ~3u) == epoch ? (e & 3u) : 0;

		if (!ctx->empty_seen.load(std::memory_order_relaxed))
			ctx->empty_seen.store(true, std::memory_order_relaxed);
		if (n < 2)
			empties.store(epoch | (n + 1), std::memory_order_relaxed);
		if (n >= 1 && !ctx->polls.load(std::memory_order_relaxed))
			ctx->polls.store(true, std::memory_order_relaxed);
		/*
		 * A spinner runs the completion poller on its own CPU and
		 * looks again (KDAT_EVD_CTL_POLL): a completion the device
		 * made reaches the ring now, not when the device's own
		 * notification runs - on rxe, after the ACK went back and
		 * the sender completed.  A module without it refuses the
		 * op (DAT_INVALID_PARAMETER) once per EVD.
		 */
		if (n >= 1 && busy_poll.load(std::memory_order_relaxed)) {
			DAT_RETURN r = ctl(KDAT_EVD_CTL_POLL);

			if (is_type(r, DAT_INVALID_PARAMETER))
				busy_poll.store(false,
						std::memory_order_relaxed);
			else if (ok(r) && pop(*event, ext)) {
				ctx->event_returned();
				return DAT_SUCCESS;
			}
		}
		return err(DAT_QUEUE_EMPTY);
	}
	ctx->event_returned();
	return DAT_SUCCESS;
}

DAT_RETURN Evd::wait(DAT_TIMEOUT timeout, DAT_COUNT threshold,
		     DAT_EVENT *event, DAT_COUNT *nmore, DtoExt *ext)
{
	using clock = std::chrono::steady_clock;

	if (threshold <= 0 || threshold > qlen.load())
		return bad_arg(3);
	if (!event)
		return bad_arg(4);
	if (!waitable)
		return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
	if (waiter.exchange(true))
		return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
	struct WaiterGone {
		std::atomic<bool> &w;
		~WaiterGone() { w = false; }
	} gone{ waiter };

	const bool forever = timeout == DAT_TIMEOUT_INFINITE;
	const clock::time_point deadline =
		clock::now() + std::chrono::microseconds(forever ? 0 : timeout);

	/*
	 * Look at the ring; block in the kernel only while it holds too few
	 * events.  `wakes` is read before looking, so a set_unwaitable that
	 * comes after the look ends the kernel wait.
	 */
	for (;;) {
		std::uint32_t seq = ring.wakes();
		const std::uint32_t n = count();
		if (n >= (std::uint32_t)threshold) {
			if (pop(*event, ext)) {
				/* an event between two empty dequeues: no spin */
				ctx->event_returned();
				if (nmore)
					*nmore = (DAT_COUNT)count();
				return DAT_SUCCESS;
			}
			continue;	/* a dequeue took it first */
		}
		if (!waitable)
			return err(DAT_INVALID_STATE,
				   DAT_INVALID_STATE_EVD_UNWAITABLE);

		struct kdat_ioc_evd_wait w = {};
		w.evd = kid;
		w.threshold = threshold;
		w.flags = KDAT_WAIT_SEQ;
		w.wake_seq = seq;
		w.timeout_us = DAT_TIMEOUT_INFINITE;
		if (!forever) {
			auto left = std::chrono::duration_cast<
				std::chrono::microseconds>(deadline -
							   clock::now());
			if (left.count() <= 0) {
				if (nmore)
					*nmore = (DAT_COUNT)n;
				return err(DAT_TIMEOUT_EXPIRED);
			}
			/* DAT_TIMEOUT_INFINITE is the kernel's "forever" too */
			w.timeout_us = (DAT_TIMEOUT)std::min<std::int64_t>(
				left.count(), DAT_TIMEOUT_INFINITE - 1);
		}
		ctx->sleeping();
		DAT_RETURN r = call(*ctx->dev, KDAT_IOC_EVD_WAIT, w);
		if (ok(r) || is_type(r, DAT_TIMEOUT_EXPIRED))
			continue;	/* look again (and at the clock) */
		if (nmore)
			*nmore = (DAT_COUNT)count();
		/* DAT_INVALID_STATE (made unwaitable), DAT_INTERRUPTED_CALL,
		   DAT_INVALID_HANDLE ... */
		return r;
	}
}

DAT_RETURN Evd::query(std::uint64_t mask, DAT_EVD_PARAM *param)
{
	DAT_RETURN r = query_args(mask, DAT_EVD_FIELD_ALL, param);

	if (!ok(r))
		return r;
	param->ia_handle = ctx->ia_handle;
	param->evd_qlen = qlen;
	param->evd_state = (DAT_EVD_STATE)(
		(enabled ? DAT_EVD_STATE_ENABLED : DAT_EVD_STATE_DISABLED) |
		(waitable ? DAT_EVD_STATE_WAITABLE :
			    DAT_EVD_STATE_UNWAITABLE) |
		DAT_EVD_STATE_CONFIG_THRESHOLD);
	{
		std::lock_guard<std::mutex> g(notify_lock);
		param->cno_handle = cno ? cno->handle() : DAT_HANDLE_NULL;
	}
	param->evd_flags = flags;
	return DAT_SUCCESS;
}

/*
 * The ring was sized when the EVD was made and cannot grow: resize works
 * up to the size asked for at creation.
 */
DAT_RETURN Evd::resize(DAT_COUNT n)
{
	if (n <= 0)
		return bad_arg(2);
	if (n > kqlen)
		return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
	if ((std::uint32_t)n < count())
		return err(DAT_INVALID_STATE);
	qlen = n;
	return DAT_SUCCESS;
}

DAT_RETURN Evd::post_se(const DAT_EVENT *event)
{
	if (!event || event->event_number != DAT_SOFTWARE_EVENT)
		return bad_arg(2);

	struct kdat_ioc_evd_post_se p = {};
	p.evd = kid;
	p.pointer = (__u64)(std::uintptr_t)
			    event->event_data.software_event_data.pointer;
	return call(*ctx->dev, KDAT_IOC_EVD_POST_SE, p);
}

DAT_RETURN Evd::free()
{
	if (is_async)
		return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_ASYNC);
	return free_object();
}

} // namespace kdat

/* The built-in provider's entries (dispatch.hpp). */
namespace kdat::builtin {

DAT_RETURN evd_create(DAT_IA_HANDLE ia, DAT_COUNT qlen, DAT_CNO_HANDLE cno,
		      DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd)
{
	return KDAT_BUILTIN(Ia, ia, dat_evd_create,
			    evd_create(qlen, cno, raw(flags), evd), ia, qlen,
			    cno, flags, evd);
}

DAT_RETURN evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask,
		     DAT_EVD_PARAM *param)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_query, query(raw(mask), param),
			    evd, mask, param);
}

DAT_RETURN evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT qlen)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_resize, resize(qlen), evd, qlen);
}

DAT_RETURN evd_post_se(DAT_EVD_HANDLE evd, const DAT_EVENT *event)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_post_se, post_se(event), evd,
			    event);
}

KDAT_DATA_PATH(256)
DAT_RETURN evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *event)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_dequeue, dequeue(event), evd,
			    event);
}

DAT_RETURN evd_wait(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout,
		    DAT_COUNT threshold, DAT_EVENT *event, DAT_COUNT *nmore)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_wait,
			    wait(timeout, threshold, event, nmore), evd,
			    timeout, threshold, event, nmore);
}

DAT_RETURN evd_enable(DAT_EVD_HANDLE evd)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_enable, set_enabled(true), evd);
}

DAT_RETURN evd_disable(DAT_EVD_HANDLE evd)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_disable, set_enabled(false), evd);
}

DAT_RETURN evd_set_unwaitable(DAT_EVD_HANDLE evd)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_set_unwaitable,
			    set_waitable(false), evd);
}

DAT_RETURN evd_clear_unwaitable(DAT_EVD_HANDLE evd)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_clear_unwaitable,
			    set_waitable(true), evd);
}

/* DAT_HANDLE_NULL detaches the EVD from its CNO. */
DAT_RETURN evd_modify_cno(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno)
{
	return on_builtin<Evd>(
		evd, dat_evd_modify_cno,
		[&](Evd &e) -> DAT_RETURN {
			std::shared_ptr<Cno> c;
			if (cno != DAT_HANDLE_NULL) {
				c = lookup<Cno>(cno);
				if (!c || c->ctx != e.ctx)
					return bad_handle(
						DAT_INVALID_HANDLE_CNO);
			}
			return e.set_cno(std::move(c));
		},
		evd, cno);
}

DAT_RETURN evd_free(DAT_EVD_HANDLE evd)
{
	return KDAT_BUILTIN(Evd, evd, dat_evd_free, free(), evd);
}

} // namespace kdat::builtin

using namespace kdat;

#define IA_BAD bad_handle(DAT_INVALID_HANDLE_IA)
#define EVD_BAD bad_handle(DAT_INVALID_HANDLE_EVD_ASYNC)
#define CNO_BAD bad_handle(DAT_INVALID_HANDLE_CNO)

/* A connection request of a loaded provider names a CR we must track. */
static auto track_cr(const DAT_EVENT *ev)
{
	return [ev](DAT_RETURN r, const HandleEntry &e) {
		if (ok(r) && ev &&
		    ev->event_number == DAT_CONNECTION_REQUEST_EVENT)
			track_foreign(
				r, ev->event_data.cr_arrival_event_data.cr_handle,
				DAT_HANDLE_TYPE_CR, e);
	};
}

extern "C" {

DAT_RETURN dat_evd_create(DAT_IA_HANDLE ia, DAT_COUNT qlen,
			  DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags,
			  DAT_EVD_HANDLE *evd)
{
	return dispatch<&DAT_PROVIDER::evd_create_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(evd, DAT_HANDLE_TYPE_EVD), ia,
		qlen, cno, flags, evd);
}

DAT_RETURN dat_evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask,
			 DAT_EVD_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EVD, EVD_BAD, evd_query_func, evd,
			 mask, param);
}

DAT_RETURN dat_evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT qlen)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EVD, EVD_BAD, evd_resize_func, evd,
			 qlen);
}

DAT_RETURN dat_evd_post_se(DAT_EVD_HANDLE evd, const DAT_EVENT *event)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EVD, EVD_BAD, evd_post_se_func, evd,
			 event);
}

KDAT_DATA_PATH(1024)
DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *event)
{
	return dispatch<&DAT_PROVIDER::evd_dequeue_func>(
		DAT_HANDLE_TYPE_EVD, EVD_BAD, track_cr(event), evd, event);
}

DAT_RETURN dat_evd_wait(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout,
			DAT_COUNT threshold, DAT_EVENT *event,
			DAT_COUNT *nmore)
{
	return dispatch<&DAT_PROVIDER::evd_wait_func>(
		DAT_HANDLE_TYPE_EVD, EVD_BAD, track_cr(event), evd, timeout,
		threshold, event, nmore);
}

DAT_RETURN dat_evd_enable(DAT_EVD_HANDLE evd)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EVD, EVD_BAD, evd_enable_func, evd);
}

DAT_RETURN dat_evd_disable(DAT_EVD_HANDLE evd)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EVD, EVD_BAD, evd_disable_func, evd);
}

DAT_RETURN dat_evd_set_unwaitable(DAT_EVD_HANDLE evd)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EVD, EVD_BAD, evd_set_unwaitable_func,
			 evd);
}

DAT_RETURN dat_evd_clear_unwaitable(DAT_EVD_HANDLE evd)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EVD, EVD_BAD,
			 evd_clear_unwaitable_func, evd);
}

DAT_RETURN dat_evd_modify_cno(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EVD, EVD_BAD, evd_modify_cno_func, evd,
			 cno);
}

DAT_RETURN dat_evd_free(DAT_EVD_HANDLE evd)
{
	return dispatch<&DAT_PROVIDER::evd_free_func>(
		DAT_HANDLE_TYPE_EVD, EVD_BAD, erased(evd), evd);
}

/* Consumer Notification Objects (the built-in provider's: cno.cpp). */

DAT_RETURN dat_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent,
			  DAT_CNO_HANDLE *cno)
{
	return dispatch<&DAT_PROVIDER::cno_create_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(cno, DAT_HANDLE_TYPE_CNO), ia,
		agent, cno);
}

DAT_RETURN dat_cno_modify_agent(DAT_CNO_HANDLE cno,
				DAT_OS_WAIT_PROXY_AGENT agent)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_CNO, CNO_BAD, cno_modify_agent_func,
			 cno, agent);
}

DAT_RETURN dat_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask,
			 DAT_CNO_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_CNO, CNO_BAD, cno_query_func, cno,
			 mask, param);
}

DAT_RETURN dat_cno_free(DAT_CNO_HANDLE cno)
{
	return dispatch<&DAT_PROVIDER::cno_free_func>(
		DAT_HANDLE_TYPE_CNO, CNO_BAD, erased(cno), cno);
}

DAT_RETURN dat_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout,
			DAT_EVD_HANDLE *evd)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_CNO, CNO_BAD, cno_wait_func, cno,
			 timeout, evd);
}

} // extern "C"
