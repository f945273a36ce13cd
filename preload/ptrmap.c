/*
 * ptrmap.c - the shim's allocation map: lib/rangemap.c's ranges under a reader-writer lock,
 * allocation ids, the bounds of every address allocated, and the launch path's batch lookup.
 *
 * Resolved offline (ptrmap_set_offline(1), the default: AICPROF_RESOLVE=offline): the map
 * holds nothing. An add only takes the next id and widens the bounds, without a lock (an atomic
 * add, and a compare-and-swap only when an address lies outside the bounds so far), a remove
 * returns PTRMAP_OFFLINE, and the launch path writes each candidate word with that id; the
 * analyzer resolves them against the trace's allocation records in seq order
 * (analyzer/resolve.c), with the same rangemap. So recording an allocation or a free costs the
 * program's thread no lock and no search. AICPROF_RESOLVE=shim, and calibration
 * (AICPROF_WRITES=probe, which reads the allocation a pointer falls in), keep the map here.
 */
#include "preload/ptrmap.h"

#include "lib/rangemap.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct rangemap map = RANGEMAP_INIT;
static _Atomic int64_t next_id;
static _Atomic uint64_t lo_bound = UINT64_MAX, hi_bound;
static int offline;

void ptrmap_set_offline(int on)
{
	offline = on;
}

int ptrmap_offline(void)
{
	return offline;
}

static void widen(uint64_t ptr, uint64_t size)
{
	uint64_t lo = atomic_load_explicit(&lo_bound, memory_order_relaxed);
	while (ptr < lo && !atomic_compare_exchange_weak(&lo_bound, &lo, ptr))
		;
	uint64_t end = ptr + size, hi = atomic_load_explicit(&hi_bound, memory_order_relaxed);
	while (end > hi && !atomic_compare_exchange_weak(&hi_bound, &hi, end))
		;
}

static int64_t add(uint64_t ptr, uint64_t size, int inner)
{
	int64_t id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
	if (!offline) {
		pthread_rwlock_wrlock(&lock);
		int bad = rangemap_add(&map, ptr, size, id, inner);
		pthread_rwlock_unlock(&lock);
		if (bad)
			return id;
	}
	widen(ptr, size);
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
	if (offline) {
		if (size)
			*size = 0;
		return PTRMAP_OFFLINE;
	}
	pthread_rwlock_wrlock(&lock);
	int64_t id = rangemap_remove(&map, ptr, size);
	pthread_rwlock_unlock(&lock);
	return id;
}

int64_t ptrmap_find_range(uint64_t addr, uint64_t *base, uint64_t *size)
{
	int64_t id = -1;
	pthread_rwlock_rdlock(&lock);
	const struct rm_range *r = rangemap_find(&map, addr);
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
	if (offline) {
		*off = 0;
		return PTRMAP_OFFLINE;
	}
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
	if (offline) {
		for (int k = 0; k < cnt; k++)
			ids[k] = PTRMAP_OFFLINE, offs[k] = 0;
		return;
	}
	const struct rm_range *seen[BATCH_SEEN];
	int ns = 0, next = 0;
	pthread_rwlock_rdlock(&lock);
	for (int k = 0; k < cnt; k++) {
		uint64_t a = addrs[k];
		const struct rm_range *r = NULL;
		for (int j = 0; j < ns && !r; j++)
			if (a - seen[j]->base < seen[j]->size)
				r = seen[j];
		if (!r && (r = rangemap_find(&map, a))) {
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
	int r = rangemap_count(&map);
	pthread_rwlock_unlock(&lock);
	return r;
}

void ptrmap_clear(void)
{
	pthread_rwlock_wrlock(&lock);
	rangemap_clear(&map);
	atomic_store(&next_id, 0);
	pthread_rwlock_unlock(&lock);
	atomic_store(&lo_bound, UINT64_MAX);
	atomic_store(&hi_bound, 0);
}
