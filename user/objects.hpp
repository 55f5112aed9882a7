// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The objects of the built-in provider ("kdat_ib").  Each DAT object is a
// thin user-space shadow of a kernel object of the same /dev/kdat context:
// it knows the kernel's ID, keeps what the DAT API must hand back as
// pointers (addresses, private data) and, for EVDs and SRQs, owns the
// mmapped ring.  The SRQ semantics themselves live in the kernel.
//
// Ownership
//   HandleTable     owns every live object (one shared_ptr each) and pins
//                   it for the duration of a call.
//   File            the process's /dev/kdat file (Device), shared by its IAs,
//                   and its ID -> object map used to translate events (weak)
//   Context         one per IA: its File, the LMR table used to check SRQ
//                   posts, the IA address.
//   objects         hold their Context and what they name (EP -> PZ, EVDs,
//                   SRQ), so a freed-but-still-in-use object stays valid.
//   Mapping         a ring is unmapped when its object is destroyed, after
//                   every in-flight call on it has returned.
//
// Locks (per object, per IA or per ID shard, never one global lock on a
// data path)
//   IdSpace::Shard::lock the file's ID map, by ID (shared for lookups)
//   IdSpace::tomb_lock_  the tombs of freed objects
//   Context::lmr_lock_   LMR table (shared for checks)
//   Evd::consume_lock    the event ring's consumer side
//   PostChannel::lock    an SRQ's post ring producer side and its counters
//                        (Srq::post_lock names it); a spin lock, never
//                        held across a system call or while taking another
//   Ep::lock, Cr::lock   storage handed out by queries and events
#pragma once

#include <dat/udat.h>
#include <dat/dat_kdat.h>
#include <uapi/kdat_abi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "errors.hpp"
#include "handles.hpp"
#include "ioctl.hpp"
#include "ring.hpp"

namespace kdat {

struct Evd;
struct Srq;
struct Ia;
struct Cno;
class Context;

/* What the library knows of an LMR to check SRQ posts before the kernel. */
struct LmrInfo {
	std::uint32_t pz_kid;
	DAT_VADDR addr;
	DAT_VLEN length;
	DAT_MEM_PRIV_FLAGS priv;
};

/*
 * THE triplet check of libdat (every caller goes through
 * Context::check_triplet or its cached form, check_cached): the checks the kernel applies to a triplet
 * (kdat_lmr_to_sge), in its order and with its codes, given the LMR the
 * context names.  The range must lie inside the LMR (no overflow: the
 * offset is compared with what remains after the length) and fit the
 * ABI's 32-bit segment length; the LMR's PZ must be @pz_kid's; its
 * privileges must include @need.
 */
[[gnu::always_inline]] inline DAT_RETURN
check_triplet_against(const DAT_LMR_TRIPLET &t, const LmrInfo &l,
		      std::uint32_t pz_kid, DAT_MEM_PRIV_FLAGS need)
{
	DAT_VLEN len = t.segment_length;
	DAT_VADDR va = t.virtual_address;

	if (__builtin_expect(len > UINT32_MAX || va < l.addr || len > l.length ||
			     va - l.addr > l.length - len, 0))
		return bad_arg(3);
	if (__builtin_expect(l.pz_kid != pz_kid, 0))
		return err(DAT_PROTECTION_VIOLATION);
	if (__builtin_expect((l.priv & need) != need, 0))
		return err(DAT_PRIVILEGES_VIOLATION);
	return DAT_SUCCESS;
}

/* The last LMR a post used, valid while the LMR table is unchanged. */
struct LmrCache {
	bool valid = false;
	DAT_LMR_CONTEXT lctx = 0;
	std::uint64_t gen = 0;
	LmrInfo info = {};
};

/* A freed object that late events may still name. */
struct Tomb {
	DAT_HANDLE handle = nullptr;
	DAT_HANDLE_TYPE type = DAT_HANDLE_TYPE_EP;
	std::weak_ptr<Srq> srq;			/* EP with SRQ */
	std::uint32_t recv_evd = 0, request_evd = 0;
};

/*
 * What a DTO completion says beyond DAT 1.2's event (KDAT_FEATURE_IB_EXT):
 * the operation (KDAT_UDTO_*, 0 from an older module or for an event that
 * is not a DTO completion), KDAT_UDTO_F_* flags and the immediate data.
 * The DAT 2.0 layer reads it (ib_ext.hpp); DAT 1.2 events do not carry it.
 */
struct DtoExt {
	std::uint32_t op = 0;
	std::uint32_t flags = 0;
	std::uint32_t immed_data = 0;
};

/* The arguments an IB-extension post adds (kdat_ioc_ep_post's tail). */
struct PostExt {
	std::uint64_t compare_add = 0;
	std::uint64_t swap = 0;
	std::uint32_t immed_data = 0;
};

/*
 * The objects of one /dev/kdat file by kernel ID (IDs are per file), and
 * the tombs of the recently freed.  Every IA of a process shares its file
 * (Ia::open), so an event on one IA's EVD may name an object of another:
 * an EP whose connection EVD is of another IA (dapltest -T L -w 2).
 */
class IdSpace {
public:
	void publish(const std::shared_ptr<Object> &o, const Context *owner);
	/* Unpublish @kid; late events naming it get @tomb (if any). */
	void retire(std::uint32_t kid, const Tomb *tomb);
	/* Unpublish every object of @owner (its IA closed); returns them. */
	std::vector<std::shared_ptr<Object>> retire_owned(const Context *owner);
	std::shared_ptr<Object> find(std::uint32_t kid) const;
	bool tomb(std::uint32_t kid, Tomb &out) const;
	/* IDs published now (the tests' leak check). */
	std::size_t size() const;

private:
	struct Entry {
		std::weak_ptr<Object> obj;
		const Context *owner;
	};
	/*
	 * Sharded by ID: events of different IAs (and EVDs) translate
	 * without sharing one lock's cache line.
	 */
	struct alignas(64) Shard {
		mutable std::shared_mutex lock;
		std::unordered_map<std::uint32_t, Entry> ids;
	};
	static constexpr std::size_t kShards = 16;
	Shard &shard(std::uint32_t kid) { return shards_[kid % kShards]; }
	const Shard &shard(std::uint32_t kid) const
	{
		return shards_[kid % kShards];
	}
	void add_tomb(std::uint32_t kid, const Tomb &tomb) noexcept;

	Shard shards_[kShards];
	mutable std::mutex tomb_lock_;
	std::unordered_map<std::uint32_t, Tomb> tombs_;
	std::deque<std::uint32_t> tomb_order_;
};

/* A /dev/kdat file and what its IDs name. */
struct File {
	std::shared_ptr<Device> dev;
	IdSpace ids;
};

class Context {
public:
	Context(std::shared_ptr<File> file, DAT_PROVIDER *provider,
		const void *face = nullptr)
		: dev(file->dev), file(std::move(file)), provider(provider),
		  face(face) {}

	const std::shared_ptr<Device> dev;
	const std::shared_ptr<File> file;
	DAT_PROVIDER *const provider;
	/* first word of every object of this IA (Object::face; null: provider) */
	const void *const face;
	std::uint32_t ia_kid = 0;
	DAT_IA_HANDLE ia_handle = nullptr;	/* value only */
	std::weak_ptr<Evd> async_evd;
	/*
	 * Events handed to the consumer, on any EVD of the IA, that a post
	 * may answer: all but the completions of the consumer's own sends
	 * and RDMA writes (Evd::pop).  A send posted with none reaped since
	 * its EP's previous post is part of a stream, whose kick may leave
	 * the device's work to the device (Ep::ring_post): a window refilled
	 * after send completions is a stream, a response to a receive is
	 * not.
	 */
	std::atomic<std::uint64_t> reaped{0};
	/*
	 * The consumer spins on dat_evd_dequeue (true from two empty answers
	 * in a row from one EVD, with no event returned by any EVD and no
	 * sleep in dat_evd_wait or dat_cno_wait between them, until its next
	 * such sleep) or sleeps for its events (false).  A spinner keeps a
	 * CPU busy: a kick deferred to the device's context would compete
	 * with it (Ep::ring_post).  Hints only: relaxed, and a lost update
	 * costs nothing but a kick's timing or one busy poll.
	 */
	std::atomic<bool> polls{false};
	/* sleeps, and events returned after an empty answer (Evd::empties) */
	std::atomic<std::uint32_t> epoch{0};
	std::atomic<bool> empty_seen{false};	/* since the epoch began */

	/* The consumer is about to block in the kernel for an event. */
	void sleeping()
	{
		epoch.fetch_add(1, std::memory_order_relaxed);
		if (polls.load(std::memory_order_relaxed))
			polls.store(false, std::memory_order_relaxed);
	}

	/*
	 * An EVD returned an event: empty answers before it are no run.  Not
	 * a locked instruction: a lost update costs one busy poll at most.
	 */
	void event_returned()
	{
		if (empty_seen.load(std::memory_order_relaxed)) {
			empty_seen.store(false, std::memory_order_relaxed);
			epoch.store(epoch.load(std::memory_order_relaxed) + 1,
				    std::memory_order_relaxed);
		}
	}
	/*
	 * Requests posted on the IA's EPs with a completion asked for, whose
	 * completion the consumer has not dequeued yet (Ep::awaited summed;
	 * a completion the kernel dropped on an overflowing EVD stays
	 * counted until its EP is freed).  A sleeping consumer's post while
	 * any are awaited is one of a pipeline, or of many connections'
	 * requests in flight (Ep::ring_post).
	 */
	std::atomic<std::int64_t> awaited{0};

	/* Publish @o (kid set): handle table and ID map. */
	void publish(const std::shared_ptr<Object> &o);
	/* Unpublish @o; late events naming it get @tomb (if any). */
	void retire(Object &o, const Tomb *tomb = nullptr);
	/* Unpublish everything (IA closed). */
	void retire_all();

	std::shared_ptr<Object> find(std::uint32_t kid) const;
	template <class T>
	std::shared_ptr<T> find(std::uint32_t kid) const
	{
		auto o = find(kid);

		if (!o || o->type != T::kType)
			return nullptr;
		return std::static_pointer_cast<T>(o);
	}
	bool tomb(std::uint32_t kid, Tomb &out) const;

	/* LMR table */
	void add_lmr(DAT_LMR_CONTEXT lctx, const LmrInfo &info);
	void remove_lmr(DAT_LMR_CONTEXT lctx);
	std::size_t lmrs() const;	/* entries now (the tests' leak check) */
	/*
	 * Check @t against the LMR its context names in this IA (unknown:
	 * DAT_INVALID_PARAMETER, arg 3), with check_triplet_against().  Takes
	 * the LMR table's lock (shared): not under a spin lock.  With @fill,
	 * a known LMR is remembered there for check_cached().
	 */
	DAT_RETURN check_triplet(const DAT_LMR_TRIPLET &t,
				 std::uint32_t pz_kid,
				 DAT_MEM_PRIV_FLAGS need,
				 LmrCache *fill = nullptr) const;
	/*
	 * The same through a one-entry cache, lock-free: false if @c does not
	 * serve @t (its LMR, or the table changed since it was filled).
	 */
	bool check_cached(const DAT_LMR_TRIPLET &t, std::uint32_t pz_kid,
			  DAT_MEM_PRIV_FLAGS need, const LmrCache &c,
			  DAT_RETURN &r) const
	{
		if (!c.valid || c.lctx != t.lmr_context ||
		    c.gen != lmr_gen_.load(std::memory_order_acquire))
			return false;
		r = check_triplet_against(t, c.info, pz_kid, need);
		return true;
	}

	/* The IA address (storage lives as long as the IA). */
	DAT_IA_ADDRESS_PTR address() { return (DAT_IA_ADDRESS_PTR)&addr_; }
	void set_address(const void *sockaddr_bytes, std::size_t len);

	/* KDAT_IOC_FREE of one object. */
	DAT_RETURN kfree(std::uint32_t kid, std::uint32_t ktype);

private:
	mutable std::shared_mutex lmr_lock_;
	std::unordered_map<DAT_LMR_CONTEXT, LmrInfo> lmrs_;
	std::atomic<std::uint64_t> lmr_gen_{0};	/* bumped on every change */

	struct sockaddr_storage addr_ = {};
};

/*
 * Owns a kernel object between its creation and its publication: frees
 * it (KDAT_IOC_FREE) if the create path fails half way.
 */
class KernelObjectGuard {
public:
	KernelObjectGuard(Context &ctx, std::uint32_t kid, std::uint32_t ktype)
		: ctx_(ctx), kid_(kid), ktype_(ktype) {}
	KernelObjectGuard(const KernelObjectGuard &) = delete;
	KernelObjectGuard &operator=(const KernelObjectGuard &) = delete;
	~KernelObjectGuard()
	{
		if (kid_)
			ctx_.kfree(kid_, ktype_);
	}
	void release() { kid_ = 0; }

private:
	Context &ctx_;
	std::uint32_t kid_;
	std::uint32_t ktype_;
};

/* Helpers every family uses. */
DAT_RETURN sockaddr_from_abi(const __u8 *bytes, std::size_t n,
			     struct sockaddr_storage &out);

/* ------------------------------------------------------------------ */

/*
 * The shape every object of the built-in provider shares: the Object
 * head, its handle type, the IA context it lives in, and the kernel
 * object of type @KType it shadows.
 */
template <DAT_HANDLE_TYPE Type, std::uint32_t KType>
struct ObjectOf : Object {
	static constexpr DAT_HANDLE_TYPE kType = Type;
	static constexpr std::uint32_t kKernelType = KType;

	explicit ObjectOf(std::shared_ptr<Context> c)
		: Object(c->provider, Type, c->face), ctx(std::move(c)) {}

	std::shared_ptr<Context> ctx;

	/*
	 * Free the kernel object, then unpublish this one (late events
	 * naming it get @tomb, if any).
	 */
	DAT_RETURN free_object(const Tomb *tomb = nullptr)
	{
		DAT_RETURN r = ctx->kfree(kid, KType);

		if (ok(r))
			ctx->retire(*this, tomb);
		return r;
	}
};

/* The arguments every dat_*_query checks first: mask, then param. */
inline DAT_RETURN query_args(std::uint64_t mask, std::uint64_t all,
			     const void *param)
{
	if (mask & ~all)
		return bad_arg(2);
	if (!param)
		return bad_arg(3);
	return DAT_SUCCESS;
}

struct Ia : ObjectOf<DAT_HANDLE_TYPE_IA, ktype::IA> {
	using ObjectOf::ObjectOf;

	std::shared_ptr<Evd> async_evd;
	std::string name;

	DAT_RETURN query(DAT_EVD_HANDLE *async_evd_handle,
			 DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
			 DAT_PROVIDER_ATTR_MASK pmask, DAT_PROVIDER_ATTR *pattr);
	DAT_RETURN close(std::uint64_t flags);
	DAT_RETURN get_fd(int *fd);

	/* Is @o a live object of this IA? */
	bool owns(const Object &o) const;

	static DAT_RETURN open(DAT_PROVIDER *provider, const std::string &name,
			       const std::string &kernel_name, DAT_COUNT qlen,
			       DAT_EVD_HANDLE *async_evd_handle,
			       DAT_IA_HANDLE *ia_handle,
			       const void *face = nullptr,
			       std::uint32_t kernel_flags = 0);

	DAT_RETURN pz_create(DAT_PZ_HANDLE *pz_handle);
	DAT_RETURN evd_create(DAT_COUNT qlen, DAT_CNO_HANDLE cno,
			      std::uint64_t flags, DAT_EVD_HANDLE *evd_handle);
	DAT_RETURN lmr_create(std::uint64_t type, DAT_REGION_DESCRIPTION region,
			      DAT_VLEN length, DAT_PZ_HANDLE pz_handle,
			      std::uint64_t priv, DAT_LMR_HANDLE *lmr_handle,
			      DAT_LMR_CONTEXT *lmr_context,
			      DAT_RMR_CONTEXT *rmr_context,
			      DAT_VLEN *registered_length,
			      DAT_VADDR *registered_address);
	DAT_RETURN lmr_sync(const DAT_LMR_TRIPLET *segs, DAT_VLEN n);
	DAT_RETURN srq_create(DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR *attr,
			      DAT_SRQ_HANDLE *srq_handle);
	DAT_RETURN ep_create(DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
			     DAT_EVD_HANDLE request_evd,
			     DAT_EVD_HANDLE connect_evd, DAT_SRQ_HANDLE srq,
			     const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_handle,
			     bool with_srq);
	DAT_RETURN psp_create(DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
			      std::uint64_t flags, DAT_PSP_HANDLE *psp_handle);
	DAT_RETURN rsp_create(DAT_CONN_QUAL qual, DAT_EP_HANDLE ep,
			      DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *rsp_handle);
	DAT_RETURN cno_create(DAT_OS_WAIT_PROXY_AGENT agent,
			      DAT_CNO_HANDLE *cno_handle);
};

/*
 * A Consumer Notification Object: the kernel's CNO (kernel/cno.c), which
 * the kernel triggers where it writes an event to an EVD of it.
 */
struct Cno : ObjectOf<DAT_HANDLE_TYPE_CNO, ktype::CNO> {
	using ObjectOf::ObjectOf;

	std::mutex agent_lock;
	DAT_OS_WAIT_PROXY_AGENT agent = { nullptr, nullptr };	/* agent_lock */

	DAT_RETURN query(std::uint64_t mask, DAT_CNO_PARAM *param);
	DAT_RETURN modify_agent(DAT_OS_WAIT_PROXY_AGENT a);
	DAT_RETURN wait(DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd);
	DAT_RETURN free();
};

struct Pz : ObjectOf<DAT_HANDLE_TYPE_PZ, ktype::PZ> {
	using ObjectOf::ObjectOf;


	DAT_RETURN query(std::uint64_t mask, DAT_PZ_PARAM *param);
	DAT_RETURN free();
};

struct Evd : ObjectOf<DAT_HANDLE_TYPE_EVD, ktype::EVD> {
	using ObjectOf::ObjectOf;

	DAT_EVD_FLAGS flags = DAT_EVD_DEFAULT_FLAG;
	DAT_COUNT kqlen = 0;			/* the kernel's qlen */
	std::atomic<DAT_COUNT> qlen{0};		/* what query reports */
	bool is_async = false;
	Mapping map;
	ring::EventConsumer ring;

	std::mutex consume_lock;

	/* completions this EVD may take: a spinner busy-polls (dequeue) */
	std::atomic<bool> busy_poll{false};
	/*
	 * Empty answers of dat_evd_dequeue in a row (0-2, the low two bits)
	 * within the epoch in the rest (Context::epoch): per EVD, so
	 * draining several EVDs once after a wake-up is no spin.
	 */
	std::atomic<std::uint32_t> empties{0};
	std::atomic<bool> waiter{false};
	std::atomic<bool> enabled{true};
	std::atomic<bool> waitable{true};	/* written under waitable_lock */
	std::mutex waitable_lock;

	/* Map the ring the kernel created (ring_offset, ring_size). */
	DAT_RETURN attach(std::uint64_t offset, std::uint64_t size);

	/* @ext: where a DTO event's operation and immediate data go */
	DAT_RETURN dequeue(DAT_EVENT *event, DtoExt *ext = nullptr);
	DAT_RETURN wait(DAT_TIMEOUT timeout, DAT_COUNT threshold,
			DAT_EVENT *event, DAT_COUNT *nmore,
			DtoExt *ext = nullptr);
	DAT_RETURN query(std::uint64_t mask, DAT_EVD_PARAM *param);
	DAT_RETURN resize(DAT_COUNT qlen);
	DAT_RETURN post_se(const DAT_EVENT *event);
	DAT_RETURN free();
	DAT_RETURN set_enabled(bool on);
	DAT_RETURN set_waitable(bool on);

	/*
	 * dat_evd_modify_cno; the kernel knows the CNO and, while there is
	 * one, whether the EVD is enabled (KDAT_IOC_EVD_NOTIFY).
	 */
	std::mutex notify_lock;
	std::shared_ptr<Cno> cno;		/* notify_lock */
	DAT_RETURN set_cno(std::shared_ptr<Cno> c);

	/* Events ready to be dequeued. */
	std::uint32_t count();

	/* Turn one ring entry into a DAT_EVENT (with its side effects). */
	/* @refused: the SRQ whose refused ring entry this event reports */
	void translate(const struct kdat_uevent &u, DAT_EVENT &ev,
		       std::shared_ptr<Srq> &refused, DtoExt *ext = nullptr);


private:
	bool pop(DAT_EVENT &ev, DtoExt *ext = nullptr);
	DAT_RETURN ctl(std::uint32_t op);	/* KDAT_IOC_EVD_CTL */
};

struct Pz;

struct Lmr : ObjectOf<DAT_HANDLE_TYPE_LMR, ktype::LMR> {
	using ObjectOf::ObjectOf;

	std::shared_ptr<Pz> pz;
	DAT_MEM_TYPE mem_type = DAT_MEM_TYPE_VIRTUAL;
	DAT_REGION_DESCRIPTION region = {};
	DAT_VLEN length = 0;
	DAT_MEM_PRIV_FLAGS priv = DAT_MEM_PRIV_NONE_FLAG;
	DAT_LMR_CONTEXT lmr_context = 0;
	DAT_RMR_CONTEXT rmr_context = 0;
	DAT_VLEN registered_size = 0;
	DAT_VADDR registered_address = 0;

	DAT_RETURN query(std::uint64_t mask, DAT_LMR_PARAM *param);
	DAT_RETURN free();
};

/*
 * What dat_srq_post_recv needs to reach an SRQ without pinning it: a
 * pin is two atomic read-modify-writes per call, as dear as the rest of a
 * post.  Channels are never freed, only recycled, so a thread that cached
 * one for a handle may always lock it; under the lock, `handle` says
 * whether it still serves that handle, and while it does `srq` is alive:
 * an SRQ detaches its channel under the lock when it is freed (and at the
 * latest in its destructor, before its ring is unmapped).
 */
struct PostChannel {
	SpinLock lock;
	DAT_HANDLE handle = nullptr;	/* lock */
	Srq *srq = nullptr;		/* lock */
	PostChannel *next_free = nullptr;

	/* A channel serving @srq (from the recycled ones if any). */
	static PostChannel *attach(Srq *srq);
	/* Stop serving (idempotent); recycle() once the SRQ is gone. */
	void detach();
	void recycle();
};

struct Srq : ObjectOf<DAT_HANDLE_TYPE_SRQ, ktype::SRQ> {
	explicit Srq(std::shared_ptr<Context> c)
		: ObjectOf(std::move(c)), chan(PostChannel::attach(this)),
		  post_lock(chan->lock) {}
	~Srq();

	std::shared_ptr<Pz> pz;
	DAT_COUNT max_recv_iov = 0;
	std::atomic<DAT_COUNT> max_recv_dtos{0};
	Mapping map;
	ring::PostProducer ring;
	bool post_by_ioctl = false;

	PostChannel *const chan;

	/*
	 * Outstanding buffers as the library counts them:
	 *   posted - returned - credit
	 * posted:   receives handed to the ring or the kernel (post_lock)
	 * returned: SRQ receive completions the consumer dequeued (the
	 *           event names the SRQ: kdat_uevent.srq) and refused ring
	 *           entries (atomic; any dequeuing thread)
	 * credit:   returns the kernel counted without an event we saw
	 *           (lost to a full ring, left in a freed EVD, naming no
	 *           EP): the post ring header's `unseen`, read from shared
	 *           memory, never asked for (post_lock)
	 *
	 * post_lock is a spin lock held for a few hundred instructions: never
	 * across a system call (the kick, the ioctl post) nor while waiting for another lock.
	 */
	SpinLock &post_lock;			/* the channel's */
	LmrCache lmr_cache;			/* post_lock */
	std::uint64_t posted = 0;
	std::atomic<std::uint64_t> returned{0};
	std::uint64_t credit = 0;
	std::uint32_t unseen_seen = 0;		/* post_lock: header's unseen, as last read */
	std::uint64_t returned_seen = 0;	/* post_lock: returned, as last read */
	std::atomic<bool> kick_again{false};	/* the last kick left entries */

	struct Refused {
		DAT_UINT64 cookie;
		DAT_RETURN why;
	};
	std::mutex refused_lock;
	std::deque<Refused> refused;

	/* What post_fast did. */
	enum class FastPost {
		no,		/* nothing: take post_recv's full path */
		done,		/* posted */
		kick,		/* posted; the kernel asked for a kick */
	};

	DAT_RETURN attach(std::uint64_t offset, std::uint64_t size);
	DAT_RETURN post_recv(DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
			     DAT_DTO_COOKIE cookie, bool force_ioctl);
	/*
	 * The common post (one segment through the ring, its LMR cached,
	 * room everywhere) with post_lock held; FastPost::no, having done
	 * nothing, if the post needs post_recv's full path.  A kick it asks
	 * for is the caller's, after it dropped post_lock (kick_posted()).
	 */
	FastPost post_fast(DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
			   DAT_DTO_COOKIE cookie);
	/* Kick for a receive already posted: only a vanished SRQ is news. */
	[[gnu::noinline, gnu::cold]] DAT_RETURN kick_posted();
	DAT_RETURN query(std::uint64_t mask, DAT_SRQ_PARAM *param);
	DAT_RETURN resize(DAT_COUNT max);
	DAT_RETURN set_lw(DAT_COUNT lw);
	DAT_RETURN free();
	DAT_RETURN get_refused(DAT_DTO_COOKIE *cookie, DAT_RETURN *why);

	/* Event side: one buffer came back. */
	void on_recv_completion() { returned.fetch_add(1); }
	void on_refused(DAT_UINT64 cookie, DAT_RETURN why);
	/* Its refusal was dequeued: entries held back behind it may go. */
	void after_refusal_dequeued();

	std::uint64_t outstanding() const	/* post_lock held */
	{
		std::uint64_t back = returned.load() + credit;

		return posted > back ? posted - back : 0;
	}

	/*
	 * Room for one more receive (post_lock held)?  `returned` only
	 * grows, so the value read last over-counts what is outstanding:
	 * while that still leaves room, the line the dequeuing threads
	 * write is not read at all.
	 */
	bool room()
	{
		std::uint64_t max = (std::uint64_t)max_recv_dtos.load(
			std::memory_order_relaxed);

		if (posted < returned_seen + credit + max)
			return true;
		returned_seen = returned.load();
		std::uint32_t u = ring.unseen();
		credit += (std::uint32_t)(u - unseen_seen);
		unseen_seen = u;
		return posted < returned_seen + credit + max;
	}

private:
	[[gnu::noinline, gnu::cold]] DAT_RETURN kick();	/* without post_lock */
	[[gnu::noinline]] DAT_RETURN post_slow(DAT_COUNT n,
					       const DAT_LMR_TRIPLET *iov,
					       DAT_DTO_COOKIE cookie, bool force_ioctl);
	DAT_RETURN kquery(std::uint64_t mask, struct kdat_ioc_srq_query &q);
	DAT_RETURN post_ioctl(DAT_COUNT n, const struct kdat_useg *segs,
			      DAT_UINT64 cookie);
};

struct Ep : ObjectOf<DAT_HANDLE_TYPE_EP, ktype::EP> {
	using ObjectOf::ObjectOf;

	std::shared_ptr<Pz> pz;
	std::shared_ptr<Evd> recv_evd, request_evd, connect_evd;
	std::shared_ptr<Srq> srq;

	std::mutex lock;
	std::uint8_t pdata[KDAT_PDATA_LEN] = {};	/* last connection event */
	struct sockaddr_storage remote = {};		/* last query */

	/*
	 * The send ring (KDAT_FEATURE_SEND_RING; ep.cpp).  post_lock (a spin
	 * lock, never held across a system call or while taking another)
	 * covers the producer side, the limits and the ioctl post count.
	 */
	struct Limits {
		std::uint64_t max_message_size = 0, max_rdma_size = 0;
		std::int32_t max_request_iov = 0, max_rdma_read_iov = 0,
			     max_rdma_write_iov = 0, max_rdma_read_out = 0;
	};
	Mapping sring_map;
	ring::SendProducer sring;
	SpinLock post_lock;
	Limits lim;
	LmrCache lmr_cache;
	std::uint32_t ioctl_posted = 0;	/* send-queue posts by ioctl */
	bool post_by_ioctl = false;
	/* KDAT_EP_KICK: the rule (Ep::ring_post), =inline or =defer */
	enum class Kick { rule, inline_always, defer_suppressed } kick_mode =
		Kick::rule;
	/* Context::reaped at the last post (post_lock): is this a stream? */
	std::uint64_t reaped_at_post = ~std::uint64_t{0};
	/*
	 * This EP's share of Context::awaited: added before the post can
	 * complete (ring and ioctl posts alike), taken away as the consumer
	 * dequeues a completion of any of its requests.
	 */
	std::atomic<std::int64_t> awaited{0};
	bool awaits(std::uint64_t flags) const;
	void await_one();
	void request_reaped();		/* a completion of one dequeued */
	void forget_awaited();		/* freed: its share leaves the IA's */

	DAT_RETURN attach_ring(std::uint64_t offset, std::uint64_t size);
	DAT_RETURN refresh_limits();
	bool ring_post(std::uint32_t op, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
		       DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote_iov,
		       std::uint64_t flags, const PostExt *x, DAT_RETURN &r);
	DAT_RETURN post_ioctl(std::uint32_t op, DAT_COUNT n,
			      const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			      const DAT_RMR_TRIPLET *remote_iov,
			      std::uint64_t flags, const PostExt *x);
	DAT_RETURN kick(std::uint32_t how = 0);	/* KDAT_EP_KICK_* */

	Tomb tomb();

	DAT_RETURN query(DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param);
	DAT_RETURN modify(DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param);
	DAT_RETURN connect(DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
			   DAT_TIMEOUT timeout, DAT_COUNT pdata_size,
			   const DAT_PVOID pdata, std::uint64_t qos,
			   std::uint64_t flags);
	DAT_RETURN disconnect(std::uint64_t flags);
	/* @x: the IB extensions' arguments (ib_ext.hpp) */
	DAT_RETURN post(std::uint32_t op, DAT_COUNT n,
			const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			const DAT_RMR_TRIPLET *remote_iov,
			std::uint64_t flags, const PostExt *x = nullptr);
	DAT_RETURN get_status(DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
			      DAT_BOOLEAN *request_idle);
	DAT_RETURN reset();
	DAT_RETURN free();
};

struct Psp : ObjectOf<DAT_HANDLE_TYPE_PSP, ktype::PSP> {
	using ObjectOf::ObjectOf;

	std::shared_ptr<Evd> evd;
	DAT_CONN_QUAL conn_qual = 0;
	DAT_PSP_FLAGS flags = DAT_PSP_CONSUMER_FLAG;

	DAT_RETURN query(std::uint64_t mask, DAT_PSP_PARAM *param);
	DAT_RETURN free();
};

/* A Reserved Service Point: the kernel keeps its EP's state. */
struct Rsp : ObjectOf<DAT_HANDLE_TYPE_RSP, ktype::RSP> {
	using ObjectOf::ObjectOf;

	std::shared_ptr<Evd> evd;
	std::shared_ptr<Ep> ep;

	DAT_RETURN query(std::uint64_t mask, DAT_RSP_PARAM *param);
	DAT_RETURN free();
};

struct Cr : ObjectOf<DAT_HANDLE_TYPE_CR, ktype::CR> {
	using ObjectOf::ObjectOf;

	DAT_CONN_QUAL conn_qual = 0;

	std::mutex lock;
	struct sockaddr_storage remote = {};
	std::uint8_t pdata[KDAT_PDATA_LEN] = {};

	/* The CR object of kernel ID @kid, made when first seen. */
	static std::shared_ptr<Cr> get(const std::shared_ptr<Context> &ctx,
				       std::uint32_t kid, DAT_CONN_QUAL qual);

	DAT_RETURN query(std::uint64_t mask, DAT_CR_PARAM *param);
	DAT_RETURN accept(DAT_EP_HANDLE ep, DAT_COUNT pdata_size,
			  const DAT_PVOID pdata);
	DAT_RETURN reject();
};

/* Is @u a post-ring entry the kernel refused (evd.cpp)? */
bool is_refusal(const struct kdat_uevent &u);

/* Every triplet of a post as the ABI lays it out (n <= KDAT_MAX_IOV). */
void to_useg(const DAT_LMR_TRIPLET *iov, DAT_COUNT n, struct kdat_useg *out);

} // namespace kdat
