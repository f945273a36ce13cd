"""Step-time benchmark for programs that look like users' (tests/gpu/real.sh, docs/perf.md).

Usage: python3 bench_step.py MODE WHAT [ARGS...]
  MODE: bare | shim | profiler (the caller sets LD_PRELOAD and AICPROF_* for the shim modes;
        profiler wraps the run in torch.profiler with CPU and CUDA activities) | paired (oop
        and oopdeep only, under the shim with AICPROF_CAPTURE=profiler-api: rounds alternate
        between recording, inside torch.cuda.profiler.start()/stop(), and paused, in one
        process, and the figure is the median of the paired differences: the launch path's
        cost without the noise between processes; allocations are recorded in both)
  WHAT: oop (an out-of-place launch loop: y = y * a + b on 256x256, 100 launches a round,
        200 rounds; BENCH_SETTLE_S=S: after S seconds of warm-up), oopdeep (the same loop called 40 Python frames deep, as a model's
        modules call their ops) or a sample's path, run with ARGS through runpy; the sample prints
        "step_ms X" (median step after warm-up).
Prints one JSON line: {"mode":..,"what":..,"us_per_launch" or "step_ms":..}.
"""
import contextlib
import io
import json
import os
import runpy
import statistics
import sys
import time

mode, what = sys.argv[1], sys.argv[2]
ctx = contextlib.nullcontext()
if mode == "profiler":
    from torch.profiler import ProfilerActivity, profile

    ctx = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])

if what in ("oop", "oopdeep"):
    import torch

    a = torch.full((256, 256), 0.999, device="cuda")
    b = torch.full((256, 256), 0.001, device="cuda")
    y = torch.randn(256, 256, device="cuda")

    def rnd():
        global y
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(50):
            y = y * a + b
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / 100 * 1e6

    def deep(k):
        return deep(k - 1) if k else statistics.median(rnd() for _ in range(200))

    def paired():
        on, off, diff = [], [], []
        for i in range(200):
            t = {}
            for rec in ((True, False) if i % 2 else (False, True)):
                (torch.cuda.profiler.start if rec else torch.cuda.profiler.stop)()
                t[rec] = rnd()
            torch.cuda.profiler.stop()
            on.append(t[True])
            off.append(t[False])
            diff.append(t[True] - t[False])
        return statistics.median(on), statistics.median(off), statistics.median(diff)

    def deep_paired(k):
        return deep_paired(k - 1) if k else paired()

    settle = float(os.environ.get("BENCH_SETTLE_S", "0"))
    t0 = time.perf_counter()
    if mode == "paired":
        for _ in range(20):
            rnd()
        on, off, d = deep_paired(40) if what == "oopdeep" else paired()
        print(json.dumps({"mode": mode, "what": what, "us_per_launch": round(on, 3),
                          "us_paused": round(off, 3), "us_added": round(d, 3)}))
        sys.exit(0)
    with ctx:
        for _ in range(20):
            rnd()
        while time.perf_counter() - t0 < settle:  # past a recording window (AICPROF_DURATION)
            rnd()
        us = deep(40) if what == "oopdeep" else statistics.median(rnd() for _ in range(200))
    print(json.dumps({"mode": mode, "what": what, "us_per_launch": round(us, 3)}))
else:
    sys.argv = [what] + sys.argv[3:]
    buf = io.StringIO()
    with ctx, contextlib.redirect_stdout(buf):
        runpy.run_path(what, run_name="__main__")
    ms = [float(l.split()[1]) for l in buf.getvalue().splitlines() if l.startswith("step_ms ")]
    loss = [l for l in buf.getvalue().splitlines() if " loss " in l][-1:]
    print(json.dumps({"mode": mode, "what": what, "step_ms": ms[0] if ms else None,
                      "last": loss[0] if loss else None}))
