"""An in-place launch loop of 4 seconds (x.add_(1), 100 launches a round), for the recording
window's tests (tests/gpu/faults.py's window scenario, tests/gpu/window-hang.sh): prints whether
the value is right and how many launches it made."""
import time

import torch

x = torch.ones(1, device="cuda")
torch.cuda.synchronize()
n, t = 0, time.time()
while time.time() - t < 4:
    for _ in range(100):
        x.add_(1)
    n += 100
torch.cuda.synchronize()
print("value", float(x) == n + 1)
print("launched", n)
