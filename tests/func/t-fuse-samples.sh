#!/bin/sh
# The chain from trace to generated kernel on the H200 samples: analyze each sample trace, fuse
# its candidates, and check which generate and which end as advice (with the reason), that each
# generated kernel and its C ABI build with nvcc -arch=sm_90 into a shared library
# exporting what its header declares (the header also compiles as C), that its Python module
# parses, and that its CPU checks (the fused math, and the fused backward's, against an op-by-op
# double evaluation) pass.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
S=$top/samples/traces

fuse() { # fuse SAMPLE: analyze and fuse into $tmp/SAMPLE.{a,f}
	(cd "$top" && "$A" analyze -q --no-report "samples/traces/$1.aicp.jsonl" -o "$tmp/$1.a") &&
		"$A" fuse "$tmp/$1.a" -o "$tmp/$1.f" >"$tmp/$1.out" 2>&1
}
gen() { ls "$tmp/$1.f" | grep -v '\.' | sed 's/^c[0-9]*_//' | sort | tr '\n' ' '; }
# num SAMPLE EXPR: the number (summary.json "number", the report's #) of the first finding c
# for which the Python EXPR holds
num() { python3 -c "import json,sys; C=json.load(open(sys.argv[1]))['candidates']; print([c['number'] for c in C if $2][0])" "$tmp/$1.a/summary.json"; }
# every generated directory cN_ops is the group of finding #N
numbered() { python3 -c "
import json,os,sys; C=json.load(open(sys.argv[1]))['candidates']
names={c['group']['name']: c['number'] for c in C if c.get('group')}
d=[x for x in os.listdir(sys.argv[2]) if '.' not in x]
sys.exit(0 if d and all(names.get(x)==int(x[1:].split('_')[0]) for x in d) else 1)" "$tmp/$1.a/summary.json" "$tmp/$1.f"; }
grp() { echo "[c['group'] for c in s['candidates'] if c.get('group') and c['group']['name'].split('_',1)[1]=='$1'][0]"; }

fuse mlp_train
check "mlp_train: fuse exits 0" test $? = 0
check "mlp_train: generates gelu->dropout, dropout->add->mse, the dropout/gelu backward, layer norm->cast, mse backward->cast->dropout backward, cast->layer norm's dgamma and dbeta" \
	test "$(gen mlp_train)" = "cast_layer_norm_backward dropout_add_mse_loss dropout_backward_gelu_backward gelu_dropout layer_norm_cast mse_loss_backward_cast_dropout_backward "
check "mlp_train: each generated cN_ops is finding #N's group" numbered mlp_train
check "mlp_train: dropout's p read from the kernel's keep probability (0.9f)" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=$(grp gelu_dropout); d=[o for o in g['ops'] if o['op']=='dropout']
sys.exit(0 if [o['p'] for o in d]==[0.1] and g['ops'][0]['op']=='gelu' else 1)" "$tmp/mlp_train.a/summary.json"
check "mlp_train: layer norm rows x cols and eps from its N and eps" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=$(grp layer_norm_cast)
op=[o for o in g['ops'] if o['op']=='layer_norm'][0]
sys.exit(0 if (g['rows'],g['cols'])==(4096,1024) and abs(op['eps']-1e-5)<1e-12 and g['outputs'][0]['dtype']=='bf16' else 1)" "$tmp/mlp_train.a/summary.json"
check "mlp_train: the mask dropout writes is listed as unwritten (read by its backward)" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=$(grp gelu_dropout); sys.exit(0 if len(g['unwritten'])==1 and g['unwritten'][0]['readers'] else 1)" "$tmp/mlp_train.a/summary.json"
check "mlp_train: mse_loss backward's scale is 2/N, read after the legacy loop's data array" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=$(grp mse_loss_backward_cast_dropout_backward); op=[o for o in g['ops'] if o['op']=='scale'][0]
sys.exit(0 if abs(op['scalar'] - 2.0 / g['numel']) < 1e-15 else 1)" "$tmp/mlp_train.a/summary.json"
check "mlp_train: layer norm's dgamma and dbeta are a column group: M x N from GammaBetaBackward, mean and rstd per row, both sums written in parameter order" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=$(grp cast_layer_norm_backward)
ops=[o['op'] for o in g['ops']]
pr=[i for i in g['inputs'] if i.get('per_row')]
node={n['id']: n for n in s['nodes']}
gbb=[v['id'] for v in s['ledger']['values'] if 'GammaBeta' in (node.get(v['writer'], {}).get('name') or '')]
ok=(g['kind'], g['rows'], g['cols']) == ('column-reduction', 4096, 1024) and ops == ['cast', 'sub', 'mul', 'mul', 'col_sum', 'col_sum']
ok=ok and len(pr) == 2 and all(i['numel'] == 4096 for i in pr) and [o['value'] for o in g['outputs']] == sorted(gbb)[:2]
sys.exit(0 if ok else 1)" "$tmp/mlp_train.a/summary.json"
check "mlp_train: optimizer is advice with the fused AdamW" grep -q "finding #$(num mlp_train "c['kind']=='optimizer-horizontal'"): .*AdamW(fused=True)" "$tmp/mlp_train.out"

fuse attention_train
check "attention_train: fuse exits 0" test $? = 0
check "attention_train: the attention row group is advice with SDPA" \
	grep -q "finding #$(num attention_train "c['kind']=='attention'"): attention: .*scaled_dot_product_attention" "$tmp/attention_train.out"
check "attention_train: generates the dropout backward -> mul chain, masked_fill -> mul (the value after the closure's data), mul -> mul -> mul" \
	test "$(gen attention_train)" = "dropout_backward_mul masked_fill_mul mul_mul_mul "
check "attention_train: masked_fill's mask is bool, its value read from the trace" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=$(grp masked_fill_mul); op=g['ops'][0]; m=[i for i in g['inputs'] if i['name']==op['args'][1]][0]
sys.exit(0 if op['op']=='masked_fill' and 'value' in op and m['dtype']=='bool' else 1)" "$tmp/attention_train.a/summary.json"
check "attention_train: each generated cN_ops is finding #N's group" numbered attention_train

fuse chain
check "chain: fuse exits 0" test $? = 0
check "chain: nothing generated from user kernels" test "$(gen chain)" = ""
check "chain: the advice says their semantics are unknown" \
	grep -q "finding #$(num chain "c['kind']=='elementwise-chain'"): .*'scale') is a kernel of unknown semantics" "$tmp/chain.out"

fuse resnet_train
check "resnet_train: fuse exits 0" test $? = 0
check "resnet_train: generates the batch norm transforms, the residual adds, relu's backward after them, relu backward -> batch norm backward reduce, and the loss's bf16 log_softmax -> cast and cast -> its backward (ATen's warp kernels)" \
	test "$(gen resnet_train)" = "add_elementwise add_relu_backward batch_norm_elementwise batch_norm_elementwise cast_log_softmax_backward log_softmax_cast relu_backward_norm_backward "
check "resnet_train: each generated cN_ops is finding #N's group" numbered resnet_train
# the batch norm backward's per-channel sums (channels last: a column group of N*H*W rows and
# C columns): rows and cols from the kernel's reduction_size and stride, x (parameter 0, the
# tensor the forward's statistics read) minus the per-channel mean, dy (parameter 1) relu's
# backward, kept; sum_dy, sum_dy_xmu, grad_weight and grad_bias its first four writes
check "resnet_train: relu backward -> batch_norm_backward_reduce_channels_last is a column group: x - mean, col_sum(dy), col_sum(dy * (x - mean)), grad_weight = sum_dy_xmu * invstd, grad_bias = sum_dy, its writes in parameter order" python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
g=$(grp relu_backward_norm_backward)
c=[c for c in s['candidates'] if c.get('group') == g][0]
node={n['id']: n for n in s['nodes']}
V={v['id']: v for v in s['ledger']['values']}
ins={i['name']: i for i in g['inputs']}
O=[(o['op'], o['args'], o['out']) for o in g['ops']]
ok=(g['kind'], g['rows'], g['cols']) == ('column-reduction', 131072, 64)
ok=ok and [o[0] for o in O] == ['threshold_backward', 'cast', 'sub', 'mul', 'col_sum', 'col_sum', 'mul', 'cast']
dy=O[1][2]; x, mean = O[2][1]; invstd = O[6][1][1]
ok=ok and O[3][1] == [dy, O[2][2]] and O[4][1] == [dy] and O[5][1] == [O[3][2]]
ok=ok and O[6][1][0] == O[5][2] and O[7][1] == [O[4][2]] and g['ops'][7]['to'] == 'f32'
wn=lambda v: node.get(V[v]['writer'], {}).get('name') or ''
ok=ok and any('collect_statistics' in node[r]['name'] for r in V[ins[x]['value']]['readers'])
ok=ok and 'collect_statistics' in wn(ins[mean]['value']) and 'collect_statistics' in wn(ins[invstd]['value'])
ok=ok and ins[mean]['numel'] == 64 and ins[invstd]['numel'] == 64 and ins[mean]['value'] < ins[invstd]['value']
ok=ok and 'max_pool_backward' in wn(ins[O[0][1][1]]['value'])
red=sorted(v for v in V if V[v]['writer'] == c['nodes'][-1])
ok=ok and 'backward_reduce' in node[c['nodes'][-1]]['name'] and len(red) == 6
ok=ok and [o['value'] for o in g['outputs']] == red[:4] and [o['name'] for o in g['outputs']] == [O[4][2], O[5][2], O[6][2], O[7][2]]
ok=ok and [k['name'] for k in g['kept']] == [dy] and g['kept'][0]['dtype'] == 'bf16'
sys.exit(0 if ok else 1)" "$tmp/resnet_train.a/summary.json"

check "resnet_train: its int fills (semaphores) are refused by type, not as an unknown rule" python3 -c "
import json, sys
s = json.load(open('$tmp/resnet_train.a/summary.json'))
w = [c['group_why'] for c in s['candidates'] if 'FillFunctor<int>' in (c.get('group_why') or '')]
sys.exit(not (w and all('a fill of a type fusion does not store' in x for x in w)))"
# a fill's constant only where nothing outside the group writes into its buffer: Llama's
# rotate_half backward (zeros, a strided copy into half of them, then add) is refused
(cd "$top" && "$A" analyze -q --no-report samples/traces/llama_train.aicp.jsonl -o "$tmp/llama_train.a" &&
	"$A" fuse "$tmp/llama_train.a" -o "$tmp/llama_train.f") >/dev/null 2>&1
check "llama_train: the fill -> add chain of rotate_half's backward is refused: a copy outside the group overwrites half the fill" python3 -c "
import json, sys
s = json.load(open('$tmp/llama_train.a/summary.json'))
c = [c for c in s['candidates'] if c['key'].startswith('elementwise-chain|fill:bf16,fill:bf16,add')]
sys.exit(not (c and all(x['group'] is None and 'partly overwritten by node' in x['group_why'] and 'nor a slice: that copy is ATen' in x['group_why'] for x in c)))"
# ATen's strided loop (elementwise_kernel<..., gpu_kernel_impl[_nocast]<...>>) runs only where its
# TensorIterator is not contiguous. Where the trace kept its closure ("x": the Llama sample),
# each such member of a group was checked against its offset calculator (layouts_checked), and
# the candidates whose loops read through a transpose or a slice are refused naming the layout;
# a per-row value (RMSNorm's rsqrt of the row's mean square) becomes a per-row input of a chain
# with "cols". Where it did not (the
# older ResNet trace), no group holds a strided member without a broadcast input, and those
# are refused naming the loop. Args: sample, refusals without the layout, transpose or slice
# refusals, per-row refusals.
strided() { python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
node = {n['id']: n for n in s['nodes']}
reads = {}
for e in s['edges']:
    if e['value'] is not None:
        reads.setdefault(e['to'], set()).add(e['value'])
strided = lambda n: n['rule'] == 'torch-elementwise' and 'gpu_kernel_impl' in n['full_name']
bad = 0
refused = [0, 0, 0]
for c in s['candidates']:
    g = c.get('group')
    w = c.get('group_why') or ''
    if not g:
        refused[0] += \"is ATen's strided loop over tensors of one size\" in w
        refused[1] += 'through a transpose or a slice (sizes [' in w
        refused[2] += 'reads its operand' in w and 'once a row (sizes [' in w
        continue
    bc = {i['value'] for i in g['inputs'] if 'numel' in i}
    ms = [m for m in g.get('members', c['nodes']) if strided(node[m])]
    checked = g.get('layouts_checked', 0)
    bad += checked != len(ms) and any(not (reads.get(m, set()) & bc) for m in ms)
    bad += checked > len(ms)
want = [int(x) for x in sys.argv[2:5]]
print('# refused', refused, 'want', want, 'bad', bad)
sys.exit(0 if bad == 0 and refused == want else 1)" "$tmp/$1.a/summary.json" "$2" "$3" "$4"; }
check "llama_train: every strided member of a group was checked against its offset calculator; 1 refused through a transpose or a slice (rotate_half's neg, whose slice copy writes a strided view; the other 4 read through index maps), none for a per-row value (read once a row)" strided llama_train 0 1 0
# the index maps of Llama's rotary embedding, worked out by hand from the loops' decoded sizes
# and strides (bytes, fastest first; the refusals before index maps printed them): q * cos with
# q [64, 8, 256, 4] strides [2, 128, 1024, 262144] (bf16, [b, s, h, d] memory) and cos
# strides [4, 0, 256, 0] (f32 [s, d], broadcast over the heads and the batch); rotate_half(q) *
# sin with its own loop of [16384, 32]; their sum's loop reads that product at [4, 65536, 256,
# 524288], i.e. [b, h, s, d] memory; the transposing copies at the end read [b, s, h, d] as
# [b, h, s, d] (and back). A wrong composition of those layouts changes one of these maps.
check "llama_train: the rotary chains read q, k, cos, sin and the transposes through the index maps their loops' strides give" python3 -c "
import json, sys
s = json.load(open('$tmp/llama_train.a/summary.json'))
got = sorted(json.dumps([i['dtype'], i['numel'], i['map']], sort_keys=True) for c in s['candidates'] if c.get('group') for i in c['group']['inputs'] if 'map' in i)
m = lambda t, n, sz, st: json.dumps([t, n, {'offset': 0, 'sizes': sz, 'strides': st}], sort_keys=True)
want = sorted([m('bf16', 524288, [64, 256, 8, 4], [1, 512, 64, 131072])] * 2 +
              [m('f32', 16384, [16384, 32], [1, 0])] * 2 +
              [m('f32', 16384, [64, 8, 256, 4], [1, 0, 64, 0])] * 2 +
              [m('bf16', 524288, [64, 8, 256, 4], [1, 16384, 64, 131072])] * 2)
print('# maps', len(got))
sys.exit(0 if got == want else 1)"
# the maps come from the closure bytes, not from sizes: the trace with cos read transposed in
# the q * cos and k * cos loops (cos's byte strides [4, 0, 256, 0] -> [1024, 0, 4, 0] in every
# such closure) gives cos the transposed maps, sin's unchanged
python3 - "$top/samples/traces/llama_train.aicp.jsonl" "$tmp/mut.aicp.jsonl" <<'PY'
import sys
old = "040000000200000004000000000100008000000000000000000800000004000000010000000008000000040000000000"
new = "040000000200000000040000000100008000000000000000000800000004000004000000000008000000040000000000"
n = 0
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        i = line.find(old)
        while i >= 0:
            x = line.rfind('"x":"', 0, i)
            if x >= 0 and '"' not in line[x + 5:i] and (i - x - 5) % 2 == 0:
                line = line[:i] + new + line[i + len(old):]
                n += 1
            i = line.find(old, i + 1)
        out.write(line)
print("# closures changed:", n)
PY
(cd "$top" && "$A" analyze -q --no-report "$tmp/mut.aicp.jsonl" -o "$tmp/mut.a")
check "llama_train with cos's strides transposed in its loops' closures: cos's index maps follow ([256, 0, 1, 0] and [256, 1, 0]), sin's do not change" python3 -c "
import json, sys
s = json.load(open('$tmp/mut.a/summary.json'))
got = sorted(json.dumps([i['map']['sizes'], i['map']['strides']]) for c in s['candidates'] if c.get('group') for i in c['group']['inputs'] if 'map' in i and i['numel'] == 16384)
want = sorted(json.dumps(x) for x in [[[64, 256, 32], [256, 1, 0]], [[16384, 32], [1, 0]], [[64, 8, 256, 4], [256, 0, 1, 0]], [[64, 8, 256, 4], [1, 0, 64, 0]]])
print('# cos and sin maps', got)
sys.exit(0 if got == want else 1)"
check "llama_train: a group with index maps writes no CuPy form and no backward, its kernel reads through the map, its module returns the recorded 524288 elements flat, its CPU check's reference reads through the loops' own layouts (via)" sh -c "
	n=0
	for k in '$tmp'/llama_train.f/c*/c*_kernel.cu; do
		grep -q '_map_in[0-9]*(i + j)' \"\$k\" || continue
		d=\$(dirname \"\$k\"); g=\$(basename \"\$d\"); n=\$((n + 1))
		test ! -e \"\$d/\${g}_cupy.py\" -a ! -e \"\$d/\${g}_bwd_kernel.cu\" || exit 1
		grep -q '^_NUMEL = 524288' \"\$d/\$g.py\" || exit 1
		grep -q 'if (a.n != 524288L)' \"\$k\" || exit 1
		grep -q \"via the loops' layouts\" \"\$d/\${g}_cpucheck.cu\" || exit 1
	done
	test \$n = 4"
check "resnet_train: no group holds a member of ATen's strided loop without a broadcast input; one is refused, naming it" strided resnet_train 1 0 0
fuse vit_train
check "vit_train: fuse exits 0" test $? = 0
check "vit_train: timm ViT's layer norms of 192 columns generate, their weight and bias read as 192 elements though each lies in a 1,024-byte block of the caching allocator" python3 -c "
import json, sys
s = json.load(open('$tmp/vit_train.a/summary.json'))
gs = [c['group'] for c in s['candidates'] if c.get('group') and any(o['op'] in ('layer_norm', 'layer_norm_backward') for o in c['group']['ops'])]
ws = [i for g in gs for i in g['inputs'] if i.get('numel') and not i.get('per_row')]
print('# groups', len(gs), 'per-column inputs', [i['numel'] for i in ws])
sys.exit(0 if len(gs) >= 4 and ws and all(g['cols'] == 192 for g in gs) and all(i['numel'] == 192 for i in ws) else 1)"
# the cross-entropy of a classifier under autocast: ATen's softmax_warp_forward<BFloat16,
# BFloat16, float, 7, true, false> (is_log_softmax) and softmax_warp_backward<..., true, false>,
# their rows and columns from the kernels' int batch_size and element_count (32 x 100: both
# samples classify into 100 classes), the backward's operands by which one the forward wrote
for smp in vit_train resnet_train; do
	check "$smp: the loss's bf16 log_softmax -> cast and cast -> log_softmax backward generate from ATen's warp kernels, rows x cols from their parameters, dy the cast's and y the forward's bf16 result" python3 -c "
import json, sys
s = json.load(open('$tmp/$smp.a/summary.json'))
g = {c['group']['name'].split('_', 1)[1]: c['group'] for c in s['candidates'] if c.get('group')}
f, b = g.get('log_softmax_cast'), g.get('cast_log_softmax_backward')
ok = bool(f and b)
if ok:
    rc = (f['rows'], f['cols'])
    print('# rows x cols', rc, (b['rows'], b['cols']))
    ok = (rc == (b['rows'], b['cols']) and rc == (32, 100)
          and [o['op'] for o in f['ops']] == ['log_softmax', 'cast', 'cast'] and f['kept'][0]['dtype'] == 'bf16'
          and f['outputs'][0]['dtype'] == 'f32'
          and [o['op'] for o in b['ops']] == ['cast', 'log_softmax_backward']
          and b['ops'][1]['args'] == [b['ops'][0]['out'], b['inputs'][1]['name']]
          and b['inputs'][1]['value'] == f['kept'][0]['value'])
sys.exit(0 if ok else 1)"
done
check "llama_train: RMSNorm's 8 chains read rsqrt(mean(x * x)) once a row: chains of 512-element rows, one per_row input, their kernels index it at i / cols" python3 -c "
import json, glob, sys
s = json.load(open('$tmp/llama_train.a/summary.json'))
gs = [c['group'] for c in s['candidates'] if c.get('group') and c['group']['kind'] == 'elementwise-chain' and c['group'].get('cols')]
ok = len(gs) == 8 and all(g['cols'] == 512 and sum(bool(i.get('per_row')) for i in g['inputs']) == 1 and not any(i.get('per_row') and 'numel' in i for i in g['inputs']) for g in gs)
ks = [open(f).read() for g in gs for f in glob.glob('$tmp/llama_train.f/*/' + g['name'] + '_kernel.cu')]
sys.exit(0 if ok and len(ks) == 8 and all('const long row = i / a.cols;' in k and 'if (a.cols % v)' in k for k in ks) else 1)"
check "llama_train: rotate_half's neg -> copy (the slice's strided copy) is refused: its loop reads through a slice" python3 -c "
import json, sys
s = json.load(open('$tmp/llama_train.a/summary.json'))
c = [c for c in s['candidates'] if c['key'].startswith('elementwise-chain|neg:bf16,copy:bf16')]
sys.exit(not (c and all(x['group'] is None and 'through a transpose or a slice' in x['group_why'] for x in c)))"
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
	nok "nvcc not found (set CUDA_HOME): the generated kernels are not compiled"
else
	# the groups with index maps too: their CPU checks read the reference through an odometer
	maps=$(grep -l '_map_in[0-9]*(i + j)' "$tmp"/llama_train.f/c*/c*_kernel.cu | xargs -n1 dirname)
	sm=$(ls -d "$tmp"/resnet_train.f/c*softmax* "$tmp"/vit_train.f/c*softmax* 2>/dev/null)
	for gd in "$tmp"/mlp_train.f/c* "$tmp"/attention_train.f/c* "$tmp"/resnet_train.f/c*_relu_backward_norm_backward $maps $sm; do
		g=$(basename "$gd")
		(cd "$gd" && "$NVCC" -o cpucheck "${g}_cpucheck.cu" >c.log 2>&1 && ./cpucheck >c.out 2>&1; echo $? >c.rc
		 "$NVCC" -O1 -arch=sm_90 -shared -Xcompiler -fPIC -o "lib$g.so" "${g}_capi.cu" >s.log 2>&1; echo $? >s.rc
		 if [ -f "${g}_bwd_cpucheck.cu" ]; then
			"$NVCC" -o bwdcheck "${g}_bwd_cpucheck.cu" >b.log 2>&1 && ./bwdcheck >b.out 2>&1; echo $? >b.rc
		 fi) &
	done
	wait
	check "the softmax warp kernels' four groups of ResNet and ViT are among those compiled and checked ($(echo $sm | wc -w))" test "$(echo $sm | wc -w)" = 4
	for gd in "$tmp"/mlp_train.f/c* "$tmp"/attention_train.f/c* "$tmp"/resnet_train.f/c*_relu_backward_norm_backward $maps $sm; do
		g=$(basename "$gd")
		check "$g: CPU check of the fused math passes" test "$(cat "$gd/c.rc")" = 0
		check "$g: nvcc -arch=sm_90 builds the kernel, its backward and the C ABI into lib$g.so" \
			test "$(cat "$gd/s.rc")" = 0
		# every function the header declares is exported, with C linkage
		want=$(grep -o '^int [a-z0-9_]*_run(' "$gd/${g}_capi.h" | sed 's/^int //; s/($//' | sort | tr '\n' ' ')
		have=$(nm -D --defined-only "$gd/lib$g.so" 2>/dev/null | awk '{print $3}' | grep '_run$' | sort | tr '\n' ' ')
		check "$g: lib$g.so exports what the header declares ($want)" test -n "$want" -a "$want" = "$have"
		printf '#include "%s_capi.h"\nint (*f)(const void *const *, const long long *, void *const *, long long,\n\tunsigned long long, unsigned long long, int, int, int, void *) = %s_run;\n' \
			"$g" "$g" >"$gd/abi.c"
		check "$g: the header compiles as C and _run has the ABI the module's ctypes uses" \
			cc -std=c11 -Wall -Werror -c -o "$gd/abi.o" -I"$gd" "$gd/abi.c"
		check "$g: the module parses" python3 -m py_compile "$gd/$g.py"
		if [ -f "$gd/b.rc" ]; then
			check "$g: CPU check of the fused backward's math passes" test "$(cat "$gd/b.rc")" = 0
		fi
	done
	check "gelu_dropout has a fused backward; the backward groups of the samples have none" sh -c "
		grep -q '^_FUSED_BWD = True' '$tmp'/mlp_train.f/c*_gelu_dropout/c*_gelu_dropout.py &&
		grep -q '^_FUSED_BWD = False' '$tmp'/mlp_train.f/c*_dropout_backward_gelu_backward/c*_dropout_backward_gelu_backward.py &&
		grep -q '^HAS_BACKWARD = True' '$tmp'/mlp_train.f/c*_layer_norm_cast/c*_layer_norm_cast.py"
fi
