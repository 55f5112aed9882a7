// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// DAT 2.0's IB extension (<dat2/dat_ib_extensions.h>) on kdat: the
// provider's handle_extendedop_func, which libdat2's dat_extension_op
// calls with the operation and its variable arguments.  RDMA Write with
// immediate data, compare-and-swap and fetch-and-add are the kernel's
// (KDAT_FEATURE_IB_EXT, reached through libdat's ib_ext.hpp); their
// completions become DAT_IB_DTO_EVENTs in evd.cpp (dto_ext2).  Everything
// else the extension names (UD, counters, collectives, open/close query)
// is DAT_NOT_IMPLEMENTED, what OFED's providers answer for an operation
// they were built without.
#include "ep_convert.hpp"
#include "ib_ext.hpp"

#include <cstdarg>

namespace kdat::dat2p {

namespace d2 = ::dat2;

namespace {

/* The IB operations' variable arguments (dat_ib_extensions.h's macros). */
bool read_args(std::uint32_t op, va_list args, ExtPost &p)
{
	std::memset(&p, 0, sizeof(p));
	switch (op) {
	case d2::DAT_IB_RDMA_WRITE_IMMED_OP:
		p.op = KDAT_POST_RDMA_WRITE_IMMED;
		p.n = va_arg(args, DAT_COUNT);
		p.iov = va_arg(args, const d2::DAT_LMR_TRIPLET *);
		p.cookie = va_arg(args, d2::DAT_DTO_COOKIE);
		p.remote = va_arg(args, const d2::DAT_RMR_TRIPLET *);
		p.immed = va_arg(args, unsigned int);
		p.flags = va_arg(args, unsigned int);
		return true;
	case d2::DAT_IB_CMP_AND_SWAP_OP:
		p.op = KDAT_POST_CMP_AND_SWAP;
		p.n = 1;
		p.compare_add = va_arg(args, std::uint64_t);
		p.swap = va_arg(args, std::uint64_t);
		p.iov = va_arg(args, const d2::DAT_LMR_TRIPLET *);
		p.cookie = va_arg(args, d2::DAT_DTO_COOKIE);
		p.remote = va_arg(args, const d2::DAT_RMR_TRIPLET *);
		p.flags = va_arg(args, unsigned int);
		return true;
	case d2::DAT_IB_FETCH_AND_ADD_OP:
		p.op = KDAT_POST_FETCH_AND_ADD;
		p.n = 1;
		p.compare_add = va_arg(args, std::uint64_t);
		p.iov = va_arg(args, const d2::DAT_LMR_TRIPLET *);
		p.cookie = va_arg(args, d2::DAT_DTO_COOKIE);
		p.remote = va_arg(args, const d2::DAT_RMR_TRIPLET *);
		p.flags = va_arg(args, unsigned int);
		return true;
	default:
		return false;
	}
}

d2::DAT_RETURN extendedop2(d2::DAT_HANDLE h, d2::DAT_EXTENDED_OP op,
			   va_list args)
{
	ExtPost p;

	if (!read_args((std::uint32_t)op, args, p)) {
		if (!h)
			return ret2(bad_handle(0));
		return ret2(err(DAT_NOT_IMPLEMENTED));
	}
	return post_ext2(h, p);
}

} // namespace

d2::DAT_RETURN post_ext2(d2::DAT_HANDLE h, const ExtPost &p) noexcept
{
	return run([&]() -> ::DAT_RETURN {
		/*
		 * dat_extension_op's argument numbers: (ep, op, then the
		 * operation's own); NULL pointers are answered here, the
		 * rest in the kernel's numbering, shifted (ext_status).
		 */
		bool atomic = p.op != KDAT_POST_RDMA_WRITE_IMMED;
		int local_arg = p.op == KDAT_POST_CMP_AND_SWAP ? 5 : 4;

		if (atomic && !p.iov)
			return bad_arg(local_arg);
		if (!p.remote)
			return bad_arg(local_arg + 2);
		Triplets t(p.iov, to_convert(p.n));
		RmrArg r(p.remote);
		PostExt x;

		x.compare_add = p.compare_add;
		x.swap = p.swap;
		x.immed_data = p.immed;
		/* the flags are the core's names; the kernel judges the rest */
		DAT_COMPLETION_FLAGS f = as_enum<DAT_COMPLETION_FLAGS>(
			a_to_b(p.flags, kCompletionFlags));
		return ext_status(ep_post_ext(h, p.op, p.n, t.get(),
					      cookie12(p.cookie), r.get(), x,
					      raw(f)));
	});
}

d2::DAT_HANDLE_EXTENDEDOP_FUNC extendedop_func() noexcept
{
	return extendedop2;
}

} // namespace kdat::dat2p
