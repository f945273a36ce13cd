# exec under the shim in programs that never use CUDA (this machine has no GPU): the shim's
# execve/execv/execvp/execvpe pass through unchanged (exit codes, environment, errno of a failed
# exec, vfork+exec in subprocess). Closing the trace before an exec in a process that records is
# checked on the device (tests/gpu/faults.py, "exec").
. "$(dirname "$0")/lib.sh"
S=$B/libaicprof.so
unset AICPROF_QUIET
cd "$tmp" || exit 1
check "the shim exports execve, execv, execvp, execvpe" sh -c \
	"test \$(nm -D '$S' | grep -cE ' T (execve|execv|execvp|execvpe)\$') = 4"
LD_PRELOAD=$S python3 -c 'import os; os.execv("/bin/sh", ["sh", "-c", "exit 7"])' 2>err1; rc=$?
check "os.execv: the new program's exit code (7), nothing on stderr" test "$rc" = 7 -a ! -s err1
LD_PRELOAD=$S python3 -c 'import os; os.execvp("sh", ["sh", "-c", "exit 6"])'; rc=$?
check "os.execvp through PATH: 6" test "$rc" = 6
out=$(LD_PRELOAD=$S python3 -c 'import os; os.execve("/bin/sh", ["sh", "-c", "echo $X; exit 8"], {"X": "envok"})'); rc=$?
check "os.execve: the given environment and exit code ($out, $rc)" test "$out" = envok -a "$rc" = 8
out=$(LD_PRELOAD=$S python3 -c '
import os
try:
    os.execv("/no/such/program", ["x"])
except FileNotFoundError as e:
    print("errno", e.errno)' 2>err2)
check "a failed exec: the program sees ENOENT and goes on ($out)" test "$out" = "errno 2" -a ! -s err2
LD_PRELOAD=$S sh -c 'exec /bin/sh -c "exit 5"'; rc=$?
check "sh's exec: 5" test "$rc" = 5
out=$(LD_PRELOAD=$S python3 -c 'import subprocess; print(subprocess.run(["sh", "-c", "exit 3"]).returncode)')
check "subprocess (vfork + exec): 3" test "$out" = 3
check "no trace from any of them" sh -c '! ls aicprof.*.aicp.jsonl >/dev/null 2>&1'
