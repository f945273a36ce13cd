# The report's drawing at real size, legible at the default zoom: on the GPT-2, Llama, ResNet
# and MLP samples the drawing the page shows first has at most 60 boxes (the real models), its
# box labels render at 11 px or more when the page fits the drawing to its area (the size is
# computed from the SVG's viewBox and the width the page's CSS gives the drawing area, and the
# script's fit: scale = min(area / viewBox width, 1.4)), every label elided with "…" has a
# hover title (the SVG's xlink:title) with the full kernel name, and graph-all.svg, linked from
# the page, draws every op of the step.
. "$(dirname "$0")/lib.sh"
S=$top/samples/traces
cat >"$tmp/legible.py" <<'EOF'
import html, json, re, sys

d, what, most = sys.argv[1], sys.argv[2], int(sys.argv[3])
page = open(d + "/report.html", encoding="utf-8").read()
summary = json.load(open(d + "/summary.json"))
nodes = {n["id"]: n for n in summary["nodes"]}
data = json.loads(re.search(r'<script type="application/json" id="aicprof-data">(.*?)</script>',
                            page, re.S).group(1))

# the drawing the page shows first: the first view button's, else the only drawing
first = re.search(r'data-view="([^"]+)"', page)
box = first.group(1) if first else re.search(r'class="graphbox" id="([^"]+)"', page).group(1)
svg = re.search(r'id="%s"[^>]*>(<svg.*?</svg>)' % re.escape(box), page, re.S).group(1)
groups = re.findall(r'<g id="node\d+" class="node">\s*<title>([^<]*)</title>(.*?)</g>\s*(?=<!--|<g|</g>)',
                    svg, re.S)


def px(css, rule, prop):
    m = re.search(r'(?:^|[}\n])%s\{[^}]*?%s:([\d.]+)px' % (re.escape(rule), re.escape(prop)), css)
    return float(m.group(1))


def area_width():
    """The drawing area's width on a wide screen, from the page's CSS: main's max-width less
    its padding, less the aside's column and the gap, less the box's borders."""
    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    main_max = px(css, "main", "max-width")
    pad = float(re.search(r"main\{[^}]*padding:[\d.]+px ([\d.]+)px", css).group(1))
    cols = re.search(r"\.graphwrap\{[^}]*grid-template-columns:1fr ([\d.]+)px;gap:([\d.]+)px", css)
    border = float(re.search(r"\.graphbox\{[^}]*border:([\d.]+)px", css).group(1))
    return main_max - 2 * pad - float(cols.group(1)) - float(cols.group(2)) - 2 * border


def check(name, ok, info=""):
    print(("ok" if ok else "not ok") + " - %s: %s%s" % (what, name, (" (" + info + ")") if info else ""))


vb = [float(x) for x in re.search(r'viewBox="([^"]+)"', svg).group(1).split()]
scale = min(area_width() / vb[2], 1.4)
check("the default drawing has boxes, at most %d" % most, 0 < len(groups) <= most,
      "%d boxes" % len(groups))
sizes = [float(s) for _, body in groups for s in re.findall(r'<text[^>]*font-size="([\d.]+)"', body)]
low = min(sizes) * scale if sizes else 0
check("its box labels render at 11 px or more at the default fit", sizes and low >= 11,
      "%.1f px: %.0f pt at scale %.3f (drawing area %.0f px, viewBox %.0f wide)"
      % (low, min(sizes) if sizes else 0, scale, area_width(), vb[2]))

bad = []
elided = 0
for title, body in groups:
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", body)]
    if not any("…" in t for t in texts):
        continue
    elided += 1
    hover = re.search(r'xlink:title="([^"]*)"', body)
    hover = html.unescape(hover.group(1)) if hover else ""
    ids = [int(title[1:])] if title.startswith("n") else data["groups"].get(title, [])
    # the label's kernel name shows a head of one member's name, and the title has its full name
    full = [nodes[i].get("full_name") or nodes[i]["name"] for i in ids if i in nodes]
    shown = [t.split("  ", 1)[-1].split(" +")[0] for t in texts if "…" in t]
    heads = [s.split("…")[0] for s in shown]
    fits = any(f in hover and any(nodes[i]["name"].startswith(h) for h in heads) for i, f in
               zip([i for i in ids if i in nodes], full))
    if not fits:
        bad.append("%s: %s" % (title, shown[:1]))
check("every elided label has a hover title with the full name", not bad,
      "%d elided, %d without: %s" % (elided, len(bad), "; ".join(bad[:3])))

link = re.search(r'<a href="graph-all.svg">all (\d+) ops</a>', page)
check("the page links the expanded drawing (all N ops)", link and int(link.group(1)) == len(nodes),
      link.group(0) if link else "no link")
try:
    every = open(d + "/graph-all.svg", encoding="utf-8").read()
except OSError:
    every = ""
drawn = set(int(t) for t in re.findall(r'<title>n(\d+)</title>', every))
check("graph-all.svg draws every op of the step, one box each", drawn == set(nodes),
      "%d of %d" % (len(drawn & set(nodes)), len(nodes)))
EOF
for t in gpt2_train:60 llama_train:60 resnet_train:60 mlp_train:1000; do
	name=${t%%:*} most=${t##*:}
	"$B/aicprof" analyze -q "$S/$name.aicp.jsonl" -o "$tmp/$name" >/dev/null 2>"$tmp/$name.err"
	check "$name: analyze and report exit 0 with nothing on stderr" test $? = 0 -a ! -s "$tmp/$name.err"
	python3 "$tmp/legible.py" "$tmp/$name" "$name" "$most" || nok "$name: the checks ran"
done
