// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The handle table's tracking of a loaded provider's handles.  A provider
// may give a freed object's address to its next object (malloc does)
// before the thread that freed the old one has forgotten it: that late
// forget must not drop the new object, nor an IA's close the children of
// an IA opened since at the same address (dispatch.hpp erased(),
// Registry::closed).
#include <gtest/gtest.h>

#include "handles.hpp"

namespace {

DAT_PROVIDER provider;	/* never called: only its address is tracked */
char ia_mem, evd_mem, ep_mem;
DAT_HANDLE const ia = &ia_mem, evd = &evd_mem, ep = &ep_mem;

class ForeignHandles : public ::testing::Test {
protected:
	void TearDown() override
	{
		for (DAT_HANDLE h : { ia, evd, ep })
			kdat::handles().erase(h);
	}
};

} // namespace

TEST_F(ForeignHandles, AFreeForgetsOnlyTheObjectItFreed)
{
	auto &t = kdat::handles();
	const std::uint64_t s = t.insert_foreign(ia, DAT_HANDLE_TYPE_IA,
						 &provider, nullptr, ia);

	t.insert_foreign(evd, DAT_HANDLE_TYPE_EVD, &provider, nullptr, ia, s);
	const kdat::HandleEntry old = t.find(evd, DAT_HANDLE_TYPE_EVD);
	ASSERT_TRUE(old);
	/* another thread's create got the freed address first */
	t.insert_foreign(evd, DAT_HANDLE_TYPE_EVD, &provider, nullptr, ia, s);
	EXPECT_FALSE(t.erase_tracked(evd, old.seq));
	EXPECT_TRUE(t.find(evd, DAT_HANDLE_TYPE_EVD));
	/* its own free forgets it */
	const kdat::HandleEntry now = t.find(evd, DAT_HANDLE_TYPE_EVD);
	EXPECT_TRUE(t.erase_tracked(evd, now.seq));
	EXPECT_FALSE(t.find(evd));
	EXPECT_FALSE(t.erase_tracked(evd, now.seq));
}

TEST_F(ForeignHandles, AnIaCloseForgetsOnlyItsOwnChildren)
{
	auto &t = kdat::handles();
	const std::uint64_t s1 = t.insert_foreign(ia, DAT_HANDLE_TYPE_IA,
						  &provider, nullptr, ia);

	t.insert_foreign(evd, DAT_HANDLE_TYPE_EVD, &provider, nullptr, ia, s1);
	const kdat::HandleEntry closing = t.find(ia, DAT_HANDLE_TYPE_IA);
	ASSERT_TRUE(closing);
	EXPECT_EQ(closing.seq, closing.owner_seq);
	/* closed by the provider; another thread opens at the same address */
	const std::uint64_t s2 = t.insert_foreign(ia, DAT_HANDLE_TYPE_IA,
						  &provider, nullptr, ia);
	t.insert_foreign(ep, DAT_HANDLE_TYPE_EP, &provider, nullptr, ia, s2);
	/* what Registry::closed does for the first IA */
	t.erase_owned_by(ia, closing.owner_seq);
	EXPECT_FALSE(t.erase_tracked(ia, closing.seq));
	EXPECT_FALSE(t.find(evd)) << "the closed IA's EVD is still tracked";
	EXPECT_TRUE(t.find(ep, DAT_HANDLE_TYPE_EP));
	EXPECT_TRUE(t.find(ia, DAT_HANDLE_TYPE_IA));
	/* and the second IA's close forgets its own */
	const kdat::HandleEntry second = t.find(ia, DAT_HANDLE_TYPE_IA);
	t.erase_owned_by(ia, second.owner_seq);
	EXPECT_TRUE(t.erase_tracked(ia, second.seq));
	EXPECT_FALSE(t.find(ep));
	EXPECT_FALSE(t.find(ia));
}

/* A handle a query names again (dat_cr_query's EP) keeps its tracking. */
TEST_F(ForeignHandles, NamedAgainKeepsItsTracking)
{
	auto &t = kdat::handles();
	const std::uint64_t s = t.insert_foreign(ia, DAT_HANDLE_TYPE_IA,
						 &provider, nullptr, ia);
	const std::uint64_t e1 = t.insert_foreign(ep, DAT_HANDLE_TYPE_EP,
						  &provider, nullptr, ia, s);

	EXPECT_EQ(e1, t.insert_foreign(ep, DAT_HANDLE_TYPE_EP, &provider, nullptr, ia,
				       s, true));
	EXPECT_TRUE(t.erase_tracked(ep, e1)) << "a free meanwhile missed it";
	/* not tracked yet: tracked now */
	EXPECT_NE(e1, t.insert_foreign(ep, DAT_HANDLE_TYPE_EP, &provider, nullptr, ia,
				       s, true));
	EXPECT_TRUE(t.find(ep, DAT_HANDLE_TYPE_EP));
}
