#!/bin/sh
# Golden check for changes of structure: analyzes every bundled sample trace with build/aicprof
# (--no-report) and compares each summary.json with the one in REFDIR/<name>/, written by the
# same script with --write before the change. One line per sample; exits 1 when any differs.
#   sh tests/tools/golden.sh --write REFDIR   (before the change)
#   sh tests/tools/golden.sh REFDIR           (after it)
top=$(cd "$(dirname "$0")/../.." && pwd)
write=0
[ "$1" = --write ] && { write=1; shift; }
ref=${1:?usage: golden.sh [--write] REFDIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
an() { # name, traces...
	n=$1; shift
	d=$tmp/$n
	[ $write = 1 ] && d=$ref/$n
	timeout 300 "$top/build/aicprof" analyze --no-report -q -o "$d" "$@" >/dev/null 2>"$tmp/$n.err"
	[ $write = 1 ] && { echo "wrote $n"; return; }
	if cmp -s "$d/summary.json" "$ref/$n/summary.json"; then echo "same    $n"; else echo "DIFFERS $n"; bad=1; fi
}
for t in "$top"/samples/traces/*.aicp.jsonl; do
	n=$(basename "$t" .aicp.jsonl)
	case $n in ddp_train.rank*) continue;; esac
	an "$n" "$t"
done
an ddp_train "$top"/samples/traces/ddp_train.rank0.aicp.jsonl "$top"/samples/traces/ddp_train.rank1.aicp.jsonl
exit $bad
