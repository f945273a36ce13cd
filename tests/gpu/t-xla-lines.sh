#!/bin/sh
# XLA's source lines on the device machine (JAX there): records samples/jax_train.py under the
# shim with its defaults (the HLO dump, preload/xla.c) and checks that the trace holds "xla"
# records, that the dump directory is gone, that the program's output is the bare run's, and
# that the analysis puts XLA's fusion kernels at lines inside the jitted function (loss_fn and
# step, lines 20-29 of samples/jax_train.py) while their user line stays the call (line 43).
# Then the same with AICPROF_XLA_LINES=0: no records, no directory. Prints TAP lines; the trace
# stays in $GPU_OUT (default a temporary directory) as jax_train.aicp.jsonl.
#   make -j8 build/libaicprof.so build/aicprof && sh tests/gpu/t-xla-lines.sh
. "$(dirname "$0")/../func/lib.sh"
out=${GPU_OUT:-$tmp}
mkdir -p "$out"
T=$out/jax_train.aicp.jsonl
export TF_CPP_MIN_LOG_LEVEL=2
now() { date +%s.%N; }
t0=$(now)
python3 samples/jax_train.py >"$tmp/bare.out" 2>"$tmp/bare.err"
t1=$(now)
rm -f "$T"
AICPROF_OUTPUT=$T LD_PRELOAD=$B/libaicprof.so python3 samples/jax_train.py >"$tmp/shim.out" 2>"$out/jax_train.stderr"
rc=$?
t2=$(now)
check "jax: runs under the shim with the HLO dump (exit $rc)" test "$rc" = 0
check "jax: output as bare (step times aside)" \
	test "$(grep -v step_ms "$tmp/bare.out")" = "$(grep -v step_ms "$tmp/shim.out")"
# what the shim found in the dump (its note), for when the layout is not the expected one
grep '"t":"note"' "$T" | grep 'xla_lines' | sed 's/^/# /'
n=$(grep -c '"t":"xla"' "$T")
check "jax: the trace holds xla records ($n)" test "$n" -gt 0
check "jax: the header says the dump was read" grep -q '"xla_lines":"HLO dumped to' "$T"
check "jax: the dump directory is removed" test ! -e "$T.xla"
"$B/aicprof" analyze -q --no-report "$T" -o "$tmp/an"
check "jax: analyze exits 0" test -s "$tmp/an/summary.json"
python3 - "$tmp/an/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
xla = [n for n in s["nodes"] if n["kind"] == "kernel" and "fusion" in n["name"]]
inside = [n for n in xla if (n.get("model_site") or {}).get("file", "").endswith("jax_train.py") and 18 <= n["model_site"]["line"] <= 30]
users = [n for n in xla if (n.get("user_site") or {}).get("line") == 43]
print("# %d fusion kernels, %d at a line inside the jitted function, %d with the call as user line" % (len(xla), len(inside), len(users)))
for n in xla[:12]:
    ms = n.get("model_site") or {}
    print("#   %s: %s:%s %s (%s)" % (n["name"], ms.get("file"), ms.get("line"), ms.get("func"), n.get("torch_op")))
print("ok - jax: fusion kernels at lines inside the jitted function" if xla and len(inside) >= len(xla) * 0.8 else "not ok - jax: fusion kernels at lines inside the jitted function")
print("ok - jax: their user line stays the call" if xla and len(users) == len(xla) else "not ok - jax: their user line stays the call")
PY
t3=$(now)
AICPROF_XLA_LINES=0 AICPROF_OUTPUT=$tmp/off.aicp.jsonl LD_PRELOAD=$B/libaicprof.so python3 samples/jax_train.py >/dev/null 2>&1
t4=$(now)
# what the dump costs: the whole process (JIT compiles included), the shim with and without it
AICPROF_OUTPUT=$tmp/on2.aicp.jsonl LD_PRELOAD=$B/libaicprof.so python3 samples/jax_train.py >/dev/null 2>&1
t5=$(now)
echo "# xla dump cost: process wall time bare $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s; shim with the dump $(awk "BEGIN{printf \"%.1f\", $t2 - $t1}") s and $(awk "BEGIN{printf \"%.1f\", $t5 - $t4}") s; shim without it $(awk "BEGIN{printf \"%.1f\", $t4 - $t3}") s"
grep -h '"t":"xla"' "$T" | head -3 | sed 's/^/# /'
check "jax: AICPROF_XLA_LINES=0: no xla records, no directory" \
	sh -c "! grep -q '\"t\":\"xla\"' $tmp/off.aicp.jsonl && test ! -e $tmp/off.aicp.jsonl.xla"
