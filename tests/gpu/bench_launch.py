"""Per-launch overhead on a launch-bound loop: one process per measurement (tests/gpu/run.sh).

Usage: python3 bench_launch.py MODE   (MODE: bare, shim, noattr, profiler; the caller sets
LD_PRELOAD for shim and noattr). Prints one JSON line: {"mode":..,"us_per_launch":..}.
The loop launches one tiny kernel (x.add_(1) on 1 element) N times; three timed repeats,
the median is reported.
"""
import json
import statistics
import sys
import time

import torch

mode = sys.argv[1]
N = 20000
x = torch.zeros(1, device="cuda")


def run():
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(N):
        x.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / N * 1e6


def measure():
    run()  # warm-up
    return statistics.median(run() for _ in range(3))


if mode == "profiler":
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        us = measure()
else:
    us = measure()
print(json.dumps({"mode": mode, "us_per_launch": round(us, 3)}))
