# Records out of seq order (analyzer/parse.c, the reorder buffer): the shim's writer drains one
# thread's ring after another, so a thread's records reach the trace late. A synthetic NVTX trace
# (build/tools/gen-trace) is rewritten as two threads: runs of 40 seqs alternate between them and
# the second thread's records are written 6,000 records late (beyond the old 4,096-record
# window), with the activity records where the first thread's stream has them (so many come
# before their launch). It must analyse without an order warning and give the summary of the
# trace in seq order. A seq that never comes gives one warning at the end; a record held back
# beyond the bound (65,536 records) gives one warning that names the seqs given up.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
G=$B/tools/gen-trace
check "gen-trace is built (make tools)" test -x "$G"
# mk MODE IN OUT: rewrites a trace (python3): "split" two threads, the second LAG records late;
# "drop" without the first free record from seq 700 on (its seq on stdout); "late" with the
# record of seq 100 written after 70,000 more records with a seq
mk() {
	python3 - "$@" <<'EOF'
import json, sys
mode, src, dst = sys.argv[1:4]
lines = open(src).read().splitlines()
out = []
if mode == "split":
    a, held, since = [], [], 0
    for l in lines:
        r = json.loads(l)
        if "seq" in r and (r["seq"] // 40) % 2 and r["t"] not in ("push", "pop"):
            held.append(l)
            continue
        out.append(l)
        since += 1
        if since >= 6000 and held:
            out.extend(held)
            held, since = [], 0
    end = out.pop()
    out.extend(held)
    out.append(end)
else:
    moved = None
    for l in lines:
        r = json.loads(l)
        if mode == "drop" and r["t"] == "free" and r["seq"] >= 700 and moved is None:
            moved = r["seq"]
            print(moved)
            continue
        if mode == "late" and r.get("seq") == 100:
            moved, count = l, 0
            continue
        out.append(l)
        if mode == "late" and moved is not None and "seq" in r:
            count += 1
            if count == 70000:
                out.append(moved)
                moved = None
open(dst, "w").write("\n".join(out) + "\n")
EOF
}
# an N: analyses $tmp/N.aicp.jsonl into $tmp/o-N; rc in $tmp/N.rc, stderr in $tmp/N.err
an() {
	"$A" analyze --no-report "$tmp/$1.aicp.jsonl" -o "$tmp/o-$1" >/dev/null 2>"$tmp/$1.err"
	echo $? >"$tmp/$1.rc"
}
# same N M: the summaries of N and M are equal but for the trace's path
same() {
	python3 - "$tmp/o-$1/summary.json" "$tmp/o-$2/summary.json" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for s in (a, b):
    for t in s["traces"]:
        t.pop("path", None)
sys.exit(0 if a == b else 1)
EOF
}
"$G" -n 20000 -p 50 >"$tmp/sorted.aicp.jsonl"
mk split "$tmp/sorted.aicp.jsonl" "$tmp/split.aicp.jsonl"
an sorted
an split
check "the rewritten trace is out of order by more than 4096 records" python3 -c '
import json, sys
mx = lag = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "seq" in r:
        lag = max(lag, mx - r["seq"]); mx = max(mx, r["seq"])
sys.exit(0 if lag > 4096 else 1)' "$tmp/split.aicp.jsonl"
check "sorted: exit 0" test "$(cat "$tmp/sorted.rc")" = 0
check "two threads out of order: exit 0" test "$(cat "$tmp/split.rc")" = 0
check "two threads out of order: no warning" sh -c "! grep -q warning '$tmp/split.err'"
check "two threads out of order: the summary of the sorted trace" same sorted split
check "the summary has its steps (400)" python3 -c '
import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))["steps"]["count"] == 400 else 1)' "$tmp/o-split/summary.json"

# a seq that never comes: one warning, at the end, naming it
"$G" -n 2000 -p 50 >"$tmp/small.aicp.jsonl"
gone=$(mk drop "$tmp/small.aicp.jsonl" "$tmp/drop.aicp.jsonl")
an drop
check "a missing seq: exit 0" test "$(cat "$tmp/drop.rc")" = 0
check "a missing seq: one warning" test "$(grep -c warning "$tmp/drop.err")" = 1
check "a missing seq: it names seq $gone" grep -q "1 seqs never arrived (the first: seq $gone); data flow may be wrong there" "$tmp/drop.err"
check "a missing seq: the warning is in summary.json" grep -q "seqs never arrived" "$tmp/o-drop/summary.json"

# a record held back beyond the bound: one warning with the figures
"$G" -n 80000 -p 50 >"$tmp/big.aicp.jsonl"
mk late "$tmp/big.aicp.jsonl" "$tmp/late.aicp.jsonl"
an late
check "beyond the bound: exit 0" test "$(cat "$tmp/late.rc")" = 0
check "beyond the bound: one warning" test "$(grep -c warning "$tmp/late.err")" = 1
check "beyond the bound: seq 100 given up, then came later" grep -qE "reorder bound \(65536 records or 64 MiB held\): 1 seqs given up from seq 100, 1 records came later \(the first: seq 100 after [0-9]+\)" "$tmp/late.err"
check "beyond the bound: no escape byte on stderr" sh -c "! grep -qP '\\x1b' '$tmp/late.err'"
