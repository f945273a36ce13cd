#!/bin/sh
# The gated form on transformers models we did not write (tests/gpu/gated_models.py: Qwen2's
# SwiGLU and Gemma's tanh-GELU GeGLU): record each under the shim, analyse, check that the
# summary names its MLP's forward as a "gated" function with the activation's class, fuse, and
# run gated_models.py's check (apply(), first-use verification, forward, gradients and six
# AdamW steps against the original). The traces stay in $GPU_OUT (device.sh returns them in
# traces.tar.gz). Prints TAP lines. Run from the repository root after make:
#   sh tests/gpu/t-gated-models.sh     (GATED_MODELS="gemma": only those)
. "$(dirname "$0")/../func/lib.sh"
out=${GPU_OUT:-$B/gpu}
mkdir -p "$out"
[ -x "$B/aicprof" ] || make -j8 build/aicprof >/dev/null 2>&1
for m in ${GATED_MODELS:-qwen2 gemma}; do
	t=$out/${m}_train.aicp.jsonl
	AICPROF_OUTPUT=$t LD_PRELOAD=$B/libaicprof.so timeout 180 \
		python3 "$top/tests/gpu/gated_models.py" train "$m" --steps 6 >"$tmp/$m.rec" 2>"$out/${m}_train.stderr"
	check "$m: the recording ran to its end under the shim" \
		grep -q "step 5 loss" "$tmp/$m.rec"
	"$B/aicprof" analyze "$t" -o "$tmp/$m.a" >"$tmp/$m.an" 2>&1
	check "$m: analyze read the trace" test -s "$tmp/$m.a/summary.json"
	f=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
g = [f for f in s.get("functions", []) if f["form"] == "gated"]
print(" ".join("%s:%s:%d" % (f["func"], f["binding"].get("act_class"), f["invocations"]) for f in g))
' "$tmp/$m.a/summary.json" 2>&1)
	case $m in
	qwen2) want="Qwen2MLP.forward:SiLUActivation:4" ;;
	*) want="GemmaMLP.forward:" ;;
	esac
	check "$m: the summary's gated function is $want... (got: $f)" \
		sh -c "echo '$f' | grep -q '$want'"
	(cd "$top" && "$B/aicprof" fuse "$tmp/$m.a" -o "$tmp/$m.f" --src /nonexistent) >"$tmp/$m.fu" 2>&1
	check "$m: fuse wrote the package" test -s "$tmp/$m.f/aicprof_fused/__init__.py"
	timeout 300 python3 "$top/tests/gpu/gated_models.py" check "$m" "$tmp/$m.f" \
		>"$tmp/$m.chk" 2>"$tmp/$m.err" || nok "$m: the check ran to its end"
	cat "$tmp/$m.chk"
	grep -v '^\s*$' "$tmp/$m.err" | grep -v Warning | tail -8 | sed 's/^/# /'
done
