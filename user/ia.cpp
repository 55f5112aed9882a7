// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Interface Adapters: dat_ia_open (through the registry), dat_ia_query,
// dat_ia_close, the calls that take any handle, the per-IA Context and
// the process's /dev/kdat file, which all its IAs share.
//
// KDAT_IOC_IA_OPEN by the kernel's IA name creates the IA and its async
// EVD, whose event ring we map.  Closing the IA (KDAT_IOC_IA_CLOSE) frees
// every object under it in the kernel; the library then unpublishes their
// handles, and the file is closed once the last object of the last IA is
// gone.
#include <cstring>
#include <new>

#include "dispatch.hpp"
#include "hot.hpp"
#include "objects.hpp"
#include "registry.hpp"

namespace kdat {

/* ------------------------------------------------------------------ */
/* Context                                                              */

constexpr std::size_t kMaxTombs = 1024;

void IdSpace::publish(const std::shared_ptr<Object> &o, const Context *owner)
{
	Shard &sh = shard(o->kid);
	{
		std::unique_lock<std::shared_mutex> g(sh.lock);
		sh.ids[o->kid] = Entry{o, owner};
	}
	std::lock_guard<std::mutex> g(tomb_lock_);
	tombs_.erase(o->kid);
}

/*
 * After the object is freed: with no memory for its tomb, a late event
 * naming it reads as one of an unknown object rather than the free
 * failing (it did not).
 */
void IdSpace::add_tomb(std::uint32_t kid, const Tomb &tomb) noexcept
{
	std::lock_guard<std::mutex> g(tomb_lock_);
	if (tombs_.size() >= kMaxTombs && !tomb_order_.empty()) {
		tombs_.erase(tomb_order_.front());
		tomb_order_.pop_front();
	}
	try {
		tomb_order_.push_back(kid);
	} catch (...) {
		return;
	}
	try {
		tombs_[kid] = tomb;
	} catch (...) {
		tomb_order_.pop_back();
	}
}

std::size_t IdSpace::size() const
{
	std::size_t n = 0;

	for (const Shard &sh : shards_) {
		std::shared_lock<std::shared_mutex> g(sh.lock);
		n += sh.ids.size();
	}
	return n;
}

void IdSpace::retire(std::uint32_t kid, const Tomb *tomb)
{
	Shard &sh = shard(kid);
	{
		std::unique_lock<std::shared_mutex> g(sh.lock);
		sh.ids.erase(kid);
	}
	if (tomb)
		add_tomb(kid, *tomb);
}

std::vector<std::shared_ptr<Object>> IdSpace::retire_owned(const Context *owner)
{
	std::vector<std::shared_ptr<Object>> all;

	for (Shard &sh : shards_) {
		std::unique_lock<std::shared_mutex> g(sh.lock);
		for (auto it = sh.ids.begin(); it != sh.ids.end();) {
			if (it->second.owner != owner) {
				++it;
				continue;
			}
			if (auto o = it->second.obj.lock())
				all.push_back(std::move(o));
			it = sh.ids.erase(it);
		}
	}
	/*
	 * An EP's connection EVD may be of another IA, still open: events
	 * it holds for these EPs still name them (and count their SRQ
	 * buffers), as after dat_ep_free.
	 */
	for (auto &o : all)
		if (o->type == DAT_HANDLE_TYPE_EP)
			add_tomb(o->kid, static_cast<Ep &>(*o).tomb());
	return all;
}

std::shared_ptr<Object> IdSpace::find(std::uint32_t kid) const
{
	const Shard &sh = shard(kid);
	std::shared_lock<std::shared_mutex> g(sh.lock);
	auto it = sh.ids.find(kid);

	return it == sh.ids.end() ? nullptr : it->second.obj.lock();
}

bool IdSpace::tomb(std::uint32_t kid, Tomb &out) const
{
	std::lock_guard<std::mutex> g(tomb_lock_);
	auto it = tombs_.find(kid);

	if (it == tombs_.end())
		return false;
	out = it->second;
	return true;
}

/* All or nothing: a create that fails here leaves no trace of the object. */
void Context::publish(const std::shared_ptr<Object> &o)
{
	file->ids.publish(o, this);
	try {
		handles().insert(o);
	} catch (...) {
		file->ids.retire(o->kid, nullptr);
		throw;
	}
}

/* A retired SRQ's handle stops reaching it from the post fast path too. */
static void detach_posts(Object &o)
{
	if (o.type == DAT_HANDLE_TYPE_SRQ)
		static_cast<Srq &>(o).chan->detach();
}

void Context::retire(Object &o, const Tomb *tomb)
{
	detach_posts(o);
	handles().erase(o.handle());
	file->ids.retire(o.kid, tomb);
}

void Context::retire_all()
{
	for (auto &o : file->ids.retire_owned(this)) {
		detach_posts(*o);
		handles().erase(o->handle());
	}
}

std::shared_ptr<Object> Context::find(std::uint32_t kid) const
{
	return file->ids.find(kid);
}

bool Context::tomb(std::uint32_t kid, Tomb &out) const
{
	return file->ids.tomb(kid, out);
}

void Context::add_lmr(DAT_LMR_CONTEXT lctx, const LmrInfo &info)
{
	std::unique_lock<std::shared_mutex> g(lmr_lock_);
	lmrs_[lctx] = info;
	lmr_gen_.fetch_add(1, std::memory_order_release);
}

std::size_t Context::lmrs() const
{
	std::shared_lock<std::shared_mutex> g(lmr_lock_);
	return lmrs_.size();
}

void Context::remove_lmr(DAT_LMR_CONTEXT lctx)
{
	std::unique_lock<std::shared_mutex> g(lmr_lock_);
	lmrs_.erase(lctx);
	lmr_gen_.fetch_add(1, std::memory_order_release);
}

KDAT_DATA_PATH(512)
DAT_RETURN Context::check_triplet(const DAT_LMR_TRIPLET &t,
				  std::uint32_t pz_kid,
				  DAT_MEM_PRIV_FLAGS need, LmrCache *fill) const
{
	std::shared_lock<std::shared_mutex> g(lmr_lock_);
	auto it = lmrs_.find(t.lmr_context);

	if (it == lmrs_.end())
		return bad_arg(3);
	if (fill) {
		fill->valid = true;
		fill->lctx = t.lmr_context;
		/* stable under the lock: writers bump it holding it */
		fill->gen = lmr_gen_.load(std::memory_order_relaxed);
		fill->info = it->second;
	}
	return check_triplet_against(t, it->second, pz_kid, need);
}

void Context::set_address(const void *bytes, std::size_t len)
{
	if (len > sizeof(addr_))
		len = sizeof(addr_);
	/* the consumer may be reading it: only write what changed */
	if (std::memcmp(&addr_, bytes, len))
		std::memcpy(&addr_, bytes, len);
}

DAT_RETURN Context::kfree(std::uint32_t kid, std::uint32_t ktype)
{
	struct kdat_ioc_free f = {};

	f.handle = kid;
	f.type = ktype;
	return call(*dev, KDAT_IOC_FREE, f);
}

DAT_RETURN sockaddr_from_abi(const __u8 *bytes, std::size_t n,
			     struct sockaddr_storage &out)
{
	std::memset(&out, 0, sizeof(out));
	std::memcpy(&out, bytes, n < sizeof(out) ? n : sizeof(out));
	return DAT_SUCCESS;
}

void to_useg(const DAT_LMR_TRIPLET *iov, DAT_COUNT n, struct kdat_useg *out)
{
	for (DAT_COUNT i = 0; i < n; i++) {
		out[i].lmr_context = iov[i].lmr_context;
		out[i].pad = 0;
		out[i].addr = iov[i].virtual_address;
		out[i].length = iov[i].segment_length;
	}
}

/* ------------------------------------------------------------------ */
/* Open, query, close                                                   */

/*
 * The process's /dev/kdat file, shared by all its IAs as OFED's provider
 * shares one verbs context among the IAs of a device: IDs are per file, so
 * one IA's objects can be named in another's calls, and a process holds
 * one file's worth of the module's per-file limits, however many IAs it
 * opens.  A forked child opens its own (the kernel maps it no ring of its
 * parent's file; process_file_forget_after_fork).  A test's device
 * (set_device_opener) is one per IA.
 */
namespace {

struct ProcessFile {
	std::mutex lock;
	std::weak_ptr<File> file;
};

ProcessFile &process_file_state()
{
	static ProcessFile *pf = new ProcessFile;	/* never destroyed */
	return *pf;
}

} // namespace

/*
 * A forked child: the parent's file serves it nothing, and another of the
 * parent's threads may have held the lock.  Leaked on purpose, as the
 * handle table is (HandleTable::abandon_after_fork).
 */
void process_file_forget_after_fork() noexcept
{
	new (&process_file_state()) ProcessFile;
}

static std::shared_ptr<File> process_file(DAT_RETURN *status)
{
	ProcessFile &pf = process_file_state();
	bool share = !device_opener_set();

	if (share) {
		std::lock_guard<std::mutex> g(pf.lock);
		if (auto f = pf.file.lock())
			return f;
	}
	/* not under the lock: a fork meanwhile leaves the child a free one */
	std::shared_ptr<Device> dev = open_device(status);
	if (!dev)
		return nullptr;
	auto f = std::make_shared<File>();
	f->dev = std::move(dev);
	if (share) {
		std::lock_guard<std::mutex> g(pf.lock);
		/* another thread's open won: use its file, close ours */
		if (auto won = pf.file.lock())
			return won;
		pf.file = f;
	}
	return f;
}

/*
 * Open kernel IA @kernel_name as DAT IA @name of @provider.  The async
 * EVD is always the IA's own (the kernel creates it with the IA).  Every
 * object of the IA starts with @face (null: @provider), the table another
 * registry dispatches through (the DAT 2.0 provider passes its own).
 * @kernel_flags are KDAT_IA_OPEN_* bits for the kernel (the DAT 2.0
 * provider asks for KDAT_IA_OPEN_SRQ_EP_BROKEN); a module that does not
 * know them (its KDAT_FEATURE_* bits lack them) makes the open
 * DAT_MODEL_NOT_SUPPORTED, unknown bits DAT_INVALID_PARAMETER.
 */
DAT_RETURN Ia::open(DAT_PROVIDER *provider, const std::string &name,
		    const std::string &kernel_name, DAT_COUNT qlen,
		    DAT_EVD_HANDLE *async_evd_handle, DAT_IA_HANDLE *ia_handle,
		    const void *face, std::uint32_t kernel_flags)
{
	if (*async_evd_handle == DAT_EVD_ASYNC_EXISTS)
		return err(DAT_MODEL_NOT_SUPPORTED);
	if (*async_evd_handle != DAT_HANDLE_NULL)
		return bad_handle(DAT_INVALID_HANDLE_EVD_ASYNC);
	if (qlen <= 0)
		return bad_arg(2);
	if (kernel_name.empty() || kernel_name.size() >= KDAT_NAME_LEN)
		return err(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);

	DAT_RETURN r;
	std::shared_ptr<File> file = process_file(&r);
	if (!file)
		return r;
	/*
	 * Dropping the last reference to the file closes it, which frees
	 * whatever the kernel created for it; other IAs may share it, so a
	 * failed open also closes its kernel IA (close_on_error).
	 */
	const std::shared_ptr<Device> &dev = file->dev;
	auto ctx = std::make_shared<Context>(file, provider, face);

	if (kernel_flags & ~std::uint32_t(KDAT_IA_OPEN_FLAGS_ALL))
		return err(DAT_INVALID_PARAMETER);
	if (kernel_flags) {
		/* the flags field exists only with this feature */
		struct kdat_ioc_version v = {};
		r = call(*dev, KDAT_IOC_VERSION, v);
		if (!ok(r))
			return r;
		if (!(v.features & KDAT_FEATURE_SRQ_EP_BROKEN))
			return err(DAT_MODEL_NOT_SUPPORTED);
	}

	struct kdat_ioc_ia_open o = {};
	o.flags = kernel_flags;
	std::memcpy(o.name, kernel_name.data(), kernel_name.size());
	o.async_qlen = qlen;
	r = call(*dev, KDAT_IOC_IA_OPEN, o);
	if (!ok(r))
		return r;
	ctx->ia_kid = o.ia;
	/* the file may outlive a failed open: close its IA in the kernel */
	struct CloseOnError {
		Device &dev;
		std::uint32_t ia;
		bool armed = true;
		~CloseOnError()
		{
			struct kdat_ioc_ia_close c = {};

			if (!armed)
				return;
			c.ia = ia;
			c.flags = DAT_CLOSE_ABRUPT_FLAG;
			call(dev, KDAT_IOC_IA_CLOSE, c);
		}
	} close_on_error{*dev, o.ia};

	auto ia = make_object<Ia>(ctx);
	ia->kid = o.ia;
	ia->name = name;
	ctx->ia_handle = ia->handle();

	auto evd = make_object<Evd>(ctx);
	evd->kid = o.async_evd;
	evd->flags = DAT_EVD_ASYNC_FLAG;
	evd->kqlen = qlen;
	evd->qlen = qlen;
	evd->is_async = true;
	r = evd->attach(o.async_ring_offset, o.async_ring_size);
	if (!ok(r))
		return r;
	ia->async_evd = evd;
	ctx->async_evd = evd;

	struct kdat_ioc_ia_query q = {};
	q.ia = o.ia;
	r = call(*dev, KDAT_IOC_IA_QUERY, q);
	if (!ok(r))
		return r;
	ctx->set_address(q.attr.ia_address, sizeof(q.attr.ia_address));

	ctx->publish(ia);
	try {
		ctx->publish(evd);
	} catch (...) {
		ctx->retire(*ia, nullptr);
		throw;
	}
	close_on_error.armed = false;
	*ia_handle = ia->handle();
	*async_evd_handle = evd->handle();
	return DAT_SUCCESS;
}

static void fill_ia_attr(const struct kdat_uia_attr &u,
			 DAT_IA_ADDRESS_PTR addr, DAT_IA_ATTR &a)
{
	std::memset(&a, 0, sizeof(a));
	std::memcpy(a.adapter_name, u.adapter_name,
		    strnlen(u.adapter_name, sizeof(u.adapter_name)));
	std::memcpy(a.vendor_name, u.vendor_name,
		    strnlen(u.vendor_name, sizeof(u.vendor_name)));
	a.hardware_version_major = u.hw_ver;
	a.hardware_version_minor = 0;
	a.firmware_version_major = (DAT_UINT32)(u.fw_ver >> 32);
	a.firmware_version_minor = (DAT_UINT32)u.fw_ver;
	a.ia_address_ptr = addr;
	a.max_eps = u.max_eps;
	a.max_dto_per_ep = u.max_dto_per_ep;
	a.max_rdma_read_per_ep_in = u.max_rdma_read_per_ep_in;
	a.max_rdma_read_per_ep_out = u.max_rdma_read_per_ep_out;
	a.max_evds = u.max_evds;
	a.max_evd_qlen = u.max_evd_qlen;
	a.max_iov_segments_per_dto = u.max_iov_segments_per_dto;
	a.max_lmrs = u.max_lmrs;
	a.max_lmr_block_size = u.max_lmr_block_size;
	a.max_lmr_virtual_address = ~(DAT_VADDR)0;
	a.max_pzs = u.max_pzs;
	a.max_message_size = u.max_message_size;
	a.max_rdma_size = u.max_rdma_size;
	a.max_rmrs = 0;
	a.max_rmr_target_address = 0;
	a.max_srqs = u.max_srqs;
	a.max_ep_per_srq = u.max_ep_per_srq;
	a.max_recv_per_srq = u.max_recv_per_srq;
	a.max_iov_segments_per_rdma_read = u.max_iov_segments_per_dto;
	a.max_iov_segments_per_rdma_write = u.max_iov_segments_per_dto;
	a.max_rdma_read_in = u.max_rdma_read_per_ep_in;
	a.max_rdma_read_out = u.max_rdma_read_per_ep_out;
	a.max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
	a.max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
	a.num_transport_attr = 0;
	a.transport_attr = nullptr;
	a.num_vendor_attr = 0;
	a.vendor_attr = nullptr;
}

/* Provider-specific attributes: static strings, valid forever. */
static DAT_NAMED_ATTR provider_specific[] = {
	{ "kdat_device", "/dev/" KDAT_DEVICE_NAME },
	{ "kdat_abi_version", "2" },
	{ "srq_post", "ring" },
	{ "srq_post_ioctl_env", "KDAT_SRQ_POST=ioctl" },
};
static_assert(KDAT_ABI_VERSION == 2, "update kdat_abi_version above");

void fill_provider_attr(const struct kdat_uia_attr &u, DAT_PROVIDER_ATTR &p)
{
	std::memset(&p, 0, sizeof(p));
	std::strcpy(p.provider_name, DAT_KDAT_PROVIDER_NAME);
	p.provider_version_major = 1;
	p.provider_version_minor = 0;
	p.dapl_version_major = DAT_VERSION_MAJOR;
	p.dapl_version_minor = DAT_VERSION_MINOR;
	/* DAT_MEM_TYPE_VIRTUAL is 0: the value names the other two */
	p.lmr_mem_types_supported = (DAT_MEM_TYPE)(DAT_MEM_TYPE_VIRTUAL |
						   DAT_MEM_TYPE_LMR |
						   DAT_MEM_TYPE_SHARED_VIRTUAL);
	/* triplets are copied into the ring or the ioctl before we return */
	p.iov_ownership_on_return = DAT_IOV_CONSUMER;
	p.dat_qos_supported = DAT_QOS_BEST_EFFORT;
	/*
	 * Not DAT_COMPLETION_SOLICITED_WAIT_FLAG: an EP accepts it as its
	 * recv_completion_flags (the EVD sharing rules apply), but a waiter
	 * still wakes for every completion, solicited or not (the kernel's
	 * completion queues are armed for every completion), so claiming it
	 * would not be true.
	 */
	p.completion_flags_supported =
		(DAT_COMPLETION_FLAGS)(DAT_COMPLETION_DEFAULT_FLAG |
				       DAT_COMPLETION_SUPPRESS_FLAG |
				       DAT_COMPLETION_UNSIGNALLED_FLAG |
				       DAT_COMPLETION_EVD_THRESHOLD_FLAG);
	p.is_thread_safe = DAT_TRUE;
	p.max_private_data_size = 55;
	p.supports_multipath = DAT_FALSE;
	p.ep_creator = DAT_PSP_CREATES_EP_NEVER;
	p.pz_support = DAT_PZ_UNIQUE;
	p.optimal_buffer_alignment = 64;
	for (auto &row : p.evd_stream_merging_supported)
		for (auto &v : row)
			v = DAT_TRUE;
	p.srq_supported = u.max_srqs > 0 ? DAT_TRUE : DAT_FALSE;
	p.srq_watermarks_supported = 1;
	/*
	 * An SRQ EP's QP lives in the EP's PZ, its receive buffers in the
	 * SRQ's: the kernel knows whether the device allows the two to
	 * differ (not rxe, which checks SRQ receive lkeys against the QP's
	 * PD), and refuses a differing EP PZ with DAT_INVALID_PARAMETER
	 * where it does not.
	 */
	p.srq_ep_pz_difference_supported =
		(u.flags & KDAT_UIA_SRQ_EP_PZ_DIFF) ? DAT_TRUE : DAT_FALSE;
	p.srq_info_supported = 1;
	p.ep_recv_info_supported = 0;
	p.lmr_sync_req = DAT_FALSE;
	p.dto_async_return_guaranteed = DAT_TRUE;
	p.rdma_write_for_rdma_read_req = DAT_FALSE;
	p.num_provider_specific_attr =
		sizeof(provider_specific) / sizeof(provider_specific[0]);
	p.provider_specific_attr = provider_specific;
}

DAT_RETURN Ia::query(DAT_EVD_HANDLE *async_evd_handle,
		     DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
		     DAT_PROVIDER_ATTR_MASK pmask, DAT_PROVIDER_ATTR *pattr)
{
	if (ia_mask && !ia_attr)
		return bad_arg(4);
	if (pmask && !pattr)
		return bad_arg(6);

	struct kdat_ioc_ia_query q = {};
	q.ia = kid;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_IA_QUERY, q);
	if (!ok(r))
		return r;
	ctx->set_address(q.attr.ia_address, sizeof(q.attr.ia_address));
	if (async_evd_handle)
		*async_evd_handle = async_evd->handle();
	if (ia_mask)
		fill_ia_attr(q.attr, ctx->address(), *ia_attr);
	if (pmask)
		fill_provider_attr(q.attr, *pattr);
	return DAT_SUCCESS;
}

DAT_RETURN Ia::close(std::uint64_t flags)
{
	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return bad_arg(2);

	struct kdat_ioc_ia_close c = {};
	c.ia = kid;
	c.flags = (__u32)flags;
	DAT_RETURN r = call(*ctx->dev, KDAT_IOC_IA_CLOSE, c);
	if (!ok(r))
		return r;
	/* the kernel freed everything: no handle of this IA is valid now */
	ctx->retire_all();
	return DAT_SUCCESS;
}

DAT_RETURN Ia::get_fd(int *fd)
{
	if (!fd)
		return bad_arg(2);
	*fd = ctx->dev->fd();
	return DAT_SUCCESS;
}

} // namespace kdat

/* The built-in provider's entries (dispatch.hpp). */
namespace kdat::builtin {

DAT_RETURN ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd,
		    DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
		    DAT_PROVIDER_ATTR_MASK pmask, DAT_PROVIDER_ATTR *pattr)
{
	return KDAT_BUILTIN(Ia, ia, dat_ia_query,
			    query(async_evd, ia_mask, ia_attr, pmask, pattr),
			    ia, async_evd, ia_mask, ia_attr, pmask, pattr);
}

DAT_RETURN ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags)
{
	return KDAT_BUILTIN(Ia, ia, dat_ia_close, close(raw(flags)), ia, flags);
}

DAT_RETURN set_consumer_context(DAT_HANDLE h, DAT_CONTEXT context)
{
	const PinnedCall p = pinned_call;

	if (!h || p.h != h)
		return dat_set_consumer_context(h, context);
	if (!p.obj)	/* the core's, yet not ours: never */
		return err(DAT_INTERNAL_ERROR);
	p.obj->context.store(context.as_64);
	return DAT_SUCCESS;
}

DAT_RETURN get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *context)
{
	const PinnedCall p = pinned_call;

	if (!h || p.h != h)
		return dat_get_consumer_context(h, context);
	if (!p.obj)	/* the core's, yet not ours: never */
		return err(DAT_INTERNAL_ERROR);
	if (!context)
		return bad_arg(2);
	context->as_64 = p.obj->context.load();
	return DAT_SUCCESS;
}

} // namespace kdat::builtin

using namespace kdat;

#define IA_BAD bad_handle(DAT_INVALID_HANDLE_IA)

/*
 * The core of a call that takes a handle of any type: DAT_INVALID_HANDLE
 * (no subtype) unless @h is live.
 */
template <auto Entry, class... A>
static DAT_RETURN dispatch_any(DAT_HANDLE h, A... a) noexcept
{
	return guard([&]() -> DAT_RETURN {
		HandleEntry e = handles().find(h);

		if (!e)
			return err(DAT_INVALID_HANDLE);
		auto fn = e.provider->*Entry;
		if (!fn)
			return err(DAT_NOT_IMPLEMENTED);
		PinScope pin(h, e.obj.get());
		return fn(h, a...);
	});
}

extern "C" {

DAT_RETURN dat_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd,
			DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
			DAT_PROVIDER_ATTR_MASK pmask, DAT_PROVIDER_ATTR *pattr)
{
	return KDAT_CORE(DAT_HANDLE_TYPE_IA, IA_BAD, ia_query_func, ia,
			 async_evd, ia_mask, ia_attr, pmask, pattr);
}

DAT_RETURN dat_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags)
{
	return guard([&]() -> DAT_RETURN {
		HandleEntry e = handles().find(ia, DAT_HANDLE_TYPE_IA);
		DAT_RETURN r;

		if (!e)
			return IA_BAD;
		if (!e.provider->ia_close_func)
			return err(DAT_NOT_IMPLEMENTED);
		{
			PinScope pin(ia, e.obj.get());

			r = e.provider->ia_close_func(ia, flags);
		}
		if (ok(r))
			registry_ia_closed(ia, e);
		return r;
	});
}

/* A kdat extension of the built-in provider (not in the table). */
DAT_RETURN dat_kdat_get_fd(DAT_IA_HANDLE ia, int *fd)
{
	return guard([&]() -> DAT_RETURN {
		auto o = lookup<Ia>(ia);

		return o ? o->get_fd(fd) : IA_BAD;
	});
}

/* Calls that take any handle */

DAT_RETURN dat_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT context)
{
	return dispatch_any<&DAT_PROVIDER::set_consumer_context_func>(h,
								      context);
}

DAT_RETURN dat_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *context)
{
	return dispatch_any<&DAT_PROVIDER::get_consumer_context_func>(h,
								      context);
}

/* What the registry knows: the type every live handle was made with. */
DAT_RETURN dat_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type)
{
	return guard([&]() -> DAT_RETURN {
		HandleEntry e = handles().find(h);

		if (!e)
			return err(DAT_INVALID_HANDLE);
		if (!type)
			return bad_arg(2);
		*type = e.type;
		return DAT_SUCCESS;
	});
}

} // extern "C"
