"""Times torch.compile's kernels for a column-reduction group, kernel against kernel.

usage: colcmp.py [--samples N] GROUP.json[:ROWSxCOLS] ...

Each GROUP.json is a group description of tests/fusion (kind column-reduction); ROWSxCOLS
overrides its shape (the ResNet sample's c5 group is resnet_bn_bwd_reduce's ops at 131072x64).
The group's ops are written as torch code, computing in fp32 from the inputs' storage types as the
generated kernel does: inputs with "per_row" are one value a row, inputs whose numel is the
column count one value a column, the rest full. The function returns the outputs and the kept
values (written to memory by both). It is compiled with torch.compile (default mode, no CUDA
graphs of its own), run once to compile, then captured with its eager form in CUDA graphs. Each
graph is timed as the generated bench harness times a launch: CUDA events around one replay
after an L2 flush (a 512 MiB write), median of N samples. A replay of a graph adds no launch
gaps of the host; what it adds beyond the kernels is the gap between them on the device.
The kernels each form launches are listed from one profiled replay. One JSON line a group:
{"name", "rows", "cols", "bytes", "eager_us", "compile_us", "compile_kernels", "eager_kernels",
"copy_gbs"} (copy_gbs: a device-to-device copy of 1 GiB timed the same way, the peak that the
harness's share of copy is measured against).
"""
import argparse
import json
import statistics
import sys

import torch

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def build(g, rows, cols):
    """Inputs and the group's function, from the group description."""
    ins = {}
    for v in g["inputs"]:
        dt = DT[v.get("dtype", g["dtype"])]
        if v.get("per_row"):
            shape = (rows, 1)
        elif v.get("numel") is not None and v["numel"] != rows * cols:
            shape = (cols,)
        else:
            shape = (rows, cols)
        ins[v["name"]] = torch.empty(shape, device="cuda", dtype=torch.float32).uniform_(
            -3, 3).to(dt)
    kept = {k["name"]: DT[k["dtype"]] for k in g.get("kept", [])}
    outs = [o["name"] for o in g["outputs"]]

    def f(*args):
        env = {n: a.float() for n, a in zip(ins, args)}
        for op in g["ops"]:
            a = [env[x] for x in op["args"]]
            o = op["op"]
            if o == "cast":
                r = a[0].to(DT[op["to"]]).float()
            elif o == "sub":
                r = a[0] - a[1]
            elif o == "add":
                r = a[0] + a[1]
            elif o == "mul":
                r = a[0] * a[1]
            elif o == "threshold_backward":
                r = torch.where(a[0] <= op["scalar"], 0.0, a[1])
            elif o == "col_sum":
                r = a[0].sum(0)
            else:
                raise SystemExit(f"colcmp.py: {g['name']}: op {o} is not written here")
            env[op["out"]] = r
        return tuple(env[n] for n in outs) + tuple(env[n].to(dt) for n, dt in kept.items())

    return list(ins.values()), f


def graph_of(fn, args):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(*args)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn(*args)
    return g


def time_us(replay, flush, samples):
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(samples + 3):
        flush.zero_()
        a.record()
        replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(ts[3:])


def kernels(replay):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        replay()
        torch.cuda.synchronize()
    return [e.name for e in p.events() if e.device_type.name == "CUDA"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("groups", nargs="+")
    a = ap.parse_args()
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_us = time_us(lambda: dst.copy_(src), flush, 20)
    for spec in a.groups:
        path, _, shape = spec.partition(":")
        with open(path) as fh:
            g = json.load(fh)
        if g.get("kind") != "column-reduction":
            raise SystemExit(f"colcmp.py: {path}: kind {g.get('kind')}, not column-reduction")
        rows, cols = (int(x) for x in shape.split("x")) if shape else (g["rows"], g["cols"])
        args, f = build(g, rows, cols)
        cf = torch.compile(f)
        want = f(*args)
        got = cf(*args)
        for w, o in zip(want, got):
            if not torch.allclose(w.float(), o.float(), rtol=1e-3, atol=1e-2 * max(1.0, rows ** 0.5)):
                print(f"not ok - colcmp {g['name']}: torch.compile's result differs from eager",
                      flush=True)
        ge, gc = graph_of(f, args), graph_of(cf, args)
        nbytes = sum(x.numel() * x.element_size() for x in args) + sum(
            x.numel() * x.element_size() for x in want)
        eu, cu = [], []
        for _ in range(2):  # alternating rounds
            eu.append(time_us(ge.replay, flush, a.samples))
            cu.append(time_us(gc.replay, flush, a.samples))
        print(json.dumps({
            "name": g["name"], "rows": rows, "cols": cols, "bytes": nbytes,
            "eager_us": [round(x, 2) for x in eu], "compile_us": [round(x, 2) for x in cu],
            "compile_kernels": kernels(gc.replay), "eager_kernels": len(kernels(ge.replay)),
            "copy_gbs": round(2 * src.numel() / copy_us / 1e3, 1),
            "compile_share_of_copy": round(nbytes / min(cu) / 1e3 / (2 * src.numel() / copy_us / 1e3), 3),
        }), flush=True)


if __name__ == "__main__":
    sys.exit(main())
