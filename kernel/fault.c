// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fault injection for the race tests (kdat_race): root-only debugfs
 * switches, off by default.  Each is a plain word the path reads once
 * (READ_ONCE), not a static key: turning a key on or off patches the code
 * of the very paths a test hammers meanwhile, two of them with interrupts
 * off (ring drains, a new QP's post), and under QEMU's TCG a vCPU looping
 * there could keep executing the INT3 of the patch after it was gone:
 * both guest CPUs stuck, interrupts off.  They let a test put the kernel in the
 * interleaving a hostile or unlucky process would reach only by winning
 * a race, without depending on the scheduler.  A switch stays on only
 * while the file that turned it on is open, so a test that dies leaves
 * nothing armed.
 *
 *   kdat/fault_ring_tail  1: every drain of a post or send ring moves its
 *                         tail one ring ahead before reading it
 *                         (kdat_fault_rewrite_tail, uring.h); reads "0|1"
 *   kdat/fault_cm_hold    1: an active EP's CM handler parks at
 *                         ADDR_RESOLVED, 2: at ROUTE_RESOLVED, 3: with
 *                         the QP made and the EP found still connecting,
 *                         just before the request goes out; until the
 *                         switch is off, the EP stops connecting (a
 *                         disconnect) or is freed, or its IA closes or
 *                         dies; reads "<switch> <parked so far> <resumed
 *                         so far>".  While one handler is parked,
 *                         rdma_cm's resolution of every other ID waits
 *                         too (its work queues are ordered).
 *   kdat/fault_new_qp_post 1: a new QP of an EP without an SRQ takes the
 *                         first receive waiting in the EP's ring, and its
 *                         post of the second fails; reads "0|1".  Also
 *                         kdat_test_fault_new_qp_post(), for kdat_test.
 *
 * And one for kdat_test alone: kdat_test_fault_gone_park(ep) parks the CM
 * handler that ends @ep's connection right after it made the EP
 * Disconnected, until a dat_ep_reset (allowed from there) starts the next
 * connection generation: the reset then waits for the handler, which goes
 * on (the interleaving of a reset that wins the race).
 * kdat_test_fault_qp_park(ep) parks the teardown of @ep's QP (a free,
 * reset or device removal) right after the QP was destroyed, before its
 * SRQ gives its address back: a new QP may be made meanwhile, maybe at the
 * same address.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/wait.h>

#include "kdat_core.h"

unsigned int kdat_fault_ring_tail;
unsigned int kdat_fault_cm;
unsigned int kdat_fault_no_opener;
unsigned int kdat_fault_new_qp_post_on;

struct kdat_fault_switch {
	unsigned int *val;		/* what the path reads */
	unsigned int max;		/* values it takes: 0..max */
	struct file *owner;		/* the file that turned it on */
};

static struct kdat_fault_switch kdat_fault_ring_sw = {
	.val = &kdat_fault_ring_tail, .max = 1,
};
static struct kdat_fault_switch kdat_fault_cm_sw = {
	.val = &kdat_fault_cm, .max = KDAT_FAULT_CM_REQUEST,
};
static struct kdat_fault_switch kdat_fault_opener_sw = {
	.val = &kdat_fault_no_opener, .max = 1,
};
static struct kdat_fault_switch kdat_fault_new_qp_post_sw = {
	.val = &kdat_fault_new_qp_post_on, .max = 1,
};
static DEFINE_MUTEX(kdat_fault_lock);	/* every switch's val and owner */
static atomic_t kdat_fault_cm_parked, kdat_fault_cm_resumed;
static DECLARE_WAIT_QUEUE_HEAD(kdat_fault_cm_wq);

static void kdat_fault_set(struct kdat_fault_switch *sw, unsigned int val,
			   struct file *f)
{
	lockdep_assert_held(&kdat_fault_lock);
	WRITE_ONCE(*sw->val, val);
	sw->owner = val ? f : NULL;
	wake_up_all(&kdat_fault_cm_wq);
}

static ssize_t kdat_fault_write(struct file *f, const char __user *buf,
				size_t len, loff_t *pos)
{
	struct kdat_fault_switch *sw = f->private_data;
	unsigned int val;
	int ret;

	ret = kstrtouint_from_user(buf, len, 0, &val);
	if (ret)
		return ret;
	if (val > sw->max)
		return -EINVAL;
	mutex_lock(&kdat_fault_lock);
	kdat_fault_set(sw, val, f);
	mutex_unlock(&kdat_fault_lock);
	return len;
}

static int kdat_fault_release(struct inode *inode, struct file *f)
{
	struct kdat_fault_switch *sw = f->private_data;

	mutex_lock(&kdat_fault_lock);
	if (sw->owner == f)
		kdat_fault_set(sw, 0, NULL);
	mutex_unlock(&kdat_fault_lock);
	return 0;
}

static ssize_t kdat_fault_read(struct file *f, char __user *buf, size_t len,
			       loff_t *pos)
{
	struct kdat_fault_switch *sw = f->private_data;
	char s[48];
	int n;

	if (sw == &kdat_fault_cm_sw)
		n = scnprintf(s, sizeof(s), "%u %d %d\n", READ_ONCE(*sw->val),
			      atomic_read(&kdat_fault_cm_parked),
			      atomic_read(&kdat_fault_cm_resumed));
	else
		n = scnprintf(s, sizeof(s), "%u\n", READ_ONCE(*sw->val));
	return simple_read_from_buffer(buf, len, pos, s, n);
}

static const struct file_operations kdat_fault_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = kdat_fault_read,
	.write = kdat_fault_write,
	.release = kdat_fault_release,
	.llseek = default_llseek,
};

static bool kdat_fault_cm_released(struct kdat_ep *ep)
{
	struct kdat_ia *ia = ep->obj.ia;

	return !READ_ONCE(kdat_fault_cm) || READ_ONCE(ep->freed) ||
	       READ_ONCE(ep->state) != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING ||
	       READ_ONCE(ia->closing) || kdat_ia_dead(ia);
}

/*
 * In @ep's CM handler at @at: park there if the switch says so.  True if
 * it parked (the caller reports its return with kdat_fault_cm_resume).
 * A disconnect, free, IA close or device removal ends the wait (the
 * teardowns wait for this handler; at KDAT_FAULT_CM_REQUEST so does the
 * disconnect, ep->connect_lock); the wait polls, so none of them needs to
 * wake it.
 */
bool __kdat_fault_cm_park(struct kdat_ep *ep, enum kdat_fault_cm_at at)
{
	if (READ_ONCE(kdat_fault_cm) != at)
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

struct kdat_fault_park kdat_fault_gone, kdat_fault_qp;

/*
 * Whether @p still holds @ep's path.  Every park ends when kdat_test lets
 * go or the IA closes or dies; the end of connection generation *@gen
 * also when the EP is freed or a reset starts the next generation (the
 * QP teardown's park has no @gen: it may be the free itself).
 */
static bool kdat_fault_park_holds(struct kdat_fault_park *p,
				  struct kdat_ep *ep, const u32 *gen)
{
	struct kdat_ia *ia = ep->obj.ia;

	if (READ_ONCE(p->ep) != ep || READ_ONCE(ia->closing) ||
	    kdat_ia_dead(ia))
		return false;
	return !gen || (!READ_ONCE(ep->freed) &&
			READ_ONCE(ep->conn_gen) == *gen);
}

/* Park while @p holds @ep's path (polled: no teardown needs to wake it). */
void __kdat_fault_park(struct kdat_fault_park *p, struct kdat_ep *ep,
		       const u32 *gen)
{
	atomic_inc(&p->parked);
	while (!wait_event_timeout(kdat_fault_cm_wq,
				   !kdat_fault_park_holds(p, ep, gen), HZ / 10))
		;
}

/* Point @p at @ep (NULL: nobody's); the number of parks so far. */
static int kdat_test_fault_park(struct kdat_fault_park *p, DAT_EP_HANDLE ep)
{
	WRITE_ONCE(p->ep, (struct kdat_ep *)ep);
	wake_up_all(&kdat_fault_cm_wq);
	return atomic_read(&p->parked);
}

/* For kdat_test: park the end of @ep's connection. */
int kdat_test_fault_gone_park(DAT_EP_HANDLE ep)
{
	return kdat_test_fault_park(&kdat_fault_gone, ep);
}
EXPORT_SYMBOL_GPL(kdat_test_fault_gone_park);

/* For kdat_test: park the QP teardown of @ep (a free, reset or removal). */
int kdat_test_fault_qp_park(DAT_EP_HANDLE ep)
{
	return kdat_test_fault_park(&kdat_fault_qp, ep);
}
EXPORT_SYMBOL_GPL(kdat_test_fault_qp_park);

/* For kdat_test, which has no file: on until it turns it off. */
void kdat_test_fault_new_qp_post(bool on)
{
	mutex_lock(&kdat_fault_lock);
	kdat_fault_set(&kdat_fault_new_qp_post_sw, on, NULL);
	mutex_unlock(&kdat_fault_lock);
}
EXPORT_SYMBOL_GPL(kdat_test_fault_new_qp_post);

void kdat_fault_debugfs_init(struct dentry *dir)
{
	debugfs_create_file("fault_ring_tail", 0600, dir, &kdat_fault_ring_sw,
			    &kdat_fault_fops);
	debugfs_create_file("fault_cm_hold", 0600, dir, &kdat_fault_cm_sw,
			    &kdat_fault_fops);
	debugfs_create_file("fault_no_opener", 0600, dir,
			    &kdat_fault_opener_sw, &kdat_fault_fops);
	debugfs_create_file("fault_new_qp_post", 0600, dir,
			    &kdat_fault_new_qp_post_sw, &kdat_fault_fops);
}
