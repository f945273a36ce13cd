/*
 * rangemap.h - live device allocations by address: disjoint ranges in base order, with a pool's
 * blocks nested inside the segment that holds them. One data structure for the two places that
 * resolve a pointer to its allocation: the shim's map (preload/ptrmap.c, which adds the locking)
 * and the analyzer's replay of a trace's allocation records (analyzer/resolve.c). Pure C on
 * libc's malloc: nothing here exits or prints, so the shim may link it.
 *
 * A lookup sees the visible ranges only: an inner range (a block) hides the ranges that held it
 * (its segment) until their own remove, so a pointer into a segment's free part is in no
 * allocation. An add over a range already there (handed out again before its free was seen)
 * replaces it. No function takes a lock; the caller serialises writers against readers.
 */
#ifndef AICPROF_RANGEMAP_H
#define AICPROF_RANGEMAP_H

#include <stdint.h>

struct rm_range {
	uint64_t base, size;
	int64_t id;
};

struct rm_chunk;
struct rangemap {
	struct rm_chunk **dir; /* nch chunks in base order, each non-empty */
	int nch, capch, n;
	struct rm_range *outer; /* hidden outer ranges (segments are few), oldest first */
	int nouter;
};
#define RANGEMAP_INIT                                                                              \
	{                                                                                          \
		0                                                                                  \
	}

/* Adds [base, base+size) as allocation id, dropping the ranges it overlaps; inner: a block of
 * a pool, which hides (keeps for their remove) the ranges that hold it. 0, or -1 without
 * memory (the map is unchanged then, less the ranges the new one overlapped). */
int rangemap_add(struct rangemap *m, uint64_t base, uint64_t size, int64_t id, int inner);
/* Removes the range starting at base (a hidden outer range when no visible one starts there);
 * returns its id and sets *size (size may be NULL), or -1 when none starts there. */
int64_t rangemap_remove(struct rangemap *m, uint64_t base, uint64_t *size);
/* The visible range holding addr, or NULL; valid until the map's next change. */
const struct rm_range *rangemap_find(const struct rangemap *m, uint64_t addr);
/* Visible ranges. */
int rangemap_count(const struct rangemap *m);
/* Frees everything; the map is empty and usable after. */
void rangemap_clear(struct rangemap *m);

#endif
