/*
 * ptrmap.c - live allocations as an array sorted by base address. Lookups binary-search it
 * under the read lock; adds and removes move the tail under the write lock (a few hundred
 * live tensors is the common case, so the move is short). Overlapping adds (a range handed out
 * again before its free was seen) replace the older entry.
 *
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

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct range *v;
static int n, cap;
static int64_t next_id;
/* outer ranges hidden by the blocks inside them (unsorted; segments are few) */
#define OUTER_MAX 4096
static struct range *outer;
static int nouter;
static _Atomic uint64_t lo_bound = UINT64_MAX, hi_bound;

/* index of the first range with base > addr */
static int upper(uint64_t addr)
{
	int a = 0, b = n;
	while (a < b) {
		int m = (a + b) / 2;
		if (v[m].base <= addr)
			a = m + 1;
		else
			b = m;
	}
	return a;
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
	int i = upper(ptr);
	/* drop ranges this one overlaps; an inner block hides the range holding it */
	while (i > 0 && v[i - 1].base + v[i - 1].size > ptr) {
		if (inner && v[i - 1].base <= ptr && ptr + size <= v[i - 1].base + v[i - 1].size)
			hide(&v[i - 1]);
		memmove(v + i - 1, v + i, sizeof(*v) * (size_t)(n - i));
		n--, i--;
	}
	while (i < n && v[i].base < ptr + size) {
		memmove(v + i, v + i + 1, sizeof(*v) * (size_t)(n - i - 1));
		n--;
	}
	if (n == cap) {
		int nc = cap ? cap * 2 : 1024;
		struct range *nv = realloc(v, sizeof(*v) * (size_t)nc);
		if (!nv) {
			pthread_rwlock_unlock(&lock);
			return id;
		}
		v = nv;
		cap = nc;
	}
	memmove(v + i + 1, v + i, sizeof(*v) * (size_t)(n - i));
	v[i] = (struct range){ptr, size, id};
	n++;
	pthread_rwlock_unlock(&lock);
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
	int i = upper(ptr) - 1;
	if (i >= 0 && v[i].base == ptr) {
		id = v[i].id;
		if (size)
			*size = v[i].size;
		memmove(v + i, v + i + 1, sizeof(*v) * (size_t)(n - i - 1));
		n--;
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
	int i = upper(addr) - 1;
	if (i >= 0 && addr < v[i].base + v[i].size) {
		id = v[i].id;
		*base = v[i].base;
		*size = v[i].size;
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

void ptrmap_find_batch(const uint64_t *addrs, int cnt, int64_t *ids, uint64_t *offs)
{
	pthread_rwlock_rdlock(&lock);
	for (int k = 0; k < cnt; k++) {
		uint64_t a = addrs[k];
		int i = upper(a) - 1;
		if (i >= 0 && a < v[i].base + v[i].size) {
			ids[k] = v[i].id;
			offs[k] = a - v[i].base;
		} else {
			ids[k] = -1;
			offs[k] = 0;
		}
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
	n = 0;
	nouter = 0;
	next_id = 0;
	pthread_rwlock_unlock(&lock);
	atomic_store(&lo_bound, UINT64_MAX);
	atomic_store(&hi_bound, 0);
}
