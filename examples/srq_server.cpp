// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// srq_server: serves many client endpoints through ONE shared receive
// queue on IA rxe0 (192.0.2.1).  Run srq_client against it.
//
//   srq_server [clients (4)] [conn_qual (7788)]
//
// Buffers are posted to the SRQ, not to an endpoint; each receive
// completion names the endpoint that took the buffer.  The server answers
// every message on that endpoint, reposts the buffer, and ends when every
// client has disconnected.  Build: c++ -std=c++20 srq_server.cpp -ldat
#include <dat/udat.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kMsg = 256;		/* bytes per buffer */
constexpr DAT_TIMEOUT kWait = 30'000'000;	/* 30 s */

void ok(DAT_RETURN r, const char *what)
{
	const char *major, *minor;

	if (r == DAT_SUCCESS)
		return;
	dat_strerror(r, &major, &minor);
	throw std::runtime_error(std::string(what) + ": " + major + " " + minor);
}

struct Client {
	int id = -1;
	int slot = 0;		/* its send buffer */
	int messages = 0;
	bool connected = false;	/* its ESTABLISHED event was seen */
	bool answer_due = false;	/* a message came before ESTABLISHED */
	int sending = 0;	/* answers posted and not yet completed */
};

} // namespace

int main(int argc, char **argv)
try {
	const int clients = argc > 1 ? std::atoi(argv[1]) : 4;
	const DAT_CONN_QUAL qual = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : 7788;
	const int depth = 2 * clients;		/* SRQ buffers for everyone */

	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, events, sent;
	DAT_PZ_HANDLE pz;
	ok(dat_ia_open((DAT_NAME_PTR) "rxe0", 16, &async, &ia), "dat_ia_open rxe0");
	ok(dat_pz_create(ia, &pz), "dat_pz_create");
	/* requests, connection events and receives on one EVD; sends apart */
	ok(dat_evd_create(ia, 4 * depth + 16, DAT_HANDLE_NULL,
			  (DAT_EVD_FLAGS)(DAT_EVD_CR_FLAG | DAT_EVD_CONNECTION_FLAG |
					  DAT_EVD_DTO_FLAG), &events), "dat_evd_create");
	ok(dat_evd_create(ia, 2 * clients + 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
			  &sent), "dat_evd_create");

	/* receive buffers 0..depth-1, then one send buffer per client */
	std::vector<char> buf((depth + clients) * kMsg);
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

	DAT_SRQ_ATTR sa = { depth, 1, DAT_SRQ_LW_DEFAULT };
	DAT_SRQ_HANDLE srq;
	ok(dat_srq_create(ia, pz, &sa, &srq), "dat_srq_create");
	for (int i = 0; i < depth; i++) {
		DAT_LMR_TRIPLET t = triplet(i, kMsg);
		ok(dat_srq_post_recv(srq, 1, &t, DAT_DTO_COOKIE{ .as_64 = (DAT_UINT64)i }),
		   "dat_srq_post_recv");
	}
	DAT_PSP_HANDLE psp;
	ok(dat_psp_create(ia, qual, events, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
	std::printf("srq_server: rxe0 port %llu, %d SRQ buffers for %d clients\n",
		    (unsigned long long)qual, depth, clients);
	std::fflush(stdout); // whoever waits for "listening" sees it now

	DAT_EP_ATTR attr = {};
	attr.service_type = DAT_SERVICE_TYPE_RC;
	attr.max_message_size = kMsg;
	attr.max_request_dtos = 4;
	attr.max_request_iov = 1;
	attr.srq_soft_hw = DAT_HW_DEFAULT;

	std::map<DAT_EP_HANDLE, Client> eps;
	auto sent_one = [&](const DAT_EVENT &s) {
		auto it = eps.find(s.event_data.dto_completion_event_data.ep_handle);
		if (it != eps.end())
			it->second.sending--;
	};
	auto answer = [&](DAT_EP_HANDLE ep, Client &c) {
		DAT_EVENT s;
		DAT_COUNT more;
		while (dat_evd_dequeue(sent, &s) == DAT_SUCCESS)
			sent_one(s);	/* earlier answers went out */
		/* the EP's request queue is full: wait until one completes */
		while (c.sending >= attr.max_request_dtos) {
			ok(dat_evd_wait(sent, kWait, 1, &s, &more), "dat_evd_wait");
			sent_one(s);
		}
		DAT_LMR_TRIPLET r = triplet(c.slot, std::string(&buf[c.slot * kMsg]).size() + 1);
		ok(dat_ep_post_send(ep, 1, &r, DAT_DTO_COOKIE{ .as_64 = 0 },
				    DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
		c.sending++;
		c.answer_due = false;
	};
	int accepted = 0, gone = 0;
	long total = 0;
	while (gone < clients) {
		DAT_EVENT e;
		DAT_COUNT more;
		ok(dat_evd_wait(events, kWait, 1, &e, &more), "dat_evd_wait");

		if (e.event_number == DAT_CONNECTION_REQUEST_EVENT) {
			DAT_CR_HANDLE cr = e.event_data.cr_arrival_event_data.cr_handle;
			DAT_CR_PARAM cp;
			DAT_EP_HANDLE ep;
			ok(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), "dat_cr_query");
			ok(dat_ep_create_with_srq(ia, pz, events, sent, events, srq,
						  &attr, &ep), "dat_ep_create_with_srq");
			ok(dat_cr_accept(cr, ep, 0, nullptr), "dat_cr_accept");
			Client &c = eps[ep];
			c.id = cp.private_data_size > 0 ? *(const char *)cp.private_data : -1;
			c.slot = depth + accepted++;
		} else if (e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
			DAT_EP_HANDLE ep = e.event_data.connect_event_data.ep_handle;
			Client &c = eps[ep];
			std::printf("srq_server: client %d connected\n", c.id);
			c.connected = true;
			if (c.answer_due)
				answer(ep, c);
		} else if (e.event_number == DAT_DTO_COMPLETION_EVENT) {
			auto &d = e.event_data.dto_completion_event_data;
			int slot = (int)d.user_cookie.as_64;
			DAT_LMR_TRIPLET t = triplet(slot, kMsg);
			bool got = d.status == DAT_DTO_SUCCESS;
			Client &c = eps[d.ep_handle];
			std::string msg = got ? std::string(&buf[slot * kMsg]) : "";

			/* the buffer goes back to the SRQ, for any endpoint */
			ok(dat_srq_post_recv(srq, 1, &t, d.user_cookie), "dat_srq_post_recv");
			if (!got)
				continue;	/* flushed: its EP disconnected */
			c.messages++;
			total++;
			std::snprintf(&buf[c.slot * kMsg], kMsg, "ack %s", msg.c_str());
			/*
			 * The passive side may see a client's first message
			 * before its ESTABLISHED event; an EP takes sends only
			 * once connected, so that answer waits for the event.
			 */
			if (c.connected)
				answer(d.ep_handle, c);
			else
				c.answer_due = true;
		} else if (e.event_number >= DAT_CONNECTION_EVENT_PEER_REJECTED &&
			   e.event_number <= DAT_CONNECTION_EVENT_UNREACHABLE) {
			Client &c = eps[e.event_data.connect_event_data.ep_handle];
			std::printf("srq_server: client %d left after %d messages\n",
				    c.id, c.messages);
			gone++;
		}
	}

	DAT_SRQ_PARAM p;
	ok(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p), "dat_srq_query");
	std::printf("srq_server: %ld messages from %d clients through one SRQ "
		    "(available %d, outstanding %d of %d)\n",
		    total, clients, p.available_dto_count, p.outstanding_dto_count,
		    p.max_recv_dtos);

	for (auto &[ep, c] : eps)
		ok(dat_ep_free(ep), "dat_ep_free");
	ok(dat_psp_free(psp), "dat_psp_free");
	ok(dat_srq_free(srq), "dat_srq_free");
	ok(dat_lmr_free(lmr), "dat_lmr_free");
	ok(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	return 0;
} catch (const std::exception &x) {
	std::fprintf(stderr, "srq_server: %s\n", x.what());
	return 1;
}
