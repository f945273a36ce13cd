/*
 * flow.c - the graph builder's data flow: sequencing of the ordered records, pointer roles,
 * buffer versions (values) and edges (builder.h has the stages and the shared struct builder).
 *
 * How it works: drain() takes records out of the reorder buffer in seq order and process()
 * applies each: an op gets its global index gi and joins b->ops; an alloc or free makes or ends
 * a buffer; NVTX push/pop and range start/end close ranges for the step finder (steps.c);
 * event_record/stream_wait make cross-stream edges. For each op, dataflow() gives its pointer
 * arguments roles (calibration flags, then op semantics, then allocation lifetime, then the
 * conservative rule; see roles()); each pointer's byte range is read or written (do_read,
 * do_write): values live in byte ranges of their allocation (slots), so a read makes an edge
 * from every value holding part of its range and a write takes its range from the values
 * there; with one tensor per allocation this is one value per allocation, in an arena (a
 * caching allocator's segment, JAX's or CuPy's pool) each tensor keeps its own. Copies and
 * sets read their source range and write their destination range. After each drain,
 * try_fold() (fold.c) folds the steps that are complete.
 */
#include "analyzer/builder.h"

#include <stdlib.h>
#include <string.h>

/* ---------- strings, sites, kernel names ---------- */

struct fninfo *fn_get(struct builder *b, int id)
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

/* ---------- data flow ---------- */

struct val *val_get(struct builder *b, long vid)
{
	if (vid < b->vals.base || vid >= b->vals.base + b->vals.n)
		return NULL;
	return &DEQ_AT(b->vals, vid);
}

/*
 * The bytes an op touches through one pointer (offset off into bf): never more than the
 * allocation holds past off, nor than the distance to the next pointer into the same
 * allocation in the same launch (next: UINT64_MAX none), nor than the launch bound (bound:
 * sem_launch_bound()), nor, where N is known to count elements (esize not 0), than N elements.
 * With an arena allocator (JAX preallocates 75% of the device as one allocation, CuPy's pool
 * hands out chunks larger than the array) the allocation's size says nothing about a kernel's
 * bytes; the launch and the neighbouring pointers do.
 */
static uint64_t touch_bytes(const struct rec *o, const struct buf *bf, uint64_t off, size_t esize,
                            uint64_t next, uint64_t bound)
{
	uint64_t n = bf->size > off ? bf->size - off : 0;
	if (next != UINT64_MAX && next > off && next - off < n)
		n = next - off;
	if (bound < n)
		n = bound;
	if (o->numel > 0 && esize && (uint64_t)o->numel * esize < n)
		n = (uint64_t)o->numel * esize;
	return n;
}

static long new_value(struct builder *b, struct buf *bf, long writer, uint64_t off, uint64_t size,
                      enum edge_how how, long now)
{
	struct val v = {0};
	v.vid = b->next_vid++;
	v.writer = writer;
	v.created = now;
	v.buffer = bf->id;
	v.off = off;
	v.size = size;
	v.bw = writer >= 0 ? size : 0;
	v.how = how;
	v.dead = -1;
	v.nslots = 1; /* every value is made for the one range (slot) it is written or read in */
	DEQ_PUSH(b->vals, v);
	return v.vid;
}

/*
 * Values live in byte ranges of their allocation (struct slot): a write of [off, end) makes a
 * new value there and takes that range from the values it covers, which die when no range of
 * theirs is left (overwritten); a read of a range reads every value that holds a part of it,
 * each edge carrying the bytes of its part, and a part no value holds yet is a value from
 * before the trace. With one tensor per allocation every write and read covers the whole
 * range, as one value per allocation did; in an arena (PyTorch's caching allocator's segments,
 * JAX's and CuPy's pools) the tensors in one allocation keep values of their own.
 */

/* The first slot of bf whose end is above off (nsl when none). */
static int slot_at(const struct buf *bf, uint64_t off)
{
	int lo = 0, hi = bf->nsl;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (bf->sl[mid].end <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void slot_insert(struct buf *bf, int i, struct slot s)
{
	ALLOC_GROW(bf->sl, bf->nsl, bf->asl);
	memmove(&bf->sl[i + 1], &bf->sl[i], sizeof(*bf->sl) * (size_t)(bf->nsl - i));
	bf->sl[i] = s;
	bf->nsl++;
}

/* A slot of value vid is gone: the value dies at gi when it held no other range. */
static void slot_gone(struct builder *b, long vid, long gi)
{
	struct val *v = val_get(b, vid);
	if (v && --v->nslots <= 0 && v->dead < 0)
		v->dead = gi;
}

static void add_reader(struct builder *b, struct rec *o, const struct buf *bf,
                       const struct slot *sl, uint64_t bytes, enum edge_how rhow)
{
	struct val *v = val_get(b, sl->vid);
	if (v) {
		if (v->nr && v->readers[v->nr - 1] == o->gi) {
			v->rbytes[v->nr - 1] += bytes; /* two parts of one value in one read */
		} else {
			if (v->nr == v->ar) {
				v->ar = v->ar ? v->ar * 2 : 4;
				v->readers = xrealloc(v->readers, sizeof(long) * v->ar);
				v->rbytes = xrealloc(v->rbytes, sizeof(uint64_t) * v->ar);
			}
			v->readers[v->nr] = o->gi;
			v->rbytes[v->nr++] = bytes;
		}
	}
	enum edge_how how = rhow == HOW_CONSERVATIVE ? HOW_CONSERVATIVE : sl->how;
	if (b->edges.n) {
		struct iedge *last = &DEQ_AT(b->edges, b->edges.base + b->edges.n - 1);
		if (last->vid == sl->vid && last->to == o->gi && last->from == sl->writer) {
			last->bytes += bytes;
			return;
		}
	}
	struct iedge e = {sl->writer,           o->gi,  sl->vid, bytes, v ? v->size : bytes,
	                  v ? v->off : sl->off, bf->id, how};
	DEQ_PUSH(b->edges, e);
}

/* o reads [off, off + bytes) of bf. */
static void do_read(struct builder *b, struct rec *o, struct buf *bf, uint64_t off, uint64_t bytes,
                    enum edge_how rhow)
{
	uint64_t end = off + bytes < off ? UINT64_MAX : off + bytes, pos = off;
	int i = slot_at(bf, pos);
	while (pos < end) {
		if (i < bf->nsl && bf->sl[i].off <= pos) {
			uint64_t e = bf->sl[i].end < end ? bf->sl[i].end : end;
			add_reader(b, o, bf, &bf->sl[i], e - pos, rhow);
			pos = e;
			i++;
			continue;
		}
		/* a part no value holds: a value from before the trace; but a read's tail past the
		 * last value of a buffer written in the trace is the extent overreaching the tensor
		 * (a bound by the allocation, which a pool's block rounds up: a broadcast scalar in
		 * a 512-byte block), never written by anything: not read */
		uint64_t e = i < bf->nsl && bf->sl[i].off < end ? bf->sl[i].off : end;
		if (e == end && pos > off && bf->written) {
			bytes -= end - pos;
			break;
		}
		struct slot s = {pos, e, new_value(b, bf, -1, pos, e - pos, rhow, o->gi), -1,
		                 HOW_FRESH};
		slot_insert(bf, i, s);
		add_reader(b, o, bf, &bf->sl[i], e - pos, rhow);
		pos = e;
		i++;
	}
	o->br += bytes;
}

/* o writes [off, off + bytes) of bf. */
static void do_write(struct builder *b, struct rec *o, struct buf *bf, uint64_t off, uint64_t bytes,
                     enum edge_how how)
{
	uint64_t end = off + bytes < off ? UINT64_MAX : off + bytes;
	int i = slot_at(bf, off);
	while (i < bf->nsl && bf->sl[i].off < end) {
		struct slot *s = &bf->sl[i];
		if (s->off >= off && s->end <= end) { /* covered: the range is gone */
			long vid = s->vid;
			memmove(s, s + 1, sizeof(*s) * (size_t)(bf->nsl - i - 1));
			bf->nsl--;
			slot_gone(b, vid, o->gi);
		} else if (s->off < off && s->end > end) { /* the write splits it */
			struct slot tail = *s;
			tail.off = end;
			s->end = off;
			struct val *v = val_get(b, s->vid);
			if (v)
				v->nslots++;
			slot_insert(bf, i + 1, tail);
			i++;
			break;
		} else if (s->off < off) { /* its tail */
			s->end = off;
			i++;
		} else { /* its head */
			s->off = end;
			break;
		}
	}
	struct slot ns = {off, end, new_value(b, bf, o->gi, off, bytes, how, o->gi), o->gi, how};
	slot_insert(bf, slot_at(bf, off), ns);
	bf->written = 1;
	o->bw += bytes;
}

/* Kernels whose first scalar is their element count N and whose data array ends the functor. */
static int is_tensor_iterator(const struct op_sem *s)
{
	return s->family == FAM_ELEMENTWISE || s->family == FAM_COPY || s->family == FAM_MEMSET;
}

/* Kernels whose first scalar counts the elements their pointers walk: the above, and CUB's
 * reductions (num_items, after d_in and d_out). */
static int counts_elements(const struct op_sem *s)
{
	return is_tensor_iterator(s) || (s->rule && !strcmp(s->rule, "cub-device-reduce"));
}

/*
 * The kernel's C signature from its demangled name: for each parameter, whether it is a
 * pointer to const ("float const*", "const float*": read only) or to non-const ("float*").
 * Names that are not mangled (extern "C") have no parameter list and give nothing.
 */
void parse_signature(struct fninfo *f)
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
static long acc[5][2];        /* [W, RW, R, skipped, how=fresh...] x [changed, unchanged] */
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
	fprintf(stderr,
	        "accuracy: %ld probed pointers; inferred write = changed for %ld (%.1f%%)\n", total,
	        agree, total ? 100.0 * agree / total : 0);
	static const char *rn[] = {"W", "RW", "R", "not an argument"};
	for (int r = 0; r < 4; r++)
		fprintf(stderr, "accuracy: role %-16s changed %5ld unchanged %5ld\n", rn[r],
		        acc[r][0], acc[r][1]);
	static const char *hn[] = {"fresh-alloc", "semantics", "calibrated", "conservative"};
	for (int h = 0; h < 4; h++)
		fprintf(
		    stderr,
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

/* The scalar parameter arg of o of size bytes (the trace's "v"), 0 when not recorded. */
static uint64_t sp_u(const struct rec *o, int arg, int size)
{
	uint64_t raw;
	if (!node_param_find(o->sp, o->nsp, arg, size, &raw))
		return 0;
	return size == 4 ? (uint32_t)raw : raw;
}

/*
 * The bytes a layer norm's pointer parameter arg can hold, from the kernel's own numbers
 * (layer_norm_kernel.cu): rows M (the grid: one block a row; GammaBetaBackward's first
 * parameter), columns N; the tensors M x N elements of esize, the weights N floats at most, the
 * statistics M floats. UINT64_MAX where the kernel is not one of these. Under a caching
 * allocator the allocation is a segment and says nothing of the tensor.
 */
static uint64_t norm_bound(const struct op_sem *s, const struct rec *o, int arg, size_t esize)
{
	if (!s || s->family != FAM_NORM || !s->rule || !esize || arg < 0)
		return UINT64_MAX;
	uint64_t M = o->grid[0] > 0 ? (uint64_t)o->grid[0] : 0, N;
	const char *r = s->rule;
	int big = -1, w = -1, st = -1; /* which argument is which: a bitmask of indices */
	if (!strcmp(r, "torch-vectorized-layer-norm") || !strcmp(r, "torch-vectorized-rms-norm")) {
		N = sp_u(o, 0, 4); /* (N, eps, X, gamma, beta, mean, rstd, Y) */
		big = 1 << 2 | 1 << 7, w = 1 << 3 | 1 << 4, st = 1 << 5 | 1 << 6;
	} else if (!strcmp(r, "torch-layer-norm-grad-input")) {
		N = sp_u(o, 6, 4); /* (dY, X, mean, rstd, gamma, dX, N) */
		big = 1 << 0 | 1 << 1 | 1 << 5, w = 1 << 4, st = 1 << 2 | 1 << 3;
	} else if (!strcmp(r, "torch-gamma-beta-backward")) {
		M = sp_u(o, 0, 8), N = sp_u(o, 1, 8); /* (M, N, dY, X, mean, rstd, dgamma, dbeta) */
		big = 1 << 2 | 1 << 3, w = 1 << 6 | 1 << 7, st = 1 << 4 | 1 << 5;
	} else {
		return UINT64_MAX;
	}
	if (!M || !N || M > (1ull << 31) || N > (1ull << 31) || arg >= 31)
		return UINT64_MAX;
	if (big & (1 << arg))
		return M * N * esize;
	if (w & (1 << arg))
		return N * (esize > 4 ? esize : 4);
	if (st & (1 << arg))
		return M * 4;
	return UINT64_MAX;
}

/* The lowest offset above off of an argument pointer of o into alloc (how[] not HOW_SKIP),
 * UINT64_MAX none. */
static uint64_t next_ptr(const struct rec *o, const unsigned char *how, int64_t alloc, uint64_t off)
{
	uint64_t next = UINT64_MAX;
	for (int j = 0; j < o->nptr; j++)
		if (o->p[j].alloc == alloc && how[j] != HOW_SKIP && o->p[j].off > off &&
		    o->p[j].off < next)
			next = o->p[j].off;
	return next;
}

static struct buf *buf_of(struct builder *b, int64_t alloc)
{
	uint64_t v;
	if (alloc < 0 || !hmap_get(&b->bufs, (uint64_t)alloc, &v))
		return NULL;
	return (struct buf *)(uintptr_t)v;
}

/* bytes, at most what bf holds past off. */
static uint64_t range_in(const struct buf *bf, uint64_t off, uint64_t bytes)
{
	uint64_t left = bf->size > off ? bf->size - off : 0;
	return bytes < left ? bytes : left;
}

static void dataflow(struct builder *b, struct rec *o)
{
	if (o->kind == NK_COPY || o->kind == NK_SET) {
		struct buf *src = buf_of(b, o->src_alloc), *dst = buf_of(b, o->dst_alloc);
		if (src)
			do_read(b, o, src, o->src_off, range_in(src, o->src_off, o->bytes),
			        HOW_SEMANTICS);
		if (dst)
			do_write(b, o, dst, o->dst_off, range_in(dst, o->dst_off, o->bytes),
			         HOW_SEMANTICS);
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
	int counted = !f || counts_elements(&f->sem) || f->sem.family == FAM_OTHER;
	for (int i = 0; counted && i < o->nscalars && o->numel < 0; i++)
		if ((uint64_t)o->scalars[i] <= largest)
			o->numel = o->scalars[i];
	unsigned char role[n], how[n];
	roles(b, o, f, role, how);
	/* bytes capped at numel x element size only where N is known to count elements */
	size_t esize = f && counts_elements(&f->sem) ? dtype_size(f->sem.dtype) : 0;
	/* the launch bound, for kernels whose parameters give no extent (sem_launch_bound()) */
	uint64_t blocks = (uint64_t)(o->grid[0] > 0 ? o->grid[0] : 1) *
	                  (uint64_t)(o->grid[1] > 0 ? o->grid[1] : 1) *
	                  (uint64_t)(o->grid[2] > 0 ? o->grid[2] : 1);
	uint64_t threads = o->grid[0] > 0 && o->block[0] > 0
	                       ? blocks * (uint64_t)o->block[0] *
	                             (uint64_t)(o->block[1] > 0 ? o->block[1] : 1) *
	                             (uint64_t)(o->block[2] > 0 ? o->block[2] : 1)
	                       : 0;
	size_t lesize = f ? dtype_size(f->sem.dtype) : 0;
	if (!lesize && f)
		lesize = dtype_size(f->sig_dtype);
	/* reads first (an in-place op reads the old version), then writes; each pointer's range
	 * once (the same offset twice counts once), its extent bounded as touch_bytes() says */
	for (int pass = 0; pass < 2; pass++) {
		int want = pass ? ROLE_WRITE : ROLE_READ;
		uint64_t bound =
		    f ? sem_launch_bound(&f->sem, want, blocks, threads, lesize) : UINT64_MAX;
		for (int j = 0; j < n; j++) {
			if (!(role[j] & want))
				continue;
			struct buf *bf = buf_of(b, o->p[j].alloc);
			if (!bf)
				continue;
			int seen = 0;
			for (int k = 0; k < j; k++)
				if (o->p[k].alloc == o->p[j].alloc && (role[k] & want) &&
				    o->p[k].off == o->p[j].off)
					seen = 1;
			if (seen)
				continue;
			uint64_t pb =
			    f ? sem_ptr_bound(&f->sem, j, n, o->grid, o->block) : UINT64_MAX;
			uint64_t nbnd =
			    f ? norm_bound(&f->sem, o, o->p[j].arg, lesize) : UINT64_MAX;
			if (nbnd < pb)
				pb = nbnd;
			uint64_t nb = touch_bytes(o, bf, o->p[j].off, esize,
			                          next_ptr(o, how, o->p[j].alloc, o->p[j].off),
			                          pb < bound ? pb : bound);
			nb = range_in(bf, o->p[j].off, nb);
			if (pass)
				do_write(b, o, bf, o->p[j].off, nb, (enum edge_how)how[j]);
			else
				do_read(b, o, bf, o->p[j].off, nb, (enum edge_how)how[j]);
		}
	}
}

/* ---------- sequencing ---------- */

/* A freed allocation: its values die at gi. */
static void buf_free(struct builder *b, struct buf *bf, long gi)
{
	for (int i = 0; i < bf->nsl; i++)
		slot_gone(b, bf->sl[i].vid, gi);
	free(bf->sl);
	free(bf);
}

static void process(struct builder *b, struct rec *r)
{
	/* out-of-order records are parse.c's reorder heap's to report (reorder_warn()) */
	if (r->seq > b->last_seq)
		b->last_seq = r->seq;
	uint64_t v;
	switch (r->type) {
	case R_OP: {
		r->gi = b->next_gi++;
		DEQ_PUSH(b->ops, r);
		uint64_t w;
		if (r->stream_h && hmap_del(&b->waits, r->stream_h, &w)) {
			struct iedge e = {(long)w - 1, r->gi, -1, 0, 0, 0, -1, HOW_EVENT};
			DEQ_PUSH(b->edges, e);
		}
		if (r->stream_h)
			hmap_put(&b->laststr, r->stream_h, (uint64_t)r->gi + 1);
		dataflow(b, r);
		periodic_extend(b);
		if (b->locked_key < 0 && b->period == 0 && b->ops.n >= UNLOCKED_CAP) {
			int k = nvtx_rule_best(&b->nvtx);
			if (k >= 0)
				lock_key(b, k);
			else
				find_period(b, 0);
			periodic_extend(b);
		}
		return; /* ops are freed on release */
	}
	case R_ALLOC: {
		struct buf *bf = xcalloc(1, sizeof(*bf));
		bf->id = r->id;
		bf->size = r->size;
		if (hmap_get(&b->bufs, (uint64_t)r->id, &v))
			buf_free(b, (struct buf *)(uintptr_t)v, b->next_gi);
		hmap_put(&b->bufs, (uint64_t)r->id, (uint64_t)(uintptr_t)bf);
		break;
	}
	case R_FREE:
		if (hmap_del(&b->bufs, (uint64_t)r->id, &v))
			buf_free(b, (struct buf *)(uintptr_t)v, b->next_gi);
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

void drain(struct builder *b, long keep)
{
	while (b->nheap > keep)
		process(b, heap_pop(b));
	try_fold(b, 0);
}
