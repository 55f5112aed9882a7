#!/bin/bash
# check-kernel-log.sh FILE - fail (exit 1) and print the offending lines if a
# kernel log (dmesg output) shows a kernel bug: BUG/WARNING/Oops, lockdep and
# kmemleak reports, general protection faults, call traces.
# Exit 0: clean; 1: dirty; 2: usage error / unreadable file.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 FILE" >&2; exit 2; }
[[ -r $1 ]] || { echo "check-kernel-log: cannot read $1" >&2; exit 2; }

# What counts as a kernel problem (extended regex, case-sensitive: the kernel
# prints these markers in exactly this case).
BAD_RE=(
	'BUG:' 'kernel BUG' 'WARNING:' 'Oops' 'general protection fault'
	'Call Trace' 'RIP: ' 'Kernel panic'
	# lockdep (on debug kernels)
	'possible circular locking' 'INFO: possible' 'inconsistent lock state'
	'possible recursive locking' 'suspicious RCU usage'
	# lockdep stops checking after its first report (or when its tables
	# overflow) and says so; whatever follows went unchecked
	'debug_locks_off' 'turning off the locking correctness validator'
	# leaks: kmemleak, and ib_core's restrack ("BUG: RESTRACK detected leak
	# of resources", "restrack: ... is not freed") for unfreed PD/CQ/QP/MR
	'[Ll]eak' 'unreferenced object' 'restrack'
	# hangs and stalls
	'INFO: task .* blocked' 'soft lockup' 'hard LOCKUP' 'rcu: INFO:'
	'self-detected stall'
	# sanitizers and list/refcount debugging
	'UBSAN:' 'KASAN:' 'refcount_t:' 'list_add corruption' 'list_del corruption'
	# an rdma cgroup charge given back after its device's accounting ended
	'Invalid device .* or rdma cgroup'
)
BAD=$(IFS='|'; echo "${BAD_RE[*]}")

# Known-benign lines.  A clean boot of this rig (Debian 6.1, with and
# without mitigations=off), module loading, rxe setup and the perftest/rping
# matrix of rxe-pair-check.sh print nothing that matches; the near misses
# ("... report a bug", "This is not a bug.") are lower case.  The debug
# kernel (guest-run.sh with RIG_KERNEL_DIR) prints the two below on every
# boot (and, without acpi=noirq, ACPI "AE_AML_LOOP_TIMEOUT" errors, which
# match nothing).
# Add an exception only for a line actually seen, matched as narrowly as
# possible, with a comment saying why it is harmless.
BENIGN=(
	# the kernel echoes its command line twice: it holds "kmemleak=on"
	# (debug kernel) and the rig's base64 parameters, whose letters can
	# spell anything ("Leak", "Oops")
	'^\[ *[0-9]+\.[0-9]+\] (Kernel c|C)ommand line: console=ttyS0 .* rig_init='
	# kmemleak's start-up banner (debug kernel), not a report
	'^\[ *[0-9]+\.[0-9]+\] kmemleak: Kernel memory leak detector initialized \(mem pool available: [0-9]+\)$'
)

bad=$(grep -E -- "$BAD" "$1" || true)
for re in "${BENIGN[@]}"; do
	[[ -n $bad ]] || break
	bad=$(grep -Ev -- "$re" <<<"$bad" || true)
done

if [[ -n $bad ]]; then
	echo "check-kernel-log: $1 has kernel problems:"
	echo "$bad"
	exit 1
fi
exit 0
