"""A JAX jit training step as users write it: value_and_grad of a two-layer MLP, SGD.

No NVTX; JAX's own allocator and preallocation left as the user has them.
Run: python3 samples/jax_train.py [--steps N]
"""
import argparse
import statistics
import time

import jax
import jax.numpy as jnp


def init(key, d, h):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (d, h)) * 0.02, "b1": jnp.zeros(h),
            "w2": jax.random.normal(k2, (h, d)) * 0.02, "b2": jnp.zeros(d)}


def loss_fn(p, x, y):
    h = jax.nn.gelu(x @ p["w1"] + p["b1"])
    out = h @ p["w2"] + p["b2"]
    return jnp.mean((out - y) ** 2)


@jax.jit
def step(p, x, y):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 1e-2 * b, p, g), loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    key = jax.random.PRNGKey(0)
    p = init(key, 1024, 4096)
    x = jax.random.normal(key, (512, 1024))
    y = jax.random.normal(jax.random.PRNGKey(1), (512, 1024))
    times = []
    for i in range(args.steps):
        t = time.perf_counter()
        p, loss = step(p, x, y)
        loss.block_until_ready()
        times.append((time.perf_counter() - t) * 1e3)
        print(f"step {i} loss {float(loss):.4f}")
    print(f"step_ms {statistics.median(times[2:] or times):.3f}")


if __name__ == "__main__":
    main()
