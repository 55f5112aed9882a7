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

QS=${QS:-1 16 128}
REPEAT=${REPEAT:-3}
ITERS=${ITERS:-20480}
SIZE=${SIZE:-64}
DEPTH=${DEPTH:-512}
PT_EXTRA=${PT_EXTRA:-}
PT_TIMEOUT=${PT_TIMEOUT:-60}
OUTDIR=${1:-${OUTDIR:-}}
SRV_ADDR=192.0.2.1
PT_PORT=18515
LOG=$(mktemp -d)
status=0

log() { echo "run-bench: $*" >&2; }

# Counters of the receiving device: RNR NAKs sent (a sender found the SRQ
# empty and waits for the RNR timer) and packets received.
ctr() { cat "/sys/class/infiniband/rxe0/ports/1/hw_counters/$1" 2>/dev/null || echo 0; }

depth_for() { local d=$((32767 / $1)); echo $((d < DEPTH ? d : DEPTH)); }
window_for() {
	local w=$(($(depth_for "$1") / (2 * $1)))
	((w < 1)) && w=1
	((w > 64)) && w=64
	echo "$w"
}

# kdat Q -> msg/s on stdout (empty on failure)
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

# perftest Q -> msg/s on stdout (empty on failure)
run_perftest() {
	local q=$1 n=$((ITERS / $1)) spid crc src rate
	# shellcheck disable=SC2206 # PT_EXTRA is a list of options
	local args=(--use-srq -x 1 -q "$q" -s "$SIZE" -n "$n" -F
		-r "$(depth_for "$q")" -t "$(window_for "$q")" $PT_EXTRA)
	timeout "$PT_TIMEOUT" ib_send_bw -d rxe0 "${args[@]}" >"$LOG/pt-srv" 2>&1 &
	spid=$!
	for _ in $(seq 200); do
		ss -Hltn "sport = :$PT_PORT" | grep -q . && break
		sleep 0.05
	done
	timeout "$PT_TIMEOUT" ib_send_bw -d rxe1 "${args[@]}" "$SRV_ADDR" >"$LOG/pt-cli" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	{
		echo "== ib_send_bw ${args[*]} (client $crc, server $src)"
		grep -A1 'MsgRate' "$LOG/pt-srv"
	} >>"$LOG/perftest.log"
	# the receiver's report: "#bytes #iterations BW-peak BW-avg MsgRate[Mpps]"
	rate=$(awk 'f && NF >= 5 { printf "%.0f", $5 * 1000000; exit } /MsgRate/ { f = 1 }' "$LOG/pt-srv")
	if [[ $crc != 0 || $src != 0 || -z $rate ]]; then
		log "perftest -q $q failed (client $crc, server $src):"
		grep -v -e GID -e address "$LOG/pt-srv" "$LOG/pt-cli" | tail -n 4 >&2
		return
	fi
	echo "$rate"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

if ! insmod kernel/kdat.ko; then
	log "cannot load kernel/kdat.ko (build it first: make module test-modules)"
	exit 1
fi
for q in $QS; do
	if ((ITERS / q < q)); then
		log "ITERS=$ITERS is too small for perftest with $q QPs (needs ITERS / Q >= Q)"
		exit 1
	fi
done

# What single calls cost, next to the raw verb (no traffic; under a second).
for ((rep = 1; rep <= REPEAT; rep++)); do
	mark=$(dmesg | wc -l)
	if insmod tests/bench/kdat_bench.ko micro=1; then
		rmmod kdat_bench
	fi
	dmesg | tail -n +"$((mark + 1))" | sed -n 's/.*kdat_bench: micro: //p' >>"$LOG/micro"
done

RUNS=$LOG/runs # "Q rep kdat perftest rnr"
: >"$RUNS"
start=$SECONDS
for ((rep = 1; rep <= REPEAT; rep++)); do
	for q in $QS; do
		rnr0=$(ctr send_rnr_err)
		k=$(run_kdat "$q")
		rnr1=$(ctr send_rnr_err)
		p=$(run_perftest "$q")
		rnr2=$(ctr send_rnr_err)
		[[ -n $k && -n $p ]] || status=1
		printf '%s %s %s %s %s %s\n' "$q" "$rep" "${k:--}" "${p:--}" \
			$((rnr1 - rnr0)) $((rnr2 - rnr1)) >>"$RUNS"
		log "$(printf 'run %d Q=%-3s kdat %7s msg/s   perftest %7s msg/s   RNR NAKs %d/%d   (%ds)' \
			"$rep" "$q" "${k:--}" "${p:--}" $((rnr1 - rnr0)) $((rnr2 - rnr1)) $((SECONDS - start)))"
	done
done
rmmod kdat || { log "rmmod kdat failed"; status=1; }

TABLE=$LOG/table
{
	echo "kdat vs perftest, message rate through one SRQ (rxe1 -> rxe0, ${SIZE}-byte sends,"
	echo "$ITERS messages per run, median of $REPEAT runs; SRQ depth and per-EP window as shown)"
	echo
	printf '%5s %6s %7s %15s %19s %15s %12s\n' EPs depth window "kdat msg/s" "perftest msg/s" "kdat/perftest" "ratio range"
	for q in $QS; do
		kmed=$(awk -v q="$q" '$1 == q && $3 != "-" { print $3 }' "$RUNS" | median)
		pmed=$(awk -v q="$q" '$1 == q && $4 != "-" { print $4 }' "$RUNS" | median)
		ratios=$(awk -v q="$q" '$1 == q && $3 != "-" && $4 != "-" && $4 > 0 { printf "%.3f\n", $3 / $4 }' "$RUNS")
		rmed=$(median <<<"$ratios")
		range=$(sort -g <<<"$ratios" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.2f-%.2f", lo, hi }')
		printf '%5s %6s %7s %15s %19s %15s %12s\n' "$q" "$(depth_for "$q")" "$(window_for "$q")" \
			"$(printf '%.0f' "${kmed:-0}")" "$(printf '%.0f' "${pmed:-0}")" \
			"$(printf '%.2f' "${rmed:-0}")" "${range:--}"
	done
	echo
	echo "runs (Q rep kdat perftest, RNR NAKs sent by rxe0 during kdat / perftest):"
	sed 's/^/  /' "$RUNS"
	echo "single calls on rxe0 without traffic (tests/bench/kdat_bench.ko micro=1):"
	sed 's/^/  /' "$LOG/micro"
	echo "total time $((SECONDS - start)) s"
} >"$TABLE"
cat "$TABLE"
if [[ -n $OUTDIR ]]; then
	mkdir -p "$OUTDIR"
	cp "$TABLE" "$OUTDIR/bench.txt"
	cat "$LOG/kdat.log" "$LOG/perftest.log" >"$OUTDIR/bench-runs.log" 2>/dev/null
	log "table written to $OUTDIR/bench.txt"
fi
rm -rf "$LOG"
exit $status
