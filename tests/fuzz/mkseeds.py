#!/usr/bin/env python3
# Makes the fuzz seed corpora in tests/fuzz/seeds/ from the project's own inputs (run from the
# top directory; the output is committed). analyze: each sample trace cut to its header and
# first N API-side lines, plus the activity records (kernel, copy, set) those lines' correlation
# ids name and the end line, so the cut still has whole steps' worth of joins; the small test
# traces as they are; the real programs' traces (HEADTAIL) also cut to their first 200 and last
# 50 lines (joins broken at the cut, as in a trace read from the middle). report and summary: the report fixtures and summaries the analyzer writes for two
# small traces and of the real programs (given as arguments: summary.json files; the
# summary target gets the same). summary: also tests/summary/*.json when present. fuse: the group files of tests/fusion.
import json, os, shutil, sys

out = "tests/fuzz/seeds"
for d in ("analyze", "report", "fuse", "summary"):
    os.makedirs(os.path.join(out, d), exist_ok=True)

def cut(path, n):
    lines = open(path).read().splitlines()
    head, rest = lines[0], lines[1:]
    api = [l for l in rest if json.loads(l)["t"] not in ("kernel", "copy", "set", "end")][:n]
    cs = {json.loads(l).get("c") for l in api} - {None}
    act = [l for l in rest if json.loads(l)["t"] in ("kernel", "copy", "set") and json.loads(l).get("c") in cs]
    end = [l for l in rest if json.loads(l)["t"] == "end"]
    return "\n".join([head] + api + act + end) + "\n"

for f in sorted(os.listdir("samples/traces")):
    base = f.split(".")[0]
    for n in (60, 250):
        open(os.path.join(out, "analyze", "%s-%d.aicp.jsonl" % (base, n)), "w").write(cut(os.path.join("samples/traces", f), n))
HEADTAIL = ("gpt2_train", "llama_train", "resnet_train", "jax_train", "cupy_loop")
for base in HEADTAIL:
    lines = open(os.path.join("samples/traces", base + ".aicp.jsonl")).read().splitlines()
    keep = lines if len(lines) <= 250 else lines[:200] + lines[-50:]
    open(os.path.join(out, "analyze", "%s-ht.aicp.jsonl" % base), "w").write("\n".join(keep) + "\n")
for f in sorted(os.listdir("tests/traces")):
    shutil.copy(os.path.join("tests/traces", f), os.path.join(out, "analyze", f))
for f in ("small.json", "hostile.json"):
    shutil.copy(os.path.join("tests/report", f), os.path.join(out, "report", f))
for i, s in enumerate(sys.argv[1:]):
    shutil.copy(s, os.path.join(out, "report", "analyzed-%d.json" % i))
    shutil.copy(s, os.path.join(out, "summary", "analyzed-%d.json" % i))
for f in ("small.json", "hostile.json"):
    shutil.copy(os.path.join("tests/report", f), os.path.join(out, "summary", f))
for f in sorted(os.listdir("tests/fusion")):
    shutil.copy(os.path.join("tests/fusion", f), os.path.join(out, "fuse", f))
