// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ib provider's function table.  Each ib device gets a copy with its
 * device_name set (ia.c); every object handle points at its device's copy.
 * Calls the provider does not build return DAT_NOT_IMPLEMENTED through the
 * registry (their slots stay NULL and the registry checks).
 */
#include "kdat_core.h"

const DAT_PROVIDER kdat_ib_provider_template = {
	.ia_open_func = kdat_ib_ia_open,
	.ia_query_func = kdat_ib_ia_query,
	.ia_close_func = kdat_ib_ia_close,
	.cr_query_func = kdat_ib_cr_query,
	.cr_accept_func = kdat_ib_cr_accept,
	.cr_reject_func = kdat_ib_cr_reject,
	.evd_kcreate_func = kdat_ib_evd_kcreate,
	.evd_query_func = kdat_ib_evd_query,
	.evd_modify_upcall_func = kdat_ib_evd_modify_upcall,
	.evd_resize_func = kdat_ib_evd_resize,
	.evd_post_se_func = kdat_ib_evd_post_se,
	.evd_dequeue_func = kdat_ib_evd_dequeue,
	.evd_free_func = kdat_ib_evd_free,
	.ep_create_func = kdat_ib_ep_create,
	.ep_query_func = kdat_ib_ep_query,
	.ep_modify_func = kdat_ib_ep_modify,
	.ep_connect_func = kdat_ib_ep_connect,
	.ep_disconnect_func = kdat_ib_ep_disconnect,
	.ep_post_send_func = kdat_ib_ep_post_send,
	.ep_post_recv_func = kdat_ib_ep_post_recv,
	.ep_post_rdma_read_func = kdat_ib_ep_post_rdma_read,
	.ep_post_rdma_write_func = kdat_ib_ep_post_rdma_write,
	.ep_get_status_func = kdat_ib_ep_get_status,
	.ep_free_func = kdat_ib_ep_free,
	.ep_reset_func = kdat_ib_ep_reset,
	.lmr_kcreate_func = kdat_ib_lmr_kcreate,
	.lmr_query_func = kdat_ib_lmr_query,
	.lmr_free_func = kdat_ib_lmr_free,
	.psp_create_func = kdat_ib_psp_create,
	.psp_query_func = kdat_ib_psp_query,
	.psp_free_func = kdat_ib_psp_free,
	.pz_create_func = kdat_ib_pz_create,
	.pz_query_func = kdat_ib_pz_query,
	.pz_free_func = kdat_ib_pz_free,
	.ep_create_with_srq_func = kdat_ib_ep_create_with_srq,
	.ep_recv_query_func = kdat_ib_ep_recv_query,
	.ep_set_watermark_func = kdat_ib_ep_set_watermark,
	.srq_create_func = kdat_ib_srq_create,
	.srq_free_func = kdat_ib_srq_free,
	.srq_post_recv_func = kdat_ib_srq_post_recv,
	.srq_query_func = kdat_ib_srq_query,
	.srq_resize_func = kdat_ib_srq_resize,
	.srq_set_lw_func = kdat_ib_srq_set_lw,
	.rsp_create_func = kdat_ib_rsp_create,
	.rsp_query_func = kdat_ib_rsp_query,
	.rsp_free_func = kdat_ib_rsp_free,
};
