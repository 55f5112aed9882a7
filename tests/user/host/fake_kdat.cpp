// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The fake /dev/kdat: the protocol of include/uapi/kdat_abi.h, no DAT
// semantics (fake_kdat.hpp says what it does and what it never does).
#include "fake_kdat.hpp"
#include "alloc_fail.hpp"

#include <arpa/inet.h>
#include <sys/ioctl.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <stdexcept>

namespace fake {

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

Kernel *g_current;

/* kernel-flavour DAT_HANDLE_TYPE numbers, as KDAT_IOC_FREE names them */
constexpr u32 T_CR = 0, T_EP = 1, T_EVD = 2, T_IA = 3, T_LMR = 4, T_PSP = 5,
	      T_PZ = 6, T_RSP = 8, T_SRQ = 9, T_CNO = KDAT_TYPE_CNO;

/* The ABI's rule for an ID that names no live object of the type. */
DAT_RETURN bad_id(u32 type)
{
	u32 sub = 0;

	switch (type) {
	case T_CR: sub = DAT_INVALID_HANDLE_CR; break;
	case T_EP: sub = DAT_INVALID_HANDLE_EP; break;
	case T_EVD: sub = DAT_INVALID_HANDLE_EVD_ASYNC; break;
	case T_IA: sub = DAT_INVALID_HANDLE_IA; break;
	case T_LMR: sub = DAT_INVALID_HANDLE_LMR; break;
	case T_PSP: sub = DAT_INVALID_HANDLE_PSP; break;
	case T_PZ: sub = DAT_INVALID_HANDLE_PZ; break;
	case T_SRQ: sub = DAT_INVALID_HANDLE_SRQ; break;
	case T_RSP: sub = DAT_INVALID_HANDLE_RSP; break;
	case T_CNO: sub = DAT_INVALID_HANDLE_CNO; break;
	}
	return DAT_ERROR(DAT_INVALID_HANDLE, sub);
}

u32 load(u32 &x)
{
	return std::atomic_ref<u32>(x).load(std::memory_order_acquire);
}

void store(u32 &x, u32 v)
{
	std::atomic_ref<u32>(x).store(v, std::memory_order_release);
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
		return mem + entry_offset +
		       (std::size_t)(i & (entries - 1)) * entry_size;
	}
};

struct Obj {
	u32 type = 0;
	u32 ia = 0;
	/* EVD, SRQ, EP (its send ring, with send_rings()) */
	RingMem ring;
	/* EVD: what the fake produced, threads in KDAT_IOC_EVD_WAIT */
	u32 ktail = 0;
	int waiters = 0;
	bool unwaitable = false;
	/* SRQ, EP: what the fake took, and how much the next drains take */
	u32 khead = 0;
	std::vector<struct kdat_srq_wqe> taken;
	std::vector<struct kdat_ep_sqe> sent;
	std::deque<u32> drains;
	u32 drain_then = Kernel::kAll;
	struct kdat_ioc_srq_create srq = {};
	/* EP */
	struct kdat_ioc_ep_create ep = {};
	/* IA */
	std::string name;
	struct sockaddr_in addr = {};
	u32 async_evd = 0;
	/* CR */
	CrInfo cr;
	/* RSP */
	struct kdat_ioc_rsp_create rsp = {};
};

struct FreeDelete {
	void operator()(std::byte *p) const { std::free(p); }
};

} // namespace

/* One open file of the fake device. */
struct File : kdat::Device {
	explicit File(Kernel *k) : k(k) { k->add_file(this); }
	~File() override
	{
		alloc_fail::Suspend kernel_memory;
		std::lock_guard<std::recursive_mutex> g(k->lock);
		k->remove_file(this);
		k->cv.notify_all();
	}

	int ioctl(unsigned long request, void *arg) override;
	void *mmap(std::size_t length, std::uint64_t offset) override;
	void munmap(void *, std::size_t) override {}
	int fd() const override { return -1; }

	Kernel *k;
	std::map<u32, Obj> objs;
	u32 next_id = 1;
	u32 next_lmr_ctx = 0x100;
	u64 next_off = 0;
	std::map<u64, RingMem> rings;
	std::vector<std::unique_ptr<std::byte, FreeDelete>> ring_mem;

	Obj *get(u32 id, u32 type)
	{
		auto it = objs.find(id);

		if (!id || it == objs.end() || it->second.type != type)
			return nullptr;
		return &it->second;
	}

	/* A new object: the next free ID, never 0. */
	u32 add(u32 type, u32 ia)
	{
		while (!next_id || objs.count(next_id))
			next_id++;
		u32 id = next_id++;
		Obj &o = objs[id];

		o.type = type;
		o.ia = ia ? ia : id;
		return id;
	}

	RingMem make_ring(u32 min_entries, u32 entry_size);
	u32 pending(Obj &e);
	bool produce(u32 id, Obj &e, struct kdat_uevent u);
	void take(Obj &s, u32 n);
	void drain(Obj &s)
	{
		u32 n = s.drain_then;

		if (!s.drains.empty()) {
			n = s.drains.front();
			s.drains.pop_front();
		}
		take(s, n);
	}
	DAT_RETURN handle(unsigned long req, void *arg,
			  std::unique_lock<std::recursive_mutex> &g);
};

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
	alloc_fail::Suspend kernel_memory;
	{
		std::lock_guard<std::recursive_mutex> g(lock);
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
	std::lock_guard<std::recursive_mutex> g(lock);
	files_.push_back(f);
}

void Kernel::remove_file(File *f)
{
	files_.erase(std::remove(files_.begin(), files_.end(), f),
		     files_.end());
}

File *Kernel::file_of(const kdat::Device *d) const
{
	for (File *f : files_)
		if (f == d)
			return f;
	return nullptr;
}

std::uint64_t Kernel::ioctls(unsigned long request) const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	auto it = counts_.find(request);
	return it == counts_.end() ? 0 : it->second;
}

std::uint64_t Kernel::total_ioctls() const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	std::uint64_t n = 0;

	for (auto &[r, c] : counts_)
		n += c;
	return n;
}

void Kernel::reset_counts()
{
	std::lock_guard<std::recursive_mutex> g(lock);
	counts_.clear();
	calls_.clear();
}

std::vector<Call> Kernel::calls(unsigned long request) const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	std::vector<Call> out;

	for (const Call &c : calls_)
		if (c.request == request)
			out.push_back(c);
	return out;
}

std::uint64_t Kernel::record(const kdat::Device *file, unsigned long request,
			     const void *arg)
{
	Call c;

	counts_[request]++;
	c.request = request;
	c.file = file;
	c.seq = ++seq_;
	c.arg.resize(_IOC_SIZE(request));
	std::memcpy(c.arg.data(), arg, c.arg.size());
	calls_.push_back(std::move(c));
	return seq_;
}

/* The call @seq (if not reset since) with what the fake wrote back. */
void Kernel::recorded(std::uint64_t seq, const void *arg)
{
	for (auto it = calls_.rbegin(); it != calls_.rend(); ++it) {
		if (it->seq == seq) {
			std::memcpy(it->arg.data(), arg, it->arg.size());
			return;
		}
	}
}

void Kernel::fail_next(unsigned long request, int err)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	fail_err_[request] = err;
}

void Kernel::status_next(unsigned long request, DAT_RETURN status)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	fail_status_[request] = status;
}

void Kernel::fail_open(DAT_RETURN status)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	open_status_ = status;
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

void Kernel::answer_raw(unsigned long request, Answer fn)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	if (fn)
		answers_[request] = std::move(fn);
	else
		answers_.erase(request);
}

const Kernel::Answer *Kernel::scripted(unsigned long request) const
{
	auto it = answers_.find(request);
	return it == answers_.end() ? nullptr : &it->second;
}

std::size_t Kernel::objects() const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	std::size_t n = 0;

	for (File *f : files_)
		n += f->objs.size();
	return n;
}

int Kernel::files() const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	return (int)files_.size();
}

namespace {

/* The object @r names, or a failed expectation's nullptr. */
Obj *find(const Kernel &k, Ref r, u32 type)
{
	File *f = k.file_of(r.file);

	return f ? f->get(r.id, type) : nullptr;
}

/* The SRQ, or the EP with a send ring, @r names: a ring the user fills. */
Obj *find_producer_ring(const Kernel &k, Ref r)
{
	Obj *o = find(k, r, T_SRQ);

	if (!o)
		o = find(k, r, T_EP);
	return o && o->ring.mem ? o : nullptr;
}

} // namespace

bool Kernel::alive(Ref obj) const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	File *f = file_of(obj.file);

	return f && f->objs.count(obj.id);
}

bool Kernel::inject(Ref evd, struct kdat_uevent u)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	File *f = file_of(evd.file);
	Obj *e = f ? f->get(evd.id, T_EVD) : nullptr;

	if (!e)
		throw std::logic_error("inject: no such EVD");
	return f->produce(evd.id, *e, u);
}

void Kernel::await_waiters(Ref evd, int n) const
{
	std::unique_lock<std::recursive_mutex> g(lock);

	cv.wait(g, [&] {
		Obj *e = find(*this, evd, T_EVD);
		return !e || e->waiters >= n;
	});
}

struct kdat_ring_hdr *Kernel::ring(Ref obj) const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	File *f = file_of(obj.file);

	if (!f || !f->objs.count(obj.id) || !f->objs[obj.id].ring.mem)
		throw std::logic_error("ring: no such ring");
	return f->objs[obj.id].ring.hdr();
}

void Kernel::set_need_kick(Ref srq, bool on)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	Obj *s = find_producer_ring(*this, srq);

	if (!s)
		throw std::logic_error("set_need_kick: no such SRQ or EP ring");
	std::atomic_ref<u32>(s->ring.hdr()->flags)
		.store(on ? KDAT_RING_NEED_KICK : 0, std::memory_order_seq_cst);
}

void Kernel::drain(Ref srq, std::vector<std::uint32_t> next,
		   std::uint32_t then)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	Obj *s = find_producer_ring(*this, srq);

	if (!s)
		throw std::logic_error("drain: no such SRQ or EP ring");
	s->drains.assign(next.begin(), next.end());
	s->drain_then = then;
}

void Kernel::take(Ref srq, std::uint32_t n)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	File *f = file_of(srq.file);
	Obj *s = find_producer_ring(*this, srq);

	if (!s)
		throw std::logic_error("take: no such SRQ or EP ring");
	f->take(*s, n);
}

std::vector<struct kdat_srq_wqe> Kernel::taken(Ref srq) const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	Obj *s = find(*this, srq, T_SRQ);

	return s ? s->taken : std::vector<struct kdat_srq_wqe>{};
}

std::uint32_t Kernel::unconsumed(Ref srq) const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	Obj *s = find_producer_ring(*this, srq);

	return s ? load(s->ring.hdr()->tail) - s->khead : 0;
}

void Kernel::send_rings(bool on)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	send_rings_ = on;
}

void Kernel::set_ep_state(Ref ep, std::uint32_t state)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	Obj *e = find_producer_ring(*this, ep);

	if (!e || e->type != T_EP)
		throw std::logic_error("set_ep_state: no EP with a send ring");
	store(e->ring.hdr()->ep_state, state);
}

void Kernel::retire(Ref ep, std::uint32_t n)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	Obj *e = find_producer_ring(*this, ep);

	if (!e || e->type != T_EP)
		throw std::logic_error("retire: no EP with a send ring");
	store(e->ring.hdr()->retired, load(e->ring.hdr()->retired) + n);
}

std::vector<struct kdat_ep_sqe> Kernel::sent(Ref ep) const
{
	std::lock_guard<std::recursive_mutex> g(lock);
	Obj *e = find(*this, ep, T_EP);

	return e ? e->sent : std::vector<struct kdat_ep_sqe>{};
}

void Kernel::next_ring(std::uint32_t entries, std::uint32_t entry_size)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	next_entries_ = entries;
	next_entry_size_ = entry_size;
}

bool Kernel::take_next_ring(std::uint32_t *entries, std::uint32_t *entry_size)
{
	if (!next_entries_)
		return false;
	*entries = next_entries_;
	if (next_entry_size_)
		*entry_size = next_entry_size_;
	next_entries_ = next_entry_size_ = 0;
	return true;
}

std::uint32_t Kernel::make_cr(Ref ia, const CrInfo &info)
{
	std::lock_guard<std::recursive_mutex> g(lock);
	File *f = file_of(ia.file);

	if (!f || !f->get(ia.id, T_IA))
		throw std::logic_error("make_cr: no such IA");
	u32 id = f->add(T_CR, ia.id);
	f->objs[id].cr = info;
	return id;
}

/* ------------------------------------------------------------------ */
/* Rings                                                                */

RingMem File::make_ring(u32 min_entries, u32 entry_size)
{
	RingMem r;
	u32 n = 2;

	while (n < min_entries && n < (1u << 24))
		n <<= 1;
	k->take_next_ring(&n, &entry_size);
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
	alloc_fail::Suspend kernel_memory;
	std::lock_guard<std::recursive_mutex> g(k->lock);
	auto it = rings.find(offset);

	if (it == rings.end() || length > it->second.size) {
		errno = EINVAL;
		return nullptr;
	}
	return it->second.mem;
}

/* Events in @e's ring the user has not consumed (its head, clamped). */
u32 File::pending(Obj &e)
{
	u32 n = e.ktail - load(e.ring.hdr()->head);

	return n > e.ring.entries ? e.ring.entries : n;
}

bool File::produce(u32 id, Obj &e, struct kdat_uevent u)
{
	struct kdat_ring_hdr *h = e.ring.hdr();

	if (pending(e) >= e.ring.entries) {
		store(h->dropped, load(h->dropped) + 1);
		return false;
	}
	u.evd = id;
	std::memcpy(e.ring.slot(e.ktail), &u, sizeof(u));
	e.ktail++;
	store(h->tail, e.ktail);
	k->cv.notify_all();
	return true;
}

/* Copy one entry of @r out (as much of @out as the entry holds). */
template <class T>
static void copy_entry(const RingMem &r, u32 index, T &out)
{
	out = T{};
	std::memcpy(&out, r.slot(index),
		    std::min<std::size_t>(sizeof(out), r.entry_size));
}

/* Take up to @n entries the user published (its tail, clamped). */
void File::take(Obj &s, u32 n)
{
	struct kdat_ring_hdr *h = s.ring.hdr();
	u32 tail = load(h->tail);

	if (tail - s.khead > s.ring.entries)
		tail = s.khead + s.ring.entries;
	while (s.khead != tail && n) {
		if (s.type == T_EP) {
			struct kdat_ep_sqe e;

			copy_entry(s.ring, s.khead, e);
			s.sent.push_back(e);
		} else {
			struct kdat_srq_wqe w;

			copy_entry(s.ring, s.khead, w);
			s.taken.push_back(w);
		}
		s.khead++;
		n--;
	}
	store(h->head, s.khead);
}

/* ------------------------------------------------------------------ */
/* ioctls                                                               */

namespace {

/* The reserved fields the kernel refuses unless zero (kernel/chardev.c). */
bool reserved_zero(unsigned long req, const void *arg)
{
	auto zero = [](const void *p, std::size_t n) {
		auto *b = static_cast<const unsigned char *>(p);
		return std::all_of(b, b + n, [](unsigned char c) { return !c; });
	};

	switch (req) {
	case KDAT_IOC_VERSION: {
		auto *a = static_cast<const kdat_ioc_version *>(arg);
		return !a->pad && !a->reserved;
	}
	case KDAT_IOC_IA_OPEN:
		return !static_cast<const kdat_ioc_ia_open *>(arg)->reserved;
	case KDAT_IOC_EP_CREATE:
		return !static_cast<const kdat_ioc_ep_create *>(arg)->attr.pad;
	case KDAT_IOC_EP_CONNECT: {
		auto *a = static_cast<const kdat_ioc_ep_connect *>(arg);
		return !a->pad && zero(a->pad2, sizeof(a->pad2));
	}
	case KDAT_IOC_EP_POST:
		return !static_cast<const kdat_ioc_ep_post *>(arg)->pad;
	case KDAT_IOC_EVD_POST_SE:
		return !static_cast<const kdat_ioc_evd_post_se *>(arg)->pad;
	case KDAT_IOC_EP_MODIFY: {
		auto *a = static_cast<const kdat_ioc_ep_modify *>(arg);
		return !a->pad && !a->attr.pad;
	}
	case KDAT_IOC_CR_QUERY: {
		auto *a = static_cast<const kdat_ioc_cr_query *>(arg);
		return zero(a->pad, sizeof(a->pad)) && !a->reserved;
	}
	case KDAT_IOC_CNO_WAIT:
		return !static_cast<const kdat_ioc_cno_wait *>(arg)->pad;
	case KDAT_IOC_EVD_NOTIFY:
		return !static_cast<const kdat_ioc_evd_notify *>(arg)->pad;
	default:
		return true;
	}
}

bool known(unsigned long req)
{
	switch (req) {
	case KDAT_IOC_VERSION: case KDAT_IOC_IA_LIST: case KDAT_IOC_IA_OPEN:
	case KDAT_IOC_IA_CLOSE: case KDAT_IOC_IA_QUERY: case KDAT_IOC_FREE:
	case KDAT_IOC_PZ_CREATE: case KDAT_IOC_EVD_CREATE:
	case KDAT_IOC_EVD_WAIT: case KDAT_IOC_EVD_POST_SE:
	case KDAT_IOC_LMR_CREATE: case KDAT_IOC_SRQ_CREATE:
	case KDAT_IOC_SRQ_QUERY: case KDAT_IOC_SRQ_RESIZE:
	case KDAT_IOC_SRQ_SET_LW: case KDAT_IOC_SRQ_KICK:
	case KDAT_IOC_SRQ_POST: case KDAT_IOC_EP_CREATE:
	case KDAT_IOC_EP_QUERY: case KDAT_IOC_EP_CONNECT:
	case KDAT_IOC_EP_DISCONNECT: case KDAT_IOC_EP_RESET:
	case KDAT_IOC_EP_POST: case KDAT_IOC_EP_STATUS:
	case KDAT_IOC_PSP_CREATE: case KDAT_IOC_CR_QUERY:
	case KDAT_IOC_CR_ACCEPT: case KDAT_IOC_EVD_CTL:
	case KDAT_IOC_EP_MODIFY: case KDAT_IOC_RSP_CREATE:
	case KDAT_IOC_RSP_QUERY: case KDAT_IOC_CNO_CREATE:
	case KDAT_IOC_CNO_WAIT: case KDAT_IOC_EVD_NOTIFY:
	case KDAT_IOC_EP_KICK:
		return true;
	default:
		return false;
	}
}

/* A post's segment list: at most KDAT_MAX_IOV, reserved fields zero. */
DAT_RETURN segs_ok(u32 nseg, const struct kdat_useg *seg)
{
	if (nseg > KDAT_MAX_IOV)
		return DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	for (u32 i = 0; i < nseg; i++)
		if (seg[i].pad)
			return DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	return DAT_SUCCESS;
}

/*
 * A ring entry of type @Entry with @iov segments (at least @least, at most
 * KDAT_MAX_IOV), as the kernel lays it out: cache-line multiples, never
 * more than the whole struct.
 */
template <class Entry>
u32 entry_size(std::int32_t iov, std::int32_t least)
{
	std::size_t n = iov < least ? least :
				      std::min<std::size_t>(iov, KDAT_MAX_IOV);
	std::size_t sz = offsetof(Entry, seg) + n * sizeof(struct kdat_useg);

	sz = (sz + 63) & ~(std::size_t)63;
	return (u32)std::min(sz, sizeof(Entry));
}

/* The post ring's entry size for @iov segments. */
u32 wqe_size(std::int32_t iov)
{
	return entry_size<struct kdat_srq_wqe>(iov, 0);
}

/*
 * The send ring's entry size for @iov segments (kdat_uep_init), with room
 * for one at least: the fake has no provider defaults for an EP made
 * without attributes.
 */
u32 sqe_size(std::int32_t iov)
{
	return entry_size<struct kdat_ep_sqe>(iov, 1);
}

} // namespace

int File::ioctl(unsigned long req, void *arg)
{
	alloc_fail::Suspend kernel_memory;
	std::unique_lock<std::recursive_mutex> g(k->lock);
	auto *hdr = static_cast<struct kdat_ioc_hdr *>(arg);
	DAT_RETURN st = DAT_SUCCESS;
	int err = 0;

	if (!known(req))
		return -ENOTTY;
	const std::uint64_t seq = k->record(this, req, arg);
	if (k->injected(req, &err, &st)) {
		if (err)
			return -err;
		hdr->status = st;
		return 0;
	}
	/* the library passes the struct it was built with, reserved zero */
	if (hdr->size != _IOC_SIZE(req) || !reserved_zero(req, arg))
		return -EINVAL;
	st = handle(req, arg, g);
	if (const Kernel::Answer *a = k->scripted(req))
		st = (*a)(arg);
	hdr->status = st;
	k->recorded(seq, arg);
	return 0;
}

#define ARGS(type) auto &a = *static_cast<type *>(arg)

DAT_RETURN File::handle(unsigned long req, void *arg,
			std::unique_lock<std::recursive_mutex> &g)
{
	switch (req) {
	case KDAT_IOC_VERSION: {
		ARGS(struct kdat_ioc_version);
		a.abi_version = KDAT_ABI_VERSION;
		a.min_abi_version = KDAT_ABI_MIN_COMPAT;
		a.features = KDAT_FEATURES_ALL;
		return DAT_SUCCESS;
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
		return DAT_SUCCESS;
	}
	case KDAT_IOC_IA_OPEN: {
		ARGS(struct kdat_ioc_ia_open);
		const FakeIa *found = nullptr;
		if (a.flags & ~KDAT_IA_OPEN_FLAGS_ALL)
			return DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
		for (const FakeIa &ia : k->ias())
			if (!strncmp(ia.name.c_str(), a.name, KDAT_NAME_LEN))
				found = &ia;
		if (!found)
			return DAT_ERROR(DAT_PROVIDER_NOT_FOUND,
					 DAT_NAME_NOT_REGISTERED);
		u32 ia = add(T_IA, 0);
		u32 evd = add(T_EVD, ia);
		Obj &i = objs[ia];
		i.name = found->name;
		i.addr.sin_family = AF_INET;
		inet_pton(AF_INET, found->ip.c_str(), &i.addr.sin_addr);
		i.async_evd = evd;
		Obj &e = objs[evd];
		e.ring = make_ring((u32)a.async_qlen, sizeof(struct kdat_uevent));
		a.ia = ia;
		a.async_evd = evd;
		a.async_ring_offset = e.ring.offset;
		a.async_ring_size = (u32)e.ring.size;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_IA_CLOSE: {
		ARGS(struct kdat_ioc_ia_close);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		for (auto it = objs.begin(); it != objs.end();)
			it = it->second.ia == a.ia ? objs.erase(it) : std::next(it);
		k->cv.notify_all();
		return DAT_SUCCESS;
	}
	case KDAT_IOC_IA_QUERY: {
		ARGS(struct kdat_ioc_ia_query);
		Obj *ia = get(a.ia, T_IA);
		if (!ia)
			return bad_id(T_IA);
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
		return DAT_SUCCESS;
	}
	case KDAT_IOC_FREE: {
		ARGS(struct kdat_ioc_free);
		if (a.type == T_IA)	/* IA_CLOSE closes IAs */
			return DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		if (!get(a.handle, a.type))
			return bad_id(a.type);
		objs.erase(a.handle);
		k->cv.notify_all();
		return DAT_SUCCESS;
	}
	case KDAT_IOC_PZ_CREATE: {
		ARGS(struct kdat_ioc_pz_create);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		a.pz = add(T_PZ, a.ia);
		return DAT_SUCCESS;
	}
	case KDAT_IOC_EVD_CREATE: {
		ARGS(struct kdat_ioc_evd_create);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		a.evd = add(T_EVD, a.ia);
		Obj &e = objs[a.evd];
		e.ring = make_ring((u32)a.qlen, sizeof(struct kdat_uevent));
		a.ring_offset = e.ring.offset;
		a.ring_size = e.ring.size;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_EVD_WAIT: {
		/* the wait protocol of struct kdat_ioc_evd_wait */
		ARGS(struct kdat_ioc_evd_wait);
		const u32 id = a.evd;
		const u32 threshold = a.threshold > 0 ? (u32)a.threshold : 1;
		const bool seq = a.flags & KDAT_WAIT_SEQ;
		bool woken = false;
		Obj *e = get(id, T_EVD);
		if (!e)
			return bad_id(T_EVD);
		auto ready = [&] {
			Obj *x = get(id, T_EVD);
			if (!x || pending(*x) >= threshold || x->unwaitable)
				return true;
			woken = seq && load(x->ring.hdr()->wakes) != a.wake_seq;
			return woken;
		};
		e->waiters++;
		k->cv.notify_all();
		bool in_time = true;
		if (a.timeout_us == 0xffffffffu)
			k->cv.wait(g, ready);
		else
			in_time = k->cv.wait_for(
				g, std::chrono::microseconds(a.timeout_us),
				ready);
		e = get(id, T_EVD);
		if (!e)
			return bad_id(T_EVD);
		e->waiters--;
		a.count = pending(*e);
		if (a.count < threshold && e->unwaitable)
			return DAT_ERROR(DAT_INVALID_STATE,
					 DAT_INVALID_STATE_EVD_UNWAITABLE);
		/* woken, or enough events: a new look; else the time ran out */
		return in_time ? (DAT_RETURN)DAT_SUCCESS : DAT_ERROR(DAT_TIMEOUT_EXPIRED, 0);
	}
	case KDAT_IOC_EVD_CTL: {
		ARGS(struct kdat_ioc_evd_ctl);
		Obj *e = get(a.evd, T_EVD);
		if (!e)
			return bad_id(T_EVD);
		/* a busy poll: this double has no device to poll */
		if (a.op == KDAT_EVD_CTL_POLL)
			return DAT_SUCCESS;
		if (a.op == KDAT_EVD_CTL_UNWAITABLE || a.op == KDAT_EVD_CTL_WAITABLE)
			e->unwaitable = a.op == KDAT_EVD_CTL_UNWAITABLE;
		store(e->ring.hdr()->wakes, load(e->ring.hdr()->wakes) + 1);
		k->cv.notify_all();
		return DAT_SUCCESS;
	}
	case KDAT_IOC_EVD_POST_SE: {
		ARGS(struct kdat_ioc_evd_post_se);
		return get(a.evd, T_EVD) ? (DAT_RETURN)DAT_SUCCESS : bad_id(T_EVD);
	}
	case KDAT_IOC_CNO_CREATE: {
		ARGS(struct kdat_ioc_cno_create);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		a.cno = add(T_CNO, a.ia);
		return DAT_SUCCESS;
	}
	case KDAT_IOC_CNO_WAIT: {
		/* no trigger of its own: a test scripts the answer */
		ARGS(struct kdat_ioc_cno_wait);
		if (!get(a.cno, T_CNO))
			return bad_id(T_CNO);
		return DAT_ERROR(DAT_TIMEOUT_EXPIRED, 0);
	}
	case KDAT_IOC_EVD_NOTIFY: {
		ARGS(struct kdat_ioc_evd_notify);
		if (!get(a.evd, T_EVD))
			return bad_id(T_EVD);
		if (a.cno && !get(a.cno, T_CNO))
			return bad_id(T_CNO);
		return DAT_SUCCESS;
	}
	case KDAT_IOC_LMR_CREATE: {
		ARGS(struct kdat_ioc_lmr_create);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		a.lmr = add(T_LMR, a.ia);
		a.lmr_context = next_lmr_ctx++;
		a.rmr_context = (a.priv & (DAT_MEM_PRIV_REMOTE_READ_FLAG |
					   DAT_MEM_PRIV_REMOTE_WRITE_FLAG)) ?
					a.lmr_context ^ 0x5a5a0000u :
					0;
		a.registered_size = a.length;
		a.registered_address = a.addr;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_SRQ_CREATE: {
		ARGS(struct kdat_ioc_srq_create);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		a.srq = add(T_SRQ, a.ia);
		Obj &s = objs[a.srq];
		s.ring = make_ring((u32)a.max_recv_dtos,
				   wqe_size(a.max_recv_iov));
		s.srq = a;
		a.ring_offset = s.ring.offset;
		a.ring_size = s.ring.size;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_SRQ_QUERY: {
		ARGS(struct kdat_ioc_srq_query);
		Obj *s = get(a.srq, T_SRQ);
		if (!s)
			return bad_id(T_SRQ);
		drain(*s);
		a.ia = s->srq.ia;
		a.pz = s->srq.pz;
		a.state = DAT_SRQ_STATE_OPERATIONAL;
		a.max_recv_dtos = s->srq.max_recv_dtos;
		a.max_recv_iov = s->srq.max_recv_iov;
		a.low_watermark = s->srq.low_watermark;
		a.available_dto_count = 0;
		a.outstanding_dto_count = 0;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_SRQ_KICK: {
		ARGS(struct kdat_ioc_srq_op);
		Obj *s = get(a.srq, T_SRQ);
		if (!s)
			return bad_id(T_SRQ);
		drain(*s);
		return DAT_SUCCESS;
	}
	case KDAT_IOC_SRQ_RESIZE:
	case KDAT_IOC_SRQ_SET_LW: {
		ARGS(struct kdat_ioc_srq_op);
		return get(a.srq, T_SRQ) ? (DAT_RETURN)DAT_SUCCESS : bad_id(T_SRQ);
	}
	case KDAT_IOC_SRQ_POST: {
		ARGS(struct kdat_ioc_srq_post);
		if (!get(a.srq, T_SRQ))
			return bad_id(T_SRQ);
		return segs_ok(a.nseg, a.seg);
	}
	case KDAT_IOC_EP_CREATE: {
		ARGS(struct kdat_ioc_ep_create);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		a.ep = add(T_EP, a.ia);
		Obj &e = objs[a.ep];
		a.ring_offset = 0;
		a.ring_size = 0;
		if (k->offers_send_rings()) {
			const u32 dtos = a.attr.max_request_dtos > 0 ?
					 (u32)a.attr.max_request_dtos : 0;

			/* kdat_uep_init: an idle send queue, the first post kicks */
			e.ring = make_ring(dtos, sqe_size(a.attr.max_request_iov));
			e.ring.hdr()->depth = std::min(dtos, e.ring.entries);
			e.ring.hdr()->ep_state = DAT_EP_STATE_UNCONNECTED;
			e.ring.hdr()->flags = KDAT_RING_NEED_KICK;
			a.ring_offset = e.ring.offset;
			a.ring_size = e.ring.size;
		}
		e.ep = a;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_EP_QUERY: {
		ARGS(struct kdat_ioc_ep_query);
		Obj *ep = get(a.ep, T_EP);
		if (!ep)
			return bad_id(T_EP);
		a.state = DAT_EP_STATE_UNCONNECTED;
		a.ia = ep->ep.ia;
		a.pz = ep->ep.pz;
		a.recv_evd = ep->ep.recv_evd;
		a.request_evd = ep->ep.request_evd;
		a.connect_evd = ep->ep.connect_evd;
		a.srq = ep->ep.srq;
		a.attr = ep->ep.attr;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_EP_STATUS: {
		ARGS(struct kdat_ioc_ep_status);
		if (!get(a.ep, T_EP))
			return bad_id(T_EP);
		a.state = DAT_EP_STATE_UNCONNECTED;
		a.recv_idle = 1;
		a.request_idle = 1;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_EP_MODIFY: {
		ARGS(struct kdat_ioc_ep_modify);
		return get(a.ep, T_EP) ? (DAT_RETURN)DAT_SUCCESS : bad_id(T_EP);
	}
	case KDAT_IOC_EP_CONNECT: {
		ARGS(struct kdat_ioc_ep_connect);
		return get(a.ep, T_EP) ? (DAT_RETURN)DAT_SUCCESS : bad_id(T_EP);
	}
	case KDAT_IOC_EP_DISCONNECT:
	case KDAT_IOC_EP_RESET: {
		ARGS(struct kdat_ioc_ep_op);
		return get(a.ep, T_EP) ? (DAT_RETURN)DAT_SUCCESS : bad_id(T_EP);
	}
	case KDAT_IOC_EP_POST: {
		ARGS(struct kdat_ioc_ep_post);
		if (!get(a.ep, T_EP))
			return bad_id(T_EP);
		return segs_ok(a.nseg, a.seg);
	}
	case KDAT_IOC_EP_KICK: {
		/* kernel/chardev.c ep_kick: the handle, the flags, a ring */
		ARGS(struct kdat_ioc_ep_op);
		Obj *ep = get(a.ep, T_EP);
		if (!ep)
			return bad_id(T_EP);
		if (a.value & ~KDAT_EP_KICK_FLAGS_ALL)
			return DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		if (!ep->ring.mem)
			return DAT_ERROR(DAT_INVALID_STATE, 0);
		drain(*ep);
		return DAT_SUCCESS;
	}
	case KDAT_IOC_PSP_CREATE: {
		ARGS(struct kdat_ioc_psp_create);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		a.psp = add(T_PSP, a.ia);
		return DAT_SUCCESS;
	}
	case KDAT_IOC_CR_QUERY: {
		ARGS(struct kdat_ioc_cr_query);
		Obj *cr = get(a.cr, T_CR);
		if (!cr)
			return bad_id(T_CR);
		a.pdata_size = (u32)std::min<std::size_t>(cr->cr.pdata.size(),
							  KDAT_PDATA_LEN);
		if (a.pdata_size)
			std::memcpy(a.pdata, cr->cr.pdata.data(), a.pdata_size);
		a.remote_port = cr->cr.remote_port;
		std::memset(a.remote_addr, 0, sizeof(a.remote_addr));
		std::memcpy(a.remote_addr, &cr->cr.remote, sizeof(cr->cr.remote));
		a.local_ep = cr->cr.local_ep;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_RSP_CREATE: {
		ARGS(struct kdat_ioc_rsp_create);
		if (!get(a.ia, T_IA))
			return bad_id(T_IA);
		if (!get(a.ep, T_EP))
			return bad_id(T_EP);
		if (!get(a.evd, T_EVD))
			return DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
		a.rsp = add(T_RSP, a.ia);
		objs[a.rsp].rsp = a;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_RSP_QUERY: {
		ARGS(struct kdat_ioc_rsp_query);
		Obj *rsp = get(a.rsp, T_RSP);
		if (!rsp)
			return bad_id(T_RSP);
		a.ia = rsp->rsp.ia;
		a.conn_qual = rsp->rsp.conn_qual;
		a.evd = rsp->rsp.evd;
		a.ep = rsp->rsp.ep;
		return DAT_SUCCESS;
	}
	case KDAT_IOC_CR_ACCEPT: {
		ARGS(struct kdat_ioc_cr_accept);
		if (!get(a.cr, T_CR))
			return bad_id(T_CR);
		objs.erase(a.cr);	/* an accepted CR is consumed */
		return DAT_SUCCESS;
	}
	}
	return DAT_ERROR(DAT_INTERNAL_ERROR, 0);	/* not reached: known() */
}

} // namespace fake
