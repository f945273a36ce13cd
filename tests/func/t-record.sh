# aicprof record runs the program in a child and waits (cli/cmd-record.c): exit codes 0 and 3
# and death by SIGTERM are the command's own; SIGTERM and SIGINT sent to aicprof reach the
# program; a program that writes no trace gets one line saying so; nothing is said when a trace
# was written (faked: a program that creates the file AICPROF_OUTPUT names, %p being its pid),
# nor when the program cannot be run.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
cd "$tmp" || exit 1
# rc CMD...: the exit status as Python sees it (negative: killed by that signal)
rc() { python3 -c 'import subprocess, sys; print(subprocess.run(sys.argv[1:]).returncode)' "$@"; }
msg="aicprof: '/bin/true' exited with 0 and wrote no trace: it never initialised CUDA (or the shim could not load: see the aicprof: lines above)"
r=$(rc "$A" record -o "$tmp/x.aicp.jsonl" -- /bin/true 2>"$tmp/true.err")
check "/bin/true: exit 0 ($r)" test "$r" = 0
check "/bin/true: one line says no trace was written" test "$(cat "$tmp/true.err")" = "$msg"
check "/bin/true: no trace file" test ! -e "$tmp/x.aicp.jsonl"
out=$("$A" record -d 45 -- /bin/sh -c 'echo "$AICPROF_DURATION"' 2>/dev/null)
check "--duration sets AICPROF_DURATION ($out)" test "$out" = 45
"$A" record -d 0 -- /bin/true 2>"$tmp/d0.err"; r=$?
check "--duration 0 is refused ($r)" sh -c "[ $r != 0 ] && grep -q duration '$tmp/d0.err'"
out=$("$A" record -s 0 -- /bin/sh -c 'echo "$AICPROF_STEPS"' 2>/dev/null)
check "--steps 0 sets AICPROF_STEPS=0 ($out)" test "$out" = 0
out=$("$A" record --steps 250 -- /bin/sh -c 'echo "$AICPROF_STEPS"' 2>/dev/null)
check "--steps 250 sets AICPROF_STEPS ($out)" test "$out" = 250
out=$(env -u AICPROF_STEPS "$A" record -- /bin/sh -c 'echo "${AICPROF_STEPS-unset}"' 2>/dev/null)
check "without --steps AICPROF_STEPS is left alone ($out)" test "$out" = unset
"$A" record -s -1 -- /bin/true 2>"$tmp/s1.err"; r=$?
check "--steps -1 is refused ($r)" sh -c "[ $r != 0 ] && grep -q steps '$tmp/s1.err'"
out=$("$A" record --capture-range -- /bin/sh -c 'echo "$AICPROF_CAPTURE"' 2>/dev/null)
check "--capture-range sets AICPROF_CAPTURE=profiler-api ($out)" test "$out" = profiler-api
out=$("$A" record -- /bin/sh -c 'echo "${AICPROF_CAPTURE-unset}"' 2>/dev/null)
check "without --capture-range AICPROF_CAPTURE is left alone ($out)" test "$out" = unset
r=$(rc "$A" record -- /bin/sh -c 'exit 3' 2>"$tmp/three.err")
check "exit 3 is the command's ($r)" test "$r" = 3
check "exit 3: the line says the exit code" grep -qF "aicprof: '/bin/sh' exited with 3 and wrote no trace" "$tmp/three.err"
r=$(rc "$A" record -- /bin/sh -c 'kill -TERM $$' 2>"$tmp/term.err")
check "death by SIGTERM: aicprof dies by SIGTERM too ($r)" test "$r" = -15
check "death by SIGTERM: the line says so" grep -qF "aicprof: '/bin/sh' was killed by signal 15" "$tmp/term.err"
r=$(rc "$A" record -- /no/such/program 2>"$tmp/nosuch.err")
check "a missing program: exit 127, only the error ($r)" sh -c \
	"[ $r = 127 ] && [ \$(wc -l <'$tmp/nosuch.err') = 1 ] && grep -q \"cannot run '/no/such/program'\" '$tmp/nosuch.err'"
# forwarding: the program traps the signal and exits with its own code
# (started from Python with SIGINT at its default: a background job of sh would ignore it)
for s in TERM INT; do
	r=$(python3 - "$A" "$tmp/ready-$s" "$s" <<'PY'
import os, signal, subprocess, sys, time
a, ready, s = sys.argv[1:]
sig = getattr(signal, "SIG" + s)
sh = "trap 'kill $p; exit 42' %s; sleep 30 & p=$!; echo $$ >'%s'; wait" % (s, ready)
p = subprocess.Popen([a, "record", "--", "/bin/sh", "-c", sh], stderr=subprocess.DEVNULL,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
for _ in range(200):
    if os.path.exists(ready) and os.path.getsize(ready):
        break
    time.sleep(0.05)
p.send_signal(sig)
try:
    print(p.wait(timeout=20))
except subprocess.TimeoutExpired:
    p.kill(); print("hung")
PY
)
	check "SIG$s sent to aicprof reaches the program (its trap's exit 42: $r)" test "$r" = 42
done
# a trace written: nothing said. The program writes the file AICPROF_OUTPUT names, %p its pid.
r=$(rc "$A" record -o "$tmp/fake.%p.aicp.jsonl" -- /bin/sh -c \
	'f=$(printf %s "$AICPROF_OUTPUT" | sed "s/%p/$$/"); echo "{}" >"$f"' 2>"$tmp/fake.err")
check "a trace written: exit 0 ($r)" test "$r" = 0
check "a trace written: the file is there" sh -c "ls '$tmp'/fake.*.aicp.jsonl >/dev/null"
check "a trace written: nothing said" test ! -s "$tmp/fake.err"
AICPROF_OUTPUT=$tmp/env.aicp.jsonl "$A" record -- /bin/sh -c 'echo "{}" >"$AICPROF_OUTPUT"; exit 3' 2>"$tmp/env.err"; r=$?
check "AICPROF_OUTPUT without -o, trace written, exit 3: exit 3, nothing said ($r)" test "$r" = 3 -a ! -s "$tmp/env.err"
# an old file of that name is not this run's trace
echo "{}" >"$tmp/old.aicp.jsonl"; touch -d '1 hour ago' "$tmp/old.aicp.jsonl"
"$A" record -o "$tmp/old.aicp.jsonl" -- /bin/true 2>"$tmp/old.err"
check "an old file of the trace's name: still says no trace was written" grep -qF "and wrote no trace" "$tmp/old.err"
