// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The registry's lock against a provider library (libdat.so.1 as an
// application sees it, the test provider loaded by dat.conf): it is not
// held across dlopen, dat_provider_init or a provider's IA open, so a
// provider may call back into the registry and a slow one holds up no
// other thread.  A lock held across them deadlocks these tests; ctest's
// TIMEOUT turns that into a failure.  Nothing here sleeps: the provider
// holds a call until the test releases it (test_provider.c).
#include <dat/udat.h>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

struct Conf {
	std::string path;

	Conf()
	{
		char tmpl[] = "/tmp/datloaderXXXXXX";
		int fd = mkstemp(tmpl);
		if (fd < 0)
			std::abort();
		::close(fd);
		path = tmpl;
		std::ofstream f(path);
		for (const char *n : { "slowopen0", "slowinit0", "fast0",
				       "callback0" })
			f << n << " u1.2 threadsafe nondefault " DAT_TEST_PROVIDER
			     " test.1.0 \"\" \"\"\n";
		setenv("DAT_OVERRIDE", path.c_str(), 1);
		setenv("KDAT_DEVICE", "/nonexistent/kdat", 1);
	}
	~Conf() { unlink(path.c_str()); }
} conf;

/* The provider's hold controls; holding it loaded keeps its state. */
struct Provider {
	void *dl;
	void (*hold)(const char *name, int in_init);
	void (*wait_held)();
	void (*release)();
	void (*forget_after_fork)();

	Provider()
	{
		dl = dlopen(DAT_TEST_PROVIDER, RTLD_NOW | RTLD_LOCAL);
		if (!dl)
			std::abort();
		hold = (decltype(hold))dlsym(dl, "test_provider_hold");
		wait_held = (decltype(wait_held))dlsym(dl,
						      "test_provider_wait_held");
		release = (decltype(release))dlsym(dl, "test_provider_release");
		forget_after_fork = (decltype(forget_after_fork))dlsym(
			dl, "test_provider_forget_after_fork");
		if (!hold || !wait_held || !release || !forget_after_fork)
			std::abort();
	}
} provider;

DAT_RETURN open_ia(const char *name, DAT_IA_HANDLE *ia)
{
	DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

	return dat_ia_open((DAT_NAME_PTR)name, 4, &evd, ia);
}

/* While @held is held inside the provider, the registry still works. */
void registry_works_meanwhile(const char *held)
{
	DAT_PROVIDER_INFO i[8], *l[8];
	DAT_COUNT n = 0;
	DAT_IA_HANDLE ia;

	for (int k = 0; k < 8; k++)
		l[k] = &i[k];
	ASSERT_EQ(DAT_SUCCESS, dat_registry_list_providers(8, &n, l));
	EXPECT_EQ(4, n);
	/* another IA of the same library: loaded, initialized, opened */
	ASSERT_EQ(DAT_SUCCESS, open_ia("fast0", &ia));
	ASSERT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	/* a provider registered and removed at run time */
	DAT_PROVIDER p = {};
	DAT_PROVIDER_INFO pi = {};
	std::strcpy(pi.ia_name, "runtime0");
	pi.dapl_version_major = 1;
	pi.dapl_version_minor = 2;
	pi.is_thread_safe = DAT_TRUE;
	EXPECT_EQ(DAT_SUCCESS, dat_registry_add_provider(&p, &pi));
	EXPECT_EQ(DAT_SUCCESS, dat_registry_remove_provider(&p, &pi));
	(void)held;
}

} // namespace

TEST(Loader, ASlowIaOpenHoldsUpNoOtherThread)
{
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	DAT_RETURN r = DAT_INTERNAL_ERROR;

	provider.hold("slowopen0", 0);
	std::thread t([&] { r = open_ia("slowopen0", &ia); });
	provider.wait_held();
	registry_works_meanwhile("slowopen0");
	provider.release();
	t.join();
	ASSERT_EQ(DAT_SUCCESS, r);
	EXPECT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(Loader, ASlowProviderInitHoldsUpNoOtherThread)
{
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	DAT_RETURN r = DAT_INTERNAL_ERROR;

	provider.hold("slowinit0", 1);
	std::thread t([&] { r = open_ia("slowinit0", &ia); });
	provider.wait_held();
	registry_works_meanwhile("slowinit0");
	provider.release();
	t.join();
	ASSERT_EQ(DAT_SUCCESS, r);
	EXPECT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(Loader, ASecondOpenOfANameBeingInitializedWaitsForIt)
{
	DAT_IA_HANDLE a = DAT_HANDLE_NULL, b = DAT_HANDLE_NULL;
	DAT_RETURN ra = DAT_INTERNAL_ERROR, rb = DAT_INTERNAL_ERROR;
	int inits = std::atoi(std::getenv("TEST_PROVIDER_INITS") ?: "0");

	provider.hold("slowinit0", 1);
	std::thread ta([&] { ra = open_ia("slowinit0", &a); });
	provider.wait_held();
	/* may wait for the init above: it must not init the name twice */
	std::thread tb([&] { rb = open_ia("slowinit0", &b); });
	provider.release();
	ta.join();
	tb.join();
	ASSERT_EQ(DAT_SUCCESS, ra);
	ASSERT_EQ(DAT_SUCCESS, rb);
	EXPECT_NE(a, b);
	EXPECT_EQ(inits + 1, std::atoi(std::getenv("TEST_PROVIDER_INITS")));
	EXPECT_EQ(nullptr, std::getenv("TEST_PROVIDER_ADD_FAILED"));
	EXPECT_EQ(DAT_SUCCESS, dat_ia_close(a, DAT_CLOSE_ABRUPT_FLAG));
	EXPECT_EQ(DAT_SUCCESS, dat_ia_close(b, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * fork() while another thread is inside a provider's dat_provider_init:
 * that thread stays in the parent, so the child must not wait for its
 * init to end (the registry forgets the name's init in the child,
 * Registry::forget_after_fork) but initialize and open the name itself.
 * A child that waits is killed by its alarm and fails the test.
 */
TEST(Loader, AChildForkedDuringAProviderInitOpensThatName)
{
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	DAT_RETURN r = DAT_INTERNAL_ERROR;
	int st = 0;

	provider.hold("slowinit0", 1);
	std::thread t([&] { r = open_ia("slowinit0", &ia); });
	provider.wait_held();
	pid_t pid = fork();
	if (pid == 0) {
		DAT_IA_HANDLE c = DAT_HANDLE_NULL;

		alarm(10);
		provider.forget_after_fork();
		if (open_ia("slowinit0", &c) != DAT_SUCCESS)
			_exit(1);
		_exit(dat_ia_close(c, DAT_CLOSE_ABRUPT_FLAG) == DAT_SUCCESS ?
			      0 : 2);
	}
	if (pid > 0) {
		EXPECT_EQ(pid, waitpid(pid, &st, 0));
	}
	provider.release();
	t.join();
	ASSERT_LT(0, pid);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		<< "the child's open: "
		<< (WIFSIGNALED(st) ? "killed by signal " : "exit ")
		<< (WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	ASSERT_EQ(DAT_SUCCESS, r);
	EXPECT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(Loader, ProviderInitMayCallBackIntoTheRegistry)
{
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;

	unsetenv("TEST_PROVIDER_CALLBACK_LIST");
	unsetenv("TEST_PROVIDER_CALLBACK_OPEN");
	ASSERT_EQ(DAT_SUCCESS, open_ia("callback0", &ia));
	EXPECT_STREQ("ok", std::getenv("TEST_PROVIDER_CALLBACK_LIST"));
	EXPECT_STREQ("ok", std::getenv("TEST_PROVIDER_CALLBACK_OPEN"));
	EXPECT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}
