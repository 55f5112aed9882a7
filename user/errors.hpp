// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// DAT_RETURN helpers: building statuses, mapping errno values of the
// character device to statuses, and the C boundary guard that keeps C++
// exceptions from ever crossing into a C caller.
#pragma once

#include <dat/udat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace kdat {

constexpr DAT_RETURN err(DAT_UINT32 type, DAT_UINT32 sub = DAT_NO_SUBTYPE)
{
	return DAT_ERROR(type, sub);
}

constexpr DAT_RETURN bad_arg(int pos)
{
	return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1 + (pos - 1));
}

constexpr DAT_RETURN bad_handle(DAT_UINT32 sub)
{
	return err(DAT_INVALID_HANDLE, sub);
}

constexpr DAT_RETURN no_memory()
{
	return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
}

constexpr bool ok(DAT_RETURN r)
{
	return r == DAT_SUCCESS;
}

constexpr bool is_type(DAT_RETURN r, DAT_UINT32 type)
{
	return DAT_GET_TYPE(r) == type;
}

/*
 * An ioctl that failed at the ABI level (-1/errno) rather than with a
 * DAT_RETURN.  These are not the consumer's doing except EFAULT (a bad
 * pointer it gave us) and resource exhaustion.
 */
constexpr DAT_RETURN errno_to_dat(int e)
{
	switch (e) {
	case 0:
		return DAT_SUCCESS;
	case EFAULT:
		return err(DAT_INVALID_PARAMETER);
	case ENOMEM:
	case ENOSPC:
		return no_memory();
	case EMFILE:
	case ENFILE:
		return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_DEVICE);
	case EINTR:
		return err(DAT_INTERRUPTED_CALL);
	case EACCES:
	case EPERM:
		return err(DAT_PRIVILEGES_VIOLATION);
	case ENOENT:
	case ENODEV:
	case ENXIO:
		return err(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
	default: /* EINVAL, E2BIG, ENOTTY: the library and module disagree */
		return err(DAT_INTERNAL_ERROR);
	}
}

/*
 * The bits of a C enum argument.  A C caller may pass any value in a
 * DAT_*_FLAGS or DAT_*_MASK, which C++ must not read as the enum type:
 * entry points take the bytes and work with integers.
 */
template <class E>
std::uint64_t raw(const E &e) noexcept
{
	if constexpr (std::is_enum_v<E>) {
		std::underlying_type_t<E> v;

		std::memcpy(&v, &e, sizeof(v));
		return (std::uint64_t)v;
	} else {
		return (std::uint64_t)e;
	}
}

/*
 * Run @f and turn any exception into a status.  Every C entry point of
 * the library goes through this.
 */
template <class F>
DAT_RETURN guard(F &&f) noexcept
{
	try {
		return std::forward<F>(f)();
	} catch (const std::bad_alloc &) {
		return no_memory();
	} catch (...) {
		return err(DAT_INTERNAL_ERROR);
	}
}

} // namespace kdat
