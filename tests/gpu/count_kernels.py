"""Ground truth: runs a sample's main() under torch.profiler and prints its CUDA kernel count.

Usage: python3 count_kernels.py samples/mlp_train.py [sample args...]
Prints "kernels N" (kernel events only: no memcpy/memset).
"""
import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile

path = sys.argv[1]
sys.argv = [path] + sys.argv[2:]
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    runpy.run_path(path, run_name="__main__")
    torch.cuda.synchronize()
n = 0
for e in prof.events():
    if e.device_type == torch.autograd.DeviceType.CUDA and not e.name.startswith("Memcpy") and not e.name.startswith("Memset"):
        n += 1
print(f"kernels {n}")
