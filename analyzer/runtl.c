/*
 * runtl.c - the whole run's timeline for the Perfetto export (runtl.h).
 *
 * A consumer of the analyzer's one pass over the trace (analysis_run() in summary.c): it keeps,
 * in file order (written out in time order), one small struct per GPU activity record (kernel,
 * copy, set: name, stream, start, end), per host API call (launch, memcpy, memset: an instant at
 * its `ts`, a blocking copy or memset stretched to its activity's end, joined by correlation id;
 * sync: `ts` + `dur`) and per NVTX range (push/pop by thread, range_start/range_end by id, closed
 * ones only). Times are read exactly from the line's text (a double loses nanoseconds at 1.8e18).
 * Host times are moved onto the GPU clock by the header's clock_sync, so that both lie on the clock
 * of summary.timeline's t0_ns. At most RUNTL_CAP events are kept; the rest are only counted,
 * by kind, and runtl_json() says how many were dropped. Names are interned: kernels by their
 * short name (semantics.h), copies by direction, host calls by API, ranges by text.
 */
#include "analyzer/runtl.h"
#include "analyzer/semantics.h"
#include "lib/hmap.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>

enum { C_GPU, C_HOST, C_NVTX, C_N };
static const char *const cat_name[C_N] = {"gpu", "host", "nvtx"};

struct rev {
	int64_t t, d;        /* start and duration, ns (host events on the GPU clock) */
	int cat, a, b, name; /* gpu: a kind, b stream; host: a tid; nvtx: a tid, b depth */
};

struct ropen {
	long tid, id; /* id: range_start's id, -1 for a push */
	int64_t t;
	int name, depth;
};

struct runtl {
	struct rev *ev;
	long nev, aev;
	long dropped[C_N];
	long unclosed;
	char **names;
	int nnames, anames;
	struct hmap byhash; /* name hash -> index + 1 */
	int *strname;       /* str id -> name index + 1 */
	long nstr;
	struct hmap blocking; /* correlation id -> host event index + 1 (a blocking copy/memset) */
	struct ropen *open;
	int nopen, aopen;
	int64_t off; /* realtime - cupti, from the header */
};

struct runtl *runtl_new(void)
{
	struct runtl *rt = xcalloc(1, sizeof(*rt));
	hmap_init(&rt->byhash);
	hmap_init(&rt->blocking);
	return rt;
}

void runtl_free(struct runtl *rt)
{
	if (!rt)
		return;
	for (int i = 0; i < rt->nnames; i++)
		free(rt->names[i]);
	free(rt->names);
	free(rt->ev);
	free(rt->strname);
	free(rt->open);
	hmap_release(&rt->byhash);
	hmap_release(&rt->blocking);
	free(rt);
}

/* Index of s in the name table (added when new; a hash collision adds a second entry). */
static int intern(struct runtl *rt, const char *s)
{
	uint64_t h = 1469598103934665603ULL, v;
	for (const char *p = s; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	if (hmap_get(&rt->byhash, h, &v) && !strcmp(rt->names[v - 1], s))
		return (int)v - 1;
	ALLOC_GROW(rt->names, rt->nnames, rt->anames);
	rt->names[rt->nnames] = xstrdup(s);
	hmap_put(&rt->byhash, h, (uint64_t)rt->nnames + 1);
	return rt->nnames++;
}

#define TMAX 4000000000000000000LL /* |times| kept */

/* a - b, saturated (a hostile trace's times must not overflow) */
static int64_t sub(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return a > b ? INT64_MAX / 2 : INT64_MIN / 2;
	return r;
}

/* The integer after pat in the line's text ("\"start\":"), when obj's key is a number there
 * within ±TMAX. */
static int exact(const struct trace_record *r, const char *key, const char *pat, int64_t *v)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(r->obj, key);
	if (!cJSON_IsNumber(o) || o->valuedouble < -4e18 || o->valuedouble > 4e18)
		return 0;
	*v = (int64_t)o->valuedouble;
	const char *p = memmem(r->raw, r->rawlen, pat, strlen(pat));
	if (p) {
		char *end;
		long long x = strtoll(p + strlen(pat), &end, 10);
		if (end != p + strlen(pat) && x > -TMAX && x < TMAX &&
		    llabs(x - *v) < 1000000) /* the same number */
			*v = x;
	}
	return 1;
}

static long num(const cJSON *o, const char *key, long dflt)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(x) && x->valuedouble > -1e15 && x->valuedouble < 1e15
	           ? (long)x->valuedouble
	           : dflt;
}

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
	return s ? s : dflt;
}

/* Appends an event; returns its index, or -1 when the cap is reached (then counted). */
static long add(struct runtl *rt, int cat, int64_t t, int64_t d, int a, int b, int name)
{
	if (rt->nev >= RUNTL_CAP) {
		rt->dropped[cat]++;
		return -1;
	}
	ALLOC_GROW(rt->ev, rt->nev, rt->aev);
	rt->ev[rt->nev] = (struct rev){t, d < 0 ? 0 : d, cat, a, b, name};
	return rt->nev++;
}

static void gpu(struct runtl *rt, const struct trace_record *r, int kind, int name)
{
	int64_t s, e;
	if (!exact(r, "start", "\"start\":", &s) || !exact(r, "end", "\"end\":", &e))
		return;
	add(rt, C_GPU, s, sub(e, s), kind, (int)num(r->obj, "stream", 0), name);
	uint64_t hi;
	long c = num(r->obj, "c", -1);
	if (c >= 0 && hmap_del(&rt->blocking, (uint64_t)c, &hi)) {
		struct rev *h = &rt->ev[hi - 1];
		if (e > h->t)
			h->d = sub(e, h->t);
	}
}

static void host(struct runtl *rt, const struct trace_record *r, int blocking)
{
	int64_t ts, dur = 0;
	if (!exact(r, "ts", "\"ts\":", &ts))
		return;
	if (r->type == TRACE_SYNC)
		exact(r, "dur", "\"dur\":", &dur);
	const char *api = str(r->obj, "api", r->t ? r->t : "api");
	long i =
	    add(rt, C_HOST, sub(ts, rt->off), dur, (int)num(r->obj, "tid", 0), 0, intern(rt, api));
	long c = num(r->obj, "c", -1);
	if (i >= 0 && blocking && c >= 0 && !strstr(api, "Async"))
		hmap_put(&rt->blocking, (uint64_t)c, (uint64_t)i + 1);
}

static void range_open(struct runtl *rt, const struct trace_record *r, long id)
{
	int64_t ts;
	if (!exact(r, "ts", "\"ts\":", &ts))
		return;
	long tid = num(r->obj, "tid", 0);
	int depth = 0;
	for (int i = 0; i < rt->nopen; i++)
		depth += rt->open[i].id < 0 && rt->open[i].tid == tid;
	if (rt->nopen >= 4096) { /* a program that never pops: keep the memory bounded */
		rt->unclosed++;
		return;
	}
	ALLOC_GROW(rt->open, rt->nopen, rt->aopen);
	rt->open[rt->nopen++] =
	    (struct ropen){tid, id, sub(ts, rt->off), intern(rt, str(r->obj, "text", "range")),
	                   id < 0 ? depth : 0};
}

static void range_close(struct runtl *rt, const struct trace_record *r, long id)
{
	int64_t ts;
	if (!exact(r, "ts", "\"ts\":", &ts))
		return;
	long tid = num(r->obj, "tid", 0);
	for (int i = rt->nopen - 1; i >= 0; i--) {
		struct ropen *o = &rt->open[i];
		if (id >= 0 ? o->id != id : o->id >= 0 || o->tid != tid)
			continue;
		add(rt, C_NVTX, o->t, sub(sub(ts, rt->off), o->t), (int)o->tid, o->depth, o->name);
		memmove(o, o + 1, sizeof(*o) * (rt->nopen - i - 1));
		rt->nopen--;
		return;
	}
}

static int record(void *ctx, const struct trace_record *r)
{
	struct runtl *rt = ctx;
	switch (r->type) {
	case TRACE_HEADER: {
		int64_t rtc, cup;
		const cJSON *cs = cJSON_GetObjectItemCaseSensitive(r->obj, "clock_sync");
		struct trace_record in = *r;
		in.obj = cs;
		if (cs && exact(&in, "realtime", "\"realtime\":", &rtc) &&
		    exact(&in, "cupti", "\"cupti\":", &cup))
			rt->off = rtc - cup; /* both within ±TMAX */
		break;
	}
	case TRACE_STR: {
		long id = num(r->obj, "id", -1);
		const char *s = str(r->obj, "s", NULL);
		if (id < 0 || id >= (1L << 20) || !s)
			break;
		if (id >= rt->nstr) {
			long n = id + 1 > 2 * rt->nstr ? id + 1 : 2 * rt->nstr;
			rt->strname = xrealloc(rt->strname, sizeof(int) * n);
			memset(rt->strname + rt->nstr, 0, sizeof(int) * (n - rt->nstr));
			rt->nstr = n;
		}
		char *sn = short_name(s);
		rt->strname[id] = intern(rt, sn) + 1;
		free(sn);
		break;
	}
	case TRACE_KERNEL: {
		long id = num(r->obj, "name", -1);
		int name = id >= 0 && id < rt->nstr && rt->strname[id] ? rt->strname[id] - 1
		                                                       : intern(rt, "kernel");
		gpu(rt, r, 0, name);
		break;
	}
	case TRACE_COPY: {
		char buf[64];
		snprintf(buf, sizeof(buf), "memcpy %.40s", str(r->obj, "kind", "?"));
		gpu(rt, r, 1, intern(rt, buf));
		break;
	}
	case TRACE_SET:
		gpu(rt, r, 2, intern(rt, "memset"));
		break;
	case TRACE_LAUNCH:
	case TRACE_SYNC:
		host(rt, r, 0);
		break;
	case TRACE_MEMCPY:
	case TRACE_MEMSET:
		host(rt, r, 1);
		break;
	case TRACE_PUSH:
		range_open(rt, r, -1);
		break;
	case TRACE_POP:
		range_close(rt, r, -1);
		break;
	case TRACE_RANGE_START:
		range_open(rt, r, num(r->obj, "id", -1) < 0 ? 0 : num(r->obj, "id", -1));
		break;
	case TRACE_RANGE_END:
		range_close(rt, r, num(r->obj, "id", -1) < 0 ? 0 : num(r->obj, "id", -1));
		break;
	default:
		break;
	}
	return 0;
}

struct trace_consumer runtl_consumer(struct runtl *rt)
{
	unsigned long long want = 0;
	enum trace_type t[] = {TRACE_HEADER,   TRACE_STR,    TRACE_KERNEL, TRACE_COPY,
	                       TRACE_SET,      TRACE_LAUNCH, TRACE_SYNC,   TRACE_MEMCPY,
	                       TRACE_MEMSET,   TRACE_PUSH,   TRACE_POP,    TRACE_RANGE_START,
	                       TRACE_RANGE_END};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		want |= TRACE_BIT(t[i]);
	return (struct trace_consumer){record, rt, want};
}

/* ns as µs with three decimals, exactly (no double rounding) */
static void add_us(struct strbuf *sb, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	strbuf_addf(sb, "%s%llu.%03u", ns < 0 ? "-" : "", (unsigned long long)(a / 1000),
	            (unsigned)(a % 1000));
}

/* The rows in time order (then thread, stream, name, duration), not file order: threads'
 * records interleave in the file however the writer drained them, and the same run must give
 * the same summary (t-order.sh). */
static const struct rev *sort_ev;
static const int *sort_rank; /* a name's index in the sorted names */
static char *const *sort_names;

static int cmp_name(const void *pa, const void *pb)
{
	return strcmp(sort_names[*(const int *)pa], sort_names[*(const int *)pb]);
}

static int cmp_rev(const void *pa, const void *pb)
{
	const struct rev *x = &sort_ev[*(const long *)pa], *y = &sort_ev[*(const long *)pb];
	if (x->cat != y->cat)
		return x->cat - y->cat;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->a != y->a)
		return x->a - y->a;
	if (x->b != y->b)
		return x->b - y->b;
	if (x->name != y->name)
		return sort_rank[x->name] - sort_rank[y->name];
	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	return 0;
}

cJSON *runtl_json(const struct runtl *rt, int64_t t0_ns)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "cap", RUNTL_CAP);
	cJSON *dr = cJSON_AddObjectToObject(o, "dropped");
	for (int c = 0; c < C_N; c++)
		cJSON_AddNumberToObject(dr, cat_name[c], rt ? rt->dropped[c] : 0);
	cJSON_AddNumberToObject(dr, "nvtx_unclosed", rt ? rt->unclosed + rt->nopen : 0);
	/* names in byte order, not first-seen order (file order again) */
	int nn = rt ? rt->nnames : 0;
	int *byname = xmalloc(sizeof(int) * (size_t)(nn ? nn : 1));
	int *rank = xmalloc(sizeof(int) * (size_t)(nn ? nn : 1));
	for (int i = 0; i < nn; i++)
		byname[i] = i;
	if (nn) {
		sort_names = rt->names;
		qsort(byname, (size_t)nn, sizeof(int), cmp_name);
	}
	for (int i = 0; i < nn; i++)
		rank[byname[i]] = i;
	cJSON *names = cJSON_AddArrayToObject(o, "names");
	for (int i = 0; i < nn; i++)
		cJSON_AddItemToArray(names, cJSON_CreateString(rt->names[byname[i]]));
	sort_rank = rank;
	/* The rows as raw JSON text, one line each: a cJSON tree of 100,000 rows would take
	 * tens of MiB (t-scale bounds the analyzer's memory). gpu: [kind, stream, start, dur,
	 * name]; host: [tid, start, dur, name]; nvtx: [tid, start, dur, name, depth]. */
	struct strbuf sb[C_N] = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT};
	long nev = rt ? rt->nev : 0;
	long *order = xmalloc(sizeof(long) * (size_t)(nev ? nev : 1));
	for (long i = 0; i < nev; i++)
		order[i] = i;
	if (nev) {
		sort_ev = rt->ev;
		qsort(order, (size_t)nev, sizeof(long), cmp_rev);
	}
	for (long k = 0; k < nev; k++) {
		const struct rev *e = &rt->ev[order[k]];
		struct strbuf *b = &sb[e->cat];
		strbuf_adds(b, b->len ? ", [" : "[");
		strbuf_addf(b, "%d, ", e->a);
		if (e->cat == C_GPU)
			strbuf_addf(b, "%d, ", e->b);
		add_us(b, sub(e->t, t0_ns));
		strbuf_adds(b, ", ");
		add_us(b, e->d);
		strbuf_addf(b, ", %d", rank[e->name]);
		if (e->cat == C_NVTX)
			strbuf_addf(b, ", %d", e->b);
		strbuf_adds(b, "]");
	}
	free(order);
	free(byname);
	free(rank);
	for (int c = 0; c < C_N; c++) {
		struct strbuf t = STRBUF_INIT;
		strbuf_addf(&t, "[%s]", sb[c].len ? sb[c].buf : "");
		strbuf_release(&sb[c]);
		cJSON_AddItemToObject(o, cat_name[c], cJSON_CreateRaw(t.buf));
		strbuf_release(&t);
	}
	return o;
}
