#!/bin/sh
# fuse-coverage.sh AICPROF [SAMPLE...] - the share of the fusion candidates' saved bytes that get
# a verified generated kernel, per sample trace (docs/fusion.md, "Coverage on real models").
#
# For each sample: analyze and fuse with AICPROF; the denominator is bytes_saved_per_step summed
# over the candidates of kind elementwise-chain and reduction-epilogue in summary.json (the
# elementwise and reduction candidates; attention, GEMM epilogues, optimizers and dead or
# invariant work are the library's or not fusion); the numerator sums those whose group fuse
# generated and verified: its kernels (forward, and fused backward where there is one) compile
# with nvcc -arch=sm_90 -c, and its CPU checks (the fused math against the op-by-op double
# evaluation, forward and fused backward) build and pass. Groups whose files differ only in the
# group's name are verified once; two at a time. (The C ABI and the bench harness are compiled
# by tests/func/t-fuse-nvcc.sh.) Prints one line per sample: name, bytes, verified bytes,
# percent, groups generated, groups verified. Needs nvcc (CUDA_HOME, else /usr/local/cuda).
set -u
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [ "${1:-}" = --verify ]; then # --verify GROUPDIR: prints "HASH ok|fail"
	d=$2 h=$3
	g=$(basename "$d")
	cd "$d" || exit 1
	r=ok
	for f in "${g}_kernel.cu" "${g}_bwd_kernel.cu" "${g}_bwdc_kernel.cu"; do
		[ -f "$f" ] || continue
		"$NVCC" -arch=sm_90 -c "$f" -o "$f.o" >"$f.log" 2>&1 || r=fail
	done
	for c in cpucheck bwd_cpucheck bwdc_cpucheck; do
		[ -f "${g}_$c.cu" ] || continue
		{ "$NVCC" -o "$c" "${g}_$c.cu" >"$c.log" 2>&1 && "./$c" >"$c.out" 2>&1; } || r=fail
	done
	echo "$h $r"
	exit 0
fi
A=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -gt 0 ] || set -- gpt2_train llama_train resnet_train mlp_train attention_train vit_train
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

: >"$tmp/todo"
for s in "$@"; do
	(cd "$top" && "$A" analyze -q --no-report "samples/traces/$s.aicp.jsonl" -o "$tmp/$s.a") ||
		exit 1
	"$A" fuse "$tmp/$s.a" -o "$tmp/$s.f" >/dev/null 2>&1
	: >"$tmp/$s.groups"
	for gd in "$tmp/$s.f"/*/; do
		[ -d "$gd" ] || continue
		ls "$gd"*.cu >/dev/null 2>&1 || continue # the package (aicprof_fused/): no group
		g=$(basename "$gd")
		G=$(echo "$g" | tr a-z A-Z)
		h=$(cat "$gd"*.cu "$gd"*.h | sed "s/$g/GROUP/g; s/$G/GROUP/g" | md5sum | cut -c1-32)
		echo "$g $h" >>"$tmp/$s.groups"
		grep -q " $h\$" "$tmp/todo" || echo "$gd $h" >>"$tmp/todo"
	done
done
xargs -P 2 -L 1 sh "$self" --verify <"$tmp/todo" >"$tmp/verdicts"
for s in "$@"; do
	python3 - "$tmp/$s.a/summary.json" "$tmp/$s.groups" "$tmp/verdicts" "$s" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
verdict = dict(l.split() for l in open(sys.argv[3]))
groups = dict(l.split() for l in open(sys.argv[2]))
ok = {g for g, h in groups.items() if verdict.get(h) == "ok"}
tot = ver = 0
for c in s["candidates"]:
    if c["kind"] not in ("elementwise-chain", "reduction-epilogue"):
        continue
    tot += c["bytes_saved_per_step"]
    g = c.get("group")
    if g and g["name"] in ok:  # a run of the finding counts its own bytes
        ver += min(g.get("bytes_saved_per_step", c["bytes_saved_per_step"]),
                   c["bytes_saved_per_step"])
print("%-16s %12d %12d %6.1f%% %4d %4d" % (sys.argv[4], tot, ver, 100.0 * ver / tot if tot else 0,
                                          len(groups), len(ok)))
EOF
done
