// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connection management over rdma_cm: Public Service Points listen on a
 * connection qualifier (the TCP-space port of the IA address), incoming
 * requests become Connection Requests, and EPs connect, accept and
 * disconnect.  A Reserved Service Point is a PSP bound to one EP: the
 * same listen path, but it delivers one request only, for that EP.
 *
 * Every rdma_cm_id's context is the kdat_obj it serves (PSP, CR or EP),
 * so one handler dispatches on the object type.  Connection events are
 * queued from the handler and their upcalls run from a work item: an
 * upcall may call dat_cr_accept, which takes the very handler lock the
 * CM holds while it calls us.
 */
#include <linux/slab.h>
#include <linux/in.h>
#include <rdma/ib_cm.h>

#include "kdat_core.h"

#define KDAT_CM_TIMEOUT_MS	5000
/*
 * Receiver-not-ready back-off of 0.64 ms (IB encoding 12), not the CM's
 * default 655 ms: an SRQ that ran dry is refilled in microseconds, and the
 * seed says such an EP behaves like one with an empty receive queue, not
 * like one that stalls for most of a second.  Tunable (IB encoding, 0-31,
 * taken at each connect): on a slow kernel (KASAN under emulation) every
 * stalled sender retrying each jiffy can take the CPUs.
 */
static ushort min_rnr_timer = 12;
module_param(min_rnr_timer, ushort, 0644);
MODULE_PARM_DESC(min_rnr_timer,
		 "RNR NAK timer the EPs ask for, IB encoding 0-31 (12: 0.64 ms)");

static u8 kdat_min_rnr_timer(void)
{
	return min_t(u16, READ_ONCE(min_rnr_timer), 31);
}
/*
 * IB CM carries fixed-size private data areas, so the receiver cannot tell
 * how much the sender meant.  The provider prefixes one length byte, so a
 * CR and a connection event report exactly the consumer's bytes.
 */
#define KDAT_REQ_PDATA_MAX	55	/* 56 bytes of REQ data after rdma_cm */
#define KDAT_REP_PDATA_MAX	195	/* 196 bytes of REP data */

/*
 * Connection requests a PSP holds before the consumer accepts or rejects
 * them: peers cannot make the kernel queue more (the CM then rejects).
 */
static unsigned int max_pending_crs = 128;
module_param(max_pending_crs, uint, 0644);
MODULE_PARM_DESC(max_pending_crs, "connection requests one PSP may hold unanswered (default 128)");

/* Unwrap length-prefixed private data; returns the consumer's length. */
static u8 kdat_pdata_unwrap(const void *p, u8 len, const u8 **data)
{
	const u8 *b = p;

	*data = NULL;
	if (!b || !len || !b[0])
		return 0;
	*data = b + 1;
	return min_t(u8, b[0], len - 1);
}

static void kdat_conn_event(struct kdat_evd *evd, DAT_EVENT_NUMBER num,
			    struct kdat_ep *ep)
{
	DAT_EVENT ev = {};

	if (!evd)
		return;
	ev.event_number = num;
	ev.event_data.connect_event_data.ep_handle = ep;
	ev.event_data.connect_event_data.private_data_size =
		ep->private_data_size;
	ev.event_data.connect_event_data.private_data =
		ep->private_data_size ? ep->private_data : NULL;
	kdat_evd_post(evd, &ev, NULL, false);
}

/*
 * Post @num for connection generation @gen of @ep, unless a reset began
 * another or dat_ep_free began: true if posted.  A CM handler that read
 * `freed` before the free set it posts before the free goes on (the free
 * waits for the handler then, kdat_ib_ep_free), so the event never names
 * an unpublished EP.
 */
bool kdat_ep_connection_event(struct kdat_ep *ep, DAT_EVENT_NUMBER num,
			      u32 gen)
{
	unsigned long flags;
	bool post;

	spin_lock_irqsave(&ep->lock, flags);
	post = kdat_ep_gen_live(ep, gen);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (!post)
		return false;
	/* the send ring's state word before the event (ep.c) */
	kdat_ep_ring_sync(ep);
	kdat_conn_event(ep->connect_evd, num, ep);
	return true;
}

static void kdat_save_pdata(struct kdat_ep *ep, const void *p, u8 len)
{
	const u8 *data;

	len = kdat_pdata_unwrap(p, len, &data);
	if (len)
		memcpy(ep->private_data, data, len);
	ep->private_data_size = len;
}

/*
 * Move the EP to @state, unless it is Disconnected already: the state it
 * was in (Disconnected: nothing changed).  @gen, if set, gets the
 * connection generation the change belongs to, read in the same section:
 * a dat_ep_reset that the new state allows may start a new one at once.
 */
static DAT_EP_STATE kdat_ep_set_state(struct kdat_ep *ep, DAT_EP_STATE state,
				      u32 *gen)
{
	DAT_EP_STATE was;

	spin_lock_irq(&ep->lock);
	was = ep->state;
	if (was != DAT_EP_STATE_DISCONNECTED)
		ep->state = state;
	if (gen)
		*gen = ep->conn_gen;
	spin_unlock_irq(&ep->lock);
	if (was != DAT_EP_STATE_DISCONNECTED)
		kdat_ep_ring_sync(ep);
	return was;
}

/*
 * The connection is over.  Moving the QP to the error state flushes the
 * receive buffers this EP took from its SRQ (and its own ring) to its
 * recv CQ, as dat_srq_post_recv requires on entering Disconnected; the
 * connection event follows only once the CQ's poller delivered them to
 * the recv EVD, the order dat_ep_create_with_srq gives.  That wait runs in
 * a work item (kdat_ep_gone_later): this runs in the CM handler or under
 * op_lock, and the poller runs upcalls that may need either.
 */
static void __kdat_ep_gone(struct kdat_ep *ep, DAT_EVENT_NUMBER num,
			   bool in_handler)
{
	DAT_EP_STATE was;
	u32 gen;

	was = kdat_ep_set_state(ep, DAT_EP_STATE_DISCONNECTED, &gen);
	if (was == DAT_EP_STATE_DISCONNECTED)
		return;
	if (in_handler)
		kdat_fault_gone_park(ep, gen);
	/*
	 * Whatever ends a connection the consumer is disconnecting (a failed
	 * send of the request, the CM's answer to it) ends it as the
	 * consumer asked.
	 */
	if (was == DAT_EP_STATE_DISCONNECT_PENDING)
		num = DAT_CONNECTION_EVENT_DISCONNECTED;
	if (ep->qp && ep->recv_evd) {
		kdat_ep_qp_error(ep, ep->qp);
		kdat_ep_gone_later(ep, num, gen);
		return;
	}
	if (ep->qp)
		kdat_ep_qp_error(ep, ep->qp);
	/* no recv EVD: nothing the SRQ gave this QP is reported anywhere */
	if (kdat_ep_connection_event(ep, num, gen) && ep->qp)
		kdat_ep_srq_broken(ep, gen);
}

/* The end of a connection, from the EP's CM handler. */
static void kdat_ep_gone(struct kdat_ep *ep, DAT_EVENT_NUMBER num)
{
	__kdat_ep_gone(ep, num, true);
}

/* kdat_ep_connect_wanted, taking ep->lock */
static bool kdat_ep_connecting(struct kdat_ep *ep)
{
	bool yes;

	spin_lock_irq(&ep->lock);
	yes = kdat_ep_connect_wanted(ep);
	spin_unlock_irq(&ep->lock);
	return yes;
}

static int kdat_ep_cm_event(struct kdat_ep *ep, struct rdma_cm_id *id,
			    struct rdma_cm_event *e)
{
	DAT_EP_STATE was;
	struct rdma_conn_param cp = {};
	u8 wire[KDAT_REQ_PDATA_MAX + 1];
	bool passive, quit;
	u8 rej_len;
	u32 gen;
	int ret;

	spin_lock_irq(&ep->lock);
	passive = ep->state == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING ||
		  ep->state == DAT_EP_STATE_COMPLETION_PENDING;
	/*
	 * The consumer disconnected before the connection was set up: its
	 * rdma_disconnect moved the QP to error and found nothing to send a
	 * DREQ for, so whatever ends the attempt now ends what the consumer
	 * asked to end, and is reported as such.
	 */
	quit = ep->state == DAT_EP_STATE_DISCONNECT_PENDING;
	spin_unlock_irq(&ep->lock);

	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!kdat_ep_connecting(ep))
			break;
		ret = rdma_resolve_route(id, KDAT_CM_TIMEOUT_MS);
		if (ret)
			kdat_ep_gone(ep, DAT_CONNECTION_EVENT_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (!kdat_ep_connecting(ep))
			break;
		rdma_set_min_rnr_timer(id, kdat_min_rnr_timer());
		ret = kdat_ep_create_qp(ep, id);
		/* disconnected meanwhile: the QP was never the EP's */
		if (ret == -ECANCELED)
			break;
		/* -EIO: the EP kept a QP that took receives: flushed first */
		if (ret) {
			kdat_ep_gone(ep, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
			break;
		}
		/*
		 * Checked again so that mostly no request goes out at all.
		 * Under connect_lock up to the send: a disconnect after this
		 * look waits for the request to be out, so its rdma_disconnect
		 * finds the IB CM ID, the attempt fails at the CM
		 * (CONNECT_ERROR, reported as the disconnect's end), and the
		 * consumer hears of that end only after it.  Without the lock,
		 * rdma_disconnect could find no IB CM ID yet and the
		 * disconnect reported DISCONNECTED before the request went out.
		 */
		mutex_lock(&ep->connect_lock);
		if (!kdat_ep_connecting(ep)) {
			mutex_unlock(&ep->connect_lock);
			break;
		}
		if (kdat_fault_cm_park(ep, KDAT_FAULT_CM_REQUEST))
			kdat_fault_cm_resume();
		wire[0] = ep->private_data_size;
		memcpy(wire + 1, ep->private_data, ep->private_data_size);
		cp.private_data = wire;
		cp.private_data_len = ep->private_data_size + 1;
		cp.responder_resources = ep->attr.max_rdma_read_in;
		cp.initiator_depth = ep->attr.max_rdma_read_out;
		cp.retry_count = 7;
		cp.rnr_retry_count = 7;
		ret = rdma_connect_locked(id, &cp);
		mutex_unlock(&ep->connect_lock);
		if (ret)
			kdat_ep_gone(ep, DAT_CONNECTION_EVENT_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		spin_lock_irq(&ep->lock);
		was = ep->state;
		if (was != DAT_EP_STATE_DISCONNECTED &&
		    was != DAT_EP_STATE_DISCONNECT_PENDING)
			ep->state = DAT_EP_STATE_CONNECTED;
		gen = ep->conn_gen;
		spin_unlock_irq(&ep->lock);
		if (was == DAT_EP_STATE_DISCONNECTED ||
		    was == DAT_EP_STATE_DISCONNECT_PENDING) {
			/*
			 * The consumer disconnected while the connection was
			 * being set up (a passive EP before the RTU came):
			 * it is not told of it, the peer is (DREQ), and the
			 * EP's end comes with the CM's DISCONNECTED, or now
			 * if no DREQ can go out.
			 */
			if (rdma_disconnect(id))
				kdat_ep_gone(ep,
					     DAT_CONNECTION_EVENT_DISCONNECTED);
			break;
		}
		if (!passive)
			kdat_save_pdata(ep, e->param.conn.private_data,
					e->param.conn.private_data_len);
		else
			ep->private_data_size = 0;
		kdat_ep_connection_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED,
					 gen);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (quit) {
			ep->private_data_size = 0;
			kdat_ep_gone(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
			break;
		}
		if (passive) {
			kdat_ep_gone(ep, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
			break;
		}
		ep->private_data_size = 0;
		kdat_ep_gone(ep, rdma_consumer_reject_data(id, e, &rej_len) ?
			     DAT_CONNECTION_EVENT_PEER_REJECTED :
			     DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		ep->private_data_size = 0;
		kdat_ep_gone(ep, quit ? DAT_CONNECTION_EVENT_DISCONNECTED :
			     passive ?
			     DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR :
			     e->event == RDMA_CM_EVENT_CONNECT_ERROR ?
			     DAT_CONNECTION_EVENT_TIMED_OUT :
			     DAT_CONNECTION_EVENT_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* answer the peer's DREQ (DREP) so its side completes too */
		rdma_disconnect(id);
		ep->private_data_size = 0;
		kdat_ep_gone(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		ep->private_data_size = 0;
		kdat_ep_gone(ep, DAT_CONNECTION_EVENT_BROKEN);
		break;
	default:
		break;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Connection Requests                                                     */

static void kdat_cr_release(struct kdat_obj *obj)
{
	struct kdat_cr *cr = container_of(obj, struct kdat_cr, obj);

	if (cr->counted)
		atomic_dec(&cr->psp->pending);
	if (cr->ep)
		kdat_obj_put(&cr->ep->obj);
	kdat_obj_put(&cr->psp->obj);
}

/*
 * The DAT_INVALID_STATE subtype for an EP that is not free for a connect,
 * an accept or a reservation: the RSP states have their own.
 */
u32 kdat_ep_busy_subtype(DAT_EP_STATE state)
{
	switch (state) {
	case DAT_EP_STATE_RESERVED:
		return DAT_INVALID_STATE_EP_RESERVED;
	case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
		return DAT_INVALID_STATE_EP_TENTCONNPENDING;
	default:
		return DAT_INVALID_STATE_EP_NOTREADY;
	}
}

/*
 * An RSP takes its EP from Reserved to Tentative Connection Pending with
 * its first request, and is spent: it delivers no other (rdma_cm rejects
 * them), even if the consumer rejects this one.  False if the EP is not
 * reserved for @rsp (any more).
 */
static bool kdat_rsp_take_ep(struct kdat_psp *rsp)
{
	struct kdat_ep *ep = rsp->ep;
	bool mine;

	spin_lock_irq(&ep->lock);
	mine = ep->rsp == rsp && ep->state == DAT_EP_STATE_RESERVED;
	if (mine) {
		ep->rsp = NULL;
		ep->state = DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
	}
	spin_unlock_irq(&ep->lock);
	return mine;
}

/* The request could not be delivered after all: the RSP is not spent. */
static void kdat_rsp_give_back_ep(struct kdat_psp *rsp)
{
	struct kdat_ep *ep = rsp->ep;

	spin_lock_irq(&ep->lock);
	if (!ep->rsp &&
	    ep->state == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING) {
		ep->rsp = rsp;
		ep->state = DAT_EP_STATE_RESERVED;
	}
	spin_unlock_irq(&ep->lock);
}

/* A request to @cr's RSP ended unaccepted: the EP is free again. */
static void kdat_cr_release_ep(struct kdat_cr *cr)
{
	struct kdat_ep *ep = cr->ep;

	if (!ep)
		return;
	spin_lock_irq(&ep->lock);
	if (ep->state == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING)
		ep->state = DAT_EP_STATE_UNCONNECTED;
	spin_unlock_irq(&ep->lock);
}

static int kdat_psp_cm_event(struct kdat_psp *psp, struct rdma_cm_id *id,
			     struct rdma_cm_event *e)
{
	struct kdat_ia *ia = psp->obj.ia;
	DAT_EVENT ev = {};
	struct kdat_cr *cr;
	const u8 *data;
	u8 len;

	if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST || kdat_ia_dead(ia))
		return e->event == RDMA_CM_EVENT_CONNECT_REQUEST ? -ENODEV : 0;

	/* an RSP's EP is taken first, given back if the CR cannot be made */
	if (psp->ep && !kdat_rsp_take_ep(psp))
		return -ECONNREFUSED;	/* spent or freed: rdma_cm rejects */
	if (atomic_inc_return(&psp->pending) > max_pending_crs) {
		atomic_dec(&psp->pending);
		goto err_ep;		/* rdma_cm rejects and destroys @id */
	}
	cr = kzalloc(sizeof(*cr), GFP_KERNEL);
	if (!cr) {
		atomic_dec(&psp->pending);
		goto err_ep;
	}
	kdat_obj_init(&cr->obj, DAT_HANDLE_TYPE_CR, ia->obj.provider, ia,
		      kdat_cr_release);
	kdat_obj_hold(&psp->obj);
	cr->psp = psp;
	if (psp->ep) {
		kdat_obj_hold(&psp->ep->obj);
		cr->ep = psp->ep;
	}
	cr->cm_id = id;
	memcpy(&cr->remote, &id->route.addr.dst_addr, sizeof(cr->remote));
	cr->remote_port = ntohs(((struct sockaddr_in *)
				 &id->route.addr.dst_addr)->sin_port);
	len = kdat_pdata_unwrap(e->param.conn.private_data,
				e->param.conn.private_data_len, &data);
	if (len) {
		memcpy(cr->private_data, data, len);
		cr->private_data_size = len;
	}
	/* the CR is counted pending from here; its release uncounts it */
	cr->counted = true;
	if (kdat_obj_publish(&cr->obj)) {
		cr->cm_id = NULL;
		kdat_obj_put(&cr->obj);
		goto err_ep;
	}
	id->context = &cr->obj;
	if (kdat_ia_link(ia, &cr->obj)) {
		/* the IA is closing: rdma_cm rejects and destroys @id */
		cr->cm_id = NULL;
		kdat_obj_unpublish(&cr->obj);
		kdat_obj_put(&cr->obj);
		goto err_ep;
	}
	kdat_obj_commit(&cr->obj);

	ev.event_number = DAT_CONNECTION_REQUEST_EVENT;
	/* the PSP or the RSP (a union of handles) */
	ev.event_data.cr_arrival_event_data.sp_handle.psp_handle = psp;
	ev.event_data.cr_arrival_event_data.local_ia_address_ptr =
		(DAT_IA_ADDRESS_PTR)&ia->addr;
	ev.event_data.cr_arrival_event_data.conn_qual = psp->conn_qual;
	ev.event_data.cr_arrival_event_data.cr_handle = cr;
	kdat_evd_post(psp->evd, &ev, NULL, false);
	kdat_obj_put(&cr->obj);		/* the table keeps it */
	return 0;

err_ep:
	if (psp->ep)
		kdat_rsp_give_back_ep(psp);
	return -ENOMEM;
}

int kdat_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *e)
{
	struct kdat_obj *obj = id->context;
	enum kdat_fault_cm_at at;
	struct kdat_ep *ep;
	int ret;

	switch (obj->type) {
	case DAT_HANDLE_TYPE_PSP:
	case DAT_HANDLE_TYPE_RSP:
		return kdat_psp_cm_event(container_of(obj, struct kdat_psp,
						      obj), id, e);
	case DAT_HANDLE_TYPE_EP:
		ep = container_of(obj, struct kdat_ep, obj);
		/* an ID the EP let go (kdat_ep_detach_qp) is not its own */
		if (READ_ONCE(ep->cm_id) != id)
			return 0;
		at = KDAT_FAULT_CM_NONE;
		if (e->event == RDMA_CM_EVENT_ADDR_RESOLVED)
			at = KDAT_FAULT_CM_ADDR;
		else if (e->event == RDMA_CM_EVENT_ROUTE_RESOLVED)
			at = KDAT_FAULT_CM_ROUTE;
		if (at != KDAT_FAULT_CM_NONE && kdat_fault_cm_park(ep, at)) {
			ret = kdat_ep_cm_event(ep, id, e);
			kdat_fault_cm_resume();
			return ret;
		}
		return kdat_ep_cm_event(ep, id, e);
	case DAT_HANDLE_TYPE_CR:
		/* the peer gave up before accept or reject: nothing to do */
	default:
		return 0;
	}
}

DAT_RETURN kdat_ib_cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK mask,
			    DAT_CR_PARAM *p)
{
	struct kdat_cr *cr = container_of((struct kdat_obj *)h, struct kdat_cr,
					  obj);

	if (mask & ~DAT_CR_FIELD_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!p)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	memset(p, 0, sizeof(*p));
	p->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&cr->remote;
	p->remote_port_qual = cr->remote_port;
	p->private_data_size = cr->private_data_size;
	p->private_data = cr->private_data;
	p->local_ep_handle = cr->ep;	/* an RSP's; NULL for a PSP's */
	return DAT_SUCCESS;
}

/* Take the CR off the IA and out of the table; false if already gone. */
static bool kdat_cr_claim(struct kdat_cr *cr)
{
	struct kdat_ia *ia = cr->obj.ia;
	bool mine;

	mutex_lock(&ia->lock);
	mine = !list_empty(&cr->obj.ia_node);
	list_del_init(&cr->obj.ia_node);
	mutex_unlock(&ia->lock);
	if (mine)
		kdat_obj_unpublish(&cr->obj);
	return mine;
}

/* A shared use of the EP @h of @ia, or NULL if it is no live EP of it. */
static struct kdat_ep *kdat_ia_ep_get_use(struct kdat_ia *ia, DAT_EP_HANDLE h)
{
	struct kdat_obj *o = kdat_obj_get_use(h, DAT_HANDLE_TYPE_EP);

	if (o && o->ia != ia) {
		kdat_obj_put_use(o);
		o = NULL;
	}
	return o ? container_of(o, struct kdat_ep, obj) : NULL;
}

DAT_RETURN kdat_ib_cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE ep_handle,
			     DAT_COUNT pdata_size, const DAT_PVOID pdata)
{
	struct kdat_cr *cr = container_of((struct kdat_obj *)h, struct kdat_cr,
					  obj);
	struct kdat_ia *ia = cr->obj.ia;
	struct rdma_conn_param cp = {};
	u8 wire[KDAT_REP_PDATA_MAX + 1];
	DAT_EP_STATE want = DAT_EP_STATE_UNCONNECTED;
	struct rdma_cm_id *id;
	struct kdat_ep *ep;
	DAT_RETURN ret;
	u32 gen;
	int err;

	/* (cr, ep, private_data_size, private_data): ARG3, ARG4 */
	if (pdata_size < 0 || pdata_size > KDAT_REP_PDATA_MAX)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (pdata_size && !pdata)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	/*
	 * An RSP's request is accepted by its reserved EP, named or given
	 * as NULL; another EP is refused and the CR stays pending.
	 */
	if (cr->ep) {
		if (ep_handle && ep_handle != (DAT_EP_HANDLE)cr->ep)
			return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		ep_handle = cr->ep;
		want = DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
	}
	ep = kdat_ia_ep_get_use(ia, ep_handle);
	if (!ep)
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	kdat_ep_await_reset(ep);
	mutex_lock(&ep->op_lock);
	if (kdat_ia_dead(ia)) {
		ret = KDAT_ERR(DAT_INVALID_STATE, 0);
		goto out;
	}
	spin_lock_irq(&ep->lock);
	/* not while a reset drains the old QP (kdat_ib_ep_reset) */
	if (ep->state != want || ep->cm_id || ep->resetting) {
		ret = KDAT_ERR(DAT_INVALID_STATE,
			       ep->state == want ? DAT_INVALID_STATE_EP_NOTREADY :
			       kdat_ep_busy_subtype(ep->state));
		spin_unlock_irq(&ep->lock);
		goto out;
	}
	ep->state = DAT_EP_STATE_COMPLETION_PENDING;
	spin_unlock_irq(&ep->lock);
	if (!kdat_cr_claim(cr)) {
		/* the CR is gone (rejected, torn down): so is the tentative */
		kdat_ep_set_state(ep, DAT_EP_STATE_UNCONNECTED, NULL);
		ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
		goto out;
	}
	id = xchg(&cr->cm_id, NULL);
	memcpy(&ep->remote, &cr->remote, sizeof(ep->remote));
	ep->remote_qual = cr->remote_port;
	ep->local_qual = cr->psp->conn_qual;

	rdma_set_min_rnr_timer(id, kdat_min_rnr_timer());
	err = kdat_ep_create_qp(ep, id);
	if (err == -EIO) {
		/* the QP and ID are the EP's now: reset or free cleans up */
		rdma_lock_handler(id);
		id->context = &ep->obj;
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		rdma_unlock_handler(id);
		kdat_ep_set_state(ep, DAT_EP_STATE_DISCONNECTED, &gen);
		/* the receives it took, then the rest of the ring: flushed */
		if (ep->recv_evd)
			kdat_ep_gone_later(ep, KDAT_EP_GONE_NO_EVENT, gen);
		ret = KDAT_ERR(DAT_INTERNAL_ERROR, 0);
		goto out;
	}
	if (err) {
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		rdma_destroy_id(id);
		kdat_ep_set_state(ep, DAT_EP_STATE_UNCONNECTED, NULL);
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
		goto out;
	}
	wire[0] = pdata_size;
	if (pdata_size)
		memcpy(wire + 1, pdata, pdata_size);
	cp.private_data = wire;
	cp.private_data_len = pdata_size + 1;
	cp.responder_resources = ep->attr.max_rdma_read_in;
	cp.initiator_depth = ep->attr.max_rdma_read_out;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	/*
	 * Receives a user posted to the SRQ since it last drained may wait
	 * in its post ring (a kick moves only what is there when it runs);
	 * move them into the SRQ now, so the peer's first messages find
	 * them all.
	 */
	if (ep->srq)
		kdat_srq_drain(ep->srq);
	rdma_lock_handler(id);
	id->context = &ep->obj;
	err = rdma_accept(id, &cp);
	rdma_unlock_handler(id);
	if (err) {
		/* the QP and ID are the EP's now: reset or free cleans up */
		kdat_ep_set_state(ep, DAT_EP_STATE_DISCONNECTED, NULL);
		ret = KDAT_ERR(DAT_INTERNAL_ERROR, 0);
		goto out;
	}
	ret = DAT_SUCCESS;
out:
	mutex_unlock(&ep->op_lock);
	kdat_obj_put_use(&ep->obj);
	return ret;
}

DAT_RETURN kdat_ib_cr_reject(DAT_CR_HANDLE h)
{
	struct kdat_cr *cr = container_of((struct kdat_obj *)h, struct kdat_cr,
					  obj);
	struct rdma_cm_id *id;

	if (!kdat_cr_claim(cr))
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
	id = xchg(&cr->cm_id, NULL);
	if (id) {
		rdma_lock_handler(id);
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		rdma_unlock_handler(id);
		rdma_destroy_id(id);
	}
	kdat_cr_release_ep(cr);
	return DAT_SUCCESS;
}

void kdat_cr_hw_destroy(struct kdat_cr *cr)
{
	struct rdma_cm_id *id = xchg(&cr->cm_id, NULL);

	if (id)
		rdma_destroy_id(id);
}

/* ---------------------------------------------------------------------- */
/* Public Service Points                                                   */

static void kdat_psp_release(struct kdat_obj *obj)
{
	struct kdat_psp *psp = container_of(obj, struct kdat_psp, obj);

	if (psp->evd)
		kdat_obj_put(&psp->evd->obj);
	if (psp->ep)
		kdat_obj_put(&psp->ep->obj);
}

/*
 * Unlink, unpublish and stop listening; @invalid if another free got
 * there first.  The destroy claim is held (object.c).  Requests already
 * handed out as CRs stay valid.
 */
static DAT_RETURN kdat_sp_free(struct kdat_psp *psp, u32 invalid)
{
	struct kdat_ia *ia = psp->obj.ia;

	mutex_lock(&ia->lock);
	if (list_empty(&psp->obj.ia_node)) {
		mutex_unlock(&ia->lock);
		return KDAT_ERR(DAT_INVALID_HANDLE, invalid);
	}
	list_del_init(&psp->obj.ia_node);
	mutex_unlock(&ia->lock);
	kdat_obj_unpublish(&psp->obj);
	/* waits for a request handler running on it */
	kdat_psp_hw_destroy(psp);
	mutex_lock(&ia->lock);
	atomic_dec(&psp->evd->users);
	mutex_unlock(&ia->lock);
	return DAT_SUCCESS;
}

/*
 * The one listen path of PSPs and RSPs: an object of @type listening on
 * @qual, reporting to @evd_handle, published and linked to @ia.  @ep (an
 * RSP's, pinned by the caller) moves to the new object's reference.
 * Returns it with the creation reference held.
 */
static DAT_RETURN kdat_sp_create(struct kdat_ia *ia, DAT_HANDLE_TYPE type,
				 DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd_handle,
				 struct kdat_ep *ep, DAT_PSP_FLAGS flags,
				 struct kdat_psp **out)
{
	struct sockaddr_in sin;
	struct kdat_psp *psp;
	struct kdat_obj *o;
	struct kdat_evd *evd;
	DAT_RETURN ret;
	int err;

	o = kdat_obj_get(evd_handle, DAT_HANDLE_TYPE_EVD);
	if (!o || o->ia != ia ||
	    !(container_of(o, struct kdat_evd, obj)->flags & DAT_EVD_CR_FLAG)) {
		kdat_obj_put(o);
		ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
		goto err_ep;
	}
	evd = container_of(o, struct kdat_evd, obj);
	if (kdat_ia_dead(ia)) {
		ret = KDAT_ERR(DAT_INVALID_STATE, 0);
		goto err_evd;
	}
	if (!kdat_ia_add_user(ia, &evd->obj, &evd->users)) {
		ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
		goto err_evd;
	}
	psp = kzalloc(sizeof(*psp), GFP_KERNEL_ACCOUNT);
	if (!psp) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_user;
	}
	kdat_obj_init(&psp->obj, type, ia->obj.provider, ia, kdat_psp_release);
	psp->evd = evd;			/* the EVD reference moves here */
	psp->ep = ep;			/* and the EP's */
	psp->conn_qual = qual;
	psp->flags = flags;
	atomic_set(&psp->pending, 0);
	/* the opener's namespace: a user IA cannot listen elsewhere */
	psp->cm_id = rdma_create_id(ia->net, kdat_cm_handler, &psp->obj,
				    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(psp->cm_id)) {
		psp->cm_id = NULL;
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_obj;
	}
	memcpy(&sin, &ia->addr, sizeof(sin));
	sin.sin_port = htons((u16)qual);
	err = rdma_bind_addr(psp->cm_id, (struct sockaddr *)&sin);
	if (!err)
		err = rdma_listen(psp->cm_id, 128);
	if (err) {
		ret = err == -EADDRINUSE ?
		      KDAT_ERR(DAT_CONN_QUAL_IN_USE, 0) :
		      KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_obj;
	}
	if (kdat_obj_publish(&psp->obj)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_obj;
	}
	err = kdat_ia_link(ia, &psp->obj);
	if (err) {
		kdat_obj_unpublish(&psp->obj);
		ret = kdat_ia_link_error(err);
		goto err_obj;
	}
	*out = psp;
	return DAT_SUCCESS;

err_obj:
	kdat_psp_hw_destroy(psp);
	atomic_dec(&evd->users);
	kdat_obj_put(&psp->obj);	/* drops the EVD and EP references */
	return ret;
err_user:
	atomic_dec(&evd->users);
err_evd:
	kdat_obj_put(&evd->obj);
err_ep:
	if (ep)
		kdat_obj_put(&ep->obj);
	return ret;
}

DAT_RETURN kdat_ib_psp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual,
			      DAT_EVD_HANDLE evd_handle, DAT_PSP_FLAGS flags,
			      DAT_PSP_HANDLE *psp_handle)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);
	struct kdat_psp *psp;
	DAT_RETURN ret;

	if (qual == 0 || qual > 65535)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (flags == DAT_PSP_PROVIDER_FLAG)
		return KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
	if (flags != DAT_PSP_CONSUMER_FLAG)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (!psp_handle)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	ret = kdat_sp_create(ia, DAT_HANDLE_TYPE_PSP, qual, evd_handle, NULL,
			     flags, &psp);
	if (ret != DAT_SUCCESS)
		return ret;
	*psp_handle = psp;
	kdat_obj_put(&psp->obj);
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK mask,
			     DAT_PSP_PARAM *p)
{
	struct kdat_psp *psp = container_of((struct kdat_obj *)h,
					    struct kdat_psp, obj);

	if (mask & ~DAT_PSP_FIELD_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!p)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	p->ia_handle = psp->obj.ia;
	p->conn_qual = psp->conn_qual;
	p->evd_handle = psp->evd;
	p->psp_flags = psp->flags;
	return DAT_SUCCESS;
}

void kdat_psp_hw_destroy(struct kdat_psp *psp)
{
	struct rdma_cm_id *id = xchg(&psp->cm_id, NULL);

	if (id)
		rdma_destroy_id(id);
}

DAT_RETURN kdat_ib_psp_free(DAT_PSP_HANDLE h)
{
	return kdat_sp_free(container_of((struct kdat_obj *)h, struct kdat_psp,
					 obj), DAT_INVALID_HANDLE_PSP);
}

/* ---------------------------------------------------------------------- */
/* Reserved Service Points                                                 */

/*
 * dat_rsp_create: listen on @qual for @ep alone.  The EP must be
 * Unconnected and goes to Reserved; the first request moves it to
 * Tentative Connection Pending and spends the RSP (kdat_rsp_take_ep).
 * The RSP keeps its qualifier bound until it is freed.
 */
DAT_RETURN kdat_ib_rsp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual,
			      DAT_EP_HANDLE ep_handle,
			      DAT_EVD_HANDLE evd_handle,
			      DAT_RSP_HANDLE *rsp_handle)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);
	struct kdat_psp *rsp;
	struct kdat_ep *ep;
	DAT_EP_STATE state;
	bool reserved;
	DAT_RETURN ret;

	/* (ia, conn_qual, ep, evd, rsp_handle) */
	if (qual == 0 || qual > 65535)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!rsp_handle)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	/* a use: a free of the EP cannot run until the EP is reserved */
	ep = kdat_ia_ep_get_use(ia, ep_handle);
	if (!ep)
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	spin_lock_irq(&ep->lock);
	state = ep->state;
	spin_unlock_irq(&ep->lock);
	if (state != DAT_EP_STATE_UNCONNECTED) {
		kdat_obj_put_use(&ep->obj);
		return KDAT_ERR(DAT_INVALID_STATE, kdat_ep_busy_subtype(state));
	}
	kdat_obj_hold(&ep->obj);		/* the RSP's reference */
	ret = kdat_sp_create(ia, DAT_HANDLE_TYPE_RSP, qual, evd_handle, ep, 0,
			     &rsp);
	if (ret != DAT_SUCCESS)
		goto out;
	/*
	 * Reserve the EP only now: until then a request finds it
	 * unreserved and is refused.  A connect that came first wins.
	 */
	kdat_ep_await_reset(ep);
	mutex_lock(&ep->op_lock);
	spin_lock_irq(&ep->lock);
	state = ep->state;
	reserved = state == DAT_EP_STATE_UNCONNECTED && !ep->cm_id &&
		   !ep->resetting;
	if (reserved) {
		ep->state = DAT_EP_STATE_RESERVED;
		ep->rsp = rsp;
	}
	spin_unlock_irq(&ep->lock);
	mutex_unlock(&ep->op_lock);
	if (!reserved) {
		kdat_sp_free(rsp, DAT_INVALID_HANDLE_RSP);
		kdat_obj_put(&rsp->obj);
		ret = KDAT_ERR(DAT_INVALID_STATE, kdat_ep_busy_subtype(state));
		goto out;
	}
	*rsp_handle = rsp;
	kdat_obj_put(&rsp->obj);
out:
	kdat_obj_put_use(&ep->obj);
	return ret;
}

DAT_RETURN kdat_ib_rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK mask,
			     DAT_RSP_PARAM *p)
{
	struct kdat_psp *rsp = container_of((struct kdat_obj *)h,
					    struct kdat_psp, obj);

	if (mask & ~DAT_RSP_FIELD_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!p)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	p->ia_handle = rsp->obj.ia;
	p->conn_qual = rsp->conn_qual;
	p->evd_handle = rsp->evd;
	p->ep_handle = rsp->ep;
	return DAT_SUCCESS;
}

/*
 * The destroy claim is held.  An EP still Reserved for this RSP becomes
 * Unconnected; one whose request was delivered keeps its state (the CR
 * decides it).
 */
DAT_RETURN kdat_ib_rsp_free(DAT_RSP_HANDLE h)
{
	struct kdat_psp *rsp = container_of((struct kdat_obj *)h,
					    struct kdat_psp, obj);
	struct kdat_ep *ep = rsp->ep;
	DAT_RETURN ret;

	ret = kdat_sp_free(rsp, DAT_INVALID_HANDLE_RSP);
	if (ret != DAT_SUCCESS)
		return ret;
	spin_lock_irq(&ep->lock);
	if (ep->rsp == rsp) {
		ep->rsp = NULL;
		if (ep->state == DAT_EP_STATE_RESERVED)
			ep->state = DAT_EP_STATE_UNCONNECTED;
	}
	spin_unlock_irq(&ep->lock);
	return DAT_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Active side                                                             */

static DAT_RETURN kdat_ep_connect_locked(struct kdat_ep *ep,
					 DAT_IA_ADDRESS_PTR addr,
					 DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
					 DAT_COUNT pdata_size,
					 const DAT_PVOID pdata);

DAT_RETURN kdat_ib_ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr,
			      DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
			      DAT_COUNT pdata_size, const DAT_PVOID pdata,
			      DAT_QOS qos, DAT_CONNECT_FLAGS flags)
{
	struct kdat_ep *ep = container_of((struct kdat_obj *)h, struct kdat_ep,
					  obj);
	DAT_RETURN ret;

	if (!addr || addr->sa_family != AF_INET)
		return KDAT_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED);
	if (qual == 0 || qual > 65535)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	/* (ep, addr, qual, timeout, private_data_size, private_data, ...) */
	if (pdata_size < 0 || pdata_size > KDAT_REQ_PDATA_MAX)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	if (pdata_size && !pdata)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
	if (qos != DAT_QOS_BEST_EFFORT)
		return KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
	if (flags & ~DAT_CONNECT_MULTIPATH_FLAG)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
	kdat_ep_await_reset(ep);
	mutex_lock(&ep->op_lock);
	ret = kdat_ep_connect_locked(ep, addr, qual, timeout, pdata_size,
				     pdata);
	mutex_unlock(&ep->op_lock);
	return ret;
}

static DAT_RETURN kdat_ep_connect_locked(struct kdat_ep *ep,
					 DAT_IA_ADDRESS_PTR addr,
					 DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
					 DAT_COUNT pdata_size,
					 const DAT_PVOID pdata)
{
	struct kdat_ia *ia = ep->obj.ia;
	struct sockaddr_in dst, src;
	struct rdma_cm_id *id;
	int ms, err;

	if (kdat_ia_dead(ia))
		return KDAT_ERR(DAT_INVALID_STATE, 0);

	spin_lock_irq(&ep->lock);
	/*
	 * Busy while a reset drains the old QP: only an upcall of the very
	 * poller that drain waits for, or a reset begun since
	 * kdat_ep_await_reset, finds it so.
	 */
	if (ep->state != DAT_EP_STATE_UNCONNECTED || ep->cm_id ||
	    ep->resetting) {
		u32 sub = kdat_ep_busy_subtype(ep->state);

		spin_unlock_irq(&ep->lock);
		return KDAT_ERR(DAT_INVALID_STATE, sub);
	}
	ep->state = DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
	spin_unlock_irq(&ep->lock);
	/* as on accept: the SRQ holds what was posted before connecting */
	if (ep->srq)
		kdat_srq_drain(ep->srq);

	memcpy(&dst, addr, sizeof(dst));
	dst.sin_port = htons((u16)qual);
	memcpy(&ep->remote, &dst, sizeof(dst));
	ep->remote_qual = qual;
	memcpy(ep->private_data, pdata, pdata_size);
	ep->private_data_size = pdata_size;
	memcpy(&src, &ia->addr, sizeof(src));
	src.sin_port = 0;

	id = rdma_create_id(ia->net, kdat_cm_handler, &ep->obj, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		kdat_ep_set_state(ep, DAT_EP_STATE_UNCONNECTED, NULL);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	spin_lock_irq(&ep->lock);
	ep->cm_id = id;
	spin_unlock_irq(&ep->lock);
	ms = timeout == DAT_TIMEOUT_INFINITE ? KDAT_CM_TIMEOUT_MS :
	     clamp_t(int, timeout / 1000, 100, KDAT_CM_TIMEOUT_MS);
	err = rdma_resolve_addr(id, (struct sockaddr *)&src,
				(struct sockaddr *)&dst, ms);
	if (err) {
		spin_lock_irq(&ep->lock);
		ep->cm_id = NULL;
		ep->state = DAT_EP_STATE_UNCONNECTED;
		spin_unlock_irq(&ep->lock);
		rdma_destroy_id(id);
		return KDAT_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
	}
	return DAT_SUCCESS;
}

static DAT_RETURN kdat_ep_disconnect_locked(struct kdat_ep *ep);

DAT_RETURN kdat_ib_ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags)
{
	struct kdat_ep *ep = container_of((struct kdat_obj *)h, struct kdat_ep,
					  obj);
	DAT_RETURN ret;

	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	mutex_lock(&ep->op_lock);
	ret = kdat_ep_disconnect_locked(ep);
	mutex_unlock(&ep->op_lock);
	return ret;
}

static DAT_RETURN kdat_ep_disconnect_locked(struct kdat_ep *ep)
{
	struct rdma_cm_id *id;
	DAT_EP_STATE s;
	bool gone;

	spin_lock_irq(&ep->lock);
	s = ep->state;
	id = ep->cm_id;
	if (s == DAT_EP_STATE_CONNECTED ||
	    s == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING ||
	    s == DAT_EP_STATE_COMPLETION_PENDING)
		ep->state = DAT_EP_STATE_DISCONNECT_PENDING;
	spin_unlock_irq(&ep->lock);
	kdat_ep_ring_sync(ep);

	switch (s) {
	case DAT_EP_STATE_DISCONNECTED:
	case DAT_EP_STATE_DISCONNECT_PENDING:
		return DAT_SUCCESS;
	case DAT_EP_STATE_CONNECTED:
	case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
	case DAT_EP_STATE_COMPLETION_PENDING:
		/*
		 * The CM reports DISCONNECTED; the EP gets its event then.
		 * After a request the CM handler is sending (connect_lock).
		 */
		mutex_lock(&ep->connect_lock);
		gone = !id || rdma_disconnect(id);
		mutex_unlock(&ep->connect_lock);
		if (gone)
			__kdat_ep_gone(ep, DAT_CONNECTION_EVENT_DISCONNECTED,
				       false);
		return DAT_SUCCESS;
	case DAT_EP_STATE_RESERVED:
	case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
		return KDAT_ERR(DAT_INVALID_STATE, kdat_ep_busy_subtype(s));
	default:
		return KDAT_ERR(DAT_INVALID_STATE,
				DAT_INVALID_STATE_EP_UNCONNECTED);
	}
}
