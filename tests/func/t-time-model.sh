#!/bin/sh
# The time model on every sample trace (analyzer/timemodel.c): savings bounded by the step, GPU
# busy time as the union over streams, host-blocked findings apart from GPU time, and one number
# per finding in summary.json, report.html and fuse's output. Every figure checked is recomputed
# here from the summary's own timeline and steps, or read from the other outputs: nothing is a
# number of our own output written down.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
S=$top/samples/traces

for s in mlp_train attention_train chain gpt2_train llama_train resnet_train jax_train cupy_loop ddp; do
	if [ "$s" = ddp ]; then
		set -- "$S/ddp_train.rank0.aicp.jsonl" "$S/ddp_train.rank1.aicp.jsonl"
	else
		set -- "$S/$s.aicp.jsonl"
	fi
	(cd "$top" && "$A" analyze -q "$@" -o "$tmp/$s") >"$tmp/$s.log" 2>&1
	check "$s: analyze exits 0" test $? = 0
	"$A" fuse "$tmp/$s" -o "$tmp/$s.f" >"$tmp/$s.fuse" 2>&1
	check "$s: fuse exits 0" test $? = 0
	python3 - "$tmp/$s" "$tmp/$s.f" "$tmp/$s.fuse" "$s" <<'PY'
import json, os, re, sys, html
d, fdir, fout, name = sys.argv[1:5]
s = json.load(open(os.path.join(d, "summary.json")))
C = s["candidates"]
tm = s.get("time_model")
out = []
def check(desc, cond):
    out.append(("ok" if cond else "not ok") + " - %s: %s" % (name, desc))
eps = 0.01
check("summary has a time model", isinstance(tm, dict))
if not isinstance(tm, dict):
    print("\n".join(out)); sys.exit(0)
# the union of the timeline's intervals, recomputed here
ev = sorted((e["start_us"], e["start_us"] + e["dur_us"]) for e in s["timeline"]["events"])
busy, end, total = 0.0, -1e300, 0.0
for a, b in ev:
    total += b - a
    if a > end:
        busy += b - a
    elif b > end:
        busy += b - end
    end = max(end, b)
times = s["steps"]["times_us"]
step = max(times[s["timeline"]["step"]] if 0 <= s["timeline"]["step"] < len(times) else s["steps"]["median_us"], end - ev[0][0])
check("GPU busy is the union of the timeline's intervals", abs(tm["busy_us"] - min(busy, step)) < eps)
check("kernel time summed over streams is the sum of the events", abs(tm["kernel_sum_us"] - total) < eps)
check("overlap is the sum less the union", abs(tm["overlap_us"] - max(0, total - tm["busy_us"])) < eps)
check("busy + idle is the captured step", abs(tm["busy_us"] + tm["idle_us"] - step) < eps)
check("host-blocked and launch gaps fit in the idle time", tm["host_blocked_us"] + tm["launch_gap_us"] <= tm["idle_us"] + eps)
med = s["steps"]["median_us"]
check("the headline never exceeds the step", tm["promised_us"] <= min(med, step) + eps)
check("GPU savings in the headline fit in the busy time", tm["promised_gpu_us"] <= tm["busy_us"] + eps)
check("host savings in the headline fit in the idle time", tm["promised_host_us"] <= tm["idle_us"] + eps)
numbered = [c for c in C if "number" in c]
check("every finding has a number, 1..n in order", [c["number"] for c in C] == list(range(1, len(C) + 1)))
mine = [c for c in C if "time_kind" in c]
check("each finding saves no more than its kernel time and the step",
      all(c["time_saved_us_per_step"] <= c["kernel_saved_us"] + eps and c["time_saved_us_per_step"] <= step + eps for c in mine))
hs = [c for c in mine if c["time_kind"] == "host-blocked"]
check("host-blocked findings save at most the step's idle time in all",
      sum(c["time_saved_us_per_step"] for c in hs) <= tm["idle_us"] + eps * (1 + len(hs)))
head = [c for c in mine if c["in_headline"]]
check("the headline sums its findings (capped)",
      abs(min(sum(c["time_saved_us_per_step"] for c in head if c["time_kind"] == "gpu"), tm["on_path_us"]) +
          min(sum(c["time_saved_us_per_step"] for c in head if c["time_kind"] == "host-blocked"), tm["idle_us"]) -
          tm["promised_us"]) < eps * (2 + len(head)) or tm["promised_us"] >= min(med, step) - eps)
check("no unproven finding is in the headline", all(c["proven"] for c in head))
# the report: every finding's number and kind, and its headline
r = open(os.path.join(d, "report.html")).read()
arts = re.findall(r'<article class="cand" id="cand-(\d+)"><h3>#(\d+) ([a-z-]+)', r)
byn = {c["number"]: c for c in C}
check("report: every full finding's #N is summary.json's number N, same kind",
      all(a == b and int(a) in byn and (k == byn[int(a)]["kind"] or (k == "host-blocked" and byn[int(a)].get("time_kind") == "host-blocked")) for a, b, k in arts))
rows = re.findall(r'<tr id="cand-(\d+)"><td class="n">(\d+)</td><td>([a-z-]+)</td>', r)
check("report: every table row's #N is summary.json's number N, same kind",
      all(a == b and int(a) in byn and (k == byn[int(a)]["kind"] or (k == "host-blocked" and byn[int(a)].get("time_kind") == "host-blocked")) for a, b, k in rows))
check("report: every finding is in the report once, full or in the table",
      sorted(int(a) for a, _, _ in arts) + sorted(int(a) for a, _, _ in rows) and
      sorted([int(a) for a, _, _ in arts] + [int(a) for a, _, _ in rows]) == sorted(byn))
# the ledger's kernel table: a node's "fusion #N" is a finding N that holds the node
kt = re.findall(r'<tr><td class="n" data-v="(\d+)">\d+</td>(.*?)</tr>', r)
marks = [(int(nid), int(m.group(1))) for nid, row in kt for m in [re.search(r'<a href="#cand-(\d+)">#\1</a>', row)] if m]
check("report: the kernel table's fusion #N holds that kernel (%d marks)" % len(marks),
      all(n in byn and nid in byn[n]["nodes"] for nid, n in marks))
pct = [float(x) for x in re.findall(r"up to ([0-9.]+)% of the step", r)]
check("report: no 'up to X% of the step' over 100", all(p <= 100 for p in pct))
text = html.unescape(re.sub(r"<[^>]+>", "", r))
if tm["overlap_us"] > 0:
    check("report: kernel time over streams is said as overlap", "ran beside another stream" in text)
# what to do: 'generates a fused kernel' exactly where fuse generated finding #N's group
gen = set()
if os.path.isdir(fdir):
    for x in os.listdir(fdir):
        m = re.match(r"c(\d+)_", x)
        if m and os.path.isdir(os.path.join(fdir, x)):
            gen.add(int(m.group(1)))
says = set(int(n) for n in re.findall(r"generates a fused kernel for it \(finding #(\d+)\)", r))
check("report: 'aicprof fuse generates' on exactly the findings fuse generated", says == gen)
check("fuse: every generated cN_ops is finding #N's group",
      all(byn.get(n, {}).get("group") and byn[n]["group"]["name"].startswith("c%d_" % n) for n in gen))
fo = open(fout).read()
adv = re.findall(r"advice    finding #(\d+): ([a-z-]+):", fo)
check("fuse: every advice line's #N is summary.json's finding N of that kind",
      all(int(n) in byn and byn[int(n)]["kind"] == k for n, k in adv))
rd = open(os.path.join(fdir, "README.md")).read() if os.path.exists(os.path.join(fdir, "README.md")) else ""
check("fuse README: every '### cN_ops (finding #N)' agrees",
      all(a == b for a, b in re.findall(r"### c(\d+)_\S* \(finding #(\d+)\)", rd)))
print("\n".join(out))
PY
done
