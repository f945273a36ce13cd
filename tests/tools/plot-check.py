#!/usr/bin/env python3
"""plot-check.py - the report's SVG plots (report/plot.c) checked for legibility.

Usage: plot-check.py REPORT.html SUMMARY.json
For every <svg class="plot ..."> in the page: no two <text> boxes overlap. A box is estimated
as plot.c does: 0.6 em a character wide, from 0.8 em above the baseline to 0.25 em below,
moved by text-anchor, dy and a translate/rotate transform (a rotated box by its upright
bounds); the font size comes from the class (.plot CSS in report/assets.c). For the roofline:
one circle per kernel of summary.json with a FLOP count, intensity and time (GEMMs included),
and one in the strip under it for every other kernel with a time;
every ceiling label names its dtypes; a point label cut by an ellipsis is the head and tail of
the full name in its <title>. Prints one line per problem and exits 1 when there is any.
Standard library only.
"""
import html
import json
import math
import re
import sys
import xml.etree.ElementTree as ET

FS = {"rooflabel": 11, "tick": 11, "axis": 12, "evlabel": 10}
NS = "{http://www.w3.org/2000/svg}"


def font_size(cls):
    for c in (cls or "").split():
        if c in FS:
            return FS[c]
    return 11


def text_of(t):
    s = t.text or ""
    for c in t:
        if c.tag != NS + "title":
            s += "".join(c.itertext())
        s += c.tail or ""
    return s


def box(t):
    fs = font_size(t.get("class"))
    s = text_of(t)
    w = 0.6 * fs * len(s)
    x, y = float(t.get("x", 0)), float(t.get("y", 0))
    dy = float(t.get("dy", 0))
    anchor = t.get("text-anchor", "start")
    u0 = x - (w if anchor == "end" else w / 2 if anchor == "middle" else 0)
    corners = [(u0, y + dy - 0.8 * fs), (u0 + w, y + dy - 0.8 * fs),
               (u0, y + dy + 0.25 * fs), (u0 + w, y + dy + 0.25 * fs)]
    tr = t.get("transform")
    if tr:
        m = re.match(r"translate\(([-0-9.e]+)[ ,]+([-0-9.e]+)\)(?:\s*rotate\(([-0-9.e]+)\))?", tr)
        if not m:
            return s, None
        tx, ty, ang = float(m[1]), float(m[2]), math.radians(float(m[3] or 0))
        ca, sa = math.cos(ang), math.sin(ang)
        corners = [(tx + u * ca - v * sa, ty + u * sa + v * ca) for u, v in corners]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
    return s, (min(xs), min(ys), max(xs), max(ys))


def main(argv):
    page = open(argv[1], encoding="utf-8").read()
    summ = json.load(open(argv[2]))
    errs = []
    svgs = re.findall(r'<svg class="plot[^"]*".*?</svg>', page, re.S)
    if not svgs:
        errs.append("no plot in the page")
    kinds = []
    for src in svgs:
        try:
            svg = ET.fromstring(src.replace("&nbsp;", "&#160;"))
        except ET.ParseError as e:
            errs.append("a plot is not well-formed XML: %s" % e)
            continue
        kind = svg.get("aria-label")
        kinds.append(kind)
        boxes = []
        for t in svg.iter(NS + "text"):
            s, b = box(t)
            if b is None:
                errs.append("%s: text %r: transform not understood" % (kind, s))
                continue
            for s2, b2 in boxes:
                if b[0] < b2[2] - 0.5 and b2[0] < b[2] - 0.5 and b[1] < b2[3] - 0.5 and b2[1] < b[3] - 0.5:
                    errs.append("%s: %r overlaps %r" % (kind, s, s2))
            boxes.append((s, b))
        if kind != "roofline":
            continue
        num = lambda n, k: isinstance(n.get(k), (int, float)) and n.get(k) > 0
        want = sum(1 for n in summ.get("nodes", [])
                   if all(num(n, k) for k in ("flops", "intensity", "median_us")))
        circ = svg.findall(".//" + NS + "circle")
        got = sum(1 for c in circ if "nf" not in c.get("class", "").split())
        if got != want:
            errs.append("roofline: %d points for %d kernels with a FLOP count" % (got, want))
        # every other kernel with a time is a point of the data-movement strip under it
        want_nf = sum(1 for n in summ.get("nodes", [])
                      if n.get("kind", "kernel") == "kernel" and num(n, "median_us") and
                      not all(num(n, k) for k in ("flops", "intensity")))
        got_nf = len(circ) - got
        if summ.get("device", {}).get("peak_bw_gbs") and got_nf != want_nf:
            errs.append("roofline: %d strip points for %d kernels without FLOPs" % (got_nf, want_nf))
        for t in svg.iter(NS + "text"):
            cls, s = t.get("class", ""), text_of(t)
            if cls == "rooflabel" and "TFLOP/s" in s and not re.match(r"^(bf16|fp16|tf32|fp32|fp64|fp8\w*|int8)(/\w+)* ", s):
                errs.append("roofline: the ceiling label %r names no dtype" % s)
            if "ptlabel" in cls.split():
                title = t.find(NS + "title")
                full = title.text if title is not None else None
                if not full:
                    errs.append("roofline: label %r without its full name" % s)
                elif "…" in s:
                    h, _, tl = s.partition("…")
                    names = [n.get("name", "") for n in summ["nodes"] if n.get("full_name") == full or n.get("name") == full]
                    # the label is the name (whose own template arguments short_name() elided:
                    # "Kernel<…>") or its head and tail
                    if not any(n == s or (n.startswith(h) and n.endswith(tl) and len(n) > len(s)) for n in names):
                        errs.append("roofline: %r is not the head and tail of a name of %r" % (s, full[:60]))
    for e in errs[:20]:
        print("%s: %s" % (argv[1], e))
    if not errs:
        print("%s: ok: %s" % (argv[1], " ".join(k or "?" for k in kinds)))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
