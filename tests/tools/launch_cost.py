"""The shim's own cost of a launch, on a CPU-only machine (run by tests/tools/launch-cost.sh).

Launches of the mock driver's kernel are fired through the mock CUPTI's callbacks from a Python
frame DEPTH calls deep, 100 per ctypes call (the GIL released, as PyTorch releases it around an
op), in batches of 1,000 that fit a thread's ring; prints the median nanoseconds a launch (LC_WHAT=blocks: a block handed out and taken back). The
same process measures the callbacks' absence first (before the shim subscribes, when the mock
fires nothing), so the figure is the shim's work alone, not the call's."""
import ctypes, os, statistics, sys, time

WHAT = os.environ.get("LC_WHAT", "launch")  # or "blocks": caching-allocator reports; "mixed":
# launches alternating the mock kernel and ATen's strided loop (a 640-byte closure)
if WHAT == "blocks":  # the mock allocator, loaded before the first cuMemAlloc arms the hook
    ctypes.CDLL(os.path.join(os.path.dirname(sys.argv[2]), "libc10_cuda.so"), mode=ctypes.RTLD_GLOBAL)
lib = ctypes.CDLL(sys.argv[1])
depth = int(os.environ.get("DEPTH", "30"))
# LC_WHAT=cold: the caches as a real program leaves them (launch_cost.c's lc_launch_cold)
SWEEP_KB = int(os.environ.get("LC_SWEEP_KB", "4096"))
SPIN_NS = int(os.environ.get("LC_SPIN_NS", "1500"))
if lib.lc_init(sys.argv[2].encode(), ctypes.c_uint64(0x7F0000000000)):
    sys.exit("cannot open the mock CUPTI")
lib.lc_alloc(ctypes.c_uint64(0x7F0000000000))
# LC_FIRST_SHALLOW=N: the program's first N launches at module level (a warm-up loop there)
lib.lc_launch(int(os.environ.get("LC_FIRST_SHALLOW", "0") or 0))


def batch():
    t = time.perf_counter_ns()
    for _ in range(10):
        if WHAT == "blocks":  # a block handed out and taken back counts as one
            lib.lc_blocks(100, ctypes.c_uint64(0x7F0000000000))
        elif WHAT == "cold":  # each launch after a sweep of LC_SWEEP_KB (default 4096) KiB
            lib.lc_launch_cold(100, SWEEP_KB, SPIN_NS)
        elif WHAT == "mixed":
            lib.lc_launch_mixed(100)
        else:
            lib.lc_launch(100)
    return (time.perf_counter_ns() - t) / 1000.0


def deep(n):
    if n:
        return deep(n - 1)
    times = []
    for _ in range(int(os.environ.get("BATCHES", "300"))):
        times.append(batch())
        time.sleep(0.002)  # the writer drains between batches (not timed)
    return statistics.median(times)


print('{"mode":"%s","what":"%s","depth":%d,"ns_per_launch":%.1f}' % (os.environ.get("MODE", "?"), WHAT, depth, deep(depth)))
