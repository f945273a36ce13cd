# The one trace reader (lib/trace.c) on every kind of input: the same sample analysed from a
# file, from standard input (a pipe and a redirect), from a FIFO and gzip-compressed (one member,
# several, through a pipe) gives the same summary.json but for the trace's path, the memory plan
# included (before the one reader, a pipe's memory plan was empty: the plan re-opened the file).
# Then the bounds: a line of exactly the 64 MiB limit is read, one byte more is an error naming
# file and line, and /dev/zero is refused within seconds, all in bounded memory.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
F=$top/samples/traces/mlp_train.aicp.jsonl
LIMIT=67108864 # TRACE_MAX_LINE
# same DIR: DIR/summary.json equals the file's, the traces' paths aside
same() {
	python3 - "$tmp/file/summary.json" "$1/summary.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for s in (a, b):
    for t in s["traces"]:
        t["path"] = None
sys.exit(0 if a == b else 1)
EOF
}
# q FILE EXPR: the Python expression over the summary `s` holds
q() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
an() { # DIR TRACE: analyse, stderr to DIR.err
	timeout 120 "$A" analyze --no-report -o "$tmp/$1" "$2" 2>"$tmp/$1.err"
}

an file "$F"
check "file: analyze exits 0" test $? = 0
check "file: the memory plan holds the allocator's bytes (what a pipe lost before)" \
	q "$tmp/file/summary.json" "s['memory']['held_peak_bytes'] > 0 and s['memory']['allocs_in_step'] > 0"

cat "$F" | an pipe -
check "pipe: 'cat f | aicprof analyze -' exits 0" test $? = 0
check "pipe: the same summary.json" same "$tmp/pipe"
check "pipe: the same memory plan" python3 -c "
import json, sys
a = json.load(open('$tmp/file/summary.json'))['memory']; b = json.load(open('$tmp/pipe/summary.json'))['memory']
sys.exit(0 if a == b and a is not None else 1)"
check "pipe: the trace's path is '-'" q "$tmp/pipe/summary.json" "s['traces'][0]['path'] == '-'"

timeout 120 "$A" analyze --no-report -o "$tmp/redir" - <"$F" 2>"$tmp/redir.err"
check "redirect: 'aicprof analyze - < f' gives the same summary.json" same "$tmp/redir"

mkfifo "$tmp/trace.fifo"
(cat "$F" >"$tmp/trace.fifo") &
timeout 30 "$A" analyze --no-report -o "$tmp/fifo" "$tmp/trace.fifo" 2>"$tmp/fifo.err"
check "fifo: analyze of a FIFO exits 0 (it never hangs waiting for a second open)" test $? = 0
kill $! 2>/dev/null
wait
check "fifo: the same summary.json" same "$tmp/fifo"

gzip -c "$F" >"$tmp/t.aicp.jsonl.gz"
an gz "$tmp/t.aicp.jsonl.gz"
check "gzip: a compressed trace is read" test $? = 0
check "gzip: the same summary.json" same "$tmp/gz"
gzip -c "$F" | an gzpipe -
check "gzip: through a pipe, the same summary.json" same "$tmp/gzpipe"
n=$(wc -l <"$F")
{ head -n $((n / 2)) "$F" | gzip -c; tail -n +$((n / 2 + 1)) "$F" | gzip -c; } >"$tmp/two.gz"
an gz2 "$tmp/two.gz"
check "gzip: two members one after the other, the same summary.json" same "$tmp/gz2"

size=$(wc -c <"$tmp/t.aicp.jsonl.gz")
head -c $((size / 2)) "$tmp/t.aicp.jsonl.gz" >"$tmp/cut.gz"
an gzcut "$tmp/cut.gz"
check "gzip cut in the middle: analysed up to the cut, with warnings" sh -c \
	"test $? = 0 && grep -q 'cut.gz:.*inside a gzip member' '$tmp/gzcut.err' && grep -q 'cut short' '$tmp/gzcut.err'"
python3 -c "
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
for i in range(len(b) // 3, len(b) // 3 + 64):
    b[i] ^= 0x5a
open(sys.argv[2], 'wb').write(b)" "$tmp/t.aicp.jsonl.gz" "$tmp/bad.gz"
an gzbad "$tmp/bad.gz"
check "gzip damaged: an error naming the file" sh -c "test $? = 1 && grep -q 'error: .*bad.gz:[0-9]*: ' '$tmp/gzbad.err'"

# a line of LIMIT bytes is read; LIMIT + 1 is an error naming its line; bounded memory
note() { # bytes of the whole line, without its '\n'
	printf '{"t":"note","text":"'
	head -c $(($1 - 22)) /dev/zero | tr '\0' a
	printf '"}\n'
}
check "the test's long line is exactly the limit" test "$(note $LIMIT | wc -c)" = $((LIMIT + 1))
RSS=
[ -x /usr/bin/time ] && RSS="/usr/bin/time -f %M -o $tmp/rss"
rss_ok() { # at most 3 x the limit (one block, the line's parse): never the whole input
	[ -z "$RSS" ] || [ "$(tail -1 "$tmp/rss")" -lt $((3 * LIMIT / 1024)) ]
}
{ head -1 "$F"; note $LIMIT; tail -n +2 "$F"; } | timeout 60 $RSS "$A" analyze --no-report -q -o "$tmp/max" - 2>"$tmp/max.err"
check "a line of exactly 64 MiB is read" test $? = 0
check "  ... in bounded memory" rss_ok
start=$(date +%s)
{ head -1 "$F"; note $((LIMIT + 1)); tail -n +2 "$F"; } | timeout 60 $RSS "$A" analyze --no-report -o "$tmp/long" - 2>"$tmp/long.err"
rc=$?
check "a line of 64 MiB + 1 byte: exit 1" test $rc = 1
check "  ... the error names the input and line 2 and the limit" \
	grep -q "^aicprof: error: <stdin>:2: line longer than the limit of a trace line: 64 MiB" "$tmp/long.err"
check "  ... in bounded memory" rss_ok
check "  ... and nothing written" test ! -e "$tmp/long/summary.json"
start=$(date +%s)
timeout 20 $RSS "$A" analyze --no-report -o "$tmp/zero" /dev/zero 2>"$tmp/zero.err"
rc=$?
check "/dev/zero: refused (exit 1, not killed by the timeout)" test $rc = 1
check "/dev/zero: within 10 seconds" test $(($(date +%s) - start)) -le 10
check "/dev/zero: the error names it and line 1" grep -q "^aicprof: error: /dev/zero:1: line longer than the limit" "$tmp/zero.err"
check "/dev/zero: in bounded memory" rss_ok

"$A" analyze --no-report -o "$tmp/two" - "$F" </dev/null 2>"$tmp/two.err"
check "'-' beside another trace: refused, naming the rule" sh -c "test $? = 129 && grep -q \"'-' (standard input) can only be\" '$tmp/two.err'"
