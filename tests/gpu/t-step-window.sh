#!/bin/sh
# The step window (preload/stepwin.c) on the real programs, on the device: each sample runs long
# (past 100 steps and 2 s) under the shim's defaults, and the trace must end by itself with
# reason "steps", after the program's set-up, with the analyzer finding at least 100 steps of the
# loop in it; the program's exit code must be its own. One TAP line a check, and one line of
# facts a program (launches recorded, the note's text, the analyzer's steps and period).
#   device run: sh tests/gpu/t-step-window.sh (after build/libaicprof.so and build/aicprof; device.sh
#   runs it with the other t-*.sh files)
#   SW_WHAT="gpt2 llama resnet vit jax cupy" picks the programs; SW_ENV="AICPROF_FINALIZE=1"
#   runs them with those settings too (with AICPROF_FINALIZE=1 the shim must also say that CUPTI
#   was finalized after the window, and the program still exit 0).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
SHIM=$top/build/libaicprof.so
A=$top/build/aicprof
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
export PYTHONUNBUFFERED=1
for w in ${SW_WHAT:-gpt2 llama resnet vit jax cupy}; do
	case $w in
	gpt2) cmd="samples/gpt2_train.py --steps 250" ;;
	llama) cmd="samples/llama_train.py --steps 250" ;;
	resnet) cmd="samples/resnet_train.py --steps 400" ;;
	vit) cmd="samples/vit_train.py --steps 300" ;;
	jax) cmd="samples/jax_train.py --steps 3000" ;;
	cupy) cmd="samples/cupy_loop.py --iters 40000" ;;
	*) continue ;;
	esac
	s0=$(date +%s.%N)
	env ${SW_ENV:-} AICPROF_DEBUG=1 AICPROF_OUTPUT="$t/$w.aicp.jsonl" LD_PRELOAD="$SHIM" \
		timeout 240 python3 $cmd >"$t/$w.out" 2>"$t/$w.err"
	rc=$?
	s1=$(date +%s.%N)
	"$A" analyze "$t/$w.aicp.jsonl" -o "$t/$w.a" >/dev/null 2>"$t/$w.aerr"
	python3 - "$w" "$rc" "$t/$w.aicp.jsonl" "$t/$w.a/summary.json" "$s0" "$s1" <<'PY'
import json, sys
w, rc, tr, sm, s0, s1 = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
launches, reason, note, bad = 0, None, "", 0
for line in open(tr):
    try:
        r = json.loads(line)
    except ValueError:
        bad += 1
        continue
    t = r.get("t")
    if t == "launch":
        launches += 1
    elif t == "end":
        reason = r.get("reason")
    elif t == "note" and "step window" in r.get("text", ""):
        note = r["text"]
try:
    st = json.load(open(sm))["steps"]
except (OSError, ValueError, KeyError):
    st = {}
print(json.dumps({"what": w, "rc": rc, "run_s": round(s1 - s0, 1), "launches": launches,
                  "reason": reason, "steps": st.get("count"), "period": st.get("period"),
                  "prelude_ops": st.get("prelude_ops"), "confidence": st.get("confidence"),
                  "note": note}))
ok = lambda c, d: print(("ok" if c else "not ok") + " - stepwin %s: %s" % (w, d))
ok(rc == 0, "the program exits 0 under the shim (%d)" % rc)
ok(bad == 0, "every line of the trace parses (%d bad)" % bad)
ok(reason == "steps", "the window closed by itself (reason %s)" % reason)
ok((st.get("count") or 0) >= 100, "the analyzer finds 100 steps or more (%s)" % st.get("count"))
PY
	grep "recording window" "$t/$w.err" | head -1
	case " ${SW_ENV:-} " in
	*" AICPROF_FINALIZE=1 "*)
		if grep -q "aicprof: CUPTI finalized after the recording window" "$t/$w.err"; then
			echo "ok - stepwin $w: CUPTI finalized after the window (AICPROF_FINALIZE=1)"
		else
			echo "not ok - stepwin $w: CUPTI finalized after the window (AICPROF_FINALIZE=1)"
		fi ;;
	esac
done
