#!/usr/bin/env bash
# shellcheck disable=SC2015 # ok() cannot fail: A && ok || bad is if-then-else here
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# tests/user/host/tools.sh DATINFO DATPERF DAT_CONF - the built tools as a
# user runs them, on the host (no /dev/kdat: every IA open fails, which is
# what the error paths need).  Registered with ctest (tools_command_line).
#   - a bad option or argument: status 2 and the usage on stderr;
#     --version and -h answer on stdout with status 0
#   - datinfo -l prints the registry's IA names (dat.conf's first column);
#     datinfo -d with no such IA, and datinfo when no IA opens: status 1
#   - datinfo --dat2-conf -d DEV prints libdaplkdat's two dat.conf lines
#     for DEV (libdat2's format: 8 fields, u2.0, both thread safeties);
#     without -d and no IA that opens: status 1; a DEV dat.conf cannot
#     carry: status 2; its lines in dat.conf are not libdat's (not listed)
#   - datperf --json with hostile strings (quotes, backslash, control
#     characters, bytes that are not UTF-8) in -d, --client-dev and HOST:
#     one JSON object that python3's json module parses, naming the
#     strings exactly (bytes that are not UTF-8 as U+0000..U+00FF)
set -u
DATINFO=$1 DATPERF=$2 CONF=$3
export DAT_OVERRIDE=$CONF
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# a cross build (scripts/cross.sh) runs the tools under qemu-user:
# TOOLS_EMULATOR is CMake's CMAKE_CROSSCOMPILING_EMULATOR, space-separated
if [[ -n ${TOOLS_EMULATOR-} ]]; then
	for t in DATINFO DATPERF; do
		printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$TOOLS_EMULATOR" \
			"${!t}" >"$T/$t"
		chmod +x "$T/$t"
		printf -v "$t" %s "$T/$t"
	done
fi
failed=0

ok() { echo "ok - $*"; }
bad() { echo "not ok - $*"; failed=1; }

# expect STATUS NAME CMD...: CMD exits STATUS; stdout in $T/out, stderr in $T/err
expect() {
	local want=$1 name=$2 st
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	st=$?
	if [[ $st == "$want" ]]; then
		ok "$name"
	else
		bad "$name (status $st, wanted $want)"
		sed 's/^/# /' "$T/out" "$T/err"
	fi
}

usage_on_stderr() {
	if grep -q "^Usage" "$T/err" && [[ ! -s $T/out ]]; then ok "$1: usage on stderr"; else
		bad "$1: usage on stderr"; sed 's/^/# /' "$T/err"; fi
}

# --- command line ---
for args in "-x" "--bogus" "extra" "-d"; do
	# shellcheck disable=SC2086 # one word or none
	expect 2 "datinfo $args" "$DATINFO" $args
	usage_on_stderr "datinfo $args"
done
for args in "-x" "--bogus" "-q 0" "-s abc" "-n -1" "-p 70000" "--post sideways" \
	"-t 4 -Q 8" "host1 host2" "--loopback host1" "--post-cost host1" "--reps 0" \
	"-q 65537" "--send-cost host1" "--lat --loopback" "--bidir --loopback"; do
	# shellcheck disable=SC2086 # a list of words
	expect 2 "datperf $args" "$DATPERF" $args
	usage_on_stderr "datperf $args"
done
expect 0 "datinfo --version" "$DATINFO" --version
grep -qx "datinfo [0-9][0-9.]*" "$T/out" && ok "datinfo --version prints it" ||
	bad "datinfo --version prints it: $(cat "$T/out")"
for v in -V --version; do
	expect 0 "datperf $v" "$DATPERF" "$v"
	grep -qx "datperf [0-9][0-9.]*" "$T/out" && ok "datperf $v prints it" ||
		bad "datperf $v prints it: $(cat "$T/out")"
done
expect 0 "datinfo -h" "$DATINFO" -h
grep -q -- "--ib-dev" "$T/out" && ok "datinfo -h: the options" || bad "datinfo -h: the options"
expect 0 "datperf --help" "$DATPERF" --help
grep -q -- "--rx-depth" "$T/out" && ok "datperf --help: the options" || bad "datperf --help: the options"

# --- datinfo and the registry ---
expect 0 "datinfo -l" "$DATINFO" -l
if diff <(awk '!/^[[:space:]]*(#|$)/ { print $1 }' "$CONF") "$T/out" >"$T/diff"; then
	ok "datinfo -l equals dat.conf's IAs"
else
	bad "datinfo -l equals dat.conf's IAs"; sed 's/^/# /' "$T/diff"
fi
# OFED's libdat2 shares /etc/dat.conf: its u2.0 lines are not ours to list
{ echo 'ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""'
  cat "$CONF"
  echo 'kdat-v2-rxe0 u2.0 threadsafe nondefault libdaplkdat.so.2 kdat.2.0 "rxe0" ""'
} >"$T/mixed.conf"
DAT_OVERRIDE=$T/mixed.conf expect 0 "datinfo -l, dat.conf with u2.0 lines" "$DATINFO" -l
if diff <(awk '!/^[[:space:]]*(#|$)/ { print $1 }' "$CONF") "$T/out" >"$T/diff" &&
	! grep -q . "$T/err"; then
	ok "datinfo -l skips u2.0 lines silently"
else
	bad "datinfo -l skips u2.0 lines silently"; sed 's/^/# /' "$T/diff" "$T/err"
fi
expect 1 "datinfo -d bogus" "$DATINFO" -d bogus
grep -q bogus "$T/err" && ok "datinfo -d bogus says so" || bad "datinfo -d bogus says so"
expect 1 "datinfo, no IA opens" "$DATINFO"
n=$(grep -c "^ia_name:" "$T/out")
[[ $n == "$(awk '!/^[[:space:]]*(#|$)/' "$CONF" | wc -l)" ]] && ok "datinfo shows every IA though they fail" ||
	bad "datinfo shows every IA though they fail ($n)"

# --- datinfo --dat2-conf ---
expect 0 "datinfo --dat2-conf -d rxe0" "$DATINFO" --dat2-conf -d rxe0
printf '%s\n' \
	'kdat-v2-rxe0 u2.0 nonthreadsafe default libdaplkdat.so.2 kdat.2.0 "rxe0" ""' \
	'kdat-v2-rxe0 u2.0 threadsafe default libdaplkdat.so.2 kdat.2.0 "rxe0" ""' >"$T/want"
cmp -s "$T/want" "$T/out" && ok "datinfo --dat2-conf -d rxe0: the two lines" ||
	{ bad "datinfo --dat2-conf -d rxe0: the two lines"; sed 's/^/# /' "$T/out"; }
awk '{ if (NF != 8 || $2 != "u2.0" || $5 != "libdaplkdat.so.2") exit 1 }' "$T/out" &&
	ok "datinfo --dat2-conf: 8 fields, u2.0, libdaplkdat.so.2" ||
	bad "datinfo --dat2-conf: 8 fields, u2.0, libdaplkdat.so.2"
expect 1 "datinfo --dat2-conf, no IA opens" "$DATINFO" --dat2-conf
grep -q -- "--dat2-conf -d" "$T/err" && ok "datinfo --dat2-conf says how to name one" ||
	bad "datinfo --dat2-conf says how to name one"
expect 2 "datinfo --dat2-conf -d 'a b'" "$DATINFO" --dat2-conf -d 'a b'
{ cat "$CONF"; cat "$T/want"; } >"$T/mixed.conf"
DAT_OVERRIDE=$T/mixed.conf expect 0 "datinfo -l, libdaplkdat's lines among them" "$DATINFO" -l
grep -q kdat-v2 "$T/out" && bad "datinfo -l leaves libdaplkdat's u2.0 lines out" ||
	ok "datinfo -l leaves libdaplkdat's u2.0 lines out"

# --- datperf --json with hostile strings ---
if ! command -v python3 >/dev/null; then
	bad "python3 for the JSON checks"
	exit 1
fi
hostile=$'q"u\\o\tte\x01\x1f\x7f \xc3\xa9 \xff\xfe \xc3 \xed\xa0\x80 end'
check_json() { # NAME KEY... : $T/out is one JSON object whose KEYs hold $hostile
	local name=$1
	shift
	if python3 - "$T/out" "$hostile" "$@" >"$T/py" 2>&1 <<'PY'
import json, os, sys
raw = open(sys.argv[1], "rb").read()
raw.decode("utf-8")                      # the output is UTF-8
d = json.loads(raw)
want = os.fsencode(sys.argv[2]).decode("utf-8", "surrogateescape")
want = "".join(chr(ord(c) - 0xdc00) if 0xdc80 <= ord(c) <= 0xdcff else c for c in want)
for key in sys.argv[3:]:
    assert key in d, (key, d)
    assert d[key] == want, (key, d[key], want)
assert d["tool"] == "datperf" and "error" in d, d
assert want in d["error"] or sys.argv[3:] == ["server_ia"], d["error"]
PY
	then ok "$name: valid JSON naming the strings exactly"
	else bad "$name: valid JSON naming the strings exactly"; sed 's/^/# /' "$T/py" "$T/out"
	fi
}
expect 1 "datperf --json -d HOSTILE" "$DATPERF" --json --no-progress -d "$hostile"
check_json "server -d" server_ia
expect 1 "datperf --json --loopback" "$DATPERF" --json --no-progress --loopback \
	-d "$hostile" --client-dev "$hostile"
check_json "loopback -d --client-dev" server_ia client_ia
expect 1 "datperf --json --post-cost -d HOSTILE" "$DATPERF" --json --post-cost -d "$hostile"
check_json "post-cost -d" server_ia
expect 1 "datperf --json -d rxe1 HOSTILE_HOST" "$DATPERF" --json -d rxe1 "$hostile"
check_json "client HOST" host
expect 1 "datperf --json --send-cost" "$DATPERF" --json --send-cost -d "$hostile" \
	--client-dev "$hostile"
check_json "send-cost -d --client-dev" server_ia client_ia
expect 1 "datperf --json --lat -d HOSTILE" "$DATPERF" --json --lat -d "$hostile"
check_json "lat server -d" server_ia
expect 1 "datperf --json --bidir -d rxe1 HOSTILE_HOST" "$DATPERF" --json --bidir -d rxe1 "$hostile"
check_json "bidir client HOST" host

exit $failed
