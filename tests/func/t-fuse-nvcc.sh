#!/bin/sh
# Every generated CUDA file compiles: analyze and fuse each sample trace (ddp_train.rank1's groups
# are rank0's; jax_train's XLA kernels give none), then compile every .cu
# that fuse wrote (the forward and backward kernels, the C ABI, the CPU checks and the bench
# harness; not the PyTorch binding, which needs torch's headers) with nvcc -arch=sm_90 -c, two
# at a time; of groups whose files differ only in the group's name (one chain in every layer)
# the first is compiled. Needs the CUDA toolkit (CUDA_HOME, else /usr/local/cuda, else PATH), no GPU; without
# nvcc every line is a skip. One line per sample; a failing file is named with nvcc's first
# error as TAP diagnostics. Then the CPU checks of the fixtures of the ops real models need
# (tests/fusion/gelu_tanh_chain.json, ops_chain.json, ops_nobwd.json, fill_chain.json: constants,
# geglu.json: a gated MLP's gelu_tanh(gate) * up with its backward rule;
# one kept; lsb.json and lnb.json: the
# backward of log_softmax and layer_norm's input gradient; gbb.json and bnb.json: column groups,
# layer norm's dgamma and dbeta, and a channels-last batch norm backward's per-channel sums after
# relu's backward, which it keeps; bnr.json: ResNet's relu backward -> batch_norm_backward_reduce_
# channels_last_kernel as the analyzer writes it, sum_dy, sum_dy_xmu, grad_weight and grad_bias;
# rms_bf16.json and rms_res.json: RMS norms whose fused backward is a row group and a column
# group, its CPU check also comparing the gradients with the forward's directional derivatives)
# are built and run.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
SAMPLES="mlp_train attention_train chain gpt2_train llama_train resnet_train cupy_loop vit_train mlp_probe
attention_probe ddp_train.rank0"

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
	# one group of each text: groups whose files are the same but for the group's name (the
	# same chain in every layer) compile alike, so only the first of them is compiled
	: >"$tmp/$s.list"
	for gd in "$tmp/$s.f"/*/ "$tmp/$s.f"/aicprof_fused/*/; do
		[ -d "$gd" ] && [ "$gd" != "$tmp/$s.f/aicprof_fused/" ] || continue
		g=$(basename "$gd")
		G=$(echo "$g" | tr a-z A-Z)
		h=$(cat "$gd"*.cu "$gd"*.h | sed "s/$g/GROUP/g; s/$G/GROUP/g" | md5sum | cut -c1-32)
		grep -qx "$h" "$tmp/seen" 2>/dev/null && continue
		echo "$h" >>"$tmp/seen"
		ls "$gd"*.cu | grep -v '_binding\.cu$' >>"$tmp/$s.list"
	done
	n=$(wc -l <"$tmp/$s.list")
	total=$((total + n))
	# each file: nvcc -c, its log beside it, FAIL <file> on stdout when it does not compile
	xargs -P 2 -I{} sh -c '"$1" -arch=sm_90 -c "$2" -o "$2.o" >"$2.log" 2>&1 || echo "FAIL $2"' \
		sh "$NVCC" {} <"$tmp/$s.list" >"$tmp/$s.fail"
	if [ -s "$tmp/$s.fail" ]; then
		nok "$s: the $n generated .cu files (one group of each text) compile with nvcc -arch=sm_90"
		while read -r _ f; do
			echo "# ${f#"$tmp/"}: $(grep -m1 'error' "$f.log")"
		done <"$tmp/$s.fail"
	else
		ok "$s: the $n generated .cu files (one group of each text) compile with nvcc -arch=sm_90"
	fi
	# and without warnings (a user builds them with their own flags)
	w=$(while read -r f; do grep -l -i 'warning' "$f.log" 2>/dev/null; done <"$tmp/$s.list")
	if [ -n "$w" ]; then
		nok "$s: nvcc warns about none of them"
		for f in $w; do echo "# ${f#"$tmp/"}: $(grep -m1 -i 'warning' "$f")"; done | head -5
	else
		ok "$s: nvcc warns about none of them"
	fi
done
# the fixtures of the ops real models need: their CPU checks (the fused math, and the fused
# backward's, against an op-by-op double evaluation) build and pass
for f in gelu_tanh_chain ops_chain ops_nobwd fill_chain geglu lsb lnb gbb bnb bnr rms_bf16 rms_res; do
	"$A" fuse --group "$top/tests/fusion/$f.json" -o "$tmp/fx_$f" >"$tmp/fx_$f.out" 2>&1
	gd=$(ls -d "$tmp/fx_$f"/*/ | head -1)
	g=$(basename "$gd")
	check "$f: the CPU check of $g passes" sh -c \
		'cd "$1" && "$2" -o cpucheck "$3_cpucheck.cu" >c.log 2>&1 && ./cpucheck >c.out 2>&1' \
		sh "$gd" "$NVCC" "$g"
	if [ -f "$gd${g}_bwd_cpucheck.cu" ]; then
		# the C ABI holds every kernel of the forward and its backward (row and column
		# groups, both row kernels): the fixtures' shapes reach code the samples' do not
		# (two summed row vectors in rms_res)
		check "$f: its C ABI with all its kernels compiles with nvcc, no warning" sh -c \
			'cd "$1" && "$2" -arch=sm_90 -c "$3_capi.cu" -o capi.o >capi.log 2>&1 &&
			 ! grep -qi warning capi.log' sh "$gd" "$NVCC" "$g"
		check "$f: the CPU check of its fused backward passes" sh -c \
			'cd "$1" && "$2" -o bwdcheck "$3_bwd_cpucheck.cu" >b.log 2>&1 && ./bwdcheck >b.out 2>&1' \
			sh "$gd" "$NVCC" "$g"
	fi
	if [ -f "$gd${g}_bwdc_cpucheck.cu" ]; then
		check "$f: the CPU check of its fused backward's column sums passes" sh -c \
			'cd "$1" && "$2" -o bwdccheck "$3_bwdc_cpucheck.cu" >bc.log 2>&1 && ./bwdccheck >bc.out 2>&1' \
			sh "$gd" "$NVCC" "$g"
	fi
done
check "rms_bf16 and rms_res (row groups with rms_norm) have a fused backward whose gradients match the forward's" sh -c \
	'grep -q "^_FUSED_BWD = True" "$1"/fx_rms_bf16/rms_bf16/rms_bf16.py &&
	 grep -q "^_FUSED_BWD = True" "$1"/fx_rms_res/rms_res/rms_res.py &&
	 grep -q "directional derivative 2" "$1"/fx_rms_res/rms_res/b.out' sh "$tmp"
check "gelu_tanh_chain, ops_chain and geglu (gelu_tanh's rule) have a fused backward, ops_nobwd none" \
	test -f "$tmp"/fx_gelu_tanh_chain/gpt2_new_gelu/gpt2_new_gelu_bwd_cpucheck.cu -a \
	-f "$tmp"/fx_geglu/geglu/geglu_bwd_cpucheck.cu -a \
	-f "$tmp"/fx_ops_chain/ops_chain/ops_chain_bwd_cpucheck.cu -a \
	! -f "$tmp"/fx_ops_nobwd/ops_nobwd/ops_nobwd_bwd_cpucheck.cu
# the samples must give something to compile (mlp_train alone generates four groups)
check "some generated files were compiled ($total)" test "$total" -gt 20
