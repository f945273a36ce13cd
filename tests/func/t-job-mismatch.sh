# Traces given together must be ranks of one job (analyzer/jobcheck.c): traces whose headers'
# argv, cwd or world_size differ, or whose ranks repeat, are refused by name before anything is
# analysed or written; the two ranks of the DDP sample are still accepted as one job.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
T=$top/samples/traces
r0=$T/ddp_train.rank0.aicp.jsonl
r1=$T/ddp_train.rank1.aicp.jsonl
# derive NAME SRC PYEXPR: SRC with its header changed by PYEXPR (on h)
derive() {
	python3 - "$2" "$tmp/$1.aicp.jsonl" "$3" <<'PY'
import json, sys
src, dst, expr = sys.argv[1:]
with open(src) as f, open(dst, "w") as out:
    h = json.loads(f.readline())
    exec(expr)
    out.write(json.dumps(h, separators=(",", ":")) + "\n")
    for line in f:
        out.write(line)
PY
}
derive argv "$r1" 'h["argv"][-1] = h["argv"][-1].rsplit("/", 1)[0] + "/other.py"'
derive cwd "$r1" 'h["cwd"] = "/srv/elsewhere"'
derive world "$r1" 'h["world_size"] = 4'
derive rank0 "$r1" 'h["rank"] = 0'
derive noworld "$r1" 'del h["world_size"]'
# mismatch NAME REGEX: rank 0 with the derived rank 1 is refused, naming both and what differs
mismatch() {
	"$A" analyze -q "$r0" "$tmp/$1.aicp.jsonl" -o "$tmp/out-$1" 2>"$tmp/$1.err"; rc=$?
	check "$1: refused ($rc)" test "$rc" != 0
	check "$1: the message names both traces and $2" grep -qE \
		"^aicprof: error: '$tmp/$1.aicp.jsonl' is not a rank of the same job as '$r0' \($2\)$" "$tmp/$1.err"
	check "$1: nothing written" test ! -e "$tmp/out-$1"
}
argv_of() { python3 -c 'import json, sys; print(" ".join(json.loads(open(sys.argv[1]).readline())["argv"]))' "$1"; }
mismatch argv "argv differs: '$(argv_of "$r0")' vs '$(argv_of "$tmp/argv.aicp.jsonl")'"
mismatch cwd "cwd differs: '/tmp/[^']*/rec' vs '/srv/elsewhere'"
mismatch world "world_size differs: '2' vs '4'"
mismatch rank0 "both rank 0"
mismatch noworld "world_size differs: '2' vs none"
# two unrelated programs' traces
"$A" analyze -q "$T/mlp_train.aicp.jsonl" "$T/chain.aicp.jsonl" -o "$tmp/out-two" 2>"$tmp/two.err"; rc=$?
check "two unrelated samples: refused ($rc)" test "$rc" != 0 -a ! -e "$tmp/out-two"
check "two unrelated samples: the message names them" grep -qF \
	"'$T/chain.aicp.jsonl' is not a rank of the same job as '$T/mlp_train.aicp.jsonl' (argv differs: " "$tmp/two.err"
# the control: the job's own ranks, in either order
for order in "$r0 $r1" "$r1 $r0"; do
	"$A" analyze -q --no-report $order -o "$tmp/ok" 2>"$tmp/ok.err"; rc=$?
	check "the DDP sample's two ranks ($(basename ${order%% *}) first): accepted as one job ($rc)" sh -c \
		"[ $rc = 0 ] && python3 -c \"import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if len(s['traces'])==2 and s.get('job') else 1)\" '$tmp/ok/summary.json'"
	rm -rf "$tmp/ok"
done
