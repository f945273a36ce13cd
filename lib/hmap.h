/*
 * hmap.h - an open-addressing hash map from 64-bit keys to 64-bit values (pointers or
 * indices), for the analyzer's joins: correlation id to pending op, allocation id to buffer,
 * event and stream handles to the last op. Linear probing; deletions leave tombstones that a
 * rehash clears. Any key is allowed; the map owns only its slot arrays.
 */
#ifndef AICPROF_HMAP_H
#define AICPROF_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap {
	uint64_t *keys, *vals;
	unsigned char *state; /* 0 empty, 1 used, 2 deleted */
	size_t cap, used, tombs;
};

void hmap_init(struct hmap *m);
void hmap_release(struct hmap *m);
/* Sets key to val (replacing any value). */
void hmap_put(struct hmap *m, uint64_t key, uint64_t val);
/* Returns 1 and stores the value in *val (when val is not NULL) if key is present, else 0. */
int hmap_get(const struct hmap *m, uint64_t key, uint64_t *val);
/* Removes key; returns 1 if it was present (its value in *val when val is not NULL). */
int hmap_del(struct hmap *m, uint64_t key, uint64_t *val);
/* Number of keys present. */
static inline size_t hmap_size(const struct hmap *m)
{
	return m->used;
}
/* Iteration: for (size_t i = 0; hmap_next(m, &i, &k, &v);) visits every key once. */
int hmap_next(const struct hmap *m, size_t *i, uint64_t *key, uint64_t *val);

#endif
