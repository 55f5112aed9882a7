/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/udat_redirection.h - the uDAPL provider table.
 *
 * A libdat provider fills one struct dat_provider per IA name it serves
 * and registers it with dat_registry_add_provider(), normally from its
 * dat_provider_init() hook.  The order of the entries is that of the
 * DAT 1.2 uDAPL table; designated initializers are the safe way to fill
 * it.  An entry the provider does not support should point to a function
 * returning DAT_NOT_IMPLEMENTED rather than be left NULL.
 */
#ifndef DAT_UDAT_REDIRECTION_H_
#ifndef DAT_UDAT_H_

/* Included first: udat.h includes us at the right point. */
#include <dat/udat.h>

#else /* the uDAPL types are in place */
#define DAT_UDAT_REDIRECTION_H_

#include <dat/dat_redirection.h>

#ifdef __cplusplus
extern "C" {
#endif

/* uDAPL-only calls */

typedef DAT_RETURN (*DAT_LMR_CREATE_FUNC)(
				DAT_IA_HANDLE ia_handle,
				DAT_MEM_TYPE mem_type,
				DAT_REGION_DESCRIPTION region_description,
				DAT_VLEN length,
				DAT_PZ_HANDLE pz_handle,
				DAT_MEM_PRIV_FLAGS privileges,
				DAT_LMR_HANDLE *lmr_handle,
				DAT_LMR_CONTEXT *lmr_context,
				DAT_RMR_CONTEXT *rmr_context,
				DAT_VLEN *registered_length,
				DAT_VADDR *registered_address);

typedef DAT_RETURN (*DAT_EVD_CREATE_FUNC)(DAT_IA_HANDLE ia_handle,
					  DAT_COUNT evd_min_qlen,
					  DAT_CNO_HANDLE cno_handle,
					  DAT_EVD_FLAGS evd_flags,
					  DAT_EVD_HANDLE *evd_handle);

typedef DAT_RETURN (*DAT_EVD_MODIFY_CNO_FUNC)(DAT_EVD_HANDLE evd_handle,
					      DAT_CNO_HANDLE cno_handle);

typedef DAT_RETURN (*DAT_EVD_ENABLE_FUNC)(DAT_EVD_HANDLE evd_handle);

typedef DAT_RETURN (*DAT_EVD_DISABLE_FUNC)(DAT_EVD_HANDLE evd_handle);

typedef DAT_RETURN (*DAT_EVD_WAIT_FUNC)(DAT_EVD_HANDLE evd_handle,
					DAT_TIMEOUT timeout,
					DAT_COUNT threshold,
					DAT_EVENT *event,
					DAT_COUNT *nmore);

typedef DAT_RETURN (*DAT_EVD_SET_UNWAITABLE_FUNC)(DAT_EVD_HANDLE evd_handle);

typedef DAT_RETURN (*DAT_EVD_CLEAR_UNWAITABLE_FUNC)(DAT_EVD_HANDLE evd_handle);

typedef DAT_RETURN (*DAT_CNO_CREATE_FUNC)(DAT_IA_HANDLE ia_handle,
					  DAT_OS_WAIT_PROXY_AGENT agent,
					  DAT_CNO_HANDLE *cno_handle);

typedef DAT_RETURN (*DAT_CNO_MODIFY_AGENT_FUNC)(DAT_CNO_HANDLE cno_handle,
						DAT_OS_WAIT_PROXY_AGENT agent);

typedef DAT_RETURN (*DAT_CNO_QUERY_FUNC)(DAT_CNO_HANDLE cno_handle,
					 DAT_CNO_PARAM_MASK cno_param_mask,
					 DAT_CNO_PARAM *cno_param);

typedef DAT_RETURN (*DAT_CNO_FREE_FUNC)(DAT_CNO_HANDLE cno_handle);

typedef DAT_RETURN (*DAT_CNO_WAIT_FUNC)(DAT_CNO_HANDLE cno_handle,
					DAT_TIMEOUT timeout,
					DAT_EVD_HANDLE *evd_handle);

struct dat_provider {
	const char			*device_name;
	DAT_PVOID			extension;

	DAT_IA_OPEN_FUNC		ia_open_func;
	DAT_IA_QUERY_FUNC		ia_query_func;
	DAT_IA_CLOSE_FUNC		ia_close_func;

	DAT_SET_CONSUMER_CONTEXT_FUNC	set_consumer_context_func;
	DAT_GET_CONSUMER_CONTEXT_FUNC	get_consumer_context_func;
	DAT_GET_HANDLE_TYPE_FUNC	get_handle_type_func;

	DAT_CNO_CREATE_FUNC		cno_create_func;	/* uDAPL */
	DAT_CNO_MODIFY_AGENT_FUNC	cno_modify_agent_func;	/* uDAPL */
	DAT_CNO_QUERY_FUNC		cno_query_func;		/* uDAPL */
	DAT_CNO_FREE_FUNC		cno_free_func;		/* uDAPL */
	DAT_CNO_WAIT_FUNC		cno_wait_func;		/* uDAPL */

	DAT_CR_QUERY_FUNC		cr_query_func;
	DAT_CR_ACCEPT_FUNC		cr_accept_func;
	DAT_CR_REJECT_FUNC		cr_reject_func;
	DAT_CR_HANDOFF_FUNC		cr_handoff_func;

	DAT_EVD_CREATE_FUNC		evd_create_func;	/* uDAPL */
	DAT_EVD_QUERY_FUNC		evd_query_func;
	DAT_EVD_MODIFY_CNO_FUNC		evd_modify_cno_func;	/* uDAPL */
	DAT_EVD_ENABLE_FUNC		evd_enable_func;	/* uDAPL */
	DAT_EVD_DISABLE_FUNC		evd_disable_func;	/* uDAPL */
	DAT_EVD_WAIT_FUNC		evd_wait_func;		/* uDAPL */
	DAT_EVD_RESIZE_FUNC		evd_resize_func;
	DAT_EVD_POST_SE_FUNC		evd_post_se_func;
	DAT_EVD_DEQUEUE_FUNC		evd_dequeue_func;
	DAT_EVD_FREE_FUNC		evd_free_func;

	DAT_EP_CREATE_FUNC		ep_create_func;
	DAT_EP_QUERY_FUNC		ep_query_func;
	DAT_EP_MODIFY_FUNC		ep_modify_func;
	DAT_EP_CONNECT_FUNC		ep_connect_func;
	DAT_EP_DUP_CONNECT_FUNC		ep_dup_connect_func;
	DAT_EP_DISCONNECT_FUNC		ep_disconnect_func;
	DAT_EP_POST_SEND_FUNC		ep_post_send_func;
	DAT_EP_POST_RECV_FUNC		ep_post_recv_func;
	DAT_EP_POST_RDMA_READ_FUNC	ep_post_rdma_read_func;
	DAT_EP_POST_RDMA_WRITE_FUNC	ep_post_rdma_write_func;
	DAT_EP_GET_STATUS_FUNC		ep_get_status_func;
	DAT_EP_FREE_FUNC		ep_free_func;

	DAT_LMR_CREATE_FUNC		lmr_create_func;	/* uDAPL */
	DAT_LMR_QUERY_FUNC		lmr_query_func;
	DAT_LMR_FREE_FUNC		lmr_free_func;

	DAT_RMR_CREATE_FUNC		rmr_create_func;
	DAT_RMR_QUERY_FUNC		rmr_query_func;
	DAT_RMR_BIND_FUNC		rmr_bind_func;
	DAT_RMR_FREE_FUNC		rmr_free_func;

	DAT_PSP_CREATE_FUNC		psp_create_func;
	DAT_PSP_QUERY_FUNC		psp_query_func;
	DAT_PSP_FREE_FUNC		psp_free_func;

	DAT_RSP_CREATE_FUNC		rsp_create_func;
	DAT_RSP_QUERY_FUNC		rsp_query_func;
	DAT_RSP_FREE_FUNC		rsp_free_func;

	DAT_PZ_CREATE_FUNC		pz_create_func;
	DAT_PZ_QUERY_FUNC		pz_query_func;
	DAT_PZ_FREE_FUNC		pz_free_func;

	/* added in DAT 1.1 */
	DAT_PSP_CREATE_ANY_FUNC		psp_create_any_func;
	DAT_EP_RESET_FUNC		ep_reset_func;
	DAT_EVD_SET_UNWAITABLE_FUNC	evd_set_unwaitable_func;	/* uDAPL */
	DAT_EVD_CLEAR_UNWAITABLE_FUNC	evd_clear_unwaitable_func;	/* uDAPL */

	/* added in DAT 1.2 */
	DAT_LMR_SYNC_RDMA_READ_FUNC	lmr_sync_rdma_read_func;
	DAT_LMR_SYNC_RDMA_WRITE_FUNC	lmr_sync_rdma_write_func;

	DAT_EP_CREATE_WITH_SRQ_FUNC	ep_create_with_srq_func;
	DAT_EP_RECV_QUERY_FUNC		ep_recv_query_func;
	DAT_EP_SET_WATERMARK_FUNC	ep_set_watermark_func;
	DAT_SRQ_CREATE_FUNC		srq_create_func;
	DAT_SRQ_FREE_FUNC		srq_free_func;
	DAT_SRQ_POST_RECV_FUNC		srq_post_recv_func;
	DAT_SRQ_QUERY_FUNC		srq_query_func;
	DAT_SRQ_RESIZE_FUNC		srq_resize_func;
	DAT_SRQ_SET_LW_FUNC		srq_set_lw_func;
};

#ifdef __cplusplus
}
#endif

#endif /* the uDAPL types are in place */
#endif /* DAT_UDAT_REDIRECTION_H_ */
