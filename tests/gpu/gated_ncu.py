"""An ncu target (docs/perf.md, session 19): one call of the gated group's forward and backward
kernels of a package at each KB_CFGS configuration (default "256,8,2 256,8,1"), then
torch.compile's two kernels for the same math, between cudaProfilerStart and Stop, at
(32768, 1408) bf16. Llama's SiLU form only.
  ncu --profile-from-start off --metrics launch__registers_per_thread,\
      sm__warps_active.avg.pct_of_peak_sustained_active,\
      dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum --csv \
      python3 tests/gpu/gated_ncu.py llama FUSEDDIR
"""
import importlib.util, os, shutil, subprocess, sys, tempfile
import torch, torch.nn.functional as F
which, pkg = sys.argv[1], sys.argv[2]
assert which == "llama", "the SiLU form only"
name = next(n for n in sorted(os.listdir(os.path.join(pkg, "aicprof_fused")))
            if n.startswith("f") and n.split("_", 1)[-1] == "LlamaMLP_forward")
N, C = 32 * 1024, 1408
g = torch.randn(N, C, device="cuda", dtype=torch.bfloat16); u = torch.randn_like(g); dy = torch.randn_like(g)
d = os.path.join(tempfile.gettempdir(), "gncu_" + which)
shutil.rmtree(d, ignore_errors=True); shutil.copytree(os.path.join(pkg, "aicprof_fused", name), d)
subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", os.path.join(d, "lib%s.so" % name), os.path.join(d, name + "_capi.cu")], check=True)
spec = importlib.util.spec_from_file_location("m", os.path.join(d, name + ".py")); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
act = F.silu
def fwd(g, u): return act(g) * u
def bwd(g, u, dy):
    gf = g.float(); s = torch.sigmoid(gf)
    return (dy.float() * u.float() * s * (1 + gf * (1 - s))).to(g.dtype), (dy.float() * act(gf)).to(g.dtype)
cf, cb = torch.compile(fwd), torch.compile(bwd)
for _ in range(3): cf(g, u); cb(g, u, dy)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
for cfg in [tuple(int(v) for v in c.split(",")) for c in os.environ.get("KB_CFGS", "256,8,2 256,8,1").split()]:
    m._cfg = cfg
    m._fwd(g, u, 0, 0); m._run_bwd([g, u, dy], 0, 0)
cf(g, u); cb(g, u, dy)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
