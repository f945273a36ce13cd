"""Independent check of the memory plan: the bytes in live allocations over step K of a trace.

Reads the trace's records, pairs NVTX push/pop into steps (the K-th pair), takes the window
from the first op (launch/memcpy/memset) after the K-th push to the first op after its pop,
and replays alloc/free (by seq) from the start of the trace (a caching allocator's blocks, api
c10::CachingAllocator, lie in its segments: not counted again). Prints the bytes live when the
window opens and the largest running total inside it, as "start peak".
Usage: python3 mem-peak.py TRACE K
"""
import json
import sys

recs = []
with open(sys.argv[1]) as f:
    for line in f:
        try:
            recs.append(json.loads(line))
        except ValueError:
            break
k = int(sys.argv[2])
api = sorted((r for r in recs if "seq" in r), key=lambda r: r["seq"])
pushes = [r["seq"] for r in api if r["t"] == "push"]
pops = [r["seq"] for r in api if r["t"] == "pop"]
ops = [r["seq"] for r in api if r["t"] in ("launch", "memcpy", "memset")]
lo = min(s for s in ops if s > pushes[k])
hi = min([s for s in ops if s > pops[k]] or [float("inf")])
live, held, peak = {}, 0, None
for r in api:
    if r["seq"] >= hi:
        break
    if r["seq"] >= lo and peak is None:
        start = held
        peak = held
    if r["t"] == "alloc" and r["id"] >= 0 and "Reserve" not in r.get("api", "") and r.get("api") != "c10::CachingAllocator":
        live[r["id"]] = r["size"]
        held += r["size"]
    elif r["t"] == "free" and r["id"] in live:
        held -= live.pop(r["id"])
    if peak is not None:
        peak = max(peak, held)
print(start, peak)
