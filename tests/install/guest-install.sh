#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Guest test of the installation "like a real RDMA package": runs INSIDE the
# QEMU guest (tests/vm/guest-run.sh), from the repo root, as root, on the
# guest's writable overlay of the host root.  Prints PASS:/FAIL: lines (also
# appended to $RESULTS if set) and "# time" lines; always exits 0.
#
#   1. the kernel module through DKMS for the running kernel:
#        DKMS_BUILD=prebuilt (default): `dkms ldtarball` of the package the
#          host built for this kernel (tests/install/dkms-prebuild.sh, file
#          $DKMS_TARBALL), then `dkms install`; no compiler runs in the guest
#        DKMS_BUILD=guest: `scripts/dkms.sh install $(uname -r)`, compiling
#          in the guest (about 12 minutes under TCG)
#        DKMS_BUILD=skip: no DKMS at all; the build tree's kernel/kdat.ko is
#          insmod'ed instead and no DKMS check is reported (a quicker run of
#          the rest: each depmod DKMS runs costs 1-2 minutes under TCG)
#      then `modprobe kdat`: the module loaded is the one DKMS installed in
#      /lib/modules/$(uname -r)/updates/dkms, not the build tree's kernel/kdat.ko
#   2. `scripts/install.sh install` (PREFIX=/usr/local, no DESTDIR), ldconfig;
#      the installed udev rule as udev would apply it (udevadm test)
#   3. the installed datinfo (lists rxe0 and rxe1; -l the registry's names;
#      a bogus -d fails) and datperf (--loopback polling, and sleeping with
#      --event --json; server and client processes, --post-cost against
#      ibv_post_srq_recv)
#   4. the installed examples built out of tree with the installed pkg-config
#      file, and an SRQ exchange: srq_server on rxe0, srq_client on rxe1,
#      and srq_pingpong
#   5. `scripts/install.sh uninstall`, `modprobe -r kdat`, `scripts/dkms.sh
#      remove`: nothing is left (manifest files, /usr/src/kdat-*, dkms
#      status, kdat.ko under /lib/modules), and the watched directories hold
#      exactly the names they held before step 1
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KVER=$(uname -r)
VER=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
PREFIX=/usr/local
DKMS_BUILD=${DKMS_BUILD:-prebuilt}
DKMS_TARBALL=${DKMS_TARBALL:-$ROOT/build/install/kdat-$VER-$KVER.dkms.tar.gz}
RESULTS=${RESULTS:-}
WORK=$(mktemp -d /tmp/guest-install.XXXXXX)
LOG=$WORK/log

say() { echo "$*"; [ -z "$RESULTS" ] || echo "$*" >>"$RESULTS"; }
pass() { say "PASS: $*"; }
fail() { say "FAIL: $*"; }
check() {	# check NAME CMD...: PASS if CMD succeeds
	local name=$1; shift
	if "$@" >>"$LOG" 2>&1; then pass "$name"; else fail "$name"; fi
}
T0=$EPOCHREALTIME
ms() { local a=${1/./} b=${2/./}; echo $(((10#$b - 10#$a) / 1000)); }
timed() {	# timed LABEL CMD...: run (output in $WORK/LABEL.out and the log)
	local label=$1 s=$EPOCHREALTIME st; shift
	"$@" >"$WORK/$label.out" 2>&1
	st=$?
	cat "$WORK/$label.out" >>"$LOG"
	echo "# time $label: $(ms "$s" "$EPOCHREALTIME") ms (status $st)"
	return $st
}
show() { sed 's/^/# /' "$WORK/$1.out"; }
snapshot() {	# names under the directories an install may touch
	find /usr/local /etc /usr/src /var/lib/dkms /lib/modules/"$KVER" -xdev \
		2>/dev/null | grep -v '^/etc/ld.so.cache$' | sort
}

# --- 0. where we are ----------------------------------------------------------
if [ ! -e /sys/class/infiniband/rxe0 ] || [ ! -e /sys/class/infiniband/rxe1 ]; then
	fail "guest_install_has_rxe0_rxe1 (run me in the guest: tests/vm/guest-run.sh)"
	exit 0
fi
if [ -e /sys/module/kdat ]; then
	fail "guest_install_kdat_not_loaded_before"
	exit 0
fi
snapshot >"$WORK/before"

# --- 1. DKMS ------------------------------------------------------------------
if [ "$DKMS_BUILD" = skip ]; then
	echo "# DKMS_BUILD=skip: no DKMS checks; loading the build tree's kernel/kdat.ko"
	timed insmod insmod kernel/kdat.ko || fail "insmod_build_tree_kdat"
else
	if [ "$DKMS_BUILD" = guest ]; then
		timed "dkms_install_built_in_guest" scripts/dkms.sh install "$KVER" &&
			pass "dkms_install_builds_in_guest" || fail "dkms_install_builds_in_guest"
	elif [ -f "$DKMS_TARBALL" ]; then
		if timed "dkms_ldtarball" dkms ldtarball "$DKMS_TARBALL" &&
			timed "dkms_install_prebuilt" dkms install -m kdat -v "$VER" -k "$KVER"; then
			pass "dkms_install_prebuilt_package"
		else
			fail "dkms_install_prebuilt_package"
		fi
	else
		fail "dkms_install_prebuilt_package (no $DKMS_TARBALL: run tests/install/dkms-prebuild.sh $KVER $DKMS_TARBALL on the host)"
	fi
	st=$(dkms status -m kdat -v "$VER" -k "$KVER" 2>/dev/null)
	echo "# dkms status: $st"
	check dkms_status_installed grep -q ': installed' <<<"$st"
	check dkms_source_in_usr_src test -f "/usr/src/kdat-$VER/dkms.conf"

	if timed modprobe modprobe kdat; then
		pass "modprobe_kdat"
	else
		fail "modprobe_kdat"
	fi
	path=$(modinfo -n kdat 2>/dev/null)
	echo "# modinfo -n kdat: $path"
	case $path in
	"/lib/modules/$KVER/updates/dkms/kdat.ko"*) pass "modinfo_points_to_dkms_location" ;;
	*) fail "modinfo_points_to_dkms_location ($path)" ;;
	esac
	case $(readlink -f "$path") in
	"$ROOT"/*) fail "loaded_module_not_from_build_tree" ;;
	*) pass "loaded_module_not_from_build_tree" ;;
	esac
	dkms_ko=$(find "/var/lib/dkms/kdat/$VER/$KVER" -name 'kdat.ko*' 2>/dev/null | head -1)
	check module_file_is_the_dkms_build cmp -s "$path" "$dkms_ko"
	check loaded_srcversion_matches_installed_file \
		test "$(cat /sys/module/kdat/srcversion 2>/dev/null)" = "$(modinfo -F srcversion "$path")"
fi
check kdat_module_loaded test -d /sys/module/kdat
check loaded_module_version test "$(cat /sys/module/kdat/version 2>/dev/null)" = "$VER"
check kdat_registers_rxe0 grep -q 'kdat: IA rxe0 registered' <<<"$(dmesg)"
check dev_kdat_exists test -c /dev/kdat

# --- 2. make install ----------------------------------------------------------
# an /etc/dat.conf that is there before the install (OFED's libdapl2 ships
# one) belongs to the administrator: install and uninstall leave it alone
foreign_conf=
if [ -e /etc/dat.conf ]; then
	foreign_conf=$WORK/foreign-dat.conf
	cp /etc/dat.conf "$foreign_conf"
fi
if timed install_sh_install env PREFIX=$PREFIX scripts/install.sh install; then
	pass "install_sh_install_prefix_usr_local"
else
	fail "install_sh_install_prefix_usr_local"
fi
cp "$PREFIX/share/dat/install_manifest.txt" "$WORK/manifest" 2>/dev/null
check ldconfig_knows_libdat grep -q "libdat.so.1 .*=> $PREFIX/lib/libdat.so.1" <<<"$(ldconfig -p)"
check installed_tools_on_path test "$(command -v datinfo)" = "$PREFIX/bin/datinfo" \
	-a "$(command -v datperf)" = "$PREFIX/bin/datperf"
if [ -n "$foreign_conf" ]; then
	check installed_keeps_foreign_dat_conf cmp -s "$foreign_conf" /etc/dat.conf
else
	check installed_dat_conf cmp -s user/dat.conf /etc/dat.conf
fi
# the udev rule as udevd would apply it (no udevd runs in the guest)
timed udev_test_rxe0 udevadm test /sys/class/infiniband/rxe0
if grep -q "$PREFIX/lib/udev/rules.d/90-kdat.rules" "$WORK/udev_test_rxe0.out" &&
	grep -q "modprobe -bq kdat" "$WORK/udev_test_rxe0.out"; then
	pass "udev_rule_loads_kdat_on_rdma_device"
else
	fail "udev_rule_loads_kdat_on_rdma_device"
	grep -i 'kdat\|rules' "$WORK/udev_test_rxe0.out" | head -5 | sed 's/^/# /'
fi
timed udev_test_kdat udevadm test /sys/class/misc/kdat
gid=$(getent group rdma | cut -d: -f3)
if [ -n "$gid" ] &&
	grep -q "Setting permissions /dev/kdat, uid=0, gid=$gid, mode=0660" "$WORK/udev_test_kdat.out"; then
	pass "udev_rule_dev_kdat_group_rdma_0660"
else
	fail "udev_rule_dev_kdat_group_rdma_0660"
	grep -i 'kdat\|group\|mode' "$WORK/udev_test_kdat.out" | head -5 | sed 's/^/# /'
fi

# --- 3. the installed tools ---------------------------------------------------
timed datinfo datinfo
st=$?
if [ $st = 0 ] && grep -q "^ia_name:.rxe0$" "$WORK/datinfo.out" &&
	grep -q "^ia_name:.rxe1$" "$WORK/datinfo.out" && ! grep -q "cannot" "$WORK/datinfo.out"; then
	pass "installed_datinfo_lists_rxe0_rxe1"
else
	fail "installed_datinfo_lists_rxe0_rxe1 (status $st)"
	show datinfo
fi
timed datinfo_list datinfo -l
# the registry lists dat.conf's DAT 1.x lines (u2.0 lines are libdat2's);
# with none, the kernel's IAs
want=$(awk '!/^[[:space:]]*(#|$)/ && $2 ~ /^u1\./ { print $1 }' /etc/dat.conf)
[ -n "$want" ] || want=$(printf 'rxe0\nrxe1')
if [ "$(cat "$WORK/datinfo_list.out")" = "$want" ]; then
	pass "installed_datinfo_list_equals_registry"
else
	fail "installed_datinfo_list_equals_registry"
	show datinfo_list
fi
if timed datinfo_bogus datinfo -d bogus; then
	fail "installed_datinfo_bogus_device_fails"
else
	pass "installed_datinfo_bogus_device_fails"
fi
# no -d: the first IA the registry lists (rxe0), the client on the next (rxe1)
if timed datperf_rate datperf --loopback -n 500 -q 4 --no-progress; then
	pass "installed_datperf_message_rate"
else
	fail "installed_datperf_message_rate"
fi
show datperf_rate
# the first run polls (datperf's default, as perftest's), this one sleeps
if timed datperf_json datperf --loopback -n 500 -q 2 --post both --event --json \
	--no-progress &&
	python3 - "$WORK/datperf_json.out" >>"$LOG" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["test"] == "msgrate" and len(d["results"]) == 2, d
assert d["server_ia"] == "rxe0" and d["client_ia"] == "rxe1", d
assert d["event"] is True, d
for r in d["results"]:
    assert r["messages"] == 1000 and r["msg_per_sec"] > 0, r
    assert r["srq_available"] == d["depth"] and r["async_events"] == 0, r
EOF
then
	pass "installed_datperf_json_ring_and_ioctl"
else
	fail "installed_datperf_json_ring_and_ioctl"
	show datperf_json
fi
# perftest's way: no host = the server, a host = the client
datperf -d rxe0 -q 2 -p 4911 --no-progress >"$WORK/psrv" 2>&1 &
psrv=$!
if timed datperf_two_processes datperf -d rxe1 -q 2 -n 500 -p 4911 --no-progress 192.0.2.1 &&
	wait $psrv; then
	pass "installed_datperf_server_and_client_processes"
else
	fail "installed_datperf_server_and_client_processes"
	kill $psrv 2>/dev/null
	sed 's/^/# /' "$WORK/psrv"
	show datperf_two_processes
fi
# the post cost, against rdma-core's ibv_post_srq_recv (libibverbs.so.1 loaded at run time)
if timed datperf_post_cost datperf --post-cost -r 1024 -n 4096 --reps 3 &&
	grep -q "dat/verbs" "$WORK/datperf_post_cost.out"; then
	pass "installed_datperf_post_cost"
else
	fail "installed_datperf_post_cost"
fi
show datperf_post_cost

# --- 4. an application built against the installed files -----------------------
EX=$WORK/examples
cp -r "$PREFIX/share/doc/dat/examples" "$EX"
flags=$(pkg-config --cflags --libs dat 2>>"$LOG")
echo "# pkg-config --cflags --libs dat: $flags"
check pkgconfig_finds_installed_dat test "$(echo $flags)" = "-I$PREFIX/include -L$PREFIX/lib -ldat"
# -O0: the guest compiles at TCG speed (srq_server.cpp: 15 s at -O0, 39 s at -O2)
s=$EPOCHREALTIME
# shellcheck disable=SC2086
(c++ -std=c++20 -O0 -o "$EX/srq_server" "$EX/srq_server.cpp" $flags >>"$LOG" 2>&1) & b1=$!
# shellcheck disable=SC2086
(c++ -std=c++20 -O0 -o "$EX/srq_client" "$EX/srq_client.cpp" $flags >>"$LOG" 2>&1) & b2=$!
# shellcheck disable=SC2086
cc -std=c11 -O0 -o "$EX/srq_pingpong" "$EX/srq_pingpong.c" $flags >>"$LOG" 2>&1; b3=$?
wait $b1; b1=$?
wait $b2; b2=$?
echo "# time build_examples_pkgconfig: $(ms "$s" "$EPOCHREALTIME") ms"
[ $b1$b2$b3 = 000 ] && pass "examples_build_out_of_tree_with_pkgconfig" ||
	fail "examples_build_out_of_tree_with_pkgconfig ($b1$b2$b3)"
check examples_use_installed_libdat grep -q "libdat.so.1 => $PREFIX/lib/libdat.so.1" <<<"$(ldd "$EX/srq_server")"
s=$EPOCHREALTIME
"$EX/srq_server" 3 7791 >"$WORK/srv.out" 2>&1 & srv=$!
"$EX/srq_client" 3 5 192.0.2.1 7791 >"$WORK/cli.out" 2>&1; cst=$?
wait $srv; sst=$?
echo "# time srq_server_client: $(ms "$s" "$EPOCHREALTIME") ms"
if [ $sst = 0 ] && [ $cst = 0 ] && grep -q "15 messages from 3 clients" "$WORK/srv.out" &&
	grep -q "every one answered" "$WORK/cli.out"; then
	pass "installed_examples_srq_server_client_exchange"
else
	fail "installed_examples_srq_server_client_exchange (server $sst, client $cst)"
	sed 's/^/# /' "$WORK/srv.out" "$WORK/cli.out"
fi
sed 's/^/# /' "$WORK/srv.out" | tail -2
if timed srq_pingpong "$EX/srq_pingpong" 4 5; then
	pass "installed_examples_srq_pingpong"
else
	fail "installed_examples_srq_pingpong"
fi

# --- 5. make uninstall, unload, dkms remove --------------------------------------
if timed install_sh_uninstall env PREFIX=$PREFIX scripts/install.sh uninstall; then
	pass "install_sh_uninstall"
else
	fail "install_sh_uninstall"
fi
left=""
while read -r kind p _; do
	case $kind in file | conf) [ ! -e "$p" ] && [ ! -L "$p" ] || left+=" $p" ;; dir) [ ! -d "$p" ] || left+=" $p/" ;; esac
done < <(grep -v '^#' "$WORK/manifest" 2>/dev/null)
[ -s "$WORK/manifest" ] && [ -z "$left" ] && pass "uninstall_removes_every_manifest_entry" ||
	fail "uninstall_removes_every_manifest_entry (left:$left)"
check ldconfig_forgot_libdat test -z "$(ldconfig -p | grep 'libdat\.so')"
unload=(modprobe -r kdat)
[ "$DKMS_BUILD" != skip ] || unload=(rmmod kdat)
if timed modprobe_r "${unload[@]}" && [ ! -e /sys/module/kdat ]; then
	pass "modprobe_r_kdat"
else
	fail "modprobe_r_kdat"
fi
if [ "$DKMS_BUILD" != skip ]; then
	if timed dkms_remove scripts/dkms.sh remove; then
		pass "dkms_remove"
	else
		fail "dkms_remove"
	fi
	check dkms_status_empty test -z "$(dkms status -m kdat 2>/dev/null)"
	check no_usr_src_kdat test -z "$(ls -d /usr/src/kdat-* 2>/dev/null)"
	check no_kdat_ko_under_lib_modules test -z "$(find /lib/modules -name 'kdat.ko*' 2>/dev/null)"
	check no_var_lib_dkms_kdat test ! -e /var/lib/dkms/kdat
fi
snapshot >"$WORK/after"
if cmp -s "$WORK/before" "$WORK/after"; then
	pass "nothing_left_behind"
else
	fail "nothing_left_behind"
	diff "$WORK/before" "$WORK/after" | grep '^[<>]' | head -20 | sed 's/^/# /'
fi

echo "# time guest_install_total: $(ms "$T0" "$EPOCHREALTIME") ms"
# the details, for a look from the host
if [ -n "${RIG_OUT:-}" ] && [ -d "$RIG_OUT" ]; then
	mkdir -p "$RIG_OUT/guest-install"
	cp "$WORK"/* "$RIG_OUT/guest-install/" 2>/dev/null
fi
exit 0
