"""torch.profiler inside a program recorded by aicprof: prints the profiler's kernel count."""
import torch
from torch.profiler import ProfilerActivity, profile

x = torch.randn(1024, 1024, device="cuda")
for _ in range(3):  # aicprof records these
    x = torch.relu(x * 0.5)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        x = torch.relu(x * 0.5)
    torch.cuda.synchronize()
n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
print(f"profiler kernels {n}")
