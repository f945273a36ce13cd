#!/bin/sh
# The package's rotary kernel run on the CPU (tests/tools/rotary_emu.cu): fuse the Llama trace,
# take the kernel's files from aicprof_fused/_rotary/, rewrite each of aic_rotary.cu's launches
# `K<<<grid, block, 0, s>>>(a);` as a call of the emulator's aic_emu_launch, counted by which
# kernel it is (the scalar one; the vector one with 1 head a thread, AIC_RH heads, or q and k
# in one joint grid), and build the harness with nvcc as host code. Its cases check every element of
# forward and backward against the pair formula in double, that nothing outside the results'
# views is written, and that each case took the path it is built for. Needs nvcc, no GPU;
# without nvcc each line is a skip.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
	ok "the rotary kernel's launches rewritten for the CPU # skip no nvcc"
	ok "the rotary kernel on the CPU: every case # skip no nvcc"
	exit 0
fi
(cd "$top" && "$A" analyze -q --no-report samples/traces/llama_train.aicp.jsonl -o "$tmp/a") &&
	"$A" fuse "$tmp/a" -o "$tmp/f" >"$tmp/fuse.out" 2>&1 || sed 's/^/# /' "$tmp/fuse.out"
r=$tmp/f/aicprof_fused/_rotary
# each launch a statement of its own: the vector kernel's (its RH and J template arguments say
# which path) and the scalar kernel's
sed -e 's/aic_rotary_vkernel<\([^,]*\), \([^,]*\), \([^,]*\), \([^,]*\), \([^,]*\), \([^>]*\)><<<\([^,]*\), \([^,]*\), 0, s>>>(a);/{ aic_emu_paths[(\6) ? 3 : (\5) > 1 ? 2 : 1]++; aic_emu_launch(\7, \8, [\&]() { aic_rotary_vkernel<\1, \2, \3, \4, \5, \6>(a); }); }/' \
	-e 's/aic_rotary_kernel<\([^>]*\)><<<\([^,]*\), \([^,]*\), 0, s>>>(a);/{ aic_emu_paths[0]++; aic_emu_launch(\2, \3, [\&]() { aic_rotary_kernel<\1>(a); }); }/' \
	"$r/aic_rotary.cu" >"$r/aic_rotary_emu.cu" 2>/dev/null
n=$(grep -c 'aic_emu_launch(' "$r/aic_rotary_emu.cu" 2>/dev/null)
check "the rotary kernel's 8 launches rewritten for the CPU, none left (got ${n:-0})" \
	sh -c "[ '${n:-0}' = 8 ] && ! grep -q '<<<' '$r/aic_rotary_emu.cu'"
if "$NVCC" -std=c++17 -O1 -I"$r" -DAIC_EMU_SRC='"aic_rotary_emu.cu"' \
	"$top/tests/tools/rotary_emu.cu" -o "$tmp/emu" >"$tmp/nvcc.log" 2>&1; then
	"$tmp/emu" >"$tmp/emu.out" 2>&1
	rc=$?
	cat "$tmp/emu.out"
	check "the rotary kernel on the CPU: every case (exit $rc)" \
		sh -c "[ $rc = 0 ] && [ \$(grep -c '^ok' '$tmp/emu.out') -ge 18 ] && ! grep -q '^not ok' '$tmp/emu.out'"
else
	nok "the rotary kernel on the CPU: the harness builds with nvcc"
	grep -m3 error "$tmp/nvcc.log" | sed 's/^/# /'
fi
