// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libdaplkdat (user/dat2/): the DAT 2.0 face of libdat, on the fake
// /dev/kdat.  Status codes, layouts, the IA/EVD/LMR/PZ families.
#include "dat2/convert.hpp"

#include <gtest/gtest.h>

using kdat::dat2p::ret2;

/* Same name, DAT 2.0 value: types, subtypes and class bits. */
TEST(Dat2Status, TypesAndSubtypesAreTranslatedByName)
{
	EXPECT_EQ(ret2(DAT_SUCCESS), dat2::DAT_SUCCESS);
	EXPECT_EQ(ret2(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7)),
		  dat2::v_DAT_CLASS_ERROR | dat2::DAT_INVALID_PARAMETER |
			  dat2::DAT_INVALID_ARG7);
	EXPECT_EQ(ret2(DAT_ERROR(DAT_NOT_IMPLEMENTED, 0)),
		  dat2::v_DAT_CLASS_ERROR | dat2::DAT_NOT_IMPLEMENTED);
	EXPECT_EQ(ret2(DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE)),
		  dat2::v_DAT_CLASS_ERROR | dat2::DAT_INVALID_STATE |
			  dat2::DAT_INVALID_STATE_SRQ_IN_USE);
	EXPECT_EQ(ret2(DAT_ERROR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ)),
		  dat2::v_DAT_CLASS_ERROR | dat2::DAT_INSUFFICIENT_RESOURCES |
			  dat2::DAT_RESOURCE_SRQ);
	EXPECT_EQ(ret2(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP)),
		  dat2::v_DAT_CLASS_ERROR | dat2::DAT_INVALID_HANDLE |
			  dat2::DAT_INVALID_HANDLE_EP);
}

/* ------------------------------------------------------------------ */
/* Conversions, field by field                                          */

#include "test_util.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace d2 = ::dat2;
using namespace kdat::dat2p;

TEST(Dat2Convert, HandleTypesByName)
{
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_CR, handle_type2(DAT_HANDLE_TYPE_CR));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_EP, handle_type2(DAT_HANDLE_TYPE_EP));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_EVD, handle_type2(DAT_HANDLE_TYPE_EVD));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_IA, handle_type2(DAT_HANDLE_TYPE_IA));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_LMR, handle_type2(DAT_HANDLE_TYPE_LMR));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_PSP, handle_type2(DAT_HANDLE_TYPE_PSP));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_PZ, handle_type2(DAT_HANDLE_TYPE_PZ));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_RMR, handle_type2(DAT_HANDLE_TYPE_RMR));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_RSP, handle_type2(DAT_HANDLE_TYPE_RSP));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_CNO, handle_type2(DAT_HANDLE_TYPE_CNO));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_SRQ, handle_type2(DAT_HANDLE_TYPE_SRQ));
}

TEST(Dat2Convert, DtoCompletionEveryField)
{
	static_assert(sizeof(d2::DAT_EVENT) == 120 && sizeof(DAT_EVENT) == 48);
	const std::pair<DAT_DTO_COMPLETION_STATUS, d2::DAT_DTO_COMPLETION_STATUS>
		st[] = {
			{ DAT_DTO_SUCCESS, d2::DAT_DTO_SUCCESS },
			{ DAT_DTO_ERR_FLUSHED, d2::DAT_DTO_ERR_FLUSHED },
			{ DAT_DTO_ERR_LOCAL_LENGTH, d2::DAT_DTO_ERR_LOCAL_LENGTH },
			{ DAT_DTO_ERR_LOCAL_EP, d2::DAT_DTO_ERR_LOCAL_EP },
			{ DAT_DTO_ERR_LOCAL_PROTECTION, d2::DAT_DTO_ERR_LOCAL_PROTECTION },
			{ DAT_DTO_ERR_BAD_RESPONSE, d2::DAT_DTO_ERR_BAD_RESPONSE },
			{ DAT_DTO_ERR_REMOTE_ACCESS, d2::DAT_DTO_ERR_REMOTE_ACCESS },
			{ DAT_DTO_ERR_REMOTE_RESPONDER, d2::DAT_DTO_ERR_REMOTE_RESPONDER },
			{ DAT_DTO_ERR_TRANSPORT, d2::DAT_DTO_ERR_TRANSPORT },
			{ DAT_DTO_ERR_RECEIVER_NOT_READY, d2::DAT_DTO_ERR_RECEIVER_NOT_READY },
			{ DAT_DTO_ERR_PARTIAL_PACKET, d2::DAT_DTO_ERR_PARTIAL_PACKET },
			{ DAT_RMR_OPERATION_FAILED, d2::DAT_RMR_OPERATION_FAILED },
		};
	for (auto [s1, s2] : st) {
		DAT_EVENT in = {};
		in.event_number = DAT_DTO_COMPLETION_EVENT;
		in.evd_handle = (DAT_EVD_HANDLE)0x1234;
		in.event_data.dto_completion_event_data.ep_handle = (DAT_EP_HANDLE)0x5678;
		in.event_data.dto_completion_event_data.user_cookie.as_64 = 0xabcdef0123ull;
		in.event_data.dto_completion_event_data.status = s1;
		in.event_data.dto_completion_event_data.transfered_length = 4096;
		d2::DAT_EVENT out;
		std::memset(&out, 0xff, sizeof(out));
		event2(in, out);
		EXPECT_EQ(d2::DAT_DTO_COMPLETION_EVENT, out.event_number);
		EXPECT_EQ(in.evd_handle, out.evd_handle);
		const auto &d = out.event_data.dto_completion_event_data;
		EXPECT_EQ((void *)0x5678, d.ep_handle);
		EXPECT_EQ(0xabcdef0123ull, d.user_cookie.as_64);
		EXPECT_EQ(s2, d.status);
		EXPECT_EQ(4096u, d.transfered_length);
		EXPECT_EQ(d2::DAT_DTO_SEND, d.operation);	/* not known: documented */
		EXPECT_EQ(0u, d.rmr_context);
		for (auto x : out.event_extension_data)
			EXPECT_EQ(0u, x);
	}
}

TEST(Dat2Convert, ConnectionRequestAsyncAndSoftwareEvents)
{
	struct sockaddr_in sa = ipv4("10.0.0.1");
	DAT_EVENT in = {};
	d2::DAT_EVENT out;

	in.event_number = DAT_CONNECTION_REQUEST_EVENT;
	in.evd_handle = (DAT_EVD_HANDLE)0x10;
	in.event_data.cr_arrival_event_data.sp_handle.psp_handle = (DAT_PSP_HANDLE)0x20;
	in.event_data.cr_arrival_event_data.local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&sa;
	in.event_data.cr_arrival_event_data.conn_qual = 0x1122334455ull;
	in.event_data.cr_arrival_event_data.cr_handle = (DAT_CR_HANDLE)0x30;
	event2(in, out);
	EXPECT_EQ(d2::DAT_CONNECTION_REQUEST_EVENT, out.event_number);
	EXPECT_EQ((void *)0x10, out.evd_handle);
	EXPECT_EQ((void *)0x20, out.event_data.cr_arrival_event_data.sp_handle.psp_handle);
	EXPECT_EQ((void *)&sa, (void *)out.event_data.cr_arrival_event_data.local_ia_address_ptr);
	EXPECT_EQ(0x1122334455ull, out.event_data.cr_arrival_event_data.conn_qual);
	EXPECT_EQ((void *)0x30, out.event_data.cr_arrival_event_data.cr_handle);
	EXPECT_EQ(d2::DAT_FALSE, out.event_data.cr_arrival_event_data.truncate_flag);

	const std::pair<DAT_EVENT_NUMBER, d2::DAT_EVENT_NUMBER> conn[] = {
		{ DAT_CONNECTION_EVENT_ESTABLISHED, d2::DAT_CONNECTION_EVENT_ESTABLISHED },
		{ DAT_CONNECTION_EVENT_PEER_REJECTED, d2::DAT_CONNECTION_EVENT_PEER_REJECTED },
		{ DAT_CONNECTION_EVENT_NON_PEER_REJECTED, d2::DAT_CONNECTION_EVENT_NON_PEER_REJECTED },
		{ DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, d2::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR },
		{ DAT_CONNECTION_EVENT_DISCONNECTED, d2::DAT_CONNECTION_EVENT_DISCONNECTED },
		{ DAT_CONNECTION_EVENT_BROKEN, d2::DAT_CONNECTION_EVENT_BROKEN },
		{ DAT_CONNECTION_EVENT_TIMED_OUT, d2::DAT_CONNECTION_EVENT_TIMED_OUT },
		{ DAT_CONNECTION_EVENT_UNREACHABLE, d2::DAT_CONNECTION_EVENT_UNREACHABLE },
	};
	char pdata[4] = { 1, 2, 3, 4 };
	for (auto [n1, n2] : conn) {
		in = {};
		in.event_number = n1;
		in.event_data.connect_event_data.ep_handle = (DAT_EP_HANDLE)0x40;
		in.event_data.connect_event_data.private_data_size = 4;
		in.event_data.connect_event_data.private_data = pdata;
		event2(in, out);
		EXPECT_EQ(n2, out.event_number);
		EXPECT_EQ((void *)0x40, out.event_data.connect_event_data.ep_handle);
		EXPECT_EQ(4, out.event_data.connect_event_data.private_data_size);
		EXPECT_EQ((void *)pdata, out.event_data.connect_event_data.private_data);
	}

	const std::pair<DAT_EVENT_NUMBER, d2::DAT_EVENT_NUMBER> async[] = {
		{ DAT_ASYNC_ERROR_EVD_OVERFLOW, d2::DAT_ASYNC_ERROR_EVD_OVERFLOW },
		{ DAT_ASYNC_ERROR_IA_CATASTROPHIC, d2::DAT_ASYNC_ERROR_IA_CATASTROPHIC },
		{ DAT_ASYNC_ERROR_EP_BROKEN, d2::DAT_ASYNC_ERROR_EP_BROKEN },
		{ DAT_ASYNC_ERROR_TIMED_OUT, d2::DAT_ASYNC_ERROR_TIMED_OUT },
		{ DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, d2::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR },
	};
	for (auto [n1, n2] : async) {
		in = {};
		in.event_number = n1;
		in.event_data.asynch_error_event_data.dat_handle = (DAT_HANDLE)0x50;
		in.event_data.asynch_error_event_data.reason = DAT_SRQ_LOW_WATERMARK_EVENT;
		event2(in, out);
		EXPECT_EQ(n2, out.event_number);
		EXPECT_EQ((void *)0x50, out.event_data.asynch_error_event_data.dat_handle);
		EXPECT_EQ((DAT_COUNT)d2::DAT_SRQ_LOW_WATERMARK_EVENT,
			  out.event_data.asynch_error_event_data.reason);
	}

	in = {};
	in.event_number = DAT_SOFTWARE_EVENT;
	in.event_data.software_event_data.pointer = pdata;
	event2(in, out);
	EXPECT_EQ(d2::DAT_SOFTWARE_EVENT, out.event_number);
	EXPECT_EQ((void *)pdata, out.event_data.software_event_data.pointer);

	/* and back, as dat_evd_post_se takes it */
	DAT_EVENT back;
	event1(out, back);
	EXPECT_EQ(DAT_SOFTWARE_EVENT, back.event_number);
	EXPECT_EQ((void *)pdata, back.event_data.software_event_data.pointer);
}

TEST(Dat2Convert, FlagsAndMasksByName)
{
	DAT_EVD_FLAGS f;
	ASSERT_TRUE(evd_flags1(d2::DAT_EVD_DEFAULT_FLAG | d2::DAT_EVD_SOFTWARE_FLAG, f));
	EXPECT_EQ((std::uint64_t)(DAT_EVD_DEFAULT_FLAG | DAT_EVD_SOFTWARE_FLAG), (std::uint64_t)f);
	EXPECT_FALSE(evd_flags1(d2::DAT_EVD_EXTENSION_BASE, f));
	EXPECT_EQ((std::uint64_t)d2::DAT_EVD_DTO_FLAG, evd_flags2(DAT_EVD_DTO_FLAG));

	DAT_MEM_PRIV_FLAGS p;
	ASSERT_TRUE(mem_priv1(d2::DAT_MEM_PRIV_ALL_FLAG, p));
	EXPECT_EQ((std::uint64_t)DAT_MEM_PRIV_ALL_FLAG, (std::uint64_t)p);
	/* the IB extension's remote atomics: kdat's extension of DAT 1.2 */
	ASSERT_TRUE(mem_priv1((std::uint64_t)d2::DAT_MEM_PRIV_ALL_FLAG |
			      (std::uint64_t)d2::DAT_IB_MEM_PRIV_REMOTE_ATOMIC, p));
	EXPECT_EQ((std::uint64_t)(DAT_MEM_PRIV_ALL_FLAG |
				  KDAT_MEM_PRIV_REMOTE_ATOMIC), (std::uint64_t)p);
	EXPECT_EQ((std::uint64_t)d2::DAT_IB_MEM_PRIV_REMOTE_ATOMIC,
		  mem_priv2(KDAT_MEM_PRIV_REMOTE_ATOMIC));
	EXPECT_FALSE(mem_priv1(d2::DAT_MEM_PRIV_EXTENSION_BASE << 1, p));

	std::uint64_t m;
	ASSERT_TRUE(lmr_mask1(d2::DAT_LMR_FIELD_ALL, m));
	EXPECT_EQ((std::uint64_t)DAT_LMR_FIELD_ALL, m);
	ASSERT_TRUE(lmr_mask1(d2::DAT_LMR_FIELD_LMR_CONTEXT, m));
	EXPECT_EQ((std::uint64_t)DAT_LMR_FIELD_LMR_CONTEXT, m);	/* 0x80 -> 0x40 */
	ASSERT_TRUE(lmr_mask1(d2::DAT_LMR_FIELD_VA_TYPE, m));
	EXPECT_EQ(0u, m);
	EXPECT_FALSE(lmr_mask1(0x800, m));

	EXPECT_EQ((std::uint64_t)(d2::DAT_COMPLETION_SUPPRESS_FLAG |
				  d2::DAT_COMPLETION_EVD_THRESHOLD_FLAG),
		  completion_flags2(DAT_COMPLETION_SUPPRESS_FLAG |
				    DAT_COMPLETION_EVD_THRESHOLD_FLAG));
}

TEST(Dat2Convert, LmrAndEvdParams)
{
	DAT_LMR_PARAM in = {};
	char buf[8];
	in.ia_handle = (DAT_IA_HANDLE)0x1;
	in.mem_type = DAT_MEM_TYPE_VIRTUAL;
	in.region_desc.for_va = buf;
	in.length = 8;
	in.pz_handle = (DAT_PZ_HANDLE)0x2;
	in.mem_priv = DAT_MEM_PRIV_REMOTE_WRITE_FLAG;
	in.lmr_context = 7;
	in.rmr_context = 9;
	in.registered_size = 4096;
	in.registered_address = 0x1000;
	d2::DAT_LMR_PARAM out;
	lmr_param2(in, out);
	EXPECT_EQ((void *)0x1, out.ia_handle);
	EXPECT_EQ(d2::DAT_MEM_TYPE_VIRTUAL, out.mem_type);
	EXPECT_EQ((void *)buf, out.region_desc.for_va);
	EXPECT_EQ(8u, out.length);
	EXPECT_EQ((void *)0x2, out.pz_handle);
	EXPECT_EQ(d2::DAT_MEM_PRIV_REMOTE_WRITE_FLAG, out.mem_priv);
	EXPECT_EQ(d2::DAT_VA_TYPE_VA, out.va_type);
	EXPECT_EQ(7u, out.lmr_context);
	EXPECT_EQ(9u, out.rmr_context);
	EXPECT_EQ(4096u, out.registered_size);
	EXPECT_EQ(0x1000u, out.registered_address);

	DAT_EVD_PARAM e = {};
	e.ia_handle = (DAT_IA_HANDLE)0x3;
	e.evd_qlen = 33;
	e.evd_state = (DAT_EVD_STATE)(DAT_EVD_STATE_ENABLED | DAT_EVD_STATE_WAITABLE);
	e.cno_handle = nullptr;
	e.evd_flags = (DAT_EVD_FLAGS)(DAT_EVD_CR_FLAG | DAT_EVD_SOFTWARE_FLAG);
	d2::DAT_EVD_PARAM eo;
	evd_param2(e, eo);
	EXPECT_EQ((void *)0x3, eo.ia_handle);
	EXPECT_EQ(33, eo.evd_qlen);
	EXPECT_EQ(d2::DAT_EVD_STATE_ENABLED | d2::DAT_EVD_STATE_WAITABLE, eo.evd_state);
	EXPECT_EQ(nullptr, eo.cno_handle);
	EXPECT_EQ(d2::DAT_EVD_CR_FLAG | d2::DAT_EVD_SOFTWARE_FLAG, eo.evd_flags);
}

TEST(Dat2Convert, IaParamsNameTheKernelIa)
{
	EXPECT_EQ("rxe0", kernel_ia_from_params("rxe0"));
	EXPECT_EQ("rxe0", kernel_ia_from_params("rxe0 1"));
	EXPECT_EQ("rxe0", kernel_ia_from_params("  \"rxe0\"  "));
	EXPECT_EQ("", kernel_ia_from_params(""));
	EXPECT_EQ("", kernel_ia_from_params(nullptr));
}

/* ------------------------------------------------------------------ */
/* The table on the fake /dev/kdat                                      */

namespace {

class Dat2Table : public FakeKernelTest {
protected:
	void SetUp() override
	{
		FakeKernelTest::SetUp();
		fill_provider_table();
		t = &provider_table;
	}

	/* Open @name through the table (ia_open_func as libdat2 calls it). */
	void open(const char *name)
	{
		async = nullptr;
		ASSERT_EQ(d2::DAT_SUCCESS,
			  t->ia_open_func((d2::DAT_NAME_PTR)name, 16, &async, &ia));
	}

	void close()
	{
		EXPECT_EQ(d2::DAT_SUCCESS,
			  t->ia_close_func(ia, d2::DAT_CLOSE_ABRUPT_FLAG));
	}

	static const void *face(void *h) { return *(const void **)h; }

	d2::DAT_PROVIDER *t = nullptr;
	d2::DAT_IA_HANDLE ia = nullptr;
	d2::DAT_EVD_HANDLE async = nullptr;
};

constexpr d2::DAT_RETURN err2(d2::DAT_RETURN type, d2::DAT_RETURN sub = 0)
{
	return d2::v_DAT_CLASS_ERROR | type | sub;
}

} // namespace

TEST_F(Dat2Table, EveryEntryOfTheCoreFamiliesIsFilled)
{
	/* no NULL entry libdat2 could call (the EP family: test_dat2_ep.cpp) */
	const void *entries[] = {
		(void *)t->ia_open_func, (void *)t->ia_query_func,
		(void *)t->ia_close_func, (void *)t->set_consumer_context_func,
		(void *)t->get_consumer_context_func,
		(void *)t->get_handle_type_func, (void *)t->cno_create_func,
		(void *)t->cno_modify_agent_func, (void *)t->cno_query_func,
		(void *)t->cno_free_func, (void *)t->cno_wait_func,
		(void *)t->evd_create_func, (void *)t->evd_query_func,
		(void *)t->evd_modify_cno_func, (void *)t->evd_enable_func,
		(void *)t->evd_disable_func, (void *)t->evd_wait_func,
		(void *)t->evd_resize_func, (void *)t->evd_post_se_func,
		(void *)t->evd_dequeue_func, (void *)t->evd_free_func,
		(void *)t->lmr_create_func, (void *)t->lmr_query_func,
		(void *)t->lmr_free_func, (void *)t->pz_create_func,
		(void *)t->pz_query_func, (void *)t->pz_free_func,
		(void *)t->evd_set_unwaitable_func,
		(void *)t->evd_clear_unwaitable_func,
		(void *)t->lmr_sync_rdma_read_func,
		(void *)t->lmr_sync_rdma_write_func,
		(void *)t->cno_fd_create_func, (void *)t->cno_trigger_func,
		(void *)t->ia_ha_related_func,
		(void *)t->handle_extendedop_func,
	};
	for (const void *e : entries)
		EXPECT_NE(nullptr, e);
}

TEST_F(Dat2Table, ObjectsStartWithTheTableAndQueriesSpeakDat2)
{
	open("rxe0");
	/* DAT 2.0's EP_BROKEN at the end of an SRQ EP's connection: asked */
	auto o = kernel.last<struct kdat_ioc_ia_open>(KDAT_IOC_IA_OPEN);
	EXPECT_EQ((__u32)KDAT_IA_OPEN_SRQ_EP_BROKEN, o.flags);
	EXPECT_EQ(std::string("rxe0"), o.name);
	EXPECT_EQ((const void *)&provider_table, face(ia));
	EXPECT_EQ((const void *)&provider_table, face(async));

	d2::DAT_PZ_HANDLE pz;
	ASSERT_EQ(d2::DAT_SUCCESS, t->pz_create_func(ia, &pz));
	EXPECT_EQ((const void *)&provider_table, face(pz));
	d2::DAT_PZ_PARAM pp = {};
	EXPECT_EQ(d2::DAT_SUCCESS, t->pz_query_func(pz, d2::DAT_PZ_FIELD_ALL, &pp));
	EXPECT_EQ(ia, pp.ia_handle);

	d2::DAT_EVD_HANDLE evd;
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->evd_create_func(ia, 8, nullptr,
				     (d2::DAT_EVD_FLAGS)(d2::DAT_EVD_SOFTWARE_FLAG |
							 d2::DAT_EVD_DTO_FLAG),
				     &evd));
	EXPECT_EQ((const void *)&provider_table, face(evd));
	d2::DAT_EVD_PARAM ep;
	EXPECT_EQ(d2::DAT_SUCCESS, t->evd_query_func(evd, d2::DAT_EVD_FIELD_ALL, &ep));
	EXPECT_EQ(ia, ep.ia_handle);
	EXPECT_EQ(d2::DAT_EVD_SOFTWARE_FLAG | d2::DAT_EVD_DTO_FLAG, ep.evd_flags);

	std::vector<char> buf(4096);
	d2::DAT_REGION_DESCRIPTION r;
	r.for_va = buf.data();
	d2::DAT_LMR_HANDLE lmr;
	d2::DAT_LMR_CONTEXT lctx;
	d2::DAT_RMR_CONTEXT rctx;
	d2::DAT_VLEN len;
	d2::DAT_VADDR addr;
	/* zero-based addressing is a model kdat lacks */
	EXPECT_EQ(err2(d2::DAT_MODEL_NOT_SUPPORTED),
		  t->lmr_create_func(ia, d2::DAT_MEM_TYPE_VIRTUAL, r, 4096, pz,
				     d2::DAT_MEM_PRIV_ALL_FLAG, d2::DAT_VA_TYPE_ZB,
				     &lmr, &lctx, &rctx, &len, &addr));
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->lmr_create_func(ia, d2::DAT_MEM_TYPE_VIRTUAL, r, 4096, pz,
				     d2::DAT_MEM_PRIV_ALL_FLAG, d2::DAT_VA_TYPE_VA,
				     &lmr, &lctx, &rctx, &len, &addr));
	EXPECT_EQ((const void *)&provider_table, face(lmr));
	/* local read is always granted (OFED's reading; dtest relies on it) */
	d2::DAT_LMR_HANDLE wlmr;
	d2::DAT_LMR_CONTEXT wl;
	d2::DAT_RMR_CONTEXT wr;
	d2::DAT_VLEN wlen;
	d2::DAT_VADDR waddr;
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->lmr_create_func(ia, d2::DAT_MEM_TYPE_VIRTUAL, r, 4096, pz,
				     d2::DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
				     d2::DAT_VA_TYPE_VA, &wlmr, &wl, &wr,
				     &wlen, &waddr));
	d2::DAT_LMR_PARAM wp;
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->lmr_query_func(wlmr, (d2::DAT_LMR_PARAM_MASK)d2::DAT_LMR_FIELD_MEM_PRIV, &wp));
	EXPECT_EQ(d2::DAT_MEM_PRIV_LOCAL_WRITE_FLAG | d2::DAT_MEM_PRIV_LOCAL_READ_FLAG,
		  wp.mem_priv);
	EXPECT_EQ(d2::DAT_SUCCESS, t->lmr_free_func(wlmr));
	d2::DAT_LMR_PARAM lp;
	ASSERT_EQ(d2::DAT_SUCCESS, t->lmr_query_func(lmr, (d2::DAT_LMR_PARAM_MASK)d2::DAT_LMR_FIELD_ALL, &lp));
	EXPECT_EQ(d2::DAT_MEM_TYPE_VIRTUAL, lp.mem_type);
	EXPECT_EQ((void *)buf.data(), lp.region_desc.for_va);
	EXPECT_EQ(pz, lp.pz_handle);
	EXPECT_EQ(lctx, lp.lmr_context);
	EXPECT_EQ(d2::DAT_VA_TYPE_VA, lp.va_type);
	EXPECT_EQ(d2::DAT_MEM_PRIV_ALL_FLAG, lp.mem_priv);

	d2::DAT_HANDLE_TYPE ht;
	EXPECT_EQ(d2::DAT_SUCCESS, t->get_handle_type_func(lmr, &ht));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_LMR, ht);
	EXPECT_EQ(d2::DAT_SUCCESS, t->get_handle_type_func(ia, &ht));
	EXPECT_EQ(d2::DAT_HANDLE_TYPE_IA, ht);

	d2::DAT_CONTEXT c;
	c.as_64 = 0x77;
	EXPECT_EQ(d2::DAT_SUCCESS, t->set_consumer_context_func(pz, c));
	c.as_64 = 0;
	EXPECT_EQ(d2::DAT_SUCCESS, t->get_consumer_context_func(pz, &c));
	EXPECT_EQ(0x77u, c.as_64);

	EXPECT_EQ(d2::DAT_SUCCESS, t->lmr_free_func(lmr));
	EXPECT_EQ(d2::DAT_SUCCESS, t->evd_free_func(evd));
	EXPECT_EQ(d2::DAT_SUCCESS, t->pz_free_func(pz));
	close();
}

TEST_F(Dat2Table, IaQueryReportsDat20AndTheTruth)
{
	open("rxe0");
	d2::DAT_IA_ATTR a;
	d2::DAT_PROVIDER_ATTR p{};
	d2::DAT_EVD_HANDLE ae = nullptr;
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->ia_query_func(ia, &ae, d2::v_DAT_IA_FIELD_ALL, &a,
				   d2::v_DAT_PROVIDER_FIELD_ALL, &p));
	EXPECT_EQ(async, ae);

	/* the same fields from libdat's own DAT 1.2 query */
	DAT_IA_ATTR a1;
	DAT_PROVIDER_ATTR p1;
	ASSERT_OK(dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &a1,
			       DAT_PROVIDER_FIELD_ALL, &p1));
	EXPECT_STREQ(a1.adapter_name, a.adapter_name);
	EXPECT_EQ(a1.max_eps, a.max_eps);
	EXPECT_EQ(a1.max_srqs, a.max_srqs);
	EXPECT_EQ(a1.max_ep_per_srq, a.max_ep_per_srq);
	EXPECT_EQ(a1.max_recv_per_srq, a.max_recv_per_srq);
	EXPECT_EQ(a1.max_evd_qlen, a.max_evd_qlen);
	EXPECT_EQ((void *)a1.ia_address_ptr, (void *)a.ia_address_ptr);
	EXPECT_EQ(d2::DAT_FALSE, a.zb_supported);
	EXPECT_EQ(d2::DAT_EXTENSION_NONE, a.extension_supported);

	EXPECT_EQ(2u, p.dapl_version_major);
	EXPECT_EQ(0u, p.dapl_version_minor);
	EXPECT_STREQ(p1.provider_name, p.provider_name);
	EXPECT_EQ(p1.srq_supported ? d2::DAT_TRUE : d2::DAT_FALSE, p.srq_supported);
	EXPECT_EQ(p1.srq_watermarks_supported, p.srq_watermarks_supported);
	EXPECT_EQ(p1.srq_ep_pz_difference_supported ? d2::DAT_TRUE : d2::DAT_FALSE,
		  p.srq_ep_pz_difference_supported);
	EXPECT_EQ(p1.max_private_data_size, p.max_private_data_size);
	EXPECT_EQ(completion_flags2(p1.completion_flags_supported),
		  (std::uint64_t)p.completion_flags_supported);
	EXPECT_EQ(d2::DAT_FALSE, p.ha_supported);
	/* the fake's adapter is no device of this host's sysfs: no MTU */
	EXPECT_EQ(p1.num_provider_specific_attr, p.num_provider_specific_attr);
	for (int i = 0; i < p.num_provider_specific_attr; i++)
		EXPECT_STREQ(p1.provider_specific_attr[i].name,
			     p.provider_specific_attr[i].name);
	for (int x = 0; x < 6; x++)
		for (int y = 0; y < 6; y++)
			EXPECT_EQ(p1.evd_stream_merging_supported[x][y] ? d2::DAT_TRUE : d2::DAT_FALSE,
				  p.evd_stream_merging_supported[x][y]);
	close();
}

/* DAT_IB_TRANSPORT_MTU: what dtestsrq sizes its buffers by */
TEST(Dat2Convert, TransportMtuIsTheDevicesActivePortMtu)
{
	namespace fs = std::filesystem;
	fs::path root = fs::temp_directory_path() /
			("dat2mtu." + std::to_string(getpid()));
	auto write = [](const fs::path &p, const char *v) {
		fs::create_directories(p.parent_path());
		std::ofstream(p) << v << "\n";
	};
	auto port = [&](const char *dev, int n, const char *mtu,
			const char *state, const char *ll = "InfiniBand") {
		fs::path p = root / "class/infiniband" / dev / "ports" /
			     std::to_string(n);
		if (mtu)
			write(p / "active_mtu", mtu);
		write(p / "state", state);
		write(p / "link_layer", ll);
	};
	/* ports with an active_mtu file */
	port("ib0dev", 1, "4096 (5)", "1: DOWN");
	port("ib0dev", 2, "2048 (4)", "4: ACTIVE");
	port("down0", 1, "256 (1)", "1: DOWN");
	/* RoCE without one (ib_core 6.1): its netdev's MTU minus headers */
	port("rxe0", 1, nullptr, "4: ACTIVE", "Ethernet");
	write(root / "class/infiniband/rxe0/parent", "v0");
	write(root / "class/net/v0/mtu", "1500");
	port("mlx5_0", 1, nullptr, "4: ACTIVE", "Ethernet");
	write(root / "class/infiniband/mlx5_0/device/net/eth3/x", "");
	write(root / "class/net/eth3/mtu", "9000");
	port("tiny0", 1, nullptr, "4: ACTIVE", "Ethernet");
	write(root / "class/infiniband/tiny0/parent", "t0");
	write(root / "class/net/t0/mtu", "300");
	/* InfiniBand without the file: unknown */
	port("ibx", 1, nullptr, "4: ACTIVE");
	EXPECT_EQ("2048", transport_mtu(root.string(), "ib0dev"));
	EXPECT_EQ("256", transport_mtu(root.string(), "down0"));
	EXPECT_EQ("1024", transport_mtu(root.string(), "rxe0"));
	EXPECT_EQ("4096", transport_mtu(root.string(), "mlx5_0"));
	EXPECT_EQ("", transport_mtu(root.string(), "tiny0"));
	EXPECT_EQ("", transport_mtu(root.string(), "ibx"));
	EXPECT_EQ("", transport_mtu(root.string(), "none0"));
	EXPECT_EQ("", transport_mtu(root.string(), "../rxe0"));
	EXPECT_EQ("", transport_mtu(root.string(), ".."));
	EXPECT_EQ("", transport_mtu(root.string(), ""));
	fs::remove_all(root);

	DAT_NAMED_ATTR one[] = { { "a", "b" } };
	DAT_PROVIDER_ATTR p1 = {};
	p1.num_provider_specific_attr = 1;
	p1.provider_specific_attr = one;
	d2::DAT_PROVIDER_ATTR p{};
	provider_specific2(p1, "1024", p);
	ASSERT_EQ(2, p.num_provider_specific_attr);
	EXPECT_STREQ("a", p.provider_specific_attr[0].name);
	EXPECT_STREQ("b", p.provider_specific_attr[0].value);
	EXPECT_STREQ("DAT_IB_TRANSPORT_MTU", p.provider_specific_attr[1].name);
	EXPECT_STREQ("1024", p.provider_specific_attr[1].value);
	const d2::DAT_NAMED_ATTR *first = p.provider_specific_attr;
	provider_specific2(p1, "1024", p);	/* the same storage again */
	EXPECT_EQ(first, p.provider_specific_attr);
	provider_specific2(p1, "", p);
	EXPECT_EQ(1, p.num_provider_specific_attr);
}

TEST_F(Dat2Table, ANameFromDatConfGetsItsOwnTableAndInfo)
{
	d2::DAT_PROVIDER_INFO info = {};
	std::strcpy(info.ia_name, "kdat-v2-rxe0");
	info.dapl_version_major = 2;
	info.dapl_version_minor = 0;
	info.is_thread_safe = d2::DAT_FALSE;
	const Served *s = serve(info, "\"rxe0\" 1");
	ASSERT_NE(nullptr, s);
	EXPECT_STREQ("kdat-v2-rxe0", s->table.device_name);
	EXPECT_EQ("rxe0", s->kernel_name);
	EXPECT_TRUE(is_our_table(&s->table));
	EXPECT_EQ(s, served("kdat-v2-rxe0", false));

	open("kdat-v2-rxe0");
	EXPECT_EQ((const void *)&s->table, face(ia));
	d2::DAT_PROVIDER_ATTR p{};
	ASSERT_EQ(d2::DAT_SUCCESS, t->ia_query_func(ia, nullptr, 0, nullptr,
						    d2::v_DAT_PROVIDER_FIELD_ALL, &p));
	/* what libdat2's dat_ia_close keys its registry on */
	EXPECT_EQ(d2::DAT_FALSE, p.is_thread_safe);
	EXPECT_EQ(2u, p.dapl_version_major);
	/* a NULL attribute with its mask set: the core's INVALID_ARG4 */
	EXPECT_EQ(err2(d2::DAT_INVALID_PARAMETER, d2::DAT_INVALID_ARG4),
		  t->ia_query_func(ia, nullptr, d2::v_DAT_IA_FIELD_ALL, nullptr,
				   d2::v_DAT_PROVIDER_FIELD_ALL, &p));
	EXPECT_EQ(err2(d2::DAT_INVALID_PARAMETER, d2::DAT_INVALID_ARG6),
		  t->ia_query_func(ia, nullptr, 0, nullptr,
				   d2::v_DAT_PROVIDER_FIELD_ALL, nullptr));
	close();
}

/*
 * datinfo --dat2-conf prints a threadsafe and a nonthreadsafe line per IA:
 * each line gets its own record and table, and an IA opened through one
 * reports that line's thread safety (libdat2's dat_ia_close releases the
 * registry entry it names).  A line announced again changes nothing.
 */
TEST_F(Dat2Table, TheThreadsafeAndNonthreadsafeLinesOfOneNameStaySeparate)
{
	d2::DAT_PROVIDER_INFO info = {};
	std::strcpy(info.ia_name, "kdat-v2-rxe1");
	info.dapl_version_major = 2;
	info.is_thread_safe = d2::DAT_FALSE;
	const Served *non = serve(info, "rxe1");
	info.is_thread_safe = d2::DAT_TRUE;
	const Served *ts = serve(info, "rxe1");
	ASSERT_NE(nullptr, non);
	ASSERT_NE(nullptr, ts);
	EXPECT_NE(non, ts);
	EXPECT_NE(&non->table, &ts->table);
	EXPECT_EQ(non, served("kdat-v2-rxe1", false));
	EXPECT_EQ(ts, served("kdat-v2-rxe1", true));
	EXPECT_EQ(ts, serve(info, "other0"));	/* again: the first stays */
	EXPECT_EQ("rxe1", ts->kernel_name);

	for (const Served *s : { non, ts }) {
		d2::DAT_EVD_HANDLE a = nullptr;
		d2::DAT_IA_HANDLE h = nullptr;
		ASSERT_EQ(d2::DAT_SUCCESS,
			  s->table.ia_open_func((d2::DAT_NAME_PTR) "kdat-v2-rxe1",
						16, &a, &h));
		EXPECT_EQ((const void *)&s->table, face(h));
		d2::DAT_PROVIDER_ATTR p{};
		ASSERT_EQ(d2::DAT_SUCCESS,
			  s->table.ia_query_func(h, nullptr, 0, nullptr,
						 d2::v_DAT_PROVIDER_FIELD_ALL, &p));
		EXPECT_EQ(s == ts ? d2::DAT_TRUE : d2::DAT_FALSE, p.is_thread_safe);
		EXPECT_EQ(d2::DAT_SUCCESS,
			  s->table.ia_close_func(h, d2::DAT_CLOSE_ABRUPT_FLAG));
	}
}

TEST_F(Dat2Table, EventsComeBackInDat2Layout)
{
	open("rxe0");
	d2::DAT_EVD_HANDLE evd;
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->evd_create_func(ia, 8, nullptr, d2::DAT_EVD_SOFTWARE_FLAG, &evd));
	int x;
	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(evd), software_event(&x)));
	d2::DAT_EVENT e;
	std::memset(&e, 0xff, sizeof(e));
	ASSERT_EQ(d2::DAT_SUCCESS, t->evd_dequeue_func(evd, &e));
	EXPECT_EQ(d2::DAT_SOFTWARE_EVENT, e.event_number);
	EXPECT_EQ(evd, e.evd_handle);
	EXPECT_EQ((void *)&x, e.event_data.software_event_data.pointer);
	// bare, as OFED's providers say it: dtest -p loops on == DAT_QUEUE_EMPTY
	EXPECT_EQ(d2::DAT_QUEUE_EMPTY, t->evd_dequeue_func(evd, &e));

	ASSERT_TRUE(kernel.inject(ref<kdat::Evd>(evd), software_event(&x)));
	d2::DAT_COUNT more = -1;
	ASSERT_EQ(d2::DAT_SUCCESS, t->evd_wait_func(evd, 0, 1, &e, &more));
	EXPECT_EQ(d2::DAT_SOFTWARE_EVENT, e.event_number);
	EXPECT_EQ(0, more);
	EXPECT_EQ(d2::DAT_SUCCESS, t->evd_free_func(evd));
	close();
}

TEST_F(Dat2Table, BadHandlesAndWhatKdatDoesNotDo)
{
	int junk[8] = {};
	d2::DAT_PZ_HANDLE pz;
	EXPECT_EQ(err2(d2::DAT_INVALID_HANDLE, d2::DAT_INVALID_HANDLE_IA),
		  t->pz_create_func(junk, &pz));
	d2::DAT_EVD_PARAM ep;
	DAT_EVD_PARAM ep1;
	EXPECT_EQ(ret2(dat_evd_query(junk, DAT_EVD_FIELD_ALL, &ep1)),
		  t->evd_query_func(junk, d2::DAT_EVD_FIELD_ALL, &ep));
	EXPECT_EQ((d2::DAT_RETURN)(d2::DAT_INVALID_HANDLE | d2::v_DAT_CLASS_ERROR),
		  t->evd_query_func(junk, d2::DAT_EVD_FIELD_ALL, &ep) & 0xffff0000u);
	EXPECT_EQ(err2(d2::DAT_INVALID_HANDLE, d2::DAT_INVALID_HANDLE_LMR),
		  t->lmr_free_func(junk));
	EXPECT_EQ(err2(d2::DAT_INVALID_HANDLE, d2::DAT_INVALID_HANDLE_PZ),
		  t->pz_free_func(junk));
	EXPECT_EQ(err2(d2::DAT_INVALID_HANDLE, d2::DAT_INVALID_HANDLE_IA),
		  t->ia_close_func(junk, d2::DAT_CLOSE_ABRUPT_FLAG));

	open("rxe0");
	d2::DAT_BOOLEAN answer;
	EXPECT_EQ(err2(d2::DAT_MODEL_NOT_SUPPORTED),
		  t->ia_ha_related_func(ia, (d2::DAT_NAME_PTR)"x", &answer));
	d2::DAT_FD fd;
	d2::DAT_CNO_HANDLE cno;
	EXPECT_EQ(err2(d2::DAT_MODEL_NOT_SUPPORTED),
		  t->cno_fd_create_func(ia, &fd, &cno));
	EXPECT_EQ(err2(d2::DAT_INVALID_HANDLE, d2::DAT_INVALID_HANDLE_IA),
		  t->cno_fd_create_func(junk, &fd, &cno));
	EXPECT_EQ(err2(d2::DAT_INVALID_HANDLE, d2::DAT_INVALID_HANDLE_CNO),
		  t->cno_trigger_func(junk, nullptr));
	d2::DAT_EVD_HANDLE evd;
	EXPECT_EQ(err2(d2::DAT_INVALID_PARAMETER, d2::DAT_INVALID_ARG4),
		  t->evd_create_func(ia, 8, nullptr,
				     (d2::DAT_EVD_FLAGS)d2::DAT_EVD_EXTENSION_BASE, &evd));
	close();
}

/*
 * CNOs through the DAT 2.0 table: libdat's CNO (the kernel's) with the
 * DAT 2.0 parameter layout (proxy_type AGENT, the agent in the union); an
 * EVD's cno both ways; a wait naming the EVD; the fd CNO and
 * dat_cno_trigger are DAT_MODEL_NOT_SUPPORTED, as on OFED's providers.
 */
namespace {
void agent2(d2::DAT_PVOID, d2::DAT_EVD_HANDLE) {}
} // namespace

TEST_F(Dat2Table, CnosTranslateToLibdatsCnos)
{
	open("rxe0");
	int data;
	d2::DAT_OS_WAIT_PROXY_AGENT a = { &data, agent2 };
	d2::DAT_CNO_HANDLE cno = nullptr;
	ASSERT_EQ(d2::DAT_SUCCESS, t->cno_create_func(ia, a, &cno));
	EXPECT_EQ(t, face(cno));
	d2::DAT_CNO_PARAM p;
	std::memset(&p, 0xff, sizeof(p));
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->cno_query_func(cno, d2::DAT_CNO_FIELD_ALL, &p));
	EXPECT_EQ(d2::DAT_PROXY_TYPE_AGENT, p.proxy_type);
	EXPECT_EQ((void *)&data, p.proxy.agent.instance_data);
	EXPECT_EQ(&agent2, p.proxy.agent.proxy_agent_func);
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->cno_modify_agent_func(cno, d2::DAT_OS_WAIT_PROXY_AGENT{}));
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->cno_query_func(cno, d2::DAT_CNO_FIELD_ALL, &p));
	EXPECT_EQ(nullptr, p.proxy.agent.proxy_agent_func);

	d2::DAT_EVD_HANDLE evd = nullptr, got = nullptr;
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->evd_create_func(ia, 8, cno, d2::DAT_EVD_DTO_FLAG, &evd));
	EXPECT_EQ(kid<kdat::Cno>(cno),
		  kernel.last<kdat_ioc_evd_notify>(KDAT_IOC_EVD_NOTIFY).cno);
	d2::DAT_EVD_PARAM ep;
	ASSERT_EQ(d2::DAT_SUCCESS,
		  t->evd_query_func(evd, d2::DAT_EVD_FIELD_CNO, &ep));
	EXPECT_EQ(cno, ep.cno_handle);
	const std::uint32_t ekid = kid<kdat::Evd>(evd);
	kernel.answer<kdat_ioc_cno_wait>(KDAT_IOC_CNO_WAIT, [ekid](auto &w) {
		w.evd = ekid;
		return (DAT_RETURN)DAT_SUCCESS;
	});
	ASSERT_EQ(d2::DAT_SUCCESS, t->cno_wait_func(cno, 1000, &got));
	EXPECT_EQ(evd, got);
	kernel.answer_raw(KDAT_IOC_CNO_WAIT, {});
	EXPECT_EQ(err2(d2::DAT_TIMEOUT_EXPIRED), t->cno_wait_func(cno, 0, &got));

	EXPECT_EQ(err2(d2::DAT_MODEL_NOT_SUPPORTED),
		  t->cno_trigger_func(cno, &got));
	d2::DAT_FD fd;
	d2::DAT_CNO_HANDLE fcno;
	EXPECT_EQ(err2(d2::DAT_MODEL_NOT_SUPPORTED),
		  t->cno_fd_create_func(ia, &fd, &fcno));

	kernel.status_next(KDAT_IOC_FREE,
			   DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE));
	EXPECT_EQ(err2(d2::DAT_INVALID_STATE, d2::DAT_INVALID_STATE_CNO_IN_USE),
		  t->cno_free_func(cno));
	ASSERT_EQ(d2::DAT_SUCCESS, t->evd_modify_cno_func(evd, nullptr));
	EXPECT_EQ(0u, kernel.last<kdat_ioc_evd_notify>(KDAT_IOC_EVD_NOTIFY).cno);
	ASSERT_EQ(d2::DAT_SUCCESS, t->evd_free_func(evd));
	ASSERT_EQ(d2::DAT_SUCCESS, t->cno_free_func(cno));
	EXPECT_EQ(err2(d2::DAT_INVALID_HANDLE, d2::DAT_INVALID_HANDLE_CNO),
		  t->cno_free_func(cno));
	close();
}
