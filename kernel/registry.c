// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel DAT registry: providers register by IA name, consumers open an
 * IA by name, and every other DAT call is an exported function that checks
 * the handle against the table of live handles and then dispatches through
 * the provider table the handle points to (DAT_HANDLE_TO_PROVIDER).
 *
 * The handle table is what makes bad handles harmless: a handle is looked
 * up (under RCU) before it is dereferenced, the object is pinned for the
 * length of the call, and object memory is freed through RCU.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/debugfs.h>
#include <linux/indirect_call_wrapper.h>
#include <linux/seq_file.h>
#include <linux/rculist.h>
#include <linux/llist.h>
#include <linux/workqueue.h>

#include "kdat_core.h"

/* ---------------------------------------------------------------------- */
/* Provider registry                                                       */

struct kdat_reg_entry {
	struct list_head node;
	DAT_PROVIDER *provider;
	DAT_PROVIDER_INFO info;
};

static LIST_HEAD(kdat_providers);
static DEFINE_MUTEX(kdat_providers_lock);

DAT_RETURN dat_registry_add_provider(DAT_PROVIDER *provider,
				     const DAT_PROVIDER_INFO *info)
{
	struct kdat_reg_entry *e, *n;
	DAT_RETURN ret = DAT_SUCCESS;

	if (!provider)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	if (!info || !strnlen(info->ia_name, DAT_NAME_MAX_LENGTH))
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return KDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	n->provider = provider;
	n->info = *info;
	n->info.ia_name[DAT_NAME_MAX_LENGTH - 1] = '\0';

	mutex_lock(&kdat_providers_lock);
	list_for_each_entry(e, &kdat_providers, node) {
		if (!strcmp(e->info.ia_name, n->info.ia_name)) {
			ret = KDAT_ERR(DAT_PROVIDER_ALREADY_REGISTERED, 0);
			break;
		}
	}
	if (ret == DAT_SUCCESS)
		list_add_tail(&n->node, &kdat_providers);
	mutex_unlock(&kdat_providers_lock);
	if (ret != DAT_SUCCESS)
		kfree(n);
	return ret;
}
EXPORT_SYMBOL(dat_registry_add_provider);

DAT_RETURN dat_registry_remove_provider(DAT_PROVIDER *provider,
					const DAT_PROVIDER_INFO *info)
{
	struct kdat_reg_entry *e;
	DAT_RETURN ret = KDAT_ERR(DAT_NAME_NOT_FOUND, 0);

	if (!provider)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	mutex_lock(&kdat_providers_lock);
	list_for_each_entry(e, &kdat_providers, node) {
		if (e->provider == provider) {
			list_del(&e->node);
			kfree(e);
			ret = DAT_SUCCESS;
			break;
		}
	}
	mutex_unlock(&kdat_providers_lock);
	return ret;
}
EXPORT_SYMBOL(dat_registry_remove_provider);

DAT_RETURN dat_registry_list_providers(DAT_COUNT max_to_return,
				       DAT_COUNT *entries_returned,
				       DAT_PROVIDER_INFO *(dat_provider_list[]))
{
	struct kdat_reg_entry *e;
	DAT_COUNT n = 0;

	if (max_to_return < 0)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	if (!entries_returned)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (max_to_return > 0 && !dat_provider_list)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);

	mutex_lock(&kdat_providers_lock);
	list_for_each_entry(e, &kdat_providers, node) {
		if (max_to_return == 0) {
			n++;	/* only count, as the standard allows */
			continue;
		}
		if (n >= max_to_return)
			break;
		if (!dat_provider_list[n]) {
			mutex_unlock(&kdat_providers_lock);
			return KDAT_ERR(DAT_INVALID_PARAMETER,
					DAT_INVALID_ARG3);
		}
		*dat_provider_list[n++] = e->info;
	}
	mutex_unlock(&kdat_providers_lock);
	*entries_returned = n;
	return DAT_SUCCESS;
}
EXPORT_SYMBOL(dat_registry_list_providers);

/* Call @fn with each registered IA name, in registration order. */
int kdat_registry_for_each(int (*fn)(const char *name, void *data),
			   void *data)
{
	struct kdat_reg_entry *e;
	int ret = 0;

	mutex_lock(&kdat_providers_lock);
	list_for_each_entry(e, &kdat_providers, node) {
		ret = fn(e->info.ia_name, data);
		if (ret)
			break;
	}
	mutex_unlock(&kdat_providers_lock);
	return ret;
}

DAT_RETURN dat_ia_openv(const DAT_NAME_PTR name, DAT_COUNT async_evd_qlen,
			DAT_EVD_HANDLE *async_evd_handle,
			DAT_IA_HANDLE *ia_handle, DAT_UINT32 major,
			DAT_UINT32 minor, DAT_BOOLEAN thread_safety)
{
	DAT_RETURN (*open)(const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *,
			   DAT_IA_HANDLE *) = NULL;
	struct kdat_reg_entry *e;

	if (!name)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	if (!async_evd_handle)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (!ia_handle)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (major != DAT_VERSION_MAJOR || minor > DAT_VERSION_MINOR)
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);

	mutex_lock(&kdat_providers_lock);
	list_for_each_entry(e, &kdat_providers, node) {
		if (!strncmp(e->info.ia_name, name, DAT_NAME_MAX_LENGTH)) {
			open = e->provider->ia_open_func;
			break;
		}
	}
	mutex_unlock(&kdat_providers_lock);
	/*
	 * Not under the registry lock: the open takes ib_core's device lock,
	 * and device registration takes that first and then ours (add_one).
	 * A device removed meanwhile fails the open (ia.c: kdev->removed).
	 */
	if (!open)
		return KDAT_ERR(DAT_PROVIDER_NOT_FOUND, 0);
	/* kdat's IA is owned by the consumer module that opens it (ia.c) */
	if (open == kdat_ib_ia_open)
		return kdat_ib_ia_open_from(name, async_evd_qlen,
					    async_evd_handle, ia_handle,
					    _RET_IP_);
	return open(name, async_evd_qlen, async_evd_handle, ia_handle);
}
EXPORT_SYMBOL(dat_ia_openv);

/* ---------------------------------------------------------------------- */
/* Dispatch: check the handle, pin the object, call through its provider.  */

/*
 * Every call runs inside kdat_srcu (device removal waits for it) and holds
 * a shared use of the object it names; a free claims the object instead
 * (object.c).  A call names its handle's kind (IA, EP, ...): the handle
 * must be a DAT_HANDLE_TYPE_<kind>, else the call fails with the subtype
 * KDAT_INVALID_HANDLE_<kind>.
 */
#define KDAT_INVALID_HANDLE_IA	DAT_INVALID_HANDLE_IA
#define KDAT_INVALID_HANDLE_PZ	DAT_INVALID_HANDLE_PZ
#define KDAT_INVALID_HANDLE_EVD	DAT_INVALID_HANDLE_EVD_ASYNC
#define KDAT_INVALID_HANDLE_LMR	DAT_INVALID_HANDLE_LMR
#define KDAT_INVALID_HANDLE_RMR	DAT_INVALID_HANDLE_RMR
#define KDAT_INVALID_HANDLE_EP	DAT_INVALID_HANDLE_EP
#define KDAT_INVALID_HANDLE_SRQ	DAT_INVALID_HANDLE_SRQ
#define KDAT_INVALID_HANDLE_PSP	DAT_INVALID_HANDLE_PSP
#define KDAT_INVALID_HANDLE_RSP	DAT_INVALID_HANDLE_RSP
#define KDAT_INVALID_HANDLE_CR	DAT_INVALID_HANDLE_CR

#define KDAT_DISPATCH(h, kind, ...)					\
	KDAT_DISPATCH_(h, DAT_HANDLE_TYPE_##kind,			\
		       KDAT_INVALID_HANDLE_##kind, __VA_ARGS__)
#define KDAT_DISPATCH_(h, type, sub, fn, ...)				\
	({								\
		int __idx = kdat_call_begin();				\
		struct kdat_obj *__o = kdat_obj_get_use((h), (type));	\
		DAT_RETURN __r;						\
		if (!__o) {						\
			__r = KDAT_ERR(DAT_INVALID_HANDLE, (sub));	\
		} else {						\
			__r = __o->provider->fn(__VA_ARGS__);		\
			kdat_obj_put_use(__o);				\
		}							\
		kdat_call_end(__idx);					\
		__r;							\
	})

/*
 * The calls on the data path that never sleep (dat_srq_post_recv,
 * dat_evd_dequeue): the call section is an RCU section
 * (kdat_post_section_begin: inline, without the calls of a preemptible
 * kernel's rcu_read_lock()), the call holds a use of the object but no
 * reference (kdat_obj_use_rcu): two atomic operations and no SRCU barrier.
 * kdat's own provider (@direct) is called without the indirect call; a
 * provider registered with dat_registry_add_provider must not sleep in
 * these two either.
 */
#define KDAT_DISPATCH_ATOMIC(h, kind, fn, direct, ...)			\
	KDAT_DISPATCH_ATOMIC_(h, DAT_HANDLE_TYPE_##kind,		\
			      KDAT_INVALID_HANDLE_##kind, fn, direct,	\
			      __VA_ARGS__)
#define KDAT_DISPATCH_ATOMIC_(h, type, sub, fn, direct, ...)		\
	({								\
		struct kdat_obj *__o;					\
		DAT_RETURN __r;						\
		kdat_post_section_begin();				\
		__o = kdat_obj_use_rcu((h), (type));			\
		if (__o) {						\
			__r = INDIRECT_CALL_1(__o->provider->fn, direct, \
					      __VA_ARGS__);		\
			kdat_obj_unuse(__o);				\
		} else {						\
			__r = KDAT_ERR(DAT_INVALID_HANDLE, (sub));	\
		}							\
		kdat_post_section_end();				\
		__r;							\
	})

/* A free: claim the object, destroy it once, or give the claim back. */
#define KDAT_DISPATCH_FREE(h, kind, fn)					\
	KDAT_DISPATCH_FREE_(h, DAT_HANDLE_TYPE_##kind,			\
			    KDAT_INVALID_HANDLE_##kind, fn)
#define KDAT_DISPATCH_FREE_(h, type, sub, fn)				\
	({								\
		int __idx = kdat_call_begin();				\
		struct kdat_obj *__o = kdat_obj_get((h), (type));	\
		DAT_RETURN __r = KDAT_ERR(DAT_INVALID_HANDLE, (sub));	\
		if (__o) {						\
			__r = kdat_obj_claim(__o, 0);			\
			if (__r == DAT_SUCCESS) {			\
				kdat_free_begin(__o);			\
				__r = __o->provider->fn(__o);		\
				kdat_free_end(__o);			\
				if (__r != DAT_SUCCESS)			\
					kdat_obj_unclaim(__o, 0);	\
			} else if (DAT_GET_TYPE(__r) == DAT_INVALID_HANDLE) { \
				__r = KDAT_ERR(DAT_INVALID_HANDLE, (sub)); \
			}						\
			kdat_obj_put(__o);				\
		}							\
		kdat_call_end(__idx);					\
		__r;							\
	})

DAT_RETURN dat_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags)
{
	return KDAT_DISPATCH(ia, IA, ia_close_func, ia, flags);
}
EXPORT_SYMBOL(dat_ia_close);

DAT_RETURN dat_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd,
			DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
			DAT_PROVIDER_ATTR_MASK pmask, DAT_PROVIDER_ATTR *pattr)
{
	return KDAT_DISPATCH(ia, IA, ia_query_func, ia, async_evd, ia_mask,
			     ia_attr, pmask, pattr);
}
EXPORT_SYMBOL(dat_ia_query);

/* A kdat extension: only IAs of this module's providers are found. */
DAT_RETURN kdat_ia_set_flags(DAT_IA_HANDLE h, DAT_UINT32 flags)
{
	int idx = kdat_call_begin();
	struct kdat_obj *o = kdat_obj_get_use(h, DAT_HANDLE_TYPE_IA);
	DAT_RETURN r = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	struct kdat_ia *ia;

	BUILD_BUG_ON(KDAT_IA_SRQ_EP_BROKEN != KDAT_IA_OPEN_SRQ_EP_BROKEN);
	if (o) {
		ia = container_of(o, struct kdat_ia, obj);
		if (flags & ~KDAT_IA_OPEN_FLAGS_ALL) {
			r = KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		} else if (ia->ufile) {
			/* a user IA's flags are its opener's (IA_OPEN) */
			r = KDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
		} else {
			WRITE_ONCE(ia->flags, flags);
			r = DAT_SUCCESS;
		}
		kdat_obj_put_use(o);
	}
	kdat_call_end(idx);
	return r;
}
EXPORT_SYMBOL(kdat_ia_set_flags);

/* The IB extensions: kdat's own calls, kdat EPs only (no provider slot). */
#define KDAT_EP_CALL(h, call)						\
	({								\
		int __idx = kdat_call_begin();				\
		struct kdat_obj *__o = kdat_obj_get_use((h),		\
							DAT_HANDLE_TYPE_EP); \
		DAT_RETURN __r = KDAT_ERR(DAT_INVALID_HANDLE,		\
					  DAT_INVALID_HANDLE_EP);	\
		if (__o) {						\
			__r = (call);					\
			kdat_obj_put_use(__o);				\
		}							\
		kdat_call_end(__idx);					\
		__r;							\
	})

DAT_RETURN kdat_ep_post_rdma_write_immed(DAT_EP_HANDLE ep, DAT_COUNT n,
					 DAT_LMR_TRIPLET *iov,
					 DAT_DTO_COOKIE cookie,
					 const DAT_RMR_TRIPLET *remote,
					 DAT_UINT32 immed_data,
					 DAT_COMPLETION_FLAGS flags)
{
	BUILD_BUG_ON(KDAT_DTO_OP_SEND != KDAT_UDTO_SEND ||
		     KDAT_DTO_OP_RECV != KDAT_UDTO_RECV ||
		     KDAT_DTO_OP_RDMA_WRITE != KDAT_UDTO_RDMA_WRITE ||
		     KDAT_DTO_OP_RDMA_READ != KDAT_UDTO_RDMA_READ ||
		     KDAT_DTO_OP_RDMA_WRITE_IMMED != KDAT_UDTO_RDMA_WRITE_IMMED ||
		     KDAT_DTO_OP_RECV_RDMA_IMMED != KDAT_UDTO_RECV_RDMA_IMMED ||
		     KDAT_DTO_OP_CMP_AND_SWAP != KDAT_UDTO_CMP_AND_SWAP ||
		     KDAT_DTO_OP_FETCH_AND_ADD != KDAT_UDTO_FETCH_AND_ADD ||
		     KDAT_DTO_F_IMMED != KDAT_UDTO_F_IMMED ||
		     KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG !=
		     KDAT_MEM_PRIV_REMOTE_ATOMIC);
	return KDAT_EP_CALL(ep, kdat_ib_ep_post_rdma_write_immed(ep, n, iov,
				cookie, remote, immed_data, flags));
}
EXPORT_SYMBOL(kdat_ep_post_rdma_write_immed);

DAT_RETURN kdat_ep_post_cmp_and_swap(DAT_EP_HANDLE ep, DAT_UINT64 compare,
				     DAT_UINT64 swap,
				     const DAT_LMR_TRIPLET *local,
				     DAT_DTO_COOKIE cookie,
				     const DAT_RMR_TRIPLET *remote,
				     DAT_COMPLETION_FLAGS flags)
{
	return KDAT_EP_CALL(ep, kdat_ib_ep_post_atomic(ep, true, compare, swap,
				local, cookie, remote, flags));
}
EXPORT_SYMBOL(kdat_ep_post_cmp_and_swap);

DAT_RETURN kdat_ep_post_fetch_and_add(DAT_EP_HANDLE ep, DAT_UINT64 add,
				      const DAT_LMR_TRIPLET *local,
				      DAT_DTO_COOKIE cookie,
				      const DAT_RMR_TRIPLET *remote,
				      DAT_COMPLETION_FLAGS flags)
{
	return KDAT_EP_CALL(ep, kdat_ib_ep_post_atomic(ep, false, add, 0,
				local, cookie, remote, flags));
}
EXPORT_SYMBOL(kdat_ep_post_fetch_and_add);

DAT_RETURN dat_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT context)
{
	struct kdat_obj *obj = kdat_obj_get_any(h);

	if (!obj)
		return KDAT_ERR(DAT_INVALID_HANDLE, 0);
	obj->context = context;
	kdat_obj_put(obj);
	return DAT_SUCCESS;
}
EXPORT_SYMBOL(dat_set_consumer_context);

DAT_RETURN dat_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *context)
{
	struct kdat_obj *obj = kdat_obj_get_any(h);

	if (!obj)
		return KDAT_ERR(DAT_INVALID_HANDLE, 0);
	if (!context) {
		kdat_obj_put(obj);
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	}
	*context = obj->context;
	kdat_obj_put(obj);
	return DAT_SUCCESS;
}
EXPORT_SYMBOL(dat_get_consumer_context);

DAT_RETURN dat_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type)
{
	struct kdat_obj *obj = kdat_obj_get_any(h);

	if (!obj)
		return KDAT_ERR(DAT_INVALID_HANDLE, 0);
	if (!type) {
		kdat_obj_put(obj);
		return KDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	}
	*type = obj->type;
	kdat_obj_put(obj);
	return DAT_SUCCESS;
}
EXPORT_SYMBOL(dat_get_handle_type);

/* PZ */
DAT_RETURN dat_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	return KDAT_DISPATCH(ia, IA, pz_create_func, ia, pz);
}
EXPORT_SYMBOL(dat_pz_create);

DAT_RETURN dat_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask,
			DAT_PZ_PARAM *param)
{
	return KDAT_DISPATCH(pz, PZ, pz_query_func, pz, mask, param);
}
EXPORT_SYMBOL(dat_pz_query);

DAT_RETURN dat_pz_free(DAT_PZ_HANDLE pz)
{
	return KDAT_DISPATCH_FREE(pz, PZ, pz_free_func);
}
EXPORT_SYMBOL(dat_pz_free);

/* EVD */
DAT_RETURN dat_evd_kcreate(DAT_IA_HANDLE ia, DAT_COUNT qlen,
			   DAT_UPCALL_POLICY policy,
			   const DAT_UPCALL_OBJECT *upcall,
			   DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd)
{
	return KDAT_DISPATCH(ia, IA, evd_kcreate_func, ia, qlen, policy,
			     upcall, flags, evd);
}
EXPORT_SYMBOL(dat_evd_kcreate);

DAT_RETURN dat_evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask,
			 DAT_EVD_PARAM *param)
{
	return KDAT_DISPATCH(evd, EVD, evd_query_func, evd, mask, param);
}
EXPORT_SYMBOL(dat_evd_query);

DAT_RETURN dat_evd_modify_upcall(DAT_EVD_HANDLE evd, DAT_UPCALL_POLICY policy,
				 const DAT_UPCALL_OBJECT *upcall)
{
	return KDAT_DISPATCH(evd, EVD, evd_modify_upcall_func, evd, policy,
			     upcall);
}
EXPORT_SYMBOL(dat_evd_modify_upcall);

DAT_RETURN dat_evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT qlen)
{
	return KDAT_DISPATCH(evd, EVD, evd_resize_func, evd, qlen);
}
EXPORT_SYMBOL(dat_evd_resize);

DAT_RETURN dat_evd_post_se(DAT_EVD_HANDLE evd, const DAT_EVENT *ev)
{
	return KDAT_DISPATCH(evd, EVD, evd_post_se_func, evd, ev);
}
EXPORT_SYMBOL(dat_evd_post_se);

KDAT_DATA_PATH(dat_evd_dequeue, 512)
DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
	return KDAT_DISPATCH_ATOMIC(evd, EVD, evd_dequeue_func,
				    kdat_ib_evd_dequeue, evd, ev);
}
EXPORT_SYMBOL(dat_evd_dequeue);

DAT_RETURN dat_evd_free(DAT_EVD_HANDLE evd)
{
	return KDAT_DISPATCH_FREE(evd, EVD, evd_free_func);
}
EXPORT_SYMBOL(dat_evd_free);

/* LMR */
DAT_RETURN dat_lmr_kcreate(DAT_IA_HANDLE ia, DAT_MEM_TYPE type,
			   DAT_REGION_DESCRIPTION region, DAT_VLEN length,
			   DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
			   DAT_MEM_OPTIMIZE_FLAGS opt, DAT_LMR_HANDLE *lmr,
			   DAT_LMR_CONTEXT *lctx, DAT_RMR_CONTEXT *rctx,
			   DAT_VLEN *reg_size, DAT_VADDR *reg_addr)
{
	return KDAT_DISPATCH(ia, IA, lmr_kcreate_func, ia, type, region,
			     length, pz, priv, opt, lmr, lctx, rctx, reg_size,
			     reg_addr);
}
EXPORT_SYMBOL(dat_lmr_kcreate);

DAT_RETURN dat_lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask,
			 DAT_LMR_PARAM *param)
{
	return KDAT_DISPATCH(lmr, LMR, lmr_query_func, lmr, mask, param);
}
EXPORT_SYMBOL(dat_lmr_query);

DAT_RETURN dat_lmr_free(DAT_LMR_HANDLE lmr)
{
	return KDAT_DISPATCH_FREE(lmr, LMR, lmr_free_func);
}
EXPORT_SYMBOL(dat_lmr_free);

/* SRQ */
DAT_RETURN dat_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			  DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *srq)
{
	return KDAT_DISPATCH(ia, IA, srq_create_func, ia, pz, attr, srq);
}
EXPORT_SYMBOL(dat_srq_create);

DAT_RETURN dat_srq_free(DAT_SRQ_HANDLE srq)
{
	return KDAT_DISPATCH_FREE(srq, SRQ, srq_free_func);
}
EXPORT_SYMBOL(dat_srq_free);

KDAT_DATA_PATH(dat_srq_post_recv, 512)
DAT_RETURN dat_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n,
			     DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie)
{
	return KDAT_DISPATCH_ATOMIC(srq, SRQ, srq_post_recv_func,
				    kdat_ib_srq_post_recv, srq, n, iov, cookie);
}
EXPORT_SYMBOL(dat_srq_post_recv);

DAT_RETURN dat_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask,
			 DAT_SRQ_PARAM *param)
{
	return KDAT_DISPATCH(srq, SRQ, srq_query_func, srq, mask, param);
}
EXPORT_SYMBOL(dat_srq_query);

DAT_RETURN dat_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT max)
{
	return KDAT_DISPATCH(srq, SRQ, srq_resize_func, srq, max);
}
EXPORT_SYMBOL(dat_srq_resize);

DAT_RETURN dat_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT lw)
{
	return KDAT_DISPATCH(srq, SRQ, srq_set_lw_func, srq, lw);
}
EXPORT_SYMBOL(dat_srq_set_lw);

/* EP */
DAT_RETURN dat_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			 DAT_EVD_HANDLE recv_evd, DAT_EVD_HANDLE request_evd,
			 DAT_EVD_HANDLE connect_evd, const DAT_EP_ATTR *attr,
			 DAT_EP_HANDLE *ep)
{
	return KDAT_DISPATCH(ia, IA, ep_create_func, ia, pz, recv_evd,
			     request_evd, connect_evd, attr, ep);
}
EXPORT_SYMBOL(dat_ep_create);

DAT_RETURN dat_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
				  DAT_EVD_HANDLE recv_evd,
				  DAT_EVD_HANDLE request_evd,
				  DAT_EVD_HANDLE connect_evd,
				  DAT_SRQ_HANDLE srq, const DAT_EP_ATTR *attr,
				  DAT_EP_HANDLE *ep)
{
	return KDAT_DISPATCH(ia, IA, ep_create_with_srq_func, ia, pz,
			     recv_evd, request_evd, connect_evd, srq, attr,
			     ep);
}
EXPORT_SYMBOL(dat_ep_create_with_srq);

DAT_RETURN dat_ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
			DAT_EP_PARAM *param)
{
	return KDAT_DISPATCH(ep, EP, ep_query_func, ep, mask, param);
}
EXPORT_SYMBOL(dat_ep_query);

DAT_RETURN dat_ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
			 const DAT_EP_PARAM *param)
{
	return KDAT_DISPATCH(ep, EP, ep_modify_func, ep, mask, param);
}
EXPORT_SYMBOL(dat_ep_modify);

DAT_RETURN dat_ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr,
			  DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
			  DAT_COUNT pdata_size, const DAT_PVOID pdata,
			  DAT_QOS qos, DAT_CONNECT_FLAGS flags)
{
	return KDAT_DISPATCH(ep, EP, ep_connect_func, ep, addr, qual, timeout,
			     pdata_size, pdata, qos, flags);
}
EXPORT_SYMBOL(dat_ep_connect);

DAT_RETURN dat_ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags)
{
	return KDAT_DISPATCH(ep, EP, ep_disconnect_func, ep, flags);
}
EXPORT_SYMBOL(dat_ep_disconnect);

KDAT_DATA_PATH(dat_ep_post_send, 256)
DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n,
			    DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			    DAT_COMPLETION_FLAGS flags)
{
	return KDAT_DISPATCH(ep, EP, ep_post_send_func, ep, n, iov, cookie,
			     flags);
}
EXPORT_SYMBOL(dat_ep_post_send);

DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n,
			    DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			    DAT_COMPLETION_FLAGS flags)
{
	return KDAT_DISPATCH(ep, EP, ep_post_recv_func, ep, n, iov, cookie,
			     flags);
}
EXPORT_SYMBOL(dat_ep_post_recv);

DAT_RETURN dat_ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *state,
			     DAT_BOOLEAN *recv_idle, DAT_BOOLEAN *request_idle)
{
	return KDAT_DISPATCH(ep, EP, ep_get_status_func, ep, state,
			     recv_idle, request_idle);
}
EXPORT_SYMBOL(dat_ep_get_status);

DAT_RETURN dat_ep_free(DAT_EP_HANDLE ep)
{
	return KDAT_DISPATCH_FREE(ep, EP, ep_free_func);
}
EXPORT_SYMBOL(dat_ep_free);

DAT_RETURN dat_ep_reset(DAT_EP_HANDLE ep)
{
	return KDAT_DISPATCH(ep, EP, ep_reset_func, ep);
}
EXPORT_SYMBOL(dat_ep_reset);

DAT_RETURN dat_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs,
			     DAT_COUNT *span)
{
	return KDAT_DISPATCH(ep, EP, ep_recv_query_func, ep, nbufs, span);
}
EXPORT_SYMBOL(dat_ep_recv_query);

DAT_RETURN dat_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft,
				DAT_COUNT hard)
{
	return KDAT_DISPATCH(ep, EP, ep_set_watermark_func, ep, soft, hard);
}
EXPORT_SYMBOL(dat_ep_set_watermark);

/* PSP and CR */
DAT_RETURN dat_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			  DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
			  DAT_PSP_HANDLE *psp)
{
	return KDAT_DISPATCH(ia, IA, psp_create_func, ia, qual, evd, flags,
			     psp);
}
EXPORT_SYMBOL(dat_psp_create);

DAT_RETURN dat_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask,
			 DAT_PSP_PARAM *param)
{
	return KDAT_DISPATCH(psp, PSP, psp_query_func, psp, mask, param);
}
EXPORT_SYMBOL(dat_psp_query);

DAT_RETURN dat_psp_free(DAT_PSP_HANDLE psp)
{
	return KDAT_DISPATCH_FREE(psp, PSP, psp_free_func);
}
EXPORT_SYMBOL(dat_psp_free);

DAT_RETURN dat_cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask,
			DAT_CR_PARAM *param)
{
	return KDAT_DISPATCH(cr, CR, cr_query_func, cr, mask, param);
}
EXPORT_SYMBOL(dat_cr_query);

DAT_RETURN dat_cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep,
			 DAT_COUNT pdata_size, const DAT_PVOID pdata)
{
	return KDAT_DISPATCH(cr, CR, cr_accept_func, cr, ep, pdata_size,
			     pdata);
}
EXPORT_SYMBOL(dat_cr_accept);

DAT_RETURN dat_cr_reject(DAT_CR_HANDLE cr)
{
	return KDAT_DISPATCH_FREE(cr, CR, cr_reject_func);
}
EXPORT_SYMBOL(dat_cr_reject);

int kdat_registry_init(void)
{
	return 0;
}

void kdat_registry_exit(void)
{
	long n;

	kdat_obj_flush_deferred();
	n = kdat_live_objects();

	/* The guest tests grep for this line. */
	if (n)
		pr_err("kdat: leak: %ld live objects at unload\n", n);
	rcu_barrier();	/* kfree_rcu callbacks run before the module goes */
}

/* ---------------------------------------------------------------------- */
/* Calls this provider does not build: a valid handle gets                 */
/* DAT_NOT_IMPLEMENTED, a bad one DAT_INVALID_HANDLE as always.             */

#define KDAT_DISPATCH_OPT(h, kind, ...)					\
	KDAT_DISPATCH_OPT_(h, DAT_HANDLE_TYPE_##kind,			\
			   KDAT_INVALID_HANDLE_##kind, __VA_ARGS__)
#define KDAT_DISPATCH_OPT_(h, type, sub, fn, ...)			\
	({								\
		int __idx = kdat_call_begin();				\
		struct kdat_obj *__o = kdat_obj_get_use((h), (type));	\
		DAT_RETURN __r;						\
		if (!__o)						\
			__r = KDAT_ERR(DAT_INVALID_HANDLE, (sub));	\
		else if (!__o->provider->fn)				\
			__r = KDAT_ERR(DAT_NOT_IMPLEMENTED, 0);		\
		else							\
			__r = __o->provider->fn(__VA_ARGS__);		\
		if (__o)						\
			kdat_obj_put_use(__o);				\
		kdat_call_end(__idx);					\
		__r;							\
	})

DAT_RETURN dat_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL handoff)
{
	return KDAT_DISPATCH_OPT(cr, CR, cr_handoff_func, cr, handoff);
}
EXPORT_SYMBOL(dat_cr_handoff);

DAT_RETURN dat_ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup,
			      DAT_TIMEOUT timeout, DAT_COUNT pdata_size,
			      const DAT_PVOID pdata, DAT_QOS qos)
{
	return KDAT_DISPATCH_OPT(ep, EP, ep_dup_connect_func, ep, dup, timeout,
				 pdata_size, pdata, qos);
}
EXPORT_SYMBOL(dat_ep_dup_connect);

DAT_RETURN dat_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n,
				 DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				 const DAT_RMR_TRIPLET *remote,
				 DAT_COMPLETION_FLAGS flags)
{
	return KDAT_DISPATCH_OPT(ep, EP, ep_post_rdma_read_func, ep, n, iov,
				 cookie, remote, flags);
}
EXPORT_SYMBOL(dat_ep_post_rdma_read);

DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n,
				  DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				  const DAT_RMR_TRIPLET *remote,
				  DAT_COMPLETION_FLAGS flags)
{
	return KDAT_DISPATCH_OPT(ep, EP, ep_post_rdma_write_func, ep, n, iov,
				 cookie, remote, flags);
}
EXPORT_SYMBOL(dat_ep_post_rdma_write);

DAT_RETURN dat_ia_memtype_hint(DAT_IA_HANDLE ia, DAT_MEM_TYPE type,
			       DAT_VLEN length, DAT_MEM_OPTIMIZE_FLAGS opt,
			       DAT_VLEN *pref_len, DAT_VADDR *pref_align)
{
	return KDAT_DISPATCH_OPT(ia, IA, ia_memtype_hint_func, ia, type,
				 length, opt, pref_len, pref_align);
}
EXPORT_SYMBOL(dat_ia_memtype_hint);

DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE ia,
				  const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
{
	return KDAT_DISPATCH_OPT(ia, IA, lmr_sync_rdma_read_func, ia, segs, n);
}
EXPORT_SYMBOL(dat_lmr_sync_rdma_read);

DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE ia,
				   const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
{
	return KDAT_DISPATCH_OPT(ia, IA, lmr_sync_rdma_write_func, ia, segs, n);
}
EXPORT_SYMBOL(dat_lmr_sync_rdma_write);

DAT_RETURN dat_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual,
			      DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
			      DAT_PSP_HANDLE *psp)
{
	return KDAT_DISPATCH_OPT(ia, IA, psp_create_any_func, ia, qual, evd,
				 flags, psp);
}
EXPORT_SYMBOL(dat_psp_create_any);

DAT_RETURN dat_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr)
{
	return KDAT_DISPATCH_OPT(pz, PZ, rmr_create_func, pz, rmr);
}
EXPORT_SYMBOL(dat_rmr_create);

DAT_RETURN dat_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask,
			 DAT_RMR_PARAM *param)
{
	return KDAT_DISPATCH_OPT(rmr, RMR, rmr_query_func, rmr, mask, param);
}
EXPORT_SYMBOL(dat_rmr_query);

DAT_RETURN dat_rmr_bind(DAT_RMR_HANDLE rmr, const DAT_LMR_TRIPLET *triplet,
			DAT_MEM_PRIV_FLAGS priv, DAT_EP_HANDLE ep,
			DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
			DAT_RMR_CONTEXT *ctx)
{
	return KDAT_DISPATCH_OPT(rmr, RMR, rmr_bind_func, rmr, triplet, priv,
				 ep, cookie, flags, ctx);
}
EXPORT_SYMBOL(dat_rmr_bind);

DAT_RETURN dat_rmr_free(DAT_RMR_HANDLE rmr)
{
	return KDAT_DISPATCH_OPT(rmr, RMR, rmr_free_func, rmr);
}
EXPORT_SYMBOL(dat_rmr_free);

DAT_RETURN dat_rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			  DAT_EP_HANDLE ep, DAT_EVD_HANDLE evd,
			  DAT_RSP_HANDLE *rsp)
{
	return KDAT_DISPATCH_OPT(ia, IA, rsp_create_func, ia, qual, ep, evd,
				 rsp);
}
EXPORT_SYMBOL(dat_rsp_create);

DAT_RETURN dat_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask,
			 DAT_RSP_PARAM *param)
{
	return KDAT_DISPATCH_OPT(rsp, RSP, rsp_query_func, rsp, mask, param);
}
EXPORT_SYMBOL(dat_rsp_query);

DAT_RETURN dat_rsp_free(DAT_RSP_HANDLE rsp)
{
	return KDAT_DISPATCH_FREE(rsp, RSP, rsp_free_func);
}
EXPORT_SYMBOL(dat_rsp_free);
