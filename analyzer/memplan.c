/*
 * memplan.c - the memory plan of one step: what an ideal plan of the step's values would need
 * at peak, beside what the program's allocator actually held, and the host-device traffic
 * inside the step.
 *
 * Ideal: every value of the captured step occupies its bytes from its writer to its last
 * reader (inputs from the step's start; a value read after the step, to its end). A buffer that
 * enters the step as an input and is not freed in it (parameters, optimizer state) is live the
 * whole step, at its largest version. The ideal curve is the sum at each node position; its
 * peak is what a perfect planner (exact frees, no fragmentation) needs.
 *
 * Held: from the memory log (struct memlog), a consumer that the trace reader feeds in the same
 * pass as the graph builder (which does not keep allocator records); the step's window is known
 * only after the graph is built, so the log keeps every alloc, free, sync, memcpy and HtoD/DtoH
 * copy record compactly and the window is applied here, in the records' file order:
 * alloc and free records before the captured step give the bytes live when it starts, those
 * inside it (seq from its first op to the next step's first op) move the curve, each placed
 * after the last node launched before it. Under PyTorch's caching allocator (the shim's
 * default) its blocks (api "c10::CachingAllocator") count nothing: held is the segments they lie
 * in. With cudaMallocAsync every tensor is one record, so
 * `held` is the bytes in live allocations (the pool's cached reserve is not visible, so
 * fragmentation inside the pool is not measured: the difference is late frees and bytes kept
 * past their last use). Under the virtual memory API (XLA's platform allocator, PyTorch's
 * expandable segments) a reservation holds nothing by itself: the bytes held are its mappings,
 * from each cuMemMap (a `vmm` record) to its cuMemUnmap.
 *
 * Host traffic: inside the same window, `sync` records (with the CPU time blocked) and
 * memcpy calls joined to their copy activity (kind HtoD/DtoH); a device-to-host copy stalls
 * the host from its call until the copy ends. Each becomes an `invariant` candidate of
 * evidence.what "host-sync" or "host-copy" (repeated every step: copy once if the bytes are
 * the same, which the trace cannot confirm).
 *
 * The values alive at the ideal peak are listed with their writer's source line; for each
 * fusion candidate, the bytes of its removed values alive at the peak are what it frees there
 * (also written to that candidate's evidence.peak_bytes_freed). One `memory` candidate states
 * held peak minus ideal peak.
 */
#include "analyzer/beyond.h"
#include "analyzer/timemodel.h"
#include "analyzer/trace.h"
#include "analyzer/vindex.h"
#include "lib/hmap.h"
#include "lib/util.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct memplan {
	int n;                  /* node positions */
	uint64_t *ideal, *held; /* per position, after that node's launch */
	uint64_t held_at_start, ideal_peak, held_peak;
	uint64_t held_peak_any; /* over every alloc/free of the step, not only at launches */
	int ideal_peak_at, held_peak_at;
	long allocs, frees; /* records inside the window */
	cJSON *at_peak;     /* array of values alive at the ideal peak (owned) */
	cJSON *by_cand;     /* array {candidate, bytes} (owned) */
};

void memplan_free(struct memplan *mp)
{
	if (!mp)
		return;
	free(mp->ideal);
	free(mp->held);
	cJSON_Delete(mp->at_peak);
	cJSON_Delete(mp->by_cand);
	free(mp);
}

/* The node position an API record of sequence number seq falls after. */
static int pos_of(const struct model *m, uint64_t seq)
{
	int lo = 0, hi = m->nnodes; /* first node with seq > given */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (m->nodes[mid].seq <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? lo - 1 : 0;
}

static int64_t num(const cJSON *o, const char *k, int64_t dflt)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	/* out of int64_t's range (2^64+1, 1e400, NaN): as absent, never converted */
	if (!cJSON_IsNumber(x) || !(x->valuedouble > -9.2e18 && x->valuedouble < 9.2e18))
		return dflt;
	return (int64_t)x->valuedouble;
}

struct memev {
	uint64_t seq;
	int64_t delta;
};

static int cmp_ev(const void *a, const void *b)
{
	const struct memev *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct afrec {
	uint64_t seq;
	int64_t id, size; /* size -1: a free */
	uint64_t key;     /* the address, times 2, plus 1 for a caching allocator's block; 0 none */
};

static int cmp_af(const void *a, const void *b)
{
	const struct afrec *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct hostop {
	uint64_t seq;
	int64_t c, ts, end;
	uint64_t bytes;
	int pos, sync;
	char kind[8];
	double dur_us;
	const char *api;
};

/* a + b, saturating at INT64_MAX / INT64_MIN: a trace's sizes are untrusted (eight
 * allocations of 2^62 bytes wrapped "held at start" to 0) */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/*
 * The values of one allocation that are alive together never hold more than its size (an
 * arena's buffer: JAX's temporaries, a caching allocator's segment, views): where the running
 * sum of one buffer's values passes the allocation's size, the excess is taken off the curve
 * (diff), over the positions where it exceeds. sp holds the buffer's interval ends (at
 * position seq: +size at the start, -size past the end), ns of them.
 */
static void cap_buffer(struct memev *sp, int ns, uint64_t cap, int64_t *diff)
{
	qsort(sp, (size_t)ns, sizeof(*sp), cmp_ev);
	int64_t run = 0, over = 0, c = cap > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)cap;
	for (int i = 0; i < ns;) {
		uint64_t pos = sp[i].seq;
		for (; i < ns && sp[i].seq == pos; i++)
			run = sat_add(run, sp[i].delta);
		int64_t ex = run > c ? run - c : 0;
		if (ex != over) {
			diff[pos] = sat_add(diff[pos], over - ex);
			over = ex;
		}
	}
}

static void ideal_curve(struct model *m, struct memplan *mp, const struct hmap *sizes,
                        const struct hmap *born)
{
	int n = m->nnodes;
	/* per buffer (a vindex group): persistent (a version from before the step, not fresh)
	 * and its largest version (ties: the first); the curve through a difference array, so the
	 * whole pass is linear in values and reads (it scanned every value per value) */
	struct vindex x;
	vindex_build(m, &x);
	char *persist = xcalloc((size_t)x.ngroups + 1, 1);
	int *largest = xmalloc(sizeof(int) * ((size_t)x.ngroups + 1));
	for (int g = 0; g <= x.ngroups; g++)
		largest[g] = -1;
	/* a persistent buffer that the step frees (every version dead in it, none read after:
	 * gradients set to None, a dropped cache) is held to its last read, not to the end */
	char *lives = xcalloc((size_t)x.ngroups + 1, 1);
	int *last_read = xcalloc((size_t)x.ngroups + 1, sizeof(int));
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *u = &m->values[i];
		int g = x.grp_of[i];
		if (u->writer < 0 && u->how != HOW_FRESH)
			persist[g] = 1;
		if (largest[g] < 0 || u->size > m->values[largest[g]].size)
			largest[g] = i;
		if (u->live_after_step || !u->dead_in_step)
			lives[g] = 1;
		for (int r = 0; r < u->nreaders; r++)
			if (u->readers[r] > last_read[g])
				last_read[g] = u->readers[r];
	}
	int64_t *diff = xcalloc((size_t)n + 1, sizeof(int64_t));
	/* per group, its intervals, for cap_buffer(): values in group order */
	int *gcount = xcalloc((size_t)x.ngroups + 2, sizeof(int));
	for (int i = 0; i < m->nvalues; i++)
		gcount[x.grp_of[i] + 1] += 2;
	for (int g = 0; g <= x.ngroups; g++)
		gcount[g + 1] += gcount[g];
	struct memev *sp = xmalloc(sizeof(*sp) * (2 * (size_t)m->nvalues + 1));
	int *gfill = xcalloc((size_t)x.ngroups + 1, sizeof(int));
	int64_t *gbuf = xmalloc(sizeof(int64_t) * ((size_t)x.ngroups + 1));
	for (int g = 0; g <= x.ngroups; g++)
		gbuf[g] = -1;
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		int persistent = persist[x.grp_of[i]];
		/* a persistent buffer counts once, at its largest version, for the whole step */
		if (persistent && largest[x.grp_of[i]] != i)
			continue;
		/* what was there before a write: from the step's start, or from its allocation
		 * when the step made it (a buffer read before any write seen) */
		uint64_t at;
		int from = v->buffer >= 0 && hmap_get(born, (uint64_t)v->buffer, &at) ? (int)at : 0;
		int s, e;
		if (persistent) {
			s = from;
			e = lives[x.grp_of[i]] ? n - 1 : last_read[x.grp_of[i]];
			if (e < s)
				e = s;
		} else {
			s = v->writer >= 0 ? v->writer : from;
			e = s;
			for (int r = 0; r < v->nreaders; r++)
				if (v->readers[r] > e)
					e = v->readers[r];
			if (v->live_after_step)
				e = n - 1;
		}
		if (s >= n)
			continue;
		if (e >= n)
			e = n - 1;
		int64_t sz = v->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v->size;
		diff[s] = sat_add(diff[s], sz);
		diff[e + 1] = sat_add(diff[e + 1], -sz);
		int g = x.grp_of[i];
		struct memev *gs = sp + gcount[g];
		gs[gfill[g]++] = (struct memev){(uint64_t)s, sz};
		gs[gfill[g]++] = (struct memev){(uint64_t)e + 1, -sz};
		gbuf[g] = v->buffer;
	}
	for (int g = 0; g <= x.ngroups; g++) {
		uint64_t cap;
		if (gfill[g] > 2 && gbuf[g] >= 0 && hmap_get(sizes, (uint64_t)gbuf[g], &cap))
			cap_buffer(sp + gcount[g], gfill[g], cap, diff);
	}
	free(sp);
	free(gcount);
	free(gfill);
	free(gbuf);
	int64_t run = 0;
	for (int k = 0; k < n; k++) {
		run = sat_add(run, diff[k]);
		uint64_t r = run > 0 ? (uint64_t)run : 0;
		mp->ideal[k] = mp->ideal[k] > UINT64_MAX - r ? UINT64_MAX : mp->ideal[k] + r;
	}
	free(diff);
	free(lives);
	free(last_read);
	free(persist);
	free(largest);
	vindex_free(&x);
	for (int k = 0; k < n; k++)
		if (mp->ideal[k] > mp->ideal_peak)
			mp->ideal_peak = mp->ideal[k], mp->ideal_peak_at = k;
	/* values alive at the peak, and what each fusion candidate frees there */
	int k = mp->ideal_peak_at;
	mp->at_peak = cJSON_CreateArray();
	mp->by_cand = cJSON_CreateArray();
	uint64_t *freed = xcalloc(m->ncands ? m->ncands : 1, sizeof(uint64_t));
	/* value id -> the candidates (not dead work) that remove it, in ascending order: a list
	 * per value, built once, instead of every candidate scanned for every value at the peak */
	struct hmap rm_first;
	hmap_init(&rm_first);
	long nrm = 0;
	for (int c = 0; c < m->ncands; c++)
		nrm += m->cands[c].nremoved;
	int *rm_cand = xmalloc(sizeof(int) * (size_t)(nrm ? nrm : 1));
	long *rm_next = xmalloc(sizeof(long) * (size_t)(nrm ? nrm : 1));
	{
		struct hmap last;
		hmap_init(&last);
		long q = 0;
		for (int c = 0; c < m->ncands; c++) {
			if (!strcmp(m->cands[c].kind, "dead"))
				continue;
			for (int j = 0; j < m->cands[c].nremoved; j++, q++) {
				uint64_t key = (uint64_t)(int64_t)m->cands[c].removed[j], prev;
				rm_cand[q] = c;
				rm_next[q] = -1;
				if (hmap_get(&last, key, &prev))
					rm_next[prev] = q;
				else
					hmap_put(&rm_first, key, (uint64_t)q);
				hmap_put(&last, key, (uint64_t)q);
			}
		}
		hmap_release(&last);
	}

	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		int s = v->writer < 0 ? 0 : v->writer, e = s;
		for (int r = 0; r < v->nreaders; r++)
			if (v->readers[r] > e)
				e = v->readers[r];
		if (v->live_after_step ||
		    (v->writer < 0 && !v->dead_in_step && v->how != HOW_FRESH))
			e = n - 1;
		if (k < s || k > e || !v->size)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "value", v->id);
		cJSON_AddNumberToObject(o, "bytes", (double)v->size);
		cJSON_AddNumberToObject(o, "writer", v->writer);
		const char *src = v->writer >= 0 ? m->nodes[v->writer].source : NULL;
		if (src)
			cJSON_AddStringToObject(o, "source", src);
		else
			cJSON_AddNullToObject(o, "source");
		cJSON *fc = cJSON_CreateNull();
		uint64_t at;
		if (hmap_get(&rm_first, (uint64_t)(int64_t)v->id, &at))
			for (long q = (long)at; q >= 0; q = rm_next[q]) {
				int c = rm_cand[q];
				freed[c] += v->size;
				cJSON_Delete(fc);
				fc = cJSON_CreateNumber(c);
			}
		cJSON_AddItemToObject(o, "removed_by", fc);
		cJSON_AddItemToArray(mp->at_peak, o);
	}
	for (int c = 0; c < m->ncands; c++) {
		if (!freed[c])
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "candidate", c);
		cJSON_AddNumberToObject(o, "bytes", (double)freed[c]);
		cJSON_AddItemToArray(mp->by_cand, o);
		if (!m->cands[c].evidence)
			m->cands[c].evidence = cJSON_CreateObject();
		cJSON_AddNumberToObject(m->cands[c].evidence, "peak_bytes_freed", (double)freed[c]);
	}
	free(freed);
	hmap_release(&rm_first);
	free(rm_cand);
	free(rm_next);
}

/* ---------------------------------------------------------------- the log */

/*
 * Allocator records are many (one per tensor with cudaMallocAsync) and only those before the
 * captured step's end count, which is known at the end: the log keeps them in file order as
 * varints of the differences to the previous record (seq, id) and of size + 1, about 6 bytes
 * a record where a struct afrec takes 24, so the log stays small beside the graph builder.
 */
struct memlog {
	unsigned char *af; /* alloc (size) and free (size -1) records, encoded */
	size_t naf, aaf;
	uint64_t last_seq, last_id, last_key;
	struct hostop *hop; /* sync and memcpy records */
	int nhop, ahop;
	struct hostop *cps; /* HtoD and DtoH copy activity: c, end, kind */
	int ncps, acps;
};

struct memlog *memlog_new(void)
{
	return xcalloc(1, sizeof(struct memlog));
}

void memlog_free(struct memlog *ml)
{
	if (!ml)
		return;
	free(ml->af);
	free(ml->hop);
	free(ml->cps);
	free(ml);
}

static void put_varint(struct memlog *ml, uint64_t x)
{
	if (ml->naf + 10 > ml->aaf) {
		ml->aaf = ml->aaf ? ml->aaf * 2 : 4096;
		ml->af = xrealloc(ml->af, ml->aaf);
	}
	while (x >= 0x80) {
		ml->af[ml->naf++] = (unsigned char)(x | 0x80);
		x >>= 7;
	}
	ml->af[ml->naf++] = (unsigned char)x;
}

static uint64_t get_varint(const unsigned char *p, size_t *pos)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		unsigned char c = p[(*pos)++];
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	return x;
}

/* zigzag: a signed difference as an unsigned varint, small either way */
static uint64_t zz(uint64_t d)
{
	return (d << 1) ^ (uint64_t) - (int64_t)(d >> 63);
}

static uint64_t unzz(uint64_t z)
{
	return (z >> 1) ^ (uint64_t) - (int64_t)(z & 1);
}

/* appends one allocator record: seq, id, size + 1 and key, each as the zigzag varint of its
 * difference to the previous record's (size alone as is) */
static void put_af(struct memlog *ml, uint64_t seq, int64_t id, int64_t size, uint64_t key)
{
	put_varint(ml, zz(seq - ml->last_seq));
	put_varint(ml, zz((uint64_t)id - ml->last_id));
	put_varint(ml, zz((uint64_t)size + 1));
	put_varint(ml, zz(key - ml->last_key));
	ml->last_seq = seq;
	ml->last_id = (uint64_t)id;
	ml->last_key = key;
}

static int memlog_record(void *ctx, const struct trace_record *r)
{
	struct memlog *ml = ctx;
	const cJSON *o = r->obj;
	int64_t seq = num(o, "seq", -1);
	if (r->type == TRACE_VMM) {
		/* a mapping of physical memory into a reservation (XLA's platform allocator maps
		 * one per buffer, PyTorch's expandable segments grow one by mappings): its bytes
		 * are held from cuMemMap to cuMemUnmap, keyed by the address it maps */
		const cJSON *api = cJSON_GetObjectItemCaseSensitive(o, "api");
		const cJSON *ptr = cJSON_GetObjectItemCaseSensitive(o, "ptr");
		int map = cJSON_IsString(api) && !strcmp(api->valuestring, "cuMemMap");
		int unmap = cJSON_IsString(api) && !strcmp(api->valuestring, "cuMemUnmap");
		if ((!map && !unmap) || !cJSON_IsString(ptr) || seq < 0)
			return 0;
		char *end;
		errno = 0;
		unsigned long long a = strtoull(ptr->valuestring, &end, 16);
		if (errno || *end || end == ptr->valuestring)
			return 0;
		int64_t size = map ? num(o, "size", 0) : -1;
		if (map && size <= 0)
			return 0;
		int64_t id = (int64_t)((1ULL << 62) | (a & ((1ULL << 62) - 1)));
		put_af(ml, (uint64_t)seq, id, size, 0);
	} else if (r->type == TRACE_ALLOC || r->type == TRACE_FREE) {
		int64_t id = num(o, "id", -1);
		/* -2: a free the shim left to the analyzer (AICPROF_RESOLVE=offline), matched to
		 * its allocation by address in seq order (memplan_build) */
		if ((id < 0 && !(id == -2 && r->type == TRACE_FREE)) || seq < 0)
			return 0;
		/* replayed in seq order: threads' records interleave in the file */
		const cJSON *api = cJSON_GetObjectItemCaseSensitive(o, "api");
		int vmm = cJSON_IsString(api) && strstr(api->valuestring, "Reserve");
		/* a block of PyTorch's caching allocator lies in a segment, which is what it held
		 */
		int block =
		    cJSON_IsString(api) && !strcmp(api->valuestring, "c10::CachingAllocator");
		int64_t size = r->type == TRACE_ALLOC ? (vmm || block ? 0 : num(o, "size", 0)) : -1;
		const cJSON *ptr = cJSON_GetObjectItemCaseSensitive(o, "ptr");
		uint64_t key = 0;
		if (cJSON_IsString(ptr)) {
			unsigned long long a = strtoull(ptr->valuestring, NULL, 16);
			key = a && a < (1ULL << 62) ? (uint64_t)a * 2 + (uint64_t)block : 0;
		}
		put_af(ml, (uint64_t)seq, id, size, key);
	} else if (r->type == TRACE_SYNC || r->type == TRACE_MEMCPY) {
		if (seq < 0)
			return 0;
		ALLOC_GROW(ml->hop, ml->nhop, ml->ahop);
		struct hostop *h = &ml->hop[ml->nhop++];
		memset(h, 0, sizeof(*h));
		h->seq = (uint64_t)seq;
		h->sync = r->type == TRACE_SYNC;
		h->c = num(o, "c", -1);
		h->ts = num(o, "ts", 0);
		h->bytes = (uint64_t)num(o, "bytes", 0);
		h->dur_us = (double)num(o, "dur", 0) / 1e3;
		const cJSON *api = cJSON_GetObjectItemCaseSensitive(o, "api");
		h->api =
		    cJSON_IsString(api) && strstr(api->valuestring, "Async") ? "async" : "sync";
	} else if (r->type == TRACE_COPY) {
		/* activity may come before or after its API record: joined after the read */
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
		const char *ks = cJSON_IsString(k) ? k->valuestring : "";
		if (strcmp(ks, "DtoH") && strcmp(ks, "HtoD"))
			return 0;
		ALLOC_GROW(ml->cps, ml->ncps, ml->acps);
		struct hostop *c = &ml->cps[ml->ncps++];
		memset(c, 0, sizeof(*c));
		c->c = num(o, "c", -2);
		c->end = num(o, "end", 0);
		snprintf(c->kind, sizeof(c->kind), "%s", ks);
	}
	return 0;
}

struct trace_consumer memlog_consumer(struct memlog *ml)
{
	return (struct trace_consumer){memlog_record, ml,
	                               TRACE_BIT(TRACE_ALLOC) | TRACE_BIT(TRACE_FREE) |
	                                   TRACE_BIT(TRACE_VMM) | TRACE_BIT(TRACE_SYNC) |
	                                   TRACE_BIT(TRACE_MEMCPY) | TRACE_BIT(TRACE_COPY)};
}

int memplan_compute(struct model *m, const struct memlog *ml)
{
	if (!m->nnodes || !ml)
		return 0;
	struct memplan *mp = xcalloc(1, sizeof(*mp));
	int n = m->nnodes;
	mp->n = n;
	mp->ideal = xcalloc(n, sizeof(uint64_t));
	mp->held = xcalloc(n, sizeof(uint64_t));
	int64_t *delta = xcalloc(n, sizeof(int64_t));
	uint64_t s0 = m->nodes[0].seq, s1 = m->cap_seq_end;
	struct hmap live;
	hmap_init(&live);
	struct memev *evs = NULL;
	long nevs = 0, aevs = 0;
	uint64_t v;
	/* the window: allocator records before the step's end, host operations inside it */
	struct afrec *af = NULL;
	long naf = 0, aaf = 0;
	uint64_t pseq = 0, pid = 0, pkey = 0;
	for (size_t p = 0; p < ml->naf;) {
		struct afrec f;
		f.seq = pseq += unzz(get_varint(ml->af, &p));
		f.id = (int64_t)(pid += unzz(get_varint(ml->af, &p)));
		f.size = (int64_t)(unzz(get_varint(ml->af, &p)) - 1);
		f.key = pkey += unzz(get_varint(ml->af, &p));
		if (f.seq < s1) {
			ALLOC_GROW(af, naf, aaf);
			af[naf++] = f;
		}
	}
	struct hostop *hop = NULL;
	int nhop = 0, ahop = 0;
	for (int i = 0; i < ml->nhop; i++)
		if (ml->hop[i].seq >= s0 && ml->hop[i].seq < s1) {
			ALLOC_GROW(hop, nhop, ahop);
			hop[nhop] = ml->hop[i];
			hop[nhop++].pos = pos_of(m, ml->hop[i].seq);
		}
	const struct hostop *cps = ml->cps;
	struct hmap copies;
	hmap_init(&copies);
	for (int i = 0; i < ml->ncps; i++)
		hmap_put(&copies, (uint64_t)cps[i].c, (uint64_t)i);
	/* allocator: bytes live at the step's start, then per-position deltas in it */
	int64_t held = 0;
	for (int i = 0; i < nhop; i++)
		if (!hop[i].sync && hmap_get(&copies, (uint64_t)hop[i].c, &v)) {
			memcpy(hop[i].kind, cps[v].kind, sizeof(hop[i].kind));
			hop[i].end = cps[v].end;
		}
	hmap_release(&copies);
	if (naf)
		qsort(af, naf, sizeof(*af), cmp_af);
	/* frees the shim did not resolve (id -2): the allocation live at that address then */
	struct hmap bykey;
	hmap_init(&bykey);
	for (long i = 0; i < naf; i++) {
		if (!af[i].key)
			continue;
		if (af[i].size >= 0)
			hmap_put(&bykey, af[i].key, (uint64_t)af[i].id);
		else if (hmap_del(&bykey, af[i].key, &v) && af[i].id == -2)
			af[i].id = (int64_t)v;
	}
	hmap_release(&bykey);
	for (long i = 0; i < naf; i++) {
		int in = af[i].seq >= s0;
		int64_t d;
		if (af[i].size >= 0) {
			hmap_put(&live, (uint64_t)af[i].id, (uint64_t)af[i].size);
			d = af[i].size;
			mp->allocs += in;
		} else if (hmap_del(&live, (uint64_t)af[i].id, &v)) {
			d = -(int64_t)v;
			mp->frees += in;
		} else {
			continue;
		}
		if (!in) {
			held = sat_add(held, d);
			continue;
		}
		int p = pos_of(m, af[i].seq);
		delta[p] = sat_add(delta[p], d);
		ALLOC_GROW(evs, nevs, aevs);
		evs[nevs++] = (struct memev){af[i].seq, d};
	}
	/* each allocation's size, for the ideal curve's bound (an allocation holds at most its
	 * size of values at once) */
	struct hmap sizes, born;
	hmap_init(&sizes);
	hmap_init(&born); /* allocations made inside the step: id -> position */
	for (long i = 0; i < naf; i++)
		if (af[i].size > 0) {
			hmap_put(&sizes, (uint64_t)af[i].id, (uint64_t)af[i].size);
			if (af[i].seq >= s0)
				hmap_put(&born, (uint64_t)af[i].id, (uint64_t)pos_of(m, af[i].seq));
		}
	free(af);
	mp->held_at_start = held > 0 ? (uint64_t)held : 0;
	for (int k = 0; k < n; k++) {
		held = sat_add(held, delta[k]);
		mp->held[k] = held > 0 ? (uint64_t)held : 0;
		if (mp->held[k] > mp->held_peak)
			mp->held_peak = mp->held[k], mp->held_peak_at = k;
	}
	free(delta);
	/* the true peak: between two launches an alloc may come before a free */
	if (nevs)
		qsort(evs, nevs, sizeof(*evs), cmp_ev);
	int64_t run = (int64_t)mp->held_at_start;
	mp->held_peak_any = mp->held_at_start;
	for (long i = 0; i < nevs; i++) {
		run = sat_add(run, evs[i].delta);
		if (run > 0 && (uint64_t)run > mp->held_peak_any)
			mp->held_peak_any = (uint64_t)run;
	}
	free(evs);
	hmap_release(&live);
	ideal_curve(m, mp, &sizes, &born);
	hmap_release(&sizes);
	hmap_release(&born);
	m->mem = mp;

	/* one memory candidate: held peak over ideal peak */
	int at = mp->held_peak_at;
	struct candidate *c = beyond_add(m, "memory", &at, 1);
	cJSON *ev = c->evidence;
	cJSON_AddNumberToObject(ev, "held_peak_bytes", (double)mp->held_peak);
	cJSON_AddNumberToObject(ev, "ideal_peak_bytes", (double)mp->ideal_peak);
	cJSON_AddNumberToObject(
	    ev, "excess_bytes",
	    mp->held_peak > mp->ideal_peak ? (double)(mp->held_peak - mp->ideal_peak) : 0.0);
	char b1[32], b2[32], b3[32];
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb,
	            "the program held %s in live allocations at peak (after node %d); the step's "
	            "values need %s at peak (after node %d) with exact frees: %s held by late "
	            "frees and values kept past their last use",
	            fmt_bytes((double)mp->held_peak, b1), mp->held_peak_at,
	            fmt_bytes((double)mp->ideal_peak, b2), mp->ideal_peak_at,
	            fmt_bytes(mp->held_peak > mp->ideal_peak
	                          ? (double)(mp->held_peak - mp->ideal_peak)
	                          : 0.0,
	                      b3));
	c->why = sb.buf;

	/* host traffic inside the step */
	for (int i = 0; i < nhop; i++) {
		struct hostop *h = &hop[i];
		int host = h->sync || !strcmp(h->kind, "DtoH") || !strcmp(h->kind, "HtoD");
		if (!host)
			continue;
		double stall = h->sync ? h->dur_us
		               : (!strcmp(h->kind, "DtoH") && h->end > h->ts)
		                   ? (double)(h->end - h->ts) / 1e3
		                   : 0;
		struct candidate *hc = beyond_add(m, "invariant", &h->pos, 1);
		cJSON *e = hc->evidence;
		cJSON_AddStringToObject(e, "what", h->sync ? "host-sync" : "host-copy");
		cJSON_AddStringToObject(e, "copy_kind", h->sync ? "" : h->kind);
		cJSON_AddNumberToObject(e, "bytes", (double)h->bytes);
		cJSON_AddNumberToObject(e, "stall_us", stall);
		cJSON_AddNumberToObject(e, "correlation", (double)h->c);
		cJSON_AddBoolToObject(e, "confirmed", 0);
		hc->bytes_saved = h->bytes;
		hc->before_us = stall;
		hc->saved_us = stall;
		const struct node *nd = &m->nodes[h->pos];
		struct strbuf hb = STRBUF_INIT;
		char t1[32];
		if (h->sync)
			strbuf_addf(&hb,
			            "a synchronize inside the step (after node %d, %s) blocks "
			            "the host %s every step (host time, while the GPU drains its "
			            "queue): remove it or move it out of the step",
			            h->pos, nd->source ? nd->source : "unattributed",
			            fmt_us(stall, t1));
		else
			strbuf_addf(&hb,
			            "a %s copy of %s every step (node %d, %s)%s: if the bytes "
			            "are the same each step, copy once; if it is a loss read for "
			            "printing, read it every N steps",
			            h->kind, fmt_bytes((double)h->bytes, b1), h->pos,
			            nd->source ? nd->source : "unattributed",
			            stall > 0 ? " blocks the host until the copy ends" : "");
		if (stall > 0 && !h->sync)
			strbuf_addf(&hb, " (%s of host time)", fmt_us(stall, t1));
		hc->why = hb.buf;
	}
	free(hop);
	return 0;
}

cJSON *memplan_json(const struct model *m)
{
	const struct memplan *mp = m->mem;
	if (!mp)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "step", m->tl_step);
	cJSON_AddNumberToObject(o, "held_at_start_bytes", (double)mp->held_at_start);
	cJSON_AddNumberToObject(o, "held_peak_bytes", (double)mp->held_peak);
	cJSON_AddNumberToObject(o, "held_peak_after_node", mp->held_peak_at);
	cJSON_AddNumberToObject(o, "held_peak_any_bytes", (double)mp->held_peak_any);
	cJSON_AddNumberToObject(o, "ideal_peak_bytes", (double)mp->ideal_peak);
	cJSON_AddNumberToObject(o, "ideal_peak_after_node", mp->ideal_peak_at);
	cJSON_AddNumberToObject(o, "allocs_in_step", (double)mp->allocs);
	cJSON_AddNumberToObject(o, "frees_in_step", (double)mp->frees);
	cJSON *cv = cJSON_AddArrayToObject(o, "curve");
	for (int k = 0; k < mp->n; k++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "node", k);
		cJSON_AddNumberToObject(p, "ideal", (double)mp->ideal[k]);
		cJSON_AddNumberToObject(p, "held", (double)mp->held[k]);
		cJSON_AddItemToArray(cv, p);
	}
	cJSON_AddItemToObject(o, "at_peak", cJSON_Duplicate(mp->at_peak, 1));
	cJSON_AddItemToObject(o, "freed_by_candidate", cJSON_Duplicate(mp->by_cand, 1));
	return o;
}
