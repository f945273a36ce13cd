/*
 * libcupti_mock.c - a tiny in-memory CUPTI for tests on machines without a GPU (built as
 * build/mock/libcupti.so.13, never into the shim or core.a).
 *
 * It models what the multiplexer relies on: one callback subscriber per process (a second gets
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), per-callback and per-domain enables, one pair
 * of buffer callbacks, enabled activity kinds, records written into buffers the registered
 * bufferRequested gives, completed when full, every mock_set_flush_every() records (as CUPTI's
 * own worker would) or on cuptiActivityFlushAll, synchronously, and a timestamp callback that
 * replaces the clock records are stamped with, the way the H200 showed it (CUPTI 13.0 under
 * Kineto's rdtsc callback): records of API calls take the callback's time when made; the GPU times
 * of kernels and copies are kept in the default clock and converted when their buffer completes,
 * by a line from the pair (default clock, callback) read at the last registration to a pair read
 * then, and a GPU time before the last registration comes out 0; cuptiGetTimestamp answers in
 * the callback's clock. Test hooks (mock_*) fire callbacks and generate records. Not
 * thread-safe: tests drive it from one thread.
 */
#include <cupti.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT  __attribute__((visibility("default")))
#define DOMAINS 8
#define CBIDS   2048
#define KINDS   128

static int subscribed;
static CUpti_CallbackFunc sub_cb;
static void *sub_ud;
static uint8_t cb_on[DOMAINS][CBIDS];
static CUpti_BuffersCallbackRequestFunc req;
static CUpti_BuffersCallbackCompleteFunc done;
static uint8_t kind_on[KINDS];
static uint8_t *buf;
static size_t buf_size, buf_used;
static int flush_every, since_flush;
static uint32_t corr;
static CUpti_TimestampCallbackFunc ts_fn;
static uint64_t reg_c, reg_f; /* default clock and callback at the last registration */
static int finalized;

static const uint32_t dom_size[DOMAINS] = {
    [CUPTI_CB_DOMAIN_DRIVER_API] = CUPTI_DRIVER_TRACE_CBID_SIZE,
    [CUPTI_CB_DOMAIN_RUNTIME_API] = CUPTI_RUNTIME_TRACE_CBID_SIZE,
    [CUPTI_CB_DOMAIN_RESOURCE] = CUPTI_CBID_RESOURCE_SIZE,
    [CUPTI_CB_DOMAIN_SYNCHRONIZE] = CUPTI_CBID_SYNCHRONIZE_SIZE,
    [CUPTI_CB_DOMAIN_NVTX] = CUPTI_CBID_NVTX_SIZE,
    [CUPTI_CB_DOMAIN_STATE] = CUPTI_CBID_STATE_SIZE,
};

static int valid_cb(CUpti_CallbackDomain d, CUpti_CallbackId id)
{
	return d > 0 && d < DOMAINS && id > 0 && id < dom_size[d];
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud)
{
	if (!s)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (subscribed)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	subscribed = 1, sub_cb = cb, sub_ud = ud;
	memset(cb_on, 0, sizeof(cb_on));
	*s = (CUpti_SubscriberHandle)&subscribed;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s)
{
	if (!subscribed || s != (CUpti_SubscriberHandle)&subscribed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	subscribed = 0, sub_cb = NULL;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle s,
                                       CUpti_CallbackDomain d, CUpti_CallbackId id)
{
	if (!subscribed || s != (CUpti_SubscriberHandle)&subscribed || !valid_cb(d, id))
		return CUPTI_ERROR_INVALID_PARAMETER;
	cb_on[d][id] = !!on;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d)
{
	if (!subscribed || s != (CUpti_SubscriberHandle)&subscribed || d <= 0 || d >= DOMAINS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (uint32_t i = 1; i < dom_size[d]; i++)
		cb_on[d][i] = !!on;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableAllDomains(uint32_t on, CUpti_SubscriberHandle s)
{
	for (int d = 1; d < DOMAINS; d++)
		if (dom_size[d] && cuptiEnableDomain(on, s, (CUpti_CallbackDomain)d))
			return CUPTI_ERROR_INVALID_PARAMETER;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackState(uint32_t *on, CUpti_SubscriberHandle s,
                                         CUpti_CallbackDomain d, CUpti_CallbackId id)
{
	if (!on || !subscribed || s != (CUpti_SubscriberHandle)&subscribed || !valid_cb(d, id))
		return CUPTI_ERROR_INVALID_PARAMETER;
	*on = cb_on[d][id];
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *v)
{
	*v = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = r ? "mock error" : "CUPTI_SUCCESS";
	return CUPTI_SUCCESS;
}

static uint64_t default_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t stamp(void)
{
	return ts_fn ? ts_fn() : default_clock();
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *t)
{
	*t = stamp();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	if (!fn)
		return CUPTI_ERROR_INVALID_PARAMETER;
	ts_fn = fn;
	reg_c = default_clock(), reg_f = fn();
	return CUPTI_SUCCESS;
}

/* A GPU time t (default clock) in the callback's clock, as the buffer completes. */
static uint64_t gpu_time(uint64_t t, double rate)
{
	if (!ts_fn || !t)
		return t;
	if (t < reg_c)
		return 0;
	return reg_f + (uint64_t)((double)(t - reg_c) * rate);
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                  CUpti_BuffersCallbackCompleteFunc c)
{
	if (!r || !c)
		return CUPTI_ERROR_INVALID_PARAMETER;
	req = r, done = c;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
	if (k <= 0 || k >= KINDS)
		return CUPTI_ERROR_INVALID_KIND;
	kind_on[k] = 1;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
	if (k <= 0 || k >= KINDS)
		return CUPTI_ERROR_INVALID_KIND;
	kind_on[k] = 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableContext(CUcontext c, CUpti_ActivityKind k)
{
	(void)c;
	return cuptiActivityEnable(k);
}

EXPORT CUptiResult cuptiActivityDisableContext(CUcontext c, CUpti_ActivityKind k)
{
	(void)c;
	return cuptiActivityDisable(k);
}

static size_t rec_size(uint32_t kind)
{
	size_t n;
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		n = sizeof(CUpti_ActivityKernel10);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		n = sizeof(CUpti_ActivityMemcpy6);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		n = sizeof(CUpti_ActivityAPI);
		break;
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
		n = sizeof(CUpti_ActivityExternalCorrelation);
		break;
	default:
		return 0;
	}
	return (n + 7) & ~(size_t)7;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *b, size_t valid, CUpti_Activity **rec);

static void complete(void)
{
	if (!buf)
		return;
	uint8_t *b = buf;
	size_t size = buf_size, used = buf_used;
	double rate = 1.0;
	if (ts_fn) {
		uint64_t c = default_clock(), f = ts_fn();
		if (c > reg_c && f > reg_f)
			rate = (double)(f - reg_f) / (double)(c - reg_c);
	}
	CUpti_Activity *r = NULL;
	while (ts_fn && cuptiActivityGetNextRecord(b, used, &r) == CUPTI_SUCCESS) {
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
		    r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
			CUpti_ActivityKernel10 *k = (void *)r;
			k->start = gpu_time(k->start, rate), k->end = gpu_time(k->end, rate);
		} else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
			CUpti_ActivityMemcpy6 *m = (void *)r;
			m->start = gpu_time(m->start, rate), m->end = gpu_time(m->end, rate);
		}
	}
	buf = NULL;
	buf_used = 0;
	since_flush = 0;
	done(NULL, 0, b, size, used);
}

/* Room for one record of len bytes, or NULL (no callbacks, no buffer: CUPTI drops it). */
static void *reserve(size_t len)
{
	if (!req || !done)
		return NULL;
	if (buf && buf_used + len > buf_size)
		complete();
	if (!buf) {
		size_t max = 0;
		req(&buf, &buf_size, &max);
		buf_used = 0;
		if (!buf || buf_size < len) {
			buf = NULL;
			return NULL;
		}
	}
	void *p = buf + buf_used;
	memset(p, 0, len);
	buf_used += len;
	return p;
}

static void after_record(void)
{
	if (flush_every && ++since_flush >= flush_every)
		complete();
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	if (!req || !done)
		return CUPTI_ERROR_INVALID_OPERATION;
	complete();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlush(CUcontext c, uint32_t s, uint32_t flag)
{
	(void)c, (void)s;
	return cuptiActivityFlushAll(flag);
}

EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t ms)
{
	(void)ms;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *b, size_t valid, CUpti_Activity **rec)
{
	uint8_t *p = *rec ? (uint8_t *)*rec + rec_size((*rec)->kind) : b;
	if (p + sizeof(CUpti_Activity) > b + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	size_t n = rec_size(((CUpti_Activity *)p)->kind);
	if (!n || p + n > b + valid)
		return CUPTI_ERROR_INVALID_KIND;
	*rec = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n)
{
	(void)c, (void)s;
	*n = 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiFinalize(void)
{
	finalized++;
	subscribed = 0, sub_cb = NULL;
	req = NULL, done = NULL;
	memset(kind_on, 0, sizeof(kind_on));
	return CUPTI_SUCCESS;
}

/* ---- test hooks ---------------------------------------------------------------------------- */

/* Calls the subscriber for (d, id) when it enabled it; returns 1 when called. */
EXPORT int mock_fire(CUpti_CallbackDomain d, CUpti_CallbackId id)
{
	if (!subscribed || !valid_cb(d, id) || !cb_on[d][id] || !sub_cb)
		return 0;
	CUpti_CallbackData data;
	memset(&data, 0, sizeof(data));
	data.callbackSite = CUPTI_API_EXIT;
	data.correlationId = ++corr;
	data.functionName = "mock";
	sub_cb(sub_ud, d, id, &data);
	return 1;
}

/* Like mock_fire, at the API's entry (exit 0) or exit (exit 1), with the call's parameters and
 * return value as CUPTI hands them over; an entry starts a new correlation id, its exit
 * shares it. Returns the correlation id, or 0 when the subscriber did not enable (d, id). */
EXPORT uint32_t mock_fire_call(CUpti_CallbackDomain d, CUpti_CallbackId id, int exit,
                               const void *params, const void *ret)
{
	if (!subscribed || !valid_cb(d, id) || !cb_on[d][id] || !sub_cb)
		return 0;
	CUpti_CallbackData data;
	memset(&data, 0, sizeof(data));
	data.callbackSite = exit ? CUPTI_API_EXIT : CUPTI_API_ENTER;
	data.correlationId = exit ? corr : ++corr;
	data.functionName = "mock";
	data.functionParams = params;
	data.functionReturnValue = (void *)ret;
	sub_cb(sub_ud, d, id, &data);
	return data.correlationId;
}

/* Whether the real (mock) subscription has (d, id) on; the number of subscribers. */
EXPORT int mock_cb_enabled(CUpti_CallbackDomain d, CUpti_CallbackId id)
{
	return subscribed && valid_cb(d, id) && cb_on[d][id];
}
EXPORT int mock_subscribers(void)
{
	return subscribed;
}
EXPORT int mock_kind_enabled(CUpti_ActivityKind k)
{
	return k > 0 && k < KINDS && kind_on[k];
}
EXPORT int mock_finalized(void)
{
	return finalized;
}

/* Completes the buffer every n records (0: only when full or flushed). */
EXPORT void mock_set_flush_every(int n)
{
	flush_every = n;
}

/* One activity record of kind k, when k is enabled, with correlation id c; returns 1 if made. */
EXPORT int mock_record(CUpti_ActivityKind k, uint32_t c)
{
	if (k <= 0 || k >= KINDS || !kind_on[k])
		return 0;
	size_t n = rec_size(k);
	void *p = n ? reserve(n) : NULL;
	if (!p)
		return 0;
	uint64_t t = stamp(), g = default_clock(); /* a CPU time, a GPU time */
	switch (k) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		CUpti_ActivityKernel10 *r = p;
		r->kind = k, r->correlationId = c, r->start = g, r->end = g + 1000;
		r->name = "mock_kernel";
		r->gridX = r->gridY = r->gridZ = r->blockX = r->blockY = r->blockZ = 1;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		CUpti_ActivityMemcpy6 *r = p;
		r->kind = k, r->correlationId = c, r->start = g, r->end = g + 500, r->bytes = 64;
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		CUpti_ActivityAPI *r = p;
		r->kind = k, r->correlationId = c, r->start = t, r->end = t + 100;
		break;
	}
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
		CUpti_ActivityExternalCorrelation *r = p;
		r->kind = k, r->correlationId = c, r->externalId = c;
		break;
	}
	default:
		break;
	}
	after_record();
	return 1;
}
