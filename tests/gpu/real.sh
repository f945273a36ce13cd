#!/bin/sh
# Real programs on the device machine (no NVTX, models from libraries): records each sample of
# samples/ under the shim beside a bare run (exit code and output compared), then the overhead
# benchmark (tests/gpu/overhead.sh: every mode interleaved, OVH_ROUNDS rounds, default 2), then
# tests/gpu/stress.sh (JAX, CuPy, torch.compile under the shim's modes) when a minute of
# REAL_BUDGET seconds is left. REAL_SAMPLES names the
# samples to record (default all), REAL_BENCH=0 skips the benchmark, STRESS_N sets the JAX stress runs.
#   device run: sh tests/gpu/real.sh     ($OUT gets real.log, real-traces.tar.gz, overhead.log and .jsonl, stress.log)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
OUT=${OUT:-$top/build/real-out}
W=$OUT/w
mkdir -p "$W"
D=$top/.devdeps
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUDA_HOME=${CUDA_HOME:-$(ls -d /usr/local/cuda-13* /usr/local/cuda 2>/dev/null | head -1)}
export CUDA_HOME PATH=$CUDA_HOME/bin:$PATH
SHIM=$top/build/libaicprof.so
PY=${PYTHON:-python3}
BUDGET=${REAL_BUDGET:-540}
start=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - start))); }
{
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "sources $(sh tests/gpu/srchash.sh) (tests/gpu/srchash.sh)"
make -j8 NO_DEPS=1 CUDA_HOME="$CUDA_HOME" build/libaicprof.so 2>&1 | tail -2
ok=0; bad=0
t() { d=$1; shift; if "$@"; then echo "ok - $d"; ok=$((ok+1)); else echo "not ok - $d"; bad=$((bad+1)); fi; }
for s in ${REAL_SAMPLES:-gpt2_train resnet_train llama_train vit_train jax_train cupy_loop}; do
	t0=$(date +%s)
	$PY samples/$s.py >"$W/$s.bare.out" 2>"$W/$s.bare.err"; brc=$?
	t1=$(date +%s)
	AICPROF_OUTPUT=$W/$s.aicp.jsonl LD_PRELOAD=$SHIM $PY samples/$s.py >"$W/$s.out" 2>"$W/$s.stderr"; rc=$?
	t2=$(date +%s)
	echo "# $s: bare exit $brc ($((t1-t0)) s), shim exit $rc ($((t2-t1)) s), $(grep -c '"t":"kernel"' "$W/$s.aicp.jsonl" 2>/dev/null) kernel records, $(du -k "$W/$s.aicp.jsonl" 2>/dev/null | cut -f1) KiB"
	t "$s: exit code unchanged ($brc -> $rc)" test "$brc" = "$rc"
	grep -v '^step_ms' "$W/$s.bare.out" >"$W/a"; grep -v '^step_ms' "$W/$s.out" >"$W/b"
	t "$s: output unchanged" cmp -s "$W/a" "$W/b"
	grep aicprof: "$W/$s.stderr" | head -5
	tail -3 "$W/$s.bare.err"
done
if [ "${REAL_XLA:-1}" = 1 ]; then # what XLA's platform allocator (the shim's default for JAX) costs
	for r in ${REAL_XLA_ROUNDS:-1 2 3}; do
		a=$($PY samples/jax_train.py --steps 12 2>/dev/null | sed -n 's/^step_ms //p')
		p=$(XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform $PY samples/jax_train.py --steps 12 2>/dev/null | sed -n 's/^step_ms //p')
		echo "# jax allocator round $r: default (arena) step $a ms, platform allocator step $p ms"
	done
fi
if [ "${REAL_BENCH:-1}" = 1 ] && [ "$(left)" -gt 200 ]; then
	echo "== bench (tests/gpu/overhead.sh; $(left) s left)"
	OVH_ROUNDS=${OVH_ROUNDS:-2} OUT=$OUT sh tests/gpu/overhead.sh
fi
echo "== stress under the shim (tests/gpu/stress.sh; $(left) s left)"
if [ "$(left)" -gt 60 ]; then
	STRESS_JAX=${STRESS_N:-50} OUT=$OUT sh tests/gpu/stress.sh >"$W/stress.out" 2>&1
	cat "$W/stress.out"
	t "stress: every run as bare" sh -c "! grep -q '^not ok' '$W/stress.out'"
fi
echo "# real: $ok passed, $bad failed"
} >"$OUT/real.log" 2>&1
(cd "$W" && tar czf "$OUT/real-traces.tar.gz" *.aicp.jsonl *.stderr *.err *.out 2>/dev/null)
rm -rf "$W"
grep -E '^(ok|not ok|#|==)|passed' "$OUT/real.log" | tail -60
