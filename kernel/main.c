// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kdat: DAT 1.2 (kDAPL) registry and ib_core provider with the full Shared
 * Receive Queue family, for kernel consumers.
 */
#include <linux/module.h>

#include "kdat_core.h"

static int __init kdat_init(void)
{
	int ret;

	ret = kdat_registry_init();
	if (ret)
		return ret;
	ret = kdat_ep_init();
	if (ret)
		goto err_registry;
	ret = kdat_evd_init();
	if (ret)
		goto err_ep;
	kdat_debugfs_init();
	ret = kdat_srq_init();
	if (ret)
		goto err_debugfs;
	ret = kdat_consumers_init();
	if (ret)
		goto err_srq;
	ret = ib_register_client(&kdat_ib_client);
	if (ret)
		goto err_consumers;
	ret = kdat_chardev_init();
	if (ret)
		goto err_client;
	return 0;

err_client:
	ib_unregister_client(&kdat_ib_client);
err_consumers:
	kdat_consumers_exit();
err_srq:
	kdat_srq_exit();
err_debugfs:
	kdat_debugfs_exit();
	kdat_evd_exit();
err_ep:
	kdat_ep_exit();
err_registry:
	kdat_registry_exit();
	return ret;
}

static void __exit kdat_exit(void)
{
	kdat_chardev_exit();
	kdat_consumers_exit();	/* no consumer module is left to unload */
	/*
	 * Before the work queues go: closing an IA a kernel consumer left
	 * open queues teardown work on them (remove_one).
	 */
	WRITE_ONCE(kdat_unloading, true);
	ib_unregister_client(&kdat_ib_client);
	kdat_close_leaked_ias();	/* those of devices removed before */
	kdat_ep_exit();		/* connection events still on their way */
	kdat_evd_exit();	/* CQs freed from their own pollers */
	kdat_srq_exit();	/* SRQ limits being armed again */
	kdat_obj_flush_deferred();
	kdat_debugfs_exit();
	kdat_registry_exit();
}

module_init(kdat_init);
module_exit(kdat_exit);

MODULE_AUTHOR("kdat developers");
MODULE_DESCRIPTION("DAT 1.2 kDAPL provider with Shared Receive Queues on ib_core");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION("0.1.0");
