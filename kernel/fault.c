// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fault injection for the race tests (kdat_race): root-only debugfs
 * switches, off by default, each behind a static key so the paths they
 * sit on cost nothing when off.  They let a test put the kernel in the
 * interleaving a hostile or unlucky process would reach only by winning
 * a race, without depending on the scheduler:
 *
 *   kdat/fault_ring_tail  1: every drain of a post or send ring moves its
 *                         tail one ring ahead before reading it
 *                         (kdat_fault_rewrite_tail, uring.h)
 *   kdat/fault_cm_hold    1: an active EP's CM handler parks at
 *                         ADDR_RESOLVED, 2: at ROUTE_RESOLVED, until the
 *                         switch is 0 again or the EP is freed; reads
 *                         "<switch> <parked so far> <resumed so far>"
 */
#include <linux/debugfs.h>
#include <linux/jump_label.h>
#include <linux/wait.h>

#include "kdat_core.h"

DEFINE_STATIC_KEY_FALSE(kdat_fault_ring_tail);

static int kdat_fault_ring_tail_get(void *data, u64 *val)
{
	*val = static_key_enabled(&kdat_fault_ring_tail);
	return 0;
}

static int kdat_fault_ring_tail_set(void *data, u64 val)
{
	if (val)
		static_branch_enable(&kdat_fault_ring_tail);
	else
		static_branch_disable(&kdat_fault_ring_tail);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(kdat_fault_ring_tail_fops, kdat_fault_ring_tail_get,
			 kdat_fault_ring_tail_set, "%llu\n");

DEFINE_STATIC_KEY_FALSE(kdat_fault_cm_key);
static unsigned int kdat_fault_cm_at;	/* 1: ADDR_RESOLVED, 2: ROUTE_ */
static atomic_t kdat_fault_cm_parked, kdat_fault_cm_resumed;
static DEFINE_MUTEX(kdat_fault_cm_lock);	/* the switch and its key */
static DECLARE_WAIT_QUEUE_HEAD(kdat_fault_cm_wq);

static bool kdat_fault_cm_released(struct kdat_ep *ep)
{
	return !READ_ONCE(kdat_fault_cm_at) || READ_ONCE(ep->freed);
}

/*
 * In @ep's CM handler before it acts on @event: park there if the switch
 * says so.  True if it parked (the caller reports its return with
 * kdat_fault_cm_resume).  A free of the EP ends the wait: its detach
 * waits for this handler.  The switch is polled too, so the wait needs
 * no wake-up from the free path.
 */
bool __kdat_fault_cm_park(struct kdat_ep *ep, enum rdma_cm_event_type event)
{
	unsigned int at = READ_ONCE(kdat_fault_cm_at);

	if (!((at == 1 && event == RDMA_CM_EVENT_ADDR_RESOLVED) ||
	      (at == 2 && event == RDMA_CM_EVENT_ROUTE_RESOLVED)))
		return false;
	atomic_inc(&kdat_fault_cm_parked);
	while (!wait_event_timeout(kdat_fault_cm_wq,
				   kdat_fault_cm_released(ep), HZ / 10))
		;
	return true;
}

void kdat_fault_cm_resume(void)
{
	atomic_inc(&kdat_fault_cm_resumed);
}

static ssize_t kdat_fault_cm_read(struct file *f, char __user *buf,
				  size_t len, loff_t *pos)
{
	char s[48];
	int n;

	n = scnprintf(s, sizeof(s), "%u %d %d\n", READ_ONCE(kdat_fault_cm_at),
		      atomic_read(&kdat_fault_cm_parked),
		      atomic_read(&kdat_fault_cm_resumed));
	return simple_read_from_buffer(buf, len, pos, s, n);
}

static ssize_t kdat_fault_cm_write(struct file *f, const char __user *buf,
				   size_t len, loff_t *pos)
{
	unsigned int at;
	int ret;

	ret = kstrtouint_from_user(buf, len, 0, &at);
	if (ret)
		return ret;
	if (at > 2)
		return -EINVAL;
	mutex_lock(&kdat_fault_cm_lock);
	WRITE_ONCE(kdat_fault_cm_at, at);
	if (at)
		static_branch_enable(&kdat_fault_cm_key);
	else
		static_branch_disable(&kdat_fault_cm_key);
	mutex_unlock(&kdat_fault_cm_lock);
	wake_up_all(&kdat_fault_cm_wq);
	return len;
}

static const struct file_operations kdat_fault_cm_fops = {
	.owner = THIS_MODULE,
	.read = kdat_fault_cm_read,
	.write = kdat_fault_cm_write,
	.llseek = default_llseek,
};

void kdat_fault_debugfs_init(struct dentry *dir)
{
	debugfs_create_file_unsafe("fault_ring_tail", 0600, dir, NULL,
				   &kdat_fault_ring_tail_fops);
	debugfs_create_file("fault_cm_hold", 0600, dir, NULL,
			    &kdat_fault_cm_fops);
}

/* Unload: nothing may stay parked (the EPs are gone by then anyway). */
void kdat_fault_exit(void)
{
	WRITE_ONCE(kdat_fault_cm_at, 0);
	wake_up_all(&kdat_fault_cm_wq);
}
