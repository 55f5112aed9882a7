// SPDX-License-Identifier: GPL-2.0
/*
 * dat2-trace.so: which DAT 2.0 entries an unmodified DAT 2.0 program
 * calls (ltrace is not on these machines).  LD_PRELOAD it; every dat_*
 * function libdat2.so.2 exports is interposed by a trampoline that counts
 * the call and jumps to libdat2's own (dlvsym(RTLD_NEXT, name, "DAT_2.0")),
 * with the caller's registers and stack untouched, so variadic
 * dat_extension_op passes through as is.  For dat_extension_op the
 * operation (its second argument, DAT_IB_OP) is counted too.
 *
 * DAT2_TRACE=PREFIX: writes PREFIX.<pid>: a line "first NAME" the first
 * time NAME is called (so a process killed at a time limit still shows
 * what it reached), and at exit "count NAME N" per entry called.
 *
 * Build: cc -shared -fPIC -O2 -o build/dat2-trace.so tests/guest/dat2-trace.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DAT2_ENTRIES(X) \
	X(dat_cno_create) X(dat_cno_free) X(dat_cno_modify_agent) \
	X(dat_cno_query) X(dat_cno_wait) X(dat_cr_accept) X(dat_cr_handoff) \
	X(dat_cr_query) X(dat_cr_reject) X(dat_ep_connect) X(dat_ep_create) \
	X(dat_ep_create_with_srq) X(dat_ep_disconnect) X(dat_ep_dup_connect) \
	X(dat_ep_free) X(dat_ep_get_status) X(dat_ep_modify) \
	X(dat_ep_post_rdma_read) X(dat_ep_post_rdma_write) X(dat_ep_post_recv) \
	X(dat_ep_post_send) X(dat_ep_query) X(dat_ep_recv_query) X(dat_ep_reset) \
	X(dat_ep_set_watermark) X(dat_evd_clear_unwaitable) X(dat_evd_create) \
	X(dat_evd_dequeue) X(dat_evd_disable) X(dat_evd_enable) X(dat_evd_free) \
	X(dat_evd_modify_cno) X(dat_evd_post_se) X(dat_evd_query) \
	X(dat_evd_resize) X(dat_evd_set_unwaitable) X(dat_evd_wait) \
	X(dat_extension_op) X(dat_get_consumer_context) X(dat_get_handle_type) \
	X(dat_ia_close) X(dat_ia_openv) X(dat_ia_query) X(dat_lmr_create) \
	X(dat_lmr_free) X(dat_lmr_query) X(dat_lmr_sync_rdma_read) \
	X(dat_lmr_sync_rdma_write) X(dat_psp_create) X(dat_psp_create_any) \
	X(dat_psp_free) X(dat_psp_query) X(dat_pz_create) X(dat_pz_free) \
	X(dat_pz_query) X(dat_registry_add_provider) \
	X(dat_registry_list_providers) X(dat_registry_remove_provider) \
	X(dat_rmr_bind) X(dat_rmr_create) X(dat_rmr_free) X(dat_rmr_query) \
	X(dat_rsp_create) X(dat_rsp_free) X(dat_rsp_query) \
	X(dat_set_consumer_context) X(dat_srq_create) X(dat_srq_free) \
	X(dat_srq_post_recv) X(dat_srq_query) X(dat_srq_resize) \
	X(dat_srq_set_lw) X(dat_strerror)

#define NAME(n) #n,
static const char *const names[] = { DAT2_ENTRIES(NAME) };
#undef NAME
#define N_ENTRIES (sizeof(names) / sizeof(names[0]))

/* dat_ib_extensions.h's DAT_IB_OP, in order from 0 */
static const char *const ib_ops[] = {
	"FETCH_AND_ADD", "CMP_AND_SWAP", "RDMA_WRITE_IMMED", "UD_SEND",
	"QUERY_COUNTERS", "PRINT_COUNTERS", "COLLECTIVE_CREATE_MEMBER",
	"COLLECTIVE_FREE_MEMBER", "COLLECTIVE_CREATE_GROUP",
	"COLLECTIVE_FREE_GROUP", "COLLECTIVE_SET_CLOCK",
	"COLLECTIVE_READ_CLOCK", "COLLECTIVE_SCATTER", "COLLECTIVE_SCATTERV",
	"COLLECTIVE_GATHER", "COLLECTIVE_GATHERV", "COLLECTIVE_ALLGATHER",
	"COLLECTIVE_ALLGATHERV", "COLLECTIVE_ALLTOALL", "COLLECTIVE_ALLTOALLV",
	"COLLECTIVE_REDUCE", "COLLECTIVE_ALLREDUCE", "COLLECTIVE_REDUCE_SCATTER",
	"COLLECTIVE_SCAN", "COLLECTIVE_BROADCAST", "COLLECTIVE_BARRIER",
	"START_COUNTERS", "STOP_COUNTERS", "UD_CM_FREE", "UD_AH_FREE",
};
#define N_IB_OPS (sizeof(ib_ops) / sizeof(ib_ops[0]))
#define OPEN_QUERY 0x1000	/* DAT_IB_OPEN_QUERY_OP */
#define CLOSE_QUERY 0x2000	/* DAT_IB_CLOSE_QUERY_OP */

static void *real[N_ENTRIES];
static unsigned long calls[N_ENTRIES];
static unsigned long op_calls[N_IB_OPS + 3];	/* + open, close, other */
static int out_fd = -1;

static void say(const char *s)
{
	if (out_fd >= 0 && write(out_fd, s, strlen(s)) < 0)
		out_fd = -1;
}

__attribute__((constructor)) static void trace_init(void)
{
	const char *prefix = getenv("DAT2_TRACE");
	char path[4096];

	if (!prefix || !*prefix)
		return;
	snprintf(path, sizeof(path), "%s.%d", prefix, (int)getpid());
	out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

__attribute__((destructor)) static void trace_fini(void)
{
	char line[128];
	size_t i;

	for (i = 0; i < N_ENTRIES; i++) {
		if (!calls[i])
			continue;
		snprintf(line, sizeof(line), "count %s %lu\n", names[i], calls[i]);
		say(line);
	}
	for (i = 0; i < N_IB_OPS + 3; i++) {
		if (!op_calls[i])
			continue;
		snprintf(line, sizeof(line), "count dat_extension_op:%s %lu\n",
			 i < N_IB_OPS ? ib_ops[i] :
			 i == N_IB_OPS ? "OPEN_QUERY" :
			 i == N_IB_OPS + 1 ? "CLOSE_QUERY" : "other", op_calls[i]);
		say(line);
	}
}

/* Called by every trampoline: count, and return the function to jump to. */
void *dat2_trace_hit(unsigned long i, unsigned long arg1);
void *dat2_trace_hit(unsigned long i, unsigned long arg1)
{
	char line[128];
	void *fn = __atomic_load_n(&real[i], __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = dlvsym(RTLD_NEXT, names[i], "DAT_2.0");
		if (!fn)
			fn = dlsym(RTLD_NEXT, names[i]);
		if (!fn) {
			fprintf(stderr, "dat2-trace: no %s after the preload\n", names[i]);
			abort();
		}
		__atomic_store_n(&real[i], fn, __ATOMIC_RELEASE);
	}
	if (__atomic_fetch_add(&calls[i], 1, __ATOMIC_RELAXED) == 0) {
		snprintf(line, sizeof(line), "first %s\n", names[i]);
		say(line);
	}
	if (strcmp(names[i], "dat_extension_op") == 0) {
		unsigned long op = (unsigned int)arg1, slot;

		slot = op < N_IB_OPS ? op : op == OPEN_QUERY ? N_IB_OPS :
		       op == CLOSE_QUERY ? N_IB_OPS + 1 : N_IB_OPS + 2;
		if (__atomic_fetch_add(&op_calls[slot], 1, __ATOMIC_RELAXED) == 0) {
			snprintf(line, sizeof(line), "first dat_extension_op:%s\n",
				 slot < N_IB_OPS ? ib_ops[slot] :
				 slot == N_IB_OPS ? "OPEN_QUERY" :
				 slot == N_IB_OPS + 1 ? "CLOSE_QUERY" : "other");
			say(line);
		}
	}
	return fn;
}

/*
 * x86-64 trampolines: save the argument registers and %rax (the vector
 * count of a variadic call), call dat2_trace_hit(index, second argument)
 * with the stack 16-byte aligned (7 pushes after the return address),
 * restore, and tail-jump to the real entry.
 */
#define TRAMPOLINE(n) \
	__asm__(".text\n.globl " #n "\n.type " #n ",@function\n" #n ":\n" \
		"push %rdi\npush %rsi\npush %rdx\npush %rcx\npush %r8\npush %r9\npush %rax\n" \
		"mov 40(%rsp),%rsi\nmov $" #n "_idx,%edi\n" \
		"call dat2_trace_hit@PLT\nmov %rax,%r11\n" \
		"pop %rax\npop %r9\npop %r8\npop %rcx\npop %rdx\npop %rsi\npop %rdi\n" \
		"jmp *%r11\n.size " #n ",.-" #n "\n");

/* the indices as assembler constants */
#define IDX(n) n##_idx_e,
enum { DAT2_ENTRIES(IDX) };
#undef IDX
#define IDXSYM(n) __asm__(".set " #n "_idx, %c0" : : "i"(n##_idx_e));
static void __attribute__((used)) idx_syms(void)
{
	DAT2_ENTRIES(IDXSYM)
}

DAT2_ENTRIES(TRAMPOLINE)
