"""The rotary form of aicprof_fused (fusion/emit-rotary.c) against transformers'
apply_rotary_pos_emb on the GPU: q and k in the layouts models make them ([B, H, S, D] views of
[B, S, H, D] projections, and contiguous), grouped-query k with fewer heads, cos and sin in float32
(as Llama's under autocast) and bfloat16, unsqueeze_dim 1 and 2; the results' values, dtypes and
strides-independent equality, and the gradients of q and k through autograd. Prints TAP lines.
  python3 tests/gpu/rotary_check.py FUSEDDIR   (what aicprof fuse wrote from the Llama trace)
"""
import sys
import torch

sys.path.insert(0, sys.argv[1])
import aicprof_fused as af  # noqa: E402
from transformers.models.llama import modeling_llama as ml  # noqa: E402

res = []


def check(name, cond, note=""):
    res.append(("ok" if cond else "not ok") + " - rotary: %s%s" % (name, (" (%s)" % note) if note else ""))


key = "transformers.models.llama.modeling_llama.apply_rotary_pos_emb"
r = af.apply()
check("apply() replaced apply_rotary_pos_emb", r.get(key, {}).get("applied"), r.get(key, {}).get("reason"))
fused = ml.apply_rotary_pos_emb
orig = getattr(fused, "_aicprof_original", fused)


def rel(x, y):
    return ((x.float() - y.float()).norm() / y.float().norm().clamp_min(1e-12)).item()


def case(name, B, H, Hk, S, D, xdt, cdt, ud=1, transposed=True, pad=0):
    torch.manual_seed(1)
    def proj(h):
        if pad:  # a view at an odd offset with odd strides: the kernel's scalar path
            return torch.randn(B, h, S, D + pad, device="cuda", dtype=xdt)[..., pad:]
        if transposed:  # view(B, S, H, D).transpose(1, 2), as the attention modules make them
            return torch.randn(B, S, h, D, device="cuda", dtype=xdt).transpose(1, 2)
        return torch.randn(B, h, S, D, device="cuda", dtype=xdt)
    q, k = proj(H), proj(Hk)
    if ud == 2:  # [B, S, H, D] layout
        q, k = q.transpose(1, 2), k.transpose(1, 2)
    pos = torch.arange(S, device="cuda", dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, D, 2, device="cuda", dtype=torch.float32) / D))
    emb = torch.cat([torch.outer(pos, inv)] * 2, dim=-1)[None].expand(B, S, D)
    cos, sin = emb.cos().to(cdt), emb.sin().to(cdt)
    q1, k1 = q.detach().clone().requires_grad_(), k.detach().clone().requires_grad_()
    q2, k2 = q.detach().clone().requires_grad_(), k.detach().clone().requires_grad_()
    n0 = af.counts().get(key, 0)
    a = orig(q1, k1, cos, sin, unsqueeze_dim=ud)
    b = fused(q2, k2, cos, sin, unsqueeze_dim=ud)
    ran = af.counts().get(key, 0) > n0
    go = [torch.randn_like(a[0]), torch.randn_like(a[1])]
    # one backward through both results, as a model's loss takes it (one autograd node
    # holds both of the fused form's results)
    ((a[0] * go[0]).sum() + (a[1] * go[1]).sum()).backward()
    ((b[0] * go[0]).sum() + (b[1] * go[1]).sum()).backward()
    tol = 1e-5 if xdt == torch.float32 and cdt == torch.float32 else 2e-2
    e = [rel(b[0], a[0]), rel(b[1], a[1]), rel(q2.grad, q1.grad), rel(k2.grad, k1.grad)]
    check("%s: the fused form ran, values and gradients match (tol %g)" % (name, tol),
          ran and b[0].dtype == a[0].dtype and b[1].dtype == a[1].dtype and
          q2.grad.dtype == q1.grad.dtype and max(e) < tol,
          "ran %s, rel l2 q %.1e k %.1e dq %.1e dk %.1e, dtypes %s %s" %
          (ran, e[0], e[1], e[2], e[3], b[0].dtype, a[0].dtype))


case("Llama's: bf16 q/k, f32 cos/sin, transposed", 4, 8, 8, 256, 64, torch.bfloat16, torch.float32)
case("grouped-query k (2 heads of 8)", 2, 8, 2, 128, 128, torch.bfloat16, torch.float32)
case("bf16 cos/sin", 2, 4, 4, 64, 64, torch.bfloat16, torch.bfloat16)
case("f32 throughout, contiguous", 2, 4, 4, 64, 32, torch.float32, torch.float32, transposed=False)
case("unsqueeze_dim 2 ([B, S, H, D])", 2, 4, 4, 64, 64, torch.bfloat16, torch.float32, ud=2)
# the vector kernel (8 pairs a thread in bf16) cannot take these: the scalar one runs them
case("q and k at an odd offset, odd strides", 2, 4, 4, 64, 64, torch.bfloat16, torch.bfloat16, pad=1)
case("head dimension 12 (half of it not a multiple of 8)", 2, 4, 4, 64, 12, torch.bfloat16,
     torch.float32)
case("f16 q/k, f32 cos/sin", 2, 4, 2, 64, 64, torch.float16, torch.float32)
# a call that does not fit: an odd head dimension runs the original
q = torch.randn(1, 2, 4, 7, device="cuda")
n0 = af.counts().get(key, 0)
out = fused(q, q, torch.randn(1, 4, 7, device="cuda"), torch.randn(1, 4, 7, device="cuda"))
check("an odd head dimension runs the original and says why",
      af.counts().get(key, 0) == n0 and "even D" in (af.applied()[key]["last_fallback"] or ""),
      af.applied()[key]["last_fallback"])
v = af.applied()[key]
check("every class verified on first use", v["verified"] and
      all(x == "verified" for x in v["verified"].values()), str(v["verified"])[:300])


def timing(f, B=4, H=8, S=256, D=64, iters=200):
    """Wall time of a forward and backward a call at Llama's sample shape (launch-bound there),
    and the GPU kernels' time under CUDA events, both µs a call, median of 5."""
    import statistics
    q = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    k = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    emb = torch.randn(1, S, D, device="cuda")
    cos, sin = emb.cos(), emb.sin()
    def one():
        a, b = f(q, k, cos, sin)
        (a.sum() + b.sum()).backward()
    for _ in range(10):
        one()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
        e0.record()
        for _ in range(iters):
            one()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3 / iters)
    return round(statistics.median(ts), 2)


t_orig, t_fused = timing(orig), timing(fused)
res.append("# rotary at (4, 8, 256, 64) bf16, forward + backward (with the sums): original "
           "%.2f us a call, fused %.2f us" % (t_orig, t_fused))
print("\n".join(res))
