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
# the formatter's rules (cli/cmd-compare.c), written again here: sizes in B/KiB/MiB/GiB, times
# in µs/ms/s, the unit chosen by magnitude, three significant digits
want() { python3 - "$tmp/t1/summary.json" "$tmp/t2/summary.json" "$1" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def sig3(v, u):
    d = 0 if abs(v) >= 99.95 or v == 0 else 1 if abs(v) >= 9.995 else 2
    return "%.*f %s" % (d, v, u)
def size(x):
    for i, u in enumerate(["B", "KiB", "MiB", "GiB"]):
        if abs(x) < 1023.95 * 1024 ** i or u == "GiB":
            return "%.0f B" % x if i == 0 else sig3(x / 1024 ** i, u)
def time(x):
    return sig3(x, "µs") if abs(x) < 999.95 else sig3(x / 1e3, "ms") if abs(x) < 999950 else sig3(x / 1e6, "s")
f = {"median": lambda s: time(s["steps"]["median_us"]),
     "bytes": lambda s: size(s["ledger"]["per_step"]["bytes_total"]),
     "rt": lambda s: size(s["ledger"]["per_step"]["roundtrip_bytes"]),
     "gemm": lambda s: time([x["us"] for x in s["ledger"]["by_family"] if x["family"] == "gemm"][0])}[sys.argv[3]]
print("%s +%s +[-+]" % (f(a), f(b)))
PY
}
check "two traces: step medians side by side" grep -Eq "^step median +$(want median)" "$tmp/out"
check "two traces: bytes and round-trip bytes per step" sh -c \
	"grep -Eq '^bytes per step +$(want bytes)' '$tmp/out' && grep -Eq '^round-trip bytes per step +$(want rt)' '$tmp/out'"
check "two traces: per-family time" grep -Eq "^  gemm +$(want gemm)" "$tmp/out"
# the same program: its fusion candidates are on both sides (dead-work findings may differ)
check "two traces: no fusion candidate gone or new" sh -c "! grep -Eq '^  (elementwise-chain|reduction-epilogue|attention|optimizer-horizontal):' '$tmp/out'"
check "two traces: every size and time in one unit style (B/KiB/MiB/GiB, µs/ms/s; 3 digits)" python3 -c "
import re, sys
t = open(sys.argv[1]).read()
vals = re.findall(r'([0-9.]+) (B|KiB|MiB|GiB|µs|ms|s|us)\\b', t)
bad = [v + ' ' + u for v, u in vals if u == 'us' or (u != 'B' and (float(v) >= 1024 or len(v.replace('.', '').lstrip('0')) > 3 and float(v) < 100))]
sys.exit(1 if bad or not vals or '/step' not in t else 0)" "$tmp/out"
check "two traces of one program: no note" sh -c "! grep -q '^note:' '$tmp/out'"
"$A" compare "$S/mlp_train.aicp.jsonl" "$S/chain.aicp.jsonl" >"$tmp/out3" 2>/dev/null; rc=$?
check "two programs: exit status unchanged (0)" test $rc = 0
check "two programs: one line at the top says so, naming both" sh -c \
	"head -1 '$tmp/out3' | grep -q '^note: BEFORE and AFTER run different programs (mlp_train.py vs chain; [0-9]* of [0-9]* kernel names shared): the comparison is of two programs, not of a change' && test \$(grep -c '^note:' '$tmp/out3') = 1"
# one program name, other kernels: the names barely overlap
python3 - "$tmp/t1/summary.json" "$tmp/t3.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for i, n in enumerate(s["nodes"]):
    n["name"] = "other_kernel_%d" % i
json.dump(s, open(sys.argv[2], "w"))
PY
mkdir -p "$tmp/t3" && mv "$tmp/t3.json" "$tmp/t3/summary.json"
"$A" compare "$tmp/t1" "$tmp/t3" >"$tmp/out4" 2>/dev/null
check "one program name but no kernel shared: the note says so" \
	grep -q '^note: BEFORE and AFTER run different programs (0 of [0-9]* kernel names shared)' "$tmp/out4"
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
m = re.search(r'^step median +([0-9.]+) ms +([0-9.]+) ms +(-[0-9.]+)%', open(sys.argv[1]).read(), re.M)
sys.exit(0 if m and abs(float(m[1]) - float(m[2]) - 0.5) < 0.011 else 1)" "$tmp/out2"
check "hand-made pair: round trip halved" grep -Eq '^round-trip bytes per step .* -50\.0%' "$tmp/out2"
check "hand-made pair: the gelu -> dropout candidate is gone after" sh -c \
	"grep -A1 'candidates gone after (present before)' '$tmp/out2' | grep -q 'elementwise-chain: gelu -> dropout'"
check "hand-made pair: nothing new" grep -q 'candidates new after: none' "$tmp/out2"
# --reference: a third run to measure the gain against (the program under torch.compile, say)
for d in 1000 400 -200; do
	mkdir -p "$tmp/ref$d"
	python3 - "$tmp/before/summary.json" "$tmp/ref$d/summary.json" "$d" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["steps"]["median_us"] -= float(sys.argv[3])
for n in s["nodes"]:  # another compiler's kernels
    n["name"] = "triton_" + n["name"]
json.dump(s, open(sys.argv[2], "w"))
PY
	"$A" compare "$tmp/before" "$tmp/after" --reference "$tmp/ref$d" >"$tmp/share$d" 2>&1
	echo "rc $?" >>"$tmp/share$d"
done
check "--reference 1000 us faster, after 500 us: 50% of the reference's gain, the sides' medians" sh -c \
	"grep -q '^share of the reference.s gain: 50% (before - after 500 µs, before - reference 1.00 ms)\$' '$tmp/share1000' &&
	grep -q '^reference step median ' '$tmp/share1000' && grep -q '^rc 0' '$tmp/share1000' &&
	! grep -q '^note:' '$tmp/share1000'"
check "--reference 400 us faster: 125%, after is faster than the reference" \
	grep -q '^share of the reference.s gain: 125% (before - after 500 µs, before - reference 400 µs): after is faster than the reference' "$tmp/share400"
check "--reference slower than before: no share, and why" \
	grep -q "^share of the reference's gain: none (the reference, .*, is not faster than before, .*); after is -[0-9.]*% against before" "$tmp/share-200"
"$A" compare "$tmp/before" "$tmp/after" --reference "$tmp/nowhere" >/dev/null 2>"$tmp/err"; rc=$?
check "--reference missing: exit 1 naming it" sh -c "test $rc = 1 && grep -q nowhere '$tmp/err'"
"$A" compare "$tmp/before" "$tmp/nowhere" >/dev/null 2>"$tmp/err"; rc=$?
check "a missing side: exit 1 naming it" sh -c "test $rc = 1 && grep -q nowhere '$tmp/err'"
"$A" compare "$tmp/before" >/dev/null 2>&1; rc=$?
check "one side only: usage" test $rc = 129
