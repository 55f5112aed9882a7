// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// DAT_RETURN values: how statuses are built, how ABI-level errno values
// of /dev/kdat map to statuses, that the kernel's status reaches the
// caller unchanged, that no exception crosses the C boundary, and
// dat_strerror (kernel/strerror.c, built into the library).
#include <stdexcept>

#include "errors.hpp"
#include "ioctl.hpp"
#include "test_util.hpp"

TEST(DatReturn, LayoutOfClassTypeSubtype)
{
	DAT_RETURN r = kdat::err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);

	EXPECT_EQ(DAT_CLASS_ERROR, r & 0xC0000000u);
	EXPECT_EQ((DAT_UINT32)DAT_INVALID_HANDLE, DAT_GET_TYPE(r));
	EXPECT_EQ((DAT_UINT32)DAT_INVALID_HANDLE_SRQ, DAT_GET_SUBTYPE(r));
	EXPECT_EQ(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3),
		  kdat::bad_arg(3));
	EXPECT_EQ(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG10),
		  kdat::bad_arg(10));
	EXPECT_TRUE(kdat::is_type(kdat::bad_arg(2), DAT_INVALID_PARAMETER));
	EXPECT_EQ(0x00070000u, (DAT_UINT32)DAT_INVALID_STATE);
	EXPECT_EQ(0x0FFF0000u, (DAT_UINT32)DAT_NOT_IMPLEMENTED);
}

TEST(DatReturn, ErrnoOfTheDeviceMapsToStatuses)
{
	using kdat::errno_to_dat;

	EXPECT_EQ(DAT_SUCCESS, errno_to_dat(0));
	EXPECT_EQ(E(DAT_INVALID_PARAMETER), errno_to_dat(EFAULT));
	EXPECT_EQ(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY),
		  errno_to_dat(ENOMEM));
	EXPECT_EQ(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_DEVICE),
		  errno_to_dat(EMFILE));
	EXPECT_EQ(E(DAT_INTERRUPTED_CALL), errno_to_dat(EINTR));
	EXPECT_EQ(E(DAT_PRIVILEGES_VIOLATION), errno_to_dat(EACCES));
	EXPECT_EQ(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		  errno_to_dat(ENOENT));
	EXPECT_EQ(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		  errno_to_dat(ENODEV));
	/* a library and module that disagree on the ABI */
	EXPECT_EQ(E(DAT_INTERNAL_ERROR), errno_to_dat(EINVAL));
	EXPECT_EQ(E(DAT_INTERNAL_ERROR), errno_to_dat(E2BIG));
	EXPECT_EQ(E(DAT_INTERNAL_ERROR), errno_to_dat(ENOTTY));
}

namespace {

/* A device whose ioctl answers with a fixed status or errno. */
struct ScriptedDevice : kdat::Device {
	int err = 0;
	DAT_RETURN status = DAT_SUCCESS;
	__u32 seen_size = 0;

	int ioctl(unsigned long, void *arg) override
	{
		auto *h = static_cast<struct kdat_ioc_hdr *>(arg);
		seen_size = h->size;
		if (err)
			return -err;
		h->status = status;
		return 0;
	}
	void *mmap(std::size_t, std::uint64_t) override { return nullptr; }
	void munmap(void *, std::size_t) override {}
	int fd() const override { return -1; }
};

} // namespace

TEST(DatReturn, KernelStatusPassesThroughUnchanged)
{
	ScriptedDevice d;
	struct kdat_ioc_srq_query q = {};

	for (DAT_RETURN st :
	     { (DAT_RETURN)DAT_SUCCESS,
	       E(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE),
	       E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ),
	       E(DAT_PROTECTION_VIOLATION), E(DAT_NOT_IMPLEMENTED),
	       (DAT_RETURN)0x4001234u /* a warning class status */ }) {
		d.status = st;
		EXPECT_EQ(st, kdat::call(d, KDAT_IOC_SRQ_QUERY, q));
		EXPECT_EQ(sizeof(q), d.seen_size);	/* hdr.size filled */
	}
	d.err = EFAULT;
	EXPECT_EQ(E(DAT_INVALID_PARAMETER), kdat::call(d, KDAT_IOC_SRQ_QUERY, q));
}

TEST(DatReturn, GuardTurnsExceptionsIntoStatuses)
{
	EXPECT_EQ(E(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY),
		  kdat::guard([]() -> DAT_RETURN { throw std::bad_alloc(); }));
	EXPECT_EQ(E(DAT_INTERNAL_ERROR),
		  kdat::guard([]() -> DAT_RETURN {
			  throw std::runtime_error("x");
		  }));
	EXPECT_EQ(E(DAT_INTERNAL_ERROR),
		  kdat::guard([]() -> DAT_RETURN { throw 42; }));
	EXPECT_EQ(E(DAT_QUEUE_EMPTY),
		  kdat::guard([] { return E(DAT_QUEUE_EMPTY); }));
}

TEST(DatStrerror, NamesTypesAndSubtypes)
{
	const char *major = nullptr, *minor = nullptr;

	EXPECT_OK(dat_strerror(DAT_SUCCESS, &major, &minor));
	EXPECT_STREQ("DAT_SUCCESS", major);
	EXPECT_OK(dat_strerror(E(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE),
			       &major, &minor));
	EXPECT_STREQ("DAT_INVALID_STATE", major);
	EXPECT_STREQ("DAT_INVALID_STATE_SRQ_IN_USE", minor);
	EXPECT_OK(dat_strerror(E(DAT_PROVIDER_NOT_FOUND,
				 DAT_THREAD_SAFETY_NOT_FOUND),
			       &major, &minor));
	EXPECT_STREQ("DAT_PROVIDER_NOT_FOUND", major);
	EXPECT_STREQ("DAT_THREAD_SAFETY_NOT_FOUND", minor);
	EXPECT_OK(dat_strerror(ARG(3), &major, &minor));
	EXPECT_STREQ("DAT_INVALID_PARAMETER", major);
	EXPECT_STREQ("DAT_INVALID_ARG3", minor);
	EXPECT_OK(dat_strerror(E(DAT_NOT_IMPLEMENTED), &major, &minor));
	EXPECT_STREQ("DAT_NOT_IMPLEMENTED", major);
	EXPECT_OK(dat_strerror(E(0x3ff0000u), &major, &minor));
	EXPECT_STREQ("unknown DAT_RETURN type", major);
	EXPECT_OK(dat_strerror(E(DAT_ABORT, 0xfff0), &major, &minor));
	EXPECT_STREQ("", minor);
	EXPECT_DAT(E(DAT_INVALID_PARAMETER),
		   dat_strerror(DAT_SUCCESS, nullptr, &minor));
	EXPECT_DAT(E(DAT_INVALID_PARAMETER),
		   dat_strerror(DAT_SUCCESS, &major, nullptr));
}

TEST(DatStrerror, EveryTypeHasAName)
{
	const char *major, *minor;

	for (DAT_UINT32 t = 0; t <= 0x14; t++) {
		ASSERT_OK(dat_strerror(E(t << 16), &major, &minor));
		EXPECT_STRNE("unknown DAT_RETURN type", major) << t;
	}
}
