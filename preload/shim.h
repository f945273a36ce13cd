/*
 * shim.h - what the shim's parts share: the one-line messages, the per-thread "inside aicprof"
 * flag, the configuration, clocks and thread ids.
 */
#ifndef AICPROF_SHIM_H
#define AICPROF_SHIM_H

#include "preload/config.h"

#include <stdint.h>

extern struct config shim_cfg;

/* One "aicprof: ..." line on stderr, unless AICPROF_QUIET. */
__attribute__((format(printf, 1, 2))) void shim_say(const char *fmt, ...);
/* Like shim_say, only with AICPROF_DEBUG. */
__attribute__((format(printf, 1, 2))) void shim_debug(const char *fmt, ...);

/* Per-thread recursion guard: shim_enter() returns 0 when this thread is already inside
 * aicprof (then do nothing), else sets the flag and returns 1; shim_leave() clears it.
 * shim_enter_thread() marks a thread of ours for good. */
int shim_enter(void);
void shim_leave(void);
void shim_enter_thread(void);

uint64_t shim_now_ns(void); /* CLOCK_REALTIME in ns */
uint32_t shim_tid(void);    /* cached gettid() */
uint64_t shim_seq(void);    /* next value of the process-wide record counter */

/* Whether recording is on now (after AICPROF_DELAY, inside AICPROF_RANGE, not stopped). */
int shim_recording(void);

#endif
