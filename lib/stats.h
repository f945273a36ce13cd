/*
 * stats.h - order statistics of an array of doubles: the median and other quantiles.
 */
#ifndef AICPROF_STATS_H
#define AICPROF_STATS_H

#include <stddef.h>

/* Sorts a[0..n) ascending (NaN-free input assumed). */
void stats_sort(double *a, size_t n);

/* The median of a[0..n), which it sorts: the middle value, or the mean of the two middle ones
 * for even n; 0 for n == 0. Never fails. */
double stats_median(double *a, size_t n);

/* The q-quantile (0 <= q <= 1, clamped) of a[0..n), which it sorts, by linear interpolation
 * between the closest ranks; 0 for n == 0. */
double stats_quantile(double *a, size_t n, double q);

#endif
