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

	if (argc != 3) {
		fprintf(stderr, "usage: %s LIBDAPLKDAT DIR\n", argv[0]);
		return 2;
	}
	snprintf(conf, sizeof(conf), "%s/dat.conf", argv[2]);
	f = fopen(conf, "w");	/* the same text both times */
	if (!f) {
		perror(conf);
		return 2;
	}
	fprintf(f, "# written by dat2_registry\n"
		   "kdat-v2-test u2.0 nonthreadsafe default %s kdat.2.0 \"rxe0 1\" \"\"\n"
		   "kdat-v2-test u2.0 threadsafe default %s kdat.2.0 \"rxe0\" \"\"\n",
		argv[1], argv[1]);
	fclose(f);
	/* libdat2 reads dat.conf when it is loaded: before main, so again */
	if (!getenv("DAT_OVERRIDE") || strcmp(getenv("DAT_OVERRIDE"), conf)) {
		setenv("DAT_OVERRIDE", conf, 1);
		setenv("KDAT_DEVICE", argv[2], 1);	/* a directory: EISDIR */
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
