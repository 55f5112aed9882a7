// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// (placeholder: EP, SRQ, CR, PSP/RSP entries of the DAT 2.0 table)
#include "convert.hpp"

namespace kdat::dat2p {
void fill_ep_srq_cm(::dat2::DAT_PROVIDER &) {}
} // namespace kdat::dat2p
