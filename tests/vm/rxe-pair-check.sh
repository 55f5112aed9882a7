#!/bin/bash
# rxe-pair-check.sh [--baseline] - check which rxe0/rxe1 pairs can talk, with
# raw verbs (perftest, GID index 1 = the IPv4 GID), with rdma_cm from
# userspace (rping, perftest -R), and with the in-kernel rdma_cm (the
# cm-probe module: address + route resolution in init_net, as an in-kernel
# consumer does it).  Per-device packet counters show which rxe device really
# carried each test, because rdma_cm silently falls back to device loopback
# when it routes a connection over lo.
#
#   tests/vm/rxe-pair-check.sh              # on the host: builds cm-probe,
#   tests/vm/rxe-pair-check.sh --baseline   # then runs itself in the guest
#
# --baseline first runs the matrix with rxe-pair-routing.sh turned off (the
# plain kernel configuration), then again with it on, as guest-init.sh sets.
# Exit status: non-zero if a case that must work with the routing on fails.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PROBE_DIR=$REPO/build/vm/cm-probe

# On the host (no rxe devices): build the probe module against the guest's
# kernel headers (out of tree, in build/vm), then run this script in the VM.
if [[ ! -e /sys/class/infiniband/rxe0 ]]; then
	# Same choice as guest-run.sh: newest version with modules, headers and
	# a bootable image.
	if [[ -z ${KVER:-} ]]; then
		for d in /lib/modules/*/build; do
			v=${d#/lib/modules/}
			v=${v%/build}
			[[ -f /boot/vmlinuz-$v ]] && KVER=$(printf '%s\n%s\n' "${KVER:-}" "$v" | sort -V | tail -n1)
		done
	fi
	[[ -n ${KVER:-} ]] || { echo "rxe-pair-check: no kernel headers in /lib/modules/*/build" >&2; exit 125; }
	rm -rf "$PROBE_DIR"
	mkdir -p "$PROBE_DIR"
	cp "$HERE/cm-probe/cm_probe.c" "$HERE/cm-probe/Makefile" "$PROBE_DIR/"
	make -s -C "/lib/modules/$KVER/build" M="$PROBE_DIR" modules
	cd "$REPO"
	export KVER
	t=300
	[[ ${1:-} == --baseline ]] && t=900
	exec "$HERE/guest-run.sh" -t "$t" -- "$HERE/rxe-pair-check.sh" "$@"
fi

A=192.0.2.1 # v0 / rxe0
B=192.0.2.2 # v1 / rxe1
LOG=$(mktemp -d)
# perftest needs no big queues here; 1000 SRQ sends of 64 bytes on 4 QPs.
PT=(--use-srq -q 4 -s 64 -n 1000)

ctr() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"; }
snap() { echo "$(ctr rxe0 sent_pkts) $(ctr rxe0 rcvd_pkts) $(ctr rxe1 sent_pkts) $(ctr rxe1 rcvd_pkts)"; }

# Wait (bounded) until a server is ready: a TCP listener on port $1 for
# perftest's out-of-band exchange, or any rdma_cm listener for "cm".
wait_ready() {
	for _ in $(seq 100); do
		if [[ $1 == cm ]]; then
			rdma res show cm_id 2>/dev/null | grep -q 'state LISTEN' && return 0
		else
			ss -Hltn "sport = :$1" | grep -q . && return 0
		fi
		sleep 0.1
	done
	return 1
}

FAILED=()
# run_case NAME EXPECT READY SERVER-CMD... -- CLIENT-CMD...
#   EXPECT: where the packets must flow for the case to count as ok:
#     pair   both rxe0 and rxe1 sent and received (the veth wire)
#     rxe0   only rxe0 (loopback inside the device), likewise rxe1
#   READY: see wait_ready.
run_case() {
	local name=$1 expect=$2 ready=$3
	shift 3
	local srv=() cli=()
	while [[ $1 != -- ]]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	local before after spid src crc s0 r0 s1 r1
	before=$(snap)
	# stdbuf: a killed perftest must not take its buffered output along.
	timeout 60 stdbuf -oL "${srv[@]}" >"$LOG/srv" 2>&1 &
	spid=$!
	wait_ready "$ready" || echo "  (server not ready after 10 s)" >>"$LOG/srv"
	set +e
	timeout 40 stdbuf -oL "${cli[@]}" >"$LOG/cli" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	set -e
	after=$(snap)
	read -r s0 r0 s1 r1 < <(paste -d' ' <(tr ' ' '\n' <<<"$before") <(tr ' ' '\n' <<<"$after") |
		awk '{ printf "%s ", $2 - $1 } END { print "" }')
	local path=none
	if ((s0 > 0 && r0 > 0 && s1 > 0 && r1 > 0)); then path=pair
	elif ((s0 > 0 && r0 > 0 && s1 == 0 && r1 == 0)); then path=rxe0
	elif ((s1 > 0 && r1 > 0 && s0 == 0 && r0 == 0)); then path=rxe1
	elif ((s0 + r0 + s1 + r1 > 0)); then path=partial
	fi
	local verdict=ok
	if [[ $crc != 0 || $src != 0 ]]; then verdict=FAIL
	elif [[ $path != "$expect" ]]; then verdict=WRONG-PATH
	fi
	printf '%-46s %-10s path=%-7s client=%-3s server=%-3s rxe0 tx/rx %5s/%-5s rxe1 tx/rx %5s/%-5s\n' \
		"$name" "$verdict" "$path" "$crc" "$src" "$s0" "$r0" "$s1" "$r1"
	if [[ $verdict != ok ]]; then
		sed 's/^/    server: /' "$LOG/srv" | tail -n 4
		sed 's/^/    client: /' "$LOG/cli" | tail -n 4
		[[ $MUST == yes ]] && FAILED+=("$name")
	fi
	return 0
}

matrix() {
	MUST=$1
	run_case "verbs  rxe1 -> rxe0  (perftest -x 1)" pair 18515 \
		ib_send_bw -d rxe0 -x 1 "${PT[@]}" -- ib_send_bw -d rxe1 -x 1 "${PT[@]}" $A
	run_case "verbs  rxe0 -> rxe1  (perftest -x 1)" pair 18515 \
		ib_send_bw -d rxe1 -x 1 "${PT[@]}" -- ib_send_bw -d rxe0 -x 1 "${PT[@]}" $B
	run_case "cm     rping -I $B -> $A" pair cm \
		rping -s -a $A -C 10 -- rping -c -a $A -C 10 -I $B
	run_case "cm     rping -I $A -> $B" pair cm \
		rping -s -a $B -C 10 -- rping -c -a $B -C 10 -I $A
	run_case "cm     rping (unbound) -> $A" pair cm \
		rping -s -a $A -C 10 -- rping -c -a $A -C 10
	run_case "cm     rping (unbound) -> $B" pair cm \
		rping -s -a $B -C 10 -- rping -c -a $B -C 10
	# perftest -R cannot bind its rdma_cm client (--source_ip only
	# affects the server side and TCP), so this is the unbound case too.
	run_case "cm     perftest -R -d rxe1 -> $A" pair cm \
		ib_send_bw -d rxe0 -R "${PT[@]}" -- ib_send_bw -d rxe1 -R "${PT[@]}" $A
	run_case "cm     rping -I $A -> $A (loopback)" rxe0 cm \
		rping -s -a $A -C 10 -- rping -c -a $A -C 10 -I $A
	run_case "cm     rping -I $B -> $B (loopback)" rxe1 cm \
		rping -s -a $B -C 10 -- rping -c -a $B -C 10 -I $B
}

# kprobe_case SRC DST EXPECT: in-kernel rdma_resolve_addr + rdma_resolve_route
# from SRC ("" = unbound) to DST; EXPECT is the device rdma_cm must pick.
kprobe_case() {
	local src=$1 dst=$2 expect=$3 rc line dev verdict
	local name="kernel rdma_cm ${src:-unbound} -> $dst"
	set +e
	insmod "$PROBE_DIR/cm_probe.ko" dst="$dst" ${src:+src="$src"} 2>/dev/null
	rc=$?
	set -e
	[[ $rc == 0 ]] && rmmod cm_probe
	line=$(dmesg | grep 'cm_probe: ' | tail -n1)
	dev=none
	[[ $line =~ route\ resolved\ on\ ([a-z0-9_]+) ]] && dev=${BASH_REMATCH[1]}
	verdict=ok
	if [[ $rc != 0 ]]; then verdict=FAIL
	elif [[ $dev != "$expect" ]]; then verdict=WRONG-DEV
	fi
	printf '%-46s %-10s device=%-5s (want %s)  %s\n' "$name" "$verdict" "$dev" "$expect" "${line#*cm_probe: }"
	[[ $verdict == ok || $MUST != yes ]] || FAILED+=("$name")
	return 0
}

kmatrix() {
	MUST=$1
	if [[ ! -f $PROBE_DIR/cm_probe.ko ]]; then
		echo "(no $PROBE_DIR/cm_probe.ko: run this script from the host to build it; kernel cases skipped)"
		return 0
	fi
	kprobe_case $B $A rxe1
	kprobe_case $A $B rxe0
	kprobe_case "" $A rxe1
	kprobe_case "" $B rxe0
	kprobe_case $A $A rxe0
	kprobe_case $B $B rxe1
}

if [[ ${1:-} == --baseline ]]; then
	echo "== routing: kernel default (rxe-pair-routing.sh off)"
	"$HERE/rxe-pair-routing.sh" off
	ip route get $A from $B | head -n1
	matrix no
	kmatrix no
	"$HERE/rxe-pair-routing.sh" on
fi
echo "== routing: as set by guest-init.sh (rxe-pair-routing.sh on)"
ip route get $A from $B | head -n1
matrix yes
kmatrix yes
rm -rf "$LOG"
if [[ ${#FAILED[@]} -gt 0 ]]; then
	printf 'rxe-pair-check: FAILED: %s\n' "${FAILED[@]}"
	exit 1
fi
echo "rxe-pair-check: all required cases passed"
