// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The kernel's refusals to free or close what is still in use, and a
// software event on a full EVD, through libdat against the real module:
// the host checks only that the library passes these codes through
// (tests/user/host/README.md has the map).
#include "fixture.hpp"

using namespace kt;

namespace {

class Objects : public Pair {};

TEST_F(Objects, GracefulCloseRefusedWhileObjectsLive)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_PZ_HANDLE pz;
	ASSERT_OK(dat_ia_open(const_cast<char *>(srv_ia()), 8, &async, &ia));
	ASSERT_OK(dat_pz_create(ia, &pz));
	ASSERT_DAT(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE);
	DAT_PZ_PARAM p;
	ASSERT_OK(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &p));	// still there
	ASSERT_OK(dat_pz_free(pz));
	ASSERT_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
	ASSERT_DAT(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE);
}

TEST_F(Objects, PzFreeRefusedWhileAnLmrUsesIt)
{
	EXPECT_EQ(dat_pz_free(s.pz),
		  (DAT_RETURN)DAT_ERROR(DAT_INVALID_STATE,
					DAT_INVALID_STATE_PZ_IN_USE));
	DAT_PZ_PARAM p;
	ASSERT_OK(dat_pz_query(s.pz, DAT_PZ_FIELD_ALL, &p));
	ASSERT_OK(dat_lmr_free(s.lmr));
	s.lmr = DAT_HANDLE_NULL;
	ASSERT_OK(dat_pz_free(s.pz));
	s.pz = DAT_HANDLE_NULL;
}

TEST_F(Objects, EvdFreeRefusedWhileAnEpUsesIt)
{
	DAT_EVD_HANDLE evd;
	ASSERT_OK(dat_evd_create(s.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				 &evd));
	DAT_EP_ATTR a = ep_attr();
	DAT_EP_HANDLE ep;
	ASSERT_OK(dat_ep_create(s.ia, s.pz, evd, evd, s.conn, &a, &ep));
	EXPECT_EQ(dat_evd_free(evd),
		  (DAT_RETURN)DAT_ERROR(DAT_INVALID_STATE,
					DAT_INVALID_STATE_EVD_IN_USE));
	DAT_EVD_PARAM p;
	ASSERT_OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &p));	// still there
	ASSERT_OK(dat_ep_free(ep));
	ASSERT_OK(dat_evd_free(evd));
}

// dat_evd_post_se on an EVD that holds qlen events: DAT_QUEUE_FULL
// (DAT 1.2), and nothing is lost or reported lost.
TEST_F(Objects, PostSeOnAFullEvdIsQueueFull)
{
	DAT_EVD_HANDLE se;
	ASSERT_OK(dat_evd_create(s.ia, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG,
				 &se));
	DAT_EVENT ev{}, got;
	ev.event_number = DAT_SOFTWARE_EVENT;
	for (int i = 0; i < 8; i++)
		ASSERT_OK(dat_evd_post_se(se, &ev));
	ASSERT_DAT(dat_evd_post_se(se, &ev), DAT_QUEUE_FULL);
	ASSERT_OK(dat_evd_dequeue(se, &got));
	EXPECT_EQ(got.event_number, DAT_SOFTWARE_EVENT);
	ASSERT_OK(dat_evd_post_se(se, &ev));
	int n = 0;
	while (dat_evd_dequeue(se, &got) == DAT_SUCCESS)
		n++;
	EXPECT_EQ(n, 8);
	EXPECT_TRUE(no_event(s.async_evd)) << "an event was lost";
}

} // namespace
