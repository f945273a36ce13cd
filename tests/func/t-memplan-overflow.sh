# The memory plan never wraps: eight allocations of 2^62 bytes held before the step (their sum
# is 2^65) must read as at least 2^62 held, not 0 (the sums saturate; docs/reliability.md).
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
python3 - "$tmp/ovf.aicp.jsonl" <<'PY'
import json, sys
hdr = {"t": "header", "format": 1, "tool": "aicprof 0.1.0", "pid": 1, "argv": ["x"], "cwd": "/nonexistent",
       "clock": "realtime", "ts": 1000, "start_ts": 1000,
       "devices": [{"id": 0, "name": "GPU", "sm_count": 132, "peak_bw_gbs": 4000}]}
L = [json.dumps(hdr)]
for i in range(8):
    L.append('{"t":"alloc","seq":%d,"ts":%d,"tid":1,"id":%d,"ptr":"0x%x","size":%d,"api":"cuMemAlloc_v2"}'
             % (i, 1001 + i, i, 0x10000000 + i * 0x1000, 1 << 62))
L.append('{"t":"str","id":0,"s":"k"}')
for s in range(3):
    L.append('{"t":"launch","seq":%d,"ts":%d,"tid":1,"c":%d,"api":"cuLaunchKernel","fn":0,"grid":[1,1,1],'
             '"block":[32,1,1],"smem":0,"stream":"0x0","args":[{"i":0,"o":0,"n":8,"v":"0x10000000",'
             '"p":[[0,"0x10000000",0,0]]}]}' % (10 + s, 2000 + s * 10, s + 1))
    L.append('{"t":"kernel","c":%d,"name":0,"dev":0,"ctx":1,"stream":7,"start":%d,"end":%d,"grid":[1,1,1],'
             '"block":[32,1,1],"regs":16,"ssmem":0,"dsmem":0}' % (s + 1, 2001 + s * 10, 2003 + s * 10))
L.append('{"t":"end","ts":9000,"reason":"exit","records":20,"kernels":3}')
open(sys.argv[1], "w").write("\n".join(L) + "\n")
PY
"$A" analyze -q --no-report "$tmp/ovf.aicp.jsonl" -o "$tmp/o" >/dev/null 2>&1
check "analyze exits 0 on 2^65 bytes of allocations" test $? = 0
check "held at start does not wrap (at least 2^62)" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
mp = d['memory']
sys.exit(0 if mp['held_at_start_bytes'] >= 2**62 and mp['held_peak_bytes'] >= 2**62 else 1)" "$tmp/o/summary.json"
