/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What kdat.ko exports for its test consumers (tests/kernel) and nothing
 * else: not kDAPL, so not in <dat/kdat.h>.  The module includes it through
 * kdat_core.h and the tests directly, so both sides see one declaration.
 */
#ifndef KDAT_HOOKS_H
#define KDAT_HOOKS_H

#include <dat/kdat.h>

long kdat_live_objects(void);
DAT_RETURN kdat_test_srq_error(DAT_SRQ_HANDLE h);
int kdat_test_evd_cq_size(DAT_EVD_HANDLE h);
int kdat_test_ep_recv_cq_size(DAT_EP_HANDLE h);
bool kdat_test_ep_gone_waiting(DAT_EP_HANDLE h);
int kdat_test_qp_event(DAT_EP_HANDLE h, int event);
bool kdat_test_evd_quiescing(DAT_EVD_HANDLE h);
void kdat_test_fault_new_qp_post(bool on);
int kdat_test_fault_gone_park(DAT_EP_HANDLE ep);
int kdat_test_fault_qp_park(DAT_EP_HANDLE ep);

#endif
