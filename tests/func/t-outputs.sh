# Outputs cannot be hijacked: a symbolic link planted in an output directory is replaced or
# refused, never written through (summary.json, report files, fused group directories), and
# temporary files get fresh names no one can plant in advance.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
T=$top/samples/traces/mlp_train.aicp.jsonl

# 1. links planted under every output name of analyze
mkdir -p "$tmp/o" "$tmp/victims"
for f in summary.json report.html graph.dot graph.svg trace.perfetto.json; do
	echo keep >"$tmp/victims/$f"
	ln -s "$tmp/victims/$f" "$tmp/o/$f"
done
"$A" analyze -q "$T" -o "$tmp/o" >/dev/null 2>&1; rc=$?
check "analyze over planted links exits 0" test "$rc" = 0
n=0
for f in summary.json report.html graph.dot graph.svg trace.perfetto.json; do
	[ "$(cat "$tmp/victims/$f")" = keep ] || { nok "analyze wrote through the link $f"; n=1; }
	[ ! -e "$tmp/o/$f" ] || [ ! -L "$tmp/o/$f" ] || { nok "$f is still a link"; n=1; }
done
check "no victim written, no output left a link" test $n = 0
check "summary.json is a regular file" test -f "$tmp/o/summary.json" -a ! -L "$tmp/o/summary.json"
left=$(ls "$tmp/o" | grep -c '\.tmp\.')
check "no temporary file left behind ($left)" test "$left" = 0

# 2. the old temporary name (summary.json.tmp.PID) planted as a link: exec keeps the pid
mkdir -p "$tmp/p"
echo keep >"$tmp/victims/tmpvictim"
sh -c 'ln -s "$1" "$2/summary.json.tmp.$$"; exec "$3" analyze -q --no-report "$4" -o "$2"' \
	sh "$tmp/victims/tmpvictim" "$tmp/p" "$A" "$T" >/dev/null 2>&1
check "a link at the pid-named temporary is not written through" test "$(cat "$tmp/victims/tmpvictim")" = keep
check "summary.json written beside it" test -f "$tmp/p/summary.json" -a ! -L "$tmp/p/summary.json"

# 3. a fused group's directory planted as a link to elsewhere is refused
"$A" fuse "$tmp/o" -o "$tmp/f1" >/dev/null 2>&1
g=$(ls -d "$tmp/f1"/*/ 2>/dev/null | head -1)
g=$(basename "${g%/}")
check "fuse wrote a group directory ($g)" test -n "$g"
mkdir -p "$tmp/f2" "$tmp/elsewhere"
ln -s "$tmp/elsewhere" "$tmp/f2/$g"
"$A" fuse "$tmp/o" -o "$tmp/f2" >"$tmp/fuse.out" 2>&1
check "nothing written through the planted group link" test -z "$(ls -A "$tmp/elsewhere")"
check "fuse names the link" grep -q "symbolic link" "$tmp/fuse.out"
