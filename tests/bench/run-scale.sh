#!/usr/bin/env bash
# tests/bench/run-scale.sh [OUTDIR] - many EPs on one SRQ, in one guest run
# (make bench-scale).  Runs INSIDE the test guest, from the repo root, with
# the modules built.  kdat_bench.ko's kdat clients on rxe1 send to servers
# on rxe0 (192.0.2.1), WINDOW sends in flight per EP, an event per send:
#
# 1. set-up and rate at SCALE_QS EPs (1024 4096): kdat's server (server EPs
#    on one SRQ of DEPTH buffers) and the raw ib_core server (raw_srv.h),
#    alternating, REPEAT runs each: connection set-up time (every pair
#    connected, ESTABLISHED on both sides; the clients connect 32 at a
#    time), message rate, RNR NAKs rxe0 sent.
# 2. at SWEEP_Q EPs (1024), for two loads: the smallest SRQ depth that
#    gives zero RNR NAKs in every one of REPEAT runs, for kdat's SRQ and
#    the raw SRQ, and the smallest per-QP receive queue (raw server,
#    ib_post_recv on each QP's own RQ) that does under the same load; then
#    the receive memory both ways (buffers x SIZE bytes) and its ratio.
#      all:   every EP sends at once, WINDOW in flight each (SRQ_DEPTHS,
#             RQ_DEPTHS): the worst case for a shared queue;
#      burst: ACTIVE EPs send at a time, BURST in flight each, the next EP
#             starting when one has sent its share (BURST_SRQ_DEPTHS,
#             BURST_RQ_DEPTHS): many connections, few busy at once.  A
#             per-QP RQ must hold a burst on every EP, the SRQ only the
#             bursts in flight.
#
# Writes OUTDIR/scale.txt and OUTDIR/scale-ratios.dat (chart.sh format).
# Environment: SCALE_QS ("1024 4096"), SWEEP_Q (1024), REPEAT (2), WINDOW
# (1), SIZE (64), DEPTH (1024), ITERS (16 x Q), SRQ_DEPTHS ("16 32 64 128
# 256 512 1024"), RQ_DEPTHS ("1 2"), ACTIVE (8), BURST (16),
# BURST_SRQ_DEPTHS ("32 64 96 128 192 256"), BURST_RQ_DEPTHS ("4 8 12 16 24").
set -uo pipefail

OUTDIR=${1:-${OUTDIR:-}}
SCALE_QS=${SCALE_QS:-1024 4096}
SWEEP_Q=${SWEEP_Q:-1024}
REPEAT=${REPEAT:-2}
WINDOW=${WINDOW:-1}
SIZE=${SIZE:-64}
DEPTH=${DEPTH:-1024}
SRQ_DEPTHS=${SRQ_DEPTHS:-64 128 256 512 1024}
RQ_DEPTHS=${RQ_DEPTHS:-1 2}
ACTIVE=${ACTIVE:-8}
BURST=${BURST:-16}
BURST_SRQ_DEPTHS=${BURST_SRQ_DEPTHS:-32 64 96 128 192 256}
BURST_RQ_DEPTHS=${BURST_RQ_DEPTHS:-4 8 12 16 24}
LOG=$(mktemp -d)
status=0
start=$SECONDS

log() { echo "run-scale: $*" >&2; }
ctr() { cat "/sys/class/infiniband/rxe0/ports/1/hw_counters/$1" 2>/dev/null || echo 0; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# one Q [PARAM=VALUE...] -> "rate connect_ms rnr" (rate "-" on failure)
one() {
	local q=$1 mark line detail r0 r1 rate=- conn=-
	shift
	mark=$(dmesg | wc -l)
	r0=$(ctr send_rnr_err)
	if insmod tests/bench/kdat_bench.ko neps="$q" size="$SIZE" iters="${ITERS:-$((16 * q))}" \
		window="$WINDOW" signal=1 "$@"; then
		rmmod kdat_bench || log "rmmod kdat_bench failed"
	else
		log "insmod kdat_bench failed (neps=$q $*)"
	fi
	r1=$(ctr send_rnr_err)
	line=$(dmesg | tail -n +"$((mark + 1))" | grep -E 'kdat_bench: (peer=raw )?(eps=|FAILED)' | tail -n1)
	detail=$(dmesg | tail -n +"$((mark + 1))" | grep 'kdat_bench: detail' | tail -n1)
	dmesg | tail -n +"$((mark + 1))" | grep 'kdat_bench:' >>"$LOG/kdat.log"
	[[ $line =~ rate=([0-9]+) ]] && rate=${BASH_REMATCH[1]}
	[[ $detail =~ connect_ms=([0-9]+) ]] && conn=${BASH_REMATCH[1]}
	if [[ $rate == - ]]; then
		log "neps=$q $*: ${line:-no result line}"
		status=1
	fi
	echo "$rate $conn $((r1 - r0))"
}

if ! insmod kernel/kdat.ko; then
	log "cannot load kernel/kdat.ko (build it first: make module test-modules)"
	exit 1
fi

# 1. set-up time and rate at many EPs
SETUP=$LOG/setup # "Q rep peer rate connect_ms rnr"
for ((rep = 1; rep <= REPEAT; rep++)); do
	for q in $SCALE_QS; do
		for p in kdat raw; do
			read -r rate conn rnr <<<"$(one "$q" peer=$p depth="$DEPTH")"
			echo "$q $rep $p $rate $conn $rnr" >>"$SETUP"
			log "$(printf 'setup Q=%-4s %-4s rate %6s msg/s  connect %6s ms  RNR %d  (%ds)' \
				"$q" "$p" "$rate" "$conn" "$rnr" $((SECONDS - start)))"
		done
	done
done

# 2. the depth that gives zero RNR, shared and per EP, for each load
SWEEP=$LOG/sweep # "load kind depth rep rate rnr"
# sweep LOAD "PARAMS" "SRQ depths" "RQ depths"
sweep() {
	local load=$1 params=$2 srqd=$3 rqd=$4 rep d p r rate rnr
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for d in $srqd; do
			for p in kdat raw; do
				# shellcheck disable=SC2086 # PARAMS is a list
				read -r rate _ rnr <<<"$(one "$SWEEP_Q" peer=$p depth="$d" $params)"
				echo "$load srq-$p $d $rep $rate $rnr" >>"$SWEEP"
				log "sweep $load Q=$SWEEP_Q $p SRQ depth $d: $rate msg/s, RNR $rnr"
			done
		done
		for r in $rqd; do
			# shellcheck disable=SC2086
			read -r rate _ rnr <<<"$(one "$SWEEP_Q" peer=raw rq="$r" $params)"
			echo "$load rq-raw $r $rep $rate $rnr" >>"$SWEEP"
			log "sweep $load Q=$SWEEP_Q raw per-QP RQ depth $r: $rate msg/s, RNR $rnr"
		done
	done
}
LOADS=("all:window=$WINDOW signal=1" "burst:active=$ACTIVE window=$BURST signal=$((BURST / 4 > 0 ? BURST / 4 : 1))")
sweep all "window=$WINDOW signal=1" "$SRQ_DEPTHS" "$RQ_DEPTHS"
sweep burst "active=$ACTIVE window=$BURST signal=$((BURST / 4 > 0 ? BURST / 4 : 1))" \
	"$BURST_SRQ_DEPTHS" "$BURST_RQ_DEPTHS"
rmmod kdat || { log "rmmod kdat failed"; status=1; }

# smallest depth of KIND under LOAD whose every run had zero RNR NAKs
zero_rnr() {
	awk -v l="$1" -v k="$2" '$1 == l && $2 == k { n[$3]++; if ($5 != "-" && $6 == 0) ok[$3]++ }
		END { for (d in n) if (ok[d] == n[d]) print d }' "$SWEEP" | sort -n | head -n1
}
rate_at() { awk -v l="$1" -v k="$2" -v d="$3" '$1 == l && $2 == k && $3 == d && $5 != "-" { print $5 }' "$SWEEP" | median; }

RATIOS=$LOG/ratios.dat
: >"$RATIOS"
TABLE=$LOG/table
{
	echo "kdat at scale: kdat kernel clients on rxe1, servers on rxe0 (${SIZE}-byte sends,"
	echo "16 messages per EP; $REPEAT runs each, alternating)"
	echo
	echo "1. connection set-up (every pair ESTABLISHED on both sides) and message rate, SRQ depth $DEPTH,"
	echo "   every EP sending, window $WINDOW, an event per send:"
	fmt='%6s %6s %16s %16s %12s %12s %12s\n'
	# shellcheck disable=SC2059
	printf "$fmt" EPs server "set-up ms (med)" "set-up range" "msg/s (med)" "RNR (sum)" "kdat/raw"
	for q in $SCALE_QS; do
		for p in kdat raw; do
			cm=$(awk -v q="$q" -v p="$p" '$1 == q && $3 == p && $5 != "-" { print $5 }' "$SETUP" | median)
			cr=$(awk -v q="$q" -v p="$p" '$1 == q && $3 == p && $5 != "-" { print $5 }' "$SETUP" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) print lo "-" hi }')
			rm=$(awk -v q="$q" -v p="$p" '$1 == q && $3 == p && $4 != "-" { print $4 }' "$SETUP" | median)
			rn=$(awk -v q="$q" -v p="$p" '$1 == q && $3 == p { s += $6 } END { print s + 0 }' "$SETUP")
			rr=-
			if [[ $p == kdat ]]; then
				rr=$(awk -v q="$q" '$1 == q && $4 != "-" { r[$2 " " $3] = $4 }
					END { for (k in r) { split(k, a, " "); if (a[2] == "kdat" && (a[1] " raw") in r) print r[k] / r[a[1] " raw"] } }' "$SETUP" | sort -g)
				if [[ -n $rr ]]; then
					echo "kernel-vs-raw-${q}EPs-w$WINDOW $(median <<<"$rr") $(head -n1 <<<"$rr") $(tail -n1 <<<"$rr") 0.95" >>"$RATIOS"
					rr=$(printf '%.2f (%.2f-%.2f)' "$(median <<<"$rr")" "$(head -n1 <<<"$rr")" "$(tail -n1 <<<"$rr")")
				else
					rr=-
				fi
			fi
			# shellcheck disable=SC2059
			printf "$fmt" "$q" "$p" "${cm:--}" "${cr:--}" "${rm:--}" "$rn" "$rr"
		done
	done
	echo
	for l in "${LOADS[@]}"; do
		load=${l%%:*}
		echo "2.$load. smallest depth with zero RNR NAKs in every run at $SWEEP_Q EPs (${l#*:}):"
		dk=$(zero_rnr "$load" srq-kdat) dr=$(zero_rnr "$load" srq-raw) rq=$(zero_rnr "$load" rq-raw)
		fmt='  %-30s %8s %12s %26s\n'
		# shellcheck disable=SC2059
		printf "$fmt" "receive queue" depth "msg/s (med)" "receive buffers, bytes"
		# shellcheck disable=SC2059
		printf "$fmt" "kdat, one SRQ" "${dk:-none}" "$([[ -n $dk ]] && rate_at "$load" srq-kdat "$dk")" \
			"$([[ -n $dk ]] && echo "$dk x $SIZE = $((dk * SIZE))")"
		# shellcheck disable=SC2059
		printf "$fmt" "raw ib_core, one SRQ" "${dr:-none}" "$([[ -n $dr ]] && rate_at "$load" srq-raw "$dr")" \
			"$([[ -n $dr ]] && echo "$dr x $SIZE = $((dr * SIZE))")"
		# shellcheck disable=SC2059
		printf "$fmt" "raw ib_core, an RQ per QP" "${rq:-none}" "$([[ -n $rq ]] && rate_at "$load" rq-raw "$rq")" \
			"$([[ -n $rq ]] && echo "$SWEEP_Q x $rq x $SIZE = $((SWEEP_Q * rq * SIZE))")"
		if [[ -n $dk && -n $rq ]]; then
			ratio=$(awk -v a="$((SWEEP_Q * rq))" -v b="$dk" 'BEGIN { printf "%.1f", a / b }')
			echo "  receive memory, per-QP RQs / kdat's SRQ: ${ratio}x (goal >= 100x: $(awk -v r="$ratio" 'BEGIN { print (r >= 100 ? "met" : "missed") }'))"
			echo "rx-memory-perQP/SRQ-${SWEEP_Q}EPs-$load $ratio $ratio $ratio 100" >>"$RATIOS"
		fi
		echo
	done
	echo "set-up runs (Q rep server msg/s connect_ms RNR):"
	sed 's/^/  /' "$SETUP"
	echo "sweep runs (load queue depth rep msg/s RNR):"
	sed 's/^/  /' "$SWEEP"
	echo "total time $((SECONDS - start)) s"
} >"$TABLE"
cat "$TABLE"
if [[ -n $OUTDIR ]]; then
	mkdir -p "$OUTDIR"
	cp "$TABLE" "$OUTDIR/scale.txt"
	cp "$RATIOS" "$OUTDIR/scale-ratios.dat"
	cp "$LOG/kdat.log" "$OUTDIR/scale-runs.log"
	log "table written to $OUTDIR/scale.txt"
fi
rm -rf "$LOG"
exit "$status"
