// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The handle table and the late-reuse object memory (see handles.hpp).
#include "handles.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <new>

namespace kdat {

namespace detail {

namespace {

struct Pool {
	std::mutex lock;
	/* size -> freed blocks, oldest first */
	std::unordered_map<std::size_t, std::deque<void *>> fifo;
};

Pool &pool()
{
	static Pool *p = new Pool;	/* outlives every object */
	return *p;
}

} // namespace

void *pool_alloc(std::size_t n)
{
	Pool &p = pool();
	{
		std::lock_guard<std::mutex> g(p.lock);
		auto it = p.fifo.find(n);

		if (it != p.fifo.end() && it->second.size() > kReuseDelay) {
			void *b = it->second.front();

			it->second.pop_front();
			return b;
		}
	}
	return ::operator new(n);
}

void pool_free(void *b, std::size_t n) noexcept
{
	Pool &p = pool();

	try {
		std::lock_guard<std::mutex> g(p.lock);
		p.fifo[n].push_back(b);
	} catch (...) {
		::operator delete(b);
	}
}

} // namespace detail

HandleTable &handles()
{
	static HandleTable *t = new HandleTable;	/* never destroyed */
	return *t;
}

void HandleTable::abandon_after_fork() noexcept
{
	for (Shard &s : shards_) {
		/* leaked on purpose: the parent's objects are not ours */
		new (&s.lock) SpinLock;
		new (&s.map) std::unordered_map<DAT_HANDLE, HandleEntry>;
	}
}

/*
 * The mutexes a new IA's calls take are held across fork() (outermost
 * first: registry, device opener, ABI report, post channels, object
 * memory; none is taken under a later one),
 * so the child does not inherit one that another thread held: its first
 * dat_ia_open would wait for ever.  The handle table's spinlocks are
 * renewed in the child instead (its entries are the parent's anyway).
 */
static void prepare_fork()
{
	registry_fork_lock().lock();
	device_opener_fork_lock().lock();
	abi_report_fork_lock().lock();
	srq_channels_fork_lock().lock();
	detail::pool().lock.lock();
}

static void release_after_fork()
{
	detail::pool().lock.unlock();
	srq_channels_fork_lock().unlock();
	abi_report_fork_lock().unlock();
	device_opener_fork_lock().unlock();
	registry_fork_lock().unlock();
}

/*
 * A forked child shares the parent's /dev/kdat file but not its rings
 * (the kernel maps them VM_DONTCOPY, the library marks them
 * MADV_DONTFORK) and the kernel refuses its calls: every handle the child
 * inherited is DAT_INVALID_HANDLE to it.  New IAs it opens work.
 */
static void child_after_fork()
{
	registry_forget_after_fork();
	release_after_fork();
	handles().abandon_after_fork();
	srq_forget_post_cache();
	process_file_forget_after_fork();
}

static const int fork_handler_registered = [] {
	return pthread_atfork(prepare_fork, release_after_fork,
			      child_after_fork);
}();

void HandleTable::insert(const std::shared_ptr<Object> &obj)
{
	Shard &s = shard(obj->handle());
	HandleEntry e;

	e.type = obj->type;
	e.obj = obj;
	e.provider = obj->provider;
	HandleEntry old;	/* what had the address: dropped outside the lock */
	std::lock_guard<SpinLock> g(s.lock);
	HandleEntry &slot = s.map[obj->handle()];

	old = std::move(slot);
	slot = std::move(e);
}

std::uint64_t HandleTable::insert_foreign(DAT_HANDLE h, DAT_HANDLE_TYPE type,
					  DAT_PROVIDER *provider,
					  const std::shared_ptr<void> &lib,
					  DAT_HANDLE owner,
					  std::uint64_t owner_seq,
					  bool named_again)
{
	static std::atomic<std::uint64_t> next_seq{ 1 };
	Shard &s = shard(h);
	HandleEntry e;

	e.type = type;
	e.provider = provider;
	e.lib = lib;
	e.owner = owner;
	e.seq = next_seq.fetch_add(1, std::memory_order_relaxed);
	e.owner_seq = owner_seq ? owner_seq : e.seq;
	HandleEntry old;	/* dropped outside the lock */
	std::lock_guard<SpinLock> g(s.lock);
	auto [it, added] = s.map.try_emplace(h, e);

	/* a create's object is new: it replaces whatever had that address */
	if (!added && !(named_again && !it->second.builtin())) {
		old = std::move(it->second);
		it->second = e;
	}
	return it->second.seq;
}

bool HandleTable::erase(DAT_HANDLE h)
{
	Shard &s = shard(h);
	HandleEntry last;	/* dropped outside the lock (object, library) */
	std::lock_guard<SpinLock> g(s.lock);
	auto it = s.map.find(h);

	if (it == s.map.end())
		return false;
	last = std::move(it->second);
	s.map.erase(it);
	return true;
}

bool HandleTable::erase_tracked(DAT_HANDLE h, std::uint64_t seq)
{
	Shard &s = shard(h);
	HandleEntry last;	/* dropped outside the lock */
	std::lock_guard<SpinLock> g(s.lock);
	auto it = s.map.find(h);

	if (it == s.map.end() || it->second.builtin() ||
	    it->second.seq != seq)
		return false;
	last = std::move(it->second);
	s.map.erase(it);
	return true;
}

void HandleTable::erase_owned_by(DAT_HANDLE ia, std::uint64_t ia_seq)
{
	for (Shard &s : shards_) {
		/* one pin of the library at most, dropped outside the lock */
		std::shared_ptr<void> lib;
		std::lock_guard<SpinLock> g(s.lock);

		for (auto it = s.map.begin(); it != s.map.end();) {
			if (!it->second.builtin() && it->second.owner == ia &&
			    it->second.owner_seq == ia_seq &&
			    it->first != ia) {
				if (!lib)
					lib = std::move(it->second.lib);
				it = s.map.erase(it);
			} else {
				++it;
			}
		}
	}
}

HandleEntry HandleTable::find(DAT_HANDLE h) const
{
	if (!h)
		return {};
	Shard &s = shard(h);
	std::lock_guard<SpinLock> g(s.lock);
	auto it = s.map.find(h);

	return it == s.map.end() ? HandleEntry{} : it->second;
}

HandleEntry HandleTable::find(DAT_HANDLE h, DAT_HANDLE_TYPE type) const
{
	if (!h)
		return {};
	Shard &s = shard(h);
	std::lock_guard<SpinLock> g(s.lock);
	auto it = s.map.find(h);

	if (it == s.map.end() || it->second.type != type)
		return {};
	return it->second;
}

DAT_PROVIDER *HandleTable::provider_of(DAT_HANDLE h) const
{
	if (!h)
		return nullptr;
	Shard &s = shard(h);
	std::lock_guard<SpinLock> g(s.lock);
	auto it = s.map.find(h);

	return it == s.map.end() ? nullptr : it->second.provider;
}

std::size_t HandleTable::size() const
{
	std::size_t n = 0;

	for (Shard &s : shards_) {
		std::lock_guard<SpinLock> g(s.lock);
		n += s.map.size();
	}
	return n;
}

} // namespace kdat
