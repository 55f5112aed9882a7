// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The character device as the library sees it.
//
// Device is the one seam between the library and /dev/kdat: every ioctl
// and every mmap goes through it.  KdatDevice is the real thing (an open
// file of /dev/kdat); the host unit tests install a fake with
// set_device_opener() and run the whole library without a kernel.
//
// call() fills the ABI header (struct kdat_ioc_hdr) and returns the
// DAT_RETURN the kernel chose, unchanged; an ABI-level failure (-1/errno)
// becomes a status through errno_to_dat().
#pragma once

#include <uapi/kdat_abi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "errors.hpp"

namespace kdat {

class Device {
public:
	virtual ~Device() = default;
	/* 0, or a negative errno */
	virtual int ioctl(unsigned long request, void *arg) = 0;
	/* the mapping, or nullptr with errno set */
	virtual void *mmap(size_t length, uint64_t offset) = 0;
	virtual void munmap(void *addr, size_t length) = 0;
	/* the pollable descriptor, -1 if there is none */
	virtual int fd() const = 0;
};

/*
 * Opens a new /dev/kdat file (a test's device: one per IA; the real one is
 * shared by the IAs of the process, ia.cpp).  On failure returns nullptr
 * and puts the status in *status.
 */
using DeviceOpener = std::function<std::unique_ptr<Device>(DAT_RETURN *status)>;

/* The real device: /dev/kdat, or $KDAT_DEVICE if set. */
std::unique_ptr<Device> open_kdat_device(DAT_RETURN *status);

/* Replace the opener (tests); an empty function restores the real one. */
void set_device_opener(DeviceOpener opener);
bool device_opener_set();
std::unique_ptr<Device> open_device(DAT_RETURN *status);

template <class Arg>
DAT_RETURN call(Device &dev, unsigned long request, Arg &arg)
{
	arg.hdr.size = sizeof(Arg);
	arg.hdr.status = 0;
	int r = dev.ioctl(request, &arg);
	if (r)
		return errno_to_dat(-r);
	return arg.hdr.status;
}

/* One mmapped ring; unmapped when the owner goes. */
class Mapping {
public:
	Mapping() = default;
	Mapping(std::shared_ptr<Device> dev, void *addr, size_t len)
		: dev_(std::move(dev)), addr_(addr), len_(len) {}
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;
	Mapping(Mapping &&o) noexcept { swap(o); }
	Mapping &operator=(Mapping &&o) noexcept
	{
		Mapping t(std::move(o));
		swap(t);
		return *this;
	}
	~Mapping() { reset(); }

	void reset()
	{
		if (addr_)
			dev_->munmap(addr_, len_);
		addr_ = nullptr;
		len_ = 0;
		dev_.reset();
	}
	void *get() const { return addr_; }
	size_t size() const { return len_; }

	/* Map @len bytes at @offset of the device's context. */
	static DAT_RETURN map(const std::shared_ptr<Device> &dev, size_t len,
			      uint64_t offset, Mapping &out);

private:
	void swap(Mapping &o) noexcept
	{
		std::swap(dev_, o.dev_);
		std::swap(addr_, o.addr_);
		std::swap(len_, o.len_);
	}

	std::shared_ptr<Device> dev_;
	void *addr_ = nullptr;
	size_t len_ = 0;
};

/*
 * Kernel-flavour DAT_HANDLE_TYPE numbers, as KDAT_IOC_FREE wants them.
 * The user flavour numbers differ (it has CNOs), so these are spelled out.
 */
namespace ktype {
constexpr uint32_t CR = 0, EP = 1, EVD = 2, IA = 3, LMR = 4, PSP = 5, PZ = 6,
		   RMR = 7, RSP = 8, SRQ = 9, CNO = KDAT_TYPE_CNO;
}

} // namespace kdat
