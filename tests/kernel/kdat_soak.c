// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kdat_soak: a fixed budget of messages (messages=, 1M by default, 20K on
 * a KASAN kernel) from eps= client EPs (128) to as many server EPs sharing
 * one SRQ, while pairs are disconnected (abruptly or gracefully, from
 * either side) and reconnected at random (seed=, printed; 0 draws one).
 *
 * Checked, each as a case:
 *   every SRQ buffer completes exactly once (success or flushed), and
 *     the ones that never completed are exactly those still on the SRQ;
 *   every send completes exactly once;
 *   no message is delivered twice, and every acknowledged one was
 *     delivered;
 *   dat_srq_query's available and outstanding counts are back at their
 *     start once the traffic stopped;
 *   no kdat object is left once both IAs are closed.
 *
 * Loading the module runs it and prints "kdat_soak: ok CASE" or
 * "kdat_soak: not ok CASE: why" per case, then "kdat_soak: N passed, M
 * failed" (tests/guest/kernel-tests.sh).  Its run time is printed; no
 * timing decides a case.  Waits are bounded only so a hang fails instead
 * of hanging: a loop that makes no progress for KT_WAIT_MS fails.
 */
#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kt_conn.h"
#include "../../kernel/kdat_hooks.h"

static char *srv_ia = "rxe0", *cli_ia = "rxe1", *srv_addr = "192.0.2.1";
static ulong messages;		/* 0: 1M, 20K on a KASAN kernel */
static int eps = 128;
static uint seed;		/* 0: draw one */
module_param(srv_ia, charp, 0444);
module_param(cli_ia, charp, 0444);
module_param(srv_addr, charp, 0444);
module_param(messages, ulong, 0444);
MODULE_PARM_DESC(messages, "messages to deliver (0: 1000000, 20000 with KASAN)");
module_param(eps, int, 0444);
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "seed of the disconnect schedule (0: random)");

#define SOAK_DEPTH	512	/* the SRQ */
#define SOAK_WINDOW	2	/* sends in flight per client EP */
#define SOAK_SIZE	64	/* bytes per message and buffer */
#define SOAK_CYCLE_ONE_IN 1000	/* a received message starts a cycle */
#define SOAK_QUAL	7411

/* The cases, in the order they are reported (counted by the guest script). */
#define CASE(x) #x
static const char *const cases[] = {
	CASE(srq_buffers_complete_exactly_once),
	CASE(sends_complete_exactly_once),
	CASE(messages_delivered_at_most_once_and_acked_ones_delivered),
	CASE(srq_counts_return_to_their_start),
	CASE(no_live_objects_left),
};

enum { C_BUFS, C_SENDS, C_MSGS, C_COUNTS, C_LIVE, C_N };

enum pair_state { P_UP, P_DOWN, P_CONNECTING };

struct soak {
	struct kt_ctx kt;
	struct kt_side srv, cli;
	DAT_SRQ_HANDLE srq;
	DAT_PSP_HANDLE psp;
	DAT_EP_HANDLE *sep, *cep;
	enum pair_state *state;
	u8 *busy;			/* per client slot: send in flight */
	bool *srv_gone, *cli_gone;	/* DISCONNECTED seen on that side */
	bool *posted;			/* per SRQ buffer */
	unsigned long *delivered, *acked;	/* per message id */
	u64 nids, next_id;
	u64 n_delivered, n_acked, n_sflushed, n_rflushed;
	u64 buf_posts, buf_completions, send_posts, send_completions;
	u64 backlog;			/* acked, delivery not yet handled */
	u64 cycles;
	int cycling;			/* the pair being cycled, or -1 */
	struct rnd_state rnd;
	char why[C_N][128];
};

static __printf(3, 4) void soak_fail(struct soak *s, int c, const char *fmt,
				     ...)
{
	va_list ap;

	if (s->why[c][0])
		return;
	va_start(ap, fmt);
	vsnprintf(s->why[c], sizeof(s->why[c]), fmt, ap);
	va_end(ap);
}

static int soak_ep_index(DAT_EP_HANDLE *v, DAT_EP_HANDLE ep)
{
	int i;

	for (i = 0; i < eps; i++)
		if (v[i] == ep)
			return i;
	return -1;
}

static DAT_RETURN soak_post_buf(struct soak *s, int b)
{
	DAT_LMR_TRIPLET t = {
		.lmr_context = s->srv.lmr_ctx,
		.virtual_address = (uintptr_t)s->srv.buf + b * SOAK_SIZE,
		.segment_length = SOAK_SIZE,
	};
	DAT_DTO_COOKIE c = { .as_64 = b };
	DAT_RETURN r;

	r = dat_srq_post_recv(s->srq, 1, &t, c);
	if (r == DAT_SUCCESS) {
		s->posted[b] = true;
		s->buf_posts++;
	}
	return r;
}

/*
 * Flow control, as any SRQ consumer needs: a message may be sent only
 * while every buffer it could take is on the SRQ.  Buffers not on it are
 * at most the sends in flight plus the acknowledged messages whose
 * delivery this thread has not handled (and re-posted) yet; the margin is
 * for the few sends a disconnect flushes after they were delivered.
 * Without it, on a slow kernel, the receiver fell behind, the SRQ ran dry,
 * and 256 sends retrying RNR every 0.64 ms starved the re-posting thread.
 */
static bool soak_credit(struct soak *s)
{
	return s->send_posts - s->send_completions + s->backlog <
	       SOAK_DEPTH - 4 * SOAK_WINDOW;
}

/* Fill the free slots of an established client EP, within the budget. */
static bool soak_pump(struct soak *s, int i)
{
	DAT_LMR_TRIPLET t;
	DAT_DTO_COOKIE c;
	int k;

	/* the budget: no new send once it was delivered */
	for (k = 0; k < SOAK_WINDOW && s->next_id < s->nids &&
		    s->n_delivered < messages && soak_credit(s); k++) {
		int slot = i * SOAK_WINDOW + k;
		u64 *msg = s->cli.buf + slot * SOAK_SIZE;

		if (s->busy[slot])
			continue;
		*msg = s->next_id;
		t.lmr_context = s->cli.lmr_ctx;
		t.virtual_address = (uintptr_t)msg;
		t.segment_length = SOAK_SIZE;
		c.as_64 = slot;
		if (!KT_OK(&s->kt, dat_ep_post_send(s->cep[i], 1, &t, c,
						    DAT_COMPLETION_DEFAULT_FLAG)))
			return false;
		s->busy[slot] = 1;
		s->next_id++;
		s->send_posts++;
	}
	return true;
}

static bool soak_recv_event(struct soak *s, const DAT_EVENT *ev)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d =
		&ev->event_data.dto_completion_event_data;
	u64 b = d->user_cookie.as_64, id;

	if (ev->event_number != DAT_DTO_COMPLETION_EVENT || b >= SOAK_DEPTH) {
		soak_fail(s, C_BUFS, "server event 0x%x cookie %llu",
			  ev->event_number, b);
		return false;
	}
	if (!s->posted[b]) {
		soak_fail(s, C_BUFS, "buffer %llu completed twice", b);
		return false;
	}
	s->posted[b] = false;
	s->buf_completions++;
	if (d->status == DAT_DTO_SUCCESS) {
		id = *(u64 *)(s->srv.buf + b * SOAK_SIZE);
		if (id >= s->nids || test_and_set_bit(id, s->delivered)) {
			soak_fail(s, C_MSGS, "message %llu delivered twice", id);
			return false;
		}
		s->n_delivered++;
		if (test_bit(id, s->acked))
			s->backlog--;
		if (s->cycling < 0 && s->n_delivered < messages &&
		    prandom_u32_state(&s->rnd) % SOAK_CYCLE_ONE_IN == 0)
			s->cycling = prandom_u32_state(&s->rnd) % eps;
	} else if (d->status == DAT_DTO_ERR_FLUSHED) {
		s->n_rflushed++;
	} else {
		soak_fail(s, C_BUFS, "buffer %llu status %d", b, d->status);
		return false;
	}
	return KT_OK(&s->kt, soak_post_buf(s, b));
}

static bool soak_send_event(struct soak *s, const DAT_EVENT *ev)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d =
		&ev->event_data.dto_completion_event_data;
	u64 slot = d->user_cookie.as_64;
	int i = slot / SOAK_WINDOW;

	if (ev->event_number != DAT_DTO_COMPLETION_EVENT ||
	    slot >= (u64)eps * SOAK_WINDOW || d->ep_handle != s->cep[i]) {
		soak_fail(s, C_SENDS, "client event 0x%x cookie %llu",
			  ev->event_number, slot);
		return false;
	}
	if (!s->busy[slot]) {
		soak_fail(s, C_SENDS, "send of slot %llu completed twice", slot);
		return false;
	}
	s->busy[slot] = 0;
	s->send_completions++;
	if (d->status == DAT_DTO_SUCCESS) {
		u64 id = *(u64 *)(s->cli.buf + slot * SOAK_SIZE);

		set_bit(id, s->acked);
		s->n_acked++;
		if (!test_bit(id, s->delivered))
			s->backlog++;
		return true;
	}
	if (s->state[i] == P_UP && s->cycling != i) {
		soak_fail(s, C_SENDS, "send on a connected EP: status %d",
			  d->status);
		return false;
	}
	s->n_sflushed++;
	return true;
}

static bool soak_conn_event(struct soak *s, const DAT_EVENT *ev, bool server)
{
	DAT_EP_HANDLE ep = ev->event_data.connect_event_data.ep_handle;
	int i = soak_ep_index(server ? s->sep : s->cep, ep);

	if (i < 0) {
		kt_fail(&s->kt, "connection event 0x%x for no EP",
			ev->event_number);
		return false;
	}
	switch (ev->event_number) {
	case DAT_CONNECTION_EVENT_DISCONNECTED:
		if (server)
			s->srv_gone[i] = true;
		else
			s->cli_gone[i] = true;
		return true;
	case DAT_CONNECTION_EVENT_ESTABLISHED:
		if (s->state[i] != P_CONNECTING)
			break;
		if (server)
			s->srv_gone[i] = false;
		else
			s->cli_gone[i] = false;
		if (!s->srv_gone[i] && !s->cli_gone[i]) {
			s->state[i] = P_UP;
			s->cycling = -1;
			s->cycles++;
		}
		return true;
	default:
		break;
	}
	kt_fail(&s->kt, "%s EP %d: connection event 0x%x",
		server ? "server" : "client", i, ev->event_number);
	return false;
}

/*
 * Drive the cycle of the pair s->cycling: disconnect it, once both sides
 * saw DISCONNECTED and its sends completed reset both EPs and connect
 * again.  The ESTABLISHED events end it (soak_conn_event).
 */
static bool soak_cycle(struct soak *s)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int i = s->cycling, k;
	u32 r, tag = i;

	if (i < 0)
		return true;
	if (s->state[i] == P_UP) {
		r = prandom_u32_state(&s->rnd);
		s->state[i] = P_DOWN;
		s->srv_gone[i] = s->cli_gone[i] = false;
		return KT_OK(&s->kt, dat_ep_disconnect(r & 1 ? s->sep[i] :
						       s->cep[i],
						       r & 2 ? DAT_CLOSE_ABRUPT_FLAG :
						       DAT_CLOSE_GRACEFUL_FLAG));
	}
	if (s->state[i] != P_DOWN || !s->srv_gone[i] || !s->cli_gone[i])
		return true;
	for (k = 0; k < SOAK_WINDOW; k++)
		if (s->busy[i * SOAK_WINDOW + k])
			return true;
	if (!KT_OK(&s->kt, dat_ep_reset(s->sep[i])) ||
	    !KT_OK(&s->kt, dat_ep_reset(s->cep[i])))
		return false;
	sin.sin_addr.s_addr = in_aton(srv_addr);
	s->state[i] = P_CONNECTING;
	return KT_OK(&s->kt, dat_ep_connect(s->cep[i],
					    (DAT_IA_ADDRESS_PTR)&sin,
					    SOAK_QUAL, DAT_TIMEOUT_INFINITE,
					    sizeof(tag), &tag,
					    DAT_QOS_BEST_EFFORT,
					    DAT_CONNECT_DEFAULT_FLAG));
}

static bool soak_cr_event(struct soak *s, const DAT_EVENT *ev)
{
	DAT_CR_HANDLE cr = ev->event_data.cr_arrival_event_data.cr_handle;
	DAT_CR_PARAM crp;
	u32 i;

	if (ev->event_number != DAT_CONNECTION_REQUEST_EVENT ||
	    !KT_OK(&s->kt, dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp)) ||
	    crp.private_data_size != sizeof(i)) {
		kt_fail(&s->kt, "unexpected connection request 0x%x",
			ev->event_number);
		return false;
	}
	memcpy(&i, crp.private_data, sizeof(i));
	if (i >= (u32)eps || s->state[i] != P_CONNECTING) {
		kt_fail(&s->kt, "request from client %u", i);
		return false;
	}
	return KT_OK(&s->kt, dat_cr_accept(cr, s->sep[i], 0, NULL));
}

/*
 * One pass over every EVD; the number of events handled, or -1 on a
 * failure.
 */
static int soak_poll(struct soak *s, bool pump)
{
	DAT_EVENT ev;
	int n = 0, i;

	while (dat_evd_dequeue(s->srv.dto_evd, &ev) == DAT_SUCCESS) {
		if (!soak_recv_event(s, &ev))
			return -1;
		if (++n % 64 == 0)
			break;
	}
	while (dat_evd_dequeue(s->cli.dto_evd, &ev) == DAT_SUCCESS) {
		if (!soak_send_event(s, &ev))
			return -1;
		i = ev.event_data.dto_completion_event_data.user_cookie.as_64 /
		    SOAK_WINDOW;
		if (pump && s->state[i] == P_UP && s->cycling != i &&
		    !soak_pump(s, i))
			return -1;
		n++;
	}
	while (dat_evd_dequeue(s->srv.conn_evd, &ev) == DAT_SUCCESS) {
		if (!soak_conn_event(s, &ev, true))
			return -1;
		n++;
	}
	while (dat_evd_dequeue(s->cli.conn_evd, &ev) == DAT_SUCCESS) {
		if (!soak_conn_event(s, &ev, false))
			return -1;
		n++;
	}
	while (dat_evd_dequeue(s->srv.cr_evd, &ev) == DAT_SUCCESS) {
		if (!soak_cr_event(s, &ev))
			return -1;
		n++;
	}
	if (!soak_cycle(s))
		return -1;
	/* a pair connected again starts sending */
	if (pump)
		for (i = 0; i < eps; i++)
			if (s->state[i] == P_UP && s->cycling != i &&
			    !s->busy[i * SOAK_WINDOW] && !soak_pump(s, i))
				return -1;
	return n;
}

/* Poll until @done or a failure; a pass with no event for KT_WAIT_MS fails. */
static bool soak_loop(struct soak *s, bool pump, bool (*done)(struct soak *),
		      const char *what)
{
	unsigned long idle = jiffies, said = jiffies;
	unsigned int passes = 0;
	int n;

	while (!done(s)) {
		n = soak_poll(s, pump);
		if (n < 0)
			return false;
		/* where a slow or stuck run is, every 30 s (never judged) */
		if (time_after(jiffies, said + 30 * HZ)) {
			said = jiffies;
			pr_info("kdat_soak: %s: %llu delivered, %llu acked (%llu of them not yet handled), %llu sends and %llu receives flushed, %llu reconnects, pair %d cycling (state %d)\n",
				what, s->n_delivered, s->n_acked, s->backlog, s->n_sflushed,
				s->n_rflushed, s->cycles, s->cycling,
				s->cycling < 0 ? -1 : s->state[s->cycling]);
		}
		/*
		 * A short sleep now and then even while events flow: on a slow
		 * kernel (KASAN under TCG) a loop that only calls cond_resched()
		 * starved the guest's user space, the suite's own time limit
		 * included.
		 */
		if (n && ++passes % 16) {
			idle = jiffies;
			cond_resched();
			continue;
		}
		if (n) {
			idle = jiffies;
			usleep_range(20, 100);
			continue;
		}
		if (time_after(jiffies, idle + msecs_to_jiffies(KT_WAIT_MS))) {
			kt_fail(&s->kt, "%s: no progress for %d ms", what,
				KT_WAIT_MS);
			return false;
		}
		usleep_range(20, 100);
	}
	return true;
}

static bool soak_budget_met(struct soak *s)
{
	return s->n_delivered >= messages || s->next_id >= s->nids;
}

/* Wait (bounded) for the live kdat objects to be back at @n. */
static bool soak_live_back(long n)
{
	unsigned long end = jiffies + msecs_to_jiffies(KT_WAIT_MS);

	while (kdat_live_objects() != n) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(1000, 2000);
	}
	return true;
}

static DAT_SRQ_PARAM soak_srq_q(struct soak *s)
{
	DAT_SRQ_PARAM p = {};

	KT_OK(&s->kt, dat_srq_query(s->srq, DAT_SRQ_FIELD_ALL, &p));
	return p;
}

/* No send in flight, no cycle under way, every buffer back on the SRQ. */
static bool soak_quiet(struct soak *s)
{
	DAT_SRQ_PARAM p;
	int i;

	if (s->cycling >= 0)
		return false;
	for (i = 0; i < eps * SOAK_WINDOW; i++)
		if (s->busy[i])
			return false;
	p = soak_srq_q(s);
	return p.available_dto_count == SOAK_DEPTH;
}

static bool soak_cycle_done(struct soak *s)
{
	return s->cycling < 0;
}

static bool soak_setup(struct soak *s)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = SOAK_DEPTH, .max_recv_iov = 1,
			    .low_watermark = DAT_SRQ_LW_DEFAULT };
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_message_size = SOAK_SIZE,
		.qos = DAT_QOS_BEST_EFFORT,
		.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
		.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
		.max_recv_dtos = 1,
		.max_request_dtos = SOAK_WINDOW,
		.max_recv_iov = 1,
		.max_request_iov = 1,
	};
	int i;

	s->srv.buf_len = SOAK_DEPTH * SOAK_SIZE;
	s->srv.buf = kzalloc(s->srv.buf_len, GFP_KERNEL);
	s->cli.buf_len = (size_t)eps * SOAK_WINDOW * SOAK_SIZE;
	s->cli.buf = kzalloc(s->cli.buf_len, GFP_KERNEL);
	if (!s->srv.buf || !s->cli.buf) {
		kt_fail(&s->kt, "no memory for the buffers");
		return false;
	}
	/* every WR reaches a CQ, plus a flush marker per EP */
	if (kt_side_open(&s->kt, &s->srv, srv_ia, NULL,
			 SOAK_DEPTH + 2 * eps + 16, 4 * eps + 16, eps + 16,
			 DAT_MEM_PRIV_LOCAL_WRITE_FLAG) ||
	    kt_side_open(&s->kt, &s->cli, cli_ia, NULL,
			 eps * (SOAK_WINDOW + 2) + 16, 4 * eps + 16, 16,
			 DAT_MEM_PRIV_LOCAL_READ_FLAG |
			 DAT_MEM_PRIV_LOCAL_WRITE_FLAG))
		return false;
	if (!KT_OK(&s->kt, dat_srq_create(s->srv.ia, s->srv.pz, &sa,
					  &s->srq)) ||
	    !KT_OK(&s->kt, dat_psp_create(s->srv.ia, SOAK_QUAL,
					  s->srv.cr_evd,
					  DAT_PSP_CONSUMER_FLAG, &s->psp)))
		return false;
	if (kt_eps_create(&s->kt, &s->srv, s->srq, &s->cli, &a, s->sep,
			  s->cep, eps) ||
	    kt_connect(&s->kt, &s->srv, &s->cli, srv_addr, SOAK_QUAL, s->sep,
		       s->cep, 0, eps, NULL))
		return false;
	for (i = 0; i < SOAK_DEPTH; i++)
		if (!KT_OK(&s->kt, soak_post_buf(s, i)))
			return false;
	return true;
}

static void soak_report(struct soak *s, int passed_live)
{
	int c, passed = 0, failed = 0;

	for (c = 0; c < C_N; c++) {
		/* a failure of the run itself fails what it kept from checking */
		if (!s->why[c][0] && s->kt.why[0] && c != C_LIVE)
			snprintf(s->why[c], sizeof(s->why[c]), "run failed: %s",
				 s->kt.why);
		if (c == C_LIVE && !passed_live && !s->why[c][0])
			snprintf(s->why[c], sizeof(s->why[c]), "objects left");
		if (s->why[c][0]) {
			pr_err("kdat_soak: not ok %s: %s (seed %u)\n",
			       cases[c], s->why[c], seed);
			failed++;
		} else {
			pr_info("kdat_soak: ok %s\n", cases[c]);
			passed++;
		}
	}
	pr_info("kdat_soak: %d passed, %d failed\n", passed, failed);
}

static int __init kdat_soak_init(void)
{
	struct soak *s;
	DAT_SRQ_PARAM p0 = {}, p1 = {};
	ktime_t t0;
	long live0 = kdat_live_objects();
	bool live_ok;
	u64 ms;

	if (eps <= 0 || eps > 4096)
		return -EINVAL;
	if (!messages)
		messages = IS_ENABLED(CONFIG_KASAN) ? 20000 : 1000000;
	if (!seed)
		seed = get_random_u32() | 1;
	pr_info("SEED: %u\n", seed);
	pr_info("kdat_soak: %lu messages over %d EPs on one SRQ of %d, seed %u\n",
		messages, eps, SOAK_DEPTH, seed);
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->kt.name = "kdat_soak";
	s->kt.log = true;
	s->cycling = -1;
	prandom_seed_state(&s->rnd, seed);
	/* ids: the budget, twice over for sends flushed by disconnects */
	s->nids = 2 * (u64)messages;
	s->sep = kcalloc(eps, sizeof(*s->sep), GFP_KERNEL);
	s->cep = kcalloc(eps, sizeof(*s->cep), GFP_KERNEL);
	s->state = kcalloc(eps, sizeof(*s->state), GFP_KERNEL);
	s->srv_gone = kcalloc(eps, sizeof(bool), GFP_KERNEL);
	s->cli_gone = kcalloc(eps, sizeof(bool), GFP_KERNEL);
	s->busy = kcalloc(eps, SOAK_WINDOW, GFP_KERNEL);
	s->posted = kcalloc(SOAK_DEPTH, sizeof(bool), GFP_KERNEL);
	s->delivered = vzalloc(BITS_TO_LONGS(s->nids) * sizeof(long));
	s->acked = vzalloc(BITS_TO_LONGS(s->nids) * sizeof(long));
	if (!s->sep || !s->cep || !s->state || !s->srv_gone ||
	    !s->cli_gone || !s->busy || !s->posted || !s->delivered ||
	    !s->acked) {
		kt_fail(&s->kt, "no memory");
		goto out;
	}

	if (!soak_setup(s))
		goto out;
	p0 = soak_srq_q(s);
	t0 = ktime_get();
	if (!soak_loop(s, true, soak_budget_met, "traffic") ||
	    !soak_loop(s, true, soak_cycle_done, "last cycle") ||
	    !soak_loop(s, false, soak_quiet, "quiescing"))
		goto out;
	ms = ktime_ms_delta(ktime_get(), t0);
	/* acknowledged but never delivered? */
	if (!bitmap_subset(s->acked, s->delivered, s->nids))
		soak_fail(s, C_MSGS, "an acknowledged message was not delivered");
	if (s->n_delivered < messages)
		soak_fail(s, C_MSGS, "%llu of %lu messages delivered",
			  s->n_delivered, messages);
	if (s->buf_posts - s->buf_completions != SOAK_DEPTH)
		soak_fail(s, C_BUFS, "%llu posted, %llu completed, %d on the SRQ",
			  s->buf_posts, s->buf_completions, SOAK_DEPTH);
	if (s->send_posts != s->send_completions)
		soak_fail(s, C_SENDS, "%llu sends posted, %llu completed",
			  s->send_posts, s->send_completions);
	p1 = soak_srq_q(s);
	if (p1.available_dto_count != p0.available_dto_count ||
	    p1.outstanding_dto_count != p0.outstanding_dto_count)
		soak_fail(s, C_COUNTS,
			  "available %d outstanding %d, at the start %d %d",
			  p1.available_dto_count, p1.outstanding_dto_count,
			  p0.available_dto_count, p0.outstanding_dto_count);
	pr_info("kdat_soak: time %llu ms: %llu delivered (%llu msg/s), %llu acked, %llu sends and %llu receives flushed, %llu reconnects\n",
		ms, s->n_delivered, ms ? div64_u64(s->n_delivered * 1000, ms) : 0,
		s->n_acked, s->n_sflushed, s->n_rflushed, s->cycles);
out:
	/* clients first, so the server sees plain disconnects */
	if (s->cli.ia)
		dat_ia_close(s->cli.ia, DAT_CLOSE_ABRUPT_FLAG);
	if (s->srv.ia)
		dat_ia_close(s->srv.ia, DAT_CLOSE_ABRUPT_FLAG);
	live_ok = soak_live_back(live0);
	soak_report(s, live_ok);
	kfree(s->srv.buf);
	kfree(s->cli.buf);
	kfree(s->sep);
	kfree(s->cep);
	kfree(s->state);
	kfree(s->srv_gone);
	kfree(s->cli_gone);
	kfree(s->busy);
	kfree(s->posted);
	vfree(s->delivered);
	vfree(s->acked);
	kfree(s);
	return 0;
}

static void __exit kdat_soak_exit(void)
{
}

module_init(kdat_soak_init);
module_exit(kdat_soak_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("kdat soak: 1M messages over 128 EPs on one SRQ with reconnects");
