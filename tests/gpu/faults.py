"""Faults in the host process, on the device (tests/gpu/run.sh; docs/reliability.md).

Usage: python3 faults.py SHIM OUTDIR [NVCC [AICPROF]]

Every scenario runs its program twice, bare and under LD_PRELOAD=SHIM, each with a timeout, and
checks: the exit code is the same (a signal counts as -N), nothing hangs, and each trace is whole
(header first, every line before the last parses; the last line may be cut only where the process
was killed) and, where the program ends normally, closed with an end line. Figures are printed
on every line. One TAP line per check ("ok - ..." / "not ok - ..."); "# ..." lines are notes.
Scenarios: SIGKILL at a random point, an illegal address in a kernel of our own, an uncaught
exception, os._exit, SIGINT, fork before CUDA, DataLoader workers (fork and spawn), a subprocess
without CUDA, exec of /bin/true, 16 threads on 16 streams (20 s), the trace size cap, a million
tiny kernels. Pure standard library; torch is only imported by the programs it runs.
"""
import concurrent.futures
import glob
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

SHIM = os.path.abspath(sys.argv[1])
OUT = os.path.abspath(sys.argv[2])
NVCC = sys.argv[3] if len(sys.argv) > 3 else shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
AICPROF = sys.argv[4] if len(sys.argv) > 4 else ""
PY = sys.executable
os.makedirs(OUT, exist_ok=True)
T0 = time.time()

PRELUDE = """
import os, sys, signal, time, torch
x = torch.ones(4096, device="cuda")
for _ in range(20):
    x = x * 1.0001
torch.cuda.synchronize()
"""

CU = r"""
#include <cuda_runtime.h>
__global__ void aicprof_fault_bad(int *p) { *p = 1; }
__global__ void aicprof_fault_tiny(void) {}
extern "C" int bad_launch(void)
{
	aicprof_fault_bad<<<1, 1>>>((int *)0x10);
	return (int)cudaDeviceSynchronize();
}
extern "C" int tiny_loop(long n)
{
	for (long i = 0; i < n; i++)
		aicprof_fault_tiny<<<1, 1>>>();
	return (int)cudaDeviceSynchronize();
}
"""


def tap(ok, what):
    return ("ok - " if ok else "not ok - ") + "faults: " + what


def write(name, text):
    p = os.path.join(OUT, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def run(argv, env_extra=None, shim=False, timeout=60, trace=None, kill_after_ready=None):
    """Runs argv (its own session); returns dict(rc, hang, out, err, secs); rc -N: signal N.
    kill_after_ready: SIGKILL that many seconds after the program prints "ready"."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if shim:
        env["LD_PRELOAD"] = SHIM
        if trace:
            env["AICPROF_OUTPUT"] = trace
    env.update(env_extra or {})
    t = time.time()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=OUT,
                         start_new_session=True)
    hang = False
    if kill_after_ready is not None:
        # wait for "ready" on stdout, then SIGKILL after a random delay
        line = b""
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line or line.startswith(b"ready"):
                break
        time.sleep(kill_after_ready)
        try:
            p.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hang = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
    return {"rc": p.returncode, "hang": hang, "out": out.decode(errors="replace"),
            "err": err.decode(errors="replace"), "secs": time.time() - t}


def read_trace(path, parse=True):
    """Returns dict(exists, lines, bad, cut, first, last, types, size)."""
    r = {"exists": os.path.exists(path), "lines": 0, "bad": 0, "cut": False, "first": None,
         "last": None, "types": {}, "size": 0}
    if not r["exists"]:
        return r
    r["size"] = os.path.getsize(path)
    prev = None
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                r["cut"] = True
                break
            r["lines"] += 1
            if parse or r["lines"] == 1:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    r["bad"] += 1
                    continue
                if r["first"] is None:
                    r["first"] = rec
                t = rec.get("t") if isinstance(rec, dict) else None
                r["types"][t] = r["types"].get(t, 0) + 1
                prev = rec
            else:
                for t in (b'"t":"launch"', b'"t":"kernel"', b'"t":"end"'):
                    if raw.startswith(b"{" + t):
                        k = t.decode().split('"')[3]
                        r["types"][k] = r["types"].get(k, 0) + 1
                prev = raw
    if not parse and prev is not None:
        try:
            prev = json.loads(prev)
        except ValueError:
            r["bad"] += 1
            prev = None
    r["last"] = prev
    return r


def whole(tr, closed=True, cut_ok=False):
    """The trace checks shared by every scenario: (ok, summary)."""
    if not tr["exists"]:
        return False, "no trace"
    ok = tr["bad"] == 0 and isinstance(tr["first"], dict) and tr["first"].get("t") == "header"
    ok = ok and (cut_ok or not tr["cut"])
    end = tr["last"] if isinstance(tr["last"], dict) and tr["last"].get("t") == "end" else None
    if closed:
        ok = ok and end is not None
    s = (f"{tr['lines']} whole lines, {tr['bad']} bad, last line cut: {tr['cut']}, "
         f"launches {tr['types'].get('launch', 0)}, kernels {tr['types'].get('kernel', 0)}, "
         f"end: {end.get('reason') if end else 'none'}")
    return ok, s


def pair(name, argv, env_extra=None, timeout=60, closed=True, cut_ok=False, multi=False, **kw):
    """Bare and shim runs of one program; the standard checks. Returns (lines, bare, shim, tr)."""
    lines = []
    trace = os.path.join(OUT, f"{name}.%p.aicp.jsonl" if multi else f"{name}.aicp.jsonl")
    for f in glob.glob(os.path.join(OUT, f"{name}.*aicp.jsonl")):
        os.unlink(f)
    bare = run(argv, env_extra, False, timeout, **kw)
    shim = run(argv, env_extra, True, timeout, trace=trace, **kw)
    lines.append(tap(not bare["hang"] and not shim["hang"],
                     f"{name}: no hang (bare {bare['secs']:.1f} s, shim {shim['secs']:.1f} s, "
                     f"limit {timeout} s)"))
    lines.append(tap(bare["rc"] == shim["rc"],
                     f"{name}: exit code unchanged (bare {bare['rc']}, shim {shim['rc']})"))
    aic = [l for l in shim["err"].splitlines() if l.startswith("aicprof:")]
    if aic:
        lines.append("# " + name + ": " + " | ".join(aic)[:300])
    tr = None
    if not multi:
        tr = read_trace(trace)
        ok, s = whole(tr, closed, cut_ok)
        lines.append(tap(ok, f"{name}: trace whole ({s})"))
    return lines, bare, shim, tr


def analyzer_reads(name, path):
    """Where build/aicprof is present: it analyses the trace (exit 0)."""
    if not AICPROF or not os.access(AICPROF, os.X_OK):
        return [f"# {name}: build/aicprof not built here, analyzer check skipped"]
    r = subprocess.run([AICPROF, "analyze", "-q", "--no-report", path, "-o",
                        os.path.join(OUT, name + ".analysis")], capture_output=True, timeout=120)
    return [tap(r.returncode == 0, f"{name}: aicprof analyze reads the trace (exit {r.returncode}"
                f"{', ' + r.stderr.decode(errors='replace').strip()[:160] if r.returncode else ''})")]


# ---- scenarios; each returns a list of TAP lines ----

def s_sigkill():
    prog = write("sigkill.py", PRELUDE + """
n = 0
while True:
    x = x * 1.0001
    n += 1
    if n == 200:
        print("ready", flush=True)
    if n % 1000 == 0:
        torch.cuda.synchronize()
""")
    delay = round(random.uniform(0.3, 2.0), 2)
    lines, bare, shim, tr = pair("sigkill", [PY, prog], closed=False, cut_ok=True,
                                 kill_after_ready=delay)
    lines.append(tap(shim["rc"] == -9, f"sigkill: killed by SIGKILL {delay} s after 200 steps "
                                      f"(rc {shim['rc']})"))
    if tr and tr["types"].get("kernel", 0) > 0:
        lines += analyzer_reads("sigkill", os.path.join(OUT, "sigkill.aicp.jsonl"))
    else:
        lines.append("# sigkill: no kernel activity record reached the trace before the kill; "
                     "analyzer check skipped")
    return lines


def s_illegal(so):
    if not so:
        return [tap(False, "illegal: needs the nvcc-built library")]
    prog = write("illegal.py", PRELUDE + f"""
import ctypes
lib = ctypes.CDLL({so!r})
r = lib.bad_launch()
print("bad_launch returned", r, flush=True)
sys.exit(3 if r != 0 else 4)
""")
    lines, bare, shim, tr = pair("illegal", [PY, prog], closed=False)
    faulted = [l for l in bare["out"].splitlines() if l.startswith("bad_launch returned")]
    lines.append(tap(bool(faulted) and not faulted[0].endswith(" 0"),
                     f"illegal: the kernel faulted (bare: {bare['out'].strip()[:80]}, rc {bare['rc']}; "
                     f"shim: {shim['out'].strip()[:80]}, rc {shim['rc']})"))
    names = []
    if tr and tr["exists"]:
        with open(os.path.join(OUT, "illegal.aicp.jsonl"), "rb") as f:
            names = [l for l in f if b"aicprof_fault_bad" in l and b'"t":"str"' in l]
    lines.append(tap(bool(names), "illegal: the faulting kernel's launch is in the trace"))
    end = tr["last"] if tr else None
    lines.append(f"# illegal: end line {'present' if isinstance(end, dict) and end.get('t') == 'end' else 'absent'}"
                 " (the context is dead; closing it is best effort)")
    # The default AICPROF_ALLOC_BACKEND=1 gives PyTorch its cudaMallocAsync allocator, which
    # terminates on the failed frees after the fault (134 without the shim too, measured with
    # tests/gpu/diag_illegal.sh); with PyTorch's own allocator the exit code must be unchanged.
    nb, nbare, nshim, ntr = pair("illegal_nb", [PY, prog], env_extra={"AICPROF_ALLOC_BACKEND": "0"},
                                 closed=False)
    lines += [l.replace("illegal_nb:", "illegal, AICPROF_ALLOC_BACKEND=0:") for l in nb]
    return lines


def s_exception():
    prog = write("exception.py", PRELUDE + "raise RuntimeError('boom')\n")
    lines, bare, shim, tr = pair("exception", [PY, prog])
    lines.append(tap("boom" in shim["err"], "exception: the traceback is printed as without the shim"))
    return lines


def s_os_exit():
    prog = write("os_exit.py", PRELUDE + "os._exit(5)\n")
    lines, bare, shim, tr = pair("os_exit", [PY, prog])
    lines.append(tap(shim["rc"] == 5, f"os_exit: 5 ({shim['rc']})"))
    return lines


def s_sigint():
    prog = write("sigint.py", PRELUDE + "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)\n")
    # Python turns SIGINT into KeyboardInterrupt and re-raises it at the end: the trace may miss
    # its end line (the shim leaves a handled signal alone); it must still be whole lines.
    lines, bare, shim, tr = pair("sigint", [PY, prog], closed=False)
    end = tr["last"] if tr else None
    lines.append(f"# sigint: rc {shim['rc']}, end line "
                 f"{'present' if isinstance(end, dict) and end.get('t') == 'end' else 'absent'}")
    return lines


def s_fork_before():
    prog = write("fork_before.py", """
import os, sys
pid = os.fork()
if pid == 0:
    os._exit(0)  # the child never uses CUDA
import torch
x = torch.ones(1024, device="cuda") * 2
torch.cuda.synchronize()
_, st = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(st) + 6)
""")
    lines, bare, shim, _ = pair("fork_before", [PY, prog], multi=True)
    fs = sorted(glob.glob(os.path.join(OUT, "fork_before.*.aicp.jsonl")))
    lines.append(tap(len(fs) == 1, f"fork_before: one trace, the child without CUDA writes none ({len(fs)})"))
    for f in fs:
        ok, s = whole(read_trace(f))
        lines.append(tap(ok, f"fork_before: {os.path.basename(f)} whole ({s})"))
    return lines


def s_dataloader(ctx):
    prog = write(f"dl_{ctx}.py", """
import sys, torch
from torch.utils.data import DataLoader, Dataset


class D(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((16,), float(i))


if __name__ == "__main__":
    tot = torch.zeros(16, device="cuda")  # CUDA is initialised before the workers start
    dl = DataLoader(D(), batch_size=8, num_workers=2, multiprocessing_context=sys.argv[1])
    for b in dl:
        tot += b.cuda().sum(0)
    torch.cuda.synchronize()
    print("sum", float(tot.sum()))
""")
    name = f"dl_{ctx}"
    lines, bare, shim, _ = pair(name, [PY, prog, ctx], multi=True, timeout=120)
    lines.append(tap(bare["out"] == shim["out"] and "sum" in shim["out"],
                     f"{name}: output unchanged ({shim['out'].strip()})"))
    fs = sorted(glob.glob(os.path.join(OUT, f"{name}.*.aicp.jsonl")))
    lines.append(tap(len(fs) == 1, f"{name}: one trace (the main process); workers write none ({len(fs)})"))
    for f in fs:
        ok, s = whole(read_trace(f))
        lines.append(tap(ok, f"{name}: {os.path.basename(f)} whole ({s})"))
    return lines


def s_subprocess():
    prog = write("subproc.py", PRELUDE + """
import subprocess
r = subprocess.run([sys.executable, "-c", "print('child', 6 * 7)"], capture_output=True, text=True)
print(r.stdout.strip(), r.returncode)
""")
    lines, bare, shim, _ = pair("subproc", [PY, prog], multi=True)
    lines.append(tap(shim["out"].strip() == "child 42 0", f"subproc: the child ran ({shim['out'].strip()})"))
    fs = sorted(glob.glob(os.path.join(OUT, "subproc.*.aicp.jsonl")))
    lines.append(tap(len(fs) == 1, f"subproc: one trace, the child without CUDA writes none ({len(fs)})"))
    for f in fs:
        ok, s = whole(read_trace(f))
        lines.append(tap(ok, f"subproc: {os.path.basename(f)} whole ({s})"))
    return lines


def s_exec():
    prog = write("exec.py", PRELUDE + "os.execv('/bin/true', ['true'])\n")
    lines, bare, shim, tr = pair("exec", [PY, prog])
    end = tr["last"] if tr else None
    lines.append(tap(isinstance(end, dict) and end.get("reason") == "exec" and tr["types"].get("kernel", 0) > 0,
                     f"exec: the trace was closed before the exec (reason "
                     f"{end.get('reason') if isinstance(end, dict) else None}, kernels {tr['types'].get('kernel', 0) if tr else 0})"))
    return lines


def s_threads():
    prog = write("threads16.py", """
import sys, threading, time, torch
DUR, N = float(sys.argv[1]), 16
counts = [0] * N
torch.zeros(1, device="cuda")


def work(i):
    s = torch.cuda.Stream()
    a = torch.randn(64, 64, device="cuda")
    end = time.time() + DUR
    with torch.cuda.stream(s):
        while time.time() < end:
            a = torch.relu(a * 0.5)  # two kernels
            counts[i] += 2
    s.synchronize()


ts = [threading.Thread(target=work, args=(i,)) for i in range(N)]
for t in ts:
    t.start()
for t in ts:
    t.join()
torch.cuda.synchronize()
print("launched", sum(counts))
""")
    lines = []
    trace = os.path.join(OUT, "threads16.aicp.jsonl")
    bare = run([PY, prog, "3"], timeout=60)
    shim = run([PY, prog, "20"], shim=True, trace=trace, timeout=90)
    lines.append(tap(not bare["hang"] and not shim["hang"],
                     f"threads16: no hang (bare 3 s run {bare['secs']:.1f} s, shim 20 s run {shim['secs']:.1f} s)"))
    lines.append(tap(bare["rc"] == shim["rc"] == 0, f"threads16: exit 0 (bare {bare['rc']}, shim {shim['rc']})"))
    tr = read_trace(trace, parse=False)
    ok, s = whole(tr)
    lines.append(tap(ok, f"threads16: trace whole ({s})"))
    want = int(shim["out"].split()[-1]) if shim["out"].startswith("launched") else -1
    end = tr["last"] if isinstance(tr["last"], dict) else {}
    dropped = (end.get("dropped") or {}).get("records", 0)
    have = tr["types"].get("launch", 0)
    lines.append(tap(want > 0 and have + dropped >= want,
                     f"threads16: 16 threads x 16 streams for 20 s (not a minute): {want} launches made, "
                     f"{have} recorded, {dropped} dropped and counted, {want / 20:.0f} launches/s"))
    return lines


def s_cap():
    prog = write("cap.py", """
import torch
x = torch.ones(1, device="cuda")
for _ in range(100000):
    x.add_(1)
torch.cuda.synchronize()
print("value", float(x))
""")
    lines = []
    trace = os.path.join(OUT, "cap.aicp.jsonl")
    bare = rss_run([PY, prog], False, timeout=120)
    shim = rss_run([PY, prog], True, trace, {"AICPROF_MAX_MB": "4"}, timeout=120)
    lines.append(tap(not bare["hang"] and not shim["hang"] and bare["rc"] == shim["rc"] == 0,
                     f"cap: exit 0 both, no hang (bare {bare['rc']} {bare['secs']:.1f} s, shim {shim['rc']} {shim['secs']:.1f} s)"))
    lines.append(tap(bare["out"] == shim["out"], f"cap: output unchanged ({shim['out'].strip()})"))
    tr = read_trace(trace)
    ok, s = whole(tr)
    end = tr["last"] if isinstance(tr["last"], dict) else {}
    dropped = (end.get("dropped") or {}).get("records", 0)
    have = tr["types"].get("launch", 0)
    lines.append(tap(ok and end.get("reason") == "cap" and 0 < have < 50000,
                     f"cap: AICPROF_MAX_MB=4: the window closed near the cap, end says cap: {have} of "
                     f"100000 launches recorded, {dropped} records dropped and counted ({s})"))
    lines.append(tap(tr["size"] <= (4 << 20) + 4096, f"cap: trace {tr['size']} bytes <= 4 MiB + the end line"))
    grow = (shim["maxrss_kb"] - bare["maxrss_kb"]) >> 10
    lines.append(tap(grow < 512, f"cap: memory bounded: max RSS bare {bare['maxrss_kb'] >> 10} MiB, "
                                 f"shim {shim['maxrss_kb'] >> 10} MiB (+{grow} MiB, limit +512)"))
    return lines


def s_window():
    """AICPROF_DURATION=1 on a 4-second loop: the trace ends with reason duration, whole, and
    holds the first second's launches only; the program's output and exit are unchanged."""
    prog = os.path.join(os.path.dirname(os.path.abspath(__file__)), "window_loop.py")
    lines = []
    trace = os.path.join(OUT, "window.aicp.jsonl")
    bare = rss_run([PY, prog], False, timeout=120)
    shim = rss_run([PY, prog], True, trace, {"AICPROF_DURATION": "1"}, timeout=120)
    lines.append(tap(not shim["hang"] and bare["rc"] == shim["rc"] == 0 and "value True" in shim["out"],
                     f"window: exit 0 both, output right ({shim['out'].split()[:2]})"))
    tr = read_trace(trace)
    ok, s = whole(tr)
    end = tr["last"] if isinstance(tr["last"], dict) else {}
    made = int(shim["out"].split()[-1]) if "launched" in shim["out"] else 0
    have = tr["types"].get("launch", 0)
    lines.append(tap(ok and end.get("reason") == "duration" and 0 < have < made / 2,
                     f"window: AICPROF_DURATION=1 in a 4 s loop: end says duration; {have} of {made} launches "
                     f"recorded ({s})"))
    lines.append(tap("recording window closed" in shim["err"],
                     "window: one aicprof line says the window closed"))
    return lines


def s_capture():
    """AICPROF_CAPTURE=profiler-api: 200 launches before torch.cuda.profiler.start(), 300 inside
    the range, 200 after stop(); a tensor allocated before the range is used inside it. The
    trace holds the range's launches only (a few of PyTorch's own may join them), two capture
    lines, and the launches inside resolve their pointer to the tensor allocated while paused;
    the program's output and exit are unchanged."""
    prog = write("capture.py", """
import torch
x = torch.ones(1 << 16, device="cuda")
for _ in range(200):
    x.add_(1)
torch.cuda.synchronize()
torch.cuda.profiler.start()
for _ in range(300):
    x.add_(1)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
for _ in range(200):
    x.add_(1)
torch.cuda.synchronize()
print("value", float(x[0]) == 701)
""")
    lines = []
    trace = os.path.join(OUT, "capture.aicp.jsonl")
    bare = rss_run([PY, prog], False, timeout=120)
    shim = rss_run([PY, prog], True, trace, {"AICPROF_CAPTURE": "profiler-api"}, timeout=120)
    lines.append(tap(not shim["hang"] and bare["rc"] == shim["rc"] == 0 and "value True" in shim["out"]
                     and bare["out"] == shim["out"],
                     f"capture: exit 0 both, output unchanged ({shim['out'].split()[:2]})"))
    recs = []
    if os.path.exists(trace):
        with open(trace) as f:
            for l in f:
                try:
                    recs.append(json.loads(l))
                except ValueError:
                    pass
    caps = [r for r in recs if r.get("t") == "capture"]
    launches = [r for r in recs if r.get("t") == "launch"]
    kernels = [r for r in recs if r.get("t") == "kernel"]
    lines.append(tap([c.get("on") for c in caps] == [True, False],
                     f"capture: a start and a stop line ({[(c.get('on'), c.get('api')) for c in caps]})"))
    lines.append(tap(300 <= len(launches) <= 310 and abs(len(kernels) - len(launches)) <= 2,
                     f"capture: the range's launches only: {len(launches)} launches, {len(kernels)} kernels "
                     f"(300 made inside, 400 outside)"))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from trace_check import resolve
    resolve(recs)  # the shim leaves pointers to the analyzer (AICPROF_RESOLVE=offline)
    resolved = sum(1 for l in launches if any(a.get("p") for a in l.get("args", [])))
    lines.append(tap(resolved >= 300,
                     f"capture: {resolved} launches resolve a pointer into an allocation made while paused"))
    return lines


def rss_run(argv, shim, trace=None, env_extra=None, timeout=150):
    """Like run(), plus this child's own max RSS (KiB) from wait4."""
    import threading
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if shim:
        env["LD_PRELOAD"] = SHIM
        env["AICPROF_OUTPUT"] = trace
    env.update(env_extra or {})
    t = time.time()
    tag = os.path.join(OUT, "rss.%d" % random.randrange(1 << 30))
    with open(tag + ".out", "wb") as fo, open(tag + ".err", "wb") as fe:
        p = subprocess.Popen(argv, env=env, cwd=OUT, stdout=fo, stderr=fe)
    hung = []

    def kill():
        hung.append(1)
        try:
            p.kill()
        except ProcessLookupError:
            pass
    timer = threading.Timer(timeout, kill)
    timer.start()
    _, status, ru = os.wait4(p.pid, 0)
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    out = open(tag + ".out", "rb").read().decode(errors="replace")
    err = open(tag + ".err", "rb").read().decode(errors="replace")
    return {"rc": p.returncode, "hang": bool(hung), "out": out, "err": err,
            "secs": time.time() - t, "maxrss_kb": ru.ru_maxrss}


def s_million(so):
    if not so:
        return [tap(False, "million: needs the nvcc-built library")]
    N = 1000000
    prog = write("million.py", f"""
import ctypes, sys, time
lib = ctypes.CDLL({so!r})
lib.tiny_loop.argtypes = [ctypes.c_long]
lib.tiny_loop(10)
t = time.time()
r = lib.tiny_loop({N})
print("launched {N} rc", r, "us_per_launch %.2f" % ((time.time() - t) * 1e6 / {N}))
sys.exit(r)
""")
    lines = []
    trace = os.path.join(OUT, "million.aicp.jsonl")
    bare = rss_run([PY, prog], False)
    shim = rss_run([PY, prog], True, trace)
    lines.append(tap(not bare["hang"] and not shim["hang"] and bare["rc"] == shim["rc"] == 0,
                     f"million: exit 0 both, no hang (bare {bare['rc']} {bare['secs']:.1f} s: {bare['out'].strip()}; "
                     f"shim {shim['rc']} {shim['secs']:.1f} s: {shim['out'].strip()})"))
    tr = read_trace(trace, parse=False)
    ok, s = whole(tr)
    end = tr["last"] if isinstance(tr["last"], dict) else {}
    dropped = (end.get("dropped") or {}).get("records", 0)
    dact = (end.get("dropped") or {}).get("activity", 0)
    k = tr["types"].get("kernel", 0)
    la = tr["types"].get("launch", 0)
    lines.append(tap(ok, f"million: trace whole, {tr['size'] >> 20} MiB ({s})"))
    lines.append(tap(la + dropped >= N + 10 and k + dact + dropped >= N + 10,
                     f"million: every launch recorded or counted as dropped: launches {la}, kernels {k}, "
                     f"dropped records {dropped}, dropped activity {dact} (of {N + 10})"))
    lines.append(f"# million: max RSS bare {bare['maxrss_kb'] >> 10} MiB, shim {shim['maxrss_kb'] >> 10} MiB")
    try:
        os.unlink(trace)  # about half a GiB: not worth bringing back
    except OSError:
        pass
    return lines


def build_so():
    cu = write("faults.cu", CU)
    so = os.path.join(OUT, "libfaults.so")
    try:
        r = subprocess.run([NVCC, "-O2", "-shared", "-Xcompiler", "-fPIC", "-o", so, cu],
                           capture_output=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, tap(False, f"nvcc builds the fault kernels ({e})")
    ok = r.returncode == 0 and os.path.exists(so)
    return (so if ok else None), tap(ok, f"nvcc builds the fault kernels ({NVCC}, exit {r.returncode}"
                                         f"{': ' + r.stderr.decode(errors='replace')[:200] if not ok else ''})")


def main():
    random.seed(os.getpid())
    only = os.environ.get("FAULTS_ONLY", "").split()  # e.g. "window cap": those scenarios alone
    if only:
        for name in only:
            for l in globals()["s_" + name]():
                print(l, flush=True)
        print(f"# faults: {time.time() - T0:.0f} s in all")
        return
    so, line = build_so()
    print(line, flush=True)
    light = [s_sigkill, lambda: s_illegal(so), s_exception, s_os_exit, s_sigint, s_fork_before,
             lambda: s_dataloader("fork"), lambda: s_dataloader("spawn"), s_subprocess, s_exec]
    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as ex:
        futs = [ex.submit(f) for f in light]
        for fu in futs:
            try:
                res = fu.result()
            except Exception as e:  # a bug in this script: say so, never stop the others
                res = [tap(False, f"scenario raised {type(e).__name__}: {e}")]
            for l in res:
                print(l, flush=True)
    for f in (s_threads, s_cap, s_window, s_capture, lambda: s_million(so)):
        try:
            res = f()
        except Exception as e:
            res = [tap(False, f"scenario raised {type(e).__name__}: {e}")]
        for l in res:
            print(l, flush=True)
    print(f"# faults: {time.time() - T0:.0f} s in all")


if __name__ == "__main__":
    main()
