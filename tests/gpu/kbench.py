"""Kernel against kernel on the device: the package's fused forms against eager PyTorch and
torch.compile, for the functions apply() replaces in the GPT-2 and Llama samples.

  python3 tests/gpu/kbench.py [--pkg-gpt2 FUSEDDIR] [--pkg-llama FUSEDDIR] [--iters 50] [--large]
                              [--forms eager,fused,compile] [--label NAME]

For each function (transformers' NewGELUActivation.forward at the GPT-2 sample's shape,
LlamaRMSNorm.forward and LlamaMLP.forward (--only mlp: the gated form, its GEMMs included in
every form's time) at the Llama sample's, and apply_rotary_pos_emb (--only rotary: q the input,
k a parameter, both results' gradients); with --large also at a size whose copy runs from
HBM, not the L2) and each form (eager: the library's code; fused:
after aicprof_fused.apply(); compile: torch.compile of the module, default mode), runs the
forward and backward `iters` times under torch.profiler and sums the GPU time of the kernels of
each iteration (CUPTI's kernel durations: launch overhead is not in them), split into forward
and backward by autograd's thread. Also times a plain copy of the same bytes (x.clone()) as the
bandwidth reference. Prints one JSON line per function: per form the median kernel time per
iteration (µs), the kernel count, each kernel's µs an iteration of forward and backward
(fwd_bwd_by_kernel), and for the fused forward its bandwidth against the copy's.
Without --pkg-* and with the fused form asked for (only then: the eager and compile forms need no
build/aicprof) it analyses and fuses the bundled trace (build/aicprof) into a temporary
directory. The fused form's `fused_applied` is aicprof_fused.applied() after its run: whether
the forward + backward iterations ran the fused backward (LlamaRMSNorm's row and column
kernels) or fell back to the original (`last_fallback`). Each function runs in a process of its own, its forms one after another; the kernel times do not depend on the host's noise, which is
what interleaving guards against elsewhere.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def fuse(top, trace, tmp):
    aic = os.path.join(top, "build", "aicprof")
    an, f = os.path.join(tmp, "an"), os.path.join(tmp, "f")
    subprocess.run([aic, "analyze", trace, "-o", an], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    subprocess.run([aic, "fuse", an, "-o", f], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=top)
    return f


FORMS = ("eager", "fused", "compile")
LABEL = ""


def bench(name, make, x_shape, dtype, iters, pkg):
    import torch
    x0 = torch.randn(*x_shape, device="cuda", dtype=dtype)
    res = {"function": name, "shape": list(x_shape), "dtype": str(dtype).split(".")[-1],
           "label": LABEL}

    def run_form(form):
        mod = make().cuda()
        if form == "fused":
            sys.path.insert(0, pkg)
            import aicprof_fused
            aicprof_fused.apply()
            mod = make().cuda()
        f = torch.compile(mod) if form == "compile" else mod
        x = x0.clone().requires_grad_(True)
        g = torch.randn_like(x0)

        def fwd():
            # as in the samples: the model's forward runs under bf16 autocast
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return f(x)

        def step():
            y = fwd()
            if isinstance(y, tuple):  # several results (rotary's q and k): a gradient each
                torch.autograd.backward(y, [torch.ones_like(t) for t in y])
            else:
                y.backward(g)

        from torch.profiler import ProfilerActivity, profile
        with torch.no_grad():
            y = fwd()  # the bytes one forward moves: its input and its result as they are
        ys = y if isinstance(y, tuple) else (y,)
        # its inputs (x, and the module's bench_inputs() where it has more) and its results
        more = mod.bench_inputs() if hasattr(mod, "bench_inputs") else ()
        res["fwd_bytes"] = sum(t.numel() * t.element_size() for t in (x, *more, *ys))
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        fw, bw, nk_f, nk_b = [], [], [], []
        for phase in ("fwd", "step"):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(iters):
                    (fwd if phase == "fwd" else step)()
                torch.cuda.synchronize()
            ks = [e for e in prof.events() if e.device_type.name == "CUDA"]
            tot = sum(e.device_time for e in ks) if ks and hasattr(ks[0], "device_time") else \
                sum(e.cuda_time for e in ks)
            per = tot / iters
            if phase == "fwd":
                fw.append(per)
                nk_f.append(len(ks) / iters)
            else:
                bw.append(per)
                nk_b.append(len(ks) / iters)
                # each kernel's share of the iteration: which of them makes a difference
                by = {}
                for e in ks:
                    by[e.name[:70]] = by.get(e.name[:70], 0.0) + (
                        getattr(e, "device_time", 0) or e.cuda_time)
                breakdown = {k: round(v / iters, 2) for k, v in
                             sorted(by.items(), key=lambda kv: -kv[1])}
        if form == "fused":
            import aicprof_fused
            counts = aicprof_fused.counts()
            # what ran: replaced, verified, and the last fallback (under autograd a group
            # without a fused backward runs the original)
            applied = json.loads(json.dumps(aicprof_fused.applied(), default=str))
            aicprof_fused.restore()
            res.setdefault("fused_counts", counts)
            res.setdefault("fused_applied", applied)
        return {"fwd_us": round(statistics.median(fw), 2), "fwd_kernels": nk_f[0],
                "fwd_bwd_us": round(statistics.median(bw), 2), "fwd_bwd_kernels": nk_b[0],
                "fwd_bwd_by_kernel": breakdown}

    for form in FORMS:
        try:
            res[form] = run_form(form)
        except Exception as e:  # a form that fails is reported, the others still run
            res[form] = {"error": repr(e)[:300]}
    # the copy reference: read and write the same bytes once
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            x0.clone()
        torch.cuda.synchronize()
    ks = [e for e in prof.events() if e.device_type.name == "CUDA"]
    t = sum(getattr(e, "device_time", 0) or e.cuda_time for e in ks) / iters
    nbytes = 2 * x0.numel() * x0.element_size()
    res["copy_us"] = round(t, 2)
    res["copy_gbs"] = round(nbytes / (t * 1e3), 1) if t else None
    fu = res.get("fused", {}).get("fwd_us")
    if fu:
        res["fused_fwd_gbs"] = round(res.get("fwd_bytes", nbytes) / (fu * 1e3), 1)
        res["fused_fwd_share_of_copy"] = round(res["fused_fwd_gbs"] / res["copy_gbs"], 3)
    print(json.dumps(res), flush=True)


def main():
    global FORMS, LABEL
    ap = argparse.ArgumentParser()
    ap.add_argument("--pkg-gpt2")
    ap.add_argument("--pkg-llama")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--only", default="gelu,rmsnorm")
    ap.add_argument("--large", action="store_true",
                    help="also each function at a size past the 60 MB L2 (HBM-bound copy)")
    ap.add_argument("--forms", default="eager,fused,compile",
                    help="which forms to run (packages side by side: --forms fused)")
    ap.add_argument("--label", default="", help="a name for the package, in the output")
    a = ap.parse_args()
    FORMS, LABEL = tuple(a.forms.split(",")), a.label
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if "," in a.only:  # one process per function: each imports its own aicprof_fused
        for one in a.only.split(","):
            cmd = [sys.executable, os.path.abspath(__file__), "--only", one, "--iters", str(a.iters)]
            cmd += ["--large"] if a.large else []
            cmd += ["--forms", a.forms, "--label", a.label]
            for k in ("pkg_gpt2", "pkg_llama"):
                if getattr(a, k):
                    cmd += ["--" + k.replace("_", "-"), getattr(a, k)]
            subprocess.run(cmd)
        return
    import torch
    if "gelu" in a.only:
        pkg = a.pkg_gpt2 or ("fused" in FORMS and fuse(
            top, os.path.join(top, "samples/traces/gpt2_train.aicp.jsonl"),
            tempfile.mkdtemp(prefix="kb_gpt2.")))
        from transformers.activations import NewGELUActivation
        # the GPT-2 sample: batch 8 x 256 tokens, 4 x 512 inner width, bf16 autocast
        bench("NewGELUActivation.forward", NewGELUActivation, (8, 256, 2048), torch.bfloat16,
              a.iters, pkg)
        if a.large:  # 64 MiB in, 128 MiB out (the chain's tail runs in float32)
            bench("NewGELUActivation.forward", NewGELUActivation, (16, 1024, 2048),
                  torch.bfloat16, a.iters, pkg)
    if "rmsnorm" in a.only:
        pkg = a.pkg_llama or ("fused" in FORMS and fuse(
            top, os.path.join(top, "samples/traces/llama_train.aicp.jsonl"),
            tempfile.mkdtemp(prefix="kb_llama.")))
        from transformers.models.llama.modeling_llama import LlamaRMSNorm
        bench("LlamaRMSNorm.forward", lambda: LlamaRMSNorm(512), (4, 256, 512), torch.float32,
              a.iters, pkg)
        if a.large:  # 128 MiB in and out; the package guards on the sample's 512 columns
            bench("LlamaRMSNorm.forward", lambda: LlamaRMSNorm(512), (32, 2048, 512),
                  torch.float32, a.iters, pkg)
    if "rotary" in a.only:
        pkg = a.pkg_llama or ("fused" in FORMS and fuse(
            top, os.path.join(top, "samples/traces/llama_train.aicp.jsonl"),
            tempfile.mkdtemp(prefix="kb_llama.")))
        import transformers.models.llama.modeling_llama as ml

        class Rotary(torch.nn.Module):
            """transformers' apply_rotary_pos_emb on q (the input) and k (a parameter, so that
            both get gradients), cos and sin of the Llama sample's layout ([b, s, d], bf16);
            looked up in its module at each call, where apply() replaces it"""
            def __init__(self, shape):
                super().__init__()
                b, h, s, d = shape
                self.k = torch.nn.Parameter(torch.randn(shape, dtype=torch.bfloat16))
                pos = torch.arange(s, dtype=torch.float32)[:, None]
                inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
                emb = torch.cat((pos * inv, pos * inv), dim=-1)
                self.register_buffer("cos", emb.cos().to(torch.bfloat16).expand(b, s, d).contiguous())
                self.register_buffer("sin", emb.sin().to(torch.bfloat16).expand(b, s, d).contiguous())

            def forward(self, q):
                return ml.apply_rotary_pos_emb(q, self.k, self.cos, self.sin)

            def bench_inputs(self):  # what a forward reads besides q
                return (self.k, self.cos, self.sin)

        # the Llama sample's q: batch 4, 8 heads, 256 tokens, head dim 64
        bench("apply_rotary_pos_emb", lambda: Rotary((4, 8, 256, 64)), (4, 8, 256, 64),
              torch.bfloat16, a.iters, pkg)
        if a.large:  # 64 MiB each of q, k and their results
            bench("apply_rotary_pos_emb", lambda: Rotary((32, 8, 2048, 64)), (32, 8, 2048, 64),
                  torch.bfloat16, a.iters, pkg)
    if "mlp" in a.only:
        pkg = a.pkg_llama or ("fused" in FORMS and fuse(
            top, os.path.join(top, "samples/traces/llama_train.aicp.jsonl"),
            tempfile.mkdtemp(prefix="kb_llama.")))
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import LlamaMLP
        # the Llama sample's gated MLP: 512 -> 2 x 1408 -> 512, its three GEMMs in every form
        cfg = LlamaConfig(hidden_size=512, intermediate_size=1408)
        bench("LlamaMLP.forward", lambda: LlamaMLP(cfg), (4, 256, 512), torch.float32,
              a.iters, pkg)
        if a.large:
            bench("LlamaMLP.forward", lambda: LlamaMLP(cfg), (32, 1024, 512), torch.float32,
                  a.iters, pkg)


if __name__ == "__main__":
    main()
