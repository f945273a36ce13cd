/*
 * allocguard.c - after the program's CUDA context dies, keep the allocator that aicprof chose
 * from aborting the process.
 *
 * Why: the shim sets PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (one allocation per
 * tensor, so that buffers have true extents). That allocator's free path begins with
 * C10_CUDA_CHECK(cudaGetLastError()) and checks cudaFreeAsync too. Once a kernel has faulted
 * (an illegal address: a sticky error), every free made while Python tears down its tensors
 * throws from a deleter, and the C++ runtime terminates the process: a program that exits 3
 * after catching the error exits 134 under the shim (measured on the H200). PyTorch's own
 * caching allocator, which the program uses without the shim, makes no CUDA call in its free
 * and exits as the program asked.
 *
 * How: when the first context-killing error is seen (cupti.c's driver-API exit callback), and
 * only if aicprof chose the allocator, the GOT slots of libc10_cuda.so (the library that holds
 * that allocator) for cudaGetLastError, cudaFreeAsync and the four event calls of its
 * cross-stream free are pointed at functions that return cudaSuccess and do nothing
 * (gotpatch.c). Nothing else changes: other libraries' calls, the program's own
 * cudaGetLastError, and libc10_cuda's allocations (whose cudaMallocAsync still fails with the
 * context's error and raises it as before). The context can run nothing any more, so a free
 * that is skipped frees nothing that could still be used; the process ends with the exit code
 * and output it has without the shim.
 */
#include "preload/allocguard.h"
#include "preload/base.h"
#include "preload/gotpatch.h"

#include <stddef.h>

static int switched;

void allocguard_set_switched(int on)
{
	switched = on;
}

static int ok_void(void)
{
	return 0;
}
static int ok_free(void *p, void *stream)
{
	(void)p;
	(void)stream;
	return 0;
}
static int ok_event_create(void **ev, unsigned flags)
{
	(void)flags;
	if (ev)
		*ev = NULL;
	return 0;
}
static int ok_two(void *a, void *b)
{
	(void)a;
	(void)b;
	return 0;
}
static int ok_wait(void *stream, void *ev, unsigned flags)
{
	(void)stream;
	(void)ev;
	(void)flags;
	return 0;
}
static int ok_one(void *a)
{
	(void)a;
	return 0;
}

void allocguard_context_died(void)
{
	static int done;
	if (!switched || done)
		return;
	done = 1;
	static const struct {
		const char *sym;
		void *fn;
	} stubs[] = {
	    {"cudaGetLastError", (void *)ok_void},
	    {"cudaFreeAsync", (void *)ok_free},
	    {"cudaEventCreateWithFlags", (void *)ok_event_create},
	    {"cudaEventRecord", (void *)ok_two},
	    {"cudaStreamWaitEvent", (void *)ok_wait},
	    {"cudaEventDestroy", (void *)ok_one},
	};
	int n = 0, bad = 0;
	for (size_t i = 0; i < sizeof(stubs) / sizeof(stubs[0]); i++) {
		int r = got_patch("libc10_cuda.so", stubs[i].sym, stubs[i].fn);
		if (r < 0)
			bad = 1;
		else
			n += r;
	}
	shim_debug("after the context's failure: %d import slots of libc10_cuda.so no longer "
	           "checked, so that the cudaMallocAsync allocator's frees do not abort%s",
	           n, bad ? " (some could not be rewritten)" : "");
}
