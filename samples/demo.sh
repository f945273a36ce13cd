#!/bin/sh
# make demo: the main job on the bundled sample traces (recorded on an H200): analyze each,
# write the report, and print where to look.
top=$(cd "$(dirname "$0")/.." && pwd)
A=$top/build/aicprof
out=$top/out/demo
status=0
for t in mlp_train attention_train chain; do
	trace=$top/samples/traces/$t.aicp.jsonl
	echo "== $t ($(grep -c '"t":"kernel"' "$trace") kernels)"
	if ! "$A" analyze "$trace" -o "$out/$t"; then
		status=1
		continue
	fi
	[ -f "$out/$t/report.html" ] && echo "   report: $out/$t/report.html"
done
exit $status
