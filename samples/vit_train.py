"""A timm ViT trained as users write it: no NVTX, random init, SGD, bf16 autocast.

Run: python3 samples/vit_train.py [--steps N]
"""
import argparse
import statistics
import time

import timm
import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()

    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=100,
                              img_size=112).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, 3, 112, 112, device="cuda")
    y = torch.randint(0, 100, (args.batch,), device="cuda")

    times = []
    for step in range(args.steps):
        t = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
        print(f"step {step} loss {loss.item():.4f}")
    print(f"step_ms {statistics.median(times[2:] or times):.3f}")


if __name__ == "__main__":
    main()
