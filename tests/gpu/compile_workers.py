"""torch.compile with Inductor's worker processes, for the stress test (tests/gpu/stress.sh).

Compiles a small MLP training step (forward and backward) with compile_threads workers, so
that the shim is loaded into the parent and the compile workers the parent starts; runs a few
steps and prints the loss of the last one. Run: python3 tests/gpu/compile_workers.py
"""
import os

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "4")
import torch  # noqa: E402

torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=1e-2)
step = torch.compile(lambda x: m(x).square().mean())
x = torch.randn(64, 256, device="cuda")
for _ in range(4):
    loss = step(x)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("loss %.4f" % loss.item())
