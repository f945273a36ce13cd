#!/bin/sh
# Stress under the shim, run after run (the other-frameworks issue): STRESS_JAX runs of the JAX
# sample (default 50), STRESS_CUPY of the CuPy sample (20) and STRESS_COMPILE of torch.compile
# with Inductor's worker processes (4), STRESS_PAR at a time (5). The shim's modes rotate:
# defaults, AICPROF_ATTRIB=0, AICPROF_ARGS=0, AICPROF_MUX=0, AICPROF_ALLOC_BACKEND=0. Every run
# must exit as it does bare (0) with the same last line of output (step times left out) as a bare run of the same
# program; a failing run keeps its stderr and trace under $OUT/stress-fail/.
#   device run: sh tests/gpu/stress.sh      ($OUT gets stress.log)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
OUT=${OUT:-$top/build/stress-out}
W=$OUT/stress-w
mkdir -p "$W" "$OUT/stress-fail"
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
SHIM=$top/build/libaicprof.so
PY=${PYTHON:-python3}
PAR=${STRESS_PAR:-5}
modes="- AICPROF_ATTRIB=0 AICPROF_ARGS=0 AICPROF_MUX=0 AICPROF_ALLOC_BACKEND=0"
nmodes=5
one() { # name i cmd...: one run under the shim in mode i % 5; prints "ok|bad name i mode rc"
	name=$1 i=$2
	shift 2
	e=$(echo $modes | cut -d' ' -f$((i % nmodes + 1)))
	[ "$e" = - ] && e=
	env $e PYTHONFAULTHANDLER=1 AICPROF_QUIET=1 AICPROF_OUTPUT="$W/$name.$i.aicp.jsonl" \
		LD_PRELOAD="$SHIM" "$@" >"$W/$name.$i.out" 2>"$W/$name.$i.err"
	rc=$?
	if [ $rc = 0 ] && [ "$(grep -v '^step_ms' "$W/$name.$i.out" | tail -1)" = "$(grep -v '^step_ms' "$W/$name.bare.out" | tail -1)" ]; then
		echo "ok $name $i ${e:-defaults} $rc"
		rm -f "$W/$name.$i".*
	else
		echo "bad $name $i ${e:-defaults} $rc"
		mv "$W/$name.$i".* "$OUT/stress-fail/" 2>/dev/null
	fi
}
batch() { # name n cmd...
	name=$1 n=$2
	shift 2
	"$@" >"$W/$name.bare.out" 2>"$W/$name.bare.err" || echo "bare $name exit $?"
	i=0
	while [ $i -lt "$n" ]; do
		j=0
		while [ $j -lt "$PAR" ] && [ $i -lt "$n" ]; do
			one "$name" $i "$@" &
			i=$((i + 1)) j=$((j + 1))
		done
		wait
	done
}
{
	batch jax "${STRESS_JAX:-50}" $PY samples/jax_train.py --steps 4
	batch cupy "${STRESS_CUPY:-20}" $PY samples/cupy_loop.py
	batch compile "${STRESS_COMPILE:-4}" $PY tests/gpu/compile_workers.py
} >"$W/runs.log" 2>&1
for n in jax cupy compile; do
	t=$(grep -c " $n " "$W/runs.log")
	b=$(grep -c "^bad $n " "$W/runs.log")
	echo "# stress $n: $t runs under the shim, $b failed$(grep "^bad $n " "$W/runs.log" | head -5 | sed 's/^/; /' | tr -d '\n')"
	if [ "$b" = 0 ] && [ "$t" -gt 0 ]; then echo "ok - stress $n: $t runs"; else echo "not ok - stress $n: $b of $t runs failed"; fi
done >"$OUT/stress.log"
grep "^bare" "$W/runs.log" >>"$OUT/stress.log"
rm -rf "$W"
cat "$OUT/stress.log"
