// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// (placeholder: the DAT 2.0 table, dat_provider_init/fini)
#include "convert.hpp"

namespace kdat::dat2p {
::dat2::DAT_PROVIDER provider_table;
void fill_ia_evd_lmr(::dat2::DAT_PROVIDER &) {}
} // namespace kdat::dat2p

extern "C" __attribute__((visibility("default"))) void
dat_provider_init(const ::dat2::DAT_PROVIDER_INFO *, const char *)
{
}

extern "C" __attribute__((visibility("default"))) void
dat_provider_fini(const ::dat2::DAT_PROVIDER_INFO *)
{
}
