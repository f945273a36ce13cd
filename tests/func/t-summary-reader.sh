# summary.json that is not a summary: report, fuse and compare refuse it by name, exit non-zero,
# and write nothing (lib/summary.c is their one reader).
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
good=$tmp/good
"$A" analyze --no-report -q -o "$good" "$top/samples/traces/chain.aicp.jsonl" >/dev/null 2>&1
"$A" report "$good" >/dev/null 2>&1; rc=$?
check "a real summary is read by report" test "$rc" = 0
"$A" compare "$good" "$good" >"$tmp/out" 2>"$tmp/err"
check "a real summary is read by compare" grep -q "step median" "$tmp/out"

# name | file content | message expected after "'DIR/summary.json': "
case_dir() { mkdir -p "$tmp/$1"; printf '%s\n' "$2" >"$tmp/$1/summary.json"; }
case_dir array '[]'
case_dir newer '{"format": 99}'
case_dir noformat '{"nodes": []}'
case_dir huge-id '{"format": 1, "nodes": [{"id": 1e300}]}'
case_dir neg-count '{"format": 1, "steps": {"count": -3}}'
case_dir wrong-type '{"format": 1, "candidates": {}}'
case_dir missing-key '{"format": 1, "candidates": [{"id": 0}]}'
mkdir -p "$tmp/trace" && cp "$top/samples/traces/chain.aicp.jsonl" "$tmp/trace/summary.json"
mkdir -p "$tmp/header" && head -1 "$top/samples/traces/chain.aicp.jsonl" >"$tmp/header/summary.json"
msg_array="not a summary: its top level is an array"
msg_newer="summary format 99 is newer than this aicprof (1)"
msg_noformat="not a summary: no \"format\""
msg_huge_id="nodes[0].id must be an integer in [0, 2147483647], not 1e+300"
msg_neg_count="steps.count must be an integer in [0, 1000000000000000], not -3"
msg_wrong_type="candidates must be an array, not an object"
msg_missing_key="required key candidates[0].kind is missing"
msg_trace="not a summary but a trace"
msg_header="not a summary but a trace record"
for c in array newer noformat huge-id neg-count wrong-type missing-key trace header; do
	eval "msg=\$msg_$(echo $c | tr - _)"
	sd=$tmp/$c
	for cmd in report fuse compare; do
		case $cmd in
		report) "$A" report "$sd" >/dev/null 2>"$tmp/err" ;;
		fuse) "$A" fuse "$sd" -o "$tmp/fz-$c" >/dev/null 2>"$tmp/err" ;;
		compare) "$A" compare "$sd" "$good" >/dev/null 2>"$tmp/err" ;;
		esac
		rc=$?
		check "$cmd of '$c' exits non-zero" test "$rc" != 0
		check "$cmd of '$c' names the file: $msg" grep -qF -- "'$sd/summary.json': $msg" "$tmp/err"
	done
	check "report of '$c' writes nothing" test ! -e "$sd/report.html"
	check "fuse of '$c' writes nothing" test ! -e "$tmp/fz-$c"
done
