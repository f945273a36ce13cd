#!/usr/bin/env python3
"""tevent-check.py - checks a file against the Chrome trace event format (JSON object form),
as ui.perfetto.dev and chrome://tracing load it.

Usage: tevent-check.py [--expect KEY=N ...] FILE.json
Checks: the top level is an object with a traceEvents array and a displayTimeUnit of "ms" or
"ns"; every event is an object with a name (string), a ph among B E X i s t f M, pid and tid
integers, and (except M) a finite number ts >= 0; X events have dur >= 0; B/E pair per thread
in order; X slices of one thread nest (disjoint or inside one another); M events are process_name, process_sort_index, thread_name or thread_sort_index with
the matching args; every pid and (pid, tid) used by a non-M event is named by an M event; flow
events: each id has exactly one "s" and one "f", the "s" first (ts), "t" steps in between, both
inside an X slice of their thread (the slice they bind to). --expect KEY=N requires at least N
events of KEY (X, s, f, M, or a cat such as cat:kernel, pid-names:N processes).
Prints one line per problem (at most 20) and exits 1 when there is any, else prints a summary.
Standard library only.
"""
import json
import math
import sys
from collections import defaultdict

PH = set("BEXistfM")
META = {"process_name": "name", "thread_name": "name",
        "process_sort_index": "sort_index", "thread_sort_index": "sort_index"}


def check(doc):
    errs = []

    def err(msg):
        if len(errs) < 20:
            errs.append(msg)

    if not isinstance(doc, dict):
        return ["top level is not an object"], {}
    evs = doc.get("traceEvents")
    if not isinstance(evs, list):
        return ["no traceEvents array"], {}
    if doc.get("displayTimeUnit") not in ("ms", "ns"):
        err("displayTimeUnit is %r, not \"ms\" or \"ns\"" % doc.get("displayTimeUnit"))
    count = defaultdict(int)
    pnamed, tnamed, used_p, used_t = set(), set(), set(), set()
    slices = defaultdict(list)  # (pid, tid) -> [(start, end)]
    flows = defaultdict(lambda: {"s": [], "t": [], "f": []})
    stacks = defaultdict(list)
    for i, e in enumerate(evs):
        where = "event %d" % i
        if not isinstance(e, dict):
            err(where + ": not an object")
            continue
        ph = e.get("ph")
        if ph not in PH:
            err(where + ": ph %r not one of B E X i s t f M" % (ph,))
            continue
        count[ph] += 1
        if isinstance(e.get("cat"), str):
            count["cat:" + e["cat"]] += 1
        if not isinstance(e.get("name"), str):
            err(where + ": name is not a string")
        pid, tid = e.get("pid"), e.get("tid")
        if type(pid) is not int and not (isinstance(pid, float) and pid.is_integer()):
            err(where + ": pid %r is not an integer" % (pid,))
            continue
        if type(tid) is not int and not (isinstance(tid, float) and tid.is_integer()):
            err(where + ": tid %r is not an integer" % (tid,))
            continue
        pid, tid = int(pid), int(tid)
        if ph == "M":
            key = META.get(e.get("name"))
            args = e.get("args")
            if key is None:
                err(where + ": metadata name %r unknown" % e.get("name"))
            elif not isinstance(args, dict) or key not in args:
                err(where + ": %s without args.%s" % (e.get("name"), key))
            elif key == "name" and not isinstance(args[key], str):
                err(where + ": %s's name is not a string" % e.get("name"))
            elif key == "sort_index" and not isinstance(args[key], (int, float)):
                err(where + ": %s is not a number" % e.get("name"))
            if e.get("name") == "process_name":
                pnamed.add(pid)
            elif e.get("name") == "thread_name":
                tnamed.add((pid, tid))
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not math.isfinite(ts) or ts < 0:
            err(where + ": ts %r is not a finite number >= 0 (µs)" % (ts,))
            continue
        used_p.add(pid)
        used_t.add((pid, tid))
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or isinstance(dur, bool) or not math.isfinite(dur) or dur < 0:
                err(where + ": X with dur %r (not >= 0)" % (dur,))
                continue
            slices[(pid, tid)].append((ts, ts + dur))
        elif ph == "B":
            stacks[(pid, tid)].append(ts)
        elif ph == "E":
            if not stacks[(pid, tid)]:
                err(where + ": E without B on pid %d tid %d" % (pid, tid))
            elif stacks[(pid, tid)].pop() > ts:
                err(where + ": E before its B")
        elif ph in "stf":
            fid = e.get("id")
            if fid is None:
                err(where + ": flow event without id")
                continue
            flows[(e.get("cat"), str(fid))][ph].append((ts, pid, tid, where))
    for k, st in stacks.items():
        if st:
            err("pid %d tid %d: %d B without E" % (k[0], k[1], len(st)))
    for p in sorted(used_p - pnamed):
        err("pid %d has events but no process_name" % p)
    for p, t in sorted(used_t - tnamed):
        err("pid %d tid %d has events but no thread_name" % (p, t))
    for (p, t), v in slices.items():
        # X slices of one thread nest (disjoint or one inside the other), or the viewer
        # drops them as misnested
        v.sort(key=lambda ab: (ab[0], -ab[1]))
        open_ends = []
        for a, b in v:
            while open_ends and open_ends[-1] <= a + 1e-6:
                open_ends.pop()
            if open_ends and b > open_ends[-1] + 1e-6:
                err("pid %d tid %d: the slice at ts %g (dur %g) overlaps one it is not inside" % (p, t, a, b - a))
                break
            open_ends.append(b)

    def inside(ts, pid, tid):
        for a, b in slices.get((pid, tid), ()):
            if a > ts:
                break
            if a <= ts <= b:
                return True
        return False

    for (cat, fid), f in flows.items():
        if len(f["s"]) != 1 or len(f["f"]) != 1:
            err("flow %s id %s: %d s and %d f events (want one of each)" % (cat, fid, len(f["s"]), len(f["f"])))
            continue
        s, fe = f["s"][0], f["f"][0]
        if s[0] > fe[0]:
            err("flow %s id %s: f (ts %g) before s (ts %g)" % (cat, fid, fe[0], s[0]))
        for x in [s, fe] + f["t"]:
            if not inside(*x[:3]):
                err("%s: flow id %s at ts %g binds to no slice of pid %d tid %d" % (x[3], fid, x[0], x[1], x[2]))
    count["pid-names"] = len(pnamed)
    return errs, count


def main(argv):
    expect = []
    args = argv[1:]
    while len(args) > 1 and args[0] == "--expect":
        k, _, n = args[1].partition("=")
        expect.append((k, int(n)))
        args = args[2:]
    if len(args) != 1:
        print("usage: tevent-check.py [--expect KEY=N ...] FILE", file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print("%s: %s" % (args[0], e))
        return 1
    errs, count = check(doc)
    for k, n in expect:
        if count.get(k, 0) < n:
            errs.append("want at least %d %s events, have %d" % (n, k, count.get(k, 0)))
    for e in errs:
        print("%s: %s" % (args[0], e))
    if errs:
        return 1
    print("%s: ok: %s" % (args[0], " ".join("%s=%d" % kv for kv in sorted(count.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
