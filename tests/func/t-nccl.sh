#!/bin/sh
# t-nccl.sh - the shim's NCCL interposers (preload/nccl.c) change nothing: a program calling
# every interposed entry point of a stand-in libnccl.so.2 (tests/mock/) prints the same
# arguments, results and exit code with and without LD_PRELOAD. Recording itself needs a GPU
# (tests/gpu/ddp.sh).
. "$(dirname "$0")/lib.sh"
M=$top/tests/mock
cd "$tmp" || exit 1
cc -shared -fPIC -O1 -Wl,-soname,libnccl.so.2 -o libnccl.so.2 "$M/nccl_mock.c" &&
	cc -O1 -o prog "$M/nccl_prog.c" -L. -l:libnccl.so.2 -Wl,-rpath,"$tmp"
check "the stand-in NCCL and its caller build" test -x prog
./prog >plain.txt; rc1=$?
LD_PRELOAD=$B/libaicprof.so ./prog >shim.txt 2>err.txt; rc2=$?
check "exit code unchanged under the shim ($rc1, $rc2)" test "$rc1" = 17 -a "$rc2" = 17
check "every call reached NCCL with the same arguments and returned the same result" \
	cmp -s plain.txt shim.txt
check "the program made every call (46 lines)" test "$(wc -l <plain.txt)" = 46
# as under Python: the caller and libnccl.so.2 in a dlopen'd RTLD_LOCAL scope
cc -shared -fPIC -O1 -DAS_LIB -o libuser.so "$M/nccl_prog.c" -L. -l:libnccl.so.2 \
	-Wl,-rpath,"$tmp" && cc -O1 -o loader "$M/nccl_loader.c" -ldl
./loader ./libuser.so >plain2.txt; rc1=$?
LD_PRELOAD=$B/libaicprof.so ./loader ./libuser.so >shim2.txt 2>err2.txt; rc2=$?
check "RTLD_LOCAL scope: exit code unchanged ($rc1, $rc2)" test "$rc1" = 17 -a "$rc2" = 17
check "RTLD_LOCAL scope: the shim finds the real NCCL, same calls and results" \
	sh -c "cmp -s plain2.txt shim2.txt && cmp -s plain.txt plain2.txt"
check "results other than success pass through (ncclGroupEnd's 1)" grep -q "^GroupEnd" shim.txt
check "nothing on stderr" test ! -s err.txt -a ! -s err2.txt
check "the shim exports the interposers" sh -c \
	"nm -D --defined-only '$B/libaicprof.so' | grep -c ' T nccl' | grep -qx 16"
