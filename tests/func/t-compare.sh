#!/bin/sh
# aicprof compare: two sample traces side by side (analysed in-process), and a hand-made pair
# of summaries where the step got faster and one candidate is gone.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
S=$top/samples/traces
"$A" compare "$S/mlp_train.aicp.jsonl" "$S/mlp_probe.aicp.jsonl" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "two traces: exits 0" test $rc = 0
check "two traces: step medians side by side" grep -Eq '^step median +3493\.9 +5148\.7 ' "$tmp/out"
check "two traces: bytes and round-trip bytes per step" sh -c \
	"grep -Eq '^bytes per step +2129\.7 +1937\.7 ' '$tmp/out' && grep -Eq '^round-trip bytes per step +1537\.6 +1457\.5 ' '$tmp/out'"
check "two traces: per-family time" grep -Eq '^  gemm +282\.7 +276\.5 ' "$tmp/out"
check "two traces: no fusion candidate gone" sh -c \
	"! sed -n '/^candidates gone after/,/^candidates new after/p' '$tmp/out' | grep -Eq '^  (elementwise-chain|reduction-epilogue|gemm-epilogue|attention|optimizer-horizontal):'"

# hand-made: after = before with candidate 0 gone and the step 500 us faster
"$A" analyze -q --no-report "$S/mlp_train.aicp.jsonl" -o "$tmp/before"
mkdir -p "$tmp/after"
python3 - "$tmp/before/summary.json" "$tmp/after/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["candidates"] = s["candidates"][1:]
s["steps"]["median_us"] -= 500
s["ledger"]["per_step"]["roundtrip_bytes"] //= 2
json.dump(s, open(sys.argv[2], "w"))
PY
"$A" compare "$tmp/before" "$tmp/after" >"$tmp/out2"; rc=$?
check "hand-made pair: exits 0" test $rc = 0
check "hand-made pair: step median before and after" grep -Eq '^step median +3493\.9 +2993\.9 +-14\.3%' "$tmp/out2"
check "hand-made pair: round trip halved" grep -Eq '^round-trip bytes per step +1537\.6 +768\.8 +-50\.0%' "$tmp/out2"
check "hand-made pair: the gelu -> dropout candidate is gone after" sh -c \
	"grep -A1 'candidates gone after (present before)' '$tmp/out2' | grep -q 'elementwise-chain: gelu -> dropout'"
check "hand-made pair: nothing new" grep -q 'candidates new after: none' "$tmp/out2"
"$A" compare "$tmp/before" "$tmp/nowhere" >/dev/null 2>"$tmp/err"; rc=$?
check "a missing side: exit 1 naming it" sh -c "test $rc = 1 && grep -q nowhere '$tmp/err'"
"$A" compare "$tmp/before" >/dev/null 2>&1; rc=$?
check "one side only: usage" test $rc = 129
