#!/usr/bin/env bash
# tests/bench/run-user-bench.sh [OUTDIR] - libdat (user space over
# /dev/kdat) against rdma-core on the same Soft-RoCE devices in the same
# guest, measured with datperf (tools/datperf.cpp).  Runs INSIDE the test
# guest, from the repo root, with the module and libdat built (make module
# && make user):
#
#   tests/vm/guest-run.sh -q -o $PWD/build/vm/ubench -t 1200 -- \
#       env OUTDIR=$PWD/build/vm/ubench tests/bench/run-user-bench.sh
#
# 1. Cost of one receive post into an empty SRQ (datperf --post-cost):
#    libdat's dat_srq_post_recv (mmapped post ring),
#    dat_kdat_srq_post_recv_ioctl (one ioctl per post), rdma-core's
#    ibv_post_srq_recv on an ibv SRQ of the same depth on rxe0, and a bare
#    getppid() system call.  Each of the REPEAT runs reports the median ns
#    per post over POST_REPS repetitions of POST_N posts per method; the
#    table shows the medians of the runs and the median of the per-run
#    ratios dat/verbs (goal <= 1.0) and ioctl/dat (goal >= 4).
#    One datperf --post-parts run adds where the time of a ring post goes.
# 2. Message rate through one SRQ (datperf --loopback): Q server EPs on rxe0
#    share one SRQ, Q client EPs on rxe1 stream SIZE-byte sends, a server
#    thread reaps with dat_evd_dequeue/dat_evd_wait and re-posts at once;
#    against perftest (ib_send_bw --use-srq, raw verbs in user space) with
#    the same options (-q Q -s SIZE -n ITERS/Q -r DEPTH(Q) -t WINDOW(Q)),
#    exactly as tests/bench/run-bench.sh runs it against the kernel consumer:
#      DEPTH(Q)  = min(DEPTH, 32767 / Q)   perftest's receive CQ is -r x Q
#      WINDOW(Q) = DEPTH(Q) / (2 Q), 1..64
#    perftest needs ITERS / Q >= Q.  Both run REPEAT times, alternating; the
#    table shows medians and the median of the per-run ratios (goal >= 0.9).
#
# The table is also written to OUTDIR/user-bench.txt (every run's output
# to OUTDIR/user-bench-runs.log) if OUTDIR is given.
#
# Environment: QS ("1 16 128"), REPEAT (3), ITERS (20480), SIZE (64),
# DEPTH (512), POST_DEPTH (512), POST_N (8192), POST_REPS (7),
# PT_EXTRA (extra ib_send_bw options), PT_TIMEOUT (60 s per perftest run),
# DP_TIMEOUT (150 s per datperf run), DP_EXTRA (extra datperf options for
# the rate runs, e.g. "--post ioctl"), DATPERF (the datperf binary;
# default: the CMake build's build/user/tools/datperf).
# Exit status: 0 if every run produced a result.
set -uo pipefail

POST_DEPTH=${POST_DEPTH:-512}
POST_N=${POST_N:-8192}
POST_REPS=${POST_REPS:-7}
DP_TIMEOUT=${DP_TIMEOUT:-150}
DP_EXTRA=${DP_EXTRA:-}
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

# datperf --loopback Q -> msg/s on stdout (empty on failure)
# shellcheck disable=SC2317 # called through rate_runs
run_user() {
	local q=$1
	# shellcheck disable=SC2086 # DP_EXTRA is a list of options
	if datperf_json --loopback -d rxe0 --client-dev rxe1 -q "$q" -s "$SIZE" \
		-n $((ITERS / q)) -r "$(depth_for "$q")" -t "$(window_for "$q")" $DP_EXTRA; then
		jq -r '.results[0].msg_per_sec | round' "$LOG/dp.json"
	else
		log "datperf --loopback -q $q: $(jq -r '.error // empty' "$LOG/dp.json" 2>/dev/null ||
			tail -n1 "$LOG/dp.err")"
	fi
}

if ! insmod kernel/kdat.ko; then
	log "cannot load kernel/kdat.ko (build it first: make module)"
	exit 1
fi
check_iters
start=$SECONDS

# 1. receive-post cost, no traffic
POSTS=$LOG/posts # "rep dat dat_steady ioctl verbs getppid dat/verbs ioctl/dat"
: >"$POSTS"
for ((rep = 1; rep <= REPEAT; rep++)); do
	if ! datperf_json --post-cost -d rxe0 -r "$POST_DEPTH" -n "$POST_N" \
		--reps "$POST_REPS" -s "$SIZE"; then
		log "datperf --post-cost: $(jq -r '.error // empty' "$LOG/dp.json" 2>/dev/null ||
			tail -n1 "$LOG/dp.err")"
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

# 2. message rate, alternating with perftest
RUNS=$LOG/runs # "Q rep user perftest rnr_user rnr_perftest"
rate_runs run_user kdat-user
rmmod kdat || { log "rmmod kdat failed"; status=1; }

col() { awk -v c="$1" '$c != "" && $c != "-" { print $c }' "$POSTS"; }
TABLE=$LOG/table
{
	echo "libdat (user space over /dev/kdat) vs rdma-core on rxe0, in one guest"
	echo
	echo "Receive post into an empty SRQ of $POST_DEPTH, ns per post (median of $REPEAT runs;"
	echo "each run: median of $POST_REPS repetitions of $POST_N posts per method)"
	echo
	printf '%9s %9s %8s %18s %8s   %-20s %-20s\n' "dat ring" "(steady)" ioctl ibv_post_srq_recv getppid \
		"dat/verbs (range)" "ioctl/dat (range)"
	printf '%9s %9s %8s %18s %8s   %-20s %-20s\n' \
		"$(col 2 | median)" "$(col 3 | median)" "$(col 4 | median)" "$(col 5 | median)" \
		"$(col 6 | median)" \
		"$(printf '%.2f (%s)' "$(col 7 | median)" "$(col 7 | range)")" \
		"$(printf '%.2f (%s)' "$(col 8 | median)" "$(col 8 | range)")"
	echo "goals: dat/verbs <= 1.0, ioctl/dat >= 4 (ratios: median of per-run ratios, range in brackets;"
	echo "(steady) leaves out the first post of each batch; no EP uses these SRQs, so no post kicks)"
	echo
	echo "Message rate through one SRQ (rxe1 -> rxe0, ${SIZE}-byte sends, $ITERS messages per run,"
	echo "median of $REPEAT runs; kdat-user = libdat server thread reaping and re-posting)"
	echo
	fmt='%5s %6s %7s %16s %16s %15s %12s\n'
	# shellcheck disable=SC2059 # one format for the header and the rows
	printf "$fmt" EPs depth window "kdat-user msg/s" "perftest msg/s" "user/perftest" "ratio range"
	rate_rows "$fmt"
	echo "goal: user/perftest >= 0.9"
	echo
	echo "post runs (rep, ns/post: dat dat_steady ioctl verbs getppid, ratios dat/verbs ioctl/dat):"
	sed 's/^/  /' "$POSTS"
	echo "rate runs (Q rep kdat-user perftest, RNR NAKs sent by rxe0 during kdat-user / perftest):"
	sed 's/^/  /' "$RUNS"
	echo "where a dat_srq_post_recv goes (datperf --post-parts: ns per call, no traffic):"
	sed 's/^/  /' "$LOG/parts"
	echo "total time $((SECONDS - start)) s"
} >"$TABLE"
finish user-bench "$LOG/user.log" "$LOG/perftest.log"
