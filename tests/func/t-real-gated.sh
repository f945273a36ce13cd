#!/bin/sh
# The gated form on traces of two transformers models we did not write, recorded on the device
# under the shim (tests/gpu/gated_models.py train, 6 steps; gzip'd in tests/traces/): Qwen2's
# SwiGLU and Gemma's GeGLU (GELU's tanh form). analyze lists Qwen2MLP.forward and
# GemmaMLP.forward as "gated" with their activation classes (SiLUActivation, GELUTanh), four
# invocations a step; fuse writes their groups with
# silu's fast forms (bf16 writes), GELU's tanh form and its fused backward, and nvcc compiles each group's
# C ABI file where there is an nvcc. Prints TAP lines.
. "$(dirname "$0")/lib.sh"
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || NVCC=$(command -v nvcc)
for m in qwen2 gemma; do
	"$B/aicprof" analyze -q --no-report "$top/tests/traces/${m}_train.aicp.jsonl.gz" \
		-o "$tmp/$m" >"$tmp/$m.out" 2>&1
	check "$m: analyze reads the gzip'd trace" test -s "$tmp/$m/summary.json"
	python3 - "$tmp/$m/summary.json" >"$tmp/$m.f" 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for f in s.get("functions", []):
    g = f.get("group") or {}
    print(f["form"], f["func"], f["invocations"], f["binding"].get("act_class", "-"),
          ",".join(o["op"] for o in g.get("ops", [])) or "-")
PY
	case $m in
	qwen2) want="gated Qwen2MLP.forward 4 SiLUActivation silu,cast,mul" ;;
	*) want="gated GemmaMLP.forward 4 GELUTanh gelu_tanh,cast,mul" ;;
	esac
	check "$m: functions has '$want' (got: $(tr '\n' ';' <"$tmp/$m.f"))" grep -qx "$want" "$tmp/$m.f"
	(cd "$tmp" && "$B/aicprof" fuse "$tmp/$m" -o "$tmp/$m-f" --src /nonexistent) >"$tmp/$m.fu" 2>&1
	gd=$(ls -d "$tmp/$m-f"/aicprof_fused/f*_*MLP_forward 2>/dev/null | head -1)
	n=$(basename "${gd:-none}")
	check "$m: fuse wrote the MLP's group ($n)" test -s "$gd/${n}_math.h"
	case $m in
	qwen2) check "$m: the forward takes silu's fast form (bf16 writes)" \
		grep -q "= aic_silu_fast(v0); /\* x0 = silu \*/" "$gd/${n}_math.h"
		check "$m: the fused backward recomputes sigmoid's fast form" \
			grep -q "aic_sigmoid_fast(v0) \* (1.f + v0 \* (1.f - aic_sigmoid_fast(v0)))); /\* d4 = silu_backward \*/" \
			"$gd/${n}_bwd_math.h" ;;
	*) check "$m: the forward is GELU's tanh form" \
		grep -q "tanhf(0.797884561f \* (v0 + 0.044715f \* v0 \* v0 \* v0)))); /\* x0 = gelu_tanh \*/" \
		"$gd/${n}_math.h"
		check "$m: the fused backward is gelu_tanh_backward" \
			grep -q "/\* d4 = gelu_tanh_backward \*/" "$gd/${n}_bwd_math.h" ;;
	esac
	if [ -n "$NVCC" ] && [ -x "$NVCC" ]; then
		(cd "$gd" && "$NVCC" -arch=sm_90 -c -o "$tmp/$m.o" "${n}_capi.cu") >"$tmp/$m.nv" 2>&1
		check "$m: nvcc compiles ${n}_capi.cu ($(grep -m1 error "$tmp/$m.nv"))" test -s "$tmp/$m.o"
		(cd "$gd" && "$NVCC" -o "$tmp/$m.cc" "${n}_bwd_cpucheck.cu" && "$tmp/$m.cc") >"$tmp/$m.cc.out" 2>&1
		check "$m: the backward's CPU check passes ($(grep -v '^ok' "$tmp/$m.cc.out" | head -1))" \
			sh -c "! grep -q '^not ok' '$tmp/$m.cc.out' && grep -q '^ok' '$tmp/$m.cc.out'"
	else
		ok "$m: nvcc compiles the group # skip no nvcc"
		ok "$m: the backward's CPU check passes # skip no nvcc"
	fi
done
