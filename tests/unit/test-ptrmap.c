/*
 * test-ptrmap.c - the shim's allocation map (preload/ptrmap.c over lib/rangemap.c, the structure
 * the analyzer's replay shares, analyzer/resolve.c): single-thread contract (add,
 * find at base and inside, remove, overlap replace, bounds), then threads that add and free
 * their own ranges while other threads look up addresses in them, under ASan: a lookup must
 * return either nothing or an allocation that holds the address, never garbage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "preload/ptrmap.h"

static void test_basic(void **st)
{
	ptrmap_clear();
	int64_t a = ptrmap_add(0x10000, 0x1000), b = ptrmap_add(0x20000, 0x100);
	assert_true(a >= 0 && b > a);
	uint64_t off = 99, base = 0, size = 0;
	assert_int_equal(ptrmap_find(0x10000, &off), a);
	assert_int_equal(off, 0);
	assert_int_equal(ptrmap_find(0x10fff, &off), a);
	assert_int_equal(off, 0xfff);
	assert_int_equal(ptrmap_find(0x11000, &off), -1);
	assert_int_equal(ptrmap_find_range(0x20080, &base, &size), b);
	assert_int_equal(base, 0x20000);
	assert_int_equal(size, 0x100);
	uint64_t lo, hi;
	ptrmap_bounds(&lo, &hi);
	assert_int_equal(lo, 0x10000);
	assert_int_equal(hi, 0x20100);
	assert_int_equal(ptrmap_count(), 2);
	assert_int_equal(ptrmap_remove(0x10000, &size), a);
	assert_int_equal(size, 0x1000);
	assert_int_equal(ptrmap_remove(0x10000, NULL), -1);
	assert_int_equal(ptrmap_find(0x10010, &off), -1);
	/* handed out again before its free was seen: the newer entry wins */
	int64_t c = ptrmap_add(0x20000, 0x200);
	assert_int_equal(ptrmap_find(0x20180, &off), c);
	assert_int_equal(ptrmap_count(), 1);
	ptrmap_clear();
	assert_int_equal(ptrmap_count(), 0);
}

#define NW    4
#define NR    4
#define LIVE  64
#define ROUND 2000
static _Atomic int stop, bad;

/* Writer w owns [(w+1)<<32, (w+2)<<32): sizes are 256 << (i % 8), slot i at a fixed place. */
static uint64_t slot_base(int w, int i)
{
	return ((uint64_t)(w + 1) << 32) + (uint64_t)i * (1u << 20);
}

static void *writer(void *p)
{
	int w = (int)(intptr_t)p;
	for (int r = 0; r < ROUND; r++) {
		int i = r % LIVE;
		ptrmap_remove(slot_base(w, i), NULL);
		ptrmap_add(slot_base(w, i), 256u << (r % 8));
	}
	for (int i = 0; i < LIVE; i++)
		ptrmap_remove(slot_base(w, i), NULL);
	return NULL;
}

static void *reader(void *p)
{
	uint64_t s = 1 + (uint64_t)(intptr_t)p;
	/* bounded, and yielding: glibc's rwlock prefers readers, so readers that never pause
	 * starve the writers (minutes on a loaded 2-core machine) */
	for (long n = 0; n < 200000 && !atomic_load(&stop); n++) {
		if (!(n & 31))
			sched_yield();
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		int w = (int)(s % NW), i = (int)((s >> 8) % LIVE);
		uint64_t addr = slot_base(w, i) + ((s >> 16) % 40000), base, size;
		if (ptrmap_find_range(addr, &base, &size) >= 0 &&
		    (addr < base || addr >= base + size || base != slot_base(w, i) || size < 256 ||
		     size > (256u << 7)))
			atomic_fetch_add(&bad, 1);
	}
	return NULL;
}

/* The batch lookup answers exactly as one ptrmap_find per address, on ranges with gaps,
 * addresses before, inside, at the end of and between them. */
/* a pool's blocks inside its segment (ptrmap_add_inner): lookups see the blocks only, the
 * segment's free still finds its id, and a plain add over a range still replaces it */
static void test_inner(void **st)
{
	ptrmap_clear();
	int64_t seg = ptrmap_add(0x100000, 0x200000);
	uint64_t off = 0, size = 0;
	assert_int_equal(ptrmap_find(0x100000, &off), seg);
	int64_t b1 = ptrmap_add_inner(0x100000, 0x200);
	int64_t b2 = ptrmap_add_inner(0x100200, 0x1000);
	assert_true(b1 > seg && b2 > b1);
	assert_int_equal(ptrmap_find(0x100010, &off), b1);
	assert_int_equal(off, 0x10);
	assert_int_equal(ptrmap_find(0x100fff, &off), b2);
	assert_int_equal(off, 0xdff);
	/* the segment's free part is in no allocation */
	assert_int_equal(ptrmap_find(0x180000, &off), -1);
	assert_int_equal(ptrmap_count(), 2);
	/* blocks freed, one handed out again at the same base */
	assert_int_equal(ptrmap_remove(0x100000, &size), b1);
	assert_int_equal(size, 0x200);
	assert_int_equal(ptrmap_remove(0x100200, &size), b2);
	int64_t b3 = ptrmap_add_inner(0x100000, 0x200000); /* the whole segment, unsplit */
	assert_int_equal(ptrmap_find(0x1fffff, &off), b3);
	assert_int_equal(ptrmap_remove(0x100000, &size), b3);
	/* the segment's cudaFree: no block starts there now, the hidden segment ends */
	assert_int_equal(ptrmap_remove(0x100000, &size), seg);
	assert_int_equal(size, 0x200000);
	assert_int_equal(ptrmap_remove(0x100000, &size), -1);
	/* a plain add drops what it overlaps, nothing is hidden */
	int64_t s2 = ptrmap_add(0x400000, 0x1000);
	int64_t s3 = ptrmap_add(0x400000, 0x800);
	assert_int_equal(ptrmap_find(0x400100, &off), s3);
	assert_int_equal(ptrmap_remove(0x400000, NULL), s3);
	assert_int_equal(ptrmap_remove(0x400000, NULL), -1);
	(void)s2;
	/* many hidden segments: bounded, the oldest forgotten */
	for (int i = 0; i < 5000; i++) {
		uint64_t base = 0x10000000ull + (uint64_t)i * 0x10000;
		ptrmap_add(base, 0x10000);
		ptrmap_add_inner(base, 0x100);
		ptrmap_remove(base, NULL);
	}
	assert_int_equal(ptrmap_remove(0x10000000ull, NULL), -1);
	assert_true(ptrmap_remove(0x10000000ull + 4999ull * 0x10000, NULL) >= 0);
	ptrmap_clear();
}

/* random adds (plain and inner) and removes against a plain list of what must be live:
 * every lookup agrees, across many chunk splits and merges */
static void test_random_against_model(void **st)
{
	enum { SLOTS = 3000, OPS = 60000 };
	static struct {
		uint64_t base, size;
		int64_t id;
		int live;
	} m[SLOTS];
	ptrmap_clear();
	memset(m, 0, sizeof(m));
	unsigned seed = 12345;
	for (int op = 0; op < OPS; op++) {
		seed = seed * 1103515245u + 12345u;
		int k = (int)((seed >> 8) % SLOTS);
		/* slot k owns [base_k, base_k + 0x10000): ranges of different slots never overlap
		 */
		uint64_t base = 0x7f0000000000ull + (uint64_t)k * 0x10000;
		if (m[k].live) {
			assert_int_equal(ptrmap_remove(m[k].base, NULL), m[k].id);
			m[k].live = 0;
		} else {
			uint64_t size = 512 + ((seed >> 4) % 0xfe00);
			m[k].base = base + ((seed >> 20) % 2) * 256;
			m[k].size = size - ((seed >> 20) % 2) * 256;
			m[k].id = (seed & 1) ? ptrmap_add_inner(m[k].base, m[k].size)
			                     : ptrmap_add(m[k].base, m[k].size);
			m[k].live = 1;
		}
		if (op % 97 == 0) {
			int live = 0;
			for (int j = 0; j < SLOTS; j++) {
				live += m[j].live;
				uint64_t off = 0, a = m[j].base + m[j].size / 2;
				if (!m[j].base)
					continue;
				int64_t got = ptrmap_find(a, &off);
				if (m[j].live) {
					assert_int_equal(got, m[j].id);
					assert_int_equal(off, m[j].size / 2);
				} else {
					assert_int_equal(got, -1);
				}
			}
			assert_int_equal(ptrmap_count(), live);
		}
	}
	ptrmap_clear();
	assert_int_equal(ptrmap_count(), 0);
}

static void test_batch(void **st)
{
	(void)st;
	ptrmap_clear();
	uint64_t seed = 12345;
	for (int i = 0; i < 200; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		ptrmap_add(0x100000 + (uint64_t)i * 0x10000, 0x100 + ((seed >> 33) & 0xfff));
	}
	enum { N = 1000 };
	uint64_t addrs[N], offs[N];
	int64_t ids[N];
	for (int k = 0; k < N; k++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		addrs[k] = 0xf0000 + ((seed >> 20) % (201ull * 0x10000));
	}
	ptrmap_find_batch(addrs, N, ids, offs);
	int hits = 0;
	for (int k = 0; k < N; k++) {
		uint64_t off = 0;
		int64_t id = ptrmap_find(addrs[k], &off);
		assert_int_equal(ids[k], id);
		if (id >= 0) {
			assert_int_equal(offs[k], off);
			hits++;
		}
	}
	assert_true(hits > 0 && hits < N);      /* both kinds were asked */
	ptrmap_find_batch(addrs, 0, ids, offs); /* nothing to do, nothing touched */
	/* a GEMM's words: few ranges again and again (the ranges the batch saw last are tried
	 * first), and words just past a seen range's end or just before its base, which the
	 * seen ranges must not claim */
	int reuse = 0;
	for (int k = 0; k < N; k++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t base = 0x100000 + ((seed >> 33) % 6) * 0x10000, o = (seed >> 8) & 0x1ff;
		uint64_t b = 0, size = 0;
		assert_true(ptrmap_find_range(base, &b, &size) >= 0);
		int kind = (int)((seed >> 40) % 4);
		addrs[k] = kind == 0 ? base - 1 - o % 4 : kind == 1 ? base + size : base + o % size;
	}
	ptrmap_find_batch(addrs, N, ids, offs);
	for (int k = 0; k < N; k++) {
		uint64_t off = 0;
		int64_t id = ptrmap_find(addrs[k], &off);
		assert_int_equal(ids[k], id);
		if (id >= 0)
			assert_int_equal(offs[k], off);
		reuse += id >= 0;
	}
	assert_true(reuse > N / 3); /* half the words hit one of 6 ranges, again and again */
	ptrmap_clear();
}

static void test_concurrent(void **st)
{
	ptrmap_clear();
	pthread_t wt[NW], rt[NR];
	for (int i = 0; i < NR; i++)
		pthread_create(&rt[i], NULL, reader, (void *)(intptr_t)i);
	for (int i = 0; i < NW; i++)
		pthread_create(&wt[i], NULL, writer, (void *)(intptr_t)i);
	for (int i = 0; i < NW; i++)
		pthread_join(wt[i], NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < NR; i++)
		pthread_join(rt[i], NULL);
	assert_int_equal(atomic_load(&bad), 0);
	assert_int_equal(ptrmap_count(), 0);
	uint64_t off;
	assert_int_equal(ptrmap_find(slot_base(0, 0), &off), -1);
}

/* Offline (the shim's default, AICPROF_RESOLVE=offline): the map holds nothing, ids still
 * count up, the bounds still widen, and removes and lookups leave the answer to the analyzer. */
static void test_offline(void **st)
{
	ptrmap_clear();
	ptrmap_set_offline(1);
	assert_true(ptrmap_offline());
	int64_t a = ptrmap_add(0x30000, 0x1000), b = ptrmap_add_inner(0x30000, 0x100);
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	assert_int_equal(ptrmap_count(), 0);
	uint64_t lo, hi, off = 7, size = 7;
	ptrmap_bounds(&lo, &hi);
	assert_int_equal(lo, 0x30000);
	assert_int_equal(hi, 0x31000);
	ptrmap_add(0x10000, 0x10);
	ptrmap_bounds(&lo, &hi);
	assert_int_equal(lo, 0x10000);
	assert_int_equal(hi, 0x31000);
	assert_int_equal(ptrmap_remove(0x30000, &size), PTRMAP_OFFLINE);
	assert_int_equal(size, 0);
	assert_int_equal(ptrmap_find(0x30010, &off), PTRMAP_OFFLINE);
	uint64_t addrs[3] = {0x30000, 0x30010, 0x99999999};
	int64_t ids[3];
	uint64_t offs[3];
	ptrmap_find_batch(addrs, 3, ids, offs);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ids[i], PTRMAP_OFFLINE);
	ptrmap_set_offline(0);
	ptrmap_clear();
	assert_int_equal(ptrmap_add(0x30000, 0x1000), 0);
	assert_int_equal(ptrmap_find(0x30010, &off), 0);
	assert_int_equal(off, 0x10);
	ptrmap_clear();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic),   cmocka_unit_test(test_inner),
	    cmocka_unit_test(test_offline), cmocka_unit_test(test_random_against_model),
	    cmocka_unit_test(test_batch),   cmocka_unit_test(test_concurrent)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
