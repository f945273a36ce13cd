"""Kernels inside CUDA graph replays (tests/gpu/run.sh): prints how many kernels the replays ran."""
import torch

x = torch.randn(1 << 20, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(2):  # warm-up outside the graph
        y = torch.relu(x * 2.0) + 1.0
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = torch.relu(x * 2.0) + 1.0  # three kernels
REPLAYS = 10
for _ in range(REPLAYS):
    g.replay()
torch.cuda.synchronize()
print(f"graph kernels {3 * REPLAYS}")
