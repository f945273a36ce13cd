"""Checks on a recorded trace, against ground truth from the same run (tests/gpu/run.sh).

Usage: python3 trace_check.py CHECK TRACE [ARGS...]; prints TAP lines, exits non-zero on failure.
Pure standard library: it reads the trace itself, independently of the analyzer.
"""
import json
import sys


def load(path):
    recs, bad = [], 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                bad += 1
                continue
            try:
                recs.append(json.loads(raw))
            except ValueError:
                bad += 1
    return recs, bad


def resolve(recs):
    """The allocation of every pointer the shim left unresolved (id -2, AICPROF_RESOLVE=offline),
    replayed in seq order as analyzer/resolve.c does, written in place; a word in no live
    allocation is dropped. Independent of the analyzer: plain lists, a block of PyTorch's caching
    allocator hides the segment that holds it. Returns (resolved, dropped)."""
    import bisect
    vis, outer = [], []  # vis: sorted [base, end, id], disjoint; outer: hidden segments
    done = dropped = 0
    for r in sorted((r for r in recs if "seq" in r), key=lambda r: r["seq"]):
        t = r.get("t")
        if t == "alloc":
            b = int(r["ptr"], 16)
            e = b + r["size"]
            inner = r.get("api") == "c10::CachingAllocator"
            i = bisect.bisect_left(vis, [e])
            while i > 0 and vis[i - 1][1] > b:
                o = vis.pop(i - 1)
                if inner and o[0] <= b and e <= o[1]:
                    outer.append(o)
                i -= 1
            bisect.insort(vis, [b, e, r["id"]])
        elif t == "free":
            b = int(r["ptr"], 16)
            i = bisect.bisect_left(vis, [b])
            if i < len(vis) and vis[i][0] == b:
                o = vis.pop(i)
            else:
                o = next((x for x in reversed(outer) if x[0] == b), None)
                if o:
                    outer.remove(o)
            if r.get("id") == -2:
                r["id"] = o[2] if o else -1
        elif t == "launch":
            for a in r.get("args", []):
                keep = []
                for p in a.get("p", []):
                    if p[2] == -2:
                        x = int(p[1], 16)
                        i = bisect.bisect_right(vis, [x, float("inf")]) - 1
                        if i < 0 or not vis[i][0] <= x < vis[i][1]:
                            dropped += 1
                            continue
                        p[2], p[3] = vis[i][2], x - vis[i][0]
                        done += 1
                    keep.append(p)
                if "p" in a:
                    a["p"] = keep
    return done, dropped


def tap(ok, what):
    print(("ok - " if ok else "not ok - ") + what)
    return ok


def by_type(recs, t):
    return [r for r in recs if r.get("t") == t]


def main():
    check, path = sys.argv[1], sys.argv[2]
    recs, bad = load(path)
    resolved, dropped = resolve(recs)
    strs = {r["id"]: r["s"] for r in by_type(recs, "str")}
    sites = {r["id"]: r for r in by_type(recs, "site")}
    launches = by_type(recs, "launch")
    kernels = by_type(recs, "kernel")
    good = True
    if check == "basic":
        good &= tap(bad == 0, f"{path}: every line parses ({bad} bad)")
        good &= tap(recs and recs[0].get("t") == "header", f"{path}: header first")
        good &= tap(recs and recs[-1].get("t") == "end", f"{path}: end line last")
        h = recs[0] if recs else {}
        devs = h.get("devices") or [{}]
        good &= tap(devs[0].get("sm_count", 0) > 0 and devs[0].get("peak_bw_gbs", 0) > 0,
                    f"{path}: device properties {devs[0].get('name')} sm={devs[0].get('sm_count')} bw={devs[0].get('peak_bw_gbs')}")
        corr = {r["c"] for r in launches}
        graphless = [k for k in kernels if not k.get("graph")]
        joined = sum(1 for k in graphless if k["c"] in corr)
        good &= tap(len(kernels) > 0 and joined == len(graphless),
                    f"{path}: {len(kernels)} kernel activity records, {len(launches)} launches, {joined} joined by correlation id")
        end = recs[-1] if recs else {}
        good &= tap(end.get("kernels") == len(kernels), f"{path}: end line counts {end.get('kernels')} kernels")
        errs = [r for r in launches if "argerr" in r]
        good &= tap(not errs, f"{path}: parameter layout read for every launch ({len(errs)} failed: {sorted({strs.get(r['fn'],'?')[:60] for r in errs})[:3]} codes {sorted({r['argerr'] for r in errs})})")
    elif check == "count":  # expected kernel count from another run
        want = int(sys.argv[3])
        good &= tap(len(kernels) == want, f"{path}: {len(kernels)} kernels recorded, ground truth {want}")
    elif check == "elementwise":
        ew = [r for r in launches if "elementwise_kernel" in strs.get(r["fn"], "")]
        miss = 0
        for r in ew:
            args = r.get("args", [])
            # vectorized/unrolled_elementwise_kernel(int N, func_t f, Array<char*, K> data, ...):
            # every word of the data array is a tensor pointer
            arr = [a for a in args if a["n"] % 8 == 0 and a.get("p") and a["i"] >= 2]
            total = sum(len(a.get("p", [])) for a in args)
            if total == 0 or any(p[2] < 0 for a in args for p in a.get("p", [])):
                miss += 1
        good &= tap(ew and miss == 0, f"{path}: {len(ew)} elementwise launches, {miss} without tensor pointers mapped to allocations")
        vec = [r for r in launches if "vectorized_elementwise_kernel" in strs.get(r["fn"], "")]
        short = 0
        for r in vec:
            a = r["args"][2] if len(r["args"]) > 2 else {}
            if len(a.get("p", [])) != a.get("n", 0) // 8:
                short += 1
        good &= tap(short == 0, f"{path}: {len(vec)} vectorized elementwise launches, {short} whose data array is not all allocations")
    elif check == "sites":
        user_file = sys.argv[3]
        nosite = [r for r in launches if "site" not in r]
        good &= tap(not nosite, f"{path}: every launch has a site ({len(nosite)} without)")
        def user_hit(s):
            if s.get("how") == "native":
                return any(user_file in (fr.get("module", "") + fr.get("sym", "")) for fr in s.get("native", []))
            return any(fr.get("user") and user_file in fr.get("file", "") for fr in s.get("frames", []))
        wrong = [r for r in launches if "site" in r and not user_hit(sites.get(r["site"], {}))]
        good &= tap(not wrong, f"{path}: every site points into {user_file} ({len(wrong)} do not)")
        inh = sum(1 for r in launches if r.get("inh"))
        print(f"# {path}: {len(launches)} launches, {inh} with an inherited site, {len(sites)} sites")
    elif check == "nvtx":
        want = int(sys.argv[3])
        pushes = [r for r in recs if r.get("t") in ("push", "range_start") and r.get("text", "").startswith("step")]
        good &= tap(len(pushes) == want, f"{path}: {len(pushes)} NVTX step ranges, expected {want}")
    elif check == "allocs":
        allocs = by_type(recs, "alloc")
        frees = by_type(recs, "free")
        good &= tap(len(allocs) > 0, f"{path}: {len(allocs)} allocations, {len(frees)} frees recorded")
    elif check == "blocks":  # PyTorch's caching allocator: its blocks are the allocations
        allocs = by_type(recs, "alloc")
        blocks = {r["id"] for r in allocs if r.get("api") == "c10::CachingAllocator"}
        segs = {r["id"] for r in allocs if r.get("api") != "c10::CachingAllocator"}
        good &= tap(len(blocks) > 0, f"{path}: {len(blocks)} caching-allocator blocks, {len(segs)} other allocations")
        ids = [p[2] for r in launches for a in r.get("args", []) for p in a.get("p", [])]
        inb = sum(1 for i in ids if i in blocks)
        good &= tap(bool(ids) and inb >= 0.95 * len(ids), f"{path}: {inb} of {len(ids)} launch pointers in blocks ({resolved} resolved from the trace's allocations, {dropped} words in none dropped)")
    elif check == "reserved":  # expandable segments: pointers into a cuMemAddressReserve range
        res = [(int(r["ptr"], 16), r["size"]) for r in by_type(recs, "alloc") if r.get("api") == "cuMemAddressReserve"]
        ptrs = [(int(p[1], 16), p[2]) for r in launches for a in r.get("args", []) for p in a.get("p", [])]
        inr = [i for x, i in ptrs if i >= 0 and any(b <= x < b + n for b, n in res)]
        good &= tap(bool(res and inr), f"{path}: {len(inr)} of {len(ptrs)} launch pointers resolve inside the {len(res)} reserved ranges ({resolved} resolved from the trace's allocations)")
    elif check == "yielded":
        end = recs[-1] if recs else {}
        good &= tap(end.get("reason") == "yielded", f"{path}: trace ends with reason {end.get('reason')}")
    else:
        print("unknown check", check)
        good = False
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
