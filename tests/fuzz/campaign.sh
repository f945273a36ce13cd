#!/bin/sh
# campaign.sh - a long fuzz campaign on a shared machine: ONE libFuzzer process at a time,
# niced, rotating the targets, SLICE seconds each, round after round until killed (or ROUNDS
# rounds; TARGETS sets the order). Usage, from the top directory after
# `make build/fuzz/fuzz-NAME...`:
#
#   nohup sh tests/fuzz/campaign.sh [DIR] >/dev/null 2>&1 &
#
# DIR (default ../fuzzlogs beside the checkout, outside the repository) gets:
#   bin/fuzz-NAME       the targets, copied at the start (rebuild and copy again to fuzz a fix:
#                       the next slice of that target picks it up)
#   corpus-NAME/        the corpus, grown across rounds (seeds and regression inputs are read
#                       from tests/fuzz/ each slice, new inputs go here)
#   artifacts/NAME-*    crashes, leaks, timeouts, OOMs (libFuzzer's artifact_prefix)
#   log/NAME-NNN.log    each slice's libFuzzer output (cov:, ft:, exec/s, final stats), NNN
#                       the target's slice count (a restarted campaign goes on counting)
#   campaign.log        one line a slice: start, target, round (of this run), seconds, exit
#                       code, last status
#   pid                 the campaign's pid: kill $(cat DIR/pid) stops it and its fuzzer
# A slice that stops on a finding is logged with its exit code; the rotation goes on (the
# finding's target resumes at its next turn, from the same corpus).
set -u
DIR=${1:-$(cd "$(dirname "$0")/../.." && pwd)/../fuzzlogs}
SLICE=${SLICE:-1200}
ROUNDS=${ROUNDS:-1000}
TARGETS=${TARGETS:-"analyze summary report fuse"}
top=$(pwd)
mkdir -p "$DIR/bin" "$DIR/artifacts" "$DIR/log"
echo $$ >"$DIR/pid"
child=
# a TERM to the campaign stops the running fuzzer too (it is the subshell, exec'd)
trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 143' TERM INT
for n in $TARGETS; do
	[ -x "$DIR/bin/fuzz-$n" ] || cp "build/fuzz/fuzz-$n" "$DIR/bin/" || exit 1
	mkdir -p "$DIR/corpus-$n"
done
r=0
while [ "$r" -lt "$ROUNDS" ]; do
	r=$((r + 1))
	for n in $TARGETS; do
		# the target's next slice number, so a restarted campaign never overwrites a log
		i=$(($(find "$DIR/log" -name "$n-*.log" | wc -l) + 1))
		log=$(printf '%s/log/%s-%03d.log' "$DIR" "$n" "$i")
		start=$(date -u +%FT%TZ)
		t0=$(date +%s)
		dirs="$DIR/corpus-$n"
		for d in "$top/tests/fuzz/seeds/$n" "$top/tests/fuzz/regress/$n"; do
			[ -d "$d" ] && dirs="$dirs $d"
		done
		# shellcheck disable=SC2086
		(cd "$DIR" && TMPDIR=${TMPDIR:-/tmp} exec nice -n 19 "$DIR/bin/fuzz-$n" \
		    -max_total_time="$SLICE" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=2 \
		    -print_final_stats=1 -artifact_prefix="$DIR/artifacts/$n-" $dirs) >"$log" 2>&1 &
		child=$!
		wait "$child"
		rc=$?
		last=$(grep -aE '^#[0-9]+' "$log" | tail -n 1 | cut -c1-160)
		echo "$start $n round $r $(($(date +%s) - t0)) s rc $rc: $last" >>"$DIR/campaign.log"
	done
done
