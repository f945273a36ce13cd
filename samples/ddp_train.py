"""A small model trained with DistributedDataParallel over NCCL: aicprof's multi-GPU sample.

Run one process per GPU under torchrun:
    LD_PRELOAD=$PWD/build/libaicprof.so torchrun --nproc_per_node=2 samples/ddp_train.py
Each rank writes its own trace (aicprof.rank<R>.<pid>.aicp.jsonl); `aicprof analyze` takes them
all. The model is a stack of MLP blocks (LayerNorm, Linear, GELU, Linear, residual), large
enough that DDP's gradient all-reduces (25 MB buckets) fill several buckets, and small
enough that a few steps take a second. Rank 1 gets a longer sequence on purpose
(--straggle), so that it is the slow rank and rank 0 waits for it at the all-reduces. Each
training step is one NVTX range ("step N").
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--straggle", type=int, default=1, help="rank that gets 1.5x the work")
    args = ap.parse_args()

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank = dist.get_rank()
    torch.manual_seed(0)
    dev = torch.device("cuda", local)
    model = nn.Sequential(*[Block(args.d) for _ in range(args.layers)]).to(dev)
    ddp = DDP(model, device_ids=[local])
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    seq = args.seq * 3 // 2 if rank == args.straggle else args.seq
    g = torch.Generator(device=dev).manual_seed(1 + rank)
    x = torch.randn(args.batch, seq, args.d, device=dev, generator=g)

    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"step {step}")
        loss = ddp(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"rank {rank} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
