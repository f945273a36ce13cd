"""Writes a trace in which one buffer is read by N kernels of N distinct names, each writing a
buffer of its own, for the scale test of the invariant search (tests/func/t-scale-fanout.sh).
With --sites, every launch also names a source line of its own (fanout.py line i+1), so the
summary's per-source groupings see N distinct sources.
Usage: python3 mk-fanout.py N [--sites] > trace.aicp.jsonl"""
import json
import sys

n = int(sys.argv[1])
sites = "--sites" in sys.argv[2:]
w = sys.stdout.write
hdr = {"t": "header", "format": 1, "tool": "aicprof 0.1.0", "pid": 1, "argv": ["fanout"],
       "cwd": "/nonexistent", "clock": "realtime", "ts": 1000, "start_ts": 1000,
       "devices": [{"id": 0, "name": "GPU", "sm_count": 132, "peak_bw_gbs": 4000}]}
w(json.dumps(hdr, separators=(",", ":")) + "\n")
w('{"t":"alloc","seq":0,"ts":1001,"tid":1,"id":0,"ptr":"0x10000000","size":4096,"api":"cuMemAlloc_v2"}\n')
t = 2000
for i in range(n):
    w('{"t":"str","id":%d,"s":"k%d"}\n' % (i, i))
    if sites:
        w('{"t":"site","id":%d,"how":"python","frames":[{"file":"fanout.py","line":%d,"func":"main","user":true}]}\n'
          % (i, i + 1))
    w('{"t":"alloc","seq":%d,"ts":%d,"tid":1,"id":%d,"ptr":"0x%x","size":4096,"api":"cuMemAlloc_v2"}\n'
      % (2 * i + 1, t, i + 1, 0x20000000 + i * 4096))
    w('{"t":"launch","seq":%d,"ts":%d,"tid":1,"c":%d,"api":"cuLaunchKernel","fn":%d,"grid":[1,1,1],'
      '"block":[32,1,1],"smem":0,"stream":"0x0",%s"args":[{"i":0,"o":0,"n":8,"v":"0x%x","p":[[0,"0x%x",%d,0]]},'
      '{"i":1,"o":8,"n":8,"v":"0x10000000","p":[[0,"0x10000000",0,0]]}]}\n'
      % (2 * i + 2, t + 1, i + 1, i, '"site":%d,' % i if sites else "", 0x20000000 + i * 4096, 0x20000000 + i * 4096, i + 1))
    w('{"t":"kernel","c":%d,"name":%d,"dev":0,"ctx":1,"stream":7,"start":%d,"end":%d,"grid":[1,1,1],'
      '"block":[32,1,1],"regs":16,"ssmem":0,"dsmem":0}\n' % (i + 1, i, t + 2, t + 5))
    t += 10
w('{"t":"end","ts":%d,"reason":"exit","records":%d,"kernels":%d}\n' % (t, 4 * n + 2, n))
