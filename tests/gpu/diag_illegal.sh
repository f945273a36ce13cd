#!/bin/sh
# diag_illegal.sh - where the shim's process aborts after a kernel's illegal address (faults.py
# "illegal": exit code 3 bare, SIGABRT under the shim). Builds the shim and the faulting kernel,
# runs the program under the shim with Python's faulthandler and, where gdb exists, under gdb
# for the native backtrace of the abort. Output on stdout. Run on the device from the root.
set -u
CUDA_HOME=${CUDA_HOME:-$(ls -d /usr/local/cuda-13* /usr/local/cuda 2>/dev/null | head -1)}
make -j8 NO_DEPS=1 CUDA_HOME="$CUDA_HOME" build/libaicprof.so >/dev/null 2>&1 || echo "# shim build failed"
d=$(mktemp -d)
python3 - "$d" <<'PY'
import re, sys
src = open("tests/gpu/faults.py").read()
cu = re.search(r'CU = r"""(.*?)"""', src, re.S).group(1)
open(sys.argv[1] + "/fault.cu", "w").write(cu)
pre = re.search(r'PRELUDE = """(.*?)"""', src, re.S).group(1)
open(sys.argv[1] + "/illegal.py", "w").write(pre + """
import ctypes
lib = ctypes.CDLL(%r)
r = lib.bad_launch()
print("bad_launch returned", r, flush=True)
sys.exit(3 if r != 0 else 4)
""" % (sys.argv[1] + "/fault.so"))
PY
"$CUDA_HOME/bin/nvcc" -shared -Xcompiler -fPIC -o "$d/fault.so" "$d/fault.cu" || echo "# nvcc failed"
echo "== bare"; python3 "$d/illegal.py"; echo "rc=$?"
echo "== shim, faulthandler, AICPROF_DEBUG=1"
AICPROF_DEBUG=1 LD_PRELOAD=$PWD/build/libaicprof.so python3 -X faulthandler "$d/illegal.py" 2>&1 | tail -40
echo "== shim, AICPROF_ALLOC_BACKEND=0 (PyTorch's own allocator, as without the shim)"
AICPROF_ALLOC_BACKEND=0 LD_PRELOAD=$PWD/build/libaicprof.so python3 "$d/illegal.py" 2>&1 | tail -3
AICPROF_ALLOC_BACKEND=0 LD_PRELOAD=$PWD/build/libaicprof.so python3 "$d/illegal.py" >/dev/null 2>&1; echo "rc=$?"
echo "== no shim, PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync"
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync python3 "$d/illegal.py" >/dev/null 2>&1; echo "rc=$?"
echo "== shim, AICPROF_ACTIVITY=0"
AICPROF_ACTIVITY=0 LD_PRELOAD=$PWD/build/libaicprof.so python3 "$d/illegal.py" 2>&1 | tail -3; echo "rc=$?"
if [ -n "${DIAG_GDB:-}" ] && command -v gdb >/dev/null; then
	echo "== gdb"
	timeout 120 gdb -q -batch -ex "set confirm off" -ex "set pagination off" \
		-ex "set environment LD_PRELOAD=$PWD/build/libaicprof.so" -ex run -ex bt \
		-ex "info threads" --args python3 "$d/illegal.py" 2>&1 | grep -v "^\[New Thread\|^\[Thread" | tail -60
else
	echo "# no gdb on this machine"
fi
