# The shim inside programs that never use CUDA (this machine has no GPU): nothing changes.
. "$(dirname "$0")/lib.sh"
S=$B/libaicprof.so
unset AICPROF_QUIET
cd "$tmp" || exit 1

LD_PRELOAD=$S /bin/true; rc=$?
check "/bin/true: exit code 0" test "$rc" = 0
LD_PRELOAD=$S /bin/sh -c 'exit 42'; rc=$?
check "sh -c 'exit 42': exit code 42" test "$rc" = 42
out=$(LD_PRELOAD=$S /bin/echo hello 2>&1)
check "echo: output unchanged, nothing on stderr" test "$out" = "hello"
check "no trace from programs without CUDA" sh -c '! ls aicprof.*.aicp.jsonl >/dev/null 2>&1'

LD_PRELOAD=$S cat /proc/self/maps >maps.txt
check "CUPTI is not loaded into a program that never initialises CUDA" sh -c '! grep -q libcupti maps.txt'
check "the CUDA driver is not loaded either" sh -c '! grep -q "libcuda\.so" maps.txt'
check "libunwind is not loaded either" sh -c '! grep -q "libunwind" maps.txt'

out=$(LD_PRELOAD=$S python3 -c 'import os; print("py", os.getpid() > 0)' 2>&1); rc=$?
check "python3 -c: output and exit code unchanged" test "$out" = "py True" -a "$rc" = 0
LD_PRELOAD=$S python3 -c 'import sys; sys.exit(7)'; rc=$?
check "python3 sys.exit(7): 7" test "$rc" = 7
LD_PRELOAD=$S python3 -c 'raise SystemExit("bye")' 2>err.txt; rc=$?
check "python3 uncaught SystemExit: 1 and its message" sh -c "test $rc = 1 && grep -q bye err.txt"

out=$(LD_PRELOAD=$S python3 -c '
import os
pid = os.fork()
if pid == 0:
    print("child"); os._exit(3)
_, st = os.waitpid(pid, 0)
print("parent", os.waitstatus_to_exitcode(st))' 2>&1)
check "fork: child and parent run, child exit code seen" test "$(echo $out)" = "child parent 3"

LD_PRELOAD=$S python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGTERM)'; rc=$?
check "SIGTERM: killed by the signal (143)" test "$rc" = 143
# SIGINT is ignored in a background job: compare with the same command without the shim
sh -c 'kill -INT $$'; bare=$?
LD_PRELOAD=$S sh -c 'kill -INT $$'; rc=$?
check "SIGINT: the same end as without the shim ($bare, $rc)" test "$rc" = "$bare"

err=$(AICPROF_DEPTH=99 AICPROF_ATTRIB=maybe LD_PRELOAD=$S /bin/true 2>&1); rc=$?
check "bad settings: exit code unchanged" test "$rc" = 0
check "bad settings: one aicprof line each" test "$(echo "$err" | grep -c '^aicprof: ignoring AICPROF_')" = 2
err=$(AICPROF_QUIET=1 AICPROF_DEPTH=99 LD_PRELOAD=$S /bin/true 2>&1)
check "AICPROF_QUIET silences them" test -z "$err"

env=$(LD_PRELOAD=$S python3 -c 'import os; print(os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))')
check "PYTORCH_CUDA_ALLOC_CONF left unset by default (the caching allocator's blocks are recorded)" test "$env" = "None"
env=$(AICPROF_ALLOC_BACKEND=1 LD_PRELOAD=$S python3 -c 'import os; print(os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))')
check "AICPROF_ALLOC_BACKEND=1 sets cudaMallocAsync" test "$env" = "backend:cudaMallocAsync"
env=$(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True LD_PRELOAD=$S python3 -c 'import os; print(os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))')
check "the user's PYTORCH_CUDA_ALLOC_CONF is kept" test "$env" = "expandable_segments:True"
env=$(AICPROF_ALLOC_BACKEND=0 LD_PRELOAD=$S python3 -c 'import os; print(os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))')
check "AICPROF_ALLOC_BACKEND=0 leaves it unset" test "$env" = "None"
x='import os; print(os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"), os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR"))'
env=$(LD_PRELOAD=$S python3 -c "$x")
check "JAX: preallocation off, platform allocator by default ($env)" test "$env" = "false platform"
env=$(XLA_PYTHON_CLIENT_PREALLOCATE=true LD_PRELOAD=$S python3 -c "$x")
check "JAX: the user's choice is kept ($env)" test "$env" = "true None"
env=$(AICPROF_ALLOC_BACKEND=0 LD_PRELOAD=$S python3 -c "$x")
check "JAX: AICPROF_ALLOC_BACKEND=0 leaves XLA's allocator alone ($env)" test "$env" = "None None"
x='import os; print(os.environ.get("XLA_FLAGS"))'
# (env itself runs under the shim and starts python: python's shim sees the flags as a parent's)
env=$(env -u XLA_FLAGS AICPROF_OUTPUT=$tmp/x.aicp.jsonl LD_PRELOAD=$S python3 -c "$x")
check "JAX: XLA's command buffers asked off, HLO dumped beside the trace ($env)" \
	test "$env" = "--xla_gpu_enable_command_buffer= --xla_dump_to=$tmp/x.aicp.jsonl.xla --xla_dump_hlo_as_text"
env=$(XLA_FLAGS=--xla_dump_to=/tmp/d LD_PRELOAD=$S python3 -c "$x")
check "JAX: the user's XLA_FLAGS (their own dump) kept, the flag appended ($env)" \
	test "$env" = "--xla_dump_to=/tmp/d --xla_gpu_enable_command_buffer="
env=$(XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION AICPROF_XLA_LINES=0 LD_PRELOAD=$S python3 -c "$x")
check "JAX: the user's own command-buffer flag left alone ($env)" \
	test "$env" = "--xla_gpu_enable_command_buffer=FUSION"
env=$(env -u XLA_FLAGS AICPROF_XLA_GRAPHS=1 AICPROF_XLA_LINES=0 LD_PRELOAD=$S python3 -c "$x")
check "JAX: AICPROF_XLA_GRAPHS=1 AICPROF_XLA_LINES=0 leave XLA_FLAGS unset ($env)" test "$env" = "None"
# a process started by one under the shim dumps into its own directory (its own trace's)
env=$(env -u XLA_FLAGS -u AICPROF_ENV_SET AICPROF_OUTPUT=$tmp/p%p.aicp.jsonl LD_PRELOAD=$S sh -c "python3 -c '$x'")
case $env in
*"--xla_dump_to=$tmp/p"*".aicp.jsonl.xla --xla_dump_hlo_as_text") ok=1 ;;
*) ok=0 ;;
esac
check "JAX: a child under the shim gets its own dump directory ($env)" test $ok = 1
check "JAX: no dump directory left by processes that never ran XLA" \
	sh -c "! ls -d $tmp/*.xla 2>/dev/null | grep -q ."
# what the shim set is marked, so that a process started under it (a shell, timeout, a
# launcher's workers) still says "set by aicprof", unless a value was changed on the way
x='import os; print(os.environ.get("AICPROF_ENV_SET"))'
clean="env -u XLA_FLAGS -u PYTORCH_CUDA_ALLOC_CONF -u XLA_PYTHON_CLIENT_PREALLOCATE -u XLA_PYTHON_CLIENT_ALLOCATOR -u AICPROF_ENV_SET"
env=$($clean LD_PRELOAD=$S python3 -c "$x")
check "the settings the shim made are marked ($env)" test "$env" = "xla_alloc,xla_graphs,xla_lines"
env=$($clean AICPROF_ALLOC_BACKEND=1 LD_PRELOAD=$S python3 -c "$x")
check "with AICPROF_ALLOC_BACKEND=1 the allocator switch is marked too ($env)" test "$env" = "alloc,xla_alloc,xla_graphs,xla_lines"
env=$($clean PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True LD_PRELOAD=$S python3 -c "$x")
check "a setting of the user's is not marked ($env)" test "$env" = "xla_alloc,xla_graphs,xla_lines"
env=$($clean AICPROF_ALLOC_BACKEND=1 LD_PRELOAD=$S sh -c "python3 -c '$x'")
check "a child under the shim keeps them as aicprof's ($env)" test "$env" = "alloc,xla_alloc,xla_graphs,xla_lines"
env=$($clean AICPROF_ALLOC_BACKEND=1 LD_PRELOAD=$S sh -c "PYTORCH_CUDA_ALLOC_CONF=backend:native python3 -c '$x'")
check "a value changed on the way is the user's ($env)" test "$env" = "xla_alloc,xla_graphs,xla_lines"
err=$(CUDA_INJECTION64_PATH=/opt/other/libtool.so LD_PRELOAD=$S /bin/true 2>&1)
check "another injecting tool: aicprof steps aside with one line" test "$(echo "$err" | grep -c 'aicprof steps aside')" = 1

LD_PRELOAD=$S python3 -c 'import os; os._exit(9)'; rc=$?
check "os._exit(9) through the shim's _exit: 9" test "$rc" = 9
out=$(LD_PRELOAD=$S python3 -c '
import subprocess, sys
r = subprocess.run(["/bin/sh", "-c", "exit 4"])
print(r.returncode)' 2>&1)
check "subprocess (vfork/posix_spawn) children exit as usual" test "$out" = "4"
out=$(LD_PRELOAD=$S python3 -c '
import subprocess
try:
    subprocess.run(["/no/such/program"])
except FileNotFoundError:
    print("missing")' 2>&1)
check "a failed exec in a vfork child is reported as usual" test "$out" = "missing"
