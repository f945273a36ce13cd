/*
 * selftime.h - what the shim's own work costs the program's threads (AICPROF_SELFTIME=1).
 *
 * Off by default, and then each probe is one load and one predictable branch. On, every part
 * of the callback path (the whole callback per kind, the source attribution, the argument scan,
 * the ring reservation) adds its CLOCK_MONOTONIC nanoseconds and calls to process-wide atomic
 * counters, and the shim prints one "aicprof: self time" line per part at exit: calls, total,
 * mean. The figures are the shim's share of the overhead; what CUPTI's callback dispatch and a
 * changed allocator cost comes on top and is measured from outside (tests/gpu/overhead.sh).
 */
#ifndef AICPROF_SELFTIME_H
#define AICPROF_SELFTIME_H

#include <stdint.h>

enum st_part {
	ST_CB_LAUNCH, /* callback of a kernel launch, enter or exit */
	ST_CB_ALLOC,  /* callback of an allocation, free or mapping */
	ST_CB_MEM,    /* callback of a copy or memset */
	ST_CB_SYNC,   /* callback of a synchronisation, event or stream wait */
	ST_CB_OTHER,  /* NVTX and resource callbacks */
	ST_SITES,     /* source attribution inside a launch */
	ST_ARGS,      /* parameter layout and pointer scan inside a launch */
	ST_ACTIVITY,  /* CUPTI's activity buffers converted (CUPTI's thread) */
	/* attribution by the way it went (sites.c), each a part of ST_SITES */
	ST_SITE_CACHED,  /* the stack cache knew the stack */
	ST_SITE_RAW,     /* the raw walk named every frame */
	ST_SITE_GIL,     /* the public API's walk, the GIL held by the launching thread */
	ST_SITE_ENSURE,  /* the public API's walk, the GIL taken (the only thread state) */
	ST_SITE_PARTIAL, /* the raw walk's named frames only */
	ST_SITE_INHERIT, /* no frames: the last Python site, inherited */
	ST_SITE_NATIVE,  /* a native stack (no Python) */
	ST_NPARTS
};

extern int selftime_on; /* set once by the constructor, before any callback */

uint64_t selftime_now(void);                         /* CLOCK_MONOTONIC in ns */
void selftime_count(enum st_part part, uint64_t t0); /* adds now - t0 and one call to part */

/* Now in ns when self timing is on, else 0 (and selftime_add ignores a 0 start). Inline: off,
 * the launch path pays one load and a branch, not a call. */
static inline uint64_t selftime_start(void)
{
	return selftime_on ? selftime_now() : 0;
}
/* Adds the time since t0 (from selftime_start) and one call to part. Any thread. */
static inline void selftime_add(enum st_part part, uint64_t t0)
{
	if (t0)
		selftime_count(part, t0);
}
/* Prints the counters, one shim_say line per part that was called. At exit only. */
void selftime_report(void);

#endif
