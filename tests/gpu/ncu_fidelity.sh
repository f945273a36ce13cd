#!/bin/sh
# The ledger against the hardware (docs/accuracy.md, "Bytes against ncu's DRAM counters"):
# runs two samples under Nsight Compute reading dram__bytes_read.sum and dram__bytes_write.sum
# for every kernel, once with ncu's cache flush before each kernel (--cache-control all: what
# a kernel moves when nothing is in L2) and once without (--cache-control none: what L2 kept
# off DRAM in the program's own order), and records the same commands with the shim. The
# comparison is made offline by tests/tools/ncu-compare.py, which matches kernels by launch
# ordinal and name. Writes under $1 (default build/ncu): NAME.ncu-all.csv, NAME.ncu-none.csv,
# NAME.aicp.jsonl.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=${1:-$top/build/ncu}
mkdir -p "$out"
PY=${PYTHON:-python3}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
M=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
for s in mlp_train attention_train; do
	for cc in all none; do
		"$NCU" --metrics "$M" --csv --cache-control "$cc" --clock-control base \
			"$PY" samples/$s.py --steps 3 >"$out/$s.ncu-$cc.csv" 2>"$out/$s.ncu-$cc.err"
		echo "ncu $s cache-control $cc: exit $?, $(grep -c dram__bytes_read "$out/$s.ncu-$cc.csv") kernels"
	done
	AICPROF_OUTPUT="$out/$s.aicp.jsonl" LD_PRELOAD=$top/build/libaicprof.so \
		"$PY" samples/$s.py --steps 3 >"$out/$s.stdout" 2>"$out/$s.stderr"
	echo "shim $s: exit $?"
done
