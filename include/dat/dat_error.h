/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dat/dat_error.h - DAT_RETURN, the status every DAT call returns.
 *
 * A DAT_RETURN packs three fields into 32 bits:
 *
 *    31  30 29                       16 15                        0
 *   +------+---------------------------+---------------------------+
 *   | class|  type (DAT_RETURN_TYPE)   | subtype (DAT_RETURN_SUBTYPE)
 *   +------+---------------------------+---------------------------+
 *
 * DAT_SUCCESS is 0.  A failure has DAT_CLASS_ERROR set, one type that
 * names the kind of failure and, where it helps, a subtype that says
 * which argument, handle or state was at fault:
 *
 *     DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ)
 *
 * Compare types with DAT_GET_TYPE(ret) == DAT_INVALID_STATE, never the
 * whole value, since the class and subtype bits may be set.
 */
#ifndef DAT_ERROR_H_
#define DAT_ERROR_H_

#include <dat/dat_platform_specific.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Class bits (31-30). */
#define DAT_CLASS_ERROR		0x80000000U
#define DAT_CLASS_WARNING	0x40000000U
#define DAT_CLASS_SUCCESS	0x00000000U

/* Field masks. */
#define DAT_TYPE_MASK		0x3FFF0000U	/* bits 29-16 */
#define DAT_SUBTYPE_MASK	0x0000FFFFU	/* bits 15-0 */

#define DAT_IS_WARNING(status)	((DAT_UINT32)(status) & DAT_CLASS_WARNING)
#define DAT_GET_TYPE(status)	((DAT_UINT32)(status) & DAT_TYPE_MASK)
#define DAT_GET_SUBTYPE(status)	((DAT_UINT32)(status) & DAT_SUBTYPE_MASK)

/*
 * Build an error status from a type and a subtype (0 for none).  Not in
 * the 1.2 headers; every provider needs it, so it is given here once.
 */
#define DAT_ERROR(type, subtype) \
	((DAT_RETURN)(DAT_CLASS_ERROR | (DAT_UINT32)(type) | \
		      (DAT_UINT32)(subtype)))

typedef DAT_UINT32 DAT_RETURN;

/* Types (bits 29-16). */
typedef enum dat_return_type {
	DAT_SUCCESS			= 0x00000000,
	/* the IA was closed or the EVD destroyed under the operation */
	DAT_ABORT			= 0x00010000,
	DAT_CONN_QUAL_IN_USE		= 0x00020000,
	DAT_INSUFFICIENT_RESOURCES	= 0x00030000,
	/* the provider found an internal fault; not the consumer's doing */
	DAT_INTERNAL_ERROR		= 0x00040000,
	DAT_INVALID_HANDLE		= 0x00050000,
	DAT_INVALID_PARAMETER		= 0x00060000,
	/* the object is not in a state that allows the operation */
	DAT_INVALID_STATE		= 0x00070000,
	/* a receiving buffer is too small for the data */
	DAT_LENGTH_ERROR		= 0x00080000,
	DAT_MODEL_NOT_SUPPORTED		= 0x00090000,
	/* no registered provider matches the name, version or threading */
	DAT_PROVIDER_NOT_FOUND		= 0x000A0000,
	/* memory access not allowed by the LMR/RMR privileges */
	DAT_PRIVILEGES_VIOLATION	= 0x000B0000,
	/* memory access across protection zones */
	DAT_PROTECTION_VIOLATION	= 0x000C0000,
	DAT_QUEUE_EMPTY			= 0x000D0000,
	DAT_QUEUE_FULL			= 0x000E0000,
	/* a wait ended without the event (uDAPL) */
	DAT_TIMEOUT_EXPIRED		= 0x000F0000,
	DAT_PROVIDER_ALREADY_REGISTERED	= 0x00100000,
	DAT_PROVIDER_IN_USE		= 0x00110000,
	/* the remote address is malformed, unsupported or unreachable */
	DAT_INVALID_ADDRESS		= 0x00120000,
	/* a blocking wait was interrupted by a signal */
	DAT_INTERRUPTED_CALL		= 0x00130000,
	/* no connection qualifier left to hand out */
	DAT_CONN_QUAL_UNAVAILABLE	= 0x00140000,
	/* the provider does not implement the operation */
	DAT_NOT_IMPLEMENTED		= 0x0FFF0000
} DAT_RETURN_TYPE;

/* DAT 1.0 spelling of DAT_PROVIDER_NOT_FOUND. */
#define DAT_NAME_NOT_FOUND	DAT_PROVIDER_NOT_FOUND

/*
 * Subtypes (bits 15-0).  The values are positional: entries are only
 * ever appended, never inserted, so this order is part of the ABI.
 */
typedef enum dat_return_subtype {
	DAT_NO_SUBTYPE,

	/* DAT_ABORT */
	DAT_SUB_INTERRUPTED,

	/* DAT_INSUFFICIENT_RESOURCES */
	DAT_RESOURCE_MEMORY,
	DAT_RESOURCE_DEVICE,
	DAT_RESOURCE_TEP,		/* transport endpoint (QP) */
	DAT_RESOURCE_TEVD,		/* transport event queue (CQ) */
	DAT_RESOURCE_PROTECTION_DOMAIN,
	DAT_RESOURCE_MEMORY_REGION,	/* adapter memory for an LMR or RMR */
	DAT_RESOURCE_ERROR_HANDLER,
	DAT_RESOURCE_CREDITS,		/* e.g. RDMA Read credits as target */
	DAT_RESOURCE_SRQ,

	/* DAT_INVALID_HANDLE */
	DAT_INVALID_HANDLE_IA,
	DAT_INVALID_HANDLE_EP,
	DAT_INVALID_HANDLE_LMR,
	DAT_INVALID_HANDLE_RMR,
	DAT_INVALID_HANDLE_PZ,
	DAT_INVALID_HANDLE_PSP,
	DAT_INVALID_HANDLE_RSP,
	DAT_INVALID_HANDLE_CR,
	DAT_INVALID_HANDLE_CNO,
	DAT_INVALID_HANDLE_EVD_CR,
	DAT_INVALID_HANDLE_EVD_REQUEST,
	DAT_INVALID_HANDLE_EVD_RECV,
	DAT_INVALID_HANDLE_EVD_CONN,
	DAT_INVALID_HANDLE_EVD_ASYNC,
	DAT_INVALID_HANDLE_SRQ,
	/* by argument position */
	DAT_INVALID_HANDLE1,
	DAT_INVALID_HANDLE2,
	DAT_INVALID_HANDLE3,
	DAT_INVALID_HANDLE4,
	DAT_INVALID_HANDLE5,
	DAT_INVALID_HANDLE6,
	DAT_INVALID_HANDLE7,
	DAT_INVALID_HANDLE8,
	DAT_INVALID_HANDLE9,
	DAT_INVALID_HANDLE10,

	/* DAT_INVALID_PARAMETER, by argument position */
	DAT_INVALID_ARG1,
	DAT_INVALID_ARG2,
	DAT_INVALID_ARG3,
	DAT_INVALID_ARG4,
	DAT_INVALID_ARG5,
	DAT_INVALID_ARG6,
	DAT_INVALID_ARG7,
	DAT_INVALID_ARG8,
	DAT_INVALID_ARG9,
	DAT_INVALID_ARG10,

	/* DAT_INVALID_STATE: Endpoint */
	DAT_INVALID_STATE_EP_UNCONNECTED,
	DAT_INVALID_STATE_EP_ACTCONNPENDING,
	DAT_INVALID_STATE_EP_PASSCONNPENDING,
	DAT_INVALID_STATE_EP_TENTCONNPENDING,
	DAT_INVALID_STATE_EP_CONNECTED,
	DAT_INVALID_STATE_EP_DISCONNECTED,
	DAT_INVALID_STATE_EP_RESERVED,
	DAT_INVALID_STATE_EP_COMPLPENDING,
	DAT_INVALID_STATE_EP_DISCPENDING,
	DAT_INVALID_STATE_EP_PROVIDERCONTROL,
	DAT_INVALID_STATE_EP_NOTREADY,
	DAT_INVALID_STATE_EP_RECV_WATERMARK,
	DAT_INVALID_STATE_EP_PZ,
	DAT_INVALID_STATE_EP_EVD_REQUEST,
	DAT_INVALID_STATE_EP_EVD_RECV,
	DAT_INVALID_STATE_EP_EVD_CONNECT,
	DAT_INVALID_STATE_EP_UNCONFIGURED,
	DAT_INVALID_STATE_EP_UNCONFRESERVED,
	DAT_INVALID_STATE_EP_UNCONFPASSIVE,
	DAT_INVALID_STATE_EP_UNCONFTENTATIVE,

	/* DAT_INVALID_STATE: CNO */
	DAT_INVALID_STATE_CNO_IN_USE,
	DAT_INVALID_STATE_CNO_DEAD,

	/*
	 * DAT_INVALID_STATE: EVD.  An EVD's state has three independent
	 * parts: enabled or disabled, waitable or unwaitable, and how it
	 * notifies (notify, solicited, or threshold - the last uDAPL only).
	 */
	DAT_INVALID_STATE_EVD_OPEN,
	DAT_INVALID_STATE_EVD_ENABLED,
	DAT_INVALID_STATE_EVD_DISABLED,
	DAT_INVALID_STATE_EVD_WAITABLE,
	DAT_INVALID_STATE_EVD_UNWAITABLE,
	DAT_INVALID_STATE_EVD_IN_USE,
	DAT_INVALID_STATE_EVD_CONFIG_NOTIFY,
	DAT_INVALID_STATE_EVD_CONFIG_SOLICITED,
	DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD,
	DAT_INVALID_STATE_EVD_WAITER,
	DAT_INVALID_STATE_EVD_ASYNC,	/* an async EVD is required */

	/* DAT_INVALID_STATE: IA, LMR, PZ */
	DAT_INVALID_STATE_IA_IN_USE,
	DAT_INVALID_STATE_LMR_IN_USE,
	DAT_INVALID_STATE_LMR_FREE,
	DAT_INVALID_STATE_PZ_IN_USE,
	DAT_INVALID_STATE_PZ_FREE,

	/* DAT_INVALID_STATE: SRQ */
	DAT_INVALID_STATE_SRQ_OPERATIONAL,
	DAT_INVALID_STATE_SRQ_ERROR,
	DAT_INVALID_STATE_SRQ_IN_USE,	/* still used by an Endpoint */

	/* DAT_PRIVILEGES_VIOLATION */
	DAT_PRIVILEGES_READ,
	DAT_PRIVILEGES_WRITE,
	DAT_PRIVILEGES_RDMA_READ,
	DAT_PRIVILEGES_RDMA_WRITE,

	/* DAT_PROTECTION_VIOLATION */
	DAT_PROTECTION_READ,
	DAT_PROTECTION_WRITE,
	DAT_PROTECTION_RDMA_READ,
	DAT_PROTECTION_RDMA_WRITE,

	/*
	 * DAT_INVALID_ADDRESS: well formed but not usable by DAT (e.g.
	 * multicast or broadcast), known to be unreachable, or malformed.
	 */
	DAT_INVALID_ADDRESS_UNSUPPORTED,
	DAT_INVALID_ADDRESS_UNREACHABLE,
	DAT_INVALID_ADDRESS_MALFORMED,

	/* DAT_PROVIDER_NOT_FOUND: which part of the lookup failed */
	DAT_NAME_NOT_REGISTERED,
	DAT_MAJOR_NOT_FOUND,
	DAT_MINOR_NOT_FOUND,
	DAT_THREAD_SAFETY_NOT_FOUND
} DAT_RETURN_SUBTYPE;

#ifdef __cplusplus
}
#endif

#endif /* DAT_ERROR_H_ */
