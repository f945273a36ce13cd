#!/bin/sh
# t-cudart-interpose.sh - the shim's cudaFreeAsync (preload/shim.c) changes nothing while the
# context is alive: a stand-in libcudart's cudaFreeAsync is reached with the same arguments and
# its result comes back, from a program linked to it and from one loaded in an RTLD_LOCAL scope
# (as PyTorch's libtorch_cuda is). What it does after a context-killing fault needs a GPU
# (tests/gpu/faults.py, "illegal").
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1
cat >rt.c <<'C'
#include <stdio.h>
int cudaFreeAsync(void *p, void *s)
{
	printf("cudaFreeAsync %p %p\n", p, s);
	return p == (void *)0x1000 ? 0 : 2; /* cudaErrorMemoryAllocation for the other */
}
C
cat >user.c <<'C'
#include <stdio.h>
int cudaFreeAsync(void *p, void *s);
int run(void)
{
	int a = cudaFreeAsync((void *)0x1000, (void *)0x7), b = cudaFreeAsync((void *)0x2000, 0);
	printf("results %d %d\n", a, b);
	return a * 10 + b;
}
#ifndef AS_LIB
int main(void) { return run(); }
#endif
C
cat >loader.c <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	int (*run)(void) = h ? (int (*)(void))dlsym(h, "run") : NULL;
	if (!run) { fprintf(stderr, "%s\n", dlerror()); return 99; }
	return run();
}
C
cc -shared -fPIC -O1 -Wl,-soname,libcudart.so.13 -o libcudart.so.13 rt.c &&
	cc -O1 -o prog user.c -L. -l:libcudart.so.13 -Wl,-rpath,"$tmp" &&
	cc -shared -fPIC -O1 -DAS_LIB -o libuser.so user.c -L. -l:libcudart.so.13 -Wl,-rpath,"$tmp" &&
	cc -O1 -o loader loader.c -ldl
check "the stand-in runtime and its callers build" test -x prog -a -x loader
./prog >plain.txt; rc1=$?
LD_PRELOAD=$B/libaicprof.so ./prog >shim.txt 2>err.txt; rc2=$?
check "linked: exit code unchanged ($rc1, $rc2)" test "$rc1" = 2 -a "$rc2" = 2
check "linked: the runtime's cudaFreeAsync got the same arguments, its results came back" \
	cmp -s plain.txt shim.txt
./loader ./libuser.so >plain2.txt; rc1=$?
LD_PRELOAD=$B/libaicprof.so ./loader ./libuser.so >shim2.txt 2>err2.txt; rc2=$?
check "RTLD_LOCAL scope: exit code unchanged ($rc1, $rc2)" test "$rc1" = 2 -a "$rc2" = 2
check "RTLD_LOCAL scope: the shim finds the real runtime, same calls and results" \
	sh -c "cmp -s plain2.txt shim2.txt && cmp -s plain.txt plain2.txt"
check "the calls were made (3 lines)" test "$(wc -l <plain.txt)" = 3
check "nothing on stderr" test ! -s err.txt -a ! -s err2.txt
check "the shim exports cudaFreeAsync" sh -c \
	"nm -D --defined-only '$B/libaicprof.so' | grep -q ' T cudaFreeAsync$'"
