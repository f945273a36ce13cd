# One aicprof run at a time per output directory (lib/lock.c): two analyses of different traces
# started at once into one -o: one is refused with the message naming the directory and the
# other's pid, and everything in the directory is the other's (byte for byte the outputs of that
# trace analysed alone). 20 repeats, never mixed. Then: the lock does not outlive its run, a
# link planted as the lock file is refused, and fuse takes the same lock.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
T=$top/samples/traces
cp "$T/mlp_train.aicp.jsonl" "$T/cupy_loop.aicp.jsonl" "$tmp/"
for t in mlp_train cupy_loop; do
	"$A" analyze -q "$tmp/$t.aicp.jsonl" -o "$tmp/ref-$t" || nok "reference analysis of $t"
done
files="summary.json report.html graph.dot graph.svg trace.perfetto.json"
refused=0 mixed=0 msg=0 both=0
for i in $(seq 1 20); do
	o=$tmp/o$i
	"$A" analyze -q "$tmp/mlp_train.aicp.jsonl" -o "$o" 2>"$tmp/a$i.err" & pa=$!
	"$A" analyze -q "$tmp/cupy_loop.aicp.jsonl" -o "$o" 2>"$tmp/b$i.err" & pb=$!
	wait $pa; ra=$?
	wait $pb; rb=$?
	if [ $ra = 0 ] && [ $rb != 0 ]; then win=mlp_train lose=b other=$pa
	elif [ $rb = 0 ] && [ $ra != 0 ]; then win=cupy_loop lose=a other=$pb
	else both=$((both + 1)); echo "# repeat $i: exit codes $ra $rb"; continue; fi
	refused=$((refused + 1))
	grep -qF "aicprof: error: '$o' is being written by another aicprof run (pid $other); wait for it or choose another -o" \
		"$tmp/$lose$i.err" && msg=$((msg + 1))
	# the trace named inside summary.json, and the report naming the same one
	p=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['traces'][0]['path'])" "$o/summary.json")
	[ "$p" = "$tmp/$win.aicp.jsonl" ] && grep -qF "$win.aicp.jsonl" "$o/report.html" || mixed=$((mixed + 1))
	for f in $files; do cmp -s "$o/$f" "$tmp/ref-$win/$f" || { mixed=$((mixed + 1)); echo "# repeat $i: $f is not $win's"; }; done
done
check "20 repeats: each time exactly one run is refused ($refused; both succeeded or failed: $both)" test $refused = 20
check "20 repeats: the refusal names the directory and the other run's pid ($msg)" test $msg = 20
check "20 repeats: summary.json names the winner's trace, and every output is the winner's ($mixed mixed)" test $mixed = 0
check "the lock file holds a pid" grep -qE '^[0-9]+$' "$tmp/o1/.aicprof.lock"
"$A" analyze -q "$tmp/mlp_train.aicp.jsonl" -o "$tmp/o1" 2>"$tmp/again.err"; rc=$?
check "the lock is gone with its run: a later analysis into the same -o succeeds ($rc)" test $rc = 0 -a ! -s "$tmp/again.err"
mkdir -p "$tmp/planted"; : >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/planted/.aicprof.lock"
"$A" analyze -q "$tmp/mlp_train.aicp.jsonl" -o "$tmp/planted" 2>"$tmp/planted.err"; rc=$?
check "a link planted as the lock file: refused, nothing written through it ($rc)" sh -c \
	"[ $rc != 0 ] && [ ! -s '$tmp/victim' ] && [ ! -e '$tmp/planted/summary.json' ] && grep -q 'symbolic link' '$tmp/planted.err'"
# fuse: hold the lock of a directory with flock(1) and fuse into it
if command -v flock >/dev/null; then
	mkdir -p "$tmp/fz"; : >"$tmp/fz/.aicprof.lock"
	flock -n "$tmp/fz/.aicprof.lock" sh -c "echo \$\$ >'$tmp/fz/.aicprof.lock'; '$A' fuse '$tmp/ref-mlp_train' -o '$tmp/fz' 2>'$tmp/fz.err'; echo \$? >'$tmp/fz.rc'"
	check "fuse into a locked directory: refused with the message" sh -c \
		"[ \$(cat '$tmp/fz.rc') != 0 ] && grep -q \"'$tmp/fz' is being written by another aicprof run (pid [0-9]*)\" '$tmp/fz.err' && [ ! -e '$tmp/fz/README.md' ]"
	"$A" fuse "$tmp/ref-mlp_train" -o "$tmp/fz" >/dev/null 2>"$tmp/fz2.err"; rc=$?
	check "fuse into it once free: succeeds ($rc)" test $rc = 0 -a -s "$tmp/fz/README.md"
fi
