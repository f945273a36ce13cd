#!/bin/sh
# The recording window's close, run WH_RUNS times (default 4) on two programs, each run with a
# limit of WH_LIMIT seconds (default 40): the in-place loop of faults.py's window scenario and
# the out-of-place loop of bench_step.py, both with AICPROF_DURATION=1. A run still alive at its
# limit is a hang: every thread's stack (eu-stack from .devdeps, when there) and each thread's
# kernel wait channel go to the log before it is killed.
#   device run: sh tests/gpu/window-hang.sh      ($OUT gets window-hang.log)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$top/build/window-hang-out}
mkdir -p "$OUT/wh"
D=$top/.devdeps
STACK=
[ -x "$D/usr/bin/eu-stack" ] && STACK="env LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu $D/usr/bin/eu-stack"
SHIM=$top/build/libaicprof.so
PY=${PYTHON:-python3}
hangs=0
one() { # tag command...
	tag=$1
	shift
	t0=$(date +%s%N)
	AICPROF_DURATION=1 AICPROF_OUTPUT="$OUT/wh/$tag.aicp.jsonl" LD_PRELOAD=$SHIM "$@" \
		>"$OUT/wh/$tag.out" 2>"$OUT/wh/$tag.err" &
	pid=$!
	i=0
	while kill -0 "$pid" 2>/dev/null && [ "$i" -lt "${WH_LIMIT:-40}" ]; do
		sleep 1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		hangs=$((hangs + 1))
		echo "HANG $tag after ${i} s: threads"
		for t in /proc/$pid/task/*; do
			echo "  $(basename "$t") $(cat "$t/comm") wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
		done
		[ -n "$STACK" ] && $STACK -p "$pid" 2>&1 | head -400
		kill -9 "$pid"
	fi
	wait "$pid"
	rc=$?
	t1=$(date +%s%N)
	echo "$tag rc=$rc $(((t1 - t0) / 1000000)) ms; end: $(tail -c 300 "$OUT/wh/$tag.aicp.jsonl" | tail -1 | cut -c1-200)"
	grep aicprof "$OUT/wh/$tag.err" | head -3
}
{
	for r in $(seq "${WH_RUNS:-4}"); do
		one "inplace$r" "$PY" "$top/tests/gpu/window_loop.py"
		BENCH_SETTLE_S=3 one "oop$r" "$PY" "$top/tests/gpu/bench_step.py" win oop
	done
	echo "window-hang: $hangs hangs"
} 2>&1 | tee "$OUT/window-hang.log"
