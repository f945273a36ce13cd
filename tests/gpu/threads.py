"""Several Python threads launching kernels at once, each on its own stream (tests/gpu/run.sh).

Prints "launched N" with the number of kernels the threads asked for.
"""
import threading

import torch

N_THREADS, ITERS = 4, 50
counts = [0] * N_THREADS


def work(i):
    s = torch.cuda.Stream()
    a = torch.randn(256, 256, device="cuda")
    with torch.cuda.stream(s):
        for _ in range(ITERS):
            a = torch.relu(a * 0.5)  # two kernels
            counts[i] += 2
    s.synchronize()


torch.cuda.init()
torch.zeros(1, device="cuda")
ts = [threading.Thread(target=work, args=(i,)) for i in range(N_THREADS)]
for t in ts:
    t.start()
for t in ts:
    t.join()
torch.cuda.synchronize()
print(f"launched {sum(counts)}")
