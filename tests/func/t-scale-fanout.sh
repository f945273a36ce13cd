# No stage is quadratic in the step graph: one buffer read by N distinct kernels (every kernel
# an invariant finding, every value in one buffer's group; tests/tools/mk-fanout.py) at 2,000
# and 20,000 kernels. Ten times the kernels may cost at most twenty times the CPU time (a
# quadratic stage costs a hundred: 200k took more than 300 s before the invariant, dead-work,
# memory-plan and pattern passes were made linear).
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
cpu() { # N: user+sys seconds of analyze on the fan-out trace of N kernels
	python3 "$top/tests/tools/mk-fanout.py" "$1" >"$tmp/f$1.jsonl"
	/usr/bin/time -f '%U %S' -o "$tmp/t$1" "$A" analyze -q --no-report "$tmp/f$1.jsonl" -o "$tmp/o$1" >/dev/null 2>&1
	echo "$? $(awk '{print $1 + $2}' "$tmp/t$1")"
}
set -- $(cpu 2000)
rc1=$1 t1=$2
set -- $(cpu 20000)
rc2=$1 t2=$2
check "2k and 20k kernels reading one buffer analyse (exit $rc1, $rc2)" test "$rc1" = 0 -a "$rc2" = 0
check "20k kernels in under 20 s of CPU ($t2 s)" awk "BEGIN { exit !($t2 < 20) }"
check "10x the kernels, at most 20x the CPU time ($t1 s -> $t2 s)" awk "BEGIN { exit !($t2 <= 20 * ($t1 > 0.05 ? $t1 : 0.05)) }"
