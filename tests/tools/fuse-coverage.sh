#!/bin/sh
# fuse-coverage.sh AICPROF [SAMPLE...] - the share of the fusion candidates' saved bytes that get
# a verified generated kernel, per sample trace (docs/fusion.md, "Coverage on real models").
#
# For each sample: analyze and fuse with AICPROF; the denominator is bytes_saved_per_step summed
# over the candidates of kind elementwise-chain and reduction-epilogue in summary.json (the
# elementwise and reduction candidates; attention, GEMM epilogues, optimizers and dead or
# invariant work are the library's or not fusion); the numerator sums those whose group fuse
# generated and verified: every generated .cu but the PyTorch binding compiles with nvcc
# -arch=sm_90 -c, and the CPU checks (fused math against the op-by-op double evaluation, forward
# and fused backward) build and pass. Groups whose files differ only in the group's name are
# verified once. Prints one line per sample: name, bytes, verified bytes, percent. Needs nvcc
# (CUDA_HOME, else /usr/local/cuda); no GPU.
set -u
A=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
top=$(cd "$(dirname "$0")/../.." && pwd)
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ $# -gt 0 ] || set -- gpt2_train llama_train resnet_train mlp_train attention_train
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

verify() { # verify GROUPDIR: exit 0 when every file compiles and the CPU checks pass
	d=$1
	g=$(basename "$d")
	cd "$d" || return 1
	for f in *.cu; do
		case $f in *_binding.cu) continue ;; esac
		"$NVCC" -arch=sm_90 -c "$f" -o "$f.o" >"$f.log" 2>&1 || return 1
	done
	"$NVCC" -o cpucheck "${g}_cpucheck.cu" >/dev/null 2>&1 && ./cpucheck >/dev/null 2>&1 ||
		return 1
	if [ -f "${g}_bwd_cpucheck.cu" ]; then
		"$NVCC" -o bwdcheck "${g}_bwd_cpucheck.cu" >/dev/null 2>&1 &&
			./bwdcheck >/dev/null 2>&1 || return 1
	fi
	return 0
}

for s in "$@"; do
	(cd "$top" && "$A" analyze -q --no-report "samples/traces/$s.aicp.jsonl" -o "$tmp/$s.a") ||
		exit 1
	"$A" fuse "$tmp/$s.a" -o "$tmp/$s.f" >/dev/null 2>&1
	: >"$tmp/$s.ok"
	for gd in "$tmp/$s.f"/*/; do
		[ -d "$gd" ] || continue
		g=$(basename "$gd")
		G=$(echo "$g" | tr a-z A-Z)
		h=$(cat "$gd"*.cu "$gd"*.h | sed "s/$g/GROUP/g; s/$G/GROUP/g" | md5sum | cut -c1-32)
		r=$(grep "^$h " "$tmp/verdicts" 2>/dev/null | cut -d' ' -f2)
		if [ -z "$r" ]; then
			if (verify "$gd"); then r=ok; else r=fail; fi
			echo "$h $r" >>"$tmp/verdicts"
		fi
		[ "$r" = ok ] && echo "$g" >>"$tmp/$s.ok"
	done
	python3 - "$tmp/$s.a/summary.json" "$tmp/$s.ok" "$s" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
ok = set(open(sys.argv[2]).read().split())
tot = ver = 0
for c in s["candidates"]:
    if c["kind"] not in ("elementwise-chain", "reduction-epilogue"):
        continue
    tot += c["bytes_saved_per_step"]
    g = c.get("group")
    if g and g["name"] in ok:
        ver += c["bytes_saved_per_step"]
print("%-16s %12d %12d %6.1f%%" % (sys.argv[3], tot, ver, 100.0 * ver / tot if tot else 0))
EOF
done
