/*
 * test-period.c - the step finder (analyzer/period.c) on synthetic launch sequences: an exact
 * period; a first step that differs (another GEMM, lazily created optimizer state); a setup
 * prelude and an epilogue; stray noise ops; a missing anchor; no period at all (one step, low
 * confidence); tiny inputs; and a million ops in well under a second. Each sequence is built
 * with the true step starts known, and the found ones are compared with them.
 * Then the real traces of samples/traces (under $AICPROF_TOP, else "."): each read with cJSON
 * into its launch sequence the way tests/tools/period-check.py does (launch, memcpy and memset
 * API records in seq order; CUDA-graph kernels, which have no API record, placed by GPU start
 * time), and the step count and prelude compared with golden values (8 steps each for the
 * real programs, the NVTX step count for our samples; the prelude's ops as found when this
 * test was written, within a few ops). period-check.py also checks the NVTX boundaries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <stdio.h>
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
	/* a large alphabet: keys repeat rarely, at random gaps (windows must not be alike by
	 * their histograms alone) */
	uint32_t *big = malloc(sizeof(*big) * 200000);
	for (size_t i = 0; i < 200000; i++)
		big[i] = lcg(&st) % 20000;
	period_find(big, 200000, &r);
	assert_string_equal(r.method, "none");
	period_result_free(&r);
	free(big);
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

/* A loop of one op (x = x * a, cut by a kill before any other op): each occurrence a step of
 * its own, the other ops inside the step before them, the prelude before the first; below 90 %
 * of the ops, no such loop (the whole run as one step, as before) */
static void test_one_op_loop(void **state)
{
	(void)state;
	uint32_t *k = malloc(sizeof(*k) * 400000);
	for (size_t i = 0; i < 400000; i++)
		k[i] = 9;
	k[0] = 1, k[1] = 2, k[2] = 3; /* setup */
	k[1000] = 4;                  /* a synchronize's copy inside the loop */
	struct period_result r;
	period_find(k, 400000, &r);
	assert_string_equal(r.method, "periodic");
	assert_int_equal(r.period, 1);
	assert_int_equal(r.nsteps, 400000 - 4);
	assert_int_equal(r.prelude.end, 3);
	assert_int_equal(r.steps[0].start, 3);
	assert_int_equal(r.steady, 400000 - 5); /* one step holds the copy */
	for (size_t i = 1; i < r.nsteps; i++)
		assert_int_equal(r.steps[i].start, r.steps[i - 1].end);
	assert_int_equal(r.steps[r.nsteps - 1].end, 400000);
	assert_int_equal(r.anchor, 9);
	period_result_free(&r);
	for (size_t i = 0; i < 1000; i++)
		k[i] = i % 5 ? 9 : (uint32_t)(100 + i); /* 80 % one key, the rest all distinct */
	period_find(k, 1000, &r);
	assert_string_equal(r.method, "none");
	assert_int_equal(r.nsteps, 1);
	period_result_free(&r);
	free(k);
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

/* a step's anchor kernel replaced by another op in 2 % of positions: windows of two steps */
static void test_replaced(void **state)
{
	struct seq *s = calloc(1, sizeof(*s));
	unsigned st = 3;
	for (int t = 0; t < 200; t++) {
		s->truth[s->nt++] = s->n;
		for (uint32_t i = 0; i < 30; i++)
			push(s, lcg(&st) % 50 == 0 ? 300 + lcg(&st) % 10 : i);
	}
	struct period_result r;
	period_find(s->k, s->n, &r);
	assert_string_equal(r.method, "periodic");
	starts_near(&r, s, 2);
	period_result_free(&r);
	free(s->k);
	free(s);
}

/*
 * 5000 random small sequences (periodic or not, with stray ops, alphabets of 1 to 12 keys):
 * the result always tiles [0, n) with prelude, non-empty contiguous steps and epilogue, and
 * the confidence is in [0, 1]. (This found a use-after-free of a reallocated buffer.)
 */
static void test_invariants(void **state)
{
	unsigned st = 5;
	for (int it = 0; it < 5000; it++) {
		size_t n = lcg(&st) % 600;
		unsigned alpha = 1 + lcg(&st) % 12, p = 1 + lcg(&st) % 40, noise = lcg(&st) % 5;
		uint32_t *k = malloc(sizeof(*k) * (n + 1));
		for (size_t i = 0; i < n; i++) {
			unsigned v = lcg(&st);
			k[i] = v % 100 < noise * 5 ? 500 + (v >> 8) % alpha
			       : it & 1            ? (uint32_t)(i % p)
			                           : (v >> 10) % alpha;
		}
		struct period_result r;
		period_find(k, n, &r);
		size_t cov = r.prelude.end - r.prelude.start + r.epilogue.end - r.epilogue.start;
		assert_int_equal(r.prelude.start, 0);
		for (size_t i = 0; i < r.nsteps; i++) {
			assert_true(r.steps[i].end > r.steps[i].start);
			assert_true(i ? r.steps[i].start == r.steps[i - 1].end
			              : r.steps[0].start == r.prelude.end);
			cov += r.steps[i].end - r.steps[i].start;
		}
		assert_int_equal(cov, n);
		assert_true(r.confidence >= 0 && r.confidence <= 1);
		period_result_free(&r);
		free(k);
	}
}

/* ---- real traces ---- */

struct op {
	double order;
	uint32_t key;
	long long start; /* GPU start, 0 when none */
	long long c;
};

static int cmp_op(const void *a, const void *b)
{
	const struct op *x = a, *y = b;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_c(const void *a, const void *b)
{
	const struct op *x = a, *y = b;
	return x->c < y->c ? -1 : x->c > y->c;
}

static int cmp_start(const void *a, const void *b)
{
	const struct op *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Keys of the trace's ops in launch order (kernel: its name id; copy: 1e6 + kind; memset:
 * 2e6); *n ops. NULL when the trace cannot be read. */
static uint32_t *trace_keys(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	struct op *api = NULL, *act = NULL;
	size_t na = 0, nact = 0, capa = 0, capb = 0, len = 0;
	char *line = NULL;
	while (getline(&line, &len, f) > 0) {
		cJSON *r = cJSON_Parse(line);
		if (!r)
			continue;
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "t");
		const char *ty = cJSON_IsString(t) ? t->valuestring : "";
		if (!strcmp(ty, "launch") || !strcmp(ty, "memcpy") || !strcmp(ty, "memset")) {
			if (na == capa)
				api = realloc(api, sizeof(*api) * (capa = capa ? 2 * capa : 4096));
			api[na++] =
			    (struct op){.order = num(r, "seq"),
			                .c = (long long)num(r, "c"),
			                .key = !strcmp(ty, "launch")   ? (uint32_t)num(r, "fn")
			                       : !strcmp(ty, "memset") ? 2000000u
			                                               : 1000000u};
		} else if (!strcmp(ty, "kernel") || !strcmp(ty, "copy") || !strcmp(ty, "set")) {
			const cJSON *kd = cJSON_GetObjectItemCaseSensitive(r, "kind");
			uint32_t key = !strcmp(ty, "kernel") ? (uint32_t)num(r, "name") : 2000000u;
			if (!strcmp(ty, "copy"))
				key = 1000000u + (cJSON_IsString(kd)
				                      ? (uint32_t)kd->valuestring[0] * 256u +
				                            (uint32_t)kd->valuestring[3]
				                      : 0u);
			if (nact == capb)
				act = realloc(act, sizeof(*act) * (capb = capb ? 2 * capb : 4096));
			act[nact++] = (struct op){.c = (long long)num(r, "c"),
			                          .key = key,
			                          .start = (long long)num(r, "start")};
		}
		cJSON_Delete(r);
	}
	free(line);
	fclose(f);
	/* join: a copy's key is its activity's kind; API ops get their GPU start */
	qsort(act, nact, sizeof(*act), cmp_c);
	for (size_t i = 0; i < na; i++) {
		struct op *m = bsearch(&api[i], act, nact, sizeof(*act), cmp_c);
		if (!m)
			continue;
		while (m > act && m[-1].c == m->c)
			m--;
		api[i].start = m->start;
		if (api[i].key == 1000000u)
			api[i].key = m->key;
	}
	qsort(api, na, sizeof(*api), cmp_c);
	/* activity without an API record (kernels of a CUDA graph): after the API op that
	 * started last before it on the GPU */
	struct op *bys = malloc(sizeof(*bys) * (na ? na : 1));
	size_t nb = 0;
	for (size_t i = 0; i < na; i++)
		if (api[i].start > 0)
			bys[nb++] = api[i];
	qsort(bys, nb, sizeof(*bys), cmp_start);
	struct op *ops = malloc(sizeof(*ops) * (na + nact + 1));
	size_t no = 0;
	for (size_t i = 0; i < na; i++)
		ops[no++] = api[i];
	long long lastc = -1;
	int k = 0;
	for (size_t i = 0; i < nact; i++) {
		if (bsearch(&act[i], api, na, sizeof(*api), cmp_c))
			continue;
		k = act[i].c == lastc ? k + 1 : 0;
		lastc = act[i].c;
		size_t lo = 0, hi = nb; /* first with start > this one */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (bys[mid].start <= act[i].start)
				lo = mid + 1;
			else
				hi = mid;
		}
		double seq = lo ? bys[lo - 1].order : -1;
		ops[no++] =
		    (struct op){.order = seq + 0.5 + k * 1e-4 + (double)act[i].start * 1e-22,
		                .key = act[i].key};
	}
	qsort(ops, no, sizeof(*ops), cmp_op);
	uint32_t *keys = malloc(sizeof(*keys) * (no ? no : 1));
	for (size_t i = 0; i < no; i++)
		keys[i] = ops[i].key;
	*n = no;
	free(api);
	free(act);
	free(bys);
	free(ops);
	return keys;
}

static void test_real_traces(void **state)
{
	static const struct {
		const char *name;
		size_t steps, prelude;
	} golden[] = {
	    {"gpt2_train", 8, 77},     {"llama_train", 8, 42},      {"resnet_train", 8, 149},
	    {"jax_train", 8, 2424},    {"cupy_loop", 8, 3},         {"mlp_train", 8, 8},
	    {"attention_train", 8, 5}, {"mlp_probe", 3, 8},         {"attention_probe", 3, 5},
	    {"chain", 6, 2},           {"ddp_train.rank0", 8, 304}, {"ddp_train.rank1", 8, 304},
	};
	const char *top = getenv("AICPROF_TOP") ? getenv("AICPROF_TOP") : ".";
	for (size_t i = 0; i < sizeof(golden) / sizeof(*golden); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/samples/traces/%s.aicp.jsonl", top,
		         golden[i].name);
		size_t n = 0;
		uint32_t *k = trace_keys(path, &n);
		if (!k)
			fail_msg("cannot read '%s'", path);
		struct period_result r;
		period_find(k, n, &r);
		size_t pre = r.prelude.end, tol = golden[i].prelude / 50 + 3;
		print_message("%-16s %5zu ops: %zu steps of %zu, prelude %zu, epilogue %zu, "
		              "confidence %.2f\n",
		              golden[i].name, n, r.nsteps, r.period, pre,
		              r.epilogue.end - r.epilogue.start, r.confidence);
		if (r.nsteps != golden[i].steps || strcmp(r.method, "periodic") ||
		    (pre > golden[i].prelude ? pre - golden[i].prelude : golden[i].prelude - pre) >
		        tol)
			fail_msg("%s: %zu steps, prelude %zu; expected %zu steps, prelude %zu",
			         golden[i].name, r.nsteps, pre, golden[i].steps, golden[i].prelude);
		assert_true(r.confidence > 0.5);
		period_result_free(&r);
		free(k);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exact),       cmocka_unit_test(test_prelude_first_step_epilogue),
	    cmocka_unit_test(test_noise),       cmocka_unit_test(test_no_period),
	    cmocka_unit_test(test_one_op_loop), cmocka_unit_test(test_tiny),
	    cmocka_unit_test(test_million),     cmocka_unit_test(test_replaced),
	    cmocka_unit_test(test_invariants),  cmocka_unit_test(test_real_traces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
