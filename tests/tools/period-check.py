#!/usr/bin/env python3
"""period-check.py - the step finder (analyzer/period.c) against the sample traces.

Extraction: every kernel launch, memcpy and memset API record of a .aicp.jsonl becomes one op,
in `seq` order (the order the host issued them), keyed by its name (the kernel's name string,
"memcpy:<kind>", "memset"); kernels that ran inside a CUDA graph launch have no API record of
their own, so they are placed by GPU start time after the last op that started before them.
A `sync` record sets the sync flag of the next op. NVTX push/pop records are NOT given to the
finder: "step N" pushes only give the ground truth (the index of the first op after each push).

The sequence is written as text (docs in tests/tools/period-check.c) and fed to
build/tools/period-check, which runs period_find and prints its result; this script compares
the step count with the expected one, the boundaries with the NVTX ones where there are any,
and prints a table. Exit status 1 when a trace does not match its golden expectation.
Run: python3 tests/tools/period-check.py [TRACE...]   (default: every sample in GOLDEN)
"""
import bisect
import json
import os
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(TOP, "build", "tools", "period-check")

# trace: (expected steps, ops expected in the prelude: (lo, hi) inclusive)
GOLDEN = {
    "gpt2_train": (8, (72, 82)),       # model .cuda() copies, randint; AdamW state lazy in step 0
    "llama_train": (8, (37, 47)),
    "resnet_train": (8, (144, 154)),
    "jax_train": (8, (2394, 2454)),    # XLA compilation and autotuning before the first step
    "cupy_loop": (8, (1, 5)),
    "mlp_train": (8, (6, 10)),         # NVTX steps: boundaries checked too
    "attention_train": (8, (3, 7)),
    "mlp_probe": (3, None),
    "attention_probe": (3, None),
    "chain": (6, None),
    "ddp_train.rank0": (None, None),  # NVTX steps; DDP's one-off broadcast opens step 1
    "ddp_train.rank1": (None, None),
}


def extract(path):
    """ops: list of (name, cpu ts, sync flag); truth: op index after each NVTX "step" push."""
    strs, api, act, syncs, pushes = {}, {}, {}, [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError:
                print(f"{path}:{n}: warning: line does not parse (cut trace?)", file=sys.stderr)
                break
            t = r.get("t")
            if t == "str":
                strs[r["id"]] = r["s"]
            elif t in ("launch", "memcpy", "memset"):
                api[r["c"]] = r
            elif t in ("kernel", "copy", "set"):
                act.setdefault(r["c"], []).append(r)
            elif t == "sync":
                syncs.append(r["seq"])
            elif t == "push" and str(r.get("text", "")).startswith("step "):
                pushes.append(r["seq"])
    ops = []  # (order, name, ts, kind)
    starts = []
    for c, r in api.items():
        a = act.get(c)
        if r["t"] == "launch":
            name = strs.get(r["fn"], "?")
        elif r["t"] == "memcpy":
            name = "memcpy:" + (a[0].get("kind", "?") if a else "?")
        else:
            name = "memset"
        ops.append([float(r["seq"]), name, r["ts"]])
        if a:
            starts.append((a[0]["start"], r["seq"], r["ts"]))
    starts.sort()
    keys = [s[0] for s in starts]
    for c, recs in act.items():
        if c in api:
            continue
        for k, r in enumerate(sorted(recs, key=lambda r: r["start"])):
            j = bisect.bisect_right(keys, r["start"]) - 1
            seq, ts = (starts[j][1], starts[j][2]) if j >= 0 else (-1, 0)
            name = strs.get(r.get("name"), "?") if r["t"] == "kernel" else r["t"]
            ops.append([seq + 0.5 + k * 1e-4, name, ts])
    ops.sort(key=lambda o: o[0])
    seqs = [o[0] for o in ops]
    flags = [0] * len(ops)
    for s in syncs:
        j = bisect.bisect_right(seqs, s)
        if j < len(ops):
            flags[j] = 1
    truth = [bisect.bisect_right(seqs, s) for s in pushes]
    return [(o[1], o[2], f) for o, f in zip(ops, flags)], truth


def run(path):
    ops, truth = extract(path)
    ids = {}
    with tempfile.NamedTemporaryFile("w", suffix=".seq", delete=False) as f:
        for name, ts, fl in ops:
            k = ids.setdefault(name, len(ids))
            f.write(f"{k} {ts} {fl}\n")
        tmp = f.name
    try:
        out = subprocess.run([TOOL, tmp], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(tmp)
    return json.loads(out), truth, len(ops)


def main():
    paths = sys.argv[1:] or [os.path.join(TOP, "samples", "traces", n + ".aicp.jsonl")
                             for n in GOLDEN]
    bad = 0
    print(f"{'trace':16} {'ops':>6} {'steps':>5} {'want':>4} {'period':>6} {'prelude':>8} "
          f"{'epilogue':>8} {'conf':>5} {'nvtx max |d|':>12}  reason")
    for p in paths:
        name = os.path.basename(p).replace(".aicp.jsonl", "")
        r, truth, n = run(p)
        want, pre = GOLDEN.get(name, (None, None))
        if want is None and truth:
            want = len(truth)
        got = len(r["steps"])
        dev = "-"
        ok = want is None or got == want
        if truth:
            starts = [s[0] for s in r["steps"]]
            if len(starts) == len(truth):
                d = max(abs(a - b) for a, b in zip(starts, truth))
                dev = str(d)
                ok = ok and d <= 8  # "within a few ops"
            else:
                dev = "count"
                ok = False
        if pre is not None and not pre[0] <= r["prelude"][1] - r["prelude"][0] <= pre[1]:
            ok = False
        bad += not ok
        print(f"{name:16} {n:6} {got:5} {want or '?':>4} {r['period']:6} "
              f"{r['prelude'][1] - r['prelude'][0]:8} {r['epilogue'][1] - r['epilogue'][0]:8} "
              f"{r['confidence']:5.2f} {dev:>12}  {'ok' if ok else 'MISMATCH'}: {r['reason']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
