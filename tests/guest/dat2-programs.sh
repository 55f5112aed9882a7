#!/usr/bin/env bash
# Runs the unmodified programs of Debian's dapl2-utils (dtest, dtestsrq,
# dtestcm, dtestx, dapltest) as server and client across the guest's two
# Soft-RoCE devices (rxe0 on v0 192.0.2.1, rxe1 on v1 192.0.2.2; see
# tests/vm/README.md) against one named DAT 2.0 provider, and prints one
# PASS:/FAIL: line per program and mode, the figures the programs print,
# and a table.  Runs inside the guest (tests/vm/guest-run.sh), from the
# repository root.
#
#   tests/guest/dat2-programs.sh [options]
#     -l LABEL   provider label in the results           ($DAT2_LABEL, ofa)
#     -s IA      server IA name (a line of the dat.conf)  ($DAT2_SERVER_IA)
#     -c IA      client IA name                           ($DAT2_CLIENT_IA)
#     -f FILE    the provider's dat.conf, holding both IA lines ($DAT_OVERRIDE)
#     -o FILE    result file                              ($DAT2_RESULTS,
#                build/test/dat2-LABEL.txt); logs go to FILE.d/
#     -t SECS    per-case time limit                      ($DAT2_TIMEOUT, 60)
#     -a ADDR    server address                           ($DAT2_SERVER_ADDR,
#                192.0.2.1)
#     -k REGEX   run only the cases whose name matches    ($DAT2_CASES)
#     -i N       operations per dapltest -T P run         ($DAT2_P_ITER, 500)
#     -T LIB     LD_PRELOAD LIB (dat2-trace.so, built from dat2-trace.c)
#                into every process and record which DAT 2.0 entries each
#                side called, how often                  ($DAT2_TRACE_LIB)
#     -L         list the cases with their command lines and exit
#     --ofa      shorthand for OFED's own provider: label ofa, IAs ofa-v2-v0
#                and ofa-v2-v1, a dat.conf written next to the result file
#                naming libdaplofa.so.2 on the netdevs v0 / v1.
#
# Every case starts its server in the background, waits until it is ready
# (its ready line in its output, and for the programs that exchange
# parameters over TCP first, a new listening TCP socket), runs the client,
# then waits for the server to end (dapltest's server is asked to with
# `dapltest -T Q`).  The case's time limit covers all of it; at the limit
# both are killed and the case fails.  A case passes when every process it
# ran exited 0 and printed the program's own success line.
#
# Each side gets its own dat.conf (FILE.d/server.conf, client.conf): the
# server's names the server IA as given; the client's names the client IA
# as given and also maps the server IA's name to the client IA's line,
# because dtest's client takes the provider name from the server (the
# server sends its whole parameter block over TCP) and would otherwise open
# the server's device and run in loopback.  The per-case packet counts of
# each rxe device (sent_pkts) are recorded, which shows the traffic really
# crossed the veth wire.
#
# Result file lines (dat2-table.sh reads them):
#   PLAN: N
#   PASS: dat2_CASE (LABEL, SECONDS s)
#   FAIL: dat2_CASE (LABEL, SECONDS s: why)
#   FIGURE: dat2_CASE (LABEL) NAME = VALUE UNIT
#   CMD: dat2_CASE server|client|quit: COMMAND LINE
#   PKTS: dat2_CASE (LABEL) rxe0 N rxe1 M
#   CALLS: dat2_CASE (LABEL) server|client|quit[ killed]: dat_x N, ... (-T)
set -uo pipefail

DAT2_LABEL=${DAT2_LABEL:-ofa}
DAT2_SERVER_IA=${DAT2_SERVER_IA:-}
DAT2_CLIENT_IA=${DAT2_CLIENT_IA:-}
DAT2_CONF=${DAT_OVERRIDE:-}
DAT2_RESULTS=${DAT2_RESULTS:-}
DAT2_TIMEOUT=${DAT2_TIMEOUT:-60}
DAT2_SERVER_ADDR=${DAT2_SERVER_ADDR:-192.0.2.1}
DAT2_CASES=${DAT2_CASES:-}
DAT2_P_ITER=${DAT2_P_ITER:-500}
DAT2_TRACE_LIB=${DAT2_TRACE_LIB:-}
ofa=0 list=0
while (($#)); do
	case $1 in
	-l) DAT2_LABEL=$2; shift ;;
	-s) DAT2_SERVER_IA=$2; shift ;;
	-c) DAT2_CLIENT_IA=$2; shift ;;
	-f) DAT2_CONF=$2; shift ;;
	-o) DAT2_RESULTS=$2; shift ;;
	-t) DAT2_TIMEOUT=$2; shift ;;
	-a) DAT2_SERVER_ADDR=$2; shift ;;
	-k) DAT2_CASES=$2; shift ;;
	-i) DAT2_P_ITER=$2; shift ;;
	-T) DAT2_TRACE_LIB=$2; shift ;;
	-L) list=1 ;;
	--ofa) ofa=1 ;;
	*) echo "usage: see the head of $0" >&2; exit 2 ;;
	esac
	shift
done
if ((ofa)); then
	DAT2_LABEL=ofa DAT2_SERVER_IA=ofa-v2-v0 DAT2_CLIENT_IA=ofa-v2-v1
fi
DAT2_RESULTS=${DAT2_RESULTS:-build/test/dat2-$DAT2_LABEL.txt}
LOGS=$DAT2_RESULTS.d

# --- the cases -----------------------------------------------------------
# One line per case, fields separated by " | ":
#   name | server command (- for none) | server's ready line (ERE) |
#   tcp (the server first listens on TCP: wait for that too) or - |
#   server's success line (ERE, - for none) | how the server ends:
#   self (it exits after the test), quit (dapltest -T Q) or - |
#   client command | client's success line (ERE)
# @S server IA, @C client IA, @A server address, @I dapltest -T P's
# operation count.  dtest's and dtestx's
# client are given @S: they take the server's name (see above).
CASES=$(cat <<'EOF'
dtest_default | dtest -P @S -s | Server is waiting for client | tcp | DAPL Test Complete\. PASSED | self | dtest -P @S -h @A | DAPL Test Complete\. PASSED
dtest_buf4k | dtest -P @S -s -b 4096 -B 10 | Server is waiting for client | tcp | DAPL Test Complete\. PASSED | self | dtest -P @S -h @A -b 4096 -B 10 | DAPL Test Complete\. PASSED
dtest_poll | dtest -P @S -s -p -b 4096 -B 10 | Server is waiting for client | tcp | DAPL Test Complete\. PASSED | self | dtest -P @S -h @A -p -b 4096 -B 10 | DAPL Test Complete\. PASSED
dtest_cno | dtest -P @S -s -c -b 4096 -B 10 | Server is waiting for client | tcp | DAPL Test Complete\. PASSED | self | dtest -P @S -h @A -c -b 4096 -B 10 | DAPL Test Complete\. PASSED
dtest_write_stream | dtest -P @S -s -w -t -b 4096 -B 20 | Server is waiting for client | tcp | DAPL Test Complete\. PASSED | self | dtest -P @S -h @A -w -t -b 4096 -B 20 | DAPL Test Complete\. PASSED
dtest_write_pingpong | dtest -P @S -s -W -D -b 4096 -B 20 | Server is waiting for client | tcp | DAPL Test Complete\. PASSED | self | dtest -P @S -h @A -W -D -b 4096 -B 20 | DAPL Test Complete\. PASSED
dtest_unidir | dtest -P @S -s -u -t -b 4096 -B 20 | Server is waiting for client | tcp | DAPL Test Complete\. PASSED | self | dtest -P @S -h @A -u -t -b 4096 -B 20 | DAPL Test Complete\. PASSED
dtest_allsizes | dtest -P @S -s -W -a -i 1024 -b 4096 -B 5 | Server is waiting for client | tcp | DAPL Test Complete\. PASSED | self | dtest -P @S -h @A -W -a -i 1024 -b 4096 -B 5 | DAPL Test Complete\. PASSED
dtestsrq_rc | dtestsrq -P @S -s -v | server ready on port | - | DAPL RC SRQ Test Complete\. | self | dtestsrq -P @C -h @A -v | DAPL RC SRQ Test Complete\.
dtestsrq_rc_nosrq | dtestsrq -P @S -s -S 0 -v | server ready on port | - | DAPL RC .*Test Complete\. | self | dtestsrq -P @C -h @A -S 0 -v | DAPL RC .*Test Complete\.
dtestcm_rc | dtestcm -P @S -s -c 10 | Conn server waiting for client | tcp | DAPL Connection Test Complete\. | self | dtestcm -P @C -h @A -c 10 | ALL 10 CONNECTED on Client.*|DAPL Connection Test Complete\.
dtestcm_rc_wait | dtestcm -P @S -s -c 10 -w | Conn server waiting for client | tcp | DAPL Connection Test Complete\. | self | dtestcm -P @C -h @A -c 10 -w | DAPL Connection Test Complete\.
dtestcm_ud | dtestcm -P @S -s -c 10 -u | Conn server waiting for client | tcp | DAPL Connection Test Complete\. | self | dtestcm -P @C -h @A -c 10 -u | DAPL Connection Test Complete\.
dtestx_rc | dtestx -P @S -s | waiting to snd addr | tcp | immed/atomic test PASSED | self | dtestx -P @S -h @A | immed/atomic test PASSED
dtestx_ud | dtestx -P @S -s -U 2 | waiting to snd addr | tcp | PASSED | self | dtestx -P @S -h @A -U 2 | PASSED
dapltest_T_sr | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T T -s @A -D @C -i 100 -t 2 -w 2 client SR 1024 server SR 1024 | End of Work -- Client Exiting
dapltest_T_rdma_validate | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T T -V -s @A -D @C -i 50 -t 2 -w 2 client RW 4096 1 server RW 2048 2 client RR 4096 1 server RR 1024 2 client SR 1024 2 -f server SR 1024 2 -f | End of Work -- Client Exiting
dapltest_T_poll | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T T -P -s @A -D @C -i 100 -t 1 -w 4 client SR 1024 server SR 1024 client RW 4096 | End of Work -- Client Exiting
dapltest_T_rsp | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T T -r -s @A -D @C -i 50 -t 1 -w 2 client SR 1024 server SR 1024 | End of Work -- Client Exiting
dapltest_P_rw_blocking | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T P -s @A -D @C -i @I -m b RW 4096 1 | Total Time
dapltest_P_rw_polling | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T P -s @A -D @C -i @I -m p RW 4096 1 | Total Time
dapltest_P_rr_blocking | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T P -s @A -D @C -i @I -m b RR 4096 1 | Total Time
dapltest_P_rr_polling | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T P -s @A -D @C -i @I -m p RR 4096 1 | Total Time
dapltest_L | - | - | - | - | - | dapltest -T L -D @C -w 2 -m 50 | LMR of .* bytes OK|Limitation Test +limit_size_lmr
dapltest_L_w1 | - | - | - | - | - | dapltest -T L -D @C -m 50 | LMR of .* bytes OK|Limitation Test +limit_size_lmr
dapltest_F_hwconn | - | - | - | - | - | dapltest -T F -D @C -f hwconn | @FFT:4
dapltest_F_endpoint | - | - | - | - | - | dapltest -T F -D @C -f endpoint | @FFT:3
dapltest_F_pz | - | - | - | - | - | dapltest -T F -D @C -f pz | @FFT:3
dapltest_F_mem | - | - | - | - | - | dapltest -T F -D @C -f mem | @FFT:5
dapltest_F_queryinfo | - | - | - | - | - | dapltest -T F -D @C -f queryinfo case0 case1 case2 case3 case4 case5 case6 case7 case8 case9 case10 case11 case12 case14 case16 | @FFT:15
dapltest_F_queryinfo_bad_handle | - | - | - | - | - | dapltest -T F -D @C -f queryinfo case13 case15 case17 | @FFT:3
dapltest_F_connmgt | dapltest -T S -D @S | Dapltest: Service Point Ready | - | - | quit | dapltest -T F -s @A -D @C -f connmgt | @FFT:2
EOF
)

subst() {	# subst STRING: @S @C @A replaced
	local s=$1
	s=${s//@S/$DAT2_SERVER_IA}
	s=${s//@C/$DAT2_CLIENT_IA}
	s=${s//@A/$DAT2_SERVER_ADDR}
	s=${s//@I/$DAT2_P_ITER}
	printf '%s' "$s"
}
trim() { local s=$1; s=${s#"${s%%[! ]*}"}; s=${s%"${s##*[! ]}"}; printf '%s' "$s"; }

declare -a C_NAME C_SRV C_READY C_TCP C_SRVOK C_END C_CLI C_CLIOK
while IFS= read -r line; do
	[ -n "$line" ] || continue
	IFS='|' read -r f1 f2 f3 f4 f5 f6 f7 f8 <<<"${line// | /|}"
	name=$(trim "$f1")
	[ -z "$DAT2_CASES" ] || [[ $name =~ $DAT2_CASES ]] || continue
	C_NAME+=("$name") C_SRV+=("$(trim "$f2")") C_READY+=("$(trim "$f3")")
	C_TCP+=("$(trim "$f4")") C_SRVOK+=("$(trim "$f5")") C_END+=("$(trim "$f6")")
	C_CLI+=("$(trim "$f7")") C_CLIOK+=("$(trim "$f8")")
done <<<"$CASES"

if ((list)); then
	for i in "${!C_NAME[@]}"; do
		echo "${C_NAME[i]}:"
		[ "${C_SRV[i]}" = - ] || echo "  server: $(subst "${C_SRV[i]}")"
		echo "  client: $(subst "${C_CLI[i]}")"
		[ "${C_END[i]}" != quit ] || echo "  quit:   dapltest -T Q -s $DAT2_SERVER_ADDR -D $DAT2_CLIENT_IA"
	done
	exit 0
fi

if [ -z "$DAT2_SERVER_IA" ] || [ -z "$DAT2_CLIENT_IA" ]; then
	echo "dat2-programs: need the server and client IA names (-s, -c, or --ofa)" >&2
	exit 2
fi
mkdir -p "$LOGS" || exit 2
if ((ofa)) && [ -z "$DAT2_CONF" ]; then
	DAT2_CONF=$LOGS/dat.conf
	cat >"$DAT2_CONF" <<EOF
ofa-v2-v0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "v0 0" ""
ofa-v2-v1 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "v1 0" ""
EOF
fi
if [ -z "$DAT2_CONF" ] || [ ! -r "$DAT2_CONF" ]; then
	echo "dat2-programs: no readable dat.conf (-f or DAT_OVERRIDE)" >&2
	exit 2
fi
# server: the file as given; client: the server IA's name maps to the
# client IA's line
SRV_CONF=$LOGS/server.conf CLI_CONF=$LOGS/client.conf
cp "$DAT2_CONF" "$SRV_CONF" || exit 2
awk -v s="$DAT2_SERVER_IA" -v c="$DAT2_CLIENT_IA" '
	$1 == s { next }
	{ print }
	$1 == c { line = $0; sub(/^[^ \t]+/, s, line); print line; found = 1 }
	END { if (!found) exit 1 }' "$DAT2_CONF" >"$CLI_CONF" || {
	echo "dat2-programs: $DAT2_CONF has no line for $DAT2_CLIENT_IA" >&2
	exit 2
}
grep -q "^${DAT2_SERVER_IA}[[:space:]]" "$SRV_CONF" || {
	echo "dat2-programs: $DAT2_CONF has no line for $DAT2_SERVER_IA" >&2
	exit 2
}

: >"$DAT2_RESULTS"
res() { echo "$*" | tee -a "$DAT2_RESULTS"; }
res "# dat2-programs: provider $DAT2_LABEL, server IA $DAT2_SERVER_IA, client IA $DAT2_CLIENT_IA, server $DAT2_SERVER_ADDR, limit ${DAT2_TIMEOUT}s per case"
sed 's/^/# dat.conf: /' "$DAT2_CONF" >>"$DAT2_RESULTS"
res "PLAN: ${#C_NAME[@]}"

# --- helpers (bash builtins in the polls: every exec costs ~0.1 s under TCG)
exec {NAPFD}<> <(:)
nap() { read -r -t "$1" -u "$NAPFD" || :; }
# microseconds, without a fork (a $(...) in a poll forks every time)
now() { NOW=${EPOCHREALTIME/[.,]/}; }

# file_has FILE ERE: does FILE contain a line matching ERE?
file_has() {
	local l
	[ -r "$1" ] || return 1
	while IFS= read -r l || [ -n "$l" ]; do
		[[ $l =~ $2 ]] && return 0
	done <"$1"
	return 1
}

# tcp_listeners: LISTENERS = local address:port of every listening TCP
# socket, newline-separated
tcp_listeners() {
	local f loc st
	LISTENERS=
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] || continue
		while read -r _ loc _ st _; do
			[ "$st" = 0A ] && LISTENERS+=$loc$'\n'
		done <"$f"
	done
}

# new_listener BEFORE: a listening TCP socket not in BEFORE exists
new_listener() {
	local l
	tcp_listeners
	while IFS= read -r l; do
		[ -n "$l" ] || continue
		[[ $'\n'$1 == *$'\n'$l$'\n'* ]] || return 0
	done <<<"$LISTENERS"
	return 1
}

# stop PID: TERM, then KILL; never waits for ever on a task stuck in D state
stop() {
	local i
	kill -0 "$1" 2>/dev/null || return 0
	kill -TERM "$1" 2>/dev/null
	for ((i = 0; i < 20; i++)); do
		kill -0 "$1" 2>/dev/null || break
		nap 0.1
	done
	kill -KILL "$1" 2>/dev/null
	kill -0 "$1" 2>/dev/null || wait "$1" 2>/dev/null
}

# wait_pid PID DEADLINE_US: its exit status, or 124 at the deadline
wait_pid() {
	while kill -0 "$1" 2>/dev/null; do
		now
		((NOW < $2)) || return 124
		nap 0.1
	done
	wait "$1"
}

pkts() {	# pkts: "rxe0 N rxe1 M ..." sent_pkts per rxe device
	local d n out=
	for d in /sys/class/infiniband/*; do
		[ -r "$d/ports/1/hw_counters/sent_pkts" ] || continue
		read -r n <"$d/ports/1/hw_counters/sent_pkts"
		out+="${d##*/} $n "
	done
	printf '%s' "${out% }"
}

# launch SIDE LOG CMD...: in the background, the program with its side's
# dat.conf, line-buffered (its output is a file, and a killed program's
# buffered lines would be lost), traced with -T (LOG.trace.<pid>); $! is
# the program's own pid (env and stdbuf exec it)
launch() {
	local conf=$SRV_CONF
	local -a pre=()
	[ "$1" = server ] || conf=$CLI_CONF
	[ -z "$DAT2_TRACE_LIB" ] || pre=(LD_PRELOAD="$DAT2_TRACE_LIB" DAT2_TRACE="$2.trace")
	env "${pre[@]}" DAT_OVERRIDE="$conf" stdbuf -oL -eL "${@:3}" >"$2" 2>&1 </dev/null &
}

# calls CASE SIDE LOG: the trace of LOG as a CALLS: line ("killed": the
# process never reached exit, only the entries it called are known)
calls() {
	local f
	for f in "$3".trace.*; do
		[ -r "$f" ] || continue
		res "CALLS: dat2_$1 ($DAT2_LABEL) $2$(awk '
			$1 == "first" { first[$2] = 1; order[n++] = $2 }
			$1 == "count" { cnt[$2] = $3; counted = 1 }
			END {
				printf "%s:", counted ? "" : " killed"
				for (i = 0; i < n; i++)
					printf "%s %s%s", i ? "," : "", order[i],
						counted ? " " cnt[order[i]] : ""
			}' "$f")"
	done
}

secs() { printf '%d.%01d' $(($1 / 1000000)) $((($1 % 1000000) / 100000)); }

# figures CASE LOG: the figures a client printed, as FIGURE: lines
figures() {
	local c=$1 log=$2 l
	local -a v
	while IFS= read -r l; do
		case $c in
		dapltest_P_*)
			# "raw: RW, 200, 4096, 1, 200, 40.0, 3889.31, 15.19, 341.35, 248.41, 4.75":
			# op, ops, segment size, segments, pipeline, CPU %, ops/s,
			# MB/s, mean latency, mean time per post, per reap (us)
			if [[ $l =~ ^raw:\ (.*) ]]; then
				IFS=', ' read -ra v <<<"${BASH_REMATCH[1]}"
				res "FIGURE: dat2_$c ($DAT2_LABEL) ops = ${v[6]} ops/s"
				res "FIGURE: dat2_$c ($DAT2_LABEL) bandwidth = ${v[7]} MB/s"
				res "FIGURE: dat2_$c ($DAT2_LABEL) latency = ${v[8]} us"
				res "FIGURE: dat2_$c ($DAT2_LABEL) post = ${v[9]} us"
				res "FIGURE: dat2_$c ($DAT2_LABEL) reap = ${v[10]} us"
				res "FIGURE: dat2_$c ($DAT2_LABEL) cpu = ${v[5]} %"
			fi
			;;
		dapltest_T_*)
			if [[ $l =~ ^Total\ (WQE|Time)[[:space:]]*:[[:space:]]*([0-9.]+)[[:space:]]*([A-Za-z/]+) ]]; then
				res "FIGURE: dat2_$c ($DAT2_LABEL) Total ${BASH_REMATCH[1]} = ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
			fi
			;;
		dtest_*)
			# "RDMA write PingPong: (20 x 4096) Total 50852.06 us: latency 1271.30 us, BW 3.22 MB/s"
			if [[ $l =~ \(([0-9]+)\ x\ ([0-9]+)\).*latency\ ([0-9.]+)\ us,\ BW\ ([0-9.]+)\ MB/s ]]; then
				res "FIGURE: dat2_$c ($DAT2_LABEL) pingpong ${BASH_REMATCH[2]} B latency = ${BASH_REMATCH[3]} us"
				res "FIGURE: dat2_$c ($DAT2_LABEL) pingpong ${BASH_REMATCH[2]} B BW = ${BASH_REMATCH[4]} MB/s"
			elif [[ $l =~ RDMA\ write\ \(([a-z-]+)\):.*\ ([0-9.]+)\ MB/sec ]]; then
				res "FIGURE: dat2_$c ($DAT2_LABEL) RDMA write ${BASH_REMATCH[1]} = ${BASH_REMATCH[2]} MB/s"
			fi
			;;
		dtestcm_*)
			if [[ $l =~ Connections:\ +([0-9.]+)\ usec,\ CPS\ +([0-9.]+) ]]; then
				res "FIGURE: dat2_$c ($DAT2_LABEL) connect = ${BASH_REMATCH[1]} us"
				res "FIGURE: dat2_$c ($DAT2_LABEL) connections = ${BASH_REMATCH[2]} /s"
			fi
			;;
		esac
	done <"$log"
}

# fft_ok LOG N: dapltest -T F's verdicts ("Result: PASS|FAIL|UNSUPP" per
# case): N of them, none but PASS or UNSUPP.  Sets FFT_COUNTS (pass,
# unsupp, fail).
fft_ok() {
	local l p=0 u=0 f=0
	while IFS= read -r l; do
		case $l in
		"Result: PASS"*) ((p++)) ;;
		"Result: UNSUPP"*) ((u++)) ;;
		Result:*) ((f++)) ;;
		esac
	done <"$1"
	FFT_COUNTS=("$p" "$u" "$f")
	((p + u == $2 && f == 0))
}

# --- one case ------------------------------------------------------------
run_case() {
	local i=$1 c=${C_NAME[$1]} t0 deadline spid="" sst="" cpid st why="" before p0 p1
	local srv cli slog=$LOGS/${C_NAME[$1]}.server clog=$LOGS/${C_NAME[$1]}.client
	local qlog=$LOGS/${C_NAME[$1]}.quit
	srv=$(subst "${C_SRV[i]}")
	cli=$(subst "${C_CLI[i]}")
	rm -f "$slog" "$clog" "$qlog" "$slog".trace.* "$clog".trace.* "$qlog".trace.*
	p0=$(pkts)
	now
	t0=$NOW
	deadline=$((t0 + DAT2_TIMEOUT * 1000000))
	if [ "$srv" != - ]; then
		res "CMD: dat2_$c server: DAT_OVERRIDE=$SRV_CONF $srv"
		tcp_listeners
		before=$LISTENERS
		# shellcheck disable=SC2086 # the command line is split on purpose
		launch server "$slog" $srv
		spid=$!
		while :; do
			if file_has "$slog" "${C_READY[i]}" &&
				{ [ "${C_TCP[i]}" != tcp ] || new_listener "$before"; }; then
				break
			fi
			if ! kill -0 "$spid" 2>/dev/null; then
				wait "$spid"
				why="server exited ($?) before it was ready"
				break
			fi
			now
			if ((NOW >= deadline)); then
				why="server not ready"
				break
			fi
			nap 0.05
		done
	fi
	if [ -z "$why" ]; then
		res "CMD: dat2_$c client: DAT_OVERRIDE=$CLI_CONF $cli"
		# shellcheck disable=SC2086
		launch client "$clog" $cli
		cpid=$!
		# the client's end; or the server's, if it ended with its verdict
		# failed while the client still runs (dtest's server exits 0 after
		# printing "FAILED" and its client then waits for ever)
		st=
		while kill -0 "$cpid" 2>/dev/null; do
			now
			if ((NOW >= deadline)); then
				st=124
				break
			fi
			if [ -n "$spid" ] && [ -z "$sst" ] && ! kill -0 "$spid" 2>/dev/null; then
				wait "$spid"
				sst=$?
				if [ "$sst" != 0 ]; then
					why="server exited $sst while the client ran"
				elif [ "${C_SRVOK[i]}" != - ] && ! file_has "$slog" "${C_SRVOK[i]}"; then
					why="server ended without its success line while the client ran"
				fi
				[ -z "$why" ] || break
			fi
			nap 0.1
		done
		if [ -z "$why" ]; then
			[ -n "$st" ] || { wait "$cpid"; st=$?; }
			local ok=1
			if [[ ${C_CLIOK[i]} == @FFT:* ]]; then
				fft_ok "$clog" "${C_CLIOK[i]#@FFT:}" || ok=0
				res "FIGURE: dat2_$c ($DAT2_LABEL) fft cases PASS = ${FFT_COUNTS[0]}"
				res "FIGURE: dat2_$c ($DAT2_LABEL) fft cases UNSUPP = ${FFT_COUNTS[1]}"
				res "FIGURE: dat2_$c ($DAT2_LABEL) fft cases FAIL = ${FFT_COUNTS[2]}"
			else
				file_has "$clog" "${C_CLIOK[i]}" || ok=0
			fi
			if [ "$st" = 124 ]; then
				why="client still running at the limit"
			elif [ "$st" != 0 ]; then
				why="client exited $st"
				((st < 128)) || why+=" (signal $((st - 128)))"
			elif ((!ok)) && [[ ${C_CLIOK[i]} == @FFT:* ]]; then
				why="client reported ${FFT_COUNTS[0]} PASS, ${FFT_COUNTS[1]} UNSUPP, ${FFT_COUNTS[2]} FAIL of ${C_CLIOK[i]#@FFT:} FFT cases"
			elif ((!ok)); then
				why="client printed no success line"
			fi
		fi
		stop "$cpid"
	fi
	if [ -n "$spid" ]; then
		if [ "${C_END[i]}" = quit ] && kill -0 "$spid" 2>/dev/null; then
			local q="dapltest -T Q -s $DAT2_SERVER_ADDR -D $DAT2_CLIENT_IA"
			[ -n "$why" ] || res "CMD: dat2_$c quit: DAT_OVERRIDE=$CLI_CONF $q"
			# shellcheck disable=SC2086
			launch client "$qlog" $q
			local qpid=$!
			wait_pid "$qpid" "$deadline"
			st=$?
			stop "$qpid"
			[ -n "$why" ] || [ $st = 0 ] || why="dapltest -T Q exited $st"
		fi
		if [ -n "$sst" ]; then
			st=$sst
		else
			wait_pid "$spid" "$deadline"
			st=$?
		fi
		if [ -z "$why" ]; then
			if [ $st = 124 ]; then
				why="server still running at the limit"
			elif [ $st != 0 ]; then
				why="server exited $st"
			elif [ "${C_SRVOK[i]}" != - ] && ! file_has "$slog" "${C_SRVOK[i]}"; then
				why="server printed no success line"
			fi
		fi
		stop "$spid"
	fi
	now
	local dt=$((NOW - t0))
	p1=$(pkts)
	local -a a b
	read -ra a <<<"$p0"
	read -ra b <<<"$p1"
	local k d=
	for ((k = 1; k < ${#b[@]}; k += 2)); do
		d+="${b[k - 1]} $((b[k] - ${a[k]:-0})) "
	done
	res "PKTS: dat2_$c ($DAT2_LABEL) ${d% }"
	[ -r "$clog" ] && figures "$c" "$clog"
	if [ -n "$DAT2_TRACE_LIB" ]; then
		calls "$c" server "$slog"
		calls "$c" client "$clog"
		calls "$c" quit "$qlog"
	fi
	if [ -z "$why" ]; then
		res "PASS: dat2_$c ($DAT2_LABEL, $(secs "$dt") s)"
	else
		res "FAIL: dat2_$c ($DAT2_LABEL, $(secs "$dt") s: $why)"
		local f
		for f in "$slog" "$clog" "$qlog"; do
			[ -s "$f" ] || continue
			echo "# --- last lines of $f"
			tail -n 5 "$f" | sed 's/^/#   /'
		done
	fi
}

for i in "${!C_NAME[@]}"; do
	run_case "$i"
done

# --- table ---------------------------------------------------------------
got=$(grep -cE '^(PASS|FAIL): dat2_' "$DAT2_RESULTS")
if [ "$got" -ne "${#C_NAME[@]}" ]; then
	res "FAIL: dat2_all_cases_reported ($DAT2_LABEL, 0 s: $got of ${#C_NAME[@]})"
fi
echo
echo "| case | $DAT2_LABEL | time (s) |"
echo "| --- | --- | --- |"
sed -nE 's/^(PASS|FAIL): dat2_([^ ]+) \([^,]+, ([0-9.]+) s(: (.*))?\)$/| \2 | \1 \5 | \3 |/p' "$DAT2_RESULTS"
echo
grep '^FIGURE: ' "$DAT2_RESULTS" | sed 's/^FIGURE: /  /'
exit 0
