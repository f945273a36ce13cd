#!/usr/bin/env python3
"""mkjob.py - writes the traces of a synthetic DDP job, one per rank, and the facts planted in it.

    python3 tests/tools/mkjob.py -n 8 -s 7 -o DIR [--straggler R] [--extra E] [--cut R]
                                 [--no-coll] [--layers L] [--seed S]

Each rank's trace (DIR/aicprof.rank<R>.aicp.jsonl) has the record shapes of the shim's traces
(header, str, alloc, push/pop, launch, kernel) and the collective records of the trace format
(comm, coll, coll ids on NCCL's launches): a model of L layers on stream 7, NVTX steps "step k",
a forward of L kernels, a backward of L kernels writing two gradient buckets, and the bucket's
all-reduce on the NCCL stream 13 (ncclDevKernel_AllReduce_Sum_f32_RING_LL) after its last
gradient; an SGD step of L kernels after the second all-reduce. One broadcast precedes the first
step (DDP's parameter broadcast).

Collectives are simulated across ranks: an all-reduce ends on every rank at the latest rank's
start plus its transfer time, so the ranks that arrive early wait. Planted:
  - the straggler rank runs E extra kernels (extra_work, 150 us each) per step;
  - the second bucket's all-reduce (position 1 of a step) starts after the backward pass has
    ended, so no compute overlaps it: an exposed all-reduce.
Kernel times carry a small seeded jitter.

DIR/expected.json holds the figures an analysis should find, computed here from what was
written, with the analyzer's definitions (docs/summary-format.md, "The job view"): per
collective position, the median over steps of the fastest rank's duration, of the bus
bandwidth, and of the mean over ranks of exposed and overlapped time; the straggler's extra
kernels (count, and time per step: the mean over the steps). Python 3 stdlib only.
"""
import argparse
import json
import os
import random
import statistics

US = 1000  # ns
T0 = 1795974901000000000
FWD_US, BWD_US, OPT_US, EXTRA_US = 100.0, 200.0, 20.0, 150.0
XFER_US = [300.0, 250.0]  # bucket 0 and bucket 1 all-reduce transfer times
GAP_US, LAUNCH_US = 2.0, 5.0
LAYER_BYTES = 4 << 20


def mangle(name, sig):
    return "_Z%d%s%s" % (len(name), name, sig)


NCCL_AR = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
NCCL_BC = "ncclDevKernel_Broadcast_RING_LL"
NCCL_ARGS = "24ncclDevKernelArgsStorageILm4096EE"


def covered(s, e, ivs):
    c = 0
    for a, b in ivs:
        lo, hi = max(a, s), min(b, e)
        if hi > lo:
            c += hi - lo
    return c


def union(ivs):
    out = []
    for a, b in sorted(ivs):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("-s", type=int, default=7, help="steps")
    ap.add_argument("-o", required=True)
    ap.add_argument("--straggler", type=int, default=None)
    ap.add_argument("--extra", type=int, default=2)
    ap.add_argument("--cut", type=int, default=None, help="cut this rank's trace short")
    ap.add_argument("--no-coll", action="store_true")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hosts", type=int, default=1,
                    help="spread ranks over this many hosts whose clocks differ (host h: +h x 1234.567 us)")
    a = ap.parse_args()
    N, S, L = a.n, a.s, a.layers
    strag = a.straggler if a.straggler is not None else N // 2 + 1 if N > 1 else 0
    os.makedirs(a.o, exist_ok=True)

    names = {}
    strs = []

    def sid(n):
        if n not in names:
            names[n] = len(names)
            strs.append({"t": "str", "id": names[n], "s": n})
        return names[n]

    for i in range(L):
        sid(mangle("fwd_l%d" % i, "PfPKfi"))
    for i in range(L):
        sid(mangle("bwd_l%d" % i, "PfPKfi"))
    sid(mangle("sgd_step", "PfPKfi"))
    sid(mangle("extra_work", "PfPKfi"))
    sid("_Z%d%s%s" % (len(NCCL_AR), NCCL_AR, NCCL_ARGS))
    sid("_Z%d%s%s" % (len(NCCL_BC), NCCL_BC, NCCL_ARGS))

    # buffers: activations 0..L, params L+1..2L, two buckets, a scratch for the extra work
    sizes = [LAYER_BYTES] * (L + 1) + [LAYER_BYTES] * L + [LAYER_BYTES * ((L + 1) // 2), LAYER_BYTES * (L // 2), LAYER_BYTES]
    ACT, PAR, BK0, BK1, SCR = 0, L + 1, 2 * L + 1, 2 * L + 2, 2 * L + 3
    ptrs = []
    base = 0x7F3200000000
    for s in sizes:
        ptrs.append(base)
        base += (s + (1 << 21)) & ~((1 << 21) - 1)
    # gradient l lives in a bucket: layers L-1 .. (L+1)//2-ish in bucket 0 (written first)
    nb0 = L - L // 2  # layers in bucket 0: the last nb0 layers
    def grad_loc(l):
        if l >= L - nb0:
            return BK0, (L - 1 - l) * LAYER_BYTES
        return BK1, (L - nb0 - 1 - l) * LAYER_BYTES

    rng = [random.Random(a.seed * 7919 + r) for r in range(N)]

    def jit(r, us):
        return us * (1 + rng[r].uniform(-0.02, 0.02))

    # simulate: ev[r] = list of (kind, name, stream, start_ns, end_ns, ptrs[(alloc, off)], coll)
    ev = [[] for _ in range(N)]
    colls = [[] for _ in range(N)]  # per rank: coll records (id, n, op, bytes)
    t = T0 + 1000 * US
    # the broadcast before the first step
    bstart = [t + jit(r, 10) * US for r in range(N)]
    bend = max(bstart) + 40 * US
    for r in range(N):
        ev[r].append(("nccl", NCCL_BC, 13, int(bstart[r]), int(bend), [(PAR, 0)], ("Broadcast", 0, sizes[PAR])))
    t = bend + 100 * US
    nccl_n = 1
    step_bounds = []
    for k in range(S):
        ready, cur = [], []
        for r in range(N):
            c = t
            for i in range(L):
                d = jit(r, FWD_US) * US
                ev[r].append(("k", mangle("fwd_l%d" % i, "PfPKfi"), 7, int(c), int(c + d), [(ACT + i + 1, 0), (ACT + i, 0)], None))
                c += d + GAP_US * US
            if r == strag:
                for e in range(a.extra):
                    d = jit(r, EXTRA_US) * US
                    ev[r].append(("k", mangle("extra_work", "PfPKfi"), 7, int(c), int(c + d), [(SCR, 0), (ACT + L, 0)], None))
                    c += d + GAP_US * US
            rd = [None, None]
            for i in reversed(range(L)):
                d = jit(r, BWD_US) * US
                b, off = grad_loc(i)
                ev[r].append(("k", mangle("bwd_l%d" % i, "PfPKfi"), 7, int(c), int(c + d), [(b, off), (ACT + i, 0)], None))
                c += d + GAP_US * US
                if i == L - nb0:
                    rd[0] = c
            rd[1] = c
            ready.append(rd)
        # bucket 0 then bucket 1, serialized on the NCCL stream
        st0 = [ready[r][0] + LAUNCH_US * US for r in range(N)]
        e0 = max(st0) + XFER_US[0] * US
        st1 = [max(ready[r][1] + LAUNCH_US * US, e0) for r in range(N)]
        e1 = max(st1) + XFER_US[1] * US
        ends = []
        for r in range(N):
            ev[r].append(("nccl", NCCL_AR, 13, int(st0[r]), int(e0), [(BK0, 0)], ("AllReduce", nccl_n, sizes[BK0])))
            ev[r].append(("nccl", NCCL_AR, 13, int(st1[r]), int(e1), [(BK1, 0)], ("AllReduce", nccl_n + 1, sizes[BK1])))
            c = e1 + LAUNCH_US * US
            for i in range(L):
                d = jit(r, OPT_US) * US
                b, off = grad_loc(i)
                ev[r].append(("k", mangle("sgd_step", "PfPKfi"), 7, int(c), int(c + d), [(PAR + i, 0), (b, off)], None))
                c += d + GAP_US * US
            ends.append(c)
        nccl_n += 2
        step_bounds.append((t, max(ends)))
        t = max(ends) + 50 * US

    for r in range(N):
        ev[r].sort(key=lambda e: e[3])

    # expected figures, from what is written
    exp = {"ranks": N, "steps": S, "straggler": strag, "extra": a.extra, "positions": []}
    per_pos = {0: [], 1: []}
    for r in range(N):
        comp = union([(e[3], e[4]) for e in ev[r] if e[0] == "k"])
        ar = [e for e in ev[r] if e[0] == "nccl" and e[6][0] == "AllReduce"]
        for j, e in enumerate(ar):
            dur = (e[4] - e[3]) / 1e3
            ov = covered(e[3], e[4], comp) / 1e3
            per_pos[j % 2].append((j // 2, r, dur, ov, e[6][2]))
    rounds = list(range(max(0, S - 16), S))
    for p in (0, 1):
        durs, exps, ovs, bws = [], [], [], []
        for k in rounds:
            xs = [x for x in per_pos[p] if x[0] == k]
            mn = min(x[2] for x in xs)
            durs.append(mn)
            exps.append(sum(round(x[2], 3) - round(x[3], 3) for x in xs) / len(xs))
            ovs.append(sum(round(x[3], 3) for x in xs) / len(xs))
            nbytes = xs[0][4]
            bws.append(nbytes / (mn * 1e3) * 2 * (N - 1) / N if N > 1 else nbytes / (mn * 1e3))
        exp["positions"].append({"pos": p, "bytes": per_pos[p][0][4], "duration_us": statistics.median(durs),
                                 "exposed_us": statistics.median(exps), "overlapped_us": statistics.median(ovs),
                                 "busbw_gbs": statistics.median(bws)})
    # the straggler's extra kernel time per step: the mean over the steps (every step is steady)
    xs = [sum((x[4] - x[3]) / 1e3 for x in ev[strag] if x[1] == mangle("extra_work", "PfPKfi")) / S]
    exp["extra_kernel"] = mangle("extra_work", "PfPKfi")
    host_of = [r * a.hosts // N for r in range(N)]
    skew = [host_of[r] * 1234567 for r in range(N)]  # ns
    exp["clock_offset_us"] = [(skew[0] - skew[r]) / 1e3 for r in range(N)]
    exp["extra_us"] = sum(xs)
    with open(os.path.join(a.o, "expected.json"), "w") as f:
        json.dump(exp, f, indent=1)

    # write the traces
    for r in range(N):
        path = os.path.join(a.o, "aicprof.rank%d.aicp.jsonl" % r)
        out = []
        seq = [0]

        def nseq():
            seq[0] += 1
            return seq[0] - 1
        pid = 4000 + r
        out.append({"t": "header", "format": 1, "tool": "aicprof 0.1.0", "pid": pid, "ppid": 3999, "host": "node%d" % host_of[r],
                    "argv": ["python3", "train.py"], "exe": "/usr/bin/python3", "cwd": ".", "rank": r,
                    "local_rank": r % 8, "world_size": N, "clock": "realtime", "ts": T0,
                    "versions": {"driver": 13000, "cupti": 130001},
                    "clock_sync": {"realtime": T0, "cupti": T0}, "start_ts": T0,
                    "devices": [{"id": r % 8, "name": "NVIDIA H200", "cc": "9.0", "sm_count": 132,
                                 "mem_clock_khz": 3201000, "bus_width_bits": 6016, "peak_bw_gbs": 4814,
                                 "total_mem": 150109880320, "l2_bytes": 62914560, "clock_khz": 1980000}],
                    "config": {"attrib": 0, "writes": "infer"}, "alloc_backend": "default",
                    "job": {"clock": "realtime-shared-host" if a.hosts == 1 else "per-host"}})
        out.extend(strs)
        for i, s in enumerate(sizes):
            out.append({"t": "alloc", "seq": nseq(), "ts": T0 + i, "tid": pid, "id": i, "ptr": hex(ptrs[i]),
                        "size": s, "api": "cuMemAlloc_v2"})
        comm = "0x55%08x" % (0xC0 + r)
        if not a.no_coll:
            out.append({"t": "comm", "comm": comm, "uid": "9f3a5c0011223344", "nranks": N, "rank": r,
                        "dev": r % 8, "ts": T0 + 100, "seq": nseq()})
        corr = 100
        cid = 0
        pending = []
        step = -1
        for e in ev[r]:
            # NVTX steps: push before a step's first kernel, pop after its last
            while step + 1 < S and e[3] >= step_bounds[step + 1][0]:
                if step >= 0:
                    out.append({"t": "pop", "seq": nseq(), "ts": step_bounds[step][1], "tid": pid})
                step += 1
                out.append({"t": "push", "seq": nseq(), "ts": step_bounds[step][0] - 20 * US, "tid": pid,
                            "text": "step %d" % step})
            corr += 1
            fn = names[e[1] if e[0] == "k" else "_Z%d%s%s" % (len(e[1]), e[1], NCCL_ARGS)]
            lts = e[3] - 30 * US
            if e[0] == "k":
                args = [{"i": j, "o": 8 * j, "n": 8, "v": hex(ptrs[b] + off), "p": [[0, hex(ptrs[b] + off), b, off]]}
                        for j, (b, off) in enumerate(e[5])]
                args.append({"i": len(args), "o": 8 * len(args), "n": 4, "v": hex(LAYER_BYTES // 4)})
                rec = {"t": "launch", "seq": nseq(), "ts": lts, "tid": pid, "c": corr, "api": "cuLaunchKernel",
                       "fn": fn, "grid": [4096, 1, 1], "block": [256, 1, 1], "smem": 0, "stream": "0x1", "args": args}
            else:
                op, n, nbytes = e[6]
                if not a.no_coll:
                    out.append({"t": "coll", "id": cid, "op": op, "dtype": "f32", "count": nbytes // 4,
                                "bytes": nbytes, "redop": "sum" if op == "AllReduce" else "none", "comm": comm,
                                "root": 0 if op == "Broadcast" else -1, "peer": -1, "stream": "0x2", "n": n,
                                "group": 0, "ts": lts - 2 * US, "seq": nseq(), "tid": pid, "site": None})
                    del out[-1]["site"]
                b, off = e[5][0]
                args = [{"i": 0, "o": 0, "n": 4096, "p": [[0, "0x7f0000001000", -1, 0], [8, hex(ptrs[b] + off), b, off]]}]
                rec = {"t": "launch", "seq": nseq(), "ts": lts, "tid": pid, "c": corr, "api": "cuLaunchKernelEx",
                       "fn": fn, "grid": [2, 1, 1], "block": [512, 1, 1], "smem": 0, "stream": "0x2", "args": args}
                if not a.no_coll:
                    rec["coll"] = [cid]
                    cid += 1
            out.append(rec)
            pending.append({"t": "kernel", "c": corr, "name": fn, "dev": r % 8, "ctx": 1, "stream": e[2],
                            "start": e[3], "end": e[4], "grid": rec["grid"], "block": rec["block"], "regs": 32,
                            "ssmem": 0, "dsmem": 0})
            if len(pending) >= 16:
                out.extend(pending)
                pending = []
        out.extend(pending)
        if step >= 0:
            out.append({"t": "pop", "seq": nseq(), "ts": step_bounds[step][1], "tid": pid})
        out.append({"t": "end", "ts": t, "reason": "exit", "records": len(out) + 1,
                    "kernels": sum(1 for x in out if x["t"] == "kernel"),
                    "dropped": {"records": 0, "activity": 0}})
        if skew[r]:
            for x in out:
                for k in ("ts", "start", "end"):
                    if isinstance(x.get(k), int):
                        x[k] += skew[r]
        text = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in out)
        if r == a.cut:
            # a killed process: cut in the middle of a line at about 85% of the file
            text = text[: int(len(text) * 0.85)]
            if text.endswith("\n"):
                text = text[:-3]
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
