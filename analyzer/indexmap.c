/*
 * indexmap.c - fits a strided map to an operand's element offsets over a fused group's index
 * (indexmap.h says what the map is). The fit walks the dimensions from the fastest: with p the
 * elements of the dimensions found so far, the next one's stride is f[p] - f[0] and its size
 * the longest run f[k * p] = f[0] + k * stride, cut to the largest divisor of n / p; a run of
 * one (f[p] jumps back, as a broadcast of the inner dimensions over nothing cannot) takes the
 * stride anyway. The map is then evaluated at every index and compared with f: the fit is a
 * guess at the form, the comparison is what makes it exact.
 */
#include "analyzer/indexmap.h"

long indexmap_at(const struct indexmap *m, long i)
{
	long o = m->base;
	for (int d = 0; d < m->dims; d++) {
		o += (i % m->size[d]) * m->stride[d];
		i /= m->size[d];
	}
	return o;
}

int indexmap_identity(const long *f, long n)
{
	for (long i = 0; i < n; i++)
		if (f[i] != i)
			return 0;
	return 1;
}

int indexmap_fit(const long *f, long n, struct indexmap *m)
{
	if (!f || n <= 0)
		return -1;
	struct indexmap t = {0};
	t.base = f[0];
	long p = 1;
	while (p < n) {
		if (t.dims == INDEXMAP_DIMS)
			return -1;
		long left = n / p, stride = f[p] - f[0], run = 1;
		while (run < left && f[run * p] == f[0] + run * stride)
			run++;
		while (left % run) /* a divisor of what is left */
			run--;
		if (run < 2)
			run = 2;
		while (left % run && run < left)
			run++;
		t.size[t.dims] = run;
		t.stride[t.dims] = stride;
		t.dims++;
		p *= run;
	}
	if (p != n)
		return -1;
	for (long i = 0; i < n; i++)
		if (indexmap_at(&t, i) != f[i])
			return -1;
	*m = t;
	return 0;
}
