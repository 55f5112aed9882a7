// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Endpoints: create (with or without an SRQ), query, modify, reset, free,
 * and the data transfer operations.  The underlying RC QP is created when
 * the EP connects or accepts (cm.c), as dat_ep_create_with_srq suggests,
 * so an EP is always ready to be connected.  Receives posted to a non-SRQ
 * EP before it has a QP wait in its ring and are posted when the QP comes.
 *
 * Every work request carries a kdat_wr tracker from a ring preallocated at
 * create, so posting never allocates.  Send and non-SRQ receive queues
 * complete in order, so the rings are plain FIFOs.  All WRs are signalled;
 * DAT_COMPLETION_SUPPRESS_FLAG only hides the event of a successful one.
 *
 * Every QP lives in its EP's PZ (ib_pd), SRQ or not: the EP's PZ governs
 * what the EP may send and what incoming RDMA may reach over its
 * connection, as dat_ep_create_with_srq says; the SRQ's PZ governs only
 * the receive buffers.  A device whose responder checks SRQ receive lkeys
 * against the QP's PD instead of the SRQ's (rxe) cannot have the two
 * differ: kdat_srq_ep_pz_may_differ() says so, and the IA reports it as
 * srq_ep_pz_difference_supported.
 *
 * DAT_HW_DEFAULT in an EP attribute asks for the provider's default
 * (kdat_ep_resolve_defaults); dat_ep_query reports the value chosen.
 */
#include <linux/list.h>
#include <linux/slab.h>

#include "kdat_core.h"

#define KDAT_SEND_FLAGS	(DAT_COMPLETION_SUPPRESS_FLAG | \
			 DAT_COMPLETION_SOLICITED_WAIT_FLAG | \
			 DAT_COMPLETION_BARRIER_FENCE_FLAG)

/* The completion-flag classes that force every stream on an EVD to agree. */
#define KDAT_EXCLUSIVE_FLAGS	(DAT_COMPLETION_UNSIGNALLED_FLAG | \
				 DAT_COMPLETION_SOLICITED_WAIT_FLAG | \
				 DAT_COMPLETION_EVD_THRESHOLD_FLAG)

static void kdat_ep_gone_work(struct work_struct *w);
static void kdat_ep_rq_marker_done(struct ib_cq *cq, struct ib_wc *wc);
static void kdat_ep_reset_work(struct work_struct *w);
static void kdat_ep_free_work(struct work_struct *w);

static struct kdat_ep *to_ep(DAT_EP_HANDLE h)
{
	return container_of((struct kdat_obj *)h, struct kdat_ep, obj);
}

/* ---------------------------------------------------------------------- */
/* Completions                                                             */

/*
 * The operation of a receive completion: a receive an RDMA Write with
 * immediate data consumed, or a plain one; and the immediate data, if the
 * sender gave one.  A failed completion's opcode is undefined: a receive.
 */
KDAT_DATA_PATH(kdat_dto_recv_op, 128)
void kdat_dto_recv_op(const struct ib_wc *wc, DAT_DTO_COMPLETION_EVENT_DATA *d)
{
	d->kdat_operation = KDAT_DTO_OP_RECV;
	if (wc->status != IB_WC_SUCCESS)
		return;
	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM)
		d->kdat_operation = KDAT_DTO_OP_RECV_RDMA_IMMED;
	if (wc->wc_flags & IB_WC_WITH_IMM) {
		d->kdat_flags |= KDAT_DTO_F_IMMED;
		d->kdat_immed_data = be32_to_cpu(wc->ex.imm_data);
	}
}

/* @recv: a receive completion, else one of the send queue (w->op). */
/* @may_upcall: the consumer's upcall may run here (kdat_evd_post) */
KDAT_DATA_PATH(__kdat_ep_dto_event, 512)
static void __kdat_ep_dto_event(struct kdat_ep *ep, struct kdat_evd *evd,
				struct kdat_wr *w, struct ib_wc *wc, u32 len,
				bool recv, bool may_upcall)
{
	DAT_EVENT ev = {};
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

	if (!evd || (w->suppress && wc->status == IB_WC_SUCCESS))
		return;
	ev.event_number = DAT_DTO_COMPLETION_EVENT;
	d->ep_handle = ep;
	d->user_cookie = w->cookie;
	d->status = kdat_dto_status(wc->status);
	d->transfered_length = wc->status == IB_WC_SUCCESS ? len : 0;
	if (recv)
		kdat_dto_recv_op(wc, d);
	else
		d->kdat_operation = w->op;
	kdat_evd_post(evd, &ev, NULL, may_upcall);
}

static void kdat_ep_dto_event(struct kdat_ep *ep, struct kdat_evd *evd,
			      struct kdat_wr *w, struct ib_wc *wc, u32 len,
			      bool recv)
{
	__kdat_ep_dto_event(ep, evd, w, wc, len, recv, true);
}

static void kdat_ring_pop(struct kdat_ep *ep, struct kdat_wr_ring *r)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	r->tail++;
	spin_unlock_irqrestore(&ep->lock, flags);
}

/* Called with ep->lock held: one more send-ring slot is free. */
static void kdat_ep_ring_retire(struct kdat_ep *ep)
{
	lockdep_assert_held(&ep->lock);
	ep->sring_retired++;
	/* pairs with the acquire in SendProducer::room() (user/ring.hpp) */
	smp_store_release(&kdat_uring_hdr(ep->sring)->retired,
			  ep->sring_retired);
}

/*
 * A send queue completion.  With a send ring, the slot is retired with the
 * pop (the user may post again once it sees the event), the completion
 * counts as being reported until its event is posted (a refused ring
 * entry waits for that: kdat_ep_ring_drain), and the ring is drained.
 */
KDAT_DATA_PATH(kdat_send_done, 512)
static void kdat_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kdat_wr *w = container_of(wc->wr_cqe, struct kdat_wr, cqe);
	struct kdat_ep *ep = w->ep;
	struct kdat_wr copy = *w;
	unsigned long flags;

	if (!ep->sring) {
		kdat_ring_pop(ep, &ep->sq);
		kdat_ep_dto_event(ep, ep->request_evd, &copy, wc, copy.length,
				  false);
		return;
	}
	spin_lock_irqsave(&ep->lock, flags);
	ep->sq.tail++;
	ep->sq_reporting++;
	kdat_ep_ring_retire(ep);
	spin_unlock_irqrestore(&ep->lock, flags);
	kdat_ep_dto_event(ep, ep->request_evd, &copy, wc, copy.length, false);
	spin_lock_irqsave(&ep->lock, flags);
	ep->sq_reporting--;
	spin_unlock_irqrestore(&ep->lock, flags);
	kdat_ep_ring_drain(ep);
}

static void kdat_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kdat_wr *w = container_of(wc->wr_cqe, struct kdat_wr, cqe);
	struct kdat_ep *ep = w->ep;
	struct kdat_wr copy = *w;

	kdat_ring_pop(ep, &ep->rq);
	kdat_ep_dto_event(ep, ep->recv_evd, &copy, wc, wc->byte_len, true);
}

/* The drain marker of ib_drain_sq has its own cqe; nothing to do here. */

static int kdat_ring_init(struct kdat_ep *ep, struct kdat_wr_ring *r,
			  u32 size, u32 iov, bool recv)
{
	u32 i;

	r->size = size;
	r->head = r->tail = r->posted = 0;
	r->iov = iov;
	if (!size)
		return 0;
	r->wr = kvcalloc(size, sizeof(*r->wr), GFP_KERNEL_ACCOUNT);
	if (!r->wr)
		return -ENOMEM;
	if (recv) {
		r->sge = kvcalloc((size_t)size * iov, sizeof(*r->sge),
				  GFP_KERNEL_ACCOUNT);
		if (!r->sge)
			return -ENOMEM;
	}
	for (i = 0; i < size; i++) {
		r->wr[i].ep = ep;
		r->wr[i].cqe.done = recv ? kdat_recv_done : kdat_send_done;
	}
	return 0;
}

static void kdat_ring_free(struct kdat_wr_ring *r)
{
	kvfree(r->wr);
	kvfree(r->sge);
	r->wr = NULL;
	r->sge = NULL;
}

/* ---------------------------------------------------------------------- */
/* Create                                                                  */

static struct kdat_evd *kdat_get_evd(struct kdat_ia *ia, DAT_EVD_HANDLE h,
				     DAT_EVD_FLAGS need, bool *bad)
{
	struct kdat_obj *o;

	*bad = false;
	if (h == DAT_HANDLE_NULL)
		return NULL;
	o = kdat_obj_get(h, DAT_HANDLE_TYPE_EVD);
	/*
	 * Connection events are software and name the EP by a handle its
	 * owner can read: a connection EVD may be of another IA of the same
	 * owner (two kernel IAs, or two IAs of one /dev/kdat file), as
	 * OFED's dapltest -T L -w 2 has it.  DTO EVDs need the EP's device.
	 */
	if (!o || (o->ia != ia && (need != DAT_EVD_CONNECTION_FLAG ||
				   o->ia->ufile != ia->ufile)) ||
	    !(container_of(o, struct kdat_evd, obj)->flags & need)) {
		kdat_obj_put(o);
		*bad = true;
		return NULL;
	}
	return container_of(o, struct kdat_evd, obj);
}

/*
 * dat_ep_create_with_srq's completion-flag rules, for one DTO stream with
 * flags @f joining @evd: streams sharing an EVD must agree when either
 * side uses UNSIGNALLED, SOLICITED_WAIT or EVD_THRESHOLD, and an EVD fed
 * by a SOLICITED_WAIT receive stream carries no other event stream type.
 * Called under ia->lock; counts the stream on success.
 */
static bool kdat_evd_join_stream(struct kdat_evd *evd, DAT_COMPLETION_FLAGS f,
				 bool recv)
{
	DAT_COMPLETION_FLAGS cls = f & KDAT_EXCLUSIVE_FLAGS;

	if (!evd)
		return true;
	if (recv && cls == DAT_COMPLETION_SOLICITED_WAIT_FLAG &&
	    evd->flags != DAT_EVD_DTO_FLAG)
		return false;
	if (evd->dto_streams && (cls || evd->dto_class) &&
	    cls != evd->dto_class)
		return false;
	evd->dto_class = cls;
	evd->dto_streams++;
	return true;
}

static void kdat_evd_leave_stream(struct kdat_evd *evd)
{
	if (evd && !--evd->dto_streams)
		evd->dto_class = 0;
}

static void kdat_ep_sring_work(struct work_struct *w);

static void kdat_ep_release(struct kdat_obj *obj)
{
	struct kdat_ep *ep = container_of(obj, struct kdat_ep, obj);

	kdat_ring_free(&ep->sq);
	kdat_ring_free(&ep->rq);
	if (ep->sring)
		obj->ia->uops->ring_free(ep->sring);
	if (ep->recv_evd)
		kdat_obj_put(&ep->recv_evd->obj);
	if (ep->request_evd)
		kdat_obj_put(&ep->request_evd->obj);
	if (ep->connect_evd)
		kdat_obj_put(&ep->connect_evd->obj);
	if (ep->srq)
		kdat_obj_put(&ep->srq->obj);
	if (ep->pz)
		kdat_obj_put(&ep->pz->obj);
}

static void kdat_ep_default_attr(DAT_EP_ATTR *a)
{
	memset(a, 0, sizeof(*a));
	a->service_type = DAT_SERVICE_TYPE_RC;
	a->max_message_size = KDAT_EP_DEFAULT_MSG_SIZE;
	a->max_rdma_size = KDAT_EP_DEFAULT_MSG_SIZE;
	a->qos = DAT_QOS_BEST_EFFORT;
	a->recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	a->request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	a->max_recv_dtos = KDAT_EP_DEFAULT_DTOS;
	a->max_request_dtos = KDAT_EP_DEFAULT_DTOS;
	a->max_recv_iov = 1;
	a->max_request_iov = 1;
	a->max_rdma_read_in = 0;	/* the page recommends 0 */
	a->max_rdma_read_out = 0;
	a->srq_soft_hw = DAT_HW_DEFAULT;
	a->max_rdma_read_iov = 1;
	a->max_rdma_write_iov = 1;
}

/* The IA's limits on the segments of one RDMA Read or Write. */
int kdat_rdma_read_iov_max(const struct ib_device *dev)
{
	return min_t(int, dev->attrs.max_sge_rd, KDAT_EP_MAX_IOV);
}

int kdat_rdma_write_iov_max(const struct ib_device *dev)
{
	return min_t(int, dev->attrs.max_send_sge, KDAT_EP_MAX_IOV);
}

/*
 * May an SRQ EP's PZ differ from its SRQ's?  Only where the device checks
 * SRQ receive lkeys against the SRQ's PD, as the IBA says: rxe checks them
 * against the QP's (rxe_resp.c copy_data(qp->pd, ...)), so on rxe every
 * receive of an EP whose PZ differs would fail with a protection error.
 */
bool kdat_srq_ep_pz_may_differ(const struct ib_device *dev)
{
	return dev->ops.driver_id != RDMA_DRIVER_RXE;
}

/*
 * Replace every DAT_HW_DEFAULT in @a by the provider's default, so the EP
 * gets, and dat_ep_query reports, the value actually chosen.  For an SRQ
 * EP the default max_recv_dtos is the SRQ's.  A max_rdma_read_iov or
 * max_rdma_write_iov of 0 (the value of a zeroed structure, which allows
 * no RDMA at all) is taken as the default too: max_request_iov, within
 * the IA's limit.
 */
static void kdat_ep_resolve_defaults(struct kdat_ia *ia,
				     const struct kdat_srq *srq,
				     DAT_EP_ATTR *a)
{
	DAT_EP_ATTR d;

	kdat_ep_default_attr(&d);
	if (a->max_message_size == (DAT_VLEN)DAT_HW_DEFAULT)
		a->max_message_size = d.max_message_size;
	if (a->max_rdma_size == (DAT_VLEN)DAT_HW_DEFAULT)
		a->max_rdma_size = d.max_rdma_size;
	if (a->max_recv_dtos == DAT_HW_DEFAULT)
		a->max_recv_dtos = srq ? srq->max_recv_dtos : d.max_recv_dtos;
	if (a->max_request_dtos == DAT_HW_DEFAULT)
		a->max_request_dtos = d.max_request_dtos;
	if (a->max_recv_iov == DAT_HW_DEFAULT)
		a->max_recv_iov = d.max_recv_iov;
	if (a->max_request_iov == DAT_HW_DEFAULT)
		a->max_request_iov = d.max_request_iov;
	if (a->max_rdma_read_in == DAT_HW_DEFAULT)
		a->max_rdma_read_in = d.max_rdma_read_in;
	if (a->max_rdma_read_out == DAT_HW_DEFAULT)
		a->max_rdma_read_out = d.max_rdma_read_out;
	if (a->max_rdma_read_iov == DAT_HW_DEFAULT || !a->max_rdma_read_iov)
		a->max_rdma_read_iov =
			clamp(a->max_request_iov, 1,
			      kdat_rdma_read_iov_max(ia->ibdev));
	if (a->max_rdma_write_iov == DAT_HW_DEFAULT || !a->max_rdma_write_iov)
		a->max_rdma_write_iov =
			clamp(a->max_request_iov, 1,
			      kdat_rdma_write_iov_max(ia->ibdev));
}

/*
 * Check resolved attributes against the IA's capabilities.  @arg is the
 * subtype naming the attribute argument of the calling function
 * (DAT_INVALID_ARG6 of dat_ep_create, ARG7 of dat_ep_create_with_srq).
 */
static DAT_RETURN kdat_ep_check_attr(struct kdat_ia *ia, const DAT_EP_ATTR *a,
				     bool with_srq, DAT_RETURN_SUBTYPE arg)
{
	const struct ib_device_attr *d = &ia->ibdev->attrs;
	int max_iov = min3(d->max_send_sge, d->max_recv_sge, KDAT_EP_MAX_IOV);
	int max_dto = KDAT_MAX_DTO_PER_EP(d);

	if (a->service_type != DAT_SERVICE_TYPE_RC ||
	    !a->max_message_size || a->max_message_size > (1ULL << 31) ||
	    a->max_rdma_size > (1ULL << 31) ||
	    a->max_request_dtos <= 0 || a->max_request_dtos > max_dto ||
	    a->max_request_iov <= 0 || a->max_request_iov > max_iov ||
	    a->max_rdma_read_in < 0 ||
	    a->max_rdma_read_in > d->max_qp_rd_atom ||
	    a->max_rdma_read_out < 0 ||
	    a->max_rdma_read_out > d->max_qp_init_rd_atom ||
	    a->max_rdma_read_iov <= 0 ||
	    a->max_rdma_read_iov > kdat_rdma_read_iov_max(ia->ibdev) ||
	    a->max_rdma_write_iov <= 0 ||
	    a->max_rdma_write_iov > kdat_rdma_write_iov_max(ia->ibdev) ||
	    (a->srq_soft_hw < 0 && a->srq_soft_hw != DAT_HW_DEFAULT))
		return KDAT_ERR(DAT_INVALID_PARAMETER, arg);
	if (a->request_completion_flags & ~(KDAT_EXCLUSIVE_FLAGS |
					    DAT_COMPLETION_SUPPRESS_FLAG))
		return KDAT_ERR(DAT_INVALID_PARAMETER, arg);
	if (a->recv_completion_flags & ~KDAT_EXCLUSIVE_FLAGS ||
	    hweight32(a->recv_completion_flags) > 1)
		return KDAT_ERR(DAT_INVALID_PARAMETER, arg);
	/* an SRQ EP's receive queue is the SRQ: max_recv_iov is ignored */
	if (!with_srq &&
	    (a->max_recv_dtos <= 0 || a->max_recv_dtos > max_dto ||
	     a->max_recv_iov <= 0 || a->max_recv_iov > max_iov))
		return KDAT_ERR(DAT_INVALID_PARAMETER, arg);
	if (with_srq && a->max_recv_dtos < 0)
		return KDAT_ERR(DAT_INVALID_PARAMETER, arg);
	/*
	 * A soft high watermark (an event when the EP holds that many SRQ
	 * buffers) is a model this provider does not offer, as
	 * dat_ep_set_watermark says; 0 and DAT_HW_DEFAULT mean none.
	 */
	if (with_srq && a->srq_soft_hw > 0)
		return KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
	return DAT_SUCCESS;
}

static DAT_RETURN kdat_ep_create_common(struct kdat_ia *ia,
					DAT_PZ_HANDLE pz_handle,
					DAT_EVD_HANDLE recv_h,
					DAT_EVD_HANDLE req_h,
					DAT_EVD_HANDLE conn_h,
					DAT_SRQ_HANDLE srq_h,
					const DAT_EP_ATTR *attr,
					DAT_EP_HANDLE *ep_handle)
{
	struct kdat_evd *recv_evd = NULL, *req_evd = NULL, *conn_evd = NULL;
	struct kdat_srq *srq = NULL;
	struct kdat_pz *pz = NULL;
	struct kdat_obj *o;
	/* ep_attributes and ep_handle: ARG6/ARG7, ARG7/ARG8 with an SRQ */
	DAT_RETURN_SUBTYPE attr_arg = srq_h ? DAT_INVALID_ARG7 :
					      DAT_INVALID_ARG6;
	struct kdat_ep *ep;
	DAT_EP_ATTR a;
	DAT_RETURN ret;
	bool bad, joined_recv = false, conn_foreign = false;
	int err;

	o = kdat_obj_get(pz_handle, DAT_HANDLE_TYPE_PZ);
	if (!o || o->ia != ia) {
		kdat_obj_put(o);
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	}
	pz = container_of(o, struct kdat_pz, obj);
	ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
	recv_evd = kdat_get_evd(ia, recv_h, DAT_EVD_DTO_FLAG, &bad);
	if (bad)
		goto err_refs;
	ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
	req_evd = kdat_get_evd(ia, req_h, DAT_EVD_DTO_FLAG, &bad);
	if (bad)
		goto err_refs;
	ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
	conn_evd = kdat_get_evd(ia, conn_h, DAT_EVD_CONNECTION_FLAG, &bad);
	if (bad)
		goto err_refs;
	if (srq_h) {
		o = kdat_obj_get(srq_h, DAT_HANDLE_TYPE_SRQ);
		if (!o || o->ia != ia) {
			kdat_obj_put(o);
			ret = KDAT_ERR(DAT_INVALID_HANDLE,
				       DAT_INVALID_HANDLE_SRQ);
			goto err_refs;
		}
		srq = container_of(o, struct kdat_srq, obj);
		/* srq_ep_pz_difference_supported */
		if (srq->pz != pz && !kdat_srq_ep_pz_may_differ(ia->ibdev)) {
			ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
			goto err_refs;
		}
		if (!attr) {
			ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
			goto err_refs;
		}
	}
	if (!ep_handle) {
		ret = KDAT_ERR(DAT_INVALID_PARAMETER,
			       srq ? DAT_INVALID_ARG8 : DAT_INVALID_ARG7);
		goto err_refs;
	}
	if (attr)
		a = *attr;
	else
		kdat_ep_default_attr(&a);
	kdat_ep_resolve_defaults(ia, srq, &a);
	ret = kdat_ep_check_attr(ia, &a, srq, attr_arg);
	if (ret != DAT_SUCCESS)
		goto err_refs;
	if (srq)
		a.max_recv_iov = srq->max_recv_iov;
	if (kdat_ia_dead(ia)) {
		ret = KDAT_ERR(DAT_INVALID_STATE, 0);
		goto err_refs;
	}
	/* counted under its own IA's lock, never nested in ours */
	if (conn_evd && conn_evd->obj.ia != ia) {
		ret = kdat_evd_add_foreign_user(conn_evd);
		if (ret != DAT_SUCCESS)
			goto err_refs;
		conn_foreign = true;
	}

	ep = kzalloc(sizeof(*ep), GFP_KERNEL_ACCOUNT);
	if (!ep) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		goto err_refs;
	}
	kdat_obj_init(&ep->obj, DAT_HANDLE_TYPE_EP, ia->obj.provider, ia,
		      kdat_ep_release);
	mutex_init(&ep->op_lock);
	mutex_init(&ep->connect_lock);
	INIT_WORK(&ep->gone_work, kdat_ep_gone_work);
	ep->rq_marker.done = kdat_ep_rq_marker_done;
	init_completion(&ep->rq_marker_done);
	INIT_WORK(&ep->reset_work, kdat_ep_reset_work);
	INIT_WORK(&ep->free_work, kdat_ep_free_work);
	spin_lock_init(&ep->lock);
	spin_lock_init(&ep->sring_lock);
	INIT_DELAYED_WORK(&ep->sring_work, kdat_ep_sring_work);
	ep->state = DAT_EP_STATE_UNCONNECTED;
	ep->attr = a;
	if (kdat_ring_init(ep, &ep->sq, a.max_request_dtos,
			   a.max_request_iov, false) ||
	    kdat_ring_init(ep, &ep->rq, srq ? 0 : a.max_recv_dtos,
			   a.max_recv_iov, true)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		kdat_obj_put(&ep->obj);
		goto err_refs;
	}

	if (kdat_obj_publish(&ep->obj)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
		kdat_obj_put(&ep->obj);
		goto err_refs;
	}

	/* count the EP as a user of everything it names, all or nothing */
	mutex_lock(&ia->lock);
	err = kdat_ia_link_locked(ia, &ep->obj);
	ret = kdat_ia_link_error(err);
	if (err)
		goto err_locked;
	ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	if (list_empty(&pz->obj.ia_node))
		goto err_locked;
	ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
	if (srq && list_empty(&srq->obj.ia_node))
		goto err_locked;
	ret = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
	if ((recv_evd && list_empty(&recv_evd->obj.ia_node)) ||
	    (req_evd && list_empty(&req_evd->obj.ia_node)) ||
	    (conn_evd && !conn_foreign &&
	     list_empty(&conn_evd->obj.ia_node)))
		goto err_locked;
	ret = KDAT_ERR(DAT_INVALID_PARAMETER, attr_arg);
	if (!kdat_evd_join_stream(recv_evd, a.recv_completion_flags, true))
		goto err_locked;
	joined_recv = true;
	if (!kdat_evd_join_stream(req_evd, a.request_completion_flags &
				  KDAT_EXCLUSIVE_FLAGS, false))
		goto err_locked;
	/* the recv CQ may outlive the EP with completions naming the SRQ */
	ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	if (srq && recv_evd && !xa_load(&recv_evd->srqs, kdat_obj_key(&srq->obj))) {
		if (xa_err(xa_store(&recv_evd->srqs, kdat_obj_key(&srq->obj),
				    &srq->obj, GFP_KERNEL))) {
			kdat_evd_leave_stream(req_evd);
			goto err_locked;
		}
		/* its receives may all complete there at once */
		if (kdat_evd_cq_charge(recv_evd, srq->cq_charge)) {
			xa_erase(&recv_evd->srqs, kdat_obj_key(&srq->obj));
			kdat_evd_leave_stream(req_evd);
			goto err_locked;
		}
		kdat_obj_hold(&srq->obj);
	}
	atomic_inc(&pz->users);
	if (srq)
		atomic_inc(&srq->eps);
	if (recv_evd)
		atomic_inc(&recv_evd->users);
	if (req_evd)
		atomic_inc(&req_evd->users);
	if (conn_evd && !conn_foreign)
		atomic_inc(&conn_evd->users);
	ep->pz = pz;
	ep->srq = srq;
	ep->recv_evd = recv_evd;
	ep->request_evd = req_evd;
	ep->connect_evd = conn_evd;
	mutex_unlock(&ia->lock);

	/* an EP can take buffers now: move the ring's, ask for kicks */
	if (srq)
		kdat_srq_drain(srq);
	*ep_handle = ep;
	kdat_obj_put(&ep->obj);
	return DAT_SUCCESS;

err_locked:
	if (joined_recv)
		kdat_evd_leave_stream(recv_evd);
	list_del_init(&ep->obj.ia_node);
	mutex_unlock(&ia->lock);
	kdat_obj_unpublish(&ep->obj);
	kdat_obj_put(&ep->obj);
err_refs:
	if (conn_foreign)
		kdat_evd_drop_foreign_user(conn_evd);
	if (srq)
		kdat_obj_put(&srq->obj);
	if (conn_evd)
		kdat_obj_put(&conn_evd->obj);
	if (req_evd)
		kdat_obj_put(&req_evd->obj);
	if (recv_evd)
		kdat_obj_put(&recv_evd->obj);
	kdat_obj_put(&pz->obj);
	return ret;
}

DAT_RETURN kdat_ib_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			     DAT_EVD_HANDLE recv_evd,
			     DAT_EVD_HANDLE request_evd,
			     DAT_EVD_HANDLE connect_evd,
			     const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
{
	return kdat_ep_create_common(container_of((struct kdat_obj *)ia,
						  struct kdat_ia, obj),
				     pz, recv_evd, request_evd, connect_evd,
				     NULL, attr, ep);
}

DAT_RETURN kdat_ib_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
				      DAT_EVD_HANDLE recv_evd,
				      DAT_EVD_HANDLE request_evd,
				      DAT_EVD_HANDLE connect_evd,
				      DAT_SRQ_HANDLE srq,
				      const DAT_EP_ATTR *attr,
				      DAT_EP_HANDLE *ep)
{
	if (srq == DAT_HANDLE_NULL)
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
	return kdat_ep_create_common(container_of((struct kdat_obj *)ia,
						  struct kdat_ia, obj),
				     pz, recv_evd, request_evd, connect_evd,
				     srq, attr, ep);
}

/* ---------------------------------------------------------------------- */
/* The QP, created when the EP connects or accepts                         */

static void kdat_qp_event(struct ib_event *e, void *ctx)
{
	struct kdat_ep *ep = ctx;

	unsigned long flags;
	bool again;

	switch (e->event) {
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
		/*
		 * The QP exists only within one connection generation.  On
		 * an IA that asked for the end-of-connection EP_BROKEN, an
		 * SRQ EP gets one per connection: this one, or that one,
		 * whichever is first.  Other EPs report every QP error.  Not
		 * a QP the EP let go (a reset, free or device removal took
		 * it; the QP lives on until it is destroyed): the EP may be
		 * freed, or connected again on another QP.
		 */
		spin_lock_irqsave(&ep->lock, flags);
		if (ep->qp != e->element.qp || ep->freed) {
			spin_unlock_irqrestore(&ep->lock, flags);
			break;
		}
		again = ep->broken && ep->broken_gen == ep->conn_gen;
		ep->broken = true;
		ep->broken_gen = ep->conn_gen;
		spin_unlock_irqrestore(&ep->lock, flags);
		if (again && ep->srq && READ_ONCE(ep->obj.ia->flags) &
					KDAT_IA_OPEN_SRQ_EP_BROKEN)
			break;
		/* may run in atomic context: upcall through a work item */
		kdat_ia_async_error(ep->obj.ia, DAT_ASYNC_ERROR_EP_BROKEN, ep,
				    DAT_EP_TRANSFER_TO_ERROR, false);
		break;
	default:
		break;
	}
}

/*
 * Post receives that waited for the QP (@new_qp: a QP just made, which
 * takes the whole ring).  Called with ep->lock held.
 */
static int kdat_ep_post_pending(struct kdat_ep *ep, bool new_qp)
{
	struct kdat_wr_ring *r = &ep->rq;
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {};
	u32 n = 0;
	int ret;

	while (r->posted != r->head) {
		u32 i = r->posted % r->size, k;

		for (k = 0; k < r->wr[i].nsge && !ep->obj.ia->ufile; k++)
			r->sge[i * r->iov + k].lkey = ep->qp->pd->local_dma_lkey;
		wr.wr_cqe = &r->wr[i].cqe;
		wr.sg_list = &r->sge[i * r->iov];
		wr.num_sge = r->wr[i].nsge;
		if (new_qp && kdat_fault_new_qp_post(n++))
			return -ENOMEM;
		ret = ib_post_recv(ep->qp, &wr, &bad);
		if (ret)
			return ret;
		r->posted++;
	}
	return 0;
}

/*
 * The completions the QP may put in its EVDs' CQs at once: every work
 * request of its queues and their markers (KDAT_SQ_MARKERS and
 * KDAT_RQ_MARKERS: ib_drain_qp's, and gone_work's in the receive queue;
 * kdat_evd_cq_charge).
 * An SRQ's receives are charged to a recv EVD when it pins the SRQ, and
 * again for what dat_srq_resize adds (kdat_srq_cq_grow).
 */
static int kdat_ep_cq_charge(struct kdat_ep *ep)
{
	int nsq = ep->request_evd ? ep->sq.size + KDAT_SQ_MARKERS : 0;
	int nrq = ep->recv_evd && !ep->srq ?
		  ep->rq.size + KDAT_RQ_MARKERS : 0;
	int ret;

	if (nsq) {
		ret = kdat_evd_cq_charge(ep->request_evd, nsq);
		if (ret)
			return ret;
	}
	if (nrq) {
		ret = kdat_evd_cq_charge(ep->recv_evd, nrq);
		if (ret) {
			if (nsq)
				kdat_evd_cq_uncharge(ep->request_evd, nsq);
			return ret;
		}
	}
	ep->cq_charge_s = nsq;
	ep->cq_charge_r = nrq;
	return 0;
}

static void kdat_ep_cq_uncharge(struct kdat_ep *ep)
{
	if (ep->cq_charge_s)
		kdat_evd_cq_uncharge(ep->request_evd, ep->cq_charge_s);
	if (ep->cq_charge_r)
		kdat_evd_cq_uncharge(ep->recv_evd, ep->cq_charge_r);
	ep->cq_charge_s = 0;
	ep->cq_charge_r = 0;
}

/*
 * For the test consumer: how many completions the CQ of the EP's receives
 * holds (0 without a QP), to check that it grows with the SRQ.
 */
int kdat_test_ep_recv_cq_size(DAT_EP_HANDLE h)
{
	struct kdat_ep *ep;
	struct kdat_obj *o;
	int n = -EINVAL, idx;

	/* as a call, like kdat_test_evd_cq_size; the QP goes under op_lock */
	idx = kdat_call_begin();
	o = kdat_obj_get_use(h, DAT_HANDLE_TYPE_EP);
	if (!o)
		goto out;
	ep = container_of(o, struct kdat_ep, obj);
	n = 0;
	if (!kdat_ia_dead(o->ia)) {
		mutex_lock(&ep->op_lock);
		n = ep->qp ? ep->qp->recv_cq->cqe : 0;
		mutex_unlock(&ep->op_lock);
	}
	kdat_obj_put_use(o);
out:
	kdat_call_end(idx);
	return n;
}
EXPORT_SYMBOL_GPL(kdat_test_ep_recv_cq_size);

/*
 * For the test consumer: what a device does when the EP's QP fails or
 * reports (@event, an enum ib_event_type): the QP's event handler, called
 * as drivers call it; rxe raises no QP error of its own.  -ENOENT with no
 * QP.  op_lock keeps the QP from being taken (so destroyed); the QP is
 * set under ep->lock (also by the CM handler), read there; the handler
 * takes ep->lock itself.
 */
int kdat_test_qp_event(DAT_EP_HANDLE h, int event)
{
	struct ib_event e = { .event = event };
	struct kdat_ep *ep;
	struct kdat_obj *o;
	struct ib_qp *qp;
	int ret = -EINVAL, idx;

	idx = kdat_call_begin();
	o = kdat_obj_get_use(h, DAT_HANDLE_TYPE_EP);
	if (!o)
		goto out;
	ep = container_of(o, struct kdat_ep, obj);
	ret = -ENOENT;
	mutex_lock(&ep->op_lock);
	spin_lock_irq(&ep->lock);
	qp = ep->qp;
	spin_unlock_irq(&ep->lock);
	if (qp && !kdat_ia_dead(o->ia)) {
		e.device = qp->device;
		e.element.qp = qp;
		qp->event_handler(&e, qp->qp_context);
		ret = 0;
	}
	mutex_unlock(&ep->op_lock);
	kdat_obj_put_use(o);
out:
	kdat_call_end(idx);
	return ret;
}
EXPORT_SYMBOL_GPL(kdat_test_qp_event);

/*
 * For the test consumer: is the EP's gone_work waiting for its recv CQ's
 * poller (or about to)?  As a call: the handle is looked up, not trusted.
 */
bool kdat_test_ep_gone_waiting(DAT_EP_HANDLE h)
{
	struct kdat_obj *o;
	bool waiting = false;
	int idx;

	idx = kdat_call_begin();
	o = kdat_obj_get_use(h, DAT_HANDLE_TYPE_EP);
	if (o) {
		waiting = READ_ONCE(container_of(o, struct kdat_ep,
						 obj)->gone_waiting);
		kdat_obj_put_use(o);
	}
	kdat_call_end(idx);
	return waiting;
}
EXPORT_SYMBOL_GPL(kdat_test_ep_gone_waiting);

/* Tries at a QP address not still taken by a destroyed QP of the SRQ. */
#define KDAT_QP_ADDR_TRIES	8

/*
 * rdma_create_qp for an SRQ EP, entered in the SRQ's table of its QPs
 * (completions find their EP there, by QP address).  An address marked
 * KDAT_QP_GONE is a destroyed QP's whose completions may still be in a CQ
 * (kdat_srq_qp_gone): a new QP there would be named by them.  Waiting for
 * the poll is not possible here (an accept holds op_lock, a connect the
 * ID's handler lock, and the poll runs upcalls that may take them), so
 * the QP goes, a placeholder QP takes its memory (the allocator's next
 * object, as a rule) and the EP's QP is made again, elsewhere.
 */
static int kdat_ep_create_srq_qp(struct kdat_ep *ep, struct rdma_cm_id *id,
				 struct ib_qp_init_attr *qa)
{
	struct ib_qp_init_attr ha = {
		.send_cq = qa->send_cq, .recv_cq = qa->recv_cq,
		.srq = qa->srq, .qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 1, .max_send_sge = 1 },
	};
	struct ib_qp *held[KDAT_QP_ADDR_TRIES];
	struct ib_qp_init_attr want = *qa;
	int n = 0, ret;

	for (;;) {
		*qa = want;
		ret = rdma_create_qp(id, ep->pz->pd, qa);
		if (ret)
			break;
		ret = xa_insert(&ep->srq->qps, kdat_qp_key(id->qp), ep,
				GFP_KERNEL);
		if (!ret)
			break;
		rdma_destroy_qp(id);
		if (ret != -EBUSY || n == ARRAY_SIZE(held))
			break;
		held[n] = ib_create_qp(ep->pz->pd, &ha);
		if (IS_ERR(held[n])) {
			ret = PTR_ERR(held[n]);
			break;
		}
		n++;
	}
	/* never connected: they took no buffer */
	while (n--)
		ib_destroy_qp(held[n]);
	return ret;
}

int kdat_ep_create_qp(struct kdat_ep *ep, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr qa = {};
	struct ib_cq *scq, *rcq, *cq;
	bool own_id;
	int ret;

	scq = ep->request_evd ? ep->request_evd->cq : NULL;
	rcq = ep->recv_evd ? ep->recv_evd->cq : NULL;
	if (ep->srq && !rcq) {
		/* no recv EVD: the SRQ's CQ, which grows with the SRQ */
		rcq = kdat_srq_recv_cq(ep->srq);
		if (IS_ERR(rcq))
			return PTR_ERR(rcq);
	}
	/*
	 * A stream nobody listens to still needs a CQ: the EP's own.  It
	 * stays until the QP goes (reset, free), also when this fails:
	 * freeing a CQ waits for its poller, not done under op_lock.
	 */
	if ((!scq || !rcq) && !ep->own_cq) {
		cq = ib_alloc_cq(ep->obj.ia->ibdev, ep,
				 ep->sq.size + KDAT_SQ_MARKERS +
				 ep->rq.size + KDAT_RQ_MARKERS, 0,
				 IB_POLL_WORKQUEUE);
		if (IS_ERR(cq))
			return PTR_ERR(cq);
		ep->own_cq = cq;
	}
	if (!scq || !rcq) {
		scq = scq ?: ep->own_cq;
		rcq = rcq ?: ep->own_cq;
	}
	if (ep->srq && !ep->srq->srq)
		return -ENODEV;
	/* a flush of both queues, with the drain's markers, fits */
	ret = kdat_ep_cq_charge(ep);
	if (ret)
		return ret;
	qa.event_handler = kdat_qp_event;
	qa.qp_context = ep;
	qa.send_cq = scq;
	qa.recv_cq = rcq;
	qa.srq = ep->srq ? ep->srq->srq : NULL;
	/*
	 * More of each than the EP takes: the marker ib_drain_qp posts into
	 * a queue that may be full (sends stalled behind RNR), and gone_work's
	 * behind flushed receives.  Without room the drain would fail and
	 * leave completions naming the EP's slots in the EVDs' CQs after the
	 * EP is freed (kdat_ep_finish_qp).
	 */
	qa.cap.max_send_wr = ep->sq.size + KDAT_SQ_MARKERS;
	qa.cap.max_recv_wr = ep->srq ? 0 : ep->rq.size + KDAT_RQ_MARKERS;
	qa.cap.max_send_sge = ep->attr.max_request_iov;
	qa.cap.max_recv_sge = ep->srq ? 0 : ep->attr.max_recv_iov;
	qa.sq_sig_type = IB_SIGNAL_ALL_WR;
	qa.qp_type = IB_QPT_RC;
	/* the EP's PZ, also with an SRQ: it governs incoming RDMA */
	ret = ep->srq ? kdat_ep_create_srq_qp(ep, id, &qa) :
			rdma_create_qp(id, ep->pz->pd, &qa);
	if (ret)
		goto err_uncharge;
	spin_lock_irq(&ep->lock);
	/* an active EP's ID is its own already (dat_ep_connect) */
	own_id = ep->cm_id == id;
	/*
	 * A connect the consumer disconnected (or freed) while the QP was
	 * made: the disconnect reported the end without this QP, so it is
	 * not published and takes nothing.
	 */
	if (own_id && !kdat_ep_connect_wanted(ep)) {
		spin_unlock_irq(&ep->lock);
		if (ep->srq)
			xa_erase(&ep->srq->qps, kdat_qp_key(id->qp));
		ret = -ECANCELED;
		goto err_destroy_qp;
	}
	ep->qp = id->qp;
	ep->qp_error = false;
	ep->cm_id = id;
	ret = ep->srq ? 0 : kdat_ep_post_pending(ep, true);
	spin_unlock_irq(&ep->lock);
	if (!ret)
		return 0;
	/*
	 * The QP took part of the receives waiting in the ring.  They
	 * complete, flushed, through the recv CQ's poller, whose upcalls may
	 * call this EP (op_lock, held by an accept) or free it (the ID's
	 * handler lock, held by a connect's handler), so nothing here waits
	 * for them: the EP keeps the QP, in the error state, and the ID, and
	 * its end (reset, free, device removal) drains them like any other.
	 */
	kdat_ep_qp_error(ep, id->qp);
	return -EIO;
err_destroy_qp:
	rdma_destroy_qp(id);
err_uncharge:
	kdat_ep_cq_uncharge(ep);
	return ret;
}

/*
 * The end of a connection.  dat_ep_create_with_srq's order: every buffer
 * the EP took from its SRQ (or its own ring), completed or flushed, is on
 * its recv EVD before the connection event that ends the connection.  The
 * QP is moved to the error state where the connection ends (cm.c); the
 * event then waits here, in a work item, for the recv CQ's poller to run
 * past that point.  Never in the CM handler or under op_lock: the poller
 * runs consumer upcalls, which may free, disconnect or query this very EP.
 */
static struct workqueue_struct *kdat_ep_wq;

static void kdat_ep_flush_pending(struct kdat_ep *ep, const u32 *gen,
				  bool may_upcall);

/*
 * Move @ep's QP (@qp, the EP's) to the error state: the device flushes
 * what its queues hold.  Remembered under the lock for gone_work's marker,
 * which only a QP in the error state completes without a message.
 */
void kdat_ep_qp_error(struct kdat_ep *ep, struct ib_qp *qp)
{
	struct ib_qp_attr qa = { .qp_state = IB_QPS_ERR };

	if (ib_modify_qp(qp, &qa, IB_QP_STATE))
		return;
	spin_lock_irq(&ep->lock);
	if (ep->qp == qp)
		ep->qp_error = true;
	spin_unlock_irq(&ep->lock);
}

static void kdat_ep_rq_marker_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kdat_ep *ep = container_of(wc->wr_cqe, struct kdat_ep,
					  rq_marker);

	complete(&ep->rq_marker_done);
}

/*
 * Wait until the device flushed the receives of @ep's QP, which is in the
 * error state: it does so in its own time (rxe: a tasklet, maybe on the
 * other CPU), so a CQ found empty says nothing yet.  A marker posted
 * behind them completes after the last (a receive queue completes in
 * order, flushed ones too), through the recv CQ's poller.  Not for a QP
 * freed, reset or connected again meanwhile (its teardown drains it), nor
 * for an SRQ EP: its receives are the SRQ's, and the one a device had
 * begun to fill ends with LAST_WQE_REACHED, which rxe never raises.
 */
static void kdat_ep_rq_flushed(struct kdat_ep *ep, u32 gen)
{
	struct ib_recv_wr wr = { .wr_cqe = &ep->rq_marker };
	int ret = -ENOENT;

	spin_lock_irq(&ep->lock);
	if (ep->qp_error && !ep->srq && kdat_ep_gen_live(ep, gen)) {
		reinit_completion(&ep->rq_marker_done);
		ret = ib_post_recv(ep->qp, &wr, NULL);
	}
	spin_unlock_irq(&ep->lock);
	if (!ret)
		wait_for_completion(&ep->rq_marker_done);
}

/*
 * Deliver every receive completion the device put in @ep's recv CQ so far.
 * Runs in gone_work with no lock held, inside a call section (device
 * removal, which frees the CQ, waits for it) and using the recv EVD like a
 * call does (its free waits or refuses until then), so the CQ stays.  An
 * EVD a destroy has claimed, or of a closing IA, is not waited for.
 */
static void kdat_ep_flush_recv(struct kdat_ep *ep, u32 gen)
{
	struct kdat_evd *evd = ep->recv_evd;
	struct kdat_ia *ia = ep->obj.ia;
	struct ib_cq *cq;
	int idx;

	might_sleep();
	if (!evd)
		return;
	idx = kdat_call_begin();
	if (kdat_ia_dead(ia) || !kdat_obj_use(&evd->obj))
		goto out;
	cq = READ_ONCE(evd->cq);
	if (cq) {
		kdat_ep_rq_flushed(ep, gen);
		kdat_cq_flush(cq);
	}
	/*
	 * Then what the QP never took (a new QP's post failed): Disconnected
	 * flushes every receive; one posted for a connection after a reset
	 * is not this connection's.
	 */
	kdat_ep_flush_pending(ep, &gen, false);
	kdat_obj_unuse(&evd->obj);
out:
	kdat_call_end(idx);
}

static void kdat_ep_gone_work(struct work_struct *w)
{
	struct kdat_ep *ep = container_of(w, struct kdat_ep, gone_work);
	DAT_EVENT_NUMBER num;
	u32 gen;

	for (;;) {
		spin_lock_irq(&ep->lock);
		if (!ep->gone_pending || ep->freed) {
			ep->gone_pending = false;
			spin_unlock_irq(&ep->lock);
			break;
		}
		ep->gone_pending = false;
		num = ep->gone_event;
		gen = ep->gone_gen;
		ep->gone_waiting = true;
		spin_unlock_irq(&ep->lock);

		kdat_ep_flush_recv(ep, gen);

		spin_lock_irq(&ep->lock);
		ep->gone_waiting = false;
		spin_unlock_irq(&ep->lock);
		wake_up_var(&ep->gone_waiting);

		/* not for an EP freed, reset or connected again meanwhile */
		mutex_lock(&ep->op_lock);
		if (num != KDAT_EP_GONE_NO_EVENT &&
		    kdat_ep_connection_event(ep, num, gen))
			kdat_ep_srq_broken(ep, gen);
		mutex_unlock(&ep->op_lock);
	}
	kdat_obj_put(&ep->obj);
}

/*
 * The end of connection generation @gen of an EP whose QP was attached to
 * its SRQ, reported after the connection event that ends it, when every
 * receive the QP took from the SRQ is on the recv EVD: on an IA opened
 * with KDAT_IA_OPEN_SRQ_EP_BROKEN, DAT_ASYNC_ERROR_EP_BROKEN, the event a
 * DAT 2.0 provider makes of IB's LAST_WQE_REACHED (which rxe never
 * raises).  Once per generation: not again after a QP error raised it.
 * Called where the connection event is posted (under op_lock, or in the
 * CM handler); the upcall, if any, runs from a work item.
 */
void kdat_ep_srq_broken(struct kdat_ep *ep, u32 gen)
{
	unsigned long flags;
	bool raise;

	if (!ep->srq ||
	    !(READ_ONCE(ep->obj.ia->flags) & KDAT_IA_OPEN_SRQ_EP_BROKEN))
		return;
	spin_lock_irqsave(&ep->lock, flags);
	/* a reset or free since @gen ended: that connection is nobody's now */
	if (!kdat_ep_gen_live(ep, gen)) {
		spin_unlock_irqrestore(&ep->lock, flags);
		return;
	}
	raise = !(ep->broken && ep->broken_gen == gen);
	ep->broken = true;
	ep->broken_gen = gen;
	spin_unlock_irqrestore(&ep->lock, flags);
	if (raise)
		kdat_ia_async_error(ep->obj.ia, DAT_ASYNC_ERROR_EP_BROKEN, ep,
				    DAT_EP_TRANSFER_TO_ERROR, false);
}

/*
 * Report @num once the recv CQ delivered what the EP's QP (already in the
 * error state) put there.  Any context that may take ep->lock; the caller
 * changed the state to Disconnected and read @gen, the generation of the
 * connection that ended, with that change: a reset since then (allowed
 * from Disconnected, not serialised with the CM handler) began another,
 * whose receives, events and EP_BROKEN this must not touch.
 */
void kdat_ep_gone_later(struct kdat_ep *ep, DAT_EVENT_NUMBER num, u32 gen)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	ep->gone_event = num;
	ep->gone_gen = gen;
	ep->gone_pending = true;
	spin_unlock_irqrestore(&ep->lock, flags);
	/* one reference per queued run; a pending run takes this event */
	kdat_obj_queue_work(&ep->obj, kdat_ep_wq, &ep->gone_work);
}

static bool kdat_ep_gone_idle(struct kdat_ep *ep)
{
	bool idle;

	spin_lock_irq(&ep->lock);
	idle = !ep->gone_waiting;
	spin_unlock_irq(&ep->lock);
	return idle;
}

/*
 * dat_ep_free, after setting ep->freed: a gone_work waiting for the recv
 * CQ's poller ends before the EP lets its EVDs go.  Not when the free runs
 * inside that very poller (an upcall freeing its EP): the work waits for
 * us there, and its use of the recv EVD keeps the CQ.  Nor from an upcall
 * of another poller while that one waits itself (kdat_poller_wait_begin:
 * it may wait for ours, through a drain); the work then goes on alone,
 * holding its EP and that use, as it does after a free from the very
 * poller.  Recorded as a wait on the recv CQ's poller meanwhile.
 */
static void kdat_ep_gone_quiesce(struct kdat_ep *ep)
{
	struct ib_cq *cq = ep->recv_evd ? READ_ONCE(ep->recv_evd->cq) : NULL;
	struct kdat_poller_wait pw;

	if (cq && current_work() == &cq->work)
		return;
	if (!kdat_poller_wait_begin(&pw, &cq, 1))
		return;
	wait_var_event(&ep->gone_waiting, kdat_ep_gone_idle(ep));
	kdat_poller_wait_end(&pw);
}

int kdat_ep_init(void)
{
	kdat_ep_wq = alloc_workqueue("kdat_ep", WQ_UNBOUND, 0);
	return kdat_ep_wq ? 0 : -ENOMEM;
}

/* Module exit: every connection event still on its way runs first. */
void kdat_ep_exit(void)
{
	destroy_workqueue(kdat_ep_wq);
}

/*
 * Flush every receive that never reached a QP, so each completes once;
 * with @gen, only while the EP is still in that connection generation.
 * Not @may_upcall from gone_work: an upcall there that frees the EP would
 * wait for gone_work itself (kdat_ep_gone_quiesce); the EVD's upcall work
 * runs it instead.
 */
static void kdat_ep_flush_pending(struct kdat_ep *ep, const u32 *gen,
				  bool may_upcall)
{
	struct kdat_wr_ring *r = &ep->rq;
	struct ib_wc wc = { .status = IB_WC_WR_FLUSH_ERR };
	struct kdat_wr w;

	spin_lock_irq(&ep->lock);
	while (r->posted != r->head && (!gen || ep->conn_gen == *gen)) {
		w = r->wr[r->posted % r->size];
		r->posted++;
		r->tail++;
		spin_unlock_irq(&ep->lock);
		__kdat_ep_dto_event(ep, ep->recv_evd, &w, &wc, 0, true,
				    may_upcall);
		spin_lock_irq(&ep->lock);
	}
	spin_unlock_irq(&ep->lock);
}

/*
 * Tear down the QP and the CM ID: kdat_ep_detach_qp takes them from the EP
 * with ep->op_lock held, kdat_ep_finish_qp drains and destroys them
 * without it (free, reset, device removal; each counted in hw_teardown).
 * The ID's handler lock is taken while the EP lets the ID go, so no CM
 * event still running creates a QP or touches the EP afterwards (the
 * handler ignores an ID the EP does not own).  Outstanding work requests
 * complete (flushed) through the normal handlers first, also when the
 * device is going (ib_core calls
 * remove_one while the device still works, and a driver whose hardware died
 * flushes in software, as every ULP's removal relies on): a completion left
 * in a CQ that outlives the QP (the EVDs') would name the EP's work request
 * slots after the EP was freed.  So every posted buffer completes exactly
 * once.  An SRQ QP drains only its send queue: its receives belong to the
 * SRQ, whose completions find their EP through the SRQ's QP table, not
 * through the QP, and whose memory the receive EVD pins (srq.c; without
 * one, the SRQ's own CQ, which goes before the SRQ).  Its entry there
 * names no EP from now on, and keeps the QP's address from a new QP until
 * the recv CQ was polled past the destroy (kdat_srq_qp_gone).
 * Idempotent.  Returns the EP's own CQ, if any, for the caller to free once
 * op_lock is dropped (kdat_ep_free_cq): freeing a CQ waits for its poller,
 * and a poller runs upcalls that take op_lock (of another EP: lockdep knows
 * one class of CQ work only).
 */
static struct ib_cq *kdat_ep_detach_qp(struct kdat_ep *ep,
					struct rdma_cm_id **idp,
					struct ib_qp **qpp)
{
	struct rdma_cm_id *id;
	struct ib_qp *qp;
	struct ib_cq *cq;

	lockdep_assert_held(&ep->op_lock);
	id = READ_ONCE(ep->cm_id);
	if (id)
		rdma_lock_handler(id);
	spin_lock_irq(&ep->lock);
	qp = ep->qp;
	ep->cm_id = NULL;
	ep->qp = NULL;
	ep->qp_error = false;
	spin_unlock_irq(&ep->lock);
	if (id)
		rdma_unlock_handler(id);

	/* reported to no one from now, the address kept until the CQ's poll */
	if (qp && ep->srq)
		xa_store(&ep->srq->qps, kdat_qp_key(qp), KDAT_QP_GONE,
			 GFP_KERNEL);
	cq = ep->own_cq;
	ep->own_cq = NULL;
	*idp = id;
	*qpp = qp;
	return cq;
}

static void kdat_ep_finish_qp(struct kdat_ep *ep, struct rdma_cm_id *id,
			      struct ib_qp *qp)
{
	struct ib_cq *rcq = qp ? qp->recv_cq : NULL;
	unsigned long key = qp ? kdat_qp_key(qp) : 0;

	if (id && qp) {
		if (ep->srq)
			ib_drain_sq(qp);
		else
			ib_drain_qp(qp);
		rdma_destroy_qp(id);
		kdat_fault_qp_park(ep);
		/* the SRQ buffer it had begun to fill may complete this late */
		if (ep->srq)
			kdat_srq_qp_gone(ep->srq, key, rcq);
		kdat_ep_cq_uncharge(ep);
	}
	if (id)
		rdma_destroy_id(id);
}

/*
 * A free, reset or device removal that found the QP taken by another of
 * them, which drains it without op_lock: wait until it is gone, before
 * the EVDs may go.  Each drops its own count first.
 */
static void kdat_ep_wait_hw_teardown(struct kdat_ep *ep)
{
	wait_var_event(&ep->hw_teardown, !atomic_read(&ep->hw_teardown));
}

static void kdat_ep_free_cq(struct ib_cq *cq)
{
	if (cq)
		ib_free_cq(cq);
}

static void kdat_ep_ring_close(struct kdat_ep *ep);

/*
 * Device removal: flush and release the QP, keep the EP.  The drain runs
 * without op_lock: its flushed completions run kernel consumers' upcalls,
 * which may disconnect or query this EP (taking op_lock).  A free or reset
 * meanwhile finds no QP and waits for hw_teardown instead; so does this,
 * for a reset that took the QP first, before the EVDs' CQs go.
 */
void kdat_ep_hw_destroy(struct kdat_ep *ep)
{
	struct rdma_cm_id *id;
	struct ib_qp *qp;
	struct ib_cq *cq;

	mutex_lock(&ep->op_lock);
	spin_lock_irq(&ep->lock);
	if (ep->state != DAT_EP_STATE_UNCONNECTED)
		ep->state = DAT_EP_STATE_DISCONNECTED;
	spin_unlock_irq(&ep->lock);
	atomic_inc(&ep->hw_teardown);
	cq = kdat_ep_detach_qp(ep, &id, &qp);
	mutex_unlock(&ep->op_lock);
	kdat_ep_finish_qp(ep, id, qp);
	kdat_ep_free_cq(cq);
	if (atomic_dec_and_test(&ep->hw_teardown))
		wake_up_var(&ep->hw_teardown);
	kdat_ep_wait_hw_teardown(ep);
	kdat_ep_ring_close(ep);
}

/* ---------------------------------------------------------------------- */
/* Query, modify, status                                                   */

DAT_RETURN kdat_ib_ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask,
			    DAT_EP_PARAM *p)
{
	struct kdat_ep *ep = to_ep(h);

	if (mask & ~DAT_EP_FIELD_ALL)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!p)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	memset(p, 0, sizeof(*p));
	spin_lock_irq(&ep->lock);
	p->ia_handle = ep->obj.ia;
	p->ep_state = ep->state;
	p->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->obj.ia->addr;
	p->local_port_qual = ep->local_qual;
	p->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->remote;
	p->remote_port_qual = ep->remote_qual;
	p->pz_handle = ep->pz;
	p->recv_evd_handle = ep->recv_evd;
	p->request_evd_handle = ep->request_evd;
	p->connect_evd_handle = ep->connect_evd;
	p->srq_handle = ep->srq;
	p->ep_attr = ep->attr;
	spin_unlock_irq(&ep->lock);
	return DAT_SUCCESS;
}

/* Are the attributes dat_ep_modify can change the same in @x and @y? */
static bool kdat_ep_attr_same(const DAT_EP_ATTR *x, const DAT_EP_ATTR *y)
{
	return x->max_request_dtos == y->max_request_dtos &&
	       x->max_request_iov == y->max_request_iov &&
	       x->max_message_size == y->max_message_size &&
	       x->max_rdma_size == y->max_rdma_size &&
	       x->max_rdma_read_in == y->max_rdma_read_in &&
	       x->max_rdma_read_out == y->max_rdma_read_out;
}

static DAT_RETURN kdat_ep_modify_locked(struct kdat_ep *ep,
					DAT_EP_PARAM_MASK mask,
					const DAT_EP_PARAM *p);

/*
 * Modify: only attributes that shape the not-yet-created QP, only while
 * the EP is unconnected and idle.  The SRQ of an EP can never change.
 * Concurrent modifies of one EP (two threads of a process) apply one
 * after the other: one that finds the attributes changed since it read
 * them starts over from the new ones.
 */
DAT_RETURN kdat_ib_ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask,
			     const DAT_EP_PARAM *p)
{
	const DAT_EP_PARAM_MASK ok = DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS |
				     DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV |
				     DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE |
				     DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE |
				     DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
				     DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT;
	struct kdat_ep *ep = to_ep(h);
	DAT_RETURN ret;

	if (!p)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (mask & ~ok)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	kdat_ep_await_reset(ep);
	mutex_lock(&ep->op_lock);
	ret = kdat_ep_modify_locked(ep, mask, p);
	mutex_unlock(&ep->op_lock);
	return ret;
}

static DAT_RETURN kdat_ep_modify_locked(struct kdat_ep *ep,
					DAT_EP_PARAM_MASK mask,
					const DAT_EP_PARAM *p)
{
	struct kdat_wr_ring sq, old;
	DAT_EP_ATTR a, cur;
	DAT_RETURN ret;

again:
	spin_lock_irq(&ep->lock);
	cur = ep->attr;
	spin_unlock_irq(&ep->lock);
	a = cur;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)
		a.max_request_dtos = p->ep_attr.max_request_dtos;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV)
		a.max_request_iov = p->ep_attr.max_request_iov;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE)
		a.max_message_size = p->ep_attr.max_message_size;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE)
		a.max_rdma_size = p->ep_attr.max_rdma_size;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN)
		a.max_rdma_read_in = p->ep_attr.max_rdma_read_in;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT)
		a.max_rdma_read_out = p->ep_attr.max_rdma_read_out;
	/* exact values only: DAT_HW_DEFAULT is for create (-1 is refused) */
	ret = kdat_ep_check_attr(ep->obj.ia, &a, ep->srq, DAT_INVALID_ARG3);
	if (ret != DAT_SUCCESS)
		return ret;
	memset(&sq, 0, sizeof(sq));
	if (kdat_ring_init(ep, &sq, a.max_request_dtos, a.max_request_iov,
			   false)) {
		kdat_ring_free(&sq);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	spin_lock_irq(&ep->lock);
	if (ep->state != DAT_EP_STATE_UNCONNECTED || ep->qp || ep->resetting ||
	    ep->sq.head != ep->sq.tail) {
		u32 sub = kdat_ep_busy_subtype(ep->state);

		spin_unlock_irq(&ep->lock);
		kdat_ring_free(&sq);
		return KDAT_ERR(DAT_INVALID_STATE, sub);
	}
	if (!kdat_ep_attr_same(&ep->attr, &cur)) {
		spin_unlock_irq(&ep->lock);
		kdat_ring_free(&sq);
		goto again;
	}
	old = ep->sq;
	ep->sq = sq;
	ep->attr = a;
	if (ep->sring)
		WRITE_ONCE(kdat_uring_hdr(ep->sring)->depth,
			   min_t(u32, a.max_request_dtos, ep->sring->entries));
	spin_unlock_irq(&ep->lock);
	kdat_ring_free(&old);
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE *state,
				 DAT_BOOLEAN *recv_idle,
				 DAT_BOOLEAN *request_idle)
{
	struct kdat_ep *ep = to_ep(h);

	spin_lock_irq(&ep->lock);
	if (state)
		*state = ep->state;
	if (recv_idle)
		*recv_idle = ep->rq.head == ep->rq.tail;
	if (request_idle)
		*request_idle = ep->sq.head == ep->sq.tail;
	spin_unlock_irq(&ep->lock);
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_ep_recv_query(DAT_EP_HANDLE h, DAT_COUNT *nbufs,
				 DAT_COUNT *span)
{
	/* ep_recv_info_supported is 0: the values are unknown */
	if (nbufs)
		*nbufs = DAT_VALUE_UNKNOWN;
	if (span)
		*span = DAT_VALUE_UNKNOWN;
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_ep_set_watermark(DAT_EP_HANDLE h, DAT_COUNT soft,
				    DAT_COUNT hard)
{
	return KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
}

/* ---------------------------------------------------------------------- */
/* Data transfer                                                           */

/* What an IB-extension request adds to a send, RDMA Write or Read. */
struct kdat_post_ext {
	u32 immed_data;
	u64 compare_add;
	u64 swap;
};

static u8 kdat_wr_dto_op(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_RDMA_WRITE:
		return KDAT_DTO_OP_RDMA_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return KDAT_DTO_OP_RDMA_WRITE_IMMED;
	case IB_WR_RDMA_READ:
		return KDAT_DTO_OP_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return KDAT_DTO_OP_CMP_AND_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return KDAT_DTO_OP_FETCH_AND_ADD;
	default:
		return KDAT_DTO_OP_SEND;
	}
}

static bool kdat_wr_is_atomic(enum ib_wr_opcode op)
{
	return op == IB_WR_ATOMIC_CMP_AND_SWP ||
	       op == IB_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * Post one request (send, RDMA write or RDMA read, write with immediate
 * data, atomic).  @remote is NULL for a send.  The local segments are read
 * for a send or write and written by a read or an atomic, so they need the
 * matching local privilege.  @flags_arg names the flags argument.
 */
KDAT_DATA_PATH(kdat_ep_post_request, 2048)
static DAT_RETURN kdat_ep_post_request(struct kdat_ep *ep, enum ib_wr_opcode op,
				       DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
				       DAT_DTO_COOKIE cookie,
				       const DAT_RMR_TRIPLET *remote,
				       const struct kdat_post_ext *ext,
				       DAT_COMPLETION_FLAGS flags,
				       DAT_RETURN_SUBTYPE flags_arg)
{
	bool writes = op == IB_WR_RDMA_READ || kdat_wr_is_atomic(op);
	DAT_MEM_PRIV_FLAGS need = writes ? DAT_MEM_PRIV_LOCAL_WRITE_FLAG :
					   DAT_MEM_PRIV_LOCAL_READ_FLAG;
	struct ib_sge sge[KDAT_EP_MAX_IOV] __uninitialized;	/* [0, n) set */
	const struct ib_send_wr *bad;
	union {
		struct ib_send_wr wr;
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
	} u = {};
	unsigned long irqflags;
	struct kdat_wr *w;
	DAT_RETURN ret;
	u64 len = 0;
	DAT_COUNT i;

	if (n < 0 || n > ep->attr.max_request_iov ||
	    (op == IB_WR_RDMA_READ && n > ep->attr.max_rdma_read_iov) ||
	    ((op == IB_WR_RDMA_WRITE || op == IB_WR_RDMA_WRITE_WITH_IMM) &&
	     n > ep->attr.max_rdma_write_iov))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (n && !iov)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (flags & ~KDAT_SEND_FLAGS)
		return KDAT_ERR(DAT_INVALID_PARAMETER, flags_arg);
	for (i = 0; i < n; i++) {
		ret = kdat_lmr_to_sge(ep->obj.ia, ep->pz, &iov[i], &sge[i],
				      need);
		if (ret != DAT_SUCCESS)
			return ret;
		len += sge[i].length;
	}
	if (len > (remote ? ep->attr.max_rdma_size : ep->attr.max_message_size))
		return KDAT_ERR(DAT_LENGTH_ERROR, 0);
	if (remote && len > remote->segment_length)
		return KDAT_ERR(DAT_LENGTH_ERROR, 0);
	u.wr.opcode = op;
	u.wr.sg_list = sge;
	u.wr.num_sge = n;
	u.wr.send_flags = IB_SEND_SIGNALED;
	if (flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG && op == IB_WR_SEND)
		u.wr.send_flags |= IB_SEND_SOLICITED;
	if (flags & DAT_COMPLETION_BARRIER_FENCE_FLAG)
		u.wr.send_flags |= IB_SEND_FENCE;
	if (kdat_wr_is_atomic(op)) {
		u.atomic.remote_addr = remote->target_address;
		u.atomic.rkey = remote->rmr_context;
		u.atomic.compare_add = ext->compare_add;
		u.atomic.swap = ext->swap;
	} else if (remote) {
		u.rdma.remote_addr = remote->target_address;
		u.rdma.rkey = remote->rmr_context;
	}
	if (op == IB_WR_RDMA_WRITE_WITH_IMM)
		u.wr.ex.imm_data = cpu_to_be32(ext->immed_data);

	spin_lock_irqsave(&ep->lock, irqflags);
	if (ep->state != DAT_EP_STATE_CONNECTED || !ep->qp) {
		ret = KDAT_ERR(DAT_INVALID_STATE,
			       DAT_INVALID_STATE_EP_UNCONNECTED);
		goto out;
	}
	if (ep->sq.head - ep->sq.tail >= ep->sq.size) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
		goto out;
	}
	/* lkeys come from the QP's PD, read while the QP surely exists */
	if (!ep->obj.ia->ufile)
		for (i = 0; i < n; i++)
			sge[i].lkey = ep->qp->pd->local_dma_lkey;
	w = &ep->sq.wr[ep->sq.head % ep->sq.size];
	w->cookie = cookie;
	w->length = (u32)len;
	w->suppress = flags & DAT_COMPLETION_SUPPRESS_FLAG;
	w->op = kdat_wr_dto_op(op);
	u.wr.wr_cqe = &w->cqe;
	if (ib_post_send(ep->qp, &u.wr, &bad)) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
		goto out;
	}
	ep->sq.head++;
	ret = DAT_SUCCESS;
out:
	spin_unlock_irqrestore(&ep->lock, irqflags);
	return ret;
}

KDAT_DATA_PATH(kdat_ib_ep_post_send, 64)
DAT_RETURN kdat_ib_ep_post_send(DAT_EP_HANDLE h, DAT_COUNT n,
				DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				DAT_COMPLETION_FLAGS flags)
{
	return kdat_ep_post_request(to_ep(h), IB_WR_SEND, n, iov, cookie, NULL,
				    NULL, flags, DAT_INVALID_ARG5);
}

DAT_RETURN kdat_ib_ep_post_rdma_write(DAT_EP_HANDLE h, DAT_COUNT n,
				      DAT_LMR_TRIPLET *iov,
				      DAT_DTO_COOKIE cookie,
				      const DAT_RMR_TRIPLET *remote,
				      DAT_COMPLETION_FLAGS flags)
{
	if (!remote)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	return kdat_ep_post_request(to_ep(h), IB_WR_RDMA_WRITE, n, iov, cookie,
				    remote, NULL, flags, DAT_INVALID_ARG6);
}

DAT_RETURN kdat_ib_ep_post_rdma_read(DAT_EP_HANDLE h, DAT_COUNT n,
				     DAT_LMR_TRIPLET *iov,
				     DAT_DTO_COOKIE cookie,
				     const DAT_RMR_TRIPLET *remote,
				     DAT_COMPLETION_FLAGS flags)
{
	struct kdat_ep *ep = to_ep(h);

	if (!remote)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	if (!ep->attr.max_rdma_read_out)
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	return kdat_ep_post_request(ep, IB_WR_RDMA_READ, n, iov, cookie,
				    remote, NULL, flags, DAT_INVALID_ARG6);
}

/* kdat_ep_post_rdma_write_immed (kdat.h): arguments as its ARGn. */
DAT_RETURN kdat_ib_ep_post_rdma_write_immed(DAT_EP_HANDLE h, DAT_COUNT n,
					    DAT_LMR_TRIPLET *iov,
					    DAT_DTO_COOKIE cookie,
					    const DAT_RMR_TRIPLET *remote,
					    u32 immed_data,
					    DAT_COMPLETION_FLAGS flags)
{
	struct kdat_post_ext ext = { .immed_data = immed_data };

	if (!remote)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	return kdat_ep_post_request(to_ep(h), IB_WR_RDMA_WRITE_WITH_IMM, n,
				    iov, cookie, remote, &ext, flags,
				    DAT_INVALID_ARG7);
}

/*
 * kdat_ep_post_cmp_and_swap / _fetch_and_add (kdat.h).  Argument numbers
 * are compare-and-swap's (ep, compare, swap, local, cookie, remote,
 * flags); fetch-and-add has no swap, so from local on they are one less.
 */
DAT_RETURN kdat_ib_ep_post_atomic(DAT_EP_HANDLE h, bool cmp_swap,
				  u64 compare_add, u64 swap,
				  const DAT_LMR_TRIPLET *local,
				  DAT_DTO_COOKIE cookie,
				  const DAT_RMR_TRIPLET *remote,
				  DAT_COMPLETION_FLAGS flags)
{
	struct kdat_post_ext ext = { .compare_add = compare_add, .swap = swap };
	DAT_RETURN_SUBTYPE shift = cmp_swap ? 0 : 1;
	struct kdat_ep *ep = to_ep(h);

	if (!local)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4 - shift);
	if (!remote || remote->target_address & 7)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6 - shift);
	if (flags & ~KDAT_SEND_FLAGS)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7 - shift);
	if (local->segment_length != sizeof(u64))
		return KDAT_ERR(DAT_LENGTH_ERROR, 0);
	if (ep->obj.ia->ibdev->attrs.atomic_cap == IB_ATOMIC_NONE)
		return KDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
	/* an atomic is an RDMA Read as far as the initiator depth goes */
	if (!ep->attr.max_rdma_read_out)
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	return kdat_ep_post_request(ep, cmp_swap ? IB_WR_ATOMIC_CMP_AND_SWP :
						   IB_WR_ATOMIC_FETCH_AND_ADD,
				    1, local, cookie, remote, &ext, flags,
				    DAT_INVALID_ARG7 - shift);
}

DAT_RETURN kdat_ib_ep_post_recv(DAT_EP_HANDLE h, DAT_COUNT n,
				DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				DAT_COMPLETION_FLAGS flags)
{
	struct kdat_ep *ep = to_ep(h);
	struct kdat_wr_ring *r = &ep->rq;
	struct ib_sge sge[KDAT_EP_MAX_IOV] __uninitialized;	/* [0, n) set */
	unsigned long irqflags;
	DAT_RETURN ret;
	DAT_COUNT i;
	u32 slot;

	/* receive buffers of an SRQ EP must be posted to its SRQ */
	if (ep->srq)
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	if (n < 0 || n > ep->attr.max_recv_iov)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (n && !iov)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (flags & ~(DAT_COMPLETION_SUPPRESS_FLAG |
		      DAT_COMPLETION_UNSIGNALLED_FLAG))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	for (i = 0; i < n; i++) {
		ret = kdat_lmr_to_sge(ep->obj.ia, ep->pz, &iov[i], &sge[i],
				      DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
		if (ret != DAT_SUCCESS)
			return ret;
	}

	spin_lock_irqsave(&ep->lock, irqflags);
	if (ep->state == DAT_EP_STATE_DISCONNECTED) {
		ret = KDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED);
		goto out;
	}
	if (r->head - r->tail >= r->size) {
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
		goto out;
	}
	slot = r->head % r->size;
	memcpy(&r->sge[slot * r->iov], sge, n * sizeof(*sge));
	r->wr[slot].nsge = n;
	r->wr[slot].cookie = cookie;
	r->wr[slot].suppress = false;
	r->head++;
	/* without a QP the receive waits in the ring for the connection */
	if (ep->qp && kdat_ep_post_pending(ep, false)) {
		r->head--;
		ret = KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
		goto out;
	}
	ret = DAT_SUCCESS;
out:
	spin_unlock_irqrestore(&ep->lock, irqflags);
	return ret;
}

/*
 * One request of a /dev/kdat user (KDAT_IOC_EP_POST or its send ring): @op
 * is a KDAT_POST_*, the checks and codes those of the DAT call it stands
 * for.  The caller holds bottom halves off (see chardev.c's ep_post).
 */
DAT_RETURN kdat_ep_post_user(struct kdat_ep *ep, u32 op, u32 n,
			     const DAT_LMR_TRIPLET *t, DAT_DTO_COOKIE ck,
			     const DAT_RMR_TRIPLET *r, u64 compare_add,
			     u64 swap, u32 immed_data, u32 flags)
{
	DAT_EP_HANDLE h = &ep->obj;

	if (n > KDAT_MAX_IOV)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	switch (op) {
	case KDAT_POST_SEND:
		return kdat_ib_ep_post_send(h, n, (DAT_LMR_TRIPLET *)t, ck,
					    flags);
	case KDAT_POST_RECV:
		return kdat_ib_ep_post_recv(h, n, (DAT_LMR_TRIPLET *)t, ck,
					    flags);
	case KDAT_POST_RDMA_WRITE:
		return kdat_ib_ep_post_rdma_write(h, n, (DAT_LMR_TRIPLET *)t,
						  ck, r, flags);
	case KDAT_POST_RDMA_READ:
		return kdat_ib_ep_post_rdma_read(h, n, (DAT_LMR_TRIPLET *)t,
						 ck, r, flags);
	case KDAT_POST_RDMA_WRITE_IMMED:
		return kdat_ib_ep_post_rdma_write_immed(h, n,
							(DAT_LMR_TRIPLET *)t,
							ck, r, immed_data,
							flags);
	case KDAT_POST_CMP_AND_SWAP:
	case KDAT_POST_FETCH_AND_ADD:
		/* one local segment, the one the old value lands in */
		if (n != 1)
			return KDAT_ERR(DAT_LENGTH_ERROR, 0);
		return kdat_ib_ep_post_atomic(h, op == KDAT_POST_CMP_AND_SWAP,
					      compare_add, swap, t, ck, r,
					      flags);
	default:
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	}
}

/* ---------------------------------------------------------------------- */
/* The send ring of a /dev/kdat user (KDAT_FEATURE_SEND_RING)              */

/*
 * The user writes struct kdat_ep_sqe entries and publishes its tail; the
 * kernel drains them into the send queue on every send completion, on a
 * kick (KDAT_IOC_EP_KICK), and whenever the EP's state changes
 * (kdat_ep_ring_sync).  The tail is read once and clamped, each entry is
 * copied once and goes through the very checks of KDAT_IOC_EP_POST
 * (kdat_ep_post_user).  An entry that does not fit the send queue waits
 * for the next completion.  One the kernel refuses (a library that lied,
 * or raced a disconnect) is never posted and never dropped: it completes
 * as a DTO event with an error status on the request EVD, once nothing
 * posted before it is outstanding, so in order.  NEED_KICK is raised when
 * the send queue is idle (no completion will come to drain the ring), with
 * the SRQ ring's flag / fence / re-read of the tail, so a post that raced
 * with the flag is drained here or kicked by its poster.
 */
#define KDAT_SRING_BATCH	64

/* The status a refused entry completes with. */
static DAT_DTO_COMPLETION_STATUS kdat_sqe_refusal(DAT_RETURN ret)
{
	switch (DAT_GET_TYPE(ret)) {
	case DAT_PROTECTION_VIOLATION:
	case DAT_PRIVILEGES_VIOLATION:
		return DAT_DTO_ERR_LOCAL_PROTECTION;
	case DAT_LENGTH_ERROR:
		return DAT_DTO_ERR_LOCAL_LENGTH;
	case DAT_INVALID_PARAMETER:
		/* the segment count; a triplet naming no LMR of the EP */
		if (DAT_GET_SUBTYPE(ret) == DAT_INVALID_ARG2)
			return DAT_DTO_ERR_LOCAL_LENGTH;
		if (DAT_GET_SUBTYPE(ret) == DAT_INVALID_ARG3)
			return DAT_DTO_ERR_LOCAL_PROTECTION;
		return DAT_DTO_ERR_LOCAL_EP;
	case DAT_INVALID_STATE:
		/* the EP is no longer connected: as its queue is flushed */
		if (DAT_GET_SUBTYPE(ret) == DAT_INVALID_STATE_EP_UNCONNECTED)
			return DAT_DTO_ERR_FLUSHED;
		return DAT_DTO_ERR_LOCAL_EP;
	default:
		return DAT_DTO_ERR_LOCAL_EP;
	}
}

static u8 kdat_sqe_dto_op(u32 op)
{
	switch (op) {
	case KDAT_POST_SEND:
		return KDAT_DTO_OP_SEND;
	case KDAT_POST_RDMA_WRITE:
		return KDAT_DTO_OP_RDMA_WRITE;
	case KDAT_POST_RDMA_READ:
		return KDAT_DTO_OP_RDMA_READ;
	case KDAT_POST_RDMA_WRITE_IMMED:
		return KDAT_DTO_OP_RDMA_WRITE_IMMED;
	case KDAT_POST_CMP_AND_SWAP:
		return KDAT_DTO_OP_CMP_AND_SWAP;
	case KDAT_POST_FETCH_AND_ADD:
		return KDAT_DTO_OP_FETCH_AND_ADD;
	default:
		return KDAT_DTO_OP_UNKNOWN;
	}
}

/* Complete a refused entry (sring_lock held; no other lock). */
static void kdat_ep_ring_refuse(struct kdat_ep *ep, u32 op, DAT_DTO_COOKIE ck,
				DAT_RETURN why)
{
	DAT_EVENT ev = {};
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

	spin_lock(&ep->lock);
	kdat_ep_ring_retire(ep);
	spin_unlock(&ep->lock);
	if (!ep->request_evd)
		return;
	ev.event_number = DAT_DTO_COMPLETION_EVENT;
	d->ep_handle = ep;
	d->user_cookie = ck;
	d->status = kdat_sqe_refusal(why);
	d->transfered_length = 0;
	d->kdat_operation = kdat_sqe_dto_op(op);
	kdat_evd_post(ep->request_evd, &ev, NULL, false);
}

static bool kdat_sqe_op_ok(u32 op)
{
	return op == KDAT_POST_SEND || op == KDAT_POST_RDMA_WRITE ||
	       op == KDAT_POST_RDMA_READ || op == KDAT_POST_RDMA_WRITE_IMMED ||
	       op == KDAT_POST_CMP_AND_SWAP || op == KDAT_POST_FETCH_AND_ADD;
}

/* Is a completion of the send queue still to come (or being reported)? */
static bool kdat_ep_sq_busy(struct kdat_ep *ep)
{
	bool busy;

	spin_lock(&ep->lock);
	busy = ep->sq.head != ep->sq.tail || ep->sq_reporting;
	spin_unlock(&ep->lock);
	return busy;
}

KDAT_DATA_PATH(__kdat_ep_ring_drain, 2048)
static void __kdat_ep_ring_drain(struct kdat_ep *ep)
{
	struct kdat_uring *r = ep->sring;
	DAT_LMR_TRIPLET t[KDAT_MAX_IOV];
	struct kdat_ring_hdr *h;
	struct kdat_ep_sqe *w;
	DAT_RMR_TRIPLET rmr;
	unsigned long irqflags;
	u32 head, tail, raw, max_seg, batch, op, n, fl, imm;
	bool retried = false, idle, more = false;
	DAT_DTO_COOKIE ck;
	DAT_RETURN ret;
	u32 budget;
	u64 ca, sw;

	if (!r)
		return;
	h = kdat_uring_hdr(r);
	max_seg = kdat_wqe_max_seg(r->entry_size,
				   offsetof(struct kdat_ep_sqe, seg),
				   sizeof(struct kdat_useg));
	/*
	 * KDAT_DRAIN_RINGS rings' worth of entries per call, however often
	 * the user rewrites its tail meanwhile (a refusal never blocks): the
	 * rest goes to sring_work, or to the next completion.
	 */
	budget = KDAT_DRAIN_RINGS * r->entries;
	spin_lock_irqsave(&ep->sring_lock, irqflags);
	head = ep->sring_head;
again:
	kdat_fault_rewrite_tail(h, head, r->entries);
	/* pairs with the tail exchange in SendProducer::publish() */
	raw = smp_load_acquire(&h->tail);
	tail = kdat_ring_clamp_tail(head, raw, r->entries);
	batch = 0;
	while (head != tail) {
		if (!budget) {
			more = true;
			break;
		}
		/* the user sizes the ring: let interrupts in now and then */
		if (++batch > KDAT_SRING_BATCH) {
			ep->sring_head = head;
			/* as below: pairs with SendProducer::unconsumed() */
			smp_store_release(&h->head, head);
			spin_unlock_irqrestore(&ep->sring_lock, irqflags);
			spin_lock_irqsave(&ep->sring_lock, irqflags);
			head = ep->sring_head;
			goto again;
		}
		budget--;
		/* one copy of the entry; nothing is read from it again */
		w = kdat_uring_entry(r, head);
		op = READ_ONCE(w->op);
		fl = READ_ONCE(w->flags);
		n = READ_ONCE(w->nseg);
		ck.as_64 = READ_ONCE(w->cookie);
		rmr.rmr_context = READ_ONCE(w->rmr_context);
		rmr.target_address = READ_ONCE(w->remote_addr);
		rmr.segment_length = READ_ONCE(w->remote_length);
		ca = READ_ONCE(w->compare_add);
		sw = READ_ONCE(w->swap);
		imm = READ_ONCE(w->immed_data);
		if (ep->sring_dead) {
			ret = KDAT_ERR(DAT_INVALID_STATE,
				       DAT_INVALID_STATE_EP_UNCONNECTED);
		} else if (!kdat_sqe_op_ok(op)) {
			ret = KDAT_ERR(DAT_INVALID_PARAMETER, 0);
		} else if (n > max_seg) {
			/* never read past this entry's own segments */
			ret = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		} else {
			kdat_useg_to_triplets(w->seg, n, t);
			ret = kdat_ep_post_user(ep, op, n, t, ck, &rmr, ca, sw,
						imm, fl);
		}
		if (ret != DAT_SUCCESS) {
			/*
			 * A full send queue, or a refusal while something
			 * posted before it is outstanding: wait for the
			 * completion, which drains again (in order).
			 */
			if (!ep->sring_dead && kdat_ep_sq_busy(ep))
				break;
			kdat_ep_ring_refuse(ep, op, ck, ret);
		}
		head++;
	}
	ep->sring_head = head;
	/* pairs with the acquire of head in SendProducer::unconsumed() */
	smp_store_release(&h->head, head);
	/*
	 * A dead ring's QP is gone and its completions came: a post that
	 * raced the close must kick, and the kick flushes it.
	 */
	idle = ep->sring_dead || !kdat_ep_sq_busy(ep);
	if (idle) {
		WRITE_ONCE(h->flags, KDAT_RING_NEED_KICK);
		/*
		 * Pairs with the user's ordering of its tail before its read
		 * of the flags: a post that raced with the flag is drained
		 * now.  Once only; a later one saw the flag and kicks.
		 */
		smp_mb();
		if (READ_ONCE(h->tail) != raw && !retried) {
			retried = true;
			goto again;
		}
	} else {
		WRITE_ONCE(h->flags, 0);
	}
	/*
	 * Entries left with nothing outstanding that would drain them: a
	 * work item does.  Not for a dead ring: its close (perhaps from the
	 * release) is the last drain that owes the user anything, and a
	 * user rewriting a dead ring's tail gets one budget per kick.
	 */
	if (more && idle && !ep->sring_dead) {
		atomic_long_inc(&kdat_ring_spills[KDAT_SPILL_EP]);
		kdat_obj_queue_drain(&ep->obj, kdat_ring_wq, &ep->sring_work);
	}
	spin_unlock_irqrestore(&ep->sring_lock, irqflags);
}

/* What a drain left when it used up its budget; holds a reference. */
static void kdat_ep_sring_work(struct work_struct *w)
{
	struct kdat_ep *ep = container_of(to_delayed_work(w), struct kdat_ep,
					  sring_work);

	kdat_ep_ring_drain(ep);
	kdat_obj_put(&ep->obj);
}

/* As KDAT_IOC_EP_POST does: a software device sends on this CPU. */
void kdat_ep_ring_drain(struct kdat_ep *ep)
{
	local_bh_disable();
	__kdat_ep_ring_drain(ep);
	local_bh_enable();
}

/*
 * KDAT_IOC_EP_KICK.  Deferred (KDAT_EP_KICK_DEFER): bottom halves stay on,
 * so a software device (rxe) leaves the request to its tasklet instead of
 * running it, the peer's response and the completion here; the send queue
 * is busy when the call returns and the completion drains what is posted
 * meanwhile.
 */
void kdat_ep_ring_kick(struct kdat_ep *ep, bool defer)
{
	if (defer)
		__kdat_ep_ring_drain(ep);
	else
		kdat_ep_ring_drain(ep);
}

/*
 * The EP's state changed: publish it (a post needs CONNECTED) and drain,
 * which flushes what the ring holds once the EP cannot send.  Any context
 * that may take ep->lock; no lock held.
 */
void kdat_ep_ring_sync(struct kdat_ep *ep)
{
	unsigned long flags;

	if (!ep->sring)
		return;
	spin_lock_irqsave(&ep->lock, flags);
	WRITE_ONCE(kdat_uring_hdr(ep->sring)->ep_state, ep->state);
	spin_unlock_irqrestore(&ep->lock, flags);
	kdat_ep_ring_drain(ep);
}

/* Freed, or its device gone: every entry left or to come is flushed. */
static void kdat_ep_ring_close(struct kdat_ep *ep)
{
	unsigned long flags;

	if (!ep->sring)
		return;
	spin_lock_irqsave(&ep->sring_lock, flags);
	ep->sring_dead = true;
	spin_unlock_irqrestore(&ep->sring_lock, flags);
	kdat_ep_ring_sync(ep);
}

/* ---------------------------------------------------------------------- */
/* Reset and free                                                          */

/*
 * May the caller wait for a drain of @ep's QP: its own in place, or, with
 * @other, another teardown's (@cq: the EP's own CQ it took, if any)?  A
 * drain waits for the request EVD's poller (or the EP's own CQ's) and the
 * recv EVD's.  An SRQ EP's recv CQ is polled past the QP's destroy by
 * kdat_srq_qp_gone: in place, or in a work item when the teardown runs in
 * an upcall of a poller, so an upcall's own drain never waits for that
 * poller; another teardown, in place, does.  Not from an upcall of one of
 * those (it would wait for itself), nor of another poller when one of
 * those waits itself (kdat_poller_wait_begin: two upcalls draining
 * through each other's pollers would wait for ever); recorded in @pw
 * until kdat_poller_wait_end.  Only the CQs' addresses are compared.
 */
static bool kdat_ep_may_wait_drain(struct kdat_ep *ep, struct ib_cq *cq,
				   bool other, struct kdat_poller_wait *pw)
{
	struct ib_cq *cqs[3] = {};

	if (ep->request_evd)
		cqs[0] = READ_ONCE(ep->request_evd->cq);
	if (ep->recv_evd && (!ep->srq || other))
		cqs[1] = READ_ONCE(ep->recv_evd->cq);
	cqs[2] = cq;
	return kdat_poller_wait_begin(pw, cqs, ARRAY_SIZE(cqs));
}

/*
 * Must a reset or free that just took @qp and @cq (with its own count in
 * hw_teardown) hand its drain to a work item?  Only when there is
 * something to drain or another teardown's drain to wait for (a count
 * beyond its own), and only from an upcall of a CQ's poller: of any, when
 * the EP's own CQ is to be freed (lockdep, with one class for every CQ's
 * work, would call that recursion); else when it may not wait for the
 * drain (kdat_ep_may_wait_drain).  Otherwise the caller drains in place,
 * recorded in @pw until kdat_poller_wait_end.
 */
static bool kdat_ep_teardown_must_defer(struct kdat_ep *ep, struct ib_qp *qp,
					struct ib_cq *cq,
					struct kdat_poller_wait *pw)
{
	pw->work = NULL;
	if (!qp && !cq && atomic_read(&ep->hw_teardown) <= 1)
		return false;
	if (cq && kdat_in_a_cq_poller())
		return true;
	return !kdat_ep_may_wait_drain(ep, cq,
				       atomic_read(&ep->hw_teardown) > 1, pw);
}

/*
 * The second half of a reset, without op_lock: drain and destroy the QP
 * it took (every posted buffer completes, through upcalls that may call
 * op_lock operations on this EP), wait for a drain of device removal's,
 * and only then let the EP be Unconnected and connect again.
 */
static void kdat_ep_reset_finish(struct kdat_ep *ep, struct rdma_cm_id *id,
				 struct ib_qp *qp, struct ib_cq *cq)
{
	kdat_ep_finish_qp(ep, id, qp);
	kdat_ep_free_cq(cq);
	/* ours first: a removal waiting for the count waits for us too */
	if (atomic_dec_and_test(&ep->hw_teardown))
		wake_up_var(&ep->hw_teardown);
	kdat_ep_wait_hw_teardown(ep);

	mutex_lock(&ep->op_lock);
	spin_lock_irq(&ep->lock);
	/* a free (after a deferred reset returned) leaves it Disconnected */
	if (!ep->freed) {
		ep->state = DAT_EP_STATE_UNCONNECTED;
		ep->remote_qual = 0;
		memset(&ep->remote, 0, sizeof(ep->remote));
	}
	ep->resetting = false;
	spin_unlock_irq(&ep->lock);
	/* what the send ring still holds was the old connection's: flushed */
	kdat_ep_ring_sync(ep);
	mutex_unlock(&ep->op_lock);
	wake_up_var(&ep->resetting);
}

/* A reset called from an upcall of a poller its drain waits for. */
static void kdat_ep_reset_work(struct work_struct *w)
{
	struct kdat_ep *ep = container_of(w, struct kdat_ep, reset_work);

	kdat_ep_reset_finish(ep, ep->reset_id, ep->reset_qp, ep->reset_cq);
	kdat_obj_put(&ep->obj);
}

static bool kdat_ep_reset_done(struct kdat_ep *ep)
{
	bool done;

	spin_lock_irq(&ep->lock);
	done = !ep->resetting;
	spin_unlock_irq(&ep->lock);
	return done;
}

/*
 * Before a call that would give @ep a new QP (connect, accept, RSP
 * reservation, modify): a reset draining the old one is waited for, as
 * such a call used to wait for the reset's op_lock, except from an upcall
 * of a poller that drain waits for, which would wait for itself, or of
 * one that may not wait for it now (kdat_ep_may_wait_drain).  That
 * caller, and one that meets a reset begun after this returned, is
 * refused under op_lock (DAT_INVALID_STATE).
 */
void kdat_ep_await_reset(struct kdat_ep *ep)
{
	struct kdat_poller_wait pw;

	if (kdat_ep_reset_done(ep) ||
	    !kdat_ep_may_wait_drain(ep, NULL, true, &pw))
		return;
	wait_var_event(&ep->resetting, kdat_ep_reset_done(ep));
	kdat_poller_wait_end(&pw);
}

/*
 * The QP is taken under op_lock and drained after dropping it, as a free
 * does: the drain waits for the CQs' pollers, whose upcalls may
 * disconnect, query, modify or connect this EP.  Meanwhile the EP keeps
 * its state (Disconnected, or Unconnected without a QP) and is marked
 * resetting: what would give it a new QP while the old one's
 * completions are still coming (connect, accept, RSP reservation,
 * modify) waits for the reset (kdat_ep_await_reset), or is refused with
 * DAT_INVALID_STATE from an upcall the drain waits for; another reset
 * waits too.  It returns Unconnected, every buffer posted to the QP
 * completed (an SRQ's receives are the SRQ's, not drained).
 *
 * From an upcall of a poller the drain waits for, waiting would never
 * end: the drain goes to reset_work and the reset returns at once; the
 * EP turns Unconnected (and may connect) once that work is done, after
 * the upcall returned.  A second reset from there returns at once too.
 */
DAT_RETURN kdat_ib_ep_reset(DAT_EP_HANDLE h)
{
	struct kdat_ep *ep = to_ep(h);
	struct kdat_poller_wait pw;
	struct rdma_cm_id *id;
	struct ib_qp *qp;
	struct ib_cq *cq;
	bool defer;

again:
	mutex_lock(&ep->op_lock);
	spin_lock_irq(&ep->lock);
	if (ep->state != DAT_EP_STATE_DISCONNECTED &&
	    ep->state != DAT_EP_STATE_UNCONNECTED) {
		u32 sub = kdat_ep_busy_subtype(ep->state);

		spin_unlock_irq(&ep->lock);
		mutex_unlock(&ep->op_lock);
		/* the RSP states say which; the others as before */
		return KDAT_ERR(DAT_INVALID_STATE,
				sub == DAT_INVALID_STATE_EP_NOTREADY ? 0 : sub);
	}
	if (ep->resetting) {
		spin_unlock_irq(&ep->lock);
		mutex_unlock(&ep->op_lock);
		if (!kdat_ep_may_wait_drain(ep, NULL, true, &pw))
			return DAT_SUCCESS;
		wait_var_event(&ep->resetting, kdat_ep_reset_done(ep));
		kdat_poller_wait_end(&pw);
		goto again;
	}
	ep->resetting = true;
	/* a connection event still on its way was the old connection's */
	ep->conn_gen++;
	spin_unlock_irq(&ep->lock);
	/* a fresh QP at the next connect hides the old connection's state */
	atomic_inc(&ep->hw_teardown);
	cq = kdat_ep_detach_qp(ep, &id, &qp);
	/* removal's count is taken under op_lock too: this one is exact */
	defer = kdat_ep_teardown_must_defer(ep, qp, cq, &pw);
	if (defer) {
		ep->reset_id = id;
		ep->reset_qp = qp;
		ep->reset_cq = cq;
		kdat_obj_queue_work(&ep->obj, kdat_ep_wq, &ep->reset_work);
	}
	mutex_unlock(&ep->op_lock);
	if (!defer) {
		kdat_ep_reset_finish(ep, id, qp, cq);
		kdat_poller_wait_end(&pw);
	}
	return DAT_SUCCESS;
}

static void kdat_ep_free_finish(struct kdat_ep *ep, struct rdma_cm_id *id,
				struct ib_qp *qp, struct ib_cq *cq,
				struct kdat_cr *cr);

/* The destroy claim is held (object.c): this runs once per EP. */
DAT_RETURN kdat_ib_ep_free(DAT_EP_HANDLE h)
{
	struct kdat_ep *ep = to_ep(h);
	struct kdat_ia *ia = ep->obj.ia;
	struct kdat_poller_wait pw;
	struct rdma_cm_id *id;
	struct kdat_cr *cr;
	struct ib_qp *qp;
	struct ib_cq *cq;
	DAT_EP_STATE s;

	/*
	 * No connection event any more, and none waiting for the recv
	 * poller: before the EP is unpublished, so a teardown that waits
	 * for this free (kdat_obj_claim_wait) waits for that too.
	 *
	 * An EP an RSP reserved, or whose RSP request is pending, is the
	 * consumer's to release first (dat_rsp_free, dat_cr_reject), as in
	 * DAT: refused, except when its IA is being closed.
	 */
	mutex_lock(&ep->op_lock);
	spin_lock_irq(&ep->lock);
	s = ep->state;
	if ((s == DAT_EP_STATE_RESERVED ||
	     s == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING) &&
	    !READ_ONCE(ia->closing)) {
		spin_unlock_irq(&ep->lock);
		mutex_unlock(&ep->op_lock);
		return KDAT_ERR(DAT_INVALID_STATE, kdat_ep_busy_subtype(s));
	}
	/* read unlocked by a parked CM handler (fault.c) */
	WRITE_ONCE(ep->freed, true);
	spin_unlock_irq(&ep->lock);
	/*
	 * A CM handler that read `freed` before this posts its connection
	 * event now, while the EP is still published: let it finish (the
	 * ID is stable under op_lock; detach takes the handler lock so too).
	 */
	id = READ_ONCE(ep->cm_id);
	if (id) {
		rdma_lock_handler(id);
		rdma_unlock_handler(id);
	}
	mutex_unlock(&ep->op_lock);
	/* a run not started yet has nothing to do: drop its reference */
	if (cancel_work(&ep->gone_work))
		kdat_obj_put(&ep->obj);
	kdat_ep_gone_quiesce(ep);

	kdat_ia_unlink(&ep->obj);
	kdat_obj_unpublish(&ep->obj);

	/* an abrupt disconnect, then every outstanding DTO is flushed */
	mutex_lock(&ep->op_lock);
	spin_lock_irq(&ep->lock);
	ep->state = DAT_EP_STATE_DISCONNECTED;
	cr = ep->cr;
	ep->cr = NULL;
	spin_unlock_irq(&ep->lock);
	/* not while the CM handler sends a request on it (connect_lock) */
	mutex_lock(&ep->connect_lock);
	if (ep->cm_id && !kdat_ia_dead(ia))
		rdma_disconnect(ep->cm_id);
	mutex_unlock(&ep->connect_lock);
	/*
	 * As kdat_ep_hw_destroy: the drain waits for the CQs' pollers, whose
	 * upcalls may take the op_lock of an EP whose own free or reset
	 * waits for the same poller.  No call reaches this EP any more (the
	 * free holds its claim).
	 */
	atomic_inc(&ep->hw_teardown);
	cq = kdat_ep_detach_qp(ep, &id, &qp);
	/*
	 * From an upcall of a poller the drain waits for (this QP's, or
	 * that of a reset handed to reset_work), waiting would never end;
	 * nor may an upcall of another poller wait when a poller the drain
	 * waits for is waiting itself, or free the EP's own CQ in place
	 * (kdat_ep_teardown_must_defer).  Then
	 * the rest goes to free_work, as a reset's does, counted as a free
	 * in flight (an IA close and a device removal wait for it).  The EP
	 * is gone for the consumer now; the EVDs, SRQ and PZ it used stay
	 * in use until the work is done.
	 */
	if (kdat_ep_teardown_must_defer(ep, qp, cq, &pw)) {
		ep->free_id = id;
		ep->free_qp = qp;
		ep->free_cq = cq;
		ep->free_cr = cr;
		kdat_free_begin(&ep->obj);
		kdat_obj_queue_work(&ep->obj, kdat_ep_wq, &ep->free_work);
		mutex_unlock(&ep->op_lock);
		return DAT_SUCCESS;
	}
	mutex_unlock(&ep->op_lock);
	kdat_ep_free_finish(ep, id, qp, cq, cr);
	kdat_poller_wait_end(&pw);
	return DAT_SUCCESS;
}

/*
 * The second half of a free, with the EP unpublished and its QP taken:
 * drain and destroy the QP (every posted buffer completes), wait for a
 * reset's or removal's drain, and give back what the EP used.
 */
static void kdat_ep_free_finish(struct kdat_ep *ep, struct rdma_cm_id *id,
				struct ib_qp *qp, struct ib_cq *cq,
				struct kdat_cr *cr)
{
	struct kdat_ia *ia = ep->obj.ia;

	kdat_ep_finish_qp(ep, id, qp);
	kdat_ep_free_cq(cq);
	if (atomic_dec_and_test(&ep->hw_teardown))
		wake_up_var(&ep->hw_teardown);
	kdat_ep_wait_hw_teardown(ep);
	kdat_ep_flush_pending(ep, NULL, true);
	kdat_ep_ring_close(ep);
	/* the ring is dead: a drain handed on before ends here, not later */
	kdat_obj_cancel_drain_sync(&ep->obj, &ep->sring_work);
	if (cr)
		kdat_obj_put(&cr->obj);

	mutex_lock(&ia->lock);
	if (ep->recv_evd) {
		kdat_evd_leave_stream(ep->recv_evd);
		atomic_dec(&ep->recv_evd->users);
	}
	if (ep->request_evd) {
		kdat_evd_leave_stream(ep->request_evd);
		atomic_dec(&ep->request_evd->users);
	}
	if (ep->connect_evd && ep->connect_evd->obj.ia == ia)
		atomic_dec(&ep->connect_evd->users);
	if (ep->srq)
		atomic_dec(&ep->srq->eps);
	atomic_dec(&ep->pz->users);
	mutex_unlock(&ia->lock);
	if (ep->connect_evd && ep->connect_evd->obj.ia != ia)
		kdat_evd_drop_foreign_user(ep->connect_evd);
}

/* A free called from an upcall of a poller its drain waits for. */
static void kdat_ep_free_work(struct work_struct *w)
{
	struct kdat_ep *ep = container_of(w, struct kdat_ep, free_work);

	kdat_ep_free_finish(ep, ep->free_id, ep->free_qp, ep->free_cq,
			    ep->free_cr);
	kdat_free_end(&ep->obj);
	kdat_obj_put(&ep->obj);
}
