/*
 * hmap.c - open addressing with linear probing over a power-of-two table; see hmap.h. The
 * table doubles when used slots and tombstones pass 70% and is rebuilt without tombstones.
 */
#include "lib/hmap.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>

static inline size_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (size_t)k;
}

void hmap_init(struct hmap *m)
{
	memset(m, 0, sizeof(*m));
}

void hmap_release(struct hmap *m)
{
	free(m->keys);
	free(m->vals);
	free(m->state);
	memset(m, 0, sizeof(*m));
}

static void rehash(struct hmap *m, size_t cap)
{
	struct hmap n = {xmalloc(cap * sizeof(uint64_t)),
	                 xmalloc(cap * sizeof(uint64_t)),
	                 xcalloc(cap, 1),
	                 cap,
	                 0,
	                 0};
	for (size_t i = 0; i < m->cap; i++)
		if (m->state[i] == 1)
			hmap_put(&n, m->keys[i], m->vals[i]);
	hmap_release(m);
	*m = n;
}

void hmap_put(struct hmap *m, uint64_t key, uint64_t val)
{
	if ((m->used + m->tombs + 1) * 10 >= m->cap * 7)
		rehash(m, m->cap < 16                           ? 16
		          : (m->used * 2 + 1) * 10 / 7 > m->cap ? m->cap * 2
		                                                : m->cap);
	size_t mask = m->cap - 1, i = hash64(key) & mask, tomb = (size_t)-1;
	for (;; i = (i + 1) & mask) {
		if (m->state[i] == 0)
			break;
		if (m->state[i] == 2) {
			if (tomb == (size_t)-1)
				tomb = i;
			continue;
		}
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return;
		}
	}
	if (tomb != (size_t)-1) {
		i = tomb;
		m->tombs--;
	}
	m->state[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->used++;
}

static size_t find(const struct hmap *m, uint64_t key)
{
	if (!m->cap)
		return (size_t)-1;
	size_t mask = m->cap - 1, i = hash64(key) & mask;
	for (;; i = (i + 1) & mask) {
		if (m->state[i] == 0)
			return (size_t)-1;
		if (m->state[i] == 1 && m->keys[i] == key)
			return i;
	}
}

int hmap_get(const struct hmap *m, uint64_t key, uint64_t *val)
{
	size_t i = find(m, key);
	if (i == (size_t)-1)
		return 0;
	if (val)
		*val = m->vals[i];
	return 1;
}

int hmap_del(struct hmap *m, uint64_t key, uint64_t *val)
{
	size_t i = find(m, key);
	if (i == (size_t)-1)
		return 0;
	if (val)
		*val = m->vals[i];
	m->state[i] = 2;
	m->used--;
	m->tombs++;
	return 1;
}

int hmap_next(const struct hmap *m, size_t *i, uint64_t *key, uint64_t *val)
{
	for (; *i < m->cap; (*i)++)
		if (m->state[*i] == 1) {
			if (key)
				*key = m->keys[*i];
			if (val)
				*val = m->vals[*i];
			(*i)++;
			return 1;
		}
	return 0;
}
