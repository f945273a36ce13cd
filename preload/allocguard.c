/*
 * allocguard.c - keep the allocator that aicprof chose from aborting the process once the
 * program's CUDA context has died.
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
 * How: when recording starts, and only if aicprof chose the allocator, the GOT slots of
 * libc10_cuda.so (the library that holds that allocator) for cudaGetLastError, cudaFreeAsync
 * and the four event calls of its cross-stream free are pointed at wrappers (gotpatch.c). Each
 * calls the function libc10_cuda would have called (its own libcudart, found through its
 * DT_NEEDED) and passes the result on unchanged, except a sticky error, one that says the
 * context is dead: that becomes cudaSuccess, which is what the native allocator's free (no CUDA
 * call at all) amounts to. Nothing else changes: other libraries' calls, the program's own
 * cudaGetLastError, any error while the context lives, and libc10_cuda's allocations, whose
 * cudaMallocAsync still fails with the context's error and raises it as before. A dead context
 * can run nothing, so a free that is skipped frees nothing that could still be used. Were the
 * wrappers not armed at start (libc10_cuda loaded later), the first context-killing error seen
 * arms them then.
 */
#include "preload/allocguard.h"
#include "preload/base.h"
#include "preload/gotpatch.h"

#include <stddef.h>

static int switched, armed;

void allocguard_set_switched(int on)
{
	switched = on;
}

/* cudaError_t values that leave the context unusable (CUDA runtime API, driver_types.h) */
static int sticky(int r)
{
	return r == 700 /* IllegalAddress */ || r == 702 /* LaunchTimeout */ ||
	       r == 709 /* ContextIsDestroyed */ || r == 714 /* HardwareStackError */ ||
	       r == 715 /* IllegalInstruction */ || r == 716 /* MisalignedAddress */ ||
	       r == 717 /* InvalidAddressSpace */ || r == 718 /* InvalidPc */ ||
	       r == 719 /* LaunchFailure */ || r == 214 /* ECCUncorrectable */;
}

static int (*real_get_last_error)(void);
static int (*real_free_async)(void *, void *);
static int (*real_event_create)(void **, unsigned);
static int (*real_event_record)(void *, void *);
static int (*real_stream_wait)(void *, void *, unsigned);
static int (*real_event_destroy)(void *);

static int w_get_last_error(void)
{
	int r = real_get_last_error();
	return sticky(r) ? 0 : r;
}
static int w_free_async(void *p, void *stream)
{
	int r = real_free_async(p, stream);
	return sticky(r) ? 0 : r;
}
static int w_event_create(void **ev, unsigned flags)
{
	int r = real_event_create(ev, flags);
	if (sticky(r) && ev)
		*ev = NULL;
	return sticky(r) ? 0 : r;
}
static int w_event_record(void *ev, void *stream)
{
	int r = real_event_record(ev, stream);
	return sticky(r) ? 0 : r;
}
static int w_stream_wait(void *stream, void *ev, unsigned flags)
{
	int r = real_stream_wait(stream, ev, flags);
	return sticky(r) ? 0 : r;
}
static int w_event_destroy(void *ev)
{
	int r = real_event_destroy(ev);
	return sticky(r) ? 0 : r;
}

static void arm(const char *when)
{
	if (!switched || armed)
		return;
	struct {
		const char *sym;
		void **real;
		void *wrap;
	} w[] = {
	    {"cudaGetLastError", (void **)&real_get_last_error, (void *)w_get_last_error},
	    {"cudaFreeAsync", (void **)&real_free_async, (void *)w_free_async},
	    {"cudaEventCreateWithFlags", (void **)&real_event_create, (void *)w_event_create},
	    {"cudaEventRecord", (void **)&real_event_record, (void *)w_event_record},
	    {"cudaStreamWaitEvent", (void **)&real_stream_wait, (void *)w_stream_wait},
	    {"cudaEventDestroy", (void **)&real_event_destroy, (void *)w_event_destroy},
	};
	const size_t n = sizeof(w) / sizeof(w[0]);
	for (size_t i = 0; i < n; i++) {
		*w[i].real = got_needed_sym("libc10_cuda.so", "libcudart.so", w[i].sym);
		if (!*w[i].real)
			return; /* not loaded yet, or not the library we know: nothing patched */
	}
	armed = 1;
	int slots = 0, bad = 0;
	for (size_t i = 0; i < n; i++) {
		int r = got_patch("libc10_cuda.so", w[i].sym, w[i].wrap);
		if (r < 0)
			bad = 1;
		else
			slots += r;
	}
	shim_debug("%s: %d import slots of libc10_cuda.so wrapped, so that the cudaMallocAsync "
	           "allocator's frees do not abort once the context is dead%s",
	           when, slots, bad ? " (some could not be rewritten)" : "");
}

void allocguard_start(void)
{
	arm("at start");
}

void allocguard_context_died(void)
{
	arm("after the context's failure");
}
