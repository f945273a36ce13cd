#!/usr/bin/env python3
"""stepwin-sim.py - the shim's step window (preload/stepwin.c) over the sample traces' own op
sequences, made as long as a training job: where does it close?

Each trace's ops (period-check.py's extraction: launches, copies and memsets in host order, with
their CPU times) are cut after the last step the analyzer's period finder sees in it; the last
whole step's ops are then repeated (keys and times, shifted by the median step time) until the
run holds max(300 steps, 4 s of steps). build/tools/stepwin-sim runs the window over it with the
shim's defaults (100 steps, 2 s). Checks, one TAP line each: the window closes; not before 100
steps of the loop after the trace's own set-up (the prelude: model building, autotuning,
compilation); and the period it saw is the trace's step (within 10 %), not a layer of it.
Run: python3 tests/tools/stepwin-sim.py [TRACE...]   (default: the samples below)
"""
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIM = os.path.join(TOP, "build", "tools", "stepwin-sim")
spec = importlib.util.spec_from_file_location(
    "period_check", os.path.join(TOP, "tests", "tools", "period-check.py"))
pc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pc)
SAMPLES = ["gpt2_train", "llama_train", "resnet_train", "vit_train", "jax_train", "cupy_loop",
           "mlp_train", "attention_train"]


def finder(keys):
    """the analyzer's period finder over keys (build/tools/period-check)"""
    with tempfile.NamedTemporaryFile("w", suffix=".seq", delete=False) as f:
        f.write("".join(f"{k}\n" for k in keys))
        tmp = f.name
    try:
        return json.loads(subprocess.run([pc.TOOL, tmp], capture_output=True, text=True,
                                         check=True).stdout)
    finally:
        os.unlink(tmp)


def check(ok, what):
    print(("ok" if ok else "not ok") + " - " + what)
    return ok


def main():
    paths = sys.argv[1:] or [os.path.join(TOP, "samples", "traces", n + ".aicp.jsonl")
                             for n in SAMPLES]
    bad = 0
    for p in paths:
        name = os.path.basename(p).replace(".aicp.jsonl", "")
        ops, _ = pc.extract(p)
        ids = {}
        keys = [ids.setdefault(o[0], len(ids)) for o in ops]
        ts = [int(o[1]) for o in ops]
        full = finder(keys)
        steps, period = full["steps"], full["period"]
        if full["method"] != "periodic" or len(steps) < 2:
            bad += not check(False, f"{name}: the trace has a loop to repeat ({full['method']})")
            continue
        durs = [ts[b[0]] - ts[a[0]] for a, b in zip(steps, steps[1:])]
        dur = max(1, int(statistics.median(durs)))
        a, e = steps[-2]  # the last whole step (the last one may run into the epilogue)
        k_step, t_step = keys[a:e], [t - ts[a] for t in ts[a:e]]
        seq_k, seq_t = keys[:steps[-1][0]], ts[:steps[-1][0]]
        have = len(steps) - 1
        want = max(300, int(4e9 / dur) + 1)
        start = ts[steps[-1][0]]
        for i in range(want - have):
            seq_k += k_step
            seq_t += [start + i * dur + d for d in t_step]
        with tempfile.NamedTemporaryFile("w", suffix=".seq", delete=False) as f:
            f.write("".join(f"{k} {t}\n" for k, t in zip(seq_k, seq_t)))
            tmp = f.name
        try:
            out = subprocess.run([SIM, tmp], capture_output=True, text=True, check=True).stdout
        finally:
            os.unlink(tmp)
        r = json.loads(out)
        pre = full["prelude"][1]
        at = r["closed_at"]
        m = re.search(r"steps of about (\d+) ops", r["why"])
        seen = int(m.group(1)) if m else 0
        print(f"# {name}: {len(seq_k)} ops ({want} steps of {period} ops, {dur / 1e6:.2f} ms; "
              f"set-up {pre} ops); closed at op {at}: {r['why']}")
        bad += not check(at is not None, f"{name}: the window closes")
        bad += not check(at is not None and at >= pre + 100 * period,
                         f"{name}: not before 100 steps after the set-up ({at} >= {pre} + 100 x {period})")
        bad += not check(abs(seen - period) <= period / 10,
                         f"{name}: the window's step is the trace's ({seen} ops against {period})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
