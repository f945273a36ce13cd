"""A transformers GPT-2 trained as users write it: no NVTX, the model from the library.

6 layers, random init (no download), eager attention, bf16 autocast, AdamW. Prints the loss of
each step and the median step time after the first two steps.
Run: python3 samples/gpt2_train.py [--steps N] [--layers L]
"""
import argparse
import statistics
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--attn", default="eager")
    args = ap.parse_args()

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=args.layers, n_embd=512, n_head=8, vocab_size=8192,
                     n_positions=args.seq, bos_token_id=0, eos_token_id=0)
    cfg._attn_implementation = args.attn  # transformers 5: the config carries it
    model = GPT2LMHeadModel(cfg).cuda()
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
