/*
 * rangemap.c - live allocations sorted by base address, in a two-level sorted array: a directory
 * of chunks, each holding up to CHUNK ranges in order, every chunk non-empty and the chunks in
 * order. A lookup binary-searches the directory (by each chunk's first base), then the chunk; an
 * add or a remove moves at most a chunk's entries (a chunk splits in two when full and leaves
 * the directory when empty). So an allocation event costs the same with a hundred live tensors
 * as with ten thousand; one flat array moved half of them each time (measured 0.4 us an add and
 * remove at 800 live, 1.3 us at 3,000).
 *
 * Nested ranges: a pool allocator's block (PyTorch's caching allocator carves tensors out of its
 * cudaMalloc segments) is added inner. The ranges that contain it are not dropped but moved to a
 * short list of outer ranges (OUTER_MAX, the oldest goes first): lookups see only the blocks,
 * and the segment's own remove, which finds no block starting at its base once its blocks are
 * gone, still ends it with its id.
 */
#include "lib/rangemap.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK 64
struct rm_chunk {
	int n;
	struct rm_range r[CHUNK];
};
#define OUTER_MAX 4096

/* the chunk that would hold addr: the last whose first base <= addr, or 0 (or -1: none) */
static int chunk_of(const struct rangemap *m, uint64_t addr)
{
	int a = 0, b = m->nch;
	while (a < b) {
		int k = (a + b) / 2;
		if (m->dir[k]->r[0].base <= addr)
			a = k + 1;
		else
			b = k;
	}
	return a ? a - 1 : (m->nch ? 0 : -1);
}

/* in chunk c: the index of the first range with base > addr */
static int upper(const struct rm_chunk *c, uint64_t addr)
{
	int a = 0, b = c->n;
	while (a < b) {
		int k = (a + b) / 2;
		if (c->r[k].base <= addr)
			a = k + 1;
		else
			b = k;
	}
	return a;
}

const struct rm_range *rangemap_find(const struct rangemap *m, uint64_t addr)
{
	int ci = chunk_of(m, addr);
	if (ci < 0)
		return NULL;
	const struct rm_chunk *c = m->dir[ci];
	int i = upper(c, addr) - 1;
	return i >= 0 && addr - c->r[i].base < c->r[i].size ? &c->r[i] : NULL;
}

/* the last range with base < end, as (chunk, index); 0 when there is none */
static int last_before(const struct rangemap *m, uint64_t end, int *ci, int *i)
{
	if (!end)
		return 0;
	int c = chunk_of(m, end - 1);
	if (c < 0)
		return 0;
	int j = upper(m->dir[c], end - 1) - 1;
	if (j < 0)
		return 0;
	*ci = c, *i = j;
	return 1;
}

static void remove_at(struct rangemap *m, int ci, int i)
{
	struct rm_chunk *c = m->dir[ci];
	memmove(c->r + i, c->r + i + 1, sizeof(c->r[0]) * (size_t)(c->n - i - 1));
	c->n--, m->n--;
	if (!c->n) {
		free(c);
		memmove(m->dir + ci, m->dir + ci + 1, sizeof(*m->dir) * (size_t)(m->nch - ci - 1));
		m->nch--;
	}
}

/* inserts r in order (no range overlaps it); 0, or -1 without memory */
static int insert(struct rangemap *m, const struct rm_range *r)
{
	if (m->nch == m->capch) {
		int nc = m->capch ? m->capch * 2 : 64;
		struct rm_chunk **nd = realloc(m->dir, sizeof(*nd) * (size_t)nc);
		if (!nd)
			return -1;
		m->dir = nd, m->capch = nc;
	}
	int ci = chunk_of(m, r->base);
	if (ci < 0) {
		struct rm_chunk *c = malloc(sizeof(*c));
		if (!c)
			return -1;
		c->n = 0;
		m->dir[m->nch++] = c;
		ci = 0;
	}
	struct rm_chunk *c = m->dir[ci];
	if (c->n == CHUNK) { /* split: the upper half goes to a new chunk after it */
		struct rm_chunk *d = malloc(sizeof(*d));
		if (!d)
			return -1;
		d->n = CHUNK / 2;
		memcpy(d->r, c->r + CHUNK / 2, sizeof(c->r[0]) * (CHUNK / 2));
		c->n = CHUNK / 2;
		memmove(m->dir + ci + 2, m->dir + ci + 1,
		        sizeof(*m->dir) * (size_t)(m->nch - ci - 1));
		m->dir[ci + 1] = d;
		m->nch++;
		if (r->base >= d->r[0].base)
			c = d;
	}
	int i = upper(c, r->base);
	memmove(c->r + i + 1, c->r + i, sizeof(c->r[0]) * (size_t)(c->n - i));
	c->r[i] = *r;
	c->n++, m->n++;
	return 0;
}

/* keeps r as an outer range (the oldest goes when the list is full) */
static void hide(struct rangemap *m, const struct rm_range *r)
{
	if (!m->outer && !(m->outer = malloc(sizeof(*m->outer) * OUTER_MAX)))
		return;
	if (m->nouter == OUTER_MAX) {
		memmove(m->outer, m->outer + 1, sizeof(*m->outer) * (OUTER_MAX - 1));
		m->nouter--;
	}
	m->outer[m->nouter++] = *r;
}

int rangemap_add(struct rangemap *m, uint64_t base, uint64_t size, int64_t id, int inner)
{
	/* drop the ranges this one overlaps (they are contiguous, ending at the last that starts
	 * before its end); an inner block hides the range holding it */
	int ci, i;
	uint64_t end = base + size < base ? UINT64_MAX : base + size;
	while (last_before(m, end, &ci, &i)) {
		const struct rm_range *o = &m->dir[ci]->r[i];
		if (o->base + o->size <= base)
			break;
		if (inner && o->base <= base && end <= o->base + o->size)
			hide(m, o);
		remove_at(m, ci, i);
	}
	struct rm_range r = {base, end - base, id};
	return insert(m, &r);
}

int64_t rangemap_remove(struct rangemap *m, uint64_t base, uint64_t *size)
{
	int ci = chunk_of(m, base);
	int i = ci >= 0 ? upper(m->dir[ci], base) - 1 : -1;
	if (i >= 0 && m->dir[ci]->r[i].base == base) {
		int64_t id = m->dir[ci]->r[i].id;
		if (size)
			*size = m->dir[ci]->r[i].size;
		remove_at(m, ci, i);
		return id;
	}
	for (int k = m->nouter - 1; k >= 0; k--) {
		if (m->outer[k].base != base)
			continue;
		int64_t id = m->outer[k].id;
		if (size)
			*size = m->outer[k].size;
		memmove(m->outer + k, m->outer + k + 1,
		        sizeof(*m->outer) * (size_t)(m->nouter - k - 1));
		m->nouter--;
		return id;
	}
	return -1;
}

int rangemap_count(const struct rangemap *m)
{
	return m->n;
}

void rangemap_clear(struct rangemap *m)
{
	for (int i = 0; i < m->nch; i++)
		free(m->dir[i]);
	free(m->dir);
	free(m->outer);
	memset(m, 0, sizeof(*m));
}
