/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/kdat.h - the kDAPL (kernel) flavour of the DAT 1.2 API.
 *
 * Kernel consumers and providers include this header.  It provides
 * everything in dat/dat.h plus what only the kernel has: EVDs that
 * notify through upcalls instead of blocking waits, registration of
 * kernel memory (virtual, physical pages, platform or IA addresses) as
 * LMRs, and the provider table with its registration calls
 * (dat_registry.h).
 */
#ifndef DAT_KDAT_H_
#define DAT_KDAT_H_

#ifndef __KERNEL__
#error "<dat/kdat.h> is the kernel flavour; applications include <dat/udat.h>"
#endif

#include <dat/kdat_config.h>
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
	/* kDAPL only */
	DAT_MEM_TYPE_PHYSICAL		= 0x10,
	DAT_MEM_TYPE_PLATFORM		= 0x20,
	DAT_MEM_TYPE_IA			= 0x40,
	DAT_MEM_TYPE_BYPASS		= 0x80
} DAT_MEM_TYPE;

/* No CNOs in the kernel, so SRQ directly follows RSP here. */
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
	DAT_HANDLE_TYPE_SRQ
} DAT_HANDLE_TYPE;

typedef enum dat_evd_param_mask {
	DAT_EVD_FIELD_IA_HANDLE		= 0x01,
	DAT_EVD_FIELD_EVD_QLEN		= 0x02,
	DAT_EVD_FIELD_UPCALL_POLICY	= 0x04,
	DAT_EVD_FIELD_UPCALL		= 0x08,
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
/* Upcalls                                                              */

/* How many upcalls an EVD may have running at once. */
typedef enum dat_upcall_policy {
	DAT_UPCALL_DISABLE		= 0,	/* none; consumer dequeues */
	DAT_UPCALL_SINGLE_INSTANCE	= 1,	/* at most one at a time */
	DAT_UPCALL_MANY			= 100,	/* any number concurrently */
	/*
	 * Passed to dat_evd_modify_upcall: disable upcalls and return only
	 * once every upcall already running has returned.
	 */
	DAT_UPCALL_TEARDOWN		= -1
} DAT_UPCALL_POLICY;

/*
 * Called by the provider when events are queued on an EVD whose policy
 * allows it.  more_events says whether further events are queued
 * behind this one; the upcall dequeues them with dat_evd_dequeue.
 * It must not block: a provider may call it from atomic context.
 */
typedef void (*DAT_UPCALL_FUNC)(DAT_PVOID instance_data,
				const DAT_EVENT *event,
				DAT_BOOLEAN more_events);

typedef struct dat_upcall_object {
	DAT_PVOID		instance_data;
	DAT_UPCALL_FUNC		upcall_func;
} DAT_UPCALL_OBJECT;

#define DAT_UPCALL_NULL \
	((DAT_UPCALL_OBJECT){ .instance_data = NULL, .upcall_func = NULL })

struct dat_evd_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_COUNT		evd_qlen;
	DAT_UPCALL_POLICY	upcall_policy;
	DAT_UPCALL_OBJECT	upcall;
	DAT_EVD_FLAGS		evd_flags;
};

/* ------------------------------------------------------------------ */
/* Local Memory Regions                                                 */

/* What the registration of kernel memory should favour. */
typedef enum dat_mem_optimize_flags {
	DAT_MEM_OPTIMIZE_DONT_CARE	= 0x00,
	DAT_MEM_OPTIMIZE_IA		= 0x01,	/* adapter efficiency */
	DAT_MEM_OPTIMIZE_MIN_EXPOSURE	= 0x02,	/* expose no extra memory */
	DAT_MEM_OPTIMIZE_EXACT_EXPOSURE	= 0x04	/* expose exactly the range */
} DAT_MEM_OPTIMIZE_FLAGS;

/* Short name used by provider code. */
typedef DAT_MEM_OPTIMIZE_FLAGS DAT_MEM_OPT;

/* The member used follows from the DAT_MEM_TYPE passed with it. */
typedef union dat_region_description {
	DAT_PVOID		for_va;		/* VIRTUAL: kernel address */
	DAT_LMR_HANDLE		for_lmr_handle;	/* LMR */
	DAT_PVOID		for_platform;	/* PLATFORM, BYPASS */
	DAT_PADDR		*for_array;	/* PHYSICAL: page addresses */
	DAT_PADDR		for_ia;		/* IA: adapter address */
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
	DAT_UPCALL_POLICY	upcall_policy;			/* kDAPL */
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
#define DAT_PROVIDER_FIELD_UPCALL_POLICY	DAT_UINT64_C(0x0002000)

/* ------------------------------------------------------------------ */
/* kDAPL-only calls                                                     */

/*
 * Preferred length and alignment for registering length bytes of the
 * given memory type with the given optimization.
 */
DAT_RETURN dat_ia_memtype_hint(DAT_IA_HANDLE ia_handle,
			       DAT_MEM_TYPE mem_type,
			       DAT_VLEN length,
			       DAT_MEM_OPTIMIZE_FLAGS mem_optimization,
			       DAT_VLEN *preferred_length,
			       DAT_VADDR *preferred_alignment);

DAT_RETURN dat_evd_kcreate(DAT_IA_HANDLE ia_handle,
			   DAT_COUNT evd_min_qlen,
			   DAT_UPCALL_POLICY upcall_policy,
			   const DAT_UPCALL_OBJECT *upcall,
			   DAT_EVD_FLAGS evd_flags,
			   DAT_EVD_HANDLE *evd_handle);

DAT_RETURN dat_evd_modify_upcall(DAT_EVD_HANDLE evd_handle,
				 DAT_UPCALL_POLICY upcall_policy,
				 const DAT_UPCALL_OBJECT *upcall);

DAT_RETURN dat_lmr_kcreate(DAT_IA_HANDLE ia_handle,
			   DAT_MEM_TYPE mem_type,
			   DAT_REGION_DESCRIPTION region_description,
			   DAT_VLEN length,
			   DAT_PZ_HANDLE pz_handle,
			   DAT_MEM_PRIV_FLAGS privileges,
			   DAT_MEM_OPTIMIZE_FLAGS mem_optimization,
			   DAT_LMR_HANDLE *lmr_handle,
			   DAT_LMR_CONTEXT *lmr_context,
			   DAT_RMR_CONTEXT *rmr_context,
			   DAT_VLEN *registered_length,
			   DAT_VADDR *registered_address);

/* ------------------------------------------------------------------ */
/* kdat provider extensions (not DAT 1.2)                               */

/*
 * kdat_ia_set_flags flags.  KDAT_IA_SRQ_EP_BROKEN: every EP of the IA with
 * an SRQ gets exactly one DAT_ASYNC_ERROR_EP_BROKEN (reason
 * DAT_EP_TRANSFER_TO_ERROR) on the async EVD per connection that had its
 * QP, after the connection event that ends the connection (disconnect by
 * either side, rejection, error), so after every receive the EP took from
 * the SRQ is on its recv EVD: what DAT 2.0 providers report for IB's
 * LAST_WQE_REACHED.  None for an EP reset or freed before then, none when
 * a QP error already raised EP_BROKEN for that connection.  Off by
 * default (DAT 1.2 behaviour).  The same bit as the user ABI's
 * KDAT_IA_OPEN_SRQ_EP_BROKEN.
 */
#define KDAT_IA_SRQ_EP_BROKEN	0x1

/*
 * Set the kdat-specific behaviour flags of a kdat IA (best right after
 * dat_ia_open; a connection ending later reads them).  DAT_INVALID_HANDLE
 * for an IA of another provider, DAT_INVALID_PARAMETER for unknown bits.
 */
DAT_RETURN kdat_ia_set_flags(DAT_IA_HANDLE ia_handle, DAT_UINT32 flags);

/*
 * IB extensions (what DAT 2.0 calls DAT_EXTENSION_IB): RDMA Write with
 * immediate data, compare-and-swap and fetch-and-add, and the operation of
 * every DTO completion (DAT_DTO_COMPLETION_EVENT_DATA.kdat_operation).
 */
enum kdat_dto_operation {
	KDAT_DTO_OP_UNKNOWN		= 0,
	KDAT_DTO_OP_SEND		= 1,
	KDAT_DTO_OP_RECV		= 2,
	KDAT_DTO_OP_RDMA_WRITE		= 3,
	KDAT_DTO_OP_RDMA_READ		= 4,
	KDAT_DTO_OP_RDMA_WRITE_IMMED	= 5,	/* the writer's completion */
	KDAT_DTO_OP_RECV_RDMA_IMMED	= 6,	/* the receive it consumed */
	KDAT_DTO_OP_CMP_AND_SWAP	= 7,
	KDAT_DTO_OP_FETCH_AND_ADD	= 8
};

/* kdat_flags: kdat_immed_data is valid (a receive that carried one). */
#define KDAT_DTO_F_IMMED		0x1

/*
 * LMR privilege: peers may run atomics on the region (DAT 2.0's
 * DAT_IB_MEM_PRIV_REMOTE_ATOMIC).  A kernel LMR gets it on the terms of
 * every remote privilege (the module's remote_access), from a DMA MR of
 * its PZ with atomic access; a device without atomics:
 * DAT_MODEL_NOT_SUPPORTED.
 */
#define KDAT_MEM_PRIV_REMOTE_ATOMIC_FLAG	0x40

/*
 * RDMA Write of @iov to @remote, which also consumes a receive at the peer
 * whose completion carries @immed_data (KDAT_DTO_OP_RECV_RDMA_IMMED,
 * KDAT_DTO_F_IMMED) and the length written.  Otherwise as
 * dat_ep_post_rdma_write (the flags are ARG7).
 */
DAT_RETURN kdat_ep_post_rdma_write_immed(DAT_EP_HANDLE ep_handle,
					 DAT_COUNT num_segments,
					 DAT_LMR_TRIPLET *local_iov,
					 DAT_DTO_COOKIE user_cookie,
					 const DAT_RMR_TRIPLET *remote_iov,
					 DAT_UINT32 immed_data,
					 DAT_COMPLETION_FLAGS flags);

/*
 * Atomics on the 8 bytes at @remote (target_address aligned to 8, else
 * DAT_INVALID_PARAMETER naming @remote; segment_length at least 8, else
 * DAT_LENGTH_ERROR).  The value found there lands in the one local
 * segment @local, which must be 8 bytes (else DAT_LENGTH_ERROR) of an LMR
 * with local write.  Compare-and-swap writes @swap if the value equals
 * @compare; fetch-and-add adds @add.  Each counts as one outstanding
 * RDMA Read (max_rdma_read_out 0: DAT_INVALID_STATE); a device without
 * atomics: DAT_MODEL_NOT_SUPPORTED.
 */
DAT_RETURN kdat_ep_post_cmp_and_swap(DAT_EP_HANDLE ep_handle,
				     DAT_UINT64 compare, DAT_UINT64 swap,
				     const DAT_LMR_TRIPLET *local,
				     DAT_DTO_COOKIE user_cookie,
				     const DAT_RMR_TRIPLET *remote,
				     DAT_COMPLETION_FLAGS flags);

DAT_RETURN kdat_ep_post_fetch_and_add(DAT_EP_HANDLE ep_handle,
				      DAT_UINT64 add,
				      const DAT_LMR_TRIPLET *local,
				      DAT_DTO_COOKIE user_cookie,
				      const DAT_RMR_TRIPLET *remote,
				      DAT_COMPLETION_FLAGS flags);

#ifdef __cplusplus
}
#endif

/* Provider table and registration. */
#include <dat/dat_registry.h>

#endif /* DAT_KDAT_H_ */
