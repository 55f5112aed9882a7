/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * raw_srv.h: kdat_bench's server on plain ib_core verbs, the floor under
 * kdat's SRQ server (kdat_bench.c peer=raw).
 *
 * The same loop as kdat's server, without the DAT layer: rdma_cm listens
 * on the server address and the PSP's port, each connection request gets
 * an RC QP whose receives come from one ib_srq (or, with rq > 0, a receive
 * queue of its own of rq buffers) and is accepted from the CM handler;
 * one ib_cq polled in IB_POLL_WORKQUEUE context (the context kdat's kernel
 * EVDs use) takes every receive completion, and its handler re-posts the
 * buffer at once with ib_post_srq_recv (ib_post_recv on the QP with rq)
 * and counts the message.  The connection parameters are kdat's: RNR
 * timer 12 (0.64 ms), retry and RNR retry counts 7.
 *
 * Receive buffers are slices of one DMA-mapped kmalloc'd buffer, named by
 * the PD's local_dma_lkey, as kdat's kernel LMRs are.
 */
#ifndef RAW_SRV_H
#define RAW_SRV_H

#include <linux/in.h>
#include <linux/inet.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <net/net_namespace.h>

#define RAW_MIN_RNR_TIMER	12	/* kdat's min_rnr_timer default */

struct raw_buf {
	struct ib_cqe cqe;
	struct ib_sge sge;
	struct raw_srv *srv;
};

struct raw_srv {
	int neps, size, depth, rq;	/* rq: per-QP receive queue, 0: SRQ */
	bool stopping;
	void *ctx;			/* the bench's, for the callbacks */
	void (*on_recv)(void *ctx);	/* a message arrived (buffer back) */
	void (*on_error)(void *ctx);	/* a receive failed */
	struct rdma_cm_id *listen;
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_srq *srq;
	struct rdma_cm_id **ids;	/* accepted connections */
	atomic_t nconn;
	atomic_t established;
	void *buf;
	size_t buf_len;
	u64 dma;
	struct raw_buf *bufs;		/* one per receive buffer */
	int nbufs;
	char why[96];
};

static void raw_fail(struct raw_srv *s, const char *why, int err)
{
	if (!s->why[0])
		snprintf(s->why, sizeof(s->why), "raw server: %s (%d)", why, err);
}

static int raw_post(struct raw_srv *s, struct ib_qp *qp, struct raw_buf *b)
{
	struct ib_recv_wr wr = { .wr_cqe = &b->cqe, .sg_list = &b->sge,
				 .num_sge = 1 };
	const struct ib_recv_wr *bad;

	return qp ? ib_post_recv(qp, &wr, &bad) :
		    ib_post_srq_recv(s->srq, &wr, &bad);
}

/* The loop: give the buffer straight back, then count the message. */
static void raw_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw_buf *b = container_of(wc->wr_cqe, struct raw_buf, cqe);
	struct raw_srv *s = b->srv;

	if (wc->status != IB_WC_SUCCESS ||
	    wc->byte_len != (u32)s->size) {
		/* buffers a QP held are flushed when it goes away */
		if (!READ_ONCE(s->stopping))
			s->on_error(s->ctx);
		return;
	}
	if (raw_post(s, s->rq ? wc->qp : NULL, b))
		s->on_error(s->ctx);
	s->on_recv(s->ctx);
}

/* A connection request: its QP on the SRQ (or its own RQ), accepted here. */
static int raw_conn_request(struct raw_srv *s, struct rdma_cm_id *id,
			    struct rdma_cm_event *e)
{
	struct ib_qp_init_attr qa = {
		.qp_context = s,
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.srq = s->rq ? NULL : s->srq,
		.cap = { .max_send_wr = 1, .max_send_sge = 1,
			 .max_recv_wr = s->rq, .max_recv_sge = s->rq ? 1 : 0 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct rdma_conn_param cp = {
		.responder_resources = e->param.conn.initiator_depth,
		.initiator_depth = e->param.conn.responder_resources,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	int i = atomic_inc_return(&s->nconn) - 1, j, err;

	if (i >= s->neps || READ_ONCE(s->stopping))
		return -ENOSPC;		/* rdma_cm rejects and destroys it */
	rdma_set_min_rnr_timer(id, RAW_MIN_RNR_TIMER);
	err = rdma_create_qp(id, s->pd, &qa);
	if (err) {
		raw_fail(s, "rdma_create_qp", err);
		return err;
	}
	for (j = 0; j < s->rq; j++) {
		err = raw_post(s, id->qp, &s->bufs[i * s->rq + j]);
		if (err) {
			raw_fail(s, "ib_post_recv", err);
			rdma_destroy_qp(id);
			return err;
		}
	}
	err = rdma_accept(id, &cp);
	if (err) {
		raw_fail(s, "rdma_accept", err);
		rdma_destroy_qp(id);
		return err;
	}
	WRITE_ONCE(s->ids[i], id);	/* ours now: destroyed at the end */
	return 0;
}

static int raw_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *e)
{
	struct raw_srv *s = id->context;

	switch (e->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return raw_conn_request(s, id, e);
	case RDMA_CM_EVENT_ESTABLISHED:
		atomic_inc(&s->established);
		break;
	default:
		/* disconnects: the QP stays until raw_srv_stop */
		break;
	}
	return 0;
}

/*
 * Listen on @addr:@port with an SRQ of s->depth buffers (or s->rq per QP)
 * of s->size bytes, all posted.  0 or a negative errno (s->why says why).
 */
static int raw_srv_start(struct raw_srv *s, const char *addr, u16 port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	struct ib_srq_init_attr sa = {
		.attr = { .max_wr = s->depth, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	int i, err, ncqe;

	s->nbufs = s->rq ? s->neps * s->rq : s->depth;
	s->ids = kcalloc(s->neps, sizeof(*s->ids), GFP_KERNEL);
	s->bufs = kvcalloc(s->nbufs, sizeof(*s->bufs), GFP_KERNEL);
	s->buf_len = (size_t)s->nbufs * s->size;
	s->buf = kzalloc(s->buf_len, GFP_KERNEL);
	if (!s->ids || !s->bufs || !s->buf) {
		raw_fail(s, "no memory", -ENOMEM);
		return -ENOMEM;
	}
	sin.sin_addr.s_addr = in_aton(addr);
	s->listen = rdma_create_id(&init_net, raw_cm_handler, s, RDMA_PS_TCP,
				   IB_QPT_RC);
	if (IS_ERR(s->listen)) {
		err = PTR_ERR(s->listen);
		s->listen = NULL;
		raw_fail(s, "rdma_create_id", err);
		return err;
	}
	err = rdma_bind_addr(s->listen, (struct sockaddr *)&sin);
	if (err || !s->listen->device) {
		raw_fail(s, "rdma_bind_addr", err ?: -ENODEV);
		return err ?: -ENODEV;
	}
	s->dev = s->listen->device;
	s->pd = ib_alloc_pd(s->dev, 0);
	if (IS_ERR(s->pd)) {
		err = PTR_ERR(s->pd);
		s->pd = NULL;
		raw_fail(s, "ib_alloc_pd", err);
		return err;
	}
	ncqe = s->nbufs + s->neps + 16;
	s->cq = ib_alloc_cq(s->dev, s, ncqe, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(s->cq)) {
		err = PTR_ERR(s->cq);
		s->cq = NULL;
		raw_fail(s, "ib_alloc_cq", err);
		return err;
	}
	s->dma = ib_dma_map_single(s->dev, s->buf, s->buf_len,
				   DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(s->dev, s->dma)) {
		s->dma = 0;
		raw_fail(s, "ib_dma_map_single", -ENOMEM);
		return -ENOMEM;
	}
	for (i = 0; i < s->nbufs; i++) {
		s->bufs[i].srv = s;
		s->bufs[i].cqe.done = raw_recv_done;
		s->bufs[i].sge.addr = s->dma + (u64)i * s->size;
		s->bufs[i].sge.length = s->size;
		s->bufs[i].sge.lkey = s->pd->local_dma_lkey;
	}
	if (!s->rq) {
		s->srq = ib_create_srq(s->pd, &sa);
		if (IS_ERR(s->srq)) {
			err = PTR_ERR(s->srq);
			s->srq = NULL;
			raw_fail(s, "ib_create_srq", err);
			return err;
		}
		for (i = 0; i < s->depth; i++) {
			err = raw_post(s, NULL, &s->bufs[i]);
			if (err) {
				raw_fail(s, "ib_post_srq_recv", err);
				return err;
			}
		}
	}
	err = rdma_listen(s->listen, 128);
	if (err)
		raw_fail(s, "rdma_listen", err);
	return err;
}

/* Tear down whatever raw_srv_start built; the clients are gone already. */
static void raw_srv_stop(struct raw_srv *s)
{
	int i;

	/* no request comes any more (the clients are closed) */
	WRITE_ONCE(s->stopping, true);
	/* waits for its handler: no QP is made on s->cq after this */
	if (s->listen)
		rdma_destroy_id(s->listen);
	s->listen = NULL;
	for (i = 0; s->ids && i < s->neps; i++) {
		if (!s->ids[i])
			continue;
		/* a per-QP queue's poller re-posts into the QP: let it pass */
		if (s->rq && s->ids[i]->qp)
			ib_drain_qp(s->ids[i]->qp);
		rdma_destroy_qp(s->ids[i]);
		rdma_destroy_id(s->ids[i]);
	}
	if (s->cq)
		ib_free_cq(s->cq);
	if (s->srq)
		ib_destroy_srq(s->srq);
	if (s->dma)
		ib_dma_unmap_single(s->dev, s->dma, s->buf_len,
				    DMA_BIDIRECTIONAL);
	if (s->pd)
		ib_dealloc_pd(s->pd);
	kfree(s->buf);
	kvfree(s->bufs);
	kfree(s->ids);
}

#endif /* RAW_SRV_H */
