// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kdat_bench: message rate through one Shared Receive Queue.
 *
 * neps client EPs on cli_ia stream size-byte sends to neps server EPs on
 * srv_ia that share one SRQ of depth buffers.  Both sides are driven by
 * upcalls, so no thread sits between a completion and the next work
 * request:
 *   - the server's DTO EVD upcall counts each receive and re-posts its
 *     buffer to the SRQ at once;
 *   - each client EP keeps up to window sends in flight; only every
 *     signal-th send (and an EP's last one) asks for an event, the others
 *     are posted with DAT_COMPLETION_SUPPRESS_FLAG, and the client's DTO
 *     EVD upcall refills that EP's window from the event it gets (an EP's
 *     sends complete in order, so one event retires all before it).
 * Time runs from the first send to the last receive (ktime), and the
 * result is one line in the kernel log:
 *   kdat_bench: eps=N size=S msgs=M usecs=T rate=R      (R in messages/s)
 * followed by "kdat_bench: detail: ..." with the settings used.  On
 * failure "kdat_bench: FAILED: why" replaces the result line.  The whole
 * run happens in module init; tests/bench/run-bench.sh drives it.
 *
 * micro=1 instead times single calls on the server IA, without traffic:
 * dat_srq_post_recv, dat_srq_query and an empty dat_evd_dequeue, and the
 * raw ib_post_srq_recv on an ib_srq of the same device for comparison,
 * and the primitives a post is built from (bench_micro_parts):
 *   kdat_bench: micro: ns per call, mean of 4096: dat_srq_post_recv=...
 *
 * peer=raw replaces kdat's server by the same loop on plain ib_core verbs
 * (raw_srv.h: rdma_cm, one ib_srq, an IB_POLL_WORKQUEUE CQ, ib_post_srq_recv
 * in the completion handler); the clients are kdat's EPs on cli_ia as in
 * every run, so the ratio of the two rates measures the server path.
 * active=N lets only N client EPs send at a time (each its share of iters
 * with its window); the next starts when one has sent its share: many
 * connections, few busy at once, the load an SRQ is for.
 * With rq=N the raw server gives each QP a receive queue of its own of N
 * buffers instead of the SRQ (the scale runs' per-EP comparison).  The
 * result line then names the peer: "kdat_bench: peer=raw eps=...".
 *
 * window and signal default to a choice that keeps the sends in flight
 * (neps x window) at most half the SRQ: a send whose message finds the
 * SRQ empty is refused with an RNR NAK and retried only after the RNR
 * timer, so running the SRQ dry would measure that timer, not kdat.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/completion.h>
#include <linux/atomic.h>
#include <rdma/ib_verbs.h>
#include <dat/kdat.h>
#include "kt_conn.h"
#include "raw_srv.h"

static char *srv_ia = "rxe0";
module_param(srv_ia, charp, 0444);
MODULE_PARM_DESC(srv_ia, "IA of the server EPs and the SRQ");
static char *cli_ia = "rxe1";
module_param(cli_ia, charp, 0444);
MODULE_PARM_DESC(cli_ia, "IA of the client EPs");
static char *srv_addr = "192.0.2.1";
module_param(srv_addr, charp, 0444);
MODULE_PARM_DESC(srv_addr, "IPv4 address of the server IA");
static int neps = 16;
module_param(neps, int, 0444);
MODULE_PARM_DESC(neps, "connections (1..4096)");
static int size = 64;
module_param(size, int, 0444);
MODULE_PARM_DESC(size, "message size in bytes (1..65536)");
static int iters = 20000;
module_param(iters, int, 0444);
MODULE_PARM_DESC(iters, "messages in all, spread evenly over the EPs");
static int depth = 1024;
module_param(depth, int, 0444);
MODULE_PARM_DESC(depth, "SRQ depth in receive buffers");
static int window;
module_param(window, int, 0444);
MODULE_PARM_DESC(window, "sends in flight per EP (0: depth / (2 x neps), 1..64)");
static int signal;
module_param(signal, int, 0444);
MODULE_PARM_DESC(signal, "ask for an event every signal-th send (0: window / 4)");
static int qual = 4800;
module_param(qual, int, 0444);
MODULE_PARM_DESC(qual, "connection qualifier of the server's PSP");
static bool micro;
module_param(micro, bool, 0444);
MODULE_PARM_DESC(micro, "measure the cost of single calls instead of the rate");
static char *peer = "kdat";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "server: kdat (an SRQ of kdat EPs) or raw (ib_core verbs)");
static int active;
module_param(active, int, 0444);
MODULE_PARM_DESC(active, "client EPs sending at a time (0: all); the next starts when one sent its share");
static int rq;
module_param(rq, int, 0444);
MODULE_PARM_DESC(rq, "peer=raw: per-QP receive queues of rq buffers instead of the SRQ");

#define BENCH_MAX_EPS		4096
#define BENCH_RUN_MS		300000	/* give up on the traffic after this */
#define BENCH_MICRO_N		4096	/* calls timed per micro measurement */
/*
 * Untimed calls before each timed run: under TCG the first run of any code
 * pays for its translation, which would land on whichever call is timed
 * first (the DAT post) and not on the raw verb timed after it.
 */
#define BENCH_MICRO_WARM	256
#define BENCH_MICRO_CALLS	(BENCH_MICRO_WARM + BENCH_MICRO_N)
/* the clock of one micro measurement starts when its warm-up ends */
#define BENCH_MICRO_TICK(i, t0)						\
	do {								\
		if ((i) == BENCH_MICRO_WARM)				\
			(t0) = ktime_get();				\
	} while (0)

/* A client EP's send window (under lock: upcall and init post). */
struct bench_win {
	spinlock_t lock;		/* window state: upcall vs. first fill */
	u32 quota;			/* messages this EP sends */
	u32 posted;			/* sends posted */
	u32 done;			/* sends known complete */
};

struct bench {
	struct kt_ctx kt;		/* why[]: the first failure */
	struct kt_side srv, cli;
	DAT_SRQ_HANDLE srq;
	DAT_PSP_HANDLE psp;
	DAT_EP_HANDLE *sep;		/* server EPs */
	DAT_EP_HANDLE *cep;		/* client EPs */
	struct bench_win *win;		/* their send windows */
	u32 total;
	atomic_t received;
	atomic_t errors;
	atomic_t next_ep;		/* active=N: the next EP to start */
	bool stopping;
	ktime_t t_end;
	struct completion done;
	bool raw;			/* peer=raw: the server is srv_raw */
	struct raw_srv rawsrv;
};

#define bench_fail(b, fmt, ...)	kt_fail(&(b)->kt, fmt, ##__VA_ARGS__)
#define BENCH_OK(b, call)	kt_check(&(b)->kt, (call), #call)

static DAT_DTO_COOKIE bench_cookie(u64 v)
{
	DAT_DTO_COOKIE c = { .as_64 = v };

	return c;
}

/* Stop the run early: the waiter wakes up and reports. */
static void bench_error(struct bench *b)
{
	if (atomic_inc_return(&b->errors) == 1)
		complete(&b->done);
}

/* ------------------------------------------------------------------ */
/* Data path                                                            */

static DAT_RETURN bench_post_buf(struct bench *b, u32 slot)
{
	DAT_LMR_TRIPLET t = {
		.lmr_context = b->srv.lmr_ctx,
		.virtual_address = (DAT_VADDR)(uintptr_t)b->srv.buf +
				   (size_t)slot * size,
		.segment_length = size,
	};

	return dat_srq_post_recv(b->srq, 1, &t, bench_cookie(slot));
}

/* A message arrived: count it and give its buffer straight back. */
static void bench_srv_upcall(DAT_PVOID ctx, const DAT_EVENT *ev,
			     DAT_BOOLEAN more)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *c =
		&ev->event_data.dto_completion_event_data;
	struct bench *b = ctx;

	if (ev->event_number != DAT_DTO_COMPLETION_EVENT ||
	    c->status != DAT_DTO_SUCCESS ||
	    c->transfered_length != (DAT_VLEN)size) {
		/* buffers an EP held are flushed when it goes away */
		if (!READ_ONCE(b->stopping))
			bench_error(b);
		return;
	}
	if (bench_post_buf(b, (u32)c->user_cookie.as_64) != DAT_SUCCESS)
		bench_error(b);
	if (atomic_inc_return(&b->received) == b->total) {
		b->t_end = ktime_get();
		complete(&b->done);
	}
}

/* peer=raw: the raw server's handler re-posted the buffer already. */
static void bench_raw_recv(void *ctx)
{
	struct bench *b = ctx;

	if (atomic_inc_return(&b->received) == b->total) {
		b->t_end = ktime_get();
		complete(&b->done);
	}
}

static void bench_raw_error(void *ctx)
{
	bench_error(ctx);
}

/*
 * Fill EP @i's window.  Called with its lock held, from init for the
 * first sends and from the client upcall afterwards.
 */
static void bench_pump(struct bench *b, u32 i)
{
	struct bench_win *e = &b->win[i];
	DAT_LMR_TRIPLET t = {
		.lmr_context = b->cli.lmr_ctx,
		.virtual_address = (DAT_VADDR)(uintptr_t)b->cli.buf,
		.segment_length = size,
	};
	DAT_COMPLETION_FLAGS flags;
	u32 seq;

	while (e->posted < e->quota && e->posted - e->done < window) {
		seq = e->posted;
		flags = seq % signal == signal - 1 || seq == e->quota - 1 ?
			DAT_COMPLETION_DEFAULT_FLAG :
			DAT_COMPLETION_SUPPRESS_FLAG;
		if (dat_ep_post_send(b->cep[i], 1, &t,
				     bench_cookie((u64)i << 32 | seq),
				     flags) != DAT_SUCCESS) {
			bench_error(b);
			return;
		}
		e->posted++;
	}
}

/* Start the next client EP that has not sent yet, if any. */
static void bench_start_next(struct bench *b)
{
	int i = atomic_inc_return(&b->next_ep) - 1;
	unsigned long flags;

	if (i >= neps)
		return;
	spin_lock_irqsave(&b->win[i].lock, flags);
	bench_pump(b, i);
	spin_unlock_irqrestore(&b->win[i].lock, flags);
}

/* A signalled send completed: it and every send before it are done. */
static void bench_cli_upcall(DAT_PVOID ctx, const DAT_EVENT *ev,
			     DAT_BOOLEAN more)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *c =
		&ev->event_data.dto_completion_event_data;
	struct bench *b = ctx;
	u32 i = c->user_cookie.as_64 >> 32;
	unsigned long flags;
	bool finished;

	if (ev->event_number != DAT_DTO_COMPLETION_EVENT ||
	    c->status != DAT_DTO_SUCCESS || i >= (u32)neps) {
		if (!READ_ONCE(b->stopping))
			bench_error(b);
		return;
	}
	spin_lock_irqsave(&b->win[i].lock, flags);
	b->win[i].done = (u32)c->user_cookie.as_64 + 1;
	bench_pump(b, i);
	finished = b->win[i].done == b->win[i].quota;
	spin_unlock_irqrestore(&b->win[i].lock, flags);
	/* active=N: this EP sent its share, the next one starts */
	if (finished && active)
		bench_start_next(b);
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                   */

static bool bench_side_open(struct bench *b, struct kt_side *s,
			    const char *name, size_t buf_len,
			    DAT_UPCALL_FUNC upcall, DAT_COUNT dto_qlen)
{
	DAT_UPCALL_OBJECT up = { .instance_data = b, .upcall_func = upcall };

	s->buf_len = buf_len;
	s->buf = kvzalloc(buf_len, GFP_KERNEL);
	if (!s->buf) {
		bench_fail(b, "%s: no memory for %zu bytes", name, buf_len);
		return false;
	}
	/* kvzalloc memory is from the linear map below KMALLOC_MAX_SIZE */
	if (is_vmalloc_addr(s->buf)) {
		bench_fail(b, "%s: %zu bytes are too many for one LMR", name,
			   buf_len);
		return false;
	}
	return !kt_side_open(&b->kt, s, name, &up, dto_qlen, 2 * neps + 16,
			     neps + 16, DAT_MEM_PRIV_LOCAL_READ_FLAG |
			     DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
}

/* peer=raw: the raw server listens where the PSP would; kdat clients. */
static bool bench_setup_raw(struct bench *b, const DAT_EP_ATTR *a)
{
	struct raw_srv *s = &b->rawsrv;
	int i;

	s->neps = neps;
	s->size = size;
	s->depth = depth;
	s->rq = rq;
	s->ctx = b;
	s->on_recv = bench_raw_recv;
	s->on_error = bench_raw_error;
	if (raw_srv_start(s, srv_addr, qual)) {
		bench_fail(b, "%s", s->why);
		return false;
	}
	for (i = 0; i < neps; i++)
		if (!BENCH_OK(b, dat_ep_create(b->cli.ia, b->cli.pz,
					       b->cli.dto_evd, b->cli.dto_evd,
					       b->cli.conn_evd, a, &b->cep[i])))
			return false;
	return true;
}

/* The clients connect KT_CONNECT_BATCH at a time; the server accepts. */
static int bench_connect_raw(struct bench *b)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int first, i, n, ret;

	sin.sin_addr.s_addr = in_aton(srv_addr);
	for (first = 0; first < neps; first += n) {
		n = min(neps - first, KT_CONNECT_BATCH);
		for (i = first; i < first + n; i++)
			if (!BENCH_OK(b, dat_ep_connect(b->cep[i],
					(DAT_IA_ADDRESS_PTR)&sin, qual,
					DAT_TIMEOUT_INFINITE, 0, NULL,
					DAT_QOS_BEST_EFFORT,
					DAT_CONNECT_DEFAULT_FLAG)))
				return -EIO;
		ret = kt_established(&b->kt, &b->cli, b->cep + first, n);
		if (ret) {
			if (b->rawsrv.why[0])
				bench_fail(b, "%s", b->rawsrv.why);
			return ret;
		}
	}
	return 0;
}

static bool bench_setup(struct bench *b)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = depth, .max_recv_iov = 1,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_message_size = size,
		.qos = DAT_QOS_BEST_EFFORT,
		.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
		.request_completion_flags = DAT_COMPLETION_SUPPRESS_FLAG,
		.max_recv_dtos = 1,
		.max_request_dtos = window + 1,
		.max_recv_iov = 1,
		.max_request_iov = 1,
	};
	int i;

	/*
	 * Every WR reaches a CQ: the client's holds up to neps x window send
	 * completions, the server's up to depth receive completions, plus a
	 * drain marker per EP at teardown.
	 */
	if (!bench_side_open(b, &b->cli, cli_ia, size, bench_cli_upcall,
			     neps * (window + 2) + 16))
		return false;
	for (i = 0; i < neps; i++) {
		spin_lock_init(&b->win[i].lock);
		b->win[i].quota = iters / neps + (i < iters % neps);
	}
	if (b->raw)
		return bench_setup_raw(b, &a);
	if (!bench_side_open(b, &b->srv, srv_ia, (size_t)depth * size,
			     bench_srv_upcall, depth + 2 * neps + 16))
		return false;
	if (!BENCH_OK(b, dat_srq_create(b->srv.ia, b->srv.pz, &sa, &b->srq)) ||
	    !BENCH_OK(b, dat_psp_create(b->srv.ia, qual, b->srv.cr_evd,
					DAT_PSP_CONSUMER_FLAG, &b->psp)))
		return false;
	return !kt_eps_create(&b->kt, &b->srv, b->srq, &b->cli, &a, b->sep,
			      b->cep, neps);
}

/*
 * An abrupt close frees everything an IA holds, consumers first (EPs,
 * CRs, PSPs, SRQs, LMRs, EVDs, PZs); the clients go first so the server
 * sees plain disconnects.
 */
static void bench_side_close(struct kt_side *s)
{
	if (s->ia)
		dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG);
	kvfree(s->buf);
}

/* ------------------------------------------------------------------ */
/* micro=1: what one call costs, next to the raw verb underneath        */

#define BENCH_NS_PER_CALL(t0)						\
	div_u64(ktime_to_ns(ktime_sub(ktime_get(), t0)), BENCH_MICRO_N)

/*
 * ib_post_srq_recv on an ib_srq of our own, on the same device: the
 * floor under dat_srq_post_recv.  Nothing is ever received into it.
 */
static u64 bench_raw_srq_post_ns(struct bench *b)
{
	struct ib_srq_init_attr init = {
		.attr = { .max_wr = BENCH_MICRO_CALLS, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {};
	struct ib_device *dev;
	struct ib_sge sge;
	struct ib_srq *srq;
	struct ib_pd *pd;
	u64 ns = 0;
	ktime_t t0 = 0;
	int i;

	dev = ib_device_get_by_name(srv_ia, RDMA_DRIVER_UNKNOWN);
	if (!dev)
		return 0;
	pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(pd))
		goto out_dev;
	srq = ib_create_srq(pd, &init);
	if (IS_ERR(srq))
		goto out_pd;
	sge.addr = (uintptr_t)b->srv.buf;
	sge.length = size;
	sge.lkey = pd->local_dma_lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		if (ib_post_srq_recv(srq, &wr, &bad))
			break;
	}
	if (i == BENCH_MICRO_CALLS)
		ns = BENCH_NS_PER_CALL(t0);
	ib_destroy_srq(srq);
out_pd:
	ib_dealloc_pd(pd);
out_dev:
	ib_device_put(dev);
	return ns;
}

/*
 * What the pieces of any exact post cost on this machine, for the floor
 * under the ratio: a spinlock taken with interrupts saved (an SRQ's count
 * lock; rxe's post takes one of its own), the two atomics of a use count
 * (take unless negative, drop unless negative), and a call into kdat that
 * returns at once (dat_strerror refusing NULL).  Under TCG these are far
 * from their hardware proportions: restoring the interrupt flag ends a
 * translation block, so one lock pair costs about half an rxe post.
 */
static void bench_micro_parts(u64 *lock, u64 *use, u64 *call)
{
	atomic_t count = ATOMIC_INIT(0);
	unsigned long flags;
	ktime_t t0 = 0;
	spinlock_t l;
	int i;

	spin_lock_init(&l);	/* a static lockdep class, not the stack's */

	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		spin_lock_irqsave(&l, flags);
		spin_unlock_irqrestore(&l, flags);
	}
	*lock = BENCH_NS_PER_CALL(t0);
	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		atomic_inc_unless_negative(&count);
		atomic_fetch_add_unless(&count, -1, -1);
	}
	*use = BENCH_NS_PER_CALL(t0);
	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		dat_strerror(DAT_SUCCESS, NULL, NULL);
	}
	*call = BENCH_NS_PER_CALL(t0);
}

static void bench_micro(struct bench *b)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = BENCH_MICRO_CALLS,
			    .max_recv_iov = 1,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	u64 post, post0, badlmr, query, dequeue, raw, lock, use, call;
	DAT_LMR_TRIPLET bad = { .segment_length = size };
	DAT_SRQ_HANDLE srq0;
	DAT_SRQ_PARAM p;
	DAT_EVENT ev;
	ktime_t t0 = 0;
	int i;

	if (!bench_side_open(b, &b->srv, srv_ia, (size_t)depth * size,
			     bench_srv_upcall, 64) ||
	    !BENCH_OK(b, dat_srq_create(b->srv.ia, b->srv.pz, &sa, &b->srq)))
		return;
	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		if (!BENCH_OK(b, bench_post_buf(b, i % depth)))
			return;
	}
	post = BENCH_NS_PER_CALL(t0);
	/*
	 * Where the cost goes: a post of no segment (handle check, counts
	 * lock, device post; no LMR lookup), on an SRQ of its own, and a post
	 * refused at its segment's LMR lookup (handle check and lookup only).
	 */
	if (!BENCH_OK(b, dat_srq_create(b->srv.ia, b->srv.pz, &sa, &srq0)))
		return;
	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		if (dat_srq_post_recv(srq0, 0, NULL, bench_cookie(i)) !=
		    DAT_SUCCESS)
			break;
	}
	post0 = i == BENCH_MICRO_CALLS ? BENCH_NS_PER_CALL(t0) : 0;
	bad.lmr_context = b->srv.lmr_ctx + 0x10000;
	bad.virtual_address = (DAT_VADDR)(uintptr_t)b->srv.buf;
	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		dat_srq_post_recv(b->srq, 1, &bad, bench_cookie(i));
	}
	badlmr = BENCH_NS_PER_CALL(t0);
	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		dat_srq_query(b->srq, DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT, &p);
	}
	query = BENCH_NS_PER_CALL(t0);
	for (i = 0; i < BENCH_MICRO_CALLS; i++) {
		BENCH_MICRO_TICK(i, t0);
		dat_evd_dequeue(b->srv.conn_evd, &ev);
	}
	dequeue = BENCH_NS_PER_CALL(t0);
	raw = bench_raw_srq_post_ns(b);
	bench_micro_parts(&lock, &use, &call);
	pr_info("kdat_bench: micro: ns per call, mean of %d: dat_srq_post_recv=%llu ib_post_srq_recv=%llu dat_srq_query=%llu dat_evd_dequeue(empty)=%llu post_0_segments=%llu post_bad_lmr=%llu lock_irqsave_pair=%llu use_count_pair=%llu kdat_call=%llu\n",
		BENCH_MICRO_N, post, raw, query, dequeue, post0, badlmr,
		lock, use, call);
}

/* ------------------------------------------------------------------ */

static bool bench_params_ok(struct bench *b)
{
	if (neps < 1 || neps > BENCH_MAX_EPS || size < 1 || size > 65536 ||
	    iters < neps || depth < 1 || rq < 0 || active < 0 || (rq && strcmp(peer, "raw")) ||
	    (strcmp(peer, "raw") && strcmp(peer, "kdat"))) {
		bench_fail(b, "bad parameters: see modinfo kdat_bench.ko");
		return false;
	}
	if (!window)
		window = clamp(depth / (2 * neps), 1, 64);
	if (!signal)
		signal = max(window / 4, 1);
	if (window < 1 || window > 64 || signal < 1 || signal > window) {
		bench_fail(b, "need 1 <= signal <= window <= 64");
		return false;
	}
	return true;
}

static void bench_run(struct bench *b)
{
	ktime_t t0, t_conn;
	s64 usecs;
	int i;

	t_conn = ktime_get();
	/* KT_CONNECT_BATCH at a time; private data = index */
	if (!bench_setup(b))
		return;
	if (b->raw ? bench_connect_raw(b) :
	    kt_connect(&b->kt, &b->srv, &b->cli, srv_addr, qual, b->sep,
		       b->cep, 0, neps, NULL))
		return;
	t_conn = ktime_sub(ktime_get(), t_conn);
	for (i = 0; !b->raw && i < depth; i++)
		if (!BENCH_OK(b, bench_post_buf(b, i)))
			return;

	t0 = ktime_get();
	atomic_set(&b->next_ep, active ? min(active, neps) : neps);
	for (i = 0; i < atomic_read(&b->next_ep) && i < neps; i++) {
		spin_lock_irq(&b->win[i].lock);
		bench_pump(b, i);
		spin_unlock_irq(&b->win[i].lock);
	}
	if (!wait_for_completion_timeout(&b->done,
					 msecs_to_jiffies(BENCH_RUN_MS))) {
		bench_fail(b, "only %d of %u messages arrived in %d s",
			   atomic_read(&b->received), b->total,
			   BENCH_RUN_MS / 1000);
		return;
	}
	if (atomic_read(&b->errors)) {
		bench_fail(b, "a work request failed after %d messages",
			   atomic_read(&b->received));
		return;
	}
	usecs = max_t(s64, ktime_us_delta(b->t_end, t0), 1);
	pr_info("kdat_bench: %s%seps=%d size=%d msgs=%u usecs=%lld rate=%llu\n",
		b->raw ? "peer=raw" : "", b->raw ? " " : "",
		neps, size, b->total, usecs,
		div64_u64((u64)b->total * USEC_PER_SEC, usecs));
	pr_info("kdat_bench: detail: depth=%d rq=%d window=%d signal=%d active=%d connect_ms=%lld\n",
		b->raw && rq ? 0 : depth, b->raw ? rq : 0, window, signal,
		active, ktime_to_ms(t_conn));
}

static int __init kdat_bench_init(void)
{
	struct bench *b;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->kt.name = "kdat_bench";
	b->raw = !strcmp(peer, "raw");
	init_completion(&b->done);
	if (bench_params_ok(b)) {
		b->total = iters;
		b->sep = kcalloc(neps, sizeof(*b->sep), GFP_KERNEL);
		b->cep = kcalloc(neps, sizeof(*b->cep), GFP_KERNEL);
		b->win = kcalloc(neps, sizeof(*b->win), GFP_KERNEL);
		if (!b->sep || !b->cep || !b->win)
			bench_fail(b, "out of memory");
		else if (micro)
			bench_micro(b);
		else
			bench_run(b);
	}
	WRITE_ONCE(b->stopping, true);
	bench_side_close(&b->cli);
	if (b->raw)
		raw_srv_stop(&b->rawsrv);
	bench_side_close(&b->srv);
	if (b->kt.why[0])
		pr_err("kdat_bench: FAILED: %s\n", b->kt.why);
	kfree(b->sep);
	kfree(b->cep);
	kfree(b->win);
	kfree(b);
	return 0;
}

static void __exit kdat_bench_exit(void)
{
}

module_init(kdat_bench_init);
module_exit(kdat_bench_exit);
MODULE_DESCRIPTION("kdat benchmark: message rate through one SRQ");
MODULE_LICENSE("Dual BSD/GPL");
