// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The real /dev/kdat device: an owned file descriptor, ioctl and mmap.
#include "ioctl.hpp"
#include "unique_fd.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace kdat {

namespace {

class KdatDevice final : public Device {
public:
	explicit KdatDevice(int fd) : fd_(fd) {}

	int ioctl(unsigned long request, void *arg) override
	{
		int r;

		do {
			r = ::ioctl(fd_.get(), request, arg);
		} while (r < 0 && errno == EINTR);
		return r < 0 ? -errno : 0;
	}

	/*
	 * The kernel's ring offsets only grow (one /dev/kdat file per
	 * process): truncated to a 32-bit off_t, one would map whatever ring
	 * lies at the remainder.  CMakeLists.txt builds with 64-bit offsets.
	 */
	static_assert(sizeof(off_t) >= sizeof(uint64_t),
		      "libdat needs _FILE_OFFSET_BITS=64");

	void *mmap(size_t length, uint64_t offset) override
	{
		void *p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd_.get(), (off_t)offset);

		if (p == MAP_FAILED)
			return nullptr;
		/* a forked child gets no ring (the kernel says so too) */
		::madvise(p, length, MADV_DONTFORK);
		return p;
	}

	void munmap(void *addr, size_t length) override
	{
		::munmap(addr, length);
	}

	int fd() const override { return fd_.get(); }

private:
	UniqueFd fd_;
};

std::mutex opener_lock;
DeviceOpener opener;

} // namespace

std::unique_ptr<Device> open_kdat_device(DAT_RETURN *status)
{
	/* secure_getenv: a set-ID program opens /dev/kdat, nothing else */
	const char *path = secure_getenv("KDAT_DEVICE");
	int fd;

	if (!path || !*path)
		path = "/dev/" KDAT_DEVICE_NAME;
	fd = ::open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		*status = errno_to_dat(errno);
		return nullptr;
	}
	*status = DAT_SUCCESS;
	return std::make_unique<KdatDevice>(fd);
}

namespace {

/*
 * The module ABIs this library works with: [kLibdatAbiMin, its own], and
 * a newer module that still serves its ABI (the module's min_abi_version
 * at most ours); plus the KDAT_FEATURE_* bits it cannot do without (none
 * so far).  A module that predates min_abi_version reports 0 there: it
 * serves its own ABI only.
 */
constexpr std::uint32_t kLibdatAbiMin = 2;
constexpr std::uint32_t kLibdatAbiMax = KDAT_ABI_VERSION;
constexpr std::uint64_t kLibdatAbiFeatures = 0;

/* Each mismatch is said once per process, not on every open. */
std::mutex abi_report_lock;
std::set<std::string> abi_reported;

void report_abi(const std::string &msg)
{
	{
		std::lock_guard<std::mutex> g(abi_report_lock);
		if (!abi_reported.insert(msg).second)
			return;
	}
	std::fprintf(stderr, "libdat: %s\n", msg.c_str());
}

/* Why this library cannot use a module that answered @v; empty if it can. */
std::string abi_mismatch(const struct kdat_ioc_version &v)
{
	std::uint32_t min = v.min_abi_version ? v.min_abi_version :
						 v.abi_version;
	std::uint64_t missing = kLibdatAbiFeatures & ~v.features;
	char b[160];

	if (v.abi_version < kLibdatAbiMin) {
		std::snprintf(b, sizeof(b),
			      "kdat module too old (ABI %u, need >= %u)",
			      v.abi_version, kLibdatAbiMin);
	} else if (min > kLibdatAbiMax && v.min_abi_version) {
		std::snprintf(b, sizeof(b),
			      "kdat module too new (ABI %u, serves libraries "
			      "of ABI >= %u, need <= %u)",
			      v.abi_version, min, kLibdatAbiMax);
	} else if (min > kLibdatAbiMax) {
		std::snprintf(b, sizeof(b),
			      "kdat module too new (ABI %u, need <= %u)",
			      v.abi_version, kLibdatAbiMax);
	} else if (missing) {
		std::snprintf(b, sizeof(b),
			      "kdat module too old (ABI %u lacks features "
			      "0x%llx)",
			      v.abi_version, (unsigned long long)missing);
	} else {
		return {};
	}
	return b;
}

} // namespace

void set_device_opener(DeviceOpener o)
{
	std::lock_guard<std::mutex> g(opener_lock);
	opener = std::move(o);
}

bool device_opener_set()
{
	std::lock_guard<std::mutex> g(opener_lock);
	return bool(opener);
}

std::mutex &device_opener_fork_lock() noexcept
{
	return opener_lock;
}

std::mutex &abi_report_fork_lock() noexcept
{
	return abi_report_lock;
}

std::unique_ptr<Device> open_device(DAT_RETURN *status)
{
	DeviceOpener o;
	{
		std::lock_guard<std::mutex> g(opener_lock);
		o = opener;
	}
	std::unique_ptr<Device> dev = o ? o(status) : open_kdat_device(status);
	if (!dev)
		return nullptr;

	/*
	 * Every open file asks: the module may have been replaced since.
	 * A module this library cannot use is no provider of the IA.
	 */
	struct kdat_ioc_version v = {};
	DAT_RETURN r = call(*dev, KDAT_IOC_VERSION, v);
	std::string why;
	if (!ok(r)) {
		char b[96];

		std::snprintf(b, sizeof(b),
			      "kdat module does not answer its version "
			      "(status 0x%x)", (unsigned)r);
		why = b;
	} else {
		why = abi_mismatch(v);
	}
	if (!why.empty()) {
		report_abi(why);
		*status = err(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
		return nullptr;
	}
	*status = DAT_SUCCESS;
	return dev;
}

DAT_RETURN Mapping::map(const std::shared_ptr<Device> &dev, size_t len,
			uint64_t offset, Mapping &out)
{
	if (!len)
		return err(DAT_INTERNAL_ERROR);
	void *p = dev->mmap(len, offset);
	if (!p)
		return errno == ENOMEM ? no_memory() : err(DAT_INTERNAL_ERROR);
	out = Mapping(dev, p, len);
	return DAT_SUCCESS;
}

} // namespace kdat
