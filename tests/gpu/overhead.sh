#!/bin/sh
# What the shim costs, part by part, on programs that look like users' (docs/perf.md, the
# overhead issue). Every mode runs tests/gpu/bench_step.py in its own process; the modes are
# interleaved, OVH_ROUNDS rounds (default 3), pinned to OVH_CPUS (taskset) when set; the table in docs/perf.md takes the medians.
#   bare       no shim
#   async      no shim, PyTorch's allocator switched to cudaMallocAsync as the shim does: what
#              the switch itself costs, with nothing recorded
#   shim       defaults (PyTorch keeps its caching allocator; its blocks are recorded; the step
#              window closes the recording after 100 steps alike and 2 s: gpt2job shows it)
#   shimall    defaults with AICPROF_STEPS=0: the whole run recorded (no step window)
#   shimfin    defaults with AICPROF_FINALIZE=1: CUPTI finalized after the window, not only
#              turned off (gpt2job: whether the steps after the window run at bare speed)
#   act0all    shimall without kernel activity records (AICPROF_ACTIVITY=0): what timing the
#              kernels costs a whole run, GPU side included (the paired modes keep activity on
#              in both halves, so their difference leaves it out)
#   minall     shimall with allocations, arguments and attribution off: callbacks and activity
#   alloc0     AICPROF_ALLOC_BACKEND=0 (XLA's allocator left alone too; for PyTorch as shim)
#   alloc1     AICPROF_ALLOC_BACKEND=1 (PyTorch switched to cudaMallocAsync: the old default)
#   rshim      AICPROF_RESOLVE=shim (the shim's locked map resolves pointers at the launch and
#              frees at the free, as before the default became offline)
#   args0      AICPROF_ARGS=0 (no parameter scan)
#   attrib0    AICPROF_ATTRIB=0 (no source lines)
#   min        all three off: CUPTI's callbacks and activity records only
#   cbonly     min and AICPROF_ACTIVITY=0: CUPTI's callbacks only
#   win        defaults with AICPROF_DURATION=OVH_WIN (default 1) seconds: measured after the
#              window closed (GPT-2's measured steps come after it, too)
#   paired     AICPROF_CAPTURE=profiler-api: recording and paused rounds (the loops) or steps
#              (GPT-2) alternate in one process (bench_step.py paired), the median paired
#              difference is the recording path's cost (us_added, ms_added and pct_added);
#              the caching allocator's blocks are recorded in both halves, so it leaves their cost out
#   pairedall  paired with AICPROF_PAUSE_BLOCKS=1: the paused halves skip the blocks too, so the
#              difference is the recording cost, allocations included; the kernels are timed
#              (CUPTI's activity) in both halves, so it leaves that out
#   pairedfull pairedall with AICPROF_PAUSE_ACTIVITY=1: the paused halves time no kernel either
# Every mode's loops warm up for OVH_SETTLE seconds (default OVH_WIN + 2) before they are timed
# (BENCH_SETTLE_S), the same for all: a shorter warm-up under the shim measured up to 1.5x slower.
#   profiler   torch.profiler with CPU and CUDA activities
# OVH_LOCK="bare shim shimfin ...": before each round's modes, a GPT-2 job bare and one under each of
# those modes run in lockstep (tests/gpu/lockstep.py: their steps alternate, the paired
# difference a step is the mode's cost with the host's drift taken out), BENCH_JOB_STEPS steps,
# split at OVH_SPLIT (default 150: the window closes after 100 to 130); "bare" pairs two bare
# jobs (the method's noise floor); OVH_MODES="" runs no
# other mode. OVH_LOCK_WHAT=fake runs the lockstep with bench_step.py's fake step (no GPU).
# Then one run of each workload under the shim with AICPROF_SELFTIME=1 (the shim's own parts,
# per call), whose "self time" lines go to the log; OVH_ST=first runs them before the rounds
# (so that a call's time limit cannot cut them off), OVH_ST=none not at all.
#   device run: sh tests/gpu/overhead.sh   ($OUT gets overhead.log and overhead.jsonl)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
OUT=${OUT:-$top/build/overhead-out}
W=$OUT/w
mkdir -p "$W"
export PYTHONUNBUFFERED=1
CUDA_HOME=${CUDA_HOME:-$(ls -d /usr/local/cuda-13* /usr/local/cuda 2>/dev/null | head -1)}
export CUDA_HOME PATH=$CUDA_HOME/bin:$PATH
SHIM=$top/build/libaicprof.so
PY=${PYTHON:-python3}
J=$OUT/overhead.jsonl
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "sources $(sh tests/gpu/srchash.sh) (tests/gpu/srchash.sh)"
[ -f "$SHIM" ] || make -j8 NO_DEPS=1 CUDA_HOME="$CUDA_HOME" build/libaicprof.so 2>&1 | tail -2
PIN=
[ -n "${OVH_CPUS:-}" ] && PIN="taskset -c $OVH_CPUS"
menv() { # mode: the shim's settings for it (AICPROF_*), on stdout
	case $1 in
	shimall) echo AICPROF_STEPS=0 ;;
	shimfin) echo AICPROF_FINALIZE=1 ;;
	act0all) echo "AICPROF_STEPS=0 AICPROF_ACTIVITY=0" ;;
	minall) echo "AICPROF_STEPS=0 AICPROF_ALLOC_BACKEND=0 AICPROF_ARGS=0 AICPROF_ATTRIB=0" ;;
	alloc0) echo AICPROF_ALLOC_BACKEND=0 ;;
	alloc1) echo AICPROF_ALLOC_BACKEND=1 ;;
	args0) echo AICPROF_ARGS=0 ;;
	rshim) echo AICPROF_RESOLVE=shim ;;
	attrib0) echo AICPROF_ATTRIB=0 ;;
	min) echo "AICPROF_ALLOC_BACKEND=0 AICPROF_ARGS=0 AICPROF_ATTRIB=0" ;;
	cbonly) echo "AICPROF_ALLOC_BACKEND=0 AICPROF_ARGS=0 AICPROF_ATTRIB=0 AICPROF_ACTIVITY=0" ;;
	st) echo AICPROF_SELFTIME=1 ;;
	win) echo "AICPROF_DURATION=${OVH_WIN:-1}" ;;
	paired) echo AICPROF_CAPTURE=profiler-api ;;
	pairedall) echo "AICPROF_CAPTURE=profiler-api AICPROF_PAUSE_BLOCKS=1" ;;
	pairedfull) echo "AICPROF_CAPTURE=profiler-api AICPROF_PAUSE_BLOCKS=1 AICPROF_PAUSE_ACTIVITY=1" ;;
	esac
}
# how the trace ended (the window's reason and note), to stderr beside the run's own
trace_end() { # mode what trace
	echo "# $1 $2: trace $(wc -l <"$3" 2>/dev/null) lines, $(tail -c 300 "$3" 2>/dev/null |
		grep -o '"reason":"[a-z]*"') $(grep '"t":"note"' "$3" 2>/dev/null | grep -o '"text":"[^"]*"' | tail -1)" >&2
}
run() { # mode workload...
	m=$1
	shift
	case $m in
	bare | profiler) $PIN $PY tests/gpu/bench_step.py "$m" "$@" ;;
	async) PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync $PIN $PY tests/gpu/bench_step.py "$m" "$@" ;;
	*)
		e=$(menv "$m")
		bm=$m
		case $m in pairedall | pairedfull) bm=paired ;; esac
		rm -f "$W/b.jsonl"
		env $e AICPROF_OUTPUT="$W/b.jsonl" LD_PRELOAD="$SHIM" $PIN $PY tests/gpu/bench_step.py "$bm" "$@" |
			sed "s/\"mode\": \"$bm\"/\"mode\": \"$m\"/"
		trace_end "$m" "$*" "$W/b.jsonl" ;;
	esac
}
# lockstep MODE: tests/gpu/lockstep.py, GPT-2 jobs bare and under MODE with their steps
# alternating (BENCH_JOB_STEPS steps, the second phase from OVH_SPLIT, default 150)
# (MODE bare: two bare jobs, the pairing's own noise floor beside the modes' figures)
lockstep() {
	rm -f "$W/b.jsonl"
	be="$(menv "$1") AICPROF_OUTPUT=$W/b.jsonl LD_PRELOAD=$SHIM"
	[ "$1" = bare ] && be=
	$PIN $PY tests/gpu/lockstep.py --what "${OVH_LOCK_WHAT:-gpt2job}" --split "${OVH_SPLIT:-150}" --b-label "$1" \
		--b-env "$be"
	[ "$1" = bare ] || trace_end "$1" lockstep "$W/b.jsonl"
}
export BENCH_SETTLE_S=${OVH_SETTLE:-$((${OVH_WIN:-1} + 2))}
selftime() {
echo "== self time (AICPROF_SELFTIME=1, one run each)"
for w in ${OVH_WHAT:-oop oopdeep gpt2}; do
	case $w in gpt2) a="samples/gpt2_train.py --steps ${OVH_STEPS:-20}" ;; *) a=$w ;; esac
	echo "# $w: $(run st $a 2>"$W/st.err")"
	grep 'self time' "$W/st.err"
done
}
[ "${OVH_ST:-last}" = first ] && selftime
for r in $(seq 1 "${OVH_ROUNDS:-3}"); do
	for m in ${OVH_LOCK:-}; do
		lockstep "$m" 2>>"$W/err" | sed "s/^{/{\"round\":$r,\"mode\":\"lockstep\",/" | tee -a "$J"
	done
	for m in ${OVH_MODES-bare async shim alloc0 args0 attrib0 min cbonly profiler}; do
		for w in ${OVH_WHAT:-oop oopdeep gpt2}; do
			case $w in gpt2) a="samples/gpt2_train.py --steps ${OVH_STEPS:-20}" ;; *) a=$w ;; esac
			run "$m" $a 2>>"$W/err" | sed "s/^{/{\"round\":$r,/" | tee -a "$J"
		done
	done
done
[ "${OVH_ST:-last}" = last ] && selftime
tail -5 "$W/err"
grep '^# ' "$W/err"
} >"$OUT/overhead.log" 2>&1
rm -rf "$W"
python3 - "$J" <<'PY' >>"$OUT/overhead.log"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
lock = [r for r in rows if r.get("mode") == "lockstep"]
rows = [r for r in rows if r.get("mode") != "lockstep"]
if lock:
    print("== lockstep: GPT-2 jobs bare (a) and under the shim (b), steps alternating; ms a step, medians")
    for r in lock:
        for p in r.get("phases", []):
            print("# lockstep %-9s round %s steps %d-%d: a %.3f b %.3f, b - a %+.3f (%+.2f%%; quartiles %+.3f %+.3f)%s"
                  % (r["b"], r["round"], p["from"], p["to"], p["a_ms"], p["b_ms"], p["d_ms"], p["pct"],
                     p["d_p25"], p["d_p75"], "  ERROR " + r["error"] if "error" in r else ""))
        print("# lockstep %-9s round %s b - a by 50 steps: %s" % (r["b"], r["round"], " ".join("%+.2f" % x for x in r.get("by50_d_ms", []))))
what = sorted({r["what"] for r in rows})
modes = []
for r in rows:
    if r["mode"] not in modes:
        modes.append(r["mode"])
print("== medians (%d rows)" % len(rows))
for w in what:
    key = "us_per_launch" if w.startswith("oop") else "step_ms"
    base = None
    for m in modes:
        v = [r[key] for r in rows if r["what"] == w and r["mode"] == m and r.get(key)]
        if not v:
            continue
        med = statistics.median(v)
        base = med if m == "bare" else base
        add = "" if base is None or m == "bare" else " (%+.2f, %+.0f%%)" % (med - base, (med / base - 1) * 100)
        print("# %-28s %-9s %s median %.3f%s" % (w.split("/")[-1], m, " ".join("%.2f" % x for x in v), med, add))
        for k in ("us_added", "ms_added", "pct_added"):  # the paired modes' own differences
            d = [r[k] for r in rows if r["what"] == w and r["mode"] == m and k in r]
            if d:
                print("# %-28s %-9s %s: %s median %.3f" % (w.split("/")[-1], m, k, " ".join("%.2f" % x for x in d), statistics.median(d)))
PY
grep -E '^(#|==)' "$OUT/overhead.log" | tail -60
