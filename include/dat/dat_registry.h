/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/dat_registry.h - how providers join the DAT registry.
 *
 * kDAPL: a provider module calls dat_registry_add_provider() for each IA
 * name it serves (typically when an RDMA device appears) and
 * dat_registry_remove_provider() before the table goes away.
 *
 * uDAPL: libdat loads the provider library named for an IA in its
 * configuration and calls the library's dat_provider_init(), which
 * registers the same way; dat_provider_fini() is called before unload.
 *
 * The registry keys providers by DAT_PROVIDER_INFO (IA name, DAT version,
 * thread safety) and dispatches every consumer call through the
 * registered struct dat_provider.
 */
#ifndef DAT_REGISTRY_H_
#if !defined(DAT_UDAT_H_) && !defined(DAT_KDAT_H_)

/* Included first: the flavour header includes us at the right point. */
#ifdef __KERNEL__
#include <dat/kdat.h>
#else
#include <dat/udat.h>
#endif

#else /* the flavour's types are in place */
#define DAT_REGISTRY_H_

#ifdef DAT_KDAT_H_
#include <dat/kdat_redirection.h>
#else
#include <dat/udat_redirection.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Register a provider table under provider_info->ia_name.  The table
 * must stay valid until it is removed again.
 */
DAT_RETURN dat_registry_add_provider(DAT_PROVIDER *provider,
				     const DAT_PROVIDER_INFO *provider_info);

DAT_RETURN dat_registry_remove_provider(DAT_PROVIDER *provider,
					const DAT_PROVIDER_INFO *provider_info);

/*
 * Entry points a dynamically loaded (uDAPL) provider library exports.
 * instance_data is the provider-specific string from the registry's
 * configuration entry.
 */
#define DAT_PROVIDER_INIT_FUNC_NAME	dat_provider_init
#define DAT_PROVIDER_FINI_FUNC_NAME	dat_provider_fini
#define DAT_PROVIDER_INIT_FUNC_STR	"dat_provider_init"
#define DAT_PROVIDER_FINI_FUNC_STR	"dat_provider_fini"

typedef void (*DAT_PROVIDER_INIT_FUNC)(const DAT_PROVIDER_INFO *provider_info,
				       const char *instance_data);

typedef void (*DAT_PROVIDER_FINI_FUNC)(const DAT_PROVIDER_INFO *provider_info);

#ifdef __cplusplus
}
#endif

#endif /* the flavour's types are in place */
#endif /* DAT_REGISTRY_H_ */
