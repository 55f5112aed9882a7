// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libdat.so.1 as an application sees it: only the exported C ABI.  The
// registry reads a dat.conf (DAT_OVERRIDE) that lists the built-in
// provider and a provider library, which it loads with dlopen(), calls
// dat_provider_init()/dat_provider_fini() of, and dispatches to.
#include <dat/udat.h>
#include <dat/dat_kdat.h>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

int env(const char *v)
{
	const char *s = std::getenv(v);
	return s ? std::atoi(s) : 0;
}

/* Set up before any test touches the registry (read once per process). */
struct Conf {
	std::string path;

	Conf()
	{
		char tmpl[] = "/tmp/databiXXXXXX";
		int fd = mkstemp(tmpl);
		if (fd < 0)
			std::abort();
		::close(fd);
		path = tmpl;
		std::ofstream f(path);
		f << "# abi test registry\n"
		  << "rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"rxe0\" \"\"\n"
		  << "test0 u1.2 threadsafe nondefault " DAT_TEST_PROVIDER
		     " test.1.0 \"hello params\" \"\"\n"
		  << "broken u1.2\n"
		  << "failopen0 u1.2 threadsafe nondefault " DAT_TEST_PROVIDER
		     " test.1.0 \"\" \"\"\n"
		  << "registers_extra0 u1.2 threadsafe nondefault "
		     DAT_TEST_PROVIDER " test.1.0 \"\" \"\"\n";
		setenv("DAT_OVERRIDE", path.c_str(), 1);
		/* no kernel module here: the built-in provider finds nothing */
		setenv("KDAT_DEVICE", "/nonexistent/kdat", 1);
	}
	~Conf() { unlink(path.c_str()); }
} conf;

/* Is @path loaded?  (Asking takes a reference: give it back.) */
bool loaded(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);

	if (h)
		dlclose(h);
	return h != nullptr;
}

/*
 * A function of the test provider, which the registry loaded: no
 * reference of our own stays (the registry's decides when it goes).
 */
template <class F>
F provider_fn(const char *name)
{
	void *dl = dlopen(DAT_TEST_PROVIDER, RTLD_NOW | RTLD_NOLOAD);

	if (!dl)
		return nullptr;
	auto f = (F)dlsym(dl, name);
	dlclose(dl);
	return f;
}

DAT_RETURN E(DAT_UINT32 t, DAT_UINT32 s = 0)
{
	return DAT_ERROR(t, s);
}

} // namespace

TEST(Abi, OnlyTheDatApiIsExported)
{
	void *self = dlopen("libdat.so.1", RTLD_NOW | RTLD_NOLOAD);
	ASSERT_NE(nullptr, self);
	EXPECT_NE(nullptr, dlsym(self, "dat_srq_post_recv"));
	EXPECT_NE(nullptr, dlsym(self, "dat_strerror"));
	EXPECT_NE(nullptr, dlsym(self, "dat_kdat_get_fd"));
	EXPECT_EQ(nullptr, dlsym(self, "_ZN4kdat7handlesEv"));	/* kdat::handles() */
	EXPECT_EQ(nullptr, dlsym(self, "dat_provider_init"));
	dlclose(self);
}

TEST(Abi, ListsTheGoodEntriesOfDatConf)
{
	DAT_PROVIDER_INFO a, b, c, d, *list[4] = { &a, &b, &c, &d };
	DAT_COUNT n = 0;

	::testing::internal::CaptureStderr();
	ASSERT_EQ(DAT_SUCCESS, dat_registry_list_providers(4, &n, list));
	std::string err = ::testing::internal::GetCapturedStderr();
	ASSERT_EQ(4, n);
	EXPECT_STREQ("rxe0", a.ia_name);
	EXPECT_STREQ("test0", b.ia_name);
	EXPECT_STREQ("failopen0", c.ia_name);
	EXPECT_STREQ("registers_extra0", d.ia_name);
	EXPECT_EQ(DAT_TRUE, b.is_thread_safe);
	/* the registry was read once, by this test or an earlier one */
	if (!err.empty()) {
		EXPECT_NE(std::string::npos, err.find(":4: expected 8 fields"));
	}
}

TEST(Abi, LoadsAProviderLibraryAndDispatchesToIt)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_PZ_HANDLE pz;
	DAT_PROVIDER_ATTR pa;
	DAT_HANDLE_TYPE t;
	int inits = env("TEST_PROVIDER_INITS");
	int finis = env("TEST_PROVIDER_FINIS");

	ASSERT_EQ(DAT_SUCCESS, dat_ia_open((DAT_NAME_PTR) "test0", 16, &async, &ia));
	EXPECT_EQ(inits + 1, env("TEST_PROVIDER_INITS"));
	EXPECT_STREQ("hello params", std::getenv("TEST_PROVIDER_PARAMS"));
	EXPECT_EQ(nullptr, std::getenv("TEST_PROVIDER_ADD_FAILED"));
	EXPECT_TRUE(loaded(DAT_TEST_PROVIDER));

	ASSERT_EQ(DAT_SUCCESS, dat_ia_query(ia, nullptr, 0, nullptr,
					    DAT_PROVIDER_FIELD_ALL, &pa));
	EXPECT_STREQ("test", pa.provider_name);
	ASSERT_EQ(DAT_SUCCESS, dat_pz_create(ia, &pz));
	ASSERT_EQ(DAT_SUCCESS, dat_get_handle_type(pz, &t));
	EXPECT_EQ(DAT_HANDLE_TYPE_PZ, t);
	/* the provider did not fill srq_create_func */
	DAT_SRQ_ATTR sa = { 8, 1, 0 };
	DAT_SRQ_HANDLE srq;
	EXPECT_EQ(E(DAT_NOT_IMPLEMENTED), dat_srq_create(ia, pz, &sa, &srq));
	/* the extension is the built-in provider's only */
	int fd;
	EXPECT_EQ(E(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA),
		  dat_kdat_get_fd(ia, &fd));
	int frees = env("TEST_PROVIDER_PZ_FREES");
	ASSERT_EQ(DAT_SUCCESS, dat_pz_free(pz));
	EXPECT_EQ(frees + 1, env("TEST_PROVIDER_PZ_FREES"));
	EXPECT_EQ(E(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ), dat_pz_free(pz));

	ASSERT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	/* the last IA of the name: fini, then the library goes */
	EXPECT_EQ(finis + 1, env("TEST_PROVIDER_FINIS"));
	EXPECT_FALSE(loaded(DAT_TEST_PROVIDER));
	EXPECT_EQ(E(DAT_INVALID_HANDLE), dat_get_handle_type(async, &t));

	/* and it comes back on the next open */
	async = DAT_HANDLE_NULL;
	ASSERT_EQ(DAT_SUCCESS, dat_ia_open((DAT_NAME_PTR) "test0", 16, &async, &ia));
	EXPECT_EQ(inits + 2, env("TEST_PROVIDER_INITS"));
	ASSERT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	EXPECT_EQ(finis + 2, env("TEST_PROVIDER_FINIS"));
}

/*
 * A dat_ia_close in one thread while another thread's call runs in the
 * same IA's provider: the close finalizes the name, but the library stays
 * mapped until the call has returned, and goes then.  Without that the
 * release below returns into unmapped code.  The provider holds the query
 * until the test releases it (test_provider.c); nothing sleeps.
 */
TEST(Abi, ACallIntoAProviderKeepsItsLibraryLoadedThroughTheClose)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	int finis = env("TEST_PROVIDER_FINIS");

	ASSERT_EQ(DAT_SUCCESS, dat_ia_open((DAT_NAME_PTR) "test0", 16, &async, &ia));
	auto hold = provider_fn<void (*)(const char *, int)>(
		"test_provider_hold");
	auto wait_held = provider_fn<void (*)()>("test_provider_wait_held");
	auto release = provider_fn<void (*)()>("test_provider_release");
	ASSERT_TRUE(hold && wait_held && release);

	hold("query", 2);
	DAT_RETURN qr = DAT_INTERNAL_ERROR;
	DAT_PROVIDER_ATTR pa;
	std::thread t([&] {
		qr = dat_ia_query(ia, nullptr, 0, nullptr,
				  DAT_PROVIDER_FIELD_ALL, &pa);
	});
	/* (a query that never reaches the provider is ctest's TIMEOUT) */
	wait_held();
	const DAT_RETURN cr = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	/*
	 * Still loaded?  Then hold it ourselves across release(), which runs
	 * in the library too: the query's return cannot unmap it under us.
	 */
	void *ours = dlopen(DAT_TEST_PROVIDER, RTLD_NOW | RTLD_NOLOAD);
	if (!ours) {
		t.detach();	/* parked in code that is gone */
		FAIL() << "the provider was unloaded under a running call";
	}
	release();
	t.join();
	EXPECT_EQ(DAT_SUCCESS, cr);
	EXPECT_EQ(finis + 1, env("TEST_PROVIDER_FINIS"));
	EXPECT_EQ(DAT_SUCCESS, qr);
	EXPECT_STREQ("test", pa.provider_name);
	/* the call's pin was the registry's last: ours is the only one left */
	dlclose(ours);
	EXPECT_FALSE(loaded(DAT_TEST_PROVIDER));
}

/*
 * An open whose IA open fails finalizes the name it loaded, and the
 * library goes in that call: its unloading (a destructor that calls back
 * into the registry) runs with no registry lock held.  A lock held
 * across the dlclose() is a deadlock: ctest's TIMEOUT.
 */
TEST(Abi, ALibraryUnloadedByAFailedOpenMayCallTheRegistry)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;

	setenv("TEST_PROVIDER_UNLOAD_CALLS_BACK", "1", 1);
	unsetenv("TEST_PROVIDER_UNLOAD_LIST");
	EXPECT_EQ(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY),
		  dat_ia_open((DAT_NAME_PTR) "failopen0", 16, &async, &ia));
	unsetenv("TEST_PROVIDER_UNLOAD_CALLS_BACK");
	EXPECT_FALSE(loaded(DAT_TEST_PROVIDER));
	EXPECT_STREQ("ok", std::getenv("TEST_PROVIDER_UNLOAD_LIST"));
}

/*
 * A table a provider's init registers under a name beyond its dat.conf
 * names, and leaves registered after its fini, keeps the library loaded:
 * an open of that name calls into it after the dat.conf name is gone.
 * The library goes when that registration is removed.
 */
TEST(Abi, ATableRegisteredBeyondDatConfKeepsItsLibrary)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_PROVIDER_ATTR pa;

	ASSERT_EQ(DAT_SUCCESS,
		  dat_ia_open((DAT_NAME_PTR) "registers_extra0", 16, &async, &ia));
	auto table = provider_fn<DAT_PROVIDER *(*)()>("test_provider_table");
	auto extra = provider_fn<const DAT_PROVIDER_INFO *(*)()>(
		"test_provider_extra_info");
	ASSERT_TRUE(table && extra);
	DAT_PROVIDER *p = table();
	const DAT_PROVIDER_INFO x = *extra();	/* a copy: it lives there */
	ASSERT_STREQ("extra0", x.ia_name);

	ASSERT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	/* registers_extra0 is finalized; its init's "extra0" is not */
	ASSERT_TRUE(loaded(DAT_TEST_PROVIDER))
		<< "unloaded under a table still registered";
	async = DAT_HANDLE_NULL;
	ASSERT_EQ(DAT_SUCCESS,
		  dat_ia_open((DAT_NAME_PTR) "extra0", 16, &async, &ia));
	EXPECT_EQ(DAT_SUCCESS, dat_ia_query(ia, nullptr, 0, nullptr,
					    DAT_PROVIDER_FIELD_ALL, &pa));
	EXPECT_STREQ("test", pa.provider_name);
	ASSERT_EQ(DAT_SUCCESS, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	EXPECT_TRUE(loaded(DAT_TEST_PROVIDER));
	/* the registration was the last holder */
	ASSERT_EQ(DAT_SUCCESS, dat_registry_remove_provider(p, &x));
	EXPECT_FALSE(loaded(DAT_TEST_PROVIDER));
}

TEST(Abi, BuiltinProviderWithoutTheKernelModule)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;

	EXPECT_EQ(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		  dat_ia_open((DAT_NAME_PTR) "rxe0", 16, &async, &ia));
	EXPECT_EQ(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		  dat_ia_open((DAT_NAME_PTR) "nosuch", 16, &async, &ia));
}

TEST(Abi, BadHandlesAndStrerror)
{
	DAT_EVENT e;
	DAT_LMR_TRIPLET t = {};
	DAT_DTO_COOKIE c = {};
	const char *major, *minor;

	EXPECT_EQ(E(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ),
		  dat_srq_post_recv(nullptr, 1, &t, c));
	EXPECT_EQ(E(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_ASYNC),
		  dat_evd_dequeue(&e, &e));
	EXPECT_EQ(E(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA),
		  dat_ia_close(nullptr, DAT_CLOSE_ABRUPT_FLAG));
	ASSERT_EQ(DAT_SUCCESS,
		  dat_strerror(E(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ),
			       &major, &minor));
	EXPECT_STREQ("DAT_INVALID_HANDLE", major);
	EXPECT_STREQ("DAT_INVALID_HANDLE_SRQ", minor);
}
