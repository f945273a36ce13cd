#!/bin/sh
# Bench harnesses of the same groups as two (or more) versions of the generator write them, for
# a side-by-side run on the device (tests/gpu/device.sh's GPU_HX). For each git revision REV
# (a commit, or "." for the working tree as it is), builds that tree's aicprof in a worktree
# under a temporary directory, fuses each source, and compiles the named groups' _bench.cu
# with nvcc -O3 -arch=sm_90 into OUTDIR/<group>__<rev> (a short hash, -wt after it for a
# working tree), stripped: the device call carries the working tree, 64 MiB in all, and a
# harness is about 1.4 MB. A source is a trace
# (TRACE.aicp.jsonl:GROUP, analysed first) or a group file (G.json, its group's name taken from
# the file). Run GPU_HX=OUTDIR sh tests/gpu/device.sh there; delete OUTDIR before committing.
#   sh tests/tools/hx-build.sh OUTDIR REV... -- SOURCE...
#   e.g. sh tests/tools/hx-build.sh hx a592721 . -- \
#        samples/traces/resnet_train.aicp.jsonl:c5_relu_backward_norm_backward tests/fusion/gbb.json
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 4 ] || {
	echo "usage: hx-build.sh OUTDIR REV... -- SOURCE..." >&2
	exit 2
}
out=$1
shift
revs=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	revs="$revs $1"
	shift
done
[ "${1:-}" = -- ] && shift
[ -n "$revs" ] && [ $# -gt 0 ] || {
	echo "hx-build.sh: name at least one revision and one source" >&2
	exit 2
}
NVCC=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}
[ -x "$NVCC" ] || {
	echo "hx-build.sh: no nvcc ($NVCC)" >&2
	exit 1
}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
t=$(mktemp -d)
trap 'cd "$top"; for w in "$t"/w.*; do [ -d "$w" ] && git -C "$top" worktree remove --force "$w" >/dev/null 2>&1; done; rm -rf "$t"' EXIT
rc=0
for rev in $revs; do
	if [ "$rev" = . ]; then
		tree=$top
		tag=$(git -C "$top" rev-parse --short HEAD)-wt
	else
		tag=$(git -C "$top" rev-parse --short "$rev") || exit 1
		tree=$t/w.$tag
		git -C "$top" worktree add -f --detach "$tree" "$rev" >/dev/null 2>&1 || {
			echo "hx-build.sh: cannot check out $rev" >&2
			exit 1
		}
	fi
	make -C "$tree" -s build/aicprof >"$t/make.$tag" 2>&1 || {
		echo "hx-build.sh: $rev: build/aicprof did not build (see make's output below)" >&2
		tail -5 "$t/make.$tag" >&2
		exit 1
	}
	A=$tree/build/aicprof
	for s in "$@"; do
		case $s in
		*.aicp.jsonl:*)
			tr=${s%:*} g=${s##*:}
			[ -d "$t/$tag.a.$(basename "$tr")" ] ||
				(cd "$top" && "$A" analyze -q --no-report "$tr" -o "$t/$tag.a.$(basename "$tr")") ||
				exit 1
			d=$t/$tag.f.$(basename "$tr")
			[ -d "$d" ] || "$A" fuse "$t/$tag.a.$(basename "$tr")" -o "$d" --src /nonexistent >/dev/null 2>&1
			;;
		*.json)
			g=$(sed -n 's/^{ *"name": *"\([^"]*\)".*/\1/p; s/^ *"name": *"\([^"]*\)".*/\1/p' "$top/$s" | head -1)
			d=$t/$tag.g.$g
			(cd "$top" && "$A" fuse --group "$s" -o "$d" >/dev/null 2>&1)
			;;
		*)
			echo "hx-build.sh: $s: neither TRACE.aicp.jsonl:GROUP nor G.json" >&2
			exit 2
			;;
		esac
		src=$d/$g/${g}_bench.cu
		if [ ! -f "$src" ]; then
			echo "hx-build.sh: $rev: fuse wrote no $g/${g}_bench.cu for $s" >&2
			rc=1
			continue
		fi
		"$NVCC" -O3 -arch=sm_90 -o "$out/${g}__$tag" "$src" && strip "$out/${g}__$tag" &&
			echo "$out/${g}__$tag" || rc=1
	done
done
du -sh "$out"
exit $rc
