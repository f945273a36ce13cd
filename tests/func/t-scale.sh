# Memory follows the step graph, not the file: build/tools/gen-trace streams a 200,000-kernel and
# a 1,000,000-kernel trace (50 kernels a step) through a pipe into `aicprof analyze /dev/stdin`
# (nothing on disk); the analyzer's max RSS must stay under 64 MiB and grow by less than half
# while the trace grows five times (a reader that kept the records would grow about 5x). The
# figures at 1M and 10M kernels are in docs/reliability.md.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
G=$B/tools/gen-trace
check "gen-trace is built (make tools)" test -x "$G"
# rss N: analyses an N-kernel trace from a pipe; prints "exit max_rss_kib kernels_in_summary"
# (GNU time measures the analyzer alone; Debian package "time")
rss() {
	"$G" -n "$1" -p 50 | /usr/bin/time -f '%x %M' -o "$tmp/t$1" "$A" analyze -q --no-report /dev/stdin -o "$tmp/o$1" >/dev/null
	k=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["traces"][0]["kernels"])' "$tmp/o$1/summary.json" 2>/dev/null)
	echo "$(tail -1 "$tmp/t$1") ${k:--1}"
}
check "GNU time is installed" test -x /usr/bin/time
set -- $(rss 200000)
rc1=$1 kb1=$2 k1=$3
set -- $(rss 1000000)
rc2=$1 kb2=$2 k2=$3
check "200k kernels from a pipe: exit 0 ($rc1), every kernel read ($k1)" test "$rc1" = 0 -a "$k1" = 200000
check "1M kernels from a pipe: exit 0 ($rc2), every kernel read ($k2)" test "$rc2" = 0 -a "$k2" = 1000000
check "max RSS under 64 MiB (200k: $kb1 KiB, 1M: $kb2 KiB)" test "${kb2:-999999}" -lt 65536
check "5x the kernels, less than 1.5x the memory ($kb1 -> $kb2 KiB)" test $((kb2 * 2)) -lt $((kb1 * 3))
