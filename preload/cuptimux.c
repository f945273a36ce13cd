/*
 * cuptimux.c - one CUPTI, two tools: aicprof and another CUPTI user (torch.profiler's Kineto, a
 * user's own tool) in one process, each seeing what it would see alone.
 *
 * CUPTI takes one callback subscriber and one pair of activity buffer callbacks per process.
 * The shim is preloaded, so the entry points exported below come first in symbol lookup for
 * every library of the program; aicprof's own calls come through cuptimux_own_*(). The
 * multiplexer owns the one real subscription and the one real pair of buffer callbacks; each
 * side ("own" and "other") has a virtual subscriber, a set of enabled callbacks, buffer
 * callbacks and a set of enabled activity kinds.
 *
 * (1) Callbacks. The real subscription enables the union of both sides' (domain, cbid) sets;
 * the real callback calls each side whose set holds (domain, cbid), with its userdata, own
 * first. A side that disables a callback or a domain, or unsubscribes, changes only its set: the
 * real subscription follows the union, so the other side's disable never removes what aicprof
 * needs. A second subscriber on one side gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
 * as it would from CUPTI alone. cuptiGetCallbackState answers from the side's own set.
 *
 * (2) Activity. CUPTI fills buffers the multiplexer allocates. On completion every record is
 * copied into a buffer the side asked for from its own bufferRequested, for each side that has
 * the record's kind enabled, then the side's bufferCompleted gets that buffer; the CUPTI buffer
 * is freed. Handing one buffer to both is not possible: Kineto only accepts, in bufferCompleted,
 * the buffers its bufferRequested gave out (it looks them up and drops any other), and it would
 * see records of kinds only aicprof enabled ("Unexpected activity type"). A record's size is the
 * distance to the next record cuptiActivityGetNextRecord returns (the last one ends at the valid
 * size), so no struct size is hard-wired and a side reads its copies with CUPTI's own
 * cuptiActivityGetNextRecord. The real kinds are the union; a kind the other side disables stays
 * on while aicprof needs it. So that the other side gets only what CUPTI alone would have given
 * it, its records are gated by time: each kind keeps the intervals (in CUPTI's timestamp clock)
 * during which the side had it enabled, and a record passes when its start time lies in one
 * (records without a start time, such as external correlations, take the time of the next
 * record with one, which is as a rule the API call they belong to). So a profiler session gets
 * its kernels, even when its flush comes after its disable, and nothing between sessions piles
 * up in its buffers. Its bufferRequested may return no buffer (Kineto does when it stops
 * collecting): those records are counted as dropped for it, not elsewhere. The other side holds
 * one buffer of its own from its first enabled kind on, as it would once CUPTI recorded for it:
 * Kineto's stop flushes CUPTI only when it has a buffer out, and the multiplexer sees records
 * only when CUPTI completes its own buffer (the H200: no buffer out, no flush, 0 kernels).
 *
 * (3) Flush. cuptiActivityFlushAll flushes CUPTI; CUPTI calls the completion synchronously,
 * which completes the sides' buffers before it returns, as CUPTI alone does; then the buffers
 * the sides still hold go back to them (empty ones too: CUPTI's flush returns every buffer).
 *
 * (4) Timing. The other side may come first (Kineto subscribes when torch.profiler starts,
 * possibly before cuInit starts aicprof): the multiplexer loads CUPTI then and aicprof joins the
 * subscription later. Subscribe/unsubscribe and enable/disable cycles (several profiler
 * sessions in one process) only change that side's sets. The real subscription lives while one
 * side is subscribed. cuptiFinalize from the other side (Kineto's teardown) drops that side's
 * subscription, kinds and buffer callbacks and leaves CUPTI as aicprof needs it.
 * Kineto registers a timestamp callback (raw TSC ticks) at each session's start. It is kept
 * from CUPTI: a callback given to CUPTI while kinds are on made it stamp the records in flight
 * with 0 and the rest in ticks, for aicprof as well (the H200). CUPTI keeps its own clock, which
 * the time gates use; the other side's copies get their times moved into its clock by a line
 * through a pair of readings (CUPTI's clock, the callback) taken at registration and one taken
 * at each delivery, for the kinds whose layout this file knows (their_clock); it converts them
 * back with a line of its own, so what it shows is what it would show alone, give or take the
 * two lines' error (the readings bracket each other within well under a microsecond).
 *
 * (5) aicprof's trace closes (exit, size cap, an error): aicprof stays subscribed, so the
 * other side keeps working; the multiplexer keeps running as a pure relay. With
 * AICPROF_FINALIZE, at a recording window's close, cuptimux_own_finalize finalizes CUPTI when
 * the other side neither is subscribed nor has a kind on, and forgets the real subscription,
 * kinds and buffer callbacks, so that the other side's next call attaches CUPTI afresh.
 *
 * Fallback: with AICPROF_MUX=0, or a CUPTI whose API version this build does not know, the
 * entry points pass straight through (so they do, silently, when another tool injects into CUDA
 * through CUDA_INJECTION64_PATH and aicprof stepped aside) and the other tool's cuptiSubscribe
 * makes aicprof yield (cupti_yield: trace ended with reason "yielded"), with one "aicprof:" line.
 *
 * Locks: CUPTI holds an internal lock while it calls bufferRequested (Kineto's comments say so),
 * so the request callback takes none. state_lock orders changes of the sets and the real calls
 * that follow them; act_lock serialises deliveries (never held while calling CUPTI, except
 * cuptiActivityGetNextRecord on a buffer); kind_lock guards the kind intervals for a moment.
 */
#include "preload/cuptimux.h"
#include "preload/base.h"
#include "preload/cupti.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- the real entry points -------------------------------------------------------------- */

/* required: multiplexing needs them all */
#define MUX_REQUIRED(X)                                                                            \
	X(cuptiSubscribe, CUptiResult, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))     \
	X(cuptiUnsubscribe, CUptiResult, (CUpti_SubscriberHandle))                                 \
	X(cuptiEnableCallback, CUptiResult,                                                        \
	  (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId))              \
	X(cuptiEnableDomain, CUptiResult,                                                          \
	  (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain))                                \
	X(cuptiActivityRegisterCallbacks, CUptiResult,                                             \
	  (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                   \
	X(cuptiActivityEnable, CUptiResult, (CUpti_ActivityKind))                                  \
	X(cuptiActivityDisable, CUptiResult, (CUpti_ActivityKind))                                 \
	X(cuptiActivityFlushAll, CUptiResult, (uint32_t))                                          \
	X(cuptiActivityGetNextRecord, CUptiResult, (uint8_t *, size_t, CUpti_Activity **))         \
	X(cuptiGetTimestamp, CUptiResult, (uint64_t *))                                            \
	X(cuptiGetVersion, CUptiResult, (uint32_t *))

/* optional: passed through when present */
#define MUX_OPTIONAL(X)                                                                            \
	X(cuptiEnableAllDomains, CUptiResult, (uint32_t, CUpti_SubscriberHandle))                  \
	X(cuptiGetCallbackState, CUptiResult,                                                      \
	  (uint32_t *, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId))            \
	X(cuptiActivityEnableContext, CUptiResult, (CUcontext, CUpti_ActivityKind))                \
	X(cuptiActivityDisableContext, CUptiResult, (CUcontext, CUpti_ActivityKind))               \
	X(cuptiActivityFlush, CUptiResult, (CUcontext, uint32_t, uint32_t))                        \
	X(cuptiActivityFlushPeriod, CUptiResult, (uint32_t))                                       \
	X(cuptiActivityRegisterTimestampCallback, CUptiResult, (CUpti_TimestampCallbackFunc))      \
	X(cuptiFinalize, CUptiResult, (void))

#define DECL_REAL(name, ret, args) static ret(*real_##name) args;
MUX_REQUIRED(DECL_REAL)
MUX_OPTIONAL(DECL_REAL)

/* ---- state --------------------------------------------------------------------------------- */

#define MUX_DOMAINS 8
#define MUX_CBIDS   2048 /* callback ids per domain this build tracks (driver: 807 in 13.0) */
#define MUX_WORDS   (MUX_CBIDS / 64)
#define MUX_KINDS   128
#define MUX_IVS     8 /* enabled intervals remembered per kind */
#define MUX_BUF     (8u << 20)
#define TS_OPEN     UINT64_MAX

struct ival {
	uint64_t on, off; /* off = TS_OPEN while enabled */
};

struct kind_state {
	uint8_t on, n; /* enabled now; intervals in iv */
	struct ival iv[MUX_IVS];
};

struct side {
	/* callbacks */
	_Atomic(CUpti_CallbackFunc) cb;
	void *_Atomic ud;
	int subscribed;
	_Atomic uint64_t bits[MUX_DOMAINS][MUX_WORDS];
	/* activity */
	CUpti_BuffersCallbackRequestFunc req;
	CUpti_BuffersCallbackCompleteFunc done;
	struct kind_state kinds[MUX_KINDS];
	uint8_t *buf; /* the side's open buffer, from its req */
	size_t size, used, max_recs, nrecs;
	_Atomic uint64_t delivered, dropped, filtered, requested, completed;
	uint64_t by_kind[MUX_KINDS]; /* records delivered, per kind (act_lock) */
};

static struct side sides[2];
static int mux_state; /* 0 undecided, 1 multiplexing, 2 pass-through, -1 no CUPTI */
static CUpti_SubscriberHandle real_sub;
static int real_registered;
static uint64_t real_bits[MUX_DOMAINS][MUX_WORDS];
static uint8_t real_all[MUX_DOMAINS]; /* the real subscription has the whole domain on */
static uint8_t real_kind[MUX_KINDS];

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t state_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t act_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t kind_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The other tool's timestamp callback (never given to CUPTI), and the line from CUPTI's clock to
 * it: a pair of readings (CUPTI, theirs) taken at registration and the latest one taken at a
 * delivery; rate is their ticks per CUPTI nanosecond. ts_lock guards them.
 */
static CUpti_TimestampCallbackFunc ts_fn;
static uint64_t ts_c0, ts_f0;
static double ts_rate = 1.0;
static pthread_mutex_t ts_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t clock_unknown; /* the other side's records left in CUPTI's clock */

static const uint32_t domain_size[MUX_DOMAINS] = {
    [CUPTI_CB_DOMAIN_DRIVER_API] = CUPTI_DRIVER_TRACE_CBID_SIZE,
    [CUPTI_CB_DOMAIN_RUNTIME_API] = CUPTI_RUNTIME_TRACE_CBID_SIZE,
    [CUPTI_CB_DOMAIN_RESOURCE] = CUPTI_CBID_RESOURCE_SIZE,
    [CUPTI_CB_DOMAIN_SYNCHRONIZE] = CUPTI_CBID_SYNCHRONIZE_SIZE,
    [CUPTI_CB_DOMAIN_NVTX] = CUPTI_CBID_NVTX_SIZE,
    [CUPTI_CB_DOMAIN_STATE] = CUPTI_CBID_STATE_SIZE,
};

/* ---- loading ------------------------------------------------------------------------------- */

/* Whether another tool injects into CUDA (Nsight Systems): then aicprof stepped aside (shim.c),
 * and the entry points only pass through. */
static int other_injector(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	Dl_info di;
	if (!inj || !*inj || !dladdr((void *)other_injector, &di) || !di.dli_fname)
		return 0;
	char *a = realpath(inj, NULL), *b = realpath(di.dli_fname, NULL);
	int other = !a || !b || strcmp(a, b);
	free(a);
	free(b);
	return other;
}

/* Same major API version as the headers this was built with: the record layouts it reads. */
static int version_known(uint32_t v)
{
	return v / 10000 == CUPTI_API_VERSION / 10000;
}

int cuptimux_init(void *handle)
{
	pthread_mutex_lock(&init_lock);
	if (mux_state) {
		pthread_mutex_unlock(&init_lock);
		return mux_state == 1 ? 1 : mux_state == 2 ? 0 : -1;
	}
	void *h = handle ? handle : cupti_open();
	int missing = 0;
	if (!h) {
		mux_state = -1;
		goto out;
	}
#define LOAD_REQ(name, ret, args)                                                                  \
	if (!(real_##name = (ret(*) args)dlsym(h, #name)))                                         \
		missing = 1;
#define LOAD_OPT(name, ret, args) real_##name = (ret(*) args)dlsym(h, #name);
	MUX_REQUIRED(LOAD_REQ)
	MUX_OPTIONAL(LOAD_OPT)
	if (!real_cuptiSubscribe) {
		mux_state = -1;
		goto out;
	}
	uint32_t v = 0;
	if (!shim_cfg.mux || (!handle && other_injector())) {
		mux_state = 2;
	} else if (missing || !real_cuptiGetVersion || real_cuptiGetVersion(&v) != CUPTI_SUCCESS ||
	           !version_known(v)) {
		shim_say(
		    "CUPTI API version %u is not one this build knows (%u): aicprof cannot share "
		    "CUPTI, and yields it to any other tool that subscribes",
		    v, (unsigned)CUPTI_API_VERSION);
		mux_state = 2;
	} else {
		mux_state = 1;
	}
out:
	pthread_mutex_unlock(&init_lock);
	return mux_state == 1 ? 1 : mux_state == 2 ? 0 : -1;
}

int cuptimux_active(void)
{
	return mux_state == 1;
}

/* ---- callbacks ----------------------------------------------------------------------------- */

static int bit_get(_Atomic uint64_t *w, uint32_t cbid)
{
	return (atomic_load_explicit(&w[cbid / 64], memory_order_relaxed) >> (cbid % 64)) & 1;
}

static void CUPTIAPI mux_callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId cbid,
                                  const void *data)
{
	(void)ud;
	if ((unsigned)d >= MUX_DOMAINS || cbid >= MUX_CBIDS)
		return;
	for (int i = 0; i < 2; i++) {
		struct side *s = &sides[i];
		CUpti_CallbackFunc f = atomic_load_explicit(&s->cb, memory_order_acquire);
		if (f && bit_get(s->bits[d], cbid))
			f(atomic_load_explicit(&s->ud, memory_order_relaxed), d, cbid, data);
	}
}

/* Brings the real subscription's domain d to the union of the sides' sets. state_lock held. */
static void sync_domain(CUpti_CallbackDomain d)
{
	uint64_t want[MUX_WORDS];
	uint32_t size = domain_size[d];
	int full = size > 1;
	for (int w = 0; w < MUX_WORDS; w++)
		want[w] = atomic_load(&sides[0].bits[d][w]) | atomic_load(&sides[1].bits[d][w]);
	for (uint32_t c = 1; c < size && full; c++)
		full = (want[c / 64] >> (c % 64)) & 1;
	if (full) {
		if (!real_all[d] && real_cuptiEnableDomain(1, real_sub, d) == CUPTI_SUCCESS) {
			real_all[d] = 1;
			memcpy(real_bits[d], want, sizeof(want));
		}
		return;
	}
	if (real_all[d]) {
		real_cuptiEnableDomain(0, real_sub, d);
		real_all[d] = 0;
		memset(real_bits[d], 0, sizeof(real_bits[d]));
	}
	for (int w = 0; w < MUX_WORDS; w++) {
		uint64_t diff = want[w] ^ real_bits[d][w];
		while (diff) {
			int b = __builtin_ctzll(diff);
			diff &= diff - 1;
			uint32_t on = (want[w] >> b) & 1;
			CUpti_CallbackId c = (CUpti_CallbackId)(w * 64 + b);
			if (real_cuptiEnableCallback(on, real_sub, d, c) == CUPTI_SUCCESS || !on) {
				if (on)
					real_bits[d][w] |= 1ull << b;
				else
					real_bits[d][w] &= ~(1ull << b);
			}
		}
	}
}

static struct side *side_of(CUpti_SubscriberHandle h)
{
	for (int i = 0; i < 2; i++)
		if (h == (CUpti_SubscriberHandle)&sides[i] && sides[i].subscribed)
			return &sides[i];
	return NULL;
}

static CUptiResult mux_subscribe(int who, CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb,
                                 void *ud)
{
	if (!h || !cb)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&state_lock);
	struct side *s = &sides[who];
	CUptiResult r = CUPTI_SUCCESS;
	if (s->subscribed) {
		r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	} else if (!real_sub) {
		r = real_cuptiSubscribe(&real_sub, mux_callback, NULL);
		if (r != CUPTI_SUCCESS)
			real_sub = NULL;
		memset(real_bits, 0, sizeof(real_bits));
		memset(real_all, 0, sizeof(real_all));
	}
	if (r == CUPTI_SUCCESS) {
		for (int d = 0; d < MUX_DOMAINS; d++)
			for (int w = 0; w < MUX_WORDS; w++)
				atomic_store(&s->bits[d][w], 0);
		atomic_store(&s->ud, ud);
		atomic_store_explicit(&s->cb, cb, memory_order_release);
		s->subscribed = 1;
		*h = (CUpti_SubscriberHandle)s;
	}
	pthread_mutex_unlock(&state_lock);
	return r;
}

/* The side's subscription and callback set dropped (the real subscription unchanged). state_lock
 * held. */
static void side_unsubscribe(struct side *s)
{
	atomic_store(&s->cb, NULL);
	s->subscribed = 0;
	for (int d = 0; d < MUX_DOMAINS; d++)
		for (int w = 0; w < MUX_WORDS; w++)
			atomic_store(&s->bits[d][w], 0);
}

static CUptiResult mux_unsubscribe(CUpti_SubscriberHandle h)
{
	pthread_mutex_lock(&state_lock);
	struct side *s = side_of(h);
	if (!s) {
		pthread_mutex_unlock(&state_lock);
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
	side_unsubscribe(s);
	if (!sides[0].subscribed && !sides[1].subscribed) {
		real_cuptiUnsubscribe(real_sub);
		real_sub = NULL;
	} else {
		for (int d = 1; d < MUX_DOMAINS; d++)
			sync_domain((CUpti_CallbackDomain)d);
	}
	pthread_mutex_unlock(&state_lock);
	return CUPTI_SUCCESS;
}

static CUptiResult mux_enable_callback(uint32_t on, CUpti_SubscriberHandle h,
                                       CUpti_CallbackDomain d, CUpti_CallbackId cbid)
{
	pthread_mutex_lock(&state_lock);
	struct side *s = side_of(h);
	CUptiResult r = CUPTI_SUCCESS;
	if (!s || d <= CUPTI_CB_DOMAIN_INVALID || (unsigned)d >= MUX_DOMAINS || cbid >= MUX_CBIDS) {
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else {
		if (on)
			atomic_fetch_or(&s->bits[d][cbid / 64], 1ull << (cbid % 64));
		else
			atomic_fetch_and(&s->bits[d][cbid / 64], ~(1ull << (cbid % 64)));
		sync_domain(d);
		/* what CUPTI says of an id it does not know */
		if (on && !((real_bits[d][cbid / 64] >> (cbid % 64)) & 1)) {
			atomic_fetch_and(&s->bits[d][cbid / 64], ~(1ull << (cbid % 64)));
			r = CUPTI_ERROR_INVALID_PARAMETER;
		}
	}
	pthread_mutex_unlock(&state_lock);
	return r;
}

static CUptiResult mux_enable_domain(uint32_t on, CUpti_SubscriberHandle h, CUpti_CallbackDomain d)
{
	pthread_mutex_lock(&state_lock);
	struct side *s = side_of(h);
	CUptiResult r = CUPTI_SUCCESS;
	if (!s || d <= CUPTI_CB_DOMAIN_INVALID || (unsigned)d >= MUX_DOMAINS || !domain_size[d]) {
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else {
		for (uint32_t c = 1; c < domain_size[d] && c < MUX_CBIDS; c++) {
			if (on)
				atomic_fetch_or(&s->bits[d][c / 64], 1ull << (c % 64));
			else
				atomic_fetch_and(&s->bits[d][c / 64], ~(1ull << (c % 64)));
		}
		sync_domain(d);
	}
	pthread_mutex_unlock(&state_lock);
	return r;
}

/* ---- activity: kinds and clocks ----------------------------------------------------------- */

/* Now, in the clock CUPTI stamps records with (its own: the other tool's never reaches it). */
static uint64_t stamp_now(void)
{
	uint64_t t = 0;
	real_cuptiGetTimestamp(&t);
	return t;
}

/*
 * One reading of CUPTI's clock and of fn taken together: the best of five brackets (CUPTI's
 * clock read before and after fn), CUPTI's time taken at the bracket's middle.
 */
static void clock_pair(CUpti_TimestampCallbackFunc fn, uint64_t *c, uint64_t *f)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t a = stamp_now(), x = fn(), b = stamp_now();
		if (b >= a && b - a < best)
			best = b - a, *c = a + (b - a) / 2, *f = x;
	}
	if (best == UINT64_MAX)
		*c = stamp_now(), *f = fn();
}

/* Changes side who's kind k; the real kinds follow the union. state_lock held. */
static CUptiResult set_kind(int who, CUpti_ActivityKind k, int on)
{
	if ((unsigned)k >= MUX_KINDS || k == CUPTI_ACTIVITY_KIND_INVALID)
		return CUPTI_ERROR_INVALID_KIND;
	struct side *s = &sides[who];
	int other = sides[!who].kinds[k].on;
	CUptiResult r = CUPTI_SUCCESS;
	if (on && !real_kind[k]) {
		r = real_cuptiActivityEnable(k);
		if (r != CUPTI_SUCCESS)
			return r;
		real_kind[k] = 1;
	} else if (!on && real_kind[k] && !other && s->kinds[k].on) {
		r = real_cuptiActivityDisable(k);
		real_kind[k] = 0;
	}
	uint64_t now = stamp_now();
	pthread_mutex_lock(&kind_lock);
	struct kind_state *ks = &s->kinds[k];
	if (on && !ks->on) {
		if (ks->n == MUX_IVS) {
			memmove(ks->iv, ks->iv + 1, sizeof(ks->iv[0]) * (MUX_IVS - 1));
			ks->n--;
		}
		ks->iv[ks->n++] = (struct ival){now, TS_OPEN};
	} else if (!on && ks->on && ks->n) {
		ks->iv[ks->n - 1].off = now;
	}
	ks->on = (uint8_t)on;
	pthread_mutex_unlock(&kind_lock);
	return r;
}

static void CUPTIAPI mux_buf_request(uint8_t **buf, size_t *size, size_t *max);
static void CUPTIAPI mux_buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid);
static void side_complete(struct side *s, CUcontext ctx, uint32_t stream);
static void other_keep_buffer(CUcontext ctx, uint32_t stream);

static CUptiResult mux_register(int who, CUpti_BuffersCallbackRequestFunc req,
                                CUpti_BuffersCallbackCompleteFunc done)
{
	if (!req || !done)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&state_lock);
	CUptiResult r = CUPTI_SUCCESS;
	if (!real_registered) {
		r = real_cuptiActivityRegisterCallbacks(mux_buf_request, mux_buf_complete);
		real_registered = r == CUPTI_SUCCESS;
	}
	if (r == CUPTI_SUCCESS) {
		pthread_mutex_lock(&act_lock);
		/* a buffer from the callbacks before goes back to them */
		if (sides[who].req != req || sides[who].done != done)
			side_complete(&sides[who], NULL, 0);
		sides[who].req = req;
		sides[who].done = done;
		if (who == MUX_OTHER)
			other_keep_buffer(NULL, 0);
		pthread_mutex_unlock(&act_lock);
	}
	pthread_mutex_unlock(&state_lock);
	return r;
}

static CUptiResult mux_kind(int who, CUpti_ActivityKind k, int on)
{
	pthread_mutex_lock(&state_lock);
	CUptiResult r = set_kind(who, k, on);
	if (r == CUPTI_SUCCESS && on && who == MUX_OTHER) {
		pthread_mutex_lock(&act_lock);
		other_keep_buffer(NULL, 0);
		pthread_mutex_unlock(&act_lock);
	}
	pthread_mutex_unlock(&state_lock);
	return r;
}

/*
 * Side who flushes: CUPTI first (no lock held: CUPTI calls mux_buf_complete from inside, on this
 * thread), then the buffers the sides still hold go back to them, as CUPTI's flush hands back
 * every buffer it gave out; an empty one only to the side that flushed (not into a profiler that
 * did not ask, at aicprof's exit). The other side gets a fresh one while it has kinds on.
 */
static CUptiResult mux_flush(int who, uint32_t flag)
{
	CUptiResult r = real_cuptiActivityFlushAll(flag);
	pthread_mutex_lock(&act_lock);
	for (int i = 0; i < 2; i++)
		if (i == who || sides[i].used)
			side_complete(&sides[i], NULL, 0);
	other_keep_buffer(NULL, 0);
	pthread_mutex_unlock(&act_lock);
	return r;
}

/* ---- activity: delivery -------------------------------------------------------------------- */

static void CUPTIAPI mux_buf_request(uint8_t **buf, size_t *size, size_t *max)
{
	*buf = aligned_alloc(8, MUX_BUF);
	*size = *buf ? MUX_BUF : 0;
	*max = 0;
}

/* Start time of a record, or 0 when its kind has none this file knows. */
static uint64_t rec_start(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return ((const CUpti_ActivityKernel10 *)r)->start;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return ((const CUpti_ActivityMemcpy6 *)r)->start;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		return ((const CUpti_ActivityMemcpyPtoP4 *)r)->start;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return ((const CUpti_ActivityMemset4 *)r)->start;
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
		return ((const CUpti_ActivityAPI *)r)->start;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return ((const CUpti_ActivitySynchronization2 *)r)->start;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		return ((const CUpti_ActivityOverhead3 *)r)->start;
	case CUPTI_ACTIVITY_KIND_MARKER:
		return ((const CUpti_ActivityMarker2 *)r)->timestamp;
	default:
		return 0;
	}
}

/* CUPTI's clock value t in the other tool's clock, by the line of ts_*; 0 stays 0 (unknown). */
static uint64_t their_time(uint64_t t, uint64_t c0, uint64_t f0, double rate)
{
	if (t == CUPTI_TIMESTAMP_UNKNOWN)
		return t;
	double f = (double)f0 + ((double)t - (double)c0) * rate;
	return f > 1.0 ? (uint64_t)f : 1;
}

/*
 * The other tool's copy of a record, its times moved into the clock it registered (as CUPTI
 * would have stamped them). Kinds whose layout this file does not know keep CUPTI's times: the
 * "clock" part of aicprof_mux_report() counts them.
 */
static void their_clock(CUpti_Activity *r, uint64_t c0, uint64_t f0, double rate)
{
#define MOVE(type, ...)                                                                            \
	do {                                                                                       \
		type *x = (void *)r;                                                               \
		uint64_t *fs[] = {__VA_ARGS__};                                                    \
		for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)                            \
			*fs[i] = their_time(*fs[i], c0, f0, rate);                                 \
	} while (0)
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		MOVE(CUpti_ActivityKernel10, &x->start, &x->end, &x->completed, &x->queued,
		     &x->submitted);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		MOVE(CUpti_ActivityMemcpy6, &x->start, &x->end);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		MOVE(CUpti_ActivityMemcpyPtoP4, &x->start, &x->end);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		MOVE(CUpti_ActivityMemset4, &x->start, &x->end);
		break;
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
		MOVE(CUpti_ActivityAPI, &x->start, &x->end);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		MOVE(CUpti_ActivitySynchronization2, &x->start, &x->end);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		MOVE(CUpti_ActivityOverhead3, &x->start, &x->end);
		break;
	case CUPTI_ACTIVITY_KIND_MARKER:
		MOVE(CUpti_ActivityMarker2, &x->timestamp);
		break;
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
		MOVE(CUpti_ActivityCudaEvent2, &x->deviceTimestamp);
		break;
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
		break; /* no times */
	default:
		atomic_fetch_add(&clock_unknown, 1);
		break;
	}
#undef MOVE
}

/* Hands side s's open buffer to it. act_lock held. */
static void side_complete(struct side *s, CUcontext ctx, uint32_t stream)
{
	if (!s->buf)
		return;
	uint8_t *b = s->buf;
	size_t size = s->size, used = s->used;
	s->buf = NULL;
	s->used = s->nrecs = 0;
	atomic_fetch_add(&s->completed, 1);
	s->done(ctx, stream, b, size, used);
}

/* Gets side s an open buffer of at least len bytes from its bufferRequested; 0 when it gave
 * none (a buffer too small goes back to it empty). act_lock held. */
static int side_request(struct side *s, size_t len, CUcontext ctx, uint32_t stream)
{
	if (s->buf)
		return 1;
	if (!s->req || !s->done)
		return 0;
	uint8_t *b = NULL;
	size_t size = 0, max = 0;
	s->req(&b, &size, &max);
	atomic_fetch_add(&s->requested, 1);
	if (!b || size < len || size < sizeof(CUpti_Activity)) {
		if (b)
			s->done(ctx, stream, b, size, 0);
		return 0;
	}
	s->buf = b, s->size = size, s->used = 0, s->max_recs = max, s->nrecs = 0;
	return 1;
}

static int side_any_kind(const struct side *s)
{
	for (int k = 1; k < MUX_KINDS; k++)
		if (s->kinds[k].on)
			return 1;
	return 0;
}

/*
 * Keeps a buffer of the other side's open while it has a kind enabled, as CUPTI does once it
 * records: Kineto's stop flushes CUPTI only when it has a buffer out (it returns at once when
 * none is), so without one its session's records would never be asked for. act_lock held.
 */
static void other_keep_buffer(CUcontext ctx, uint32_t stream)
{
	struct side *s = &sides[MUX_OTHER];
	int on;
	pthread_mutex_lock(&kind_lock);
	on = side_any_kind(s);
	pthread_mutex_unlock(&kind_lock);
	if (on)
		side_request(s, 0, ctx, stream);
}

/* the other side's clock line for one delivery; act_lock held */
static CUpti_TimestampCallbackFunc dl_fn;
static uint64_t dl_c0, dl_f0;
static double dl_rate;

/* Copies one record of len bytes into side s's buffer. act_lock held. */
static void side_put(struct side *s, int who, const CUpti_Activity *r, size_t len, CUcontext ctx,
                     uint32_t stream)
{
	if (s->buf && (s->used + len > s->size || (s->max_recs && s->nrecs >= s->max_recs)))
		side_complete(s, ctx, stream);
	if (!side_request(s, len, ctx, stream)) {
		atomic_fetch_add(&s->dropped, 1);
		return;
	}
	CUpti_Activity *copy = (CUpti_Activity *)(s->buf + s->used);
	memcpy(copy, r, len);
	if (who == MUX_OTHER && dl_fn)
		their_clock(copy, dl_c0, dl_f0, dl_rate);
	s->used += len;
	s->nrecs++;
	s->by_kind[r->kind]++;
	atomic_fetch_add(&s->delivered, 1);
}

static int kind_passes(const struct kind_state *ks, int who, uint64_t t)
{
	if (who == MUX_OWN)
		return ks->on; /* aicprof keeps its kinds on for life */
	for (int i = 0; i < ks->n; i++)
		if (t >= ks->iv[i].on && t <= ks->iv[i].off)
			return 1;
	return 0;
}

static struct kind_state snap[2][MUX_KINDS]; /* act_lock held */

static void deliver(const CUpti_Activity *r, size_t len, uint64_t t, CUcontext ctx, uint32_t stream)
{
	if ((unsigned)r->kind >= MUX_KINDS)
		return;
	for (int who = 0; who < 2; who++) {
		const struct kind_state *ks = &snap[who][r->kind];
		if (kind_passes(ks, who, t))
			side_put(&sides[who], who, r, len, ctx, stream);
		else if (who == MUX_OTHER && ks->n)
			atomic_fetch_add(&sides[who].filtered, 1);
	}
}

/* records without a start time, waiting for the next one with one (act_lock held) */
struct untimed {
	const CUpti_Activity *r;
	size_t len;
};
static struct untimed *wait_q;
static size_t wait_n, wait_cap;

static void wait_flush(uint64_t t, CUcontext ctx, uint32_t stream)
{
	for (size_t i = 0; i < wait_n; i++)
		deliver(wait_q[i].r, wait_q[i].len, t, ctx, stream);
	wait_n = 0;
}

/* A record of the CUPTI buffer: timed ones go out now, after the untimed ones before them,
 * which take their time; an untimed one waits (delivered at once if it cannot). */
static void take_record(const CUpti_Activity *r, size_t len, CUcontext ctx, uint32_t stream)
{
	uint64_t t = rec_start(r);
	if (t) {
		wait_flush(t, ctx, stream);
		deliver(r, len, t, ctx, stream);
		return;
	}
	if (wait_n == wait_cap) {
		size_t cap = wait_cap ? 2 * wait_cap : 256;
		struct untimed *q = realloc(wait_q, cap * sizeof(*q));
		if (!q) {
			deliver(r, len, stamp_now(), ctx, stream);
			return;
		}
		wait_q = q, wait_cap = cap;
	}
	wait_q[wait_n++] = (struct untimed){r, len};
}

static void CUPTIAPI mux_buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid)
{
	(void)size;
	int outer = shim_enter();
	pthread_mutex_lock(&act_lock);
	pthread_mutex_lock(&kind_lock);
	memcpy(snap[0], sides[0].kinds, sizeof(snap[0]));
	memcpy(snap[1], sides[1].kinds, sizeof(snap[1]));
	pthread_mutex_unlock(&kind_lock);
	pthread_mutex_lock(&ts_lock);
	dl_fn = ts_fn;
	if (dl_fn) { /* the line through the registration's pair and one taken now */
		uint64_t c1 = 0, f1 = 0;
		clock_pair(dl_fn, &c1, &f1);
		if (c1 > ts_c0 + 1000000 && f1 > ts_f0)
			ts_rate = (double)(f1 - ts_f0) / (double)(c1 - ts_c0);
		dl_c0 = ts_c0, dl_f0 = ts_f0, dl_rate = ts_rate;
	}
	pthread_mutex_unlock(&ts_lock);
	CUpti_Activity *rec = NULL, *prev = NULL;
	while (buf && valid && real_cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
		if (prev)
			take_record(prev, (size_t)((uint8_t *)rec - (uint8_t *)prev), ctx, stream);
		prev = rec;
	}
	if (prev && (uint8_t *)prev < buf + valid)
		take_record(prev, (size_t)(buf + valid - (uint8_t *)prev), ctx, stream);
	wait_flush(stamp_now(), ctx, stream);
	for (int who = 0; who < 2; who++)
		if (sides[who].used) /* the other side's empty standing buffer stays out */
			side_complete(&sides[who], ctx, stream);
	other_keep_buffer(ctx, stream);
	pthread_mutex_unlock(&act_lock);
	free(buf);
	if (outer)
		shim_leave();
}

void cuptimux_counts(int who, uint64_t *delivered, uint64_t *dropped)
{
	struct side *s = &sides[who ? 1 : 0];
	if (delivered)
		*delivered = atomic_load(&s->delivered);
	if (dropped)
		*dropped = atomic_load(&s->dropped);
}

EXPORT const char *aicprof_mux_report(void)
{
	static char out[1024];
	size_t n = 0;
	if (mux_state != 1) {
		snprintf(out, sizeof(out), "mux off (state %d)", mux_state);
		return out;
	}
	pthread_mutex_lock(&act_lock);
	for (int who = 0; who < 2 && n < sizeof(out); who++) {
		struct side *s = &sides[who];
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s: delivered %llu (",
		                      who ? "other" : "own",
		                      (unsigned long long)atomic_load(&s->delivered));
		for (int k = 1; k < MUX_KINDS && n < sizeof(out); k++)
			if (s->by_kind[k])
				n += (size_t)snprintf(out + n, sizeof(out) - n, " k%d:%llu", k,
				                      (unsigned long long)s->by_kind[k]);
		if (n < sizeof(out))
			n += (size_t)snprintf(
			    out + n, sizeof(out) - n,
			    " ), filtered by time %llu, dropped %llu, buffers requested %llu "
			    "completed %llu; ",
			    (unsigned long long)atomic_load(&s->filtered),
			    (unsigned long long)atomic_load(&s->dropped),
			    (unsigned long long)atomic_load(&s->requested),
			    (unsigned long long)atomic_load(&s->completed));
	}
	pthread_mutex_unlock(&act_lock);
	pthread_mutex_lock(&ts_lock);
	if (n < sizeof(out))
		snprintf(out + n, sizeof(out) - n,
		         "clock: %s, %.4f ticks/ns, %llu records of kinds left in CUPTI's clock",
		         ts_fn ? "other tool's callback" : "CUPTI's", ts_fn ? ts_rate : 1.0,
		         (unsigned long long)atomic_load(&clock_unknown));
	pthread_mutex_unlock(&ts_lock);
	return out;
}

/* ---- aicprof's own entry points ------------------------------------------------------------ */

CUptiResult cuptimux_own_subscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud)
{
	return mux_subscribe(MUX_OWN, h, cb, ud);
}

CUptiResult cuptimux_own_unsubscribe(CUpti_SubscriberHandle h)
{
	return mux_unsubscribe(h);
}

CUptiResult cuptimux_own_enable_callback(uint32_t on, CUpti_SubscriberHandle h,
                                         CUpti_CallbackDomain d, CUpti_CallbackId cbid)
{
	return mux_enable_callback(on, h, d, cbid);
}

CUptiResult cuptimux_own_register_callbacks(CUpti_BuffersCallbackRequestFunc req,
                                            CUpti_BuffersCallbackCompleteFunc done)
{
	return mux_register(MUX_OWN, req, done);
}

CUptiResult cuptimux_own_activity_enable(CUpti_ActivityKind k)
{
	return mux_kind(MUX_OWN, k, 1);
}

CUptiResult cuptimux_own_activity_disable(CUpti_ActivityKind k)
{
	return mux_kind(MUX_OWN, k, 0);
}

CUptiResult cuptimux_own_flush_all(uint32_t flag)
{
	return mux_flush(MUX_OWN, flag);
}

int cuptimux_own_finalize(void)
{
	pthread_mutex_lock(&state_lock);
	struct side *s = &sides[MUX_OWN], *o = &sides[MUX_OTHER];
	if (!real_cuptiFinalize || o->subscribed || side_any_kind(o)) {
		pthread_mutex_unlock(&state_lock);
		return 0; /* the other tool uses CUPTI: it stays */
	}
	side_unsubscribe(s);                /* CUPTI's own subscription goes with the finalize */
	for (int k = 1; k < MUX_KINDS; k++) /* off already at the window's close, as a rule */
		if (s->kinds[k].on)
			set_kind(MUX_OWN, (CUpti_ActivityKind)k, 0);
	pthread_mutex_lock(&act_lock);
	side_complete(s, NULL, 0); /* its open buffer back to aicprof, which frees it */
	pthread_mutex_unlock(&act_lock);
	real_cuptiFinalize();
	/* CUPTI forgot the subscription, the kinds and the buffer callbacks: so does the
	 * multiplexer, and the other side's next call attaches CUPTI again */
	real_sub = NULL;
	real_registered = 0;
	memset(real_bits, 0, sizeof(real_bits));
	memset(real_all, 0, sizeof(real_all));
	memset(real_kind, 0, sizeof(real_kind));
	pthread_mutex_unlock(&state_lock);
	return 1;
}

/* ---- the entry points the other tool reaches ----------------------------------------------- */

/* Loads CUPTI on the other tool's first call; 1 when multiplexing, 0 pass-through, -1 none. */
static int ready(void)
{
	return mux_state ? (mux_state == 1 ? 1 : mux_state == 2 ? 0 : -1) : cuptimux_init(NULL);
}

#define PASS(name, ...) (real_##name ? real_##name(__VA_ARGS__) : CUPTI_ERROR_NOT_SUPPORTED)

/*
 * The other tool subscribes: it gets the virtual subscriber of the "other" side. Without
 * multiplexing, aicprof yields CUPTI to it (cupti_yield) and the call passes through.
 */
EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (m == 0) {
		cupti_yield();
		return real_cuptiSubscribe(h, cb, ud);
	}
	return mux_subscribe(MUX_OTHER, h, cb, ud);
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_unsubscribe(h) : real_cuptiUnsubscribe(h);
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle h,
                                       CUpti_CallbackDomain d, CUpti_CallbackId cbid)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_enable_callback(on, h, d, cbid) : real_cuptiEnableCallback(on, h, d, cbid);
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t on, CUpti_SubscriberHandle h, CUpti_CallbackDomain d)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_enable_domain(on, h, d) : real_cuptiEnableDomain(on, h, d);
}

EXPORT CUptiResult cuptiEnableAllDomains(uint32_t on, CUpti_SubscriberHandle h)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!m)
		return PASS(cuptiEnableAllDomains, on, h);
	CUptiResult r = CUPTI_SUCCESS;
	for (int d = 1; d < MUX_DOMAINS; d++)
		if (domain_size[d] && (r = mux_enable_domain(on, h, (CUpti_CallbackDomain)d)))
			break;
	return r;
}

EXPORT CUptiResult cuptiGetCallbackState(uint32_t *on, CUpti_SubscriberHandle h,
                                         CUpti_CallbackDomain d, CUpti_CallbackId cbid)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!m)
		return PASS(cuptiGetCallbackState, on, h, d, cbid);
	struct side *s = side_of(h);
	if (!on || !s || d <= CUPTI_CB_DOMAIN_INVALID || (unsigned)d >= MUX_DOMAINS ||
	    cbid >= MUX_CBIDS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*on = (uint32_t)bit_get(s->bits[d], cbid);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                  CUpti_BuffersCallbackCompleteFunc done)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_register(MUX_OTHER, req, done)
	         : real_cuptiActivityRegisterCallbacks(req, done);
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_kind(MUX_OTHER, k, 1) : real_cuptiActivityEnable(k);
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_kind(MUX_OTHER, k, 0) : real_cuptiActivityDisable(k);
}

/* Per context: the kind is on for the other side in every context (a superset, gated as any). */
EXPORT CUptiResult cuptiActivityEnableContext(CUcontext ctx, CUpti_ActivityKind k)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_kind(MUX_OTHER, k, 1) : PASS(cuptiActivityEnableContext, ctx, k);
}

EXPORT CUptiResult cuptiActivityDisableContext(CUcontext ctx, CUpti_ActivityKind k)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_kind(MUX_OTHER, k, 0) : PASS(cuptiActivityDisableContext, ctx, k);
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_flush(MUX_OTHER, flag) : real_cuptiActivityFlushAll(flag);
}

/* Deprecated in CUPTI: its context and stream are ignored there too. */
EXPORT CUptiResult cuptiActivityFlush(CUcontext ctx, uint32_t stream, uint32_t flag)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return m ? mux_flush(MUX_OTHER, flag) : PASS(cuptiActivityFlush, ctx, stream, flag);
}

/*
 * The other tool's clock for activity records. It never reaches CUPTI: CUPTI given a callback
 * while kinds are on stamps records in flight with 0 and mixes clocks (the H200: aicprof's kernels
 * at 0, then in raw TSC ticks, once Kineto registered its rdtsc), and cuptiGetTimestamp follows
 * it. CUPTI keeps its own clock; the other side's copies are moved into fn's by a line between
 * the two clocks (their_clock), fitted from a pair read now and one read at each delivery.
 */
EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!m)
		return PASS(cuptiActivityRegisterTimestampCallback, fn);
	if (!fn)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&ts_lock);
	if (fn != ts_fn) {
		uint64_t c0 = 0, f0 = 0, c1 = 0, f1 = 0;
		clock_pair(fn, &c0, &f0);
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		clock_pair(fn, &c1, &f1);
		ts_rate = c1 > c0 && f1 > f0 ? (double)(f1 - f0) / (double)(c1 - c0) : 1.0;
		ts_c0 = c0, ts_f0 = f0;
		ts_fn = fn;
	}
	pthread_mutex_unlock(&ts_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t ms)
{
	if (ready() < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	return PASS(cuptiActivityFlushPeriod, ms);
}

/*
 * The other tool detaches (Kineto's teardown calls this from an API exit callback). CUPTI stays
 * attached for aicprof: the other side loses its subscription, its kinds and its buffer
 * callbacks, as it would with CUPTI gone, and can subscribe again later.
 */
EXPORT CUptiResult cuptiFinalize(void)
{
	int m = ready();
	if (m < 0)
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!m)
		return PASS(cuptiFinalize);
	pthread_mutex_lock(&state_lock);
	struct side *s = &sides[MUX_OTHER];
	if (s->subscribed)
		mux_unsubscribe((CUpti_SubscriberHandle)s);
	for (int k = 1; k < MUX_KINDS; k++)
		if (s->kinds[k].on)
			set_kind(MUX_OTHER, (CUpti_ActivityKind)k, 0);
	pthread_mutex_lock(&act_lock);
	side_complete(s, NULL, 0);
	s->req = NULL;
	s->done = NULL;
	pthread_mutex_unlock(&act_lock);
	pthread_mutex_unlock(&state_lock);
	return CUPTI_SUCCESS;
}
