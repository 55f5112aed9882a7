/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kt_conn.h: connection setup shared by the kernel consumers of kdat
 * (tests/kernel/kdat_test.c, tests/bench/kdat_bench.c and
 * examples/kernel/kdat_demo.c).  Each side of the connections opens an IA
 * with a PZ, DTO, connection and CR EVDs and an LMR over its buffer; the
 * server creates EPs on its SRQ, the client plain EPs; the clients connect
 * through the server's PSP, each request carrying the client's tag as
 * private data, the server accepts each on the EP that tag names, and both
 * sides see ESTABLISHED.
 *
 * Failures are reported through a struct kt_ctx: the first is kept in its
 * why[], and every one is logged as "<name>: error: ..." if it asks for it.
 */
#ifndef KT_CONN_H
#define KT_CONN_H

#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/string.h>
#include <dat/kdat.h>

#define KT_WAIT_MS		10000	/* bound on every wait */
#define KT_CONNECT_BATCH	32	/* connection requests in flight */

struct kt_ctx {
	const char *name;	/* the module, prefixed to what is logged */
	bool log;		/* log every failure, not just keep one */
	char why[128];		/* the first failure */
};

/* One side of the connections: an IA and what hangs off it. */
struct kt_side {
	const char *name;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd, dto_evd, conn_evd, cr_evd;
	DAT_PZ_HANDLE pz;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	void *buf;			/* the caller's */
	size_t buf_len;
};

static inline __printf(2, 3) void kt_fail(struct kt_ctx *kt,
					  const char *fmt, ...)
{
	char msg[sizeof(kt->why)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (kt->log)
		pr_err("%s: error: %s\n", kt->name, msg);
	if (!kt->why[0])
		strscpy(kt->why, msg, sizeof(kt->why));
}

/*
 * Report a failed DAT call by its function name (@call up to its first
 * "(") and the error's names; true if @r is DAT_SUCCESS.
 */
static inline bool kt_check(struct kt_ctx *kt, DAT_RETURN r, const char *call)
{
	const char *major = "", *minor = "";

	if (r == DAT_SUCCESS)
		return true;
	dat_strerror(r, &major, &minor);
	kt_fail(kt, "%.*s: %s%s%s (0x%x)", (int)strcspn(call, "("), call,
		major, *minor ? " " : "", minor, r);
	return false;
}

/* Check a DAT call; on failure report it and evaluate to false. */
#define KT_OK(kt, call)		kt_check(kt, (call), #call)

/* Dequeue the next event of @evd, waiting for it (bounded). */
static inline bool kt_next_event(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
	unsigned long end = jiffies + msecs_to_jiffies(KT_WAIT_MS);

	while (dat_evd_dequeue(evd, ev) != DAT_SUCCESS) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(100, 500);
	}
	return true;
}

/* An LMR with @priv over @len bytes at @buf, in @pz of @ia. */
static inline DAT_RETURN kt_lmr_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
				       void *buf, size_t len,
				       DAT_MEM_PRIV_FLAGS priv,
				       DAT_LMR_HANDLE *lmr,
				       DAT_LMR_CONTEXT *ctx)
{
	DAT_REGION_DESCRIPTION r = { .for_va = buf };
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN rsize;
	DAT_VADDR raddr;

	return dat_lmr_kcreate(ia, DAT_MEM_TYPE_VIRTUAL, r, len, pz, priv,
			       DAT_MEM_OPTIMIZE_DONT_CARE, lmr, ctx, &rctx,
			       &rsize, &raddr);
}

/*
 * Open side @s on IA @name: a PZ, a DTO EVD of @dto_qlen entries (calling
 * @up, unless NULL, for each event), a connection EVD of @conn_qlen, a CR
 * EVD of @cr_qlen and an LMR with @priv over s->buf_len bytes at s->buf,
 * which the caller allocated.  0, -ENODEV if the IA does not open, else
 * -ENOMEM; what is open stays open for the caller to close.
 */
static inline int kt_side_open(struct kt_ctx *kt, struct kt_side *s,
			       const char *name, const DAT_UPCALL_OBJECT *up,
			       DAT_COUNT dto_qlen, DAT_COUNT conn_qlen,
			       DAT_COUNT cr_qlen, DAT_MEM_PRIV_FLAGS priv)
{
	s->name = name;
	s->async_evd = DAT_HANDLE_NULL;
	if (!KT_OK(kt, dat_ia_open((const DAT_NAME_PTR)name, 64,
				   &s->async_evd, &s->ia)))
		return -ENODEV;
	if (!KT_OK(kt, dat_pz_create(s->ia, &s->pz)) ||
	    !KT_OK(kt, dat_evd_kcreate(s->ia, dto_qlen,
				       up ? DAT_UPCALL_SINGLE_INSTANCE :
					    DAT_UPCALL_DISABLE,
				       up, DAT_EVD_DTO_FLAG, &s->dto_evd)) ||
	    !KT_OK(kt, dat_evd_kcreate(s->ia, conn_qlen, DAT_UPCALL_DISABLE,
				       NULL, DAT_EVD_CONNECTION_FLAG,
				       &s->conn_evd)) ||
	    !KT_OK(kt, dat_evd_kcreate(s->ia, cr_qlen, DAT_UPCALL_DISABLE,
				       NULL, DAT_EVD_CR_FLAG, &s->cr_evd)) ||
	    !kt_check(kt, kt_lmr_create(s->ia, s->pz, s->buf, s->buf_len,
					priv, &s->lmr, &s->lmr_ctx),
		      "dat_lmr_kcreate"))
		return -ENOMEM;
	return 0;
}

/*
 * Create @n EP pairs with @attr, each on its side's EVDs: sep[i] on @srv
 * taking its receives from @srq, cep[i] on @cli.  0 or -ENOMEM.
 */
static inline int kt_eps_create(struct kt_ctx *kt, struct kt_side *srv,
				DAT_SRQ_HANDLE srq, struct kt_side *cli,
				const DAT_EP_ATTR *attr, DAT_EP_HANDLE *sep,
				DAT_EP_HANDLE *cep, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (!KT_OK(kt, dat_ep_create_with_srq(srv->ia, srv->pz,
						      srv->dto_evd,
						      srv->dto_evd,
						      srv->conn_evd, srq,
						      attr, &sep[i])) ||
		    !KT_OK(kt, dat_ep_create(cli->ia, cli->pz, cli->dto_evd,
					     cli->dto_evd, cli->conn_evd, attr,
					     &cep[i])))
			return -ENOMEM;
	}
	return 0;
}

/* Wait for @n ESTABLISHED events on @s, each naming one of @ep[0..n). */
static inline int kt_established(struct kt_ctx *kt, struct kt_side *s,
				 const DAT_EP_HANDLE *ep, int n)
{
	DAT_EVENT ev;
	int i, left;

	for (left = n; left; left--) {
		if (!kt_next_event(s->conn_evd, &ev)) {
			kt_fail(kt, "%s: a connection was not established",
				s->name);
			return -ENOTCONN;
		}
		if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
			kt_fail(kt, "%s: connection event 0x%x", s->name,
				ev.event_number);
			return -ENOTCONN;
		}
		for (i = 0; i < n; i++)
			if (ev.event_data.connect_event_data.ep_handle == ep[i])
				break;
		if (i == n) {
			kt_fail(kt, "%s: ESTABLISHED on an EP not connecting",
				s->name);
			return -ENOTCONN;
		}
	}
	return 0;
}

/*
 * Accept the next connection request on @srv, from a client whose tag
 * is @tag + i, first <= i < first + n, on sep[i].
 */
static inline int kt_accept(struct kt_ctx *kt, struct kt_side *srv,
			    struct kt_side *cli, const DAT_EP_HANDLE *sep,
			    u32 tag, int first, int n)
{
	DAT_CR_PARAM crp;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;
	u32 i;

	if (!kt_next_event(srv->cr_evd, &ev) ||
	    ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
		if (dat_evd_dequeue(cli->conn_evd, &ev) == DAT_SUCCESS)
			kt_fail(kt, "%s: connection event 0x%x", cli->name,
				ev.event_number);
		kt_fail(kt, "a connection request of batch %d did not come",
			first);
		return -ETIMEDOUT;
	}
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	if (!KT_OK(kt, dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp)))
		return -EPROTO;
	if (crp.private_data_size != sizeof(i)) {
		kt_fail(kt, "private data of %d bytes", crp.private_data_size);
		return -EPROTO;
	}
	memcpy(&i, crp.private_data, sizeof(i));
	i -= tag;
	if (i < (u32)first || i >= (u32)(first + n)) {
		kt_fail(kt, "request from unknown client %u", i + tag);
		return -EPROTO;
	}
	if (!KT_OK(kt, dat_cr_accept(cr, sep[i], 0, NULL)))
		return -EIO;
	return 0;
}

/*
 * Connect cep[i] to sep[i] for i < @n through the PSP of @qual on @srv,
 * at IPv4 address @addr, KT_CONNECT_BATCH requests at a time.  Request i
 * carries the tag @tag + i.  *@connected (unless NULL) counts the pairs
 * that got connected.  0 or a negative errno.
 */
static inline int kt_connect(struct kt_ctx *kt, struct kt_side *srv,
			     struct kt_side *cli, const char *addr,
			     DAT_CONN_QUAL qual, const DAT_EP_HANDLE *sep,
			     const DAT_EP_HANDLE *cep, u32 tag, int n,
			     int *connected)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	DAT_IA_ADDRESS_PTR sa = (DAT_IA_ADDRESS_PTR)&sin;
	int first, i, b, ret;
	DAT_RETURN r;
	u32 t;

	sin.sin_addr.s_addr = in_aton(addr);
	for (first = 0; first < n; first += b) {
		b = min(n - first, KT_CONNECT_BATCH);
		for (i = first; i < first + b; i++) {
			t = tag + i;
			r = dat_ep_connect(cep[i], sa, qual,
					   DAT_TIMEOUT_INFINITE, sizeof(t), &t,
					   DAT_QOS_BEST_EFFORT,
					   DAT_CONNECT_DEFAULT_FLAG);
			if (!kt_check(kt, r, "dat_ep_connect"))
				return -EIO;
		}
		for (i = 0; i < b; i++) {
			ret = kt_accept(kt, srv, cli, sep, tag, first, b);
			if (ret)
				return ret;
		}
		ret = kt_established(kt, srv, sep + first, b);
		if (!ret)
			ret = kt_established(kt, cli, cep + first, b);
		if (ret)
			return ret;
		if (connected)
			*connected += b;
	}
	return 0;
}

#endif /* KT_CONN_H */
