# shellcheck shell=bash
# tests/bench/lib.sh - sourced by run-bench.sh (kdat_bench.ko) and
# run-user-bench.sh (datperf): the settings, queue sizes, perftest run
# and statistics both comparisons with perftest share.  The caller defines
# log() and sets LOG (a scratch directory), status (0), OUTDIR, and RUNS,
# start and TABLE as the helpers below say.
#
# Both sides use the same queue sizes: an SRQ of DEPTH(Q) buffers and
# WINDOW(Q) sends in flight per connection (perftest -r / -t), with
#   DEPTH(Q)  = min(DEPTH, 32767 / Q)   perftest's receive CQ is -r x Q
#                                       entries and rxe allows 32767
#   WINDOW(Q) = DEPTH(Q) / (2 Q), 1..64 in flight stays within the SRQ
# perftest needs ITERS / Q >= Q (its SRQ depth is capped at the per-QP
# iteration count and must exceed the QP count).

QS=${QS:-1 16 128}
REPEAT=${REPEAT:-3}
ITERS=${ITERS:-20480}
SIZE=${SIZE:-64}
DEPTH=${DEPTH:-512}
PT_EXTRA=${PT_EXTRA:-}
PT_TIMEOUT=${PT_TIMEOUT:-60}
SRV_ADDR=192.0.2.1
PT_PORT=18515

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

# Exit unless ITERS is enough for perftest with every Q of QS.
check_iters() {
	local q
	for q in $QS; do
		if ((ITERS / q < q)); then
			log "ITERS=$ITERS is too small for perftest with $q QPs (needs ITERS / Q >= Q)"
			exit 1
		fi
	done
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
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.2f-%.2f", lo, hi }'; }

# rate_runs RUN LABEL: REPEAT rounds over QS of "RUN Q" (-> msg/s on
# stdout, empty on failure; LABEL in the log) alternating with perftest.
# Writes "Q rep rate perftest rnr_run rnr_perftest" lines ("-" for no
# rate) to $RUNS and sets status=1 if a run gave no rate; the log lines
# show the seconds since $start.
# shellcheck disable=SC2034,SC2154 # status and start are the caller's
rate_runs() {
	local run=$1 label=$2 rep q rnr0 rnr1 rnr2 r p
	: >"$RUNS"
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for q in $QS; do
			rnr0=$(ctr send_rnr_err)
			r=$("$run" "$q")
			rnr1=$(ctr send_rnr_err)
			p=$(run_perftest "$q")
			rnr2=$(ctr send_rnr_err)
			[[ -n $r && -n $p ]] || status=1
			printf '%s %s %s %s %s %s\n' "$q" "$rep" "${r:--}" "${p:--}" \
				$((rnr1 - rnr0)) $((rnr2 - rnr1)) >>"$RUNS"
			log "$(printf 'run %d Q=%-3s %s %7s msg/s   perftest %7s msg/s   RNR NAKs %d/%d   (%ds)' \
				"$rep" "$q" "$label" "${r:--}" "${p:--}" $((rnr1 - rnr0)) $((rnr2 - rnr1)) $((SECONDS - start)))"
		done
	done
}

# rate_rows FORMAT: a table row per Q of QS from $RUNS, printed with
# FORMAT: Q, depth, window, median rate, median perftest rate, median of
# the per-run ratios and their range.
rate_rows() {
	local q rmed pmed ratios
	for q in $QS; do
		rmed=$(awk -v q="$q" '$1 == q && $3 != "-" { print $3 }' "$RUNS" | median)
		pmed=$(awk -v q="$q" '$1 == q && $4 != "-" { print $4 }' "$RUNS" | median)
		ratios=$(awk -v q="$q" '$1 == q && $3 != "-" && $4 != "-" && $4 > 0 { printf "%.3f\n", $3 / $4 }' "$RUNS")
		# shellcheck disable=SC2059 # the caller's format
		printf "$1" "$q" "$(depth_for "$q")" "$(window_for "$q")" \
			"$(printf '%.0f' "${rmed:-0}")" "$(printf '%.0f' "${pmed:-0}")" \
			"$(printf '%.2f' "$(median <<<"$ratios")")" "$(range <<<"$ratios")"
	done
}

# finish NAME RUNLOG...: print $TABLE; if OUTDIR is set, copy it to
# OUTDIR/NAME.txt and the run logs to OUTDIR/NAME-runs.log.  Removes LOG
# and exits with $status.
finish() {
	local name=$1
	shift
	cat "$TABLE"
	if [[ -n $OUTDIR ]]; then
		mkdir -p "$OUTDIR"
		cp "$TABLE" "$OUTDIR/$name.txt"
		cat "$@" >"$OUTDIR/$name-runs.log" 2>/dev/null
		log "table written to $OUTDIR/$name.txt"
	fi
	rm -rf "$LOG"
	exit "$status"
}
