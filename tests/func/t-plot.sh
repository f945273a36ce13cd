# The report's plots stay legible (tests/tools/plot-check.py): no two text boxes overlap,
# estimated as report/plot.c does (0.6 em a character), on every sample trace and the DDP job;
# the roofline has a point per kernel with a FLOP count (GEMMs included), names the dtypes on
# each ceiling, merges ceilings of one peak ("bf16/fp16"), staggers near ones, and elides long
# kernel names in the middle with the full name in a <title>. The checker itself fails on an
# overlap.
. "$(dirname "$0")/lib.sh"
C() { python3 "$top/tests/tools/plot-check.py" "$@" >&2; }
S=$top/samples/traces
for f in "$S"/*.aicp.jsonl; do
	n=$(basename "$f" .aicp.jsonl)
	"$B/aicprof" analyze "$f" -o "$tmp/$n" >/dev/null 2>&1
	check "$n: no two labels of a plot overlap; every FLOP-counted kernel is a point" \
		C "$tmp/$n/report.html" "$tmp/$n/summary.json"
done
"$B/aicprof" analyze "$S/ddp_train.rank0.aicp.jsonl" "$S/ddp_train.rank1.aicp.jsonl" -o "$tmp/job" \
	>/dev/null 2>&1
check "the DDP job's plots: no overlap" C "$tmp/job/report.html" "$tmp/job/summary.json"
# a kernel above VRAM's roof (bytes faster than its peak: served by L2) is explained, with the
# count, exactly where there is one
for n in gpt2_train chain; do
	want=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); p=s['device'].get('peak_bw_gbs') or 0; print(sum(1 for x in s['nodes'] if p and (x.get('achieved_gbs') or 0) > p))" "$tmp/$n/summary.json")
	got=$(grep -o '<p class="mute">[0-9]* kernels\{0,1\} moved' "$tmp/$n/report.html" | grep -o '[0-9]*' | head -1)
	check "$n: $want kernels above the bandwidth roof, explained as L2's (${got:-none} said)" \
		test "${got:-0}" = "$want"
done

# crafted: ceilings a hair apart (not merged: more than 0.5%); a labelled kernel renamed long
M=$tmp/mlp_train
roof() { # name, python editing s (mlp's summary.json) -> $tmp/NAME reported
	mkdir -p "$tmp/$1"
	python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
$2
json.dump(s, open(sys.argv[2], 'w'))" "$M/summary.json" "$tmp/$1/summary.json"
	"$B/aicprof" report "$tmp/$1" >/dev/null 2>&1
}
roof near "s['device']['peak_tflops'] = {'bf16': 989.4, 'fp16': 975, 'tf32': 962, 'fp8': 950, 'fp32': 940}"
check "near ceilings: five labels, none over another" C "$tmp/near/report.html" "$tmp/near/summary.json"
check "near ceilings: each label there, each naming its dtype" python3 -c "
import re, sys
t = open(sys.argv[1]).read()
sys.exit(0 if all(re.search(r'class=\"rooflabel\"[^>]*>%s( tensor core)? ' % d, t) for d in ['bf16', 'fp16', 'tf32', 'fp8', 'fp32']) else 1)" "$tmp/near/report.html"
roof same "s['device']['peak_tflops'] = {'bf16': 989.4, 'fp16': 989.4, 'fp32': 67}"
check "one peak: one label 'bf16/fp16 tensor core 989 TFLOP/s', no separate fp16 one" sh -c \
	"grep -q '>bf16/fp16 tensor core 989 TFLOP/s<' '$tmp/same/report.html' && ! grep -q '>fp16 tensor core' '$tmp/same/report.html'"
long=$(python3 -c 'print("very_long_kernel_name_" + "x" * 120 + "_tail_end")')
roof long "
import html, re
t = open('$M/report.html').read()
full = html.unescape(re.search(r'class=\"tick ptlabel\"[^>]*><title>([^<]*)</title>', t)[1])
for n in s['nodes']:
    if n.get('full_name') == full:
        n['name'] = n['full_name'] = '$long'"
check "a long name: elided in the middle, the whole in its <title>, no overlap" sh -c \
	"python3 '$top/tests/tools/plot-check.py' '$tmp/long/report.html' '$tmp/long/summary.json' >/dev/null &&
	 grep -q '<title>$long</title>very_long_kern[^<]*…[^<]*_tail_end</text>' '$tmp/long/report.html'"
# the checker fails: a ceiling label written twice at one place
sed 's|\(<text class="rooflabel" x="[0-9.]*" y="[0-9.]*" text-anchor="end">[^<]*</text>\)|\1\1|' \
	"$M/report.html" >"$tmp/bad.html"
check "the checker refuses two labels at one place" sh -c \
	"! python3 '$top/tests/tools/plot-check.py' '$tmp/bad.html' '$M/summary.json' >/dev/null"
