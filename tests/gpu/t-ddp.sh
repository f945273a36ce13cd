#!/bin/sh
# t-ddp.sh - the shim under torchrun with NCCL on a machine with two or more GPUs (device kind
# nvidia-h200-x2): samples/ddp_train.py on 2 ranks, with and without the shim; checks that each
# rank wrote one whole trace named by rank and the launcher none, that communicators and
# collectives match across ranks, that NCCL's kernels carry their collectives, and (through
# ddp_check.py) that the analyzer's job view agrees with the kernels' times. Prints TAP lines.
# With fewer than two GPUs it prints one skip line.
. "$(dirname "$0")/../func/lib.sh"
out=${GPU_OUT:-$tmp}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$ngpu" -lt 2 ]; then
	echo "# t-ddp: skipped, $ngpu GPU(s) here (needs 2: device kind nvidia-h200-x2)"
	exit 0
fi
TR="python3 -m torch.distributed.run --standalone --nproc_per_node=2"
mkdir -p "$tmp/plain" "$tmp/rec"
(cd "$tmp/plain" && timeout 300 $TR "$top/samples/ddp_train.py" >out.txt 2>err.txt); rc1=$?
(cd "$tmp/rec" && LD_PRELOAD=$B/libaicprof.so timeout 300 $TR "$top/samples/ddp_train.py" \
	>out.txt 2>err.txt); rc2=$?
sed 's/^/# plain: /' "$tmp/plain/out.txt"; sed 's/^/# shim: /' "$tmp/rec/out.txt"
grep -i 'aicprof\|error' "$tmp/rec/err.txt" | head -5 | sed 's/^/# stderr: /'
check "torchrun exit code unchanged under the shim ($rc1 -> $rc2)" test "$rc1" = "$rc2" -a "$rc2" = 0
check "both ranks print their loss under the shim" test "$(grep -c '^rank . loss' "$tmp/rec/out.txt")" = 2
ls "$tmp/rec"/*.aicp.jsonl 2>/dev/null | sed 's/^/# trace: /'
check "two traces, one per rank, named by rank (the launcher writes none)" sh -c \
	"test \$(ls '$tmp/rec' | grep -c '\.aicp\.jsonl$') = 2 && ls '$tmp/rec'/aicprof.rank0.*.aicp.jsonl '$tmp/rec'/aicprof.rank1.*.aicp.jsonl"
for f in "$tmp/rec"/aicprof.rank*.aicp.jsonl; do
	r=$(basename "$f" | sed 's/aicprof\.rank\([0-9]*\)\..*/\1/')
	cp "$f" "$out/ddp_train.rank$r.aicp.jsonl"
done
python3 "$top/tests/gpu/ddp_check.py" "$B/aicprof" "$out"/ddp_train.rank0.aicp.jsonl \
	"$out"/ddp_train.rank1.aicp.jsonl >"$tmp/chk" 2>&1
cat "$tmp/chk"
