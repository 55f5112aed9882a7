#!/usr/bin/env bash
# tests/bench/run-bench.sh [OUTDIR] - message rate through one SRQ: kdat
# (tests/bench/kdat_bench.ko, a kernel consumer) against perftest
# (ib_send_bw --use-srq, raw verbs from userspace) on the same Soft-RoCE
# devices in the same guest: senders on rxe1, receivers sharing one SRQ on
# rxe0 (192.0.2.1).  Runs INSIDE the test guest, from the repo root, with
# the modules already built:
#
#   tests/vm/guest-run.sh -q -o $PWD/build/vm/bench -t 900 -- \
#       env OUTDIR=$PWD/build/vm/bench tests/bench/run-bench.sh
#
# For each EP/QP count Q it runs both REPEAT times, alternating, each
# moving ITERS 64-byte messages in all, and prints a table of medians:
#   EPs | kdat msg/s | perftest msg/s | kdat/perftest (median of per-run ratios)
# The table (and every run) is also written to OUTDIR (argument or
# environment) if one is given.
#
# Both sides use the same queue sizes: an SRQ of DEPTH(Q) buffers and
# WINDOW(Q) sends in flight per connection (perftest -r / -t), with
#   DEPTH(Q)  = min(DEPTH, 32767 / Q)   perftest's receive CQ is -r x Q
#                                       entries and rxe allows 32767
#   WINDOW(Q) = DEPTH(Q) / (2 Q), 1..64 in flight stays within the SRQ
# perftest needs ITERS / Q >= Q (its SRQ depth is capped at the per-QP
# iteration count and must exceed the QP count).
#
# Environment: QS ("1 16 128"), REPEAT (3), ITERS (20480), SIZE (64),
# DEPTH (512), PT_EXTRA (extra ib_send_bw options, e.g. "-e"; -e did not
# finish with 128 QPs here), PT_TIMEOUT (60 s per perftest run).
# Exit status: 0 if every run produced a rate.
set -uo pipefail

OUTDIR=${1:-${OUTDIR:-}}
LOG=$(mktemp -d)
status=0

log() { echo "run-bench: $*" >&2; }

# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# kdat Q -> msg/s on stdout (empty on failure)
# shellcheck disable=SC2317 # called through rate_runs
run_kdat() {
	local q=$1 mark line
	mark=$(dmesg | wc -l)
	if ! insmod tests/bench/kdat_bench.ko neps="$q" size="$SIZE" iters="$ITERS" \
		depth="$(depth_for "$q")" window="$(window_for "$q")"; then
		log "insmod kdat_bench failed (neps=$q)"
		return
	fi
	for _ in $(seq 20); do
		line=$(dmesg | tail -n +"$((mark + 1))" | grep -E 'kdat_bench: (eps=|FAILED)' | tail -n1)
		[[ -n $line ]] && break
		sleep 0.1
	done
	rmmod kdat_bench || log "rmmod kdat_bench failed"
	dmesg | tail -n +"$((mark + 1))" | grep 'kdat_bench:' >>"$LOG/kdat.log"
	if [[ $line =~ rate=([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		log "kdat_bench neps=$q: ${line:-no result line}"
	fi
}

if ! insmod kernel/kdat.ko; then
	log "cannot load kernel/kdat.ko (build it first: make module test-modules)"
	exit 1
fi
check_iters

# What single calls cost, next to the raw verb (no traffic; under a second).
for ((rep = 1; rep <= REPEAT; rep++)); do
	mark=$(dmesg | wc -l)
	if insmod tests/bench/kdat_bench.ko micro=1; then
		rmmod kdat_bench
	fi
	dmesg | tail -n +"$((mark + 1))" | sed -n 's/.*kdat_bench: micro: //p' >>"$LOG/micro"
done

RUNS=$LOG/runs # "Q rep kdat perftest rnr_kdat rnr_perftest"
start=$SECONDS
rate_runs run_kdat kdat
rmmod kdat || { log "rmmod kdat failed"; status=1; }

TABLE=$LOG/table
{
	echo "kdat vs perftest, message rate through one SRQ (rxe1 -> rxe0, ${SIZE}-byte sends,"
	echo "$ITERS messages per run, median of $REPEAT runs; SRQ depth and per-EP window as shown)"
	echo
	fmt='%5s %6s %7s %15s %19s %15s %12s\n'
	# shellcheck disable=SC2059 # one format for the header and the rows
	printf "$fmt" EPs depth window "kdat msg/s" "perftest msg/s" "kdat/perftest" "ratio range"
	rate_rows "$fmt"
	echo
	echo "runs (Q rep kdat perftest, RNR NAKs sent by rxe0 during kdat / perftest):"
	sed 's/^/  /' "$RUNS"
	echo "single calls on rxe0 without traffic (tests/bench/kdat_bench.ko micro=1):"
	sed 's/^/  /' "$LOG/micro"
	echo "total time $((SECONDS - start)) s"
} >"$TABLE"
finish bench "$LOG/kdat.log" "$LOG/perftest.log"
