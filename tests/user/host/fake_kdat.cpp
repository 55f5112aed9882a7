// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The fake /dev/kdat (see fake_kdat.hpp).  It follows kernel/chardev.c,
// srq.c, evd.c, ep.c and cm.c in what the library can observe: the codes
// of the checks, the ring protocol and the event contents.
#include "fake_kdat.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace fake {

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
using s32 = std::int32_t;

Kernel *g_current;

constexpr u32 T_CR = 0, T_EP = 1, T_EVD = 2, T_IA = 3, T_LMR = 4, T_PSP = 5,
	      T_PZ = 6, T_SRQ = 9;

DAT_RETURN E(u32 type, u32 sub = 0)
{
	return DAT_ERROR(type, sub);
}

DAT_RETURN ARG(int n)
{
	return E(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1 + (n - 1));
}

DAT_RETURN HANDLE(u32 sub)
{
	return E(DAT_INVALID_HANDLE, sub);
}

struct RingMem {
	std::byte *mem = nullptr;
	std::size_t size = 0;
	u64 offset = 0;
	u32 entries = 0, entry_size = 0, entry_offset = 0;

	struct kdat_ring_hdr *hdr() const
	{
		return reinterpret_cast<struct kdat_ring_hdr *>(mem);
	}
	std::byte *slot(u32 i) const
	{
		return mem + entry_offset + (std::size_t)(i & (entries - 1)) *
						    entry_size;
	}
	u32 load(u32 &x) const
	{
		return std::atomic_ref<u32>(x).load(std::memory_order_acquire);
	}
	void store(u32 &x, u32 v) const
	{
		std::atomic_ref<u32>(x).store(v, std::memory_order_release);
	}
};

struct Obj {
	u32 id = 0;
	u32 type = 0;
	u32 ia = 0;
	virtual ~Obj() = default;
};

struct OIa : Obj {
	std::string name;
	struct sockaddr_in addr = {};
	u32 async_evd = 0;
};

struct OPz : Obj {};

struct OEvd : Obj {
	u32 flags = 0;
	s32 qlen = 0;
	RingMem ring;
	u32 ktail = 0, reaped = 0;
	std::vector<u32> shadow;	/* SRQ of each entry, 0 if none */
	bool unwaitable = false;
	u32 wakes = 0;
};

struct OLmr : Obj {
	u32 pz = 0;
	u64 addr = 0, len = 0;
	u32 priv = 0, ctx = 0, rctx = 0;
};

struct Buf {
	u64 cookie = 0;
	u32 n = 0;
	struct kdat_useg seg[KDAT_MAX_IOV] = {};
};

struct OSrq : Obj {
	u32 pz = 0;
	s32 max = 0, iov = 0, lw = 0;
	bool armed = false;
	std::deque<Buf> avail;
	s32 outstanding = 0;
	RingMem ring;
	u32 khead = 0;
	int eps = 0;
};

struct OEp : Obj {
	u32 pz = 0, recv_evd = 0, req_evd = 0, conn_evd = 0, srq = 0;
	struct kdat_uep_attr attr = {};
	u32 state = DAT_EP_STATE_UNCONNECTED;
	File *peer_file = nullptr;
	u32 peer_ep = 0;
	std::deque<Buf> rq;
	std::deque<std::vector<std::uint8_t>> pending;
	struct sockaddr_in remote = {};
	u64 local_port = 0, remote_port = 0;
};

struct OPsp : Obj {
	u32 evd = 0;
	u64 qual = 0;
};

struct OCr : Obj {
	u32 psp = 0;
	File *from = nullptr;
	u32 from_ep = 0;
	std::vector<std::uint8_t> pdata;
	struct sockaddr_in remote = {};
	u64 remote_port = 0, qual = 0;
};

struct FreeDelete {
	void operator()(std::byte *p) const { std::free(p); }
};

} // namespace

/* One open file of the fake device. */
struct File : kdat::Device {
	explicit File(Kernel *k) : k(k) { k->add_file(this); }
	~File() override;

	int ioctl(unsigned long request, void *arg) override;
	void *mmap(std::size_t length, std::uint64_t offset) override;
	void munmap(void *, std::size_t) override {}
	int fd() const override { return -1; }

	Kernel *k;
	std::map<u32, std::unique_ptr<Obj>> objs;
	u32 next_id = 1;
	u32 next_lmr_ctx = 0x100;
	u64 next_off = 0;
	std::map<u64, RingMem> rings;
	std::vector<std::unique_ptr<std::byte, FreeDelete>> ring_mem;

	template <class T>
	T *get(u32 id, u32 type)
	{
		auto it = objs.find(id);

		if (!id || it == objs.end() || it->second->type != type)
			return nullptr;
		return static_cast<T *>(it->second.get());
	}
	template <class T>
	T *add(u32 type, u32 ia)
	{
		auto o = std::make_unique<T>();
		T *p = o.get();

		p->id = next_id++;
		p->type = type;
		p->ia = ia ? ia : p->id;
		objs[p->id] = std::move(o);
		return p;
	}
	RingMem make_ring(u32 min_entries, u32 entry_size);

	/* events */
	u32 user_head(OEvd &e);
	u32 evd_count(OEvd &e) { return e.ktail - user_head(e); }
	void post(OEvd *e, const struct kdat_uevent &u, u32 srq);
	void post(u32 evd, const struct kdat_uevent &u, u32 srq = 0)
	{
		post(get<OEvd>(evd, T_EVD), u, srq);
	}
	void collect(OEvd &e);
	void collect_all();
	void async_event(u32 ia, u32 num, u32 handle, u32 reason,
			 u64 cookie = 0, u32 status = 0, u64 length = 0);
	void conn_event(OEp &ep, u32 num, const std::vector<std::uint8_t> &pd);

	/* SRQ */
	DAT_RETURN check_seg(u32 ia, u32 pz, const struct kdat_useg &s,
			     u32 need);
	DAT_RETURN post_one(OSrq &s, u32 n, const struct kdat_useg *segs,
			    u64 cookie);
	void drain_ring(OSrq &s);
	void drain(OSrq &s);
	bool take(OSrq &s, Buf &b);
	void deliver_pending_srq(u32 srq);

	/* EPs */
	void deliver(OEp &ep, const std::vector<std::uint8_t> &msg);
	bool try_deliver(OEp &ep, const std::vector<std::uint8_t> &msg);
	void flush_rq(OEp &ep);
	void drop_peer(OEp &ep, bool tell_peer);
	DAT_RETURN free_obj(u32 id, u32 type);
	void close_ia(u32 ia);
};

namespace {

OEp *peer_of(OEp &ep)
{
	if (!ep.peer_file)
		return nullptr;
	return ep.peer_file->get<OEp>(ep.peer_ep, T_EP);
}

} // namespace

/* ------------------------------------------------------------------ */
/* Kernel                                                               */

Kernel::Kernel()
	: Kernel({ { "rxe0", "192.0.2.1" }, { "rxe1", "192.0.2.2" } })
{
}

Kernel::Kernel(std::vector<FakeIa> ias) : ias_(std::move(ias)) {}

Kernel::~Kernel()
{
	if (g_current == this)
		uninstall();
}

Kernel *current()
{
	return g_current;
}

void Kernel::install()
{
	g_current = this;
	kdat::set_device_opener(
		[this](DAT_RETURN *st) { return open(st); });
}

void Kernel::uninstall()
{
	kdat::set_device_opener(nullptr);
	g_current = nullptr;
}

std::unique_ptr<kdat::Device> Kernel::open(DAT_RETURN *status)
{
	{
		std::lock_guard<std::mutex> g(lock);
		if (open_status_ != DAT_SUCCESS) {
			*status = open_status_;
			return nullptr;
		}
	}
	*status = DAT_SUCCESS;
	return std::make_unique<File>(this);
}

void Kernel::add_file(File *f)
{
	std::lock_guard<std::mutex> g(lock);
	files_.push_back(f);
}

void Kernel::remove_file(File *f)
{
	files_.erase(std::remove(files_.begin(), files_.end(), f),
		     files_.end());
}

std::uint64_t Kernel::ioctls(unsigned long request) const
{
	std::lock_guard<std::mutex> g(lock);
	auto it = counts_.find(request);
	return it == counts_.end() ? 0 : it->second;
}

std::uint64_t Kernel::total_ioctls() const
{
	std::lock_guard<std::mutex> g(lock);
	std::uint64_t n = 0;

	for (auto &[r, c] : counts_)
		n += c;
	return n;
}

void Kernel::reset_counts()
{
	std::lock_guard<std::mutex> g(lock);
	counts_.clear();
}

void Kernel::fail_next(unsigned long request, int err)
{
	std::lock_guard<std::mutex> g(lock);
	fail_err_[request] = err;
}

void Kernel::status_next(unsigned long request, DAT_RETURN status)
{
	std::lock_guard<std::mutex> g(lock);
	fail_status_[request] = status;
}

void Kernel::fail_open(DAT_RETURN status)
{
	std::lock_guard<std::mutex> g(lock);
	open_status_ = status;
}

int Kernel::files() const
{
	std::lock_guard<std::mutex> g(lock);
	return (int)files_.size();
}

std::size_t Kernel::objects() const
{
	std::lock_guard<std::mutex> g(lock);
	std::size_t n = 0;

	for (File *f : files_)
		n += f->objs.size();
	return n;
}

std::string Kernel::dump() const
{
	std::lock_guard<std::mutex> g(lock);
	std::string out;
	char line[256];

	for (File *f : files_) {
		std::snprintf(line, sizeof(line), "file %p\n", (void *)f);
		out += line;
		for (auto &[id, o] : f->objs) {
			switch (o->type) {
			case T_EVD: {
				auto &e = static_cast<OEvd &>(*o);
				std::snprintf(line, sizeof(line),
					      "  evd %u flags %#x ktail %u head %u reaped %u dropped %u\n",
					      id, e.flags, e.ktail, e.ring.hdr()->head,
					      e.reaped, e.ring.hdr()->dropped);
				break;
			}
			case T_SRQ: {
				auto &q = static_cast<OSrq &>(*o);
				std::snprintf(line, sizeof(line),
					      "  srq %u avail %zu outstanding %d max %d khead %u tail %u flags %u eps %d\n",
					      id, q.avail.size(), q.outstanding, q.max,
					      q.khead, q.ring.hdr()->tail,
					      q.ring.hdr()->flags, q.eps);
				break;
			}
			case T_EP: {
				auto &ep = static_cast<OEp &>(*o);
				std::snprintf(line, sizeof(line),
					      "  ep %u state %u srq %u rq %zu pending %zu peer %u\n",
					      id, ep.state, ep.srq, ep.rq.size(),
					      ep.pending.size(), ep.peer_ep);
				break;
			}
			default:
				std::snprintf(line, sizeof(line), "  obj %u type %u\n",
					      id, o->type);
				break;
			}
			out += line;
		}
	}
	return out;
}

void Kernel::set_auto_drain(bool on)
{
	std::lock_guard<std::mutex> g(lock);
	auto_drain_ = on;
}

void Kernel::count(unsigned long request)
{
	counts_[request]++;
}

bool Kernel::injected(unsigned long request, int *err, DAT_RETURN *status)
{
	auto e = fail_err_.find(request);
	if (e != fail_err_.end()) {
		*err = e->second;
		fail_err_.erase(e);
		return true;
	}
	auto s = fail_status_.find(request);
	if (s != fail_status_.end()) {
		*err = 0;
		*status = s->second;
		fail_status_.erase(s);
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Rings and events                                                     */

RingMem File::make_ring(u32 min_entries, u32 entry_size)
{
	RingMem r;
	u32 n = 2;

	while (n < min_entries)
		n <<= 1;
	r.entries = n;
	r.entry_size = entry_size;
	r.entry_offset = (sizeof(struct kdat_ring_hdr) + 63) & ~63u;
	r.size = (r.entry_offset + (std::size_t)n * entry_size + 4095) &
		 ~(std::size_t)4095;
	r.mem = static_cast<std::byte *>(std::aligned_alloc(4096, r.size));
	std::memset(r.mem, 0, r.size);
	ring_mem.emplace_back(r.mem);
	r.offset = next_off;
	next_off += r.size;
	r.hdr()->entries = n;
	r.hdr()->entry_size = entry_size;
	r.hdr()->entry_offset = r.entry_offset;
	rings[r.offset] = r;
	return r;
}

void *File::mmap(std::size_t length, std::uint64_t offset)
{
	std::lock_guard<std::mutex> g(k->lock);
	auto it = rings.find(offset);

	if (it == rings.end() || length > it->second.size) {
		errno = EINVAL;
		return nullptr;
	}
	return it->second.mem;
}

u32 File::user_head(OEvd &e)
{
	u32 head = e.ring.load(e.ring.hdr()->head);

	if (head - e.reaped > e.ktail - e.reaped)
		head = e.reaped;
	return head;
}

void File::post(OEvd *e, const struct kdat_uevent &in, u32 srq)
{
	if (!e) {
		if (auto s = get<OSrq>(srq, T_SRQ))
			s->outstanding--;
		return;
	}
	struct kdat_uevent u = in;
	u.evd = e->id;
	if (e->ktail - user_head(*e) >= e->ring.entries) {
		e->ring.hdr()->dropped++;
		if (auto s = get<OSrq>(srq, T_SRQ))
			s->outstanding--;
		return;
	}
	std::memcpy(e->ring.slot(e->ktail), &u, sizeof(u));
	e->shadow[e->ktail & (e->ring.entries - 1)] = srq;
	e->ktail++;
	e->ring.store(e->ring.hdr()->tail, e->ktail);
	/* as kdat_uevd_post: reap what the user consumed meanwhile */
	collect(*e);
	k->cv.notify_all();
}

void File::collect(OEvd &e)
{
	u32 head = user_head(e);

	while (e.reaped != head) {
		u32 &s = e.shadow[e.reaped & (e.ring.entries - 1)];
		if (s) {
			if (auto srq = get<OSrq>(s, T_SRQ))
				srq->outstanding--;
			s = 0;
		}
		e.reaped++;
	}
}

void File::collect_all()
{
	for (auto &[id, o] : objs)
		if (o->type == T_EVD)
			collect(static_cast<OEvd &>(*o));
}

void File::async_event(u32 ia, u32 num, u32 handle, u32 reason, u64 cookie,
		       u32 status, u64 length)
{
	auto *i = get<OIa>(ia, T_IA);
	struct kdat_uevent u = {};

	if (!i)
		return;
	u.event_number = num;
	u.handle = handle;
	u.reason = reason;
	u.cookie = cookie;
	u.status = status;
	u.length = length;
	post(i->async_evd, u);
}

void File::conn_event(OEp &ep, u32 num, const std::vector<std::uint8_t> &pd)
{
	struct kdat_uevent u = {};

	u.event_number = num;
	u.handle = ep.id;
	u.pdata_size = (u32)std::min<std::size_t>(pd.size(), KDAT_PDATA_LEN);
	if (u.pdata_size)
		std::memcpy(u.pdata, pd.data(), u.pdata_size);
	post(ep.conn_evd, u);
}

/* ------------------------------------------------------------------ */
/* SRQ                                                                  */

DAT_RETURN File::check_seg(u32 ia, u32 pz, const struct kdat_useg &s,
			   u32 need)
{
	OLmr *l = nullptr;

	for (auto &[id, o] : objs) {
		if (o->type == T_LMR && o->ia == ia &&
		    static_cast<OLmr &>(*o).ctx == s.lmr_context)
			l = static_cast<OLmr *>(o.get());
	}
	if (!l)
		return ARG(3);
	if (s.length > UINT32_MAX || s.addr < l->addr || s.length > l->len ||
	    s.addr - l->addr > l->len - s.length)
		return ARG(3);
	if (l->pz != pz)
		return E(DAT_PROTECTION_VIOLATION);
	if ((l->priv & need) != need)
		return E(DAT_PRIVILEGES_VIOLATION);
	return DAT_SUCCESS;
}

DAT_RETURN File::post_one(OSrq &s, u32 n, const struct kdat_useg *segs,
			  u64 cookie)
{
	if ((s32)n > s.iov)
		return ARG(2);
	for (u32 i = 0; i < n; i++) {
		DAT_RETURN r = check_seg(s.ia, s.pz, segs[i],
					 DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
		if (r != DAT_SUCCESS)
			return r;
	}
	if (s.outstanding >= s.max)
		return E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
	Buf b;
	b.cookie = cookie;
	b.n = n;
	std::memcpy(b.seg, segs, n * sizeof(*segs));
	s.avail.push_back(b);
	s.outstanding++;
	return DAT_SUCCESS;
}

void File::drain_ring(OSrq &s)
{
	struct kdat_ring_hdr *h = s.ring.hdr();
	u32 tail = s.ring.load(h->tail);

	if (tail - s.khead > s.ring.entries)
		tail = s.khead + s.ring.entries;
	while (s.khead != tail) {
		struct kdat_srq_wqe w;

		std::memcpy(&w, s.ring.slot(s.khead),
			    std::min<std::size_t>(sizeof(w),
						  s.ring.entry_size));
		DAT_RETURN r = w.nseg > KDAT_MAX_IOV ?
				       ARG(2) :
				       post_one(s, w.nseg, w.seg, w.cookie);
		if (DAT_GET_TYPE(r) == DAT_INSUFFICIENT_RESOURCES)
			break;
		if (r != DAT_SUCCESS)
			async_event(s.ia, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
				    s.id, DAT_SRQ_OTHER_ERROR, w.cookie,
				    DAT_GET_TYPE(r) == DAT_PROTECTION_VIOLATION ?
					    DAT_DTO_ERR_LOCAL_PROTECTION :
					    DAT_DTO_ERR_LOCAL_LENGTH,
				    r);
		s.khead++;
	}
	s.ring.store(h->head, s.khead);
	/* as the kernel: starved, and an EP could take a buffer */
	if (s.avail.empty() && s.khead == tail && s.eps)
		std::atomic_ref<u32>(h->flags).store(KDAT_RING_NEED_KICK);
	else
		std::atomic_ref<u32>(h->flags).store(0);
}

void File::drain(OSrq &s)
{
	drain_ring(s);
	deliver_pending_srq(s.id);
}

bool File::take(OSrq &s, Buf &b)
{
	if (s.avail.empty())
		return false;
	b = s.avail.front();
	s.avail.pop_front();
	if (s.armed && (s32)s.avail.size() < s.lw) {
		s.armed = false;
		async_event(s.ia, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, s.id,
			    DAT_SRQ_LOW_WATERMARK_EVENT);
	}
	return true;
}

void File::deliver_pending_srq(u32 srq)
{
	for (auto &[id, o] : objs) {
		if (o->type != T_EP)
			continue;
		auto &ep = static_cast<OEp &>(*o);
		while (ep.srq == srq && !ep.pending.empty()) {
			auto msg = std::move(ep.pending.front());
			ep.pending.pop_front();
			if (!try_deliver(ep, msg)) {
				ep.pending.push_front(std::move(msg));
				break;
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* Data transfer and connections                                       */

/* Put @msg into the next receive buffer of @ep; false if there is none. */
bool File::try_deliver(OEp &ep, const std::vector<std::uint8_t> &msg)
{
	Buf b;
	u32 srq = 0;

	if (ep.srq) {
		auto *s = get<OSrq>(ep.srq, T_SRQ);
		if (!s || !take(*s, b))
			return false;
		srq = s->id;
	} else {
		if (ep.rq.empty())
			return false;
		b = ep.rq.front();
		ep.rq.pop_front();
	}
	struct kdat_uevent u = {};
	u.event_number = DAT_DTO_COMPLETION_EVENT;
	u.handle = ep.id;
	u.cookie = b.cookie;
	std::size_t room = 0;
	for (u32 i = 0; i < b.n; i++)
		room += b.seg[i].length;
	if (msg.size() > room) {
		u.status = DAT_DTO_ERR_LOCAL_LENGTH;
	} else {
		std::size_t off = 0;
		for (u32 i = 0; i < b.n && off < msg.size(); i++) {
			std::size_t n = std::min<std::size_t>(
				b.seg[i].length, msg.size() - off);
			std::memcpy((void *)(uintptr_t)b.seg[i].addr,
				    msg.data() + off, n);
			off += n;
		}
		u.status = DAT_DTO_SUCCESS;
		u.length = msg.size();
	}
	post(ep.recv_evd ? get<OEvd>(ep.recv_evd, T_EVD) : nullptr, u, srq);
	/* a buffer was taken: the kernel refills from the post ring */
	if (srq && k->auto_drain())
		if (auto *s = get<OSrq>(srq, T_SRQ))
			drain_ring(*s);
	return true;
}

void File::deliver(OEp &ep, const std::vector<std::uint8_t> &msg)
{
	if (!ep.pending.empty() || !try_deliver(ep, msg))
		ep.pending.push_back(msg);
}

void File::flush_rq(OEp &ep)
{
	while (!ep.rq.empty()) {
		struct kdat_uevent u = {};

		u.event_number = DAT_DTO_COMPLETION_EVENT;
		u.handle = ep.id;
		u.cookie = ep.rq.front().cookie;
		u.status = DAT_DTO_ERR_FLUSHED;
		ep.rq.pop_front();
		post(ep.recv_evd, u);
	}
	ep.pending.clear();
}

/* Break @ep's connection; the peer learns it if @tell_peer. */
void File::drop_peer(OEp &ep, bool tell_peer)
{
	OEp *p = peer_of(ep);

	if (p && tell_peer) {
		File *pf = ep.peer_file;
		p->state = DAT_EP_STATE_DISCONNECTED;
		p->peer_file = nullptr;
		pf->conn_event(*p, DAT_CONNECTION_EVENT_DISCONNECTED, {});
		pf->flush_rq(*p);
	}
	ep.peer_file = nullptr;
	ep.peer_ep = 0;
}

DAT_RETURN File::free_obj(u32 id, u32 type)
{
	auto subtype = [](u32 t) -> u32 {
		switch (t) {
		case T_CR: return DAT_INVALID_HANDLE_CR;
		case T_EP: return DAT_INVALID_HANDLE_EP;
		case T_EVD: return DAT_INVALID_HANDLE_EVD_ASYNC;
		case T_LMR: return DAT_INVALID_HANDLE_LMR;
		case T_PSP: return DAT_INVALID_HANDLE_PSP;
		case T_PZ: return DAT_INVALID_HANDLE_PZ;
		case T_SRQ: return DAT_INVALID_HANDLE_SRQ;
		default: return 0;
		}
	};
	u32 sub = subtype(type);

	if (!sub)
		return ARG(2);
	auto it = objs.find(id);
	if (!id || it == objs.end() || it->second->type != type)
		return HANDLE(sub);
	Obj *o = it->second.get();

	auto used = [&](auto pred) {
		for (auto &[i, x] : objs)
			if (pred(*x))
				return true;
		return false;
	};

	switch (type) {
	case T_CR: {
		auto *cr = static_cast<OCr *>(o);
		if (cr->from) {
			if (auto *ep = cr->from->get<OEp>(cr->from_ep, T_EP)) {
				ep->state = DAT_EP_STATE_DISCONNECTED;
				cr->from->conn_event(
					*ep, DAT_CONNECTION_EVENT_PEER_REJECTED,
					{});
			}
		}
		break;
	}
	case T_EP: {
		auto *ep = static_cast<OEp *>(o);
		drop_peer(*ep, true);
		flush_rq(*ep);
		if (auto *s = get<OSrq>(ep->srq, T_SRQ))
			s->eps--;
		break;
	}
	case T_EVD: {
		auto *e = static_cast<OEvd *>(o);
		auto *ia = get<OIa>(e->ia, T_IA);
		if (ia && ia->async_evd == id)
			return E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_ASYNC);
		if (used([&](Obj &x) {
			    if (x.type == T_EP) {
				    auto &ep = static_cast<OEp &>(x);
				    return ep.recv_evd == id ||
					   ep.req_evd == id ||
					   ep.conn_evd == id;
			    }
			    return x.type == T_PSP &&
				   static_cast<OPsp &>(x).evd == id;
		    }))
			return E(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
		/* what the user never reaped is reaped now */
		e->ring.store(e->ring.hdr()->head, e->ktail);
		collect(*e);
		break;
	}
	case T_PZ:
		if (used([&](Obj &x) {
			    return (x.type == T_LMR &&
				    static_cast<OLmr &>(x).pz == id) ||
				   (x.type == T_SRQ &&
				    static_cast<OSrq &>(x).pz == id) ||
				   (x.type == T_EP &&
				    static_cast<OEp &>(x).pz == id);
		    }))
			return E(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
		break;
	case T_SRQ:
		if (static_cast<OSrq *>(o)->eps)
			return E(DAT_INVALID_STATE,
				 DAT_INVALID_STATE_SRQ_IN_USE);
		break;
	default:
		break;
	}
	objs.erase(id);
	return DAT_SUCCESS;
}

void File::close_ia(u32 ia)
{
	/* EPs first, then the rest, as the kernel's teardown order */
	for (u32 type : { T_EP, T_CR, T_PSP, T_SRQ, T_LMR, T_EVD, T_PZ }) {
		std::vector<u32> ids;
		for (auto &[id, o] : objs)
			if (o->ia == ia && o->type == type && id != ia)
				ids.push_back(id);
		for (u32 id : ids) {
			if (type == T_EVD) {
				auto *e = get<OEvd>(id, T_EVD);
				e->ring.store(e->ring.hdr()->head, e->ktail);
				collect(*e);
				objs.erase(id);
			} else if (type == T_CR) {
				objs.erase(id);
			} else {
				free_obj(id, type);
				objs.erase(id);
			}
		}
	}
	objs.erase(ia);
}

File::~File()
{
	std::lock_guard<std::mutex> g(k->lock);
	std::vector<u32> ias;

	for (auto &[id, o] : objs)
		if (o->type == T_IA)
			ias.push_back(id);
	for (u32 ia : ias)
		close_ia(ia);
	/* CRs of other files that came from us lose their origin */
	for (File *f : k->all_files())
		for (auto &[id, o] : f->objs)
			if (o->type == T_CR &&
			    static_cast<OCr &>(*o).from == this)
				static_cast<OCr &>(*o).from = nullptr;
	k->remove_file(this);
	k->cv.notify_all();
}

/* ------------------------------------------------------------------ */
/* ioctls                                                               */

namespace {

void default_ep_attr(struct kdat_uep_attr &a)
{
	std::memset(&a, 0, sizeof(a));
	a.max_message_size = 1u << 20;
	a.max_rdma_size = 1u << 20;
	a.max_recv_dtos = 16;
	a.max_request_dtos = 16;
	a.max_recv_iov = 1;
	a.max_request_iov = 1;
}

/*
 * kernel/ep.c kdat_ep_check_attr with the limits the fake device reports
 * (KDAT_IOC_IA_QUERY): 4096 WRs, KDAT_MAX_IOV segments, 16 RDMA reads.
 */
bool ep_attr_ok(const struct kdat_uep_attr &a, bool with_srq)
{
	constexpr s32 max_wr = 4096, max_iov = KDAT_MAX_IOV, max_rd = 16;
	constexpr u32 excl = DAT_COMPLETION_UNSIGNALLED_FLAG |
			     DAT_COMPLETION_SOLICITED_WAIT_FLAG |
			     DAT_COMPLETION_EVD_THRESHOLD_FLAG;

	if (!a.max_message_size || a.max_message_size > (1ull << 31) ||
	    a.max_rdma_size > (1ull << 31) || a.max_request_dtos <= 0 ||
	    a.max_request_dtos > max_wr || a.max_request_iov <= 0 ||
	    a.max_request_iov > max_iov || a.max_rdma_read_in < 0 ||
	    a.max_rdma_read_in > max_rd || a.max_rdma_read_out < 0 ||
	    a.max_rdma_read_out > max_rd)
		return false;
	if (a.request_completion_flags &
	    ~(excl | DAT_COMPLETION_SUPPRESS_FLAG))
		return false;
	if ((a.recv_completion_flags & ~excl) ||
	    __builtin_popcount(a.recv_completion_flags) > 1)
		return false;
	if (!with_srq &&
	    (a.max_recv_dtos <= 0 || a.max_recv_dtos > max_wr ||
	     a.max_recv_iov <= 0 || a.max_recv_iov > max_iov))
		return false;
	return !with_srq || a.max_recv_dtos >= 0;
}

std::vector<std::uint8_t> gather(const struct kdat_useg *s, u32 n)
{
	std::vector<std::uint8_t> v;

	for (u32 i = 0; i < n; i++) {
		auto *p = (const std::uint8_t *)(uintptr_t)s[i].addr;
		v.insert(v.end(), p, p + s[i].length);
	}
	return v;
}

} // namespace

#define ARGS(type)                                                       \
	auto &a = *static_cast<type *>(arg);                              \
	if (a.hdr.size != sizeof(type))                                   \
		return -EINVAL

int File::ioctl(unsigned long req, void *arg)
{
	std::unique_lock<std::mutex> g(k->lock);
	DAT_RETURN st = DAT_SUCCESS;
	int err = 0;

	k->count(req);
	if (k->injected(req, &err, &st)) {
		if (err)
			return -err;
		static_cast<struct kdat_ioc_hdr *>(arg)->status = st;
		return 0;
	}
	auto done = [&](DAT_RETURN r) {
		static_cast<struct kdat_ioc_hdr *>(arg)->status = r;
		return 0;
	};

	switch (req) {
	case KDAT_IOC_VERSION: {
		ARGS(struct kdat_ioc_version);
		a.abi_version = KDAT_ABI_VERSION;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_IA_LIST: {
		ARGS(struct kdat_ioc_ia_list);
		a.count = 0;
		for (const FakeIa &ia : k->ias()) {
			if (a.count < a.max) {
				char *n = (char *)(uintptr_t)a.names +
					  (std::size_t)a.count * KDAT_NAME_LEN;
				std::memset(n, 0, KDAT_NAME_LEN);
				std::strncpy(n, ia.name.c_str(),
					     KDAT_NAME_LEN - 1);
			}
			a.count++;
		}
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_IA_OPEN: {
		ARGS(struct kdat_ioc_ia_open);
		const FakeIa *found = nullptr;
		for (const FakeIa &ia : k->ias())
			if (!strncmp(ia.name.c_str(), a.name, KDAT_NAME_LEN))
				found = &ia;
		if (!found)
			return done(E(DAT_PROVIDER_NOT_FOUND,
				      DAT_NAME_NOT_REGISTERED));
		if (a.async_qlen <= 0)
			return done(ARG(2));
		auto *ia = add<OIa>(T_IA, 0);
		ia->name = found->name;
		ia->addr.sin_family = AF_INET;
		inet_pton(AF_INET, found->ip.c_str(), &ia->addr.sin_addr);
		auto *e = add<OEvd>(T_EVD, ia->id);
		e->flags = DAT_EVD_ASYNC_FLAG;
		e->qlen = a.async_qlen;
		e->ring = make_ring((u32)a.async_qlen,
				    sizeof(struct kdat_uevent));
		e->shadow.assign(e->ring.entries, 0);
		ia->async_evd = e->id;
		a.ia = ia->id;
		a.async_evd = e->id;
		a.async_ring_offset = e->ring.offset;
		a.async_ring_size = (u32)e->ring.size;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_IA_CLOSE: {
		ARGS(struct kdat_ioc_ia_close);
		auto *ia = get<OIa>(a.ia, T_IA);
		if (!ia)
			return done(HANDLE(DAT_INVALID_HANDLE_IA));
		if (a.flags != DAT_CLOSE_ABRUPT_FLAG &&
		    a.flags != DAT_CLOSE_GRACEFUL_FLAG)
			return done(ARG(2));
		if (a.flags == DAT_CLOSE_GRACEFUL_FLAG) {
			for (auto &[id, o] : objs)
				if (o->ia == a.ia && id != a.ia &&
				    id != ia->async_evd)
					return done(E(DAT_INVALID_STATE));
		}
		close_ia(a.ia);
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_IA_QUERY: {
		ARGS(struct kdat_ioc_ia_query);
		auto *ia = get<OIa>(a.ia, T_IA);
		if (!ia)
			return done(HANDLE(DAT_INVALID_HANDLE_IA));
		auto &u = a.attr;
		std::memset(&u, 0, sizeof(u));
		std::strncpy(u.adapter_name, ia->name.c_str(),
			     KDAT_NAME_LEN - 1);
		std::strcpy(u.vendor_name, "fake");
		std::memcpy(u.ia_address, &ia->addr, sizeof(ia->addr));
		u.hw_ver = 1;
		u.fw_ver = (2ull << 32) | 3;
		u.max_eps = 1024;
		u.max_dto_per_ep = 4096;
		u.max_rdma_read_per_ep_in = 16;
		u.max_rdma_read_per_ep_out = 16;
		u.max_evds = 1024;
		u.max_evd_qlen = 65536;
		u.max_iov_segments_per_dto = KDAT_MAX_IOV;
		u.max_lmrs = 4096;
		u.max_lmr_block_size = 1ull << 30;
		u.max_pzs = 64;
		u.max_srqs = 64;
		u.max_ep_per_srq = 1024;
		u.max_recv_per_srq = 16384;
		u.max_message_size = 1ull << 31;
		u.max_rdma_size = 1ull << 31;
		a.async_evd = ia->async_evd;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_FREE: {
		ARGS(struct kdat_ioc_free);
		if (a.type == T_IA)
			return done(ARG(2));
		return done(free_obj(a.handle, a.type));
	}
	case KDAT_IOC_PZ_CREATE: {
		ARGS(struct kdat_ioc_pz_create);
		if (!get<OIa>(a.ia, T_IA))
			return done(HANDLE(DAT_INVALID_HANDLE_IA));
		a.pz = add<OPz>(T_PZ, a.ia)->id;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EVD_CREATE: {
		ARGS(struct kdat_ioc_evd_create);
		const u32 all = DAT_EVD_SOFTWARE_FLAG | DAT_EVD_CR_FLAG |
				DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG |
				DAT_EVD_RMR_BIND_FLAG | DAT_EVD_ASYNC_FLAG;
		if (!get<OIa>(a.ia, T_IA))
			return done(HANDLE(DAT_INVALID_HANDLE_IA));
		if (a.qlen <= 0 || a.qlen > 65536)
			return done(ARG(2));
		if (!a.flags || (a.flags & ~all))
			return done(ARG(5));
		auto *e = add<OEvd>(T_EVD, a.ia);
		e->flags = a.flags;
		e->qlen = a.qlen;
		e->ring = make_ring((u32)a.qlen, sizeof(struct kdat_uevent));
		e->shadow.assign(e->ring.entries, 0);
		a.evd = e->id;
		a.ring_offset = e->ring.offset;
		a.ring_size = e->ring.size;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EVD_WAIT: {
		ARGS(struct kdat_ioc_evd_wait);
		auto *e = get<OEvd>(a.evd, T_EVD);
		if (!e)
			return done(HANDLE(DAT_INVALID_HANDLE_EVD_ASYNC));
		if (a.threshold <= 0 || a.threshold > e->qlen)
			return done(ARG(3));
		if (a.flags & ~KDAT_WAIT_SEQ)
			return done(ARG(1));
		u32 id = a.evd;
		bool seq = a.flags & KDAT_WAIT_SEQ;
		auto ready = [&] {
			OEvd *x = get<OEvd>(id, T_EVD);
			if (!x)
				return true;
			collect(*x);
			return evd_count(*x) >= (u32)a.threshold ||
			       x->unwaitable || (seq && x->wakes != a.wake_seq);
		};
		bool woke = true;
		if (a.timeout_us == 0xffffffffu)
			k->cv.wait(g, ready);
		else
			woke = k->cv.wait_for(g,
					      std::chrono::microseconds(a.timeout_us),
					      ready);
		e = get<OEvd>(id, T_EVD);
		if (!e)
			return done(HANDLE(DAT_INVALID_HANDLE_EVD_ASYNC));
		a.count = evd_count(*e);
		if (a.count >= (u32)a.threshold)
			return done(DAT_SUCCESS);
		if (e->unwaitable)
			return done(E(DAT_INVALID_STATE,
				      DAT_INVALID_STATE_EVD_UNWAITABLE));
		if (!woke)
			return done(E(DAT_TIMEOUT_EXPIRED));
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EVD_CTL: {
		ARGS(struct kdat_ioc_evd_ctl);
		auto *e = get<OEvd>(a.evd, T_EVD);
		if (!e)
			return done(HANDLE(DAT_INVALID_HANDLE_EVD_ASYNC));
		if (a.op < KDAT_EVD_CTL_UNWAITABLE || a.op > KDAT_EVD_CTL_WAKE)
			return done(ARG(2));
		if (a.op != KDAT_EVD_CTL_WAKE)
			e->unwaitable = a.op == KDAT_EVD_CTL_UNWAITABLE;
		e->wakes++;
		e->ring.store(e->ring.hdr()->wakes, e->wakes);
		k->cv.notify_all();
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EVD_POST_SE: {
		ARGS(struct kdat_ioc_evd_post_se);
		auto *e = get<OEvd>(a.evd, T_EVD);
		if (!e)
			return done(HANDLE(DAT_INVALID_HANDLE_EVD_ASYNC));
		if (!(e->flags & DAT_EVD_SOFTWARE_FLAG))
			return done(ARG(1));
		if (evd_count(*e) >= (u32)e->qlen)
			return done(E(DAT_QUEUE_FULL));
		struct kdat_uevent u = {};
		u.event_number = DAT_SOFTWARE_EVENT;
		u.pointer = a.pointer;
		post(e, u, 0);
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_LMR_CREATE: {
		ARGS(struct kdat_ioc_lmr_create);
		const u32 all = DAT_MEM_PRIV_LOCAL_READ_FLAG |
				DAT_MEM_PRIV_REMOTE_READ_FLAG |
				DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
				DAT_MEM_PRIV_REMOTE_WRITE_FLAG;
		if (!get<OIa>(a.ia, T_IA))
			return done(HANDLE(DAT_INVALID_HANDLE_IA));
		if (!a.addr || !a.length || a.addr + a.length < a.addr)
			return done(ARG(4));
		if (!a.priv || (a.priv & ~all))
			return done(ARG(6));
		auto *pz = get<OPz>(a.pz, T_PZ);
		if (!pz || pz->ia != a.ia)
			return done(HANDLE(DAT_INVALID_HANDLE_PZ));
		auto *l = add<OLmr>(T_LMR, a.ia);
		l->pz = a.pz;
		l->addr = a.addr;
		l->len = a.length;
		l->priv = a.priv;
		l->ctx = next_lmr_ctx++;
		l->rctx = (a.priv & (DAT_MEM_PRIV_REMOTE_READ_FLAG |
				     DAT_MEM_PRIV_REMOTE_WRITE_FLAG)) ?
				  l->ctx ^ 0x5a5a0000u :
				  0;
		a.lmr = l->id;
		a.lmr_context = l->ctx;
		a.rmr_context = l->rctx;
		a.registered_size = a.length;
		a.registered_address = a.addr;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_SRQ_CREATE: {
		ARGS(struct kdat_ioc_srq_create);
		if (!get<OIa>(a.ia, T_IA))
			return done(HANDLE(DAT_INVALID_HANDLE_IA));
		auto *pz = get<OPz>(a.pz, T_PZ);
		if (!pz || pz->ia != a.ia)
			return done(HANDLE(DAT_INVALID_HANDLE_PZ));
		if (a.max_recv_dtos <= 0 || a.max_recv_dtos > 16384 ||
		    a.max_recv_iov <= 0 || a.max_recv_iov > KDAT_MAX_IOV ||
		    a.low_watermark < 0 || a.low_watermark > a.max_recv_dtos)
			return done(ARG(3));
		auto *s = add<OSrq>(T_SRQ, a.ia);
		s->pz = a.pz;
		s->max = a.max_recv_dtos;
		s->iov = a.max_recv_iov;
		s->lw = a.low_watermark;
		s->armed = a.low_watermark != 0;
		s->ring = make_ring((u32)a.max_recv_dtos,
				    sizeof(struct kdat_srq_wqe));
		/* no NEED_KICK until an EP joins (drain at EP create) */
		if (s->armed && (s32)s->avail.size() < s->lw) {
			s->armed = false;
			async_event(a.ia,
				    DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
				    s->id, DAT_SRQ_LOW_WATERMARK_EVENT);
		}
		a.srq = s->id;
		a.ring_offset = s->ring.offset;
		a.ring_size = s->ring.size;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_SRQ_QUERY: {
		ARGS(struct kdat_ioc_srq_query);
		auto *s = get<OSrq>(a.srq, T_SRQ);
		if (!s)
			return done(HANDLE(DAT_INVALID_HANDLE_SRQ));
		drain(*s);
		collect_all();
		a.ia = s->ia;
		a.pz = s->pz;
		a.state = DAT_SRQ_STATE_OPERATIONAL;
		a.max_recv_dtos = s->max;
		a.max_recv_iov = s->iov;
		a.low_watermark = s->lw;
		a.available_dto_count = (s32)s->avail.size();
		a.outstanding_dto_count = s->outstanding;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_SRQ_RESIZE:
	case KDAT_IOC_SRQ_SET_LW:
	case KDAT_IOC_SRQ_KICK: {
		ARGS(struct kdat_ioc_srq_op);
		auto *s = get<OSrq>(a.srq, T_SRQ);
		if (!s)
			return done(HANDLE(DAT_INVALID_HANDLE_SRQ));
		drain(*s);
		collect_all();
		if (req == KDAT_IOC_SRQ_RESIZE) {
			if (a.value <= 0 || a.value > 16384)
				return done(ARG(2));
			if (a.value < s->outstanding || a.value < s->lw)
				return done(E(DAT_INVALID_STATE,
					      DAT_INVALID_STATE_SRQ_OPERATIONAL));
			s->max = a.value;
		} else if (req == KDAT_IOC_SRQ_SET_LW) {
			if (a.value < 0 || a.value > s->max)
				return done(ARG(2));
			s->lw = a.value;
			s->armed = a.value != 0;
			if (s->armed && (s32)s->avail.size() < s->lw) {
				s->armed = false;
				async_event(s->ia,
					    DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
					    s->id, DAT_SRQ_LOW_WATERMARK_EVENT);
			}
		}
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_SRQ_POST: {
		ARGS(struct kdat_ioc_srq_post);
		auto *s = get<OSrq>(a.srq, T_SRQ);
		if (!s)
			return done(HANDLE(DAT_INVALID_HANDLE_SRQ));
		if (a.nseg > KDAT_MAX_IOV)
			return done(ARG(2));
		collect_all();
		DAT_RETURN r = post_one(*s, a.nseg, a.seg, a.cookie);
		if (r == DAT_SUCCESS)
			deliver_pending_srq(s->id);
		return done(r);
	}
	case KDAT_IOC_EP_CREATE: {
		ARGS(struct kdat_ioc_ep_create);
		if (!get<OIa>(a.ia, T_IA))
			return done(HANDLE(DAT_INVALID_HANDLE_IA));
		auto *pz = get<OPz>(a.pz, T_PZ);
		if (!pz || pz->ia != a.ia)
			return done(HANDLE(DAT_INVALID_HANDLE_PZ));
		auto evd_ok = [&](u32 id, u32 flag) {
			if (!id)
				return true;
			auto *e = get<OEvd>(id, T_EVD);
			return e && e->ia == a.ia && (e->flags & flag);
		};
		if (!evd_ok(a.recv_evd, DAT_EVD_DTO_FLAG))
			return done(HANDLE(DAT_INVALID_HANDLE_EVD_RECV));
		if (!evd_ok(a.request_evd, DAT_EVD_DTO_FLAG))
			return done(HANDLE(DAT_INVALID_HANDLE_EVD_REQUEST));
		if (!evd_ok(a.connect_evd, DAT_EVD_CONNECTION_FLAG))
			return done(HANDLE(DAT_INVALID_HANDLE_EVD_CONN));
		OSrq *s = nullptr;
		if (a.srq) {
			s = get<OSrq>(a.srq, T_SRQ);
			if (!s || s->ia != a.ia)
				return done(HANDLE(DAT_INVALID_HANDLE_SRQ));
			if (s->pz != a.pz)
				return done(ARG(2));
			if (!a.has_attr)
				return done(ARG(7));
		}
		struct kdat_uep_attr at;
		if (a.has_attr)
			at = a.attr;
		else
			default_ep_attr(at);
		if (!at.max_message_size || at.max_request_dtos <= 0 ||
		    at.max_request_iov <= 0 ||
		    at.max_request_iov > KDAT_MAX_IOV ||
		    (!s && (at.max_recv_dtos <= 0 || at.max_recv_iov <= 0 ||
			    at.max_recv_iov > KDAT_MAX_IOV)))
			return done(ARG(6));
		if (s)
			at.max_recv_iov = s->iov;
		auto *ep = add<OEp>(T_EP, a.ia);
		ep->pz = a.pz;
		ep->recv_evd = a.recv_evd;
		ep->req_evd = a.request_evd;
		ep->conn_evd = a.connect_evd;
		ep->srq = a.srq;
		ep->attr = at;
		if (s) {
			s->eps++;
			drain(*s);
		}
		a.ep = ep->id;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EP_QUERY: {
		ARGS(struct kdat_ioc_ep_query);
		auto *ep = get<OEp>(a.ep, T_EP);
		if (!ep)
			return done(HANDLE(DAT_INVALID_HANDLE_EP));
		a.state = ep->state;
		a.ia = ep->ia;
		a.pz = ep->pz;
		a.recv_evd = ep->recv_evd;
		a.request_evd = ep->req_evd;
		a.connect_evd = ep->conn_evd;
		a.srq = ep->srq;
		a.local_port = ep->local_port;
		a.remote_port = ep->remote_port;
		std::memset(a.remote_addr, 0, sizeof(a.remote_addr));
		std::memcpy(a.remote_addr, &ep->remote, sizeof(ep->remote));
		a.attr = ep->attr;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EP_MODIFY: {
		/* kernel/ep.c kdat_ib_ep_modify, in its order */
		ARGS(struct kdat_ioc_ep_modify);
		const u64 ok = DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS |
			       DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV |
			       DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE |
			       DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE |
			       DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
			       DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT;
		if (a.pad || a.attr.pad)
			return -EINVAL;		/* kdat_reserved_zero */
		auto *ep = get<OEp>(a.ep, T_EP);
		if (!ep)
			return done(HANDLE(DAT_INVALID_HANDLE_EP));
		if (a.mask & ~ok)
			return done(ARG(2));
		struct kdat_uep_attr at = ep->attr;
		if (a.mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)
			at.max_request_dtos = a.attr.max_request_dtos;
		if (a.mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV)
			at.max_request_iov = a.attr.max_request_iov;
		if (a.mask & DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE)
			at.max_message_size = a.attr.max_message_size;
		if (a.mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE)
			at.max_rdma_size = a.attr.max_rdma_size;
		if (a.mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN)
			at.max_rdma_read_in = a.attr.max_rdma_read_in;
		if (a.mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT)
			at.max_rdma_read_out = a.attr.max_rdma_read_out;
		if (!ep_attr_ok(at, ep->srq != 0))
			return done(ARG(3));
		if (ep->state != DAT_EP_STATE_UNCONNECTED)
			return done(E(DAT_INVALID_STATE,
				      DAT_INVALID_STATE_EP_NOTREADY));
		ep->attr = at;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EP_CONNECT: {
		ARGS(struct kdat_ioc_ep_connect);
		auto *ep = get<OEp>(a.ep, T_EP);
		if (!ep)
			return done(HANDLE(DAT_INVALID_HANDLE_EP));
		struct sockaddr_in dst;
		std::memcpy(&dst, a.addr, sizeof(dst));
		if (dst.sin_family != AF_INET)
			return done(E(DAT_INVALID_ADDRESS,
				      DAT_INVALID_ADDRESS_UNSUPPORTED));
		if (a.conn_qual == 0 || a.conn_qual > 65535)
			return done(ARG(3));
		if (a.pdata_size > 55)
			return done(ARG(5));
		if (ep->state != DAT_EP_STATE_UNCONNECTED)
			return done(E(DAT_INVALID_STATE,
				      DAT_INVALID_STATE_EP_NOTREADY));
		ep->state = DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
		ep->remote = dst;
		ep->remote_port = a.conn_qual;
		/* find the listener */
		for (File *f : k->all_files()) {
			for (auto &[id, o] : f->objs) {
				if (o->type != T_PSP)
					continue;
				auto &psp = static_cast<OPsp &>(*o);
				auto *pia = f->get<OIa>(psp.ia, T_IA);
				if (psp.qual != a.conn_qual || !pia ||
				    pia->addr.sin_addr.s_addr !=
					    dst.sin_addr.s_addr)
					continue;
				auto *cr = f->add<OCr>(T_CR, psp.ia);
				cr->psp = psp.id;
				cr->from = this;
				cr->from_ep = ep->id;
				cr->pdata.assign(a.pdata,
						 a.pdata + a.pdata_size);
				if (auto *my = get<OIa>(ep->ia, T_IA))
					cr->remote = my->addr;
				cr->remote_port = 40000 + ep->id;
				cr->qual = psp.qual;
				struct kdat_uevent u = {};
				u.event_number = DAT_CONNECTION_REQUEST_EVENT;
				u.cr = cr->id;
				u.sp = psp.id;
				u.conn_qual = psp.qual;
				f->post(psp.evd, u);
				return done(DAT_SUCCESS);
			}
		}
		ep->state = DAT_EP_STATE_DISCONNECTED;
		conn_event(*ep, DAT_CONNECTION_EVENT_NON_PEER_REJECTED, {});
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EP_DISCONNECT: {
		ARGS(struct kdat_ioc_ep_op);
		auto *ep = get<OEp>(a.ep, T_EP);
		if (!ep)
			return done(HANDLE(DAT_INVALID_HANDLE_EP));
		if (ep->state == DAT_EP_STATE_DISCONNECTED)
			return done(DAT_SUCCESS);
		if (ep->state != DAT_EP_STATE_CONNECTED)
			return done(E(DAT_INVALID_STATE,
				      DAT_INVALID_STATE_EP_UNCONNECTED));
		drop_peer(*ep, true);
		ep->state = DAT_EP_STATE_DISCONNECTED;
		conn_event(*ep, DAT_CONNECTION_EVENT_DISCONNECTED, {});
		flush_rq(*ep);
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EP_RESET: {
		ARGS(struct kdat_ioc_ep_op);
		auto *ep = get<OEp>(a.ep, T_EP);
		if (!ep)
			return done(HANDLE(DAT_INVALID_HANDLE_EP));
		if (ep->state != DAT_EP_STATE_DISCONNECTED &&
		    ep->state != DAT_EP_STATE_UNCONNECTED)
			return done(E(DAT_INVALID_STATE));
		ep->state = DAT_EP_STATE_UNCONNECTED;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EP_POST: {
		ARGS(struct kdat_ioc_ep_post);
		auto *ep = get<OEp>(a.ep, T_EP);
		if (!ep)
			return done(HANDLE(DAT_INVALID_HANDLE_EP));
		if (a.nseg > KDAT_MAX_IOV)
			return done(ARG(2));
		if (a.op == KDAT_POST_RECV) {
			if (ep->srq)
				return done(E(DAT_INVALID_STATE));
			if ((s32)a.nseg > ep->attr.max_recv_iov)
				return done(ARG(2));
			for (u32 i = 0; i < a.nseg; i++) {
				DAT_RETURN r = check_seg(
					ep->ia, ep->pz, a.seg[i],
					DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
				if (r != DAT_SUCCESS)
					return done(r);
			}
			Buf b;
			b.cookie = a.cookie;
			b.n = a.nseg;
			std::memcpy(b.seg, a.seg, a.nseg * sizeof(a.seg[0]));
			ep->rq.push_back(b);
			while (!ep->pending.empty()) {
				auto msg = std::move(ep->pending.front());
				ep->pending.pop_front();
				if (!try_deliver(*ep, msg)) {
					ep->pending.push_front(std::move(msg));
					break;
				}
			}
			return done(DAT_SUCCESS);
		}
		if (a.op != KDAT_POST_SEND)
			return done(E(DAT_MODEL_NOT_SUPPORTED));
		if ((s32)a.nseg > ep->attr.max_request_iov)
			return done(ARG(2));
		for (u32 i = 0; i < a.nseg; i++) {
			DAT_RETURN r = check_seg(ep->ia, ep->pz, a.seg[i],
						 DAT_MEM_PRIV_LOCAL_READ_FLAG);
			if (r != DAT_SUCCESS)
				return done(r);
		}
		OEp *peer = peer_of(*ep);
		if (ep->state != DAT_EP_STATE_CONNECTED || !peer)
			return done(E(DAT_INVALID_STATE,
				      DAT_INVALID_STATE_EP_DISCONNECTED));
		auto msg = gather(a.seg, a.nseg);
		ep->peer_file->deliver(*peer, msg);
		if (!(a.flags & DAT_COMPLETION_SUPPRESS_FLAG)) {
			struct kdat_uevent u = {};
			u.event_number = DAT_DTO_COMPLETION_EVENT;
			u.handle = ep->id;
			u.cookie = a.cookie;
			u.length = msg.size();
			post(ep->req_evd, u);
		}
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_EP_STATUS: {
		ARGS(struct kdat_ioc_ep_status);
		auto *ep = get<OEp>(a.ep, T_EP);
		if (!ep)
			return done(HANDLE(DAT_INVALID_HANDLE_EP));
		a.state = ep->state;
		a.recv_idle = ep->rq.empty();
		a.request_idle = 1;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_PSP_CREATE: {
		ARGS(struct kdat_ioc_psp_create);
		auto *ia = get<OIa>(a.ia, T_IA);
		if (!ia)
			return done(HANDLE(DAT_INVALID_HANDLE_IA));
		if (a.conn_qual == 0 || a.conn_qual > 65535)
			return done(ARG(2));
		if (a.flags == DAT_PSP_PROVIDER_FLAG)
			return done(E(DAT_MODEL_NOT_SUPPORTED));
		if (a.flags != DAT_PSP_CONSUMER_FLAG)
			return done(ARG(4));
		auto *e = get<OEvd>(a.evd, T_EVD);
		if (!e || e->ia != a.ia || !(e->flags & DAT_EVD_CR_FLAG))
			return done(HANDLE(DAT_INVALID_HANDLE_EVD_CR));
		for (File *f : k->all_files())
			for (auto &[id, o] : f->objs)
				if (o->type == T_PSP &&
				    static_cast<OPsp &>(*o).qual ==
					    a.conn_qual &&
				    f->get<OIa>(o->ia, T_IA)->addr.sin_addr
						    .s_addr ==
					    ia->addr.sin_addr.s_addr)
					return done(E(DAT_CONN_QUAL_IN_USE));
		auto *p = add<OPsp>(T_PSP, a.ia);
		p->evd = a.evd;
		p->qual = a.conn_qual;
		a.psp = p->id;
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_CR_QUERY: {
		ARGS(struct kdat_ioc_cr_query);
		auto *cr = get<OCr>(a.cr, T_CR);
		if (!cr)
			return done(HANDLE(DAT_INVALID_HANDLE_CR));
		a.pdata_size = (u32)cr->pdata.size();
		if (!cr->pdata.empty())
			std::memcpy(a.pdata, cr->pdata.data(), cr->pdata.size());
		a.remote_port = cr->remote_port;
		std::memset(a.remote_addr, 0, sizeof(a.remote_addr));
		std::memcpy(a.remote_addr, &cr->remote, sizeof(cr->remote));
		return done(DAT_SUCCESS);
	}
	case KDAT_IOC_CR_ACCEPT: {
		ARGS(struct kdat_ioc_cr_accept);
		auto *cr = get<OCr>(a.cr, T_CR);
		if (!cr)
			return done(HANDLE(DAT_INVALID_HANDLE_CR));
		if (a.pdata_size > 195)
			return done(ARG(3));
		auto *ep = get<OEp>(a.ep, T_EP);
		if (!ep || ep->ia != cr->ia)
			return done(HANDLE(DAT_INVALID_HANDLE_EP));
		if (ep->state != DAT_EP_STATE_UNCONNECTED)
			return done(E(DAT_INVALID_STATE,
				      DAT_INVALID_STATE_EP_NOTREADY));
		File *from = cr->from;
		u32 from_ep = cr->from_ep;
		u64 qual = cr->qual;
		struct sockaddr_in remote = cr->remote;
		u64 rport = cr->remote_port;
		objs.erase(a.cr);	/* claimed */
		OEp *act = from ? from->get<OEp>(from_ep, T_EP) : nullptr;
		if (!act ||
		    act->state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
			return done(E(DAT_INTERNAL_ERROR));
		ep->peer_file = from;
		ep->peer_ep = from_ep;
		ep->state = DAT_EP_STATE_CONNECTED;
		ep->remote = remote;
		ep->remote_port = rport;
		ep->local_port = qual;
		act->peer_file = this;
		act->peer_ep = ep->id;
		act->state = DAT_EP_STATE_CONNECTED;
		conn_event(*ep, DAT_CONNECTION_EVENT_ESTABLISHED, {});
		from->conn_event(*act, DAT_CONNECTION_EVENT_ESTABLISHED,
				 std::vector<std::uint8_t>(
					 a.pdata, a.pdata + a.pdata_size));
		return done(DAT_SUCCESS);
	}
	default:
		return -ENOTTY;
	}
}

} // namespace fake
