# Hostile numbers and strings in a trace (analyzer/parse.c, docs/trace-format.md "Reading a
# trace"): (a) times outside 0..2^62 ns, or an end before its start, are an error naming the file
# and line, and times inside the range never overflow a difference (a step of 2^62 ns has a
# positive median); (b) a header `format` that is not an integer this aicprof reads (1.5, 0, -1,
# 99) is refused, naming it; (c) strings from the trace in messages are escaped (ESC, OSC's BEL,
# CR shown as \x1b, \x07, \x0d): no escape byte ever reaches stderr; (d) a strided loop's closure
# bytes ("x") that are not hex, too long, or shaped like an impossible offset calculator are
# ignored, and the trace is read.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof

H='{"t":"header","format":1,"tool":"aicprof 0.1.0","pid":7,"argv":["./a.out"],"cwd":"/src","devices":[{"id":0,"name":"NVIDIA H200","cc":"9.0","sm_count":132,"peak_bw_gbs":4022.8}]}'
S='{"t":"str","id":1,"s":"_Z6kernelPf"}'
M='{"t":"alloc","seq":1,"ts":1764430000000001000,"tid":1,"id":0,"ptr":"0x7f0000000000","size":4096,"api":"cuMemAlloc"}'
L='{"t":"launch","seq":2,"ts":1764430000000002000,"tid":1,"c":1,"api":"cuLaunchKernel","fn":1,"grid":[1,1,1],"block":[32,1,1],"stream":"0x0","args":[{"i":0,"o":0,"n":8,"p":[[0,"0x7f0000000000",0,0]]}]}'
K='{"t":"kernel","c":1,"name":1,"dev":0,"stream":7,"start":1764430000000005000,"end":1764430000000006000,"grid":[1,1,1],"block":[32,1,1]}'
E='{"t":"end","ts":1764430000000008000,"reason":"exit","records":6,"kernels":1}'

# sub RECORD SED: the record with one sed substitution applied (which must change it)
sub() {
	out=$(printf '%s\n' "$1" | sed "$2")
	[ "$out" != "$1" ] || echo "t-hostile-input: substitution '$2' changed nothing" >&2
	printf '%s' "$out"
}
# run NAME RECORD...: writes $tmp/NAME.aicp.jsonl and analyses it; rc, stderr in $tmp/NAME.err
run() {
	name=$1; shift
	: >"$tmp/$name.aicp.jsonl"
	for r in "$@"; do printf '%s\n' "$r" >>"$tmp/$name.aicp.jsonl"; done
	(cd "$tmp" && "$A" analyze --no-report "$name.aicp.jsonl" -o "out-$name" >/dev/null 2>"$name.err")
	rc=$?
}
noesc() { ! grep -qP '\x1b' "$tmp/$1.err"; }
# bad NAME LINE TEXT RECORD...: exit 1, the error "NAME.aicp.jsonl:LINE: TEXT" (fixed string),
# no summary, no escape byte on stderr
bad() {
	name=$1 line=$2 text=$3; shift 3
	run "$name" "$@"
	check "$name: exit 1 ($rc)" test "$rc" = 1
	check "$name: $text" grep -qF "aicprof: error: $name.aicp.jsonl:$line: $text" "$tmp/$name.err"
	check "$name: no summary" test ! -e "$tmp/out-$name/summary.json"
	check "$name: no escape byte on stderr" noesc "$name"
}

# --- (a) times
bad start-negative 5 "kernel record: 'start' is out of range (-5; times are 0..2^62 ns)" \
	"$H" "$S" "$M" "$L" "$(sub "$K" 's/"start":1764430000000005000/"start":-5/')" "$E"
bad end-huge 5 "kernel record: 'end' is out of range (9000000000000000000; times are 0..2^62 ns)" \
	"$H" "$S" "$M" "$L" "$(sub "$K" 's/"end":1764430000000006000/"end":9000000000000000000/')" "$E"
bad ts-huge 4 "launch record: 'ts' is out of range (-9000000000000000000; times are 0..2^62 ns)" \
	"$H" "$S" "$M" "$(sub "$L" 's/"ts":1764430000000002000/"ts":-9e18/')" "$K" "$E"
bad end-before-start 5 "kernel record ends before it starts" \
	"$H" "$S" "$M" "$L" "$(sub "$K" 's/"end":1764430000000006000/"end":1764430000000004000/')" "$E"
# the extremes of the range: one kernel from 0 to 2^62 ns; the step is 2^62 ns, not negative
run range-ends "$H" "$S" "$M" "$L" \
	"$(sub "$K" 's/"start":1764430000000005000,"end":1764430000000006000/"start":0,"end":4611686018427387904/')" "$E"
check "range-ends: exit 0 ($rc)" test "$rc" = 0
check "range-ends: the step median is 2^62 ns" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["steps"]["median_us"]
sys.exit(0 if abs(m - 4611686018427387.904) < 1e3 else 1)' "$tmp/out-range-ends/summary.json"

# --- (b) the format
for f in 1.5 0 -1 2.5; do
	bad "format-$f" 1 "trace format $f is not a version this aicprof reads (1)" \
		"$(sub "$H" "s/\"format\":1,/\"format\":$f,/")" "$E"
done
bad format-99 1 "trace format 99 is newer than this aicprof reads (1); upgrade aicprof" \
	"$(sub "$H" 's/"format":1,/"format":99,/')" "$E"
run format-1.0 "$(sub "$H" 's/"format":1,/"format":1.0,/')" "$E"
check "format-1.0: accepted ($rc)" test "$rc" = 0

# --- (c) strings from the trace in messages
bad type-escapes 1 "first record is not a header (it is '\\x1b]0;pwned\\x07\\x1b[31mred\\x0d\\x5c')" \
	'{"t":"\u001b]0;pwned\u0007\u001b[31mred\r\\"}' "$E"
check "type-escapes: the trace holds the escapes" grep -qF '\u001b]0;pwned' "$tmp/type-escapes.aicp.jsonl"
long=$(head -c 5000 /dev/zero | tr '\0' x)
bad type-long 1 "first record is not a header (it is 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...')" \
	"{\"t\":\"$long\"}" "$E"
# names with escapes elsewhere (a kernel name, an NVTX text) never reach stderr raw either
run name-escapes "$H" '{"t":"str","id":1,"s":"_Z6\u001b]8;;http://x\u0007kernelPf"}' "$M" \
	'{"t":"push","seq":3,"ts":1764430000000001500,"tid":1,"text":"\u001b[2Jstep","domain":""}' \
	"$L" "$K" '{"t":"pop","seq":4,"ts":1764430000000007000,"tid":1}' '{"t":"\u001b[31m"}' "$E"
check "name-escapes: exit 0 ($rc)" test "$rc" = 0
check "name-escapes: no escape byte on stderr" noesc name-escapes

# --- (d) a strided loop's closure bytes ("x") that are not hex, of odd length, far longer than
# the shim writes, or hex whose words look like an offset calculator with 2^31 dimensions: the
# closure is not read (analyzer/offcalc.c), and the trace is
xl() { # LAUNCH with parameter 1's "x" set to $1
	printf '%s' "{\"t\":\"launch\",\"seq\":2,\"ts\":1764430000000002000,\"tid\":1,\"c\":1,\"api\":\"cuLaunchKernel\",\"fn\":1,\"grid\":[1,1,1],\"block\":[32,1,1],\"stream\":\"0x0\",\"args\":[{\"i\":0,\"o\":0,\"n\":4,\"v\":\"0x100\"},{\"i\":1,\"o\":8,\"n\":648,\"x\":\"$1\",\"p\":[[0,\"0x7f0000000000\",0,0]]}]}"
}
big=$(head -c 200000 /dev/zero | tr '\0' a)
dims=$(printf 'ffffff7f%0592d' 0)
for x in "zz" "abc" "$big" "$dims" ""; do
	n=x-$(printf '%s' "$x" | head -c 8 | tr -c 'a-z0-9' _)-${#x}
	run "$n" "$H" "$S" "$M" "$(xl "$x")" "$K" "$E"
	check "$n: a hostile closure is ignored, the trace read (exit $rc)" test "$rc" = 0
	check "$n: nothing on stderr about it" sh -c "! grep -q 'offset\|closure' '$tmp/$n.err'"
done
