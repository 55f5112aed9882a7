#!/usr/bin/env bash
# scripts/guest/demo.sh [kdat_demo params...] - runs INSIDE the test guest
# (tests/vm/guest-run.sh), from the repo root: loads kernel/kdat.ko and the
# demo consumer examples/kernel/kdat_demo.ko (a storage-target-like server
# with one SRQ serving many client EPs, rxe1 -> rxe0), prints what the demo
# reported, shows the provider's live-object counters, and unloads both.
# Extra arguments are passed to kdat_demo (for example neps=64 msgs=100).
#
#   tests/vm/guest-run.sh -q -o $PWD/build/vm/demo -t 600 -- scripts/guest/demo.sh
#
# Exit status: 0 if the demo reported PASS, nothing was left in the provider
# and both modules unloaded; 1 otherwise.
set -uo pipefail

OBJECTS=/sys/kernel/debug/kdat/objects
status=0
fail() { echo "demo: FAIL: $*"; status=1; }

# dmesg lines after line $1, with the "[ time] kdat_demo: " prefix removed.
demo_lines() { dmesg | tail -n +"$(($1 + 1))" | sed -n 's/^\[[^]]*\] kdat_demo: //p'; }

# rxe counters: RNR NAKs the server side sent (a client then waits and retries)
rnr() { cat /sys/class/infiniband/rxe0/ports/1/hw_counters/send_rnr_err 2>/dev/null || echo 0; }

mark=$(dmesg | wc -l)
if ! insmod kernel/kdat.ko; then
	echo "demo: FAIL: cannot load kernel/kdat.ko (build it first: make module)"
	exit 1
fi
rnr0=$(rnr)
start=$(date +%s.%N)
echo "== kdat_demo $*"
if insmod examples/kernel/kdat_demo.ko "$@"; then
	end=$(date +%s.%N)
	demo_lines "$mark" | sed 's/^/  /'
	awk -v s="$start" -v e="$end" -v r=$(($(rnr) - rnr0)) \
		'BEGIN { printf "  (insmod took %.1f s; RNR NAKs sent by rxe0: %d)\n", e - s, r }'
	demo_lines "$mark" | grep -q '^result: PASS$' || fail "the demo did not report PASS"
	rmmod kdat_demo || fail "rmmod kdat_demo"
else
	demo_lines "$mark" | sed 's/^/  /'
	fail "insmod examples/kernel/kdat_demo.ko"
fi

# --- the same objects from user space: libdat over /dev/kdat ----------------
B=build/user
if [[ -x $B/tools/datinfo ]]; then
	echo "== datinfo (libdat: providers and IAs)"
	"$B/tools/datinfo" 2>&1 | sed 's/^/  /' || fail "datinfo"
	echo "== srq_server 4 & srq_client 4 20 (C++: one SRQ serving 4 client EPs)"
	"$B/examples/srq_server" 4 7788 >/tmp/srq_server.out 2>&1 &
	srv=$!
	# the client connects once the server says it listens
	for _ in $(seq 100); do
		grep -q "port 7788" /tmp/srq_server.out 2>/dev/null && break
		sleep 0.1
	done
	timeout 120 "$B/examples/srq_client" 4 20 192.0.2.1 7788 2>&1 | sed 's/^/  client: /' ||
		fail "srq_client"
	wait "$srv" || fail "srq_server"
	sed 's/^/  server: /' /tmp/srq_server.out
	echo "== srq_pingpong 4 10 (plain C: the C ABI)"
	timeout 120 "$B/examples/srq_pingpong" 4 10 2>&1 | sed 's/^/  /' ||
		fail "srq_pingpong"
else
	echo "== (libdat not built: make user)"
fi

echo "== $OBJECTS"
sed 's/^/  /' "$OBJECTS"
total=$(awk '$1 == "total" { print $2 }' "$OBJECTS")
[[ $total == 0 ]] || fail "$total kdat objects still live"

rmmod kdat || fail "rmmod kdat"
dmesg | tail -n +"$((mark + 1))" | grep -q 'kdat: leak' && fail "kdat reported a leak at unload"
[[ $status == 0 ]] && echo "demo: PASS"
exit $status
