/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * User-flavour value and layout checks of the DAT headers, built by
 * check-headers.sh both as C11 and as C++20:
 *
 *   default              every check is a static assertion;
 *   -DDAT_CHECK_RUNTIME  the same checks are evaluated at run time and
 *                        reported one per line ("PASS: ..."/"FAIL: ..."),
 *                        so a mismatch names itself.
 *
 * The static variant also uses the macros and types the way consumers
 * do, so anything that is legal C but not usable from C++ (or the
 * reverse) shows up; it is only compiled (-fsyntax-only), never linked.
 */
#include <dat/udat.h>

#ifdef DAT_CHECK_RUNTIME
#include <stdio.h>
#endif

#ifdef __cplusplus
#define DAT_LANG "C++"
#else
#define DAT_LANG "C"
#endif

#ifndef DAT_CHECK_RUNTIME

/*
 * Consumer-style uses; compiled, never called.  The static object also
 * proves DAT_PROVIDER_ATTR is default-constructible in C++ (a const
 * member would make that ill-formed) and the copies that it is
 * assignable.
 */
static DAT_PROVIDER_ATTR dat_zero_pattr;

DAT_RETURN dat_layout_usage(DAT_IA_HANDLE ia, DAT_SRQ_HANDLE srq);
DAT_RETURN dat_layout_usage(DAT_IA_HANDLE ia, DAT_SRQ_HANDLE srq)
{
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
	DAT_IA_HANDLE ia2 = DAT_HANDLE_NULL;
	DAT_OS_WAIT_PROXY_AGENT agent = DAT_OS_WAIT_PROXY_AGENT_NULL;
	DAT_PROVIDER_ATTR pattr = dat_zero_pattr;
	DAT_PROVIDER_ATTR pattr2 = pattr;
	DAT_SRQ_PARAM sparam;
	DAT_EVENT ev;
	DAT_LMR_TRIPLET iov = { 0, 0, 0, 0 };
	DAT_DTO_COOKIE cookie;
	DAT_RETURN ret;
	char name[] = "ofa-v2-ib0";

	cookie.as_64 = 1;
	pattr = pattr2;
	ret = dat_ia_open(name, 8, &async_evd, &ia2);
	if (ret != DAT_SUCCESS)
		return ret;
	ret = dat_srq_post_recv(srq, 1, &iov, cookie);
	if (DAT_GET_TYPE(ret) == DAT_INVALID_HANDLE &&
	    DAT_GET_SUBTYPE(ret) == DAT_INVALID_HANDLE_SRQ)
		return ret;
	ret = dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sparam);
	ret = dat_evd_wait(async_evd, DAT_TIMEOUT_INFINITE, 1, &ev, NULL);
	if (ev.event_number == DAT_ASYNC_ERROR_IA_CATASTROPHIC &&
	    ev.event_data.asynch_error_event_data.dat_handle == ia)
		return DAT_ERROR(DAT_ABORT, 0);
	if (ev.event_data.asynch_error_event_data.dat_handle == srq &&
	    ev.event_data.asynch_error_event_data.reason ==
	    DAT_SRQ_LOW_WATERMARK_EVENT)
		ret = dat_srq_set_lw(srq, 4);
	(void)agent;
	(void)pattr;
	return ret;
}

#ifdef __cplusplus
#define DAT_CHECK(expr) static_assert(expr, #expr);
#else
#define DAT_CHECK(expr) _Static_assert(expr, #expr);
#endif

#include "dat_checks.h"

int main(void)
{
	return 0;
}

#else /* DAT_CHECK_RUNTIME */

static int dat_passed, dat_failed;

static void dat_report(const char *what, int ok)
{
	printf("%s: %s layout: %s\n", ok ? "PASS" : "FAIL", DAT_LANG, what);
	if (ok)
		dat_passed++;
	else
		dat_failed++;
}

int main(void)
{
#define DAT_CHECK(expr) dat_report(#expr, (expr) ? 1 : 0);
#include "dat_checks.h"
	return dat_failed ? 1 : 0;
}

#endif /* DAT_CHECK_RUNTIME */
