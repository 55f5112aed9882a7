#!/bin/bash
# rxe-pair-routing.sh on|off - make rxe1 (v1, 192.0.2.2) and rxe0 (v0,
# 192.0.2.1) reach each other over the veth wire although both addresses are
# local to the one (init) network namespace.  Run inside the guest, after
# guest-init.sh created v0/v1 and rxe0/rxe1.  See README.md, "rxe1 -> rxe0".
#
# Why: by default the kernel routes 192.0.2.2 -> 192.0.2.1 through the
# "local" table, i.e. over lo.  rxe only accepts RoCE packets that arrive on
# a netdev it is bound to, so such packets are lost and rdma_cm address
# resolution from 192.0.2.2 ends in RDMA_CM_EVENT_ADDR_ERROR (-110).
# Fix: policy rules, consulted before the local table, send traffic between
# the two addresses out of the sender's own veth end; the receiving end must
# then accept a packet whose source address is local (accept_local).
set -euo pipefail

A=192.0.2.1 ADEV=v0 ATABLE=101 # rxe0
B=192.0.2.2 BDEV=v1 BTABLE=102 # rxe1

mac() { cat "/sys/class/net/$1/address"; }

case ${1:-} in
on)
	# Output routes: each source leaves by its own veth end.
	ip route replace "$B/32" dev "$ADEV" src "$A" table "$ATABLE"
	ip route replace "$A/32" dev "$BDEV" src "$B" table "$BTABLE"
	# "iif lo" = only locally generated packets (output route lookups);
	# without it the receiving side would forward the packet instead of
	# delivering it.  The source selector keeps unbound sockets and
	# same-address loopback (rxe0 -> 192.0.2.1) on the local table.
	ip rule add pref 100 iif lo from "$A" to "$B" lookup "$ATABLE"
	ip rule add pref 101 iif lo from "$B" to "$A" lookup "$BTABLE"
	# Unbound sources (saddr 0.0.0.0 in the lookup): a connect() or
	# rdma_resolve_addr() without a source address to one end leaves from
	# the other end, like a second host would.
	ip rule add pref 102 iif lo from 0.0.0.0/32 to "$B" lookup "$ATABLE"
	ip rule add pref 103 iif lo from 0.0.0.0/32 to "$A" lookup "$BTABLE"
	# The local table must come after those rules: move its rule from
	# pref 0 (add the new one first so there is never no local rule).
	ip rule add pref 1000 lookup local
	ip rule del pref 0 lookup local
	# The receiver sees a packet from one of its own addresses: accept it,
	# and do not let reverse-path filtering drop it.
	for d in all "$ADEV" "$BDEV"; do
		sysctl -qw "net.ipv4.conf.$d.rp_filter=0"
	done
	sysctl -qw "net.ipv4.conf.$ADEV.accept_local=1" "net.ipv4.conf.$BDEV.accept_local=1"
	# Static neighbours: no ARP exchange needed between two local addresses.
	ip neigh replace "$A" lladdr "$(mac "$ADEV")" dev "$BDEV" nud permanent
	ip neigh replace "$B" lladdr "$(mac "$BDEV")" dev "$ADEV" nud permanent
	;;
off)
	ip neigh del "$A" dev "$BDEV" 2>/dev/null || true
	ip neigh del "$B" dev "$ADEV" 2>/dev/null || true
	sysctl -qw "net.ipv4.conf.$ADEV.accept_local=0" "net.ipv4.conf.$BDEV.accept_local=0"
	ip rule add pref 0 lookup local 2>/dev/null || true
	ip rule del pref 1000 lookup local 2>/dev/null || true
	ip rule del pref 100 2>/dev/null || true
	ip rule del pref 101 2>/dev/null || true
	ip rule del pref 102 2>/dev/null || true
	ip rule del pref 103 2>/dev/null || true
	ip route flush table "$ATABLE" 2>/dev/null || true
	ip route flush table "$BTABLE" 2>/dev/null || true
	;;
*)
	echo "usage: $0 on|off" >&2
	exit 2
	;;
esac
