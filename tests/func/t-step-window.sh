#!/bin/sh
# The step window (preload/stepwin.c) end to end on a CPU-only machine: build/libaicprof.so
# preloaded into Python, the mock driver and CUPTI of tests/mock. The program sets up (400
# launches of one kernel, as a model's initialisation copies one tensor after another), then
# runs a loop of 4 s: steps of 24 launches over 8 kernels of their own names, 5 ms apart. With
# AICPROF_STEPS=100 AICPROF_STEPS_S=2 the window must close by itself, once 100 steps have run
# and 2 s have passed: the trace ends whole with reason "steps", holds at least 100 steps of
# the loop and not all of it, the analyzer finds those steps, and the program's output and exit
# code are its own. With AICPROF_STEPS=0 every launch is in the trace. A loop of one kernel
# (the set-up alone, for 4 s) never closes the window: too few kernels of its own to be a step.
# Under WORLD_SIZE=2 each rank's window closes by default, and AICPROF_STEPS=0 keeps it open.
# With AICPROF_FINALIZE=1 CUPTI is finalized after the close and the program runs on.
. "$(dirname "$0")/lib.sh"
C=${CUDA_HOME:-/usr/local/cuda}
cc -O2 -shared -fPIC -I"$C/include" -I"$C/targets/x86_64-linux/include" -I"$C/extras/CUPTI/include" \
	-o "$tmp/lc.so" "$top/tests/tools/launch_cost.c" -ldl 2>"$tmp/cc.err" ||
	{ nok "launch_cost.c builds ($(head -c 300 "$tmp/cc.err"))"; exit 0; }
cat >"$tmp/prog.py" <<'PY'
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
if lib.lc_init(sys.argv[2].encode(), ctypes.c_uint64(0x7F0000000000)):
    sys.exit("cannot open the mock CUPTI")
lib.lc_alloc(ctypes.c_uint64(0x7F0000000000))
one_kernel = sys.argv[3] == "one"
lib.lc_launch(400)  # set-up
steps, t0 = 0, time.monotonic()
while time.monotonic() - t0 < 4.0:
    if one_kernel:
        lib.lc_launch(24)
    else:
        lib.lc_launch_step(24, 8)
    steps += 1
    time.sleep(0.005)
print("steps", steps, flush=True)
sys.exit(7)
PY
run() { # name, kind ("loop" or "one"), env...
	n=$1 k=$2
	shift 2
	env "$@" AICPROF_QUIET=0 AICPROF_EAGER=1 AICPROF_CUPTI=$B/mock/libcupti.so.13 \
		AICPROF_OUTPUT="$tmp/$n.aicp.jsonl" LD_LIBRARY_PATH=$B/mock LD_PRELOAD=$B/libaicprof.so \
		timeout 60 python3 "$tmp/prog.py" "$tmp/lc.so" "$B/mock/libcupti.so.13" "$k" \
		>"$tmp/$n.out" 2>"$tmp/$n.err"
	echo $?
}
# facts: launches in the trace, step launches, the end's reason, whether every line parses
facts() {
	python3 - "$1" <<'PY'
import json, sys
n = steps = bad = 0
reason = "none"
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        bad += 1
        continue
    if r.get("t") == "launch":
        n += 1
    elif r.get("t") == "end":
        reason = r.get("reason")
    elif r.get("t") == "str" and str(r.get("s", "")).startswith("mock_step_"):
        steps = 1
print(n, reason, bad, steps)
PY
}

rc=$(run win loop AICPROF_STEPS=100 AICPROF_STEPS_S=2)
check "the program's exit code is its own under the window (7: $rc)" test "$rc" = 7
made=$(sed -n 's/^steps //p' "$tmp/win.out")
check "the program's output is its own (${made:-none} steps)" test "${made:-0}" -gt 150
read -r nl why bad named <<EOF
$(facts "$tmp/win.aicp.jsonl")
EOF
check "the trace ends with reason steps ($why)" test "$why" = steps
check "every line of the closed trace parses ($bad bad)" test "$bad" = 0
check "the trace holds 100 steps of the loop at least (${nl} launches, 400 + 2,400 wanted)" \
	test "$nl" -ge 2800
check "... and not the whole loop ($nl of $((400 + 24 * ${made:-0})) launches)" \
	test "$nl" -lt $((400 + 24 * ${made:-0}))
check "the window's line says why it closed" \
	grep -q "aicprof: the recording window closed (the training loop ran AICPROF_STEPS steps)" \
	"$tmp/win.err"
check "the trace's note says what was found" grep -q '"t":"note".*the step window closed after' \
	"$tmp/win.aicp.jsonl"
"$B/aicprof" analyze "$tmp/win.aicp.jsonl" -o "$tmp/a" >/dev/null 2>"$tmp/an.err"
ns=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["steps"]["count"])' \
	"$tmp/a/summary.json" 2>/dev/null)
check "the analyzer finds the recorded steps in the closed trace (${ns:-none})" \
	test "${ns:-0}" -ge 100
check "the report says the window closed on the steps" \
	grep -q 'recording stopped at its window (AICPROF_STEPS' "$tmp/a/report.html"

# AICPROF_FINALIZE=1: at the close CUPTI is finalized at the program's next launch; the program
# runs on to its own end and exit code, the trace as above
rc=$(run fin loop AICPROF_STEPS=100 AICPROF_STEPS_S=2 AICPROF_FINALIZE=1 AICPROF_DEBUG=1)
made=$(sed -n 's/^steps //p' "$tmp/fin.out")
read -r nl why bad named <<EOF
$(facts "$tmp/fin.aicp.jsonl")
EOF
check "AICPROF_FINALIZE=1: the program runs on to its exit code 7 ($rc, ${made:-none} steps)" \
	test "$rc" = 7 -a "${made:-0}" -gt 150
check "AICPROF_FINALIZE=1: the trace ends whole with reason steps ($why, $bad bad)" \
	test "$why" = steps -a "$bad" = 0
check "AICPROF_FINALIZE=1: CUPTI finalized after the window (the shim's debug line)" \
	grep -q "aicprof: CUPTI finalized after the recording window" "$tmp/fin.err"

rc=$(run all loop AICPROF_STEPS=0)
check "AICPROF_STEPS=0: exit code 7 ($rc)" test "$rc" = 7
made=$(sed -n 's/^steps //p' "$tmp/all.out")
read -r nl why bad named <<EOF
$(facts "$tmp/all.aicp.jsonl")
EOF
check "AICPROF_STEPS=0: every launch is in the trace ($nl of $((400 + 24 * ${made:-0})))" \
	test "$nl" = $((400 + 24 * ${made:-0}))
check "AICPROF_STEPS=0: the trace ends at the exit ($why)" test "$why" = exit

rc=$(run one one AICPROF_STEPS=100 AICPROF_STEPS_S=2)
made=$(sed -n 's/^steps //p' "$tmp/one.out")
read -r nl why bad named <<EOF
$(facts "$tmp/one.aicp.jsonl")
EOF
check "a loop of one kernel: the window stays open (${why}, $nl of $((400 + 24 * ${made:-0})))" \
	test "$why" = exit -a "$nl" = $((400 + 24 * ${made:-0}))
check "a loop of one kernel: exit code 7 ($rc)" test "$rc" = 7

# a job of several ranks: each rank's window closes by default (at a step of its own: the job
# view matches the collectives the ranks have in common, tests/func/t-job.sh); AICPROF_STEPS=0
# keeps it open
rc=$(run ranks loop WORLD_SIZE=2 RANK=0)
read -r nl why bad named <<EOF
$(facts "$tmp/ranks.aicp.jsonl")
EOF
check "WORLD_SIZE=2: the window closes by default ($why)" test "$why" = steps
rc=$(run ranks2 loop WORLD_SIZE=2 RANK=0 AICPROF_STEPS=0)
read -r nl why bad named <<EOF
$(facts "$tmp/ranks2.aicp.jsonl")
EOF
check "WORLD_SIZE=2 with AICPROF_STEPS=0: no step window ($why)" test "$why" = exit
