// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// dat.conf parsing and the registry: which lines make entries, which are
// skipped (and what stderr says about them), how dat_ia_open matches a
// name, version and thread safety, and providers registered at run time.
#include <fstream>
#include <unistd.h>

#include "test_util.hpp"

using kdat::parse_dat_conf;
using kdat::parse_dat_conf_line;

namespace {

kdat::ConfEntry parse_ok(const std::string &line)
{
	std::string why;
	auto e = parse_dat_conf_line(line, &why);

	EXPECT_TRUE(e.has_value()) << line << ": " << why;
	EXPECT_EQ("", why);
	return e.value_or(kdat::ConfEntry{});
}

std::string parse_bad(const std::string &line)
{
	std::string why;
	auto e = parse_dat_conf_line(line, &why);

	EXPECT_FALSE(e.has_value()) << line;
	EXPECT_NE("", why) << line;
	return why;
}

} // namespace

TEST(DatConf, ParsesEveryField)
{
	auto e = parse_ok("rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 "
			  "\"rxe0 1\" \"\"");

	EXPECT_EQ("rxe0", e.ia_name);
	EXPECT_EQ(1u, e.dapl_major);
	EXPECT_EQ(2u, e.dapl_minor);
	EXPECT_TRUE(e.thread_safe);
	EXPECT_TRUE(e.is_default);
	EXPECT_EQ("libdat.so.1", e.library);
	EXPECT_EQ("kdat", e.vendor);
	EXPECT_EQ(1u, e.provider_major);
	EXPECT_EQ(0u, e.provider_minor);
	EXPECT_EQ("rxe0 1", e.ia_params);
	EXPECT_EQ("", e.platform_params);
	EXPECT_EQ("rxe0", kdat::kernel_ia_name(e));

	DAT_PROVIDER_INFO i = e.info();
	EXPECT_STREQ("rxe0", i.ia_name);
	EXPECT_EQ(1u, i.dapl_version_major);
	EXPECT_EQ(2u, i.dapl_version_minor);
	EXPECT_EQ(DAT_TRUE, i.is_thread_safe);
}

TEST(DatConf, NonThreadSafeNonDefaultDottedVendorTabsAndComment)
{
	auto e = parse_ok("\tofa-v2-mlx4_0-1\tu2.0 nonthreadsafe nondefault "
			  "/usr/lib/libdaplofa.so.2 ofa.dapl.2.17 "
			  "\"mlx4_0 1\" \"\"   # trailing comment");

	EXPECT_EQ("ofa-v2-mlx4_0-1", e.ia_name);
	EXPECT_EQ(2u, e.dapl_major);
	EXPECT_EQ(0u, e.dapl_minor);
	EXPECT_FALSE(e.thread_safe);
	EXPECT_FALSE(e.is_default);
	EXPECT_EQ("/usr/lib/libdaplofa.so.2", e.library);
	EXPECT_EQ("ofa.dapl", e.vendor);
	EXPECT_EQ(2u, e.provider_major);
	EXPECT_EQ(17u, e.provider_minor);
	EXPECT_EQ("mlx4_0 1", e.ia_params);
}

TEST(DatConf, EmptyIaParamsMeanTheIaName)
{
	auto e = parse_ok("rxe1 u1.2 threadsafe default libdat.so kdat.1.0 \"\" \"\"");

	EXPECT_EQ("rxe1", kdat::kernel_ia_name(e));
}

TEST(DatConf, BlankAndCommentLinesAreNotErrors)
{
	for (const char *l : { "", "   ", "\t", "# a comment",
			       "   # indented comment" }) {
		std::string why = "x";
		EXPECT_FALSE(parse_dat_conf_line(l, &why).has_value());
		EXPECT_EQ("", why) << "'" << l << "'";
	}
}

TEST(DatConf, MalformedLinesSayWhy)
{
	const std::string tail = " threadsafe default libdat.so.1 kdat.1.0 \"\" \"\"";

	EXPECT_EQ("expected 8 fields, found 3",
		  parse_bad("rxe0 u1.2 threadsafe"));
	EXPECT_EQ("expected 8 fields, found 9",
		  parse_bad("rxe0 u1.2" + tail + " extra"));
	EXPECT_NE(std::string::npos, parse_bad("rxe0 1.2" + tail).find("API"));
	EXPECT_NE(std::string::npos, parse_bad("rxe0 u1" + tail).find("API"));
	EXPECT_NE(std::string::npos, parse_bad("rxe0 k1.2" + tail).find("API"));
	EXPECT_NE(std::string::npos, parse_bad("rxe0 ux.2" + tail).find("API"));
	EXPECT_NE(std::string::npos, parse_bad("rxe0 u1.2b" + tail).find("API"));
	EXPECT_NE(std::string::npos,
		  parse_bad("rxe0 u1.2 safe default libdat.so.1 kdat.1.0 \"\" \"\"")
			  .find("thread safety"));
	EXPECT_NE(std::string::npos,
		  parse_bad("rxe0 u1.2 threadsafe yes libdat.so.1 kdat.1.0 \"\" \"\"")
			  .find("default"));
	for (const char *v : { "kdat", "kdat.1", ".1.0", "kdat.x.0", "kdat.1." })
		EXPECT_NE(std::string::npos,
			  parse_bad(std::string("rxe0 u1.2 threadsafe default "
						"libdat.so.1 ") +
				    v + " \"\" \"\"")
				  .find("provider version"))
			<< v;
	EXPECT_EQ("unterminated quoted string",
		  parse_bad("rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"\" \"rxe0"));
	EXPECT_EQ("ia params and platform params must be quoted",
		  parse_bad("rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 rxe0 \"\""));
	EXPECT_EQ("field 1 must not be quoted",
		  parse_bad("\"rxe0\" u1.2" + tail));
	EXPECT_EQ("quote inside a word",
		  parse_bad("rx\"e0 u1.2" + tail));
	EXPECT_EQ("text right after a quoted string",
		  parse_bad("rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"a\"b \"\""));
	EXPECT_EQ("IA name too long",
		  parse_bad(std::string(DAT_NAME_MAX_LENGTH, 'a') + " u1.2" + tail));
}

TEST(DatConf, FileKeepsGoodLinesAndNumbersTheBadOnes)
{
	auto p = parse_dat_conf("# header\n"
				"rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"\" \"\"\n"
				"\n"
				"broken line\n"
				"rxe1 u1.2 nonthreadsafe nondefault libdat.so.1 kdat.1.0 \"rxe1\" \"\"\n"
				"rxe2 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"oops\n"
				"rxe3 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"\" \"\"",
				"test.conf");

	ASSERT_EQ(3u, p.entries.size());
	EXPECT_EQ("rxe0", p.entries[0].ia_name);
	EXPECT_EQ(2, p.entries[0].line);
	EXPECT_EQ("rxe1", p.entries[1].ia_name);
	EXPECT_EQ(5, p.entries[1].line);
	EXPECT_EQ("rxe3", p.entries[2].ia_name);
	EXPECT_EQ(7, p.entries[2].line);
	ASSERT_EQ(2u, p.errors.size());
	EXPECT_EQ("test.conf:4: expected 8 fields, found 2; line skipped",
		  p.errors[0]);
	EXPECT_EQ("test.conf:6: unterminated quoted string; line skipped",
		  p.errors[1]);
}

TEST(DatConf, ShippedFileListsRxe0AndRxe1ThroughLibdat)
{
	std::ifstream f(DAT_SHIPPED_CONF);
	std::stringstream ss;
	ss << f.rdbuf();
	auto p = parse_dat_conf(ss.str(), "dat.conf");

	EXPECT_TRUE(p.errors.empty());
	ASSERT_EQ(2u, p.entries.size());
	EXPECT_EQ("rxe0", p.entries[0].ia_name);
	EXPECT_EQ("rxe1", p.entries[1].ia_name);
	for (auto &e : p.entries) {
		EXPECT_TRUE(kdat::is_builtin_library(e.library));
		EXPECT_EQ(e.ia_name, kdat::kernel_ia_name(e));
		EXPECT_TRUE(e.thread_safe);
	}
}

TEST(DatConf, PathComesFromDatOverride)
{
	unsetenv("DAT_OVERRIDE");
	EXPECT_EQ("/etc/dat.conf", kdat::dat_conf_path());
	setenv("DAT_OVERRIDE", "", 1);
	EXPECT_EQ("/etc/dat.conf", kdat::dat_conf_path());
	setenv("DAT_OVERRIDE", "/tmp/x.conf", 1);
	EXPECT_EQ("/tmp/x.conf", kdat::dat_conf_path());
	unsetenv("DAT_OVERRIDE");
}

TEST(DatConf, BuiltinLibraryNames)
{
	EXPECT_TRUE(kdat::is_builtin_library("libdat.so"));
	EXPECT_TRUE(kdat::is_builtin_library("libdat.so.1"));
	EXPECT_TRUE(kdat::is_builtin_library("/usr/lib/x86_64-linux-gnu/libdat.so.1.0.0"));
	EXPECT_FALSE(kdat::is_builtin_library("libdaplofa.so.2"));
	EXPECT_FALSE(kdat::is_builtin_library("libdat2.so.2"));
	EXPECT_FALSE(kdat::is_builtin_library("/nonexistent/libfoo.so"));
}

/* ------------------------------------------------------------------ */
/* The registry through the C API                                       */

class Registry : public FakeKernelTest {
protected:
	std::string write_conf(const std::string &text)
	{
		char tmpl[] = "/tmp/datconfXXXXXX";
		int fd = mkstemp(tmpl);
		EXPECT_GE(fd, 0);
		EXPECT_EQ((ssize_t)text.size(),
			  write(fd, text.data(), text.size()));
		::close(fd);
		files.push_back(tmpl);
		setenv("DAT_OVERRIDE", tmpl, 1);
		kdat::registry_reset();
		return tmpl;
	}

	std::vector<DAT_PROVIDER_INFO> list()
	{
		DAT_COUNT n = 0;
		EXPECT_OK(dat_registry_list_providers(0, &n, nullptr));
		std::vector<DAT_PROVIDER_INFO> v(n);
		std::vector<DAT_PROVIDER_INFO *> p;
		for (auto &i : v)
			p.push_back(&i);
		DAT_COUNT got = 0;
		if (n) {
			EXPECT_OK(dat_registry_list_providers(n, &got, p.data()));
		}
		EXPECT_EQ(n, got);
		return v;
	}

	void TearDown() override
	{
		for (auto &f : files)
			unlink(f.c_str());
		FakeKernelTest::TearDown();
	}

	std::vector<std::string> files;
};

TEST_F(Registry, MalformedLinesAreSkippedWithAMessageOnStderr)
{
	std::string path = write_conf(
		"rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"\" \"\"\n"
		"bogus u1.2 threadsafe\n");

	::testing::internal::CaptureStderr();
	auto v = list();
	std::string err = ::testing::internal::GetCapturedStderr();

	/* rxe0 from dat.conf, then rxe1 as the kernel lists it; no "bogus" */
	ASSERT_EQ(2u, v.size());
	EXPECT_STREQ("rxe0", v[0].ia_name);
	EXPECT_STREQ("rxe1", v[1].ia_name);
	EXPECT_EQ("libdat: " + path +
			  ":2: expected 8 fields, found 3; line skipped\n",
		  err);
}

TEST_F(Registry, ListArguments)
{
	DAT_COUNT n = -1;
	DAT_PROVIDER_INFO one, *p[1] = { &one };
	DAT_PROVIDER_INFO *nullp[2] = { nullptr, nullptr };

	EXPECT_DAT(ARG(1), dat_registry_list_providers(-1, &n, p));
	EXPECT_DAT(ARG(2), dat_registry_list_providers(1, nullptr, p));
	EXPECT_DAT(ARG(3), dat_registry_list_providers(1, &n, nullptr));
	EXPECT_DAT(ARG(3), dat_registry_list_providers(2, &n, nullp));
	/* max_to_return 0 only counts */
	EXPECT_OK(dat_registry_list_providers(0, &n, nullptr));
	EXPECT_EQ(2, n);
	/* fewer slots than entries: fills what it can */
	EXPECT_OK(dat_registry_list_providers(1, &n, p));
	EXPECT_EQ(1, n);
	EXPECT_STREQ("rxe0", one.ia_name);
}

TEST_F(Registry, WithoutDatConfTheKernelIasAreListed)
{
	setenv("DAT_OVERRIDE", "/nonexistent/dat.conf", 1);
	kdat::registry_reset();
	::testing::internal::CaptureStderr();
	auto v = list();
	std::string err = ::testing::internal::GetCapturedStderr();

	ASSERT_EQ(2u, v.size());
	EXPECT_STREQ("rxe0", v[0].ia_name);
	EXPECT_STREQ("rxe1", v[1].ia_name);
	EXPECT_NE(std::string::npos, err.find("cannot read DAT_OVERRIDE"));

	/* and any of them opens */
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;
	EXPECT_OK(dat_ia_open((DAT_NAME_PTR) "rxe1", 8, &async, &ia));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	async = nullptr;
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   dat_ia_open((DAT_NAME_PTR) "mlx5_0", 8, &async, &ia));
}

TEST_F(Registry, ConfEntryNamesTheKernelIa)
{
	write_conf("fast u1.2 threadsafe default libdat.so.1 kdat.1.0 \"rxe1\" \"\"\n");
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;
	DAT_IA_ATTR a;

	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "fast", 8, &async, &ia));
	EXPECT_OK(dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &a, 0, nullptr));
	EXPECT_STREQ("rxe1", a.adapter_name);
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	/* the kernel IA under its own name is offered too (not in dat.conf) */
	async = nullptr;
	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "rxe1", 8, &async, &ia));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

/* A name neither dat.conf nor the kernel knows is not registered by trying. */
TEST_F(Registry, FailedOpenOfAnUnknownNameRegistersNothing)
{
	write_conf("rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"rxe0\" \"\"\n");
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;

	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   dat_ia_open((DAT_NAME_PTR) "typo0", 8, &async, &ia));
	auto v = list();
	ASSERT_EQ(2u, v.size());
	EXPECT_STREQ("rxe0", v[0].ia_name);
	EXPECT_STREQ("rxe1", v[1].ia_name);
}

/*
 * A dat.conf that lists some devices does not hide the others: what the
 * kernel module lists and dat.conf does not name is listed and opens
 * under its own name; a name neither knows is DAT_NAME_NOT_REGISTERED.
 */
TEST_F(Registry, KernelIasDatConfDoesNotNameAreOfferedToo)
{
	write_conf("rxe0 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"rxe0\" \"\"\n");
	auto v = list();

	ASSERT_EQ(2u, v.size());
	EXPECT_STREQ("rxe0", v[0].ia_name);
	EXPECT_STREQ("rxe1", v[1].ia_name);
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;
	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "rxe1", 8, &async, &ia));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	async = nullptr;
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   dat_ia_open((DAT_NAME_PTR) "mlx5_0", 8, &async, &ia));
}

TEST_F(Registry, OpenMatchesVersionAndThreadSafety)
{
	write_conf("ts u1.2 threadsafe default libdat.so.1 kdat.1.0 \"rxe0\" \"\"\n"
		   "nts u1.2 nonthreadsafe default libdat.so.1 kdat.1.0 \"rxe0\" \"\"\n");
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;

	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_MAJOR_NOT_FOUND),
		   dat_ia_openv((DAT_NAME_PTR) "ts", 8, &async, &ia, 2, 0,
				DAT_TRUE));
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_MINOR_NOT_FOUND),
		   dat_ia_openv((DAT_NAME_PTR) "ts", 8, &async, &ia, 1, 3,
				DAT_TRUE));
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_THREAD_SAFETY_NOT_FOUND),
		   dat_ia_openv((DAT_NAME_PTR) "nts", 8, &async, &ia, 1, 2,
				DAT_TRUE));
	/* an older minor and a non-thread-safe request are served */
	ASSERT_OK(dat_ia_openv((DAT_NAME_PTR) "ts", 8, &async, &ia, 1, 1,
			       DAT_FALSE));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	async = nullptr;
	ASSERT_OK(dat_ia_openv((DAT_NAME_PTR) "nts", 8, &async, &ia, 1, 2,
			       DAT_FALSE));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST_F(Registry, OpenArguments)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;

	EXPECT_DAT(ARG(1), dat_ia_open(nullptr, 8, &async, &ia));
	EXPECT_DAT(ARG(3), dat_ia_open((DAT_NAME_PTR) "rxe0", 8, nullptr, &ia));
	EXPECT_DAT(ARG(4), dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, nullptr));
	EXPECT_DAT(ARG(2), dat_ia_open((DAT_NAME_PTR) "rxe0", 0, &async, &ia));
	async = DAT_EVD_ASYNC_EXISTS;
	EXPECT_DAT(E(DAT_MODEL_NOT_SUPPORTED),
		   dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
	async = (DAT_EVD_HANDLE)&ia;
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_EVD_ASYNC),
		   dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
	/* the device cannot be opened: the open file's errno decides */
	kernel.fail_open(E(DAT_PRIVILEGES_VIOLATION));
	async = nullptr;
	EXPECT_DAT(E(DAT_PRIVILEGES_VIOLATION),
		   dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
	kernel.fail_open(DAT_SUCCESS);
	/* the kernel's status passes through unchanged */
	kernel.status_next(KDAT_IOC_IA_OPEN,
			   E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY));
	EXPECT_DAT(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY),
		   dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
	kernel.fail_next(KDAT_IOC_IA_OPEN, ENOTTY);
	EXPECT_DAT(E(DAT_INTERNAL_ERROR),
		   dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
}

/* ------------------------------------------------------------------ */
/* A provider registered at run time (as dat_provider_init would)       */

namespace {

struct TestObject {
	DAT_PROVIDER *provider;
	int kind;
};

DAT_PROVIDER test_provider;
TestObject test_ia = { &test_provider, 1 }, test_evd = { &test_provider, 2 },
	   test_pz = { &test_provider, 3 };
int test_opens, test_closes, test_pz_frees;

DAT_RETURN t_open(const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *evd,
		  DAT_IA_HANDLE *ia)
{
	test_opens++;
	*evd = &test_evd;
	*ia = &test_ia;
	return DAT_SUCCESS;
}

DAT_RETURN t_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS)
{
	EXPECT_EQ((void *)&test_ia, ia);
	test_closes++;
	return DAT_SUCCESS;
}

DAT_RETURN t_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	EXPECT_EQ((void *)&test_ia, ia);
	*pz = &test_pz;
	return DAT_SUCCESS;
}

DAT_RETURN t_pz_free(DAT_PZ_HANDLE)
{
	test_pz_frees++;
	return DAT_SUCCESS;
}

} // namespace

TEST_F(Registry, RuntimeProviderIsDispatchedToAndItsHandlesChecked)
{
	DAT_PROVIDER_INFO info = {};
	std::strcpy(info.ia_name, "test0");
	info.dapl_version_major = 1;
	info.dapl_version_minor = 2;
	info.is_thread_safe = DAT_TRUE;
	test_provider = DAT_PROVIDER{};
	test_provider.device_name = "test0";
	test_provider.ia_open_func = t_open;
	test_provider.ia_close_func = t_close;
	test_provider.pz_create_func = t_pz_create;
	test_provider.pz_free_func = t_pz_free;
	test_opens = test_closes = test_pz_frees = 0;

	EXPECT_DAT(ARG(1), dat_registry_add_provider(nullptr, &info));
	EXPECT_DAT(ARG(2), dat_registry_add_provider(&test_provider, nullptr));
	ASSERT_OK(dat_registry_add_provider(&test_provider, &info));
	EXPECT_DAT(E(DAT_PROVIDER_ALREADY_REGISTERED),
		   dat_registry_add_provider(&test_provider, &info));
	/* listed after the dat.conf entries */
	auto v = list();
	ASSERT_EQ(3u, v.size());
	EXPECT_STREQ("test0", v[2].ia_name);

	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;
	DAT_PZ_HANDLE pz;
	DAT_HANDLE_TYPE type;
	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "test0", 8, &async, &ia));
	EXPECT_EQ(1, test_opens);
	EXPECT_OK(dat_get_handle_type(ia, &type));
	EXPECT_EQ(DAT_HANDLE_TYPE_IA, type);
	EXPECT_OK(dat_get_handle_type(async, &type));
	EXPECT_EQ(DAT_HANDLE_TYPE_EVD, type);
	ASSERT_OK(dat_pz_create(ia, &pz));
	EXPECT_EQ((void *)&test_pz, pz);
	/* a table entry the provider left NULL */
	DAT_PZ_PARAM pp;
	EXPECT_DAT(E(DAT_NOT_IMPLEMENTED),
		   dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pp));
	/* wrong-type handles of this provider are refused before it is called */
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_PZ), dat_pz_free(ia));
	EXPECT_DAT(E(DAT_PROVIDER_IN_USE),
		   dat_registry_remove_provider(&test_provider, &info));
	EXPECT_OK(dat_pz_free(pz));
	EXPECT_EQ(1, test_pz_frees);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_PZ), dat_pz_free(pz));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	EXPECT_EQ(1, test_closes);
	EXPECT_DAT(BAD(DAT_INVALID_HANDLE_IA),
		   dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	EXPECT_DAT(E(DAT_INVALID_HANDLE), dat_get_handle_type(async, &type));

	EXPECT_OK(dat_registry_remove_provider(&test_provider, &info));
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   dat_registry_remove_provider(&test_provider, &info));
	async = nullptr;
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   dat_ia_open((DAT_NAME_PTR) "test0", 8, &async, &ia));
}
