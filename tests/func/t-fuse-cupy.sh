# The CuPy sample's chain (a user ElementwiseKernel, then cp.tanh, cp.multiply, cp.add): the
# analysis leaves the kernel of unknown semantics out and describes the run of CuPy ufuncs
# after it; fuse writes that run's CuPy form (GROUP_cupy.py, a cupy.ElementwiseKernel); the
# module's parameters, its op-by-op reference (run here with numpy standing in for CuPy) and its
# kernel text (compiled with nvcc as device code, as NVRTC will) are checked. No GPU needed.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
(cd "$top" && "$A" analyze -q --no-report samples/traces/cupy_loop.aicp.jsonl -o "$tmp/an") ||
	nok "analyze cupy_loop"
python3 - "$tmp/an/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ch = [c for c in s["candidates"] if c["kind"] == "elementwise-chain"]
def t(ok, d): print(("ok - " if ok else "not ok - ") + d)
t(len(ch) == 1, "cupy: one elementwise chain (%d)" % len(ch))
c = ch[0] if ch else {"nodes": [], "group": None}
g = c.get("group") or {}
names = [s["nodes"][n]["name"] for n in c["nodes"]]
t(names and names[0] == "scale_shift", "cupy: the chain starts with the user's kernel (%s)" % names)
t(g.get("left_out") == [c["nodes"][0]] and g.get("members") == c["nodes"][1:],
  "cupy: the group is the run after it (members %s, left out %s)" % (g.get("members"), g.get("left_out")))
t([o["op"] for o in g.get("ops", [])] == ["tanh", "mul", "add"], "cupy: ops tanh, mul, add from the ufuncs' names")
t(0 < g.get("bytes_saved_per_step", 0) < c.get("bytes_saved_per_step", 0),
  "cupy: the run's bytes (%s) are below the finding's (%s)" % (g.get("bytes_saved_per_step"), c.get("bytes_saved_per_step")))
t("scale_shift" in (c.get("group_why") or "") and "left out" in (c.get("group_why") or ""),
  "cupy: group_why names what was left out")
PY
"$A" fuse "$tmp/an" -o "$tmp/f" >"$tmp/fuse.out" 2>&1
G=$(ls -d "$tmp"/f/c*_tanh_mul_add 2>/dev/null | head -1)
g=$(basename "${G:-none}")
check "fuse writes the CuPy form ($g)" test -s "$G/${g}_cupy.py"
(cd "$top" && "$A" analyze -q --no-report samples/traces/gpt2_train.aicp.jsonl -o "$tmp/g2") &&
	"$A" fuse "$tmp/g2" -o "$tmp/g2f" >/dev/null 2>&1
nbf=0 bad=0
for d in "$tmp"/g2f/*/; do
	n=$(basename "$d")
	grep -q '"dtype": *"bf16"' "$d/$n.meta.json" 2>/dev/null || continue
	nbf=$((nbf + 1))
	[ -e "$d/${n}_cupy.py" ] && bad=$((bad + 1))
done
check "fuse writes no CuPy form for GPT-2's bf16 groups ($nbf groups, $bad with one)" \
	test "$nbf" -gt 0 -a "$bad" = 0
# the module with numpy as cupy: its kernel's parameters and its reference
mkdir -p "$tmp/fake/cupy"
cat >"$tmp/fake/cupy/__init__.py" <<'PY'
# CuPy's names that the generated module uses, over flat lists of floats (no numpy needed)
import math
float32, float16, bool_ = "float32", "float16", "bool"
made = []
class ElementwiseKernel:
    def __init__(self, ins, outs, op, name, preamble=""):
        made.append((ins, outs, op, name, preamble))
    def __call__(self, *a, **k):
        raise RuntimeError("no GPU here")
class A:
    def __init__(self, v): self.v = list(v)
    def astype(self, t): return A(self.v)
    def _z(self, o, f): return A(f(x, y) for x, y in zip(self.v, o.v if isinstance(o, A) else [o] * len(self.v)))
    __add__ = lambda s, o: s._z(o, lambda x, y: x + y)
    __sub__ = lambda s, o: s._z(o, lambda x, y: x - y)
    __mul__ = lambda s, o: s._z(o, lambda x, y: x * y)
    __truediv__ = lambda s, o: s._z(o, lambda x, y: x / y)
    __pow__ = lambda s, o: s._z(o, lambda x, y: x ** y)
    __radd__, __rmul__ = __add__, __mul__
    __rtruediv__ = lambda s, o: s._z(o, lambda x, y: y / x)
    __neg__ = lambda s: A(-x for x in s.v)
def _u(f): return lambda a: A(f(x) for x in a.v)
tanh, exp, log, sqrt, sin, cos = _u(math.tanh), _u(math.exp), _u(math.log), _u(math.sqrt), _u(math.sin), _u(math.cos)
abs = _u(lambda x: -x if x < 0 else x)
def maximum(a, b): return a._z(b, max)
PY
PYTHONPATH=$tmp/fake:$G python3 - "$g" "$tmp/kernel.txt" <<'PY'
import importlib, math, random, sys
import cupy
m = importlib.import_module(sys.argv[1] + "_cupy")
def t(ok, d): print(("ok - " if ok else "not ok - ") + d)
ins, outs, op, name, pre = cupy.made[0]
t(ins == "float32 in0, float32 in1, float32 in2" and outs == "float32 x2",
  "cupy form: the kernel's parameters (%s -> %s)" % (ins, outs))
r = random.Random(0)
a, b, c = ([0.5 + r.random() for _ in range(64)] for _ in range(3))
got = m._unfused(cupy.A(a), cupy.A(b), cupy.A(c))[0].v
want = [math.tanh(x) * y + z for x, y, z in zip(a, b, c)]
t(all(abs(g - w) <= 1e-12 for g, w in zip(got, want)),
  "cupy form: its op-by-op reference computes tanh(in0) * in1 + in2")
open(sys.argv[2], "w").write(pre + "\n" + "// op: " + op + "\n")
PY
if [ -n "$NVCC" ] && [ -x "$NVCC" ] && [ -s "$tmp/kernel.txt" ]; then
	{
		cat "$tmp/kernel.txt"
		echo "__global__ void k(const float *a, const float *b, const float *c, float *x2o) {"
		echo "	const float in0 = a[0], in1 = b[0], in2 = c[0]; float x2;"
		sed -n 's|^// op: ||p' "$tmp/kernel.txt"
		echo "	x2o[0] = x2; }"
	} >"$tmp/k.cu"
	check "cupy form: the kernel text compiles as device code (nvcc -arch=sm_90)" \
		"$NVCC" -arch=sm_90 -c "$tmp/k.cu" -o "$tmp/k.o"
else
	ok "cupy form: the kernel text compiles as device code # skip no nvcc"
fi
