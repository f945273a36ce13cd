/*
 * poolhook.c - PyTorch's caching allocator's blocks as allocations, without switching the
 * allocator.
 *
 * Why: the caching allocator carves tensors out of large cudaMalloc segments and reuses them
 * without a CUDA call, so the CUDA API shows only the segments: every tensor in a segment would
 * map to one allocation, and values could not be told apart by their buffers. aicprof used to
 * switch PyTorch to its cudaMallocAsync backend (one CUDA allocation per tensor) for that, which
 * costs the program a driver call per allocation and per free: thousands a step on a
 * transformer, most of the shim's overhead on GPT-2.
 *
 * How: the allocator reports every block it hands out and every block it takes back to
 * c10::reportMemoryUsageToProfiler(ptr, signed size, allocated, reserved, device), which
 * libc10_cuda.so calls through its GOT, unconditionally (the function itself looks for an
 * active profiler and returns). When recording starts, or at the first device allocation if
 * libc10_cuda was not loaded yet, that GOT slot is pointed at a wrapper (gotpatch.c). The
 * wrapper writes an `alloc` record (api "c10::CachingAllocator", the block's base and size,
 * rounded to the allocator's 512 bytes) or a `free` record, enters the block in the pointer map
 * as an inner range of its segment (ptrmap_add_inner: launches then resolve pointers to the
 * block, the segment's own cudaFree still ends the segment), and then calls the real function
 * with the same arguments, so torch.profiler's memory view is unchanged. A block's size is
 * what the allocator reserved for the tensor (at most 1 MiB more than asked for in the large
 * pool, when the rest of a block is too small to split off). Segments stay in the trace as
 * `cuMemAlloc_v2` allocations: the memory plan counts them as what the allocator held.
 *
 * Nothing of the program changes: the allocator, its pools, its timing of reuse and its
 * errors are its own; the wrapper only reads its arguments. Reports made while a capture range
 * is paused are recorded too, as the CUDA allocations are (cupti.c): a pointer of a recorded
 * launch may fall in a block handed out while paused, and the analyzer's offline resolution (or
 * the shim's map, where it is kept) needs every block. Once the recording window has closed
 * (shim_stopped()), the wrapper only calls the real function. AICPROF_PAUSE_BLOCKS=1, for
 * benchmarks only (tests/gpu/bench_step.py paired), skips the reports made while paused too, so
 * that a paired recording-against-paused difference holds this path's cost as well.
 */
#include "preload/poolhook.h"
#include "preload/base.h"
#include "preload/cupti.h"
#include "preload/gotpatch.h"
#include "preload/ptrmap.h"
#include "preload/selftime.h"

#include <stdatomic.h>
#include <stdint.h>

#define SYM   "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE"
#define TRIES 64

/* c10::Device: DeviceType (int8, CUDA = 1) and DeviceIndex (int8), passed in one register */
struct c10_device {
	int8_t type, index;
};

typedef void (*report_fn)(void *, int64_t, size_t, size_t, struct c10_device);

static int enabled;
static _Atomic int armed, tries;
static report_fn real_report;

void poolhook_set_enabled(int on)
{
	enabled = on;
}

int poolhook_armed(void)
{
	return atomic_load_explicit(&armed, memory_order_relaxed);
}

static void w_report(void *ptr, int64_t size, size_t allocated, size_t reserved,
                     struct c10_device dev)
{
	if (dev.type == 1 && ptr && size && !shim_stopped() &&
	    !(shim_cfg.pause_blocks && shim_paused()) && shim_enter()) {
		uint64_t t0 = selftime_start();
		uint64_t p = (uint64_t)(uintptr_t)ptr;
		if (size > 0) {
			int64_t id = ptrmap_add_inner(p, (uint64_t)size);
			cupti_record_alloc(0, p, (uint64_t)size, id);
		} else {
			uint64_t sz = 0;
			int64_t id = ptrmap_remove(p, &sz);
			if (id == PTRMAP_OFFLINE) /* the report gives the size freed */
				sz = (uint64_t)-size;
			cupti_record_alloc(1, p, sz, id);
		}
		selftime_add(ST_CB_ALLOC, t0);
		shim_leave();
	}
	real_report(ptr, size, allocated, reserved, dev);
}

void poolhook_try(const char *when)
{
	if (!enabled || atomic_load(&armed) || atomic_fetch_add(&tries, 1) >= TRIES)
		return;
	report_fn real = (report_fn)got_needed_sym("libc10_cuda.so", "libc10.so", SYM);
	if (!real)
		return; /* not loaded yet, or a library that does not report */
	real_report = real;
	int r = got_patch("libc10_cuda.so", SYM, (void *)w_report);
	if (r > 0)
		atomic_store(&armed, 1);
	shim_debug("%s: %s %d import slot%s of libc10_cuda.so for the caching allocator's blocks",
	           when, r > 0 ? "wrapped" : "could not wrap", r, r == 1 ? "" : "s");
}
