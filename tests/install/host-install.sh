#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Host test of `make install` / `make uninstall` (scripts/install.sh) into a
# staging root: nothing outside it is touched, no kernel or RDMA device is
# needed.  Prints PASS:/FAIL: lines (and appends them to $RESULTS if set);
# exits 0 when every check passed.
#
#   1. install with DESTDIR=<tmp> PREFIX=/usr/local into a root that already
#      holds a few foreign files and directories
#   2. the expected files are there: library + soname links, headers,
#      dat.pc, the CMake package, man pages (they render without warnings),
#      dat.conf, udev rule, tools, examples; no build-tree RUNPATH
#   3. every installed user header compiles alone, C11 and C++20
#   4. out-of-tree builds against the installed files: the examples with
#      pkg-config (PKG_CONFIG_SYSROOT_DIR, and --define-prefix), and the
#      CMake consumer tests/install/consumer (find_package(dat), dat::dat)
#   5. install again (upgrade), then uninstall: exactly the foreign files
#      remain; a foreign /etc/dat.conf survives install and uninstall
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
PREFIX=/usr/local
BUILD=${BUILD:-$ROOT/build/user}
RESULTS=${RESULTS:-}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kdat-host-install.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
D=$WORK/root			# DESTDIR
P=$D$PREFIX
LOG=$WORK/log
nfail=0

say() { echo "$*"; [ -z "$RESULTS" ] || echo "$*" >>"$RESULTS"; }
pass() { say "PASS: $*"; }
fail() { say "FAIL: $*"; nfail=$((nfail + 1)); }
check() {	# check NAME CMD...: PASS if CMD succeeds
	local name=$1; shift
	if "$@" >>"$LOG" 2>&1; then pass "$name"; else fail "$name"; fi
}
inst() { PREFIX=$PREFIX DESTDIR=$D BUILD=$BUILD scripts/install.sh "$@"; }
t0=$SECONDS

# --- build (normally done by `make user` before) ---------------------------
if ! compgen -G "$BUILD/user/libdat.so.1*" >/dev/null || [ ! -x "$BUILD/tools/datperf" ]; then
	make -s user >"$WORK/build.log" 2>&1 || { fail "install_build (see make user)"; exit 1; }
fi

# --- a root with foreign things the uninstall must leave alone -------------
mkdir -p "$D/etc" "$P/include" "$P/lib" "$P/share/man/man3" "$P/bin"
echo "foreign" >"$P/lib/libforeign.so.1"
echo "foreign" >"$P/share/man/man3/foreign.3"
(cd "$D" && find . | sort) >"$WORK/before"

# --- install -------------------------------------------------------------
if inst install >"$WORK/install.out" 2>&1; then
	pass "install_destdir_runs"
else
	fail "install_destdir_runs ($(tail -1 "$WORK/install.out"))"
fi

# --- the files -------------------------------------------------------------
check install_lib_real_file test -f "$P/lib/libdat.so.1.0.0" -a ! -L "$P/lib/libdat.so.1.0.0"
check install_lib_soname_symlink test "$(readlink "$P/lib/libdat.so.1")" = libdat.so.1.0.0
check install_lib_devel_symlink test "$(readlink "$P/lib/libdat.so")" = libdat.so.1
# (grep reads whole outputs: with pipefail, grep -q in a pipe can turn
# the writer's SIGPIPE into a failure)
soname() { grep -q 'SONAME.*\[libdat.so.1\]' <<<"$(readelf -d "$P/lib/libdat.so.1.0.0")"; }
check install_lib_soname soname
missing=""
for h in include/dat/*.h user/include/dat/dat_kdat.h; do
	cmp -s "$h" "$P/include/dat/${h##*/}" || missing+=" ${h##*/}"
done
cmp -s include/uapi/kdat_abi.h "$P/include/dat/uapi/kdat_abi.h" || missing+=" uapi/kdat_abi.h"
[ -z "$missing" ] && pass "install_headers" || fail "install_headers (missing:$missing)"
check install_pkgconfig_file test -f "$P/lib/pkgconfig/dat.pc"
for f in datConfig.cmake datConfigVersion.cmake datTargets.cmake; do
	check "install_cmake_${f%.cmake}" test -f "$P/lib/cmake/dat/$f"
done
missing=""
for m in dat_srq_create dat_srq_free dat_srq_post_recv dat_srq_query dat_srq_resize \
	 dat_srq_set_lw dat_ep_create_with_srq; do
	[ -f "$P/share/man/man3/$m.3" ] || missing+=" $m.3"
done
for m in datinfo datperf; do
	[ -f "$P/share/man/man1/$m.1" ] || missing+=" $m.1"
done
[ -z "$missing" ] && pass "install_man_pages" || fail "install_man_pages (missing:$missing)"
warn=""
for m in "$P"/share/man/man[13]/dat* "$P"/share/man/man7/libdaplkdat*; do
	[ -e "$m" ] || continue
	w=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$m" 2>&1 >/dev/null)
	[ -z "$w" ] || warn+=" ${m##*/}: $w"
done
[ -z "$warn" ] && pass "install_man_pages_render_clean" || fail "install_man_pages_render_clean ($warn)"
# libdaplkdat, the DAT 2.0 provider: built where the DAT 2.0 headers are
# (libdapl-dev); then the library (no development symlink: dat.conf names
# the soname) and its man page
if [ -e "$BUILD/user/dat2/libdaplkdat.so.2" ]; then
	check install_libdaplkdat test -f "$P/lib/libdaplkdat.so.2.0.0" \
		-a "$(readlink "$P/lib/libdaplkdat.so.2" 2>/dev/null)" = libdaplkdat.so.2.0.0 \
		-a ! -e "$P/lib/libdaplkdat.so"
	check install_libdaplkdat_exports_provider_only \
		test "$(nm -D --defined-only "$P/lib/libdaplkdat.so.2.0.0" 2>/dev/null |
			awk '$2 ~ /^[TDBVW]$/ {print $3}' | sort | tr '\n' ' ')" = \
		"dat_provider_fini dat_provider_init "
	check install_libdaplkdat_man test -f "$P/share/man/man7/libdaplkdat.7"
fi
check install_dat_conf cmp -s user/dat.conf "$D/etc/dat.conf"
check install_dat_conf_reference cmp -s user/dat.conf "$P/share/dat/dat.conf"
check install_udev_rule cmp -s udev/90-kdat.rules "$P/lib/udev/rules.d/90-kdat.rules"
check install_tools test -x "$P/bin/datinfo" -a -x "$P/bin/datperf"
check install_examples test -f "$P/share/doc/dat/examples/srq_server.cpp" \
	-a -f "$P/share/doc/dat/examples/srq_client.cpp" \
	-a -f "$P/share/doc/dat/examples/srq_pingpong.c" \
	-a -f "$P/share/doc/dat/examples/CMakeLists.txt"
check install_manifest test -f "$P/share/dat/install_manifest.txt"
no_build_rpath() {
	local d
	d=$(readelf -d "$P/bin/datinfo" "$P/bin/datperf" "$P/lib/libdat.so.1.0.0") &&
		! grep -E 'R(UN)?PATH' <<<"$d" | grep "$ROOT" >/dev/null
}
check install_no_build_tree_runpath no_build_rpath
check install_tool_runs_against_installed_lib \
	env LD_LIBRARY_PATH="$P/lib" "$P/bin/datperf" --version

# --- installed headers compile alone ---------------------------------------
bad=""
for h in dat.h dat_error.h dat_platform_specific.h dat_redirection.h dat_registry.h \
	 udat.h udat_config.h udat_redirection.h dat_kdat.h uapi/kdat_abi.h; do
	printf '#include <dat/%s>\nint dat_header_check_%s;\n' "$h" "$(echo "$h" | tr -c 'a-z0-9\n' _)" \
		>"$WORK/h.c"
	cc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$P/include" "$WORK/h.c" \
		>>"$LOG" 2>&1 || bad+=" $h(C11)"
	c++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only -x c++ -I"$P/include" "$WORK/h.c" \
		>>"$LOG" 2>&1 || bad+=" $h(C++20)"
done
[ -z "$bad" ] && pass "installed_headers_compile_alone_c11_cxx20" ||
	fail "installed_headers_compile_alone_c11_cxx20 ($bad)"
# the kernel flavour refuses user space with its own message
printf '#include <dat/kdat.h>\n' >"$WORK/k.c"
if ! cc -fsyntax-only -I"$P/include" "$WORK/k.c" 2>"$WORK/k.err" &&
	grep -q 'kernel flavour' "$WORK/k.err"; then
	pass "installed_kdat_h_refuses_user_space"
else
	fail "installed_kdat_h_refuses_user_space"
fi

# --- pkg-config --------------------------------------------------------------
EX=$P/share/doc/dat/examples
pc() { PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$P/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D" pkg-config "$@"; }
check pkgconfig_modversion test "$(pc --modversion dat)" = 1.0.0
check pkgconfig_sysroot_flags test "$(pc --cflags --libs dat | xargs)" = "-I$P/include -L$P/lib -ldat"
OUT=$WORK/pc
mkdir -p "$OUT"
# shellcheck disable=SC2046
if cc -std=c11 -Wall -Wextra -Werror -O2 -o "$OUT/srq_pingpong" "$EX/srq_pingpong.c" \
	$(pc --cflags --libs dat) >>"$LOG" 2>&1; then
	pass "pkgconfig_builds_srq_pingpong_c"
else
	fail "pkgconfig_builds_srq_pingpong_c"
fi
# --define-prefix: the prefix is taken from where dat.pc lies
pcd() { PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$P/lib/pkgconfig" pkg-config --define-prefix "$@"; }
check pkgconfig_define_prefix_flags test "$(pcd --cflags --libs dat | xargs)" = "-I$P/include -L$P/lib -ldat"
# shellcheck disable=SC2046
if c++ -std=c++20 -Wall -Wextra -Werror -O2 -o "$OUT/srq_server" "$EX/srq_server.cpp" \
	$(pcd --cflags --libs dat) >>"$LOG" 2>&1; then
	pass "pkgconfig_define_prefix_builds_srq_server_cxx"
else
	fail "pkgconfig_define_prefix_builds_srq_server_cxx"
fi
links_installed() {	# links_installed BINARY: libdat resolves into the DESTDIR
	grep -q 'NEEDED.*\[libdat.so.1\]' <<<"$(readelf -d "$1")" &&
		grep -q "libdat.so.1 => $P/lib/libdat.so.1" <<<"$(LD_LIBRARY_PATH="$P/lib" ldd "$1")"
}
check pkgconfig_binaries_link_installed_libdat links_installed "$OUT/srq_pingpong"
# without /dev/kdat it must fail cleanly, from the installed library
runs_clean() {
	local o
	o=$(LD_LIBRARY_PATH="$P/lib" KDAT_DEVICE=/nonexistent DAT_OVERRIDE=/dev/null \
		"$OUT/srq_pingpong" 1 1 2>&1)
	[ $? = 1 ] && grep -q 'srq_pingpong: rxe0: DAT_PROVIDER_NOT_FOUND' <<<"$o"
}
check pkgconfig_example_runs_and_fails_cleanly_without_device runs_clean

# --- CMake package -----------------------------------------------------------
CB=$WORK/cmake
if cmake -S tests/install/consumer -B "$CB" -DCMAKE_PREFIX_PATH="$P" \
	-DDAT_EXAMPLES="$EX" >"$WORK/cmake.log" 2>&1 &&
	cmake --build "$CB" -j"$(nproc)" >>"$WORK/cmake.log" 2>&1; then
	pass "cmake_find_package_builds_examples"
else
	fail "cmake_find_package_builds_examples (see below)"
	tail -20 "$WORK/cmake.log"
fi
check cmake_finds_the_destdir_package grep -q "dat 1.0.0: $P/include $P/lib" "$WORK/cmake.log"
check cmake_binaries_link_installed_libdat links_installed "$CB/srq_server"
check cmake_consumer_runs env LD_LIBRARY_PATH="$P/lib" KDAT_DEVICE=/nonexistent \
	DAT_OVERRIDE=/dev/null "$CB/consumer_check"
if cmake -S tests/install/consumer -B "$WORK/cmake2" -DCMAKE_PREFIX_PATH="$P" \
	-DDAT_EXAMPLES="$EX" -DDAT_WANT_VERSION=2.0 >"$WORK/cmake2.log" 2>&1; then
	fail "cmake_version_2_refused"
else
	pass "cmake_version_2_refused"
fi

# --- install again (upgrade), uninstall ---------------------------------------
check install_twice inst install
if inst uninstall >"$WORK/uninstall.out" 2>&1; then
	pass "uninstall_destdir_runs"
else
	fail "uninstall_destdir_runs ($(tail -1 "$WORK/uninstall.out"))"
fi
(cd "$D" && find . | sort) >"$WORK/after"
if cmp -s "$WORK/before" "$WORK/after"; then
	pass "uninstall_leaves_exactly_what_was_there"
else
	fail "uninstall_leaves_exactly_what_was_there ($(diff "$WORK/before" "$WORK/after" | grep '^[<>]' | head -5 | tr '\n' ' '))"
fi
check uninstall_removed_libdaplkdat test ! -e "$P/lib/libdaplkdat.so.2" -a ! -e "$P/lib/libdaplkdat.so.2.0.0" -a ! -e "$P/share/man/man7/libdaplkdat.7"
check uninstall_kept_foreign_files test -f "$P/lib/libforeign.so.1" -a -f "$P/share/man/man3/foreign.3"

# a foreign /etc/dat.conf is neither replaced nor removed; DESTDIR on an
# empty root leaves an empty root
D2=$WORK/root2
mkdir -p "$D2/etc"
echo "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"" >"$D2/etc/dat.conf"
cp "$D2/etc/dat.conf" "$WORK/foreign.conf"
PREFIX=$PREFIX DESTDIR=$D2 BUILD=$BUILD scripts/install.sh install >>"$LOG" 2>&1
check install_keeps_foreign_dat_conf cmp -s "$WORK/foreign.conf" "$D2/etc/dat.conf"
PREFIX=$PREFIX DESTDIR=$D2 BUILD=$BUILD scripts/install.sh uninstall >>"$LOG" 2>&1
left=$(cd "$D2" && find . -mindepth 1 | sort | tr '\n' ' ')
check uninstall_keeps_foreign_dat_conf_only test "$left" = "./etc ./etc/dat.conf "

# a changed dat.conf that we installed is kept, the rest goes
D3=$WORK/root3
PREFIX=$PREFIX DESTDIR=$D3 BUILD=$BUILD scripts/install.sh install >>"$LOG" 2>&1
echo "mlx5_0 u1.2 threadsafe default libdat.so.1 kdat.1.0 \"mlx5_0\" \"\"" >>"$D3/etc/dat.conf"
PREFIX=$PREFIX DESTDIR=$D3 BUILD=$BUILD scripts/install.sh uninstall >>"$LOG" 2>&1
left=$(cd "$D3" && find . -mindepth 1 | sort | tr '\n' ' ')
check uninstall_keeps_changed_dat_conf test "$left" = "./etc ./etc/dat.conf "
DAT_CONF=no PREFIX=$PREFIX DESTDIR=$WORK/root4 BUILD=$BUILD scripts/install.sh install >>"$LOG" 2>&1
check install_dat_conf_no test ! -e "$WORK/root4/etc/dat.conf"
PREFIX=$PREFIX DESTDIR=$WORK/root4 BUILD=$BUILD scripts/install.sh uninstall >>"$LOG" 2>&1
check uninstall_empty_root_left_empty test -z "$(ls -A "$WORK/root4")"

echo "# host install tests: $((SECONDS - t0)) s"
if [ $nfail -gt 0 ]; then
	echo "# log: (last lines)"
	tail -30 "$LOG" | sed 's/^/# /'
fi
[ $nfail = 0 ]
