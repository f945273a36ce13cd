/*
 * cupti.h - the shim's use of CUPTI and the CUDA driver: subscription to the callbacks it
 * needs, activity records, and the facts the trace header needs about the devices.
 */
#ifndef AICPROF_CUPTI_H
#define AICPROF_CUPTI_H

#include "preload/jbuf.h"

#include <stdint.h>

/*
 * Loads CUPTI (the copy already in the process if there is one), subscribes the callbacks,
 * enables the activity kinds. Returns 0, or -1 after one "aicprof:" line saying why (no
 * CUPTI, another subscriber, ...); then nothing is recorded and the program runs untouched.
 * Call once, with the driver initialised or initialising (cuInit / InitializeInjection).
 */
int cupti_start(void);

/* Flushes CUPTI's activity buffers into the rings (at exit, before the final write). */
void cupti_flush(void);
/* The recording window closed: turns off every callback and activity kind aicprof enabled,
 * after flushing the activity records into the rings (writer thread; once; the multiplexer's
 * other side keeps its own). The program's CUDA calls then cost what they cost without
 * aicprof, less a subscription with nothing enabled. */
void cupti_detach(void);
/* Whether a CUDA call returned an error that kills the context (then CUPTI is not called). */
int cupti_context_dead(void);
/* Forgets every cached function layout (a module was unloaded: its handles may be reused). */
void cupti_functions_unloaded(void);

/* Appends the header's CUDA fields (versions, devices) to b. Writer thread. */
void cupti_header_fields(struct jbuf *b);

/* Writes an alloc (is_free 0) or free record of a pool allocator's block, api
 * "c10::CachingAllocator" (poolhook.c): the caller has updated the pointer map. Any thread. */
void cupti_record_alloc(int is_free, uint64_t ptr, uint64_t size, int64_t id);

/* Name of API index a (for the writer). */
const char *cupti_api_name(unsigned a);

/* Path of the libcupti the shim would load, found without loading it, or NULL. */
const char *cupti_find_library(void);
/* A handle on libcupti: the copy already in the process, else cupti_find_library()'s, else by
 * soname; NULL when there is none. Never closed. */
void *cupti_open(void);

/*
 * Without multiplexing (cuptimux.c), another tool's cuptiSubscribe calls this first: when
 * aicprof records, it flushes, ends its trace with reason "yielded" and unsubscribes, with one
 * "aicprof:" line. Does nothing when not recording or already yielded.
 */
void cupti_yield(void);

#endif
