"""Gated-MLP transformers models we did not write, for the gated form on the device.

  qwen2   Qwen2ForCausalLM: RMSNorm, SwiGLU (SiLUActivation), rotary, q/k/v biases
  gemma   GemmaForCausalLM: (1 + w) RMSNorm, GeGLU with gelu(approximate='tanh'), scaled
          embeddings

Both 4 layers, d 512, MLP 1408, 8 heads, vocab 8192, eager attention, random init, no
markers; the step is samples/llama_train.py's (bf16 autocast, AdamW).

  python3 tests/gpu/gated_models.py train MODEL [--steps N]
      N training steps (default 6): the program recorded under the shim
  python3 tests/gpu/gated_models.py check MODEL FUSEDDIR
      apply() the package fuse wrote from MODEL's trace, then print TAP lines: the MLP's
      forward replaced, verified on first use and run; eval and train forward and the
      gradients against the original; six AdamW steps' losses against six original ones
"""
import argparse
import contextlib
import json
import sys

import torch

MLP_KEY = {"qwen2": "transformers.models.qwen2.modeling_qwen2.Qwen2MLP.forward",
           "gemma": "transformers.models.gemma.modeling_gemma.GemmaMLP.forward"}


def build(name, seq=256):
    """The model (on the GPU, seed 0) and its config."""
    common = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                  num_attention_heads=8, num_key_value_heads=8, vocab_size=8192,
                  max_position_embeddings=seq, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    if name == "qwen2":
        from transformers import Qwen2Config as C, Qwen2ForCausalLM as M
        cfg = C(**common)
    elif name == "gemma":
        from transformers import GemmaConfig as C, GemmaForCausalLM as M
        cfg = C(head_dim=64, hidden_activation="gelu_pytorch_tanh", **common)
    else:
        raise SystemExit("unknown model %s" % name)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    return M(cfg).cuda(), cfg


def train(name, steps, quiet=False):
    model, cfg = build(name)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (4, 256), device="cuda")
    losses = []
    for step in range(steps):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if not quiet:
            print("step %d loss %.4f" % (step, losses[-1]), flush=True)
    return losses


def check(name, pkg):
    sys.path.insert(0, pkg)
    import aicprof_fused as af
    def tap(what, cond, note=""):
        # each line as it comes: a check that raises later still leaves the ones before
        print(("ok" if cond else "not ok") + " - %s: %s%s" %
              (name, what, (" (%s)" % note) if note else ""), flush=True)

    key = MLP_KEY[name]
    model, cfg = build(name)
    ids = torch.randint(0, cfg.vocab_size, (4, 256), device="cuda")

    def run(tr):
        model.train(tr)
        model.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16), \
                (contextlib.nullcontext() if tr else torch.no_grad()):
            out = model(input_ids=ids, labels=ids)
        if not tr:
            return out.logits.float().detach(), out.loss.item(), None
        out.loss.backward()
        g = torch.cat([p.grad.float().reshape(-1) for p in model.parameters()
                       if p.grad is not None])
        return out.logits.float().detach(), out.loss.item(), g

    ref_e, ref_t = run(False), run(True)
    ref_losses = train(name, 6, quiet=True)
    r = af.apply()
    tap("apply() replaced " + key, r.get(key, {}).get("applied"),
        r.get(key, {}).get("reason") or "keys %s" % sorted(r))
    got_e, got_t = run(False), run(True)
    v = af.applied().get(key, {})
    tap("first use verified %s" % key, v.get("applied") and v.get("verified") and
        all(x.startswith("verified") for x in v["verified"].values()), json.dumps(v)[:400])
    tap("the gated form ran", af.counts().get(key, 0) > 0, "counts %s" % af.counts())

    def rel(x, y):
        return ((x - y).norm() / y.norm().clamp_min(1e-12)).item()
    e = rel(got_e[0], ref_e[0])
    tap("eval logits match the original", e < 2e-2, "rel l2 %.2e" % e)
    t = rel(got_t[0], ref_t[0])
    tap("train logits match", t < 2e-2, "rel l2 %.2e" % t)
    g = rel(got_t[2], ref_t[2])
    tap("gradients match", g < 5e-2, "rel l2 %.2e" % g)
    got_losses = train(name, 6, quiet=True)
    d = max(abs(a - b) / abs(b) for a, b in zip(got_losses, ref_losses))
    tap("six AdamW steps: losses match the original's", d < 2e-2,
        "max rel %.2e; %s vs %s" % (d, ["%.4f" % x for x in got_losses],
                                    ["%.4f" % x for x in ref_losses]))
    af.restore()
    tap("restore() puts the original back", not af.applied().get(key, {}).get("applied"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("train", "check"))
    ap.add_argument("model", choices=sorted(MLP_KEY))
    ap.add_argument("pkg", nargs="?")
    ap.add_argument("--steps", type=int, default=6)
    a = ap.parse_args()
    if a.mode == "train":
        train(a.model, a.steps)
    else:
        check(a.model, a.pkg)


if __name__ == "__main__":
    main()
