"""torch.profiler inside a program recorded by aicprof (tests/gpu/run.sh, section 5).

  python3 coexist.py run OUT.json     the program: steps outside any profiler, then two
                                      torch.profiler sessions (each inside an NVTX range
                                      "coexist-sN"), steps between and after; writes each
                                      session's kernel list (name -> count) to OUT.json, and
                                      after each session the multiplexer's own account
                                      (aicprof_mux_report: records handed to the profiler per
                                      activity kind, held back by the time gate, dropped, its
                                      clock) to OUT.json.mux.json
  python3 coexist.py compare BARE.json SHIM.json TRACE [yielded]
                                      TAP lines: the profiler's kernel lists under aicprof equal
                                      those without it, session by session; aicprof's trace is
                                      whole (ends "exit", not "yielded"), every launch of each
                                      session is in it, its kernel count equals the profiler's,
                                      and its kernel times are sane. With "yielded" (the
                                      AICPROF_MUX=0 fallback) only the profiler's lists and the
                                      trace's "yielded" end are checked.
Every line prints the figures it compared. Pure standard library except torch in "run".
"""
import collections
import json
import sys


def mux_report():
    """The multiplexer's account so far, or why there is none (no aicprof, an older shim)."""
    try:
        import ctypes
        f = ctypes.CDLL(None).aicprof_mux_report
        f.restype = ctypes.c_char_p
        return f().decode(errors="replace")
    except (AttributeError, OSError) as e:
        return f"no report ({e.__class__.__name__})"


def program(out):
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(1024, 1024, device="cuda")
    w = torch.randn(1024, 1024, device="cuda")

    def step(i):
        nonlocal x
        x = torch.relu(x * 0.5)
        if i % 2:
            x = torch.tanh(x @ w) + 1.0

    for i in range(3):  # aicprof only
        step(i)
    torch.cuda.synchronize()
    sessions, reports = [], []
    for s, nsteps in ((1, 5), (2, 4)):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            torch.cuda.nvtx.range_push(f"coexist-s{s}")
            for i in range(nsteps):
                step(i)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        names = collections.Counter(
            e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        sessions.append(dict(names))
        reports.append(mux_report())
        print(f"session {s}: profiler kernels {sum(names.values())}, distinct {len(names)}; "
              f"mux: {reports[-1]}")
        for i in range(3):  # between and after the sessions: aicprof only
            step(i)
        torch.cuda.synchronize()
    with open(out, "w") as f:
        json.dump(sessions, f)
    with open(out + ".mux.json", "w") as f:
        json.dump(reports, f)


def tap(ok, what):
    print(("ok - " if ok else "not ok - ") + what)
    return ok


def load_trace(path):
    recs, bad = [], 0
    with open(path, "rb") as f:
        for raw in f:
            try:
                recs.append(json.loads(raw))
            except ValueError:
                bad += 1
    return recs, bad


def compare(bare_path, shim_path, trace_path, mode):
    good = True
    try:
        bare = json.load(open(bare_path))
        shim = json.load(open(shim_path))
    except (OSError, ValueError) as e:
        return tap(False, f"coexist: kernel lists readable ({e})")
    try:
        reports = json.load(open(shim_path + ".mux.json"))
    except (OSError, ValueError) as e:
        reports = [f"no report file ({e})"] * 2
    good &= tap(len(bare) == 2 and len(shim) == 2,
                f"coexist: two profiler sessions each run (bare {len(bare)}, under aicprof {len(shim)})")
    for i in range(min(len(bare), len(shim))):
        b, s = bare[i], shim[i]
        nb, ns = sum(b.values()), sum(s.values())
        rep = reports[i] if i < len(reports) else "none"
        good &= tap(nb > 0 and nb == ns,
                    f"coexist session {i + 1}: torch.profiler kernels without aicprof {nb}, under aicprof {ns} "
                    f"(mux so far: {rep})")
        diff = {k: (b.get(k, 0), s.get(k, 0)) for k in set(b) | set(s) if b.get(k, 0) != s.get(k, 0)}
        good &= tap(not diff,
                    f"coexist session {i + 1}: same kernel names and counts ({len(b)} names; differing: {list(diff.items())[:4]})")
    try:
        recs, bad = load_trace(trace_path)
    except OSError as e:
        return tap(False, f"coexist: trace readable ({e})") and False
    end = recs[-1] if recs else {}
    if mode == "yielded":
        good &= tap(end.get("reason") == "yielded",
                    f"coexist (AICPROF_MUX=0): trace ends with reason {end.get('reason')} (fallback: yielded)")
        return good
    good &= tap(bad == 0 and end.get("t") == "end" and end.get("reason") == "exit",
                f"coexist: trace whole: {bad} bad lines, ends with reason {end.get('reason')} (want exit, not yielded)")
    launches = [r for r in recs if r.get("t") == "launch"]
    kernels = {r["c"]: r for r in recs if r.get("t") == "kernel"}
    good &= tap(end.get("kernels") == len(kernels),
                f"coexist: end line counts {end.get('kernels')} kernels, trace has {len(kernels)}")
    # launches after the last session's range: aicprof went on recording after the profiler
    pushes = [r for r in recs if r.get("t") == "push"]
    pops = [r for r in recs if r.get("t") == "pop"]
    header = recs[0] if recs else {}
    sync = header.get("clock_sync", {})
    for i in range(min(len(shim), 2)):
        name = f"coexist-s{i + 1}"
        p = [r for r in pushes if r.get("text") == name]
        if not tap(len(p) == 1, f"coexist session {i + 1}: NVTX range {name} in the trace ({len(p)} found)"):
            good = False
            continue
        lo = p[0]["seq"]
        after = [r["seq"] for r in pops if r["seq"] > lo and r.get("tid") == p[0].get("tid")]
        hi = min(after) if after else float("inf")
        ls = [r for r in launches if lo < r["seq"] < hi]
        # kernels only: a copy or set the profiler lists is not a launch
        want = sum(n for k, n in shim[i].items() if not k.startswith(("Memcpy", "Memset")))
        good &= tap(len(ls) == want,
                    f"coexist session {i + 1}: aicprof launches in the session {len(ls)}, profiler kernels {want}")
        ks = [kernels[r["c"]] for r in ls if r["c"] in kernels]
        good &= tap(len(ks) == want,
                    f"coexist session {i + 1}: aicprof kernel activity records {len(ks)}, profiler kernels {want}")
        durs = sorted(k["end"] - k["start"] for k in ks)
        med = durs[len(durs) // 2] if durs else -1
        starts = [k["start"] for k in ks]
        c0 = sync.get("cupti", 0)
        span = (end.get("ts", 0) - sync.get("realtime", 0)) + 10**9
        sane = bool(durs) and durs[0] >= 0 and durs[-1] < 10**9 and \
            all(c0 <= s <= c0 + span for s in starts)
        good &= tap(sane,
                    f"coexist session {i + 1}: aicprof kernel times in CUPTI's clock: median {med} ns, "
                    f"max {durs[-1] if durs else -1} ns, starts {min(starts, default=0) - c0}..{max(starts, default=0) - c0} ns after clock_sync (run {span} ns)")
    # every kernel of the run, in and out of the sessions (the H200's run 3: 36 at 0, the rest in ticks)
    c0 = sync.get("cupti", 0)
    span = (end.get("ts", 0) - sync.get("realtime", 0)) + 10**9
    allk = list(kernels.values())
    zero = sum(1 for k in allk if not k.get("start"))
    out = sum(1 for k in allk if not (c0 - 10**9 <= k.get("start", 0) <= c0 + span))
    good &= tap(bool(allk) and zero == 0 and out == 0,
                f"coexist: aicprof kernel times in CUPTI's clock for the whole run: {out} of {len(allk)} "
                f"outside clock_sync-1s..end+1s, {zero} at 0")
    last_pop = max((r["seq"] for r in pops), default=0)
    tail = [r for r in launches if r["seq"] > last_pop]
    good &= tap(len(tail) > 0 and all(r["c"] in kernels for r in tail),
                f"coexist: after the last session aicprof recorded {len(tail)} launches, "
                f"{sum(1 for r in tail if r['c'] in kernels)} with kernel records")
    return good


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        program(sys.argv[2])
        return 0
    if len(sys.argv) >= 5 and sys.argv[1] == "compare":
        mode = sys.argv[5] if len(sys.argv) > 5 else ""
        return 0 if compare(sys.argv[2], sys.argv[3], sys.argv[4], mode) else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
