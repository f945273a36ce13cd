#!/bin/sh
# campaign-stats.sh - the figures of a campaign run by campaign.sh, one Markdown table row a
# target, for docs/reliability.md: slices run, seconds fuzzed, executions (libFuzzer's final
# stat::number_of_executed_units, or the last status line's count for a slice still running or
# stopped by a finding), mean exec/s, coverage (cov / ft) at the first slice's INITED line and at
# the last status line, corpus files and size, findings (artifacts).
#   sh tests/fuzz/campaign-stats.sh [DIR]      (DIR: default ../fuzzlogs, beside the checkout)
DIR=${1:-$(cd "$(dirname "$0")/../.." && pwd)/../fuzzlogs}
echo "| target | slices | time | executions | exec/s | cov / ft, start -> now | corpus | findings |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for log1 in "$DIR"/log/*-001.log; do
	[ -f "$log1" ] || continue
	n=$(basename "$log1" -001.log)
	slices=0 secs=0 execs=0
	for l in "$DIR"/log/"$n"-*.log; do
		slices=$((slices + 1))
		e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$l" | tail -n 1)
		[ -n "$e" ] || e=$(grep -E '^#[0-9]+' "$l" | tail -n 1 | sed 's/^#\([0-9]*\).*/\1/')
		execs=$((execs + ${e:-0}))
		# a slice's time: its log's birth to its last write (file systems without birth
		# times count 0)
		t0=$(stat -c %W "$l" 2>/dev/null)
		t1=$(stat -c %Y "$l")
		[ "${t0:-0}" -gt 0 ] 2>/dev/null && secs=$((secs + t1 - t0))
	done
	start=$(grep -m1 'INITED' "$log1" | sed 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \/ \2/')
	last=$(cat "$DIR"/log/"$n"-*.log | grep -E '^#[0-9]+.*cov:' | tail -n 1 |
		sed 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \/ \2/')
	files=$(find "$DIR/corpus-$n" -type f 2>/dev/null | wc -l)
	size=$(du -sh "$DIR/corpus-$n" 2>/dev/null | cut -f1)
	found=$(find "$DIR/artifacts" -name "$n-*" -type f 2>/dev/null | wc -l)
	rate=$([ "$secs" -gt 0 ] && echo $((execs / secs)) || echo -)
	echo "| \`fuzz-$n\` | $slices | $secs s | $execs | $rate | $start -> $last | $files inputs, $size | $found |"
done
