#!/bin/sh
# temporary: one device call of this session (not committed)
set -u
D=$PWD/.devdeps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu PYTHONUNBUFFERED=1
make -j16 NO_DEPS=1 build/libaicprof.so >$OUT/build.log 2>&1 || tail -5 $OUT/build.log
mkdir -p /tmp/w
for s in llama_train gpt2_train; do
	AICPROF_OUTPUT=/tmp/w/$s.aicp.jsonl LD_PRELOAD=$PWD/build/libaicprof.so timeout 90 python3 samples/$s.py >/tmp/w/$s.out 2>/tmp/w/$s.err
	echo "$s rc=$? $(grep -c '"t":"kernel"' /tmp/w/$s.aicp.jsonl) kernels $(grep -c '"x":"' /tmp/w/$s.aicp.jsonl) with x"
	tail -2 /tmp/w/$s.err
done
(cd /tmp/w && tar czf $OUT/rec.tgz *.aicp.jsonl)
timeout 170 python3 tests/gpu/kbench.py --iters 50 --pkg-gpt2 $PWD/.kb/gpt2 --pkg-llama $PWD/.kb/llama >$OUT/kbench.jsonl 2>$OUT/kbench.err
cat $OUT/kbench.jsonl; grep -v Warn $OUT/kbench.err | tail -8
