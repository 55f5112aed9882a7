// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kdat_demo: a kernel consumer of kdat that behaves like a small storage
 * target.  The server (the target) opens an IA on srv_ia and serves neps
 * client EPs, opened on cli_ia, through ONE Shared Receive Queue: whatever
 * EP a command arrives on, it lands in the next free SRQ buffer; the server
 * reaps it in an upcall, checks it and gives the buffer straight back.
 * With per-EP receive queues every EP would need its own queue of that depth.
 *
 * The run, in order:
 *   1. both sides open an IA, a PZ, EVDs and an LMR; the server creates the
 *      SRQ (depth buffers of size bytes, as many entries) and a PSP;
 *      neps EPs connect, each connection request
 *      carrying the client's index as private data;
 *   2. the server posts every buffer and arms the low watermark (lw);
 *   3. a burst arrives while the server's backend is stalled: buffers are
 *      taken and not given back, the SRQ drops below the watermark and the
 *      IA's async EVD reports it, once; the backend resumes, re-posts what
 *      it held and re-arms the watermark;
 *   4. the clients stream the rest of their msgs messages each, interleaved
 *      (message k of every EP before message k + 1 of any), with a second
 *      stalled burst half way;
 *   5. everything is disconnected and freed in dependency order and both
 *      IAs are closed gracefully, which they refuse while anything is left
 *      (scripts/guest/demo.sh then checks that kdat holds no object).
 * Progress and a summary go to the kernel log, every line prefixed
 * "kdat_demo:"; the last one is "kdat_demo: result: PASS" or
 * "kdat_demo: result: FAIL (why)".  scripts/guest/demo.sh runs it in the
 * test guest; the demo runs entirely inside module init.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/wait.h>
#include <linux/atomic.h>
#include <dat/kdat.h>
#include "kt_conn.h"

static char *srv_ia = "rxe0";
module_param(srv_ia, charp, 0444);
MODULE_PARM_DESC(srv_ia, "IA of the server (the SRQ owner)");
static char *cli_ia = "rxe1";
module_param(cli_ia, charp, 0444);
MODULE_PARM_DESC(cli_ia, "IA of the clients");
static char *srv_addr = "192.0.2.1";
module_param(srv_addr, charp, 0444);
MODULE_PARM_DESC(srv_addr, "IPv4 address of the server IA");
static int neps = 32;
module_param(neps, int, 0444);
MODULE_PARM_DESC(neps, "client EPs served by the one SRQ (1..1024)");
static int msgs = 50;
module_param(msgs, int, 0444);
MODULE_PARM_DESC(msgs, "messages each client sends (>= 1)");
static int depth = 64;
module_param(depth, int, 0444);
MODULE_PARM_DESC(depth, "SRQ depth in receive buffers (>= 2)");
static int lw = 16;
module_param(lw, int, 0444);
MODULE_PARM_DESC(lw, "SRQ low watermark (1..depth)");
static int size = 64;
module_param(size, int, 0444);
MODULE_PARM_DESC(size, "message and receive buffer size in bytes (12..4096)");
static int window = 1;
module_param(window, int, 0444);
MODULE_PARM_DESC(window, "sends in flight per client EP (1..64)");

#define DEMO_QUAL		4700	/* the PSP's connection qualifier */
#define DEMO_MAGIC		0x6b646174	/* "kdat" */
#define DEMO_MAX_EPS		1024
#define DEMO_WAIT_MS		10000	/* bound on every wait */
#define DEMO_MAX_SNAPS		8

/* The command a client sends; it lands in some SRQ buffer. */
struct demo_msg {
	u32 magic;
	u32 ep;				/* client index */
	u32 seq;			/* per-EP sequence number */
};

struct demo_snap {
	const char *when;
	DAT_SRQ_PARAM p;
};

struct demo {
	struct kt_ctx kt;		/* why[]: the first failure */
	struct kt_side srv, cli;
	DAT_EP_HANDLE *sep, *cep;	/* neps server and client EPs */
	DAT_SRQ_HANDLE srq;
	DAT_PSP_HANDLE psp;
	int connected;
	wait_queue_head_t wq;		/* progress of either upcall */

	/* server receive side, written by its upcall (one at a time) */
	u32 *got;			/* messages received per EP */
	u32 *next_seq;			/* sequence expected per EP */
	atomic_t received;
	atomic_t bad;			/* wrong EP, order, length or status */
	atomic_t flushed;		/* taken by an EP that went away */
	atomic_t repost_failed;
	bool stopping;

	/* the stalled backend: buffers held instead of re-posted */
	spinlock_t hold_lock;
	bool hold;
	u32 *held;			/* depth slots */
	u32 nheld;

	/* client send side */
	atomic_t *inflight;		/* per EP */
	atomic_t send_failed;

	/* the low watermark */
	int lw_events;
	bool lw_rearm;			/* fired in the stream: re-arm later */

	int closed;			/* IAs closed gracefully */
	struct demo_snap snap[DEMO_MAX_SNAPS];
	int nsnap;
};

static struct demo *the_demo;

#define demo_info(fmt, ...)	pr_info("kdat_demo: " fmt "\n", ##__VA_ARGS__)

#define demo_fail(d, fmt, ...)	kt_fail(&(d)->kt, fmt, ##__VA_ARGS__)

static bool demo_failed(struct demo *d)
{
	return d->kt.why[0] != '\0';
}

/* Check a DAT call; on failure record it and evaluate to false. */
#define DEMO_OK(d, call)	kt_check(&(d)->kt, (call), #call)

/* Wait (bounded) for @cond, polling; true if it became true. */
#define DEMO_WAIT_FOR(cond)						\
	({								\
		unsigned long __end = jiffies +				\
				      msecs_to_jiffies(DEMO_WAIT_MS);	\
		bool __ok;						\
		while (!(__ok = (cond)) && time_before(jiffies, __end))	\
			usleep_range(100, 500);				\
		__ok;							\
	})

static DAT_DTO_COOKIE demo_cookie(u64 v)
{
	DAT_DTO_COOKIE c = { .as_64 = v };

	return c;
}

static DAT_LMR_TRIPLET demo_seg(struct kt_side *s, size_t slot)
{
	DAT_LMR_TRIPLET t = {
		.lmr_context = s->lmr_ctx,
		.virtual_address = (DAT_VADDR)(uintptr_t)s->buf + slot * size,
		.segment_length = size,
	};

	return t;
}

static DAT_SRQ_PARAM demo_srq_query(struct demo *d)
{
	DAT_SRQ_PARAM p = {};

	if (!DEMO_OK(d, dat_srq_query(d->srq, DAT_SRQ_FIELD_ALL, &p)))
		p.max_recv_dtos = -1;
	return p;
}

/* Record and print the SRQ counts at one moment of the run. */
static void demo_snapshot(struct demo *d, const char *when)
{
	DAT_SRQ_PARAM p = demo_srq_query(d);

	demo_info("SRQ %-28s max_recv_dtos=%d available=%d outstanding=%d",
		  when, p.max_recv_dtos, p.available_dto_count,
		  p.outstanding_dto_count);
	if (d->nsnap < DEMO_MAX_SNAPS) {
		d->snap[d->nsnap].when = when;
		d->snap[d->nsnap].p = p;
		d->nsnap++;
	}
}

/* ------------------------------------------------------------------ */
/* The server: reap in an upcall, give the buffer back                  */

static DAT_RETURN demo_post_buf(struct demo *d, u32 slot)
{
	DAT_LMR_TRIPLET t = demo_seg(&d->srv, slot);

	return dat_srq_post_recv(d->srq, 1, &t, demo_cookie(slot));
}

/*
 * A command arrived in SRQ buffer @slot on whatever EP the completion
 * names.  Runs in process context, one call at a time for this EVD; it
 * may post and query but must not block.
 */
static void demo_srv_upcall(DAT_PVOID ctx, const DAT_EVENT *ev,
			    DAT_BOOLEAN more)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *c =
		&ev->event_data.dto_completion_event_data;
	struct demo *d = ctx;
	u64 slot = c->user_cookie.as_64;
	struct demo_msg *m;
	unsigned long flags;
	bool held = false;

	if (ev->event_number != DAT_DTO_COMPLETION_EVENT || slot >= (u64)depth) {
		atomic_inc(&d->bad);
		return;
	}
	if (c->status != DAT_DTO_SUCCESS) {
		/* an EP's in-progress buffer is flushed when it goes away */
		if (c->status == DAT_DTO_ERR_FLUSHED && READ_ONCE(d->stopping))
			atomic_inc(&d->flushed);
		else
			atomic_inc(&d->bad);
		return;
	}
	m = d->srv.buf + slot * size;
	if (m->magic != DEMO_MAGIC || m->ep >= (u32)neps ||
	    c->ep_handle != d->sep[m->ep] ||
	    m->seq != d->next_seq[m->ep] ||
	    c->transfered_length != (DAT_VLEN)size) {
		atomic_inc(&d->bad);
	} else {
		d->next_seq[m->ep]++;
		d->got[m->ep]++;
	}
	m->magic = 0;			/* a stale buffer must not pass again */

	spin_lock_irqsave(&d->hold_lock, flags);
	if (d->hold) {
		d->held[d->nheld++] = slot;
		held = true;
	}
	spin_unlock_irqrestore(&d->hold_lock, flags);
	if (!held && demo_post_buf(d, slot) != DAT_SUCCESS)
		atomic_inc(&d->repost_failed);
	/* fully ordered: the counts above are visible before this */
	atomic_inc_return(&d->received);
	wake_up(&d->wq);
}

/* The client's send completions: one more slot in that EP's window. */
static void demo_cli_upcall(DAT_PVOID ctx, const DAT_EVENT *ev,
			    DAT_BOOLEAN more)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *c =
		&ev->event_data.dto_completion_event_data;
	struct demo *d = ctx;
	u64 i = c->user_cookie.as_64;

	if (ev->event_number != DAT_DTO_COMPLETION_EVENT || i >= (u64)neps) {
		atomic_inc(&d->send_failed);
		return;
	}
	if (c->status != DAT_DTO_SUCCESS)
		atomic_inc(&d->send_failed);
	atomic_dec(&d->inflight[i]);
	wake_up(&d->wq);
}

/*
 * Look at the async EVDs.  A low-watermark event is counted and reported;
 * in the stream it is re-armed once the SRQ is back above the mark (set_lw
 * while below would fire again at once).  Anything else is a failure.
 */
static void demo_poll_async(struct demo *d)
{
	DAT_EVENT ev;
	DAT_SRQ_PARAM p;
	bool hold;

	while (dat_evd_dequeue(d->srv.async_evd, &ev) == DAT_SUCCESS) {
		if (ev.event_data.asynch_error_event_data.dat_handle != d->srq ||
		    ev.event_data.asynch_error_event_data.reason !=
		    DAT_SRQ_LOW_WATERMARK_EVENT) {
			demo_fail(d, "server async event 0x%x reason %d",
				  ev.event_number,
				  ev.event_data.asynch_error_event_data.reason);
			continue;
		}
		d->lw_events++;
		d->lw_rearm = true;
		p = demo_srq_query(d);
		demo_info("watermark event #%d: the SRQ fell below %d buffers (%d available now)",
			  d->lw_events, lw, p.available_dto_count);
	}
	while (dat_evd_dequeue(d->cli.async_evd, &ev) == DAT_SUCCESS)
		demo_fail(d, "client async event 0x%x", ev.event_number);

	spin_lock_irq(&d->hold_lock);
	hold = d->hold;
	spin_unlock_irq(&d->hold_lock);
	if (d->lw_rearm && !hold && demo_srq_query(d).available_dto_count >= lw) {
		d->lw_rearm = false;
		DEMO_OK(d, dat_srq_set_lw(d->srq, lw));
	}
}

/* Wait until @n messages in all have arrived, watching the async EVDs. */
static bool demo_wait_received(struct demo *d, u32 n)
{
	unsigned long end = jiffies + msecs_to_jiffies(DEMO_WAIT_MS);

	while (atomic_read(&d->received) < n) {
		demo_poll_async(d);
		if (time_after(jiffies, end)) {
			demo_fail(d, "only %d of %u messages arrived",
				  atomic_read(&d->received), n);
			return false;
		}
		wait_event_timeout(d->wq, atomic_read(&d->received) >= n,
				   msecs_to_jiffies(20));
	}
	smp_rmb();	/* pairs with atomic_inc_return in the upcall */
	return true;
}

/* ------------------------------------------------------------------ */
/* The clients                                                          */

/*
 * Send message @g of the interleaved order: message g / neps of client
 * g % neps.  Window slot seq % window of that client is free once fewer
 * than window sends are in flight (an EP's sends complete in order).
 */
static bool demo_send(struct demo *d, u32 g)
{
	u32 i = g % neps, seq = g / neps;
	size_t slot = (size_t)i * window + seq % window;
	struct demo_msg *m = d->cli.buf + slot * size;
	DAT_LMR_TRIPLET t = demo_seg(&d->cli, slot);

	if (!wait_event_timeout(d->wq, atomic_read(&d->inflight[i]) < window,
				msecs_to_jiffies(DEMO_WAIT_MS))) {
		demo_fail(d, "client %u: no send completed in %d ms", i,
			  DEMO_WAIT_MS);
		return false;
	}
	m->magic = DEMO_MAGIC;
	m->ep = i;
	m->seq = seq;
	atomic_inc(&d->inflight[i]);
	if (!DEMO_OK(d, dat_ep_post_send(d->cep[i], 1, &t, demo_cookie(i),
					 DAT_COMPLETION_DEFAULT_FLAG))) {
		atomic_dec(&d->inflight[i]);
		return false;
	}
	return true;
}

/* Send messages [@from, @to) of the interleaved order. */
static bool demo_send_range(struct demo *d, u32 from, u32 to)
{
	u32 g;

	for (g = from; g < to; g++) {
		if (!demo_send(d, g))
			return false;
		if (g % neps == neps - 1)
			demo_poll_async(d);
	}
	return true;
}

static void demo_set_hold(struct demo *d, bool hold)
{
	spin_lock_irq(&d->hold_lock);
	d->hold = hold;
	spin_unlock_irq(&d->hold_lock);
}

/*
 * Messages [@from, @from + @n) arrive while the backend is stalled; @n is
 * chosen so the SRQ drops below the watermark but never runs dry.
 */
static bool demo_burst(struct demo *d, u32 from, u32 n, const char *stalled,
		       const char *resumed)
{
	int events = d->lw_events;
	u32 i, nheld;

	/* start from a full SRQ: everything sent so far was re-posted */
	if (!demo_wait_received(d, from))
		return false;
	demo_set_hold(d, true);
	if (!demo_send_range(d, from, from + n) ||
	    !demo_wait_received(d, from + n))
		return false;
	demo_snapshot(d, stalled);
	if (!DEMO_WAIT_FOR((demo_poll_async(d), d->lw_events > events))) {
		demo_fail(d, "no watermark event in the burst at message %u",
			  from);
		return false;
	}
	msleep(20);
	demo_poll_async(d);
	if (d->lw_events != events + 1)
		demo_fail(d, "%d watermark events for one arming",
			  d->lw_events - events);

	/* the backend resumes: give every held buffer back, re-arm */
	spin_lock_irq(&d->hold_lock);
	d->hold = false;
	nheld = d->nheld;
	d->nheld = 0;
	spin_unlock_irq(&d->hold_lock);
	for (i = 0; i < nheld; i++)
		if (!DEMO_OK(d, demo_post_buf(d, d->held[i])))
			return false;
	d->lw_rearm = false;
	if (!DEMO_OK(d, dat_srq_set_lw(d->srq, lw)))
		return false;
	demo_info("backend resumed: %u held buffers re-posted, watermark re-armed at %d",
		  nheld, lw);
	demo_snapshot(d, resumed);
	return true;
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */

static bool demo_side_open(struct demo *d, struct kt_side *s,
			   const char *name, size_t buf_len,
			   DAT_UPCALL_FUNC upcall, DAT_COUNT dto_qlen)
{
	DAT_UPCALL_OBJECT up = { .instance_data = d, .upcall_func = upcall };

	s->buf_len = buf_len;
	s->buf = kzalloc(buf_len, GFP_KERNEL);
	if (!s->buf) {
		demo_fail(d, "%s: out of memory", name);
		return false;
	}
	return !kt_side_open(&d->kt, s, name, &up, dto_qlen, 2 * neps + 16,
			     neps + 16, DAT_MEM_PRIV_LOCAL_READ_FLAG |
			     DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
}

static DAT_EP_ATTR demo_ep_attr(void)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_message_size = size,
		.qos = DAT_QOS_BEST_EFFORT,
		.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
		.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
		.max_recv_dtos = 1,	/* a client receives nothing */
		.max_request_dtos = window + 1,
		.max_recv_iov = 1,
		.max_request_iov = 1,
	};

	return a;
}

static bool demo_setup(struct demo *d)
{
	/* an upcall may re-post its own buffer: depth entries are enough */
	DAT_SRQ_ATTR sa = { .max_recv_dtos = depth, .max_recv_iov = 1,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	DAT_EP_ATTR a = demo_ep_attr();

	/*
	 * Every SRQ completion of every EP goes to the server's one DTO EVD:
	 * at most depth receive completions plus an SQ drain marker per EP.
	 */
	if (!demo_side_open(d, &d->srv, srv_ia, (size_t)depth * size,
			    demo_srv_upcall, depth + neps + 16) ||
	    !demo_side_open(d, &d->cli, cli_ia, (size_t)neps * window * size,
			    demo_cli_upcall, neps * (window + 2) + 16))
		return false;
	if (!DEMO_OK(d, dat_srq_create(d->srv.ia, d->srv.pz, &sa, &d->srq)) ||
	    !DEMO_OK(d, dat_psp_create(d->srv.ia, DEMO_QUAL, d->srv.cr_evd,
				       DAT_PSP_CONSUMER_FLAG, &d->psp)))
		return false;
	return !kt_eps_create(&d->kt, &d->srv, d->srq, &d->cli, &a, d->sep,
			      d->cep, neps);
}

/*
 * Connect every client, KT_CONNECT_BATCH requests at a time: the clients
 * connect, the server accepts each request on the server EP whose index
 * the request carries, and both sides see ESTABLISHED.
 */
static bool demo_connect(struct demo *d)
{
	return !kt_connect(&d->kt, &d->srv, &d->cli, srv_addr, DEMO_QUAL,
			   d->sep, d->cep, 0, neps, &d->connected);
}

/* ------------------------------------------------------------------ */
/* Teardown                                                             */

static void demo_free(struct demo *d, DAT_HANDLE *h,
		      DAT_RETURN (*fn)(DAT_HANDLE), const char *what)
{
	DAT_RETURN r;

	if (!*h)
		return;
	r = fn(*h);
	if (r != DAT_SUCCESS)
		demo_fail(d, "freeing %s: 0x%x", what, r);
	*h = DAT_HANDLE_NULL;
}

/*
 * Free what one side opened, consumers before what they use: EPs, the
 * SRQ and PSP (server), the LMR, the EVDs, the PZ, then close the IA,
 * gracefully: that refuses if anything was left behind.
 */
static void demo_side_close(struct demo *d, struct kt_side *s,
			    DAT_EP_HANDLE *ep)
{
	int i;

	for (i = 0; ep && i < neps; i++)
		demo_free(d, &ep[i], dat_ep_free, "an EP");
	if (s == &d->srv) {
		demo_free(d, &d->srq, dat_srq_free, "the SRQ");
		demo_free(d, &d->psp, dat_psp_free, "the PSP");
	}
	demo_free(d, &s->lmr, dat_lmr_free, "the LMR");
	demo_free(d, &s->dto_evd, dat_evd_free, "the DTO EVD");
	demo_free(d, &s->conn_evd, dat_evd_free, "the connection EVD");
	demo_free(d, &s->cr_evd, dat_evd_free, "the CR EVD");
	demo_free(d, &s->pz, dat_pz_free, "the PZ");
	if (!s->ia)
		return;
	if (DEMO_OK(d, dat_ia_close(s->ia, DAT_CLOSE_GRACEFUL_FLAG)))
		d->closed++;
	else
		dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG);
	s->ia = DAT_HANDLE_NULL;
}

/* Count connection events of @num on @s's connection EVD. */
static int demo_count_events(struct kt_side *s, DAT_EVENT_NUMBER num,
			     int want)
{
	DAT_EVENT ev;
	int n = 0;

	while (n < want && kt_next_event(s->conn_evd, &ev))
		if (ev.event_number == num)
			n++;
	return n;
}

static void demo_teardown(struct demo *d)
{
	int i, n;

	WRITE_ONCE(d->stopping, true);
	if (d->connected) {
		/* the clients hang up; both sides see DISCONNECTED */
		for (i = 0; i < neps; i++)
			dat_ep_disconnect(d->cep[i], DAT_CLOSE_GRACEFUL_FLAG);
		n = demo_count_events(&d->cli, DAT_CONNECTION_EVENT_DISCONNECTED,
				      d->connected);
		if (n != d->connected)
			demo_fail(d, "clients saw %d of %d disconnects", n,
				  d->connected);
		n = demo_count_events(&d->srv, DAT_CONNECTION_EVENT_DISCONNECTED,
				      d->connected);
		if (n != d->connected)
			demo_fail(d, "server saw %d of %d disconnects", n,
				  d->connected);
		demo_info("disconnected %d connections", d->connected);
		demo_snapshot(d, "after disconnect");
	}
	demo_side_close(d, &d->cli, d->cep);
	demo_side_close(d, &d->srv, d->sep);
}

/* ------------------------------------------------------------------ */
/* The run                                                              */

static bool demo_params_ok(struct demo *d)
{
	if (neps < 1 || neps > DEMO_MAX_EPS || msgs < 1 || msgs > 1000000 ||
	    depth < 2 || size < (int)sizeof(struct demo_msg) ||
	    size > 4096 || window < 1 || window > 64 || lw < 1 ||
	    lw > depth) {
		demo_fail(d, "bad parameters: see modinfo kdat_demo.ko");
		return false;
	}
	if (neps * window > depth)
		demo_info("note: %d sends in flight may exceed the %d SRQ buffers (the clients then wait for RNR retries)",
			  neps * window, depth);
	return true;
}

static void demo_traffic(struct demo *d)
{
	u32 total = (u32)neps * msgs;
	/* leaves lw / 2 buffers: below the watermark, never empty */
	u32 burst = min_t(u32, depth - lw / 2, total);
	u32 mid = max(burst, total / 2);
	ktime_t t0 = ktime_get();
	int i;

	for (i = 0; i < depth; i++)
		if (!DEMO_OK(d, demo_post_buf(d, i)))
			return;
	demo_snapshot(d, "after the initial post");
	if (!DEMO_OK(d, dat_srq_set_lw(d->srq, lw)))
		return;
	demo_info("low watermark armed at %d of %d buffers", lw, depth);

	demo_info("burst 1: %u messages while the backend is stalled", burst);
	if (!demo_burst(d, 0, burst, "in burst 1 (backend stalled)",
			"after burst 1"))
		return;
	demo_info("streaming messages %u..%u, buffers re-posted in the upcall",
		  burst, mid - 1);
	if (!demo_send_range(d, burst, mid))
		return;
	demo_snapshot(d, "mid-stream (live)");
	if (total - mid >= burst) {
		demo_info("burst 2: %u messages while the backend is stalled",
			  burst);
		if (!demo_burst(d, mid, burst, "in burst 2 (backend stalled)",
				"after burst 2"))
			return;
		mid += burst;
	}
	if (mid < total)
		demo_info("streaming messages %u..%u", mid, total - 1);
	if (!demo_send_range(d, mid, total) || !demo_wait_received(d, total))
		return;
	/* every send completed: the window is empty on every EP */
	for (i = 0; i < neps; i++)
		if (!wait_event_timeout(d->wq, !atomic_read(&d->inflight[i]),
					msecs_to_jiffies(DEMO_WAIT_MS)))
			demo_fail(d, "client %d: a send never completed", i);
	demo_poll_async(d);
	demo_info("traffic done: %u messages in %lld ms", total,
		  ktime_ms_delta(ktime_get(), t0));
	demo_snapshot(d, "all received");
}

static void demo_summary(struct demo *d)
{
	u32 total = (u32)neps * msgs, lo = U32_MAX, hi = 0, sum = 0;
	u64 srq_bytes = (u64)depth * size;
	u64 rq_bytes = (u64)neps * depth * size;
	u64 tenths = div64_u64(rq_bytes * 10, srq_bytes);
	int i;

	for (i = 0; d->got && i < neps; i++) {
		lo = min(lo, d->got[i]);
		hi = max(hi, d->got[i]);
		sum += d->got[i];
	}
	if (lo > hi)
		lo = 0;
	if (!demo_failed(d) && sum != total)
		demo_fail(d, "%u of %u messages received", sum, total);
	if (!demo_failed(d) && (atomic_read(&d->bad) ||
				atomic_read(&d->send_failed) ||
				atomic_read(&d->repost_failed)))
		demo_fail(d, "bad receives %d, failed sends %d, failed re-posts %d",
			  atomic_read(&d->bad), atomic_read(&d->send_failed),
			  atomic_read(&d->repost_failed));

	demo_info("================================ summary ================================");
	demo_info("server %s (%s), clients on %s, one SRQ: %d buffers of %d bytes in %d entries",
		  srv_ia, srv_addr, cli_ia, depth, size, depth);
	demo_info("connections established   %d of %d", d->connected, neps);
	demo_info("messages received         %u of %u (per EP: min %u, max %u; each EP in order)",
		  sum, total, lo, hi);
	demo_info("bad receives / sends      %d / %d (flushed at disconnect: %d)",
		  atomic_read(&d->bad), atomic_read(&d->send_failed),
		  atomic_read(&d->flushed));
	demo_info("watermark events          %d (low watermark %d, one event per arming)",
		  d->lw_events, lw);
	demo_info("SRQ counts (dat_srq_query)      max_recv_dtos  available  outstanding");
	for (i = 0; i < d->nsnap; i++)
		demo_info("  %-30s %13d %10d %12d", d->snap[i].when,
			  d->snap[i].p.max_recv_dtos,
			  d->snap[i].p.available_dto_count,
			  d->snap[i].p.outstanding_dto_count);
	demo_info("buffer reuse              %u messages through %d buffers (%u.%u uses each)",
		  sum, depth, sum / depth, sum % depth * 10 / depth);
	demo_info("receive memory, SRQ       %d x %d B = %llu B, shared by %d EPs",
		  depth, size, srq_bytes, neps);
	demo_info("per-EP queues, same depth %d x %d x %d B = %llu B (%llu.%llux the SRQ)",
		  neps, depth, size, rq_bytes, div_u64(tenths, 10),
		  tenths % 10);
	demo_info("IAs closed gracefully     %d of 2 (refused if any object was left)",
		  d->closed);
	if (demo_failed(d))
		demo_info("result: FAIL (%s)", d->kt.why);
	else
		demo_info("result: PASS");
}

static void demo_free_state(struct demo *d)
{
	kfree(d->srv.buf);
	kfree(d->cli.buf);
	kfree(d->sep);
	kfree(d->cep);
	kfree(d->got);
	kfree(d->next_seq);
	kfree(d->held);
	kfree(d->inflight);
	kfree(d);
}

static int __init kdat_demo_init(void)
{
	struct demo *d;
	ktime_t t0;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	the_demo = d;
	d->kt.name = "kdat_demo";
	d->kt.log = true;
	init_waitqueue_head(&d->wq);
	spin_lock_init(&d->hold_lock);
	if (!demo_params_ok(d))
		goto out;
	d->sep = kcalloc(neps, sizeof(*d->sep), GFP_KERNEL);
	d->cep = kcalloc(neps, sizeof(*d->cep), GFP_KERNEL);
	d->got = kcalloc(neps, sizeof(*d->got), GFP_KERNEL);
	d->next_seq = kcalloc(neps, sizeof(*d->next_seq), GFP_KERNEL);
	d->inflight = kcalloc(neps, sizeof(*d->inflight), GFP_KERNEL);
	d->held = kcalloc(depth, sizeof(*d->held), GFP_KERNEL);
	if (!d->sep || !d->cep || !d->got || !d->next_seq || !d->inflight ||
	    !d->held) {
		demo_fail(d, "out of memory");
		goto out;
	}

	demo_info("storage-target demo: server %s (%s) with one SRQ of %d buffers, %d client EPs on %s x %d messages of %d bytes",
		  srv_ia, srv_addr, depth, neps, cli_ia, msgs, size);
	t0 = ktime_get();
	if (demo_setup(d) && demo_connect(d)) {
		demo_info("%d connections established in %lld ms",
			  d->connected, ktime_ms_delta(ktime_get(), t0));
		demo_traffic(d);
	}
	demo_teardown(d);
out:
	demo_summary(d);
	return 0;
}

static void __exit kdat_demo_exit(void)
{
	demo_free_state(the_demo);
}

module_init(kdat_demo_init);
module_exit(kdat_demo_exit);
MODULE_DESCRIPTION("kdat demo: a storage-target-like server, one SRQ for many EPs");
MODULE_LICENSE("Dual BSD/GPL");
