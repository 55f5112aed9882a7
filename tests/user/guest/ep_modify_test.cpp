// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// dat_ep_modify from user space against the real module on rxe: libdat
// marshals (KDAT_IOC_EP_MODIFY), the kernel's kdat_ib_ep_modify decides.
// The codes are compared whole (type and subtype): they are the kernel's.
#include "fixture.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

#include <uapi/kdat_abi.h>

using namespace kt;

namespace {

class EpModify : public Pair {
protected:
	static constexpr DAT_EP_PARAM_MASK kAll =
		DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS |
		DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV |
		DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE |
		DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE |
		DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
		DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT;

	static DAT_RETURN arg(int n)
	{
		return DAT_ERROR(DAT_INVALID_PARAMETER,
				 DAT_INVALID_ARG1 + (n - 1));
	}

	DAT_EP_PARAM query(DAT_EP_HANDLE ep)
	{
		DAT_EP_PARAM p{};
		EXPECT_EQ(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p), DAT_SUCCESS);
		return p;
	}
};

const DAT_RETURN kNotReady =
	DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
const DAT_RETURN kBadEp =
	DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);

TEST_F(EpModify, UnconnectedEpTakesNewAttributesAndItsQpUsesThem)
{
	make_srq(16, 2);
	DAT_EP_ATTR a = ep_attr();
	a.max_request_dtos = 4;
	a.max_request_iov = 1;
	DAT_EP_HANDLE se, ce;
	ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn, srq,
					 &a, &se));
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce));
	DAT_EP_PARAM before = query(ce);

	DAT_EP_PARAM p{};
	p.ep_attr = before.ep_attr;
	p.ep_attr.max_request_dtos = 8;
	p.ep_attr.max_request_iov = 2;
	p.ep_attr.max_message_size = 8192;
	p.ep_attr.max_rdma_size = 16384;
	p.ep_attr.max_rdma_read_in = 2;
	p.ep_attr.max_rdma_read_out = 1;
	p.ep_attr.max_recv_dtos = 3;	// not in the mask: ignored
	ASSERT_EQ(dat_ep_modify(ce, kAll, &p), DAT_SUCCESS);
	DAT_EP_PARAM q = query(ce);
	EXPECT_EQ(q.ep_state, DAT_EP_STATE_UNCONNECTED);
	EXPECT_EQ(q.ep_attr.max_request_dtos, 8);
	EXPECT_EQ(q.ep_attr.max_request_iov, 2);
	EXPECT_EQ(q.ep_attr.max_message_size, 8192u);
	EXPECT_EQ(q.ep_attr.max_rdma_size, 16384u);
	EXPECT_EQ(q.ep_attr.max_rdma_read_in, 2);
	EXPECT_EQ(q.ep_attr.max_rdma_read_out, 1);
	EXPECT_EQ(q.ep_attr.max_recv_dtos, before.ep_attr.max_recv_dtos);
	EXPECT_EQ(q.ep_attr.max_recv_iov, before.ep_attr.max_recv_iov);
	EXPECT_EQ(q.pz_handle, c.pz);
	EXPECT_EQ(q.recv_evd_handle, c.dto);

	// an SRQ EP: its attributes change, its SRQ stays
	p.ep_attr.max_request_iov = 2;
	ASSERT_EQ(dat_ep_modify(se, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, &p),
		  DAT_SUCCESS);
	q = query(se);
	EXPECT_EQ(q.ep_attr.max_request_iov, 2);
	EXPECT_EQ(q.srq_handle, srq);

	// the QP made at connect follows the new attributes: two segments
	// per send (one before the modify)
	connect(se, ce, 7);
	if (HasFatalFailure())
		return;
	ASSERT_OK(post_srq(0, 64, 1));
	std::memcpy(c.buf.get(), "ab", 2);
	std::memcpy(c.buf.get() + 512, "cd", 3);
	DAT_LMR_TRIPLET two[2] = {c.seg(0, 2), c.seg(512, 3)};
	ASSERT_EQ(dat_ep_post_send(ce, 2, two, cookie(9),
				   DAT_COMPLETION_DEFAULT_FLAG),
		  DAT_SUCCESS);
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(c.dto, &ev));
	EXPECT_EQ(ev.event_data.dto_completion_event_data.status,
		  DAT_DTO_SUCCESS);
	ASSERT_TRUE(wait_event(s.dto, &ev));
	EXPECT_EQ(ev.event_data.dto_completion_event_data.status,
		  DAT_DTO_SUCCESS);
	EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length,
		  5u);
	EXPECT_STREQ(s.buf.get(), "abcd");
}

TEST_F(EpModify, RefusesBadMaskValuesParamAndHandles)
{
	DAT_IA_ATTR ia;
	ASSERT_OK(dat_ia_query(c.ia, nullptr, DAT_IA_FIELD_ALL, &ia, 0,
			       nullptr));
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ep, freed;
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ep));
	DAT_EP_PARAM before = query(ep);
	DAT_EP_PARAM p{};
	p.ep_attr = before.ep_attr;

	// what the kernel can not change: DAT_INVALID_ARG2
	for (DAT_EP_PARAM_MASK m :
	     {DAT_EP_FIELD_SRQ_HANDLE, DAT_EP_FIELD_RECV_EVD_HANDLE,
	      DAT_EP_FIELD_REQUEST_EVD_HANDLE, DAT_EP_FIELD_CONNECT_EVD_HANDLE,
	      DAT_EP_FIELD_PZ_HANDLE, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS,
	      DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV,
	      DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS,
	      DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS | DAT_EP_FIELD_EP_ATTR_QOS,
	      DAT_EP_FIELD_ALL, DAT_EP_PARAM_MASK(1) << 40})
		EXPECT_EQ(dat_ep_modify(ep, m, &p), arg(2)) << std::hex << m;

	// values outside the device's or the provider's limits: ARG3
	auto bad = [&](DAT_EP_PARAM_MASK m, auto set) {
		DAT_EP_PARAM q = p;
		set(q.ep_attr);
		EXPECT_EQ(dat_ep_modify(ep, m, &q), arg(3)) << std::hex << m;
	};
	bad(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
	    [](DAT_EP_ATTR &x) { x.max_request_dtos = 0; });
	bad(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
	    [&](DAT_EP_ATTR &x) { x.max_request_dtos = ia.max_dto_per_ep + 1; });
	bad(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV,
	    [](DAT_EP_ATTR &x) { x.max_request_iov = 0; });
	bad(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV,
	    [](DAT_EP_ATTR &x) { x.max_request_iov = KDAT_MAX_IOV + 1; });
	bad(DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE,
	    [](DAT_EP_ATTR &x) { x.max_message_size = 0; });
	bad(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE,
	    [](DAT_EP_ATTR &x) { x.max_rdma_size = 1ull << 32; });
	bad(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, [&](DAT_EP_ATTR &x) {
		x.max_rdma_read_in = ia.max_rdma_read_per_ep_in + 1;
	});
	bad(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT,
	    [](DAT_EP_ATTR &x) { x.max_rdma_read_out = -1; });

	// NULL param: the kernel's first check, before the mask
	EXPECT_EQ(dat_ep_modify(ep, kAll, nullptr), arg(3));
	EXPECT_EQ(dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, nullptr), arg(3));

	// nothing of it stuck
	DAT_EP_PARAM after = query(ep);
	EXPECT_EQ(after.ep_attr.max_request_dtos, before.ep_attr.max_request_dtos);
	EXPECT_EQ(after.ep_attr.max_request_iov, before.ep_attr.max_request_iov);
	EXPECT_EQ(after.ep_attr.max_message_size, before.ep_attr.max_message_size);
	EXPECT_EQ(after.ep_attr.max_rdma_size, before.ep_attr.max_rdma_size);
	EXPECT_EQ(after.ep_attr.max_rdma_read_in, before.ep_attr.max_rdma_read_in);
	EXPECT_EQ(after.ep_attr.max_rdma_read_out,
		  before.ep_attr.max_rdma_read_out);

	// handles: NULL, wrong type, freed, of a closed IA
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &freed));
	ASSERT_OK(dat_ep_free(freed));
	const DAT_EP_PARAM_MASK m = DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS;
	EXPECT_EQ(dat_ep_modify(nullptr, m, &p), kBadEp);
	EXPECT_EQ(dat_ep_modify(c.pz, m, &p), kBadEp);
	EXPECT_EQ(dat_ep_modify(freed, m, &p), kBadEp);
	EXPECT_EQ(dat_ep_modify((DAT_EP_HANDLE)&p, m, &p), kBadEp);
	c.close();
	EXPECT_EQ(dat_ep_modify(ep, m, &p), kBadEp);
}

TEST_F(EpModify, RefusedUnlessUnconnectedAndIdle)
{
	open_pairs(1, 8);
	if (HasFatalFailure())
		return;
	DAT_EP_HANDLE ce = cep[0], se = sep[0];
	DAT_EP_PARAM before = query(ce);
	DAT_EP_PARAM p{};
	p.ep_attr = before.ep_attr;
	p.ep_attr.max_request_dtos = before.ep_attr.max_request_dtos / 2;
	const DAT_EP_PARAM_MASK m = DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS;

	// connected: refused, on both sides
	EXPECT_EQ(dat_ep_modify(ce, m, &p), kNotReady);
	EXPECT_EQ(dat_ep_modify(se, m, &p), kNotReady);
	// the mask and the values are checked before the state
	EXPECT_EQ(dat_ep_modify(ce, DAT_EP_FIELD_SRQ_HANDLE, &p), arg(2));
	{
		DAT_EP_PARAM q = p;
		q.ep_attr.max_request_dtos = 0;
		EXPECT_EQ(dat_ep_modify(ce, m, &q), arg(3));
	}
	// traffic still flows with the old attributes
	ASSERT_OK(post_srq(0, 64, 1));
	ASSERT_TRUE(send(0, 0, 16));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.dto, &ev));

	// disconnected: refused; after dat_ep_reset: accepted
	ASSERT_OK(dat_ep_disconnect(ce, DAT_CLOSE_GRACEFUL_FLAG));
	ASSERT_TRUE(wait_event(c.conn, &ev));
	EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	EXPECT_EQ(dat_ep_modify(ce, m, &p), kNotReady);
	EXPECT_EQ(query(ce).ep_attr.max_request_dtos,
		  before.ep_attr.max_request_dtos);
	ASSERT_OK(dat_ep_reset(ce));
	ASSERT_EQ(dat_ep_modify(ce, m, &p), DAT_SUCCESS);
	EXPECT_EQ(query(ce).ep_attr.max_request_dtos,
		  p.ep_attr.max_request_dtos);
}

// The raw ABI of KDAT_IOC_EP_MODIFY: reserved fields, argument sizes.
struct RawFile {
	int fd = ::open("/dev/kdat", O_RDWR | O_CLOEXEC);
	~RawFile()
	{
		if (fd >= 0)
			::close(fd);
	}
	// the DAT_RETURN, or -errno for an ABI error
	template <class T> long ioc(unsigned long cmd, T &a, uint32_t size)
	{
		a.hdr.size = size;
		a.hdr.status = 0;
		return ::ioctl(fd, cmd, &a) ? -errno : (long)a.hdr.status;
	}
	template <class T> long ioc(unsigned long cmd, T &a)
	{
		return ioc(cmd, a, sizeof(a));
	}
};

TEST(EpModifyAbi, ReservedFieldsAndShortAndLongArguments)
{
	RawFile r;
	ASSERT_GE(r.fd, 0);
	kdat_ioc_ia_open o{};
	std::strncpy(o.name, srv_ia(), sizeof(o.name) - 1);
	o.async_qlen = 8;
	ASSERT_EQ(r.ioc(KDAT_IOC_IA_OPEN, o), (long)DAT_SUCCESS);
	kdat_ioc_pz_create pz{};
	pz.ia = o.ia;
	ASSERT_EQ(r.ioc(KDAT_IOC_PZ_CREATE, pz), (long)DAT_SUCCESS);
	kdat_ioc_ep_create ec{};
	ec.ia = o.ia;
	ec.pz = pz.pz;		// provider default attributes
	ASSERT_EQ(r.ioc(KDAT_IOC_EP_CREATE, ec), (long)DAT_SUCCESS);
	kdat_ioc_ep_query q{};
	q.ep = ec.ep;
	ASSERT_EQ(r.ioc(KDAT_IOC_EP_QUERY, q), (long)DAT_SUCCESS);
	const kdat_uep_attr dflt = q.attr;

	kdat_ioc_ep_modify m{};
	m.ep = ec.ep;
	m.mask = DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS;
	m.attr = dflt;
	m.attr.max_request_dtos = dflt.max_request_dtos + 5;
	// reserved fields must be zero
	m.pad = 1;
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, m), -EINVAL);
	m.pad = 0;
	m.attr.pad = 1;
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, m), -EINVAL);
	m.attr.pad = 0;
	// IDs: 0, unknown, of another type
	m.ep = 0;
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, m), (long)kBadEp);
	m.ep = 0x7ffffff0;
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, m), (long)kBadEp);
	m.ep = pz.pz;
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, m), (long)kBadEp);
	m.ep = ec.ep;

	// an older caller without the attributes: they read as zero
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, m,
			offsetof(kdat_ioc_ep_modify, attr)),
		  (long)DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
	m.mask = 0;
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, m,
			offsetof(kdat_ioc_ep_modify, attr)),
		  (long)DAT_SUCCESS);

	// a newer caller: unknown trailing bytes must be zero
	struct {
		kdat_ioc_ep_modify m;
		uint64_t extra;
	} big{};
	big.m = m;
	big.m.mask = DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS;
	big.extra = 1;
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, big.m, sizeof(big)), -E2BIG);
	big.extra = 0;
	EXPECT_EQ(r.ioc(KDAT_IOC_EP_MODIFY, big.m, sizeof(big)),
		  (long)DAT_SUCCESS);
	ASSERT_EQ(r.ioc(KDAT_IOC_EP_QUERY, q), (long)DAT_SUCCESS);
	EXPECT_EQ(q.attr.max_request_dtos, dflt.max_request_dtos + 5);
	EXPECT_EQ(q.attr.max_request_iov, dflt.max_request_iov);
}

} // namespace
