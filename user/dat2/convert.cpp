// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// DAT_RETURN, DAT 1.2 -> DAT 2.0: the same names, other values (DAT 2.0
// inserted subtypes, and DAT_NOT_IMPLEMENTED moved).  Every name DAT 1.2
// has exists in DAT 2.0; the host test dat2_convert checks each one.
#include "convert.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace kdat::dat2p {

namespace {

::dat2::DAT_RETURN type2(DAT_UINT32 t) noexcept
{
	switch (t) {
	case ::DAT_ABORT: return ::dat2::DAT_ABORT;
	case ::DAT_CONN_QUAL_IN_USE: return ::dat2::DAT_CONN_QUAL_IN_USE;
	case ::DAT_CONN_QUAL_UNAVAILABLE: return ::dat2::DAT_CONN_QUAL_UNAVAILABLE;
	case ::DAT_INSUFFICIENT_RESOURCES: return ::dat2::DAT_INSUFFICIENT_RESOURCES;
	case ::DAT_INTERNAL_ERROR: return ::dat2::DAT_INTERNAL_ERROR;
	case ::DAT_INTERRUPTED_CALL: return ::dat2::DAT_INTERRUPTED_CALL;
	case ::DAT_INVALID_ADDRESS: return ::dat2::DAT_INVALID_ADDRESS;
	case ::DAT_INVALID_HANDLE: return ::dat2::DAT_INVALID_HANDLE;
	case ::DAT_INVALID_PARAMETER: return ::dat2::DAT_INVALID_PARAMETER;
	case ::DAT_INVALID_STATE: return ::dat2::DAT_INVALID_STATE;
	case ::DAT_LENGTH_ERROR: return ::dat2::DAT_LENGTH_ERROR;
	case ::DAT_MODEL_NOT_SUPPORTED: return ::dat2::DAT_MODEL_NOT_SUPPORTED;
	case ::DAT_NOT_IMPLEMENTED: return ::dat2::DAT_NOT_IMPLEMENTED;
	case ::DAT_PRIVILEGES_VIOLATION: return ::dat2::DAT_PRIVILEGES_VIOLATION;
	case ::DAT_PROTECTION_VIOLATION: return ::dat2::DAT_PROTECTION_VIOLATION;
	case ::DAT_PROVIDER_ALREADY_REGISTERED: return ::dat2::DAT_PROVIDER_ALREADY_REGISTERED;
	case ::DAT_PROVIDER_IN_USE: return ::dat2::DAT_PROVIDER_IN_USE;
	case ::DAT_PROVIDER_NOT_FOUND: return ::dat2::DAT_PROVIDER_NOT_FOUND;
	case ::DAT_QUEUE_EMPTY: return ::dat2::DAT_QUEUE_EMPTY;
	case ::DAT_QUEUE_FULL: return ::dat2::DAT_QUEUE_FULL;
	case ::DAT_SUCCESS: return ::dat2::DAT_SUCCESS;
	case ::DAT_TIMEOUT_EXPIRED: return ::dat2::DAT_TIMEOUT_EXPIRED;
	default: return ::dat2::DAT_INTERNAL_ERROR;
	}
}

DAT_UINT32 subtype2(DAT_UINT32 s) noexcept
{
	switch (s) {
	case ::DAT_INVALID_ADDRESS_MALFORMED: return ::dat2::DAT_INVALID_ADDRESS_MALFORMED;
	case ::DAT_INVALID_ADDRESS_UNREACHABLE: return ::dat2::DAT_INVALID_ADDRESS_UNREACHABLE;
	case ::DAT_INVALID_ADDRESS_UNSUPPORTED: return ::dat2::DAT_INVALID_ADDRESS_UNSUPPORTED;
	case ::DAT_INVALID_ARG1: return ::dat2::DAT_INVALID_ARG1;
	case ::DAT_INVALID_ARG10: return ::dat2::DAT_INVALID_ARG10;
	case ::DAT_INVALID_ARG2: return ::dat2::DAT_INVALID_ARG2;
	case ::DAT_INVALID_ARG3: return ::dat2::DAT_INVALID_ARG3;
	case ::DAT_INVALID_ARG4: return ::dat2::DAT_INVALID_ARG4;
	case ::DAT_INVALID_ARG5: return ::dat2::DAT_INVALID_ARG5;
	case ::DAT_INVALID_ARG6: return ::dat2::DAT_INVALID_ARG6;
	case ::DAT_INVALID_ARG7: return ::dat2::DAT_INVALID_ARG7;
	case ::DAT_INVALID_ARG8: return ::dat2::DAT_INVALID_ARG8;
	case ::DAT_INVALID_ARG9: return ::dat2::DAT_INVALID_ARG9;
	case ::DAT_INVALID_HANDLE1: return ::dat2::DAT_INVALID_HANDLE1;
	case ::DAT_INVALID_HANDLE10: return ::dat2::DAT_INVALID_HANDLE10;
	case ::DAT_INVALID_HANDLE2: return ::dat2::DAT_INVALID_HANDLE2;
	case ::DAT_INVALID_HANDLE3: return ::dat2::DAT_INVALID_HANDLE3;
	case ::DAT_INVALID_HANDLE4: return ::dat2::DAT_INVALID_HANDLE4;
	case ::DAT_INVALID_HANDLE5: return ::dat2::DAT_INVALID_HANDLE5;
	case ::DAT_INVALID_HANDLE6: return ::dat2::DAT_INVALID_HANDLE6;
	case ::DAT_INVALID_HANDLE7: return ::dat2::DAT_INVALID_HANDLE7;
	case ::DAT_INVALID_HANDLE8: return ::dat2::DAT_INVALID_HANDLE8;
	case ::DAT_INVALID_HANDLE9: return ::dat2::DAT_INVALID_HANDLE9;
	case ::DAT_INVALID_HANDLE_CNO: return ::dat2::DAT_INVALID_HANDLE_CNO;
	case ::DAT_INVALID_HANDLE_CR: return ::dat2::DAT_INVALID_HANDLE_CR;
	case ::DAT_INVALID_HANDLE_EP: return ::dat2::DAT_INVALID_HANDLE_EP;
	case ::DAT_INVALID_HANDLE_EVD_ASYNC: return ::dat2::DAT_INVALID_HANDLE_EVD_ASYNC;
	case ::DAT_INVALID_HANDLE_EVD_CONN: return ::dat2::DAT_INVALID_HANDLE_EVD_CONN;
	case ::DAT_INVALID_HANDLE_EVD_CR: return ::dat2::DAT_INVALID_HANDLE_EVD_CR;
	case ::DAT_INVALID_HANDLE_EVD_RECV: return ::dat2::DAT_INVALID_HANDLE_EVD_RECV;
	case ::DAT_INVALID_HANDLE_EVD_REQUEST: return ::dat2::DAT_INVALID_HANDLE_EVD_REQUEST;
	case ::DAT_INVALID_HANDLE_IA: return ::dat2::DAT_INVALID_HANDLE_IA;
	case ::DAT_INVALID_HANDLE_LMR: return ::dat2::DAT_INVALID_HANDLE_LMR;
	case ::DAT_INVALID_HANDLE_PSP: return ::dat2::DAT_INVALID_HANDLE_PSP;
	case ::DAT_INVALID_HANDLE_PZ: return ::dat2::DAT_INVALID_HANDLE_PZ;
	case ::DAT_INVALID_HANDLE_RMR: return ::dat2::DAT_INVALID_HANDLE_RMR;
	case ::DAT_INVALID_HANDLE_RSP: return ::dat2::DAT_INVALID_HANDLE_RSP;
	case ::DAT_INVALID_HANDLE_SRQ: return ::dat2::DAT_INVALID_HANDLE_SRQ;
	case ::DAT_INVALID_STATE_CNO_DEAD: return ::dat2::DAT_INVALID_STATE_CNO_DEAD;
	case ::DAT_INVALID_STATE_CNO_IN_USE: return ::dat2::DAT_INVALID_STATE_CNO_IN_USE;
	case ::DAT_INVALID_STATE_EP_ACTCONNPENDING: return ::dat2::DAT_INVALID_STATE_EP_ACTCONNPENDING;
	case ::DAT_INVALID_STATE_EP_COMPLPENDING: return ::dat2::DAT_INVALID_STATE_EP_COMPLPENDING;
	case ::DAT_INVALID_STATE_EP_CONNECTED: return ::dat2::DAT_INVALID_STATE_EP_CONNECTED;
	case ::DAT_INVALID_STATE_EP_DISCONNECTED: return ::dat2::DAT_INVALID_STATE_EP_DISCONNECTED;
	case ::DAT_INVALID_STATE_EP_DISCPENDING: return ::dat2::DAT_INVALID_STATE_EP_DISCPENDING;
	case ::DAT_INVALID_STATE_EP_EVD_CONNECT: return ::dat2::DAT_INVALID_STATE_EP_EVD_CONNECT;
	case ::DAT_INVALID_STATE_EP_EVD_RECV: return ::dat2::DAT_INVALID_STATE_EP_EVD_RECV;
	case ::DAT_INVALID_STATE_EP_EVD_REQUEST: return ::dat2::DAT_INVALID_STATE_EP_EVD_REQUEST;
	case ::DAT_INVALID_STATE_EP_NOTREADY: return ::dat2::DAT_INVALID_STATE_EP_NOTREADY;
	case ::DAT_INVALID_STATE_EP_PASSCONNPENDING: return ::dat2::DAT_INVALID_STATE_EP_PASSCONNPENDING;
	case ::DAT_INVALID_STATE_EP_PROVIDERCONTROL: return ::dat2::DAT_INVALID_STATE_EP_PROVIDERCONTROL;
	case ::DAT_INVALID_STATE_EP_PZ: return ::dat2::DAT_INVALID_STATE_EP_PZ;
	case ::DAT_INVALID_STATE_EP_RECV_WATERMARK: return ::dat2::DAT_INVALID_STATE_EP_RECV_WATERMARK;
	case ::DAT_INVALID_STATE_EP_RESERVED: return ::dat2::DAT_INVALID_STATE_EP_RESERVED;
	case ::DAT_INVALID_STATE_EP_TENTCONNPENDING: return ::dat2::DAT_INVALID_STATE_EP_TENTCONNPENDING;
	case ::DAT_INVALID_STATE_EP_UNCONFIGURED: return ::dat2::DAT_INVALID_STATE_EP_UNCONFIGURED;
	case ::DAT_INVALID_STATE_EP_UNCONFPASSIVE: return ::dat2::DAT_INVALID_STATE_EP_UNCONFPASSIVE;
	case ::DAT_INVALID_STATE_EP_UNCONFRESERVED: return ::dat2::DAT_INVALID_STATE_EP_UNCONFRESERVED;
	case ::DAT_INVALID_STATE_EP_UNCONFTENTATIVE: return ::dat2::DAT_INVALID_STATE_EP_UNCONFTENTATIVE;
	case ::DAT_INVALID_STATE_EP_UNCONNECTED: return ::dat2::DAT_INVALID_STATE_EP_UNCONNECTED;
	case ::DAT_INVALID_STATE_EVD_ASYNC: return ::dat2::DAT_INVALID_STATE_EVD_ASYNC;
	case ::DAT_INVALID_STATE_EVD_CONFIG_NOTIFY: return ::dat2::DAT_INVALID_STATE_EVD_CONFIG_NOTIFY;
	case ::DAT_INVALID_STATE_EVD_CONFIG_SOLICITED: return ::dat2::DAT_INVALID_STATE_EVD_CONFIG_SOLICITED;
	case ::DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD: return ::dat2::DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD;
	case ::DAT_INVALID_STATE_EVD_DISABLED: return ::dat2::DAT_INVALID_STATE_EVD_DISABLED;
	case ::DAT_INVALID_STATE_EVD_ENABLED: return ::dat2::DAT_INVALID_STATE_EVD_ENABLED;
	case ::DAT_INVALID_STATE_EVD_IN_USE: return ::dat2::DAT_INVALID_STATE_EVD_IN_USE;
	case ::DAT_INVALID_STATE_EVD_OPEN: return ::dat2::DAT_INVALID_STATE_EVD_OPEN;
	case ::DAT_INVALID_STATE_EVD_UNWAITABLE: return ::dat2::DAT_INVALID_STATE_EVD_UNWAITABLE;
	case ::DAT_INVALID_STATE_EVD_WAITABLE: return ::dat2::DAT_INVALID_STATE_EVD_WAITABLE;
	case ::DAT_INVALID_STATE_EVD_WAITER: return ::dat2::DAT_INVALID_STATE_EVD_WAITER;
	case ::DAT_INVALID_STATE_IA_IN_USE: return ::dat2::DAT_INVALID_STATE_IA_IN_USE;
	case ::DAT_INVALID_STATE_LMR_FREE: return ::dat2::DAT_INVALID_STATE_LMR_FREE;
	case ::DAT_INVALID_STATE_LMR_IN_USE: return ::dat2::DAT_INVALID_STATE_LMR_IN_USE;
	case ::DAT_INVALID_STATE_PZ_FREE: return ::dat2::DAT_INVALID_STATE_PZ_FREE;
	case ::DAT_INVALID_STATE_PZ_IN_USE: return ::dat2::DAT_INVALID_STATE_PZ_IN_USE;
	case ::DAT_INVALID_STATE_SRQ_ERROR: return ::dat2::DAT_INVALID_STATE_SRQ_ERROR;
	case ::DAT_INVALID_STATE_SRQ_IN_USE: return ::dat2::DAT_INVALID_STATE_SRQ_IN_USE;
	case ::DAT_INVALID_STATE_SRQ_OPERATIONAL: return ::dat2::DAT_INVALID_STATE_SRQ_OPERATIONAL;
	case ::DAT_MAJOR_NOT_FOUND: return ::dat2::DAT_MAJOR_NOT_FOUND;
	case ::DAT_MINOR_NOT_FOUND: return ::dat2::DAT_MINOR_NOT_FOUND;
	case ::DAT_NAME_NOT_REGISTERED: return ::dat2::DAT_NAME_NOT_REGISTERED;
	case ::DAT_NO_SUBTYPE: return ::dat2::DAT_NO_SUBTYPE;
	case ::DAT_PRIVILEGES_RDMA_READ: return ::dat2::DAT_PRIVILEGES_RDMA_READ;
	case ::DAT_PRIVILEGES_RDMA_WRITE: return ::dat2::DAT_PRIVILEGES_RDMA_WRITE;
	case ::DAT_PRIVILEGES_READ: return ::dat2::DAT_PRIVILEGES_READ;
	case ::DAT_PRIVILEGES_WRITE: return ::dat2::DAT_PRIVILEGES_WRITE;
	case ::DAT_PROTECTION_RDMA_READ: return ::dat2::DAT_PROTECTION_RDMA_READ;
	case ::DAT_PROTECTION_RDMA_WRITE: return ::dat2::DAT_PROTECTION_RDMA_WRITE;
	case ::DAT_PROTECTION_READ: return ::dat2::DAT_PROTECTION_READ;
	case ::DAT_PROTECTION_WRITE: return ::dat2::DAT_PROTECTION_WRITE;
	case ::DAT_RESOURCE_CREDITS: return ::dat2::DAT_RESOURCE_CREDITS;
	case ::DAT_RESOURCE_DEVICE: return ::dat2::DAT_RESOURCE_DEVICE;
	case ::DAT_RESOURCE_ERROR_HANDLER: return ::dat2::DAT_RESOURCE_ERROR_HANDLER;
	case ::DAT_RESOURCE_MEMORY: return ::dat2::DAT_RESOURCE_MEMORY;
	case ::DAT_RESOURCE_MEMORY_REGION: return ::dat2::DAT_RESOURCE_MEMORY_REGION;
	case ::DAT_RESOURCE_PROTECTION_DOMAIN: return ::dat2::DAT_RESOURCE_PROTECTION_DOMAIN;
	case ::DAT_RESOURCE_SRQ: return ::dat2::DAT_RESOURCE_SRQ;
	case ::DAT_RESOURCE_TEP: return ::dat2::DAT_RESOURCE_TEP;
	case ::DAT_RESOURCE_TEVD: return ::dat2::DAT_RESOURCE_TEVD;
	case ::DAT_SUB_INTERRUPTED: return ::dat2::DAT_SUB_INTERRUPTED;
	case ::DAT_THREAD_SAFETY_NOT_FOUND: return ::dat2::DAT_THREAD_SAFETY_NOT_FOUND;
	default: return 0;
	}
}

} // namespace

::dat2::DAT_RETURN ret2(DAT_RETURN r) noexcept
{
	if (r == DAT_SUCCESS)
		return ::dat2::DAT_SUCCESS;
	DAT_UINT32 cls = r & (DAT_CLASS_ERROR | DAT_CLASS_WARNING);
	return static_cast<::dat2::DAT_RETURN>(cls | type2(DAT_GET_TYPE(r)) |
					       subtype2(DAT_GET_SUBTYPE(r)));
}


/* ---- handles and events --------------------------------------------- */

int handle_type2(DAT_HANDLE_TYPE t) noexcept
{
	switch (t) {
	case ::DAT_HANDLE_TYPE_CR: return ::dat2::DAT_HANDLE_TYPE_CR;
	case ::DAT_HANDLE_TYPE_EP: return ::dat2::DAT_HANDLE_TYPE_EP;
	case ::DAT_HANDLE_TYPE_EVD: return ::dat2::DAT_HANDLE_TYPE_EVD;
	case ::DAT_HANDLE_TYPE_IA: return ::dat2::DAT_HANDLE_TYPE_IA;
	case ::DAT_HANDLE_TYPE_LMR: return ::dat2::DAT_HANDLE_TYPE_LMR;
	case ::DAT_HANDLE_TYPE_PSP: return ::dat2::DAT_HANDLE_TYPE_PSP;
	case ::DAT_HANDLE_TYPE_PZ: return ::dat2::DAT_HANDLE_TYPE_PZ;
	case ::DAT_HANDLE_TYPE_RMR: return ::dat2::DAT_HANDLE_TYPE_RMR;
	case ::DAT_HANDLE_TYPE_RSP: return ::dat2::DAT_HANDLE_TYPE_RSP;
	case ::DAT_HANDLE_TYPE_CNO: return ::dat2::DAT_HANDLE_TYPE_CNO;
	case ::DAT_HANDLE_TYPE_SRQ: return ::dat2::DAT_HANDLE_TYPE_SRQ;
	}
	return -1;
}

namespace {

std::uint32_t event_number2(std::uint32_t n) noexcept
{
	switch (n) {
	case ::DAT_DTO_COMPLETION_EVENT: return ::dat2::DAT_DTO_COMPLETION_EVENT;
	case ::DAT_RMR_BIND_COMPLETION_EVENT: return ::dat2::DAT_RMR_BIND_COMPLETION_EVENT;
	case ::DAT_CONNECTION_REQUEST_EVENT: return ::dat2::DAT_CONNECTION_REQUEST_EVENT;
	case ::DAT_CONNECTION_EVENT_ESTABLISHED: return ::dat2::DAT_CONNECTION_EVENT_ESTABLISHED;
	case ::DAT_CONNECTION_EVENT_PEER_REJECTED: return ::dat2::DAT_CONNECTION_EVENT_PEER_REJECTED;
	case ::DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return ::dat2::DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
	case ::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: return ::dat2::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR;
	case ::DAT_CONNECTION_EVENT_DISCONNECTED: return ::dat2::DAT_CONNECTION_EVENT_DISCONNECTED;
	case ::DAT_CONNECTION_EVENT_BROKEN: return ::dat2::DAT_CONNECTION_EVENT_BROKEN;
	case ::DAT_CONNECTION_EVENT_TIMED_OUT: return ::dat2::DAT_CONNECTION_EVENT_TIMED_OUT;
	case ::DAT_CONNECTION_EVENT_UNREACHABLE: return ::dat2::DAT_CONNECTION_EVENT_UNREACHABLE;
	case ::DAT_ASYNC_ERROR_EVD_OVERFLOW: return ::dat2::DAT_ASYNC_ERROR_EVD_OVERFLOW;
	case ::DAT_ASYNC_ERROR_IA_CATASTROPHIC: return ::dat2::DAT_ASYNC_ERROR_IA_CATASTROPHIC;
	case ::DAT_ASYNC_ERROR_EP_BROKEN: return ::dat2::DAT_ASYNC_ERROR_EP_BROKEN;
	case ::DAT_ASYNC_ERROR_TIMED_OUT: return ::dat2::DAT_ASYNC_ERROR_TIMED_OUT;
	case ::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR: return ::dat2::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
	case ::DAT_SOFTWARE_EVENT: return ::dat2::DAT_SOFTWARE_EVENT;
	}
	return n;	/* none other exists in DAT 1.2: kept as it is */
}

std::uint32_t event_number1(std::uint32_t n) noexcept
{
	switch (n) {
	case ::dat2::DAT_DTO_COMPLETION_EVENT: return ::DAT_DTO_COMPLETION_EVENT;
	case ::dat2::DAT_RMR_BIND_COMPLETION_EVENT: return ::DAT_RMR_BIND_COMPLETION_EVENT;
	case ::dat2::DAT_CONNECTION_REQUEST_EVENT: return ::DAT_CONNECTION_REQUEST_EVENT;
	case ::dat2::DAT_CONNECTION_EVENT_ESTABLISHED: return ::DAT_CONNECTION_EVENT_ESTABLISHED;
	case ::dat2::DAT_CONNECTION_EVENT_PEER_REJECTED: return ::DAT_CONNECTION_EVENT_PEER_REJECTED;
	case ::dat2::DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return ::DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
	case ::dat2::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: return ::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR;
	case ::dat2::DAT_CONNECTION_EVENT_DISCONNECTED: return ::DAT_CONNECTION_EVENT_DISCONNECTED;
	case ::dat2::DAT_CONNECTION_EVENT_BROKEN: return ::DAT_CONNECTION_EVENT_BROKEN;
	case ::dat2::DAT_CONNECTION_EVENT_TIMED_OUT: return ::DAT_CONNECTION_EVENT_TIMED_OUT;
	case ::dat2::DAT_CONNECTION_EVENT_UNREACHABLE: return ::DAT_CONNECTION_EVENT_UNREACHABLE;
	case ::dat2::DAT_ASYNC_ERROR_EVD_OVERFLOW: return ::DAT_ASYNC_ERROR_EVD_OVERFLOW;
	case ::dat2::DAT_ASYNC_ERROR_IA_CATASTROPHIC: return ::DAT_ASYNC_ERROR_IA_CATASTROPHIC;
	case ::dat2::DAT_ASYNC_ERROR_EP_BROKEN: return ::DAT_ASYNC_ERROR_EP_BROKEN;
	case ::dat2::DAT_ASYNC_ERROR_TIMED_OUT: return ::DAT_ASYNC_ERROR_TIMED_OUT;
	case ::dat2::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR: return ::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
	case ::dat2::DAT_SOFTWARE_EVENT: return ::DAT_SOFTWARE_EVENT;
	}
	return n;	/* the core refuses what it does not know */
}

::dat2::DAT_DTO_COMPLETION_STATUS dto_status2(std::uint32_t s) noexcept
{
	switch (s) {
	case ::DAT_DTO_SUCCESS: return ::dat2::DAT_DTO_SUCCESS;
	case ::DAT_DTO_ERR_FLUSHED: return ::dat2::DAT_DTO_ERR_FLUSHED;
	case ::DAT_DTO_ERR_LOCAL_LENGTH: return ::dat2::DAT_DTO_ERR_LOCAL_LENGTH;
	case ::DAT_DTO_ERR_LOCAL_EP: return ::dat2::DAT_DTO_ERR_LOCAL_EP;
	case ::DAT_DTO_ERR_LOCAL_PROTECTION: return ::dat2::DAT_DTO_ERR_LOCAL_PROTECTION;
	case ::DAT_DTO_ERR_BAD_RESPONSE: return ::dat2::DAT_DTO_ERR_BAD_RESPONSE;
	case ::DAT_DTO_ERR_REMOTE_ACCESS: return ::dat2::DAT_DTO_ERR_REMOTE_ACCESS;
	case ::DAT_DTO_ERR_REMOTE_RESPONDER: return ::dat2::DAT_DTO_ERR_REMOTE_RESPONDER;
	case ::DAT_DTO_ERR_TRANSPORT: return ::dat2::DAT_DTO_ERR_TRANSPORT;
	case ::DAT_DTO_ERR_RECEIVER_NOT_READY: return ::dat2::DAT_DTO_ERR_RECEIVER_NOT_READY;
	case ::DAT_DTO_ERR_PARTIAL_PACKET: return ::dat2::DAT_DTO_ERR_PARTIAL_PACKET;
	case ::DAT_RMR_OPERATION_FAILED: return ::dat2::DAT_RMR_OPERATION_FAILED;
	}
	return ::dat2::DAT_DTO_ERR_TRANSPORT;	/* DAT 1.2 has no other */
}

} // namespace

namespace {

/*
 * Only mapped qualifiers are kept: most processes never lock it.  Never
 * destroyed (a thread may dequeue a request while the process exits), and
 * its lock is taken around fork, so a child finds it free.
 */
struct SpQuals {
	std::mutex lock;
	std::unordered_map<DAT_HANDLE, SpQual> quals;	/* lock */
	std::atomic<std::size_t> size{ 0 };
};

SpQuals &sp_quals() noexcept
{
	static SpQuals *q = [] {
		auto *t = new SpQuals;
		pthread_atfork([] { sp_quals().lock.lock(); },
			       [] { sp_quals().lock.unlock(); },
			       [] { sp_quals().lock.unlock(); });
		return t;
	}();
	return *q;
}

} // namespace

void sp_qual_created(DAT_IA_HANDLE ia, DAT_HANDLE sp,
		     DAT_CONN_QUAL qual) noexcept
{
	SpQuals &q = sp_quals();

	if (port_qual(qual) == qual) {
		sp_qual_freed(sp);
		return;
	}
	try {
		std::lock_guard<std::mutex> g(q.lock);
		q.quals[sp] = SpQual{ ia, qual };
		q.size.store(q.quals.size(), std::memory_order_relaxed);
	} catch (...) {
		/* no memory: queries report the port */
	}
}

SpQual sp_qual_freed(DAT_HANDLE sp) noexcept
{
	SpQuals &q = sp_quals();
	SpQual was = { nullptr, 0 };

	if (!q.size.load(std::memory_order_relaxed))
		return was;
	try {
		std::lock_guard<std::mutex> g(q.lock);
		auto it = q.quals.find(sp);
		if (it != q.quals.end()) {
			was = it->second;
			q.quals.erase(it);
		}
		q.size.store(q.quals.size(), std::memory_order_relaxed);
	} catch (...) {
	}
	return was;
}

void sp_qual_restore(DAT_HANDLE sp, const SpQual &was) noexcept
{
	if (was.qual)
		sp_qual_created(was.ia, sp, was.qual);
}

std::vector<std::pair<DAT_HANDLE, DAT_CONN_QUAL>>
sp_quals_of_ia_take(DAT_IA_HANDLE ia) noexcept
{
	SpQuals &q = sp_quals();
	std::vector<std::pair<DAT_HANDLE, DAT_CONN_QUAL>> v;

	if (!q.size.load(std::memory_order_relaxed))
		return v;
	try {
		std::lock_guard<std::mutex> g(q.lock);
		for (auto it = q.quals.begin(); it != q.quals.end();) {
			if (it->second.ia == ia) {
				v.emplace_back(it->first, it->second.qual);
				it = q.quals.erase(it);
			} else {
				++it;
			}
		}
		q.size.store(q.quals.size(), std::memory_order_relaxed);
	} catch (...) {
	}
	return v;
}

void sp_quals_restore(
	DAT_IA_HANDLE ia,
	const std::vector<std::pair<DAT_HANDLE, DAT_CONN_QUAL>> &v) noexcept
{
	for (const auto &[sp, qual] : v)
		sp_qual_created(ia, sp, qual);
}

DAT_CONN_QUAL sp_qual(DAT_HANDLE sp, DAT_CONN_QUAL port) noexcept
{
	SpQuals &q = sp_quals();

	if (!q.size.load(std::memory_order_relaxed))
		return port;
	try {
		std::lock_guard<std::mutex> g(q.lock);
		auto it = q.quals.find(sp);
		return it == q.quals.end() ? port : it->second.qual;
	} catch (...) {
		return port;
	}
}

void event2(const DAT_EVENT &in, ::dat2::DAT_EVENT &out) noexcept
{
	std::memset(&out, 0, sizeof(out));
	std::uint32_t n = (std::uint32_t)raw(in.event_number);
	out.event_number = as_enum<::dat2::DAT_EVENT_NUMBER>(event_number2(n));
	out.evd_handle = in.evd_handle;
	auto &o = out.event_data;
	const auto &i = in.event_data;

	switch (n) {
	case ::DAT_DTO_COMPLETION_EVENT:
		o.dto_completion_event_data.ep_handle =
			i.dto_completion_event_data.ep_handle;
		o.dto_completion_event_data.user_cookie.as_64 =
			i.dto_completion_event_data.user_cookie.as_64;
		o.dto_completion_event_data.status = dto_status2(
			(std::uint32_t)raw(i.dto_completion_event_data.status));
		o.dto_completion_event_data.transfered_length =
			(::dat2::DAT_SEG_LENGTH)
				i.dto_completion_event_data.transfered_length;
		o.dto_completion_event_data.operation = ::dat2::DAT_DTO_SEND;
		o.dto_completion_event_data.rmr_context = 0;
		break;
	case ::DAT_RMR_BIND_COMPLETION_EVENT:
		o.rmr_completion_event_data.rmr_handle =
			i.rmr_completion_event_data.rmr_handle;
		o.rmr_completion_event_data.user_cookie.as_64 =
			i.rmr_completion_event_data.user_cookie.as_64;
		o.rmr_completion_event_data.status =
			dto_status2((std::uint32_t)raw(
				i.rmr_completion_event_data.status));
		break;
	case ::DAT_CONNECTION_REQUEST_EVENT:
		o.cr_arrival_event_data.sp_handle.psp_handle =
			i.cr_arrival_event_data.sp_handle.psp_handle;
		o.cr_arrival_event_data.local_ia_address_ptr =
			(::dat2::DAT_IA_ADDRESS_PTR)
				i.cr_arrival_event_data.local_ia_address_ptr;
		o.cr_arrival_event_data.conn_qual =
			sp_qual(i.cr_arrival_event_data.sp_handle.psp_handle,
				i.cr_arrival_event_data.conn_qual);
		o.cr_arrival_event_data.cr_handle =
			i.cr_arrival_event_data.cr_handle;
		o.cr_arrival_event_data.truncate_flag = ::dat2::DAT_FALSE;
		break;
	case ::DAT_CONNECTION_EVENT_ESTABLISHED:
	case ::DAT_CONNECTION_EVENT_PEER_REJECTED:
	case ::DAT_CONNECTION_EVENT_NON_PEER_REJECTED:
	case ::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR:
	case ::DAT_CONNECTION_EVENT_DISCONNECTED:
	case ::DAT_CONNECTION_EVENT_BROKEN:
	case ::DAT_CONNECTION_EVENT_TIMED_OUT:
	case ::DAT_CONNECTION_EVENT_UNREACHABLE:
		o.connect_event_data.ep_handle = i.connect_event_data.ep_handle;
		o.connect_event_data.private_data_size =
			i.connect_event_data.private_data_size;
		o.connect_event_data.private_data =
			i.connect_event_data.private_data;
		break;
	case ::DAT_ASYNC_ERROR_EVD_OVERFLOW:
	case ::DAT_ASYNC_ERROR_IA_CATASTROPHIC:
	case ::DAT_ASYNC_ERROR_EP_BROKEN:
	case ::DAT_ASYNC_ERROR_TIMED_OUT:
	case ::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR:
		o.asynch_error_event_data.dat_handle =
			i.asynch_error_event_data.dat_handle;
		o.asynch_error_event_data.reason =
			i.asynch_error_event_data.reason;
		break;
	case ::DAT_SOFTWARE_EVENT:
		o.software_event_data.pointer = i.software_event_data.pointer;
		break;
	default:
		break;
	}
}

void ib_ext_attr2(std::uint32_t kflags, ::dat2::DAT_IA_ATTR &out) noexcept
{
	if (!(kflags & KDAT_UIA_IB_EXT))
		return;
	out.extension_supported = ::dat2::DAT_EXTENSION_IB;
	out.extension_version = DAT_IB_EXTENSION_VERSION;
}

void dto_ext2(std::uint32_t op, std::uint32_t flags, std::uint32_t immed,
	      ::dat2::DAT_EVENT &ev) noexcept
{
	namespace d2 = ::dat2;
	auto &d = ev.event_data.dto_completion_event_data;
	d2::DAT_IB_EXTENSION_EVENT_DATA x;
	bool ext = true;
	std::uint32_t dop = d2::DAT_DTO_SEND;

	if (ev.event_number != d2::DAT_DTO_COMPLETION_EVENT)
		return;
	std::memset(&x, 0, sizeof(x));
	switch (op) {
	case KDAT_UDTO_RECV:
		dop = d2::DAT_DTO_RECEIVE;
		ext = flags & KDAT_UDTO_F_IMMED;	/* a send with immediate */
		if (ext) {
			dop = d2::DAT_IB_DTO_RECV_MSG_IMMED;
			x.type = d2::DAT_IB_RECV_IMMED_DATA;
		}
		break;
	case KDAT_UDTO_RDMA_WRITE:
		dop = d2::DAT_DTO_RDMA_WRITE;
		ext = false;
		break;
	case KDAT_UDTO_RDMA_READ:
		dop = d2::DAT_DTO_RDMA_READ;
		ext = false;
		break;
	case KDAT_UDTO_RDMA_WRITE_IMMED:
		dop = d2::DAT_IB_DTO_RDMA_WRITE_IMMED;
		x.type = d2::DAT_IB_RDMA_WRITE_IMMED;
		break;
	case KDAT_UDTO_RECV_RDMA_IMMED:
		dop = d2::DAT_IB_DTO_RECV_IMMED;
		x.type = d2::DAT_IB_RDMA_WRITE_IMMED_DATA;
		break;
	case KDAT_UDTO_CMP_AND_SWAP:
		dop = d2::DAT_IB_DTO_CMP_SWAP;
		x.type = d2::DAT_IB_CMP_AND_SWAP;
		break;
	case KDAT_UDTO_FETCH_AND_ADD:
		dop = d2::DAT_IB_DTO_FETCH_ADD;
		x.type = d2::DAT_IB_FETCH_AND_ADD;
		break;
	default:	/* KDAT_UDTO_SEND, or an older module's 0 */
		ext = false;
		break;
	}
	d.operation = as_enum<d2::DAT_DTOS>(dop);
	if (!ext)
		return;
	ev.event_number = as_enum<d2::DAT_EVENT_NUMBER>(d2::DAT_IB_DTO_EVENT);
	x.status = d.status == d2::DAT_DTO_SUCCESS ? d2::DAT_OP_SUCCESS :
						    d2::DAT_IB_OP_ERR;
	if (flags & KDAT_UDTO_F_IMMED)
		x.val.immed.data = immed;
	static_assert(sizeof(x) <= sizeof(ev.event_extension_data));
	std::memcpy(ev.event_extension_data, &x, sizeof(x));
}

DAT_RETURN ext_status(DAT_RETURN r) noexcept
{
	std::uint32_t sub = DAT_GET_SUBTYPE(r);

	if (DAT_GET_TYPE(r) == DAT_INVALID_PARAMETER &&
	    sub >= DAT_INVALID_ARG2 && sub < DAT_INVALID_ARG10)
		return (DAT_RETURN)((r & ~0xffffu) | (sub + 1));
	return r;
}

void event1(const ::dat2::DAT_EVENT &in, DAT_EVENT &out) noexcept
{
	std::memset(&out, 0, sizeof(out));
	std::uint32_t n = (std::uint32_t)raw(in.event_number);
	out.event_number = as_enum<DAT_EVENT_NUMBER>(event_number1(n));
	out.evd_handle = in.evd_handle;
	/* what dat_evd_post_se takes: a software event's pointer */
	out.event_data.software_event_data.pointer =
		in.event_data.software_event_data.pointer;
}

/* ---- flags, parameters ------------------------------------------------ */

namespace {

/* {2.0, 1.2}: DAT_EVD_FLAGS */
constexpr BitPair kEvdFlags[] = {
	{ ::dat2::DAT_EVD_SOFTWARE_FLAG, ::DAT_EVD_SOFTWARE_FLAG },
	{ ::dat2::DAT_EVD_CR_FLAG, ::DAT_EVD_CR_FLAG },
	{ ::dat2::DAT_EVD_DTO_FLAG, ::DAT_EVD_DTO_FLAG },
	{ ::dat2::DAT_EVD_CONNECTION_FLAG, ::DAT_EVD_CONNECTION_FLAG },
	{ ::dat2::DAT_EVD_RMR_BIND_FLAG, ::DAT_EVD_RMR_BIND_FLAG },
	{ ::dat2::DAT_EVD_ASYNC_FLAG, ::DAT_EVD_ASYNC_FLAG },
};

/* {2.0, 1.2}: DAT_LMR_PARAM_MASK */
constexpr BitPair kLmrFields[] = {
	{ ::dat2::DAT_LMR_FIELD_IA_HANDLE, ::DAT_LMR_FIELD_IA_HANDLE },
	{ ::dat2::DAT_LMR_FIELD_MEM_TYPE, ::DAT_LMR_FIELD_MEM_TYPE },
	{ ::dat2::DAT_LMR_FIELD_REGION_DESC, ::DAT_LMR_FIELD_REGION_DESC },
	{ ::dat2::DAT_LMR_FIELD_LENGTH, ::DAT_LMR_FIELD_LENGTH },
	{ ::dat2::DAT_LMR_FIELD_PZ_HANDLE, ::DAT_LMR_FIELD_PZ_HANDLE },
	{ ::dat2::DAT_LMR_FIELD_MEM_PRIV, ::DAT_LMR_FIELD_MEM_PRIV },
	{ ::dat2::DAT_LMR_FIELD_LMR_CONTEXT, ::DAT_LMR_FIELD_LMR_CONTEXT },
	{ ::dat2::DAT_LMR_FIELD_RMR_CONTEXT, ::DAT_LMR_FIELD_RMR_CONTEXT },
	{ ::dat2::DAT_LMR_FIELD_REGISTERED_SIZE, ::DAT_LMR_FIELD_REGISTERED_SIZE },
	{ ::dat2::DAT_LMR_FIELD_REGISTERED_ADDRESS, ::DAT_LMR_FIELD_REGISTERED_ADDRESS },
};

/*
 * The strict forms of a_to_b/b_to_a, for the calls that refuse a bit
 * DAT 1.2 does not name (to12: false) or report only named bits (to2).
 */
template <std::size_t N>
bool to12(const BitPair (&bits)[N], std::uint64_t in, std::uint64_t &out)
{
	out = 0;
	for (const BitPair &b : bits) {
		if (in & b.a) {
			out |= b.b;
			in &= ~b.a;
		}
	}
	return in == 0;
}

template <std::size_t N>
std::uint64_t to2(const BitPair (&bits)[N], std::uint64_t in)
{
	std::uint64_t out = 0;

	for (const BitPair &b : bits)
		if (in & b.b)
			out |= b.a;
	return out;
}

} // namespace

bool evd_flags1(std::uint64_t in, DAT_EVD_FLAGS &out) noexcept
{
	std::uint64_t v;
	bool ok = to12(kEvdFlags, in, v);

	out = as_enum<DAT_EVD_FLAGS>(v);
	return ok;
}

std::uint64_t evd_flags2(std::uint64_t in) noexcept
{
	return to2(kEvdFlags, in);
}

void evd_param2(const DAT_EVD_PARAM &in, ::dat2::DAT_EVD_PARAM &out) noexcept
{
	std::memset(&out, 0, sizeof(out));
	out.ia_handle = in.ia_handle;
	out.evd_qlen = in.evd_qlen;
	std::uint64_t st = raw(in.evd_state), st2 = 0;
	/* DAT_EVD_STATE: the same names; CONFIG_THRESHOLD is NOTIFY|SOLICITED */
	if (st & ::DAT_EVD_STATE_ENABLED) st2 |= ::dat2::DAT_EVD_STATE_ENABLED;
	if (st & ::DAT_EVD_STATE_DISABLED) st2 |= ::dat2::DAT_EVD_STATE_DISABLED;
	if (st & ::DAT_EVD_STATE_WAITABLE) st2 |= ::dat2::DAT_EVD_STATE_WAITABLE;
	if (st & ::DAT_EVD_STATE_UNWAITABLE) st2 |= ::dat2::DAT_EVD_STATE_UNWAITABLE;
	if (st & ::DAT_EVD_STATE_CONFIG_NOTIFY) st2 |= ::dat2::DAT_EVD_STATE_CONFIG_NOTIFY;
	if (st & ::DAT_EVD_STATE_CONFIG_SOLICITED) st2 |= ::dat2::DAT_EVD_STATE_CONFIG_SOLICITED;
	out.evd_state = as_enum<::dat2::DAT_EVD_STATE>(st2);
	out.cno_handle = in.cno_handle;
	out.evd_flags = as_enum<::dat2::DAT_EVD_FLAGS>(evd_flags2(raw(in.evd_flags)));
}

bool mem_priv1(std::uint64_t in, DAT_MEM_PRIV_FLAGS &out) noexcept
{
	std::uint64_t v;
	bool ok = to12(kMemPriv, in, v);

	out = as_enum<DAT_MEM_PRIV_FLAGS>(v);
	return ok;
}

std::uint64_t mem_priv2(std::uint64_t in) noexcept
{
	return to2(kMemPriv, in);
}

bool lmr_mask1(std::uint64_t in, std::uint64_t &out) noexcept
{
	return to12(kLmrFields, in & ~(std::uint64_t)::dat2::DAT_LMR_FIELD_VA_TYPE,
		    out);
}

void lmr_param2(const DAT_LMR_PARAM &in, ::dat2::DAT_LMR_PARAM &out) noexcept
{
	std::memset(&out, 0, sizeof(out));
	out.ia_handle = in.ia_handle;
	switch (raw(in.mem_type)) {
	case ::DAT_MEM_TYPE_LMR:
		out.mem_type = ::dat2::DAT_MEM_TYPE_LMR;
		out.region_desc.for_lmr_handle = in.region_desc.for_lmr_handle;
		break;
	case ::DAT_MEM_TYPE_SHARED_VIRTUAL:
		out.mem_type = ::dat2::DAT_MEM_TYPE_SHARED_VIRTUAL;
		out.region_desc.for_shared_memory.virtual_address =
			in.region_desc.for_shared_memory.virtual_address;
		out.region_desc.for_shared_memory.shared_memory_id =
			in.region_desc.for_shared_memory.shared_memory_id;
		break;
	default:
		out.mem_type = ::dat2::DAT_MEM_TYPE_VIRTUAL;
		out.region_desc.for_va = in.region_desc.for_va;
		break;
	}
	out.length = in.length;
	out.pz_handle = in.pz_handle;
	out.mem_priv = as_enum<::dat2::DAT_MEM_PRIV_FLAGS>(mem_priv2(raw(in.mem_priv)));
	out.va_type = ::dat2::DAT_VA_TYPE_VA;
	out.lmr_context = in.lmr_context;
	out.rmr_context = in.rmr_context;
	out.registered_size = in.registered_size;
	out.registered_address = in.registered_address;
}

std::uint64_t completion_flags2(std::uint64_t in) noexcept
{
	return to2(kCompletionFlags, in);
}

void ia_attr2(const DAT_IA_ATTR &in, ::dat2::DAT_IA_ATTR &out) noexcept
{
	std::memset(&out, 0, sizeof(out));
	static_assert(sizeof(out.adapter_name) == sizeof(in.adapter_name));
	std::memcpy(out.adapter_name, in.adapter_name, sizeof(out.adapter_name));
	std::memcpy(out.vendor_name, in.vendor_name, sizeof(out.vendor_name));
	out.hardware_version_major = in.hardware_version_major;
	out.hardware_version_minor = in.hardware_version_minor;
	out.firmware_version_major = in.firmware_version_major;
	out.firmware_version_minor = in.firmware_version_minor;
	out.ia_address_ptr = (::dat2::DAT_IA_ADDRESS_PTR)in.ia_address_ptr;
	out.max_eps = in.max_eps;
	out.max_dto_per_ep = in.max_dto_per_ep;
	out.max_rdma_read_per_ep_in = in.max_rdma_read_per_ep_in;
	out.max_rdma_read_per_ep_out = in.max_rdma_read_per_ep_out;
	out.max_evds = in.max_evds;
	out.max_evd_qlen = in.max_evd_qlen;
	out.max_iov_segments_per_dto = in.max_iov_segments_per_dto;
	out.max_lmrs = in.max_lmrs;
	/* DAT_SEG_LENGTH is 32 bits in DAT 2.0: saturate */
	auto seg = [](DAT_VLEN v) {
		return (::dat2::DAT_SEG_LENGTH)(v > UINT32_MAX ? UINT32_MAX : v);
	};
	out.max_lmr_block_size = seg(in.max_lmr_block_size);
	out.max_lmr_virtual_address = in.max_lmr_virtual_address;
	out.max_pzs = in.max_pzs;
	out.max_message_size = seg(in.max_message_size);
	out.max_rdma_size = seg(in.max_rdma_size);
	out.max_rmrs = in.max_rmrs;
	out.max_rmr_target_address = in.max_rmr_target_address;
	out.max_srqs = in.max_srqs;
	out.max_ep_per_srq = in.max_ep_per_srq;
	out.max_recv_per_srq = in.max_recv_per_srq;
	out.max_iov_segments_per_rdma_read = in.max_iov_segments_per_rdma_read;
	out.max_iov_segments_per_rdma_write = in.max_iov_segments_per_rdma_write;
	out.max_rdma_read_in = in.max_rdma_read_in;
	out.max_rdma_read_out = in.max_rdma_read_out;
	out.max_rdma_read_per_ep_in_guaranteed =
		in.max_rdma_read_per_ep_in_guaranteed ? ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	out.max_rdma_read_per_ep_out_guaranteed =
		in.max_rdma_read_per_ep_out_guaranteed ? ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	out.zb_supported = ::dat2::DAT_FALSE;
	out.extension_supported = ::dat2::DAT_EXTENSION_NONE;
	out.extension_version = 0;
	out.num_transport_attr = 0;
	out.transport_attr = nullptr;
	out.num_vendor_attr = 0;
	out.vendor_attr = nullptr;
}

namespace {

/*
 * DAT 1.2's provider-specific attributes (a static array), plus the MTU:
 * one list per array and MTU value seen.
 */
struct NamedAttrs {
	const DAT_NAMED_ATTR *base;	/* DAT 1.2's list (static) */
	DAT_COUNT base_n;
	std::string mtu;
	std::uint32_t kflags;
	std::vector<::dat2::DAT_NAMED_ATTR> v;
};

std::mutex named_lock;
std::list<NamedAttrs> named_lists;	/* never shrinks: handed out */

const NamedAttrs &named2(const DAT_PROVIDER_ATTR &in, const std::string &mtu,
			 std::uint32_t kflags)
{
	std::lock_guard<std::mutex> g(named_lock);

	for (const NamedAttrs &n : named_lists)
		if (n.base == in.provider_specific_attr &&
		    n.base_n == in.num_provider_specific_attr && n.mtu == mtu &&
		    n.kflags == kflags)
			return n;
	NamedAttrs &a = named_lists.emplace_back();
	a.base = in.provider_specific_attr;
	a.base_n = in.num_provider_specific_attr;
	a.mtu = mtu;
	a.kflags = kflags;
	for (DAT_COUNT i = 0; i < in.num_provider_specific_attr; i++)
		a.v.push_back({ in.provider_specific_attr[i].name,
				in.provider_specific_attr[i].value });
	if (!a.mtu.empty())
		a.v.push_back({ "DAT_IB_TRANSPORT_MTU", a.mtu.c_str() });
	if (kflags & KDAT_UIA_IB_EXT) {
		const char *atomics =
			(kflags & KDAT_UIA_ATOMICS) ? "TRUE" : "FALSE";

		a.v.push_back({ DAT_IB_ATTR_IMMED_DATA, "TRUE" });
		a.v.push_back({ DAT_IB_ATTR_CMP_AND_SWAP, atomics });
		a.v.push_back({ DAT_IB_ATTR_FETCH_AND_ADD, atomics });
	}
	return a;
}

std::string read_line(const std::string &path)
{
	std::ifstream f(path);
	std::string l;

	std::getline(f, l);
	return l;
}

} // namespace

namespace {

/* ib_core's iboe_get_mtu(): the IB MTU a RoCE port runs on a netdev MTU */
std::string roce_mtu(long netdev_mtu)
{
	/* GRH, UDP, BTH, XRC DETH, AtomicETH, ICRC */
	long room = netdev_mtu - (40 + 8 + 12 + 4 + 28 + 4);

	for (long m : { 4096L, 2048L, 1024L, 512L, 256L })
		if (room >= m)
			return std::to_string(m);
	return {};
}

/* The netdev under RoCE device @dev_dir (rxe's `parent`, else device/net/). */
std::string roce_netdev(const std::string &dev_dir)
{
	std::string p = read_line(dev_dir + "/parent");
	std::error_code ec;

	if (!p.empty() && p.find('/') == std::string::npos)
		return p;
	for (const auto &d : std::filesystem::directory_iterator(
		     dev_dir + "/device/net", ec))
		return d.path().filename().string();
	return {};
}

} // namespace

std::string transport_mtu(const std::string &sys, const char *adapter)
{
	if (!adapter || !*adapter || std::strchr(adapter, '/') ||
	    !std::strcmp(adapter, "..") || !std::strcmp(adapter, "."))
		return {};
	std::string dev = sys + "/class/infiniband/" + adapter;
	std::string ports = dev + "/ports";
	std::vector<unsigned long> nums;
	std::error_code ec;

	for (const auto &d : std::filesystem::directory_iterator(ports, ec)) {
		const std::string n = d.path().filename().string();
		char *end;
		unsigned long v = std::strtoul(n.c_str(), &end, 10);

		if (!n.empty() && !*end)
			nums.push_back(v);
	}
	std::sort(nums.begin(), nums.end());
	std::string first;
	for (unsigned long p : nums) {
		std::string dir = ports + "/" + std::to_string(p);
		std::string l = read_line(dir + "/active_mtu");
		std::size_t k = 0;

		while (k < l.size() && std::isdigit((unsigned char)l[k]))
			k++;
		std::string mtu = l.substr(0, k);
		/* ib_core's sysfs has no active_mtu: RoCE's follows its netdev */
		if (mtu.empty() &&
		    read_line(dir + "/link_layer") == "Ethernet") {
			std::string nd = roce_netdev(dev);
			std::string v = nd.empty() || nd.find('/') != std::string::npos ?
						std::string() :
						read_line(sys + "/class/net/" + nd + "/mtu");
			char *end = nullptr;
			long n = std::strtol(v.c_str(), &end, 10);
			if (!v.empty() && end && !*end)
				mtu = roce_mtu(n);
		}
		if (mtu.empty())
			continue;
		if (read_line(dir + "/state").find("ACTIVE") != std::string::npos)
			return mtu;
		if (first.empty())
			first = mtu;
	}
	return first;
}

void provider_specific2(const DAT_PROVIDER_ATTR &in, const std::string &mtu,
			::dat2::DAT_PROVIDER_ATTR &out, std::uint32_t kflags) noexcept
{
	try {
		const NamedAttrs &n = named2(in, mtu, kflags);
		out.num_provider_specific_attr = (DAT_COUNT)n.v.size();
		out.provider_specific_attr =
			const_cast<::dat2::DAT_NAMED_ATTR *>(n.v.data());
	} catch (...) {
		out.num_provider_specific_attr = 0;
		out.provider_specific_attr = nullptr;
	}
}

void provider_attr2(const DAT_PROVIDER_ATTR &in,
		    const ::dat2::DAT_PROVIDER_INFO &info,
		    ::dat2::DAT_PROVIDER_ATTR &out) noexcept
{
	std::memset((void *)&out, 0, sizeof(out));	/* a const member */
	std::memcpy(out.provider_name, in.provider_name, sizeof(out.provider_name));
	out.provider_version_major = in.provider_version_major;
	out.provider_version_minor = in.provider_version_minor;
	out.dapl_version_major = info.dapl_version_major;
	out.dapl_version_minor = info.dapl_version_minor;
	std::uint64_t mt = raw(in.lmr_mem_types_supported), mt2 = 0;
	if (mt & ::DAT_MEM_TYPE_LMR) mt2 |= ::dat2::DAT_MEM_TYPE_LMR;
	if (mt & ::DAT_MEM_TYPE_SHARED_VIRTUAL) mt2 |= ::dat2::DAT_MEM_TYPE_SHARED_VIRTUAL;
	out.lmr_mem_types_supported = as_enum<::dat2::DAT_MEM_TYPE>(mt2);
	switch (raw(in.iov_ownership_on_return)) {
	case ::DAT_IOV_PROVIDER_NOMOD: out.iov_ownership_on_return = ::dat2::DAT_IOV_PROVIDER_NOMOD; break;
	case ::DAT_IOV_PROVIDER_MOD: out.iov_ownership_on_return = ::dat2::DAT_IOV_PROVIDER_MOD; break;
	default: out.iov_ownership_on_return = ::dat2::DAT_IOV_CONSUMER; break;
	}
	std::uint64_t q = raw(in.dat_qos_supported), q2 = 0;
	if (q & ::DAT_QOS_HIGH_THROUGHPUT) q2 |= ::dat2::DAT_QOS_HIGH_THROUGHPUT;
	if (q & ::DAT_QOS_LOW_LATENCY) q2 |= ::dat2::DAT_QOS_LOW_LATENCY;
	if (q & ::DAT_QOS_ECONOMY) q2 |= ::dat2::DAT_QOS_ECONOMY;
	if (q & ::DAT_QOS_PREMIUM) q2 |= ::dat2::DAT_QOS_PREMIUM;
	out.dat_qos_supported = as_enum<::dat2::DAT_QOS>(q2);
	out.completion_flags_supported = as_enum<::dat2::DAT_COMPLETION_FLAGS>(
		completion_flags2(raw(in.completion_flags_supported)));
	out.is_thread_safe = info.is_thread_safe;
	out.max_private_data_size = in.max_private_data_size;
	out.supports_multipath = in.supports_multipath ? ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	switch (raw(in.ep_creator)) {
	case ::DAT_PSP_CREATES_EP_IFASKED: out.ep_creator = ::dat2::DAT_PSP_CREATES_EP_IFASKED; break;
	case ::DAT_PSP_CREATES_EP_ALWAYS: out.ep_creator = ::dat2::DAT_PSP_CREATES_EP_ALWAYS; break;
	default: out.ep_creator = ::dat2::DAT_PSP_CREATES_EP_NEVER; break;
	}
	switch (raw(in.pz_support)) {
	/* DAT 2.0 has no DAT_PZ_SAME: kdat never reports it */
	case ::DAT_PZ_SHAREABLE: out.pz_support = ::dat2::DAT_PZ_SHAREABLE; break;
	default: out.pz_support = ::dat2::DAT_PZ_UNIQUE; break;
	}
	out.optimal_buffer_alignment = in.optimal_buffer_alignment;
	/* a const member in DAT 2.0: written as the bytes of the struct */
	::dat2::DAT_BOOLEAN merge[6][6];
	for (int a = 0; a < 6; a++)
		for (int b = 0; b < 6; b++)
			merge[a][b] = in.evd_stream_merging_supported[a][b] ?
					      ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	static_assert(sizeof(merge) == sizeof(out.evd_stream_merging_supported));
	std::memcpy((char *)&out + offsetof(::dat2::DAT_PROVIDER_ATTR,
					    evd_stream_merging_supported),
		    merge, sizeof(merge));
	out.srq_supported = in.srq_supported ? ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	out.srq_watermarks_supported = in.srq_watermarks_supported;
	out.srq_ep_pz_difference_supported =
		in.srq_ep_pz_difference_supported ? ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	out.srq_info_supported = in.srq_info_supported;
	out.ep_recv_info_supported = in.ep_recv_info_supported;
	out.lmr_sync_req = in.lmr_sync_req ? ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	out.dto_async_return_guaranteed =
		in.dto_async_return_guaranteed ? ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	out.rdma_write_for_rdma_read_req =
		in.rdma_write_for_rdma_read_req ? ::dat2::DAT_TRUE : ::dat2::DAT_FALSE;
	out.rdma_read_lmr_rmr_context_exposure = ::dat2::DAT_FALSE;
	out.rmr_scope_supported = ::dat2::DAT_RMR_SCOPE_EP;
	out.is_signal_safe = ::dat2::DAT_FALSE;
	out.ha_supported = ::dat2::DAT_FALSE;
	out.ha_loadbalancing = 0;	/* DAT_HA_LB_NONE */
	provider_specific2(in, std::string(), out);
}

} // namespace kdat::dat2p
