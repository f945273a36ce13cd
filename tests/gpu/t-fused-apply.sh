#!/bin/sh
# The package aicprof_fused/ on the device machine (torch, transformers and nvcc there): build,
# analyse the bundled GPT-2 and Llama traces (nothing is recorded), fuse them, then in Python
# build the samples' models (samples/gpt2_train.py's and llama_train.py's configs, dropout 0)
# and check that apply() replaced NewGELUActivation.forward and eager_attention_forward (GPT-2),
# LlamaRMSNorm.forward, eager_attention_forward, LlamaMLP.forward (Llama; the gated form) and
# apply_rotary_pos_emb (the rotary form; then tests/gpu/rotary_check.py), that the first use verified them, that a forward in eval mode
# (under no_grad; a form without a fused backward runs only there; RMSNorm's has one since
# 2ac7818, so its train-mode check now runs the fused backward)
# and a forward + backward in train mode under bf16 autocast match the original within
# tolerance, and that the fused forms actually ran (counts()); then tests/gpu/rms_grad.py with the
# Llama package (RMSNorm's forward and backward at two sizes, and torch.compile with the package
# applied). Prints TAP lines. Run from the
# repository root:
#   make -j8 build/aicprof && sh tests/gpu/t-fused-apply.sh
. "$(dirname "$0")/../func/lib.sh"
[ -x "$B/aicprof" ] || make -j8 build/aicprof >/dev/null 2>&1
for s in gpt2 llama; do
	"$B/aicprof" analyze "$top/samples/traces/${s}_train.aicp.jsonl" -o "$tmp/$s" >/dev/null 2>&1
	(cd "$top" && "$B/aicprof" fuse "$tmp/$s" -o "$tmp/$s-f") >"$tmp/$s.out" 2>&1
	check "fuse $s writes the package" test -s "$tmp/$s-f/aicprof_fused/__init__.py"
done

cat >"$tmp/check.py" <<'PY'
import json, sys
import torch
pkg, which = sys.argv[1], sys.argv[2]
sys.path.insert(0, pkg)
import aicprof_fused as af
res = []
def check(name, cond, note=""):
    res.append(("ok" if cond else "not ok") + " - %s: %s%s" % (which, name, (" (%s)" % note) if note else ""))

torch.manual_seed(0)
if which == "gpt2":
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, vocab_size=8192, n_positions=256,
                     bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0)
    cfg._attn_implementation = "eager"
    model = GPT2LMHeadModel(cfg).cuda()
    keys = ["transformers.activations.NewGELUActivation.forward",
            "transformers.models.gpt2.modeling_gpt2.eager_attention_forward"]
else:
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=8, vocab_size=8192,
                      max_position_embeddings=256, bos_token_id=0, eos_token_id=0,
                      pad_token_id=0)
    cfg._attn_implementation = "eager"
    model = LlamaForCausalLM(cfg).cuda()
    keys = ["transformers.models.llama.modeling_llama.LlamaRMSNorm.forward",
            "transformers.models.llama.modeling_llama.eager_attention_forward",
            "transformers.models.llama.modeling_llama.LlamaMLP.forward",
            "transformers.models.llama.modeling_llama.apply_rotary_pos_emb"]
ids = torch.randint(0, cfg.vocab_size, (8 if which == "gpt2" else 4, 256), device="cuda")

def run(train):
    # eval as inference runs it, under no_grad: a form without a fused backward runs only where
    # autograd does not record (emit-pkg.c), so the eval pass is where it is verified
    import contextlib
    model.train(train)
    model.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16), \
            (contextlib.nullcontext() if train else torch.no_grad()):
        out = model(input_ids=ids, labels=ids)
    if not train:
        return out.logits.float().detach(), out.loss.item(), None
    out.loss.backward()
    g = torch.cat([p.grad.float().reshape(-1) for p in model.parameters() if p.grad is not None])
    return out.logits.float().detach(), out.loss.item(), g

ref_eval = run(False)
ref_train = run(True)
r = af.apply()
for k in keys:
    check("apply() replaced " + k, r.get(k, {}).get("applied"), r.get(k, {}).get("reason"))
got_eval = run(False)
got_train = run(True)
a = af.applied()
for k in keys:
    v = a.get(k, {})
    check("first use of %s verified it and left it applied" % k,
          v.get("applied") and v.get("verified") and
          all(x.startswith("verified") for x in v["verified"].values()),
          json.dumps(v)[:400])
    check("the fused form of %s ran" % k, af.counts().get(k, 0) > 0, "counts %s" % af.counts())
    if "no fused backward" in (v.get("reason") or ""):
        check("under autograd %s ran the original (its backward would be recomputed)" % k,
              "recomputed" in (v.get("last_fallback") or ""), v.get("last_fallback"))
def rel(x, y):
    return ((x - y).norm() / y.norm().clamp_min(1e-12)).item()
le = rel(got_eval[0], ref_eval[0])
check("eval forward: logits match the original", le < 2e-2, "rel l2 %.2e" % le)
check("eval forward: loss matches", abs(got_eval[1] - ref_eval[1]) <= 1e-2 * abs(ref_eval[1]),
      "%.5f vs %.5f" % (got_eval[1], ref_eval[1]))
lt = rel(got_train[0], ref_train[0])
check("train forward (dropout 0): logits match", lt < 2e-2, "rel l2 %.2e" % lt)
gr = rel(got_train[2], ref_train[2])
check("train backward (dropout 0): gradients match", gr < 5e-2, "rel l2 %.2e" % gr)
af.restore()
check("restore() puts the originals back", not any(af.applied()[k]["applied"] for k in keys))
print("\n".join(res))
PY
for s in gpt2 llama; do
	python3 "$tmp/check.py" "$tmp/$s-f" "$s" 2>"$tmp/$s.err" || nok "$s: the check ran"
	grep -v '^\s*$' "$tmp/$s.err" | tail -15 | sed 's/^/# /'
done
# the RMSNorm's fused backward at two sizes, and torch.compile with the package applied
python3 "$top/tests/gpu/rms_grad.py" "$tmp/llama-f" >"$tmp/rg.out" 2>"$tmp/rg.err" ||
	nok "llama: rms_grad.py ran to its end"
sed 's/^\(ok\|not ok\) - /\1 - llama: /' "$tmp/rg.out"
# the rotary form against transformers' apply_rotary_pos_emb: layouts, dtypes, GQA, gradients
python3 "$top/tests/gpu/rotary_check.py" "$tmp/llama-f" >"$tmp/rc.out" 2>"$tmp/rc.err" ||
	nok "llama: rotary_check.py ran to its end"
cat "$tmp/rc.out"
grep -v '^\s*$' "$tmp/rc.err" | grep -v Warning | tail -5 | sed 's/^/# /'
grep -v '^\s*$' "$tmp/rg.err" | grep -v Warning | tail -5 | sed 's/^/# /'
