// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// user_bench: the user-space (libdat over /dev/kdat) side of the SRQ
// benchmarks.  Runs in the test guest, in one process, as root, with
// kernel/kdat.ko loaded; tests/bench/run-user-bench.sh drives it.
//
//   user_bench post [depth=512] [posts=8192] [reps=7] [size=64] [srv_ia=rxe0]
//
//     Cost of one receive post into an empty SRQ of depth buffers, three
//     ways, on the same device:
//       dat     dat_srq_post_recv: libdat writes the SRQ's mmapped post
//               ring (no system call: the kernel asks for a kick only
//               when the SRQ is starved and an EP could take a buffer;
//               this SRQ has no EP, as the verbs SRQ has no QP)
//       ioctl   dat_kdat_srq_post_recv_ioctl: one KDAT_IOC_SRQ_POST each
//       verbs   rdma-core's ibv_post_srq_recv on an ibv SRQ of the same
//               depth on the same device (librxe writes a shared ring)
//     and a bare getppid() system call for reference.  A batch is: create
//     an SRQ of depth, time depth single-receive posts, free it; posts /
//     depth batches make one repetition of a method, and the methods take
//     turns (rotated order) within each repetition.  Reported: ns per post
//     of every repetition and the median over reps; "dat_steady" leaves the
//     first post of each batch (the first touch of the ring) out.
//       user_bench: post: rep=R dat=.. dat_steady=.. ioctl=.. verbs=.. getppid=..
//       user_bench: post: depth=D posts=N reps=R median ns/post: dat=.. ...
//           ... dat/verbs=.. ioctl/dat=..     (one line)
//
//   user_bench rate [eps=16] [size=64] [iters=20480] [depth=512] [window=0]
//                   [signal=0] [srv_ia=rxe0] [cli_ia=rxe1] [srv_addr=192.0.2.1]
//                   [qual=4900] [shared_evd=0] [poll=0] [time_posts=0] [prime=1]
//
//     Message rate through one SRQ, user consumer: eps server EPs on
//     srv_ia share one SRQ of depth buffers; eps client EPs on cli_ia each
//     keep window size-byte sends in flight (the same scheme as the kernel
//     consumer tests/bench/kdat_bench.c: only every signal-th send and an
//     EP's last one are signalled, window 0 = depth / (2 eps) clamped to
//     1..64, signal 0 = window / 4).  A server thread reaps receive
//     completions with dat_evd_dequeue (dat_evd_wait when the ring is
//     empty, or spinning on dat_evd_dequeue with poll=1) and re-posts each
//     buffer to the SRQ at once with dat_srq_post_recv; the main thread
//     refills the client windows from the client's send completions.
//     Before the traffic starts, a dat_srq_query moves the depth buffers
//     from the post ring into the SRQ (prime=0 leaves them in the ring,
//     where all but the first wait for the first receive completion).
//     Time runs from the first send to the last receive:
//       user_bench: eps=N size=S msgs=M usecs=T rate=R      (R in messages/s)
//       user_bench: detail: depth=.. window=.. signal=.. connect_ms=.. ...
//     shared_evd=1 gives the server EPs one EVD for receives and requests
//     (libdat then cannot tell SRQ receives from sends and learns the SRQ
//     count with KDAT_IOC_SRQ_QUERY; for comparison only).  time_posts=1
//     adds repost_ns: the mean time of one re-post during the traffic
//     (clock_gettime around dat_srq_post_recv, the ring in steady use).
//
//   user_bench parts [depth=512] [n=4096] [reps=7] [size=64] [srv_ia=rxe0]
//
//     Where the time of one dat_srq_post_recv goes (see parts_main): the
//     handle lookup alone, plus the LMR check, the whole post, rdma-core's
//     post, and the primitives the library uses (mutex, shared_mutex,
//     atomics, fence, shared_ptr copy, hash lookup) as this CPU runs them.
//
// On failure "user_bench: FAILED: why" and exit status 1.
#include <arpa/inet.h>
#include <dat/dat_kdat.h>
#include <dat/udat.h>
#include <infiniband/verbs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

struct Failure : std::runtime_error {
	using std::runtime_error::runtime_error;
};

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	throw Failure(buf);
}

void check(DAT_RETURN r, const char *what)
{
	const char *major = "", *minor = "";

	if (r == DAT_SUCCESS)
		return;
	dat_strerror(r, &major, &minor);
	fail("%.*s: %s%s%s (0x%x)", (int)std::strcspn(what, "("), what, major,
	     *minor ? " " : "", minor, r);
}

#define CHECK(call) check((call), #call)

inline std::uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (std::uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

inline DAT_DTO_COOKIE cookie(std::uint64_t v)
{
	DAT_DTO_COOKIE c;

	c.as_64 = v;
	return c;
}

double median(std::vector<double> v)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	std::size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* key=value arguments, like the kernel module's parameters */
struct Args {
	std::map<std::string, std::string> kv;

	Args(int argc, char **argv, int first)
	{
		for (int i = first; i < argc; i++) {
			const char *eq = std::strchr(argv[i], '=');

			if (!eq)
				fail("argument '%s' is not key=value", argv[i]);
			kv[std::string(argv[i], eq - argv[i])] = eq + 1;
		}
	}
	long num(const char *k, long dflt)
	{
		auto it = kv.find(k);
		if (it == kv.end())
			return dflt;
		char *end;
		long v = std::strtol(it->second.c_str(), &end, 0);
		if (*end || it->second.empty())
			fail("%s=%s is not a number", k, it->second.c_str());
		kv.erase(it);
		return v;
	}
	std::string str(const char *k, const char *dflt)
	{
		auto it = kv.find(k);
		if (it == kv.end())
			return dflt;
		std::string v = it->second;
		kv.erase(it);
		return v;
	}
	void done()
	{
		if (!kv.empty())
			fail("unknown parameter %s", kv.begin()->first.c_str());
	}
};

/* One IA with its PZ, event dispatchers and one registered buffer. */
struct Side {
	const char *name = "";
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto = DAT_HANDLE_NULL,
		       req = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL,
		       cr = DAT_HANDLE_NULL;
	DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
	char *buf = nullptr;
	std::size_t len = 0;
	DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
	DAT_LMR_CONTEXT lctx = 0;

	void open(const char *ia_name, std::size_t bytes, DAT_COUNT dto_qlen,
		  DAT_COUNT conn_qlen)
	{
		name = ia_name;
		CHECK(dat_ia_open((DAT_NAME_PTR)ia_name, 64, &async_evd, &ia));
		CHECK(dat_pz_create(ia, &pz));
		CHECK(dat_evd_create(ia, dto_qlen, DAT_HANDLE_NULL,
				     DAT_EVD_DTO_FLAG, &dto));
		CHECK(dat_evd_create(ia, conn_qlen, DAT_HANDLE_NULL,
				     DAT_EVD_CONNECTION_FLAG, &conn));
		CHECK(dat_evd_create(ia, conn_qlen, DAT_HANDLE_NULL,
				     DAT_EVD_CR_FLAG, &cr));
		len = (bytes + 4095) & ~(std::size_t)4095;
		buf = static_cast<char *>(std::aligned_alloc(4096, len));
		if (!buf)
			fail("no memory for %zu bytes", len);
		std::memset(buf, 0, len);
		DAT_REGION_DESCRIPTION r;
		DAT_RMR_CONTEXT rc;
		DAT_VLEN rs;
		DAT_VADDR ra;
		r.for_va = buf;
		CHECK(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, r, len, pz,
				     (DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_READ_FLAG |
							  DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
				     &lmr, &lctx, &rc, &rs, &ra));
	}

	DAT_LMR_TRIPLET seg(std::size_t off, std::size_t n) const
	{
		DAT_LMR_TRIPLET t{};

		t.lmr_context = lctx;
		t.virtual_address = (DAT_VADDR)(uintptr_t)(buf + off);
		t.segment_length = n;
		return t;
	}

	/* abrupt close frees all the IA holds */
	void close()
	{
		if (ia)
			dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
		ia = DAT_HANDLE_NULL;
		std::free(buf);
		buf = nullptr;
	}
	~Side() { close(); }
};

/* ------------------------------------------------------------------ */
/* post: what one receive post costs                                    */

struct Verbs {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_mr *mr = nullptr;

	void open(const char *name, void *buf, std::size_t len)
	{
		int n = 0;
		ibv_device **list = ibv_get_device_list(&n);

		if (!list)
			fail("ibv_get_device_list: %s", std::strerror(errno));
		for (int i = 0; i < n && !ctx; i++)
			if (!std::strcmp(ibv_get_device_name(list[i]), name))
				ctx = ibv_open_device(list[i]);
		ibv_free_device_list(list);
		if (!ctx)
			fail("ibv_open_device %s failed", name);
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			fail("ibv_alloc_pd: %s", std::strerror(errno));
		mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
		if (!mr)
			fail("ibv_reg_mr: %s", std::strerror(errno));
	}
	~Verbs()
	{
		if (mr)
			ibv_dereg_mr(mr);
		if (pd)
			ibv_dealloc_pd(pd);
		if (ctx)
			ibv_close_device(ctx);
	}
};

enum Method { DAT, IOCTL, VERBS, GETPPID, NMETHODS };
const char *const method_name[NMETHODS] = { "dat", "ioctl", "verbs", "getppid" };

struct PostBench {
	int depth, posts, size;
	Side s;
	Verbs v;

	/* Time one batch: depth posts into a new, empty SRQ.  Returns ns. */
	std::uint64_t dat_batch(bool by_ioctl, std::uint64_t *first_ns)
	{
		DAT_SRQ_ATTR sa = { depth, 1, DAT_SRQ_LW_DEFAULT };
		DAT_SRQ_HANDLE srq;
		std::vector<DAT_LMR_TRIPLET> t(depth);

		for (int i = 0; i < depth; i++)
			t[i] = s.seg((std::size_t)i * size, size);
		CHECK(dat_srq_create(s.ia, s.pz, &sa, &srq));
		std::uint64_t t0 = now_ns(), t1 = t0;
		for (int i = 0; i < depth; i++) {
			DAT_RETURN r = by_ioctl ?
				dat_kdat_srq_post_recv_ioctl(srq, 1, &t[i], cookie(i)) :
				dat_srq_post_recv(srq, 1, &t[i], cookie(i));
			if (r != DAT_SUCCESS) {
				dat_srq_free(srq);
				check(r, by_ioctl ? "dat_kdat_srq_post_recv_ioctl" :
						    "dat_srq_post_recv");
			}
			if (i == 0)
				t1 = now_ns();
		}
		std::uint64_t t2 = now_ns();
		CHECK(dat_srq_free(srq));
		if (first_ns)
			*first_ns = t1 - t0;
		return t2 - t0;
	}

	std::uint64_t verbs_batch(std::uint64_t *first_ns = nullptr)
	{
		ibv_srq_init_attr init = {};
		std::vector<ibv_sge> sge(depth);
		std::vector<ibv_recv_wr> wr(depth);
		ibv_recv_wr *bad;

		init.attr.max_wr = depth;
		init.attr.max_sge = 1;
		ibv_srq *srq = ibv_create_srq(v.pd, &init);
		if (!srq)
			fail("ibv_create_srq(%d): %s", depth, std::strerror(errno));
		for (int i = 0; i < depth; i++) {
			sge[i].addr = (uintptr_t)s.buf + (std::size_t)i * size;
			sge[i].length = size;
			sge[i].lkey = v.mr->lkey;
			wr[i].wr_id = i;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].next = nullptr;
		}
		std::uint64_t t0 = now_ns(), tf = t0;
		for (int i = 0; i < depth; i++) {
			int e = ibv_post_srq_recv(srq, &wr[i], &bad);
			if (e) {
				ibv_destroy_srq(srq);
				fail("ibv_post_srq_recv: %s", std::strerror(e));
			}
			if (i == 0)
				tf = now_ns();
		}
		std::uint64_t t1 = now_ns();
		if (first_ns)
			*first_ns = tf - t0;
		if (ibv_destroy_srq(srq))
			fail("ibv_destroy_srq: %s", std::strerror(errno));
		return t1 - t0;
	}

	std::uint64_t getppid_batch()
	{
		std::uint64_t t0 = now_ns();
		for (int i = 0; i < depth; i++)
			syscall(SYS_getppid);
		return now_ns() - t0;
	}

	/* ns per post of one method over posts / depth batches */
	double run(Method m, double *steady, double *first_mean = nullptr)
	{
		int batches = std::max(posts / depth, 1);
		std::uint64_t total = 0, first = 0;

		for (int b = 0; b < batches; b++) {
			std::uint64_t f = 0;

			switch (m) {
			case DAT:
				total += dat_batch(false, &f);
				first += f;
				break;
			case IOCTL:
				total += dat_batch(true, &f);
				first += f;
				break;
			case VERBS:
				total += verbs_batch(&f);
				first += f;
				break;
			default:
				total += getppid_batch();
				break;
			}
		}
		if (steady)
			*steady = depth > 1 ? (double)(total - first) /
						      ((double)batches * (depth - 1)) : 0;
		if (first_mean)
			*first_mean = (double)first / batches;
		return (double)total / ((double)batches * depth);
	}
};

int post_main(Args &a)
{
	PostBench p;
	int reps = (int)a.num("reps", 7);
	std::string ia = a.str("srv_ia", "rxe0");

	p.depth = (int)a.num("depth", 512);
	p.posts = (int)a.num("posts", 8192);
	p.size = (int)a.num("size", 64);
	a.done();
	if (p.depth < 2 || p.posts < 1 || p.size < 1 || reps < 1)
		fail("need depth >= 2, posts, size, reps >= 1");

	p.s.open(ia.c_str(), (std::size_t)p.depth * p.size, 64, 16);
	p.v.open(ia.c_str(), p.s.buf, p.s.len);

	/* warm up every path once (page faults, first ioctls, caches) */
	for (int m = 0; m < NMETHODS; m++) {
		int save = p.posts;
		p.posts = p.depth;
		p.run((Method)m, nullptr);
		p.posts = save;
	}

	std::vector<double> res[NMETHODS], steady, r_dv, r_id;
	for (int rep = 0; rep < reps; rep++) {
		double ns[NMETHODS], st = 0;

		for (int k = 0; k < NMETHODS; k++) {
			Method m = (Method)((rep + k) % NMETHODS);
			ns[m] = p.run(m, m == DAT ? &st : nullptr);
		}
		for (int m = 0; m < NMETHODS; m++)
			res[m].push_back(ns[m]);
		steady.push_back(st);
		r_dv.push_back(ns[DAT] / ns[VERBS]);
		r_id.push_back(ns[IOCTL] / ns[DAT]);
		std::printf("user_bench: post: rep=%d dat=%.0f dat_steady=%.0f ioctl=%.0f verbs=%.0f getppid=%.0f\n",
			    rep + 1, ns[DAT], st, ns[IOCTL], ns[VERBS], ns[GETPPID]);
		std::fflush(stdout);
	}
	std::printf("user_bench: post: depth=%d posts=%d reps=%d median ns/post: dat=%.0f dat_steady=%.0f ioctl=%.0f verbs=%.0f getppid=%.0f dat/verbs=%.3f ioctl/dat=%.3f\n",
		    p.depth, std::max(p.posts / p.depth, 1) * p.depth, reps,
		    median(res[DAT]), median(steady), median(res[IOCTL]),
		    median(res[VERBS]), median(res[GETPPID]), median(r_dv),
		    median(r_id));
	return 0;
}

/*
 * parts: where the time of one dat_srq_post_recv goes, in the guest.
 * Each line is ns per call, the median of reps means of n calls:
 *   lookup      dat_srq_post_recv(srq, -1, ...): handle lookup, dispatch,
 *               refused at the first argument check (no triplet, no ring)
 *   +triplet    a triplet outside its LMR: lookup + the LMR-table check
 *   post        a whole post into an empty SRQ (ring write; batch of depth)
 *   post_steady the same without the first post of a batch
 *   first_post  that first post alone (first touch of the ring)
 *   verbs       ibv_post_srq_recv into an empty ibv SRQ (batch of depth),
 *               first_verbs its first post
 *   ioctl       dat_kdat_srq_post_recv_ioctl (batch of depth), first_ioctl
 *               its first post
 *   query       dat_srq_query (one KDAT_IOC_SRQ_QUERY, drains the ring)
 *   and the primitives the library is built from, as this CPU runs them:
 *   clock_gettime, an uncontended std::mutex lock+unlock, a
 *   std::shared_mutex lock_shared+unlock_shared, an atomic fetch_add, a
 *   seq_cst fence, a shared_ptr copy+destroy, an unordered_map find.
 */
template <class F>
double ns_per_call(int n, int reps, F &&f)
{
	std::vector<double> v;

	for (int r = 0; r < reps; r++) {
		std::uint64_t t0 = now_ns();
		for (int i = 0; i < n; i++)
			f(i);
		v.push_back((double)(now_ns() - t0) / n);
	}
	return median(v);
}

int parts_main(Args &a)
{
	PostBench p;
	int reps = (int)a.num("reps", 7), n = (int)a.num("n", 4096);
	std::string ia = a.str("srv_ia", "rxe0");

	p.depth = (int)a.num("depth", 512);
	p.posts = p.depth;
	p.size = (int)a.num("size", 64);
	a.done();
	p.s.open(ia.c_str(), (std::size_t)p.depth * p.size, 64, 16);
	p.v.open(ia.c_str(), p.s.buf, p.s.len);

	DAT_SRQ_ATTR sa = { p.depth, 1, DAT_SRQ_LW_DEFAULT };
	DAT_SRQ_HANDLE srq;
	CHECK(dat_srq_create(p.s.ia, p.s.pz, &sa, &srq));
	DAT_LMR_TRIPLET good = p.s.seg(0, p.size), bad = good;
	bad.segment_length = p.s.len + 1;
	volatile DAT_RETURN sink = 0;
	auto lookup = ns_per_call(n, reps, [&](int i) {
		sink = dat_srq_post_recv(srq, -1, &good, cookie(i));
	});
	if (DAT_GET_TYPE(sink) != DAT_INVALID_PARAMETER)
		fail("lookup probe returned 0x%x", (unsigned)sink);
	auto triplet = ns_per_call(n, reps, [&](int i) {
		sink = dat_srq_post_recv(srq, 1, &bad, cookie(i));
	});
	if (DAT_GET_TYPE(sink) != DAT_INVALID_PARAMETER)
		fail("triplet probe returned 0x%x", (unsigned)sink);
	CHECK(dat_srq_free(srq));

	std::vector<double> post, steady, first, verbs, vfirst, ioctl, ifirst;
	for (int r = 0; r < reps; r++) {
		double st, fi;
		post.push_back(p.run(DAT, &st, &fi));
		steady.push_back(st);
		first.push_back(fi);
		verbs.push_back(p.run(VERBS, &st, &fi));
		vfirst.push_back(fi);
		ioctl.push_back(p.run(IOCTL, &st, &fi));
		ifirst.push_back(fi);
	}

	/* a query drains the post ring: one ioctl, like the kick */
	CHECK(dat_srq_create(p.s.ia, p.s.pz, &sa, &srq));
	DAT_SRQ_PARAM qp;
	auto query = ns_per_call(std::min(n, 512), reps, [&](int) {
		sink = dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &qp);
	});
	check(sink, "dat_srq_query");
	CHECK(dat_srq_free(srq));

	std::mutex m;
	std::shared_mutex sm;
	std::atomic<std::uint64_t> at{0};
	auto sp = std::make_shared<int>(1);
	std::unordered_map<std::uint32_t, std::uint64_t> um;
	for (std::uint32_t i = 0; i < 64; i++)
		um[i * 7919] = i;
	volatile std::uint64_t vs = 0;
	double clk = ns_per_call(n, reps, [&](int) { vs = now_ns(); });
	double mtx = ns_per_call(n, reps, [&](int) { m.lock(); vs = vs + 1; m.unlock(); });
	double shm = ns_per_call(n, reps, [&](int) { sm.lock_shared(); vs = vs + 1; sm.unlock_shared(); });
	double fadd = ns_per_call(n, reps, [&](int) { at.fetch_add(1); });
	double fence = ns_per_call(n, reps, [&](int) {
		vs = vs + 1;
		std::atomic_thread_fence(std::memory_order_seq_cst);
	});
	double spc = ns_per_call(n, reps, [&](int) {
		std::shared_ptr<int> c = sp;
		vs = vs + *c;
	});
	double umf = ns_per_call(n, reps, [&](int i) {
		auto it = um.find((std::uint32_t)(i & 63) * 7919);
		vs = vs + it->second;
	});
	std::printf("user_bench: parts: ns per call (median of %d x %d): lookup=%.0f +triplet=%.0f post=%.0f post_steady=%.0f first_post=%.0f verbs=%.0f first_verbs=%.0f ioctl=%.0f first_ioctl=%.0f query=%.0f\n",
		    reps, n, lookup, triplet, median(post), median(steady),
		    median(first), median(verbs), median(vfirst), median(ioctl),
		    median(ifirst), query);
	std::printf("user_bench: parts: primitives: clock_gettime=%.1f mutex=%.1f shared_mutex=%.1f fetch_add=%.1f fence=%.1f shared_ptr_copy=%.1f unordered_map_find=%.1f\n",
		    clk, mtx, shm, fadd, fence, spc, umf);
	return 0;
}

/* ------------------------------------------------------------------ */
/* rate: message rate through one SRQ                                   */

struct ClientEp {
	DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
	std::uint32_t quota = 0, posted = 0, done = 0;
};

struct RateBench {
	int neps, size, iters, depth, window, signal, qual;
	bool shared_evd, poll, time_posts, prime;
	std::string srv_ia, cli_ia, srv_addr;

	Side srv, cli;
	DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
	std::vector<DAT_EP_HANDLE> sep;
	std::vector<ClientEp> cep;

	std::atomic<bool> stop{false};
	std::uint64_t srv_t_end = 0, srv_received = 0, srv_waits = 0;
	std::uint64_t srv_post_ns = 0;		/* time_posts=1 */
	std::string srv_error;

	static constexpr DAT_TIMEOUT kEventWait = 10'000'000;	/* 10 s */
	static constexpr std::uint64_t kRunNs = 120'000'000'000ull;

	DAT_EVENT next_event(DAT_EVD_HANDLE evd, const char *what)
	{
		DAT_EVENT ev;
		DAT_COUNT more;
		DAT_RETURN r = dat_evd_wait(evd, kEventWait, 1, &ev, &more);

		if (r != DAT_SUCCESS)
			check(r, what);
		return ev;
	}

	void setup()
	{
		/* every WR reaches a CQ, plus flushes at teardown */
		srv.open(srv_ia.c_str(), (std::size_t)depth * size,
			 depth + 2 * neps + 16, 2 * neps + 16);
		cli.open(cli_ia.c_str(), size, neps * (window + 2) + 16,
			 2 * neps + 16);
		if (!shared_evd)
			CHECK(dat_evd_create(srv.ia, 2 * neps + 16, DAT_HANDLE_NULL,
					     DAT_EVD_DTO_FLAG, &srv.req));

		DAT_SRQ_ATTR sa = { depth, 1, DAT_SRQ_LW_DEFAULT };
		CHECK(dat_srq_create(srv.ia, srv.pz, &sa, &srq));
		CHECK(dat_psp_create(srv.ia, qual, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp));

		DAT_EP_ATTR a{};
		a.service_type = DAT_SERVICE_TYPE_RC;
		a.max_message_size = size;
		a.qos = DAT_QOS_BEST_EFFORT;
		a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
		a.request_completion_flags = DAT_COMPLETION_SUPPRESS_FLAG;
		a.max_recv_dtos = 1;
		a.max_request_dtos = window + 1;
		a.max_recv_iov = 1;
		a.max_request_iov = 1;

		sep.resize(neps);
		cep.resize(neps);
		for (int i = 0; i < neps; i++) {
			cep[i].quota = iters / neps + (i < iters % neps);
			CHECK(dat_ep_create_with_srq(srv.ia, srv.pz, srv.dto,
						     shared_evd ? srv.dto : srv.req,
						     srv.conn, srq, &a, &sep[i]));
			CHECK(dat_ep_create(cli.ia, cli.pz, cli.dto, cli.dto,
					    cli.conn, &a, &cep[i].ep));
		}
	}

	/* 32 connections at a time; private data = client index */
	void connect()
	{
		sockaddr_in sin{};

		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = inet_addr(srv_addr.c_str());
		for (int first = 0, n; first < neps; first += n) {
			n = std::min(neps - first, 32);
			for (int i = first; i < first + n; i++) {
				std::uint32_t tag = i;
				CHECK(dat_ep_connect(cep[i].ep, (DAT_IA_ADDRESS_PTR)&sin,
						     qual, DAT_TIMEOUT_INFINITE,
						     sizeof(tag), &tag,
						     DAT_QOS_BEST_EFFORT,
						     DAT_CONNECT_DEFAULT_FLAG));
			}
			for (int i = 0; i < n; i++) {
				DAT_EVENT ev = next_event(srv.cr, "connection request");
				if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
					fail("event 0x%x instead of a connection request",
					     ev.event_number);
				DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
				DAT_CR_PARAM crp;
				std::uint32_t tag;
				CHECK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
				if (crp.private_data_size != (DAT_COUNT)sizeof(tag))
					fail("private data of %d bytes", crp.private_data_size);
				std::memcpy(&tag, crp.private_data, sizeof(tag));
				if (tag < (std::uint32_t)first || tag >= (std::uint32_t)(first + n))
					fail("request from unknown client %u", tag);
				CHECK(dat_cr_accept(cr, sep[tag], 0, nullptr));
			}
			for (Side *s : { &srv, &cli })
				for (int i = 0; i < n; i++) {
					DAT_EVENT ev = next_event(s->conn, "connection");
					if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
						fail("%s: event 0x%x instead of ESTABLISHED",
						     s->name, ev.event_number);
				}
		}
	}

	void post_buf(std::uint32_t slot)
	{
		DAT_LMR_TRIPLET t = srv.seg((std::size_t)slot * size, size);

		CHECK(dat_srq_post_recv(srq, 1, &t, cookie(slot)));
	}

	/*
	 * The server: take each receive completion, give its buffer back to
	 * the SRQ at once.  Ends when every message arrived (or on error).
	 */
	void server()
	{
		try {
			const std::uint64_t total = iters;
			const std::uint64_t deadline = now_ns() + kRunNs;

			while (srv_received < total) {
				DAT_EVENT ev;
				DAT_COUNT more;
				DAT_RETURN r = dat_evd_dequeue(srv.dto, &ev);

				if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) {
					if (stop.load(std::memory_order_relaxed))
						fail("stopped after %llu messages",
						     (unsigned long long)srv_received);
					if (now_ns() > deadline)
						fail("only %llu of %llu messages arrived in %llu s",
						     (unsigned long long)srv_received,
						     (unsigned long long)total,
						     (unsigned long long)(kRunNs / 1000000000ull));
					if (poll)
						continue;
					srv_waits++;
					r = dat_evd_wait(srv.dto, 100000, 1, &ev, &more);
					if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED)
						continue;
				}
				check(r, "server: dat_evd_dequeue/dat_evd_wait");
				const auto &c = ev.event_data.dto_completion_event_data;
				if (ev.event_number != DAT_DTO_COMPLETION_EVENT)
					fail("server: event 0x%x", ev.event_number);
				if (c.status != DAT_DTO_SUCCESS ||
				    c.transfered_length != (DAT_VLEN)size)
					fail("server: receive status %d length %llu",
					     c.status, (unsigned long long)c.transfered_length);
				if (time_posts) {
					std::uint64_t tp = now_ns();
					post_buf((std::uint32_t)c.user_cookie.as_64);
					srv_post_ns += now_ns() - tp;
				} else {
					post_buf((std::uint32_t)c.user_cookie.as_64);
				}
				srv_received++;
			}
			srv_t_end = now_ns();
		} catch (const std::exception &x) {
			srv_error = x.what();
			stop = true;
		}
	}

	/* Fill client EP i's window. */
	void pump(std::uint32_t i)
	{
		ClientEp &e = cep[i];
		DAT_LMR_TRIPLET t = cli.seg(0, size);

		while (e.posted < e.quota && e.posted - e.done < (std::uint32_t)window) {
			std::uint32_t seq = e.posted;
			DAT_COMPLETION_FLAGS f =
				seq % signal == (std::uint32_t)signal - 1 || seq == e.quota - 1 ?
					DAT_COMPLETION_DEFAULT_FLAG :
					DAT_COMPLETION_SUPPRESS_FLAG;
			CHECK(dat_ep_post_send(e.ep, 1, &t,
					       cookie((std::uint64_t)i << 32 | seq), f));
			e.posted++;
		}
	}

	int run()
	{
		std::uint64_t tc = now_ns();
		setup();
		connect();
		std::uint64_t connect_ms = (now_ns() - tc) / 1000000;
		for (int i = 0; i < depth; i++)
			post_buf(i);
		/*
		 * The EPs exist, so the ring's first post kicks the kernel and
		 * the rest wait in the ring until a receive completes (or a
		 * kick or query; accepting drained what was posted before).
		 * A query drains the ring: every buffer is in the SRQ when the
		 * traffic starts, as with the kernel consumer.
		 */
		if (prime) {
			DAT_SRQ_PARAM sp;
			CHECK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp));
			if (sp.available_dto_count != depth)
				fail("after the query %d of %d buffers are on the SRQ",
				     sp.available_dto_count, depth);
		}

		std::thread st;
		std::uint64_t t0 = now_ns(), cli_waits = 0;
		int finished = 0;
		try {
			st = std::thread([this] { server(); });
			for (int i = 0; i < neps; i++)
				pump(i);
			const std::uint64_t deadline = now_ns() + kRunNs;
			while (finished < neps) {
				DAT_EVENT ev;
				DAT_COUNT more;
				DAT_RETURN r = dat_evd_dequeue(cli.dto, &ev);

				if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) {
					if (stop.load())
						break;
					if (now_ns() > deadline)
						fail("client: sends did not complete in time");
					cli_waits++;
					r = dat_evd_wait(cli.dto, 100000, 1, &ev, &more);
					if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED)
						continue;
				}
				check(r, "client: dat_evd_dequeue/dat_evd_wait");
				const auto &c = ev.event_data.dto_completion_event_data;
				std::uint32_t i = c.user_cookie.as_64 >> 32;
				if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
				    c.status != DAT_DTO_SUCCESS || i >= (std::uint32_t)neps)
					fail("client: event 0x%x status %d",
					     ev.event_number, c.status);
				cep[i].done = (std::uint32_t)c.user_cookie.as_64 + 1;
				if (cep[i].done == cep[i].quota)
					finished++;
				pump(i);
			}
		} catch (...) {
			stop = true;
			if (st.joinable())
				st.join();
			throw;
		}
		st.join();
		if (!srv_error.empty())
			fail("%s", srv_error.c_str());
		if (finished < neps)
			fail("client stopped with %d of %d EPs done", finished, neps);

		std::uint64_t usecs = std::max<std::uint64_t>((srv_t_end - t0) / 1000, 1);
		std::printf("user_bench: eps=%d size=%d msgs=%d usecs=%llu rate=%llu\n",
			    neps, size, iters, (unsigned long long)usecs,
			    (unsigned long long)((std::uint64_t)iters * 1000000ull / usecs));
		std::printf("user_bench: detail: depth=%d window=%d signal=%d connect_ms=%llu server_waits=%llu client_waits=%llu shared_evd=%d poll=%d prime=%d",
			    depth, window, signal, (unsigned long long)connect_ms,
			    (unsigned long long)srv_waits, (unsigned long long)cli_waits,
			    shared_evd, poll, prime);
		if (time_posts)
			std::printf(" repost_ns=%llu",
				    (unsigned long long)(srv_post_ns / (std::uint64_t)iters));
		std::printf("\n");
		return 0;
	}
};

int rate_main(Args &a)
{
	RateBench b;

	b.neps = (int)a.num("eps", 16);
	b.size = (int)a.num("size", 64);
	b.iters = (int)a.num("iters", 20480);
	b.depth = (int)a.num("depth", 512);
	b.window = (int)a.num("window", 0);
	b.signal = (int)a.num("signal", 0);
	b.qual = (int)a.num("qual", 4900);
	b.shared_evd = a.num("shared_evd", 0) != 0;
	b.poll = a.num("poll", 0) != 0;
	b.time_posts = a.num("time_posts", 0) != 0;
	b.prime = a.num("prime", 1) != 0;
	b.srv_ia = a.str("srv_ia", "rxe0");
	b.cli_ia = a.str("cli_ia", "rxe1");
	b.srv_addr = a.str("srv_addr", "192.0.2.1");
	a.done();
	if (b.neps < 1 || b.neps > 1024 || b.size < 1 || b.size > 65536 ||
	    b.iters < b.neps || b.depth < 1)
		fail("bad parameters (eps 1..1024, size 1..65536, iters >= eps, depth >= 1)");
	if (!b.window)
		b.window = std::clamp(b.depth / (2 * b.neps), 1, 64);
	if (!b.signal)
		b.signal = std::max(b.window / 4, 1);
	if (b.window < 1 || b.window > 64 || b.signal < 1 || b.signal > b.window)
		fail("need 1 <= signal <= window <= 64");
	return b.run();
}

} // namespace

int main(int argc, char **argv)
try {
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc < 2 || (std::strcmp(argv[1], "post") && std::strcmp(argv[1], "rate") &&
			 std::strcmp(argv[1], "parts"))) {
		std::fprintf(stderr, "usage: user_bench post|rate|parts [key=value...]\n"
				     "  (see the comment at the top of tests/bench/user_bench.cpp)\n");
		return 2;
	}
	Args a(argc, argv, 2);
	if (!std::strcmp(argv[1], "post"))
		return post_main(a);
	if (!std::strcmp(argv[1], "parts"))
		return parts_main(a);
	return rate_main(a);
} catch (const std::exception &x) {
	std::printf("user_bench: FAILED: %s\n", x.what());
	return 1;
}
