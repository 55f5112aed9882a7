#!/usr/bin/env bash
# tests/bench/run-user-bench.sh [OUTDIR] - libdat (user space over
# /dev/kdat) against rdma-core and perftest on the same Soft-RoCE devices
# in the same guest, measured with datperf (tools/datperf.cpp).  Runs
# INSIDE the test guest, from the repo root, with the module and libdat
# built (make module && make user):
#
#   tests/vm/guest-run.sh -q -o $PWD/build/vm/ubench -t 1800 -- \
#       env OUTDIR=$PWD/build/vm/ubench tests/bench/run-user-bench.sh
#
# Parts (PARTS selects them; all by default, in this order):
#  post   Cost of one receive post into an empty SRQ (datperf --post-cost):
#         dat_srq_post_recv (mmapped post ring), dat_kdat_srq_post_recv_ioctl
#         (one ioctl per post), rdma-core's ibv_post_srq_recv on an ibv SRQ
#         of the same depth on rxe0, a bare getppid().  Goal dat/verbs <= 1.
#         One datperf --post-parts run adds where a ring post's time goes.
#  send   Cost of one 64-byte dat_ep_post_send on a connected EP (rxe1 ->
#         rxe0, datperf --send-cost): batches of SEND_Q sends, the last of
#         each signalled, the rest DAT_COMPLETION_SUPPRESS_FLAG, at most
#         SEND_WINDOW outstanding (reaped between batches, untimed), against
#         ibv_post_send on an rdma-core RC QP pair on the same two devices
#         (librdmacm), and getppid().  Two rows: libdat's default send path
#         and KDAT_EP_POST=ioctl (one KDAT_IOC_EP_POST per send).  Goal
#         dat/verbs <= 1.
#  lat    Ping-pong latency between two libdat processes (datperf --lat,
#         server on rxe0, client on rxe1, SIZE bytes each way, LAT_N round
#         trips, both busy-polling) against ib_send_lat with the same -s/-n;
#         t_typical (median RTT / 2).  Goal kdat/perftest <= 1.  libdat runs
#         twice: receives on the EP (dat_ep_post_recv, one ioctl each) and
#         through an SRQ (datperf --srq: dat_srq_post_recv, the post ring).
#  bidir  Bidirectional message rate between two libdat processes (datperf
#         --bidir, BIDIR_N sends each way, -t BIDIR_WINDOW -Q BIDIR_Q,
#         polling) against ib_send_bw -b with the same -s/-n/-t/-Q; the
#         sum of both sides' send rates, as perftest prints it.  Goal >= 1.
#         The same two libdat variants as lat.
#  rate   Message rate through one SRQ at QS EPs (datperf --loopback): Q
#         server EPs on rxe0 share one SRQ, Q client EPs on rxe1 stream
#         SIZE-byte sends, a server thread reaps and re-posts at once;
#         both threads sleep in dat_evd_wait (DP_WAIT, "--event"; empty:
#         they busy-poll, as perftest does without PT_EXTRA=-e);
#         against perftest (ib_send_bw --use-srq) with the same options,
#         exactly as tests/bench/run-bench.sh runs it against the kernel
#         consumer (tests/bench/lib.sh: DEPTH(Q), WINDOW(Q)); RNR NAKs sent
#         by rxe0 counted around every run.  Goal >= 1 in every run.
#  scale  SCALE_QS (1024 4096) EPs on one SRQ of SCALE_DEPTH buffers
#         (datperf --loopback, one send in flight per EP, SCALE_N messages
#         per EP): EP creation and connection set-up time, the rate and the
#         RNR NAKs; no perftest counterpart (its receive CQ of -r x Q
#         entries exceeds rxe's 32767).  SCALE_REPEAT runs (1).
#
# Every comparison runs REPEAT times, kdat and its peer alternating; tables
# show medians of the runs and the median (range) of the per-run ratios.
# Output: the table on stdout and, with OUTDIR, OUTDIR/user-bench.txt, every
# run's output in OUTDIR/user-bench-runs.log, and OUTDIR/ratios.dat: one
# line "label median min max goal" per ratio, each oriented so that higher
# is better (verbs/dat, perftest/kdat for latency), which
# tests/bench/chart.sh (if present) renders to OUTDIR/user-bench.png.
#
# Environment: PARTS, QS ("1 16 128"), REPEAT (3), ITERS (20480), SIZE (64),
# DEPTH (512), POST_DEPTH (512), POST_N (8192), POST_REPS (7), SEND_N
# (8192), SEND_REPS (7), SEND_WINDOW (64), SEND_Q (16), SEND_DEPTH (512),
# LAT_N (1000), BIDIR_N (20480), BIDIR_WINDOW (64), BIDIR_Q (16),
# BIDIR_DEPTH (512), SCALE_QS ("1024 4096"), SCALE_N (8), SCALE_DEPTH (8192),
# SCALE_REPEAT (1), PT_EXTRA (extra ib_send_bw --use-srq options),
# PT_TIMEOUT (60 s per perftest run), DP_TIMEOUT (150 s per datperf run;
# scale runs 600 s), DP_EXTRA (extra datperf options for the rate runs,
# e.g. "--post ioctl"), DP_WAIT ("--event": the rate and scale runs sleep
# for their events; empty: they busy-poll), DATPERF (the binary; default
# the CMake build's build/user/tools/datperf).
# Exit status: 0 if every run produced a result.
set -uo pipefail

PARTS=${PARTS:-post send lat bidir rate scale}
POST_DEPTH=${POST_DEPTH:-512}
POST_N=${POST_N:-8192}
POST_REPS=${POST_REPS:-7}
SEND_N=${SEND_N:-8192}
SEND_REPS=${SEND_REPS:-7}
SEND_WINDOW=${SEND_WINDOW:-64}
SEND_Q=${SEND_Q:-16}
SEND_DEPTH=${SEND_DEPTH:-512}
LAT_N=${LAT_N:-1000}
BIDIR_N=${BIDIR_N:-20480}
BIDIR_WINDOW=${BIDIR_WINDOW:-64}
BIDIR_Q=${BIDIR_Q:-16}
BIDIR_DEPTH=${BIDIR_DEPTH:-512}
SCALE_QS=${SCALE_QS:-1024 4096}
SCALE_N=${SCALE_N:-8}
SCALE_DEPTH=${SCALE_DEPTH:-8192}
SCALE_REPEAT=${SCALE_REPEAT:-1}
DP_TIMEOUT=${DP_TIMEOUT:-150}
DP_EXTRA=${DP_EXTRA:-}
DP_WAIT=${DP_WAIT---event}
DATPERF=${DATPERF:-build/user/tools/datperf}
OUTDIR=${1:-${OUTDIR:-}}
LOG=$(mktemp -d)
status=0

log() { echo "run-user-bench: $*" >&2; }

# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ! -x $DATPERF ]]; then
	log "no datperf binary at $DATPERF (build it: make user)"
	exit 1
fi
if ! command -v jq >/dev/null; then
	log "jq is missing (it reads datperf --json)"
	exit 1
fi

part() { [[ " $PARTS " == *" $1 "* ]]; }

# datperf ARGS... -> its JSON object in $LOG/dp.json, 0 if it has no "error";
# everything it printed goes to the run log
datperf_json() {
	timeout "$DP_TIMEOUT" "$DATPERF" --json --no-progress "$@" >"$LOG/dp.json" 2>"$LOG/dp.err"
	local st=$?
	{
		echo "== datperf $* (status $st)"
		cat "$LOG/dp.err" "$LOG/dp.json"
	} >>"$LOG/user.log"
	[[ $st == 0 ]] && jq -e 'has("error") | not' "$LOG/dp.json" >/dev/null 2>&1
}

# the reason a datperf run failed, from its JSON or its stderr
dp_why() { jq -r '.error // empty' "${1:-$LOG/dp.json}" 2>/dev/null || tail -n1 "${2:-$LOG/dp.err}"; }

# dp_pair ARGS...: a datperf server on rxe0 and a client on rxe1 (two
# processes) -> $LOG/dps.json, $LOG/dpc.json; 0 if both gave a result
dp_pair() {
	local spid sst cst
	: >"$LOG/dps.err"
	timeout "$DP_TIMEOUT" "$DATPERF" --json --no-progress -d rxe0 "$@" \
		>"$LOG/dps.json" 2>"$LOG/dps.err" &
	spid=$!
	# the client retries a refused connection; waiting for the server's
	# "serving" line only saves it the retries
	for _ in $(seq 200); do
		grep -q serving "$LOG/dps.err" && break
		sleep 0.05
	done
	timeout "$DP_TIMEOUT" "$DATPERF" --json --no-progress -d rxe1 "$@" "$SRV_ADDR" \
		>"$LOG/dpc.json" 2>"$LOG/dpc.err"
	cst=$?
	wait "$spid"
	sst=$?
	{
		echo "== datperf $* (server $sst, client $cst)"
		cat "$LOG/dps.err" "$LOG/dps.json" "$LOG/dpc.err" "$LOG/dpc.json"
	} >>"$LOG/user.log"
	if [[ $sst != 0 || $cst != 0 ]] ||
		! jq -e 'has("error") | not' "$LOG/dps.json" >/dev/null 2>&1 ||
		! jq -e 'has("error") | not' "$LOG/dpc.json" >/dev/null 2>&1; then
		log "datperf $*: server $(dp_why "$LOG/dps.json" "$LOG/dps.err"); client $(dp_why "$LOG/dpc.json" "$LOG/dpc.err")"
		return 1
	fi
}

# pt_pair PROG ARGS...: perftest's PROG, server on rxe0 and client on
# rxe1 -> $LOG/pts, $LOG/ptc; 0 if both succeeded
pt_pair() {
	local prog=$1 spid sst cst
	shift
	timeout "$PT_TIMEOUT" "$prog" -d rxe0 -x 1 -F "$@" >"$LOG/pts" 2>&1 &
	spid=$!
	for _ in $(seq 200); do
		ss -Hltn "sport = :$PT_PORT" | grep -q . && break
		sleep 0.05
	done
	timeout "$PT_TIMEOUT" "$prog" -d rxe1 -x 1 -F "$@" "$SRV_ADDR" >"$LOG/ptc" 2>&1
	cst=$?
	wait "$spid"
	sst=$?
	{
		echo "== $prog $* (server $sst, client $cst)"
		grep -v -e GID -e address "$LOG/ptc"
	} >>"$LOG/perftest.log"
	if [[ $sst != 0 || $cst != 0 ]]; then
		log "$prog $* failed (server $sst, client $cst):"
		grep -v -e GID -e address "$LOG/pts" "$LOG/ptc" | tail -n 4 >&2
		return 1
	fi
}

# perftest's report: the value in column $2 of the line after the header
# that holds $1 (first file of $3... that has one)
pt_value() {
	local hdr=$1 colno=$2
	shift 2
	awk -v c="$colno" -v h="$hdr" 'f && NF >= c && $1 ~ /^[0-9]/ { print $c; exit } index($0, h) { f = 1 }' "$@" |
		head -n1
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && a != "-" && b != "-" && b > 0) printf "%.3f", a / b; else print "-" }'; }

# col FILE N [AWK-CONDITION]: column N of FILE's lines, "-" left out
col() { awk -v c="$2" "${3:-1}"' { if ($c != "" && $c != "-") print $c }' "$1"; }

# ratio_line LABEL GOAL: a ratios.dat line from the ratios on stdin
RATIOS=$LOG/ratios.dat
: >"$RATIOS"
ratio_line() {
	local v
	v=$(cat)
	[[ -n $v ]] || return 0
	printf '%s %s %s %s %s\n' "$1" "$(median <<<"$v" | xargs printf '%.3f')" \
		"$(sort -g <<<"$v" | head -n1)" "$(sort -g <<<"$v" | tail -n1)" "$2" >>"$RATIOS"
}
# med_range: "median (min-max)" of the numbers on stdin, 2 places
med_range() {
	local v
	v=$(cat)
	[[ -n $v ]] || { echo "-"; return; }
	printf '%.2f (%s)' "$(median <<<"$v")" "$(range <<<"$v")"
}

if ! insmod kernel/kdat.ko; then
	log "cannot load kernel/kdat.ko (build it first: make module)"
	exit 1
fi
part rate && check_iters
start=$SECONDS

# --- post: receive-post cost, no traffic --------------------------------
POSTS=$LOG/posts # "rep dat dat_steady ioctl verbs getppid dat/verbs ioctl/dat"
: >"$POSTS"
: >"$LOG/parts"
if part post; then
	for ((rep = 1; rep <= REPEAT; rep++)); do
		if ! datperf_json --post-cost -d rxe0 -r "$POST_DEPTH" -n "$POST_N" \
			--reps "$POST_REPS" -s "$SIZE"; then
			log "datperf --post-cost: $(dp_why)"
			status=1
			continue
		fi
		# ns rounded, ratios to 3 places, "-" without the verbs comparison
		read -r -a v < <(jq -r '[(.median | .dat, .dat_steady, .ioctl, .verbs, .getppid
			| if . == null then "-" else round end),
			(.dat_per_verbs, .ioctl_per_dat | if . == null then "-" else (. * 1000 | round) / 1000 end)]
			| map(tostring) | join(" ")' "$LOG/dp.json")
		echo "$rep ${v[*]}" >>"$POSTS"
		log "$(printf 'post run %d: ns/post dat %s (steady %s) ioctl %s verbs %s getppid %s  dat/verbs %s ioctl/dat %s  (%ds)' \
			"$rep" "${v[@]}" $((SECONDS - start)))"
	done
	# where the time of one ring post goes (one run, a few seconds)
	timeout "$DP_TIMEOUT" "$DATPERF" --post-parts --no-progress -d rxe0 -r "$POST_DEPTH" \
		-s "$SIZE" >"$LOG/parts" 2>&1 ||
		log "datperf --post-parts: $(tail -n1 "$LOG/parts")"
	awk '$7 != "-" && $7 > 0 { printf "%.3f\n", 1 / $7 }' "$POSTS" | ratio_line user-recv-post-verbs/dat 1.0
fi

# --- send: send-post cost on a connected EP -----------------------------
SENDS=$LOG/sends # "path rep dat verbs getppid dat/verbs"
: >"$SENDS"
if part send; then
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for path in default ioctl; do
			env=()
			[[ $path == ioctl ]] && env=(KDAT_EP_POST=ioctl)
			if ! env "${env[@]}" timeout "$DP_TIMEOUT" "$DATPERF" --json --no-progress \
				--send-cost -d rxe0 --client-dev rxe1 -s "$SIZE" -n "$SEND_N" \
				--reps "$SEND_REPS" -t "$SEND_WINDOW" -Q "$SEND_Q" -r "$SEND_DEPTH" \
				>"$LOG/dp.json" 2>"$LOG/dp.err" ||
				! jq -e 'has("error") | not' "$LOG/dp.json" >/dev/null 2>&1; then
				{
					echo "== ${env[*]} datperf --send-cost (failed)"
					cat "$LOG/dp.err" "$LOG/dp.json"
				} >>"$LOG/user.log"
				log "datperf --send-cost ($path): $(dp_why)"
				status=1
				continue
			fi
			{
				echo "== ${env[*]} datperf --send-cost"
				cat "$LOG/dp.err" "$LOG/dp.json"
			} >>"$LOG/user.log"
			read -r -a v < <(jq -r '[(.median | .dat, .verbs, .getppid
				| if . == null then "-" else round end),
				(.dat_per_verbs | if . == null then "-" else (. * 1000 | round) / 1000 end)]
				| map(tostring) | join(" ")' "$LOG/dp.json")
			echo "$path $rep ${v[*]}" >>"$SENDS"
			log "$(printf 'send run %d (%s): ns/send dat %s verbs %s getppid %s  dat/verbs %s  (%ds)' \
				"$rep" "$path" "${v[@]}" $((SECONDS - start)))"
		done
	done
	for path in default ioctl; do
		awk -v p="$path" '$1 == p && $6 != "-" && $6 > 0 { printf "%.3f\n", 1 / $6 }' "$SENDS" |
			ratio_line "user-send-$path-verbs/dat" 1.0
	done
fi

# --- lat: ping-pong latency between two processes ------------------------
# Two libdat variants: receives on the EP (dat_ep_post_recv: one ioctl
# each) and through an SRQ (--srq: dat_srq_post_recv, the post ring)
RECVS="ep srq"
recv_opt() { [[ $1 == srq ]] && echo --srq; }
LATS=$LOG/lats # "recv rep kdat_us perftest_us kdat/perftest"
: >"$LATS"
if part lat; then
	for ((rep = 1; rep <= REPEAT; rep++)); do
		p=-
		declare -A k=()
		for r in $RECVS; do
			k[$r]=-
			# shellcheck disable=SC2046 # no option or one
			dp_pair --lat -s "$SIZE" -n "$LAT_N" $(recv_opt "$r") &&
				k[$r]=$(jq -r '.t_typical_us' "$LOG/dpc.json")
		done
		pt_pair ib_send_lat -s "$SIZE" -n "$LAT_N" &&
			p=$(pt_value t_typical 5 "$LOG/ptc" "$LOG/pts")
		p=${p:--}
		for r in $RECVS; do
			[[ ${k[$r]} != - && $p != - ]] || status=1
			echo "$r $rep ${k[$r]} $p $(ratio "${k[$r]}" "$p")" >>"$LATS"
		done
		log "$(printf 'lat run %d: t_typical kdat %s us (SRQ %s us), ib_send_lat %s us  (%ds)' "$rep" \
			"${k[ep]}" "${k[srq]}" "$p" $((SECONDS - start)))"
	done
	for r in $RECVS; do
		awk -v r="$r" '$1 == r && $5 != "-" && $5 > 0 { printf "%.3f\n", 1 / $5 }' "$LATS" |
			ratio_line "user-lat-$r-perftest/kdat" 1.0
	done
fi

# --- bidir: bidirectional message rate between two processes -------------
BIDIRS=$LOG/bidirs # "recv rep kdat perftest kdat/perftest"
: >"$BIDIRS"
if part bidir; then
	bargs=(-s "$SIZE" -n "$BIDIR_N" -t "$BIDIR_WINDOW" -Q "$BIDIR_Q")
	for ((rep = 1; rep <= REPEAT; rep++)); do
		p=-
		declare -A k=()
		for r in $RECVS; do
			k[$r]=-
			# shellcheck disable=SC2046 # no option or one
			dp_pair --bidir "${bargs[@]}" -r "$BIDIR_DEPTH" $(recv_opt "$r") &&
				k[$r]=$(jq -rs 'map(.msg_per_sec) | add | round' "$LOG/dps.json" "$LOG/dpc.json")
		done
		if pt_pair ib_send_bw -b "${bargs[@]}" -r "$BIDIR_DEPTH"; then
			p=$(pt_value MsgRate 5 "$LOG/ptc" "$LOG/pts")
			[[ -n $p ]] && p=$(awk -v r="$p" 'BEGIN { printf "%.0f", r * 1000000 }')
		fi
		p=${p:--}
		for r in $RECVS; do
			[[ ${k[$r]} != - && $p != - ]] || status=1
			echo "$r $rep ${k[$r]} $p $(ratio "${k[$r]}" "$p")" >>"$BIDIRS"
		done
		log "$(printf 'bidir run %d: kdat %s msg/s (SRQ %s), ib_send_bw -b %s msg/s  (%ds)' "$rep" \
			"${k[ep]}" "${k[srq]}" "$p" $((SECONDS - start)))"
	done
	for r in $RECVS; do
		col "$BIDIRS" 5 "\$1 == \"$r\"" | ratio_line "user-bidir-$r-kdat/perftest" 1.0
	done
fi

# --- rate: message rate through one SRQ, alternating with perftest -------
# datperf --loopback Q -> msg/s on stdout (empty on failure)
# shellcheck disable=SC2317 # called through rate_runs
run_user() {
	local q=$1
	# shellcheck disable=SC2086 # DP_WAIT, DP_EXTRA are lists of options
	if datperf_json --loopback -d rxe0 --client-dev rxe1 -q "$q" -s "$SIZE" \
		-n $((ITERS / q)) -r "$(depth_for "$q")" -t "$(window_for "$q")" $DP_WAIT $DP_EXTRA; then
		jq -r '.results[0].msg_per_sec | round' "$LOG/dp.json"
	else
		log "datperf --loopback -q $q: $(dp_why)"
	fi
}
RUNS=$LOG/runs # "Q rep user perftest rnr_user rnr_perftest"
: >"$RUNS"
if part rate; then
	rate_runs run_user kdat-user
	for q in $QS; do
		awk -v q="$q" '$1 == q && $3 != "-" && $4 != "-" && $4 > 0 { printf "%.3f\n", $3 / $4 }' "$RUNS" |
			ratio_line "user-rate-${q}EPs-kdat/perftest" 1.0
	done
fi

# --- scale: thousands of EPs on one SRQ -----------------------------------
SCALES=$LOG/scales # "Q rep create_s connect_s messages msg/s rnr flushed"
: >"$SCALES"
if part scale; then
	for ((rep = 1; rep <= SCALE_REPEAT; rep++)); do
		for q in $SCALE_QS; do
			rnr0=$(ctr send_rnr_err)
			# shellcheck disable=SC2086 # DP_WAIT is a list of options
			if DP_TIMEOUT=$((DP_TIMEOUT > 600 ? DP_TIMEOUT : 600)) datperf_json --loopback \
				-d rxe0 --client-dev rxe1 -q "$q" -s "$SIZE" -n "$SCALE_N" \
				-r "$SCALE_DEPTH" -t 1 --timeout 120 $DP_WAIT; then
				read -r -a v < <(jq -r '.results[0] | [(.ep_create_seconds, .connect_seconds
					| (. * 1000 | round) / 1000), .messages, (.msg_per_sec | round), .flushed]
					| map(tostring) | join(" ")' "$LOG/dp.json")
			else
				log "datperf --loopback -q $q (scale): $(dp_why)"
				status=1
				v=(- - - - -)
			fi
			rnr=$(($(ctr send_rnr_err) - rnr0))
			echo "$q $rep ${v[0]} ${v[1]} ${v[2]} ${v[3]} $rnr ${v[4]}" >>"$SCALES"
			log "$(printf 'scale run %d Q=%s: EPs created in %s s, connected in %s s, %s messages at %s msg/s, RNR NAKs %d  (%ds)' \
				"$rep" "$q" "${v[0]}" "${v[1]}" "${v[2]}" "${v[3]}" "$rnr" $((SECONDS - start)))"
		done
	done
fi
rmmod kdat || { log "rmmod kdat failed"; status=1; }

TABLE=$LOG/table
{
	echo "libdat (user space over /dev/kdat) vs rdma-core and perftest on rxe0/rxe1, in one guest"
	echo "(ratios: median of the per-run ratios, range in brackets)"
	if part post; then
		echo
		echo "Receive post into an empty SRQ of $POST_DEPTH, ns per post (median of $REPEAT runs;"
		echo "each run: median of $POST_REPS repetitions of $POST_N posts per method)"
		echo
		printf '%9s %9s %8s %18s %8s   %-20s %-20s\n' "dat ring" "(steady)" ioctl ibv_post_srq_recv getppid \
			"dat/verbs (range)" "ioctl/dat (range)"
		printf '%9s %9s %8s %18s %8s   %-20s %-20s\n' \
			"$(col "$POSTS" 2 | median)" "$(col "$POSTS" 3 | median)" "$(col "$POSTS" 4 | median)" \
			"$(col "$POSTS" 5 | median)" "$(col "$POSTS" 6 | median)" \
			"$(col "$POSTS" 7 | med_range)" "$(col "$POSTS" 8 | med_range)"
		echo "goals: dat/verbs <= 1.0, ioctl/dat >= 4 ((steady) leaves out the first post of each batch)"
	fi
	if part send; then
		echo
		echo "Send post on a connected EP (rxe1 -> rxe0, ${SIZE}-byte sends, a completion every"
		echo "$SEND_Q-th, at most $SEND_WINDOW outstanding), ns per post (median of $REPEAT runs;"
		echo "each run: median of $SEND_REPS repetitions of $SEND_N sends per method)"
		echo
		printf '%-20s %17s %14s %8s   %-20s\n' "libdat send path" dat_ep_post_send ibv_post_send getppid \
			"dat/verbs (range)"
		for path in default ioctl; do
			c="\$1 == \"$path\""
			printf '%-20s %17s %14s %8s   %-20s\n' \
				"$([[ $path == ioctl ]] && echo KDAT_EP_POST=ioctl || echo "(default)")" \
				"$(col "$SENDS" 3 "$c" | median)" "$(col "$SENDS" 4 "$c" | median)" \
				"$(col "$SENDS" 5 "$c" | median)" "$(col "$SENDS" 6 "$c" | med_range)"
		done
		echo "goal: dat/verbs <= 1.0"
	fi
	if part lat; then
		echo
		echo "Ping-pong latency, two processes (server rxe0, client rxe1), ${SIZE} bytes each way,"
		echo "$LAT_N round trips, polling; t_typical = median RTT / 2, us (median of $REPEAT runs)"
		echo
		printf '%-26s %10s %12s   %-22s\n' "libdat receives" "kdat (us)" "ib_send_lat" "kdat/perftest (range)"
		for r in $RECVS; do
			c="\$1 == \"$r\""
			printf '%-26s %10s %12s   %-22s\n' \
				"$([[ $r == srq ]] && echo "SRQ (post ring)" || echo "EP (ioctl per receive)")" \
				"$(col "$LATS" 3 "$c" | median)" "$(col "$LATS" 4 "$c" | median)" \
				"$(col "$LATS" 5 "$c" | med_range)"
		done
		echo "goal: kdat/perftest <= 1.0"
	fi
	if part bidir; then
		echo
		echo "Bidirectional message rate, two processes, $BIDIR_N ${SIZE}-byte sends each way,"
		echo "-t $BIDIR_WINDOW -Q $BIDIR_Q -r $BIDIR_DEPTH, polling; both directions added (median of $REPEAT runs)"
		echo
		printf '%-26s %10s %14s   %-22s\n' "libdat receives" "kdat msg/s" "ib_send_bw -b" "kdat/perftest (range)"
		for r in $RECVS; do
			c="\$1 == \"$r\""
			printf '%-26s %10s %14s   %-22s\n' \
				"$([[ $r == srq ]] && echo "SRQ (post ring)" || echo "EP (ioctl per receive)")" \
				"$(col "$BIDIRS" 3 "$c" | median)" "$(col "$BIDIRS" 4 "$c" | median)" \
				"$(col "$BIDIRS" 5 "$c" | med_range)"
		done
		echo "goal: kdat/perftest >= 1.0"
	fi
	if part rate; then
		echo
		echo "Message rate through one SRQ (rxe1 -> rxe0, ${SIZE}-byte sends, $ITERS messages per run,"
		echo "median of $REPEAT runs; kdat-user = libdat server thread reaping and re-posting;"
		echo "datperf ${DP_WAIT:-polling}${DP_EXTRA:+ $DP_EXTRA}, ib_send_bw ${PT_EXTRA:-polling})"
		echo
		fmt='%5s %6s %7s %16s %16s %15s %12s %12s\n'
		# shellcheck disable=SC2059 # one format for the header and the rows
		printf "$fmt" EPs depth window "kdat-user msg/s" "perftest msg/s" "user/perftest" "ratio range" "RNR NAKs"
		for q in $QS; do
			c="\$1 == $q"
			rnr=$(awk -v q="$q" '$1 == q { printf "%s%s", s, $5; s = "," }' "$RUNS")
			# shellcheck disable=SC2059
			printf "$fmt" "$q" "$(depth_for "$q")" "$(window_for "$q")" \
				"$(col "$RUNS" 3 "$c" | median | xargs -r printf '%.0f')" \
				"$(col "$RUNS" 4 "$c" | median | xargs -r printf '%.0f')" \
				"$(awk -v q="$q" '$1 == q && $3 != "-" && $4 != "-" && $4 > 0 { printf "%.3f\n", $3 / $4 }' "$RUNS" | median | xargs -r printf '%.2f')" \
				"$(awk -v q="$q" '$1 == q && $3 != "-" && $4 != "-" && $4 > 0 { printf "%.3f\n", $3 / $4 }' "$RUNS" | range)" \
				"${rnr:--}"
		done
		echo "goal: user/perftest >= 1.0 in every run; RNR NAKs: per run, sent by rxe0 during the kdat runs"
	fi
	if part scale; then
		echo
		echo "Scale: EPs on one SRQ of $SCALE_DEPTH buffers (rxe1 -> rxe0, one ${SIZE}-byte send in flight"
		echo "per EP, $SCALE_N per EP; one process, kConnectWindow = 64 connection requests in flight)"
		echo
		printf '%6s %4s %14s %14s %10s %10s %9s %8s\n' EPs run "ep_create (s)" "connect (s)" messages msg/s \
			"RNR NAKs" flushed
		while read -r q r c n m s rnr f; do
			printf '%6s %4s %14s %14s %10s %10s %9s %8s\n' "$q" "$r" "$c" "$n" "$m" "$s" "$rnr" "$f"
		done <"$SCALES"
	fi
	echo
	echo "ratios.dat (label median min max goal; higher is better):"
	sed 's/^/  /' "$RATIOS"
	echo
	echo "post runs (rep, ns/post: dat dat_steady ioctl verbs getppid, ratios dat/verbs ioctl/dat):"
	sed 's/^/  /' "$POSTS"
	echo "send runs (path rep, ns/send: dat verbs getppid, ratio dat/verbs):"
	sed 's/^/  /' "$SENDS"
	echo "lat runs (receives rep, t_typical us: kdat perftest, ratio):"
	sed 's/^/  /' "$LATS"
	echo "bidir runs (receives rep, msg/s: kdat perftest, ratio):"
	sed 's/^/  /' "$BIDIRS"
	echo "rate runs (Q rep kdat-user perftest, RNR NAKs sent by rxe0 during kdat-user / perftest):"
	sed 's/^/  /' "$RUNS"
	echo "where a dat_srq_post_recv goes (datperf --post-parts: ns per call, no traffic):"
	sed 's/^/  /' "$LOG/parts"
	echo "total time $((SECONDS - start)) s"
} >"$TABLE"
if [[ -n $OUTDIR ]]; then
	mkdir -p "$OUTDIR"
	cp "$RATIOS" "$OUTDIR/ratios.dat"
	chart=$(dirname "${BASH_SOURCE[0]}")/chart.sh
	if [[ -x $chart ]]; then
		"$chart" "$OUTDIR/ratios.dat" "$OUTDIR/user-bench.png" "make bench-user: libdat vs rdma-core/perftest" ||
			log "chart.sh failed"
	else
		log "no $chart yet: OUTDIR/ratios.dat written, no chart"
	fi
fi
finish user-bench "$LOG/user.log" "$LOG/perftest.log"
