# Valgrind (memcheck) over `aicprof analyze` and `aicprof report` on the three sample traces:
# any invalid read or write, use of uninitialised memory, or definite leak is an error (exit 99).
# Leaks inside Graphviz, pango and fontconfig (caches they never free) are suppressed by
# tests/valgrind.supp; nothing of aicprof's own is.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
check "valgrind is installed" sh -c 'command -v valgrind >/dev/null'
vg() { # log, command...
	l=$1; shift
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--show-leak-kinds=definite --suppressions="$top/tests/valgrind.supp" "$@" >/dev/null 2>"$l"
}
for s in chain mlp_train attention_train; do
	vg "$tmp/$s.a.log" "$A" analyze -q --no-report "$top/samples/traces/$s.aicp.jsonl" -o "$tmp/$s"; rc=$?
	grep '^==' "$tmp/$s.a.log" | head -20 | sed 's/^/# /'
	check "valgrind: analyze $s: exit 0, no error, no definite leak ($rc)" test "$rc" = 0 -a -s "$tmp/$s/summary.json"
	vg "$tmp/$s.r.log" "$A" report "$tmp/$s"; rc=$?
	grep '^==' "$tmp/$s.r.log" | head -20 | sed 's/^/# /'
	check "valgrind: report $s: exit 0, no error, no definite leak ($rc)" test "$rc" = 0 -a -s "$tmp/$s/report.html"
done
