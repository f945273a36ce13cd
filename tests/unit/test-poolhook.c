/*
 * test-poolhook.c - preload/poolhook.c: PyTorch's caching allocator's blocks recorded as
 * allocations. build/mock/libc10_cuda.so (tests/mock/c10_cuda.c) reports blocks to the mock
 * libc10.so through its GOT, as the real library does; once the hook is armed each report must
 * reach libc10 unchanged, enter or leave the pointer map as a block inside its segment, and
 * leave one alloc or free record of api "c10::CachingAllocator" in this thread's ring.
 */
#include "preload/base.h"
#include "preload/cupti.h"
#include "preload/poolhook.h"
#include "preload/ptrmap.h"
#include "preload/record.h"
#include "preload/ring.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void (*block)(void *, int64_t, int, int);
static long (*last)(void **, int64_t *, uint64_t *, uint64_t *, int *, int *);

static int setup(void **state)
{
	(void)state;
	char path[4096];
	const char *top = getenv("AICPROF_TOP");
	snprintf(path, sizeof(path), "%s/build/mock/libc10_cuda.so", top ? top : ".");
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return -1;
	}
	block = (void (*)(void *, int64_t, int, int))dlsym(h, "mock_block");
	void *c10 = dlopen("libc10.so", RTLD_NOW | RTLD_NOLOAD);
	last = c10 ? (long (*)(void **, int64_t *, uint64_t *, uint64_t *, int *, int *))dlsym(
	                 c10, "mock_c10_last")
	           : NULL;
	return block && last ? 0 : -1;
}

/* the alloc/free records of api c10::CachingAllocator in the rings, oldest first, consumed */
static int take_records(struct r_alloc *out, int max)
{
	int n = 0;
	for (struct ring *r = ring_list(); r; r = r->next) {
		uint64_t t = atomic_load(&r->tail), h = atomic_load(&r->head);
		while (t < h) {
			const struct rec_hdr *hd = (const struct rec_hdr *)(r->buf + t % RING_SIZE);
			if (hd->type == 0) { /* padding to the end */
				t += RING_SIZE - t % RING_SIZE;
				continue;
			}
			if ((hd->type == R_ALLOC || hd->type == R_FREE) && n < max) {
				const struct r_alloc *a = (const struct r_alloc *)hd;
				if (!strcmp(cupti_api_name(a->api), "c10::CachingAllocator"))
					out[n++] = *a;
			}
			t += hd->len;
		}
		atomic_store(&r->tail, t);
	}
	return n;
}

static void report_seen(void *ptr, int64_t size, int type)
{
	void *p;
	int64_t s;
	uint64_t al, re;
	int ty, ix;
	last(&p, &s, &al, &re, &ty, &ix);
	assert_ptr_equal(p, ptr);
	assert_int_equal(s, size);
	assert_int_equal(al, 1000 + (uint64_t)size);
	assert_int_equal(re, 2000);
	assert_int_equal(ty, type);
	assert_int_equal(ix, 3);
}

/* the hook armed, the map and this thread's ring empty */
static void arm_empty(void)
{
	poolhook_set_enabled(1);
	poolhook_try("test");
	assert_true(poolhook_armed());
	ptrmap_clear();
	take_records(NULL, 0);
}

static void test_disabled_patches_nothing(void **state)
{
	(void)state;
	poolhook_set_enabled(0);
	poolhook_try("test");
	assert_false(poolhook_armed());
	ptrmap_clear();
	block((void *)0x7f0000100000, 512, 1, 3);
	report_seen((void *)0x7f0000100000, 512, 1);
	assert_int_equal(ptrmap_count(), 0);
	struct r_alloc r[4];
	assert_int_equal(take_records(r, 4), 0);
}

static void test_blocks_recorded(void **state)
{
	(void)state;
	arm_empty();
	int64_t seg = ptrmap_add(0x7f0000000000, 2 << 20); /* the segment's cudaMalloc */
	long before =
	    last(&(void *){0}, &(int64_t){0}, &(uint64_t){0}, &(uint64_t){0}, &(int){0}, &(int){0});
	block((void *)0x7f0000000000, 1024, 1, 3);
	report_seen((void *)0x7f0000000000, 1024, 1);
	block((void *)0x7f0000000400, 4096, 1, 3);
	uint64_t off = 0;
	int64_t b2 = ptrmap_find(0x7f0000000410, &off);
	assert_true(b2 > seg);
	assert_int_equal(off, 0x10);
	assert_int_equal(ptrmap_find(0x7f0000100000, &off), -1); /* free part of the segment */
	block((void *)0x7f0000000400, -4096, 1, 3);
	report_seen((void *)0x7f0000000400, -4096, 1);
	assert_int_equal(ptrmap_find(0x7f0000000410, &off), -1);
	/* a CPU block (type 0) is passed on and not recorded */
	block((void *)0x5000, 64, 0, 3);
	report_seen((void *)0x5000, 64, 0);
	long after =
	    last(&(void *){0}, &(int64_t){0}, &(uint64_t){0}, &(uint64_t){0}, &(int){0}, &(int){0});
	assert_int_equal(after - before, 4);

	struct r_alloc r[8];
	int n = take_records(r, 8);
	assert_int_equal(n, 3);
	assert_int_equal(r[0].h.type, R_ALLOC);
	assert_int_equal(r[0].ptr, 0x7f0000000000);
	assert_int_equal(r[0].size, 1024);
	assert_int_equal(r[1].h.type, R_ALLOC);
	assert_int_equal(r[1].id, b2);
	assert_int_equal(r[2].h.type, R_FREE);
	assert_int_equal(r[2].id, b2);
	assert_int_equal(r[2].size, 4096);
	assert_true(r[1].seq > r[0].seq && r[2].seq > r[1].seq);
	/* the last block goes, then the segment's own free still ends the segment */
	block((void *)0x7f0000000000, -1024, 1, 3);
	uint64_t sz = 0;
	assert_int_equal(ptrmap_remove(0x7f0000000000, &sz), seg);
	assert_int_equal(sz, 2 << 20);
	ptrmap_clear();
}

/* AICPROF_PAUSE_BLOCKS: a paused capture range records blocks unless the benchmark switch is on;
 * the report reaches libc10 either way */
static void test_pause_skips(void **state)
{
	(void)state;
	arm_empty();
	struct r_alloc r[4];
	shim_pause(1);
	block((void *)0x7f0000200000, 512, 1, 3); /* paused, switch off: recorded */
	report_seen((void *)0x7f0000200000, 512, 1);
	assert_int_equal(take_records(r, 4), 1);
	shim_cfg.pause_blocks = 1;
	block((void *)0x7f0000200000, -512, 1, 3); /* paused, switch on: passed on only */
	report_seen((void *)0x7f0000200000, -512, 1);
	assert_int_equal(take_records(r, 4), 0);
	shim_pause(0);
	block((void *)0x7f0000300000, 1024, 1, 3); /* running, switch on: recorded */
	report_seen((void *)0x7f0000300000, 1024, 1);
	assert_int_equal(take_records(r, 4), 1);
	assert_int_equal(r[0].ptr, 0x7f0000300000);
	shim_cfg.pause_blocks = 0;
	ptrmap_clear();
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_disabled_patches_nothing),
	                                   cmocka_unit_test(test_blocks_recorded),
	                                   cmocka_unit_test(test_pause_skips)};
	return cmocka_run_group_tests(tests, setup, NULL);
}
