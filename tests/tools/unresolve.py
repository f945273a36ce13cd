#!/usr/bin/env python3
"""unresolve.py IN OUT - a trace the shim resolved (AICPROF_RESOLVE=shim, the bundled samples),
rewritten as the shim writes it by default (AICPROF_RESOLVE=offline): every launch pointer's
allocation id becomes -2 (its address stays in the entry), every free's id -2, every copy's
dst_alloc/src_alloc -2, and the header's config says "resolve": "offline". The analyzer must
resolve them back to what the shim had (tests/func/t-resolve.sh compares the summaries). Every
seventh launch also gets a word that lies in no allocation (the shim, resolving offline, writes
every word within the bounds of all allocations): the analyzer must drop it."""
import json
import sys

src, dst = sys.argv[1:3]
n = {"ptr": 0, "free": 0, "copy": 0}
with open(src) as f, open(dst, "w") as o:
    for line in f:
        r = json.loads(line)
        t = r.get("t")
        if t == "header":
            r.setdefault("config", {})["resolve"] = "offline"
        elif t == "launch":
            n["launch"] = n.get("launch", 0) + 1
            for a in r.get("args", []):
                if a.get("p") and n["launch"] % 7 == 0:
                    a["p"].append([a["p"][-1][0], "0x8", -2, 0])
                    n["stray"] = n.get("stray", 0) + 1
                for p in a.get("p", []):
                    p[2], p[3] = -2, 0
                    n["ptr"] += 1
        elif t == "free":
            r["id"] = -2
            n["free"] += 1
        elif t in ("memcpy", "memset"):
            for k in ("dst_alloc", "src_alloc"):
                if k in r:
                    r[k] = [-2, 0]
                    n["copy"] += 1
        o.write(json.dumps(r, separators=(",", ":")) + "\n")
n.setdefault("stray", 0)
print("# unresolved %(ptr)d pointers, %(free)d frees, %(copy)d copy ends; %(stray)d stray words" % n)
