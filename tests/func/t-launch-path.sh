#!/bin/sh
# The shim's launch path end to end on a CPU-only machine: build/libaicprof.so preloaded into
# Python, the mock driver and CUPTI of tests/mock, launches fired through the callbacks from a
# Python frame 30 calls deep with the GIL released (tests/tools/launch_cost.py). Checks that
# every launch is in the trace with its site, that the repeats were attributed by the stack
# cache (AICPROF_SELFTIME=1's counters, printed as aicprof: lines, so AICPROF_QUIET=0 even under
# the suite's AICPROF_QUIET=1), and that the site names the Python line. Then the same with the
# program's first launch, and then its first 40, at module level (too shallow for the raw walker
# to learn the frame layout from): the walker still comes on.
. "$(dirname "$0")/lib.sh"
C=${CUDA_HOME:-/usr/local/cuda}
cc -O2 -shared -fPIC -I"$C/include" -I"$C/targets/x86_64-linux/include" -I"$C/extras/CUPTI/include" \
	-o "$tmp/lc.so" "$top/tests/tools/launch_cost.c" -ldl 2>"$tmp/cc.err" ||
	{ nok "launch_cost.c builds ($(head -c 300 "$tmp/cc.err"))"; exit 0; }
BATCHES=3 MODE=t AICPROF_QUIET=0 AICPROF_SELFTIME=1 AICPROF_EAGER=1 AICPROF_CUPTI=$B/mock/libcupti.so.13 \
	AICPROF_OUTPUT="$tmp/t.aicp.jsonl" LD_LIBRARY_PATH=$B/mock LD_PRELOAD=$B/libaicprof.so \
	python3 "$top/tests/tools/launch_cost.py" "$tmp/lc.so" "$B/mock/libcupti.so.13" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
check "the program exits 0 under the shim ($rc)" test "$rc" = 0
python3 - "$tmp/t.aicp.jsonl" "$tmp/err" <<'PY' >"$tmp/res"
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
launches = [r for r in recs if r.get("t") == "launch"]
sites = {r["id"]: r for r in recs if r.get("t") == "site"}
err = open(sys.argv[2]).read()
def calls(part):
    m = re.search(r"self time: %s: (\d+) calls" % re.escape(part), err)
    return int(m.group(1)) if m else 0
with_site = [l for l in launches if "site" in l and l["site"] in sites]
frames = sites[with_site[0]["site"]]["frames"] if with_site else []
print(len(launches), len(with_site), len({l["site"] for l in with_site}),
      calls("attribution: stack cache"), calls("attribution (in launches)"),
      int(bool(frames) and frames[0]["file"].endswith("launch_cost.py") and frames[0]["func"] == "batch"))
PY
read -r nl ns nsites cached attr named <"$tmp/res" || { nok "trace readable"; exit 0; }
check "3,000 launches recorded ($nl)" test "$nl" = 3000
check "every launch has a recorded site ($ns)" test "$ns" = 3000
check "one call line, one site ($nsites)" test "$nsites" = 1
check "attribution ran for every launch ($attr)" test "$attr" = 3000
check "the stack cache attributed the repeats ($cached of $attr)" test "$cached" -ge 2990
check "the site's first frame is batch() in launch_cost.py" test "$named" = 1

# shallow N WHAT: the program's first N launches at module level (one Python frame, too shallow
# to learn the frame layout from), then the 3,000 from depth: the raw walker must still come on,
# and the stack cache attribute the repeats. Before, one such launch turned it off for the whole
# run (session 9); then a warm-up loop of more than its 16 tries did (bench_step.py's oop loop on
# the H200 took the GIL's walk for all 228,703 of its launches): now a stack too shallow is no
# failed check.
shallow() {
	LC_FIRST_SHALLOW=$1 BATCHES=3 MODE=t AICPROF_QUIET=0 AICPROF_SELFTIME=1 AICPROF_EAGER=1 \
		AICPROF_CUPTI=$B/mock/libcupti.so.13 AICPROF_OUTPUT="$tmp/s$1.aicp.jsonl" \
		LD_LIBRARY_PATH=$B/mock LD_PRELOAD=$B/libaicprof.so \
		python3 "$top/tests/tools/launch_cost.py" "$tmp/lc.so" "$B/mock/libcupti.so.13" \
		>"$tmp/out$1" 2>"$tmp/err$1"
	rc=$?
	cached=$(sed -n 's/.*self time: attribution: stack cache: \([0-9]*\) calls.*/\1/p' "$tmp/err$1")
	gil=$(sed -n 's/.*self time: attribution: API walk, GIL taken: \([0-9]*\) calls.*/\1/p' "$tmp/err$1")
	check "$2: exit 0 ($rc)" test "$rc" = 0
	check "$2: the stack cache still attributes the repeats (${cached:-0} of $((3000 + $1)); API walks with the GIL taken: ${gil:-0})" \
		test "${cached:-0}" -ge 2990
}
shallow 1 "first launch at module level"
shallow 40 "40 launches at module level first"
