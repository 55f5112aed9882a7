// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// datperf: message rate through ONE shared receive queue, and the cost of
// one receive post, measured with libdat (a user-space consumer of kdat).
// The options mean what they mean to perftest (ib_send_bw --use-srq):
//
//   datperf [options]              server: -q EPs share one SRQ on -d
//   datperf [options] HOST         client: -q EPs on -d send to HOST
//   datperf --loopback [options]   both sides in this process (two threads)
//   datperf --post-cost [options]  ns per receive post: dat_srq_post_recv
//                                  (post ring), one ioctl per post,
//                                  rdma-core's ibv_post_srq_recv, getppid()
//   datperf --post-parts [options] where the time of one post goes
//
// Message rate: -q client EPs stream -n sends of -s bytes each to -q
// server EPs that share one SRQ of -r buffers.  The server reposts each
// buffer as soon as it dequeues its completion; each client EP keeps up to
// -t sends in flight and asks for a completion event every -Q-th send
// (and for its last one), the others are posted with
// DAT_COMPLETION_SUPPRESS_FLAG.  Time runs from the first send to the last
// receive (the server alone: from the first receive).  The
// kernel-consumer counterpart is tests/bench/kdat_bench.ko (make bench);
// tests/bench/run-user-bench.sh (make bench-user) runs datperf against
// perftest and librxe.
//
// See datperf(1).
#include <dat/udat.h>
#include <dat/dat_kdat.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <getopt.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>
#define DATPERF_VERBS 1
#else
#define DATPERF_VERBS 0
#endif
#if DATPERF_VERBS && __has_include(<rdma/rdma_cma.h>)
#include <rdma/rdma_cma.h>
#define DATPERF_RDMACM 1
#else
#define DATPERF_RDMACM 0
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "json.hpp"

#ifndef DAT_TOOLS_VERSION
#define DAT_TOOLS_VERSION "unknown"
#endif

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kVersion = DAT_TOOLS_VERSION;
constexpr std::uint32_t kMagic = 0x44415450;	/* "DATP": our connect data */
constexpr DAT_TIMEOUT kPoll = 200'000;		/* 200 ms: check for abort */

enum class Role { server, client, loopback };
enum class Mode { rate, post_cost, post_parts, send_cost, lat, bidir };
enum class PostPath { ring, ioctl };

const char *path_name(PostPath p)
{
	return p == PostPath::ring ? "ring" : "ioctl";
}

struct Options {
	Role role = Role::server;
	Mode mode = Mode::rate;
	int size = 64;			/* -s */
	int eps = 1;			/* -q */
	int depth = 512;		/* -r */
	long iters = 1000;		/* -n: per EP (post cost: posts per method) */
	int window = 0;			/* -t; 0: depth / (2 x eps), 1..64 */
	int signal = 0;			/* -Q; 0: window / 4, at least 1 */
	int reps = 7;			/* post cost: repetitions */
	std::string dev;		/* -d; "": the first IA listed */
	std::string client_dev;		/* --loopback's client; "": the next IA */
	std::string host;		/* the client's server */
	DAT_CONN_QUAL port = 4900;
	std::vector<PostPath> paths{ PostPath::ring };
	int timeout = 30;		/* seconds without any progress */
	bool json = false;
	bool event = false;		/* sleep in dat_evd_wait, not spin */
	bool srq = false;		/* --lat/--bidir: receives through an SRQ */
	int progress = -1;		/* -1: when stderr is a terminal */

	/* resolved from the above before a run */
	std::string ia_server, ia_client, addr;
};

/* ---------------------------------------------------------------------- */
/* Errors and small helpers                                               */

std::string status(DAT_RETURN r)
{
	const char *major = "?", *minor = "";

	dat_strerror(r, &major, &minor);
	return std::string(major) + (*minor ? " " : "") + minor;
}

struct DatError : std::runtime_error {
	DAT_RETURN code;
	DatError(const std::string &what, DAT_RETURN r)
		: std::runtime_error(what + ": " + status(r)), code(r) {}
};

void ok(DAT_RETURN r, const std::string &what)
{
	if (r != DAT_SUCCESS)
		throw DatError(what, r);
}

bool is(DAT_RETURN r, DAT_RETURN type)
{
	return DAT_GET_TYPE(r) == DAT_GET_TYPE(type);
}

DAT_DTO_COOKIE cookie(std::uint64_t v)
{
	DAT_DTO_COOKIE c;

	c.as_64 = v;
	return c;
}

double seconds(Clock::duration d)
{
	return std::chrono::duration<double>(d).count();
}

double cpu_seconds()
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
	       (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* Set when either side fails, so the other stops waiting. */
std::atomic<bool> g_abort{ false };

void check_abort()
{
	if (g_abort.load())
		throw std::runtime_error("stopped: the other side failed");
}

/* Progress on stderr, only on long runs: from 1 s on, twice a second. */
class Progress {
public:
	Progress(int mode, std::string what)
		: on_(mode > 0 || (mode < 0 && isatty(STDERR_FILENO))),
		  tty_(isatty(STDERR_FILENO)), what_(std::move(what)),
		  start_(Clock::now()), next_(start_ + std::chrono::seconds(1)) {}

	~Progress() { done(); }

	void update(long now_done, long total)
	{
		if (!on_)
			return;
		auto t = Clock::now();
		if (t < next_)
			return;
		next_ = t + std::chrono::milliseconds(500);
		double s = seconds(t - start_);
		std::fprintf(stderr, "%sdatperf: %s %ld/%ld (%.0f%%, %.0f/s)%s",
			     tty_ ? "\r\033[K" : "", what_.c_str(), now_done,
			     total, total ? 100.0 * now_done / total : 100.0,
			     s > 0 ? now_done / s : 0.0, tty_ ? "" : "\n");
		shown_ = true;
	}

	void done()
	{
		if (shown_ && tty_)
			std::fprintf(stderr, "\r\033[K");
		shown_ = false;
	}

private:
	bool on_, tty_, shown_ = false;
	std::string what_;
	Clock::time_point start_, next_;
};

/* Page-aligned, zeroed memory to register. */
struct Buffer {
	std::unique_ptr<char, decltype(&std::free)> mem{ nullptr, &std::free };
	std::size_t len = 0;

	explicit Buffer(std::size_t n)
	{
		len = (std::max<std::size_t>(n, 1) + 4095) & ~std::size_t(4095);
		mem.reset(static_cast<char *>(std::aligned_alloc(4096, len)));
		if (!mem)
			throw std::bad_alloc();
		std::memset(mem.get(), 0, len);
	}
	char *data() const { return mem.get(); }
};

/* An open IA with its PZ and one registered buffer.  Closing the IA
 * (abruptly) frees everything created under it. */
struct Side {
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
	DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
	DAT_LMR_CONTEXT lctx = 0;
	std::unique_ptr<Buffer> buf;

	void open(const std::string &name, std::size_t bytes,
		  DAT_MEM_PRIV_FLAGS priv)
	{
		ok(dat_ia_open(const_cast<char *>(name.c_str()), 64, &async, &ia),
		   "dat_ia_open " + name);
		ok(dat_pz_create(ia, &pz), "dat_pz_create");
		buf = std::make_unique<Buffer>(bytes);
		DAT_REGION_DESCRIPTION region;
		DAT_RMR_CONTEXT rctx;
		DAT_VLEN rlen;
		DAT_VADDR raddr;
		region.for_va = buf->data();
		DAT_RETURN r = dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region,
					      buf->len, pz, priv, &lmr, &lctx,
					      &rctx, &rlen, &raddr);
		if (is(r, DAT_INSUFFICIENT_RESOURCES) ||
		    is(r, DAT_PRIVILEGES_VIOLATION))
			throw DatError("dat_lmr_create of " +
					       std::to_string(buf->len) +
					       " bytes (locked-memory limit? "
					       "see ulimit -l)", r);
		ok(r, "dat_lmr_create");
	}

	DAT_LMR_TRIPLET seg(std::size_t off, std::size_t n) const
	{
		DAT_LMR_TRIPLET t{};
		t.lmr_context = lctx;
		t.virtual_address = (DAT_VADDR)(uintptr_t)(buf->data() + off);
		t.segment_length = n;
		return t;
	}

	/* Async events (refused SRQ entries, overflows): none expected. */
	long async_events()
	{
		long n = 0;
		DAT_EVENT e;

		while (async && dat_evd_dequeue(async, &e) == DAT_SUCCESS)
			n++;
		return n;
	}

	~Side()
	{
		if (ia)
			dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	}
};

struct ConnectData {		/* client -> server, in the connect request */
	std::uint32_t magic;
	std::uint32_t messages;	/* this EP will send */
};

/* Wait for one event; false on a timeout slice (caller checks deadlines). */
bool wait_event(DAT_EVD_HANDLE evd, DAT_EVENT &e)
{
	DAT_COUNT more;
	DAT_RETURN r = dat_evd_wait(evd, kPoll, 1, &e, &more);

	if (is(r, DAT_TIMEOUT_EXPIRED) || is(r, DAT_INTERRUPTED_CALL))
		return false;
	ok(r, "dat_evd_wait");
	return true;
}

class Deadline {
public:
	explicit Deadline(int s) : limit_(std::chrono::seconds(s)) { touch(); }
	void touch() { at_ = Clock::now() + limit_; }
	void check(const std::string &waiting_for) const
	{
		check_abort();
		if (Clock::now() > at_)
			throw std::runtime_error("no progress for " +
						 std::to_string(limit_.count()) +
						 " s while waiting for " +
						 waiting_for);
	}

private:
	std::chrono::seconds limit_;
	Clock::time_point at_;
};

/* Take one event: spin on dat_evd_dequeue (perftest busy-polls as well)
 * or, with @block (--event), sleep in dat_evd_wait.  False when nothing
 * came for a while (the caller checks its deadline). */
bool next_event(DAT_EVD_HANDLE evd, DAT_EVENT &e, bool block)
{
	if (block)
		return wait_event(evd, e);
	for (int i = 0; i < 200000; i++) {
		DAT_RETURN r = dat_evd_dequeue(evd, &e);
		if (r == DAT_SUCCESS)
			return true;
		if (!is(r, DAT_QUEUE_EMPTY))
			ok(r, "dat_evd_dequeue");
	}
	return false;
}

/* The next event of @evd, by next_event (sleeping unless @block is false),
 * checking @dl between slices. */
DAT_EVENT await_event(DAT_EVD_HANDLE evd, const Deadline &dl, const char *what,
		      bool block = true)
{
	DAT_EVENT e;

	while (!next_event(evd, e, block))
		dl.check(what);
	return e;
}

/* ---------------------------------------------------------------------- */
/* Message rate: the server                                               */

struct ServerResult {
	long received = 0, flushed = 0, connections = 0, async_events = 0;
	std::uint64_t bytes = 0;
	Clock::time_point first, last;
	DAT_SRQ_PARAM srq{};
};

class Server {
public:
	Server(const Options &o, PostPath path) : o_(o), path_(path) {}

	/* Everything up to a listening PSP, so a client may connect at once. */
	void setup()
	{
		s_.open(o_.ia_server, (std::size_t)o_.depth * o_.size,
			DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
		/* CRs, connection events and receives on one EVD; EPs send
		 * nothing, so no request EVD (and the library knows every
		 * receive completion there is an SRQ buffer) */
		ok(dat_evd_create(s_.ia, o_.depth + 3 * o_.eps + 16,
				  DAT_HANDLE_NULL,
				  (DAT_EVD_FLAGS)(DAT_EVD_CR_FLAG |
						  DAT_EVD_CONNECTION_FLAG |
						  DAT_EVD_DTO_FLAG), &evd_),
		   "dat_evd_create");
		DAT_SRQ_ATTR sa = { o_.depth, 1, DAT_SRQ_LW_DEFAULT };
		ok(dat_srq_create(s_.ia, s_.pz, &sa, &srq_), "dat_srq_create");
		for (int i = 0; i < o_.depth; i++)
			repost(i);
		ok(dat_psp_create(s_.ia, o_.port, evd_, DAT_PSP_CONSUMER_FLAG,
				  &psp_), "dat_psp_create");
	}

	/* The server IA's IPv4 address, where its clients connect. */
	std::string address() const
	{
		DAT_IA_ATTR a;
		char txt[INET_ADDRSTRLEN];

		ok(dat_ia_query(s_.ia, nullptr, DAT_IA_FIELD_IA_ADDRESS_PTR, &a, 0,
				nullptr), "dat_ia_query");
		if (!a.ia_address_ptr || a.ia_address_ptr->sa_family != AF_INET ||
		    !inet_ntop(AF_INET,
			       &((const struct sockaddr_in *)a.ia_address_ptr)->sin_addr,
			       txt, sizeof(txt)))
			throw std::runtime_error("IA " + o_.ia_server +
						 " has no IPv4 address");
		return txt;
	}

	/* Serve o_.eps connections until each has disconnected and every
	 * announced message has arrived. */
	ServerResult run(Progress &progress)
	{
		ServerResult res;
		Deadline dl(o_.timeout);
		long expected = 0;
		int announced = 0, gone = 0;
		std::map<DAT_EP_HANDLE, bool> eps;	/* EP -> disconnected */

		while (gone < o_.eps || res.received < expected) {
			/* spin once every client announced itself, as
			   perftest polls only once it is connected */
			DAT_EVENT e = await_event(evd_, dl, gone < o_.eps ?
							    "connections" :
							    "messages",
						  o_.event || announced < o_.eps);
			dl.touch();
			do {
				handle(e, res, eps, expected, announced, gone);
			} while (dat_evd_dequeue(evd_, &e) == DAT_SUCCESS);
			progress.update(res.received, expected);
			if (announced == o_.eps && res.received > expected)
				throw std::runtime_error("more messages than announced");
		}
		res.connections = (long)eps.size();
		ok(dat_srq_query(srq_, DAT_SRQ_FIELD_ALL, &res.srq), "dat_srq_query");
		res.async_events = s_.async_events();
		return res;
	}

private:
	void repost(std::uint64_t slot)
	{
		DAT_LMR_TRIPLET t = s_.seg(slot * o_.size, o_.size);
		DAT_RETURN r = path_ == PostPath::ring ?
			dat_srq_post_recv(srq_, 1, &t, cookie(slot)) :
			dat_kdat_srq_post_recv_ioctl(srq_, 1, &t, cookie(slot));
		ok(r, path_ == PostPath::ring ? "dat_srq_post_recv" :
						"dat_kdat_srq_post_recv_ioctl");
	}

	void handle(const DAT_EVENT &e, ServerResult &res,
		    std::map<DAT_EP_HANDLE, bool> &eps, long &expected,
		    int &announced, int &gone)
	{
		switch (e.event_number) {
		case DAT_CONNECTION_REQUEST_EVENT: {
			DAT_CR_HANDLE cr = e.event_data.cr_arrival_event_data.cr_handle;
			DAT_CR_PARAM cp;
			ConnectData cd{};
			ok(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), "dat_cr_query");
			if (cp.private_data_size >= (DAT_COUNT)sizeof(cd))
				std::memcpy(&cd, cp.private_data, sizeof(cd));
			if (cd.magic != kMagic || announced == o_.eps) {
				dat_cr_reject(cr);	/* not ours, or one too many */
				return;
			}
			DAT_EP_ATTR a{};
			a.service_type = DAT_SERVICE_TYPE_RC;
			a.max_message_size = std::max(o_.size, 64);
			a.qos = DAT_QOS_BEST_EFFORT;
			a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
			a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
			a.max_recv_dtos = 0;		/* the SRQ's */
			a.max_request_dtos = 1;
			a.max_recv_iov = 1;
			a.max_request_iov = 1;
			a.srq_soft_hw = DAT_HW_DEFAULT;
			DAT_EP_HANDLE ep;
			ok(dat_ep_create_with_srq(s_.ia, s_.pz, evd_, DAT_HANDLE_NULL,
						  evd_, srq_, &a, &ep),
			   "dat_ep_create_with_srq");
			eps[ep] = false;
			ok(dat_cr_accept(cr, ep, 0, nullptr), "dat_cr_accept");
			expected += cd.messages;
			announced++;
			break;
		}
		case DAT_DTO_COMPLETION_EVENT: {
			auto &d = e.event_data.dto_completion_event_data;
			if (d.status == DAT_DTO_SUCCESS) {
				auto now = Clock::now();
				if (!res.received++)
					res.first = now;
				res.last = now;
				res.bytes += d.transfered_length;
			} else if (d.status == DAT_DTO_ERR_FLUSHED) {
				res.flushed++;
			} else {
				throw std::runtime_error("receive completed with status " +
							 std::to_string(d.status));
			}
			/* the buffer goes back to the SRQ at once */
			repost(d.user_cookie.as_64);
			break;
		}
		case DAT_CONNECTION_EVENT_ESTABLISHED:
			break;
		default:
			if (e.event_number >= DAT_CONNECTION_EVENT_PEER_REJECTED &&
			    e.event_number <= DAT_CONNECTION_EVENT_UNREACHABLE) {
				auto it = eps.find(e.event_data.connect_event_data.ep_handle);
				if (it != eps.end() && !it->second) {
					it->second = true;
					gone++;
				}
			}
			break;
		}
	}

	const Options &o_;
	PostPath path_;
	Side s_;
	DAT_EVD_HANDLE evd_ = DAT_HANDLE_NULL;
	DAT_SRQ_HANDLE srq_ = DAT_HANDLE_NULL;
	DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
};

/* ---------------------------------------------------------------------- */
/* Message rate: the client                                               */

struct ClientResult {
	long sent = 0;
	Clock::time_point start, end;	/* first send, last send completion */
	double create_secs = 0;		/* dat_ep_create of every EP */
	double connect_secs = 0;	/* first dat_ep_connect to the last EP up */
};

/* Connection requests a client keeps in flight at once (thousands at once
 * would only queue in rdma_cm and run into its timeouts). */
constexpr int kConnectWindow = 64;

class Client {
public:
	explicit Client(const Options &o) : o_(o) {}

	ClientResult run(Progress &progress)
	{
		const int n = o_.eps;
		ClientResult res;

		/* every send comes from the same bytes: nothing to reuse-guard */
		c_.open(o_.ia_client, o_.size, DAT_MEM_PRIV_LOCAL_READ_FLAG);
		std::memset(c_.buf->data(), 0x5a, o_.size);
		ok(dat_evd_create(c_.ia, n * (o_.window + 4) + 16, DAT_HANDLE_NULL,
				  (DAT_EVD_FLAGS)(DAT_EVD_CONNECTION_FLAG |
						  DAT_EVD_DTO_FLAG), &evd_),
		   "dat_evd_create");

		DAT_EP_ATTR a{};
		a.service_type = DAT_SERVICE_TYPE_RC;
		a.max_message_size = std::max(o_.size, 64);
		a.qos = DAT_QOS_BEST_EFFORT;
		a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
		a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
		a.max_recv_dtos = 1;			/* receives nothing */
		a.max_request_dtos = o_.window;
		a.max_recv_iov = 1;
		a.max_request_iov = 1;
		a.srq_soft_hw = DAT_HW_DEFAULT;

		ep_.resize(n);
		msgs_.assign(n, 0);
		posted_.assign(n, 0);
		done_.assign(n, 0);
		for (int i = 0; i < n; i++)
			msgs_[i] = o_.iters;	/* per EP, as perftest's -n */
		auto t0 = Clock::now();
		for (int i = 0; i < n; i++) {
			ok(dat_ep_create(c_.ia, c_.pz, DAT_HANDLE_NULL, evd_, evd_, &a,
					 &ep_[i]), "dat_ep_create");
			index_[ep_[i]] = i;
		}
		auto t1 = Clock::now();
		wait_connected();
		res.create_secs = seconds(t1 - t0);
		res.connect_secs = seconds(Clock::now() - t1);

		res.start = Clock::now();
		for (int i = 0; i < n; i++)
			refill(i);
		long complete = 0;
		for (int i = 0; i < n; i++)
			complete += msgs_[i] == 0;
		Deadline dl(o_.timeout);
		while (complete < n) {
			DAT_EVENT e = await_event(evd_, dl, "send completions",
						  o_.event);
			dl.touch();
			do {
				complete += on_event(e);
			} while (complete < n && dat_evd_dequeue(evd_, &e) == DAT_SUCCESS);
			progress.update(res.sent = total_done(), o_.iters * n);
		}
		res.end = Clock::now();
		res.sent = total_done();
		disconnect();
		return res;
	}

private:
	void connect(int i)
	{
		struct sockaddr_in sin = {};
		ConnectData cd{ kMagic, (std::uint32_t)msgs_[i] };

		sin.sin_family = AF_INET;
		if (inet_pton(AF_INET, o_.addr.c_str(), &sin.sin_addr) != 1)
			throw std::runtime_error("bad server address " + o_.addr);
		ok(dat_ep_connect(ep_[i], (DAT_IA_ADDRESS_PTR)&sin, o_.port,
				  (DAT_TIMEOUT)o_.timeout * 1'000'000, sizeof(cd), &cd,
				  DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
		   "dat_ep_connect");
	}

	int index(DAT_EP_HANDLE h) const
	{
		auto it = index_.find(h);
		if (it == index_.end())
			throw std::runtime_error("event for an unknown endpoint");
		return it->second;
	}

	/* All EPs connected, at most kConnectWindow requests in flight; a
	 * refused connection is retried (the server may not listen yet when
	 * it runs in another process). */
	void wait_connected()
	{
		const int n = o_.eps;
		int up = 0, next = 0;

		while (next < n && next < kConnectWindow)
			connect(next++);
		Deadline dl(o_.timeout);
		std::vector<Clock::time_point> retry_at(n);
		std::vector<bool> waiting(n, false);

		while (up < n) {
			DAT_EVENT e;
			auto now = Clock::now();
			for (int i = 0; i < n; i++)
				if (waiting[i] && now >= retry_at[i]) {
					waiting[i] = false;
					ok(dat_ep_reset(ep_[i]), "dat_ep_reset");
					connect(i);
				}
			if (!wait_event(evd_, e)) {
				dl.check("connections to " + o_.addr);
				continue;
			}
			if (e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
				up++;
				dl.touch();
				if (next < n)
					connect(next++);
			} else if (e.event_number >= DAT_CONNECTION_EVENT_PEER_REJECTED &&
				   e.event_number <= DAT_CONNECTION_EVENT_UNREACHABLE) {
				int i = index(e.event_data.connect_event_data.ep_handle);
				waiting[i] = true;
				retry_at[i] = Clock::now() + std::chrono::milliseconds(100);
			}
		}
	}

	/* Post sends on EP i while its window has room. */
	void refill(int i)
	{
		while (posted_[i] < msgs_[i] && posted_[i] - done_[i] < o_.window) {
			long seq = posted_[i] + 1;
			bool signalled = seq % o_.signal == 0 || seq == msgs_[i];
			DAT_LMR_TRIPLET t = c_.seg(0, o_.size);
			DAT_RETURN r = dat_ep_post_send(
				ep_[i], 1, &t,
				cookie(((std::uint64_t)i << 32) | (std::uint64_t)seq),
				signalled ? DAT_COMPLETION_DEFAULT_FLAG :
					    DAT_COMPLETION_SUPPRESS_FLAG);
			ok(r, "dat_ep_post_send");
			posted_[i] = seq;
		}
	}

	/* One event; returns 1 when it completed an EP's last send. */
	int on_event(const DAT_EVENT &e)
	{
		if (e.event_number != DAT_DTO_COMPLETION_EVENT) {
			if (e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED)
				return 0;
			throw std::runtime_error("connection lost (event 0x" +
						 hex(e.event_number) + ")");
		}
		auto &d = e.event_data.dto_completion_event_data;
		if (d.status != DAT_DTO_SUCCESS)
			throw std::runtime_error("send completed with status " +
						 std::to_string(d.status));
		int i = (int)(d.user_cookie.as_64 >> 32);
		long seq = (long)(d.user_cookie.as_64 & 0xffffffffu);
		if (i < 0 || i >= o_.eps)
			throw std::runtime_error("bad send cookie");
		/* an EP's sends complete in order: this retires all before */
		done_[i] = std::max(done_[i], seq);
		refill(i);
		return done_[i] == msgs_[i] && seq == msgs_[i];
	}

	long total_done() const
	{
		long s = 0;
		for (long d : done_)
			s += d;
		return s;
	}

	static std::string hex(unsigned v)
	{
		char b[16];
		std::snprintf(b, sizeof(b), "%x", v);
		return b;
	}

	void disconnect()
	{
		int down = 0;
		Deadline dl(o_.timeout);

		for (DAT_EP_HANDLE h : ep_)
			ok(dat_ep_disconnect(h, DAT_CLOSE_GRACEFUL_FLAG),
			   "dat_ep_disconnect");
		while (down < o_.eps) {
			DAT_EVENT e = await_event(evd_, dl, "disconnections");
			if (e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED)
				down++;
		}
	}

	const Options &o_;
	Side c_;
	DAT_EVD_HANDLE evd_ = DAT_HANDLE_NULL;
	std::vector<DAT_EP_HANDLE> ep_;
	std::unordered_map<DAT_EP_HANDLE, int> index_;
	std::vector<long> msgs_, posted_, done_;
};

/* ---------------------------------------------------------------------- */
/* One message-rate run                                                   */

struct RateRow {
	PostPath path;
	long messages = 0;
	double secs = 0, cpu = 0;
	long flushed = 0, async_events = 0;
	DAT_SRQ_PARAM srq{};
	bool have_srq = false;
	double create_secs = -1, connect_secs = -1;	/* client side */
};

RateRow run_rate(Options &o, PostPath path)
{
	RateRow row;
	row.path = path;
	double cpu0 = cpu_seconds();

	if (o.role == Role::client) {
		Progress p(o.progress, "sent");
		ClientResult c = Client(o).run(p);
		row.messages = c.sent;
		row.secs = seconds(c.end - c.start);
		row.create_secs = c.create_secs;
		row.connect_secs = c.connect_secs;
	} else {
		Server srv(o, path);
		srv.setup();
		if (o.role == Role::server) {
			std::fprintf(stderr, "datperf: serving %d EPs on %s port %llu\n",
				     o.eps, o.ia_server.c_str(),
				     (unsigned long long)o.port);
			Progress p(o.progress, "received");
			ServerResult s = srv.run(p);
			row.messages = s.received;
			row.secs = seconds(s.last - s.first);
			row.flushed = s.flushed;
			row.async_events = s.async_events;
			row.srq = s.srq;
			row.have_srq = true;
		} else {
			ServerResult s;
			std::exception_ptr failed;
			o.addr = srv.address();
			Progress none(0, "");
			std::thread t([&] {
				try {
					s = srv.run(none);
				} catch (...) {
					failed = std::current_exception();
					g_abort = true;
				}
			});
			ClientResult c;
			try {
				Progress p(o.progress, "messages");
				c = Client(o).run(p);
			} catch (...) {
				g_abort = true;
				t.join();
				throw;
			}
			t.join();
			if (failed)
				std::rethrow_exception(failed);
			row.messages = s.received;
			row.secs = seconds(s.last - c.start);
			row.create_secs = c.create_secs;
			row.connect_secs = c.connect_secs;
			row.flushed = s.flushed;
			row.async_events = s.async_events;
			row.srq = s.srq;
			row.have_srq = true;
		}
	}
	row.cpu = cpu_seconds() - cpu0;
	return row;
}

/* ---------------------------------------------------------------------- */
/* Cost of one receive post                                               */
/*
 * A batch: create an SRQ of -r buffers, time -r single-receive posts into
 * it (nothing ever takes a buffer: no EP uses it, as no QP uses the verbs
 * SRQ), free it.  -n / -r batches make one repetition of a method; the
 * methods take turns (rotated order) within each of --reps repetitions.
 * Reported: ns per post of every repetition and the medians;
 * "dat_steady" leaves the first post of each batch (the first touch of the
 * ring) out.  The methods:
 *   dat      dat_srq_post_recv: libdat writes the SRQ's mmapped post ring
 *   ioctl    dat_kdat_srq_post_recv_ioctl: one KDAT_IOC_SRQ_POST each
 *   verbs    rdma-core's ibv_post_srq_recv on an ibv SRQ of the same depth
 *            on the IA's RDMA device (libibverbs.so.1, loaded if present)
 *   getppid  a bare system call, for scale
 */

inline std::uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (std::uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

double median(std::vector<double> v)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	std::size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* rdma-core, for the comparison: loaded at run time, so datperf itself
 * needs no libibverbs (without it the verbs column stays empty). */
class Verbs {
public:
	bool open(const std::string &dev, void *buf, std::size_t len)
	{
#if DATPERF_VERBS
		lib_ = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!lib_) {
			why_ = "libibverbs.so.1 not found";
			return false;
		}
		if (!sym(get_list_, "ibv_get_device_list") ||
		    !sym(free_list_, "ibv_free_device_list") ||
		    !sym(dev_name_, "ibv_get_device_name") ||
		    !sym(open_, "ibv_open_device") ||
		    !sym(close_, "ibv_close_device") ||
		    !sym(alloc_pd_, "ibv_alloc_pd") ||
		    !sym(dealloc_pd_, "ibv_dealloc_pd") ||
		    !sym(reg_mr_, "ibv_reg_mr") || !sym(dereg_mr_, "ibv_dereg_mr") ||
		    !sym(create_srq_, "ibv_create_srq") ||
		    !sym(destroy_srq_, "ibv_destroy_srq")) {
			why_ = "libibverbs.so.1 lacks a symbol";
			return false;
		}
		int n = 0;
		ibv_device **list = get_list_(&n);
		for (int i = 0; list && i < n && !ctx_; i++)
			if (dev == dev_name_(list[i]))
				ctx_ = open_(list[i]);
		if (list)
			free_list_(list);
		if (!ctx_) {
			why_ = "no verbs device " + dev;
			return false;
		}
		pd_ = alloc_pd_(ctx_);
		mr_ = pd_ ? reg_mr_(pd_, buf, len, IBV_ACCESS_LOCAL_WRITE) : nullptr;
		if (!mr_) {
			why_ = std::string("ibv_alloc_pd/ibv_reg_mr: ") + std::strerror(errno);
			return false;
		}
		buf_ = static_cast<char *>(buf);
		return true;
#else
		(void)dev;
		(void)buf;
		(void)len;
		why_ = "built without <infiniband/verbs.h>";
		return false;
#endif
	}

	const std::string &why() const { return why_; }

	/* One batch of @depth posts of @size bytes; ns, the first post in *first. */
	std::uint64_t batch(int depth, int size, std::uint64_t *first)
	{
#if DATPERF_VERBS
		ibv_srq_init_attr init = {};
		std::vector<ibv_sge> sge(depth);
		std::vector<ibv_recv_wr> wr(depth);
		ibv_recv_wr *bad;

		init.attr.max_wr = depth;
		init.attr.max_sge = 1;
		ibv_srq *srq = create_srq_(pd_, &init);
		if (!srq)
			throw std::runtime_error("ibv_create_srq(" + std::to_string(depth) +
						 "): " + std::strerror(errno));
		for (int i = 0; i < depth; i++) {
			sge[i].addr = (uintptr_t)buf_ + (std::size_t)i * size;
			sge[i].length = size;
			sge[i].lkey = mr_->lkey;
			wr[i].wr_id = i;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].next = nullptr;
		}
		std::uint64_t t0 = now_ns(), tf = t0;
		for (int i = 0; i < depth; i++) {
			int e = ibv_post_srq_recv(srq, &wr[i], &bad);
			if (e) {
				destroy_srq_(srq);
				throw std::runtime_error(std::string("ibv_post_srq_recv: ") +
							 std::strerror(e));
			}
			if (i == 0)
				tf = now_ns();
		}
		std::uint64_t t1 = now_ns();
		*first = tf - t0;
		if (destroy_srq_(srq))
			throw std::runtime_error("ibv_destroy_srq failed");
		return t1 - t0;
#else
		(void)depth;
		(void)size;
		*first = 0;
		return 0;
#endif
	}

	~Verbs()
	{
#if DATPERF_VERBS
		if (mr_)
			dereg_mr_(mr_);
		if (pd_)
			dealloc_pd_(pd_);
		if (ctx_)
			close_(ctx_);
		if (lib_)
			dlclose(lib_);
#endif
	}

private:
	std::string why_;
#if DATPERF_VERBS
	template <class F>
	bool sym(F &f, const char *name)
	{
		f = reinterpret_cast<F>(dlsym(lib_, name));
		return f != nullptr;
	}

	void *lib_ = nullptr;
	ibv_context *ctx_ = nullptr;
	ibv_pd *pd_ = nullptr;
	ibv_mr *mr_ = nullptr;
	char *buf_ = nullptr;
	ibv_device **(*get_list_)(int *) = nullptr;
	void (*free_list_)(ibv_device **) = nullptr;
	const char *(*dev_name_)(ibv_device *) = nullptr;
	ibv_context *(*open_)(ibv_device *) = nullptr;
	int (*close_)(ibv_context *) = nullptr;
	ibv_pd *(*alloc_pd_)(ibv_context *) = nullptr;
	int (*dealloc_pd_)(ibv_pd *) = nullptr;
	ibv_mr *(*reg_mr_)(ibv_pd *, void *, std::size_t, int) = nullptr;
	int (*dereg_mr_)(ibv_mr *) = nullptr;
	ibv_srq *(*create_srq_)(ibv_pd *, ibv_srq_init_attr *) = nullptr;
	int (*destroy_srq_)(ibv_srq *) = nullptr;
#endif
};

enum Method { M_DAT, M_IOCTL, M_VERBS, M_GETPPID, M_COUNT };

struct PostBench {
	int depth, posts, size;
	Side s;
	Verbs v;
	bool have_verbs = false;
	std::string device;		/* the IA's RDMA device */

	explicit PostBench(const Options &o)
		: depth(o.depth), posts((int)o.iters), size(o.size)
	{
		s.open(o.ia_server, (std::size_t)depth * size,
		       (DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_READ_FLAG |
					    DAT_MEM_PRIV_LOCAL_WRITE_FLAG));
		DAT_IA_ATTR a;
		ok(dat_ia_query(s.ia, nullptr, DAT_IA_FIELD_ALL, &a, 0, nullptr),
		   "dat_ia_query");
		device.assign(a.adapter_name, strnlen(a.adapter_name,
						      sizeof(a.adapter_name)));
		have_verbs = v.open(device, s.buf->data(), s.buf->len);
	}

	/* Time one batch of depth posts into a new, empty SRQ.  Returns ns. */
	std::uint64_t dat_batch(bool by_ioctl, std::uint64_t *first_ns)
	{
		DAT_SRQ_ATTR sa = { depth, 1, DAT_SRQ_LW_DEFAULT };
		DAT_SRQ_HANDLE srq;
		std::vector<DAT_LMR_TRIPLET> t(depth);

		for (int i = 0; i < depth; i++)
			t[i] = s.seg((std::size_t)i * size, size);
		ok(dat_srq_create(s.ia, s.pz, &sa, &srq), "dat_srq_create");
		std::uint64_t t0 = now_ns(), t1 = t0;
		for (int i = 0; i < depth; i++) {
			DAT_RETURN r = by_ioctl ?
				dat_kdat_srq_post_recv_ioctl(srq, 1, &t[i], cookie(i)) :
				dat_srq_post_recv(srq, 1, &t[i], cookie(i));
			if (r != DAT_SUCCESS) {
				dat_srq_free(srq);
				ok(r, by_ioctl ? "dat_kdat_srq_post_recv_ioctl" :
						 "dat_srq_post_recv");
			}
			if (i == 0)
				t1 = now_ns();
		}
		std::uint64_t t2 = now_ns();
		ok(dat_srq_free(srq), "dat_srq_free");
		*first_ns = t1 - t0;
		return t2 - t0;
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
			case M_DAT:
			case M_IOCTL:
				total += dat_batch(m == M_IOCTL, &f);
				break;
			case M_VERBS:
				total += v.batch(depth, size, &f);
				break;
			default:
				total += getppid_batch();
				break;
			}
			first += f;
		}
		if (steady)
			*steady = depth > 1 ? (double)(total - first) /
						      ((double)batches * (depth - 1)) : 0;
		if (first_mean)
			*first_mean = (double)first / batches;
		return (double)total / ((double)batches * depth);
	}
};

struct CostRun {
	double ns[M_COUNT] = {}, steady = 0;
};

struct CostResult {
	std::string device, verbs_why;
	bool have_verbs = false;
	int posts = 0;
	std::vector<CostRun> runs;
	CostRun med;
	double dat_per_verbs = 0, ioctl_per_dat = 0;	/* medians of per-run ratios */
};

CostResult run_post_cost(const Options &o)
{
	PostBench p(o);
	CostResult res;

	res.device = p.device;
	res.have_verbs = p.have_verbs;
	res.verbs_why = p.v.why();
	res.posts = std::max(p.posts / p.depth, 1) * p.depth;
	auto skip = [&](int m) { return m == M_VERBS && !p.have_verbs; };

	/* warm up every path once (page faults, first ioctls, caches) */
	int save = p.posts;
	p.posts = p.depth;
	for (int m = 0; m < M_COUNT; m++)
		if (!skip(m))
			p.run((Method)m, nullptr);
	p.posts = save;

	Progress prog(o.progress, "repetitions");
	std::vector<double> col[M_COUNT], steady, r_dv, r_id;
	for (int rep = 0; rep < o.reps; rep++) {
		CostRun r;

		for (int k = 0; k < M_COUNT; k++) {
			Method m = (Method)((rep + k) % M_COUNT);
			if (!skip(m))
				r.ns[m] = p.run(m, m == M_DAT ? &r.steady : nullptr);
		}
		for (int m = 0; m < M_COUNT; m++)
			col[m].push_back(r.ns[m]);
		steady.push_back(r.steady);
		if (p.have_verbs && r.ns[M_VERBS] > 0)
			r_dv.push_back(r.ns[M_DAT] / r.ns[M_VERBS]);
		if (r.ns[M_DAT] > 0)
			r_id.push_back(r.ns[M_IOCTL] / r.ns[M_DAT]);
		res.runs.push_back(r);
		prog.update(rep + 1, o.reps);
	}
	for (int m = 0; m < M_COUNT; m++)
		res.med.ns[m] = median(col[m]);
	res.med.steady = median(steady);
	res.dat_per_verbs = median(r_dv);
	res.ioctl_per_dat = median(r_id);
	return res;
}

/* ---------------------------------------------------------------------- */
/* Where the time of one post goes                                        */
/*
 * Each value is ns per call, the median of --reps means of -n calls:
 *   lookup      dat_srq_post_recv(srq, -1, ...): handle lookup, dispatch,
 *               refused at the first argument check (no triplet, no ring)
 *   +triplet    a triplet outside its LMR: lookup + the LMR-table check
 *   post        a whole post into an empty SRQ (ring write; batch of -r)
 *   post_steady the same without the first post of a batch
 *   first_post  that first post alone (first touch of the ring)
 *   verbs       ibv_post_srq_recv into an empty ibv SRQ (batch of -r),
 *               first_verbs its first post
 *   ioctl       dat_kdat_srq_post_recv_ioctl (batch of -r), first_ioctl
 *               its first post
 *   query       dat_srq_query (one KDAT_IOC_SRQ_QUERY, drains the ring)
 * and the primitives the library is built from, as this CPU runs them:
 * clock_gettime, an uncontended std::mutex lock+unlock, a
 * std::shared_mutex lock_shared+unlock_shared, an atomic fetch_add, a
 * seq_cst fence, a shared_ptr copy+destroy, an unordered_map find.
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

using Parts = std::vector<std::pair<std::string, double>>;

Parts run_post_parts(const Options &o)
{
	PostBench p(o);
	const int reps = o.reps, n = (int)o.iters;

	p.posts = p.depth;
	DAT_SRQ_ATTR sa = { p.depth, 1, DAT_SRQ_LW_DEFAULT };
	DAT_SRQ_HANDLE srq;
	ok(dat_srq_create(p.s.ia, p.s.pz, &sa, &srq), "dat_srq_create");
	DAT_LMR_TRIPLET good = p.s.seg(0, p.size), bad = good;
	bad.segment_length = p.s.buf->len + 1;
	volatile DAT_RETURN sink = 0;
	double lookup = ns_per_call(n, reps, [&](int i) {
		sink = dat_srq_post_recv(srq, -1, &good, cookie(i));
	});
	if (DAT_GET_TYPE(sink) != DAT_INVALID_PARAMETER)
		throw std::runtime_error("the lookup probe was not refused");
	double triplet = ns_per_call(n, reps, [&](int i) {
		sink = dat_srq_post_recv(srq, 1, &bad, cookie(i));
	});
	if (DAT_GET_TYPE(sink) != DAT_INVALID_PARAMETER)
		throw std::runtime_error("the triplet probe was not refused");
	ok(dat_srq_free(srq), "dat_srq_free");

	std::vector<double> post, steady, first, verbs, vfirst, ioctl, ifirst;
	for (int r = 0; r < reps; r++) {
		double st, fi;
		post.push_back(p.run(M_DAT, &st, &fi));
		steady.push_back(st);
		first.push_back(fi);
		if (p.have_verbs) {
			verbs.push_back(p.run(M_VERBS, &st, &fi));
			vfirst.push_back(fi);
		}
		ioctl.push_back(p.run(M_IOCTL, &st, &fi));
		ifirst.push_back(fi);
	}

	/* a query drains the post ring: one ioctl, like the kick */
	ok(dat_srq_create(p.s.ia, p.s.pz, &sa, &srq), "dat_srq_create");
	DAT_SRQ_PARAM qp;
	double query = ns_per_call(std::min(n, 512), reps, [&](int) {
		sink = dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &qp);
	});
	ok(sink, "dat_srq_query");
	ok(dat_srq_free(srq), "dat_srq_free");

	/*
	 * A spinning consumer's empty dequeue: from the second one in a row
	 * on, libdat polls the CQ in the kernel (KDAT_EVD_CTL_POLL), one
	 * system call each.
	 */
	DAT_EVD_HANDLE evd;
	DAT_EVENT ev;
	ok(dat_evd_create(p.s.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &evd),
	   "dat_evd_create");
	sink = dat_evd_dequeue(evd, &ev);
	double empty_dequeue = ns_per_call(std::min(n, 2048), reps, [&](int) {
		sink = dat_evd_dequeue(evd, &ev);
	});
	if (DAT_GET_TYPE(sink) != DAT_QUEUE_EMPTY)
		throw std::runtime_error("the dequeue probe found an event");
	ok(dat_evd_free(evd), "dat_evd_free");

	std::mutex m;
	std::shared_mutex sm;
	std::atomic<std::uint64_t> at{ 0 };
	auto sp = std::make_shared<int>(1);
	std::unordered_map<std::uint32_t, std::uint64_t> um;
	for (std::uint32_t i = 0; i < 64; i++)
		um[i * 7919] = i;
	volatile std::uint64_t vs = 0;
	Parts res = {
		{ "lookup", lookup }, { "+triplet", triplet },
		{ "post", median(post) }, { "post_steady", median(steady) },
		{ "first_post", median(first) },
	};
	if (p.have_verbs) {
		res.push_back({ "verbs", median(verbs) });
		res.push_back({ "first_verbs", median(vfirst) });
	}
	res.push_back({ "ioctl", median(ioctl) });
	res.push_back({ "first_ioctl", median(ifirst) });
	res.push_back({ "query", query });
	res.push_back({ "empty_dequeue", empty_dequeue });
	res.push_back({ "clock_gettime", ns_per_call(n, reps, [&](int) { vs = now_ns(); }) });
	res.push_back({ "mutex", ns_per_call(n, reps, [&](int) {
		m.lock();
		vs = vs + 1;
		m.unlock();
	}) });
	res.push_back({ "shared_mutex", ns_per_call(n, reps, [&](int) {
		sm.lock_shared();
		vs = vs + 1;
		sm.unlock_shared();
	}) });
	res.push_back({ "fetch_add", ns_per_call(n, reps, [&](int) { at.fetch_add(1); }) });
	res.push_back({ "fence", ns_per_call(n, reps, [&](int) {
		vs = vs + 1;
		std::atomic_thread_fence(std::memory_order_seq_cst);
	}) });
	res.push_back({ "shared_ptr_copy", ns_per_call(n, reps, [&](int) {
		std::shared_ptr<int> c = sp;
		vs = vs + *c;
	}) });
	res.push_back({ "unordered_map_find", ns_per_call(n, reps, [&](int i) {
		auto it = um.find((std::uint32_t)(i & 63) * 7919);
		vs = vs + it->second;
	}) });
	return res;
}

/* ---------------------------------------------------------------------- */
/* One connection: send cost, ping-pong latency, bidirectional rate       */
/*
 * A Conn is one end of one RC connection made with libdat: an IA, one EP
 * with its own receive queue of -r buffers and -t request slots, one EVD
 * for its receive and send completions and one for connection events.
 * With --srq the EP takes its receives from an SRQ of -r buffers instead
 * (dat_srq_post_recv writes the SRQ's post ring: no system call, where
 * dat_ep_post_recv is one ioctl), with its own receive EVD.
 * Receive cookies carry kRecvTag and the buffer slot; send cookies the
 * send's sequence number (an EP's sends complete in order, so a signalled
 * completion retires every send before it).
 */

constexpr std::uint64_t kRecvTag = 1ull << 63;

/* The IPv4 address of an open IA. */
std::string ia_address(DAT_IA_HANDLE ia, const std::string &name)
{
	DAT_IA_ATTR a;
	char txt[INET_ADDRSTRLEN];

	ok(dat_ia_query(ia, nullptr, DAT_IA_FIELD_IA_ADDRESS_PTR, &a, 0, nullptr),
	   "dat_ia_query");
	if (!a.ia_address_ptr || a.ia_address_ptr->sa_family != AF_INET ||
	    !inet_ntop(AF_INET, &((const struct sockaddr_in *)a.ia_address_ptr)->sin_addr,
		       txt, sizeof(txt)))
		throw std::runtime_error("IA " + name + " has no IPv4 address");
	return txt;
}

class Conn {
public:
	Conn(const Options &o, std::string ia, bool server)
		: o_(o), ia_name_(std::move(ia)), server_(server) {}

	void open()
	{
		/* depth receive slots, then the one send slot every send uses */
		s_.open(ia_name_, (std::size_t)(o_.depth + 1) * o_.size,
			(DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_READ_FLAG |
					     DAT_MEM_PRIV_LOCAL_WRITE_FLAG));
		std::memset(s_.buf->data() + (std::size_t)o_.depth * o_.size, 0x5a,
			    o_.size);
		ok(dat_evd_create(s_.ia, 16, DAT_HANDLE_NULL,
				  (DAT_EVD_FLAGS)(server_ ? DAT_EVD_CR_FLAG |
						  DAT_EVD_CONNECTION_FLAG :
						  DAT_EVD_CONNECTION_FLAG), &cevd_),
		   "dat_evd_create (connection)");
		ok(dat_evd_create(s_.ia, o_.depth + o_.window + 16, DAT_HANDLE_NULL,
				  DAT_EVD_DTO_FLAG, &devd_), "dat_evd_create (DTO)");
		revd_ = devd_;
		if (o_.srq) {
			ok(dat_evd_create(s_.ia, o_.depth + 16, DAT_HANDLE_NULL,
					  DAT_EVD_DTO_FLAG, &revd_),
			   "dat_evd_create (receive)");
			DAT_SRQ_ATTR sa = { o_.depth, 1, DAT_SRQ_LW_DEFAULT };
			ok(dat_srq_create(s_.ia, s_.pz, &sa, &srq_), "dat_srq_create");
			for (int i = 0; i < o_.depth; i++)
				post_recv(i);
		}
		if (!server_)
			new_ep();
	}

	std::string address() const { return ia_address(s_.ia, ia_name_); }

	void listen()
	{
		ok(dat_psp_create(s_.ia, o_.port, cevd_, DAT_PSP_CONSUMER_FLAG, &psp_),
		   "dat_psp_create");
	}

	/* Server: take the first connection request and accept it. */
	void accept()
	{
		Deadline dl(o_.timeout);

		for (;;) {
			DAT_EVENT e = await_event(cevd_, dl, "a connection request");
			if (e.event_number != DAT_CONNECTION_REQUEST_EVENT)
				continue;
			DAT_CR_HANDLE cr = e.event_data.cr_arrival_event_data.cr_handle;
			new_ep();
			ok(dat_cr_accept(cr, ep_, 0, nullptr), "dat_cr_accept");
			return;
		}
	}

	/* Client: ask for a connection to @addr (no wait). */
	void connect(const std::string &addr)
	{
		struct sockaddr_in sin = {};
		ConnectData cd{ kMagic, (std::uint32_t)o_.iters };

		addr_ = addr;
		sin.sin_family = AF_INET;
		if (inet_pton(AF_INET, addr.c_str(), &sin.sin_addr) != 1)
			throw std::runtime_error("bad server address " + addr);
		ok(dat_ep_connect(ep_, (DAT_IA_ADDRESS_PTR)&sin, o_.port,
				  (DAT_TIMEOUT)o_.timeout * 1'000'000, sizeof(cd), &cd,
				  DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
		   "dat_ep_connect");
	}

	/* Until the EP is connected; a client whose request was refused
	 * (no server listening yet) starts over on a fresh EP. */
	void wait_established()
	{
		Deadline dl(o_.timeout);

		for (;;) {
			DAT_EVENT e = await_event(cevd_, dl, "the connection");
			if (e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED)
				return;
			if (e.event_number >= DAT_CONNECTION_EVENT_PEER_REJECTED &&
			    e.event_number <= DAT_CONNECTION_EVENT_UNREACHABLE) {
				if (server_)
					throw std::runtime_error("connection lost while accepting");
				ok(dat_ep_free(ep_), "dat_ep_free");
				ep_ = DAT_HANDLE_NULL;
				std::this_thread::sleep_for(std::chrono::milliseconds(100));
				new_ep();
				connect(addr_);
			}
		}
	}

	void post_recv(std::uint64_t slot)
	{
		DAT_LMR_TRIPLET t = s_.seg(slot * o_.size, o_.size);
		if (srq_)
			ok(dat_srq_post_recv(srq_, 1, &t, cookie(kRecvTag | slot)),
			   "dat_srq_post_recv");
		else
			ok(dat_ep_post_recv(ep_, 1, &t, cookie(kRecvTag | slot),
					    DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	}

	/* The next DTO event: spin on the EVDs, or with @block sleep in
	 * dat_evd_wait (on the receive EVD in 1 ms slices when the send
	 * completions have their own EVD).  False: nothing for a while. */
	bool next(DAT_EVENT &e, bool block)
	{
		if (revd_ == devd_)
			return next_event(devd_, e, block);
		for (int i = 0; i < 100000; i++) {
			if (dat_evd_dequeue(devd_, &e) == DAT_SUCCESS ||
			    dat_evd_dequeue(revd_, &e) == DAT_SUCCESS)
				return true;
			if (block) {
				DAT_COUNT more;
				DAT_RETURN r = dat_evd_wait(revd_, 1000, 1, &e, &more);
				if (is(r, DAT_TIMEOUT_EXPIRED) || is(r, DAT_INTERRUPTED_CALL))
					return false;
				ok(r, "dat_evd_wait");
				return true;
			}
		}
		return false;
	}

	/* The next send; it asks for a completion event if @signalled. */
	void post_send(bool signalled)
	{
		DAT_LMR_TRIPLET t = s_.seg((std::size_t)o_.depth * o_.size, o_.size);
		ok(dat_ep_post_send(ep_, 1, &t, cookie(++sent_),
				    signalled ? DAT_COMPLETION_DEFAULT_FLAG :
						DAT_COMPLETION_SUPPRESS_FLAG),
		   "dat_ep_post_send");
	}

	long outstanding() const { return sent_ - retired_; }

	/* Account one DTO event: +1 for a receive (its buffer re-posted
	 * at once unless @repost is false), 0 for a send completion or an
	 * event of an EP given up on (a refused connection's flushes). */
	int on_dto(const DAT_EVENT &e, bool repost = true)
	{
		if (e.event_number != DAT_DTO_COMPLETION_EVENT)
			throw std::runtime_error("unexpected event 0x" +
						 std::to_string(e.event_number) +
						 " on the DTO EVD");
		auto &d = e.event_data.dto_completion_event_data;
		if (d.ep_handle != ep_)
			return 0;
		if (d.status != DAT_DTO_SUCCESS)
			throw std::runtime_error(std::string(d.user_cookie.as_64 & kRecvTag ?
							     "receive" : "send") +
						 " completed with status " +
						 std::to_string(d.status));
		if (d.user_cookie.as_64 & kRecvTag) {
			if (repost)
				post_recv(d.user_cookie.as_64 & ~kRecvTag);
			received_++;
			return 1;
		}
		retired_ = std::max<long>(retired_, (long)d.user_cookie.as_64);
		return 0;
	}

	/* Take every DTO event there is now; returns the receives. */
	int drain()
	{
		DAT_EVENT e;
		int n = 0;

		while (dat_evd_dequeue(devd_, &e) == DAT_SUCCESS)
			n += on_dto(e);
		while (revd_ != devd_ && dat_evd_dequeue(revd_, &e) == DAT_SUCCESS)
			n += on_dto(e);
		return n;
	}
	long received() const { return received_; }

	void disconnect()
	{
		ok(dat_ep_disconnect(ep_, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
		wait_disconnected();
	}

	void wait_disconnected()
	{
		Deadline dl(o_.timeout);

		for (;;) {
			DAT_EVENT e = await_event(cevd_, dl, "the disconnection");
			if (e.event_number >= DAT_CONNECTION_EVENT_PEER_REJECTED &&
			    e.event_number <= DAT_CONNECTION_EVENT_UNREACHABLE)
				return;
		}
	}

private:
	void new_ep()
	{
		DAT_EP_ATTR a{};
		a.service_type = DAT_SERVICE_TYPE_RC;
		a.max_message_size = std::max(o_.size, 64);
		a.qos = DAT_QOS_BEST_EFFORT;
		a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
		a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
		a.max_recv_dtos = srq_ ? 0 : o_.depth;	/* 0: the SRQ's */
		a.max_request_dtos = o_.window;
		a.max_recv_iov = 1;
		a.max_request_iov = 1;
		a.srq_soft_hw = DAT_HW_DEFAULT;
		sent_ = retired_ = 0;
		if (srq_) {	/* its buffers outlive a refused EP */
			ok(dat_ep_create_with_srq(s_.ia, s_.pz, revd_, devd_, cevd_, srq_,
						  &a, &ep_), "dat_ep_create_with_srq");
			return;
		}
		ok(dat_ep_create(s_.ia, s_.pz, devd_, devd_, cevd_, &a, &ep_),
		   "dat_ep_create");
		for (int i = 0; i < o_.depth; i++)
			post_recv(i);
	}

	const Options &o_;
	std::string ia_name_, addr_;
	bool server_;
	Side s_;
	DAT_EVD_HANDLE cevd_ = DAT_HANDLE_NULL, devd_ = DAT_HANDLE_NULL;
	DAT_EVD_HANDLE revd_ = DAT_HANDLE_NULL;	/* devd_ unless --srq */
	DAT_SRQ_HANDLE srq_ = DAT_HANDLE_NULL;
	DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
	DAT_EP_HANDLE ep_ = DAT_HANDLE_NULL;
	long sent_ = 0, retired_ = 0, received_ = 0;
};

/* rdma-core's side of the send cost: an RC QP pair on the same two rxe
 * devices, connected with librdmacm (both loaded at run time, like
 * Verbs). */
class VerbsRc {
public:
	/* Connect a client on @cli_addr's device to a server on @srv_addr's. */
	bool open(const std::string &srv_addr, const std::string &cli_addr, int port,
		  int size, int depth, int window)
	{
#if DATPERF_RDMACM
		size_ = size;
		depth_ = depth;
		window_ = window;
		verbs_ = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
		cm_ = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!verbs_ || !cm_) {
			why_ = "libibverbs.so.1 or librdmacm.so.1 not found";
			return false;
		}
		if (!sym(verbs_, alloc_pd_, "ibv_alloc_pd") ||
		    !sym(verbs_, dealloc_pd_, "ibv_dealloc_pd") ||
		    !sym(verbs_, reg_mr_, "ibv_reg_mr") ||
		    !sym(verbs_, dereg_mr_, "ibv_dereg_mr") ||
		    !sym(verbs_, create_cq_, "ibv_create_cq") ||
		    !sym(verbs_, destroy_cq_, "ibv_destroy_cq") ||
		    !sym(cm_, create_channel_, "rdma_create_event_channel") ||
		    !sym(cm_, destroy_channel_, "rdma_destroy_event_channel") ||
		    !sym(cm_, create_id_, "rdma_create_id") ||
		    !sym(cm_, destroy_id_, "rdma_destroy_id") ||
		    !sym(cm_, bind_addr_, "rdma_bind_addr") ||
		    !sym(cm_, listen_, "rdma_listen") ||
		    !sym(cm_, resolve_addr_, "rdma_resolve_addr") ||
		    !sym(cm_, resolve_route_, "rdma_resolve_route") ||
		    !sym(cm_, get_event_, "rdma_get_cm_event") ||
		    !sym(cm_, ack_event_, "rdma_ack_cm_event") ||
		    !sym(cm_, connect_, "rdma_connect") ||
		    !sym(cm_, accept_, "rdma_accept") ||
		    !sym(cm_, create_qp_, "rdma_create_qp") ||
		    !sym(cm_, destroy_qp_, "rdma_destroy_qp")) {
			why_ = "libibverbs/librdmacm lacks a symbol";
			return false;
		}
		try {
			connect(srv_addr, cli_addr, port);
		} catch (const std::exception &x) {
			why_ = x.what();
			return false;
		}
		return true;
#else
		(void)srv_addr; (void)cli_addr; (void)port;
		(void)size; (void)depth; (void)window;
		why_ = "built without <infiniband/verbs.h> and <rdma/rdma_cma.h>";
		return false;
#endif
	}

	const std::string &why() const { return why_; }

	/* ns per ibv_post_send over @n sends in batches of @q, the last of
	 * each batch signalled; completions reaped (and the server's
	 * receives re-posted) between batches, untimed. */
	double sends(long n, int q)
	{
#if DATPERF_RDMACM
		std::uint64_t ns = 0;
		long posted = 0;
		ibv_sge sge = { (uintptr_t)cli_.buf->data(), (std::uint32_t)size_,
				cli_.mr->lkey };
		ibv_send_wr wr{}, *bad;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;

		while (posted < n) {
			int b = (int)std::min<long>(q, n - posted);
			reap(false);
			while (sent_ - retired_ + b > window_)
				reap(true);
			std::uint64_t t0 = now_ns();
			for (int k = 0; k < b; k++) {
				wr.wr_id = (std::uint64_t)++sent_;
				wr.send_flags = k == b - 1 ? IBV_SEND_SIGNALED : 0;
				int e = ibv_post_send(cli_.id->qp, &wr, &bad);
				if (e)
					throw std::runtime_error(std::string("ibv_post_send: ") +
								 std::strerror(e));
			}
			ns += now_ns() - t0;
			posted += b;
		}
		while (sent_ != retired_)
			reap(true);
		return (double)ns / (double)n;
#else
		(void)n; (void)q;
		return 0;
#endif
	}

	~VerbsRc()
	{
#if DATPERF_RDMACM
		for (End *e : { &cli_, &srv_ }) {
			if (e->id && e->id->qp)
				destroy_qp_(e->id);
			if (e->id)
				destroy_id_(e->id);
			if (e->mr)
				dereg_mr_(e->mr);
			if (e->cq)
				destroy_cq_(e->cq);
			if (e->pd)
				dealloc_pd_(e->pd);
		}
		if (lid_)
			destroy_id_(lid_);
		if (ch_)
			destroy_channel_(ch_);
		if (cm_)
			dlclose(cm_);
		if (verbs_)
			dlclose(verbs_);
#endif
	}

private:
	std::string why_;
#if DATPERF_RDMACM
	struct End {
		rdma_cm_id *id = nullptr;
		ibv_pd *pd = nullptr;
		ibv_cq *cq = nullptr;
		ibv_mr *mr = nullptr;
		std::unique_ptr<Buffer> buf;
	};

	template <class F>
	static bool sym(void *lib, F &f, const char *name)
	{
		f = reinterpret_cast<F>(dlsym(lib, name));
		return f != nullptr;
	}

	static sockaddr_in sin(const std::string &a, int port)
	{
		sockaddr_in s = {};
		s.sin_family = AF_INET;
		s.sin_port = htons((std::uint16_t)port);
		if (inet_pton(AF_INET, a.c_str(), &s.sin_addr) != 1)
			throw std::runtime_error("bad address " + a);
		return s;
	}

	void fail(const char *what)
	{
		throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
	}

	/* PD, CQ, MR and QP of one end; the server's receives posted. */
	void setup(End &e, rdma_cm_id *id, bool server)
	{
		e.id = id;
		e.buf = std::make_unique<Buffer>((std::size_t)(depth_ + 1) * size_);
		std::memset(e.buf->data(), 0x5a, size_);
		if (!(e.pd = alloc_pd_(id->verbs)))
			fail("ibv_alloc_pd");
		if (!(e.cq = create_cq_(id->verbs, depth_ + window_ + 16, nullptr,
					nullptr, 0)))
			fail("ibv_create_cq");
		if (!(e.mr = reg_mr_(e.pd, e.buf->data(), e.buf->len,
				     IBV_ACCESS_LOCAL_WRITE)))
			fail("ibv_reg_mr");
		ibv_qp_init_attr qa = {};
		qa.send_cq = qa.recv_cq = e.cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = window_;
		qa.cap.max_recv_wr = server ? depth_ : 1;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		qa.cap.max_inline_data = 0;	/* DAT has no inline sends */
		qa.sq_sig_all = 0;
		if (create_qp_(id, e.pd, &qa))
			fail("rdma_create_qp");
		if (server)
			for (int i = 0; i < depth_; i++)
				post_recv(i);
	}

	void post_recv(std::uint64_t slot)
	{
		ibv_sge sge = { (uintptr_t)srv_.buf->data() + slot * size_,
				(std::uint32_t)size_, srv_.mr->lkey };
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = slot;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		int e = ibv_post_recv(srv_.id->qp, &wr, &bad);
		if (e)
			throw std::runtime_error(std::string("ibv_post_recv: ") + std::strerror(e));
	}

	void connect(const std::string &srv_addr, const std::string &cli_addr, int port)
	{
		if (!(ch_ = create_channel_()))
			fail("rdma_create_event_channel");
		sockaddr_in s = sin(srv_addr, port), c = sin(cli_addr, 0);
		if (create_id_(ch_, &lid_, nullptr, RDMA_PS_TCP) ||
		    bind_addr_(lid_, (sockaddr *)&s) || listen_(lid_, 4))
			fail("rdma_cm listen");
		rdma_cm_id *cid;
		if (create_id_(ch_, &cid, nullptr, RDMA_PS_TCP))
			fail("rdma_create_id");
		cli_.id = cid;
		if (resolve_addr_(cid, (sockaddr *)&c, (sockaddr *)&s, 2000))
			fail("rdma_resolve_addr");
		rdma_conn_param cp = {};
		cp.responder_resources = cp.initiator_depth = 1;
		cp.retry_count = 7;
		cp.rnr_retry_count = 7;
		bool cli_up = false, srv_up = false;
		while (!cli_up || !srv_up) {
			rdma_cm_event *ev;
			if (get_event_(ch_, &ev))
				fail("rdma_get_cm_event");
			rdma_cm_event_type type = ev->event;
			rdma_cm_id *id = ev->id;
			int st = ev->status;
			int r = 0;
			switch (type) {
			case RDMA_CM_EVENT_ADDR_RESOLVED:
				r = resolve_route_(id, 2000);
				break;
			case RDMA_CM_EVENT_ROUTE_RESOLVED:
				setup(cli_, id, false);
				r = connect_(id, &cp);
				break;
			case RDMA_CM_EVENT_CONNECT_REQUEST:
				setup(srv_, id, true);
				r = accept_(id, &cp);
				break;
			case RDMA_CM_EVENT_ESTABLISHED:
				(id == cli_.id ? cli_up : srv_up) = true;
				break;
			default:
				ack_event_(ev);
				throw std::runtime_error("rdma_cm event " + std::to_string(type) +
							 " (status " + std::to_string(st) + ")");
			}
			ack_event_(ev);
			if (r)
				fail("rdma_cm");
		}
	}

	/* Take completions: the client's (retire its sends) and the
	 * server's (re-post each receive); with @spin, until there was one. */
	void reap(bool spin)
	{
		ibv_wc wc[16];
		int got = 0;

		do {
			int n = ibv_poll_cq(cli_.cq, 16, wc);
			for (int i = 0; i < n; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					throw std::runtime_error("verbs send completed with status " +
								 std::to_string(wc[i].status));
				retired_ = std::max<long>(retired_, (long)wc[i].wr_id);
			}
			int m = ibv_poll_cq(srv_.cq, 16, wc);
			for (int i = 0; i < m; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					throw std::runtime_error("verbs receive completed with status " +
								 std::to_string(wc[i].status));
				post_recv(wc[i].wr_id);
			}
			got = n + m;
			check_abort();
		} while (spin && !got);
	}

	int size_ = 0, depth_ = 0, window_ = 0;
	long sent_ = 0, retired_ = 0;
	void *verbs_ = nullptr, *cm_ = nullptr;
	rdma_event_channel *ch_ = nullptr;
	rdma_cm_id *lid_ = nullptr;
	End cli_, srv_;
	decltype(&ibv_alloc_pd) alloc_pd_ = nullptr;
	decltype(&ibv_dealloc_pd) dealloc_pd_ = nullptr;
	decltype(&ibv_reg_mr) reg_mr_ = nullptr;
	decltype(&ibv_dereg_mr) dereg_mr_ = nullptr;
	decltype(&ibv_create_cq) create_cq_ = nullptr;
	decltype(&ibv_destroy_cq) destroy_cq_ = nullptr;
	decltype(&rdma_create_event_channel) create_channel_ = nullptr;
	decltype(&rdma_destroy_event_channel) destroy_channel_ = nullptr;
	decltype(&rdma_create_id) create_id_ = nullptr;
	decltype(&rdma_destroy_id) destroy_id_ = nullptr;
	decltype(&rdma_bind_addr) bind_addr_ = nullptr;
	decltype(&rdma_listen) listen_ = nullptr;
	decltype(&rdma_resolve_addr) resolve_addr_ = nullptr;
	decltype(&rdma_resolve_route) resolve_route_ = nullptr;
	decltype(&rdma_get_cm_event) get_event_ = nullptr;
	decltype(&rdma_ack_cm_event) ack_event_ = nullptr;
	decltype(&rdma_connect) connect_ = nullptr;
	decltype(&rdma_accept) accept_ = nullptr;
	decltype(&rdma_create_qp) create_qp_ = nullptr;
	decltype(&rdma_destroy_qp) destroy_qp_ = nullptr;
#endif
};

/*
 * Send cost: ns per dat_ep_post_send of -s bytes on a connected EP (rxe1
 * client -> rxe0 server, both in this process), posted in batches of -Q
 * whose last send asks for a completion (the others
 * DAT_COMPLETION_SUPPRESS_FLAG); between batches, untimed, the client's
 * completions are reaped so that at most -t sends are outstanding and the
 * server's receives are re-posted.  The same against ibv_post_send on an
 * rdma-core RC QP pair on the same devices, and a bare getppid().  The
 * methods take turns (rotated) in each of --reps repetitions of -n sends.
 * KDAT_EP_POST in the environment is libdat's business (it picks the
 * send path); it is reported as given.
 */
enum SendMethod { S_DAT, S_VERBS, S_GETPPID, S_COUNT };
const char *const kSendMethod[S_COUNT] = { "dat", "verbs", "getppid" };

struct SendCostResult {
	std::string ep_post;		/* $KDAT_EP_POST, "" if unset */
	std::string verbs_why;
	bool have_verbs = false;
	std::vector<std::array<double, S_COUNT>> runs;
	std::array<double, S_COUNT> med{};
	double dat_per_verbs = 0, dat_per_getppid = 0;
};

double dat_sends(Conn &cli, Conn &srv, long n, int q, int window)
{
	std::uint64_t ns = 0;
	long posted = 0;

	while (posted < n) {
		int b = (int)std::min<long>(q, n - posted);
		srv.drain();
		cli.drain();
		while (cli.outstanding() + b > window) {
			srv.drain();
			cli.drain();
			check_abort();
		}
		std::uint64_t t0 = now_ns();
		for (int k = 0; k < b; k++)
			cli.post_send(k == b - 1);
		ns += now_ns() - t0;
		posted += b;
	}
	while (cli.outstanding()) {
		srv.drain();
		cli.drain();
	}
	return (double)ns / (double)n;
}

SendCostResult run_send_cost(const Options &o)
{
	SendCostResult res;
	const char *env = std::getenv("KDAT_EP_POST");
	res.ep_post = env ? env : "";

	Conn srv(o, o.ia_server, true), cli(o, o.ia_client, false);
	srv.open();
	cli.open();
	srv.listen();
	std::string saddr = srv.address(), caddr = cli.address();
	cli.connect(saddr);
	srv.accept();
	srv.wait_established();
	cli.wait_established();

	VerbsRc v;
	res.have_verbs = v.open(saddr, caddr, (int)o.port + 1, o.size, o.depth, o.window);
	res.verbs_why = v.why();

	auto run = [&](int m, long n) {
		switch (m) {
		case S_DAT:
			return dat_sends(cli, srv, n, o.signal, o.window);
		case S_VERBS:
			return v.sends(n, o.signal);
		default: {
			std::uint64_t t0 = now_ns();
			for (long i = 0; i < n; i++)
				syscall(SYS_getppid);
			return (double)(now_ns() - t0) / (double)n;
		}
		}
	};
	auto skip = [&](int m) { return m == S_VERBS && !res.have_verbs; };

	for (int m = 0; m < S_COUNT; m++)	/* warm-up */
		if (!skip(m))
			run(m, std::min<long>(o.iters, 1024));
	Progress prog(o.progress, "repetitions");
	std::vector<double> col[S_COUNT], r_dv, r_dg;
	for (int rep = 0; rep < o.reps; rep++) {
		std::array<double, S_COUNT> r{};
		for (int k = 0; k < S_COUNT; k++) {
			int m = (rep + k) % S_COUNT;
			if (!skip(m))
				r[m] = run(m, o.iters);
		}
		for (int m = 0; m < S_COUNT; m++)
			col[m].push_back(r[m]);
		if (res.have_verbs && r[S_VERBS] > 0)
			r_dv.push_back(r[S_DAT] / r[S_VERBS]);
		if (r[S_GETPPID] > 0)
			r_dg.push_back(r[S_DAT] / r[S_GETPPID]);
		res.runs.push_back(r);
		prog.update(rep + 1, o.reps);
	}
	for (int m = 0; m < S_COUNT; m++)
		res.med[m] = median(col[m]);
	res.dat_per_verbs = median(r_dv);
	res.dat_per_getppid = median(r_dg);
	cli.disconnect();
	return res;
}

/*
 * Ping-pong latency (--lat) between two processes, as ib_send_lat: the
 * client sends -s bytes and waits for the server's reply of -s bytes, -n
 * times; each round trip is timed and reported halved (perftest's
 * t_typical is the median of RTT / 2).  Both sides busy-poll their one DTO
 * EVD (--event: sleep in dat_evd_wait); sends ask for a completion every
 * -Q-th time.
 *
 * Bidirectional rate (--bidir), as ib_send_bw -b: both sides send -n
 * messages with up to -t in flight and receive the other's -n; each side
 * reports its own sends per second over its run, and the two add up to
 * the figure perftest prints.  The server then sends one more message
 * so the client knows every send of the server has completed before it
 * disconnects.
 */
struct ExchangeResult {
	long messages = 0, received = 0;
	double secs = 0, cpu = 0;
	std::vector<double> rtt_us;	/* --lat, client: each round trip */
};

/* Wait for DTO events until @done says stop; @on gets each event. */
template <class Done>
void pump(Conn &c, const Options &o, Done &&done, const char *what)
{
	Deadline dl(o.timeout);

	while (!done()) {
		DAT_EVENT e;
		if (!c.next(e, o.event)) {
			dl.check(what);
			continue;
		}
		dl.touch();
		c.on_dto(e);
	}
}

ExchangeResult run_exchange(const Options &o)
{
	bool server = o.role == Role::server;
	Conn c(o, server ? o.ia_server : o.ia_client, server);
	ExchangeResult res;
	const long n = o.iters;

	c.open();
	if (server) {
		c.listen();
		std::fprintf(stderr, "datperf: serving 1 EP on %s port %llu\n",
			     o.ia_server.c_str(), (unsigned long long)o.port);
		c.accept();
	} else {
		c.connect(o.addr);
	}
	c.wait_established();
	double cpu0 = cpu_seconds();
	auto room = [&] {	/* a send slot, waiting for completions */
		pump(c, o, [&] { return c.outstanding() < o.window; }, "send completions");
	};
	auto signalled = [&](long i) { return (i + 1) % o.signal == 0 || i + 1 == n; };

	if (o.mode == Mode::lat) {
		res.rtt_us.reserve(n);
		auto t0 = Clock::now();
		for (long i = 0; i < n; i++) {
			if (server) {
				pump(c, o, [&] { return c.received() > i; }, "a ping");
				room();
				c.post_send(signalled(i));
			} else {
				auto a = Clock::now();
				room();
				c.post_send(signalled(i));
				pump(c, o, [&] { return c.received() > i; }, "a reply");
				res.rtt_us.push_back(
					std::chrono::duration<double, std::micro>(Clock::now() - a).count());
			}
		}
		res.secs = seconds(Clock::now() - t0);
	} else {
		auto t0 = Clock::now();
		long posted = 0;
		Deadline dl(o.timeout);
		while (c.outstanding() || posted < n || c.received() < n) {
			while (posted < n && c.outstanding() < o.window)
				c.post_send(signalled(posted++));
			DAT_EVENT e;
			if (!c.next(e, o.event &&
				    (posted == n || c.outstanding() >= o.window))) {
				dl.check("messages");
				continue;
			}
			dl.touch();
			c.on_dto(e);
			c.drain();
		}
		res.secs = seconds(Clock::now() - t0);
	}
	res.messages = n;
	res.received = c.received();
	res.cpu = cpu_seconds() - cpu0;
	/* the last word: the server's one more message */
	if (server) {
		if (o.mode == Mode::bidir) {
			c.post_send(true);
			pump(c, o, [&] { return c.outstanding() == 0; }, "the last send");
		}
		pump(c, o, [&] { return c.outstanding() == 0; }, "send completions");
		c.wait_disconnected();
	} else {
		if (o.mode == Mode::bidir)
			pump(c, o, [&] { return c.received() > n; }, "the server's last message");
		pump(c, o, [&] { return c.outstanding() == 0; }, "send completions");
		c.disconnect();
	}
	return res;
}

/* ---------------------------------------------------------------------- */
/* Output                                                                 */

using dattools::json_string;

const char *role_name(Role r)
{
	return r == Role::loopback ? "loopback" : r == Role::server ? "server" : "client";
}

const char *mode_name(Mode m)
{
	switch (m) {
	case Mode::rate: return "msgrate";
	case Mode::post_cost: return "post_cost";
	case Mode::post_parts: return "post_parts";
	case Mode::send_cost: return "send_cost";
	case Mode::lat: return "lat";
	case Mode::bidir: return "bidir";
	}
	return "?";
}

/* The start of every JSON object datperf prints: what ran, where. */
std::string json_head(const Options &o)
{
	char b[512];

	std::snprintf(b, sizeof(b), "{\"tool\":\"datperf\",\"version\":%s,\"test\":\"%s\","
		      "\"role\":\"%s\",", json_string(kVersion).c_str(),
		      mode_name(o.mode), role_name(o.role));
	std::string s = b;
	bool two = o.mode == Mode::rate || o.mode == Mode::lat || o.mode == Mode::bidir;
	if (!two || o.role != Role::client)
		s += "\"server_ia\":" + json_string(o.ia_server) + ",";
	if (two && o.role == Role::client)
		s += "\"host\":" + json_string(o.host) + ",";
	if (two && o.role != Role::server)
		s += "\"client_ia\":" + json_string(o.ia_client) + ",\"addr\":" +
		     json_string(o.addr) + ",";
	if (o.mode == Mode::send_cost)
		s += "\"client_ia\":" + json_string(o.ia_client) + ",";
	std::snprintf(b, sizeof(b), "\"port\":%llu,\"eps\":%d,\"depth\":%d,"
		      "\"size\":%d,\"iters\":%ld,\"window\":%d,\"signal\":%d,\"reps\":%d",
		      (unsigned long long)o.port, o.eps, o.depth, o.size, o.iters,
		      o.window, o.signal, o.reps);
	return s + b;
}

void print_rate(const Options &o, const std::vector<RateRow> &rows)
{
	if (o.json) {
		std::printf("%s,\"event\":%s,\"results\":[", json_head(o).c_str(),
			    o.event ? "true" : "false");
		for (std::size_t i = 0; i < rows.size(); i++) {
			const RateRow &r = rows[i];
			double rate = r.secs > 0 ? r.messages / r.secs : 0;
			std::printf("%s{\"post\":\"%s\",\"messages\":%ld,\"seconds\":%.6f,"
				    "\"msg_per_sec\":%.1f,\"mbytes_per_sec\":%.3f,"
				    "\"cpu_seconds\":%.3f,\"flushed\":%ld,\"async_events\":%ld",
				    i ? "," : "", path_name(r.path), r.messages, r.secs,
				    rate, rate * o.size / 1e6, r.cpu, r.flushed,
				    r.async_events);
			if (r.have_srq)
				std::printf(",\"srq_available\":%d,\"srq_outstanding\":%d",
					    r.srq.available_dto_count,
					    r.srq.outstanding_dto_count);
			if (r.connect_secs >= 0)
				std::printf(",\"ep_create_seconds\":%.6f,\"connect_seconds\":%.6f",
					    r.create_secs, r.connect_secs);
			std::printf("}");
		}
		std::printf("]}\n");
		return;
	}
	std::printf("datperf: message rate through one SRQ");
	if (o.role != Role::client)
		std::printf(" on %s", o.ia_server.c_str());
	if (o.role != Role::server)
		std::printf(", clients on %s -> %s", o.ia_client.c_str(), o.addr.c_str());
	std::printf(" (%s, %s)\n", o.role == Role::loopback ? "one process" :
		    o.role == Role::server ? "server side" : "client side",
		    o.event ? "dat_evd_wait" : "polling");
	std::printf("  %-6s %5s %6s %6s %6s %6s %9s %9s %11s %8s %9s\n", "post",
		    "eps", "depth", "size", "window", "signal", "messages", "seconds",
		    "msg/s", "MB/s", "cpu us/msg");
	for (const RateRow &r : rows) {
		double rate = r.secs > 0 ? r.messages / r.secs : 0;
		std::printf("  %-6s %5d %6d %6d %6d %6d %9ld %9.3f %11.0f %8.2f %9.1f\n",
			    o.role == Role::client ? "-" : path_name(r.path), o.eps,
			    o.depth, o.size, o.window, o.signal, r.messages, r.secs,
			    rate, rate * o.size / 1e6,
			    r.messages ? r.cpu * 1e6 / r.messages : 0.0);
	}
	for (const RateRow &r : rows)
		if (r.connect_secs >= 0)
			std::printf("  client: %d EPs created in %.3f s, connected in %.3f s\n",
				    o.eps, r.create_secs, r.connect_secs);
	for (const RateRow &r : rows)
		if (r.have_srq)
			std::printf("  SRQ after the %s run: %d available, %d outstanding of %d;"
				    " %ld flushed, %ld async events\n",
				    path_name(r.path), r.srq.available_dto_count,
				    r.srq.outstanding_dto_count, r.srq.max_recv_dtos,
				    r.flushed, r.async_events);
}

const char *const kMethod[M_COUNT] = { "dat", "ioctl", "verbs", "getppid" };

/* ns with one decimal; ratios (@places 3) with three */
std::string json_num(bool have, double v, int places = 1)
{
	char b[32];

	if (!have)
		return "null";
	std::snprintf(b, sizeof(b), "%.*f", places, v);
	return b;
}

std::string cost_json(const CostRun &r, bool verbs)
{
	std::string s = "{";

	for (int m = 0; m < M_COUNT; m++)
		s += std::string(m ? "," : "") + "\"" + kMethod[m] + "\":" +
		     json_num(m != M_VERBS || verbs, r.ns[m]);
	return s + ",\"dat_steady\":" + json_num(true, r.steady) + "}";
}

void print_cost(const Options &o, const CostResult &c)
{
	if (o.json) {
		std::printf("%s,\"device\":%s,\"posts\":%d,\"verbs\":%s,\"runs\":[",
			    json_head(o).c_str(), json_string(c.device).c_str(),
			    c.posts, c.have_verbs ? "true" : "false");
		for (std::size_t i = 0; i < c.runs.size(); i++)
			std::printf("%s%s", i ? "," : "",
				    cost_json(c.runs[i], c.have_verbs).c_str());
		std::printf("],\"median\":%s,\"dat_per_verbs\":%s,\"ioctl_per_dat\":%s}\n",
			    cost_json(c.med, c.have_verbs).c_str(),
			    json_num(c.have_verbs, c.dat_per_verbs, 3).c_str(),
			    json_num(true, c.ioctl_per_dat, 3).c_str());
		return;
	}
	std::printf("datperf: cost of one receive post into an empty SRQ of %d buffers "
		    "on %s (%s), ns per post\n", o.depth, o.ia_server.c_str(),
		    c.device.c_str());
	std::printf("  %-7s %9s %9s %9s %18s %9s\n", "rep", "dat ring", "(steady)",
		    "ioctl", "ibv_post_srq_recv", "getppid");
	auto line = [&](const char *what, const CostRun &r) {
		std::printf("  %-7s %9.0f %9.0f %9.0f %18s %9.0f\n", what, r.ns[M_DAT],
			    r.steady, r.ns[M_IOCTL],
			    c.have_verbs ? std::to_string((long)(r.ns[M_VERBS] + 0.5)).c_str() : "-",
			    r.ns[M_GETPPID]);
	};
	for (std::size_t i = 0; i < c.runs.size(); i++)
		line(std::to_string(i + 1).c_str(), c.runs[i]);
	line("median", c.med);
	if (c.have_verbs)
		std::printf("  dat/verbs %.2f, ", c.dat_per_verbs);
	else
		std::printf("  (no verbs comparison: %s) ", c.verbs_why.c_str());
	std::printf("ioctl/dat %.2f  (medians of the per-repetition ratios; %d posts "
		    "per method and repetition)\n", c.ioctl_per_dat, c.posts);
}

void print_parts(const Options &o, const Parts &parts)
{
	if (o.json) {
		std::printf("%s,\"results\":{", json_head(o).c_str());
		for (std::size_t i = 0; i < parts.size(); i++)
			std::printf("%s%s:%.1f", i ? "," : "",
				    json_string(parts[i].first).c_str(), parts[i].second);
		std::printf("}}\n");
		return;
	}
	std::printf("datperf: parts: ns per call (median of %d x %ld) on %s:", o.reps,
		    o.iters, o.ia_server.c_str());
	for (const auto &[name, ns] : parts)
		std::printf(" %s=%.*f", name.c_str(), ns < 100 ? 1 : 0, ns);
	std::printf("\n");
}

void print_send_cost(const Options &o, const SendCostResult &c)
{
	auto row = [&](const std::array<double, S_COUNT> &r) {
		std::string s = "{";
		for (int m = 0; m < S_COUNT; m++)
			s += std::string(m ? "," : "") + "\"" + kSendMethod[m] + "\":" +
			     json_num(m != S_VERBS || c.have_verbs, r[m]);
		return s + "}";
	};
	if (o.json) {
		std::printf("%s,\"ep_post\":%s,\"verbs\":%s", json_head(o).c_str(),
			    json_string(c.ep_post).c_str(), c.have_verbs ? "true" : "false");
		if (!c.have_verbs)
			std::printf(",\"verbs_why\":%s", json_string(c.verbs_why).c_str());
		std::printf(",\"runs\":[");
		for (std::size_t i = 0; i < c.runs.size(); i++)
			std::printf("%s%s", i ? "," : "", row(c.runs[i]).c_str());
		std::printf("],\"median\":%s,\"dat_per_verbs\":%s,\"dat_per_getppid\":%s}\n",
			    row(c.med).c_str(), json_num(c.have_verbs, c.dat_per_verbs, 3).c_str(),
			    json_num(true, c.dat_per_getppid, 3).c_str());
		return;
	}
	std::printf("datperf: cost of one %d-byte send on a connected EP, %s -> %s "
		    "(KDAT_EP_POST=%s), ns per post, a completion every %d-th, "
		    "at most %d outstanding\n", o.size, o.ia_client.c_str(),
		    o.ia_server.c_str(), c.ep_post.empty() ? "(unset)" : c.ep_post.c_str(),
		    o.signal, o.window);
	std::printf("  %-7s %16s %14s %9s\n", "rep", "dat_ep_post_send", "ibv_post_send",
		    "getppid");
	auto line = [&](const char *what, const std::array<double, S_COUNT> &r) {
		std::printf("  %-7s %16.0f %14s %9.0f\n", what, r[S_DAT],
			    c.have_verbs ? std::to_string((long)(r[S_VERBS] + 0.5)).c_str() : "-",
			    r[S_GETPPID]);
	};
	for (std::size_t i = 0; i < c.runs.size(); i++)
		line(std::to_string(i + 1).c_str(), c.runs[i]);
	line("median", c.med);
	if (c.have_verbs)
		std::printf("  dat/verbs %.2f, ", c.dat_per_verbs);
	else
		std::printf("  (no verbs comparison: %s) ", c.verbs_why.c_str());
	std::printf("dat/getppid %.2f  (medians of the per-repetition ratios; %ld sends "
		    "per method and repetition)\n", c.dat_per_getppid, o.iters);
}

double percentile(std::vector<double> v, double p)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	std::size_t i = (std::size_t)(p * (double)(v.size() - 1) + 0.5);
	return v[std::min(i, v.size() - 1)];
}

void print_exchange(const Options &o, const ExchangeResult &r)
{
	double rate = r.secs > 0 ? r.messages / r.secs : 0;
	double sum = 0;
	for (double v : r.rtt_us)
		sum += v;
	/* one way: half a round trip, as perftest reports it */
	double typ = percentile(r.rtt_us, 0.5) / 2, avg = r.rtt_us.empty() ? 0 :
		sum / (double)r.rtt_us.size() / 2;
	double lo = percentile(r.rtt_us, 0) / 2, hi = percentile(r.rtt_us, 1) / 2;
	double p99 = percentile(r.rtt_us, 0.99) / 2;
	bool lat = o.mode == Mode::lat, lat_client = lat && o.role == Role::client;

	if (o.json) {
		std::printf("%s,\"event\":%s,\"srq\":%s,\"messages\":%ld,\"received\":%ld,"
			    "\"seconds\":%.6f,\"msg_per_sec\":%.1f,\"cpu_seconds\":%.3f",
			    json_head(o).c_str(), o.event ? "true" : "false",
			    o.srq ? "true" : "false", r.messages,
			    r.received, r.secs, rate, r.cpu);
		if (lat_client)
			std::printf(",\"t_min_us\":%.3f,\"t_max_us\":%.3f,\"t_typical_us\":%.3f,"
				    "\"t_avg_us\":%.3f,\"t_p99_us\":%.3f", lo, hi, typ, avg, p99);
		std::printf("}\n");
		return;
	}
	std::printf("datperf: %s, %d-byte messages, one EP (%s side, %s, receives %s)\n",
		    lat ? "ping-pong latency" : "bidirectional message rate", o.size,
		    role_name(o.role), o.event ? "dat_evd_wait" : "polling",
		    o.srq ? "through an SRQ" : "on the EP");
	if (lat_client)
		std::printf("  %9s %10s %10s %12s %10s %10s   (us, RTT / 2)\n", "messages",
			    "t_min", "t_max", "t_typical", "t_avg", "99%");
	if (lat_client)
		std::printf("  %9ld %10.2f %10.2f %12.2f %10.2f %10.2f\n", r.messages, lo, hi,
			    typ, avg, p99);
	else
		std::printf("  sent %ld, received %ld in %.3f s: %.0f msg/s sent%s\n",
			    r.messages, r.received, r.secs, rate,
			    lat ? "" : " (add the other side's for perftest -b's figure)");
}

/* ---------------------------------------------------------------------- */
/* Command line                                                           */

void usage(FILE *f)
{
	std::fprintf(f,
"Usage:\n"
"  datperf [options]              server: -q EPs sharing one SRQ, on -d\n"
"  datperf [options] HOST         client: -q EPs on -d send to the server at HOST\n"
"  datperf --loopback [options]   both in this process: server on -d, client on\n"
"                                 --client-dev, to the server IA's address\n"
"  datperf --post-cost [options]  ns per receive post: ring, ioctl, verbs, getppid\n"
"  datperf --post-parts [options] where the time of one receive post goes\n"
"  datperf --send-cost [options]  ns per dat_ep_post_send on a connected EP (-d <-\n"
"                                 --client-dev), ibv_post_send on an RC QP, getppid\n"
"  datperf --lat [options] [HOST] ping-pong latency, as ib_send_lat (server without\n"
"                                 HOST, client with)\n"
"  datperf --bidir [options] [HOST] bidirectional message rate, as ib_send_bw -b\n"
"\n"
"Options (as perftest's):\n"
"  -d, --ib-dev=DEV       IA, by name (default: the first the registry lists)\n"
"  -s, --size=N           message size in bytes (64)\n"
"  -n, --iters=N          messages per EP (1000); --post-cost, --send-cost: posts\n"
"                         per method and repetition (8192); --post-parts: calls per\n"
"                         sample (4096); --lat: round trips; --bidir: per side\n"
"  -q, --qp=N             EPs (connections), all sharing the server's SRQ (1;\n"
"                         at most 65536)\n"
"  -r, --rx-depth=N       SRQ depth in receive buffers (512)\n"
"  -t, --tx-depth=N       sends in flight per EP (rx-depth / (2 x qp), 1..64)\n"
"  -Q, --cq-mod=N         ask for a send completion every N-th send (tx-depth / 4)\n"
"  -p, --port=N           connection qualifier (4900)\n"
"  -V, --version          print the version and exit\n"
"  -h, --help             print this help and exit\n"
"Options of datperf's own:\n"
"      --loopback         run the server and the client in this process\n"
"      --client-dev=DEV   --loopback's client IA (default: the IA listed after -d's)\n"
"      --post=PATH        how the server reposts: ring (default), ioctl, both\n"
"      --event            sleep in dat_evd_wait instead of polling (--lat, --bidir,\n"
"                         the message rate)\n"
"      --srq              --lat, --bidir: the EP's receives come from an SRQ of\n"
"                         -r buffers (dat_srq_post_recv: no system call)\n"
"      --reps=N           --post-cost/--post-parts repetitions (7)\n"
"      --timeout=S        give up after S seconds without progress (30)\n"
"      --json             one JSON object on stdout instead of the table\n"
"      --progress         progress on stderr even when it is not a terminal\n"
"      --no-progress      no progress (default: on a terminal, after 1 s)\n"
"\n"
"The kernel-consumer benchmark is tests/bench/kdat_bench.ko (make bench).\n");
}

[[noreturn]] void bad_usage(const char *fmt, const char *a, const char *b = "")
{
	std::fprintf(stderr, "datperf: ");
	std::fprintf(stderr, fmt, a, b);
	std::fprintf(stderr, "\n");
	usage(stderr);
	std::exit(2);
}

long number(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	errno = 0;
	long n = std::strtol(v, &end, 0);

	if (errno || end == v || *end || n < lo || n > hi) {
		std::fprintf(stderr, "datperf: %s wants a number in %ld..%ld, not '%s'\n",
			     opt, lo, hi, v);
		usage(stderr);
		std::exit(2);
	}
	return n;
}

Options parse(int argc, char **argv)
{
	enum { O_POST = 256, O_LOOPBACK, O_CLIENT_DEV, O_REPS, O_TIMEOUT, O_JSON,
	       O_PROGRESS, O_NOPROGRESS, O_COST, O_PARTS, O_SEND, O_LAT, O_BIDIR,
	       O_EVENT, O_SRQ };
	static const struct option longopts[] = {
		{ "ib-dev", required_argument, nullptr, 'd' },
		{ "size", required_argument, nullptr, 's' },
		{ "iters", required_argument, nullptr, 'n' },
		{ "qp", required_argument, nullptr, 'q' },
		{ "rx-depth", required_argument, nullptr, 'r' },
		{ "tx-depth", required_argument, nullptr, 't' },
		{ "cq-mod", required_argument, nullptr, 'Q' },
		{ "port", required_argument, nullptr, 'p' },
		{ "version", no_argument, nullptr, 'V' },
		{ "help", no_argument, nullptr, 'h' },
		{ "loopback", no_argument, nullptr, O_LOOPBACK },
		{ "client-dev", required_argument, nullptr, O_CLIENT_DEV },
		{ "post", required_argument, nullptr, O_POST },
		{ "reps", required_argument, nullptr, O_REPS },
		{ "timeout", required_argument, nullptr, O_TIMEOUT },
		{ "json", no_argument, nullptr, O_JSON },
		{ "progress", no_argument, nullptr, O_PROGRESS },
		{ "no-progress", no_argument, nullptr, O_NOPROGRESS },
		{ "post-cost", no_argument, nullptr, O_COST },
		{ "post-parts", no_argument, nullptr, O_PARTS },
		{ "send-cost", no_argument, nullptr, O_SEND },
		{ "lat", no_argument, nullptr, O_LAT },
		{ "bidir", no_argument, nullptr, O_BIDIR },
		{ "event", no_argument, nullptr, O_EVENT },
		{ "srq", no_argument, nullptr, O_SRQ },
		{}
	};
	Options o;
	bool iters_set = false, depth_set = false, window_set = false;
	int c;

	while ((c = getopt_long(argc, argv, "d:s:n:q:r:t:Q:p:Vh", longopts,
				nullptr)) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 's': o.size = (int)number("--size", optarg, 1, 1 << 20); break;
		case 'n':
			o.iters = number("--iters", optarg, 1, INT_MAX);
			iters_set = true;
			break;
		case 'q': o.eps = (int)number("--qp", optarg, 1, 65536); break;
		case 'r':
			o.depth = (int)number("--rx-depth", optarg, 1, 1 << 20);
			depth_set = true;
			break;
		case 't':
			o.window = (int)number("--tx-depth", optarg, 1, 4096);
			window_set = true;
			break;
		case 'Q': o.signal = (int)number("--cq-mod", optarg, 1, 4096); break;
		case 'p': o.port = (DAT_CONN_QUAL)number("--port", optarg, 1, 65535); break;
		case O_TIMEOUT: o.timeout = (int)number("--timeout", optarg, 1, 86400); break;
		case O_REPS: o.reps = (int)number("--reps", optarg, 1, 1000); break;
		case O_CLIENT_DEV: o.client_dev = optarg; break;
		case O_LOOPBACK: o.role = Role::loopback; break;
		case O_JSON: o.json = true; break;
		case O_PROGRESS: o.progress = 1; break;
		case O_NOPROGRESS: o.progress = 0; break;
		case O_COST: o.mode = Mode::post_cost; break;
		case O_PARTS: o.mode = Mode::post_parts; break;
		case O_SEND: o.mode = Mode::send_cost; break;
		case O_LAT: o.mode = Mode::lat; break;
		case O_BIDIR: o.mode = Mode::bidir; break;
		case O_EVENT: o.event = true; break;
		case O_SRQ: o.srq = true; break;
		case O_POST:
			if (!std::strcmp(optarg, "ring"))
				o.paths = { PostPath::ring };
			else if (!std::strcmp(optarg, "ioctl"))
				o.paths = { PostPath::ioctl };
			else if (!std::strcmp(optarg, "both"))
				o.paths = { PostPath::ring, PostPath::ioctl };
			else
				bad_usage("--post wants ring, ioctl or both, not '%s'", optarg);
			break;
		case 'V': std::printf("datperf %s\n", kVersion); std::exit(0);
		case 'h': usage(stdout); std::exit(0);
		default: usage(stderr); std::exit(2);
		}
	}
	if (optind < argc) {
		if (o.role == Role::loopback || o.mode == Mode::post_cost ||
		    o.mode == Mode::post_parts || o.mode == Mode::send_cost)
			bad_usage("no HOST with --loopback, --post-cost, --post-parts or "
				  "--send-cost ('%s')", argv[optind]);
		o.host = argv[optind++];
		o.role = Role::client;
	}
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);
	if (!iters_set && o.mode == Mode::post_cost)
		o.iters = 8192;
	if (!iters_set && o.mode == Mode::post_parts)
		o.iters = 4096;
	if (!iters_set && o.mode == Mode::send_cost)
		o.iters = 8192;
	if ((o.mode == Mode::lat || o.mode == Mode::bidir) && o.role == Role::loopback)
		bad_usage("--lat and --bidir run as two processes: a server, and a client "
			  "given the server's HOST%s", "");
	if (o.mode == Mode::send_cost && !window_set)
		o.window = 64;
	if (o.mode == Mode::lat && !depth_set)
		o.depth = 16;
	if (o.mode == Mode::lat && !window_set)
		o.window = 16;
	if (o.mode != Mode::rate && o.depth < 2)
		bad_usage("--post-cost and --post-parts want --rx-depth >= 2%s", "");
	if (!o.window)
		o.window = std::clamp(o.depth / (2 * o.eps), 1, 64);
	if (!o.signal)
		o.signal = std::max(1, o.window / 4);
	if (o.signal > o.window) {
		std::fprintf(stderr, "datperf: --cq-mod %d exceeds --tx-depth %d (no send "
			     "would ever complete with an event)\n", o.signal, o.window);
		usage(stderr);
		std::exit(2);
	}
	if ((long long)o.iters * o.eps > LONG_MAX)	/* 32-bit long */
		bad_usage("--iters x --qp exceeds this machine's long%s", "");
	if (o.mode == Mode::rate && o.role != Role::server &&
	    (long)o.eps * o.window > o.depth)
		std::fprintf(stderr, "datperf: warning: %d EPs x tx-depth %d exceeds the "
			     "SRQ depth %d: expect receiver-not-ready retries\n",
			     o.eps, o.window, o.depth);
	return o;
}

/* The registry's IA names, in its order. */
std::vector<std::string> registry_ias()
{
	DAT_COUNT n = 0;
	DAT_RETURN r = dat_registry_list_providers(0, &n, nullptr);
	std::vector<DAT_PROVIDER_INFO> info(n > 0 ? n : 0);
	std::vector<DAT_PROVIDER_INFO *> ptr;
	std::vector<std::string> names;

	for (auto &i : info)
		ptr.push_back(&i);
	if (r == DAT_SUCCESS && n > 0)
		r = dat_registry_list_providers(n, &n, ptr.data());
	ok(r, "dat_registry_list_providers");
	for (DAT_COUNT i = 0; i < n && i < (DAT_COUNT)info.size(); i++)
		names.push_back(info[i].ia_name);
	return names;
}

/* The IPv4 address of @host (a name or a dotted quad). */
std::string resolve(const std::string &host)
{
	struct addrinfo hints = {}, *res = nullptr;
	char txt[INET_ADDRSTRLEN] = "";

	hints.ai_family = AF_INET;
	int e = getaddrinfo(host.c_str(), nullptr, &hints, &res);
	if (e)
		throw std::runtime_error("cannot resolve " + host + ": " + gai_strerror(e));
	inet_ntop(AF_INET, &((const struct sockaddr_in *)res->ai_addr)->sin_addr,
		  txt, sizeof(txt));
	freeaddrinfo(res);
	return txt;
}

/* -d and --client-dev to IA names (the defaults from the registry's list),
 * HOST to an address. */
void resolve_names(Options &o)
{
	bool pair = o.role == Role::loopback || o.mode == Mode::send_cost;
	if (o.dev.empty() || (pair && o.client_dev.empty())) {
		std::vector<std::string> ias = registry_ias();
		if (ias.empty())
			throw std::runtime_error("no DAT providers found (dat.conf: "
						 "$DAT_OVERRIDE or /etc/dat.conf; without "
						 "it, the IAs of /dev/kdat)");
		if (o.dev.empty())
			o.dev = ias[0];
		if (o.client_dev.empty()) {
			auto it = std::find(ias.begin(), ias.end(), o.dev);
			o.client_dev = it != ias.end() && it + 1 != ias.end() ? it[1] :
										ias[0];
		}
	}
	if (o.role == Role::client) {
		o.ia_client = o.dev;
		o.addr = resolve(o.host);
	} else {
		o.ia_server = o.dev;
		o.ia_client = o.client_dev;
	}
}

int run(Options &o)
{
	resolve_names(o);
	if (o.mode == Mode::post_cost) {
		print_cost(o, run_post_cost(o));
		return 0;
	}
	if (o.mode == Mode::post_parts) {
		print_parts(o, run_post_parts(o));
		return 0;
	}
	if (o.mode == Mode::send_cost) {
		print_send_cost(o, run_send_cost(o));
		return 0;
	}
	if (o.mode == Mode::lat || o.mode == Mode::bidir) {
		print_exchange(o, run_exchange(o));
		return 0;
	}
	std::vector<RateRow> rows;
	const std::vector<PostPath> paths =
		o.role == Role::client ? std::vector<PostPath>{ PostPath::ring } :
					 o.paths;
	for (PostPath p : paths) {
		rows.push_back(run_rate(o, p));
		if (rows.back().async_events)
			throw std::runtime_error(std::to_string(rows.back().async_events) +
						 " unexpected async events on the server IA");
	}
	print_rate(o, rows);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Options o = parse(argc, argv);

	try {
		return run(o);
	} catch (const std::exception &x) {
		std::fprintf(stderr, "datperf: %s\n", x.what());
		/* --json: still one JSON object, saying what failed */
		if (o.json)
			std::printf("%s,\"error\":%s}\n", json_head(o).c_str(),
				    json_string(x.what()).c_str());
		return 1;
	}
}
