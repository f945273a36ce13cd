/*
 * argscan.h - a launch's parameters: the words in them that may be device pointers, found on
 * the launching thread or, deferred, on the writer's (argscan.c).
 */
#ifndef AICPROF_ARGSCAN_H
#define AICPROF_ARGSCAN_H

#include "preload/record.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Fills args[0..nparams) from the parameters' bytes (pp[i]: parameter i's first byte, NULL
 * when it cannot be read) and ptrs with their words in [lo, hi), in parameter order, each
 * looked up in the allocation map (ptrmap_find_batch) and those in no allocation dropped.
 * off/size: the layout. Returns the count in ptrs (MAX_PTRS at most). Any thread.
 */
int argscan(int nparams, const uint32_t *off, const uint32_t *size, const char *const *pp,
            uint64_t lo, uint64_t hi, struct r_arg *args, struct r_ptr *ptrs);

/* The largest R_LAUNCH_DEFER parameter block: a launch with more bytes is scanned at once. */
#define DEFER_MAX 4096

/*
 * Turns a deferred launch record (R_LAUNCH_DEFER: record.h) into the R_LAUNCH record the
 * launching thread would have written, in buf (cap bytes); returns it, or NULL when it does
 * not fit or the record is malformed. The layout it names must still be alive (the shim never
 * frees one). Called with the writer's lock held; no allocation.
 */
const struct r_launch *argscan_expand(const struct r_launch *d, void *buf, size_t cap);

/* Bytes argscan_expand may need for any record. */
#define ARGSCAN_EXPAND_MAX                                                                         \
	(sizeof(struct r_launch) + sizeof(struct r_arg) * MAX_ARGS +                               \
	 sizeof(struct r_ptr) * MAX_PTRS + sizeof(uint32_t) * 64 + RAW_MAX + 64)

#endif
