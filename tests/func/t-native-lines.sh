# Native lines: samples/cuda/chain.cu built here with nvcc -g -lineinfo (no GPU needed); the
# chain sample trace's kernel sites are rewritten to point at known return addresses in that
# binary (found with nm, objdump and addr2line: main's call of each kernel's host wrapper, the
# wrapper's call of nvcc's stub, the stub's call into cuda_runtime.h, the statically linked
# cudaLaunchKernel), and `aicprof analyze` must name chain.cu:LINE and main for each kernel.
# A missing module, a build id that differs and a binary without line information each give
# exactly one warning, and those sites keep module+offset.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
q() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
if ! [ -x "$NVCC" ]; then echo "ok - # SKIP no nvcc at $NVCC"; exit 0; fi
"$NVCC" -g -lineinfo -o "$tmp/chain" "$top/samples/cuda/chain.cu" 2>"$tmp/nvcc.err"
check "nvcc -g -lineinfo builds chain.cu" test -x "$tmp/chain"
"$NVCC" -o "$tmp/chain-nog" "$top/samples/cuda/chain.cu" 2>>"$tmp/nvcc.err"

# frames.py BINARY: one line per kernel: mangled wrapper, expected line, then the frames
# (offset hex) innermost first: cudart, cuda_runtime.h template, stub, wrapper, main
cat >"$tmp/frames.py" <<'PY'
import re, subprocess, sys
exe = sys.argv[1]
run = lambda *a: subprocess.run(a, capture_output=True, text=True, check=True).stdout
syms = {}
for l in run("nm", exe).splitlines():
    p = l.split()
    if len(p) == 3 and p[1] in "tTwW":
        syms.setdefault(p[2], int(p[0], 16))
# first PT_LOAD, page-aligned: offsets are relative to it (dladdr's dli_fbase)
load = [l.split() for l in run("readelf", "-lW", exe).splitlines() if l.strip().startswith("LOAD")]
base = int(load[0][2], 16) & ~4095
dis = run("objdump", "-d", "--no-show-raw-insn", exe)
funcs, cur = {}, None
for l in dis.splitlines():
    m = re.match(r"^([0-9a-f]+) <(.*)>:$", l)
    if m:
        cur = m.group(2); funcs[cur] = []; continue
    m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", l)
    if m and cur:
        funcs[cur].append((int(m.group(1), 16), m.group(2), m.group(3)))
def ret_after_call(caller, callee):  # return addresses of calls from caller to callee
    ins = funcs[caller]
    return [ins[i + 1][0] for i in range(len(ins) - 1)
            if ins[i][1].startswith("call") and ("<%s>" % callee) in ins[i][2]]
def line(a):
    return run("addr2line", "-e", exe, "%x" % (a - 1)).split()[0]
def calls(caller):  # (return address, callee) of each direct call
    ins = funcs[caller]
    return [(ins[i + 1][0], re.search(r"<(.*)>", ins[i][2]).group(1)) for i in range(len(ins) - 1)
            if ins[i][1].startswith("call") and re.search(r"<(.*)>", ins[i][2])]
def launch_path(f):  # from the stub inwards along calls of *cudaLaunchKernel*, innermost first
    fr = []
    while f != "cudaLaunchKernel":
        c = [(r, t) for r, t in calls(f) if "cudaLaunchKernel" in t]
        if not c:
            break
        fr.insert(0, c[0][0])
        f = c[0][1]
        while f in funcs and len(funcs[f]) < 8 and funcs[f][-1][1] == "jmp":  # a tail call
            f = re.search(r"<(.*)>", funcs[f][-1][2]).group(1)
    # the statically linked runtime: a return address inside cudaLaunchKernel
    return [calls("cudaLaunchKernel")[0][0]] + fr
for w in ["_Z5scalePfPKffi", "_Z8add_biasPfPKfS1_ii", "_Z4reluPfPKfi", "_Z6squarePfPKfi",
          "_Z10sum_reducePfPKfi", "_Z12sum_partialsPfPKfi"]:
    stub = [s for s in funcs if "__device_stub_" + w in s][0]
    m = ret_after_call("main", w)[0]
    fr = launch_path(stub) + [ret_after_call(w, stub)[0], m]
    print(w, line(m).rsplit(":", 1)[1], " ".join("0x%x" % (a - base) for a in fr))
PY
python3 "$tmp/frames.py" "$tmp/chain" >"$tmp/frames" 2>"$tmp/frames.err"
check "frames of the six kernels found" test "$(wc -l <"$tmp/frames")" = 6
bid=$(readelf -n "$tmp/chain" | sed -n 's/.*Build ID: //p')
check "the binary has a build id" test -n "$bid"

# mk.py FRAMES MODULE BUILD_ID OUT: the chain sample with its kernel sites rewritten
cat >"$tmp/mk.py" <<'PY'
import json, sys
fr = {l.split()[0]: l.split()[2:] for l in open(sys.argv[1])}
mod, bid, out = sys.argv[2], sys.argv[3], open(sys.argv[4], "w")
lines = open(sys.argv[5]).read().splitlines()
strs, site_fn = {}, {}
for l in lines:
    r = json.loads(l)
    if r["t"] == "str": strs[r["id"]] = r["s"]
    if r["t"] == "launch" and "site" in r: site_fn[r["site"]] = strs[r["fn"]]
for l in lines:
    r = json.loads(l)
    if r["t"] == "site" and site_fn.get(r["id"]) in fr:
        r["native"] = [dict(module=mod, offset=o, **({"build_id": bid} if bid else {}))
                       for o in fr[site_fn[r["id"]]]]
        l = json.dumps(r, separators=(",", ":"))
    out.write(l + "\n")
PY
S=$top/samples/traces/chain.aicp.jsonl
python3 "$tmp/mk.py" "$tmp/frames" "$tmp/chain" "$bid" "$tmp/t.aicp.jsonl" "$S"
"$A" analyze --no-report -o "$tmp/out" "$tmp/t.aicp.jsonl" 2>"$tmp/err"; rc=$?
K=$tmp/out/summary.json
check "analyze exits 0" test "$rc" = 0
exp=$(awk '{printf "%s\"%s\":%s", (NR>1?",":""), $1, $2}' "$tmp/frames")
N="{n['name']:n for n in s['nodes']}"
M="{'scale':'_Z5scalePfPKffi','add_bias':'_Z8add_biasPfPKfS1_ii','relu':'_Z4reluPfPKfi','square':'_Z6squarePfPKfi','sum_reduce':'_Z10sum_reducePfPKfi','sum_partials':'_Z12sum_partialsPfPKfi'}"
check "each kernel's site is main's line in chain.cu" q "$K" "all(($N)[k]['site']['file'].endswith('samples/cuda/chain.cu') and ($N)[k]['site']['line']=={$exp}[v] and ($N)[k]['site']['func']=='main' for k,v in ($M).items())"
check "sources say chain.cu:LINE" q "$K" "($N)['scale']['sources']==['$top/samples/cuda/chain.cu:'+str({$exp}['_Z5scalePfPKffi'])] or ($N)['scale']['sources'][0].endswith('chain.cu:'+str({$exp}['_Z5scalePfPKffi']))"
check "the six kernels have six lines" q "$K" "len({($N)[k]['site']['line'] for k in ($M)})==6"
# the module the recording machine ran (the memcpy sites are not rewritten): not on this one
gone=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print([n['sources'][0] for n in s['nodes'] if n['name'].startswith('memcpy')][0])" "$K")
check "the missing module (memcpy sites) warned about once ($gone)" test "$(grep -cF "'$gone': no such module file" "$tmp/err")" = 1
check "no other warning" test "$(grep -c warning "$tmp/err")" = 1
check "the memcpy's site keeps its module, not a line" q "$K" "all(':' not in n['sources'][0] and not n['sources'][0].endswith('.cu') for n in s['nodes'] if n['name'].startswith('memcpy'))"

# the binary rebuilt since the run: its build id differs
python3 "$tmp/mk.py" "$tmp/frames" "$tmp/chain" 0123456789abcdef0123456789abcdef01234567 "$tmp/m.aicp.jsonl" "$S"
"$A" analyze --no-report -o "$tmp/mm" "$tmp/m.aicp.jsonl" 2>"$tmp/err2"
check "a build id mismatch: one warning" test "$(grep -c "'$tmp/chain': build id $bid differs from the trace's 0123456789abcdef" "$tmp/err2")" = 1
check "a build id mismatch: sites keep module+offset" q "$tmp/mm/summary.json" "all(n['site'] is None for n in s['nodes'])"

# without -g: no line information (its frames' offsets are wrong for it, which is never read)
python3 "$tmp/mk.py" "$tmp/frames" "$tmp/chain-nog" "" "$tmp/n.aicp.jsonl" "$S"
"$A" analyze --no-report -o "$tmp/nn" "$tmp/n.aicp.jsonl" 2>"$tmp/err3"
check "no line information: one warning" test "$(grep -c "'$tmp/chain-nog': no line information; build with -g or -lineinfo" "$tmp/err3")" = 1
