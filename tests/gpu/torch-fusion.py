"""Checks the generated PyTorch module of the GELU -> dropout -> add chain against torch.

usage: torch-fusion.py P0_DIR P01_DIR (group directories written by aicprof fuse; the group in
P0_DIR has p = 0, the one in P01_DIR p = 0.1). The module builds its C ABI library with nvcc on
first use and runs as the custom op torch.ops.aicprof.<name>. Checks the forward, the fused
backward against torch's autograd (p = 0: equal up to rounding; p = 0.1: the gradient is
torch's where the element was kept and zero where it was dropped, the same mask as the forward),
and times the fused op against eager and against torch.compile of the same three ops.
Prints TAP lines and '#' timing notes.
"""
import os
import sys

import torch
import torch.nn.functional as F


def tap(ok, what):
    print(("ok - " if ok else "not ok - ") + what)


def load(d):
    sys.path.insert(0, d)
    name = os.path.basename(os.path.normpath(d))
    return getattr(__import__(name), name)


def median_us(f, n=30):
    ts = []
    for _ in range(3):
        f()
    for _ in range(n):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return sorted(ts)[len(ts) // 2]


def main():
    p0, p01 = load(sys.argv[1]), load(sys.argv[2])
    torch.manual_seed(1234)
    h = torch.randn(8, 1024, 4096, device="cuda", dtype=torch.bfloat16)
    res = torch.randn_like(h)

    (y,) = p0(h, res)
    ref = F.dropout(F.gelu(h), p=0.0) + res
    rel = ((y.float() - ref.float()).norm() / ref.float().norm()).item()
    tap(y.shape == h.shape and y.dtype == torch.bfloat16 and rel < 1e-2,
        "p=0: binding matches gelu + add in torch (rel_l2 %.2e)" % rel)

    gen = torch.cuda.default_generators[h.device.index or 0]
    off0 = gen.get_offset()
    (y,) = p01(h, res)
    tap(gen.get_offset() == off0 + 4, "p=0.1: the generator's offset advances by 4")
    kept = F.gelu(h.float()) / 0.9 + res.float()
    yf = res.float()
    e_keep = (y.float() - kept).abs()
    e_drop = (y.float() - yf).abs()
    tol = 2e-2 * (kept.abs() + 1)
    either = torch.minimum(e_keep, e_drop) <= tol
    tap(bool(either.all()), "p=0.1: every element is torch's kept value or the residual "
        "(%d outliers)" % int((~either).sum()))
    clear = (F.gelu(h.float()).abs() > 0.05)
    frac = ((e_drop < e_keep) & clear).sum().item() / clear.sum().item()
    tap(0.095 < frac < 0.105, "p=0.1: %.4f of the elements dropped" % frac)
    torch.manual_seed(7)
    (a,) = p01(h, res)
    torch.manual_seed(7)
    (b,) = p01(h, res)
    tap(bool(torch.equal(a, b)), "p=0.1: same generator state, same output")

    # autograd: the fused backward against torch's
    g = torch.randn_like(h)
    hh = h.clone().requires_grad_()
    rr = res.clone().requires_grad_()
    (y,) = p0(hh, rr)
    y.backward(g)
    h2 = h.float().clone().requires_grad_()
    (F.gelu(h2) + res.float()).backward(g.float())
    rel = ((hh.grad.float() - h2.grad).norm() / h2.grad.norm()).item()
    tap(hh.grad is not None and rel < 2e-2, "p=0: d/dh of the fused op matches torch (rel_l2 %.2e)"
        % rel)
    tap(rr.grad is not None and torch.equal(rr.grad, g), "p=0: d/dres is the incoming gradient")
    hh.grad = None
    (y,) = p01(hh, res)
    y.backward(g)
    kept = (y.float() - res.float()).abs() > 1e-6
    clear = F.gelu(h.float()).abs() > 0.05
    dt = h2.grad / 0.9
    e = (hh.grad.float() - dt).abs() <= 2e-2 * (dt.abs() + 1)
    ok_kept = bool((e | ~kept).all())
    ok_drop = bool((hh.grad[~kept & clear] == 0).all())
    tap(ok_kept and ok_drop, "p=0.1: d/dh is torch's / 0.9 where kept, 0 where dropped (the "
        "forward's mask)")

    # the three paths of the module's function: eager autograd through its autograd.Function,
    # the launch alone without autograd, and the custom op under torch.compile. The group has
    # a dropout (p 0): each call draws its own Philox offset, and curand's (0, 1] draws drop an
    # element where one is 1.0 (as PyTorch's fused dropout does), so each call is seeded alike
    hh.grad = rr.grad = None
    torch.manual_seed(11)
    (y,) = p0(hh, rr)
    tap(type(y.grad_fn).__name__ == "_FnBackward", "eager autograd records the op's "
        "autograd.Function (grad_fn %s)" % type(y.grad_fn).__name__)
    y.backward(g)
    eager_grad = hh.grad.clone()
    torch.manual_seed(11)
    with torch.no_grad():
        (y0,) = p0(hh, rr)
    tap(y0.grad_fn is None and torch.equal(y0, y.detach()), "no_grad: the launch alone, same "
        "output (grad_fn %s, %d elements differ)" % (y0.grad_fn, int((y0 != y).sum())))
    try:
        # not fullgraph: the Philox state is read from the generator outside the graph
        comp0 = torch.compile(lambda a, b: p0(a, b)[0])
        hh.grad = None
        torch.manual_seed(11)
        yc = comp0(hh, rr)
        yc.backward(g)
        tap(torch.equal(yc.detach(), y.detach()) and torch.equal(hh.grad, eager_grad),
            "torch.compile (its custom op): same output and gradient as eager (%d, %d elements "
            "differ)" % (int((yc != y).sum()), int((hh.grad != eager_grad).sum())))
    except Exception as ex:  # noqa: BLE001
        tap(False, "torch.compile of the fused op: %s: %s" % (type(ex).__name__, str(ex)[:300]))

    t_eager = median_us(lambda: F.dropout(F.gelu(h), p=0.1) + res)
    t_fused = median_us(lambda: p01(h, res))
    print("# torch eager gelu+dropout+add: %.1f us; fused op: %.1f us (%.2fx)"
          % (t_eager, t_fused, t_eager / t_fused))
    tap(t_fused < t_eager, "the fused op is faster than torch eager")
    try:
        comp = torch.compile(lambda a, b: F.dropout(F.gelu(a), p=0.1) + b)
        for _ in range(3):
            comp(h, res)
        t_comp = median_us(lambda: comp(h, res))
        n = h.numel() * h.element_size()
        print("# torch.compile gelu+dropout+add: %.1f us; fused op: %.1f us (%.2fx); fused %.0f "
              "GB/s logical (read h, res, write y: %.0f MB)" % (t_comp, t_fused, t_comp / t_fused,
                                                               3 * n / t_fused / 1e3, 3 * n / 1e6))
    except Exception as ex:  # noqa: BLE001
        print("# torch.compile unavailable: %s" % ex)


main()
