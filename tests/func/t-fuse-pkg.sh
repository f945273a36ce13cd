# aicprof fuse: the package aicprof_fused/ installed into library code. On the GPT-2 and Llama
# sample traces it lists NewGELUActivation.forward (an arg) and eager_attention_forward (sdpa),
# and LlamaRMSNorm.forward (an arg and a param, its fused backward), with their import paths; the patch adds the
# package beside samples/*_train.py and exactly two lines there, touches no site-packages path,
# and `git apply --check` takes it in a scratch copy; the generated Python compiles. Then the
# package's apply() runs under a small fake torch (pure Python: no torch here) and fake
# transformers: it replaces the functions, binds args and params, guards device, dtype,
# contiguity and shapes (falling back to the original), verifies on first use and disables a
# replacement that differs (one warning), never raises when a library is missing, and does
# nothing with AICPROF_FUSED=0.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof

for s in gpt2 llama; do
	"$A" analyze "$top/samples/traces/${s}_train.aicp.jsonl" -o "$tmp/$s" >/dev/null 2>&1 ||
		nok "analyze $s"
	(cd "$top" && "$A" fuse "$tmp/$s" -o "$tmp/$s-f") >"$tmp/$s.out" 2>&1
	check "fuse $s exits 0" test $? = 0
	check "fuse $s writes the package aicprof_fused/__init__.py" \
		test -s "$tmp/$s-f/aicprof_fused/__init__.py"
	check "fuse $s says where apply() was added" \
		grep -q "package   apply() added to samples/${s}_train.py" "$tmp/$s.out"
	check "fuse $s: README has the package's section" \
		grep -q "## The aicprof_fused package" "$tmp/$s-f/README.md"
done

mkdir -p "$tmp/lk/f" "$tmp/lk/elsewhere"
ln -s "$tmp/lk/elsewhere" "$tmp/lk/f/aicprof_fused"
(cd "$top" && "$A" fuse "$tmp/gpt2" -o "$tmp/lk/f") >"$tmp/lk.out" 2>&1
check "a planted link at aicprof_fused/ is refused, nothing written through it" sh -c \
	"grep -q 'aicprof_fused.* is a symbolic link' '$tmp/lk.out' && test -z \"\$(ls -A '$tmp/lk/elsewhere')\""

# the package's table, read by Python from the generated file
cat >"$tmp/table.py" <<'PY'
import ast, json, sys
src = open(sys.argv[1]).read()
tree = ast.parse(src)
for node in tree.body:
    if isinstance(node, ast.Assign) and node.targets[0].id == "_FUNCS":
        funcs = json.loads(node.value.args[0].value)
for f in funcs:
    print(f["form"], f["module"], f["qualname"],
          ",".join(i["kind"] for i in f.get("inputs", [])) or "-", f.get("name", "-"))
PY
python3 "$tmp/table.py" "$tmp/gpt2-f/aicprof_fused/__init__.py" >"$tmp/gpt2.tab"
python3 "$tmp/table.py" "$tmp/llama-f/aicprof_fused/__init__.py" >"$tmp/llama.tab"
check "gpt2: NewGELUActivation.forward from transformers.activations, one arg" \
	grep -q "^fused transformers.activations NewGELUActivation.forward arg f[0-9]*_NewGELU" \
	"$tmp/gpt2.tab"
check "gpt2: eager_attention_forward of modeling_gpt2 as the sdpa form" \
	grep -q "^sdpa transformers.models.gpt2.modeling_gpt2 eager_attention_forward - -" \
	"$tmp/gpt2.tab"
check "llama: LlamaRMSNorm.forward of modeling_llama, an arg and a param" \
	grep -q "^fused transformers.models.llama.modeling_llama LlamaRMSNorm.forward arg,param f" \
	"$tmp/llama.tab"
check "llama: LlamaMLP.forward of modeling_llama as the gated form (gate, up)" \
	grep -q "^gated transformers.models.llama.modeling_llama LlamaMLP.forward gate,up f[0-9]*_LlamaMLP_forward" \
	"$tmp/llama.tab"
check "llama: the gated group is act(gate), its cast, times up, with a fused backward" \
	python3 -c "
import json,sys
s=json.load(open('$tmp/llama/summary.json'))
f=[f for f in s['functions'] if f['func']=='LlamaMLP.forward'][0]
g=f['group']
sys.exit(not (f['form']=='gated' and f['binding']['act_class']=='SiLUActivation'
 and [o['op'] for o in g['ops']]==['silu','cast','mul'] and g['ops'][0]['args']==['in0']
 and len(g['inputs'])==2 and len(g['outputs'])==1 and f['invocations']==4))"
check "llama: eager_attention_forward of modeling_llama as the sdpa form" \
	grep -q "^sdpa transformers.models.llama.modeling_llama eager_attention_forward" \
	"$tmp/llama.tab"
check "llama: apply_rotary_pos_emb of modeling_llama as the rotary form (no group)" \
	grep -q "^rotary transformers.models.llama.modeling_llama apply_rotary_pos_emb - -" \
	"$tmp/llama.tab"
check "llama: the rotary function's run is its 6 kernels and rotate_half's 4, 4 a step" \
	python3 -c "
import json,sys
s=json.load(open('$tmp/llama/summary.json'))
f=[f for f in s['functions'] if f['func']=='apply_rotary_pos_emb'][0]
ops=[s['nodes'][i]['op'] for i in f['nodes']]
sys.exit(not (f['form']=='rotary' and f['group'] is None and f['invocations']==4
 and ops==['mul','neg','cat','mul','add']*2))"
check "gpt2: no rotary form (GPT-2 has no rotary embedding)" \
	sh -c "! grep -q '^rotary' '$tmp/gpt2.tab'"
check "llama: the package holds the rotary kernel's files" \
	test -s "$tmp/llama-f/aicprof_fused/_rotary/aic_rotary.cu" -a \
	-s "$tmp/llama-f/aicprof_fused/_rotary/aic_rotary_math.h" -a \
	-s "$tmp/llama-f/aicprof_fused/_rotary/aic_rotary_cpucheck.cu"
check "gpt2: no rotary files where no function takes the form" \
	test ! -e "$tmp/gpt2-f/aicprof_fused/_rotary"
check "gpt2: no function of the program's own tree, nor a fragment (GPT2Block.forward)" \
	sh -c "! grep -q 'samples\\|GPT2Block\\|GPT2Attention' '$tmp/gpt2.tab'"
check "summary.json: functions[] with the binding (llama's weight a param of 512 elements)" \
	python3 -c "
import json,sys
s=json.load(open('$tmp/llama/summary.json'))
f=[f for f in s['functions'] if f['func']=='LlamaRMSNorm.forward'][0]
b=f['binding']['inputs']
sys.exit(not (b[1]['kind']=='param' and b[1]['numel']==512 and b[0]['kind']=='arg'
 and f['group']['kind']=='reduction-epilogue' and f['group']['ops'][0]['op']=='rms_norm'
 and f['invocations']==9))"
rk=$tmp/llama-f/aicprof_fused/f0_LlamaRMSNorm_forward/f0_LlamaRMSNorm_forward
# the weight gradient: partial sums a block in the row kernel, not a summand an element
# (the warp kernel's; the block kernel of long rows stores a summand an element, a row each)
sed -n '/_bwd_wkernel(const/,/^}/p' "${rk}_bwd_kernel.cu" >"$tmp/bwd_wkernel"
check "llama: the backward's warp kernel sums dw's summand over its rows (no per-element store)" \
	sh -c "grep -q 'cs\[0\]\[q\]\[j\] += y\[1\]\[j\]' '$tmp/bwd_wkernel' &&
	grep -q 'a.w_d4\[(long)blockIdx.x \* cols + c\] = aic_ps' '$tmp/bwd_wkernel' &&
	! grep -q 'aic_st<V>(a.w_d4' '$tmp/bwd_wkernel' &&
	grep -q '\*a.nparts = a.rows;' '${rk}_bwd_kernel.cu'"
check "llama: the column kernel adds the partial rows the row kernel reports" \
	sh -c "grep -q 'a.nparts = &parts' '${rk}_capi.cu' && grep -q 'c.rows = parts' '${rk}_capi.cu'"
check "llama: the backward's warp kernel loads dy and the weight once a row (both passes read them)" \
	sh -c "grep -q 'xk\[KP ? q : 0\]\[0\]\[j\] = x\[1\]\[j\]' '$tmp/bwd_wkernel' &&
	grep -q 'x\[2\]\[j\] = xk\[KP ? q : 0\]\[1\]\[j\]' '$tmp/bwd_wkernel' &&
	grep -q 'constexpr bool KP = K \* V \* 2 <= 32;' '$tmp/bwd_wkernel' &&
	[ \$(grep -c 'aic_ld<V>(a.in_gy_y' '$tmp/bwd_wkernel') = 2 ]"
check "llama: the column kernel finishes the columns itself when it has one chunk (one launch), else the finish splits the chunks over 8 rows of threads (32 past 64 chunks); past 1,024 rows at least 64 a chunk" \
	sh -c "grep -q 'if (gridDim.y == 1) {' '${rk}_bwdc_kernel.cu' &&
	grep -q 'if (a.rows > 1024 && most > (a.rows + 63) / 64)' '${rk}_bwdc_kernel.cu' &&
	grep -q 'for (long q = threadIdx.y; q < nchunk; q += blockDim.y)' '${rk}_bwdc_kernel.cu' &&
	grep -q 'const unsigned fy = chunks > 64 ? 32 : 8;' '${rk}_bwdc_kernel.cu' &&
	grep -q 'dim3(32, fy)' '${rk}_bwdc_kernel.cu'"
check "llama: a short column (the fused backward's partial rows, up to 512) is one chunk of one column a thread and 16 rows of threads, its row loop unrolled by 4" \
	sh -c "grep -q 'const bool shortc = a.rows <= 512;' '${rk}_bwdc_kernel.cu' &&
	grep -A3 'if (shortc) {' '${rk}_bwdc_kernel.cu' | grep -q 'by = 16;' &&
	grep -q 'long chunks = shortc ? 1 :' '${rk}_bwdc_kernel.cu' &&
	grep -A1 '#pragma unroll 4' '${rk}_bwdc_kernel.cu' | grep -q 'for (long row = r0 + threadIdx.y; row < r1; row += blockDim.y)'"
check "llama: under autograd's traces (torch.compile) the fused backward is a custom op of its own" \
	sh -c "grep -q 'aicprof::f0_LlamaRMSNorm_forward__bwd' '${rk}.py' &&
	grep -q 'if _COMPILING() or _traced(xs\[0\]):' '${rk}.py'"
check "llama: the warp kernels take K, the vectors a lane, from the row's length" \
	sh -c "grep -q 'template <int V, int K>' '${rk}_bwd_kernel.cu' && ! grep -q 'constexpr int K' '${rk}_kernel.cu' &&
	grep -q 'while (32L \* vec \* wk < a.cols)' '${rk}_kernel.cu' &&
	grep -q 'case 68:' '${rk}_kernel.cu' && grep -q 'wkernel<4, 4, false>' '${rk}_kernel.cu'"
check "llama: the forward warp kernel hoists the weight only when the launch is latency-bound" \
	sh -c "grep -q 'wkernel<4, 4, true>' '${rk}_kernel.cu' && grep -q 'wkernel<4, 4, false>' '${rk}_kernel.cu' &&
	grep -q 'const bool h = wgrid \* block <= (long)aic_sm_count() \* 1024' '${rk}_kernel.cu'"

# the patch: two lines in the entry script, nothing in a library, applies
for s in gpt2 llama; do
	p=$tmp/$s-f/aicprof.patch
	awk -v f="samples/${s}_train.py" '/^diff --git /{on = ($3 == "a/" f)} on && /^\+[^+]/' \
		"$p" >"$tmp/$s.added"
	check "$s: the entry script gets exactly the two lines" sh -c \
		"grep -c aicprof_fused '$tmp/$s.added' | grep -qx 2 &&
		 grep -qx '+import aicprof_fused' '$tmp/$s.added' &&
		 grep -qx '+aicprof_fused.apply()' '$tmp/$s.added'"
	check "$s: the patch touches no site-packages or dist-packages path" sh -c \
		"! grep '^diff --git' '$p' | grep -q 'site-packages\\|dist-packages'"
	check "$s: the patch adds samples/aicprof_fused/__init__.py" \
		grep -q "^diff --git a/samples/aicprof_fused/__init__.py" "$p"
	rm -rf "$tmp/scr-$s"
	mkdir -p "$tmp/scr-$s"
	(cd "$top" && git archive HEAD samples) | tar -x -C "$tmp/scr-$s"
	(cd "$tmp/scr-$s" && git init -q . && git apply --check "$p" && git apply "$p")
	check "$s: git apply --check accepts the patch in a scratch copy" test $? = 0
	check "$s: the patched script and the package compile" sh -c \
		"cd '$tmp/scr-$s' && python3 -m py_compile samples/${s}_train.py &&
		 for f in samples/aicprof_fused/__init__.py samples/aicprof_fused/*/*.py; do
		   python3 -m py_compile \"\$f\" || exit 1; done"
	check "$s: the apply lines follow the imports, before main()" sh -c \
		"cd '$tmp/scr-$s' && awk '/^import aicprof_fused\$/{a=NR} /^aicprof_fused.apply\\(\\)\$/{b=NR}
		 /^def main/{d=NR} END{exit !(a && b == a + 1 && d > b)}' samples/${s}_train.py"
done

# the runtime under a fake torch and fake transformers
mkdir -p "$tmp/fake/torch" "$tmp/fake/transformers/integrations" "$tmp/fake/transformers/models/llama"
cat >"$tmp/fake/torch/__init__.py" <<'PY'
"""A fake torch: flat lists of floats, enough for aicprof_fused's wrappers."""
import math

class dtype:
    def __init__(self, n): self.n = n
    def __repr__(self): return "torch." + self.n
float32, float16, bfloat16 = dtype("float32"), dtype("float16"), dtype("bfloat16")
bool = dtype("bool")
_grad = [True]

class Tensor:
    def __init__(self, data, shape=None, dtype=float32, cuda=True, contiguous=True):
        self.data = list(data)
        self.shape = tuple(shape) if shape is not None else (len(self.data),)
        self.dtype, self.is_cuda, self._contig = dtype, cuda, contiguous
        self.requires_grad = False
    def numel(self): return len(self.data)
    def dim(self): return len(self.shape)
    def is_contiguous(self): return self._contig
    def float(self): return Tensor(self.data, self.shape, float32, self.is_cuda)
    def view(self, *shape): return Tensor(self.data, shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape, self.dtype, self.is_cuda)
    def __sub__(self, o): return Tensor([a - b for a, b in zip(self.data, o.data)], self.shape)
    def abs(self): return Tensor([abs(a) for a in self.data], self.shape)
    def max(self): return Tensor([max(self.data)], (1,))
    def item(self): return self.data[0]
    def __getitem__(self, m): return Tensor([a for a, k in zip(self.data, m.data) if k], None, self.dtype)
    def size(self, d): return self.shape[d]
    def __mul__(self, o): return Tensor([a * b for a, b in zip(self.data, o.data)], self.shape, self.dtype, self.is_cuda)
    def stride(self, d=None):
        st, acc = [], 1
        for n in reversed(self.shape):
            st.insert(0, acc)
            acc *= n
        return tuple(st) if d is None else st[d]
    @property
    def device(self): return "cuda" if self.is_cuda else "cpu"

def _map(f, t): return Tensor([1.0 if f(a) else 0.0 for a in t.data], t.shape, bool)
def isnan(t): return _map(math.isnan, t)
def isinf(t): return _map(math.isinf, t)
def isfinite(t): return _map(math.isfinite, t)
def equal(a, b): return a.shape == b.shape and a.data == b.data
def allclose(a, b, rtol, atol): return all(abs(x - y) <= atol + rtol * abs(y) for x, y in zip(a.data, b.data))
def is_grad_enabled(): return _grad[0]
class _Module:
    pass
class nn:
    Module = _Module
class no_grad:
    def __enter__(self): self.s = _grad[0]; _grad[0] = False
    def __exit__(self, *a): _grad[0] = self.s
PY
: >"$tmp/fake/transformers/__init__.py"
: >"$tmp/fake/transformers/models/__init__.py"
: >"$tmp/fake/transformers/integrations/__init__.py"
cat >"$tmp/fake/transformers/activations.py" <<'PY'
import math
import torch
class NewGELUActivation:
    def forward(self, input):
        return torch.Tensor([0.5 * x * (1 + math.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
                             for x in input.data], input.shape, torch.float32, input.is_cuda)
    def __call__(self, *a, **k): return self.forward(*a, **k)
PY
cat >"$tmp/fake/transformers/integrations/sdpa_attention.py" <<'PY'
import torch
CALLS = []
def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kw):
    CALLS.append((dropout, scaling, is_causal))
    return torch.Tensor(value.data, value.shape, value.dtype), None
PY
cat >"$tmp/fake/transformers/models/llama/__init__.py" <<'PY'
PY
cat >"$tmp/fake/transformers/models/llama/modeling_llama.py" <<'PY'
import math
import torch
class LlamaRMSNorm:
    def __init__(self, w, others=()):
        self.weight = w
        self.others = list(others)
    def parameters(self, recurse=True):
        return [self.weight] + self.others
    def forward(self, hidden_states):
        c = self.weight.numel()
        out = []
        for r in range(hidden_states.numel() // c):
            row = hidden_states.data[r * c:(r + 1) * c]
            s = (sum(x * x for x in row) / c + 1e-6) ** -0.5
            out += [w * x * s for w, x in zip(self.weight.data, row)]
        return torch.Tensor(out, hidden_states.shape, torch.float32, hidden_states.is_cuda)
    def __call__(self, *a, **k): return self.forward(*a, **k)
def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    return torch.Tensor(value.data, value.shape, value.dtype), "weights"
def caller(module, q, k, v):
    return eager_attention_forward(module, q, k, v, None, 0.125, dropout=0.1)
def apply_rotary_pos_emb(q, k, cos, sin=None, position_ids=None, unsqueeze_dim=1):
    return "original %d" % (3 if sin is None else 4)
class Lin(torch.nn.Module):
    def __init__(self, scale):
        self.scale, self.calls = scale, 0
        self.weight = torch.Tensor([scale], (1,), torch.bfloat16)
    def __call__(self, x):
        self.calls += 1
        return torch.Tensor([v * self.scale for v in x.data], x.shape, torch.bfloat16, x.is_cuda)
class SiLUActivation(torch.nn.Module):
    def __call__(self, x):
        return torch.Tensor([v / (1 + math.exp(-v)) for v in x.data], x.shape, x.dtype, x.is_cuda)
class GELUActivation(SiLUActivation):
    pass
class LlamaMLP(torch.nn.Module):
    def __init__(self, act=None):
        self.gate_proj, self.up_proj, self.down_proj = Lin(0.5), Lin(2.0), Lin(3.0)
        self.act_fn = act or SiLUActivation()
    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
    def __call__(self, *a, **k): return self.forward(*a, **k)
PY
cat >"$tmp/run.py" <<'PY'
import io, math, os, sys, types
import torch
pkgdir, which = sys.argv[1], sys.argv[2]
sys.path.insert(0, pkgdir)
import aicprof_fused as af
res = []
def check(name, cond):
    res.append(("ok" if cond else "not ok") + " - runtime(%s): %s" % (which, name))

def fake_group(name, fn, has_bwd=True):
    m = types.ModuleType(name)
    m.HAS_BACKWARD = has_bwd
    m._FUSED_BWD = has_bwd
    calls = []
    def run(*ins):
        calls.append(ins)
        return (fn(*ins),)
    setattr(m, name, run)
    af._GROUPS[name] = m
    return calls

specs = {f["qualname"]: f for f in af._FUNCS}
if which == "off":
    os.environ["AICPROF_FUSED"] = "0"
    r = af.apply()
    check("AICPROF_FUSED=0: nothing applied, the reason recorded",
          r and all(not v["applied"] and v["reason"] == "AICPROF_FUSED=0" for v in r.values()))
elif which == "missing":
    sys.modules["transformers"] = None  # an import of transformers fails
    r = af.apply()
    check("a missing library: apply() does not raise, nothing applied, ImportError said",
          r and all(not v["applied"] and "cannot be imported" in v["reason"] for v in r.values()))
elif which == "gpt2":
    g = specs["NewGELUActivation.forward"]
    from transformers.activations import NewGELUActivation
    orig = NewGELUActivation.forward
    ref = lambda x: orig(None, x)
    good = fake_group(g["name"], lambda x: ref(x))
    r = af.apply()
    key = "transformers.activations.NewGELUActivation.forward"
    check("GELU replaced", r[key]["applied"] and NewGELUActivation.forward is not orig)
    m = NewGELUActivation()
    x = torch.Tensor([0.5, -1.0, 2.0, 0.0], (2, 2), torch.bfloat16)
    y = m(x)
    check("GELU: the fused op ran once (after its verification) and counts() says 1",
          len(good) == 2 and af.counts()[key] == 1)
    check("GELU: the result has the call's shape and the original's values",
          y.shape == (2, 2) and all(abs(a - b) < 1e-6 for a, b in zip(y.data, ref(x).data)))
    check("GELU: the shape class is recorded as verified",
          list(af.applied()[key]["verified"].values()) == ["verified"])
    m(torch.Tensor([1.0], (1,), torch.bfloat16, cuda=False))
    check("GELU: a CPU tensor falls back", af.counts()[key] == 1 and
          "CUDA" in af.applied()[key]["last_fallback"])
    m(torch.Tensor([1.0], (1,), torch.float32))
    check("GELU: another dtype falls back", af.counts()[key] == 1 and
          "float32" in af.applied()[key]["last_fallback"])
    m(torch.Tensor([1.0, 2.0], (2,), torch.bfloat16, contiguous=False))
    check("GELU: a non-contiguous tensor falls back", af.counts()[key] == 1 and
          "contiguous" in af.applied()[key]["last_fallback"])
    # under torch.compile the original runs (Inductor fuses it), not the fused op
    import types as _types
    _cmp = [False]
    torch.compiler = _types.SimpleNamespace(is_compiling=lambda: _cmp[0])
    NewGELUActivation.forward = orig
    af._STATE.clear()
    af._COUNTS.clear()
    af._GROUPS[g["name"]] = None
    cc = fake_group(g["name"], lambda x: ref(x))
    af.apply()
    _cmp[0] = True
    y = NewGELUActivation()(x)
    _cmp[0] = False
    check("GELU under torch.compile: the original runs (no fused call, no verification)",
          len(cc) == 0 and af.counts()[key] == 0 and y.data == ref(x).data)
    y = NewGELUActivation()(x)
    check("GELU after torch.compile's trace: the fused form again", len(cc) == 2 and
          af.counts()[key] == 1)
    del torch.compiler
    # a second package state: the fused op is wrong -> disabled with one warning
    good[:] = []
    af._GROUPS[g["name"]] = None
    bad = fake_group(g["name"], lambda x: torch.Tensor([v + 1.0 for v in ref(x).data], x.shape))
    NewGELUActivation.forward = orig
    af._STATE.clear()
    err, sys.stderr = sys.stderr, io.StringIO()
    af.apply()
    y = NewGELUActivation()(x)
    y2 = NewGELUActivation()(x)
    w, sys.stderr = sys.stderr.getvalue(), err
    check("a mismatch on first use: the original's result, the replacement disabled",
          y.data == ref(x).data and y2.data == ref(x).data and af.counts()[key] == 1 and
          not af.applied()[key]["applied"] and "disabled on first use" in af.applied()[key]["reason"])
    check("a mismatch warns once on stderr, naming the function",
          w.count("aicprof_fused: " + key) == 1 and len(bad) == 1)
    # a third state: the fused op differs for one class only (under autocast, say, where the
    # original's result type changes): that class runs the original, the others the fused form
    af._GROUPS[g["name"]] = None
    odd = fake_group(g["name"], lambda x: torch.Tensor(
        [v + (1.0 if _ac[0] else 0.0) for v in ref(x).data], x.shape))
    _ac = [False]
    torch.is_autocast_enabled = lambda *a: _ac[0]
    NewGELUActivation.forward = orig
    af._STATE.clear()
    af._COUNTS.clear()
    err, sys.stderr = sys.stderr, io.StringIO()
    af.apply()
    y1 = NewGELUActivation()(x)
    _ac[0] = True
    y2 = NewGELUActivation()(x)
    y3 = NewGELUActivation()(x)
    _ac[0] = False
    y4 = NewGELUActivation()(x)
    w, sys.stderr = sys.stderr.getvalue(), err
    vs = sorted(af.applied()[key]["verified"].values())
    check("a class that differs (autocast on) runs the original; the verified class keeps the fused form",
          all(t.data == ref(x).data for t in (y1, y2, y3, y4)) and af.counts()[key] == 2 and
          af.applied()[key]["applied"] and len(vs) == 2 and vs[1] == "verified" and
          w.count("aicprof_fused: " + key) == 1 and "True" in w)
    del torch.is_autocast_enabled
    # under autograd: a group without a fused backward runs the original (a recomputed
    # backward was measured slower); a group with none at all too; a fused one runs
    xg = torch.Tensor([0.5, -1.0, 2.0, 0.0], (2, 2), torch.bfloat16)
    xg.requires_grad = True
    for bwd, fused_bwd, runs in ((True, False, False), (False, False, False), (True, True, True)):
        af._GROUPS[g["name"]] = None
        calls = fake_group(g["name"], lambda x: ref(x), has_bwd=bwd)
        af._GROUPS[g["name"]]._FUSED_BWD = fused_bwd
        NewGELUActivation.forward = orig
        af._STATE.clear()
        af._COUNTS.clear()
        af.apply()
        NewGELUActivation()(xg)
        lf = af.applied()[key]["last_fallback"] or ""
        check("under autograd, backward %s: %s" % (
                  "fused" if fused_bwd else "recomputed" if bwd else "none",
                  "the fused form runs" if runs else "the original runs, and why"),
              (af.counts().get(key, 0) == 1) if runs else
              (af.counts().get(key, 0) == 0 and not calls and
               ("recomputed" in lf if bwd else "does not have" in lf)))
    # sdpa
    import transformers.integrations.sdpa_attention as sd
    check("gpt2's eager attention: its module cannot be imported here, the reason recorded",
          "cannot be imported" in af.applied()["transformers.models.gpt2.modeling_gpt2.eager_attention_forward"]["reason"])
    import transformers.activations as ta
    NewGELUActivation.forward = orig
    af._STATE.clear()
    af.apply()
    replaced = ta.NewGELUActivation.forward
    af.restore()
    check("restore() puts the original back",
          replaced is not orig and ta.NewGELUActivation.forward is orig and
          af.applied()[key]["reason"] == "restored")
elif which == "llama":
    g = specs["LlamaRMSNorm.forward"]
    from transformers.models.llama import modeling_llama as ml
    orig = ml.LlamaRMSNorm.forward
    cols = g["inputs"][1]["numel"]
    seen = []
    def fused(x, w):
        seen.append(w)
        return orig(ml.LlamaRMSNorm(w), x)
    fake_group(g["name"], fused)
    gs = specs["LlamaMLP.forward"]
    mkey = "transformers.models.llama.modeling_llama.LlamaMLP.forward"
    got = []
    def silu_mul(gate, up):
        got.append((gate, up))
        return torch.Tensor([a / (1 + math.exp(-a)) * b for a, b in zip(gate.data, up.data)],
                            gate.shape, gate.dtype, gate.is_cuda)
    fake_group(gs["name"], silu_mul)
    r = af.apply()
    key = "transformers.models.llama.modeling_llama.LlamaRMSNorm.forward"
    check("RMSNorm replaced", r[key]["applied"])
    w = torch.Tensor([1.0 + i / cols for i in range(cols)], (cols,))
    other = torch.Tensor([0.0] * 7, (7,))
    m = ml.LlamaRMSNorm(w, [other])
    x = torch.Tensor([math.sin(i) for i in range(2 * cols)], (1, 2, cols))
    y = m(x)
    check("RMSNorm: the param bound to the module's weight (numel and dtype), not another",
          seen and all(s is w for s in seen) and af.counts()[key] == 1)
    check("RMSNorm: the values match the original",
          all(abs(a - b) < 1e-5 for a, b in zip(y.data, orig(m, x).data)))
    m(torch.Tensor([1.0] * 6, (2, 3)))
    check("RMSNorm: rows of another length fall back", af.counts()[key] == 1 and
          "rows of 3 elements" in af.applied()[key]["last_fallback"])
    m2 = ml.LlamaRMSNorm(torch.Tensor([1.0] * cols, (cols,)), [torch.Tensor([1.0] * cols, (cols,))])
    m2(x)
    check("RMSNorm: two parameters that fit: ambiguous, falls back", af.counts()[key] == 1 and
          "2 parameters" in af.applied()[key]["last_fallback"])
    import transformers.integrations.sdpa_attention as sd
    akey = "transformers.models.llama.modeling_llama.eager_attention_forward"
    check("eager attention replaced (module global)", af.applied()[akey]["applied"])
    q = torch.Tensor([1.0, 2.0], (1, 1, 2, 1))
    mod = types.SimpleNamespace(config=types.SimpleNamespace(output_attentions=False))
    out = ml.caller(mod, q, q, q)
    check("eager attention: the caller's lookup reaches sdpa_attention_forward with scaling, "
          "dropout and is_causal=False (verified with dropout 0 first)",
          sd.CALLS == [(0.0, 0.125, False), (0.1, 0.125, False)] and out[1] is None and
          af.counts()[akey] == 1)
    mod.config.output_attentions = True
    out = ml.caller(mod, q, q, q)
    check("eager attention: asked for the weights, the original runs",
          out[1] == "weights" and af.counts()[akey] == 1)
    # the rotary form: replaced at the module global; a call that does not fit runs the original
    rkey = "transformers.models.llama.modeling_llama.apply_rotary_pos_emb"
    rot = af.applied()[rkey]
    check("rotary: apply_rotary_pos_emb replaced by the rotary form (module global)",
          rot["applied"] and rot["form"] == "rotary" and
          ml.apply_rotary_pos_emb._aicprof_original is not None and "_rotary" in rot["reason"])
    t4 = torch.Tensor([1.0, 2.0, 3.0, 4.0], (1, 1, 1, 4), cuda=False)
    r3 = ml.apply_rotary_pos_emb(t4, t4, t4)
    check("rotary: a call without sin runs the original, and says why",
          r3 == "original 3" and
          "apply_rotary_pos_emb(q, k, cos, sin" in af.applied()[rkey]["last_fallback"]
          and af.counts()[rkey] == 0)
    r4 = ml.apply_rotary_pos_emb(t4, t4, t4, t4)
    check("rotary: CPU tensors run the original, and say why",
          r4 == "original 4" and "CUDA" in af.applied()[rkey]["last_fallback"] and
          af.counts()[rkey] == 0)
    # the launch's cos strides, computed once a geometry without views: what
    # cos.unsqueeze(ud).expand(x.shape).stride()[:3] gives (torch's rules, by hand)
    bs = af._bcast_strides
    cases = [(((2, 16, 8), (128, 8, 1), 1, (2, 4, 16, 8)), [128, 0, 8]),
             (((2, 16, 8), (128, 8, 1), 2, (2, 16, 4, 8)), [128, 8, 0]),
             (((1, 16, 8), (128, 8, 1), 1, (2, 4, 16, 8)), [0, 0, 8]),
             (((16, 8), (8, 1), 0, (2, 4, 16, 8)), [0, 0, 8]),
             (((2, 16, 8), (128, 8, 1), -3, (2, 4, 16, 8)), [128, 0, 8]),
             (((2, 16, 8), (1000, 10, 1), 1, (2, 4, 16, 8)), [1000, 0, 10]),
             (((2, 1, 8), (8, 8, 1), 1, (2, 4, 16, 8)), [8, 0, 0])]
    bad = []
    for a, want in cases:
        if bs(*a) != want:
            bad.append((a, bs(*a), want))
    try:
        bs((2, 16, 8), (128, 8, 1), 1, (2, 4, 32, 8))
        bad.append("no error for a cos that does not broadcast")
    except RuntimeError:
        pass
    check("rotary: the cos strides a launch plan takes are torch's broadcast strides (7 "
          "layouts) and a mismatch is an error" + (": %r" % (bad,) if bad else ""), not bad)
    # the gated MLP: the projections as the module's own, act_fn and the product fused
    mlp_orig = ml.LlamaMLP.forward._aicprof_original
    check("gated MLP replaced, with the activation's class from the trace",
          af.applied()[mkey]["applied"] and gs["act_class"] == "SiLUActivation" and
          [i["kind"] for i in gs["inputs"]] == ["gate", "up"])
    mlp = ml.LlamaMLP()
    x = torch.Tensor([0.5, -1.0, 2.0, 0.25], (1, 4), torch.bfloat16)
    y = mlp(x)
    ref = mlp_orig(ml.LlamaMLP(), x)
    check("gated MLP: the group gets gate_proj(x) and up_proj(x), the result is the original's",
          len(got) == 2 and got[1][0].data == [v * 0.5 for v in x.data] and
          got[1][1].data == [v * 2.0 for v in x.data] and
          all(abs(a - b) < 1e-6 for a, b in zip(y.data, ref.data)) and
          af.counts()[mkey] == 1 and list(af.applied()[mkey]["verified"].values()) == ["verified"])
    check("gated MLP: down_proj reads the fused product (once a call, plus the verification's)",
          mlp.down_proj.calls == 3)
    ml.LlamaMLP(ml.GELUActivation())(x)
    check("gated MLP: an act_fn of another class runs the original, and says why",
          af.counts()[mkey] == 1 and "GELUActivation" in af.applied()[mkey]["last_fallback"])
    bare = ml.LlamaMLP()
    del bare.up_proj
    bare.forward = lambda x: "no up_proj"
    try:
        ml.LlamaMLP.forward(bare, x)
    except AttributeError:
        pass
    check("gated MLP: a module without up_proj is not run by the form",
          af.counts()[mkey] == 1 and "no up_proj" in af.applied()[mkey]["last_fallback"])
    mlp(x=x)
    check("gated MLP: a call by keyword runs the original",
          af.counts()[mkey] == 1 and "forward(self, x)" in af.applied()[mkey]["last_fallback"])
    mlp(torch.Tensor([1.0, 2.0], (1, 2), torch.bfloat16, cuda=False))
    check("gated MLP: a CPU tensor runs the original",
          af.counts()[mkey] == 1 and "CUDA" in af.applied()[mkey]["last_fallback"])
    ml.LlamaMLP.forward = mlp_orig
    af._STATE.pop(mkey)
    af._GROUPS[gs["name"]] = None
    fake_group(gs["name"], lambda g, u: torch.Tensor([9.0] * g.numel(), g.shape, g.dtype))
    err, sys.stderr = sys.stderr, io.StringIO()
    af.apply()
    y1, y2 = mlp(x), mlp(x)
    w, sys.stderr = sys.stderr.getvalue(), err
    check("gated MLP: a group that differs is disabled on first use; the original's result",
          y1.data == ref.data and y2.data == ref.data and af.counts()[mkey] == 1 and
          not af.applied()[mkey]["applied"] and w.count("aicprof_fused: " + mkey) == 1)
print("\n".join(res))
PY
gp=$tmp/gpt2-f
lp=$tmp/llama-f
for w in off missing gpt2; do
	PYTHONPATH=$tmp/fake python3 "$tmp/run.py" "$gp" "$w" 2>"$tmp/err.$w" ||
		nok "runtime($w) ran: $(tail -3 "$tmp/err.$w")"
done
PYTHONPATH=$tmp/fake python3 "$tmp/run.py" "$lp" llama 2>"$tmp/err.llama" ||
	nok "runtime(llama) ran: $(tail -3 "$tmp/err.llama")"

# the function groups' C ABI compiles with nvcc, and their CPU checks pass
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
	nok "nvcc not found (set CUDA_HOME to the CUDA toolkit): the function groups are not compiled"
else
	for gd in "$gp"/aicprof_fused/*/ "$lp"/aicprof_fused/*/; do
		g=$(basename "$gd")
		[ "$g" = _rotary ] && continue
		(cd "$gd" && "$NVCC" -arch=sm_90 -Xcompiler -fPIC -c "${g}_capi.cu" -o capi.o \
			>capi.log 2>&1)
		check "$g: nvcc -arch=sm_90 -c of the C ABI" test $? = 0
		(cd "$gd" && "$NVCC" -o cpucheck "${g}_cpucheck.cu" >cc.log 2>&1 && ./cpucheck >cc.out 2>&1)
		check "$g: CPU check of the fused math against op-by-op double" test $? = 0
		sed 's/^/# /' "$gd/cc.out"
		[ -f "$gd/${g}_bwd_cpucheck.cu" ] || continue
		# a fused backward (RMSNorm's: a row group, then the column sums of dw)
		(cd "$gd" && "$NVCC" -o bwdcheck "${g}_bwd_cpucheck.cu" >bc.log 2>&1 &&
			./bwdcheck >bc.out 2>&1 && { [ ! -f "${g}_bwdc_cpucheck.cu" ] ||
			{ "$NVCC" -o bwdccheck "${g}_bwdc_cpucheck.cu" >bcc.log 2>&1 &&
				./bwdccheck >>bc.out 2>&1; }; })
		check "$g: CPU check of the fused backward (op by op, and the gradients against the forward's directional derivatives)" \
			test $? = 0
		sed 's/^/# /' "$gd/bc.out"
	done
	rd=$lp/aicprof_fused/_rotary
	(cd "$rd" && "$NVCC" -arch=sm_90 -Xcompiler -fPIC -c aic_rotary.cu -o rot.o >rot.log 2>&1)
	check "rotary: nvcc -arch=sm_90 -c of the rotary kernel and its C ABI" test $? = 0
	(cd "$rd" && "$NVCC" -o rotcheck aic_rotary_cpucheck.cu >rc.log 2>&1 && ./rotcheck >rc.out 2>&1)
	check "rotary: CPU check (the forward against q*cos + rotate_half(q)*sin in double, the backward by the adjoint identity)" \
		test $? = 0
	sed 's/^/# /' "$rd/rc.out"
	# the check can fail: the backward's sin taken at the wrong half
	sed 's/\*d2 = g2 \* c2 - g1 \* s1;/*d2 = g2 * c2 - g1 * s2;/' "$rd/aic_rotary_math.h" >"$tmp/rm.h"
	mkdir -p "$tmp/rotbad" && cp "$rd/aic_rotary_cpucheck.cu" "$tmp/rotbad/" &&
		cp "$tmp/rm.h" "$tmp/rotbad/aic_rotary_math.h"
	(cd "$tmp/rotbad" && "$NVCC" -o rotcheck aic_rotary_cpucheck.cu >rc.log 2>&1 && ./rotcheck >rc.out 2>&1)
	check "rotary: the CPU check fails on a backward with sin at the wrong half" \
		sh -c "test $? != 0 && grep -q FAILED '$tmp/rotbad/rc.out'"
	check "llama: LlamaRMSNorm.forward's group has a fused backward (a row and a column kernel)" \
		sh -c "grep -q '^_FUSED_BWD = True' '$lp'/aicprof_fused/f*_LlamaRMSNorm_forward/f*_LlamaRMSNorm_forward.py &&
		 ls '$lp'/aicprof_fused/f*_LlamaRMSNorm_forward/f*_LlamaRMSNorm_forward_bwdc_kernel.cu >/dev/null"
	check "llama: the patch carries its backward's files (the patched copy's C ABI compiles)" \
		sh -c "cd '$tmp'/scr-llama/samples/aicprof_fused/f*_LlamaRMSNorm_forward/ &&
		 '$NVCC' -arch=sm_90 -Xcompiler -fPIC -c f*_LlamaRMSNorm_forward_capi.cu -o capi.o >capi.log 2>&1"
fi

# the report says what the package does for a finding whose model line is a function it replaces
check "gpt2 report: a GELU finding says aicprof_fused.apply() replaces NewGELUActivation.forward" \
	grep -q 'the whole function <code>transformers.activations.NewGELUActivation.forward</code> is replaced at run time by <code>aicprof_fused.apply()</code>' "$tmp/gpt2/report.html"
check "gpt2 report: only findings of listed functions say so (every such line names a listed function)" \
	python3 -c "
import json, re, sys
s = json.load(open(sys.argv[1])); h = open(sys.argv[2]).read()
listed = {f['binding']['module'] + '.' + f['binding']['qualname'] for f in s.get('functions', [])}
said = set(re.findall(r'the whole function <code>([^<]*)</code>', h))
sys.exit(0 if said and said <= listed else 1)" "$tmp/gpt2/summary.json" "$tmp/gpt2/report.html"
