#!/bin/bash
# guest-init.sh - runs inside the QEMU guest as PID 1, right after the rig
# initramfs chrooted into the overlay of the host root (see guest-run.sh).
# Sets up the system and Soft-RoCE, runs the test command, writes its status
# and the kernel log to the shared OUTDIR, and powers the guest off.
#
# Inputs (environment, set by the initramfs from the kernel command line):
#   RIG_OUT          absolute host path of OUTDIR; the 9p tag "rigout" is
#                    mounted there; OUTDIR/.rig-cmd holds argv, NUL-separated
#   RIG_CWD          directory to run the command in
#   RIG_CMD_TIMEOUT  seconds the command may run (0 or empty: no limit)
# and from /proc/cmdline (debug kernel only, base64 like the others):
#   rig_moddir       the debug kernel's modules_install tree, linked to
#                    /lib/modules/$(uname -r)
set -euo pipefail

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=${TERM:-linux}
umask 022

log() { echo "guest-init: $*" >&2; }
if [[ ${RIG_TRACE:-} == 1 ]]; then
	PS4='+ ${EPOCHREALTIME} '
	set -x
fi

# As PID 1 we must never just exit (the kernel would panic and the host would
# only see a missing status).  Whatever happens, record what we can and power
# off.  A failure of the rig itself is reported as status 125.
STATUS=125
OUT_MOUNTED=0
# Debug kernel: kmemleak reports only what a scan found, and an object must
# stay unreferenced across two scans to be reported; lockdep's debug_locks
# drops to 0 when it reported once (or ran out of table space) and stops
# checking.  Both saved for guest-run.sh, which judges them.
# shellcheck disable=SC2317 # called from finish()
debug_kernel_reports() {
	local t
	read -r t </proc/sys/kernel/tainted
	if ((t & 128)); then
		# an oops left the kernel unreliable: a scan of a corrupted
		# heap may hang; the oops fails the run anyway
		log "kernel oopsed (tainted $t): no kmemleak scan"
		return
	fi
	if [[ -e /sys/kernel/debug/kmemleak ]]; then
		t=$SECONDS
		if echo scan >/sys/kernel/debug/kmemleak &&
			echo scan >/sys/kernel/debug/kmemleak; then
			cat /sys/kernel/debug/kmemleak >"$RIG_OUT/kmemleak.txt"
		else
			log "kmemleak scan failed (kmemleak disabled? see dmesg)"
		fi
		log "kmemleak: two scans in $((SECONDS - t)) s"
	fi
	if [[ -r /proc/lockdep_stats ]]; then
		grep -E 'debug_locks|lock-classes|direct dependencies' \
			/proc/lockdep_stats >"$RIG_OUT/lockdep.txt"
	fi
}

# shellcheck disable=SC2317 # called through the EXIT trap
finish() {
	trap - EXIT
	set +e
	if [[ $OUT_MOUNTED == 1 ]]; then
		debug_kernel_reports
		dmesg >"$RIG_OUT/dmesg.txt"
		echo "$STATUS" >"$RIG_OUT/status"
	fi
	sync
	# sysrq 'o' powers off at once (no init system to ask); with
	# -no-reboot QEMU then exits.
	echo o >/proc/sysrq-trigger
	busybox sleep 10
	busybox poweroff -f
}
trap finish EXIT

# --- filesystems -------------------------------------------------------------
# Every exec of a dynamically linked host binary costs ~0.1 s under TCG (its
# libraries come over 9p), so the plain mounts use the static busybox and
# the checks use bash builtins.
bb() { busybox "$@"; }
# /tmp and /run fresh: the host's are visible through the overlay otherwise.
bb mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
bb mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
bb mkdir -p /dev/pts /dev/shm
bb mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
bb mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
bb mount -t debugfs debugfs /sys/kernel/debug
# the boot is over: the console gets warnings and worse only, as with
# loglevel=5 (guest-run.sh may raise the level for the boot)
echo 5 >/proc/sys/kernel/printk
# devtmpfs lacks these (udev makes them normally); bash <(...) needs /dev/fd.
bb ln -sfn /proc/self/fd /dev/fd
bb ln -sfn /proc/self/fd/0 /dev/stdin
bb ln -sfn /proc/self/fd/1 /dev/stdout
bb ln -sfn /proc/self/fd/2 /dev/stderr
# OUTDIR last: if it lives under /tmp or /run it must sit on top of the
# tmpfs mounted above.  No cache: every write goes straight to the host.
bb mkdir -p "$RIG_OUT"
bb mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 rigout "$RIG_OUT"
OUT_MOUNTED=1
# the host's boot watchdog (guest-run.sh) waits for this
: >"$RIG_OUT/booted"
# the running kernel's _text (KASLR): the host's stall watch (guest-run.sh)
# resolves a hung guest's RIPs with it
bb grep -m1 ' _text$' /proc/kallsyms >"$RIG_OUT/.rig-text" 2>/dev/null || :
# and its function symbols: Debian's stock System.map is a stub
bb grep ' [tTwW] [^[]*$' /proc/kallsyms >"$RIG_OUT/.rig-kallsyms" 2>/dev/null || :
mapfile -d '' -t CMD <"$RIG_OUT/.rig-cmd"
[[ ${#CMD[@]} -gt 0 ]] || { log "empty command"; exit 1; }
echo rig-guest >/proc/sys/kernel/hostname

# The debug kernel's modules tree is not under the host's /lib/modules; the
# overlay root is writable, so link it there: modprobe then finds
# modules.builtin (everything the rig loads is built in).
for w in $(</proc/cmdline); do
	case $w in
	rig_moddir=*)
		moddir=$(busybox base64 -d <<<"${w#*=}")
		bb mkdir -p /lib/modules
		bb ln -sfn "$moddir" "/lib/modules/$(</proc/sys/kernel/osrelease)"
		;;
	esac
done

# --- Soft-RoCE -----------------------------------------------------------------
# crc32_generic first: without it rdma_rxe cannot init its crc32 transform and
# "rdma link add" fails with err -2.  udp_tunnel etc. come in as dependencies.
# configfs (rdma_cm's configfs interface) and veth in the same modprobe run:
# one exec instead of several.
modprobe -a configfs veth crc32_generic ib_core ib_uverbs rdma_cm rdma_ucm rdma_rxe
bb mount -t configfs configfs /sys/kernel/config

# Two "hosts" on one veth pair, both in the init namespace (in-kernel rdma_cm
# consumers live there).  iproute2's ip is needed: busybox ip has no veth.
ip -batch - <<'IP'
link set lo up
link add v0 type veth peer name v1
addr add 192.0.2.1/24 dev v0
addr add 192.0.2.2/24 dev v1
link set v0 up
link set v1 up
IP
rdma link add rxe0 type rxe netdev v0
rdma link add rxe1 type rxe netdev v1
# Both addresses are local to this namespace: without this, rxe1 -> rxe0
# traffic is routed over lo and lost (README.md, "rxe1 -> rxe0").
"${0%/*}/rxe-pair-routing.sh" on

# Bounded wait (5 s) for both ports to be ACTIVE; veth carrier comes up
# asynchronously.  Read sysfs with builtins: no exec per poll.
port_active() { local s; read -r s <"/sys/class/infiniband/$1/ports/1/state" && [[ $s == *ACTIVE* ]]; }
for ((i = 0; i < 50; i++)); do
	port_active rxe0 && port_active rxe1 && break
	busybox sleep 0.1
done
if ! { port_active rxe0 && port_active rxe1; }; then
	rdma link show >&2 || true
	log "rxe ports did not become ACTIVE"
	exit 1
fi

# --- the command -------------------------------------------------------------
cd "$RIG_CWD"
TO=()
# timeout(1) so that a hung test still leaves a status (124) and dmesg.txt
# before the host kills the VM.
if [[ ${RIG_CMD_TIMEOUT:-0} =~ ^[0-9]+$ && ${RIG_CMD_TIMEOUT:-0} -gt 0 ]]; then
	TO=(timeout -k 5 "$RIG_CMD_TIMEOUT")
fi
# Oops watchdog: after an oops (taint flag D) the kernel may be too broken
# to run anything (seen: a corrupted slab made every fork/exec crash or
# hang, and the guest sat there until the host killed it, 25 minutes later,
# with nothing saved).  Give the command OOPS_GRACE seconds to finish after
# the oops, then save what can still be saved and power off.  Bash
# builtins only: a read with a timeout on a FIFO nobody writes is the sleep.
OOPS_GRACE=60
oops_fifo=/run/rig-oops-watch
mkfifo "$oops_fifo"
(
	trap - EXIT
	set +e
	exec 7<>"$oops_fifo"
	while read -r t </proc/sys/kernel/tainted && ! ((t & 128)); do
		read -rt 2 -u 7 || :
	done
	for ((i = 0; i < OOPS_GRACE; i++)); do read -rt 1 -u 7 || :; done
	echo "guest-init: the kernel oopsed and the command did not finish within ${OOPS_GRACE}s; saving what can be saved and powering off" >/dev/console
	# best effort: exec may no longer work
	busybox timeout 20 busybox dmesg >"$RIG_OUT/dmesg.txt"
	echo 124 >"$RIG_OUT/status"
	echo s >/proc/sysrq-trigger
	echo o >/proc/sysrq-trigger
) &
OOPS_WATCH=$!

set +e
"${TO[@]}" "${CMD[@]}" </dev/null
STATUS=$?
set -e
kill "$OOPS_WATCH" 2>/dev/null
[[ $STATUS == 124 ]] && log "command timed out after ${RIG_CMD_TIMEOUT}s"
exit 0 # finish() records STATUS and powers off
