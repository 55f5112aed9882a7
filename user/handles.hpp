// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// DAT handles and the process-wide table of live handles.
//
// A handle is the address of an object whose first member is the table a
// registry dispatches through (DAT_HANDLE_TO_PROVIDER works on it): the
// DAT 1.2 DAT_PROVIDER normally, the DAT 2.0 table for objects of an IA
// opened through libdaplkdat (user/dat2/).  The core itself always
// dispatches through the DAT 1.2 table the entry names.  Before any
// handle is dereferenced it is looked up in the HandleTable, which maps
// the address to the owning shared_ptr: a NULL, freed, stale, foreign or
// wrongly typed handle is simply not found (DAT_INVALID_HANDLE), and a
// found object stays pinned for the duration of the call, so a concurrent
// free never pulls it out from under a caller.
//
// Object memory is recycled late: freed objects go to a FIFO per size
// and are reused only after kReuseDelay more objects of that size were
// freed, so a stale handle does not soon name a new object.
//
// Handles of dynamically loaded providers are tracked too (without an
// object of ours), so the registry can validate and dispatch them.
#pragma once

#include <dat/udat.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace kdat {

/* A test-and-set lock for short critical sections (Lockable). */
class SpinLock {
public:
	void lock() noexcept
	{
		while (f_.exchange(true, std::memory_order_acquire))
			while (f_.load(std::memory_order_relaxed))
				relax();
	}
	void unlock() noexcept { f_.store(false, std::memory_order_release); }

private:
	/* a spin-wait hint where the CPU has one; portable elsewhere */
	static void relax() noexcept
	{
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
		asm volatile("yield" ::: "memory");
#elif defined(__powerpc64__)
		asm volatile("or 27,27,27" ::: "memory");
#endif
	}

	std::atomic<bool> f_{false};
};

/* Common head of every object of the built-in provider. */
struct Object {
	const void *face;		/* must stay first: see above */
	DAT_PROVIDER *provider;		/* the DAT 1.2 table the core uses */
	DAT_HANDLE_TYPE type;
	std::uint32_t kid = 0;		/* the kernel's ID in our context */
	std::atomic<DAT_UINT64> context{0};	/* consumer context */

	Object(DAT_PROVIDER *p, DAT_HANDLE_TYPE t, const void *f = nullptr)
		: face(f ? f : p), provider(p), type(t) {}
	Object(const Object &) = delete;
	Object &operator=(const Object &) = delete;

	DAT_HANDLE handle() { return static_cast<DAT_HANDLE>(this); }
};

static_assert(std::is_standard_layout_v<Object>);
static_assert(offsetof(Object, face) == 0);

/* ------------------------------------------------------------------ */
/* Late-reuse memory for objects                                        */

namespace detail {
void *pool_alloc(std::size_t n);
void pool_free(void *p, std::size_t n) noexcept;
} // namespace detail

constexpr std::size_t kReuseDelay = 256;

template <class T>
struct LateReuseAllocator {
	using value_type = T;

	LateReuseAllocator() = default;
	template <class U>
	LateReuseAllocator(const LateReuseAllocator<U> &) {}

	T *allocate(std::size_t n)
	{
		return static_cast<T *>(detail::pool_alloc(n * sizeof(T)));
	}
	void deallocate(T *p, std::size_t n) noexcept
	{
		detail::pool_free(p, n * sizeof(T));
	}
	template <class U>
	bool operator==(const LateReuseAllocator<U> &) const { return true; }
};

/* Create an object of the built-in provider (not yet published). */
template <class T, class... A>
std::shared_ptr<T> make_object(A &&...a)
{
	return std::allocate_shared<T>(LateReuseAllocator<T>(),
				       std::forward<A>(a)...);
}

/* ------------------------------------------------------------------ */
/* The table of live handles                                            */

struct HandleEntry {
	DAT_HANDLE_TYPE type = DAT_HANDLE_TYPE_IA;
	std::shared_ptr<Object> obj;	/* built-in provider; null if foreign */
	DAT_PROVIDER *provider = nullptr;
	/*
	 * The library a loaded provider lives in (null for the built-in one,
	 * a table the application registered, and one a library registered
	 * from another thread under a name not in dat.conf): every copy
	 * holds it mapped, so a call that found this entry keeps the library
	 * loaded until it returns, whatever dat_ia_close another thread runs.
	 */
	std::shared_ptr<void> lib;
	DAT_HANDLE owner = nullptr;	/* the IA it belongs to (foreign) */
	/*
	 * Which tracking of a foreign handle this is: a loaded provider may
	 * give a freed handle's address to its next object before the free's
	 * caller forgets the old one (erase_tracked).
	 */
	std::uint64_t seq = 0;
	std::uint64_t owner_seq = 0;	/* the owning IA's tracking */

	explicit operator bool() const { return provider != nullptr; }
	bool builtin() const { return obj != nullptr; }
};

class HandleTable {
public:
	/* Publish an object of ours under its address. */
	void insert(const std::shared_ptr<Object> &obj);
	/*
	 * Track a handle of a loaded provider (in library @lib), owned by IA
	 * @owner of tracking @owner_seq (0: @h is that IA); returns its
	 * tracking.  @named_again (a handle a query names again, not a
	 * create's new object, which replaces any): keep the tracking @h
	 * already has.
	 */
	std::uint64_t insert_foreign(DAT_HANDLE h, DAT_HANDLE_TYPE type,
				     DAT_PROVIDER *provider,
				     const std::shared_ptr<void> &lib,
				     DAT_HANDLE owner,
				     std::uint64_t owner_seq = 0,
				     bool named_again = false);
	/* Forget a handle; false if it was not there. */
	bool erase(DAT_HANDLE h);
	/* Forget @h if it is still the tracking @seq; false if not. */
	bool erase_tracked(DAT_HANDLE h, std::uint64_t seq);
	/* Forget every foreign handle owned by @ia (not @ia itself). */
	void erase_owned_by(DAT_HANDLE ia, std::uint64_t ia_seq);

	/* The entry of @h, empty if @h is not live. */
	HandleEntry find(DAT_HANDLE h) const;
	/* The entry of @h if it is live and of @type. */
	HandleEntry find(DAT_HANDLE h, DAT_HANDLE_TYPE type) const;
	/* The provider of @h, or null: no copy of the entry (no pins). */
	DAT_PROVIDER *provider_of(DAT_HANDLE h) const;

	std::size_t size() const;

	/*
	 * In a forked child: forget every handle of the parent, without
	 * running a destructor (their rings are not mapped in the child and
	 * another thread of the parent may have been inside a shard).
	 */
	void abandon_after_fork() noexcept;

private:
	static constexpr std::size_t kShards = 64;

	struct Shard {
		mutable SpinLock lock;
		std::unordered_map<DAT_HANDLE, HandleEntry> map;
	};

	Shard &shard(DAT_HANDLE h) const
	{
		/* 64-bit arithmetic whatever the pointer width */
		std::uint64_t v = reinterpret_cast<std::uintptr_t>(h);

		v ^= v >> 17;
		v *= 0x9e3779b97f4a7c15ull;
		return shards_[(v >> 40) % kShards];
	}

	mutable std::array<Shard, kShards> shards_;
};

/* The process-wide table (never destroyed). */
HandleTable &handles();

/* Forget this thread's cached SRQ post channel (srq.cpp; after fork). */
void srq_forget_post_cache() noexcept;
/* ia.cpp: the child opens its own /dev/kdat file */
void process_file_forget_after_fork() noexcept;
/*
 * The process-wide mutexes a fork must not copy held (handles.cpp takes
 * them around fork(), outermost first): the provider registry's
 * (registry.cpp), the device opener's and the ABI report's (device.cpp)
 * and the SRQ post channels' free list's (srq.cpp).
 */
std::mutex &registry_fork_lock() noexcept;
std::mutex &device_opener_fork_lock() noexcept;
std::mutex &abi_report_fork_lock() noexcept;
std::mutex &srq_channels_fork_lock() noexcept;
/* registry.cpp: in the child, with its lock held; see Registry */
void registry_forget_after_fork() noexcept;

/* A pinned object of the built-in provider, or null. */
template <class T>
std::shared_ptr<T> lookup(DAT_HANDLE h)
{
	HandleEntry e = handles().find(h, T::kType);

	if (!e.builtin())
		return nullptr;
	return std::static_pointer_cast<T>(e.obj);
}

} // namespace kdat
