// SPDX-License-Identifier: GPL-2.0
/*
 * cm_probe - rig self-test: resolve an address and a route with the
 * in-kernel rdma_cm (init_net), as an in-kernel consumer would, and report
 * which RDMA device rdma_cm picked.  Loading the module runs the probe;
 * insmod fails with the rdma_cm error if resolution fails.
 *
 *   insmod cm_probe.ko dst=192.0.2.1 [src=192.0.2.2]
 *   -> dmesg: "cm_probe: 192.0.2.2 -> 192.0.2.1: route resolved on rxe1"
 */
#include <linux/completion.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>

static char *src = "";
static char *dst = "192.0.2.1";
module_param(src, charp, 0444);
MODULE_PARM_DESC(src, "source IPv4 address to bind (empty: unbound)");
module_param(dst, charp, 0444);
MODULE_PARM_DESC(dst, "destination IPv4 address");

static DECLARE_COMPLETION(done);
static int result;

static int probe_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		result = rdma_resolve_route(id, 5000);
		if (result)
			complete(&done);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		result = 0;
		complete(&done);
		break;
	default:
		pr_info("cm_probe: event %s, status %d\n",
			rdma_event_msg(ev->event), ev->status);
		result = ev->status ? ev->status : -EIO;
		complete(&done);
		break;
	}
	return 0;	/* never let rdma_cm destroy the id under us */
}

static int parse(const char *s, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	return in4_pton(s, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL) ? 0 : -EINVAL;
}

static int __init cm_probe_init(void)
{
	struct sockaddr_in s, d;
	struct rdma_cm_id *id;
	int ret;

	if (parse(dst, &d) || (*src && parse(src, &s)))
		return -EINVAL;
	id = rdma_create_id(&init_net, probe_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	ret = rdma_resolve_addr(id, *src ? (struct sockaddr *)&s : NULL,
				(struct sockaddr *)&d, 5000);
	if (!ret) {
		if (!wait_for_completion_timeout(&done, 15 * HZ))
			ret = -ETIMEDOUT;
		else
			ret = result;
	}
	if (ret)
		pr_info("cm_probe: %s -> %s: failed: %d\n", *src ? src : "(unbound)", dst, ret);
	else
		pr_info("cm_probe: %s -> %s: route resolved on %s (source %pI4)\n",
			*src ? src : "(unbound)", dst, dev_name(&id->device->dev),
			&((struct sockaddr_in *)&id->route.addr.src_addr)->sin_addr);
	rdma_destroy_id(id);
	return ret;
}

static void __exit cm_probe_exit(void)
{
}

module_init(cm_probe_init);
module_exit(cm_probe_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("tests/vm rig self-test: in-kernel rdma_cm address/route resolution");
