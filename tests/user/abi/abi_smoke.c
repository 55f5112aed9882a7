// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * abi_smoke: drives /dev/kdat through the raw ABI (no libdat) in the guest:
 * the dat_srq_query worked example over a real connection, with receives
 * posted through the mmapped SRQ ring and completions read from the
 * mmapped event ring.  Prints PASS:/FAIL: lines.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <dat/udat.h>
#include <uapi/kdat_abi.h>

static int fd, failed;

#define IOC(cmd, a)                                                       \
	({                                                                \
		(a)->hdr.size = sizeof(*(a));                             \
		ioctl(fd, cmd, a) ? (perror(#cmd), 0xffffffffu)           \
				  : (a)->hdr.status;                      \
	})
#define CHECK(c, ...)                                                     \
	do {                                                              \
		if (!(c)) {                                               \
			printf("FAIL: abi_smoke: line %d: ", __LINE__);   \
			printf(__VA_ARGS__);                              \
			printf("\n");                                     \
			exit(1);                                          \
		}                                                         \
	} while (0)

struct ring {
	struct kdat_ring_hdr *h;
	char *base;
};

static struct ring map_ring(__u64 off, __u64 size)
{
	struct ring r;

	r.base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	CHECK(r.base != MAP_FAILED, "mmap: %s", strerror(errno));
	r.h = (struct kdat_ring_hdr *)r.base;
	return r;
}

static void *slot(struct ring *r, __u32 i)
{
	return r->base + r->h->entry_offset +
	       (size_t)(i & (r->h->entries - 1)) * r->h->entry_size;
}

/* Wait for one event, without a syscall unless the ring is empty. */
static struct kdat_uevent next_event(struct ring *r, __u32 evd)
{
	struct kdat_ioc_evd_wait w = { .evd = evd, .threshold = 1,
				       .timeout_us = 10000000 };
	struct kdat_uevent e;
	__u32 head = r->h->head;

	if (__atomic_load_n(&r->h->tail, __ATOMIC_ACQUIRE) == head)
		CHECK(IOC(KDAT_IOC_EVD_WAIT, &w) == DAT_SUCCESS, "wait");
	memcpy(&e, slot(r, head), sizeof(e));
	__atomic_store_n(&r->h->head, head + 1, __ATOMIC_RELEASE);
	return e;
}

struct side {
	__u32 ia, aevd, pz, evd, cevd, crevd, lmr, lctx;
	struct ring aring, ring, cring, crring;
	char *buf;
};

static void open_side_flags(struct side *s, const char *name, __u32 flags)
{
	struct kdat_ioc_ia_open o = { .flags = flags };
	struct kdat_ioc_pz_create p = {};
	struct kdat_ioc_evd_create e = {};
	struct kdat_ioc_lmr_create l = {};

	strcpy(o.name, name);
	o.async_qlen = 16;
	CHECK(IOC(KDAT_IOC_IA_OPEN, &o) == DAT_SUCCESS, "ia_open %s", name);
	s->ia = o.ia;
	s->aevd = o.async_evd;
	s->aring = map_ring(o.async_ring_offset, o.async_ring_size);
	p.ia = s->ia;
	CHECK(IOC(KDAT_IOC_PZ_CREATE, &p) == DAT_SUCCESS, "pz");
	s->pz = p.pz;
	e.ia = s->ia, e.qlen = 64, e.flags = DAT_EVD_DTO_FLAG;
	CHECK(IOC(KDAT_IOC_EVD_CREATE, &e) == DAT_SUCCESS, "evd");
	s->evd = e.evd;
	s->ring = map_ring(e.ring_offset, e.ring_size);
	e.flags = DAT_EVD_CONNECTION_FLAG;
	CHECK(IOC(KDAT_IOC_EVD_CREATE, &e) == DAT_SUCCESS, "evd");
	s->cevd = e.evd;
	s->cring = map_ring(e.ring_offset, e.ring_size);
	e.flags = DAT_EVD_CR_FLAG;
	CHECK(IOC(KDAT_IOC_EVD_CREATE, &e) == DAT_SUCCESS, "evd");
	s->crevd = e.evd;
	s->crring = map_ring(e.ring_offset, e.ring_size);
	s->buf = aligned_alloc(4096, 1 << 16);
	memset(s->buf, 0, 1 << 16);
	l.ia = s->ia, l.pz = s->pz, l.addr = (uintptr_t)s->buf;
	l.length = 1 << 16;
	l.priv = DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG;
	CHECK(IOC(KDAT_IOC_LMR_CREATE, &l) == DAT_SUCCESS, "lmr");
	s->lmr = l.lmr;
	s->lctx = l.lmr_context;
}

static void open_side(struct side *s, const char *name)
{
	open_side_flags(s, name, 0);
}

/* Is the ring empty (nothing the kernel wrote that was not consumed)? */
static int ring_empty(struct ring *r)
{
	return __atomic_load_n(&r->h->tail, __ATOMIC_ACQUIRE) == r->h->head;
}

static __u32 ep_op(unsigned long cmd, __u32 ep, __u32 value)
{
	struct kdat_ioc_ep_op o = { .ep = ep, .value = value };

	return IOC(cmd, &o);
}

static __u32 free_obj(__u32 h, __u32 type)
{
	struct kdat_ioc_free f = { .handle = h, .type = type };

	return IOC(KDAT_IOC_FREE, &f);
}

/*
 * A new server EP on @srq of @s connected to a new client EP on @c
 * through a new PSP of conn_qual @qual; both saw ESTABLISHED.
 */
static void connect_srq_ep(struct side *s, struct side *c, __u32 srq,
			   __u64 qual, __u32 *sep, __u32 *cep)
{
	struct kdat_ioc_ep_create ec = {};
	struct kdat_ioc_psp_create pc = {};
	struct kdat_ioc_ep_connect cc = {};
	struct kdat_ioc_cr_accept ca = {};
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct kdat_uevent e;

	ec.ia = s->ia, ec.pz = s->pz, ec.recv_evd = s->evd;
	ec.request_evd = s->evd, ec.connect_evd = s->cevd, ec.srq = srq;
	ec.has_attr = 1;
	ec.attr.max_message_size = 4096, ec.attr.max_request_dtos = 8;
	ec.attr.max_request_iov = 1, ec.attr.max_recv_dtos = 8;
	ec.attr.max_recv_iov = 1;
	CHECK(IOC(KDAT_IOC_EP_CREATE, &ec) == DAT_SUCCESS, "server ep");
	*sep = ec.ep;
	ec.ia = c->ia, ec.pz = c->pz, ec.recv_evd = c->evd;
	ec.request_evd = c->evd, ec.connect_evd = c->cevd, ec.srq = 0;
	CHECK(IOC(KDAT_IOC_EP_CREATE, &ec) == DAT_SUCCESS, "client ep");
	*cep = ec.ep;
	pc.ia = s->ia, pc.evd = s->crevd, pc.conn_qual = qual;
	pc.flags = DAT_PSP_CONSUMER_FLAG;
	CHECK(IOC(KDAT_IOC_PSP_CREATE, &pc) == DAT_SUCCESS, "psp");
	cc.ep = *cep, cc.conn_qual = qual, cc.timeout_us = 0xffffffff;
	sin.sin_addr.s_addr = inet_addr("192.0.2.1");
	memcpy(cc.addr, &sin, sizeof(sin));
	CHECK(IOC(KDAT_IOC_EP_CONNECT, &cc) == DAT_SUCCESS, "connect");
	e = next_event(&s->crring, s->crevd);
	CHECK(e.event_number == DAT_CONNECTION_REQUEST_EVENT, "cr");
	ca.cr = e.cr, ca.ep = *sep;
	CHECK(IOC(KDAT_IOC_CR_ACCEPT, &ca) == DAT_SUCCESS, "accept");
	e = next_event(&s->cring, s->cevd);
	CHECK(e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
	      e.handle == *sep, "server established %x", e.event_number);
	e = next_event(&c->cring, c->cevd);
	CHECK(e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
	      e.handle == *cep, "client established %x", e.event_number);
	CHECK(free_obj(pc.psp, 5 /* PSP */) == DAT_SUCCESS, "psp free");
}

static struct kdat_ioc_srq_query query(__u32 srq)
{
	struct kdat_ioc_srq_query q = { .srq = srq, .mask = DAT_SRQ_FIELD_ALL };

	CHECK(IOC(KDAT_IOC_SRQ_QUERY, &q) == DAT_SUCCESS, "query");
	return q;
}

int main(void)
{
	struct side s, c;
	struct kdat_ioc_version v = {};
	struct kdat_ioc_srq_create sc = {};
	struct kdat_ioc_ep_create ec = {};
	struct kdat_ioc_psp_create pc = {};
	struct kdat_ioc_ep_connect cc = {};
	struct kdat_ioc_cr_accept ca = {};
	struct kdat_ioc_ep_post post = {};
	struct kdat_ioc_srq_op kick = {};
	struct kdat_ioc_srq_query q;
	struct kdat_uevent e;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ring sring;
	__u32 sep, cep, i;

	fd = open("/dev/kdat", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0, "open /dev/kdat: %s", strerror(errno));
	CHECK(IOC(KDAT_IOC_VERSION, &v) == 0 && v.abi_version == KDAT_ABI_VERSION, "version");
	/* the range and the feature word libdat checks (issue 11) */
	CHECK(v.min_abi_version == KDAT_ABI_MIN_COMPAT &&
	      v.min_abi_version <= v.abi_version &&
	      v.features == KDAT_FEATURES_ALL && !v.reserved && !v.pad,
	      "version range: min %u features 0x%llx reserved %u",
	      v.min_abi_version, (unsigned long long)v.features, v.reserved);
	{
		struct kdat_ioc_version r = { .reserved = 1 };
		/* an older library's smaller struct: the old fields only */
		struct {
			struct kdat_ioc_hdr hdr;
			__u32 abi_version, pad;
			__u64 canary;
		} old = { .hdr.size = 16, .canary = 0x5a5a5a5a5a5a5a5aull };

		r.hdr.size = sizeof(r);
		CHECK(ioctl(fd, KDAT_IOC_VERSION, &r) == -1 && errno == EINVAL,
		      "version reserved must be zero");
		CHECK(ioctl(fd, KDAT_IOC_VERSION, &old) == 0 &&
		      old.hdr.status == DAT_SUCCESS &&
		      old.abi_version == KDAT_ABI_VERSION &&
		      old.canary == 0x5a5a5a5a5a5a5a5aull,
		      "version with an older library's size");
	}
	CHECK(ioctl(fd, _IOWR(0xDA, 0x7f, struct kdat_ioc_version), &v) == -1 &&
	      errno == ENOTTY, "unknown ioctl must be ENOTTY");
	open_side(&s, "rxe0");
	open_side(&c, "rxe1");

	sc.ia = s.ia, sc.pz = s.pz, sc.max_recv_dtos = 10, sc.max_recv_iov = 1;
	CHECK(IOC(KDAT_IOC_SRQ_CREATE, &sc) == DAT_SUCCESS, "srq");
	sring = map_ring(sc.ring_offset, sc.ring_size);
	/* three receives through the ring, no syscall unless asked */
	for (i = 0; i < 3; i++) {
		__u32 t = sring.h->tail;
		struct kdat_srq_wqe *w = slot(&sring, t);

		w->cookie = 100 + i;
		w->nseg = 1;
		w->seg[0].lmr_context = s.lctx;
		w->seg[0].addr = (uintptr_t)s.buf + i * 256;
		w->seg[0].length = 256;
		__atomic_store_n(&sring.h->tail, t + 1, __ATOMIC_RELEASE);
		atomic_thread_fence(memory_order_seq_cst);
		if (__atomic_load_n(&sring.h->flags, __ATOMIC_RELAXED) &
		    KDAT_RING_NEED_KICK) {
			kick.srq = sc.srq;
			CHECK(IOC(KDAT_IOC_SRQ_KICK, &kick) == DAT_SUCCESS,
			      "kick");
		}
	}
	q = query(sc.srq);
	CHECK(q.max_recv_dtos == 10 && q.available_dto_count == 3 &&
	      q.outstanding_dto_count == 3, "posted %d/%d/%d",
	      q.max_recv_dtos, q.available_dto_count, q.outstanding_dto_count);
	printf("PASS: abi_srq_ring_post_counts\n");

	ec.ia = s.ia, ec.pz = s.pz, ec.recv_evd = s.evd, ec.request_evd = s.evd;
	ec.connect_evd = s.cevd, ec.srq = sc.srq, ec.has_attr = 1;
	ec.attr.max_message_size = 4096, ec.attr.max_request_dtos = 16;
	ec.attr.max_request_iov = 1, ec.attr.max_recv_dtos = 16;
	ec.attr.max_recv_iov = 1;
	CHECK(IOC(KDAT_IOC_EP_CREATE, &ec) == DAT_SUCCESS, "server ep");
	sep = ec.ep;
	ec.ia = c.ia, ec.pz = c.pz, ec.recv_evd = c.evd, ec.request_evd = c.evd;
	ec.connect_evd = c.cevd, ec.srq = 0;
	CHECK(IOC(KDAT_IOC_EP_CREATE, &ec) == DAT_SUCCESS, "client ep");
	cep = ec.ep;
	pc.ia = s.ia, pc.evd = s.crevd, pc.conn_qual = 5555;
	CHECK(IOC(KDAT_IOC_PSP_CREATE, &pc) == DAT_SUCCESS, "psp");
	sin.sin_addr.s_addr = inet_addr("192.0.2.1");
	memcpy(cc.addr, &sin, sizeof(sin));
	cc.ep = cep, cc.conn_qual = 5555, cc.timeout_us = 0xffffffff;
	CHECK(IOC(KDAT_IOC_EP_CONNECT, &cc) == DAT_SUCCESS, "connect");
	e = next_event(&s.crring, s.crevd);
	CHECK(e.event_number == DAT_CONNECTION_REQUEST_EVENT && e.cr, "cr");
	ca.cr = e.cr, ca.ep = sep;
	CHECK(IOC(KDAT_IOC_CR_ACCEPT, &ca) == DAT_SUCCESS, "accept");
	e = next_event(&s.cring, s.cevd);
	CHECK(e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
	      e.handle == sep, "server established %x", e.event_number);
	e = next_event(&c.cring, c.cevd);
	CHECK(e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
	      e.handle == cep, "client established");
	printf("PASS: abi_connect_accept\n");

	strcpy(c.buf, "ring");
	post.ep = cep, post.op = KDAT_POST_SEND, post.nseg = 1, post.cookie = 9;
	post.seg[0].lmr_context = c.lctx, post.seg[0].addr = (uintptr_t)c.buf;
	post.seg[0].length = 5;
	CHECK(IOC(KDAT_IOC_EP_POST, &post) == DAT_SUCCESS, "send");
	e = next_event(&c.ring, c.evd);
	CHECK(e.event_number == DAT_DTO_COMPLETION_EVENT && e.status == 0 &&
	      e.cookie == 9, "send completion");
	/* the message arrived: the receive sits on the EVD, not reaped */
	do {
		q = query(sc.srq);
	} while (q.available_dto_count == 3);
	CHECK(q.max_recv_dtos == 10 && q.available_dto_count == 2 &&
	      q.outstanding_dto_count == 3, "arrived %d/%d/%d",
	      q.max_recv_dtos, q.available_dto_count, q.outstanding_dto_count);
	e = next_event(&s.ring, s.evd);
	CHECK(e.event_number == DAT_DTO_COMPLETION_EVENT && e.handle == sep &&
	      e.length == 5 && e.cookie >= 100 && e.cookie < 103,
	      "receive completion names the EP");
	CHECK(!strcmp(s.buf + (e.cookie - 100) * 256, "ring"), "data");
	q = query(sc.srq);
	CHECK(q.max_recv_dtos == 10 && q.available_dto_count == 2 &&
	      q.outstanding_dto_count == 2, "dequeued %d/%d/%d",
	      q.max_recv_dtos, q.available_dto_count, q.outstanding_dto_count);
	printf("PASS: abi_srq_query_worked_example\n");

	/* a malformed ring entry comes back as an error event */
	{
		__u32 t = sring.h->tail;
		struct kdat_srq_wqe *w = slot(&sring, t);

		w->cookie = 77;
		w->nseg = 1;
		w->seg[0].lmr_context = 0x7777;
		w->seg[0].addr = 0;
		w->seg[0].length = 1 << 30;
		__atomic_store_n(&sring.h->tail, t + 1, __ATOMIC_RELEASE);
		q = query(sc.srq);	/* drains */
		e = next_event(&s.aring, s.aevd);
		CHECK(e.event_number == DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR &&
		      e.handle == sc.srq && e.cookie == 77 &&
		      e.reason == DAT_SRQ_OTHER_ERROR, "bad entry event");
		CHECK(q.outstanding_dto_count == 2, "bad entry counted");
	}
	printf("PASS: abi_malformed_ring_entry_error_event\n");

	/*
	 * DAT 2.0's end-of-connection EP_BROKEN (KDAT_IA_OPEN_SRQ_EP_BROKEN).
	 * Without the flag: the peer disconnects the SRQ EP, DISCONNECTED
	 * comes, and after the EP is freed (a free waits for an event being
	 * posted) the async EVD holds nothing.
	 */
	CHECK(v.features & KDAT_FEATURE_SRQ_EP_BROKEN, "feature bit");
	CHECK(ep_op(KDAT_IOC_EP_DISCONNECT, cep, DAT_CLOSE_GRACEFUL_FLAG) ==
	      DAT_SUCCESS, "client disconnect");
	e = next_event(&s.cring, s.cevd);
	CHECK(e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
	      e.handle == sep, "server disconnected %x", e.event_number);
	e = next_event(&c.cring, c.cevd);
	CHECK(e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
	      e.handle == cep, "client disconnected %x", e.event_number);
	CHECK(free_obj(sep, 1 /* EP */) == DAT_SUCCESS, "free sep");
	CHECK(ring_empty(&s.aring), "an async event without the flag (%x)",
	      ((struct kdat_uevent *)slot(&s.aring, s.aring.h->head))->event_number);
	printf("PASS: abi_srq_ep_broken_not_without_the_flag\n");

	/* unknown flag bits and a non-zero reserved field are refused */
	{
		struct kdat_ioc_ia_open o = { .async_qlen = 16, .flags = 0x80 };

		strcpy(o.name, "rxe0");
		CHECK(IOC(KDAT_IOC_IA_OPEN, &o) ==
		      (DAT_INVALID_PARAMETER | DAT_INVALID_ARG1 |
		       DAT_CLASS_ERROR), "unknown flag bit");
		o.flags = KDAT_IA_OPEN_SRQ_EP_BROKEN;
		o.reserved = 1;
		o.hdr.size = sizeof(o);
		CHECK(ioctl(fd, KDAT_IOC_IA_OPEN, &o) == -1 && errno == EINVAL,
		      "reserved must be zero");
	}
	printf("PASS: abi_ia_open_flags_checked\n");

	/*
	 * With the flag: an SRQ EP the peer disconnects gets one EP_BROKEN
	 * naming it, reason DAT_EP_TRANSFER_TO_ERROR, once its receive is
	 * on the recv EVD and its DISCONNECTED on the connection EVD; none
	 * more after the EP is freed.
	 */
	{
		struct kdat_ioc_srq_create sc2 = {};
		struct kdat_ioc_srq_post sp = {};
		struct side s2;
		__u32 sep2, cep2;

		open_side_flags(&s2, "rxe0", KDAT_IA_OPEN_SRQ_EP_BROKEN);
		sc2.ia = s2.ia, sc2.pz = s2.pz, sc2.max_recv_dtos = 4;
		sc2.max_recv_iov = 1;
		CHECK(IOC(KDAT_IOC_SRQ_CREATE, &sc2) == DAT_SUCCESS, "srq 2");
		connect_srq_ep(&s2, &c, sc2.srq, 7000 + getpid() % 1000,
			       &sep2, &cep2);
		for (i = 0; i < 2; i++) {
			sp.srq = sc2.srq, sp.nseg = 1, sp.cookie = 200 + i;
			sp.seg[0].lmr_context = s2.lctx;
			sp.seg[0].addr = (uintptr_t)s2.buf + i * 256;
			sp.seg[0].length = 256;
			CHECK(IOC(KDAT_IOC_SRQ_POST, &sp) == DAT_SUCCESS,
			      "srq post");
		}
		post.ep = cep2, post.op = KDAT_POST_SEND, post.nseg = 1;
		post.cookie = 10;
		CHECK(IOC(KDAT_IOC_EP_POST, &post) == DAT_SUCCESS, "send 2");
		e = next_event(&c.ring, c.evd);
		CHECK(e.event_number == DAT_DTO_COMPLETION_EVENT &&
		      e.status == 0 && e.cookie == 10, "send 2 completion");
		CHECK(ring_empty(&s2.aring), "EP_BROKEN while connected");
		CHECK(ep_op(KDAT_IOC_EP_DISCONNECT, cep2,
			    DAT_CLOSE_GRACEFUL_FLAG) == DAT_SUCCESS,
		      "client disconnect 2");
		e = next_event(&s2.aring, s2.aevd);
		CHECK(e.event_number == DAT_ASYNC_ERROR_EP_BROKEN &&
		      e.handle == sep2 && e.reason == DAT_EP_TRANSFER_TO_ERROR,
		      "EP_BROKEN: event %x handle %u (EP %u) reason %u",
		      e.event_number, e.handle, sep2, e.reason);
		/* already there: the receive, then the connection's end */
		CHECK(!ring_empty(&s2.ring), "EP_BROKEN before the receive");
		e = next_event(&s2.ring, s2.evd);
		CHECK(e.event_number == DAT_DTO_COMPLETION_EVENT &&
		      e.handle == sep2 && e.status == 0 && e.length == 5,
		      "receive 2");
		CHECK(!ring_empty(&s2.cring), "EP_BROKEN before DISCONNECTED");
		e = next_event(&s2.cring, s2.cevd);
		CHECK(e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
		      e.handle == sep2, "server disconnected 2 %x",
		      e.event_number);
		e = next_event(&c.cring, c.cevd);
		CHECK(e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
		      e.handle == cep2, "client disconnected 2");
		CHECK(free_obj(sep2, 1 /* EP */) == DAT_SUCCESS, "free sep2");
		CHECK(ring_empty(&s2.aring), "a second EP_BROKEN");
	}
	printf("PASS: abi_srq_ep_broken_after_disconnect\n");
	close(fd);
	return failed;
}
