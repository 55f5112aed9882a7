// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libdaplkdat through the real libdat2 (Debian's libdapl2), as a DAT 2.0
// program sees it: a dat.conf (DAT_OVERRIDE) names the built library by
// absolute path; dat_ia_open must reach its dat_provider_init and its
// ia_open.  There is no /dev/kdat on the host: KDAT_DEVICE names a
// directory, which the provider's open refuses with DAT_INTERNAL_ERROR (a
// status libdat2's own registry never returns), so that status proves the
// call went registry -> dat_provider_init -> dat_registry_add_provider ->
// our ia_open.  A name the file does not have stays DAT_PROVIDER_NOT_FOUND.
//   dat2_registry <path of libdaplkdat.so.2> <scratch directory>
//
// With a third argument, a kdat IA (the guest, /dev/kdat and rxe), the
// whole IA family on the real module through libdat2: open (both thread
// safeties), query (DAT 2.0 attributes), PZ, EVD, LMR, a software event
// round trip, close (libdat2 closes by the table's name and the queried
// version: both must be the line's), and open again after libdat2 called
// dat_provider_fini and dlclose()d the library.
//   dat2_registry <libdaplkdat.so.2> <directory> <kdat IA>
#include <dat2/udat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DAT_ERROR(t, s) ((DAT_RETURN)(DAT_CLASS_ERROR | (t) | (s)))

static int failures;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			failures++;                                       \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
		}                                                         \
	} while (0)

/* One open..close cycle of the IA family on a real kdat IA. */
static void cycle(const char *kia, DAT_BOOLEAN ts)
{
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, evd = DAT_HANDLE_NULL;
	DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
	DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
	DAT_IA_ATTR a;
	DAT_PROVIDER_ATTR p;
	DAT_RETURN r;
	static char buf[8192];
	int x = 0;

	r = dat_ia_openv("kdat-v2-test", 16, &async, &ia, 2, 0, ts);
	CHECK(r == DAT_SUCCESS, "open (threadsafe %d): 0x%x", ts, r);
	if (r != DAT_SUCCESS)
		return;
	r = dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, DAT_PROVIDER_FIELD_ALL, &p);
	CHECK(r == DAT_SUCCESS, "ia_query 0x%x", r);
	CHECK(!strcmp(a.adapter_name, kia), "adapter %s", a.adapter_name);
	CHECK(p.dapl_version_major == 2 && p.dapl_version_minor == 0,
	      "dapl version %u.%u", p.dapl_version_major, p.dapl_version_minor);
	CHECK(p.is_thread_safe == ts, "is_thread_safe %d", p.is_thread_safe);
	CHECK(p.srq_supported == DAT_TRUE, "srq_supported");
	CHECK(a.max_srqs > 0, "max_srqs %d", a.max_srqs);
	/* the kernel's IB extensions; rxe does atomics */
	CHECK(a.extension_supported == DAT_EXTENSION_IB, "IB extension %d",
	      (int)a.extension_supported);
	CHECK(a.extension_version > 0, "extension_version %d",
	      (int)a.extension_version);
	{	/* what dtestsrq sizes its buffers by, what dtestx reads */
		int i, mtu = 0, ib = 0;

		for (i = 0; i < p.num_provider_specific_attr; i++) {
			const char *n = p.provider_specific_attr[i].name;
			const char *v = p.provider_specific_attr[i].value;

			if (!strcmp(n, "DAT_IB_TRANSPORT_MTU"))
				mtu = atoi(v);
			if ((!strcmp(n, "DAT_IB_IMMED_DATA") ||
			     !strcmp(n, "DAT_IB_CMP_AND_SWAP") ||
			     !strcmp(n, "DAT_IB_FETCH_AND_ADD")) &&
			    !strcmp(v, "TRUE"))
				ib++;
		}
		CHECK(mtu >= 256, "DAT_IB_TRANSPORT_MTU %d", mtu);
		CHECK(ib == 3, "%d of the 3 IB extension attributes TRUE", ib);
	}

	r = dat_pz_create(ia, &pz);
	CHECK(r == DAT_SUCCESS, "pz_create 0x%x", r);
	r = dat_evd_create(ia, 8, DAT_HANDLE_NULL,
			   DAT_EVD_SOFTWARE_FLAG | DAT_EVD_DTO_FLAG, &evd);
	CHECK(r == DAT_SUCCESS, "evd_create 0x%x", r);
	{
		DAT_REGION_DESCRIPTION rd;
		DAT_LMR_CONTEXT lctx;
		DAT_RMR_CONTEXT rctx;
		DAT_VLEN len;
		DAT_VADDR addr;
		DAT_LMR_PARAM lp;

		rd.for_va = buf;
		r = dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, rd, sizeof(buf), pz,
				   DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr,
				   &lctx, &rctx, &len, &addr);
		CHECK(r == DAT_SUCCESS, "lmr_create 0x%x", r);
		r = dat_lmr_query(lmr, DAT_LMR_FIELD_ALL, &lp);
		CHECK(r == DAT_SUCCESS && lp.lmr_context == lctx &&
		      lp.region_desc.for_va == buf && lp.pz_handle == pz,
		      "lmr_query 0x%x", r);
	}
	{
		DAT_EVENT e;
		DAT_COUNT more = -1;

		memset(&e, 0, sizeof(e));
		e.event_number = DAT_SOFTWARE_EVENT;
		e.event_data.software_event_data.pointer = &x;
		r = dat_evd_post_se(evd, &e);
		CHECK(r == DAT_SUCCESS, "post_se 0x%x", r);
		memset(&e, 0xff, sizeof(e));
		r = dat_evd_wait(evd, 1000000, 1, &e, &more);
		CHECK(r == DAT_SUCCESS && e.event_number == DAT_SOFTWARE_EVENT &&
		      e.evd_handle == evd &&
		      e.event_data.software_event_data.pointer == &x,
		      "software event 0x%x (number 0x%x)", r, e.event_number);
		r = dat_evd_dequeue(evd, &e);
		CHECK(DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY, "then empty: 0x%x", r);
	}
	CHECK(dat_lmr_free(lmr) == DAT_SUCCESS, "lmr_free");
	CHECK(dat_evd_free(evd) == DAT_SUCCESS, "evd_free");
	CHECK(dat_pz_free(pz) == DAT_SUCCESS, "pz_free");
	r = dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG);
	CHECK(r == DAT_SUCCESS, "ia_close 0x%x", r);
}

static int real_device(const char *kia)
{
	cycle(kia, DAT_FALSE);
	cycle(kia, DAT_TRUE);
	cycle(kia, DAT_FALSE);	/* after fini and dlclose: loaded again */
	if (failures)
		return 1;
	printf("dat2_registry: the IA family on %s through libdat2\n", kia);
	return 0;
}

int main(int argc, char **argv)
{
	char conf[4096];
	FILE *f;
	DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_RETURN r;
	DAT_PROVIDER_INFO list[8], *lp[8];
	DAT_COUNT n = 0;
	int i, found = 0;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s LIBDAPLKDAT DIR [KDAT_IA]\n", argv[0]);
		return 2;
	}
	snprintf(conf, sizeof(conf), "%s/dat.conf", argv[2]);
	f = fopen(conf, "w");	/* the same text both times */
	if (!f) {
		perror(conf);
		return 2;
	}
	fprintf(f, "# written by dat2_registry\n"
		   "kdat-v2-test u2.0 nonthreadsafe default %s kdat.2.0 \"%s 1\" \"\"\n"
		   "kdat-v2-test u2.0 threadsafe default %s kdat.2.0 \"%s\" \"\"\n",
		argv[1], argc == 4 ? argv[3] : "rxe0", argv[1],
		argc == 4 ? argv[3] : "rxe0");
	fclose(f);
	/* libdat2 reads dat.conf when it is loaded: before main, so again */
	if (!getenv("DAT_OVERRIDE") || strcmp(getenv("DAT_OVERRIDE"), conf)) {
		setenv("DAT_OVERRIDE", conf, 1);
		if (argc == 3)	/* a directory: EISDIR */
			setenv("KDAT_DEVICE", argv[2], 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 2;
	}

	/* the registry parsed our lines */
	for (i = 0; i < 8; i++)
		lp[i] = &list[i];
	r = dat_registry_list_providers(8, &n, lp);
	CHECK(r == DAT_SUCCESS, "list_providers 0x%x", r);
	for (i = 0; i < n; i++)
		if (!strcmp(list[i].ia_name, "kdat-v2-test") &&
		    list[i].dapl_version_major == 2)
			found++;
	CHECK(found == 2, "dat.conf lines seen: %d", found);

	if (argc == 4)
		return real_device(argv[3]);

	/* the provider's ia_open ran: the device open's status, not libdat2's */
	r = dat_ia_open("kdat-v2-test", 8, &async, &ia);
	CHECK(r == DAT_ERROR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE),
	      "dat_ia_open: 0x%x, want DAT_INTERNAL_ERROR 0x%x", r,
	      DAT_ERROR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE));
	CHECK(ia == DAT_HANDLE_NULL, "no IA handle on failure");

	/* again (the library stays registered) */
	r = dat_ia_open("kdat-v2-test", 8, &async, &ia);
	CHECK(r == DAT_ERROR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE),
	      "second dat_ia_open: 0x%x", r);

	/* a name no line has: libdat2's own answer */
	r = dat_ia_open("kdat-v2-none", 8, &async, &ia);
	CHECK(DAT_GET_TYPE(r) == DAT_PROVIDER_NOT_FOUND,
	      "unknown name: 0x%x", r);

	if (failures)
		return 1;
	printf("dat2_registry: libdat2 loaded libdaplkdat and reached its ia_open\n");
	return 0;
}
