#!/bin/sh
# aicprof fuse's patch on the MLP sample: aicprof.patch applies with git apply to a copy of the
# repository's samples, adds the generated kernels under aicprof_fused/, rewrites the GELU ->
# dropout lines to call the binding with the original lines kept as the fallback, and the
# rewritten file still compiles; groups whose lines cannot be rewritten are advice in README.md.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
(cd "$top" && "$A" analyze -q --no-report samples/traces/mlp_train.aicp.jsonl -o "$tmp/a") &&
	(cd "$top" && "$A" fuse "$tmp/a" -o "$tmp/f" >/dev/null)
check "fuse writes aicprof.patch" test -s "$tmp/f/aicprof.patch"
check "summary.json's trace has the program's cwd" python3 -c "
import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['traces'][0]['cwd'] else 1)" "$tmp/a/summary.json"
check "the patch names no absolute path" sh -c "grep -q '^+++ b/samples/mlp_train.py$' '$tmp/f/aicprof.patch' &&
	! grep '^[-+][-+][-+] ' '$tmp/f/aicprof.patch' | grep -v ' /dev/null$' | grep -qv ' [ab]/[^/]'"

w=$tmp/w
mkdir -p "$w" && cp -r "$top/samples" "$w/" && (cd "$w" && git init -q . && git add -A &&
	git -c user.email=t@t -c user.name=t commit -qm samples)
check "git apply --check accepts it" sh -c "cd '$w' && git apply --check '$tmp/f/aicprof.patch'"
check "git apply applies it" sh -c "cd '$w' && git apply '$tmp/f/aicprof.patch'"
check "it adds the kernel, binding and module under aicprof_fused/" test -f "$w/aicprof_fused/c0_gelu_dropout/c0_gelu_dropout_binding.cu" -a \
	-f "$w/aicprof_fused/c0_gelu_dropout/c0_gelu_dropout.py" -a -f "$w/aicprof_fused/c0_gelu_dropout/c0_gelu_dropout_kernel.cu"
check "the rewritten file compiles" python3 -m py_compile "$w/samples/mlp_train.py"
check "the GELU -> dropout lines call the binding under the guard" \
	grep -q '_aicprof_call("c0_gelu_dropout", "torch.bfloat16", h) if (self.training) and (self.p) == 0.1 else None' "$w/samples/mlp_train.py"
check "the original lines are kept as the fallback" python3 -c "
import sys; t=open(sys.argv[1]).read()
sys.exit(0 if '        else:\n            h = nn.functional.gelu(h)\n            h = nn.functional.dropout(h, self.p, self.training)\n' in t else 1)" "$w/samples/mlp_train.py"
check "only mlp_train.py is modified" test "$(cd "$w" && git status --short | grep '^ M')" = " M samples/mlp_train.py"
# the helper runs the original code where the module cannot load: call it without torch's extension
check "the helper falls back when the module cannot load" python3 -c "
import sys, types, warnings
src = open(sys.argv[1]).read()
start = src.index('_AICPROF = {}'); end = src.index('class MLPBlock')
ns = {'__file__': sys.argv[1]}
fake = types.ModuleType('torch'); fake.is_grad_enabled = lambda: False
sys.modules['torch'] = fake
warnings.simplefilter('ignore')
exec(src[start:end], ns)
sys.exit(0 if ns['_aicprof_call']('no_such_group', 'torch.float32') is None else 1)" "$w/samples/mlp_train.py"
check "README lists the rewrite and the groups left as advice" sh -c \
	"grep -q 'c0_gelu_dropout: rewritten at samples/mlp_train.py:23-24' '$tmp/f/README.md' &&
	 grep -q 'c4_layer_norm_cast: advice, not rewritten' '$tmp/f/README.md'"

# sources that cannot be found: the kernels are still added, every group is advice
mkdir -p "$tmp/empty"
(cd "$tmp/empty" && "$A" fuse "$tmp/a" -o "$tmp/f2" >/dev/null)
check "without the sources: no rewrite, each group advice naming the file" sh -c \
	"grep -q \"c0_gelu_dropout: advice, not rewritten: cannot read 'samples/mlp_train.py'\" '$tmp/f2/README.md' &&
	 ! grep -q '^diff --git a/samples' '$tmp/f2/aicprof.patch'"
