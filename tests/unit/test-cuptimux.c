/*
 * test-cuptimux.c - the CUPTI multiplexer against the mock CUPTI (build/mock/libcupti.so.13).
 *
 * The test plays both tools: aicprof through cuptimux_own_*(), the other tool (Kineto) through
 * the exported cuptiSubscribe etc. that this program links from core.a, as a preloaded shim
 * would be found first. The tests run in order and share the process's one (mock) CUPTI, as two
 * tools in one program do. Under the old behaviour (aicprof yields CUPTI to the second
 * subscriber) aicprof's callbacks and records stop after the other tool subscribes, which
 * test_callbacks and test_activity check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preload/base.h"
#include "preload/cuptimux.h"

static void *mock;
static int (*mock_fire)(CUpti_CallbackDomain, CUpti_CallbackId);
static int (*mock_cb_enabled)(CUpti_CallbackDomain, CUpti_CallbackId);
static int (*mock_subscribers)(void);
static int (*mock_kind_enabled)(CUpti_ActivityKind);
static int (*mock_finalized)(void);
static void (*mock_set_flush_every)(int);
static int (*mock_record)(CUpti_ActivityKind, uint32_t);
static CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);

#define NCORR 20000

/* what one tool received */
struct seen {
	int cb[8][2048];
	int kinds[64];
	int corr[64][NCORR]; /* times each correlation id arrived, per kind */
	int buffers;
	uint64_t last_start, first_start, min_start, max_start;
	int zero_starts;
	size_t buf_size;
};
static struct seen own, other;

static void CUPTIAPI cb_own(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
	assert_ptr_equal(ud, &own);
	own.cb[d][id]++;
}

static void CUPTIAPI cb_other(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
	assert_ptr_equal(ud, &other);
	other.cb[d][id]++;
}

static void take(struct seen *s, uint8_t *buf, size_t valid)
{
	CUpti_Activity *r = NULL;
	s->buffers++;
	while (valid && next_record(buf, valid, &r) == CUPTI_SUCCESS) {
		s->kinds[r->kind]++;
		uint32_t c = 0;
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			const CUpti_ActivityKernel10 *k = (const void *)r;
			c = k->correlationId;
			if (!s->first_start)
				s->first_start = k->start;
			s->last_start = k->start;
			s->zero_starts += !k->start;
			if (k->start && (!s->min_start || k->start < s->min_start))
				s->min_start = k->start;
			if (k->start > s->max_start)
				s->max_start = k->start;
		} else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
			c = ((const CUpti_ActivityMemcpy6 *)r)->correlationId;
		} else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
			c = ((const CUpti_ActivityAPI *)r)->correlationId;
		} else if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
			c = ((const CUpti_ActivityExternalCorrelation *)r)->correlationId;
		}
		if (c < NCORR)
			s->corr[r->kind][c]++;
	}
	free(buf);
}

static void CUPTIAPI req_own(uint8_t **b, size_t *size, size_t *max)
{
	*size = own.buf_size;
	*b = aligned_alloc(8, *size);
	*max = 0;
}
static void CUPTIAPI done_own(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
	take(&own, b, valid);
}
static void CUPTIAPI req_other(uint8_t **b, size_t *size, size_t *max)
{
	*size = other.buf_size;
	*b = aligned_alloc(8, *size);
	*max = 0;
}
static void CUPTIAPI done_other(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
	take(&other, b, valid);
}

static int setup(void **state)
{
	(void)state;
	const char *top = getenv("AICPROF_TOP");
	char path[4096];
	snprintf(path, sizeof(path), "%s/build/mock/libcupti.so.13", top ? top : ".");
	mock = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!mock) {
		fprintf(stderr, "cannot open the mock CUPTI '%s': %s\n", path, dlerror());
		return -1;
	}
#define SYM(v, name) *(void **)&v = dlsym(mock, name)
	SYM(mock_fire, "mock_fire");
	SYM(mock_cb_enabled, "mock_cb_enabled");
	SYM(mock_subscribers, "mock_subscribers");
	SYM(mock_kind_enabled, "mock_kind_enabled");
	SYM(mock_finalized, "mock_finalized");
	SYM(mock_set_flush_every, "mock_set_flush_every");
	SYM(mock_record, "mock_record");
	SYM(next_record, "cuptiActivityGetNextRecord");
	if (!mock_record || !next_record)
		return -1;
	own.buf_size = 1 << 20;
	other.buf_size = 4096; /* small: many of the other tool's buffers fill */
	shim_cfg.mux = 1;      /* sharing is opt-in (AICPROF_MUX=1) */
	return cuptimux_init(mock) == 1 ? 0 : -1;
}

static CUpti_SubscriberHandle own_h, other_h;

#define D CUPTI_CB_DOMAIN_DRIVER_API
#define R CUPTI_CB_DOMAIN_RUNTIME_API

/* Both get every callback they enabled and only those; the other's disables leave aicprof's. */
static void test_callbacks(void **state)
{
	(void)state;
	assert_int_equal(cuptimux_own_subscribe(&own_h, cb_own, &own), CUPTI_SUCCESS);
	assert_int_equal(cuptimux_own_enable_callback(1, own_h, D, 13), CUPTI_SUCCESS);
	assert_int_equal(cuptimux_own_enable_callback(1, own_h, D, 14), CUPTI_SUCCESS);
	assert_int_equal(cuptimux_own_enable_callback(1, own_h, CUPTI_CB_DOMAIN_NVTX, 1),
	                 CUPTI_SUCCESS);

	assert_int_equal(cuptiSubscribe(&other_h, cb_other, &other), CUPTI_SUCCESS);
	assert_ptr_not_equal(own_h, other_h);
	assert_int_equal(mock_subscribers(), 1); /* one real subscription */
	CUpti_SubscriberHandle third;
	assert_int_equal(cuptiSubscribe(&third, cb_other, &other),
	                 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	assert_int_equal(cuptiEnableDomain(1, other_h, R), CUPTI_SUCCESS);
	assert_int_equal(cuptiEnableCallback(1, other_h, D, 14), CUPTI_SUCCESS);
	assert_int_equal(cuptiEnableCallback(1, other_h, D, 20), CUPTI_SUCCESS);
	assert_int_equal(cuptiEnableCallback(1, other_h, D, 99999), CUPTI_ERROR_INVALID_PARAMETER);
	uint32_t on = 7;
	assert_int_equal(cuptiGetCallbackState(&on, other_h, D, 13), CUPTI_SUCCESS);
	assert_int_equal(on, 0);
	assert_int_equal(cuptiGetCallbackState(&on, other_h, D, 20), CUPTI_SUCCESS);
	assert_int_equal(on, 1);

	for (int i = 0; i < 10; i++) {
		mock_fire(D, 13), mock_fire(D, 14), mock_fire(D, 20);
		mock_fire(R, 5), mock_fire(CUPTI_CB_DOMAIN_NVTX, 1);
		mock_fire(CUPTI_CB_DOMAIN_RESOURCE, 1);
	}
	assert_int_equal(own.cb[D][13], 10);
	assert_int_equal(own.cb[D][14], 10);
	assert_int_equal(own.cb[D][20], 0);
	assert_int_equal(own.cb[R][5], 0);
	assert_int_equal(own.cb[CUPTI_CB_DOMAIN_NVTX][1], 10);
	assert_int_equal(other.cb[D][13], 0);
	assert_int_equal(other.cb[D][14], 10);
	assert_int_equal(other.cb[D][20], 10);
	assert_int_equal(other.cb[R][5], 10);
	assert_int_equal(other.cb[CUPTI_CB_DOMAIN_NVTX][1], 0);
	assert_false(mock_cb_enabled(CUPTI_CB_DOMAIN_RESOURCE, 1));

	/* the other tool disables what aicprof also needs, and a whole domain */
	assert_int_equal(cuptiEnableCallback(0, other_h, D, 14), CUPTI_SUCCESS);
	assert_int_equal(cuptiEnableDomain(0, other_h, R), CUPTI_SUCCESS);
	mock_fire(D, 14), mock_fire(R, 5);
	assert_int_equal(own.cb[D][14], 11);
	assert_int_equal(other.cb[D][14], 10);
	assert_int_equal(other.cb[R][5], 10);
	assert_true(mock_cb_enabled(D, 14));
	assert_false(mock_cb_enabled(R, 5)); /* nobody wants it: off in CUPTI too */

	/* the other tool unsubscribes: aicprof's stream goes on */
	assert_int_equal(cuptiUnsubscribe(other_h), CUPTI_SUCCESS);
	mock_fire(D, 13), mock_fire(D, 20);
	assert_int_equal(own.cb[D][13], 11);
	assert_int_equal(other.cb[D][20], 10);
	assert_false(mock_cb_enabled(D, 20));
	assert_int_equal(mock_subscribers(), 1);
	assert_int_equal(cuptiUnsubscribe(other_h), CUPTI_ERROR_INVALID_PARAMETER);
}

static uint32_t next_corr = 1;

/* Generates n records of kind k; returns how many CUPTI made. */
static int gen(CUpti_ActivityKind k, int n)
{
	int made = 0;
	for (int i = 0; i < n; i++)
		made += mock_record(k, next_corr++);
	return made;
}

static int count_corr(struct seen *s, int kind, int times, uint32_t lo, uint32_t hi)
{
	int n = 0;
	for (uint32_t c = lo; c < hi && c < NCORR; c++)
		n += s->corr[kind][c] == times;
	return n;
}

#define K  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
#define M  CUPTI_ACTIVITY_KIND_MEMCPY
#define RT CUPTI_ACTIVITY_KIND_RUNTIME
#define X  CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION

/* Every record reaches each side that enabled its kind, once; a flush delivers at once. */
static void test_activity(void **state)
{
	(void)state;
	memset(&own.kinds, 0, sizeof(own.kinds));
	assert_int_equal(cuptimux_own_register_callbacks(req_own, done_own), CUPTI_SUCCESS);
	assert_int_equal(cuptimux_own_activity_enable(K), CUPTI_SUCCESS);
	assert_int_equal(cuptimux_own_activity_enable(M), CUPTI_SUCCESS);
	assert_int_equal(cuptiSubscribe(&other_h, cb_other, &other), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityRegisterCallbacks(req_other, done_other), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnable(K), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnable(RT), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnable(X), CUPTI_SUCCESS);
	mock_set_flush_every(97); /* CUPTI completes buffers on its own as well */

	uint32_t lo = next_corr;
	int nk = 0, nm = 0, nr = 0, nx = 0;
	for (int i = 0; i < 1000; i++) {
		nx += gen(X, 1);
		nr += gen(RT, 1);
		nk += gen(K, 1);
		if (i % 3 == 0)
			nm += gen(M, 1);
	}
	uint32_t hi = next_corr;
	assert_int_equal(nk, 1000);
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	/* the other tool: kernels, runtime, external correlation; no copies */
	assert_int_equal(other.kinds[K], nk);
	assert_int_equal(other.kinds[RT], nr);
	assert_int_equal(other.kinds[X], nx);
	assert_int_equal(other.kinds[M], 0);
	assert_int_equal(count_corr(&other, K, 1, lo, hi), nk);
	assert_int_equal(count_corr(&other, RT, 1, lo, hi), nr);
	assert_true(other.buffers > 10); /* its 4 KiB buffers filled and were handed back */
	/* aicprof: kernels and copies only */
	assert_int_equal(own.kinds[K], nk);
	assert_int_equal(own.kinds[M], nm);
	assert_int_equal(own.kinds[RT], 0);
	assert_int_equal(own.kinds[X], 0);
	assert_int_equal(count_corr(&own, K, 1, lo, hi), nk);
	assert_int_equal(count_corr(&own, M, 1, lo, hi), nm);
	uint64_t dl, dr;
	cuptimux_counts(MUX_OTHER, &dl, &dr);
	assert_int_equal(dl, (uint64_t)(nk + nr + nx));
	assert_int_equal(dr, 0);
}

/* The other tool disables its kinds, then flushes: it gets what came before, nothing after. */
static void test_disable_then_flush(void **state)
{
	(void)state;
	mock_set_flush_every(0);
	int k0 = other.kinds[K], o0 = own.kinds[K];
	uint32_t lo = next_corr;
	int before = gen(K, 100);
	struct timespec ms = {0, 1000000};
	nanosleep(&ms, NULL);
	assert_int_equal(cuptiActivityDisable(K), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityDisable(RT), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityDisable(X), CUPTI_SUCCESS);
	assert_true(mock_kind_enabled(K)); /* aicprof still needs it */
	assert_false(mock_kind_enabled(RT));
	nanosleep(&ms, NULL);
	uint32_t mid = next_corr;
	int after = gen(K, 100);
	assert_int_equal(before + after, 200);
	assert_int_equal(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
	assert_int_equal(other.kinds[K] - k0, 100);
	assert_int_equal(count_corr(&other, K, 1, lo, mid), 100);
	assert_int_equal(count_corr(&other, K, 0, mid, next_corr), 100);
	assert_int_equal(own.kinds[K] - o0, 200);
}

/* Finalize from the other tool leaves aicprof's CUPTI; new sessions get exactly their records. */
static void test_finalize_and_sessions(void **state)
{
	(void)state;
	assert_int_equal(cuptiFinalize(), CUPTI_SUCCESS);
	assert_int_equal(mock_finalized(), 0); /* never reached CUPTI */
	assert_int_equal(mock_subscribers(), 1);
	int o0 = own.kinds[K];
	int c0 = own.cb[D][13];
	gen(K, 50);
	mock_fire(D, 13);
	assert_int_equal(cuptimux_own_flush_all(0), CUPTI_SUCCESS);
	assert_int_equal(own.kinds[K] - o0, 50);
	assert_int_equal(own.cb[D][13] - c0, 1);

	for (int session = 0; session < 3; session++) {
		int k0 = other.kinds[K], r0 = other.cb[R][7];
		o0 = own.kinds[K];
		assert_int_equal(cuptiSubscribe(&other_h, cb_other, &other), CUPTI_SUCCESS);
		assert_int_equal(cuptiEnableCallback(1, other_h, R, 7), CUPTI_SUCCESS);
		assert_int_equal(cuptiActivityRegisterCallbacks(req_other, done_other),
		                 CUPTI_SUCCESS);
		assert_int_equal(cuptiActivityEnable(K), CUPTI_SUCCESS);
		uint32_t lo = next_corr;
		gen(K, 70 + session);
		mock_fire(R, 7);
		assert_int_equal(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
		assert_int_equal(other.kinds[K] - k0, 70 + session);
		assert_int_equal(count_corr(&other, K, 1, lo, next_corr), 70 + session);
		assert_int_equal(other.cb[R][7] - r0, 1);
		assert_int_equal(cuptiActivityDisable(K), CUPTI_SUCCESS);
		assert_int_equal(cuptiUnsubscribe(other_h), CUPTI_SUCCESS);
		gen(K, 5); /* between sessions: aicprof only */
		assert_int_equal(cuptimux_own_flush_all(0), CUPTI_SUCCESS);
		assert_int_equal(other.kinds[K] - k0, 70 + session);
		assert_int_equal(own.kinds[K] - o0, 75 + session);
	}
}

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* the other tool's clock: 3 ticks a nanosecond, far from CUPTI's */
static uint64_t CUPTIAPI tsc(void)
{
	return 3 * mono() + 1000000000000000ull;
}

static uint64_t realtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A fake of Kineto as far as the multiplexer meets it (libkineto's CuptiActivityApi and
 * CuptiActivityProfiler, read for this): a timestamp callback of raw ticks registered at each
 * session's start, before its kinds; bufferCompleted takes only buffers its bufferRequested gave
 * out; its stop disables its kinds and flushes CUPTI only when it has a buffer out (with none it
 * returns what it holds, nothing); it maps its records' ticks to wall time with a line of its own
 * and keeps kernels whose start lies in its session.
 */
#define KIN_BUFS 64
static struct kineto {
	uint8_t *out[KIN_BUFS];
	int nout, unknown, kernels, outside, corr_outside;
	uint8_t *ready[KIN_BUFS];
	size_t valid[KIN_BUFS];
	int nready;
	uint64_t r0, f0; /* its clock pair at the session's start */
} kin;

static void CUPTIAPI kin_req(uint8_t **b, size_t *size, size_t *max)
{
	*b = NULL, *size = 0, *max = 0;
	if (kin.nout == KIN_BUFS)
		return;
	*size = 64 << 10;
	*b = aligned_alloc(8, *size);
	kin.out[kin.nout++] = *b;
}

static void CUPTIAPI kin_done(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
	for (int i = 0; i < kin.nout; i++) {
		if (kin.out[i] != b)
			continue;
		kin.out[i] = kin.out[--kin.nout];
		if (kin.nready < KIN_BUFS) {
			kin.ready[kin.nready] = b, kin.valid[kin.nready++] = valid;
			return;
		}
		break;
	}
	kin.unknown++;
	free(b);
}

static uint64_t CUPTIAPI tsc(void);
static uint64_t realtime(void);

static void kin_start(void)
{
	assert_int_equal(cuptiActivityRegisterTimestampCallback(tsc), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityRegisterCallbacks(kin_req, kin_done), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnable(K), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnable(RT), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnable(X), CUPTI_SUCCESS);
	if (kin.nout) /* clearActivities */
		assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	for (int i = 0; i < kin.nready; i++)
		free(kin.ready[i]);
	kin.nready = 0;
	kin.r0 = realtime(), kin.f0 = tsc();
	kin.kernels = kin.outside = kin.corr_outside = kin.unknown = 0;
}

/* Stops the session of kernels [lo, hi) begun at wall time t0; counts what it kept. */
static void kin_stop(uint32_t lo, uint32_t hi, uint64_t t0)
{
	uint64_t t1 = realtime();
	assert_int_equal(cuptiActivityDisable(K), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityDisable(RT), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityDisable(X), CUPTI_SUCCESS);
	if (kin.nout) /* activityBuffers: no buffer out, no flush */
		assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
		                 CUPTI_SUCCESS);
	uint64_t r1 = realtime(), f1 = tsc();
	double per_tick = (double)(r1 - kin.r0) / (double)(f1 - kin.f0);
	for (int i = 0; i < kin.nready; i++) {
		CUpti_Activity *r = NULL;
		while (kin.valid[i] &&
		       next_record(kin.ready[i], kin.valid[i], &r) == CUPTI_SUCCESS) {
			if (r->kind != K)
				continue;
			const CUpti_ActivityKernel10 *k = (const void *)r;
			double wall =
			    (double)kin.r0 + ((double)k->start - (double)kin.f0) * per_tick;
			if (wall < (double)t0 - 1e6 || wall > (double)t1 + 1e6) {
				kin.outside++;
				continue;
			}
			kin.kernels++;
			kin.corr_outside += k->correlationId < lo || k->correlationId >= hi;
		}
	}
}

/*
 * The H200 run: aicprof records from the start, torch.profiler runs two sessions, nobody
 * flushes but the profiler's stops and aicprof's end. The profiler gets each session's kernels
 * and only those, in its clock; aicprof gets every kernel, in CUPTI's own clock (the H200 gave
 * the profiler 0 kernels, and aicprof start times of 0 and of raw ticks).
 */
static void test_kineto_sessions(void **state)
{
	(void)state;
	mock_set_flush_every(0);
	own.min_start = own.max_start = 0, own.zero_starts = 0;
	int o0 = own.kinds[K];
	uint64_t begin = realtime();
	int mine = gen(K, 11);
	for (int session = 1; session <= 2; session++) {
		kin_start();
		uint64_t t0 = realtime();
		uint32_t lo = next_corr;
		int n = session == 1 ? 16 : 14, made = 0;
		for (int i = 0; i < n; i++) {
			gen(X, 1), gen(RT, 1);
			made += gen(K, 1);
		}
		uint32_t hi = next_corr;
		kin_stop(lo, hi, t0);
		char what[1200];
		snprintf(what, sizeof(what),
		         "session %d: profiler kernels %d of %d, outside its time %d, not its own "
		         "%d, unknown buffers %d; %s",
		         session, kin.kernels, made, kin.outside, kin.corr_outside, kin.unknown,
		         aicprof_mux_report());
		if (kin.kernels != made || kin.outside || kin.corr_outside || kin.unknown)
			fail_msg("%s", what);
		mine += made + gen(K, 9);
	}
	assert_int_equal(cuptimux_own_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	uint64_t end = realtime();
	assert_int_equal(own.kinds[K] - o0, mine);
	if (own.zero_starts || own.min_start < begin || own.max_start > end)
		fail_msg("aicprof's kernel starts: %d at 0, %llu..%llu ns after the test's start "
		         "(%llu ns long)",
		         own.zero_starts, (unsigned long long)(own.min_start - begin),
		         (unsigned long long)(own.max_start - begin),
		         (unsigned long long)(end - begin));
}

/* After the other tool's timestamp callback, its records carry its clock and aicprof's CUPTI's. */
static void test_timestamp_callback(void **state)
{
	(void)state;
	assert_int_equal(cuptiActivityRegisterTimestampCallback(tsc), CUPTI_SUCCESS);
	assert_int_equal(cuptiSubscribe(&other_h, cb_other, &other), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityRegisterCallbacks(req_other, done_other), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnable(K), CUPTI_SUCCESS);
	int k0 = other.kinds[K], o0 = own.kinds[K];
	struct timespec ms = {0, 20000000};
	nanosleep(&ms, NULL);
	uint64_t t0 = realtime(), f0 = tsc();
	gen(K, 10);
	uint64_t t1 = realtime();
	assert_int_equal(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
	assert_int_equal(other.kinds[K] - k0, 10);
	assert_int_equal(own.kinds[K] - o0, 10);
	/* the other tool: its own clock, untouched */
	assert_true(other.last_start >= f0 && other.last_start < f0 + 3000000000ull);
	/* aicprof: back in CUPTI's clock, between the times before and after, give or take 1 ms */
	assert_true(own.last_start + 1000000 >= t0 && own.last_start <= t1 + 1000000);
	assert_int_equal(cuptiActivityDisable(K), CUPTI_SUCCESS);
	assert_int_equal(cuptiUnsubscribe(other_h), CUPTI_SUCCESS);
}

/* aicprof leaves: the other tool keeps working on its own; then aicprof's own stream ends. */
static void test_own_leaves(void **state)
{
	(void)state;
	assert_int_equal(cuptiSubscribe(&other_h, cb_other, &other), CUPTI_SUCCESS);
	assert_int_equal(cuptiEnableCallback(1, other_h, D, 13), CUPTI_SUCCESS);
	assert_int_equal(cuptimux_own_unsubscribe(own_h), CUPTI_SUCCESS);
	assert_int_equal(cuptimux_own_activity_disable(K), CUPTI_SUCCESS);
	assert_int_equal(cuptimux_own_activity_disable(M), CUPTI_SUCCESS);
	int c0 = own.cb[D][13], d0 = other.cb[D][13];
	mock_fire(D, 13);
	assert_int_equal(own.cb[D][13], c0);
	assert_int_equal(other.cb[D][13], d0 + 1);
	assert_true(mock_cb_enabled(D, 13));
	assert_false(mock_kind_enabled(M));
	assert_int_equal(cuptiUnsubscribe(other_h), CUPTI_SUCCESS);
	assert_int_equal(mock_subscribers(), 0); /* nobody left: the real one goes too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_callbacks),          cmocka_unit_test(test_activity),
	    cmocka_unit_test(test_disable_then_flush), cmocka_unit_test(test_finalize_and_sessions),
	    cmocka_unit_test(test_kineto_sessions),    cmocka_unit_test(test_timestamp_callback),
	    cmocka_unit_test(test_own_leaves),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
