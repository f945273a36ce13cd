/*
 * selftime.c - the counters behind selftime.h: one pair of relaxed atomics (ns, calls) per
 * part, added to from any thread and read once at exit. CLOCK_MONOTONIC through the vDSO costs
 * about 20 ns a read, so the probes themselves add about 40 ns per timed part when on.
 */
#include "preload/selftime.h"
#include "preload/base.h"

#include <stdatomic.h>
#include <time.h>

int selftime_on;
static _Atomic uint64_t st_ns[ST_NPARTS], st_calls[ST_NPARTS];

static const char *const st_names[ST_NPARTS] = {
    "launch callback",
    "allocation callback",
    "copy/memset callback",
    "sync callback",
    "nvtx/resource callback",
    "attribution (in launches)",
    "argument scan (in launches)",
    "activity buffers (CUPTI thread)",
    "attribution: stack cache",
    "attribution: raw walk",
    "attribution: API walk, GIL held",
    "attribution: API walk, GIL taken",
    "attribution: raw walk, frames it knew",
    "attribution: inherited",
    "attribution: native stack",
};

uint64_t selftime_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void selftime_count(enum st_part part, uint64_t t0)
{
	if ((unsigned)part >= ST_NPARTS)
		return;
	uint64_t d = selftime_now() - t0;
	atomic_fetch_add_explicit(&st_ns[part], d, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_calls[part], 1, memory_order_relaxed);
}

void selftime_report(void)
{
	if (!selftime_on)
		return;
	for (int i = 0; i < ST_NPARTS; i++) {
		uint64_t n = atomic_load(&st_calls[i]), ns = atomic_load(&st_ns[i]);
		if (!n)
			continue;
		shim_say("self time: %s: %llu calls, %.3f ms, %.3f us each", st_names[i],
		         (unsigned long long)n, (double)ns / 1e6, (double)ns / 1e3 / (double)n);
	}
}
