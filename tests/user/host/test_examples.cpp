// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// datinfo, run against the protocol fake: it lists the IAs the kernel
// lists and prints what their queries answer (main() compiled under
// another name).  The SRQ examples move messages, which is the kernel's
// business: they run against the real module in the guest
// (tests/user/guest/examples_test.cpp, and installed, built out of tree,
// in tests/install/guest-install.sh).
#include "test_util.hpp"

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

TEST_F(Examples, DatinfoListsProvidersAndAttributes)
{
	::testing::internal::CaptureStdout();
	int rc = run(datinfo_main, { "datinfo" });
	std::string out = ::testing::internal::GetCapturedStdout();

	EXPECT_EQ(0, rc) << out;
	EXPECT_NE(std::string::npos, out.find("ia_name:\trxe0")) << out;
	EXPECT_NE(std::string::npos, out.find("ia_name:\trxe1")) << out;
	EXPECT_NE(std::string::npos, out.find("kdat_ib 1.0")) << out;
	EXPECT_NE(std::string::npos, out.find("192.0.2.2")) << out;
	EXPECT_EQ(std::string::npos, out.find("srq_info_supported")) << out;

	::testing::internal::CaptureStdout();
	rc = run(datinfo_main, { "datinfo", "-v", "rxe1" });
	out = ::testing::internal::GetCapturedStdout();
	EXPECT_EQ(0, rc) << out;
	EXPECT_EQ(std::string::npos, out.find("rxe0")) << out;
	EXPECT_NE(std::string::npos, out.find("srq_info_supported")) << out;
	EXPECT_NE(std::string::npos, out.find("kdat_device")) << out;
	std::printf("%s", out.c_str());

	::testing::internal::CaptureStdout();
	::testing::internal::CaptureStderr();
	rc = run(datinfo_main, { "datinfo", "nosuch" });
	::testing::internal::GetCapturedStdout();
	::testing::internal::GetCapturedStderr();
	EXPECT_EQ(1, rc);
}
