// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// fork() while other threads are inside the library: the child must not
// inherit one of the library's process-wide mutexes held (the registry's,
// the SRQ post channels' free list's, the object memory's), or its first
// dat_ia_open waits for ever.  handles.cpp takes them around fork().
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "handles.hpp"

namespace {

/* In the child: 0 if every library mutex is free (a held one: 1, or SIGALRM) */
int child_checks_locks()
{
	alarm(20);	/* the object memory's lock is only reachable blocking */
	std::mutex *ms[] = { &kdat::registry_fork_lock(),
			     &kdat::srq_channels_fork_lock() };
	for (std::mutex *m : ms) {
		if (!m->try_lock())
			return 1;
		m->unlock();
	}
	kdat::detail::pool_free(kdat::detail::pool_alloc(64), 64);
	return 0;
}

} // namespace

TEST(Fork, ChildInheritsNoLibraryMutexHeld)
{
	std::atomic<bool> stop{ false };
	auto hold = [&stop](std::mutex &m) {
		while (!stop.load(std::memory_order_relaxed))
			std::lock_guard<std::mutex> g(m);
	};
	std::thread a(hold, std::ref(kdat::registry_fork_lock()));
	std::thread b(hold, std::ref(kdat::srq_channels_fork_lock()));
	std::thread c([&stop] {
		while (!stop.load(std::memory_order_relaxed))
			kdat::detail::pool_free(kdat::detail::pool_alloc(64),
						64);
	});
	int failed = 0;

	for (int i = 0; i < 200; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(child_checks_locks());
		int st = 0;
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	stop = true;
	a.join();
	b.join();
	c.join();
	EXPECT_EQ(0, failed) << "children that inherited a held mutex";
}
