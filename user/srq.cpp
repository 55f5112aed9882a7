// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Shared Receive Queues: dat_srq_create, _free, _post_recv, _query,
// _resize, _set_lw (dat_ep_create_with_srq is in ep.cpp).
//
// The SRQ semantics (available/outstanding counts, the low watermark,
// resize that never loses a buffer) are the kernel's.  What the library
// adds is the post path without a system call:
//
//   dat_srq_post_recv
//     finds the SRQ through a per-thread cache of {handle, PostChannel,
//     table entry} without pinning it (see PostChannel in objects.hpp),
//     else through the handle table and the provider table (dispatch.hpp);
//     then
//     checks what it can with the kernel's codes (handle; num_segments in
//     0..max_recv_iov; local_iov; each triplet against its own LMR table:
//     context and range -> DAT_INVALID_PARAMETER, PZ ->
//     DAT_PROTECTION_VIOLATION, local write -> DAT_PRIVILEGES_VIOLATION),
//     refuses when its count of outstanding buffers reached max_recv_dtos
//     or the post ring is full (DAT_INSUFFICIENT_RESOURCES), then writes
//     the receive into the ring, publishes the tail, fences, and kicks the
//     kernel (KDAT_IOC_SRQ_KICK) only if the kernel said it is starved.
//     The post lock covers the ring write only: the kick and the LMR
//     table's lock are taken without it; the count needs no query (every
//     return is in shared memory: event srq fields and the ring's unseen).
//
// The kernel drains the ring when a receive completes, on a kick and
// before a query, re-checks every entry, and returns a refused one as an
// async event on the IA's async EVD, which the library counts as a
// returned buffer (evd.cpp).
#include <cstdlib>
#include <cstring>

#include "dispatch.hpp"
#include "hot.hpp"
#include "objects.hpp"

namespace kdat {

/* ------------------------------------------------------------------ */
/* Post channels                                                        */

namespace {
std::mutex free_chans_lock;
PostChannel *free_chans;	/* recycled channels, never freed */
} // namespace

PostChannel *PostChannel::attach(Srq *srq)
{
	PostChannel *c = nullptr;
	{
		std::lock_guard<std::mutex> g(free_chans_lock);
		if (free_chans) {
			c = free_chans;
			free_chans = c->next_free;
		}
	}
	if (!c)
		c = new PostChannel;	/* throws into the creating call */
	std::lock_guard<SpinLock> g(c->lock);
	c->handle = srq->handle();
	c->srq = srq;
	return c;
}

void PostChannel::detach()
{
	std::lock_guard<SpinLock> g(lock);
	handle = nullptr;
	srq = nullptr;
}

std::mutex &srq_channels_fork_lock() noexcept
{
	return free_chans_lock;
}

void PostChannel::recycle()
{
	detach();
	std::lock_guard<std::mutex> g(free_chans_lock);
	next_free = free_chans;
	free_chans = this;
}

/* Before the ring is unmapped: no post can be writing it (channel lock). */
Srq::~Srq()
{
	chan->recycle();
}

DAT_RETURN Srq::attach(std::uint64_t offset, std::uint64_t size)
{
	DAT_RETURN r = Mapping::map(ctx->dev, size, offset, map);

	if (!ok(r))
		return r;
	auto l = ring::validate(map.get(), map.size(),
				ring::kWqeHeader + sizeof(struct kdat_useg));
	if (!l)
		return err(DAT_INTERNAL_ERROR);
	ring = ring::PostProducer(*l);
	return DAT_SUCCESS;
}

DAT_RETURN Ia::srq_create(DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR *attr,
			  DAT_SRQ_HANDLE *srq_handle)
{
	auto pz = lookup<Pz>(pz_handle);
	if (!pz || pz->ctx != ctx)
		return bad_handle(DAT_INVALID_HANDLE_PZ);
	if (!attr)
		return bad_arg(3);
	if (!srq_handle)
		return bad_arg(4);

	struct kdat_ioc_srq_create c = {};
	c.ia = kid;
	c.pz = pz->kid;
	c.max_recv_dtos = attr->max_recv_dtos;
	c.max_recv_iov = attr->max_recv_iov;
	c.low_watermark = attr->low_watermark;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_SRQ_CREATE, c);
	if (!ok(r))
		return r;
	KernelObjectGuard owner(*ctx, c.srq, ktype::SRQ);

	auto srq = make_object<Srq>(ctx);
	srq->kid = c.srq;
	srq->pz = pz;
	/* DAT_HW_DEFAULT comes back as the kernel's choice */
	srq->max_recv_iov = c.max_recv_iov;
	srq->max_recv_dtos = c.max_recv_dtos;
	srq->post_by_ioctl = ring::env_wants_ioctl("KDAT_SRQ_POST");
	r = srq->attach(c.ring_offset, c.ring_size);
	if (!ok(r))
		return r;
	ctx->publish(srq);
	owner.release();
	*srq_handle = srq->handle();
	return DAT_SUCCESS;
}

DAT_RETURN Srq::post_ioctl(DAT_COUNT n, const struct kdat_useg *segs,
			   DAT_UINT64 cookie)
{
	struct kdat_ioc_srq_post p = {};

	p.srq = kid;
	p.nseg = (__u32)n;
	p.cookie = cookie;
	std::memcpy(p.seg, segs, (std::size_t)n * sizeof(*segs));
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_SRQ_POST, p);
	if (ok(r)) {
		std::lock_guard<SpinLock> g(post_lock);
		posted++;
	}
	return r;
}

/*
 * The common case: one segment, ring posting, its LMR in the cache, room
 * in the count and the ring, no kick owed.  Anything else is left to
 * post_slow (the full checks, same codes and order).
 */
[[gnu::always_inline]] inline Srq::FastPost
Srq::post_fast(DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie)
{
	if (n != 1 || !iov || post_by_ioctl || max_recv_iov < 1 ||
	    ring.max_segments() < 1 || ring.srq_error() ||
	    kick_again.load(std::memory_order_relaxed))
		return FastPost::no;
	DAT_RETURN r;

	if (!ctx->check_cached(iov[0], pz->kid, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
			       lmr_cache, r) ||
	    r != DAT_SUCCESS || !room() || ring.full())
		return FastPost::no;

	struct kdat_srq_wqe *w = ring.next_slot();

	w->cookie = cookie.as_64;
	w->nseg = 1;
	w->pad = 0;
	w->seg[0].lmr_context = iov[0].lmr_context;
	w->seg[0].pad = 0;
	w->seg[0].addr = iov[0].virtual_address;
	w->seg[0].length = iov[0].segment_length;
	posted++;
	/* the kernel was starved: the receive is posted, kick it (unlocked) */
	if (__builtin_expect(ring.publish(), 0))
		return FastPost::kick;
	return FastPost::done;
}

DAT_RETURN Srq::kick_posted()
{
	DAT_RETURN r = kick();

	return is_type(r, DAT_INVALID_HANDLE) ? r : (DAT_RETURN)DAT_SUCCESS;
}

DAT_RETURN Srq::post_recv(DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
			  DAT_DTO_COOKIE cookie, bool force_ioctl)
{
	if (!force_ioctl) {
		FastPost f;
		{
			std::lock_guard<SpinLock> g(post_lock);
			f = post_fast(n, iov, cookie);
		}
		if (f == FastPost::done)
			return DAT_SUCCESS;
		if (f == FastPost::kick)
			return kick_posted();
	}
	return post_slow(n, iov, cookie, force_ioctl);
}

/*
 * The full post.  post_lock covers the checks and the ring write only:
 * the count needs no system call (every return is in shared memory), and
 * when the ring needs room the lock is dropped for the kick and everything
 * is checked again, the kick tried once.
 */
DAT_RETURN Srq::post_slow(DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
			  DAT_DTO_COOKIE cookie, bool force_ioctl)
{
	struct kdat_useg segs[KDAT_MAX_IOV];

	if (n < 0 || n > max_recv_iov || n > KDAT_MAX_IOV)
		return bad_arg(2);
	if (n && !iov)
		return bad_arg(3);
	if (force_ioctl || post_by_ioctl || (std::uint32_t)n > ring.max_segments()) {
		for (DAT_COUNT i = 0; i < n; i++) {
			DAT_RETURN r = ctx->check_triplet(
				iov[i], pz->kid, DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
			if (!ok(r))
				return r;
		}
		to_useg(iov, n, segs);
		return post_ioctl(n, segs, cookie.as_64);
	}

	/*
	 * The triplets before post_lock: the LMR table's lock is not taken
	 * under a spin lock.  The last LMR seen serves the next posts.
	 */
	LmrCache seen;
	for (DAT_COUNT i = 0; i < n; i++) {
		DAT_RETURN r = ctx->check_triplet(
			iov[i], pz->kid, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &seen);
		if (!ok(r))
			return r;
	}
	to_useg(iov, n, segs);

	bool kicked = false;

	for (;;) {
		bool kick_now = false, pushed = false, broken = false;
		{
			std::lock_guard<SpinLock> g(post_lock);

			if (seen.valid)
				lmr_cache = seen;
			broken = ring.srq_error();
		}
		if (broken) {
			/*
			 * The kernel's answer for an SRQ in the error state.
			 * Receives still in the ring come back as refusals
			 * when the kernel drains it: ask it to, once.
			 */
			if (ring.unconsumed())
				(void)kick();
			return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
		}
		{
			std::lock_guard<SpinLock> g(post_lock);

			/* every return is counted from shared memory */
			if (!room())
				return err(DAT_INSUFFICIENT_RESOURCES,
					   DAT_RESOURCE_SRQ);
			if (!ring.full()) {
				kick_now = ring.push(cookie.as_64, (std::uint32_t)n,
						     segs);
				posted++;
				kick_now |= kick_again.load(std::memory_order_relaxed);
				pushed = true;
			} else if (kicked) {
				return err(DAT_INSUFFICIENT_RESOURCES,
					   DAT_RESOURCE_SRQ);
			}
		}
		if (pushed)
			return kick_now ? kick_posted() : (DAT_RETURN)DAT_SUCCESS;

		/* the SRQ grew past the ring: let the kernel drain (unlocked) */
		DAT_RETURN r = kick();
		if (!ok(r))
			return r;
		kicked = true;
	}
}

/*
 * KDAT_IOC_SRQ_KICK: the kernel drains the ring into the SRQ.  A kick
 * that leaves entries behind found the SRQ at max_recv_dtos as the kernel
 * counted before it saw the completions we reaped last (it drains, then
 * collects); one more kick lets it use them.  If entries still remain the
 * SRQ really is full: the next post kicks again, since the kernel's
 * KDAT_RING_NEED_KICK does not cover this case.  Runs without post_lock
 * (other threads keep posting), so it reads the ring's shared indices.
 */
DAT_RETURN Srq::kick()
{
	struct kdat_ioc_srq_op k = {};
	DAT_RETURN r;

	k.srq = kid;
	r = call(*ctx->dev, KDAT_IOC_SRQ_KICK, k);
	if (ok(r) && ring.unconsumed()) {
		k = {};
		k.srq = kid;
		r = call(*ctx->dev, KDAT_IOC_SRQ_KICK, k);
	}
	kick_again.store(ok(r) && ring.unconsumed() != 0,
			 std::memory_order_relaxed);
	return r;
}

/*
 * KDAT_IOC_SRQ_QUERY: the kernel drains the post ring, then reports.  It
 * drains before it collects what the consumer reaped, so receives reposted
 * after reaping can stay in the ring and out of the counts; asking once
 * more lets the kernel take them (only when entries were left).
 */
DAT_RETURN Srq::kquery(std::uint64_t mask, struct kdat_ioc_srq_query &q)
{
	DAT_RETURN r;

	for (int i = 0; i < 2; i++) {
		q = {};
		q.srq = kid;
		q.mask = (__u32)mask;
		r = call(*ctx->dev, KDAT_IOC_SRQ_QUERY, q);
		/* may run without post_lock: read the shared indices */
		if (!ok(r) || !ring.unconsumed())
			break;
	}
	return r;
}

DAT_RETURN Srq::query(std::uint64_t mask, DAT_SRQ_PARAM *p)
{
	DAT_RETURN r = query_args(mask, DAT_SRQ_FIELD_ALL, p);

	if (!ok(r))
		return r;

	struct kdat_ioc_srq_query q;
	r = kquery(mask, q);
	if (!ok(r))
		return r;
	p->ia_handle = ctx->ia_handle;
	p->srq_state = (DAT_SRQ_STATE)q.state;
	p->pz_handle = pz->handle();
	p->max_recv_dtos = q.max_recv_dtos;
	p->max_recv_iov = q.max_recv_iov;
	p->low_watermark = q.low_watermark;
	p->available_dto_count = q.available_dto_count;
	p->outstanding_dto_count = q.outstanding_dto_count;
	max_recv_dtos = q.max_recv_dtos;
	return DAT_SUCCESS;
}

DAT_RETURN Srq::resize(DAT_COUNT max)
{
	if (max <= 0)
		return bad_arg(2);

	struct kdat_ioc_srq_op o = {};
	o.srq = kid;
	o.value = max;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_SRQ_RESIZE, o);
	if (ok(r))
		max_recv_dtos = max;
	return r;
}

DAT_RETURN Srq::set_lw(DAT_COUNT lw)
{
	struct kdat_ioc_srq_op o = {};

	o.srq = kid;
	o.value = lw;
	return call(*ctx->dev, KDAT_IOC_SRQ_SET_LW, o);
}

DAT_RETURN Srq::free()
{
	return free_object();	/* retiring detaches the channel too */
}

void Srq::on_refused(DAT_UINT64 cookie, DAT_RETURN why)
{
	/*
	 * Every refusal is kept until dat_kdat_srq_get_refused takes it: the
	 * kernel never drops one (a full async EVD holds it back in the post
	 * ring), and neither do we.  The push comes first: if it throws, the
	 * event stays in its ring (Evd::pop advances only after translating)
	 * and the next dequeue translates it again, so the buffer must not
	 * have been counted yet.
	 */
	{
		std::lock_guard<std::mutex> g(refused_lock);
		refused.push_back({ cookie, why });
	}
	returned.fetch_add(1);
}

/*
 * With the async EVD full, the kernel holds a refused entry - and every
 * entry behind it - in the post ring until there is room for its report
 * (it asks for a kick).  Dequeuing a refusal made room; if entries wait,
 * let the kernel drain them now: the consumer may post nothing more and
 * only wait for completions those buffers would bring.
 */
void Srq::after_refusal_dequeued()
{
	if (ring.unconsumed() && ring.needs_kick())
		(void)kick();
}

DAT_RETURN Srq::get_refused(DAT_DTO_COOKIE *cookie, DAT_RETURN *why)
{
	if (!cookie)
		return bad_arg(2);
	if (!why)
		return bad_arg(3);
	std::lock_guard<std::mutex> g(refused_lock);
	if (refused.empty())
		return err(DAT_QUEUE_EMPTY);
	cookie->as_64 = refused.front().cookie;
	*why = refused.front().why;
	refused.pop_front();
	return DAT_SUCCESS;
}

/*
 * The SRQ this thread posted to last, as its channel and the table entry
 * that reached it: no pin, no table lookup, no atomic read-modify-write
 * but the channel lock (PostChannel).
 */
struct PostCache {
	DAT_HANDLE h;
	PostChannel *ch;
	DAT_SRQ_POST_RECV_FUNC fn;
};
static constinit thread_local PostCache post_cache KDAT_TLS_MODEL = {};

void srq_forget_post_cache() noexcept
{
	post_cache = {};
}

} // namespace kdat

using namespace kdat;

#define IA_BAD bad_handle(DAT_INVALID_HANDLE_IA)
#define SRQ_BAD bad_handle(DAT_INVALID_HANDLE_SRQ)

/* The core of dat_srq_post_recv when the cache does not serve. */
[[gnu::noinline]] static DAT_RETURN post_recv_lookup(DAT_SRQ_HANDLE srq,
						    DAT_COUNT n,
						    DAT_LMR_TRIPLET *iov,
						    DAT_DTO_COOKIE cookie)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_SRQ, SRQ_BAD, srq_post_recv_func, srq,
			 n, iov, cookie);
}

/* The built-in provider's entries (dispatch.hpp). */
namespace kdat::builtin {

DAT_RETURN srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *attr,
		      DAT_SRQ_HANDLE *srq)
{
	return KDAT_BUILTIN(Ia, ia, dat_srq_create, srq_create(pz, attr, srq),
			    ia, pz, attr, srq);
}

DAT_RETURN srq_free(DAT_SRQ_HANDLE srq)
{
	return KDAT_BUILTIN(Srq, srq, dat_srq_free, free(), srq);
}

/*
 * The cached SRQ's channel first (unpinned, under its lock); else the
 * SRQ the core pinned, which becomes the cached one; else the core.
 */
KDAT_DATA_PATH(2048)
DAT_RETURN srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			 DAT_DTO_COOKIE cookie)
{
	PostCache &c = post_cache;

	if (__builtin_expect(srq && srq == c.h, 1)) {
		PostChannel *ch = c.ch;
		Srq::FastPost f = Srq::FastPost::no;

		ch->lock.lock();
		if (__builtin_expect(ch->handle == srq, 1))
			f = ch->srq->post_fast(n, iov, cookie);
		ch->lock.unlock();
		if (__builtin_expect(f == Srq::FastPost::done, 1))
			return DAT_SUCCESS;
		if (f == Srq::FastPost::kick) {
			/* the channel no longer pins it: find it again */
			return guard([&]() -> DAT_RETURN {
				auto o = lookup<Srq>(srq);

				return o ? o->kick_posted() : SRQ_BAD;
			});
		}
	}
	if (Srq *o = pinned<Srq>(srq)) {
		c.h = srq;
		c.ch = o->chan;
		c.fn = o->provider->srq_post_recv_func;
		return guard([&]() -> DAT_RETURN {
			return o->post_recv(n, iov, cookie, false);
		});
	}
	if (srq && pinned_call.h == srq)	/* the core's, yet not ours: never */
		return err(DAT_INTERNAL_ERROR);
	return post_recv_lookup(srq, n, iov, cookie);
}

DAT_RETURN srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask,
		     DAT_SRQ_PARAM *param)
{
	return KDAT_BUILTIN(Srq, srq, dat_srq_query, query(raw(mask), param),
			    srq, mask, param);
}

DAT_RETURN srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT max)
{
	return KDAT_BUILTIN(Srq, srq, dat_srq_resize, resize(max), srq, max);
}

DAT_RETURN srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT lw)
{
	return KDAT_BUILTIN(Srq, srq, dat_srq_set_lw, set_lw(lw), srq, lw);
}

} // namespace kdat::builtin

extern "C" {

DAT_RETURN dat_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			  DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *srq)
{
	return dispatch<&DAT_PROVIDER::srq_create_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(srq, DAT_HANDLE_TYPE_SRQ), ia,
		pz, attr, srq);
}

DAT_RETURN dat_srq_free(DAT_SRQ_HANDLE srq)
{
	return dispatch<&DAT_PROVIDER::srq_free_func>(
		DAT_HANDLE_TYPE_SRQ, SRQ_BAD, erased(srq), srq);
}

/*
 * The hot path: the SRQ this thread posted to last goes straight to the
 * table entry that served it (one indirect call, no lookup).
 */
KDAT_DATA_PATH(128)
DAT_RETURN dat_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n,
			     DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie)
{
	const PostCache &c = post_cache;

	if (__builtin_expect(srq && srq == c.h, 1))
		return c.fn(srq, n, iov, cookie);
	return post_recv_lookup(srq, n, iov, cookie);
}

DAT_RETURN dat_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask,
			 DAT_SRQ_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_SRQ, SRQ_BAD, srq_query_func, srq,
			 mask, param);
}

DAT_RETURN dat_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT max)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_SRQ, SRQ_BAD, srq_resize_func, srq,
			 max);
}

DAT_RETURN dat_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT lw)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_SRQ, SRQ_BAD, srq_set_lw_func, srq,
			 lw);
}

/* kdat extensions of the built-in provider (not in the table). */

DAT_RETURN dat_kdat_srq_post_recv_ioctl(DAT_SRQ_HANDLE srq, DAT_COUNT n,
					DAT_LMR_TRIPLET *iov,
					DAT_DTO_COOKIE cookie)
{
	return guard([&]() -> DAT_RETURN {
		auto o = lookup<Srq>(srq);

		return o ? o->post_recv(n, iov, cookie, true) : SRQ_BAD;
	});
}

DAT_RETURN dat_kdat_srq_get_refused(DAT_SRQ_HANDLE srq,
				    DAT_DTO_COOKIE *cookie, DAT_RETURN *why)
{
	return guard([&]() -> DAT_RETURN {
		auto o = lookup<Srq>(srq);

		return o ? o->get_refused(cookie, why) : SRQ_BAD;
	});
}

} // extern "C"
