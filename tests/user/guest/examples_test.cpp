// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The SRQ examples, run inside the test against the real module (their
// main() compiled under another name): srq_pingpong (C, one process) and
// srq_server + srq_client (C++, two threads here, as two processes would
// be).  They move messages, so they belong here and not on the host's
// protocol fake; tests/install/guest-install.sh also builds the installed
// copies out of tree and runs them.
#include "fixture.hpp"

#include <string>

extern "C" int srq_pingpong_main(int argc, char **argv);
int srq_server_main(int argc, char **argv);
int srq_client_main(int argc, char **argv);

using namespace kt;

namespace {

int run(int (*fn)(int, char **), std::vector<std::string> args)
{
	std::vector<char *> argv;

	for (auto &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	return fn((int)args.size(), argv.data());
}

class Examples : public ::testing::Test {
protected:
	long baseline = 0;
	void SetUp() override { baseline = live_objects(); }
	void TearDown() override
	{
		EXPECT_TRUE(wait_for([&] { return live_objects() == baseline; }))
			<< live_objects() << " live objects, expected " << baseline;
	}
};

TEST_F(Examples, SrqPingpong)
{
	::testing::internal::CaptureStdout();
	int rc = run(srq_pingpong_main, {"srq_pingpong", "4", "10"});
	std::string out = ::testing::internal::GetCapturedStdout();

	EXPECT_EQ(rc, 0) << out;
	EXPECT_NE(out.find("4 x 10 pings through one SRQ"), std::string::npos)
		<< out;
	EXPECT_NE(out.find("outstanding 8 of 8"), std::string::npos) << out;
	EXPECT_NE(out.find("srq_pingpong: OK"), std::string::npos) << out;
}

TEST_F(Examples, SrqPingpongManyClients)
{
	::testing::internal::CaptureStdout();
	int rc = run(srq_pingpong_main, {"srq_pingpong", "32", "3"});
	std::string out = ::testing::internal::GetCapturedStdout();

	EXPECT_EQ(rc, 0) << out;
	EXPECT_NE(out.find("srq_pingpong: OK"), std::string::npos) << out;
}

TEST_F(Examples, SrqServerAndClient)
{
	int server_rc = -1, client_rc = -1;
	const std::string port = "7790";

	::testing::internal::CaptureStdout();
	// the client may come first: it retries until the server listens
	std::thread server([&] {
		server_rc = run(srq_server_main, {"srq_server", "5", port});
	});
	std::thread client([&] {
		client_rc = run(srq_client_main,
				{"srq_client", "5", "20", srv_addr(), port});
	});
	client.join();
	server.join();
	std::string out = ::testing::internal::GetCapturedStdout();

	EXPECT_EQ(server_rc, 0) << out;
	EXPECT_EQ(client_rc, 0) << out;
	EXPECT_NE(out.find("100 messages from 5 clients through one SRQ"),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find("5 endpoints x 20 messages, every one answered"),
		  std::string::npos)
		<< out;
}

} // namespace
