/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kdat_raw.h - raw /dev/kdat ABI helpers shared by the in-guest race test
 * (tests/user/race/kdat_race.c) and fuzzer (tests/user/fuzz/kdat_fuzz.c).
 * No libdat: ioctls, mmapped rings and the connection dance by hand, the
 * way tests/user/abi/abi_smoke.c does it, but thread safe and without
 * exit() on the first error (a case records its first failure and goes on
 * tearing down).
 *
 * Header only, every function static inline (one translation unit each).
 */
#ifndef KDAT_RAW_H
#define KDAT_RAW_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <dat/udat.h>
#include <uapi/kdat_abi.h>

/* Kernel-flavour DAT_HANDLE_TYPE numbers, as KDAT_IOC_FREE wants them
 * (the user flavour of <dat/udat.h> has CNO before SRQ). */
enum { KT_CR = 0, KT_EP = 1, KT_EVD = 2, KT_IA = 3, KT_LMR = 4, KT_PSP = 5,
       KT_PZ = 6, KT_RMR = 7, KT_RSP = 8, KT_SRQ = 9 };

static const char *const kt_name[] = { "CR", "EP", "EVD", "IA", "LMR", "PSP",
				       "PZ", "RMR", "RSP", "SRQ" };

/* Status of an ioctl that returned -1 (errno holds the reason). */
#define KST_ERRNO	0xffffffffu
#define ST_TYPE(s)	((uint32_t)(s) & DAT_TYPE_MASK)
#define ST_IS(s, t)	((s) != KST_ERRNO && ST_TYPE(s) == (uint32_t)(t))

#define KDAT_SERVER_ADDR	"192.0.2.1"	/* rxe0 on v0 */

/* ---- failure recording ---------------------------------------------- */

/*
 * A case runs in its own process.  The first failure is kept (later ones
 * only counted); kr_failed() lets loops stop early.  kr_die() also ends
 * the process at once (setup failures).
 */
static char kr_msg[1024];
static atomic_int kr_nfail;
static int kr_result_fd = -1;		/* pipe to the parent harness */
/* Live objects before the case began (left by an earlier case stuck in
 * the kernel); in-case leak checks count only what is above it. */
static long kr_baseline;

static inline bool kr_failed(void)
{
	return atomic_load_explicit(&kr_nfail, memory_order_relaxed) != 0;
}

static inline void kr_vfail(const char *fmt, va_list ap)
{
	if (atomic_fetch_add(&kr_nfail, 1) == 0)
		vsnprintf(kr_msg, sizeof(kr_msg), fmt, ap);
}

__attribute__((format(printf, 1, 2))) static inline void kr_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kr_vfail(fmt, ap);
	va_end(ap);
}

static char kr_note[256];

/* Detail for the PASS line ("PASS: fuzz_ioctls (123 ioctls)"). */
__attribute__((format(printf, 1, 2))) static inline void kr_pass_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(kr_note, sizeof(kr_note), fmt, ap);
	va_end(ap);
}

/*
 * Hand the verdict to the parent and leave (any thread may call it): the
 * first failure, then \x01 and the note.
 */
static inline void kr_finish(void)
{
	int n = atomic_load(&kr_nfail);
	char buf[1400];
	int len = 0;

	if (n)
		len = snprintf(buf, sizeof(buf), "%s%s", kr_msg,
			       n > 1 ? " (and more)" : "");
	if (kr_note[0])
		len += snprintf(buf + len, sizeof(buf) - len, "\x01%s", kr_note);
	if (len > 0 && kr_result_fd >= 0 && write(kr_result_fd, buf, (size_t)len) < 0) {
		/* nothing left to tell it with */
	}
	_exit(n ? 1 : 0);
}

__attribute__((format(printf, 1, 2), noreturn)) static inline void kr_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kr_vfail(fmt, ap);
	va_end(ap);
	kr_finish();
	__builtin_unreachable();
}

#define CHECK(c, ...)                                                     \
	do {                                                              \
		if (!(c))                                                 \
			kr_fail(__VA_ARGS__);                             \
	} while (0)
#define REQUIRE(c, ...)                                                   \
	do {                                                              \
		if (!(c))                                                 \
			kr_die(__VA_ARGS__);                              \
	} while (0)

/* A printable status: "0x80050000 (INVALID_HANDLE)" or "-1 errno 25". */
static inline const char *kr_st(uint32_t s, char *buf, size_t n)
{
	static const char *const names[] = {
		"SUCCESS", "ABORT", "CONN_QUAL_IN_USE", "INSUFFICIENT_RESOURCES",
		"INTERNAL_ERROR", "INVALID_HANDLE", "INVALID_PARAMETER",
		"INVALID_STATE", "LENGTH_ERROR", "MODEL_NOT_SUPPORTED",
		"PROVIDER_NOT_FOUND", "PRIVILEGES_VIOLATION",
		"PROTECTION_VIOLATION", "QUEUE_EMPTY", "QUEUE_FULL",
		"TIMEOUT_EXPIRED", "PROVIDER_ALREADY_REGISTERED",
		"PROVIDER_IN_USE", "INVALID_ADDRESS", "INTERRUPTED_CALL",
		"NOT_IMPLEMENTED",
	};
	uint32_t t = ST_TYPE(s) >> 16;

	if (s == KST_ERRNO)
		snprintf(buf, n, "ioctl -1 (%s)", strerror(errno));
	else
		snprintf(buf, n, "0x%08x (%s)", s,
			 t < sizeof(names) / sizeof(names[0]) ? names[t] : "?");
	return buf;
}
#define ST(s) kr_st((s), (char[96]){ 0 }, 96)

/* ---- ioctls ------------------------------------------------------------ */

/* Issue @cmd with hdr.size = @size; the DAT status or KST_ERRNO. */
static inline uint32_t kioc_sz(int fd, unsigned long cmd, void *arg,
			       uint32_t size)
{
	struct kdat_ioc_hdr *h = arg;

	h->size = size;
	h->status = 0;
	if (ioctl(fd, cmd, arg))
		return KST_ERRNO;
	return h->status;
}
#define KIOC(fd, cmd, a) kioc_sz((fd), (cmd), (a), sizeof(*(a)))

static inline uint32_t k_free(int fd, uint32_t id, uint32_t type)
{
	struct kdat_ioc_free f = { .handle = id, .type = type };

	return KIOC(fd, KDAT_IOC_FREE, &f);
}

/* ---- rings --------------------------------------------------------------- */

struct kring {
	struct kdat_ring_hdr *h;
	char *base;
	size_t size;
};

static inline int kr_map(int fd, uint64_t off, uint64_t size, struct kring *r)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)off);

	if (p == MAP_FAILED) {
		memset(r, 0, sizeof(*r));
		return -1;
	}
	r->base = p;
	r->h = p;
	r->size = size;
	return 0;
}

static inline void kr_unmap(struct kring *r)
{
	if (r->base)
		munmap(r->base, r->size);
	memset(r, 0, sizeof(*r));
}

static inline void *kr_slot(struct kring *r, uint32_t i)
{
	return r->base + r->h->entry_offset +
	       (size_t)(i & (r->h->entries - 1)) * r->h->entry_size;
}

/*
 * The next event of an event ring (one consumer per ring), waiting at most
 * @timeout_us in the kernel.  1 and *e filled, 0 on timeout or error
 * (*st says which).
 */
static inline int kr_next_event(int fd, struct kring *r, uint32_t evd,
				uint32_t timeout_us, struct kdat_uevent *e,
				uint32_t *st)
{
	uint32_t head = r->h->head, s = DAT_SUCCESS;

	if (__atomic_load_n(&r->h->tail, __ATOMIC_ACQUIRE) == head) {
		struct kdat_ioc_evd_wait w = { .evd = evd, .threshold = 1,
					       .timeout_us = timeout_us };

		s = KIOC(fd, KDAT_IOC_EVD_WAIT, &w);
		if (st)
			*st = s;
		if (__atomic_load_n(&r->h->tail, __ATOMIC_ACQUIRE) == head)
			return 0;
	}
	memcpy(e, kr_slot(r, head), sizeof(*e));
	__atomic_store_n(&r->h->head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

/* ---- objects ------------------------------------------------------------ */

struct side {
	int fd;
	const char *name;
	uint32_t ia, aevd, pz, evd, cevd, crevd, swevd, lmr, lctx;
	struct kring aring, ring, cring, crring, swring;
	char *buf;
	size_t buflen;
};

static inline uint32_t k_pz(int fd, uint32_t ia, uint32_t *pz)
{
	struct kdat_ioc_pz_create p = { .ia = ia };
	uint32_t s = KIOC(fd, KDAT_IOC_PZ_CREATE, &p);

	*pz = s == DAT_SUCCESS ? p.pz : 0;
	return s;
}

static inline uint32_t k_evd(int fd, uint32_t ia, int qlen, uint32_t flags,
			     uint32_t *evd, struct kring *ring)
{
	struct kdat_ioc_evd_create e = { .ia = ia, .qlen = qlen,
					 .flags = flags };
	uint32_t s = KIOC(fd, KDAT_IOC_EVD_CREATE, &e);

	*evd = s == DAT_SUCCESS ? e.evd : 0;
	if (s == DAT_SUCCESS && ring && kr_map(fd, e.ring_offset, e.ring_size, ring))
		kr_fail("mmap of EVD %u's ring: %s", e.evd, strerror(errno));
	return s;
}

static inline uint32_t k_lmr(int fd, uint32_t ia, uint32_t pz, void *buf,
			     size_t len, uint32_t *lmr, uint32_t *lctx)
{
	struct kdat_ioc_lmr_create l = {
		.ia = ia, .pz = pz, .addr = (uintptr_t)buf, .length = len,
		.priv = DAT_MEM_PRIV_LOCAL_READ_FLAG |
			DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
	};
	uint32_t s = KIOC(fd, KDAT_IOC_LMR_CREATE, &l);

	*lmr = s == DAT_SUCCESS ? l.lmr : 0;
	if (lctx)
		*lctx = s == DAT_SUCCESS ? l.lmr_context : 0;
	return s;
}

static inline uint32_t k_srq(int fd, uint32_t ia, uint32_t pz, int depth,
			     uint32_t *srq, struct kring *ring)
{
	struct kdat_ioc_srq_create c = { .ia = ia, .pz = pz,
					 .max_recv_dtos = depth,
					 .max_recv_iov = 1 };
	uint32_t s = KIOC(fd, KDAT_IOC_SRQ_CREATE, &c);

	*srq = s == DAT_SUCCESS ? c.srq : 0;
	if (s == DAT_SUCCESS && ring && kr_map(fd, c.ring_offset, c.ring_size, ring))
		kr_fail("mmap of SRQ %u's ring: %s", c.srq, strerror(errno));
	return s;
}

/* An EP; with @ring, its send ring mapped there if the module gave it one. */
static inline uint32_t k_ep_ring(int fd, uint32_t ia, uint32_t pz,
				 uint32_t evd, uint32_t cevd, uint32_t srq,
				 uint32_t *ep, struct kring *ring)
{
	struct kdat_ioc_ep_create c = {
		.ia = ia, .pz = pz, .recv_evd = evd, .request_evd = evd,
		.connect_evd = cevd, .srq = srq, .has_attr = 1,
		.attr = { .max_message_size = 4096, .max_request_dtos = 16,
			  .max_request_iov = 1, .max_recv_dtos = 16,
			  .max_recv_iov = 1 },
	};
	uint32_t s = KIOC(fd, KDAT_IOC_EP_CREATE, &c);

	*ep = s == DAT_SUCCESS ? c.ep : 0;
	if (s == DAT_SUCCESS && ring && c.ring_size &&
	    kr_map(fd, c.ring_offset, c.ring_size, ring))
		kr_fail("mmap of EP %u's send ring: %s", c.ep, strerror(errno));
	return s;
}

static inline uint32_t k_ep(int fd, uint32_t ia, uint32_t pz, uint32_t evd,
			    uint32_t cevd, uint32_t srq, uint32_t *ep)
{
	return k_ep_ring(fd, ia, pz, evd, cevd, srq, ep, NULL);
}

static inline uint32_t k_psp(int fd, uint32_t ia, uint32_t crevd,
			     uint64_t qual, uint32_t *psp)
{
	struct kdat_ioc_psp_create c = { .ia = ia, .evd = crevd,
					 .conn_qual = qual,
					 .flags = DAT_PSP_CONSUMER_FLAG };
	uint32_t s = KIOC(fd, KDAT_IOC_PSP_CREATE, &c);

	*psp = s == DAT_SUCCESS ? c.psp : 0;
	return s;
}

static inline uint32_t k_connect(int fd, uint32_t ep, uint64_t qual)
{
	struct kdat_ioc_ep_connect c = { .ep = ep, .conn_qual = qual,
					 .timeout_us = 0xffffffff };
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = inet_addr(KDAT_SERVER_ADDR);
	memcpy(c.addr, &sin, sizeof(sin));
	return KIOC(fd, KDAT_IOC_EP_CONNECT, &c);
}

static inline uint32_t k_accept(int fd, uint32_t cr, uint32_t ep)
{
	struct kdat_ioc_cr_accept a = { .cr = cr, .ep = ep };

	return KIOC(fd, KDAT_IOC_CR_ACCEPT, &a);
}

static inline uint32_t k_post_se(int fd, uint32_t evd, uint64_t ptr)
{
	struct kdat_ioc_evd_post_se p = { .evd = evd, .pointer = ptr };

	return KIOC(fd, KDAT_IOC_EVD_POST_SE, &p);
}

static inline uint32_t k_srq_query(int fd, uint32_t srq,
				   struct kdat_ioc_srq_query *q)
{
	memset(q, 0, sizeof(*q));
	q->srq = srq;
	q->mask = DAT_SRQ_FIELD_ALL;
	return KIOC(fd, KDAT_IOC_SRQ_QUERY, q);
}

static inline uint32_t k_srq_op(int fd, unsigned long cmd, uint32_t srq,
				int value)
{
	struct kdat_ioc_srq_op o = { .srq = srq, .value = value };

	return KIOC(fd, cmd, &o);
}

static inline uint32_t k_srq_post(int fd, uint32_t srq, uint32_t lctx,
				  void *addr, uint64_t len, uint64_t cookie)
{
	struct kdat_ioc_srq_post p = { .srq = srq, .nseg = 1, .cookie = cookie };

	p.seg[0].lmr_context = lctx;
	p.seg[0].addr = (uintptr_t)addr;
	p.seg[0].length = len;
	return KIOC(fd, KDAT_IOC_SRQ_POST, &p);
}

static inline uint32_t k_ep_post(int fd, uint32_t ep, uint32_t op,
				 uint32_t lctx, void *addr, uint64_t len,
				 uint64_t cookie)
{
	struct kdat_ioc_ep_post p = { .ep = ep, .op = op, .nseg = 1,
				      .cookie = cookie };

	p.seg[0].lmr_context = lctx;
	p.seg[0].addr = (uintptr_t)addr;
	p.seg[0].length = len;
	return KIOC(fd, KDAT_IOC_EP_POST, &p);
}

static inline uint32_t k_ep_state(int fd, uint32_t ep, uint32_t *state)
{
	struct kdat_ioc_ep_status s = { .ep = ep };
	uint32_t r = KIOC(fd, KDAT_IOC_EP_STATUS, &s);

	if (state)
		*state = s.state;
	return r;
}

/*
 * Open IA @name on @fd, its async EVD of @async_qlen, with a PZ, a DTO
 * EVD, a connection EVD, a CR EVD, a software EVD (rings mapped) and an
 * LMR over a 64 KiB buffer.
 */
static inline void open_side_q(int fd, const char *name, struct side *s,
			       int32_t async_qlen)
{
	struct kdat_ioc_ia_open o = { .async_qlen = async_qlen };
	uint32_t st;

	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->name = name;
	snprintf(o.name, sizeof(o.name), "%s", name);
	st = KIOC(fd, KDAT_IOC_IA_OPEN, &o);
	REQUIRE(st == DAT_SUCCESS, "ia_open %s: %s", name, ST(st));
	s->ia = o.ia;
	s->aevd = o.async_evd;
	REQUIRE(!kr_map(fd, o.async_ring_offset, o.async_ring_size, &s->aring),
		"mmap async ring: %s", strerror(errno));
	st = k_pz(fd, s->ia, &s->pz);
	REQUIRE(st == DAT_SUCCESS, "%s pz: %s", name, ST(st));
	st = k_evd(fd, s->ia, 256, DAT_EVD_DTO_FLAG, &s->evd, &s->ring);
	REQUIRE(st == DAT_SUCCESS, "%s dto evd: %s", name, ST(st));
	st = k_evd(fd, s->ia, 256, DAT_EVD_CONNECTION_FLAG, &s->cevd, &s->cring);
	REQUIRE(st == DAT_SUCCESS, "%s conn evd: %s", name, ST(st));
	st = k_evd(fd, s->ia, 256, DAT_EVD_CR_FLAG, &s->crevd, &s->crring);
	REQUIRE(st == DAT_SUCCESS, "%s cr evd: %s", name, ST(st));
	st = k_evd(fd, s->ia, 64, DAT_EVD_SOFTWARE_FLAG, &s->swevd, &s->swring);
	REQUIRE(st == DAT_SUCCESS, "%s sw evd: %s", name, ST(st));
	s->buflen = 1 << 16;
	s->buf = aligned_alloc(4096, s->buflen);
	REQUIRE(s->buf, "out of memory");
	memset(s->buf, 0, s->buflen);
	st = k_lmr(fd, s->ia, s->pz, s->buf, s->buflen, &s->lmr, &s->lctx);
	REQUIRE(st == DAT_SUCCESS, "%s lmr: %s", name, ST(st));
}

static inline void open_side(int fd, const char *name, struct side *s)
{
	open_side_q(fd, name, s, 64);
}

/* A conn_qual no other live PSP of this process uses. */
static inline uint64_t next_qual(void)
{
	static atomic_uint q;
	unsigned int n = atomic_fetch_add(&q, 1);

	return 20000 + ((unsigned int)getpid() * 131u + n) % 40000;
}

/*
 * Connect client EP @cep (on @c) to a new server EP on @s through a new
 * PSP; the server EP uses @srq (0: none).  Returns the server EP; the
 * PSP is freed again.  Dies on any failure (setup only).
 */
static inline uint32_t connect_pair(struct side *s, struct side *c,
				    uint32_t cep, uint32_t srq, uint32_t srq_pz)
{
	struct kdat_uevent e;
	uint64_t qual = next_qual();
	uint32_t psp, sep, st;

	st = k_ep(s->fd, s->ia, srq ? srq_pz : s->pz, s->evd, s->cevd, srq, &sep);
	REQUIRE(st == DAT_SUCCESS, "server ep: %s", ST(st));
	st = k_psp(s->fd, s->ia, s->crevd, qual, &psp);
	REQUIRE(st == DAT_SUCCESS, "psp %llu: %s", (unsigned long long)qual, ST(st));
	st = k_connect(c->fd, cep, qual);
	REQUIRE(st == DAT_SUCCESS, "connect: %s", ST(st));
	REQUIRE(kr_next_event(s->fd, &s->crring, s->crevd, 20000000, &e, NULL) &&
		e.event_number == DAT_CONNECTION_REQUEST_EVENT && e.cr,
		"no connection request");
	st = k_accept(s->fd, e.cr, sep);
	REQUIRE(st == DAT_SUCCESS, "accept: %s", ST(st));
	REQUIRE(kr_next_event(s->fd, &s->cring, s->cevd, 20000000, &e, NULL) &&
		e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED,
		"server not established (event 0x%x)", e.event_number);
	REQUIRE(kr_next_event(c->fd, &c->cring, c->cevd, 20000000, &e, NULL) &&
		e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED,
		"client not established (event 0x%x)", e.event_number);
	st = k_free(s->fd, psp, KT_PSP);
	REQUIRE(st == DAT_SUCCESS, "psp free: %s", ST(st));
	return sep;
}

/* ---- odds and ends -------------------------------------------------------- */

/* xorshift64*, per thread state. */
static inline uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* A busy delay of @n spins: shifts where a racing call lands, no sleep. */
static inline void spin(unsigned int n)
{
	for (volatile unsigned int i = 0; i < n; i++)
		;
}

static inline int kdat_open(void)
{
	int fd = open("/dev/kdat", O_RDWR | O_CLOEXEC);

	REQUIRE(fd >= 0, "open /dev/kdat: %s", strerror(errno));
	return fd;
}

#endif /* KDAT_RAW_H */
