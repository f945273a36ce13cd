/*
 * ptrmap.c - live allocations sorted by base address, in a two-level sorted array: a directory
 * of chunks, each holding up to CHUNK ranges in order, every chunk non-empty and the chunks in
 * order. A lookup binary-searches the directory (by each chunk's first base), then the chunk,
 * under the read lock; an add or a remove moves at most a chunk's entries under the write lock
 * (a chunk splits in two when full and leaves the directory when empty). So an allocation event
 * costs the same with a hundred live tensors as with ten thousand; one flat array moved half of
 * them each time (measured 0.4 us an add and remove at 800 live, 1.3 us at 3,000).
 *
 * Overlapping adds (a range handed out again before its free was seen) replace the older entry.
 * Nested ranges: a pool allocator's block (PyTorch's caching allocator carves tensors out of
 * its cudaMalloc segments) is added with ptrmap_add_inner(). The ranges that contain it are
 * not dropped but moved to a short list of outer ranges: lookups see only the blocks (a
 * pointer into a segment's free part is in no allocation), and the segment's own free, which
 * finds no block starting at its base once its blocks are gone, still ends it with its id.
 */
#include "preload/ptrmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct range {
	uint64_t base, size;
	int64_t id;
};

#define CHUNK 64
struct chunk {
	int n;
	struct range r[CHUNK];
};

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct chunk **dir; /* nch chunks in base order */
static int nch, capch, n;
static int64_t next_id;
/* outer ranges hidden by the blocks inside them (unsorted; segments are few) */
#define OUTER_MAX 4096
static struct range *outer;
static int nouter;
static _Atomic uint64_t lo_bound = UINT64_MAX, hi_bound;

/* the chunk that would hold addr: the last whose first base <= addr, or 0 (or -1: none) */
static int chunk_of(uint64_t addr)
{
	int a = 0, b = nch;
	while (a < b) {
		int m = (a + b) / 2;
		if (dir[m]->r[0].base <= addr)
			a = m + 1;
		else
			b = m;
	}
	return a ? a - 1 : (nch ? 0 : -1);
}

/* in chunk c: the index of the first range with base > addr */
static int upper(const struct chunk *c, uint64_t addr)
{
	int a = 0, b = c->n;
	while (a < b) {
		int m = (a + b) / 2;
		if (c->r[m].base <= addr)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* the range holding addr, or NULL; under either lock */
static const struct range *find(uint64_t addr)
{
	int ci = chunk_of(addr);
	if (ci < 0)
		return NULL;
	const struct chunk *c = dir[ci];
	int i = upper(c, addr) - 1;
	return i >= 0 && addr < c->r[i].base + c->r[i].size ? &c->r[i] : NULL;
}

/* the last range with base < end, as (chunk, index); 0 when there is none */
static int last_before(uint64_t end, int *ci, int *i)
{
	if (!end)
		return 0;
	int c = chunk_of(end - 1);
	if (c < 0)
		return 0;
	int j = upper(dir[c], end - 1) - 1;
	if (j < 0)
		return 0;
	*ci = c, *i = j;
	return 1;
}

static void remove_at(int ci, int i)
{
	struct chunk *c = dir[ci];
	memmove(c->r + i, c->r + i + 1, sizeof(c->r[0]) * (size_t)(c->n - i - 1));
	c->n--, n--;
	if (!c->n) {
		free(c);
		memmove(dir + ci, dir + ci + 1, sizeof(*dir) * (size_t)(nch - ci - 1));
		nch--;
	}
}

/* inserts r in order (no range overlaps it); 0, or -1 without memory */
static int insert(const struct range *r)
{
	if (nch == capch) {
		int nc = capch ? capch * 2 : 64;
		struct chunk **nd = realloc(dir, sizeof(*dir) * (size_t)nc);
		if (!nd)
			return -1;
		dir = nd, capch = nc;
	}
	int ci = chunk_of(r->base);
	if (ci < 0) {
		struct chunk *c = malloc(sizeof(*c));
		if (!c)
			return -1;
		c->n = 0;
		dir[nch++] = c;
		ci = 0;
	}
	struct chunk *c = dir[ci];
	if (c->n == CHUNK) { /* split: the upper half goes to a new chunk after it */
		struct chunk *d = malloc(sizeof(*d));
		if (!d)
			return -1;
		d->n = CHUNK / 2;
		memcpy(d->r, c->r + CHUNK / 2, sizeof(c->r[0]) * (CHUNK / 2));
		c->n = CHUNK / 2;
		memmove(dir + ci + 2, dir + ci + 1, sizeof(*dir) * (size_t)(nch - ci - 1));
		dir[ci + 1] = d;
		nch++;
		if (r->base >= d->r[0].base)
			c = d;
	}
	int i = upper(c, r->base);
	memmove(c->r + i + 1, c->r + i, sizeof(c->r[0]) * (size_t)(c->n - i));
	c->r[i] = *r;
	c->n++, n++;
	return 0;
}

/* keeps r as an outer range (the oldest goes when the list is full); under the write lock */
static void hide(const struct range *r)
{
	if (!outer && !(outer = malloc(sizeof(*outer) * OUTER_MAX)))
		return;
	if (nouter == OUTER_MAX) {
		memmove(outer, outer + 1, sizeof(*outer) * (OUTER_MAX - 1));
		nouter--;
	}
	outer[nouter++] = *r;
}

static int64_t add(uint64_t ptr, uint64_t size, int inner)
{
	pthread_rwlock_wrlock(&lock);
	int64_t id = next_id++;
	/* drop the ranges this one overlaps (they are contiguous, ending at the last that starts
	 * before its end); an inner block hides the range holding it */
	int ci, i;
	while (last_before(ptr + size, &ci, &i)) {
		const struct range *o = &dir[ci]->r[i];
		if (o->base + o->size <= ptr)
			break;
		if (inner && o->base <= ptr && ptr + size <= o->base + o->size)
			hide(o);
		remove_at(ci, i);
	}
	struct range r = {ptr, size, id};
	int bad = insert(&r);
	pthread_rwlock_unlock(&lock);
	if (bad)
		return id;
	if (ptr < atomic_load(&lo_bound))
		atomic_store(&lo_bound, ptr);
	if (ptr + size > atomic_load(&hi_bound))
		atomic_store(&hi_bound, ptr + size);
	return id;
}

int64_t ptrmap_add(uint64_t ptr, uint64_t size)
{
	return add(ptr, size, 0);
}

int64_t ptrmap_add_inner(uint64_t ptr, uint64_t size)
{
	return add(ptr, size, 1);
}

int64_t ptrmap_remove(uint64_t ptr, uint64_t *size)
{
	int64_t id = -1;
	pthread_rwlock_wrlock(&lock);
	int ci = chunk_of(ptr);
	int i = ci >= 0 ? upper(dir[ci], ptr) - 1 : -1;
	if (i >= 0 && dir[ci]->r[i].base == ptr) {
		id = dir[ci]->r[i].id;
		if (size)
			*size = dir[ci]->r[i].size;
		remove_at(ci, i);
	} else {
		for (int k = nouter - 1; k >= 0; k--) {
			if (outer[k].base != ptr)
				continue;
			id = outer[k].id;
			if (size)
				*size = outer[k].size;
			memmove(outer + k, outer + k + 1,
			        sizeof(*outer) * (size_t)(nouter - k - 1));
			nouter--;
			break;
		}
	}
	pthread_rwlock_unlock(&lock);
	return id;
}

int64_t ptrmap_find_range(uint64_t addr, uint64_t *base, uint64_t *size)
{
	int64_t id = -1;
	pthread_rwlock_rdlock(&lock);
	const struct range *r = find(addr);
	if (r) {
		id = r->id;
		*base = r->base;
		*size = r->size;
	}
	pthread_rwlock_unlock(&lock);
	return id;
}

int64_t ptrmap_find(uint64_t addr, uint64_t *off)
{
	uint64_t base, size;
	int64_t id = ptrmap_find_range(addr, &base, &size);
	if (id >= 0)
		*off = addr - base;
	return id;
}

/* A launch's words point into few allocations, again and again (a cuBLAS GEMM's 18 pointers,
 * its TMA descriptors' among them, into 4), so the last ranges found are tried before a
 * search. */
#define BATCH_SEEN 4
void ptrmap_find_batch(const uint64_t *addrs, int cnt, int64_t *ids, uint64_t *offs)
{
	const struct range *seen[BATCH_SEEN];
	int ns = 0, next = 0;
	pthread_rwlock_rdlock(&lock);
	for (int k = 0; k < cnt; k++) {
		uint64_t a = addrs[k];
		const struct range *r = NULL;
		for (int j = 0; j < ns && !r; j++)
			if (a - seen[j]->base < seen[j]->size)
				r = seen[j];
		if (!r && (r = find(a))) {
			seen[next] = r;
			next = (next + 1) % BATCH_SEEN;
			ns += ns < BATCH_SEEN;
		}
		ids[k] = r ? r->id : -1;
		offs[k] = r ? a - r->base : 0;
	}
	pthread_rwlock_unlock(&lock);
}

void ptrmap_bounds(uint64_t *lo, uint64_t *hi)
{
	*lo = atomic_load(&lo_bound);
	*hi = atomic_load(&hi_bound);
}

int ptrmap_count(void)
{
	pthread_rwlock_rdlock(&lock);
	int r = n;
	pthread_rwlock_unlock(&lock);
	return r;
}

void ptrmap_clear(void)
{
	pthread_rwlock_wrlock(&lock);
	for (int i = 0; i < nch; i++)
		free(dir[i]);
	nch = 0;
	n = 0;
	nouter = 0;
	next_id = 0;
	pthread_rwlock_unlock(&lock);
	atomic_store(&lo_bound, UINT64_MAX);
	atomic_store(&hi_bound, 0);
}
