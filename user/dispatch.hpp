// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// How a dat_* entry point reaches its implementation: the core and the
// providers are split as in rdma-core, and the core calls every provider,
// the built-in one included, through its DAT_PROVIDER table.
//
//   core (dat_* in each family's .cpp)
//     looks the handle up in the table of live handles (handles.hpp):
//     a NULL, freed, stale, foreign-typed handle is DAT_INVALID_HANDLE with
//     the subtype the call names.  The entry it finds pins the object (a
//     shared_ptr) for the whole call and names the provider; the core
//     calls that provider's table entry (DAT_NOT_IMPLEMENTED if NULL) with
//     the consumer's arguments, and for a loaded provider records the
//     handles it creates or frees (track/erased below).
//
//   built-in provider (namespace kdat::builtin, the table that
//     fill_builtin_table() in registry.cpp fills)
//     each entry runs the C++ member of its object.  The object is the
//     one the core just pinned: the core leaves {handle, object} in a
//     thread-local slot (PinScope), so the entry needs no second lookup.
//     Called by anyone else (DAT_HANDLE_TO_PROVIDER(h)->x_func(h, ...)),
//     the slot does not name the handle, and the entry hands the call to
//     the core, which checks the handle and comes back pinned.
//
// Cost over a direct member call: one indirect call and a thread-local
// compare.  dat_srq_post_recv keeps its per-thread cache (srq.cpp): the
// cache holds the table entry it reached last, so a cached post is one
// indirect call into the built-in provider and no lookup at all.
//
// No exception leaves: guard() turns them into
// DAT_INSUFFICIENT_RESOURCES / DAT_INTERNAL_ERROR.
#pragma once

#include "errors.hpp"
#include "handles.hpp"

#include <type_traits>
#include <utility>

namespace kdat {

/*
 * The model of the core's thread-locals: initial-exec (a fixed offset from
 * the thread pointer) in libdat.so.1, which programs link; the dynamic
 * model where the core is built into a library that is always dlopen()ed
 * (KDAT_DLOPENED: libdaplkdat.so.2), so it loads without static TLS.
 */
#ifdef KDAT_DLOPENED
#define KDAT_TLS_MODEL
#else
#define KDAT_TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

/* The object the core pinned for the call this thread is in. */
struct PinnedCall {
	DAT_HANDLE h = nullptr;
	Object *obj = nullptr;		/* null for a loaded provider's handle */
};

inline constinit thread_local PinnedCall pinned_call KDAT_TLS_MODEL;

/* Publish a pinned object for the duration of one provider call. */
class PinScope {
public:
	PinScope(DAT_HANDLE h, Object *obj) noexcept : saved_(pinned_call)
	{
		pinned_call = PinnedCall{ h, obj };
	}
	~PinScope() { pinned_call = saved_; }
	PinScope(const PinScope &) = delete;
	PinScope &operator=(const PinScope &) = delete;

private:
	PinnedCall saved_;
};

/* The built-in object the core pinned for @h, if this call is its. */
template <class T>
inline T *pinned(DAT_HANDLE h) noexcept
{
	const PinnedCall p = pinned_call;

	if (__builtin_expect(h && p.h == h && p.obj &&
			     p.obj->type == T::kType, 1))
		return static_cast<T *>(p.obj);
	return nullptr;
}

/* A provider table entry, or DAT_NOT_IMPLEMENTED if it has none. */
template <class Fn, class... A>
DAT_RETURN call_provider(Fn fn, A &&...a)
{
	if (!fn)
		return err(DAT_NOT_IMPLEMENTED);
	return fn(std::forward<A>(a)...);
}

/* Nothing to record after a provider call. */
struct NoAfter {
	void operator()(DAT_RETURN, const HandleEntry &) const {}
};

/*
 * Remember a handle a loaded provider just created under @parent (a
 * foreign IA's entry has itself as owner, so children inherit it).
 */
inline void track_foreign(DAT_RETURN r, DAT_HANDLE h, DAT_HANDLE_TYPE type,
			  const HandleEntry &parent, bool named_again = false)
{
	if (r == DAT_SUCCESS && h)
		handles().insert_foreign(h, type, parent.provider, parent.lib,
					 parent.owner, parent.owner_seq,
					 named_again);
}

/* After a loaded provider's create: track *@out. */
template <class H>
inline auto track(H *out, DAT_HANDLE_TYPE type)
{
	return [out, type](DAT_RETURN r, const HandleEntry &e) {
		track_foreign(r, out ? *out : nullptr, type, e);
	};
}

/*
 * After a loaded provider's free: forget @h, unless the provider already
 * gave its address to a new object another thread is tracking.
 */
inline auto erased(DAT_HANDLE h)
{
	return [h](DAT_RETURN r, const HandleEntry &e) {
		if (ok(r))
			handles().erase_tracked(h, e.seq);
	};
}

/*
 * The core: check @h (of @type, else @bad), pin what it names and call
 * its provider's table entry @Entry with (h, a...); then @after for a
 * loaded provider's handle.
 */
template <auto Entry, class After, class H, class... A>
DAT_RETURN dispatch(DAT_HANDLE_TYPE type, DAT_RETURN bad, After &&after, H h,
		    A... a) noexcept
{
	return guard([&]() -> DAT_RETURN {
		HandleEntry e = handles().find(h, type);

		if (!e)
			return bad;
		auto fn = e.provider->*Entry;
		DAT_RETURN r;

		if (!fn)
			return err(DAT_NOT_IMPLEMENTED);
		{
			PinScope pin(h, e.obj.get());

			r = fn(h, a...);
		}
		if (!e.builtin())
			after(r, e);
		return r;
	});
}

/*
 * A built-in table entry: @f on the object of type @T the core pinned for
 * @h; called from anywhere else, the core (@core with @a) checks first.
 */
template <class T, class Core, class F, class... A>
inline DAT_RETURN on_builtin(DAT_HANDLE h, Core core, F &&f, A... a) noexcept
{
	if (T *o = pinned<T>(h))
		return guard([&]() -> DAT_RETURN { return f(*o); });
	if (h && pinned_call.h == h)	/* the core's, yet not ours: never */
		return err(DAT_INTERNAL_ERROR);
	return core(a...);
}

} // namespace kdat

/*
 * The built-in provider's table entries (fill_builtin_table(), registry.cpp):
 * one C++ implementation per call, defined with its family.  The
 * RMR/RSP calls on their own handles and dat_get_handle_type have
 * none: the built-in provider never makes such a handle (the table points
 * those at the core, which finds no built-in handle of that type).
 */
namespace kdat::builtin {

template <class P>
using Fn = std::remove_pointer_t<P>;

Fn<DAT_IA_QUERY_FUNC> ia_query;
Fn<DAT_IA_CLOSE_FUNC> ia_close;
Fn<DAT_SET_CONSUMER_CONTEXT_FUNC> set_consumer_context;
Fn<DAT_GET_CONSUMER_CONTEXT_FUNC> get_consumer_context;
Fn<DAT_CNO_CREATE_FUNC> cno_create;
Fn<DAT_CNO_MODIFY_AGENT_FUNC> cno_modify_agent;
Fn<DAT_CNO_QUERY_FUNC> cno_query;
Fn<DAT_CNO_FREE_FUNC> cno_free;
Fn<DAT_CNO_WAIT_FUNC> cno_wait;
Fn<DAT_CR_QUERY_FUNC> cr_query;
Fn<DAT_CR_ACCEPT_FUNC> cr_accept;
Fn<DAT_CR_REJECT_FUNC> cr_reject;
Fn<DAT_CR_HANDOFF_FUNC> cr_handoff;
Fn<DAT_EVD_CREATE_FUNC> evd_create;
Fn<DAT_EVD_QUERY_FUNC> evd_query;
Fn<DAT_EVD_MODIFY_CNO_FUNC> evd_modify_cno;
Fn<DAT_EVD_ENABLE_FUNC> evd_enable;
Fn<DAT_EVD_DISABLE_FUNC> evd_disable;
Fn<DAT_EVD_WAIT_FUNC> evd_wait;
Fn<DAT_EVD_RESIZE_FUNC> evd_resize;
Fn<DAT_EVD_POST_SE_FUNC> evd_post_se;
Fn<DAT_EVD_DEQUEUE_FUNC> evd_dequeue;
Fn<DAT_EVD_FREE_FUNC> evd_free;
Fn<DAT_EP_CREATE_FUNC> ep_create;
Fn<DAT_EP_QUERY_FUNC> ep_query;
Fn<DAT_EP_MODIFY_FUNC> ep_modify;
Fn<DAT_EP_CONNECT_FUNC> ep_connect;
Fn<DAT_EP_DUP_CONNECT_FUNC> ep_dup_connect;
Fn<DAT_EP_DISCONNECT_FUNC> ep_disconnect;
Fn<DAT_EP_POST_SEND_FUNC> ep_post_send;
Fn<DAT_EP_POST_RECV_FUNC> ep_post_recv;
Fn<DAT_EP_POST_RDMA_READ_FUNC> ep_post_rdma_read;
Fn<DAT_EP_POST_RDMA_WRITE_FUNC> ep_post_rdma_write;
Fn<DAT_EP_GET_STATUS_FUNC> ep_get_status;
Fn<DAT_EP_FREE_FUNC> ep_free;
Fn<DAT_LMR_CREATE_FUNC> lmr_create;
Fn<DAT_LMR_QUERY_FUNC> lmr_query;
Fn<DAT_LMR_FREE_FUNC> lmr_free;
Fn<DAT_RMR_CREATE_FUNC> rmr_create;
Fn<DAT_PSP_CREATE_FUNC> psp_create;
Fn<DAT_PSP_QUERY_FUNC> psp_query;
Fn<DAT_PSP_FREE_FUNC> psp_free;
Fn<DAT_RSP_CREATE_FUNC> rsp_create;
Fn<DAT_RSP_QUERY_FUNC> rsp_query;
Fn<DAT_RSP_FREE_FUNC> rsp_free;
Fn<DAT_PZ_CREATE_FUNC> pz_create;
Fn<DAT_PZ_QUERY_FUNC> pz_query;
Fn<DAT_PZ_FREE_FUNC> pz_free;
Fn<DAT_PSP_CREATE_ANY_FUNC> psp_create_any;
Fn<DAT_EP_RESET_FUNC> ep_reset;
Fn<DAT_EVD_SET_UNWAITABLE_FUNC> evd_set_unwaitable;
Fn<DAT_EVD_CLEAR_UNWAITABLE_FUNC> evd_clear_unwaitable;
Fn<DAT_LMR_SYNC_RDMA_READ_FUNC> lmr_sync_rdma_read;
Fn<DAT_LMR_SYNC_RDMA_WRITE_FUNC> lmr_sync_rdma_write;
Fn<DAT_EP_CREATE_WITH_SRQ_FUNC> ep_create_with_srq;
Fn<DAT_EP_RECV_QUERY_FUNC> ep_recv_query;
Fn<DAT_EP_SET_WATERMARK_FUNC> ep_set_watermark;
Fn<DAT_SRQ_CREATE_FUNC> srq_create;
Fn<DAT_SRQ_FREE_FUNC> srq_free;
Fn<DAT_SRQ_POST_RECV_FUNC> srq_post_recv;
Fn<DAT_SRQ_QUERY_FUNC> srq_query;
Fn<DAT_SRQ_RESIZE_FUNC> srq_resize;
Fn<DAT_SRQ_SET_LW_FUNC> srq_set_lw;

} // namespace kdat::builtin

/*
 * The core of a call on one handle @h of type @type (DAT_HANDLE_TYPE_x):
 * through entry @fn of its provider's table, with the arguments as given.
 */
#define KDAT_CORE(type, bad, fn, ...)                                       \
	::kdat::dispatch<&DAT_PROVIDER::fn>((type), (bad), ::kdat::NoAfter{}, \
					    __VA_ARGS__)

/*
 * A built-in table entry: @member of the pinned object of class @T named
 * by @h, else the core @core with the same arguments.
 */
#define KDAT_BUILTIN(T, h, core, member, ...)                               \
	::kdat::on_builtin<T>(                                              \
		(h), core, [&](T &o_) -> DAT_RETURN { return o_.member; },  \
		__VA_ARGS__)
