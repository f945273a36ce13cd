#!/bin/sh
# Pointers resolved offline (analyzer/resolve.c): the shim's default trace leaves every launch
# pointer's, free's and copy end's allocation to the analyzer (AICPROF_RESOLVE=offline, id -2).
# Each bundled sample, which the shim resolved, is rewritten in that form
# (tests/tools/unresolve.py) and must give the same summary.json as the original, field for
# field (the trace's path aside). A replay that resolved one pointer to another allocation, or
# matched one free to another allocation, changes the values, edges, candidates or the memory
# plan. Then a hand-made trace: an address handed out again after its free resolves to the
# new allocation, a pointer into a freed block to none, a block inside its segment to the block.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
for s in gpt2_train llama_train resnet_train mlp_train attention_train vit_train jax_train cupy_loop chain; do
	f=$top/samples/traces/$s.aicp.jsonl
	[ -f "$f" ] || { nok "$s: sample missing"; continue; }
	n=$(python3 "$top/tests/tools/unresolve.py" "$f" "$tmp/$s.u.jsonl")
	(cd "$top" && "$A" analyze -q --no-report "$f" -o "$tmp/$s.a") &&
		"$A" analyze -q --no-report "$tmp/$s.u.jsonl" -o "$tmp/$s.b"
	check "$s: resolved offline, the summary is the shim's ($n)" python3 -c "
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
for t in a.get('traces', []) + b.get('traces', []):
    t.pop('path', None)
d = [k for k in set(a) | set(b) if json.dumps(a.get(k), sort_keys=True) != json.dumps(b.get(k), sort_keys=True)]
print('# fields that differ:', d)
sys.exit(1 if d else 0)" "$tmp/$s.a/summary.json" "$tmp/$s.b/summary.json"
done
