"""A CuPy loop as users write it: an ElementwiseKernel, then tanh, multiply, add and a sum.

No NVTX; CuPy's memory pool left on. Run: python3 samples/cupy_loop.py [--iters N]
"""
import argparse

import cupy as cp

scale_shift = cp.ElementwiseKernel("float32 x, float32 a, float32 b", "float32 y",
                                   "y = x * a + b", "scale_shift")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--n", type=int, default=1 << 22)
    args = ap.parse_args()
    cp.random.seed(0)
    x = cp.random.standard_normal(args.n, dtype=cp.float32)
    w = cp.random.standard_normal(args.n, dtype=cp.float32)
    total = 0.0
    for i in range(args.iters):
        y = scale_shift(x, 0.5, 0.1)
        t = cp.tanh(y)
        m = cp.multiply(t, w)
        z = cp.add(m, x)
        s = cp.sum(z)
        total += float(s)
    print(f"total {total:.3f}")


if __name__ == "__main__":
    main()
