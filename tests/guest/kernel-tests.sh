#!/usr/bin/env bash
# Guest stage.
# from the repo root: loads the freshly built kdat.ko, runs the kdat_test
# consumer (one case per checkable statement of the SRQ man pages), proves
# nothing is left alive, removes a device under live objects, and unloads.
# Writes PASS:/FAIL: lines to $RESULTS (default build/test/guest.txt).
set -uo pipefail

RESULTS=${RESULTS:-build/test/guest.txt}
: >"$RESULTS"
pass() { echo "PASS: $*" | tee -a "$RESULTS"; }
fail() { echo "FAIL: $*" | tee -a "$RESULTS"; }
objects() { awk '$1 == "total" { print $2 }' /sys/kernel/debug/kdat/objects; }

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

if ! insmod kernel/kdat.ko; then
	fail "module_loads"
	exit 1
fi
pass "module_loads"
dmesg | grep -q "kdat: IA rxe0 registered" && pass "ia_appears_with_ib_device" ||
	fail "ia_appears_with_ib_device"
# kernel PZs carry no global rkey unless the administrator asks for it
[ "$(cat /sys/module/kdat/parameters/remote_access)" = N ] &&
	pass "remote_access_off_by_default" || fail "remote_access_off_by_default"
# the kernel suite's RDMA case needs it: its PZs are created after this
echo 1 >/sys/module/kdat/parameters/remote_access

# --- the SRQ cases -------------------------------------------------------
if insmod tests/kernel/kdat_test.ko srv_ia=rxe0 cli_ia=rxe1 srv_addr=192.0.2.1; then
	dmesg | sed -n 's/.*kdat_test: ok \(.*\)$/PASS: kernel_\1/p' | tee -a "$RESULTS"
	dmesg | sed -n 's/.*kdat_test: not ok \([^:]*\):\(.*\)$/FAIL: kernel_\1 -\2/p' |
		tee -a "$RESULTS"
	dmesg | grep -q "kdat_test: [0-9]* passed" || fail "kernel_suite_completed"
	rmmod kdat_test || fail "kernel_test_module_unloads"
else
	fail "kernel_test_module_loads"
fi
[ "$(objects)" = 0 ] && pass "no_live_objects_after_suite" ||
	fail "no_live_objects_after_suite ($(objects) left)"

# --- /dev/kdat through the raw ABI ---------------------------------------
if [ -x build/abi_smoke ]; then
	build/abi_smoke >"$RESULTS.abi" 2>&1
	st=$?
	cat "$RESULTS.abi" | tee -a "$RESULTS"
	[ $st = 0 ] || fail "abi_smoke_exit_status ($st)"
	[ "$(objects)" = 0 ] && pass "no_live_objects_after_file_close" ||
		fail "no_live_objects_after_file_close ($(objects) left)"
fi

# --- libdat against the module (GoogleTest) ------------------------------
gt=$(find build/user -name dat_guest_tests -type f -perm -u+x 2>/dev/null | head -1)
if [ -n "$gt" ]; then
	"$gt" --gtest_color=no >"$RESULTS.gtest" 2>&1
	st=$?
	sed -n 's/^\[       OK \] \([^ ]*\) (.*/PASS: user_\1/p;
		s/^\[  FAILED  \] \([^ ]*\) (.*/FAIL: user_\1/p' "$RESULTS.gtest" |
		tee -a "$RESULTS"
	grep -q "^\[  PASSED  \]" "$RESULTS.gtest" || [ $st = 0 ] ||
		fail "user_gtest_suite_completed ($st)"
	[ "$(objects)" = 0 ] && pass "no_live_objects_after_user_suite" ||
		fail "no_live_objects_after_user_suite ($(objects) left)"
else
	fail "user_gtest_suite_built"
fi

# --- device removal under live objects -----------------------------------
mark=$(dmesg | wc -l)
if insmod tests/kernel/kdat_test.ko mode=catastrophe dev_ia=rxe1; then
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
dmesg | grep -q "kdat: IA rxe1 removed" && pass "ia_disappears_with_ib_device" ||
	fail "ia_disappears_with_ib_device"
[ "$(objects)" = 0 ] && pass "no_live_objects_after_removal" ||
	fail "no_live_objects_after_removal ($(objects) left)"

# --- unload --------------------------------------------------------------
if rmmod kdat; then
	pass "module_unloads"
else
	fail "module_unloads"
fi
dmesg | grep -q "kdat: leak" && fail "no_leak_report_at_unload" ||
	pass "no_leak_report_at_unload"
exit 0
