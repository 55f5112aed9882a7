// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Shared helpers of the host unit tests: a fixture that runs the library
// against the protocol fake of /dev/kdat (fake_kdat.hpp) with the shipped
// dat.conf, a "side" (an open IA with a PZ, the usual EVDs and a
// registered buffer), the fake's name for a DAT handle, and events as the
// kernel writes them into a ring.
#pragma once

#include <dat/udat.h>
#include <dat/dat_kdat.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fake_kdat.hpp"
#include "handles.hpp"
#include "objects.hpp"
#include "registry.hpp"

/* Prints a DAT_RETURN by name when an expectation fails. */
struct Ret {
	DAT_RETURN v;
	bool operator==(const Ret &o) const { return v == o.v; }
};

inline std::ostream &operator<<(std::ostream &os, const Ret &r)
{
	const char *a, *b;

	dat_strerror(r.v, &a, &b);
	return os << a << (*b ? "/" : "") << b << " (0x" << std::hex << r.v
		  << std::dec << ")";
}

#define EXPECT_DAT(expected, expr) EXPECT_EQ(Ret{ (expected) }, Ret{ (expr) })
#define ASSERT_DAT(expected, expr) ASSERT_EQ(Ret{ (expected) }, Ret{ (expr) })
#define EXPECT_OK(expr) EXPECT_DAT(DAT_SUCCESS, expr)
#define ASSERT_OK(expr) ASSERT_DAT(DAT_SUCCESS, expr)

inline DAT_RETURN E(DAT_UINT32 type, DAT_UINT32 sub = 0)
{
	return DAT_ERROR(type, sub);
}

inline DAT_RETURN ARG(int n)
{
	return DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1 + (n - 1));
}

inline DAT_RETURN BAD(DAT_UINT32 sub)
{
	return DAT_ERROR(DAT_INVALID_HANDLE, sub);
}

/* The library on the fake kernel, registry from the shipped dat.conf. */
class FakeKernelTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		setenv("DAT_OVERRIDE", DAT_SHIPPED_CONF, 1);
		unsetenv("KDAT_SRQ_POST");
		kdat::registry_reset();
		kernel.install();
		handles_before = kdat::handles().size();
	}

	void TearDown() override
	{
		/* every handle gone and every file closed: nothing leaked */
		EXPECT_EQ(handles_before, kdat::handles().size());
		EXPECT_EQ(0, kernel.files());
		fake::Kernel::uninstall();
		kdat::registry_reset();
		unsetenv("DAT_OVERRIDE");
		unsetenv("KDAT_SRQ_POST");
	}

	fake::Kernel kernel;
	std::size_t handles_before = 0;
};

/* One IA with a PZ, a DTO EVD, a connection EVD, a CR EVD and a buffer. */
struct Side {
	DAT_IA_HANDLE ia = nullptr;
	DAT_EVD_HANDLE async = nullptr, dto = nullptr, conn = nullptr,
		       cr = nullptr;
	DAT_PZ_HANDLE pz = nullptr;
	DAT_LMR_HANDLE lmr = nullptr;
	DAT_LMR_CONTEXT lctx = 0;
	std::vector<char> buf;

	void open(const char *name, std::size_t bytes = 1 << 16)
	{
		ASSERT_OK(dat_ia_open((DAT_NAME_PTR)name, 64, &async, &ia));
		ASSERT_OK(dat_pz_create(ia, &pz));
		ASSERT_OK(dat_evd_create(ia, 256, nullptr, DAT_EVD_DTO_FLAG,
					 &dto));
		ASSERT_OK(dat_evd_create(ia, 64, nullptr,
					 DAT_EVD_CONNECTION_FLAG, &conn));
		ASSERT_OK(dat_evd_create(ia, 64, nullptr, DAT_EVD_CR_FLAG, &cr));
		buf.assign(bytes, 0);
		DAT_REGION_DESCRIPTION r;
		r.for_va = buf.data();
		DAT_VLEN len;
		DAT_VADDR addr;
		DAT_RMR_CONTEXT rctx;
		ASSERT_OK(dat_lmr_create(
			ia, DAT_MEM_TYPE_VIRTUAL, r, bytes, pz,
			(DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_READ_FLAG |
					     DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
			&lmr, &lctx, &rctx, &len, &addr));
	}

	DAT_LMR_TRIPLET seg(std::size_t off, DAT_VLEN len) const
	{
		DAT_LMR_TRIPLET t = {};
		t.lmr_context = lctx;
		t.virtual_address = (DAT_VADDR)(uintptr_t)(buf.data() + off);
		t.segment_length = len;
		return t;
	}

	void close()
	{
		if (ia) {
			EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
		}
		ia = nullptr;
	}
};

inline DAT_EP_ATTR ep_attr(DAT_COUNT recv_dtos = 16)
{
	DAT_EP_ATTR a = {};
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_message_size = 4096;
	a.max_rdma_size = 0;
	a.qos = DAT_QOS_BEST_EFFORT;
	a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	a.max_recv_dtos = recv_dtos;
	a.max_request_dtos = 16;
	a.max_recv_iov = 1;
	a.max_request_iov = 1;
	a.srq_soft_hw = DAT_HW_DEFAULT;
	return a;
}

inline struct sockaddr_in ipv4(const char *ip)
{
	struct sockaddr_in s = {};
	s.sin_family = AF_INET;
	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

/* Wait for one event on @evd (2 s), expect its number. */
inline DAT_EVENT next_event(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER expected)
{
	DAT_EVENT e = {};
	DAT_COUNT more;

	EXPECT_OK(dat_evd_wait(evd, 2000000, 1, &e, &more));
	EXPECT_EQ(expected, e.event_number);
	return e;
}

/* The fake's name of the object behind DAT handle @h (a T of this library). */
template <class T>
fake::Ref ref(DAT_HANDLE h)
{
	auto o = kdat::lookup<T>(h);

	if (!o)
		throw std::logic_error("ref: not a live handle of that type");
	return { o->ctx->dev.get(), o->kid };
}

template <class T>
std::uint32_t kid(DAT_HANDLE h)
{
	return ref<T>(h).id;
}

/* Ring entries as the kernel writes them. */
inline struct kdat_uevent dto_event(std::uint32_t ep, std::uint64_t cookie,
				    std::uint64_t length = 0,
				    DAT_DTO_COMPLETION_STATUS status =
					    DAT_DTO_SUCCESS,
				    std::uint32_t srq = 0)
{
	struct kdat_uevent u = {};
	u.event_number = DAT_DTO_COMPLETION_EVENT;
	u.handle = ep;
	u.cookie = cookie;
	u.length = length;
	u.status = status;
	u.srq = srq;
	return u;
}

inline struct kdat_uevent async_event(std::uint32_t handle,
				      std::uint32_t reason)
{
	struct kdat_uevent u = {};
	u.event_number = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
	u.handle = handle;
	u.reason = reason;
	return u;
}

inline struct kdat_uevent software_event(void *pointer)
{
	struct kdat_uevent u = {};
	u.event_number = DAT_SOFTWARE_EVENT;
	u.pointer = (std::uint64_t)(std::uintptr_t)pointer;
	return u;
}

inline struct kdat_uevent connection_event(DAT_EVENT_NUMBER n,
					   std::uint32_t ep,
					   const void *pdata = nullptr,
					   std::uint32_t pdata_size = 0)
{
	struct kdat_uevent u = {};
	u.event_number = n;
	u.handle = ep;
	u.pdata_size = pdata_size;
	if (pdata_size)
		std::memcpy(u.pdata, pdata, pdata_size);
	return u;
}
