/*
 * stats.c - order statistics (stats.h): qsort, then index; nothing clever, the arrays are per
 * step or per rank.
 */
#include "lib/stats.h"

#include <stdlib.h>

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void stats_sort(double *a, size_t n)
{
	if (n > 1)
		qsort(a, n, sizeof(double), dbl_cmp);
}

double stats_median(double *a, size_t n)
{
	if (!n)
		return 0;
	stats_sort(a, n);
	return n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
}

double stats_quantile(double *a, size_t n, double q)
{
	if (!n)
		return 0;
	stats_sort(a, n);
	if (!(q > 0))
		return a[0];
	if (q >= 1)
		return a[n - 1];
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;
	double frac = pos - (double)i;
	return i + 1 < n ? a[i] + (a[i + 1] - a[i]) * frac : a[i];
}
