#!/bin/bash
# rxe-pair-routing.sh on|off - make rxe1 (v1, 192.0.2.2) and rxe0 (v0,
# 192.0.2.1) reach each other over the veth wire although both addresses are
# local to the one (init) network namespace.  Run inside the guest, after
# guest-init.sh created v0/v1 and rxe0/rxe1.  See README.md, "rxe1 -> rxe0".
#
# Why: by default the kernel routes 192.0.2.2 -> 192.0.2.1 through the
# "local" table, i.e. over lo.  rxe only accepts RoCE packets that arrive on
# a netdev it is bound to, so such packets are lost: raw-verbs QPs time out
# and rdma_cm address resolution from 192.0.2.2 ends in
# RDMA_CM_EVENT_ADDR_ERROR (-110).
# Fix: policy rules, consulted before the local table, send traffic between
# the two addresses out of the sender's own veth end; the receiving end must
# then accept a packet whose source address is local (accept_local).
set -euo pipefail

A=192.0.2.1 ADEV=v0 ATABLE=101 # rxe0
B=192.0.2.2 BDEV=v1 BTABLE=102 # rxe1

# One "ip -batch" and plain /proc/sys writes: each exec of a host binary
# costs ~0.1 s in the TCG guest.
mac() { local m; read -r m <"/sys/class/net/$1/address" && echo "$m"; }
conf() { echo "$3" >"/proc/sys/net/ipv4/conf/$1/$2"; }

case ${1:-} in
on)
	ip -batch - <<IP
route replace $B/32 dev $ADEV src $A table $ATABLE
route replace $A/32 dev $BDEV src $B table $BTABLE
rule add pref 100 iif lo from $A to $B lookup $ATABLE
rule add pref 101 iif lo from $B to $A lookup $BTABLE
rule add pref 102 iif lo from 0.0.0.0/32 to $B lookup $ATABLE
rule add pref 103 iif lo from 0.0.0.0/32 to $A lookup $BTABLE
rule add pref 1000 lookup local
rule del pref 0 lookup local
neigh replace $A lladdr $(mac "$ADEV") dev $BDEV nud permanent
neigh replace $B lladdr $(mac "$BDEV") dev $ADEV nud permanent
IP
	# What the batch does, line by line:
	# - tables 101/102: each source leaves by its own veth end;
	# - rules 100/101: "iif lo" = only locally generated packets (output
	#   route lookups); without it the receiving side would forward the
	#   packet instead of delivering it.  Same-address traffic (rxe0 ->
	#   192.0.2.1) keeps the local table: rxe loops it back in the device;
	# - rules 102/103: unbound sources (saddr 0.0.0.0 in the lookup): a
	#   connect() or rdma_resolve_addr() without a source address to one
	#   end leaves from the other end, as it would from a second host;
	# - the local table's rule moves from pref 0 to 1000, after those
	#   rules (added before the old one goes: never without a local rule);
	# - static neighbours: no ARP between two local addresses needed.
	#
	# The receiver sees a packet from one of its own addresses: accept it,
	# and do not let reverse-path filtering drop it.
	for d in all "$ADEV" "$BDEV"; do conf "$d" rp_filter 0; done
	conf "$ADEV" accept_local 1
	conf "$BDEV" accept_local 1
	;;
off)
	conf "$ADEV" accept_local 0
	conf "$BDEV" accept_local 0
	# -force: keep going past entries that are already gone.
	ip -force -batch - <<IP 2>/dev/null || true
neigh del $A dev $BDEV
neigh del $B dev $ADEV
rule add pref 0 lookup local
rule del pref 1000 lookup local
rule del pref 100
rule del pref 101
rule del pref 102
rule del pref 103
route flush table $ATABLE
route flush table $BTABLE
IP
	;;
*)
	echo "usage: $0 on|off" >&2
	exit 2
	;;
esac
