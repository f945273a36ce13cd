#!/bin/sh
# The gated form on traces of two transformers models we did not write, recorded on the device
# under the shim (tests/gpu/gated_models.py train, 6 steps; gzip'd in tests/traces/): Qwen2's
# SwiGLU and Gemma's GeGLU (GELU's tanh form). analyze lists Qwen2MLP.forward and
# GemmaMLP.forward as "gated" with their activation classes (SiLUActivation, GELUTanh), four
# invocations a step, and apply_rotary_pos_emb as the rotary form (the package carries its
# kernel); their AdamW, which ran per parameter, is one optimizer candidate whose
# form is fused=True (not chains without a rule); fuse writes their groups with
# silu's fast forms (bf16 writes), GELU's tanh form and its fused backward, and prints a coverage
# of at least 90% (the elementwise and reduction findings' bytes with a generated kernel), with
# the rotary form's backward chains counted apart, and nvcc compiles each group's
# C ABI file where there is an nvcc. Prints TAP lines.
. "$(dirname "$0")/lib.sh"
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
	check "$m: functions has the rotary form of apply_rotary_pos_emb, 4 a step" \
		grep -qx "rotary apply_rotary_pos_emb 4 - -" "$tmp/$m.f"
	# their AdamW ran per parameter (lerp_, addcmul_, addcdiv_ kernels): one optimizer
	# candidate holds every one of them, with fused=True as its form, and no chain holds any
	python3 - "$tmp/$m/summary.json" >"$tmp/$m.o" 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n = {x["id"]: x for x in s["nodes"]}
opt = [i for i, x in n.items() if any(k in x["full_name"] for k in
       ("lerp_scalar_kernel", "addcmul_cuda_kernel", "addcdiv_cuda_kernel"))]
oc = [c for c in s["candidates"] if c["kind"] == "optimizer-horizontal"]
held = [c["id"] for c in s["candidates"] if c["kind"] != "optimizer-horizontal" and
        set(c["nodes"]) & set(opt)]
print(len(opt), len(oc), oc[0]["library_form"] if oc else "-",
      len(set(opt) - set(oc[0]["nodes"])) if oc else -1, len(held))
PY
	set -- $(cat "$tmp/$m.o")
	check "$m: one optimizer candidate (AdamW(fused=True)) holds the per-parameter step's kernels, no chain does (kernels $1, candidates $2, form $3, missing $4, in chains $5)" \
		test "$1" -gt 0 -a "$2" = 1 -a "$3" = "torch.optim.AdamW(fused=True)" -a "$4" = 0 -a "$5" = 0
	(cd "$tmp" && "$B/aicprof" fuse "$tmp/$m" -o "$tmp/$m-f" --src /nonexistent) >"$tmp/$m.fu" 2>&1
	cov=$(sed -n 's/^coverage  .*(\([0-9.]*\)%), have a generated kernel.*/\1/p' "$tmp/$m.fu")
	check "$m: fuse prints its coverage, at least 90% ($cov%)" \
		awk -v c="${cov:-0}" 'BEGIN { exit !(c >= 90) }'
	# rotate_half's backward chains (strided writes, no generated group) sit in
	# apply_rotary_pos_emb, which the package replaces forward and backward: counted apart
	pc=$(sed -n 's/^coverage  .*; 2 more sit in functions the package replaces with its own kernels, forward and backward (apply_rotary_pos_emb): [0-9]* of [0-9]*, .* (\([0-9.]*\)%)$/\1/p' "$tmp/$m.fu")
	check "$m: the coverage line counts the rotary form's two backward chains apart ($pc%, above $cov%)" \
		awk -v c="${cov:-0}" -v p="${pc:-0}" 'BEGIN { exit !(p > c && p <= 100) }'
	# a host-bound step (the GPU busy under half of it): fuse and the package's README say
	# what the kernels can give end to end, with the time model's own figures
	want=$(python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['time_model']
b, s = min(t['busy_us'], t['step_us']), t['step_us']
print('%.1f%% of the captured step (%.2f of %.2f ms' % (100 * b / s, b / 1000, s / 1000)
      if b < 0.5 * s else 'none')" "$tmp/$m/summary.json")
	check "$m: fuse says the step is host-bound, with the time model's busy share ($want)" \
		sh -c "test '$want' != none && grep -qF 'step      the GPU is busy $want' '$tmp/$m.fu' &&
		grep -qF '**What to expect end to end.** In the trace the GPU is busy $want' '$tmp/$m-f/README.md'"
	# the GPU's side: what the findings take off the busy time, from the summary's own
	# kernel_saved_us (GPU findings, not the report-only kinds, a shared node counted once),
	# never above the busy time;
	# the two expected pieces of text go to files for grep -F -f
	gw=$(python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
t = s['time_model']
b = min(t['busy_us'], t['step_us'])
skip = ('dead', 'invariant', 'memory', 'comm-overlap')
g, taken = [], set()
for c in s['candidates']:  # in order, one sharing a node with one taken skipped
    if c['kind'] in skip or c.get('time_kind') != 'gpu' or taken & set(c.get('nodes', [])):
        continue
    g.append(c)
    taken |= set(c.get('nodes', []))
a = min(sum(c['kernel_saved_us'] for c in g), b)
lib = min(sum(c['kernel_saved_us'] for c in g if c.get('library_form')), a)
open(sys.argv[2], 'w').write('own %.2f ms a step, the findings take off %.2f ms (%.0f%%;\\n' % (b / 1000, a / 1000, 100 * a / b))
open(sys.argv[3], 'w').write('the library forms %.2f ms)\\n' % (lib / 1000))
tm = lambda us: '%.2f ms' % (us / 1000) if us >= 1000 else '%.1f µs' % us
open(sys.argv[4], 'w').write('own %s a step, the findings take off %s (%.0f%%):\\n' % (tm(b), tm(a), 100 * a / b))
print('%.0f%%' % (100 * a / b) if a > 0 else 'none')" "$tmp/$m/summary.json" "$tmp/$m.gw1" "$tmp/$m.gw2" "$tmp/$m.gw3")
	check "$m: fuse and the README say what the findings take off the GPU's busy time ($gw)" \
		sh -c "test '$gw' != none && grep -qF -f '$tmp/$m.gw1' '$tmp/$m.fu' &&
		grep -qF -f '$tmp/$m.gw2' '$tmp/$m.fu' && grep -qF -f '$tmp/$m.gw1' '$tmp/$m-f/README.md'"
	"$B/aicprof" report "$tmp/$m" >/dev/null 2>&1
	check "$m: the report's lead gives the same share of the GPU's busy time ($gw)" \
		sh -c "test '$gw' != none && grep -qF -f '$tmp/$m.gw3' '$tmp/$m/report.html'"
	cp -r "$tmp/$m" "$tmp/$m-gb"
	python3 -c "
import json, sys
p = sys.argv[1] + '/summary.json'
j = json.load(open(p))
j['time_model']['busy_us'] = 0.6 * j['time_model']['step_us']
json.dump(j, open(p, 'w'))" "$tmp/$m-gb"
	(cd "$tmp" && "$B/aicprof" fuse "$tmp/$m-gb" -o "$tmp/$m-gbf" --src /nonexistent) >"$tmp/$m.gbfu" 2>&1
	check "$m: with the GPU busy 60% of the step, neither fuse nor the README says host-bound" \
		sh -c "grep -q '^coverage' '$tmp/$m.gbfu' && ! grep -q '^step ' '$tmp/$m.gbfu' &&
		! grep -q 'What to expect' '$tmp/$m-gbf/README.md'"
	check "$m: the package carries the rotary kernel (aicprof_fused/_rotary/)" \
		test -s "$tmp/$m-f/aicprof_fused/_rotary/aic_rotary.cu"
	check "$m: fuse advises the optimizer's fused form" \
		grep -q "optimizer-horizontal: use the library's fused form: torch.optim.AdamW(fused=True)" "$tmp/$m.fu"
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
