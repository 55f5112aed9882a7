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
BAD='BUG:|WARNING:|Oops|kernel BUG|possible circular locking|INFO: possible|inconsistent lock state|general protection fault|unreferenced object|kmemleak|[Ll]eak|Call Trace|RIP:|Kernel panic|INFO: task .* blocked|soft lockup|hard LOCKUP|rcu_sched self-detected stall|rcu: INFO:|UBSAN:|KASAN:|refcount_t:|list_add corruption|list_del corruption'

# Known-benign lines seen on a clean boot of this rig; each one is matched as
# narrowly as possible.  Keep one comment per exception saying why.
BENIGN=(
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
