#!/usr/bin/env python3
"""Writes a large summary.json (a 12-layer transformer training step, about 400 nodes) to the
file named by argv[1], for testing the report's collapse of small kernels and its top-N view.
Deterministic: the same file every run."""
import json
import random
import sys

MiB = 1 << 20
rng = random.Random(1234)
nodes, edges, values, events = [], [], [], []
cands, rejected = [], []


def node(name, fam, us, br, bw, flops, src, kind="kernel", stream=7):
    i = len(nodes)
    tot = br + bw
    nodes.append({"id": i, "kind": kind, "name": name,
                  "full_name": "void at::native::%s_kernel<c10::BFloat16, float>(int, float*)" % name,
                  "family": fam, "dtype": "bf16", "count": 20, "median_us": round(us, 2),
                  "stream": stream, "bytes_read": br, "bytes_written": bw, "flops": flops,
                  "achieved_gbs": round(tot / (us * 1e3), 1),
                  "intensity": round(flops / tot, 4) if tot else 0.0,
                  "bound": "compute" if fam == "gemm" else "memory",
                  "sources": ["model.py:%d" % src]})
    return i


def edge(a, b, size):
    vid = len(values)
    values.append({"id": vid, "buffer": vid, "size": size, "writer": a, "readers": [b],
                   "bytes_written": size, "bytes_read": size, "intermediate": True,
                   "live_after_step": False, "source": nodes[a]["sources"][0]})
    edges.append({"from": a, "to": b, "value": vid, "bytes": size, "how": "semantics"})
    return vid


prev = node("embedding", "index", 12.0, 8 * MiB, 8 * MiB, 0, 10)
for layer in range(12):
    base = 20 + layer % 3
    q = node("gemm_qkv", "gemm", 45 + rng.random() * 5, 24 * MiB, 24 * MiB, 2 * 4096 * 1024 * 3072, base)
    edge(prev, q, 8 * MiB)
    # a run of small elementwise kernels (rotary, scale, casts): collapsible
    last = q
    for k in range(12):
        s = node("small_op_%d" % k, "elementwise", 1.0 + rng.random() * 2, 2 * MiB, 2 * MiB, 524288, base + 1)
        edge(last, s, 2 * MiB)
        last = s
    at = node("flash_attention", "attention", 80 + rng.random() * 10, 32 * MiB, 8 * MiB, 2 * 4096 * 4096 * 128, base + 2)
    edge(last, at, 8 * MiB)
    o = node("gemm_out", "gemm", 20 + rng.random() * 3, 16 * MiB, 8 * MiB, 2 * 4096 * 1024 * 1024, base + 3)
    edge(at, o, 8 * MiB)
    r = node("add_residual", "elementwise", 8.5, 16 * MiB, 8 * MiB, 4194304, base + 3)
    edge(o, r, 8 * MiB)
    edge(prev, r, 8 * MiB)
    n = node("layer_norm", "norm", 6.2, 8 * MiB, 8 * MiB, 4194304 * 8, base + 4)
    edge(r, n, 8 * MiB)
    cands.append({"id": len(cands), "kind": "reduction-epilogue", "nodes": [r, n],
                  "values_removed": [len(values) - 1], "values_kept": [],
                  "bytes_saved_per_step": 16 * MiB, "time_before_us": 14.7, "time_after_us": 9.0,
                  "time_saved_us_per_step": round(5.7 - layer * 0.1, 2),
                  "sources": ["model.py:%d" % (base + 3)], "library_form": None,
                  "why": "residual add feeds the norm directly"})
    f1 = node("gemm_fc1", "gemm", 57 + rng.random() * 4, 16 * MiB, 32 * MiB, 2 * 4096 * 1024 * 4096, base + 5)
    edge(n, f1, 8 * MiB)
    g = node("gelu", "elementwise", 21.5, 32 * MiB, 32 * MiB, 16777216 * 8, base + 5)
    edge(f1, g, 32 * MiB)
    cands.append({"id": len(cands), "kind": "gemm-epilogue", "nodes": [f1, g],
                  "values_removed": [len(values) - 1], "values_kept": [],
                  "bytes_saved_per_step": 64 * MiB, "time_before_us": 79.0, "time_after_us": 58.0,
                  "time_saved_us_per_step": round(21.0 - layer * 0.2, 2),
                  "sources": ["model.py:%d" % (base + 5)], "library_form": "cuBLASLt epilogue GELU_BIAS",
                  "why": "the GELU reads and writes the 32 MiB fc1 output"})
    f2 = node("gemm_fc2", "gemm", 57 + rng.random() * 4, 40 * MiB, 8 * MiB, 2 * 4096 * 1024 * 4096, base + 6)
    edge(g, f2, 32 * MiB)
    # backward-ish tail: more small kernels
    last = f2
    for k in range(14):
        s = node("bwd_small_%d" % k, "elementwise", 0.8 + rng.random() * 2, MiB, MiB, 262144, 40)
        edge(last, s, MiB)
        last = s
    prev = last
    if layer % 4 == 0:
        rejected.append({"nodes": [g, f2], "kind": "gemm-prologue",
                         "reason": "gelu output saved for backward (read by a later node)"})
opt = node("multi_tensor_apply_kernel", "optimizer", 180.0, 512 * MiB, 384 * MiB, 0, 60)
edge(prev, opt, 4 * MiB)

t = 0.0
for n in nodes:
    events.append({"node": n["id"], "kind": "kernel", "stream": n["stream"], "start_us": round(t, 2),
                   "dur_us": n["median_us"], "name": n["name"]})
    t += n["median_us"] + 1.5
kernel_us = sum(n["median_us"] for n in nodes)
br = sum(n["bytes_read"] for n in nodes)
bw = sum(n["bytes_written"] for n in nodes)
rt = sum(2 * v["size"] for v in values)
summary = {
    "format": 1, "tool": "aicprof 0.1.0",
    "traces": [{"path": "large.aicp.jsonl", "pid": 1000, "records": 400000, "truncated": False, "warnings": []}],
    "program": "python model.py --layers 12",
    "device": {"name": "NVIDIA H200", "cc": "9.0", "sm_count": 132, "peak_bw_gbs": 4800.0,
               "peak_tflops": {"fp32": 67.0, "bf16": 989.0}},
    "steps": {"count": 10, "warmup": 1, "period": len(nodes), "how": "nvtx",
              "median_us": round(t, 1), "p10_us": round(t * 0.99, 1), "p90_us": round(t * 1.02, 1)},
    "nodes": nodes, "edges": edges,
    "ledger": {"per_step": {"bytes_read": br, "bytes_written": bw, "bytes_total": br + bw,
                            "roundtrip_bytes": rt, "roundtrip_share": round(rt / (br + bw), 3),
                            "kernel_us": round(kernel_us, 1), "copy_us": 0},
               "values": values},
    "candidates": cands, "rejected": rejected,
    "timeline": {"step": 5, "t0_ns": 1764430000000000000, "events": events},
}
with open(sys.argv[1], "w") as f:
    json.dump(summary, f)
