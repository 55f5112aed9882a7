/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kdat_harness.h - the case runner of kdat_race and kdat_fuzz.
 *
 * Output (parsed by the rig): "PLAN: N", then exactly one "PASS: <case>"
 * or "FAIL: <case> <why>" per case, then "N passed, M failed"; the exit
 * status is non-zero if a case failed.
 *
 * Every case runs in a forked child (its own process group, its own
 * /dev/kdat files) under a deadline: a case that hangs is killed and
 * fails alone, with the kernel wait channel of each of its threads in the
 * message; one that crashes fails with its signal.  After each case the
 * harness waits (bounded poll: releases may be deferred to a work item)
 * for /sys/kernel/debug/kdat/objects to read "total 0" and fails the case
 * if objects remain that were not there before it (if an earlier case
 * left some, e.g. a child stuck in the kernel, the message says so and
 * only new ones count against this case).  New kernel log lines matching
 * the rig's list of kernel problems (WARNING, BUG, refcount_t, KASAN, hung
 * task, ...) fail the case they appeared during.
 */
#ifndef KDAT_HARNESS_H
#define KDAT_HARNESS_H

#include "kdat_raw.h"

#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* Printed right after "PLAN: N" when set (kdat_fuzz: "SEED: <n>"). */
static const char *kh_header;

struct kcase {
	const char *name;
	void (*fn)(void);
};

/* LONG_MIN: the counter cannot be read. */
#define KH_NOCOUNT LONG_MIN

static inline long objects_total(void)
{
	FILE *f = fopen("/sys/kernel/debug/kdat/objects", "r");
	char line[128];
	long n = KH_NOCOUNT;

	if (!f)
		return KH_NOCOUNT;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "total %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Bounded poll for the counter to reach @want (or below); its last value. */
static inline long objects_settle(long want, double secs)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	double end = now_s() + secs;
	long n;

	for (;;) {
		n = objects_total();
		if (n == KH_NOCOUNT || n == want || now_s() > end)
			return n;
		nanosleep(&ts, NULL);
	}
}

/* Objects this case still holds (above the baseline), after a bounded wait. */
static inline long objects_left(double secs)
{
	long n = objects_settle(kr_baseline, secs);

	return n == KH_NOCOUNT ? n : n - kr_baseline;
}

/* ---- kernel log ---------------------------------------------------------- */

static int kh_kmsg = -1;
static regex_t kh_bad, kh_fatal_re;
static char kh_klog[512];	/* first problem line of the current case */
static bool kh_fatal;		/* an oops/BUG/panic: the case's task may be dead */

static inline void kmsg_init(void)
{
	/* the same list as tests/vm/check-kernel-log.sh */
	static const char *re =
		"BUG:|kernel BUG|WARNING:|Oops|general protection fault|"
		"Call Trace|RIP: |Kernel panic|possible circular locking|"
		"INFO: possible|inconsistent lock state|possible recursive locking|"
		"suspicious RCU usage|[Ll]eak|unreferenced object|restrack|"
		"INFO: task .* blocked|soft lockup|hard LOCKUP|rcu: INFO:|"
		"self-detected stall|UBSAN:|KASAN:|refcount_t:|"
		"list_add corruption|list_del corruption|"
		"Invalid device .* or rdma cgroup";
	static const char *fatal =
		"BUG:|kernel BUG|Oops|general protection fault|Kernel panic|KASAN:";

	if (regcomp(&kh_bad, re, REG_EXTENDED | REG_NOSUB) ||
	    regcomp(&kh_fatal_re, fatal, REG_EXTENDED | REG_NOSUB))
		abort();
	kh_kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kh_kmsg >= 0)
		lseek(kh_kmsg, 0, SEEK_END);
}

/* Read the new kernel log lines; keep the first problem, note fatal ones. */
static inline void kmsg_poll(void)
{
	char rec[8192];
	ssize_t len;

	if (kh_kmsg < 0)
		return;
	for (;;) {
		len = read(kh_kmsg, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (len <= 0)
			break;
		rec[len] = '\0';
		char *msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		char *nl = strchr(msg, '\n');
		if (nl)
			*nl = '\0';
		if (regexec(&kh_bad, msg, 0, NULL, 0))
			continue;
		if (!kh_klog[0])
			snprintf(kh_klog, sizeof(kh_klog), "%.*s",
				 (int)sizeof(kh_klog) - 1, msg);
		if (!regexec(&kh_fatal_re, msg, 0, NULL, 0))
			kh_fatal = true;
	}
}

static inline void kmsg_forget(void)
{
	kmsg_poll();
	kh_klog[0] = '\0';
	kh_fatal = false;
}

/* ---- the runner ------------------------------------------------------------ */

/*
 * Where @pid's threads are, for a timeout's report: "tid:wchan tid:wchan
 * ..." into @out, and each thread's kernel stack to stderr (root only; the
 * guest runs as root), which says more than a wait channel (empty for a
 * running task).
 */
static inline void thread_report(pid_t pid, char *out, size_t n)
{
	char path[64];
	struct dirent *d;
	size_t used = 0;
	DIR *dir;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		char w[64] = "", p2[384], line[256];
		FILE *f;
		int k = 0;

		if (d->d_name[0] == '.')
			continue;
		snprintf(p2, sizeof(p2), "%s/%s/wchan", path, d->d_name);
		f = fopen(p2, "r");
		if (f) {
			if (!fgets(w, sizeof(w), f))
				w[0] = '\0';
			fclose(f);
		}
		if (used + 64 < n)
			used += snprintf(out + used, n - used, "%s%s:%s",
					 used ? " " : "", d->d_name,
					 w[0] ? w : "?");
		snprintf(p2, sizeof(p2), "%s/%s/stack", path, d->d_name);
		f = fopen(p2, "r");
		if (!f)
			continue;
		fprintf(stderr, "# thread %s kernel stack:\n", d->d_name);
		while (k++ < 24 && fgets(line, sizeof(line), f))
			fprintf(stderr, "#   %s", line);
		fclose(f);
	}
	closedir(dir);
}

static inline int kh_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/*
 * Wait up to @secs for @pid to end; 1 and *status if it did.  Watches the
 * kernel log meanwhile: after an oops the case's task may be gone with
 * its locks held, so a fatal message cuts the wait to a few seconds.
 */
static inline int kh_wait(pid_t pid, int pidfd, double secs, int *status)
{
	double end = now_s() + secs;
	bool cut = false;

	for (;;) {
		double left = end - now_s();
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		if (waitpid(pid, status, WNOHANG) == pid)
			return 1;
		kmsg_poll();
		if (kh_fatal && !cut) {
			cut = true;
			if (left > 3)
				end = now_s() + 3, left = 3;
		}
		if (left <= 0)
			return 0;
		if (left > 1)
			left = 1;
		if (pidfd >= 0) {
			poll(&p, 1, (int)(left * 1000) + 1);
		} else {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

/* Does @name contain one of the comma-separated substrings of @only? */
static inline bool kh_selected(const char *name, const char *only)
{
	char buf[512], *tok, *save;

	if (!only || !*only)
		return true;
	snprintf(buf, sizeof(buf), "%s", only);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (strstr(name, tok))
			return true;
	return false;
}

/*
 * Run @n cases; @only (may be NULL) restricts them to the names that
 * contain one of its comma-separated substrings.
 * @deadline: seconds per case.  Returns the number of failures.
 */
static inline int run_cases(const struct kcase *cases, int n, const char *only,
			    double deadline)
{
	int i, npass = 0, nfail = 0, planned = 0;
	bool wedged = false;	/* a child stuck in the kernel for good */

	for (i = 0; i < n; i++)
		planned += kh_selected(cases[i].name, only);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("PLAN: %d\n", planned);
	if (kh_header)
		printf("%s\n", kh_header);
	fflush(stdout);
	kmsg_init();
	for (i = 0; i < n; i++) {
		const struct kcase *c = &cases[i];
		char why[2048] = "", note[300] = "", buf[1400] = "";
		double dl = wedged ? (deadline < 20 ? deadline : 20) : deadline;
		long before, after;
		int p[2], status = 0, pidfd, done;
		double t0 = now_s();
		pid_t pid;

		if (!kh_selected(c->name, only))
			continue;
		before = objects_settle(0, 0.5);
		kmsg_forget();	/* older lines belong to older cases */
		kr_baseline = before > 0 ? before : 0;
		if (pipe2(p, O_CLOEXEC))
			abort();
		fflush(stdout);
		fflush(stderr);
		pid = fork();
		if (pid < 0)
			abort();
		if (pid == 0) {
			close(p[0]);
			setpgid(0, 0);
			kr_result_fd = p[1];
			c->fn();
			kr_finish();
		}
		close(p[1]);
		setpgid(pid, pid);
		pidfd = kh_pidfd_open(pid);
		done = kh_wait(pid, pidfd, dl, &status);
		if (!done) {
			char w[700];

			thread_report(pid, w, sizeof(w));
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			if (kh_wait(pid, pidfd, wedged ? 5.0 : 20.0, &status)) {
				snprintf(why, sizeof(why), "%s %.0f s (threads in: %s)",
					 kh_fatal ? "stopped after a kernel oops; it had run" :
						    "timeout: still running after",
					 now_s() - t0, w);
			} else {
				snprintf(why, sizeof(why),
					 "hung: still running after %.0f s and did not die on SIGKILL (threads in: %s)",
					 now_s() - t0, w);
				wedged = true;
			}
		}
		if (pidfd >= 0)
			close(pidfd);
		/* the child's words: a failure and/or a \x01 note */
		{
			ssize_t len = 0, r;

			fcntl(p[0], F_SETFL, O_NONBLOCK);
			while (len < (ssize_t)sizeof(buf) - 1 &&
			       (r = read(p[0], buf + len, sizeof(buf) - 1 - len)) > 0)
				len += r;
			buf[len > 0 ? len : 0] = '\0';
			close(p[0]);
			char *m = strchr(buf, '\x01');
			if (m) {
				snprintf(note, sizeof(note), "%s", m + 1);
				*m = '\0';
			}
		}
		if (done && !why[0]) {
			if (WIFSIGNALED(status))
				snprintf(why, sizeof(why), "killed by signal %d (%s)%s%s",
					 WTERMSIG(status), strsignal(WTERMSIG(status)),
					 buf[0] ? ": " : "", buf);
			else if (WEXITSTATUS(status))
				snprintf(why, sizeof(why), "%s",
					 buf[0] ? buf : "exited non-zero without a reason");
		}
		after = objects_settle(0, wedged ? 1.0 : 5.0);
		if (!why[0]) {
			if (after == KH_NOCOUNT)
				snprintf(why, sizeof(why),
					 "cannot read /sys/kernel/debug/kdat/objects (module loaded? debugfs mounted?)");
			else if (after < 0 && after < before)
				snprintf(why, sizeof(why),
					 "objects total %ld after the case (%ld before it): an object was released twice",
					 after, before);
			else if (after > 0 && after > before)
				snprintf(why, sizeof(why),
					 "leak: objects total %ld after the case (%ld before it)",
					 after, before);
		}
		kmsg_poll();
		if (!why[0] && kh_klog[0])
			snprintf(why, sizeof(why), "kernel log: %s", kh_klog);
		else if (kh_klog[0] && strlen(why) + strlen(kh_klog) + 20 < sizeof(why))
			strcat(strcat(why, "; kernel log: "), kh_klog);
		if (why[0]) {
			/* one line per case */
			for (char *q = why; *q; q++)
				if (*q == '\n')
					*q = ' ';
			printf("FAIL: %s %s\n", c->name, why);
			nfail++;
		} else {
			if (note[0])
				printf("PASS: %s (%s)\n", c->name, note);
			else
				printf("PASS: %s\n", c->name);
			npass++;
		}
		fprintf(stderr, "# %s: %.1f s\n", c->name, now_s() - t0);
	}
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail;
}

#endif /* KDAT_HARNESS_H */
