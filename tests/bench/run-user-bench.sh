#!/usr/bin/env bash
# tests/bench/run-user-bench.sh [OUTDIR] - libdat (user space over
# /dev/kdat) against rdma-core on the same Soft-RoCE devices in the same
# guest.  Runs INSIDE the test guest, from the repo root, with the module
# and libdat built (make module && make user; user_bench as below):
#
#   tests/vm/guest-run.sh -q -o $PWD/build/vm/ubench -t 1200 -- \
#       env OUTDIR=$PWD/build/vm/ubench tests/bench/run-user-bench.sh
#
# 1. Cost of one receive post into an empty SRQ (user_bench post): libdat's
#    dat_srq_post_recv (mmapped post ring), dat_kdat_srq_post_recv_ioctl
#    (one ioctl per post), rdma-core's ibv_post_srq_recv on an ibv SRQ of
#    the same depth on rxe0, and a bare getppid() system call.  Each of the
#    REPEAT runs reports the median ns per post over POST_REPS repetitions
#    of POST_N posts per method; the table shows the medians of the runs and
#    the median of the per-run ratios dat/verbs (goal <= 1.0) and ioctl/dat
#    (goal >= 4).
#    One user_bench parts run adds where the time of a ring post goes.
# 2. Message rate through one SRQ (user_bench rate): Q server EPs on rxe0
#    share one SRQ, Q client EPs on rxe1 stream SIZE-byte sends, a server
#    thread reaps with dat_evd_dequeue/dat_evd_wait and re-posts at once;
#    against perftest (ib_send_bw --use-srq, raw verbs in user space) with
#    the same number of QPs, SRQ depth and per-connection window, exactly as
#    tests/bench/run-bench.sh runs it against the kernel consumer:
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
# UB_TIMEOUT (150 s per user_bench run), UB_EXTRA (extra user_bench rate
# parameters, e.g. "poll=1"), UBENCH (the user_bench binary; default: the
# CMake build's build/user/tests/bench/user_bench, else build/ubench/user_bench).
# Exit status: 0 if every run produced a result.
set -uo pipefail

POST_DEPTH=${POST_DEPTH:-512}
POST_N=${POST_N:-8192}
POST_REPS=${POST_REPS:-7}
UB_TIMEOUT=${UB_TIMEOUT:-150}
UB_EXTRA=${UB_EXTRA:-}
OUTDIR=${1:-${OUTDIR:-}}
LOG=$(mktemp -d)
status=0

log() { echo "run-user-bench: $*" >&2; }

# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -z ${UBENCH:-} ]]; then
	for UBENCH in build/user/tests/bench/user_bench build/ubench/user_bench; do
		[[ -x $UBENCH ]] && break
	done
fi
if [[ ! -x $UBENCH ]]; then
	log "no user_bench binary (build it: make user, or see tests/bench/CMakeLists.txt)"
	exit 1
fi

# user_bench rate Q -> msg/s on stdout (empty on failure)
# shellcheck disable=SC2317 # called through rate_runs
run_user() {
	local q=$1 out line
	# shellcheck disable=SC2086 # UB_EXTRA is a list of parameters
	out=$(timeout "$UB_TIMEOUT" "$UBENCH" rate eps="$q" size="$SIZE" iters="$ITERS" \
		depth="$(depth_for "$q")" window="$(window_for "$q")" $UB_EXTRA 2>&1)
	echo "$out" >>"$LOG/user.log"
	line=$(grep -E 'user_bench: (eps=|FAILED)' <<<"$out" | tail -n1)
	if [[ $line =~ rate=([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		log "user_bench rate eps=$q: ${line:-no result line}"
	fi
}

# field NAME of a "key=value ..." line
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }

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
	out=$(timeout "$UB_TIMEOUT" "$UBENCH" post depth="$POST_DEPTH" posts="$POST_N" \
		reps="$POST_REPS" size="$SIZE" 2>&1)
	echo "$out" >>"$LOG/user.log"
	line=$(grep 'median ns/post' <<<"$out")
	if [[ -z $line ]]; then
		log "user_bench post: $(tail -n1 <<<"$out")"
		status=1
		continue
	fi
	v=()
	for f in dat dat_steady ioctl verbs getppid dat/verbs ioctl/dat; do
		v+=("$(field "${f/\//\\/}" <<<"$line")")
	done
	echo "$rep ${v[*]}" >>"$POSTS"
	log "$(printf 'post run %d: ns/post dat %s (steady %s) ioctl %s verbs %s getppid %s  dat/verbs %s ioctl/dat %s  (%ds)' \
		"$rep" "${v[@]}" $((SECONDS - start)))"
done

# where the time of one ring post goes (one run, a few seconds)
timeout "$UB_TIMEOUT" "$UBENCH" parts depth="$POST_DEPTH" size="$SIZE" >"$LOG/parts" 2>&1 ||
	log "user_bench parts: $(tail -n1 "$LOG/parts")"

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
	echo "where a dat_srq_post_recv goes (user_bench parts: ns per call, no traffic):"
	sed 's/^/  /' "$LOG/parts"
	echo "total time $((SECONDS - start)) s"
} >"$TABLE"
finish user-bench "$LOG/user.log" "$LOG/perftest.log"
