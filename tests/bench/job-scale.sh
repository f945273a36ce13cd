#!/bin/sh
# Job analysis scale benchmark (not part of `make test`): synthetic DDP jobs of 8, 64 and 512
# ranks (tests/tools/mkjob.py, STEPS steps each, default 20) analysed with `aicprof analyze`
# (AICPROF_STATS=1), then the reduce alone (--merge) over the rank summaries. Prints, per job:
# trace bytes per rank per step, rank summary bytes, map seconds per rank, merge seconds and the
# largest RSS of a map process and of the merging parent. docs/scale.md quotes its output.
#
#   make && sh tests/bench/job-scale.sh [STEPS] [RANKS...]
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
A=$top/build/aicprof
steps=${1:-20}; shift 2>/dev/null || true
sizes=${*:-8 64 512}
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
[ -x "$A" ] || { echo "job-scale: build first: make" >&2; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
for n in $sizes; do
	$PY "$top/tests/tools/mkjob.py" -n "$n" -s "$steps" -o "$d/j$n"
	bytes=$(cat "$d/j$n"/aicprof.rank*.aicp.jsonl | wc -c)
	AICPROF_STATS=1 "$A" analyze -q --no-report "$d/j$n"/aicprof.rank*.aicp.jsonl -o "$d/o$n" 2>"$d/s$n"
	stats=$(grep 'job stats' "$d/s$n" | sed 's/.*job stats: //')
	rs=$(cat "$d/o$n"/ranks/rank-*[0-9].json | wc -c)
	t0=$(date +%s.%N)
	/usr/bin/time -f %M -o "$d/m$n" "$A" analyze -q --no-report --merge "$d/o$n"/ranks/rank-*[0-9].json -o "$d/r$n"
	t1=$(date +%s.%N)
	echo "ranks $n steps $steps: trace bytes/rank/step $((bytes / n / steps)), rank summary bytes $((rs / n)), $stats; --merge alone $(echo "$t1 - $t0" | bc) s, $(cat "$d/m$n") KiB max RSS"
done
