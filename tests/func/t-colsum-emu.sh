#!/bin/sh
# A column group's kernels run on the CPU (tests/tools/colsum_emu.cu): fuse the ResNet trace,
# take the first group whose meta.json says "column-reduction" (the channels-last batch norm's
# backward, 64 columns), and read from its _kernel.cu and _math.h what the harness needs: the
# args struct's inputs (those with a modulus m_ sorted by how the kernel reads them: at the
# column, or at the row), its writes, the number of column sums and the two kernels'
# __launch_bounds__; a struct with other fields, or names out of the math's order, fails here
# instead of building a harness that checks the wrong thing. Each launch
# `K<<<grid, threads, smem, s>>>(a);` becomes a call of the emulator's aic_emu_launch and each
# `extern __shared__ float buf[];` an aic_emu_shm; the harness is built with nvcc as host code
# and runs each block's threads as fibers with __syncthreads a barrier. Its cases check every
# element of every write against the group's math added up in double, that nothing outside the
# writes changes, and that the narrow-column plan (blockDim.x < 32) and the 32-lane one, one
# chunk and several with the finish kernel, and each vector width were taken. Needs nvcc, no
# GPU; without nvcc each line is a skip.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
	ok "a column group's files read for the CPU harness # skip no nvcc"
	ok "the column kernels' launches rewritten for the CPU # skip no nvcc"
	ok "the column kernels on the CPU: every case # skip no nvcc"
	exit 0
fi
(cd "$top" && "$A" analyze -q --no-report samples/traces/resnet_train.aicp.jsonl -o "$tmp/a") &&
	"$A" fuse "$tmp/a" -o "$tmp/f" --src /nonexistent >"$tmp/fuse.out" 2>&1 ||
	sed 's/^/# /' "$tmp/fuse.out"
gd=
for m in "$tmp"/f/*/*.meta.json; do
	grep -q '"kind": "column-reduction"' "$m" 2>/dev/null && gd=$(dirname "$m") && break
done
g=$(basename "${gd:-none}")
k=$gd/${g}_kernel.cu
h=$gd/${g}_math.h
# the args struct: inputs in_X (with m_X where broadcast), writes w_X, then the sizes and seed
st=$(sed -n "/^struct ${g}_args {/,/^};/p" "$k" 2>/dev/null)
ins=$(printf '%s\n' "$st" | sed -n 's/^	const [^*]*\*in_\([A-Za-z0-9_]*\);$/\1/p')
mods=$(printf '%s\n' "$st" | sed -n 's/^	long m_\([A-Za-z0-9_]*\);.*/\1/p')
wrs=$(printf '%s\n' "$st" | sed -n 's/^	[^*]*\*w_\([A-Za-z0-9_]*\);.*/\1/p')
odd=$(printf '%s\n' "$st" | grep -v -e "^struct ${g}_args {$" -e '^};$' \
	-e '^	const [^*]*\*in_[A-Za-z0-9_]*;$' -e '^	long m_[A-Za-z0-9_]*; /\* broadcast' \
	-e '^	[^*]*\*w_[A-Za-z0-9_]*;' -e '^	long n, rows, cols;$' \
	-e '^	unsigned long long seed, offset;$')
# a broadcast input is one element a column (read at c) or a row (read at [row])
pc= pr= un= pcn= prn=
for n in $mods; do
	if grep -q -e "a\.in_$n + c\b" -e "a\.in_$n\[c\( + j\)\?\]" "$k" &&
		! grep -q "a\.in_$n\[row\]" "$k"; then
		pc="$pc X($n)" pcn="$pcn $n"
	elif grep -q "a\.in_$n\[row\]" "$k" && ! grep -q "a\.in_$n\[c" "$k"; then
		pr="$pr X($n)" prn="$prn $n"
	else
		un="$un $n"
	fi
done
# the math's order of in[] and o[] (its header comment) is the struct's
mi=$(sed -n 's/^ \* in\[\]: *//p' "$h" 2>/dev/null | tr ' ' '\n' | sed 's/^[0-9]*=//' | xargs)
mo=$(sed -n 's/^ \* o\[\]: *//p' "$h" 2>/dev/null | tr ' ' '\n' | sed 's/^[0-9]*=//; s/(kept)$//' |
	xargs)
G=$(sed -n 's/^#define \([A-Z0-9_]*\)_NIN [0-9]*$/\1/p' "$h" 2>/dev/null)
ns=$(sed -n 's/^	float acc\[\([0-9]*\)\]\[V\];$/\1/p' "$k" 2>/dev/null)
lb='^__global__ void __launch_bounds__(\([0-9]*\))'
lbk=$(sed -n "s/$lb ${g}_kernel(.*/\1/p" "$k" 2>/dev/null)
lbf=$(sed -n "s/$lb ${g}_finish(.*/\1/p" "$k" 2>/dev/null)
shape=no
[ -n "$gd" ] && [ -n "$ins" ] && [ -n "$wrs" ] && [ -z "$odd$un" ] &&
	[ "$(echo $ins)" = "$mi" ] && [ "$(echo $wrs)" = "$mo" ] && [ -n "$G" ] && [ -n "$ns" ] &&
	[ -n "$lbk" ] && [ -n "$lbf" ] && grep -q "^#define ${G}_HAS_DROPOUT 0$" "$h" && shape=ok
what="$g: inputs $(echo $ins), per column${pcn:- none}, per row${prn:- none}"
check "a column group's files read for the CPU harness ($what, writes $(echo $wrs), $ns sums)" \
	[ $shape = ok ]
if [ $shape != ok ]; then
	printf '%s\n' "$odd" $un | sed '/^$/d; s/^/# not understood: /'
	nok "the column kernels' launches rewritten for the CPU"
	nok "the column kernels on the CPU: every case"
	exit 0
fi
{
	echo "#define AIC_EMU_G $g"
	echo "#define AIC_EMU_GU $G"
	echo "#define AIC_EMU_NS ${ns:-0}"
	echo "#define AIC_EMU_LB_KERNEL ${lbk:-0}"
	echo "#define AIC_EMU_LB_FINISH ${lbf:-0}"
	echo "#define AIC_EMU_INPUTS(X)$(printf ' X(%s)' $ins)"
	echo "#define AIC_EMU_PERCOL(X)$pc"
	echo "#define AIC_EMU_PERROW(X)$pr"
	echo "#define AIC_EMU_WRITES(X)$(printf ' X(%s)' $wrs)"
	echo "#define AIC_EMU_SRC \"${g}_kernel_emu.cu\""
} >"$gd/emu_conf.h" 2>/dev/null
# each launch K<<<grid, threads, smem, s>>>(args); a statement of its own
re='s/^\([	 ]*\)\([A-Za-z_][A-Za-z0-9_]*\(<[^<>]*>\)\{0,1\}\)<<<\(.*\)>>>(\(.*\));$/'
sed -e "$re"'\1aic_emu_launch("\2", [\&]() { \2(\5); }, \4);/' \
	-e 's/^\([	 ]*\)extern __shared__ float \([A-Za-z_][A-Za-z0-9_]*\)\[\];$/\1aic_emu_shm \2;/' \
	"$k" >"$gd/${g}_kernel_emu.cu" 2>/dev/null
nl=$(grep -c '<<<' "$k" 2>/dev/null)
nr=$(grep -c 'aic_emu_launch(' "$gd/${g}_kernel_emu.cu" 2>/dev/null)
sl=$(grep -c '__shared__' "$k" 2>/dev/null)
sr=$(grep -c 'aic_emu_shm ' "$gd/${g}_kernel_emu.cu" 2>/dev/null)
check "the column kernels' $nl launches and $sl shared arrays rewritten for the CPU, none left" \
	sh -c "[ '${nl:-0}' -ge 2 ] && [ '${nr:-0}' = '${nl:-0}' ] && [ '${sl:-0}' -ge 2 ] &&
	[ '${sr:-0}' = '${sl:-0}' ] && ! grep -q -e '<<<' -e '__shared__' '$gd/${g}_kernel_emu.cu'"
if "$NVCC" -std=c++17 -O1 -I"$gd" -DAIC_EMU_CONF='"emu_conf.h"' "$top/tests/tools/colsum_emu.cu" \
	-o "$tmp/emu" >"$tmp/nvcc.log" 2>&1; then
	"$tmp/emu" >"$tmp/emu.out" 2>&1
	rc=$?
	cat "$tmp/emu.out"
	check "the column kernels on the CPU: every case (exit $rc)" \
		sh -c "[ $rc = 0 ] && [ \$(grep -c '^ok' '$tmp/emu.out') -ge 30 ] &&
		! grep -q '^not ok' '$tmp/emu.out'"
else
	nok "the column kernels on the CPU: the harness builds with nvcc"
	grep -m3 error "$tmp/nvcc.log" | sed 's/^/# /'
fi
