#!/bin/sh
# aicprof fuse's fused-optimizer form names the program's own optimizer: the optimizer
# candidate's kernels say which (PyTorch's fused SGD functor, or the foreach forms: SGD's adds and
# multiplies alone, Adam's square root and lerp), and fused=True goes on that constructor. The
# MLP sample (AdamW) keeps AdamW; the same summary with SGD's kernel names and the program
# training with SGD gets SGD(..., fused=True), even with an AdamW line in the file.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
(cd "$top" && "$A" analyze -q --no-report samples/traces/mlp_train.aicp.jsonl -o "$tmp/a")
# the optimizer candidate's kernels renamed: $1 the kernel name
rename() {
	mkdir -p "$2" && python3 - "$tmp/a/summary.json" "$2/summary.json" "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ids = set()
for c in s["candidates"]:
    if c["kind"] == "optimizer-horizontal":
        ids |= set(c["nodes"])
assert ids
for n in s["nodes"]:
    if n["id"] in ids:
        n["name"] = n["full_name"] = sys.argv[3]
json.dump(s, open(sys.argv[2], "w"))
PY
}
sgd_tree() { # $1 the tree: the MLP sample training with SGD, and with an AdamW line left (extra)
	mkdir -p "$1/samples" &&
		sed 's/torch\.optim\.AdamW(model\.parameters(), lr=1e-4)/torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)/' \
			"$top/samples/mlp_train.py" >"$1/samples/mlp_train.py"
	test "$2" = extra && sed -i 's/^\(    opt = torch.optim.SGD.*\)$/\1\n    spare = torch.optim.AdamW(model.parameters(), lr=1e-4)/' "$1/samples/mlp_train.py"
	return 0
}

(cd "$top" && "$A" fuse "$tmp/a" -o "$tmp/f0" >/dev/null)
check "AdamW program, AdamW kernels: fused=True on AdamW, README names AdamW" sh -c "
	grep -q '^+    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)$' '$tmp/f0/aicprof.patch' &&
	grep -q 'torch.optim.AdamW: one kernel' '$tmp/f0/README.md'"

rename 'void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 3> >(...)' "$tmp/s1"
sgd_tree "$tmp/w1"
(cd "$tmp/w1" && "$A" fuse "$tmp/s1" -o "$tmp/f1" >/dev/null)
check "fused SGD kernels, SGD program: fused=True on SGD" sh -c "
	grep -q '^+    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)$' '$tmp/f1/aicprof.patch' &&
	grep -q 'torch.optim.SGD: one kernel' '$tmp/f1/README.md' && ! grep -q 'AdamW' '$tmp/f1/aicprof.patch'"

rename 'void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(...)' "$tmp/s2"
sgd_tree "$tmp/w2" extra
(cd "$tmp/w2" && "$A" fuse "$tmp/s2" -o "$tmp/f2" >/dev/null)
check "foreach SGD kernels, SGD and AdamW lines: fused=True on SGD alone" sh -c "
	grep -q '^+    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)$' '$tmp/f2/aicprof.patch' &&
	! grep -q '^+.*AdamW.*fused=True' '$tmp/f2/aicprof.patch'"

rename 'void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<float, 2, 1, 1>, at::native::Sqrt<float> >(...)' "$tmp/s3"
(cd "$tmp/w1" && "$A" fuse "$tmp/s3" -o "$tmp/f3" >/dev/null)
check "Adam kernels, SGD program: no rewrite, the reason names Adam/AdamW" sh -c "
	! grep -q 'fused=True' '$tmp/f3/aicprof.patch' && grep -q 'one-line Adam/AdamW constructors' '$tmp/f3/README.md'"
