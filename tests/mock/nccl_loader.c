/*
 * nccl_loader.c - opens a library with RTLD_LOCAL and runs its nccl_calls(), as Python opens an
 * extension module: the library's own dependencies (libnccl.so.2) stay out of the global scope.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
	int (*f)(void) = h ? (int (*)(void))dlsym(h, "nccl_calls") : NULL;
	if (!f) {
		fprintf(stderr, "nccl_loader: %s\n", dlerror());
		return 99;
	}
	int r = f();
	fflush(stdout);
	return r;
}
