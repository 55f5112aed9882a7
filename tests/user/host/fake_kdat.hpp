// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// A fake /dev/kdat for the host unit tests: the PROTOCOL of the kdat
// character device (include/uapi/kdat_abi.h), not its semantics.  The SRQ
// semantics have one implementation, the kernel's; whatever depends on
// them is tested against the real module in the guest (tests/user/guest,
// see README.md here).
//
// What the fake does on its own (the protocol):
//   - per-file IDs (never 0) for what the create ioctls make; an ID that
//     names no live object of the right type is DAT_INVALID_HANDLE
//   - self-describing rings: IA_OPEN, EVD_CREATE and SRQ_CREATE hand out a
//     ring (struct kdat_ring_hdr, entries a power of two, the entry size
//     and offset in the header) mmapped at the offset the ioctl returned
//   - ioctl arguments: hdr.size must be the struct's size and reserved
//     fields zero (-EINVAL; a post's segments: DAT_INVALID_ARG3, more than
//     KDAT_MAX_IOV of them: DAT_INVALID_ARG2), unknown requests -ENOTTY
//   - KDAT_IOC_SRQ_KICK and KDAT_IOC_SRQ_QUERY take entries from the post
//     ring (how many: drain(), default all) and keep what they took
//   - on request only (send_rings()), EP_CREATE hands out an EP send ring
//     laid out as the kernel's (kernel/uring.c kdat_uep_init): entries
//     for max_request_dtos, room for max_request_iov segments each, depth
//     max_request_dtos, ep_state unconnected and NEED_KICK set (an idle
//     send queue: the first post kicks).  KDAT_IOC_EP_KICK takes entries
//     as an SRQ kick does (drain(), default all; sent()); unknown `value`
//     bits are DAT_INVALID_PARAMETER, an EP without a ring
//     DAT_INVALID_STATE.  Without send_rings(), ring_size is 0 and every
//     post goes through KDAT_IOC_EP_POST
//   - KDAT_IOC_EVD_WAIT blocks until the ring holds the threshold, the
//     header's `wakes` differs from wake_seq (KDAT_WAIT_SEQ), the EVD is
//     made unwaitable (then, and on a new wait: DAT_INVALID_STATE), or the
//     timeout ends; KDAT_IOC_EVD_CTL bumps `wakes`
//   - queries answer what was created (counts 0, state unconnected)
//   - every other ioctl is recorded and answered DAT_SUCCESS
//
// What it never does: decide DAT semantics.  No buffer counting, no
// watermark, no refusal of a post or a resize, no connection, no event of
// its own making, no NEED_KICK of its own (but a new send ring's), no
// send-ring state or retired count of its own.  A test that needs any of
// them says so: it injects the event, sets the flag or the state, scripts
// the answer.
//
// Every ioctl is counted per request and recorded with its argument, so
// tests can prove that a path made no system call and see exactly what the
// library sent.  One lock serializes the whole fake.
#pragma once

#include <dat/udat.h>
#include <uapi/kdat_abi.h>

#include <netinet/in.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ioctl.hpp"

namespace fake {

struct File;

struct FakeIa {
	std::string name;
	std::string ip;		/* dotted IPv4 */
};

/* One object of one open file: the file (the device the library holds) and its ID. */
struct Ref {
	const kdat::Device *file = nullptr;
	std::uint32_t id = 0;
};

/* One ioctl as the library made it. */
struct Call {
	unsigned long request = 0;
	const kdat::Device *file = nullptr;
	std::uint64_t seq = 0;
	/* the argument as the library passed it, with what the fake wrote back */
	std::vector<std::byte> arg;

	template <class T>
	T as() const
	{
		T t{};
		std::memcpy(&t, arg.data(), std::min(sizeof(t), arg.size()));
		return t;
	}
};

/* What KDAT_IOC_CR_QUERY answers for a CR made by make_cr(). */
struct CrInfo {
	std::vector<std::uint8_t> pdata;
	struct sockaddr_in remote = {};
	std::uint64_t remote_port = 0;
	std::uint32_t local_ep = 0;	/* an RSP's request: its EP's ID */
};

class Kernel {
public:
	static constexpr std::uint32_t kAll = ~0u;	/* drain(): every entry */

	Kernel();
	explicit Kernel(std::vector<FakeIa> ias);
	~Kernel();

	/* Make the library open this kernel instead of /dev/kdat. */
	void install();
	static void uninstall();

	/* ioctls seen, per request (KDAT_IOC_*), since the last reset */
	std::uint64_t ioctls(unsigned long request) const;
	std::uint64_t total_ioctls() const;
	/* Forget the counts and the recorded calls. */
	void reset_counts();
	/* The calls of @request since the last reset, oldest first. */
	std::vector<Call> calls(unsigned long request) const;
	/* The argument of the last call of @request (zeroes if none). */
	template <class T>
	T last(unsigned long request) const
	{
		auto c = calls(request);
		return c.empty() ? T{} : c.back().template as<T>();
	}

	/* The next @request fails with -@err (ABI level) / answers @status. */
	void fail_next(unsigned long request, int err);
	void status_next(unsigned long request, DAT_RETURN status);
	/* Opening the device fails with @status (DAT_SUCCESS: works again). */
	void fail_open(DAT_RETURN status);

	/*
	 * Script the answer to @request: @fn runs after the fake's own answer
	 * (under its lock; it may call this class), may change any field of
	 * the argument, and returns the status.  An empty @fn: the fake's own.
	 */
	using Answer = std::function<DAT_RETURN(void *arg)>;
	void answer_raw(unsigned long request, Answer fn);
	template <class T, class F>
	void answer(unsigned long request, F fn)
	{
		answer_raw(request, [fn](void *a) -> DAT_RETURN {
			return fn(*static_cast<T *>(a));
		});
	}

	/* Open files (contexts) right now. */
	int files() const;
	/* Live objects of every open file right now. */
	std::size_t objects() const;

	/* ---- event rings ---- */

	/*
	 * Write @u (its evd field set) into @evd's ring as the kernel would.
	 * A full ring loses it and counts it in the header's `dropped`: false.
	 */
	bool inject(Ref evd, struct kdat_uevent u);
	/* Block until @n threads wait inside KDAT_IOC_EVD_WAIT on @evd. */
	void await_waiters(Ref evd, int n) const;
	/* The ring header of @evd, @srq or an EP's send ring, as mapped. */
	struct kdat_ring_hdr *ring(Ref obj) const;

	/* ---- SRQ post rings and EP send rings (@srq: an SRQ or an EP) ---- */

	/* Set or clear KDAT_RING_NEED_KICK in @srq's ring header. */
	void set_need_kick(Ref srq, bool on);
	/*
	 * How many entries the next kicks/queries of @srq take, one number
	 * per call (then @then for every later one).  Default: kAll.
	 */
	void drain(Ref srq, std::vector<std::uint32_t> next,
		   std::uint32_t then = kAll);
	/* Take up to @n published entries now (as a completion's drain would). */
	void take(Ref srq, std::uint32_t n = kAll);
	/* Entries taken from @srq's ring so far, in ring order. */
	std::vector<struct kdat_srq_wqe> taken(Ref srq) const;
	/* Entries published and not yet taken. */
	std::uint32_t unconsumed(Ref srq) const;

	/* ---- EP send rings ---- */

	/* EPs created from now on get a send ring (true) or none (false). */
	void send_rings(bool on);
	/* Publish @state (a DAT_EP_STATE) in @ep's send-ring header. */
	void set_ep_state(Ref ep, std::uint32_t state);
	/* Count @n more of @ep's entries as left the send queue (`retired`). */
	void retire(Ref ep, std::uint32_t n);
	/* Entries taken from @ep's send ring so far, in ring order. */
	std::vector<struct kdat_ep_sqe> sent(Ref ep) const;

	/* The next ring made (any kind) gets @entries (and @entry_size, if set). */
	void next_ring(std::uint32_t entries, std::uint32_t entry_size = 0);

	/* ---- connection requests ---- */

	/* A CR in @ia's file (for a DAT_CONNECTION_REQUEST_EVENT's `cr`). */
	std::uint32_t make_cr(Ref ia, const CrInfo &info);

	/* Is @obj a live object of its file? */
	bool alive(Ref obj) const;

	/* Internal */
	mutable std::recursive_mutex lock;
	mutable std::condition_variable_any cv;
	std::unique_ptr<kdat::Device> open(DAT_RETURN *status);
	void add_file(File *f);
	void remove_file(File *f);
	const std::vector<FakeIa> &ias() const { return ias_; }
	File *file_of(const kdat::Device *d) const;
	std::uint64_t record(const kdat::Device *file, unsigned long request,
			     const void *arg);
	void recorded(std::uint64_t seq, const void *arg);
	bool injected(unsigned long request, int *err, DAT_RETURN *status);
	const Answer *scripted(unsigned long request) const;
	bool take_next_ring(std::uint32_t *entries, std::uint32_t *entry_size);
	bool offers_send_rings() const { return send_rings_; }

private:
	std::vector<FakeIa> ias_;
	std::vector<File *> files_;
	std::map<unsigned long, std::uint64_t> counts_;
	std::vector<Call> calls_;
	std::uint64_t seq_ = 0;
	std::map<unsigned long, int> fail_err_;
	std::map<unsigned long, DAT_RETURN> fail_status_;
	std::map<unsigned long, Answer> answers_;
	DAT_RETURN open_status_ = DAT_SUCCESS;
	std::uint32_t next_entries_ = 0, next_entry_size_ = 0;
	bool send_rings_ = false;
};

/* The current kernel (set by install()). */
Kernel *current();

} // namespace fake
