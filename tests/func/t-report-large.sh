# aicprof report at real size: the layout budget (AICPROF_LAYOUT_S) bounds every drawing, a
# drawing left out costs exactly one warning line and never the report; repeats are folded in
# the drawing (resnet_train's SVG draws far fewer kernels than its graph has) while graph.dot
# keeps them all; a 20k-node ladder (Graphviz's dot crashed on a 20k chain) and the real
# traces report within 30 s.
. "$(dirname "$0")/lib.sh"
fx=$top/tests/report
# run NAME DIR [ENV...]: times "aicprof report DIR" into $tmp/NAME.ms, stderr in $tmp/NAME.err
run() {
	name=$1 dir=$2
	shift 2
	start=$(date +%s%N)
	env "$@" "$B/aicprof" report "$dir" >/dev/null 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
	echo $((($(date +%s%N) - start) / 1000000)) >"$tmp/$name.ms"
	echo "# $name: $(cat "$tmp/$name.ms") ms"
}
nodes_in() { grep -c 'class="node"' "$1"; }

# A 20000-node ladder: nothing collapses, nothing folds; too large to lay out whole.
mkdir -p "$tmp/ladder"
python3 "$fx/gen-huge.py" chain 20000 "$tmp/ladder/summary.json"
run ladder "$tmp/ladder"
check "the 20k-node ladder reports (exit 0)" test "$(cat "$tmp/ladder.rc")" = 0
check "the 20k-node ladder reports in under 30 s" test "$(cat "$tmp/ladder.ms")" -lt 30000
check "the ladder's report says in one line that the whole graph is not drawn" \
	test "$(grep -c 'not drawn' "$tmp/ladder.err")" = 1 -a "$(wc -l <"$tmp/ladder.err")" = 1
check "the ladder still gets a drawing (the top view) in graph.svg" \
	test "$(nodes_in "$tmp/ladder/graph.svg")" -gt 0
check "the ladder's graph.dot has all 20000 kernels" \
	test "$(grep -cE '^[[:space:]]+n[0-9]+[[:space:]]+\[' "$tmp/ladder/graph.dot")" = 20000
check "the ladder's page has the drawing" grep -q 'id="g-top"><svg' "$tmp/ladder/report.html"
# the page lists the 3000 longest kernels, not all 20000, and says so; summary.json has them
rows=$(python3 -c "import re,sys; h=open(sys.argv[1]).read(); t=h[h.index('id=\"t-nodes\"'):]; t=t[:t.index('</table>')]; print(t.count('<tr>') - 1)" "$tmp/ladder/report.html")
check "the ladder's kernel table holds the 3000 longest of 20000 ($rows rows), and says so" \
	sh -c "test '$rows' = 3000 && grep -q 'The 3000 longest kernels of 20000 are listed' '$tmp/ladder/report.html'"

# 300 copies of one 24-kernel layer: folded to one box of 24 kernels.
mkdir -p "$tmp/layers"
python3 "$fx/gen-huge.py" layers 300 "$tmp/layers/summary.json"
run layers "$tmp/layers"
check "300 repeated layers report with nothing on stderr" \
	test "$(cat "$tmp/layers.rc")" = 0 -a ! -s "$tmp/layers.err"
check "the repeated layer is drawn once, boxed x300" grep -q '×300 ' "$tmp/layers/graph.svg"
check "the 7200 kernels are drawn as 24 boxes" test "$(nodes_in "$tmp/layers/graph.svg")" = 24

# The budget: a layout past AICPROF_LAYOUT_S is killed; one line, a report, no hang.
run budget "$tmp/layers" AICPROF_LAYOUT_S=0.001
check "a layout past AICPROF_LAYOUT_S=0.001 still reports (exit 0)" test "$(cat "$tmp/budget.rc")" = 0
check "it says so in one line naming AICPROF_LAYOUT_S" \
	test "$(wc -l <"$tmp/budget.err")" = 1 -a "$(grep -c 'longer than 0.001 s (AICPROF_LAYOUT_S)' "$tmp/budget.err")" = 1
check "the page says the graph could not be drawn" grep -q 'could not be drawn' "$tmp/layers/report.html"
check "and it took well under 5 s" test "$(cat "$tmp/budget.ms")" -lt 5000

# The real traces: analyze plus report under 30 s each, with a drawing.
for t in resnet_train llama_train gpt2_train; do
	start=$(date +%s%N)
	"$B/aicprof" analyze -q "$top/samples/traces/$t.aicp.jsonl" -o "$tmp/$t" >/dev/null 2>&1
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "# $t: analyze and report in $ms ms"
	check "$t: analyze and report succeed" test "$rc" = 0
	check "$t: under 30 s" test "$ms" -lt 30000
	check "$t: with a drawing" test "$(nodes_in "$tmp/$t/graph.svg")" -gt 0
done
graph=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['nodes']))" "$tmp/resnet_train/summary.json")
# graph.svg: the folded whole step when it could be laid out in time, else the top view
drawn=$(nodes_in "$tmp/resnet_train/graph.svg")
echo "# resnet_train: $graph kernels in the graph, $drawn drawn"
# one step of ResNet-18 is 355 kernels (8 steps found without NVTX); its blocks differ in their
# kernels (shapes, conv algorithms), so the fold by name draws most of them
check "resnet_train: one step's graph (at most 400 kernels: $graph), drawn with fewer boxes ($drawn)" \
	test "$graph" -le 400 -a "$drawn" -gt 0 -a "$drawn" -lt "$graph"
check "gpt2_train's six layers are folded into one x6 box" grep -q '×6 ' "$tmp/gpt2_train/report.html"
