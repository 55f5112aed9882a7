// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Interface Adapters.  Every ib_core device is one provider entry in the
 * registry; its IA name is the ib device name (for example "rxe0", or
 * "mlx5_0"), and the IA uses port 1.  Devices come and go through the
 * ib_client add/remove callbacks.  When a device goes away while IAs are
 * open, every IA gets DAT_ASYNC_ERROR_IA_CATASTROPHIC, all hardware
 * resources are released before remove returns (ib_core requires it), and
 * the DAT objects stay behind as empty shells that fail every call but can
 * still be freed.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/inetdevice.h>
#include <linux/in.h>
#include <rdma/ib_cache.h>

#include "kdat_core.h"

/*
 * Every kdat_device from add_one until its last reference (the client's,
 * or the last IA of a removed device) is gone: module exit finds there the
 * IAs a kernel consumer left open on a device removed before.
 */
static LIST_HEAD(kdat_devices);
static DEFINE_MUTEX(kdat_devices_lock);

static void kdat_device_release(struct kref *ref)
{
	struct kdat_device *kdev = container_of(ref, struct kdat_device, ref);

	mutex_lock(&kdat_devices_lock);
	list_del(&kdev->node);
	mutex_unlock(&kdat_devices_lock);
	kfree(kdev);
}

static void kdat_device_put(struct kdat_device *kdev)
{
	kref_put(&kdev->ref, kdat_device_release);
}

/*
 * Count a new user of @obj unless @obj is being freed.  Free paths check
 * their user count and unlink under the same IA lock, so a user is either
 * counted before the check or refused here.
 */
bool kdat_ia_add_user(struct kdat_ia *ia, struct kdat_obj *obj,
		      atomic_t *users)
{
	bool ok;

	mutex_lock(&ia->lock);
	ok = !list_empty(&obj->ia_node);
	if (ok)
		atomic_inc(users);
	mutex_unlock(&ia->lock);
	return ok;
}

/* The IA address is the first IPv4 address in port 1's GID table. */
void kdat_ia_fill_addr(struct kdat_ia *ia)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&ia->addr;
	const struct ib_gid_attr *attr;
	u32 i, len;

	memset(&ia->addr, 0, sizeof(ia->addr));
	sin->sin_family = AF_INET;
	if (rdma_start_port(ia->ibdev) > 1 || rdma_end_port(ia->ibdev) < 1)
		return;
	len = ia->ibdev->port_data[1].immutable.gid_tbl_len;
	for (i = 0; i < len; i++) {
		attr = rdma_get_gid_attr(ia->ibdev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw)) {
			memcpy(&sin->sin_addr.s_addr, &attr->gid.raw[12], 4);
			rdma_put_gid_attr(attr);
			return;
		}
		rdma_put_gid_attr(attr);
	}
}

/*
 * The IA's async EVD, pinned, or NULL once the IA closed.  Posters run in
 * any context (CQ, CM and QP event handlers) while the IA may be closing;
 * the pointer is cleared before the EVD's last reference can go, and EVD
 * memory is returned through RCU.
 */
struct kdat_evd *kdat_ia_get_async_evd(struct kdat_ia *ia)
{
	struct kdat_evd *evd;

	rcu_read_lock();
	evd = rcu_dereference(ia->async_evd);
	if (evd && !kref_get_unless_zero(&evd->obj.ref))
		evd = NULL;
	rcu_read_unlock();
	return evd;
}

/* Report an unaffiliated or affiliated async event on the IA's async EVD. */
void kdat_ia_async_error(struct kdat_ia *ia, DAT_EVENT_NUMBER num,
			 DAT_HANDLE h, DAT_COUNT reason, bool may_upcall)
{
	struct kdat_evd *aevd = kdat_ia_get_async_evd(ia);
	DAT_EVENT ev = {};

	if (!aevd)
		return;
	ev.event_number = num;
	ev.evd_handle = (DAT_EVD_HANDLE)aevd;
	ev.event_data.asynch_error_event_data.dat_handle = h;
	ev.event_data.asynch_error_event_data.reason = reason;
	kdat_evd_post(aevd, &ev, NULL, may_upcall);
	kdat_obj_put(&aevd->obj);
}

static void kdat_ia_release(struct kdat_obj *obj)
{
	struct kdat_ia *ia = container_of(obj, struct kdat_ia, obj);
	struct kdat_device *kdev = ia->dev;

	xa_destroy(&ia->lmrs);
	mutex_lock(&kdev->lock);
	list_del(&ia->dev_node);
	mutex_unlock(&kdev->lock);
	if (ia->net)
		put_net(ia->net);
	/* the ib_device's memory: attributes and name outlive a removal */
	put_device(&ia->ibdev->dev);
	/* the device table outlives the device while IAs point into it */
	kdat_device_put(kdev);
}

/*
 * The per-type ops every teardown walks, in dependency order (consumers
 * of an object before the object): IA close, file release (an abrupt
 * close of each IA) and device removal (hardware only).
 *   destroy     the type's free, called with the destroy claim held
 *   hw_destroy  release the hardware, keep the DAT object (idempotent)
 */
struct kdat_type_ops {
	DAT_HANDLE_TYPE type;
	DAT_RETURN (*destroy)(DAT_HANDLE h);
	void (*hw_destroy)(struct kdat_obj *obj);
};

static void kdat_pz_hw_destroy_obj(struct kdat_obj *obj)
{
	kdat_pz_hw_destroy(container_of(obj, struct kdat_pz, obj));
}

static void kdat_ep_hw_destroy_obj(struct kdat_obj *obj)
{
	kdat_ep_hw_destroy(container_of(obj, struct kdat_ep, obj));
}

static void kdat_cr_hw_destroy_obj(struct kdat_obj *obj)
{
	kdat_cr_hw_destroy(container_of(obj, struct kdat_cr, obj));
}

static void kdat_psp_hw_destroy_obj(struct kdat_obj *obj)
{
	kdat_psp_hw_destroy(container_of(obj, struct kdat_psp, obj));
}

static void kdat_srq_hw_destroy_obj(struct kdat_obj *obj)
{
	kdat_srq_hw_destroy(container_of(obj, struct kdat_srq, obj));
}

static void kdat_lmr_hw_destroy_obj(struct kdat_obj *obj)
{
	kdat_lmr_hw_destroy(container_of(obj, struct kdat_lmr, obj));
}

static void kdat_evd_hw_destroy_obj(struct kdat_obj *obj)
{
	kdat_evd_hw_destroy(container_of(obj, struct kdat_evd, obj));
}

static void kdat_no_hw_destroy(struct kdat_obj *obj)
{
}

static void kdat_rsp_hw_destroy_obj(struct kdat_obj *obj)
{
	kdat_psp_hw_destroy(container_of(obj, struct kdat_psp, obj));
}

/* RSPs first: freeing one gives its reserved EP back (Unconnected). */
static const struct kdat_type_ops kdat_teardown_ops[] = {
	{ DAT_HANDLE_TYPE_RSP, kdat_ib_rsp_free, kdat_rsp_hw_destroy_obj },
	{ DAT_HANDLE_TYPE_EP, kdat_ib_ep_free, kdat_ep_hw_destroy_obj },
	{ DAT_HANDLE_TYPE_CR, kdat_ib_cr_reject, kdat_cr_hw_destroy_obj },
	{ DAT_HANDLE_TYPE_PSP, kdat_ib_psp_free, kdat_psp_hw_destroy_obj },
	{ DAT_HANDLE_TYPE_SRQ, kdat_ib_srq_free, kdat_srq_hw_destroy_obj },
	{ DAT_HANDLE_TYPE_LMR, kdat_ib_lmr_free, kdat_lmr_hw_destroy_obj },
	{ DAT_HANDLE_TYPE_EVD, kdat_ib_evd_free, kdat_evd_hw_destroy_obj },
	{ DAT_HANDLE_TYPE_PZ, kdat_ib_pz_free, kdat_pz_hw_destroy_obj },
	/* after the EVDs that hold them; no hardware */
	{ KDAT_HANDLE_TYPE_CNO, kdat_cno_free, kdat_no_hw_destroy },
};

/*
 * Destroy @obj through @op's free; the caller holds the claim.  Counted in
 * ia->frees, so a device removal that no longer finds the object on its
 * IA's list waits for its hardware to go.
 */
static DAT_RETURN kdat_type_destroy(const struct kdat_type_ops *op,
				    struct kdat_obj *obj)
{
	DAT_RETURN r;

	kdat_free_begin(obj);
	r = op->destroy(obj);
	kdat_free_end(obj);
	return r;
}

/* Destroy @obj through its type's free; the caller holds the claim. */
DAT_RETURN kdat_obj_destroy(struct kdat_obj *obj)
{
	const struct kdat_type_ops *op;

	for (op = kdat_teardown_ops;
	     op < kdat_teardown_ops + ARRAY_SIZE(kdat_teardown_ops); op++)
		if (op->type == obj->type)
			return kdat_type_destroy(op, obj);
	return KDAT_ERR(DAT_INVALID_HANDLE, 0);
}

/*
 * The next child of @type with @bit still clear, pinned, the bit set; or
 * NULL.  The IA lock is not held while the caller tears the child down:
 * destroying a CM ID waits for its handler, which may need the lock.
 */
static struct kdat_obj *kdat_ia_next_child(struct kdat_ia *ia,
					   DAT_HANDLE_TYPE type, int bit)
{
	struct kdat_obj *obj;

	mutex_lock(&ia->lock);
	list_for_each_entry(obj, &ia->objs, ia_node) {
		if (obj->type == type &&
		    obj != (struct kdat_obj *)rcu_access_pointer(ia->async_evd) &&
		    !test_and_set_bit(bit, &obj->flags)) {
			kdat_obj_hold(obj);
			mutex_unlock(&ia->lock);
			return obj;
		}
	}
	mutex_unlock(&ia->lock);
	return NULL;
}

/*
 * Abrupt close: free every child, consumers first.  New children are
 * refused (ia->closing) before this runs, so the walk ends.  A child a
 * racing free already claimed is that free's to finish: claim_wait waits
 * for it and returns false.  The async EVD, on the list too, is skipped
 * here (kdat_ia_next_child) and goes last, in kdat_ia_close.
 */
static void kdat_ia_free_children(struct kdat_ia *ia)
{
	const struct kdat_type_ops *op;
	struct kdat_obj *obj;
	DAT_RETURN r;

	for (op = kdat_teardown_ops;
	     op < kdat_teardown_ops + ARRAY_SIZE(kdat_teardown_ops); op++) {
		while ((obj = kdat_ia_next_child(ia, op->type,
						 KDAT_OBJ_TORN))) {
			if (kdat_obj_claim_wait(obj, 0)) {
				r = kdat_type_destroy(op, obj);
				if (r != DAT_SUCCESS) {
					/* cannot happen in order: say so loudly */
					WARN(1, "kdat: abrupt close could not free %d: %x\n",
					     obj->type, r);
					kdat_obj_unclaim(obj, 0);
					kdat_ia_unlink(obj);
				}
			}
			kdat_obj_put(obj);
		}
		/*
		 * A consumer's free that claimed a child first (claim_wait
		 * saw it gone) still holds its parents' users counts: let it
		 * end before the next type, its parents, is freed.
		 */
		wait_var_event(&ia->frees, !atomic_read(&ia->frees));
	}
}

/*
 * Device removal: release every hardware resource of the IA, keep the DAT
 * objects, which then fail every call but can still be freed.  The calls
 * in flight finish first (kdat_calls_sync), so a create that passed its
 * "dead" test has linked its object by then and is torn down here too.
 * Work requests still posted complete as flushed (kdat_ep_finish_qp).
 */
static void kdat_ia_catastrophe(struct kdat_ia *ia)
{
	const struct kdat_type_ops *op;
	struct kdat_obj *obj;

	mutex_lock(&ia->lock);
	WRITE_ONCE(ia->dead, true);
	mutex_unlock(&ia->lock);
	kdat_calls_sync();
	for (op = kdat_teardown_ops;
	     op < kdat_teardown_ops + ARRAY_SIZE(kdat_teardown_ops); op++) {
		while ((obj = kdat_ia_next_child(ia, op->type,
						 KDAT_OBJ_HW_GONE))) {
			op->hw_destroy(obj);
			if (ia->uops)
				ia->uops->uncharge(obj);
			kdat_obj_put(obj);
		}
		/*
		 * A /dev/kdat free runs outside the calls kdat_calls_sync
		 * waits for, and its object left the list before its
		 * hardware goes: wait for it, so its QP is gone before the
		 * CQs of the next types, and all is gone before remove
		 * returns.
		 */
		wait_var_event(&ia->frees, !atomic_read(&ia->frees));
	}
	/*
	 * The device's rdma cgroup accounting ends with it: the async EVD
	 * (not among the children above) and the IA give theirs back too.
	 */
	if (ia->uops) {
		struct kdat_evd *aevd = kdat_ia_get_async_evd(ia);

		if (aevd) {
			ia->uops->uncharge(&aevd->obj);
			kdat_obj_put(&aevd->obj);
		}
		ia->uops->uncharge(&ia->obj);
		ia->uops->uncharge_sync(ia);
	}
	/* told only once nothing of the device is left in use */
	kdat_ia_async_error(ia, DAT_ASYNC_ERROR_IA_CATASTROPHIC,
			    (DAT_HANDLE)ia, DAT_IA_CATASTROPHIC_ERROR, true);
}

/*
 * Open an IA of device @name.  @uf is the /dev/kdat file that owns it
 * (@uops its ops), or NULL for a kernel consumer; every object of an owned
 * IA also gets an ID in that file.  A user IA lives in the opener's network
 * namespace and sees only devices visible there.
 */
static struct module *kdat_consumer_of(unsigned long ip);

DAT_RETURN kdat_ia_open(const char *name, DAT_COUNT qlen,
			struct kdat_ufile *uf, const struct kdat_uops *uops,
			unsigned long opener_ip, struct kdat_ia **iap)
{
	struct net *net = uf ? current->nsproxy->net_ns : &init_net;
	struct kdat_device *kdev = NULL;
	struct ib_device *ibdev;
	DAT_EVD_HANDLE aevd;
	struct kdat_ia *ia;
	DAT_RETURN ret;

	if (qlen <= 0)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	ibdev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (!ibdev)
		return KDAT_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
	if (rdma_dev_access_netns(ibdev, net))
		kdev = ib_get_client_data(ibdev, &kdat_ib_client);
	if (kdev)
		kref_get(&kdev->ref);
	if (!kdev) {
		ib_device_put(ibdev);
		return KDAT_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
	}
	ia = kzalloc(sizeof(*ia), GFP_KERNEL_ACCOUNT);
	if (!ia) {
		ib_device_put(ibdev);
		kdat_device_put(kdev);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	kdat_obj_init(&ia->obj, DAT_HANDLE_TYPE_IA, &kdev->provider, NULL,
		      kdat_ia_release);
	ia->obj.ia = ia;
	ia->dev = kdev;			/* the reference moves to the IA */
	ia->ibdev = kdev->ibdev;
	/*
	 * The IA holds the device's memory (attributes, name) for its whole
	 * life, not a registration reference: that would keep
	 * ib_unregister_device waiting for the consumer to close.
	 */
	get_device(&ibdev->dev);
	ib_device_put(ibdev);
	ia->net = get_net(net);
	ia->ufile = uf;
	ia->uops = uops;
	/* before the IA is on kdev->ias, where the module notifier looks */
	if (!uf)
		ia->owner = kdat_consumer_of(opener_ip);
	mutex_init(&ia->lock);
	INIT_LIST_HEAD(&ia->objs);
	xa_init_flags(&ia->lmrs, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	kdat_ia_fill_addr(ia);

	/* remove_one either sees this IA or we see the device gone */
	mutex_lock(&kdev->lock);
	if (kdev->removed)
		ia->dead = true;
	list_add_tail(&ia->dev_node, &kdev->ias);
	mutex_unlock(&kdev->lock);
	if (ia->dead) {
		kdat_obj_put(&ia->obj);
		return KDAT_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
	}

	if (kdat_obj_publish(&ia->obj)) {
		kdat_obj_put(&ia->obj);
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	ret = kdat_ib_evd_kcreate(ia, qlen, DAT_UPCALL_DISABLE, NULL,
				  DAT_EVD_ASYNC_FLAG, &aevd);
	if (ret != DAT_SUCCESS) {
		kdat_ia_close(ia, 0);
		kdat_obj_put(&ia->obj);
		return ret;
	}
	rcu_assign_pointer(ia->async_evd,
			   container_of((struct kdat_obj *)aevd,
					struct kdat_evd, obj));
	*iap = ia;			/* the caller owns our reference */
	return DAT_SUCCESS;
}

DAT_RETURN kdat_ib_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			   DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia_handle)
{
	return kdat_ib_ia_open_from(name, qlen, async_evd, ia_handle, 0);
}

/* dat_ia_openv's open, for a consumer whose call returns to @opener_ip */
DAT_RETURN kdat_ib_ia_open_from(const DAT_NAME_PTR name, DAT_COUNT qlen,
				DAT_EVD_HANDLE *async_evd,
				DAT_IA_HANDLE *ia_handle,
				unsigned long opener_ip)
{
	struct kdat_ia *ia;
	DAT_RETURN ret;

	/*
	 * A consumer-supplied async EVD would belong to another IA; this
	 * provider always creates the IA's own async EVD.
	 */
	if (*async_evd != DAT_HANDLE_NULL)
		return KDAT_ERR(DAT_INVALID_HANDLE,
				DAT_INVALID_HANDLE_EVD_ASYNC);
	ret = kdat_ia_open(name, qlen, NULL, NULL, opener_ip, &ia);
	if (ret != DAT_SUCCESS)
		return ret;
	*async_evd = rcu_access_pointer(ia->async_evd);
	*ia_handle = ia;
	kdat_obj_put(&ia->obj);		/* the table keeps it */
	return DAT_SUCCESS;
}

/*
 * Close @ia abruptly, as a caller that holds @held shared uses of it (a
 * DAT call holds one; file release and a failed open none).  The IA stops
 * taking children and calls first, the calls inside it leave, then every
 * child goes in dependency order, the async EVD last: it lives until the
 * close is done, and posters that pinned it before see it dead.
 */
void kdat_ia_close(struct kdat_ia *ia, int held)
{
	struct kdat_evd *aevd;

	mutex_lock(&ia->lock);
	WRITE_ONCE(ia->closing, true);
	mutex_unlock(&ia->lock);
	if (ia->uops)
		ia->uops->ia_closing(ia);
	kdat_obj_claim_wait(&ia->obj, held);
	/*
	 * The async EVD goes last, but a CNO it holds goes with the other
	 * children: let it go now (no call can attach it again).
	 */
	aevd = rcu_dereference_protected(ia->async_evd, true);
	if (aevd)
		kdat_evd_drop_cno(aevd);
	kdat_ia_free_children(ia);

	if (aevd) {
		kdat_obj_hold(&aevd->obj);
		if (kdat_obj_claim_wait(&aevd->obj, 0))
			kdat_ib_evd_free(&aevd->obj);
		RCU_INIT_POINTER(ia->async_evd, NULL);
		kdat_obj_put(&aevd->obj);
	}
	kdat_obj_unpublish(&ia->obj);
}

/*
 * Closing @ia waits for its EVDs' pollers (the frees of its EPs and EVDs
 * drain through them) and for the frees in flight, some of which (a
 * deferred EP free, the CQ free of an EVD freed from an upcall) wait for
 * a poller.  From a poller's upcall it may wait only when the IA has no
 * EVD polled there and no free in flight, and no poller waits at all
 * (kdat_poller_wait_any_begin); it is then recorded in @pw.  Under
 * ia->lock.
 */
static bool kdat_ia_close_may_wait(struct kdat_ia *ia,
				   struct kdat_poller_wait *pw)
{
	struct kdat_obj *obj;

	lockdep_assert_held(&ia->lock);
	pw->work = NULL;
	if (!kdat_in_a_cq_poller())
		return true;
	if (atomic_read(&ia->frees))
		return false;
	list_for_each_entry(obj, &ia->objs, ia_node)
		if (obj->type == DAT_HANDLE_TYPE_EVD &&
		    kdat_evd_polls_here(container_of(obj, struct kdat_evd,
						     obj)))
			return false;
	return kdat_poller_wait_any_begin(pw);
}

/*
 * From a CQ poller's upcall, where the close may have to wait for the run
 * it is in (kdat_ia_close_may_wait: an EVD of the IA polled there, a free
 * of the IA in flight, a poller waiting), the close is refused
 * (DAT_INVALID_STATE) and the IA stays as it was: it used to wait for
 * ever.  A kernel consumer closes it from a context of its own, a work
 * item for instance.
 */
DAT_RETURN kdat_ib_ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);
	struct kdat_poller_wait pw;
	bool busy = false;

	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	mutex_lock(&ia->lock);
	if (ia->closing) {
		mutex_unlock(&ia->lock);
		return KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	}
	/* graceful: only the async EVD may be left */
	if (flags == DAT_CLOSE_GRACEFUL_FLAG)
		busy = !(list_empty(&ia->objs) || list_is_singular(&ia->objs));
	if (!busy && !kdat_ia_close_may_wait(ia, &pw))
		busy = true;
	if (!busy)
		WRITE_ONCE(ia->closing, true);
	mutex_unlock(&ia->lock);
	if (busy)
		return KDAT_ERR(DAT_INVALID_STATE, 0);
	/* the call that got here holds one use of the IA */
	kdat_ia_close(ia, 1);
	kdat_poller_wait_end(&pw);
	return DAT_SUCCESS;
}

static void kdat_fill_ia_attr(struct kdat_ia *ia, DAT_IA_ATTR *a)
{
	const struct ib_device_attr *d = &ia->ibdev->attrs;

	memset(a, 0, sizeof(*a));
	strscpy(a->adapter_name, dev_name(&ia->ibdev->dev),
		sizeof(a->adapter_name));
	strscpy(a->vendor_name, ia->ibdev->ops.driver_id == RDMA_DRIVER_RXE ?
		"Soft-RoCE" : "ib_core", sizeof(a->vendor_name));
	a->hardware_version_major = d->hw_ver;
	a->firmware_version_major = (u32)(d->fw_ver >> 32);
	a->firmware_version_minor = (u32)d->fw_ver;
	a->ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia->addr;
	a->max_eps = d->max_qp;
	a->max_dto_per_ep = KDAT_MAX_DTO_PER_EP(d);
	a->max_rdma_read_per_ep_in = d->max_qp_rd_atom;
	a->max_rdma_read_per_ep_out = d->max_qp_init_rd_atom;
	a->max_evds = d->max_cq;
	a->max_evd_qlen = d->max_cqe;
	a->max_iov_segments_per_dto = min3(d->max_send_sge, d->max_recv_sge,
					   KDAT_EP_MAX_IOV);
	a->max_iov_segments_per_rdma_read = kdat_rdma_read_iov_max(ia->ibdev);
	a->max_iov_segments_per_rdma_write =
		kdat_rdma_write_iov_max(ia->ibdev);
	a->max_lmrs = d->max_mr;
	a->max_lmr_block_size = d->max_mr_size;
	a->max_lmr_virtual_address = ~0ULL;
	a->max_pzs = d->max_pd;
	a->max_message_size = 1U << 31;
	a->max_rdma_size = 1U << 31;
	a->max_rmrs = 0;
	a->max_rmr_target_address = 0;
	a->max_srqs = d->max_srq;
	a->max_ep_per_srq = d->max_qp;
	a->max_recv_per_srq = d->max_srq_wr;
	a->num_transport_attr = 0;
	a->num_vendor_attr = 0;
}

static void kdat_fill_provider_attr(struct kdat_ia *ia, DAT_PROVIDER_ATTR *p)
{
	memset(p, 0, sizeof(*p));
	strscpy(p->provider_name, KDAT_PROVIDER_NAME, sizeof(p->provider_name));
	p->provider_version_major = KDAT_VERSION_MAJOR;
	p->provider_version_minor = KDAT_VERSION_MINOR;
	p->dapl_version_major = DAT_VERSION_MAJOR;
	p->dapl_version_minor = DAT_VERSION_MINOR;
	p->lmr_mem_types_supported = DAT_MEM_TYPE_VIRTUAL;
	p->iov_ownership_on_return = DAT_IOV_CONSUMER;
	p->dat_qos_supported = DAT_QOS_BEST_EFFORT;
	p->completion_flags_supported = DAT_COMPLETION_DEFAULT_FLAG |
					DAT_COMPLETION_SUPPRESS_FLAG |
					DAT_COMPLETION_UNSIGNALLED_FLAG;
	p->is_thread_safe = DAT_TRUE;
	/* IB CM REQ data minus rdma_cm's header and our length byte */
	p->max_private_data_size = 55;
	p->supports_multipath = DAT_FALSE;
	p->ep_creator = DAT_PSP_CREATES_EP_NEVER;
	p->upcall_policy = DAT_UPCALL_SINGLE_INSTANCE;
	p->optimal_buffer_alignment = 64;
	p->srq_supported = ia->ibdev->attrs.max_srq > 0 ? DAT_TRUE : DAT_FALSE;
	/* watermark counted by the provider, per arming: any value works */
	p->srq_watermarks_supported = 1;
	/*
	 * An SRQ EP's QP lives in the EP's PZ; receive buffers stay in the
	 * SRQ's.  Kernel and user IAs alike, wherever the device checks SRQ
	 * receive lkeys against the SRQ's PD (not rxe: ep.c).
	 */
	p->srq_ep_pz_difference_supported =
		kdat_srq_ep_pz_may_differ(ia->ibdev) ? DAT_TRUE : DAT_FALSE;
	/* both available_dto_count and outstanding_dto_count are real */
	p->srq_info_supported = 1;
	p->ep_recv_info_supported = 0;
	p->lmr_sync_req = DAT_FALSE;
	p->dto_async_return_guaranteed = DAT_TRUE;
	p->rdma_write_for_rdma_read_req = DAT_FALSE;
	p->num_provider_specific_attr = 0;
}

DAT_RETURN kdat_ib_ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async_evd,
			    DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
			    DAT_PROVIDER_ATTR_MASK pmask,
			    DAT_PROVIDER_ATTR *pattr)
{
	struct kdat_ia *ia = container_of((struct kdat_obj *)h, struct kdat_ia,
					  obj);

	if (ia_mask && !ia_attr)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (pmask && !pattr)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
	if (async_evd)
		*async_evd = (DAT_EVD_HANDLE)rcu_access_pointer(ia->async_evd);
	if (ia_mask) {
		if (!kdat_ia_dead(ia))
			kdat_ia_fill_addr(ia);
		kdat_fill_ia_attr(ia, ia_attr);
	}
	if (pmask)
		kdat_fill_provider_attr(ia, pattr);
	return DAT_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* ib_client                                                               */

static int kdat_ib_add_one(struct ib_device *ibdev)
{
	struct kdat_device *kdev;
	DAT_RETURN r;

	if (!rdma_protocol_roce(ibdev, 1) && !rdma_protocol_ib(ibdev, 1) &&
	    !rdma_protocol_iwarp(ibdev, 1))
		return -EOPNOTSUPP;
	kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
	if (!kdev)
		return -ENOMEM;
	kdev->ibdev = ibdev;
	kref_init(&kdev->ref);
	mutex_init(&kdev->lock);
	INIT_LIST_HEAD(&kdev->ias);
	kdev->provider = kdat_ib_provider_template;
	kdev->provider.device_name = kdev->info.ia_name;
	strscpy(kdev->info.ia_name, dev_name(&ibdev->dev),
		sizeof(kdev->info.ia_name));
	kdev->info.dapl_version_major = DAT_VERSION_MAJOR;
	kdev->info.dapl_version_minor = DAT_VERSION_MINOR;
	kdev->info.is_thread_safe = DAT_TRUE;

	/*
	 * Registered before an IA can find it (ib_get_client_data): an open
	 * meanwhile finds no provider, and a failed registration frees a
	 * device no IA can hold.
	 */
	r = dat_registry_add_provider(&kdev->provider, &kdev->info);
	if (r != DAT_SUCCESS) {
		kfree(kdev);
		return -EEXIST;
	}
	mutex_lock(&kdat_devices_lock);
	list_add_tail(&kdev->node, &kdat_devices);
	mutex_unlock(&kdat_devices_lock);
	ib_set_client_data(ibdev, &kdat_ib_client, kdev);
	pr_info("kdat: IA %s registered\n", kdev->info.ia_name);
	return 0;
}

/*
 * With a reference, the next IA of @kdev that is not dead (a removal's
 * catastrophe), or at @unloading the next one not closing (an unload's
 * close, dead or not); NULL when there is none.
 */
static struct kdat_ia *kdat_next_ia(struct kdat_device *kdev, bool unloading)
{
	struct kdat_ia *ia;

	mutex_lock(&kdev->lock);
	list_for_each_entry(ia, &kdev->ias, dev_node) {
		if ((unloading ? !READ_ONCE(ia->closing) : !kdat_ia_dead(ia)) &&
		    kref_get_unless_zero(&ia->obj.ref)) {
			mutex_unlock(&kdev->lock);
			return ia;
		}
	}
	mutex_unlock(&kdev->lock);
	return NULL;
}

bool kdat_unloading;

/*
 * Module exit: an IA still open here was left by a kernel consumer that
 * is gone (user IAs close with their files, and /dev/kdat is gone): no
 * one will close it, so close it now, while the work queues its teardown
 * uses still run.  No upcall runs any more (kdat_upcall_on): it would
 * enter the consumer's unloaded code.
 */
static void kdat_close_leaked_ia(struct kdat_ia *ia)
{
	pr_warn("kdat: IA %s left open by a kernel consumer, closed at unload\n",
		ia->dev->info.ia_name);
	kdat_ia_close(ia, 0);
}

static void kdat_ib_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct kdat_device *kdev = client_data;
	bool unloading = READ_ONCE(kdat_unloading);
	struct kdat_ia *ia;

	dat_registry_remove_provider(&kdev->provider, &kdev->info);
	mutex_lock(&kdev->lock);
	kdev->removed = true;
	mutex_unlock(&kdev->lock);
	while ((ia = kdat_next_ia(kdev, unloading))) {
		if (unloading)
			kdat_close_leaked_ia(ia);
		else
			kdat_ia_catastrophe(ia);
		kdat_obj_put(&ia->obj);
	}
	pr_info("kdat: IA %s removed\n", kdev->info.ia_name);
	kdat_device_put(kdev);
}

/*
 * Module exit, after the ib_client is gone: an IA still open on a device
 * removed before (its remove_one made it dead, not closed) was left by a
 * kernel consumer that is gone too.  Close it, as remove_one closes those
 * of the devices still there.  Nothing adds a device any more.
 */
void kdat_close_leaked_ias(void)
{
	struct kdat_device *kdev, *next;
	struct kdat_ia *ia;
	LIST_HEAD(left);

	mutex_lock(&kdat_devices_lock);
	list_for_each_entry(kdev, &kdat_devices, node)
		if (kref_get_unless_zero(&kdev->ref))
			list_add_tail(&kdev->exit_node, &left);
	mutex_unlock(&kdat_devices_lock);
	list_for_each_entry_safe(kdev, next, &left, exit_node) {
		while ((ia = kdat_next_ia(kdev, true))) {
			kdat_close_leaked_ia(ia);
			kdat_obj_put(&ia->obj);
		}
		kdat_device_put(kdev);
	}
}

/* ---- kernel consumers that unload ------------------------------------ */

/*
 * A kernel consumer module that unloads with an IA open would leave
 * upcalls into code that is gone, and the device writing into buffers
 * that may be gone with it.  Every consumer loads after kdat (it uses
 * kdat's symbols), so a module notifier sees it come: kdat keeps a list
 * of the modules loaded since, and an IA opened through dat_ia_openv is
 * owned by the one whose code (init or core) that call returned to.  At
 * a module's MODULE_STATE_GOING (after its exit ran or its init failed,
 * before its memory is freed) kdat first turns off, on every kernel IA,
 * the upcalls whose function lies in that module (every upcall of the
 * IAs it owns) and waits for those already running, then closes the IAs
 * it owns.  An IA with no owner (an open kdat cannot place) gets the
 * first part only, and is closed at kdat's own unload
 * (kdat_close_leaked_ias).  No lock is held while a pass waits: an upcall
 * it waits for may open IAs, load a module, or fail to.
 */
struct kdat_consumer_mod {
	struct list_head node;
	struct module *mod;
	/* an IA or an armed upcall was traced to it: its unload waits */
	bool used;
};

static LIST_HEAD(kdat_consumer_mods);		/* modules loaded since kdat */
/* a spinlock: dat_evd_modify_upcall may be called in atomic context */
static DEFINE_SPINLOCK(kdat_consumer_mods_lock);

/* The listed module whose code @ip lies in, now marked used; or NULL. */
static struct module *kdat_consumer_mark(unsigned long ip)
{
	struct kdat_consumer_mod *m;
	struct module *mod = NULL;
	unsigned long flags;

	spin_lock_irqsave(&kdat_consumer_mods_lock, flags);
	list_for_each_entry(m, &kdat_consumer_mods, node) {
		if (within_module(ip, m->mod)) {
			m->used = true;
			mod = m->mod;
			break;
		}
	}
	spin_unlock_irqrestore(&kdat_consumer_mods_lock, flags);
	return mod;
}

/* An IA is opened from @ip: its owner, or NULL. */
static struct module *kdat_consumer_of(unsigned long ip)
{
	/* the race tests' stand-in for an opener kdat cannot place */
	if (unlikely(READ_ONCE(kdat_fault_no_opener)))
		return NULL;
	return kdat_consumer_mark(ip);
}

/* An upcall is armed with @fn: the module it lies in waits at its unload. */
void kdat_consumer_upcall(DAT_UPCALL_FUNC fn)
{
	if (fn)
		kdat_consumer_mark((unsigned long)fn);
}

/*
 * The kernel IA after @prev (NULL: the first) on kdat's devices' lists,
 * those closing too if @closing, with a reference; NULL at the end.
 * Drops @prev's reference.  That reference kept @prev, and its device,
 * on the lists, so a walk holds no lock between its steps.
 */
static struct kdat_ia *kdat_next_kernel_ia(struct kdat_ia *prev,
					   bool closing)
{
	struct kdat_device *kdev;
	struct kdat_ia *ia, *found = NULL;

	mutex_lock(&kdat_devices_lock);
	if (prev) {
		kdev = prev->dev;
		mutex_lock(&kdev->lock);
		ia = list_next_entry(prev, dev_node);
	} else {
		kdev = list_first_entry(&kdat_devices, struct kdat_device,
					node);
		if (list_entry_is_head(kdev, &kdat_devices, node))
			goto out;
		mutex_lock(&kdev->lock);
		ia = list_first_entry(&kdev->ias, struct kdat_ia, dev_node);
	}
	for (;;) {
		list_for_each_entry_from(ia, &kdev->ias, dev_node) {
			if (ia->uops || (!closing && READ_ONCE(ia->closing)) ||
			    !kref_get_unless_zero(&ia->obj.ref))
				continue;
			found = ia;
			break;
		}
		mutex_unlock(&kdev->lock);
		if (found)
			break;
		kdev = list_next_entry(kdev, node);
		if (list_entry_is_head(kdev, &kdat_devices, node))
			break;
		mutex_lock(&kdev->lock);
		ia = list_first_entry(&kdev->ias, struct kdat_ia, dev_node);
	}
out:
	mutex_unlock(&kdat_devices_lock);
	if (prev)
		kdat_obj_put(&prev->obj);
	return found;
}

/*
 * Turn off the upcalls of @ia's EVDs whose function lies in @mod (with
 * @all, every upcall); the number that were on.  An EVD being freed is
 * off before it leaves the list (kdat_ib_evd_free).
 */
static int kdat_ia_upcalls_drop(struct kdat_ia *ia, const struct module *mod,
				bool all)
{
	struct kdat_obj *obj;
	int n = 0;

	mutex_lock(&ia->lock);
	list_for_each_entry(obj, &ia->objs, ia_node)
		if (obj->type == DAT_HANDLE_TYPE_EVD)
			n += kdat_evd_upcall_drop(container_of(obj,
						struct kdat_evd, obj), mod,
						all);
	mutex_unlock(&ia->lock);
	return n;
}

/*
 * First every upcall into @mod goes, on every kernel IA (closing ones
 * too: their teardown still flushes into their EVDs), with every upcall
 * of the IAs @mod owns, and the upcalls already running end; only then
 * do those IAs close.  Closing one disconnects its peers, whose events
 * would otherwise still reach @mod through an IA closed later, or never.
 */
static void kdat_consumer_going(struct module *mod)
{
	struct kdat_ia *ia = NULL;
	bool owned;
	int n;

	while ((ia = kdat_next_kernel_ia(ia, true))) {
		owned = ia->owner == mod;
		n = kdat_ia_upcalls_drop(ia, mod, owned);
		if (n && !owned)
			pr_warn("kdat: IA %s: %d upcall%s into %s turned off at its unload\n",
				ia->dev->info.ia_name, n, n == 1 ? "" : "s",
				mod->name);
	}
	/*
	 * Whatever runs @mod's code now (an upcall that freed its own EVD,
	 * one whose function a modify replaced meanwhile) started before.
	 */
	kdat_upcalls_sync();
	while ((ia = kdat_next_kernel_ia(ia, false))) {
		if (ia->owner == mod) {
			pr_warn("kdat: IA %s left open by %s, closed at its unload\n",
				ia->dev->info.ia_name, mod->name);
			kdat_ia_close(ia, 0);
		}
	}
}

static int kdat_module_notify(struct notifier_block *nb, unsigned long state,
			      void *data)
{
	struct module *mod = data;
	struct kdat_consumer_mod *m, *found = NULL;
	unsigned long flags;
	bool used = true;

	if (state == MODULE_STATE_COMING) {
		/* no room: that module's IAs have no owner (see above) */
		m = kzalloc(sizeof(*m), GFP_KERNEL);
		if (m) {
			m->mod = mod;
			spin_lock_irqsave(&kdat_consumer_mods_lock, flags);
			list_add(&m->node, &kdat_consumer_mods);
			spin_unlock_irqrestore(&kdat_consumer_mods_lock, flags);
		}
		return NOTIFY_OK;
	}
	if (state != MODULE_STATE_GOING)
		return NOTIFY_DONE;
	spin_lock_irqsave(&kdat_consumer_mods_lock, flags);
	list_for_each_entry(m, &kdat_consumer_mods, node) {
		if (m->mod == mod) {
			found = m;
			used = m->used;
			break;
		}
	}
	spin_unlock_irqrestore(&kdat_consumer_mods_lock, flags);
	/*
	 * Only a module an IA or an armed upcall was traced to (or one not
	 * listed: loaded before kdat, or no memory then) has anything to
	 * wait for; the others must not wait for the upcalls running (one
	 * may be waiting for this very load or unload).
	 */
	if (used)
		kdat_consumer_going(mod);
	if (found) {
		spin_lock_irqsave(&kdat_consumer_mods_lock, flags);
		list_del(&found->node);
		spin_unlock_irqrestore(&kdat_consumer_mods_lock, flags);
		kfree(found);
	}
	return NOTIFY_OK;
}

static struct notifier_block kdat_module_nb = {
	.notifier_call = kdat_module_notify,
};

int kdat_consumers_init(void)
{
	return register_module_notifier(&kdat_module_nb);
}

void kdat_consumers_exit(void)
{
	struct kdat_consumer_mod *m, *next;

	unregister_module_notifier(&kdat_module_nb);
	list_for_each_entry_safe(m, next, &kdat_consumer_mods, node)
		kfree(m);
}

struct ib_client kdat_ib_client = {
	.name = "kdat",
	.add = kdat_ib_add_one,
	.remove = kdat_ib_remove_one,
};
