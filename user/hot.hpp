// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The functions of the data paths (a receive post, a send, a dequeue)
// never straddle a page.  The test rig runs QEMU's TCG, which cannot chain
// a jump into another page and looks the target up instead: the receive
// post was 60% dearer in a build whose srq_post_recv happened to straddle
// one (docs/benchmarks-user.md).  Aligned to a power of two at least its
// size, a function starts and ends in one page; on hardware the same keeps
// a path's code in as few pages (and iTLB entries) as it can.
// tests/user/host/check_layout.sh (optimised x86-64 builds) fails when a
// listed function outgrows its alignment or is not on it; the list, with
// each function's alignment, is DAT_DATA_PATH_FUNCTIONS in
// tests/user/host/CMakeLists.txt (keep the two in step).
#pragma once

#define KDAT_DATA_PATH(align) __attribute__((aligned(align)))
