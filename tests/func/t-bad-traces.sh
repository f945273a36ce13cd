# Malformed traces, table-driven: every class of bad input gets exit 1 and one error
# "FILE:LINE: what" naming the line at fault, or, where the record can be skipped or repaired
# safely, exit 0 and a warning "FILE:LINE: what" (docs/trace-format.md, "Reading a trace", says
# which). At the end every trace goes through the analysis built with ASan+UBSan
# (build/tests/replay-analyze, the fuzz target's replayer, one process for all): no sanitizer
# report, ever.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
R=$B/tests/replay-analyze

# a small valid trace, one record a variable (line numbers: H=1 S=2 T=3 M=4 L=5 K=6 F=7 E=8)
H='{"t":"header","format":1,"tool":"aicprof 0.1.0","pid":7,"argv":["./a.out"],"cwd":"/src","devices":[{"id":0,"name":"NVIDIA H200","cc":"9.0","sm_count":132,"peak_bw_gbs":4022.8}]}'
S='{"t":"str","id":1,"s":"_Z6kernelPf"}'
T='{"t":"site","id":1,"frames":[{"file":"train.py","line":3,"func":"f","user":true}]}'
M='{"t":"alloc","seq":1,"ts":1764430000000001000,"tid":1,"id":0,"ptr":"0x7f0000000000","size":4096,"api":"cuMemAlloc"}'
L='{"t":"launch","seq":2,"ts":1764430000000002000,"tid":1,"c":1,"api":"cuLaunchKernel","fn":1,"grid":[1,1,1],"block":[32,1,1],"stream":"0x0","site":1,"args":[{"i":0,"o":0,"n":8,"p":[[0,"0x7f0000000000",0,0]]}]}'
K='{"t":"kernel","c":1,"name":1,"dev":0,"stream":7,"start":1764430000000005000,"end":1764430000000006000,"grid":[1,1,1],"block":[32,1,1]}'
F='{"t":"free","seq":3,"ts":1764430000000007000,"tid":1,"id":0,"ptr":"0x7f0000000000","api":"cuMemFree"}'
E='{"t":"end","ts":1764430000000008000,"reason":"exit","records":8,"kernels":1}'
CP='{"t":"memcpy","seq":2,"ts":1764430000000002000,"tid":1,"c":5,"api":"cuMemcpyAsync","dst":"0x7f0000000000","src":"0x1000","bytes":64,"stream":"0x0","dst_alloc":[0,0]}'
CA='{"t":"copy","c":5,"kind":"HtoD","bytes":64,"dev":0,"stream":7,"start":1764430000000005000,"end":1764430000000006000}'
SA='{"t":"set","c":5,"bytes":64,"value":0,"dev":0,"stream":7,"start":1764430000000005000,"end":1764430000000006000}'
RS='{"t":"range_start","seq":2,"ts":1764430000000002000,"id":5,"text":"step"}'
RE='{"t":"range_end","seq":3,"ts":1764430000000003000,"id":5}'
PU='{"t":"push","seq":2,"ts":1764430000000002000,"tid":1,"text":"step 0","domain":""}'

# sub RECORD SED: the record with one sed substitution applied (which must change it)
sub() {
	out=$(printf '%s\n' "$1" | sed "$2")
	[ "$out" != "$1" ] || echo "t-bad-traces: substitution '$2' changed nothing" >&2
	printf '%s' "$out"
}
n=0
mkdir "$tmp/t"
# analyse NAME: analyses $tmp/t/NAME.aicp.jsonl into $tmp/out-NAME; rc, stderr in $tmp/NAME.err
analyse() {
	(cd "$tmp/t" && "$A" analyze --no-report "$1.aicp.jsonl" -o "../out-$1" >/dev/null 2>"../$1.err")
	rc=$?
}
# run NAME RECORD...: writes NAME.aicp.jsonl (records one a line) and analyses it
run() {
	name=$1; shift
	f=$tmp/t/$name.aicp.jsonl
	: >"$f"
	for r in "$@"; do printf '%s\n' "$r" >>"$f"; done
	analyse "$name"
}
# bad NAME LINE REGEX RECORD...: exit 1, "NAME.aicp.jsonl:LINE: " and REGEX on stderr, no summary
bad() {
	name=$1 line=$2 re=$3; shift 3
	run "$name" "$@"
	check "$name: exit 1" test "$rc" = 1
	check "$name: error at line $line: $re" grep -qE "^aicprof: error: $name\.aicp\.jsonl:$line: .*$re" "$tmp/$name.err"
	check "$name: no summary written" test ! -e "$tmp/out-$name/summary.json"
}
# warn NAME LINE REGEX RECORD...: exit 0, a warning at LINE matching REGEX, a summary
warn() {
	name=$1 line=$2 re=$3; shift 3
	run "$name" "$@"
	check "$name: exit 0" test "$rc" = 0
	check "$name: warning at line $line: $re" grep -qE "^aicprof: warning: $name\.aicp\.jsonl:$line: .*$re" "$tmp/$name.err"
	check "$name: summary written" test -s "$tmp/out-$name/summary.json"
}

run valid "$H" "$S" "$T" "$M" "$L" "$K" "$F" "$E"
check "valid: the base trace is accepted (exit 0, no message)" sh -c "[ $rc = 0 ] && ! grep -q 'error\|warning' '$tmp/valid.err'"

# --- not JSON, not an object, no type
bad not-json 3 'not valid JSON' "$H" "$S" 'this is not json' "$M" "$E"
bad not-object 2 'not a JSON object' "$H" '[1,2,3]' "$E"
bad json-string 2 'not a JSON object' "$H" '"t"' "$E"
bad nan-literal 6 'not valid JSON' "$H" "$S" "$T" "$M" "$L" "$(sub "$K" 's/"start":[0-9]*/"start":NaN/')" "$E"
bad infinity-literal 4 'not valid JSON' "$H" "$S" "$T" "$(sub "$M" 's/"size":4096/"size":Infinity/')" "$E"
bad trailing-garbage 2 "characters after the record's JSON object" "$H" "$S x" "$E"
bad two-objects 2 "characters after the record's JSON object" "$H" "$S$S" "$E"
{ printf '%s\n' "$H"; printf '{"t":"str","id":1,"s":"a\000b"}\n'; printf '%s\n' "$E"; } >"$tmp/t/nul-byte.aicp.jsonl"
analyse nul-byte
check "nul-byte: exit 1" test "$rc" = 1
check "nul-byte: error at line 2: NUL byte" grep -q "nul-byte.aicp.jsonl:2: NUL byte" "$tmp/nul-byte.err"
bad no-type 2 "no type 't'" "$H" '{"id":1,"s":"x"}' "$E"
bad type-number 2 "no type 't'" "$H" '{"t":5,"id":1}' "$E"
bad empty-object 2 "no type 't'" "$H" '{}' "$E"
deep=$(python3 -c "print('{\"t\":\"str\",\"id\":1,\"s\":\"x\",\"deep\":' + '['*100000 + ']'*100000 + '}')")
bad deep-nesting 2 'not valid JSON' "$H" "$deep" "$E"

# --- header
bad header-missing 1 'first record is not a header' "$S" "$E"
bad header-no-format 1 "header record has no 'format'" "$(sub "$H" 's/"format":1,//')" "$E"
bad header-format-string 1 "'format' must be a number, not a string" "$(sub "$H" 's/"format":1/"format":"1"/')" "$E"
bad format-2 1 'trace format 2 is newer than this aicprof reads \(1\)' "$(sub "$H" 's/"format":1/"format":2/')" "$E"
bad format-huge 1 "'format' is out of range" "$(sub "$H" 's/"format":1/"format":1e300/')" "$E"
bad header-twice 3 'second header record' "$H" "$S" "$H" "$E"
bad empty-trace 1 'trace has no header' ""
warn header-huge-device 8 'cut' "$(sub "$H" 's/"sm_count":132,"peak_bw_gbs":4022.8/"sm_count":1e300,"peak_bw_gbs":1e308,"name":[1]/')" "$S" "$T" "$M" "$L" "$K" "$F" "$(printf '%s' "$E" | head -c 20)"

# --- wrong type and missing required fields, every record type
for spec in \
	"launch 5 seq L" "launch 5 c L" "launch 5 fn L" \
	"kernel 6 c K" "kernel 6 start K" "kernel 6 end K" "kernel 6 name K" \
	"memcpy 5 seq CP" "memcpy 5 c CP" "copy 6 c CA" "copy 6 start CA" "copy 6 end CA" \
	"set 6 start SA" "alloc 4 seq M" "alloc 4 size M" "alloc 4 id M" "free 7 seq F" "free 7 id F" \
	"str 2 id S" "site 3 id T" "push 5 seq PU" "range_start 5 id RS" "range_end 6 id RE"; do
	set -- $spec
	what=$1 line=$2 key=$3 var=$4
	eval "rec=\$$var"
	# as a string, as an array, and absent
	strrec=$(sub "$rec" "s/\"$key\":[^,}]*/\"$key\":\"x\"/")
	arrrec=$(sub "$rec" "s/\"$key\":[^,}]*/\"$key\":[1]/")
	norec=$(sub "$rec" "s/,\"$key\":[^,}]*//; s/\"$key\":[^,}]*,//")
	case $what in
	copy | set) pre="$H $S $T $M $CP"; pre1=$CP ;;
	range_end) pre1=$RS ;;
	*) pre1= ;;
	esac
	for form in string array absent; do
		case $form in
		string) r=$strrec; re="'$key' must be a number, not a string" ;;
		array) r=$arrrec; re="'$key' must be a number, not an array" ;;
		absent) r=$norec; re="$what record has no '$key'" ;;
		esac
		case $line in
		2) bad "$what-$key-$form" 2 "$re" "$H" "$r" "$E" ;;
		3) bad "$what-$key-$form" 3 "$re" "$H" "$S" "$r" "$E" ;;
		4) bad "$what-$key-$form" 4 "$re" "$H" "$S" "$T" "$r" "$E" ;;
		5) bad "$what-$key-$form" 5 "$re" "$H" "$S" "$T" "$M" "$r" "$E" ;;
		6) bad "$what-$key-$form" 6 "$re" "$H" "$S" "$T" "$M" "${pre1:-$L}" "$r" "$E" ;;
		7) bad "$what-$key-$form" 7 "$re" "$H" "$S" "$T" "$M" "$L" "$K" "$r" "$E" ;;
		esac
	done
done
bad str-s-number 2 "str record: 's' must be a string" "$H" '{"t":"str","id":1,"s":5}' "$E"
bad pointer-not-array 5 'pointer entry is not an array' "$H" "$S" "$T" "$M" "$(sub "$L" 's/"p":\[\[0,"0x7f0000000000",0,0\]\]/"p":[5]/')" "$E"
bad pointer-no-alloc 5 'pointer entry has no allocation id' "$H" "$S" "$T" "$M" "$(sub "$L" 's/,0,0\]\]/,"x",0]]/')" "$E"

# --- duplicated ids, unknown ids
bad dup-str 3 'str id 1 is defined twice' "$H" "$S" '{"t":"str","id":1,"s":"_Z5otherPf"}' "$E"
bad dup-site 4 'site id 1 is defined twice' "$H" "$S" "$T" "$T" "$E"
warn unknown-str 4 'no record defines' "$H" "$T" "$M" "$L" "$K" "$F" "$E"
warn unknown-site 4 'no record defines' "$H" "$S" "$M" "$L" "$K" "$F" "$E"
# accepted as they are (docs/trace-format.md): a pointer into an unknown allocation, a free of one,
# an allocation id seen twice, a correlation id seen twice, an activity record with no API record
run unknown-alloc "$H" "$S" "$T" "$(sub "$L" 's/,0,0\]\]/,77,0]]/')" "$K" '{"t":"free","seq":3,"id":99}' "$E"
check "unknown-alloc: accepted (exit 0)" test "$rc" = 0
run dup-alloc "$H" "$S" "$T" "$M" "$M" "$L" "$K" "$F" "$E"
check "dup-alloc: accepted (exit 0)" test "$rc" = 0
run dup-c "$H" "$S" "$T" "$M" "$L" "$L" "$K" "$F" "$E"
check "dup-c: accepted (exit 0)" test "$rc" = 0
run orphan-activity "$H" "$S" "$K" "$E"
check "orphan-activity: exit 0" test "$rc" = 0
check "orphan-activity: warns that activity records have no API record" grep -q 'have no API record' "$tmp/orphan-activity.err"

# --- ids and numbers out of range, negative sizes
bad str-id-huge 2 'str id 99999999999 out of range' "$H" '{"t":"str","id":99999999999,"s":"x"}' "$E"
bad str-id-big 2 'str id 50000000 out of range' "$H" '{"t":"str","id":50000000,"s":"x"}' "$E"
bad str-id-negative 2 'str id -1 out of range' "$H" '{"t":"str","id":-1,"s":"x"}' "$E"
bad launch-fn-huge 5 'str id .* out of range' "$H" "$S" "$T" "$M" "$(sub "$L" 's/"fn":1/"fn":1e18/')" "$E"
bad alloc-size-negative 4 "'size' is out of range \(-4096\)" "$H" "$S" "$T" "$(sub "$M" 's/"size":4096/"size":-4096/')" "$E"
bad alloc-size-huge 4 "'size' is out of range" "$H" "$S" "$T" "$(sub "$M" 's/"size":4096/"size":1e300/')" "$E"
bad kernel-start-inf 6 "'start' is out of range \(inf\)" "$H" "$S" "$T" "$M" "$L" "$(sub "$K" 's/"start":[0-9]*/"start":1e999/')" "$E"
bad launch-c-huge 5 "'c' is out of range" "$H" "$S" "$T" "$M" "$(sub "$L" 's/"c":1/"c":-1e300/')" "$E"
bad ends-before-start 6 'ends before it starts' "$H" "$S" "$T" "$M" "$L" "$(sub "$K" 's/"end":1764430000000006000/"end":1764430000000004000/')" "$E"
# numbers nothing needs exactly are clamped: huge or negative pointers, offsets, lines, grids, bytes
run huge-fields "$H" "$S" "$(sub "$T" 's/"line":3/"line":1e300/')" "$M" \
	"$(sub "$L" 's/"grid":\[1,1,1\]/"grid":[1e300,-5,2147483647]/; s/,0,0\]\]/,1e300,-1e300]]/')" "$K" \
	"$(sub "$CP" 's/"bytes":64/"bytes":-64/; s/"dst_alloc":\[0,0\]/"dst_alloc":[-1e300,1e300],"src_alloc":[1e300,-1]/')" \
	"$(sub "$CA" 's/"bytes":64/"bytes":1e300/; s/"stream":7/"stream":1e18/')" "$F" "$E"
check "huge-fields: accepted (exit 0)" test "$rc" = 0
# out of order: seq going backwards and an API record after its activity record are normal
run out-of-order "$H" "$S" "$T" "$M" "$K" "$(sub "$L" 's/"seq":2/"seq":-7/')" "$F" "$E"
check "out-of-order: accepted (exit 0)" test "$rc" = 0

# --- long lines, text
big=$(head -c 10000000 /dev/zero | tr '\0' a)
run ten-mb-string "$H" "{\"t\":\"str\",\"id\":1,\"s\":\"_Z6kernelPf$big\"}" "$T" "$M" "$L" "$K" "$F" "$E"
check "ten-mb-string: a 10 MB line is read (exit 0)" test "$rc" = 0
bad ten-mb-garbage 2 'not valid JSON' "$H" "{$big" "$E"
warn invalid-utf8 2 "invalid UTF-8 replaced by '\?'" "$H" "$(printf '{"t":"str","id":1,"s":"_Z6k\377\376ernel\300\257Pf"}')" "$T" "$M" "$L" "$K" "$F" "$E"
check "invalid-utf8: summary.json is valid UTF-8 JSON" python3 -c "import json,sys; json.load(open(sys.argv[1], encoding='utf-8'))" "$tmp/out-invalid-utf8/summary.json"
bad bad-surrogate 2 'not valid JSON' "$H" '{"t":"str","id":1,"s":"\ud800x"}' "$E"

# --- the cut: a last line without '\n' or that does not parse is a warning, the rest analysed
warn cut-mid-record 8 'cut short' "$H" "$S" "$T" "$M" "$L" "$K" "$F" '{"t":"end","ts":17644'
{ printf '%s\n' "$H" "$S" "$T" "$M" "$L" "$K" "$F"; printf '%s' "$E"; } >"$tmp/t/cut-no-newline.aicp.jsonl"
analyse cut-no-newline
check "cut-no-newline: exit 0" test "$rc" = 0
check "cut-no-newline: warning at line 8: no newline" grep -qE "^aicprof: warning: cut-no-newline\.aicp\.jsonl:8: .*no newline" "$tmp/cut-no-newline.err"
bad cut-not-last 7 'not valid JSON' "$H" "$S" "$T" "$M" "$L" "$K" '{"t":"fr' "$E"

# a killed process on some file systems leaves NUL bytes after the last whole line: a cut too
{ printf '%s\n' "$H" "$S" "$T" "$M" "$L" "$K" "$F"; head -c 4096 /dev/zero; } >"$tmp/t/cut-nul-tail.aicp.jsonl"
analyse cut-nul-tail
check "cut-nul-tail: exit 0" test "$rc" = 0
check "cut-nul-tail: warning at line 8: cut short" grep -qE "^aicprof: warning: cut-nul-tail\.aicp\.jsonl:8: .*cut short" "$tmp/cut-nul-tail.err"

# every trace above through the sanitizer build, in one process
(cd "$tmp/t" && TMPDIR=$tmp "$R" . >"$tmp/replay.out" 2>"$tmp/replay.err"); src=$?
check "all $(ls "$tmp/t" | wc -l) traces: no crash or sanitizer report (exit $src)" \
	sh -c "[ $src = 0 ] && ! grep -qE 'runtime error|Sanitizer' '$tmp/replay.err'"
[ "$src" = 0 ] || { tail -n 2 "$tmp/replay.out"; grep -m3 -A5 -E 'runtime error|Sanitizer' "$tmp/replay.err"; }
