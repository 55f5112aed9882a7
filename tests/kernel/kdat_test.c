// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kdat_test: a kernel consumer that behaves like a storage driver and runs
 * one named case per checkable statement of the SRQ man pages, over real
 * RC connections between two IAs (rxe0 <-> rxe1 in the guest).
 *
 * Every case builds its own objects and frees them; after each case the
 * runner checks that the provider holds no live object.  Results go to the
 * kernel log as "kdat_test: ok <name>" / "kdat_test: not ok <name>: why"
 * and a final "kdat_test: N passed, N failed".  Waits are bounded only so
 * a broken provider cannot hang the run; nothing asserts on time.
 *
 * mode=catastrophe runs the device-removal case instead: it opens an IA
 * with live objects on dev_ia and waits for the test script to delete
 * that device (rdma link delete), then checks what consumers see.
 *
 * mode=orphan leaves both IAs open with connected EPs, an SRQ, a posted
 * receive and an upcall into this module, and a third IA opened from its
 * init text, and its exit closes nothing:
 * a consumer that forgot its IAs.  kdat must close them at this module's
 * unload (the upcall must not run after its exit), or, when it cannot
 * tell who opened them (debugfs fault_no_opener), turn the upcall off
 * then and close them at its own unload.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/kmemleak.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/sched/task.h>
#include <linux/completion.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <rdma/ib_verbs.h>
#include <dat/kdat.h>
#include "kt_conn.h"
#include "../../kernel/kdat_hooks.h"

static char *srv_ia = "rxe0";
static char *cli_ia = "rxe1";
static char *srv_addr = "192.0.2.1";
static char *mode = "all";
static char *only = "";
static char *dev_ia = "rxe1";
module_param(srv_ia, charp, 0444);
module_param(cli_ia, charp, 0444);
module_param(srv_addr, charp, 0444);
module_param(mode, charp, 0444);
module_param(only, charp, 0444);
module_param(dev_ia, charp, 0444);

#define WAIT_MS		10000
#define QUAL_BASE	4000

static int passed, failed;
static const char *cur_test;
static bool cur_failed;
static u16 next_qual = QUAL_BASE;

#define CHECK(cond, fmt, ...)						\
	do {								\
		if (!(cond)) {						\
			pr_err("kdat_test: not ok %s: %s:%d: " fmt "\n",\
			       cur_test, __func__, __LINE__, ##__VA_ARGS__); \
			cur_failed = true;				\
			goto out;					\
		}							\
	} while (0)

#define CHECK_RET(expr, want)						\
	do {								\
		DAT_RETURN __r = (expr);				\
		CHECK(DAT_GET_TYPE(__r) == DAT_GET_TYPE(want),		\
		      "%s = 0x%x, want type 0x%x", #expr, __r,		\
		      DAT_GET_TYPE(want));				\
	} while (0)

#define CHECK_OK(expr)	CHECK_RET(expr, DAT_SUCCESS)

/* The whole DAT_RETURN: class, type and subtype. */
#define CHECK_EXACT(expr, want)						\
	do {								\
		DAT_RETURN __r = (expr);				\
		CHECK(__r == (DAT_RETURN)(want), "%s = 0x%x, want 0x%x", \
		      #expr, __r, (DAT_RETURN)(want));			\
	} while (0)

#define BAD_ARG(n)	(DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | (n))

/* Wait for @cond to become true; false if it never did. */
#define WAIT_FOR(cond)							\
	({								\
		unsigned long __end = jiffies + msecs_to_jiffies(WAIT_MS); \
		bool __ok;						\
		while (!(__ok = (cond)) && time_before(jiffies, __end))	\
			usleep_range(200, 1000);			\
		__ok;							\
	})

/* ------------------------------------------------------------------ */
/* Fixture: one side of a connection (struct kt_side, kt_conn.h)       */

static struct kt_ctx kt = { .name = "kdat_test", .log = true };

struct pair {
	struct kt_side s, c;		/* server (SRQ owner) and client */
	DAT_SRQ_HANDLE srq;
	DAT_PSP_HANDLE psp;
	int n;
	DAT_EP_HANDLE sep[128], cep[128];
};

/*
 * Local privileges: remote ones need the PZ's global rkey, which the
 * module hands out only when loaded with remote_access=1 (the RDMA case
 * below); by default a kernel LMR asking for them is refused.
 */
#define KT_LOCAL_PRIV	(DAT_MEM_PRIV_LOCAL_READ_FLAG | \
			 DAT_MEM_PRIV_LOCAL_WRITE_FLAG)

static DAT_RETURN lmr_on(struct kt_side *x, DAT_PZ_HANDLE pz, void *buf,
			 size_t len, DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *ctx)
{
	return kt_lmr_create(x->ia, pz, buf, len, KT_LOCAL_PRIV, lmr, ctx);
}

static int side_open(struct kt_side *x, const char *name, size_t buf_len)
{
	memset(x, 0, sizeof(*x));
	x->buf_len = buf_len;
	x->buf = kzalloc(buf_len, GFP_KERNEL);
	if (!x->buf)
		return -ENOMEM;
	return kt_side_open(&kt, x, name, NULL, 4096, 256, 256, KT_LOCAL_PRIV);
}

static void side_close(struct kt_side *x)
{
	if (x->ia)
		dat_ia_close(x->ia, DAT_CLOSE_ABRUPT_FLAG);
	kfree(x->buf);
	memset(x, 0, sizeof(*x));
}

static DAT_LMR_TRIPLET seg(struct kt_side *x, size_t off, size_t len)
{
	DAT_LMR_TRIPLET t = {
		.lmr_context = x->lmr_ctx,
		.virtual_address = (DAT_VADDR)(uintptr_t)x->buf + off,
		.segment_length = len,
	};
	return t;
}

static DAT_DTO_COOKIE cookie(u64 v)
{
	DAT_DTO_COOKIE c = { .as_64 = v };

	return c;
}

/* Dequeue the next event of @evd, waiting for it. */
static bool next_event(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
	return WAIT_FOR(dat_evd_dequeue(evd, ev) == DAT_SUCCESS);
}

static bool no_event(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;

	return DAT_GET_TYPE(dat_evd_dequeue(evd, &ev)) == DAT_QUEUE_EMPTY;
}

static DAT_EP_ATTR ep_attr(void)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_message_size = 4096,
		.max_rdma_size = 4096,
		.qos = DAT_QOS_BEST_EFFORT,
		.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
		.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
		.max_recv_dtos = 64,
		.max_request_dtos = 64,
		.max_recv_iov = 2,
		.max_request_iov = 2,
	};
	return a;
}

static DAT_SRQ_PARAM srq_q(DAT_SRQ_HANDLE srq)
{
	DAT_SRQ_PARAM p = {};

	if (dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p))
		p.max_recv_dtos = -1;
	return p;
}

/*
 * Connect server EP @sep to client EP @cep through the pair's PSP (created
 * on first use); both see ESTABLISHED.  The CR carries @tag as private data.
 */
static int connect_one(struct pair *p, DAT_EP_HANDLE sep, DAT_EP_HANDLE cep,
		       u32 tag)
{
	if (!p->psp) {
		if (dat_psp_create(p->s.ia, next_qual, p->s.cr_evd,
				   DAT_PSP_CONSUMER_FLAG, &p->psp))
			return -EADDRINUSE;
	}
	return kt_connect(&kt, &p->s, &p->c, srv_addr, next_qual, &sep, &cep,
			  tag, 1, NULL);
}

/*
 * Open both sides, an SRQ of @depth on the server and @n connected pairs;
 * the server's IA gets the kdat flags @srv_flags (kdat_ia_set_flags).
 */
static int pair_open_flags(struct pair *p, int n, DAT_COUNT depth,
			   DAT_UINT32 srv_flags)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = depth, .max_recv_iov = 2,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	DAT_EP_ATTR a = ep_attr();
	int i, ret;

	memset(p, 0, sizeof(*p));
	next_qual++;
	if (side_open(&p->s, srv_ia, 1 << 20) || side_open(&p->c, cli_ia, 1 << 20))
		return -ENODEV;
	if (srv_flags && kdat_ia_set_flags(p->s.ia, srv_flags))
		return -EINVAL;
	if (dat_srq_create(p->s.ia, p->s.pz, &sa, &p->srq))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (kt_eps_create(&kt, &p->s, p->srq, &p->c, &a, &p->sep[i],
				  &p->cep[i], 1))
			return -ENOMEM;
		ret = connect_one(p, p->sep[i], p->cep[i], i);
		if (ret) {
			pr_err("kdat_test: %s: connect %d failed: %d\n",
			       cur_test, i, ret);
			return ret;
		}
		p->n++;
	}
	return 0;
}

static int pair_open(struct pair *p, int n, DAT_COUNT depth)
{
	return pair_open_flags(p, n, depth, 0);
}

static void pair_close(struct pair *p)
{
	side_close(&p->c);
	side_close(&p->s);
}

/*
 * A client EP on @recv and @req (kernel EVDs of the client side, maybe
 * with upcalls) connected to a new server SRQ EP (*@sep, if asked).
 */
static int client_ep_connected(struct pair *p, DAT_EVD_HANDLE recv,
			       DAT_EVD_HANDLE req, u32 tag,
			       DAT_EP_HANDLE *cep, DAT_EP_HANDLE *sep)
{
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE s;

	if (dat_ep_create(p->c.ia, p->c.pz, recv, req, p->c.conn_evd, &a,
			  cep) ||
	    dat_ep_create_with_srq(p->s.ia, p->s.pz, p->s.dto_evd,
				   p->s.dto_evd, p->s.conn_evd, p->srq, &a,
				   &s))
		return -ENOMEM;
	if (sep)
		*sep = s;
	return connect_one(p, s, *cep, tag);
}

/* Client EP @i sends @len bytes from its buffer at @off; waits for it. */
static bool send_msg(struct pair *p, int i, size_t off, size_t len, u64 ck)
{
	DAT_LMR_TRIPLET t = seg(&p->c, off, len);
	DAT_EVENT ev;

	if (dat_ep_post_send(p->cep[i], 1, &t, cookie(ck),
			     DAT_COMPLETION_DEFAULT_FLAG))
		return false;
	return next_event(p->c.dto_evd, &ev) &&
	       ev.event_data.dto_completion_event_data.status ==
	       DAT_DTO_SUCCESS;
}

static DAT_RETURN post_srq(struct pair *p, size_t off, size_t len, u64 ck)
{
	DAT_LMR_TRIPLET t = seg(&p->s, off, len);

	return dat_srq_post_recv(p->srq, 1, &t, cookie(ck));
}

#define BAD_STATE(sub)	(DAT_CLASS_ERROR | DAT_INVALID_STATE | (sub))
#define BAD_HANDLE(sub)	(DAT_CLASS_ERROR | DAT_INVALID_HANDLE | (sub))

static DAT_EP_STATE ep_state(DAT_EP_HANDLE ep)
{
	DAT_EP_STATE st = (DAT_EP_STATE)-1;

	dat_ep_get_status(ep, &st, NULL, NULL);
	return st;
}

/* A plain (no SRQ) EP on @x. */
static DAT_RETURN plain_ep(struct kt_side *x, DAT_EP_HANDLE *ep)
{
	DAT_EP_ATTR a = ep_attr();

	return dat_ep_create(x->ia, x->pz, x->dto_evd, x->dto_evd, x->conn_evd,
			     &a, ep);
}

static DAT_RETURN connect_to(DAT_EP_HANDLE cep, DAT_CONN_QUAL qual,
			     DAT_COUNT len, const void *pdata)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = in_aton(srv_addr);
	return dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, qual,
			      DAT_TIMEOUT_INFINITE, len, (DAT_PVOID)pdata,
			      DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
}

/* ------------------------------------------------------------------ */
/* dat_srq_create                                                      */

static void t_srq_create_bad_handles(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1 };
	struct kt_side x = {}, y = {};
	DAT_SRQ_HANDLE srq;
	DAT_PZ_HANDLE freed;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK(!side_open(&y, cli_ia, 4096), "open");
	CHECK_RET(dat_srq_create(NULL, x.pz, &sa, &srq), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_create(x.pz, x.pz, &sa, &srq), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_create(x.ia, NULL, &sa, &srq), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_create(x.ia, x.ia, &sa, &srq), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_create(x.ia, x.dto_evd, &sa, &srq),
		  DAT_INVALID_HANDLE);
	/* a PZ of another IA is not a PZ of this one */
	CHECK_RET(dat_srq_create(x.ia, y.pz, &sa, &srq), DAT_INVALID_HANDLE);
	CHECK_OK(dat_pz_create(x.ia, &freed));
	CHECK_OK(dat_pz_free(freed));
	CHECK_RET(dat_srq_create(x.ia, freed, &sa, &srq), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_create((DAT_IA_HANDLE)&sa, x.pz, &sa, &srq),
		  DAT_INVALID_HANDLE);
out:
	side_close(&y);
	side_close(&x);
}

static void t_srq_create_bad_attr(void)
{
	DAT_IA_ATTR ia_attr;
	DAT_SRQ_ATTR sa;
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	long before;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	before = kdat_live_objects();
	CHECK_OK(dat_ia_query(x.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL));
	CHECK_RET(dat_srq_create(x.ia, x.pz, NULL, &srq),
		  DAT_INVALID_PARAMETER);
	sa = (DAT_SRQ_ATTR){ .max_recv_dtos = 0, .max_recv_iov = 1 };
	CHECK_RET(dat_srq_create(x.ia, x.pz, &sa, &srq),
		  DAT_INVALID_PARAMETER);
	sa = (DAT_SRQ_ATTR){ .max_recv_dtos = -5, .max_recv_iov = 1 };
	CHECK_RET(dat_srq_create(x.ia, x.pz, &sa, &srq),
		  DAT_INVALID_PARAMETER);
	sa = (DAT_SRQ_ATTR){ .max_recv_dtos = 8, .max_recv_iov = 0 };
	CHECK_RET(dat_srq_create(x.ia, x.pz, &sa, &srq),
		  DAT_INVALID_PARAMETER);
	sa = (DAT_SRQ_ATTR){ .max_recv_dtos = ia_attr.max_recv_per_srq + 1,
			     .max_recv_iov = 1 };
	CHECK_RET(dat_srq_create(x.ia, x.pz, &sa, &srq),
		  DAT_INVALID_PARAMETER);
	/* a watermark above the queue size is an invalid combination */
	sa = (DAT_SRQ_ATTR){ .max_recv_dtos = 8, .max_recv_iov = 1,
			     .low_watermark = 9 };
	CHECK_RET(dat_srq_create(x.ia, x.pz, &sa, &srq),
		  DAT_INVALID_PARAMETER);
	sa = (DAT_SRQ_ATTR){ .max_recv_dtos = 8, .max_recv_iov = 1 };
	CHECK_RET(dat_srq_create(x.ia, x.pz, &sa, NULL),
		  DAT_INVALID_PARAMETER);
	CHECK(kdat_live_objects() == before, "a refused create left an object");
out:
	side_close(&x);
}

static void t_srq_create_attributes_at_least_requested(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 2,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_SRQ_PARAM q;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	q = srq_q(srq);
	CHECK(q.max_recv_dtos >= 10, "max_recv_dtos %d", q.max_recv_dtos);
	CHECK(q.max_recv_iov >= 2, "max_recv_iov %d", q.max_recv_iov);
	CHECK(q.ia_handle == x.ia && q.pz_handle == x.pz, "handles");
	CHECK(q.srq_state == DAT_SRQ_STATE_OPERATIONAL, "state %d",
	      q.srq_state);
	CHECK(q.low_watermark == DAT_SRQ_LW_DEFAULT, "lw %d", q.low_watermark);
	/* a new SRQ holds no buffer */
	CHECK(q.available_dto_count == 0 && q.outstanding_dto_count == 0,
	      "counts %d/%d", q.available_dto_count, q.outstanding_dto_count);
	/* with the default watermark no event comes from the empty queue */
	CHECK(no_event(x.async_evd), "async event on create");
	CHECK_OK(dat_srq_free(srq));
out:
	side_close(&x);
}

static void t_srq_create_nondefault_lw_fires_at_once(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1,
			    .low_watermark = 2 };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq = NULL;
	DAT_EVENT ev;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK(next_event(x.async_evd, &ev), "no watermark event");
	CHECK(ev.event_data.asynch_error_event_data.dat_handle == srq &&
	      ev.event_data.asynch_error_event_data.reason ==
	      DAT_SRQ_LOW_WATERMARK_EVENT, "wrong event");
	CHECK(no_event(x.async_evd), "second event");
out:
	side_close(&x);
}

static void t_srq_create_mt_safe(void)
{
	/* dat_srq_create is MT-safe: many SRQs on one PZ are independent */
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	DAT_SRQ_HANDLE srq[16];
	struct kt_side x = {};
	int i;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	for (i = 0; i < 16; i++)
		CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq[i]));
	for (i = 0; i < 16; i++)
		CHECK(srq_q(srq[i]).max_recv_dtos >= 4, "srq %d", i);
	for (i = 0; i < 16; i++)
		CHECK_OK(dat_srq_free(srq[i]));
out:
	side_close(&x);
}

/* ------------------------------------------------------------------ */
/* dat_srq_query                                                       */

static void t_srq_query_worked_example(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_SRQ_PARAM q;
	DAT_EVENT ev;
	int i;

	CHECK(!pair_open(&p, 1, 10), "setup");
	for (i = 0; i < 3; i++)
		CHECK_OK(post_srq(&p, i * 256, 256, i));
	q = srq_q(p.srq);
	CHECK(q.max_recv_dtos == 10 && q.available_dto_count == 3 &&
	      q.outstanding_dto_count == 3, "posted: %d/%d/%d",
	      q.max_recv_dtos, q.available_dto_count, q.outstanding_dto_count);
	CHECK(send_msg(&p, 0, 0, 64, 100), "send");
	CHECK(WAIT_FOR(srq_q(p.srq).available_dto_count == 2), "arrival");
	q = srq_q(p.srq);
	CHECK(q.max_recv_dtos == 10 && q.available_dto_count == 2 &&
	      q.outstanding_dto_count == 3, "arrived: %d/%d/%d",
	      q.max_recv_dtos, q.available_dto_count, q.outstanding_dto_count);
	CHECK(next_event(p.s.dto_evd, &ev), "no completion");
	q = srq_q(p.srq);
	CHECK(q.max_recv_dtos == 10 && q.available_dto_count == 2 &&
	      q.outstanding_dto_count == 2, "dequeued: %d/%d/%d",
	      q.max_recv_dtos, q.available_dto_count, q.outstanding_dto_count);
out:
	pair_close(&p);
}

static void t_srq_query_bad_args(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_SRQ_PARAM q;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_RET(dat_srq_query(srq, 0x100, &q), DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, NULL),
		  DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_query(NULL, DAT_SRQ_FIELD_ALL, &q),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_query(x.pz, DAT_SRQ_FIELD_ALL, &q),
		  DAT_INVALID_HANDLE);
	/* each mask bit alone is valid */
	CHECK_OK(dat_srq_query(srq, DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT, &q));
	CHECK(q.available_dto_count == 0, "available %d",
	      q.available_dto_count);
	CHECK_OK(dat_srq_query(srq, DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT, &q));
	CHECK(q.outstanding_dto_count == 0, "outstanding");
	CHECK_OK(dat_srq_free(srq));
	CHECK_RET(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &q),
		  DAT_INVALID_HANDLE);
out:
	side_close(&x);
}

/* ------------------------------------------------------------------ */
/* dat_srq_post_recv                                                   */

static void t_srq_post_recv_bad_args(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 2 };
	DAT_LMR_TRIPLET t[3];
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	int i;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	for (i = 0; i < 3; i++)
		t[i] = seg(&x, i * 64, 64);
	CHECK_RET(dat_srq_post_recv(NULL, 1, t, cookie(1)),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_post_recv(x.pz, 1, t, cookie(1)),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_post_recv(srq, 3, t, cookie(1)),
		  DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_post_recv(srq, -1, t, cookie(1)),
		  DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_post_recv(srq, 1, NULL, cookie(1)),
		  DAT_INVALID_PARAMETER);
	t[0].lmr_context = 0x7fff0000;
	CHECK_RET(dat_srq_post_recv(srq, 1, t, cookie(1)),
		  DAT_INVALID_PARAMETER);
	t[0] = seg(&x, 4000, 200);	/* runs past the end of the LMR */
	CHECK_RET(dat_srq_post_recv(srq, 1, t, cookie(1)),
		  DAT_INVALID_PARAMETER);
	t[0] = seg(&x, 0, 64);
	t[0].virtual_address -= 1;	/* starts before the LMR */
	CHECK_RET(dat_srq_post_recv(srq, 1, t, cookie(1)),
		  DAT_INVALID_PARAMETER);
	/* nothing refused was posted */
	CHECK(srq_q(srq).outstanding_dto_count == 0, "refused post counted");
	/* the queue holds max_recv_dtos; one more needs resources */
	t[0] = seg(&x, 0, 64);
	for (i = 0; i < 4; i++)
		CHECK_OK(dat_srq_post_recv(srq, 1, t, cookie(i)));
	CHECK_RET(dat_srq_post_recv(srq, 1, t, cookie(9)),
		  DAT_INSUFFICIENT_RESOURCES);
	CHECK(srq_q(srq).available_dto_count == 4, "available");
out:
	side_close(&x);
}

static void t_srq_post_recv_pz_mismatch_is_protection_violation(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_PZ_HANDLE pz2;
	DAT_LMR_HANDLE lmr2;
	DAT_LMR_CONTEXT ctx2;
	DAT_LMR_TRIPLET t;
	void *buf2 = kzalloc(4096, GFP_KERNEL);

	CHECK(buf2 && !side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_pz_create(x.ia, &pz2));
	CHECK_OK(lmr_on(&x, pz2, buf2, 4096, &lmr2, &ctx2));
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	t = (DAT_LMR_TRIPLET){ .lmr_context = ctx2,
			       .virtual_address = (uintptr_t)buf2,
			       .segment_length = 64 };
	CHECK_RET(dat_srq_post_recv(srq, 1, &t, cookie(1)),
		  DAT_PROTECTION_VIOLATION);
	CHECK(srq_q(srq).available_dto_count == 0, "posted anyway");
	/* the matching PZ works */
	t = seg(&x, 0, 64);
	CHECK_OK(dat_srq_post_recv(srq, 1, &t, cookie(1)));
out:
	side_close(&x);
	kfree(buf2);
}

static void t_srq_post_recv_privileges(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	DAT_REGION_DESCRIPTION r;
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_LMR_HANDLE lmr2;
	DAT_LMR_CONTEXT ctx2;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN rsize;
	DAT_VADDR raddr;
	DAT_LMR_TRIPLET t;
	void *buf2 = kzalloc(4096, GFP_KERNEL);

	CHECK(buf2 && !side_open(&x, srv_ia, 4096), "open");
	r.for_va = buf2;
	CHECK_OK(dat_lmr_kcreate(x.ia, DAT_MEM_TYPE_VIRTUAL, r, 4096, x.pz,
				 DAT_MEM_PRIV_LOCAL_READ_FLAG,
				 DAT_MEM_OPTIMIZE_DONT_CARE, &lmr2, &ctx2,
				 &rctx, &rsize, &raddr));
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	t = (DAT_LMR_TRIPLET){ .lmr_context = ctx2,
			       .virtual_address = (uintptr_t)buf2,
			       .segment_length = 64 };
	/* a receive writes the buffer: a read-only LMR will not do */
	CHECK_RET(dat_srq_post_recv(srq, 1, &t, cookie(1)),
		  DAT_PRIVILEGES_VIOLATION);
out:
	side_close(&x);
	kfree(buf2);
}

static void t_srq_completion_names_dequeuing_ep_and_cookie(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EVENT ev;
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
	int i, seen = 0;

	CHECK(!pair_open(&p, 3, 16), "setup");
	for (i = 0; i < 3; i++)
		CHECK_OK(post_srq(&p, i * 256, 256, 0xc0de0000 + i));
	memcpy(p.c.buf, "hello", 6);
	CHECK(send_msg(&p, 2, 0, 6, 1), "send");
	CHECK(next_event(p.s.dto_evd, &ev), "no completion");
	CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT, "event %x",
	      ev.event_number);
	CHECK(d->ep_handle == p.sep[2], "completion names %p, not EP %p",
	      d->ep_handle, p.sep[2]);
	CHECK(d->ep_handle != p.srq, "completion names the SRQ");
	CHECK(d->status == DAT_DTO_SUCCESS && d->transfered_length == 6,
	      "status %d len %llu", d->status,
	      (unsigned long long)d->transfered_length);
	CHECK((d->user_cookie.as_64 & ~3ULL) == 0xc0de0000, "cookie %llx",
	      (unsigned long long)d->user_cookie.as_64);
	i = d->user_cookie.as_64 & 3;
	CHECK(!memcmp((char *)p.s.buf + i * 256, "hello", 6), "data");
	seen++;
out:
	pair_close(&p);
}

static void t_srq_post_recv_fills_segments_in_order(void)
{
	DAT_LMR_TRIPLET t[2];
	static struct pair p;	/* too big for the stack */
	DAT_EVENT ev;
	u8 *s, *c;
	int i;

	CHECK(!pair_open(&p, 1, 4), "setup");
	s = p.s.buf;
	c = p.c.buf;
	memset(s, 0xee, 512);
	for (i = 0; i < 24; i++)
		c[i] = i + 1;
	t[0] = seg(&p.s, 0, 16);
	t[1] = seg(&p.s, 256, 16);
	CHECK_OK(dat_srq_post_recv(p.srq, 2, t, cookie(7)));
	CHECK(send_msg(&p, 0, 0, 24, 1), "send");
	CHECK(next_event(p.s.dto_evd, &ev), "no completion");
	CHECK(ev.event_data.dto_completion_event_data.transfered_length == 24,
	      "len");
	/* the front segment is filled, then the next one partially */
	CHECK(!memcmp(s, c, 16), "first segment");
	CHECK(!memcmp(s + 256, c + 16, 8), "second segment");
	CHECK(s[264] == 0xee, "wrote past the message");
out:
	pair_close(&p);
}

static void t_srq_post_recv_valid_in_error_free_states(void)
{
	/* posting works before any EP is attached, and after EPs left */
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep;
	DAT_EP_ATTR a = ep_attr();
	DAT_LMR_TRIPLET t;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	t = seg(&x, 0, 64);
	CHECK_OK(dat_srq_post_recv(srq, 1, &t, cookie(1)));
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	CHECK_OK(dat_srq_post_recv(srq, 1, &t, cookie(2)));
	CHECK_OK(dat_ep_free(ep));
	CHECK_OK(dat_srq_post_recv(srq, 1, &t, cookie(3)));
	CHECK(srq_q(srq).available_dto_count == 3, "available");
out:
	side_close(&x);
}

static void t_srq_no_buffer_behaves_like_empty_recv_queue(void)
{
	/* a message for an empty SRQ waits (RNR) until a buffer is posted */
	static struct pair p;	/* too big for the stack */
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 1, 4), "setup");
	t = seg(&p.c, 0, 32);
	CHECK_OK(dat_ep_post_send(p.cep[0], 1, &t, cookie(1),
				  DAT_COMPLETION_DEFAULT_FLAG));
	msleep(50);	/* let the first attempt meet the empty SRQ */
	CHECK(no_event(p.s.dto_evd), "received without a buffer");
	CHECK_OK(post_srq(&p, 0, 64, 5));
	CHECK(next_event(p.s.dto_evd, &ev), "message lost");
	CHECK(ev.event_data.dto_completion_event_data.status ==
	      DAT_DTO_SUCCESS, "status");
	CHECK(next_event(p.c.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.status ==
	      DAT_DTO_SUCCESS, "send failed");
out:
	pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* dat_srq_resize                                                      */

static void t_srq_resize_refuses_below_outstanding(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_SRQ_PARAM q;
	int i;

	CHECK(!pair_open(&p, 1, 10), "setup");
	for (i = 0; i < 5; i++)
		CHECK_OK(post_srq(&p, i * 256, 256, i));
	CHECK_RET(dat_srq_resize(p.srq, 4), DAT_INVALID_STATE);
	CHECK(srq_q(p.srq).max_recv_dtos == 10, "changed on refusal");
	/* completed but not reaped buffers still count as outstanding */
	CHECK(send_msg(&p, 0, 0, 8, 1) && send_msg(&p, 0, 0, 8, 2), "send");
	CHECK(WAIT_FOR(srq_q(p.srq).available_dto_count == 3), "arrival");
	CHECK_RET(dat_srq_resize(p.srq, 4), DAT_INVALID_STATE);
	q = srq_q(p.srq);
	CHECK(q.max_recv_dtos == 10 && q.outstanding_dto_count == 5,
	      "after refusal %d/%d", q.max_recv_dtos, q.outstanding_dto_count);
	/* exactly the outstanding count is allowed */
	CHECK_OK(dat_srq_resize(p.srq, 5));
	CHECK(srq_q(p.srq).max_recv_dtos >= 5, "shrink");
out:
	pair_close(&p);
}

static void t_srq_resize_refuses_below_watermark(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_EVENT ev;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_OK(dat_srq_set_lw(srq, 6));
	next_event(x.async_evd, &ev);	/* empty SRQ: fires at once */
	CHECK_RET(dat_srq_resize(srq, 5), DAT_INVALID_STATE);
	CHECK(srq_q(srq).max_recv_dtos == 10, "changed on refusal");
	CHECK_OK(dat_srq_resize(srq, 6));
out:
	side_close(&x);
}

static void t_srq_resize_bad_args(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_RET(dat_srq_resize(srq, 0), DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_resize(srq, -3), DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_resize(NULL, 8), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_resize(x.ia, 8), DAT_INVALID_HANDLE);
	CHECK_OK(dat_srq_resize(srq, 40));
	CHECK(srq_q(srq).max_recv_dtos >= 40, "grow");
out:
	side_close(&x);
}

/*
 * Every receive of the SRQ may complete on an EVD that names it while an
 * EP's flush and drain marker land there too: a CQ too small for that
 * loses the marker and the EP's free never returns.  Growing the SRQ grows
 * the CQ of every EVD it completes on, and an EVD joined later is charged
 * the grown depth.
 */
static void t_srq_resize_grows_recv_cqs(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 16, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	DAT_EVD_HANDLE evd1 = NULL, evd2 = NULL;
	DAT_EP_HANDLE ep1 = NULL, ep2 = NULL;
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	int n;

	a.max_request_dtos = 4;
	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_OK(dat_evd_kcreate(x.ia, 4, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_DTO_FLAG, &evd1));
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, evd1, evd1, x.conn_evd,
					srq, &a, &ep1));
	n = kdat_test_evd_cq_size(evd1);
	CHECK(n >= 16, "CQ of %d for an SRQ of 16", n);
	CHECK_OK(dat_srq_resize(srq, 1000));
	n = kdat_test_evd_cq_size(evd1);
	CHECK(n >= 1000, "CQ of %d after the SRQ grew to 1000", n);
	CHECK_OK(dat_evd_kcreate(x.ia, 4, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_DTO_FLAG, &evd2));
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, evd2, evd2, x.conn_evd,
					srq, &a, &ep2));
	n = kdat_test_evd_cq_size(evd2);
	CHECK(n >= 1000, "CQ of %d joining an SRQ of 1000", n);
	/* shrinking keeps the CQs: completions may still be in flight */
	CHECK_OK(dat_srq_resize(srq, 8));
	n = kdat_test_evd_cq_size(evd1);
	CHECK(n >= 1000, "CQ of %d after the SRQ shrank", n);
out:
	if (ep1)
		dat_ep_free(ep1);
	if (ep2)
		dat_ep_free(ep2);
	if (evd1)
		dat_evd_free(evd1);
	if (evd2)
		dat_evd_free(evd2);
	side_close(&x);
}

/*
 * An SRQ EP without a recv EVD: its receives complete on a CQ of the
 * SRQ's, which holds them all and grows with the SRQ; they still complete
 * (reported to no one).
 */
static void t_srq_resize_grows_cq_of_ep_without_recv_evd(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 16, .max_recv_iov = 2,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	DAT_EP_ATTR a = ep_attr();
	DAT_SRQ_PARAM q;
	int n;

	memset(&p, 0, sizeof(p));
	next_qual++;
	CHECK(!side_open(&p.s, srv_ia, 1 << 20) &&
	      !side_open(&p.c, cli_ia, 1 << 20), "open");
	CHECK_OK(dat_srq_create(p.s.ia, p.s.pz, &sa, &p.srq));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, NULL, p.s.dto_evd,
					p.s.conn_evd, p.srq, &a, &p.sep[0]));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &p.cep[0]));
	CHECK(!connect_one(&p, p.sep[0], p.cep[0], 0), "connect");
	p.n = 1;
	n = kdat_test_ep_recv_cq_size(p.sep[0]);
	CHECK(n >= 16, "recv CQ of %d for an SRQ of 16", n);
	CHECK_OK(dat_srq_resize(p.srq, 1000));
	n = kdat_test_ep_recv_cq_size(p.sep[0]);
	CHECK(n >= 1000, "recv CQ of %d after the SRQ grew to 1000", n);
	CHECK_OK(post_srq(&p, 0, 256, 1));
	CHECK(send_msg(&p, 0, 0, 8, 1), "send");
	CHECK(WAIT_FOR((q = srq_q(p.srq), !q.available_dto_count &&
					 !q.outstanding_dto_count)),
	      "receive: available %d outstanding %d", q.available_dto_count,
	      q.outstanding_dto_count);
out:
	pair_close(&p);
}

static void t_srq_resize_under_traffic_loses_nothing(void)
{
	const int n = 200;
	static struct pair p;	/* too big for the stack */
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	int i, sent = 0, got = 0, posted = 0;
	static unsigned long seen[4];

	memset(seen, 0, sizeof(seen));
	CHECK(!pair_open(&p, 2, 16), "setup");
	for (i = 0; i < 16; i++, posted++)
		CHECK_OK(post_srq(&p, (posted % 64) * 64, 64, posted));
	while (got < n) {
		/* keep both clients busy while the SRQ grows and shrinks */
		while (sent < n && sent - got < 12) {
			t = seg(&p.c, 0, 16);
			*(u32 *)p.c.buf = sent;
			CHECK_OK(dat_ep_post_send(p.cep[sent & 1], 1, &t,
						  cookie(sent),
						  DAT_COMPLETION_SUPPRESS_FLAG));
			sent++;
		}
		if (got % 20 == 0)
			dat_srq_resize(p.srq, (got / 20) % 2 ? 48 : 24);
		CHECK(next_event(p.s.dto_evd, &ev), "lost after %d", got);
		CHECK(ev.event_data.dto_completion_event_data.status ==
		      DAT_DTO_SUCCESS, "status");
		i = ev.event_data.dto_completion_event_data.user_cookie.as_64;
		CHECK(i < 256 && !test_and_set_bit(i, seen), "dup %d", i);
		got++;
		CHECK_OK(post_srq(&p, (posted % 64) * 64, 64, posted % 256));
		clear_bit(posted % 256, seen);
		posted++;
	}
	CHECK(got == n, "got %d of %d", got, n);
	CHECK(srq_q(p.srq).outstanding_dto_count == 16, "outstanding %d",
	      srq_q(p.srq).outstanding_dto_count);
out:
	pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* dat_srq_set_lw                                                      */

static void t_srq_set_lw_fires_once_per_arming(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EVENT ev;
	int i;

	CHECK(!pair_open(&p, 1, 10), "setup");
	for (i = 0; i < 10; i++)
		CHECK_OK(post_srq(&p, i * 64, 64, i));
	CHECK_OK(dat_srq_set_lw(p.srq, 7));
	CHECK(no_event(p.s.async_evd), "fired while 10 >= 7");
	for (i = 0; i < 3; i++)
		CHECK(send_msg(&p, 0, 0, 8, i), "send");
	CHECK(WAIT_FOR(srq_q(p.srq).available_dto_count == 7), "arrival");
	CHECK(no_event(p.s.async_evd), "fired at 7, not below 7");
	CHECK(send_msg(&p, 0, 0, 8, 3), "send");
	CHECK(next_event(p.s.async_evd, &ev), "no event below the watermark");
	CHECK(ev.event_data.asynch_error_event_data.dat_handle == p.srq,
	      "event names %p", ev.event_data.asynch_error_event_data.dat_handle);
	CHECK(ev.event_data.asynch_error_event_data.reason ==
	      DAT_SRQ_LOW_WATERMARK_EVENT, "reason %d",
	      ev.event_data.asynch_error_event_data.reason);
	for (i = 0; i < 3; i++)
		CHECK(send_msg(&p, 0, 0, 8, 4 + i), "send");
	CHECK(WAIT_FOR(srq_q(p.srq).available_dto_count == 3), "arrival");
	CHECK(no_event(p.s.async_evd), "fired twice for one arming");
	/* re-arming while already below fires during the call */
	CHECK_OK(dat_srq_set_lw(p.srq, 7));
	CHECK(next_event(p.s.async_evd, &ev), "re-arm below did not fire");
	CHECK(no_event(p.s.async_evd), "extra event");
out:
	pair_close(&p);
}

static void t_srq_set_lw_bad_args(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_RET(dat_srq_set_lw(srq, 11), DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_set_lw(srq, -1), DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_set_lw(NULL, 1), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_set_lw(x.pz, 1), DAT_INVALID_HANDLE);
	CHECK_OK(dat_srq_set_lw(srq, DAT_SRQ_LW_DEFAULT));
	CHECK(no_event(x.async_evd), "default watermark fired");
	CHECK(srq_q(srq).low_watermark == DAT_SRQ_LW_DEFAULT, "lw");
out:
	side_close(&x);
}

/* ------------------------------------------------------------------ */
/* dat_srq_free                                                        */

static void t_srq_free_refused_while_ep_uses_it(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep;
	DAT_RETURN r;
	DAT_SRQ_PARAM q;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	r = dat_srq_free(srq);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_STATE &&
	      DAT_GET_SUBTYPE(r) == DAT_INVALID_STATE_SRQ_IN_USE,
	      "free in use = 0x%x", r);
	CHECK_OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &q));
	CHECK_OK(dat_ep_free(ep));
	CHECK_OK(dat_srq_free(srq));
	/* a freed handle is invalid for every call */
	CHECK_RET(dat_srq_free(srq), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &q),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_set_lw(srq, 1), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_resize(srq, 4), DAT_INVALID_HANDLE);
	CHECK_RET(dat_srq_post_recv(srq, 0, NULL, cookie(0)),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					 x.conn_evd, srq, &a, &ep),
		  DAT_INVALID_HANDLE);
out:
	side_close(&x);
}

/* ------------------------------------------------------------------ */
/* dat_ep_create_with_srq                                              */

static void t_ep_with_srq_created_unconnected_with_exact_attrs(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM q;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	a.max_recv_dtos = 7;
	a.max_message_size = 3000;
	a.max_rdma_size = 2000;
	a.max_rdma_read_in = 2;
	a.max_rdma_read_out = 3;
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
	CHECK(q.ep_state == DAT_EP_STATE_UNCONNECTED, "state %d", q.ep_state);
	CHECK(q.srq_handle == srq, "srq handle");
	CHECK(q.ep_attr.max_recv_dtos == 7 &&
	      q.ep_attr.max_message_size == 3000 &&
	      q.ep_attr.max_rdma_size == 2000 &&
	      q.ep_attr.max_rdma_read_in == 2 &&
	      q.ep_attr.max_rdma_read_out == 3, "exact attributes");
	CHECK(q.ep_attr.max_request_dtos >= a.max_request_dtos,
	      "max_request_dtos");
	CHECK(q.recv_evd_handle == x.dto_evd && q.pz_handle == x.pz,
	      "handles");
	/* reset keeps the SRQ association */
	CHECK_OK(dat_ep_reset(ep));
	CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_SRQ_HANDLE, &q));
	CHECK(q.srq_handle == srq, "reset dropped the SRQ");
out:
	side_close(&x);
}

static void t_ep_with_srq_bad_args(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	struct kt_side x = {}, y = {};
	DAT_SRQ_HANDLE srq, srq_y;
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM prm = {};

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK(!side_open(&y, cli_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_OK(dat_srq_create(y.ia, y.pz, &sa, &srq_y));
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					 x.conn_evd, srq, NULL, &ep),
		  DAT_INVALID_PARAMETER);
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					 x.conn_evd, NULL, &a, &ep),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					 x.conn_evd, x.pz, &a, &ep),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					 x.conn_evd, srq_y, &a, &ep),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_ep_create_with_srq(NULL, x.pz, x.dto_evd, x.dto_evd,
					 x.conn_evd, srq, &a, &ep),
		  DAT_INVALID_HANDLE);
	CHECK_RET(dat_ep_create_with_srq(x.ia, NULL, x.dto_evd, x.dto_evd,
					 x.conn_evd, srq, &a, &ep),
		  DAT_INVALID_HANDLE);
	/* a connection EVD is no receive EVD */
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, x.conn_evd, x.dto_evd,
					 x.conn_evd, srq, &a, &ep),
		  DAT_INVALID_HANDLE);
	a.max_request_dtos = 0;
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					 x.conn_evd, srq, &a, &ep),
		  DAT_INVALID_PARAMETER);
	a = ep_attr();
	a.max_recv_iov = 1000;		/* ignored for an SRQ EP */
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	/* the SRQ can not be replaced */
	prm.srq_handle = srq_y;
	CHECK_RET(dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, &prm),
		  DAT_INVALID_PARAMETER);
	CHECK(kdat_live_objects() > 0, "sanity");
out:
	side_close(&y);
	side_close(&x);
}

static void t_ep_with_srq_refuses_ep_post_recv(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep;
	DAT_LMR_TRIPLET t;
	DAT_RETURN r;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	t = seg(&x, 0, 64);
	r = dat_ep_post_recv(ep, 1, &t, cookie(1), DAT_COMPLETION_DEFAULT_FLAG);
	CHECK(r != DAT_SUCCESS, "post_recv on an SRQ EP succeeded");
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_STATE, "0x%x", r);
	CHECK(srq_q(srq).outstanding_dto_count == 0, "buffer went somewhere");
out:
	side_close(&x);
}

static void t_ep_with_srq_completion_flag_rules(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr(), b;
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep1, ep2, ep3;
	DAT_EVD_HANDLE mixed, sol;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	/* UNSIGNALLED on a shared EVD: every stream there must match */
	a.recv_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
	a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep1));
	b = ep_attr();
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, NULL,
					 x.conn_evd, srq, &b, &ep2),
		  DAT_INVALID_PARAMETER);
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep2));
	CHECK_OK(dat_ep_free(ep2));
	CHECK_OK(dat_ep_free(ep1));
	/* EVD_THRESHOLD recv: all DTO streams on that EVD use THRESHOLD */
	a.recv_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
	a.request_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep1));
	b = ep_attr();
	CHECK_RET(dat_ep_create(x.ia, x.pz, NULL, x.dto_evd, x.conn_evd, &b,
				&ep2), DAT_INVALID_PARAMETER);
	CHECK_OK(dat_ep_free(ep1));
	/* SOLICITED_WAIT recv: that EVD carries no other stream type */
	CHECK_OK(dat_evd_kcreate(x.ia, 64, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG,
				 &mixed));
	CHECK_OK(dat_evd_kcreate(x.ia, 64, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_DTO_FLAG, &sol));
	a = ep_attr();
	a.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
	CHECK_RET(dat_ep_create_with_srq(x.ia, x.pz, mixed, x.dto_evd,
					 x.conn_evd, srq, &a, &ep3),
		  DAT_INVALID_PARAMETER);
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, sol, x.dto_evd,
					x.conn_evd, srq, &a, &ep3));
	/* and the default recv flag of an SRQ EP mixes with DEFAULT ones */
	a = ep_attr();
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep1));
out:
	side_close(&x);
}

/*
 * The RDMA half of the PZ rule: the peer writes through @cep to @rctx at
 * @raddr; the completion status it sees.
 */
static int rdma_write_status(struct pair *p, DAT_EP_HANDLE cep,
			     DAT_RMR_CONTEXT rctx, DAT_VADDR raddr, u64 ck)
{
	DAT_LMR_TRIPLET t = seg(&p->c, 0, 16);
	DAT_RMR_TRIPLET rt = { .rmr_context = rctx, .target_address = raddr,
			       .segment_length = 16 };
	DAT_EVENT ev;

	if (dat_ep_post_rdma_write(cep, 1, &t, cookie(ck), &rt,
				   DAT_COMPLETION_DEFAULT_FLAG) ||
	    !next_event(p->c.dto_evd, &ev) ||
	    ev.event_number != DAT_DTO_COMPLETION_EVENT)
		return -1;
	return ev.event_data.dto_completion_event_data.status;
}

/*
 * srq_ep_pz_difference_supported tells the truth.  Where it is TRUE, an SRQ
 * EP's own PZ governs incoming RDMA (the page: "allows incoming RDMA
 * operations to be specific to this EP PZ") while receives still use the
 * SRQ's PZ; where it is FALSE (rxe checks SRQ receive lkeys against the
 * QP's PD), a differing PZ is refused with pz_handle's subtype.
 */
static void t_ep_with_srq_pz_may_differ(void)
{
	DAT_PROVIDER_ATTR pa;
	static struct pair p;	/* too big for the stack */
	DAT_EP_ATTR a = ep_attr();
	DAT_PZ_HANDLE pz2;
	DAT_EP_HANDLE sep, cep;
	DAT_REGION_DESCRIPTION r;
	DAT_LMR_HANDLE lmr_ep, lmr_srq;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx_ep, rctx_srq;
	DAT_VLEN rsize;
	DAT_VADDR raddr_ep, raddr_srq;
	DAT_EVENT ev;
	u8 *target = kzalloc(8192, GFP_KERNEL);
	int st;

	CHECK(target && !pair_open(&p, 0, 8), "setup");
	CHECK_OK(dat_ia_query(p.s.ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL,
			      &pa));
	CHECK_OK(dat_pz_create(p.s.ia, &pz2));
	if (pa.srq_ep_pz_difference_supported != DAT_TRUE) {
		CHECK_EXACT(dat_ep_create_with_srq(p.s.ia, pz2, p.s.dto_evd,
						   p.s.dto_evd, p.s.conn_evd,
						   p.srq, &a, &sep),
			    BAD_ARG(DAT_INVALID_ARG2));
		pr_info("kdat_test: %s: srq_ep_pz_difference_supported is FALSE on %s: differing PZ refused\n",
			cur_test, srv_ia);
		goto out;
	}
	a.max_rdma_read_in = 4;
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, pz2, p.s.dto_evd, p.s.dto_evd,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 9), "connect");
	/* receive buffers follow the SRQ's PZ, not the EP's */
	CHECK_OK(post_srq(&p, 0, 64, 1));
	p.cep[0] = cep;
	CHECK(send_msg(&p, 0, 0, 16, 1), "send");
	CHECK(next_event(p.s.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.status ==
	      DAT_DTO_SUCCESS &&
	      ev.event_data.dto_completion_event_data.ep_handle == sep,
	      "receive");
	/* incoming RDMA reaches memory of the EP's PZ ... */
	r.for_va = target;
	CHECK_OK(dat_lmr_kcreate(p.s.ia, DAT_MEM_TYPE_VIRTUAL, r, 4096, pz2,
				 DAT_MEM_PRIV_ALL_FLAG,
				 DAT_MEM_OPTIMIZE_DONT_CARE, &lmr_ep, &lctx,
				 &rctx_ep, &rsize, &raddr_ep));
	r.for_va = target + 4096;
	CHECK_OK(dat_lmr_kcreate(p.s.ia, DAT_MEM_TYPE_VIRTUAL, r, 4096,
				 p.s.pz, DAT_MEM_PRIV_ALL_FLAG,
				 DAT_MEM_OPTIMIZE_DONT_CARE, &lmr_srq, &lctx,
				 &rctx_srq, &rsize, &raddr_srq));
	memcpy(p.c.buf, "ep-pz-rdma-write", 16);
	st = rdma_write_status(&p, cep, rctx_ep, raddr_ep, 2);
	CHECK(st == DAT_DTO_SUCCESS, "RDMA to the EP's PZ: status %d", st);
	CHECK(!memcmp(target, "ep-pz-rdma-write", 16), "written data");
	/* ... and not memory only the SRQ's PZ holds */
	st = rdma_write_status(&p, cep, rctx_srq, raddr_srq, 3);
	CHECK(st == DAT_DTO_ERR_REMOTE_ACCESS, "RDMA to the SRQ's PZ: status %d",
	      st);
	CHECK(memchr_inv(target + 4096, 0, 16) == NULL, "SRQ PZ memory written");
out:
	pair_close(&p);
	kfree(target);
}

static void t_srq_eps_may_use_different_recv_evds(void)
{
	DAT_EP_ATTR a = ep_attr();
	static struct pair p;	/* too big for the stack */
	DAT_EVD_HANDLE evd2;
	DAT_EP_HANDLE sep, cep;
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 1, 8), "setup");
	CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_DTO_FLAG, &evd2));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd2, p.s.dto_evd,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 3), "connect");
	p.cep[1] = cep;
	CHECK_OK(post_srq(&p, 0, 64, 1));
	CHECK_OK(post_srq(&p, 64, 64, 2));
	/* each completion goes to the recv EVD of the EP that took it */
	CHECK(send_msg(&p, 1, 0, 8, 1), "send");
	CHECK(next_event(evd2, &ev) &&
	      ev.event_data.dto_completion_event_data.ep_handle == sep,
	      "not on the second EVD");
	CHECK(no_event(p.s.dto_evd), "on the first EVD");
	CHECK(send_msg(&p, 0, 0, 8, 2), "send");
	CHECK(next_event(p.s.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.ep_handle == p.sep[0],
	      "not on the first EVD");
	CHECK(no_event(evd2), "on the second EVD");
out:
	pair_close(&p);
}

static void t_srq_post_recv_cookie_need_not_be_unique(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EVENT ev;
	int i;

	CHECK(!pair_open(&p, 1, 8), "setup");
	for (i = 0; i < 3; i++)
		CHECK_OK(post_srq(&p, i * 64, 64, 42));
	for (i = 0; i < 3; i++) {
		CHECK(send_msg(&p, 0, 0, 8, i), "send");
		CHECK(next_event(p.s.dto_evd, &ev) &&
		      ev.event_data.dto_completion_event_data.user_cookie.as_64 ==
		      42, "cookie");
	}
out:
	pair_close(&p);
}

static void t_ep_with_srq_unsignalled_recv_still_completes(void)
{
	/* UNSIGNALLED is the SRQ EP default: every receive still completes */
	DAT_EP_ATTR a = ep_attr();
	static struct pair p;	/* too big for the stack */
	DAT_EVD_HANDLE evd2;
	DAT_EP_HANDLE sep, cep;
	DAT_EVENT ev;
	int i;

	CHECK(!pair_open(&p, 0, 8), "setup");
	CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_DTO_FLAG, &evd2));
	a.recv_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd2, NULL,
					p.s.conn_evd, p.srq, &a, &sep));
	a = ep_attr();
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 4), "connect");
	p.cep[0] = cep;
	for (i = 0; i < 4; i++)
		CHECK_OK(post_srq(&p, i * 64, 64, i));
	for (i = 0; i < 4; i++) {
		CHECK(send_msg(&p, 0, 0, 8, i), "send");
		CHECK(next_event(evd2, &ev) &&
		      ev.event_data.dto_completion_event_data.status ==
		      DAT_DTO_SUCCESS, "receive %d without a completion", i);
	}
out:
	pair_close(&p);
}

static void t_ep_with_srq_null_recv_evd_still_returns_buffers(void)
{
	/* no recv EVD: nobody is told, but no buffer stays outstanding */
	DAT_EP_ATTR a = ep_attr();
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep, cep;
	DAT_SRQ_PARAM q;

	CHECK(!pair_open(&p, 0, 8), "setup");
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, NULL, NULL, NULL,
					p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	/* no connect EVD on the server: accept and wait on the client */
	{
		struct sockaddr_in sin = { .sin_family = AF_INET };
		DAT_EVENT ev;

		sin.sin_addr.s_addr = in_aton(srv_addr);
		CHECK_OK(dat_psp_create(p.s.ia, ++next_qual, p.s.cr_evd,
					DAT_PSP_CONSUMER_FLAG, &p.psp));
		CHECK_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin,
					next_qual, DAT_TIMEOUT_INFINITE, 0,
					NULL, DAT_QOS_BEST_EFFORT,
					DAT_CONNECT_DEFAULT_FLAG));
		CHECK(next_event(p.s.cr_evd, &ev), "no CR");
		CHECK_OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
				       sep, 0, NULL));
		CHECK(next_event(p.c.conn_evd, &ev) &&
		      ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED,
		      "not established");
	}
	p.cep[0] = cep;
	CHECK_OK(post_srq(&p, 0, 64, 1));
	CHECK_OK(post_srq(&p, 64, 64, 2));
	CHECK(send_msg(&p, 0, 0, 8, 1), "send");
	CHECK(WAIT_FOR(srq_q(p.srq).available_dto_count == 1), "arrival");
	q = srq_q(p.srq);
	CHECK(q.outstanding_dto_count == 1, "outstanding %d",
	      q.outstanding_dto_count);
out:
	pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* Completion ordering, flush, exactly once                            */

static void t_srq_per_connection_order_many_eps(void)
{
	const int neps = 16, per = 20;
	static struct pair p;	/* too big for the stack */
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	int i, k, got = 0, next[16] = {};
	u32 *msg;

	CHECK(!pair_open(&p, neps, neps * per), "setup");
	for (i = 0; i < neps * per; i++)
		CHECK_OK(post_srq(&p, i * 16, 16, i));
	/* interleave: message k of every EP, then k+1 ... */
	for (k = 0; k < per; k++) {
		for (i = 0; i < neps; i++) {
			msg = (u32 *)((char *)p.c.buf + (k * neps + i) * 16);
			msg[0] = i;
			msg[1] = k;
			t = seg(&p.c, (k * neps + i) * 16, 8);
			CHECK_OK(dat_ep_post_send(p.cep[i], 1, &t, cookie(0),
						  DAT_COMPLETION_SUPPRESS_FLAG));
		}
	}
	while (got < neps * per) {
		CHECK(next_event(p.s.dto_evd, &ev), "lost: %d of %d", got,
		      neps * per);
		CHECK(ev.event_data.dto_completion_event_data.status ==
		      DAT_DTO_SUCCESS, "status");
		msg = (u32 *)((char *)p.s.buf +
			      ev.event_data.dto_completion_event_data.user_cookie.as_64 * 16);
		i = msg[0];
		CHECK(i < neps && ev.event_data.dto_completion_event_data.ep_handle ==
		      p.sep[i], "message of EP %d completed on another EP", i);
		CHECK(msg[1] == next[i], "EP %d: message %u, expected %d", i,
		      msg[1], next[i]);
		next[i]++;
		got++;
	}
	CHECK(no_event(p.s.dto_evd), "duplicate completion");
	CHECK(srq_q(p.srq).outstanding_dto_count == 0, "outstanding");
out:
	pair_close(&p);
}

static void t_srq_flush_on_disconnect_and_exactly_once(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EVENT ev;
	int i, ok = 0, flushed = 0;
	DAT_SRQ_PARAM q;

	CHECK(!pair_open(&p, 2, 10), "setup");
	for (i = 0; i < 10; i++)
		CHECK_OK(post_srq(&p, i * 64, 64, i));
	for (i = 0; i < 4; i++)
		CHECK(send_msg(&p, 0, 0, 8, i), "send");
	CHECK_OK(dat_ep_disconnect(p.sep[0], DAT_CLOSE_ABRUPT_FLAG));
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
	      ev.event_data.connect_event_data.ep_handle == p.sep[0],
	      "no DISCONNECTED event");
	/* every buffer the EP took is on its recv EVD, delivered or flushed */
	while (dat_evd_dequeue(p.s.dto_evd, &ev) == DAT_SUCCESS) {
		CHECK(ev.event_data.dto_completion_event_data.ep_handle ==
		      p.sep[0], "completion of another EP");
		if (ev.event_data.dto_completion_event_data.status ==
		    DAT_DTO_SUCCESS)
			ok++;
		else if (ev.event_data.dto_completion_event_data.status ==
			 DAT_DTO_ERR_FLUSHED)
			flushed++;
	}
	CHECK(ok == 4, "delivered %d of 4", ok);
	q = srq_q(p.srq);
	CHECK(q.available_dto_count == 10 - ok - flushed &&
	      q.outstanding_dto_count == 10 - ok - flushed,
	      "SRQ lost buffers: %d/%d after %d+%d", q.available_dto_count,
	      q.outstanding_dto_count, ok, flushed);
	/* the other connection still receives from the same SRQ */
	CHECK(send_msg(&p, 1, 0, 8, 9), "send on EP 1");
	CHECK(next_event(p.s.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.ep_handle == p.sep[1],
	      "EP 1 receive");
	CHECK(no_event(p.s.dto_evd), "duplicate");
out:
	pair_close(&p);
}

/*
 * An SRQ EP freed abruptly while its peer still sends, and its recv EVD
 * freed right after, before anyone dequeued: every buffer the EP took is
 * counted back by the EVD's free, including completions still in the CQ
 * (an SRQ EP's free drains only its sends).  So after the frees the SRQ's
 * counts agree (nothing waits in an EVD), and the buffers they say were
 * taken are at least the sends the peer saw acknowledged (a receive
 * completes before its ACK goes) and at most the sends made.
 */
static void t_srq_ep_and_recv_evd_freed_at_once_count_every_buffer(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep = NULL, cep = NULL;
	DAT_EVD_HANDLE evd = NULL;
	DAT_LMR_TRIPLET t;
	int it, i, ok, done, before, taken;
	DAT_SRQ_PARAM q;
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 0, 256), "setup");
	for (it = 0; it < 8; it++) {
		CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_DISABLE, NULL,
					 DAT_EVD_DTO_FLAG, &evd));
		CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd,
						p.s.dto_evd, p.s.conn_evd,
						p.srq, &a, &sep));
		CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd,
				       p.c.dto_evd, p.c.conn_evd, &a, &cep));
		CHECK(!connect_one(&p, sep, cep, it), "connect %d", it);
		/* 48 on the SRQ at the start of each round */
		q = srq_q(p.srq);
		for (i = q.available_dto_count; i < 48; i++)
			CHECK_OK(post_srq(&p, (i % 16) * 64, 64, i));
		q = srq_q(p.srq);
		before = q.available_dto_count;
		CHECK(before == 48, "round %d: %d available", it, before);
		t = seg(&p.c, 0, 8);
		for (i = 0; i < 32; i++)
			CHECK_OK(dat_ep_post_send(cep, 1, &t, cookie(i),
						  DAT_COMPLETION_DEFAULT_FLAG));
		/* the first is through: free while the rest arrive */
		CHECK(next_event(p.c.dto_evd, &ev), "no send completion");
		done = 1;
		ok = ev.event_data.dto_completion_event_data.status ==
		     DAT_DTO_SUCCESS;
		CHECK_OK(dat_ep_free(sep));
		sep = NULL;
		CHECK_OK(dat_evd_free(evd));
		evd = NULL;
		/* the rest of the peer's sends: acknowledged or flushed */
		while (done < 32) {
			CHECK(next_event(p.c.dto_evd, &ev),
			      "%d of 32 sends completed", done);
			done++;
			ok += ev.event_data.dto_completion_event_data.status ==
			      DAT_DTO_SUCCESS;
		}
		q = srq_q(p.srq);
		taken = before - q.available_dto_count;
		CHECK(q.available_dto_count == q.outstanding_dto_count,
		      "round %d: available %d, outstanding %d after the frees",
		      it, q.available_dto_count, q.outstanding_dto_count);
		CHECK(taken >= ok && taken <= 32,
		      "round %d: %d buffers taken, %d sends acknowledged",
		      it, taken, ok);
		CHECK_OK(dat_ep_free(cep));
		cep = NULL;
		while (dat_evd_dequeue(p.c.conn_evd, &ev) == DAT_SUCCESS)
			;
	}
out:
	if (sep)
		dat_ep_free(sep);
	if (cep)
		dat_ep_free(cep);
	if (evd)
		dat_evd_free(evd);
	pair_close(&p);
}

static void t_srq_peer_disconnect_reports_disconnected(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 1, 4), "setup");
	CHECK_OK(dat_ep_disconnect(p.cep[0], DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "server saw no disconnect");
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "client saw no disconnect");
out:
	pair_close(&p);
}

/*
 * A connection EVD may be of another IA of the same consumer (OFED's
 * dapltest -T L -w 2 does this): the EP's connection events arrive there
 * naming the EP, and nowhere else.  That EVD's free is refused while the
 * EP uses it; its IA's abrupt close still succeeds, and the EP lives on,
 * connected, with its later connection events dropped.  A DTO EVD of
 * another IA stays refused.
 */
static void t_ep_connection_evd_of_another_ia(void)
{
	static struct pair p;
	static struct kt_side x;	/* the other IA, on the client's device */
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep = NULL, cep = NULL, ep2 = NULL;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	u32 tag = 7;

	CHECK(!pair_open(&p, 0, 16), "setup");
	CHECK(!side_open(&x, cli_ia, 4096), "open a second IA on %s", cli_ia);
	CHECK_EXACT(dat_ep_create(p.c.ia, p.c.pz, x.dto_evd, p.c.dto_evd,
				  p.c.conn_evd, &a, &ep2),
		    BAD_HANDLE(DAT_INVALID_HANDLE_EVD_RECV));
	CHECK_EXACT(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
				  x.cr_evd, &a, &ep2),
		    BAD_HANDLE(DAT_INVALID_HANDLE_EVD_CONN));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       x.conn_evd, &a, &cep));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
					p.s.dto_evd, p.s.conn_evd, p.srq, &a,
					&sep));
	CHECK_OK(dat_psp_create(p.s.ia, next_qual, p.s.cr_evd,
				DAT_PSP_CONSUMER_FLAG, &p.psp));
	CHECK_OK(connect_to(cep, next_qual, sizeof(tag), &tag));
	CHECK(!kt_accept(&kt, &p.s, &p.c, &sep, tag, 0, 1), "accept");
	CHECK(!kt_established(&kt, &p.s, &sep, 1), "server established");
	CHECK(!kt_established(&kt, &x, &cep, 1),
	      "ESTABLISHED naming the EP on the other IA's EVD");
	CHECK(no_event(p.c.conn_evd), "an event on the EP's own IA's EVD");

	/* the EVD's consumer cannot free it under the EP */
	CHECK_EXACT(dat_evd_free(x.conn_evd),
		    BAD_STATE(DAT_INVALID_STATE_EVD_IN_USE));
	CHECK_RET(dat_ia_close(x.ia, DAT_CLOSE_GRACEFUL_FLAG),
		  DAT_INVALID_STATE);

	/* data flows */
	t = seg(&p.s, 0, 64);
	CHECK_OK(dat_srq_post_recv(p.srq, 1, &t, cookie(1)));
	p.cep[0] = cep;
	CHECK(send_msg(&p, 0, 0, 64, 2), "send");
	CHECK(next_event(p.s.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.ep_handle == sep,
	      "no receive on the server");

	/* its IA's abrupt close takes the EVD from under the EP */
	CHECK_OK(dat_ia_close(x.ia, DAT_CLOSE_ABRUPT_FLAG));
	x.ia = NULL;
	CHECK(ep_state(cep) == DAT_EP_STATE_CONNECTED, "EP state %d",
	      ep_state(cep));
	CHECK_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "server saw no disconnect");
	CHECK(no_event(p.c.conn_evd), "an event on the EP's own IA's EVD");
	CHECK_OK(dat_ep_free(cep));
	cep = NULL;
out:
	if (cep)
		dat_ep_free(cep);
	side_close(&x);
	pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* Non-SRQ EPs and RDMA, the rest of what a storage driver uses        */

static void t_ep_post_recv_before_connect_completes_once(void)
{
	DAT_EP_ATTR a = ep_attr();
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep, cep;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	int i, ok = 0, flushed = 0;

	CHECK(!pair_open(&p, 0, 4), "setup");
	CHECK_OK(dat_ep_create(p.s.ia, p.s.pz, p.s.dto_evd, p.s.dto_evd,
			       p.s.conn_evd, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	/* receives posted to an unconnected EP wait for the connection */
	for (i = 0; i < 3; i++) {
		t = seg(&p.s, i * 64, 64);
		CHECK_OK(dat_ep_post_recv(sep, 1, &t, cookie(i),
					  DAT_COMPLETION_DEFAULT_FLAG));
	}
	CHECK(!connect_one(&p, sep, cep, 1), "connect");
	p.cep[0] = cep;
	CHECK(send_msg(&p, 0, 0, 10, 1), "send");
	CHECK(next_event(p.s.dto_evd, &ev), "no receive");
	CHECK(ev.event_data.dto_completion_event_data.ep_handle == sep &&
	      ev.event_data.dto_completion_event_data.user_cookie.as_64 == 0 &&
	      ev.event_data.dto_completion_event_data.transfered_length == 10,
	      "first receive");
	/* freeing the EP flushes the two still posted, each exactly once */
	CHECK_OK(dat_ep_free(sep));
	while (dat_evd_dequeue(p.s.dto_evd, &ev) == DAT_SUCCESS) {
		if (ev.event_number != DAT_DTO_COMPLETION_EVENT)
			continue;
		if (ev.event_data.dto_completion_event_data.status ==
		    DAT_DTO_ERR_FLUSHED)
			flushed++;
		else
			ok++;
	}
	CHECK(flushed == 2 && ok == 0, "flushed %d, other %d", flushed, ok);
out:
	pair_close(&p);
}

/*
 * The order dat_ep_create_with_srq states, for an EP's own receives too:
 * when the EP is Disconnected, every receive it held is on its recv EVD.
 * The device flushes a QP's receives after the QP went to the error state
 * in its own time (rxe: a tasklet, maybe on another CPU); the DISCONNECTED
 * event must still come after the last of them.  Both ends: the server
 * disconnects its EP itself, or its peer does.  Many rounds, since one
 * round loses the race only sometimes (the peer's: a local disconnect
 * moves the QP to error when it starts).
 */
static void recv_flushed_before_disconnected(bool local, int rounds)
{
	const int nrecv = 8;
	DAT_EP_ATTR a = ep_attr();
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep = NULL, cep = NULL;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	int r, i, flushed;

	CHECK(!pair_open(&p, 0, 4), "setup");
	for (r = 0; r < rounds; r++) {
		CHECK_OK(dat_ep_create(p.s.ia, p.s.pz, p.s.dto_evd,
				       p.s.dto_evd, p.s.conn_evd, &a, &sep));
		CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd,
				       p.c.dto_evd, p.c.conn_evd, &a, &cep));
		for (i = 0; i < nrecv; i++) {
			t = seg(&p.s, i * 64, 64);
			CHECK_OK(dat_ep_post_recv(sep, 1, &t, cookie(i),
						  DAT_COMPLETION_DEFAULT_FLAG));
		}
		CHECK(!connect_one(&p, sep, cep, r), "connect %d", r);
		CHECK_OK(dat_ep_disconnect(local ? sep : cep,
					   DAT_CLOSE_ABRUPT_FLAG));
		CHECK(next_event(p.s.conn_evd, &ev) &&
		      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
		      "round %d: no DISCONNECTED", r);
		flushed = 0;
		while (dat_evd_dequeue(p.s.dto_evd, &ev) == DAT_SUCCESS)
			if (ev.event_data.dto_completion_event_data.status ==
			    DAT_DTO_ERR_FLUSHED)
				flushed++;
		CHECK(flushed == nrecv,
		      "round %d: DISCONNECTED with %d of %d receives flushed",
		      r, flushed, nrecv);
		CHECK(next_event(p.c.conn_evd, &ev), "client event");
		CHECK_OK(dat_ep_free(sep));
		sep = NULL;
		CHECK_OK(dat_ep_free(cep));
		cep = NULL;
		while (dat_evd_dequeue(p.c.dto_evd, &ev) == DAT_SUCCESS)
			;
		CHECK(no_event(p.s.dto_evd), "round %d: a receive after", r);
	}
out:
	pair_close(&p);
}

static void t_ep_recv_flushed_before_local_disconnected(void)
{
	/* rdma_disconnect moves the QP to error long before DISCONNECTED */
	recv_flushed_before_disconnected(true, 100);
}

static void t_ep_recv_flushed_before_peer_disconnected(void)
{
	recv_flushed_before_disconnected(false, 400);
}

static void t_ep_rdma_write_and_read(void)
{
	DAT_EP_ATTR a = ep_attr();
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep, cep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN rsize;
	DAT_VADDR raddr;
	DAT_REGION_DESCRIPTION r;
	DAT_RMR_TRIPLET rt;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	u8 *target = kzalloc(4096, GFP_KERNEL);

	CHECK(target && !pair_open(&p, 0, 4), "setup");
	a.max_rdma_read_in = 4;
	a.max_rdma_read_out = 4;
	/* the server exposes @target for remote read and write */
	r.for_va = target;
	CHECK_OK(dat_lmr_kcreate(p.s.ia, DAT_MEM_TYPE_VIRTUAL, r, 4096, p.s.pz,
				 DAT_MEM_PRIV_ALL_FLAG,
				 DAT_MEM_OPTIMIZE_DONT_CARE, &lmr, &lctx, &rctx,
				 &rsize, &raddr));
	CHECK(rctx != 0 && rsize == 4096, "no rmr_context");
	CHECK_OK(dat_ep_create(p.s.ia, p.s.pz, p.s.dto_evd, p.s.dto_evd,
			       p.s.conn_evd, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 2), "connect");
	memcpy(p.c.buf, "rdma-write-payload", 18);
	t = seg(&p.c, 0, 18);
	rt = (DAT_RMR_TRIPLET){ .rmr_context = rctx,
				.target_address = raddr + 100,
				.segment_length = 18 };
	CHECK_OK(dat_ep_post_rdma_write(cep, 1, &t, cookie(5), &rt,
					DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.status ==
	      DAT_DTO_SUCCESS &&
	      ev.event_data.dto_completion_event_data.user_cookie.as_64 == 5,
	      "write completion");
	CHECK(!memcmp(target + 100, "rdma-write-payload", 18), "written data");
	memcpy(target + 1000, "read-me", 7);
	t = seg(&p.c, 2000, 7);
	rt.target_address = raddr + 1000;
	rt.segment_length = 7;
	CHECK_OK(dat_ep_post_rdma_read(cep, 1, &t, cookie(6), &rt,
				       DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.status ==
	      DAT_DTO_SUCCESS &&
	      ev.event_data.dto_completion_event_data.transfered_length == 7,
	      "read completion");
	CHECK(!memcmp((u8 *)p.c.buf + 2000, "read-me", 7), "read data");
	/* the remote segment bounds the transfer */
	rt.segment_length = 3;
	CHECK_RET(dat_ep_post_rdma_read(cep, 1, &t, cookie(7), &rt,
					DAT_COMPLETION_DEFAULT_FLAG),
		  DAT_LENGTH_ERROR);
out:
	pair_close(&p);
	kfree(target);
}

/* ------------------------------------------------------------------ */
/* IB extensions: write with immediate data, atomics, DTO operations    */

#define DTO(ev)	((ev).event_data.dto_completion_event_data)

/* A server buffer peers may read and write: its rmr_context and address. */
static DAT_RETURN remote_target(struct pair *p, void *buf, size_t len,
				DAT_LMR_HANDLE *lmr, DAT_RMR_TRIPLET *rt)
{
	DAT_REGION_DESCRIPTION r = { .for_va = buf };
	DAT_LMR_CONTEXT lctx;
	DAT_VLEN rsize;
	DAT_RETURN ret;

	ret = dat_lmr_kcreate(p->s.ia, DAT_MEM_TYPE_VIRTUAL, r, len, p->s.pz,
			      DAT_MEM_PRIV_ALL_FLAG, DAT_MEM_OPTIMIZE_DONT_CARE,
			      lmr, &lctx, &rt->rmr_context, &rsize,
			      &rt->target_address);
	rt->segment_length = len;
	return ret;
}

/* A connected non-SRQ EP pair with RDMA Reads (and atomics) allowed. */
static int rdma_pair(struct pair *p, DAT_EP_HANDLE *sep, DAT_EP_HANDLE *cep)
{
	DAT_EP_ATTR a = ep_attr();

	a.max_rdma_read_in = 4;
	a.max_rdma_read_out = 4;
	if (pair_open(p, 0, 4) ||
	    dat_ep_create(p->s.ia, p->s.pz, p->s.dto_evd, p->s.dto_evd,
			  p->s.conn_evd, &a, sep) ||
	    dat_ep_create(p->c.ia, p->c.pz, p->c.dto_evd, p->c.dto_evd,
			  p->c.conn_evd, &a, cep))
		return -ENOMEM;
	return connect_one(p, *sep, *cep, 3);
}

/*
 * RDMA Write with immediate data: the data lands where the writer said,
 * the writer's completion says RDMA_WRITE_IMMED, and the peer's receive
 * (its own buffer untouched) completes with the immediate data, its flag
 * and the length written.
 */
static void t_ep_rdma_write_immed_delivers_immed_and_length(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep, cep;
	DAT_LMR_HANDLE lmr;
	DAT_RMR_TRIPLET rt;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	u8 *target = kzalloc(4096, GFP_KERNEL);

	CHECK(target && !rdma_pair(&p, &sep, &cep), "setup");
	CHECK_OK(remote_target(&p, target, 4096, &lmr, &rt));
	memset(p.s.buf, 0x5a, 64);
	t = seg(&p.s, 0, 64);
	CHECK_OK(dat_ep_post_recv(sep, 1, &t, cookie(7),
				  DAT_COMPLETION_DEFAULT_FLAG));
	memcpy(p.c.buf, "immediate-payload!", 18);
	t = seg(&p.c, 0, 18);
	rt.target_address += 100;
	CHECK_OK(kdat_ep_post_rdma_write_immed(cep, 1, &t, cookie(5), &rt,
					       0xdeadbeef,
					       DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev), "no write completion");
	CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT &&
	      DTO(ev).status == DAT_DTO_SUCCESS &&
	      DTO(ev).user_cookie.as_64 == 5 &&
	      DTO(ev).transfered_length == 18 &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_RDMA_WRITE_IMMED &&
	      !(DTO(ev).kdat_flags & KDAT_DTO_F_IMMED),
	      "write: status %d cookie %llu len %llu op %u flags %u",
	      DTO(ev).status, DTO(ev).user_cookie.as_64,
	      DTO(ev).transfered_length, DTO(ev).kdat_operation,
	      DTO(ev).kdat_flags);
	CHECK(next_event(p.s.dto_evd, &ev), "no receive completion");
	CHECK(DTO(ev).ep_handle == sep && DTO(ev).status == DAT_DTO_SUCCESS &&
	      DTO(ev).user_cookie.as_64 == 7 &&
	      DTO(ev).transfered_length == 18 &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_RECV_RDMA_IMMED &&
	      DTO(ev).kdat_flags == KDAT_DTO_F_IMMED &&
	      DTO(ev).kdat_immed_data == 0xdeadbeef,
	      "receive: cookie %llu len %llu op %u flags %u imm 0x%x",
	      DTO(ev).user_cookie.as_64, DTO(ev).transfered_length,
	      DTO(ev).kdat_operation, DTO(ev).kdat_flags,
	      DTO(ev).kdat_immed_data);
	CHECK(!memcmp(target + 100, "immediate-payload!", 18), "written data");
	CHECK(((u8 *)p.s.buf)[0] == 0x5a, "the receive buffer was written");
	/* the flags are the last argument (ARG7) */
	CHECK_EXACT(kdat_ep_post_rdma_write_immed(cep, 1, &t, cookie(6), &rt, 1,
						  DAT_COMPLETION_UNSIGNALLED_FLAG),
		    DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7));
	CHECK_EXACT(kdat_ep_post_rdma_write_immed(cep, 1, &t, cookie(6), NULL, 1,
						  DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));
out:
	pair_close(&p);
	kfree(target);
}

/* The same into an SRQ EP: the buffer comes from the SRQ, names the EP. */
static void t_srq_rdma_write_immed_takes_srq_buffer(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_LMR_HANDLE lmr;
	DAT_RMR_TRIPLET rt;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	u8 *target = kzalloc(4096, GFP_KERNEL);

	CHECK(target && !pair_open(&p, 1, 4), "setup");
	CHECK_OK(remote_target(&p, target, 4096, &lmr, &rt));
	CHECK_OK(post_srq(&p, 0, 64, 11));
	memcpy(p.c.buf, "srq-imm", 7);
	t = seg(&p.c, 0, 7);
	CHECK_OK(kdat_ep_post_rdma_write_immed(p.cep[0], 1, &t, cookie(1), &rt,
					       0x1234,
					       DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) && DTO(ev).status == DAT_DTO_SUCCESS,
	      "write completion");
	CHECK(next_event(p.s.dto_evd, &ev), "no receive completion");
	CHECK(DTO(ev).ep_handle == p.sep[0] && DTO(ev).status == DAT_DTO_SUCCESS &&
	      DTO(ev).user_cookie.as_64 == 11 &&
	      DTO(ev).transfered_length == 7 &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_RECV_RDMA_IMMED &&
	      DTO(ev).kdat_flags == KDAT_DTO_F_IMMED &&
	      DTO(ev).kdat_immed_data == 0x1234,
	      "receive: cookie %llu len %llu op %u flags %u imm 0x%x",
	      DTO(ev).user_cookie.as_64, DTO(ev).transfered_length,
	      DTO(ev).kdat_operation, DTO(ev).kdat_flags,
	      DTO(ev).kdat_immed_data);
	CHECK(!memcmp(target, "srq-imm", 7), "written data");
	CHECK(srq_q(p.srq).available_dto_count == 0, "the buffer is taken");
out:
	pair_close(&p);
	kfree(target);
}

/*
 * Every DTO completion names its operation: send and receive (with no
 * immediate data), RDMA Write, RDMA Read, and a flushed receive.
 */
static void t_ep_dto_operation_per_event(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep, cep;
	DAT_LMR_HANDLE lmr;
	DAT_RMR_TRIPLET rt;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	u8 *target = kzalloc(4096, GFP_KERNEL);

	CHECK(target && !rdma_pair(&p, &sep, &cep), "setup");
	CHECK_OK(remote_target(&p, target, 4096, &lmr, &rt));
	t = seg(&p.s, 0, 64);
	CHECK_OK(dat_ep_post_recv(sep, 1, &t, cookie(1),
				  DAT_COMPLETION_DEFAULT_FLAG));
	t = seg(&p.c, 0, 16);
	CHECK_OK(dat_ep_post_send(cep, 1, &t, cookie(2),
				  DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) && DTO(ev).status == DAT_DTO_SUCCESS &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_SEND && !DTO(ev).kdat_flags,
	      "send: op %u", DTO(ev).kdat_operation);
	CHECK(next_event(p.s.dto_evd, &ev) && DTO(ev).status == DAT_DTO_SUCCESS &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_RECV && !DTO(ev).kdat_flags,
	      "receive: op %u flags %u", DTO(ev).kdat_operation,
	      DTO(ev).kdat_flags);
	CHECK_OK(dat_ep_post_rdma_write(cep, 1, &t, cookie(3), &rt,
					DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) && DTO(ev).status == DAT_DTO_SUCCESS &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_RDMA_WRITE,
	      "write: op %u", DTO(ev).kdat_operation);
	CHECK_OK(dat_ep_post_rdma_read(cep, 1, &t, cookie(4), &rt,
				       DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) && DTO(ev).status == DAT_DTO_SUCCESS &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_RDMA_READ,
	      "read: op %u", DTO(ev).kdat_operation);
	CHECK(no_event(p.s.dto_evd), "RDMA completed at the target");
	/* a receive flushed by the EP's free is still a receive */
	t = seg(&p.s, 0, 64);
	CHECK_OK(dat_ep_post_recv(sep, 1, &t, cookie(5),
				  DAT_COMPLETION_DEFAULT_FLAG));
	CHECK_OK(dat_ep_free(sep));
	while (next_event(p.s.dto_evd, &ev) &&
	       ev.event_number != DAT_DTO_COMPLETION_EVENT)
		;
	CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT &&
	      DTO(ev).status == DAT_DTO_ERR_FLUSHED &&
	      DTO(ev).user_cookie.as_64 == 5 &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_RECV,
	      "flushed receive: status %d op %u", DTO(ev).status,
	      DTO(ev).kdat_operation);
out:
	pair_close(&p);
	kfree(target);
}

/*
 * Atomics' arguments, each refused with its exact code before anything is
 * posted: a remote address not aligned to 8 (the remote triplet's ARGn), a
 * local segment other than 8 bytes or a remote one shorter (LENGTH_ERROR),
 * a local LMR without local write (PRIVILEGES_VIOLATION), NULL local or
 * remote, bad flags, an EP with no RDMA Reads out (INVALID_STATE), a bad
 * handle.
 */
static void t_ep_atomic_bad_arguments(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep, cep, ep0;
	DAT_LMR_HANDLE lmr, ro;
	DAT_LMR_CONTEXT ro_ctx;
	DAT_RMR_TRIPLET rt, bad;
	DAT_LMR_TRIPLET t;
	DAT_EP_ATTR a = ep_attr();
	DAT_REGION_DESCRIPTION r;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN rsize;
	DAT_VADDR raddr;
	DAT_EVENT ev;
	u8 *target = kzalloc(4096, GFP_KERNEL);
	u8 *rbuf = kzalloc(64, GFP_KERNEL);

	CHECK(target && rbuf && !rdma_pair(&p, &sep, &cep), "setup");
	CHECK_OK(remote_target(&p, target, 4096, &lmr, &rt));
	t = seg(&p.c, 0, 8);
	bad = rt;
	bad.target_address += 4;
	CHECK_EXACT(kdat_ep_post_cmp_and_swap(cep, 1, 2, &t, cookie(1), &bad,
					      DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6));
	CHECK_EXACT(kdat_ep_post_fetch_and_add(cep, 1, &t, cookie(1), &bad,
					       DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));
	CHECK_EXACT(kdat_ep_post_cmp_and_swap(cep, 1, 2, NULL, cookie(1), &rt,
					      DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4));
	CHECK_EXACT(kdat_ep_post_fetch_and_add(cep, 1, &t, cookie(1), NULL,
					       DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));
	CHECK_EXACT(kdat_ep_post_cmp_and_swap(cep, 1, 2, &t, cookie(1), &rt,
					      DAT_COMPLETION_UNSIGNALLED_FLAG),
		    DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7));
	CHECK_EXACT(kdat_ep_post_fetch_and_add(cep, 1, &t, cookie(1), &rt,
					       DAT_COMPLETION_UNSIGNALLED_FLAG),
		    DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6));
	t.segment_length = 4;
	CHECK_EXACT(kdat_ep_post_cmp_and_swap(cep, 1, 2, &t, cookie(1), &rt,
					      DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_LENGTH_ERROR, 0));
	t.segment_length = 16;
	CHECK_EXACT(kdat_ep_post_fetch_and_add(cep, 1, &t, cookie(1), &rt,
					       DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_LENGTH_ERROR, 0));
	t.segment_length = 8;
	bad = rt;
	bad.segment_length = 4;
	CHECK_EXACT(kdat_ep_post_cmp_and_swap(cep, 1, 2, &t, cookie(1), &bad,
					      DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_LENGTH_ERROR, 0));
	/* the old value is written: the local LMR needs local write */
	r.for_va = rbuf;
	CHECK_OK(dat_lmr_kcreate(p.c.ia, DAT_MEM_TYPE_VIRTUAL, r, 64, p.c.pz,
				 DAT_MEM_PRIV_LOCAL_READ_FLAG,
				 DAT_MEM_OPTIMIZE_DONT_CARE, &ro, &ro_ctx,
				 &rctx, &rsize, &raddr));
	t = (DAT_LMR_TRIPLET){ .lmr_context = ro_ctx,
			       .virtual_address = (DAT_VADDR)(uintptr_t)rbuf,
			       .segment_length = 8 };
	CHECK_EXACT(kdat_ep_post_fetch_and_add(cep, 1, &t, cookie(1), &rt,
					       DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_PRIVILEGES_VIOLATION, 0));
	/* outside its LMR */
	t = seg(&p.c, (1 << 20) - 4, 8);
	CHECK_RET(kdat_ep_post_fetch_and_add(cep, 1, &t, cookie(1), &rt,
					     DAT_COMPLETION_DEFAULT_FLAG),
		  DAT_INVALID_PARAMETER);
	CHECK_EXACT(kdat_ep_post_fetch_and_add(NULL, 1, &t, cookie(1), &rt,
					       DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
	/* an EP without RDMA Reads out cannot have atomics outstanding */
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &ep0));
	t = seg(&p.c, 0, 8);
	CHECK_EXACT(kdat_ep_post_cmp_and_swap(ep0, 1, 2, &t, cookie(1), &rt,
					      DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_ERROR(DAT_INVALID_STATE, 0));
	CHECK(no_event(p.c.dto_evd), "a refused atomic completed");
	(void)ev;
out:
	pair_close(&p);
	kfree(target);
	kfree(rbuf);
}

/*
 * Compare-and-swap writes the swap value only if the target held the
 * compare value, fetch-and-add adds; each returns the value it found in
 * the 8-byte local segment and completes as its operation, on the
 * initiator only.  The target is kernel memory whose LMR has remote
 * atomics (the PZ's atomic DMA MR).
 */
static void t_ep_atomics_change_remote_memory_and_return_old_value(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep, cep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_REGION_DESCRIPTION r;
	DAT_RMR_TRIPLET rt;
	DAT_LMR_TRIPLET t;
	DAT_VLEN rsize;
	DAT_EVENT ev;
	u64 *target = kzalloc(4096, GFP_KERNEL);
	u64 *res;

	CHECK(target && !rdma_pair(&p, &sep, &cep), "setup");
	r.for_va = target;
	CHECK_OK(dat_lmr_kcreate(p.s.ia, DAT_MEM_TYPE_VIRTUAL, r, 4096, p.s.pz,
				 DAT_MEM_PRIV_ALL_FLAG |
				 KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG,
				 DAT_MEM_OPTIMIZE_DONT_CARE, &lmr, &lctx,
				 &rt.rmr_context, &rsize, &rt.target_address));
	rt.target_address += 64;
	rt.segment_length = 8;
	target[8] = 0x12345;
	res = (u64 *)p.c.buf;
	*res = 0;
	t = seg(&p.c, 0, 8);
	CHECK_OK(kdat_ep_post_cmp_and_swap(cep, 0x12345, 0x98765, &t, cookie(1),
					   &rt, DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev), "no completion");
	CHECK(DTO(ev).status == DAT_DTO_SUCCESS && DTO(ev).user_cookie.as_64 == 1 &&
	      DTO(ev).transfered_length == 8 &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_CMP_AND_SWAP,
	      "cmp_swap: status %d op %u len %llu", DTO(ev).status,
	      DTO(ev).kdat_operation, DTO(ev).transfered_length);
	CHECK(*res == 0x12345 && READ_ONCE(target[8]) == 0x98765,
	      "cmp_swap: old 0x%llx target 0x%llx", *res, target[8]);
	/* no match: nothing swapped, the value found comes back */
	CHECK_OK(kdat_ep_post_cmp_and_swap(cep, 0x1, 0x2, &t, cookie(2), &rt,
					   DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) && DTO(ev).status == DAT_DTO_SUCCESS,
	      "second cmp_swap");
	CHECK(*res == 0x98765 && READ_ONCE(target[8]) == 0x98765,
	      "no match: old 0x%llx target 0x%llx", *res, target[8]);
	CHECK_OK(kdat_ep_post_fetch_and_add(cep, 0x10, &t, cookie(3), &rt,
					    DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev), "no completion");
	CHECK(DTO(ev).status == DAT_DTO_SUCCESS && DTO(ev).user_cookie.as_64 == 3 &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_FETCH_AND_ADD,
	      "fetch_add: status %d op %u", DTO(ev).status,
	      DTO(ev).kdat_operation);
	CHECK(*res == 0x98765 && READ_ONCE(target[8]) == 0x98775,
	      "fetch_add: old 0x%llx target 0x%llx", *res, target[8]);
	CHECK(target[7] == 0 && target[9] == 0, "neighbours touched");
	CHECK(no_event(p.s.dto_evd), "the target saw an event");
out:
	pair_close(&p);
	kfree(target);
}

/*
 * An atomic the target refuses (an LMR without remote atomics)
 * completes with an error that still names the operation, and leaves the
 * target and the local result buffer as they were.
 */
static void t_ep_atomic_refused_by_target_names_operation(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE sep, cep;
	DAT_LMR_HANDLE lmr;
	DAT_RMR_TRIPLET rt;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	u64 *target = kzalloc(4096, GFP_KERNEL);

	CHECK(target && !rdma_pair(&p, &sep, &cep), "setup");
	CHECK_OK(remote_target(&p, target, 4096, &lmr, &rt));
	target[0] = 0x12345;
	*(u64 *)p.c.buf = 0x77;
	t = seg(&p.c, 0, 8);
	CHECK_OK(kdat_ep_post_cmp_and_swap(cep, 0x12345, 0x98765, &t, cookie(9),
					   &rt, DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev), "no completion");
	CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT &&
	      DTO(ev).status != DAT_DTO_SUCCESS &&
	      DTO(ev).user_cookie.as_64 == 9 &&
	      DTO(ev).kdat_operation == KDAT_DTO_OP_CMP_AND_SWAP,
	      "status %d cookie %llu op %u", DTO(ev).status,
	      DTO(ev).user_cookie.as_64, DTO(ev).kdat_operation);
	CHECK(target[0] == 0x12345 && *(u64 *)p.c.buf == 0x77,
	      "target 0x%llx result 0x%llx", target[0], *(u64 *)p.c.buf);
out:
	pair_close(&p);
	kfree(target);
}

/* ------------------------------------------------------------------ */
/* EP attributes: defaults, checks, error subtypes                     */

/*
 * dat_ep_create_with_srq: a consumer "can specify values only for the
 * parameters needed and default for the rest"; dat_ep_query reports what
 * was chosen.  dat_ep_create also takes NULL attributes for all defaults.
 */
static void t_ep_hw_default_attributes_resolved(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	struct kt_side x = {};
	DAT_IA_ATTR ia;
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep, ep2, ep3;
	DAT_EP_PARAM q;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_ia_query(x.ia, NULL, DAT_IA_FIELD_ALL, &ia, 0, NULL));
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	a.max_recv_dtos = DAT_HW_DEFAULT;
	a.max_request_dtos = DAT_HW_DEFAULT;
	a.max_request_iov = DAT_HW_DEFAULT;
	a.max_message_size = (DAT_VLEN)DAT_HW_DEFAULT;
	a.max_rdma_size = (DAT_VLEN)DAT_HW_DEFAULT;
	a.max_rdma_read_in = DAT_HW_DEFAULT;
	a.max_rdma_read_out = DAT_HW_DEFAULT;
	a.srq_soft_hw = DAT_HW_DEFAULT;
	a.max_rdma_read_iov = DAT_HW_DEFAULT;
	a.max_rdma_write_iov = DAT_HW_DEFAULT;
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
	/* an SRQ EP's default receive depth is its SRQ's */
	CHECK(q.ep_attr.max_recv_dtos == srq_q(srq).max_recv_dtos,
	      "max_recv_dtos %d", q.ep_attr.max_recv_dtos);
	CHECK(q.ep_attr.max_request_dtos > 0 &&
	      q.ep_attr.max_request_dtos != DAT_HW_DEFAULT &&
	      q.ep_attr.max_request_dtos <= ia.max_dto_per_ep,
	      "max_request_dtos %d", q.ep_attr.max_request_dtos);
	CHECK(q.ep_attr.max_request_iov > 0 &&
	      q.ep_attr.max_request_iov <= ia.max_iov_segments_per_dto,
	      "max_request_iov %d", q.ep_attr.max_request_iov);
	CHECK(q.ep_attr.max_message_size > 0 &&
	      q.ep_attr.max_message_size <= ia.max_message_size &&
	      q.ep_attr.max_rdma_size <= ia.max_rdma_size,
	      "sizes %llu/%llu", (u64)q.ep_attr.max_message_size,
	      (u64)q.ep_attr.max_rdma_size);
	/* the page's recommended default for outstanding RDMA Reads */
	CHECK(q.ep_attr.max_rdma_read_in == 0 &&
	      q.ep_attr.max_rdma_read_out == 0, "rdma reads %d/%d",
	      q.ep_attr.max_rdma_read_in, q.ep_attr.max_rdma_read_out);
	CHECK(q.ep_attr.max_rdma_read_iov > 0 &&
	      q.ep_attr.max_rdma_read_iov <= ia.max_iov_segments_per_rdma_read &&
	      q.ep_attr.max_rdma_write_iov > 0 &&
	      q.ep_attr.max_rdma_write_iov <=
	      ia.max_iov_segments_per_rdma_write, "rdma iov %d/%d",
	      q.ep_attr.max_rdma_read_iov, q.ep_attr.max_rdma_write_iov);
	CHECK(q.ep_attr.srq_soft_hw == DAT_HW_DEFAULT, "srq_soft_hw %d",
	      q.ep_attr.srq_soft_hw);
	/* the same defaults on an EP without SRQ, and for NULL attributes */
	a.max_recv_iov = DAT_HW_DEFAULT;
	CHECK_OK(dat_ep_create(x.ia, x.pz, x.dto_evd, x.dto_evd, x.conn_evd,
			       &a, &ep2));
	CHECK_OK(dat_ep_query(ep2, DAT_EP_FIELD_ALL, &q));
	CHECK(q.ep_attr.max_recv_dtos > 0 &&
	      q.ep_attr.max_recv_dtos != DAT_HW_DEFAULT &&
	      q.ep_attr.max_recv_iov > 0 &&
	      q.ep_attr.max_recv_iov != DAT_HW_DEFAULT,
	      "receive defaults %d/%d", q.ep_attr.max_recv_dtos,
	      q.ep_attr.max_recv_iov);
	CHECK_OK(dat_ep_create(x.ia, x.pz, x.dto_evd, x.dto_evd, x.conn_evd,
			       NULL, &ep3));
	CHECK_OK(dat_ep_query(ep3, DAT_EP_FIELD_ALL, &q));
	CHECK(q.ep_attr.max_request_dtos > 0 && q.ep_attr.max_recv_dtos > 0 &&
	      q.ep_attr.service_type == DAT_SERVICE_TYPE_RC, "NULL defaults");
	/* explicit values stay exact beside defaulted ones */
	a = ep_attr();
	a.max_request_dtos = DAT_HW_DEFAULT;
	a.max_recv_dtos = 5;
	CHECK_OK(dat_ep_free(ep));
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
	CHECK(q.ep_attr.max_recv_dtos == 5 &&
	      q.ep_attr.max_message_size == a.max_message_size,
	      "exact values changed");
out:
	side_close(&x);
}

/*
 * Every error subtype names the argument of the call it serves:
 * ep_attributes is ARG7 of dat_ep_create_with_srq (ARG6 of dat_ep_create),
 * ep_handle ARG8 (ARG7), private_data ARG6 of dat_ep_connect and ARG4 of
 * dat_cr_accept.
 */
static void t_ep_error_subtypes_name_the_argument(void)
{
	static struct pair p;	/* too big for the stack */
	struct sockaddr_in sin = { .sin_family = AF_INET };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ep, sep, cep;
	DAT_EVD_HANDLE mixed;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 0, 4), "setup");
	a.max_request_dtos = 0;
	CHECK_EXACT(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
					   p.s.dto_evd, p.s.conn_evd, p.srq,
					   &a, &ep), BAD_ARG(DAT_INVALID_ARG7));
	CHECK_EXACT(dat_ep_create(p.s.ia, p.s.pz, p.s.dto_evd, p.s.dto_evd,
				  p.s.conn_evd, &a, &ep),
		    BAD_ARG(DAT_INVALID_ARG6));
	a = ep_attr();
	a.service_type = (DAT_SERVICE_TYPE)7;
	CHECK_EXACT(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
					   p.s.dto_evd, p.s.conn_evd, p.srq,
					   &a, &ep), BAD_ARG(DAT_INVALID_ARG7));
	a = ep_attr();
	CHECK_EXACT(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
					   p.s.dto_evd, p.s.conn_evd, p.srq,
					   NULL, &ep), BAD_ARG(DAT_INVALID_ARG7));
	CHECK_EXACT(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
					   p.s.dto_evd, p.s.conn_evd, p.srq,
					   &a, NULL), BAD_ARG(DAT_INVALID_ARG8));
	CHECK_EXACT(dat_ep_create(p.s.ia, p.s.pz, p.s.dto_evd, p.s.dto_evd,
				  p.s.conn_evd, &a, NULL),
		    BAD_ARG(DAT_INVALID_ARG7));
	/* a completion-flag rule broken by the attributes: ARG7 too */
	CHECK_OK(dat_evd_kcreate(p.s.ia, 16, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG,
				 &mixed));
	a.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
	CHECK_EXACT(dat_ep_create_with_srq(p.s.ia, p.s.pz, mixed, p.s.dto_evd,
					   p.s.conn_evd, p.srq, &a, &ep),
		    BAD_ARG(DAT_INVALID_ARG7));
	a = ep_attr();
	/* private data */
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
					p.s.dto_evd, p.s.conn_evd, p.srq, &a,
					&sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	sin.sin_addr.s_addr = in_aton(srv_addr);
	CHECK_OK(dat_psp_create(p.s.ia, next_qual, p.s.cr_evd,
				DAT_PSP_CONSUMER_FLAG, &p.psp));
	CHECK_EXACT(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, next_qual,
				   DAT_TIMEOUT_INFINITE, 4, NULL,
				   DAT_QOS_BEST_EFFORT,
				   DAT_CONNECT_DEFAULT_FLAG),
		    BAD_ARG(DAT_INVALID_ARG6));
	CHECK_EXACT(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, next_qual,
				   DAT_TIMEOUT_INFINITE, -1, NULL,
				   DAT_QOS_BEST_EFFORT,
				   DAT_CONNECT_DEFAULT_FLAG),
		    BAD_ARG(DAT_INVALID_ARG5));
	CHECK_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, next_qual,
				DAT_TIMEOUT_INFINITE, 0, NULL,
				DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	CHECK(next_event(p.s.cr_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_REQUEST_EVENT, "no CR");
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	CHECK_EXACT(dat_cr_accept(cr, sep, 4, NULL),
		    BAD_ARG(DAT_INVALID_ARG4));
	CHECK_EXACT(dat_cr_accept(cr, sep, -1, NULL),
		    BAD_ARG(DAT_INVALID_ARG3));
	CHECK_OK(dat_cr_reject(cr));
out:
	pair_close(&p);
}

/*
 * The page's example: max_rdma_read_iov beyond the IA's capabilities is
 * DAT_INVALID_PARAMETER (ep_attributes' subtype); so is max_rdma_write_iov.
 * A soft high watermark (srq_soft_hw) is a model this provider does not
 * offer (dat_ep_set_watermark): DAT_MODEL_NOT_SUPPORTED.  Posts respect the
 * EP's RDMA segment limits.
 */
static void t_ep_attr_checked_against_ia_caps(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 10, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	struct kt_side x = {};
	DAT_IA_ATTR ia;
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM q;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_ia_query(x.ia, NULL, DAT_IA_FIELD_ALL, &ia, 0, NULL));
	CHECK(ia.max_iov_segments_per_rdma_read > 0 &&
	      ia.max_iov_segments_per_rdma_write > 0, "IA RDMA iov %d/%d",
	      ia.max_iov_segments_per_rdma_read,
	      ia.max_iov_segments_per_rdma_write);
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	a.max_rdma_read_iov = ia.max_iov_segments_per_rdma_read + 1;
	CHECK_EXACT(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					   x.conn_evd, srq, &a, &ep),
		    BAD_ARG(DAT_INVALID_ARG7));
	CHECK_EXACT(dat_ep_create(x.ia, x.pz, x.dto_evd, x.dto_evd,
				  x.conn_evd, &a, &ep),
		    BAD_ARG(DAT_INVALID_ARG6));
	a = ep_attr();
	a.max_rdma_write_iov = ia.max_iov_segments_per_rdma_write + 1;
	CHECK_EXACT(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					   x.conn_evd, srq, &a, &ep),
		    BAD_ARG(DAT_INVALID_ARG7));
	a = ep_attr();
	a.max_rdma_read_iov = -5;
	CHECK_EXACT(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					   x.conn_evd, srq, &a, &ep),
		    BAD_ARG(DAT_INVALID_ARG7));
	a = ep_attr();
	a.srq_soft_hw = 4;
	CHECK_EXACT(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					   x.conn_evd, srq, &a, &ep),
		    DAT_CLASS_ERROR | DAT_MODEL_NOT_SUPPORTED);
	a.srq_soft_hw = -7;
	CHECK_EXACT(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					   x.conn_evd, srq, &a, &ep),
		    BAD_ARG(DAT_INVALID_ARG7));
	/* the limits themselves are accepted and reported exactly */
	a = ep_attr();
	a.max_request_iov = 2;
	a.max_rdma_read_iov = 1;
	a.max_rdma_write_iov = min(2, ia.max_iov_segments_per_rdma_write);
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
	CHECK(q.ep_attr.max_rdma_read_iov == 1 &&
	      q.ep_attr.max_rdma_write_iov == a.max_rdma_write_iov,
	      "rdma iov %d/%d", q.ep_attr.max_rdma_read_iov,
	      q.ep_attr.max_rdma_write_iov);
out:
	side_close(&x);
}

/* ------------------------------------------------------------------ */
/* Disconnect order                                                    */

struct hold_box {
	atomic_t calls;
	bool release;
	wait_queue_head_t wq;
};

/* The first upcall holds the recv CQ's poller until the test releases it. */
static void hold_upcall(DAT_PVOID data, const DAT_EVENT *ev, DAT_BOOLEAN more)
{
	struct hold_box *b = data;

	if (atomic_inc_return(&b->calls) == 1) {
		wake_up(&b->wq);
		wait_event_timeout(b->wq, READ_ONCE(b->release),
				   msecs_to_jiffies(WAIT_MS));
	}
	wake_up(&b->wq);
}

/*
 * dat_ep_create_with_srq's order: the receives an SRQ EP took complete
 * (or flush) onto its recv EVD before its DISCONNECTED event.  The first
 * receive's upcall holds the recv CQ's poller, so the other two stay in
 * the CQ; the peer then disconnects.  The EP is Disconnected at once, but
 * its event must wait for the poller: it is not there while the poller is
 * held, and once released, DISCONNECTED comes with all three receives
 * delivered.
 */
static void t_srq_disconnected_after_the_eps_receives(void)
{
	static struct pair p;	/* too big for the stack */
	static struct hold_box box;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = hold_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep, cep;
	DAT_EVD_HANDLE evd;
	DAT_EP_PARAM q;
	DAT_EVENT ev;
	int i;

	atomic_set(&box.calls, 0);
	box.release = false;
	init_waitqueue_head(&box.wq);
	CHECK(!pair_open(&p, 0, 8), "setup");
	CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &up,
				 DAT_EVD_DTO_FLAG, &evd));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd, NULL,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 6), "connect");
	p.cep[0] = cep;
	for (i = 0; i < 3; i++)
		CHECK_OK(post_srq(&p, i * 64, 64, 20 + i));
	/* each send completes once the server's device placed it */
	for (i = 0; i < 3; i++)
		CHECK(send_msg(&p, 0, 0, 8, i), "send %d", i);
	CHECK(wait_event_timeout(box.wq, atomic_read(&box.calls) >= 1,
				 msecs_to_jiffies(WAIT_MS)), "no upcall");
	CHECK(atomic_read(&box.calls) == 1, "poller not held");
	CHECK_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(WAIT_FOR(!dat_ep_query(sep, DAT_EP_FIELD_EP_STATE, &q) &&
		       q.ep_state == DAT_EP_STATE_DISCONNECTED),
	      "server EP never disconnected");
	/* DISCONNECTED is not queued while two receives wait in the CQ */
	CHECK(no_event(p.s.conn_evd), "DISCONNECTED before the receives");
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "no DISCONNECTED");
	CHECK(atomic_read(&box.calls) == 3,
	      "DISCONNECTED with %d of 3 receives delivered",
	      atomic_read(&box.calls));
out:
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	pair_close(&p);
}

/*
 * An upcall held on purpose: counts in @calls and wakes the test on @wq;
 * the first one (true) then holds its CQ's poller until the test sets
 * @release (bounded by WAIT_MS), the later ones (false) return at once.
 */
static bool hold_first_upcall(atomic_t *calls, bool *release,
			      wait_queue_head_t *wq)
{
	bool first = atomic_inc_return(calls) == 1;

	wake_up(wq);
	if (first)
		wait_event_timeout(*wq, READ_ONCE(*release),
				   msecs_to_jiffies(WAIT_MS));
	return first;
}

/*
 * An upcall that acts on its own EP once the test lets it: the first
 * receive's upcall holds the recv CQ's poller (the second receive waits
 * in the CQ), then frees the EP, or queries and disconnects it; with
 * free_evd it then frees its own EVD too.
 */
struct act_box {
	atomic_t calls;
	int act_at;			/* act at this call (0: the first) */
	bool release;
	bool free;			/* free the EP, else query + disconnect */
	bool free_evd;			/* then free evd, and query it */
	bool own_cq;			/* the EP has no request EVD */
	DAT_IA_HANDLE close_ia;		/* then close it (no query) */
	DAT_RETURN close_ret;
	DAT_SRQ_HANDLE free_srq;	/* free it instead of acting on ep */
	DAT_RETURN srq_ret;
	DAT_EP_HANDLE ep;
	DAT_EVD_HANDLE evd;
	DAT_RETURN ret, query_ret;
	DAT_RETURN evd_ret, evd_query_ret;
	DAT_EP_STATE state;
	struct completion done;
	wait_queue_head_t wq;
};

static void act_upcall(DAT_PVOID data, const DAT_EVENT *ev, DAT_BOOLEAN more)
{
	struct act_box *b = data;
	DAT_EP_PARAM q = {};
	bool first = hold_first_upcall(&b->calls, &b->release, &b->wq);

	if (b->act_at ? atomic_read(&b->calls) != b->act_at : !first)
		return;
	if (b->free_srq) {
		b->srq_ret = dat_srq_free(b->free_srq);
	} else if (b->free) {
		b->ret = dat_ep_free(b->ep);
		if (b->free_evd) {
			DAT_EVD_PARAM eq;

			b->evd_ret = dat_evd_free(b->evd);
			b->evd_query_ret = dat_evd_query(b->evd,
							 DAT_EVD_FIELD_ALL,
							 &eq);
		}
	} else if (!b->close_ia) {
		b->query_ret = dat_ep_query(b->ep, DAT_EP_FIELD_EP_STATE, &q);
		b->state = q.ep_state;
		b->ret = dat_ep_disconnect(b->ep, DAT_CLOSE_ABRUPT_FLAG);
	}
	if (b->close_ia)
		b->close_ret = dat_ia_close(b->close_ia, DAT_CLOSE_ABRUPT_FLAG);
	complete(&b->done);
}

/*
 * A server SRQ EP whose recv EVD runs act_upcall, connected, 2 sends in.
 * Its request EVD is the side's DTO EVD, or with own_cq none: the EP then
 * owns a CQ, which a free from the upcall cannot free in place (the same
 * lockdep class of CQ work as the one the upcall runs in).
 */
static int act_setup_flags(struct pair *p, struct act_box *b, bool free,
			   DAT_EVD_HANDLE *evd, DAT_EP_HANDLE *sep,
			   DAT_UINT32 srv_flags)
{
	DAT_UPCALL_OBJECT up = { .instance_data = b,
				 .upcall_func = act_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE cep;
	int i;

	atomic_set(&b->calls, 0);
	b->release = false;
	b->free = free;
	b->free_evd = false;
	b->ret = b->query_ret = DAT_INTERNAL_ERROR;
	b->evd_ret = b->evd_query_ret = DAT_INTERNAL_ERROR;
	b->srq_ret = DAT_INTERNAL_ERROR;
	init_completion(&b->done);
	init_waitqueue_head(&b->wq);
	if (pair_open_flags(p, 0, 8, srv_flags) ||
	    dat_evd_kcreate(p->s.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &up,
			    DAT_EVD_DTO_FLAG, evd) ||
	    dat_ep_create_with_srq(p->s.ia, p->s.pz, *evd,
				   b->own_cq ? DAT_HANDLE_NULL : p->s.dto_evd,
				   p->s.conn_evd, p->srq, &a, sep))
		return -EIO;
	if (dat_ep_create(p->c.ia, p->c.pz, p->c.dto_evd, p->c.dto_evd,
			  p->c.conn_evd, &a, &cep))
		return -EIO;
	p->cep[0] = cep;
	b->ep = *sep;
	if (connect_one(p, *sep, cep, 7))
		return -EIO;
	for (i = 0; i < 2; i++)
		if (post_srq(p, i * 64, 64, 30 + i) || !send_msg(p, 0, 0, 8, i))
			return -EIO;
	if (!wait_event_timeout(b->wq, atomic_read(&b->calls) >= 1,
				msecs_to_jiffies(WAIT_MS)))
		return -ETIMEDOUT;
	return 0;
}

static int act_setup(struct pair *p, struct act_box *b, bool free,
		     DAT_EVD_HANDLE *evd, DAT_EP_HANDLE *sep)
{
	return act_setup_flags(p, b, free, evd, sep, 0);
}

/* Let the held upcall act; false if it did not end within the limit. */
static bool act_release(struct act_box *b)
{
	WRITE_ONCE(b->release, true);
	wake_up(&b->wq);
	return wait_for_completion_timeout(&b->done,
					   msecs_to_jiffies(2 * WAIT_MS));
}

/* A case's end: the upcall let go (if it is still held), the pair closed. */
static void act_end(struct pair *p, struct act_box *b)
{
	WRITE_ONCE(b->release, true);
	wake_up(&b->wq);
	pair_close(p);
}

/*
 * A new QP that takes only the first of the three receives waiting in its
 * EP's ring (kdat_test_fault_new_qp_post): that receive completes, flushed,
 * through the recv CQ's poller, whose upcall acts on the EP.  On the
 * accept side it queries and disconnects the EP (op_lock), on the connect
 * side it frees it (the CM ID's handler lock).  The accept and the
 * connect's CM handler used to drain that QP in place, holding op_lock or
 * the handler lock: each waited for ever on its upcall.  Now the EP keeps
 * the QP for its end: the accept returns DAT_INTERNAL_ERROR with the EP
 * Disconnected, the upcalls return, and every receive completes once,
 * all three without a free on the accept side.  Last, the connect side's
 * upcall frees the EP at the second receive, one gone_work flushed.
 */
struct nqp_accept {
	DAT_CR_HANDLE cr;
	DAT_EP_HANDLE ep;
	DAT_RETURN ret;
	struct completion done;
};

static int nqp_accept_thread(void *data)
{
	struct nqp_accept *a = data;

	a->ret = dat_cr_accept(a->cr, a->ep, 0, NULL);
	complete(&a->done);
	return 0;
}

/* An act_box whose upcall acts at once on @ep (@free: frees it). */
static void nqp_box_init(struct act_box *b, bool free)
{
	memset(b, 0, sizeof(*b));
	b->release = true;
	b->free = free;
	b->ret = b->query_ret = DAT_INTERNAL_ERROR;
	init_completion(&b->done);
	init_waitqueue_head(&b->wq);
}

/* An EP on @x whose receives go to a new EVD running @b's act_upcall. */
static DAT_RETURN nqp_ep(struct kt_side *x, struct act_box *b,
			 DAT_EVD_HANDLE *evd, DAT_EP_HANDLE *ep)
{
	DAT_UPCALL_OBJECT up = { .instance_data = b,
				 .upcall_func = act_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_LMR_TRIPLET t;
	DAT_RETURN ret;
	int i;

	ret = dat_evd_kcreate(x->ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &up,
			      DAT_EVD_DTO_FLAG, evd);
	if (!ret)
		ret = dat_ep_create(x->ia, x->pz, *evd, x->dto_evd,
				    x->conn_evd, &a, ep);
	for (i = 0; !ret && i < 3; i++) {
		t = seg(x, i * 64, 64);
		ret = dat_ep_post_recv(*ep, 1, &t, cookie(40 + i),
				       DAT_COMPLETION_DEFAULT_FLAG);
	}
	b->ep = *ep;
	return ret;
}

static void t_new_qp_post_fails_under_an_upcall_that_takes_the_ep(void)
{
	static struct pair p;
	static struct act_box sb, cb;
	static struct nqp_accept acc;
	DAT_EVD_HANDLE sevd, cevd;
	DAT_EP_HANDLE sep, cep, plain;
	struct task_struct *k;
	bool hung = false;
	int act_at;
	DAT_EVENT ev;

	nqp_box_init(&sb, false);
	init_completion(&acc.done);
	CHECK(!pair_open(&p, 0, 4), "setup");
	CHECK_OK(dat_psp_create(p.s.ia, next_qual, p.s.cr_evd,
				DAT_PSP_CONSUMER_FLAG, &p.psp));
	kdat_test_fault_new_qp_post(true);

	/* accept: the upcall disconnects the EP the accept holds */
	CHECK_OK(nqp_ep(&p.s, &sb, &sevd, &sep));
	CHECK_OK(plain_ep(&p.c, &plain));
	CHECK_OK(connect_to(plain, next_qual, 0, NULL));
	CHECK(next_event(p.s.cr_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_REQUEST_EVENT, "no request");
	acc.cr = ev.event_data.cr_arrival_event_data.cr_handle;
	acc.ep = sep;
	k = kthread_run(nqp_accept_thread, &acc, "kdat_nqp_accept");
	CHECK(!IS_ERR(k), "kthread");
	hung = !wait_for_completion_timeout(&acc.done,
					    msecs_to_jiffies(3 * WAIT_MS));
	CHECK(!hung, "dat_cr_accept never returned (deadlock with the upcall)");
	CHECK_EXACT(acc.ret, DAT_CLASS_ERROR | DAT_INTERNAL_ERROR);
	hung = !wait_for_completion_timeout(&sb.done,
					    msecs_to_jiffies(WAIT_MS));
	CHECK(!hung, "the upcall's calls on the EP never returned");
	CHECK_OK(sb.query_ret);
	CHECK_OK(sb.ret);
	CHECK(ep_state(sep) == DAT_EP_STATE_DISCONNECTED, "state %d",
	      ep_state(sep));
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED,
	      "the client of a failed accept: event 0x%x", ev.event_number);
	/* a Disconnected EP holds no receive: all three come, no free */
	CHECK(WAIT_FOR(atomic_read(&sb.calls) == 3),
	      "%d of 3 receives", atomic_read(&sb.calls));
	CHECK_OK(dat_ep_free(sep));
	CHECK_OK(dat_ep_free(plain));

	/*
	 * connect: the upcall frees the EP whose CM handler made the QP (at
	 * the first receive, the one the QP took); then at the second, one
	 * the QP never took, which gone_work flushes: its upcall used to run
	 * in gone_work itself, where the free waits for gone_work.
	 */
	for (act_at = 1; act_at <= 2; act_at++) {
		nqp_box_init(&cb, true);
		cb.act_at = act_at;
		CHECK_OK(nqp_ep(&p.c, &cb, &cevd, &cep));
		CHECK_OK(connect_to(cep, next_qual, 0, NULL));
		hung = !wait_for_completion_timeout(&cb.done,
						    msecs_to_jiffies(3 * WAIT_MS));
		CHECK(!hung, "dat_ep_free in the upcall of receive %d never returned",
		      act_at);
		CHECK_OK(cb.ret);
		CHECK(WAIT_FOR(atomic_read(&cb.calls) == 3),
		      "%d of 3 receives after the free at receive %d",
		      atomic_read(&cb.calls), act_at);
		CHECK(no_event(p.s.cr_evd), "a request from the failed connect");
	}
out:
	kdat_test_fault_new_qp_post(false);
	if (hung) {
		pr_err("kdat_test: %s: a call hangs: objects left open\n",
		       cur_test);
		return;
	}
	pair_close(&p);
}

/*
 * A DTO upcall frees its own EP while the peer's disconnect is being
 * delivered: the connection event waits for the very poller the upcall
 * runs in, so that wait must hold no lock the free takes (the CM ID's
 * handler lock, op_lock).  The free completes (a deadlock shows as the
 * timeout below plus a hung-task report), and a freed EP gets no event.
 */
static void t_ep_upcall_frees_its_ep_while_peer_disconnects(void)
{
	static struct pair p;
	static struct act_box box;
	DAT_EP_HANDLE sep = NULL;
	DAT_EVD_HANDLE evd;
	DAT_EP_PARAM q;
	bool done;

	CHECK(!act_setup(&p, &box, true, &evd, &sep), "setup");
	CHECK_OK(dat_ep_disconnect(p.cep[0], DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(WAIT_FOR(!dat_ep_query(sep, DAT_EP_FIELD_EP_STATE, &q) &&
		       q.ep_state == DAT_EP_STATE_DISCONNECTED),
	      "server EP never disconnected");
	CHECK(no_event(p.s.conn_evd), "DISCONNECTED before the receives");
	/* a failure detector only: the pass criterion is the free's return */
	done = act_release(&box);
	CHECK(done, "dat_ep_free in the upcall never returned (deadlock)");
	CHECK_OK(box.ret);
	CHECK(no_event(p.s.conn_evd), "an event for the freed EP");
out:
	act_end(&p, &box);
}

/*
 * A DTO upcall frees its EP and then its own EVD.  The upcall runs inside
 * that EVD's CQ poller, and freeing the CQ there would wait for the very
 * run it is in (ib_free_cq cancels the poller's work): the free returns
 * DAT_SUCCESS at once and the handle is dead.  The second receive, still
 * in the CQ, reaches no upcall; once the poller's run ends the CQ, the EVD
 * and the EP are gone (two live objects fewer), and nothing else of the
 * pair changed.
 */
static void t_evd_dto_upcall_frees_its_ep_and_evd(void)
{
	static struct pair p;
	static struct act_box box;
	DAT_EP_HANDLE sep = NULL;
	DAT_EVD_HANDLE evd;
	DAT_EVENT ev;
	long live;
	bool done;

	CHECK(!act_setup(&p, &box, true, &evd, &sep), "setup");
	/* the upcall is held: it reads these once released */
	box.evd = evd;
	box.free_evd = true;
	live = kdat_live_objects();
	/* a failure detector only: the pass criterion is the free's return */
	done = act_release(&box);
	CHECK(done, "dat_evd_free in its DTO upcall never returned (deadlock)");
	CHECK_OK(box.ret);
	CHECK_OK(box.evd_ret);
	CHECK_RET(box.evd_query_ret, DAT_INVALID_HANDLE);
	CHECK(WAIT_FOR(kdat_live_objects() == live - 2),
	      "%ld live objects, want %ld (EP and EVD gone)",
	      kdat_live_objects(), live - 2);
	/* its CQ is freed: nothing can call the upcall any more */
	CHECK(atomic_read(&box.calls) == 1,
	      "%d upcalls, the last after the free", atomic_read(&box.calls));
	/* the second receive, left in the CQ, was reaped, not lost */
	CHECK(srq_q(p.srq).outstanding_dto_count == 0 &&
	      srq_q(p.srq).available_dto_count == 0, "SRQ counts %d/%d",
	      srq_q(p.srq).available_dto_count,
	      srq_q(p.srq).outstanding_dto_count);
	/* the client sees the free's disconnect, and the server IA serves on */
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "client saw no DISCONNECTED");
	CHECK(no_event(p.s.conn_evd), "an event for the freed EP");
	CHECK_OK(post_srq(&p, 0, 64, 50));
	CHECK(srq_q(p.srq).available_dto_count == 1, "SRQ after the free");
out:
	act_end(&p, &box);
}

/*
 * A DTO upcall frees its SRQ EP, which has no request EVD and so a CQ of
 * its own.  The drain does not wait for the upcall's poller, but freeing
 * that CQ in a poller's run would wait for another run of CQ work, which
 * lockdep (one class for every CQ's work) reports as recursion: the
 * debug stage fails on it.  So the free hands its rest to a work item:
 * DAT_SUCCESS at once, the EP gone after, and then its recv EVD is free
 * to go.
 */
static void t_ep_upcall_frees_an_ep_with_its_own_cq(void)
{
	static struct pair p;
	static struct act_box box;
	DAT_EP_HANDLE sep = NULL;
	DAT_EVD_HANDLE evd;
	long live;

	box.own_cq = true;
	CHECK(!act_setup(&p, &box, true, &evd, &sep), "setup");
	live = kdat_live_objects();
	CHECK(act_release(&box),
	      "dat_ep_free in the upcall never returned (deadlock)");
	CHECK_OK(box.ret);
	CHECK(WAIT_FOR(kdat_live_objects() == live - 1),
	      "%ld live objects, want %ld (the EP gone)", kdat_live_objects(),
	      live - 1);
	CHECK(WAIT_FOR(dat_evd_free(evd) == DAT_SUCCESS),
	      "the recv EVD stays in use");
out:
	act_end(&p, &box);
}

/*
 * A DTO upcall frees another SRQ, whose EP had no recv EVD: its receives
 * completed on a CQ of the SRQ's own.  Freeing that CQ in the upcall's
 * poller run would wait for another run of CQ work, which lockdep (one
 * class for every CQ's work) reports as recursion: the debug stage fails
 * on it.  So the CQ goes in a work item: the free returns DAT_SUCCESS,
 * the handle is dead at once, and the SRQ object goes once the CQ is.
 */
static void t_srq_free_from_an_upcall_with_its_own_cq(void)
{
	static struct pair p;
	static struct act_box box;
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 2,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep = NULL, sep2, cep2;
	DAT_EVD_HANDLE evd;
	DAT_SRQ_HANDLE srq2;
	DAT_SRQ_PARAM sq;
	long live;

	box.free_srq = NULL;
	CHECK(!act_setup(&p, &box, false, &evd, &sep), "setup");
	CHECK_OK(dat_srq_create(p.s.ia, p.s.pz, &sa, &srq2));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, NULL, p.s.dto_evd,
					p.s.conn_evd, srq2, &a, &sep2));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep2));
	CHECK(!connect_one(&p, sep2, cep2, 9), "connect");
	CHECK(kdat_test_ep_recv_cq_size(sep2) > 0, "the SRQ has no CQ");
	/* the two EPs and the SRQ go */
	live = kdat_live_objects();
	CHECK_OK(dat_ep_free(sep2));
	CHECK_OK(dat_ep_free(cep2));
	box.free_srq = srq2;
	CHECK(act_release(&box),
	      "dat_srq_free in the upcall never returned (deadlock)");
	CHECK_OK(box.srq_ret);
	CHECK_RET(dat_srq_query(srq2, DAT_SRQ_FIELD_ALL, &sq),
		  DAT_INVALID_HANDLE);
	CHECK(WAIT_FOR(kdat_live_objects() == live - 3),
	      "%ld live objects, want %ld (the EPs and the SRQ gone)",
	      kdat_live_objects(), live - 3);
out:
	/* a failed case's SRQ and EPs go with the IAs */
	box.free_srq = NULL;
	act_end(&p, &box);
}

/*
 * A DTO upcall closes its own IA, whose close would wait for the very
 * poller the upcall runs in (the frees drain through it): refused with
 * DAT_INVALID_STATE (it used to wait for ever), and the IA and its
 * objects serve on as before; the test's own close works after.
 */
static void t_ia_close_from_its_own_dto_upcall_refused(void)
{
	static struct pair p;
	static struct act_box box;
	DAT_EP_HANDLE sep = NULL;
	DAT_EVD_HANDLE evd;
	DAT_EP_PARAM q;

	CHECK(!act_setup(&p, &box, false, &evd, &sep), "setup");
	box.close_ia = p.s.ia;
	CHECK(act_release(&box),
	      "dat_ia_close in the upcall never returned (deadlock)");
	CHECK_EXACT(box.close_ret, BAD_STATE(0));
	/* the second receive's upcall ran too: the poller went on */
	CHECK(WAIT_FOR(atomic_read(&box.calls) == 2), "%d upcalls, want 2",
	      atomic_read(&box.calls));
	CHECK_OK(dat_ep_query(sep, DAT_EP_FIELD_EP_STATE, &q));
	CHECK(q.ep_state == DAT_EP_STATE_CONNECTED, "EP state %d",
	      q.ep_state);
	CHECK_OK(post_srq(&p, 0, 64, 80));
	CHECK(send_msg(&p, 0, 0, 8, 81), "send after the refused close");
	CHECK(WAIT_FOR(atomic_read(&box.calls) == 3),
	      "no upcall for a receive after the refused close");
	CHECK(no_event(p.s.async_evd), "an async event");
	CHECK(no_event(p.s.conn_evd), "a connection event (disconnected?)");
out:
	act_end(&p, &box);
}

/*
 * A DTO upcall frees its EP and its own EVD, then closes the IA.  The
 * EVD's CQ goes in a work item that waits for the run the upcall is in,
 * and the close would wait for that work: refused with DAT_INVALID_STATE
 * (it used to wait for ever); the EP and the EVD go, and the IA serves
 * on (a new EP connects and takes a message through the SRQ).
 */
static void t_ia_close_from_an_upcall_that_freed_its_evd_refused(void)
{
	static struct pair p;
	static struct act_box box;
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep = NULL, sep2, cep2;
	DAT_EVD_HANDLE evd;
	DAT_EVENT ev;
	long live;

	CHECK(!act_setup(&p, &box, true, &evd, &sep), "setup");
	box.evd = evd;
	box.free_evd = true;
	box.close_ia = p.s.ia;
	live = kdat_live_objects();
	CHECK(act_release(&box),
	      "dat_ia_close in the upcall never returned (deadlock)");
	CHECK_OK(box.ret);
	CHECK_OK(box.evd_ret);
	CHECK_EXACT(box.close_ret, BAD_STATE(0));
	CHECK(WAIT_FOR(kdat_live_objects() == live - 2),
	      "%ld live objects, want %ld (EP and EVD gone)",
	      kdat_live_objects(), live - 2);
	/* the client saw the free's disconnect */
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "client saw no DISCONNECTED");
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
					p.s.dto_evd, p.s.conn_evd, p.srq, &a,
					&sep2));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep2));
	CHECK(!connect_one(&p, sep2, cep2, 8), "connect after the close");
	p.cep[0] = cep2;
	CHECK_OK(post_srq(&p, 0, 64, 90));
	CHECK(send_msg(&p, 0, 0, 8, 91), "send after the refused close");
out:
	act_end(&p, &box);
}

/*
 * A DTO upcall of the server IA closes the client IA: a close from a
 * poller's upcall that waits for no run of its own (the client's EVDs
 * are polled elsewhere, no free of it in flight, no poller waiting), so
 * it is done before it returns: DAT_SUCCESS, the client's objects gone
 * (its EVDs' CQs freed in work items it waits for), the server EP
 * disconnected, and the server IA serving on.
 */
static void t_ia_close_of_another_ia_from_an_upcall(void)
{
	static struct pair p;
	static struct act_box box;
	DAT_EP_HANDLE sep = NULL;
	DAT_EVD_HANDLE evd;
	DAT_EP_PARAM q;
	DAT_EVENT ev;
	long live;

	CHECK(!act_setup(&p, &box, false, &evd, &sep), "setup");
	box.close_ia = p.c.ia;
	live = kdat_live_objects();
	CHECK(act_release(&box),
	      "dat_ia_close in the upcall never returned (deadlock)");
	CHECK_OK(box.close_ret);
	p.c.ia = DAT_HANDLE_NULL;
	CHECK(kdat_live_objects() < live, "%ld live objects, %ld before",
	      kdat_live_objects(), live);
	CHECK(WAIT_FOR(!dat_ep_query(sep, DAT_EP_FIELD_EP_STATE, &q) &&
		       q.ep_state == DAT_EP_STATE_DISCONNECTED),
	      "server EP never disconnected");
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "server saw no DISCONNECTED");
	CHECK_OK(post_srq(&p, 0, 64, 95));
	CHECK(srq_q(p.srq).available_dto_count >= 1, "SRQ after the close");
out:
	act_end(&p, &box);
}

/*
 * The local dat_ep_disconnect while the recv poller is held by an upcall
 * that then queries and disconnects its EP: the disconnect returns at once,
 * the upcall's calls return (Disconnected, DAT_SUCCESS), and DISCONNECTED
 * comes only after both receives.
 */
static void t_ep_upcall_acts_on_its_ep_during_disconnect(void)
{
	static struct pair p;
	static struct act_box box;
	DAT_EP_HANDLE sep = NULL;
	DAT_EVD_HANDLE evd;
	DAT_EP_PARAM q;
	DAT_EVENT ev;
	bool done;

	CHECK(!act_setup(&p, &box, false, &evd, &sep), "setup");
	CHECK_OK(dat_ep_disconnect(sep, DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(WAIT_FOR(!dat_ep_query(sep, DAT_EP_FIELD_EP_STATE, &q) &&
		       q.ep_state == DAT_EP_STATE_DISCONNECTED),
	      "EP never disconnected");
	CHECK(no_event(p.s.conn_evd), "DISCONNECTED before the receives");
	done = act_release(&box);
	CHECK(done, "the upcall's EP calls never returned (deadlock)");
	CHECK_OK(box.query_ret);
	CHECK(box.state == DAT_EP_STATE_DISCONNECTED, "upcall saw state %d",
	      box.state);
	CHECK_OK(box.ret);
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "no DISCONNECTED");
	CHECK(atomic_read(&box.calls) == 2,
	      "DISCONNECTED with %d of 2 receives delivered",
	      atomic_read(&box.calls));
	CHECK(no_event(p.s.conn_evd), "a second connection event");
out:
	act_end(&p, &box);
}

/*
 * dat_ep_reset while an upcall of the poller its drain waits for acts on
 * the EP.  A plain client EP (its receive queue drains through its recv
 * EVD's poller) has 3 receives posted; the first completes and its upcall
 * holds that poller, the other two are flushed into the CQ when the EP
 * disconnects.  Then either a thread resets the EP and, once the reset
 * took the QP, the upcall queries, connects, modifies, disconnects and
 * resets it (@self false), or the upcall resets its EP itself.
 */
struct reset_box {
	atomic_t calls;
	int flushed;			/* only upcalls write it, one at a time */
	bool release;
	bool self;			/* the upcall resets, not a thread */
	bool detached;			/* the reset took the QP first */
	bool free_after;		/* then the upcall frees the EP */
	bool free_only;			/* the upcall frees the EP, no reset */
	DAT_RETURN free_ret, gone_ret;
	DAT_EP_HANDLE ep;
	DAT_CONN_QUAL qual;
	DAT_RETURN query_ret, connect_ret, modify_ret, disc_ret, reset_ret;
	DAT_RETURN thread_ret;
	DAT_EP_STATE state;
	struct completion done, reset_done;
	wait_queue_head_t wq;
	/* a modify from a thread of its own while the reset drains */
	DAT_EP_PARAM waiter_param;
	DAT_RETURN waiter_ret;
	bool waiter_slept;
	struct completion waiter_done;
};

static int reset_waiter(void *data)
{
	struct reset_box *b = data;

	b->waiter_ret = dat_ep_modify(b->ep,
				      DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
				      &b->waiter_param);
	complete(&b->waiter_done);
	return 0;
}

/*
 * From the upcall that holds the reset's drain: a modify from another
 * thread must wait for the reset (not be refused, as the upcall is).
 * True once that thread sleeps in the modify; the reset cannot end
 * meanwhile, as this upcall holds its drain.
 */
static bool reset_waiter_sleeps(struct reset_box *b)
{
	struct task_struct *k;
	unsigned long end = jiffies + msecs_to_jiffies(WAIT_MS);
	bool slept = false;

	k = kthread_create(reset_waiter, b, "kdat_reset_wait");
	if (IS_ERR(k)) {
		complete(&b->waiter_done);
		return false;
	}
	get_task_struct(k);
	wake_up_process(k);
	while (!slept && !completion_done(&b->waiter_done) &&
	       time_before(jiffies, end)) {
		slept = READ_ONCE(k->__state) == TASK_UNINTERRUPTIBLE;
		if (!slept)
			usleep_range(1000, 2000);
	}
	put_task_struct(k);
	return slept && !completion_done(&b->waiter_done);
}

static void reset_upcall(DAT_PVOID data, const DAT_EVENT *ev,
			 DAT_BOOLEAN more)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct reset_box *b = data;
	unsigned long end;
	DAT_EP_PARAM q = {};

	if (ev->event_number == DAT_DTO_COMPLETION_EVENT &&
	    DTO(*ev).status == DAT_DTO_ERR_FLUSHED)
		b->flushed++;
	if (!hold_first_upcall(&b->calls, &b->release, &b->wq))
		return;
	if (READ_ONCE(b->free_only)) {
		b->free_ret = dat_ep_free(b->ep);
		b->gone_ret = dat_ep_query(b->ep, DAT_EP_FIELD_ALL, &q);
		complete(&b->done);
		return;
	}
	if (b->self) {
		b->reset_ret = dat_ep_reset(b->ep);
	} else {
		/*
		 * Until the reset took the QP (the hook reads it under
		 * op_lock: where the reset holds that across its drain,
		 * this is where the upcall deadlocks).
		 */
		end = jiffies + msecs_to_jiffies(WAIT_MS);
		while (kdat_test_ep_recv_cq_size(b->ep) > 0 &&
		       time_before(jiffies, end))
			usleep_range(1000, 2000);
		b->detached = !kdat_test_ep_recv_cq_size(b->ep);
	}
	/* the old QP's completions are not in yet: still Disconnected */
	b->query_ret = dat_ep_query(b->ep, DAT_EP_FIELD_ALL, &q);
	b->state = q.ep_state;
	sin.sin_addr.s_addr = in_aton(srv_addr);
	b->connect_ret = dat_ep_connect(b->ep, (DAT_IA_ADDRESS_PTR)&sin,
					b->qual, DAT_TIMEOUT_INFINITE, 0, NULL,
					DAT_QOS_BEST_EFFORT,
					DAT_CONNECT_DEFAULT_FLAG);
	b->modify_ret = dat_ep_modify(b->ep,
				      DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
				      &q);
	b->disc_ret = dat_ep_disconnect(b->ep, DAT_CLOSE_ABRUPT_FLAG);
	if (READ_ONCE(b->free_after)) {
		b->free_ret = dat_ep_free(b->ep);
		b->gone_ret = dat_ep_query(b->ep, DAT_EP_FIELD_ALL, &q);
	}
	/* a second reset from here cannot wait for the first: at once */
	if (!b->self) {
		b->reset_ret = dat_ep_reset(b->ep);
		b->waiter_param = q;
		b->waiter_slept = reset_waiter_sleeps(b);
	}
	complete(&b->done);
}

static int reset_thread(void *data)
{
	struct reset_box *b = data;

	b->thread_ret = dat_ep_reset(b->ep);
	complete(&b->reset_done);
	return 0;
}

/*
 * The pair, the client EP *cep on an EVD running reset_upcall: connected
 * to *sep, 3 receives posted, one message in (its upcall holds the recv
 * CQ's poller), then disconnected, the two other receives flushed into
 * the CQ behind it.
 */
static int reset_setup(struct pair *p, struct reset_box *b, bool self,
		       DAT_EP_HANDLE *sep, DAT_EP_HANDLE *cep)
{
	DAT_UPCALL_OBJECT up = { .instance_data = b,
				 .upcall_func = reset_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_LMR_TRIPLET t;
	DAT_EVD_HANDLE evd;
	DAT_EP_PARAM q;
	DAT_EVENT ev;
	/* what the caller chose for the upcall, before the first one comes */
	bool free_after = b->free_after, free_only = b->free_only;
	int i;

	memset(b, 0, sizeof(*b));
	b->self = self;
	b->free_after = free_after;
	b->free_only = free_only;
	b->query_ret = b->connect_ret = b->modify_ret = DAT_INTERNAL_ERROR;
	b->disc_ret = b->reset_ret = b->thread_ret = DAT_INTERNAL_ERROR;
	b->waiter_ret = b->free_ret = b->gone_ret = DAT_INTERNAL_ERROR;
	init_completion(&b->done);
	init_completion(&b->reset_done);
	init_completion(&b->waiter_done);
	init_waitqueue_head(&b->wq);
	if (pair_open(p, 0, 8) ||
	    dat_evd_kcreate(p->c.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &up,
			    DAT_EVD_DTO_FLAG, &evd) ||
	    dat_ep_create(p->c.ia, p->c.pz, evd, p->c.dto_evd, p->c.conn_evd,
			  &a, cep) ||
	    dat_ep_create_with_srq(p->s.ia, p->s.pz, p->s.dto_evd,
				   p->s.dto_evd, p->s.conn_evd, p->srq, &a,
				   sep))
		return -EIO;
	b->ep = *cep;
	b->qual = next_qual;
	if (connect_one(p, *sep, *cep, 9))
		return -EIO;
	for (i = 0; i < 3; i++) {
		t = seg(&p->c, i * 64, 64);
		if (dat_ep_post_recv(*cep, 1, &t, cookie(40 + i),
				     DAT_COMPLETION_DEFAULT_FLAG))
			return -EIO;
	}
	t = seg(&p->s, 0, 8);
	if (dat_ep_post_send(*sep, 1, &t, cookie(1),
			     DAT_COMPLETION_DEFAULT_FLAG) ||
	    !next_event(p->s.dto_evd, &ev) ||
	    DTO(ev).status != DAT_DTO_SUCCESS)
		return -EIO;
	if (!wait_event_timeout(b->wq, atomic_read(&b->calls) >= 1,
				msecs_to_jiffies(WAIT_MS)))
		return -ETIMEDOUT;
	if (dat_ep_disconnect(*cep, DAT_CLOSE_GRACEFUL_FLAG) ||
	    !WAIT_FOR(!dat_ep_query(*cep, DAT_EP_FIELD_EP_STATE, &q) &&
		      q.ep_state == DAT_EP_STATE_DISCONNECTED))
		return -EIO;
	return 0;
}

/*
 * After the reset: the server saw its DISCONNECTED, the client EP none
 * of its old connection, and the EP connects again (to a new server EP)
 * and takes a message into a receive posted after the reset.
 */
static bool reset_reconnects(struct pair *p, struct reset_box *b,
			     DAT_EP_HANDLE cep)
{
	DAT_EP_ATTR a = ep_attr();
	DAT_LMR_TRIPLET t;
	DAT_EP_HANDLE sep;
	DAT_EVENT ev;

	if (!next_event(p->s.conn_evd, &ev) ||
	    ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED ||
	    !no_event(p->c.conn_evd) ||
	    dat_ep_create_with_srq(p->s.ia, p->s.pz, p->s.dto_evd,
				   p->s.dto_evd, p->s.conn_evd, p->srq, &a,
				   &sep) ||
	    connect_one(p, sep, cep, 10))
		return false;
	t = seg(&p->c, 256, 64);
	if (dat_ep_post_recv(cep, 1, &t, cookie(50),
			     DAT_COMPLETION_DEFAULT_FLAG))
		return false;
	t = seg(&p->s, 0, 8);
	if (dat_ep_post_send(sep, 1, &t, cookie(2),
			     DAT_COMPLETION_DEFAULT_FLAG) ||
	    !next_event(p->s.dto_evd, &ev) ||
	    DTO(ev).status != DAT_DTO_SUCCESS)
		return false;
	return WAIT_FOR(atomic_read(&b->calls) == 4);
}

/*
 * What the upcall saw while the reset drained: the EP still Disconnected,
 * a connect and a modify refused, a disconnect taken.
 */
static bool reset_upcall_saw_drain(struct reset_box *box)
{
	CHECK_OK(box->query_ret);
	CHECK(box->state == DAT_EP_STATE_DISCONNECTED,
	      "Unconnected (%d) before the old completions were in",
	      box->state);
	CHECK_EXACT(box->connect_ret, BAD_STATE(DAT_INVALID_STATE_EP_NOTREADY));
	CHECK_RET(box->modify_ret, DAT_INVALID_STATE);
	CHECK_OK(box->disc_ret);
	return true;
out:
	return false;
}

/* Let the upcall go; close the pair unless a call hangs in it. */
static void reset_end(struct pair *p, struct reset_box *box, bool hung)
{
	WRITE_ONCE(box->release, true);
	wake_up(&box->wq);
	if (hung) {
		pr_err("kdat_test: %s: EP calls hang: objects left open\n",
		       cur_test);
		return;
	}
	pair_close(p);
}

/*
 * The reset drains the old QP without op_lock: the upcall's calls on the
 * EP return while it drains (a connect or modify with DAT_INVALID_STATE,
 * the EP still Disconnected; a disconnect with success; a second reset at
 * once), and the reset returns with the EP Unconnected and all three
 * receives delivered once, two of them flushed.  A deadlock shows as the
 * reset never returning; the pair is then left as it is.
 */
static void t_ep_reset_while_upcall_acts_on_its_ep(void)
{
	static struct pair p;
	static struct reset_box box;
	struct task_struct *k;
	DAT_EP_HANDLE sep, cep;
	bool hung = false;

	CHECK(!reset_setup(&p, &box, false, &sep, &cep), "setup");
	k = kthread_run(reset_thread, &box, "kdat_reset");
	CHECK(!IS_ERR(k), "kthread");
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	hung = !wait_for_completion_timeout(&box.reset_done,
					    msecs_to_jiffies(3 * WAIT_MS));
	CHECK(!hung, "dat_ep_reset never returned (deadlock with the upcall)");
	CHECK(wait_for_completion_timeout(&box.done,
					  msecs_to_jiffies(WAIT_MS)),
	      "the upcall never finished");
	CHECK_OK(box.thread_ret);
	CHECK(box.detached, "the reset never took the QP");
	CHECK(wait_for_completion_timeout(&box.waiter_done,
					  msecs_to_jiffies(WAIT_MS)),
	      "a modify from another thread never returned");
	CHECK(box.waiter_slept,
	      "a modify from another thread did not wait for the reset (%x)",
	      box.waiter_ret);
	CHECK_OK(box.waiter_ret);
	if (!reset_upcall_saw_drain(&box))
		goto out;
	CHECK_OK(box.reset_ret);
	CHECK(ep_state(cep) == DAT_EP_STATE_UNCONNECTED, "state %d",
	      ep_state(cep));
	CHECK(atomic_read(&box.calls) == 3 && box.flushed == 2,
	      "%d receives delivered, %d flushed, want 3 and 2",
	      atomic_read(&box.calls), box.flushed);
	CHECK(reset_reconnects(&p, &box, cep), "no connection after reset");
out:
	reset_end(&p, &box, hung);
}

/*
 * An upcall resets its own EP, whose drain waits for the very poller the
 * upcall runs in: the reset returns at once (the EP still Disconnected, a
 * connect refused), and the EP turns Unconnected only after the upcall
 * returned and the old receives were delivered, then connects again.
 */
static void t_ep_upcall_resets_its_own_ep(void)
{
	static struct pair p;
	static struct reset_box box;
	DAT_EP_HANDLE sep, cep;
	bool hung = false;

	CHECK(!reset_setup(&p, &box, true, &sep, &cep), "setup");
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	hung = !wait_for_completion_timeout(&box.done,
					    msecs_to_jiffies(3 * WAIT_MS));
	CHECK(!hung, "dat_ep_reset in the upcall never returned (deadlock)");
	CHECK_OK(box.reset_ret);
	if (!reset_upcall_saw_drain(&box))
		goto out;
	CHECK(WAIT_FOR(ep_state(cep) == DAT_EP_STATE_UNCONNECTED),
	      "never Unconnected (%d)", ep_state(cep));
	CHECK(atomic_read(&box.calls) == 3 && box.flushed == 2,
	      "Unconnected with %d receives delivered, %d flushed",
	      atomic_read(&box.calls), box.flushed);
	CHECK(reset_reconnects(&p, &box, cep), "no connection after reset");
out:
	reset_end(&p, &box, hung);
}

/*
 * An upcall of the recv EVD's poller (the first receive's, holding two
 * flushed ones behind it in the CQ) frees its EP, with or without a reset
 * first: the reset's drain and the free's both wait for that poller, so
 * the free hands its rest to a work item and returns DAT_SUCCESS at once
 * (it used to wait for ever).  The handle is dead at once; the flushed
 * receives still reach the upcall, and the EP goes once they did.
 */
static void ep_upcall_frees_its_ep(bool reset_first)
{
	static struct pair p;
	static struct reset_box box;
	DAT_EP_HANDLE sep, cep;
	bool hung = false;
	long live;

	box.free_after = reset_first;
	box.free_only = !reset_first;
	CHECK(!reset_setup(&p, &box, true, &sep, &cep), "setup");
	live = kdat_live_objects();
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	hung = !wait_for_completion_timeout(&box.done,
					    msecs_to_jiffies(3 * WAIT_MS));
	CHECK(!hung, "dat_ep_free in the upcall never returned (deadlock)");
	if (reset_first)
		CHECK_OK(box.reset_ret);
	CHECK_OK(box.free_ret);
	CHECK_EXACT(box.gone_ret, BAD_HANDLE(DAT_INVALID_HANDLE_EP));
	CHECK(WAIT_FOR(atomic_read(&box.calls) == 3 && box.flushed == 2),
	      "%d receives delivered, %d flushed", atomic_read(&box.calls),
	      box.flushed);
	CHECK(WAIT_FOR(kdat_live_objects() == live - 1),
	      "%ld live objects, want %ld (the EP gone)", kdat_live_objects(),
	      live - 1);
out:
	reset_end(&p, &box, hung);
}

static void t_ep_upcall_frees_its_own_ep_without_srq(void)
{
	ep_upcall_frees_its_ep(false);
}

static void t_ep_upcall_resets_then_frees_its_own_ep(void)
{
	ep_upcall_frees_its_ep(true);
}

/*
 * Two upcalls, of two CQs' pollers at once, each freeing (or resetting)
 * an EP whose drain goes through the other's poller: X's queues complete
 * on E2 and Y's on E1, so E1's upcall (Y's send) tears X down and E2's
 * (X's send) Y.  Each waits until both run, so each drain would wait for
 * a poller held by the other upcall: one of them has to hand its drain
 * to a work item.  Both calls return DAT_SUCCESS (they used to wait for
 * each other for ever) and both EPs end as the call says: freed (two
 * live objects fewer, the handles dead at once), or Unconnected.
 */
struct cross_box {
	bool reset;
	atomic_t arrived;
	wait_queue_head_t wq;
	struct cross_side {
		struct cross_box *b;
		atomic_t calls;
		bool met;		/* saw both upcalls running */
		DAT_EP_HANDLE target;
		DAT_RETURN ret;
		struct completion done;
	} side[2];
};

static void cross_upcall(DAT_PVOID data, const DAT_EVENT *ev,
			 DAT_BOOLEAN more)
{
	struct cross_side *x = data;
	struct cross_box *b = x->b;

	/* the drains' flushes come here too: only the send's acts */
	if (atomic_inc_return(&x->calls) != 1)
		return;
	atomic_inc(&b->arrived);
	wake_up(&b->wq);
	x->met = wait_event_timeout(b->wq, atomic_read(&b->arrived) == 2,
				    msecs_to_jiffies(WAIT_MS));
	if (b->reset) {
		/* a reset wants the EP Disconnected */
		dat_ep_disconnect(x->target, DAT_CLOSE_ABRUPT_FLAG);
		WAIT_FOR(ep_state(x->target) == DAT_EP_STATE_DISCONNECTED);
		x->ret = dat_ep_reset(x->target);
	} else {
		x->ret = dat_ep_free(x->target);
	}
	complete(&x->done);
}

static void upcalls_tear_down_each_others_eps(bool reset)
{
	static struct pair p;
	static struct cross_box box;
	DAT_UPCALL_OBJECT up[2];
	DAT_EVD_HANDLE evd[2];
	DAT_EP_HANDLE ep[2], sep[2];
	DAT_EP_ATTR a = ep_attr();
	DAT_LMR_TRIPLET t;
	DAT_EP_PARAM q;
	bool hung = false;
	long live;
	int i;

	memset(&box, 0, sizeof(box));
	box.reset = reset;
	init_waitqueue_head(&box.wq);
	for (i = 0; i < 2; i++) {
		box.side[i].b = &box;
		box.side[i].ret = DAT_INTERNAL_ERROR;
		init_completion(&box.side[i].done);
		up[i].instance_data = &box.side[i];
		up[i].upcall_func = cross_upcall;
	}
	CHECK(!pair_open(&p, 0, 8), "setup");
	for (i = 0; i < 2; i++)
		CHECK_OK(dat_evd_kcreate(p.c.ia, 64, DAT_UPCALL_SINGLE_INSTANCE,
					 &up[i], DAT_EVD_DTO_FLAG, &evd[i]));
	/* X (ep[0]) on E2, Y (ep[1]) on E1: E1's upcall takes X down */
	for (i = 0; i < 2; i++) {
		CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, evd[1 - i], evd[1 - i],
				       p.c.conn_evd, &a, &ep[i]));
		CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
						p.s.dto_evd, p.s.conn_evd,
						p.srq, &a, &sep[i]));
		CHECK(!connect_one(&p, sep[i], ep[i], 20 + i), "connect %d", i);
		CHECK_OK(post_srq(&p, i * 64, 64, 60 + i));
		box.side[i].target = ep[i];
	}
	live = kdat_live_objects();
	for (i = 0; i < 2; i++) {
		t = seg(&p.c, i * 64, 8);
		CHECK_OK(dat_ep_post_send(ep[i], 1, &t, cookie(70 + i),
					  DAT_COMPLETION_DEFAULT_FLAG));
	}
	for (i = 0; i < 2 && !hung; i++)
		hung = !wait_for_completion_timeout(&box.side[i].done,
						    msecs_to_jiffies(3 * WAIT_MS));
	CHECK(!hung, "the upcalls' %s never returned (deadlock)",
	      reset ? "dat_ep_reset" : "dat_ep_free");
	CHECK(box.side[0].met && box.side[1].met,
	      "the two upcalls did not run at once");
	for (i = 0; i < 2; i++)
		CHECK_OK(box.side[i].ret);
	if (reset) {
		CHECK(WAIT_FOR(ep_state(ep[0]) == DAT_EP_STATE_UNCONNECTED &&
			       ep_state(ep[1]) == DAT_EP_STATE_UNCONNECTED),
		      "states %d and %d, want Unconnected", ep_state(ep[0]),
		      ep_state(ep[1]));
	} else {
		for (i = 0; i < 2; i++)
			CHECK_EXACT(dat_ep_query(ep[i], DAT_EP_FIELD_ALL, &q),
				    BAD_HANDLE(DAT_INVALID_HANDLE_EP));
		CHECK(WAIT_FOR(kdat_live_objects() == live - 2),
		      "%ld live objects, want %ld (both EPs gone)",
		      kdat_live_objects(), live - 2);
	}
	/* once the drains are done, the EVDs are free to go */
	if (!reset)
		for (i = 0; i < 2; i++)
			CHECK(WAIT_FOR(dat_evd_free(evd[i]) == DAT_SUCCESS),
			      "EVD %d still in use", i);
out:
	if (hung) {
		pr_err("kdat_test: %s: upcalls hang: objects left open\n",
		       cur_test);
		return;
	}
	pair_close(&p);
}

/*
 * A free from an upcall waits for the EP's gone_work when that is polling
 * the recv EVD's CQ; that wait must join the pollers' wait registry, or
 * three upcalls close a cycle no one can see: gone_work of A waits for
 * the recv EVD R's poller, held by an upcall; an upcall of the request
 * EVD Q frees A (waits for gone_work, so for R); then R's upcall frees C,
 * whose drain waits for Q.  Each must return: before, the three waited
 * for each other for ever.  Client EPs: A (recv R, request Q), B (recv
 * R: its receive runs R's upcall), C (request Q: its send runs Q's).
 */
struct tri_box {
	DAT_EP_HANDLE a, c;
	bool r_entered, r_release, q_entered;
	atomic_t r_calls, q_calls;
	DAT_RETURN free_a, free_c;
	struct completion a_done, c_done;
	wait_queue_head_t wq;
};

static void tri_r_upcall(DAT_PVOID data, const DAT_EVENT *ev, DAT_BOOLEAN more)
{
	struct tri_box *b = data;

	if (atomic_inc_return(&b->r_calls) != 1)
		return;
	WRITE_ONCE(b->r_entered, true);
	wake_up(&b->wq);
	wait_event_timeout(b->wq, READ_ONCE(b->r_release),
			   msecs_to_jiffies(WAIT_MS));
	b->free_c = dat_ep_free(b->c);
	complete_all(&b->c_done);
}

static void tri_q_upcall(DAT_PVOID data, const DAT_EVENT *ev, DAT_BOOLEAN more)
{
	struct tri_box *b = data;

	if (atomic_inc_return(&b->q_calls) != 1)
		return;
	WRITE_ONCE(b->q_entered, true);
	wake_up(&b->wq);
	b->free_a = dat_ep_free(b->a);
	complete_all(&b->a_done);
}

static void t_ep_free_waiting_for_gone_work_closes_no_cycle(void)
{
	static struct pair p;	/* too big for the stack */
	static struct tri_box box;
	DAT_UPCALL_OBJECT rup = { .instance_data = &box,
				  .upcall_func = tri_r_upcall };
	DAT_UPCALL_OBJECT qup = { .instance_data = &box,
				  .upcall_func = tri_q_upcall };
	DAT_EP_HANDLE a, b, c, sa, sb;
	DAT_EVD_HANDLE r, q;
	DAT_LMR_TRIPLET t;
	bool hung = false;

	memset(&box, 0, sizeof(box));
	init_waitqueue_head(&box.wq);
	init_completion(&box.a_done);
	init_completion(&box.c_done);
	CHECK(!pair_open(&p, 0, 8), "setup");
	CHECK_OK(dat_evd_kcreate(p.c.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &rup,
				 DAT_EVD_DTO_FLAG, &r));
	CHECK_OK(dat_evd_kcreate(p.c.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &qup,
				 DAT_EVD_DTO_FLAG, &q));
	CHECK(!client_ep_connected(&p, r, q, 31, &a, &sa), "connect A");
	CHECK(!client_ep_connected(&p, r, p.c.dto_evd, 32, &b, &sb),
	      "connect B");
	CHECK(!client_ep_connected(&p, p.c.dto_evd, q, 33, &c, NULL),
	      "connect C");
	box.a = a;
	box.c = c;

	/* 1. a message to B: R's upcall holds R's poller */
	t = seg(&p.c, 0, 64);
	CHECK_OK(dat_ep_post_recv(b, 1, &t, cookie(1),
				  DAT_COMPLETION_DEFAULT_FLAG));
	t = seg(&p.s, 0, 8);
	CHECK_OK(dat_ep_post_send(sb, 1, &t, cookie(2),
				  DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(wait_event_timeout(box.wq, READ_ONCE(box.r_entered),
				 msecs_to_jiffies(WAIT_MS)), "no R upcall");
	/* 2. A's connection ends: its gone_work waits for R's poller */
	CHECK_OK(dat_ep_disconnect(sa, DAT_CLOSE_ABRUPT_FLAG));
	CHECK(WAIT_FOR(kdat_test_ep_gone_waiting(a)),
	      "A's gone_work never reached R's poller");
	/* 3. C's send: Q's upcall frees A */
	CHECK_OK(post_srq(&p, 128, 64, 3));
	t = seg(&p.c, 256, 8);
	CHECK_OK(dat_ep_post_send(c, 1, &t, cookie(4),
				  DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(wait_event_timeout(box.wq, READ_ONCE(box.q_entered),
				 msecs_to_jiffies(WAIT_MS)), "no Q upcall");
	/* 4. R's upcall goes on and frees C */
	WRITE_ONCE(box.r_release, true);
	wake_up(&box.wq);
	hung = !wait_for_completion_timeout(&box.c_done,
					    msecs_to_jiffies(3 * WAIT_MS)) ||
	       !wait_for_completion_timeout(&box.a_done,
					    msecs_to_jiffies(3 * WAIT_MS));
	CHECK(!hung, "the upcalls' frees never returned (deadlock)");
	CHECK_OK(box.free_a);
	CHECK_OK(box.free_c);
out:
	WRITE_ONCE(box.r_release, true);
	wake_up(&box.wq);
	if (hung) {
		pr_err("kdat_test: %s: upcalls hang: objects left open\n",
		       cur_test);
		return;
	}
	pair_close(&p);
}

/*
 * dat_evd_modify_upcall (TEARDOWN) waits for an upcall in progress; from
 * an upcall, that wait joins the pollers' wait registry, or two upcalls
 * close a cycle: E0's upcall tears E1's upcall down (waits for E1's
 * upcall to end), while E1's upcall frees X, whose drain goes through
 * E0's poller.  Both must return: E1's free hands X's drain to a work
 * item, then E0's teardown sees E1's upcall end and E1's upcall is off.
 * Client EPs: X (both EVDs E0: its send runs E0's upcall), Y (both E1).
 */
struct quiesce_box {
	DAT_EVD_HANDLE e1;
	DAT_EP_HANDLE x;
	bool u1_entered;
	atomic_t u0_calls, u1_calls;
	DAT_RETURN ret0, ret1;
	struct completion u0_done, u1_done;
	wait_queue_head_t wq;
};

static void quiesce_u0(DAT_PVOID data, const DAT_EVENT *ev, DAT_BOOLEAN more)
{
	struct quiesce_box *b = data;

	if (atomic_inc_return(&b->u0_calls) != 1)
		return;
	b->ret0 = dat_evd_modify_upcall(b->e1, DAT_UPCALL_TEARDOWN, NULL);
	complete_all(&b->u0_done);
}

static void quiesce_u1(DAT_PVOID data, const DAT_EVENT *ev, DAT_BOOLEAN more)
{
	struct quiesce_box *b = data;

	if (atomic_inc_return(&b->u1_calls) != 1)
		return;
	WRITE_ONCE(b->u1_entered, true);
	wake_up(&b->wq);
	/* until E0's upcall waits for this one (bounded: it may not) */
	WAIT_FOR(kdat_test_evd_quiescing(b->e1));
	b->ret1 = dat_ep_free(b->x);
	complete_all(&b->u1_done);
}

static void t_evd_teardown_from_an_upcall_closes_no_cycle(void)
{
	static struct pair p;	/* too big for the stack */
	static struct quiesce_box box;
	DAT_UPCALL_OBJECT u0 = { .instance_data = &box,
				 .upcall_func = quiesce_u0 };
	DAT_UPCALL_OBJECT u1 = { .instance_data = &box,
				 .upcall_func = quiesce_u1 };
	DAT_EVD_HANDLE e0, e1;
	DAT_EP_HANDLE x, y;
	DAT_LMR_TRIPLET t;
	DAT_EVD_PARAM q;
	bool hung = false;

	memset(&box, 0, sizeof(box));
	init_waitqueue_head(&box.wq);
	init_completion(&box.u0_done);
	init_completion(&box.u1_done);
	CHECK(!pair_open(&p, 0, 8), "setup");
	CHECK_OK(dat_evd_kcreate(p.c.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &u0,
				 DAT_EVD_DTO_FLAG, &e0));
	CHECK_OK(dat_evd_kcreate(p.c.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &u1,
				 DAT_EVD_DTO_FLAG, &e1));
	CHECK(!client_ep_connected(&p, e0, e0, 41, &x, NULL), "connect X");
	CHECK(!client_ep_connected(&p, e1, e1, 42, &y, NULL), "connect Y");
	box.e1 = e1;
	box.x = x;
	CHECK_OK(post_srq(&p, 0, 64, 1));
	CHECK_OK(post_srq(&p, 64, 64, 2));

	/* 1. Y's send: E1's upcall holds E1's poller */
	t = seg(&p.c, 0, 8);
	CHECK_OK(dat_ep_post_send(y, 1, &t, cookie(3),
				  DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(wait_event_timeout(box.wq, READ_ONCE(box.u1_entered),
				 msecs_to_jiffies(WAIT_MS)), "no E1 upcall");
	/* 2. X's send: E0's upcall tears E1's down, waits for it */
	t = seg(&p.c, 64, 8);
	CHECK_OK(dat_ep_post_send(x, 1, &t, cookie(4),
				  DAT_COMPLETION_DEFAULT_FLAG));
	/* 3. E1's upcall, once that waits, frees X */
	hung = !wait_for_completion_timeout(&box.u1_done,
					    msecs_to_jiffies(3 * WAIT_MS)) ||
	       !wait_for_completion_timeout(&box.u0_done,
					    msecs_to_jiffies(3 * WAIT_MS));
	CHECK(!hung, "the upcalls' calls never returned (deadlock)");
	CHECK_OK(box.ret1);
	CHECK_OK(box.ret0);
	CHECK_OK(dat_evd_query(e1, DAT_EVD_FIELD_ALL, &q));
	CHECK(q.upcall_policy == DAT_UPCALL_DISABLE, "policy %d",
	      q.upcall_policy);
	CHECK_EXACT(dat_ep_query(x, DAT_EP_FIELD_ALL, &(DAT_EP_PARAM){}),
		    BAD_HANDLE(DAT_INVALID_HANDLE_EP));
out:
	if (hung) {
		pr_err("kdat_test: %s: upcalls hang: objects left open\n",
		       cur_test);
		return;
	}
	pair_close(&p);
}

static void t_ep_upcalls_of_two_pollers_free_each_others_eps(void)
{
	upcalls_tear_down_each_others_eps(false);
}

static void t_ep_upcalls_of_two_pollers_reset_each_others_eps(void)
{
	upcalls_tear_down_each_others_eps(true);
}

/* ------------------------------------------------------------------ */
/* KDAT_IA_SRQ_EP_BROKEN: DAT 2.0's end-of-connection EP_BROKEN         */

/* Is @ev DAT_ASYNC_ERROR_EP_BROKEN naming @ep, reason TRANSFER_TO_ERROR? */
/* Is @ev the asynchronous event @num about @h, for @reason? */
static bool is_async(const DAT_EVENT *ev, DAT_EVENT_NUMBER num, DAT_HANDLE h,
		     DAT_COUNT reason)
{
	return ev->event_number == num &&
	       ev->event_data.asynch_error_event_data.dat_handle == h &&
	       ev->event_data.asynch_error_event_data.reason == reason;
}

static bool is_ep_broken(const DAT_EVENT *ev, DAT_EP_HANDLE ep)
{
	return is_async(ev, DAT_ASYNC_ERROR_EP_BROKEN, ep,
			DAT_EP_TRANSFER_TO_ERROR);
}

/*
 * On an IA with KDAT_IA_SRQ_EP_BROKEN, an SRQ EP's EP_BROKEN comes only
 * once every receive it took is on its recv EVD: the first receive's
 * upcall holds the recv CQ's poller (two more wait in the CQ) while the
 * peer disconnects.  No EP_BROKEN while held; once released, EP_BROKEN
 * names the EP, and when it is there all three receives were delivered
 * and DISCONNECTED is already on the connection EVD.
 */
static void t_srq_ep_broken_after_the_eps_receives(void)
{
	static struct pair p;	/* too big for the stack */
	static struct hold_box box;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = hold_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep, cep;
	DAT_EVD_HANDLE evd;
	DAT_EP_PARAM q;
	DAT_EVENT ev;
	int i;

	atomic_set(&box.calls, 0);
	box.release = false;
	init_waitqueue_head(&box.wq);
	CHECK(!pair_open_flags(&p, 0, 8, KDAT_IA_SRQ_EP_BROKEN), "setup");
	CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &up,
				 DAT_EVD_DTO_FLAG, &evd));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd, NULL,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 6), "connect");
	p.cep[0] = cep;
	for (i = 0; i < 3; i++)
		CHECK_OK(post_srq(&p, i * 64, 64, 20 + i));
	for (i = 0; i < 3; i++)
		CHECK(send_msg(&p, 0, 0, 8, i), "send %d", i);
	CHECK(wait_event_timeout(box.wq, atomic_read(&box.calls) >= 1,
				 msecs_to_jiffies(WAIT_MS)), "no upcall");
	CHECK(no_event(p.s.async_evd), "EP_BROKEN while connected");
	CHECK_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(WAIT_FOR(!dat_ep_query(sep, DAT_EP_FIELD_EP_STATE, &q) &&
		       q.ep_state == DAT_EP_STATE_DISCONNECTED),
	      "server EP never disconnected");
	CHECK(no_event(p.s.async_evd), "EP_BROKEN before the receives");
	CHECK(atomic_read(&box.calls) == 1, "poller not held");
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	CHECK(next_event(p.s.async_evd, &ev), "no EP_BROKEN");
	CHECK(is_ep_broken(&ev, sep), "async event 0x%x handle %p reason %d",
	      ev.event_number, ev.event_data.asynch_error_event_data.dat_handle,
	      ev.event_data.asynch_error_event_data.reason);
	CHECK(atomic_read(&box.calls) == 3,
	      "EP_BROKEN with %d of 3 receives delivered",
	      atomic_read(&box.calls));
	CHECK_OK(dat_evd_dequeue(p.s.conn_evd, &ev));
	CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "EP_BROKEN before DISCONNECTED (0x%x)", ev.event_number);
out:
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	pair_close(&p);
}

/*
 * Exactly one EP_BROKEN per connection, whichever side ends it: two SRQ
 * EPs, the server disconnects one, the client the other.  Each gets one,
 * naming it; the still connected one none meanwhile; after both EPs are
 * freed (a free waits for an event being posted), nothing else came.
 */
static void t_srq_ep_broken_once_per_connection_either_side(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EVENT ev;

	CHECK(!pair_open_flags(&p, 2, 8, KDAT_IA_SRQ_EP_BROKEN), "setup");
	CHECK_OK(post_srq(&p, 0, 64, 1));
	CHECK(send_msg(&p, 0, 0, 8, 1), "send");
	CHECK(next_event(p.s.dto_evd, &ev), "no receive");
	CHECK_OK(dat_ep_disconnect(p.sep[0], DAT_CLOSE_ABRUPT_FLAG));
	CHECK(next_event(p.s.async_evd, &ev) && is_ep_broken(&ev, p.sep[0]),
	      "no EP_BROKEN for the EP the server disconnected (0x%x)",
	      ev.event_number);
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
	      ev.event_data.connect_event_data.ep_handle == p.sep[0],
	      "no DISCONNECTED for EP 0");
	/* a second disconnect of a disconnected EP changes nothing */
	CHECK_OK(dat_ep_disconnect(p.sep[0], DAT_CLOSE_ABRUPT_FLAG));
	CHECK(no_event(p.s.async_evd), "EP_BROKEN for the connected EP");
	CHECK_OK(dat_ep_disconnect(p.cep[1], DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(next_event(p.s.async_evd, &ev) && is_ep_broken(&ev, p.sep[1]),
	      "no EP_BROKEN for the EP the client disconnected (0x%x)",
	      ev.event_number);
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
	      ev.event_data.connect_event_data.ep_handle == p.sep[1],
	      "no DISCONNECTED for EP 1");
	CHECK_OK(dat_ep_free(p.sep[0]));
	CHECK_OK(dat_ep_free(p.sep[1]));
	CHECK(no_event(p.s.async_evd), "a second EP_BROKEN");
	CHECK(no_event(p.s.conn_evd), "a second connection event");
out:
	pair_close(&p);
}

/*
 * A QP error the device reports (IB_EVENT_QP_FATAL, _REQ_ERR, _ACCESS_ERR
 * through the QP's event handler; rxe raises none, kdat_test_qp_event
 * calls it as a driver does) is DAT_ASYNC_ERROR_EP_BROKEN naming the EP,
 * every time, for an EP without an SRQ and for an SRQ EP on an IA without
 * KDAT_IA_SRQ_EP_BROKEN; any other QP event is none.
 */
static void t_ep_qp_error_reports_ep_broken_each_time(void)
{
	static struct pair p;	/* too big for the stack */
	static const int errs[] = { IB_EVENT_QP_FATAL, IB_EVENT_QP_REQ_ERR,
				    IB_EVENT_QP_ACCESS_ERR };
	DAT_EP_HANDLE eps[2] = {};
	DAT_EP_HANDLE cep = NULL;
	DAT_EVENT ev;
	int i, k;

	CHECK(!pair_open_flags(&p, 1, 8, 0), "setup");
	CHECK_OK(plain_ep(&p.s, &eps[0]));
	CHECK_OK(plain_ep(&p.c, &cep));
	CHECK(!connect_one(&p, eps[0], cep, 3), "connect");
	eps[1] = p.sep[0];
	for (k = 0; k < 2; k++) {
		CHECK_EXACT(kdat_test_qp_event(eps[k], IB_EVENT_COMM_EST), 0);
		CHECK_EXACT(kdat_test_qp_event(eps[k], IB_EVENT_SQ_DRAINED), 0);
		CHECK(no_event(p.s.async_evd), "EP %d: an event of no error",
		      k);
		for (i = 0; i < ARRAY_SIZE(errs); i++) {
			CHECK_EXACT(kdat_test_qp_event(eps[k], errs[i]), 0);
			CHECK(next_event(p.s.async_evd, &ev), "EP %d: none for %d",
			      k, errs[i]);
			CHECK(is_ep_broken(&ev, eps[k]),
			      "EP %d, error %d: event 0x%x handle %p reason %d",
			      k, errs[i], ev.event_number,
			      ev.event_data.asynch_error_event_data.dat_handle,
			      ev.event_data.asynch_error_event_data.reason);
		}
	}
	/* a report is all it is: both EPs are still connected */
	CHECK(ep_state(eps[0]) == DAT_EP_STATE_CONNECTED &&
	      ep_state(eps[1]) == DAT_EP_STATE_CONNECTED, "state changed");
	CHECK_OK(dat_ep_free(eps[0]));
	eps[0] = NULL;
	CHECK(no_event(p.s.async_evd), "stray async event");
out:
	pair_close(&p);
}

/*
 * On an IA with KDAT_IA_SRQ_EP_BROKEN, an SRQ EP's EP_BROKEN is one per
 * connection, whichever comes first: a QP error raises it, a second error
 * does not, nor does the end of that connection (DISCONNECTED arrives, a
 * free that waits for the events being posted brings nothing).  Reset and
 * connected again, the next connection's QP error raises its own.
 */
static void t_srq_ep_qp_error_is_the_connections_one_ep_broken(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EP_HANDLE cep2 = NULL;
	DAT_EVENT ev;

	CHECK(!pair_open_flags(&p, 1, 8, KDAT_IA_SRQ_EP_BROKEN), "setup");
	CHECK_EXACT(kdat_test_qp_event(p.sep[0], IB_EVENT_QP_FATAL), 0);
	CHECK(next_event(p.s.async_evd, &ev) && is_ep_broken(&ev, p.sep[0]),
	      "no EP_BROKEN for the QP error (0x%x)", ev.event_number);
	CHECK_EXACT(kdat_test_qp_event(p.sep[0], IB_EVENT_QP_REQ_ERR), 0);
	CHECK(no_event(p.s.async_evd), "a second EP_BROKEN for one connection");
	CHECK_OK(dat_ep_disconnect(p.cep[0], DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "no DISCONNECTED (0x%x)", ev.event_number);
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "client saw no DISCONNECTED");
	CHECK_OK(dat_ep_reset(p.sep[0]));
	CHECK(no_event(p.s.async_evd), "EP_BROKEN again at the end");
	/* no QP until connected again */
	CHECK_EXACT(kdat_test_qp_event(p.sep[0], IB_EVENT_QP_FATAL), -ENOENT);
	CHECK_OK(plain_ep(&p.c, &cep2));
	CHECK(!connect_one(&p, p.sep[0], cep2, 4), "connect again");
	CHECK_EXACT(kdat_test_qp_event(p.sep[0], IB_EVENT_QP_ACCESS_ERR), 0);
	CHECK(next_event(p.s.async_evd, &ev) && is_ep_broken(&ev, p.sep[0]),
	      "no EP_BROKEN on the next connection (0x%x)", ev.event_number);
	CHECK_OK(dat_ep_free(p.sep[0]));
	p.sep[0] = NULL;
	CHECK(no_event(p.s.async_evd), "a second EP_BROKEN after the free");
out:
	pair_close(&p);
}

/*
 * Without the opt-in nothing changes (DAT 1.2): an SRQ EP disconnected by
 * its peer gets DISCONNECTED and no EP_BROKEN; with it, an EP without an
 * SRQ gets none either.  kdat_ia_set_flags refuses unknown bits and
 * handles that are no kdat IA.
 */
static void t_srq_ep_broken_only_with_the_opt_in(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 1, 8), "setup");
	CHECK_EXACT(kdat_ia_set_flags(p.s.ia, 0x2),
		    BAD_ARG(DAT_INVALID_ARG2));
	CHECK_EXACT(kdat_ia_set_flags(NULL, KDAT_IA_SRQ_EP_BROKEN),
		    DAT_CLASS_ERROR | DAT_INVALID_HANDLE |
		    DAT_INVALID_HANDLE_IA);
	CHECK_RET(kdat_ia_set_flags(p.s.pz, KDAT_IA_SRQ_EP_BROKEN),
		  DAT_INVALID_HANDLE);
	/* the client's EPs have no SRQ: the flag gives them nothing */
	CHECK_OK(kdat_ia_set_flags(p.c.ia, KDAT_IA_SRQ_EP_BROKEN));
	CHECK_OK(dat_ep_disconnect(p.cep[0], DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "server saw no DISCONNECTED");
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "client saw no DISCONNECTED");
	/* a free waits for an event being posted: none can come after */
	CHECK_OK(dat_ep_free(p.sep[0]));
	CHECK_OK(dat_ep_free(p.cep[0]));
	CHECK(no_event(p.s.async_evd), "EP_BROKEN without the opt-in");
	CHECK(no_event(p.c.async_evd), "EP_BROKEN for an EP without an SRQ");
out:
	pair_close(&p);
}

/*
 * None for an EP reset or freed before its receives were delivered.
 * Reset: the peer disconnects while the recv poller is held, the EP is
 * reset meanwhile, then released; the EP connects again and the server
 * disconnects it: that connection's EP_BROKEN and DISCONNECTED come, and
 * they are the only ones (the old connection's would have come first: one
 * work item per EP posts them in order).  Free: an upcall of the held
 * poller frees its EP during the peer's disconnect: no event names it.
 */
static void t_srq_ep_broken_none_after_reset_or_free(void)
{
	static struct pair p;	/* too big for the stack */
	static struct hold_box box;
	static struct act_box abox;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = hold_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep = NULL, cep, cep2;
	DAT_EVD_HANDLE evd;
	DAT_EP_PARAM q;
	DAT_EVENT ev;
	bool done;
	int i;

	atomic_set(&box.calls, 0);
	box.release = false;
	init_waitqueue_head(&box.wq);
	init_waitqueue_head(&abox.wq);	/* woken at out: */
	CHECK(!pair_open_flags(&p, 0, 8, KDAT_IA_SRQ_EP_BROKEN), "setup");
	CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &up,
				 DAT_EVD_DTO_FLAG, &evd));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd, NULL,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep2));
	CHECK(!connect_one(&p, sep, cep, 8), "connect");
	p.cep[0] = cep;
	for (i = 0; i < 2; i++) {
		CHECK_OK(post_srq(&p, i * 64, 64, 40 + i));
		CHECK(send_msg(&p, 0, 0, 8, i), "send %d", i);
	}
	CHECK(wait_event_timeout(box.wq, atomic_read(&box.calls) >= 1,
				 msecs_to_jiffies(WAIT_MS)), "no upcall");
	CHECK_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(WAIT_FOR(!dat_ep_query(sep, DAT_EP_FIELD_EP_STATE, &q) &&
		       q.ep_state == DAT_EP_STATE_DISCONNECTED),
	      "server EP never disconnected");
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "client saw no DISCONNECTED");
	CHECK_OK(dat_ep_reset(sep));
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	/*
	 * The receive still in the CQ names the reset EP's old QP, which
	 * the SRQ no longer knows: it is counted back, reported to no one.
	 */
	/* the next connection of the reset EP */
	CHECK(!connect_one(&p, sep, cep2, 9), "reconnect");
	CHECK_OK(dat_ep_disconnect(sep, DAT_CLOSE_ABRUPT_FLAG));
	CHECK(next_event(p.s.async_evd, &ev) && is_ep_broken(&ev, sep),
	      "no EP_BROKEN for the new connection (0x%x)", ev.event_number);
	CHECK_OK(dat_evd_dequeue(p.s.conn_evd, &ev));
	CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "event 0x%x", ev.event_number);
	CHECK(no_event(p.s.async_evd), "EP_BROKEN for the reset connection");
	CHECK(no_event(p.s.conn_evd), "DISCONNECTED for the reset connection");
	pair_close(&p);

	/* freed from an upcall while its event waits for that poller */
	sep = NULL;
	CHECK(!act_setup_flags(&p, &abox, true, &evd, &sep,
			       KDAT_IA_SRQ_EP_BROKEN), "setup (free)");
	CHECK_OK(dat_ep_disconnect(p.cep[0], DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(WAIT_FOR(!dat_ep_query(sep, DAT_EP_FIELD_EP_STATE, &q) &&
		       q.ep_state == DAT_EP_STATE_DISCONNECTED),
	      "server EP never disconnected");
	done = act_release(&abox);
	CHECK(done, "dat_ep_free in the upcall never returned (deadlock)");
	CHECK_OK(abox.ret);
	/* the EP was freed before the event's wait for the poller ended */
	CHECK(no_event(p.s.async_evd), "EP_BROKEN for a freed EP");
	CHECK(no_event(p.s.conn_evd), "an event for the freed EP");
out:
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	WRITE_ONCE(abox.release, true);
	wake_up(&abox.wq);
	pair_close(&p);
}

/*
 * A dat_ep_reset that wins the race with the CM handler ending the
 * connection (the handler made the EP Disconnected, so the reset is
 * allowed, and has not yet handed the end to gone_work): the end belongs
 * to the connection the reset took away.  No DISCONNECTED and no EP_BROKEN
 * for it may reach the EP's next connection, which gets exactly its own
 * (before, the handler read the generation after the reset had started
 * the next one: DISCONNECTED twice, and the next connection's EP_BROKEN
 * raised early and then suppressed), with or without a recv EVD (without
 * one, the handler posted DISCONNECTED unchecked).  And a dat_ep_free
 * that wins it: no event names the freed EP.  kdat_test_fault_gone_park
 * puts the handler there.
 */
static void t_ep_reset_racing_the_end_of_a_connection(void)
{
	static struct pair p;	/* too big for the stack */
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep = NULL, cep, cep2;
	DAT_EVD_HANDLE recv;
	int parked, v;
	DAT_EVENT ev;

	/*
	 * v 0: the EP has a recv EVD (gone_work reports the end); v 1: it
	 * has none (the handler itself does).
	 */
	for (v = 0; v < 2; v++) {
		CHECK(!pair_open_flags(&p, 0, 8, KDAT_IA_SRQ_EP_BROKEN),
		      "setup %d", v);
		recv = v ? NULL : p.s.dto_evd;
		CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, recv, NULL,
						p.s.conn_evd, p.srq, &a, &sep));
		CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd,
				       p.c.dto_evd, p.c.conn_evd, &a, &cep));
		CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd,
				       p.c.dto_evd, p.c.conn_evd, &a, &cep2));
		CHECK(!connect_one(&p, sep, cep, 8), "connect %d", v);
		parked = kdat_test_fault_gone_park(sep);
		CHECK_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
		CHECK(WAIT_FOR(ep_state(sep) == DAT_EP_STATE_DISCONNECTED),
		      "server EP never disconnected (%d)", v);
		/* the handler waits for the reset's generation, then goes on */
		CHECK_OK(dat_ep_reset(sep));
		CHECK(kdat_test_fault_gone_park(NULL) > parked,
		      "the end of the connection was not parked (%d)", v);
		CHECK(next_event(p.c.conn_evd, &ev) &&
		      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
		      "client saw no DISCONNECTED (%d)", v);

		/* the next connection: its end is the only one reported */
		CHECK(!connect_one(&p, sep, cep2, 9), "reconnect %d", v);
		CHECK_OK(dat_ep_disconnect(sep, DAT_CLOSE_ABRUPT_FLAG));
		CHECK(next_event(p.s.async_evd, &ev) && is_ep_broken(&ev, sep),
		      "no EP_BROKEN for the new connection (%d: 0x%x)", v,
		      ev.event_number);
		CHECK_OK(dat_evd_dequeue(p.s.conn_evd, &ev));
		CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
		      "event 0x%x (%d)", ev.event_number, v);
		CHECK(no_event(p.s.conn_evd),
		      "DISCONNECTED for the reset connection (%d)", v);
		CHECK(no_event(p.s.async_evd), "EP_BROKEN twice (%d)", v);
		pair_close(&p);
	}

	/*
	 * A dat_ep_free that wins it: the EP has no recv EVD, so the handler
	 * itself would report the end.  The free waits for the handler; once
	 * it returns, nothing names the freed EP.
	 */
	sep = NULL;
	CHECK(!pair_open_flags(&p, 0, 8, KDAT_IA_SRQ_EP_BROKEN), "setup (free)");
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, NULL, NULL,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 10), "connect (free)");
	parked = kdat_test_fault_gone_park(sep);
	CHECK_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(WAIT_FOR(ep_state(sep) == DAT_EP_STATE_DISCONNECTED),
	      "server EP never disconnected (free)");
	CHECK_OK(dat_ep_free(sep));
	CHECK(kdat_test_fault_gone_park(NULL) > parked,
	      "the end of the connection was not parked (free)");
	CHECK(no_event(p.s.conn_evd), "a connection event for the freed EP");
	CHECK(no_event(p.s.async_evd), "EP_BROKEN for the freed EP");
out:
	kdat_test_fault_gone_park(NULL);
	pair_close(&p);
}

/*
 * A completion a device leaves in a CQ for a QP already destroyed (rxe
 * flushes an SRQ QP's buffer in progress as late as the QP's destroy, and
 * a CQ's poller may be behind) names the QP by its address only, and a new
 * QP may be made at that very address.  It must reach no EP, least of all
 * the new QP's.  Each round: the old EP's first receive's upcall holds the
 * recv CQ's poller, so its second receive stays in the CQ; the old EP is
 * freed in a thread, whose teardown parks right after the QP's destroy
 * (kdat_test_fault_qp_park), or, in odd rounds, by that upcall itself (the
 * CQ is then polled past the destroy in a work item, once the upcall
 * returns); a new EP on the same SRQ and recv EVD then connects, its QP
 * maybe at the old one's address (a freed object is often its slab's
 * next; the rounds give it several chances); the poller goes on.  The
 * second receive's buffer comes back to the SRQ, and the new EP's only
 * event is its own message's.
 */
#define STALE_ROUNDS	6

struct stale_box {
	atomic_t calls;
	bool release;
	bool free_in_upcall, entered, go_free;
	DAT_EP_HANDLE ep[3];		/* per upcall: the event's EP ... */
	DAT_DTO_COOKIE ck[3];		/* ... and cookie */
	DAT_EP_HANDLE free_ep;
	DAT_RETURN free_ret;
	struct completion freed;
	wait_queue_head_t wq;
};

static void stale_upcall(DAT_PVOID data, const DAT_EVENT *ev,
			 DAT_BOOLEAN more)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d =
		&ev->event_data.dto_completion_event_data;
	struct stale_box *b = data;
	int i = atomic_read(&b->calls);

	if (i < ARRAY_SIZE(b->ep)) {
		b->ep[i] = d->ep_handle;
		b->ck[i] = d->user_cookie;
	}
	/* the poller's run frees the EP: the late poll goes to a work item */
	if (!i && READ_ONCE(b->free_in_upcall)) {
		WRITE_ONCE(b->entered, true);
		wake_up(&b->wq);
		wait_event_timeout(b->wq, READ_ONCE(b->go_free),
				   msecs_to_jiffies(WAIT_MS));
		b->free_ret = dat_ep_free(b->free_ep);
		complete_all(&b->freed);
	}
	hold_first_upcall(&b->calls, &b->release, &b->wq);
}

static int stale_free_thread(void *data)
{
	struct stale_box *b = data;

	b->free_ret = dat_ep_free(b->free_ep);
	complete_all(&b->freed);
	return 0;
}

static void t_srq_completion_of_a_destroyed_qp_reaches_no_new_ep(void)
{
	static struct pair p;	/* too big for the stack */
	static struct stale_box box;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = stale_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep, cep, sep_new, cep_new;
	struct task_struct *k = NULL;
	DAT_EVD_HANDLE evd;
	DAT_RETURN accepted;
	int r, i, parked, ends;
	DAT_CR_HANDLE cr;
	bool ok, freeing = false;
	DAT_EVENT ev;
	u32 tag;
	u64 ck;

	CHECK(!pair_open(&p, 0, 8), "setup");
	init_waitqueue_head(&box.wq);
	init_completion(&box.freed);
	CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &up,
				 DAT_EVD_DTO_FLAG, &evd));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd, p.s.dto_evd,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(plain_ep(&p.c, &cep));
	CHECK(!connect_one(&p, sep, cep, 100), "connect");
	for (r = 0; r < STALE_ROUNDS; r++) {
		ck = 40 + 3 * r;
		atomic_set(&box.calls, 0);
		box.release = false;
		/* odd rounds: the upcall frees the EP, in the poller's run */
		box.free_in_upcall = r & 1;
		box.entered = false;
		box.go_free = false;
		box.free_ep = sep;
		reinit_completion(&box.freed);
		for (i = 0; i < 3; i++)
			CHECK_OK(post_srq(&p, i * 64, 64, ck + i));
		p.cep[0] = cep;
		CHECK(send_msg(&p, 0, 0, 8, 1), "send 1 (%d)", r);
		CHECK(wait_event_timeout(box.wq, atomic_read(&box.calls) >= 1 ||
					 READ_ONCE(box.entered),
					 msecs_to_jiffies(WAIT_MS)),
		      "no upcall (%d)", r);
		/* placed by the server's device: in the CQ, behind the poller */
		CHECK(send_msg(&p, 0, 0, 8, 2), "send 2 (%d)", r);

		CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd,
						p.s.dto_evd, p.s.conn_evd,
						p.srq, &a, &sep_new));
		CHECK_OK(plain_ep(&p.c, &cep_new));
		/* the client's QP first: the request is in when it was made */
		tag = 101 + r;
		CHECK_OK(connect_to(cep_new, next_qual, sizeof(tag), &tag));
		CHECK(next_event(p.s.cr_evd, &ev) &&
		      ev.event_number == DAT_CONNECTION_REQUEST_EVENT,
		      "no connection request (%d)", r);
		cr = ev.event_data.cr_arrival_event_data.cr_handle;
		/*
		 * The free on this CPU, the accept's QP made on it next: the
		 * slab's per-CPU free list gives the old address back first.
		 */
		freeing = true;
		if (box.free_in_upcall) {
			/* the poller stays in the upcall after the free */
			WRITE_ONCE(box.go_free, true);
			wake_up(&box.wq);
			CHECK(wait_for_completion_timeout(&box.freed,
							  msecs_to_jiffies(WAIT_MS)),
			      "the upcall's free never returned (%d)", r);
			CHECK_OK(box.free_ret);
			CHECK_OK(dat_cr_accept(cr, sep_new, 0, NULL));
		} else {
			migrate_disable();
			parked = kdat_test_fault_qp_park(sep);
			k = kthread_create(stale_free_thread, &box,
					   "kdat_stale_free");
			if (!IS_ERR(k)) {
				kthread_bind(k, smp_processor_id());
				wake_up_process(k);
			}
			ok = !IS_ERR(k) &&
			     WAIT_FOR(kdat_test_fault_qp_park(sep) > parked);
			accepted = ok ? dat_cr_accept(cr, sep_new, 0, NULL) :
					DAT_SUCCESS;
			migrate_enable();
			CHECK(!IS_ERR(k), "thread (%d)", r);
			CHECK(ok, "the old QP's teardown never parked (%d)", r);
			CHECK_OK(accepted);
		}
		/* the old connection's end and the new one, in either order */
		for (i = 0, ends = 0; i < 2; i++) {
			CHECK(next_event(p.c.conn_evd, &ev), "client event %d (%d)",
			      i, r);
			ends |= ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
				ev.event_data.connect_event_data.ep_handle == cep;
			ends |= (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
				 ev.event_data.connect_event_data.ep_handle ==
				 cep_new) << 1;
		}
		CHECK(ends == 3, "client events: ends 0x%x (%d)", ends, r);
		CHECK_OK(dat_ep_free(cep));
		CHECK(!kt_established(&kt, &p.s, &sep_new, 1), "connect (%d)", r);
		kdat_test_fault_qp_park(NULL);
		WRITE_ONCE(box.release, true);
		wake_up(&box.wq);
		CHECK(wait_for_completion_timeout(&box.freed,
						  msecs_to_jiffies(WAIT_MS)),
		      "the free never returned (%d)", r);
		freeing = false;
		k = NULL;
		CHECK_OK(box.free_ret);
		sep = sep_new;
		cep = cep_new;

		p.cep[0] = cep;
		CHECK(send_msg(&p, 0, 0, 8, 3), "send 3 (%d)", r);
		CHECK(WAIT_FOR(atomic_read(&box.calls) >= 2),
		      "the new EP's receive not seen (%d)", r);
		CHECK(box.ep[1] != sep || box.ck[1].as_64 != ck + 1,
		      "the old QP's second receive was reported on the new QP at its address (%d)",
		      r);
		CHECK(box.ep[1] == sep && box.ck[1].as_64 == ck + 2,
		      "second event: EP %p cookie %llu (%d)", box.ep[1],
		      box.ck[1].as_64, r);
		CHECK(no_event(evd) && atomic_read(&box.calls) == 2,
		      "%d upcalls (%d)", atomic_read(&box.calls), r);
		/* 2 reaped, the second given back with the old EP: none left */
		CHECK(WAIT_FOR(srq_q(p.srq).outstanding_dto_count == 0) &&
		      srq_q(p.srq).available_dto_count == 0,
		      "SRQ counts %d/%d (%d)", srq_q(p.srq).available_dto_count,
		      srq_q(p.srq).outstanding_dto_count, r);
	}
out:
	kdat_test_fault_qp_park(NULL);
	WRITE_ONCE(box.release, true);
	wake_up(&box.wq);
	/* a free that never returns (thread or upcall): leave the pair */
	if (freeing && !IS_ERR(k) &&
	    !wait_for_completion_timeout(&box.freed,
					 msecs_to_jiffies(WAIT_MS))) {
		pr_err("kdat_test: %s: the free hangs, pair leaked\n",
		       cur_test);
		return;
	}
	pair_close(&p);
}

/*
 * A teardown of an SRQ EP polls the recv EVD's CQ past its QP's destroy
 * (kdat_srq_qp_gone), so it waits for that CQ's poller.  An upcall of that
 * poller that calls on the EP meanwhile must not wait for that teardown:
 * before, each waited for the other for ever.  The teardown parks right
 * after the QP's destroy (kdat_test_fault_qp_park); a message to another
 * EP on the same SRQ and recv EVD then runs the upcall.
 * v 0: a dat_ep_reset in a thread; the upcall resets the EP again
 *      (DAT_SUCCESS at once, the reset is under way) and connects it
 *      (DAT_INVALID_STATE, which waited for the reset before).
 * v 1: a dat_ep_reset from an upcall of the EP's request EVD, which goes
 *      to reset_work; the upcall frees the EP (DAT_SUCCESS at once: it
 *      waited for reset_work's teardown before).
 * Either way the parked teardown then finishes.
 */
struct rr_box {
	int v;
	DAT_EP_HANDLE ep;		/* the EP torn down */
	bool called;			/* the recv upcall's calls returned */
	DAT_RETURN reset_ret, connect_ret, free_ret, thread_ret;
	atomic_t calls, req_calls;
	struct completion reset_done;
	wait_queue_head_t wq;
};

static void rr_recv_upcall(DAT_PVOID data, const DAT_EVENT *ev,
			   DAT_BOOLEAN more)
{
	struct rr_box *b = data;

	if (atomic_inc_return(&b->calls) != 1)
		return;
	if (b->v) {
		b->free_ret = dat_ep_free(b->ep);
	} else {
		b->reset_ret = dat_ep_reset(b->ep);
		b->connect_ret = connect_to(b->ep, next_qual, 0, NULL);
	}
	WRITE_ONCE(b->called, true);
	wake_up(&b->wq);
}

/* the teardown: a reset, from a thread (v 0) or the request EVD's upcall */
static void rr_reset(struct rr_box *b)
{
	b->thread_ret = dat_ep_reset(b->ep);
	complete_all(&b->reset_done);
}

/* v 1: the first send completion's upcall resets the EP */
static void rr_req_upcall(DAT_PVOID data, const DAT_EVENT *ev,
			  DAT_BOOLEAN more)
{
	struct rr_box *b = data;

	if (atomic_inc_return(&b->req_calls) == 1)
		rr_reset(b);
}

static int rr_reset_thread(void *data)
{
	rr_reset(data);
	return 0;
}

static void t_srq_ep_calls_from_its_recv_upcall_wait_for_no_teardown(void)
{
	static struct pair p;	/* too big for the stack */
	static struct rr_box box;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = rr_recv_upcall };
	DAT_UPCALL_OBJECT rup = { .instance_data = &box,
				  .upcall_func = rr_req_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep, sep2, cep, cep2;
	DAT_EVD_HANDLE evd, revd;
	DAT_LMR_TRIPLET t;
	struct task_struct *k;
	int parked, v;
	DAT_EVENT ev;

	for (v = 0; v < 2; v++) {
		memset(&box, 0, sizeof(box));
		box.v = v;
		init_waitqueue_head(&box.wq);
		init_completion(&box.reset_done);
		CHECK(!pair_open(&p, 0, 8), "setup %d", v);
		CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_SINGLE_INSTANCE,
					 &up, DAT_EVD_DTO_FLAG, &evd));
		revd = p.s.dto_evd;
		if (v)
			CHECK_OK(dat_evd_kcreate(p.s.ia, 64,
						 DAT_UPCALL_SINGLE_INSTANCE,
						 &rup, DAT_EVD_DTO_FLAG, &revd));
		CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd, revd,
						p.s.conn_evd, p.srq, &a, &sep));
		CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd, revd,
						p.s.conn_evd, p.srq, &a, &sep2));
		CHECK_OK(plain_ep(&p.c, &cep));
		CHECK_OK(plain_ep(&p.c, &cep2));
		CHECK(!connect_one(&p, sep, cep, 1), "connect 1 (%d)", v);
		CHECK(!connect_one(&p, sep2, cep2, 2), "connect 2 (%d)", v);
		CHECK_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
		CHECK(WAIT_FOR(ep_state(sep) == DAT_EP_STATE_DISCONNECTED),
		      "server EP never disconnected (%d)", v);

		box.ep = sep;
		parked = kdat_test_fault_qp_park(sep);
		if (v) {
			/* a send of the other EP: its upcall resets this one */
			t = seg(&p.c, 512, 64);
			CHECK_OK(dat_ep_post_recv(cep2, 1, &t, cookie(5),
						  DAT_COMPLETION_DEFAULT_FLAG));
			t = seg(&p.s, 512, 8);
			CHECK_OK(dat_ep_post_send(sep2, 1, &t, cookie(6),
						  DAT_COMPLETION_DEFAULT_FLAG));
			CHECK(next_event(p.c.dto_evd, &ev), "client receive");
		} else {
			k = kthread_run(rr_reset_thread, &box, "kdat_rr_reset");
			CHECK(!IS_ERR(k), "thread");
		}
		if (!WAIT_FOR(kdat_test_fault_qp_park(sep) > parked)) {
			kdat_test_fault_qp_park(NULL);
			CHECK(wait_for_completion_timeout(&box.reset_done,
							  msecs_to_jiffies(WAIT_MS)),
			      "no reset ran (%d)", v);
			CHECK(0, "the teardown never parked (%d)", v);
		}
		CHECK_OK(post_srq(&p, 0, 64, 7));
		p.cep[0] = cep2;
		CHECK(send_msg(&p, 0, 0, 8, 1), "send (%d)", v);
		if (!wait_event_timeout(box.wq, READ_ONCE(box.called),
					msecs_to_jiffies(WAIT_MS))) {
			/*
			 * The upcall waits for the parked teardown, whose poll
			 * would wait for the upcall: leave both, and the pair.
			 */
			pr_err("kdat_test: not ok %s: a call from the recv EVD's upcall waits for a teardown that waits for that upcall (%d; pair leaked)\n",
			       cur_test, v);
			cur_failed = true;
			return;
		}
		kdat_test_fault_qp_park(NULL);
		CHECK(wait_for_completion_timeout(&box.reset_done,
						  msecs_to_jiffies(WAIT_MS)),
		      "the first reset never returned (%d)", v);
		CHECK_OK(box.thread_ret);
		if (v) {
			CHECK_OK(box.free_ret);
		} else {
			CHECK_OK(box.reset_ret);
			CHECK(DAT_GET_TYPE(box.connect_ret) == DAT_INVALID_STATE,
			      "connect during the reset: 0x%x",
			      box.connect_ret);
			CHECK(WAIT_FOR(ep_state(sep) ==
				       DAT_EP_STATE_UNCONNECTED),
			      "state %d after the reset", ep_state(sep));
		}
		pair_close(&p);
	}
	return;
out:
	kdat_test_fault_qp_park(NULL);
	pair_close(&p);
}

struct upcall_box {
	atomic_t calls;
	DAT_EVENT last;
	wait_queue_head_t wq;
};

static void box_upcall(DAT_PVOID data, const DAT_EVENT *ev, DAT_BOOLEAN more)
{
	struct upcall_box *b = data;

	b->last = *ev;
	atomic_inc(&b->calls);
	wake_up(&b->wq);
}

static void t_evd_upcalls_deliver_and_modify_upcall(void)
{
	static struct pair p;	/* too big for the stack */
	static struct upcall_box box;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = box_upcall };
	DAT_UPCALL_OBJECT nofn = { .instance_data = &box };
	DAT_EVD_HANDLE evd;
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep, cep;
	DAT_EVENT ev;

	atomic_set(&box.calls, 0);
	init_waitqueue_head(&box.wq);
	CHECK(!pair_open(&p, 0, 8), "setup");
	CHECK_OK(dat_evd_kcreate(p.s.ia, 64, DAT_UPCALL_SINGLE_INSTANCE, &up,
				 DAT_EVD_DTO_FLAG, &evd));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd, NULL,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 5), "connect");
	p.cep[0] = cep;
	CHECK_OK(post_srq(&p, 0, 64, 11));
	CHECK_OK(post_srq(&p, 64, 64, 12));
	CHECK_OK(post_srq(&p, 128, 64, 13));
	CHECK(send_msg(&p, 0, 0, 8, 1), "send");
	CHECK(wait_event_timeout(box.wq, atomic_read(&box.calls) == 1,
				 msecs_to_jiffies(WAIT_MS)), "no upcall");
	CHECK(box.last.event_number == DAT_DTO_COMPLETION_EVENT &&
	      box.last.event_data.dto_completion_event_data.ep_handle == sep,
	      "upcall event");
	/* an event handed to an upcall is consumed: nothing to dequeue */
	CHECK(no_event(evd), "event also queued");
	CHECK(srq_q(p.srq).outstanding_dto_count == 2, "not reaped");
	/*
	 * An upcall object without a function is refused, also while the
	 * EVD has one (the EVD would call NULL); the old upcall stays.
	 */
	CHECK_RET(dat_evd_modify_upcall(evd, DAT_UPCALL_SINGLE_INSTANCE,
					&nofn), DAT_INVALID_PARAMETER);
	CHECK_RET(dat_evd_modify_upcall(evd, DAT_UPCALL_MANY, &nofn),
		  DAT_INVALID_PARAMETER);
	CHECK(send_msg(&p, 0, 0, 8, 3), "send");
	CHECK(wait_event_timeout(box.wq, atomic_read(&box.calls) == 2,
				 msecs_to_jiffies(WAIT_MS)),
	      "no upcall after a refused modify_upcall");
	/* with upcalls disabled events queue for dequeue instead */
	CHECK_OK(dat_evd_modify_upcall(evd, DAT_UPCALL_DISABLE, NULL));
	CHECK(send_msg(&p, 0, 0, 8, 2), "send");
	CHECK(next_event(evd, &ev), "not queued");
	CHECK(atomic_read(&box.calls) == 2, "upcall while disabled");
	CHECK_OK(dat_evd_modify_upcall(evd, DAT_UPCALL_TEARDOWN, NULL));
	CHECK_RET(dat_evd_modify_upcall(evd, (DAT_UPCALL_POLICY)7, &up),
		  DAT_INVALID_PARAMETER);
out:
	pair_close(&p);
}

/*
 * @free(@h), again while a call still holds its use of the object
 * (DAT_INVALID_STATE; bounded, for a broken module only).
 */
static DAT_RETURN free_while_in_use(DAT_RETURN (*free)(DAT_HANDLE),
				    DAT_HANDLE h)
{
	DAT_RETURN ret;
	int tries = 0;

	do {
		ret = free(h);
		cond_resched();
	} while (DAT_GET_TYPE(ret) == DAT_INVALID_STATE && ++tries < 100000);
	return ret;
}

struct lw_free_box {
	DAT_SRQ_HANDLE srq;
	struct task_struct *task;
	DAT_RETURN ret;
	struct completion done;
};

static void lw_free_upcall(DAT_PVOID data, const DAT_EVENT *ev,
			   DAT_BOOLEAN more)
{
	struct lw_free_box *b = data;

	if (ev->event_number != DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR ||
	    ev->event_data.asynch_error_event_data.reason !=
	    DAT_SRQ_LOW_WATERMARK_EVENT || b->task)
		return;
	b->task = current;
	/* the call that fired may still hold its use of the SRQ */
	b->ret = free_while_in_use(dat_srq_free, b->srq);
	complete(&b->done);
}

/*
 * The low watermark that dat_srq_set_lw (or dat_srq_create) fires in the
 * call itself reaches the async EVD's upcall through the EVD's work, not
 * inside the consumer's call: an upcall there that frees the SRQ (or
 * closes the IA) would wait for the call's own use of it, and one that
 * takes a lock the caller holds would deadlock on the caller.
 */
static void t_srq_lw_upcall_runs_outside_the_call_that_fired(void)
{
	static struct kt_side x;
	static struct lw_free_box box;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = lw_free_upcall };
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	bool done;
	int round;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_evd_modify_upcall(x.async_evd, DAT_UPCALL_SINGLE_INSTANCE,
				       &up));
	/* round 0: set_lw fires on an empty SRQ; round 1: create does */
	for (round = 0; round < 2; round++) {
		memset(&box, 0, sizeof(box));
		init_completion(&box.done);
		box.ret = DAT_INTERNAL_ERROR;
		sa.low_watermark = round ? 1 : DAT_SRQ_LW_DEFAULT;
		CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &box.srq));
		if (!round)
			CHECK_OK(dat_srq_set_lw(box.srq, 1));
		CHECK(box.task != current,
		      "round %d: the upcall ran inside the consumer's call",
		      round);
		/* a failure detector only: the pass criterion is the free */
		done = wait_for_completion_timeout(&box.done,
						   msecs_to_jiffies(WAIT_MS));
		CHECK(done, "round %d: no watermark upcall", round);
		CHECK(box.ret == DAT_SUCCESS,
		      "round %d: dat_srq_free in the upcall: %#x", round,
		      box.ret);
	}
out:
	if (x.async_evd)
		dat_evd_modify_upcall(x.async_evd, DAT_UPCALL_TEARDOWN, NULL);
	side_close(&x);
}

/* The next event on @x's async EVD is @evd's overflow. */
static bool next_overflow(struct kt_side *x, DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;

	return next_event(x->async_evd, &ev) &&
	       is_async(&ev, DAT_ASYNC_ERROR_EVD_OVERFLOW, evd,
			DAT_EVD_OVERFLOW_ERROR);
}

/*
 * A kernel EVD reports each overflow once: the first event lost after it
 * last took one.  A DTO EVD of 2 fills, loses a receive (reported), is
 * drained, fills and loses one again: reported again.  The lost
 * receives' buffers are counted back; the two queued ones stay
 * outstanding.
 */
static void t_evd_overflow_reported_once_per_overflow(void)
{
	static struct pair p;
	DAT_EP_ATTR a = ep_attr();
	DAT_EVD_HANDLE evd;
	DAT_EP_HANDLE sep, cep;
	DAT_SRQ_PARAM q;
	DAT_EVENT ev;
	int i, round;

	CHECK(!pair_open(&p, 0, 8), "setup");
	CHECK_OK(dat_evd_kcreate(p.s.ia, 2, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_DTO_FLAG, &evd));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, evd, NULL,
					p.s.conn_evd, p.srq, &a, &sep));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK(!connect_one(&p, sep, cep, 5), "connect");
	p.cep[0] = cep;
	for (i = 0; i < 6; i++)
		CHECK_OK(post_srq(&p, i * 64, 64, 100 + i));
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 3; i++)
			CHECK(send_msg(&p, 0, 0, 8, round * 3 + i), "send");
		CHECK(next_overflow(&p.s, evd), "overflow %d not reported",
		      round + 1);
		CHECK(no_event(p.s.async_evd), "reported twice");
		q = srq_q(p.srq);
		CHECK(q.available_dto_count == 3 - 3 * round &&
		      q.outstanding_dto_count == q.available_dto_count + 2,
		      "counts %d/%d after overflow %d",
		      q.available_dto_count, q.outstanding_dto_count,
		      round + 1);
		for (i = 0; i < 2; i++)
			CHECK(next_event(evd, &ev), "queued event missing");
		CHECK(no_event(evd), "a lost event was queued");
	}
out:
	pair_close(&p);
}

struct selffree_box {
	DAT_EVD_HANDLE evd;
	DAT_RETURN ret;
	struct completion done;
};

static void selffree_upcall(DAT_PVOID data, const DAT_EVENT *ev,
			    DAT_BOOLEAN more)
{
	struct selffree_box *b = data;

	/*
	 * dat_evd_post_se may still hold its use of the EVD (it queued this
	 * work before returning): the free is DAT_INVALID_STATE until then.
	 */
	b->ret = free_while_in_use(dat_evd_free, b->evd);
	complete(&b->done);
}

/*
 * An upcall may free its own EVD.  A software event (as connection and
 * asynchronous events) reaches its upcall through the EVD's work item, so
 * the free runs inside the work it would otherwise wait for: it returns,
 * and the EVD is gone.
 */
static void t_evd_upcall_frees_its_own_evd(void)
{
	static struct kt_side x;
	static struct selffree_box box;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = selffree_upcall };
	DAT_EVENT ev = { .event_number = DAT_SOFTWARE_EVENT };
	DAT_EVD_PARAM q;
	bool done;

	box.ret = DAT_INTERNAL_ERROR;
	init_completion(&box.done);
	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_evd_kcreate(x.ia, 8, DAT_UPCALL_SINGLE_INSTANCE, &up,
				 DAT_EVD_SOFTWARE_FLAG, &box.evd));
	CHECK_OK(dat_evd_post_se(box.evd, &ev));
	/* a failure detector only: the pass criterion is the free's return */
	done = wait_for_completion_timeout(&box.done,
					   msecs_to_jiffies(2 * WAIT_MS));
	CHECK(done, "dat_evd_free in its own upcall never returned (deadlock)");
	CHECK_OK(box.ret);
	CHECK_RET(dat_evd_query(box.evd, DAT_EVD_FIELD_ALL, &q),
		  DAT_INVALID_HANDLE);
out:
	side_close(&x);
}

/*
 * A kernel consumer's connection EVD of another IA may run an upcall: the
 * EP's connection events run it, naming the EP.  Closing that IA takes the
 * EVD, its upcall included, from under the connected EP; the EP's later
 * events (its disconnect) are dropped, and nothing calls the upcall again.
 */
static void t_ep_connection_evd_of_another_ia_with_upcall(void)
{
	static struct pair p;
	static struct kt_side x;	/* the other IA, on the client's device */
	static struct upcall_box box;
	DAT_UPCALL_OBJECT up = { .instance_data = &box,
				 .upcall_func = box_upcall };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE sep = NULL, cep = NULL;
	DAT_EVD_HANDLE uevd;
	DAT_EVENT ev;
	u32 tag = 9;
	int calls;

	atomic_set(&box.calls, 0);
	init_waitqueue_head(&box.wq);
	CHECK(!pair_open(&p, 0, 16), "setup");
	CHECK(!side_open(&x, cli_ia, 4096), "open a second IA on %s", cli_ia);
	CHECK_OK(dat_evd_kcreate(x.ia, 16, DAT_UPCALL_SINGLE_INSTANCE, &up,
				 DAT_EVD_CONNECTION_FLAG, &uevd));
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd, uevd,
			       &a, &cep));
	CHECK_OK(dat_ep_create_with_srq(p.s.ia, p.s.pz, p.s.dto_evd,
					p.s.dto_evd, p.s.conn_evd, p.srq, &a,
					&sep));
	CHECK_OK(dat_psp_create(p.s.ia, next_qual, p.s.cr_evd,
				DAT_PSP_CONSUMER_FLAG, &p.psp));
	CHECK_OK(connect_to(cep, next_qual, sizeof(tag), &tag));
	CHECK(!kt_accept(&kt, &p.s, &p.c, &sep, tag, 0, 1), "accept");
	CHECK(!kt_established(&kt, &p.s, &sep, 1), "server established");
	CHECK(wait_event_timeout(box.wq, atomic_read(&box.calls) >= 1,
				 msecs_to_jiffies(WAIT_MS)),
	      "no upcall on the other IA's EVD");
	CHECK(box.last.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
	      box.last.event_data.connect_event_data.ep_handle == cep,
	      "upcall event %x", box.last.event_number);
	CHECK(no_event(p.c.conn_evd), "an event on the EP's own IA's EVD");
	CHECK_EXACT(dat_evd_free(uevd),
		    BAD_STATE(DAT_INVALID_STATE_EVD_IN_USE));

	/* the upcall EVD's IA closes under the connected EP */
	CHECK_OK(dat_ia_close(x.ia, DAT_CLOSE_ABRUPT_FLAG));
	x.ia = NULL;
	calls = atomic_read(&box.calls);
	CHECK(ep_state(cep) == DAT_EP_STATE_CONNECTED, "EP state %d",
	      ep_state(cep));
	CHECK_OK(dat_ep_disconnect(cep, DAT_CLOSE_GRACEFUL_FLAG));
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "server saw no disconnect");
	CHECK(WAIT_FOR(ep_state(cep) == DAT_EP_STATE_DISCONNECTED),
	      "EP state %d", ep_state(cep));
	CHECK(no_event(p.c.conn_evd), "an event on the EP's own IA's EVD");
	CHECK_OK(dat_ep_free(cep));
	cep = NULL;
	/* the free waited for the EP's connection handler: all is in */
	CHECK(atomic_read(&box.calls) == calls,
	      "upcall after its EVD's IA closed");
out:
	if (cep)
		dat_ep_free(cep);
	side_close(&x);
	pair_close(&p);
}

static void t_cr_reject_reaches_the_client(void)
{
	static struct pair p;	/* too big for the stack */
	struct sockaddr_in sin = { .sin_family = AF_INET };
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE cep;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;
	DAT_EP_STATE st;

	CHECK(!pair_open(&p, 0, 4), "setup");
	sin.sin_addr.s_addr = in_aton(srv_addr);
	CHECK_OK(dat_ep_create(p.c.ia, p.c.pz, p.c.dto_evd, p.c.dto_evd,
			       p.c.conn_evd, &a, &cep));
	CHECK_OK(dat_psp_create(p.s.ia, ++next_qual, p.s.cr_evd,
				DAT_PSP_CONSUMER_FLAG, &p.psp));
	CHECK_RET(dat_psp_create(p.s.ia, next_qual, p.s.cr_evd,
				 DAT_PSP_CONSUMER_FLAG, &p.psp),
		  DAT_CONN_QUAL_IN_USE);
	CHECK_OK(dat_ep_connect(cep, (DAT_IA_ADDRESS_PTR)&sin, next_qual,
				DAT_TIMEOUT_INFINITE, 0, NULL,
				DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	CHECK(next_event(p.s.cr_evd, &ev), "no CR");
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	CHECK_OK(dat_cr_reject(cr));
	CHECK_RET(dat_cr_reject(cr), DAT_INVALID_HANDLE);
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED,
	      "client got 0x%x", ev.event_number);
	CHECK_OK(dat_ep_get_status(cep, &st, NULL, NULL));
	CHECK(st == DAT_EP_STATE_DISCONNECTED, "state %d", st);
	/* reset makes the EP usable again */
	CHECK_OK(dat_ep_reset(cep));
	CHECK_OK(dat_ep_get_status(cep, &st, NULL, NULL));
	CHECK(st == DAT_EP_STATE_UNCONNECTED, "state %d", st);
out:
	pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* IA and handle hygiene                                               */

static void t_ia_reports_srq_attributes(void)
{
	DAT_IA_ATTR ia;
	DAT_PROVIDER_ATTR pa;
	struct kt_side x = {};

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_ia_query(x.ia, NULL, DAT_IA_FIELD_ALL, &ia,
			      DAT_PROVIDER_FIELD_ALL, &pa));
	CHECK(ia.max_srqs > 0 && ia.max_ep_per_srq > 0 &&
	      ia.max_recv_per_srq > 0, "IA SRQ limits %d/%d/%d", ia.max_srqs,
	      ia.max_ep_per_srq, ia.max_recv_per_srq);
	CHECK(pa.srq_supported == DAT_TRUE, "srq_supported");
	CHECK(pa.srq_watermarks_supported != 0, "watermarks");
	CHECK(pa.srq_info_supported != 0, "info");
	CHECK(((struct sockaddr_in *)ia.ia_address_ptr)->sin_addr.s_addr,
	      "no IA address");
out:
	side_close(&x);
}

static void t_handles_wrong_type_and_stale(void)
{
	struct kt_side x = {};
	DAT_HANDLE_TYPE type;
	DAT_PZ_HANDLE pz;
	DAT_EVENT ev;
	DAT_PZ_PARAM pp;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_get_handle_type(x.pz, &type));
	CHECK(type == DAT_HANDLE_TYPE_PZ, "type");
	CHECK_RET(dat_evd_dequeue(x.pz, &ev), DAT_INVALID_HANDLE);
	CHECK_RET(dat_pz_free(x.dto_evd), DAT_INVALID_HANDLE);
	CHECK_RET(dat_ep_free(x.ia), DAT_INVALID_HANDLE);
	CHECK_OK(dat_pz_create(x.ia, &pz));
	CHECK_OK(dat_pz_free(pz));
	CHECK_RET(dat_pz_free(pz), DAT_INVALID_HANDLE);
	CHECK_RET(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pp), DAT_INVALID_HANDLE);
	CHECK_RET(dat_get_handle_type(pz, &type), DAT_INVALID_HANDLE);
	CHECK_RET(dat_ia_close((DAT_IA_HANDLE)0x1000, DAT_CLOSE_ABRUPT_FLAG),
		  DAT_INVALID_HANDLE);
	/* a PZ in use by an LMR is not freed */
	CHECK_RET(dat_pz_free(x.pz), DAT_INVALID_STATE);
out:
	side_close(&x);
}

/* ------------------------------------------------------------------ */
/* Issue 11: defaults, the error state, handle reuse                   */

/*
 * DAT_HW_DEFAULT in every SRQ attribute and as an EVD's qlen: the
 * provider chooses, and query reports what it chose (docs/user-api.md).
 */
static void t_srq_and_evd_hw_default_attrs_are_chosen_and_reported(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = DAT_HW_DEFAULT,
			    .max_recv_iov = DAT_HW_DEFAULT,
			    .low_watermark = DAT_HW_DEFAULT };
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq = NULL;
	DAT_EVD_HANDLE evd = NULL;
	DAT_EVD_PARAM ep;
	DAT_IA_ATTR ia;
	DAT_SRQ_PARAM q;
	DAT_COUNT i;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_ia_query(x.ia, NULL, DAT_IA_FIELD_ALL, &ia, 0, NULL));
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	q = srq_q(srq);
	CHECK(q.max_recv_dtos == min(ia.max_recv_per_srq, 256),
	      "max_recv_dtos %d", q.max_recv_dtos);
	CHECK(q.max_recv_iov >= 1 && q.max_recv_iov <= 16,
	      "max_recv_iov %d", q.max_recv_iov);
	CHECK(q.low_watermark == DAT_SRQ_LW_DEFAULT, "lw %d", q.low_watermark);
	CHECK(no_event(x.async_evd), "a watermark was armed");
	/* the chosen size is the real one: exactly that many fit */
	for (i = 0; i < q.max_recv_dtos; i++) {
		DAT_LMR_TRIPLET t = seg(&x, 0, 64);

		CHECK_OK(dat_srq_post_recv(srq, 1, &t, cookie(i)));
	}
	{
		DAT_LMR_TRIPLET t = seg(&x, 0, 64);

		CHECK_RET(dat_srq_post_recv(srq, 1, &t, cookie(i)),
			  DAT_INSUFFICIENT_RESOURCES);
	}
	CHECK_OK(dat_evd_kcreate(x.ia, DAT_HW_DEFAULT, DAT_UPCALL_DISABLE,
				 NULL, DAT_EVD_DTO_FLAG, &evd));
	CHECK_OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep));
	CHECK(ep.evd_qlen == min(ia.max_evd_qlen, 256), "qlen %d",
	      ep.evd_qlen);
	CHECK_OK(dat_evd_free(evd));
	CHECK_OK(dat_srq_free(srq));
out:
	side_close(&x);
}

/*
 * The device puts the SRQ into the error state (IB_EVENT_SRQ_ERR through
 * its event handler): one async event names it, query says ERROR, a post
 * is refused with a code of its page (no room: the consumer keeps the
 * buffer), resize and set_lw are DAT_INVALID_STATE, counts stay, free
 * works.
 */
static void t_srq_error_state_reported_and_every_call_per_page(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	struct kt_side x = {};
	DAT_SRQ_HANDLE srq = NULL;
	DAT_EP_HANDLE ep = NULL;
	DAT_LMR_TRIPLET t;
	DAT_SRQ_PARAM q;
	DAT_EVENT ev;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	t = seg(&x, 0, 64);
	CHECK_OK(dat_srq_post_recv(srq, 1, &t, cookie(1)));
	CHECK_OK(dat_srq_post_recv(srq, 1, &t, cookie(2)));
	CHECK(srq_q(srq).srq_state == DAT_SRQ_STATE_OPERATIONAL, "state");

	CHECK_OK(kdat_test_srq_error(srq));
	CHECK(next_event(x.async_evd, &ev), "no error event");
	CHECK(ev.event_number == DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
	      "event %x", ev.event_number);
	CHECK(ev.event_data.asynch_error_event_data.dat_handle == srq &&
	      ev.event_data.asynch_error_event_data.reason ==
	      DAT_SRQ_TRANSFER_TO_ERROR, "names %p reason %d",
	      ev.event_data.asynch_error_event_data.dat_handle,
	      ev.event_data.asynch_error_event_data.reason);
	/* a second report of the same failure is not a second event */
	CHECK_OK(kdat_test_srq_error(srq));
	CHECK(no_event(x.async_evd), "reported twice");

	q = srq_q(srq);
	CHECK(q.srq_state == DAT_SRQ_STATE_ERROR, "state %d", q.srq_state);
	CHECK(q.available_dto_count == 2 && q.outstanding_dto_count == 2,
	      "counts %d/%d", q.available_dto_count, q.outstanding_dto_count);
	CHECK_RET(dat_srq_post_recv(srq, 1, &t, cookie(3)),
		  DAT_INSUFFICIENT_RESOURCES);
	CHECK(DAT_GET_SUBTYPE(dat_srq_post_recv(srq, 1, &t, cookie(3))) ==
	      DAT_RESOURCE_SRQ, "subtype");
	/* argument checks still come first */
	CHECK_RET(dat_srq_post_recv(srq, 2, &t, cookie(3)),
		  DAT_INVALID_PARAMETER);
	CHECK_RET(dat_srq_resize(srq, 16), DAT_INVALID_STATE);
	CHECK_RET(dat_srq_set_lw(srq, 1), DAT_INVALID_STATE);
	q = srq_q(srq);
	CHECK(q.max_recv_dtos == 8 && q.outstanding_dto_count == 2,
	      "changed: %d %d", q.max_recv_dtos, q.outstanding_dto_count);
	CHECK_OK(dat_ep_free(ep));
	ep = NULL;
	CHECK_OK(dat_srq_free(srq));
	srq = NULL;
	CHECK(no_event(x.async_evd), "stray async event");
out:
	side_close(&x);
}

/*
 * A freed handle is not handed out again soon: objects made after a free
 * - even once the freed memory could have gone back to the allocator -
 * get other handles, and the freed one stays DAT_INVALID_HANDLE.
 */
static void t_handles_freed_are_not_reused_soon(void)
{
	static DAT_HANDLE freed[2 * 65];	/* < the provider's 256 */
	static DAT_PZ_HANDLE pz[64];
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	struct kt_side x = {};
	DAT_HANDLE_TYPE type;
	DAT_SRQ_HANDLE srq;
	DAT_PZ_PARAM pp;
	int nfreed = 0, i, j, k;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	for (i = 0; i < 2; i++) {
		CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
		for (j = 0; j < 64; j++)
			CHECK_OK(dat_pz_create(x.ia, &pz[j]));
		for (k = 0; k < nfreed; k++) {
			CHECK(srq != freed[k],
			      "round %d: SRQ got a freed handle", i);
			for (j = 0; j < 64; j++)
				CHECK(pz[j] != freed[k],
				      "round %d: PZ got a freed handle", i);
		}
		CHECK_OK(dat_srq_free(srq));
		freed[nfreed++] = srq;
		for (j = 0; j < 64; j++) {
			CHECK_OK(dat_pz_free(pz[j]));
			freed[nfreed++] = pz[j];
		}
		/* and a freed handle stays invalid */
		CHECK_RET(dat_pz_query(pz[0], DAT_PZ_FIELD_ALL, &pp),
			  DAT_INVALID_HANDLE);
		CHECK_RET(dat_srq_query(srq, DAT_SRQ_FIELD_ALL,
					&(DAT_SRQ_PARAM){}),
			  DAT_INVALID_HANDLE);
		CHECK_RET(dat_get_handle_type(srq, &type), DAT_INVALID_HANDLE);
		/*
		 * Let the allocator have the freed memory back (RCU frees in
		 * batches, seconds later on 6.1): this makes reuse possible,
		 * it decides nothing.
		 */
		if (!i) {
			synchronize_rcu();
			msleep(6000);
			rcu_barrier();
			msleep(100);
		}
	}
out:
	side_close(&x);
}

/* ------------------------------------------------------------------ */
/* Races: kernel consumers calling on one object from several threads  */

#define RACE_THREADS	4
#define RACE_ROUNDS	64

/*
 * Run @fn on RACE_THREADS kthreads that start together (released at once
 * when all exist, so the calls really overlap), and wait for all of them.
 * @fn gets its thread index.
 */
struct race {
	void (*fn)(struct race *r, int i);
	atomic_t ready, done;
	void *arg;
	DAT_RETURN ret[RACE_THREADS];
	int n[RACE_THREADS];
	struct completion all_ready, start, finished;
};

struct race_thread {
	struct race *r;
	int i;
};

static int race_thread_fn(void *data)
{
	struct race_thread *t = data;
	struct race *r = t->r;

	if (atomic_inc_return(&r->ready) == RACE_THREADS)
		complete(&r->all_ready);
	wait_for_completion(&r->start);
	r->fn(r, t->i);
	if (atomic_inc_return(&r->done) == RACE_THREADS)
		complete(&r->finished);
	return 0;
}

static int race_run(struct race *r)
{
	static struct race_thread t[RACE_THREADS];
	struct task_struct *k;
	int i;

	atomic_set(&r->ready, 0);
	atomic_set(&r->done, 0);
	init_completion(&r->all_ready);
	init_completion(&r->start);
	init_completion(&r->finished);
	for (i = 0; i < RACE_THREADS; i++) {
		t[i].r = r;
		t[i].i = i;
		k = kthread_run(race_thread_fn, &t[i], "kdat_race%d", i);
		if (IS_ERR(k)) {
			/* the threads already started still need a start */
			atomic_add(RACE_THREADS - i, &r->done);
			atomic_add(RACE_THREADS - i, &r->ready);
			complete_all(&r->start);
			if (i)
				wait_for_completion(&r->finished);
			return PTR_ERR(k);
		}
	}
	wait_for_completion(&r->all_ready);
	complete_all(&r->start);
	wait_for_completion(&r->finished);
	return 0;
}

/* How many threads got a return of @type. */
static int race_count(const struct race *r, DAT_RETURN type)
{
	int i, n = 0;

	for (i = 0; i < RACE_THREADS; i++)
		n += DAT_GET_TYPE(r->ret[i]) == DAT_GET_TYPE(type);
	return n;
}

/* Every thread frees the same handle: exactly one free runs. */
static DAT_HANDLE race_handle;
static DAT_RETURN (*race_free)(DAT_HANDLE);

static void race_free_same(struct race *r, int i)
{
	r->ret[i] = race_free(race_handle);
}

static DAT_RETURN free_pz(DAT_HANDLE h) { return dat_pz_free(h); }
static DAT_RETURN free_evd(DAT_HANDLE h) { return dat_evd_free(h); }
static DAT_RETURN free_lmr(DAT_HANDLE h) { return dat_lmr_free(h); }
static DAT_RETURN free_srq(DAT_HANDLE h) { return dat_srq_free(h); }
static DAT_RETURN free_ep(DAT_HANDLE h) { return dat_ep_free(h); }
static DAT_RETURN free_psp(DAT_HANDLE h) { return dat_psp_free(h); }

static void t_race_every_type_freed_at_once_frees_once(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	static struct race r;
	struct kt_side x = {};
	DAT_LMR_CONTEXT ctx;
	int round, type;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	r.fn = race_free_same;
	for (round = 0; round < RACE_ROUNDS; round++) {
		for (type = 0; type < 6; type++) {
			switch (type) {
			case 0:
				CHECK_OK(dat_pz_create(x.ia, &race_handle));
				race_free = free_pz;
				break;
			case 1:
				CHECK_OK(dat_evd_kcreate(x.ia, 16,
							 DAT_UPCALL_DISABLE,
							 NULL, DAT_EVD_DTO_FLAG,
							 &race_handle));
				race_free = free_evd;
				break;
			case 2:
				CHECK_OK(lmr_on(&x, x.pz, x.buf, 64,
						&race_handle, &ctx));
				race_free = free_lmr;
				break;
			case 3:
				CHECK_OK(dat_srq_create(x.ia, x.pz, &sa,
							&race_handle));
				race_free = free_srq;
				break;
			case 4:
				CHECK_OK(dat_ep_create(x.ia, x.pz, x.dto_evd,
						       x.dto_evd, x.conn_evd,
						       &a, &race_handle));
				race_free = free_ep;
				break;
			default:
				CHECK_OK(dat_psp_create(x.ia, next_qual++,
							x.cr_evd,
							DAT_PSP_CONSUMER_FLAG,
							&race_handle));
				race_free = free_psp;
				break;
			}
			CHECK(!race_run(&r), "threads");
			CHECK(race_count(&r, DAT_SUCCESS) == 1 &&
			      race_count(&r, DAT_INVALID_HANDLE) ==
			      RACE_THREADS - 1,
			      "type %d round %d: %d of %d frees succeeded",
			      type, round, race_count(&r, DAT_SUCCESS),
			      RACE_THREADS);
			CHECK_RET(race_free(race_handle), DAT_INVALID_HANDLE);
		}
		if (next_qual > QUAL_BASE + 20000)
			next_qual = QUAL_BASE;
	}
out:
	side_close(&x);
}

/*
 * Thread 0 frees an SRQ while the others query and post to it: the free
 * is refused (DAT_INVALID_STATE) while a call is inside, the others see
 * the SRQ or DAT_INVALID_HANDLE, and it is freed exactly once.
 */
static void race_srq_users(struct race *r, int i)
{
	DAT_LMR_TRIPLET t;
	DAT_SRQ_PARAM q;
	DAT_RETURN ret;
	int k;

	if (i == 0) {
		/* refused while a call is inside: the calls are finite */
		while (DAT_GET_TYPE(ret = dat_srq_free(race_handle)) ==
		       DAT_INVALID_STATE)
			cond_resched();
		r->ret[0] = ret;
		return;
	}
	t = *(DAT_LMR_TRIPLET *)r->arg;
	r->ret[i] = DAT_SUCCESS;
	for (k = 0; k < 64; k++) {
		ret = i & 1 ? dat_srq_query(race_handle, DAT_SRQ_FIELD_ALL, &q) :
		      dat_srq_post_recv(race_handle, 1, &t, cookie(k));
		if (DAT_GET_TYPE(ret) == DAT_INVALID_HANDLE)
			break;
		/* a full SRQ refuses a post; nothing else may fail */
		if (ret != DAT_SUCCESS &&
		    DAT_GET_TYPE(ret) != DAT_INSUFFICIENT_RESOURCES)
			r->ret[i] = ret;
	}
}

static void t_race_free_against_calls_on_the_srq(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 32, .max_recv_iov = 1 };
	static struct race r;
	struct kt_side x = {};
	DAT_LMR_TRIPLET t;
	int round, i;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	t = seg(&x, 0, 64);
	r.fn = race_srq_users;
	r.arg = &t;
	for (round = 0; round < RACE_ROUNDS; round++) {
		CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &race_handle));
		CHECK(!race_run(&r), "threads");
		CHECK_OK(r.ret[0]);
		for (i = 1; i < RACE_THREADS; i++)
			CHECK_OK(r.ret[i]);
		CHECK_RET(dat_srq_free(race_handle), DAT_INVALID_HANDLE);
	}
out:
	side_close(&x);
}

/*
 * Many threads post to one SRQ with no EP: the counts are exact.
 */
static void race_post_many(struct race *r, int i)
{
	DAT_LMR_TRIPLET t = *(DAT_LMR_TRIPLET *)r->arg;
	int k;

	r->n[i] = 0;
	r->ret[i] = DAT_SUCCESS;
	for (k = 0; k < 200; k++) {
		DAT_RETURN ret = dat_srq_post_recv(race_handle, 1, &t,
						   cookie(i * 1000 + k));

		if (ret == DAT_SUCCESS)
			r->n[i]++;
		else if (DAT_GET_TYPE(ret) != DAT_INSUFFICIENT_RESOURCES)
			r->ret[i] = ret;
	}
}

static void t_race_threads_posting_to_one_srq_keep_exact_counts(void)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 600, .max_recv_iov = 1 };
	static struct race r;
	struct kt_side x = {};
	DAT_LMR_TRIPLET t;
	DAT_SRQ_PARAM q;
	int i, total = 0;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	t = seg(&x, 0, 64);
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &race_handle));
	r.fn = race_post_many;
	r.arg = &t;
	CHECK(!race_run(&r), "threads");
	for (i = 0; i < RACE_THREADS; i++) {
		CHECK_OK(r.ret[i]);
		total += r.n[i];
	}
	/* 800 tries on 600 places: exactly 600 took */
	CHECK(total == 600, "%d posts succeeded", total);
	q = srq_q(race_handle);
	CHECK(q.available_dto_count == total &&
	      q.outstanding_dto_count == total, "available %d outstanding %d",
	      q.available_dto_count, q.outstanding_dto_count);
	CHECK_OK(dat_srq_free(race_handle));
out:
	side_close(&x);
}

/*
 * IA close against creates in it: a create either made its object before
 * the close (and the close freed it) or is refused; nothing survives.
 */
static void race_ia_create(struct race *r, int i)
{
	DAT_HANDLE h;
	DAT_RETURN ret;
	int k;

	r->ret[i] = DAT_SUCCESS;
	if (i == 0) {
		r->ret[0] = dat_ia_close(race_handle, DAT_CLOSE_ABRUPT_FLAG);
		return;
	}
	for (k = 0; k < 32; k++) {
		ret = i & 1 ? dat_pz_create(race_handle, &h) :
		      dat_evd_kcreate(race_handle, 8, DAT_UPCALL_DISABLE, NULL,
				      DAT_EVD_DTO_FLAG, &h);
		if (DAT_GET_TYPE(ret) == DAT_INVALID_HANDLE)
			break;
		if (ret != DAT_SUCCESS)
			r->ret[i] = ret;
	}
}

static void t_race_ia_close_against_creates(void)
{
	static struct race r;
	DAT_EVD_HANDLE aevd;
	int round, i;

	r.fn = race_ia_create;
	for (round = 0; round < RACE_ROUNDS; round++) {
		aevd = DAT_HANDLE_NULL;
		CHECK_OK(dat_ia_open((const DAT_NAME_PTR)srv_ia, 16, &aevd,
				     &race_handle));
		CHECK(!race_run(&r), "threads");
		for (i = 0; i < RACE_THREADS; i++)
			CHECK_OK(r.ret[i]);
		CHECK_RET(dat_ia_close(race_handle, DAT_CLOSE_ABRUPT_FLAG),
			  DAT_INVALID_HANDLE);
		CHECK(WAIT_FOR(kdat_live_objects() == 0), "round %d: %ld left",
		      round, kdat_live_objects());
	}
out:
	return;
}

/* ------------------------------------------------------------------ */
/* Reserved Service Points                                             */

static bool is_rejection(DAT_EVENT_NUMBER n)
{
	return n == DAT_CONNECTION_EVENT_PEER_REJECTED ||
	       n == DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
}

/*
 * dat_rsp_create reserves the EP; a request produces a CR event naming
 * the RSP, the EP goes Tentative, dat_cr_accept with NULL uses it, and
 * data flows.  While reserved or tentative the EP refuses connect and
 * free with the state's subtype; an accept naming another EP is refused
 * and leaves the CR pending.
 */
static void t_rsp_accept_null_ep_connects_the_reserved_ep(void)
{
	static struct pair p;
	static const char hello[] = "rsp hello";
	DAT_EP_HANDLE sep = NULL, other = NULL, cep = NULL;
	DAT_LMR_TRIPLET t;
	DAT_RSP_HANDLE rsp, rsp2;
	DAT_RSP_PARAM rp;
	DAT_CR_PARAM cp;
	DAT_CR_HANDLE cr;
	DAT_CONN_QUAL q;
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 0, 4), "setup");
	CHECK_OK(plain_ep(&p.s, &sep));
	CHECK_OK(plain_ep(&p.s, &other));
	CHECK_OK(plain_ep(&p.c, &cep));
	/* a receive posted before the reservation waits for the connection */
	t = seg(&p.s, 0, 64);
	CHECK_OK(dat_ep_post_recv(sep, 1, &t, cookie(7),
				  DAT_COMPLETION_DEFAULT_FLAG));
	q = ++next_qual;
	CHECK_OK(dat_rsp_create(p.s.ia, q, sep, p.s.cr_evd, &rsp));
	CHECK(ep_state(sep) == DAT_EP_STATE_RESERVED, "state %d",
	      ep_state(sep));
	CHECK_OK(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp));
	CHECK(rp.ia_handle == p.s.ia && rp.conn_qual == q &&
	      rp.evd_handle == p.s.cr_evd && rp.ep_handle == sep, "query");
	CHECK_EXACT(connect_to(sep, q, 0, NULL),
		    BAD_STATE(DAT_INVALID_STATE_EP_RESERVED));
	CHECK_EXACT(dat_ep_free(sep), BAD_STATE(DAT_INVALID_STATE_EP_RESERVED));
	CHECK_EXACT(dat_ep_reset(sep), BAD_STATE(DAT_INVALID_STATE_EP_RESERVED));
	CHECK_EXACT(dat_rsp_create(p.s.ia, q + 1000, sep, p.s.cr_evd, &rsp2),
		    BAD_STATE(DAT_INVALID_STATE_EP_RESERVED));
	CHECK_RET(dat_psp_create(p.s.ia, q, p.s.cr_evd, DAT_PSP_CONSUMER_FLAG,
				 &p.psp), DAT_CONN_QUAL_IN_USE);
	CHECK_OK(dat_ep_post_recv(sep, 1, &t, cookie(8),
				  DAT_COMPLETION_DEFAULT_FLAG));

	CHECK_OK(connect_to(cep, q, sizeof(hello), hello));
	CHECK(next_event(p.s.cr_evd, &ev), "no CR");
	CHECK(ev.event_number == DAT_CONNECTION_REQUEST_EVENT, "event 0x%x",
	      ev.event_number);
	CHECK(ev.event_data.cr_arrival_event_data.sp_handle.rsp_handle == rsp,
	      "sp_handle is not the RSP");
	CHECK(ev.event_data.cr_arrival_event_data.conn_qual == q, "qual");
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	CHECK(ep_state(sep) == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
	      "state %d", ep_state(sep));
	CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
	CHECK(cp.local_ep_handle == sep, "local_ep_handle");
	CHECK(cp.private_data_size == sizeof(hello) &&
	      !memcmp(cp.private_data, hello, sizeof(hello)), "pdata");
	CHECK_EXACT(dat_ep_free(sep),
		    BAD_STATE(DAT_INVALID_STATE_EP_TENTCONNPENDING));
	CHECK_EXACT(connect_to(sep, q, 0, NULL),
		    BAD_STATE(DAT_INVALID_STATE_EP_TENTCONNPENDING));
	CHECK_EXACT(dat_cr_accept(cr, other, 0, NULL), BAD_ARG(DAT_INVALID_ARG2));
	CHECK(ep_state(other) == DAT_EP_STATE_UNCONNECTED, "other touched");
	CHECK_OK(dat_cr_accept(cr, NULL, 0, NULL));
	CHECK(next_event(p.s.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
	      ev.event_data.connect_event_data.ep_handle == sep,
	      "server: 0x%x", ev.event_number);
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED,
	      "client: 0x%x", ev.event_number);
	CHECK(ep_state(sep) == DAT_EP_STATE_CONNECTED, "state %d",
	      ep_state(sep));

	/* the two receives posted while unconnected and reserved complete */
	memcpy(p.c.buf, hello, sizeof(hello));
	t = seg(&p.c, 0, sizeof(hello));
	CHECK_OK(dat_ep_post_send(cep, 1, &t, cookie(1),
				  DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS,
	      "send 1");
	CHECK_OK(dat_ep_post_send(cep, 1, &t, cookie(2),
				  DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(next_event(p.c.dto_evd, &ev) &&
	      ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS,
	      "send 2");
	CHECK(next_event(p.s.dto_evd, &ev), "recv 1");
	CHECK(ev.event_data.dto_completion_event_data.ep_handle == sep &&
	      ev.event_data.dto_completion_event_data.user_cookie.as_64 == 7 &&
	      ev.event_data.dto_completion_event_data.transfered_length ==
	      sizeof(hello), "recv 1 data");
	CHECK(next_event(p.s.dto_evd, &ev), "recv 2");
	CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 8,
	      "recv 2 cookie");
	CHECK(!memcmp(p.s.buf, hello, sizeof(hello)), "bytes");

	/* freeing the spent RSP leaves the connection alone */
	CHECK_OK(dat_rsp_free(rsp));
	CHECK(ep_state(sep) == DAT_EP_STATE_CONNECTED, "state %d",
	      ep_state(sep));
	CHECK_EXACT(dat_rsp_free(rsp), BAD_HANDLE(DAT_INVALID_HANDLE_RSP));
	CHECK_EXACT(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_RSP));
out:
	pair_close(&p);
}

/*
 * An RSP delivers one request: later ones are rejected, also after the
 * consumer rejected the first (which makes the EP Unconnected again).
 * The RSP holds its EP: the EP, unreserved, may go first.
 */
static void t_rsp_one_request_then_reject_returns_the_ep(void)
{
	static struct pair p;
	DAT_EP_HANDLE sep = NULL, c1 = NULL, c2 = NULL;
	DAT_RSP_HANDLE rsp;
	DAT_RSP_PARAM rp;
	DAT_CR_HANDLE cr;
	DAT_CONN_QUAL q;
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 0, 4), "setup");
	CHECK_OK(plain_ep(&p.s, &sep));
	CHECK_OK(plain_ep(&p.c, &c1));
	CHECK_OK(plain_ep(&p.c, &c2));
	q = ++next_qual;
	CHECK_OK(dat_rsp_create(p.s.ia, q, sep, p.s.cr_evd, &rsp));
	CHECK_OK(connect_to(c1, q, 0, NULL));
	CHECK(next_event(p.s.cr_evd, &ev), "no CR");
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	/* a second request: refused by the spent RSP */
	CHECK_OK(connect_to(c2, q, 0, NULL));
	CHECK(next_event(p.c.conn_evd, &ev), "no answer to the second");
	CHECK(ev.event_data.connect_event_data.ep_handle == c2 &&
	      is_rejection(ev.event_number), "second: 0x%x", ev.event_number);
	/* its handler ran before the rejection: no second CR can follow */
	CHECK(no_event(p.s.cr_evd), "a second CR");

	CHECK_OK(dat_cr_reject(cr));
	CHECK(ep_state(sep) == DAT_EP_STATE_UNCONNECTED, "state %d",
	      ep_state(sep));
	CHECK(next_event(p.c.conn_evd, &ev) &&
	      ev.event_data.connect_event_data.ep_handle == c1 &&
	      ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED,
	      "first: 0x%x", ev.event_number);
	/* spent for good */
	CHECK_OK(dat_ep_reset(c2));
	CHECK_OK(connect_to(c2, q, 0, NULL));
	CHECK(next_event(p.c.conn_evd, &ev) && is_rejection(ev.event_number),
	      "third: 0x%x", ev.event_number);
	CHECK(no_event(p.s.cr_evd), "a CR from a spent RSP");
	CHECK(ep_state(sep) == DAT_EP_STATE_UNCONNECTED, "state %d",
	      ep_state(sep));
	/* the EP goes first; the RSP still answers and frees */
	CHECK_OK(dat_ep_free(sep));
	CHECK_OK(dat_rsp_query(rsp, DAT_RSP_FIELD_CONN_QUAL, &rp));
	CHECK(rp.conn_qual == q, "qual");
	CHECK_OK(dat_rsp_free(rsp));
out:
	pair_close(&p);
}

/*
 * dat_rsp_free of an RSP whose EP is still Reserved makes it Unconnected
 * and gives the qualifier back; an IA closed with reserved and tentative
 * EPs and a pending CR leaves nothing behind (the runner checks).
 */
static void t_rsp_free_while_reserved_and_close_with_rsps(void)
{
	static struct pair p;
	DAT_EP_HANDLE sep = NULL, sep2 = NULL, sep3 = NULL, cep = NULL;
	DAT_RSP_HANDLE rsp, rsp2, rsp3;
	DAT_CONN_QUAL q;
	DAT_EVENT ev;

	CHECK(!pair_open(&p, 0, 4), "setup");
	CHECK_OK(plain_ep(&p.s, &sep));
	CHECK_OK(plain_ep(&p.s, &sep2));
	CHECK_OK(plain_ep(&p.s, &sep3));
	CHECK_OK(plain_ep(&p.c, &cep));
	q = ++next_qual;
	CHECK_OK(dat_rsp_create(p.s.ia, q, sep, p.s.cr_evd, &rsp));
	/* the CR EVD is in use */
	CHECK_RET(dat_evd_free(p.s.cr_evd), DAT_INVALID_STATE);
	CHECK_OK(dat_rsp_free(rsp));
	CHECK(ep_state(sep) == DAT_EP_STATE_UNCONNECTED, "state %d",
	      ep_state(sep));
	/* the qualifier is free again, and so is the EP */
	CHECK_OK(dat_rsp_create(p.s.ia, q, sep2, p.s.cr_evd, &rsp2));
	CHECK_OK(dat_rsp_create(p.s.ia, ++next_qual, sep, p.s.cr_evd, &rsp));
	CHECK_OK(dat_rsp_free(rsp));
	CHECK_OK(dat_ep_free(sep));
	/* one EP tentative with its CR pending, one reserved: close */
	CHECK_OK(connect_to(cep, q, 0, NULL));
	CHECK(next_event(p.s.cr_evd, &ev), "no CR");
	CHECK(ep_state(sep2) == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
	      "state %d", ep_state(sep2));
	CHECK_OK(dat_rsp_free(rsp2));
	/* the CR decides a delivered request's EP, not the RSP's free */
	CHECK(ep_state(sep2) == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
	      "state %d after free", ep_state(sep2));
	CHECK_OK(dat_rsp_create(p.s.ia, ++next_qual, sep3, p.s.cr_evd, &rsp3));
out:
	pair_close(&p);
}

static void t_rsp_bad_args_exact_codes(void)
{
	static struct pair p;
	DAT_EP_HANDLE sep = NULL, cep = NULL;
	DAT_RSP_HANDLE rsp = NULL;
	DAT_RSP_PARAM rp;
	DAT_PSP_PARAM pp;
	DAT_CONN_QUAL q;

	CHECK(!pair_open(&p, 1, 4), "setup");
	q = ++next_qual + 1000;
	CHECK_OK(plain_ep(&p.s, &sep));
	CHECK_OK(plain_ep(&p.c, &cep));
	CHECK_EXACT(dat_rsp_create(p.s.ia, 0, sep, p.s.cr_evd, &rsp),
		    BAD_ARG(DAT_INVALID_ARG2));
	CHECK_EXACT(dat_rsp_create(p.s.ia, 65536, sep, p.s.cr_evd, &rsp),
		    BAD_ARG(DAT_INVALID_ARG2));
	CHECK_EXACT(dat_rsp_create(p.s.ia, q, sep, p.s.cr_evd, NULL),
		    BAD_ARG(DAT_INVALID_ARG5));
	CHECK_EXACT(dat_rsp_create(p.s.ia, q, NULL, p.s.cr_evd, &rsp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_EP));
	CHECK_EXACT(dat_rsp_create(p.s.ia, q, cep, p.s.cr_evd, &rsp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_EP));
	CHECK_EXACT(dat_rsp_create(p.s.ia, q, p.s.pz, p.s.cr_evd, &rsp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_EP));
	CHECK_EXACT(dat_rsp_create(p.s.ia, q, sep, p.s.dto_evd, &rsp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_EVD_CR));
	CHECK_EXACT(dat_rsp_create(p.s.ia, q, sep, p.c.cr_evd, &rsp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_EVD_CR));
	CHECK_EXACT(dat_rsp_create(p.s.pz, q, sep, p.s.cr_evd, &rsp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_IA));
	/* a connected EP cannot be reserved */
	CHECK_EXACT(dat_rsp_create(p.s.ia, q, p.sep[0], p.s.cr_evd, &rsp),
		    BAD_STATE(DAT_INVALID_STATE_EP_NOTREADY));
	/* a qualifier in use (the pair's PSP): the EP stays Unconnected */
	CHECK_OK(dat_psp_query(p.psp, DAT_PSP_FIELD_CONN_QUAL, &pp));
	CHECK_RET(dat_rsp_create(p.s.ia, pp.conn_qual, sep, p.s.cr_evd, &rsp),
		  DAT_CONN_QUAL_IN_USE);
	CHECK(ep_state(sep) == DAT_EP_STATE_UNCONNECTED, "state %d",
	      ep_state(sep));
	CHECK(rsp == NULL, "handle set on failure");
	CHECK_EXACT(dat_rsp_query(NULL, DAT_RSP_FIELD_ALL, &rp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_RSP));
	CHECK_EXACT(dat_rsp_query(p.psp, DAT_RSP_FIELD_ALL, &rp),
		    BAD_HANDLE(DAT_INVALID_HANDLE_RSP));
	CHECK_EXACT(dat_rsp_free(p.psp), BAD_HANDLE(DAT_INVALID_HANDLE_RSP));
	CHECK_EXACT(dat_rsp_free(NULL), BAD_HANDLE(DAT_INVALID_HANDLE_RSP));
	CHECK_OK(dat_rsp_create(p.s.ia, q, sep, p.s.cr_evd, &rsp));
	CHECK_EXACT(dat_rsp_query(rsp, 0x10, &rp), BAD_ARG(DAT_INVALID_ARG2));
	CHECK_EXACT(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, NULL),
		    BAD_ARG(DAT_INVALID_ARG3));
	CHECK_EXACT(dat_psp_free(rsp), BAD_HANDLE(DAT_INVALID_HANDLE_PSP));
	CHECK_OK(dat_rsp_free(rsp));
	CHECK_OK(dat_ep_free(sep));
out:
	pair_close(&p);
}

static DAT_RETURN free_rsp(DAT_HANDLE h) { return dat_rsp_free(h); }

/* Threads free one RSP at once: one free runs, the EP is Unconnected. */
static void t_race_two_frees_of_one_rsp(void)
{
	static struct race r;
	struct kt_side x = {};
	DAT_EP_HANDLE ep = NULL;
	int round;

	CHECK(!side_open(&x, srv_ia, 4096), "open");
	CHECK_OK(plain_ep(&x, &ep));
	r.fn = race_free_same;
	race_free = free_rsp;
	for (round = 0; round < RACE_ROUNDS; round++) {
		CHECK_OK(dat_rsp_create(x.ia, QUAL_BASE + 2000 + round, ep,
					x.cr_evd, &race_handle));
		CHECK(!race_run(&r), "threads");
		CHECK(race_count(&r, DAT_SUCCESS) == 1 &&
		      race_count(&r, DAT_INVALID_HANDLE) == RACE_THREADS - 1,
		      "round %d: %d frees ran", round,
		      race_count(&r, DAT_SUCCESS));
		CHECK(ep_state(ep) == DAT_EP_STATE_UNCONNECTED,
		      "round %d: state %d", round, ep_state(ep));
	}
	CHECK_OK(dat_ep_free(ep));
out:
	side_close(&x);
}

/*
 * An RSP freed while a request to it is under way: either the request
 * became a CR (the EP Tentative until the CR is rejected) or the client
 * is rejected and the EP is Unconnected.  Never both, never neither.
 */
static void t_race_rsp_free_against_a_request(void)
{
	static struct pair p;
	DAT_EP_HANDLE sep = NULL, cep = NULL;
	DAT_RSP_HANDLE rsp;
	DAT_CONN_QUAL q;
	DAT_EVENT ev, cev;
	int round, crs = 0;
	bool got_cr, got_rej;

	CHECK(!pair_open(&p, 0, 4), "setup");
	CHECK_OK(plain_ep(&p.s, &sep));
	CHECK_OK(plain_ep(&p.c, &cep));
	for (round = 0; round < 16; round++) {
		q = ++next_qual;
		CHECK_OK(dat_rsp_create(p.s.ia, q, sep, p.s.cr_evd, &rsp));
		CHECK_OK(connect_to(cep, q, 0, NULL));
		/*
		 * Not synchronisation: the free lands at a different point
		 * of the request's way each round; either outcome passes.
		 */
		usleep_range(round * 250, round * 250 + 50);
		CHECK_OK(dat_rsp_free(rsp));
		got_cr = got_rej = false;
		CHECK(WAIT_FOR((got_cr = dat_evd_dequeue(p.s.cr_evd, &ev) ==
					 DAT_SUCCESS) ||
			       (got_rej = dat_evd_dequeue(p.c.conn_evd, &cev) ==
					  DAT_SUCCESS)),
		      "round %d: neither CR nor rejection", round);
		if (got_cr) {
			crs++;
			CHECK(ep_state(sep) ==
			      DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
			      "round %d: state %d", round, ep_state(sep));
			CHECK_OK(dat_cr_reject(
				ev.event_data.cr_arrival_event_data.cr_handle));
			CHECK(next_event(p.c.conn_evd, &cev), "no rejection");
		} else {
			CHECK(no_event(p.s.cr_evd), "round %d: CR after rejection",
			      round);
		}
		CHECK(is_rejection(cev.event_number), "round %d: client 0x%x",
		      round, cev.event_number);
		CHECK(ep_state(sep) == DAT_EP_STATE_UNCONNECTED,
		      "round %d: state %d", round, ep_state(sep));
		CHECK_OK(dat_ep_reset(cep));
	}
	pr_info("kdat_test: %s: %d of 16 requests became CRs\n", cur_test, crs);
	CHECK_OK(dat_ep_free(sep));
out:
	pair_close(&p);
}

/* ------------------------------------------------------------------ */

struct kt_case {
	const char *name;
	void (*fn)(void);
};

#define CASE(f) { #f + 2, f }
static const struct kt_case cases[] = {
	CASE(t_srq_create_bad_handles),
	CASE(t_srq_create_bad_attr),
	CASE(t_srq_create_attributes_at_least_requested),
	CASE(t_srq_create_nondefault_lw_fires_at_once),
	CASE(t_srq_create_mt_safe),
	CASE(t_srq_query_worked_example),
	CASE(t_srq_query_bad_args),
	CASE(t_srq_post_recv_bad_args),
	CASE(t_srq_post_recv_pz_mismatch_is_protection_violation),
	CASE(t_srq_post_recv_privileges),
	CASE(t_srq_completion_names_dequeuing_ep_and_cookie),
	CASE(t_srq_post_recv_fills_segments_in_order),
	CASE(t_srq_post_recv_valid_in_error_free_states),
	CASE(t_srq_no_buffer_behaves_like_empty_recv_queue),
	CASE(t_srq_resize_refuses_below_outstanding),
	CASE(t_srq_resize_refuses_below_watermark),
	CASE(t_srq_resize_bad_args),
	CASE(t_srq_resize_grows_recv_cqs),
	CASE(t_srq_resize_grows_cq_of_ep_without_recv_evd),
	CASE(t_srq_resize_under_traffic_loses_nothing),
	CASE(t_srq_set_lw_fires_once_per_arming),
	CASE(t_srq_set_lw_bad_args),
	CASE(t_srq_free_refused_while_ep_uses_it),
	CASE(t_ep_with_srq_created_unconnected_with_exact_attrs),
	CASE(t_ep_with_srq_bad_args),
	CASE(t_ep_with_srq_refuses_ep_post_recv),
	CASE(t_ep_with_srq_completion_flag_rules),
	CASE(t_ep_with_srq_pz_may_differ),
	CASE(t_ep_hw_default_attributes_resolved),
	CASE(t_ep_error_subtypes_name_the_argument),
	CASE(t_ep_attr_checked_against_ia_caps),
	CASE(t_srq_disconnected_after_the_eps_receives),
	CASE(t_new_qp_post_fails_under_an_upcall_that_takes_the_ep),
	CASE(t_ep_upcall_frees_its_ep_while_peer_disconnects),
	CASE(t_ep_upcall_acts_on_its_ep_during_disconnect),
	CASE(t_ep_reset_while_upcall_acts_on_its_ep),
	CASE(t_ep_upcall_resets_its_own_ep),
	CASE(t_ep_upcall_frees_its_own_ep_without_srq),
	CASE(t_ep_upcall_resets_then_frees_its_own_ep),
	CASE(t_ep_upcalls_of_two_pollers_free_each_others_eps),
	CASE(t_ep_upcalls_of_two_pollers_reset_each_others_eps),
	CASE(t_ep_free_waiting_for_gone_work_closes_no_cycle),
	CASE(t_evd_teardown_from_an_upcall_closes_no_cycle),
	CASE(t_evd_dto_upcall_frees_its_ep_and_evd),
	CASE(t_ep_upcall_frees_an_ep_with_its_own_cq),
	CASE(t_srq_free_from_an_upcall_with_its_own_cq),
	CASE(t_ia_close_from_its_own_dto_upcall_refused),
	CASE(t_ia_close_from_an_upcall_that_freed_its_evd_refused),
	CASE(t_ia_close_of_another_ia_from_an_upcall),
	CASE(t_srq_ep_broken_after_the_eps_receives),
	CASE(t_srq_ep_broken_once_per_connection_either_side),
	CASE(t_srq_ep_broken_only_with_the_opt_in),
	CASE(t_srq_ep_broken_none_after_reset_or_free),
	CASE(t_ep_qp_error_reports_ep_broken_each_time),
	CASE(t_srq_ep_qp_error_is_the_connections_one_ep_broken),
	CASE(t_ep_reset_racing_the_end_of_a_connection),
	CASE(t_srq_completion_of_a_destroyed_qp_reaches_no_new_ep),
	CASE(t_srq_ep_calls_from_its_recv_upcall_wait_for_no_teardown),
	CASE(t_srq_eps_may_use_different_recv_evds),
	CASE(t_srq_post_recv_cookie_need_not_be_unique),
	CASE(t_ep_with_srq_unsignalled_recv_still_completes),
	CASE(t_ep_with_srq_null_recv_evd_still_returns_buffers),
	CASE(t_srq_per_connection_order_many_eps),
	CASE(t_srq_flush_on_disconnect_and_exactly_once),
	CASE(t_srq_ep_and_recv_evd_freed_at_once_count_every_buffer),
	CASE(t_srq_peer_disconnect_reports_disconnected),
	CASE(t_ep_connection_evd_of_another_ia),
	CASE(t_ep_post_recv_before_connect_completes_once),
	CASE(t_ep_recv_flushed_before_local_disconnected),
	CASE(t_ep_recv_flushed_before_peer_disconnected),
	CASE(t_ep_rdma_write_and_read),
	CASE(t_ep_rdma_write_immed_delivers_immed_and_length),
	CASE(t_srq_rdma_write_immed_takes_srq_buffer),
	CASE(t_ep_dto_operation_per_event),
	CASE(t_ep_atomic_bad_arguments),
	CASE(t_ep_atomics_change_remote_memory_and_return_old_value),
	CASE(t_ep_atomic_refused_by_target_names_operation),
	CASE(t_evd_upcalls_deliver_and_modify_upcall),
	CASE(t_evd_overflow_reported_once_per_overflow),
	CASE(t_srq_lw_upcall_runs_outside_the_call_that_fired),
	CASE(t_evd_upcall_frees_its_own_evd),
	CASE(t_ep_connection_evd_of_another_ia_with_upcall),
	CASE(t_cr_reject_reaches_the_client),
	CASE(t_ia_reports_srq_attributes),
	CASE(t_handles_wrong_type_and_stale),
	CASE(t_srq_and_evd_hw_default_attrs_are_chosen_and_reported),
	CASE(t_srq_error_state_reported_and_every_call_per_page),
	CASE(t_handles_freed_are_not_reused_soon),
	CASE(t_race_every_type_freed_at_once_frees_once),
	CASE(t_race_free_against_calls_on_the_srq),
	CASE(t_race_threads_posting_to_one_srq_keep_exact_counts),
	CASE(t_race_ia_close_against_creates),
	CASE(t_rsp_accept_null_ep_connects_the_reserved_ep),
	CASE(t_rsp_one_request_then_reject_returns_the_ep),
	CASE(t_rsp_free_while_reserved_and_close_with_rsps),
	CASE(t_rsp_bad_args_exact_codes),
	CASE(t_race_two_frees_of_one_rsp),
	CASE(t_race_rsp_free_against_a_request),
};

static void run_case(const struct kt_case *c)
{
	cur_test = c->name;
	cur_failed = false;
	c->fn();
	/* whatever the case made must be gone once it closed its IAs */
	if (!cur_failed && !WAIT_FOR(kdat_live_objects() == 0)) {
		pr_err("kdat_test: not ok %s: leak: %ld live objects\n",
		       c->name, kdat_live_objects());
		cur_failed = true;
	}
	if (cur_failed) {
		failed++;
	} else {
		passed++;
		pr_info("kdat_test: ok %s\n", c->name);
	}
}

/* ------------------------------------------------------------------ */
/* Device removal (mode=catastrophe)                                   */

static struct task_struct *cat_task;

static int catastrophe_thread(void *unused)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	struct kt_side x = {}, y = {};
	DAT_EP_HANDLE fep = NULL, fep2 = NULL, yep = NULL;
	DAT_EVD_HANDLE xevd = NULL;
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE ep;
	DAT_EVENT ev;
	DAT_LMR_TRIPLET t;
	DAT_PZ_HANDLE pz;
	DAT_SRQ_PARAM sp;

	cur_test = "ia_catastrophic_on_device_removal";
	CHECK(!side_open(&x, dev_ia, 4096), "open %s", dev_ia);
	CHECK_OK(dat_srq_create(x.ia, x.pz, &sa, &srq));
	CHECK_OK(dat_ep_create_with_srq(x.ia, x.pz, x.dto_evd, x.dto_evd,
					x.conn_evd, srq, &a, &ep));
	/*
	 * An EP of an IA on the surviving device whose connection EVD is
	 * the doomed IA's (a connection EVD may be of another IA).
	 */
	CHECK(strcmp(srv_ia, dev_ia), "srv_ia %s is the device removed",
	      srv_ia);
	CHECK(!side_open(&y, srv_ia, 4096), "open %s", srv_ia);
	/* an EVD of x that only that EP uses */
	CHECK_OK(dat_evd_kcreate(x.ia, 16, DAT_UPCALL_DISABLE, NULL,
				 DAT_EVD_CONNECTION_FLAG, &xevd));
	CHECK_OK(dat_ep_create(y.ia, y.pz, y.dto_evd, y.dto_evd, xevd, &a,
			       &fep));
	t = seg(&x, 0, 64);
	CHECK_OK(dat_srq_post_recv(srq, 1, &t, cookie(1)));
	pr_info("kdat_test: catastrophe: ready, remove %s now\n", dev_ia);
	/* the script deletes the device; wait for the consumer's event */
	while (dat_evd_dequeue(x.async_evd, &ev) != DAT_SUCCESS) {
		if (kthread_should_stop())
			goto out;
		usleep_range(10000, 20000);
	}
	CHECK(ev.event_number == DAT_ASYNC_ERROR_IA_CATASTROPHIC, "event %x",
	      ev.event_number);
	/* later calls fail cleanly, with the codes of their pages */
	/* its LMR went with the device: the segment is invalid */
	CHECK_RET(dat_srq_post_recv(srq, 1, &t, cookie(2)),
		  DAT_INVALID_PARAMETER);
	/* a valid post finds no room on the dead SRQ (never INVALID_STATE) */
	CHECK_RET(dat_srq_post_recv(srq, 0, NULL, cookie(3)),
		  DAT_INSUFFICIENT_RESOURCES);
	CHECK(dat_pz_create(x.ia, &pz) != DAT_SUCCESS, "create on a dead IA");
	CHECK_OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp));
	CHECK(sp.srq_state == DAT_SRQ_STATE_ERROR, "srq state %d",
	      sp.srq_state);
	CHECK_RET(dat_srq_resize(srq, 16), DAT_INVALID_STATE);
	CHECK_RET(dat_srq_set_lw(srq, 1), DAT_INVALID_STATE);
	/*
	 * The dead IA's EVD takes no new EP of the live IA; the one it has
	 * still keeps it from its consumer's free, and lives on itself.
	 */
	CHECK_EXACT(dat_ep_create(y.ia, y.pz, y.dto_evd, y.dto_evd, xevd,
				  &a, &fep2),
		    BAD_STATE(0));
	/* the live IA's own EVD still serves */
	CHECK_OK(dat_ep_create(y.ia, y.pz, y.dto_evd, y.dto_evd, y.conn_evd,
			       &a, &yep));
	CHECK_OK(dat_ep_free(yep));
	yep = NULL;
	CHECK_EXACT(dat_evd_free(xevd),
		    BAD_STATE(DAT_INVALID_STATE_EVD_IN_USE));
	CHECK(ep_state(fep) == DAT_EP_STATE_UNCONNECTED, "EP state %d",
	      ep_state(fep));
	/* and freeing works, in order: the EP, then the EVD it held */
	CHECK_OK(dat_ep_free(fep));
	fep = NULL;
	CHECK_OK(dat_evd_free(xevd));
	xevd = NULL;
	CHECK_OK(dat_ep_free(ep));
	CHECK_OK(dat_srq_free(srq));
	side_close(&x);
	side_close(&y);
	CHECK(kdat_live_objects() == 0, "leak: %ld", kdat_live_objects());
	passed++;
	pr_info("kdat_test: ok %s\n", cur_test);
	pr_info("kdat_test: %d passed, %d failed\n", passed, failed);
	while (!kthread_should_stop())
		msleep(20);
	return 0;
out:
	if (yep)
		dat_ep_free(yep);
	if (fep2)
		dat_ep_free(fep2);
	if (fep)
		dat_ep_free(fep);
	side_close(&x);
	side_close(&y);
	failed++;
	pr_info("kdat_test: %d passed, %d failed\n", passed, failed);
	while (!kthread_should_stop())
		msleep(20);
	return 0;
}

/* ------------------------------------------------------------------ */
/* A consumer that leaves its IAs open (mode=orphan)                           */

static struct pair orphan_pair;

static void orphan_upcall(DAT_PVOID data, const DAT_EVENT *ev, DAT_BOOLEAN more)
{
	pr_info("kdat_test: orphan: upcall 0x%x\n", ev->event_number);
}

/*
 * A third IA, opened from this module's init text (freed once the module
 * is live): kdat must still know it is this module's.
 */
static noinline int __init orphan_init_text_ia(void)
{
	DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL;
	DAT_IA_HANDLE ia;

	return dat_ia_open((const DAT_NAME_PTR)srv_ia, 16, &aevd, &ia) ?
	       -EIO : 0;
}

static int __init orphan_objects(void)
{
	DAT_UPCALL_OBJECT up = { .upcall_func = orphan_upcall };
	struct pair *p = &orphan_pair;
	DAT_LMR_TRIPLET t;

	cur_test = "orphan";
	CHECK(!pair_open(p, 2, 16), "setup");
	CHECK_OK(post_srq(p, 0, 64, 1));
	/* flushed when the client EP goes: an event for the upcall */
	t = seg(&p->c, 4096, 64);
	CHECK_OK(dat_ep_post_recv(p->cep[0], 1, &t, cookie(2),
				  DAT_COMPLETION_DEFAULT_FLAG));
	CHECK_OK(dat_evd_modify_upcall(p->c.dto_evd, DAT_UPCALL_MANY, &up));
	CHECK(!orphan_init_text_ia(), "IA opened from init text");
	pr_info("kdat_test: orphan: ready, %ld live objects left open\n",
		kdat_live_objects());
	return 0;
out:
	pair_close(p);
	return -EIO;
}

static int __init kdat_test_init(void)
{
	int i;

	if (!strcmp(mode, "orphan"))
		return orphan_objects();
	if (!strcmp(mode, "catastrophe")) {
		cat_task = kthread_run(catastrophe_thread, NULL, "kdat_cat");
		return PTR_ERR_OR_ZERO(cat_task);
	}
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (!*only || strstr(cases[i].name, only))
			run_case(&cases[i]);
	pr_info("kdat_test: %d passed, %d failed\n", passed, failed);
	return 0;
}

static void __exit kdat_test_exit(void)
{
	if (cat_task)
		kthread_stop(cat_task);
	/*
	 * mode=orphan: the buffers stay, as the objects do (freed here, they
	 * would still be DMA-mapped and posted until kdat closes the IAs,
	 * after this exit); leaked on purpose, so kmemleak is told.
	 */
	if (orphan_pair.s.buf)
		kmemleak_not_leak(orphan_pair.s.buf);
	if (orphan_pair.c.buf)
		kmemleak_not_leak(orphan_pair.c.buf);
}

module_init(kdat_test_init);
module_exit(kdat_test_exit);
MODULE_DESCRIPTION("kdat kernel-consumer tests for the DAT SRQ man pages");
MODULE_LICENSE("Dual BSD/GPL");
