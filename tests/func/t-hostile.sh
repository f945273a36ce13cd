# Traces written to attack the tools (docs/reliability.md, "untrusted input"): source paths that
# climb out of the program's tree (../../etc/x, absolute paths, a link inside the tree that leads
# out), names with markup, quotes, control characters and an escaped NUL, numbers that overflow,
# a terabyte allocation, a newer format, a 10 MB line. analyze, report and fuse run in a scratch
# tree; the checks: nothing is written outside -o (find before/after), files outside the tree are
# never read into the report nor named by the patch, every output is escaped and well-formed,
# bad numbers are errors naming the line or are clamped, memory stays small.
. "$(dirname "$0")/lib.sh"
# gname OUTDIR OPS: the fusion group of OUTDIR/summary.json whose name ends in _OPS (its number
# leads the name)
gname() { python3 -c "import json,sys; print([c['group']['name'] for c in json.load(open(sys.argv[1]))['candidates'] if c.get('group') and c['group']['name'].endswith('_'+sys.argv[2])][0])" "$1/summary.json" "$2"; }
A=$B/aicprof
R=$B/tests/replay-analyze
S=$top/samples/traces/mlp_train.aicp.jsonl
w=$tmp/w
mkdir -p "$w/proj/samples" "$w/victim/samples" "$w/etc"
cp "$top/samples/mlp_train.py" "$w/proj/samples/"
# the victims: the same program with a marker on the fused lines, outside the tree
sed 's/\(nn.functional.gelu(h)\)$/\1  # VICTIM-SECRET/' "$top/samples/mlp_train.py" >"$w/victim/samples/mlp_train.py"
cp "$w/victim/samples/mlp_train.py" "$w/etc/x.py"
ln -s ../victim/samples "$w/proj/evil"
check "the victims carry the marker" grep -q 'VICTIM-SECRET' "$w/etc/x.py"
(cd "$w" && find . -type f -exec cksum {} + | sort) >"$tmp/before.sum"

# derive NAME FILE: the MLP sample with cwd the scratch tree and the user's file renamed FILE
derive() {
	python3 - "$S" "$w/$1.aicp.jsonl" "$w/proj" "$2" <<'EOF'
import json, sys
src, dst, cwd, name = sys.argv[1:]
with open(dst, "w") as out:
    for line in open(src):
        r = json.loads(line)
        if r["t"] == "header":
            r["cwd"] = cwd
        if r["t"] == "site":
            for f in r.get("frames", []):
                if f["file"] == "samples/mlp_train.py":
                    f["file"] = name
        out.write(json.dumps(r, separators=(",", ":")) + "\n")
EOF
}
derive up '../../etc/x.py'
derive up2 '../victim/samples/mlp_train.py'
derive abs "$w/victim/samples/mlp_train.py"
derive link 'evil/mlp_train.py'
derive dotdot 'samples/../../victim/samples/mlp_train.py'
derive inside 'samples/mlp_train.py'
touch "$tmp/marker"
sleep 1
for n in up up2 abs link dotdot inside; do
	(cd "$w/proj" && "$A" analyze -q "../$n.aicp.jsonl" -o "../out-$n" >/dev/null 2>"$tmp/$n.err" &&
		"$A" fuse "../out-$n" -o "../f-$n" >/dev/null 2>>"$tmp/$n.err")
	rc=$?
	check "paths $n: analyze, report and fuse exit 0 ($rc)" test "$rc" = 0
	check "paths $n: the report shows no line of a file outside the tree" sh -c "! grep -q VICTIM-SECRET '$w/out-$n/report.html'"
	check "paths $n: the patch names only files inside the tree" sh -c \
		"! grep -E '^(\+\+\+|---) ' '$w/f-$n/aicprof.patch' | grep -v ' /dev/null$' | grep -qvE ' [ab]/(aicprof_fused|samples/mlp_train.py)'"
	[ $n = inside ] && continue
	check "paths $n: the group is advice, the file named as outside the tree" \
		grep -qE "$(gname "$w/out-$n" gelu_dropout): advice, not rewritten: .*(outside the program's tree|leads outside)" "$w/f-$n/README.md"
done
check "paths inside (control): the same trace with the file inside the tree is rewritten" \
	grep -q "$(gname "$w/out-inside" gelu_dropout): rewritten at samples/mlp_train.py" "$w/f-inside/README.md"
check "paths: the patches apply without touching anything outside" sh -c \
	"cd '$w/proj' && for n in up up2 abs link dotdot; do patch -s -p1 --dry-run <../f-\$n/aicprof.patch >/dev/null || exit 1; done"
(cd "$w" && find . -type f ! -path './out-*' ! -path './f-*' ! -name '*.aicp.jsonl' -exec cksum {} + | sort) >"$tmp/after.sum"
check "paths: no file outside -o was written or changed" cmp -s "$tmp/before.sum" "$tmp/after.sum"
new=$(cd "$w" && find . -newer "$tmp/marker" ! -path './out-*' ! -path './f-*' ! -name '*.aicp.jsonl' ! -path . | head -5)
check "paths: nothing new outside the output directories ($new)" test -z "$new"

# --- names with markup, quotes, control characters, an escaped NUL
python3 - "$S" "$w/names.aicp.jsonl" "$w/proj" <<'EOF'
import json, sys
src, dst, cwd = sys.argv[1:]
bad = '<script>alert("x")</script>\'&amp;"\u0001\u001b[31m\u007f\u2028</textarea>]]>--><b>\\'
with open(dst, "w") as out:
    for line in open(src):
        r = json.loads(line)
        if r["t"] == "header":
            r["cwd"] = cwd
        if r["t"] == "str":
            r["s"] = bad + str(r["id"]) + "\u0000" + r["s"]
        if r["t"] == "site":
            for f in r.get("frames", []):
                f["func"] = '<img src=x onerror=alert(1)>"\n' + f["func"]
        if r["t"] == "push":
            r["text"] = "<svg onload=alert(2)>\u0007" + r["text"]
        out.write(json.dumps(r, separators=(",", ":")) + "\n")
EOF
cp "$top/tests/traces/hostile-names.aicp.jsonl" "$w/small.aicp.jsonl"
for n in names small; do
	(cd "$w/proj" && "$A" analyze -q "../$n.aicp.jsonl" -o "../out-$n" >/dev/null 2>"$tmp/$n.err"); rc=$?
	o=$w/out-$n
	check "names $n: analyze and report exit 0 ($rc)" test "$rc" = 0
	check "names $n: no markup from the trace is live in report.html" sh -c \
		"! grep -qiE '<script>alert|<img src=x|<svg onload|<b>GPU|</textarea>' '$o/report.html'"
	check "names $n: the names are shown escaped" grep -q '&lt;script&gt;alert(&quot;' "$o/report.html"
	check "names $n: no control character in any output" python3 -c "
import re, sys, os
d = sys.argv[1]
for f in os.listdir(d):
    if re.search(rb'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]', open(os.path.join(d, f), 'rb').read()):
        print('control character in', f); sys.exit(1)" "$o"
	check "names $n: summary.json and trace.perfetto.json parse and carry the name" python3 -c "
import json, sys
s = json.load(open(sys.argv[1] + '/summary.json')); p = json.load(open(sys.argv[1] + '/trace.perfetto.json'))
ev = p['traceEvents'] if isinstance(p, dict) else p
sys.exit(0 if any(str(e.get('name', '')).startswith('<script>alert') for e in ev) else 1)" "$o"
	check "names $n: graph.svg is well-formed XML" python3 -c "
import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" "$o/graph.svg"
	check "names $n: graph.dot is read back by Graphviz" sh -c "dot -Tsvg '$o/graph.dot' >/dev/null"
done
check "names: the text after an escaped NUL is cut, not carried" sh -c "! grep -q 'after-nul' '$w/out-small/summary.json'"

# --- numbers and sizes on a small valid trace (the base of t-bad-traces.sh)
H='{"t":"header","format":1,"tool":"aicprof 0.1.0","pid":7,"argv":["./a.out"],"cwd":"/src","devices":[{"id":0,"name":"NVIDIA H200","cc":"9.0","sm_count":132,"peak_bw_gbs":4022.8}]}'
T='{"t":"str","id":1,"s":"_Z6kernelPf"}'
M='{"t":"alloc","seq":1,"ts":1764430000000001000,"tid":1,"id":0,"ptr":"0x7f0000000000","size":4096,"api":"cuMemAlloc"}'
C='{"t":"memcpy","seq":2,"ts":1764430000000001500,"tid":1,"c":5,"api":"cuMemcpyAsync","dst":"0x7f0000000000","src":"0x1000","bytes":4096,"stream":"0x0","dst_alloc":[0,0]}'
CA='{"t":"copy","c":5,"kind":"HtoD","bytes":4096,"dev":0,"stream":7,"start":1764430000000002000,"end":1764430000000003000}'
L='{"t":"launch","seq":3,"ts":1764430000000002000,"tid":1,"c":1,"api":"cuLaunchKernel","fn":1,"grid":[1,1,1],"block":[32,1,1],"stream":"0x0","args":[{"i":0,"o":0,"n":8,"p":[[0,"0x7f0000000000",0,0]]}]}'
K='{"t":"kernel","c":1,"name":1,"dev":0,"stream":7,"start":1764430000000005000,"end":1764430000000006000,"grid":[1,1,1],"block":[32,1,1]}'
E='{"t":"end","ts":1764430000000008000,"reason":"exit","records":8,"kernels":1}'
mkdir -p "$w/num"
# num NAME WANT(0|1) LINE REGEX RECORD...: analyse; exit WANT; for 1 an error at LINE matching REGEX
num() {
	name=$1 want=$2 line=$3 re=$4; shift 4
	f=$w/num/$name.aicp.jsonl
	: >"$f"
	for r in "$@"; do printf '%s\n' "$r" >>"$f"; done
	(cd "$w/num" && python3 -c '
import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], "w")).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "../$name.err" \
		"$A" analyze "$name.aicp.jsonl" -o "out-$name" >"$w/$name.rc")
	read -r rc kb <"$w/$name.rc"
	check "numbers $name: exit $want ($rc), max RSS ${kb} KiB" test "$rc" = "$want" -a "${kb:-999999}" -lt 65536
	if [ "$want" = 1 ]; then
		check "numbers $name: the error names line $line: $re" grep -qE "^aicprof: error: $name\.aicp\.jsonl:$line: .*$re" "$w/$name.err"
	else
		check "numbers $name: summary and report written" test -s "$w/num/out-$name/summary.json" -a -s "$w/num/out-$name/report.html"
	fi
}
num size-2p64p1 1 3 'out of range' "$H" "$T" "$(echo "$M" | sed 's/"size":4096/"size":18446744073709551617/')" "$L" "$K" "$E"
num size-1e400 1 3 'out of range' "$H" "$T" "$(echo "$M" | sed 's/"size":4096/"size":1e400/')" "$L" "$K" "$E"
num size-minus1 1 3 'out of range' "$H" "$T" "$(echo "$M" | sed 's/"size":4096/"size":-1/')" "$L" "$K" "$E"
num seq-2p64p1 1 4 'out of range' "$H" "$T" "$M" "$(echo "$L" | sed 's/"seq":3/"seq":18446744073709551617/')" "$K" "$E"
num end-1e400 1 5 'out of range|before it starts' "$H" "$T" "$M" "$L" "$(echo "$K" | sed 's/"end":[0-9]*/"end":1e400/')" "$E"
num grid-overflow 0 0 '' "$H" "$T" "$M" "$(echo "$L" | sed 's/"grid":\[1,1,1\]/"grid":[18446744073709551617,1e400,-1]/')" "$K" "$E"
num bytes-overflow 0 0 '' "$H" "$T" "$M" "$(echo "$C" | sed 's/"bytes":4096/"bytes":18446744073709551617/')" "$(echo "$CA" | sed 's/"bytes":4096/"bytes":1e400/')" "$L" "$K" "$E"
num bytes-minus1 0 0 '' "$H" "$T" "$M" "$(echo "$C" | sed 's/"bytes":4096/"bytes":-1/')" "$(echo "$CA" | sed 's/"bytes":4096/"bytes":-1/')" "$L" "$K" "$E"
TB=1099511627776
num terabyte 0 0 '' "$H" "$T" "$(echo "$M" | sed "s/\"size\":4096/\"size\":$TB/")" "$(echo "$C" | sed "s/\"bytes\":4096/\"bytes\":$TB/")" "$(echo "$CA" | sed "s/\"bytes\":4096/\"bytes\":$TB/")" "$L" "$K" "$E"
check "numbers terabyte: the copy's bytes are carried exactly" grep -q "$TB" "$w/num/out-terabyte/summary.json"
num format-99 1 1 'trace format 99 is newer than this aicprof reads \(1\); upgrade aicprof' "$(echo "$H" | sed 's/"format":1/"format":99/')" "$T" "$E"
num format-2p64 1 1 "'format' is out of range" "$(echo "$H" | sed 's/"format":1/"format":18446744073709551617/')" "$T" "$E"
# a 10 MB kernel name (a valid line), and a 10 MB line that is not JSON
big=$(python3 -c 'print("k" * (10 << 20))')
num line-10mb-name 0 0 '' "$H" "{\"t\":\"str\",\"id\":1,\"s\":\"$big\"}" "$M" "$L" "$K" "$E"
num line-10mb-bad 1 2 'not valid JSON' "$H" "{\"t\":\"str\",\"id\":1,\"s\":\"$big" "$M" "$L" "$K" "$E"
unset big
for f in "$w"/num/*.aicp.jsonl "$w"/names.aicp.jsonl "$w"/small.aicp.jsonl; do echo "$f"; done >"$tmp/list"
"$R" $(cat "$tmp/list") >"$tmp/replay.log" 2>&1; rc=$?
grep -E 'AddressSanitizer|runtime error|LeakSanitizer' "$tmp/replay.log" | head -5 | sed 's/^/# /'
check "every hostile trace through the analysis built with ASan+UBSan: no report ($rc)" sh -c \
	"[ $rc = 0 ] && ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' '$tmp/replay.log'"
