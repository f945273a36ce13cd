#!/bin/sh
# Every generated CUDA file compiles: analyze and fuse each sample trace, then compile every .cu
# that fuse wrote (the forward and backward kernels, the C ABI, the CPU checks and the bench
# harness; not the PyTorch binding, which needs torch's headers) with nvcc -arch=sm_90 -c, two
# at a time. Needs the CUDA toolkit (CUDA_HOME, else /usr/local/cuda, else PATH), no GPU; without
# nvcc every line is a skip. One line per sample; a failing file is named with nvcc's first
# error as TAP diagnostics.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || NVCC=$(command -v nvcc)
SAMPLES="mlp_train attention_train chain gpt2_train llama_train resnet_train cupy_loop"

if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
	for s in $SAMPLES; do ok "$s: generated .cu files compile with nvcc # skip no nvcc"; done
	exit 0
fi

total=0
for s in $SAMPLES; do
	(cd "$top" && "$A" analyze -q --no-report "samples/traces/$s.aicp.jsonl" -o "$tmp/$s.a") &&
		"$A" fuse "$tmp/$s.a" -o "$tmp/$s.f" >"$tmp/$s.out" 2>&1
	if [ $? != 0 ]; then
		nok "$s: analyze and fuse exit 0"
		sed 's/^/# /' "$tmp/$s.out" | head -5
		continue
	fi
	find "$tmp/$s.f" -name '*.cu' ! -name '*_binding.cu' | sort >"$tmp/$s.list"
	n=$(wc -l <"$tmp/$s.list")
	total=$((total + n))
	# each file: nvcc -c, its log beside it, FAIL <file> on stdout when it does not compile
	xargs -P 2 -I{} sh -c '"$1" -arch=sm_90 -c "$2" -o "$2.o" >"$2.log" 2>&1 || echo "FAIL $2"' \
		sh "$NVCC" {} <"$tmp/$s.list" >"$tmp/$s.fail"
	if [ -s "$tmp/$s.fail" ]; then
		nok "$s: the $n generated .cu files compile with nvcc -arch=sm_90"
		while read -r _ f; do
			echo "# ${f#"$tmp/"}: $(grep -m1 'error' "$f.log")"
		done <"$tmp/$s.fail"
	else
		ok "$s: the $n generated .cu files compile with nvcc -arch=sm_90"
	fi
done
# the samples must give something to compile (mlp_train alone generates four groups)
check "some generated files were compiled ($total)" test "$total" -gt 20
