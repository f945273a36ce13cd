/*
 * base.h - the base services every part of the shim calls: the one-line messages, the
 * per-thread "inside aicprof" flag, the configuration, clocks, thread ids and the record
 * counter. base.c includes nothing else of preload/ but config.h, so any part may include this
 * without making a cycle; shim.c (the entry point) fills shim_cfg at load time.
 */
#ifndef AICPROF_BASE_H
#define AICPROF_BASE_H

#include "preload/config.h"

#include <stdint.h>

/* Thread-local state on the launch path: initial-exec, an offset from the thread pointer
 * instead of a __tls_get_addr call per access. Safe for this library: it is preloaded (or
 * injected into a process that has it preloaded), and these few words fit the static TLS
 * that glibc keeps spare for a late dlopen. */
#define SHIM_TLS __thread __attribute__((tls_model("initial-exec")))

/* The configuration, read once by shim.c's constructor (zeroes before it). */
extern struct config shim_cfg;

/* One "aicprof: ..." line on stderr, unless AICPROF_QUIET. */
__attribute__((format(printf, 1, 2))) void shim_say(const char *fmt, ...);
/* Like shim_say, only with AICPROF_DEBUG. */
__attribute__((format(printf, 1, 2))) void shim_debug(const char *fmt, ...);

/* Per-thread recursion guard: shim_enter() returns 0 when this thread is already inside
 * aicprof (then do nothing), else sets the flag and returns 1; shim_leave() clears it.
 * shim_enter_thread() sets it unconditionally (a thread of ours, for good, or the entry point
 * for the length of a step); shim_inside() says whether it is set. */
int shim_enter(void);
void shim_leave(void);
void shim_enter_thread(void);
int shim_inside(void);

uint64_t shim_now_ns(void); /* CLOCK_REALTIME in ns */
uint32_t shim_tid(void);    /* cached gettid() */
uint64_t shim_seq(void);    /* next value of the process-wide record counter */

/* Whether recording is on now (after AICPROF_DELAY, inside AICPROF_RANGE, not paused, not
 * stopped). */
int shim_recording(void);
/* Recording starts at ns (CLOCK_REALTIME; 0: at once). Set by the constructor. */
void shim_record_from(uint64_t ns);
/* Ends recording for good (the trace's window closed: its size cap or AICPROF_DURATION):
 * shim_recording() is 0 from then on and shim_stopped() 1. Safe from any thread. */
void shim_stop(void);
int shim_stopped(void);
/* A capture range paused (1) or running (0): AICPROF_CAPTURE=profiler-api, cupti.c. While
 * paused shim_recording() is 0; the allocation map is still kept. Safe from any thread. */
void shim_pause(int on);
/* Whether a capture range is paused now (relaxed; any thread). */
int shim_paused(void);

/*
 * The real definition of a function the shim interposes (NCCL's, cudaFreeAsync): RTLD_NEXT,
 * else the first loaded object that defines sym and is not self (the interposer). A Python
 * extension (PyTorch's libtorch_cuda.so) is loaded with RTLD_LOCAL, so the library it needs
 * is not in the global scope that RTLD_NEXT searches, yet its calls still reach the shim first
 * (the global scope comes first for everyone). NULL when nothing else defines it.
 */
void *shim_real_fn(const char *sym, void *self);

/* In a forked child: the calling thread is outside aicprof and its cached tid forgotten. */
void shim_base_after_fork(void);

#endif
