# Golden tests: aicprof analyze on the traces recorded on the H200 (samples/traces). Every
# figure is checkable by hand: sizes follow from the sample programs' shapes, and the comments
# say which trace records give them.
. "$(dirname "$0")/lib.sh"
S=$top/samples/traces
A=$B/aicprof
q() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); N=s['nodes']; V=s['ledger']['values']; sys.exit(0 if ($2) else 1)" "$1"; }
# first node with op X (after node A): node ids by op, in step order
first() { echo "[n['id'] for n in N if n['op']=='$1' and n['id']>=${2:-0}][0]"; }
# the value node W wrote with SIZE bytes
val() { echo "[v for v in V if v['writer']==($1) and v['size']==$2][0]"; }
cand() { echo "[c for c in s['candidates'] if ($1) in c['nodes']][0]"; }

# --- MLP training (samples/mlp_train.py: batch 8, seq 512, d 1024, hidden 4096, bf16 autocast)
"$A" analyze -q "$S/mlp_train.aicp.jsonl" -o "$tmp/mlp"; rc=$?
M=$tmp/mlp/summary.json
check "mlp sample: analyze exits 0" test "$rc" = 0
# eight "step N" ranges; step 0 (allocator and cuBLAS warm-up) is warm-up, and in the recording
# of session 6 step 1 too (slower than the rest by the warm-up rule's margin)
check "mlp sample: 8 NVTX steps, 1 or 2 warm-up" q "$M" "s['steps']['count']==8 and s['steps']['how']=='nvtx' and 1 <= s['steps']['warmup'] <= 2"
check "mlp sample: 46 kernels, copies and sets a step" q "$M" "s['steps']['period']==46 and len(N)==46"
G=$(first gelu); D1=$(first dropout); D2=$(first dropout "$D1+1"); ADD=$(first add)
check "mlp sample: gelu, dropout, dropout, add in forward order" q "$M" "$G < $D1 < $D2 < $ADD"
# fc1's output after GELU: 8*512*4096 bf16 = 33554432 bytes, read only by dropout
check "mlp sample: gelu -> dropout intermediate, 32 MiB" q "$M" "$(val "$G" 33554432)['readers']==[$D1] and $(val "$G" 33554432)['intermediate']"
# fc2's output after dropout: 8*512*1024 bf16 = 8388608 bytes, read only by the residual add
check "mlp sample: dropout -> residual add intermediate, 8 MiB" q "$M" "$(val "$D2" 8388608)['readers']==[$ADD] and $(val "$D2" 8388608)['intermediate']"
# dropout's own output (32 MiB) is read by fc2 and again in backward: not an intermediate of the chain
check "mlp sample: dropout output saved for backward" q "$M" "len($(val "$D1" 33554432)['readers'])==2"
check "mlp sample: candidate gelu -> dropout saves 64 MiB a step" q "$M" "$(cand "$G")['nodes']==[$G,$D1] and $(cand "$G")['bytes_saved_per_step']==67108864"
# dropout -> add -> mse: the dropout output (8 MiB written + 8 MiB read) is removed; the add's
# f32 output (16 MiB) is kept, read again by mse's backward: only its re-read (16 MiB) is saved
check "mlp sample: candidate dropout -> add keeps the add output" q "$M" "$(cand "$D2")['nodes'][:2]==[$D2,$ADD] and len($(cand "$D2")['values_kept'])==1 and $(cand "$D2")['bytes_saved_per_step']==33554432"
check "mlp sample: optimizer foreach kernels -> fused AdamW" q "$M" "any(c['kind']=='optimizer-horizontal' and c['library_form']=='torch.optim.AdamW(fused=True)' for c in s['candidates'])"
check "mlp sample: round-trip share over half" q "$M" "s['ledger']['per_step']['roundtrip_share']>0.5"

# --- attention (samples/attention_train.py: scores = q @ k^T, * scale, masked_fill, softmax,
# dropout, @ v; 8 x 512 x 512 f32 scores = 8388608 bytes)
"$A" analyze -q "$S/attention_train.aicp.jsonl" -o "$tmp/att"; rc=$?
T=$tmp/att/summary.json
check "attention sample: analyze exits 0" test "$rc" = 0
C="[c for c in s['candidates'] if c['kind']=='attention'][0]"
check "attention sample: one attention candidate, SDPA" q "$T" "sum(c['kind']=='attention' for c in s['candidates'])==1 and ($C)['library_form']=='torch.nn.functional.scaled_dot_product_attention'"
check "attention sample: gemm ... softmax, dropout ... gemm" q "$T" "[N[i]['op'] for i in ($C)['nodes']]==['gemm','mul','copy','masked_fill','softmax','dropout','gemm']"
# removed: q@k^T, scaled, cloned, masked: 4 x (8 MiB written + 8 MiB read) = 64 MiB; kept: the
# softmax and dropout outputs, saved for backward, whose re-reads (2 x 8 MiB) are saved
check "attention sample: 4 values removed, 2 kept, 80 MiB a step" q "$T" "len(($C)['values_removed'])==4 and len(($C)['values_kept'])==2 and ($C)['bytes_saved_per_step']==83886080"
check "attention sample: softmax output kept (read by softmax backward)" q "$T" "any(N[r]['op']=='softmax_backward' for v in V if v['id'] in ($C)['values_kept'] for r in v['readers'])"

# --- plain CUDA C (samples/cuda/chain.cu: n = 16777216 floats, 64 MiB a tensor)
"$A" analyze -q "$S/chain.aicp.jsonl" -o "$tmp/chain"; rc=$?
K=$tmp/chain/summary.json
check "chain sample: analyze exits 0" test "$rc" = 0
# per step: 4 chain kernels, memset, sum_reduce, sum_partials, memcpy of the result
check "chain sample: 6 steps of 8 ops, 1 warm-up" q "$K" "s['steps']['count']==6 and s['steps']['period']==8 and s['steps']['warmup']==1"
check "chain sample: kernels read as (out, in) from their signatures" q "$K" "[(e['from'],e['to']) for e in s['edges'] if e['value'] is not None][:3]==[(0,1),(1,2),(2,3)]"
C="[c for c in s['candidates'] if c['kind']=='elementwise-chain'][0]"
check "chain sample: scale -> add_bias -> relu -> square" q "$K" "[N[i]['name'] for i in ($C)['nodes']]==['scale','add_bias','relu','square']"
# t0, t1, t2 are written and read once each: 3 x (64 MiB + 64 MiB)
check "chain sample: 3 intermediates removed, 384 MiB a step" q "$K" "len(($C)['values_removed'])==3 and ($C)['bytes_saved_per_step']==402653184"
check "chain sample: numel from n, dtype from float*" q "$K" "N[0]['numel']==16777216 and N[0]['dtype']=='f32'"
check "chain sample: user kernels get no group, and why" q "$K" "($C)['group'] is None and 'unknown semantics' in ($C)['group_why']"
check "chain sample: sum_reduce stops the chain (unknown kernel)" q "$K" "any('unknown kernel' in r['reason'] for r in s['rejected'])"

# inference against calibration (docs/accuracy.md): the MLP sample's probed pointers
AICPROF_ACCURACY=1 "$B/aicprof" analyze -q --no-report "$top/samples/traces/mlp_probe.aicp.jsonl" -o "$tmp/acc" 2>"$tmp/acc.log"
share=$(sed -n 's/^accuracy: .* (\([0-9.]*\)%)$/\1/p' "$tmp/acc.log")
check "mlp_probe: inferred writes agree with calibration for at least 95% of probed pointers ($share%)" \
	awk -v s="${share:-0}" 'BEGIN { exit !(s >= 95.0) }'
