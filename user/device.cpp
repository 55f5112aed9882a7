// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The real /dev/kdat device: an owned file descriptor, ioctl and mmap.
#include "ioctl.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace kdat {

namespace {

class UniqueFd {
public:
	explicit UniqueFd(int fd = -1) : fd_(fd) {}
	UniqueFd(const UniqueFd &) = delete;
	UniqueFd &operator=(const UniqueFd &) = delete;
	~UniqueFd()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	int get() const { return fd_; }

private:
	int fd_;
};

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
	const char *path = std::getenv("KDAT_DEVICE");
	int fd;

	if (!path || !*path)
		path = "/dev/" KDAT_DEVICE_NAME;
	fd = ::open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		*status = errno_to_dat(errno);
		return nullptr;
	}
	auto dev = std::make_unique<KdatDevice>(fd);

	struct kdat_ioc_version v = {};
	DAT_RETURN r = call(*dev, KDAT_IOC_VERSION, v);
	if (!ok(r) || v.abi_version != KDAT_ABI_VERSION) {
		std::fprintf(stderr,
			     "libdat: %s speaks kdat ABI %u, this library %u\n",
			     path, ok(r) ? v.abi_version : 0u,
			     (unsigned)KDAT_ABI_VERSION);
		*status = err(DAT_INTERNAL_ERROR);
		return nullptr;
	}
	*status = DAT_SUCCESS;
	return dev;
}

void set_device_opener(DeviceOpener o)
{
	std::lock_guard<std::mutex> g(opener_lock);
	opener = std::move(o);
}

std::unique_ptr<Device> open_device(DAT_RETURN *status)
{
	DeviceOpener o;
	{
		std::lock_guard<std::mutex> g(opener_lock);
		o = opener;
	}
	return o ? o(status) : open_kdat_device(status);
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
