#!/bin/sh
# make demo: the main job on the bundled sample traces (recorded on an H200): analyze each,
# write the report, and print where to look: our NVTX samples, then real programs as users
# write them (no NVTX, models from libraries: transformers GPT-2 and Llama, torchvision
# ResNet-18, a JAX jit step, a CuPy loop); then the two ranks of samples/ddp_train.py
# (torchrun, 2x H200) as one job.
top=$(cd "$(dirname "$0")/.." && pwd)
A=$top/build/aicprof
out=$top/out/demo
status=0
for t in mlp_train attention_train chain gpt2_train llama_train resnet_train jax_train cupy_loop; do
	trace=$top/samples/traces/$t.aicp.jsonl
	echo "== $t ($(grep -c '"t":"kernel"' "$trace") kernels)"
	if ! "$A" analyze "$trace" -o "$out/$t"; then
		status=1
		continue
	fi
	[ -f "$out/$t/report.html" ] && echo "   report: $out/$t/report.html"
done
echo "== ddp_train: 2 ranks as one job"
if "$A" analyze "$top"/samples/traces/ddp_train.rank0.aicp.jsonl \
	"$top"/samples/traces/ddp_train.rank1.aicp.jsonl -o "$out/ddp_train"; then
	[ -f "$out/ddp_train/report.html" ] && echo "   report: $out/ddp_train/report.html"
else
	status=1
fi
exit $status
