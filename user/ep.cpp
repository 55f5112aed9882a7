// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Endpoints: dat_ep_create, dat_ep_create_with_srq, _query, _modify,
// _connect, _dup_connect, _disconnect, _post_send, _post_recv,
// _post_rdma_read, _post_rdma_write, _get_status, _reset, _free,
// _recv_query, _set_watermark.
//
// Sends, RDMA Writes and Reads (and RDMA Write with immediate data) go
// through the EP's mmapped send ring when the kernel gave one
// (KDAT_FEATURE_SEND_RING): the library checks synchronously what the DAT
// call makes a return code - the segment counts, the flags, every triplet
// against its own LMR table with the privilege the operation needs and the
// EP's PZ, the total length against max_message_size / max_rdma_size and
// the remote segment, the state the kernel publishes (not CONNECTED:
// DAT_INVALID_STATE) and the room it publishes (depth - (posted -
// retired), else DAT_INSUFFICIENT_RESOURCES) - writes the entry and
// publishes its tail.  It kicks (KDAT_IOC_EP_KICK) only when the kernel
// says its send queue is idle (KDAT_RING_NEED_KICK): while requests are in
// flight, their completions drain the ring, and a streaming post costs no
// system call.  The kernel checks every entry again; one it refuses comes
// back as an error completion (docs/user-api.md).
//
// Whatever the library's checks would refuse goes to KDAT_IOC_EP_POST
// instead, so the code returned is the kernel's (one implementation of
// the semantics); that ioctl posts nothing when it fails.  Receives,
// atomics (the device's atomic capability is the kernel's to check),
// posts with KDAT_EP_POST=ioctl in the environment and EPs without a ring
// always use the ioctl; before a post by ioctl that could succeed, the
// library kicks the ring if it holds entries, so the order of posts holds.
#include <cstdlib>
#include <cstring>

#include "dispatch.hpp"
#include "hot.hpp"
#include "objects.hpp"

namespace kdat {

static void attr_to_abi(const DAT_EP_ATTR &a, struct kdat_uep_attr &u)
{
	std::memset(&u, 0, sizeof(u));
	u.max_message_size = a.max_message_size;
	u.max_rdma_size = a.max_rdma_size;
	u.recv_completion_flags = a.recv_completion_flags;
	u.request_completion_flags = a.request_completion_flags;
	u.max_recv_dtos = a.max_recv_dtos;
	u.max_request_dtos = a.max_request_dtos;
	u.max_recv_iov = a.max_recv_iov;
	u.max_request_iov = a.max_request_iov;
	u.max_rdma_read_in = a.max_rdma_read_in;
	u.max_rdma_read_out = a.max_rdma_read_out;
	u.srq_soft_hw = a.srq_soft_hw;
	u.max_rdma_read_iov = a.max_rdma_read_iov;
	u.max_rdma_write_iov = a.max_rdma_write_iov;
}

static void attr_from_abi(const struct kdat_uep_attr &u, DAT_EP_ATTR &a)
{
	std::memset(&a, 0, sizeof(a));
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_message_size = u.max_message_size;
	a.max_rdma_size = u.max_rdma_size;
	a.qos = DAT_QOS_BEST_EFFORT;
	a.recv_completion_flags = (DAT_COMPLETION_FLAGS)u.recv_completion_flags;
	a.request_completion_flags =
		(DAT_COMPLETION_FLAGS)u.request_completion_flags;
	a.max_recv_dtos = u.max_recv_dtos;
	a.max_request_dtos = u.max_request_dtos;
	a.max_recv_iov = u.max_recv_iov;
	a.max_request_iov = u.max_request_iov;
	a.max_rdma_read_in = u.max_rdma_read_in;
	a.max_rdma_read_out = u.max_rdma_read_out;
	a.srq_soft_hw = u.srq_soft_hw;
	a.max_rdma_read_iov = u.max_rdma_read_iov;
	a.max_rdma_write_iov = u.max_rdma_write_iov;
}

/*
 * An EVD argument: DAT_HANDLE_NULL (no events wanted) or an EVD of this
 * IA (with @other_ia_ok, of any IA of the file); false otherwise, and the
 * caller answers DAT_INVALID_HANDLE with the argument's subtype.
 */
static bool evd_arg(const std::shared_ptr<Context> &ctx, DAT_EVD_HANDLE h,
		    std::shared_ptr<Evd> &out, bool other_ia_ok = false)
{
	if (!h)
		return true;
	out = lookup<Evd>(h);
	/*
	 * A connection EVD may be of another IA of the file (the kernel
	 * decides, as for kernel consumers: kdat_get_evd); the rest are the
	 * EP's IA's.
	 */
	return out && (out->ctx == ctx ||
		       (other_ia_ok && out->ctx->file == ctx->file));
}

DAT_RETURN Ep::attach_ring(std::uint64_t offset, std::uint64_t size)
{
	DAT_RETURN r = Mapping::map(ctx->dev, size, offset, sring_map);

	if (!ok(r))
		return r;
	auto l = ring::validate(sring_map.get(), sring_map.size(),
				ring::kSqeHeader + sizeof(struct kdat_useg));
	if (!l)
		return err(DAT_INTERNAL_ERROR);
	r = refresh_limits();
	if (!ok(r))
		return r;
	std::lock_guard<SpinLock> g(post_lock);
	sring = ring::SendProducer(*l);
	return DAT_SUCCESS;
}

/*
 * The attributes a post is checked against.  They change only by
 * dat_ep_modify (while the EP is unconnected and idle), which calls this
 * again.
 */
DAT_RETURN Ep::refresh_limits()
{
	struct kdat_ioc_ep_query q = {};

	q.ep = kid;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_EP_QUERY, q);
	if (!ok(r))
		return r;
	Limits l;
	l.max_message_size = q.attr.max_message_size;
	l.max_rdma_size = q.attr.max_rdma_size;
	l.max_request_iov = q.attr.max_request_iov;
	l.max_rdma_read_iov = q.attr.max_rdma_read_iov;
	l.max_rdma_write_iov = q.attr.max_rdma_write_iov;
	l.max_rdma_read_out = q.attr.max_rdma_read_out;
	std::lock_guard<SpinLock> g(post_lock);
	lim = l;
	return DAT_SUCCESS;
}

DAT_RETURN Ia::ep_create(DAT_PZ_HANDLE pz_h, DAT_EVD_HANDLE recv_h,
			 DAT_EVD_HANDLE req_h, DAT_EVD_HANDLE conn_h,
			 DAT_SRQ_HANDLE srq_h, const DAT_EP_ATTR *attr,
			 DAT_EP_HANDLE *ep_handle, bool with_srq)
{
	std::shared_ptr<Evd> recv, req, conn;
	std::shared_ptr<Srq> srq;

	/* the kernel's order: PZ, EVDs, SRQ, attributes, output */
	auto pz = lookup<Pz>(pz_h);
	if (!pz || pz->ctx != ctx)
		return bad_handle(DAT_INVALID_HANDLE_PZ);
	if (!evd_arg(ctx, recv_h, recv))
		return bad_handle(DAT_INVALID_HANDLE_EVD_RECV);
	if (!evd_arg(ctx, req_h, req))
		return bad_handle(DAT_INVALID_HANDLE_EVD_REQUEST);
	if (!evd_arg(ctx, conn_h, conn, true))
		return bad_handle(DAT_INVALID_HANDLE_EVD_CONN);
	if (with_srq) {
		srq = lookup<Srq>(srq_h);
		if (!srq || srq->ctx != ctx)
			return bad_handle(DAT_INVALID_HANDLE_SRQ);
		if (!attr)
			return bad_arg(7);
	}
	if (!ep_handle)
		return bad_arg(with_srq ? 8 : 7);
	/* ep_attributes is ARG6 of dat_ep_create, ARG7 with an SRQ */
	if (attr && attr->service_type != DAT_SERVICE_TYPE_RC)
		return bad_arg(with_srq ? 7 : 6);

	struct kdat_ioc_ep_create c = {};
	c.ia = kid;
	c.pz = pz->kid;
	c.recv_evd = recv ? recv->kid : 0;
	c.request_evd = req ? req->kid : 0;
	c.connect_evd = conn ? conn->kid : 0;
	c.srq = srq ? srq->kid : 0;
	if (attr) {
		attr_to_abi(*attr, c.attr);
		c.has_attr = 1;
	}
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_EP_CREATE, c);
	if (!ok(r))
		return r;
	KernelObjectGuard owner(*ctx, c.ep, ktype::EP);

	auto ep = make_object<Ep>(ctx);
	ep->kid = c.ep;
	ep->pz = pz;
	ep->recv_evd = recv;
	ep->request_evd = req;
	ep->connect_evd = conn;
	ep->srq = srq;
	ep->post_by_ioctl = ring::env_wants_ioctl("KDAT_EP_POST");
	if (ring::env_is("KDAT_EP_KICK", "inline"))
		ep->kick_mode = Ep::Kick::inline_always;
	else if (ring::env_is("KDAT_EP_KICK", "defer"))
		ep->kick_mode = Ep::Kick::defer_suppressed;
	/* no ring (an older module, no memory): every post by ioctl */
	if (c.ring_size && !ep->post_by_ioctl) {
		r = ep->attach_ring(c.ring_offset, c.ring_size);
		if (!ok(r))
			return r;
	}
	ctx->publish(ep);
	owner.release();
	*ep_handle = ep->handle();
	return DAT_SUCCESS;
}

Tomb Ep::tomb()
{
	Tomb t;

	t.handle = handle();
	t.type = DAT_HANDLE_TYPE_EP;
	t.srq = srq;
	t.recv_evd = recv_evd ? recv_evd->kid : 0;
	t.request_evd = request_evd ? request_evd->kid : 0;
	return t;
}

DAT_RETURN Ep::query(DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *p)
{
	DAT_RETURN r = query_args(raw(mask), DAT_EP_FIELD_ALL, p);

	if (!ok(r))
		return r;

	struct kdat_ioc_ep_query q = {};
	q.ep = kid;
	r = call(*ctx->dev, KDAT_IOC_EP_QUERY, q);
	if (!ok(r))
		return r;
	std::memset(p, 0, sizeof(*p));
	p->ia_handle = ctx->ia_handle;
	p->ep_state = (DAT_EP_STATE)q.state;
	p->local_ia_address_ptr = ctx->address();
	p->local_port_qual = q.local_port;
	{
		std::lock_guard<std::mutex> g(lock);
		sockaddr_from_abi(q.remote_addr, sizeof(q.remote_addr), remote);
	}
	p->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&remote;
	p->remote_port_qual = q.remote_port;
	p->pz_handle = pz->handle();
	p->recv_evd_handle = recv_evd ? recv_evd->handle() : DAT_HANDLE_NULL;
	p->request_evd_handle =
		request_evd ? request_evd->handle() : DAT_HANDLE_NULL;
	p->connect_evd_handle =
		connect_evd ? connect_evd->handle() : DAT_HANDLE_NULL;
	p->srq_handle = srq ? srq->handle() : DAT_HANDLE_NULL;
	attr_from_abi(q.attr, p->ep_attr);
	return DAT_SUCCESS;
}

/*
 * The kernel's modify (KDAT_IOC_EP_MODIFY) decides everything: which mask
 * bits it accepts, the values, the EP's state.  Only a NULL @param cannot
 * cross the ABI; the kernel checks it first, with the same code.  The
 * library keeps no copy of the attributes, so nothing here goes stale.
 */
DAT_RETURN Ep::modify(DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param)
{
	if (!param)
		return bad_arg(3);

	/* only what the mask names: the rest may be uninitialized */
	const DAT_EP_ATTR &a = param->ep_attr;
	const std::uint64_t m64 = raw(mask);
	struct kdat_ioc_ep_modify m = {};
	m.ep = kid;
	m.mask = m64;
	if (m64 & DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE)
		m.attr.max_message_size = a.max_message_size;
	if (m64 & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE)
		m.attr.max_rdma_size = a.max_rdma_size;
	if (m64 & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)
		m.attr.max_request_dtos = a.max_request_dtos;
	if (m64 & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV)
		m.attr.max_request_iov = a.max_request_iov;
	if (m64 & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN)
		m.attr.max_rdma_read_in = a.max_rdma_read_in;
	if (m64 & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT)
		m.attr.max_rdma_read_out = a.max_rdma_read_out;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_EP_MODIFY, m);
	/* the send ring's checks follow the new limits */
	if (ok(r) && sring.valid())
		(void)refresh_limits();
	return r;
}

DAT_RETURN Ep::connect(DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
		       DAT_TIMEOUT timeout, DAT_COUNT pdata_size,
		       const DAT_PVOID pdata, std::uint64_t qos,
		       std::uint64_t flags)
{
	struct kdat_ioc_ep_connect c = {};
	std::size_t alen;

	if (!addr)
		return err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED);
	switch (addr->sa_family) {
	case AF_INET:
		alen = sizeof(struct sockaddr_in);
		break;
	case AF_INET6:
		alen = sizeof(struct sockaddr_in6);
		break;
	default:
		alen = sizeof(struct sockaddr);
		break;
	}
	/* private_data_size is ARG5, private_data ARG6 */
	if (pdata_size < 0 || pdata_size > KDAT_PDATA_LEN)
		return bad_arg(5);
	if (pdata_size && !pdata)
		return bad_arg(6);

	c.ep = kid;
	c.timeout_us = timeout;		/* DAT_TIMEOUT_INFINITE is ~0 too */
	c.conn_qual = qual;
	std::memcpy(c.addr, addr, alen);
	c.qos = (__u32)qos;
	c.flags = (__u32)flags;
	c.pdata_size = (__u32)pdata_size;
	if (pdata_size)
		std::memcpy(c.pdata, pdata, (std::size_t)pdata_size);
	return call(*ctx->dev, KDAT_IOC_EP_CONNECT, c);
}

DAT_RETURN Ep::disconnect(std::uint64_t flags)
{
	struct kdat_ioc_ep_op o = {};

	o.ep = kid;
	o.value = (__u32)flags;
	return call(*ctx->dev, KDAT_IOC_EP_DISCONNECT, o);
}

KDAT_DATA_PATH(256)
DAT_RETURN Ep::post(std::uint32_t op, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
		    DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote_iov,
		    std::uint64_t flags, const PostExt *x)
{
	bool rdma = op != KDAT_POST_SEND && op != KDAT_POST_RECV;

	if (n < 0 || n > KDAT_MAX_IOV)
		return bad_arg(2);
	if (n && !iov)
		return bad_arg(3);
	if (rdma && !remote_iov)
		return bad_arg(5);
	if (sring.valid() && op != KDAT_POST_RECV &&
	    op != KDAT_POST_CMP_AND_SWAP && op != KDAT_POST_FETCH_AND_ADD) {
		DAT_RETURN r;

		if (ring_post(op, n, iov, cookie, remote_iov, flags, x, r))
			return r;
	}
	return post_ioctl(op, n, iov, cookie, remote_iov, flags, x);
}

/* The completion flags a request may carry (the kernel's KDAT_SEND_FLAGS). */
static constexpr std::uint64_t kSendFlags = DAT_COMPLETION_SUPPRESS_FLAG |
					    DAT_COMPLETION_SOLICITED_WAIT_FLAG |
					    DAT_COMPLETION_BARRIER_FENCE_FLAG;

/*
 * Post through the send ring.  False: the kernel would refuse the post
 * (the caller asks the ioctl for its exact code); true: @r is the answer.
 */
KDAT_DATA_PATH(2048)
bool Ep::ring_post(std::uint32_t op, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
		   DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote_iov,
		   std::uint64_t flags, const PostExt *x, DAT_RETURN &r)
{
	const bool read = op == KDAT_POST_RDMA_READ;
	const bool write = op == KDAT_POST_RDMA_WRITE ||
			   op == KDAT_POST_RDMA_WRITE_IMMED;
	const bool rdma = read || write;
	const DAT_MEM_PRIV_FLAGS need = read ? DAT_MEM_PRIV_LOCAL_WRITE_FLAG :
					       DAT_MEM_PRIV_LOCAL_READ_FLAG;
	std::uint64_t len = 0;
	bool checked = false, kick_now, stream;
	std::int64_t awaited_before;
	LmrCache seen;

	if (post_by_ioctl || (flags & ~kSendFlags))
		return false;
	for (DAT_COUNT i = 0; i < n; i++) {
		len += iov[i].segment_length;
		/* each at most 4 GiB (the triplet check): no overflow */
	}
	if (n == 1) {
		std::lock_guard<SpinLock> g(post_lock);
		if (ctx->check_cached(iov[0], pz->kid, need, lmr_cache, r)) {
			if (!ok(r))
				return false;
			checked = true;
		}
	}
	/* the LMR table's lock is not taken under the spin lock */
	for (DAT_COUNT i = 0; i < n && !checked; i++) {
		r = ctx->check_triplet(iov[i], pz->kid, need, &seen);
		if (!ok(r))
			return false;
	}

	{
		std::lock_guard<SpinLock> g(post_lock);

		if (seen.valid)
			lmr_cache = seen;
		if (n > lim.max_request_iov ||
		    (std::uint32_t)n > sring.max_segments() ||
		    (read && (n > lim.max_rdma_read_iov ||
			      !lim.max_rdma_read_out)) ||
		    (write && n > lim.max_rdma_write_iov))
			return false;
		if (len > (rdma ? lim.max_rdma_size : lim.max_message_size) ||
		    (rdma && len > remote_iov->segment_length))
			return false;
		/* the kernel's order: the request, then the state, then room */
		if (sring.ep_state() != DAT_EP_STATE_CONNECTED) {
			r = err(DAT_INVALID_STATE,
				DAT_INVALID_STATE_EP_UNCONNECTED);
			return true;
		}
		if (!sring.room(ioctl_posted)) {
			r = err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
			return true;
		}
		struct kdat_ep_sqe *w = sring.next_slot();
		w->op = op;
		w->flags = (__u32)flags;
		w->nseg = (__u32)n;
		w->cookie = cookie.as_64;
		if (rdma) {
			w->rmr_context = remote_iov->rmr_context;
			w->remote_addr = remote_iov->target_address;
			w->remote_length = remote_iov->segment_length;
		} else {
			w->rmr_context = 0;
			w->remote_addr = 0;
			w->remote_length = 0;
		}
		w->immed_data = x ? x->immed_data : 0;
		w->reserved = 0;
		for (DAT_COUNT i = 0; i < n; i++) {
			w->seg[i].lmr_context = iov[i].lmr_context;
			w->seg[i].pad = 0;
			w->seg[i].addr = iov[i].virtual_address;
			w->seg[i].length = iov[i].segment_length;
		}
		awaited_before = ctx->awaited.load(std::memory_order_relaxed);
		/* before the kernel can see it: its completion may be next */
		if (awaits(flags))
			await_one();
		kick_now = sring.publish();
		const std::uint64_t reaped =
			ctx->reaped.load(std::memory_order_relaxed);
		stream = reaped == reaped_at_post;
		reaped_at_post = reaped;
	}
	r = DAT_SUCCESS;
	/*
	 * The send queue was idle: no completion will drain the ring.  A
	 * post nobody waits for (no completion asked) that follows the EP's
	 * previous post with no event reaped in between is part of a stream:
	 * if the consumer sleeps for its events, the post leaves the
	 * device's work to the device's context (on rxe, ksoftirqd), so the
	 * posts after it find the queue busy and cost no kick
	 * (KDAT_EP_KICK_DEFER).  Completions of the consumer's own sends
	 * and RDMA writes do not count as events in between: refilling a
	 * send window after them is a stream.  Any other post runs the
	 * device's work in this call, which is sooner: one that answers an
	 * event (request/response), one whose completion is waited for, and
	 * any post of a consumer that spins on dat_evd_dequeue (ksoftirqd
	 * would compete with it for the CPU).  But a sleeping consumer's
	 * post while completions it asked for (on this EP or another of the
	 * IA) are still to be dequeued is not one it waits for next: it is
	 * one of a pipeline, or of many connections' requests in flight.
	 * Run inline, each would wait for the whole exchange of the one
	 * before it (measured on rxe: half the rate at 128 EPs with one
	 * send in flight each, and dapltest -T P about 10% slower); the
	 * device's context runs them side by side.
	 */
	if (__builtin_expect(kick_now, 0)) {
		const bool suppressed = flags & DAT_COMPLETION_SUPPRESS_FLAG;
		bool defer;

		switch (kick_mode) {
		case Kick::inline_always:
			defer = false;
			break;
		case Kick::defer_suppressed:
			defer = suppressed;
			break;
		default:
			defer = !ctx->polls.load(std::memory_order_relaxed) &&
				(awaited_before > 0 || (suppressed && stream));
			break;
		}
		DAT_RETURN k = kick(defer ? KDAT_EP_KICK_DEFER : 0);
		if (is_type(k, DAT_INVALID_HANDLE)) {
			/*
			 * Freed by another thread: no completion will come
			 * (its free may have taken the count already)
			 */
			if (awaits(flags))
				request_reaped();
			r = k;
		}
	}
	return true;
}

/*
 * Does a request posted with @flags give the consumer a completion to
 * dequeue?  Not a suppressed one, and none without a request EVD (the
 * kernel completes those on a CQ of the EP's own).
 */
bool Ep::awaits(std::uint64_t flags) const
{
	return !(flags & DAT_COMPLETION_SUPPRESS_FLAG) && request_evd;
}

void Ep::await_one()
{
	awaited.fetch_add(1, std::memory_order_relaxed);
	ctx->awaited.fetch_add(1, std::memory_order_relaxed);
}

/*
 * A completion of one of the EP's requests was dequeued (or a counted
 * post failed).  A hint for the kick rule, so it never goes below
 * nothing: a failed suppressed request completes too.
 */
void Ep::request_reaped()
{
	std::int64_t n = awaited.load(std::memory_order_relaxed);

	while (n > 0) {
		if (awaited.compare_exchange_weak(n, n - 1,
						  std::memory_order_relaxed)) {
			ctx->awaited.fetch_sub(1, std::memory_order_relaxed);
			return;
		}
	}
}

void Ep::forget_awaited()
{
	ctx->awaited.fetch_sub(awaited.exchange(0, std::memory_order_relaxed),
			       std::memory_order_relaxed);
}

DAT_RETURN Ep::kick(std::uint32_t how)
{
	struct kdat_ioc_ep_op k = {};

	k.ep = kid;
	k.value = how;
	return call(*ctx->dev, KDAT_IOC_EP_KICK, k);
}

DAT_RETURN Ep::post_ioctl(std::uint32_t op, DAT_COUNT n,
			  const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			  const DAT_RMR_TRIPLET *remote_iov, std::uint64_t flags,
			  const PostExt *x)
{
	struct kdat_ioc_ep_post p = {};
	bool rdma = op != KDAT_POST_SEND && op != KDAT_POST_RECV;
	bool sq = op != KDAT_POST_RECV && sring.valid();

	p.ep = kid;
	p.op = op;
	p.flags = (__u32)flags;
	p.nseg = (__u32)n;
	p.cookie = cookie.as_64;
	if (rdma) {
		p.rmr_context = remote_iov->rmr_context;
		p.remote_addr = remote_iov->target_address;
		p.remote_length = remote_iov->segment_length;
	}
	if (x) {
		p.compare_add = x->compare_add;
		p.swap = x->swap;
		p.immed_data = x->immed_data;
	}
	to_useg(iov, n, p.seg);
	/*
	 * What the ring holds goes first.  An entry the kick leaves there
	 * waits for the send queue (full, or a refusal held back until what
	 * was posted before it completes): posting past it would complete
	 * out of order, so the queue counts as full.
	 */
	if (sq && sring.unconsumed()) {
		(void)kick();
		if (sring.unconsumed())
			return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
	}
	/*
	 * Counted in flight before the kernel can retire it (its completion
	 * may come before the ioctl returns), given back if it failed.
	 */
	if (sq) {
		std::lock_guard<SpinLock> g(post_lock);
		ioctl_posted++;
	}
	const bool counted = op != KDAT_POST_RECV && awaits(flags);
	if (counted)
		await_one();
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_EP_POST, p);
	if (!ok(r) && sq) {
		std::lock_guard<SpinLock> g(post_lock);
		ioctl_posted--;
	}
	if (!ok(r) && counted)
		request_reaped();
	return r;
}

DAT_RETURN Ep::get_status(DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
			  DAT_BOOLEAN *request_idle)
{
	struct kdat_ioc_ep_status s = {};

	s.ep = kid;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_EP_STATUS, s);
	if (!ok(r))
		return r;
	if (state)
		*state = (DAT_EP_STATE)s.state;
	if (recv_idle)
		*recv_idle = s.recv_idle ? DAT_TRUE : DAT_FALSE;
	if (request_idle)
		*request_idle = s.request_idle ? DAT_TRUE : DAT_FALSE;
	return DAT_SUCCESS;
}

DAT_RETURN Ep::reset()
{
	struct kdat_ioc_ep_op o = {};

	o.ep = kid;
	return call(*ctx->dev, KDAT_IOC_EP_RESET, o);
}

DAT_RETURN Ep::free()
{
	/* its flushed receives still arrive and must be counted */
	Tomb t = tomb();
	DAT_RETURN r = free_object(&t);

	/* its completions still to come find no EP to count them */
	if (ok(r))
		forget_awaited();
	return r;
}

} // namespace kdat

/* The built-in provider's entries (dispatch.hpp). */
namespace kdat::builtin {

DAT_RETURN ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
		     DAT_EVD_HANDLE recv_evd, DAT_EVD_HANDLE request_evd,
		     DAT_EVD_HANDLE connect_evd, const DAT_EP_ATTR *attr,
		     DAT_EP_HANDLE *ep)
{
	return KDAT_BUILTIN(Ia, ia, dat_ep_create,
			    ep_create(pz, recv_evd, request_evd, connect_evd,
				      nullptr, attr, ep, false),
			    ia, pz, recv_evd, request_evd, connect_evd, attr,
			    ep);
}

DAT_RETURN ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			      DAT_EVD_HANDLE recv_evd,
			      DAT_EVD_HANDLE request_evd,
			      DAT_EVD_HANDLE connect_evd, DAT_SRQ_HANDLE srq,
			      const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
{
	return KDAT_BUILTIN(Ia, ia, dat_ep_create_with_srq,
			    ep_create(pz, recv_evd, request_evd, connect_evd,
				      srq, attr, ep, true),
			    ia, pz, recv_evd, request_evd, connect_evd, srq,
			    attr, ep);
}

DAT_RETURN ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
		    DAT_EP_PARAM *param)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_query, query(mask, param), ep, mask,
			    param);
}

DAT_RETURN ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
		     const DAT_EP_PARAM *param)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_modify, modify(mask, param), ep,
			    mask, param);
}

DAT_RETURN ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr,
		      DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
		      DAT_COUNT pdata_size, const DAT_PVOID pdata, DAT_QOS qos,
		      DAT_CONNECT_FLAGS flags)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_connect,
			    connect(addr, qual, timeout, pdata_size, pdata,
				    raw(qos), raw(flags)),
			    ep, addr, qual, timeout, pdata_size, pdata, qos,
			    flags);
}

DAT_RETURN ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup,
			  DAT_TIMEOUT timeout, DAT_COUNT pdata_size,
			  const DAT_PVOID pdata, DAT_QOS qos)
{
	return on_builtin<Ep>(
		ep, dat_ep_dup_connect,
		[](Ep &) { return err(DAT_NOT_IMPLEMENTED); }, ep, dup, timeout,
		pdata_size, pdata, qos);
}

DAT_RETURN ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_disconnect, disconnect(raw(flags)),
			    ep, flags);
}

KDAT_DATA_PATH(256)
DAT_RETURN ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_post_send,
			    post(KDAT_POST_SEND, n, iov, cookie, nullptr,
				 raw(flags)),
			    ep, n, iov, cookie, flags);
}

KDAT_DATA_PATH(256)
DAT_RETURN ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_post_recv,
			    post(KDAT_POST_RECV, n, iov, cookie, nullptr,
				 raw(flags)),
			    ep, n, iov, cookie, flags);
}

KDAT_DATA_PATH(256)
DAT_RETURN ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n,
			     DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			     const DAT_RMR_TRIPLET *remote,
			     DAT_COMPLETION_FLAGS flags)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_post_rdma_read,
			    post(KDAT_POST_RDMA_READ, n, iov, cookie, remote,
				 raw(flags)),
			    ep, n, iov, cookie, remote, flags);
}

KDAT_DATA_PATH(256)
DAT_RETURN ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n,
			      DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			      const DAT_RMR_TRIPLET *remote,
			      DAT_COMPLETION_FLAGS flags)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_post_rdma_write,
			    post(KDAT_POST_RDMA_WRITE, n, iov, cookie, remote,
				 raw(flags)),
			    ep, n, iov, cookie, remote, flags);
}

DAT_RETURN ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *state,
			 DAT_BOOLEAN *recv_idle, DAT_BOOLEAN *request_idle)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_get_status,
			    get_status(state, recv_idle, request_idle), ep,
			    state, recv_idle, request_idle);
}

DAT_RETURN ep_free(DAT_EP_HANDLE ep)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_free, free(), ep);
}

DAT_RETURN ep_reset(DAT_EP_HANDLE ep)
{
	return KDAT_BUILTIN(Ep, ep, dat_ep_reset, reset(), ep);
}

/* ep_recv_info_supported is 0: the counts are unknown. */
DAT_RETURN ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs, DAT_COUNT *span)
{
	return on_builtin<Ep>(
		ep, dat_ep_recv_query,
		[&](Ep &) {
			if (nbufs)
				*nbufs = DAT_VALUE_UNKNOWN;
			if (span)
				*span = DAT_VALUE_UNKNOWN;
			return (DAT_RETURN)DAT_SUCCESS;
		},
		ep, nbufs, span);
}

/* The kernel provider has no soft/hard watermarks. */
DAT_RETURN ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft, DAT_COUNT hard)
{
	return on_builtin<Ep>(
		ep, dat_ep_set_watermark,
		[](Ep &) { return err(DAT_MODEL_NOT_SUPPORTED); }, ep, soft,
		hard);
}

} // namespace kdat::builtin

using namespace kdat;

#define IA_BAD bad_handle(DAT_INVALID_HANDLE_IA)
#define EP_BAD bad_handle(DAT_INVALID_HANDLE_EP)

extern "C" {

DAT_RETURN dat_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			 DAT_EVD_HANDLE recv_evd, DAT_EVD_HANDLE request_evd,
			 DAT_EVD_HANDLE connect_evd, const DAT_EP_ATTR *attr,
			 DAT_EP_HANDLE *ep)
{
	return dispatch<&DAT_PROVIDER::ep_create_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(ep, DAT_HANDLE_TYPE_EP), ia,
		pz, recv_evd, request_evd, connect_evd, attr, ep);
}

DAT_RETURN dat_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
				  DAT_EVD_HANDLE recv_evd,
				  DAT_EVD_HANDLE request_evd,
				  DAT_EVD_HANDLE connect_evd,
				  DAT_SRQ_HANDLE srq, const DAT_EP_ATTR *attr,
				  DAT_EP_HANDLE *ep)
{
	return dispatch<&DAT_PROVIDER::ep_create_with_srq_func>(
		DAT_HANDLE_TYPE_IA, IA_BAD, track(ep, DAT_HANDLE_TYPE_EP), ia,
		pz, recv_evd, request_evd, connect_evd, srq, attr, ep);
}

DAT_RETURN dat_ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
			DAT_EP_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_query_func, ep, mask,
			 param);
}

DAT_RETURN dat_ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
			 const DAT_EP_PARAM *param)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_modify_func, ep, mask,
			 param);
}

DAT_RETURN dat_ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr,
			  DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
			  DAT_COUNT pdata_size, const DAT_PVOID pdata,
			  DAT_QOS qos, DAT_CONNECT_FLAGS flags)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_connect_func, ep, addr,
			 qual, timeout, pdata_size, pdata, qos, flags);
}

DAT_RETURN dat_ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup,
			      DAT_TIMEOUT timeout, DAT_COUNT pdata_size,
			      const DAT_PVOID pdata, DAT_QOS qos)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_dup_connect_func, ep,
			 dup, timeout, pdata_size, pdata, qos);
}

DAT_RETURN dat_ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_disconnect_func, ep,
			 flags);
}

KDAT_DATA_PATH(1024)
DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n,
			    DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			    DAT_COMPLETION_FLAGS flags)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_post_send_func, ep, n,
			 iov, cookie, flags);
}

KDAT_DATA_PATH(1024)
DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n,
			    DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			    DAT_COMPLETION_FLAGS flags)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_post_recv_func, ep, n,
			 iov, cookie, flags);
}

KDAT_DATA_PATH(1024)
DAT_RETURN dat_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n,
				 DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				 const DAT_RMR_TRIPLET *remote,
				 DAT_COMPLETION_FLAGS flags)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_post_rdma_read_func,
			 ep, n, iov, cookie, remote, flags);
}

KDAT_DATA_PATH(1024)
DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n,
				  DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				  const DAT_RMR_TRIPLET *remote,
				  DAT_COMPLETION_FLAGS flags)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_post_rdma_write_func,
			 ep, n, iov, cookie, remote, flags);
}

DAT_RETURN dat_ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *state,
			     DAT_BOOLEAN *recv_idle,
			     DAT_BOOLEAN *request_idle)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_get_status_func, ep,
			 state, recv_idle, request_idle);
}

DAT_RETURN dat_ep_free(DAT_EP_HANDLE ep)
{
	return dispatch<&DAT_PROVIDER::ep_free_func>(DAT_HANDLE_TYPE_EP, EP_BAD,
						     erased(ep), ep);
}

DAT_RETURN dat_ep_reset(DAT_EP_HANDLE ep)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_reset_func, ep);
}

DAT_RETURN dat_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs,
			     DAT_COUNT *span)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_recv_query_func, ep,
			 nbufs, span);
}

DAT_RETURN dat_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft,
				DAT_COUNT hard)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_EP, EP_BAD, ep_set_watermark_func, ep,
			 soft, hard);
}

} // extern "C"
