#!/usr/bin/env bash
# tests/bench/run-dat2-bench.sh - OFED's dapltest -T P (unmodified, Debian
# dapl2-utils) on kdat's DAT 2.0 provider against OFED's own provider, on
# the same Soft-RoCE devices in the same guest.  Runs INSIDE the test guest
# from the repo root (make bench-dat2):
#
#   tests/vm/guest-run.sh -q -o $PWD/build/vm/dat2bench -t 1800 -- \
#       env OUTDIR=$PWD/build/vm/dat2bench tests/bench/run-dat2-bench.sh
#
# Each of REPEAT (3) rounds runs each of the dapltest -T P modes in MODES
# (all four: RDMA write and read, blocking and polling;
# tests/guest/dat2-programs.sh) of ITER (5000) operations on both
# providers back to back, ofa first in odd rounds and kdat first in even
# ones, so that the two runs of a ratio are seconds apart and a drift of
# the host's speed favours neither.  The table shows, per mode and
# figure, the median of each provider's values and the median of the
# per-round ratios kdat/ofa (goal >= 1.0 for ops/s).  Written to
# OUTDIR/dat2-bench.md; every run's result file stays in OUTDIR.
set -uo pipefail
OUTDIR=${OUTDIR:?}
REPEAT=${REPEAT:-3}
ITER=${ITER:-5000}
MODES=${MODES:-rw_blocking rw_polling rr_blocking rr_polling}
T=${DAT2_CASE_TIMEOUT:-60}
DAT2_LIB=${DAT2_LIB:-$PWD/build/user/user/dat2/libdaplkdat.so.2}
DATINFO=${DATINFO:-$PWD/build/user/tools/datinfo}
mkdir -p "$OUTDIR"

[ -d /sys/module/kdat ] || insmod kernel/kdat.ko || exit 1
conf=$OUTDIR/dat2-kdat.conf
"$DATINFO" --dat2-conf | sed "s|libdaplkdat.so.2|$DAT2_LIB|" >"$conf"

run() {	# run PROVIDER MODE ROUND
	local -a who=(--ofa)
	[ "$1" = ofa ] || who=(-l kdat -s kdat-v2-rxe0 -c kdat-v2-rxe1 -f "$conf")
	tests/guest/dat2-programs.sh "${who[@]}" -k "^dapltest_P_$2\$" \
		-i "$ITER" -t "$T" -o "$OUTDIR/$1-$3-$2.txt" >/dev/null 2>&1
	cat "$OUTDIR/$1-$3-$2.txt" >>"$OUTDIR/$1-$3.txt"
}
for i in $(seq 1 "$REPEAT"); do
	rm -f "$OUTDIR/ofa-$i.txt" "$OUTDIR/kdat-$i.txt"
	for m in $MODES; do
		if ((i % 2)); then
			run ofa $m "$i"; run kdat $m "$i"
		else
			run kdat $m "$i"; run ofa $m "$i"
		fi
	done
done

# FIGURE: dat2_<case> (<label>) <figure words> = <value> <unit>
for i in $(seq 1 "$REPEAT"); do
	for p in ofa kdat; do
		sed -n "s/^FIGURE: dat2_\(dapltest_P_[a-z_]*\) ($p) \(.*\) = \([0-9.]*\) \(.*\)/$i|$p|\1|\2 (\4)|\3/p" \
			"$OUTDIR/$p-$i.txt"
	done
done | awk -F'|' '
function median(s,   a, n, t, i, j) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (n == 0) return "-"
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function range(s,   a, n, lo, hi, i) {
	n = split(s, a, " ")
	if (n == 0) return "-"
	lo = hi = a[1]
	for (i = 2; i <= n; i++) { if (a[i] + 0 < lo + 0) lo = a[i]; if (a[i] + 0 > hi + 0) hi = a[i] }
	return sprintf("%.2f-%.2f", lo, hi)
}
{
	k = $3 SUBSEP $4
	if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
	v[$1, $2, k] = $5
	vals[$2, k] = vals[$2, k] " " $5
	rounds[$1] = 1
}
END {
	print "| dapltest -T P mode | figure | ofa (median) | kdat (median) | kdat/ofa median (range) |"
	print "| --- | --- | --- | --- | --- |"
	for (j = 1; j <= n; j++) {
		k = keys[j]; split(k, kk, SUBSEP)
		r = ""
		for (i in rounds)
			if (((i, "ofa", k) in v) && ((i, "kdat", k) in v) && v[i, "ofa", k] + 0 > 0)
				r = r " " sprintf("%.3f", v[i, "kdat", k] / v[i, "ofa", k])
		printf "| %s | %s | %s | %s | %s (%s) |\n", kk[1], kk[2],
			median(vals["ofa", k]), median(vals["kdat", k]), median(r), range(r)
	}
}' | tee "$OUTDIR/dat2-bench.md"
grep -q '^| dapltest_P' "$OUTDIR/dat2-bench.md"
