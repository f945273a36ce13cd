#!/bin/sh
# CUPTI's own cost a launch (tests/gpu/cupti_floor.cu): every mode its own process,
# CF_ROUNDS interleaved rounds (default 3); one JSON line a run to $OUT/cupti-floor.jsonl.
#   device run: sh tests/gpu/cupti-floor.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$top/build/cupti-floor-out}
mkdir -p "$OUT"
CUDA_HOME=${CUDA_HOME:-$(ls -d /usr/local/cuda-13* /usr/local/cuda 2>/dev/null | head -1)}
B=$OUT/cupti_floor
L=$CUDA_HOME/extras/CUPTI/lib64
[ -d "$L" ] || L=$CUDA_HOME/lib64
"$CUDA_HOME/bin/nvcc" -O2 -arch=sm_90 -cudart shared -o "$B" "$top/tests/gpu/cupti_floor.cu" \
	-I"$CUDA_HOME/extras/CUPTI/include" -L"$L" -Xlinker -rpath -Xlinker "$L" -lcupti || exit 1
for r in $(seq "${CF_ROUNDS:-3}"); do
	for m in ${CF_MODES:-bare cb cbrt act cbact actext actgf interp pcb pact pext pgpu pgpucb}; do
		printf '{"round":%s,' "$r"
		"$B" "$m" "${CF_BATCHES:-200}" | sed 's/^{//'
	done
done | tee "$OUT/cupti-floor.jsonl"
