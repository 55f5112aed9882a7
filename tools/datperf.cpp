// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// datperf: message rate through ONE shared receive queue, and the cost of
// one receive post, measured with libdat (a user-space consumer of kdat).
// The kernel-consumer counterpart is tests/bench/kdat_bench.ko (make bench);
// datperf uses the same workload and the same option names, so the two
// can be compared on one device.
//
//   datperf [options]               message rate (default)
//   datperf --post-cost [options]   ns per dat_srq_post_recv: post ring
//                                   vs one ioctl per receive
//
// Message rate: --eps client EPs on --ia-client stream --size-byte sends
// to --eps server EPs on --ia-server that share one SRQ of --depth
// buffers.  The server reposts each buffer as soon as it dequeues its
// completion; each client EP keeps up to --window sends in flight and asks
// for a completion event every --signal-th send (and for its last one),
// the others are posted with DAT_COMPLETION_SUPPRESS_FLAG.  Time runs from
// the first send to the last receive.  By default both sides run in this
// process (two threads, as tests/user/guest/fixture.hpp pairs rxe0 with
// rxe1); --server and --client run one side each, for two processes or
// two machines (both need the same --eps).
//
// See datperf(1).
#include <dat/udat.h>
#include <dat/dat_kdat.h>

#include <arpa/inet.h>
#include <getopt.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
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
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kVersion = "1.0.0";
constexpr std::uint32_t kMagic = 0x44415450;	/* "DATP": our connect data */
constexpr DAT_TIMEOUT kPoll = 200'000;		/* 200 ms: check for abort */

enum class Role { both, server, client };
enum class PostPath { ring, ioctl };

const char *path_name(PostPath p)
{
	return p == PostPath::ring ? "ring" : "ioctl";
}

struct Options {
	Role role = Role::both;
	bool post_cost = false;
	int size = 64;
	int eps = 16;
	int depth = 1024;
	long iters = 20000;
	int window = 0;			/* 0: depth / (2 x eps), 1..64 */
	int signal = 0;			/* 0: window / 4, at least 1 */
	std::string ia_server = "rxe0";
	std::string ia_client = "rxe1";
	std::string addr = "192.0.2.1";
	DAT_CONN_QUAL port = 4900;
	std::vector<PostPath> paths{ PostPath::ring };
	int timeout = 30;		/* seconds without any progress */
	bool json = false;
	int progress = -1;		/* -1: when stderr is a terminal */
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
			DAT_EVENT e;
			if (!wait_event(evd_, e)) {
				dl.check(gone < o_.eps ? "connections" :
							 "messages");
				continue;
			}
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
};

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
			msgs_[i] = o_.iters / n + (i < o_.iters % n ? 1 : 0);
		for (int i = 0; i < n; i++) {
			ok(dat_ep_create(c_.ia, c_.pz, DAT_HANDLE_NULL, evd_, evd_, &a,
					 &ep_[i]), "dat_ep_create");
			connect(i);
		}
		wait_connected();

		res.start = Clock::now();
		for (int i = 0; i < n; i++)
			refill(i);
		long complete = 0;
		for (int i = 0; i < n; i++)
			complete += msgs_[i] == 0;
		Deadline dl(o_.timeout);
		while (complete < n) {
			DAT_EVENT e;
			if (!wait_event(evd_, e)) {
				dl.check("send completions");
				continue;
			}
			dl.touch();
			do {
				complete += on_event(e);
			} while (complete < n && dat_evd_dequeue(evd_, &e) == DAT_SUCCESS);
			progress.update(res.sent = total_done(), o_.iters);
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
		for (std::size_t i = 0; i < ep_.size(); i++)
			if (ep_[i] == h)
				return (int)i;
		throw std::runtime_error("event for an unknown endpoint");
	}

	/* All EPs connected; a refused connection is retried (the server
	 * may not listen yet when it runs in another process). */
	void wait_connected()
	{
		const int n = o_.eps;
		int up = 0;
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
			DAT_EVENT e;
			if (!wait_event(evd_, e)) {
				dl.check("disconnections");
				continue;
			}
			if (e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED)
				down++;
		}
	}

	const Options &o_;
	Side c_;
	DAT_EVD_HANDLE evd_ = DAT_HANDLE_NULL;
	std::vector<DAT_EP_HANDLE> ep_;
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
};

RateRow run_rate(const Options &o, PostPath path)
{
	RateRow row;
	row.path = path;
	double cpu0 = cpu_seconds();

	if (o.role == Role::client) {
		Progress p(o.progress, "sent");
		ClientResult c = Client(o).run(p);
		row.messages = c.sent;
		row.secs = seconds(c.end - c.start);
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

struct CostRow {
	std::string name, note;
	double ns = 0;
};

std::vector<CostRow> run_post_cost(const Options &o)
{
	Side s;
	const int d = o.depth;
	const long rounds = std::max(1L, (o.iters + d - 1) / d);
	double ring_ns = 0, drain_ns = 0, ioctl_ns = 0;

	s.open(o.ia_server, (std::size_t)d * o.size, DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
	std::vector<DAT_LMR_TRIPLET> t(d);
	for (int i = 0; i < d; i++)
		t[i] = s.seg((std::size_t)i * o.size, o.size);

	Progress p(o.progress, "posts");
	for (PostPath path : { PostPath::ring, PostPath::ioctl }) {
		for (long r = 0; r < rounds; r++) {
			/* a fresh SRQ each round: nothing ever takes a buffer */
			DAT_SRQ_ATTR sa = { d, 1, DAT_SRQ_LW_DEFAULT };
			DAT_SRQ_HANDLE srq;
			DAT_SRQ_PARAM q;
			ok(dat_srq_create(s.ia, s.pz, &sa, &srq), "dat_srq_create");
			auto t0 = Clock::now();
			for (int i = 0; i < d; i++)
				ok(path == PostPath::ring ?
				   dat_srq_post_recv(srq, 1, &t[i], cookie(i)) :
				   dat_kdat_srq_post_recv_ioctl(srq, 1, &t[i], cookie(i)),
				   "post");
			auto t1 = Clock::now();
			/* the kernel drains the post ring before it answers */
			ok(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &q), "dat_srq_query");
			auto t2 = Clock::now();
			if (q.available_dto_count != d)
				throw std::runtime_error("SRQ holds " +
							 std::to_string(q.available_dto_count) +
							 " buffers after " + std::to_string(d) +
							 " posts");
			ok(dat_srq_free(srq), "dat_srq_free");
			double post = std::chrono::duration<double, std::nano>(t1 - t0).count();
			double query = std::chrono::duration<double, std::nano>(t2 - t1).count();
			if (path == PostPath::ring) {
				ring_ns += post;
				drain_ns += query;
			} else {
				ioctl_ns += post;
			}
			p.update((path == PostPath::ioctl ? rounds : 0) + r + 1, 2 * rounds);
		}
	}
	p.done();

	/* the cost of an empty query (nothing to drain), and of a bare syscall */
	DAT_SRQ_ATTR sa = { d, 1, DAT_SRQ_LW_DEFAULT };
	DAT_SRQ_HANDLE srq;
	DAT_SRQ_PARAM q;
	ok(dat_srq_create(s.ia, s.pz, &sa, &srq), "dat_srq_create");
	const int nq = 4096;
	auto q0 = Clock::now();
	for (int i = 0; i < nq; i++)
		ok(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &q), "dat_srq_query");
	double query_ns = std::chrono::duration<double, std::nano>(Clock::now() - q0).count() / nq;
	ok(dat_srq_free(srq), "dat_srq_free");
	const int ns = 100000;
	auto s0 = Clock::now();
	for (int i = 0; i < ns; i++)
		syscall(SYS_getppid);
	double sys_ns = std::chrono::duration<double, std::nano>(Clock::now() - s0).count() / ns;

	const double posts = (double)rounds * d;
	double drain = std::max(0.0, drain_ns / rounds - query_ns) / d;
	return {
		{ "dat_srq_post_recv (post ring)", "no system call", ring_ns / posts },
		{ "  + kernel drain of the ring", "per entry, at the next completion/query", drain },
		{ "dat_kdat_srq_post_recv_ioctl", "one ioctl per receive", ioctl_ns / posts },
		{ "dat_srq_query", "one ioctl, ring empty", query_ns },
		{ "getppid()", "a bare system call, for scale", sys_ns },
	};
}

/* ---------------------------------------------------------------------- */
/* Output                                                                 */

std::string json_str(const std::string &s)
{
	std::string o = "\"";
	for (char c : s) {
		if (c == '"' || c == '\\')
			o += '\\';
		o += c;
	}
	return o + "\"";
}

const char *role_name(Role r)
{
	return r == Role::both ? "both" : r == Role::server ? "server" : "client";
}

void print_rate(const Options &o, const std::vector<RateRow> &rows)
{
	if (o.json) {
		std::printf("{\"tool\":\"datperf\",\"version\":\"%s\",\"test\":\"msgrate\","
			    "\"role\":\"%s\",\"server_ia\":%s,\"client_ia\":%s,\"addr\":%s,"
			    "\"port\":%llu,\"eps\":%d,\"depth\":%d,\"size\":%d,\"iters\":%ld,"
			    "\"window\":%d,\"signal\":%d,\"results\":[",
			    kVersion, role_name(o.role), json_str(o.ia_server).c_str(),
			    json_str(o.ia_client).c_str(), json_str(o.addr).c_str(),
			    (unsigned long long)o.port, o.eps, o.depth, o.size, o.iters,
			    o.window, o.signal);
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
	std::printf(" (%s)\n", o.role == Role::both ? "one process" :
			       o.role == Role::server ? "server side" : "client side");
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
		if (r.have_srq)
			std::printf("  SRQ after the %s run: %d available, %d outstanding of %d;"
				    " %ld flushed, %ld async events\n",
				    path_name(r.path), r.srq.available_dto_count,
				    r.srq.outstanding_dto_count, r.srq.max_recv_dtos,
				    r.flushed, r.async_events);
}

void print_cost(const Options &o, const std::vector<CostRow> &rows)
{
	if (o.json) {
		std::printf("{\"tool\":\"datperf\",\"version\":\"%s\",\"test\":\"post_cost\","
			    "\"ia\":%s,\"depth\":%d,\"size\":%d,\"posts_per_path\":%ld,"
			    "\"results\":{\"ring_post_ns\":%.1f,\"ring_drain_ns\":%.1f,"
			    "\"ioctl_post_ns\":%.1f,\"query_ns\":%.1f,\"syscall_ns\":%.1f}}\n",
			    kVersion, json_str(o.ia_server).c_str(), o.depth, o.size,
			    std::max(1L, (o.iters + o.depth - 1) / o.depth) * o.depth,
			    rows[0].ns, rows[1].ns, rows[2].ns, rows[3].ns, rows[4].ns);
		return;
	}
	std::printf("datperf: cost of one receive post, SRQ of %d buffers on %s\n",
		    o.depth, o.ia_server.c_str());
	std::printf("  %-32s %10s\n", "call", "ns/call");
	for (const CostRow &r : rows)
		std::printf("  %-32s %10.0f  %s\n", r.name.c_str(), r.ns, r.note.c_str());
	if (rows[2].ns > 0 && rows[0].ns > 0)
		std::printf("  post ring vs ioctl: %.1fx cheaper at post time, %.1fx "
			    "including the kernel's drain\n", rows[2].ns / rows[0].ns,
			    rows[2].ns / (rows[0].ns + rows[1].ns));
}

/* ---------------------------------------------------------------------- */
/* Command line                                                           */

void usage(FILE *f)
{
	std::fprintf(f,
"usage: datperf [options]              message rate through one SRQ\n"
"       datperf --post-cost [options]  ns per receive post: ring vs ioctl\n"
"\n"
"  -e, --eps N          connections, all sharing the SRQ (16)\n"
"  -s, --size N         message size in bytes (64)\n"
"  -d, --depth N        SRQ depth in receive buffers (1024)\n"
"  -n, --iters N        messages in all, spread over the EPs (20000);\n"
"                       with --post-cost: posts per path (rounded up to --depth)\n"
"  -w, --window N       sends in flight per EP (depth / (2 x eps), 1..64)\n"
"  -S, --signal N       ask for a send completion every N-th send (window / 4)\n"
"      --post PATH      how the server reposts: ring (default), ioctl, both\n"
"      --ia-server NAME server IA (rxe0)\n"
"      --ia-client NAME client IA (rxe1)\n"
"  -a, --addr IPV4      the server IA's address (192.0.2.1)\n"
"  -p, --port N         connection qualifier (4900)\n"
"      --server         run the server side only\n"
"      --client         run the client side only (connects to --addr)\n"
"  -t, --timeout S      give up after S seconds without progress (30)\n"
"      --json           one JSON object on stdout instead of the table\n"
"      --progress       progress on stderr even when it is not a terminal\n"
"      --no-progress    no progress (default: shown on a terminal, after 1 s)\n"
"  -V, --version        print the version\n"
"  -h, --help           this text\n"
"\n"
"The kernel-consumer benchmark is tests/bench/kdat_bench.ko (make bench).\n");
}

long number(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	errno = 0;
	long n = std::strtol(v, &end, 0);

	if (errno || end == v || *end || n < lo || n > hi) {
		std::fprintf(stderr, "datperf: %s wants a number in %ld..%ld, not '%s'\n",
			     opt, lo, hi, v);
		std::exit(2);
	}
	return n;
}

Options parse(int argc, char **argv)
{
	enum { O_POST = 256, O_IAS, O_IAC, O_SERVER, O_CLIENT, O_JSON, O_PROGRESS,
	       O_NOPROGRESS, O_COST };
	static const struct option longopts[] = {
		{ "eps", required_argument, nullptr, 'e' },
		{ "size", required_argument, nullptr, 's' },
		{ "depth", required_argument, nullptr, 'd' },
		{ "iters", required_argument, nullptr, 'n' },
		{ "window", required_argument, nullptr, 'w' },
		{ "signal", required_argument, nullptr, 'S' },
		{ "post", required_argument, nullptr, O_POST },
		{ "ia-server", required_argument, nullptr, O_IAS },
		{ "ia-client", required_argument, nullptr, O_IAC },
		{ "addr", required_argument, nullptr, 'a' },
		{ "port", required_argument, nullptr, 'p' },
		{ "server", no_argument, nullptr, O_SERVER },
		{ "client", no_argument, nullptr, O_CLIENT },
		{ "timeout", required_argument, nullptr, 't' },
		{ "json", no_argument, nullptr, O_JSON },
		{ "progress", no_argument, nullptr, O_PROGRESS },
		{ "no-progress", no_argument, nullptr, O_NOPROGRESS },
		{ "post-cost", no_argument, nullptr, O_COST },
		{ "version", no_argument, nullptr, 'V' },
		{ "help", no_argument, nullptr, 'h' },
		{}
	};
	Options o;
	int c;

	while ((c = getopt_long(argc, argv, "e:s:d:n:w:S:a:p:t:Vh", longopts,
				nullptr)) != -1) {
		switch (c) {
		case 'e': o.eps = (int)number("--eps", optarg, 1, 1024); break;
		case 's': o.size = (int)number("--size", optarg, 1, 1 << 20); break;
		case 'd': o.depth = (int)number("--depth", optarg, 1, 1 << 20); break;
		case 'n': o.iters = number("--iters", optarg, 1,
					    (long)std::min<long long>(1LL << 40, LONG_MAX)); break;
		case 'w': o.window = (int)number("--window", optarg, 1, 4096); break;
		case 'S': o.signal = (int)number("--signal", optarg, 1, 4096); break;
		case 'a': o.addr = optarg; break;
		case 'p': o.port = (DAT_CONN_QUAL)number("--port", optarg, 1, 65535); break;
		case 't': o.timeout = (int)number("--timeout", optarg, 1, 86400); break;
		case O_IAS: o.ia_server = optarg; break;
		case O_IAC: o.ia_client = optarg; break;
		case O_SERVER: o.role = Role::server; break;
		case O_CLIENT: o.role = Role::client; break;
		case O_JSON: o.json = true; break;
		case O_PROGRESS: o.progress = 1; break;
		case O_NOPROGRESS: o.progress = 0; break;
		case O_COST: o.post_cost = true; break;
		case O_POST:
			if (!std::strcmp(optarg, "ring"))
				o.paths = { PostPath::ring };
			else if (!std::strcmp(optarg, "ioctl"))
				o.paths = { PostPath::ioctl };
			else if (!std::strcmp(optarg, "both"))
				o.paths = { PostPath::ring, PostPath::ioctl };
			else {
				std::fprintf(stderr, "datperf: --post ring|ioctl|both\n");
				std::exit(2);
			}
			break;
		case 'V': std::printf("datperf %s\n", kVersion); std::exit(0);
		case 'h': usage(stdout); std::exit(0);
		default: usage(stderr); std::exit(2);
		}
	}
	if (optind < argc) {
		std::fprintf(stderr, "datperf: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		std::exit(2);
	}
	if (!o.window)
		o.window = std::clamp(o.depth / (2 * o.eps), 1, 64);
	if (!o.signal)
		o.signal = std::max(1, o.window / 4);
	if (o.signal > o.window) {
		std::fprintf(stderr, "datperf: --signal %d exceeds --window %d (no send "
			     "would ever complete with an event)\n", o.signal, o.window);
		std::exit(2);
	}
	if (!o.post_cost && o.role != Role::server && (long)o.eps * o.window > o.depth)
		std::fprintf(stderr, "datperf: warning: %d EPs x window %d exceeds the "
			     "SRQ depth %d: expect receiver-not-ready retries\n",
			     o.eps, o.window, o.depth);
	if ((long long)o.iters >= (1LL << 32) * o.eps) {
		std::fprintf(stderr, "datperf: --iters too large\n");
		std::exit(2);
	}
	return o;
}

} // namespace

int main(int argc, char **argv)
try {
	Options o = parse(argc, argv);

	if (o.post_cost) {
		print_cost(o, run_post_cost(o));
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
} catch (const std::exception &x) {
	std::fprintf(stderr, "datperf: %s\n", x.what());
	return 1;
}
