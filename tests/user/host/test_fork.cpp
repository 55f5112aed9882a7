// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// fork() while other threads are inside the library: the child must not
// inherit one of the library's process-wide mutexes held (the registry's,
// the device opener's, the ABI report's, the SRQ post channels' free
// list's, the object memory's), or its first dat_ia_open waits for ever.
// handles.cpp takes them around fork().
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "handles.hpp"

namespace {

/* The library's mutexes a test can reach (not the object memory's) */
std::vector<std::mutex *> library_mutexes()
{
	return { &kdat::registry_fork_lock(), &kdat::device_opener_fork_lock(),
		 &kdat::abi_report_fork_lock(),
		 &kdat::srq_channels_fork_lock() };
}

/* In the child: 0 if every library mutex is free (a held one: 1, or SIGALRM) */
int child_checks_locks()
{
	alarm(2);	/* the object memory's lock is only reachable blocking */
	for (std::mutex *m : library_mutexes()) {
		if (!m->try_lock())
			return 1;
		m->unlock();
	}
	kdat::detail::pool_free(kdat::detail::pool_alloc(64), 64);
	return 0;
}

/* Threads that take and drop the library's mutexes until destroyed. */
class Holders {
public:
	Holders()
	{
		for (std::mutex *m : library_mutexes())
			threads_.emplace_back([this, m] {
				while (!stop_.load(std::memory_order_relaxed)) {
					{
						std::lock_guard<std::mutex> g(*m);
					}
					std::this_thread::yield();
				}
			});
		threads_.emplace_back([this] {
			while (!stop_.load(std::memory_order_relaxed)) {
				kdat::detail::pool_free(
					kdat::detail::pool_alloc(64), 64);
				std::this_thread::yield();
			}
		});
	}
	~Holders()
	{
		stop_ = true;
		for (std::thread &t : threads_)
			t.join();
	}

private:
	std::atomic<bool> stop_{ false };
	std::vector<std::thread> threads_;
};

} // namespace

TEST(Fork, ChildInheritsNoLibraryMutexHeld)
{
	Holders holders;

	for (int i = 0; i < 200; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(child_checks_locks());
		int st = 0;
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			<< "fork " << i << ": the child inherited a held mutex";
	}
}
