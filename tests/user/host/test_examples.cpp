// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The examples and datinfo, run for real against the fake kernel: srq_pingpong (C,
// one process) and srq_server + srq_client (C++, here two threads, as two
// processes would be).  Their main() is compiled under another name.
#include <thread>

#include "test_util.hpp"

extern "C" int srq_pingpong_main(int argc, char **argv);
int srq_server_main(int argc, char **argv);
int srq_client_main(int argc, char **argv);
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

TEST_F(Examples, SrqPingpong)
{
	::testing::internal::CaptureStdout();
	int rc = run(srq_pingpong_main, { "srq_pingpong", "4", "10" });
	std::string out = ::testing::internal::GetCapturedStdout();

	EXPECT_EQ(0, rc) << out;
	EXPECT_NE(std::string::npos, out.find("4 x 10 pings through one SRQ"))
		<< out;
	EXPECT_NE(std::string::npos, out.find("outstanding 8 of 8")) << out;
	EXPECT_NE(std::string::npos, out.find("srq_pingpong: OK")) << out;
}

TEST_F(Examples, SrqPingpongManyClients)
{
	::testing::internal::CaptureStdout();
	int rc = run(srq_pingpong_main, { "srq_pingpong", "32", "3" });
	std::string out = ::testing::internal::GetCapturedStdout();

	EXPECT_EQ(0, rc) << out;
}

TEST_F(Examples, SrqServerAndClient)
{
	int server_rc = -1, client_rc = -1;

	::testing::internal::CaptureStdout();
	/* the client may come first: it retries until the server listens */
	std::thread client([&] {
		client_rc = run(srq_client_main,
				{ "srq_client", "5", "20", "192.0.2.1", "7790" });
		if (client_rc)
			std::fprintf(stderr, "%s", kernel.dump().c_str());
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(150));
	std::thread server([&] {
		server_rc = run(srq_server_main, { "srq_server", "5", "7790" });
	});
	client.join();
	server.join();
	std::string out = ::testing::internal::GetCapturedStdout();

	EXPECT_EQ(0, server_rc) << out;
	EXPECT_EQ(0, client_rc) << out;
	EXPECT_NE(std::string::npos,
		  out.find("100 messages from 5 clients through one SRQ"))
		<< out;
	EXPECT_NE(std::string::npos,
		  out.find("5 endpoints x 20 messages, every one answered"))
		<< out;
}

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
