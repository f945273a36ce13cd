#!/usr/bin/env python3
"""The ledger's bytes against ncu's DRAM counters (docs/accuracy.md).

usage: ncu-compare.py TRACE SUMMARY NCU_ALL.csv [NCU_NONE.csv]

TRACE is the shim's recording of a program with NVTX steps, SUMMARY the summary.json that
`aicprof analyze` made of it, NCU_*.csv what tests/gpu/ncu_fidelity.sh got from Nsight Compute
for the same command (--csv, one row per kernel and metric). Kernels are matched by launch
ordinal: the k-th kernel launch in the trace (seq order) is ncu's ID k; the match is checked by
grid and block sizes. The j-th kernel launched inside each analysed step is the summary's j-th
kernel node. For every memory-bound kernel node it prints the ledger's bytes read and written
per launch beside ncu's medians over the same launches, and the ratios; exit 1 when no kernel
matched or a grid disagrees.
"""
import csv
import json
import statistics
import sys


def ncu_rows(path):
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    out = {}
    for r in csv.DictReader(lines[start:]):
        k = int(r["ID"])
        d = out.setdefault(k, {"grid": r["Grid Size"], "block": r["Block Size"], "name": r["Kernel Name"]})
        v = float(r["Metric Value"].replace(",", ""))
        d[r["Metric Name"]] = v
    return out


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    trace, summ, nall = sys.argv[1:4]
    nnone = sys.argv[4] if len(sys.argv) > 4 else None
    launches, push, pop = [], [], []
    for line in open(trace):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        t = r.get("t")
        if t == "launch":
            launches.append(r)
        elif t == "push":
            push.append(r["seq"])
        elif t == "pop":
            pop.append(r["seq"])
    launches.sort(key=lambda r: r["seq"])
    s = json.load(open(summ))
    st = s["steps"]
    kn = [n for n in s["nodes"] if n["kind"] == "kernel"]
    A = ncu_rows(nall)
    N = ncu_rows(nnone) if nnone else {}
    first = st.get("warmup", 0)
    per = {}  # node index -> list of ordinals
    bad = 0
    for si in range(first, min(len(push), len(pop))):
        ords = [k for k, r in enumerate(launches) if push[si] < r["seq"] < pop[si]]
        if len(ords) != len(kn):
            print(f"# step {si}: {len(ords)} kernels, the summary has {len(kn)} kernel nodes; skipped")
            continue
        for j, k in enumerate(ords):
            g = "(%d, %d, %d)" % tuple(launches[k]["grid"])
            if k in A and A[k]["grid"] != g:
                print(f"# step {si} kernel {j}: ncu ID {k} has grid {A[k]['grid']}, the trace {g}")
                bad += 1
            per.setdefault(j, []).append(k)
    print("| # | kernel | ledger read | ncu read | ratio | ledger write | ncu write | ratio | ncu write, no flush |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = 0
    rr, wr = [], []
    for j, n in enumerate(kn):
        if n.get("bound") != "memory" or n["family"] in ("gemm", "attention") or j not in per:
            continue
        ks = [k for k in per[j] if k in A]
        if not ks:
            continue
        rd = statistics.median(A[k]["dram__bytes_read.sum"] for k in ks)
        wt = statistics.median(A[k]["dram__bytes_write.sum"] for k in ks)
        wn = statistics.median(N[k]["dram__bytes_write.sum"] for k in ks if k in N) if N else float("nan")
        lr, lw = n["bytes_read"], n["bytes_written"]
        f = lambda b: "%.2f MiB" % (b / 2**20)
        q = lambda a, b: "%.2f" % (a / b) if b > 0 else "-"
        if rd > 0:
            rr.append(lr / rd)
        if wt > 0:
            wr.append(lw / wt)
        name = n["name"] if len(n["name"]) < 60 else n["name"][:28] + "…" + n["name"][-28:]
        print(f"| {n['id']} | `{name}` ({n['op']}) | {f(lr)} | {f(rd)} | {q(lr, rd)} | {f(lw)} | {f(wt)} | {q(lw, wt)} | {f(wn)} |")
        rows += 1
    # the whole step, every kernel (GEMMs too): what the ledger says against DRAM's counters
    tot = {"lr": 0, "lw": 0, "ar": 0, "aw": 0, "nr": 0, "nw": 0}
    for j, n in enumerate(kn):
        ks = [k for k in per.get(j, []) if k in A]
        if not ks:
            continue
        tot["lr"] += n["bytes_read"]
        tot["lw"] += n["bytes_written"]
        tot["ar"] += statistics.median(A[k]["dram__bytes_read.sum"] for k in ks)
        tot["aw"] += statistics.median(A[k]["dram__bytes_write.sum"] for k in ks)
        if N:
            tot["nr"] += statistics.median(N[k]["dram__bytes_read.sum"] for k in ks if k in N)
            tot["nw"] += statistics.median(N[k]["dram__bytes_write.sum"] for k in ks if k in N)
    m = lambda b: "%.1f MiB" % (b / 2**20)
    print(f"# step totals, all {len(kn)} kernels: ledger read {m(tot['lr'])}, write {m(tot['lw'])}; "
          f"ncu with flush read {m(tot['ar'])}, write {m(tot['aw'])}; "
          f"ncu without flush read {m(tot['nr'])}, write {m(tot['nw'])}")
    if rr:
        print(f"# {rows} memory-bound kernels; ledger/ncu read: median {statistics.median(rr):.3f}, "
              f"min {min(rr):.3f}, max {max(rr):.3f}; write: median {statistics.median(wr):.3f}, "
              f"min {min(wr):.3f}, max {max(wr):.3f}")
    return 1 if rows == 0 or bad else 0


if __name__ == "__main__":
    sys.exit(main())
