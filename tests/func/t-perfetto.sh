# trace.perfetto.json: the whole run in the Chrome trace event format (tests/tools/tevent-check.py
# checks the format ui.perfetto.dev loads) on every sample trace and the DDP pair as a job;
# it holds every step, every kernel/copy/memset of the trace, its NVTX ranges, host API calls and
# flow arrows writer -> reader; a run over the event cap says what it dropped, in the metadata
# and in one line on stderr; slices that overlap on one stream without nesting get a lane of
# their own. The checker itself fails on broken files.
. "$(dirname "$0")/lib.sh"
# V [--expect K=N ...] FILE: the checker, its problems on stderr (TAP keeps stdout)
V() { python3 "$top/tests/tools/tevent-check.py" "$@" >&2; }
S=$top/samples/traces
# facts FILE SUMMARY TRACE: "steps kernels gpu nvtx host flows steps_summary kernels_trace
# nvtx_trace edges" for the comparisons below
facts() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
s = json.load(open(sys.argv[2]))
names = {(e["pid"]): e["args"]["name"] for e in d if e["ph"] == "M" and e["name"] == "process_name"}
def n(proc, cat=None):
    return sum(1 for e in d if e["ph"] == "X" and names.get(e["pid"], "").endswith(": " + proc)
               and (cat is None or e.get("cat") == cat))
kernels_trace = nvtx_trace = 0
for line in open(sys.argv[3]):
    kernels_trace += line.startswith('{"t":"kernel"') or line.startswith('{"t":"copy"') or line.startswith('{"t":"set"')
    nvtx_trace += line.startswith('{"t":"push"') or line.startswith('{"t":"range_start"')
tl = {e["node"] for e in s["timeline"]["events"]}
edges = sum(1 for e in s["edges"] if e["from"] in tl and e["to"] in tl and e["from"] != e["to"])
flows = sum(1 for e in d if e["ph"] == "s")
print(n("steps", "step"), n("GPU"), n("NVTX"), n("host"), flows, s["steps"]["count"],
      kernels_trace, nvtx_trace, edges)
PY
}
for f in "$S"/*.aicp.jsonl; do
	n=$(basename "$f" .aicp.jsonl)
	"$B/aicprof" analyze "$f" -o "$tmp/$n" >/dev/null 2>"$tmp/$n.err"
	P=$tmp/$n/trace.perfetto.json
	check "$n: the export is valid trace event JSON with slices and flows" \
		V --expect X=1 --expect s=1 --expect f=1 --expect pid-names=4 "$P"
	set -- $(facts "$P" "$tmp/$n/summary.json" "$f")
	check "$n: one slice per step on the steps track ($1 of $6)" test "$1" = "$6" -a "$1" -gt 0
	check "$n: every kernel, copy and memset of the trace ($2 of $7)" test "$2" = "$7"
	check "$n: the NVTX ranges ($3 of $8 opened)" test "$3" -le "$8" -a \( "$3" -gt 0 -o "$8" = 0 \)
	check "$n: host API calls on thread tracks ($4)" test "$4" -gt 0
	check "$n: flows writer -> reader, at most one a pair a step ($5, $9 edges x $6 steps)" \
		test "$5" -gt 0 -a "$5" -le $(($9 * $6))
	check "$n: nothing dropped, nothing said" test "$(grep -c "trace.perfetto.json: " "$tmp/$n.err")" = 0
done
check "mlp_train: the arrows are in every step like the representative one, not in one only" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))['traceEvents']
steps = [(e['ts'], e['ts'] + e['dur']) for e in d if e['ph'] == 'X' and e.get('cat') == 'step']
hit = {i for e in d if e['ph'] == 's' for i, (a, b) in enumerate(steps) if a <= e['ts'] <= b}
sys.exit(0 if len(hit) >= len(steps) - 1 >= 2 else 1)" "$tmp/mlp_train/trace.perfetto.json"

"$B/aicprof" analyze "$S/ddp_train.rank0.aicp.jsonl" "$S/ddp_train.rank1.aicp.jsonl" -o "$tmp/job" \
	>/dev/null 2>&1
check "the DDP job's export is valid, with the run and one process per rank" \
	V --expect X=1 --expect s=1 --expect pid-names=6 "$tmp/job/trace.perfetto.json"

# over the cap: 60,000 kernels make ~125,000 events
G=$B/tools/gen-trace
check "gen-trace is built (make tools)" test -x "$G"
"$G" -n 60000 >"$tmp/big.aicp.jsonl"
"$B/aicprof" analyze "$tmp/big.aicp.jsonl" -o "$tmp/big" >/dev/null 2>"$tmp/big.err"
check "a run over the cap still gives a valid export" V --expect X=90000 "$tmp/big/trace.perfetto.json"
check "over the cap: one line on stderr says what was dropped" \
	test "$(grep -c 'trace.perfetto.json: the run has more than 100000 events: dropped' "$tmp/big.err")" = 1
check "over the cap: the metadata says it too, and the export holds the cap" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
m = d['metadata']['dropped']
x = sum(1 for e in d['traceEvents'] if e['ph'] == 'X' and e.get('cat') != 'step')
sys.exit(not (m['cap'] == 100000 and m['gpu'] > 0 and m['host'] > 0 and x == 100000))
" "$tmp/big/trace.perfetto.json"

# the checker can fail
bad() { # name, python that edits d (the mlp export), then the check must fail
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); ev = d['traceEvents']
$2
json.dump(d, open(sys.argv[2], 'w'))" "$tmp/mlp_train/trace.perfetto.json" "$tmp/bad.json"
	check "the checker refuses $1" sh -c "! python3 '$top/tests/tools/tevent-check.py' '$tmp/bad.json' >/dev/null"
}
bad "an s without its f" "ev[:] = [e for e in ev if e['ph'] != 'f' or e['id'] != 1]"
bad "a negative dur" "next(e for e in ev if e['ph'] == 'X')['dur'] = -1"
bad "a thread without its name" "ev[:] = [e for e in ev if not (e['ph'] == 'M' and e['name'] == 'thread_name')]"
bad "a string pid" "next(e for e in ev if e['ph'] == 'X')['pid'] = 'a'"
bad "an unknown ph" "next(e for e in ev if e['ph'] == 'X')['ph'] = 'Q'"
bad "a flow that binds to no slice" "next(e for e in ev if e['ph'] == 's')['ts'] = 1e12"
bad "no displayTimeUnit" "del d['displayTimeUnit']"
bad "two slices of one thread that overlap without nesting" "
e = next(x for x in ev if x['ph'] == 'X' and x['dur'] > 1); f = dict(e)
f['ts'] = e['ts'] + e['dur'] / 2; ev.append(f)"
