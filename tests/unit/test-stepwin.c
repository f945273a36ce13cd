/*
 * test-stepwin.c - the step window (preload/stepwin.c) on synthetic programs: when it closes,
 * and the loops that must not close it.
 *
 * Each program is a list of ops (key, CPU time) fed through stepwin_note() in chunks of 2,000,
 * with a poll after each chunk, as the writer thread drains and polls; the test records the op
 * count at which the poll first says "close".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/stepwin.h"

struct prog {
	uint64_t seq, ts;
	char why[512];
	size_t closed_at; /* ops noted when the poll first said close; 0: never */
};

/* notes one op of the program, polling every 2,000 */
static void op(struct prog *p, uint32_t key, uint64_t dt_ns)
{
	p->ts += dt_ns;
	stepwin_note(p->seq++, key, p->ts);
	if (p->seq % 2000 == 0 && !p->closed_at && stepwin_poll(p->why, sizeof(p->why)))
		p->closed_at = p->seq;
}

static void start(struct prog *p, int steps, double min_s)
{
	memset(p, 0, sizeof(*p));
	p->ts = 1000000000ull;
	stepwin_init(steps, min_s);
}

/* A training step of a model of `layers` layers: a forward of `layers` repeats of a 12-op
 * layer, a backward of `layers` repeats of a 15-op layer, an optimizer of 6 ops; each op takes
 * dt_ns of CPU time. */
static void train_step(struct prog *p, int layers, uint64_t dt_ns)
{
	for (int l = 0; l < layers; l++)
		for (uint32_t k = 0; k < 12; k++)
			op(p, 100 + k, dt_ns);
	for (int l = 0; l < layers; l++)
		for (uint32_t k = 0; k < 15; k++)
			op(p, 200 + k, dt_ns);
	for (uint32_t k = 0; k < 6; k++)
		op(p, 300 + k, dt_ns);
}

/* set-up: a model's initialisation, one copy a parameter (one key), then a few fills */
static void setup_ops(struct prog *p, int params)
{
	for (int i = 0; i < params; i++)
		op(p, 0x80000001u, 2000);
	for (int i = 0; i < 50; i++)
		op(p, 7 + (uint32_t)(i % 3), 2000);
}

/* A 6-layer model, 10 ms a step (over 2 s in 200 steps): closes after 100 steps and 2 s, and
 * only then. */
static void test_closes_after_steps_and_time(void **state)
{
	(void)state;
	struct prog p;
	start(&p, 100, 2.0);
	setup_ops(&p, 3000);
	size_t step_ops = 6 * 12 + 6 * 15 + 6, pre = 3050;
	for (int s = 0; s < 400; s++)
		train_step(&p, 6, 10000000 / step_ops);
	assert_true(p.closed_at > 0);
	/* 2 s of steps: 200 of them, well past the 100 */
	assert_true(p.closed_at >= pre + 200 * step_ops);
	assert_true(p.closed_at <= pre + 300 * step_ops); /* searches come at every 25 % more */
	assert_non_null(strstr(p.why, "the step window closed after"));
	assert_non_null(strstr(p.why, "AICPROF_STEPS=100"));
	uint64_t ops, searches;
	stepwin_counts(&ops, &searches);
	assert_true(searches >= 1 && searches < 40);
}

/* Fast steps (1 ms): the time keeps the window open past 100 steps, until 2 s. */
static void test_time_bound(void **state)
{
	(void)state;
	struct prog p;
	start(&p, 100, 2.0);
	setup_ops(&p, 100);
	size_t step_ops = 6 * 12 + 6 * 15 + 6;
	for (int s = 0; s < 3000 && !p.closed_at; s++)
		train_step(&p, 6, 1000000 / step_ops);
	assert_true(p.closed_at > 0);
	assert_true(p.closed_at >= 150 + 2000 * step_ops); /* 2,000 steps of 1 ms */
}

/* An 80-layer model whose steps take 4 s: the forward's 80 layer repeats, 1.6 s, must not
 * close it (fewer than 100); it closes after 100 whole steps. */
static void test_deep_forward_is_not_the_step(void **state)
{
	(void)state;
	struct prog p;
	start(&p, 100, 2.0);
	setup_ops(&p, 500);
	size_t step_ops = 80 * 12 + 80 * 15 + 6;
	for (int s = 0; s < 130 && !p.closed_at; s++)
		train_step(&p, 80, 4000000000ull / step_ops);
	assert_true(p.closed_at > 0);
	assert_true(p.closed_at >= 550 + 100 * step_ops);
	assert_non_null(strstr(p.why, "steps of about 2166 ops"));
}

/* What never closes it: a loop of one kernel (x.add_(1), the mock's launch loop), a loop of
 * two, a run without a loop, and AICPROF_STEPS=0. */
static void test_loops_that_do_not_close(void **state)
{
	(void)state;
	struct prog p;
	start(&p, 100, 2.0);
	for (int i = 0; i < 200000; i++)
		op(&p, 5, 100000); /* 20 s */
	assert_int_equal(p.closed_at, 0);

	start(&p, 100, 2.0);
	for (int i = 0; i < 200000; i++)
		op(&p, 5 + (uint32_t)(i % 2), 100000);
	assert_int_equal(p.closed_at, 0);

	start(&p, 100, 2.0);
	uint32_t x = 12345;
	for (int i = 0; i < 200000; i++) {
		x = x * 1103515245u + 12345u;
		op(&p, (x >> 16) % 500, 100000);
	}
	assert_int_equal(p.closed_at, 0);

	start(&p, 0, 2.0);
	for (int s = 0; s < 400; s++)
		train_step(&p, 6, 100000);
	assert_int_equal(p.closed_at, 0);
	uint64_t ops, searches;
	stepwin_counts(&ops, &searches);
	assert_int_equal(searches, 0);
}

/* 120 steps over 2.4 s with no search among them (the writer's searches come at every 25 %
 * more ops), then the program goes on to something without a loop: at the next search the
 * loop is over, and a loop that is not running closes nothing. The same search right after the
 * loop closes the window. */
static void test_loop_that_ended(void **state)
{
	(void)state;
	char why[512];
	for (int ended = 0; ended < 2; ended++) {
		stepwin_init(100, 2.0);
		uint64_t seq = 0, ts = 1000000000ull;
		size_t step_ops = 6 * 12 + 6 * 15 + 6;
		for (int s = 0; s < 120; s++)
			for (size_t i = 0; i < step_ops; i++) {
				uint32_t k = i < 72    ? 100 + (uint32_t)(i % 12)
				             : i < 162 ? 200 + (uint32_t)((i - 72) % 15)
				                       : 300 + (uint32_t)(i - 162);
				ts += 20000000 / step_ops;
				stepwin_note(seq++, k, ts);
			}
		uint32_t x = 99;
		for (int i = 0; ended && i < 5000; i++) {
			x = x * 1103515245u + 12345u;
			stepwin_note(seq++, 1000 + (x >> 16) % 500, ts += 100000);
		}
		assert_int_equal(stepwin_poll(why, sizeof(why)), !ended);
	}
}

/* Past STEPWIN_MAX_OPS ops without closing, the window gives up: no more searches, and the
 * poll says no from then on. */
static void test_gives_up_past_its_bound(void **state)
{
	(void)state;
	struct prog p;
	start(&p, 100, 2.0);
	uint32_t x = 1;
	for (size_t i = 0; i < STEPWIN_MAX_OPS + 10000; i++) {
		x = x * 1103515245u + 12345u;
		op(&p, (x >> 16) % 500, 1000);
	}
	uint64_t ops, searches, ops2, searches2;
	stepwin_counts(&ops, &searches);
	assert_true(ops <= STEPWIN_MAX_OPS);
	for (int s = 0; s < 2000; s++)
		train_step(&p, 6, 10000000 / 168);
	stepwin_counts(&ops2, &searches2);
	assert_int_equal(searches2, searches);
	assert_int_equal(p.closed_at, 0);
}

/* Ops of two threads arrive out of order (one ring drained after the other): the poll orders
 * them by sequence number, so the loop is still found. */
static void test_out_of_order_notes(void **state)
{
	(void)state;
	struct prog p;
	start(&p, 100, 2.0);
	size_t step_ops = 168;
	uint64_t ts = 1000000000ull;
	uint32_t keys[168];
	size_t n = 0;
	for (uint32_t k = 0; k < 72; k++)
		keys[n++] = 100 + k % 12;
	for (uint32_t k = 0; k < 90; k++)
		keys[n++] = 200 + k % 15;
	for (uint32_t k = 0; k < 6; k++)
		keys[n++] = 300 + k;
	uint64_t seq = 0;
	int closed = 0;
	for (int s = 0; s < 400 && !closed; s++) {
		/* the even ops of the step, then the odd ones */
		for (int half = 0; half < 2; half++)
			for (size_t i = (size_t)half; i < step_ops; i += 2)
				stepwin_note(seq + i, keys[i], ts + i * 59523);
		seq += step_ops;
		ts += step_ops * 59523;
		if (s % 10 == 9)
			closed = stepwin_poll(p.why, sizeof(p.why));
	}
	assert_true(closed);
	assert_non_null(strstr(p.why, "steps of about 168 ops"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_closes_after_steps_and_time),
	    cmocka_unit_test(test_time_bound),
	    cmocka_unit_test(test_deep_forward_is_not_the_step),
	    cmocka_unit_test(test_loops_that_do_not_close),
	    cmocka_unit_test(test_loop_that_ended),
	    cmocka_unit_test(test_gives_up_past_its_bound),
	    cmocka_unit_test(test_out_of_order_notes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
