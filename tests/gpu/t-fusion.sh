#!/bin/sh
# fusion/ on the device machine: fuse every fixture of tests/fusion, `aicprof bench` them (build,
# check against the unfused reference, tune, time), check that the numerics passed and that the
# tuning cache is reused, print the table, and compare the generated PyTorch binding with torch
# for the GELU -> dropout -> add chain. Prints TAP lines. Run from the repository root after make:
#   sh tests/gpu/t-fusion.sh
. "$(dirname "$0")/../func/lib.sh"
fx=$top/tests/fusion
export AICPROF_TUNE_CACHE="$tmp/tune-cache.json"
groups="mlp_gelu_dropout_add attn_softmax ln_gelu f32_chain"

check "fuse the four fixtures" \
	"$B/aicprof" fuse --group "$fx/mlp.json" --group "$fx/attn.json" --group "$fx/ln_gelu.json" \
	--group "$fx/f32chain.json" -o "$tmp/fused"
"$B/aicprof" bench "$tmp/fused" >"$tmp/table" 2>"$tmp/log"; rc=$?
cat "$tmp/table"
grep -v '^aicprof: \(building\|running\)' "$tmp/log" | sed 's/^/# /'
check "bench exits 0 (every group built and passed)" test "$rc" = 0
for g in $groups; do
	check "$g: numerics pass against the unfused reference" python3 -c "
import json, sys
r = [x for x in json.load(open('$tmp/fused/bench.json')) if x['group'] == '$g']
sys.exit(0 if r and r[0]['ok'] and r[0]['misaligned_ok'] else 1)"
	check "$g: tune.json written beside the kernel" python3 -c "
import json, sys
t = json.load(open('$tmp/fused/$g/tune.json'))
sys.exit(0 if t['config']['block'] in (128, 256, 512) and len(t['timings']) > 1 else 1)"
done
check "the tuning cache holds the four groups" python3 -c "
import json, sys
sys.exit(0 if len(json.load(open('$AICPROF_TUNE_CACHE'))['entries']) == 4 else 1)"
"$B/aicprof" bench "$tmp/fused" >"$tmp/table2" 2>"$tmp/log2"; rc=$?
check "a second bench reuses the cache and passes" sh -c \
	"test $rc = 0 && test \$(grep -c '(cached)' '$tmp/table2') = 4"
# a kernel written differently (another generator) is tuned again: the cache's key holds the
# kernel source's hash beside the group's key
printf '\n/* another generator */\n' >>"$tmp/fused/f32_chain/f32_chain_kernel.cu"
"$B/aicprof" bench "$tmp/fused" >"$tmp/table3" 2>"$tmp/log3"; rc=$?
check "a changed kernel is tuned again, the others still cached" sh -c \
	"test $rc = 0 && test \$(grep -c '(cached)' '$tmp/table3') = 3 &&
	 grep '^f32_chain' '$tmp/table3' | grep -q '(tuned)'"

# the row and column groups of sessions 7 and 8 (layer norm's input gradient, log_softmax's
# backward, layer norm's dgamma/dbeta, a batch-norm-style column group, and any later fixture of
# those kinds in tests/fusion): built, checked against the unfused reference, tuned, timed
newfx=
for f in lnb lsb gbb bnb bnr; do [ -f "$fx/$f.json" ] && newfx="$newfx --group $fx/$f.json"; done
check "fuse the row and column fixtures ($newfx)" "$B/aicprof" fuse $newfx -o "$tmp/rc"
"$B/aicprof" bench "$tmp/rc" >"$tmp/rc-table" 2>"$tmp/rc-log"; rc=$?
cat "$tmp/rc-table"
grep -v '^aicprof: \(building\|running\)' "$tmp/rc-log" | sed 's/^/# /'
check "row and column fixtures: bench exits 0" test "$rc" = 0
check "row and column fixtures: every group's numerics pass" python3 -c "
import json, sys
r = json.load(open('$tmp/rc/bench.json'))
print('#', [(x['group'], x['ok']) for x in r])
sys.exit(0 if r and all(x['ok'] for x in r) else 1)"

# the binding against PyTorch: p = 0 must match torch; p = 0.1 must be torch's math on the kept
# elements, the residual on the dropped ones, about 10% dropped
sed -e 's/"p": 0.1/"p": 0.0/' -e 's/mlp_gelu_dropout_add/mlp_p0/' "$fx/mlp.json" >"$tmp/mlp_p0.json"
"$B/aicprof" fuse --group "$tmp/mlp_p0.json" -o "$tmp/p0" >/dev/null
cp "$tmp/fused/mlp_gelu_dropout_add/tune.json" "$tmp/p0/mlp_p0/" 2>/dev/null
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	python3 "$top/tests/gpu/torch-fusion.py" "$tmp/p0/mlp_p0" "$tmp/fused/mlp_gelu_dropout_add" ||
		nok "the binding check against PyTorch ran to its end"
else
	nok "PyTorch with CUDA is needed for the binding check"
fi
