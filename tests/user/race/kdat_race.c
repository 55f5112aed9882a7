// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kdat_race: hostile-process races against /dev/kdat through the raw ABI
 * (no libdat), in the guest.  Proves the object layer's contract:
 *
 *  - concurrent frees of one ID: exactly one DAT_SUCCESS, the others
 *    DAT_INVALID_HANDLE, and the ID stays invalid (every type, CR through
 *    reject);
 *  - a free racing any other call on the same ID: the free gives
 *    DAT_SUCCESS or DAT_INVALID_STATE (in use; a later free then
 *    succeeds), the other call its normal result or DAT_INVALID_HANDLE,
 *    and a call that starts after a successful free gets
 *    DAT_INVALID_HANDLE; objects are freed exactly once;
 *  - creates racing frees of guessed IDs, IA close racing creates (and
 *    one whose copy out user space stalls at will: the close must not
 *    wait for it), file
 *    close and process death racing in-flight ioctls, poll/evd_wait
 *    racing EVD free, SRQ ops racing real traffic, connect/accept/
 *    disconnect/reset/free racing on one EP (and a disconnect while the
 *    connect resolves, held there by the kernel's fault injection),
 *    concurrent SRQ posts counted
 *    exactly, a forked child refused on its parent's handles and rings,
 *    device removal under a live process, and under sends stalled behind
 *    RNR while frees race it (every send of a surviving EP completes once,
 *    flushed);
 *  - the ioctl size rules (dispatch by number, hdr.size, E2BIG, EINVAL
 *    for non-zero padding).
 *
 * Every case runs in its own child under a deadline and must leave
 * /sys/kernel/debug/kdat/objects at "total 0" (see kdat_harness.h).
 * Nothing sleeps to synchronise: barriers, flags and event rings do; no
 * timing decides a verdict.
 *
 *   kdat_race [SUBSTRING[,SUBSTRING...]]   (only the cases whose names hold one)
 *   env KDAT_RACE_SCALE=<f>     multiply iteration counts (default 1)
 *       KDAT_RACE_DEADLINE=<s>  per-case deadline (default 60)
 *
 * Needs kdat.ko loaded, rxe0 (192.0.2.1) and rxe1 (192.0.2.2) as the rig
 * sets them up, root (device removal, debugfs).
 */
#include "../common/kdat_harness.h"

#include <linux/userfaultfd.h>
#include <sys/mount.h>
#include <sys/stat.h>

static double scale = 1.0;

static int iters(int n)
{
	int v = (int)(n * scale);

	return v < 1 ? 1 : v;
}

#define ALLOW(st, ...) allow_in((st), (const uint32_t[]){ __VA_ARGS__, 0xdead }, 0)

/* Is @st of one of the listed types?  (DAT_SUCCESS is type 0.) */
static bool allow_in(uint32_t st, const uint32_t *types, int unused)
{
	(void)unused;
	if (st == KST_ERRNO)
		return false;
	for (; *types != 0xdead; types++)
		if (ST_TYPE(st) == *types)
			return true;
	return false;
}

#define S_OK	DAT_SUCCESS
#define S_IH	DAT_INVALID_HANDLE
#define S_IS	DAT_INVALID_STATE
#define S_IR	DAT_INSUFFICIENT_RESOURCES
#define S_IP	DAT_INVALID_PARAMETER

/* ======================================================================= */
/* ABI: the ioctl size field                                              */
/* ======================================================================= */

static void case_abi_ioctl_size(void)
{
	int fd = kdat_open();
	struct side s;
	struct kdat_ioc_version v;
	unsigned int sizes[] = { 0, 4, 8, 24, 200, 4096, 0x3fff };
	char bad[1024] = "";
	uint32_t st, srq, ep;
	size_t i;

#define BAD(...)                                                                   \
	do {                                                                       \
		size_t l_ = strlen(bad);                                           \
		if (l_ < sizeof(bad) - 100)                                        \
			snprintf(bad + l_, sizeof(bad) - l_, __VA_ARGS__);         \
	} while (0)

	/* the same number with another _IOC_SIZE, a valid hdr.size: accepted */
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, KDAT_IOC_MAGIC,
					 _IOC_NR(KDAT_IOC_VERSION), sizes[i]);

		if (cmd == KDAT_IOC_VERSION)
			continue;
		memset(&v, 0, sizeof(v));
		st = KIOC(fd, cmd, &v);
		if (st != DAT_SUCCESS || v.abi_version != KDAT_ABI_VERSION)
			BAD("VERSION with _IOC_SIZE %u: %s; ", sizes[i], ST(st));
	}
	open_side(fd, "rxe0", &s);
	{
		struct kdat_ioc_pz_create p = { .ia = s.ia };
		unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, KDAT_IOC_MAGIC,
					 _IOC_NR(KDAT_IOC_PZ_CREATE), 100);

		st = KIOC(fd, cmd, &p);
		if (st != DAT_SUCCESS || !p.pz)
			BAD("PZ_CREATE with _IOC_SIZE 100: %s; ", ST(st));
		else if ((st = k_free(fd, p.pz, KT_PZ)) != DAT_SUCCESS)
			BAD("free of that PZ: %s; ", ST(st));
	}
	{
		struct kdat_ioc_free f = { .handle = s.lmr + 1000, .type = KT_PZ };
		unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, KDAT_IOC_MAGIC,
					 _IOC_NR(KDAT_IOC_FREE), 8);

		st = KIOC(fd, cmd, &f);
		if (!ST_IS(st, S_IH))
			BAD("FREE of a bad ID with _IOC_SIZE 8: %s; ", ST(st));
	}

	/* larger hdr.size: zero trailing bytes accepted, non-zero ones E2BIG */
	{
		struct { struct kdat_ioc_version v; uint8_t extra[64]; } big;

		memset(&big, 0, sizeof(big));
		st = kioc_sz(fd, KDAT_IOC_VERSION, &big, sizeof(big));
		if (st != DAT_SUCCESS || big.v.abi_version != KDAT_ABI_VERSION)
			BAD("larger hdr.size, zero tail: %s; ", ST(st));
		memset(&big, 0, sizeof(big));
		big.extra[63] = 1;
		st = kioc_sz(fd, KDAT_IOC_VERSION, &big, sizeof(big));
		if (st != KST_ERRNO || errno != E2BIG)
			BAD("larger hdr.size, non-zero tail: %s (want E2BIG); ", ST(st));
	}
	{
		struct { struct kdat_ioc_pz_create p; uint8_t extra[16]; } big;

		memset(&big, 0, sizeof(big));
		big.p.ia = s.ia;
		big.extra[3] = 0x80;
		st = kioc_sz(fd, KDAT_IOC_PZ_CREATE, &big, sizeof(big));
		if (st != KST_ERRNO || errno != E2BIG)
			BAD("PZ_CREATE larger hdr.size, non-zero tail: %s (want E2BIG); ",
			    ST(st));
	}
	/* a hdr.size below the header: EINVAL */
	{
		unsigned int small[] = { 0, 4, 7 };

		for (i = 0; i < 3; i++) {
			memset(&v, 0, sizeof(v));
			st = kioc_sz(fd, KDAT_IOC_VERSION, &v, small[i]);
			if (st != KST_ERRNO || errno != EINVAL)
				BAD("hdr.size %u: %s (want EINVAL); ", small[i], ST(st));
		}
	}
	/* a smaller hdr.size (older library): accepted, nothing written past it */
	{
		struct kdat_ioc_pz_create p;

		memset(&p, 0xAA, sizeof(p));
		p.ia = s.ia;
		st = kioc_sz(fd, KDAT_IOC_PZ_CREATE, &p,
			     offsetof(struct kdat_ioc_pz_create, pz));
		if (st != DAT_SUCCESS)
			BAD("PZ_CREATE with hdr.size without the out field: %s; ", ST(st));
		if (p.pz != 0xAAAAAAAAu)
			BAD("the kernel wrote past hdr.size (pz = 0x%x); ", p.pz);
	}

	/* non-zero padding / reserved fields: EINVAL */
	st = k_srq(fd, s.ia, s.pz, 16, &srq, NULL);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	st = k_ep(fd, s.ia, s.pz, s.evd, s.cevd, 0, &ep);
	REQUIRE(st == DAT_SUCCESS, "ep: %s", ST(st));
	{
		struct kdat_ioc_ep_create c = {
			.ia = s.ia, .pz = s.pz, .recv_evd = s.evd,
			.request_evd = s.evd, .connect_evd = s.cevd, .has_attr = 1,
			.attr = { .max_message_size = 4096, .max_request_dtos = 16,
				  .max_request_iov = 1, .max_recv_dtos = 16,
				  .max_recv_iov = 1, .pad = 1 },
		};

		st = KIOC(fd, KDAT_IOC_EP_CREATE, &c);
		if (st != KST_ERRNO || errno != EINVAL)
			BAD("ep_create attr.pad: %s; ", ST(st));
	}
	for (i = 0; i < 5; i++) {
		struct kdat_ioc_ep_connect c = { .ep = ep, .conn_qual = 1,
						 .timeout_us = 1000 };
		struct sockaddr_in sin = { .sin_family = AF_INET };

		sin.sin_addr.s_addr = inet_addr("192.0.2.1");
		memcpy(c.addr, &sin, sizeof(sin));
		if (i == 0)
			c.pad = 1;
		else
			c.pad2[i - 1] = 1;
		st = KIOC(fd, KDAT_IOC_EP_CONNECT, &c);
		if (st != KST_ERRNO || errno != EINVAL)
			BAD("ep_connect %s%zu: %s; ", i ? "pad2[" : "pad", i ? i - 1 : 0,
			    ST(st));
	}
	for (i = 0; i < 2; i++) {
		struct kdat_ioc_ep_post p = { .ep = ep, .op = KDAT_POST_RECV,
					      .nseg = 1 };

		p.seg[0].lmr_context = s.lctx;
		p.seg[0].addr = (uintptr_t)s.buf;
		p.seg[0].length = 64;
		if (i == 0)
			p.pad = 1;
		else
			p.seg[0].pad = 1;
		st = KIOC(fd, KDAT_IOC_EP_POST, &p);
		if (st != KST_ERRNO || errno != EINVAL)
			BAD("ep_post %s: %s; ", i ? "seg[0].pad" : "pad", ST(st));
	}
	{
		struct kdat_ioc_srq_post p = { .srq = srq, .nseg = 1 };

		p.seg[0].lmr_context = s.lctx;
		p.seg[0].addr = (uintptr_t)s.buf;
		p.seg[0].length = 64;
		p.seg[0].pad = 1;
		st = KIOC(fd, KDAT_IOC_SRQ_POST, &p);
		if (st != KST_ERRNO || errno != EINVAL)
			BAD("srq_post seg[0].pad: %s; ", ST(st));
	}
	{
		struct kdat_ioc_evd_post_se p = { .evd = s.swevd, .pad = 1 };

		st = KIOC(fd, KDAT_IOC_EVD_POST_SE, &p);
		if (st != KST_ERRNO || errno != EINVAL)
			BAD("evd_post_se pad: %s; ", ST(st));
	}
	for (i = 0; i < 2; i++) {
		struct kdat_ioc_ep_modify m = { .ep = ep };

		if (i == 0)
			m.pad = 1;
		else
			m.attr.pad = 1;
		st = KIOC(fd, KDAT_IOC_EP_MODIFY, &m);
		if (st != KST_ERRNO || errno != EINVAL)
			BAD("ep_modify %s: %s; ", i ? "attr.pad" : "pad", ST(st));
	}
	{
		struct kdat_ioc_version vp = { .pad = 1 };
		struct kdat_ioc_cr_query cq = { .cr = 1 };

		st = KIOC(fd, KDAT_IOC_VERSION, &vp);
		if (st != KST_ERRNO || errno != EINVAL)
			BAD("version pad: %s; ", ST(st));
		cq.pad[2] = 1;
		st = KIOC(fd, KDAT_IOC_CR_QUERY, &cq);
		if (st != KST_ERRNO || errno != EINVAL)
			BAD("cr_query pad: %s; ", ST(st));
	}
	/* unknown numbers still ENOTTY */
	{
		unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, KDAT_IOC_MAGIC,
					 0x7f, sizeof(v));

		st = KIOC(fd, cmd, &v);
		if (st != KST_ERRNO || errno != ENOTTY)
			BAD("unknown nr 0x7f: %s (want ENOTTY); ", ST(st));
	}
	CHECK(!bad[0], "%s", bad);
	close(fd);
#undef BAD
}

/* ======================================================================= */
/* Concurrent frees of one ID                                              */
/* ======================================================================= */

#define FF_THREADS 4

struct ff {
	int fd;
	uint32_t id, type;
	pthread_barrier_t start, end;
	atomic_uint go;			/* iteration the threads may start */
	bool stop;
	uint32_t st[FF_THREADS];
	unsigned int spin[FF_THREADS];
};

static void *ff_thread(void *arg)
{
	struct ff *f = ((void **)arg)[0];
	int i = (int)(intptr_t)((void **)arg)[1];

	for (unsigned int it = 1;; it++) {
		pthread_barrier_wait(&f->start);
		if (f->stop)
			break;
		/* all spin on one flag: a barrier's wake-ups come one by one */
		while (atomic_load(&f->go) != it)
			;
		spin(f->spin[i]);
		f->st[i] = k_free(f->fd, f->id, f->type);
		pthread_barrier_wait(&f->end);
	}
	return NULL;
}

/* Creates one object of the case's type; 0 if the iteration is skipped. */
typedef uint32_t (*ff_make_fn)(struct side *s, struct side *c, void *ctx);
/* Checks the ID is invalid for other calls too (optional). */
typedef void (*ff_after_fn)(struct side *s, uint32_t id, void *ctx);

static void free_free(uint32_t type, int n, ff_make_fn make, ff_after_fn after,
		      void *ctx, bool need_client)
{
	int fd = kdat_open();
	struct side s, c;
	struct ff f = { .fd = fd, .type = type };
	pthread_t t[FF_THREADS];
	void *args[FF_THREADS][2];
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	int it, i;

	open_side(fd, "rxe0", &s);
	if (need_client)
		open_side(fd, "rxe1", &c);
	pthread_barrier_init(&f.start, NULL, FF_THREADS + 1);
	pthread_barrier_init(&f.end, NULL, FF_THREADS + 1);
	for (i = 0; i < FF_THREADS; i++) {
		args[i][0] = &f;
		args[i][1] = (void *)(intptr_t)i;
		pthread_create(&t[i], NULL, ff_thread, args[i]);
	}
	for (it = 0; it < n && !kr_failed(); it++) {
		int ok = 0, ih = 0;
		uint32_t st;

		f.id = make(&s, need_client ? &c : NULL, ctx);
		if (!f.id)
			break;
		for (i = 0; i < FF_THREADS; i++)
			f.spin[i] = it % 2 ? rnd(&seed) % 300 : 0;
		pthread_barrier_wait(&f.start);
		atomic_store(&f.go, (unsigned int)it + 1);
		pthread_barrier_wait(&f.end);
		for (i = 0; i < FF_THREADS; i++) {
			ok += f.st[i] == DAT_SUCCESS;
			ih += ST_IS(f.st[i], S_IH);
		}
		if (ok != 1 || ih != FF_THREADS - 1) {
			kr_fail("iteration %d: %d concurrent frees of %s %u: %d DAT_SUCCESS, %d DAT_INVALID_HANDLE (%s, %s, %s, %s); want exactly 1 and %d",
				it, FF_THREADS, kt_name[type], f.id, ok, ih, ST(f.st[0]),
				ST(f.st[1]), ST(f.st[2]), ST(f.st[3]), FF_THREADS - 1);
			break;
		}
		st = k_free(fd, f.id, type);
		CHECK(ST_IS(st, S_IH), "iteration %d: a later free of freed %s %u: %s (want INVALID_HANDLE)",
		      it, kt_name[type], f.id, ST(st));
		if (after)
			after(&s, f.id, ctx);
	}
	f.stop = true;
	pthread_barrier_wait(&f.start);
	for (i = 0; i < FF_THREADS; i++)
		pthread_join(t[i], NULL);
	close(fd);
}

static uint32_t ff_make_pz(struct side *s, struct side *c, void *ctx)
{
	uint32_t id, st = k_pz(s->fd, s->ia, &id);

	(void)c, (void)ctx;
	REQUIRE(st == DAT_SUCCESS, "pz create: %s", ST(st));
	return id;
}

static void ff_after_pz(struct side *s, uint32_t id, void *ctx)
{
	uint32_t lmr, st = k_lmr(s->fd, s->ia, id, s->buf, 4096, &lmr, NULL);

	(void)ctx;
	CHECK(ST_IS(st, S_IH), "LMR create on freed PZ %u: %s (want INVALID_HANDLE)", id, ST(st));
	if (st == DAT_SUCCESS)
		k_free(s->fd, lmr, KT_LMR);
}

static uint32_t ff_make_evd(struct side *s, struct side *c, void *ctx)
{
	uint32_t id, st = k_evd(s->fd, s->ia, 32,
				DAT_EVD_DTO_FLAG | DAT_EVD_SOFTWARE_FLAG, &id, NULL);

	(void)c, (void)ctx;
	REQUIRE(st == DAT_SUCCESS, "evd create: %s", ST(st));
	return id;
}

static void ff_after_evd(struct side *s, uint32_t id, void *ctx)
{
	uint32_t st = k_post_se(s->fd, id, 1);

	(void)ctx;
	CHECK(ST_IS(st, S_IH), "post_se on freed EVD %u: %s (want INVALID_HANDLE)", id, ST(st));
}

static uint32_t ff_make_lmr(struct side *s, struct side *c, void *ctx)
{
	uint32_t id, st = k_lmr(s->fd, s->ia, s->pz, s->buf, 8192, &id, NULL);

	(void)c, (void)ctx;
	REQUIRE(st == DAT_SUCCESS, "lmr create: %s", ST(st));
	return id;
}

static uint32_t ff_make_srq(struct side *s, struct side *c, void *ctx)
{
	uint32_t id, st = k_srq(s->fd, s->ia, s->pz, 16, &id, NULL);

	(void)c, (void)ctx;
	REQUIRE(st == DAT_SUCCESS, "srq create: %s", ST(st));
	return id;
}

static void ff_after_srq(struct side *s, uint32_t id, void *ctx)
{
	struct kdat_ioc_srq_query q;
	uint32_t st = k_srq_query(s->fd, id, &q);

	(void)ctx;
	CHECK(ST_IS(st, S_IH), "query of freed SRQ %u: %s (want INVALID_HANDLE)", id, ST(st));
}

static uint32_t ff_make_ep(struct side *s, struct side *c, void *ctx)
{
	uint32_t id, st = k_ep(s->fd, s->ia, s->pz, s->evd, s->cevd, 0, &id);

	(void)c, (void)ctx;
	REQUIRE(st == DAT_SUCCESS, "ep create: %s", ST(st));
	return id;
}

static void ff_after_ep(struct side *s, uint32_t id, void *ctx)
{
	uint32_t st = k_ep_state(s->fd, id, NULL);

	(void)ctx;
	CHECK(ST_IS(st, S_IH), "status of freed EP %u: %s (want INVALID_HANDLE)", id, ST(st));
}

static uint32_t ff_make_psp(struct side *s, struct side *c, void *ctx)
{
	uint64_t *qual = ctx;
	uint32_t id, st;

	(void)c;
	*qual = next_qual();
	st = k_psp(s->fd, s->ia, s->crevd, *qual, &id);
	REQUIRE(st == DAT_SUCCESS, "psp create: %s", ST(st));
	return id;
}

static void ff_after_psp(struct side *s, uint32_t id, void *ctx)
{
	uint64_t *qual = ctx;
	uint32_t psp, st = k_psp(s->fd, s->ia, s->crevd, *qual, &psp);

	/* the listener went exactly once: its port is free again */
	CHECK(st == DAT_SUCCESS, "PSP on the port of freed PSP %u: %s", id, ST(st));
	if (st == DAT_SUCCESS) {
		st = k_free(s->fd, psp, KT_PSP);
		CHECK(st == DAT_SUCCESS, "free of the new PSP: %s", ST(st));
	}
}

struct cr_ctx {
	uint32_t psp, cep;
	uint64_t qual;
	struct side *c;
};

/* A connection request from a new rxe1 EP: the CR to race on. */
static uint32_t ff_make_cr(struct side *s, struct side *c, void *ctx)
{
	struct cr_ctx *x = ctx;
	struct kdat_uevent e;
	uint32_t st;

	x->c = c;
	if (!x->psp) {
		/* one listener for the whole case, in the case's file */
		st = k_psp(s->fd, s->ia, s->crevd, x->qual, &x->psp);
		REQUIRE(st == DAT_SUCCESS, "psp: %s", ST(st));
	}
	st = k_ep(c->fd, c->ia, c->pz, c->evd, c->cevd, 0, &x->cep);
	REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
	st = k_connect(c->fd, x->cep, x->qual);
	REQUIRE(st == DAT_SUCCESS, "connect: %s", ST(st));
	REQUIRE(kr_next_event(s->fd, &s->crring, s->crevd, 20000000, &e, NULL),
		"no connection request within 20 s");
	REQUIRE(e.event_number == DAT_CONNECTION_REQUEST_EVENT && e.cr,
		"event 0x%x instead of a connection request", e.event_number);
	return e.cr;
}

static void ff_after_cr(struct side *s, uint32_t id, void *ctx)
{
	struct cr_ctx *x = ctx;
	struct kdat_ioc_cr_query q = { .cr = id };
	struct kdat_uevent e;
	uint32_t st = KIOC(s->fd, KDAT_IOC_CR_QUERY, &q);

	CHECK(ST_IS(st, S_IH), "query of rejected CR %u: %s (want INVALID_HANDLE)", id, ST(st));
	/* the client hears the rejection once */
	CHECK(kr_next_event(x->c->fd, &x->c->cring, x->c->cevd, 20000000, &e, NULL),
	      "client EP %u heard nothing of the rejection within 20 s", x->cep);
	CHECK(e.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED ||
	      e.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
	      "client EP %u got event 0x%x after the reject", x->cep, e.event_number);
	st = k_free(x->c->fd, x->cep, KT_EP);
	CHECK(st == DAT_SUCCESS, "client EP free: %s", ST(st));
}

static void case_free_free_pz(void)
{
	free_free(KT_PZ, iters(1000), ff_make_pz, ff_after_pz, NULL, false);
}

static void case_free_free_evd(void)
{
	free_free(KT_EVD, iters(1000), ff_make_evd, ff_after_evd, NULL, false);
}

static void case_free_free_lmr(void)
{
	free_free(KT_LMR, iters(300), ff_make_lmr, NULL, NULL, false);
}

static void case_free_free_srq(void)
{
	free_free(KT_SRQ, iters(1000), ff_make_srq, ff_after_srq, NULL, false);
}

static void case_free_free_ep(void)
{
	free_free(KT_EP, iters(1000), ff_make_ep, ff_after_ep, NULL, false);
}

static void case_free_free_psp(void)
{
	uint64_t qual;

	free_free(KT_PSP, iters(500), ff_make_psp, ff_after_psp, &qual, false);
}

static void case_free_free_cr(void)
{
	struct cr_ctx x = { .qual = next_qual() };

	free_free(KT_CR, iters(100), ff_make_cr, ff_after_cr, &x, true);
}

/* ======================================================================= */
/* A free racing other calls on the same ID                                */
/* ======================================================================= */

#define FO_THREADS 3

struct fo;
/* One call on f->id; checks its own result.  @after: the free had
 * returned DAT_SUCCESS before this call started. */
typedef void (*fo_op_fn)(struct fo *f, int th, uint64_t *rng, bool after);

struct fo {
	int fd;
	struct side s;
	uint32_t type, id;
	uint32_t lctx;			/* LMR case: the raced LMR's context */
	uint32_t srq, ep;		/* LMR case: where its buffers go */
	atomic_bool stop, freed, quit;
	atomic_uint seq[FO_THREADS];	/* odd while holding a user of id */
	int posts[FO_THREADS];
	pthread_barrier_t start, end;
	fo_op_fn op;
	int it;
	uint64_t calls;
};

struct fo_arg {
	struct fo *f;
	int th;
};

static void *fo_thread(void *p)
{
	struct fo_arg *a = p;
	struct fo *f = a->f;
	uint64_t rng = 0x1234567ULL * (a->th + 1) ^ (uint64_t)getpid();

	for (;;) {
		pthread_barrier_wait(&f->start);
		if (atomic_load(&f->quit))
			break;
		while (!atomic_load(&f->stop)) {
			bool after = atomic_load(&f->freed);

			f->op(f, a->th, &rng, after);
			__atomic_fetch_add(&f->calls, 1, __ATOMIC_RELAXED);
		}
		pthread_barrier_wait(&f->end);
	}
	return NULL;
}

/* Check one racing call's status against its normal results. */
static void fo_check(struct fo *f, const char *what, uint32_t st, bool after,
		     bool ok)
{
	if (after && !ST_IS(st, S_IH))
		kr_fail("iteration %d: %s on %s %u started after its free returned DAT_SUCCESS: %s (want INVALID_HANDLE)",
			f->it, what, kt_name[f->type], f->id, ST(st));
	else if (!ok)
		kr_fail("iteration %d: %s on %s %u racing its free: %s",
			f->it, what, kt_name[f->type], f->id, ST(st));
}

/* Hold a user of f->id (@child of @ctype) for a moment, then free it. */
static void fo_hold(struct fo *f, int th, uint64_t *rng, uint32_t child,
		    uint32_t ctype)
{
	uint32_t st;

	atomic_fetch_add(&f->seq[th], 1);	/* odd: holding */
	spin(rnd(rng) % 3000);
	atomic_fetch_add(&f->seq[th], 1);	/* even: about to let go */
	st = k_free(f->fd, child, ctype);
	if (st != DAT_SUCCESS)
		kr_fail("iteration %d: free of %s %u (user of %s %u): %s",
			f->it, kt_name[ctype], child, kt_name[f->type], f->id, ST(st));
}

typedef uint32_t (*fo_make_fn)(struct fo *f);
typedef void (*fo_done_fn)(struct fo *f);

static void free_vs_ops(uint32_t type, int n, fo_make_fn make, fo_op_fn op,
			fo_done_fn done, struct fo *f)
{
	pthread_t t[FO_THREADS];
	struct fo_arg a[FO_THREADS];
	uint64_t rng = 0xabcdef ^ (uint64_t)getpid();
	int i;

	f->type = type;
	f->op = op;
	pthread_barrier_init(&f->start, NULL, FO_THREADS + 1);
	pthread_barrier_init(&f->end, NULL, FO_THREADS + 1);
	for (i = 0; i < FO_THREADS; i++) {
		a[i].f = f;
		a[i].th = i;
		pthread_create(&t[i], NULL, fo_thread, &a[i]);
	}
	for (f->it = 0; f->it < n && !kr_failed(); f->it++) {
		unsigned int s1[FO_THREADS], s2[FO_THREADS];
		uint32_t r1, r2;

		f->id = make(f);
		memset(f->posts, 0, sizeof(f->posts));
		atomic_store(&f->stop, false);
		atomic_store(&f->freed, false);
		pthread_barrier_wait(&f->start);
		spin(rnd(&rng) % 20000);
		for (i = 0; i < FO_THREADS; i++)
			s1[i] = atomic_load(&f->seq[i]);
		r1 = k_free(f->fd, f->id, type);
		for (i = 0; i < FO_THREADS; i++)
			s2[i] = atomic_load(&f->seq[i]);
		if (r1 == DAT_SUCCESS)
			atomic_store(&f->freed, true);
		CHECK(ALLOW(r1, S_OK, S_IS),
		      "iteration %d: free of %s %u racing other calls: %s (want SUCCESS or INVALID_STATE)",
		      f->it, kt_name[type], f->id, ST(r1));
		for (i = 0; i < FO_THREADS; i++)
			CHECK(!(s1[i] == s2[i] && (s1[i] & 1) && r1 == DAT_SUCCESS),
			      "iteration %d: free of %s %u returned DAT_SUCCESS while thread %d held a user of it throughout",
			      f->it, kt_name[type], f->id, i);
		/* let the racers see the outcome for a while */
		spin(rnd(&rng) % 20000);
		atomic_store(&f->stop, true);
		pthread_barrier_wait(&f->end);
		r2 = k_free(f->fd, f->id, type);
		if (r1 == DAT_SUCCESS)
			CHECK(ST_IS(r2, S_IH), "iteration %d: second free of %s %u: %s (want INVALID_HANDLE: freed exactly once)",
			      f->it, kt_name[type], f->id, ST(r2));
		else
			CHECK(r2 == DAT_SUCCESS, "iteration %d: free of %s %u once its racers stopped (the first got %s): %s",
			      f->it, kt_name[type], f->id, ST(r1), ST(r2));
		if (done)
			done(f);
	}
	atomic_store(&f->quit, true);
	pthread_barrier_wait(&f->start);
	for (i = 0; i < FO_THREADS; i++)
		pthread_join(t[i], NULL);
	kr_pass_note("%d iterations, %llu racing calls", f->it,
		     (unsigned long long)f->calls);
	close(f->fd);
}

/* ---- PZ: creates of its LMRs, SRQs and EPs ---- */

static uint32_t fo_make_pz(struct fo *f)
{
	uint32_t id, st = k_pz(f->fd, f->s.ia, &id);

	REQUIRE(st == DAT_SUCCESS, "pz: %s", ST(st));
	return id;
}

static void fo_op_pz(struct fo *f, int th, uint64_t *rng, bool after)
{
	uint32_t child = 0, st, ctype;
	const char *what;

	switch ((th + rnd(rng)) % 3) {
	case 0:
		st = k_lmr(f->fd, f->s.ia, f->id, f->s.buf, 4096, &child, NULL);
		ctype = KT_LMR, what = "lmr_create";
		break;
	case 1:
		st = k_srq(f->fd, f->s.ia, f->id, 8, &child, NULL);
		ctype = KT_SRQ, what = "srq_create";
		break;
	default:
		st = k_ep(f->fd, f->s.ia, f->id, f->s.evd, f->s.cevd, 0, &child);
		ctype = KT_EP, what = "ep_create";
		break;
	}
	fo_check(f, what, st, after, ALLOW(st, S_OK, S_IH));
	if (st == DAT_SUCCESS)
		fo_hold(f, th, rng, child, ctype);
}

static void case_free_vs_ops_pz(void)
{
	static struct fo f;

	f.fd = kdat_open();
	open_side(f.fd, "rxe0", &f.s);
	free_vs_ops(KT_PZ, iters(500), fo_make_pz, fo_op_pz, NULL, &f);
}

/* ---- EVD: waits, wakes, software events, poll, EPs feeding it ---- */

static struct kring fo_evd_ring;

static uint32_t fo_make_evd(struct fo *f)
{
	uint32_t id, st = k_evd(f->fd, f->s.ia, 16,
				DAT_EVD_DTO_FLAG | DAT_EVD_SOFTWARE_FLAG |
				DAT_EVD_CONNECTION_FLAG, &id, &fo_evd_ring);

	REQUIRE(st == DAT_SUCCESS, "evd: %s", ST(st));
	return id;
}

static void fo_done_evd(struct fo *f)
{
	/* the pages outlive the EVD while mapped: reading them is harmless */
	volatile uint32_t x = fo_evd_ring.h->tail;

	(void)x;
	(void)f;
	kr_unmap(&fo_evd_ring);
}

static void fo_op_evd(struct fo *f, int th, uint64_t *rng, bool after)
{
	uint32_t st, child;
	int k = (int)(rnd(rng) % 2);

	if (th == 0 && k == 0) {
		struct kdat_ioc_evd_wait w = { .evd = f->id, .threshold = 1,
					       .timeout_us = 1000 };

		st = KIOC(f->fd, KDAT_IOC_EVD_WAIT, &w);
		fo_check(f, "evd_wait", st, after,
			 ALLOW(st, S_OK, DAT_TIMEOUT_EXPIRED, S_IH));
	} else if (th == 0) {
		struct pollfd p = { .fd = f->fd, .events = POLLIN };
		int r = poll(&p, 1, 0);

		CHECK(r >= 0, "poll: %s", strerror(errno));
	} else if (th == 1 && k == 0) {
		/* a wake, or a busy poll running the CQ's poller */
		bool poll = rnd(rng) % 2;
		struct kdat_ioc_evd_ctl c = {
			.evd = f->id,
			.op = poll ? KDAT_EVD_CTL_POLL : KDAT_EVD_CTL_WAKE
		};

		st = KIOC(f->fd, KDAT_IOC_EVD_CTL, &c);
		fo_check(f, poll ? "evd_ctl POLL" : "evd_ctl WAKE", st, after,
			 ALLOW(st, S_OK, S_IH));
	} else if (th == 1) {
		st = k_post_se(f->fd, f->id, 42);
		fo_check(f, "evd_post_se", st, after,
			 ALLOW(st, S_OK, DAT_QUEUE_FULL, S_IH));
	} else {
		st = k_ep(f->fd, f->s.ia, f->s.pz, f->id, f->id, 0, &child);
		fo_check(f, "ep_create on it", st, after, ALLOW(st, S_OK, S_IH));
		if (st == DAT_SUCCESS)
			fo_hold(f, th, rng, child, KT_EP);
	}
}

static void case_free_vs_ops_evd(void)
{
	static struct fo f;

	f.fd = kdat_open();
	open_side(f.fd, "rxe0", &f.s);
	free_vs_ops(KT_EVD, iters(500), fo_make_evd, fo_op_evd, fo_done_evd, &f);
}

/* ---- LMR: posts naming its context (by context, not ID) ---- */

static uint32_t fo_make_lmr(struct fo *f)
{
	uint32_t id, st = k_lmr(f->fd, f->s.ia, f->s.pz, f->s.buf + 8192, 8192,
				&id, &f->lctx);

	REQUIRE(st == DAT_SUCCESS, "lmr: %s", ST(st));
	return id;
}

static void fo_done_lmr(struct fo *f)
{
	/* keep the SRQ from filling up for good: a fresh one each time */
	uint32_t st = k_free(f->fd, f->srq, KT_SRQ);

	CHECK(st == DAT_SUCCESS, "srq free: %s", ST(st));
	st = k_srq(f->fd, f->s.ia, f->s.pz, 64, &f->srq, NULL);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
}

static void fo_op_lmr(struct fo *f, int th, uint64_t *rng, bool after)
{
	char *a = f->s.buf + 8192 + (rnd(rng) % 64) * 64;
	uint32_t st;

	if (th == 1)
		st = k_ep_post(f->fd, f->ep, KDAT_POST_RECV, f->lctx, a, 64, 1);
	else
		st = k_srq_post(f->fd, f->srq, f->lctx, a, 64, 1);
	/* after the free its context names nothing: never a success */
	if (after && st == DAT_SUCCESS)
		kr_fail("iteration %d: post naming the context of LMR %u after its free returned DAT_SUCCESS succeeded",
			f->it, f->id);
	else
		CHECK(ALLOW(st, S_OK, S_IR, S_IP, DAT_PROTECTION_VIOLATION),
		      "iteration %d: %s naming LMR %u's context racing its free: %s",
		      f->it, th == 1 ? "ep_post recv" : "srq_post", f->id, ST(st));
}

static void case_free_vs_ops_lmr(void)
{
	static struct fo f;
	uint32_t st;

	f.fd = kdat_open();
	open_side(f.fd, "rxe0", &f.s);
	st = k_srq(f.fd, f.s.ia, f.s.pz, 64, &f.srq, NULL);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	st = k_ep(f.fd, f.s.ia, f.s.pz, f.s.evd, f.s.cevd, 0, &f.ep);
	REQUIRE(st == DAT_SUCCESS, "ep: %s", ST(st));
	free_vs_ops(KT_LMR, iters(200), fo_make_lmr, fo_op_lmr, fo_done_lmr, &f);
}

/* ---- SRQ: query, post, resize, set_lw, kick, EPs on it ---- */

static uint32_t fo_make_srq(struct fo *f)
{
	uint32_t id, st = k_srq(f->fd, f->s.ia, f->s.pz, 64, &id, NULL);

	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	return id;
}

static void fo_op_srq(struct fo *f, int th, uint64_t *rng, bool after)
{
	struct kdat_ioc_srq_query q;
	uint32_t st, child;
	int k = (int)(rnd(rng) % 3);

	if (th == 0 && k == 0) {
		st = k_srq_query(f->fd, f->id, &q);
		fo_check(f, "srq_query", st, after, ALLOW(st, S_OK, S_IH));
		if (st == DAT_SUCCESS)
			CHECK(q.available_dto_count >= 0 &&
			      q.available_dto_count <= q.outstanding_dto_count &&
			      q.outstanding_dto_count <= q.max_recv_dtos,
			      "srq_query racing free: available %d outstanding %d max %d",
			      q.available_dto_count, q.outstanding_dto_count,
			      q.max_recv_dtos);
	} else if (th == 0) {
		st = k_srq_op(f->fd, KDAT_IOC_SRQ_KICK, f->id, 0);
		fo_check(f, "srq_kick", st, after, ALLOW(st, S_OK, S_IH));
	} else if (th == 1 && k == 0 && f->posts[th] < 16) {
		f->posts[th]++;
		st = k_srq_post(f->fd, f->id, f->s.lctx, f->s.buf, 64, 7);
		fo_check(f, "srq_post", st, after, ALLOW(st, S_OK, S_IR, S_IH));
	} else if (th == 1 && k == 1) {
		st = k_srq_op(f->fd, KDAT_IOC_SRQ_RESIZE, f->id,
			      rnd(rng) % 2 ? 64 : 128);
		fo_check(f, "srq_resize", st, after, ALLOW(st, S_OK, S_IH));
	} else if (th == 1) {
		st = k_srq_op(f->fd, KDAT_IOC_SRQ_SET_LW, f->id,
			      (int)(rnd(rng) % 8));
		fo_check(f, "srq_set_lw", st, after, ALLOW(st, S_OK, S_IH));
	} else {
		st = k_ep(f->fd, f->s.ia, f->s.pz, f->s.evd, f->s.cevd, f->id,
			  &child);
		fo_check(f, "ep_create on it", st, after, ALLOW(st, S_OK, S_IH));
		if (st == DAT_SUCCESS)
			fo_hold(f, th, rng, child, KT_EP);
	}
}

static void case_free_vs_ops_srq(void)
{
	static struct fo f;

	f.fd = kdat_open();
	open_side(f.fd, "rxe0", &f.s);
	free_vs_ops(KT_SRQ, iters(500), fo_make_srq, fo_op_srq, NULL, &f);
}

/* ---- EP: query, status, posts, disconnect, reset, connect ---- */

static uint32_t fo_make_ep(struct fo *f)
{
	uint32_t id, st = k_ep(f->fd, f->s.ia, f->s.pz, f->s.evd, f->s.cevd, 0,
			       &id);

	REQUIRE(st == DAT_SUCCESS, "ep: %s", ST(st));
	return id;
}

static void fo_done_ep(struct fo *f)
{
	/* forget the connection events of the freed EPs */
	__atomic_store_n(&f->s.cring.h->head,
			 __atomic_load_n(&f->s.cring.h->tail, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&f->s.ring.h->head,
			 __atomic_load_n(&f->s.ring.h->tail, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
}

static void fo_op_ep(struct fo *f, int th, uint64_t *rng, bool after)
{
	struct kdat_ioc_ep_query q = {};
	struct kdat_ioc_ep_op o = {};
	uint32_t st;
	int k = (int)(rnd(rng) % 3);

	if (th == 0 && k == 0) {
		q.ep = f->id;
		st = KIOC(f->fd, KDAT_IOC_EP_QUERY, &q);
		fo_check(f, "ep_query", st, after, ALLOW(st, S_OK, S_IH));
	} else if (th == 0) {
		st = k_ep_state(f->fd, f->id, NULL);
		fo_check(f, "ep_status", st, after, ALLOW(st, S_OK, S_IH));
	} else if (th == 1 && k == 0) {
		st = k_ep_post(f->fd, f->id, KDAT_POST_RECV, f->s.lctx,
			       f->s.buf, 64, 3);
		fo_check(f, "ep_post recv", st, after,
			 ALLOW(st, S_OK, S_IR, S_IS, S_IH));
	} else if (th == 1 && k == 1) {
		o.ep = f->id;
		o.value = rnd(rng) % 2 ? DAT_CLOSE_ABRUPT_FLAG :
					 DAT_CLOSE_GRACEFUL_FLAG;
		st = KIOC(f->fd, KDAT_IOC_EP_DISCONNECT, &o);
		fo_check(f, "ep_disconnect", st, after, ALLOW(st, S_OK, S_IS, S_IH));
	} else if (th == 1) {
		o.ep = f->id;
		st = KIOC(f->fd, KDAT_IOC_EP_RESET, &o);
		fo_check(f, "ep_reset", st, after, ALLOW(st, S_OK, S_IS, S_IH));
	} else if (k == 0) {
		/* nobody listens there: rejected, asynchronously */
		st = k_connect(f->fd, f->id, 9);
		fo_check(f, "ep_connect", st, after, ALLOW(st, S_OK, S_IS, S_IH));
	} else {
		struct kdat_ioc_ep_modify m = { .ep = f->id,
						.mask = DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE };

		m.attr.max_message_size = 2048;
		st = KIOC(f->fd, KDAT_IOC_EP_MODIFY, &m);
		fo_check(f, "ep_modify", st, after,
			 ALLOW(st, S_OK, S_IS, S_IP, S_IH));
	}
}

static void case_free_vs_ops_ep(void)
{
	static struct fo f;

	f.fd = kdat_open();
	open_side(f.fd, "rxe0", &f.s);
	free_vs_ops(KT_EP, iters(400), fo_make_ep, fo_op_ep, fo_done_ep, &f);
}

/* ---- helpers for the connection cases ---- */

static bool ev_terminal(uint32_t num)
{
	return num == DAT_CONNECTION_EVENT_PEER_REJECTED ||
	       num == DAT_CONNECTION_EVENT_NON_PEER_REJECTED ||
	       num == DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR ||
	       num == DAT_CONNECTION_EVENT_DISCONNECTED ||
	       num == DAT_CONNECTION_EVENT_BROKEN ||
	       num == DAT_CONNECTION_EVENT_TIMED_OUT ||
	       num == DAT_CONNECTION_EVENT_UNREACHABLE;
}

/* Take every event waiting on @r (no wait); reject the CRs among them. */
static int drain_crs(struct side *s, int fd)
{
	struct kdat_uevent e;
	int n = 0;

	while (kr_next_event(fd, &s->crring, s->crevd, 0, &e, NULL)) {
		if (e.event_number == DAT_CONNECTION_REQUEST_EVENT && e.cr) {
			uint32_t st = k_free(fd, e.cr, KT_CR);

			CHECK(st == DAT_SUCCESS, "reject of CR %u: %s", e.cr, ST(st));
			n++;
		}
	}
	return n;
}

/* ---- PSP: its free racing incoming connection requests ---- */

struct psp_conn {
	struct side *c;
	pthread_barrier_t *b;
	uint64_t qual;
	uint32_t eps[2];
};

static void *psp_connector(void *p)
{
	struct psp_conn *x = p;
	uint32_t st;
	int i;

	for (i = 0; i < 2; i++) {
		st = k_ep(x->c->fd, x->c->ia, x->c->pz, x->c->evd, x->c->cevd, 0,
			  &x->eps[i]);
		REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
	}
	pthread_barrier_wait(x->b);
	for (i = 0; i < 2; i++) {
		st = k_connect(x->c->fd, x->eps[i], x->qual);
		CHECK(st == DAT_SUCCESS, "connect racing the PSP's free: %s", ST(st));
	}
	return NULL;
}

static void case_free_vs_ops_psp(void)
{
	int fd = kdat_open(), it, n = iters(60);
	uint64_t rng = 77 ^ (uint64_t)getpid();
	struct side s, c;

	open_side(fd, "rxe0", &s);
	open_side(fd, "rxe1", &c);
	for (it = 0; it < n && !kr_failed(); it++) {
		struct psp_conn x[2];
		pthread_barrier_t b;
		pthread_t t[2];
		struct kdat_uevent e;
		uint32_t psp, r1, r2, st;
		int i, j, done = 0;
		double end;

		uint64_t qual = next_qual();

		st = k_psp(fd, s.ia, s.crevd, qual, &psp);
		REQUIRE(st == DAT_SUCCESS, "psp: %s", ST(st));
		pthread_barrier_init(&b, NULL, 3);
		for (i = 0; i < 2; i++) {
			x[i].c = &c;
			x[i].b = &b;
			x[i].qual = qual;
			pthread_create(&t[i], NULL, psp_connector, &x[i]);
		}
		pthread_barrier_wait(&b);
		if (it % 2) {
			/* let the first request in, race the others */
			if (kr_next_event(fd, &s.crring, s.crevd, 5000000, &e, NULL) &&
			    e.event_number == DAT_CONNECTION_REQUEST_EVENT) {
				st = k_free(fd, e.cr, KT_CR);
				CHECK(st == DAT_SUCCESS, "reject: %s", ST(st));
			}
		} else {
			spin(rnd(&rng) % 50000);
		}
		r1 = k_free(fd, psp, KT_PSP);
		CHECK(ALLOW(r1, S_OK, S_IS),
		      "iteration %d: free of PSP %u racing incoming requests: %s",
		      it, psp, ST(r1));
		for (i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&b);
		r2 = k_free(fd, psp, KT_PSP);
		if (r1 == DAT_SUCCESS)
			CHECK(ST_IS(r2, S_IH), "iteration %d: second PSP free: %s", it, ST(r2));
		else
			CHECK(r2 == DAT_SUCCESS, "iteration %d: PSP free after the race: %s", it, ST(r2));
		/* every client hears one final answer; the CRs are rejected */
		end = now_s() + 60;
		while (done < 4 && now_s() < end && !kr_failed()) {
			drain_crs(&s, fd);
			while (kr_next_event(fd, &c.cring, c.cevd, 10000, &e, NULL)) {
				for (i = 0; i < 2; i++)
					for (j = 0; j < 2; j++)
						if (e.handle == x[i].eps[j]) {
							CHECK(ev_terminal(e.event_number),
							      "client EP %u: event 0x%x, never accepted",
							      e.handle, e.event_number);
							done++;
						}
			}
		}
		CHECK(done == 4, "iteration %d: only %d of 4 client EPs heard the end of their connect within 60 s",
		      it, done);
		for (i = 0; i < 2; i++)
			for (j = 0; j < 2; j++) {
				st = k_free(fd, x[i].eps[j], KT_EP);
				CHECK(st == DAT_SUCCESS, "client EP free: %s", ST(st));
			}
	}
	kr_pass_note("%d iterations", it);
	close(fd);
}

/* ---- CR: reject (free) racing accept and query ---- */

struct cr_race {
	int fd;
	uint32_t cr, sep;
	pthread_barrier_t b;
	atomic_bool stop, freed;
	uint32_t acc;
	unsigned int spin_acc;
	int it;
};

static void *cr_querier(void *p)
{
	struct cr_race *x = p;

	pthread_barrier_wait(&x->b);
	while (!atomic_load(&x->stop)) {
		bool after = atomic_load(&x->freed);
		struct kdat_ioc_cr_query q = { .cr = x->cr };
		uint32_t st = KIOC(x->fd, KDAT_IOC_CR_QUERY, &q);

		if (after)
			CHECK(ST_IS(st, S_IH), "iteration %d: cr_query after the reject returned DAT_SUCCESS: %s",
			      x->it, ST(st));
		else
			CHECK(ALLOW(st, S_OK, S_IH), "iteration %d: cr_query racing reject/accept: %s",
			      x->it, ST(st));
	}
	return NULL;
}

static void *cr_acceptor(void *p)
{
	struct cr_race *x = p;

	pthread_barrier_wait(&x->b);
	spin(x->spin_acc);
	x->acc = k_accept(x->fd, x->cr, x->sep);
	return NULL;
}

static void case_free_vs_ops_cr(void)
{
	int fd = kdat_open(), it, n = iters(100), accepted = 0;
	uint64_t rng = 99 ^ (uint64_t)getpid(), qual = next_qual();
	struct side s, c;
	uint32_t psp, st;

	open_side(fd, "rxe0", &s);
	open_side(fd, "rxe1", &c);
	st = k_psp(fd, s.ia, s.crevd, qual, &psp);
	REQUIRE(st == DAT_SUCCESS, "psp: %s", ST(st));
	for (it = 0; it < n && !kr_failed(); it++) {
		static struct cr_race x;
		struct kdat_uevent e;
		pthread_t tq, ta;
		uint32_t cep, r1, r2;
		bool cdone = false;
		double end;

		memset(&x, 0, sizeof(x));
		x.fd = fd;
		x.it = it;
		st = k_ep(fd, c.ia, c.pz, c.evd, c.cevd, 0, &cep);
		REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
		st = k_ep(fd, s.ia, s.pz, s.evd, s.cevd, 0, &x.sep);
		REQUIRE(st == DAT_SUCCESS, "server ep: %s", ST(st));
		st = k_connect(fd, cep, qual);
		REQUIRE(st == DAT_SUCCESS, "connect: %s", ST(st));
		REQUIRE(kr_next_event(fd, &s.crring, s.crevd, 20000000, &e, NULL) &&
			e.event_number == DAT_CONNECTION_REQUEST_EVENT,
			"no connection request");
		x.cr = e.cr;
		x.spin_acc = rnd(&rng) % 20000;
		pthread_barrier_init(&x.b, NULL, 3);
		pthread_create(&tq, NULL, cr_querier, &x);
		pthread_create(&ta, NULL, cr_acceptor, &x);
		pthread_barrier_wait(&x.b);
		spin(rnd(&rng) % 20000);
		r1 = k_free(fd, x.cr, KT_CR);
		if (r1 == DAT_SUCCESS)
			atomic_store(&x.freed, true);
		pthread_join(ta, NULL);
		atomic_store(&x.stop, true);
		pthread_join(tq, NULL);
		pthread_barrier_destroy(&x.b);
		CHECK(ALLOW(x.acc, S_OK, S_IH), "iteration %d: accept racing reject: %s",
		      it, ST(x.acc));
		CHECK(ALLOW(r1, S_OK, S_IS, S_IH), "iteration %d: reject racing accept: %s",
		      it, ST(r1));
		CHECK(!(r1 == DAT_SUCCESS && x.acc == DAT_SUCCESS),
		      "iteration %d: CR %u both accepted and rejected", it, x.cr);
		CHECK(!(ST_IS(r1, S_IH) && x.acc != DAT_SUCCESS),
		      "iteration %d: reject of CR %u said INVALID_HANDLE but the accept failed too (%s)",
		      it, x.cr, ST(x.acc));
		r2 = k_free(fd, x.cr, KT_CR);
		if (r1 == DAT_SUCCESS || x.acc == DAT_SUCCESS)
			CHECK(ST_IS(r2, S_IH), "iteration %d: reject of a consumed CR: %s", it, ST(r2));
		else
			CHECK(r2 == DAT_SUCCESS, "iteration %d: reject after the race: %s", it, ST(r2));
		accepted += x.acc == DAT_SUCCESS;
		/* the client hears the outcome once */
		end = now_s() + 30;
		while (!cdone && now_s() < end) {
			if (!kr_next_event(fd, &c.cring, c.cevd, 100000, &e, NULL) ||
			    e.handle != cep)
				continue;
			cdone = true;
			if (x.acc == DAT_SUCCESS)
				CHECK(e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED,
				      "iteration %d: accepted, but the client got 0x%x",
				      it, e.event_number);
			else
				CHECK(ev_terminal(e.event_number),
				      "iteration %d: rejected, but the client got 0x%x",
				      it, e.event_number);
		}
		CHECK(cdone, "iteration %d: the client heard nothing within 30 s", it);
		st = k_free(fd, cep, KT_EP);
		CHECK(st == DAT_SUCCESS, "client ep free: %s", ST(st));
		st = k_free(fd, x.sep, KT_EP);
		CHECK(st == DAT_SUCCESS, "server ep free: %s", ST(st));
		fo_done_ep(&(struct fo){ .s = s });
	}
	kr_pass_note("%d iterations, %d accepted", it, accepted);
	close(fd);
}

/* ======================================================================= */
/* Creates racing frees of guessed IDs                                     */
/* ======================================================================= */

#define GC_MAX 8192
static const uint32_t gc_types[] = { KT_PZ, KT_EVD, KT_LMR, KT_SRQ, KT_EP,
				     KT_PSP, KT_CR };
#define GC_NTYPES 7

struct gc {
	int fd;
	struct side s;
	int n;
	atomic_uint last;
	atomic_bool done;
	uint32_t cid[GC_MAX], ctype[GC_MAX];
	atomic_int nc;
	uint32_t gid[GC_MAX], gtype[GC_MAX];
	atomic_int ng;
	atomic_ullong guesses;
};

static void *gc_creator(void *p)
{
	struct gc *g = p;
	int i;

	for (i = 0; i < g->n && !kr_failed(); i++) {
		uint32_t type = gc_types[i % 6], id = 0, st;
		unsigned long long g0 = atomic_load(&g->guesses);

		/* the guessers are at work on the next IDs before each create */
		while (atomic_load(&g->guesses) < g0 + 4 && !kr_failed())
			;

		switch (type) {
		case KT_PZ:
			st = k_pz(g->fd, g->s.ia, &id);
			break;
		case KT_EVD:
			st = k_evd(g->fd, g->s.ia, 8, DAT_EVD_SOFTWARE_FLAG, &id, NULL);
			break;
		case KT_LMR:
			st = k_lmr(g->fd, g->s.ia, g->s.pz, g->s.buf, 4096, &id, NULL);
			break;
		case KT_SRQ:
			st = k_srq(g->fd, g->s.ia, g->s.pz, 8, &id, NULL);
			break;
		case KT_EP:
			st = k_ep(g->fd, g->s.ia, g->s.pz, g->s.evd, g->s.cevd, 0, &id);
			break;
		default:
			st = k_psp(g->fd, g->s.ia, g->s.crevd, next_qual(), &id);
			break;
		}
		/* the guessers only touch IDs above the setup's: no reason to fail */
		if (st != DAT_SUCCESS) {
			kr_fail("create %d (%s) racing guessed frees: %s", i,
				kt_name[type], ST(st));
			break;
		}
		int k = atomic_fetch_add(&g->nc, 1);
		g->cid[k] = id;
		g->ctype[k] = type;
		if (id > atomic_load(&g->last))
			atomic_store(&g->last, id);
	}
	atomic_store(&g->done, true);
	return NULL;
}

struct gc_arg {
	struct gc *g;
	uint32_t base;
	uint64_t rng;
};

static void gc_try(struct gc *g, uint32_t id, uint32_t type)
{
	uint32_t st = k_free(g->fd, id, type);

	atomic_fetch_add(&g->guesses, 1);
	if (st == DAT_SUCCESS) {
		int k = atomic_fetch_add(&g->ng, 1);

		g->gid[k] = id;
		g->gtype[k] = type;
	} else if (!ALLOW(st, S_IH, S_IS)) {
		kr_fail("guessed free of %s %u: %s", kt_name[type], id, ST(st));
	}
}

static void *gc_guesser(void *p)
{
	struct gc_arg *a = p;
	struct gc *g = a->g;
	unsigned int loops = 0;

	while (!atomic_load(&g->done) && !kr_failed()) {
		uint32_t last = atomic_load(&g->last), id, lo;

		if (last < a->base)
			last = a->base;
		/* the next IDs, in any type: hit the create in flight */
		for (id = last + 1; id <= last + 2; id++)
			gc_try(g, id, gc_types[rnd(&a->rng) % GC_NTYPES]);
		if (++loops % 8)
			continue;
		/* and now and then the recent ones, every type */
		lo = last > a->base + 8 ? last - 8 : a->base + 1;
		for (id = lo; id <= last + 1; id++)
			for (int t = 0; t < GC_NTYPES; t++)
				gc_try(g, id, gc_types[t]);
	}
	return NULL;
}

static void case_create_vs_guessed_free(void)
{
	static struct gc g;
	struct gc_arg a[2];
	pthread_t tc, tg[2];
	uint32_t base, maxid = 0;
	int created[16] = {}, guessed[16] = {}, final[16] = {};
	int i, t;
	bool dup = false;

	g.fd = kdat_open();
	g.n = iters(1500);
	if (g.n > GC_MAX)
		g.n = GC_MAX;
	open_side(g.fd, "rxe0", &g.s);
	/* the highest setup ID: make and free one PZ to find the frontier */
	REQUIRE(k_pz(g.fd, g.s.ia, &base) == DAT_SUCCESS, "pz");
	REQUIRE(k_free(g.fd, base, KT_PZ) == DAT_SUCCESS, "pz free");
	base--;		/* IDs above this one are the race's (reused or not) */
	atomic_store(&g.last, base);
	for (i = 0; i < 2; i++) {
		a[i].g = &g;
		a[i].base = base;
		a[i].rng = 0x51ed ^ (uint64_t)getpid() * (i + 3);
		pthread_create(&tg[i], NULL, gc_guesser, &a[i]);
	}
	pthread_create(&tc, NULL, gc_creator, &g);
	pthread_join(tc, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(tg[i], NULL);

	/* every object made is freed exactly once: by a guess or now */
	for (i = 0; i < g.nc; i++) {
		created[g.ctype[i]]++;
		if (g.cid[i] > maxid)
			maxid = g.cid[i];
		for (int j = 0; j < i && !dup; j++)
			dup = g.cid[j] == g.cid[i];
	}
	for (i = 0; i < g.ng; i++) {
		guessed[g.gtype[i]]++;
		if (g.gid[i] > maxid)
			maxid = g.gid[i];
		if (!dup) {
			int j;

			for (j = 0; j < g.nc; j++)
				if (g.cid[j] == g.gid[i] && g.ctype[j] == g.gtype[i])
					break;
			CHECK(j < g.nc,
			      "a guessed free of %s %u succeeded, but no create returned that ID and type (an object visible before its create committed?)",
			      kt_name[g.gtype[i]], g.gid[i]);
		}
		for (int j = 0; j < i; j++)
			CHECK(!(g.gid[j] == g.gid[i] && g.gtype[j] == g.gtype[i]) || dup,
			      "%s %u freed twice by guesses", kt_name[g.gtype[i]], g.gid[i]);
	}
	/* free what is left, children first */
	for (t = 0; t < GC_NTYPES; t++)
		for (uint32_t id = base + 1; id <= maxid + 64; id++) {
			uint32_t st = k_free(g.fd, id, gc_types[t]);

			if (st == DAT_SUCCESS)
				final[gc_types[t]]++;
		}
	for (t = 0; t < GC_NTYPES; t++) {
		uint32_t ty = gc_types[t];

		CHECK(created[ty] == guessed[ty] + final[ty],
		      "%s: %d created, %d freed by guesses, %d left at the end (want created == guessed + left)",
		      kt_name[ty], created[ty], guessed[ty], final[ty]);
	}
	if (!dup)
		for (i = 0; i < g.nc; i++) {
			/* the per-ID form: still invalid now */
			uint32_t st = k_free(g.fd, g.cid[i], g.ctype[i]);

			CHECK(ST_IS(st, S_IH), "%s %u still there after the cleanup: %s",
			      kt_name[g.ctype[i]], g.cid[i], ST(st));
		}
	kr_pass_note("%d creates, %d guessed frees succeeded of %llu", g.nc,
		     g.ng, (unsigned long long)g.guesses);
	close(g.fd);
}

/* ======================================================================= */
/* IA close racing creates on it                                           */
/* ======================================================================= */

static void side_unmap(struct side *s)
{
	kr_unmap(&s->aring);
	kr_unmap(&s->ring);
	kr_unmap(&s->cring);
	kr_unmap(&s->crring);
	kr_unmap(&s->swring);
	free(s->buf);
	s->buf = NULL;
}

struct iac {
	struct side s;
	pthread_barrier_t b;
	atomic_bool stop, closed;
	uint32_t cl_st;
	unsigned int cl_spin;
	int it;
	atomic_int made;
	/* IDs made (checked invalid afterwards) */
	uint32_t ids[3][256], types[3][256];
	int nids[3];
};

struct iac_arg {
	struct iac *x;
	int th;
};

static void *iac_creator(void *p)
{
	struct iac_arg *a = p;
	struct iac *x = a->x;
	struct side *s = &x->s;
	uint64_t rng = (uint64_t)getpid() * 31 + a->th;

	pthread_barrier_wait(&x->b);
	while (!atomic_load(&x->stop)) {
		bool after = atomic_load(&x->closed);
		uint32_t id = 0, st, type = gc_types[rnd(&rng) % 6];

		switch (type) {
		case KT_PZ:
			st = k_pz(s->fd, s->ia, &id);
			break;
		case KT_EVD:
			st = k_evd(s->fd, s->ia, 8, DAT_EVD_DTO_FLAG, &id, NULL);
			break;
		case KT_LMR:
			st = k_lmr(s->fd, s->ia, s->pz, s->buf, 4096, &id, NULL);
			break;
		case KT_SRQ:
			st = k_srq(s->fd, s->ia, s->pz, 8, &id, NULL);
			break;
		case KT_EP:
			st = k_ep(s->fd, s->ia, s->pz, s->evd, s->cevd, 0, &id);
			break;
		default:
			st = k_psp(s->fd, s->ia, s->crevd, next_qual(), &id);
			break;
		}
		if (after && st == DAT_SUCCESS)
			kr_fail("iteration %d: %s create started after IA close returned DAT_SUCCESS succeeded",
				x->it, kt_name[type]);
		else
			CHECK(ALLOW(st, S_OK, S_IH), "iteration %d: %s create racing IA close: %s",
			      x->it, kt_name[type], ST(st));
		if (st == DAT_SUCCESS && x->nids[a->th] < 256) {
			x->ids[a->th][x->nids[a->th]] = id;
			x->types[a->th][x->nids[a->th]++] = type;
			atomic_fetch_add(&x->made, 1);
		}
	}
	return NULL;
}

static void *iac_closer(void *p)
{
	struct iac *x = p;
	struct kdat_ioc_ia_close c = { .ia = x->s.ia, .flags = DAT_CLOSE_ABRUPT_FLAG };

	pthread_barrier_wait(&x->b);
	spin(x->cl_spin);
	x->cl_st = KIOC(x->s.fd, KDAT_IOC_IA_CLOSE, &c);
	if (x->cl_st == DAT_SUCCESS)
		atomic_store(&x->closed, true);
	return NULL;
}

static void case_ia_close_vs_creates(void)
{
	int it, n = iters(150), i;
	uint64_t rng = 5 ^ (uint64_t)getpid();
	long made = 0;

	for (it = 0; it < n && !kr_failed(); it++) {
		static struct iac x;
		struct iac_arg a[3];
		pthread_t t[3], tcl;
		struct kdat_ioc_ia_close c = { .flags = DAT_CLOSE_ABRUPT_FLAG };
		uint32_t r1, r2, r3;
		long left;
		int fd = kdat_open(), ok;

		memset(&x, 0, sizeof(x));
		x.it = it;
		open_side(fd, "rxe0", &x.s);
		c.ia = x.s.ia;
		pthread_barrier_init(&x.b, NULL, 5);
		for (i = 0; i < 3; i++) {
			a[i].x = &x;
			a[i].th = i;
			pthread_create(&t[i], NULL, iac_creator, &a[i]);
		}
		x.cl_spin = rnd(&rng) % 100000;
		pthread_create(&tcl, NULL, iac_closer, &x);
		pthread_barrier_wait(&x.b);
		spin(rnd(&rng) % 100000);
		r1 = KIOC(fd, KDAT_IOC_IA_CLOSE, &c);
		if (r1 == DAT_SUCCESS)
			atomic_store(&x.closed, true);
		pthread_join(tcl, NULL);
		r2 = x.cl_st;
		spin(rnd(&rng) % 50000);
		atomic_store(&x.stop, true);
		for (i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&x.b);
		ok = (r1 == DAT_SUCCESS) + (r2 == DAT_SUCCESS);
		CHECK(ALLOW(r1, S_OK, S_IS, S_IH) && ALLOW(r2, S_OK, S_IS, S_IH) && ok <= 1,
		      "iteration %d: two abrupt IA closes racing creates: %s and %s (want at most one SUCCESS, others INVALID_HANDLE or INVALID_STATE)",
		      it, ST(r1), ST(r2));
		CHECK(!(ok == 0 && (ST_IS(r1, S_IH) || ST_IS(r2, S_IH))),
		      "iteration %d: IA close said INVALID_HANDLE but no close succeeded (%s, %s)",
		      it, ST(r1), ST(r2));
		r3 = KIOC(fd, KDAT_IOC_IA_CLOSE, &c);
		if (ok)
			CHECK(ST_IS(r3, S_IH), "iteration %d: IA close after a successful one: %s",
			      it, ST(r3));
		else
			CHECK(r3 == DAT_SUCCESS, "iteration %d: IA close once the creates stopped: %s",
			      it, ST(r3));
		/* everything of the IA went with it, without closing the file */
		left = objects_left(5.0);
		CHECK(left == 0, "iteration %d: %ld objects left after the IA close (file still open; %d made during the race)",
		      it, left, atomic_load(&x.made));
		for (i = 0; i < 3; i++)
			for (int j = 0; j < x.nids[i]; j++) {
				uint32_t st = k_free(fd, x.ids[i][j], x.types[i][j]);

				CHECK(ST_IS(st, S_IH), "iteration %d: %s %u made during the race survived the IA close: %s",
				      it, kt_name[x.types[i][j]], x.ids[i][j], ST(st));
			}
		made += atomic_load(&x.made);
		side_unmap(&x.s);
		close(fd);
	}
	kr_pass_note("%d iterations, %ld objects made in the races", it, made);
}

/*
 * Turn a fault switch on @fd (open for writing) to @val; false if it
 * cannot.  The kernel turns it off again when the file that turned it
 * on is closed, so a case that dies leaves nothing armed.
 */
static bool fault_set(int fd, int val)
{
	char b[16];
	int n = snprintf(b, sizeof(b), "%d\n", val);

	return pwrite(fd, b, (size_t)n, 0) == n;
}

/* ======================================================================= */
/* A create whose copy out user space stalls                               */
/* ======================================================================= */

/*
 * A PZ create's answer goes to a page that userfaultfd keeps
 * write-protected until the test lets it go: its copy out stalls, as user
 * space can make it stall for as long as it likes (userfaultfd, FUSE).
 * The fault message says when the create is stalled there.  An abrupt IA
 * close meanwhile runs inside the section device removal waits for: it
 * must not wait for the stalled create (before, it waited for the IA use
 * the create held until its commit, so device removal and module unload
 * waited for the process).  The close takes the new PZ down with the
 * rest, and the ID the create returns once let go finds nothing.
 */
struct stall {
	int fd;
	struct kdat_ioc_pz_create *arg;	/* in the write-protected page */
	int ret, err;
};

static void *stall_create(void *p)
{
	struct stall *x = p;

	x->ret = ioctl(x->fd, KDAT_IOC_PZ_CREATE, x->arg);
	x->err = errno;
	return NULL;
}

/* Write-protect (@wp) or release the page at @page through @uffd. */
static int stall_protect(int uffd, void *page, bool wp)
{
	struct uffdio_writeprotect w = {
		.range = { .start = (uintptr_t)page,
			   .len = (uint64_t)sysconf(_SC_PAGESIZE) },
		.mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &w);
}

static void case_ia_close_vs_create_stalled_in_copy_out(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct kdat_ioc_ia_close c = { .flags = DAT_CLOSE_ABRUPT_FLAG };
	struct pollfd pfd;
	struct uffd_msg msg;
	struct stall x = {};
	struct side s;
	pthread_t t;
	uint32_t st;
	char *page;
	int uffd;

	x.fd = kdat_open();
	open_side(x.fd, "rxe0", &s);
	page = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(page != MAP_FAILED, "mmap: %s", strerror(errno));
	x.arg = (void *)page;
	x.arg->hdr.size = sizeof(*x.arg);	/* the page is present now */
	x.arg->ia = s.ia;
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	REQUIRE(uffd >= 0, "userfaultfd: %s (the rig's kernels have it)",
		strerror(errno));
	REQUIRE(!ioctl(uffd, UFFDIO_API, &api), "UFFDIO_API: %s",
		strerror(errno));
	reg.range.start = (uintptr_t)page;
	reg.range.len = (uint64_t)psz;
	REQUIRE(!ioctl(uffd, UFFDIO_REGISTER, &reg), "UFFDIO_REGISTER: %s",
		strerror(errno));
	REQUIRE(!stall_protect(uffd, page, true), "write-protect: %s",
		strerror(errno));

	pthread_create(&t, NULL, stall_create, &x);
	/* the create's copy out faulted on the page: it is stalled there */
	pfd.fd = uffd;
	pfd.events = POLLIN;
	REQUIRE(poll(&pfd, 1, -1) == 1 &&
		read(uffd, &msg, sizeof(msg)) == (ssize_t)sizeof(msg),
		"no fault message: %s", strerror(errno));
	REQUIRE(msg.event == UFFD_EVENT_PAGEFAULT &&
		(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) &&
		(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE),
		"fault message event %u flags 0x%llx, not a write to the protected page",
		msg.event, (unsigned long long)msg.arg.pagefault.flags);

	/* a hang here is the bug: the harness's deadline fails the case */
	c.ia = s.ia;
	st = KIOC(x.fd, KDAT_IOC_IA_CLOSE, &c);
	CHECK(st == DAT_SUCCESS,
	      "abrupt IA close while a create's copy out is stalled: %s",
	      ST(st));

	REQUIRE(!stall_protect(uffd, page, false), "release the page: %s",
		strerror(errno));
	pthread_join(t, NULL);
	CHECK(x.ret == 0, "the stalled create's ioctl: %s", strerror(x.err));
	CHECK(x.arg->hdr.status == DAT_SUCCESS && x.arg->pz,
	      "the stalled create: %s, pz %u", ST(x.arg->hdr.status),
	      x.arg->pz);
	st = k_free(x.fd, x.arg->pz, KT_PZ);
	CHECK(ST_IS(st, S_IH),
	      "the PZ created as its IA closed outlived the close: free gave %s",
	      ST(st));
	CHECK(objects_left(5.0) == 0, "objects left after the IA close");
	close(uffd);
	munmap(page, psz);
	side_unmap(&s);
	close(x.fd);
}

/* ======================================================================= */
/* File close and process death racing in-flight ioctls                    */
/* ======================================================================= */

struct hammer {
	struct side *s;
	uint32_t srq, ep;
	pthread_barrier_t *b;	/* NULL: no start line */
	atomic_bool *stop;
	int th;
	long calls;
};

/* One random call on s's objects; its status, KST_ERRNO with errno. */
static uint32_t hammer_one(struct hammer *h, uint64_t *rng)
{
	struct side *s = h->s;
	uint32_t st, id;

	switch (rnd(rng) % 9) {
	case 0: {
		struct kdat_ioc_ia_query q = { .ia = s->ia };

		return KIOC(s->fd, KDAT_IOC_IA_QUERY, &q);
	}
	case 1:
		st = k_pz(s->fd, s->ia, &id);
		if (st == DAT_SUCCESS)
			k_free(s->fd, id, KT_PZ);
		return st;
	case 2: {
		struct kdat_ioc_evd_wait w = { .evd = s->swevd, .threshold = 1,
					       .timeout_us = 2000 };

		return KIOC(s->fd, KDAT_IOC_EVD_WAIT, &w);
	}
	case 3:
		return k_srq_post(s->fd, h->srq, s->lctx, s->buf, 64, 1);
	case 4: {
		struct kdat_ioc_srq_query q;

		return k_srq_query(s->fd, h->srq, &q);
	}
	case 5: {
		struct kdat_ioc_ep_query q = { .ep = h->ep };

		return KIOC(s->fd, KDAT_IOC_EP_QUERY, &q);
	}
	case 6:
		return k_post_se(s->fd, s->swevd, 1);
	case 7:
		st = k_lmr(s->fd, s->ia, s->pz, s->buf, 8192, &id, NULL);
		if (st == DAT_SUCCESS)
			k_free(s->fd, id, KT_LMR);
		return st;
	default:
		st = k_evd(s->fd, s->ia, 8, DAT_EVD_DTO_FLAG, &id, NULL);
		if (st == DAT_SUCCESS)
			k_free(s->fd, id, KT_EVD);
		return st;
	}
}

static void *hammer_thread(void *p)
{
	struct hammer *h = p;
	uint64_t rng = (uint64_t)getpid() * 7919 + h->th;

	if (h->b)
		pthread_barrier_wait(h->b);
	while (!h->stop || !atomic_load(h->stop)) {
		uint32_t st = hammer_one(h, &rng);

		__atomic_fetch_add(&h->calls, 1, __ATOMIC_RELAXED);
		if (st == KST_ERRNO) {
			if (errno == EBADF)
				break;	/* the file is closed: done */
			kr_fail("ioctl racing the file's close: %s", strerror(errno));
			break;
		}
	}
	return NULL;
}

static void case_file_close_vs_ioctls(void)
{
	int it, n = iters(60), i;
	uint64_t rng = 11 ^ (uint64_t)getpid();
	long calls = 0;

	for (it = 0; it < n && !kr_failed(); it++) {
		struct hammer h[4];
		pthread_barrier_t b;
		pthread_t t[4];
		struct side s;
		uint32_t srq, ep, st;
		long left;
		int fd = kdat_open();

		open_side(fd, "rxe0", &s);
		st = k_srq(fd, s.ia, s.pz, 64, &srq, NULL);
		REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
		st = k_ep(fd, s.ia, s.pz, s.evd, s.cevd, 0, &ep);
		REQUIRE(st == DAT_SUCCESS, "ep: %s", ST(st));
		pthread_barrier_init(&b, NULL, 5);
		for (i = 0; i < 4; i++) {
			h[i] = (struct hammer){ .s = &s, .srq = srq, .ep = ep,
						.b = &b, .th = i };
			pthread_create(&t[i], NULL, hammer_thread, &h[i]);
		}
		pthread_barrier_wait(&b);
		{
			/* close while calls are in flight: after 0 to 63 of them */
			long want = (long)(rnd(&rng) % 64), sum;

			do {
				sum = 0;
				for (i = 0; i < 4; i++)
					sum += __atomic_load_n(&h[i].calls, __ATOMIC_RELAXED);
			} while (sum < want);
		}
		close(fd);
		for (i = 0; i < 4; i++) {
			pthread_join(t[i], NULL);
			calls += h[i].calls;
		}
		pthread_barrier_destroy(&b);
		/* the mappings hold the file too: the release runs at the last */
		side_unmap(&s);
		left = objects_left(10.0);
		CHECK(left == 0, "iteration %d: %ld objects left after the file's close and its last ioctl and mapping",
		      it, left);
	}
	kr_pass_note("%d closes, %ld racing calls", it, calls);
}

static void case_process_kill_vs_ioctls(void)
{
	int it, n = iters(30);
	uint64_t rng = 13 ^ (uint64_t)getpid();

	for (it = 0; it < n && !kr_failed(); it++) {
		int p[2], status;
		pid_t pid;
		char c;
		long left;

		REQUIRE(!pipe(p), "pipe");
		pid = fork();
		REQUIRE(pid >= 0, "fork");
		if (pid == 0) {
			static struct hammer h[4];
			static struct side s;
			pthread_t t[4];
			uint32_t srq, ep;
			int fd, i;

			close(kr_result_fd);
			kr_result_fd = -1;
			close(p[0]);
			fd = kdat_open();
			open_side(fd, "rxe0", &s);
			if (k_srq(fd, s.ia, s.pz, 64, &srq, NULL) ||
			    k_ep(fd, s.ia, s.pz, s.evd, s.cevd, 0, &ep))
				_exit(2);
			for (i = 0; i < 4; i++) {
				h[i] = (struct hammer){ .s = &s, .srq = srq,
							.ep = ep, .th = i };
				pthread_create(&t[i], NULL, hammer_thread, &h[i]);
			}
			/* ready once calls are flowing */
			while (__atomic_load_n(&h[0].calls, __ATOMIC_RELAXED) +
			       __atomic_load_n(&h[3].calls, __ATOMIC_RELAXED) < 8)
				;
			if (write(p[1], "r", 1) != 1)
				_exit(3);
			for (;;)
				pause();
		}
		close(p[1]);
		if (read(p[0], &c, 1) != 1) {
			waitpid(pid, &status, 0);
			kr_fail("iteration %d: the victim died before its threads ran (status 0x%x)",
				it, status);
			close(p[0]);
			break;
		}
		close(p[0]);
		spin(rnd(&rng) % 300000);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "iteration %d: the victim ended with status 0x%x before the kill", it, status);
		left = objects_left(10.0);
		CHECK(left == 0, "iteration %d: %ld objects left after a process died in the middle of its ioctls",
		      it, left);
	}
	kr_pass_note("%d kills", it);
}

/* ======================================================================= */
/* poll() and evd_wait racing EVD free                                     */
/* ======================================================================= */

struct pw {
	int fd;
	uint32_t evd;
	struct kring *ring;
	atomic_bool stop, entering;
	pthread_barrier_t b;
	uint32_t st;
	int pr;
	long polls;
};

static void *pw_poller(void *p)
{
	struct pw *x = p;

	pthread_barrier_wait(&x->b);
	while (!atomic_load(&x->stop)) {
		struct pollfd q = { .fd = x->fd, .events = POLLIN };

		if (poll(&q, 1, 0) < 0)
			kr_fail("poll racing EVD free: %s", strerror(errno));
		x->polls++;
	}
	return NULL;
}

/* Blocks in poll until the software event main posts after the free. */
static void *pw_blocking_poller(void *p)
{
	struct pw *x = p;
	struct pollfd q = { .fd = x->fd, .events = POLLIN };

	pthread_barrier_wait(&x->b);
	x->pr = poll(&q, 1, 20000);
	return NULL;
}

static void case_poll_vs_evd_free(void)
{
	int fd = kdat_open(), it, n = iters(600), i;
	uint64_t rng = 17 ^ (uint64_t)getpid();
	static struct pw x;
	struct side s;
	long polls = 0;

	open_side(fd, "rxe0", &s);
	x.fd = fd;
	for (it = 0; it < n && !kr_failed(); it++) {
		pthread_t t[3];
		struct kring r;
		uint32_t r1, r2, st;

		st = k_evd(fd, s.ia, 8, DAT_EVD_SOFTWARE_FLAG, &x.evd, &r);
		REQUIRE(st == DAT_SUCCESS, "evd: %s", ST(st));
		if (it % 2) {
			/* a pending event: poll reads this EVD's ring */
			st = k_post_se(fd, x.evd, 5);
			CHECK(st == DAT_SUCCESS, "post_se: %s", ST(st));
		}
		atomic_store(&x.stop, false);
		pthread_barrier_init(&x.b, NULL, 4);
		pthread_create(&t[0], NULL, pw_poller, &x);
		pthread_create(&t[1], NULL, pw_poller, &x);
		pthread_create(&t[2], NULL, pw_blocking_poller, &x);
		pthread_barrier_wait(&x.b);
		spin(rnd(&rng) % 50000);
		r1 = k_free(fd, x.evd, KT_EVD);
		CHECK(ALLOW(r1, S_OK, S_IS), "iteration %d: EVD free racing poll: %s", it, ST(r1));
		atomic_store(&x.stop, true);
		/* wake the blocking poller through another EVD */
		st = k_post_se(fd, s.swevd, 6);
		CHECK(st == DAT_SUCCESS, "post_se: %s", ST(st));
		for (i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&x.b);
		CHECK(x.pr == 1, "iteration %d: blocking poll returned %d (want 1: an event was posted)",
		      it, x.pr);
		__atomic_store_n(&s.swring.h->head, s.swring.h->tail, __ATOMIC_RELEASE);
		r2 = k_free(fd, x.evd, KT_EVD);
		if (r1 == DAT_SUCCESS)
			CHECK(ST_IS(r2, S_IH), "iteration %d: second EVD free: %s", it, ST(r2));
		else
			CHECK(r2 == DAT_SUCCESS, "iteration %d: EVD free after the pollers left: %s",
			      it, ST(r2));
		kr_unmap(&r);
		polls += x.polls;
		x.polls = 0;
	}
	kr_pass_note("%d frees, %ld polls", it, polls);
	close(fd);
}

static void *pw_waiter(void *p)
{
	struct pw *x = p;
	uint32_t seq = __atomic_load_n(&x->ring->h->wakes, __ATOMIC_ACQUIRE);
	struct kdat_ioc_evd_wait w = { .evd = x->evd, .threshold = 1,
				       .timeout_us = 20000000,
				       .flags = KDAT_WAIT_SEQ, .wake_seq = seq };

	atomic_store(&x->entering, true);
	x->st = KIOC(x->fd, KDAT_IOC_EVD_WAIT, &w);
	return NULL;
}

static void case_evd_wait_vs_evd_free(void)
{
	int fd = kdat_open(), it, n = iters(500), busy = 0;
	uint64_t rng = 19 ^ (uint64_t)getpid();
	static struct pw x;
	struct side s;

	open_side(fd, "rxe0", &s);
	x.fd = fd;
	for (it = 0; it < n && !kr_failed(); it++) {
		pthread_t t;
		struct kring r;
		uint32_t r1, r2, st;

		st = k_evd(fd, s.ia, 8, DAT_EVD_SOFTWARE_FLAG, &x.evd, &r);
		REQUIRE(st == DAT_SUCCESS, "evd: %s", ST(st));
		x.ring = &r;
		atomic_store(&x.entering, false);
		pthread_create(&t, NULL, pw_waiter, &x);
		while (!atomic_load(&x.entering))
			;
		spin(rnd(&rng) % 100000);
		r1 = k_free(fd, x.evd, KT_EVD);
		CHECK(ALLOW(r1, S_OK, S_IS), "iteration %d: EVD free racing evd_wait: %s", it, ST(r1));
		if (ST_IS(r1, S_IS)) {
			/* a waiter is inside: wake it, then the free goes through */
			busy++;
			if (it % 2) {
				struct kdat_ioc_evd_ctl c = { .evd = x.evd,
							      .op = KDAT_EVD_CTL_WAKE };

				st = KIOC(fd, KDAT_IOC_EVD_CTL, &c);
			} else {
				st = k_post_se(fd, x.evd, 1);
			}
			CHECK(st == DAT_SUCCESS, "iteration %d: waking the waiter of a busy EVD: %s",
			      it, ST(st));
		}
		pthread_join(t, NULL);
		CHECK(ALLOW(x.st, S_OK, S_IH),
		      "iteration %d: evd_wait racing the EVD's free (free said %s): %s%s",
		      it, ST(r1), ST(x.st),
		      ST_IS(x.st, DAT_TIMEOUT_EXPIRED) ? " - slept 20 s through the free" : "");
		r2 = k_free(fd, x.evd, KT_EVD);
		if (r1 == DAT_SUCCESS)
			CHECK(ST_IS(r2, S_IH), "iteration %d: second EVD free: %s", it, ST(r2));
		else
			CHECK(r2 == DAT_SUCCESS, "iteration %d: EVD free once its waiter left: %s",
			      it, ST(r2));
		kr_unmap(&r);
	}
	kr_pass_note("%d frees, %d found a waiter inside", it, busy);
	close(fd);
}

/* ======================================================================= */
/* CNO waits racing triggers, EVD attach/detach/enable and EVD frees       */
/* ======================================================================= */

struct cnorace {
	int fd;
	uint32_t cno;
	atomic_uint evd;	/* the EVD of the moment (may be freed any time) */
	atomic_bool stop;
	atomic_long woke, timeouts, posts, toggles, transient_ih;
	atomic_uint bad_wait, bad_post, bad_toggle;
};

static void *cnorace_waiter(void *p)
{
	struct cnorace *x = p;

	while (!atomic_load(&x->stop)) {
		struct kdat_ioc_cno_wait w = { .cno = x->cno, .timeout_us = 2000 };
		uint32_t st = KIOC(x->fd, KDAT_IOC_CNO_WAIT, &w);

		if (st == DAT_SUCCESS)
			atomic_fetch_add(&x->woke, 1);
		else if (ST_IS(st, DAT_TIMEOUT_EXPIRED))
			atomic_fetch_add(&x->timeouts, 1);
		/* a refused CNO free holds its claim for a moment (object.c) */
		else if (ST_IS(st, S_IH))
			atomic_fetch_add(&x->transient_ih, 1);
		else
			atomic_store(&x->bad_wait, st);
	}
	return NULL;
}

static void *cnorace_poster(void *p)
{
	struct cnorace *x = p;

	while (!atomic_load(&x->stop)) {
		uint32_t st = k_post_se(x->fd, atomic_load(&x->evd), 1);

		/* freed under us, or full: nobody dequeues */
		if (ALLOW(st, S_OK, S_IH, DAT_QUEUE_FULL))
			atomic_fetch_add(&x->posts, 1);
		else
			atomic_store(&x->bad_post, st);
	}
	return NULL;
}

static void *cnorace_toggler(void *p)
{
	struct cnorace *x = p;
	uint64_t rng = 23 ^ (uint64_t)getpid();

	while (!atomic_load(&x->stop)) {
		uint64_t r = rnd(&rng);
		struct kdat_ioc_evd_notify n = {
			.evd = atomic_load(&x->evd),
			.cno = r & 1 ? x->cno : 0,
			.flags = r & 2 ? KDAT_EVD_NOTIFY_ENABLED : 0,
		};
		uint32_t st = KIOC(x->fd, KDAT_IOC_EVD_NOTIFY, &n);

		if (ALLOW(st, S_OK, S_IH))
			atomic_fetch_add(&x->toggles, 1);
		else
			atomic_store(&x->bad_toggle, st);
	}
	return NULL;
}

/*
 * One CNO; a thread waits on it over and over (2 ms timeouts), one posts
 * software events to the EVD of the moment, one attaches, detaches,
 * enables and disables that EVD, while the main thread replaces the EVD
 * (create, attach, free) and tries to free the CNO (refused: an anchor
 * EVD the toggler never touches holds it).  Every answer is one the
 * calls may give (a wait that meets a refused free's claim gets
 * DAT_INVALID_HANDLE, as every call does); nothing is left behind.
 */
static void case_cno_wait_vs_notify_post_free(void)
{
	int fd = kdat_open(), it, n = iters(300), refused = 0;
	static struct cnorace x;
	struct kdat_ioc_cno_create cc = { 0 };
	struct kring ring, old, aring;
	pthread_t tw, tp, tt;
	uint32_t st, evd, anchor;
	struct kdat_ioc_evd_notify an = { .flags = KDAT_EVD_NOTIFY_ENABLED };
	struct side s;

	memset(&x, 0, sizeof(x));
	open_side(fd, "rxe0", &s);
	x.fd = fd;
	cc.ia = s.ia;
	st = KIOC(fd, KDAT_IOC_CNO_CREATE, &cc);
	REQUIRE(st == DAT_SUCCESS, "cno_create: %s", ST(st));
	x.cno = cc.cno;
	st = k_evd(fd, s.ia, 8, DAT_EVD_SOFTWARE_FLAG, &anchor, &aring);
	REQUIRE(st == DAT_SUCCESS, "evd: %s", ST(st));
	an.evd = anchor;
	an.cno = x.cno;
	st = KIOC(fd, KDAT_IOC_EVD_NOTIFY, &an);
	REQUIRE(st == DAT_SUCCESS, "attach: %s", ST(st));
	st = k_evd(fd, s.ia, 8, DAT_EVD_SOFTWARE_FLAG, &evd, &ring);
	REQUIRE(st == DAT_SUCCESS, "evd: %s", ST(st));
	atomic_store(&x.evd, evd);
	pthread_create(&tw, NULL, cnorace_waiter, &x);
	pthread_create(&tp, NULL, cnorace_poster, &x);
	pthread_create(&tt, NULL, cnorace_toggler, &x);
	for (it = 0; it < n && !kr_failed(); it++) {
		uint32_t next, prev = atomic_load(&x.evd);
		struct kdat_ioc_evd_notify nt = { .flags = KDAT_EVD_NOTIFY_ENABLED };

		st = k_evd(fd, s.ia, 8, DAT_EVD_SOFTWARE_FLAG, &next, &old);
		CHECK(st == DAT_SUCCESS, "iteration %d: evd: %s", it, ST(st));
		if (st != DAT_SUCCESS)
			break;
		nt.evd = next;
		nt.cno = x.cno;
		st = KIOC(fd, KDAT_IOC_EVD_NOTIFY, &nt);
		CHECK(st == DAT_SUCCESS, "iteration %d: attach: %s", it, ST(st));
		atomic_store(&x.evd, next);
		st = k_free(fd, x.cno, KDAT_TYPE_CNO);
		CHECK(st == DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE),
		      "iteration %d: CNO free with an EVD attached: %s", it, ST(st));
		refused++;
		/* the old EVD goes; an ioctl inside it makes the free wait a turn */
		do
			st = k_free(fd, prev, KT_EVD);
		while (ST_IS(st, S_IS));
		CHECK(st == DAT_SUCCESS, "iteration %d: EVD free: %s", it, ST(st));
		kr_unmap(&ring);
		ring = old;
	}
	atomic_store(&x.stop, true);
	pthread_join(tw, NULL);
	pthread_join(tp, NULL);
	pthread_join(tt, NULL);
	CHECK(!atomic_load(&x.bad_wait), "cno_wait said %s", ST(atomic_load(&x.bad_wait)));
	CHECK(!atomic_load(&x.bad_post), "post_se said %s", ST(atomic_load(&x.bad_post)));
	CHECK(!atomic_load(&x.bad_toggle), "evd_notify said %s",
	      ST(atomic_load(&x.bad_toggle)));
	/* the EVDs still hold the CNO: free them, then the CNO goes */
	st = k_free(fd, atomic_load(&x.evd), KT_EVD);
	CHECK(st == DAT_SUCCESS, "last EVD free: %s", ST(st));
	kr_unmap(&ring);
	st = k_free(fd, x.cno, KDAT_TYPE_CNO);
	CHECK(st == DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE),
	      "CNO free with the anchor EVD attached: %s", ST(st));
	st = k_free(fd, anchor, KT_EVD);
	CHECK(st == DAT_SUCCESS, "anchor EVD free: %s", ST(st));
	kr_unmap(&aring);
	st = k_free(fd, x.cno, KDAT_TYPE_CNO);
	CHECK(st == DAT_SUCCESS, "CNO free with no EVD and no waiter: %s", ST(st));
	kr_pass_note("%d EVDs replaced, %ld wakes, %ld timeouts, %ld posts, %ld toggles, %d CNO frees refused, %ld transient INVALID_HANDLE waits",
		     it, atomic_load(&x.woke), atomic_load(&x.timeouts),
		     atomic_load(&x.posts), atomic_load(&x.toggles), refused,
		     atomic_load(&x.transient_ih));
	close(fd);
}

/* ======================================================================= */
/* SRQ resize, set_lw, query racing receive completions and SRQ free      */
/* ======================================================================= */

#define TR_BUFS 48
#define TR_SLOT 1024
#define TR_MSG 256

struct traffic {
	int fd;
	struct side s, c;
	uint32_t srq, sep, cep;
	struct kring sring;
	int n;
	atomic_int received, sent;
	atomic_bool done;
	long chaos;
	atomic_long transient_ih;	/* live SRQ said INVALID_HANDLE */
};

/* Re-post slot @i: through the post ring, or the ioctl. */
static void tr_repost(struct traffic *x, uint32_t i, bool ring)
{
	uint32_t st;

	if (ring) {
		uint32_t t = x->sring.h->tail;
		struct kdat_srq_wqe *w = kr_slot(&x->sring, t);

		w->cookie = i;
		w->nseg = 1;
		w->pad = 0;
		w->seg[0].lmr_context = x->s.lctx;
		w->seg[0].pad = 0;
		w->seg[0].addr = (uintptr_t)x->s.buf + i * TR_SLOT;
		w->seg[0].length = TR_SLOT;
		__atomic_exchange_n(&x->sring.h->tail, t + 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&x->sring.h->flags, __ATOMIC_SEQ_CST) &
		    KDAT_RING_NEED_KICK) {
			for (int k = 0; k < 100000; k++) {
				st = k_srq_op(x->fd, KDAT_IOC_SRQ_KICK, x->srq, 0);
				if (!ST_IS(st, S_IH))
					break;
				atomic_fetch_add(&x->transient_ih, 1);
			}
			CHECK(st == DAT_SUCCESS, "kick: %s", ST(st));
		}
		return;
	}
	for (int k = 0; k < 100000; k++) {
		st = k_srq_post(x->fd, x->srq, x->s.lctx, x->s.buf + i * TR_SLOT,
				TR_SLOT, i);
		/*
		 * A shrink to exactly the buffers out: the reap just counted.
		 * INVALID_HANDLE: the contract allows it for a call racing a
		 * free, also one refused (the SRQ's EP keeps it): counted,
		 * and the post tried again.
		 */
		if (ST_IS(st, S_IH))
			atomic_fetch_add(&x->transient_ih, 1);
		else if (!ST_IS(st, S_IR))
			break;
	}
	CHECK(st == DAT_SUCCESS, "srq_post of a reaped buffer: %s", ST(st));
}

static void *tr_receiver(void *p)
{
	struct traffic *x = p;
	struct kdat_uevent e;
	int n = 0;

	while (n < x->n && !kr_failed()) {
		uint32_t st = 0;

		if (!kr_next_event(x->fd, &x->s.ring, x->s.evd, 20000000, &e, &st)) {
			kr_fail("receiver: no completion within 20 s after %d of %d (%s)",
				n, x->n, ST(st));
			break;
		}
		if (e.event_number != DAT_DTO_COMPLETION_EVENT || e.status ||
		    e.srq != x->srq || e.cookie >= TR_BUFS || e.length != TR_MSG) {
			kr_fail("receiver: event 0x%x status %u srq %u cookie %llu length %llu",
				e.event_number, e.status, e.srq,
				(unsigned long long)e.cookie, (unsigned long long)e.length);
			break;
		}
		n++;
		atomic_store(&x->received, n);
		tr_repost(x, (uint32_t)e.cookie, n % 2);
	}
	return NULL;
}

static void *tr_sender(void *p)
{
	struct traffic *x = p;
	struct kdat_uevent e;
	int posted = 0, done = 0;

	while (done < x->n && !kr_failed()) {
		while (posted < x->n && posted - done < 8) {
			uint32_t st = k_ep_post(x->fd, x->cep, KDAT_POST_SEND,
						x->c.lctx, x->c.buf, TR_MSG, posted);

			if (ST_IS(st, S_IR))
				break;
			if (st != DAT_SUCCESS) {
				kr_fail("sender: post %d: %s", posted, ST(st));
				return NULL;
			}
			posted++;
		}
		if (!kr_next_event(x->fd, &x->c.ring, x->c.evd, 20000000, &e, NULL)) {
			kr_fail("sender: no send completion within 20 s (%d done)", done);
			break;
		}
		if (e.event_number != DAT_DTO_COMPLETION_EVENT || e.status) {
			kr_fail("sender: event 0x%x status %u", e.event_number, e.status);
			break;
		}
		done++;
		atomic_store(&x->sent, done);
	}
	return NULL;
}

static void *tr_chaos(void *p)
{
	struct traffic *x = p;
	uint64_t rng = 23 ^ (uint64_t)getpid();
	struct kdat_ioc_srq_query q;
	uint32_t st;

	while (!atomic_load(&x->done) && !kr_failed()) {
		x->chaos++;
		switch (rnd(&rng) % 5) {
		case 0:
			st = k_srq_query(x->fd, x->srq, &q);
			CHECK(st == DAT_SUCCESS, "query under traffic: %s", ST(st));
			CHECK(q.available_dto_count >= 0 &&
			      q.available_dto_count <= q.outstanding_dto_count &&
			      q.outstanding_dto_count <= TR_BUFS &&
			      q.outstanding_dto_count <= q.max_recv_dtos,
			      "query under traffic: available %d outstanding %d max %d",
			      q.available_dto_count, q.outstanding_dto_count,
			      q.max_recv_dtos);
			break;
		case 1:
			st = k_srq_op(x->fd, KDAT_IOC_SRQ_RESIZE, x->srq,
				      TR_BUFS + (int)(rnd(&rng) % 64));
			CHECK(st == DAT_SUCCESS, "resize under traffic: %s", ST(st));
			break;
		case 2:
			st = k_srq_op(x->fd, KDAT_IOC_SRQ_SET_LW, x->srq,
				      (int)(rnd(&rng) % 16));
			CHECK(st == DAT_SUCCESS, "set_lw under traffic: %s", ST(st));
			break;
		case 3:
			st = k_srq_op(x->fd, KDAT_IOC_SRQ_KICK, x->srq, 0);
			CHECK(st == DAT_SUCCESS, "kick under traffic: %s", ST(st));
			break;
		default:
			/* an EP uses it: refused, nothing breaks */
			st = k_free(x->fd, x->srq, KT_SRQ);
			CHECK(ST_IS(st, S_IS), "free of the SRQ its EP uses, under traffic: %s",
			      ST(st));
			break;
		}
	}
	return NULL;
}

struct tr_final {
	struct traffic *x;
	pthread_barrier_t b;
	atomic_bool ep_free_called;
	uint32_t ep_st, srq_st;
	long tries;
};

static void *tr_ep_freer(void *p)
{
	struct tr_final *f = p;

	pthread_barrier_wait(&f->b);
	atomic_store(&f->ep_free_called, true);
	f->ep_st = k_free(f->x->fd, f->x->sep, KT_EP);
	return NULL;
}

static void *tr_srq_freer(void *p)
{
	struct tr_final *f = p;

	pthread_barrier_wait(&f->b);
	for (f->tries = 0; f->tries < 2000000; f->tries++) {
		bool called = atomic_load(&f->ep_free_called);

		f->srq_st = k_free(f->x->fd, f->x->srq, KT_SRQ);
		if (f->srq_st == DAT_SUCCESS) {
			CHECK(called || atomic_load(&f->ep_free_called),
			      "SRQ freed before its EP's free was called");
			break;
		}
		if (!ST_IS(f->srq_st, S_IS)) {
			kr_fail("SRQ free racing its EP's free: %s", ST(f->srq_st));
			break;
		}
	}
	return NULL;
}

static void case_srq_ops_vs_traffic_and_free(void)
{
	static struct traffic x;
	static struct tr_final f;
	struct kdat_ioc_srq_query q;
	pthread_t tr, ts, tc, t1, t2;
	uint32_t st, i;

	x.fd = kdat_open();
	x.n = iters(5000);
	open_side(x.fd, "rxe0", &x.s);
	open_side(x.fd, "rxe1", &x.c);
	st = k_srq(x.fd, x.s.ia, x.s.pz, 64, &x.srq, &x.sring);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	for (i = 0; i < TR_BUFS; i++) {
		st = k_srq_post(x.fd, x.srq, x.s.lctx, x.s.buf + i * TR_SLOT,
				TR_SLOT, i);
		REQUIRE(st == DAT_SUCCESS, "srq post: %s", ST(st));
	}
	st = k_ep(x.fd, x.c.ia, x.c.pz, x.c.evd, x.c.cevd, 0, &x.cep);
	REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
	x.sep = connect_pair(&x.s, &x.c, x.cep, x.srq, x.s.pz);

	pthread_create(&tr, NULL, tr_receiver, &x);
	pthread_create(&tc, NULL, tr_chaos, &x);
	pthread_create(&ts, NULL, tr_sender, &x);
	pthread_join(ts, NULL);
	pthread_join(tr, NULL);
	atomic_store(&x.done, true);
	pthread_join(tc, NULL);
	if (kr_failed())
		return;
	/* every buffer came back and was re-posted: all on the SRQ again */
	st = k_srq_query(x.fd, x.srq, &q);
	CHECK(st == DAT_SUCCESS && q.available_dto_count == TR_BUFS &&
	      q.outstanding_dto_count == TR_BUFS,
	      "after %d messages: query %s available %d outstanding %d (want %d and %d)",
	      x.n, ST(st), q.available_dto_count, q.outstanding_dto_count,
	      TR_BUFS, TR_BUFS);

	/* the EP's free racing the SRQ's: the SRQ goes only after its EP */
	f.x = &x;
	pthread_barrier_init(&f.b, NULL, 2);
	pthread_create(&t1, NULL, tr_srq_freer, &f);
	pthread_create(&t2, NULL, tr_ep_freer, &f);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK(f.ep_st == DAT_SUCCESS, "EP free racing its SRQ's free: %s", ST(f.ep_st));
	CHECK(f.srq_st == DAT_SUCCESS, "SRQ free never succeeded after its EP's free (%ld tries, last %s)",
	      f.tries, ST(f.srq_st));
	st = k_free(x.fd, x.srq, KT_SRQ);
	CHECK(ST_IS(st, S_IH), "second SRQ free: %s", ST(st));
	kr_pass_note("%d messages, %ld racing SRQ calls, %ld transient INVALID_HANDLE on the live SRQ during refused frees",
		     x.n, x.chaos, atomic_load(&x.transient_ih));
	close(x.fd);
}

/* ======================================================================= */
/* connect, accept, disconnect, reset and free racing on one EP            */
/* ======================================================================= */

#define EPR_MAXSEP 1024

struct epr {
	int fd;
	struct side s, c;
	uint64_t qual;
	atomic_bool stop;
	uint32_t seps[EPR_MAXSEP];
	int nsep, accepts, rejects;
	/* per iteration */
	uint32_t cep;
	pthread_barrier_t b;
	atomic_bool freed;
	uint32_t st[4];
	unsigned int sp[4];
	int it;
};

/* The passive side: accept or reject every request, send on accepts. */
static void *epr_server(void *p)
{
	struct epr *x = p;
	uint64_t rng = 29 ^ (uint64_t)getpid();
	struct kdat_uevent e;

	while (!atomic_load(&x->stop) && !kr_failed()) {
		uint32_t st, sep;

		if (!kr_next_event(x->fd, &x->s.crring, x->s.crevd, 10000, &e, NULL))
			continue;
		if (e.event_number != DAT_CONNECTION_REQUEST_EVENT)
			continue;
		if (rnd(&rng) % 4 == 0 || x->nsep >= EPR_MAXSEP) {
			st = k_free(x->fd, e.cr, KT_CR);
			CHECK(st == DAT_SUCCESS, "server reject: %s", ST(st));
			x->rejects++;
			continue;
		}
		st = k_ep(x->fd, x->s.ia, x->s.pz, x->s.evd, x->s.cevd, 0, &sep);
		REQUIRE(st == DAT_SUCCESS, "server ep: %s", ST(st));
		x->seps[x->nsep++] = sep;
		st = k_accept(x->fd, e.cr, sep);
		/* the client may be gone already: any refusal, but clean */
		CHECK(st != KST_ERRNO, "accept: %s", ST(st));
		if (st != DAT_SUCCESS) {
			/* a refused accept leaves the CR to reject */
			uint32_t r = k_free(x->fd, e.cr, KT_CR);

			CHECK(ALLOW(r, S_OK, S_IH), "reject after a failed accept: %s", ST(r));
			continue;
		}
		x->accepts++;
		/* the peer's traffic, whatever state the client is in */
		for (int i = 0; i < 2; i++) {
			st = k_ep_post(x->fd, sep, KDAT_POST_SEND, x->s.lctx,
				       x->s.buf, 32, i);
			CHECK(st != KST_ERRNO, "server send: %s", ST(st));
		}
		/* and now and then the server hangs up at once */
		if (rnd(&rng) % 3 == 0) {
			struct kdat_ioc_ep_op o = { .ep = sep,
						    .value = DAT_CLOSE_ABRUPT_FLAG };

			st = KIOC(x->fd, KDAT_IOC_EP_DISCONNECT, &o);
			CHECK(ALLOW(st, S_OK, S_IS), "server disconnect: %s", ST(st));
		}
	}
	return NULL;
}

struct epr_arg {
	struct epr *x;
	int th;
};

static void *epr_racer(void *p)
{
	struct epr_arg *a = p;
	struct epr *x = a->x;
	struct kdat_ioc_ep_op o = { .ep = x->cep };
	bool after;
	uint32_t st;

	pthread_barrier_wait(&x->b);
	spin(x->sp[a->th]);
	after = atomic_load(&x->freed);
	switch (a->th) {
	case 0:
		st = k_connect(x->fd, x->cep, x->qual);
		break;
	case 1:
		o.value = x->it % 2 ? DAT_CLOSE_ABRUPT_FLAG : DAT_CLOSE_GRACEFUL_FLAG;
		st = KIOC(x->fd, KDAT_IOC_EP_DISCONNECT, &o);
		break;
	case 2:
		st = KIOC(x->fd, KDAT_IOC_EP_RESET, &o);
		break;
	default:
		st = k_free(x->fd, x->cep, KT_EP);
		if (st == DAT_SUCCESS)
			atomic_store(&x->freed, true);
		break;
	}
	x->st[a->th] = st;
	if (a->th < 3 && after)
		CHECK(ST_IS(st, S_IH), "iteration %d: %s started after the EP's free returned DAT_SUCCESS: %s",
		      x->it, a->th == 0 ? "connect" : a->th == 1 ? "disconnect" : "reset",
		      ST(st));
	return NULL;
}

static void case_ep_connect_accept_disconnect_reset_free(void)
{
	static struct epr x;
	static const char *const names[] = { "connect", "disconnect", "reset", "free" };
	uint64_t rng = 31 ^ (uint64_t)getpid();
	int it, n = iters(150), i;
	pthread_t srv;
	uint32_t psp, st;

	x.fd = kdat_open();
	open_side(x.fd, "rxe0", &x.s);
	open_side(x.fd, "rxe1", &x.c);
	x.qual = next_qual();
	st = k_psp(x.fd, x.s.ia, x.s.crevd, x.qual, &psp);
	REQUIRE(st == DAT_SUCCESS, "psp: %s", ST(st));
	pthread_create(&srv, NULL, epr_server, &x);
	for (it = 0; it < n && !kr_failed(); it++) {
		struct epr_arg a[4];
		pthread_t t[4];
		uint32_t r2;

		x.it = it;
		st = k_ep(x.fd, x.c.ia, x.c.pz, x.c.evd, x.c.cevd, 0, &x.cep);
		REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
		for (i = 0; i < 2; i++) {
			st = k_ep_post(x.fd, x.cep, KDAT_POST_RECV, x.c.lctx,
				       x.c.buf + 256 * i, 256, i);
			CHECK(st == DAT_SUCCESS, "client recv: %s", ST(st));
		}
		atomic_store(&x.freed, false);
		for (i = 0; i < 4; i++)
			x.sp[i] = (unsigned int)(rnd(&rng) % (i == 3 ? 400000 : 200000));
		pthread_barrier_init(&x.b, NULL, 4);
		for (i = 0; i < 4; i++) {
			a[i].x = &x;
			a[i].th = i;
			pthread_create(&t[i], NULL, epr_racer, &a[i]);
		}
		for (i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&x.b);
		CHECK(ALLOW(x.st[0], S_OK, S_IS, S_IH), "iteration %d: connect: %s", it, ST(x.st[0]));
		CHECK(ALLOW(x.st[1], S_OK, S_IS, S_IH), "iteration %d: disconnect: %s", it, ST(x.st[1]));
		CHECK(ALLOW(x.st[2], S_OK, S_IS, S_IH), "iteration %d: reset: %s", it, ST(x.st[2]));
		CHECK(ALLOW(x.st[3], S_OK, S_IS),
		      "iteration %d: free racing connect/disconnect/reset: %s (others: %s %s %s)",
		      it, ST(x.st[3]), ST(x.st[0]), ST(x.st[1]), ST(x.st[2]));
		r2 = k_free(x.fd, x.cep, KT_EP);
		if (x.st[3] == DAT_SUCCESS)
			CHECK(ST_IS(r2, S_IH), "iteration %d: second free: %s", it, ST(r2));
		else
			CHECK(r2 == DAT_SUCCESS, "iteration %d: free after the race: %s", it, ST(r2));
		(void)names;
		/* forget the client's events: its EP is gone */
		__atomic_store_n(&x.c.cring.h->head,
				 __atomic_load_n(&x.c.cring.h->tail, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&x.c.ring.h->head,
				 __atomic_load_n(&x.c.ring.h->tail, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
	}
	atomic_store(&x.stop, true);
	pthread_join(srv, NULL);
	drain_crs(&x.s, x.fd);
	for (i = 0; i < x.nsep; i++) {
		st = k_free(x.fd, x.seps[i], KT_EP);
		CHECK(st == DAT_SUCCESS, "server EP %u free: %s", x.seps[i], ST(st));
	}
	st = k_free(x.fd, psp, KT_PSP);
	CHECK(st == DAT_SUCCESS, "psp free: %s", ST(st));
	kr_pass_note("%d iterations, %d accepts, %d rejects", it, x.accepts, x.rejects);
	close(x.fd);
}

/* ======================================================================= */
/* A disconnect while the connect resolves the address or the route        */
/* ======================================================================= */

/*
 * dat_ep_disconnect on an EP whose connect is still resolving finds no
 * connection to tear down (rdma_disconnect refuses an ID that never sent
 * a request), so it reports DISCONNECTED at once.  The CM handler must
 * then not go on: before, it resolved the route, made a QP and sent the
 * request anyway, so the peer connected, and the consumer got
 * ESTABLISHED after its DISCONNECTED.  The kernel's fault injection
 * (debugfs kdat/fault_cm_hold) parks the handler at ADDR_RESOLVED (1) or
 * ROUTE_RESOLVED (2), so the disconnect lands in that window every time;
 * once the handler is let go and has returned, `rdma resource show
 * cm_id` must show the connect's ID still at that state: no route
 * resolved, no request sent.  (A disconnect that comes just after the
 * handler's last look, as the request goes out: the next case.)
 */
#define CMH_PATH "/sys/kernel/debug/kdat/fault_cm_hold"

/* "<switch> <parked so far> <resumed so far>" */
static bool cmh_read(int *parked, int *resumed)
{
	FILE *f = fopen(CMH_PATH, "r");
	int at, n;

	if (!f)
		return false;
	n = fscanf(f, "%d %d %d", &at, parked, resumed);
	fclose(f);
	return n == 3;
}

/* Until the parked (@which 0) or resumed (1) count reaches @want. */
static void cmh_wait(int which, int want)
{
	int v[2];

	for (;;) {
		REQUIRE(cmh_read(&v[0], &v[1]), "cannot read %s", CMH_PATH);
		if (v[which] >= want)
			return;
		sched_yield();
	}
}

/*
 * Connect @cep to @qual with kdat/fault_cm_hold (open as @ff) at @at;
 * back once its CM handler is parked there.  *@resumed: the resume count
 * before.
 */
static void cmh_connect_parked(int fd, int ff, uint32_t cep, uint64_t qual,
			       int at, int *resumed)
{
	uint32_t st;
	int parked;

	REQUIRE(cmh_read(&parked, resumed), "cannot read %s", CMH_PATH);
	REQUIRE(fault_set(ff, at), "cannot write %s", CMH_PATH);
	st = k_connect(fd, cep, qual);
	REQUIRE(st == DAT_SUCCESS, "connect: %s", ST(st));
	cmh_wait(0, parked + 1);
}

/* The state `rdma resource show cm_id` gives the ID connecting to @qual. */
static bool cm_id_state(uint64_t qual, char *state, size_t n, char *all,
			size_t alln)
{
	char want[64], line[512];
	bool found = false;
	size_t used = 0, len;
	FILE *p;

	snprintf(want, sizeof(want), "dst-addr %s:%llu ", KDAT_SERVER_ADDR,
		 (unsigned long long)qual);
	all[0] = 0;
	p = popen("rdma resource show cm_id 2>&1", "r");
	if (!p)
		return false;
	/* room to end a line with a blank, as the match wants */
	while (fgets(line, sizeof(line) - 1, p)) {
		char *st = strstr(line, " state ");

		len = strlen(line);
		if (used + len < alln) {
			memcpy(all + used, line, len + 1);
			used += len;
		}
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		strcpy(line + len, " ");
		if (!st || !strstr(line, want))
			continue;
		found = sscanf(st, " state %63s", want) == 1;
		if (found)
			snprintf(state, n, "%s", want);
		break;
	}
	pclose(p);
	return found;
}

static void case_ep_disconnect_during_resolution(void)
{
	static const char *const at_state[] = { NULL, "ADDR_RESOLVED",
						"ROUTE_RESOLVED" };
	int fd = kdat_open(), at, resumed, ff;
	struct kdat_ioc_ep_op o = { .value = DAT_CLOSE_ABRUPT_FLAG };
	struct kdat_uevent e;
	uint64_t qual = next_qual();
	struct side s, c;
	uint32_t psp, cep, st, state;
	char cst[64], all[4096];

	open_side(fd, "rxe0", &s);
	open_side(fd, "rxe1", &c);
	st = k_psp(fd, s.ia, s.crevd, qual, &psp);
	REQUIRE(st == DAT_SUCCESS, "psp: %s", ST(st));
	ff = open(CMH_PATH, O_WRONLY | O_CLOEXEC);
	REQUIRE(ff >= 0, "cannot open %s: %s", CMH_PATH, strerror(errno));
	for (at = 1; at <= 2 && !kr_failed(); at++) {
		st = k_ep(fd, c.ia, c.pz, c.evd, c.cevd, 0, &cep);
		REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
		cmh_connect_parked(fd, ff, cep, qual, at, &resumed);

		o.ep = cep;
		st = KIOC(fd, KDAT_IOC_EP_DISCONNECT, &o);
		CHECK(st == DAT_SUCCESS, "disconnect with the handler at %s: %s",
		      at_state[at], ST(st));
		CHECK(kr_next_event(fd, &c.cring, c.cevd, 20000000, &e, NULL) &&
		      e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
		      e.handle == cep,
		      "the disconnect at %s gave event 0x%x (EP %u), not DISCONNECTED",
		      at_state[at], e.event_number, e.handle);

		REQUIRE(fault_set(ff, 0), "cannot write %s", CMH_PATH);
		cmh_wait(1, resumed + 1);
		CHECK(cm_id_state(qual, cst, sizeof(cst), all, sizeof(all)) &&
		      !strcmp(cst, at_state[at]),
		      "the connect's ID went on after a disconnect at %s: rdma resource show cm_id says:\n%s",
		      at_state[at], all);
		CHECK(k_ep_state(fd, cep, &state) == DAT_SUCCESS &&
		      state == DAT_EP_STATE_DISCONNECTED,
		      "EP state %u after the disconnect at %s", state,
		      at_state[at]);
		st = k_free(fd, cep, KT_EP);
		CHECK(st == DAT_SUCCESS, "client EP free: %s", ST(st));
	}
	close(ff);
	CHECK(__atomic_load_n(&s.crring.h->tail, __ATOMIC_ACQUIRE) ==
	      s.crring.h->head, "the server got a connection request");
	st = k_free(fd, psp, KT_PSP);
	CHECK(st == DAT_SUCCESS, "psp free: %s", ST(st));
	side_unmap(&s);
	side_unmap(&c);
	close(fd);
}

/*
 * The window after the handler's last look at the EP: QP made, EP still
 * connecting, the request about to go out (fault_cm_hold 3 parks the
 * handler there until the EP stops connecting).  The disconnect lands
 * in it every time.  The request goes out, since the handler looked
 * first, so the disconnect is one after the request: the client hears
 * DISCONNECTED only once the attempt is over at the CM, here when the
 * server's accept meets the QP the disconnect moved to the error state
 * (the client's CM rejects the REP), and the server's accept ends in an
 * error, never ESTABLISHED.  Before, the disconnect's rdma_disconnect
 * found no IB CM ID yet and reported DISCONNECTED at once: the request
 * went out after the consumer had heard that the attempt was over.
 */
static void case_ep_disconnect_as_the_request_goes_out(void)
{
	int fd = kdat_open(), resumed, ff;
	struct kdat_ioc_ep_op o = { .value = DAT_CLOSE_ABRUPT_FLAG };
	struct kdat_uevent e;
	uint64_t qual = next_qual();
	struct side s, c;
	uint32_t psp, cep, sep, cr, st, state = 0;
	bool got;

	open_side(fd, "rxe0", &s);
	open_side(fd, "rxe1", &c);
	st = k_psp(fd, s.ia, s.crevd, qual, &psp);
	REQUIRE(st == DAT_SUCCESS, "psp: %s", ST(st));
	st = k_ep(fd, c.ia, c.pz, c.evd, c.cevd, 0, &cep);
	REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
	st = k_ep(fd, s.ia, s.pz, s.evd, s.cevd, 0, &sep);
	REQUIRE(st == DAT_SUCCESS, "server ep: %s", ST(st));
	ff = open(CMH_PATH, O_WRONLY | O_CLOEXEC);
	REQUIRE(ff >= 0, "cannot open %s: %s", CMH_PATH, strerror(errno));
	cmh_connect_parked(fd, ff, cep, qual, 3, &resumed);

	/* the EP stops connecting: that lets the parked handler go on */
	o.ep = cep;
	st = KIOC(fd, KDAT_IOC_EP_DISCONNECT, &o);
	CHECK(st == DAT_SUCCESS, "disconnect as the request goes out: %s",
	      ST(st));
	cmh_wait(1, resumed + 1);
	REQUIRE(fault_set(ff, 0), "cannot write %s", CMH_PATH);
	close(ff);

	REQUIRE(kr_next_event(fd, &s.crring, s.crevd, 20000000, &e, NULL) &&
		e.event_number == DAT_CONNECTION_REQUEST_EVENT,
		"the request the handler was sending never reached the server");
	cr = e.cr;
	/* nothing can end the attempt before the server answers */
	CHECK(!kr_next_event(fd, &c.cring, c.cevd, 0, &e, NULL),
	      "the client heard event 0x%x before the request it let out was answered",
	      e.event_number);
	st = k_accept(fd, cr, sep);
	CHECK(st == DAT_SUCCESS, "server accept: %s", ST(st));
	got = kr_next_event(fd, &s.cring, s.cevd, 30000000, &e, NULL);
	CHECK(got && e.handle == sep &&
	      e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED &&
	      ev_terminal(e.event_number),
	      "the server's accept of a request its client had disconnected gave event 0x%x (EP %u%s), not an error",
	      got ? e.event_number : 0, got ? e.handle : 0,
	      got ? "" : ", none in 30 s");
	got = kr_next_event(fd, &c.cring, c.cevd, 30000000, &e, NULL);
	CHECK(got && e.handle == cep &&
	      e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
	      "the client gave event 0x%x (EP %u%s), not DISCONNECTED",
	      got ? e.event_number : 0, got ? e.handle : 0,
	      got ? "" : ", none in 30 s");
	CHECK(!kr_next_event(fd, &c.cring, c.cevd, 0, &e, NULL),
	      "a second client event 0x%x after DISCONNECTED", e.event_number);
	CHECK(k_ep_state(fd, cep, &state) == DAT_SUCCESS &&
	      state == DAT_EP_STATE_DISCONNECTED,
	      "client EP state %u after the disconnect", state);
	st = k_free(fd, cep, KT_EP);
	CHECK(st == DAT_SUCCESS, "client EP free: %s", ST(st));
	st = k_free(fd, sep, KT_EP);
	CHECK(st == DAT_SUCCESS, "server EP free: %s", ST(st));
	st = k_free(fd, psp, KT_PSP);
	CHECK(st == DAT_SUCCESS, "psp free: %s", ST(st));
	side_unmap(&s);
	side_unmap(&c);
	close(fd);
}

/* ======================================================================= */
/* A new QP that takes only part of the receives waiting for it            */
/* ======================================================================= */

/*
 * kdat/fault_new_qp_post: a new QP of an EP without an SRQ takes the first
 * receive waiting in the EP's ring, and the post of the second fails.  The
 * QP then holds a receive that must complete (flushed) before anything
 * may destroy the QP.  Before, the accept or the connect's CM handler
 * drained that QP in place, holding op_lock or the CM ID's handler lock,
 * while the drain's poller runs upcalls that may need either (kdat_test
 * new_qp_post_fails_under_an_upcall_that_takes_the_ep).  Now the EP keeps
 * the QP, in the error state, and its end drains it:
 *
 * - accept: DAT_INTERNAL_ERROR, the EP Disconnected, the client rejected;
 * - connect: the connect returns, and the EP ends NON_PEER_REJECTED; no
 *   request goes out;
 * - either way all three receives complete once, flushed, without a free
 *   or reset: the one the QP took, then the two it never took (an EP
 *   that is Disconnected holds no receive).
 */
#define NQP_PATH "/sys/kernel/debug/kdat/fault_new_qp_post"

/* Post receives 1..3 of 64 bytes to @ep, which has no QP yet. */
static void nqp_post3(struct side *x, uint32_t ep)
{
	uint32_t st;
	int i;

	for (i = 1; i <= 3; i++) {
		st = k_ep_post(x->fd, ep, KDAT_POST_RECV, x->lctx,
			       x->buf + 64 * i, 64, i);
		REQUIRE(st == DAT_SUCCESS, "receive %d before the QP: %s", i,
			ST(st));
	}
}

/*
 * Take the flushed receives of @ep on @x's DTO EVD until @want of them
 * came (20 s each at most); every one flushed, none twice.  Returns the
 * bitmask of the cookies seen.
 */
static unsigned int nqp_flushed(int fd, struct side *x, uint32_t ep,
				int want, unsigned int seen, const char *when)
{
	struct kdat_uevent e;
	int n;

	for (n = 0; n < want; n++) {
		if (!kr_next_event(fd, &x->ring, x->evd, 20000000, &e, NULL)) {
			kr_fail("%s: %d of %d flushed receives came", when, n,
				want);
			break;
		}
		CHECK(e.event_number == DAT_DTO_COMPLETION_EVENT &&
		      e.handle == ep && e.status == DAT_DTO_ERR_FLUSHED &&
		      e.cookie >= 1 && e.cookie <= 3 &&
		      !(seen & 1u << e.cookie),
		      "%s: event 0x%x EP %u status %u cookie %llu (seen 0x%x)",
		      when, e.event_number, e.handle, e.status,
		      (unsigned long long)e.cookie, seen);
		if (e.cookie <= 3)
			seen |= 1u << e.cookie;
	}
	return seen;
}

static void case_new_qp_takes_part_of_the_receives(void)
{
	int fd = kdat_open(), ff;
	struct kdat_uevent e;
	uint64_t qual = next_qual();
	struct side s, c;
	uint32_t psp, cep, sep, st, state = 0;
	unsigned int seen;
	bool got;

	open_side(fd, "rxe0", &s);
	open_side(fd, "rxe1", &c);
	st = k_psp(fd, s.ia, s.crevd, qual, &psp);
	REQUIRE(st == DAT_SUCCESS, "psp: %s", ST(st));
	ff = open(NQP_PATH, O_WRONLY | O_CLOEXEC);
	REQUIRE(ff >= 0, "cannot open %s: %s", NQP_PATH, strerror(errno));
	REQUIRE(fault_set(ff, 1), "cannot write %s", NQP_PATH);

	/* accept */
	st = k_ep(fd, c.ia, c.pz, c.evd, c.cevd, 0, &cep);
	REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
	st = k_ep(fd, s.ia, s.pz, s.evd, s.cevd, 0, &sep);
	REQUIRE(st == DAT_SUCCESS, "server ep: %s", ST(st));
	nqp_post3(&s, sep);
	st = k_connect(fd, cep, qual);
	REQUIRE(st == DAT_SUCCESS, "connect: %s", ST(st));
	REQUIRE(kr_next_event(fd, &s.crring, s.crevd, 20000000, &e, NULL) &&
		e.event_number == DAT_CONNECTION_REQUEST_EVENT,
		"no connection request");
	st = k_accept(fd, e.cr, sep);
	CHECK(ST_IS(st, DAT_INTERNAL_ERROR),
	      "accept whose QP took one of three receives: %s", ST(st));
	CHECK(k_ep_state(fd, sep, &state) == DAT_SUCCESS &&
	      state == DAT_EP_STATE_DISCONNECTED,
	      "server EP state %u after that accept", state);
	got = kr_next_event(fd, &c.cring, c.cevd, 30000000, &e, NULL);
	CHECK(got && e.handle == cep &&
	      e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED &&
	      ev_terminal(e.event_number),
	      "the client of a failed accept heard 0x%x (EP %u%s)",
	      got ? e.event_number : 0, got ? e.handle : 0,
	      got ? "" : ", nothing in 30 s");
	seen = nqp_flushed(fd, &s, sep, 3, 0, "accept");
	CHECK(seen == 0xe, "accept: receives 0x%x of 0xe came", seen);
	st = k_free(fd, sep, KT_EP);
	CHECK(st == DAT_SUCCESS, "server EP free: %s", ST(st));
	CHECK(!kr_next_event(fd, &s.ring, s.evd, 0, &e, NULL),
	      "accept: event 0x%x (cookie %llu) after the free",
	      e.event_number, (unsigned long long)e.cookie);
	st = k_free(fd, cep, KT_EP);
	CHECK(st == DAT_SUCCESS, "client EP free: %s", ST(st));

	/* connect */
	st = k_ep(fd, c.ia, c.pz, c.evd, c.cevd, 0, &cep);
	REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
	nqp_post3(&c, cep);
	st = k_connect(fd, cep, qual);
	CHECK(st == DAT_SUCCESS, "connect: %s", ST(st));
	got = kr_next_event(fd, &c.cring, c.cevd, 30000000, &e, NULL);
	CHECK(got && e.handle == cep &&
	      e.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
	      "a connect whose QP took one of three receives ended with 0x%x (EP %u%s)",
	      got ? e.event_number : 0, got ? e.handle : 0,
	      got ? "" : ", nothing in 30 s");
	seen = nqp_flushed(fd, &c, cep, 3, 0, "connect");
	CHECK(seen == 0xe, "connect: receives 0x%x of 0xe came", seen);
	CHECK(k_ep_state(fd, cep, &state) == DAT_SUCCESS &&
	      state == DAT_EP_STATE_DISCONNECTED,
	      "client EP state %u after that connect", state);
	st = k_free(fd, cep, KT_EP);
	CHECK(st == DAT_SUCCESS, "client EP free: %s", ST(st));
	CHECK(!kr_next_event(fd, &c.ring, c.evd, 0, &e, NULL),
	      "connect: event 0x%x (cookie %llu) after the free",
	      e.event_number, (unsigned long long)e.cookie);
	CHECK(!kr_next_event(fd, &s.crring, s.crevd, 0, &e, NULL),
	      "the failed connect sent a request (event 0x%x)",
	      e.event_number);

	REQUIRE(fault_set(ff, 0), "cannot write %s", NQP_PATH);
	close(ff);
	st = k_free(fd, psp, KT_PSP);
	CHECK(st == DAT_SUCCESS, "psp free: %s", ST(st));
	side_unmap(&s);
	side_unmap(&c);
	close(fd);
}

/* ======================================================================= */
/* Many threads posting to one SRQ: exact counts                           */
/* ======================================================================= */

#define SP_DEPTH 512
#define SP_THREADS 4

struct sp {
	int fd;
	struct side s;
	uint32_t srq;
	struct kring ring;
	pthread_barrier_t b;
	int per_thread, ring_posts;
	atomic_int ok, full;
};

static void *sp_poster(void *p)
{
	struct sp *x = ((void **)p)[0];
	int th = (int)(intptr_t)((void **)p)[1], i;

	pthread_barrier_wait(&x->b);
	for (i = 0; i < x->per_thread; i++) {
		uint32_t st = k_srq_post(x->fd, x->srq, x->s.lctx,
					 x->s.buf + 64 * (i % 512), 64,
					 (uint64_t)th << 32 | i);

		if (st == DAT_SUCCESS)
			atomic_fetch_add(&x->ok, 1);
		else if (ST_IS(st, S_IR))
			atomic_fetch_add(&x->full, 1);
		else
			kr_fail("concurrent srq_post: %s", ST(st));
	}
	return NULL;
}

/* The single producer of the post ring, kicking now and then. */
static void *sp_ringer(void *p)
{
	struct sp *x = ((void **)p)[0];
	int i;

	pthread_barrier_wait(&x->b);
	for (i = 0; i < x->ring_posts; i++) {
		uint32_t t = x->ring.h->tail, h;
		struct kdat_srq_wqe *w;

		h = __atomic_load_n(&x->ring.h->head, __ATOMIC_ACQUIRE);
		if (t - h >= x->ring.h->entries)
			break;	/* ring full: the SRQ is */
		w = kr_slot(&x->ring, t);
		w->cookie = 0xffff0000u + i;
		w->nseg = 1;
		w->pad = 0;
		w->seg[0].lmr_context = x->s.lctx;
		w->seg[0].pad = 0;
		w->seg[0].addr = (uintptr_t)x->s.buf + 64 * (i % 512);
		w->seg[0].length = 64;
		__atomic_exchange_n(&x->ring.h->tail, t + 1, __ATOMIC_SEQ_CST);
		if (i % 8 == 7) {
			uint32_t st = k_srq_op(x->fd, KDAT_IOC_SRQ_KICK, x->srq, 0);

			CHECK(st == DAT_SUCCESS, "kick: %s", ST(st));
		}
	}
	return NULL;
}

static void case_srq_post_concurrent_counts(void)
{
	static struct sp x;
	int it, n = iters(40), i;
	long total = 0;

	x.fd = kdat_open();
	open_side(x.fd, "rxe0", &x.s);
	for (it = 0; it < n && !kr_failed(); it++) {
		pthread_t t[SP_THREADS + 1];
		void *args[SP_THREADS + 1][2];
		struct kdat_ioc_srq_query q;
		uint32_t st, drained;
		int ok;

		st = k_srq(x.fd, x.s.ia, x.s.pz, SP_DEPTH, &x.srq, &x.ring);
		REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
		atomic_store(&x.ok, 0);
		atomic_store(&x.full, 0);
		/* odd iterations overfill it, even ones stay below */
		x.per_thread = it % 2 ? 180 : 100;
		x.ring_posts = it % 2 ? 120 : 60;
		pthread_barrier_init(&x.b, NULL, SP_THREADS + 1);
		for (i = 0; i <= SP_THREADS; i++) {
			args[i][0] = &x;
			args[i][1] = (void *)(intptr_t)i;
			pthread_create(&t[i], NULL, i < SP_THREADS ? sp_poster : sp_ringer,
				       args[i]);
		}
		for (i = 0; i <= SP_THREADS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&x.b);
		st = k_srq_query(x.fd, x.srq, &q);	/* drains the ring too */
		drained = __atomic_load_n(&x.ring.h->head, __ATOMIC_ACQUIRE);
		ok = atomic_load(&x.ok);
		CHECK(st == DAT_SUCCESS, "query: %s", ST(st));
		CHECK(q.available_dto_count == q.outstanding_dto_count &&
		      q.available_dto_count == ok + (int)drained,
		      "iteration %d: %d ioctl posts and %u ring entries taken: available %d outstanding %d (want both %d)",
		      it, ok, drained, q.available_dto_count, q.outstanding_dto_count,
		      ok + (int)drained);
		CHECK(q.available_dto_count <= SP_DEPTH, "iteration %d: %d posted on an SRQ of %d",
		      it, q.available_dto_count, SP_DEPTH);
		CHECK(!atomic_load(&x.full) || q.available_dto_count == SP_DEPTH,
		      "iteration %d: %d posts refused as full, yet only %d of %d posted",
		      it, atomic_load(&x.full), q.available_dto_count, SP_DEPTH);
		CHECK(it % 2 || (ok == SP_THREADS * 100 && drained == 60),
		      "iteration %d: below capacity, %d ioctl posts and %u ring entries of %d and 60 went in",
		      it, ok, drained, SP_THREADS * 100);
		total += q.available_dto_count;
		kr_unmap(&x.ring);
		st = k_free(x.fd, x.srq, KT_SRQ);
		CHECK(st == DAT_SUCCESS, "srq free: %s", ST(st));
	}
	kr_pass_note("%d iterations, %ld receives counted", it, total);
	close(x.fd);
}

/* ======================================================================= */
/* A user rewriting a ring's tail while the kernel drains it               */
/* ======================================================================= */

/*
 * Every slot of the ring holds an entry the kernel refuses, and a refusal
 * never blocks, so nothing but the drain's budget (four rings' worth;
 * debugfs kdat/ring_spills counts the drains that left their rest to a
 * work item) ends a kick whose ring the user refills as fast as the
 * kernel reads it.  Before that bound, the kick drained with bottom
 * halves off for as long as the user kept up: thousands of entries, and
 * with a user that never loses the race, a soft lockup.
 *
 * Two users rewrite the tail one ring ahead of the head the kernel
 * publishes.  The kernel's own fault injection (debugfs
 * kdat/fault_ring_tail) does it before every read of the tail, so it
 * always wins: the kick must stop at exactly its budget, whatever the
 * scheduler does.  Then a real thread does it on another CPU while the
 * kernel drains (and, for the SRQ, keeps the async EVD's ring empty, so
 * its refusal reports never fill it): each kick must return, whoever
 * wins.  After each, kicks with the tail left alone empty the ring: the
 * budget's cut lost no entry and left the head where the next drain
 * resumes.
 */
/* kicks under the live rewriter */
#define RW_KICKS 20

#define KDAT_FAULT_RING_TAIL "/sys/kernel/debug/kdat/fault_ring_tail"

/* debugfs kdat/ring_spills: drains that left their rest to a work item */
static long rw_spills(const char *kind)
{
	FILE *f = fopen("/sys/kernel/debug/kdat/ring_spills", "r");
	char k[16];
	long n, v = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%15s %ld", k, &n) == 2)
		if (!strcmp(k, kind))
			v = n;
	fclose(f);
	return v;
}

struct rw {
	struct kring *ring, *aring;	/* aring: to keep empty, or NULL */
	atomic_bool stop;
	atomic_long laps;		/* tail rewrites that moved it */
	atomic_long passes;		/* turns of its loop */
};

/* Room for the SRQ ring's refusal reports: the async ring consumed. */
static void rw_empty_aring(struct rw *x)
{
	if (x->aring)
		__atomic_store_n(&x->aring->h->head,
				 __atomic_load_n(&x->aring->h->tail,
						 __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
}

/* KDAT_IOC_SRQ_KICK or KDAT_IOC_EP_KICK on @id. */
static uint32_t rw_kick(int fd, unsigned long cmd, uint32_t id)
{
	struct kdat_ioc_ep_op k = { .ep = id };

	if (cmd == KDAT_IOC_EP_KICK)
		return KIOC(fd, cmd, &k);
	return k_srq_op(fd, cmd, id, 0);
}

static void *rw_rewriter(void *p)
{
	struct rw *x = p;
	struct kdat_ring_hdr *h = x->ring->h;

	while (!atomic_load(&x->stop)) {
		uint32_t head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);

		if (h->tail != head + h->entries) {
			__atomic_exchange_n(&h->tail, head + h->entries,
					    __ATOMIC_SEQ_CST);
			atomic_fetch_add(&x->laps, 1);
		}
		rw_empty_aring(x);
		atomic_fetch_add(&x->passes, 1);
	}
	return NULL;
}

/*
 * Kick once under the live rewriter.  *@taken: the entries consumed from
 * the kick's start until it returned (the head moved that far).
 */
static uint32_t rw_kick_under_rewriter(struct rw *x, int fd, unsigned long cmd,
				       uint32_t id, uint32_t *taken)
{
	struct kdat_ring_hdr *h = x->ring->h;
	uint32_t st, head0;
	pthread_t t;

	atomic_store(&x->stop, false);
	atomic_store(&x->laps, 0);
	atomic_store(&x->passes, 0);
	pthread_create(&t, NULL, rw_rewriter, x);
	/* the ring is full (the tail one ring ahead) before the kick drains */
	while (!atomic_load(&x->passes))
		sched_yield();
	head0 = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	st = rw_kick(fd, cmd, id);
	*taken = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE) - head0;
	atomic_store(&x->stop, true);
	pthread_join(t, NULL);
	return st;
}

/*
 * The tail left alone: kicks, as a producer that finds KDAT_RING_NEED_KICK
 * makes, with room made for the refusal reports of the SRQ ring before
 * each, empty the ring.
 */
static bool rw_last_kicks_drain(struct rw *x, int fd, unsigned long cmd,
				uint32_t id)
{
	struct kdat_ring_hdr *h = x->ring->h;
	int i;

	for (i = 0; i < 64; i++) {
		if (__atomic_load_n(&h->head, __ATOMIC_ACQUIRE) == h->tail)
			return true;
		rw_empty_aring(x);
		if (rw_kick(fd, cmd, id) != DAT_SUCCESS)
			return false;
	}
	return __atomic_load_n(&h->head, __ATOMIC_ACQUIRE) == h->tail;
}

/*
 * One kick of @what's ring with the kernel rewriting its tail: it stops
 * at its budget (and only there: the tail was always a ring ahead), then
 * kicks with the tail left alone empty the ring.  *@taken: what the kick
 * took.
 */
static void rw_check_budget(struct rw *x, int fd, unsigned long cmd,
			    uint32_t id, const char *kind, const char *what,
			    uint32_t *taken)
{
	struct kdat_ring_hdr *h = x->ring->h;
	/* the kernel's KDAT_DRAIN_RINGS rings' worth */
	uint32_t budget = 4 * h->entries, st, head0;
	long spills = rw_spills(kind);
	int ff = open(KDAT_FAULT_RING_TAIL, O_WRONLY | O_CLOEXEC);

	REQUIRE(spills >= 0, "no /sys/kernel/debug/kdat/ring_spills");
	REQUIRE(ff >= 0, "cannot open %s: %s", KDAT_FAULT_RING_TAIL,
		strerror(errno));
	head0 = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	REQUIRE(fault_set(ff, 1), "cannot write %s: %s", KDAT_FAULT_RING_TAIL,
		strerror(errno));
	st = rw_kick(fd, cmd, id);
	*taken = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE) - head0;
	/* the work item the kick handed the rest to stops only now */
	REQUIRE(fault_set(ff, 0), "cannot turn %s off", KDAT_FAULT_RING_TAIL);
	close(ff);
	CHECK(st == DAT_SUCCESS, "%s kick with the kernel rewriting: %s",
	      what, ST(st));
	CHECK(rw_spills(kind) > spills,
	      "the %s kick with the tail always a ring ahead returned without leaving its rest to a work item",
	      what);
	CHECK(*taken >= budget,
	      "the %s kick returned after %u entries, before its budget of %u",
	      what, *taken, budget);
	CHECK(rw_last_kicks_drain(x, fd, cmd, id),
	      "a kick after the kernel stopped rewriting left the %s ring with entries",
	      what);
}

/*
 * Kicks of @what's ring under the live rewriter, each of which must
 * return, then kicks that empty the ring.  *@spilled: how many of those
 * kicks the budget ended (the scheduler decides; reported, not checked).
 */
static void rw_check_live(struct rw *x, int fd, unsigned long cmd, uint32_t id,
			  const char *kind, const char *what, long *spilled)
{
	long spills = rw_spills(kind);
	uint32_t st, taken;
	int i;

	for (i = 0; i < RW_KICKS; i++) {
		st = rw_kick_under_rewriter(x, fd, cmd, id, &taken);
		CHECK(st == DAT_SUCCESS, "%s kick under the rewriter: %s", what,
		      ST(st));
	}
	*spilled = rw_spills(kind) - spills;
	CHECK(rw_last_kicks_drain(x, fd, cmd, id),
	      "a kick after the rewriter stopped left the %s ring with entries",
	      what);
}

static void case_ring_tail_rewriter_vs_kick(void)
{
	int fd = kdat_open();
	struct kring sring = {}, ering = {};
	struct rw x = {};
	struct side s;
	uint32_t srq, ep, st, i, staken = 0, etaken = 0;
	long sspill = 0, espill = 0;

	/* room for the refusal reports of a budget (below) */
	open_side_q(fd, "rxe0", &s, 2048);

	/* the SRQ's post ring: entries naming more segments than a slot has */
	st = k_srq(fd, s.ia, s.pz, 256, &srq, &sring);
	REQUIRE(st == DAT_SUCCESS && sring.h, "srq: %s", ST(st));
	REQUIRE(sring.h->entries > 64, "SRQ ring of %u entries", sring.h->entries);
	/*
	 * The budget's refusals are reported on the async EVD before any
	 * consumer reaps them: it must hold them all, or the kick stops
	 * for want of room instead.
	 */
	REQUIRE(s.aring.h->entries > 4 * sring.h->entries,
		"async ring of %u entries for an SRQ ring of %u",
		s.aring.h->entries, sring.h->entries);
	for (i = 0; i < sring.h->entries; i++) {
		struct kdat_srq_wqe *w = kr_slot(&sring, i);

		w->cookie = i;
		w->nseg = 0xff;
	}
	x.ring = &sring;
	x.aring = &s.aring;
	rw_check_budget(&x, fd, KDAT_IOC_SRQ_KICK, srq, "srq", "SRQ", &staken);
	rw_check_live(&x, fd, KDAT_IOC_SRQ_KICK, srq, "srq", "SRQ", &sspill);

	/* an unconnected EP's send ring: entries of no operation */
	{
		struct kdat_ioc_ep_create c = {
			.ia = s.ia, .pz = s.pz, .recv_evd = s.evd,
			.request_evd = s.evd, .connect_evd = s.cevd,
			.has_attr = 1,
			.attr = { .max_message_size = 4096,
				  .max_request_dtos = 200,
				  .max_request_iov = 1, .max_recv_dtos = 16,
				  .max_recv_iov = 1 },
		};

		st = KIOC(fd, KDAT_IOC_EP_CREATE, &c);
		REQUIRE(st == DAT_SUCCESS, "ep: %s", ST(st));
		ep = c.ep;
		if (!c.ring_size) {
			kr_pass_note("no send ring on this module; SRQ: %u taken",
				     staken);
			goto out;
		}
		REQUIRE(!kr_map(fd, c.ring_offset, c.ring_size, &ering),
			"mmap of the EP's send ring: %s", strerror(errno));
	}
	REQUIRE(ering.h->entries > 64, "EP ring of %u entries", ering.h->entries);
	for (i = 0; i < ering.h->entries; i++) {
		struct kdat_ep_sqe *w = kr_slot(&ering, i);

		memset(w, 0, sizeof(*w));
		w->op = 0xffffffff;
		w->cookie = i;
	}
	x.ring = &ering;
	x.aring = NULL;
	rw_check_budget(&x, fd, KDAT_IOC_EP_KICK, ep, "ep", "EP", &etaken);
	rw_check_live(&x, fd, KDAT_IOC_EP_KICK, ep, "ep", "EP", &espill);
	kr_pass_note("kernel rewriting: kicks took %u (SRQ) and %u (EP) entries of rings of %u and %u; live rewriter: %ld and %ld of %d kicks spilled",
		     staken, etaken, sring.h->entries, ering.h->entries,
		     sspill, espill, RW_KICKS);
	kr_unmap(&ering);
	st = k_free(fd, ep, KT_EP);
	CHECK(st == DAT_SUCCESS, "ep free: %s", ST(st));
out:
	kr_unmap(&sring);
	st = k_free(fd, srq, KT_SRQ);
	CHECK(st == DAT_SUCCESS, "srq free: %s", ST(st));
	close(fd);
}

/* ======================================================================= */
/* A forked child and its parent's handles                                 */
/* ======================================================================= */

/* Every ioctl, naming the parent's objects: refused in the child. */
static void fork_child_calls(int fd, struct side *s, uint32_t srq, uint32_t ep,
			     struct kring *rings[], int nrings, char *bad, size_t badlen)
{
	union {
		struct kdat_ioc_hdr hdr;
		struct kdat_ioc_version version;
		struct kdat_ioc_ia_list ia_list;
		struct kdat_ioc_ia_open ia_open;
		struct kdat_ioc_ia_close ia_close;
		struct kdat_ioc_ia_query ia_query;
		struct kdat_ioc_free free;
		struct kdat_ioc_pz_create pz_create;
		struct kdat_ioc_evd_create evd_create;
		struct kdat_ioc_evd_wait evd_wait;
		struct kdat_ioc_evd_post_se post_se;
		struct kdat_ioc_lmr_create lmr_create;
		struct kdat_ioc_srq_create srq_create;
		struct kdat_ioc_srq_query srq_query;
		struct kdat_ioc_srq_op srq_op;
		struct kdat_ioc_srq_post srq_post;
		struct kdat_ioc_ep_create ep_create;
		struct kdat_ioc_ep_query ep_query;
		struct kdat_ioc_ep_connect ep_connect;
		struct kdat_ioc_ep_op ep_op;
		struct kdat_ioc_ep_post ep_post;
		struct kdat_ioc_ep_status ep_status;
		struct kdat_ioc_psp_create psp_create;
		struct kdat_ioc_cr_query cr_query;
		struct kdat_ioc_cr_accept cr_accept;
		struct kdat_ioc_evd_ctl evd_ctl;
		struct kdat_ioc_ep_modify ep_modify;
		struct kdat_ioc_rsp_create rsp_create;
		struct kdat_ioc_rsp_query rsp_query;
	} a;
	static char names[4][KDAT_NAME_LEN];
	size_t used = 0;
	unsigned int nr;
	int i;

	for (nr = 0; nr <= _IOC_NR(KDAT_IOC_RSP_QUERY); nr++) {
		unsigned long cmd = 0;
		size_t size = 0;
		uint32_t st;

		memset(&a, 0, sizeof(a));
		switch (nr) {
#define C(CMD, field, ...)                                                  \
	case _IOC_NR(CMD):                                                  \
		cmd = CMD;                                                  \
		size = sizeof(a.field);                                     \
		__VA_ARGS__;                                                \
		break
		C(KDAT_IOC_VERSION, version, );
		C(KDAT_IOC_IA_LIST, ia_list, a.ia_list.max = 4,
		  a.ia_list.names = (uintptr_t)names);
		C(KDAT_IOC_IA_OPEN, ia_open, strcpy(a.ia_open.name, "rxe0"),
		  a.ia_open.async_qlen = 8);
		C(KDAT_IOC_IA_CLOSE, ia_close, a.ia_close.ia = s->ia);
		C(KDAT_IOC_IA_QUERY, ia_query, a.ia_query.ia = s->ia);
		C(KDAT_IOC_FREE, free, a.free.handle = srq, a.free.type = KT_SRQ);
		C(KDAT_IOC_PZ_CREATE, pz_create, a.pz_create.ia = s->ia);
		C(KDAT_IOC_EVD_CREATE, evd_create, a.evd_create.ia = s->ia,
		  a.evd_create.qlen = 8, a.evd_create.flags = DAT_EVD_DTO_FLAG);
		C(KDAT_IOC_EVD_WAIT, evd_wait, a.evd_wait.evd = s->swevd,
		  a.evd_wait.threshold = 1, a.evd_wait.timeout_us = 1000);
		C(KDAT_IOC_EVD_POST_SE, post_se, a.post_se.evd = s->swevd);
		C(KDAT_IOC_LMR_CREATE, lmr_create, a.lmr_create.ia = s->ia,
		  a.lmr_create.pz = s->pz, a.lmr_create.addr = (uintptr_t)s->buf,
		  a.lmr_create.length = 4096,
		  a.lmr_create.priv = DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
		C(KDAT_IOC_SRQ_CREATE, srq_create, a.srq_create.ia = s->ia,
		  a.srq_create.pz = s->pz, a.srq_create.max_recv_dtos = 8,
		  a.srq_create.max_recv_iov = 1);
		C(KDAT_IOC_SRQ_QUERY, srq_query, a.srq_query.srq = srq);
		C(KDAT_IOC_SRQ_RESIZE, srq_op, a.srq_op.srq = srq, a.srq_op.value = 32);
		C(KDAT_IOC_SRQ_SET_LW, srq_op, a.srq_op.srq = srq, a.srq_op.value = 1);
		C(KDAT_IOC_SRQ_KICK, srq_op, a.srq_op.srq = srq);
		C(KDAT_IOC_SRQ_POST, srq_post, a.srq_post.srq = srq,
		  a.srq_post.nseg = 1, a.srq_post.seg[0].lmr_context = s->lctx,
		  a.srq_post.seg[0].addr = (uintptr_t)s->buf,
		  a.srq_post.seg[0].length = 64);
		C(KDAT_IOC_EP_CREATE, ep_create, a.ep_create.ia = s->ia,
		  a.ep_create.pz = s->pz, a.ep_create.recv_evd = s->evd,
		  a.ep_create.request_evd = s->evd, a.ep_create.connect_evd = s->cevd);
		C(KDAT_IOC_EP_QUERY, ep_query, a.ep_query.ep = ep);
		C(KDAT_IOC_EP_CONNECT, ep_connect, a.ep_connect.ep = ep,
		  a.ep_connect.conn_qual = 9);
		C(KDAT_IOC_EP_DISCONNECT, ep_op, a.ep_op.ep = ep);
		C(KDAT_IOC_EP_RESET, ep_op, a.ep_op.ep = ep);
		C(KDAT_IOC_EP_POST, ep_post, a.ep_post.ep = ep,
		  a.ep_post.op = KDAT_POST_RECV, a.ep_post.nseg = 1,
		  a.ep_post.seg[0].lmr_context = s->lctx,
		  a.ep_post.seg[0].addr = (uintptr_t)s->buf,
		  a.ep_post.seg[0].length = 64);
		C(KDAT_IOC_EP_STATUS, ep_status, a.ep_status.ep = ep);
		C(KDAT_IOC_PSP_CREATE, psp_create, a.psp_create.ia = s->ia,
		  a.psp_create.evd = s->crevd, a.psp_create.conn_qual = 4242,
		  a.psp_create.flags = DAT_PSP_CONSUMER_FLAG);
		C(KDAT_IOC_CR_QUERY, cr_query, a.cr_query.cr = 1);
		C(KDAT_IOC_CR_ACCEPT, cr_accept, a.cr_accept.cr = 1,
		  a.cr_accept.ep = ep);
		C(KDAT_IOC_EVD_CTL, evd_ctl, a.evd_ctl.evd = s->swevd,
		  a.evd_ctl.op = KDAT_EVD_CTL_WAKE);
		C(KDAT_IOC_EP_MODIFY, ep_modify, a.ep_modify.ep = ep);
		C(KDAT_IOC_RSP_CREATE, rsp_create, a.rsp_create.ia = s->ia,
		  a.rsp_create.ep = ep, a.rsp_create.evd = s->crevd,
		  a.rsp_create.conn_qual = 4243);
		C(KDAT_IOC_RSP_QUERY, rsp_query, a.rsp_query.rsp = 1);
#undef C
		}
		if (!cmd)
			continue;
		if (nr == _IOC_NR(KDAT_IOC_EP_CONNECT)) {
			struct sockaddr_in sin = { .sin_family = AF_INET };

			sin.sin_addr.s_addr = inet_addr(KDAT_SERVER_ADDR);
			memcpy(a.ep_connect.addr, &sin, sizeof(sin));
		}
		st = kioc_sz(fd, cmd, &a, (uint32_t)size);
		if (st != KST_ERRNO && !ST_IS(st, S_IH) && used < badlen - 80)
			used += snprintf(bad + used, badlen - used, "nr 0x%02x -> %s; ",
					 nr, ST(st));
	}
	/* the rings are not inherited, and cannot be mapped again */
	for (i = 0; i < nrings; i++) {
		unsigned char v;
		void *m;

		if (mincore(rings[i]->base, 4096, &v) != -1 || errno != ENOMEM) {
			if (used < badlen - 80)
				used += snprintf(bad + used, badlen - used,
						 "ring %d still mapped in the child; ", i);
		}
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			munmap(m, 4096);
			if (i == 0 && used < badlen - 80)
				used += snprintf(bad + used, badlen - used,
						 "mmap of the parent's file succeeded in the child; ");
		}
	}
}

static void case_fork_child_inherited_handles(void)
{
	int fd = kdat_open(), p[2], status, i;
	struct kdat_ioc_srq_query q0, q1;
	struct kdat_ioc_ep_query e0 = {}, e1 = {};
	struct kring srqring, *rings[6];
	struct side s;
	uint32_t srq, ep, st, lmr, tail0;
	char bad[2048] = "";
	pid_t pid;
	ssize_t len;

	open_side(fd, "rxe0", &s);
	st = k_srq(fd, s.ia, s.pz, 16, &srq, &srqring);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	st = k_ep(fd, s.ia, s.pz, s.evd, s.cevd, 0, &ep);
	REQUIRE(st == DAT_SUCCESS, "ep: %s", ST(st));
	for (i = 0; i < 3; i++)
		REQUIRE(k_srq_post(fd, srq, s.lctx, s.buf, 64, i) == DAT_SUCCESS, "post");
	REQUIRE(k_srq_query(fd, srq, &q0) == DAT_SUCCESS, "query");
	e0.ep = ep;
	REQUIRE(KIOC(fd, KDAT_IOC_EP_QUERY, &e0) == DAT_SUCCESS, "ep query");
	rings[0] = &s.aring, rings[1] = &s.ring, rings[2] = &s.cring;
	rings[3] = &s.crring, rings[4] = &s.swring, rings[5] = &srqring;
	REQUIRE(!pipe(p), "pipe");
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		int fd2;

		close(kr_result_fd);
		close(p[0]);
		fork_child_calls(fd, &s, srq, ep, rings, 6, bad, sizeof(bad));
		/* the IDs mean nothing in a file of its own either */
		fd2 = open("/dev/kdat", O_RDWR);
		if (fd2 >= 0) {
			struct kdat_ioc_srq_query q;

			st = k_srq_query(fd2, srq, &q);
			if (!ST_IS(st, S_IH))
				strcat(bad, "the parent's SRQ ID worked in the child's own file; ");
			close(fd2);
		}
		close(fd);	/* the parent's file stays open in the parent */
		if (bad[0] && write(p[1], bad, strlen(bad)) < 0)
			_exit(3);
		_exit(bad[0] ? 1 : 0);
	}
	close(p[1]);
	len = read(p[0], bad, sizeof(bad) - 1);
	bad[len > 0 ? len : 0] = '\0';
	close(p[0]);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
	      "the child was not refused: %s (child status 0x%x)", bad, status);

	/* the parent's objects are untouched */
	st = k_srq_query(fd, srq, &q1);
	CHECK(st == DAT_SUCCESS && q1.available_dto_count == q0.available_dto_count &&
	      q1.outstanding_dto_count == q0.outstanding_dto_count &&
	      q1.max_recv_dtos == q0.max_recv_dtos && q1.low_watermark == q0.low_watermark,
	      "parent's SRQ after the child: %s available %d outstanding %d max %d lw %d (before: %d %d %d %d)",
	      ST(st), q1.available_dto_count, q1.outstanding_dto_count,
	      q1.max_recv_dtos, q1.low_watermark, q0.available_dto_count,
	      q0.outstanding_dto_count, q0.max_recv_dtos, q0.low_watermark);
	e1.ep = ep;
	st = KIOC(fd, KDAT_IOC_EP_QUERY, &e1);
	CHECK(st == DAT_SUCCESS && e1.state == e0.state,
	      "parent's EP after the child: %s state %u (was %u)", ST(st), e1.state, e0.state);
	st = k_lmr(fd, s.ia, s.pz, s.buf, 4096, &lmr, NULL);
	CHECK(st == DAT_SUCCESS, "LMR on the parent's PZ after the child: %s", ST(st));
	if (st == DAT_SUCCESS)
		CHECK(k_free(fd, lmr, KT_LMR) == DAT_SUCCESS, "lmr free");
	tail0 = s.swring.h->tail;
	st = k_post_se(fd, s.swevd, 77);
	CHECK(st == DAT_SUCCESS && s.swring.h->tail == tail0 + 1,
	      "software event in the parent after the child: %s, ring tail %u -> %u",
	      ST(st), tail0, s.swring.h->tail);
	{
		struct kdat_ioc_ia_query iq = { .ia = s.ia };

		st = KIOC(fd, KDAT_IOC_IA_QUERY, &iq);
		CHECK(st == DAT_SUCCESS, "parent's IA after the child: %s", ST(st));
	}
	st = k_free(fd, ep, KT_EP);
	CHECK(st == DAT_SUCCESS, "parent's EP free: %s", ST(st));
	st = k_free(fd, srq, KT_SRQ);
	CHECK(st == DAT_SUCCESS, "parent's SRQ free: %s", ST(st));
	close(fd);
}

/* ======================================================================= */
/* Device removal under a live process with traffic (last)                 */
/* ======================================================================= */

static int run_cmd(const char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		if (kr_result_fd >= 0)
			close(kr_result_fd);
		dup2(nul, 0);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static bool port_active(const char *dev)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/state", dev);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strstr(buf, "ACTIVE") != NULL;
}

/* Put rxe1 back (idempotent); true once its port is ACTIVE. */
static bool rxe1_restore(void)
{
	static const char *const add[] = { "rdma", "link", "add", "rxe1", "type",
					   "rxe", "netdev", "v1", NULL };
	struct stat sb;
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	double end = now_s() + 30;

	if (stat("/sys/class/infiniband/rxe1", &sb))
		run_cmd(add);
	while (!port_active("rxe1") && now_s() < end)
		nanosleep(&ts, NULL);	/* bounded poll of an external state */
	return port_active("rxe1");
}

/* Take rxe1 away (rxe1_restore puts it back): rdma link's exit status. */
static int rxe1_delete(void)
{
	static const char *const del[] = { "rdma", "link", "delete", "rxe1",
					   NULL };

	return run_cmd(del);
}

/*
 * Whether @c (an rxe1 side) hears DAT_ASYNC_ERROR_IA_CATASTROPHIC on its
 * async EVD within 30 s of rxe1 going; kdat posts it only once the
 * device's hardware is released.
 */
static bool await_catastrophe(int fd, struct side *c)
{
	struct kdat_uevent e;
	double end = now_s() + 30;

	while (now_s() < end)
		if (kr_next_event(fd, &c->aring, c->aevd, 100000, &e, NULL) &&
		    e.event_number == DAT_ASYNC_ERROR_IA_CATASTROPHIC)
			return true;
	return false;
}

struct dr {
	int fd;
	struct side s, c;
	uint32_t sep, cep, srq;
	atomic_bool stop;
	atomic_long sent;
	uint32_t last_err;
	struct kring epring;	/* the client EP's send ring, if any */
	uint32_t etail;
	atomic_long polls;	/* busy polls of the client's DTO EVD */
	uint32_t poll_err;
};

/*
 * One send through the EP's send ring (KDAT_FEATURE_SEND_RING), as libdat
 * writes it: the entry, the tail (sequentially consistent), the flags,
 * and a kick when the kernel's send queue is idle.
 */
static uint32_t dr_ring_send(struct dr *x, uint64_t cookie)
{
	struct kdat_ring_hdr *h = x->epring.h;
	struct kdat_ep_sqe *w = (void *)(x->epring.base + h->entry_offset +
					 (size_t)(x->etail & (h->entries - 1)) *
					 h->entry_size);

	memset(w, 0, sizeof(*w) - sizeof(w->seg) + sizeof(w->seg[0]));
	w->op = KDAT_POST_SEND;
	w->nseg = 1;
	w->cookie = cookie;
	w->seg[0].lmr_context = x->c.lctx;
	w->seg[0].addr = (uintptr_t)x->c.buf;
	w->seg[0].length = 64;
	__atomic_exchange_n(&h->tail, ++x->etail, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&h->flags, __ATOMIC_SEQ_CST) & KDAT_RING_NEED_KICK) {
		struct kdat_ioc_ep_op k = { .ep = x->cep };

		return KIOC(x->fd, KDAT_IOC_EP_KICK, &k);
	}
	return DAT_SUCCESS;
}

static void *dr_sender(void *p)
{
	struct dr *x = p;
	struct kdat_uevent e;
	long out = 0;

	while (!atomic_load(&x->stop)) {
		/* every other send through the send ring, while it is there */
		uint32_t st = x->epring.h && (out & 1) ?
			dr_ring_send(x, 3) :
			k_ep_post(x->fd, x->cep, KDAT_POST_SEND, x->c.lctx,
				  x->c.buf, 64, 1);

		if (st == DAT_SUCCESS) {
			out++;
			atomic_fetch_add(&x->sent, 1);
		} else if (!ST_IS(st, S_IR)) {
			x->last_err = st;	/* the device went: stop cleanly */
			break;
		}
		while (out > 0 && kr_next_event(x->fd, &x->c.ring, x->c.evd,
						out >= 8 ? 100000 : 0, &e, NULL))
			out--;
	}
	return NULL;
}

static void *dr_receiver(void *p)
{
	struct dr *x = p;
	struct kdat_uevent e;

	while (!atomic_load(&x->stop)) {
		if (!kr_next_event(x->fd, &x->s.ring, x->s.evd, 50000, &e, NULL))
			continue;
		if (e.event_number == DAT_DTO_COMPLETION_EVENT && !e.status &&
		    e.srq == x->srq)
			k_srq_post(x->fd, x->srq, x->s.lctx,
				   x->s.buf + (e.cookie % 32) * 1024, 1024,
				   e.cookie);
	}
	return NULL;
}

/*
 * A spinner's busy poll of the client's DTO EVD (KDAT_EVD_CTL_POLL) runs
 * that CQ's poller while the device goes: every call succeeds (a no-op
 * once the IA is dead), and the CQ is not freed under one.
 */
static void *dr_poller(void *p)
{
	struct dr *x = p;
	struct kdat_ioc_evd_ctl c = { .evd = x->c.evd,
				      .op = KDAT_EVD_CTL_POLL };

	while (!atomic_load(&x->stop)) {
		uint32_t st = KIOC(x->fd, KDAT_IOC_EVD_CTL, &c);

		if (st != DAT_SUCCESS) {
			x->poll_err = st;
			break;
		}
		atomic_fetch_add(&x->polls, 1);
	}
	return NULL;
}

static void case_device_removal_mid_traffic(void)
{
	static struct dr x;
	pthread_t ts, tr, tp;
	uint32_t st, id;
	long left, before;
	int rc, i, fd2;

	x.fd = kdat_open();
	open_side(x.fd, "rxe0", &x.s);
	open_side(x.fd, "rxe1", &x.c);
	st = k_srq(x.fd, x.s.ia, x.s.pz, 64, &x.srq, NULL);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	for (i = 0; i < 32; i++)
		REQUIRE(k_srq_post(x.fd, x.srq, x.s.lctx, x.s.buf + i * 1024, 1024, i) ==
			DAT_SUCCESS, "srq post");
	/* the client EP with its send ring mapped, if the module has one */
	st = k_ep_ring(x.fd, x.c.ia, x.c.pz, x.c.evd, x.c.cevd, 0, &x.cep,
		       &x.epring);
	REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
	x.sep = connect_pair(&x.s, &x.c, x.cep, x.srq, x.s.pz);
	pthread_create(&ts, NULL, dr_sender, &x);
	pthread_create(&tr, NULL, dr_receiver, &x);
	pthread_create(&tp, NULL, dr_poller, &x);
	/* traffic flows before the device goes */
	while ((atomic_load(&x.sent) < 64 ||
		(atomic_load(&x.polls) < 64 && !x.poll_err)) && !kr_failed())
		;
	rc = rxe1_delete();
	CHECK(rc == 0, "rdma link delete rxe1: exit %d", rc);

	/* the process hears of it on rxe1's async EVD */
	CHECK(await_catastrophe(x.fd, &x.c),
	      "no DAT_ASYNC_ERROR_IA_CATASTROPHIC on rxe1's async EVD within 30 s");
	atomic_store(&x.stop, true);
	pthread_join(ts, NULL);
	pthread_join(tr, NULL);
	pthread_join(tp, NULL);
	CHECK(!x.poll_err, "busy poll of rxe1's EVD around the removal: %s",
	      ST(x.poll_err));

	/* later calls fail cleanly */
	st = k_ep_post(x.fd, x.cep, KDAT_POST_SEND, x.c.lctx, x.c.buf, 64, 2);
	CHECK(st != DAT_SUCCESS && st != KST_ERRNO, "send on the removed device: %s", ST(st));
	st = k_pz(x.fd, x.c.ia, &id);
	CHECK(st != DAT_SUCCESS && st != KST_ERRNO, "PZ create on the removed device: %s", ST(st));
	if (st == DAT_SUCCESS)
		k_free(x.fd, id, KT_PZ);
	st = k_evd(x.fd, x.c.ia, 8, DAT_EVD_DTO_FLAG, &id, NULL);
	CHECK(st != DAT_SUCCESS && st != KST_ERRNO, "EVD create on the removed device: %s", ST(st));
	if (st == DAT_SUCCESS)
		k_free(x.fd, id, KT_EVD);
	{
		struct kdat_ioc_ia_query q = { .ia = x.c.ia };

		st = KIOC(x.fd, KDAT_IOC_IA_QUERY, &q);
		CHECK(st != KST_ERRNO, "IA query on the removed device: %s", ST(st));
	}
	/* rxe0 is unaffected */
	st = k_pz(x.fd, x.s.ia, &id);
	CHECK(st == DAT_SUCCESS, "PZ create on rxe0 after rxe1 went: %s", ST(st));
	if (st == DAT_SUCCESS)
		CHECK(k_free(x.fd, id, KT_PZ) == DAT_SUCCESS, "pz free");
	/* the dead IA's objects can still be freed */
	st = k_free(x.fd, x.cep, KT_EP);
	CHECK(st == DAT_SUCCESS, "free of the client EP on the removed device: %s", ST(st));
	st = k_free(x.fd, x.c.lmr, KT_LMR);
	CHECK(st == DAT_SUCCESS, "free of an LMR on the removed device: %s", ST(st));

	/* closing the file frees everything */
	before = objects_total();
	side_unmap(&x.s);
	side_unmap(&x.c);
	kr_unmap(&x.epring);
	close(x.fd);
	left = objects_left(10.0);
	CHECK(left == 0, "%ld objects left after closing the file (%ld before)", left, before);

	CHECK(rxe1_restore(), "rxe1 did not come back ACTIVE within 30 s of rdma link add");
	fd2 = kdat_open();
	{
		struct kdat_ioc_ia_open o = { .name = "rxe1", .async_qlen = 8 };
		struct kdat_ioc_ia_close c = { .flags = DAT_CLOSE_ABRUPT_FLAG };

		st = KIOC(fd2, KDAT_IOC_IA_OPEN, &o);
		CHECK(st == DAT_SUCCESS, "IA open of the re-added rxe1: %s", ST(st));
		if (st == DAT_SUCCESS) {
			c.ia = o.ia;
			st = KIOC(fd2, KDAT_IOC_IA_CLOSE, &c);
			CHECK(st == DAT_SUCCESS, "its close: %s", ST(st));
		}
	}
	close(fd2);
}

/*
 * EPs' flushes fit their EVD's CQ whatever the EVD's qlen: sends stalled
 * behind RNR (the peer's SRQ ran dry) on SF_EPS EPs whose EVD holds one
 * event, then the EPs are freed by as many threads at once.  Each flush
 * puts every send and the drain's marker into the CQ before the poller
 * runs; a CQ of the EVD's size (or of one EP's flush) would lose markers
 * and the frees would never return (the case's deadline).
 */
enum { SF_EPS = 4, SF_SENDS = 15 };

struct sf {
	int fd;
	uint32_t ep;
	uint32_t st;
	atomic_int *go;
};

static void *sf_freer(void *p)
{
	struct sf *f = p;

	while (!atomic_load(f->go))
		;
	f->st = k_free(f->fd, f->ep, KT_EP);
	return NULL;
}

static void case_ep_free_flush_into_small_evd(void)
{
	struct side s, c;
	struct kring ring;
	struct kdat_uevent e;
	struct sf f[SF_EPS];
	pthread_t t[SF_EPS];
	uint32_t st, srq, evd, sep[SF_EPS];
	int fd = kdat_open(), i, k, round, gone;
	atomic_int go;
	long left;

	open_side(fd, "rxe0", &s);
	open_side(fd, "rxe1", &c);
	/* room for every round's: a send flushed before it arrived leaves one */
	st = k_srq(fd, s.ia, s.pz, iters(4) * SF_EPS, &srq, NULL);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	st = k_evd(fd, c.ia, 1, DAT_EVD_DTO_FLAG, &evd, &ring);
	REQUIRE(st == DAT_SUCCESS, "evd of qlen 1: %s", ST(st));
	for (round = 0; round < iters(4); round++) {
		atomic_store(&go, 0);
		for (k = 0; k < SF_EPS; k++) {
			/* one buffer each: the first send takes it */
			REQUIRE(k_srq_post(fd, srq, s.lctx, s.buf + k * 1024,
					   1024, k) == DAT_SUCCESS, "srq post");
			f[k] = (struct sf){ .fd = fd, .go = &go };
			st = k_ep(fd, c.ia, c.pz, evd, c.cevd, 0, &f[k].ep);
			REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
			sep[k] = connect_pair(&s, &c, f[k].ep, srq, s.pz);
			for (i = 0; i < SF_SENDS; i++) {
				st = k_ep_post(fd, f[k].ep, KDAT_POST_SEND,
					       c.lctx, c.buf, 64, i);
				REQUIRE(st == DAT_SUCCESS, "send %d: %s", i,
					ST(st));
			}
		}
		for (k = 0; k < SF_EPS; k++)
			pthread_create(&t[k], NULL, sf_freer, &f[k]);
		atomic_store(&go, 1);
		for (k = 0; k < SF_EPS; k++) {
			pthread_join(t[k], NULL);
			CHECK(f[k].st == DAT_SUCCESS,
			      "free of an EP with %d stalled sends: %s",
			      SF_SENDS, ST(f[k].st));
		}
		/* the server hears of each before its EP goes */
		for (gone = 0; gone < SF_EPS;) {
			REQUIRE(kr_next_event(fd, &s.cring, s.cevd, 20000000,
					      &e, NULL) &&
				e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED,
				"server EP not disconnected (event 0x%x)",
				e.event_number);
			for (k = 0; k < SF_EPS && sep[k] != e.handle; k++)
				;
			REQUIRE(k < SF_EPS, "disconnect of EP %u", e.handle);
			gone++;
		}
		for (k = 0; k < SF_EPS; k++) {
			st = k_free(fd, sep[k], KT_EP);
			CHECK(st == DAT_SUCCESS, "free of server EP: %s", ST(st));
		}
	}
	kr_unmap(&ring);
	side_unmap(&s);
	side_unmap(&c);
	close(fd);
	left = objects_left(10.0);
	CHECK(left == 0, "%ld objects left after closing the file", left);
}

/*
 * SRQ resize racing connects, traffic and frees.  A thread resizes the SRQ
 * between 16 and 1024 without pause while SRQ EPs are connected, half
 * with no recv EVD (their receives complete on the SRQ's own CQ, which a
 * resize grows) and half with one (whose CQ a resize grows), messages
 * flow to every one, and then the EPs and the SRQ are freed while the
 * resizes go on.  Every call answers what the contract allows (a resize
 * only SUCCESS, or INVALID_HANDLE once the SRQ is freed), every send
 * completes, the SRQ's free succeeds once its EPs are gone (refused
 * only while a resize is inside it), and nothing is left; the debug stage adds lockdep and KASAN (resize_lock, ia->lock,
 * the EVDs' cq_lock, op_lock and the CQ's teardown all cross here).
 */
enum { RZ_EPS = 4, RZ_MSGS = 2 };

struct rz {
	int fd;
	uint32_t srq;
	atomic_bool stop, freed;
	long resizes;
	uint32_t bad;			/* a status the contract does not allow */
};

static void *rz_resizer(void *p)
{
	struct rz *x = p;
	uint64_t rng = 41 ^ (uint64_t)getpid();

	while (!atomic_load(&x->stop)) {
		bool freed = atomic_load(&x->freed);
		uint32_t st = k_srq_op(x->fd, KDAT_IOC_SRQ_RESIZE, x->srq,
				       16 + (int)(rnd(&rng) % 1009));

		x->resizes++;
		if (!(st == DAT_SUCCESS && !freed) && !ST_IS(st, S_IH) &&
		    !x->bad)
			x->bad = st;
	}
	return NULL;
}

/* The next connection event that is not an earlier EP's disconnection. */
static bool rz_conn_event(int fd, struct kring *r, uint32_t evd,
			  struct kdat_uevent *e)
{
	while (kr_next_event(fd, r, evd, 20000000, e, NULL))
		if (e->event_number != DAT_CONNECTION_EVENT_DISCONNECTED)
			return true;
	return false;
}

static void case_srq_resize_vs_connects_and_frees(void)
{
	static struct rz x;
	struct side s, c;
	struct kdat_uevent e;
	uint32_t st, cep[RZ_EPS], sep[RZ_EPS], psp;
	pthread_t t;
	int round, k, i, done;
	long left;

	memset(&x, 0, sizeof(x));
	x.fd = kdat_open();
	open_side(x.fd, "rxe0", &s);
	open_side(x.fd, "rxe1", &c);
	for (round = 0; round < iters(3); round++) {
		st = k_srq(x.fd, s.ia, s.pz, 16, &x.srq, NULL);
		REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
		for (i = 0; i < RZ_EPS * RZ_MSGS; i++)
			REQUIRE(k_srq_post(x.fd, x.srq, s.lctx, s.buf + i * 1024,
					   1024, i) == DAT_SUCCESS, "srq post");
		atomic_store(&x.stop, false);
		atomic_store(&x.freed, false);
		pthread_create(&t, NULL, rz_resizer, &x);
		for (k = 0; k < RZ_EPS; k++) {
			uint64_t qual = next_qual();

			st = k_ep(x.fd, c.ia, c.pz, c.evd, c.cevd, 0, &cep[k]);
			REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
			/* odd EPs report receives on s.evd, even ones to no one */
			st = k_ep(x.fd, s.ia, s.pz, k % 2 ? s.evd : 0, s.cevd,
				  x.srq, &sep[k]);
			REQUIRE(st == DAT_SUCCESS, "server ep %d: %s", k, ST(st));
			st = k_psp(x.fd, s.ia, s.crevd, qual, &psp);
			REQUIRE(st == DAT_SUCCESS, "psp: %s", ST(st));
			REQUIRE(k_connect(x.fd, cep[k], qual) == DAT_SUCCESS,
				"connect");
			REQUIRE(kr_next_event(x.fd, &s.crring, s.crevd, 20000000,
					      &e, NULL) &&
				e.event_number == DAT_CONNECTION_REQUEST_EVENT,
				"no connection request");
			st = k_accept(x.fd, e.cr, sep[k]);
			CHECK(st == DAT_SUCCESS, "accept while resizing: %s", ST(st));
			REQUIRE(rz_conn_event(x.fd, &s.cring, s.cevd, &e) &&
				e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED,
				"server not established (event 0x%x)",
				e.event_number);
			REQUIRE(rz_conn_event(x.fd, &c.cring, c.cevd, &e) &&
				e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED,
				"client not established (event 0x%x)",
				e.event_number);
			REQUIRE(k_free(x.fd, psp, KT_PSP) == DAT_SUCCESS,
				"psp free");
			for (i = 0; i < RZ_MSGS; i++)
				REQUIRE(k_ep_post(x.fd, cep[k], KDAT_POST_SEND,
						  c.lctx, c.buf, 64, i) ==
					DAT_SUCCESS, "send");
		}
		/* every send lands in an SRQ buffer, whichever CQ reports it */
		for (done = 0; done < RZ_EPS * RZ_MSGS; done++) {
			REQUIRE(kr_next_event(x.fd, &c.ring, c.evd, 20000000, &e,
					      NULL), "send %d of %d did not complete",
				done, RZ_EPS * RZ_MSGS);
			CHECK(e.event_number == DAT_DTO_COMPLETION_EVENT &&
			      e.status == 0, "send: event 0x%x status %u",
			      e.event_number, e.status);
		}
		for (done = 0; done < RZ_EPS / 2 * RZ_MSGS; done++)
			REQUIRE(kr_next_event(x.fd, &s.ring, s.evd, 20000000, &e,
					      NULL) &&
				e.event_number == DAT_DTO_COMPLETION_EVENT &&
				!e.status, "receive %d on the recv EVD", done);
		/* the SRQ's free is refused until its last EP is gone */
		for (k = 0; k < RZ_EPS; k++) {
			st = k_free(x.fd, x.srq, KT_SRQ);
			CHECK(ST_IS(st, S_IS), "free of an SRQ in use: %s", ST(st));
			st = k_free(x.fd, sep[k], KT_EP);
			CHECK(st == DAT_SUCCESS, "server EP free while resizing: %s",
			      ST(st));
			st = k_free(x.fd, cep[k], KT_EP);
			CHECK(st == DAT_SUCCESS, "client EP free: %s", ST(st));
		}
		/* refused (INVALID_STATE) only while a resize is inside it */
		for (i = 0; i < 1000000; i++) {
			st = k_free(x.fd, x.srq, KT_SRQ);
			if (!ST_IS(st, S_IS))
				break;
		}
		CHECK(st == DAT_SUCCESS, "free of the SRQ while resizing: %s",
		      ST(st));
		atomic_store(&x.freed, true);
		atomic_store(&x.stop, true);
		pthread_join(t, NULL);
		CHECK(!x.bad, "resize answered %s", ST(x.bad));
	}
	CHECK(x.resizes > 0, "no resize ran");
	side_unmap(&s);
	side_unmap(&c);
	close(x.fd);
	left = objects_left(10.0);
	CHECK(left == 0, "%ld objects left after closing the file", left);
}

/*
 * Device removal under stalled sends, racing frees.  The server's SRQ runs
 * dry, so rxe1's EPs hold sends that wait out RNR; rxe1 goes while a thread
 * frees half of its EPs.  Every free succeeds, and every send of an EP
 * still there completes exactly once (flushed, unless it was among the
 * few the SRQ took): the device's QPs are flushed, not dropped.  A
 * completion left in the EVD's CQ would name the freed EPs' memory.
 */
enum { DRF_EPS = 8, DRF_SENDS = 12, DRF_BUFS = 4 };

struct drf {
	int fd;
	uint32_t cep[DRF_EPS];
	uint32_t st[DRF_EPS / 2];
	atomic_int go;
};

static void *drf_freer(void *p)
{
	struct drf *x = p;
	int i;

	while (!atomic_load(&x->go))
		;
	for (i = 0; i < DRF_EPS / 2; i++)
		x->st[i] = k_free(x->fd, x->cep[i], KT_EP);
	return NULL;
}

static int set_kdat_param(const char *name, int v);

/*
 * max_ring_mb as it was before a case lowered it: put back at exit too,
 * so a case that dies in a REQUIRE leaves the later ones the real cap.
 */
static int ring_mb_saved = -1;

static void ring_mb_restore(void)
{
	if (ring_mb_saved > 0)
		set_kdat_param("max_ring_mb", ring_mb_saved);
	ring_mb_saved = -1;
}

static int ring_mb_lower(int mb)
{
	static bool registered;
	int old = set_kdat_param("max_ring_mb", mb);

	if (old > 0 && ring_mb_saved < 0)
		ring_mb_saved = old;
	if (!registered) {
		atexit(ring_mb_restore);
		registered = true;
	}
	return old;
}

/* Set kdat's module parameter @name to @v: the old value, or -1. */
static int set_kdat_param(const char *name, int v)
{
	char path[128];
	FILE *f;
	int old = -1;

	snprintf(path, sizeof(path), "/sys/module/kdat/parameters/%s", name);
	f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%d", &old) != 1)
		old = -1;
	fclose(f);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%d\n", v);
	if (fclose(f))
		return -1;
	return old;
}

/* kdat's RNR back-off (IB encoding), read at connect. */
static int set_min_rnr_timer(int v)
{
	return set_kdat_param("min_rnr_timer", v);
}

static void case_device_removal_flushes_vs_frees(void)
{
	static uint8_t seen[DRF_EPS][DRF_SENDS];
	static struct drf x;
	struct side s, c;
	struct kdat_uevent e;
	uint32_t st, srq;
	pthread_t t;
	int i, j, got = 0, rc, ok = 0, flushed = 0;
	int old_rnr;
	long left;

	memset(seen, 0, sizeof(seen));
	REQUIRE(rxe1_restore(), "rxe1 is not ACTIVE");
	/*
	 * 10.24 ms, not 0.64 ms, between RNR retries: eight stalled senders
	 * retrying every jiffy took a KASAN guest's CPUs (this case took 50 s
	 * to over 460 s there).  The stall is what is tested, not its pace.
	 */
	old_rnr = set_min_rnr_timer(20);
	x.fd = kdat_open();
	open_side(x.fd, "rxe0", &s);
	open_side(x.fd, "rxe1", &c);
	st = k_srq(x.fd, s.ia, s.pz, 16, &srq, NULL);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	for (i = 0; i < DRF_BUFS; i++)
		REQUIRE(k_srq_post(x.fd, srq, s.lctx, s.buf + i * 1024, 1024, i) ==
			DAT_SUCCESS, "srq post");
	for (i = 0; i < DRF_EPS; i++) {
		st = k_ep(x.fd, c.ia, c.pz, c.evd, c.cevd, 0, &x.cep[i]);
		REQUIRE(st == DAT_SUCCESS, "client ep %d: %s", i, ST(st));
		connect_pair(&s, &c, x.cep[i], srq, s.pz);
	}
	for (i = 0; i < DRF_EPS; i++)
		for (j = 0; j < DRF_SENDS; j++) {
			st = k_ep_post(x.fd, x.cep[i], KDAT_POST_SEND, c.lctx,
				       c.buf, 64, (uint64_t)i * DRF_SENDS + j);
			REQUIRE(st == DAT_SUCCESS, "send %d/%d: %s", i, j, ST(st));
		}
	/* the SRQ took its buffers: every other send now waits out RNR */
	while (got < DRF_BUFS &&
	       kr_next_event(x.fd, &s.ring, s.evd, 20000000, &e, NULL))
		if (e.event_number == DAT_DTO_COMPLETION_EVENT)
			got++;
	REQUIRE(got == DRF_BUFS, "the server received %d of %d", got, DRF_BUFS);

	pthread_create(&t, NULL, drf_freer, &x);
	atomic_store(&x.go, 1);
	rc = rxe1_delete();
	CHECK(rc == 0, "rdma link delete rxe1: exit %d", rc);
	pthread_join(t, NULL);
	for (i = 0; i < DRF_EPS / 2; i++)
		CHECK(x.st[i] == DAT_SUCCESS, "free of EP %d racing the removal: %s",
		      i, ST(x.st[i]));

	CHECK(await_catastrophe(x.fd, &c),
	      "no DAT_ASYNC_ERROR_IA_CATASTROPHIC on rxe1's async EVD within 30 s");

	/* told only after the hardware went: every flush is in the ring */
	while (kr_next_event(x.fd, &c.ring, c.evd, 0, &e, NULL)) {
		if (e.event_number != DAT_DTO_COMPLETION_EVENT)
			continue;
		/* a freed EP's flushed sends name no EP any more */
		i = (int)(e.cookie / DRF_SENDS);
		j = (int)(e.cookie % DRF_SENDS);
		if (i >= DRF_EPS || (e.handle != x.cep[i] &&
				     (e.handle || i >= DRF_EPS / 2))) {
			CHECK(0, "completion of cookie %llu names EP %u",
			      (unsigned long long)e.cookie, e.handle);
			continue;
		}
		CHECK(!seen[i][j]++, "send %d/%d completed twice", i, j);
		if (i < DRF_EPS / 2)
			continue;	/* freed: its events may come before */
		if (e.status == DAT_DTO_SUCCESS)
			ok++;
		else
			flushed++;
	}
	for (i = DRF_EPS / 2; i < DRF_EPS; i++)
		for (j = 0; j < DRF_SENDS; j++)
			CHECK(seen[i][j] == 1,
			      "send %d/%d of an EP the device left: %d completions",
			      i, j, seen[i][j]);
	CHECK(ok <= DRF_BUFS && ok + flushed == DRF_EPS / 2 * DRF_SENDS,
	      "%d succeeded and %d flushed of %d", ok, flushed,
	      DRF_EPS / 2 * DRF_SENDS);

	side_unmap(&s);
	side_unmap(&c);
	close(x.fd);
	if (old_rnr >= 0)
		set_min_rnr_timer(old_rnr);
	left = objects_left(10.0);
	CHECK(left == 0, "%ld objects left after closing the file", left);
	CHECK(rxe1_restore(), "rxe1 did not come back ACTIVE within 30 s of rdma link add");
}

/* ======================================================================= */
/* A connection EVD of another IA of the file, against that IA's close     */
/* ======================================================================= */

/*
 * Two IAs A and B in one file.  Threads create EPs on B whose connection
 * EVD is A's and free them again, a thread frees A's connection EVD (every
 * other iteration), and the main thread closes A abruptly, all at random
 * moments.  Every create
 * either succeeds or names the EVD invalid (A closed, or the EVD freed);
 * every EP made is freed with DAT_SUCCESS, also after A is gone; the EVD's
 * free succeeds at most once, and only when no EP used it, else it is in
 * use or gone; A's close always succeeds.  Even iterations: one EP of B,
 * made first, holds the EVD through A's close, and nobody frees the EVD;
 * B's close ends them.  Odd ones: a thread frees the EVD, and the file's
 * close ends B.  Nothing is left either way.
 */
#define XIA_THREADS	2

struct xia {
	struct side a, b;
	pthread_barrier_t bar;
	atomic_bool stop;
	atomic_int made, evd_freed;
	uint32_t free_st;
	int it;
};

/* Make up to 4 EPs of B on A's connection EVD, hold them, free them. */
static void *xia_creator(void *p)
{
	struct xia *x = p;
	uint32_t ep[4], st;
	int i, n;

	pthread_barrier_wait(&x->bar);
	while (!atomic_load(&x->stop) && !kr_failed()) {
		for (n = 0; n < 4; n++) {
			st = k_ep(x->b.fd, x->b.ia, x->b.pz, x->b.evd,
				  x->a.cevd, 0, &ep[n]);
			CHECK(ALLOW(st, S_OK, S_IH),
			      "iteration %d: EP of B on A's connection EVD: %s (want SUCCESS or INVALID_HANDLE)",
			      x->it, ST(st));
			if (st != DAT_SUCCESS)
				break;
			atomic_fetch_add(&x->made, 1);
		}
		for (i = 0; i < n; i++) {
			st = k_free(x->b.fd, ep[i], KT_EP);
			CHECK(st == DAT_SUCCESS,
			      "iteration %d: free of EP %u of B: %s", x->it,
			      ep[i], ST(st));
		}
	}
	return NULL;
}

static void *xia_evd_freer(void *p)
{
	struct xia *x = p;

	pthread_barrier_wait(&x->bar);
	/* every other iteration: A's close alone takes the EVD */
	if (!(x->it & 1)) {
		x->free_st = DAT_INVALID_HANDLE;
		return NULL;
	}
	spin(x->it * 7919 % 200000);
	x->free_st = k_free(x->a.fd, x->a.cevd, KT_EVD);
	return NULL;
}

static void case_conn_evd_of_another_ia_vs_its_close(void)
{
	int it, n = iters(100), i;
	uint64_t rng = 11 ^ (uint64_t)getpid();
	long made = 0, left;
	int freed = 0;

	for (it = 0; it < n && !kr_failed(); it++) {
		static struct xia x;
		pthread_t t[XIA_THREADS + 1];
		struct kdat_ioc_ia_close c = { .flags = DAT_CLOSE_ABRUPT_FLAG };
		int fd = kdat_open();
		uint32_t st, held;

		memset(&x, 0, sizeof(x));
		x.it = it;
		open_side(fd, "rxe0", &x.a);
		open_side(fd, "rxe1", &x.b);
		/* even iterations: one EP of B on A's EVD lives through A's close */
		held = 0;
		if (!(it & 1)) {
			st = k_ep(fd, x.b.ia, x.b.pz, x.b.evd, x.a.cevd, 0, &held);
			CHECK(st == DAT_SUCCESS, "iteration %d: EP of B on A's connection EVD: %s",
			      it, ST(st));
		}
		pthread_barrier_init(&x.bar, NULL, XIA_THREADS + 2);
		for (i = 0; i < XIA_THREADS; i++)
			pthread_create(&t[i], NULL, xia_creator, &x);
		pthread_create(&t[XIA_THREADS], NULL, xia_evd_freer, &x);
		pthread_barrier_wait(&x.bar);
		spin(rnd(&rng) % 200000);
		c.ia = x.a.ia;
		st = KIOC(fd, KDAT_IOC_IA_CLOSE, &c);
		CHECK(st == DAT_SUCCESS,
		      "iteration %d: abrupt close of A while B's EPs use its EVD: %s",
		      it, ST(st));
		spin(rnd(&rng) % 50000);
		atomic_store(&x.stop, true);
		for (i = 0; i <= XIA_THREADS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&x.bar);
		CHECK(ALLOW(x.free_st, S_OK, S_IS, S_IH),
		      "iteration %d: free of A's connection EVD: %s (want SUCCESS, INVALID_STATE or INVALID_HANDLE)",
		      it, ST(x.free_st));
		freed += x.free_st == DAT_SUCCESS;
		/* A and all of it are gone; B still opens EPs, not on A's EVD */
		st = k_ep(fd, x.b.ia, x.b.pz, x.b.evd, x.a.cevd, 0, &(uint32_t){0});
		CHECK(ST_IS(st, S_IH), "iteration %d: EP on the EVD of closed A: %s",
		      it, ST(st));
		/* odd iterations: the file's close takes B and its EPs */
		if (it & 1) {
			side_unmap(&x.a);
			side_unmap(&x.b);
			close(fd);
			left = objects_left(5.0);
		} else {
			st = k_free(fd, held, KT_EP);
			CHECK(st == DAT_SUCCESS, "iteration %d: free of B's EP after A closed: %s",
			      it, ST(st));
			c.ia = x.b.ia;
			st = KIOC(fd, KDAT_IOC_IA_CLOSE, &c);
			CHECK(st == DAT_SUCCESS, "iteration %d: close of B: %s", it, ST(st));
			left = objects_left(5.0);
			side_unmap(&x.a);
			side_unmap(&x.b);
			close(fd);
		}
		CHECK(left == 0, "iteration %d: %ld objects left after both IAs closed (%d EPs made)",
		      it, left, atomic_load(&x.made));
		made += atomic_load(&x.made);
	}
	/* the race needs the EPs: a module refusing them all tests nothing */
	CHECK(made > 0, "no EP was made on another IA's connection EVD in %d iterations",
	      it);
	kr_pass_note("%d iterations, %ld EPs made on another IA's EVD, its free won %d times",
		     it, made, freed);
}

/* ======================================================================= */
/* A user's CQ growth counts against its file's ring cap                    */
/* ======================================================================= */

/*
 * An EP on an SRQ grows its recv EVD's CQ to hold all the SRQ's receives
 * (kdat_evd_cq_charge), and that CQ never shrinks.  Before, the growth was
 * accounted nowhere: one SRQ of the device's largest size, pinned in any
 * number of one-entry EVDs, grew each one's CQ to that size (rxe: 4 MiB of
 * vmalloc for 16384 entries, 32768 slots of 128 bytes), a process's way to
 * the host's memory past its cgroup and every cap.  Now it counts against
 * max_ring_mb with the EVD's ring: with the cap at 16 MiB, growing the CQs
 * of a few EVDs (at most 16 at any size) to 16384 entries is allowed, the
 * next EP is refused
 * (DAT_INSUFFICIENT_RESOURCES), and freeing the EVDs gives the room back.
 * An SRQ resize that would grow the CQs of the EVDs pinning it past the cap
 * is refused the same way, and leaves the SRQ as it was.
 */
#define CQCAP_MB 16
#define CQCAP_DEPTH 16384
#define CQCAP_TRIES 64

static void case_evd_cq_growth_counts_against_the_ring_cap(void)
{
	static uint32_t evd[CQCAP_TRIES];
	struct kdat_ioc_srq_query q;
	int fd, old, i, n = 0, made = 0;
	uint32_t srq, ep, st = DAT_SUCCESS;
	struct side s;

	old = ring_mb_lower(CQCAP_MB);
	REQUIRE(old > 0, "cannot set max_ring_mb");
	fd = kdat_open();
	open_side(fd, "rxe0", &s);

	/* one big SRQ, pinned in one-entry EVDs by EPs freed at once */
	st = k_srq(fd, s.ia, s.pz, CQCAP_DEPTH, &srq, NULL);
	CHECK(st == DAT_SUCCESS, "SRQ of %d: %s", CQCAP_DEPTH, ST(st));
	for (n = 0; n < CQCAP_TRIES && !kr_failed(); n++) {
		st = k_evd(fd, s.ia, 1, DAT_EVD_DTO_FLAG, &evd[n], NULL);
		if (st != DAT_SUCCESS)
			break;
		st = k_ep(fd, s.ia, s.pz, evd[n], s.cevd, srq, &ep);
		if (st != DAT_SUCCESS) {
			n++;	/* the EVD was made */
			break;
		}
		made++;
		st = k_free(fd, ep, KT_EP);
		CHECK(st == DAT_SUCCESS, "EP free: %s", ST(st));
	}
	CHECK(ST_IS(st, DAT_INSUFFICIENT_RESOURCES),
	      "after %d EVDs grown to %d entries with max_ring_mb %d: %s",
	      made, CQCAP_DEPTH, CQCAP_MB, ST(st));
	/* each counted as 32768 slots of 128 bytes: 4 MiB */
	CHECK(made > 0 && made <= CQCAP_MB / 4,
	      "%d EVDs grown to %d entries under a cap of %d MiB", made,
	      CQCAP_DEPTH, CQCAP_MB);
	for (i = 0; i < n; i++) {
		st = k_free(fd, evd[i], KT_EVD);
		CHECK(st == DAT_SUCCESS, "EVD free: %s", ST(st));
	}
	/* their room is back */
	st = k_evd(fd, s.ia, 1, DAT_EVD_DTO_FLAG, &evd[0], NULL);
	CHECK(st == DAT_SUCCESS, "EVD after the frees: %s", ST(st));
	st = k_ep(fd, s.ia, s.pz, evd[0], s.cevd, srq, &ep);
	CHECK(st == DAT_SUCCESS, "EP after the frees: %s", ST(st));
	CHECK(k_free(fd, ep, KT_EP) == DAT_SUCCESS &&
	      k_free(fd, evd[0], KT_EVD) == DAT_SUCCESS &&
	      k_free(fd, srq, KT_SRQ) == DAT_SUCCESS, "frees");

	/* a small SRQ pinned in 20 EVDs, then resized past the cap */
	st = k_srq(fd, s.ia, s.pz, 64, &srq, NULL);
	CHECK(st == DAT_SUCCESS, "SRQ of 64: %s", ST(st));
	for (n = 0; n < 20 && !kr_failed(); n++) {
		st = k_evd(fd, s.ia, 1, DAT_EVD_DTO_FLAG, &evd[n], NULL);
		CHECK(st == DAT_SUCCESS, "EVD %d: %s", n, ST(st));
		st = k_ep(fd, s.ia, s.pz, evd[n], s.cevd, srq, &ep);
		CHECK(st == DAT_SUCCESS, "EP %d: %s", n, ST(st));
		CHECK(k_free(fd, ep, KT_EP) == DAT_SUCCESS, "EP free");
	}
	st = k_srq_op(fd, KDAT_IOC_SRQ_RESIZE, srq, CQCAP_DEPTH);
	CHECK(ST_IS(st, DAT_INSUFFICIENT_RESOURCES),
	      "resize of an SRQ pinned in %d EVDs to %d with max_ring_mb %d: %s",
	      n, CQCAP_DEPTH, CQCAP_MB, ST(st));
	CHECK(k_srq_query(fd, srq, &q) == DAT_SUCCESS &&
	      q.max_recv_dtos == 64,
	      "the refused resize left max_recv_dtos %d", q.max_recv_dtos);
	for (i = 0; i < n; i++)
		CHECK(k_free(fd, evd[i], KT_EVD) == DAT_SUCCESS, "EVD free");
	st = k_srq_op(fd, KDAT_IOC_SRQ_RESIZE, srq, 4096);
	CHECK(st == DAT_SUCCESS, "resize with no EVD pinning it: %s", ST(st));
	CHECK(k_free(fd, srq, KT_SRQ) == DAT_SUCCESS, "SRQ free");
	side_unmap(&s);
	close(fd);
	ring_mb_restore();
	kr_pass_note("%d EVDs grown to %d entries under %d MiB", made,
		     CQCAP_DEPTH, CQCAP_MB);
}

/*
 * A ring's pages stay alive while the process maps them, after its
 * object is freed; they stay counted against max_ring_mb as long.  Before,
 * the free gave the room back at once: mapping a ring near the cap and
 * freeing its EVD, over and over, pinned any amount past the cap.  With
 * the cap at 8 MiB: an EVD of 16384 events (4 MiB of ring) is made, mapped
 * and freed; while the mapping stays, a second is refused (also with the
 * mapping split in two VMAs, and with one of them gone); once it is all
 * unmapped, the second is made.
 */
#define RPCAP_MB 8
#define RPCAP_QLEN 16384

static void case_ring_pages_count_until_their_last_mapping_goes(void)
{
	struct kring r1, r2;
	uint32_t e1, e2, st;
	int fd, old;
	struct side s;

	old = ring_mb_lower(RPCAP_MB);
	REQUIRE(old > 0, "cannot set max_ring_mb");
	fd = kdat_open();
	open_side(fd, "rxe0", &s);
	st = k_evd(fd, s.ia, RPCAP_QLEN, DAT_EVD_SOFTWARE_FLAG, &e1, &r1);
	CHECK(st == DAT_SUCCESS && r1.base, "EVD of %d: %s", RPCAP_QLEN,
	      ST(st));
	st = k_free(fd, e1, KT_EVD);
	CHECK(st == DAT_SUCCESS, "EVD free: %s", ST(st));
	st = k_evd(fd, s.ia, RPCAP_QLEN, DAT_EVD_SOFTWARE_FLAG, &e2, NULL);
	CHECK(ST_IS(st, DAT_INSUFFICIENT_RESOURCES),
	      "a second EVD of %d while the first's ring is still mapped: %s",
	      RPCAP_QLEN, ST(st));
	if (st == DAT_SUCCESS)
		k_free(fd, e2, KT_EVD);
	/*
	 * Unmapping its second page splits the mapping in two VMAs; either
	 * one left keeps the ring counted.
	 */
	if (r1.base) {
		CHECK(!munmap(r1.base + 4096, 4096),
		      "munmap of the second page: %s", strerror(errno));
		st = k_evd(fd, s.ia, RPCAP_QLEN, DAT_EVD_SOFTWARE_FLAG, &e2,
			   NULL);
		CHECK(ST_IS(st, DAT_INSUFFICIENT_RESOURCES),
		      "a second EVD with the first's ring mapped in two parts: %s",
		      ST(st));
		if (st == DAT_SUCCESS)
			k_free(fd, e2, KT_EVD);
		CHECK(!munmap(r1.base, 4096), "munmap of the first page: %s",
		      strerror(errno));
		st = k_evd(fd, s.ia, RPCAP_QLEN, DAT_EVD_SOFTWARE_FLAG, &e2,
			   NULL);
		CHECK(ST_IS(st, DAT_INSUFFICIENT_RESOURCES),
		      "a second EVD with the first's ring mapped after page 2: %s",
		      ST(st));
		if (st == DAT_SUCCESS)
			k_free(fd, e2, KT_EVD);
		CHECK(!munmap(r1.base + 8192, r1.size - 8192),
		      "munmap of the rest: %s", strerror(errno));
	}
	st = k_evd(fd, s.ia, RPCAP_QLEN, DAT_EVD_SOFTWARE_FLAG, &e2, &r2);
	CHECK(st == DAT_SUCCESS, "a second EVD once the first is unmapped: %s",
	      ST(st));
	CHECK(k_free(fd, e2, KT_EVD) == DAT_SUCCESS, "EVD free");
	kr_unmap(&r2);
	side_unmap(&s);
	close(fd);
	ring_mb_restore();
}

/* ======================================================================= */
/* The rdma cgroup bounds what users take of a device through kdat          */
/* ======================================================================= */

/*
 * A user IA counts as an HCA handle and every object made in it as an
 * HCA object of the creating process's rdma cgroup, as uverbs' objects
 * do, so rdma.max bounds a group of users whatever number of files they
 * open.  A child in a cgroup with rdma.max "rxe0 hca_handle=1
 * hca_object=4" opens one IA (its async EVD is the first object); a
 * second IA is refused; three PZs fill the objects and a fourth is
 * refused; freeing one lets one more in; another file of the same
 * process is bounded alike.  Once the child is gone rdma.current is 0.
 */
#define RCG_DIR "kdat_race_rdma"

#define RCG_MNT "/tmp/kdat-race-cgroup2"

/* What rcg_begin changed, for rcg_end to put back. */
static struct {
	const char *root;
	const char *ctl;	/* the controller a case turns on */
	bool mounted, enabled;
} rcg;

/* The cgroup2 root (the system's, or one mounted here), for controller @c. */
static const char *rcg_begin(const char *c)
{
	char ctl[512] = "", path[256];
	FILE *f;
	size_t n;

	memset(&rcg, 0, sizeof(rcg));
	rcg.ctl = c;
	if (!access("/sys/fs/cgroup/cgroup.controllers", F_OK)) {
		rcg.root = "/sys/fs/cgroup";
	} else {
		mkdir(RCG_MNT, 0755);
		if (mount("none", RCG_MNT, "cgroup2", 0, NULL))
			return NULL;
		rcg.root = RCG_MNT;
		rcg.mounted = true;
	}
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", rcg.root);
	f = fopen(path, "r");
	if (f) {
		n = fread(ctl, 1, sizeof(ctl) - 1, f);
		ctl[n] = 0;
		fclose(f);
		/* turned on by this case: turned off by rcg_end */
		rcg.enabled = !strstr(ctl, rcg.ctl);
	}
	return rcg.root;
}

static bool rcg_write(const char *root, const char *file, const char *v);

/* Put back what rcg_begin changed. */
static void rcg_end(void)
{
	char off[32];

	snprintf(off, sizeof(off), "-%s", rcg.ctl ? rcg.ctl : "");
	if (rcg.enabled)
		rcg_write(rcg.root, "cgroup.subtree_control", off);
	if (rcg.mounted)
		umount(RCG_MNT);
	memset(&rcg, 0, sizeof(rcg));
}

/*
 * A fresh cgroup @name under @root (path into @cg) with rcg_begin's
 * controller on and, unless NULL, rdma.max @max; false (a CHECK failed)
 * if not.  Output is flushed, for the fork that follows.
 */
static bool rcg_make(const char *root, const char *name, const char *max,
		     char *cg, size_t n)
{
	char on[32];

	snprintf(cg, n, "%s/%s", root, name);
	snprintf(on, sizeof(on), "+%s", rcg.ctl);
	rmdir(cg);
	CHECK(rcg_write(root, "cgroup.subtree_control", on),
	      "cannot enable the %s controller in %s: %s", rcg.ctl, root,
	      strerror(errno));
	CHECK(!mkdir(cg, 0755), "mkdir %s: %s", cg, strerror(errno));
	CHECK(!max || rcg_write(cg, "rdma.max", max),
	      "cannot write %s/rdma.max: %s", cg, strerror(errno));
	fflush(NULL);
	return !kr_failed();
}

/*
 * Run @child in a fresh cgroup @name under @root (rcg_make; path into
 * @cg) in a forked process; true if it exited 0 (a CHECK says why not).
 */
static bool rcg_run(const char *root, const char *name, const char *max,
		    int (*child)(const char *cg), char *cg, size_t n)
{
	int status = -1;
	pid_t pid;

	if (!rcg_make(root, name, max, cg, n))
		return false;
	pid = fork();
	REQUIRE(pid >= 0, "fork: %s", strerror(errno));
	if (!pid)
		_exit(child(cg));
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child in the cgroup: status 0x%x", status);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* rdma.current of @cg, into @cur. */
static bool rcg_current(const char *cg, char *cur, size_t len)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/rdma.current", cg);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(cur, 1, len - 1, f);
	cur[n] = 0;
	fclose(f);
	return true;
}

static bool rcg_write(const char *root, const char *file, const char *v)
{
	char path[256];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", root, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = write(fd, v, strlen(v));
	close(fd);
	return n == (ssize_t)strlen(v);
}

static uint32_t rcg_ia_open(int fd, uint32_t *ia)
{
	struct kdat_ioc_ia_open o = { .async_qlen = 8 };
	uint32_t st;

	snprintf(o.name, sizeof(o.name), "rxe0");
	st = KIOC(fd, KDAT_IOC_IA_OPEN, &o);
	*ia = st == DAT_SUCCESS ? o.ia : 0;
	return st;
}

/* In the cgroup: every step as above; the exit status says if all held. */
static int rcg_child(const char *cg)
{
	uint32_t ia, ia2, pz[4], st;
	int fd, fd2, i;

	if (!rcg_write(cg, "cgroup.procs", "0")) {
		fprintf(stderr, "# cannot join %s: %s\n", cg, strerror(errno));
		return 2;
	}
	fd = kdat_open();
	st = rcg_ia_open(fd, &ia);
	CHECK(st == DAT_SUCCESS, "IA under hca_handle=1: %s", ST(st));
	st = rcg_ia_open(fd, &ia2);
	CHECK(ST_IS(st, DAT_INSUFFICIENT_RESOURCES),
	      "a second IA under hca_handle=1: %s", ST(st));
	fd2 = kdat_open();
	st = rcg_ia_open(fd2, &ia2);
	CHECK(ST_IS(st, DAT_INSUFFICIENT_RESOURCES),
	      "a second IA in another file under hca_handle=1: %s", ST(st));
	close(fd2);
	for (i = 0; i < 3; i++) {
		st = k_pz(fd, ia, &pz[i]);
		CHECK(st == DAT_SUCCESS, "PZ %d of 3 more objects: %s", i,
		      ST(st));
	}
	st = k_pz(fd, ia, &pz[3]);
	CHECK(ST_IS(st, DAT_INSUFFICIENT_RESOURCES),
	      "a fifth object under hca_object=4: %s", ST(st));
	CHECK(k_free(fd, pz[0], KT_PZ) == DAT_SUCCESS, "PZ free");
	st = k_pz(fd, ia, &pz[0]);
	CHECK(st == DAT_SUCCESS, "a PZ after a free: %s", ST(st));
	close(fd);
	return kr_failed() ? 1 : 0;
}

static void case_rdma_cgroup_bounds_ias_and_objects(void)
{
	const char *root = rcg_begin("rdma");
	char cg[200] = "", cur[512] = "";

	REQUIRE(root, "no cgroup2 hierarchy: %s", strerror(errno));
	if (!rcg_run(root, RCG_DIR, "rxe0 hca_handle=1 hca_object=4",
		     rcg_child, cg, sizeof(cg)))
		goto out;
	/* its file closed: all given back */
	CHECK(rcg_current(cg, cur, sizeof(cur)) &&
	      (!strstr(cur, "rxe0") ||
	       strstr(cur, "rxe0 hca_handle=0 hca_object=0")),
	      "rdma.current after the child: %s", cur);
out:
	CHECK(!rmdir(cg), "rmdir %s: %s", cg, strerror(errno));
	rcg_end();
}

/*
 * The charges of objects on a device that goes go back with it: the
 * device's cgroup accounting ends at its removal, and a charge given back
 * later is the rdma cgroup's "Invalid device ... or rdma cgroup" warning
 * (the kernel log check fails the case on it).  A child in a cgroup opens
 * an IA on rxe1 with its usual objects, rxe1 is deleted, the child hears
 * the IA's catastrophe, then closes everything; rdma.current lists rxe1
 * no more.  (Last: it takes rxe1 away and puts it back.)
 */
static void case_rdma_cgroup_charges_end_with_the_device(void)
{
	const char *root = rcg_begin("rdma");
	char cg[200], cur[512] = "", b = 0;
	int status = -1, c2p[2], p2c[2];
	pid_t pid;

	REQUIRE(root, "no cgroup2 hierarchy: %s", strerror(errno));
	REQUIRE(!pipe(c2p) && !pipe(p2c), "pipe: %s", strerror(errno));
	if (!rcg_make(root, RCG_DIR "_removal",
		      "rxe1 hca_handle=2 hca_object=32", cg, sizeof(cg)))
		goto out;
	pid = fork();
	REQUIRE(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		struct side c;
		int fd;

		if (!rcg_write(cg, "cgroup.procs", "0"))
			_exit(2);
		fd = kdat_open();
		open_side(fd, "rxe1", &c);
		if (write(c2p[1], "r", 1) != 1 || read(p2c[0], &b, 1) != 1)
			_exit(3);
		CHECK(await_catastrophe(fd, &c),
		      "no catastrophe on rxe1's async EVD within 30 s");
		side_unmap(&c);
		close(fd);
		_exit(kr_failed() ? 1 : 0);
	}
	CHECK(read(c2p[0], &b, 1) == 1, "the child never opened its IA");
	CHECK(rcg_current(cg, cur, sizeof(cur)) && strstr(cur, "rxe1") &&
	      !strstr(cur, "rxe1 hca_handle=0"),
	      "rdma.current with the child's IA open: %s", cur);
	CHECK(rxe1_delete() == 0, "rdma link delete rxe1");
	CHECK(write(p2c[1], "g", 1) == 1, "cannot wake the child");
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child in the cgroup: status 0x%x", status);
	CHECK(rcg_current(cg, cur, sizeof(cur)) && !strstr(cur, "rxe1"),
	      "rdma.current after rxe1 went and the child closed all: %s",
	      cur);
	CHECK(rxe1_restore(), "rxe1 did not come back");
out:
	close(c2p[0]);
	close(c2p[1]);
	close(p2c[0]);
	close(p2c[1]);
	CHECK(!rmdir(cg), "rmdir %s: %s", cg, strerror(errno));
	rcg_end();
}

/*
 * Kernel memory a process makes kdat allocate is charged to its memory
 * cgroup, so a container's memory.max holds for it.  A child in a cgroup
 * of its own makes an SRQ of 2^18 one-segment buffers: the buffer
 * trackers (40 bytes each on 64 bits) and the post ring (64-byte
 * entries) raise the cgroup's memory.current by at least 96 bytes a
 * buffer, and the SRQ's free (its ring never mapped) lowers it by as
 * much.  Without __GFP_ACCOUNT on either, the rise falls short.
 */
#define MCG_BUFFERS	(1 << 18)
#define MCG_PER_BUFFER	96L

static long mcg_current(const char *cg)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.current", cg);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int mcg_child(const char *cg)
{
	long want = MCG_BUFFERS * MCG_PER_BUFFER, m0, m1, m2;
	uint32_t ia, pz, srq, st;
	int fd, i;

	if (!rcg_write(cg, "cgroup.procs", "0")) {
		fprintf(stderr, "# cannot join %s: %s\n", cg, strerror(errno));
		return 2;
	}
	/* CHECK, not REQUIRE: the verdict is the parent's to report */
	fd = kdat_open();
	st = rcg_ia_open(fd, &ia);
	if (st == DAT_SUCCESS)
		st = k_pz(fd, ia, &pz);
	CHECK(st == DAT_SUCCESS, "IA and PZ: %s", ST(st));
	m0 = mcg_current(cg);
	st = st ?: k_srq(fd, ia, pz, MCG_BUFFERS, &srq, NULL);
	CHECK(st == DAT_SUCCESS, "SRQ of %d: %s", MCG_BUFFERS, ST(st));
	if (st) {
		close(fd);
		return 1;
	}
	m1 = mcg_current(cg);
	CHECK(m0 >= 0 && m1 - m0 >= want,
	      "an SRQ of %d buffers charged %ld bytes, want at least %ld",
	      MCG_BUFFERS, m1 - m0, want);
	CHECK(k_free(fd, srq, KT_SRQ) == DAT_SUCCESS, "SRQ free");
	/* given back by the free itself; polled a while for any deferral */
	for (i = 0; i < 100; i++) {
		m2 = mcg_current(cg);
		if (m1 - m2 >= want)
			break;
		usleep(100 * 1000);
	}
	CHECK(m1 - m2 >= want,
	      "the SRQ's free gave back %ld bytes, want at least %ld",
	      m1 - m2, want);
	fprintf(stderr, "# SRQ of %d: charged %ld bytes, given back %ld\n",
		MCG_BUFFERS, m1 - m0, m1 - m2);
	close(fd);
	return kr_failed() ? 1 : 0;
}

static void case_memcg_charges_what_a_process_sizes(void)
{
	const char *root = rcg_begin("memory");
	char cg[200] = "";

	REQUIRE(root, "no cgroup2 hierarchy: %s", strerror(errno));
	rcg_run(root, "kdat_race_memory", NULL, mcg_child, cg, sizeof(cg));
	CHECK(!rmdir(cg), "rmdir %s: %s", cg, strerror(errno));
	rcg_end();
}

/* ======================================================================= */

static const struct kcase cases[] = {
	{ "abi_ioctl_size", case_abi_ioctl_size },
	{ "free_free_pz", case_free_free_pz },
	{ "free_free_evd", case_free_free_evd },
	{ "free_free_lmr", case_free_free_lmr },
	{ "free_free_srq", case_free_free_srq },
	{ "free_free_ep", case_free_free_ep },
	{ "free_free_psp", case_free_free_psp },
	{ "free_free_cr", case_free_free_cr },
	{ "free_vs_ops_pz", case_free_vs_ops_pz },
	{ "free_vs_ops_evd", case_free_vs_ops_evd },
	{ "free_vs_ops_lmr", case_free_vs_ops_lmr },
	{ "free_vs_ops_srq", case_free_vs_ops_srq },
	{ "free_vs_ops_ep", case_free_vs_ops_ep },
	{ "free_vs_ops_psp", case_free_vs_ops_psp },
	{ "free_vs_ops_cr", case_free_vs_ops_cr },
	{ "create_vs_guessed_free", case_create_vs_guessed_free },
	{ "ia_close_vs_creates", case_ia_close_vs_creates },
	{ "ia_close_vs_create_stalled_in_copy_out",
	  case_ia_close_vs_create_stalled_in_copy_out },
	{ "file_close_vs_ioctls", case_file_close_vs_ioctls },
	{ "process_kill_vs_ioctls", case_process_kill_vs_ioctls },
	{ "poll_vs_evd_free", case_poll_vs_evd_free },
	{ "evd_wait_vs_evd_free", case_evd_wait_vs_evd_free },
	{ "cno_wait_vs_notify_post_free", case_cno_wait_vs_notify_post_free },
	{ "srq_ops_vs_traffic_and_free", case_srq_ops_vs_traffic_and_free },
	{ "ep_connect_accept_disconnect_reset_free",
	  case_ep_connect_accept_disconnect_reset_free },
	{ "ep_disconnect_during_resolution",
	  case_ep_disconnect_during_resolution },
	{ "ep_disconnect_as_the_request_goes_out",
	  case_ep_disconnect_as_the_request_goes_out },
	{ "new_qp_takes_part_of_the_receives",
	  case_new_qp_takes_part_of_the_receives },
	{ "srq_post_concurrent_counts", case_srq_post_concurrent_counts },
	{ "ring_tail_rewriter_vs_kick", case_ring_tail_rewriter_vs_kick },
	{ "fork_child_inherited_handles", case_fork_child_inherited_handles },
	{ "ep_free_flush_into_small_evd", case_ep_free_flush_into_small_evd },
	{ "srq_resize_vs_connects_and_frees",
	  case_srq_resize_vs_connects_and_frees },
	{ "conn_evd_of_another_ia_vs_its_close",
	  case_conn_evd_of_another_ia_vs_its_close },
	{ "evd_cq_growth_counts_against_the_ring_cap",
	  case_evd_cq_growth_counts_against_the_ring_cap },
	{ "ring_pages_count_until_their_last_mapping_goes",
	  case_ring_pages_count_until_their_last_mapping_goes },
	{ "rdma_cgroup_bounds_ias_and_objects",
	  case_rdma_cgroup_bounds_ias_and_objects },
	/* last: these take rxe1 away and put it back */
	{ "device_removal_mid_traffic", case_device_removal_mid_traffic },
	{ "device_removal_flushes_vs_frees", case_device_removal_flushes_vs_frees },
	{ "memcg_charges_what_a_process_sizes",
	  case_memcg_charges_what_a_process_sizes },
	{ "rdma_cgroup_charges_end_with_the_device",
	  case_rdma_cgroup_charges_end_with_the_device },
};

int main(int argc, char **argv)
{
	const char *e = getenv("KDAT_RACE_SCALE");
	double deadline = 60;
	int failed;

	if (e && atof(e) > 0)
		scale = atof(e);
	e = getenv("KDAT_RACE_DEADLINE");
	if (e && atof(e) > 0)
		deadline = atof(e);
	signal(SIGPIPE, SIG_IGN);
	failed = run_cases(cases, sizeof(cases) / sizeof(cases[0]),
			   argc > 1 ? argv[1] : NULL, deadline);
	/* a case killed midway may have left rxe1 deleted */
	if (!rxe1_restore())
		fprintf(stderr, "kdat_race: rxe1 could not be restored\n");
	return failed ? 1 : 0;
}
