#!/bin/sh
# The CuPy form on the device (CuPy there): records samples/cupy_loop.py under the shim, analyzes
# and fuses it, runs the generated GROUP_cupy.py's check() (the fused cupy.ElementwiseKernel
# against CuPy's ufuncs one by one), and times both on the sample's arrays (4M float32, CUDA
# events, median of 200 after warm-up). Prints TAP lines and "# cupy form:" timings.
#   make -j8 build/libaicprof.so build/aicprof && sh tests/gpu/t-cupy-form.sh
. "$(dirname "$0")/../func/lib.sh"
out=${GPU_OUT:-$tmp}
mkdir -p "$out"
T=$out/cupy_loop.aicp.jsonl
AICPROF_OUTPUT=$T LD_PRELOAD=$B/libaicprof.so python3 samples/cupy_loop.py >"$tmp/o" 2>"$out/cupy_loop.stderr"
check "cupy: the sample runs under the shim" test -s "$T"
"$B/aicprof" analyze -q --no-report "$T" -o "$tmp/an" && "$B/aicprof" fuse "$tmp/an" -o "$tmp/f" >"$tmp/fo" 2>&1
G=$(ls -d "$tmp"/f/c*_tanh_mul_add 2>/dev/null | head -1)
g=$(basename "${G:-none}")
check "cupy: fuse wrote the CuPy form ($g)" test -s "$G/${g}_cupy.py"
PYTHONPATH=$G python3 - "$g" <<'PY'
import importlib, statistics, sys
import cupy as cp
m = importlib.import_module(sys.argv[1] + "_cupy")
def t(ok, d): print(("ok - " if ok else "not ok - ") + d)
try:
    err = m.check()
    t(True, "cupy: check() passes (largest relative error %.3g)" % err)
except Exception as e:
    t(False, "cupy: check() passes (%s)" % e)
n = 1 << 22
rs = cp.random.RandomState(0)
y, w, x = (rs.standard_normal(n, dtype=cp.float32) for _ in range(3))
fused = getattr(m, sys.argv[1])
def unf():
    return cp.add(cp.multiply(cp.tanh(y), w), x)
def fus():
    return fused(y, w, x)
t(bool(cp.allclose(unf(), fus(), rtol=1e-5, atol=1e-6)), "cupy: fused equals tanh, multiply, add on the sample's arrays")
def time(f):
    s, e = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(20):
        f()
    ts = []
    for _ in range(200):
        s.record(); f(); e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) * 1000)
    return statistics.median(ts)
a, b = [], []
for r in range(3):  # interleaved rounds
    a.append(time(unf)); b.append(time(fus))
ua, ub = statistics.median(a), statistics.median(b)
print("# cupy form: op by op %.1f us, fused %.1f us (rounds %s / %s), %.2fx; fused moves %.0f GB/s"
      % (ua, ub, ["%.1f" % v for v in a], ["%.1f" % v for v in b], ua / ub, 16.0 * n / (ub * 1e3)))
t(ub < ua, "cupy: the fused kernel is faster than the three ufuncs")
PY
