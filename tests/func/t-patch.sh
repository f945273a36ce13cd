#!/bin/sh
# aicprof fuse's patch on the samples: aicprof.patch applies with git apply to a copy of the
# repository's samples, adds the generated kernels (C ABI, module, Makefile) under
# aicprof_fused/, rewrites the GELU -> dropout lines to call the fused op with the original lines
# kept as the fallback, puts fused=True on the AdamW constructor, and the rewritten files still
# compile; the helper routes autograd to the fused op only where the group has a backward. On
# the attention sample the hand-written attention becomes scaled_dot_product_attention once the
# dead statement that reads its probabilities is removed; groups whose lines cannot be rewritten
# are advice in README.md.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
(cd "$top" && "$A" analyze -q --no-report samples/traces/mlp_train.aicp.jsonl -o "$tmp/a") &&
	(cd "$top" && "$A" fuse "$tmp/a" -o "$tmp/f" >/dev/null)
# the group whose name ends in _OPS in summary.json (its number leads the name), and a finding's number
gname() { python3 -c "import json,sys; print([c['group']['name'] for c in json.load(open(sys.argv[1]))['candidates'] if c.get('group') and c['group']['name'].endswith('_'+sys.argv[2])][0])" "$tmp/a/summary.json" "$1"; }
G=$(gname gelu_dropout) L=$(gname layer_norm_cast)
# num OUTDIR EXPR: the number of the first finding c of OUTDIR/summary.json for which EXPR holds
num() { python3 -c "import json,sys; print([c['number'] for c in json.load(open(sys.argv[1]+'/summary.json'))['candidates'] if $2][0])" "$1"; }
NOPT=$(python3 -c "import json,sys; print([c['number'] for c in json.load(open(sys.argv[1]))['candidates'] if c['kind']=='optimizer-horizontal'][0])" "$tmp/a/summary.json")
NF=$(python3 -c "import json,sys; C=json.load(open(sys.argv[1]))['candidates']; n=lambda k: sum(c['kind']==k for c in C); print('%d candidates of the summary are not fusion groups (dead %d, invariant %d,' % (n('dead')+n('invariant')+n('memory'), n('dead'), n('invariant')))" "$tmp/a/summary.json")
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
check "it adds the kernel, binding and module under aicprof_fused/" test -f "$w/aicprof_fused/$G/${G}_binding.cu" -a \
	-f "$w/aicprof_fused/$G/$G.py" -a -f "$w/aicprof_fused/$G/${G}_kernel.cu"
check "the rewritten file compiles" python3 -m py_compile "$w/samples/mlp_train.py"
check "the GELU -> dropout lines call the binding under the guard" \
	grep -qF "_aicprof_call(\"$G\", \"torch.bfloat16\", h) if (self.training) and (self.p) == 0.1 else None" "$w/samples/mlp_train.py"
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
	"grep -q '$G: rewritten at samples/mlp_train.py:23-24' '$tmp/f/README.md' &&
	 grep -q '$L: advice, not rewritten' '$tmp/f/README.md'"

check "the AdamW constructor gets fused=True" \
	grep -q '^    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)$' "$w/samples/mlp_train.py"
check "README lists the optimizer's library form as rewritten" \
	grep -q "finding #$NOPT (torch.optim.AdamW(fused=True)): rewritten at samples/mlp_train.py:41" "$tmp/f/README.md"
check "the patch adds the C ABI, the fused backward and aicprof_fused/Makefile" sh -c "
	test -f '$w/aicprof_fused/$G/${G}_capi.h' &&
	test -f '$w/aicprof_fused/$G/${G}_capi.cu' &&
	test -f '$w/aicprof_fused/$G/${G}_bwd_kernel.cu' &&
	grep -q '^SRC := $G/${G}_capi.cu' '$w/aicprof_fused/Makefile'"
check "README says dead/invariant/memory are not fusion, once; no 'no group description'" sh -c "
	grep -qF '$NF' '$tmp/f/README.md' &&
	! grep -q 'no group description' '$tmp/f/README.md'"
# the helper under autograd: a fake torch and a fake group module, with and without a backward
for hb in True False; do
	mkdir -p "$w/aicprof_fused/fake_$hb"
	printf 'HAS_BACKWARD = %s\ndef fake_%s(x):\n    return ("fused", x)\n' $hb $hb >"$w/aicprof_fused/fake_$hb/fake_$hb.py"
done
check "under autograd the helper calls a group with a backward and falls back without one" python3 -c "
import sys, types, warnings
src = open(sys.argv[1]).read()
start = src.index('_AICPROF = {}'); end = src.index('class MLPBlock')
ns = {'__file__': sys.argv[1]}
fake = types.ModuleType('torch'); fake.is_grad_enabled = lambda: True
sys.modules['torch'] = fake
class T:
    requires_grad = True; is_cuda = True; dtype = 'torch.bfloat16'
    def is_contiguous(self): return True
warnings.simplefilter('ignore')
exec(src[start:end], ns)
a = ns['_aicprof_call']('fake_True', 'torch.bfloat16', T())
b = ns['_aicprof_call']('fake_False', 'torch.bfloat16', T())
sys.exit(0 if a is not None and a[0] == 'fused' and b is None else 1)" "$w/samples/mlp_train.py"

# attention: the committed trace (re-recorded with the planted never-read line 38) has the
# dead candidate there, so nothing reads 'attn' after the pattern: SDPA is rewritten
a2=$tmp/a2
(cd "$top" && "$A" analyze -q --no-report samples/traces/attention_train.aicp.jsonl -o "$a2") &&
	(cd "$top" && "$A" fuse "$a2" -o "$tmp/g2" >"$tmp/g2.out")
# the same summary without that dead candidate (as a trace recorded before the planted line
# would be): 'attn' is read at line 38, so not rewritten, and said why
a3=$tmp/a3
cp -r "$a2" "$a3" && python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s['candidates'] = [c for c in s['candidates'] if not (c['kind'] == 'dead' and c['sources'] == ['samples/attention_train.py:38'])]
json.dump(s, open(sys.argv[1], 'w'))" "$a3/summary.json"
(cd "$top" && "$A" fuse "$a3" -o "$tmp/g" >"$tmp/g.out")
check "attention: SDPA not rewritten while 'attn' is read later, with the line" \
	grep -q "scaled_dot_product_attention: not rewritten: 'attn' is read after the attention, at samples/attention_train.py:38" "$tmp/g.out"
w2=$tmp/w2
mkdir -p "$w2" && cp -r "$top/samples" "$w2/" && (cd "$w2" && git init -q . && git add -A &&
	git -c user.email=t@t -c user.name=t commit -qm samples)
check "attention: git apply accepts the SDPA patch" sh -c "cd '$w2' && git apply '$tmp/g2/aicprof.patch'"
check "attention: the patched file compiles" python3 -m py_compile "$w2/samples/attention_train.py"
check "attention: forward calls SDPA (causal, dropout while training, the scale), no softmax, no unread statement" python3 -c "
import sys
t = open(sys.argv[1]).read()
f = t[t.index('    def forward'):t.index('def main')]
want = 'y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=(self.p if self.training else 0.0), scale=(1.0 / math.sqrt(d // self.heads)))'
ok = want in f and 'softmax' not in f and '_unused' not in f and 'masked_fill' not in f and 'tril' not in f
sys.exit(0 if ok else 1)" "$w2/samples/attention_train.py"
check "attention: README lists the dead statement and SDPA as rewritten" sh -c "
	grep -qF 'finding #$(num "$a2" "c['kind']=='dead' and c['sources']==['samples/attention_train.py:38']") (dead statement): rewritten at samples/attention_train.py:38' '$tmp/g2/README.md' &&
	grep -qF 'finding #$(num "$a2" "c['kind']=='attention'") (torch.nn.functional.scaled_dot_product_attention): rewritten at samples/attention_train.py:29-35' '$tmp/g2/README.md'"
# a pattern the patch must not touch: the scores read in the middle
w3=$tmp/w3
mkdir -p "$w3/samples" && sed 's/^        attn = torch.softmax(scores, dim=-1)$/        attn = torch.softmax(scores, dim=-1) + scores.mean()/' \
	"$top/samples/attention_train.py" >"$w3/samples/attention_train.py"
(cd "$w3" && "$A" fuse "$a2" -o "$tmp/g3" >"$tmp/g3.out")
check "attention: another softmax form is advice with the line, the call to make in README" sh -c "
	grep -q 'scaled_dot_product_attention: not rewritten: samples/attention_train.py:33' '$tmp/g3.out' &&
	grep -q 'call .torch.nn.functional.scaled_dot_product_attention(q, k, v' '$tmp/g3/README.md'"

# sources that cannot be found: the kernels are still added, every group is advice
mkdir -p "$tmp/empty"
(cd "$tmp/empty" && "$A" fuse "$tmp/a" -o "$tmp/f2" >/dev/null)
check "without the sources: no rewrite, each group advice naming the file" sh -c \
	"grep -q \"$G: advice, not rewritten: cannot read 'samples/mlp_train.py'\" '$tmp/f2/README.md' &&
	 ! grep -q '^diff --git a/samples' '$tmp/f2/aicprof.patch'"
