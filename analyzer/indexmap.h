/*
 * indexmap.h - an operand's element offsets over a fused group's flat index, as a strided map:
 * offset(i) = base + sum over d of ((i / (size[0] * ... * size[d-1])) % size[d]) * stride[d],
 * dimension 0 the fastest, strides in elements (any sign, 0 a broadcast). fusegroup.c computes
 * an input's offsets element by element from the offset calculators of the strided loops
 * between it and the group's outputs (offcalc.c); indexmap_fit() finds the map that gives them
 * and checks it against every one, so a map in a group description is never an assumption
 * about the layout: it reproduces the program's reads at each element, or there is none.
 */
#ifndef AICPROF_INDEXMAP_H
#define AICPROF_INDEXMAP_H

#define INDEXMAP_DIMS 8 /* at most this many dimensions (fusion/'s FMAP_DIMS) */

struct indexmap {
	int dims;
	long base;
	long size[INDEXMAP_DIMS], stride[INDEXMAP_DIMS];
};

/*
 * The strided map of at most INDEXMAP_DIMS dimensions whose offsets over i in [0, n) are
 * f[0..n) (n > 0), into *m: each dimension the longest run over which f steps by one stride
 * at the blocks' starts, cut to a divisor of the elements left, then every f[i] compared with
 * the map's. Returns 0, or -1 when no such map gives every offset (then *m is unset).
 */
int indexmap_fit(const long *f, long n, struct indexmap *m);

/* The map's offset at i (0 <= i < the product of its sizes). */
long indexmap_at(const struct indexmap *m, long i);

/* Whether f[0..n) is the identity (f[i] == i). */
int indexmap_identity(const long *f, long n);

#endif
