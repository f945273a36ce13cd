/*
 * stepwin.c - the step window (stepwin.h): closes the recording once the training loop has
 * run long enough.
 *
 * How it works: every op the writer writes (a launch, copy or memset) is noted as (sequence
 * number, key, CPU time) into a pending list under a lock of its own. The writer thread's poll
 * takes that list, orders it by sequence number (rings are drained one after another, so ops
 * of several threads come interleaved) and appends the keys and times to two arrays of at most
 * STEPWIN_MAX_OPS ops (6 MiB at most). At every 25 % more ops, from 4,096 on, it runs the
 * analyzer's step finder (periodfind.c: analyzer/period.c, the same code) on the whole
 * sequence. The window closes when the finder's answer holds all of these:
 *  - a periodic loop with confidence >= 0.8;
 *  - at least `steps` steps whose similarity to the steady step is >= 0.9;
 *  - a steady step of at least 4 distinct keys (a model's initialisation copies one tensor
 *    after another, a loop of one or two keys);
 *  - the loop's steps span at least `min_s` seconds of CPU time (XLA's autotuner repeats its
 *    timing runs identically, for milliseconds);
 *  - the last step ends within two periods of the newest op (the loop is still running).
 * A prefix of the run can show a loop that is not the step: a deep model's forward repeats its
 * layer. The step count (default 100) and the time are what keep such a loop from closing the
 * window: a forward of 100 layers that takes 2 s is the case left, and AICPROF_STEPS=0 turns
 * the window off.
 * Failure: an allocation that fails inside the finder unwinds (longjmp) to the poll, whose
 * window then gives up for good, as it does past STEPWIN_MAX_OPS; the program never notices.
 */
#include "preload/stepwin.h"
#include "analyzer/period.h"
#include "preload/base.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* periodfind.c: analyzer/period.c under these names */
void stepwin_period_find(const uint32_t *keys, size_t n, struct period_result *out);
void stepwin_period_result_free(struct period_result *r);

struct note {
	uint64_t seq, ts;
	uint32_t key;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct note *pending; /* under lock */
static size_t npending, cap_pending;
static _Atomic int state; /* 0 off (or gave up), 1 armed; written under lock, read before it
                           * too, so that a window that is off costs a note no lock */

/* the writer thread's own */
static int want_steps;
static double want_s;
static uint32_t *keys;
static uint64_t *times;
static size_t nops, next_search, searches;

void stepwin_init(int steps, double min_s)
{
	/* no thread notes or polls now; in a forked child the lock may have been held by a thread
	 * that is gone, so it is made anew (the parent's lists are the child's to free) */
	pthread_mutex_init(&lock, NULL);
	free(pending);
	pending = NULL;
	npending = cap_pending = 0;
	state = steps > 0;
	free(keys);
	free(times);
	keys = NULL;
	times = NULL;
	nops = searches = 0;
	next_search = 4096;
	want_steps = steps;
	want_s = min_s;
}

/* under lock: off for good, memory given back */
static void give_up_locked(void)
{
	state = 0;
	free(pending);
	pending = NULL;
	npending = cap_pending = 0;
}

void stepwin_note(uint64_t seq, uint32_t key, uint64_t ts)
{
	if (!atomic_load_explicit(&state, memory_order_relaxed))
		return;
	pthread_mutex_lock(&lock);
	if (state) {
		if (npending == cap_pending) {
			size_t c = cap_pending ? 2 * cap_pending : 4096;
			struct note *p =
			    c <= STEPWIN_MAX_OPS ? realloc(pending, c * sizeof(*p)) : NULL;
			if (!p) {
				give_up_locked();
				pthread_mutex_unlock(&lock);
				return;
			}
			pending = p;
			cap_pending = c;
		}
		pending[npending++] = (struct note){seq, ts, key};
	}
	pthread_mutex_unlock(&lock);
}

/* ---------- the finder's allocators: unwind to the poll instead of exiting ---------- */

static jmp_buf *unwind;

void *stepwin_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		longjmp(*unwind, 1);
	return p;
}

void *stepwin_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		longjmp(*unwind, 1);
	return p;
}

void *stepwin_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		longjmp(*unwind, 1);
	return q;
}

static int by_seq(const void *a, const void *b)
{
	uint64_t x = ((const struct note *)a)->seq, y = ((const struct note *)b)->seq;
	return x < y ? -1 : x > y;
}

static int by_key(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* distinct keys in keys[s, e) (e - s <= STEPWIN_MAX_OPS); -1 when no memory */
static long distinct(size_t s, size_t e)
{
	uint32_t *k = malloc((e - s + 1) * sizeof(*k));
	if (!k)
		return -1;
	memcpy(k, keys + s, (e - s) * sizeof(*k));
	qsort(k, e - s, sizeof(*k), by_key);
	long d = 0;
	for (size_t i = 0; i < e - s; i++)
		d += !i || k[i] != k[i - 1];
	free(k);
	return d;
}

/* Whether the finder's answer r over nops ops closes the window; why filled when it does. */
static int decide(const struct period_result *r, char *why, size_t n)
{
	if (strcmp(r->method, "periodic") || r->confidence < 0.8 || !r->nsteps)
		return 0;
	size_t good = 0, last_good = 0;
	for (size_t i = 0; i < r->nsteps; i++)
		if (r->similarity[i] >= 0.9)
			good++, last_good = i;
	const struct period_range *first = &r->steps[0], *last = &r->steps[r->nsteps - 1];
	if (good < (size_t)want_steps || nops - last->end > 2 * r->period)
		return 0;
	if (last->end <= first->start || times[last->end - 1] < times[first->start] ||
	    (double)(times[last->end - 1] - times[first->start]) < want_s * 1e9)
		return 0;
	long d = distinct(r->steps[last_good].start, r->steps[last_good].end);
	if (d < 4)
		return 0;
	snprintf(why, n,
	         "the step window closed after %zu steps of about %zu ops (%zu of them alike, %ld "
	         "kernels and copies of their own a step, %.1f s; %zu ops before them; confidence "
	         "%.2f): AICPROF_STEPS=%d",
	         r->nsteps, r->period, good, d,
	         (double)(times[last->end - 1] - times[first->start]) * 1e-9, first->start,
	         r->confidence, want_steps);
	return 1;
}

int stepwin_poll(char *why, size_t n)
{
	pthread_mutex_lock(&lock);
	if (!state) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	struct note *p = pending;
	size_t np = npending;
	pending = NULL;
	npending = cap_pending = 0;
	pthread_mutex_unlock(&lock);

	int fail = 0;
	if (np) {
		qsort(p, np, sizeof(*p), by_seq);
		if (!keys) {
			keys = malloc(STEPWIN_MAX_OPS * sizeof(*keys));
			times = malloc(STEPWIN_MAX_OPS * sizeof(*times));
		}
		if (!keys || !times || nops + np > STEPWIN_MAX_OPS)
			fail = 1;
		for (size_t i = 0; !fail && i < np; i++) {
			keys[nops] = p[i].key;
			times[nops++] = p[i].ts;
		}
	}
	free(p);
	int closed = 0;
	if (!fail && nops >= next_search) {
		next_search = nops + nops / 4;
		searches++;
		struct period_result r;
		memset(&r, 0, sizeof(r));
		jmp_buf jb;
		unwind = &jb;
		if (!setjmp(jb)) {
			stepwin_period_find(keys, nops, &r);
			closed = decide(&r, why, n);
			stepwin_period_result_free(&r);
		} else {
			fail =
			    1; /* the finder's memory (what it held is lost: rare, and bounded) */
		}
		unwind = NULL;
	}
	if (fail || closed) {
		pthread_mutex_lock(&lock);
		give_up_locked();
		pthread_mutex_unlock(&lock);
		free(keys);
		free(times);
		keys = NULL;
		times = NULL;
		if (fail)
			shim_debug(
			    "the step window gave up (%zu ops): the trace runs to its other limits",
			    nops);
	}
	return closed;
}

void stepwin_counts(uint64_t *ops, uint64_t *nsearch)
{
	*ops = nops;
	*nsearch = searches;
}
