#!/bin/sh
# The 8 bytes after a large kernel parameter's last device pointer ("a" in the trace) on the
# device: ATen's legacy elementwise loop (non-contiguous operands) passes one closure of offset
# calculator, data array and functor,
# so a tensor * scalar's factor, add's alpha and mse_loss backward's 2/N must read back from it.
# Runs a program with known numbers under the shim, reads the launch records, and checks that
# the analysis turns those kernels into group ops with the same numbers. Prints TAP lines.
#   make -j8 build/libaicprof.so build/aicprof && sh tests/gpu/t-param-tail.sh
. "$(dirname "$0")/../func/lib.sh"
out=${GPU_OUT:-$tmp}
mkdir -p "$out"
cat >"$tmp/p.py" <<'PY'
import torch, torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(256, 384, device="cuda").t()          # non-contiguous against w: the legacy loop
w = torch.randn(384, 256, device="cuda")
for _ in range(3):
    y = torch.empty(384, 256, device="cuda")
    torch.mul(x, 0.375, out=y)                         # contiguous out, transposed in: legacy
    z = torch.add(x, w, alpha=2.5)                     # CUDAFunctor_add, alpha 2.5
    a = x.detach().requires_grad_()
    loss = F.mse_loss(a, w)                            # mean: backward's norm is 2/N
    loss.backward()
torch.cuda.synchronize()
print("n", x.numel())
PY
T=$out/param_tail.aicp.jsonl
LD_PRELOAD=$B/libaicprof.so AICPROF_OUTPUT=$T python3 "$tmp/p.py" >"$tmp/o" 2>"$tmp/e"
check "param tail: the program runs under the shim" test -s "$T"
python3 - "$T" <<'PY'
import json, struct, sys
fns, found = {}, {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("t") == "str":
        fns[r["id"]] = r["s"]
    if r.get("t") != "launch":
        continue
    name = fns.get(r.get("fn"), "")
    if "elementwise_kernel" not in name or "vectorized" in name or "unrolled" in name:
        continue
    for a in r.get("args", []):
        if "a" in a:
            v = int(a["a"], 16)
            lo, hi = struct.unpack("<ff", struct.pack("<Q", v))
            for key in ("MulFunctor", "CUDAFunctor_add", "mse_backward"):
                if key in name:
                    found.setdefault(key, (lo, hi))
def t(ok, d): print(("ok - " if ok else "not ok - ") + d)
print("# tails:", found)
m = found.get("MulFunctor"); a = found.get("CUDAFunctor_add"); s = found.get("mse_backward")
t(m is not None and abs(m[1] - 0.375) < 1e-7, "param tail: x * 0.375 reads 0.375 (upper 4 bytes): %s" % (m,))
t(a is not None and abs(a[0] - 2.5) < 1e-7, "param tail: add(alpha=2.5) reads 2.5 (lower 4 bytes): %s" % (a,))
t(s is not None and abs(s[0] - 2.0 / (256 * 384)) < 1e-12, "param tail: mse_loss backward reads 2/N (lower 4 bytes): %s" % (s,))
PY
