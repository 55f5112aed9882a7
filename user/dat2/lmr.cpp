// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// (placeholder for the lmr family of the DAT 2.0 table)
#include "convert.hpp"
