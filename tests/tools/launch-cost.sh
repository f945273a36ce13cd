#!/bin/sh
# The shim's own cost a launch on this machine, no GPU (tests/tools/launch_cost.py): the mock
# driver and CUPTI of tests/mock, the shim preloaded and subscribed at its start
# (AICPROF_EAGER=1), launches fired from Python DEPTH frames deep. Modes, each its own process,
# LC_ROUNDS interleaved rounds: none (the mock with nobody subscribed: the call itself), shim
# (defaults), attrib0, args0; LC_WHAT=blocks times the caching allocator's reports instead;
# LC_WHAT=cold sweeps LC_SWEEP_KB (default 4096) KiB before each launch, as a real program's
# host work leaves the caches (read its AICPROF_SELFTIME=1 parts: the sweep dominates the total).
# A yardstick between versions of the shim's code on one machine; CUPTI's own dispatch is
# tests/gpu/cupti_floor.cu's.
#   sh tests/tools/launch-cost.sh     (after make build/libaicprof.so and the mocks)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
B=$top/build
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
C=${CUDA_HOME:-/usr/local/cuda}
# the shim and every mock it needs: without the mock driver the shim stays off and a "shim"
# run measures the bare call (7 ns against 150 on this machine, session 25)
make -C "$top" -s build/libaicprof.so build/mock/libcupti.so.13 build/mock/libcuda.so.1 \
	build/mock/libc10.so build/mock/libc10_cuda.so >/dev/null || exit 1
cc -O2 -shared -fPIC -I"$C/include" -I"$C/targets/x86_64-linux/include" -I"$C/extras/CUPTI/include" -o "$t/lc.so" "$top/tests/tools/launch_cost.c" -ldl || exit 1
for r in $(seq "${LC_ROUNDS:-3}"); do
	for m in ${LC_MODES:-none shim attrib0 args0}; do
		case $m in
		none) MODE=none LD_LIBRARY_PATH=$B/mock python3 "$top/tests/tools/launch_cost.py" "$t/lc.so" "$B/mock/libcupti.so.13" ;;
		*)
			e=
			[ "$m" = attrib0 ] && e=AICPROF_ATTRIB=0
			[ "$m" = args0 ] && e=AICPROF_ARGS=0
			rm -f "$t/t.jsonl"
			env $e MODE=$m AICPROF_EAGER=1 AICPROF_QUIET=1 AICPROF_CUPTI=$B/mock/libcupti.so.13 \
				AICPROF_OUTPUT="$t/t.jsonl" LD_LIBRARY_PATH=$B/mock LD_PRELOAD=$B/libaicprof.so \
				python3 "$top/tests/tools/launch_cost.py" "$t/lc.so" "$B/mock/libcupti.so.13"
			# a figure of a shim that recorded nothing is not the shim's: say so
			n=$(grep -c '"t":"\(launch\|alloc\)"' "$t/t.jsonl" 2>/dev/null)
			[ "${n:-0}" -gt 0 ] || echo "launch-cost.sh: mode $m: the shim recorded no launch or allocation ($t/t.jsonl): its figure is not the shim's" >&2
			;;
		esac | sed "s/^{/{\"round\":$r,/"
	done
done
