# No stage is quadratic in the step graph: one buffer read by N distinct kernels (every kernel
# an invariant finding, every value in one buffer's group; tests/tools/mk-fanout.py) at 2,000
# and 20,000 kernels. Ten times the kernels may cost at most 25 times the CPU time (n log n is
# about 13; a quadratic stage costs a hundred: 200k took more than 300 s before the invariant, dead-work,
# memory-plan and pattern passes were made linear). Memory: max RSS at 20k kernels must stay
# under RSS_CAP_KB (200 MiB; 411 MiB before summary.json was streamed and the duration samples
# grew by doubling: 200k kernels took 4 GB) and grow at most 12x from 2k to 20k. With a source
# line for every kernel (mk-fanout.py --sites) the same bound on time holds: the summary's
# groupings by line and the pattern key compared every member with every earlier one (20k took
# about 36x the time of 2k). Each size runs twice and keeps its lower CPU time: on a loaded
# 2-core machine one run of the pair read 20.4x where alone it reads 12-14x.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
RSS_CAP_KB=${RSS_CAP_KB:-204800}
cpu() { # N [--sites]: exit code, user+sys seconds (the lower of two runs) and max RSS (KiB) of analyze on the fan-out trace of N kernels
	python3 "$top/tests/tools/mk-fanout.py" "$@" >"$tmp/f$1.jsonl"
	/usr/bin/time -f '%U %S %M' -o "$tmp/t$1" "$A" analyze -q --no-report "$tmp/f$1.jsonl" -o "$tmp/o$1" >/dev/null 2>&1
	r1=$?
	rm -rf "$tmp/o$1"
	/usr/bin/time -f '%U %S %M' -o "$tmp/u$1" "$A" analyze -q --no-report "$tmp/f$1.jsonl" -o "$tmp/o$1" >/dev/null 2>&1
	r2=$?
	echo "$((r1 > r2 ? r1 : r2)) $(cat "$tmp/t$1" "$tmp/u$1" | awk 'NR == 1 || $1 + $2 < t { t = $1 + $2 } { m = $3 > m ? $3 : m } END { print t, m }')"
}
set -- $(cpu 2000)
rc1=$1 t1=$2 m1=$3
set -- $(cpu 20000)
rc2=$1 t2=$2 m2=$3
check "2k and 20k kernels reading one buffer analyse (exit $rc1, $rc2)" test "$rc1" = 0 -a "$rc2" = 0
check "20k kernels in under 20 s of CPU ($t2 s)" awk "BEGIN { exit !($t2 < 20) }"
check "10x the kernels, at most 25x the CPU time ($t1 s -> $t2 s)" awk "BEGIN { exit !($t2 <= 25 * ($t1 > 0.05 ? $t1 : 0.05)) }"
check "20k kernels: max RSS under $RSS_CAP_KB KiB ($m2 KiB)" test "${m2:-999999999}" -lt "$RSS_CAP_KB"
check "10x the kernels, at most 12x the memory ($m1 KiB -> $m2 KiB)" test "${m2:-999999999}" -le $((12 * ${m1:-0}))
set -- $(cpu 2000 --sites)
rc1=$1 t1=$2
set -- $(cpu 20000 --sites)
rc2=$1 t2=$2
check "with a line a kernel: 2k and 20k analyse (exit $rc1, $rc2)" test "$rc1" = 0 -a "$rc2" = 0
check "with a line a kernel: 10x the kernels, at most 25x the CPU time ($t1 s -> $t2 s)" awk "BEGIN { exit !($t2 <= 25 * ($t1 > 0.05 ? $t1 : 0.05)) }"
