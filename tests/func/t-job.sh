# aicprof analyze of a whole job: synthetic DDP traces of 8 and 64 ranks from
# tests/tools/mkjob.py, with a planted straggler (extra kernels) and a planted exposed all-reduce
# (the last bucket's, after the backward pass). Every expected figure comes from the generator's
# expected.json, computed from the intervals it wrote, never typed here.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
G="$PY $top/tests/tools/mkjob.py"
# qs FILE: reads "description<TAB>expression" lines and prints one TAP line for each Python
# expression over summary `s`, its job `j` and the generator's expected figures `e` ($E)
qs() { $PY -c '
import json,sys
s=json.load(open(sys.argv[1])); j=s.get("job") or {}; e=json.load(open(sys.argv[2]))
near=lambda a,b,t=0.002: a is not None and abs(a-b)<=t+1e-6*abs(b)
for l in sys.stdin:
    if "\t" not in l: continue
    d,x=l.rstrip("\n").split("\t",1)
    try: r=eval(x)
    except Exception as ex: r=False; d+=" (%s: %s)"%(type(ex).__name__,ex)
    print(("ok - " if r else "not ok - ")+d)' "$1" "$E"; }
stat() { sed -n "s/.*job stats:.* $1 \([0-9.]*\).*/\1/p" "$2"; }

for n in 8 64; do
	D=$tmp/j$n
	$G -n $n -s 7 -o "$D" || nok "mkjob $n"
	E=$D/expected.json
	AICPROF_STATS=1 "$A" analyze "$D"/aicprof.rank*.aicp.jsonl -o "$D/out" 2>"$D/err"; rc=$?
	S=$D/out/summary.json
	check "$n ranks: analyze exits 0" test "$rc" = 0
	qs "$S" <<EOF
$n ranks: one summary with every rank	j['ranks']==$n and len(s['traces'])==$n and [t['rank'] for t in s['traces']]==list(range($n))
$n ranks: clock shared on one host	j['clock']['method']=='shared-host'
$n ranks: every collective matched on every rank	j['collectives_seen']==2*e['steps'] and j['collectives_matched']==j['collectives_seen']
$n ranks: the straggler is the slowest rank	j['slowest']['rank']==e['straggler']
$n ranks: its extra kernels, count and time as planted	j['slowest']['extra_kernels'][0]['name']=='extra_work' and j['slowest']['extra_kernels'][0]['count']==e['extra'] and near(j['slowest']['extra_kernels'][0]['extra_us'], e['extra_us'])
$n ranks: the straggler waits least	min(r['wait_us'] for r in j['per_rank'])==j['per_rank'][e['straggler']]['wait_us'] and j['slowest']['median_wait_us']>100
EOF
	for p in 0 1; do
		qs "$S" <<EOF
$n ranks: all-reduce $p duration, bus bandwidth	near(j['collectives'][$p]['duration_us'], e['positions'][$p]['duration_us']) and near(j['collectives'][$p]['busbw_gbs'], e['positions'][$p]['busbw_gbs'], 0.01)
$n ranks: all-reduce $p exposed and overlapped time	near(j['collectives'][$p]['exposed_us'], e['positions'][$p]['exposed_us']) and near(j['collectives'][$p]['overlapped_us'], e['positions'][$p]['overlapped_us'])
EOF
	done
	qs "$S" <<EOF
$n ranks: the planted all-reduce has no compute beside it	j['collectives'][1]['overlapped_us']==0 and j['collectives'][1]['exposed_us']>0
EOF
	C="[c for c in s['candidates'] if c['kind']=='comm-overlap']"
	qs "$S" <<EOF
$n ranks: comm-overlap candidates, the exposed all-reduce's first	(lambda c: len(c)>=1 and max(c,key=lambda x:x['time_saved_us_per_step'])['evidence']['pos']==1)($C)
$n ranks: time saved is the exposed time, at most the transfer	(lambda c: near(c['time_saved_us_per_step'], min(e['positions'][1]['exposed_us'], e['positions'][1]['duration_us'])))([c for c in $C if c['evidence']['pos']==1][0])
$n ranks: the advice names DDP's knobs	all('bucket_cap_mb' in c['library_form'] for c in $C)
$n ranks: early start from the graph's writer (bwd_l0 of the last bucket)	j['early_start'][1]['writer_name']=='bwd_l0' and j['early_start'][1]['slack_us']>100 and j['early_start'][1]['prev_end_us'] is not None
$n ranks: overlap per step	len(j['overlap_steps'])==e['steps'] and all(x['exposed_us']>0 for x in j['overlap_steps'])
EOF
	echo "# $n ranks: $(grep 'job stats' "$D/err")"
done

# an independent reading of the 64 traces (Python's json, no aicprof code) agrees
$PY "$top/tests/tools/jobcheck.py" "$tmp/j64/out/summary.json" "$tmp/j64"/aicprof.rank*.aicp.jsonl | sed 's/^\(not \)*ok - /&jobcheck 64: /'

# memory: the map is bounded by one rank, the reduce grows with the rank summaries only
m8=$(stat map_max_rss_kib "$tmp/j8/err"); m64=$(stat map_max_rss_kib "$tmp/j64/err")
r8=$(stat merge_rss_kib "$tmp/j8/err"); r64=$(stat merge_rss_kib "$tmp/j64/err")
echo "# map max RSS 8: $m8 KiB, 64: $m64 KiB; merge RSS 8: $r8 KiB, 64: $r64 KiB"
check "memory: a rank's map costs the same at 64 ranks (under 1.5x of 8)" test "$m64" -lt $((m8 * 3 / 2))
check "memory: the reduce of 64 ranks is under 2x that of 8 (not 8x)" test "$r64" -lt $((r8 * 2))

# the map and the reduce as separate commands give the same job view
D=$tmp/j8; E=$D/expected.json
for f in "$D"/aicprof.rank*.aicp.jsonl; do "$A" analyze -q --rank-summary "$f" -o "$D/map" || nok "map $f"; done
"$A" analyze -q --merge "$D"/map/rank-*[0-9].json -o "$D/red" --no-report; rc=$?
check "map/reduce: --merge exits 0" test "$rc" = 0
check "map/reduce: the same collectives and slowest rank as one analyze" $PY -c "
import json,sys
a=json.load(open('$D/out/summary.json'))['job']; b=json.load(open('$D/red/summary.json'))['job']
sys.exit(0 if a['collectives']==b['collectives'] and a['slowest']==b['slowest'] else 1)"
mkdir -p "$D/part"; cp "$D"/map/rank-1.json "$D"/map/rank-2.json "$D/part/"
"$A" analyze -q --merge "$D"/part/rank-1.json "$D"/part/rank-2.json -o "$D/red2" --no-report 2>"$D/err2"; rc=$?
check "map/reduce: a merge without the lowest rank's full summary is refused" test "$rc" != 0
check "map/reduce: ... naming the file it needs" grep -q "rank-1.summary.json" "$D/err2"

# traces without coll records (older shims): matched by the NCCL kernels' order, op from names
D=$tmp/nc; $G -n 8 -s 7 --no-coll -o "$D"; E=$D/expected.json
"$A" analyze -q --no-report "$D"/aicprof.rank*.aicp.jsonl -o "$D/out"; rc=$?
S=$D/out/summary.json
check "no coll records: analyze exits 0" test "$rc" = 0
qs "$S" <<EOF
no coll records: all-reduces matched by order, op and dtype from the kernel name	j['collectives_matched']==2*e['steps'] and j['collectives'][1]['op']=='AllReduce' and j['collectives'][1]['dtype']=='f32'
no coll records: exposed time still found, bandwidth unknown	near(j['collectives'][1]['exposed_us'], e['positions'][1]['exposed_us']) and j['collectives'][1]['busbw_gbs'] is None
EOF
$PY "$top/tests/tools/jobcheck.py" "$S" "$D"/aicprof.rank*.aicp.jsonl | sed 's/^\(not \)*ok - /&jobcheck no-coll: /'

# two hosts whose clocks differ: aligned by matching collectives, figures unchanged
D=$tmp/h2; $G -n 8 -s 7 --hosts 2 -o "$D"; E=$D/expected.json
"$A" analyze -q --no-report "$D"/aicprof.rank*.aicp.jsonl -o "$D/out"; rc=$?
S=$D/out/summary.json
check "two hosts: analyze exits 0" test "$rc" = 0
qs "$S" <<EOF
two hosts: clocks aligned by collectives	j['clock']['method']=='aligned-by-collectives' and j['hosts']==['node0','node1']
two hosts: each rank's offset as planted (within 1 us)	all(near(r['clock_offset_us'], o, 1.0) for r,o in zip(j['per_rank'], e['clock_offset_us'])) and min(e['clock_offset_us'])<-1000
two hosts: straggler and exposed all-reduce still found	j['slowest']['rank']==e['straggler'] and near(j['collectives'][1]['exposed_us'], e['positions'][1]['exposed_us'])
EOF

# a rank killed mid-run: its trace is cut short; analysed up to the cut, with a warning
D=$tmp/cut; $G -n 8 -s 7 --cut 3 -o "$D"; E=$D/expected.json
"$A" analyze --no-report "$D"/aicprof.rank*.aicp.jsonl -o "$D/out" 2>"$D/err"; rc=$?
S=$D/out/summary.json
check "cut rank: analyze exits 0" test "$rc" = 0
check "cut rank: a warning on stderr names the cut" grep -q "cut short" "$D/err"
qs "$S" <<EOF
cut rank: its trace is marked truncated, the others are not	[t['truncated'] for t in s['traces']]==[r==3 for r in range(8)] and j['per_rank'][3]['truncated']
cut rank: the straggler is still found	j['slowest']['rank']==e['straggler']
EOF

D=$tmp/cut0; $G -n 8 -s 7 --cut 0 -o "$D"; E=$D/expected.json
"$A" analyze -q --no-report "$D"/aicprof.rank*.aicp.jsonl -o "$D/out"; rc=$?
S=$D/out/summary.json
check "cut lowest rank: analyze exits 0" test "$rc" = 0
qs "$S" <<EOF
cut lowest rank: steps labelled by the lowest whole rank (transfer times as planted)	all(near(j['collectives'][p]['duration_us'], e['positions'][p]['duration_us']) for p in (0,1)) and j['collectives'][1]['overlapped_us']==0
EOF

# bad input: two traces of one rank; a malformed line in one rank
D=$tmp/j8
"$A" analyze -q "$D/aicprof.rank0.aicp.jsonl" "$D/aicprof.rank0.aicp.jsonl" -o "$tmp/dup" 2>"$tmp/dup.err"; rc=$?
check "duplicate rank: refused" test "$rc" != 0 -a ! -e "$tmp/dup/summary.json"
check "duplicate rank: the message says so" grep -q "both rank 0" "$tmp/dup.err"
mkdir -p "$tmp/bad"; cp "$D"/aicprof.rank*.aicp.jsonl "$tmp/bad/"
sed -i '40s/.*/{"t":"kernel",oops}/' "$tmp/bad/aicprof.rank2.aicp.jsonl"
"$A" analyze -q "$tmp/bad"/aicprof.rank*.aicp.jsonl -o "$tmp/bad/out" 2>"$tmp/bad.err"; rc=$?
check "bad rank trace: refused, nothing written" test "$rc" != 0 -a ! -e "$tmp/bad/out/summary.json"
check "bad rank trace: the error names file and line" grep -q "aicprof.rank2.aicp.jsonl:40" "$tmp/bad.err"

# the report of a job: its section, tables and charts; one Perfetto process per rank
R=$tmp/j8/out
check "report: the job section is on the page" grep -q '<section id="job">' "$R/report.html"
check "report: straggler, extra kernels, collectives and early-start tables" sh -c "grep -q 'id=\"job-ranks\"' '$R/report.html' && grep -q 'id=\"job-extra\"' '$R/report.html' && grep -q 'id=\"job-colls\"' '$R/report.html' && grep -q 'id=\"job-early\"' '$R/report.html'"
check "report: the overlap chart has one bar per step" test "$(grep -o '<text class="tick"[^>]*>step [0-9]*</text>' "$R/report.html" | wc -l)" = 7
check "report: a lane per rank and stream" test "$(grep -o '>rank [0-9]* · s[0-9]*<' "$R/report.html" | sort -u | wc -l)" = 16
check "perfetto: one process per rank, named by rank" $PY -c "
import json,sys
d=json.load(open('$R/trace.perfetto.json'))['traceEvents']
names=sorted(e['args']['name'] for e in d if e.get('ph')=='M' and e['name']=='process_name' and e['pid']>=1000000)
sys.exit(0 if names==sorted('rank %d (one step)'%r for r in range(8)) and sum(1 for e in d if e.get('ph')=='X' and e['pid']==1000005)>0 else 1)"
"$A" analyze -q "$tmp/j8/aicprof.rank0.aicp.jsonl" -o "$tmp/one"
check "report: one trace's page has no job section" sh -c "! grep -q 'id=\"job\"' '$tmp/one/report.html' && ! grep -q '\"job\"' '$tmp/one/summary.json'"

# golden: the two real rank traces of samples/ddp_train.py (2x H200, NCCL 2.28.9, rank 1 given
# 1.5x the sequence). Expected figures come from the traces themselves (tests/tools/jobcheck.py
# and the coll records), never typed here.
T0=$top/samples/traces/ddp_train.rank0.aicp.jsonl T1=$top/samples/traces/ddp_train.rank1.aicp.jsonl
D=$tmp/ddp
"$A" analyze -q "$T0" "$T1" -o "$D"; rc=$?
S=$D/summary.json
check "ddp traces: analyze exits 0" test "$rc" = 0
# all-reduce coll records per NVTX step of rank 0 (by seq), the count of the last step
ar=$($PY -c '
import json,sys
steps,st,ar=[],[],[]
for l in open(sys.argv[1]):
    r=json.loads(l)
    if r["t"]=="push": st.append(r)
    elif r["t"]=="pop" and st:
        p=st.pop()
        if str(p.get("text","")).startswith("step "): steps.append((p["seq"],r["seq"]))
    elif r["t"]=="coll" and r["op"]=="AllReduce": ar.append(r["seq"])
per=[sum(1 for q in ar if a<q<b) for a,b in sorted(steps)]
print(per[-1] if len(per)>2 and per[-1]==per[-2] else -1)' "$T0")
echo "# all-reduce coll records in rank 0's last steps: $ar"
echo "{}" >"$D/none.json"; E=$D/none.json
qs "$S" <<EOF2
ddp traces: the straggler is rank 1 (it computes most, waits least)	j['slowest']['rank']==1 and j['per_rank'][1]['compute_us']>j['per_rank'][0]['compute_us'] and j['per_rank'][1]['wait_us']<j['per_rank'][0]['wait_us']
ddp traces: the why names the same kernels running longer	j['slowest']['longer_us']>0 and 'longer' in j['slowest']['why'] and any(k['longer'] for k in j['slowest']['extra_kernels'])
ddp traces: step time from the NVTX steps, on both ranks alike	all(r['step_median_us']>1000 for r in j['per_rank']) and abs(j['per_rank'][0]['step_median_us']-j['per_rank'][1]['step_median_us'])<0.2*j['per_rank'][0]['step_median_us']
ddp traces: every collective matched	j['collectives_seen']>0 and j['collectives_matched']==j['collectives_seen']
ddp traces: all-reduces per step as in the traces' coll records ($ar)	$ar>0 and sum(1 for c in j['collectives'] if c['op']=='AllReduce')==$ar and j['collectives_per_step']==$ar
ddp traces: each collective with bytes, duration, bus bandwidth, wait, exposed, overlapped	all(c['bytes']>0 and c['duration_us']>0 and c['busbw_gbs']>0 and c['wait_us']>=0 and c['exposed_us']>=0 and c['overlapped_us']>=0 for c in j['collectives'])
ddp traces: the report's lanes, one per rank	sorted(l['rank'] for l in j['lanes'])==[0,1] and all(len(l['events'])>50 for l in j['lanes'])
EOF2
$PY "$top/tests/tools/jobcheck.py" "$S" "$T0" "$T1" >"$D/jc" 2>&1; rc=$?
sed 's/^\(not \)*ok - /&jobcheck ddp: /' "$D/jc"
check "ddp traces: jobcheck agrees (exit 0)" test "$rc" = 0
check "ddp traces: the report has a lane per rank" sh -c "grep -q '>rank 0 · s' '$D/report.html' && grep -q '>rank 1 · s' '$D/report.html'"
"$A" fuse "$D" -o "$D/fused" >"$D/fuse.out" 2>&1
nco=$($PY -c "import json;print(sum(1 for c in json.load(open('$S'))['candidates'] if c['kind']=='comm-overlap'))")
check "fuse: comm-overlap candidates ($nco) listed once, as not fusion" sh -c "test $nco -gt 1 && test \$(grep -c 'comm-overlap' '$D/fuse.out') = 1 && grep -q 'comm-overlap: not fusion ($nco candidates' '$D/fuse.out' && ! grep -q \"comm-overlap: use the library's fused form\" '$D/fuse.out'"

# ranks whose step windows closed at steps of their own (AICPROF_STEPS is on in a job of several
# ranks): rank 1's trace ends as the window ends it, after a whole step, two before the
# program's last (the program's records up to that step's end, the activity records of the
# launches kept, reason "steps"). The job view matches the collectives of the steady steps both
# traces hold, all of them, and counts rank 0's others as seen.
W=$tmp/win
mkdir -p "$W"
kept=$($PY - "$T1" "$W/r1.aicp.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
st, ends = [], []
for r in recs:
    if r["t"] == "push":
        st.append(r)
    elif r["t"] == "pop" and st:
        p = st.pop()
        if str(p.get("text", "")).startswith("step "):
            ends.append(r["seq"])
cut = ends[-3]
cmax = max(r["c"] for r in recs if "c" in r and r.get("seq", cut + 1) <= cut)
out = []
for r in recs:
    if r["t"] == "end":
        r["reason"] = "steps"
    elif "seq" in r and r["seq"] > cut:
        continue
    elif "seq" not in r and "c" in r and r["c"] > cmax:
        continue
    out.append(r)
open(sys.argv[2], "w").write("".join(json.dumps(r) + "\n" for r in out))
print(len(ends) - 2)
PY
)
"$A" analyze -q "$T0" "$W/r1.aicp.jsonl" -o "$W/out" >"$W/err" 2>&1; rc=$?
check "a rank stopped by its step window earlier: analyze exits 0 ($rc)" test "$rc" = 0
full=$($PY -c "import json;print(json.load(open('$S'))['job']['collectives_matched'])")
E=$D/none.json
qs "$W/out/summary.json" <<EOF2
a rank stopped after ${kept:-?} steps: the collectives of its steady steps all matched, fewer than the whole run's ($full), the rest seen	$kept>0 and j['collectives_matched']==($kept-s['steps']['warmup'])*j['collectives_per_step'] and 0<j['collectives_matched']<$full and j['collectives_seen']==$full
a rank stopped earlier: step times and per-collective figures as with both whole	all(r['step_median_us']>1000 for r in j['per_rank']) and all(c['duration_us']>0 and c['busbw_gbs']>0 for c in j['collectives'])
EOF2
