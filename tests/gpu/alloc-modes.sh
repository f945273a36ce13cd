#!/bin/sh
# The samples recorded under both of the shim's allocator modes, for comparing what the analysis
# finds when PyTorch keeps its own caching allocator (AICPROF_ALLOC_BACKEND=0: segments holding
# many tensors) with what it finds under the switch to cudaMallocAsync (one allocation per
# tensor). Each sample runs bare, under each mode; exit codes and outputs are compared (TAP), the
# traces stay in $GPU_OUT as NAME.alloc0.aicp.jsonl and NAME.alloc1.aicp.jsonl. ALLOC_SAMPLES names
# the samples (default the PyTorch ones), ALLOC_MODES the modes (default "0 1").
#   make -j8 build/libaicprof.so && sh tests/gpu/alloc-modes.sh
. "$(dirname "$0")/../func/lib.sh"
out=${GPU_OUT:-$tmp}
mkdir -p "$out"
for s in ${ALLOC_SAMPLES:-gpt2_train llama_train resnet_train mlp_train attention_train}; do
	python3 samples/$s.py >"$tmp/bare.out" 2>"$tmp/bare.err"
	brc=$?
	for m in ${ALLOC_MODES:-0 1}; do
		T=$out/$s.alloc$m.aicp.jsonl
		t0=$(date +%s)
		AICPROF_ALLOC_BACKEND=$m AICPROF_OUTPUT=$T LD_PRELOAD=$B/libaicprof.so \
			python3 samples/$s.py >"$tmp/shim.out" 2>"$out/$s.alloc$m.stderr"
		rc=$?
		echo "# $s alloc$m: exit $rc, $(($(date +%s) - t0)) s, $(grep -c '"t":"alloc"' "$T") allocs, $(grep -c '"t":"kernel"' "$T") kernels"
		check "$s alloc$m: exit as bare ($brc)" test "$rc" = "$brc"
		check "$s alloc$m: output as bare" \
			test "$(grep -v step_ms "$tmp/bare.out")" = "$(grep -v step_ms "$tmp/shim.out")"
	done
done
