/*
 * ptrmap.h - the shim's map of live device allocations: address ranges to allocation ids.
 *
 * Allocations and frees (CUDA API callbacks) take the write side of a reader-writer lock of
 * ours; the launch path takes the read side for a binary search. The program never holds this
 * lock, and nothing is called while holding it. Offline (ptrmap_set_offline(1)) the map holds
 * nothing and the ids it returns are PTRMAP_OFFLINE: the analyzer resolves (ptrmap.c).
 */
#ifndef AICPROF_PTRMAP_H
#define AICPROF_PTRMAP_H

#include <stdint.h>

/* the id of a pointer, or of a free, left for the analyzer to resolve (trace-format.md) */
#define PTRMAP_OFFLINE (-2)

/* Offline: adds take ids and widen the bounds only; removes and finds return PTRMAP_OFFLINE
 Set before the first allocation is recorded. */
void ptrmap_set_offline(int on);
int ptrmap_offline(void);

/* Records [ptr, ptr+size) as allocation id; returns the id (ids count up from 0). */
int64_t ptrmap_add(uint64_t ptr, uint64_t size);
/* Records a block of a pool allocator, [ptr, ptr+size), as allocation id: a range that holds
 * it (the pool's segment) is hidden, not dropped, until its own ptrmap_remove. */
int64_t ptrmap_add_inner(uint64_t ptr, uint64_t size);
/* Removes the allocation starting at ptr (a hidden outer range when no live one starts there);
 * returns its id, or -1 when none starts there. *size receives its size when found (size may be
 * NULL). */
int64_t ptrmap_remove(uint64_t ptr, uint64_t *size);
/* Finds the allocation holding addr: returns its id and sets *off, or -1. */
int64_t ptrmap_find(uint64_t addr, uint64_t *off);
/* Finds the allocation holding addr: returns its id, and its base and size, or -1. */
/* ptrmap_find of n addresses under one read lock: ids[i] (-1 when in no allocation) and
 * offs[i] for each addrs[i]. For the launch path, where one kernel's parameters hold hundreds
 * of pointers (foreach kernels) and a lock per word cost microseconds. */
void ptrmap_find_batch(const uint64_t *addrs, int n, int64_t *ids, uint64_t *offs);
int64_t ptrmap_find_range(uint64_t addr, uint64_t *base, uint64_t *size);
/* Lowest and highest address ever allocated (a quick filter for pointer-like words). */
void ptrmap_bounds(uint64_t *lo, uint64_t *hi);
/* Live allocations (for tests). Clears everything (tests, forked child). */
int ptrmap_count(void);
void ptrmap_clear(void);

#endif
