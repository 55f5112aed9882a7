// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Allocation failure on demand (alloc_fail.cpp replaces operator new of
// the test binary, which links libdat in).  Per thread.  The fake device's
// own allocations never fail: it stands for the kernel, whose memory is
// not the library's.
#pragma once

namespace alloc_fail {

/* While on, every allocation fails. */
void every(bool on);
/* The allocation after the next @n fails, once (-1: none). */
void nth(long n);
/* Did the one nth() asked for fail since? */
bool fired();

/* No allocation fails while one lives (the fake device's entry points). */
struct Suspend {
	Suspend();
	~Suspend();
	Suspend(const Suspend &) = delete;
	Suspend &operator=(const Suspend &) = delete;
};

} // namespace alloc_fail
