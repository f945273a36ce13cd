#!/usr/bin/env python3
"""jobcheck.py - checks a job's summary.json against the ranks' traces, independently of aicprof.

    python3 tests/tools/jobcheck.py OUT/summary.json TRACE...

Reads every trace with Python's json (str, kernel, launch, coll and comm records only), finds
the NCCL kernels, keys them as the trace format says (communicator uid and n from the launch's
coll records, else the kernel's ordinal), and recomputes for each collective position of a
step what docs/summary-format.md ("The job view") defines: the fastest rank's duration, the
mean over ranks of the time with and without compute kernels beside it (median over the last
16 steps), and whether every key was seen on every rank. Prints one TAP line per check
("ok - ..." / "not ok - ..."), with the figures measured, and exits 1 when any check fails.
For the device run of samples/ddp_train.py (tests/gpu) and for synthetic traces alike.
"""
import json
import statistics
import sys


def read(path):
    names, kern, launch, coll, comm, hdr = {}, [], {}, {}, {}, {}
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
            elif t == "launch" and r.get("coll"):
                launch[r["c"]] = r["coll"]
            elif t == "coll":
                coll[r["id"]] = r
            elif t == "comm":
                comm[r["comm"]] = r
    return hdr, kern, launch, coll, comm


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
        hdr, kern, launch, coll, comm = read(p)
        kern.sort()
        comp = {}
        for s, e, n, d, c in kern:
            if not is_nccl(n):
                u = comp.setdefault(d, [])
                if u and s <= u[-1][1]:
                    u[-1][1] = max(u[-1][1], e)
                else:
                    u.append([s, e])
        inst = []
        for s, e, n, d, c in kern:
            if not is_nccl(n):
                continue
            key = "k%d" % len(inst)
            ids = launch.get(c, [])
            if ids and ids[0] in coll:
                cr = coll[ids[0]]
                cm = comm.get(cr["comm"], {})
                key = "%s:%d" % (cm.get("uid", "comm"), cr["n"])
            ov = sum(max(0, min(b, e) - max(a, s)) for a, b in comp.get(d, []))
            inst.append((key, (e - s) / 1e3, ov / 1e3))
        nr = len(inst) // K
        first = len(inst) - nr * K
        keep = max(0, nr - 16)
        lab = {}
        for i, x in enumerate(inst):
            if i >= first and (i - first) // K >= keep:
                lab[x[0]] = ((i - first) // K - keep, (i - first) % K, x[1], x[2])
        ranks.append((hdr.get("rank", len(ranks)), lab))
    ranks.sort(key=lambda r: r[0])
    n = len(ranks)
    low = ranks[0][1]
    keys = set().union(*[set(r[1]) for r in ranks])
    full = sum(1 for k in keys if all(k in r[1] for r in ranks))
    check(full == len(keys) and len(keys) > 0,
          "every collective of the kept steps seen on all %d ranks (%d of %d keys)" % (n, full, len(keys)))
    check(job["collectives_matched"] == full, "collectives_matched %d, the traces show %d" % (job["collectives_matched"], full))
    for row in job["collectives"]:
        p = row["pos"]
        durs, exps, ovs = [], [], []
        for k, (rd, pos, _, _) in low.items():
            if pos != p:
                continue
            xs = [r[1][k] for r in ranks if k in r[1]]
            durs.append(min(x[2] for x in xs))
            exps.append(sum(round(x[2], 3) - round(x[3], 3) for x in xs) / len(xs))
            ovs.append(sum(round(x[3], 3) for x in xs) / len(xs))
        if not durs:
            check(False, "collective %d: no instance in the traces" % p)
            continue
        for name, mine in (("duration_us", durs), ("exposed_us", exps), ("overlapped_us", ovs)):
            want = statistics.median(mine)
            got = row[name]
            check(abs(got - want) <= 0.01 + 0.01 * abs(want),
                  "collective %d %s: summary %.3f, traces %.3f" % (p, name, got, want))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
