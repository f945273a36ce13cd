#!/bin/sh
# The chain from trace to generated kernel on the H200 samples: analyze each sample trace, fuse
# its candidates, and check which generate and which end as advice (with the reason), that each
# generated kernel compiles with nvcc -arch=sm_90 -c, and that its CPU check (the fused math
# against an op-by-op double evaluation) passes.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
S=$top/samples/traces
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || NVCC=$(command -v nvcc)

fuse() { # fuse SAMPLE: analyze and fuse into $tmp/SAMPLE.{a,f}
	(cd "$top" && "$A" analyze -q --no-report "samples/traces/$1.aicp.jsonl" -o "$tmp/$1.a") &&
		"$A" fuse "$tmp/$1.a" -o "$tmp/$1.f" >"$tmp/$1.out" 2>&1
}
gen() { ls "$tmp/$1.f" | grep -v '\.' | tr '\n' ' '; }

fuse mlp_train
check "mlp_train: fuse exits 0" test $? = 0
check "mlp_train: generates gelu->dropout, dropout->add->mse, the dropout/gelu backward, layer norm->cast" \
	test "$(gen mlp_train)" = "c0_gelu_dropout c1_dropout_add_mse_loss c3_dropout_backward_gelu_backward c4_layer_norm_cast "
check "mlp_train: dropout's p read from the kernel's keep probability (0.9f)" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=s['candidates'][0]['group']; d=[o for o in g['ops'] if o['op']=='dropout']
sys.exit(0 if [o['p'] for o in d]==[0.1] and g['ops'][0]['op']=='gelu' else 1)" "$tmp/mlp_train.a/summary.json"
check "mlp_train: layer norm rows x cols and eps from its N and eps" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=[c['group'] for c in s['candidates'] if c['group'] and c['group']['name']=='c4_layer_norm_cast'][0]
op=[o for o in g['ops'] if o['op']=='layer_norm'][0]
sys.exit(0 if (g['rows'],g['cols'])==(4096,1024) and abs(op['eps']-1e-5)<1e-12 and g['outputs'][0]['dtype']=='bf16' else 1)" "$tmp/mlp_train.a/summary.json"
check "mlp_train: the mask dropout writes is listed as unwritten (read by its backward)" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=s['candidates'][0]['group']; sys.exit(0 if len(g['unwritten'])==1 and g['unwritten'][0]['readers'] else 1)" "$tmp/mlp_train.a/summary.json"
check "mlp_train: mse_loss backward is advice with its reason" grep -q "candidate 2: .*mse_loss backward's scale" "$tmp/mlp_train.out"
check "mlp_train: layer norm backward is advice" grep -q "candidate 5: .*no backward of a row reduction" "$tmp/mlp_train.out"
check "mlp_train: optimizer is advice with the fused AdamW" grep -q "candidate 6: .*AdamW(fused=True)" "$tmp/mlp_train.out"

fuse attention_train
check "attention_train: fuse exits 0" test $? = 0
check "attention_train: the attention row group is advice with SDPA" \
	grep -q "candidate 0: attention: .*scaled_dot_product_attention" "$tmp/attention_train.out"
check "attention_train: generates the dropout backward -> mul chain" test "$(gen attention_train)" = "c3_dropout_backward_mul "

fuse chain
check "chain: fuse exits 0" test $? = 0
check "chain: nothing generated from user kernels" test "$(gen chain)" = ""
check "chain: the advice says their semantics are unknown" \
	grep -q "candidate 0: .*'scale') is a kernel of unknown semantics" "$tmp/chain.out"

if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
	nok "nvcc not found (set CUDA_HOME): the generated kernels are not compiled"
else
	for gd in "$tmp"/mlp_train.f/c* "$tmp"/attention_train.f/c*; do
		g=$(basename "$gd")
		(cd "$gd" && "$NVCC" -arch=sm_90 -c -o k.o "${g}_kernel.cu" >k.log 2>&1; echo $? >k.rc;
		 "$NVCC" -o cpucheck "${g}_cpucheck.cu" >c.log 2>&1 && ./cpucheck >c.out 2>&1; echo $? >c.rc) &
	done
	wait
	for gd in "$tmp"/mlp_train.f/c* "$tmp"/attention_train.f/c*; do
		g=$(basename "$gd")
		check "$g: nvcc -arch=sm_90 -c of the kernel" test "$(cat "$gd/k.rc")" = 0
		check "$g: CPU check of the fused math passes" test "$(cat "$gd/c.rc")" = 0
	done
fi
