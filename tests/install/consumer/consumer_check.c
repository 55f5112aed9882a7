// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Every user-space header of an installed libdat, from where it was
 * installed; prints the number of DAT providers (0 without /dev/kdat is
 * fine: this only proves it links and runs against the installed library).
 */
#include <dat/udat.h>
#include <dat/dat.h>
#include <dat/dat_error.h>
#include <dat/dat_platform_specific.h>
#include <dat/dat_redirection.h>
#include <dat/dat_registry.h>
#include <dat/udat_config.h>
#include <dat/udat_redirection.h>
#include <dat/dat_kdat.h>
#include <dat/uapi/kdat_abi.h>

#include <stdio.h>

int main(void)
{
	DAT_COUNT n = 0;
	DAT_RETURN r = dat_registry_list_providers(0, &n, NULL);

	printf("consumer_check: ABI %d, provider %s, list_providers 0x%x, %d\n",
	       KDAT_ABI_VERSION, DAT_KDAT_PROVIDER_NAME, (unsigned)r, (int)n);
	return 0;
}
