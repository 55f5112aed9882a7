// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Kernel-flavour check of the DAT headers: <dat/kdat.h> compiles in a
 * module with W=1 -Werror, and every value and layout in
 * ../dat_checks.h holds as a static assertion.  The module does nothing
 * when loaded; building it is the test.
 */
#include <linux/module.h>

#include <dat/kdat.h>

#define DAT_CHECK(expr) _Static_assert(expr, #expr);
#include "../dat_checks.h"

/* Consumer- and provider-style uses; compiled, never called. */
static DAT_RETURN dat_kdummy_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
				  DAT_EVD_HANDLE *async_evd,
				  DAT_IA_HANDLE *ia)
{
	return DAT_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}

static const DAT_PROVIDER dat_kdummy_provider __maybe_unused = {
	.device_name	= "dat_kheaders",
	.ia_open_func	= dat_kdummy_open,
};

static void dat_kdummy_upcall(DAT_PVOID instance_data,
			      const DAT_EVENT *event, DAT_BOOLEAN more_events)
{
	const DAT_ASYNCH_ERROR_EVENT_DATA *a =
		&event->event_data.asynch_error_event_data;

	if (event->event_number == DAT_SOFTWARE_EVENT && more_events)
		return;
	if (a->dat_handle == instance_data &&
	    a->reason == DAT_SRQ_LOW_WATERMARK_EVENT)
		return;
}

static __maybe_unused DAT_RETURN dat_kheaders_usage(DAT_IA_HANDLE ia,
						    DAT_SRQ_HANDLE srq)
{
	DAT_UPCALL_OBJECT none = DAT_UPCALL_NULL;
	DAT_UPCALL_OBJECT up = {
		.instance_data	= NULL,
		.upcall_func	= dat_kdummy_upcall,
	};
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, evd;
	DAT_IA_HANDLE ia2;
	DAT_LMR_TRIPLET iov = { .segment_length = 64 };
	DAT_DTO_COOKIE cookie = { .as_64 = 1 };
	char name[] = "kdat_ib0";
	DAT_RETURN ret;

	ret = dat_ia_open(name, 8, &async_evd, &ia2);
	if (ret != DAT_SUCCESS)
		return ret;
	ret = dat_evd_kcreate(ia, 16, DAT_UPCALL_SINGLE_INSTANCE, &up,
			      DAT_EVD_DTO_FLAG, &evd);
	if (ret != DAT_SUCCESS)
		return ret;
	ret = dat_evd_modify_upcall(evd, DAT_UPCALL_DISABLE, &none);
	ret = dat_srq_post_recv(srq, 1, &iov, cookie);
	if (DAT_GET_TYPE(ret) == DAT_INVALID_HANDLE)
		return ret;
	return dat_srq_set_lw(srq, 4);
}

static int __init dat_kheaders_init(void)
{
	return 0;
}

static void __exit dat_kheaders_exit(void)
{
}

module_init(dat_kheaders_init);
module_exit(dat_kheaders_exit);
MODULE_DESCRIPTION("Compile check of the kernel DAT 1.2 headers");
MODULE_LICENSE("Dual BSD/GPL");
