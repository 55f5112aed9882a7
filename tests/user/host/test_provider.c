// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A DAT provider library for the registry tests: what a third-party
 * provider listed in dat.conf looks like.  libdat dlopen()s it, calls
 * dat_provider_init(), which registers a provider table, dispatches calls
 * on its handles to that table, and calls dat_provider_fini() once the
 * last IA is closed.  It counts what happened in environment variables,
 * which outlive the library's unloading.
 */
#include <dat/udat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tobj {
	DAT_PROVIDER *provider;	/* first, as in every provider */
	int kind;
};

static DAT_PROVIDER prov;
static struct tobj t_ia = { &prov, 1 }, t_evd = { &prov, 2 },
		   t_pz = { &prov, 3 };

static void bump(const char *var)
{
	char buf[32];
	const char *v = getenv(var);

	snprintf(buf, sizeof(buf), "%d", (v ? atoi(v) : 0) + 1);
	setenv(var, buf, 1);
}

static DAT_RETURN t_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			 DAT_EVD_HANDLE *evd, DAT_IA_HANDLE *ia)
{
	(void)name;
	(void)qlen;
	bump("TEST_PROVIDER_OPENS");
	*evd = &t_evd;
	*ia = &t_ia;
	return DAT_SUCCESS;
}

static DAT_RETURN t_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags)
{
	(void)flags;
	return ia == &t_ia ? DAT_SUCCESS :
			     DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
}

static DAT_RETURN t_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *evd,
			  DAT_IA_ATTR_MASK im, DAT_IA_ATTR *ia_attr,
			  DAT_PROVIDER_ATTR_MASK pm, DAT_PROVIDER_ATTR *pattr)
{
	(void)ia;
	(void)im;
	(void)pm;
	if (evd)
		*evd = &t_evd;
	if (ia_attr) {
		memset(ia_attr, 0, sizeof(*ia_attr));
		strcpy(ia_attr->adapter_name, "test-adapter");
	}
	if (pattr) {
		memset(pattr, 0, sizeof(*pattr));
		strcpy(pattr->provider_name, "test");
	}
	return DAT_SUCCESS;
}

static DAT_RETURN t_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	(void)ia;
	*pz = &t_pz;
	return DAT_SUCCESS;
}

static DAT_RETURN t_pz_free(DAT_PZ_HANDLE pz)
{
	(void)pz;
	bump("TEST_PROVIDER_PZ_FREES");
	return DAT_SUCCESS;
}

void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *params)
{
	bump("TEST_PROVIDER_INITS");
	setenv("TEST_PROVIDER_PARAMS", params ? params : "(null)", 1);
	memset(&prov, 0, sizeof(prov));
	prov.device_name = "test0";
	prov.ia_open_func = t_open;
	prov.ia_close_func = t_close;
	prov.ia_query_func = t_query;
	prov.pz_create_func = t_pz_create;
	prov.pz_free_func = t_pz_free;
	if (dat_registry_add_provider(&prov, info) != DAT_SUCCESS)
		setenv("TEST_PROVIDER_ADD_FAILED", "1", 1);
}

void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	bump("TEST_PROVIDER_FINIS");
	dat_registry_remove_provider(&prov, info);
}
