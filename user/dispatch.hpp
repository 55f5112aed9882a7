// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// How a dat_* entry point reaches its implementation.
//
// Every call first looks its handle up in the table of live handles
// (handles.hpp).  A handle of the built-in provider runs the C++ member of
// its object, which stays pinned for the call; a handle of a loaded
// provider is passed to that provider's table entry (DAT_NOT_IMPLEMENTED
// if the entry is NULL).  Anything else is DAT_INVALID_HANDLE with the
// subtype the call names.  No exception leaves: guard() turns them into
// DAT_INSUFFICIENT_RESOURCES / DAT_INTERNAL_ERROR.
#pragma once

#include "errors.hpp"
#include "handles.hpp"

namespace kdat {

template <class T, class Builtin, class Foreign>
DAT_RETURN dispatch(DAT_HANDLE h, DAT_RETURN bad, Builtin &&builtin,
		    Foreign &&foreign) noexcept
{
	return guard([&]() -> DAT_RETURN {
		HandleEntry e = handles().find(h, T::kType);

		if (!e)
			return bad;
		if (e.builtin())
			return builtin(static_cast<T &>(*e.obj));
		return foreign(e);
	});
}

/*
 * For objects the built-in provider never creates (CNO, RMR, RSP): only
 * a loaded provider's handle can be valid.
 */
template <class Foreign>
DAT_RETURN dispatch_foreign(DAT_HANDLE h, DAT_HANDLE_TYPE type,
			    DAT_RETURN bad, Foreign &&foreign) noexcept
{
	return guard([&]() -> DAT_RETURN {
		HandleEntry e = handles().find(h, type);

		if (!e)
			return bad;
		if (e.builtin())
			return err(DAT_NOT_IMPLEMENTED);
		return foreign(e);
	});
}

/* A provider table entry, or DAT_NOT_IMPLEMENTED if it has none. */
template <class Fn, class... A>
DAT_RETURN call_provider(Fn fn, A &&...a)
{
	if (!fn)
		return err(DAT_NOT_IMPLEMENTED);
	return fn(std::forward<A>(a)...);
}

/*
 * Remember a handle a loaded provider just created under @parent (a
 * foreign IA's entry has itself as owner, so children inherit it).
 */
inline void track_foreign(DAT_RETURN r, DAT_HANDLE h, DAT_HANDLE_TYPE type,
			  const HandleEntry &parent)
{
	if (r == DAT_SUCCESS && h)
		handles().insert_foreign(h, type, parent.provider,
					 parent.owner);
}

} // namespace kdat

/*
 * Call @member on a built-in object of type @T named by @h, or @fn of the
 * foreign provider with the original arguments.
 */
#define KDAT_DISPATCH(T, h, bad, member, fn, ...)                           \
	::kdat::dispatch<T>(                                                \
		(h), (bad),                                                 \
		[&](T &o_) -> DAT_RETURN { return o_.member; },             \
		[&](const ::kdat::HandleEntry &e_) -> DAT_RETURN {          \
			return ::kdat::call_provider(e_.provider->fn,       \
						     __VA_ARGS__);           \
		})
