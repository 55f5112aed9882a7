// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Conversions every family of the DAT 2.0 provider needs (user/dat2/).
// The layouts and values differ in places (dat-facts.md): a DAT 2.0 value
// is always produced from the DAT 1.2 one by name, never by cast.
#pragma once

#include "dat2.hpp"

#include <uapi/kdat_abi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

namespace kdat::dat2p {

/* ------------------------------------------------------------------ */
/* Flags and enums by name (every family's conversions use these)       */

/* The enum @E holding the bits @v, whatever they are (a C caller's). */
template <class E>
inline E as_enum(std::uint64_t v) noexcept
{
	static_assert(std::is_enum_v<E>);
	std::underlying_type_t<E> u = static_cast<std::underlying_type_t<E>>(v);
	E e;

	std::memcpy(&e, &u, sizeof(e));
	return e;
}

/* One flag under its DAT 2.0 value (a) and its DAT 1.2 value (b). */
struct BitPair {
	std::uint64_t a, b;	/* the same name in standard A and B */
};

/*
 * A connection qualifier is an rdma_cm port.  OFED's rdma_cm provider
 * (openib_cma's SID_TO_PORT) maps a DAT 2.0 qualifier above 65535 into
 * 33534..65534, as (q % 32001) + 65535 - 32001; this provider maps it the
 * same way, so a kdat server and an OFED client meet (dapltest -T L's PSPs
 * and RSPs count up from 0xbabb1e).  kdat's own API refuses such a
 * qualifier instead (DAT_INVALID_ARG2).
 */
inline constexpr DAT_CONN_QUAL port_qual(DAT_CONN_QUAL q) noexcept
{
	return q > 0xffff ? q % 32001 + 65535 - 32001 : q;
}

/*
 * The qualifier a PSP or RSP was created with, where port_qual() changed
 * it: dat_psp_query, dat_rsp_query and the CR arrival event report the
 * consumer's own qualifier, as OFED's provider does, not the port.  Set
 * (or forgotten) at every create, forgotten before a free (the caller
 * puts it back if the free fails) and with the IA's close, so a handle
 * libdat hands out again never reports an older object's.  A request
 * dequeued after its PSP was freed names the port.
 */
void sp_qual_created(DAT_IA_HANDLE ia, DAT_HANDLE sp,
		     DAT_CONN_QUAL qual) noexcept;
/* What was kept of @sp: qual 0 if nothing. */
struct SpQual {
	DAT_IA_HANDLE ia;
	DAT_CONN_QUAL qual;
};
/* forget @sp's entry; what it was */
SpQual sp_qual_freed(DAT_HANDLE sp) noexcept;
/* put back what sp_qual_freed gave, after a free that failed */
void sp_qual_restore(DAT_HANDLE sp, const SpQual &was) noexcept;
/* forget @ia's entries before its close; put them back if it fails */
std::vector<std::pair<DAT_HANDLE, DAT_CONN_QUAL>>
sp_quals_of_ia_take(DAT_IA_HANDLE ia) noexcept;
void sp_quals_restore(
	DAT_IA_HANDLE ia,
	const std::vector<std::pair<DAT_HANDLE, DAT_CONN_QUAL>> &v) noexcept;
/* @sp's consumer qualifier, or @port if it was not mapped */
DAT_CONN_QUAL sp_qual(DAT_HANDLE sp, DAT_CONN_QUAL port) noexcept;

/* @v's named bits from A to B; the bits no pair names stay as they are. */
template <std::size_t N>
inline std::uint64_t a_to_b(std::uint64_t v, const BitPair (&m)[N]) noexcept
{
	std::uint64_t out = 0, known = 0;

	for (const BitPair &p : m) {
		known |= p.a;
		if (v & p.a)
			out |= p.b;
	}
	return out | (v & ~known);
}

template <std::size_t N>
inline std::uint64_t b_to_a(std::uint64_t v, const BitPair (&m)[N]) noexcept
{
	std::uint64_t out = 0, known = 0;

	for (const BitPair &p : m) {
		known |= p.b;
		if (v & p.b)
			out |= p.a;
	}
	return out | (v & ~known);
}

/* {2.0, 1.2}: DAT_COMPLETION_FLAGS (2.0's LMR_INVALIDATE_FENCE is unknown to 1.2) */
inline constexpr BitPair kCompletionFlags[] = {
	{ ::dat2::DAT_COMPLETION_SUPPRESS_FLAG, ::DAT_COMPLETION_SUPPRESS_FLAG },
	{ ::dat2::DAT_COMPLETION_SOLICITED_WAIT_FLAG, ::DAT_COMPLETION_SOLICITED_WAIT_FLAG },
	{ ::dat2::DAT_COMPLETION_UNSIGNALLED_FLAG, ::DAT_COMPLETION_UNSIGNALLED_FLAG },
	{ ::dat2::DAT_COMPLETION_BARRIER_FENCE_FLAG, ::DAT_COMPLETION_BARRIER_FENCE_FLAG },
	{ ::dat2::DAT_COMPLETION_EVD_THRESHOLD_FLAG, ::DAT_COMPLETION_EVD_THRESHOLD_FLAG },
};

/* {2.0, 1.2}: DAT_MEM_PRIV_FLAGS */
inline constexpr BitPair kMemPriv[] = {
	{ ::dat2::DAT_MEM_PRIV_LOCAL_READ_FLAG, ::DAT_MEM_PRIV_LOCAL_READ_FLAG },
	{ ::dat2::DAT_MEM_PRIV_REMOTE_READ_FLAG, ::DAT_MEM_PRIV_REMOTE_READ_FLAG },
	{ ::dat2::DAT_MEM_PRIV_LOCAL_WRITE_FLAG, ::DAT_MEM_PRIV_LOCAL_WRITE_FLAG },
	{ ::dat2::DAT_MEM_PRIV_REMOTE_WRITE_FLAG, ::DAT_MEM_PRIV_REMOTE_WRITE_FLAG },
	/* the IB extension's, kdat's extension of DAT 1.2 */
	{ ::dat2::DAT_IB_MEM_PRIV_REMOTE_ATOMIC, KDAT_MEM_PRIV_REMOTE_ATOMIC },
};

/* A DAT 1.2 status as DAT 2.0 spells it (type and subtype by name). */
::dat2::DAT_RETURN ret2(DAT_RETURN r) noexcept;

/*
 * DAT 2.0 triplets ({u64 va; u32 len; u32 lmr_context}, 16 bytes) as the
 * DAT 1.2 ones the core checks ({u32 ctx; u32 pad; u64 va; u64 len}).
 * Small lists stay on the stack; a NULL list with count 0 stays NULL so
 * the core still sees what the consumer passed.
 */
class Triplets {
public:
	Triplets(const ::dat2::DAT_LMR_TRIPLET *t, DAT_COUNT n)
	{
		if (!t || n <= 0)
			return;
		DAT_LMR_TRIPLET *d = n <= kInline ? inline_ : (heap_.resize(n), heap_.data());
		for (DAT_COUNT i = 0; i < n; i++) {
			d[i] = DAT_LMR_TRIPLET{};
			d[i].lmr_context = t[i].lmr_context;
			d[i].virtual_address = t[i].virtual_address;
			d[i].segment_length = t[i].segment_length;
		}
		p_ = d;
	}
	Triplets(const Triplets &) = delete;
	Triplets &operator=(const Triplets &) = delete;

	DAT_LMR_TRIPLET *get() { return p_; }

private:
	static constexpr DAT_COUNT kInline = 8;
	DAT_LMR_TRIPLET inline_[kInline];
	std::vector<DAT_LMR_TRIPLET> heap_;
	DAT_LMR_TRIPLET *p_ = nullptr;
};

/* ---- handles, events, parameters (convert.cpp) ---------------------- */

/* DAT_HANDLE_TYPE by name (DAT 2.0 adds CSP; -1: no such name). */
int handle_type2(DAT_HANDLE_TYPE t) noexcept;

/*
 * A DAT 1.2 event as DAT 2.0 lays it out (120 bytes, 48 in DAT 1.2): the
 * event number and DTO status by name; handles are the same pointers.
 * A DTO completion's `operation` is DAT_DTO_SEND and `rmr_context` 0:
 * neither the DAT 1.2 event nor kdat's ring entry carries the opcode.
 * A CR arrival's truncate_flag is DAT_FALSE (kdat never truncates).
 */
void event2(const DAT_EVENT &in, ::dat2::DAT_EVENT &out) noexcept;
/*
 * What kdat says of a DTO completion beyond DAT 1.2 (kdat_uevent.dto_op,
 * dto_flags, immed_data) applied to the DAT 2.0 event event2 made of it:
 * `operation` by name (DAT_DTO_SEND for an unknown one, an older module's),
 * and the IB extension's completions - RDMA Write with immediate data on
 * either side, a receive that carried immediate data, compare-and-swap,
 * fetch-and-add - become DAT_IB_DTO_EVENT with DAT_IB_EXTENSION_EVENT_DATA
 * in event_extension_data (type, status DAT_OP_SUCCESS or DAT_IB_OP_ERR,
 * the immediate data).  Other events are left alone.
 */
void dto_ext2(std::uint32_t op, std::uint32_t flags, std::uint32_t immed,
	      ::dat2::DAT_EVENT &ev) noexcept;

/*
 * dat_extension_op's DAT_IB_* operations and what they take, as read from
 * its variable arguments (ia.cpp); @op is a KDAT_POST_* value.
 */
struct ExtPost {
	std::uint32_t op;
	DAT_COUNT n;
	const ::dat2::DAT_LMR_TRIPLET *iov;
	::dat2::DAT_DTO_COOKIE cookie;
	const ::dat2::DAT_RMR_TRIPLET *remote;
	std::uint64_t compare_add, swap;
	std::uint32_t immed;
	std::uint64_t flags;
};

/*
 * A status of the kernel's kdat_ep_post_* (arguments numbered as theirs)
 * as dat_extension_op's (ep, op, then theirs: one more from the second on).
 */
DAT_RETURN ext_status(DAT_RETURN r) noexcept;

/* A DAT 2.0 event (what dat_evd_post_se takes) as DAT 1.2's. */
void event1(const ::dat2::DAT_EVENT &in, DAT_EVENT &out) noexcept;

/* DAT_EVD_FLAGS by name; false if @in has a bit DAT 1.2 does not name. */
bool evd_flags1(std::uint64_t in, DAT_EVD_FLAGS &out) noexcept;
std::uint64_t evd_flags2(std::uint64_t in) noexcept;
void evd_param2(const DAT_EVD_PARAM &in, ::dat2::DAT_EVD_PARAM &out) noexcept;

/* DAT_MEM_PRIV_FLAGS by name; false if @in has a bit DAT 1.2 does not name. */
bool mem_priv1(std::uint64_t in, DAT_MEM_PRIV_FLAGS &out) noexcept;
std::uint64_t mem_priv2(std::uint64_t in) noexcept;
/* DAT_LMR_PARAM_MASK: false if @in names a field DAT 2.0 does not have. */
bool lmr_mask1(std::uint64_t in, std::uint64_t &out) noexcept;
void lmr_param2(const DAT_LMR_PARAM &in, ::dat2::DAT_LMR_PARAM &out) noexcept;

/* DAT_COMPLETION_FLAGS by name (unknown bits dropped). */
std::uint64_t completion_flags2(std::uint64_t in) noexcept;

/*
 * The IA and provider attributes: every field DAT 1.2 reports, by name;
 * what only DAT 2.0 has: zero-based VAs, extensions, HA, RMR context
 * exposure, signal safety: none.  dapl_version and is_thread_safe are
 * the dat.conf line's (what libdat2 keys its registry on), the rest the
 * DAT 1.2 query's.
 */
void ia_attr2(const DAT_IA_ATTR &in, ::dat2::DAT_IA_ATTR &out) noexcept;
/*
 * The IB extension in the IA attributes of an IA whose KDAT_UIA_* flags
 * are @kflags: with KDAT_UIA_IB_EXT, extension_supported DAT_EXTENSION_IB
 * and extension_version DAT_IB_EXTENSION_VERSION (what the installed
 * header defines); else none (what ia_attr2 says).
 */
void ib_ext_attr2(std::uint32_t kflags, ::dat2::DAT_IA_ATTR &out) noexcept;
void provider_attr2(const DAT_PROVIDER_ATTR &in,
		    const ::dat2::DAT_PROVIDER_INFO &info,
		    ::dat2::DAT_PROVIDER_ATTR &out) noexcept;

/*
 * The active MTU of RDMA device @adapter, from sysfs under @sys (/sys):
 * its first ACTIVE port's, else its first port's ("1024"); empty if
 * unknown.  kdat's IA is the device, and this is what OFED's providers
 * call DAT_IB_TRANSPORT_MTU.  A port's active_mtu file if there is one;
 * ib_core (6.1) has none, so for an Ethernet (RoCE, rxe) port the MTU
 * ib_core derives from its netdev's (iboe_get_mtu); an InfiniBand port
 * without the file: unknown (the kernel's IA attributes do not carry it).
 */
std::string transport_mtu(const std::string &sys, const char *adapter);

/*
 * The provider-specific attributes of a DAT 2.0 provider attribute set:
 * DAT 1.2's, plus DAT_IB_TRANSPORT_MTU = @mtu if not empty (dtestsrq
 * sizes its buffers by it), and with KDAT_UIA_IB_EXT in @kflags the IB
 * extension's DAT_IB_IMMED_DATA, DAT_IB_CMP_AND_SWAP, DAT_IB_FETCH_AND_ADD
 * ("TRUE"; the atomics "FALSE" without KDAT_UIA_ATOMICS), as OFED's
 * providers report them (dtestx reads them).  Storage lives as long as
 * the process (one list per distinct set).
 */
void provider_specific2(const DAT_PROVIDER_ATTR &in, const std::string &mtu,
			::dat2::DAT_PROVIDER_ATTR &out,
			std::uint32_t kflags = 0) noexcept;

/* ---- the provider (provider.cpp) ------------------------------------- */

/*
 * One IA name libdaplkdat serves (one dat.conf line): its own copy of
 * provider_table (first member: DAT_HANDLE_TO_PROVIDER of its objects),
 * because libdat2's dat_ia_close takes the IA name from the table's
 * device_name.  Never freed.
 */
struct Served {
	::dat2::DAT_PROVIDER table;
	std::string name;		/* the IA name (device_name) */
	std::string kernel_name;	/* the kdat IA it opens */
	::dat2::DAT_PROVIDER_INFO info;
};

/* The record of dat.conf line (@name, @thread_safe), or null. */
const Served *served(const char *name, bool thread_safe) noexcept;
/*
 * The ia_open entry of a table serving lines of @thread_safe (libdat2
 * passes the name only: the entry itself says which line was opened).
 */
::dat2::DAT_IA_OPEN_FUNC ia_open_for(bool thread_safe) noexcept;
/* The record whose table is @face, or null (provider_table itself). */
const Served *served_by_table(const void *face) noexcept;
/*
 * The kdat IA named by dat.conf's ia_params: the first word, quotes and
 * surrounding blanks dropped ("rxe0", " \"rxe0\" ", "rxe0 1": rxe0; a
 * port word is accepted and ignored: kdat IAs are per device).  Empty if
 * there is none.
 */
std::string kernel_ia_from_params(const char *params);
/* What dat_provider_init does, minus the registration (tests). */
const Served *serve(const ::dat2::DAT_PROVIDER_INFO &info,
		    const char *params);

/* The DAT 1.2 table libdaplkdat's objects dispatch through (built-in). */
DAT_PROVIDER *provider12() noexcept;

/* dat_ia_open of libdaplkdat (ia.cpp): @face is the table to start with. */
DAT_RETURN ia_open(const char *name, const std::string &kernel_name,
		   DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
		   DAT_IA_HANDLE *ia, const void *face);

/* Each family fills its entries of the DAT 2.0 table. */
void fill_ia(::dat2::DAT_PROVIDER &t);	/* ia.cpp (IA, PZ, CNO, helpers) */
void fill_evd(::dat2::DAT_PROVIDER &t);	/* evd.cpp */
void fill_lmr(::dat2::DAT_PROVIDER &t);	/* lmr.cpp */
void fill_ep_srq_cm(::dat2::DAT_PROVIDER &t);	/* ep.cpp, srq.cpp, cm.cpp */

/*
 * The DAT 2.0 table: every entry filled (fill_* above), once, before the
 * first registration.  Objects of an IA opened under a dat.conf name
 * start with that name's copy (Served::table); provider_table itself is
 * what an IA opened under a name no dat_provider_init announced starts
 * with (the host tests).
 */
extern ::dat2::DAT_PROVIDER provider_table;
/* Fill provider_table (idempotent, thread-safe). */
void fill_provider_table();
/* Is @face provider_table or a Served copy of it? */
bool is_our_table(const void *face) noexcept;

} // namespace kdat::dat2p
