"""Runs a sample's own main() and reports its step times and losses, optionally torch.compile'd.

usage: e2e_run.py SAMPLE.py [--compile] -- [the sample's arguments]

The sample marks each training step with torch.cuda.nvtx.range_push/range_pop; this wrapper
replaces those two with functions that synchronise and read the clock, and wraps
torch.Tensor.backward to keep each step's loss, so the sample's code runs unchanged. With
--compile, the forward of every nn.Module subclass the sample defines is wrapped in
torch.compile before main() runs. Prints one line of JSON: {"step_ms": [...], "loss": [...]}.
"""
import importlib.util
import json
import os
import sys
import time

import torch


def main():
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    opts = argv[:argv.index("--")] if "--" in argv else argv
    path, compile_ = opts[0], "--compile" in opts
    marks, losses = [], []

    def push(name):
        torch.cuda.synchronize()
        marks.append(time.perf_counter())
        return 0

    def pop():
        torch.cuda.synchronize()
        marks[-1] = (time.perf_counter() - marks[-1]) * 1e3
        return 0

    torch.cuda.nvtx.range_push = push
    torch.cuda.nvtx.range_pop = pop
    backward = torch.Tensor.backward

    def keep_loss(self, *a, **k):
        if self.dim() == 0:
            losses.append(self.detach().float().clone())
        return backward(self, *a, **k)

    torch.Tensor.backward = keep_loss
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("e2e_sample", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if compile_:
        for v in list(vars(mod).values()):
            if isinstance(v, type) and issubclass(v, torch.nn.Module) and "forward" in vars(v):
                v.forward = torch.compile(v.forward)
    sys.argv = [path] + rest
    mod.main()
    print(json.dumps({"step_ms": marks, "loss": [float(x) for x in losses]}), flush=True)


main()
