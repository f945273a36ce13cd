"""Checks the two rank traces of samples/ddp_train.py (tests/gpu/t-ddp.sh): headers, NCCL
communicators and collectives matched across ranks, NCCL kernels tied to their collectives,
and the analyzer's job view against the kernels' own times. One TAP line per check.
usage: ddp_check.py AICPROF RANK0_TRACE RANK1_TRACE"""
import json
import os
import subprocess
import sys
import tempfile


def tap(ok, what):
    print(("ok - " if ok else "not ok - ") + what)


def load(path):
    recs = []
    with open(path) as f:
        for line in f:
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    return recs


def union_overlap(iv, others):
    """Length of interval iv covered by the union of intervals others."""
    s, e = iv
    cut = sorted((max(a, s), min(b, e)) for a, b in others if b > s and a < e)
    total, cur_s, cur_e = 0, None, None
    for a, b in cut:
        if cur_e is None or a > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = a, b
        else:
            cur_e = max(cur_e, b)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def main():
    aicprof, paths = sys.argv[1], sys.argv[2:4]
    ranks = []
    for p in paths:
        if not os.path.exists(p):
            tap(False, "trace %s exists" % p)
            return
        recs = load(p)
        hdr = recs[0] if recs and recs[0].get("t") == "header" else {}
        strs = {r["id"]: r["s"] for r in recs if r.get("t") == "str"}
        launches = [r for r in recs if r.get("t") == "launch"]
        kernels = {r["c"]: r for r in recs if r.get("t") == "kernel"}
        ranks.append(dict(path=p, recs=recs, hdr=hdr, strs=strs, launches=launches,
                          kernels=kernels,
                          comms=[r for r in recs if r.get("t") == "comm"],
                          colls=[r for r in recs if r.get("t") == "coll"],
                          end=[r for r in recs if r.get("t") == "end"]))
    for i, rk in enumerate(ranks):
        h = rk["hdr"]
        tap(h.get("rank") == i and h.get("world_size") == 2 and h.get("local_rank") == i,
            "rank %d: header says rank %s of %s" % (i, h.get("rank"), h.get("world_size")))
        tap(h.get("job", {}).get("clock") == "realtime-shared-host",
            "rank %d: header names the job clock" % i)
        tap(len(rk["end"]) == 1, "rank %d: trace ends with an end line" % i)
        steps = [r for r in rk["recs"] if r.get("t") == "push" and str(r.get("text", "")).startswith("step ")]
        tap(len(steps) == 8, "rank %d: 8 NVTX steps (%d)" % (i, len(steps)))
        print("# rank %d: %d launches, %d kernels, %d comms, %d collectives" % (
            i, len(rk["launches"]), len(rk["kernels"]), len(rk["comms"]), len(rk["colls"])))
    r0, r1 = ranks
    tap(len(r0["comms"]) > 0 and len(r1["comms"]) > 0, "communicators recorded on both ranks (%d, %d)"
        % (len(r0["comms"]), len(r1["comms"])))
    u0 = sorted(c["uid"] for c in r0["comms"])
    u1 = sorted(c["uid"] for c in r1["comms"])
    tap(u0 == u1 and len(u0) > 0, "communicator uids match across ranks (%s)" % u0)
    tap(all(c["nranks"] == 2 and c["rank"] == i for i, rk in enumerate(ranks) for c in rk["comms"]
            if c["nranks"] == 2), "each 2-rank communicator knows its rank")
    key = lambda c: tuple(str(c.get(k)) for k in ("uid", "n", "op", "dtype", "count", "bytes"))
    k0 = sorted(map(key, r0["colls"]))
    k1 = sorted(map(key, r1["colls"]))
    tap(len(k0) > 0 and k0 == k1, "collectives match across ranks by (uid, n): %d and %d" % (len(k0), len(k1)))
    ar = [c for c in r0["colls"] if c["op"] == "AllReduce"]
    print("# rank 0 all-reduces: %d, bytes %s" % (len(ar), sorted(set(c["bytes"] for c in ar))))
    for i, rk in enumerate(ranks):
        nccl = [l for l in rk["launches"] if "nccl" in rk["strs"].get(l["fn"], "")]
        tagged = [l for l in nccl if l.get("coll")]
        tap(len(nccl) > 0 and len(tagged) == len(nccl),
            "rank %d: every NCCL kernel launch carries its collectives (%d of %d)" % (i, len(tagged), len(nccl)))
        ids = {c["id"] for c in rk["colls"]}
        carried = {x for l in tagged for x in l["coll"]}
        tap(ids and ids <= carried, "rank %d: every collective's kernel was seen (%d of %d)"
            % (i, len(ids & carried), len(ids)))
    # exposed communication from the kernels' own times: per rank, the part of each NCCL
    # kernel's interval not covered by any other kernel on the same device
    exposed = []
    for i, rk in enumerate(ranks):
        nc, comp = [], []
        for l in rk["launches"]:
            k = rk["kernels"].get(l["c"])
            if not k:
                continue
            (nc if "nccl" in rk["strs"].get(l["fn"], "") else comp).append((k["start"], k["end"]))
        tot = sum(e - s for s, e in nc)
        hidden = sum(union_overlap(iv, comp) for iv in nc)
        exposed.append((tot - hidden) / 1e3)
        print("# rank %d: NCCL kernel time %.1f us, overlapped by compute %.1f us, exposed %.1f us"
              % (i, tot / 1e3, hidden / 1e3, (tot - hidden) / 1e3))
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([aicprof, "analyze", "-q", "--no-report", paths[0], paths[1], "-o", d],
                           capture_output=True, text=True)
        tap(p.returncode == 0, "aicprof analyze takes both ranks (exit %d) %s" % (p.returncode, p.stderr.strip()[:200]))
        try:
            s = json.load(open(os.path.join(d, "summary.json")))
        except (OSError, ValueError):
            tap(False, "summary.json written")
            return
        job = s.get("job")
        tap(isinstance(job, dict), "summary has a job view")
        if not isinstance(job, dict):
            return
        pr = {r["rank"]: r for r in job.get("per_rank", [])}
        for r in sorted(pr):
            print("# job rank %d: step %.1f us, compute %.1f, collectives %.1f, wait %.1f, "
                  "exposed %.1f, overlapped %.1f" % (r, pr[r]["step_median_us"], pr[r]["compute_us"],
                  pr[r]["collective_us"], pr[r]["wait_us"], pr[r]["exposed_us"], pr[r]["overlapped_us"]))
        tap(job.get("clock", {}).get("method") == "shared-host", "job clock: shared host (%s)" % job.get("clock"))
        tap(job.get("ranks") == 2 and sorted(pr) == [0, 1], "job view holds both ranks")
        tap(job.get("collectives_seen", 0) > 0 and job.get("collectives_matched") == job.get("collectives_seen"),
            "every collective matched across ranks (%s of %s)" % (job.get("collectives_matched"), job.get("collectives_seen")))
        sl = job.get("slowest") or {}
        print("# slowest: %s" % sl.get("why"))
        tap(sl.get("rank") == 1, "the planted straggler (rank 1, 1.5x the sequence) is the slowest rank (%s)" % sl.get("rank"))
        tap(0 in pr and 1 in pr and pr[0]["wait_us"] > pr[1]["wait_us"],
            "rank 0 waits longer at the collectives than the straggler does")
        bw = [c.get("busbw_gbs") for c in job.get("collectives", [])]
        print("# collectives: %s" % [(c["op"], c["bytes"], c["duration_us"], c.get("busbw_gbs")) for c in job.get("collectives", [])])
        tap(bw and all(b is not None and b > 0 for b in bw), "bus bandwidth for every collective")
        co = [c for c in s.get("candidates", []) if c.get("kind") == "comm-overlap"]
        print("# comm-overlap candidates: %d, %s" % (len(co), [c.get("time_saved_us_per_step") for c in co]))
        jc = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "jobcheck.py"),
                             os.path.join(d, "summary.json"), paths[0], paths[1]], capture_output=True, text=True)
        out = (jc.stdout + jc.stderr).strip().splitlines()
        for line in out[-8:]:
            print("# jobcheck: " + line)
        tap(jc.returncode == 0, "jobcheck: the job view's overlap, exposure and transfer times agree with the kernels' own times")


if __name__ == "__main__":
    main()
