"""A transformer MLP block trained in PyTorch eager mode: the program aicprof profiles first.

LayerNorm -> Linear -> GELU -> dropout -> Linear -> dropout -> residual add, under bf16
autocast, with AdamW. Each training step is one NVTX range ("step N"), so the analyzer can
find the steps. Run: python3 samples/mlp_train.py [--steps N]
"""
import argparse

import torch
import torch.nn as nn


class MLPBlock(nn.Module):
    def __init__(self, d, hidden, p):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)
        self.p = p

    def forward(self, x):
        h = self.fc1(self.norm(x))
        h = nn.functional.gelu(h)
        h = nn.functional.dropout(h, self.p, self.training)
        y = self.fc2(h)
        y = nn.functional.dropout(y, self.p, self.training)
        return x + y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--d", type=int, default=1024)
    args = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = MLPBlock(args.d, 4 * args.d, 0.1).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.seq, args.d, device=dev)
    target = torch.randn(args.batch, args.seq, args.d, device=dev)

    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"step {step}")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
            loss = nn.functional.mse_loss(out.float(), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
