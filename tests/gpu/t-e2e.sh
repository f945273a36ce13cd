#!/bin/sh
# Before and after, end to end, on the device machine. For samples/mlp_train.py and
# samples/attention_train.py, in copies of samples/ (each its own git repository): record the
# sample under the shim, aicprof analyze + fuse, git apply aicprof.patch, build the fused library
# with nvcc (make -C aicprof_fused), record the patched program, aicprof compare before after;
# then run the original, the patched and the torch.compile'd original (tests/gpu/e2e_run.py wraps
# the sample's own main) interleaved, two rounds of E2E_STEPS steps each, and print median step
# times (after E2E_WARM warm-up steps) and losses. Checks: the patch applies, the library
# builds, the patched program runs, its loss matches the original's within E2E_TOL (relative, on
# the mean of the last five steps' losses: dropout masks differ from PyTorch's, so losses agree
# statistically, not bitwise), its step time is below the original's. Prints the fraction of
# torch.compile's reduction that the patch recovers (target 50%; a figure, not a check).
# TAP lines. Run from the repository root after make: sh tests/gpu/t-e2e.sh
. "$(dirname "$0")/../func/lib.sh"
A=$B/aicprof
SHIM=$B/libaicprof.so
PY=${PYTHON:-python3}
NVCC=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}
STEPS=${E2E_STEPS:-25}
WARM=${E2E_WARM:-8}
TOL=${E2E_TOL:-0.05}
RUN="timeout 240 $PY $top/tests/gpu/e2e_run.py"
arch=$("$PY" -c 'import torch; M, m = torch.cuda.get_device_capability(); print("sm_%d%d" % (M, m))')
echo "# nvcc $NVCC, arch $arch, $STEPS steps, $WARM warm-up, loss tolerance $TOL"

copy() { # copy DIR: samples/ in a fresh git repository
	mkdir -p "$1" && cp -r "$top/samples" "$1/" && (cd "$1" && git init -q . && git add -A &&
		git -c user.email=t@t -c user.name=t commit -qm samples)
}

for s in mlp_train attention_train; do
	w=$tmp/$s.patched
	o=$tmp/$s.orig
	copy "$w"
	copy "$o"
	(cd "$w" && AICPROF_OUTPUT="$w/before.aicp.jsonl" LD_PRELOAD=$SHIM "$PY" "samples/$s.py" >before.out 2>&1)
	check "$s: recorded under the shim" test $? = 0 -a -s "$w/before.aicp.jsonl"
	(cd "$w" && "$A" analyze -q --no-report before.aicp.jsonl -o a >analyze.log 2>&1 &&
		"$A" fuse a -o f >fuse.log 2>&1)
	check "$s: aicprof analyze and fuse" test $? = 0
	sed 's/^/# fuse: /' "$w/fuse.log"
	(cd "$w" && git apply f/aicprof.patch 2>apply.log)
	check "$s: git apply aicprof.patch" test $? = 0
	sed 's/^/# /' "$w/apply.log"
	(cd "$w" && git diff -- samples | sed -n 's/^\([-+][^-+].*\)/# diff: \1/p')
	(cd "$w" && make -C aicprof_fused -j16 NVCC="$NVCC" ARCH="$arch" >build.log 2>&1)
	check "$s: the fused library builds with nvcc" test $? = 0 -a -f "$w/aicprof_fused/libaicprof_fused.so"
	tail -5 "$w/build.log" | sed 's/^/# build: /'
	(cd "$w" && AICPROF_OUTPUT="$w/after.aicp.jsonl" LD_PRELOAD=$SHIM "$PY" "samples/$s.py" >after.out 2>&1)
	check "$s: the patched program runs under the shim" test $? = 0 -a -s "$w/after.aicp.jsonl"
	grep -i 'aicprof\|warn\|error' "$w/after.out" | head -5 | sed 's/^/# after: /'
	"$A" compare "$w/before.aicp.jsonl" "$w/after.aicp.jsonl" >"$w/compare.txt" 2>&1
	check "$s: aicprof compare before after" test $? = 0
	sed 's/^/# compare: /' "$w/compare.txt"

	for r in 1 2; do # interleaved: original, patched, compiled
		$RUN "$o/samples/$s.py" -- --steps "$STEPS" >"$tmp/$s.orig.$r" 2>"$tmp/$s.orig.$r.err"
		$RUN "$w/samples/$s.py" -- --steps "$STEPS" >"$tmp/$s.patched.$r" 2>"$tmp/$s.patched.$r.err"
		$RUN "$o/samples/$s.py" --compile -- --steps "$STEPS" >"$tmp/$s.compiled.$r" 2>"$tmp/$s.compiled.$r.err"
	done
	for v in orig patched compiled; do
		tail -3 "$tmp/$s.$v.1.err" | sed "s/^/# $v stderr: /"
	done
	"$PY" - "$tmp" "$s" "$WARM" "$TOL" <<'EOF'
import json, statistics, sys
tmp, s, warm, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
def load(v):
    ms, loss = [], []
    for r in (1, 2):
        try:
            d = json.loads(open("%s/%s.%s.%d" % (tmp, s, v, r)).read().strip().splitlines()[-1])
        except (OSError, ValueError, IndexError):
            return None, None
        ms += d["step_ms"][warm:]
        loss.append(d["loss"])
    return (statistics.median(ms) if ms else None), loss
res = {v: load(v) for v in ("orig", "patched", "compiled")}
for v, (ms, loss) in res.items():
    print("# %s %-8s median step %s ms, loss first %s last %s" % (s, v,
          "%.3f" % ms if ms else "?", "%.5f" % loss[0][0] if loss else "?",
          "%.5f" % loss[0][-1] if loss else "?"))
def tap(ok, what):
    print(("ok - " if ok else "not ok - ") + s + ": " + what)
(mo, lo), (mp, lp), (mc, lc) = res["orig"], res["patched"], res["compiled"]
tap(mo is not None and mp is not None, "original and patched ran to their end")
if mo and mp:
    a = statistics.mean(lo[0][-5:])
    b = statistics.mean(lp[0][-5:])
    rel = abs(a - b) / max(abs(a), 1e-12)
    tap(rel < tol, "patched loss %.5f vs original %.5f (rel %.2e, tolerance %g)" % (b, a, rel, tol))
    tap(mp < mo, "patched step %.3f ms below original %.3f ms (%.2fx)" % (mp, mo, mo / mp))
    if mc:
        red = mo - mc
        frac = (mo - mp) / red if red > 0 else float("nan")
        print("# %s: torch.compile %.3f ms; the patch recovers %.0f%% of compile's reduction "
              "(%.3f of %.3f ms; target 50%%)" % (s, mc, 100 * frac, mo - mp, red))
    else:
        print("# %s: torch.compile did not run to its end" % s)
EOF
done
