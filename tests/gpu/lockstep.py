"""Two training jobs in lockstep: the shim's cost a step with the host's drift paired away
(docs/perf.md, session 25; the overhead issue's "the step time moves by no more than the noise").

Usage: python3 tests/gpu/lockstep.py [--what gpt2job|fake] [--steps N] [--split S]
           [--a-label bare] [--a-env "K=V ..."] --b-label shim --b-env "LD_PRELOAD=... K=V ..."

Why: on the device machines a whole job's step time drifts by 15% and more within one process
and between processes a minute apart (bare GPT-2, session 25, H100: means of 50 steps from 17.8
to 27.2 ms in one run), so two jobs run one after the other cannot show a 3% difference, and
the paired mode of bench_step.py (recording and paused steps alternating in one process) cannot
show what stays after the recording window closes, nor what CUPTI attached costs.

How: two processes, A and B, each runs tests/gpu/bench_step.py lockstep WHAT: it builds the
model, says "ready" and then runs one training step each time this driver tells it to,
answering with the step's milliseconds (torch.cuda.synchronize() on both sides of it). The
driver runs step i of both, one after the other, never both at once (the order alternating with
i), so the two steps of a pair see the same host and the same GPU clocks within about two step
times; the difference of a pair is B's cost a step without the drift. A's environment is this
one's without LD_PRELOAD and AICPROF_*, plus --a-env; B's the same plus --b-env.

Prints one JSON line: the medians of A's and B's steps and of the paired differences (with
their quartiles) over the steps [2, split) and [split, steps), the median difference of every
50 steps, and the two processes' exit codes. A process that dies or hangs (no answer within
--timeout seconds) ends the run: both are killed and the line says which, with exit status 1.
"""
import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def env_for(extra):
    e = {k: v for k, v in os.environ.items()
         if k != "LD_PRELOAD" and not k.startswith("AICPROF_")}
    for kv in extra.split():
        k, _, v = kv.partition("=")
        e[k] = v
    return e


class Job:
    """one bench_step.py lockstep process and its two pipes"""

    def __init__(self, label, extra, what, timeout):
        self.label, self.timeout = label, timeout
        go_r, self.go_w = os.pipe()
        self.done_r, done_w = os.pipe()
        env = env_for(extra)
        env["BENCH_LOCK_FDS"] = "%d,%d" % (go_r, done_w)
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "bench_step.py"),
                                   "lockstep", what], env=env, pass_fds=(go_r, done_w),
                                  stdout=sys.stderr.fileno())  # stdout: this line alone
        os.close(go_r)
        os.close(done_w)
        self.buf = b""

    def line(self, timeout):
        """the child's next line, or None when it exited or did not answer in time"""
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.done_r], [], [], left)[0]:
                return None
            chunk = os.read(self.done_r, 4096)
            if not chunk:
                return None
            self.buf += chunk
        ln, self.buf = self.buf.split(b"\n", 1)
        return ln.decode()

    def send(self, what):
        try:
            os.write(self.go_w, what)
            return True
        except OSError:
            return False

    def step(self):
        if not self.send(b"s\n"):
            return None
        ln = self.line(self.timeout)
        try:
            return float(ln) if ln is not None else None
        except ValueError:
            return None

    def finish(self, kill):
        if kill:
            self.p.send_signal(signal.SIGKILL)
        else:
            self.send(b"q\n")
        try:
            return self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()


def quartiles(v):
    """the first and third quartiles of v, linear between neighbours"""
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else list(v) * 3
    return q[0], q[2]


def phase(a, b, lo, hi):
    a, b = a[lo:hi], b[lo:hi]
    if not a:
        return None
    d = [y - x for x, y in zip(a, b)]
    ma = statistics.median(a)
    md = statistics.median(d)
    (d25, d75), (a25, a75) = quartiles(d), quartiles(a)
    return {"from": lo, "to": lo + len(a), "a_ms": round(ma, 3), "b_ms": round(statistics.median(b), 3),
            "d_ms": round(md, 3), "d_p25": round(d25, 3), "d_p75": round(d75, 3),
            "pct": round(100 * md / ma, 2) if ma else None,
            # A's own spread: the drift that the pairing takes out
            "a_p25": round(a25, 3), "a_p75": round(a75, 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--what", default="gpt2job")
    ap.add_argument("--steps", type=int, default=int(os.environ.get("BENCH_JOB_STEPS", "400")))
    ap.add_argument("--split", type=int, default=150,
                    help="the first step of the second phase (after the recording window)")
    ap.add_argument("--a-label", default="bare")
    ap.add_argument("--a-env", default="")
    ap.add_argument("--b-label", default="shim")
    ap.add_argument("--b-env", default="")
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args()
    jobs = [Job(a.a_label, a.a_env, a.what, a.timeout), Job(a.b_label, a.b_env, a.what, a.timeout)]
    out = {"what": a.what, "a": a.a_label, "b": a.b_label, "steps": a.steps}
    err = None
    for j in jobs:  # building the model and the first CUDA calls: minutes at most
        if j.line(max(a.timeout, 300.0)) != "ready":
            err = "%s did not start" % j.label
            break
    ms = [[], []]
    t0 = time.monotonic()
    for i in range(a.steps if err is None else 0):
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            v = jobs[k].step()
            if v is None:
                err = "%s gave no step %d (exited or hung)" % (jobs[k].label, i)
                break
            ms[k].append(v)
        if err:
            break
    n = min(len(ms[0]), len(ms[1]))
    out["wall_s"] = round(time.monotonic() - t0, 1)
    out["paired_steps"] = n
    out["phases"] = [p for p in (phase(ms[0], ms[1], 2, min(a.split, n)),
                                 phase(ms[0], ms[1], a.split, n)) if p]
    out["by50_d_ms"] = [round(statistics.median(y - x for x, y in
                                                zip(ms[0][s:s + 50], ms[1][s:s + 50])), 3)
                        for s in range(2, n, 50)]
    rcs = [j.finish(err is not None) for j in jobs]
    out["a_rc"], out["b_rc"] = rcs
    if err:
        out["error"] = err
    print(json.dumps(out), flush=True)
    return 1 if err else 0


if __name__ == "__main__":
    sys.exit(main())
