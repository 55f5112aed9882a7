// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// A fake /dev/kdat for the host unit tests: the kdat character-device ABI
// (include/uapi/kdat_abi.h) implemented in user space, closely enough to
// run the whole library - and the examples - without a kernel.
//
// It models what the library relies on: per-file IDs (cyclic, never 0),
// self-describing mmapped rings, SRQ post-ring draining (on a kick, a
// query, a post or a completion) with the same checks the kernel applies,
// refused entries returned as async events, the available/outstanding
// counts (an SRQ receive stops being outstanding when the user's head
// passes its event), the one-shot low watermark, connection setup between
// files (PSP, CR, accept, reject, disconnect), sends copied straight into
// the peer's posted buffers, and blocking EVD waits.  Not modelled: RDMA
// read/write, anything device-specific, and in-progress receives (a
// message lands the moment it is sent).
//
// Every ioctl is counted per request so tests can prove that a path made
// no system call.  One lock serializes the whole fake kernel.
#pragma once

#include <dat/udat.h>
#include <uapi/kdat_abi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
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

class Kernel {
public:
	Kernel();
	explicit Kernel(std::vector<FakeIa> ias);
	~Kernel();

	/* Make the library open this kernel instead of /dev/kdat. */
	void install();
	static void uninstall();

	/* ioctls seen, per request (KDAT_IOC_*), since the last reset */
	std::uint64_t ioctls(unsigned long request) const;
	std::uint64_t total_ioctls() const;
	void reset_counts();

	/* The next @request fails with -@err (ABI level) / returns @status. */
	void fail_next(unsigned long request, int err);
	void status_next(unsigned long request, DAT_RETURN status);
	/* Opening the device fails with @status (0: works again). */
	void fail_open(DAT_RETURN status);

	/* Open files (contexts) right now. */
	int files() const;
	/* Live objects over all files. */
	std::size_t objects() const;

	/* Every file's objects and queues, for a failing test's log. */
	std::string dump() const;

	/* Stop draining SRQ post rings on their own (tests of the ring). */
	void set_auto_drain(bool on);

	/* Internal: one lock for everything. */
	mutable std::mutex lock;
	std::condition_variable cv;

	std::unique_ptr<kdat::Device> open(DAT_RETURN *status);
	void add_file(File *f);
	void remove_file(File *f);
	const std::vector<FakeIa> &ias() const { return ias_; }
	std::vector<File *> &all_files() { return files_; }
	bool auto_drain() const { return auto_drain_; }
	void count(unsigned long request);
	bool injected(unsigned long request, int *err, DAT_RETURN *status);

private:
	std::vector<FakeIa> ias_;
	std::vector<File *> files_;
	std::map<unsigned long, std::uint64_t> counts_;
	std::map<unsigned long, int> fail_err_;
	std::map<unsigned long, DAT_RETURN> fail_status_;
	DAT_RETURN open_status_ = DAT_SUCCESS;
	bool auto_drain_ = true;
};

/* The current kernel (set by install()). */
Kernel *current();

} // namespace fake
