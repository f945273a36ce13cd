/*
 * test-period.c - the step finder (analyzer/period.c) on synthetic launch sequences: an exact
 * period; a first step that differs (another GEMM, lazily created optimizer state); a setup
 * prelude and an epilogue; stray noise ops; a missing anchor; no period at all (one step, low
 * confidence); tiny inputs; and a million ops in well under a second. Each sequence is built
 * with the true step starts known, and the found ones are compared with them.
 * The real traces' golden step counts are checked by tests/tools/period-check.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/period.h"

struct seq {
	uint32_t *k;
	size_t n, cap;
	size_t truth[20000];
	size_t nt;
};

static void push(struct seq *s, uint32_t key)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->k = realloc(s->k, sizeof(*s->k) * s->cap);
		assert_non_null(s->k);
	}
	s->k[s->n++] = key;
}

static unsigned lcg(unsigned *st)
{
	*st = *st * 1103515245u + 12345u;
	return *st >> 8;
}

/* One step of a small "training step": forward 0..19, backward 20..39, optimizer 40..44. */
static void step(struct seq *s, int first, uint32_t gemm)
{
	s->truth[s->nt++] = s->n;
	for (uint32_t i = 0; i < 45; i++) {
		if (first && i == 40) /* optimizer state created lazily: 12 memsets (key 90) */
			for (int j = 0; j < 12; j++)
				push(s, 90);
		push(s, i == 7 ? gemm : i);
	}
}

/* The found step starts are within tol of the true ones, one for one. */
static void starts_near(const struct period_result *r, const struct seq *s, size_t tol)
{
	assert_int_equal(r->nsteps, s->nt);
	for (size_t i = 0; i < s->nt; i++) {
		size_t a = r->steps[i].start, b = s->truth[i];
		if ((a > b ? a - b : b - a) > tol)
			fail_msg("step %zu starts at %zu, expected %zu", i, a, b);
	}
	for (size_t i = 1; i < r->nsteps; i++)
		assert_int_equal(r->steps[i].start, r->steps[i - 1].end);
	assert_int_equal(r->prelude.end, r->steps[0].start);
	assert_int_equal(r->epilogue.start, r->steps[r->nsteps - 1].end);
	assert_int_equal(r->epilogue.end, s->n);
}

static void test_exact(void **state)
{
	struct seq *s = calloc(1, sizeof(*s));
	for (int i = 0; i < 20; i++)
		step(s, 0, 7);
	struct period_result r;
	period_find(s->k, s->n, &r);
	assert_string_equal(r.method, "periodic");
	assert_int_equal(r.period, 45);
	starts_near(&r, s, 0);
	assert_int_equal(r.steady, 20);
	assert_true(r.confidence > 0.95);
	period_result_free(&r);
	free(s->k);
	free(s);
}

/* setup (weight init, data), a first step with another GEMM and lazy state, an epilogue */
static void test_prelude_first_step_epilogue(void **state)
{
	struct seq *s = calloc(1, sizeof(*s));
	const uint32_t setup[] = {100, 101, 101, 101, 102, 3, 103, 104, 2, 105, 106, 107};
	for (size_t i = 0; i < sizeof(setup) / sizeof(*setup); i++)
		push(s, setup[i]);
	step(s, 1, 77); /* step 0: GEMM algorithm 77 (autotuned), 12 lazy memsets */
	for (int i = 1; i < 8; i++)
		step(s, 0, 7);
	size_t end = s->n;
	push(s, 110); /* synchronize, loss.item() */
	push(s, 111);
	push(s, 112);
	struct period_result r;
	period_find(s->k, s->n, &r);
	assert_string_equal(r.method, "periodic");
	starts_near(&r, s, 1);
	assert_int_equal(r.prelude.end, 12);
	size_t e = r.steps[7].end;
	assert_true(e + 1 >= end && e <= end + 1);
	assert_int_equal(r.steady, 7);
	assert_true(r.similarity[0] < 0.9 && r.similarity[0] > 0.6);
	assert_true(r.confidence > 0.8);
	period_result_free(&r);
	free(s->k);
	free(s);
}

/* 2 % of positions get a stray op (an extra copy); one step loses its anchor kernel */
static void test_noise(void **state)
{
	struct seq *s = calloc(1, sizeof(*s));
	unsigned st = 7;
	for (int t = 0; t < 30; t++) {
		s->truth[s->nt++] = s->n;
		for (uint32_t i = 0; i < 45; i++) {
			if (lcg(&st) % 50 == 0)
				push(s, 200 + lcg(&st) % 20);
			if (t == 13 && i == 44)
				continue; /* the optimizer's last kernel is missing once */
			push(s, i);
		}
	}
	struct period_result r;
	period_find(s->k, s->n, &r);
	assert_string_equal(r.method, "periodic");
	starts_near(&r, s, 3);
	assert_true(r.mean_similarity > 0.9);
	assert_true(r.confidence > 0.7);
	period_result_free(&r);
	free(s->k);
	free(s);
}

/* random keys: no repeating unit; one step over everything, low confidence */
static void test_no_period(void **state)
{
	struct seq *s = calloc(1, sizeof(*s));
	unsigned st = 42;
	for (int i = 0; i < 5000; i++)
		push(s, lcg(&st) % 300);
	struct period_result r;
	period_find(s->k, s->n, &r);
	if (!strcmp(r.method, "none")) {
		assert_int_equal(r.nsteps, 1);
		assert_int_equal(r.steps[0].start, 0);
		assert_int_equal(r.steps[0].end, 5000);
	}
	assert_true(r.confidence < 0.3);
	period_result_free(&r);
	/* all distinct: nothing repeats at all */
	for (size_t i = 0; i < s->n; i++)
		s->k[i] = (uint32_t)i * 2654435761u;
	period_find(s->k, s->n, &r);
	assert_string_equal(r.method, "none");
	assert_int_equal(r.nsteps, 1);
	assert_true(r.confidence < 0.3);
	period_result_free(&r);
	free(s->k);
	free(s);
}

static void test_tiny(void **state)
{
	struct period_result r;
	period_find(NULL, 0, &r);
	assert_int_equal(r.nsteps, 0);
	assert_string_equal(r.method, "none");
	period_result_free(&r);
	const uint32_t k[] = {5, 5, 5};
	period_find(k, 3, &r);
	assert_int_equal(r.nsteps, 1);
	assert_int_equal(r.steps[0].end, 3);
	period_result_free(&r);
	const uint32_t two[] = {1, 2, 3, 4, 1, 2, 3, 4}; /* two steps: periodic, lower confidence */
	period_find(two, 8, &r);
	assert_string_equal(r.method, "periodic");
	assert_int_equal(r.nsteps, 2);
	assert_int_equal(r.steps[1].start, 4);
	assert_true(r.confidence < 0.7);
	period_result_free(&r);
}

/* 1M ops: period 120, 1 % stray ops; must take well under a second (ASan build: < 2 s) */
static void test_million(void **state)
{
	struct seq *s = calloc(1, sizeof(*s));
	unsigned st = 99;
	size_t nsteps = 0;
	while (s->n < 1000000) {
		for (uint32_t i = 0; i < 120; i++) {
			if (lcg(&st) % 100 == 0)
				push(s, 1000 + lcg(&st) % 40);
			push(s, i);
		}
		nsteps++;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	struct period_result r;
	period_find(s->k, s->n, &r);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double t = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
	print_message("1M ops: %zu steps (of %zu) in %.3f s\n", r.nsteps, nsteps, t);
	assert_true(t < 2.0);
	assert_string_equal(r.method, "periodic");
	assert_true(r.nsteps + 5 >= nsteps && r.nsteps <= nsteps);
	assert_true(r.period >= 119 && r.period <= 122);
	period_result_free(&r);
	free(s->k);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exact), cmocka_unit_test(test_prelude_first_step_epilogue),
	    cmocka_unit_test(test_noise), cmocka_unit_test(test_no_period),
	    cmocka_unit_test(test_tiny),  cmocka_unit_test(test_million),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
