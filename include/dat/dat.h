/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/dat.h - the part of the DAT 1.2 API common to kDAPL and uDAPL.
 *
 * Which header to include
 * -----------------------
 *   Kernel consumers and providers:   #include <dat/kdat.h>
 *   Applications (link with -ldat):   #include <dat/udat.h>
 *
 * The set is one tree for both sides; __KERNEL__ selects the flavour.
 *
 *   dat.h                   common types, constants and calls (this file)
 *   dat_error.h             DAT_RETURN: class, type and subtype codes
 *   dat_platform_specific.h base integer, pointer and address types
 *   udat.h / kdat.h         the flavour: memory types, handle types, EVD
 *                           and LMR parameters, provider attributes and
 *                           the calls only that side has (uDAPL: CNOs and
 *                           blocking waits; kDAPL: upcalls and kernel
 *                           memory registration)
 *   udat_config.h /
 *   kdat_config.h           version (1.2) and thread-safety request
 *   dat_registry.h          provider registration and loading hooks
 *   dat_redirection.h       function-pointer types of the common calls
 *   udat_redirection.h /
 *   kdat_redirection.h      the flavour's function-pointer types and
 *                           struct dat_provider, the provider's table
 *
 * Every header can be included on its own: a common header included
 * first pulls in the flavour header, which lays everything out in order.
 *
 * How calls reach a provider
 * --------------------------
 * Each dat_* call below is a real function exported by the registry
 * (the kernel module for kDAPL, libdat for uDAPL).  It checks that the
 * handle names a live object of the right type, then calls through the
 * provider table that the object points to: every object a handle
 * names starts with a DAT_PROVIDER pointer (DAT_HANDLE_TO_PROVIDER).
 * A NULL, stale or wrongly typed handle gives DAT_INVALID_HANDLE.
 * Only dat_ia_open is a macro, supplying the version and threading
 * arguments of dat_ia_openv.
 */
#ifndef DAT_DAT_H_
#if !defined(DAT_UDAT_H_) && !defined(DAT_KDAT_H_)

/* Included directly: the flavour header includes us at the right point. */
#ifdef __KERNEL__
#include <dat/kdat.h>
#else
#include <dat/udat.h>
#endif

#else /* included from udat.h or kdat.h */
#define DAT_DAT_H_

#include <dat/dat_platform_specific.h>
#include <dat/dat_error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Generic types                                                        */

typedef char *DAT_NAME_PTR;		/* IA and attribute names */
#define DAT_NAME_MAX_LENGTH	256	/* including the terminating NUL */

/* Name/value pair for transport, vendor and provider attributes. */
typedef struct dat_named_attr {
	const char		*name;
	const char		*value;
} DAT_NAMED_ATTR;

typedef enum dat_boolean {
	DAT_FALSE = 0,
	DAT_TRUE = 1
} DAT_BOOLEAN;

/* Consumer-owned value stored with objects and returned in events. */
typedef union dat_context {
	DAT_PVOID		as_ptr;
	DAT_UINT64		as_64;
	DAT_UVERYLONG		as_index;
} DAT_CONTEXT;

typedef DAT_CONTEXT DAT_DTO_COOKIE;
typedef DAT_CONTEXT DAT_RMR_COOKIE;

typedef enum dat_completion_flags {
	/* complete with notification */
	DAT_COMPLETION_DEFAULT_FLAG		= 0x00,
	/* no completion event if the operation succeeds */
	DAT_COMPLETION_SUPPRESS_FLAG		= 0x01,
	/* the sender decides whether a receive completion notifies */
	DAT_COMPLETION_SOLICITED_WAIT_FLAG	= 0x02,
	/* completions are reported without notification */
	DAT_COMPLETION_UNSIGNALLED_FLAG		= 0x04,
	/* wait for all earlier RDMA Reads before starting */
	DAT_COMPLETION_BARRIER_FENCE_FLAG	= 0x08,
	/*
	 * uDAPL only, as an EP receive completion flag: waking a waiter is
	 * governed by the threshold of dat_evd_wait.
	 */
	DAT_COMPLETION_EVD_THRESHOLD_FLAG	= 0x10
} DAT_COMPLETION_FLAGS;

typedef DAT_UINT32 DAT_TIMEOUT;		/* microseconds */
#define DAT_TIMEOUT_INFINITE	((DAT_TIMEOUT)~0U)

/* ------------------------------------------------------------------ */
/* Handles                                                              */

typedef DAT_PVOID	DAT_HANDLE;
typedef DAT_HANDLE	DAT_CR_HANDLE;
typedef DAT_HANDLE	DAT_EP_HANDLE;
typedef DAT_HANDLE	DAT_EVD_HANDLE;
typedef DAT_HANDLE	DAT_IA_HANDLE;
typedef DAT_HANDLE	DAT_LMR_HANDLE;
typedef DAT_HANDLE	DAT_PSP_HANDLE;
typedef DAT_HANDLE	DAT_PZ_HANDLE;
typedef DAT_HANDLE	DAT_RMR_HANDLE;
typedef DAT_HANDLE	DAT_RSP_HANDLE;
typedef DAT_HANDLE	DAT_SRQ_HANDLE;
/* CNOs exist only in uDAPL; the type is common so both sides can name it. */
typedef DAT_HANDLE	DAT_CNO_HANDLE;

#define DAT_HANDLE_NULL		((DAT_HANDLE)NULL)

/* Either kind of service point, as reported in a connection request. */
typedef union dat_sp_handle {
	DAT_RSP_HANDLE		rsp_handle;
	DAT_PSP_HANDLE		psp_handle;
} DAT_SP_HANDLE;

typedef DAT_SOCK_ADDR	*DAT_IA_ADDRESS_PTR;

typedef DAT_UINT64	DAT_CONN_QUAL;
typedef DAT_UINT64	DAT_PORT_QUAL;

/* The provider's table (kdat_redirection.h / udat_redirection.h). */
typedef struct dat_provider DAT_PROVIDER;

/* ------------------------------------------------------------------ */
/* Connection and event flags                                           */

typedef enum dat_qos {
	DAT_QOS_BEST_EFFORT		= 0x00,
	DAT_QOS_HIGH_THROUGHPUT		= 0x01,
	DAT_QOS_LOW_LATENCY		= 0x02,
	DAT_QOS_ECONOMY			= 0x04,	/* neither of the above */
	DAT_QOS_PREMIUM			= 0x08	/* both of the above */
} DAT_QOS;

typedef enum dat_connect_flags {
	DAT_CONNECT_DEFAULT_FLAG	= 0x00,
	DAT_CONNECT_MULTIPATH_FLAG	= 0x01
} DAT_CONNECT_FLAGS;

typedef enum dat_close_flags {
	DAT_CLOSE_ABRUPT_FLAG		= 0x00,
	DAT_CLOSE_GRACEFUL_FLAG		= 0x01
} DAT_CLOSE_FLAGS;

#define DAT_CLOSE_DEFAULT	DAT_CLOSE_ABRUPT_FLAG

/* Event streams an EVD accepts (bit order = stream index 0..5). */
typedef enum dat_evd_flags {
	DAT_EVD_SOFTWARE_FLAG		= 0x001,
	DAT_EVD_CR_FLAG			= 0x010,
	DAT_EVD_DTO_FLAG		= 0x020,
	DAT_EVD_CONNECTION_FLAG		= 0x040,
	DAT_EVD_RMR_BIND_FLAG		= 0x080,
	DAT_EVD_ASYNC_FLAG		= 0x100,
	/* every DAT stream, no software events */
	DAT_EVD_DEFAULT_FLAG		= 0x1F0
} DAT_EVD_FLAGS;

typedef enum dat_psp_flags {
	DAT_PSP_CONSUMER_FLAG		= 0x00,	/* consumer supplies the EP */
	DAT_PSP_PROVIDER_FLAG		= 0x01	/* provider creates the EP */
} DAT_PSP_FLAGS;

/*
 * Largest private data any connect, accept or connection event carries
 * in this implementation (not a 1.2 constant).  The provider reports its
 * own, possibly smaller, limit in max_private_data_size.
 */
#define DAT_MAX_PRIVATE_DATA_SIZE	256

/* ------------------------------------------------------------------ */
/* Memory                                                               */

/*
 * Triplets carry 64-bit addresses and lengths in host byte order even
 * where a pointer is narrower; the pad keeps the address aligned to 8.
 * A segment_length of 0 makes the other fields irrelevant.
 */
typedef DAT_UINT32	DAT_LMR_CONTEXT;
typedef DAT_UINT32	DAT_RMR_CONTEXT;

typedef DAT_UINT64	DAT_VLEN;
typedef DAT_UINT64	DAT_VADDR;

/* Defined by the flavour header. */
typedef struct dat_provider_attr	DAT_PROVIDER_ATTR;
typedef struct dat_evd_param		DAT_EVD_PARAM;
typedef struct dat_lmr_param		DAT_LMR_PARAM;

typedef struct dat_lmr_triplet {
	DAT_LMR_CONTEXT		lmr_context;
	DAT_UINT32		pad;
	DAT_VADDR		virtual_address;
	DAT_VLEN		segment_length;
} DAT_LMR_TRIPLET;

typedef struct dat_rmr_triplet {
	DAT_RMR_CONTEXT		rmr_context;
	DAT_UINT32		pad;
	DAT_VADDR		target_address;
	DAT_VLEN		segment_length;
} DAT_RMR_TRIPLET;

typedef enum dat_mem_priv_flags {
	DAT_MEM_PRIV_NONE_FLAG		= 0x00,
	DAT_MEM_PRIV_LOCAL_READ_FLAG	= 0x01,
	DAT_MEM_PRIV_REMOTE_READ_FLAG	= 0x02,
	DAT_MEM_PRIV_LOCAL_WRITE_FLAG	= 0x10,
	DAT_MEM_PRIV_REMOTE_WRITE_FLAG	= 0x20,
	DAT_MEM_PRIV_ALL_FLAG		= 0x33
} DAT_MEM_PRIV_FLAGS;

/* DAT 1.0 combined privileges. */
#define DAT_MEM_PRIV_READ_FLAG \
	(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG)
#define DAT_MEM_PRIV_WRITE_FLAG \
	(DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG)

typedef enum dat_lmr_param_mask {
	DAT_LMR_FIELD_IA_HANDLE			= 0x001,
	DAT_LMR_FIELD_MEM_TYPE			= 0x002,
	DAT_LMR_FIELD_REGION_DESC		= 0x004,
	DAT_LMR_FIELD_LENGTH			= 0x008,
	DAT_LMR_FIELD_PZ_HANDLE			= 0x010,
	DAT_LMR_FIELD_MEM_PRIV			= 0x020,
	DAT_LMR_FIELD_LMR_CONTEXT		= 0x040,
	DAT_LMR_FIELD_RMR_CONTEXT		= 0x080,
	DAT_LMR_FIELD_REGISTERED_SIZE		= 0x100,
	DAT_LMR_FIELD_REGISTERED_ADDRESS	= 0x200,

	DAT_LMR_FIELD_ALL			= 0x3FF
} DAT_LMR_PARAM_MASK;

typedef struct dat_rmr_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_PZ_HANDLE		pz_handle;
	DAT_LMR_TRIPLET		lmr_triplet;
	DAT_MEM_PRIV_FLAGS	mem_priv;
	DAT_RMR_CONTEXT		rmr_context;
} DAT_RMR_PARAM;

typedef enum dat_rmr_param_mask {
	DAT_RMR_FIELD_IA_HANDLE		= 0x01,
	DAT_RMR_FIELD_PZ_HANDLE		= 0x02,
	DAT_RMR_FIELD_LMR_TRIPLET	= 0x04,
	DAT_RMR_FIELD_MEM_PRIV		= 0x08,
	DAT_RMR_FIELD_RMR_CONTEXT	= 0x10,

	DAT_RMR_FIELD_ALL		= 0x1F
} DAT_RMR_PARAM_MASK;

/* ------------------------------------------------------------------ */
/* Provider attributes: the parts both flavours share                   */

typedef enum dat_iov_ownership {
	/* the provider never touches the IOV; the consumer may reuse it */
	DAT_IOV_CONSUMER		= 0x0,
	/* the provider leaves the IOV unmodified on completion */
	DAT_IOV_PROVIDER_NOMOD		= 0x1,
	/* the provider may modify the IOV until completion */
	DAT_IOV_PROVIDER_MOD		= 0x2
} DAT_IOV_OWNERSHIP;

typedef enum dat_ep_creator_for_psp {
	DAT_PSP_CREATES_EP_NEVER,
	DAT_PSP_CREATES_EP_IFASKED,
	DAT_PSP_CREATES_EP_ALWAYS
} DAT_EP_CREATOR_FOR_PSP;

/*
 * Bits selecting DAT_PROVIDER_ATTR fields.  Bit 0x2000 is the flavour's
 * own field: DAT_PROVIDER_FIELD_PZ_SUPPORT (udat.h) or
 * DAT_PROVIDER_FIELD_UPCALL_POLICY (kdat.h).
 */
typedef DAT_UINT64 DAT_PROVIDER_ATTR_MASK;

#define DAT_PROVIDER_FIELD_PROVIDER_NAME		DAT_UINT64_C(0x0000001)
#define DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR	DAT_UINT64_C(0x0000002)
#define DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR	DAT_UINT64_C(0x0000004)
#define DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR		DAT_UINT64_C(0x0000008)
#define DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR		DAT_UINT64_C(0x0000010)
#define DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED	DAT_UINT64_C(0x0000020)
#define DAT_PROVIDER_FIELD_IOV_OWNERSHIP		DAT_UINT64_C(0x0000040)
#define DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED		DAT_UINT64_C(0x0000080)
#define DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED	DAT_UINT64_C(0x0000100)
#define DAT_PROVIDER_FIELD_IS_THREAD_SAFE		DAT_UINT64_C(0x0000200)
#define DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE	DAT_UINT64_C(0x0000400)
#define DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH		DAT_UINT64_C(0x0000800)
#define DAT_PROVIDER_FIELD_EP_CREATOR			DAT_UINT64_C(0x0001000)
/*	0x0002000: flavour-specific, see above */
#define DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT	DAT_UINT64_C(0x0004000)
#define DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED	DAT_UINT64_C(0x0008000)
#define DAT_PROVIDER_FIELD_SRQ_SUPPORTED		DAT_UINT64_C(0x0010000)
#define DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED	DAT_UINT64_C(0x0020000)
#define DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED \
							DAT_UINT64_C(0x0040000)
#define DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED		DAT_UINT64_C(0x0080000)
#define DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED	DAT_UINT64_C(0x0100000)
#define DAT_PROVIDER_FIELD_LMR_SYNC_REQ			DAT_UINT64_C(0x0200000)
#define DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED	DAT_UINT64_C(0x0400000)
#define DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ	DAT_UINT64_C(0x0800000)
#define DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR	DAT_UINT64_C(0x1000000)
#define DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR	DAT_UINT64_C(0x2000000)

#define DAT_PROVIDER_FIELD_ALL				DAT_UINT64_C(0x3FFFFFF)
#define DAT_PROVIDER_FIELD_NONE				DAT_UINT64_C(0x0)

/* ------------------------------------------------------------------ */
/* Interface Adapter attributes (the same for both flavours)            */

typedef struct dat_ia_attr {
	char			adapter_name[DAT_NAME_MAX_LENGTH];
	char			vendor_name[DAT_NAME_MAX_LENGTH];
	DAT_UINT32		hardware_version_major;
	DAT_UINT32		hardware_version_minor;
	DAT_UINT32		firmware_version_major;
	DAT_UINT32		firmware_version_minor;
	DAT_IA_ADDRESS_PTR	ia_address_ptr;
	DAT_COUNT		max_eps;
	DAT_COUNT		max_dto_per_ep;
	DAT_COUNT		max_rdma_read_per_ep_in;
	DAT_COUNT		max_rdma_read_per_ep_out;
	DAT_COUNT		max_evds;
	DAT_COUNT		max_evd_qlen;
	DAT_COUNT		max_iov_segments_per_dto;
	DAT_COUNT		max_lmrs;
	DAT_VLEN		max_lmr_block_size;
	DAT_VADDR		max_lmr_virtual_address;
	DAT_COUNT		max_pzs;
	DAT_VLEN		max_message_size;
	DAT_VLEN		max_rdma_size;
	DAT_COUNT		max_rmrs;
	DAT_VADDR		max_rmr_target_address;
	DAT_COUNT		max_srqs;
	DAT_COUNT		max_ep_per_srq;
	DAT_COUNT		max_recv_per_srq;
	DAT_COUNT		max_iov_segments_per_rdma_read;
	DAT_COUNT		max_iov_segments_per_rdma_write;
	DAT_COUNT		max_rdma_read_in;
	DAT_COUNT		max_rdma_read_out;
	DAT_BOOLEAN		max_rdma_read_per_ep_in_guaranteed;
	DAT_BOOLEAN		max_rdma_read_per_ep_out_guaranteed;
	DAT_COUNT		num_transport_attr;
	DAT_NAMED_ATTR		*transport_attr;
	DAT_COUNT		num_vendor_attr;
	DAT_NAMED_ATTR		*vendor_attr;
} DAT_IA_ATTR;

typedef DAT_UINT64 DAT_IA_ATTR_MASK;

#define DAT_IA_FIELD_IA_ADAPTER_NAME			DAT_UINT64_C(0x000000001)
#define DAT_IA_FIELD_IA_VENDOR_NAME			DAT_UINT64_C(0x000000002)
#define DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION		DAT_UINT64_C(0x000000004)
#define DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION		DAT_UINT64_C(0x000000008)
#define DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION		DAT_UINT64_C(0x000000010)
#define DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION		DAT_UINT64_C(0x000000020)
#define DAT_IA_FIELD_IA_ADDRESS_PTR			DAT_UINT64_C(0x000000040)
#define DAT_IA_FIELD_IA_MAX_EPS				DAT_UINT64_C(0x000000080)
#define DAT_IA_FIELD_IA_MAX_DTO_PER_EP			DAT_UINT64_C(0x000000100)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN		DAT_UINT64_C(0x000000200)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT	DAT_UINT64_C(0x000000400)
#define DAT_IA_FIELD_IA_MAX_EVDS			DAT_UINT64_C(0x000000800)
#define DAT_IA_FIELD_IA_MAX_EVD_QLEN			DAT_UINT64_C(0x000001000)
#define DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO	DAT_UINT64_C(0x000002000)
#define DAT_IA_FIELD_IA_MAX_LMRS			DAT_UINT64_C(0x000004000)
#define DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE		DAT_UINT64_C(0x000008000)
#define DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS		DAT_UINT64_C(0x000010000)
#define DAT_IA_FIELD_IA_MAX_PZS				DAT_UINT64_C(0x000020000)
#define DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE		DAT_UINT64_C(0x000040000)
#define DAT_IA_FIELD_IA_MAX_RDMA_SIZE			DAT_UINT64_C(0x000080000)
#define DAT_IA_FIELD_IA_MAX_RMRS			DAT_UINT64_C(0x000100000)
#define DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS		DAT_UINT64_C(0x000200000)
#define DAT_IA_FIELD_IA_MAX_SRQS			DAT_UINT64_C(0x000400000)
#define DAT_IA_FIELD_IA_MAX_EP_PER_SRQ			DAT_UINT64_C(0x000800000)
#define DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ		DAT_UINT64_C(0x001000000)
#define DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ	DAT_UINT64_C(0x002000000)
#define DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE	DAT_UINT64_C(0x004000000)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_IN		DAT_UINT64_C(0x008000000)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT		DAT_UINT64_C(0x010000000)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED \
							DAT_UINT64_C(0x020000000)
#define DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED \
							DAT_UINT64_C(0x040000000)
#define DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR		DAT_UINT64_C(0x080000000)
#define DAT_IA_FIELD_IA_TRANSPORT_ATTR			DAT_UINT64_C(0x100000000)
#define DAT_IA_FIELD_IA_NUM_VENDOR_ATTR			DAT_UINT64_C(0x200000000)
#define DAT_IA_FIELD_IA_VENDOR_ATTR			DAT_UINT64_C(0x400000000)

#define DAT_IA_FIELD_ALL				DAT_UINT64_C(0x7FFFFFFFF)
#define DAT_IA_FIELD_NONE				DAT_UINT64_C(0x0)

/* DAT 1.0/1.1 names. */
#define DAT_IA_ALL			DAT_IA_FIELD_ALL
#define DAT_IA_FIELD_IA_MAX_MTU_SIZE	DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE

/* ------------------------------------------------------------------ */
/* Endpoints                                                            */

typedef enum dat_service_type {
	DAT_SERVICE_TYPE_RC		/* reliable connection */
} DAT_SERVICE_TYPE;

typedef struct dat_ep_attr {
	DAT_SERVICE_TYPE	service_type;
	DAT_VLEN		max_message_size;
	DAT_VLEN		max_rdma_size;
	DAT_QOS			qos;
	DAT_COMPLETION_FLAGS	recv_completion_flags;
	DAT_COMPLETION_FLAGS	request_completion_flags;
	DAT_COUNT		max_recv_dtos;
	DAT_COUNT		max_request_dtos;
	DAT_COUNT		max_recv_iov;
	DAT_COUNT		max_request_iov;
	DAT_COUNT		max_rdma_read_in;
	DAT_COUNT		max_rdma_read_out;
	DAT_COUNT		srq_soft_hw;	/* SRQ EPs: soft high watermark */
	DAT_COUNT		max_rdma_read_iov;
	DAT_COUNT		max_rdma_write_iov;
	DAT_COUNT		ep_transport_specific_count;
	DAT_NAMED_ATTR		*ep_transport_specific;
	DAT_COUNT		ep_provider_specific_count;
	DAT_NAMED_ATTR		*ep_provider_specific;
} DAT_EP_ATTR;

typedef enum dat_ep_state {
	DAT_EP_STATE_UNCONNECTED,		/* quiescent */
	DAT_EP_STATE_UNCONFIGURED_UNCONNECTED,
	DAT_EP_STATE_RESERVED,
	DAT_EP_STATE_UNCONFIGURED_RESERVED,
	DAT_EP_STATE_PASSIVE_CONNECTION_PENDING,
	DAT_EP_STATE_UNCONFIGURED_PASSIVE,
	DAT_EP_STATE_ACTIVE_CONNECTION_PENDING,
	DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
	DAT_EP_STATE_UNCONFIGURED_TENTATIVE,
	DAT_EP_STATE_CONNECTED,
	DAT_EP_STATE_DISCONNECT_PENDING,
	DAT_EP_STATE_DISCONNECTED,
	DAT_EP_STATE_COMPLETION_PENDING
} DAT_EP_STATE;

/* DAT 1.0 name. */
#define DAT_EP_STATE_ERROR	DAT_EP_STATE_DISCONNECTED

typedef struct dat_ep_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_EP_STATE		ep_state;
	DAT_IA_ADDRESS_PTR	local_ia_address_ptr;
	DAT_PORT_QUAL		local_port_qual;
	DAT_IA_ADDRESS_PTR	remote_ia_address_ptr;
	DAT_PORT_QUAL		remote_port_qual;
	DAT_PZ_HANDLE		pz_handle;
	DAT_EVD_HANDLE		recv_evd_handle;
	DAT_EVD_HANDLE		request_evd_handle;
	DAT_EVD_HANDLE		connect_evd_handle;
	DAT_SRQ_HANDLE		srq_handle;
	DAT_EP_ATTR		ep_attr;
} DAT_EP_PARAM;

typedef DAT_UINT64 DAT_EP_PARAM_MASK;

#define DAT_EP_FIELD_IA_HANDLE				DAT_UINT64_C(0x00000001)
#define DAT_EP_FIELD_EP_STATE				DAT_UINT64_C(0x00000002)
#define DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR		DAT_UINT64_C(0x00000004)
#define DAT_EP_FIELD_LOCAL_PORT_QUAL			DAT_UINT64_C(0x00000008)
#define DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR		DAT_UINT64_C(0x00000010)
#define DAT_EP_FIELD_REMOTE_PORT_QUAL			DAT_UINT64_C(0x00000020)
#define DAT_EP_FIELD_PZ_HANDLE				DAT_UINT64_C(0x00000040)
#define DAT_EP_FIELD_RECV_EVD_HANDLE			DAT_UINT64_C(0x00000080)
#define DAT_EP_FIELD_REQUEST_EVD_HANDLE			DAT_UINT64_C(0x00000100)
#define DAT_EP_FIELD_CONNECT_EVD_HANDLE			DAT_UINT64_C(0x00000200)
#define DAT_EP_FIELD_SRQ_HANDLE				DAT_UINT64_C(0x00000400)

/* The ep_attr fields start at 0x1000. */
#define DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE		DAT_UINT64_C(0x00001000)
#define DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE		DAT_UINT64_C(0x00002000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE		DAT_UINT64_C(0x00004000)
#define DAT_EP_FIELD_EP_ATTR_QOS			DAT_UINT64_C(0x00008000)
#define DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS	DAT_UINT64_C(0x00010000)
#define DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS	DAT_UINT64_C(0x00020000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS		DAT_UINT64_C(0x00040000)
#define DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS		DAT_UINT64_C(0x00080000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV		DAT_UINT64_C(0x00100000)
#define DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV		DAT_UINT64_C(0x00200000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN		DAT_UINT64_C(0x00400000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT		DAT_UINT64_C(0x00800000)
#define DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW		DAT_UINT64_C(0x01000000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV		DAT_UINT64_C(0x02000000)
#define DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV		DAT_UINT64_C(0x04000000)
#define DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR		DAT_UINT64_C(0x08000000)
#define DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR	DAT_UINT64_C(0x10000000)
#define DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR		DAT_UINT64_C(0x20000000)
#define DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR	DAT_UINT64_C(0x40000000)

#define DAT_EP_FIELD_EP_ATTR_ALL			DAT_UINT64_C(0x7FFFF000)
#define DAT_EP_FIELD_ALL				DAT_UINT64_C(0x7FFFF7FF)

/* ------------------------------------------------------------------ */
/* Shared Receive Queues                                                */

/* Watermark that never triggers; default for srq_soft_hw. */
#define DAT_WATERMARK_INFINITE	((DAT_COUNT)~0)
#define DAT_HW_DEFAULT		DAT_WATERMARK_INFINITE

/* Low watermark of a new SRQ: no event until dat_srq_set_lw arms one. */
#define DAT_SRQ_LW_DEFAULT	0x0

/* A count the provider cannot report (e.g. in dat_srq_query). */
#define DAT_VALUE_UNKNOWN	(((DAT_COUNT)~0) - 1)

typedef enum dat_srq_state {
	DAT_SRQ_STATE_OPERATIONAL,
	DAT_SRQ_STATE_ERROR
} DAT_SRQ_STATE;

typedef struct dat_srq_attr {
	DAT_COUNT		max_recv_dtos;
	DAT_COUNT		max_recv_iov;
	DAT_COUNT		low_watermark;
} DAT_SRQ_ATTR;

typedef struct dat_srq_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_SRQ_STATE		srq_state;
	DAT_PZ_HANDLE		pz_handle;
	DAT_COUNT		max_recv_dtos;
	DAT_COUNT		max_recv_iov;
	DAT_COUNT		low_watermark;
	/* posted, not yet taken by an Endpoint */
	DAT_COUNT		available_dto_count;
	/* posted, completion not yet reaped by the consumer */
	DAT_COUNT		outstanding_dto_count;
} DAT_SRQ_PARAM;

typedef enum dat_srq_param_mask {
	DAT_SRQ_FIELD_IA_HANDLE			= 0x001,
	DAT_SRQ_FIELD_SRQ_STATE			= 0x002,
	DAT_SRQ_FIELD_PZ_HANDLE			= 0x004,
	DAT_SRQ_FIELD_MAX_RECV_DTO		= 0x008,
	DAT_SRQ_FIELD_MAX_RECV_IOV		= 0x010,
	DAT_SRQ_FIELD_LOW_WATERMARK		= 0x020,
	DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT	= 0x040,
	DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT	= 0x080,

	DAT_SRQ_FIELD_ALL			= 0x0FF
} DAT_SRQ_PARAM_MASK;

/* ------------------------------------------------------------------ */
/* Protection Zones, Service Points, Connection Requests                */

typedef struct dat_pz_param {
	DAT_IA_HANDLE		ia_handle;
} DAT_PZ_PARAM;

typedef enum dat_pz_param_mask {
	DAT_PZ_FIELD_IA_HANDLE		= 0x01,

	DAT_PZ_FIELD_ALL		= 0x01
} DAT_PZ_PARAM_MASK;

typedef struct dat_psp_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_CONN_QUAL		conn_qual;
	DAT_EVD_HANDLE		evd_handle;
	DAT_PSP_FLAGS		psp_flags;
} DAT_PSP_PARAM;

typedef enum dat_psp_param_mask {
	DAT_PSP_FIELD_IA_HANDLE		= 0x01,
	DAT_PSP_FIELD_CONN_QUAL		= 0x02,
	DAT_PSP_FIELD_EVD_HANDLE	= 0x04,
	DAT_PSP_FIELD_PSP_FLAGS		= 0x08,

	DAT_PSP_FIELD_ALL		= 0x0F
} DAT_PSP_PARAM_MASK;

typedef struct dat_rsp_param {
	DAT_IA_HANDLE		ia_handle;
	DAT_CONN_QUAL		conn_qual;
	DAT_EVD_HANDLE		evd_handle;
	DAT_EP_HANDLE		ep_handle;
} DAT_RSP_PARAM;

typedef enum dat_rsp_param_mask {
	DAT_RSP_FIELD_IA_HANDLE		= 0x01,
	DAT_RSP_FIELD_CONN_QUAL		= 0x02,
	DAT_RSP_FIELD_EVD_HANDLE	= 0x04,
	DAT_RSP_FIELD_EP_HANDLE		= 0x08,

	DAT_RSP_FIELD_ALL		= 0x0F
} DAT_RSP_PARAM_MASK;

/*
 * A pending connection request.  The remote Endpoint's attributes are
 * not part of it; peers that need them exchange them in private data.
 */
typedef struct dat_cr_param {
	DAT_IA_ADDRESS_PTR	remote_ia_address_ptr;
	DAT_PORT_QUAL		remote_port_qual;
	DAT_COUNT		private_data_size;
	DAT_PVOID		private_data;
	/*
	 * The Endpoint the service point supplied (RSP, or PSP with
	 * DAT_PSP_PROVIDER_FLAG), the only one that may accept; otherwise
	 * DAT_HANDLE_NULL.
	 */
	DAT_EP_HANDLE		local_ep_handle;
} DAT_CR_PARAM;

typedef enum dat_cr_param_mask {
	DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR	= 0x01,
	DAT_CR_FIELD_REMOTE_PORT_QUAL		= 0x02,
	DAT_CR_FIELD_PRIVATE_DATA_SIZE		= 0x04,
	DAT_CR_FIELD_PRIVATE_DATA		= 0x08,
	DAT_CR_FIELD_LOCAL_EP_HANDLE		= 0x10,

	DAT_CR_FIELD_ALL			= 0x1F
} DAT_CR_PARAM_MASK;

/* ------------------------------------------------------------------ */
/* Events                                                               */

typedef enum dat_dto_completion_status {
	DAT_DTO_SUCCESS			= 0,
	DAT_DTO_ERR_FLUSHED		= 1,
	DAT_DTO_ERR_LOCAL_LENGTH	= 2,
	DAT_DTO_ERR_LOCAL_EP		= 3,
	DAT_DTO_ERR_LOCAL_PROTECTION	= 4,
	DAT_DTO_ERR_BAD_RESPONSE	= 5,
	DAT_DTO_ERR_REMOTE_ACCESS	= 6,
	DAT_DTO_ERR_REMOTE_RESPONDER	= 7,
	DAT_DTO_ERR_TRANSPORT		= 8,
	DAT_DTO_ERR_RECEIVER_NOT_READY	= 9,
	DAT_DTO_ERR_PARTIAL_PACKET	= 10,
	DAT_RMR_OPERATION_FAILED	= 11
} DAT_DTO_COMPLETION_STATUS;

/* DAT 1.0 names. */
#define DAT_DTO_LENGTH_ERROR	DAT_DTO_ERR_LOCAL_LENGTH
#define DAT_DTO_FAILURE		DAT_DTO_ERR_FLUSHED

/* RMR binds complete with the DTO status codes. */
typedef DAT_DTO_COMPLETION_STATUS DAT_RMR_BIND_COMPLETION_STATUS;
#define DAT_RMR_BIND_SUCCESS	DAT_DTO_SUCCESS
#define DAT_RMR_BIND_FAILURE	DAT_DTO_ERR_FLUSHED

/*
 * DTO completion.  For a receive taken from an SRQ, ep_handle is the
 * Endpoint that took the buffer.  transfered_length (sic, the standard's
 * spelling) is undefined unless status is DAT_DTO_SUCCESS.
 */
typedef struct dat_dto_completion_event_data {
	DAT_EP_HANDLE			ep_handle;
	DAT_DTO_COOKIE			user_cookie;
	DAT_DTO_COMPLETION_STATUS	status;
	DAT_VLEN			transfered_length;
#ifdef __KERNEL__
	/*
	 * kdat extension of the kernel flavour (<dat/kdat.h>): the
	 * operation that completed (KDAT_DTO_OP_*), KDAT_DTO_F_* flags and
	 * the immediate data of a receive that carried one (host order).
	 */
	DAT_UINT32			kdat_operation;
	DAT_UINT32			kdat_flags;
	DAT_UINT32			kdat_immed_data;
#endif
} DAT_DTO_COMPLETION_EVENT_DATA;

typedef struct dat_rmr_bind_completion_event_data {
	DAT_RMR_HANDLE			rmr_handle;
	DAT_RMR_COOKIE			user_cookie;
	DAT_RMR_BIND_COMPLETION_STATUS	status;
} DAT_RMR_BIND_COMPLETION_EVENT_DATA;

typedef struct dat_cr_arrival_event_data {
	/*
	 * The PSP or RSP that received the request.  An RSP delivers one
	 * request; its handle stays valid until dat_rsp_free.
	 */
	DAT_SP_HANDLE			sp_handle;
	/* local IA address the request arrived on */
	DAT_IA_ADDRESS_PTR		local_ia_address_ptr;
	DAT_CONN_QUAL			conn_qual;
	/* to be accepted or rejected by the consumer */
	DAT_CR_HANDLE			cr_handle;
} DAT_CR_ARRIVAL_EVENT_DATA;

typedef struct dat_connection_event_data {
	DAT_EP_HANDLE			ep_handle;
	DAT_COUNT			private_data_size;
	DAT_PVOID			private_data;
} DAT_CONNECTION_EVENT_DATA;

/*
 * Asynchronous (error) event.  dat_handle names the object the event
 * is about: the IA for unaffiliated events, else the EP, EVD, SRQ, LMR,
 * RMR or PZ.  reason is one of the *_ASYNC_ERROR_REASON values below,
 * chosen by the type of dat_handle.
 *
 * This is the DAT 1.2 layout; DAT 1.1's { DAT_IA_HANDLE ia_handle; }
 * became dat_handle (same offset, any handle type) plus reason.
 *
 * The SRQ low watermark set by dat_srq_set_lw arrives this way, on the
 * IA's async EVD: dat_handle = the SRQ, reason =
 * DAT_SRQ_LOW_WATERMARK_EVENT.
 */
typedef struct dat_asynch_error_event_data {
	DAT_HANDLE			dat_handle;
	DAT_COUNT			reason;
} DAT_ASYNCH_ERROR_EVENT_DATA;

typedef enum dat_ia_async_error_reason {
	DAT_IA_CATASTROPHIC_ERROR,
	DAT_IA_OTHER_ERROR
} DAT_IA_ASYNC_ERROR_REASON;

typedef enum dat_ep_async_error_reason {
	DAT_EP_TRANSFER_TO_ERROR,
	DAT_EP_OTHER_ERROR,
	DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT
} DAT_EP_ASYNC_ERROR_REASON;

typedef enum dat_evd_async_error_reason {
	DAT_EVD_OVERFLOW_ERROR,
	DAT_EVD_OTHER_ERROR
} DAT_EVD_ASYNC_ERROR_REASON;

typedef enum dat_srq_async_error_reason {
	DAT_SRQ_TRANSFER_TO_ERROR,
	DAT_SRQ_OTHER_ERROR,
	DAT_SRQ_LOW_WATERMARK_EVENT
} DAT_SRQ_ASYNC_ERROR_REASON;

typedef enum dat_lmr_async_error_reason {
	DAT_LMR_OTHER_ERROR
} DAT_LMR_ASYNC_ERROR_REASON;

typedef enum dat_rmr_async_error_reason {
	DAT_RMR_OTHER_ERROR
} DAT_RMR_ASYNC_ERROR_REASON;

typedef enum dat_pz_async_error_reason {
	DAT_PZ_OTHER_ERROR
} DAT_PZ_ASYNC_ERROR_REASON;

typedef struct dat_software_event_data {
	DAT_PVOID			pointer;
} DAT_SOFTWARE_EVENT_DATA;

typedef enum dat_event_number {
	DAT_DTO_COMPLETION_EVENT			= 0x00001,

	DAT_RMR_BIND_COMPLETION_EVENT			= 0x01001,

	DAT_CONNECTION_REQUEST_EVENT			= 0x02001,

	DAT_CONNECTION_EVENT_ESTABLISHED		= 0x04001,
	DAT_CONNECTION_EVENT_PEER_REJECTED		= 0x04002,
	DAT_CONNECTION_EVENT_NON_PEER_REJECTED		= 0x04003,
	DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR	= 0x04004,
	DAT_CONNECTION_EVENT_DISCONNECTED		= 0x04005,
	DAT_CONNECTION_EVENT_BROKEN			= 0x04006,
	DAT_CONNECTION_EVENT_TIMED_OUT			= 0x04007,
	DAT_CONNECTION_EVENT_UNREACHABLE		= 0x04008,

	DAT_ASYNC_ERROR_EVD_OVERFLOW			= 0x08001,
	DAT_ASYNC_ERROR_IA_CATASTROPHIC			= 0x08002,
	DAT_ASYNC_ERROR_EP_BROKEN			= 0x08003,
	DAT_ASYNC_ERROR_TIMED_OUT			= 0x08004,
	DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR		= 0x08005,

	DAT_SOFTWARE_EVENT				= 0x10001
} DAT_EVENT_NUMBER;

/* Which member is valid follows from event_number. */
typedef union dat_event_data {
	DAT_DTO_COMPLETION_EVENT_DATA		dto_completion_event_data;
	DAT_RMR_BIND_COMPLETION_EVENT_DATA	rmr_completion_event_data;
	DAT_CR_ARRIVAL_EVENT_DATA		cr_arrival_event_data;
	DAT_CONNECTION_EVENT_DATA		connect_event_data;
	DAT_ASYNCH_ERROR_EVENT_DATA		asynch_error_event_data;
	DAT_SOFTWARE_EVENT_DATA			software_event_data;
} DAT_EVENT_DATA;

typedef struct dat_event {
	DAT_EVENT_NUMBER	event_number;
	DAT_EVD_HANDLE		evd_handle;	/* the EVD it was dequeued from */
	DAT_EVENT_DATA		event_data;
} DAT_EVENT;

/* ------------------------------------------------------------------ */
/* Registry information                                                 */

/* dat_registry_list_providers output; the registration key. */
typedef struct dat_provider_info {
	char			ia_name[DAT_NAME_MAX_LENGTH];
	DAT_UINT32		dapl_version_major;
	DAT_UINT32		dapl_version_minor;
	DAT_BOOLEAN		is_thread_safe;
} DAT_PROVIDER_INFO;

/* ------------------------------------------------------------------ */
/* Calls common to kDAPL and uDAPL                                      */

/* Interface Adapter */

DAT_RETURN dat_ia_openv(const DAT_NAME_PTR ia_name,
			DAT_COUNT async_evd_min_qlen,
			DAT_EVD_HANDLE *async_evd_handle,
			DAT_IA_HANDLE *ia_handle,
			DAT_UINT32 dat_major_version,
			DAT_UINT32 dat_minor_version,
			DAT_BOOLEAN thread_safety);

/*
 * Open with the version this code was compiled against and the
 * threading requested by DAT_THREADSAFE (udat_config.h / kdat_config.h).
 */
#define dat_ia_open(name, qlen, async_evd, ia)				\
	dat_ia_openv((name), (qlen), (async_evd), (ia),			\
		     DAT_VERSION_MAJOR, DAT_VERSION_MINOR, DAT_THREADSAFE)

DAT_RETURN dat_ia_query(DAT_IA_HANDLE ia_handle,
			DAT_EVD_HANDLE *async_evd_handle,
			DAT_IA_ATTR_MASK ia_attr_mask,
			DAT_IA_ATTR *ia_attr,
			DAT_PROVIDER_ATTR_MASK provider_attr_mask,
			DAT_PROVIDER_ATTR *provider_attr);

DAT_RETURN dat_ia_close(DAT_IA_HANDLE ia_handle, DAT_CLOSE_FLAGS close_flags);

/* Any handle */

DAT_RETURN dat_set_consumer_context(DAT_HANDLE dat_handle,
				    DAT_CONTEXT context);

DAT_RETURN dat_get_consumer_context(DAT_HANDLE dat_handle,
				    DAT_CONTEXT *context);

DAT_RETURN dat_get_handle_type(DAT_HANDLE dat_handle,
			       DAT_HANDLE_TYPE *handle_type);

/* Connection Requests */

DAT_RETURN dat_cr_query(DAT_CR_HANDLE cr_handle,
			DAT_CR_PARAM_MASK cr_param_mask,
			DAT_CR_PARAM *cr_param);

DAT_RETURN dat_cr_accept(DAT_CR_HANDLE cr_handle,
			 DAT_EP_HANDLE ep_handle,
			 DAT_COUNT private_data_size,
			 const DAT_PVOID private_data);

DAT_RETURN dat_cr_reject(DAT_CR_HANDLE cr_handle);

DAT_RETURN dat_cr_handoff(DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL handoff);

/* Event Dispatchers (creation is flavour-specific) */

DAT_RETURN dat_evd_resize(DAT_EVD_HANDLE evd_handle, DAT_COUNT evd_min_qlen);

DAT_RETURN dat_evd_post_se(DAT_EVD_HANDLE evd_handle, const DAT_EVENT *event);

DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE evd_handle, DAT_EVENT *event);

DAT_RETURN dat_evd_query(DAT_EVD_HANDLE evd_handle,
			 DAT_EVD_PARAM_MASK evd_param_mask,
			 DAT_EVD_PARAM *evd_param);

DAT_RETURN dat_evd_free(DAT_EVD_HANDLE evd_handle);

/* Endpoints */

DAT_RETURN dat_ep_create(DAT_IA_HANDLE ia_handle,
			 DAT_PZ_HANDLE pz_handle,
			 DAT_EVD_HANDLE recv_evd_handle,
			 DAT_EVD_HANDLE request_evd_handle,
			 DAT_EVD_HANDLE connect_evd_handle,
			 const DAT_EP_ATTR *ep_attributes,
			 DAT_EP_HANDLE *ep_handle);

DAT_RETURN dat_ep_create_with_srq(DAT_IA_HANDLE ia_handle,
				  DAT_PZ_HANDLE pz_handle,
				  DAT_EVD_HANDLE recv_evd_handle,
				  DAT_EVD_HANDLE request_evd_handle,
				  DAT_EVD_HANDLE connect_evd_handle,
				  DAT_SRQ_HANDLE srq_handle,
				  const DAT_EP_ATTR *ep_attributes,
				  DAT_EP_HANDLE *ep_handle);

DAT_RETURN dat_ep_query(DAT_EP_HANDLE ep_handle,
			DAT_EP_PARAM_MASK ep_param_mask,
			DAT_EP_PARAM *ep_param);

DAT_RETURN dat_ep_modify(DAT_EP_HANDLE ep_handle,
			 DAT_EP_PARAM_MASK ep_param_mask,
			 const DAT_EP_PARAM *ep_param);

DAT_RETURN dat_ep_connect(DAT_EP_HANDLE ep_handle,
			  DAT_IA_ADDRESS_PTR remote_ia_address,
			  DAT_CONN_QUAL remote_conn_qual,
			  DAT_TIMEOUT timeout,
			  DAT_COUNT private_data_size,
			  const DAT_PVOID private_data,
			  DAT_QOS quality_of_service,
			  DAT_CONNECT_FLAGS connect_flags);

DAT_RETURN dat_ep_dup_connect(DAT_EP_HANDLE ep_handle,
			      DAT_EP_HANDLE ep_dup_handle,
			      DAT_TIMEOUT timeout,
			      DAT_COUNT private_data_size,
			      const DAT_PVOID private_data,
			      DAT_QOS quality_of_service);

DAT_RETURN dat_ep_disconnect(DAT_EP_HANDLE ep_handle,
			     DAT_CLOSE_FLAGS close_flags);

DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE ep_handle,
			    DAT_COUNT num_segments,
			    DAT_LMR_TRIPLET *local_iov,
			    DAT_DTO_COOKIE user_cookie,
			    DAT_COMPLETION_FLAGS completion_flags);

DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE ep_handle,
			    DAT_COUNT num_segments,
			    DAT_LMR_TRIPLET *local_iov,
			    DAT_DTO_COOKIE user_cookie,
			    DAT_COMPLETION_FLAGS completion_flags);

DAT_RETURN dat_ep_post_rdma_read(DAT_EP_HANDLE ep_handle,
				 DAT_COUNT num_segments,
				 DAT_LMR_TRIPLET *local_iov,
				 DAT_DTO_COOKIE user_cookie,
				 const DAT_RMR_TRIPLET *remote_iov,
				 DAT_COMPLETION_FLAGS completion_flags);

DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE ep_handle,
				  DAT_COUNT num_segments,
				  DAT_LMR_TRIPLET *local_iov,
				  DAT_DTO_COOKIE user_cookie,
				  const DAT_RMR_TRIPLET *remote_iov,
				  DAT_COMPLETION_FLAGS completion_flags);

DAT_RETURN dat_ep_get_status(DAT_EP_HANDLE ep_handle,
			     DAT_EP_STATE *ep_state,
			     DAT_BOOLEAN *recv_idle,
			     DAT_BOOLEAN *request_idle);

DAT_RETURN dat_ep_free(DAT_EP_HANDLE ep_handle);

DAT_RETURN dat_ep_reset(DAT_EP_HANDLE ep_handle);

DAT_RETURN dat_ep_recv_query(DAT_EP_HANDLE ep_handle,
			     DAT_COUNT *nbufs_allocated,
			     DAT_COUNT *bufs_alloc_span);

DAT_RETURN dat_ep_set_watermark(DAT_EP_HANDLE ep_handle,
				DAT_COUNT soft_high_watermark,
				DAT_COUNT hard_high_watermark);

/* Local Memory Regions (creation is flavour-specific) */

DAT_RETURN dat_lmr_query(DAT_LMR_HANDLE lmr_handle,
			 DAT_LMR_PARAM_MASK lmr_param_mask,
			 DAT_LMR_PARAM *lmr_param);

DAT_RETURN dat_lmr_free(DAT_LMR_HANDLE lmr_handle);

/* Make RDMA-read data visible to the CPU / CPU writes visible to RDMA. */
DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE ia_handle,
				  const DAT_LMR_TRIPLET *local_segments,
				  DAT_VLEN num_segments);

DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE ia_handle,
				   const DAT_LMR_TRIPLET *local_segments,
				   DAT_VLEN num_segments);

/* Remote Memory Regions */

DAT_RETURN dat_rmr_create(DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE *rmr_handle);

DAT_RETURN dat_rmr_query(DAT_RMR_HANDLE rmr_handle,
			 DAT_RMR_PARAM_MASK rmr_param_mask,
			 DAT_RMR_PARAM *rmr_param);

DAT_RETURN dat_rmr_bind(DAT_RMR_HANDLE rmr_handle,
			const DAT_LMR_TRIPLET *lmr_triplet,
			DAT_MEM_PRIV_FLAGS mem_priv,
			DAT_EP_HANDLE ep_handle,
			DAT_RMR_COOKIE user_cookie,
			DAT_COMPLETION_FLAGS completion_flags,
			DAT_RMR_CONTEXT *rmr_context);

DAT_RETURN dat_rmr_free(DAT_RMR_HANDLE rmr_handle);

/* Public Service Points */

DAT_RETURN dat_psp_create(DAT_IA_HANDLE ia_handle,
			  DAT_CONN_QUAL conn_qual,
			  DAT_EVD_HANDLE cr_evd_handle,
			  DAT_PSP_FLAGS psp_flags,
			  DAT_PSP_HANDLE *psp_handle);

DAT_RETURN dat_psp_create_any(DAT_IA_HANDLE ia_handle,
			      DAT_CONN_QUAL *conn_qual,
			      DAT_EVD_HANDLE cr_evd_handle,
			      DAT_PSP_FLAGS psp_flags,
			      DAT_PSP_HANDLE *psp_handle);

DAT_RETURN dat_psp_query(DAT_PSP_HANDLE psp_handle,
			 DAT_PSP_PARAM_MASK psp_param_mask,
			 DAT_PSP_PARAM *psp_param);

DAT_RETURN dat_psp_free(DAT_PSP_HANDLE psp_handle);

/* Reserved Service Points */

DAT_RETURN dat_rsp_create(DAT_IA_HANDLE ia_handle,
			  DAT_CONN_QUAL conn_qual,
			  DAT_EP_HANDLE ep_handle,
			  DAT_EVD_HANDLE cr_evd_handle,
			  DAT_RSP_HANDLE *rsp_handle);

DAT_RETURN dat_rsp_query(DAT_RSP_HANDLE rsp_handle,
			 DAT_RSP_PARAM_MASK rsp_param_mask,
			 DAT_RSP_PARAM *rsp_param);

DAT_RETURN dat_rsp_free(DAT_RSP_HANDLE rsp_handle);

/* Protection Zones */

DAT_RETURN dat_pz_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE *pz_handle);

DAT_RETURN dat_pz_query(DAT_PZ_HANDLE pz_handle,
			DAT_PZ_PARAM_MASK pz_param_mask,
			DAT_PZ_PARAM *pz_param);

DAT_RETURN dat_pz_free(DAT_PZ_HANDLE pz_handle);

/* Shared Receive Queues */

DAT_RETURN dat_srq_create(DAT_IA_HANDLE ia_handle,
			  DAT_PZ_HANDLE pz_handle,
			  DAT_SRQ_ATTR *srq_attr,
			  DAT_SRQ_HANDLE *srq_handle);

DAT_RETURN dat_srq_free(DAT_SRQ_HANDLE srq_handle);

DAT_RETURN dat_srq_post_recv(DAT_SRQ_HANDLE srq_handle,
			     DAT_COUNT num_segments,
			     DAT_LMR_TRIPLET *local_iov,
			     DAT_DTO_COOKIE user_cookie);

DAT_RETURN dat_srq_query(DAT_SRQ_HANDLE srq_handle,
			 DAT_SRQ_PARAM_MASK srq_param_mask,
			 DAT_SRQ_PARAM *srq_param);

DAT_RETURN dat_srq_resize(DAT_SRQ_HANDLE srq_handle,
			  DAT_COUNT srq_max_recv_dto);

DAT_RETURN dat_srq_set_lw(DAT_SRQ_HANDLE srq_handle, DAT_COUNT low_watermark);

/* Registry and errors */

/*
 * Copies up to max_to_return entries into the caller's
 * dat_provider_list[i] buffers; max_to_return 0 only counts.
 */
DAT_RETURN dat_registry_list_providers(DAT_COUNT max_to_return,
				       DAT_COUNT *entries_returned,
				       DAT_PROVIDER_INFO *(dat_provider_list[]));

/* Static strings naming the type (major) and subtype (minor) of a status. */
DAT_RETURN dat_strerror(DAT_RETURN status,
			const char **major_message,
			const char **minor_message);

#ifdef __cplusplus
}
#endif

#endif /* included from udat.h or kdat.h */
#endif /* DAT_DAT_H_ */
