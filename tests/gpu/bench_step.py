"""Step-time benchmark for programs that look like users' (tests/gpu/real.sh, docs/perf.md).

Usage: python3 bench_step.py MODE WHAT [ARGS...]
  MODE: lockstep (one of tests/gpu/lockstep.py's two jobs, WHAT gpt2job or fake) | bare | shim | profiler (the caller sets LD_PRELOAD and AICPROF_* for the shim modes;
        profiler wraps the run in torch.profiler with CPU and CUDA activities) | paired (oop,
        oopdeep, and a sample's path: then samples/gpt2_train.py's model and step, one step a
        half, BENCH_PAIRS pairs, default 30; under the shim with AICPROF_CAPTURE=profiler-api: rounds alternate
        between recording, inside torch.cuda.profiler.start()/stop(), and paused, in one
        process, and the figure is the median of the paired differences: the launch path's
        cost without the noise between processes; allocations are recorded in both, so their
        cost is in neither: "alloc_reports_per_step" counts them, from PyTorch's counters;
        with AICPROF_PAUSE_BLOCKS=1 the paused halves skip the caching allocator's blocks, and
        the difference holds their cost too: "blocks_paused" says which; with
        AICPROF_PAUSE_ACTIVITY=1 the paused halves time no kernel either (CUPTI's activity
        off), and the difference holds that too: "activity_paused"; BENCH_BATCH: the
        batch, default 8, the sample's)
  WHAT: gpt2job (a whole training job: samples/gpt2_train.py's model, BENCH_JOB_STEPS steps
        in one process, default 600; the mean step over all of them, so that a recording
        window that closes early shows), oop (an out-of-place launch loop: y = y * a + b on 256x256, 100 launches a round,
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


def pairs(run, n):
    """n pairs of run() recording and paused (torch.cuda.profiler.start/stop under
    AICPROF_CAPTURE=profiler-api), the order within a pair alternating; medians of the
    recording halves, the paused halves and the paired differences."""
    import torch
    on, off, diff = [], [], []
    for i in range(n):
        t = {}
        for rec in ((True, False) if i % 2 else (False, True)):
            (torch.cuda.profiler.start if rec else torch.cuda.profiler.stop)()
            t[rec] = run()
        torch.cuda.profiler.stop()
        on.append(t[True])
        off.append(t[False])
        diff.append(t[True] - t[False])
    return statistics.median(on), statistics.median(off), statistics.median(diff)


def gpt2_step():
    """samples/gpt2_train.py's model and training step (BENCH_BATCH), as a function that runs
    one step and returns its milliseconds"""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, vocab_size=8192, n_positions=256,
                     bos_token_id=0, eos_token_id=0)
    cfg._attn_implementation = "eager"
    model = GPT2LMHeadModel(cfg).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    # BENCH_BATCH (default 8, the sample's): a larger batch makes a step the GPU bounds, with
    # the same launches a step, as a real training job's
    batch = int(os.environ.get("BENCH_BATCH", "8"))
    ids = torch.randint(0, cfg.vocab_size, (batch, 256), device="cuda")

    def step():
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return (time.perf_counter() - t) * 1e3

    return step, batch


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
        return pairs(rnd, 200)

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
elif mode == "lockstep":  # one of tests/gpu/lockstep.py's two jobs: a step each time it
    # says "s" on the fd it gave (BENCH_LOCK_FDS="IN,OUT"), the step's ms the answer; "q" ends.
    # WHAT gpt2job: the GPT-2 sample's step; fake: BENCH_FAKE_MS of sleep plus a drift that
    # both jobs share (BENCH_FAKE_DRIFT_MS times a sine of the wall clock, period 0.25 s) plus
    # BENCH_FAKE_EXTRA_MS (the cost it stands for); BENCH_FAKE_DIE_AT=N exits 3 at step N
    # (tests/func/t-lockstep.sh)
    import math
    fin, fout = (int(x) for x in os.environ["BENCH_LOCK_FDS"].split(","))
    if what == "gpt2job":
        step, _ = gpt2_step()
    else:
        base = float(os.environ.get("BENCH_FAKE_MS", "3"))
        drift = float(os.environ.get("BENCH_FAKE_DRIFT_MS", "0"))
        extra = float(os.environ.get("BENCH_FAKE_EXTRA_MS", "0"))
        die = int(os.environ.get("BENCH_FAKE_DIE_AT", "-1"))
        count = [0]

        def step():
            if count[0] == die:
                os._exit(3)
            count[0] += 1
            t = time.perf_counter()
            d = base + extra + drift * math.sin(2 * math.pi * time.time() / 0.25)
            time.sleep(max(d, 0) / 1e3)
            return (time.perf_counter() - t) * 1e3
    rf = os.fdopen(fin, "rb", buffering=0)
    os.write(fout, b"ready\n")
    while True:
        cmd = rf.readline()
        if cmd != b"s\n":  # "q" or the driver gone
            break
        os.write(fout, b"%.4f\n" % step())
    sys.exit(0)
elif what == "gpt2job":  # a whole training job: BENCH_JOB_STEPS steps (default 600) of the GPT-2
    # model in one process, every step timed; the mean over all steps after two of warm-up is
    # what the job took a step (a recording window that closes early shows in it), with the
    # means of the first 150 steps and of the rest beside it
    step, batch = gpt2_step()
    with ctx:
        ms = [step() for _ in range(int(os.environ.get("BENCH_JOB_STEPS", "600")))][2:]
    print(json.dumps({"mode": mode, "what": what, "batch": batch, "steps": len(ms) + 2,
                      "step_ms": round(statistics.mean(ms), 3),
                      "median_ms": round(statistics.median(ms), 3),
                      "first150_ms": round(statistics.mean(ms[:148]), 3),
                      "rest_ms": round(statistics.mean(ms[148:] or ms), 3),
                      # the mean of each 50 steps in turn: where a window closes, the step drops
                      "by50_ms": [round(statistics.mean(ms[i:i + 50]), 2)
                                  for i in range(0, len(ms), 50)]}))
elif mode == "paired":  # a sample's training step (samples/gpt2_train.py's model), paired
    # in one process: steps alternate between recording and paused (AICPROF_CAPTURE=
    # profiler-api), in pairs whose order alternates; the figure is the median of the paired
    # differences, the recording path's cost a step without the noise between processes
    # (allocations are recorded in both halves: the shim's map needs them)
    import torch
    step, batch = gpt2_step()
    for rec in (True, False, True, False):  # warm-up: the first stacks, both halves
        (torch.cuda.profiler.start if rec else torch.cuda.profiler.stop)()
        step()
    npairs = int(os.environ.get("BENCH_PAIRS", "30"))
    ms0 = torch.cuda.memory_stats()
    m_on, m_off, m_d = pairs(step, npairs)
    ms1 = torch.cuda.memory_stats()
    # what the paired difference leaves out: the caching allocator's block reports a step
    # (each an allocation or free record in both halves), from PyTorch's own counters
    reports = sum(ms1.get(k, 0) - ms0.get(k, 0)
                  for k in ("allocation.all.allocated", "allocation.all.freed")) / (2 * npairs)
    print(json.dumps({"mode": mode, "what": what, "batch": batch, "step_ms": round(m_on, 3),
                      "ms_paused": round(m_off, 3), "ms_added": round(m_d, 3),
                      "pct_added": round(100 * m_d / m_off, 2),
                      "alloc_reports_per_step": round(reports, 1),
                      "blocks_paused": os.environ.get("AICPROF_PAUSE_BLOCKS", "0") == "1",
                      "activity_paused": os.environ.get("AICPROF_PAUSE_ACTIVITY", "0") == "1"}))
else:
    sys.argv = [what] + sys.argv[3:]
    buf = io.StringIO()
    with ctx, contextlib.redirect_stdout(buf):
        runpy.run_path(what, run_name="__main__")
    ms = [float(l.split()[1]) for l in buf.getvalue().splitlines() if l.startswith("step_ms ")]
    loss = [l for l in buf.getvalue().splitlines() if " loss " in l][-1:]
    print(json.dumps({"mode": mode, "what": what, "step_ms": ms[0] if ms else None,
                      "last": loss[0] if loss else None}))
