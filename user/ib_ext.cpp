// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libdat's internal IB-extension calls (ib_ext.hpp).
#include "ib_ext.hpp"

#include "dispatch.hpp"
#include "hot.hpp"
#include "ioctl.hpp"

namespace kdat {

namespace {

/* The live built-in object of class @T named by @h, held by the caller. */
template <class T>
std::shared_ptr<T> builtin_object(DAT_HANDLE h)
{
	HandleEntry e = handles().find(h, T::kType);

	if (!e.builtin())
		return nullptr;
	return std::static_pointer_cast<T>(e.obj);
}

} // namespace

DAT_RETURN ia_kernel_flags(DAT_IA_HANDLE h, std::uint32_t &flags)
{
	return guard([&]() -> DAT_RETURN {
		auto ia = builtin_object<Ia>(h);

		if (!ia)
			return bad_handle(DAT_INVALID_HANDLE_IA);
		struct kdat_ioc_ia_query q = {};
		q.ia = ia->kid;
		DAT_RETURN r = call(*ia->ctx->dev, KDAT_IOC_IA_QUERY, q);
		if (ok(r))
			flags = q.attr.flags;
		return r;
	});
}

DAT_RETURN evd_wait_ext(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout,
			DAT_COUNT threshold, DAT_EVENT *event,
			DAT_COUNT *nmore, DtoExt &ext)
{
	return guard([&]() -> DAT_RETURN {
		auto evd = builtin_object<Evd>(h);

		if (!evd)
			return bad_handle(DAT_INVALID_HANDLE_EVD_ASYNC)	/* as the core */;
		return evd->wait(timeout, threshold, event, nmore, &ext);
	});
}

KDAT_DATA_PATH(512)
DAT_RETURN evd_dequeue_ext(DAT_EVD_HANDLE h, DAT_EVENT *event, DtoExt &ext)
{
	return guard([&]() -> DAT_RETURN {
		auto evd = builtin_object<Evd>(h);

		if (!evd)
			return bad_handle(DAT_INVALID_HANDLE_EVD_ASYNC)	/* as the core */;
		return evd->dequeue(event, &ext);
	});
}

KDAT_DATA_PATH(2048)
DAT_RETURN ep_post_ext(DAT_EP_HANDLE h, std::uint32_t op, DAT_COUNT n,
		       const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
		       const DAT_RMR_TRIPLET *remote, const PostExt &x,
		       std::uint64_t flags)
{
	return guard([&]() -> DAT_RETURN {
		auto ep = builtin_object<Ep>(h);

		if (!ep)
			return bad_handle(DAT_INVALID_HANDLE_EP);
		if (op != KDAT_POST_RDMA_WRITE_IMMED &&
		    op != KDAT_POST_CMP_AND_SWAP &&
		    op != KDAT_POST_FETCH_AND_ADD)
			return bad_arg(2);
		return ep->post(op, n, iov, cookie, remote, flags, &x);
	});
}

} // namespace kdat
