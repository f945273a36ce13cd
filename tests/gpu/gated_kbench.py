"""The gated MLP's group, act(gate) * up and its fused backward, kernel against kernel on the
device: each package's kernels (the C ABI of aicprof_fused/<group>/, built here with nvcc) at
(32768, 1408) bf16 (46M elements, past the L2) for three launch configurations, the packages
alternating config by config in one process, against torch.compile's kernels for the same math
written in torch, eager PyTorch (its backward is that torch formula, not autograd's) and a copy
moving the forward's bytes (KB_CFGS="256,8,2 512,8,1 ..." names the (block, vec, ept)
configurations, by default those three). CUDA events, median of 7 runs of 100 calls, µs; one JSON line a
measurement, then all.
  python3 tests/gpu/gated_kbench.py llama|gemma LABEL=FUSEDDIR [LABEL=FUSEDDIR ...]
FUSEDDIR: what aicprof fuse wrote (f<k>_LlamaMLP_forward from the Llama sample's trace,
f<k>_GemmaMLP_forward from tests/traces/gemma_train.aicp.jsonl.gz; k is the function's place
in the package, found here). docs/perf.md, sessions 18 and 19.
"""
import importlib.util, json, os, shutil, statistics, subprocess, sys, tempfile
import torch
import torch.nn.functional as F

which, pkgs = sys.argv[1], sys.argv[2:]
cls = {"llama": "LlamaMLP_forward", "gemma": "GemmaMLP_forward"}[which]
act = (lambda g: F.silu(g)) if which == "llama" else (lambda g: F.gelu(g, approximate="tanh"))
N, C = 32 * 1024, 1408
torch.manual_seed(0)
g = torch.randn(N, C, device="cuda", dtype=torch.bfloat16)
u = torch.randn_like(g)
dy = torch.randn_like(g)

def t_us(fn, iters=100, reps=7):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        b.synchronize()
        res.append(a.elapsed_time(b) * 1e3 / iters)
    return round(statistics.median(res), 2)

def load(pkg, label):
    """The package's group module, its C ABI built afresh in a scratch copy."""
    name = next(n for n in sorted(os.listdir(os.path.join(pkg, "aicprof_fused")))
                if n.startswith("f") and n.split("_", 1)[-1] == cls)
    d = os.path.join(tempfile.gettempdir(), "gated_kbench_%s_%s" % (which, label))
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(pkg, "aicprof_fused", name), d)
    for f in os.listdir(d):
        if f.endswith(".so"):
            os.remove(os.path.join(d, f))
    major, minor = torch.cuda.get_device_capability()
    cmd = ["nvcc", "-O3", "-arch=sm_%d%d" % (major, minor), "-shared", "-Xcompiler", "-fPIC",
           "-o", os.path.join(d, "lib%s.so" % name), os.path.join(d, name + "_capi.cu")]
    subprocess.run(cmd, check=True)
    spec = importlib.util.spec_from_file_location("m_" + label, os.path.join(d, name + ".py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m

out = {"which": which, "n": N * C}
ref_y = (act(g.float()).to(torch.bfloat16).float() * u.float()).to(torch.bfloat16)
mods = [(lp.split("=", 1)[0], load(lp.split("=", 1)[1], lp.split("=", 1)[0])) for lp in pkgs]
CFGS = [tuple(int(v) for v in c.split(",")) for c in
        os.environ.get("KB_CFGS", "256,8,2 512,8,2 128,8,4").split()]
for cfg in CFGS:
    for label, m in mods:  # the packages alternate, config by config
        m._cfg = cfg
        y = m._fwd(g, u, 0, 0)
        err = ((y.float() - ref_y.float()).norm() / ref_y.float().norm()).item()
        f = t_us(lambda: m._fwd(g, u, 0, 0))
        b = t_us(lambda: m._run_bwd([g, u, dy], 0, 0))
        out["%s %s" % (label, cfg)] = {"fwd": f, "bwd": b, "err": "%.1e" % err}
        print(json.dumps({k: out[k] for k in list(out)[-1:]}), flush=True)

def fwd(g, u):
    return act(g) * u
def bwd(g, u, dy):
    gf = g.float()
    if which == "llama":
        s = torch.sigmoid(gf)
        dg = dy.float() * u.float() * s * (1 + gf * (1 - s))
    else:
        k = 0.7978845608028654
        t = torch.tanh(k * (gf + 0.044715 * gf ** 3))
        dg = dy.float() * u.float() * (0.5 * (1 + t) + 0.5 * gf * (1 - t * t) * k * (1 + 3 * 0.044715 * gf * gf))
    return dg.to(g.dtype), (dy.float() * act(gf)).to(g.dtype)
cf, cb = torch.compile(fwd), torch.compile(bwd)
out["compile"] = {"fwd": t_us(lambda: cf(g, u)), "bwd": t_us(lambda: cb(g, u, dy))}
out["eager"] = {"fwd": t_us(lambda: fwd(g, u)), "bwd": t_us(lambda: bwd(g, u, dy))}
x = torch.empty(N * C * 3 // 2, device="cuda", dtype=torch.bfloat16)
y2 = torch.empty_like(x)
out["copy_3x_bytes_us"] = t_us(lambda: y2.copy_(x))  # 3 tensors' bytes read + written = fwd's bytes
print(json.dumps(out))
