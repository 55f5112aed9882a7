// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Test fixture for the guest GoogleTest suite: two IAs (rxe0 serves,
// rxe1 connects), an SRQ on the server, connected EP pairs, buffers.
// Runs against the real kdat module on Soft-RoCE through libdat.
#pragma once

#include <arpa/inet.h>
#include <dat/udat.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace kt {

inline const char *env_or(const char *name, const char *dflt)
{
	const char *v = std::getenv(name);
	return v && *v ? v : dflt;
}

inline const char *srv_ia() { return env_or("KDAT_SRV_IA", "rxe0"); }
inline const char *cli_ia() { return env_or("KDAT_CLI_IA", "rxe1"); }
inline const char *srv_addr() { return env_or("KDAT_SRV_ADDR", "192.0.2.1"); }

// One counter of a "key value" file under /sys/kernel/debug/kdat
// (objects: live objects; srq_limit: the device SRQ limit), -1 if absent.
inline long kdat_counter(const char *key, const char *file = "objects")
{
	std::ifstream f(std::string("/sys/kernel/debug/kdat/") + file);
	std::string k;
	long v;
	while (f >> k >> v)
		if (k == key)
			return v;
	return -1;
}

// Live kdat objects (the leak checks use it).
inline long live_objects() { return kdat_counter("total"); }

inline DAT_DTO_COOKIE cookie(uint64_t v)
{
	DAT_DTO_COOKIE c;
	c.as_64 = v;
	return c;
}

#define ASSERT_DAT(expr, want)                                               \
	do {                                                                 \
		DAT_RETURN r_ = (expr);                                      \
		ASSERT_EQ(DAT_GET_TYPE(r_), DAT_GET_TYPE(want))              \
			<< #expr << " returned 0x" << std::hex << r_;        \
	} while (0)
#define ASSERT_OK(expr) ASSERT_DAT(expr, DAT_SUCCESS)

// Wait for one event (the call itself blocks in the kernel only if needed).
inline bool wait_event(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
	DAT_COUNT more;
	return dat_evd_wait(evd, 10 * 1000 * 1000, 1, ev, &more) == DAT_SUCCESS;
}

inline bool no_event(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;
	return DAT_GET_TYPE(dat_evd_dequeue(evd, &ev)) == DAT_QUEUE_EMPTY;
}

template <class F> bool wait_for(F cond)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (!cond()) {
		if (std::chrono::steady_clock::now() > end)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(500));
	}
	return true;
}

struct Side {
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto = DAT_HANDLE_NULL,
		       conn = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL;
	DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
	std::unique_ptr<char, decltype(&std::free)> buf{nullptr, &std::free};
	size_t len = 0;
	DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
	DAT_LMR_CONTEXT lctx = 0;

	DAT_RETURN open(const char *name, size_t bytes = 1 << 20)
	{
		DAT_RETURN r = dat_ia_open(const_cast<char *>(name), 64,
					   &async_evd, &ia);
		if (r)
			return r;
		if ((r = dat_pz_create(ia, &pz)) ||
		    (r = dat_evd_create(ia, 4096, DAT_HANDLE_NULL,
					DAT_EVD_DTO_FLAG, &dto)) ||
		    (r = dat_evd_create(ia, 256, DAT_HANDLE_NULL,
					DAT_EVD_CONNECTION_FLAG, &conn)) ||
		    (r = dat_evd_create(ia, 256, DAT_HANDLE_NULL,
					DAT_EVD_CR_FLAG, &cr)))
			return r;
		len = bytes;
		buf.reset(static_cast<char *>(std::aligned_alloc(4096, bytes)));
		std::memset(buf.get(), 0, bytes);
		return register_mem(pz, buf.get(), bytes,
				    DAT_MEM_PRIV_ALL_FLAG, &lmr, &lctx);
	}

	DAT_RETURN register_mem(DAT_PZ_HANDLE p, void *m, size_t n,
				DAT_MEM_PRIV_FLAGS priv, DAT_LMR_HANDLE *l,
				DAT_LMR_CONTEXT *c)
	{
		DAT_REGION_DESCRIPTION r;
		DAT_RMR_CONTEXT rc;
		DAT_VLEN rs;
		DAT_VADDR ra;
		r.for_va = m;
		return dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, r, n, p, priv,
				      l, c, &rc, &rs, &ra);
	}

	DAT_LMR_TRIPLET seg(size_t off, size_t n) const
	{
		DAT_LMR_TRIPLET t{};
		t.lmr_context = lctx;
		t.virtual_address = (DAT_VADDR)(uintptr_t)(buf.get() + off);
		t.segment_length = n;
		return t;
	}

	void close()
	{
		if (ia)
			dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
		ia = DAT_HANDLE_NULL;
		buf.reset();
	}

	~Side() { close(); }
};

inline DAT_EP_ATTR ep_attr()
{
	DAT_EP_ATTR a{};
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_message_size = 4096;
	a.max_rdma_size = 4096;
	a.qos = DAT_QOS_BEST_EFFORT;
	a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	a.max_recv_dtos = 64;
	a.max_request_dtos = 64;
	a.max_recv_iov = 2;
	a.max_request_iov = 2;
	return a;
}

// Two IAs, an SRQ on the server, n connected EP pairs.
class Pair : public ::testing::Test {
protected:
	Side s, c;
	DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
	std::vector<DAT_EP_HANDLE> sep, cep;
	long baseline = 0;
	static inline int qual = 6000;

	void SetUp() override
	{
		baseline = live_objects();
		ASSERT_OK(s.open(srv_ia()));
		ASSERT_OK(c.open(cli_ia()));
	}

	void TearDown() override
	{
		s.close();
		c.close();
		// what a test made is gone once its IAs closed
		EXPECT_TRUE(wait_for([&] { return live_objects() == baseline; }))
			<< live_objects() << " live objects, expected " << baseline;
	}

	void make_srq(DAT_COUNT depth, DAT_COUNT iov = 2)
	{
		DAT_SRQ_ATTR sa{depth, iov, DAT_SRQ_LW_DEFAULT};
		ASSERT_OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	}

	void connect(DAT_EP_HANDLE se, DAT_EP_HANDLE ce, uint32_t tag)
	{
		sockaddr_in sin{};
		DAT_EVENT ev;
		DAT_CR_PARAM crp;

		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = inet_addr(srv_addr());
		if (!psp)
			ASSERT_OK(dat_psp_create(s.ia, ++qual, s.cr,
						 DAT_PSP_CONSUMER_FLAG, &psp));
		ASSERT_OK(dat_ep_connect(ce, (DAT_IA_ADDRESS_PTR)&sin, qual,
					 DAT_TIMEOUT_INFINITE, sizeof(tag), &tag,
					 DAT_QOS_BEST_EFFORT,
					 DAT_CONNECT_DEFAULT_FLAG));
		ASSERT_TRUE(wait_event(s.cr, &ev));
		ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
		DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
		ASSERT_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
		ASSERT_EQ(crp.private_data_size, (DAT_COUNT)sizeof(tag));
		ASSERT_EQ(std::memcmp(crp.private_data, &tag, sizeof(tag)), 0);
		ASSERT_OK(dat_cr_accept(cr, se, 0, nullptr));
		ASSERT_TRUE(wait_event(s.conn, &ev));
		ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
		ASSERT_TRUE(wait_event(c.conn, &ev));
		ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	}

	void open_pairs(int n, DAT_COUNT depth)
	{
		make_srq(depth);
		if (HasFatalFailure())
			return;
		DAT_EP_ATTR a = ep_attr();
		for (int i = 0; i < n; i++) {
			DAT_EP_HANDLE se, ce;
			ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto,
							 s.conn, srq, &a, &se));
			ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn,
						&a, &ce));
			connect(se, ce, i);
			if (HasFatalFailure())
				return;
			sep.push_back(se);
			cep.push_back(ce);
		}
	}

	DAT_RETURN post_srq(size_t off, size_t n, uint64_t ck)
	{
		DAT_LMR_TRIPLET t = s.seg(off, n);
		return dat_srq_post_recv(srq, 1, &t, cookie(ck));
	}

	// Client EP i sends n bytes from offset off; waits for its completion.
	bool send(int i, size_t off, size_t n, uint64_t ck = 0)
	{
		DAT_LMR_TRIPLET t = c.seg(off, n);
		DAT_EVENT ev;
		if (dat_ep_post_send(cep[i], 1, &t, cookie(ck),
				     DAT_COMPLETION_DEFAULT_FLAG))
			return false;
		return wait_event(c.dto, &ev) &&
		       ev.event_data.dto_completion_event_data.status ==
			       DAT_DTO_SUCCESS;
	}

	DAT_SRQ_PARAM query()
	{
		DAT_SRQ_PARAM p{};
		EXPECT_EQ(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p), DAT_SUCCESS);
		return p;
	}
};

} // namespace kt
