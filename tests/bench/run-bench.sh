#!/usr/bin/env bash
# tests/bench/run-bench.sh [OUTDIR] - message rate through one SRQ: kdat
# (tests/bench/kdat_bench.ko, a kernel consumer) against raw ib_core (the
# same module with peer=raw: the same server loop on plain verbs,
# tests/bench/raw_srv.h) and against perftest (ib_send_bw --use-srq, raw
# verbs from userspace) on the same Soft-RoCE devices in the same guest:
# senders on rxe1, receivers sharing one SRQ on rxe0 (192.0.2.1).  In the
# kdat and raw runs the senders are the same kdat kernel EPs, so kdat/raw
# measures the server path (SRQ post, completion, event, upcall).  Runs
# INSIDE the test guest, from the repo root, with the modules built:
#
#   tests/vm/guest-run.sh -q -o $PWD/build/vm/bench -t 900 -- \
#       env OUTDIR=$PWD/build/vm/bench tests/bench/run-bench.sh
#
# For each EP/QP count Q it runs kdat, raw and perftest REPEAT times,
# alternating, each moving ITERS 64-byte messages in all, and prints a
# table of medians and of the per-run ratios kdat/raw and kdat/perftest
# (median and range).  The single-call costs (micro=1) come first.  With
# OUTDIR the table goes to OUTDIR/bench.txt and every ratio, one line
# "label median min max goal", to OUTDIR/ratios.dat; tests/bench/chart.sh
# renders that as OUTDIR/bench-kernel.png if gnuplot is installed.
#
# Queue sizes as in lib.sh: an SRQ of DEPTH(Q) buffers and WINDOW(Q) sends
# in flight per connection, the same for all three.
#
# Environment: QS ("1 16 128"), REPEAT (3), ITERS (20480), SIZE (64),
# DEPTH (512), PT_EXTRA (extra ib_send_bw options), PT_TIMEOUT (60 s per
# perftest run), MICRO_REPEAT (REPEAT).
# Exit status: 0 if every run produced a rate.
set -uo pipefail

OUTDIR=${1:-${OUTDIR:-}}
LOG=$(mktemp -d)
status=0

log() { echo "run-bench: $*" >&2; }

# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# kdat_bench Q [PARAM=VALUE...] -> msg/s on stdout (empty on failure)
bench_rate() {
	local q=$1 mark line
	shift
	mark=$(dmesg | wc -l)
	if ! insmod tests/bench/kdat_bench.ko neps="$q" size="$SIZE" iters="$ITERS" \
		depth="$(depth_for "$q")" window="$(window_for "$q")" "$@"; then
		log "insmod kdat_bench failed (neps=$q $*)"
		return
	fi
	for _ in $(seq 20); do
		line=$(dmesg | tail -n +"$((mark + 1))" | grep -E 'kdat_bench: (peer=raw )?(eps=|FAILED)' | tail -n1)
		[[ -n $line ]] && break
		sleep 0.1
	done
	rmmod kdat_bench || log "rmmod kdat_bench failed"
	dmesg | tail -n +"$((mark + 1))" | grep 'kdat_bench:' >>"$LOG/kdat.log"
	if [[ $line =~ rate=([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		log "kdat_bench neps=$q $*: ${line:-no result line}"
	fi
}

if ! insmod kernel/kdat.ko; then
	log "cannot load kernel/kdat.ko (build it first: make module test-modules)"
	exit 1
fi
check_iters

# What single calls cost, next to the raw verb (no traffic; under a second).
for ((rep = 1; rep <= ${MICRO_REPEAT:-$REPEAT}; rep++)); do
	mark=$(dmesg | wc -l)
	if insmod tests/bench/kdat_bench.ko micro=1; then
		rmmod kdat_bench
	fi
	dmesg | tail -n +"$((mark + 1))" | sed -n 's/.*kdat_bench: micro: //p' >>"$LOG/micro"
done

RUNS=$LOG/runs # "Q rep kdat raw perftest rnr_kdat rnr_raw rnr_perftest"
: >"$RUNS"
start=$SECONDS
for ((rep = 1; rep <= REPEAT; rep++)); do
	for q in $QS; do
		n0=$(ctr send_rnr_err)
		k=$(bench_rate "$q")
		n1=$(ctr send_rnr_err)
		r=$(bench_rate "$q" peer=raw)
		n2=$(ctr send_rnr_err)
		p=$(run_perftest "$q")
		n3=$(ctr send_rnr_err)
		[[ -n $k && -n $r && -n $p ]] || status=1
		echo "$q $rep ${k:--} ${r:--} ${p:--} $((n1 - n0)) $((n2 - n1)) $((n3 - n2))" >>"$RUNS"
		log "$(printf 'run %d Q=%-3s kdat %6s  raw %6s  perftest %6s msg/s  RNR NAKs %d/%d/%d  (%ds)' \
			"$rep" "$q" "${k:--}" "${r:--}" "${p:--}" $((n1 - n0)) $((n2 - n1)) $((n3 - n2)) $((SECONDS - start)))"
	done
done
rmmod kdat || { log "rmmod kdat failed"; status=1; }

# ratio_stats COL_A COL_B Q -> "median min max" of column A / column B
ratio_stats() {
	local r
	r=$(awk -v q="$3" -v a="$1" -v b="$2" '$1 == q && $a != "-" && $b != "-" && $b > 0 { printf "%.3f\n", $a / $b }' "$RUNS")
	[[ -n $r ]] || { echo "0 0 0"; return; }
	echo "$(median <<<"$r") $(range <<<"$r" | tr - ' ')"
}
col_median() { awk -v q="$2" -v c="$1" '$1 == q && $c != "-" { print $c }' "$RUNS" | median; }

RATIOS=$LOG/ratios.dat
: >"$RATIOS"
TABLE=$LOG/table
{
	echo "kdat vs raw ib_core vs perftest, message rate through one SRQ (rxe1 -> rxe0,"
	echo "${SIZE}-byte sends, $ITERS messages per run, $REPEAT runs alternating; kdat and raw"
	echo "servers have the same kdat kernel clients; ratios: median (range) of per-run ratios)"
	echo
	fmt='%5s %6s %7s %11s %11s %15s %17s %17s\n'
	# shellcheck disable=SC2059 # one format for the header and the rows
	printf "$fmt" EPs depth window "kdat msg/s" "raw msg/s" "perftest msg/s" "kdat/raw" "kdat/perftest"
	for q in $QS; do
		read -r km klo khi <<<"$(ratio_stats 3 4 "$q")"
		read -r pm plo phi <<<"$(ratio_stats 3 5 "$q")"
		echo "kernel-vs-raw-${q}EPs $km $klo $khi 0.95" >>"$RATIOS"
		echo "kernel-vs-perftest-${q}EPs $pm $plo $phi 1.0" >>"$RATIOS"
		# shellcheck disable=SC2059
		printf "$fmt" "$q" "$(depth_for "$q")" "$(window_for "$q")" \
			"$(printf '%.0f' "$(col_median 3 "$q")")" "$(printf '%.0f' "$(col_median 4 "$q")")" \
			"$(printf '%.0f' "$(col_median 5 "$q")")" \
			"$(printf '%.2f (%.2f-%.2f)' "$km" "$klo" "$khi")" \
			"$(printf '%.2f (%.2f-%.2f)' "$pm" "$plo" "$phi")"
	done
	# post cost: ib_post_srq_recv / dat_srq_post_recv per run (higher is better)
	pr=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		if (v["dat_srq_post_recv"] > 0) printf "%.3f\n", v["ib_post_srq_recv"] / v["dat_srq_post_recv"] }' "$LOG/micro")
	if [[ -n $pr ]]; then
		echo "post-ib/dat_srq_post_recv $(median <<<"$pr") $(range <<<"$pr" | tr - ' ') 0.667" >>"$RATIOS"
	fi
	echo
	echo "goals: kdat/raw >= 0.95 at every EP count; kdat/perftest >= 1.0;"
	echo "dat_srq_post_recv <= 1.5x ib_post_srq_recv (ratios.dat: ib/dat >= 0.667)"
	awk '{ printf "  %-32s %5.2f (%.2f-%.2f) goal %s: %s\n", $1, $2, $3, $4, $5, ($2 >= $5 ? "met" : "missed") }' "$RATIOS"
	echo
	echo "runs (Q rep kdat raw perftest msg/s, RNR NAKs sent by rxe0 during kdat / raw / perftest):"
	sed 's/^/  /' "$RUNS"
	echo "single calls on rxe0 without traffic (tests/bench/kdat_bench.ko micro=1), ns per call:"
	sed 's/^/  /' "$LOG/micro"
	echo "  median (range) over the runs:"
	awk '{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) print kv[1], kv[2] }' "$LOG/micro" |
		sort -k1,1 -k2,2n | awk '{ v[$1] = v[$1] " " $2; n[$1]++ }
		END { for (k in v) { c = split(substr(v[k], 2), a, " "); m = c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
			printf "    %-26s %7.0f (%s-%s)\n", k, m, a[1], a[c] } }' | sort
	# the least a post can cost that adds one lock of its own (and a use
	# count) to the device's post: the floor under the 1.5x goal here
	fl=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		if (v["ib_post_srq_recv"] > 0 && v["lock_irqsave_pair"] > 0)
			printf "%.2f %.2f\n", (v["ib_post_srq_recv"] + v["lock_irqsave_pair"]) / v["ib_post_srq_recv"],
				(v["ib_post_srq_recv"] + v["lock_irqsave_pair"] + v["use_count_pair"] + v["kdat_call"]) / v["ib_post_srq_recv"] }' "$LOG/micro")
	if [[ -n $fl ]]; then
		echo "  floor of dat_srq_post_recv / ib_post_srq_recv, median (range) over the runs:"
		echo "    + one lock_irqsave_pair:                   $(cut -d' ' -f1 <<<"$fl" | median) ($(cut -d' ' -f1 <<<"$fl" | range))"
		echo "    + lock, use_count_pair and one kdat_call: $(cut -d' ' -f2 <<<"$fl" | median) ($(cut -d' ' -f2 <<<"$fl" | range))"
	fi
	echo "total time $((SECONDS - start)) s"
} >"$TABLE"
if [[ -n $OUTDIR ]]; then
	mkdir -p "$OUTDIR"
	cp "$RATIOS" "$OUTDIR/ratios.dat"
	if command -v gnuplot >/dev/null; then
		"$(dirname "${BASH_SOURCE[0]}")/chart.sh" "$OUTDIR/ratios.dat" "$OUTDIR/bench-kernel.png" \
			"kdat kernel consumer: ratios per run (median, range), goal lines" ||
			log "chart.sh failed"
	fi
fi
finish bench "$LOG/kdat.log" "$LOG/perftest.log"
