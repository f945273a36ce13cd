#!/bin/sh
# The one call on the device machine: build what runs there, run make gpu-test (and the
# fusion suite when present), and leave traces and logs in $OUT.
#   device run: sh tests/gpu/device.sh      (carry: .devdeps, from ../shared/device/fetch-deps.sh
#   with Graphviz's libraries named: `../shared/device/fetch-deps.sh libgraphviz-dev libcgraph6
#   libgvc6 libcdt5 libpathplan4 libxdot4 libltdl7`; without them only the shim builds, and
#   whatever needs build/aicprof there (kbench's and e2e's fuse, the suite's analyses) fails)
# $OUT gets: gpu.log (everything), traces.tar.gz (the recorded traces), bench.jsonl.
# GPU_BENCH=0 skips the overhead benchmark (about 90 s); GPU_SUITE=0 skips make gpu-test's
# capture suite; GPU_T="tests/gpu/t-ddp.sh ..." runs only those of the t-*.sh files (after the
# suite); GPU_REAL=1 runs tests/gpu/real.sh after them; GPU_PAR="tests/gpu/t-fusion.sh ..." runs those on the second GPU, beside the suite.
# GPU_STRESS=1 runs tests/gpu/stress.sh (STRESS_* settings), GPU_OVH=1 tests/gpu/overhead.sh
# (OVH_* settings) and GPU_E2E=1 tests/gpu/e2e_gpt2.py (E2E_ROUNDS rounds, default 3, within
# E2E_BUDGET seconds, default 300; E2E_MODEL gpt2, resnet, llama, qwen2 or gemma, or several
# in turn; E2E_ARGS more arguments, e.g. --profile) at the end; GPU_KBENCH=1
# tests/gpu/kbench.py (the package's kernels against eager and torch.compile, $OUT/kbench.jsonl;
# KBENCH_ARGS=--large adds the sizes past the L2)
# and GPU_NCU=1 tests/gpu/ncu_fidelity.sh (ncu's DRAM counters beside the shim's traces, into
# $OUT/ncu/; compare offline with tests/tools/ncu-compare.py). GPU_CF=1 runs
# tests/gpu/cupti-floor.sh (CUPTI's own cost a launch, CF_* settings) and GPU_WH=1
# tests/gpu/window-hang.sh (the window's close, repeated, stacks on a hang) before the suite.
# GPU_REC="llama_train gpt2_train" records those samples under the shim first, into
# $OUT/rec.tgz (one file: $OUT returns only a few files; the bundled samples/traces come so).
# GPU_FB="TRACE.aicp.jsonl G.json ..." fuses each and runs `aicprof bench` on it (bench.json
# files into $OUT/fb.tgz). GPU_HX=DIR runs the bench harnesses that tests/tools/hx-build.sh
# built there (two generators' kernels of the same groups), HX_ROUNDS rounds alternating;
# GPU_COLCMP="G.json[:ROWSxCOLS] ..." times torch.compile's kernels for such groups after them.
# GPU_WRAP=1 runs tests/gpu/wrap_cost.py (the package wrapper's host cost a call) on the Llama
# sample's package fused by this tree, WRAP_ROUNDS times (default 2), alternating with WRAP_OLD
# (another package directory, e.g. one fused by an older tree) when set.
# GPU_KCMP="LABEL=FUSEDDIR ..." runs kbench.py's fused form of each package side by side
# (KCMP_ONLY functions, default rmsnorm; KCMP_ROUNDS rounds alternating, default 2; --large),
# after one run of the eager and torch.compile forms, into $OUT/kcmp.jsonl.
# The order: build, GPU_REC, GPU_CF, GPU_WH, GPU_FB, GPU_HX, GPU_WRAP, GPU_KCMP, the suite
# (about 270 s on an H100 without GPU_BENCH), GPU_T, GPU_REAL, GPU_STRESS, GPU_OVH, GPU_E2E,
# GPU_KBENCH, GPU_NCU. A call is limited to 600 s: the suite after a GPU_KCMP of four packages and two
# functions (about 250 s) was cut (session 25), so give the suite a call of its own.
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
	# a warm device keeps build/ between calls, and the copied sources may carry older mtimes
	# than its objects: make would call a stale build up to date. Rebuild when the sources'
	# contents changed.
	h=$(sh tests/gpu/srchash.sh)
	echo "sources $h (tests/gpu/srchash.sh)"
	if [ "$(cat build/.src-hash 2>/dev/null)" != "$h" ]; then
		rm -rf build && mkdir -p build && echo "$h" >build/.src-hash
		echo "sources changed: clean build"
	fi
	make -j8 NO_DEPS=1 CUDA_HOME="$CUDA_HOME" build/libaicprof.so 2>&1 | tail -3
	if [ -d "$D" ]; then
		make -j8 NO_DEPS=1 CUDA_HOME="$CUDA_HOME" \
			EXTRA_CFLAGS="-I$D/usr/include -I$D/usr/include/cjson -I$D/usr/include/graphviz" \
			EXTRA_LDFLAGS="-L$D/usr/lib/x86_64-linux-gnu -Wl,-rpath,$D/usr/lib/x86_64-linux-gnu -Wl,-rpath-link,$D/lib/x86_64-linux-gnu" \
			build/aicprof 2>&1 | tail -3
		[ -x build/aicprof ] || echo "# build/aicprof did not build: does .devdeps hold Graphviz (this file's header)?"
	fi
	if [ -n "${GPU_REC:-}" ]; then
		rw=$(mktemp -d)
		for s in $GPU_REC; do
			AICPROF_OUTPUT=$rw/$s.aicp.jsonl LD_PRELOAD=$PWD/build/libaicprof.so timeout 120 \
				python3 samples/$s.py >"$rw/$s.out" 2>"$rw/$s.err"
			echo "# recorded $s: exit $?, $(grep -c '"t":"kernel"' "$rw/$s.aicp.jsonl") kernels, $(grep -c '"x":"' "$rw/$s.aicp.jsonl") launches with closure bytes"
		done
		(cd "$rw" && tar czf "$OUT/rec.tgz" *.aicp.jsonl)
		rm -rf "$rw"
	fi
	[ "${GPU_CF:-0}" = 1 ] && OUT=$OUT sh tests/gpu/cupti-floor.sh
	[ "${GPU_WH:-0}" = 1 ] && OUT=$OUT sh tests/gpu/window-hang.sh
	# GPU_FB="TRACE.aicp.jsonl G.json ...": fuse each trace (analyze first) or group file and
	# `aicprof bench` the result; the tables go to gpu.log, the bench.json files to $OUT/fb.tgz
	if [ -n "${GPU_FB:-}" ]; then
		fb=$(mktemp -d)
		for f in $GPU_FB; do
			n=$(basename "$f" | sed 's/\.aicp\.jsonl$//; s/\.json$//')
			case $f in
			*.aicp.jsonl) build/aicprof analyze "$f" -o "$fb/$n.a" >/dev/null 2>&1 &&
				build/aicprof fuse "$fb/$n.a" -o "$fb/$n" --src /nonexistent >/dev/null 2>&1 ;;
			*) build/aicprof fuse --group "$f" -o "$fb/$n" >/dev/null 2>&1 ;;
			esac
			echo "== aicprof bench $n (fuse exit $?)"
			timeout 240 build/aicprof bench "$fb/$n" 2>&1 | grep -v '^aicprof: \(building\|running\)'
			echo "# bench $n: exit $?"
			cp "$fb/$n/bench.json" "$fb/$n.bench.json" 2>/dev/null
		done
		(cd "$fb" && tar czf "$OUT/fb.tgz" *.bench.json 2>/dev/null)
		rm -rf "$fb"
	fi
	# GPU_HX=DIR: every executable in DIR (bench harnesses from tests/tools/hx-build.sh, named
	# GROUP__REV), HX_ROUNDS rounds (default 2) in turn, HX_ARGS (default --samples 50); each
	# harness's JSON line into $OUT/hx.jsonl with its name and round, a table into gpu.log
	if [ -n "${GPU_HX:-}" ]; then
		echo "== bench harnesses side by side ($GPU_HX)"
		for r in $(seq "${HX_ROUNDS:-2}"); do
			for h in "$GPU_HX"/*; do
				[ -x "$h" ] || continue
				j=$(timeout 60 "$h" ${HX_ARGS:---samples 50} 2>>"$OUT/hx.err" | grep '^{' | tail -1)
				[ -n "$j" ] || j='{"ok":false}'
				echo "{\"harness\":\"$(basename "$h")\",\"round\":$r,${j#\{}" >>"$OUT/hx.jsonl"
				echo "$(basename "$h") round $r: $(echo "$j" | grep -o '"ok":[a-z]*\|"after_us":[0-9.]*\|"copy_us":[0-9.]*\|"config":{[^}]*}' | tr '\n' ' ')"
			done
		done
	fi
	# GPU_COLCMP="tests/fusion/bnr.json:131072x64 ...": torch.compile's kernels for the same
	# column groups, timed as the harnesses time theirs (tests/gpu/colcmp.py), into $OUT/colcmp.jsonl
	if [ -n "${GPU_COLCMP:-}" ]; then
		echo "== torch.compile's column reductions (tests/gpu/colcmp.py)"
		timeout 300 python3 tests/gpu/colcmp.py $GPU_COLCMP 2>&1 | tee -a "$OUT/colcmp.jsonl"
	fi
	if [ "${GPU_WRAP:-0}" = 1 ]; then
		echo "== the wrapper's host cost a call (tests/gpu/wrap_cost.py)"
		wr=$(mktemp -d)
		build/aicprof analyze samples/traces/llama_train.aicp.jsonl -o "$wr/a" >/dev/null 2>&1 &&
			build/aicprof fuse "$wr/a" -o "$wr/f" --src /nonexistent >/dev/null 2>&1
		for r in $(seq "${WRAP_ROUNDS:-2}"); do
			timeout 120 python3 tests/gpu/wrap_cost.py "$wr/f" new 2>&1 | tail -3
			[ -n "${WRAP_OLD:-}" ] && timeout 120 python3 tests/gpu/wrap_cost.py "$WRAP_OLD" old 2>&1 | tail -3
		done
		rm -rf "$wr"
	fi
	if [ -n "${GPU_KCMP:-}" ]; then
		echo "== packages side by side (kbench.py --forms fused)"
		python3 tests/gpu/kbench.py --only "${KCMP_ONLY:-rmsnorm}" --large --iters 50 \
			--forms eager,compile --label reference 2>&1 | tee -a "$OUT/kcmp.jsonl"
		for r in $(seq "${KCMP_ROUNDS:-2}"); do
			for lp in $GPU_KCMP; do
				timeout 200 python3 tests/gpu/kbench.py --only "${KCMP_ONLY:-rmsnorm}" --large \
					--iters 50 --forms fused --label "${lp%%=*}" \
					--pkg-llama "${lp#*=}" --pkg-gpt2 "${lp#*=}" 2>&1 | tee -a "$OUT/kcmp.jsonl"
			done
		done
	fi
	# GPU_PAR: t-*.sh files run on the second GPU while the suite runs on the first
	ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	par=
	if [ -n "${GPU_PAR:-}" ] && [ "$ngpu" -ge 2 ]; then
		(for t in $GPU_PAR; do CUDA_VISIBLE_DEVICES=1 GPU_OUT=$OUT/gpu sh "$t"; done \
			>"$OUT/par.log" 2>&1) &
		par=$!
	fi
	if [ "${GPU_SUITE:-1}" = 1 ]; then
		if [ -n "$par" ]; then
			CUDA_VISIBLE_DEVICES=0 GPU_OUT=$OUT/gpu sh tests/gpu/run.sh
		else
			GPU_OUT=$OUT/gpu sh tests/gpu/run.sh
		fi
	fi
	[ -n "$par" ] && wait "$par" && echo "== on the second GPU: $GPU_PAR" && cat "$OUT/par.log"
	for t in ${GPU_T:-tests/gpu/t-*.sh}; do [ -f "$t" ] && GPU_OUT=$OUT/gpu sh "$t"; done
	# GPU_REAL=1: the real programs (tests/gpu/real.sh: recordings, JAX stress; REAL_* settings)
	if [ "${GPU_REAL:-0}" = 1 ]; then
		OUT=$OUT sh tests/gpu/real.sh
		cat "$OUT/real.log"
	fi
	if [ "${GPU_STRESS:-0}" = 1 ]; then
		OUT=$OUT sh tests/gpu/stress.sh
	fi
	if [ "${GPU_OVH:-0}" = 1 ]; then
		OUT=$OUT sh tests/gpu/overhead.sh
	fi
	if [ "${GPU_E2E:-0}" = 1 ]; then
		for m in ${E2E_MODEL:-gpt2}; do
			echo "== $m end to end (tests/gpu/e2e_gpt2.py)"
			python3 tests/gpu/e2e_gpt2.py --model "$m" --rounds "${E2E_ROUNDS:-3}" \
				--steps 20 --budget "${E2E_BUDGET:-300}" ${E2E_ARGS:-} 2>&1 | tee -a "$OUT/e2e.jsonl"
		done
	fi
	if [ "${GPU_KBENCH:-0}" = 1 ]; then
		echo "== kernels against eager and torch.compile (tests/gpu/kbench.py)"
		python3 tests/gpu/kbench.py --iters 50 ${KBENCH_ARGS:-} 2>&1 | tee "$OUT/kbench.jsonl"
	fi
	if [ "${GPU_NCU:-0}" = 1 ]; then
		echo "== ncu's DRAM counters (tests/gpu/ncu_fidelity.sh)"
		sh tests/gpu/ncu_fidelity.sh "$OUT/ncu"
	fi
	echo "# all: $(grep -c '^ok' "$OUT/gpu.log") ok, $(grep -c '^not ok' "$OUT/gpu.log") not ok (par.log included: $(grep -c '^ok' "$OUT/par.log" 2>/dev/null) ok, $(grep -c '^not ok' "$OUT/par.log" 2>/dev/null) not ok)"
} >"$OUT/gpu.log" 2>&1
cp "$OUT/gpu/bench.jsonl" "$OUT/" 2>/dev/null
[ -d "$OUT/gpu" ] && (cd "$OUT/gpu" && tar czf "$OUT/traces.tar.gz" *.aicp.jsonl *.stderr 2>/dev/null)
rm -rf "$OUT/gpu"
grep -E '^(ok|not ok|#)|passed,' "$OUT/gpu.log" | tail -80
