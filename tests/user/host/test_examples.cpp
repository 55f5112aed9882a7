// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// datinfo, run against the protocol fake: it lists the IAs the kernel
// lists and prints what their queries answer (main() compiled under
// another name), creates nothing under an IA, and says so in its exit
// status when an IA cannot be opened; and the tools' JSON string writer
// (tools/json.hpp; tools.sh runs the built tools themselves).  The SRQ examples move messages, which is the kernel's
// business: they run against the real module in the guest
// (tests/user/guest/examples_test.cpp, and installed, built out of tree,
// in tests/install/guest-install.sh).
#include "test_util.hpp"

#include "json.hpp"

int datinfo_main(int argc, char **argv);

namespace {

int run(int (*fn)(int, char **), std::vector<std::string> args)
{
	std::vector<char *> argv;

	for (auto &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	return fn((int)args.size(), argv.data());
}

} // namespace

class Examples : public FakeKernelTest {};

struct Output {
	int rc;
	std::string out, err;
};

Output datinfo(std::vector<std::string> args)
{
	args.insert(args.begin(), "datinfo");
	::testing::internal::CaptureStdout();
	::testing::internal::CaptureStderr();
	int rc = run(datinfo_main, args);
	std::string out = ::testing::internal::GetCapturedStdout();
	std::string err = ::testing::internal::GetCapturedStderr();
	return { rc, out, err };
}

TEST_F(Examples, DatinfoListsProvidersAndAttributes)
{
	Output o = datinfo({});

	EXPECT_EQ(0, o.rc) << o.out << o.err;
	EXPECT_NE(std::string::npos, o.out.find("ia_name:\trxe0")) << o.out;
	EXPECT_NE(std::string::npos, o.out.find("ia_name:\trxe1")) << o.out;
	EXPECT_NE(std::string::npos, o.out.find("kdat_ib 1.0")) << o.out;
	EXPECT_NE(std::string::npos, o.out.find("192.0.2.2")) << o.out;
	EXPECT_EQ(std::string::npos, o.out.find("srq_info_supported")) << o.out;

	for (auto args : { std::vector<std::string>{ "-v", "-d", "rxe1" },
			   std::vector<std::string>{ "--verbose", "--ib-dev=rxe1" } }) {
		o = datinfo(args);
		EXPECT_EQ(0, o.rc) << o.out << o.err;
		EXPECT_EQ(std::string::npos, o.out.find("rxe0")) << o.out;
		EXPECT_NE(std::string::npos, o.out.find("srq_info_supported")) << o.out;
		EXPECT_NE(std::string::npos, o.out.find("kdat_device")) << o.out;
	}
}

/* ibv_devinfo opens a device context and allocates nothing under it:
 * datinfo opens and queries each IA, and makes no PZ, EVD of its own,
 * LMR, SRQ, EP or PSP. */
TEST_F(Examples, DatinfoCreatesNothingUnderAnIa)
{
	kernel.reset_counts();
	Output o = datinfo({ "-v" });
	EXPECT_EQ(0, o.rc) << o.out << o.err;
	EXPECT_EQ(2u, kernel.ioctls(KDAT_IOC_IA_OPEN));
	EXPECT_LE(2u, kernel.ioctls(KDAT_IOC_IA_QUERY));
	for (unsigned long req : { KDAT_IOC_PZ_CREATE, KDAT_IOC_LMR_CREATE,
				   KDAT_IOC_SRQ_CREATE, KDAT_IOC_EP_CREATE,
				   KDAT_IOC_PSP_CREATE, KDAT_IOC_SRQ_POST })
		EXPECT_EQ(0u, kernel.ioctls(req)) << std::hex << req;
	/* the async EVD is dat_ia_open's own (one per IA), no other */
	EXPECT_GE(2u, kernel.ioctls(KDAT_IOC_EVD_CREATE));
}

/* -l prints the registry's IA names, one a line, in its order, and
 * opens nothing. */
TEST_F(Examples, DatinfoListEqualsTheRegistry)
{
	DAT_COUNT n = 0;
	ASSERT_OK(dat_registry_list_providers(0, &n, nullptr));
	std::vector<DAT_PROVIDER_INFO> info(n);
	std::vector<DAT_PROVIDER_INFO *> ptr;
	for (auto &i : info)
		ptr.push_back(&i);
	ASSERT_OK(dat_registry_list_providers(n, &n, ptr.data()));
	std::string want;
	for (const auto &i : info)
		want += std::string(i.ia_name) + "\n";
	ASSERT_EQ("rxe0\nrxe1\n", want);

	kernel.reset_counts();
	Output o = datinfo({ "-l" });
	EXPECT_EQ(0, o.rc) << o.err;
	EXPECT_EQ(want, o.out);
	EXPECT_EQ("", o.err);
	EXPECT_EQ(0u, kernel.ioctls(KDAT_IOC_IA_OPEN));

	o = datinfo({ "--list", "-d", "rxe1" });
	EXPECT_EQ(0, o.rc) << o.err;
	EXPECT_EQ("rxe1\n", o.out);
}

/* -d also takes the RDMA device an IA sits on (its adapter name), when
 * no IA has that name: here the kernel's IAs sit on mlx5_0 and mlx5_1. */
TEST_F(Examples, DatinfoFindsAnIaByItsDevice)
{
	kernel.answer<kdat_ioc_ia_query>(KDAT_IOC_IA_QUERY, [](kdat_ioc_ia_query &q) {
		std::string dev = q.attr.adapter_name;
		std::string mlx = dev == "rxe1" ? "mlx5_1" : "mlx5_0";
		std::memset(q.attr.adapter_name, 0, sizeof(q.attr.adapter_name));
		std::memcpy(q.attr.adapter_name, mlx.c_str(), mlx.size());
		return DAT_SUCCESS;
	});

	Output o = datinfo({ "-d", "mlx5_1" });
	EXPECT_EQ(0, o.rc) << o.out << o.err;
	EXPECT_NE(std::string::npos, o.out.find("ia_name:\trxe1\n")) << o.out;
	EXPECT_NE(std::string::npos, o.out.find("mlx5_1")) << o.out;
	EXPECT_EQ(std::string::npos, o.out.find("rxe0")) << o.out;
	o = datinfo({ "-l", "-d", "mlx5_0" });
	EXPECT_EQ(0, o.rc) << o.err;
	EXPECT_EQ("rxe0\n", o.out);
	o = datinfo({ "-d", "mlx5_2" });
	EXPECT_EQ(1, o.rc) << o.out;
}

/* An IA that cannot be opened: the others are still shown, the exit
 * status says that one failed.  So does a -d that names nothing. */
TEST_F(Examples, DatinfoFailsWhenAnIaFails)
{
	kernel.fail_next(KDAT_IOC_IA_OPEN, EIO);
	Output o = datinfo({});
	EXPECT_EQ(1, o.rc) << o.out << o.err;
	EXPECT_NE(std::string::npos, o.out.find("cannot open")) << o.out;
	EXPECT_NE(std::string::npos, o.out.find("ia_name:\trxe1")) << o.out;
	EXPECT_NE(std::string::npos, o.out.find("192.0.2.2")) << o.out;
	EXPECT_NE(std::string::npos, o.err.find("cannot open")) << o.err;

	kernel.status_next(KDAT_IOC_IA_QUERY, DAT_INTERNAL_ERROR);
	o = datinfo({ "-d", "rxe1" });
	EXPECT_EQ(1, o.rc) << o.out << o.err;

	o = datinfo({ "-d", "nosuch" });
	EXPECT_EQ(1, o.rc);
	EXPECT_EQ("", o.out);
	EXPECT_NE(std::string::npos, o.err.find("nosuch")) << o.err;
}

/* rdma-core's conventions: a bad option or argument is a usage error
 * (status 2, the usage on stderr); -h and --version answer on stdout. */
TEST_F(Examples, DatinfoCommandLine)
{
	for (auto args : { std::vector<std::string>{ "-x" },
			   std::vector<std::string>{ "--bogus" },
			   std::vector<std::string>{ "rxe0" },
			   std::vector<std::string>{ "-d" } }) {
		Output o = datinfo(args);
		EXPECT_EQ(2, o.rc) << args[0];
		EXPECT_EQ("", o.out) << args[0];
		EXPECT_NE(std::string::npos, o.err.find("Usage: datinfo")) << o.err;
	}
	Output o = datinfo({ "--version" });
	EXPECT_EQ(0, o.rc);
	EXPECT_EQ(0u, o.out.rfind("datinfo ", 0)) << o.out;
	o = datinfo({ "-h" });
	EXPECT_EQ(0, o.rc);
	EXPECT_NE(std::string::npos, o.out.find("--ib-dev")) << o.out;
}

/* The JSON string writer: what must be escaped is, well-formed UTF-8
 * passes, any other byte becomes \u00XX. */
TEST(ToolsJson, EscapesEverythingJsonForbids)
{
	using dattools::json_string;

	EXPECT_EQ("\"rxe0\"", json_string("rxe0"));
	EXPECT_EQ("\"a\\\"b\\\\c\"", json_string("a\"b\\c"));
	EXPECT_EQ("\"\\n\\t\\r\\b\\f\\u0001\\u001f\\u007f\"",
		  json_string("\n\t\r\b\f\x01\x1f\x7f"));
	EXPECT_EQ("\"\\u0000x\"", json_string(std::string("\0x", 2)));
	EXPECT_EQ("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
		  json_string("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
	/* stray continuation, truncated, overlong, surrogate, > U+10FFFF */
	EXPECT_EQ("\"\\u0080\\u00c3\\u00c0\\u00af\\u00ed\\u00a0\\u0080\\u00f4\\u0090\\u0080\\u0080\\u00ff\"",
		  json_string("\x80\xc3\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xff"));
	EXPECT_EQ("\"\\u00e2\\u0082\"", json_string("\xe2\x82"));

	/* every byte alone: a literal with no raw control or non-ASCII
	 * byte unless it is well-formed UTF-8 */
	for (int c = 0; c < 256; c++) {
		std::string s = json_string(std::string(1, (char)c));
		for (std::size_t i = 1; i + 1 < s.size(); i++) {
			unsigned char b = (unsigned char)s[i];
			EXPECT_TRUE(b >= 0x20 && b < 0x7f) << c;
		}
	}
}

