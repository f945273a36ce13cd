#!/bin/sh
# The shim's memory over a long training run (the overhead issue's "bounded memory"): the GPT-2
# sample under the shim for RSS_S seconds (default 540), with no trace cap (AICPROF_MAX_MB=0) and
# no step window (AICPROF_STEPS=0) so
# that every structure of the shim keeps working the whole time; the process's VmRSS and the
# trace's size are sampled every RSS_EVERY seconds (default 10). Prints "# t_s rss_mib trace_mib"
# rows and one TAP line: the growth from RSS_WARM seconds (default 120) to the end is at most
# RSS_LIMIT MiB (default 64). The trace is deleted at the end.
#   device: sh tests/gpu/rss_long.sh   (after make build/libaicprof.so)
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=${GPU_OUT:-$top/build/gpu}
mkdir -p "$out"
S=${RSS_S:-540}
E=${RSS_EVERY:-10}
T=$out/rss_long.aicp.jsonl
rm -f "$T"
AICPROF_MAX_MB=0 AICPROF_STEPS=0 AICPROF_OUTPUT=$T LD_PRELOAD=$top/build/libaicprof.so \
	timeout -s INT "$S" python3 samples/gpt2_train.py --steps 10000000 >"$out/rss_long.stdout" 2>"$out/rss_long.stderr" &
pid=$!
sleep 2
# the python process is timeout's child
py=$(pgrep -P "$pid" | head -1)
t=0
: >"$out/rss_long.tsv"
while kill -0 "$pid" 2>/dev/null; do
	r=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/${py:-$pid}/status" 2>/dev/null)
	[ -n "$r" ] && echo "$t $r $(($(stat -c %s "$T" 2>/dev/null || echo 0) >> 20))" >>"$out/rss_long.tsv"
	sleep "$E"
	t=$((t + E))
done
wait "$pid"
sed 's/^/# /' "$out/rss_long.tsv"
steps=$(grep -c "loss" "$out/rss_long.stdout")
awk -v w="${RSS_WARM:-120}" -v lim="${RSS_LIMIT:-64}" -v steps="$steps" '
	$1 >= w && !a { a = $2; at = $1 } { b = $2; bt = $1; tr = $3 }
	END {
		g = b - a
		printf "%s - rss_long: RSS %d MiB at %d s, %d MiB at %d s (%+d MiB, limit %d), trace %d MiB, %d steps\n",
			(a && g <= lim) ? "ok" : "not ok", a, at, b, bt, g, lim, tr, steps
	}' "$out/rss_long.tsv"
rm -f "$T"
