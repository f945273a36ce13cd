/*
 * test-offcalc.c - analyzer/offcalc.c on closures built the way ATen lays out its strided
 * loop's lambda: an OffsetCalculator<NARGS> (dims, 25 IntDividers computed here with PyTorch's
 * formula, written independently of the decoder's check, and 25 x NARGS byte strides) beside
 * a data array of pointers and a functor, with the calculator before or after the pointers.
 * Rotary embedding's `q * cos` (q a transposed view, cos broadcast over batch and heads) and
 * a broadcast add are read back: sizes, strides, each operand's layout; a numel that is not the
 * sizes' product, a corrupted divider and random bytes find nothing; the hex reader refuses odd
 * lengths and non-digits. offcalc_offset() gives the rotary loop's byte offsets, and
 * analyzer/indexmap.c fits strided maps to offsets computed here by nested loops (a transpose,
 * a broadcast over a middle dimension, a slice at an offset), refusing offsets no map gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "analyzer/indexmap.h"
#include "analyzer/offcalc.h"

/* IntDivider<unsigned int>(d) as ATen's constructor computes it */
static void divider(uint32_t d, uint32_t out[3])
{
	uint32_t shift;
	for (shift = 0; shift < 32; shift++)
		if ((1u << shift) >= d)
			break;
	uint64_t one = 1;
	uint64_t magic = ((one << 32) * ((one << shift) - d)) / d + 1;
	out[0] = d, out[1] = (uint32_t)magic, out[2] = shift;
}

/* A closure: the data array's pointers before the calculator (calc_after) or after it, and 8
 * bytes of functor; the calculator's entries past dims hold garbage, as PyTorch 2.11 leaves
 * them unset. Returns its length. */
static size_t closure(uint8_t *buf, int dims, const uint32_t *sizes, int nargs,
                      const uint32_t *strides /* [dims][nargs] */, int calc_after)
{
	size_t k = 0;
	uint64_t ptr = 0x7f0012340000ull;
	if (calc_after)
		for (int a = 0; a < nargs; a++, k += 8, ptr += 0x100000)
			memcpy(buf + k, &ptr, 8);
	uint32_t d32 = (uint32_t)dims;
	memcpy(buf + k, &d32, 4), k += 4;
	uint32_t junk = 0x9e3779b9u;
	for (int i = 0; i < OFFCALC_DIMS; i++, k += 12) {
		uint32_t t[3] = {junk *= 2654435761u, junk *= 2654435761u, 32677};
		if (i < dims)
			divider(sizes[i], t);
		memcpy(buf + k, t, 12);
	}
	for (int i = 0; i < OFFCALC_DIMS; i++)
		for (int a = 0; a < nargs; a++, k += 4) {
			uint32_t s = i < dims ? strides[i * nargs + a] : (junk *= 2654435761u);
			memcpy(buf + k, &s, 4);
		}
	if (!calc_after) {
		k = (k + 7) & ~(size_t)7;
		for (int a = 0; a < nargs; a++, k += 8, ptr += 0x100000)
			memcpy(buf + k, &ptr, 8);
	}
	float alpha = 1.0f;
	memcpy(buf + k, &alpha, 4), k += 8;
	return k;
}

static void test_rotary(void **st)
{
	(void)st;
	/* out[b, h, s, d] = q[b, h, s, d] * cos[s, d], bf16, q = x.view(B, S, H, D).transpose(1,
	 * 2): dims fastest first (d 64, s 256, h 4, b 2) */
	const uint32_t sizes[4] = {64, 256, 4, 2};
	const uint32_t strides[4 * 3] = {
	    2,      2,      2,   /* d */
	    128,    512,    128, /* s: out contiguous, q steps over the heads, cos rows */
	    32768,  128,    0,   /* h */
	    131072, 131072, 0,   /* b */
	};
	for (int after = 0; after < 2; after++) {
		uint8_t buf[2048];
		size_t n = closure(buf, 4, sizes, 3, strides, after);
		struct offcalc oc;
		assert_int_equal(offcalc_decode(buf, n, 3, 64 * 256 * 4 * 2, &oc), 0);
		assert_int_equal(oc.dims, 4);
		assert_int_equal(oc.nargs, 3);
		for (int i = 0; i < 4; i++) {
			assert_int_equal(oc.size[i], sizes[i]);
			for (int a = 0; a < 3; a++)
				assert_int_equal(oc.stride[i][a], strides[i * 3 + a]);
		}
		uint32_t elem;
		long inner;
		assert_int_equal(offcalc_kind(&oc, 0, &elem, &inner), OC_DENSE);
		assert_int_equal(elem, 2);
		assert_int_equal(inner, 64 * 256 * 4 * 2);
		assert_int_equal(offcalc_kind(&oc, 1, &elem, &inner), OC_OTHER);
		assert_int_equal(offcalc_kind(&oc, 2, &elem, &inner), OC_BROADCAST);
		assert_int_equal(elem, 2);
		assert_int_equal(inner, 64 * 256);
		assert_int_equal(offcalc_kind(&oc, 3, &elem, &inner), OC_OTHER); /* no operand 3 */
		char d[160];
		offcalc_describe(&oc, 1, d, sizeof(d));
		assert_string_equal(d, "sizes [64, 256, 4, 2] strides [2, 512, 128, 131072]");
		/* a numel that is not the sizes' product, none, or no operand count: nothing */
		struct offcalc o2;
		assert_int_equal(offcalc_decode(buf, n, 3, 64 * 256 * 4, &o2), -1);
		assert_int_equal(offcalc_decode(buf, n, 3, 0, &o2), -1);
		assert_int_equal(offcalc_decode(buf, n, 0, 64 * 256 * 4 * 2, &o2), -1);
	}
}

static void test_broadcast_scalar_and_bad(void **st)
{
	(void)st;
	/* out[r, c] = x[r, c] + b[c] + s, f32, coalesced: c 1024, r 4096; s a 0-dim tensor */
	const uint32_t sizes[2] = {1024, 4096};
	const uint32_t strides[2 * 4] = {4, 4, 4, 0, 4096, 4096, 0, 0};
	uint8_t buf[2048];
	size_t n = closure(buf, 2, sizes, 4, strides, 1);
	struct offcalc oc;
	assert_int_equal(offcalc_decode(buf, n, 4, 1024L * 4096, &oc), 0);
	assert_int_equal(oc.nargs, 4);
	uint32_t elem;
	long inner;
	assert_int_equal(offcalc_kind(&oc, 1, &elem, &inner), OC_DENSE);
	assert_int_equal(offcalc_kind(&oc, 2, &elem, &inner), OC_BROADCAST);
	assert_int_equal(inner, 1024);
	assert_int_equal(offcalc_kind(&oc, 3, &elem, &inner), OC_SCALAR);
	/* a row's one value (x * rsqrt(mean(x * x)) per row): read at i / 1024 */
	struct offcalc t = oc;
	t.stride[0][1] = 0, t.stride[1][1] = 4;
	assert_int_equal(offcalc_kind(&t, 1, &elem, &inner), OC_PER_ROW);
	assert_int_equal(elem, 4);
	assert_int_equal(inner, 1024);
	/* broadcast on both sides of a contiguous run, or in the middle (the heads of rotary's
	 * cos in [B, S, H, D] order): no flat form */
	const uint32_t s3[3] = {64, 8, 256}, st3[3 * 2] = {2, 4, 128, 0, 1024, 256};
	uint8_t b3[2048];
	size_t n3 = closure(b3, 3, s3, 2, st3, 1);
	struct offcalc o3;
	assert_int_equal(offcalc_decode(b3, n3, 2, 64 * 8 * 256, &o3), 0);
	assert_int_equal(offcalc_kind(&o3, 0, &elem, &inner), OC_DENSE);
	assert_int_equal(offcalc_kind(&o3, 1, &elem, &inner), OC_OTHER);
	t = oc;
	t.stride[0][2] = 0, t.stride[1][2] = 0;
	t.dims = 3, t.size[2] = 1; /* size-1 dimensions are skipped */
	assert_int_equal(offcalc_kind(&t, 2, &elem, &inner), OC_SCALAR);
	t = oc;
	t.dims = 3, t.size[2] = 2, t.stride[2][1] = 0, t.stride[0][1] = 0, t.stride[1][1] = 4;
	assert_int_equal(offcalc_kind(&t, 1, &elem, &inner), OC_OTHER);
	/* every second element (a slice) reads as element size 8: the caller compares it */
	t = oc;
	t.stride[0][1] = 8, t.stride[1][1] = 8192;
	assert_int_equal(offcalc_kind(&t, 1, &elem, &inner), OC_DENSE);
	assert_int_equal(elem, 8);
	/* one divider's magic number off by one: nothing is found */
	uint8_t bad[2048];
	memcpy(bad, buf, n);
	uint32_t m1;
	memcpy(&m1, bad + 4 * 8 + 4 + 12 * 1 + 4, 4);
	m1++;
	memcpy(bad + 4 * 8 + 4 + 12 * 1 + 4, &m1, 4);
	assert_int_equal(offcalc_decode(bad, n, 4, 1024L * 4096, &oc), -1);
	/* a truncated closure, random bytes, no bytes */
	assert_int_equal(offcalc_decode(buf, 300, 4, 1024L * 4096, &oc), -1);
	uint64_t seed = 99;
	for (size_t i = 0; i < sizeof(bad); i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		bad[i] = (uint8_t)(seed >> 56);
	}
	for (int k = 1; k <= OFFCALC_ARGS; k++)
		for (long m = 1; m <= 1L << 20; m *= 2)
			assert_int_equal(offcalc_decode(bad, sizeof(bad), k, m, &oc), -1);
	assert_int_equal(offcalc_decode(NULL, 0, 4, 1, &oc), -1);
}

static void test_hex(void **st)
{
	(void)st;
	uint8_t b[4];
	assert_int_equal(offcalc_hex("00ff7A", b, sizeof(b)), 3);
	assert_int_equal(b[0], 0);
	assert_int_equal(b[1], 255);
	assert_int_equal(b[2], 0x7a);
	assert_int_equal(offcalc_hex("", b, sizeof(b)), 0);
	assert_int_equal(offcalc_hex("abc", b, sizeof(b)), -1); /* odd */
	assert_int_equal(offcalc_hex("0g", b, sizeof(b)), -1);  /* not hex */
	assert_int_equal(offcalc_hex("0011223344", b, 4), -1);  /* too long for the buffer */
}

/* offcalc_offset() on the rotary loop: q's byte offset of out[b, h, s, d], by the formula */
static void test_offset(void **st)
{
	(void)st;
	const uint32_t sizes[4] = {64, 256, 4, 2};
	const uint32_t strides[4 * 3] = {2, 2, 2, 128, 512, 128, 32768, 128, 0, 131072, 131072, 0};
	uint8_t buf[2048];
	size_t n = closure(buf, 4, sizes, 3, strides, 1);
	struct offcalc oc;
	assert_int_equal(offcalc_decode(buf, n, 3, 64 * 256 * 4 * 2, &oc), 0);
	for (uint64_t b = 0; b < 2; b++)
		for (uint64_t h = 0; h < 4; h++)
			for (uint64_t s = 0; s < 256; s += 17)
				for (uint64_t d = 0; d < 64; d += 5) {
					uint64_t j = d + 64 * (s + 256 * (h + 4 * b));
					assert_int_equal(offcalc_offset(&oc, 0, j), 2 * j);
					assert_int_equal(offcalc_offset(&oc, 1, j),
					                 2 * (d + 64 * (h + 4 * (s + 256 * b))));
					assert_int_equal(offcalc_offset(&oc, 2, j),
					                 2 * (d + 64 * s));
				}
}

/* Offsets of a view of sizes sz[4] (fastest first) and element strides st[4] from base, by
 * nested loops, into f (the element's index over the view in row-major order, fastest first).
 */
static void view_offsets(long *f, const long *sz, const long *st, long base)
{
	long i = 0;
	for (long c3 = 0; c3 < sz[3]; c3++)
		for (long c2 = 0; c2 < sz[2]; c2++)
			for (long c1 = 0; c1 < sz[1]; c1++)
				for (long c0 = 0; c0 < sz[0]; c0++)
					f[i++] = base + c0 * st[0] + c1 * st[1] + c2 * st[2] +
					         c3 * st[3];
}

static void test_indexmap(void **st)
{
	(void)st;
	enum { N = 64 * 8 * 16 * 2 };
	long *f = malloc(sizeof(long) * N);
	struct indexmap m;
	/* q.transpose(1, 2) read in [b, h, s, d] order: [b, s, h, d] memory */
	const long sz[4] = {64, 16, 8, 2}, tr[4] = {1, 512, 64, 8192};
	view_offsets(f, sz, tr, 0);
	assert_int_equal(indexmap_fit(f, N, &m), 0);
	assert_int_equal(m.dims, 4);
	assert_int_equal(m.base, 0);
	for (int d = 0; d < 4; d++) {
		assert_int_equal(m.size[d], sz[d]);
		assert_int_equal(m.stride[d], tr[d]);
	}
	for (long i = 0; i < N; i += 7)
		assert_int_equal(indexmap_at(&m, i), f[i]);
	assert_false(indexmap_identity(f, N));
	/* cos[s, d] broadcast over the heads (a middle dimension) and the batch: the two
	 * broadcast dimensions around s stay apart */
	const long bs[4] = {64, 8, 16, 2}, bst[4] = {1, 0, 64, 0};
	view_offsets(f, bs, bst, 0);
	assert_int_equal(indexmap_fit(f, N, &m), 0);
	assert_int_equal(m.dims, 4);
	assert_int_equal(m.stride[1], 0);
	assert_int_equal(m.stride[2], 64);
	for (long i = 0; i < N; i++)
		assert_int_equal(indexmap_at(&m, i), f[i]);
	/* rotate_half's x[..., 32:]: the second half of each 64-element row, from element 32;
	 * contiguous rows merge into one dimension of stride 64 */
	const long hs[4] = {32, 16, 8, 4}, hst[4] = {1, 64, 1024, 8192};
	view_offsets(f, hs, hst, 32);
	assert_int_equal(indexmap_fit(f, N, &m), 0);
	assert_int_equal(m.base, 32);
	assert_int_equal(m.dims, 2);
	assert_int_equal(m.size[0], 32);
	assert_int_equal(m.size[1], N / 32);
	assert_int_equal(m.stride[1], 64);
	/* dense: the identity, one dimension */
	for (long i = 0; i < N; i++)
		f[i] = i;
	assert_true(indexmap_identity(f, N));
	assert_int_equal(indexmap_fit(f, N, &m), 0);
	assert_int_equal(m.dims, 1);
	/* offsets no strided map gives: a swap of two elements, a reversal inside a run */
	f[5] = 6, f[6] = 5;
	assert_int_equal(indexmap_fit(f, N, &m), -1);
	for (long i = 0; i < N; i++)
		f[i] = (i / 64) * 64 + (i % 64 < 32 ? i % 64 : 95 - i % 64);
	assert_int_equal(indexmap_fit(f, N, &m), -1);
	/* more dimensions than a map holds: nine of size 2 with strides that never merge */
	long st9[9] = {1, 3, 7, 19, 41, 97, 211, 499, 1009};
	for (long i = 0; i < 512; i++) {
		f[i] = 0;
		for (int d = 0; d < 9; d++)
			f[i] += ((i >> d) & 1) * st9[d];
	}
	assert_int_equal(indexmap_fit(f, 512, &m), -1);
	assert_int_equal(indexmap_fit(f, 0, &m), -1);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_offset), cmocka_unit_test(test_indexmap),
	    cmocka_unit_test(test_rotary), cmocka_unit_test(test_broadcast_scalar_and_bad),
	    cmocka_unit_test(test_hex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
