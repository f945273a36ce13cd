#!/usr/bin/env python3
"""Writes a summary.json of a huge step graph to argv[2], for testing the report's layout
budget. argv[1] picks the shape:
  chain N   N kernels of distinct names, each feeding the next and the one after (a ladder: no
            node has a unique successor, so no run collapses, and no name repeats, so nothing
            folds); a 20k-node chain crashed Graphviz's dot before.
  layers N  N copies of the same 24-kernel layer in a row (a deep model's repeated block): the
            report folds them into one "xN" box.
Deterministic: the same file every run."""
import json
import sys

MiB = 1 << 20
shape, out = sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else None
count = int(sys.argv[2]) if out else 20000
out = out or sys.argv[2]
nodes, edges = [], []


def node(name, us):
    i = len(nodes)
    nodes.append({"id": i, "kind": "kernel", "name": name, "full_name": "void %s(float*)" % name,
                  "family": "elementwise", "dtype": "f32", "count": 1, "median_us": us,
                  "stream": 7, "bytes_read": MiB, "bytes_written": MiB, "flops": 0,
                  "sources": ["model.py:%d" % (10 + i % 50)]})
    return i


def edge(a, b):
    edges.append({"from": a, "to": b, "bytes": MiB, "how": "semantics"})


if shape == "chain":
    for i in range(count):
        node("kernel_%05d_with_a_rather_long_templated_name<float, 4, true>" % i, 2.0 + i % 7)
        if i:
            edge(i - 1, i)
        if i > 1:
            edge(i - 2, i)
else:
    layer = ["ln_fwd", "gemm_qkv", "split", "attn_scores", "softmax", "attn_out", "gemm_proj",
             "add", "ln2", "gemm_fc1", "gelu", "gemm_fc2", "add2", "dropout", "scale", "copy",
             "cast", "mul", "sum", "bias", "relu", "norm", "view", "end"]
    for r in range(count):
        base = len(nodes)
        for k, name in enumerate(layer):
            node(name, 40.0 if name.startswith("gemm") else 3.0)
            if k:
                edge(base + k - 1, base + k)
            if k > 1 and k % 5 == 0:
                edge(base + k - 2, base + k)
        if r:
            edge(base - 1, base)
t = sum(n["median_us"] for n in nodes)
summary = {
    "format": 1, "tool": "aicprof 0.1.0",
    "traces": [{"path": "huge.aicp.jsonl", "pid": 1000, "records": len(nodes), "truncated": False,
                "warnings": []}],
    "program": "python huge.py",
    "device": {"name": "NVIDIA H200", "cc": "9.0", "sm_count": 132, "peak_bw_gbs": 4800.0},
    "steps": {"count": 1, "warmup": 0, "period": len(nodes), "how": "whole",
              "median_us": round(t, 1)},
    "nodes": nodes, "edges": edges, "candidates": [], "rejected": [],
}
with open(out, "w") as f:
    json.dump(summary, f)
