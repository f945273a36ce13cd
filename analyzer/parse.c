/*
 * parse.c - the graph builder's first stage: trace records become pooled struct recs, joined
 * and put in seq order (builder.h has the stages and the shared struct builder).
 *
 * How it works: builder_record() dispatches on the record's type 't'. Each record is copied
 * into a pooled struct rec (rec_new(); no per-record malloc once warm). API records (launch,
 * memcpy, memset, alloc, free, NVTX, event_record, stream_wait) carry `seq` and go into the
 * reorder buffer (heap_push()); activity records (kernel, copy, set) are joined at once to their
 * API record by correlation id `c` (join()), or parked in b->orphans until it arrives. Kernels
 * from CUDA graphs have no launch: they enter the op stream where their activity record is read.
 * Probe records (calibration fingerprints) wait by correlation id for their launch. Definitions
 * (str: kernel names, site: call sites) fill tables indexed by id. Records with a seq that the
 * builder does not use hold their seq's place (R_SKIP). When the buffer holds more than REORDER
 * records, reorder_release() hands drain() (flow.c) those in exact seq order, so records written
 * out of order by different threads are seen in the order they happened (the reorder buffer,
 * below, has the bound). Bad input is an error naming the file and line (error_at()), never a
 * crash.
 */
#include "analyzer/builder.h"
#include "analyzer/resolve.h"
#include "analyzer/symbolize.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static struct rec *rec_new(struct builder *b)
{
	struct rec *r = b->pool;
	struct ptrarg *keep = NULL;
	int akeep = 0;
	if (r) {
		/* a recycled record keeps its grown pointer array */
		b->pool = r->next_free;
		keep = r->p != r->pin ? r->p : NULL;
		akeep = r->aptr;
	} else {
		r = xmalloc(sizeof(*r));
	}
	memset(r, 0, sizeof(*r));
	r->p = keep ? keep : r->pin;
	r->aptr = keep ? akeep : PIN;
	r->fn = r->site = -1;
	r->stream = -1;
	r->numel = -1;
	r->gi = -1;
	r->dst_alloc = r->src_alloc = -1;
	return r;
}

void rec_free(struct builder *b, struct rec *r)
{
	free(r->oc);
	r->oc = NULL;
	r->next_free = b->pool;
	b->pool = r;
}

/* ---------- the reorder buffer ---------- */

static inline int before(const struct rec *a, const struct rec *b)
{
	return a->seq < b->seq || (a->seq == b->seq && a->ord < b->ord);
}

/* What a held record costs: the struct and a grown pointer array. */
static long rec_bytes(const struct rec *r)
{
	return (long)sizeof(*r) + (r->p != r->pin ? (long)(r->aptr * sizeof(*r->p)) : 0) +
	       (r->oc ? (long)sizeof(*r->oc) : 0);
}

/*
 * The reorder buffer. `seq` is one process-wide counter: every record that has one takes the
 * next number, so the records in the order they happened are exactly seq 0, 1, 2, ... (a forked
 * child's trace starts where the parent's counter stood). A thread's records reach the trace
 * when the shim's writer drains its ring, so they can come late by thousands of records. Records
 * wait in a binary min-heap (b->wait) by (seq, arrival) and leave it only in exact order: the
 * lowest when its seq is b->next_seq, the next one expected. A seq that does not come holds the
 * rest back until the buffer is over its bound (REORDER_MAX records or REORDER_MAX_BYTES): then
 * it is given up (the records after it go on), and whatever comes with a lower seq later is
 * processed at once, out of order. Records with a made-up seq (kernels of CUDA graphs, activity
 * without an API record: seq b->max_seq when read, after the record that has it) hold no seq
 * of their own. The first release takes the lowest seq held as the start. Released records go
 * to a ring (b->heap) that drain() empties through heap_pop(). Push and pop: O(log n).
 */
#define WAIT_AT(b, i) ((b)->wait[i])

void heap_push(struct builder *b, struct rec *r)
{
	r->ord = b->arrivals++;
	if (r->seq > b->max_seq && (r->has_api || r->type != R_OP))
		b->max_seq = r->seq;
	ALLOC_GROW(b->wait, b->nwait, b->await);
	long i = b->nwait++;
	while (i > 0 && before(r, b->wait[(i - 1) / 2])) {
		b->wait[i] = b->wait[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	b->wait[i] = r;
	b->wait_bytes += rec_bytes(r);
	if (b->nwait > b->peak_heap)
		b->peak_heap = b->nwait;
}

static struct rec *wait_pop(struct builder *b)
{
	struct rec *top = b->wait[0], *last = b->wait[--b->nwait];
	long i = 0, n = b->nwait;
	for (;;) {
		long c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(b->wait[c + 1], b->wait[c]))
			c++;
		if (!before(b->wait[c], last))
			break;
		b->wait[i] = b->wait[c];
		i = c;
	}
	if (n)
		b->wait[i] = last;
	b->wait_bytes -= rec_bytes(top);
	return top;
}

#define RING_AT(b, i) ((b)->heap[((b)->hhead + (i)) & ((b)->aheap - 1)])

static void ring_push(struct builder *b, struct rec *r)
{
	if (b->nheap == b->aheap) {
		long cap = b->aheap ? b->aheap * 2 : 1024;
		struct rec **a = xmalloc(sizeof(*a) * cap);
		for (long i = 0; i < b->nheap; i++)
			a[i] = RING_AT(b, i);
		free(b->heap);
		b->heap = a;
		b->aheap = cap;
		b->hhead = 0;
	}
	RING_AT(b, b->nheap) = r;
	b->nheap++;
}

struct rec *heap_pop(struct builder *b)
{
	struct rec *top = RING_AT(b, 0);
	b->hhead = (b->hhead + 1) & (b->aheap - 1);
	b->nheap--;
	return top;
}

void reorder_release(struct builder *b, int at_end)
{
	if (b->nwait && !b->seq_known) {
		b->next_seq = b->wait[0]->seq;
		b->seq_known = 1;
	}
	while (b->nwait) {
		struct rec *r = b->wait[0];
		int own = r->has_api || r->type != R_OP; /* a seq of its own, not a made-up one */
		if (own && r->seq == b->next_seq) {
			b->next_seq++;
		} else if (r->seq < b->next_seq) {
			/* late: after its seq was given up (else a repeated seq, accepted as is) */
			if (own && b->gave_up && r->seq >= b->gave_up_first && !b->late++) {
				b->late_seq = r->seq;
				b->late_after = b->next_seq - 1;
			}
		} else if (at_end || b->nwait > REORDER_MAX || b->wait_bytes > REORDER_MAX_BYTES) {
			/* seqs next_seq .. r->seq - 1 are missing: give them up */
			uint64_t n = r->seq - b->next_seq;
			uint64_t *cnt = at_end ? &b->missing : &b->gave_up;
			uint64_t *first = at_end ? &b->missing_first : &b->gave_up_first;
			if (n && !*cnt)
				*first = b->next_seq;
			*cnt += n;
			b->next_seq = r->seq + !own;
			continue;
		} else {
			break;
		}
		struct rec *out = wait_pop(b);
		resolve_record(b, out);
		ring_push(b, out);
	}
	if (b->nheap)
		drain(b, 0);
}

void reorder_warn(struct builder *b)
{
	struct strbuf sb = STRBUF_INIT;
	if (b->gave_up) {
		strbuf_addf(&sb,
		            "records out of order beyond the reorder bound (%d records or %ld MiB "
		            "held): %llu seqs given up from seq %llu",
		            REORDER_MAX, REORDER_MAX_BYTES >> 20, (unsigned long long)b->gave_up,
		            (unsigned long long)b->gave_up_first);
		if (b->late)
			strbuf_addf(&sb,
			            ", %ld records came later (the first: seq %llu after %llu)",
			            b->late, (unsigned long long)b->late_seq,
			            (unsigned long long)b->late_after);
	}
	if (b->missing)
		strbuf_addf(&sb, "%s%llu seqs never arrived (the first: seq %llu)",
		            sb.len ? "; " : "", (unsigned long long)b->missing,
		            (unsigned long long)b->missing_first);
	if (!sb.len)
		return;
	strbuf_adds(&sb, "; data flow may be wrong there");
	warning("'%s': %s", b->file, sb.buf);
	b->ti->warnings = xrealloc(b->ti->warnings, sizeof(char *) * (b->ti->nwarnings + 1));
	b->ti->warnings[b->ti->nwarnings++] = sb.buf;
}

/*
 * Text from a trace (kernel names, source paths and functions, NVTX ranges, argv) ends up in
 * HTML, SVG, DOT and JSON: control characters (a trace's "\u0001", ESC, DEL) are not valid
 * there and never part of a real name, so the copy has each replaced by '?'. A copy is at most
 * TEXT_MAX bytes (cut at a character boundary, "..." appended): the longest C++ kernel names
 * are a few KiB, and a 10 MB name would otherwise be carried into every output several times.
 */
#define TEXT_MAX 65536

static void text_clean(char *s)
{
	for (unsigned char *p = (unsigned char *)s; p && *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static char *text_dup(const char *s)
{
	size_t n = strlen(s);
	if (n <= TEXT_MAX) {
		char *d = xstrdup(s);
		text_clean(d);
		return d;
	}
	n = TEXT_MAX;
	while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	char *d = xmalloc(n + 4);
	memcpy(d, s, n);
	memcpy(d + n, "...", 4);
	text_clean(d);
	return d;
}

/* ---------- records ---------- */

/* A reference to a str or site id no record defined (yet): counted, warned about once. */
static void unknown_ref(struct builder *b)
{
	if (!b->unknown_refs++)
		b->unknown_line = b->line;
}

/*
 * Times (start, end, ts) are ns in 0..TIME_MAX (2^62 ns: the year 2116), so that the difference
 * of any two of them, which the later stages take (durations, step times, gaps), fits int64.
 * One outside is an error at its line (docs/trace-format.md); returns 1 then, else 0.
 */
#define TIME_MAX (INT64_C(1) << 62)

static int time_bad(struct builder *b, const char *what, const char *key, int64_t t)
{
	if (t >= 0 && t <= TIME_MAX)
		return 0;
	error_at(b->file, b->line, "%s record: '%s' is out of range (%lld; times are 0..2^62 ns)",
	         what, key, (long long)t);
	return 1;
}

static int id_ok(struct builder *b, int64_t id, const char *what)
{
	if (id < 0 || id > MAX_ID)
		return error_at(b->file, b->line, "%s id %lld out of range", what, (long long)id);
	return 0;
}

static int parse_header(struct builder *b, const cJSON *rec)
{
	int64_t fmt;
	double fd;
	if (!get_i64(rec, "format", &fmt) || !get_num(rec, "format", &fd))
		return bad(b, "header", "format");
	if (fd == (double)fmt && fmt > 1)
		return error_at(
		    b->file, b->line,
		    "trace format %lld is newer than this aicprof reads (1); upgrade aicprof",
		    (long long)fmt);
	if (fd != 1) {
		char num[32];
		for (int prec = 1; prec <= 17; prec++) /* the shortest text that reads back as fd */
			if (snprintf(num, sizeof(num), "%.*g", prec, fd) && strtod(num, NULL) == fd)
				break;
		return error_at(b->file, b->line,
		                "trace format %s is not a version this aicprof reads (1)", num);
	}
	struct trace_info *ti = b->ti;
	int64_t v;
	if (get_i64(rec, "pid", &v))
		ti->pid = (long)v;
	ti->rank = get_i64(rec, "rank", &v) ? (long)v : -1;
	const cJSON *cwd = field(rec, "cwd");
	if (cJSON_IsString(cwd)) {
		free(ti->cwd);
		ti->cwd = xstrdup(cwd->valuestring);
	}
	const cJSON *argv = field(rec, "argv");
	struct strbuf sb = STRBUF_INIT;
	const cJSON *a;
	cJSON_ArrayForEach(a, argv)
	{
		if (!cJSON_IsString(a))
			continue;
		if (sb.len)
			strbuf_adds(&sb, " ");
		strbuf_adds(&sb, a->valuestring);
	}
	free(ti->program);
	text_clean(sb.buf);
	ti->program = sb.buf ? sb.buf : xstrdup("");
	const cJSON *devs = field(rec, "devices");
	const cJSON *d0 = cJSON_IsArray(devs) ? cJSON_GetArrayItem(devs, 0) : NULL;
	if (cJSON_IsObject(d0) && b->dev && !b->dev->name) {
		const char *nm = get_str(d0, "name"), *cc = get_str(d0, "cc");
		b->dev->name = text_dup(nm ? nm : "unknown");
		snprintf(b->dev->cc, sizeof(b->dev->cc), "%s", cc ? cc : "");
		text_clean(b->dev->cc);
		double x;
		if (get_num(d0, "sm_count", &x) && x >= 0 && x <= 1e6)
			b->dev->sm_count = (int)x;
		if (get_num(d0, "peak_bw_gbs", &x) && x > 0)
			b->dev->peak_bw_gbs = x;
		else if (get_num(d0, "mem_clock_khz", &x)) {
			double bus;
			if (get_num(d0, "bus_width_bits", &bus))
				b->dev->peak_bw_gbs = 2.0 * x * 1e3 * bus / 8 / 1e9;
		}
		device_peaks(b->dev);
	}
	return 0;
}

/* The index of r's pointer at word offset w of the parameter among p[first..r->nptr), or -1. */
static int ptr_at(const struct rec *r, int first, long w)
{
	for (int k = first; k < r->nptr; k++)
		if (r->p[k].word == w)
			return k;
	return -1;
}

/* Whether word offset w of the parameter is one of r's pointers p[first..r->nptr). */
static int ptr_word(const struct rec *r, int first, long w)
{
	return ptr_at(r, first, w) >= 0;
}

/*
 * A strided loop's closure bytes (the trace's "x", hex), whose pointers are r->p[first..
 * r->nptr): its offset calculator into r->oc, when one is there, its sizes' product the
 * loop's N (parameter 0, an int, already read into r->sp). The operand count is the
 * length of the data array, the run of pointer words just after the calculator (8-aligned)
 * or just before it, with no pointer word past either end of the run: for each count the
 * decoder tries, the run must be exactly that long where that count's calculator ends.
 * Nothing is kept when no count fits (a closure of another layout, a count the data array
 * does not confirm).
 */
static void parse_closure(struct rec *r, const char *hex, int first)
{
	long numel = 0;
	for (int k = 0; k < r->nsp; k++)
		if (r->sp[k].arg == 0 && r->sp[k].size == 4)
			numel = (int32_t)r->sp[k].raw;
	uint8_t x[4096];
	long n = numel > 0 && !r->oc ? offcalc_hex(hex, x, sizeof(x)) : -1;
	if (n <= 0)
		return;
	for (int k = 1; k <= OFFCALC_ARGS; k++) {
		struct offcalc oc;
		if (offcalc_decode(x, (size_t)n, k, numel, &oc))
			continue;
		long end = (oc.at + (long)offcalc_bytes(k) + 7) & ~7L, beg = oc.at - 8L * k;
		int after = 1, before = beg >= 0 && oc.at % 8 == 0;
		for (int j = 0; j < k; j++) {
			after &= ptr_word(r, first, end + 8L * j);
			before = before && ptr_word(r, first, beg + 8L * j);
		}
		after &= !ptr_word(r, first, end + 8L * k);
		before &= !ptr_word(r, first, beg - 8);
		if (after || before) {
			/* the operands' pointers: the data array, in operand order */
			for (int j = 0; j < k; j++) {
				const struct ptrarg *pa =
				    &r->p[ptr_at(r, first, (after ? end : beg) + 8L * j)];
				oc.alloc[j] = pa->alloc;
				oc.off[j] = pa->off;
			}
			r->oc = xmalloc(sizeof(*r->oc));
			*r->oc = oc;
			return;
		}
	}
}

/* Keeps parameter arg's bytes (hex) as r's scalar parameter of size size, while there is room. */
static void push_param(struct rec *r, double arg, int size, const char *hex)
{
	if (r->nsp < 8)
		r->sp[r->nsp++] =
		    (struct node_param){(short)arg, (unsigned char)size, strtoull(hex, NULL, 16)};
}

static int parse_ptrs(struct builder *b, struct rec *r, const cJSON *rec)
{
	const cJSON *args = field(rec, "args"), *a;
	const cJSON *cal = field(rec, "cal");
	int k = 0;
	cJSON_ArrayForEach(a, args)
	{
		/* one pass over the argument's fields ("i", "o", "n", "v", "w", "a", "x", "p") */
		const cJSON *p = NULL, *e;
		const char *vs = NULL, *as = NULL, *ws = NULL, *xs = NULL;
		double pn = 0, pi = -1;
		for (const cJSON *f = a->child; f; f = f->next) {
			if (!f->string || f->string[1])
				continue;
			switch (f->string[0]) {
			case 'p':
				p = p ? p : f;
				break;
			case 'v':
				vs = cJSON_IsString(f) ? f->valuestring : vs;
				break;
			case 'a':
				as = cJSON_IsString(f) ? f->valuestring : as;
				break;
			case 'w':
				ws = cJSON_IsString(f) ? f->valuestring : ws;
				break;
			case 'x':
				xs = cJSON_IsString(f) ? f->valuestring : xs;
				break;
			case 'n':
				pn = cJSON_IsNumber(f) ? f->valuedouble : pn;
				break;
			case 'i':
				pi = cJSON_IsNumber(f) ? f->valuedouble : pi;
				break;
			}
		}
		if (as && pn >= 128) /* the 8 bytes after a large one's pointers */
			push_param(r, pi, NODE_PARAM_TAIL, as);
		if (!cJSON_IsArray(p) || !p->child) {
			/* scalars: numel is chosen from them in dataflow(), buffers known */
			if (vs && pn >= 1 && pn <= 8)
				push_param(r, pi, (int)pn, vs);
			/* 9 to 12 bytes: the first 8 as size 8, the rest as NODE_PARAM_HIGH */
			if (vs && ws && r->nsp < 7 && pn > 8 && pn <= 12) {
				push_param(r, pi, 8, vs);
				push_param(r, pi, NODE_PARAM_HIGH, ws);
			}
			if (vs && r->nscalars < 4 && (pn == 4 || pn == 8)) {
				int64_t val = (int64_t)strtoull(vs, NULL, 16);
				if (pn == 4)
					val = (int32_t)val;
				if (val > 0)
					r->scalars[r->nscalars++] = (long)val;
			}
			continue;
		}
		int first = r->nptr;
		cJSON_ArrayForEach(e, p)
		{
			if (!cJSON_IsArray(e))
				return error_at(b->file, b->line,
				                "launch record: pointer entry is not an array");
			const cJSON *al = cJSON_GetArrayItem(e, 2), *of = cJSON_GetArrayItem(e, 3);
			if (!cJSON_IsNumber(al))
				return error_at(
				    b->file, b->line,
				    "launch record: pointer entry has no allocation id");
			if (r->nptr == r->aptr) {
				int na = r->aptr * 2;
				struct ptrarg *np = xmalloc(sizeof(*np) * na);
				memcpy(np, r->p, sizeof(*np) * r->nptr);
				if (r->p != r->pin)
					free(r->p);
				r->p = np;
				r->aptr = na;
			}
			struct ptrarg *pa = &r->p[r->nptr++];
			pa->alloc = num_id(al);
			pa->off = num_off(of);
			if (pa->alloc == RESOLVE_OFFLINE) { /* the address, resolved on release */
				const cJSON *ad = cJSON_GetArrayItem(e, 1);
				pa->off =
				    cJSON_IsString(ad) ? strtoull(ad->valuestring, NULL, 16) : 0;
			}
			const cJSON *cf = cJSON_IsArray(cal) ? cJSON_GetArrayItem(cal, k) : NULL;
			pa->cal = cJSON_IsNumber(cf) ? (signed char)cf->valueint : -1;
			pa->fp = 0;
			const cJSON *w = cJSON_GetArrayItem(e, 0);
			pa->arg = pi >= 0 && pi < 32767 ? (short)pi : -1;
			pa->argsize = pn > 0 && pn < 1e9 ? (unsigned)pn : 0;
			pa->word = cJSON_IsNumber(w) && w->valuedouble >= 0 && w->valuedouble < 1e9
			               ? (int)w->valuedouble
			               : 0;
			pa->param = pn == 8 && pi >= 0 && pi < 4096 && cJSON_IsNumber(w) &&
			                    w->valuedouble == 0
			                ? (short)pi
			                : -1;
			k++;
		}
		if (xs)
			parse_closure(r, xs, first);
	}
	return 0;
}

static void join(struct builder *b, struct rec *api, struct rec *act)
{
	api->start = act->start;
	api->end = act->end;
	api->stream = act->stream;
	if (api->kind == NK_KERNEL && api->fn < 0)
		api->fn = act->fn;
	if (!api->grid[0])
		memcpy(api->grid, act->grid, sizeof(api->grid));
	if (!api->block[0])
		memcpy(api->block, act->block, sizeof(api->block));
	if (!api->bytes)
		api->bytes = act->bytes;
	api->joined = 1;
}

static int parse_activity(struct builder *b, const cJSON *rec, int kind, const char *what)
{
	struct rec *r = rec_new(b);
	r->kind = (unsigned char)kind;
	int64_t v;
	if (!get_i64(rec, "c", &r->c)) {
		rec_free(b, r);
		return bad(b, what, "c");
	}
	if (!get_time(b, rec, "start", "\"start\":", &r->start)) {
		rec_free(b, r);
		return bad(b, what, "start");
	}
	if (!get_time(b, rec, "end", "\"end\":", &r->end)) {
		rec_free(b, r);
		return bad(b, what, "end");
	}
	if (time_bad(b, what, "start", r->start) || time_bad(b, what, "end", r->end)) {
		rec_free(b, r);
		return -1;
	}
	if (r->end < r->start) {
		rec_free(b, r);
		return error_at(b->file, b->line, "%s record ends before it starts", what);
	}
	r->stream = get_i64(rec, "stream", &v) ? (int)v : -1;
	if (kind == NK_KERNEL) {
		if (!get_i64(rec, "name", &v)) {
			rec_free(b, r);
			return bad(b, what, "name");
		}
		if (id_ok(b, v, "str") < 0) {
			rec_free(b, r);
			return -1;
		}
		r->fn = (int)v;
		get_dim3(rec, "grid", r->grid);
		get_dim3(rec, "block", r->block);
	}
	if (get_i64(rec, "bytes", &v) && v > 0)
		r->bytes = (uint64_t)v;
	uint64_t p;
	if (hmap_del(&b->pending, (uint64_t)r->c, &p)) {
		join(b, (struct rec *)(uintptr_t)p, r);
		b->unjoined--;
		rec_free(b, r);
		return 0;
	}
	int64_t g = 0;
	if (kind == NK_KERNEL && get_i64(rec, "graph", &g) && g) {
		/* a kernel of a CUDA graph: no launch of its own; enters the stream here */
		r->joined = 1;
		r->seq = b->max_seq;
		heap_push(b, r);
		return 0;
	}
	uint64_t old;
	if (hmap_get(&b->orphans, (uint64_t)r->c, &old))
		rec_free(b, (struct rec *)(uintptr_t)old);
	hmap_put(&b->orphans, (uint64_t)r->c, (uint64_t)(uintptr_t)r);
	return 0;
}

/* Gives a launch's pointer entries the fingerprints of its probe record (fp[0] the count). */
static void probe_attach(struct rec *r, const uint64_t *fp)
{
	for (int k = 0; k < r->nptr && (uint64_t)k < fp[0]; k++)
		r->p[k].fp = fp[k + 1];
}

/*
 * A probe record: {"t":"probe","c":..,"fp":["0x..",..]}. The shim writes it just before its
 * launch record (same thread), so it is kept by correlation id until the launch is parsed; one
 * that comes after its launch is attached while the launch still waits for its activity
 * record, and otherwise ignored.
 */
static int parse_probe(struct builder *b, const cJSON *rec)
{
	int64_t c;
	if (!get_i64(rec, "c", &c))
		return bad(b, "probe", "c");
	const cJSON *fp = cJSON_GetObjectItemCaseSensitive(rec, "fp"), *e;
	if (!cJSON_IsArray(fp))
		return bad(b, "probe", "fp");
	int n = cJSON_GetArraySize(fp);
	uint64_t *v = xmalloc(sizeof(uint64_t) * ((size_t)n + 1));
	v[0] = 0;
	cJSON_ArrayForEach(e, fp)
	{
		char *end = NULL;
		uint64_t h = cJSON_IsString(e) && !strncmp(e->valuestring, "0x", 2)
		                 ? strtoull(e->valuestring, &end, 16)
		                 : 0;
		if (!end || end == e->valuestring + 2 || *end) {
			int at = (int)v[0] + 1;
			free(v);
			return error_at(b->file, b->line,
			                "probe record: fingerprint %d is not a hex string", at);
		}
		v[++v[0]] = h;
	}
	uint64_t p;
	if (hmap_get(&b->pending, (uint64_t)c, &p)) {
		probe_attach((struct rec *)(uintptr_t)p, v);
		free(v);
		return 0;
	}
	if (hmap_del(&b->probes, (uint64_t)c, &p))
		free((void *)(uintptr_t)p);
	hmap_put(&b->probes, (uint64_t)c, (uint64_t)(uintptr_t)v);
	return 0;
}

static int parse_api_op(struct builder *b, const cJSON *rec, int kind, const char *what)
{
	struct rec *r = rec_new(b);
	r->type = R_OP;
	r->kind = (unsigned char)kind;
	r->has_api = 1;
	int64_t v;
	if (!get_i64(rec, "seq", &v)) {
		rec_free(b, r);
		return bad(b, what, "seq");
	}
	r->seq = (uint64_t)v;
	if (!get_i64(rec, "c", &r->c)) {
		rec_free(b, r);
		return bad(b, what, "c");
	}
	if (get_i64(rec, "ts", &r->ts) && time_bad(b, what, "ts", r->ts)) {
		rec_free(b, r);
		return -1;
	}
	r->stream_h = get_hex(rec, "stream");
	if (get_i64(rec, "site", &v) && v >= 0 && v <= MAX_ID) {
		r->site = (int)v;
		if (v >= b->nsites || !b->sites[v].defined)
			unknown_ref(b);
	}
	if (kind == NK_KERNEL) {
		if (!get_i64(rec, "fn", &v)) {
			rec_free(b, r);
			return bad(b, what, "fn");
		}
		if (id_ok(b, v, "str") < 0) {
			rec_free(b, r);
			return -1;
		}
		r->fn = (int)v;
		if (v >= b->nfns || !b->fns[v].name)
			unknown_ref(b);
		get_dim3(rec, "grid", r->grid);
		get_dim3(rec, "block", r->block);
		if (get_i64(rec, "inh", &v) && v == 1)
			r->inh = 1;
		if (parse_ptrs(b, r, rec) < 0) {
			rec_free(b, r);
			return -1;
		}
		uint64_t fpv;
		if (hmap_del(&b->probes, (uint64_t)r->c, &fpv)) {
			probe_attach(r, (uint64_t *)(uintptr_t)fpv);
			free((void *)(uintptr_t)fpv);
		}
	} else {
		if (get_i64(rec, "bytes", &v) && v > 0)
			r->bytes = (uint64_t)v;
		const cJSON *da = field(rec, "dst_alloc");
		const cJSON *sa = field(rec, "src_alloc");
		if (cJSON_IsArray(da) && cJSON_IsNumber(cJSON_GetArrayItem(da, 0))) {
			r->dst_alloc = num_id(cJSON_GetArrayItem(da, 0));
			r->dst_off = r->dst_alloc == RESOLVE_OFFLINE
			                 ? get_hex(rec, "dst")
			                 : num_off(cJSON_GetArrayItem(da, 1));
		}
		if (cJSON_IsArray(sa) && cJSON_IsNumber(cJSON_GetArrayItem(sa, 0))) {
			r->src_alloc = num_id(cJSON_GetArrayItem(sa, 0));
			r->src_off = r->src_alloc == RESOLVE_OFFLINE
			                 ? get_hex(rec, "src")
			                 : num_off(cJSON_GetArrayItem(sa, 1));
		}
	}
	uint64_t p;
	if (hmap_del(&b->orphans, (uint64_t)r->c, &p)) {
		struct rec *act = (struct rec *)(uintptr_t)p;
		join(b, r, act);
		rec_free(b, act);
	} else {
		hmap_put(&b->pending, (uint64_t)r->c, (uint64_t)(uintptr_t)r);
		b->unjoined++;
	}
	heap_push(b, r);
	return 0;
}

static int parse_str(struct builder *b, const cJSON *rec)
{
	int64_t id;
	const char *s = get_str(rec, "s");
	if (!get_i64(rec, "id", &id))
		return bad(b, "str", "id");
	if (!s)
		return field(rec, "s")
		           ? error_at(b->file, b->line, "str record: 's' must be a string")
		           : bad(b, "str", "s");
	if (id_ok(b, id, "str") < 0)
		return -1;
	if (id >= b->nfns) {
		long n = b->nfns ? b->nfns : 64;
		while (n <= id)
			n *= 2;
		b->fns = xrealloc(b->fns, sizeof(*b->fns) * n);
		memset(b->fns + b->nfns, 0, sizeof(*b->fns) * (n - b->nfns));
		b->nfns = n;
	}
	struct fninfo *f = &b->fns[id];
	if (f->name)
		return error_at(b->file, b->line, "str id %lld is defined twice", (long long)id);
	f->name = text_dup(s);
	return 0;
}

/* A site's source: its innermost user frame ("train.py:13"), else its first frame or symbol. */
static int parse_site(struct builder *b, const cJSON *rec)
{
	int64_t id;
	if (!get_i64(rec, "id", &id))
		return bad(b, "site", "id");
	if (id_ok(b, id, "site") < 0)
		return -1;
	if (id >= b->nsites) {
		long n = b->nsites ? b->nsites : 64;
		while (n <= id)
			n *= 2;
		b->sites = xrealloc(b->sites, sizeof(*b->sites) * n);
		memset(b->sites + b->nsites, 0, sizeof(*b->sites) * (n - b->nsites));
		b->nsites = n;
	}
	struct siteinfo *s = &b->sites[id];
	if (s->defined)
		return error_at(b->file, b->line, "site id %lld is defined twice", (long long)id);
	s->defined = 1;
	const cJSON *frames = field(rec, "frames"), *f, *pick = NULL;
	cJSON_ArrayForEach(f, frames)
	{
		const cJSON *u = field(f, "user");
		const char *ff = get_str(f, "file");
		if (!pick)
			pick = f;
		if (cJSON_IsTrue(u)) {
			pick = f;
			break;
		}
		if (ff && strstr(ff, "torch/autograd/"))
			s->autograd = 1;
	}
	if (pick && get_str(pick, "file")) {
		double line = 0;
		if (!get_num(pick, "line", &line) || !(line >= 0 && line <= INT_MAX))
			line = 0;
		s->file = text_dup(get_str(pick, "file"));
		s->line = (int)line;
		const char *fn = get_str(pick, "func");
		s->func = fn ? text_dup(fn) : NULL;
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "%s:%d", s->file, s->line);
		s->source = sb.buf;
		return 0;
	}
	const cJSON *native = field(rec, "native");
	if (symbolize_site(s, native, b->ti->cwd)) /* file:line from the module's debug info */
		return 0;
	cJSON_ArrayForEach(f, native)
	{
		const char *sym = get_str(f, "sym"), *mod = get_str(f, "module");
		if (sym || mod) {
			s->source = text_dup(sym ? sym : mod);
			s->func = sym ? text_dup(sym) : NULL;
			break;
		}
	}
	return 0;
}

static int parse_misc(struct builder *b, const cJSON *rec, int type, const char *what)
{
	struct rec *r = rec_new(b);
	r->type = type;
	int64_t v;
	if (!get_i64(rec, "seq", &v)) {
		rec_free(b, r);
		return bad(b, what, "seq");
	}
	r->seq = (uint64_t)v;
	if (get_i64(rec, "tid", &v))
		r->tid = (long)v;
	switch (type) {
	case R_ALLOC:
		if (!get_i64(rec, "size", &v) || v < 0) {
			rec_free(b, r);
			return bad(b, what, "size");
		}
		{
			const char *api = get_str(rec, "api");
			if (api && !strcmp(api, "c10::CachingAllocator"))
				b->allocs_block++;
			else if (api && (!strncmp(api, "cuMemAllocAsync", 15) ||
			                 !strncmp(api, "cuMemAllocFromPool", 18)))
				b->allocs_async++;
			else if (api && !strcmp(api, "cuMemAlloc_v2"))
				b->allocs_plain++;
		}
		r->size = (uint64_t)v;
		/* fall through */
	case R_FREE:
		if (!get_i64(rec, "id", &r->id)) {
			rec_free(b, r);
			return bad(b, what, "id");
		}
		r->ptr = get_hex(rec, "ptr");
		{
			const char *api = get_str(rec, "api");
			r->inner = type == R_ALLOC && api && !strcmp(api, "c10::CachingAllocator");
		}
		break;
	case R_PUSH:
	case R_RSTART: {
		r->key = nvtx_rule_key(&b->nvtx, get_str(rec, "text"));
		if (type == R_RSTART && !get_i64(rec, "id", &r->id)) {
			rec_free(b, r);
			return bad(b, what, "id");
		}
		break;
	}
	case R_REND:
		if (!get_i64(rec, "id", &r->id)) {
			rec_free(b, r);
			return bad(b, what, "id");
		}
		break;
	case R_EVREC:
	case R_SWAIT:
		r->handle = get_hex(rec, "event");
		r->stream_h = get_hex(rec, "stream");
		break;
	}
	heap_push(b, r);
	return 0;
}

int builder_record(struct builder *b, const cJSON *rec, const char *raw, size_t rawlen, long line)
{
	b->line = line;
	b->raw = raw;
	b->rawlen = rawlen;
	index_fields(rec);
	const char *t = get_str(rec, "t");
	if (!t)
		return error_at(b->file, line, "record has no type 't'");
	if (!b->have_header) {
		if (strcmp(t, "header")) {
			struct strbuf sb = STRBUF_INIT;
			strbuf_add_esc(&sb, t, 64);
			error_at(b->file, line, "first record is not a header (it is '%s')",
			         sb.buf);
			strbuf_release(&sb);
			return -1;
		}
		b->have_header = 1;
		return parse_header(b, rec);
	}
	int r = 0;
	uint64_t arrivals = b->arrivals;
	switch (t[0]) {
	case 'l':
		if (!strcmp(t, "launch"))
			r = parse_api_op(b, rec, NK_KERNEL, "launch");
		break;
	case 'k':
		if (!strcmp(t, "kernel")) {
			r = parse_activity(b, rec, NK_KERNEL, "kernel");
			b->ti->kernels++;
		}
		break;
	case 'm':
		if (!strcmp(t, "memcpy"))
			r = parse_api_op(b, rec, NK_COPY, "memcpy");
		else if (!strcmp(t, "memset"))
			r = parse_api_op(b, rec, NK_SET, "memset");
		break;
	case 'c':
		if (!strcmp(t, "copy"))
			r = parse_activity(b, rec, NK_COPY, "copy");
		break;
	case 's':
		if (!strcmp(t, "str"))
			r = parse_str(b, rec);
		else if (!strcmp(t, "site"))
			r = parse_site(b, rec);
		else if (!strcmp(t, "set"))
			r = parse_activity(b, rec, NK_SET, "set");
		else if (!strcmp(t, "stream_wait"))
			r = parse_misc(b, rec, R_SWAIT, "stream_wait");
		break;
	case 'a':
		if (!strcmp(t, "alloc"))
			r = parse_misc(b, rec, R_ALLOC, "alloc");
		break;
	case 'f':
		if (!strcmp(t, "free"))
			r = parse_misc(b, rec, R_FREE, "free");
		break;
	case 'p':
		if (!strcmp(t, "push"))
			r = parse_misc(b, rec, R_PUSH, "push");
		else if (!strcmp(t, "pop"))
			r = parse_misc(b, rec, R_POP, "pop");
		else if (!strcmp(t, "probe"))
			r = parse_probe(b, rec);
		break;
	case 'r':
		if (!strcmp(t, "range_start"))
			r = parse_misc(b, rec, R_RSTART, "range_start");
		else if (!strcmp(t, "range_end"))
			r = parse_misc(b, rec, R_REND, "range_end");
		break;
	case 'e':
		if (!strcmp(t, "event_record"))
			r = parse_misc(b, rec, R_EVREC, "event_record");
		break;
	case 'h':
		if (!strcmp(t, "header"))
			return error_at(b->file, line, "second header record");
		break;
	}
	if (r < 0)
		return -1;
	int64_t seq;
	if (b->arrivals == arrivals && get_i64(rec, "seq", &seq)) {
		/* a record the builder does not use (sync, vmm, coll, ...) holds its seq's place */
		struct rec *k = rec_new(b);
		k->type = R_SKIP;
		k->seq = (uint64_t)seq;
		heap_push(b, k);
	}
	if (b->nwait > REORDER)
		reorder_release(b, 0);
	return 0;
}

struct builder *builder_new(const char *file, struct trace_info *ti, struct device_info *dev)
{
	struct builder *b = xcalloc(1, sizeof(*b));
	b->file = file;
	b->ti = ti;
	b->dev = dev;
	b->locked_key = -1;
	nvtx_rule_init(&b->nvtx);
	b->how = "whole";
	b->rng = 0x853c49e6748fea9bULL;
	hmap_init(&b->pending);
	hmap_init(&b->orphans);
	hmap_init(&b->probes);
	hmap_init(&b->bufs);
	hmap_init(&b->events);
	hmap_init(&b->laststr);
	hmap_init(&b->waits);
	hmap_init(&b->stacks);
	hmap_init(&b->rstarts);
	return b;
}
