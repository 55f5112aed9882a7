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
