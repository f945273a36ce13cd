# The aicprof command: help, version, unknown commands, record's errors.
. "$(dirname "$0")/lib.sh"
check "--version prints the version" sh -c "'$B/aicprof' --version | grep -q '^aicprof [0-9]'"
check "--help lists record" sh -c "'$B/aicprof' --help | grep -q 'record'"
"$B/aicprof" no-such-command 2>"$tmp/err"; rc=$?
check "unknown command exits 129" test "$rc" = 129
check "unknown command names itself" grep -q "'no-such-command' is not an aicprof command" "$tmp/err"
"$B/aicprof" record 2>"$tmp/err"; rc=$?
check "record without a program exits 129" test "$rc" = 129
"$B/aicprof" record -- /bin/sh -c 'exit 7'; rc=$?
check "record passes the program's exit code through" test "$rc" = 7
"$B/aicprof" record -- /no/such/program 2>"$tmp/err"; rc=$?
check "record of a missing program exits 127" test "$rc" = 127
"$B/aicprof" record -o "$tmp/r.jsonl" -- /bin/sh -c 'test "$AICPROF_OUTPUT" = "$0"' "$tmp/r.jsonl"; rc=$?
check "record -o sets AICPROF_OUTPUT" test "$rc" = 0
"$B/aicprof" record /bin/sh -c 'test "$0" = -h' -h; rc=$?
check "record stops at the program: its -h is the program's" test "$rc" = 0
# Every command's -h and --help: usage on stdout, exit 0, each of its options listed.
for c in "record -o --output" "analyze -o --output -q -j --no-report --rank-summary --merge" \
	"report" "fuse -o --output --src --group" "bench --retune --samples" "compare"; do
	set -- $c; cmd=$1; shift
	"$B/aicprof" $cmd -h >"$tmp/h" 2>"$tmp/herr"; rc=$?
	check "$cmd -h exits 0" test "$rc" = 0
	check "$cmd -h prints its usage on stdout, nothing on stderr" \
		sh -c "grep -q '^usage: aicprof $cmd' '$tmp/h' && ! test -s '$tmp/herr'"
	for o in "$@"; do
		check "$cmd -h lists $o" grep -q -e "^    .*$o\\b" "$tmp/h"
	done
	"$B/aicprof" $cmd --help >"$tmp/h2"; rc=$?
	check "$cmd --help exits 0 and prints the same" sh -c "test $rc = 0 && cmp -s '$tmp/h' '$tmp/h2'"
	"$B/aicprof" $cmd --no-such-option x >"$tmp/o" 2>"$tmp/err"; rc=$?
	check "$cmd: an unknown option exits 129" test "$rc" = 129
	check "$cmd: an unknown option is named, with the usage, on stderr" \
		sh -c "grep -q \"error: unknown option '--no-such-option'\" '$tmp/err' &&
			grep -q '^usage: aicprof $cmd' '$tmp/err' && ! test -s '$tmp/o'"
done
"$B/aicprof" analyze -j abc x 2>"$tmp/err"; rc=$?
check "analyze -j abc exits 129" test "$rc" = 129
check "analyze -j abc names the option and the range" \
	grep -q "error: option '-j' expects a number from 1 to 1024, not 'abc'" "$tmp/err"
"$B/aicprof" bench --samples 0 x 2>"$tmp/err"; rc=$?
check "bench --samples 0 exits 129" test "$rc" = 129
"$B/aicprof" analyze -q --no-report "$top/tests/traces/mlp-nvtx.aicp.jsonl" \
	-o "$tmp/an" -- >/dev/null 2>&1; rc=$?
check "analyze takes options after its trace" sh -c "test $rc = 0 && test -s '$tmp/an/summary.json' && ! test -e '$tmp/an/report.html'"
"$B/aicprof" analyze -q --no-report -o "$tmp/dd" -- -j 2>"$tmp/err"; rc=$?
check "analyze: after -- an option-like word is a trace" \
	sh -c "test $rc != 129 && grep -q \"'-j'\" '$tmp/err'"
"$B/aicprof" fuse "$tmp/x" 2>"$tmp/err"; rc=$?
check "fuse without -o exits 129" test "$rc" = 129
"$B/aicprof" compare a 2>"$tmp/err"; rc=$?
check "compare with one run exits 129" test "$rc" = 129
"$B/aicprof" report a b 2>"$tmp/err"; rc=$?
check "report with two directories exits 129" test "$rc" = 129
