# aicprof report: the four files from the fixtures, graph.dot valid for Graphviz's dot, the
# large step's collapse and fold of repeated layers, and the errors for a bad or missing summary.
. "$(dirname "$0")/lib.sh"
fx=$top/tests/report
"$B/aicprof" report 2>"$tmp/err"; rc=$?
check "report without a directory exits 129" test "$rc" = 129
check "--help lists report" sh -c "'$B/aicprof' --help | grep -q 'report DIR'"

mkdir -p "$tmp/small" && cp "$fx/small.json" "$tmp/small/summary.json" && cp "$fx/train.py" "$tmp/small/"
out=$("$B/aicprof" report "$tmp/small"); rc=$?
check "report on the small fixture succeeds" test "$rc" = 0
check "report prints the path of report.html" test "$out" = "$tmp/small/report.html"
for f in report.html graph.dot graph.svg trace.perfetto.json; do
	check "report writes $f" test -s "$tmp/small/$f"
done
check "no temporary file is left behind" sh -c "! ls '$tmp/small' | grep -q '\.tmp\.'"
dot -Tsvg "$tmp/small/graph.dot" >"$tmp/dot.svg" 2>"$tmp/dot.err"; rc=$?
check "dot -Tsvg parses graph.dot" test "$rc" = 0 -a ! -s "$tmp/dot.err"
check "dot draws the candidates as clusters" grep -q 'class="cluster"' "$tmp/dot.svg"
check "graph.dot names the clusters cluster_N" grep -q 'subgraph cluster_1' "$tmp/small/graph.dot"
check "the page shows the user's source line" grep -q 'h = F.gelu(self.fc1(x))' "$tmp/small/report.html"
check "the page fetches nothing: no http(s) URL in a src or href" \
	sh -c "! grep -Eq '(src|href)=\"(https?:)?//' '$tmp/small/report.html'"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['traceEvents'] and all(e['ph'] in 'XM' for e in d['traceEvents'])" \
	"$tmp/small/trace.perfetto.json"
check "trace.perfetto.json is JSON with X and M events (python's parser)" test "$?" = 0

mkdir -p "$tmp/large"
if python3 "$fx/gen-large.py" "$tmp/large/summary.json"; then
	start=$(date +%s%N)
	"$B/aicprof" report "$tmp/large" >/dev/null; rc=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['nodes']))" "$tmp/large/summary.json")
	echo "# large fixture ($n nodes) reported in $ms ms"
	check "report on the large fixture succeeds" test "$rc" = 0
	check "the large step's small kernels are collapsed" grep -q 'kernels under 1% of the step collapsed' "$tmp/large/report.html"
	# its 12 identical layers fold into one box, so few enough vertices remain for no top view
	check "the large step's 12 layers are drawn once, boxed x12" grep -q '×12 &#160;(34 kernels each' "$tmp/large/graph.svg"
	check "the folded large step needs no top-N view" sh -c "! grep -q 'data-view=\"g-top\"' '$tmp/large/report.html'"
	check "the large graph.dot keeps the 110 boxes of the unfolded graph" \
		test "$(grep -cE '^[[:space:]]+[ng][0-9]+[[:space:]]+\[' "$tmp/large/graph.dot")" = 110
	check "the large graph.dot parses" sh -c "dot -Tsvg '$tmp/large/graph.dot' >/dev/null"
	check "the large report takes under 10 s" test "$ms" -lt 10000
else
	nok "tests/report/gen-large.py runs (python3 needed)"
fi

mkdir -p "$tmp/bad" && printf '{\n "format": 1,\n "nodes": [,]\n}\n' >"$tmp/bad/summary.json"
"$B/aicprof" report "$tmp/bad" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "a summary that does not parse fails" test "$rc" = 1
check "the error names the file and line" grep -q "summary.json:3: not valid JSON" "$tmp/err"
check "nothing is written for a bad summary" test ! -e "$tmp/bad/report.html"
"$B/aicprof" report "$tmp/none" 2>"$tmp/err"; rc=$?
check "a missing summary fails naming it" sh -c "test $rc = 1 && grep -q \"cannot open '$tmp/none/summary.json'\" '$tmp/err'"
