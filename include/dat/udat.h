/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/udat.h - the uDAPL (user) flavour of the DAT 1.2 API.
 *
 * Applications include this header and link with -ldat.  It provides
 * everything in dat/dat.h plus what only user space has: Consumer
 * Notification Objects (CNOs), blocking waits on EVDs, shared-memory
 * LMRs, and the provider table of libdat's providers (dat_registry.h).
 */
#ifndef DAT_UDAT_H_
#define DAT_UDAT_H_

#ifdef __KERNEL__
#error "<dat/udat.h> is the user-space flavour; kernel code includes <dat/kdat.h>"
#endif

#include <dat/udat_config.h>
#include <dat/dat_platform_specific.h>
#include <dat/dat_error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Flavour types that dat/dat.h refers to                               */

typedef enum dat_mem_type {
	/* both flavours */
	DAT_MEM_TYPE_VIRTUAL		= 0x00,
	DAT_MEM_TYPE_LMR		= 0x01,
	/* uDAPL only */
	DAT_MEM_TYPE_SHARED_VIRTUAL	= 0x02
} DAT_MEM_TYPE;

typedef enum dat_handle_type {
	DAT_HANDLE_TYPE_CR,
	DAT_HANDLE_TYPE_EP,
	DAT_HANDLE_TYPE_EVD,
	DAT_HANDLE_TYPE_IA,
	DAT_HANDLE_TYPE_LMR,
	DAT_HANDLE_TYPE_PSP,
	DAT_HANDLE_TYPE_PZ,
	DAT_HANDLE_TYPE_RMR,
	DAT_HANDLE_TYPE_RSP,
	DAT_HANDLE_TYPE_CNO,
	DAT_HANDLE_TYPE_SRQ
} DAT_HANDLE_TYPE;

/*
 * An EVD's state is three independent parts, each one of a set of
 * mutually exclusive values: enabled/disabled, waitable/unwaitable,
 * and the notification configuration.
 */
typedef enum dat_evd_state {
	DAT_EVD_STATE_ENABLED		= 0x01,
	DAT_EVD_STATE_DISABLED		= 0x02,
	DAT_EVD_STATE_WAITABLE		= 0x04,
	DAT_EVD_STATE_UNWAITABLE	= 0x08,
	DAT_EVD_STATE_CONFIG_NOTIFY	= 0x10,
	DAT_EVD_STATE_CONFIG_SOLICITED	= 0x20,
	DAT_EVD_STATE_CONFIG_THRESHOLD	= 0x30
} DAT_EVD_STATE;

typedef enum dat_evd_param_mask {
	DAT_EVD_FIELD_IA_HANDLE		= 0x01,
	DAT_EVD_FIELD_EVD_QLEN		= 0x02,
	DAT_EVD_FIELD_EVD_STATE		= 0x04,
	DAT_EVD_FIELD_CNO		= 0x08,
	DAT_EVD_FIELD_EVD_FLAGS		= 0x10,

	DAT_EVD_FIELD_ALL		= 0x1F
} DAT_EVD_PARAM_MASK;

#ifdef __cplusplus
}
#endif

#include <dat/dat.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Event Dispatchers and CNOs                                           */

struct dat_evd_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_COUNT		evd_qlen;
	DAT_EVD_STATE		evd_state;
	DAT_CNO_HANDLE		cno_handle;
	DAT_EVD_FLAGS		evd_flags;
};

/*
 * dat_ia_open: pass DAT_EVD_ASYNC_EXISTS as *async_evd_handle to share
 * the async EVD of an earlier open of the same IA instead of creating
 * one.  dat_ia_query then reports DAT_EVD_OUT_OF_SCOPE for this open.
 */
#define DAT_EVD_ASYNC_EXISTS	((DAT_EVD_HANDLE)0x1)
#define DAT_EVD_OUT_OF_SCOPE	((DAT_EVD_HANDLE)0x2)

/* Called by the OS wait proxy agent of a CNO when one of its EVDs fires. */
typedef void (*DAT_AGENT_FUNC)(DAT_PVOID instance_data,
			       DAT_EVD_HANDLE evd_handle);

typedef struct dat_os_wait_proxy_agent {
	DAT_PVOID		instance_data;
	DAT_AGENT_FUNC		proxy_agent_func;
} DAT_OS_WAIT_PROXY_AGENT;

#ifdef __cplusplus
#define DAT_OS_WAIT_PROXY_AGENT_NULL	(DAT_OS_WAIT_PROXY_AGENT{ NULL, NULL })
#else
#define DAT_OS_WAIT_PROXY_AGENT_NULL \
	((DAT_OS_WAIT_PROXY_AGENT){ .instance_data = NULL, \
				    .proxy_agent_func = NULL })
#endif

typedef struct dat_cno_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_OS_WAIT_PROXY_AGENT	agent;
} DAT_CNO_PARAM;

typedef enum dat_cno_param_mask {
	DAT_CNO_FIELD_IA_HANDLE		= 0x1,
	DAT_CNO_FIELD_AGENT		= 0x2,

	DAT_CNO_FIELD_ALL		= 0x3
} DAT_CNO_PARAM_MASK;

/* ------------------------------------------------------------------ */
/* Local Memory Regions                                                 */

/* Names memory shared between processes (DAT_MEM_TYPE_SHARED_VIRTUAL). */
#define DAT_LMR_COOKIE_SIZE	40
typedef char (*DAT_LMR_COOKIE)[DAT_LMR_COOKIE_SIZE];

typedef struct dat_shared_memory {
	DAT_PVOID		virtual_address;
	DAT_LMR_COOKIE		shared_memory_id;
} DAT_SHARED_MEMORY;

/* The member used follows from the DAT_MEM_TYPE passed with it. */
typedef union dat_region_description {
	DAT_PVOID		for_va;			/* VIRTUAL */
	DAT_LMR_HANDLE		for_lmr_handle;		/* LMR */
	DAT_SHARED_MEMORY	for_shared_memory;	/* SHARED_VIRTUAL */
} DAT_REGION_DESCRIPTION;

struct dat_lmr_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_MEM_TYPE		mem_type;
	DAT_REGION_DESCRIPTION	region_desc;
	DAT_VLEN		length;
	DAT_PZ_HANDLE		pz_handle;
	DAT_MEM_PRIV_FLAGS	mem_priv;
	DAT_LMR_CONTEXT		lmr_context;
	DAT_RMR_CONTEXT		rmr_context;
	DAT_VLEN		registered_size;
	DAT_VADDR		registered_address;
};

/* ------------------------------------------------------------------ */
/* Provider attributes                                                  */

typedef enum dat_pz_support {
	DAT_PZ_UNIQUE,
	DAT_PZ_SAME,
	DAT_PZ_SHAREABLE
} DAT_PZ_SUPPORT;

/*
 * evd_stream_merging_supported[i][j] is DAT_TRUE when event streams i
 * and j may feed the same EVD.  Stream order is that of DAT_EVD_FLAGS:
 * 0 software, 1 connection request, 2 DTO completion, 3 connection,
 * 4 RMR bind completion, 5 asynchronous.  The diagonal is DAT_TRUE.
 */
struct dat_provider_attr {
	char			provider_name[DAT_NAME_MAX_LENGTH];
	DAT_UINT32		provider_version_major;
	DAT_UINT32		provider_version_minor;
	DAT_UINT32		dapl_version_major;
	DAT_UINT32		dapl_version_minor;
	DAT_MEM_TYPE		lmr_mem_types_supported;
	DAT_IOV_OWNERSHIP	iov_ownership_on_return;
	DAT_QOS			dat_qos_supported;
	DAT_COMPLETION_FLAGS	completion_flags_supported;
	DAT_BOOLEAN		is_thread_safe;
	DAT_COUNT		max_private_data_size;
	DAT_BOOLEAN		supports_multipath;
	DAT_EP_CREATOR_FOR_PSP	ep_creator;
	DAT_PZ_SUPPORT		pz_support;			/* uDAPL */
	DAT_UINT32		optimal_buffer_alignment;
	DAT_BOOLEAN		evd_stream_merging_supported[6][6];
	DAT_BOOLEAN		srq_supported;
	DAT_COUNT		srq_watermarks_supported;
	DAT_BOOLEAN		srq_ep_pz_difference_supported;
	DAT_COUNT		srq_info_supported;
	DAT_COUNT		ep_recv_info_supported;
	DAT_BOOLEAN		lmr_sync_req;
	DAT_BOOLEAN		dto_async_return_guaranteed;
	DAT_BOOLEAN		rdma_write_for_rdma_read_req;
	DAT_COUNT		num_provider_specific_attr;
	DAT_NAMED_ATTR		*provider_specific_attr;
};

/* The flavour's bit in DAT_PROVIDER_ATTR_MASK (the rest are in dat.h). */
#define DAT_PROVIDER_FIELD_PZ_SUPPORT		DAT_UINT64_C(0x0002000)

/* ------------------------------------------------------------------ */
/* uDAPL-only calls                                                     */

DAT_RETURN dat_lmr_create(DAT_IA_HANDLE ia_handle,
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

DAT_RETURN dat_evd_create(DAT_IA_HANDLE ia_handle,
			  DAT_COUNT evd_min_qlen,
			  DAT_CNO_HANDLE cno_handle,
			  DAT_EVD_FLAGS evd_flags,
			  DAT_EVD_HANDLE *evd_handle);

DAT_RETURN dat_evd_modify_cno(DAT_EVD_HANDLE evd_handle,
			      DAT_CNO_HANDLE cno_handle);

DAT_RETURN dat_evd_enable(DAT_EVD_HANDLE evd_handle);

DAT_RETURN dat_evd_disable(DAT_EVD_HANDLE evd_handle);

/*
 * Block until at least threshold events are queued (or the timeout
 * expires), then dequeue one into *event; *nmore is how many remain.
 */
DAT_RETURN dat_evd_wait(DAT_EVD_HANDLE evd_handle,
			DAT_TIMEOUT timeout,
			DAT_COUNT threshold,
			DAT_EVENT *event,
			DAT_COUNT *nmore);

DAT_RETURN dat_evd_set_unwaitable(DAT_EVD_HANDLE evd_handle);

DAT_RETURN dat_evd_clear_unwaitable(DAT_EVD_HANDLE evd_handle);

DAT_RETURN dat_cno_create(DAT_IA_HANDLE ia_handle,
			  DAT_OS_WAIT_PROXY_AGENT agent,
			  DAT_CNO_HANDLE *cno_handle);

DAT_RETURN dat_cno_modify_agent(DAT_CNO_HANDLE cno_handle,
				DAT_OS_WAIT_PROXY_AGENT agent);

DAT_RETURN dat_cno_query(DAT_CNO_HANDLE cno_handle,
			 DAT_CNO_PARAM_MASK cno_param_mask,
			 DAT_CNO_PARAM *cno_param);

DAT_RETURN dat_cno_free(DAT_CNO_HANDLE cno_handle);

DAT_RETURN dat_cno_wait(DAT_CNO_HANDLE cno_handle,
			DAT_TIMEOUT timeout,
			DAT_EVD_HANDLE *evd_handle);

#ifdef __cplusplus
}
#endif

/* Provider table and registration, for libdat and its providers. */
#include <dat/dat_registry.h>

#endif /* DAT_UDAT_H_ */
