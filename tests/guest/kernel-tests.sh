#!/usr/bin/env bash
# Guest stage (run inside the guest by tests/vm/guest-run.sh, from the repo
# root): loads the freshly built kdat.ko, runs the kernel test modules (one
# case per checkable statement of the SRQ man pages, plus any other test
# module tests/kernel/Kbuild builds), the raw /dev/kdat ABI binaries
# (abi_smoke, kdat_race, kdat_fuzz), the libdat GoogleTest suite, proves
# nothing is left alive after each, refuses rmmod while /dev/kdat is open,
# removes a device under live objects, and unloads.
#
# Writes PASS:/FAIL: lines to $RESULTS (default build/test/guest.txt).
# Every part knows how many cases it expects and reports a FAIL when fewer
# reported; a part that hangs is stopped after its time limit, fails, and
# the rest still runs.
#
# Environment (defaults: the stock-kernel build in the repo):
#   KDAT_KO          the module                 (kernel/kdat.ko)
#   KDAT_TEST_DIR    the kernel test modules    (tests/kernel; its
#                    modules.order lists them, kdat_test.ko first)
#   KDAT_TEST_KO     the main test module       ($KDAT_TEST_DIR/kdat_test.ko)
#   KDAT_RACE, KDAT_FUZZ   raw-ABI binaries     (build/kdat_race, build/kdat_fuzz)
#   KDAT_TIMEOUT     seconds each test module / binary may run (400)
set -uo pipefail

RESULTS=${RESULTS:-build/test/guest.txt}
KDAT_KO=${KDAT_KO:-kernel/kdat.ko}
KDAT_TEST_DIR=${KDAT_TEST_DIR:-tests/kernel}
KDAT_TEST_KO=${KDAT_TEST_KO:-$KDAT_TEST_DIR/kdat_test.ko}
KDAT_RACE=${KDAT_RACE:-build/kdat_race}
KDAT_FUZZ=${KDAT_FUZZ:-build/kdat_fuzz}
KDAT_TIMEOUT=${KDAT_TIMEOUT:-400}
: >"$RESULTS"
pass() { echo "PASS: $*" | tee -a "$RESULTS"; }
fail() { echo "FAIL: $*" | tee -a "$RESULTS"; }
# Where kdat's code is, for the host's stall watch (guest-run.sh resolves
# the RIPs of a guest that stopped making progress against it).
note_kdat() {
	[ -n "${RIG_OUT:-}" ] || return 0
	echo "kdat $(cat /sys/module/kdat/sections/.text 2>/dev/null) $(readlink -f "$KDAT_KO")" \
		>>"$RIG_OUT/.rig-modules"
}
objects() { awk '$1 == "total" { print $2 }' /sys/kernel/debug/kdat/objects 2>/dev/null; }
no_live_objects() {	# no_live_objects NAME
	local n
	n=$(objects)
	if [ "$n" = 0 ]; then pass "$1"; else fail "$1 (${n:-no counter} left)"; fi
}

# Wait (bounded, for a broken module only) until the log shows $1; stop
# early when $2 shows instead.
wait_log() {
	local i log
	for i in $(seq 1 300); do
		log=$(dmesg)
		grep -q -- "$1" <<<"$log" && return 0
		[ -n "${2:-}" ] && grep -q -- "$2" <<<"$log" && return 1
		sleep 0.3
	done
	return 1
}

# Has the kernel oopsed (taint flag D)?  A bash builtin read: after an oops
# fork and exec may no longer work.
kernel_died() {
	local t
	read -r t </proc/sys/kernel/tainted && ((t & 128))
}

# bounded SECONDS CMD...: CMD's status, or 124 if it was still running after
# SECONDS (or 30 s after the kernel oopsed under it).  Not timeout(1): a
# process stuck in the kernel ignores SIGKILL and timeout would wait for it
# forever; this polls for the process to end, signals it at the limit and
# moves on whether it died or not.
bounded() {
	local secs=$1 pid i
	shift
	"$@" &
	pid=$!
	for ((i = 0; i < secs; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		if kernel_died && ((secs > i + 30)); then
			secs=$((i + 30))
		fi
		sleep 1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 10; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 1
		done
		kill -KILL "$pid" 2>/dev/null
		# reap it if it died; a task stuck in D state stays behind
		kill -0 "$pid" 2>/dev/null || wait "$pid" 2>/dev/null
		return 124
	fi
	wait "$pid"
}

# alive_after PART: after an oops the kernel is unreliable (a corrupted
# heap makes every later part crash or hang): say so and stop the suite;
# the parts that did not run then report nothing, and the host's
# kernel-log check fails the run anyway.
alive_after() {
	if kernel_died; then
		fail "kernel_survives_$1 (oops, see dmesg; the rest of the suite is skipped)"
		exit 0
	fi
}

# expect_count PREFIX GOT EXPECTED WHAT: FAIL when fewer cases reported.
expect_count() {
	if [ -z "$3" ] || [ "$3" -eq 0 ]; then
		fail "${1}plan_known (no case count for $4)"
	elif [ "$2" -lt "$3" ]; then
		fail "${1}all_cases_reported ($2 of $3 $4 reported)"
	else
		echo "# $4: $2 of $3 cases reported"
	fi
}

# --- the module ----------------------------------------------------------
if ! insmod "$KDAT_KO"; then
	fail "module_loads ($KDAT_KO)"
	exit 1
fi
note_kdat
pass "module_loads"
grep -q "kdat: IA rxe0 registered" <<<"$(dmesg)" && pass "ia_appears_with_ib_device" ||
	fail "ia_appears_with_ib_device"
# kernel PZs carry no global rkey unless the administrator asks for it
[ "$(cat /sys/module/kdat/parameters/remote_access)" = N ] &&
	pass "remote_access_off_by_default" || fail "remote_access_off_by_default"
# the kernel suite's RDMA case needs it: its PZs are created after this
echo 1 >/sys/module/kdat/parameters/remote_access

# --- the kernel test modules ---------------------------------------------
# Contract: loading NAME.ko runs its cases in module init and prints
# "NAME: ok CASE" / "NAME: not ok CASE: why" per case and
# "NAME: N passed, M failed" at the end.  The expected count comes from the
# source's case table ("cases[] = {" ... "CASE(" ... "};"), else from that
# summary line.  kdat_test's results are kernel_CASE; another module's
# kernel_<name without kdat_ and _test>_CASE.
kmod_cases_in_source() {
	[ -f "$1" ] || return 0
	awk '/cases\[\] *= *\{/ { on = 1; next }
		on && /^\};/ { on = 0 }
		on && /^[ \t]*CASE\(/ { n++ }
		END { if (n) print n }' "$1"
}

run_test_module() {
	local ko=$1 name pfx mark st out args=() p expected got summary t0
	name=$(basename "$ko" .ko)
	if [ "$name" = kdat_test ]; then
		pfx=kernel_
	else
		pfx=${name#kdat_}
		pfx=kernel_${pfx%_test}_
	fi
	# the rig's parameters, for those the module declares
	for p in $(modinfo -p "$ko" 2>/dev/null | cut -d: -f1); do
		case $p in
		srv_ia) args+=(srv_ia=rxe0) ;;
		cli_ia) args+=(cli_ia=rxe1) ;;
		srv_addr) args+=(srv_addr=192.0.2.1) ;;
		cli_addr) args+=(cli_addr=192.0.2.2) ;;
		esac
	done
	mark=$(dmesg | wc -l)
	t0=$SECONDS
	bounded "$KDAT_TIMEOUT" insmod "$ko" "${args[@]}"
	st=$?
	echo "# time $name: $((SECONDS - t0)) s (insmod status $st)"
	out=$(dmesg | tail -n +"$((mark + 1))")
	sed -n "s/.*$name: ok \([^ ]*\)\$/PASS: $pfx\1/p" <<<"$out" |
		awk '!seen[$0]++' | tee -a "$RESULTS"
	# one line per case, even if a case printed several "not ok"
	sed -n "s/.*$name: not ok \([^:]*\):\(.*\)\$/\1 -\2/p" <<<"$out" |
		awk '!seen[$1]++ { print "FAIL: '"$pfx"'" $0 }' | tee -a "$RESULTS"
	got=$(grep -E "$name: (not )?ok [^ :]+" <<<"$out" |
		sed -E "s/.*$name: (not )?ok ([^ :]+).*/\2/" | sort -u | wc -l)
	summary=$(sed -n "s/.*$name: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p" <<<"$out" | tail -n1)
	expected=$(kmod_cases_in_source "${ko%.ko}.c")
	if [ -z "$expected" ] && [ -n "$summary" ]; then
		expected=$((${summary% *} + ${summary#* }))
	fi
	case $st in
	0)
		[ -n "$summary" ] || fail "${pfx}suite_completed (no summary line)"
		expect_count "$pfx" "$got" "$expected" "$name"
		rmmod "$name" || fail "${pfx}module_unloads"
		;;
	124)
		fail "${pfx}suite_completed (insmod still running after ${KDAT_TIMEOUT}s)"
		expect_count "$pfx" "$got" "$expected" "$name"
		;;
	*)
		fail "${pfx}module_loads (insmod status $st)"
		;;
	esac
	no_live_objects "no_live_objects_after_${pfx}suite"
	alive_after "$name"
}

if [ -e "$KDAT_TEST_KO" ]; then
	run_test_module "$KDAT_TEST_KO"
else
	fail "kernel_test_module_built ($KDAT_TEST_KO)"
fi
# the others, in Kbuild's order (a stale .ko of a removed module is ignored)
if [ -f "$KDAT_TEST_DIR/modules.order" ]; then
	while read -r m; do
		m=$KDAT_TEST_DIR/$(basename "$m" .o)
		m=${m%.ko}.ko
		[ "$(basename "$m")" = "$(basename "$KDAT_TEST_KO")" ] && continue
		if [ -e "$m" ]; then
			run_test_module "$m"
		else
			fail "kernel_test_module_built ($m)"
		fi
	done <"$KDAT_TEST_DIR/modules.order"
fi

# --- binaries that print PASS:/FAIL: lines --------------------------------
# run_cases NAME PREFIX EXPECTED BIN [ARGS...]: run BIN (bounded), copy its
# PASS:/FAIL: lines with PREFIX added where missing, fail when fewer than
# EXPECTED (or than its own "PLAN: N" if EXPECTED is empty) reported, when
# it exited non-zero without a FAIL line, or when it ran out of time; then
# check the live-object counter.
run_cases() {
	local name=$1 pfx=$2 expected=$3 st log seed got nfail t0=$SECONDS
	shift 3
	log=$RESULTS.$name
	bounded "$KDAT_TIMEOUT" "$@" >"$log" 2>&1 </dev/null
	st=$?
	echo "# time $name: $((SECONDS - t0)) s (status $st)"
	seed=$(sed -n 's/^SEED: *\([0-9]*\).*/\1/p' "$log" | head -n1)
	[ -z "$seed" ] || echo "# $name: SEED: $seed" | tee -a "$RESULTS"
	grep -E '^(PASS|FAIL): ' "$log" |
		sed -E "s/^(PASS|FAIL): ($pfx)?/\1: $pfx/" |
		if [ -n "$seed" ]; then sed "/^FAIL/s/\$/ (seed $seed)/"; else cat; fi |
		tee -a "$RESULTS"
	# a timed-out case's kernel stacks (kdat_harness.h), for the report
	grep -E '^# (thread [0-9]+ kernel stack:|  )' "$log" | head -n 120 |
		tee -a "$RESULTS"
	got=$(grep -cE '^(PASS|FAIL): ' "$log")
	nfail=$(grep -cE '^FAIL: ' "$log")
	[ -n "$expected" ] || expected=$(sed -n 's/^PLAN: *\([0-9]*\).*/\1/p' "$log" | head -n1)
	expect_count "$pfx" "$got" "$expected" "$name"
	if [ "$st" = 124 ]; then
		fail "${pfx}completed (still running after ${KDAT_TIMEOUT}s)"
	elif [ "$st" != 0 ] && [ "$nfail" = 0 ]; then
		fail "${pfx}exit_status ($st with no FAIL line; see $log)"
	fi
	no_live_objects "no_live_objects_after_$name"
	alive_after "$name"
}

# abi_smoke prints no plan: its cases are its PASS lines in the source.
if [ -x build/abi_smoke ]; then
	run_cases abi_smoke abi_ \
		"$(grep -o 'printf("PASS: [a-z0-9_]*' tests/user/abi/abi_smoke.c | sort -u | wc -l)" \
		build/abi_smoke
else
	fail "abi_smoke_built"
fi
# kdat_race / kdat_fuzz print "PLAN: N" first (kdat_fuzz then "SEED: n").
for t in race fuzz; do
	bin=$KDAT_RACE
	[ $t = fuzz ] && bin=$KDAT_FUZZ
	if [ -x "$bin" ]; then
		run_cases "kdat_$t" "${t}_" "" "$bin"
	elif [ -e "tests/user/$t/kdat_$t.c" ]; then
		fail "${t}_binary_built ($bin)"
	fi
done

# --- libdat against the module (GoogleTest) ------------------------------
gt=$(find build/user -name dat_guest_tests -type f -perm -u+x 2>/dev/null | head -1)
if [ -n "$gt" ]; then
	planned=$("$gt" --gtest_list_tests 2>/dev/null | grep -c '^  ')
	t0=$SECONDS
	bounded "$KDAT_TIMEOUT" "$gt" --gtest_color=no >"$RESULTS.gtest" 2>&1 </dev/null
	st=$?
	echo "# time dat_guest_tests: $((SECONDS - t0)) s (status $st)"
	sed -n 's/^\[       OK \] \([^ ,]*\)[ ,].*/PASS: user_\1/p;
		s/^\[  FAILED  \] \([^ ,]*\)[ ,].*([0-9]* ms)$/FAIL: user_\1/p' \
		"$RESULTS.gtest" | tee -a "$RESULTS"
	got=$(grep -cE '^\[ +(OK|FAILED) +\] [^ ,]+[ ,].*\([0-9]+ ms\)$' "$RESULTS.gtest")
	expect_count user_ "$got" "$planned" dat_guest_tests
	if [ "$st" = 124 ]; then
		fail "user_gtest_suite_completed (still running after ${KDAT_TIMEOUT}s)"
	elif [ "$st" != 0 ] && ! grep -q '^\[  FAILED  \]' "$RESULTS.gtest"; then
		fail "user_gtest_suite_completed (status $st)"
	fi
	no_live_objects "no_live_objects_after_user_suite"
	alive_after dat_guest_tests
else
	fail "user_gtest_suite_built"
fi

# --- libdaplkdat: the DAT 2.0 IA family through OFED's libdat2 ------------
# (built where libdapl-dev is; tests/user/host/dat2_registry.c)
d2=$(find build/user -name dat2_registry -type f -perm -u+x 2>/dev/null | head -1)
d2lib=$(find build/user -name libdaplkdat.so.2 2>/dev/null | head -1)
if [ -n "$d2" ] && [ -n "$d2lib" ]; then
	d2dir=$(mktemp -d)
	if bounded 120 "$d2" "$PWD/$d2lib" "$d2dir" rxe0 >"$RESULTS.dat2" 2>&1 </dev/null; then
		pass "dat2_ia_family_through_libdat2"
	else
		fail "dat2_ia_family_through_libdat2 ($(grep -m1 FAIL "$RESULTS.dat2"))"
	fi
	rm -rf "$d2dir"
	no_live_objects "no_live_objects_after_dat2"
	alive_after dat2_registry
fi

# --- rmmod while a process holds /dev/kdat open ---------------------------
mark=$(dmesg | wc -l)
if exec 3</dev/kdat; then
	if rmmod kdat 2>/dev/null; then
		fail "rmmod_refused_while_dev_kdat_open (it unloaded)"
		exec 3<&-
		insmod "$KDAT_KO" || { fail "module_reloads"; exit 1; }
		note_kdat
	else
		pass "rmmod_refused_while_dev_kdat_open"
	fi
	exec 3<&-
	dmesg | tail -n +"$((mark + 1))" >/tmp/rmmod-open.log
	if tests/vm/check-kernel-log.sh /tmp/rmmod-open.log; then
		pass "kernel_log_clean_after_refused_rmmod"
	else
		fail "kernel_log_clean_after_refused_rmmod"
	fi
else
	fail "rmmod_refused_while_dev_kdat_open (cannot open /dev/kdat)"
fi

# --- device removal under live objects -----------------------------------
mark=$(dmesg | wc -l)
if insmod "$KDAT_TEST_KO" mode=catastrophe dev_ia=rxe1; then
	if wait_log "catastrophe: ready"; then
		rdma link delete rxe1
		if wait_log "kdat_test: ok ia_catastrophic_on_device_removal" \
			"kdat_test: not ok ia_catastrophic"; then
			pass "kernel_ia_catastrophic_on_device_removal"
		else
			fail "kernel_ia_catastrophic_on_device_removal"
			dmesg | tail -n +"$mark" | grep kdat_test
		fi
	else
		fail "kernel_ia_catastrophic_on_device_removal (never ready)"
	fi
	rmmod kdat_test
else
	fail "kernel_ia_catastrophic_on_device_removal (load)"
fi
grep -q "kdat: IA rxe1 removed" <<<"$(dmesg)" && pass "ia_disappears_with_ib_device" ||
	fail "ia_disappears_with_ib_device"
no_live_objects "no_live_objects_after_removal"
alive_after device_removal

# --- unload --------------------------------------------------------------
if rmmod kdat; then
	pass "module_unloads"
else
	fail "module_unloads"
fi
grep -q "kdat: leak" <<<"$(dmesg)" && fail "no_leak_report_at_unload" ||
	pass "no_leak_report_at_unload"

# --- a kernel consumer that unloads with its IAs open ---------------------
# orphan_unload NAME [DEVICE]: kdat_test mode=orphan leaves both IAs open
# (connected EPs, an SRQ, a posted receive, an upcall into its own code),
# and a third one it opened from its init text;
# with DEVICE, that device is removed while the consumer is still loaded
# (its IA turns dead; the catastrophe's upcalls run in kdat_test).  rmmod
# kdat_test must close the three IAs, at its own unload (kdat knows which
# module opened them), with no upcall run after that point and nothing
# left; then kdat unloads with nothing to close and a clean log.  rxe1
# comes back first: the device-removal part above deleted it.
rxe1_back() { [ -e /sys/class/infiniband/rxe1 ] || rdma link add rxe1 type rxe netdev v1; }
# orphan_load [DEVICE] [FAULT]: with FAULT, that debugfs switch is held on
# while kdat_test loads
orphan_load() {
	local st
	insmod "$KDAT_KO" remote_access=1 || return 1
	if [ -n "${2:-}" ]; then
		exec 8>"/sys/kernel/debug/kdat/$2" || return 1
		echo 1 >&8 || { exec 8>&-; return 1; }
	fi
	insmod "$KDAT_TEST_KO" mode=orphan
	st=$?
	[ -z "${2:-}" ] || exec 8>&-
	[ "$st" = 0 ] && { [ -z "${1:-}" ] || rdma link delete "$1"; }
}
# after a failure: what is still loaded goes, so the next case starts clean
orphan_cleanup() {
	lsmod | grep kdat
	rmmod kdat_test 2>/dev/null
	rmmod kdat 2>/dev/null
}
# orphan_verdict NAME MARK MARK2 CHECK: the kernel log since MARK (the load)
# and since MARK2 (the unload) into /tmp/orphan.log and orphan-unload.log;
# NAME passes when the function CHECK (which sets $why) returns 0 on them,
# the consumer got ready, no upcall into it ran and nothing leaked after
# MARK2, and the log is clean.
orphan_verdict() {
	local name=$1 check=$4
	why=
	dmesg | tail -n +"$(($2 + 1))" >/tmp/orphan.log
	dmesg | tail -n +"$(($3 + 1))" >/tmp/orphan-unload.log
	if "$check" && grep -q "kdat_test: orphan: ready" /tmp/orphan.log &&
		! grep -q "kdat_test: orphan: upcall\|kdat: leak" /tmp/orphan-unload.log &&
		tests/vm/check-kernel-log.sh /tmp/orphan.log; then
		pass "$name"
	else
		fail "$name ($why)"
		grep "kdat" /tmp/orphan.log | tail -20
	fi
}
orphan_unload() {
	local name=$1 dev=${2:-} mark mark2 i
	rxe1_back
	mark=$(dmesg | wc -l)
	if ! orphan_load "$dev"; then
		fail "$name (load or removal failed)"
		orphan_cleanup
		return
	fi
	note_kdat
	# a removal has returned: its upcalls are done
	mark2=$(dmesg | wc -l)
	rmmod kdat_test || { fail "$name (rmmod kdat_test failed)"; orphan_cleanup; return; }
	# a last put in softirq hands its release to a work item
	for i in $(seq 1 100); do [ "$(objects)" = 0 ] && break; sleep 0.1; done
	orphan_left=$(objects) orphan_dev=$dev
	rmmod kdat || { fail "$name (rmmod kdat failed)"; return; }
	orphan_verdict "$name" "$mark" "$mark2" closed_at_its_unload
}
closed_at_its_unload() {
	local n
	n=$(grep -c "kdat: IA rxe[01] left open by kdat_test, closed at its unload" /tmp/orphan-unload.log)
	why="$n closed, ${orphan_left:-no counter} objects left"
	[ "$n" = 3 ] && [ "$orphan_left" = 0 ] &&
		{ [ -z "$orphan_dev" ] || grep -q "kdat: IA $orphan_dev removed" /tmp/orphan.log; } &&
		! grep -q "closed at unload" /tmp/orphan-unload.log
}
orphan_unload consumer_unload_closes_the_ias_it_left_open
orphan_unload consumer_unload_closes_ias_left_open_on_a_removed_device rxe1

# The same consumer, but kdat cannot tell which module opened its IAs
# (debugfs fault_no_opener, held on while it loads).  At its unload kdat
# turns off the one upcall into its code (the client's DTO EVD).  Removing
# rxe1 then flushes the client EP's posted receive into that EVD: without
# the turn-off its upcall would run in freed module memory.  kdat's own
# unload then closes the three IAs, as it did for every orphan before.
orphan_unplaced() {
	local name=consumer_unload_turns_off_upcalls_into_it mark mark2
	rxe1_back
	mark=$(dmesg | wc -l)
	if ! orphan_load "" fault_no_opener; then
		fail "$name (load failed)"
		orphan_cleanup
		return
	fi
	note_kdat
	mark2=$(dmesg | wc -l)
	if ! rmmod kdat_test || ! rdma link delete rxe1 || ! rmmod kdat; then
		fail "$name (unload or removal failed)"
		orphan_cleanup
		return
	fi
	alive_after consumer_unload_and_removal
	orphan_verdict "$name" "$mark" "$mark2" upcalls_off_then_closed_at_unload
}
upcalls_off_then_closed_at_unload() {
	local n m
	n=$(grep -c "kdat: IA rxe1: 1 upcall into kdat_test turned off at its unload" /tmp/orphan-unload.log)
	m=$(grep -c "kdat: IA rxe[01] left open by a kernel consumer, closed at unload" /tmp/orphan-unload.log)
	why="$n turned off, $m closed at kdat's unload"
	[ "$n" = 1 ] && [ "$m" = 3 ] &&
		grep -q "kdat: IA rxe1 removed" /tmp/orphan-unload.log &&
		! grep -q "left open by kdat_test" /tmp/orphan-unload.log
}
orphan_unplaced
rxe1_back
exit 0
