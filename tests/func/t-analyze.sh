# aicprof analyze on the small hand-written traces in tests/traces: steps, values, edges, ledger,
# candidates, rejected groups, and the errors for bad input. Every figure is checkable by hand
# against the trace (see the comments).
. "$(dirname "$0")/lib.sh"
T=$top/tests/traces
A=$B/aicprof
# q FILE EXPR: true when the Python expression over the summary `s` holds
q() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

"$A" analyze -q --no-report "$T/mlp-nvtx.aicp.jsonl" -o "$tmp/mlp"; rc=$?
S=$tmp/mlp/summary.json
check "mlp: analyze exits 0" test "$rc" = 0
check "mlp: --no-report writes only summary.json" test "$(ls "$tmp/mlp")" = summary.json
"$A" analyze -q "$T/mlp-nvtx.aicp.jsonl" -o "$tmp/mlp-r"
check "mlp: the report lands beside it, nothing else" test "$(ls "$tmp/mlp-r" | tr '\n' ' ')" = "graph.dot graph.svg report.html summary.json trace.perfetto.json "
check "mlp: 5 steps from NVTX 'step #'" q "$S" "s['steps']['count']==5 and s['steps']['how']=='nvtx' and s['steps']['range']=='step #'"
# step 0's layer_norm took 43 us instead of 3: the step (64.3 us) is an outlier, warm-up
check "mlp: one warm-up step" q "$S" "s['steps']['warmup']==1"
# 3+10+2+2.5+2.2+2.1 us of kernels and 5 gaps of 0.5 us
check "mlp: step median 24.3 us" q "$S" "abs(s['steps']['median_us']-24.3)<1e-6"
check "mlp: 6 nodes a step" q "$S" "s['steps']['period']==6 and len(s['nodes'])==6"
check "mlp: node stats skip warm-up" q "$S" "s['nodes'][0]['count']==4 and s['nodes'][0]['max_us']==3.0"
check "mlp: gelu, dropout, add, mul are elementwise" q "$S" "all(s['nodes'][i]['family']=='elementwise' for i in (2,3,4,5))"
check "mlp: gemm is a gemm" q "$S" "s['nodes'][1]['family']=='gemm'"
check "mlp: sources from sites" q "$S" "s['nodes'][2]['sources']==['train.py:12'] and s['nodes'][2]['site']['line']==12"
# step 0 carried cal flags; later steps reuse them by kernel name
check "mlp: edges say calibrated" q "$S" "any(e['from']==0 and e['to']==1 and e['how']=='calibrated' for e in s['edges'])"
check "mlp: stream-order edges kept" q "$S" "sum(e['how']=='stream-order' for e in s['edges'])==5"
# each node's 2048-byte output (dropout also writes a 1024-byte mask)
V="{v['writer']:v for v in s['ledger']['values'] if v['writer']>=0 and v['size']==2048}"
# gelu's output (2048 B) is read by dropout and, later, by the backward mul (saved for backward)
check "mlp: gelu output read by dropout and mul" q "$S" "($V)[2]['readers']==[3,5] and ($V)[2]['size']==2048"
check "mlp: dropout output is an intermediate" q "$S" "($V)[3]['intermediate'] and ($V)[3]['readers']==[4]"
check "mlp: add output is not" q "$S" "not ($V)[4]['intermediate']"
# intermediates: ln out 2048+2048, gemm out 2048+2048, gelu out 2048+2*2048, dropout out 2048+2048
check "mlp: round trip 18432 bytes a step" q "$S" "s['ledger']['per_step']['roundtrip_bytes']==18432"
C="[c for c in s['candidates'] if c['kind']=='elementwise-chain'][0]"
# the chain gelu -> dropout -> add grows into the region around it: mul reads gelu's output
# too, so with it in the group gelu's output is written nowhere
check "mlp: region gelu -> dropout -> add, with mul" q "$S" "($C)['nodes']==[2,3,4,5]"
check "mlp: gelu and dropout outputs removed, none kept" q "$S" "($C)['values_kept']==[] and ($C)['values_removed']==[($V)[2]['id'], ($V)[3]['id']]"
# removed: gelu out 2048 written + 2 x 2048 read, dropout out 2048 written + 2048 read
check "mlp: region saves 10240 bytes a step" q "$S" "($C)['bytes_saved_per_step']==10240"
check "mlp: region time: 8.8 us before, saved >0" q "$S" "abs(($C)['time_before_us']-8.8)<1e-6 and ($C)['time_saved_us_per_step']>0 and ($C)['time_after_us']>=2.0"
# the generated trace's dropout has an elementwise loop's parameters, no keep probability
check "mlp: no group without dropout's p, and why" q "$S" "($C)['group'] is None and 'keep probability' in ($C)['group_why']"
check "mlp: timeline of one step" q "$S" "len(s['timeline']['events'])==6 and s['timeline']['events'][0]['start_us']==0"
check "mlp: device peaks" q "$S" "s['device']['peak_bw_gbs']==4022.8 and s['device']['peak_tflops']['bf16']>900"

"$A" analyze -q "$T/reject-periodic.aicp.jsonl" -o "$tmp/rej"; rc=$?
S=$tmp/rej/summary.json
check "periodic: analyze exits 0" test "$rc" = 0
check "periodic: 4 steps of 5 kernels found without NVTX" q "$S" "s['steps']['how']=='periodic' and s['steps']['count']==4 and s['steps']['period']==5"
check "periodic: rejected at the unknown kernel" q "$S" "any(r['nodes']==[0,1] and 'unknown kernel' in r['reason'] for r in s['rejected'])"
check "periodic: rejected across streams" q "$S" "any(r['nodes']==[2,3] and 'cross-stream' in r['reason'] for r in s['rejected'])"
check "periodic: rejected on numel" q "$S" "any(r['nodes']==[3,4] and 'shape mismatch' in r['reason'] for r in s['rejected'])"
check "periodic: event edge from stream_wait" q "$S" "any(e['how']=='event' and e['from']==2 and e['to']==3 for e in s['edges'])"
check "periodic: no fusion candidate" q "$S" "[c for c in s['candidates'] if c['kind'] not in ('dead','invariant','memory')]==[]"

"$A" analyze -q "$T/mlp-nvtx.aicp.jsonl" "$T/reject-periodic.aicp.jsonl" -o "$tmp/two"; rc=$?
check "two traces: both listed, model of the first" q "$tmp/two/summary.json" "len(s['traces'])==2 and s['traces'][1]['steps']==4 and len(s['nodes'])==6"

"$A" analyze "$T/truncated.aicp.jsonl" -o "$tmp/cut" 2>"$tmp/err"; rc=$?
check "cut trace: exits 0" test "$rc" = 0
check "cut trace: warns about the last line" grep -q "truncated.aicp.jsonl:121: .*cut" "$tmp/err"
check "cut trace: marked truncated, steps before the cut kept" q "$tmp/cut/summary.json" "s['traces'][0]['truncated'] and 1<=s['steps']['count']<5"

"$A" analyze "$T/bad-noend.aicp.jsonl" -o "$tmp/bad" 2>"$tmp/err"; rc=$?
check "missing field: non-zero exit" test "$rc" != 0
check "missing field: names file, line and field" grep -q "bad-noend.aicp.jsonl:5: kernel record has no 'end'" "$tmp/err"
check "missing field: nothing written" test ! -e "$tmp/bad/summary.json"
"$A" analyze "$T/bad-json.aicp.jsonl" -o "$tmp/bad" 2>"$tmp/err"; rc=$?
check "bad JSON mid-file: error at line 3" sh -c "test $rc != 0 && grep -q 'bad-json.aicp.jsonl:3: not valid JSON' '$tmp/err'"
"$A" analyze "$T/format2.aicp.jsonl" -o "$tmp/bad" 2>"$tmp/err"; rc=$?
check "format 2 refused by name" sh -c "test $rc != 0 && grep -q 'format2.aicp.jsonl:1: trace format 2 is newer' '$tmp/err'"
: >"$tmp/empty.aicp.jsonl"
"$A" analyze "$tmp/empty.aicp.jsonl" -o "$tmp/bad" 2>"$tmp/err"; rc=$?
check "empty trace refused" sh -c "test $rc != 0 && grep -q 'no header' '$tmp/err'"
"$A" analyze "$tmp/none.aicp.jsonl" -o "$tmp/bad" 2>"$tmp/err"; rc=$?
check "missing file named" sh -c "test $rc != 0 && grep -q \"cannot open '$tmp/none.aicp.jsonl'\" '$tmp/err'"
head -c 3000 /dev/urandom >"$tmp/noise.aicp.jsonl"
"$A" analyze "$tmp/noise.aicp.jsonl" -o "$tmp/bad" 2>"$tmp/err"; rc=$?
check "random bytes: an error, not a crash" sh -c "test $rc = 1"
"$A" analyze 2>/dev/null; rc=$?
check "no trace: usage, exit 129" test "$rc" = 129
# the end line's reason and dropped records reach the summary and the report
check "mlp: end exit, 0 dropped" q "$tmp/mlp/summary.json" "s['traces'][0]['end']=='exit' and s['traces'][0]['dropped_records']==0"
sed 's/"reason":"exit","records":178,"dropped":{"records":0/"reason":"cap","records":178,"dropped":{"records":12/' \
	"$T/mlp-nvtx.aicp.jsonl" >"$tmp/capped.aicp.jsonl"
"$A" analyze -q "$tmp/capped.aicp.jsonl" -o "$tmp/capped"; rc=$?
check "window closed at the cap: analyze exits 0" test "$rc" = 0
check "window closed at the cap: end cap, 12 dropped" q "$tmp/capped/summary.json" \
	"s['traces'][0]['end']=='cap' and s['traces'][0]['dropped_records']==12 and not s['traces'][0]['truncated']"
check "window closed at the cap: the report says so" \
	sh -c "grep -q 'recording stopped at its window (near AICPROF_MAX_MB)' '$tmp/capped/report.html' && grep -q '12 records dropped' '$tmp/capped/report.html'"
# a capture range (AICPROF_CAPTURE=profiler-api): its lines are read, counted and reported
check "mlp: no capture range" q "$tmp/mlp/summary.json" "s['traces'][0]['capture_ranges']==0"
sed -e '1a {"t":"capture","ts":1,"on":true,"api":"cuProfilerStart"}' \
	-e '$i {"t":"capture","ts":2,"on":false,"api":"cuProfilerStop"}' \
	"$T/mlp-nvtx.aicp.jsonl" >"$tmp/capture.aicp.jsonl"
"$A" analyze -q "$tmp/capture.aicp.jsonl" -o "$tmp/capture"; rc=$?
check "capture range: analyze exits 0" test "$rc" = 0
check "capture range: no warning about its lines" q "$tmp/capture/summary.json" \
	"not any('capture' in w for w in (s['traces'][0].get('warnings') or []))"
check "capture range: one range in the summary" q "$tmp/capture/summary.json" "s['traces'][0]['capture_ranges']==1"
check "capture range: the report says so" grep -q 'recorded only between the program.s cudaProfilerStart' "$tmp/capture/report.html"
head -n 178 "$T/mlp-nvtx.aicp.jsonl" >"$tmp/noend.aicp.jsonl"
"$A" analyze -q --no-report "$tmp/noend.aicp.jsonl" -o "$tmp/noend"
check "no end line: end and dropped_records null" q "$tmp/noend/summary.json" \
	"s['traces'][0]['end'] is None and s['traces'][0]['dropped_records'] is None"
