/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * kdat character-device ABI (/dev/kdat), shared verbatim by the kernel
 * module and the user library (libdat), C and C++.
 *
 * Rules of this ABI
 *  - Fixed-width types only, no pointers except as __u64, explicit padding,
 *    natural alignment of every field, no implicit holes.  64-bit fields
 *    are __aligned_u64: 32-bit x86 aligns a plain __u64 to 4 bytes, and
 *    its structs must be laid out and aligned as the 64-bit kernel's.
 *  - Every ioctl argument starts with struct kdat_ioc_hdr: `size` is the
 *    size of the struct the caller was built with.  The kernel accepts a
 *    smaller size (older library: missing fields read as zero) and a
 *    larger one only if every byte it does not know is zero.  Reserved
 *    and padding fields must be zero.  Unknown ioctl numbers: ENOTTY.
 *  - Handles are per-open-file IDs (__u32, 0 is DAT_HANDLE_NULL), never
 *    kernel pointers.  An ID of another open file, a freed or a wrong-type
 *    ID is refused with DAT_INVALID_HANDLE.
 *  - Every ioctl returns 0 and puts the DAT_RETURN in hdr.status, or
 *    returns -1 with errno for an ABI error (EFAULT, EINVAL on a bad hdr,
 *    E2BIG for unknown non-zero trailing bytes, ENOTTY).
 *  - Rings (SRQ post ring, event ring) are mmapped at the offset the
 *    creating ioctl returns.  Each starts with struct kdat_ring_hdr, which
 *    describes itself (entry size, entry count, entry offset), io_uring
 *    style; user code never hard-codes the layout.
 */
#ifndef KDAT_ABI_H
#define KDAT_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

#define KDAT_ABI_VERSION	2	/* 2: evd_wait wake_seq, EVD_CTL, EP_MODIFY */
/*
 * The oldest ABI a library may speak and still be served by a module built
 * from this header (KDAT_IOC_VERSION reports it as min_abi_version).
 */
#define KDAT_ABI_MIN_COMPAT	2
#define KDAT_DEVICE_NAME	"kdat"		/* /dev/kdat */
#define KDAT_NAME_LEN		64
#define KDAT_ADDR_LEN		128		/* a struct sockaddr_storage */
#define KDAT_MAX_IOV		16
#define KDAT_PDATA_LEN		196

struct kdat_ioc_hdr {
	__u32 size;		/* sizeof the argument struct */
	__u32 status;		/* out: the DAT_RETURN */
};

/* One LMR triplet as DAT 1.2 lays it out (24 bytes). */
struct kdat_useg {
	__u32 lmr_context;
	__u32 pad;
	__aligned_u64 addr;
	__aligned_u64 length;
};

/* ---- rings ------------------------------------------------------------ */

/*
 * A single-producer/single-consumer ring of fixed-size entries.  Indices
 * are free running __u32; slot = index & (entries - 1).
 *   SRQ post ring:  user produces (tail), kernel consumes (head).
 *   event ring:     kernel produces (tail), user consumes (head).
 * The consumer publishes head with a release store after it is done with
 * an entry; the producer publishes tail with a release store after it
 * wrote one.  The kernel never trusts a user-written index: it clamps it.
 */
struct kdat_ring_hdr {
	__u32 head;
	__u32 pad0[15];		/* head and tail on their own cache lines */
	__u32 tail;
	__u32 pad1[15];
	__u32 flags;		/* KDAT_RING_* set by the kernel */
	__u32 entries;		/* power of two */
	__u32 entry_size;
	__u32 entry_offset;	/* from the start of the mapping */
	__u32 dropped;		/* event ring: events lost to overflow */
	__u32 wakes;		/* event ring: KDAT_EVD_CTL_* calls so far */
	/*
	 * SRQ post ring: buffers of this SRQ whose completion the kernel
	 * counted back without the user seeing an event for it (lost to a
	 * full event ring, left in a freed EVD, or naming no EP any more).
	 * Free running; the user's count of outstanding buffers is
	 * posted - returned by events - refused - unseen.
	 */
	__u32 unseen;
	/*
	 * EP send ring (KDAT_FEATURE_SEND_RING), written by the kernel only:
	 * ep_state is the EP's DAT_EP_STATE (a post needs
	 * DAT_EP_STATE_CONNECTED), retired counts the ring's entries that
	 * left the send queue (completed, flushed or refused: free running),
	 * depth is max_request_dtos.  The user may have
	 * depth - (tail - retired) more entries in flight.
	 */
	__u32 ep_state;
	__u32 retired;
	__u32 depth;
	__u32 pad2[6];
};

/* SRQ post ring: the kernel has no buffer left; kick it after posting. */
#define KDAT_RING_NEED_KICK	0x1
/*
 * SRQ post ring: the SRQ is in the error state (or its device is gone):
 * it takes no buffer, dat_srq_post_recv is DAT_INSUFFICIENT_RESOURCES.
 * Entries already in the ring are refused with that code.
 */
#define KDAT_RING_SRQ_ERROR	0x2

/*
 * EP send ring entry (KDAT_FEATURE_SEND_RING): one dat_ep_post_send,
 * _post_rdma_write, _post_rdma_read or IB-extension request, the fields
 * of struct kdat_ioc_ep_post.  An entry has room for the EP's
 * max_request_iov segments (entry_size - offsetof(seg) bytes of them);
 * the ring has at least max_request_dtos entries.  The kernel copies each
 * entry once and checks it as KDAT_IOC_EP_POST would: one it refuses is
 * never posted and completes, in order, as a DTO event on the request
 * EVD with an error status (DAT_DTO_ERR_LOCAL_PROTECTION, _LOCAL_LENGTH,
 * _LOCAL_EP, or DAT_DTO_ERR_FLUSHED for one the EP can no longer send).
 * For the ring header, KDAT_RING_NEED_KICK means the send queue is idle:
 * no completion will drain the ring, kick it (KDAT_IOC_EP_KICK) after
 * publishing the tail.
 *
 * A kick (kdat_ioc_ep_op.value = KDAT_EP_KICK_*) posts what the ring
 * holds.  By default a software device (rxe) then runs the request, its
 * peer's response and the completion on the kicking CPU before the call
 * returns: lowest latency for a request whose poster waits for it.  With
 * KDAT_EP_KICK_DEFER the device does that work in its own context
 * (softirq / ksoftirqd), the call returns at once and the send queue stays
 * busy, so the posts that follow are drained by the completion without a
 * kick.  libdat defers a post that asks for no completion
 * (DAT_COMPLETION_SUPPRESS_FLAG) when it continues a stream of a consumer
 * that sleeps for its events (user/ep.cpp has the rule).  On a hardware
 * device both are one doorbell.
 */
#define KDAT_EP_KICK_DEFER	0x1
#define KDAT_EP_KICK_FLAGS_ALL	KDAT_EP_KICK_DEFER

struct kdat_ep_sqe {
	__u32 op;		/* KDAT_POST_* except KDAT_POST_RECV */
	__u32 flags;		/* DAT_COMPLETION_FLAGS */
	__u32 nseg;
	__u32 rmr_context;
	__aligned_u64 cookie;
	__aligned_u64 remote_addr;
	__aligned_u64 remote_length;
	__aligned_u64 compare_add;
	__aligned_u64 swap;
	__u32 immed_data;
	__u32 reserved;		/* zero */
	struct kdat_useg seg[KDAT_MAX_IOV];
};

struct kdat_srq_wqe {
	__aligned_u64 cookie;
	__u32 nseg;
	__u32 pad;
	struct kdat_useg seg[KDAT_MAX_IOV];
};

/* Event ring entry: one DAT_EVENT with handles as IDs. */
struct kdat_uevent {
	__u32 event_number;	/* DAT_EVENT_NUMBER */
	__u32 evd;
	__u32 handle;		/* EP (DTO, connection), SRQ/EP/IA (async) */
	__u32 status;		/* DAT_DTO_COMPLETION_STATUS */
	__aligned_u64 cookie;		/* DTO: user cookie; SRQ async: cookie */
	__aligned_u64 length;		/* DTO: transfered_length */
	/*
	 * DTO events use none of reason, cr, sp: with KDAT_FEATURE_IB_EXT
	 * their slots carry the operation that completed (KDAT_UDTO_*, 0
	 * from a module without the feature), KDAT_UDTO_F_* flags and, with
	 * KDAT_UDTO_F_IMMED, the immediate data of a receive (host order).
	 */
	union {
		__u32 reason;	/* async: reason */
		__u32 dto_op;	/* DTO: KDAT_UDTO_* */
	};
	union {
		__u32 cr;	/* connection request: the CR */
		__u32 dto_flags; /* DTO: KDAT_UDTO_F_* */
	};
	union {
		__u32 sp;	/* connection request: the PSP or RSP */
		__u32 immed_data; /* DTO with KDAT_UDTO_F_IMMED */
	};
	__u32 pdata_size;	/* connection events */
	__aligned_u64 conn_qual;	/* connection request */
	__aligned_u64 pointer;		/* software event */
	__u8 pdata[KDAT_PDATA_LEN];
	__u32 srq;		/* DTO: the SRQ the buffer came from, or 0 */
};

/* kdat_uevent.dto_op: the operation a DTO completion event is about. */
#define KDAT_UDTO_UNKNOWN	0	/* module without KDAT_FEATURE_IB_EXT */
#define KDAT_UDTO_SEND		1
#define KDAT_UDTO_RECV		2	/* a send (with or without immediate) */
#define KDAT_UDTO_RDMA_WRITE	3
#define KDAT_UDTO_RDMA_READ	4
#define KDAT_UDTO_RDMA_WRITE_IMMED 5	/* the requester's side */
#define KDAT_UDTO_RECV_RDMA_IMMED 6	/* a receive an RDMA write with imm took */
#define KDAT_UDTO_CMP_AND_SWAP	7
#define KDAT_UDTO_FETCH_AND_ADD	8
/* kdat_uevent.dto_flags */
#define KDAT_UDTO_F_IMMED	0x1	/* immed_data is valid */

/* ---- attributes ----------------------------------------------------------- */

/* kdat_uia_attr.flags: an SRQ EP's PZ may differ from its SRQ's */
#define KDAT_UIA_SRQ_EP_PZ_DIFF		0x1
/* the module does the IB extensions (KDAT_FEATURE_IB_EXT) on this IA */
#define KDAT_UIA_IB_EXT			0x2
/* ... and the device does atomics (else they are DAT_MODEL_NOT_SUPPORTED) */
#define KDAT_UIA_ATOMICS		0x4

struct kdat_uia_attr {
	char adapter_name[KDAT_NAME_LEN];
	char vendor_name[KDAT_NAME_LEN];
	__u8 ia_address[KDAT_ADDR_LEN];
	__u32 hw_ver;
	__u32 flags;		/* KDAT_UIA_* */
	__aligned_u64 fw_ver;
	__s32 max_eps;
	__s32 max_dto_per_ep;
	__s32 max_rdma_read_per_ep_in;
	__s32 max_rdma_read_per_ep_out;
	__s32 max_evds;
	__s32 max_evd_qlen;
	__s32 max_iov_segments_per_dto;
	__s32 max_lmrs;
	__aligned_u64 max_lmr_block_size;
	__s32 max_pzs;
	__s32 max_srqs;
	__s32 max_ep_per_srq;
	__s32 max_recv_per_srq;
	__aligned_u64 max_message_size;
	__aligned_u64 max_rdma_size;
};

struct kdat_uep_attr {
	__aligned_u64 max_message_size;
	__aligned_u64 max_rdma_size;
	__u32 recv_completion_flags;
	__u32 request_completion_flags;
	__s32 max_recv_dtos;
	__s32 max_request_dtos;
	__s32 max_recv_iov;
	__s32 max_request_iov;
	__s32 max_rdma_read_in;
	__s32 max_rdma_read_out;
	__s32 srq_soft_hw;
	__s32 max_rdma_read_iov;
	__s32 max_rdma_write_iov;
	__u32 pad;
};

/*
 * kdat_ioc_lmr_create.priv: besides DAT 1.2's DAT_MEM_PRIV_* bits, with
 * KDAT_FEATURE_IB_EXT, remote atomics (the value of DAT 2.0's
 * DAT_IB_MEM_PRIV_REMOTE_ATOMIC).
 */
#define KDAT_MEM_PRIV_REMOTE_ATOMIC	0x40

/* ---- ioctl arguments --------------------------------------------------- */

/*
 * What the module speaks.  A module older than these fields leaves them
 * zero (hdr.size rules): min_abi_version 0 then means abi_version, and
 * features 0 means none of the KDAT_FEATURE_* bits.
 */
struct kdat_ioc_version {
	struct kdat_ioc_hdr hdr;
	__u32 abi_version;	/* out: the ABI the module speaks */
	__u32 pad;
	__u32 min_abi_version;	/* out: the oldest library ABI it serves */
	__u32 reserved;		/* zero */
	__aligned_u64 features;		/* out: KDAT_FEATURE_* */
};

/*
 * Optional capabilities within one ABI version (KDAT_IOC_VERSION
 * features); what an ABI version itself defines needs no bit.
 *   VERSION_RANGE  min_abi_version and features are filled in
 */
#define KDAT_FEATURE_VERSION_RANGE	(1ULL << 0)
/*
 *   SRQ_EP_BROKEN  kdat_ioc_ia_open takes flags, KDAT_IA_OPEN_SRQ_EP_BROKEN
 */
#define KDAT_FEATURE_SRQ_EP_BROKEN	(1ULL << 1)
/*
 *   CNO            Consumer Notification Objects: KDAT_IOC_CNO_CREATE,
 *		    KDAT_IOC_CNO_WAIT, KDAT_IOC_EVD_NOTIFY, KDAT_TYPE_CNO
 */
#define KDAT_FEATURE_CNO		(1ULL << 2)
/*
 *   RSP  KDAT_IOC_RSP_CREATE/_QUERY, KDAT_IOC_FREE of DAT_HANDLE_TYPE_RSP,
 *        kdat_ioc_cr_query.local_ep
 */
#define KDAT_FEATURE_RSP		(1ULL << 3)
/*
 *   IB_EXT  KDAT_POST_RDMA_WRITE_IMMED, _CMP_AND_SWAP, _FETCH_AND_ADD
 *	     (kdat_ioc_ep_post's trailing fields), DTO events carry their
 *	     operation and immediate data (kdat_uevent.dto_op ...), and
 *	     KDAT_MEM_PRIV_REMOTE_ATOMIC in kdat_ioc_lmr_create.priv
 */
#define KDAT_FEATURE_IB_EXT		(1ULL << 4)
/*
 *   SEND_RING  kdat_ioc_ep_create returns an EP send ring (ring_offset,
 *		ring_size: struct kdat_ep_sqe entries), KDAT_IOC_EP_KICK
 */
#define KDAT_FEATURE_SEND_RING		(1ULL << 5)
/* KDAT_EVD_CTL_POLL; older modules answer it DAT_INVALID_PARAMETER */
#define KDAT_FEATURE_EVD_POLL		(1ULL << 6)
#define KDAT_FEATURES_ALL		(KDAT_FEATURE_VERSION_RANGE | \
					 KDAT_FEATURE_SRQ_EP_BROKEN | \
					 KDAT_FEATURE_CNO | \
					 KDAT_FEATURE_RSP | \
					 KDAT_FEATURE_IB_EXT | \
					 KDAT_FEATURE_SEND_RING | \
					 KDAT_FEATURE_EVD_POLL)

struct kdat_ioc_ia_list {
	struct kdat_ioc_hdr hdr;
	__u32 max;		/* entries at names */
	__u32 count;		/* out: IAs known (may exceed max) */
	__aligned_u64 names;		/* char[max][KDAT_NAME_LEN] */
};

struct kdat_ioc_ia_open {
	struct kdat_ioc_hdr hdr;
	char name[KDAT_NAME_LEN];
	__s32 async_qlen;
	__u32 ia;		/* out */
	__u32 async_evd;	/* out */
	__u32 async_ring_size;	/* out: bytes to mmap */
	__aligned_u64 async_ring_offset; /* out: mmap offset of its event ring */
	/* from here on: only with KDAT_FEATURE_SRQ_EP_BROKEN */
	__u32 flags;		/* KDAT_IA_OPEN_* */
	__u32 reserved;		/* zero */
};

/*
 * kdat_ioc_ia_open.flags (unknown bits: DAT_INVALID_PARAMETER):
 *   SRQ_EP_BROKEN  every EP with an SRQ gets exactly one
 *		    DAT_ASYNC_ERROR_EP_BROKEN (reason DAT_EP_TRANSFER_TO_ERROR)
 *		    on the async EVD per connection that had its QP, once the
 *		    connection ended (disconnect by either side, rejection,
 *		    error) and every receive the EP took from the SRQ is on
 *		    its recv EVD: right after the connection event that ends
 *		    the connection.  The signal IB gives as LAST_WQE_REACHED,
 *		    which DAT 2.0 providers turn into EP_BROKEN.  None for an
 *		    EP reset or freed before that point, and none when a QP
 *		    error already raised EP_BROKEN for that connection.
 */
#define KDAT_IA_OPEN_SRQ_EP_BROKEN	0x1
#define KDAT_IA_OPEN_FLAGS_ALL		KDAT_IA_OPEN_SRQ_EP_BROKEN

struct kdat_ioc_ia_close {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 flags;		/* DAT_CLOSE_FLAGS */
};

struct kdat_ioc_ia_query {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 async_evd;	/* out */
	struct kdat_uia_attr attr; /* out */
};

/* Free a PZ, EVD, LMR, SRQ, EP, PSP or RSP; reject a CR. */
struct kdat_ioc_free {
	struct kdat_ioc_hdr hdr;
	__u32 handle;
	__u32 type;		/* DAT_HANDLE_TYPE of the kernel flavour */
};

struct kdat_ioc_pz_create {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 pz;		/* out */
};

struct kdat_ioc_evd_create {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__s32 qlen;		/* in/out: DAT_HW_DEFAULT -> chosen */
	__u32 flags;		/* DAT_EVD_FLAGS */
	__u32 evd;		/* out */
	__aligned_u64 ring_offset;	/* out */
	__aligned_u64 ring_size;	/* out: bytes to mmap */
};

/*
 * Block until the event ring holds @threshold events, the timeout ends,
 * the EVD is made unwaitable (DAT_INVALID_STATE), or - with
 * KDAT_WAIT_SEQ - the ring header's `wakes` differs from @wake_seq (the
 * value the caller read before it last looked at the ring: a library
 * that queues events of its own wakes its waiter through
 * KDAT_EVD_CTL_WAKE without a lost-wakeup window).
 */
struct kdat_ioc_evd_wait {
	struct kdat_ioc_hdr hdr;
	__u32 evd;
	__s32 threshold;
	__u32 timeout_us;	/* 0xffffffff: forever */
	__u32 count;		/* out: events in the ring */
	__u32 flags;		/* KDAT_WAIT_* */
	__u32 wake_seq;
};

#define KDAT_WAIT_SEQ		0x1	/* wake_seq is valid */

/* dat_evd_set_unwaitable / _clear_unwaitable, and waking a waiter. */
struct kdat_ioc_evd_ctl {
	struct kdat_ioc_hdr hdr;
	__u32 evd;
	__u32 op;		/* KDAT_EVD_CTL_* */
};

#define KDAT_EVD_CTL_UNWAITABLE	1	/* waiters return, new waits fail */
#define KDAT_EVD_CTL_WAITABLE	2
#define KDAT_EVD_CTL_WAKE	3	/* waiters return to look again */
/*
 * Busy poll (KDAT_FEATURE_EVD_POLL): run the EVD's completion poller on
 * the calling CPU now, so completions the device has made reach the ring
 * before its own notification runs.  For a consumer that spins on an
 * empty ring; a no-op for an EVD without completions.
 */
#define KDAT_EVD_CTL_POLL	4

struct kdat_ioc_evd_post_se {
	struct kdat_ioc_hdr hdr;
	__u32 evd;
	__u32 pad;
	__aligned_u64 pointer;
};

struct kdat_ioc_lmr_create {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 pz;
	__aligned_u64 addr;		/* user virtual address */
	__aligned_u64 length;
	__u32 priv;		/* DAT_MEM_PRIV_FLAGS */
	__u32 lmr;		/* out */
	__u32 lmr_context;	/* out */
	__u32 rmr_context;	/* out */
	__aligned_u64 registered_size;	/* out */
	__aligned_u64 registered_address; /* out */
};

struct kdat_ioc_srq_create {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 pz;
	/* in/out: DAT_HW_DEFAULT comes back as the value chosen */
	__s32 max_recv_dtos;
	__s32 max_recv_iov;
	__s32 low_watermark;
	__u32 srq;		/* out */
	__aligned_u64 ring_offset;	/* out: the post ring */
	__aligned_u64 ring_size;	/* out */
};

struct kdat_ioc_srq_query {
	struct kdat_ioc_hdr hdr;
	__u32 srq;
	__u32 mask;		/* DAT_SRQ_PARAM_MASK */
	__u32 ia;		/* out */
	__u32 pz;		/* out */
	__u32 state;		/* out: DAT_SRQ_STATE */
	__s32 max_recv_dtos;	/* out */
	__s32 max_recv_iov;	/* out */
	__s32 low_watermark;	/* out */
	__s32 available_dto_count; /* out */
	__s32 outstanding_dto_count; /* out */
};

/* Resize (value = max_recv_dtos), set_lw (value = watermark), or kick. */
struct kdat_ioc_srq_op {
	struct kdat_ioc_hdr hdr;
	__u32 srq;
	__s32 value;
};

/* The one-ioctl-per-post path (and the fallback for long scatter lists). */
struct kdat_ioc_srq_post {
	struct kdat_ioc_hdr hdr;
	__u32 srq;
	__u32 nseg;
	__aligned_u64 cookie;
	struct kdat_useg seg[KDAT_MAX_IOV];
};

struct kdat_ioc_ep_create {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 pz;
	__u32 recv_evd;
	__u32 request_evd;
	__u32 connect_evd;
	__u32 srq;		/* 0: dat_ep_create */
	struct kdat_uep_attr attr;
	__u32 has_attr;		/* 0: provider defaults (dat_ep_create only) */
	__u32 ep;		/* out */
	/*
	 * From here on: only with KDAT_FEATURE_SEND_RING.  A caller whose
	 * hdr.size covers them gets the EP's send ring (ring_size 0: none,
	 * post with KDAT_IOC_EP_POST).
	 */
	__aligned_u64 ring_offset;	/* out */
	__aligned_u64 ring_size;	/* out */
};

struct kdat_ioc_ep_query {
	struct kdat_ioc_hdr hdr;
	__u32 ep;
	__u32 state;		/* out: DAT_EP_STATE */
	__u32 ia, pz, recv_evd, request_evd, connect_evd, srq; /* out */
	__aligned_u64 local_port;	/* out */
	__aligned_u64 remote_port;	/* out */
	__u8 remote_addr[KDAT_ADDR_LEN]; /* out */
	struct kdat_uep_attr attr; /* out */
};

struct kdat_ioc_ep_connect {
	struct kdat_ioc_hdr hdr;
	__u32 ep;
	__u32 timeout_us;
	__aligned_u64 conn_qual;
	__u8 addr[KDAT_ADDR_LEN];
	__u32 qos;
	__u32 flags;
	__u32 pdata_size;
	__u32 pad;
	__u8 pdata[KDAT_PDATA_LEN];
	__u8 pad2[4];
};

/* Disconnect (value = DAT_CLOSE_FLAGS) or reset. */
struct kdat_ioc_ep_op {
	struct kdat_ioc_hdr hdr;
	__u32 ep;
	__u32 value;
};

#define KDAT_POST_SEND		0
#define KDAT_POST_RECV		1
#define KDAT_POST_RDMA_WRITE	2
#define KDAT_POST_RDMA_READ	3
/*
 * With KDAT_FEATURE_IB_EXT.  An atomic takes one local 8-byte segment (the
 * old remote value lands there; needs local write) and a remote address
 * aligned to 8 (else DAT_INVALID_PARAMETER); it counts against
 * max_rdma_read_out like an RDMA Read.
 */
#define KDAT_POST_RDMA_WRITE_IMMED 4	/* immed_data */
#define KDAT_POST_CMP_AND_SWAP	5	/* compare_add = compare, swap */
#define KDAT_POST_FETCH_AND_ADD	6	/* compare_add = the addend */

struct kdat_ioc_ep_post {
	struct kdat_ioc_hdr hdr;
	__u32 ep;
	__u32 op;		/* KDAT_POST_* */
	__u32 flags;		/* DAT_COMPLETION_FLAGS */
	__u32 nseg;
	__aligned_u64 cookie;
	__u32 rmr_context;	/* RDMA */
	__u32 pad;
	__aligned_u64 remote_addr;
	__aligned_u64 remote_length;
	struct kdat_useg seg[KDAT_MAX_IOV];
	/* from here on: only with KDAT_FEATURE_IB_EXT */
	__aligned_u64 compare_add;
	__aligned_u64 swap;
	__u32 immed_data;	/* host order */
	__u32 reserved;		/* zero */
};

struct kdat_ioc_ep_status {
	struct kdat_ioc_hdr hdr;
	__u32 ep;
	__u32 state;		/* out */
	__u32 recv_idle;	/* out */
	__u32 request_idle;	/* out */
};

struct kdat_ioc_psp_create {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 evd;
	__aligned_u64 conn_qual;
	__u32 flags;		/* DAT_PSP_FLAGS */
	__u32 psp;		/* out */
};

struct kdat_ioc_cr_query {
	struct kdat_ioc_hdr hdr;
	__u32 cr;
	__u32 pdata_size;	/* out */
	__aligned_u64 remote_port;	/* out */
	__u8 remote_addr[KDAT_ADDR_LEN]; /* out */
	__u8 pdata[KDAT_PDATA_LEN]; /* out */
	__u8 pad[4];
	/* from here on: only with KDAT_FEATURE_RSP */
	__u32 local_ep;		/* out: an RSP's reserved EP, or 0 */
	__u32 reserved;		/* zero */
};

struct kdat_ioc_cr_accept {
	struct kdat_ioc_hdr hdr;
	__u32 cr;
	__u32 ep;
	__u32 pdata_size;
	__u8 pdata[KDAT_PDATA_LEN];
};

/*
 * dat_ep_modify: @mask is the DAT_EP_PARAM_MASK; the attribute fields it
 * names are taken from @attr, the others are ignored.  The kernel changes
 * what it can change (today: max_message_size, max_rdma_size,
 * max_request_dtos, max_request_iov, max_rdma_read_in/_out, while the EP
 * is unconnected and idle) and refuses any other bit with
 * DAT_INVALID_PARAMETER/DAT_INVALID_ARG2.  pad and attr.pad must be zero.
 */
struct kdat_ioc_ep_modify {
	struct kdat_ioc_hdr hdr;
	__u32 ep;
	__u32 pad;
	__aligned_u64 mask;		/* DAT_EP_PARAM_MASK */
	struct kdat_uep_attr attr;
};

/* ---- Consumer Notification Objects (KDAT_FEATURE_CNO) ---------------- */

/*
 * kdat_ioc_free.type of a CNO: the kernel flavour's DAT_HANDLE_TYPE has no
 * CNO (kDAPL has none), so it gets the number after DAT_HANDLE_TYPE_SRQ.
 */
#define KDAT_TYPE_CNO		10

struct kdat_ioc_cno_create {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 cno;		/* out */
};

/*
 * dat_cno_wait: block until the CNO is triggered (DAT_SUCCESS, @evd names
 * the EVD that triggered it, or 0 if that EVD is gone by now), the
 * timeout ends (DAT_TIMEOUT_EXPIRED), a signal (DAT_INTERRUPTED_CALL) or
 * the IA closes (DAT_INVALID_STATE_CNO_DEAD).  A CNO is triggered when an
 * event is written to an enabled EVD of it that has no dat_evd_wait
 * waiter in the kernel; a wait also returns at once for such an EVD that
 * still holds unconsumed events (the trigger it raised was consumed).
 */
struct kdat_ioc_cno_wait {
	struct kdat_ioc_hdr hdr;
	__u32 cno;
	__u32 timeout_us;	/* 0xffffffff: forever */
	__u32 evd;		/* out */
	__u32 pad;
};

/*
 * dat_evd_modify_cno / dat_evd_create's cno, and dat_evd_enable /
 * _disable as far as the CNO cares: @cno (0: none) becomes the EVD's CNO
 * and KDAT_EVD_NOTIFY_ENABLED says whether the EVD is enabled.  An EVD
 * holds its CNO (dat_cno_free: DAT_INVALID_STATE_CNO_IN_USE).
 */
struct kdat_ioc_evd_notify {
	struct kdat_ioc_hdr hdr;
	__u32 evd;
	__u32 cno;
	__u32 flags;		/* KDAT_EVD_NOTIFY_* */
	__u32 pad;
};

#define KDAT_EVD_NOTIFY_ENABLED	0x1
#define KDAT_EVD_NOTIFY_FLAGS_ALL KDAT_EVD_NOTIFY_ENABLED

/* dat_rsp_create (KDAT_FEATURE_RSP) */
struct kdat_ioc_rsp_create {
	struct kdat_ioc_hdr hdr;
	__u32 ia;
	__u32 ep;
	__aligned_u64 conn_qual;
	__u32 evd;
	__u32 rsp;		/* out */
};

/* dat_rsp_query (KDAT_FEATURE_RSP): every field */
struct kdat_ioc_rsp_query {
	struct kdat_ioc_hdr hdr;
	__u32 rsp;
	__u32 ia;		/* out */
	__aligned_u64 conn_qual;	/* out */
	__u32 evd;		/* out */
	__u32 ep;		/* out */
};

#define KDAT_IOC_MAGIC	0xDA
#define KDAT_IOC_VERSION	_IOWR(KDAT_IOC_MAGIC, 0x00, struct kdat_ioc_version)
#define KDAT_IOC_IA_LIST	_IOWR(KDAT_IOC_MAGIC, 0x01, struct kdat_ioc_ia_list)
#define KDAT_IOC_IA_OPEN	_IOWR(KDAT_IOC_MAGIC, 0x02, struct kdat_ioc_ia_open)
#define KDAT_IOC_IA_CLOSE	_IOWR(KDAT_IOC_MAGIC, 0x03, struct kdat_ioc_ia_close)
#define KDAT_IOC_IA_QUERY	_IOWR(KDAT_IOC_MAGIC, 0x04, struct kdat_ioc_ia_query)
#define KDAT_IOC_FREE		_IOWR(KDAT_IOC_MAGIC, 0x05, struct kdat_ioc_free)
#define KDAT_IOC_PZ_CREATE	_IOWR(KDAT_IOC_MAGIC, 0x06, struct kdat_ioc_pz_create)
#define KDAT_IOC_EVD_CREATE	_IOWR(KDAT_IOC_MAGIC, 0x07, struct kdat_ioc_evd_create)
#define KDAT_IOC_EVD_WAIT	_IOWR(KDAT_IOC_MAGIC, 0x08, struct kdat_ioc_evd_wait)
#define KDAT_IOC_EVD_POST_SE	_IOWR(KDAT_IOC_MAGIC, 0x09, struct kdat_ioc_evd_post_se)
#define KDAT_IOC_LMR_CREATE	_IOWR(KDAT_IOC_MAGIC, 0x0a, struct kdat_ioc_lmr_create)
#define KDAT_IOC_SRQ_CREATE	_IOWR(KDAT_IOC_MAGIC, 0x0b, struct kdat_ioc_srq_create)
#define KDAT_IOC_SRQ_QUERY	_IOWR(KDAT_IOC_MAGIC, 0x0c, struct kdat_ioc_srq_query)
#define KDAT_IOC_SRQ_RESIZE	_IOWR(KDAT_IOC_MAGIC, 0x0d, struct kdat_ioc_srq_op)
#define KDAT_IOC_SRQ_SET_LW	_IOWR(KDAT_IOC_MAGIC, 0x0e, struct kdat_ioc_srq_op)
#define KDAT_IOC_SRQ_KICK	_IOWR(KDAT_IOC_MAGIC, 0x0f, struct kdat_ioc_srq_op)
#define KDAT_IOC_SRQ_POST	_IOWR(KDAT_IOC_MAGIC, 0x10, struct kdat_ioc_srq_post)
#define KDAT_IOC_EP_CREATE	_IOWR(KDAT_IOC_MAGIC, 0x11, struct kdat_ioc_ep_create)
#define KDAT_IOC_EP_QUERY	_IOWR(KDAT_IOC_MAGIC, 0x12, struct kdat_ioc_ep_query)
#define KDAT_IOC_EP_CONNECT	_IOWR(KDAT_IOC_MAGIC, 0x13, struct kdat_ioc_ep_connect)
#define KDAT_IOC_EP_DISCONNECT	_IOWR(KDAT_IOC_MAGIC, 0x14, struct kdat_ioc_ep_op)
#define KDAT_IOC_EP_RESET	_IOWR(KDAT_IOC_MAGIC, 0x15, struct kdat_ioc_ep_op)
#define KDAT_IOC_EP_POST	_IOWR(KDAT_IOC_MAGIC, 0x16, struct kdat_ioc_ep_post)
#define KDAT_IOC_EP_STATUS	_IOWR(KDAT_IOC_MAGIC, 0x17, struct kdat_ioc_ep_status)
#define KDAT_IOC_PSP_CREATE	_IOWR(KDAT_IOC_MAGIC, 0x18, struct kdat_ioc_psp_create)
#define KDAT_IOC_CR_QUERY	_IOWR(KDAT_IOC_MAGIC, 0x19, struct kdat_ioc_cr_query)
#define KDAT_IOC_CR_ACCEPT	_IOWR(KDAT_IOC_MAGIC, 0x1a, struct kdat_ioc_cr_accept)
#define KDAT_IOC_EVD_CTL	_IOWR(KDAT_IOC_MAGIC, 0x1b, struct kdat_ioc_evd_ctl)
#define KDAT_IOC_EP_MODIFY	_IOWR(KDAT_IOC_MAGIC, 0x1c, struct kdat_ioc_ep_modify)
#define KDAT_IOC_CNO_CREATE	_IOWR(KDAT_IOC_MAGIC, 0x1d, struct kdat_ioc_cno_create)
#define KDAT_IOC_CNO_WAIT	_IOWR(KDAT_IOC_MAGIC, 0x1e, struct kdat_ioc_cno_wait)
#define KDAT_IOC_EVD_NOTIFY	_IOWR(KDAT_IOC_MAGIC, 0x1f, struct kdat_ioc_evd_notify)
#define KDAT_IOC_RSP_CREATE	_IOWR(KDAT_IOC_MAGIC, 0x20, struct kdat_ioc_rsp_create)
#define KDAT_IOC_RSP_QUERY	_IOWR(KDAT_IOC_MAGIC, 0x21, struct kdat_ioc_rsp_query)
/* KDAT_FEATURE_SEND_RING: drain the EP's send ring (value: KDAT_EP_KICK_*) */
#define KDAT_IOC_EP_KICK	_IOWR(KDAT_IOC_MAGIC, 0x22, struct kdat_ioc_ep_op)

#endif /* KDAT_ABI_H */
