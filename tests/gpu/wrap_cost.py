"""The host time of one call of a replaced function, original against aicprof_fused's form:
LlamaRMSNorm at the Llama sample's shape, forward and forward + backward, wall time a call
over 300 calls after a synchronize (the GPU kernels are a few µs; this is the CPU side: the
package's guards, the custom op, ctypes, against eager's launches). Interleaved, 5 rounds;
one_op is one eager `x * 2` a call, the host's own speed, for scale; group_fn the group's own
function without the wrapper.
Also the fused form's output and input gradient against the original's (largest relative
difference), so that a faster wrapper that computes wrong is seen.
  python3 tests/gpu/wrap_cost.py FUSEDDIR [LABEL]
"""
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, sys.argv[1])
import aicprof_fused  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRMSNorm  # noqa: E402

x0 = torch.randn(4, 256, 512, device="cuda")
g = torch.randn_like(x0)


def per_call(mod, bwd, n=300):
    x = x0.clone().requires_grad_(bwd)
    for _ in range(20):
        y = mod(x)
        if bwd:
            y.backward(g)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        y = mod(x)
        if bwd:
            y.backward(g)
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def out_grad(mod):
    x = x0.clone().requires_grad_(True)
    y = mod(x)
    y.backward(g)
    return y.detach(), x.grad


torch.manual_seed(1)
ref = out_grad(LlamaRMSNorm(512).cuda())
aicprof_fused.apply()
got = out_grad(LlamaRMSNorm(512).cuda())
aicprof_fused.restore()
diff = [((a - b).abs().max() / b.abs().max()).item() for a, b in zip(got, ref)]

spec = [f for f in aicprof_fused._FUNCS if f["form"] == "fused"][0]
grp_fn = getattr(aicprof_fused._load_group(spec["name"]), spec["name"])
w512 = torch.ones(512, device="cuda")
res = {"one_op": [], "group_fn": [], "orig_fwd": [], "fused_fwd": [], "orig_fwd_bwd": [], "fused_fwd_bwd": []}
for r in range(5):
    with torch.no_grad():  # the host's speed: one eager op a call (x * 2), for scale
        res["one_op"].append(per_call(lambda t: t * 2, False))
        # the group's own function, no wrapper: what the wrapper adds is fused_fwd minus this
        res["group_fn"].append(per_call(lambda t: grp_fn(t, w512)[0], False))
    for form in ("orig", "fused"):
        if form == "fused":
            aicprof_fused.apply()
        m = LlamaRMSNorm(512).cuda()
        with torch.no_grad():
            res[form + "_fwd"].append(per_call(m, False))
        res[form + "_fwd_bwd"].append(per_call(m, True))
        if form == "fused":
            aicprof_fused.restore()
print(json.dumps({"label": sys.argv[2] if len(sys.argv) > 2 else ""} |
                 {k: round(statistics.median(v), 2) for k, v in res.items()} |
                 {"rel_diff_out": diff[0], "rel_diff_grad": diff[1], "runs": {k: [round(x, 1) for x in v] for k, v in res.items()},
                  "counts": aicprof_fused.counts()}))
