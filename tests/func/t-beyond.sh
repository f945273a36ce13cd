#!/bin/sh
# t-beyond.sh - golden tests of the analyses beyond fusion on the H200 sample traces: the
# attention sample's causal mask rebuilt every step is an invariant finding with its source
# line; the chain sample's per-step cudaMemset of `out` is a dead finding; the MLP sample's
# held memory over one step matches an independent replay of the trace's alloc/free records
# (tests/tools/mem-peak.py); the chain's per-step device-to-host copy is a host finding; the
# attention sample's planted never-read value is dead work. Fingerprints: the probe records of
# tests/traces/attention-fp.aicp.jsonl (tests/tools/add-probes.py: equal for the mask's lines
# across steps, different for every other launch) confirm the mask chain; the same trace with
# every fingerprint different refutes it. Autograd's findings are not actionable. The MLP's
# 16 MiB fill at line 51 is verified dead, and the probe trace's foreach kernels are not dead.
. "$(dirname "$0")/lib.sh"
S=$top/samples/traces
A=$B/aicprof
q() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); C=s['candidates']; sys.exit(0 if ($2) else 1)" "$1"; }

for t in attention_train chain mlp_train; do
	"$A" analyze -q --no-report "$S/$t.aicp.jsonl" -o "$tmp/$t"
done
AT=$tmp/attention_train/summary.json CH=$tmp/chain/summary.json ML=$tmp/mlp_train/summary.json

I="[c for c in C if c['kind']=='invariant' and 'samples/attention_train.py:31' in c['sources']]"
check "attention: the tril mask chain is invariant, at line 31" q "$AT" "len($I)==1"
check "attention: fill, tril and ~mask are its nodes, kept value read by masked_fill" \
	q "$AT" "[s['nodes'][n]['op'] for n in ($I)[0]['nodes']]==['fill','tril','logical'] and all(any(s['nodes'][r]['op']=='masked_fill' for r in s['ledger']['values'][v]['readers']) for v in ($I)[0]['values_kept'])"
check "attention: invariant saves its nodes' time, unconfirmed" \
	q "$AT" "abs(($I)[0]['kernel_saved_us']-sum(s['nodes'][n]['median_us'] for n in ($I)[0]['nodes']))<0.01 and ($I)[0]['evidence']['confirmed']==False"
check "attention: the attention candidate still holds" q "$AT" "sum(c['kind']=='attention' for c in C)==1"
check "attention: dropout is never invariant" \
	q "$AT" "not any(s['nodes'][n]['op']=='dropout' for c in C if c['kind']=='invariant' for n in c['nodes'])"

# The planted value: `_unused = attn.sum(dim=-1)` in the attention sample, computed and never read.
PL=$(grep -n '_unused = ' "$top/samples/attention_train.py" | cut -d: -f1)
P="[c for c in C if c['kind']=='dead' and c['sources']==['samples/attention_train.py:$PL']]"
check "attention: the planted never-read value (line $PL) is dead work" \
	q "$AT" "len($P)==1 and ($P)[0]['evidence']['verdict']=='dead' and s['nodes'][($P)[0]['nodes'][0]]['op']=='sum'"
check "attention: its value has no reader and it saves the sum's time" \
	q "$AT" "all(v['readers']==[] for v in ($P)[0]['evidence']['values']) and ($P)[0]['kernel_saved_us']==s['nodes'][($P)[0]['nodes'][0]]['median_us']>0"
check "attention: the loss mean read after the loop only looks dead (kept alive, saves nothing)" \
	q "$AT" "all(c['evidence']['verdict']!='dead' and c['time_saved_us_per_step']==0 for c in C if c['kind']=='dead' and c not in $P)"

D="[c for c in C if c['kind']=='dead' and s['nodes'][c['nodes'][0]]['kind']=='set']"
check "chain: the memset of out is dead (overwritten by sum_partials)" \
	q "$CH" "len($D)==1 and ($D)[0]['evidence']['values'][0]['readers']==[6] and s['nodes'][6]['name']=='sum_partials'"
check "chain: dead finding's bytes and time" \
	q "$CH" "($D)[0]['evidence']['values'][0]['bytes']==4 and ($D)[0]['kernel_saved_us']==s['nodes'][($D)[0]['nodes'][0]]['median_us']"
check "chain: the sync DtoH copy each step is a host finding with a stall" \
	q "$CH" "any(c['kind']=='invariant' and c['evidence'].get('what')=='host-copy' and c['evidence']['copy_kind']=='DtoH' and c['evidence']['stall_us']>0 for c in C)"

exp=$(python3 "$top/tests/tools/mem-peak.py" "$S/mlp_train.aicp.jsonl" \
	"$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['memory']['step'])" "$ML")")
check "mlp: held bytes at step start and peak match the replayed trace ($exp)" \
	q "$ML" "'%d %d' % (s['memory']['held_at_start_bytes'], s['memory']['held_peak_any_bytes'])=='$exp'"
check "mlp: the ideal peak is positive and below what was held" \
	q "$ML" "0 < s['memory']['ideal_peak_bytes'] <= s['memory']['held_peak_any_bytes'] and len(s['memory']['curve'])==len(s['nodes'])"
check "mlp: one memory finding states the difference" \
	q "$ML" "[c['evidence']['excess_bytes'] for c in C if c['kind']=='memory']==[s['memory']['held_peak_bytes']-s['memory']['ideal_peak_bytes']]"

"$A" analyze -q "$S/attention_train.aicp.jsonl" -o "$tmp/att-report"
check "report: the beyond section with its tables and the live-bytes plot" sh -c \
	"grep -q 'id=\"beyond\"' '$tmp/att-report/report.html' && grep -q 'id=\"beyond-invariant\"' '$tmp/att-report/report.html' && grep -q '<svg class=\"memplot\"' '$tmp/att-report/report.html'"
check "report: the mask's source line is in the invariant table" sh -c \
	"sed -n '/id=\"beyond-invariant\"/,/<\/table>/p' '$tmp/att-report/report.html' | grep -q 'samples/attention_train.py:31'"

# --- confirmation by the shim's calibration fingerprints (probe records)
T=$top/tests/traces
python3 "$top/tests/tools/add-probes.py" "$S/attention_probe.aicp.jsonl" "$tmp/fp-same.jsonl" \
	--same samples/attention_train.py:31,samples/attention_train.py:32
check "fingerprints: the committed trace is what add-probes.py makes" cmp -s "$tmp/fp-same.jsonl" "$T/attention-fp.aicp.jsonl"
python3 "$top/tests/tools/add-probes.py" "$S/attention_probe.aicp.jsonl" "$tmp/fp-differ.jsonl"
"$A" analyze -q --no-report "$T/attention-fp.aicp.jsonl" -o "$tmp/fp-same"
"$A" analyze -q --no-report "$tmp/fp-differ.jsonl" -o "$tmp/fp-differ"
grep -v '"t":"probe"' "$S/attention_probe.aicp.jsonl" >"$tmp/fp-none.jsonl"
"$A" analyze -q --no-report "$tmp/fp-none.jsonl" -o "$tmp/fp-none"
"$A" analyze -q --no-report "$S/attention_probe.aicp.jsonl" -o "$tmp/fp-real"
M="[c for c in C if c['kind']=='invariant' and 'samples/attention_train.py:31' in c['sources']]"
check "fingerprints: equal across two steps confirm the mask chain" \
	q "$tmp/fp-same/summary.json" "len($M)==1 and ($M)[0]['evidence']['confirmed'] is True and ($M)[0]['evidence']['refuted'] is False and all(f['verdict']=='equal' and f['steps']>=2 for f in ($M)[0]['evidence']['fingerprints']) and ($M)[0]['kernel_saved_us']>0"
check "fingerprints: the H200 probe trace's own fingerprints confirm the mask chain" \
	q "$tmp/fp-real/summary.json" "len($M)==1 and ($M)[0]['evidence']['confirmed'] is True and all(f['verdict']=='equal' and f['steps']>=2 for f in ($M)[0]['evidence']['fingerprints'])"
check "fingerprints: the H200 trace refutes no invariant" \
	q "$tmp/fp-real/summary.json" "all(not c['evidence'].get('refuted') for c in C if c['kind']=='invariant')"
check "fingerprints: different in two steps refute it (kept, marked, saves nothing)" \
	q "$tmp/fp-differ/summary.json" "len($M)==1 and ($M)[0]['evidence']['confirmed'] is False and ($M)[0]['evidence']['refuted'] is True and ($M)[0]['time_saved_us_per_step']==0 and ($M)[0]['evidence']['time_us']>0 and 'REFUTED' in ($M)[0]['why']"
check "fingerprints: none in the trace leave it unconfirmed, as before" \
	q "$tmp/fp-none/summary.json" "len($M)==1 and ($M)[0]['evidence']['confirmed'] is False and ($M)[0]['evidence']['refuted'] is False and ($M)[0]['evidence']['confirmation'].startswith('unconfirmed') and ($M)[0]['kernel_saved_us']>0"
check "fingerprints: the rest of the analysis is the same with and without probe records" \
	python3 -c "import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); k=lambda s:sorted((c['kind'],c['nodes']) for c in s['candidates']); sys.exit(0 if k(a)==k(b) and a['nodes']==b['nodes'] and a['ledger']==b['ledger'] else 1)" \
	"$tmp/fp-same/summary.json" "$tmp/fp-none/summary.json"
sed '18s/"fp":\["0x[0-9a-f]*"/"fp":["zz"/' "$T/attention-fp.aicp.jsonl" >"$tmp/fp-bad.jsonl"
check "fingerprints: a bad probe record is an error naming file and line" sh -c \
	"! '$A' analyze -q --no-report '$tmp/fp-bad.jsonl' -o '$tmp/fp-bad' 2>'$tmp/fp-bad.err' && grep -q 'fp-bad.jsonl:[0-9]*:.*probe record' '$tmp/fp-bad.err'"

# --- autograd: backward()'s seed gradient (a fill of ones, then a mul) every step is real,
# but the user cannot hoist it from their source: marked, saves 0 us, ranks below the mask
G="[c for c in C if c['kind']=='invariant' and c['sources']==['samples/attention_train.py:62']]"
check "autograd: the loss.backward() invariant is marked not actionable and saves 0 us" \
	q "$AT" "len($G)==1 and ($G)[0]['evidence']['actionable'] is False and ($G)[0]['time_saved_us_per_step']==0 and ($G)[0]['evidence']['time_us']>0 and 'inside autograd' in ($G)[0]['why']"
check "autograd: the mask (forward, the user's line) stays actionable and ranks above it" \
	q "$AT" "($I)[0]['evidence']['actionable'] is True and ($I)[0]['kernel_saved_us']>($G)[0]['kernel_saved_us']"

# --- MLP line 51 (loss.backward()): checked by hand against mlp_train.aicp.jsonl: node 17 is a
# FillFunctor<float> of 16 MiB (8x512x1024 fp32) into a fresh allocation; the next launch, the
# mse_backward elementwise kernel (node 18, its TensorIterator output first in the data array),
# writes the whole allocation and reads only the loss gradient, the output and the target.
# ATen's mse_loss_backward makes grad_input with zeros_like and then overwrites it: the fill is
# truly dead, launched by autograd (inh), so it is marked not actionable.
for t in mlp_train mlp_probe; do
	[ -d "$tmp/$t" ] || "$A" analyze -q --no-report "$S/$t.aicp.jsonl" -o "$tmp/$t"
	F="[c for c in C if c['kind']=='dead' and c['sources']==['samples/mlp_train.py:51'] and s['nodes'][c['nodes'][0]]['op']=='fill']"
	check "mlp ($t): the 16 MiB zeros_like fill at line 51 is dead, overwritten whole by mse_backward" \
		q "$tmp/$t/summary.json" "len($F)==1 and ($F)[0]['evidence']['verdict']=='dead' and [v['bytes'] for v in ($F)[0]['evidence']['values']]==[16777216] and 'mse_backward' in s['nodes'][($F)[0]['nodes'][0]+1]['name'] and not any(v['buffer']==($F)[0]['evidence']['values'][0]['buffer'] and ($F)[0]['nodes'][0]+1 in v['readers'] for v in s['ledger']['values'])"
	check "mlp ($t): it is inside autograd: not actionable, saves 0 us" \
		q "$tmp/$t/summary.json" "($F)[0]['evidence']['actionable'] is False and ($F)[0]['time_saved_us_per_step']==0"
done

# --- the probe trace's foreach optimizer kernels (in-place div_/add_ on sqrt's output) were
# dead when calibration made a changed allocation write-only; a calibrated write on an
# allocation the other rules read is a read and a write
check "mlp_probe: no foreach optimizer kernel is dead work" \
	q "$tmp/mlp_probe/summary.json" "not any(c['kind']=='dead' and 'multi_tensor_apply' in s['nodes'][n]['name'] for c in C for n in c['nodes'])"
check "attention_probe: nor there; the planted sum is still dead" \
	q "$tmp/fp-none/summary.json" "not any(c['kind']=='dead' and 'multi_tensor_apply' in s['nodes'][n]['name'] for c in C for n in c['nodes']) and any(c['kind']=='dead' and c['sources']==['samples/attention_train.py:$PL'] for c in C)"
check "report: beyond rows carry their shared rank; autograd's finding says so" sh -c \
	"sed -n '/id=\"beyond-invariant\"/,/<\/table>/p' '$tmp/att-report/report.html' | grep -q 'href=\"#cand-[0-9]*\">#[0-9]*</a>.*inside autograd: not actionable'"
check "report: the memory section lists the fusion findings that free memory at the peak, or says none does" \
	python3 -c "
import json, re, sys
s = json.load(open(sys.argv[1])); h = open(sys.argv[2]).read()
n = sum(c['kind'] not in ('dead', 'invariant', 'memory') for c in s['candidates'])
freeing = sum(1 for f in s['memory'].get('freed_by_candidate', []) if f.get('bytes', 0) > 0)
t = re.search(r'id=\"beyond-frees\".*?(</table>|</p>)', h, re.S)
ok = n > 0 and t is not None and (t.group(0).count('<tr><td') == freeing if freeing else
                                  ('None of the %d fusion findings' % n) in t.group(0))
sys.exit(0 if ok else 1)" \
	"$tmp/att-report/summary.json" "$tmp/att-report/report.html"
