"""A transformers Llama-style model trained as users write it: no NVTX, random init.

4 layers, RMSNorm, SwiGLU, rotary embeddings, eager attention, bf16 autocast, AdamW.
Run: python3 samples/llama_train.py [--steps N]
"""
import argparse
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    args = ap.parse_args()

    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=8, vocab_size=8192,
                      max_position_embeddings=args.seq, bos_token_id=0,
                      eos_token_id=0, pad_token_id=0)
    cfg._attn_implementation = "eager"  # transformers 5: the config carries it
    model = LlamaForCausalLM(cfg).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="cuda")

    times = []
    for step in range(args.steps):
        t = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
        print(f"step {step} loss {loss.item():.4f}")
    print(f"step_ms {statistics.median(times[2:] or times):.3f}")


if __name__ == "__main__":
    main()
