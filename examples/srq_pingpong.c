// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srq_pingpong: one process, plain C.  A server on IA rxe0 (192.0.2.1)
 * receives through ONE shared receive queue for N endpoints; N client
 * endpoints on IA rxe1 each send R pings and wait for R pongs.
 *
 *   srq_pingpong [clients (4)] [rounds (10)]
 *
 * Every ping lands in whichever SRQ buffer is next; the completion names
 * the server EP that took it, the server reposts the buffer and answers on
 * that EP.  Build: cc srq_pingpong.c -ldat
 */
#include <dat/udat.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUAL	7777
#define MSG	64		/* bytes per message buffer */
#define MAXC	64
#define WAIT	10000000	/* 10 s in microseconds */

static void check(DAT_RETURN r, const char *what)
{
	const char *major, *minor;

	if (r == DAT_SUCCESS)
		return;
	dat_strerror(r, &major, &minor);
	fprintf(stderr, "srq_pingpong: %s: %s %s\n", what, major, minor);
	exit(1);
}

/* Wait for one event of the given number on evd. */
static DAT_EVENT expect(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER num)
{
	DAT_EVENT e;
	DAT_COUNT more;

	check(dat_evd_wait(evd, WAIT, 1, &e, &more), "dat_evd_wait");
	if (e.event_number != num) {
		fprintf(stderr, "srq_pingpong: event 0x%x, expected 0x%x\n",
			e.event_number, num);
		exit(1);
	}
	return e;
}

struct side {
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async, evd, sq, conn, cr;	/* evd: receives */
	DAT_PZ_HANDLE pz;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	char *buf;
};

static void open_side(struct side *s, const char *name, size_t bytes)
{
	DAT_REGION_DESCRIPTION r;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN len;
	DAT_VADDR addr;

	s->async = DAT_HANDLE_NULL;
	check(dat_ia_open((DAT_NAME_PTR)name, 16, &s->async, &s->ia), name);
	check(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	check(dat_evd_create(s->ia, 4 * MAXC, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
			     &s->evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 4 * MAXC, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
			     &s->sq), "dat_evd_create");
	check(dat_evd_create(s->ia, 2 * MAXC, DAT_HANDLE_NULL,
			     DAT_EVD_CONNECTION_FLAG, &s->conn), "dat_evd_create");
	check(dat_evd_create(s->ia, MAXC, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
			     &s->cr), "dat_evd_create");
	s->buf = aligned_alloc(64, bytes);
	memset(s->buf, 0, bytes);
	r.for_va = s->buf;
	check(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, bytes, s->pz,
			     DAT_MEM_PRIV_LOCAL_READ_FLAG |
				     DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
			     &s->lmr, &s->lctx, &rctx, &len, &addr),
	      "dat_lmr_create");
}

/* Reap the send completions of a round. */
static void reap_sends(struct side *s, int n)
{
	int k;

	for (k = 0; k < n; k++)
		expect(s->sq, DAT_DTO_COMPLETION_EVENT);
}

static void close_side(struct side *s)
{
	check(dat_lmr_free(s->lmr), "dat_lmr_free");
	check(dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	free(s->buf);
}

static DAT_LMR_TRIPLET slot(struct side *s, int i)
{
	DAT_LMR_TRIPLET t;

	t.lmr_context = s->lctx;
	t.pad = 0;
	t.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + (size_t)i * MSG);
	t.segment_length = MSG;
	return t;
}

static void post_send(DAT_EP_HANDLE ep, struct side *s, int i, const char *txt)
{
	DAT_LMR_TRIPLET t = slot(s, i);
	DAT_DTO_COOKIE c;

	snprintf(s->buf + (size_t)i * MSG, MSG, "%s", txt);
	t.segment_length = strlen(txt) + 1;
	c.as_64 = (DAT_UINT64)i;
	check(dat_ep_post_send(ep, 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG),
	      "dat_ep_post_send");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4, rounds = argc > 2 ? atoi(argv[2]) : 10;
	struct side srv, cli;
	DAT_EP_HANDLE sep[MAXC], cep[MAXC];
	DAT_SRQ_HANDLE srq;
	DAT_SRQ_ATTR sattr;
	DAT_SRQ_PARAM sp;
	DAT_PSP_HANDLE psp;
	DAT_EP_ATTR a;
	DAT_EVENT e;
	struct sockaddr_in sin;
	int i, r, k;

	if (n < 1 || n > MAXC || rounds < 1) {
		fprintf(stderr, "usage: srq_pingpong [clients 1..%d] [rounds]\n", MAXC);
		return 2;
	}
	/* server buffers: SRQ slots 0..2n-1, send slots 2n..3n-1 */
	open_side(&srv, "rxe0", (size_t)3 * n * MSG);
	/* client buffers: receive slot i, send slot n + i */
	open_side(&cli, "rxe1", (size_t)2 * n * MSG);

	sattr.max_recv_dtos = 2 * n;
	sattr.max_recv_iov = 1;
	sattr.low_watermark = DAT_SRQ_LW_DEFAULT;
	check(dat_srq_create(srv.ia, srv.pz, &sattr, &srq), "dat_srq_create");
	for (i = 0; i < 2 * n; i++) {
		DAT_LMR_TRIPLET t = slot(&srv, i);
		DAT_DTO_COOKIE c;

		c.as_64 = (DAT_UINT64)i;
		check(dat_srq_post_recv(srq, 1, &t, c), "dat_srq_post_recv");
	}
	check(dat_psp_create(srv.ia, QUAL, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp),
	      "dat_psp_create");

	memset(&a, 0, sizeof(a));
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_message_size = MSG;
	a.max_recv_dtos = 2;
	a.max_request_dtos = 2;
	a.max_recv_iov = 1;
	a.max_request_iov = 1;
	a.srq_soft_hw = DAT_HW_DEFAULT;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);

	/* clients connect, telling the server their index in private data */
	for (i = 0; i < n; i++) {
		DAT_LMR_TRIPLET t = slot(&cli, i);
		DAT_DTO_COOKIE c;

		check(dat_ep_create(cli.ia, cli.pz, cli.evd, cli.sq, cli.conn,
				    &a, &cep[i]), "dat_ep_create");
		c.as_64 = (DAT_UINT64)i;
		check(dat_ep_post_recv(cep[i], 1, &t, c,
				       DAT_COMPLETION_DEFAULT_FLAG),
		      "dat_ep_post_recv");
		check(dat_ep_connect(cep[i], (DAT_IA_ADDRESS_PTR)&sin, QUAL, WAIT,
				     sizeof(i), &i, DAT_QOS_BEST_EFFORT,
				     DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
	}
	/* the server accepts each with an EP on the shared receive queue */
	for (k = 0; k < n; k++) {
		DAT_CR_PARAM cp;

		e = expect(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
		check(dat_cr_query(e.event_data.cr_arrival_event_data.cr_handle,
				   DAT_CR_FIELD_ALL, &cp), "dat_cr_query");
		memcpy(&i, cp.private_data, sizeof(i));
		check(dat_ep_create_with_srq(srv.ia, srv.pz, srv.evd, srv.sq,
					     srv.conn, srq, &a, &sep[i]),
		      "dat_ep_create_with_srq");
		check(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle,
				    sep[i], 0, NULL), "dat_cr_accept");
	}
	for (k = 0; k < n; k++) {
		expect(srv.conn, DAT_CONNECTION_EVENT_ESTABLISHED);
		expect(cli.conn, DAT_CONNECTION_EVENT_ESTABLISHED);
	}
	printf("srq_pingpong: %d clients connected, %d SRQ buffers\n", n, 2 * n);

	for (r = 0; r < rounds; r++) {
		char txt[MSG];

		for (i = 0; i < n; i++) {
			snprintf(txt, sizeof(txt), "ping %d.%d", i, r);
			post_send(cep[i], &cli, n + i, txt);
		}
		/* server: n pings, in any order, each in some SRQ buffer */
		for (k = 0; k < n; k++) {
			DAT_DTO_COMPLETION_EVENT_DATA *d;
			DAT_LMR_TRIPLET t;

			e = expect(srv.evd, DAT_DTO_COMPLETION_EVENT);
			d = &e.event_data.dto_completion_event_data;
			for (i = 0; i < n && sep[i] != d->ep_handle; i++)
				;
			snprintf(txt, sizeof(txt), "ping %d.%d", i, r);
			if (i == n || d->status != DAT_DTO_SUCCESS ||
			    strcmp(srv.buf + d->user_cookie.as_64 * MSG, txt)) {
				fprintf(stderr, "srq_pingpong: bad ping\n");
				return 1;
			}
			t = slot(&srv, (int)d->user_cookie.as_64);
			check(dat_srq_post_recv(srq, 1, &t, d->user_cookie),
			      "dat_srq_post_recv");
			snprintf(txt, sizeof(txt), "pong %d.%d", i, r);
			post_send(sep[i], &srv, 2 * n + i, txt);
		}
		/* clients: n pongs, each followed by a fresh receive */
		for (k = 0; k < n; k++) {
			DAT_DTO_COMPLETION_EVENT_DATA *d;

			e = expect(cli.evd, DAT_DTO_COMPLETION_EVENT);
			d = &e.event_data.dto_completion_event_data;
			i = (int)d->user_cookie.as_64;
			snprintf(txt, sizeof(txt), "pong %d.%d", i, r);
			if (d->ep_handle != cep[i] ||
			    strcmp(cli.buf + (size_t)i * MSG, txt)) {
				fprintf(stderr, "srq_pingpong: bad pong\n");
				return 1;
			}
			{
				DAT_LMR_TRIPLET t = slot(&cli, i);

				check(dat_ep_post_recv(cep[i], 1, &t,
						       d->user_cookie,
						       DAT_COMPLETION_DEFAULT_FLAG),
				      "dat_ep_post_recv");
			}
		}
		reap_sends(&cli, n);
		reap_sends(&srv, n);
	}

	check(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp), "dat_srq_query");
	printf("srq_pingpong: %d x %d pings through one SRQ; "
	       "available %d, outstanding %d of %d\n",
	       n, rounds, sp.available_dto_count, sp.outstanding_dto_count,
	       sp.max_recv_dtos);

	for (i = 0; i < n; i++) {
		check(dat_ep_disconnect(cep[i], DAT_CLOSE_GRACEFUL_FLAG),
		      "dat_ep_disconnect");
		expect(cli.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
		expect(srv.conn, DAT_CONNECTION_EVENT_DISCONNECTED);
	}
	for (i = 0; i < n; i++) {
		check(dat_ep_free(cep[i]), "dat_ep_free");
		check(dat_ep_free(sep[i]), "dat_ep_free");
	}
	check(dat_psp_free(psp), "dat_psp_free");
	check(dat_srq_free(srq), "dat_srq_free");
	close_side(&srv);
	close_side(&cli);
	printf("srq_pingpong: OK\n");
	return 0;
}
