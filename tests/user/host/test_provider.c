// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A DAT provider library for the registry tests: what a third-party
 * provider listed in dat.conf looks like.  libdat dlopen()s it, calls
 * dat_provider_init(), which registers a provider table, dispatches calls
 * on its handles to that table, and calls dat_provider_fini() once the
 * last IA is closed.  It counts what happened in environment variables,
 * which outlive the library's unloading.
 *
 * For the registry's locking tests (test_loader_abi.cpp), which hold the
 * library loaded themselves, it can hold an IA open or a
 * dat_provider_init of a chosen name until released (test_provider_hold,
 * _wait_held, _release), and the init of "callback0" calls back into the
 * registry (dat_registry_list_providers and a dat_ia_open of another name).
 * test_abi.cpp holds a dat_ia_query (name "query", kind 2) to close the IA
 * under it (the query touches no IA after the hold), and opens
 * "failopen0", whose IA open fails, with the unloading calling back, and
 * "registers_extra0", whose init registers the table as "extra0" too.  A
 * forked child forgets a hold (test_provider_forget_after_fork).
 */
#include <dat/udat.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tobj {
	DAT_PROVIDER *provider;	/* first, as in every provider */
	int kind;
};

static DAT_PROVIDER prov;
static struct tobj t_pz = { &prov, 3 };

/* Each IA its own object: several may be open at once. */
struct tia {
	struct tobj ia;		/* first: the handle */
	struct tobj evd;
};

/*
 * Holding: a call of the held kind (0 IA open, 1 dat_provider_init,
 * 2 IA query) for the held name waits for release.
 */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static char hold_name[DAT_NAME_MAX_LENGTH];
static int hold_init, held, released;

void test_provider_hold(const char *name, int in_init);
void test_provider_wait_held(void);
void test_provider_release(void);
void test_provider_forget_after_fork(void);

void test_provider_hold(const char *name, int in_init)
{
	pthread_mutex_lock(&hold_lock);
	snprintf(hold_name, sizeof(hold_name), "%s", name);
	hold_init = in_init;
	held = 0;
	released = 0;
	pthread_mutex_unlock(&hold_lock);
}

void test_provider_wait_held(void)
{
	pthread_mutex_lock(&hold_lock);
	while (!held)
		pthread_cond_wait(&hold_cv, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
}

/* In a forked child: the held thread is the parent's; nothing is held. */
void test_provider_forget_after_fork(void)
{
	pthread_mutex_init(&hold_lock, NULL);
	pthread_cond_init(&hold_cv, NULL);
	hold_name[0] = 0;
	held = 0;
	released = 0;
}

void test_provider_release(void)
{
	pthread_mutex_lock(&hold_lock);
	released = 1;
	hold_name[0] = 0;
	pthread_cond_broadcast(&hold_cv);
	pthread_mutex_unlock(&hold_lock);
}

static void maybe_hold(const char *name, int in_init)
{
	pthread_mutex_lock(&hold_lock);
	if (hold_name[0] && !strcmp(name, hold_name) && hold_init == in_init) {
		held = 1;
		pthread_cond_broadcast(&hold_cv);
		while (!released)
			pthread_cond_wait(&hold_cv, &hold_lock);
	}
	pthread_mutex_unlock(&hold_lock);
}

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
	struct tia *t;

	(void)qlen;
	maybe_hold(name, 0);
	if (!strcmp(name, "failopen0"))
		return DAT_ERROR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	t = calloc(1, sizeof(*t));
	if (!t)
		return DAT_ERROR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	t->ia.provider = &prov;
	t->ia.kind = 1;
	t->evd.provider = &prov;
	t->evd.kind = 2;
	bump("TEST_PROVIDER_OPENS");
	*evd = &t->evd;
	*ia = &t->ia;
	return DAT_SUCCESS;
}

static DAT_RETURN t_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags)
{
	struct tobj *o = ia;

	(void)flags;
	if (!o || o->provider != &prov || o->kind != 1)
		return DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	free(o);	/* the struct tia it starts */
	return DAT_SUCCESS;
}

static DAT_RETURN t_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *evd,
			  DAT_IA_ATTR_MASK im, DAT_IA_ATTR *ia_attr,
			  DAT_PROVIDER_ATTR_MASK pm, DAT_PROVIDER_ATTR *pattr)
{
	(void)im;
	(void)pm;
	if (evd)
		*evd = &((struct tia *)ia)->evd;
	if (ia_attr) {
		memset(ia_attr, 0, sizeof(*ia_attr));
		strcpy(ia_attr->adapter_name, "test-adapter");
	}
	if (pattr) {
		memset(pattr, 0, sizeof(*pattr));
		strcpy(pattr->provider_name, "test");
	}
	maybe_hold("query", 2);
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

static void fill_table(void)
{
	memset(&prov, 0, sizeof(prov));
	prov.device_name = "test0";
	prov.ia_open_func = t_open;
	prov.ia_close_func = t_close;
	prov.ia_query_func = t_query;
	prov.pz_create_func = t_pz_create;
	prov.pz_free_func = t_pz_free;
}

/* Back into the registry from dat_provider_init: none of it may block. */
static void init_calls_back(void)
{
	DAT_PROVIDER_INFO i, *l[1] = { &i };
	DAT_COUNT n = 0;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
	DAT_RETURN r;

	r = dat_registry_list_providers(1, &n, l);
	setenv("TEST_PROVIDER_CALLBACK_LIST", r == DAT_SUCCESS ? "ok" : "failed", 1);
	r = dat_ia_open((DAT_NAME_PTR)"fast0", 4, &evd, &ia);
	if (r == DAT_SUCCESS)
		r = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	setenv("TEST_PROVIDER_CALLBACK_OPEN", r == DAT_SUCCESS ? "ok" : "failed", 1);
}

/* "registers_extra0" also registers the table as "extra0" and leaves it */
static DAT_PROVIDER_INFO extra;

DAT_PROVIDER *test_provider_table(void);
const DAT_PROVIDER_INFO *test_provider_extra_info(void);

DAT_PROVIDER *test_provider_table(void)
{
	return &prov;
}

const DAT_PROVIDER_INFO *test_provider_extra_info(void)
{
	return &extra;
}

void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *params)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	maybe_hold(info->ia_name, 1);
	bump("TEST_PROVIDER_INITS");
	setenv("TEST_PROVIDER_PARAMS", params ? params : "(null)", 1);
	/* one table for every name; filled once, others may be using it */
	pthread_once(&once, fill_table);
	if (dat_registry_add_provider(&prov, info) != DAT_SUCCESS)
		setenv("TEST_PROVIDER_ADD_FAILED", "1", 1);
	if (!strcmp(info->ia_name, "callback0"))
		init_calls_back();
	if (!strcmp(info->ia_name, "registers_extra0")) {
		extra = *info;
		strcpy(extra.ia_name, "extra0");
		if (dat_registry_add_provider(&prov, &extra) != DAT_SUCCESS)
			setenv("TEST_PROVIDER_ADD_FAILED", "1", 1);
	}
}

/*
 * Unloaded: asked to (test_abi.cpp), call back into the registry, which
 * must not be holding its lock across our dlclose().
 */
__attribute__((destructor)) static void unloaded(void)
{
	DAT_PROVIDER_INFO i, *l[1] = { &i };
	DAT_COUNT n = 0;
	DAT_RETURN r;

	if (!getenv("TEST_PROVIDER_UNLOAD_CALLS_BACK"))
		return;
	r = dat_registry_list_providers(1, &n, l);
	setenv("TEST_PROVIDER_UNLOAD_LIST", r == DAT_SUCCESS ? "ok" : "failed", 1);
}

void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	bump("TEST_PROVIDER_FINIS");
	dat_registry_remove_provider(&prov, info);
}
