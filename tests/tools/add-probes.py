#!/usr/bin/env python3
"""add-probes.py - adds synthetic calibration fingerprints (probe records) to a trace.

Usage: add-probes.py IN.aicp.jsonl OUT.aicp.jsonl [--same FILE:LINE[,FILE:LINE...]]

For every launch record with pointer entries, a probe record {"t":"probe","c":C,"fp":[...]}
is written just before it (where the shim writes it), one fingerprint per entry of the
launch's pointer list `p` (all arguments, in order), as if AICPROF_WRITES=probe had probed
every launch. A fingerprint is the 64-bit FNV-1a hash of a key string:
  - launches whose site (innermost user frame, FILE:LINE) is one of --same: the key is the
    kernel's str id and the entry's index, so the same position has equal fingerprints in
    every step (the bytes it produced are the same each step);
  - every other launch: the key is its correlation id and the entry's index, so fingerprints
    differ from launch to launch (its bytes change every step).
Without --same every launch's fingerprints differ: an invariant found from the graph is then
refuted. Existing probe records are dropped first. Deterministic: the same input gives the
same output, byte for byte. Standard library only.
"""
import json
import sys


def fnv1a(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h or 1


def main():
    args = sys.argv[1:]
    same = set()
    if "--same" in args:
        i = args.index("--same")
        same = set(args[i + 1].split(","))
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit("usage: add-probes.py IN OUT [--same FILE:LINE,...]")
    sites = {}
    out = []
    with open(args[0]) as f:
        for line in f:
            r = json.loads(line)
            t = r.get("t")
            if t == "probe":
                continue
            if t == "site":
                user = [x for x in r.get("frames", []) if x.get("user")]
                if user:
                    sites[r["id"]] = "%s:%d" % (user[0]["file"], user[0]["line"])
            if t == "launch":
                n = sum(len(a.get("p", [])) for a in r.get("args", []))
                if n:
                    eq = sites.get(r.get("site")) in same
                    fp = []
                    for k in range(n):
                        key = ("fn %d entry %d" % (r["fn"], k) if eq else
                               "c %d entry %d" % (r["c"], k))
                        fp.append("0x%x" % fnv1a(key))
                    out.append(json.dumps({"t": "probe", "c": r["c"], "fp": fp},
                                          separators=(",", ":")) + "\n")
            out.append(line)
    with open(args[1], "w") as f:
        f.writelines(out)


if __name__ == "__main__":
    main()
