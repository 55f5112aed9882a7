// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libdaplkdat (user/dat2/): the EP, SRQ, CR, PSP/RSP families of the
// DAT 2.0 face, on the fake /dev/kdat.
#include "dat2/convert.hpp"

#include <gtest/gtest.h>

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
