/*
 * graph.c - the graph builder: turns a trace's records into the step graph, in bounded memory.
 *
 * How it works, in the order a record travels:
 *  1. Parse: each record is copied into a pooled struct rec (no per-record malloc once warm).
 *     API records (launch, memcpy, memset, alloc, free, NVTX, event_record, stream_wait) carry
 *     `seq` and go into a reorder buffer; activity records (kernel, copy, set) are joined at once
 *     to their API record by correlation id `c` (or parked until it arrives). Kernels from CUDA
 *     graphs have no launch: they enter the op stream where their activity record is read.
 *  2. Sequence: when the buffer holds more than REORDER records, the lowest `seq` leaves it, so
 *     records written out of order by different threads are seen in the order they happened.
 *     Each op gets a global index gi in that order.
 *  3. Data flow: each op's pointer arguments are given roles (calibration flags, then op
 *     semantics, then allocation lifetime, then the conservative rule; see roles()), reads make
 *     edges from the buffer's current version (value) to the op, writes make a new value.
 *  4. Steps: NVTX ranges whose text repeats ("step 3" -> "step #"; the outermost such range)
 *     cut the op stream into steps; without them, the period of the kernel-name sequence does
 *     (find_period()), or the whole run is one step.
 *  5. Fold: a step whose ops all have their GPU times, and whose successor has ended, is folded
 *     into its class (steps with the same kernel sequence): per position duration samples, and
 *     for the class's first steady step a capture of its nodes, values, edges and timeline.
 *     Then its ops, values and edges are released: memory follows the step, not the file.
 */
#include "analyzer/trace.h"
#include "lib/hmap.h"
#include "lib/util.h"

#include <cJSON.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REORDER      4096 /* records the reorder buffer holds before releasing the lowest seq */
#define SAMPLE_CAP   4096 /* duration samples kept per node (reservoir beyond) */
#define MAX_ID       (1L << 20) /* str/site ids above this are refused (tables are indexed by id) */
#define UNLOCKED_CAP 1000000    /* ops held before steps are found: then decide with what is seen */
#define MAX_CLASSES  256
#define PIN          6

enum rtype { R_OP, R_ALLOC, R_FREE, R_PUSH, R_POP, R_RSTART, R_REND, R_EVREC, R_SWAIT };

struct ptrarg {
	int64_t alloc;
	uint64_t off;
	signed char cal;
	uint64_t fp;      /* calibration fingerprint after the launch (probe record), 0 none */
	short param;      /* kernel parameter index; -1 when the pointer is not a whole parameter */
	short arg;        /* index of the parameter that holds it */
	int word;         /* its byte offset inside that parameter */
	unsigned argsize; /* that parameter's size in bytes */
};

struct rec {
	struct rec *next_free;
	uint64_t seq, ord; /* ord: arrival order, breaks ties of seq */
	int type;
	/* ops */
	unsigned char kind, has_api, joined, inh;
	int64_t c, ts, start, end;
	long gi;
	int fn, site, stream;
	uint64_t stream_h, handle;
	int grid[3], block[3];
	long numel;
	long scalars[4]; /* the first scalar arguments, for numel */
	int nscalars;
	struct node_param sp[8]; /* every scalar parameter (first 8), for the group description */
	int nsp;
	uint64_t br, bw;
	int nptr, aptr;
	struct ptrarg *p, pin[PIN];
	uint64_t bytes; /* copies and sets */
	int64_t dst_alloc, src_alloc;
	uint64_t dst_off, src_off;
	/* alloc/free/ranges */
	int64_t id;
	uint64_t size;
	long tid;
	int key;
};

struct fninfo {
	char *name, *full, *shortn;
	struct op_sem sem;
	int classified;
	/* calibration: per pointer position, 1 changed, 0 unchanged, -1 unknown */
	signed char *cal;
	int ncal;
	/* from the demangled signature: per parameter 1 'T*', 2 'const T*', 0 not a pointer */
	signed char *sig;
	int nsig, sig_done;
	enum dtype sig_dtype; /* element type of the first pointer parameter */
};

struct siteinfo {
	char *source, *file, *func;
	int line;
	int defined;  /* a site record with this id was read */
	int autograd; /* a frame inside the user's line is torch's autograd (backward()) */
};

struct buf {
	int64_t id;
	uint64_t size;
	long vid;    /* current value, -1 none */
	long writer; /* gi of the current value's writer, -1 none */
	enum edge_how how;
	int written;
};

struct val {
	long vid;
	long writer, created; /* writer gi (-1 external), gi at creation */
	int64_t buffer;
	uint64_t size, bw;
	enum edge_how how;
	long dead; /* gi of the op that overwrote it, or the next gi at free; -1 alive */
	long *readers;
	uint64_t *rbytes;
	int nr, ar;
};

struct iedge {
	long from, to, vid;
	uint64_t bytes, size;
	int64_t buffer;
	enum edge_how how;
};

struct step {
	long b, e;
	int cls;
	double us;
};

struct range {
	int key, depth;
	long b, e;
};

struct possamp {
	float *s;
	long n;
	float min, max;
};

/* A position's fingerprints of one pointer entry over the steps of its class (probe records) */
struct fpstate {
	uint64_t first;
	unsigned short steps;
	unsigned char differ;
};

struct cls {
	uint64_t hash;
	int len;
	int *fns;
	long nsteps, first_step;
	struct possamp *ps;
	struct fpstate *fp; /* len x NODE_FP, allocated at the first fingerprint */
	int captured; /* 0 none, 1 first occurrence, 2 a steady one */
	long cap_step;
	struct node *nodes;
	struct value *values;
	int nvalues;
	struct edge *edges;
	int nedges;
	struct tl_event *tl;
	int ntl;
	int64_t tl_t0;
	uint64_t seq_end; /* seq of the first op after the captured step, UINT64_MAX none */
};

/* A growable ring of pointers/structs indexed by a monotonic number. */
#define DEQ(T)                                                                                     \
	struct {                                                                                   \
		T *a;                                                                              \
		long base, n, cap, head;                                                           \
	}
#define DEQ_AT(d, i) ((d).a[((d).head + ((i) - (d).base)) & ((d).cap - 1)])

struct builder {
	const char *file;
	struct trace_info *ti;
	struct device_info *dev;
	long line;
	int have_header;
	long unknown_refs,
	    unknown_line; /* references to undefined str/site ids, the first's line */
	const char *raw;  /* the current line's text */
	size_t rawlen;

	struct rec *pool;
	struct rec **heap;
	long nheap, aheap, hhead; /* the reorder buffer: a sorted ring */
	uint64_t last_seq;        /* of the last record out of the heap */
	uint64_t max_seq;         /* the highest seq read */
	uint64_t arrivals;
	int warned_order;

	struct fninfo *fns;
	long nfns;
	struct siteinfo *sites;
	long nsites;

	struct hmap pending; /* c -> rec* (launch/memcpy/memset waiting for activity) */
	struct hmap orphans; /* c -> rec* (activity waiting for its API record) */
	struct hmap probes;  /* c -> uint64_t* (probe fingerprints, [0] the count) */
	struct hmap bufs;    /* alloc id -> buf* */
	struct hmap events;  /* event handle -> gi+1 of last op on its stream */
	struct hmap laststr; /* stream handle -> gi+1 of its last op */
	struct hmap waits;   /* stream handle -> gi+1 of the op its next op waits for */

	long next_gi, next_vid;
	DEQ(struct rec *) ops;
	DEQ(struct val) vals;
	DEQ(struct iedge) edges;
	long unjoined; /* ops with an API record and no activity yet */

	/* NVTX */
	char **keys;
	int nkeys;
	long *key_count;
	int *key_depth;
	struct hmap stacks; /* tid -> depth */
	struct {
		long tid;
		int key;
		long b;
	} * open;
	int nopen, aopen;
	struct hmap rstarts; /* range id -> (key << 40 | b) */
	struct range *ranges;
	long nranges, aranges;
	int locked_key; /* -1 none */
	const char *how;
	long period, phase, next_boundary;

	struct step *steps;
	long nsteps, asteps, folded;
	long last_step_end;
	struct cls *classes;
	int nclasses;
	long outside;
	uint64_t rng;
};

/* ---------- small helpers ---------- */

#define DEQ_PUSH(d, v)                                                                             \
	do {                                                                                       \
		if ((d).n == (d).cap) {                                                            \
			long nc = (d).cap ? (d).cap * 2 : 1024;                                    \
			void *na = xmalloc(sizeof(*(d).a) * nc);                                   \
			for (long _i = 0; _i < (d).n; _i++)                                        \
				memcpy((char *)na + _i * sizeof(*(d).a),                           \
				       &(d).a[((d).head + _i) & ((d).cap - 1)], sizeof(*(d).a));   \
			free((d).a);                                                               \
			(d).a = na;                                                                \
			(d).cap = nc;                                                              \
			(d).head = 0;                                                              \
		}                                                                                  \
		(d).a[((d).head + (d).n) & ((d).cap - 1)] = (v);                                   \
		(d).n++;                                                                           \
	} while (0)
#define DEQ_POP(d)                                                                                 \
	do {                                                                                       \
		(d).head = ((d).head + 1) & ((d).cap - 1);                                         \
		(d).n--;                                                                           \
		(d).base++;                                                                        \
	} while (0)

const char *edge_how_name(enum edge_how h)
{
	static const char *n[] = {"fresh-alloc",  "semantics",    "calibrated",
	                          "conservative", "stream-order", "event"};
	return (unsigned)h < ARRAY_SIZE(n) ? n[h] : "conservative";
}

const char *node_kind_name(enum node_kind k)
{
	return k == NK_COPY ? "copy" : k == NK_SET ? "set" : "kernel";
}

/*
 * Field lookup: cJSON finds a key by a linear scan with strcmp, ten times a record. Instead the
 * current record's top-level fields are indexed once (index_fields()), by a switch on the key,
 * and field() answers from that index; other objects fall back to cJSON's lookup. The first of
 * duplicate keys wins, as with cJSON.
 */
enum fkey {
	F_T,
	F_SEQ,
	F_TS,
	F_TID,
	F_C,
	F_FN,
	F_GRID,
	F_BLOCK,
	F_STREAM,
	F_SITE,
	F_ARGS,
	F_CAL,
	F_START,
	F_END,
	F_NAME,
	F_BYTES,
	F_GRAPH,
	F_DST_ALLOC,
	F_SRC_ALLOC,
	F_ID,
	F_SIZE,
	F_TEXT,
	F_EVENT,
	F_S,
	F_FORMAT,
	F__N
};

static int key_id(const char *k)
{
	switch (k[0]) {
	case 't':
		return !k[1]                ? F_T
		       : !strcmp(k, "ts")   ? F_TS
		       : !strcmp(k, "tid")  ? F_TID
		       : !strcmp(k, "text") ? F_TEXT
		                            : -1;
	case 's':
		return !k[1]                     ? F_S
		       : !strcmp(k, "seq")       ? F_SEQ
		       : !strcmp(k, "stream")    ? F_STREAM
		       : !strcmp(k, "site")      ? F_SITE
		       : !strcmp(k, "start")     ? F_START
		       : !strcmp(k, "size")      ? F_SIZE
		       : !strcmp(k, "src_alloc") ? F_SRC_ALLOC
		                                 : -1;
	case 'c':
		return !k[1] ? F_C : !strcmp(k, "cal") ? F_CAL : -1;
	case 'f':
		return !strcmp(k, "fn") ? F_FN : !strcmp(k, "format") ? F_FORMAT : -1;
	case 'g':
		return !strcmp(k, "grid") ? F_GRID : !strcmp(k, "graph") ? F_GRAPH : -1;
	case 'b':
		return !strcmp(k, "block") ? F_BLOCK : !strcmp(k, "bytes") ? F_BYTES : -1;
	case 'a':
		return !strcmp(k, "args") ? F_ARGS : -1;
	case 'e':
		return !strcmp(k, "end") ? F_END : !strcmp(k, "event") ? F_EVENT : -1;
	case 'n':
		return !strcmp(k, "name") ? F_NAME : -1;
	case 'd':
		return !strcmp(k, "dst_alloc") ? F_DST_ALLOC : -1;
	case 'i':
		return !strcmp(k, "id") ? F_ID : -1;
	}
	return -1;
}

static const cJSON *idx_rec;
static const cJSON *fidx[F__N];

static void index_fields(const cJSON *rec)
{
	memset(fidx, 0, sizeof(fidx));
	idx_rec = rec;
	for (const cJSON *it = rec->child; it; it = it->next) {
		if (!it->string)
			continue;
		int id = key_id(it->string);
		if (id >= 0 && !fidx[id])
			fidx[id] = it;
	}
}

static const cJSON *field(const cJSON *o, const char *k)
{
	if (o == idx_rec && o) {
		int id = key_id(k);
		if (id >= 0)
			return fidx[id];
	}
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static int get_num(const cJSON *o, const char *k, double *v)
{
	const cJSON *x = field(o, k);
	if (!cJSON_IsNumber(x))
		return 0;
	*v = x->valuedouble;
	return 1;
}

static int get_i64(const cJSON *o, const char *k, int64_t *v)
{
	const cJSON *x = field(o, k);
	if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || fabs(x->valuedouble) > 9.2e18)
		return 0;
	*v = (int64_t)x->valuedouble;
	return 1;
}

/*
 * cJSON keeps numbers as doubles, which round ns timestamps (~1.7e18) to 256 ns: GPU times are
 * read again, exactly, from the line's text. Falls back to the double when the key is not
 * found as written by the shim ("start":123).
 */
static int get_time(const struct builder *b, const cJSON *o, const char *key, const char *pat,
                    int64_t *v)
{
	if (!get_i64(o, key, v))
		return 0;
	const char *p = memmem(b->raw, b->rawlen, pat, strlen(pat));
	if (p) {
		p += strlen(pat);
		while (p < b->raw + b->rawlen && *p == ' ')
			p++;
		char *end;
		long long x = strtoll(p, &end, 10);
		if (end > p && (*end == ',' || *end == '}' || *end == ' ') && llabs(x - *v) < 4096)
			*v = x;
	}
	return 1;
}

static const char *get_str(const cJSON *o, const char *k)
{
	const cJSON *x = field(o, k);
	return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* "0x7f3a00000000" -> number; 0 when absent or not hex. */
static uint64_t get_hex(const cJSON *o, const char *k)
{
	const char *s = get_str(o, k);
	if (!s) {
		int64_t v;
		return get_i64(o, k, &v) ? (uint64_t)v : 0;
	}
	return strtoull(s, NULL, 16);
}

/*
 * An allocation id and an offset in it from a JSON number, converted only when in range (a
 * double outside int64's range converted to an integer is undefined behaviour): ids outside it
 * are -1 (no known allocation), offsets outside it or negative are 0.
 */
static int64_t num_id(const cJSON *x)
{
	return cJSON_IsNumber(x) && fabs(x->valuedouble) <= 9e18 ? (int64_t)x->valuedouble : -1;
}

static uint64_t num_off(const cJSON *x)
{
	return cJSON_IsNumber(x) && x->valuedouble > 0 && x->valuedouble <= 9e18
	           ? (uint64_t)x->valuedouble
	           : 0;
}

static void get_dim3(const cJSON *o, const char *k, int *d)
{
	const cJSON *a = field(o, k);
	for (int i = 0; i < 3; i++) {
		const cJSON *x = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, i) : NULL;
		d[i] = cJSON_IsNumber(x) ? x->valueint : 0;
	}
}

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

static void rec_free(struct builder *b, struct rec *r)
{
	r->next_free = b->pool;
	b->pool = r;
}

/* ---------- the reorder buffer ---------- */

static inline int before(const struct rec *a, const struct rec *b)
{
	return a->seq < b->seq || (a->seq == b->seq && a->ord < b->ord);
}

/*
 * Records kept sorted by (seq, arrival) in a ring: the trace is nearly in seq order, so a new
 * record lands at the tail after a step or two back, and the lowest leaves from the head in
 * O(1). A record far out of order costs a shift of at most the buffer (REORDER records).
 */
#define RING_AT(b, i) ((b)->heap[((b)->hhead + (i)) & ((b)->aheap - 1)])

static void heap_push(struct builder *b, struct rec *r)
{
	r->ord = b->arrivals++;
	if (r->seq > b->max_seq)
		b->max_seq = r->seq;
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
	long i = b->nheap++;
	while (i > 0 && before(r, RING_AT(b, i - 1))) {
		RING_AT(b, i) = RING_AT(b, i - 1);
		i--;
	}
	RING_AT(b, i) = r;
}

static struct rec *heap_pop(struct builder *b)
{
	struct rec *top = RING_AT(b, 0);
	b->hhead = (b->hhead + 1) & (b->aheap - 1);
	b->nheap--;
	return top;
}

/* ---------- strings, sites, kernel names ---------- */

static struct fninfo *fn_get(struct builder *b, int id)
{
	if (id < 0 || id >= b->nfns || !b->fns[id].name)
		return NULL;
	struct fninfo *f = &b->fns[id];
	if (!f->classified) {
		f->classified = 1;
		sem_classify(f->name, &f->sem);
		f->full = demangle(f->name);
		f->shortn = short_name(f->full);
	}
	return f;
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

static int key_intern(struct builder *b, const char *text)
{
	/* a range without text names nothing (NCCL pushes such ranges around its calls, on the
	 * backward thread of a DDP job): never a step */
	const char *t = text;
	while (t && isspace((unsigned char)*t))
		t++;
	if (!t || !*t)
		return -1;
	/* digits runs become '#': "step 3" and "step 14" are one key */
	struct strbuf sb = STRBUF_INIT;
	for (const char *p = text; *p; p++) {
		if (isdigit((unsigned char)*p)) {
			strbuf_adds(&sb, "#");
			while (isdigit((unsigned char)p[1]))
				p++;
		} else {
			strbuf_add(&sb, p, 1);
		}
	}
	if (!sb.buf)
		strbuf_adds(&sb, "");
	for (int i = 0; i < b->nkeys; i++)
		if (!strcmp(b->keys[i], sb.buf)) {
			strbuf_release(&sb);
			return i;
		}
	if (b->nkeys >= 4096) {
		strbuf_release(&sb);
		return -1;
	}
	b->keys = xrealloc(b->keys, sizeof(char *) * (b->nkeys + 1));
	b->key_count = xrealloc(b->key_count, sizeof(long) * (b->nkeys + 1));
	b->key_depth = xrealloc(b->key_depth, sizeof(int) * (b->nkeys + 1));
	b->keys[b->nkeys] = sb.buf;
	b->key_count[b->nkeys] = 0;
	b->key_depth[b->nkeys] = 1 << 20;
	return b->nkeys++;
}

/* ---------- data flow ---------- */

static struct val *val_get(struct builder *b, long vid)
{
	if (vid < b->vals.base || vid >= b->vals.base + b->vals.n)
		return NULL;
	return &DEQ_AT(b->vals, vid);
}

static uint64_t touch_bytes(const struct rec *o, const struct buf *bf, uint64_t off, size_t esize)
{
	uint64_t n = bf->size > off ? bf->size - off : 0;
	if (o->numel > 0 && esize && (uint64_t)o->numel * esize < n)
		n = (uint64_t)o->numel * esize;
	return n;
}

static long new_value(struct builder *b, struct buf *bf, long writer, uint64_t size,
                      enum edge_how how, long now)
{
	struct val v = {0};
	v.vid = b->next_vid++;
	v.writer = writer;
	v.created = now;
	v.buffer = bf->id;
	v.size = size;
	v.bw = writer >= 0 ? size : 0;
	v.how = how;
	v.dead = -1;
	DEQ_PUSH(b->vals, v);
	return v.vid;
}

static void do_read(struct builder *b, struct rec *o, struct buf *bf, uint64_t bytes,
                    enum edge_how rhow)
{
	if (bf->vid < 0) /* read before any write seen: a value from before the trace */
		bf->vid = new_value(b, bf, -1, bf->size, rhow, o->gi);
	struct val *v = val_get(b, bf->vid);
	if (v) {
		if (v->nr == v->ar) {
			v->ar = v->ar ? v->ar * 2 : 4;
			v->readers = xrealloc(v->readers, sizeof(long) * v->ar);
			v->rbytes = xrealloc(v->rbytes, sizeof(uint64_t) * v->ar);
		}
		v->readers[v->nr] = o->gi;
		v->rbytes[v->nr++] = bytes;
	}
	struct iedge e = {bf->writer,
	                  o->gi,
	                  bf->vid,
	                  bytes,
	                  bf->size,
	                  bf->id,
	                  rhow == HOW_CONSERVATIVE ? HOW_CONSERVATIVE : bf->how};
	DEQ_PUSH(b->edges, e);
	o->br += bytes;
}

static void do_write(struct builder *b, struct rec *o, struct buf *bf, uint64_t bytes,
                     enum edge_how how)
{
	struct val *old = bf->vid >= 0 ? val_get(b, bf->vid) : NULL;
	if (old && old->dead < 0)
		old->dead = o->gi;
	bf->vid = new_value(b, bf, o->gi, bytes, how, o->gi);
	bf->writer = o->gi;
	bf->how = how;
	bf->written = 1;
	o->bw += bytes;
}

/* Kernels whose first scalar is their element count N and whose data array ends the functor. */
static int is_tensor_iterator(const struct op_sem *s)
{
	return s->family == FAM_ELEMENTWISE || s->family == FAM_COPY || s->family == FAM_MEMSET;
}

/*
 * The kernel's C signature from its demangled name: for each parameter, whether it is a
 * pointer to const ("float const*", "const float*": read only) or to non-const ("float*").
 * Names that are not mangled (extern "C") have no parameter list and give nothing.
 */
static void parse_signature(struct fninfo *f)
{
	f->sig_done = 1;
	const char *s = f->full;
	size_t n = s ? strlen(s) : 0;
	if (!n || s[n - 1] != ')')
		return;
	long depth = 0, open = -1;
	for (long i = (long)n - 1; i >= 0; i--) {
		if (s[i] == ')' || s[i] == '>')
			depth++;
		else if (s[i] == '(' || s[i] == '<')
			depth--;
		if (depth == 0) {
			open = i;
			break;
		}
	}
	if (open < 0 || s[open] != '(')
		return;
	const char *p = s + open + 1, *end = s + n - 1;
	while (p < end) {
		const char *q = p;
		int d = 0;
		while (q < end && (d > 0 || *q != ',')) {
			if (*q == '<' || *q == '(' || *q == '[')
				d++;
			else if (*q == '>' || *q == ')' || *q == ']')
				d--;
			q++;
		}
		const char *e = q;
		while (e > p && e[-1] == ' ')
			e--;
		signed char kind = 0;
		if (e > p && e[-1] == '*') {
			kind = 1;
			if (f->sig_dtype == DT_UNKNOWN) {
				static const struct {
					const char *t;
					enum dtype d;
				} ty[] = {{"__nv_bfloat16", DT_BF16}, {"__half", DT_F16},
				          {"double", DT_F64},         {"float", DT_F32},
				          {"long", DT_I64},           {"int", DT_I32}};
				for (size_t t = 0; t < ARRAY_SIZE(ty) && f->sig_dtype == DT_UNKNOWN;
				     t++) {
					const char *hit = strstr(p, ty[t].t);
					if (hit && hit < e)
						f->sig_dtype = ty[t].d;
				}
			}
			for (const char *c = p; c + 5 <= e - 1; c++)
				if (!strncmp(c, "const", 5))
					kind = 2;
		}
		f->sig = xrealloc(f->sig, f->nsig + 1);
		f->sig[f->nsig++] = kind;
		p = q < end ? q + 1 : end;
		while (p < end && *p == ' ')
			p++;
	}
}

/*
 * Roles of a kernel's pointer arguments, strongest rule first:
 *  - calibrated: the shim saw the allocation's bytes change across a probed launch of this
 *    kernel name (cal 1: writes; cal 0: reads), for any launch of that name with as many
 *    pointers;
 *  - semantics: sem_roles_at() knows the family's parameter layout (and which words only look
 *    like addresses: those are no arguments at all); else, for a pointer that is a
 *    whole parameter, the kernel's C signature: 'const T*' is read; 'T*' is written (read
 *    and written unless the allocation is fresh);
 *  - fresh-alloc: an allocation never written before is written by its first toucher;
 *  - conservative: otherwise read; and when the rules above give the kernel no write at all,
 *    one pointer is taken as read and written, so that every kernel produces something: for
 *    ATen's elementwise, copy and fill loops the first pointer of the trailing data array
 *    (output first), else the last pointer (plain CUDA C with no signature: outputs last).
 */
#define HOW_SKIP 255 /* roles(): not an argument */

/*
 * Accuracy measurement (AICPROF_ACCURACY=1, for docs/accuracy.md): the calibration flags are
 * set aside, the roles inferred from the other rules, and each probed pointer tallied against
 * what the shim saw; the table goes to stderr at exit.
 */
static int accuracy = -1;
static long acc[5][2]; /* [W, RW, R, skipped, how=fresh...] x [changed, unchanged] */
static long acc_how[8][2][2]; /* [how][inferred write][changed] */

static void accuracy_report(void)
{
	long agree = 0, total = 0;
	for (int h = 0; h < 8; h++)
		for (int w = 0; w < 2; w++)
			for (int c = 0; c < 2; c++) {
				total += acc_how[h][w][c];
				if (w == c)
					agree += acc_how[h][w][c];
			}
	fprintf(stderr, "accuracy: %ld probed pointers; inferred write = changed for %ld (%.1f%%)\n",
	        total, agree, total ? 100.0 * agree / total : 0);
	static const char *rn[] = {"W", "RW", "R", "not an argument"};
	for (int r = 0; r < 4; r++)
		fprintf(stderr, "accuracy: role %-16s changed %5ld unchanged %5ld\n", rn[r], acc[r][0],
		        acc[r][1]);
	static const char *hn[] = {"fresh-alloc", "semantics", "calibrated", "conservative"};
	for (int h = 0; h < 4; h++)
		fprintf(stderr,
		        "accuracy: by %-12s write&changed %5ld write&unchanged %5ld read&changed %5ld "
		        "read&unchanged %5ld\n",
		        hn[h], acc_how[h][1][1], acc_how[h][1][0], acc_how[h][0][1], acc_how[h][0][0]);
}

static void accuracy_tally(struct builder *b, struct rec *o, struct fninfo *f,
                           const unsigned char *role, const unsigned char *how)
{
	for (int i = 0; i < o->nptr; i++) {
		int c = o->p[i].cal;
		if (c < 0)
			continue;
		if (how[i] == HOW_SKIP) {
			acc[3][c ? 0 : 1]++;
			continue;
		}
		int r = role[i] == ROLE_WRITE ? 0 : role[i] == ROLE_READWRITE ? 1 : 2;
		acc[r][c ? 0 : 1]++;
		int h = how[i] < 8 ? how[i] : 7;
		acc_how[h][(role[i] & ROLE_WRITE) ? 1 : 0][c ? 1 : 0]++;
		if (getenv("AICPROF_ACCURACY_VERBOSE") && !!(role[i] & ROLE_WRITE) != !!c && f) {
			char *sn = short_name(f->name);
			fprintf(stderr, "accuracy: disagree %s arg %d +%u role %d changed %d\n", sn,
			        o->p[i].arg, (unsigned)o->p[i].word, role[i], c);
			free(sn);
		}
	}
}

static void roles(struct builder *b, struct rec *o, struct fninfo *f, unsigned char *role,
                  unsigned char *how)
{
	int n = o->nptr;
	int have_cal = 0;
	if (accuracy < 0) {
		const char *e = getenv("AICPROF_ACCURACY");
		accuracy = e && !strcmp(e, "1");
		if (accuracy)
			atexit(accuracy_report);
	}
	for (int i = 0; i < n && !accuracy; i++)
		if (o->p[i].cal >= 0)
			have_cal = 1;
	if (f && have_cal) {
		if (f->ncal != n) {
			free(f->cal);
			f->cal = xmalloc(n ? n : 1);
			memset(f->cal, -1, n ? n : 1);
			f->ncal = n;
		}
		for (int i = 0; i < n; i++)
			if (o->p[i].cal == 1 || (o->p[i].cal == 0 && f->cal[i] < 0))
				f->cal[i] = o->p[i].cal;
	}
	if (f && !f->sig_done)
		parse_signature(f);
	unsigned char sr[n ? n : 1];
	struct sem_ptr sp[n ? n : 1];
	for (int i = 0; i < n; i++)
		sp[i] = (struct sem_ptr){o->p[i].arg, (unsigned)o->p[i].word, o->p[i].argsize};
	int known = f ? sem_roles_at(f->name, &f->sem, n, sp, sr) : 0;
	int anyw = 0;
	for (int i = 0; i < n; i++) {
		role[i] = ROLE_UNKNOWN;
		how[i] = HOW_CONSERVATIVE;
		if (known && sr[i] == ROLE_UNKNOWN && f->sem.family != FAM_OTHER) {
			how[i] = HOW_SKIP; /* a value that only looks like an address */
		} else if (known && sr[i] != ROLE_UNKNOWN) {
			role[i] = sr[i];
			how[i] = HOW_SEMANTICS;
		} else if (f && o->p[i].param >= 0 && o->p[i].param < f->nsig &&
		           f->sig[o->p[i].param]) {
			struct buf *bf = NULL;
			uint64_t v;
			if (o->p[i].alloc >= 0 && hmap_get(&b->bufs, (uint64_t)o->p[i].alloc, &v))
				bf = (struct buf *)(uintptr_t)v;
			role[i] = f->sig[o->p[i].param] == 2 ? ROLE_READ
			          : bf && !bf->written       ? ROLE_WRITE
			                                     : ROLE_READWRITE;
			how[i] = HOW_SEMANTICS;
		} else if (o->p[i].alloc >= 0) {
			uint64_t v;
			if (hmap_get(&b->bufs, (uint64_t)o->p[i].alloc, &v) &&
			    !((struct buf *)(uintptr_t)v)->written) {
				role[i] = ROLE_WRITE;
				how[i] = HOW_FRESH;
			}
		}
		if (f && f->ncal == n && f->cal[i] >= 0) {
			/* calibration sees whether the bytes changed, not whether they were read
			 * first: a changed allocation is written, and read as well where the
			 * optimizer's semantics say it is read (an in-place tensor list: the
			 * foreach div_/add_ on sqrt's output), else its last writer would look
			 * dead; other families' read-and-write roles are conservative guesses */
			role[i] = f->cal[i] == 0 ? ROLE_READ
			          : f->sem.family == FAM_OPTIMIZER && (role[i] & ROLE_READ)
			              ? ROLE_READWRITE
			              : ROLE_WRITE;
			how[i] = HOW_CALIBRATED;
		}
		if (role[i] & ROLE_WRITE)
			anyw = 1;
	}
	int last = -1;
	for (int i = 0; i < n; i++)
		if (role[i] == ROLE_UNKNOWN && how[i] != HOW_SKIP) {
			role[i] = ROLE_READ;
			if (o->p[i].alloc >= 0)
				last = i;
		}
	if (!anyw && last >= 0 && f && is_tensor_iterator(&f->sem)) {
		/* ATen's loops end their functor with the data array, output first: the first
		 * pointer of the last run of adjacent pointer words */
		int i = n - 1;
		while (i > 0 && o->p[i - 1].arg == o->p[i].arg &&
		       o->p[i - 1].word + 8 == o->p[i].word)
			i--;
		if (o->p[i].alloc >= 0 && role[i] == ROLE_READ && how[i] == HOW_CONSERVATIVE)
			last = i;
	}
	if (!anyw && last >= 0)
		role[last] = ROLE_READWRITE;
	if (accuracy)
		accuracy_tally(b, o, f, role, how);
}

static struct buf *buf_of(struct builder *b, int64_t alloc)
{
	uint64_t v;
	if (alloc < 0 || !hmap_get(&b->bufs, (uint64_t)alloc, &v))
		return NULL;
	return (struct buf *)(uintptr_t)v;
}

static void dataflow(struct builder *b, struct rec *o)
{
	if (o->kind == NK_COPY || o->kind == NK_SET) {
		struct buf *src = buf_of(b, o->src_alloc), *dst = buf_of(b, o->dst_alloc);
		if (src)
			do_read(b, o, src, o->bytes, HOW_SEMANTICS);
		if (dst)
			do_write(b, o, dst, o->bytes, HOW_SEMANTICS);
		return;
	}
	if (!o->nptr)
		return;
	struct fninfo *f = fn_get(b, o->fn);
	int n = o->nptr;
	/* numel: the first scalar no larger than the largest allocation pointed into (so a
	 * float's bits, 0.5f = 0x3f000000, are not taken for N) */
	uint64_t largest = 0;
	for (int i = 0; i < n; i++) {
		struct buf *bf = buf_of(b, o->p[i].alloc);
		if (bf && bf->size > o->p[i].off && bf->size - o->p[i].off > largest)
			largest = bf->size - o->p[i].off;
	}
	int counted = !f || is_tensor_iterator(&f->sem) || f->sem.family == FAM_OTHER;
	for (int i = 0; counted && i < o->nscalars && o->numel < 0; i++)
		if ((uint64_t)o->scalars[i] <= largest)
			o->numel = o->scalars[i];
	unsigned char role[n], how[n];
	roles(b, o, f, role, how);
	/* bytes capped at numel x element size only where N is known to count elements */
	size_t esize = f && is_tensor_iterator(&f->sem) ? dtype_size(f->sem.dtype) : 0;
	/* each allocation once: reads first (an in-place op reads the old version), then writes */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			int want = pass ? ROLE_WRITE : ROLE_READ;
			if (!(role[i] & want))
				continue;
			struct buf *bf = buf_of(b, o->p[i].alloc);
			if (!bf)
				continue;
			int dup = 0;
			for (int j = 0; j < i; j++)
				if (o->p[j].alloc == o->p[i].alloc && (role[j] & want))
					dup = 1;
			if (dup)
				continue;
			uint64_t nb = touch_bytes(o, bf, o->p[i].off, esize);
			if (pass)
				do_write(b, o, bf, nb, (enum edge_how)how[i]);
			else
				do_read(b, o, bf, nb, (enum edge_how)how[i]);
		}
	}
}

/* ---------- steps ---------- */

static void add_step(struct builder *b, long s, long e)
{
	if (e <= s || s < b->last_step_end)
		return;
	ALLOC_GROW(b->steps, b->nsteps, b->asteps);
	b->steps[b->nsteps++] = (struct step){s, e, -1, 0};
	b->last_step_end = e;
}

static void lock_key(struct builder *b, int key)
{
	b->locked_key = key;
	b->how = "nvtx";
	for (long i = 0; i < b->nranges; i++)
		if (b->ranges[i].key == key)
			add_step(b, b->ranges[i].b, b->ranges[i].e);
	free(b->ranges);
	b->ranges = NULL;
	b->nranges = b->aranges = 0;
}

/* The outermost repeated range: lowest depth among keys seen at least twice, then most seen. */
static int best_key(struct builder *b)
{
	int best = -1;
	for (int k = 0; k < b->nkeys; k++) {
		if (b->key_count[k] < 2)
			continue;
		if (best < 0 || b->key_depth[k] < b->key_depth[best] ||
		    (b->key_depth[k] == b->key_depth[best] && b->key_count[k] > b->key_count[best]))
			best = k;
	}
	return best;
}

static void range_closed(struct builder *b, int key, int depth, long s, long e)
{
	if (key < 0)
		return;
	if (b->locked_key >= 0) {
		if (key == b->locked_key)
			add_step(b, s, e);
		return;
	}
	if (b->period > 0)
		return;
	b->key_count[key]++;
	if (depth < b->key_depth[key])
		b->key_depth[key] = depth;
	ALLOC_GROW(b->ranges, b->nranges, b->aranges);
	b->ranges[b->nranges++] = (struct range){key, depth, s, e};
	int best = best_key(b);
	if (best >= 0 && (b->key_depth[best] == 0 || b->key_count[best] >= 3))
		lock_key(b, best);
}

/*
 * The period of the kernel-name sequence of the ops held, found from the gaps between
 * repeated occurrences of the rarest names that repeat, scored by the share of positions i
 * with name[i] == name[i + p]; the smallest period that repeats at least 3 times and scores
 * at least 0.8 wins; without one the run is one step ("whole"). The phase is the offset whose
 * boundaries have the largest CPU gaps between launches (steps are usually separated by data
 * loading, logging, a sync).
 */
static void find_period(struct builder *b)
{
	long n = b->ops.n, base = b->ops.base;
	b->how = "whole";
	b->period = -1;
	if (n >= 4) {
		int *x = xmalloc(sizeof(int) * n);
		for (long i = 0; i < n; i++) {
			struct rec *o = DEQ_AT(b->ops, base + i);
			x[i] = o->kind == NK_KERNEL ? o->fn : -2 - o->kind;
		}
		struct hmap cnt, lastpos, gaps;
		hmap_init(&cnt);
		hmap_init(&lastpos);
		hmap_init(&gaps);
		for (long i = 0; i < n; i++) {
			uint64_t c = 0;
			hmap_get(&cnt, (uint64_t)(int64_t)x[i], &c);
			hmap_put(&cnt, (uint64_t)(int64_t)x[i], c + 1);
		}
		long minc = n + 1;
		for (size_t it = 0;;) {
			uint64_t k, c;
			if (!hmap_next(&cnt, &it, &k, &c))
				break;
			if (c >= 2 && (long)c < minc)
				minc = (long)c;
		}
		/* gaps of every name that occurs at most 2 * minc times */
		for (long i = 0; i < n; i++) {
			uint64_t c, lp;
			hmap_get(&cnt, (uint64_t)(int64_t)x[i], &c);
			if ((long)c > 2 * minc || c < 2)
				continue;
			if (hmap_get(&lastpos, (uint64_t)(int64_t)x[i], &lp)) {
				uint64_t g = i - lp, gc = 0;
				hmap_get(&gaps, g, &gc);
				hmap_put(&gaps, g, gc + 1);
			}
			hmap_put(&lastpos, (uint64_t)(int64_t)x[i], i);
		}
		long bestp = -1;
		for (size_t it = 0;;) {
			uint64_t p, gc;
			if (!hmap_next(&gaps, &it, &p, &gc))
				break;
			if (p < 1 || (long)p > n / 3 || (bestp > 0 && (long)p >= bestp))
				continue;
			long same = 0;
			for (long i = 0; i + (long)p < n; i++)
				same += x[i] == x[i + p];
			if ((double)same >= 0.8 * (double)(n - p))
				bestp = (long)p;
		}
		if (bestp > 0) {
			double *gap = xcalloc(bestp, sizeof(double));
			for (long i = 1; i < n; i++) {
				struct rec *o = DEQ_AT(b->ops, base + i),
				           *q = DEQ_AT(b->ops, base + i - 1);
				gap[i % bestp] += (double)(o->ts - q->ts);
			}
			long ph = 0;
			for (long r = 1; r < bestp; r++)
				if (gap[r] > gap[ph])
					ph = r;
			free(gap);
			b->period = bestp;
			b->phase = base + ph;
			b->next_boundary = b->phase;
			b->how = "periodic";
		}
		hmap_release(&cnt);
		hmap_release(&lastpos);
		hmap_release(&gaps);
		free(x);
	}
}

static void periodic_extend(struct builder *b)
{
	while (b->period > 0 && b->next_boundary + b->period <= b->next_gi) {
		add_step(b, b->next_boundary, b->next_boundary + b->period);
		b->next_boundary += b->period;
	}
}

/* ---------- fold ---------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

static struct rec *op_at(struct builder *b, long gi)
{
	if (gi < b->ops.base || gi >= b->ops.base + b->ops.n)
		return NULL;
	return DEQ_AT(b->ops, gi);
}

static void sample_add(struct builder *b, struct possamp *ps, float v)
{
	if (!ps->n || v < ps->min)
		ps->min = v;
	if (!ps->n || v > ps->max)
		ps->max = v;
	if (!ps->s)
		ps->s = xmalloc(sizeof(float) * SAMPLE_CAP);
	if (ps->n < SAMPLE_CAP) {
		ps->s[ps->n] = v;
	} else {
		b->rng = b->rng * 6364136223846793005ULL + 1442695040888963407ULL;
		uint64_t j = (b->rng >> 11) % (uint64_t)(ps->n + 1);
		if (j < SAMPLE_CAP)
			ps->s[j] = v;
	}
	ps->n++;
}

static void capture(struct builder *b, struct cls *c, struct step *st, long si)
{
	/* drop an earlier capture */
	for (int i = 0; i < c->len && c->nodes; i++) {
		free(c->nodes[i].name);
		free(c->nodes[i].full_name);
		free(c->nodes[i].source);
		free(c->nodes[i].site_file);
		free(c->nodes[i].site_func);
	}
	for (int i = 0; i < c->nvalues; i++)
		free(c->values[i].readers);
	free(c->nodes);
	free(c->values);
	free(c->edges);
	free(c->tl);
	c->nodes = xcalloc(c->len, sizeof(struct node));
	c->values = NULL;
	c->edges = NULL;
	c->nvalues = c->nedges = 0;
	c->tl = xcalloc(c->len, sizeof(struct tl_event));
	c->ntl = 0;
	c->cap_step = si;
	struct rec *next = op_at(b, st->e);
	c->seq_end = next ? next->seq : UINT64_MAX;
	int64_t t0 = INT64_MAX;
	for (long gi = st->b; gi < st->e; gi++) {
		struct rec *o = op_at(b, gi);
		if (o && o->joined && o->start < t0)
			t0 = o->start;
	}
	c->tl_t0 = t0 == INT64_MAX ? 0 : t0;
	for (long gi = st->b; gi < st->e; gi++) {
		struct rec *o = op_at(b, gi);
		struct node *nd = &c->nodes[gi - st->b];
		nd->id = (int)(gi - st->b);
		nd->seq = o->seq;
		nd->kind = (enum node_kind)o->kind;
		nd->stream = o->stream;
		memcpy(nd->grid, o->grid, sizeof(nd->grid));
		memcpy(nd->block, o->block, sizeof(nd->block));
		nd->numel = o->numel;
		memcpy(nd->params, o->sp, sizeof(o->sp));
		nd->nparams = o->nsp;
		nd->bytes_read = o->br;
		nd->bytes_written = o->bw;
		nd->claimed = -1;
		nd->autograd =
		    o->inh || (o->site >= 0 && o->site < b->nsites && b->sites[o->site].autograd);
		nd->nfp = o->nptr < NODE_FP ? o->nptr : NODE_FP;
		for (int k = 0; k < nd->nfp; k++)
			nd->fp_buffer[k] = (long)o->p[k].alloc;
		struct fninfo *f = o->kind == NK_KERNEL ? fn_get(b, o->fn) : NULL;
		if (f) {
			nd->name = xstrdup(f->shortn);
			nd->full_name = xstrdup(f->full);
			nd->sem = f->sem;
			if (!f->sig_done)
				parse_signature(f);
			if (nd->sem.dtype == DT_UNKNOWN)
				nd->sem.dtype = f->sig_dtype;
		} else {
			const char *nm = o->kind == NK_COPY  ? "memcpy"
			                 : o->kind == NK_SET ? "memset"
			                                     : "unknown kernel";
			nd->name = xstrdup(nm);
			nd->full_name = xstrdup(nm);
			sem_classify(nm, &nd->sem);
			if (o->kind == NK_COPY)
				nd->sem.family = FAM_COPY, nd->sem.op = "copy";
			if (o->kind == NK_SET)
				nd->sem.family = FAM_MEMSET, nd->sem.op = "memset";
		}
		if (o->site >= 0 && o->site < b->nsites && b->sites[o->site].source) {
			struct siteinfo *s = &b->sites[o->site];
			nd->source = xstrdup(s->source);
			nd->site_file = s->file ? xstrdup(s->file) : NULL;
			nd->site_func = s->func ? xstrdup(s->func) : NULL;
			nd->site_line = s->line;
		}
		if (o->joined)
			c->tl[c->ntl++] = (struct tl_event){nd->id, o->stream,
			                                    (double)(o->start - c->tl_t0) / 1e3,
			                                    (double)(o->end - o->start) / 1e3};
	}
	/* values: written in the step, or read in it */
	struct hmap idx;
	hmap_init(&idx);
	int avalues = 0, aedges = 0;
	for (long vid = b->vals.base; vid < b->vals.base + b->vals.n; vid++) {
		struct val *v = &DEQ_AT(b->vals, vid);
		if (v->writer < st->b || v->writer >= st->e)
			continue;
		ALLOC_GROW(c->values, c->nvalues, avalues);
		struct value *x = &c->values[c->nvalues];
		memset(x, 0, sizeof(*x));
		x->id = c->nvalues;
		x->buffer = v->buffer;
		x->size = v->size;
		x->writer = (int)(v->writer - st->b);
		x->written_ago = -1;
		x->bytes_written = v->bw;
		x->how = v->how;
		/* a free right after the step's last op (before its range closed) counts */
		x->dead_in_step = v->dead >= 0 && v->dead <= st->e;
		for (int r = 0; r < v->nr; r++) {
			if (v->readers[r] >= st->e) {
				if (v->dead < 0 || v->readers[r] < v->dead)
					x->live_after_step = 1;
				continue;
			}
			x->readers = xrealloc(x->readers, sizeof(int) * (x->nreaders + 1));
			x->readers[x->nreaders++] = (int)(v->readers[r] - st->b);
			x->bytes_read += v->rbytes[r];
		}
		hmap_put(&idx, (uint64_t)vid, (uint64_t)c->nvalues);
		c->nvalues++;
	}
	for (long ei = b->edges.base; ei < b->edges.base + b->edges.n; ei++) {
		struct iedge *e = &DEQ_AT(b->edges, ei);
		if (e->to < st->b || e->to >= st->e)
			continue;
		uint64_t vi = (uint64_t)-1;
		if (e->vid >= 0 && !hmap_get(&idx, (uint64_t)e->vid, &vi)) {
			/* written before the step: an input of the step graph */
			ALLOC_GROW(c->values, c->nvalues, avalues);
			struct value *x = &c->values[c->nvalues];
			memset(x, 0, sizeof(*x));
			x->id = c->nvalues;
			x->buffer = e->buffer;
			x->size = e->size;
			x->writer = -1;
			x->written_ago = e->from >= 0 ? st->b - e->from : -1;
			x->how = e->how;
			vi = (uint64_t)c->nvalues++;
			hmap_put(&idx, (uint64_t)e->vid, vi);
		}
		if (e->vid >= 0) { /* the reader's values in pointer order */
			struct node *rd = &c->nodes[e->to - st->b];
			int dup = 0;
			for (int k = 0; k < rd->nreads; k++)
				dup |= rd->reads[k] == (int)vi;
			if (!dup && rd->nreads < 8)
				rd->reads[rd->nreads++] = (int)vi;
		}
		if (e->vid >= 0 && c->values[vi].writer < 0) {
			struct value *x = &c->values[vi];
			x->readers = xrealloc(x->readers, sizeof(int) * (x->nreaders + 1));
			x->readers[x->nreaders++] = (int)(e->to - st->b);
			x->bytes_read += e->bytes;
			struct val *v = val_get(b, e->vid);
			if (v && v->dead >= 0 && v->dead <= st->e)
				x->dead_in_step = 1;
		}
		if (e->from < st->b || e->from >= st->e || e->from == e->to)
			continue;
		ALLOC_GROW(c->edges, c->nedges, aedges);
		c->edges[c->nedges++] = (struct edge){(int)(e->from - st->b), (int)(e->to - st->b),
		                                      e->vid >= 0 ? (int)vi : -1, e->bytes, e->how};
	}
	hmap_release(&idx);
	for (int i = 0; i < c->nvalues; i++) {
		struct value *x = &c->values[i];
		x->intermediate = x->writer >= 0 && x->nreaders > 0 && !x->live_after_step;
	}
	/* stream order: consecutive nodes on one stream */
	for (int i = 0; i < c->len; i++) {
		for (int j = i + 1; j < c->len; j++)
			if (c->nodes[j].stream == c->nodes[i].stream) {
				ALLOC_GROW(c->edges, c->nedges, aedges);
				c->edges[c->nedges++] = (struct edge){i, j, -1, 0, HOW_STREAM};
				break;
			}
	}
}

static void release_before(struct builder *b, long gi)
{
	while (b->ops.n && b->ops.base < gi) {
		struct rec *o = DEQ_AT(b->ops, b->ops.base);
		if (!o->joined && o->has_api) {
			hmap_del(&b->pending, (uint64_t)o->c, NULL);
			b->unjoined--;
		}
		if (b->locked_key >= 0 || b->period > 0) {
			/* count ops outside every step */
			int in = 0;
			for (long s = b->folded - 1; s >= 0 && s >= b->folded - 2; s--)
				if (o->gi >= b->steps[s].b && o->gi < b->steps[s].e)
					in = 1;
			if (!in)
				b->outside++;
		}
		rec_free(b, o);
		DEQ_POP(b->ops);
	}
	while (b->edges.n && DEQ_AT(b->edges, b->edges.base).to < gi)
		DEQ_POP(b->edges);
	while (b->vals.n && DEQ_AT(b->vals, b->vals.base).created < gi) {
		struct val *v = &DEQ_AT(b->vals, b->vals.base);
		free(v->readers);
		free(v->rbytes);
		DEQ_POP(b->vals);
	}
}

static void fold_step(struct builder *b, long si)
{
	struct step *st = &b->steps[si];
	uint64_t h = 1469598103934665603ULL;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN;
	for (long gi = st->b; gi < st->e; gi++) {
		struct rec *o = op_at(b, gi);
		h = mix(h, ((uint64_t)o->kind << 32) | (uint32_t)o->fn);
		if (o->joined) {
			if (o->start < t0)
				t0 = o->start;
			if (o->end > t1)
				t1 = o->end;
		}
	}
	int len = (int)(st->e - st->b);
	int ci;
	for (ci = 0; ci < b->nclasses; ci++)
		if (b->classes[ci].hash == h && b->classes[ci].len == len)
			break;
	if (ci == b->nclasses) {
		if (b->nclasses == MAX_CLASSES) {
			st->cls = -1;
			st->us = t1 > t0 ? (double)(t1 - t0) / 1e3 : 0;
			return;
		}
		b->classes = xrealloc(b->classes, sizeof(struct cls) * (b->nclasses + 1));
		struct cls *c = &b->classes[b->nclasses++];
		memset(c, 0, sizeof(*c));
		c->hash = h;
		c->len = len;
		c->first_step = si;
		c->ps = xcalloc(len, sizeof(struct possamp));
	}
	struct cls *c = &b->classes[ci];
	st->cls = ci;
	st->us = t1 > t0 ? (double)(t1 - t0) / 1e3 : 0;
	c->nsteps++;
	for (long gi = st->b; gi < st->e; gi++) {
		struct rec *o = op_at(b, gi);
		if (o->joined)
			sample_add(b, &c->ps[gi - st->b],
			           (float)((double)(o->end - o->start) / 1e3));
		for (int k = 0; k < o->nptr && k < NODE_FP; k++) {
			if (!o->p[k].fp)
				continue;
			if (!c->fp)
				c->fp = xcalloc((size_t)len * NODE_FP, sizeof(*c->fp));
			struct fpstate *f = &c->fp[(gi - st->b) * NODE_FP + k];
			if (!f->steps)
				f->first = o->p[k].fp;
			else if (f->first != o->p[k].fp)
				f->differ = 1;
			if (f->steps < USHRT_MAX)
				f->steps++;
		}
	}
	int steady = si > 0 && b->steps[si - 1].cls == ci ? 2 : 1;
	if (c->captured == 0 || (c->captured == 1 && steady == 2)) {
		capture(b, c, st, si);
		c->captured = steady;
	}
}

/* Folds every step that can be: its ops all timed (or at_end), its successor ended. */
static void try_fold(struct builder *b, int at_end)
{
	while (b->folded < b->nsteps) {
		struct step *st = &b->steps[b->folded];
		if (!at_end) {
			if (b->folded + 1 >= b->nsteps)
				return;
			if (b->steps[b->folded + 1].e > b->next_gi)
				return;
			for (long gi = st->b; gi < st->e; gi++) {
				struct rec *o = op_at(b, gi);
				if (!o->joined && o->has_api)
					return;
			}
		}
		fold_step(b, b->folded);
		b->folded++;
		release_before(b, b->folded < b->nsteps ? b->steps[b->folded].b : st->e);
	}
}

/* ---------- sequencing ---------- */

static void process(struct builder *b, struct rec *r)
{
	if (r->seq < b->last_seq && !b->warned_order) {
		b->warned_order = 1;
		warning("'%s': records out of order beyond the reorder window (seq %llu after "
		        "%llu); data flow may be wrong there",
		        b->file, (unsigned long long)r->seq, (unsigned long long)b->last_seq);
	}
	if (r->seq > b->last_seq)
		b->last_seq = r->seq;
	uint64_t v;
	switch (r->type) {
	case R_OP: {
		r->gi = b->next_gi++;
		DEQ_PUSH(b->ops, r);
		uint64_t w;
		if (r->stream_h && hmap_del(&b->waits, r->stream_h, &w)) {
			struct iedge e = {(long)w - 1, r->gi, -1, 0, 0, -1, HOW_EVENT};
			DEQ_PUSH(b->edges, e);
		}
		if (r->stream_h)
			hmap_put(&b->laststr, r->stream_h, (uint64_t)r->gi + 1);
		dataflow(b, r);
		periodic_extend(b);
		if (b->locked_key < 0 && b->period == 0 && b->ops.n >= UNLOCKED_CAP) {
			int k = best_key(b);
			if (k >= 0)
				lock_key(b, k);
			else
				find_period(b);
			periodic_extend(b);
		}
		return; /* ops are freed on release */
	}
	case R_ALLOC: {
		struct buf *bf = xcalloc(1, sizeof(*bf));
		bf->id = r->id;
		bf->size = r->size;
		bf->vid = bf->writer = -1;
		if (hmap_get(&b->bufs, (uint64_t)r->id, &v))
			free((void *)(uintptr_t)v);
		hmap_put(&b->bufs, (uint64_t)r->id, (uint64_t)(uintptr_t)bf);
		break;
	}
	case R_FREE:
		if (hmap_del(&b->bufs, (uint64_t)r->id, &v)) {
			struct buf *bf = (struct buf *)(uintptr_t)v;
			struct val *x = bf->vid >= 0 ? val_get(b, bf->vid) : NULL;
			if (x && x->dead < 0)
				x->dead = b->next_gi;
			free(bf);
		}
		break;
	case R_PUSH: {
		uint64_t d = 0;
		hmap_get(&b->stacks, (uint64_t)r->tid, &d);
		ALLOC_GROW(b->open, b->nopen, b->aopen);
		b->open[b->nopen].tid = r->tid;
		b->open[b->nopen].key = r->key;
		b->open[b->nopen].b = b->next_gi;
		b->nopen++;
		hmap_put(&b->stacks, (uint64_t)r->tid, d + 1);
		break;
	}
	case R_POP: {
		for (int i = b->nopen - 1; i >= 0; i--) {
			if (b->open[i].tid != r->tid)
				continue;
			uint64_t d = 1;
			hmap_get(&b->stacks, (uint64_t)r->tid, &d);
			hmap_put(&b->stacks, (uint64_t)r->tid, d ? d - 1 : 0);
			int key = b->open[i].key;
			long s = b->open[i].b;
			memmove(&b->open[i], &b->open[i + 1],
			        sizeof(*b->open) * (b->nopen - i - 1));
			b->nopen--;
			range_closed(b, key, d ? (int)d - 1 : 0, s, b->next_gi);
			break;
		}
		break;
	}
	case R_RSTART:
		hmap_put(&b->rstarts, (uint64_t)r->id,
		         ((uint64_t)(r->key + 1) << 40) | (uint64_t)b->next_gi);
		break;
	case R_REND:
		if (hmap_del(&b->rstarts, (uint64_t)r->id, &v))
			range_closed(b, (int)(v >> 40) - 1, 0, (long)(v & ((1ULL << 40) - 1)),
			             b->next_gi);
		break;
	case R_EVREC:
		if (hmap_get(&b->laststr, r->stream_h, &v))
			hmap_put(&b->events, r->handle, v);
		else
			hmap_del(&b->events, r->handle, NULL);
		break;
	case R_SWAIT:
		if (hmap_get(&b->events, r->handle, &v))
			hmap_put(&b->waits, r->stream_h, v);
		break;
	}
	rec_free(b, r);
}

static void drain(struct builder *b, long keep)
{
	while (b->nheap > keep)
		process(b, heap_pop(b));
	try_fold(b, 0);
}

/* ---------- records ---------- */

/* A required field of the current record is absent, of the wrong type or out of range. */
static int bad(struct builder *b, const char *what, const char *key)
{
	const cJSON *x = field(idx_rec, key);
	if (!x)
		return error_at(b->file, b->line, "%s record has no '%s'", what, key);
	if (!cJSON_IsNumber(x))
		return error_at(b->file, b->line, "%s record: '%s' must be a number, not %s", what,
		                key,
		                cJSON_IsString(x)   ? "a string"
		                : cJSON_IsArray(x)  ? "an array"
		                : cJSON_IsObject(x) ? "an object"
		                                    : "true, false or null");
	return error_at(b->file, b->line, "%s record: '%s' is out of range (%g)", what, key,
	                x->valuedouble);
}

/* A reference to a str or site id no record defined (yet): counted, warned about once. */
static void unknown_ref(struct builder *b)
{
	if (!b->unknown_refs++)
		b->unknown_line = b->line;
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
	if (!get_i64(rec, "format", &fmt))
		return bad(b, "header", "format");
	if (fmt > 1)
		return error_at(
		    b->file, b->line,
		    "trace format %lld is newer than this aicprof reads (1); upgrade aicprof",
		    (long long)fmt);
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

static int parse_ptrs(struct builder *b, struct rec *r, const cJSON *rec)
{
	const cJSON *args = field(rec, "args"), *a;
	const cJSON *cal = field(rec, "cal");
	int k = 0;
	cJSON_ArrayForEach(a, args)
	{
		/* one pass over the argument's fields ("i", "o", "n", "v", "p") */
		const cJSON *p = NULL, *e;
		const char *vs = NULL;
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
			case 'n':
				pn = cJSON_IsNumber(f) ? f->valuedouble : pn;
				break;
			case 'i':
				pi = cJSON_IsNumber(f) ? f->valuedouble : pi;
				break;
			}
		}
		if (!cJSON_IsArray(p) || !p->child) {
			/* scalars: numel is chosen from them in dataflow(), buffers known */
			if (vs && r->nsp < 8 && pn >= 1 && pn <= 8)
				r->sp[r->nsp++] = (struct node_param){
				    (short)pi, (unsigned char)pn, strtoull(vs, NULL, 16)};
			if (vs && r->nscalars < 4 && (pn == 4 || pn == 8)) {
				int64_t val = (int64_t)strtoull(vs, NULL, 16);
				if (pn == 4)
					val = (int32_t)val;
				if (val > 0)
					r->scalars[r->nscalars++] = (long)val;
			}
			continue;
		}
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
	get_i64(rec, "ts", &r->ts);
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
			r->dst_off = num_off(cJSON_GetArrayItem(da, 1));
		}
		if (cJSON_IsArray(sa) && cJSON_IsNumber(cJSON_GetArrayItem(sa, 0))) {
			r->src_alloc = num_id(cJSON_GetArrayItem(sa, 0));
			r->src_off = num_off(cJSON_GetArrayItem(sa, 1));
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
		r->size = (uint64_t)v;
		/* fall through */
	case R_FREE:
		if (!get_i64(rec, "id", &r->id)) {
			rec_free(b, r);
			return bad(b, what, "id");
		}
		break;
	case R_PUSH:
	case R_RSTART: {
		const char *t = get_str(rec, "text");
		char *clean = text_dup(t ? t : "");
		r->key = key_intern(b, clean);
		free(clean);
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
		if (strcmp(t, "header"))
			return error_at(b->file, line, "first record is not a header (it is '%s')",
			                t);
		b->have_header = 1;
		return parse_header(b, rec);
	}
	int r = 0;
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
	if (b->nheap > REORDER)
		drain(b, REORDER / 2);
	return 0;
}

struct builder *builder_new(const char *file, struct trace_info *ti, struct device_info *dev)
{
	struct builder *b = xcalloc(1, sizeof(*b));
	b->file = file;
	b->ti = ti;
	b->dev = dev;
	b->locked_key = -1;
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

static double quantile(double *v, long n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(double), cmp_double);
	double pos = q * (double)(n - 1);
	long i = (long)pos;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (v[i + 1] - v[i]) * (pos - (double)i);
}

int builder_finish(struct builder *b, struct model *m)
{
	if (!b->have_header)
		return error_at(b->file, b->line ? b->line : 1, "trace has no header");
	drain(b, 0);
	/* activity records whose API record never came: ops of their own, at the end */
	size_t it = 0;
	uint64_t k, v;
	long orphans = 0;
	while (hmap_next(&b->orphans, &it, &k, &v)) {
		struct rec *r = (struct rec *)(uintptr_t)v;
		r->joined = 1;
		r->type = R_OP;
		r->seq = b->last_seq;
		heap_push(b, r);
		orphans++;
	}
	hmap_release(&b->orphans);
	hmap_init(&b->orphans);
	if (b->unknown_refs) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb,
		            "%ld records name str or site ids that no record defines (this is the "
		            "first); their kernels and sources are shown as unknown",
		            b->unknown_refs);
		warning_at(b->file, b->unknown_line, "%s", sb.buf);
		b->ti->warnings =
		    xrealloc(b->ti->warnings, sizeof(char *) * (b->ti->nwarnings + 1));
		b->ti->warnings[b->ti->nwarnings++] = sb.buf;
	}
	if (orphans) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "%ld activity records have no API record", orphans);
		warning("'%s': %s", b->file, sb.buf);
		b->ti->warnings =
		    xrealloc(b->ti->warnings, sizeof(char *) * (b->ti->nwarnings + 1));
		b->ti->warnings[b->ti->nwarnings++] = sb.buf;
	}
	drain(b, 0);
	if (b->locked_key < 0 && b->period == 0) {
		int key = best_key(b);
		if (key >= 0)
			lock_key(b, key);
		else
			find_period(b);
		periodic_extend(b);
	}
	if (!b->nsteps && b->ops.n) {
		b->how = "whole";
		add_step(b, b->ops.base, b->next_gi);
	}
	try_fold(b, 1);
	release_before(b, b->next_gi);

	/* the dominant class: most steps, then most positions */
	int dom = -1;
	for (int i = 0; i < b->nclasses; i++)
		if (dom < 0 || b->classes[i].nsteps > b->classes[dom].nsteps ||
		    (b->classes[i].nsteps == b->classes[dom].nsteps &&
		     b->classes[i].len > b->classes[dom].len))
			dom = i;
	m->nsteps = (int)b->nsteps;
	m->steps_how = b->how;
	m->step_key = b->locked_key >= 0 ? xstrdup(b->keys[b->locked_key]) : NULL;
	m->step_us = xcalloc(b->nsteps ? b->nsteps : 1, sizeof(double));
	for (long i = 0; i < b->nsteps; i++)
		m->step_us[i] = b->steps[i].us;
	m->outside_ops = b->outside;
	if (dom < 0)
		return 0;
	struct cls *c = &b->classes[dom];
	m->period = c->len;

	/* warm-up: leading steps of another class, then leading time outliers (> 1.5 x median) */
	long first = c->first_step, warm = first;
	double *t = xmalloc(sizeof(double) * (b->nsteps + 1));
	long nt = 0;
	for (long i = first; i < b->nsteps; i++)
		if (b->steps[i].cls == dom)
			t[nt++] = b->steps[i].us;
	double med = quantile(t, nt, 0.5);
	long warm_in_class = 0;
	for (long i = first; i < b->nsteps && warm_in_class < nt - 1; i++) {
		if (b->steps[i].cls != dom)
			break;
		if (med > 0 && b->steps[i].us > 1.5 * med && i - first < 5) {
			warm = i + 1;
			warm_in_class++;
		} else {
			break;
		}
	}
	m->warmup = (int)warm;
	nt = 0;
	for (long i = warm; i < b->nsteps; i++)
		if (b->steps[i].cls == dom)
			t[nt++] = b->steps[i].us;
	m->step_median_us = quantile(t, nt, 0.5);
	m->step_p10_us = quantile(t, nt, 0.1);
	m->step_p90_us = quantile(t, nt, 0.9);
	free(t);
	b->ti->steps = m->nsteps;
	b->ti->warmup = m->warmup;
	b->ti->step_median_us = m->step_median_us;

	/* the step graph: the capture, with statistics over the steady steps */
	m->nnodes = c->len;
	m->nodes = c->nodes;
	c->nodes = NULL;
	for (int i = 0; i < c->len; i++) {
		struct possamp *ps = &c->ps[i];
		struct node *nd = &m->nodes[i];
		long n = ps->n < SAMPLE_CAP ? ps->n : SAMPLE_CAP;
		long skip = ps->n <= SAMPLE_CAP && warm_in_class < n ? warm_in_class : 0;
		nd->count = ps->n - skip;
		if (n - skip > 0) {
			qsort(ps->s + skip, n - skip, sizeof(float), cmp_float);
			long h = (n - skip) / 2;
			nd->median_us = (n - skip) % 2
			                    ? ps->s[skip + h]
			                    : (ps->s[skip + h - 1] + ps->s[skip + h]) / 2.0;
			nd->min_us = skip ? ps->s[skip] : ps->min;
			nd->max_us = skip ? ps->s[n - 1] : ps->max;
		}
		for (int j = 0; c->fp && j < nd->nfp; j++) {
			nd->fp_steps[j] = c->fp[i * NODE_FP + j].steps;
			nd->fp_differ[j] = c->fp[i * NODE_FP + j].differ;
		}
	}
	m->values = c->values;
	m->nvalues = c->nvalues;
	c->values = NULL;
	c->nvalues = 0;
	m->edges = c->edges;
	m->nedges = c->nedges;
	c->edges = NULL;
	m->tl = c->tl;
	m->ntl = c->ntl;
	c->tl = NULL;
	m->tl_step = (int)c->cap_step;
	m->tl_t0_ns = c->tl_t0;
	m->cap_seq_end = c->seq_end;
	return 0;
}

void builder_free(struct builder *b)
{
	if (!b)
		return;
	while (b->nheap)
		rec_free(b, heap_pop(b));
	release_before(b, b->next_gi);
	size_t it = 0;
	uint64_t k, v;
	while (hmap_next(&b->orphans, &it, &k, &v))
		rec_free(b, (struct rec *)(uintptr_t)v);
	it = 0;
	while (hmap_next(&b->bufs, &it, &k, &v))
		free((void *)(uintptr_t)v);
	while (b->pool) {
		struct rec *r = b->pool;
		b->pool = r->next_free;
		if (r->p != r->pin)
			free(r->p);
		free(r);
	}
	free(b->heap);
	for (long i = 0; i < b->nfns; i++) {
		free(b->fns[i].name);
		free(b->fns[i].full);
		free(b->fns[i].shortn);
		free(b->fns[i].cal);
		free(b->fns[i].sig);
	}
	free(b->fns);
	for (long i = 0; i < b->nsites; i++) {
		free(b->sites[i].source);
		free(b->sites[i].file);
		free(b->sites[i].func);
	}
	free(b->sites);
	hmap_release(&b->pending);
	hmap_release(&b->orphans);
	it = 0;
	while (hmap_next(&b->probes, &it, &k, &v))
		free((void *)(uintptr_t)v);
	hmap_release(&b->probes);
	hmap_release(&b->bufs);
	hmap_release(&b->events);
	hmap_release(&b->laststr);
	hmap_release(&b->waits);
	hmap_release(&b->stacks);
	hmap_release(&b->rstarts);
	free(b->ops.a);
	free(b->vals.a);
	free(b->edges.a);
	for (int i = 0; i < b->nkeys; i++)
		free(b->keys[i]);
	free(b->keys);
	free(b->key_count);
	free(b->key_depth);
	free(b->open);
	free(b->ranges);
	free(b->steps);
	for (int i = 0; i < b->nclasses; i++) {
		struct cls *c = &b->classes[i];
		for (int j = 0; j < c->len; j++)
			free(c->ps[j].s);
		free(c->ps);
		free(c->fp);
		free(c->fns);
		if (c->nodes)
			for (int j = 0; j < c->len; j++) {
				free(c->nodes[j].name);
				free(c->nodes[j].full_name);
				free(c->nodes[j].source);
				free(c->nodes[j].site_file);
				free(c->nodes[j].site_func);
			}
		free(c->nodes);
		for (int j = 0; j < c->nvalues; j++)
			free(c->values[j].readers);
		free(c->values);
		free(c->edges);
		free(c->tl);
	}
	free(b->classes);
	free(b);
}
