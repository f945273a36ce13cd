#!/bin/sh
# make gpu-test: the capture suite on a machine with an NVIDIA GPU (the device machine).
# Records the samples with the shim and checks the traces against ground truth taken in the
# same run (torch.profiler's kernel count, the launches the programs made). Prints TAP lines and
# ends with "N passed, N failed". Traces and logs go to $GPU_OUT (default build/gpu).
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=${GPU_OUT:-$top/build/gpu}
mkdir -p "$out"
SHIM=$top/build/libaicprof.so
PY=${PYTHON:-python3}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
pass=0; fail=0
t() { # description, command...: one TAP line
	d=$1; shift
	if "$@"; then echo "ok - $d"; pass=$((pass + 1)); else echo "not ok - $d"; fail=$((fail + 1)); fi
}
chk() { # trace_check.py lines count into pass/fail
	"$PY" tests/gpu/trace_check.py "$@" >"$out/chk.log" 2>&1; cat "$out/chk.log"
	pass=$((pass + $(grep -c '^ok ' "$out/chk.log"))); fail=$((fail + $(grep -c '^not ok ' "$out/chk.log")))
}
rec() { # name, command...: records the command with the shim into $out/name.aicp.jsonl
	n=$1; shift
	rm -f "$out/$n.aicp.jsonl"
	AICPROF_OUTPUT="$out/$n.aicp.jsonl" LD_PRELOAD=$SHIM "$@" >"$out/$n.stdout" 2>"$out/$n.stderr"
}

# 1. plain CUDA C: the chain sample, native attribution
t "nvcc builds samples/cuda/chain.cu" "$NVCC" -O2 -lineinfo -o "$out/chain" samples/cuda/chain.cu
"$out/chain" 6 >"$out/chain.bare" 2>&1; bare_rc=$?
rec chain "$out/chain" 6; rc=$?
t "chain: exit code unchanged under the shim ($bare_rc -> $rc)" test "$rc" = "$bare_rc"
t "chain: output unchanged" cmp -s "$out/chain.bare" "$out/chain.stdout"
chk basic "$out/chain.aicp.jsonl"
chk count "$out/chain.aicp.jsonl" 36
chk nvtx "$out/chain.aicp.jsonl" 6
chk allocs "$out/chain.aicp.jsonl"
chk sites "$out/chain.aicp.jsonl" chain

# 2. PyTorch samples: against torch.profiler's count of the same work
for s in mlp_train attention_train; do
	gt=$(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$PY" tests/gpu/count_kernels.py samples/$s.py 2>"$out/$s.gt.err" | sed -n 's/^kernels //p')
	rec $s "$PY" samples/$s.py; rc=$?
	t "$s: runs under the shim (exit $rc)" test "$rc" = 0
	chk basic "$out/$s.aicp.jsonl"
	t "$s: torch.profiler ground truth available ($gt)" test -n "$gt"
	chk count "$out/$s.aicp.jsonl" "${gt:-0}"
	chk nvtx "$out/$s.aicp.jsonl" 8
	chk allocs "$out/$s.aicp.jsonl"
	chk blocks "$out/$s.aicp.jsonl"
	chk elementwise "$out/$s.aicp.jsonl"
	chk sites "$out/$s.aicp.jsonl" "$s.py"
done

# 3. calibration mode (exact writes) on the MLP sample, for the analyzer's accuracy figure
AICPROF_WRITES=probe AICPROF_PROBE_COUNT=64 rec mlp_probe "$PY" samples/mlp_train.py --steps 3; rc=$?
t "mlp_train under AICPROF_WRITES=probe (exit $rc)" test "$rc" = 0
grep -q '"cal":\[' "$out/mlp_probe.aicp.jsonl"; t "calibration flags recorded" test $? = 0
AICPROF_WRITES=probe AICPROF_PROBE_COUNT=64 rec attention_probe "$PY" samples/attention_train.py --steps 3

# 4. threads launching at once
rec threads "$PY" tests/gpu/threads.py; rc=$?
t "threads: exit 0" test "$rc" = 0
want=$(sed -n 's/^launched //p' "$out/threads.stdout")
have=$(grep -c '"t":"launch"' "$out/threads.aicp.jsonl")
t "threads: launches recorded >= launches made ($have >= $want)" test "${have:-0}" -ge "${want:-1}"
chk basic "$out/threads.aicp.jsonl"

# 5. torch.profiler inside a recorded program, two profiler sessions. AICPROF_MUX=1 (the
# default): both work (cuptimux.c)
"$PY" tests/gpu/coexist.py run "$out/coexist.bare.json" >"$out/coexist.bare" 2>&1
AICPROF_MUX=1 rec coexist "$PY" tests/gpu/coexist.py run "$out/coexist.shim.json"; rc=$?
t "coexist AICPROF_MUX=1: exit 0 ($rc)" test "$rc" = 0
t "coexist AICPROF_MUX=1: aicprof did not yield CUPTI" sh -c "! grep -q '^aicprof: another tool subscribed' '$out/coexist.stderr'"
"$PY" tests/gpu/coexist.py compare "$out/coexist.bare.json" "$out/coexist.shim.json" "$out/coexist.aicp.jsonl" >"$out/chk.log" 2>&1
cat "$out/chk.log"
pass=$((pass + $(grep -c '^ok ' "$out/chk.log"))); fail=$((fail + $(grep -c '^not ok ' "$out/chk.log")))
chk basic "$out/coexist.aicp.jsonl"
# the fallback (AICPROF_MUX=0): aicprof yields, the profiler still sees what it sees alone
AICPROF_MUX=0 rec coexist_yield "$PY" tests/gpu/coexist.py run "$out/coexist.yield.json"; rc=$?
t "coexist AICPROF_MUX=0: exit 0 ($rc)" test "$rc" = 0
t "coexist AICPROF_MUX=0: one aicprof line says it yields" grep -q '^aicprof: another tool subscribed' "$out/coexist_yield.stderr"
"$PY" tests/gpu/coexist.py compare "$out/coexist.bare.json" "$out/coexist.yield.json" "$out/coexist_yield.aicp.jsonl" yielded >"$out/chk.log" 2>&1
cat "$out/chk.log"
pass=$((pass + $(grep -c '^ok ' "$out/chk.log"))); fail=$((fail + $(grep -c '^not ok ' "$out/chk.log")))

# 6. a process that never uses CUDA writes nothing; exit codes pass through
rm -f "$out"/nocuda.*
(cd "$out" && LD_PRELOAD=$SHIM "$PY" -c 'import sys; sys.exit(5)'); rc=$?
t "python without CUDA: exit code 5 kept" test "$rc" = 5
t "python without CUDA: no trace" sh -c "! ls $out/aicprof.*.aicp.jsonl >/dev/null 2>&1"
rec sysexit "$PY" -c 'import torch,sys; torch.ones(4,device="cuda").sum().item(); sys.exit(3)'; rc=$?
t "sys.exit(3) under the shim keeps 3" test "$rc" = 3
chk basic "$out/sysexit.aicp.jsonl"
rec sigterm "$PY" -c 'import torch,os,signal; torch.ones(4,device="cuda").sum().item(); os.kill(os.getpid(), signal.SIGTERM)'; rc=$?
t "SIGTERM: killed by the signal as without the shim ($rc)" test "$rc" = 143
t "SIGTERM: trace readable and closed" sh -c "tail -1 '$out/sigterm.aicp.jsonl' | grep -q '\"t\":\"end\"'"

# 6b. kernels inside CUDA graph replays
rec graphs "$PY" tests/gpu/graphs.py; rc=$?
t "graphs: exit 0 ($rc)" test "$rc" = 0
g=$(grep -c '"t":"kernel".*"graph":' "$out/graphs.aicp.jsonl")
want=$(sed -n 's/^graph kernels //p' "$out/graphs.stdout")
t "graphs: every kernel of every replay recorded ($g of $want)" test "${g:-0}" -ge "${want:-1}"

# 6c. PyTorch's expandable segments: virtual-memory mappings are recorded, pointers map to them
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True rec expandable "$PY" -c 'import torch; x = torch.randn(1<<20, device="cuda"); print(float((x*2).sum()))'; rc=$?
t "expandable segments: exit 0 ($rc)" test "$rc" = 0
t "expandable segments: cuMemMap recorded" grep -q '"t":"vmm".*"api":"cuMemMap"' "$out/expandable.aicp.jsonl"
chk reserved "$out/expandable.aicp.jsonl" # kernel pointers map to the reserved range

# 6d. fork before CUDA: the child that uses CUDA writes its own trace, and so does the parent
rm -f "$out"/fork.*.aicp.jsonl
AICPROF_OUTPUT="$out/fork.%p.aicp.jsonl" LD_PRELOAD=$SHIM "$PY" -c '
import os
pid = os.fork()
if pid == 0:
    import torch; torch.ones(8, device="cuda").add_(1); torch.cuda.synchronize(); os._exit(0)
os.waitpid(pid, 0)
import torch; torch.ones(8, device="cuda").mul_(2); torch.cuda.synchronize()' >"$out/fork.stdout" 2>&1; rc=$?
t "fork: exit 0 ($rc)" test "$rc" = 0
n=$(ls "$out"/fork.*.aicp.jsonl 2>/dev/null | wc -l)
t "fork: parent and child each wrote a trace ($n)" test "$n" = 2
for f in "$out"/fork.*.aicp.jsonl; do chk basic "$f"; done

# 6e. faults in the host process (tests/gpu/faults.py, about 90 s): one TAP line per check
"$PY" tests/gpu/faults.py "$SHIM" "$out/faults" "$NVCC" "$top/build/aicprof" >"$out/faults.log" 2>&1
cat "$out/faults.log"
pass=$((pass + $(grep -c '^ok ' "$out/faults.log"))); fail=$((fail + $(grep -c '^not ok ' "$out/faults.log")))
grep -q '^# faults: .* s in all' "$out/faults.log" || { echo "not ok - faults.py did not finish"; fail=$((fail + 1)); }

# 7. overhead per launch, interleaved, medians (a benchmark, not a pass/fail test)
: >"$out/bench.jsonl"
rounds="1 2 3"; [ "${GPU_BENCH:-1}" = 0 ] && rounds=
for round in $rounds; do
	"$PY" tests/gpu/bench_launch.py bare >>"$out/bench.jsonl" 2>/dev/null
	AICPROF_OUTPUT=$out/bench.shim.aicp.jsonl LD_PRELOAD=$SHIM "$PY" tests/gpu/bench_launch.py shim >>"$out/bench.jsonl" 2>/dev/null
	AICPROF_OUTPUT=$out/bench.noattr.aicp.jsonl AICPROF_ATTRIB=0 LD_PRELOAD=$SHIM "$PY" tests/gpu/bench_launch.py noattr >>"$out/bench.jsonl" 2>/dev/null
	"$PY" tests/gpu/bench_launch.py profiler >>"$out/bench.jsonl" 2>/dev/null
	AICPROF_OUTPUT=$out/bench.min.aicp.jsonl AICPROF_ATTRIB=0 AICPROF_ARGS=0 LD_PRELOAD=$SHIM "$PY" tests/gpu/bench_launch.py noattr_noargs >>"$out/bench.jsonl" 2>/dev/null
	AICPROF_OUTPUT=$out/bench.noact.aicp.jsonl AICPROF_ATTRIB=0 AICPROF_ARGS=0 AICPROF_ACTIVITY=0 LD_PRELOAD=$SHIM "$PY" tests/gpu/bench_launch.py callbacks_only >>"$out/bench.jsonl" 2>/dev/null
done
[ -n "$rounds" ] && "$PY" - "$out/bench.jsonl" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = {m: statistics.median(r["us_per_launch"] for r in rows if r["mode"] == m) for m in ("bare", "shim", "noattr", "noattr_noargs", "callbacks_only", "profiler") if any(r["mode"] == m for r in rows)}
print("# launch overhead (median us per launch): " + ", ".join(f"{k} {v:.2f}" for k, v in med.items()))
if "bare" in med:
    print("# added per launch: " + ", ".join(f"{k} {med[k]-med['bare']:+.2f} us" for k in med if k != "bare"))
PYEOF

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
