// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Conversions every family of the DAT 2.0 provider needs (user/dat2/).
// The layouts and values differ in places (dat-facts.md): a DAT 2.0 value
// is always produced from the DAT 1.2 one by name, never by cast.
#pragma once

#include "dat2.hpp"

#include <cstddef>
#include <vector>

namespace kdat::dat2p {

/* A DAT 1.2 status as DAT 2.0 spells it (type and subtype by name). */
::dat2::DAT_RETURN ret2(DAT_RETURN r) noexcept;

/*
 * DAT 2.0 triplets ({u64 va; u32 len; u32 lmr_context}, 16 bytes) as the
 * DAT 1.2 ones the core checks ({u32 ctx; u32 pad; u64 va; u64 len}).
 * Small lists stay on the stack; a NULL list with count 0 stays NULL so
 * the core still sees what the consumer passed.
 */
class Triplets {
public:
	Triplets(const ::dat2::DAT_LMR_TRIPLET *t, DAT_COUNT n)
	{
		if (!t || n <= 0)
			return;
		DAT_LMR_TRIPLET *d = n <= kInline ? inline_ : (heap_.resize(n), heap_.data());
		for (DAT_COUNT i = 0; i < n; i++) {
			d[i] = DAT_LMR_TRIPLET{};
			d[i].lmr_context = t[i].lmr_context;
			d[i].virtual_address = t[i].virtual_address;
			d[i].segment_length = t[i].segment_length;
		}
		p_ = d;
	}
	Triplets(const Triplets &) = delete;
	Triplets &operator=(const Triplets &) = delete;

	DAT_LMR_TRIPLET *get() { return p_; }

private:
	static constexpr DAT_COUNT kInline = 8;
	DAT_LMR_TRIPLET inline_[kInline];
	std::vector<DAT_LMR_TRIPLET> heap_;
	DAT_LMR_TRIPLET *p_ = nullptr;
};

/* Each family fills its entries of the DAT 2.0 table. */
void fill_ia_evd_lmr(::dat2::DAT_PROVIDER &t);	/* provider.cpp, ia.cpp, evd.cpp */
void fill_ep_srq_cm(::dat2::DAT_PROVIDER &t);	/* ep.cpp, srq.cpp, cm.cpp */

/* The DAT 2.0 table every object of a libdaplkdat IA starts with. */
extern ::dat2::DAT_PROVIDER provider_table;

} // namespace kdat::dat2p
