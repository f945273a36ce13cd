#!/bin/sh
# A launch's parameters scanned on the writer thread (AICPROF_DEFER=1, the default where
# pointers are resolved offline: preload/argscan.c) give the trace the launching thread's own
# scan gives (AICPROF_DEFER=0), line for line but for the sequence numbers, times and thread
# ids. The mock driver and CUPTI of tests/mock, the shim preloaded into Python
# (tests/tools/launch_cost.py, LC_WHAT=mixed): 2,000 launches alternating the mock kernel (a
# pointer, a number outside every allocation, an int) and ATen's strided loop by name, whose
# 640-byte closure is kept whole, holds two pointers and a third word in no allocation, and
# keeps the 8 bytes after its last pointer.
. "$(dirname "$0")/lib.sh"
C=${CUDA_HOME:-/usr/local/cuda}
cc -O2 -shared -fPIC -I"$C/include" -I"$C/targets/x86_64-linux/include" -I"$C/extras/CUPTI/include" \
	-o "$tmp/lc.so" "$top/tests/tools/launch_cost.c" -ldl 2>"$tmp/cc.err" ||
	{ nok "launch_cost.c builds ($(head -c 300 "$tmp/cc.err"))"; exit 0; }
for d in 0 1; do
	LC_WHAT=mixed BATCHES=2 DEPTH=5 AICPROF_DEFER=$d AICPROF_EAGER=1 \
		AICPROF_CUPTI=$B/mock/libcupti.so.13 AICPROF_OUTPUT="$tmp/d$d.aicp.jsonl" \
		LD_LIBRARY_PATH=$B/mock LD_PRELOAD=$B/libaicprof.so \
		python3 "$top/tests/tools/launch_cost.py" "$tmp/lc.so" "$B/mock/libcupti.so.13" \
		>"$tmp/out$d" 2>"$tmp/err$d"
	rc=$?
	check "AICPROF_DEFER=$d: the program exits 0 under the shim ($rc)" test "$rc" = 0
done
python3 - "$tmp/d0.aicp.jsonl" "$tmp/d1.aicp.jsonl" <<'PY' >"$tmp/res"
import json, sys
def load(p):
    recs = [json.loads(l) for l in open(p)]
    end = [r for r in recs if r.get("t") == "end"]
    ls = []
    for r in recs:
        if r.get("t") == "launch":
            for k in ("seq", "ts", "tid", "c"):
                r.pop(k, None)
            ls.append(json.dumps(r, sort_keys=True))
    return ls, end[0].get("deferred", -1) if end else -1
a, da = load(sys.argv[1])
b, db = load(sys.argv[2])
legacy = [json.loads(l) for l in b if '"x"' in l]
lg = legacy[0]["args"][1] if legacy else {}
ok_legacy = int(bool(legacy) and len(lg.get("x", "")) == 1280 and
                [p[1] for p in lg.get("p", [])] == ["0x7f0000000200", "0x7f0000000400", "0x1234"][:len(lg.get("p", []))] and
                len(lg.get("p", [])) >= 2 and "a" in lg)
print(len(a), len(b), int(a == b), da, db, len(legacy), ok_legacy)
PY
read -r na nb same da db nleg okleg <"$tmp/res" || { nok "traces readable"; exit 0; }
check "2,000 launches each way (scanned here $na, deferred $nb)" test "$na" = 2000 -a "$nb" = 2000
check "every deferred launch line is the launching thread's line" test "$same" = 1
check "the writer scanned every launch when deferred ($db), none when not ($da)" \
	test "$db" = 2000 -a "$da" = 0
check "the strided loop: 1,000 launches with the closure's 640 bytes whole, its pointers and the word after the last ($nleg, $okleg)" \
	test "$nleg" = 1000 -a "$okleg" = 1
