// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kdat_fuzz: an in-guest fuzzer of /dev/kdat with a fixed budget per run.
 *
 *   fuzz_ioctls  random and structure-aware ioctls from several processes
 *                and threads: command numbers in and around the 0xDA
 *                range (other _IOC_SIZEs, directions, neighbours), hdr.size
 *                around the struct sizes up to beyond PAGE_SIZE, with zero
 *                or garbage trailing bytes, random padding, IDs biased to
 *                the ones creates returned (and 0, neighbours, garbage),
 *                every create/free/query/post op with mutated fields, bad
 *                user pointers, random mmaps of the file.  evd_wait
 *                timeouts are clamped small; nothing else is skipped.
 *   fuzz_rings   a thread rewriting the SRQ post ring (tail, head, flags,
 *                entries: nseg, lmr_context, addr, length, cookie) and the
 *                event rings' heads, while others call SRQ_KICK, SRQ_QUERY,
 *                EVD_WAIT and send real traffic rxe1 -> rxe0 through the
 *                SRQ, so the kernel drains what was written.
 *
 * Both end by closing everything; the harness then needs the live-object
 * counter back at 0 and a clean kernel log (kdat_harness.h).
 *
 *   kdat_fuzz [SEED [IOCTLS [RING_ENTRIES]]]
 *     SEED          replays a run (default: from the clock; printed)
 *     IOCTLS        ioctl budget of fuzz_ioctls (default and minimum
 *                   100000; env KDAT_FUZZ_IOCTLS)
 *     RING_ENTRIES  corrupted ring entries of fuzz_rings (default and
 *                   minimum 1048576; env KDAT_FUZZ_RING_ENTRIES)
 *   env KDAT_FUZZ_DEADLINE  per-case deadline in seconds (default 240)
 */
#include "../common/kdat_harness.h"

static uint64_t seed;
static long budget_ioctls = 100000;
static long budget_entries = 1L << 20;

#define NPROC 2
#define NTHREAD 2
#define PAGE 4096

/* ---- what the fuzzer knows ------------------------------------------------ */

#define KNOWN 512

struct known {
	atomic_uint id[KNOWN];
	atomic_uint type[KNOWN];
	atomic_uint n;
	atomic_uint lctx[64];
	atomic_uint nlctx;
	atomic_ullong ring_off[64];
	atomic_ullong ring_size[64];
	atomic_uint nring;
};

static void know(struct known *k, uint32_t id, uint32_t type)
{
	unsigned int i = atomic_fetch_add(&k->n, 1) % KNOWN;

	atomic_store(&k->id[i], id);
	atomic_store(&k->type[i], type);
}

static void know_ring(struct known *k, uint64_t off, uint64_t size)
{
	unsigned int i = atomic_fetch_add(&k->nring, 1) % 64;

	atomic_store(&k->ring_off[i], off);
	atomic_store(&k->ring_size[i], size);
}

struct fz {
	int fd;
	struct known *k;
	uint64_t rng;
	char *buf;		/* 1 MiB of our memory */
	size_t buflen;
	long ioctls, errnos, ok;
	long by_errno[8];	/* EINVAL E2BIG ENOTTY EFAULT ENOMEM other */
};

#define R(f) rnd(&(f)->rng)
#define CHANCE(f, n) (R(f) % (n) == 0)

static uint32_t pick_id(struct fz *f, int type)
{
	struct known *k = f->k;
	unsigned int n = atomic_load(&k->n), i, j;
	uint32_t id;

	switch (R(f) % 16) {
	case 0:
		return 0;
	case 1:
		return (uint32_t)R(f);
	case 2:
		return (uint32_t)(R(f) % 64);
	default:
		break;
	}
	if (!n)
		return (uint32_t)(R(f) % 64);
	n = n < KNOWN ? n : KNOWN;
	/* prefer one of the right type */
	for (j = 0; j < 8; j++) {
		i = (unsigned int)(R(f) % n);
		if (type < 0 || atomic_load(&k->type[i]) == (uint32_t)type)
			break;
	}
	id = atomic_load(&k->id[i]);
	if (CHANCE(f, 6))
		id += (uint32_t)(R(f) % 7) - 3;	/* a neighbour */
	return id;
}

static int32_t pick_count(struct fz *f, int32_t typical)
{
	static const int32_t edge[] = { 0, -1, 1, 2, 3, 16, 255, 256, 1 << 14,
					 1 << 15, 1 << 16, INT32_MAX, INT32_MIN };

	switch (R(f) % 10) {
	case 0:
		return edge[R(f) % (sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return (int32_t)R(f);
	default:
		return (int32_t)(R(f) % (uint64_t)(typical + 1));
	}
}

static uint64_t pick_addr(struct fz *f)
{
	switch (R(f) % 8) {
	case 0:
		return 0;
	case 1:
		return R(f);
	case 2:
		return 0xffff888000000000ULL + (R(f) % (1ULL << 30));	/* kernel */
	case 3:
		return (uintptr_t)f->buf + f->buflen - R(f) % 256;	/* the end */
	default:
		return (uintptr_t)f->buf + (R(f) % f->buflen & ~7ULL);
	}
}

static uint64_t pick_len(struct fz *f)
{
	switch (R(f) % 8) {
	case 0:
		return 0;
	case 1:
		return R(f);
	case 2:
		return 1ULL << (R(f) % 64);
	default:
		return R(f) % 8192;
	}
}

static uint32_t pick_lctx(struct fz *f)
{
	unsigned int n = atomic_load(&f->k->nlctx);

	if (!n || CHANCE(f, 5))
		return (uint32_t)(CHANCE(f, 2) ? R(f) : R(f) % 64);
	return atomic_load(&f->k->lctx[R(f) % (n < 64 ? n : 64)]);
}

static uint32_t pick_pad(struct fz *f)
{
	return CHANCE(f, 12) ? (uint32_t)R(f) | 1 : 0;
}

static uint64_t pick_qual(struct fz *f)
{
	/* a few shared values, so connects sometimes find a PSP */
	return CHANCE(f, 8) ? R(f) % 70000 : 30000 + R(f) % 4;
}

static void fill_segs(struct fz *f, struct kdat_useg *s, int n)
{
	for (int i = 0; i < n; i++) {
		s[i].lmr_context = pick_lctx(f);
		s[i].pad = pick_pad(f);
		s[i].addr = pick_addr(f);
		s[i].length = pick_len(f);
	}
}

static void fill_sockaddr(struct fz *f, uint8_t *a)
{
	static const char *const ok[] = { "192.0.2.1", "192.0.2.2", "127.0.0.1" };

	if (CHANCE(f, 6)) {
		/* garbage, never an AF_INET address outside the test hosts */
		for (int i = 0; i < KDAT_ADDR_LEN; i++)
			a[i] = (uint8_t)R(f);
		if (((struct sockaddr *)a)->sa_family == AF_INET)
			((struct sockaddr *)a)->sa_family = AF_UNIX;
		return;
	}
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = inet_addr(ok[R(f) % 3]);
	sin.sin_port = (uint16_t)R(f);
	memset(a, 0, KDAT_ADDR_LEN);
	memcpy(a, &sin, sizeof(sin));
}

/* ---- one ioctl ---------------------------------------------------------------- */

/* Big enough for every argument, its trailing bytes, and beyond a page. */
#define ARGBUF (3 * PAGE)

/* Fill the argument of command number @nr; its struct size. */
static size_t build(struct fz *f, unsigned int nr, void *arg)
{
	union {
		struct kdat_ioc_version version;
		struct kdat_ioc_ia_list ia_list;
		struct kdat_ioc_ia_open ia_open;
		struct kdat_ioc_ia_close ia_close;
		struct kdat_ioc_ia_query ia_query;
		struct kdat_ioc_free free;
		struct kdat_ioc_pz_create pz;
		struct kdat_ioc_evd_create evd;
		struct kdat_ioc_evd_wait wait;
		struct kdat_ioc_evd_post_se se;
		struct kdat_ioc_lmr_create lmr;
		struct kdat_ioc_srq_create srq;
		struct kdat_ioc_srq_query sq;
		struct kdat_ioc_srq_op sop;
		struct kdat_ioc_srq_post spost;
		struct kdat_ioc_ep_create ep;
		struct kdat_ioc_ep_query eq;
		struct kdat_ioc_ep_connect conn;
		struct kdat_ioc_ep_op eop;
		struct kdat_ioc_ep_post epost;
		struct kdat_ioc_ep_status est;
		struct kdat_ioc_psp_create psp;
		struct kdat_ioc_cr_query crq;
		struct kdat_ioc_cr_accept acc;
		struct kdat_ioc_evd_ctl ctl;
		struct kdat_ioc_ep_modify mod;
		struct kdat_ioc_cno_create cnoc;
		struct kdat_ioc_cno_wait cnow;
		struct kdat_ioc_evd_notify evn;
		struct kdat_ioc_rsp_create rspc;
		struct kdat_ioc_rsp_query rspq;
	} *a = arg;
	size_t sz = 0;

	switch (nr) {
	case 0x00:
		a->version.pad = pick_pad(f);
		sz = sizeof(a->version);
		break;
	case 0x01:
		a->ia_list.max = (uint32_t)pick_count(f, 8);
		a->ia_list.names = CHANCE(f, 4) ? pick_addr(f) : (uintptr_t)f->buf;
		sz = sizeof(a->ia_list);
		break;
	case 0x02:
		if (CHANCE(f, 5))
			for (int i = 0; i < KDAT_NAME_LEN; i++)
				a->ia_open.name[i] = (char)R(f);
		else
			strcpy(a->ia_open.name, CHANCE(f, 2) ? "rxe0" : "rxe1");
		a->ia_open.async_qlen = pick_count(f, 64);
		if (a->ia_open.async_qlen > 4096 && !CHANCE(f, 50))
			a->ia_open.async_qlen = 64;
		sz = sizeof(a->ia_open);
		break;
	case 0x03:
		a->ia_close.ia = pick_id(f, KT_IA);
		a->ia_close.flags = CHANCE(f, 8) ? (uint32_t)R(f) : (uint32_t)(R(f) % 2);
		sz = sizeof(a->ia_close);
		break;
	case 0x04:
		a->ia_query.ia = pick_id(f, KT_IA);
		sz = sizeof(a->ia_query);
		break;
	case 0x05:
		a->free.type = CHANCE(f, 10) ? (uint32_t)R(f) : (uint32_t)(R(f) % 11);
		a->free.handle = pick_id(f, (int)a->free.type);
		sz = sizeof(a->free);
		break;
	case 0x06:
		a->pz.ia = pick_id(f, KT_IA);
		sz = sizeof(a->pz);
		break;
	case 0x07:
		a->evd.ia = pick_id(f, KT_IA);
		a->evd.qlen = pick_count(f, 64);
		/* big rings cost megabytes: rare */
		if (a->evd.qlen > 1024 && !CHANCE(f, 100))
			a->evd.qlen = 64;
		a->evd.flags = CHANCE(f, 8) ? (uint32_t)R(f) : (uint32_t)(R(f) % 0x200);
		sz = sizeof(a->evd);
		break;
	case 0x08:
		a->wait.evd = pick_id(f, KT_EVD);
		a->wait.threshold = pick_count(f, 4);
		a->wait.flags = CHANCE(f, 6) ? (uint32_t)R(f) : (uint32_t)(R(f) % 2);
		a->wait.wake_seq = (uint32_t)R(f);
		sz = sizeof(a->wait);
		break;
	case 0x09:
		a->se.evd = pick_id(f, KT_EVD);
		a->se.pad = pick_pad(f);
		a->se.pointer = R(f);
		sz = sizeof(a->se);
		break;
	case 0x0a:
		a->lmr.ia = pick_id(f, KT_IA);
		a->lmr.pz = pick_id(f, KT_PZ);
		a->lmr.addr = pick_addr(f);
		a->lmr.length = CHANCE(f, 4) ? pick_len(f) : R(f) % (1 << 20);
		a->lmr.priv = CHANCE(f, 6) ? (uint32_t)R(f) : (uint32_t)(R(f) % 0x40);
		sz = sizeof(a->lmr);
		break;
	case 0x0b:
		a->srq.ia = pick_id(f, KT_IA);
		a->srq.pz = pick_id(f, KT_PZ);
		a->srq.max_recv_dtos = pick_count(f, 64);
		if (a->srq.max_recv_dtos > 4096 && !CHANCE(f, 100))
			a->srq.max_recv_dtos = 64;
		a->srq.max_recv_iov = pick_count(f, 4);
		a->srq.low_watermark = pick_count(f, 8);
		sz = sizeof(a->srq);
		break;
	case 0x0c:
		a->sq.srq = pick_id(f, KT_SRQ);
		a->sq.mask = CHANCE(f, 4) ? (uint32_t)R(f) : DAT_SRQ_FIELD_ALL;
		sz = sizeof(a->sq);
		break;
	case 0x0d:
	case 0x0e:
	case 0x0f:
		a->sop.srq = pick_id(f, KT_SRQ);
		a->sop.value = pick_count(f, 128);
		sz = sizeof(a->sop);
		break;
	case 0x10:
		a->spost.srq = pick_id(f, KT_SRQ);
		a->spost.nseg = CHANCE(f, 8) ? (uint32_t)R(f) : (uint32_t)(R(f) % 5);
		a->spost.cookie = R(f);
		fill_segs(f, a->spost.seg, KDAT_MAX_IOV);
		sz = sizeof(a->spost);
		break;
	case 0x11:
		a->ep.ia = pick_id(f, KT_IA);
		a->ep.pz = pick_id(f, KT_PZ);
		a->ep.recv_evd = pick_id(f, KT_EVD);
		a->ep.request_evd = CHANCE(f, 2) ? a->ep.recv_evd : pick_id(f, KT_EVD);
		a->ep.connect_evd = pick_id(f, KT_EVD);
		a->ep.srq = CHANCE(f, 2) ? 0 : pick_id(f, KT_SRQ);
		a->ep.has_attr = CHANCE(f, 6) ? (uint32_t)R(f) : (uint32_t)(R(f) % 2);
		a->ep.attr.max_message_size = CHANCE(f, 4) ? R(f) : 4096;
		a->ep.attr.max_rdma_size = R(f) % 8192;
		a->ep.attr.max_recv_dtos = pick_count(f, 32);
		a->ep.attr.max_request_dtos = pick_count(f, 32);
		a->ep.attr.max_recv_iov = pick_count(f, 4);
		a->ep.attr.max_request_iov = pick_count(f, 4);
		a->ep.attr.max_rdma_read_in = pick_count(f, 4);
		a->ep.attr.max_rdma_read_out = pick_count(f, 4);
		a->ep.attr.recv_completion_flags = (uint32_t)(R(f) % 8);
		a->ep.attr.request_completion_flags = (uint32_t)(R(f) % 8);
		a->ep.attr.pad = pick_pad(f);
		sz = sizeof(a->ep);
		break;
	case 0x12:
		a->eq.ep = pick_id(f, KT_EP);
		sz = sizeof(a->eq);
		break;
	case 0x13:
		a->conn.ep = pick_id(f, KT_EP);
		a->conn.timeout_us = (uint32_t)(CHANCE(f, 4) ? R(f) : 1000000);
		a->conn.conn_qual = pick_qual(f);
		fill_sockaddr(f, a->conn.addr);
		a->conn.qos = CHANCE(f, 6) ? (uint32_t)R(f) : 0;
		a->conn.flags = CHANCE(f, 6) ? (uint32_t)R(f) : 0;
		a->conn.pdata_size = (uint32_t)pick_count(f, KDAT_PDATA_LEN + 4);
		for (int i = 0; i < KDAT_PDATA_LEN; i++)
			a->conn.pdata[i] = (uint8_t)R(f);
		a->conn.pad = pick_pad(f);
		if (CHANCE(f, 12))
			a->conn.pad2[R(f) % 4] = 1;
		sz = sizeof(a->conn);
		break;
	case 0x14:
	case 0x15:
		a->eop.ep = pick_id(f, KT_EP);
		a->eop.value = CHANCE(f, 6) ? (uint32_t)R(f) : (uint32_t)(R(f) % 2);
		sz = sizeof(a->eop);
		break;
	case 0x16:
		a->epost.ep = pick_id(f, KT_EP);
		a->epost.op = CHANCE(f, 8) ? (uint32_t)R(f) : (uint32_t)(R(f) % 7);
		a->epost.flags = (uint32_t)(CHANCE(f, 6) ? R(f) : R(f) % 8);
		a->epost.nseg = CHANCE(f, 8) ? (uint32_t)R(f) : (uint32_t)(R(f) % 5);
		a->epost.cookie = R(f);
		a->epost.rmr_context = (uint32_t)R(f);
		a->epost.pad = pick_pad(f);
		a->epost.remote_addr = R(f);
		a->epost.remote_length = pick_len(f);
		fill_segs(f, a->epost.seg, KDAT_MAX_IOV);
		a->epost.compare_add = R(f);
		a->epost.swap = R(f);
		a->epost.immed_data = (uint32_t)R(f);
		a->epost.reserved = pick_pad(f);
		/* an older library's size now and then: no extension fields */
		sz = CHANCE(f, 4) ? offsetof(struct kdat_ioc_ep_post, compare_add) :
				    sizeof(a->epost);
		break;
	case 0x17:
		a->est.ep = pick_id(f, KT_EP);
		sz = sizeof(a->est);
		break;
	case 0x18:
		a->psp.ia = pick_id(f, KT_IA);
		a->psp.evd = pick_id(f, KT_EVD);
		a->psp.conn_qual = pick_qual(f);
		a->psp.flags = CHANCE(f, 6) ? (uint32_t)R(f) : (uint32_t)(R(f) % 2);
		sz = sizeof(a->psp);
		break;
	case 0x19:
		a->crq.cr = pick_id(f, KT_CR);
		sz = sizeof(a->crq);
		break;
	case 0x1a:
		a->acc.cr = pick_id(f, KT_CR);
		a->acc.ep = pick_id(f, KT_EP);
		a->acc.pdata_size = (uint32_t)pick_count(f, KDAT_PDATA_LEN + 4);
		sz = sizeof(a->acc);
		break;
	case 0x1b:
		a->ctl.evd = pick_id(f, KT_EVD);
		a->ctl.op = CHANCE(f, 6) ? (uint32_t)R(f) : (uint32_t)(R(f) % 5);
		sz = sizeof(a->ctl);
		break;
	case 0x1c:
		a->mod.ep = pick_id(f, KT_EP);
		a->mod.pad = pick_pad(f);
		a->mod.mask = CHANCE(f, 3) ? R(f) : 1ULL << (R(f) % 40);
		a->mod.attr.max_message_size = R(f) % 8192;
		a->mod.attr.max_request_dtos = pick_count(f, 32);
		a->mod.attr.max_request_iov = pick_count(f, 4);
		a->mod.attr.max_rdma_read_in = pick_count(f, 4);
		a->mod.attr.max_rdma_read_out = pick_count(f, 4);
		a->mod.attr.pad = pick_pad(f);
		sz = sizeof(a->mod);
		break;
	case 0x1d:
		a->cnoc.ia = pick_id(f, KT_IA);
		sz = sizeof(a->cnoc);
		break;
	case 0x1e:
		a->cnow.cno = pick_id(f, KDAT_TYPE_CNO);
		a->cnow.pad = pick_pad(f);
		sz = sizeof(a->cnow);
		break;
	case 0x1f:
		a->evn.evd = pick_id(f, KT_EVD);
		a->evn.cno = CHANCE(f, 3) ? 0 : pick_id(f, KDAT_TYPE_CNO);
		a->evn.flags = CHANCE(f, 6) ? (uint32_t)R(f) : (uint32_t)(R(f) % 2);
		a->evn.pad = pick_pad(f);
		sz = sizeof(a->evn);
		break;
	case 0x20:
		a->rspc.ia = pick_id(f, KT_IA);
		a->rspc.ep = pick_id(f, KT_EP);
		a->rspc.conn_qual = pick_qual(f);
		a->rspc.evd = pick_id(f, KT_EVD);
		sz = sizeof(a->rspc);
		break;
	case 0x21:
		a->rspq.rsp = pick_id(f, KT_RSP);
		sz = sizeof(a->rspq);
		break;
	default:
		sz = 8 + R(f) % 512;
		for (size_t i = 8; i < sz; i++)
			((uint8_t *)arg)[i] = (uint8_t)R(f);
		break;
	}
	return sz;
}

/* What a successful call created: remember it. */
static void harvest(struct fz *f, unsigned int nr, void *arg, uint32_t size)
{
	struct known *k = f->k;

#define HAS(type, field) (size >= offsetof(type, field) + sizeof(((type *)0)->field))
	switch (nr) {
	case 0x02: {
		struct kdat_ioc_ia_open *a = arg;

		if (HAS(struct kdat_ioc_ia_open, async_ring_offset)) {
			know(k, a->ia, KT_IA);
			know(k, a->async_evd, KT_EVD);
			know_ring(k, a->async_ring_offset, a->async_ring_size);
		}
		break;
	}
	case 0x06:
		if (HAS(struct kdat_ioc_pz_create, pz))
			know(k, ((struct kdat_ioc_pz_create *)arg)->pz, KT_PZ);
		break;
	case 0x07: {
		struct kdat_ioc_evd_create *a = arg;

		if (HAS(struct kdat_ioc_evd_create, ring_size)) {
			know(k, a->evd, KT_EVD);
			know_ring(k, a->ring_offset, a->ring_size);
		}
		break;
	}
	case 0x0a: {
		struct kdat_ioc_lmr_create *a = arg;

		if (HAS(struct kdat_ioc_lmr_create, lmr_context)) {
			know(k, a->lmr, KT_LMR);
			atomic_store(&k->lctx[atomic_fetch_add(&k->nlctx, 1) % 64],
				     a->lmr_context);
		}
		break;
	}
	case 0x0b: {
		struct kdat_ioc_srq_create *a = arg;

		if (HAS(struct kdat_ioc_srq_create, ring_size)) {
			know(k, a->srq, KT_SRQ);
			know_ring(k, a->ring_offset, a->ring_size);
		}
		break;
	}
	case 0x11:
		if (HAS(struct kdat_ioc_ep_create, ep))
			know(k, ((struct kdat_ioc_ep_create *)arg)->ep, KT_EP);
		break;
	case 0x18:
		if (HAS(struct kdat_ioc_psp_create, psp))
			know(k, ((struct kdat_ioc_psp_create *)arg)->psp, KT_PSP);
		break;
	case 0x1d:
		if (HAS(struct kdat_ioc_cno_create, cno))
			know(k, ((struct kdat_ioc_cno_create *)arg)->cno,
			     KDAT_TYPE_CNO);
		break;
	case 0x20:
		if (HAS(struct kdat_ioc_rsp_create, rsp))
			know(k, ((struct kdat_ioc_rsp_create *)arg)->rsp, KT_RSP);
		break;
	default:
		break;
	}
#undef HAS
}

/* Map a known ring (or a random offset), look at it, scribble, unmap. */
static void fuzz_mmap(struct fz *f)
{
	unsigned int n = atomic_load(&f->k->nring);
	uint64_t off, size;
	uint8_t *m;

	if (n && !CHANCE(f, 4)) {
		unsigned int i = (unsigned int)(R(f) % (n < 64 ? n : 64));

		off = atomic_load(&f->k->ring_off[i]);
		size = atomic_load(&f->k->ring_size[i]);
		if (CHANCE(f, 4))
			size += PAGE * (R(f) % 3);
		if (!size || size > (1 << 24))
			size = PAGE;
	} else {
		off = (R(f) % 64) * PAGE;
		size = PAGE * (1 + R(f) % 4);
	}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE |
		 (CHANCE(f, 10) ? PROT_EXEC : 0),
		 CHANCE(f, 10) ? MAP_PRIVATE : MAP_SHARED, f->fd, (off_t)off);
	if (m == MAP_FAILED)
		return;
	/* harvest connection requests, then scribble on the header */
	{
		struct kdat_ring_hdr *h = (void *)m;
		uint32_t entries = h->entries, esz = h->entry_size,
			 eoff = h->entry_offset;

		if (entries && esz == sizeof(struct kdat_uevent) &&
		    (uint64_t)eoff + (uint64_t)entries * esz <= size) {
			for (uint32_t i = 0; i < entries; i++) {
				struct kdat_uevent *e = (void *)(m + eoff + i * esz);

				if (e->event_number == DAT_CONNECTION_REQUEST_EVENT && e->cr)
					know(f->k, e->cr, KT_CR);
			}
		}
		if (CHANCE(f, 2))
			h->head = (uint32_t)R(f);
		if (CHANCE(f, 4))
			h->tail = (uint32_t)R(f);
		if (CHANCE(f, 4))
			m[R(f) % size] = (uint8_t)R(f);
	}
	munmap(m, size);
}

static void one_ioctl(struct fz *f, uint8_t *arg)
{
	unsigned int nr = (unsigned int)(R(f) % (_IOC_NR(KDAT_IOC_RSP_QUERY) + 1)), dir = _IOC_READ | _IOC_WRITE;
	unsigned int type = KDAT_IOC_MAGIC, isize;
	uint32_t hsize;
	size_t sz;
	void *p = arg;
	int r;

	memset(arg, 0, ARGBUF);
	if (CHANCE(f, 20))
		nr = (unsigned int)(R(f) % 0x40);
	sz = build(f, nr, arg);
	if (CHANCE(f, 10))
		/* raw: random bytes over the whole struct */
		for (size_t i = 8; i < sz; i++)
			arg[i] = (uint8_t)R(f);
	isize = (unsigned int)sz;
	switch (R(f) % 24) {
	case 0:
		isize = (unsigned int)(R(f) % (1 << 14));	/* another _IOC_SIZE */
		break;
	case 1:
		dir = (unsigned int)(R(f) % 4);
		break;
	case 2:
		type = CHANCE(f, 2) ? 0xD9 + (unsigned int)(R(f) % 3) :
				      (unsigned int)(R(f) % 256);
		break;
	default:
		break;
	}
	hsize = (uint32_t)sz;
	switch (R(f) % 12) {
	case 0:		/* smaller: an older library */
		hsize = (uint32_t)(R(f) % (sz + 1));
		break;
	case 1:		/* larger, zero tail */
		hsize = (uint32_t)(sz + R(f) % 64);
		break;
	case 2:		/* larger, garbage tail */
		hsize = (uint32_t)(sz + 1 + R(f) % 64);
		arg[sz + R(f) % (hsize - sz)] = (uint8_t)(R(f) | 1);
		break;
	case 3:		/* around and beyond a page */
		hsize = (uint32_t)(PAGE - 8 + R(f) % 24);
		if (CHANCE(f, 2))
			arg[hsize - 1] = 1;
		break;
	case 4:
		hsize = (uint32_t)R(f);
		break;
	default:
		break;
	}
	/* never block for long: whatever the command looks like */
	if (nr == _IOC_NR(KDAT_IOC_EVD_WAIT))
		((struct kdat_ioc_evd_wait *)arg)->timeout_us = (uint32_t)(R(f) % 2000);
	if (nr == _IOC_NR(KDAT_IOC_CNO_WAIT))
		((struct kdat_ioc_cno_wait *)arg)->timeout_us = (uint32_t)(R(f) % 2000);
	((struct kdat_ioc_hdr *)arg)->size = hsize;
	((struct kdat_ioc_hdr *)arg)->status = (uint32_t)R(f);
	if (CHANCE(f, 200))
		p = CHANCE(f, 2) ? NULL : (void *)(uintptr_t)pick_addr(f);
	r = ioctl(f->fd, _IOC(dir, type, nr, isize), p);
	f->ioctls++;
	if (r) {
		int e = errno;

		f->errnos++;
		f->by_errno[e == EINVAL ? 0 : e == E2BIG ? 1 : e == ENOTTY ? 2 :
			    e == EFAULT ? 3 : e == ENOMEM ? 4 : 5]++;
		if (e != EINVAL && e != E2BIG && e != ENOTTY && e != EFAULT &&
		    e != ENOMEM && e != EPERM && e != EBADF)
			kr_fail("ioctl nr 0x%x size %u: unexpected errno %d (%s)",
				nr, hsize, e, strerror(e));
		return;
	}
	if (p == arg && ((struct kdat_ioc_hdr *)arg)->status == DAT_SUCCESS) {
		f->ok++;
		harvest(f, nr, arg, hsize);
	}
}

struct fz_thread {
	struct fz f;
	long n;
	uint8_t *arg;
};

static void *fz_run(void *p)
{
	struct fz_thread *t = p;
	struct fz *f = &t->f;
	long i;

	for (i = 0; f->ioctls < t->n && !kr_failed(); i++) {
		if (CHANCE(f, 500)) {
			fuzz_mmap(f);
			continue;
		}
		if (CHANCE(f, 3000)) {
			/* now and then everything goes: abrupt close of every IA */
			unsigned int n = atomic_load(&f->k->n);

			for (unsigned int j = 0; j < (n < KNOWN ? n : KNOWN); j++)
				if (atomic_load(&f->k->type[j]) == KT_IA) {
					struct kdat_ioc_ia_close c = {
						.ia = atomic_load(&f->k->id[j]) };

					KIOC(f->fd, KDAT_IOC_IA_CLOSE, &c);
				}
			atomic_store(&f->k->n, 0);
			atomic_store(&f->k->nlctx, 0);
			/* and two fresh ones */
			for (int k = 0; k < 2; k++) {
				struct kdat_ioc_ia_open o = { .async_qlen = 32 };

				strcpy(o.name, k ? "rxe1" : "rxe0");
				if (KIOC(f->fd, KDAT_IOC_IA_OPEN, &o) == DAT_SUCCESS)
					harvest(f, 0x02, &o, sizeof(o));
			}
			continue;
		}
		one_ioctl(f, t->arg);
	}
	return NULL;
}

/* One fuzzing process: its own file, NTHREAD threads on it. */
static void fz_process(int idx, long n, int wfd)
{
	static struct known k;
	struct fz_thread t[NTHREAD];
	pthread_t th[NTHREAD];
	char *buf = aligned_alloc(PAGE, 1 << 20);
	long tot[4] = { 0 };
	int fd = kdat_open(), i;

	REQUIRE(buf, "out of memory");
	memset(buf, 0, 1 << 20);
	for (i = 0; i < 2; i++) {
		struct kdat_ioc_ia_open o = { .async_qlen = 32 };
		uint32_t st;

		strcpy(o.name, i ? "rxe1" : "rxe0");
		st = KIOC(fd, KDAT_IOC_IA_OPEN, &o);
		REQUIRE(st == DAT_SUCCESS, "ia open: %s", ST(st));
		know(&k, o.ia, KT_IA);
		know(&k, o.async_evd, KT_EVD);
		know_ring(&k, o.async_ring_offset, o.async_ring_size);
	}
	for (i = 0; i < NTHREAD; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].f.fd = fd;
		t[i].f.k = &k;
		t[i].f.rng = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)idx * 64 + i + 1;
		t[i].f.buf = buf;
		t[i].f.buflen = 1 << 20;
		t[i].n = n / NTHREAD;
		t[i].arg = aligned_alloc(PAGE, ARGBUF + PAGE);
		REQUIRE(t[i].arg, "out of memory");
		pthread_create(&th[i], NULL, fz_run, &t[i]);
	}
	for (i = 0; i < NTHREAD; i++) {
		pthread_join(th[i], NULL);
		tot[0] += t[i].f.ioctls;
		tot[1] += t[i].f.ok;
		tot[2] += t[i].f.errnos;
	}
	close(fd);
	if (write(wfd, tot, sizeof(tot)) != sizeof(tot))
		kr_fail("report");
	kr_finish();
}

static void case_fuzz_ioctls(void)
{
	pid_t pid[NPROC];
	int p[2], i, status;
	long ioctls = 0, ok = 0, errs = 0;
	double t0 = now_s();

	REQUIRE(!pipe(p), "pipe");
	for (i = 0; i < NPROC; i++) {
		pid[i] = fork();
		REQUIRE(pid[i] >= 0, "fork");
		if (pid[i] == 0) {
			close(p[0]);
			kr_result_fd = -1;	/* the verdict goes through @p */
			fz_process(i, budget_ioctls / NPROC, p[1]);
		}
	}
	close(p[1]);
	for (i = 0; i < NPROC; i++) {
		long tot[4];

		if (read(p[0], tot, sizeof(tot)) == sizeof(tot)) {
			ioctls += tot[0];
			ok += tot[1];
			errs += tot[2];
		}
	}
	for (i = 0; i < NPROC; i++) {
		waitpid(pid[i], &status, 0);
		CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		      "fuzzing process %d ended with status 0x%x", i, status);
	}
	close(p[0]);
	CHECK(ioctls >= budget_ioctls, "only %ld of %ld ioctls made", ioctls, budget_ioctls);
	kr_pass_note("%ld ioctls, %ld DAT_SUCCESS, %ld errno, %.1f s", ioctls, ok,
		     errs, now_s() - t0);
}

/* ---- rings ------------------------------------------------------------------------ */

struct rf {
	int fd;
	struct side s, c;
	uint32_t srq, sep, cep;
	struct kring sring;
	struct kring epring;	/* the client EP's send ring */
	atomic_bool stop;
	atomic_long entries, kicks, sends;
	uint64_t seed;
};

/*
 * Garbage in the EP send ring (KDAT_FEATURE_SEND_RING): any op, flags,
 * segment count, LMR, address and length, remote triplet; a tail that is
 * right, garbage or far ahead; the kernel's own header words overwritten.
 * The kernel must refuse what it cannot post (error completions) and
 * never read past an entry.
 */
static void rf_scribble_send_ring(struct rf *x, uint64_t *rng)
{
	struct kdat_ring_hdr *h = x->epring.h;
	static uint32_t tail;
	static bool init;
	/* the layout checked at create (16 x 128 at 192): the header lies now */
	const uint32_t ne = 16, esz = 128, eoff = 192;
	uint32_t burst, i;

	if (!init) {
		tail = h->tail;
		init = true;
	}
	burst = 1 + (uint32_t)(rnd(rng) % 8);
	for (i = 0; i < burst; i++) {
		struct kdat_ep_sqe *w = (void *)(x->epring.base + eoff +
						 (size_t)((tail + i) & (ne - 1)) * esz);
		uint64_t r = rnd(rng);

		w->op = r % 5 ? (uint32_t)(r % 8) : (uint32_t)rnd(rng);
		w->flags = r % 7 ? 0 : (uint32_t)rnd(rng);
		w->nseg = r % 9 == 0 ? (uint32_t)rnd(rng) : (uint32_t)(r % 3);
		w->cookie = rnd(rng);
		w->rmr_context = (uint32_t)rnd(rng);
		w->remote_addr = rnd(rng);
		w->remote_length = r % 3 ? rnd(rng) % 4096 : rnd(rng);
		w->compare_add = rnd(rng);
		w->swap = rnd(rng);
		w->immed_data = (uint32_t)rnd(rng);
		w->reserved = r % 13 == 0;
		w->seg[0].lmr_context = r % 3 ? x->c.lctx : (uint32_t)rnd(rng);
		w->seg[0].pad = 0;
		w->seg[0].addr = r % 5 ? (uintptr_t)x->c.buf + rnd(rng) % x->c.buflen :
					  rnd(rng);
		w->seg[0].length = r % 4 ? rnd(rng) % 256 : rnd(rng);
	}
	switch (rnd(rng) % 6) {
	case 0:
		__atomic_store_n(&h->tail, (uint32_t)rnd(rng), __ATOMIC_RELEASE);
		break;
	case 1:
		tail += ne * (1 + (uint32_t)(rnd(rng) % 4));
		__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
		break;
	default:
		tail += burst;
		__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
		break;
	}
	if (rnd(rng) % 4 == 0)
		h->head = (uint32_t)rnd(rng);
	if (rnd(rng) % 4 == 0)
		h->flags = (uint32_t)rnd(rng);
	if (rnd(rng) % 8 == 0)
		h->retired = (uint32_t)rnd(rng);
	if (rnd(rng) % 8 == 0)
		h->ep_state = (uint32_t)rnd(rng);
	if (rnd(rng) % 16 == 0)
		h->entries = (uint32_t)rnd(rng);
}

/* The hostile producer: garbage in the post ring and event ring heads. */
static void *rf_corruptor(void *p)
{
	struct rf *x = p;
	struct kring *evr[] = { &x->s.ring, &x->s.aring, &x->s.cring,
				&x->c.ring, &x->c.aring, &x->s.swring };
	struct kdat_ring_hdr *h = x->sring.h;
	/* the layout as mapped: the header's copy gets scribbled on below */
	uint32_t ne = h->entries, tail = h->tail, esz = h->entry_size,
		 eoff = h->entry_offset;
	uint64_t rng = x->seed ^ 0xC0FFEE;
	long n = 0;

	while (n < budget_entries && !kr_failed()) {
		uint32_t burst = 1 + (uint32_t)(rnd(&rng) % ne), i;

		for (i = 0; i < burst; i++) {
			struct kdat_srq_wqe *w = (void *)(x->sring.base + eoff +
							  (size_t)((tail + i) & (ne - 1)) * esz);
			uint64_t r = rnd(&rng);

			w->cookie = rnd(&rng);
			w->nseg = r % 7 == 0 ? (uint32_t)rnd(&rng) : (uint32_t)(r % 3);
			w->pad = r % 11 == 0 ? 1 : 0;
			w->seg[0].lmr_context = r % 3 ? x->s.lctx : (uint32_t)rnd(&rng);
			w->seg[0].pad = 0;
			w->seg[0].addr = r % 5 ? (uintptr_t)x->s.buf + rnd(&rng) % x->s.buflen :
						  rnd(&rng);
			w->seg[0].length = r % 4 ? rnd(&rng) % 2048 : rnd(&rng);
			n++;
		}
		switch (rnd(&rng) % 8) {
		case 0:		/* garbage tail */
			__atomic_store_n(&h->tail, (uint32_t)rnd(&rng), __ATOMIC_RELEASE);
			break;
		case 1:		/* far ahead */
			tail += ne * (1 + (uint32_t)(rnd(&rng) % 4));
			__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
			break;
		default:
			tail += burst;
			__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
			break;
		}
		if (rnd(&rng) % 4 == 0)
			h->head = (uint32_t)rnd(&rng);	/* the kernel's field */
		if (rnd(&rng) % 4 == 0)
			h->flags = (uint32_t)rnd(&rng);
		if (rnd(&rng) % 16 == 0)
			h->entries = (uint32_t)rnd(&rng);	/* read-only for us */
		/* the client EP's send ring: garbage requests and indices */
		if (x->epring.h)
			rf_scribble_send_ring(x, &rng);
		/* event rings: heads anywhere */
		struct kring *e = evr[rnd(&rng) % 6];

		__atomic_store_n(&e->h->head,
				 rnd(&rng) % 2 ? (uint32_t)rnd(&rng) :
						 e->h->tail - (uint32_t)(rnd(&rng) % 4),
				 __ATOMIC_RELEASE);
		atomic_store(&x->entries, n);
		/* let the kernel drain some before the next burst */
		while (atomic_load(&x->kicks) * (long)(ne / 4) < n &&
		       !atomic_load(&x->stop) && !kr_failed())
			;
	}
	atomic_store(&x->stop, true);
	return NULL;
}

static void *rf_kicker(void *p)
{
	struct rf *x = p;
	uint64_t rng = x->seed ^ 0xBEEF;
	struct kdat_ioc_srq_query q;
	uint32_t st;

	while (!atomic_load(&x->stop) && !kr_failed()) {
		switch (rnd(&rng) % 4) {
		case 0:
			st = k_srq_query(x->fd, x->srq, &q);
			CHECK(st == DAT_SUCCESS, "query under ring fuzz: %s", ST(st));
			CHECK(st != DAT_SUCCESS ||
			      (q.available_dto_count >= 0 &&
			       q.available_dto_count <= q.outstanding_dto_count &&
			       q.outstanding_dto_count <= q.max_recv_dtos),
			      "query under ring fuzz: available %d outstanding %d max %d",
			      q.available_dto_count, q.outstanding_dto_count, q.max_recv_dtos);
			break;
		case 1: {
			struct kdat_ioc_evd_wait w = { .threshold = 1,
						       .timeout_us = 500 };

			w.evd = rnd(&rng) % 2 ? x->s.evd : x->s.aevd;
			st = KIOC(x->fd, KDAT_IOC_EVD_WAIT, &w);
			CHECK(st != KST_ERRNO, "evd_wait under ring fuzz: %s", ST(st));
			break;
		}
		case 2:
			if (x->epring.h) {
				struct kdat_ioc_ep_op k = { .ep = x->cep };

				/* inline or deferred: either drains, or an
				 * unknown flag is refused and drains nothing */
				k.value = rnd(&rng) % 3 == 2 ? 0x80 :
					  rnd(&rng) % 2 ? KDAT_EP_KICK_DEFER : 0;
				st = KIOC(x->fd, KDAT_IOC_EP_KICK, &k);
				if (k.value & ~KDAT_EP_KICK_FLAGS_ALL)
					CHECK(ST_IS(st, DAT_INVALID_PARAMETER),
					      "kick with an unknown flag: %s",
					      ST(st));
				else
					CHECK(st == DAT_SUCCESS,
					      "send ring kick under ring fuzz: %s",
					      ST(st));
				break;
			}
			/* fall through */
		default:
			st = k_srq_op(x->fd, KDAT_IOC_SRQ_KICK, x->srq, 0);
			CHECK(st == DAT_SUCCESS, "kick under ring fuzz: %s", ST(st));
			break;
		}
		atomic_fetch_add(&x->kicks, 1);
	}
	return NULL;
}

/* Real traffic, so completions drain the ring and fill the event rings. */
static void *rf_sender(void *p)
{
	struct rf *x = p;
	struct kdat_uevent e;
	int out = 0;

	while (!atomic_load(&x->stop) && !kr_failed()) {
		uint32_t st = k_ep_post(x->fd, x->cep, KDAT_POST_SEND, x->c.lctx,
					x->c.buf, 64, 1);

		if (st == DAT_SUCCESS) {
			out++;
			atomic_fetch_add(&x->sends, 1);
		}
		/* the receiver's ring heads are garbage: completions may not come */
		while (out > 0 && kr_next_event(x->fd, &x->c.ring, x->c.evd,
						out >= 8 ? 2000 : 0, &e, NULL))
			out--;
		if (out >= 8)
			out--;	/* a completion lost to the corruptor's heads */
	}
	return NULL;
}

static void case_fuzz_rings(void)
{
	static struct rf x;
	pthread_t tc, tk, ts;
	struct kdat_ioc_srq_query q;
	double t0 = now_s();
	uint32_t st;

	x.seed = seed;
	x.fd = kdat_open();
	open_side(x.fd, "rxe0", &x.s);
	open_side(x.fd, "rxe1", &x.c);
	st = k_srq(x.fd, x.s.ia, x.s.pz, 256, &x.srq, &x.sring);
	REQUIRE(st == DAT_SUCCESS, "srq: %s", ST(st));
	for (int i = 0; i < 64; i++)
		REQUIRE(k_srq_post(x.fd, x.srq, x.s.lctx, x.s.buf + 1024 * i, 1024, i) ==
			DAT_SUCCESS, "post");
	{
		/* the client EP with its send ring mapped */
		st = k_ep_ring(x.fd, x.c.ia, x.c.pz, x.c.evd, x.c.cevd, 0,
			       &x.cep, &x.epring);
		REQUIRE(st == DAT_SUCCESS, "client ep: %s", ST(st));
		REQUIRE(!x.epring.h || (x.epring.h->entries == 16 &&
					 x.epring.h->entry_size == 128 &&
					 x.epring.h->entry_offset == 192),
			"send ring layout %u x %u at %u", x.epring.h->entries,
			x.epring.h->entry_size, x.epring.h->entry_offset);
	}
	x.sep = connect_pair(&x.s, &x.c, x.cep, x.srq, x.s.pz);
	pthread_create(&ts, NULL, rf_sender, &x);
	pthread_create(&tk, NULL, rf_kicker, &x);
	pthread_create(&tc, NULL, rf_corruptor, &x);
	pthread_join(tc, NULL);
	pthread_join(tk, NULL);
	pthread_join(ts, NULL);
	/* the SRQ still answers sanely */
	st = k_srq_query(x.fd, x.srq, &q);
	CHECK(st == DAT_SUCCESS && q.available_dto_count >= 0 &&
	      q.available_dto_count <= q.outstanding_dto_count &&
	      q.outstanding_dto_count <= q.max_recv_dtos,
	      "query after ring fuzz: %s available %d outstanding %d max %d",
	      ST(st), q.available_dto_count, q.outstanding_dto_count, q.max_recv_dtos);
	CHECK(atomic_load(&x.entries) >= budget_entries, "only %ld of %ld entries written",
	      atomic_load(&x.entries), budget_entries);
	kr_pass_note("%ld entries, %ld kernel calls, %ld sends, %.1f s",
		     atomic_load(&x.entries), atomic_load(&x.kicks),
		     atomic_load(&x.sends), now_s() - t0);
	close(x.fd);
}

static const struct kcase cases[] = {
	{ "fuzz_ioctls", case_fuzz_ioctls },
	{ "fuzz_rings", case_fuzz_rings },
};

int main(int argc, char **argv)
{
	static char hdr[64];
	const char *e;
	double deadline = 240;

	seed = argc > 1 ? strtoull(argv[1], NULL, 0) :
			  (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
	e = argc > 2 ? argv[2] : getenv("KDAT_FUZZ_IOCTLS");
	if (e && atol(e) > budget_ioctls)
		budget_ioctls = atol(e);
	e = argc > 3 ? argv[3] : getenv("KDAT_FUZZ_RING_ENTRIES");
	if (e && atol(e) > budget_entries)
		budget_entries = atol(e);
	e = getenv("KDAT_FUZZ_DEADLINE");
	if (e && atof(e) > 0)
		deadline = atof(e);
	snprintf(hdr, sizeof(hdr), "SEED: %llu", (unsigned long long)seed);
	kh_header = hdr;
	signal(SIGPIPE, SIG_IGN);
	return run_cases(cases, 2, NULL, deadline) ? 1 : 0;
}
