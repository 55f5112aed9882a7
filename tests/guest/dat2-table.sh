#!/usr/bin/env bash
# Side-by-side markdown table (for docs/benchmarks.md) of the result files
# tests/guest/dat2-programs.sh wrote for several DAT 2.0 providers, run in
# the same guest:
#
#   tests/guest/dat2-table.sh BASE.txt OTHER.txt [MORE.txt...]
#
# First table: one row per program/mode (the union of the files' cases, in
# the first file's order), per provider PASS/FAIL and the case's wall time
# (and the failure reason in a footnote list).  Second table: every FIGURE
# the programs printed (dapltest -T P ops/s, bandwidth, latency, post and
# reap times; dtest and dtestcm figures) per provider, and each other
# provider's value as a ratio to the first file's (BASE = OFED's own
# provider, so the ratio reads "kdat/ofa").  Times under TCG are only
# comparable within one guest run.
set -euo pipefail
if (($# < 2)); then
	echo "usage: $0 BASE-results.txt OTHER-results.txt [...]" >&2
	exit 2
fi
for f in "$@"; do
	[ -r "$f" ] || { echo "dat2-table: cannot read $f" >&2; exit 2; }
done

awk '
FNR == 1 { nf++; label[nf] = FILENAME }
/^# dat2-programs: provider / {
	l = $4; sub(/,$/, "", l); label[nf] = l
}
/^(PASS|FAIL): dat2_/ {
	verdict = $1; sub(/:$/, "", verdict)
	c = $2; sub(/^dat2_/, "", c)
	if (c == "all_cases_reported") { incomplete[nf] = $0; next }
	rest = $0; sub(/^[^(]*\(/, "", rest); sub(/\)$/, "", rest)
	# rest: "LABEL, SECS s" or "LABEL, SECS s: why"
	t = rest; sub(/^[^,]*, /, "", t)
	why = ""
	if (match(t, /: /)) { why = substr(t, RSTART + 2); t = substr(t, 1, RSTART - 1) }
	sub(/ s$/, "", t)
	if (!(c in seen)) { seen[c] = 1; cases[++ncases] = c }
	v[c, nf] = verdict; tm[c, nf] = t; ws[c, nf] = why
}
/^FIGURE: dat2_/ {
	c = $2; sub(/^dat2_/, "", c)
	line = $0; sub(/^[^)]*\) /, "", line)
	# line: "NAME = VALUE UNIT"
	name = line; sub(/ = .*/, "", name)
	val = line; sub(/^.* = /, "", val)
	unit = val; sub(/^[^ ]* ?/, "", unit); sub(/ .*$/, "", val)
	k = c SUBSEP name
	if (!(k in fseen)) { fseen[k] = 1; figs[++nfigs] = k; funit[k] = unit }
	fv[k, nf] = val
}
END {
	printf "| program / mode |"
	for (i = 1; i <= nf; i++) printf " %s |", label[i]
	printf "\n| --- |"
	for (i = 1; i <= nf; i++) printf " --- |"
	printf "\n"
	nnotes = 0
	for (j = 1; j <= ncases; j++) {
		c = cases[j]
		printf "| %s |", c
		for (i = 1; i <= nf; i++) {
			if (!((c, i) in v)) { printf " not run |"; continue }
			cell = v[c, i] " (" tm[c, i] " s)"
			if (ws[c, i] != "") {
				notes[++nnotes] = label[i] " " c ": " ws[c, i]
				cell = cell " [" nnotes "]"
			}
			printf " %s |", cell
		}
		printf "\n"
	}
	for (i = 1; i <= nf; i++) {
		np = 0; nt = 0
		for (j = 1; j <= ncases; j++) if ((cases[j], i) in v) { nt++; if (v[cases[j], i] == "PASS") np++ }
		printf "%s%s: %d of %d cases pass", i == 1 ? "\n" : "; ", label[i], np, nt
	}
	printf "\n"
	for (i = 1; i <= nf; i++) if (i in incomplete) printf "\n%s: %s\n", label[i], incomplete[i]
	if (nnotes) {
		printf "\n"
		for (n = 1; n <= nnotes; n++) printf "%d. %s\n", n, notes[n]
	}
	if (!nfigs) exit
	printf "\n| program / mode | figure |"
	for (i = 1; i <= nf; i++) printf " %s |", label[i]
	for (i = 2; i <= nf; i++) printf " %s/%s |", label[i], label[1]
	printf "\n| --- | --- |"
	for (i = 1; i <= 2 * nf - 1; i++) printf " --- |"
	printf "\n"
	for (j = 1; j <= nfigs; j++) {
		k = figs[j]; split(k, p, SUBSEP)
		printf "| %s | %s%s |", p[1], p[2], funit[k] != "" ? " (" funit[k] ")" : ""
		for (i = 1; i <= nf; i++) printf " %s |", ((k, i) in fv) ? fv[k, i] : "-"
		for (i = 2; i <= nf; i++) {
			a = (k, 1) in fv ? fv[k, 1] : ""; b = (k, i) in fv ? fv[k, i] : ""
			if (a ~ /^-?[0-9.]+$/ && b ~ /^-?[0-9.]+$/ && a + 0 != 0)
				printf " %.2f |", b / a
			else
				printf " - |"
		}
		printf "\n"
	}
}' "$@"
