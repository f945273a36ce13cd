#!/bin/sh
# t-beyond.sh - golden tests of the analyses beyond fusion on the H200 sample traces: the
# attention sample's causal mask rebuilt every step is an invariant finding with its source
# line; the chain sample's per-step cudaMemset of `out` is a dead finding; the MLP sample's
# held memory over one step matches an independent replay of the trace's alloc/free records
# (tests/tools/mem-peak.py); the chain's per-step device-to-host copy is a host finding; the
# attention sample's planted never-read value is dead work.
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
	q "$AT" "abs(($I)[0]['time_saved_us_per_step']-sum(s['nodes'][n]['median_us'] for n in ($I)[0]['nodes']))<0.01 and ($I)[0]['evidence']['confirmed']==False"
check "attention: the attention candidate still holds" q "$AT" "sum(c['kind']=='attention' for c in C)==1"
check "attention: dropout is never invariant" \
	q "$AT" "not any(s['nodes'][n]['op']=='dropout' for c in C if c['kind']=='invariant' for n in c['nodes'])"

# The planted value: `_unused = attn.sum(dim=-1)` in the attention sample, computed and never read.
PL=$(grep -n '_unused = ' "$top/samples/attention_train.py" | cut -d: -f1)
P="[c for c in C if c['kind']=='dead' and c['sources']==['samples/attention_train.py:$PL']]"
check "attention: the planted never-read value (line $PL) is dead work" \
	q "$AT" "len($P)==1 and ($P)[0]['evidence']['verdict']=='dead' and s['nodes'][($P)[0]['nodes'][0]]['op']=='sum'"
check "attention: its value has no reader and it saves the sum's time" \
	q "$AT" "all(v['readers']==[] for v in ($P)[0]['evidence']['values']) and ($P)[0]['time_saved_us_per_step']==s['nodes'][($P)[0]['nodes'][0]]['median_us']>0"
check "attention: the loss mean read after the loop only looks dead (kept alive, saves nothing)" \
	q "$AT" "all(c['evidence']['verdict']!='dead' and c['time_saved_us_per_step']==0 for c in C if c['kind']=='dead' and c not in $P)"

D="[c for c in C if c['kind']=='dead' and s['nodes'][c['nodes'][0]]['kind']=='set']"
check "chain: the memset of out is dead (overwritten by sum_partials)" \
	q "$CH" "len($D)==1 and ($D)[0]['evidence']['values'][0]['readers']==[6] and s['nodes'][6]['name']=='sum_partials'"
check "chain: dead finding's bytes and time" \
	q "$CH" "($D)[0]['evidence']['values'][0]['bytes']==4 and ($D)[0]['time_saved_us_per_step']==s['nodes'][($D)[0]['nodes'][0]]['median_us']"
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
