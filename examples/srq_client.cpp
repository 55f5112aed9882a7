// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// srq_client: N endpoints on IA rxe1, each connected to srq_server and
// sending M messages, one at a time, each answered by the server.
//
//   srq_client [clients (4)] [messages (10)] [server (192.0.2.1)] [conn_qual (7788)]
//
// A connection the server is not ready for yet is retried for a while, so
// the two programs can be started in any order.
// Build: c++ -std=c++20 srq_client.cpp -ldat
#include <dat/udat.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t kMsg = 256;
constexpr DAT_TIMEOUT kWait = 30'000'000;	/* 30 s */
constexpr int kRetries = 100;			/* x 100 ms */

void ok(DAT_RETURN r, const char *what)
{
	const char *major, *minor;

	if (r == DAT_SUCCESS)
		return;
	dat_strerror(r, &major, &minor);
	throw std::runtime_error(std::string(what) + ": " + major + " " + minor);
}

} // namespace

int main(int argc, char **argv)
try {
	const int n = argc > 1 ? std::atoi(argv[1]) : 4;
	const int messages = argc > 2 ? std::atoi(argv[2]) : 10;
	const char *server = argc > 3 ? argv[3] : "192.0.2.1";
	const DAT_CONN_QUAL qual = argc > 4 ? std::strtoull(argv[4], nullptr, 0) : 7788;

	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, events;
	DAT_PZ_HANDLE pz;
	ok(dat_ia_open((DAT_NAME_PTR) "rxe1", 16, &async, &ia), "dat_ia_open rxe1");
	ok(dat_pz_create(ia, &pz), "dat_pz_create");
	ok(dat_evd_create(ia, 4 * n + 16, DAT_HANDLE_NULL,
			  (DAT_EVD_FLAGS)(DAT_EVD_CONNECTION_FLAG | DAT_EVD_DTO_FLAG),
			  &events), "dat_evd_create");

	/* endpoint i receives into buffer i and sends from buffer n + i */
	std::vector<char> buf(2 * n * kMsg);
	DAT_REGION_DESCRIPTION region;
	region.for_va = buf.data();
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	ok(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, buf.size(), pz,
			  (DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_READ_FLAG |
					       DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
			  &lmr, &lctx, nullptr, nullptr, nullptr), "dat_lmr_create");
	auto triplet = [&](int slot, std::size_t len) {
		return DAT_LMR_TRIPLET{ lctx, 0,
					(DAT_VADDR)(uintptr_t)&buf[slot * kMsg], len };
	};

	DAT_EP_ATTR attr = {};
	attr.service_type = DAT_SERVICE_TYPE_RC;
	attr.max_message_size = kMsg;
	attr.max_recv_dtos = 2;
	attr.max_request_dtos = 2;
	attr.max_recv_iov = 1;
	attr.max_request_iov = 1;
	attr.srq_soft_hw = DAT_HW_DEFAULT;

	struct sockaddr_in sin = {};
	sin.sin_family = AF_INET;
	if (inet_pton(AF_INET, server, &sin.sin_addr) != 1)
		throw std::runtime_error(std::string("bad address ") + server);
	std::vector<DAT_EP_HANDLE> ep(n);
	std::vector<int> sent(n, 0), tries(n, 0);
	auto connect = [&](int i) {
		char id = (char)i;	/* the server learns our index */
		ok(dat_ep_connect(ep[i], (DAT_IA_ADDRESS_PTR)&sin, qual, kWait, 1, &id,
				  DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
		   "dat_ep_connect");
	};
	auto send = [&](int i) {
		std::snprintf(&buf[(n + i) * kMsg], kMsg, "message %d from client %d",
			      sent[i]++, i);
		DAT_LMR_TRIPLET t = triplet(n + i, std::strlen(&buf[(n + i) * kMsg]) + 1);
		ok(dat_ep_post_send(ep[i], 1, &t, DAT_DTO_COOKIE{ .as_64 = 0 },
				    DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
	};
	auto receive = [&](int i) {
		DAT_LMR_TRIPLET t = triplet(i, kMsg);
		ok(dat_ep_post_recv(ep[i], 1, &t, DAT_DTO_COOKIE{ .as_64 = 1000u + i },
				    DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	};
	auto index = [&](DAT_EP_HANDLE h) {
		for (int i = 0; i < n; i++)
			if (ep[i] == h)
				return i;
		throw std::runtime_error("event for an unknown endpoint");
	};

	for (int i = 0; i < n; i++) {
		ok(dat_ep_create(ia, pz, events, events, events, &attr, &ep[i]), "dat_ep_create");
		connect(i);
	}

	int up = 0, done = 0, down = 0;
	while (done < n || down < n) {
		DAT_EVENT e;
		DAT_COUNT more;
		ok(dat_evd_wait(events, kWait, 1, &e, &more), "dat_evd_wait");

		if (e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
			int i = index(e.event_data.connect_event_data.ep_handle);
			up++;
			receive(i);
			send(i);
		} else if (e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED) {
			down++;
		} else if (e.event_number > DAT_CONNECTION_EVENT_ESTABLISHED &&
			   e.event_number <= DAT_CONNECTION_EVENT_UNREACHABLE) {
			/* the server is not there (yet): try again shortly */
			int i = index(e.event_data.connect_event_data.ep_handle);
			if (++tries[i] > kRetries)
				throw std::runtime_error("cannot connect to the server");
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			ok(dat_ep_reset(ep[i]), "dat_ep_reset");
			connect(i);
		} else if (e.event_number == DAT_DTO_COMPLETION_EVENT) {
			auto &d = e.event_data.dto_completion_event_data;
			if (d.user_cookie.as_64 < 1000 || d.status != DAT_DTO_SUCCESS)
				continue;	/* a send went out, or a flush */
			int i = (int)d.user_cookie.as_64 - 1000;
			if (std::strncmp(&buf[i * kMsg], "ack message", 11))
				throw std::runtime_error("unexpected answer");
			if (sent[i] < messages) {
				receive(i);
				send(i);
			} else {
				done++;
				ok(dat_ep_disconnect(ep[i], DAT_CLOSE_GRACEFUL_FLAG),
				   "dat_ep_disconnect");
			}
		}
	}
	std::printf("srq_client: %d endpoints x %d messages, every one answered\n",
		    n, messages);

	for (DAT_EP_HANDLE h : ep)
		ok(dat_ep_free(h), "dat_ep_free");
	ok(dat_lmr_free(lmr), "dat_lmr_free");
	ok(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	return 0;
} catch (const std::exception &x) {
	std::fprintf(stderr, "srq_client: %s\n", x.what());
	return 1;
}
