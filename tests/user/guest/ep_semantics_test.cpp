// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// EP attribute semantics through libdat against the real module:
// DAT_HW_DEFAULT attributes resolved and reported, error subtypes that
// name the right argument, RDMA segment and srq_soft_hw checks against the
// IA, and the SRQ/EP PZ rule as the provider reports it.  Return codes are
// compared whole (type and subtype) where the issue fixes the subtype.
#include "fixture.hpp"

using namespace kt;

namespace {

constexpr DAT_RETURN bad_arg(DAT_RETURN_SUBTYPE n)
{
	return (DAT_RETURN)(DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | n);
}

#define ASSERT_EXACT(expr, want)                                             \
	do {                                                                 \
		DAT_RETURN r_ = (expr);                                      \
		ASSERT_EQ(r_, (DAT_RETURN)(want))                            \
			<< #expr << " returned 0x" << std::hex << r_;        \
	} while (0)

class EpSemantics : public Pair {
protected:
	DAT_IA_ATTR ia_attr()
	{
		DAT_IA_ATTR a{};
		EXPECT_EQ(dat_ia_query(s.ia, nullptr, DAT_IA_FIELD_ALL, &a, 0,
				       nullptr), (DAT_RETURN)DAT_SUCCESS);
		return a;
	}

	DAT_EP_ATTR query_attr(DAT_EP_HANDLE ep)
	{
		DAT_EP_PARAM p{};
		EXPECT_EQ(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p),
			  (DAT_RETURN)DAT_SUCCESS);
		return p.ep_attr;
	}
};

// "can specify values only for the parameters needed and default for the
// rest": every DAT_HW_DEFAULT becomes a real value dat_ep_query reports.
TEST_F(EpSemantics, HwDefaultAttributesAreResolvedAndReported)
{
	make_srq(10, 1);
	DAT_IA_ATTR ia = ia_attr();
	DAT_EP_ATTR a = ep_attr();
	a.max_recv_dtos = DAT_HW_DEFAULT;
	a.max_request_dtos = DAT_HW_DEFAULT;
	a.max_request_iov = DAT_HW_DEFAULT;
	a.max_message_size = (DAT_VLEN)DAT_HW_DEFAULT;
	a.max_rdma_size = (DAT_VLEN)DAT_HW_DEFAULT;
	a.max_rdma_read_in = DAT_HW_DEFAULT;
	a.max_rdma_read_out = DAT_HW_DEFAULT;
	a.srq_soft_hw = DAT_HW_DEFAULT;
	a.max_rdma_read_iov = DAT_HW_DEFAULT;
	a.max_rdma_write_iov = DAT_HW_DEFAULT;
	DAT_EP_HANDLE ep;
	ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn, srq,
					 &a, &ep));
	DAT_EP_ATTR q = query_attr(ep);
	EXPECT_EQ(q.max_recv_dtos, query().max_recv_dtos);
	EXPECT_GT(q.max_request_dtos, 0);
	EXPECT_LE(q.max_request_dtos, ia.max_dto_per_ep);
	EXPECT_GT(q.max_request_iov, 0);
	EXPECT_LE(q.max_request_iov, ia.max_iov_segments_per_dto);
	EXPECT_GT(q.max_message_size, 0u);
	EXPECT_LE(q.max_message_size, ia.max_message_size);
	EXPECT_LE(q.max_rdma_size, ia.max_rdma_size);
	EXPECT_EQ(q.max_rdma_read_in, 0);
	EXPECT_EQ(q.max_rdma_read_out, 0);
	EXPECT_GT(q.max_rdma_read_iov, 0);
	EXPECT_GT(q.max_rdma_write_iov, 0);
	EXPECT_EQ(q.srq_soft_hw, DAT_HW_DEFAULT);

	// without an SRQ too, receive attributes included
	a.max_recv_iov = DAT_HW_DEFAULT;
	DAT_EP_HANDLE ep2;
	ASSERT_OK(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &a, &ep2));
	q = query_attr(ep2);
	EXPECT_GT(q.max_recv_dtos, 0);
	EXPECT_NE(q.max_recv_dtos, DAT_HW_DEFAULT);
	EXPECT_GT(q.max_recv_iov, 0);
	EXPECT_NE(q.max_recv_iov, DAT_HW_DEFAULT);

	// and the EP works: a defaulted SRQ EP connects and receives
	DAT_EP_HANDLE ce;
	DAT_EP_ATTR ca = ep_attr();
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &ca, &ce));
	connect(ep, ce, 1);
	if (HasFatalFailure())
		return;
	cep.push_back(ce);
	ASSERT_OK(post_srq(0, 64, 7));
	ASSERT_TRUE(send(0, 0, 16, 1));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.dto, &ev));
	EXPECT_EQ(ev.event_data.dto_completion_event_data.ep_handle, ep);
	EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length,
		  16u);
}

// ep_attributes is ARG7 and ep_handle ARG8 of dat_ep_create_with_srq (ARG6
// and ARG7 of dat_ep_create); private_data is ARG6 of dat_ep_connect and
// ARG4 of dat_cr_accept.
TEST_F(EpSemantics, ErrorSubtypesNameTheArgument)
{
	make_srq(10, 1);
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ep;
	a.max_request_dtos = 0;
	ASSERT_EXACT(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn,
					    srq, &a, &ep),
		     bad_arg(DAT_INVALID_ARG7));
	ASSERT_EXACT(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &a, &ep),
		     bad_arg(DAT_INVALID_ARG6));
	a = ep_attr();
	a.service_type = (DAT_SERVICE_TYPE)7;
	ASSERT_EXACT(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn,
					    srq, &a, &ep),
		     bad_arg(DAT_INVALID_ARG7));
	ASSERT_EXACT(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &a, &ep),
		     bad_arg(DAT_INVALID_ARG6));
	a = ep_attr();
	ASSERT_EXACT(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn,
					    srq, nullptr, &ep),
		     bad_arg(DAT_INVALID_ARG7));
	ASSERT_EXACT(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn,
					    srq, &a, nullptr),
		     bad_arg(DAT_INVALID_ARG8));
	// a completion-flag rule the attributes break
	DAT_EVD_HANDLE mixed;
	ASSERT_OK(dat_evd_create(s.ia, 16, DAT_HANDLE_NULL,
				 (DAT_EVD_FLAGS)(DAT_EVD_DTO_FLAG |
						 DAT_EVD_CONNECTION_FLAG),
				 &mixed));
	a.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
	ASSERT_EXACT(dat_ep_create_with_srq(s.ia, s.pz, mixed, s.dto, s.conn,
					    srq, &a, &ep),
		     bad_arg(DAT_INVALID_ARG7));

	// private data without its bytes
	a = ep_attr();
	DAT_EP_HANDLE se, ce;
	ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn, srq,
					 &a, &se));
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce));
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = inet_addr(srv_addr());
	ASSERT_OK(dat_psp_create(s.ia, ++qual, s.cr, DAT_PSP_CONSUMER_FLAG,
				 &psp));
	ASSERT_EXACT(dat_ep_connect(ce, (DAT_IA_ADDRESS_PTR)&sin, qual,
				    DAT_TIMEOUT_INFINITE, 4, nullptr,
				    DAT_QOS_BEST_EFFORT,
				    DAT_CONNECT_DEFAULT_FLAG),
		     bad_arg(DAT_INVALID_ARG6));
	ASSERT_OK(dat_ep_connect(ce, (DAT_IA_ADDRESS_PTR)&sin, qual,
				 DAT_TIMEOUT_INFINITE, 0, nullptr,
				 DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.cr, &ev));
	ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
	ASSERT_EXACT(dat_cr_accept(cr, se, 4, nullptr),
		     bad_arg(DAT_INVALID_ARG4));
	ASSERT_OK(dat_cr_reject(cr));
}

// The page's example: an RDMA Read IOV beyond the IA's capabilities is
// DAT_INVALID_PARAMETER with ep_attributes' subtype; a soft high
// watermark is a model this provider does not offer.
TEST_F(EpSemantics, RdmaIovAndSoftWatermarkAreCheckedAgainstTheIa)
{
	make_srq(10, 1);
	DAT_IA_ATTR ia = ia_attr();
	ASSERT_GT(ia.max_iov_segments_per_rdma_read, 0);
	ASSERT_GT(ia.max_iov_segments_per_rdma_write, 0);
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ep;
	a.max_rdma_read_iov = ia.max_iov_segments_per_rdma_read + 1;
	ASSERT_EXACT(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn,
					    srq, &a, &ep),
		     bad_arg(DAT_INVALID_ARG7));
	ASSERT_EXACT(dat_ep_create(s.ia, s.pz, s.dto, s.dto, s.conn, &a, &ep),
		     bad_arg(DAT_INVALID_ARG6));
	a = ep_attr();
	a.max_rdma_write_iov = ia.max_iov_segments_per_rdma_write + 1;
	ASSERT_EXACT(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn,
					    srq, &a, &ep),
		     bad_arg(DAT_INVALID_ARG7));
	a = ep_attr();
	a.srq_soft_hw = 3;
	ASSERT_EXACT(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn,
					    srq, &a, &ep),
		     (DAT_RETURN)(DAT_CLASS_ERROR | DAT_MODEL_NOT_SUPPORTED));
	a = ep_attr();
	a.max_rdma_read_iov = 1;
	a.max_rdma_write_iov = 1;
	ASSERT_OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto, s.dto, s.conn, srq,
					 &a, &ep));
	DAT_EP_ATTR q = query_attr(ep);
	EXPECT_EQ(q.max_rdma_read_iov, 1);
	EXPECT_EQ(q.max_rdma_write_iov, 1);
}

// srq_ep_pz_difference_supported is the kernel's answer for this device,
// and create follows it: a differing PZ is refused (pz_handle's subtype)
// where it is FALSE, and receives still use the SRQ's PZ where it is TRUE.
TEST_F(EpSemantics, SrqEpPzDifferenceFollowsTheProviderAttribute)
{
	make_srq(10, 1);
	DAT_PROVIDER_ATTR pa{};
	ASSERT_OK(dat_ia_query(s.ia, nullptr, 0, nullptr,
			       DAT_PROVIDER_FIELD_ALL, &pa));
	DAT_PZ_HANDLE pz2;
	ASSERT_OK(dat_pz_create(s.ia, &pz2));
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ep;
	if (pa.srq_ep_pz_difference_supported != DAT_TRUE) {
		ASSERT_EXACT(dat_ep_create_with_srq(s.ia, pz2, s.dto, s.dto,
						    s.conn, srq, &a, &ep),
			     bad_arg(DAT_INVALID_ARG2));
		return;
	}
	ASSERT_OK(dat_ep_create_with_srq(s.ia, pz2, s.dto, s.dto, s.conn, srq,
					 &a, &ep));
	DAT_EP_HANDLE ce;
	ASSERT_OK(dat_ep_create(c.ia, c.pz, c.dto, c.dto, c.conn, &a, &ce));
	connect(ep, ce, 2);
	if (HasFatalFailure())
		return;
	cep.push_back(ce);
	ASSERT_OK(post_srq(0, 64, 1));
	ASSERT_TRUE(send(0, 0, 16, 1));
	DAT_EVENT ev;
	ASSERT_TRUE(wait_event(s.dto, &ev));
	EXPECT_EQ(ev.event_data.dto_completion_event_data.status,
		  DAT_DTO_SUCCESS);
}

// completion_flags_supported claims only what the provider honours: a
// SOLICITED_WAIT receive stream is accepted, but its waiter still wakes
// for every completion, so the flag is not claimed.
TEST_F(EpSemantics, CompletionFlagsSupportedDoNotClaimSolicitedWait)
{
	DAT_PROVIDER_ATTR pa{};
	ASSERT_OK(dat_ia_query(s.ia, nullptr, 0, nullptr,
			       DAT_PROVIDER_FIELD_ALL, &pa));
	EXPECT_EQ(pa.completion_flags_supported &
			  DAT_COMPLETION_SOLICITED_WAIT_FLAG, 0);
	EXPECT_NE(pa.completion_flags_supported &
			  DAT_COMPLETION_UNSIGNALLED_FLAG, 0);
}

} // namespace
