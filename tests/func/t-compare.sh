#!/bin/sh
# aicprof compare: two sample traces side by side (analysed in-process), and a hand-made pair
# of summaries where the step got faster and one candidate is gone.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
S=$top/samples/traces
"$A" compare "$S/mlp_train.aicp.jsonl" "$S/mlp_probe.aicp.jsonl" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "two traces: exits 0" test $rc = 0
# the figures each side's own summary.json holds, as the table prints them
"$A" analyze -q --no-report "$S/mlp_train.aicp.jsonl" -o "$tmp/t1" 2>/dev/null
"$A" analyze -q --no-report "$S/mlp_probe.aicp.jsonl" -o "$tmp/t2" 2>/dev/null
want() { python3 - "$tmp/t1/summary.json" "$tmp/t2/summary.json" "$1" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
f = {"median": lambda s: s["steps"]["median_us"],
     "bytes": lambda s: s["ledger"]["per_step"]["bytes_total"] / 1048576,
     "rt": lambda s: s["ledger"]["per_step"]["roundtrip_bytes"] / 1048576,
     "gemm": lambda s: [x["us"] for x in s["ledger"]["by_family"] if x["family"] == "gemm"][0]}[sys.argv[3]]
print("%.1f +%.1f " % (f(a), f(b)))
PY
}
check "two traces: step medians side by side" grep -Eq "^step median +$(want median)" "$tmp/out"
check "two traces: bytes and round-trip bytes per step" sh -c \
	"grep -Eq '^bytes per step +$(want bytes)' '$tmp/out' && grep -Eq '^round-trip bytes per step +$(want rt)' '$tmp/out'"
check "two traces: per-family time" grep -Eq "^  gemm +$(want gemm)" "$tmp/out"
# the same program: its fusion candidates are on both sides (dead-work findings may differ)
check "two traces: no fusion candidate gone or new" sh -c "! grep -Eq '^  (elementwise-chain|reduction-epilogue|attention|optimizer-horizontal):' '$tmp/out'"
check "two traces: candidate counts of each side" python3 -c "
import json, re, sys
n = [len(json.load(open(p))['candidates']) for p in sys.argv[1:3]]
m = re.search(r'^candidates +([0-9.]+) +([0-9.]+)', open(sys.argv[3]).read(), re.M)
sys.exit(0 if m and [float(m[1]), float(m[2])] == n else 1)" "$tmp/t1/summary.json" "$tmp/t2/summary.json" "$tmp/out"

# hand-made: after = before with the gelu -> dropout candidate gone and the step 500 us faster
"$A" analyze -q --no-report "$S/mlp_train.aicp.jsonl" -o "$tmp/before"
mkdir -p "$tmp/after"
python3 - "$tmp/before/summary.json" "$tmp/after/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
g = [i for i, c in enumerate(s["candidates"]) if c["kind"] == "elementwise-chain" and "gelu -> dropout" in c.get("why", "")]
del s["candidates"][g[0]]
s["steps"]["median_us"] -= 500
s["ledger"]["per_step"]["roundtrip_bytes"] //= 2
json.dump(s, open(sys.argv[2], "w"))
PY
"$A" compare "$tmp/before" "$tmp/after" >"$tmp/out2"; rc=$?
check "hand-made pair: exits 0" test $rc = 0
check "hand-made pair: step median 500 us faster" python3 -c "
import re, sys
m = re.search(r'^step median +([0-9.]+) +([0-9.]+) +(-[0-9.]+)%', open(sys.argv[1]).read(), re.M)
sys.exit(0 if m and abs(float(m[1]) - float(m[2]) - 500) < 0.11 else 1)" "$tmp/out2"
check "hand-made pair: round trip halved" grep -Eq '^round-trip bytes per step .* -50\.0%' "$tmp/out2"
check "hand-made pair: the gelu -> dropout candidate is gone after" sh -c \
	"grep -A1 'candidates gone after (present before)' '$tmp/out2' | grep -q 'elementwise-chain: gelu -> dropout'"
check "hand-made pair: nothing new" grep -q 'candidates new after: none' "$tmp/out2"
"$A" compare "$tmp/before" "$tmp/nowhere" >/dev/null 2>"$tmp/err"; rc=$?
check "a missing side: exit 1 naming it" sh -c "test $rc = 1 && grep -q nowhere '$tmp/err'"
"$A" compare "$tmp/before" >/dev/null 2>&1; rc=$?
check "one side only: usage" test $rc = 129
