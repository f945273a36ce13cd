#!/bin/sh
# The one call on the device machine: build what runs there, run make gpu-test (and the
# fusion suite when present), and leave traces and logs in $OUT.
#   device run: sh tests/gpu/device.sh      (carry: .devdeps, from ../shared/device/fetch-deps.sh)
# $OUT gets: gpu.log (everything), traces.tar.gz (the recorded traces), bench.jsonl.
# GPU_BENCH=0 skips the overhead benchmark (about 90 s); GPU_SUITE=0 skips make gpu-test's
# capture suite; GPU_T="tests/gpu/t-ddp.sh ..." runs only those of the t-*.sh files.
set -u
OUT=${OUT:-$PWD/build/device-out}
mkdir -p "$OUT"
D=$PWD/.devdeps
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUDA_HOME=${CUDA_HOME:-$(ls -d /usr/local/cuda-13* /usr/local/cuda 2>/dev/null | head -1)}
export CUDA_HOME PATH=$CUDA_HOME/bin:$PATH
{
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
	python3 -c 'import torch,sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
	make -j8 NO_DEPS=1 CUDA_HOME="$CUDA_HOME" build/libaicprof.so 2>&1 | tail -3
	if [ -d "$D" ]; then
		make -j8 NO_DEPS=1 CUDA_HOME="$CUDA_HOME" \
			EXTRA_CFLAGS="-I$D/usr/include -I$D/usr/include/cjson -I$D/usr/include/graphviz" \
			EXTRA_LDFLAGS="-L$D/usr/lib/x86_64-linux-gnu -Wl,-rpath,$D/usr/lib/x86_64-linux-gnu -Wl,-rpath-link,$D/lib/x86_64-linux-gnu" \
			build/aicprof 2>&1 | tail -3
	fi
	[ "${GPU_SUITE:-1}" = 1 ] && GPU_OUT=$OUT/gpu sh tests/gpu/run.sh
	for t in ${GPU_T:-tests/gpu/t-*.sh}; do [ -f "$t" ] && GPU_OUT=$OUT/gpu sh "$t"; done
} >"$OUT/gpu.log" 2>&1
cp "$OUT/gpu/bench.jsonl" "$OUT/" 2>/dev/null
(cd "$OUT/gpu" && tar czf "$OUT/traces.tar.gz" *.aicp.jsonl *.stderr 2>/dev/null)
rm -rf "$OUT/gpu"
grep -E '^(ok|not ok|#)|passed,' "$OUT/gpu.log" | tail -80
