/*
 * offcalc.c - reads ATen's OffsetCalculator out of a strided loop's closure bytes (offcalc.h
 * says what it is and why). The scan tries every 4-byte-aligned offset: a count of 1 to 25
 * dimensions, then that many (divisor, magic, shift) triples where each divisor's magic and
 * shift are recomputed the way at::cuda::detail::IntDivider does and must match, and the
 * divisors' product must be the loop's element count (its N parameter). The entries past the
 * count are not looked at: PyTorch 2.11 leaves them unset (the H200's closures hold stack
 * garbage there). A run of bytes passes only by accident, and the caller checks the data
 * array beside the match too (parse.c).
 */
#include "analyzer/offcalc.h"

#include <stdio.h>
#include <string.h>

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Whether (d, m1, s) is IntDivider<uint32_t>(d)'s state: s the least with 2^s >= d, m1 the
 * magic number of the division. */
static int divider_ok(uint32_t d, uint32_t m1, uint32_t s)
{
	if (d < 1 || d > 0x7fffffffu)
		return 0;
	uint32_t want_s = 0;
	while (want_s < 32 && (1ull << want_s) < d)
		want_s++;
	uint64_t magic = ((1ull << 32) * ((1ull << want_s) - d)) / d + 1;
	return s == want_s && magic <= 0xffffffffu && m1 == (uint32_t)magic;
}

/* The calculator at byte offset o with nargs operands, into *oc; 0 or -1. */
static int try_at(const uint8_t *x, size_t n, size_t o, int nargs, long numel, struct offcalc *oc)
{
	size_t need = offcalc_bytes(nargs);
	if (o + need > n)
		return -1;
	uint32_t dims = u32_at(x + o);
	if (dims < 1 || dims > OFFCALC_DIMS)
		return -1;
	const uint8_t *dv = x + o + 4, *st = dv + 12 * OFFCALC_DIMS;
	unsigned long long prod = 1;
	for (uint32_t i = 0; i < dims; i++) {
		uint32_t d = u32_at(dv + 12 * i), m1 = u32_at(dv + 12 * i + 4),
		         s = u32_at(dv + 12 * i + 8);
		if (!divider_ok(d, m1, s) || (prod *= d) > 0xffffffffull)
			return -1;
	}
	if (prod != (unsigned long long)numel)
		return -1;
	/* a dimension of more than one element that no operand steps through would have been
	 * dropped by TensorIterator: not a calculator of this many operands */
	for (uint32_t i = 0; i < dims; i++) {
		int any = 0;
		for (int a = 0; a < nargs; a++)
			any |= u32_at(st + 4 * ((size_t)i * (size_t)nargs + (size_t)a)) != 0;
		if (!any && u32_at(dv + 12 * i) > 1)
			return -1;
	}
	memset(oc, 0, sizeof(*oc));
	oc->at = (int)o;
	oc->dims = (int)dims;
	oc->nargs = nargs;
	for (uint32_t i = 0; i < dims; i++) {
		oc->size[i] = u32_at(dv + 12 * i);
		for (int a = 0; a < nargs; a++)
			oc->stride[i][a] = u32_at(st + 4 * ((size_t)i * (size_t)nargs + (size_t)a));
	}
	return 0;
}

size_t offcalc_bytes(int nargs)
{
	return 4 + 12 * OFFCALC_DIMS + 4 * (size_t)OFFCALC_DIMS * (size_t)nargs;
}

int offcalc_decode(const uint8_t *x, size_t n, int nargs, long numel, struct offcalc *oc)
{
	if (!x || nargs < 1 || nargs > OFFCALC_ARGS || numel <= 0)
		return -1;
	for (size_t o = 0; o + 4 <= n; o += 4)
		if (!try_at(x, n, o, nargs, numel, oc))
			return 0;
	return -1;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

long offcalc_hex(const char *hex, uint8_t *out, size_t cap)
{
	size_t k = 0;
	for (const char *p = hex; p[0]; p += 2) {
		int hi = hexval(p[0]), lo = p[1] ? hexval(p[1]) : -1;
		if (hi < 0 || lo < 0 || k == cap)
			return -1;
		out[k++] = (uint8_t)(hi << 4 | lo);
	}
	return (long)k;
}

enum offcalc_layout offcalc_kind(const struct offcalc *oc, int a, uint32_t *elem, long *inner)
{
	*elem = 0;
	*inner = 0;
	if (a < 0 || a >= oc->nargs)
		return OC_OTHER;
	/* walk the used dimensions from the fastest: zeros (a row broadcast), a contiguous run
	 * (each stride the previous times its size), then zeros (a broadcast of the run) */
	uint64_t want = 0, count = 1, lead = 1;
	int zeros = 0, seen = 0;
	for (int i = 0; i < oc->dims; i++) {
		uint32_t sz = oc->size[i], s = oc->stride[i][a];
		if (sz <= 1)
			continue;
		if (s == 0) {
			if (seen)
				zeros = 1;
			else
				lead *= sz;
			continue;
		}
		if (zeros)
			return OC_OTHER; /* a stride after a broadcast dimension */
		if (!seen) {
			*elem = s;
			seen = 1;
			want = (uint64_t)s * sz;
		} else if (s != want) {
			return OC_OTHER;
		} else {
			want *= sz;
		}
		count *= sz;
	}
	if (!seen)
		return OC_SCALAR;
	if (*elem != 1 && *elem != 2 && *elem != 4 && *elem != 8 && *elem != 16)
		return OC_OTHER;
	if (lead > 1) {
		if (zeros)
			return OC_OTHER; /* broadcast on both sides */
		*inner = (long)lead;
		return OC_PER_ROW;
	}
	*inner = (long)count;
	return zeros ? OC_BROADCAST : OC_DENSE;
}

uint64_t offcalc_offset(const struct offcalc *oc, int a, uint64_t j)
{
	uint64_t o = 0;
	for (int d = 0; d < oc->dims; d++) {
		o += (j % oc->size[d]) * oc->stride[d][a];
		j /= oc->size[d];
	}
	return o;
}

void offcalc_describe(const struct offcalc *oc, int a, char *buf, size_t cap)
{
	size_t k = 0;
	if (!cap)
		return;
	buf[0] = 0;
	k += (size_t)snprintf(buf + k, cap - k, "sizes [");
	for (int i = 0; i < oc->dims && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%s%u", i ? ", " : "", oc->size[i]);
	if (k < cap)
		k += (size_t)snprintf(buf + k, cap - k, "] strides [");
	for (int i = 0; i < oc->dims && k < cap && a >= 0 && a < oc->nargs; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%s%u", i ? ", " : "", oc->stride[i][a]);
	if (k < cap)
		snprintf(buf + k, cap - k, "]");
}
