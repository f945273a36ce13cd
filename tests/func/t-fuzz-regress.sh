# Replays the fuzz corpora through the fuzz targets built as plain ASan+UBSan programs
# (build/tests/replay-<name>, see tests/fuzz/fuzz.h): the seeds (tests/fuzz/seeds/<name>/) and
# every input a fuzzer once crashed on (tests/fuzz/regress/<name>/). Each input prints one TAP
# line after it ran; a crash or sanitizer report exits non-zero, which counts as a failure.
. "$(dirname "$0")/lib.sh"
for r in "$B"/tests/replay-*; do
	[ -x "$r" ] || continue
	n=${r##*/replay-}
	dirs=
	for d in "$top/tests/fuzz/seeds/$n" "$top/tests/fuzz/regress/$n"; do
		[ -d "$d" ] && dirs="$dirs $d"
	done
	[ -n "$dirs" ] || continue
	# the inputs are relative to the top, so TAP lines name no machine's paths
	(cd "$top" && TMPDIR=$tmp "$r" $(for d in $dirs; do echo "${d#$top/}"; done) 2>"$tmp/$n.err")
	rc=$?
	check "replay-$n: every input ran without a sanitizer report (exit $rc)" test "$rc" = 0
	[ "$rc" = 0 ] || tail -n 30 "$tmp/$n.err"
done
