#!/bin/sh
# Runs every test and ends with one line: "N passed, N failed".
#
# Unit tests are cmocka programs given as arguments; they print TAP (CMOCKA_MESSAGE_OUTPUT=TAP),
# so each cmocka test counts once. Functional tests are tests/func/*.sh; each prints TAP lines
# ("ok - what" / "not ok - what") for its checks. A program that exits non-zero without having
# reported a failure (a crash, a sanitizer report) counts as one more failure.
top=$(cd "$(dirname "$0")/.." && pwd)
export AICPROF_TOP="$top" CMOCKA_MESSAGE_OUTPUT=TAP
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions=$top/tests/lsan.supp:print_suppressions=0 AICPROF_QUIET=1
pass=0; fail=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
run_one() { # name, command...
	name=$1; shift
	"$@" >"$log" 2>&1; rc=$?
	p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok - $name exited with $rc" >>"$log"; fi
	if [ "$f" -ne 0 ] || [ -n "$VERBOSE" ]; then echo "== $name"; grep -v '^ok ' "$log" | head -60; fi
	pass=$((pass + p)); fail=$((fail + f))
	printf '%-40s %3d passed, %d failed\n' "$name" "$p" "$f"
}
for t in "$@"; do run_one "$(basename "$t")" "$t"; done
for t in "$top"/tests/func/t-*.sh; do
	[ -f "$t" ] || continue
	run_one "$(basename "$t")" sh "$t"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
