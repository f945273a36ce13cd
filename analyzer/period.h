/*
 * period.h - finds the repeating unit (the training step) of a launch sequence without NVTX.
 *
 * The input is one small integer key per op (kernel launch, copy, memset) in the order the
 * host issued them; equal keys mean "the same kernel name" (or the same kind of copy). The
 * finder knows nothing about the analyzer's graph: it is a pure algorithm on the key array,
 * O(n log n) time at most and O(n) memory (period.c says how).
 *
 * The result splits [0, n) into a prelude (setup and warm-up before the first step: weight
 * init, data creation, autotuning, compilation), the steps (contiguous, in order, each
 * [start, end), the first starting where the prelude ends and each ending where the next
 * starts) and an epilogue (what follows the last step). Steps may differ from one another a
 * little (another GEMM algorithm, state created lazily in step 0, an extra copy): they are
 * found by alignment with a tolerance, and each step's similarity to the steady step is kept.
 */
#ifndef AICPROF_PERIOD_H
#define AICPROF_PERIOD_H

#include <stddef.h>
#include <stdint.h>

/* Op indices [start, end) into the key array. */
struct period_range {
	size_t start, end;
};

struct period_result {
	/* The steps, in order; nsteps >= 1 when n > 0. Owned by the result. */
	struct period_range *steps;
	size_t nsteps;
	/* Per step, its similarity to the steady step in [0, 1] (1: the same ops in order). */
	double *similarity;
	struct period_range prelude, epilogue; /* [0, steps[0].start), [last end, n) */
	size_t period;      /* ops in the steady step (the template); n when none found */
	const char *method; /* "periodic", or "none" (one step over everything); static */
	double confidence;  /* in [0, 1]; see reason */
	char reason[256];   /* why: how found, how many steps alike, coverage */
	uint32_t anchor;    /* the key whose regular repeats gave the period (periodic only) */
	size_t steady;      /* steps whose similarity is at least 0.9 */
	double mean_similarity;
	double coverage; /* fraction of the n ops inside steps */
};

/*
 * Finds the steps of keys[0..n) (any uint32_t values; only equality matters; n < 2^32) and
 * fills *out
 * (overwriting it). When no key repeats at a regular spacing with steps that look alike, the
 * result is one step over [0, n), method "none", a low confidence. Never fails: the allocation
 * helpers die on exhaustion. Free what it allocates with period_result_free().
 */
void period_find(const uint32_t *keys, size_t n, struct period_result *out);

/* Frees the result's arrays and zeroes it; safe on a zeroed result. */
void period_result_free(struct period_result *r);

#endif
