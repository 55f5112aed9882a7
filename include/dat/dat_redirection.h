/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/dat_redirection.h - how the registry reaches a provider: the
 * function-pointer type of each call both flavours share.
 *
 * A provider fills a struct dat_provider (kdat_redirection.h or
 * udat_redirection.h) with one entry point per call and registers it
 * (dat_registry.h).  Every object it hands out as a handle begins with a
 * pointer to that table, which is how the registry's dat_* functions find
 * the provider of any handle once they have checked it.
 */
#ifndef DAT_REDIRECTION_H_
#if !defined(DAT_UDAT_H_) && !defined(DAT_KDAT_H_)

/* Included first: the flavour header includes us at the right point. */
#ifdef __KERNEL__
#include <dat/kdat.h>
#else
#include <dat/udat.h>
#endif

#else /* the flavour's types are in place */
#define DAT_REDIRECTION_H_

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The provider table of the object a handle names.  Only valid for a
 * handle already known to be live; the registry checks that first.
 */
#ifndef DAT_HANDLE_TO_PROVIDER
#define DAT_HANDLE_TO_PROVIDER(handle)	(*(DAT_PROVIDER **)(handle))
#endif

/* Interface Adapter */

/*
 * The provider's open.  The registry has already matched the name,
 * version and thread safety that dat_ia_openv was given.
 */
typedef DAT_RETURN (*DAT_IA_OPEN_FUNC)(const DAT_NAME_PTR ia_name,
				       DAT_COUNT async_evd_min_qlen,
				       DAT_EVD_HANDLE *async_evd_handle,
				       DAT_IA_HANDLE *ia_handle);

typedef DAT_RETURN (*DAT_IA_OPENV_FUNC)(const DAT_NAME_PTR ia_name,
					DAT_COUNT async_evd_min_qlen,
					DAT_EVD_HANDLE *async_evd_handle,
					DAT_IA_HANDLE *ia_handle,
					DAT_UINT32 dat_major_version,
					DAT_UINT32 dat_minor_version,
					DAT_BOOLEAN thread_safety);

typedef DAT_RETURN (*DAT_IA_CLOSE_FUNC)(DAT_IA_HANDLE ia_handle,
					DAT_CLOSE_FLAGS close_flags);

typedef DAT_RETURN (*DAT_IA_QUERY_FUNC)(DAT_IA_HANDLE ia_handle,
					DAT_EVD_HANDLE *async_evd_handle,
					DAT_IA_ATTR_MASK ia_attr_mask,
					DAT_IA_ATTR *ia_attr,
					DAT_PROVIDER_ATTR_MASK provider_attr_mask,
					DAT_PROVIDER_ATTR *provider_attr);

/* Any handle */

typedef DAT_RETURN (*DAT_SET_CONSUMER_CONTEXT_FUNC)(DAT_HANDLE dat_handle,
						    DAT_CONTEXT context);

typedef DAT_RETURN (*DAT_GET_CONSUMER_CONTEXT_FUNC)(DAT_HANDLE dat_handle,
						    DAT_CONTEXT *context);

typedef DAT_RETURN (*DAT_GET_HANDLE_TYPE_FUNC)(DAT_HANDLE dat_handle,
					       DAT_HANDLE_TYPE *handle_type);

/* Connection Requests */

typedef DAT_RETURN (*DAT_CR_QUERY_FUNC)(DAT_CR_HANDLE cr_handle,
					DAT_CR_PARAM_MASK cr_param_mask,
					DAT_CR_PARAM *cr_param);

typedef DAT_RETURN (*DAT_CR_ACCEPT_FUNC)(DAT_CR_HANDLE cr_handle,
					 DAT_EP_HANDLE ep_handle,
					 DAT_COUNT private_data_size,
					 const DAT_PVOID private_data);

typedef DAT_RETURN (*DAT_CR_REJECT_FUNC)(DAT_CR_HANDLE cr_handle);

typedef DAT_RETURN (*DAT_CR_HANDOFF_FUNC)(DAT_CR_HANDLE cr_handle,
					  DAT_CONN_QUAL handoff);

/* Event Dispatchers */

typedef DAT_RETURN (*DAT_EVD_RESIZE_FUNC)(DAT_EVD_HANDLE evd_handle,
					  DAT_COUNT evd_min_qlen);

typedef DAT_RETURN (*DAT_EVD_POST_SE_FUNC)(DAT_EVD_HANDLE evd_handle,
					   const DAT_EVENT *event);

typedef DAT_RETURN (*DAT_EVD_DEQUEUE_FUNC)(DAT_EVD_HANDLE evd_handle,
					   DAT_EVENT *event);

typedef DAT_RETURN (*DAT_EVD_FREE_FUNC)(DAT_EVD_HANDLE evd_handle);

typedef DAT_RETURN (*DAT_EVD_QUERY_FUNC)(DAT_EVD_HANDLE evd_handle,
					 DAT_EVD_PARAM_MASK evd_param_mask,
					 DAT_EVD_PARAM *evd_param);

/* Endpoints */

typedef DAT_RETURN (*DAT_EP_CREATE_FUNC)(DAT_IA_HANDLE ia_handle,
					 DAT_PZ_HANDLE pz_handle,
					 DAT_EVD_HANDLE recv_evd_handle,
					 DAT_EVD_HANDLE request_evd_handle,
					 DAT_EVD_HANDLE connect_evd_handle,
					 const DAT_EP_ATTR *ep_attributes,
					 DAT_EP_HANDLE *ep_handle);

typedef DAT_RETURN (*DAT_EP_CREATE_WITH_SRQ_FUNC)(
					DAT_IA_HANDLE ia_handle,
					DAT_PZ_HANDLE pz_handle,
					DAT_EVD_HANDLE recv_evd_handle,
					DAT_EVD_HANDLE request_evd_handle,
					DAT_EVD_HANDLE connect_evd_handle,
					DAT_SRQ_HANDLE srq_handle,
					const DAT_EP_ATTR *ep_attributes,
					DAT_EP_HANDLE *ep_handle);

typedef DAT_RETURN (*DAT_EP_QUERY_FUNC)(DAT_EP_HANDLE ep_handle,
					DAT_EP_PARAM_MASK ep_param_mask,
					DAT_EP_PARAM *ep_param);

typedef DAT_RETURN (*DAT_EP_MODIFY_FUNC)(DAT_EP_HANDLE ep_handle,
					 DAT_EP_PARAM_MASK ep_param_mask,
					 const DAT_EP_PARAM *ep_param);

typedef DAT_RETURN (*DAT_EP_CONNECT_FUNC)(DAT_EP_HANDLE ep_handle,
					  DAT_IA_ADDRESS_PTR remote_ia_address,
					  DAT_CONN_QUAL remote_conn_qual,
					  DAT_TIMEOUT timeout,
					  DAT_COUNT private_data_size,
					  const DAT_PVOID private_data,
					  DAT_QOS quality_of_service,
					  DAT_CONNECT_FLAGS connect_flags);

typedef DAT_RETURN (*DAT_EP_DUP_CONNECT_FUNC)(DAT_EP_HANDLE ep_handle,
					      DAT_EP_HANDLE ep_dup_handle,
					      DAT_TIMEOUT timeout,
					      DAT_COUNT private_data_size,
					      const DAT_PVOID private_data,
					      DAT_QOS quality_of_service);

typedef DAT_RETURN (*DAT_EP_DISCONNECT_FUNC)(DAT_EP_HANDLE ep_handle,
					     DAT_CLOSE_FLAGS close_flags);

typedef DAT_RETURN (*DAT_EP_POST_SEND_FUNC)(DAT_EP_HANDLE ep_handle,
					    DAT_COUNT num_segments,
					    DAT_LMR_TRIPLET *local_iov,
					    DAT_DTO_COOKIE user_cookie,
					    DAT_COMPLETION_FLAGS completion_flags);

typedef DAT_RETURN (*DAT_EP_POST_RECV_FUNC)(DAT_EP_HANDLE ep_handle,
					    DAT_COUNT num_segments,
					    DAT_LMR_TRIPLET *local_iov,
					    DAT_DTO_COOKIE user_cookie,
					    DAT_COMPLETION_FLAGS completion_flags);

typedef DAT_RETURN (*DAT_EP_POST_RDMA_READ_FUNC)(
					DAT_EP_HANDLE ep_handle,
					DAT_COUNT num_segments,
					DAT_LMR_TRIPLET *local_iov,
					DAT_DTO_COOKIE user_cookie,
					const DAT_RMR_TRIPLET *remote_iov,
					DAT_COMPLETION_FLAGS completion_flags);

typedef DAT_RETURN (*DAT_EP_POST_RDMA_WRITE_FUNC)(
					DAT_EP_HANDLE ep_handle,
					DAT_COUNT num_segments,
					DAT_LMR_TRIPLET *local_iov,
					DAT_DTO_COOKIE user_cookie,
					const DAT_RMR_TRIPLET *remote_iov,
					DAT_COMPLETION_FLAGS completion_flags);

typedef DAT_RETURN (*DAT_EP_GET_STATUS_FUNC)(DAT_EP_HANDLE ep_handle,
					     DAT_EP_STATE *ep_state,
					     DAT_BOOLEAN *recv_idle,
					     DAT_BOOLEAN *request_idle);

typedef DAT_RETURN (*DAT_EP_FREE_FUNC)(DAT_EP_HANDLE ep_handle);

typedef DAT_RETURN (*DAT_EP_RESET_FUNC)(DAT_EP_HANDLE ep_handle);

typedef DAT_RETURN (*DAT_EP_RECV_QUERY_FUNC)(DAT_EP_HANDLE ep_handle,
					     DAT_COUNT *nbufs_allocated,
					     DAT_COUNT *bufs_alloc_span);

typedef DAT_RETURN (*DAT_EP_SET_WATERMARK_FUNC)(DAT_EP_HANDLE ep_handle,
						DAT_COUNT soft_high_watermark,
						DAT_COUNT hard_high_watermark);

/* Local Memory Regions */

typedef DAT_RETURN (*DAT_LMR_FREE_FUNC)(DAT_LMR_HANDLE lmr_handle);

typedef DAT_RETURN (*DAT_LMR_QUERY_FUNC)(DAT_LMR_HANDLE lmr_handle,
					 DAT_LMR_PARAM_MASK lmr_param_mask,
					 DAT_LMR_PARAM *lmr_param);

typedef DAT_RETURN (*DAT_LMR_SYNC_RDMA_READ_FUNC)(
					DAT_IA_HANDLE ia_handle,
					const DAT_LMR_TRIPLET *local_segments,
					DAT_VLEN num_segments);

typedef DAT_RETURN (*DAT_LMR_SYNC_RDMA_WRITE_FUNC)(
					DAT_IA_HANDLE ia_handle,
					const DAT_LMR_TRIPLET *local_segments,
					DAT_VLEN num_segments);

/* Remote Memory Regions */

typedef DAT_RETURN (*DAT_RMR_CREATE_FUNC)(DAT_PZ_HANDLE pz_handle,
					  DAT_RMR_HANDLE *rmr_handle);

typedef DAT_RETURN (*DAT_RMR_QUERY_FUNC)(DAT_RMR_HANDLE rmr_handle,
					 DAT_RMR_PARAM_MASK rmr_param_mask,
					 DAT_RMR_PARAM *rmr_param);

typedef DAT_RETURN (*DAT_RMR_BIND_FUNC)(DAT_RMR_HANDLE rmr_handle,
					const DAT_LMR_TRIPLET *lmr_triplet,
					DAT_MEM_PRIV_FLAGS mem_priv,
					DAT_EP_HANDLE ep_handle,
					DAT_RMR_COOKIE user_cookie,
					DAT_COMPLETION_FLAGS completion_flags,
					DAT_RMR_CONTEXT *rmr_context);

typedef DAT_RETURN (*DAT_RMR_FREE_FUNC)(DAT_RMR_HANDLE rmr_handle);

/* Public Service Points */

typedef DAT_RETURN (*DAT_PSP_CREATE_FUNC)(DAT_IA_HANDLE ia_handle,
					  DAT_CONN_QUAL conn_qual,
					  DAT_EVD_HANDLE cr_evd_handle,
					  DAT_PSP_FLAGS psp_flags,
					  DAT_PSP_HANDLE *psp_handle);

typedef DAT_RETURN (*DAT_PSP_CREATE_ANY_FUNC)(DAT_IA_HANDLE ia_handle,
					      DAT_CONN_QUAL *conn_qual,
					      DAT_EVD_HANDLE cr_evd_handle,
					      DAT_PSP_FLAGS psp_flags,
					      DAT_PSP_HANDLE *psp_handle);

typedef DAT_RETURN (*DAT_PSP_QUERY_FUNC)(DAT_PSP_HANDLE psp_handle,
					 DAT_PSP_PARAM_MASK psp_param_mask,
					 DAT_PSP_PARAM *psp_param);

typedef DAT_RETURN (*DAT_PSP_FREE_FUNC)(DAT_PSP_HANDLE psp_handle);

/* Reserved Service Points */

typedef DAT_RETURN (*DAT_RSP_CREATE_FUNC)(DAT_IA_HANDLE ia_handle,
					  DAT_CONN_QUAL conn_qual,
					  DAT_EP_HANDLE ep_handle,
					  DAT_EVD_HANDLE cr_evd_handle,
					  DAT_RSP_HANDLE *rsp_handle);

typedef DAT_RETURN (*DAT_RSP_QUERY_FUNC)(DAT_RSP_HANDLE rsp_handle,
					 DAT_RSP_PARAM_MASK rsp_param_mask,
					 DAT_RSP_PARAM *rsp_param);

typedef DAT_RETURN (*DAT_RSP_FREE_FUNC)(DAT_RSP_HANDLE rsp_handle);

/* Protection Zones */

typedef DAT_RETURN (*DAT_PZ_CREATE_FUNC)(DAT_IA_HANDLE ia_handle,
					 DAT_PZ_HANDLE *pz_handle);

typedef DAT_RETURN (*DAT_PZ_QUERY_FUNC)(DAT_PZ_HANDLE pz_handle,
					DAT_PZ_PARAM_MASK pz_param_mask,
					DAT_PZ_PARAM *pz_param);

typedef DAT_RETURN (*DAT_PZ_FREE_FUNC)(DAT_PZ_HANDLE pz_handle);

/* Shared Receive Queues */

typedef DAT_RETURN (*DAT_SRQ_CREATE_FUNC)(DAT_IA_HANDLE ia_handle,
					  DAT_PZ_HANDLE pz_handle,
					  DAT_SRQ_ATTR *srq_attr,
					  DAT_SRQ_HANDLE *srq_handle);

typedef DAT_RETURN (*DAT_SRQ_FREE_FUNC)(DAT_SRQ_HANDLE srq_handle);

typedef DAT_RETURN (*DAT_SRQ_POST_RECV_FUNC)(DAT_SRQ_HANDLE srq_handle,
					     DAT_COUNT num_segments,
					     DAT_LMR_TRIPLET *local_iov,
					     DAT_DTO_COOKIE user_cookie);

typedef DAT_RETURN (*DAT_SRQ_QUERY_FUNC)(DAT_SRQ_HANDLE srq_handle,
					 DAT_SRQ_PARAM_MASK srq_param_mask,
					 DAT_SRQ_PARAM *srq_param);

typedef DAT_RETURN (*DAT_SRQ_RESIZE_FUNC)(DAT_SRQ_HANDLE srq_handle,
					  DAT_COUNT srq_max_recv_dto);

typedef DAT_RETURN (*DAT_SRQ_SET_LW_FUNC)(DAT_SRQ_HANDLE srq_handle,
					  DAT_COUNT low_watermark);

#ifdef __cplusplus
}
#endif

#endif /* the flavour's types are in place */
#endif /* DAT_REDIRECTION_H_ */
