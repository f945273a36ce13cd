#!/bin/sh
# Analyzer scale benchmark (not part of `make test`): generates a 1,000,000-kernel trace and a
# 250,000-kernel one with build/tools/gen-trace, then times `aicprof analyze` on them and
# Python's json.loads over the same lines (parsing only, one line at a time), interleaved,
# RUNS times each (default 3), and prints the medians of wall time and max RSS.
#
#   make && make tools && sh tests/bench/analyze-scale.sh [RUNS]
#
# Needs /usr/bin/time (GNU time, for max RSS) and python3. Writes only under a temporary dir.
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-3}
A=$top/build/aicprof
G=$top/build/tools/gen-trace
[ -x "$A" ] && [ -x "$G" ] || { echo "analyze-scale: build first: make && make tools" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "analyze-scale: needs GNU time at /usr/bin/time" >&2; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$G" -n 1000000 -p 50 >"$d/1m.aicp.jsonl"
"$G" -n 250000 -p 50 >"$d/250k.aicp.jsonl"
echo "trace 1m: $(wc -l <"$d/1m.aicp.jsonl") lines, $(($(wc -c <"$d/1m.aicp.jsonl") / 1048576)) MiB; trace 250k: $(wc -l <"$d/250k.aicp.jsonl") lines"

# measure NAME CMD...: appends "wall_s max_rss_kb cpu_s" to $d/NAME
measure() {
	n=$1; shift
	/usr/bin/time -f "%e %M %U %S" -o "$d/t" "$@" >/dev/null 2>"$d/err" || { cat "$d/err" >&2; exit 1; }
	awk '{print $1, $2, $3 + $4}' "$d/t" >>"$d/$n"
}
py='import json,sys
for l in open(sys.argv[1], "rb"): json.loads(l)'
i=0
while [ $i -lt "$runs" ]; do
	measure analyze-1m "$A" analyze -q "$d/1m.aicp.jsonl" -o "$d/out"
	measure python-1m python3 -c "$py" "$d/1m.aicp.jsonl"
	measure analyze-250k "$A" analyze -q "$d/250k.aicp.jsonl" -o "$d/out"
	i=$((i + 1))
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for n in analyze-1m python-1m analyze-250k; do
	w=$(cut -d' ' -f1 "$d/$n" | median); m=$(cut -d' ' -f2 "$d/$n" | median)
	c=$(cut -d' ' -f3 "$d/$n" | median); b=$(cut -d' ' -f1 "$d/$n" | sort -n | head -1)
	printf '%-13s median wall %6.2f s (best %6.2f), cpu %6.2f s, max RSS %6.1f MiB (wall runs: %s)\n' \
		"$n" "$w" "$b" "$c" "$(echo "$m" | awk '{print $1/1024}')" \
		"$(cut -d' ' -f1 "$d/$n" | tr '\n' ' ')"
	eval "w_$(echo $n | tr - _)=$w c_$(echo $n | tr - _)=$c b_$(echo $n | tr - _)=$b"
done
# the machine may be shared: the best runs are the least disturbed, the medians the typical
echo "analyze vs json.loads alone: $(echo "$w_python_1m $w_analyze_1m" | awk '{printf "%.2f", $1/$2}')x (median wall), $(echo "$c_python_1m $c_analyze_1m" | awk '{printf "%.2f", $1/$2}')x (median cpu), $(echo "$b_python_1m $b_analyze_1m" | awk '{printf "%.2f", $1/$2}')x (best wall)"
