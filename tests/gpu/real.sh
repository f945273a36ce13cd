#!/bin/sh
# Real programs on the device machine (no NVTX, models from libraries): records each sample of
# samples/ under the shim beside a bare run (exit code and output compared), then the overhead
# benchmark (bench_step.py: an out-of-place loop and the GPT-2 step, every mode interleaved), then
# a JAX stress loop for whatever time is left of REAL_BUDGET seconds. REAL_SAMPLES names the
# samples to record (default all), REAL_BENCH=0 skips the benchmark, STRESS_N caps the stress runs.
#   device run: sh tests/gpu/real.sh     ($OUT gets real.log, real-traces.tar.gz, bench-real.jsonl)
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
git log -1 --format='tree of %h' 2>/dev/null
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
echo "== bench (interleaved rounds; $(left) s left)"
for r in $( [ "${REAL_BENCH:-1}" = 1 ] && echo 1 2); do
	for m in bare shim alloc0 attrib0 args0 profiler; do
		for w in oop gpt2; do
			[ "$(left)" -gt 150 ] || continue
			case $w in oop) a=oop;; gpt2) a="samples/gpt2_train.py --steps 14";; esac
			case $m in
			bare|profiler) $PY tests/gpu/bench_step.py $m $a;;
			shim) AICPROF_OUTPUT=$W/b.jsonl LD_PRELOAD=$SHIM $PY tests/gpu/bench_step.py $m $a;;
			alloc0) AICPROF_ALLOC_BACKEND=0 AICPROF_OUTPUT=$W/b.jsonl LD_PRELOAD=$SHIM $PY tests/gpu/bench_step.py $m $a;;
			attrib0) AICPROF_ATTRIB=0 AICPROF_OUTPUT=$W/b.jsonl LD_PRELOAD=$SHIM $PY tests/gpu/bench_step.py $m $a;;
			args0) AICPROF_ARGS=0 AICPROF_OUTPUT=$W/b.jsonl LD_PRELOAD=$SHIM $PY tests/gpu/bench_step.py $m $a;;
			esac 2>>"$W/bench.err" | sed "s/^{/{\"round\":$r,/" | tee -a "$OUT/bench-real.jsonl"
		done
	done
done
rm -f "$W/b.jsonl"
echo "== JAX stress ($(left) s left)"
n=0; crash=0; nb=0; bcrash=0
while [ "$(left)" -gt 25 ] && [ $((n + nb)) -lt ${STRESS_N:-80} ]; do
	i=$((n + nb))
	if [ $((i % 6)) = 5 ]; then # the control: the same program bare
		$PY samples/jax_train.py --steps 4 >/dev/null 2>"$W/stress.err"; rc=$?
		nb=$((nb+1)); [ $rc = 0 ] || { bcrash=$((bcrash+1)); echo "# bare run $nb: exit $rc"; }
		continue
	fi
	case $((i % 6)) in 0|1) e=;; 2) e=AICPROF_ATTRIB=0;; 3) e=AICPROF_ARGS=0;; 4) e=AICPROF_MUX=0;; esac
	env $e PYTHONFAULTHANDLER=1 AICPROF_OUTPUT=$W/stress.jsonl LD_PRELOAD=$SHIM $PY samples/jax_train.py --steps 4 >/dev/null 2>"$W/stress.err"; rc=$?
	n=$((n+1))
	if [ $rc != 0 ]; then crash=$((crash+1)); echo "# stress run $n ($e): exit $rc"; tail -n 5 "$W/stress.err"; [ $crash -gt 3 ] || { cp "$W/stress.err" "$W/stress-$n.err"; cp "$W/stress.jsonl" "$W/stress-$n.aicp.jsonl"; }; fi
done
t "jax stress: $n runs under the shim, $crash not exit 0 (bare: $nb runs, $bcrash not exit 0)" test $crash = 0
echo "# real: $ok passed, $bad failed"
} >"$OUT/real.log" 2>&1
(cd "$W" && tar czf "$OUT/real-traces.tar.gz" *.aicp.jsonl *.stderr *.err *.out 2>/dev/null)
rm -rf "$W"
grep -E '^(ok|not ok|#|==)|passed' "$OUT/real.log" | tail -60
