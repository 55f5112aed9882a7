#!/usr/bin/env bash
# tests/bench/chart.sh RATIOS.DAT OUT.PNG [TITLE] - bar chart of a
# benchmark's ratios with gnuplot (package gnuplot-nox): one bar per line
# of RATIOS.DAT ("label median min max goal", every ratio oriented so that
# higher is better), a whisker over each bar from the run's smallest to
# largest ratio, and each ratio's goal as a short red line across its bar.
# Bars that meet their goal (median >= goal) are green, the others orange.
# Every benchmark that writes a ratios.dat (run-bench.sh, run-scale.sh,
# run-user-bench.sh, run-dat2-bench.sh) can be rendered by it.
set -euo pipefail

if (($# < 2)); then
	echo "usage: $0 RATIOS.DAT OUT.PNG [TITLE]" >&2
	exit 2
fi
in=$1 out=$2 title=${3:-$(basename "$(dirname "$in")")}
command -v gnuplot >/dev/null || { echo "chart.sh: gnuplot is not installed (gnuplot-nox)" >&2; exit 1; }
n=$(grep -cv '^\s*\(#\|$\)' "$in" || true)
((n > 0)) || { echo "chart.sh: no ratios in $in" >&2; exit 1; }
# x position first; labels print as they are (noenhanced: '_' stays '_')
data=$(mktemp)
trap 'rm -f "$data"' EXIT
awk '!/^[[:space:]]*(#|$)/ { print n++, $0 }' "$in" >"$data"
width=$((300 + 70 * n))
((width < 640)) && width=640
gnuplot <<GP
set terminal pngcairo size $width,520 font ",10" noenhanced
set output "$out"
set title "$title"
set style fill solid 0.7 border -1
set boxwidth 0.6
set grid ytics
set yrange [0:*]
set xrange [-0.7:$n - 0.3]
set ylabel "ratio (higher is better)"
set xtics rotate by -35 nomirror
set key top left
plot "$data" using 1:(\$3 >= \$6 ? \$3 : 1/0):xtic(2) with boxes lc rgb "#4caf50" title "median, goal met", \
     "$data" using 1:(\$3 < \$6 ? \$3 : 1/0):xtic(2) with boxes lc rgb "#ff9800" title "median, goal missed", \
     "$data" using 1:3:4:5 with yerrorbars lc rgb "black" pt -1 title "range of runs", \
     "$data" using (\$1 - 0.4):6:(0.8):(0) with vectors nohead lw 2 lc rgb "red" title "goal"
GP
echo "chart.sh: $out"
