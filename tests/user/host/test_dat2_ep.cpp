// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libdaplkdat (user/dat2/): the EP, SRQ, CR, PSP/RSP/CSP and RMR families
// of the DAT 2.0 face, on the fake /dev/kdat.
//
//   Dat2Triplets, Dat2EpConvert  every field and constant of every
//       conversion (ep_convert.hpp), both ways, each mask bit alone
//   Dat2EpTable, Dat2Ep  the table entries (fill_ep_srq_cm) on an IA whose objects
//       start with that DAT 2.0 table (Ia::open with a face, as
//       libdaplkdat's ia_open does): what reaches the kernel, what comes
//       back, the DAT 2.0 status of each refusal, and that the 2.0-only
//       calls are "not supported"
//
// What the entries send is what libdat's DAT 1.2 calls send (those are
// tested in test_cm.cpp / test_srq.cpp and, against the module, in the
// guest); here only the translation is checked.
#include "dat2/ep_convert.hpp"

/* this file's fixture reads no dat.conf (test_util.hpp names one) */
#ifndef DAT_SHIPPED_CONF
#define DAT_SHIPPED_CONF "/nonexistent/dat.conf"
#endif
#include "test_util.hpp"

#include <functional>
#include <ostream>

using kdat::dat2p::a_to_b;
using kdat::dat2p::b_to_a;

namespace {

/* ------------------------------------------------------------------ */
/* DAT 2.0 statuses                                                     */

struct R2 {
	dat2::DAT_RETURN v;
	bool operator==(const R2 &o) const { return v == o.v; }
};

std::ostream &operator<<(std::ostream &os, const R2 &r)
{
	return os << "0x" << std::hex << r.v << std::dec;
}

#define EXPECT_D2(expected, expr) EXPECT_EQ(R2{ (expected) }, R2{ (expr) })
#define ASSERT_D2(expected, expr) ASSERT_EQ(R2{ (expected) }, R2{ (expr) })

constexpr dat2::DAT_RETURN OK2 = dat2::DAT_SUCCESS;

dat2::DAT_RETURN E2(dat2::DAT_RETURN type, dat2::DAT_RETURN sub = 0)
{
	return dat2::v_DAT_CLASS_ERROR | type | sub;
}

dat2::DAT_RETURN ARG2(int n)
{
	static const dat2::DAT_RETURN a[] = {
		dat2::DAT_INVALID_ARG1, dat2::DAT_INVALID_ARG2,
		dat2::DAT_INVALID_ARG3, dat2::DAT_INVALID_ARG4,
		dat2::DAT_INVALID_ARG5, dat2::DAT_INVALID_ARG6,
		dat2::DAT_INVALID_ARG7, dat2::DAT_INVALID_ARG8,
	};
	return E2(dat2::DAT_INVALID_PARAMETER, a[n - 1]);
}

dat2::DAT_RETURN BAD2(dat2::DAT_RETURN sub)
{
	return E2(dat2::DAT_INVALID_HANDLE, sub);
}

const dat2::DAT_RETURN kNotImpl = dat2::v_DAT_CLASS_ERROR | dat2::DAT_NOT_IMPLEMENTED;
const dat2::DAT_RETURN kNoModel = dat2::v_DAT_CLASS_ERROR | dat2::DAT_MODEL_NOT_SUPPORTED;

template <class P>
std::uint64_t u64(P *p)
{
	return (std::uint64_t)(std::uintptr_t)p;
}

template <class T = void>
T *ptr(std::uintptr_t v)
{
	return reinterpret_cast<T *>(v);
}

} // namespace

/* ------------------------------------------------------------------ */
/* Conversions                                                          */

/* DAT 2.0 triplets are 16 bytes ({va, len, ctx}); the core sees 1.2's. */
TEST(Dat2Triplets, EveryFieldReachesTheDat12Layout)
{
	static_assert(sizeof(dat2::DAT_LMR_TRIPLET) == 16);
	dat2::DAT_LMR_TRIPLET in[10];
	for (int i = 0; i < 10; i++)
		in[i] = { 0x1000u * (i + 1), 64u + i, 7u + i };
	for (DAT_COUNT n : { 1, 8, 10 }) {	/* inline and heap */
		kdat::dat2p::Triplets t(in, n);
		for (DAT_COUNT i = 0; i < n; i++) {
			EXPECT_EQ(t.get()[i].virtual_address, in[i].virtual_address);
			EXPECT_EQ(t.get()[i].segment_length, in[i].segment_length);
			EXPECT_EQ(t.get()[i].lmr_context, in[i].lmr_context);
		}
	}
	kdat::dat2p::Triplets none(nullptr, 0);
	EXPECT_EQ(none.get(), nullptr);
}

TEST(Dat2EpConvert, RmrTripletAndItsNullArgument)
{
	static_assert(sizeof(dat2::DAT_RMR_TRIPLET) == 16);
	const dat2::DAT_RMR_TRIPLET r = { 0x1234567890ull, 0xfffffff0u, 0x77u };
	DAT_RMR_TRIPLET d = kdat::dat2p::rmr_triplet12(r);
	EXPECT_EQ(0x77u, d.rmr_context);
	EXPECT_EQ(0x1234567890ull, d.target_address);
	EXPECT_EQ(0xfffffff0ull, d.segment_length);
	kdat::dat2p::RmrArg a(&r), none(nullptr);
	ASSERT_NE(nullptr, a.get());
	EXPECT_EQ(0x1234567890ull, a.get()->target_address);
	EXPECT_EQ(nullptr, none.get());
}

/* The flag enums: each named bit by name, unknown bits unchanged. */
TEST(Dat2EpConvert, FlagBitsByNameAndUnknownBitsPassThrough)
{
	using namespace kdat::dat2p;

	struct { std::uint64_t v2, v12; } completion[] = {
		{ dat2::DAT_COMPLETION_DEFAULT_FLAG, DAT_COMPLETION_DEFAULT_FLAG },
		{ dat2::DAT_COMPLETION_SUPPRESS_FLAG, DAT_COMPLETION_SUPPRESS_FLAG },
		{ dat2::DAT_COMPLETION_SOLICITED_WAIT_FLAG, DAT_COMPLETION_SOLICITED_WAIT_FLAG },
		{ dat2::DAT_COMPLETION_UNSIGNALLED_FLAG, DAT_COMPLETION_UNSIGNALLED_FLAG },
		{ dat2::DAT_COMPLETION_BARRIER_FENCE_FLAG, DAT_COMPLETION_BARRIER_FENCE_FLAG },
		{ dat2::DAT_COMPLETION_EVD_THRESHOLD_FLAG, DAT_COMPLETION_EVD_THRESHOLD_FLAG },
		/* 2.0 only: the core decides about a bit it does not know */
		{ dat2::DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG, 0x20 },
	};
	for (auto &c : completion) {
		EXPECT_EQ(c.v12, a_to_b(c.v2, kCompletionFlags));
		EXPECT_EQ(c.v2, b_to_a(c.v12, kCompletionFlags));
	}
	EXPECT_EQ((std::uint64_t)(DAT_COMPLETION_SUPPRESS_FLAG |
				  DAT_COMPLETION_BARRIER_FENCE_FLAG),
		  a_to_b(dat2::DAT_COMPLETION_SUPPRESS_FLAG |
			 dat2::DAT_COMPLETION_BARRIER_FENCE_FLAG, kCompletionFlags));

	struct { std::uint64_t v2, v12; } qos[] = {
		{ dat2::DAT_QOS_BEST_EFFORT, DAT_QOS_BEST_EFFORT },
		{ dat2::DAT_QOS_HIGH_THROUGHPUT, DAT_QOS_HIGH_THROUGHPUT },
		{ dat2::DAT_QOS_LOW_LATENCY, DAT_QOS_LOW_LATENCY },
		{ dat2::DAT_QOS_ECONOMY, DAT_QOS_ECONOMY },
		{ dat2::DAT_QOS_PREMIUM, DAT_QOS_PREMIUM },
		{ 0x40, 0x40 },
	};
	for (auto &c : qos) {
		EXPECT_EQ(c.v12, a_to_b(c.v2, kQos));
		EXPECT_EQ(c.v2, b_to_a(c.v12, kQos));
	}

	EXPECT_EQ((std::uint64_t)DAT_CONNECT_DEFAULT_FLAG,
		  a_to_b(dat2::DAT_CONNECT_DEFAULT_FLAG, kConnectFlags));
	EXPECT_EQ((std::uint64_t)DAT_CONNECT_MULTIPATH_FLAG,
		  a_to_b(dat2::DAT_CONNECT_MULTIPATH_FLAG, kConnectFlags));
	EXPECT_EQ(0x2u, a_to_b(dat2::DAT_CONNECT_MULTIPATH_REQUIRED_FLAG,
			       kConnectFlags));	/* 2.0 only */

	EXPECT_EQ((std::uint64_t)DAT_CLOSE_ABRUPT_FLAG,
		  a_to_b(dat2::DAT_CLOSE_ABRUPT_FLAG, kCloseFlags));
	EXPECT_EQ((std::uint64_t)DAT_CLOSE_GRACEFUL_FLAG,
		  a_to_b(dat2::DAT_CLOSE_GRACEFUL_FLAG, kCloseFlags));

	EXPECT_EQ((std::uint64_t)DAT_PSP_CONSUMER_FLAG,
		  a_to_b(dat2::DAT_PSP_CONSUMER_FLAG, kPspFlags));
	EXPECT_EQ((std::uint64_t)DAT_PSP_PROVIDER_FLAG,
		  a_to_b(dat2::DAT_PSP_PROVIDER_FLAG, kPspFlags));
	EXPECT_EQ((std::uint64_t)dat2::DAT_PSP_PROVIDER_FLAG,
		  b_to_a(DAT_PSP_PROVIDER_FLAG, kPspFlags));

	struct { std::uint64_t v2, v12; } priv[] = {
		{ dat2::DAT_MEM_PRIV_NONE_FLAG, DAT_MEM_PRIV_NONE_FLAG },
		{ dat2::DAT_MEM_PRIV_LOCAL_READ_FLAG, DAT_MEM_PRIV_LOCAL_READ_FLAG },
		{ dat2::DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_MEM_PRIV_REMOTE_READ_FLAG },
		{ dat2::DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_MEM_PRIV_LOCAL_WRITE_FLAG },
		{ dat2::DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_MEM_PRIV_REMOTE_WRITE_FLAG },
		{ dat2::DAT_MEM_PRIV_ALL_FLAG, DAT_MEM_PRIV_ALL_FLAG },
	};
	for (auto &c : priv) {
		EXPECT_EQ(c.v12, a_to_b(c.v2, kMemPriv));
		EXPECT_EQ(c.v2, b_to_a(c.v12, kMemPriv));
	}
}

/* DAT 2.0 inserted DAT_EP_FIELD_COMM: the handle bits moved, not the attribute bits. */
TEST(Dat2EpConvert, EpParamMaskBitsByName)
{
	using kdat::dat2p::kEpMask;
	struct { std::uint64_t v2, v12; } bits[] = {
		{ 0x001, DAT_EP_FIELD_IA_HANDLE },
		{ 0x002, DAT_EP_FIELD_EP_STATE },
		{ 0x008, DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR },
		{ 0x010, DAT_EP_FIELD_LOCAL_PORT_QUAL },
		{ 0x020, DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR },
		{ 0x040, DAT_EP_FIELD_REMOTE_PORT_QUAL },
		{ 0x080, DAT_EP_FIELD_PZ_HANDLE },
		{ 0x100, DAT_EP_FIELD_RECV_EVD_HANDLE },
		{ 0x200, DAT_EP_FIELD_REQUEST_EVD_HANDLE },
		{ 0x400, DAT_EP_FIELD_CONNECT_EVD_HANDLE },
		{ 0x800, DAT_EP_FIELD_SRQ_HANDLE },
	};
	for (auto &b : bits) {
		EXPECT_EQ(b.v12, a_to_b(b.v2, kEpMask)) << std::hex << b.v2;
		EXPECT_EQ(b.v2, b_to_a(b.v12, kEpMask)) << std::hex << b.v2;
	}
	EXPECT_EQ(0x800u, dat2::v_DAT_EP_FIELD_SRQ_HANDLE);	/* dat-facts.md */
	EXPECT_EQ(0x400u, DAT_EP_FIELD_SRQ_HANDLE);
	EXPECT_EQ(0x4u, kdat::dat2p::kEpComm2);
	/* attribute bits keep their values; each is named */
	for (std::uint64_t b = 0x1000; b <= 0x40000000; b <<= 1) {
		EXPECT_EQ(b, a_to_b(b, kEpMask)) << std::hex << b;
		EXPECT_EQ(b, b_to_a(b, kEpMask)) << std::hex << b;
	}
	EXPECT_EQ((std::uint64_t)DAT_EP_FIELD_ALL,
		  a_to_b(dat2::v_DAT_EP_FIELD_ALL & ~kdat::dat2p::kEpComm2, kEpMask));
	EXPECT_EQ((std::uint64_t)DAT_EP_FIELD_EP_ATTR_ALL,
		  a_to_b(dat2::v_DAT_EP_FIELD_EP_ATTR_ALL, kEpMask));
	/* a bit neither names goes through, for the core to refuse */
	EXPECT_EQ(0x80000000u, a_to_b(0x80000000u, kEpMask));
}

TEST(Dat2EpConvert, OtherParamMasksKeepTheirNames)
{
	using namespace kdat::dat2p;
	for (auto &p : kSrqMask)
		EXPECT_EQ(p.a, p.b);
	for (auto &p : kCrMask)
		EXPECT_EQ(p.a, p.b);
	for (auto &p : kPspMask)
		EXPECT_EQ(p.a, p.b);
	for (auto &p : kRspMask)
		EXPECT_EQ(p.a, p.b);
	for (auto &p : kRmrMask)
		EXPECT_EQ(p.a, p.b);
	EXPECT_EQ((std::uint64_t)DAT_SRQ_FIELD_ALL, a_to_b(dat2::DAT_SRQ_FIELD_ALL, kSrqMask));
	EXPECT_EQ((std::uint64_t)DAT_CR_FIELD_ALL, a_to_b(dat2::DAT_CR_FIELD_ALL, kCrMask));
	EXPECT_EQ((std::uint64_t)DAT_PSP_FIELD_ALL, a_to_b(dat2::DAT_PSP_FIELD_ALL, kPspMask));
	EXPECT_EQ((std::uint64_t)DAT_RSP_FIELD_ALL, a_to_b(dat2::DAT_RSP_FIELD_ALL, kRspMask));
	EXPECT_EQ((std::uint64_t)DAT_RMR_FIELD_ALL,
		  a_to_b(dat2::DAT_RMR_FIELD_ALL & ~(dat2::DAT_RMR_FIELD_RMR_SCOPE |
						     dat2::DAT_RMR_FIELD_VA_TYPE),
			 kRmrMask));
}

TEST(Dat2EpConvert, StatesByName)
{
	using kdat::dat2p::ep_state2;
	using kdat::dat2p::srq_state2;
	/* DAT 2.0 reversed ERROR and OPERATIONAL (dat-facts.md) */
	EXPECT_EQ(dat2::DAT_SRQ_STATE_OPERATIONAL, srq_state2(DAT_SRQ_STATE_OPERATIONAL));
	EXPECT_EQ(dat2::DAT_SRQ_STATE_ERROR, srq_state2(DAT_SRQ_STATE_ERROR));
	EXPECT_EQ(1, (int)dat2::DAT_SRQ_STATE_OPERATIONAL);
	EXPECT_EQ(0, (int)DAT_SRQ_STATE_OPERATIONAL);

	struct { DAT_EP_STATE s12; dat2::DAT_EP_STATE s2; } ep[] = {
#define S(n) { DAT_EP_STATE_##n, dat2::DAT_EP_STATE_##n },
		S(UNCONNECTED) S(UNCONFIGURED_UNCONNECTED) S(RESERVED)
		S(UNCONFIGURED_RESERVED) S(PASSIVE_CONNECTION_PENDING)
		S(UNCONFIGURED_PASSIVE) S(ACTIVE_CONNECTION_PENDING)
		S(TENTATIVE_CONNECTION_PENDING) S(UNCONFIGURED_TENTATIVE)
		S(CONNECTED) S(DISCONNECT_PENDING) S(DISCONNECTED)
		S(COMPLETION_PENDING)
#undef S
	};
	for (auto &s : ep) {
		EXPECT_EQ(s.s2, ep_state2(s.s12));
		/* and back, through the modify path */
		dat2::DAT_EP_PARAM in = {};
		DAT_EP_PARAM out = {};
		in.ep_state = s.s2;
		kdat::dat2p::ep_param12(in, dat2::v_DAT_EP_FIELD_EP_STATE, out);
		EXPECT_EQ(s.s12, out.ep_state);
	}
	/* 2.0's multipath states are connected ones */
	for (auto s : { dat2::DAT_EP_STATE_CONNECTED_SINGLE_PATH,
			dat2::DAT_EP_STATE_CONNECTED_MULTI_PATH }) {
		dat2::DAT_EP_PARAM in = {};
		DAT_EP_PARAM out = {};
		in.ep_state = s;
		kdat::dat2p::ep_param12(in, dat2::v_DAT_EP_FIELD_EP_STATE, out);
		EXPECT_EQ(DAT_EP_STATE_CONNECTED, out.ep_state);
	}
}

namespace {

/* A DAT 1.2 EP_PARAM with a distinct value in every field. */
DAT_EP_PARAM ep_param_sample()
{
	DAT_EP_PARAM p;
	std::memset(&p, 0, sizeof(p));
	p.ia_handle = ptr(0x1001);
	p.ep_state = DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
	p.local_ia_address_ptr = ptr<DAT_SOCK_ADDR>(0x1002);
	p.local_port_qual = 0x1003;
	p.remote_ia_address_ptr = ptr<DAT_SOCK_ADDR>(0x1004);
	p.remote_port_qual = 0x1005;
	p.pz_handle = ptr(0x1006);
	p.recv_evd_handle = ptr(0x1007);
	p.request_evd_handle = ptr(0x1008);
	p.connect_evd_handle = ptr(0x1009);
	p.srq_handle = ptr(0x100a);
	DAT_EP_ATTR &a = p.ep_attr;
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_message_size = 0x100000005ull;	/* beyond DAT_SEG_LENGTH */
	a.max_rdma_size = 0x2000;
	a.qos = (DAT_QOS)(DAT_QOS_LOW_LATENCY | DAT_QOS_ECONOMY);
	a.recv_completion_flags = (DAT_COMPLETION_FLAGS)(
		DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_EVD_THRESHOLD_FLAG);
	a.request_completion_flags = (DAT_COMPLETION_FLAGS)(
		DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG);
	a.max_recv_dtos = 11;
	a.max_request_dtos = 12;
	a.max_recv_iov = 13;
	a.max_request_iov = 14;
	a.max_rdma_read_in = 15;
	a.max_rdma_read_out = 16;
	a.srq_soft_hw = DAT_HW_DEFAULT;
	a.max_rdma_read_iov = 17;
	a.max_rdma_write_iov = 18;
	a.ep_transport_specific_count = 19;
	a.ep_transport_specific = ptr<DAT_NAMED_ATTR>(0x100b);
	a.ep_provider_specific_count = 20;
	a.ep_provider_specific = ptr<DAT_NAMED_ATTR>(0x100c);
	return p;
}

/* One field of DAT 2.0's EP_PARAM: its mask bit, its bits, the sample's value. */
struct Field2 {
	const char *name;
	std::uint64_t bit;
	std::function<std::uint64_t(const dat2::DAT_EP_PARAM &)> get;
	std::uint64_t want;	/* ep_param_sample() converted */
};

std::vector<Field2> ep_fields2()
{
	using P = const dat2::DAT_EP_PARAM &;
#define F(bit, expr, want)                                                    \
	Field2{ #bit, dat2::v_DAT_EP_FIELD_##bit,                             \
		[](P p) -> std::uint64_t { return (std::uint64_t)(expr); },   \
		(std::uint64_t)(want) }
	return {
		F(IA_HANDLE, u64(p.ia_handle), 0x1001),
		F(EP_STATE, p.ep_state, dat2::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING),
		Field2{ "COMM", DAT_EP_FIELD_COMM,
			[](P p) -> std::uint64_t {
				return (std::uint64_t)(std::uint32_t)p.comm.domain << 40 ^
				       (std::uint64_t)(std::uint32_t)p.comm.type << 20 ^
				       (std::uint32_t)p.comm.protocol;
			},
			0 },
		F(LOCAL_IA_ADDRESS_PTR, u64(p.local_ia_address_ptr), 0x1002),
		F(LOCAL_PORT_QUAL, p.local_port_qual, 0x1003),
		F(REMOTE_IA_ADDRESS_PTR, u64(p.remote_ia_address_ptr), 0x1004),
		F(REMOTE_PORT_QUAL, p.remote_port_qual, 0x1005),
		F(PZ_HANDLE, u64(p.pz_handle), 0x1006),
		F(RECV_EVD_HANDLE, u64(p.recv_evd_handle), 0x1007),
		F(REQUEST_EVD_HANDLE, u64(p.request_evd_handle), 0x1008),
		F(CONNECT_EVD_HANDLE, u64(p.connect_evd_handle), 0x1009),
		F(SRQ_HANDLE, u64(p.srq_handle), 0x100a),
		F(EP_ATTR_SERVICE_TYPE, p.ep_attr.service_type, dat2::DAT_SERVICE_TYPE_RC),
		F(EP_ATTR_MAX_MESSAGE_SIZE, p.ep_attr.max_message_size, 0xffffffffu),
		F(EP_ATTR_MAX_RDMA_SIZE, p.ep_attr.max_rdma_size, 0x2000),
		F(EP_ATTR_QOS, p.ep_attr.qos,
		  dat2::DAT_QOS_LOW_LATENCY | dat2::DAT_QOS_ECONOMY),
		F(EP_ATTR_RECV_COMPLETION_FLAGS, p.ep_attr.recv_completion_flags,
		  dat2::DAT_COMPLETION_SOLICITED_WAIT_FLAG |
			  dat2::DAT_COMPLETION_EVD_THRESHOLD_FLAG),
		F(EP_ATTR_REQUEST_COMPLETION_FLAGS, p.ep_attr.request_completion_flags,
		  dat2::DAT_COMPLETION_SUPPRESS_FLAG |
			  dat2::DAT_COMPLETION_BARRIER_FENCE_FLAG),
		F(EP_ATTR_MAX_RECV_DTOS, p.ep_attr.max_recv_dtos, 11),
		F(EP_ATTR_MAX_REQUEST_DTOS, p.ep_attr.max_request_dtos, 12),
		F(EP_ATTR_MAX_RECV_IOV, p.ep_attr.max_recv_iov, 13),
		F(EP_ATTR_MAX_REQUEST_IOV, p.ep_attr.max_request_iov, 14),
		F(EP_ATTR_MAX_RDMA_READ_IN, p.ep_attr.max_rdma_read_in, 15),
		F(EP_ATTR_MAX_RDMA_READ_OUT, p.ep_attr.max_rdma_read_out, 16),
		F(EP_ATTR_SRQ_SOFT_HW, (std::uint32_t)p.ep_attr.srq_soft_hw,
		  (std::uint32_t)DAT_HW_DEFAULT),
		F(EP_ATTR_MAX_RDMA_READ_IOV, p.ep_attr.max_rdma_read_iov, 17),
		F(EP_ATTR_MAX_RDMA_WRITE_IOV, p.ep_attr.max_rdma_write_iov, 18),
		F(EP_ATTR_NUM_TRANSPORT_ATTR, p.ep_attr.ep_transport_specific_count, 19),
		F(EP_ATTR_TRANSPORT_SPECIFIC_ATTR, u64(p.ep_attr.ep_transport_specific), 0x100b),
		F(EP_ATTR_NUM_PROVIDER_ATTR, p.ep_attr.ep_provider_specific_count, 20),
		F(EP_ATTR_PROVIDER_SPECIFIC_ATTR, u64(p.ep_attr.ep_provider_specific), 0x100c),
	};
#undef F
}

/* A DAT 2.0 EP_PARAM whose fields all differ from ep_param_sample()'s. */
dat2::DAT_EP_PARAM ep_param2_background()
{
	dat2::DAT_EP_PARAM p;
	std::memset(&p, 0x5a, sizeof(p));
	return p;
}

} // namespace

/* ep_query's direction: each DAT 2.0 mask bit fills its field and no other. */
TEST(Dat2EpConvert, EpParamToDat20EachMaskBitFillsItsFieldOnly)
{
	const DAT_EP_PARAM in = ep_param_sample();
	const auto fields = ep_fields2();
	const dat2::DAT_EP_PARAM bg = ep_param2_background();

	ASSERT_EQ(31u, fields.size());	/* every bit of DAT_EP_FIELD_ALL */
	std::uint64_t all = 0;
	for (const Field2 &f : fields)
		all |= f.bit;
	EXPECT_EQ(dat2::v_DAT_EP_FIELD_ALL, all);

	for (const Field2 &f : fields) {
		dat2::DAT_EP_PARAM out = bg;
		kdat::dat2p::ep_param2(in, f.bit, out);
		for (const Field2 &g : fields) {
			if (&g == &f) {
				EXPECT_EQ(g.want, g.get(out)) << f.name;
			} else {
				EXPECT_EQ(g.get(bg), g.get(out))
					<< f.name << " touched " << g.name;
			}
		}
	}
	dat2::DAT_EP_PARAM out = bg;
	kdat::dat2p::ep_param2(in, dat2::v_DAT_EP_FIELD_ALL, out);
	for (const Field2 &g : fields)
		EXPECT_EQ(g.want, g.get(out)) << g.name;
}

/*
 * ep_modify's direction: each DAT 2.0 mask bit copies its field and no
 * other (the caller's other fields may be garbage); then back again.
 */
TEST(Dat2EpConvert, EpParamToDat12EachMaskBitCopiesItsFieldOnly)
{
	const DAT_EP_PARAM sample = ep_param_sample();
	const auto fields = ep_fields2();
	dat2::DAT_EP_PARAM in2 = ep_param2_background();
	kdat::dat2p::ep_param2(sample, dat2::v_DAT_EP_FIELD_ALL, in2);

	for (const Field2 &f : fields) {
		if (f.bit == DAT_EP_FIELD_COMM)
			continue;	/* DAT 1.2 has none */
		DAT_EP_PARAM out12;
		std::memset(&out12, 0, sizeof(out12));
		kdat::dat2p::ep_param12(in2, f.bit, out12);
		/* round trip the one field: only it differs from zeroes */
		dat2::DAT_EP_PARAM back = ep_param2_background();
		kdat::dat2p::ep_param2(out12, dat2::v_DAT_EP_FIELD_ALL & ~DAT_EP_FIELD_COMM, back);
		dat2::DAT_EP_PARAM zero2 = ep_param2_background();
		DAT_EP_PARAM zero12;
		std::memset(&zero12, 0, sizeof(zero12));
		kdat::dat2p::ep_param2(zero12, dat2::v_DAT_EP_FIELD_ALL & ~DAT_EP_FIELD_COMM, zero2);
		for (const Field2 &g : fields) {
			if (g.bit == DAT_EP_FIELD_COMM)
				continue;
			if (&g == &f) {
				EXPECT_EQ(g.want, g.get(back)) << f.name;
			} else {
				EXPECT_EQ(g.get(zero2), g.get(back))
					<< f.name << " touched " << g.name;
			}
		}
	}
	/* the 64-bit DAT 1.2 sizes take DAT 2.0's 32-bit ones whole */
	in2.ep_attr.max_message_size = 0xfffffff0u;
	DAT_EP_PARAM out12 = {};
	kdat::dat2p::ep_param12(in2, dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, out12);
	EXPECT_EQ(0xfffffff0ull, out12.ep_attr.max_message_size);
}

/* ep_create's attributes: every field, both ways (DAT_HW_DEFAULT passes). */
TEST(Dat2EpConvert, EpAttrEveryFieldBothWays)
{
	const DAT_EP_PARAM sample = ep_param_sample();
	dat2::DAT_EP_ATTR a2;
	kdat::dat2p::ep_attr2(sample.ep_attr, a2);
	dat2::DAT_EP_PARAM p2 = ep_param2_background();
	p2.ep_attr = a2;
	for (const Field2 &f : ep_fields2()) {
		if (f.bit >= 0x1000) {
			EXPECT_EQ(f.want, f.get(p2)) << f.name;
		}
	}

	DAT_EP_ATTR a12;
	std::memset(&a12, 0xa5, sizeof(a12));
	kdat::dat2p::ep_attr12(a2, a12);
	const DAT_EP_ATTR &s = sample.ep_attr;
	EXPECT_EQ(DAT_SERVICE_TYPE_RC, a12.service_type);
	/* what 2.0 held, 0xffffffff, is DAT 2.0's DAT_HW_DEFAULT */
	EXPECT_EQ((DAT_VLEN)DAT_HW_DEFAULT, a12.max_message_size);
	EXPECT_EQ(s.max_rdma_size, a12.max_rdma_size);
	EXPECT_EQ(s.qos, a12.qos);
	EXPECT_EQ(s.recv_completion_flags, a12.recv_completion_flags);
	EXPECT_EQ(s.request_completion_flags, a12.request_completion_flags);
	EXPECT_EQ(s.max_recv_dtos, a12.max_recv_dtos);
	EXPECT_EQ(s.max_request_dtos, a12.max_request_dtos);
	EXPECT_EQ(s.max_recv_iov, a12.max_recv_iov);
	EXPECT_EQ(s.max_request_iov, a12.max_request_iov);
	EXPECT_EQ(s.max_rdma_read_in, a12.max_rdma_read_in);
	EXPECT_EQ(s.max_rdma_read_out, a12.max_rdma_read_out);
	EXPECT_EQ(DAT_HW_DEFAULT, a12.srq_soft_hw);
	EXPECT_EQ(s.max_rdma_read_iov, a12.max_rdma_read_iov);
	EXPECT_EQ(s.max_rdma_write_iov, a12.max_rdma_write_iov);
	EXPECT_EQ(s.ep_transport_specific_count, a12.ep_transport_specific_count);
	EXPECT_EQ(s.ep_transport_specific, a12.ep_transport_specific);
	EXPECT_EQ(s.ep_provider_specific_count, a12.ep_provider_specific_count);
	EXPECT_EQ(s.ep_provider_specific, a12.ep_provider_specific);
	/* a service type DAT 1.2 does not name reaches the core as it is */
	a2.service_type = (dat2::DAT_SERVICE_TYPE)5;
	kdat::dat2p::ep_attr12(a2, a12);
	EXPECT_EQ(5u, kdat::raw(a12.service_type));
}

TEST(Dat2EpConvert, SrqCrPspRspRmrParamsEachMaskBit)
{
	/* SRQ */
	DAT_SRQ_PARAM s = { ptr(0x2001), DAT_SRQ_STATE_ERROR, ptr(0x2002), 21, 22, 23, 24, 25 };
	struct { std::uint64_t bit; std::function<std::uint64_t(const dat2::DAT_SRQ_PARAM &)> get; std::uint64_t want; } sf[] = {
		{ dat2::DAT_SRQ_FIELD_IA_HANDLE, [](auto &p) { return u64(p.ia_handle); }, 0x2001 },
		{ dat2::DAT_SRQ_FIELD_SRQ_STATE, [](auto &p) { return (std::uint64_t)p.srq_state; }, dat2::DAT_SRQ_STATE_ERROR },
		{ dat2::DAT_SRQ_FIELD_PZ_HANDLE, [](auto &p) { return u64(p.pz_handle); }, 0x2002 },
		{ dat2::DAT_SRQ_FIELD_MAX_RECV_DTO, [](auto &p) { return (std::uint64_t)p.max_recv_dtos; }, 21 },
		{ dat2::DAT_SRQ_FIELD_MAX_RECV_IOV, [](auto &p) { return (std::uint64_t)p.max_recv_iov; }, 22 },
		{ dat2::DAT_SRQ_FIELD_LOW_WATERMARK, [](auto &p) { return (std::uint64_t)p.low_watermark; }, 23 },
		{ dat2::DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT, [](auto &p) { return (std::uint64_t)p.available_dto_count; }, 24 },
		{ dat2::DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT, [](auto &p) { return (std::uint64_t)p.outstanding_dto_count; }, 25 },
	};
	for (auto &f : sf) {
		dat2::DAT_SRQ_PARAM bg, out;
		std::memset(&bg, 0x5a, sizeof(bg));
		out = bg;
		kdat::dat2p::srq_param2(s, f.bit, out);
		for (auto &g : sf)
			EXPECT_EQ(&g == &f ? g.want : g.get(bg), g.get(out)) << f.bit;
	}

	/* CR */
	DAT_CR_PARAM c = { ptr<DAT_SOCK_ADDR>(0x3001), 0x3002, 48, ptr(0x3003), ptr(0x3004) };
	struct { std::uint64_t bit; std::function<std::uint64_t(const dat2::DAT_CR_PARAM &)> get; std::uint64_t want; } cf[] = {
		{ dat2::DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR, [](auto &p) { return u64(p.remote_ia_address_ptr); }, 0x3001 },
		{ dat2::DAT_CR_FIELD_REMOTE_PORT_QUAL, [](auto &p) { return (std::uint64_t)p.remote_port_qual; }, 0x3002 },
		{ dat2::DAT_CR_FIELD_PRIVATE_DATA_SIZE, [](auto &p) { return (std::uint64_t)p.private_data_size; }, 48 },
		{ dat2::DAT_CR_FIELD_PRIVATE_DATA, [](auto &p) { return u64(p.private_data); }, 0x3003 },
		{ dat2::DAT_CR_FIELD_LOCAL_EP_HANDLE, [](auto &p) { return u64(p.local_ep_handle); }, 0x3004 },
	};
	for (auto &f : cf) {
		dat2::DAT_CR_PARAM bg, out;
		std::memset(&bg, 0x5a, sizeof(bg));
		out = bg;
		kdat::dat2p::cr_param2(c, f.bit, out);
		for (auto &g : cf)
			EXPECT_EQ(&g == &f ? g.want : g.get(bg), g.get(out)) << f.bit;
	}

	/* PSP */
	DAT_PSP_PARAM ps = { ptr(0x4001), 0x4002, ptr(0x4003), DAT_PSP_PROVIDER_FLAG };
	struct { std::uint64_t bit; std::function<std::uint64_t(const dat2::DAT_PSP_PARAM &)> get; std::uint64_t want; } pf[] = {
		{ dat2::DAT_PSP_FIELD_IA_HANDLE, [](auto &p) { return u64(p.ia_handle); }, 0x4001 },
		{ dat2::DAT_PSP_FIELD_CONN_QUAL, [](auto &p) { return (std::uint64_t)p.conn_qual; }, 0x4002 },
		{ dat2::DAT_PSP_FIELD_EVD_HANDLE, [](auto &p) { return u64(p.evd_handle); }, 0x4003 },
		{ dat2::DAT_PSP_FIELD_PSP_FLAGS, [](auto &p) { return kdat::raw(p.psp_flags); }, dat2::DAT_PSP_PROVIDER_FLAG },
	};
	for (auto &f : pf) {
		dat2::DAT_PSP_PARAM bg, out;
		std::memset(&bg, 0x5a, sizeof(bg));
		out = bg;
		kdat::dat2p::psp_param2(ps, f.bit, out);
		for (auto &g : pf)
			EXPECT_EQ(&g == &f ? g.want : g.get(bg), g.get(out)) << f.bit;
	}

	/* RSP */
	DAT_RSP_PARAM rs = { ptr(0x5001), 0x5002, ptr(0x5003), ptr(0x5004) };
	struct { std::uint64_t bit; std::function<std::uint64_t(const dat2::DAT_RSP_PARAM &)> get; std::uint64_t want; } rf[] = {
		{ dat2::DAT_RSP_FIELD_IA_HANDLE, [](auto &p) { return u64(p.ia_handle); }, 0x5001 },
		{ dat2::DAT_RSP_FIELD_CONN_QUAL, [](auto &p) { return (std::uint64_t)p.conn_qual; }, 0x5002 },
		{ dat2::DAT_RSP_FIELD_EVD_HANDLE, [](auto &p) { return u64(p.evd_handle); }, 0x5003 },
		{ dat2::DAT_RSP_FIELD_EP_HANDLE, [](auto &p) { return u64(p.ep_handle); }, 0x5004 },
	};
	for (auto &f : rf) {
		dat2::DAT_RSP_PARAM bg, out;
		std::memset(&bg, 0x5a, sizeof(bg));
		out = bg;
		kdat::dat2p::rsp_param2(rs, f.bit, out);
		for (auto &g : rf)
			EXPECT_EQ(&g == &f ? g.want : g.get(bg), g.get(out)) << f.bit;
	}

	/* RMR: 1.2's triplet in 2.0's layout; scope and VA type are 1.2's only kind */
	DAT_RMR_PARAM rm = {};
	rm.ia_handle = ptr(0x6001);
	rm.pz_handle = ptr(0x6002);
	rm.lmr_triplet.lmr_context = 0x6003;
	rm.lmr_triplet.virtual_address = 0x6004;
	rm.lmr_triplet.segment_length = 0x6005;
	rm.mem_priv = DAT_MEM_PRIV_REMOTE_WRITE_FLAG;
	rm.rmr_context = 0x6006;
	struct { std::uint64_t bit; std::function<std::uint64_t(const dat2::DAT_RMR_PARAM &)> get; std::uint64_t want; } mf[] = {
		{ dat2::DAT_RMR_FIELD_IA_HANDLE, [](auto &p) { return u64(p.ia_handle); }, 0x6001 },
		{ dat2::DAT_RMR_FIELD_PZ_HANDLE, [](auto &p) { return u64(p.pz_handle); }, 0x6002 },
		{ dat2::DAT_RMR_FIELD_LMR_TRIPLET, [](auto &p) {
			  return (std::uint64_t)p.lmr_triplet.lmr_context << 48 ^
				 p.lmr_triplet.virtual_address << 24 ^
				 p.lmr_triplet.segment_length; },
		  0x6003ull << 48 ^ 0x6004ull << 24 ^ 0x6005 },
		{ dat2::DAT_RMR_FIELD_MEM_PRIV, [](auto &p) { return kdat::raw(p.mem_priv); }, dat2::DAT_MEM_PRIV_REMOTE_WRITE_FLAG },
		{ dat2::DAT_RMR_FIELD_RMR_CONTEXT, [](auto &p) { return (std::uint64_t)p.rmr_context; }, 0x6006 },
		{ dat2::DAT_RMR_FIELD_RMR_SCOPE, [](auto &p) { return kdat::raw(p.rmr_scope); }, dat2::DAT_RMR_SCOPE_PZ },
		{ dat2::DAT_RMR_FIELD_VA_TYPE, [](auto &p) { return kdat::raw(p.va_type); }, dat2::DAT_VA_TYPE_VA },
	};
	for (auto &f : mf) {
		dat2::DAT_RMR_PARAM bg, out;
		std::memset(&bg, 0x5a, sizeof(bg));
		out = bg;
		kdat::dat2p::rmr_param2(rm, f.bit, out);
		for (auto &g : mf)
			EXPECT_EQ(&g == &f ? g.want : g.get(bg), g.get(out)) << f.bit;
	}
}

/* ------------------------------------------------------------------ */
/* The entries, on the fake                                             */

namespace {

/* The DAT 2.0 table with this family's entries (the core fills the rest). */
dat2::DAT_PROVIDER &table2()
{
	static dat2::DAT_PROVIDER t = [] {
		dat2::DAT_PROVIDER p{};
		kdat::dat2p::fill_ep_srq_cm(p);
		return p;
	}();
	return t;
}

/* The DAT 1.2 table the core dispatches the IA's objects through. */
DAT_PROVIDER &table12()
{
	static DAT_PROVIDER t = [] {
		DAT_PROVIDER p;
		kdat::fill_builtin_table(p);
		return p;
	}();
	return t;
}

/* DAT_HANDLE_TO_PROVIDER, as libdat2 reads it. */
dat2::DAT_PROVIDER *face(DAT_HANDLE h)
{
	return *static_cast<dat2::DAT_PROVIDER **>(h);
}

/* An IA whose objects start with table2(), a PZ, EVDs and a buffer. */
struct Side2 {
	DAT_IA_HANDLE ia = nullptr;
	DAT_EVD_HANDLE async = nullptr, dto = nullptr, conn = nullptr, cr = nullptr;
	DAT_PZ_HANDLE pz = nullptr;
	DAT_LMR_HANDLE lmr = nullptr;
	DAT_LMR_CONTEXT lctx = 0;
	std::vector<char> buf;

	void open(const char *name)
	{
		ASSERT_OK(kdat::Ia::open(&table12(), name, name, 64, &async, &ia,
					 &table2()));
		ASSERT_OK(dat_pz_create(ia, &pz));
		ASSERT_OK(dat_evd_create(ia, 256, nullptr, DAT_EVD_DTO_FLAG, &dto));
		ASSERT_OK(dat_evd_create(ia, 64, nullptr, DAT_EVD_CONNECTION_FLAG, &conn));
		ASSERT_OK(dat_evd_create(ia, 64, nullptr, DAT_EVD_CR_FLAG, &cr));
		buf.assign(1 << 16, 0);
		DAT_REGION_DESCRIPTION r;
		r.for_va = buf.data();
		DAT_VLEN len;
		DAT_VADDR addr;
		DAT_RMR_CONTEXT rctx;
		ASSERT_OK(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, r, buf.size(), pz,
					 (DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_READ_FLAG |
							      DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
					 &lmr, &lctx, &rctx, &len, &addr));
	}

	dat2::DAT_LMR_TRIPLET seg(std::size_t off, std::uint32_t len) const
	{
		dat2::DAT_LMR_TRIPLET t;
		t.virtual_address = (DAT_VADDR)(std::uintptr_t)(buf.data() + off);
		t.segment_length = len;
		t.lmr_context = lctx;
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

class Dat2Ep : public ::testing::Test {
protected:
	void SetUp() override
	{
		kdat::registry_reset();
		kernel.install();
		handles_before = kdat::handles().size();
		srv.open("rxe0");
	}

	void TearDown() override
	{
		srv.close();
		EXPECT_EQ(handles_before, kdat::handles().size());
		EXPECT_EQ(0, kernel.files());
		fake::Kernel::uninstall();
		kdat::registry_reset();
	}

	dat2::DAT_PROVIDER &T() { return table2(); }

	dat2::DAT_EP_ATTR attr2(DAT_COUNT recv_dtos = 16)
	{
		dat2::DAT_EP_ATTR a = {};
		a.service_type = dat2::DAT_SERVICE_TYPE_RC;
		a.max_message_size = 4096;
		a.max_rdma_size = 0x10000;
		a.qos = dat2::DAT_QOS_BEST_EFFORT;
		a.recv_completion_flags = dat2::DAT_COMPLETION_DEFAULT_FLAG;
		a.request_completion_flags = dat2::DAT_COMPLETION_SUPPRESS_FLAG;
		a.max_recv_dtos = recv_dtos;
		a.max_request_dtos = 17;
		a.max_recv_iov = 2;
		a.max_request_iov = 3;
		a.max_rdma_read_in = 4;
		a.max_rdma_read_out = 5;
		a.srq_soft_hw = DAT_HW_DEFAULT;
		a.max_rdma_read_iov = 6;
		a.max_rdma_write_iov = 7;
		return a;
	}

	DAT_EP_HANDLE make_ep()
	{
		dat2::DAT_EP_ATTR a = attr2();
		DAT_EP_HANDLE ep = nullptr;
		EXPECT_D2(OK2, T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto,
						  srv.conn, &a, &ep));
		return ep;
	}

	DAT_SRQ_HANDLE make_srq(DAT_COUNT max, DAT_COUNT iov = 2)
	{
		dat2::DAT_SRQ_ATTR a = { max, iov, DAT_SRQ_LW_DEFAULT };
		DAT_SRQ_HANDLE h = nullptr;
		EXPECT_D2(OK2, T().srq_create_func(srv.ia, srv.pz, &a, &h));
		return h;
	}

	fake::Kernel kernel;
	std::size_t handles_before = 0;
	Side2 srv;
};

dat2::DAT_DTO_COOKIE cookie2(std::uint64_t v)
{
	dat2::DAT_DTO_COOKIE c;
	c.as_64 = v;
	return c;
}

} // namespace

/* Every entry of these families is set: libdat2 calls them unchecked. */
TEST(Dat2EpTable, EveryEpSrqCmRmrEntryIsSet)
{
	dat2::DAT_PROVIDER &t = table2();
#define SET(f) EXPECT_NE(nullptr, (void *)t.f) << #f
	SET(ep_create_func); SET(ep_create_with_srq_func); SET(ep_query_func);
	SET(ep_modify_func); SET(ep_connect_func); SET(ep_dup_connect_func);
	SET(ep_common_connect_func); SET(ep_disconnect_func);
	SET(ep_post_send_func); SET(ep_post_send_with_invalidate_func);
	SET(ep_post_recv_func); SET(ep_post_rdma_read_func);
	SET(ep_post_rdma_read_to_rmr_func); SET(ep_post_rdma_write_func);
	SET(ep_get_status_func); SET(ep_free_func); SET(ep_reset_func);
	SET(ep_recv_query_func); SET(ep_set_watermark_func);
	SET(srq_create_func); SET(srq_free_func); SET(srq_post_recv_func);
	SET(srq_query_func); SET(srq_resize_func); SET(srq_set_lw_func);
	SET(cr_query_func); SET(cr_accept_func); SET(cr_reject_func);
	SET(cr_handoff_func); SET(psp_create_func); SET(psp_create_any_func);
	SET(psp_query_func); SET(psp_free_func); SET(rsp_create_func);
	SET(rsp_query_func); SET(rsp_free_func); SET(csp_create_func);
	SET(csp_query_func); SET(csp_free_func); SET(rmr_create_func);
	SET(rmr_create_for_ep_func); SET(rmr_query_func); SET(rmr_bind_func);
	SET(rmr_free_func);
#undef SET
}

/*
 * lmr_sync_rdma_read/write check the IA, then the list, 8 triplets at a
 * time: a bad handle wins whatever the count, a huge count allocates
 * nothing and stops at the first bad triplet, a good list passes.
 */
TEST_F(Dat2Ep, LmrSyncChecksTheIaThenTheListWithoutAllocating)
{
	dat2::DAT_PROVIDER lt{};
	kdat::dat2p::fill_lmr(lt);
	dat2::DAT_LMR_TRIPLET segs[10];
	for (int i = 0; i < 10; i++)
		segs[i] = srv.seg(64 * i, 64);
	const dat2::DAT_VLEN huge = 1ull << 40;

	for (auto fn : { lt.lmr_sync_rdma_read_func, lt.lmr_sync_rdma_write_func }) {
		EXPECT_D2(OK2, fn(srv.ia, segs, 10));
		EXPECT_EQ(dat2::DAT_INVALID_HANDLE,
			  DAT_GET_TYPE(fn(srv.pz, segs, huge)));
		EXPECT_EQ(dat2::DAT_INVALID_PARAMETER,
			  DAT_GET_TYPE(fn(srv.ia, nullptr, 3)));
		dat2::DAT_LMR_TRIPLET bad[10];
		std::memcpy(bad, segs, sizeof(bad));
		bad[9].lmr_context ^= 0x5a5a;		/* in the second chunk */
		EXPECT_EQ(dat2::DAT_INVALID_PARAMETER, DAT_GET_TYPE(fn(srv.ia, bad, 10)));
		bad[0].lmr_context ^= 0x5a5a;		/* stops at the first */
		EXPECT_EQ(dat2::DAT_INVALID_PARAMETER, DAT_GET_TYPE(fn(srv.ia, bad, huge)));
	}
}

/* DAT_HW_DEFAULT in DAT 2.0's 32-bit sizes is the default, not 4 GiB - 1. */
TEST_F(Dat2Ep, HwDefaultSizesReachTheKernelAsTheDefault)
{
	dat2::DAT_EP_ATTR a = attr2();
	DAT_EP_HANDLE ep = nullptr;

	a.max_message_size = (dat2::DAT_SEG_LENGTH)DAT_HW_DEFAULT;
	a.max_rdma_size = (dat2::DAT_SEG_LENGTH)DAT_HW_DEFAULT;
	kernel.reset_counts();
	ASSERT_D2(OK2, T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto,
					  srv.conn, &a, &ep));
	auto c = kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE);
	EXPECT_EQ((__u64)(DAT_VLEN)DAT_HW_DEFAULT, c.attr.max_message_size);
	EXPECT_EQ((__u64)(DAT_VLEN)DAT_HW_DEFAULT, c.attr.max_rdma_size);
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/*
 * Zero message and RDMA sizes mean OFED's "provider default", the device's
 * limits (dtest's default run RDMA-writes 4 MiB on such EPs): the IA's
 * maxima (the fake IA reports 2 GiB).
 */
TEST_F(Dat2Ep, ZeroSizesAtCreateAskForTheDefault)
{
	dat2::DAT_EP_ATTR a = attr2();
	DAT_EP_HANDLE ep = nullptr;

	a.max_message_size = 0;
	a.max_rdma_size = 0;
	kernel.reset_counts();
	ASSERT_D2(OK2, T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto,
					  srv.conn, &a, &ep));
	auto c = kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE);
	EXPECT_EQ(1ull << 31, c.attr.max_message_size);
	EXPECT_EQ(1ull << 31, c.attr.max_rdma_size);
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/*
 * Zero RDMA reads in and out mean OFED's default too (dapltest -T P and
 * dtest post RDMA reads on such EPs): the IA's per-EP maximum (the fake
 * IA reports 16).  Non-zero values pass unchanged.
 */
TEST_F(Dat2Ep, ZeroRdmaReadsAtCreateAskForTheIasMaximum)
{
	dat2::DAT_EP_ATTR a = attr2();
	DAT_EP_HANDLE ep = nullptr;

	a.max_rdma_read_in = 0;
	a.max_rdma_read_out = 0;
	kernel.reset_counts();
	ASSERT_D2(OK2, T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto,
					  srv.conn, &a, &ep));
	auto c = kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE);
	EXPECT_EQ(16, c.attr.max_rdma_read_in);
	EXPECT_EQ(16, c.attr.max_rdma_read_out);
	EXPECT_D2(OK2, T().ep_free_func(ep));

	a.max_rdma_read_in = 2;
	a.max_rdma_read_out = 3;
	ASSERT_D2(OK2, T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto,
					  srv.conn, &a, &ep));
	c = kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE);
	EXPECT_EQ(2, c.attr.max_rdma_read_in);
	EXPECT_EQ(3, c.attr.max_rdma_read_out);
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* ep_create: every attribute reaches the kernel; the EP starts with the 2.0 table. */
TEST_F(Dat2Ep, EpCreateSendsEveryAttributeAndTheEpCarriesTheDat20Table)
{
	dat2::DAT_EP_ATTR a = attr2(9);
	DAT_EP_HANDLE ep = nullptr;

	kernel.reset_counts();
	ASSERT_D2(OK2, T().ep_create_func(srv.ia, srv.pz, srv.dto, nullptr,
					  srv.conn, &a, &ep));
	EXPECT_EQ(&table2(), face(ep));
	auto c = kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE);
	EXPECT_EQ(kid<kdat::Pz>(srv.pz), c.pz);
	EXPECT_EQ(kid<kdat::Evd>(srv.dto), c.recv_evd);
	EXPECT_EQ(0u, c.request_evd);
	EXPECT_EQ(kid<kdat::Evd>(srv.conn), c.connect_evd);
	EXPECT_EQ(0u, c.srq);
	EXPECT_EQ(1u, c.has_attr);
	EXPECT_EQ(4096u, c.attr.max_message_size);
	EXPECT_EQ(0x10000u, c.attr.max_rdma_size);
	EXPECT_EQ((__u32)DAT_COMPLETION_DEFAULT_FLAG, c.attr.recv_completion_flags);
	EXPECT_EQ((__u32)DAT_COMPLETION_SUPPRESS_FLAG, c.attr.request_completion_flags);
	EXPECT_EQ(9, c.attr.max_recv_dtos);
	EXPECT_EQ(17, c.attr.max_request_dtos);
	EXPECT_EQ(2, c.attr.max_recv_iov);
	EXPECT_EQ(3, c.attr.max_request_iov);
	EXPECT_EQ(4, c.attr.max_rdma_read_in);
	EXPECT_EQ(5, c.attr.max_rdma_read_out);
	EXPECT_EQ(DAT_HW_DEFAULT, c.attr.srq_soft_hw);
	EXPECT_EQ(6, c.attr.max_rdma_read_iov);
	EXPECT_EQ(7, c.attr.max_rdma_write_iov);
	EXPECT_D2(OK2, T().ep_free_func(ep));

	/* no attributes: the provider's defaults */
	ASSERT_D2(OK2, T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto,
					  srv.conn, nullptr, &ep));
	EXPECT_EQ(0u, kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE).has_attr);
	EXPECT_D2(OK2, T().ep_free_func(ep));

	/* refusals, in DAT 2.0's values */
	kernel.reset_counts();
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_IA),
		  T().ep_create_func(srv.pz, srv.pz, srv.dto, srv.dto, srv.conn, &a, &ep));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_PZ),
		  T().ep_create_func(srv.ia, srv.dto, srv.dto, srv.dto, srv.conn, &a, &ep));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EVD_RECV),
		  T().ep_create_func(srv.ia, srv.pz, srv.pz, srv.dto, srv.conn, &a, &ep));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EVD_REQUEST),
		  T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.pz, srv.conn, &a, &ep));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EVD_CONN),
		  T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto, srv.pz, &a, &ep));
	EXPECT_D2(ARG2(7), T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto,
					      srv.conn, &a, nullptr));
	a.service_type = (dat2::DAT_SERVICE_TYPE)1;	/* DAT_IB_SERVICE_TYPE_UD */
	EXPECT_D2(ARG2(6), T().ep_create_func(srv.ia, srv.pz, srv.dto, srv.dto,
					      srv.conn, &a, &ep));
	EXPECT_EQ(0u, kernel.total_ioctls());
}

TEST_F(Dat2Ep, EpCreateWithSrqSendsTheSrqAndItsRefusals)
{
	DAT_SRQ_HANDLE srq = make_srq(8);
	dat2::DAT_EP_ATTR a = attr2();
	DAT_EP_HANDLE ep = nullptr;

	ASSERT_D2(OK2, T().ep_create_with_srq_func(srv.ia, srv.pz, srv.dto, srv.dto,
						   srv.conn, srq, &a, &ep));
	auto c = kernel.last<kdat_ioc_ep_create>(KDAT_IOC_EP_CREATE);
	EXPECT_EQ(kid<kdat::Srq>(srq), c.srq);
	EXPECT_EQ(17, c.attr.max_request_dtos);
	EXPECT_EQ(face(ep), &table2());
	dat2::DAT_EP_PARAM p = ep_param2_background();
	ASSERT_D2(OK2, T().ep_query_func(ep, dat2::v_DAT_EP_FIELD_SRQ_HANDLE, &p));
	EXPECT_EQ(srq, p.srq_handle);

	kernel.reset_counts();
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_SRQ),
		  T().ep_create_with_srq_func(srv.ia, srv.pz, srv.dto, srv.dto,
					      srv.conn, srv.pz, &a, &ep));
	EXPECT_D2(ARG2(7), T().ep_create_with_srq_func(srv.ia, srv.pz, srv.dto, srv.dto,
						       srv.conn, srq, nullptr, &ep));
	EXPECT_D2(ARG2(8), T().ep_create_with_srq_func(srv.ia, srv.pz, srv.dto, srv.dto,
						       srv.conn, srq, &a, nullptr));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_D2(OK2, T().ep_free_func(ep));
	EXPECT_D2(OK2, T().srq_free_func(srq));
}

/* ep_query: the kernel's answer in DAT 2.0's EP_PARAM, field by mask. */
TEST_F(Dat2Ep, EpQueryTranslatesTheKernelsAnswer)
{
	DAT_EP_HANDLE ep = make_ep();
	struct sockaddr_in sin = ipv4("192.0.2.9");

	kernel.answer<kdat_ioc_ep_query>(KDAT_IOC_EP_QUERY, [&](kdat_ioc_ep_query &q) {
		q.state = DAT_EP_STATE_DISCONNECT_PENDING;
		q.local_port = 40001;
		q.remote_port = 5001;
		std::memcpy(q.remote_addr, &sin, sizeof(sin));
		q.attr.max_message_size = 0x180000000ull;	/* > 32 bits */
		q.attr.max_rdma_size = 65536;
		q.attr.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
		q.attr.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
		q.attr.max_recv_dtos = 31;
		q.attr.max_request_dtos = 32;
		q.attr.max_recv_iov = 33;
		q.attr.max_request_iov = 34;
		q.attr.max_rdma_read_in = 35;
		q.attr.max_rdma_read_out = 36;
		q.attr.srq_soft_hw = 37;
		q.attr.max_rdma_read_iov = 38;
		q.attr.max_rdma_write_iov = 39;
		return DAT_SUCCESS;
	});
	dat2::DAT_EP_PARAM p = ep_param2_background();
	ASSERT_D2(OK2, T().ep_query_func(ep, dat2::v_DAT_EP_FIELD_ALL, &p));
	EXPECT_EQ(srv.ia, p.ia_handle);
	EXPECT_EQ(dat2::DAT_EP_STATE_DISCONNECT_PENDING, p.ep_state);
	EXPECT_EQ(0, p.comm.domain);
	EXPECT_EQ(0, p.comm.type);
	EXPECT_EQ(0, p.comm.protocol);
	EXPECT_EQ(ipv4("192.0.2.1").sin_addr.s_addr,
		  ((struct sockaddr_in *)p.local_ia_address_ptr)->sin_addr.s_addr);
	EXPECT_EQ(40001u, p.local_port_qual);
	EXPECT_EQ(sin.sin_addr.s_addr,
		  ((struct sockaddr_in *)p.remote_ia_address_ptr)->sin_addr.s_addr);
	EXPECT_EQ(5001u, p.remote_port_qual);
	EXPECT_EQ(srv.pz, p.pz_handle);
	EXPECT_EQ(srv.dto, p.recv_evd_handle);
	EXPECT_EQ(srv.dto, p.request_evd_handle);
	EXPECT_EQ(srv.conn, p.connect_evd_handle);
	EXPECT_EQ(nullptr, p.srq_handle);
	EXPECT_EQ(dat2::DAT_SERVICE_TYPE_RC, p.ep_attr.service_type);
	EXPECT_EQ(0xffffffffu, p.ep_attr.max_message_size);	/* saturated */
	EXPECT_EQ(65536u, p.ep_attr.max_rdma_size);
	EXPECT_EQ(dat2::DAT_QOS_BEST_EFFORT, p.ep_attr.qos);
	EXPECT_EQ(dat2::DAT_COMPLETION_SOLICITED_WAIT_FLAG, p.ep_attr.recv_completion_flags);
	EXPECT_EQ(dat2::DAT_COMPLETION_UNSIGNALLED_FLAG, p.ep_attr.request_completion_flags);
	EXPECT_EQ(31, p.ep_attr.max_recv_dtos);
	EXPECT_EQ(32, p.ep_attr.max_request_dtos);
	EXPECT_EQ(33, p.ep_attr.max_recv_iov);
	EXPECT_EQ(34, p.ep_attr.max_request_iov);
	EXPECT_EQ(35, p.ep_attr.max_rdma_read_in);
	EXPECT_EQ(36, p.ep_attr.max_rdma_read_out);
	EXPECT_EQ(37, p.ep_attr.srq_soft_hw);
	EXPECT_EQ(38, p.ep_attr.max_rdma_read_iov);
	EXPECT_EQ(39, p.ep_attr.max_rdma_write_iov);
	EXPECT_EQ(0, p.ep_attr.ep_transport_specific_count);
	EXPECT_EQ(nullptr, p.ep_attr.ep_provider_specific);

	/* one bit: that field only (dapltest asks for single fields) */
	p = ep_param2_background();
	const dat2::DAT_EP_PARAM bg = p;
	ASSERT_D2(OK2, T().ep_query_func(ep, dat2::v_DAT_EP_FIELD_REMOTE_PORT_QUAL, &p));
	EXPECT_EQ(5001u, p.remote_port_qual);
	EXPECT_EQ(bg.ia_handle, p.ia_handle);
	EXPECT_EQ(bg.srq_handle, p.srq_handle);
	EXPECT_EQ(bg.ep_attr.max_recv_dtos, p.ep_attr.max_recv_dtos);
	/* DAT_EP_FIELD_COMM alone is ours */
	p = ep_param2_background();
	ASSERT_D2(OK2, T().ep_query_func(ep, DAT_EP_FIELD_COMM, &p));
	EXPECT_EQ(0, p.comm.domain);
	EXPECT_EQ(bg.local_ia_address_ptr, p.local_ia_address_ptr);

	kernel.reset_counts();
	EXPECT_D2(ARG2(2), T().ep_query_func(ep, 0x80000000u, &p));
	EXPECT_D2(ARG2(3), T().ep_query_func(ep, dat2::v_DAT_EP_FIELD_ALL, nullptr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  T().ep_query_func(srv.pz, dat2::v_DAT_EP_FIELD_ALL, &p));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  T().ep_query_func(nullptr, dat2::v_DAT_EP_FIELD_ALL, &p));
	EXPECT_EQ(0u, kernel.total_ioctls());
	kernel.status_next(KDAT_IOC_EP_QUERY, DAT_ERROR(DAT_INTERNAL_ERROR, 0));
	EXPECT_D2(E2(dat2::DAT_INTERNAL_ERROR),
		  T().ep_query_func(ep, dat2::v_DAT_EP_FIELD_ALL, &p));
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* ep_modify: DAT 2.0 mask bits by name, the fields they name, the kernel's verdict. */
TEST_F(Dat2Ep, EpModifySendsTheDat12MaskAndTheNamedFields)
{
	DAT_EP_HANDLE ep = make_ep();
	dat2::DAT_EP_PARAM p;
	std::memset(&p, 0xa5, sizeof(p));	/* garbage outside the mask */
	p.ep_attr.max_request_dtos = 40;
	p.ep_attr.max_request_iov = 4;
	p.ep_attr.max_message_size = 0xfffffff0u;
	p.ep_attr.max_rdma_size = 1 << 20;
	p.ep_attr.max_rdma_read_in = 2;
	p.ep_attr.max_rdma_read_out = 3;
	const std::uint64_t m2 = dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS |
				 dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV |
				 dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE |
				 dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE |
				 dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
				 dat2::v_DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT;

	kernel.reset_counts();
	ASSERT_D2(OK2, T().ep_modify_func(ep, m2, &p));
	auto m = kernel.last<kdat_ioc_ep_modify>(KDAT_IOC_EP_MODIFY);
	EXPECT_EQ(kid<kdat::Ep>(ep), m.ep);
	EXPECT_EQ((__u64)(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS |
			  DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV |
			  DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE |
			  DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE |
			  DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
			  DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT),
		  m.mask);
	EXPECT_EQ(40, m.attr.max_request_dtos);
	EXPECT_EQ(4, m.attr.max_request_iov);
	EXPECT_EQ(0xfffffff0u, m.attr.max_message_size);
	EXPECT_EQ(1u << 20, m.attr.max_rdma_size);
	EXPECT_EQ(2, m.attr.max_rdma_read_in);
	EXPECT_EQ(3, m.attr.max_rdma_read_out);
	EXPECT_EQ(0, m.attr.max_recv_dtos);

	/* handle bits moved: 2.0's SRQ_HANDLE (0x800) is 1.2's 0x400 */
	ASSERT_D2(OK2, T().ep_modify_func(ep, dat2::v_DAT_EP_FIELD_SRQ_HANDLE, &p));
	EXPECT_EQ((__u64)DAT_EP_FIELD_SRQ_HANDLE,
		  kernel.last<kdat_ioc_ep_modify>(KDAT_IOC_EP_MODIFY).mask);
	ASSERT_D2(OK2, T().ep_modify_func(ep, dat2::v_DAT_EP_FIELD_CONNECT_EVD_HANDLE, &p));
	EXPECT_EQ((__u64)DAT_EP_FIELD_CONNECT_EVD_HANDLE,
		  kernel.last<kdat_ioc_ep_modify>(KDAT_IOC_EP_MODIFY).mask);
	/* COMM has no 1.2 bit: a bit 1.2 leaves unused, for the kernel to refuse */
	ASSERT_D2(OK2, T().ep_modify_func(ep, DAT_EP_FIELD_COMM, &p));
	EXPECT_EQ((__u64)kdat::dat2p::kEpCommBit12,
		  kernel.last<kdat_ioc_ep_modify>(KDAT_IOC_EP_MODIFY).mask);
	kernel.status_next(KDAT_IOC_EP_MODIFY,
			   DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
	EXPECT_D2(ARG2(2), T().ep_modify_func(ep, DAT_EP_FIELD_COMM, &p));
	kernel.status_next(KDAT_IOC_EP_MODIFY,
			   DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED));
	EXPECT_D2(E2(dat2::DAT_INVALID_STATE, dat2::DAT_INVALID_STATE_EP_CONNECTED),
		  T().ep_modify_func(ep, m2, &p));
	EXPECT_EQ(6u, kernel.ioctls(KDAT_IOC_EP_MODIFY));

	kernel.reset_counts();
	EXPECT_D2(ARG2(3), T().ep_modify_func(ep, m2, nullptr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP), T().ep_modify_func(srv.ia, m2, &p));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* ep_connect's qos and flags, disconnect, status, reset and what 1.2 answers alone */
TEST_F(Dat2Ep, ConnectDisconnectStatusAndResetTranslate)
{
	DAT_EP_HANDLE ep = make_ep();
	struct sockaddr_in sin = ipv4("192.0.2.2");
	sin.sin_port = htons(4791);
	const char pd[] = "dtest private data";

	ASSERT_D2(OK2, T().ep_connect_func(ep, (DAT_IA_ADDRESS_PTR)&sin, 45248, 1000000,
					   sizeof(pd), (DAT_PVOID)pd,
					   dat2::DAT_QOS_LOW_LATENCY,
					   dat2::DAT_CONNECT_MULTIPATH_FLAG));
	auto c = kernel.last<kdat_ioc_ep_connect>(KDAT_IOC_EP_CONNECT);
	EXPECT_EQ(kid<kdat::Ep>(ep), c.ep);
	EXPECT_EQ(1000000u, c.timeout_us);
	EXPECT_EQ(45248u, c.conn_qual);
	EXPECT_EQ(0, std::memcmp(c.addr, &sin, sizeof(sin)));
	EXPECT_EQ((__u32)DAT_QOS_LOW_LATENCY, c.qos);
	EXPECT_EQ((__u32)DAT_CONNECT_MULTIPATH_FLAG, c.flags);
	EXPECT_EQ(sizeof(pd), c.pdata_size);
	EXPECT_STREQ(pd, (const char *)c.pdata);
	ASSERT_D2(OK2, T().ep_connect_func(ep, (DAT_IA_ADDRESS_PTR)&sin, 1,
					   DAT_TIMEOUT_INFINITE, 0, nullptr,
					   dat2::DAT_QOS_BEST_EFFORT,
					   dat2::DAT_CONNECT_DEFAULT_FLAG));
	c = kernel.last<kdat_ioc_ep_connect>(KDAT_IOC_EP_CONNECT);
	EXPECT_EQ(~0u, c.timeout_us);
	EXPECT_EQ(0u, c.qos);
	EXPECT_EQ(0u, c.flags);
	EXPECT_EQ(0u, c.pdata_size);

	kernel.reset_counts();
	EXPECT_D2(ARG2(5), T().ep_connect_func(ep, (DAT_IA_ADDRESS_PTR)&sin, 1, 0, -1,
					       nullptr, dat2::DAT_QOS_BEST_EFFORT,
					       dat2::DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_D2(ARG2(6), T().ep_connect_func(ep, (DAT_IA_ADDRESS_PTR)&sin, 1, 0, 4,
					       nullptr, dat2::DAT_QOS_BEST_EFFORT,
					       dat2::DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_D2(E2(dat2::DAT_INVALID_ADDRESS, dat2::DAT_INVALID_ADDRESS_UNSUPPORTED),
		  T().ep_connect_func(ep, nullptr, 1, 0, 0, nullptr,
				      dat2::DAT_QOS_BEST_EFFORT,
				      dat2::DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  T().ep_connect_func(srv.pz, (DAT_IA_ADDRESS_PTR)&sin, 1, 0, 0, nullptr,
				      dat2::DAT_QOS_BEST_EFFORT,
				      dat2::DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_EQ(0u, kernel.total_ioctls());

	ASSERT_D2(OK2, T().ep_disconnect_func(ep, dat2::DAT_CLOSE_GRACEFUL_FLAG));
	auto d = kernel.last<kdat_ioc_ep_op>(KDAT_IOC_EP_DISCONNECT);
	EXPECT_EQ(kid<kdat::Ep>(ep), d.ep);
	EXPECT_EQ((__u32)DAT_CLOSE_GRACEFUL_FLAG, d.value);
	ASSERT_D2(OK2, T().ep_disconnect_func(ep, dat2::DAT_CLOSE_ABRUPT_FLAG));
	EXPECT_EQ((__u32)DAT_CLOSE_ABRUPT_FLAG,
		  kernel.last<kdat_ioc_ep_op>(KDAT_IOC_EP_DISCONNECT).value);

	kernel.answer<kdat_ioc_ep_status>(KDAT_IOC_EP_STATUS, [](kdat_ioc_ep_status &s) {
		s.state = DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
		s.recv_idle = 1;
		s.request_idle = 0;
		return DAT_SUCCESS;
	});
	dat2::DAT_EP_STATE st = dat2::DAT_EP_STATE_CONNECTED_MULTI_PATH;
	dat2::DAT_BOOLEAN ri = dat2::DAT_FALSE, qi = dat2::DAT_TRUE;
	ASSERT_D2(OK2, T().ep_get_status_func(ep, &st, &ri, &qi));
	EXPECT_EQ(dat2::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING, st);
	EXPECT_EQ(dat2::DAT_TRUE, ri);
	EXPECT_EQ(dat2::DAT_FALSE, qi);
	ASSERT_D2(OK2, T().ep_get_status_func(ep, nullptr, nullptr, nullptr));

	ASSERT_D2(OK2, T().ep_reset_func(ep));
	EXPECT_EQ(kid<kdat::Ep>(ep), kernel.last<kdat_ioc_ep_op>(KDAT_IOC_EP_RESET).ep);
	kernel.status_next(KDAT_IOC_EP_RESET, DAT_ERROR(DAT_INVALID_STATE, 0));
	EXPECT_D2(E2(dat2::DAT_INVALID_STATE), T().ep_reset_func(ep));

	/* what the DAT 1.2 core answers alone */
	kernel.reset_counts();
	DAT_COUNT n = 0, span = 0;
	EXPECT_D2(OK2, T().ep_recv_query_func(ep, &n, &span));
	EXPECT_EQ(DAT_VALUE_UNKNOWN, n);
	EXPECT_EQ(DAT_VALUE_UNKNOWN, span);
	EXPECT_D2(kNoModel, T().ep_set_watermark_func(ep, 1, 1));
	EXPECT_D2(kNotImpl, T().ep_dup_connect_func(ep, ep, 0, 0, nullptr,
						    dat2::DAT_QOS_BEST_EFFORT));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP), T().ep_get_status_func(srv.pz, &st, &ri, &qi));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP), T().ep_reset_func(srv.pz));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP), T().ep_disconnect_func(nullptr, dat2::DAT_CLOSE_ABRUPT_FLAG));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP), T().ep_recv_query_func(srv.pz, &n, &span));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP), T().ep_set_watermark_func(srv.pz, 1, 1));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_D2(OK2, T().ep_free_func(ep));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP), T().ep_free_func(ep));
}

/*
 * An LMR registered for local write only can be sent from, as on OFED's
 * providers (dtest does it): local read is granted, InfiniBand cannot
 * deny it.
 */
TEST_F(Dat2Ep, SendsFromAnLmrRegisteredForLocalWriteOnly)
{
	dat2::DAT_PROVIDER lmr_table{};
	kdat::dat2p::fill_lmr(lmr_table);
	std::vector<char> b(4096);
	dat2::DAT_REGION_DESCRIPTION r;
	r.for_va = b.data();
	DAT_LMR_HANDLE lmr = nullptr;
	DAT_LMR_CONTEXT lctx = 0;
	DAT_RMR_CONTEXT rctx = 0;
	DAT_VLEN len = 0;
	DAT_VADDR addr = 0;
	kernel.reset_counts();
	ASSERT_D2(OK2, lmr_table.lmr_create_func(srv.ia, dat2::DAT_MEM_TYPE_VIRTUAL, r,
						 b.size(), srv.pz,
						 dat2::DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
						 dat2::DAT_VA_TYPE_VA, &lmr, &lctx,
						 &rctx, &len, &addr));
	/* the kernel (which checks sends against it) is asked for local read */
	auto c = kernel.last<kdat_ioc_lmr_create>(KDAT_IOC_LMR_CREATE);
	EXPECT_EQ((__u32)(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
		  c.priv);
	DAT_EP_HANDLE ep = make_ep();
	dat2::DAT_LMR_TRIPLET seg;
	seg.virtual_address = (DAT_VADDR)(std::uintptr_t)b.data();
	seg.segment_length = 64;
	seg.lmr_context = lctx;
	kernel.reset_counts();
	EXPECT_D2(OK2, face(ep)->ep_post_send_func(ep, 1, &seg, cookie2(1),
						   dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(lctx, kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST).seg[0].lmr_context);
	EXPECT_D2(OK2, T().ep_free_func(ep));
	EXPECT_D2(OK2, lmr_table.lmr_free_func(lmr));
}

/* Posts: DAT 2.0 triplets reach the kernel in DAT 1.2's layout, through the face. */
TEST_F(Dat2Ep, PostsReachTheKernelWithTheirTripletsThroughTheFace)
{
	DAT_EP_HANDLE ep = make_ep();
	const auto ep_id = kid<kdat::Ep>(ep);
	dat2::DAT_PROVIDER *f = face(ep);	/* DAT_HANDLE_TO_PROVIDER(ep) */
	dat2::DAT_LMR_TRIPLET segs[10];
	for (int i = 0; i < 10; i++)
		segs[i] = srv.seg(256 * i, 16 + i);
	const dat2::DAT_RMR_TRIPLET remote = { 0x123000ull, 4096, 0x77 };

	kernel.reset_counts();
	ASSERT_D2(OK2, f->ep_post_recv_func(ep, 1, segs, cookie2(0x5151),
					    dat2::DAT_COMPLETION_DEFAULT_FLAG));
	auto p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ(ep_id, p.ep);
	EXPECT_EQ((__u32)KDAT_POST_RECV, p.op);
	EXPECT_EQ(1u, p.nseg);
	EXPECT_EQ(0x5151u, p.cookie);
	EXPECT_EQ(segs[0].virtual_address, p.seg[0].addr);
	EXPECT_EQ(16u, p.seg[0].length);
	EXPECT_EQ(srv.lctx, p.seg[0].lmr_context);

	/* 8 segments (on the stack) and 10 (beyond): every one in order */
	for (DAT_COUNT n : { 8, 10 }) {
		ASSERT_D2(OK2, f->ep_post_send_func(ep, n, segs, cookie2(0x1200 + n),
						    dat2::DAT_COMPLETION_SUPPRESS_FLAG));
		p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
		EXPECT_EQ((__u32)KDAT_POST_SEND, p.op);
		EXPECT_EQ((__u32)n, p.nseg);
		EXPECT_EQ(0x1200u + n, p.cookie);
		EXPECT_EQ((__u32)DAT_COMPLETION_SUPPRESS_FLAG, p.flags);
		for (int i = 0; i < n; i++) {
			EXPECT_EQ(segs[i].virtual_address, p.seg[i].addr) << i;
			EXPECT_EQ(segs[i].segment_length, p.seg[i].length) << i;
			EXPECT_EQ(segs[i].lmr_context, p.seg[i].lmr_context) << i;
		}
	}

	ASSERT_D2(OK2, f->ep_post_rdma_write_func(ep, 2, segs, cookie2(7), &remote,
						  dat2::DAT_COMPLETION_BARRIER_FENCE_FLAG));
	p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ((__u32)KDAT_POST_RDMA_WRITE, p.op);
	EXPECT_EQ(2u, p.nseg);
	EXPECT_EQ(0x77u, p.rmr_context);
	EXPECT_EQ(0x123000u, p.remote_addr);
	EXPECT_EQ(4096u, p.remote_length);
	EXPECT_EQ((__u32)DAT_COMPLETION_BARRIER_FENCE_FLAG, p.flags);
	ASSERT_D2(OK2, f->ep_post_rdma_read_func(ep, 1, segs + 3, cookie2(8), &remote,
						 dat2::DAT_COMPLETION_DEFAULT_FLAG));
	p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ((__u32)KDAT_POST_RDMA_READ, p.op);
	EXPECT_EQ(segs[3].virtual_address, p.seg[0].addr);
	EXPECT_EQ(0x77u, p.rmr_context);
	/* without invalidation, send_with_invalidate is a send */
	ASSERT_D2(OK2, f->ep_post_send_with_invalidate_func(
			       ep, 1, segs + 4, cookie2(9), dat2::DAT_COMPLETION_DEFAULT_FLAG,
			       dat2::DAT_FALSE, 0));
	p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ((__u32)KDAT_POST_SEND, p.op);
	EXPECT_EQ(9u, p.cookie);
	EXPECT_EQ(segs[4].virtual_address, p.seg[0].addr);
	EXPECT_EQ(6u, kernel.total_ioctls());

	/* refusals in DAT 2.0's values; the kernel's verdict too */
	kernel.reset_counts();
	EXPECT_D2(ARG2(3), f->ep_post_send_func(ep, 1, nullptr, cookie2(0),
						dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(2), f->ep_post_recv_func(ep, -1, segs, cookie2(0),
						dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(2), f->ep_post_send_func(ep, KDAT_MAX_IOV + 1, segs, cookie2(0),
						dat2::DAT_COMPLETION_DEFAULT_FLAG));
	/* a count beyond what the ABI carries is refused, never converted whole */
	EXPECT_D2(ARG2(2), f->ep_post_send_func(ep, 0x7fffffff, segs, cookie2(0),
						dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(2), f->ep_post_rdma_write_func(ep, 0x7fffffff, segs, cookie2(0), &remote,
						      dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(5), f->ep_post_rdma_read_func(ep, 1, segs, cookie2(0), nullptr,
						     dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(5), f->ep_post_rdma_write_func(ep, 1, segs, cookie2(0), nullptr,
						      dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  T().ep_post_send_func(srv.pz, 1, segs, cookie2(0),
					dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  T().ep_post_recv_func(nullptr, 1, segs, cookie2(0),
					dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(0u, kernel.total_ioctls());
	kernel.status_next(KDAT_IOC_EP_POST,
			   DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED));
	EXPECT_D2(E2(dat2::DAT_INVALID_STATE, dat2::DAT_INVALID_STATE_EP_DISCONNECTED),
		  f->ep_post_send_func(ep, 1, segs, cookie2(0),
				       dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(OK2, f->ep_free_func(ep));
}

/* The DAT 2.0-only calls: a bad handle is a bad handle, else not supported. */
TEST_F(Dat2Ep, Dat20OnlyCallsAreNotSupported)
{
	DAT_EP_HANDLE ep = make_ep();
	struct sockaddr_in sin = ipv4("192.0.2.2");
	dat2::DAT_LMR_TRIPLET s = srv.seg(0, 8);
	const dat2::DAT_RMR_TRIPLET r = { 0x1000, 8, 1 };

	kernel.reset_counts();
	EXPECT_D2(kNotImpl, T().ep_common_connect_func(ep, (DAT_IA_ADDRESS_PTR)&sin,
						       0, 0, nullptr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  T().ep_common_connect_func(srv.pz, (DAT_IA_ADDRESS_PTR)&sin, 0, 0, nullptr));
	EXPECT_D2(kNotImpl, T().ep_post_rdma_read_to_rmr_func(
				    ep, &r, cookie2(1), &r, dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  T().ep_post_rdma_read_to_rmr_func(srv.ia, &r, cookie2(1), &r,
						    dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(kNoModel, T().ep_post_send_with_invalidate_func(
				    ep, 1, &s, cookie2(1), dat2::DAT_COMPLETION_DEFAULT_FLAG,
				    dat2::DAT_TRUE, 0x55));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  T().ep_post_send_with_invalidate_func(
			  nullptr, 1, &s, cookie2(1), dat2::DAT_COMPLETION_DEFAULT_FLAG,
			  dat2::DAT_TRUE, 0x55));
	DAT_RMR_HANDLE rmr = nullptr;
	EXPECT_D2(kNotImpl, T().rmr_create_for_ep_func(srv.pz, &rmr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_PZ), T().rmr_create_for_ep_func(ep, &rmr));
	EXPECT_EQ(nullptr, rmr);
	dat2::DAT_COMM comm = {};
	dat2::DAT_CSP_HANDLE csp = nullptr;
	EXPECT_D2(kNotImpl, T().csp_create_func(srv.ia, &comm, (DAT_IA_ADDRESS_PTR)&sin,
						srv.cr, &csp));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_IA),
		  T().csp_create_func(srv.pz, &comm, (DAT_IA_ADDRESS_PTR)&sin, srv.cr, &csp));
	EXPECT_EQ(nullptr, csp);
	/* no CSP handle can exist */
	dat2::DAT_CSP_PARAM cp;
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_CSP),
		  T().csp_query_func(srv.ia, dat2::DAT_CSP_FIELD_ALL, &cp));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_CSP), T().csp_free_func(ep));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* RMRs: what libdat answers (kdat has none), in DAT 2.0's values. */
TEST_F(Dat2Ep, RmrCallsAnswerAsTheCoreDoes)
{
	DAT_EP_HANDLE ep = make_ep();
	DAT_RMR_HANDLE rmr = nullptr;
	dat2::DAT_LMR_TRIPLET s = srv.seg(0, 8);
	dat2::DAT_RMR_PARAM p;
	DAT_RMR_CONTEXT ctx = 0;
	dat2::DAT_RMR_COOKIE c;
	c.as_64 = 1;

	kernel.reset_counts();
	EXPECT_D2(kNotImpl, T().rmr_create_func(srv.pz, &rmr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_PZ), T().rmr_create_func(srv.ia, &rmr));
	EXPECT_EQ(nullptr, rmr);
	/* any handle: none is an RMR */
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_RMR),
		  T().rmr_query_func(ep, dat2::DAT_RMR_FIELD_ALL, &p));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_RMR),
		  T().rmr_bind_func(ep, srv.lmr, &s, dat2::DAT_MEM_PRIV_REMOTE_READ_FLAG,
				    dat2::DAT_VA_TYPE_VA, ep, c,
				    dat2::DAT_COMPLETION_DEFAULT_FLAG, &ctx));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_RMR),
		  T().rmr_bind_func(ep, srv.lmr, &s, dat2::DAT_MEM_PRIV_REMOTE_READ_FLAG,
				    dat2::DAT_VA_TYPE_ZB, ep, c,
				    dat2::DAT_COMPLETION_DEFAULT_FLAG, &ctx));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_RMR), T().rmr_free_func(ep));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* SRQ: create, post (no system call), query (states by name), resize, set_lw, free. */
TEST_F(Dat2Ep, SrqEntriesTranslateAndThePostMakesNoSystemCall)
{
	dat2::DAT_SRQ_ATTR a = { 8, 3, 2 };
	DAT_SRQ_HANDLE srq = nullptr;

	kernel.reset_counts();
	ASSERT_D2(OK2, T().srq_create_func(srv.ia, srv.pz, &a, &srq));
	auto c = kernel.last<kdat_ioc_srq_create>(KDAT_IOC_SRQ_CREATE);
	EXPECT_EQ(kid<kdat::Pz>(srv.pz), c.pz);
	EXPECT_EQ(8, c.max_recv_dtos);
	EXPECT_EQ(3, c.max_recv_iov);
	EXPECT_EQ(2, c.low_watermark);
	EXPECT_EQ(&table2(), face(srq));
	fake::Ref s = ref<kdat::Srq>(srq);

	dat2::DAT_LMR_TRIPLET segs[3] = { srv.seg(0, 100), srv.seg(4096, 200),
					  srv.seg(8192, 300) };
	kernel.reset_counts();
	ASSERT_D2(OK2, face(srq)->srq_post_recv_func(srq, 3, segs, cookie2(0xabc)));
	ASSERT_D2(OK2, face(srq)->srq_post_recv_func(srq, 1, segs + 1, cookie2(0xdef)));
	EXPECT_EQ(0u, kernel.total_ioctls());	/* the ring, no system call */
	kernel.take(s);
	auto w = kernel.taken(s);
	ASSERT_EQ(2u, w.size());
	EXPECT_EQ(0xabcu, w[0].cookie);
	EXPECT_EQ(3u, w[0].nseg);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(segs[i].virtual_address, w[0].seg[i].addr);
		EXPECT_EQ(segs[i].segment_length, w[0].seg[i].length);
		EXPECT_EQ(segs[i].lmr_context, w[0].seg[i].lmr_context);
	}
	EXPECT_EQ(0xdefu, w[1].cookie);
	EXPECT_EQ(segs[1].virtual_address, w[1].seg[0].addr);
	EXPECT_D2(ARG2(2), T().srq_post_recv_func(srq, 4, segs, cookie2(1)));
	EXPECT_D2(ARG2(2), T().srq_post_recv_func(srq, 0x7fffffff, segs, cookie2(1)));
	EXPECT_D2(ARG2(3), T().srq_post_recv_func(srq, 1, nullptr, cookie2(1)));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_SRQ),
		  T().srq_post_recv_func(srv.pz, 1, segs, cookie2(1)));

	/* query: each state by name (ERROR is 0 in 2.0, 1 in 1.2) */
	for (auto st : { DAT_SRQ_STATE_OPERATIONAL, DAT_SRQ_STATE_ERROR }) {
		kernel.answer<kdat_ioc_srq_query>(KDAT_IOC_SRQ_QUERY,
						  [st](kdat_ioc_srq_query &q) {
							  q.state = st;
							  q.max_recv_dtos = 12;
							  q.max_recv_iov = 3;
							  q.low_watermark = 4;
							  q.available_dto_count = 2;
							  q.outstanding_dto_count = 5;
							  return DAT_SUCCESS;
						  });
		dat2::DAT_SRQ_PARAM p;
		std::memset(&p, 0x5a, sizeof(p));
		ASSERT_D2(OK2, T().srq_query_func(srq, dat2::DAT_SRQ_FIELD_ALL, &p));
		EXPECT_EQ(st == DAT_SRQ_STATE_ERROR ? dat2::DAT_SRQ_STATE_ERROR :
						      dat2::DAT_SRQ_STATE_OPERATIONAL,
			  p.srq_state);
		EXPECT_EQ(srv.ia, p.ia_handle);
		EXPECT_EQ(srv.pz, p.pz_handle);
		EXPECT_EQ(12, p.max_recv_dtos);
		EXPECT_EQ(3, p.max_recv_iov);
		EXPECT_EQ(4, p.low_watermark);
		EXPECT_EQ(2, p.available_dto_count);
		EXPECT_EQ(5, p.outstanding_dto_count);
		EXPECT_EQ((__u32)DAT_SRQ_FIELD_ALL,
			  kernel.last<kdat_ioc_srq_query>(KDAT_IOC_SRQ_QUERY).mask);
	}
	dat2::DAT_SRQ_PARAM p;
	ASSERT_D2(OK2, T().srq_query_func(srq, dat2::DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT, &p));
	EXPECT_EQ((__u32)DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT,
		  kernel.last<kdat_ioc_srq_query>(KDAT_IOC_SRQ_QUERY).mask);
	kernel.reset_counts();
	EXPECT_D2(ARG2(2), T().srq_query_func(srq, (dat2::DAT_SRQ_PARAM_MASK)0x100, &p));
	EXPECT_D2(ARG2(3), T().srq_query_func(srq, dat2::DAT_SRQ_FIELD_ALL, nullptr));
	EXPECT_EQ(0u, kernel.total_ioctls());

	ASSERT_D2(OK2, T().srq_resize_func(srq, 16));
	EXPECT_EQ(16, kernel.last<kdat_ioc_srq_op>(KDAT_IOC_SRQ_RESIZE).value);
	ASSERT_D2(OK2, T().srq_set_lw_func(srq, 3));
	EXPECT_EQ(3, kernel.last<kdat_ioc_srq_op>(KDAT_IOC_SRQ_SET_LW).value);
	kernel.status_next(KDAT_IOC_SRQ_RESIZE,
			   DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
	EXPECT_D2(E2(dat2::DAT_INVALID_STATE, dat2::DAT_INVALID_STATE_SRQ_IN_USE),
		  T().srq_resize_func(srq, 1));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_SRQ), T().srq_resize_func(srv.ia, 16));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_SRQ), T().srq_set_lw_func(nullptr, 1));

	kernel.status_next(KDAT_IOC_FREE,
			   DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
	EXPECT_D2(E2(dat2::DAT_INVALID_STATE, dat2::DAT_INVALID_STATE_SRQ_IN_USE),
		  T().srq_free_func(srq));
	EXPECT_D2(OK2, T().srq_free_func(srq));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_SRQ), T().srq_free_func(srq));

	/* create's refusals */
	kernel.reset_counts();
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_IA), T().srq_create_func(srv.pz, srv.pz, &a, &srq));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_PZ), T().srq_create_func(srv.ia, srv.ia, &a, &srq));
	EXPECT_D2(ARG2(3), T().srq_create_func(srv.ia, srv.pz, nullptr, &srq));
	EXPECT_D2(ARG2(4), T().srq_create_func(srv.ia, srv.pz, &a, nullptr));
	EXPECT_EQ(0u, kernel.total_ioctls());
}

/* A connection request: cr_query in 2.0's CR_PARAM, accept, reject (with and without data). */
TEST_F(Dat2Ep, CrQueryAcceptAndRejectTranslate)
{
	DAT_EP_HANDLE ep = make_ep();
	DAT_PSP_HANDLE psp = nullptr;
	ASSERT_D2(OK2, T().psp_create_func(srv.ia, 45248, srv.cr,
					   dat2::DAT_PSP_CONSUMER_FLAG, &psp));
	EXPECT_EQ(&table2(), face(psp));

	auto request = [&](const char *pd) {
		fake::CrInfo info;
		info.pdata.assign(pd, pd + std::strlen(pd) + 1);
		info.remote = ipv4("192.0.2.2");
		info.remote_port = 40001;
		struct kdat_uevent u = {};
		u.event_number = DAT_CONNECTION_REQUEST_EVENT;
		u.cr = kernel.make_cr(ref<kdat::Ia>(srv.ia), info);
		u.sp = kid<kdat::Psp>(psp);
		u.conn_qual = 45248;
		EXPECT_TRUE(kernel.inject(ref<kdat::Evd>(srv.cr), u));
		DAT_EVENT e = next_event(srv.cr, DAT_CONNECTION_REQUEST_EVENT);
		return e.event_data.cr_arrival_event_data.cr_handle;
	};

	DAT_CR_HANDLE cr = request("index 3");
	EXPECT_EQ(&table2(), face(cr));
	dat2::DAT_CR_PARAM p;
	std::memset(&p, 0x5a, sizeof(p));
	/* dtestcm passes DAT_CSP_FIELD_ALL (0x0f): every field but the EP */
	ASSERT_D2(OK2, T().cr_query_func(cr, (dat2::DAT_CR_PARAM_MASK)dat2::DAT_CSP_FIELD_ALL, &p));
	EXPECT_EQ(ipv4("192.0.2.2").sin_addr.s_addr,
		  ((struct sockaddr_in *)p.remote_ia_address_ptr)->sin_addr.s_addr);
	EXPECT_EQ(40001u, p.remote_port_qual);
	EXPECT_EQ(8, p.private_data_size);
	EXPECT_STREQ("index 3", (const char *)p.private_data);
	EXPECT_EQ(ptr(0x5a5a5a5a5a5a5a5aull), p.local_ep_handle);	/* not asked */
	ASSERT_D2(OK2, T().cr_query_func(cr, dat2::DAT_CR_FIELD_ALL, &p));
	EXPECT_EQ(nullptr, p.local_ep_handle);
	kernel.reset_counts();
	EXPECT_D2(ARG2(2), T().cr_query_func(cr, (dat2::DAT_CR_PARAM_MASK)0x20, &p));
	EXPECT_D2(ARG2(3), T().cr_query_func(cr, dat2::DAT_CR_FIELD_ALL, nullptr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_CR),
		  T().cr_query_func(ep, dat2::DAT_CR_FIELD_ALL, &p));
	/* a reject with private data cannot carry it: refused, the CR stays */
	const char why[] = "no";
	EXPECT_D2(kNoModel, T().cr_reject_func(cr, sizeof(why), (DAT_PVOID)why));
	EXPECT_D2(ARG2(2), T().cr_reject_func(cr, -1, nullptr));
	EXPECT_D2(ARG2(3), T().cr_reject_func(cr, 4, nullptr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_CR),
		  T().cr_reject_func(ep, sizeof(why), (DAT_PVOID)why));
	EXPECT_D2(kNotImpl, T().cr_handoff_func(cr, 1));
	EXPECT_EQ(0u, kernel.total_ioctls());
	EXPECT_D2(OK2, T().cr_query_func(cr, dat2::DAT_CR_FIELD_ALL, &p));

	const char rep[] = "welcome";
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP), T().cr_accept_func(cr, srv.pz, 0, nullptr));
	EXPECT_D2(ARG2(3), T().cr_accept_func(cr, ep, -1, nullptr));
	ASSERT_D2(OK2, T().cr_accept_func(cr, ep, sizeof(rep), (DAT_PVOID)rep));
	auto acc = kernel.last<kdat_ioc_cr_accept>(KDAT_IOC_CR_ACCEPT);
	EXPECT_EQ(kid<kdat::Ep>(ep), acc.ep);
	EXPECT_EQ(sizeof(rep), acc.pdata_size);
	EXPECT_STREQ(rep, (const char *)acc.pdata);
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_CR),
		  T().cr_query_func(cr, dat2::DAT_CR_FIELD_ALL, &p));	/* consumed */

	/* without private data, a reject is dat_cr_reject (dtest: reject(cr, 0, NULL)) */
	cr = request("index 4");
	const auto cr_kid = kid<kdat::Cr>(cr);
	kernel.reset_counts();
	ASSERT_D2(OK2, T().cr_reject_func(cr, 0, nullptr));
	auto f = kernel.last<kdat_ioc_free>(KDAT_IOC_FREE);
	EXPECT_EQ(cr_kid, f.handle);
	EXPECT_EQ(kdat::ktype::CR, f.type);
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_CR), T().cr_reject_func(cr, 0, nullptr));

	EXPECT_D2(OK2, T().psp_free_func(psp));
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* The whole DAT 2.0 table (this file's table2() has the EP family only). */
dat2::DAT_PROVIDER &full()
{
	kdat::dat2p::fill_provider_table();
	return kdat::dat2p::provider_table;
}

/*
 * A qualifier above 65535 is mapped as OFED's rdma_cm provider maps it,
 * (q % 32001) + 65535 - 32001, for a PSP, an RSP and a connect, so kdat
 * and OFED peers meet on the same port; dat_psp_query, dat_rsp_query and
 * a CR arrival still name the qualifier the consumer gave.
 */
TEST_F(Dat2Ep, QualifiersAboveSixteenBitsMapToOfedsPorts)
{
	DAT_PSP_HANDLE psp = nullptr, psp2 = nullptr;

	ASSERT_D2(OK2, T().psp_create_func(srv.ia, 0xbabb1e, srv.cr,
					   dat2::DAT_PSP_CONSUMER_FLAG, &psp));
	EXPECT_EQ(0xb69eu,
		  kernel.last<kdat_ioc_psp_create>(KDAT_IOC_PSP_CREATE).conn_qual);
	/* queries and requests name the consumer's qualifier, as OFED's do */
	dat2::DAT_PSP_PARAM pp;
	ASSERT_D2(OK2, T().psp_query_func(psp, dat2::DAT_PSP_FIELD_CONN_QUAL, &pp));
	EXPECT_EQ(0xbabb1eu, pp.conn_qual);
	struct kdat_uevent u = {};
	u.event_number = DAT_CONNECTION_REQUEST_EVENT;
	fake::CrInfo info;
	info.remote = ipv4("192.0.2.2");
	u.cr = kernel.make_cr(ref<kdat::Ia>(srv.ia), info);
	u.sp = kid<kdat::Psp>(psp);
	u.conn_qual = 0xb69e;
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(srv.cr), u));
	dat2::DAT_EVENT e2;
	ASSERT_D2(OK2, full().evd_dequeue_func(srv.cr, &e2));
	ASSERT_EQ(dat2::DAT_CONNECTION_REQUEST_EVENT, e2.event_number);
	EXPECT_EQ(0xbabb1eu, e2.event_data.cr_arrival_event_data.conn_qual);
	EXPECT_D2(OK2, T().cr_reject_func(e2.event_data.cr_arrival_event_data.cr_handle,
					  0, nullptr));
	ASSERT_D2(OK2, T().psp_create_func(srv.ia, 0x10000, srv.cr,
					   dat2::DAT_PSP_CONSUMER_FLAG, &psp2));
	EXPECT_EQ(0x88fcu,
		  kernel.last<kdat_ioc_psp_create>(KDAT_IOC_PSP_CREATE).conn_qual);
	ASSERT_D2(OK2, T().psp_query_func(psp2, dat2::DAT_PSP_FIELD_ALL, &pp));
	EXPECT_EQ(0x10000u, pp.conn_qual);
	/* 65535 and below pass as they are */
	EXPECT_D2(OK2, T().psp_free_func(psp2));
	ASSERT_D2(OK2, T().psp_create_func(srv.ia, 0xffff, srv.cr,
					   dat2::DAT_PSP_CONSUMER_FLAG, &psp2));
	EXPECT_EQ(0xffffu,
		  kernel.last<kdat_ioc_psp_create>(KDAT_IOC_PSP_CREATE).conn_qual);
	ASSERT_D2(OK2, T().psp_query_func(psp2, dat2::DAT_PSP_FIELD_ALL, &pp));
	EXPECT_EQ(0xffffu, pp.conn_qual);
	EXPECT_D2(OK2, T().psp_free_func(psp2));

	DAT_EP_HANDLE ep = make_ep();
	DAT_RSP_HANDLE rsp = nullptr;
	ASSERT_D2(OK2, T().rsp_create_func(srv.ia, 0xbabb1f, ep, srv.cr, &rsp));
	EXPECT_EQ(0xb69fu,
		  kernel.last<kdat_ioc_rsp_create>(KDAT_IOC_RSP_CREATE).conn_qual);
	dat2::DAT_RSP_PARAM rp;
	ASSERT_D2(OK2, T().rsp_query_func(rsp, dat2::DAT_RSP_FIELD_CONN_QUAL, &rp));
	EXPECT_EQ(0xbabb1fu, rp.conn_qual);
	EXPECT_D2(OK2, T().rsp_free_func(rsp));

	DAT_EP_HANDLE cep = make_ep();
	struct sockaddr_in sin = {};
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(0xc0000201);
	ASSERT_D2(OK2, T().ep_connect_func(cep, (DAT_IA_ADDRESS_PTR)&sin,
					   0x12345678, DAT_TIMEOUT_INFINITE, 0,
					   nullptr, dat2::DAT_QOS_BEST_EFFORT,
					   dat2::DAT_CONNECT_DEFAULT_FLAG));
	EXPECT_EQ(0x8c2eu,
		  kernel.last<kdat_ioc_ep_connect>(KDAT_IOC_EP_CONNECT).conn_qual);
	EXPECT_D2(OK2, T().psp_free_func(psp));
}

/*
 * The table behind those queries: a handle's entry goes with a create of
 * an unmapped qualifier (a handle handed out again), with its free, and
 * with its IA's close.
 */
TEST(Dat2SpQual, EntriesGoWithTheirObjectsAndIas)
{
	namespace p = kdat::dat2p;
	auto *ia1 = reinterpret_cast<DAT_IA_HANDLE>(0x1000);
	auto *ia2 = reinterpret_cast<DAT_IA_HANDLE>(0x2000);
	auto *a = reinterpret_cast<DAT_HANDLE>(0x1010);
	auto *b = reinterpret_cast<DAT_HANDLE>(0x1020);
	auto *c = reinterpret_cast<DAT_HANDLE>(0x2010);

	p::sp_qual_created(ia1, a, 0xbabb1e);
	p::sp_qual_created(ia1, b, 0xbabb1f);
	p::sp_qual_created(ia2, c, 0xbabb20);
	EXPECT_EQ(0xbabb1eu, p::sp_qual(a, 0xb69e));
	/* the same handle, now a PSP of an unmapped qualifier */
	p::sp_qual_created(ia1, a, 5001);
	EXPECT_EQ(5001u, p::sp_qual(a, 5001));
	EXPECT_EQ(0xbabb1fu, p::sp_qual_freed(b).qual);
	EXPECT_EQ(0xb69fu, p::sp_qual(b, 0xb69f));
	EXPECT_EQ(0u, p::sp_qual_freed(b).qual);
	p::sp_qual_created(ia1, b, 0xbabb1f);
	auto taken = p::sp_quals_of_ia_take(ia1);
	ASSERT_EQ(1u, taken.size());
	EXPECT_EQ(0xb69fu, p::sp_qual(b, 0xb69f));
	/* a close that failed puts them back */
	p::sp_quals_restore(ia1, taken);
	EXPECT_EQ(0xbabb1fu, p::sp_qual(b, 0xb69f));
	EXPECT_EQ(1u, p::sp_quals_of_ia_take(ia1).size());
	EXPECT_EQ(0xb69fu, p::sp_qual(b, 0xb69f));
	EXPECT_EQ(0xbabb20u, p::sp_qual(c, 0xb6a0));
	EXPECT_EQ(0xbabb20u, p::sp_qual_freed(c).qual);
}

/* PSPs: create (flags by name), query by mask, create_any and free; RSPs create, query by mask, free. */
TEST_F(Dat2Ep, PspAndRspEntriesTranslate)
{
	DAT_PSP_HANDLE psp = nullptr;

	kernel.reset_counts();
	ASSERT_D2(OK2, T().psp_create_func(srv.ia, 5001, srv.cr,
					   dat2::DAT_PSP_PROVIDER_FLAG, &psp));
	auto c = kernel.last<kdat_ioc_psp_create>(KDAT_IOC_PSP_CREATE);
	EXPECT_EQ(5001u, c.conn_qual);
	EXPECT_EQ(kid<kdat::Evd>(srv.cr), c.evd);
	EXPECT_EQ((__u32)DAT_PSP_PROVIDER_FLAG, c.flags);

	dat2::DAT_PSP_PARAM p;
	std::memset(&p, 0x5a, sizeof(p));
	ASSERT_D2(OK2, T().psp_query_func(psp, dat2::DAT_PSP_FIELD_ALL, &p));
	EXPECT_EQ(srv.ia, p.ia_handle);
	EXPECT_EQ(5001u, p.conn_qual);
	EXPECT_EQ(srv.cr, p.evd_handle);
	EXPECT_EQ(dat2::DAT_PSP_PROVIDER_FLAG, p.psp_flags);
	std::memset(&p, 0x5a, sizeof(p));
	ASSERT_D2(OK2, T().psp_query_func(psp, dat2::DAT_PSP_FIELD_CONN_QUAL, &p));
	EXPECT_EQ(5001u, p.conn_qual);
	EXPECT_EQ(ptr(0x5a5a5a5a5a5a5a5aull), p.ia_handle);

	kernel.reset_counts();
	EXPECT_D2(ARG2(2), T().psp_query_func(psp, (dat2::DAT_PSP_PARAM_MASK)0x10, &p));
	EXPECT_D2(ARG2(3), T().psp_query_func(psp, dat2::DAT_PSP_FIELD_ALL, nullptr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_PSP),
		  T().psp_query_func(srv.ia, dat2::DAT_PSP_FIELD_ALL, &p));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EVD_CR),
		  T().psp_create_func(srv.ia, 5002, srv.pz, dat2::DAT_PSP_CONSUMER_FLAG, &psp));
	EXPECT_D2(ARG2(5), T().psp_create_func(srv.ia, 5002, srv.cr,
					       dat2::DAT_PSP_CONSUMER_FLAG, nullptr));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_IA),
		  T().psp_create_func(srv.pz, 5002, srv.cr, dat2::DAT_PSP_CONSUMER_FLAG, &psp));
	DAT_CONN_QUAL q = 0;
	DAT_PSP_HANDLE any = nullptr;
	EXPECT_D2(kNotImpl, T().psp_create_any_func(srv.ia, &q, srv.cr,
						    dat2::DAT_PSP_CONSUMER_FLAG, &any));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_IA),
		  T().psp_create_any_func(srv.pz, &q, srv.cr, dat2::DAT_PSP_CONSUMER_FLAG, &any));
	EXPECT_EQ(nullptr, any);

	/* RSPs: libdat's, arguments and parameters converted */
	DAT_EP_HANDLE ep = make_ep();
	DAT_RSP_HANDLE rsp = nullptr;
	kernel.reset_counts();
	dat2::DAT_RSP_PARAM rp;
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_IA),
		  T().rsp_create_func(srv.pz, 5003, ep, srv.cr, &rsp));
	EXPECT_EQ(nullptr, rsp);
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_RSP),
		  T().rsp_query_func(psp, dat2::DAT_RSP_FIELD_ALL, &rp));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_RSP), T().rsp_free_func(psp));
	EXPECT_EQ(0u, kernel.total_ioctls());
	/* the kernel's refusal comes back as the DAT 2.0 code */
	kernel.status_next(KDAT_IOC_RSP_CREATE,
			   DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_RESERVED));
	EXPECT_D2(E2(dat2::DAT_INVALID_STATE, dat2::DAT_INVALID_STATE_EP_RESERVED),
		  T().rsp_create_func(srv.ia, 5003, ep, srv.cr, &rsp));
	EXPECT_EQ(nullptr, rsp);
	ASSERT_D2(OK2, T().rsp_create_func(srv.ia, 5003, ep, srv.cr, &rsp));
	auto rc = kernel.last<kdat_ioc_rsp_create>(KDAT_IOC_RSP_CREATE);
	EXPECT_EQ(5003u, rc.conn_qual);
	EXPECT_EQ(kid<kdat::Ep>(ep), rc.ep);
	EXPECT_EQ(kid<kdat::Evd>(srv.cr), rc.evd);
	std::memset(&rp, 0x5a, sizeof(rp));
	ASSERT_D2(OK2, T().rsp_query_func(rsp, dat2::DAT_RSP_FIELD_ALL, &rp));
	EXPECT_EQ(srv.ia, rp.ia_handle);
	EXPECT_EQ(5003u, rp.conn_qual);
	EXPECT_EQ(srv.cr, rp.evd_handle);
	EXPECT_EQ(ep, rp.ep_handle);
	std::memset(&rp, 0x5a, sizeof(rp));
	ASSERT_D2(OK2, T().rsp_query_func(rsp, dat2::DAT_RSP_FIELD_EP_HANDLE, &rp));
	EXPECT_EQ(ep, rp.ep_handle);
	EXPECT_EQ(ptr(0x5a5a5a5a5a5a5a5aull), rp.ia_handle);
	EXPECT_D2(OK2, T().rsp_free_func(rsp));
	EXPECT_EQ(kdat::ktype::RSP,
		  kernel.last<kdat_ioc_free>(KDAT_IOC_FREE).type);
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_RSP), T().rsp_free_func(rsp));

	EXPECT_D2(OK2, T().psp_free_func(psp));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_PSP), T().psp_free_func(psp));
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* ------------------------------------------------------------------ */
/* The IB extension (user/dat2/ib_ext.cpp, dto_ext2, ib_ext_attr2)      */

namespace {

using kdat::dat2p::dto_ext2;
using kdat::dat2p::ext_status;

dat2::DAT_IB_EXTENSION_EVENT_DATA ext_of(const dat2::DAT_EVENT &e)
{
	dat2::DAT_IB_EXTENSION_EVENT_DATA x;
	std::memcpy(&x, e.event_extension_data, sizeof(x));
	return x;
}

dat2::DAT_EVENT dto2(dat2::DAT_DTO_COMPLETION_STATUS st = dat2::DAT_DTO_SUCCESS)
{
	dat2::DAT_EVENT e;
	std::memset(&e, 0, sizeof(e));
	e.event_number = dat2::DAT_DTO_COMPLETION_EVENT;
	e.event_data.dto_completion_event_data.status = st;
	e.event_data.dto_completion_event_data.transfered_length = 256;
	return e;
}

/* dat_extension_op as libdat2 calls the table: the operation's va_list */
dat2::DAT_RETURN ext_op(DAT_HANDLE h, int op, ...)
{
	va_list ap;
	va_start(ap, op);
	dat2::DAT_RETURN r = full().handle_extendedop_func(
		h, (dat2::DAT_EXTENDED_OP)op, ap);
	va_end(ap);
	return r;
}

} // namespace

/* Every operation kdat reports, as DAT 2.0 and its IB extension name it. */
TEST(Dat2IbExt, DtoOperationsAndExtendedEventsByName)
{
	const struct {
		std::uint32_t op, flags;
		int number;		/* DAT 2.0 event number */
		int operation;		/* DAT_DTOS */
		int type;		/* DAT_IB_EXT_TYPE, -1: no extension data */
	} cases[] = {
		{ KDAT_UDTO_UNKNOWN, 0, dat2::DAT_DTO_COMPLETION_EVENT, dat2::DAT_DTO_SEND, -1 },
		{ KDAT_UDTO_SEND, 0, dat2::DAT_DTO_COMPLETION_EVENT, dat2::DAT_DTO_SEND, -1 },
		{ KDAT_UDTO_RECV, 0, dat2::DAT_DTO_COMPLETION_EVENT, dat2::DAT_DTO_RECEIVE, -1 },
		{ KDAT_UDTO_RDMA_WRITE, 0, dat2::DAT_DTO_COMPLETION_EVENT, dat2::DAT_DTO_RDMA_WRITE, -1 },
		{ KDAT_UDTO_RDMA_READ, 0, dat2::DAT_DTO_COMPLETION_EVENT, dat2::DAT_DTO_RDMA_READ, -1 },
		{ KDAT_UDTO_RDMA_WRITE_IMMED, 0, dat2::DAT_IB_DTO_EVENT,
		  dat2::DAT_IB_DTO_RDMA_WRITE_IMMED, dat2::DAT_IB_RDMA_WRITE_IMMED },
		{ KDAT_UDTO_RECV_RDMA_IMMED, KDAT_UDTO_F_IMMED, dat2::DAT_IB_DTO_EVENT,
		  dat2::DAT_IB_DTO_RECV_IMMED, dat2::DAT_IB_RDMA_WRITE_IMMED_DATA },
		{ KDAT_UDTO_RECV, KDAT_UDTO_F_IMMED, dat2::DAT_IB_DTO_EVENT,
		  dat2::DAT_IB_DTO_RECV_MSG_IMMED, dat2::DAT_IB_RECV_IMMED_DATA },
		{ KDAT_UDTO_CMP_AND_SWAP, 0, dat2::DAT_IB_DTO_EVENT,
		  dat2::DAT_IB_DTO_CMP_SWAP, dat2::DAT_IB_CMP_AND_SWAP },
		{ KDAT_UDTO_FETCH_AND_ADD, 0, dat2::DAT_IB_DTO_EVENT,
		  dat2::DAT_IB_DTO_FETCH_ADD, dat2::DAT_IB_FETCH_AND_ADD },
	};
	for (const auto &c : cases) {
		for (auto st : { dat2::DAT_DTO_SUCCESS, dat2::DAT_DTO_ERR_FLUSHED }) {
			dat2::DAT_EVENT e = dto2(st);
			dto_ext2(c.op, c.flags, 0x7777, e);
			const auto &d = e.event_data.dto_completion_event_data;
			EXPECT_EQ(c.number, (int)e.event_number) << c.op;
			EXPECT_EQ(c.operation, (int)d.operation) << c.op;
			EXPECT_EQ(st, d.status) << c.op;
			EXPECT_EQ(256u, d.transfered_length) << c.op;
			auto x = ext_of(e);
			if (c.type < 0) {
				dat2::DAT_UINT64 zero[8] = {};
				EXPECT_EQ(0, std::memcmp(zero, e.event_extension_data,
							 sizeof(zero))) << c.op;
				continue;
			}
			EXPECT_EQ(c.type, (int)x.type) << c.op;
			EXPECT_EQ(st == dat2::DAT_DTO_SUCCESS ? dat2::DAT_OP_SUCCESS :
								 dat2::DAT_IB_OP_ERR,
				  x.status) << c.op;
			EXPECT_EQ(c.flags ? 0x7777u : 0u, x.val.immed.data) << c.op;
		}
	}
	/* other events are left alone */
	dat2::DAT_EVENT e;
	std::memset(&e, 0, sizeof(e));
	e.event_number = dat2::DAT_SOFTWARE_EVENT;
	dto_ext2(KDAT_UDTO_CMP_AND_SWAP, KDAT_UDTO_F_IMMED, 1, e);
	EXPECT_EQ(dat2::DAT_SOFTWARE_EVENT, e.event_number);
	EXPECT_EQ(0u, ext_of(e).val.immed.data);
}

/* The kernel calls' argument numbers become dat_extension_op's (+1). */
TEST(Dat2IbExt, StatusesNameDatExtensionOpsArguments)
{
	EXPECT_EQ(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7),
		  ext_status(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6)));
	EXPECT_EQ(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3),
		  ext_status(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2)));
	EXPECT_EQ(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP),
		  ext_status(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP)));
	EXPECT_EQ(DAT_ERROR(DAT_LENGTH_ERROR, 0),
		  ext_status(DAT_ERROR(DAT_LENGTH_ERROR, 0)));
	EXPECT_EQ(DAT_SUCCESS, ext_status(DAT_SUCCESS));
}

/* The IA attributes advertise the extension only where the module has it. */
TEST(Dat2IbExt, AttributesFollowTheKernelsFlags)
{
	dat2::DAT_IA_ATTR a;
	std::memset(&a, 0, sizeof(a));
	a.extension_supported = dat2::DAT_EXTENSION_NONE;
	kdat::dat2p::ib_ext_attr2(0, a);
	EXPECT_EQ(dat2::DAT_EXTENSION_NONE, a.extension_supported);
	EXPECT_EQ(0, a.extension_version);
	kdat::dat2p::ib_ext_attr2(KDAT_UIA_IB_EXT, a);
	EXPECT_EQ(dat2::DAT_EXTENSION_IB, a.extension_supported);
	EXPECT_EQ(DAT_IB_EXTENSION_VERSION, a.extension_version);

	DAT_PROVIDER_ATTR p1 = {};
	dat2::DAT_PROVIDER_ATTR p{};
	auto value = [&](const char *name) -> std::string {
		for (int i = 0; i < p.num_provider_specific_attr; i++)
			if (!std::strcmp(p.provider_specific_attr[i].name, name))
				return p.provider_specific_attr[i].value;
		return "(none)";
	};
	kdat::dat2p::provider_specific2(p1, "", p, 0);
	EXPECT_EQ(0, p.num_provider_specific_attr);
	kdat::dat2p::provider_specific2(p1, "", p, KDAT_UIA_IB_EXT);
	EXPECT_EQ("TRUE", value(DAT_IB_ATTR_IMMED_DATA));
	EXPECT_EQ("FALSE", value(DAT_IB_ATTR_CMP_AND_SWAP));
	EXPECT_EQ("FALSE", value(DAT_IB_ATTR_FETCH_AND_ADD));
	kdat::dat2p::provider_specific2(p1, "1024", p,
					KDAT_UIA_IB_EXT | KDAT_UIA_ATOMICS);
	EXPECT_EQ("TRUE", value(DAT_IB_ATTR_IMMED_DATA));
	EXPECT_EQ("TRUE", value(DAT_IB_ATTR_CMP_AND_SWAP));
	EXPECT_EQ("TRUE", value(DAT_IB_ATTR_FETCH_AND_ADD));
	EXPECT_EQ("1024", value("DAT_IB_TRANSPORT_MTU"));
	EXPECT_EQ("(none)", value(DAT_IB_ATTR_COUNTERS));
}

/* dat_ia_query through the table: what the module's IA_QUERY says. */
TEST_F(Dat2Ep, IaQueryAdvertisesTheIbExtensionOfTheModule)
{
	dat2::DAT_IA_ATTR a;
	dat2::DAT_PROVIDER_ATTR p{};
	ASSERT_D2(OK2, full().ia_query_func(srv.ia, nullptr, dat2::v_DAT_IA_FIELD_ALL, &a,
					 dat2::v_DAT_PROVIDER_FIELD_ALL, &p));
	EXPECT_EQ(dat2::DAT_EXTENSION_NONE, a.extension_supported);
	kernel.answer<struct kdat_ioc_ia_query>(KDAT_IOC_IA_QUERY,
						[](struct kdat_ioc_ia_query &q) {
		q.attr.flags |= KDAT_UIA_IB_EXT | KDAT_UIA_ATOMICS;
		return DAT_SUCCESS;
	});
	ASSERT_D2(OK2, full().ia_query_func(srv.ia, nullptr, dat2::v_DAT_IA_FIELD_ALL, &a,
					 dat2::v_DAT_PROVIDER_FIELD_ALL, &p));
	EXPECT_EQ(dat2::DAT_EXTENSION_IB, a.extension_supported);
	EXPECT_EQ(DAT_IB_EXTENSION_VERSION, a.extension_version);
	int found = 0;
	for (int i = 0; i < p.num_provider_specific_attr; i++)
		if (!std::strcmp(p.provider_specific_attr[i].name, DAT_IB_ATTR_CMP_AND_SWAP) ||
		    !std::strcmp(p.provider_specific_attr[i].name, DAT_IB_ATTR_FETCH_AND_ADD))
			found += !std::strcmp(p.provider_specific_attr[i].value, "TRUE");
	EXPECT_EQ(2, found);
	kernel.answer_raw(KDAT_IOC_IA_QUERY, {});
}

/*
 * dat_extension_op's three IB operations reach the kernel's EP_POST with
 * their arguments; NULL triplets, the kernel's refusals (renumbered) and
 * operations kdat does not do answer in DAT 2.0's values.
 */
TEST_F(Dat2Ep, ExtensionOpsReachTheKernelsEpPost)
{
	DAT_EP_HANDLE ep = make_ep();
	const auto ep_id = kid<kdat::Ep>(ep);
	dat2::DAT_LMR_TRIPLET segs[2] = { srv.seg(0, 256), srv.seg(512, 8) };
	dat2::DAT_RMR_TRIPLET remote = { 0x123000ull, 256, 0x77 };

	kernel.reset_counts();
	ASSERT_D2(OK2, ext_op(ep, dat2::DAT_IB_RDMA_WRITE_IMMED_OP, (DAT_COUNT)2,
			      segs, cookie2(0x9999), &remote, (DAT_UINT32)0x1111,
			      dat2::DAT_COMPLETION_BARRIER_FENCE_FLAG));
	auto p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ(ep_id, p.ep);
	EXPECT_EQ((__u32)KDAT_POST_RDMA_WRITE_IMMED, p.op);
	EXPECT_EQ(2u, p.nseg);
	EXPECT_EQ(0x9999u, p.cookie);
	EXPECT_EQ(0x1111u, p.immed_data);
	EXPECT_EQ(0x77u, p.rmr_context);
	EXPECT_EQ(0x123000u, p.remote_addr);
	EXPECT_EQ(256u, p.remote_length);
	EXPECT_EQ(segs[1].virtual_address, p.seg[1].addr);
	EXPECT_EQ((__u32)DAT_COMPLETION_BARRIER_FENCE_FLAG, p.flags);

	ASSERT_D2(OK2, ext_op(ep, dat2::DAT_IB_CMP_AND_SWAP_OP,
			      (DAT_UINT64)0x12345, (DAT_UINT64)0x98765, &segs[1],
			      cookie2(3333), &remote, dat2::DAT_COMPLETION_DEFAULT_FLAG));
	p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ((__u32)KDAT_POST_CMP_AND_SWAP, p.op);
	EXPECT_EQ(1u, p.nseg);
	EXPECT_EQ(0x12345u, p.compare_add);
	EXPECT_EQ(0x98765u, p.swap);
	EXPECT_EQ(3333u, p.cookie);
	EXPECT_EQ(segs[1].virtual_address, p.seg[0].addr);
	EXPECT_EQ(8u, p.seg[0].length);

	ASSERT_D2(OK2, ext_op(ep, dat2::DAT_IB_FETCH_AND_ADD_OP, (DAT_UINT64)0x100,
			      &segs[1], cookie2(0x7777), &remote,
			      dat2::DAT_COMPLETION_DEFAULT_FLAG));
	p = kernel.last<kdat_ioc_ep_post>(KDAT_IOC_EP_POST);
	EXPECT_EQ((__u32)KDAT_POST_FETCH_AND_ADD, p.op);
	EXPECT_EQ(0x100u, p.compare_add);
	EXPECT_EQ(0u, p.swap);
	EXPECT_EQ(0u, p.reserved);
	EXPECT_EQ(3u, kernel.total_ioctls());

	/* NULL triplets, in dat_extension_op's numbering (ep 1, op 2, ...) */
	kernel.reset_counts();
	EXPECT_D2(ARG2(5), ext_op(ep, dat2::DAT_IB_CMP_AND_SWAP_OP, (DAT_UINT64)1,
				  (DAT_UINT64)2, (dat2::DAT_LMR_TRIPLET *)nullptr,
				  cookie2(0), &remote, dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(7), ext_op(ep, dat2::DAT_IB_CMP_AND_SWAP_OP, (DAT_UINT64)1,
				  (DAT_UINT64)2, &segs[1], cookie2(0),
				  (dat2::DAT_RMR_TRIPLET *)nullptr,
				  dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(4), ext_op(ep, dat2::DAT_IB_FETCH_AND_ADD_OP, (DAT_UINT64)1,
				  (dat2::DAT_LMR_TRIPLET *)nullptr, cookie2(0), &remote,
				  dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(6), ext_op(ep, dat2::DAT_IB_RDMA_WRITE_IMMED_OP, (DAT_COUNT)1,
				  segs, cookie2(0), (dat2::DAT_RMR_TRIPLET *)nullptr,
				  (DAT_UINT32)1, dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(4), ext_op(ep, dat2::DAT_IB_RDMA_WRITE_IMMED_OP, (DAT_COUNT)1,
				  (dat2::DAT_LMR_TRIPLET *)nullptr, cookie2(0), &remote,
				  (DAT_UINT32)1, dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(ARG2(3), ext_op(ep, dat2::DAT_IB_RDMA_WRITE_IMMED_OP,
				  (DAT_COUNT)(KDAT_MAX_IOV + 1), segs, cookie2(0),
				  &remote, (DAT_UINT32)1, dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(BAD2(dat2::DAT_INVALID_HANDLE_EP),
		  ext_op(srv.pz, dat2::DAT_IB_FETCH_AND_ADD_OP, (DAT_UINT64)1,
			 &segs[1], cookie2(0), &remote,
			 dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_EQ(0u, kernel.total_ioctls());
	/* the kernel's verdict, renumbered: its remote triplet is our ARG7 */
	kernel.status_next(KDAT_IOC_EP_POST,
			   DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6));
	EXPECT_D2(ARG2(7), ext_op(ep, dat2::DAT_IB_CMP_AND_SWAP_OP, (DAT_UINT64)1,
				  (DAT_UINT64)2, &segs[1], cookie2(0), &remote,
				  dat2::DAT_COMPLETION_DEFAULT_FLAG));
	kernel.status_next(KDAT_IOC_EP_POST, DAT_ERROR(DAT_LENGTH_ERROR, 0));
	EXPECT_D2(E2(dat2::DAT_LENGTH_ERROR),
		  ext_op(ep, dat2::DAT_IB_FETCH_AND_ADD_OP, (DAT_UINT64)1, &segs[0],
			 cookie2(0), &remote, dat2::DAT_COMPLETION_DEFAULT_FLAG));
	/* what kdat does not do: UD, counters, collectives */
	EXPECT_D2(E2(dat2::DAT_NOT_IMPLEMENTED),
		  ext_op(srv.ia, dat2::DAT_QUERY_COUNTERS_OP, 0, (DAT_UINT64 *)nullptr, 0));
	EXPECT_D2(E2(dat2::DAT_NOT_IMPLEMENTED),
		  ext_op(ep, dat2::DAT_IB_UD_SEND_OP, (DAT_COUNT)1, segs,
			 (void *)nullptr, cookie2(0), dat2::DAT_COMPLETION_DEFAULT_FLAG));
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* A ring entry's operation and immediate data reach the DAT 2.0 event. */
TEST_F(Dat2Ep, IbCompletionsDequeueAsDatIbDtoEvents)
{
	DAT_EP_HANDLE ep = make_ep();
	const auto ep_id = kid<kdat::Ep>(ep);
	auto evd = ref<kdat::Evd>(srv.dto);
	auto u = dto_event(ep_id, 4, 256);
	u.dto_op = KDAT_UDTO_RECV_RDMA_IMMED;
	u.dto_flags = KDAT_UDTO_F_IMMED;
	u.immed_data = 0x7777;
	ASSERT_TRUE(kernel.inject(evd, u));
	u = dto_event(ep_id, 3333, 8);
	u.dto_op = KDAT_UDTO_CMP_AND_SWAP;
	ASSERT_TRUE(kernel.inject(evd, u));
	u = dto_event(ep_id, 5, 16);
	u.dto_op = KDAT_UDTO_RECV;
	ASSERT_TRUE(kernel.inject(evd, u));

	dat2::DAT_EVENT e;
	ASSERT_D2(OK2, full().evd_dequeue_func(srv.dto, &e));
	EXPECT_EQ((int)dat2::DAT_IB_DTO_EVENT, (int)e.event_number);
	EXPECT_EQ(ep, e.event_data.dto_completion_event_data.ep_handle);
	EXPECT_EQ(4u, e.event_data.dto_completion_event_data.user_cookie.as_64);
	EXPECT_EQ(256u, e.event_data.dto_completion_event_data.transfered_length);
	EXPECT_EQ(dat2::DAT_IB_RDMA_WRITE_IMMED_DATA, ext_of(e).type);
	EXPECT_EQ(0x7777u, ext_of(e).val.immed.data);
	dat2::DAT_COUNT more = -1;
	ASSERT_D2(OK2, full().evd_wait_func(srv.dto, 0, 1, &e, &more));
	EXPECT_EQ((int)dat2::DAT_IB_DTO_EVENT, (int)e.event_number);
	EXPECT_EQ(dat2::DAT_IB_CMP_AND_SWAP, ext_of(e).type);
	EXPECT_EQ((int)dat2::DAT_IB_DTO_CMP_SWAP,
		  (int)e.event_data.dto_completion_event_data.operation);
	EXPECT_EQ(1, more);
	ASSERT_D2(OK2, full().evd_dequeue_func(srv.dto, &e));
	EXPECT_EQ(dat2::DAT_DTO_COMPLETION_EVENT, e.event_number);
	EXPECT_EQ(dat2::DAT_DTO_RECEIVE, e.event_data.dto_completion_event_data.operation);
	EXPECT_D2(OK2, T().ep_free_func(ep));
}

/* DAT_IB_MEM_PRIV_REMOTE_ATOMIC reaches the kernel as its remote atomics. */
TEST_F(Dat2Ep, RemoteAtomicPrivilegeReachesTheKernel)
{
	std::vector<char> b(4096);
	DAT_REGION_DESCRIPTION r;
	r.for_va = b.data();
	dat2::DAT_REGION_DESCRIPTION r2;
	std::memcpy(&r2, &r, sizeof(r2));
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	dat2::DAT_VLEN len;
	dat2::DAT_VADDR addr;
	ASSERT_D2(OK2, full().lmr_create_func(
			       srv.ia, dat2::DAT_MEM_TYPE_VIRTUAL, r2, b.size(), srv.pz,
			       (dat2::DAT_MEM_PRIV_FLAGS)((int)dat2::DAT_MEM_PRIV_ALL_FLAG |
							  (int)dat2::DAT_IB_MEM_PRIV_REMOTE_ATOMIC),
			       dat2::DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &len, &addr));
	auto c = kernel.last<kdat_ioc_lmr_create>(KDAT_IOC_LMR_CREATE);
	EXPECT_EQ((__u32)(DAT_MEM_PRIV_ALL_FLAG | KDAT_MEM_PRIV_REMOTE_ATOMIC), c.priv);
	EXPECT_D2(OK2, full().lmr_free_func(lmr));
}
