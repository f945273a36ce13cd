"""The fused LlamaRMSNorm forward and backward against the original (y, dx, dw), at the Llama
sample's shape (the backward's column group in one launch or two, by the row count) and at
32x2048x512 (1,056 partial rows: the chunked column kernel and its finish); then torch.compile
of the module with apply() on (the package's wrapper runs the original under compile), forward
and backward. TAP lines; run by tests/gpu/t-fused-apply.sh with the Llama package.
  python3 tests/gpu/rms_grad.py FUSEDDIR"""
import sys
import torch
sys.path.insert(0, sys.argv[1])
import aicprof_fused
from transformers.models.llama.modeling_llama import LlamaRMSNorm


def run(shape):
    torch.manual_seed(3)
    m = LlamaRMSNorm(512).cuda()
    with torch.no_grad():
        m.weight.copy_(torch.randn(512) * 0.5 + 1)
    x = torch.randn(*shape, device="cuda", requires_grad=True)
    g = torch.randn(*shape, device="cuda")
    y = m(x)
    y.backward(g)
    return y.detach(), x.grad.clone(), m.weight.grad.clone()


def rel(a, b):
    return ((a - b).norm() / b.norm()).item()


for shape in ((4, 256, 512), (32, 2048, 512)):
    ref = run(shape)
    aicprof_fused.apply()
    got = run(shape)
    c = aicprof_fused.counts()
    aicprof_fused.restore()
    r = [rel(a, b) for a, b in zip(got, ref)]
    ok = all(v < 1e-5 for v in r) and c.get("transformers.models.llama.modeling_llama.LlamaRMSNorm.forward", 0) > 0
    print("%s - fused LlamaRMSNorm %s: y, dx, dw against the original rel l2 %.2e %.2e %.2e (counts %s)"
          % ("ok" if ok else "not ok", shape, r[0], r[1], r[2], c))

aicprof_fused.apply()
m = LlamaRMSNorm(512).cuda()
cm = torch.compile(m)
x = torch.randn(4, 256, 512, device="cuda", requires_grad=True)
try:
    y = cm(x)
    y.sum().backward()
    y2 = LlamaRMSNorm(512).cuda()(x.detach())
    print("%s - torch.compile of the module with apply() on: runs, forward and backward (rel %.2e)"
          % ("ok" if rel(y.detach(), y2) < 1e-5 else "not ok", rel(y.detach(), y2)))
except Exception as e:  # noqa: BLE001
    print("not ok - torch.compile of the module with apply() on: %s: %s" % (type(e).__name__, str(e)[:300]))
