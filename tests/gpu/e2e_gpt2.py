"""End to end on the device: the GPT-2 (or, with --model resnet, the ResNet-18; with --model
llama, the Llama; with --model qwen2 or gemma, tests/gpu/gated_models.py's) sample's training
step three ways, interleaved.

  original   samples/gpt2_train.py's step as written (eager attention, bf16 autocast, AdamW)
  fused      the same after aicprof_fused.apply() (the package fuse wrote from the bundled
             trace, when it wrote one) with the optimizer's fused=True (AdamW for GPT-2 and
             Llama, SGD for ResNet), as aicprof.patch makes it
  compile    the same model under torch.compile
  optim      (only when asked for in --variants) the original with the optimizer's fused=True
             alone: what the package's functions add beyond the optimizer's library form

Each (round, variant) runs in a fresh process (apply() and torch.compile change global state),
rounds interleaved so that drift of the GPU clocks hits every variant alike. Prints one JSON line:
per variant the median over rounds of the per-run median step time (after warm-up), every
run's time, the final losses (same seed, same data: they should agree), and what apply()
replaced. Run from the repository root after make:
  python3 tests/gpu/e2e_gpt2.py [--rounds 3] [--steps 20] [--pkg FUSEDDIR]
      [--variants original,fused,compile] [--budget SECONDS]
Each run's result also goes to stderr as it ends ("# round R VARIANT: {...}"). The first fused
run builds the package's kernels with nvcc (cached in the package) and each compile run
compiles: budget about a minute per compile run.
Without --pkg it analyses samples/traces/MODEL_train.aicp.jsonl (qwen2 and gemma:
tests/traces/MODEL_train.aicp.jsonl.gz) and fuses it into a temporary directory first
(build/aicprof).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def profile_steps(step, n=3):
    """n steps under torch.profiler (CPU and CUDA): a step's kernels, the GPU's busy time (the
    union of its kernel intervals), its wall time under the profiler, the aten ops the host
    dispatched, and the ten ops of most host self time (where a host-bound step goes)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t) * 1e3 / n
    iv, ops, selfus = [], 0, {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            if not e.name.startswith(("Memcpy", "Memset")):
                iv.append((e.time_range.start, e.time_range.end))
        elif e.name.startswith("aten::"):
            ops += 1
            selfus[e.name] = selfus.get(e.name, 0) + e.self_cpu_time_total
    iv.sort()
    busy, end = 0.0, None
    for a, b in iv:
        if end is None or a > end:
            busy += b - a
            end = b
        elif b > end:
            busy += b - end
            end = b
    top = sorted(selfus.items(), key=lambda kv: -kv[1])[:10]
    return {"kernels_a_step": len(iv) / n, "gpu_busy_ms": round(busy / 1e3 / n, 3),
            "profiled_wall_ms": round(wall, 3), "aten_ops_a_step": ops / n,
            "top_self_us_a_step": [(k, round(v / n, 1)) for k, v in top]}


def one(variant, steps, pkg, model_name="gpt2", prof=False, bscale=1):
    import torch
    info = {}
    if variant == "fused" and pkg and os.path.isdir(os.path.join(pkg, "aicprof_fused")):
        sys.path.insert(0, pkg)
        import aicprof_fused
        r = aicprof_fused.apply()
        info = {k: v["applied"] for k, v in r.items()}
    torch.manual_seed(0)
    if model_name == "resnet":
        # samples/resnet_train.py: torchvision ResNet-18, channels_last, SGD with momentum
        import torch.nn.functional as F
        import torchvision
        model = torchvision.models.resnet18(num_classes=100).cuda().to(
            memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4,
                              fused=(variant in ("fused", "optim")))
        x = torch.randn(32 * bscale, 3, 128, 128, device="cuda").to(memory_format=torch.channels_last)
        y = torch.randint(0, 100, (32 * bscale,), device="cuda")
        fwd = torch.compile(model) if variant == "compile" else model

        def loss_of():
            return F.cross_entropy(fwd(x), y)
    else:
        if model_name in ("qwen2", "gemma"):
            # tests/gpu/gated_models.py's: Llama's sizes, Qwen2's SwiGLU or Gemma's GeGLU
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from gated_models import build
            model, cfg = build(model_name)
            cls, batch = None, 4
        elif model_name == "llama":
            # samples/llama_train.py: 4 layers, d 512, RMSNorm, SwiGLU, rotary, batch 4 x 256
            from transformers import LlamaConfig, LlamaForCausalLM
            cfg = LlamaConfig(hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                              num_attention_heads=8, num_key_value_heads=8, vocab_size=8192,
                              max_position_embeddings=256, bos_token_id=0, eos_token_id=0,
                              pad_token_id=0)
            cls, batch = LlamaForCausalLM, 4
        else:
            from transformers import GPT2Config, GPT2LMHeadModel
            cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, vocab_size=8192,
                             n_positions=256, bos_token_id=0, eos_token_id=0)
            cls, batch = GPT2LMHeadModel, 8
        if cls is not None:
            cfg._attn_implementation = "eager"
            model = cls(cfg).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=(variant in ("fused", "optim")))
        ids = torch.randint(0, cfg.vocab_size, (batch * bscale, 256), device="cuda")
        fwd = torch.compile(model) if variant == "compile" else model

        def loss_of():
            return fwd(input_ids=ids, labels=ids).loss
    times, loss = [], None

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_of()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(steps):
        t = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    warm = 5 if variant == "compile" else 2
    out = {"variant": variant, "step_ms": statistics.median(times[warm:] or times),
           "loss": loss.item(), "applied": info}
    if prof:
        out["profile"] = profile_steps(step)
    if info:
        import aicprof_fused
        out["counts"] = aicprof_fused.counts()
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--pkg", help="FUSEDDIR of aicprof fuse (holds aicprof_fused/)")
    ap.add_argument("--variants", default="original,fused,compile",
                    help="comma-separated, in the order each round runs them")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds: start no run after this (0: none); what ran is reported")
    ap.add_argument("--model", default="gpt2", choices=("gpt2", "resnet", "llama", "qwen2", "gemma"),
                    help="gpt2: samples/gpt2_train.py's model; resnet: samples/resnet_train.py's;"
                    " llama: samples/llama_train.py's; qwen2, gemma: tests/gpu/gated_models.py's"
                    " (without --pkg, fused from tests/traces/MODEL_train.aicp.jsonl.gz)")
    ap.add_argument("--profile", action="store_true",
                    help="after the timed steps, 3 more under torch.profiler: kernels a step, "
                    "the GPU's busy time, aten ops and the ops of most host time")
    ap.add_argument("--batch-scale", type=int, default=1,
                    help="the batch times this: a step the GPU rather than the host bounds, "
                    "where the fusions' GPU time can show (the package was fused at scale 1; "
                    "its kernels take any size)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one(a.one, a.steps, a.pkg, a.model, a.profile, max(1, a.batch_scale))
        return
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tmp = None
    if not a.pkg:
        tmp = tempfile.mkdtemp(prefix="e2e_gpt2.")
        aic = os.path.join(top, "build", "aicprof")
        # qwen2 and gemma: the traces t-gated-models.sh recorded, kept gzip'd in tests/traces/
        tr = ("tests/traces/%s_train.aicp.jsonl.gz" if a.model in ("qwen2", "gemma")
              else "samples/traces/%s_train.aicp.jsonl") % a.model
        subprocess.run([aic, "analyze", os.path.join(top, tr),
                        "-o", os.path.join(tmp, "an")], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        subprocess.run([aic, "fuse", os.path.join(tmp, "an"), "-o", os.path.join(tmp, "f")],
                       check=True, stdout=subprocess.DEVNULL, cwd=top)
        a.pkg = os.path.join(tmp, "f")
    runs = {v: [] for v in a.variants.split(",") if v}
    errors = []
    t0 = time.time()
    rounds = 0
    for _ in range(max(1, a.rounds)):
        if a.budget and time.time() - t0 > a.budget:
            break
        rounds += 1
        for v in runs:
            if a.budget and time.time() - t0 > a.budget:
                break
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", v,
                                "--steps", str(a.steps), "--pkg", a.pkg, "--model", a.model]
                               + (["--profile"] if a.profile else [])
                               + ["--batch-scale", str(a.batch_scale)],
                               capture_output=True, text=True)
            line = [x for x in p.stdout.splitlines() if x.startswith("{")]
            if p.returncode or not line:
                errors.append({"variant": v, "rc": p.returncode, "stderr": p.stderr[-1500:]})
                continue
            runs[v].append(json.loads(line[-1]))
            # each run as it ends, so that a run cut short still leaves its figures
            print("# round %d %s: %s" % (rounds, v, line[-1]), file=sys.stderr, flush=True)
    res = {"model": a.model, "batch_scale": a.batch_scale, "rounds": rounds, "steps": a.steps,
           "errors": errors,
           "seconds": round(time.time() - t0, 1)}
    for v, rs in runs.items():
        res[v] = {"median_step_ms": statistics.median([r["step_ms"] for r in rs]) if rs else None,
                  "step_ms": [round(r["step_ms"], 3) for r in rs],
                  "final_loss": [round(r["loss"], 5) for r in rs]}
        if a.profile and rs:
            res[v]["profile"] = [r.get("profile") for r in rs]
        if v == "fused" and rs:
            res[v]["applied"] = rs[-1]["applied"]
            res[v]["counts"] = rs[-1].get("counts")
    o = res.get("original", {}).get("median_step_ms")
    f = res.get("fused", {}).get("median_step_ms")
    c = res.get("compile", {}).get("median_step_ms")
    res["fused_speedup"] = round(o / f, 3) if o and f else None
    # the measure: the share of torch.compile's step-time reduction the applied
    # forms recover
    res["share_of_compile_gain"] = round((o - f) / (o - c), 3) if o and f and c and o > c else None
    p = res.get("optim", {}).get("median_step_ms")
    if p:
        res["optim_share_of_compile_gain"] = round((o - p) / (o - c), 3) if o and c and o > c else None
    print(json.dumps(res))


if __name__ == "__main__":
    main()
