#!/bin/sh
# t-beyond-frameworks.sh - golden tests on the JAX and CuPy sample traces recorded on an H200:
# JAX preallocates 75% of the device as one arena (one 112 GB allocation), so bytes must come
# from each launch (semantics.c: sem_launch_bound(); flow.c: the next pointer into the same
# allocation), not from the allocation: no value in jax_train's step is 1 GiB or more (the
# model's largest tensor is 512x4096 float32, 8 MiB) and XLA's fusions are named by their
# kinds. CuPy's ufuncs are read from their names (tanh, mul, add) and chained; CUB's
# reduction writes one partial per block and is not called dead.
. "$(dirname "$0")/lib.sh"
S=$top/samples/traces
A=$B/aicprof
q() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); C=s['candidates']; N=s['nodes']; V=s['ledger']['values']; sys.exit(0 if ($2) else 1)" "$1"; }

for t in jax_train cupy_loop; do
	"$A" analyze -q --no-report "$S/$t.aicp.jsonl" -o "$tmp/$t"
done
JX=$tmp/jax_train/summary.json CP=$tmp/cupy_loop/summary.json

check "jax: 8 steps found without NVTX, after XLA's compilation and autotuning" \
	q "$JX" "s['steps']['count']==8 and s['steps']['how']=='periodic' and s['steps']['prelude_ops']>1000"
check "jax: no value of 1 GiB or more" q "$JX" "all(max(v['size'],v['bytes_written']) < (1<<30) for v in V)"
check "jax: no dead finding of 1 GiB or more" \
	q "$JX" "all(c['bytes_saved_per_step'] < (1<<30) for c in C if c['kind']=='dead')"
check "jax: XLA loop fusions are elementwise, named xla_loop_*" \
	q "$JX" "any(n['family']=='elementwise' and n['op'].startswith('xla_loop_') for n in N) and not any(n['name'].startswith('loop_') and n['op']=='unknown' for n in N)"
check "cupy: tanh, mul, add read from the ufunc names, float32" \
	q "$CP" "{n['op'] for n in N if n['name'].startswith('cupy_')}=={'tanh','mul','add'} and all(n['dtype']=='f32' for n in N if n['name'].startswith('cupy_'))"
CH="[c for c in C if c['kind']=='elementwise-chain']"
check "cupy: 8 iterations found as steps; the step's chain holds tanh, mul and add in order" \
	q "$CP" "s['steps']['count']==8 and len($CH)==1 and all(['tanh','mul','add']==[N[i]['op'] for i in c['nodes'] if N[i]['op'] in ('tanh','mul','add')] for c in $CH)"
check "cupy: CUB's reductions are sums, not dead" \
	q "$CP" "all(N[i]['family']=='reduction' and N[i]['op']=='sum' for i in range(len(N)) if 'DeviceReduce' in N[i]['name']) and not any(c['kind']=='dead' and any('DeviceReduce' in N[i]['name'] for i in c['nodes']) for c in C)"
check "cupy: a partial buffer is one float per block" \
	q "$CP" "all(n['bytes_written']==n['grid'][0]*4 for n in N if 'DeviceReduceKernel' in n['name'])"

# XLA's lines: "xla" records (the shim's reading of XLA's optimized HLO, preload/xla.c) put a
# fusion's kernels at the line inside the jitted function; the user's line stays the call. A
# second module with the same fusion name (a jit of the init) must not win over the step's.
python3 - "$S/jax_train.aicp.jsonl" "$tmp/jx-lines.aicp.jsonl" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
lines = open(src).read().splitlines()
recs = [
    {"t": "xla", "mod": "jit_step", "name": "loop_multiply_tanh_fusion", "op": "jit(step)/jit(main)/tanh",
     "file": "samples/jax_train.py", "line": 21, "k": 1},
    {"t": "xla", "mod": "jit_step", "name": "loop_subtract_fusion", "op": "jit(step)/jit(main)/sub",
     "file": "samples/jax_train.py", "line": 23, "k": 1},
    {"t": "xla", "mod": "jit_init", "name": "loop_subtract_fusion", "op": "jit(init)/sub",
     "file": "samples/jax_train.py", "line": 99, "k": 1},
    {"t": "xla", "name": "", "file": "x.py", "line": 1},  # malformed: left out
    {"t": "xla", "name": "loop_add_fusion", "file": "x.py", "line": -3},  # malformed
]
with open(dst, "w") as f:
    for l in lines[:-1]:
        f.write(l + "\n")
    for r in recs:
        f.write(json.dumps(r) + "\n")
    f.write(lines[-1] + "\n")
PY
"$A" analyze -q --no-report "$tmp/jx-lines.aicp.jsonl" -o "$tmp/jx-lines"; rc=$?
XL=$tmp/jx-lines/summary.json
check "jax with xla records: analyze exits 0" test "$rc" = 0
check "jax: a fusion's model line is its HLO instruction's, its op XLA's op_name" \
	q "$XL" "all(n['model_site']['line']==21 and n['model_site']['func']=='tanh' and n['torch_op']=='jit(step)/jit(main)/tanh' for n in N if n['name']=='loop_multiply_tanh_fusion') and any(n['name']=='loop_multiply_tanh_fusion' for n in N)"
check "jax: the user's line stays the call of the jitted step" \
	q "$XL" "all(n['user_site']['line']==43 for n in N if n['name']=='loop_multiply_tanh_fusion')"
check "jax: a name in two modules is taken from the step's module" \
	q "$XL" "all(n['model_site']['line']==23 for n in N if n['name']=='loop_subtract_fusion') and any(n['name']=='loop_subtract_fusion' for n in N)"
check "jax: kernels without a record keep their frames' line" \
	q "$XL" "all(n['model_site']['line']==43 for n in N if n['name'].startswith('sm90_'))"
