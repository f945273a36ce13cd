"""Attention written by hand, in a small training loop: the attention sample.

scores = q @ k^T, scaled, causal mask (masked_fill with a tril mask), softmax, dropout, @ v,
output projection; AdamW; one NVTX range per step. The analyzer should find the attention
candidate (and scaled_dot_product_attention as its library form).
Run: python3 samples/attention_train.py [--steps N]
"""
import argparse
import math

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d, heads, p):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.p = p

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)
        scores = scores * (1.0 / math.sqrt(d // self.heads))
        mask = torch.ones(t, t, device=x.device, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        attn = nn.functional.dropout(attn, self.p, self.training)
        y = attn @ v
        # Planted for aicprof's dead-work test: computed every step and never read.
        # (The committed trace predates this line; re-record it to get the golden finding.)
        _unused = attn.sum(dim=-1)
        y = y.transpose(1, 2).contiguous().view(b, t, d)
        return self.out(y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    args = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Attention(args.d, args.heads, 0.1).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.seq, args.d, device=dev)
    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"step {step}")
        out = model(x)
        loss = out.float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
