# aicprof fuse: each fixture of tests/fusion generates its files; each bad one fails naming the
# file and the fault, writing nothing; a summary's candidates become kernels or advice; every
# generated kernel and bench harness compiles with nvcc (sm_90; nothing runs on a GPU here); the
# CPU check of each group's fused math against an op-by-op double evaluation passes; bench
# without nvcc or without a GPU says so.
. "$(dirname "$0")/lib.sh"
fx=$top/tests/fusion
A=$B/aicprof

for f in mlp:mlp_gelu_dropout_add attn:attn_softmax ln_gelu:ln_gelu f32chain:f32_chain rotary_map:rotary_map; do
	fix=${f%%:*}; g=${f#*:}
	"$A" fuse --group "$fx/$fix.json" -o "$tmp/$fix" >"$tmp/out" 2>&1; rc=$?
	check "fuse $fix.json exits 0" test "$rc" = 0
	for s in _math.h _kernel.cu _binding.cu .py _bench.cu _cpucheck.cu .meta.json; do
		[ -s "$tmp/$fix/$g/$g$s" ] || nok "fuse $fix.json wrote $g$s"
	done
	check "fuse $fix.json lists the group in README.md and groups.json" sh -c \
		"grep -q '### $g' '$tmp/$fix/README.md' && grep -q '\"$g\"' '$tmp/$fix/groups.json'"
done
g=rotary_map
check "rotary_map.json (inputs read through index maps): no CuPy form, no backward, the module's writes flat of the recorded 4096 elements, its C ABI holds the sizes" sh -c "
	test ! -e '$tmp/rotary_map/$g/${g}_cupy.py' &&
	grep -q '^HAS_BACKWARD = False' '$tmp/rotary_map/$g/$g.py' &&
	grep -q '^_NUMEL = 4096' '$tmp/rotary_map/$g/$g.py' &&
	grep -q 'if (in_numel\[2\] != 8192LL || n != 4096LL)' '$tmp/rotary_map/$g/${g}_capi.cu'"
check "README explains what of dropout is and is not bit-identical" \
	grep -q "Not identical: the mask itself" "$tmp/mlp/README.md"

for b in unknown-op:"unknown op 'frobnicate'" missing-field:"missing field 'p'" \
	wrong-type:"field 'numel' must be a number" undefined-arg:"undefined name 'bias'" \
	cycle:"'b' is defined by a later op"; do
	name=${b%%:*}; msg=${b#*:}
	"$A" fuse --group "$fx/bad-$name.json" -o "$tmp/bad-$name" 2>"$tmp/err"; rc=$?
	check "bad-$name.json: exit 1" test "$rc" = 1
	check "bad-$name.json: the message names the file and says $msg" \
		grep -qF "bad-$name.json: " "$tmp/err"
	grep -qF "$msg" "$tmp/err" || { nok "bad-$name.json: message '$(cat "$tmp/err")'"; }
	check "bad-$name.json: nothing written" test ! -e "$tmp/bad-$name"
done

# a summary: one generated, three reported as advice (library form, bad group, no group)
mkdir -p "$tmp/an"
python3 - "$fx/mlp.json" "$fx/bad-unknown-op.json" >"$tmp/an/summary.json" <<'PY'
import json, sys
good = json.load(open(sys.argv[1])); del good["name"]
bad = json.load(open(sys.argv[2]))
c = [{"id": 0, "kind": "elementwise-chain", "sources": ["train.py:14"], "library_form": None,
      "group": good, "time_before_us": 120.5},
     {"id": 1, "kind": "gemm-epilogue", "library_form": "cuBLASLt epilogue GELU_BIAS"},
     {"id": 2, "kind": "elementwise-chain", "library_form": None, "group": bad},
     {"id": 3, "kind": "optimizer-horizontal", "library_form": None}]
print(json.dumps({"format": 1, "candidates": c}))
PY
"$A" fuse "$tmp/an" -o "$tmp/fz" >"$tmp/out" 2>&1; rc=$?
check "fuse OUTDIR exits 0" test "$rc" = 0
check "fuse OUTDIR generates candidate 0 as c0" test -s "$tmp/fz/c0/c0_kernel.cu"
check "fuse OUTDIR keeps the recorded time for the bench" grep -q '"recorded_before_us": 120.5' \
	"$tmp/fz/c0/c0.meta.json"
check "README gives the GEMM epilogue's library form with the call to make, once" sh -c "
	grep -q 'finding #1 (cuBLASLt epilogue GELU_BIAS): not rewritten (a GEMM epilogue is not rewritten in the source); for a 2-D input, .torch._addmm_activation(bias, x, weight.t(), use_gelu=True).' '$tmp/fz/README.md' &&
	test \$(grep -c 'finding #1' '$tmp/fz/README.md') = 1"
check "README reports the unsupported op as advice" \
	grep -q "finding #2: .*unknown op 'frobnicate'" "$tmp/fz/README.md"
check "README reports the candidate without a group" \
	grep -q "finding #3: optimizer-horizontal: no group description" "$tmp/fz/README.md"
"$A" fuse "$tmp/nowhere" -o "$tmp/fz2" 2>"$tmp/err"; rc=$?
check "fuse of a missing summary fails naming it" sh -c \
	"test $rc = 1 && grep -q 'nowhere/summary.json' '$tmp/err'"

# nvcc: kernels (-c) and harnesses (full build) compile; the CPU checks pass
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
	nok "nvcc not found (set CUDA_HOME to the CUDA toolkit): the generated code is not compiled"
else
	for gd in "$tmp"/mlp/*/ "$tmp"/attn/*/ "$tmp"/ln_gelu/*/ "$tmp"/f32chain/*/ "$tmp"/rotary_map/*/; do
		g=$(basename "$gd")
		(
			cd "$gd" || exit 1
			"$NVCC" -arch=sm_90 -c "${g}_kernel.cu" -o kernel.o >kernel.log 2>&1
			echo $? >kernel.rc
			"$NVCC" -O3 -arch=sm_90 -o "${g}_bench" "${g}_bench.cu" >bench.log 2>&1
			echo $? >bench.rc
			"$NVCC" -o "${g}_cpucheck" "${g}_cpucheck.cu" >cpucheck.log 2>&1 &&
				"./${g}_cpucheck" >cpucheck.out 2>&1
			echo $? >cpucheck.rc
		) &
	done
	wait
	for gd in "$tmp"/mlp/*/ "$tmp"/attn/*/ "$tmp"/ln_gelu/*/ "$tmp"/f32chain/*/ "$tmp"/rotary_map/*/; do
		g=$(basename "$gd")
		check "$g: nvcc -arch=sm_90 -c of the kernel" test "$(cat "$gd/kernel.rc")" = 0
		check "$g: nvcc full build of the bench harness" test "$(cat "$gd/bench.rc")" = 0
		check "$g: no nvcc warnings" sh -c "! grep -q 'warning' '$gd/kernel.log' '$gd/bench.log'"
		cat "$gd/kernel.log" "$gd/bench.log" | grep -m5 -i 'error\|warning' | sed 's/^/# /'
		check "$g: CPU check of the fused math against op-by-op double" \
			test "$(cat "$gd/cpucheck.rc")" = 0
		cat "$gd/cpucheck.out" | sed 's/^/# /'
	done
	g=mlp_gelu_dropout_add
	if [ ! -e /dev/nvidiactl ]; then
		"$tmp/mlp/$g/${g}_bench" --info 2>"$tmp/err"; rc=$?
		check "the harness without a GPU exits 3 saying so" sh -c \
			"test $rc = 3 && grep -q 'no CUDA device' '$tmp/err'"
		"$A" bench "$tmp/mlp" 2>"$tmp/err"; rc=$?
		check "bench without a GPU exits 1 saying so" sh -c \
			"test $rc = 1 && grep -q 'no GPU' '$tmp/err'"
	fi
fi
AICPROF_NVCC=/no/such/nvcc "$A" bench "$tmp/mlp" 2>"$tmp/err"; rc=$?
check "bench without nvcc exits 1 saying so" sh -c "test $rc = 1 && grep -q 'no nvcc' '$tmp/err'"
"$A" bench "$tmp/nowhere" 2>"$tmp/err"; rc=$?
check "bench of a directory fuse did not write fails" sh -c \
	"test $rc = 1 && grep -q 'run .aicprof fuse. first' '$tmp/err'"
