#!/usr/bin/env python3
"""jobcheck.py - checks a job's summary.json against the ranks' traces, independently of aicprof.

    python3 tests/tools/jobcheck.py OUT/summary.json TRACE...

Reads every trace with Python's json (str, kernel, launch, coll and comm records only), finds
the NCCL kernels, keys them as the trace format says (communicator uid and n from the launch's
coll records, else the kernel's ordinal), cuts them into steps (the NVTX step ranges by launch
seq, steady steps those with the most common collective sequence; without NVTX, rounds of
collectives_per_step counted back from the last) and recomputes, from the kernels' integer
nanosecond times, what docs/summary-format.md ("The job view") defines: per collective
position the fastest rank's duration, the longest wait, the mean over ranks of the time with
and without compute kernels beside it (median over the last 16 steps); per rank the medians of
its per-step sums; whether every key was seen on every rank; and the per-step figures against
the NCCL kernels' own totals. Prints one TAP line per check
("ok - ..." / "not ok - ..."), with the figures measured, and exits 1 when any check fails.
For the device run of samples/ddp_train.py (tests/gpu) and for synthetic traces alike.
"""
import bisect
import collections
import json
import re
import statistics
import sys


def read(path):
    names, kern, launch, coll, comm, hdr, lseq, nv = {}, [], {}, {}, {}, {}, {}, []
    with open(path, "rb") as f:
        for raw in f:
            try:
                r = json.loads(raw)
            except ValueError:
                continue  # the cut-short last line
            t = r.get("t")
            if t == "header":
                hdr = r
            elif t == "str":
                names[r["id"]] = r["s"]
            elif t == "kernel":
                kern.append((r["start"], r["end"], names.get(r["name"], ""), r.get("dev", 0), r.get("c")))
            elif t == "launch":
                lseq[r["c"]] = r["seq"]
                if r.get("coll"):
                    launch[r["c"]] = r["coll"]
            elif t == "coll":
                coll[r["id"]] = r
            elif t == "comm":
                comm[r["comm"]] = r
            elif t in ("push", "pop"):
                nv.append(r)
    return hdr, kern, launch, coll, comm, lseq, nv


def nvtx_steps(nv):
    """[(start_seq, end_seq, start_ts, end_ts)] of the step ranges: texts matched push/pop per
    thread, the folded text (digits as #) repeated most, at its shallowest depth."""
    stacks, pairs = {}, []
    for r in nv:
        st = stacks.setdefault(r.get("tid"), [])
        if r["t"] == "push":
            st.append(r)
        elif st:
            p = st.pop()
            if p.get("text"):
                pairs.append((re.sub(r"[0-9]+", "#", p["text"]), len(st), p, r))
    if not pairs:
        return []
    count = collections.Counter(x[0] for x in pairs)
    depth = {k: min(x[1] for x in pairs if x[0] == k) for k in count}
    key = min(count, key=lambda k: (-count[k], depth[k], [x[0] for x in pairs].index(k)))
    if count[key] < 2:
        return []
    return sorted((p["seq"], q["seq"], p["ts"], q["ts"]) for k, d, p, q in pairs
                  if k == key and d == depth[key])


def is_nccl(n):
    return "ncclDevKernel_" in n or "ncclKernel_" in n


def main():
    summ = json.load(open(sys.argv[1]))
    job = summ.get("job")
    fails = 0

    def check(ok, what):
        nonlocal fails
        print(("ok - " if ok else "not ok - ") + what)
        fails += 0 if ok else 1

    check(job is not None, "summary.json has a job view")
    if not job:
        return 1
    K = job["collectives_per_step"]
    ranks = []
    for p in sys.argv[2:]:
        hdr, kern, launch, coll, comm, lseq, nv = read(p)
        kern.sort()
        comp = {}
        for s, e, n, d, c in kern:
            if not is_nccl(n):
                u = comp.setdefault(d, [])
                if u and s <= u[-1][1]:
                    u[-1][1] = max(u[-1][1], e)
                else:
                    u.append([s, e])
        steps = nvtx_steps(nv)
        starts = [x[0] for x in steps]

        def step_of(c):
            q = lseq.get(c)
            if q is None:
                return -1
            i = bisect.bisect_left(starts, q) - 1
            return i if i >= 0 and q < steps[i][1] else -1

        inst = []  # key, dur ns, overlap ns, step, op, bytes
        for s, e, n, d, c in kern:
            if not is_nccl(n):
                continue
            key, op, nb = "k%d" % len(inst), n, 0
            ids = launch.get(c, [])
            if ids and ids[0] in coll:
                cr = coll[ids[0]]
                cm = comm.get(cr["comm"], {})
                key, op = "%s:%d" % (cm.get("uid", "comm"), cr["n"]), cr["op"]
                nb = sum(coll[i]["bytes"] for i in ids if i in coll)
            ov = sum(max(0, min(b, e) - max(a, s)) for a, b in comp.get(d, []))
            inst.append((key, e - s, ov, step_of(c), op, nb))
        lab, how = {}, "rounds"
        sig = collections.defaultdict(list)
        for x in inst:
            if x[3] >= 0:
                sig[x[3]].append((x[4], x[5]))
        steady = []
        if len(steps) >= 2 and sig:
            cnt = collections.Counter(tuple(v) for v in sig.values())
            last = {tuple(v): k for k, v in sorted(sig.items())}
            best = max(cnt, key=lambda t: (cnt[t], last[t]))
            steady = [k for k in sorted(sig) if tuple(sig[k]) == best]
        if steady:
            how = "nvtx"
            kept = steady[-16:]
            pos = collections.Counter()
            for x in inst:
                if x[3] in kept:
                    lab[x[0]] = (kept.index(x[3]), pos[x[3]], x[1] / 1e3, x[2] / 1e3)
                    pos[x[3]] += 1
            if hdr.get("rank", len(ranks)) == 0 or not ranks:
                check(K == len(best), "rank %s: %d collectives per steady step (NVTX), summary %d"
                      % (hdr.get("rank"), len(best), K))
        else:
            nr = len(inst) // K
            first = len(inst) - nr * K
            keep = max(0, nr - 16)
            for i, x in enumerate(inst):
                if i >= first and (i - first) // K >= keep:
                    lab[x[0]] = ((i - first) // K - keep, (i - first) % K, x[1] / 1e3, x[2] / 1e3)
        # the whole trace's NCCL kernels, straight from their intervals
        tot = sum(x[1] for x in inst) / 1e3
        hid = sum(x[2] for x in inst) / 1e3
        st = sum(x[1] for x in inst if x[3] in steady) / 1e3
        sh = sum(x[2] for x in inst if x[3] in steady) / 1e3
        print("# rank %s (%s): NCCL kernel time %.1f us, overlapped by compute %.1f us; in the %d "
              "steady steps %.1f us, overlapped %.1f us" % (hdr.get("rank"), how, tot, hid,
                                                             len(steady), st, sh))
        ranks.append((hdr.get("rank", len(ranks)), lab, len(steady), st, sh))
    ranks.sort(key=lambda r: r[0])
    n = len(ranks)
    low = ranks[0][1]
    keys = set().union(*[set(r[1]) for r in ranks])
    full = sum(1 for k in keys if all(k in r[1] for r in ranks))
    check(full == len(keys) and len(keys) > 0,
          "every collective of the kept steps seen on all %d ranks (%d of %d keys)" % (n, full, len(keys)))
    check(job["collectives_matched"] == full, "collectives_matched %d, the traces show %d" % (job["collectives_matched"], full))
    near = lambda got, want: abs(got - want) <= 0.0011 + 1e-6 * abs(want)
    for row in job["collectives"]:
        p = row["pos"]
        durs, exps, ovs, waits = [], [], [], []
        for k, (rd, pos, _, _) in low.items():
            if pos != p:
                continue
            xs = [r[1][k] for r in ranks if k in r[1]]
            mn = min(x[2] for x in xs)
            durs.append(mn)
            waits.append(max(x[2] - mn for x in xs))
            exps.append(sum(x[2] - x[3] for x in xs) / len(xs))
            ovs.append(sum(x[3] for x in xs) / len(xs))
        if not durs:
            check(False, "collective %d: no instance in the traces" % p)
            continue
        for name, mine in (("duration_us", durs), ("wait_us", waits), ("exposed_us", exps),
                           ("overlapped_us", ovs)):
            want = statistics.median(mine)
            got = row[name]
            check(near(got, want), "collective %d %s: summary %.3f, traces %.3f" % (p, name, got, want))
    # per rank: medians over its kept steps of the step's sums
    pr = {r["rank"]: r for r in job["per_rank"]}
    for rk, lab, nsteady, st, sh in ranks:
        per = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
        for k, (rd, pos, d, o) in lab.items():
            mn = min(r[1][k][2] for r in ranks if k in r[1])
            q = per[rd]
            q[0] += d
            q[1] += d - mn
            q[2] += d - o
            q[3] += o
        got = pr.get(rk, {})
        for i, name in enumerate(("collective_us", "wait_us", "exposed_us", "overlapped_us")):
            want = statistics.median([v[i] for v in per.values()]) if per else 0
            check(near(got.get(name, -1), want), "rank %s %s: summary %.3f, traces %.3f"
                  % (rk, name, got.get(name, -1), want))
        if nsteady and st > 0:
            # a step's median times the steady steps is the kernels' own total, within 5%
            est = got.get("collective_us", 0) * nsteady
            check(abs(est - st) <= 0.05 * st, "rank %s: collective_us x %d steady steps %.1f us, "
                  "the NCCL kernels' own total %.1f us" % (rk, nsteady, est, st))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
