"""A torchvision ResNet-18 trained as users write it: no NVTX, channels_last, SGD.

Random init, random images (the input is made once, before the loop), bf16 autocast.
Prints the loss of each step and the median step time after the first two steps.
Run: python3 samples/resnet_train.py [--steps N]
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=128)
    args = ap.parse_args()

    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=100).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(args.batch, 3, args.size, args.size, device="cuda").to(memory_format=torch.channels_last)
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
