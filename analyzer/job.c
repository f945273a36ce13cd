/*
 * job.c - the map of the job view: one rank's trace into its rank summary (see job.h).
 *
 * The single-trace analysis gives the rank's step graph: step times, the kernels of a step
 * (grouped here by name, for the straggler's diff against the median rank), the captured
 * step's timeline and the graph's writers of each collective's input buffers. A second pass
 * over the trace then reads what the graph builder does not keep: `comm` records (handle to
 * the communicator's uid and size), `coll` records, the `coll` ids on NCCL's launches, and every
 * kernel's GPU interval, every launch's seq and the NVTX push/pop records. Lines of other types
 * are skipped before parsing (sites, allocations, copies), so the pass costs a read of the file
 * and a parse of its kernel and launch records; it keeps about 72 bytes per kernel.
 *
 * A collective instance is one NCCL kernel. Its key is "<uid>:<n>" from its first `coll`
 * record (the same on every rank of the communicator), or "k<i>" (the i-th NCCL kernel of the
 * rank) where the trace has no `coll` records, op and dtype then coming from the kernel's name.
 * Its overlap is the part of its GPU interval covered by the union of the non-NCCL kernels of
 * the same device (other streams: one stream's kernels never overlap); the rest is exposed.
 *
 * Steps: where the trace has NVTX step ranges (by the single-trace view's rule, steps.h: the
 * outermost repeated text once digits are folded, push/pop per thread), a kernel belongs to the
 * step whose range holds its launch's seq; the steady steps are those whose collectives (op and
 * bytes, in order) form the most common sequence (DDP's first steps broadcast and build buckets),
 * the last JOB_MAX_ROUNDS of them kept, each instance with its position in the step; the rank's
 * step time is the median NVTX duration and its compute the median of the steps' non-NCCL kernel
 * time. Without NVTX steps, rounds: with K the NCCL nodes of the step graph, the instances are cut
 * into rounds of K counted back from the last. Timestamps are read from the line's text as integers
 * (a double holds an epoch nanosecond to 256 ns only).
 *
 * Early start: for each NCCL node of the captured step, the latest end of the graph's writers of
 * the buffers it reads against its own start, and the end of the NCCL node before it on its
 * stream (a bucket's reduction waits for the previous one).
 */
#include "analyzer/job.h"
#include "lib/hmap.h"
#include "analyzer/model.h"
#include "analyzer/semantics.h"
#include "analyzer/steps.h"
#include "lib/trace.h"
#include "lib/util.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- names and formulas */

static const char *const nccl_ops[] = {"AllReduce", "ReduceScatter", "AllGather",
                                       "Broadcast", "Reduce",        "AllToAll",
                                       "SendRecv",  "Send",          "Recv"};
static const char *const nccl_types[] = {"i8",   "u8",    "i32",   "u32",    "i64",    "u64",
                                         "f16",  "f32",   "f64",   "bf16",   "f8e4m3", "f8e5m2",
                                         "int8", "uint8", "int32", "uint32", "int64",  "uint64",
                                         "half", "float", "double"};
static const char *const type_norm[] = {"i8",  "u8",  "i32",  "u32",    "i64",    "u64", "f16",
                                        "f32", "f64", "bf16", "f8e4m3", "f8e5m2", "i8",  "u8",
                                        "i32", "u32", "i64",  "u64",    "f16",    "f32", "f64"};

/* the '_'-separated token at p (letters and digits), into t; returns its end */
static const char *token(const char *p, char *t, size_t tsz)
{
	size_t n = 0;
	while (isalnum((unsigned char)*p)) {
		if (n + 1 < tsz)
			t[n++] = *p;
		p++;
	}
	t[n] = 0;
	return p;
}

int job_nccl_name(const char *name, char *op, size_t opsz, char *dtype, size_t dtsz)
{
	const char *p = name ? strstr(name, "ncclDevKernel_") : NULL;
	size_t skip = 14;
	if (!p) {
		p = name ? strstr(name, "ncclKernel_") : NULL;
		skip = 11;
	}
	snprintf(op, opsz, "Collective");
	if (dtsz)
		dtype[0] = 0;
	if (!p)
		return 0;
	p += skip;
	char t[8][32];
	int nt = 0;
	while (nt < 8) {
		p = token(p, t[nt], sizeof(t[nt]));
		nt++;
		if (*p != '_')
			break;
		p++;
	}
	/* a mangled name runs on into the parameter's length ("LL24ncclDev..."): cut digits */
	char *last = t[nt - 1];
	for (size_t i = 0; last[i]; i++)
		if (isdigit((unsigned char)last[i]) && i > 0 && isupper((unsigned char)last[0])) {
			last[i] = 0;
			break;
		}
	for (size_t i = 0; i < ARRAY_SIZE(nccl_ops); i++)
		if (!strcasecmp(t[0], nccl_ops[i]))
			snprintf(op, opsz, "%s", nccl_ops[i]);
	for (int k = 1; k < nt && dtsz; k++)
		for (size_t i = 0; i < ARRAY_SIZE(nccl_types); i++)
			if (!strcmp(t[k], nccl_types[i])) {
				snprintf(dtype, dtsz, "%s", type_norm[i]);
				return 1;
			}
	return 1;
}

double job_busbw_factor(const char *op, int nranks)
{
	if (nranks < 1 || !op)
		return 1;
	double n = nranks;
	if (!strcmp(op, "AllReduce"))
		return 2 * (n - 1) / n;
	if (!strcmp(op, "AllGather") || !strcmp(op, "ReduceScatter") || !strcmp(op, "AllToAll"))
		return (n - 1) / n;
	return 1;
}

double job_alg_bytes(const char *op, double bytes, int nranks)
{
	if (op && nranks > 0 && (!strcmp(op, "AllGather") || !strcmp(op, "ReduceScatter")))
		return bytes * nranks;
	return bytes;
}

int64_t job_covered(int64_t s, int64_t e, const int64_t *us, long n)
{
	if (e <= s || n <= 0)
		return 0;
	/* first interval ending after s */
	long lo = 0, hi = n;
	while (lo < hi) {
		long mid = (lo + hi) / 2;
		if (us[2 * mid + 1] <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t cov = 0;
	for (long i = lo; i < n && us[2 * i] < e; i++) {
		int64_t a = us[2 * i] > s ? us[2 * i] : s;
		int64_t b = us[2 * i + 1] < e ? us[2 * i + 1] : e;
		if (b > a)
			cov += b - a;
	}
	return cov;
}

/* ---------------------------------------------------------------- the second pass */

struct kev {
	int64_t start, end, c;
	int dev, nccl; /* nccl: index into scan.names + 1, 0 for a compute kernel */
	int name;      /* index into scan.names + 1, 0 unknown */
	int stream;
	long step; /* index into scan.steps, -1 none */
};

/* an NVTX push or pop, in file order */
struct nvev {
	int64_t ts;
	uint64_t seq;
	long tid;
	int push, text; /* text: index into scan.texts, -1 none */
};

/* one NVTX step range: launches with start_seq < seq < end_seq are its ops */
struct nvstep {
	uint64_t start_seq, end_seq;
	int64_t start_ts, end_ts;
	int sig_class;  /* index of its collective signature class */
	double compute; /* ns of non-NCCL kernels launched in it */
	long ninst;     /* NCCL kernels launched in it */
	uint64_t sig;   /* hash of its NCCL kernels' ops and bytes, in order */
	int64_t gpu0;   /* first GPU start of its kernels, 0 none */
};

struct collrec {
	long id, n, group;
	char op[24], dtype[12];
	double bytes;
	uint64_t comm;
};

struct commrec {
	uint64_t handle;
	char uid[40];
	int nranks, rank;
};

struct scan {
	struct hmap ncclstr; /* str id -> index into names + 1 */
	char **names;
	unsigned char *isnccl; /* per name */
	long nnames, anames, aisnccl;
	struct hmap lseq; /* launch c -> seq */
	struct nvev *nv;
	long nnv, anv;
	char **texts;
	long ntexts, atexts;
	struct nvstep *steps;
	long nsteps, asteps;
	struct kev *k;
	long nk, ak;
	struct hmap launch; /* c -> offset into cids << 8 | count */
	long *cids;
	long ncids, acids;
	struct collrec *colls;
	long ncolls, acolls;
	struct hmap collidx; /* coll id -> index */
	struct commrec *comms;
	long ncomms, acomms;
	/* header */
	long rank, local_rank, world_size, pid;
	char host[64], clock[48];
	int has_rank;
};

static int64_t jnum64(const cJSON *o, const char *k, int64_t dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v) || !(v->valuedouble > -9.2e18 && v->valuedouble < 9.2e18))
		return dflt;
	return (int64_t)v->valuedouble;
}

/* an integer field of the raw line, exactly (a double holds a nanosecond timestamp to 256 ns
 * only); dflt when absent */
static int64_t raw_int(const char *line, const char *k, int64_t dflt)
{
	char pat[40];
	snprintf(pat, sizeof(pat), "\"%s\":", k);
	const char *p = strstr(line, pat);
	if (!p)
		return dflt;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	char *end;
	errno = 0;
	long long v = strtoll(p, &end, 10);
	if (end == p || errno || *end == '.' || *end == 'e' || *end == 'E')
		return dflt;
	return (int64_t)v;
}

static uint64_t jhex(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 16) : 0;
}

static void jstrcpy(char *dst, size_t n, const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	snprintf(dst, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static void scan_record(struct scan *sc, const cJSON *r, const char *t, const char *line)
{
	if (!strcmp(t, "header")) {
		sc->has_rank = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(r, "rank"));
		sc->rank = jnum64(r, "rank", -1);
		sc->local_rank = jnum64(r, "local_rank", -1);
		sc->world_size = jnum64(r, "world_size", -1);
		sc->pid = jnum64(r, "pid", -1);
		jstrcpy(sc->host, sizeof(sc->host), r, "host");
		const cJSON *job = cJSON_GetObjectItemCaseSensitive(r, "job");
		jstrcpy(sc->clock, sizeof(sc->clock), job, "clock");
	} else if (!strcmp(t, "str")) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "s");
		char op[24], dt[12];
		if (!cJSON_IsString(s))
			return;
		ALLOC_GROW(sc->names, sc->nnames, sc->anames);
		ALLOC_GROW(sc->isnccl, sc->nnames, sc->aisnccl);
		sc->isnccl[sc->nnames] =
		    (unsigned char)job_nccl_name(s->valuestring, op, sizeof(op), dt, 0);
		sc->names[sc->nnames++] = xstrdup(s->valuestring);
		hmap_put(&sc->ncclstr, (uint64_t)jnum64(r, "id", -1), (uint64_t)sc->nnames);
	} else if (!strcmp(t, "kernel")) {
		int64_t s = raw_int(line, "start", jnum64(r, "start", 0));
		int64_t e = raw_int(line, "end", jnum64(r, "end", 0));
		if (e < s || !s)
			return;
		uint64_t ni = 0;
		hmap_get(&sc->ncclstr, (uint64_t)jnum64(r, "name", -1), &ni);
		ALLOC_GROW(sc->k, sc->nk, sc->ak);
		int nccl = ni && sc->isnccl[ni - 1] ? (int)ni : 0;
		sc->k[sc->nk++] = (struct kev){
		    s,    e,       jnum64(r, "c", -1),          (int)jnum64(r, "dev", 0),
		    nccl, (int)ni, (int)jnum64(r, "stream", 0), -1};
	} else if (!strcmp(t, "push") || !strcmp(t, "pop")) {
		const cJSON *tx = cJSON_GetObjectItemCaseSensitive(r, "text");
		ALLOC_GROW(sc->nv, sc->nnv, sc->anv);
		struct nvev *v = &sc->nv[sc->nnv++];
		v->ts = raw_int(line, "ts", jnum64(r, "ts", 0));
		v->seq = (uint64_t)jnum64(r, "seq", 0);
		v->tid = (long)jnum64(r, "tid", 0);
		v->push = t[1] == 'u';
		v->text = -1;
		if (v->push && cJSON_IsString(tx) && tx->valuestring[0]) {
			ALLOC_GROW(sc->texts, sc->ntexts, sc->atexts);
			sc->texts[sc->ntexts] = xstrdup(tx->valuestring);
			v->text = (int)sc->ntexts++;
		}
	} else if (!strcmp(t, "launch")) {
		hmap_put(&sc->lseq, (uint64_t)jnum64(r, "c", -1), (uint64_t)jnum64(r, "seq", 0));
		const cJSON *cl = cJSON_GetObjectItemCaseSensitive(r, "coll");
		int n = cJSON_GetArraySize(cl);
		if (!cJSON_IsArray(cl) || n <= 0)
			return;
		if (n > 255)
			n = 255;
		hmap_put(&sc->launch, (uint64_t)jnum64(r, "c", -1),
		         (uint64_t)sc->ncids << 8 | (uint64_t)n);
		for (int i = 0; i < n; i++) {
			ALLOC_GROW(sc->cids, sc->ncids, sc->acids);
			const cJSON *v = cJSON_GetArrayItem(cl, i);
			sc->cids[sc->ncids++] = cJSON_IsNumber(v) && fabs(v->valuedouble) < 9e18
			                            ? (long)v->valuedouble
			                            : -1;
		}
	} else if (!strcmp(t, "coll")) {
		ALLOC_GROW(sc->colls, sc->ncolls, sc->acolls);
		struct collrec *c = &sc->colls[sc->ncolls];
		memset(c, 0, sizeof(*c));
		c->id = jnum64(r, "id", -1);
		c->n = jnum64(r, "n", -1);
		c->group = jnum64(r, "group", 0);
		jstrcpy(c->op, sizeof(c->op), r, "op");
		jstrcpy(c->dtype, sizeof(c->dtype), r, "dtype");
		c->bytes = (double)jnum64(r, "bytes", 0);
		c->comm = jhex(r, "comm");
		hmap_put(&sc->collidx, (uint64_t)c->id, (uint64_t)sc->ncolls);
		sc->ncolls++;
	} else if (!strcmp(t, "comm")) {
		ALLOC_GROW(sc->comms, sc->ncomms, sc->acomms);
		struct commrec *c = &sc->comms[sc->ncomms++];
		c->handle = jhex(r, "comm");
		jstrcpy(c->uid, sizeof(c->uid), r, "uid");
		c->nranks = (int)jnum64(r, "nranks", 0);
		c->rank = (int)jnum64(r, "rank", -1);
	}
}

static int scan_one(void *ctx, const struct trace_record *rec)
{
	if (rec->t)
		scan_record(ctx, rec->obj, rec->t, rec->raw);
	return 0;
}

/* the second read, through the one reader: other types are skipped unparsed, no warnings */
static int scan_trace(struct scan *sc, const char *path)
{
	struct trace_consumer c = {scan_one, sc,
	                           TRACE_BIT(TRACE_HEADER) | TRACE_BIT(TRACE_STR) |
	                               TRACE_BIT(TRACE_KERNEL) | TRACE_BIT(TRACE_LAUNCH) |
	                               TRACE_BIT(TRACE_COLL) | TRACE_BIT(TRACE_COMM) |
	                               TRACE_BIT(TRACE_PUSH) | TRACE_BIT(TRACE_POP)};
	return trace_read(path, &c, 1, NULL, TRACE_QUIET_WARNINGS);
}

static void scan_release(struct scan *sc)
{
	hmap_release(&sc->ncclstr);
	hmap_release(&sc->lseq);
	hmap_release(&sc->launch);
	for (long i = 0; i < sc->ntexts; i++)
		free(sc->texts[i]);
	free(sc->texts);
	free(sc->nv);
	free(sc->steps);
	free(sc->isnccl);
	hmap_release(&sc->collidx);
	for (long i = 0; i < sc->nnames; i++)
		free(sc->names[i]);
	free(sc->names);
	free(sc->k);
	free(sc->cids);
	free(sc->colls);
	free(sc->comms);
}

static int kev_by_start(const void *a, const void *b)
{
	const struct kev *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* The union of the compute kernels of device dev, as sorted disjoint [s, e) pairs. */
static int64_t *compute_union(const struct scan *sc, int dev, long *n)
{
	int64_t *u = xmalloc(sizeof(int64_t) * 2 * (sc->nk + 1));
	long m = 0;
	for (long i = 0; i < sc->nk; i++) {
		const struct kev *k = &sc->k[i];
		if (k->nccl || k->dev != dev)
			continue;
		if (m && k->start <= u[2 * m - 1]) {
			if (k->end > u[2 * m - 1])
				u[2 * m - 1] = k->end;
			continue;
		}
		u[2 * m] = k->start;
		u[2 * m + 1] = k->end;
		m++;
	}
	*n = m;
	return u;
}

static double r3(double x)
{
	return (double)(long long)(x * 1000 + (x < 0 ? -0.5 : 0.5)) / 1000;
}

static const struct commrec *comm_of(const struct scan *sc, uint64_t handle)
{
	for (long i = sc->ncomms - 1; i >= 0; i--)
		if (sc->comms[i].handle == handle)
			return &sc->comms[i];
	return NULL;
}

/* ---------------------------------------------------------------- the rank summary */

static void add_kernels(cJSON *root, const struct model *m)
{
	/* the step graph's non-NCCL kernels grouped by name: count and summed median */
	cJSON *arr = cJSON_AddArrayToObject(root, "kernels");
	double compute = 0, coll = 0;
	char *done = xcalloc(m->nnodes + 1, 1);
	for (int i = 0; i < m->nnodes; i++) {
		const struct node *n = &m->nodes[i];
		if (n->sem.family == FAM_NCCL) {
			coll += n->median_us;
			continue;
		}
		compute += n->median_us;
		if (done[i])
			continue;
		int count = 0;
		double us = 0;
		for (int j = i; j < m->nnodes; j++)
			if (!done[j] && m->nodes[j].sem.family != FAM_NCCL &&
			    !strcmp(m->nodes[j].name, n->name)) {
				done[j] = 1;
				count++;
				us += m->nodes[j].median_us;
			}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", n->name);
		cJSON_AddNumberToObject(o, "count", count);
		cJSON_AddNumberToObject(o, "us", r3(us));
		cJSON_AddItemToArray(arr, o);
	}
	free(done);
	cJSON_AddNumberToObject(root, "compute_us", r3(compute));
	cJSON_AddNumberToObject(root, "coll_kernel_us", r3(coll));
}

static void add_timeline(cJSON *root, const struct model *m, double *tl_start, double *tl_end)
{
	cJSON *tl = cJSON_AddObjectToObject(root, "timeline");
	cJSON_AddNumberToObject(tl, "t0_ns", (double)m->tl_t0_ns);
	cJSON *ev = cJSON_AddArrayToObject(tl, "events");
	for (int i = 0; i < m->ntl; i++) {
		const struct tl_event *e = &m->tl[i];
		const struct node *n = &m->nodes[e->node];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "node", e->node);
		cJSON_AddStringToObject(o, "name", n->name);
		cJSON_AddStringToObject(o, "family", family_name(n->sem.family));
		cJSON_AddNumberToObject(o, "stream", e->stream);
		cJSON_AddNumberToObject(o, "start_us", r3(e->start_us));
		cJSON_AddNumberToObject(o, "dur_us", r3(e->dur_us));
		cJSON_AddItemToArray(ev, o);
		if (tl_start[e->node] < 0) {
			tl_start[e->node] = e->start_us;
			tl_end[e->node] = e->start_us + e->dur_us;
		}
	}
}

/* early start of each NCCL node of the captured step, from the graph's writers */
static void add_early(cJSON *root, const struct model *m, const double *tl_start,
                      const double *tl_end)
{
	cJSON *arr = cJSON_AddArrayToObject(root, "early");
	int pos = 0;
	double prev_end = -1;
	int prev_stream = -2;
	for (int i = 0; i < m->nnodes; i++) {
		const struct node *n = &m->nodes[i];
		if (n->sem.family != FAM_NCCL)
			continue;
		int p = pos++;
		if (tl_start[i] < 0)
			continue;
		int writer = -1;
		double wend = -1;
		for (int r = 0; r < n->nreads; r++) {
			int v = n->reads[r];
			if (v < 0 || v >= m->nvalues)
				continue;
			int w = m->values[v].writer;
			if (w < 0 || w >= m->nnodes || m->nodes[w].sem.family == FAM_NCCL ||
			    tl_end[w] < 0)
				continue;
			if (tl_end[w] > wend) {
				wend = tl_end[w];
				writer = w;
			}
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pos", p);
		cJSON_AddNumberToObject(o, "node", i);
		cJSON_AddStringToObject(o, "name", n->name);
		cJSON_AddNumberToObject(o, "start_us", r3(tl_start[i]));
		cJSON_AddNumberToObject(o, "end_us", r3(tl_end[i]));
		if (writer >= 0) {
			cJSON_AddNumberToObject(o, "writer", writer);
			cJSON_AddStringToObject(o, "writer_name", m->nodes[writer].name);
			if (m->nodes[writer].source)
				cJSON_AddStringToObject(o, "writer_source",
				                        m->nodes[writer].source);
			else
				cJSON_AddNullToObject(o, "writer_source");
			cJSON_AddNumberToObject(o, "writer_end_us", r3(wend));
			cJSON_AddNumberToObject(o, "slack_us", r3(tl_start[i] - wend));
		} else {
			cJSON_AddNullToObject(o, "writer");
		}
		if (prev_stream == n->stream && prev_end >= 0)
			cJSON_AddNumberToObject(o, "prev_end_us", r3(prev_end));
		else
			cJSON_AddNullToObject(o, "prev_end_us");
		prev_end = tl_end[i];
		prev_stream = n->stream;
		cJSON_AddItemToArray(arr, o);
	}
}

/* one collective instance of the rank: an NCCL kernel */
struct jinst {
	long k; /* index into scan.k */
	char key[64], op[24], dtype[12];
	double bytes;
	int ncoll, nranks;
	long round; /* kept step (round), -1 warm-up or not kept */
	int pos;
};

static uint64_t fnv_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* key, op, dtype and bytes of the NCCL kernel k, the idx-th of the rank */
static void inst_info(const struct scan *sc, long idx, const struct kev *k, struct jinst *x)
{
	x->nranks = sc->world_size > 0 ? (int)sc->world_size : 0;
	job_nccl_name(sc->names[k->nccl - 1], x->op, sizeof(x->op), x->dtype, sizeof(x->dtype));
	snprintf(x->key, sizeof(x->key), "k%ld", idx);
	uint64_t lv;
	if (!hmap_get(&sc->launch, (uint64_t)k->c, &lv))
		return;
	long off = (long)(lv >> 8);
	int cnt = (int)(lv & 0xff);
	for (int j = 0; j < cnt; j++) {
		uint64_t ci;
		if (!hmap_get(&sc->collidx, (uint64_t)sc->cids[off + j], &ci))
			continue;
		const struct collrec *c = &sc->colls[ci];
		if (!x->ncoll++) {
			const struct commrec *co = comm_of(sc, c->comm);
			snprintf(x->key, sizeof(x->key), "%s:%ld",
			         co && co->uid[0] ? co->uid : "comm", c->n);
			if (co && co->nranks > 0)
				x->nranks = co->nranks;
			if (c->op[0])
				snprintf(x->op, sizeof(x->op), "%s", c->op);
			if (c->dtype[0])
				snprintf(x->dtype, sizeof(x->dtype), "%s", c->dtype);
		}
		x->bytes += c->bytes;
	}
}

static int step_by_seq(const void *a, const void *b)
{
	const struct nvstep *x = a, *y = b;
	return (x->start_seq > y->start_seq) - (x->start_seq < y->start_seq);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* the number of launches (sorted seqs ls[0..n)) before sequence number seq */
static long launches_before(const uint64_t *ls, long n, uint64_t seq)
{
	long lo = 0, hi = n;
	while (lo < hi) {
		long mid = (lo + hi) / 2;
		if (ls[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The NVTX step ranges into sc->steps (sorted by start), by the NVTX-step rule of steps.h, the
 * single-trace view's: pushes matched with their pops on the same thread, tallied in the order
 * they close; the step key's ranges are the steps, less those that hold no launch or start
 * before the previous step's end (ops counted by launches: a range holds the launches between
 * its push's and its pop's seq). *key gets the key's text (cut to keysz). Returns the number of
 * steps.
 */
static long nvtx_steps(struct scan *sc, char *key, size_t keysz)
{
	struct tstack {
		long tid, *st, n, a;
	} *ts = NULL;
	long nts = 0, ats = 0;
	long *pairs = NULL, npairs = 0, apairs = 0; /* push index, pop index, depth */
	for (long i = 0; i < sc->nnv; i++) {
		const struct nvev *v = &sc->nv[i];
		long t = 0;
		while (t < nts && ts[t].tid != v->tid)
			t++;
		if (t == nts) {
			ALLOC_GROW(ts, nts, ats);
			ts[nts++] = (struct tstack){v->tid, NULL, 0, 0};
		}
		struct tstack *q = &ts[t];
		if (v->push) {
			ALLOC_GROW(q->st, q->n, q->a);
			q->st[q->n++] = i;
		} else if (q->n) {
			long pi = q->st[--q->n];
			if (sc->nv[pi].text >= 0) {
				ALLOC_GROW(pairs, npairs + 2, apairs);
				pairs[npairs++] = pi;
				pairs[npairs++] = i;
				pairs[npairs++] = q->n;
			}
		}
	}
	for (long t = 0; t < nts; t++)
		free(ts[t].st);
	free(ts);
	uint64_t *ls = xmalloc(sizeof(uint64_t) * (sc->lseq.used + 1));
	long nls = 0;
	{
		size_t it = 0;
		uint64_t c, seq;
		while (hmap_next(&sc->lseq, &it, &c, &seq))
			ls[nls++] = seq;
		qsort(ls, (size_t)nls, sizeof(*ls), u64_cmp);
	}
	struct nvtx_rule rule;
	nvtx_rule_init(&rule);
	int *pk = xmalloc(sizeof(int) * (size_t)(npairs / 3 + 1));
	int sk = -1;
	for (long i = 0; i < npairs; i += 3) {
		pk[i / 3] = nvtx_rule_key(&rule, sc->texts[sc->nv[pairs[i]].text]);
		long held = launches_before(ls, nls, sc->nv[pairs[i + 1]].seq) -
		            launches_before(ls, nls, sc->nv[pairs[i]].seq);
		if (held < NVTX_STEP_MIN_OPS)
			continue; /* a range around one kernel or none (XLA's thunks, compile
			             passes) */
		sk = nvtx_rule_closed(&rule, pk[i / 3], (int)pairs[i + 2]);
	}
	if (sk < 0)
		sk = nvtx_rule_best(&rule);
	key[0] = 0;
	if (sk >= 0) {
		snprintf(key, keysz, "%s", nvtx_rule_text(&rule, sk));
		long last_end = 0;
		for (long i = 0; i < npairs; i += 3) {
			const struct nvev *p = &sc->nv[pairs[i]], *q = &sc->nv[pairs[i + 1]];
			if (pk[i / 3] != sk ||
			    !nvtx_step_accept(&last_end, launches_before(ls, nls, p->seq),
			                      launches_before(ls, nls, q->seq)))
				continue;
			ALLOC_GROW(sc->steps, sc->nsteps, sc->asteps);
			struct nvstep *st = &sc->steps[sc->nsteps++];
			memset(st, 0, sizeof(*st));
			st->start_seq = p->seq;
			st->end_seq = q->seq;
			st->start_ts = p->ts;
			st->end_ts = q->ts;
		}
		qsort(sc->steps, (size_t)sc->nsteps, sizeof(*sc->steps), step_by_seq);
	}
	free(ls);
	free(pk);
	nvtx_rule_release(&rule);
	free(pairs);
	return sc->nsteps;
}

/* the step whose range holds launch sequence number seq, -1 none */
static long step_of(const struct scan *sc, uint64_t seq)
{
	long lo = 0, hi = sc->nsteps;
	while (lo < hi) {
		long mid = (lo + hi) / 2;
		if (sc->steps[mid].start_seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	return seq < sc->steps[lo - 1].end_seq ? lo - 1 : -1;
}

/*
 * Cuts the instances into NVTX steps: each kernel goes to the step whose range holds its launch;
 * the steady steps are those whose collectives (op and bytes, in order) are the most common
 * sequence (ties: the later), the earlier ones warm-up (DDP's first steps broadcast and build
 * buckets). Sets round (the last JOB_MAX_ROUNDS steady steps) and pos of each instance, and
 * *steady to the steady steps' flags (caller frees). Returns the number of steady steps, 0
 * when the trace has no NVTX steps with collectives (the caller then cuts by rounds).
 */
static long cut_nvtx(struct scan *sc, struct jinst *in, long nin, unsigned char **steady)
{
	*steady = NULL;
	if (sc->nsteps < 2)
		return 0;
	for (long i = 0; i < sc->nk; i++) {
		struct kev *k = &sc->k[i];
		uint64_t seq;
		k->step = hmap_get(&sc->lseq, (uint64_t)k->c, &seq) ? step_of(sc, seq) : -1;
		if (k->step < 0)
			continue;
		struct nvstep *st = &sc->steps[k->step];
		if (!st->gpu0 || k->start < st->gpu0)
			st->gpu0 = k->start;
		if (!k->nccl)
			st->compute += (double)(k->end - k->start);
	}
	for (long i = 0; i < nin; i++) {
		const struct kev *k = &sc->k[in[i].k];
		if (k->step < 0)
			continue;
		struct nvstep *st = &sc->steps[k->step];
		st->ninst++;
		st->sig = fnv_str(st->sig ^ (uint64_t)in[i].bytes, in[i].op) * 1099511628211ULL;
	}
	uint64_t *sigs = xmalloc(sizeof(uint64_t) * (size_t)sc->nsteps);
	long ns = 0;
	for (long i = 0; i < sc->nsteps; i++)
		if (sc->steps[i].ninst)
			sigs[ns++] = sc->steps[i].sig;
	qsort(sigs, (size_t)ns, sizeof(*sigs), u64_cmp);
	uint64_t best = 0;
	long bestn = 0, bestlast = -1;
	for (long i = 0; i < ns;) {
		long j = i;
		while (j < ns && sigs[j] == sigs[i])
			j++;
		long last = -1;
		for (long t = 0; t < sc->nsteps; t++)
			if (sc->steps[t].ninst && sc->steps[t].sig == sigs[i])
				last = t;
		if (j - i > bestn || (j - i == bestn && last > bestlast)) {
			best = sigs[i];
			bestn = j - i;
			bestlast = last;
		}
		i = j;
	}
	free(sigs);
	if (bestn < 1)
		return 0;
	unsigned char *sf = xcalloc((size_t)sc->nsteps, 1);
	long *ord = xcalloc((size_t)sc->nsteps, sizeof(long));
	long nsteady = 0;
	for (long t = 0; t < sc->nsteps; t++)
		if (sc->steps[t].ninst && sc->steps[t].sig == best) {
			sf[t] = 1;
			ord[t] = nsteady++;
		}
	long keep_from = nsteady > JOB_MAX_ROUNDS ? nsteady - JOB_MAX_ROUNDS : 0;
	long cur = -1;
	int pos = 0;
	for (long i = 0; i < nin; i++) {
		long t = sc->k[in[i].k].step;
		in[i].round = -1;
		if (t < 0 || !sf[t])
			continue;
		if (t != cur) {
			cur = t;
			pos = 0;
		}
		in[i].pos = pos++;
		if (ord[t] >= keep_from)
			in[i].round = ord[t] - keep_from;
	}
	free(ord);
	*steady = sf;
	return nsteady;
}

/* instances in GPU start order cut into rounds of K (the step graph's NCCL nodes) counted back
 * from the last: the rule for traces without NVTX steps */
static long cut_rounds(const struct model *m, struct jinst *in, long nin, int *K)
{
	int k = 0;
	for (int i = 0; i < m->nnodes; i++)
		k += m->nodes[i].sem.family == FAM_NCCL;
	if (k <= 0)
		k = nin > 0 ? (int)nin : 1;
	long nrounds = nin / k, first = nin - nrounds * k;
	long keep_from = nrounds > JOB_MAX_ROUNDS ? nrounds - JOB_MAX_ROUNDS : 0;
	for (long i = 0; i < nin; i++) {
		long round = i < first ? -1 : (i - first) / k;
		in[i].round = round < keep_from ? -1 : round - keep_from;
		in[i].pos = i < first ? -1 : (int)((i - first) % k);
	}
	*K = k;
	return nrounds - keep_from;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double dmedian(double *a, long n)
{
	if (n <= 0)
		return 0;
	qsort(a, (size_t)n, sizeof(double), dcmp);
	return n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
}

/* a kernel's name as the step graph gives it: demangled, then shortened; caller frees */
static char *kernel_short(const char *name)
{
	char *full = demangle(name);
	char *s = short_name(full);
	free(full);
	return s;
}

/* the steady NVTX steps' figures: step time, compute, kernels by name, the last one's
 * timeline */
static void add_nvtx_figures(cJSON *root, const struct scan *sc, const unsigned char *steady,
                             long nsteady, const char *key, int with_timeline)
{
	double *a = xmalloc(sizeof(double) * (size_t)(sc->nsteps + 1));
	long n = 0, first = -1, last = -1;
	for (long t = 0; t < sc->nsteps; t++)
		if (steady[t]) {
			a[n++] = (double)(sc->steps[t].end_ts - sc->steps[t].start_ts) / 1e3;
			if (first < 0)
				first = t;
			last = t;
		}
	cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "steps");
	cJSON_ReplaceItemInObjectCaseSensitive(st, "count", cJSON_CreateNumber((double)sc->nsteps));
	cJSON_ReplaceItemInObjectCaseSensitive(st, "warmup", cJSON_CreateNumber((double)first));
	cJSON_ReplaceItemInObjectCaseSensitive(st, "how", cJSON_CreateString("nvtx"));
	cJSON_ReplaceItemInObjectCaseSensitive(st, "median_us",
	                                       cJSON_CreateNumber(r3(dmedian(a, n))));
	cJSON_AddNumberToObject(st, "steady", (double)nsteady);
	cJSON_AddStringToObject(st, "text", key);
	n = 0;
	for (long t = 0; t < sc->nsteps; t++)
		if (steady[t])
			a[n++] = sc->steps[t].compute / 1e3;
	cJSON_ReplaceItemInObjectCaseSensitive(root, "compute_us",
	                                       cJSON_CreateNumber(r3(dmedian(a, n))));
	free(a);
	/* kernels by name over the steady steps: count and time per step */
	long *cnt = xcalloc((size_t)sc->nnames + 1, sizeof(long));
	double *ns = xcalloc((size_t)sc->nnames + 1, sizeof(double));
	for (long i = 0; i < sc->nk; i++) {
		const struct kev *k = &sc->k[i];
		if (k->nccl || k->step < 0 || !steady[k->step])
			continue;
		cnt[k->name]++;
		ns[k->name] += (double)(k->end - k->start);
	}
	/* by short name, as the step graph names its nodes */
	char **sn = xcalloc((size_t)sc->nnames + 1, sizeof(char *));
	for (long i = 0; i <= sc->nnames; i++)
		if (cnt[i])
			sn[i] = kernel_short(i ? sc->names[i - 1] : "?");
	cJSON *arr = cJSON_CreateArray();
	for (long i = 0; i <= sc->nnames; i++) {
		if (!cnt[i])
			continue;
		for (long j = i + 1; j <= sc->nnames; j++)
			if (cnt[j] && !strcmp(sn[i], sn[j])) {
				cnt[i] += cnt[j];
				ns[i] += ns[j];
				cnt[j] = 0;
			}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", sn[i]);
		cJSON_AddNumberToObject(o, "count", r3((double)cnt[i] / (double)nsteady));
		cJSON_AddNumberToObject(o, "us", r3(ns[i] / 1e3 / (double)nsteady));
		cJSON_AddItemToArray(arr, o);
	}
	for (long i = 0; i <= sc->nnames; i++)
		free(sn[i]);
	free(sn);
	free(cnt);
	free(ns);
	cJSON_ReplaceItemInObjectCaseSensitive(root, "kernels", arr);
	if (!with_timeline || last < 0)
		return;
	/* the last steady step's kernels, from its first GPU start */
	cJSON *tl = cJSON_CreateObject();
	int64_t t0 = sc->steps[last].gpu0;
	cJSON_AddNumberToObject(tl, "t0_ns", (double)t0);
	cJSON *ev = cJSON_AddArrayToObject(tl, "events");
	for (long i = 0; i < sc->nk; i++) {
		const struct kev *k = &sc->k[i];
		if (k->step != last)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "node", -1);
		char *nm = kernel_short(k->name ? sc->names[k->name - 1] : "?");
		cJSON_AddStringToObject(o, "name", nm);
		free(nm);
		cJSON_AddStringToObject(o, "family", k->nccl ? "nccl" : "other");
		cJSON_AddNumberToObject(o, "stream", k->stream);
		cJSON_AddNumberToObject(o, "start_us", r3((double)(k->start - t0) / 1e3));
		cJSON_AddNumberToObject(o, "dur_us", r3((double)(k->end - k->start) / 1e3));
		cJSON_AddItemToArray(ev, o);
	}
	cJSON_ReplaceItemInObjectCaseSensitive(root, "timeline", tl);
}

static void add_colls(cJSON *root, const struct model *m, struct scan *sc)
{
	qsort(sc->k, (size_t)sc->nk, sizeof(*sc->k), kev_by_start);
	long nin = 0;
	for (long i = 0; i < sc->nk; i++)
		nin += sc->k[i].nccl != 0;
	struct jinst *in = xcalloc((size_t)nin + 1, sizeof(*in));
	for (long i = 0, idx = 0; i < sc->nk; i++)
		if (sc->k[i].nccl) {
			in[idx].k = i;
			inst_info(sc, idx, &sc->k[i], &in[idx]);
			idx++;
		}
	char key[128];
	unsigned char *steady = NULL;
	long rounds = 0, nsteady = 0;
	int K = 0;
	if (nvtx_steps(sc, key, sizeof(key)) >= 2)
		nsteady = cut_nvtx(sc, in, nin, &steady);
	int mK = 0;
	for (int i = 0; i < m->nnodes; i++)
		mK += m->nodes[i].sem.family == FAM_NCCL;
	if (nsteady > 0) {
		for (long i = 0; i < nin; i++)
			if (in[i].round >= 0 && in[i].pos + 1 > K)
				K = in[i].pos + 1;
		rounds = nsteady > JOB_MAX_ROUNDS ? JOB_MAX_ROUNDS : nsteady;
		/* the step graph's timeline and writers stand for the step only when it has the
		 * step's collectives */
		add_nvtx_figures(root, sc, steady, nsteady, key, mK != K);
		if (mK != K)
			cJSON_ReplaceItemInObjectCaseSensitive(root, "early", cJSON_CreateArray());
		cJSON_AddStringToObject(root, "steps_from", "nvtx");
	} else {
		rounds = cut_rounds(m, in, nin, &K);
		cJSON_AddStringToObject(root, "steps_from", "rounds");
	}
	free(steady);
	cJSON_AddNumberToObject(root, "per_round", K);
	cJSON_AddNumberToObject(root, "rounds", (double)rounds);
	cJSON_AddNumberToObject(root, "collectives", (double)nin);
	cJSON *cm = cJSON_AddArrayToObject(root, "comms");
	for (long i = 0; i < sc->ncomms; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "uid", sc->comms[i].uid);
		cJSON_AddNumberToObject(o, "nranks", sc->comms[i].nranks);
		cJSON_AddNumberToObject(o, "rank", sc->comms[i].rank);
		cJSON_AddItemToArray(cm, o);
	}
	cJSON *arr = cJSON_AddArrayToObject(root, "colls");
	int64_t *u = NULL;
	long nu = 0;
	int udev = -1;
	for (long i = 0; i < nin; i++) {
		const struct jinst *x = &in[i];
		const struct kev *k = &sc->k[x->k];
		if (x->round < 0)
			continue;
		if (k->dev != udev) {
			free(u);
			u = compute_union(sc, k->dev, &nu);
			udev = k->dev;
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "key", x->key);
		cJSON_AddStringToObject(o, "op", x->op);
		cJSON_AddStringToObject(o, "dtype", x->dtype);
		cJSON_AddNumberToObject(o, "bytes", x->bytes);
		cJSON_AddNumberToObject(o, "ncoll", x->ncoll);
		cJSON_AddNumberToObject(o, "nranks", x->nranks);
		cJSON_AddNumberToObject(o, "round", (double)x->round);
		cJSON_AddNumberToObject(o, "pos", x->pos);
		cJSON_AddNumberToObject(o, "start_ns", (double)k->start);
		cJSON_AddNumberToObject(o, "end_ns", (double)k->end);
		cJSON_AddNumberToObject(o, "dur_ns", (double)(k->end - k->start));
		cJSON_AddNumberToObject(o, "overlap_ns",
		                        (double)job_covered(k->start, k->end, u, nu));
		cJSON_AddNumberToObject(o, "dur_us", r3((double)(k->end - k->start) / 1e3));
		cJSON_AddNumberToObject(o, "overlap_us",
		                        r3((double)job_covered(k->start, k->end, u, nu) / 1e3));
		cJSON_AddItemToArray(arr, o);
	}
	free(u);
	free(in);
}

cJSON *job_rank_summary(const struct model *m, const char *path)
{
	struct scan sc;
	memset(&sc, 0, sizeof(sc));
	hmap_init(&sc.ncclstr);
	hmap_init(&sc.lseq);
	hmap_init(&sc.launch);
	hmap_init(&sc.collidx);
	sc.rank = sc.local_rank = sc.world_size = -1;
	if (scan_trace(&sc, path) < 0) {
		scan_release(&sc);
		return NULL;
	}
	cJSON *root = cJSON_CreateObject();
	cJSON_AddNumberToObject(root, "format", 1);
	/* the trace's entry, in summary.json's traces[] shape */
	cJSON *full = summary_json(m);
	cJSON *tr = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(full, "traces"), 0);
	cJSON_AddItemToObject(root, "trace", cJSON_Duplicate(tr, 1));
	cJSON_Delete(full);
	if (sc.has_rank)
		cJSON_AddNumberToObject(root, "rank", (double)sc.rank);
	else
		cJSON_AddNullToObject(root, "rank");
	cJSON_AddNumberToObject(root, "local_rank", (double)sc.local_rank);
	cJSON_AddNumberToObject(root, "world_size", (double)sc.world_size);
	cJSON_AddStringToObject(root, "host", sc.host);
	cJSON_AddStringToObject(root, "clock", sc.clock);
	cJSON *st = cJSON_AddObjectToObject(root, "steps");
	cJSON_AddNumberToObject(st, "count", m->nsteps);
	cJSON_AddNumberToObject(st, "warmup", m->warmup);
	cJSON_AddStringToObject(st, "how", m->steps_how ? m->steps_how : "whole");
	cJSON_AddNumberToObject(st, "median_us", r3(m->step_median_us));
	add_kernels(root, m);
	double *tl_start = xmalloc(sizeof(double) * (m->nnodes + 1));
	double *tl_end = xmalloc(sizeof(double) * (m->nnodes + 1));
	for (int i = 0; i <= m->nnodes; i++)
		tl_start[i] = tl_end[i] = -1;
	add_timeline(root, m, tl_start, tl_end);
	add_early(root, m, tl_start, tl_end);
	free(tl_start);
	free(tl_end);
	add_colls(root, m, &sc);
	scan_release(&sc);
	return root;
}

static int write_json(const char *path, cJSON *o)
{
	char *text = cJSON_PrintUnformatted(o);
	if (!text)
		return error("cannot format '%s'", path);
	size_t n = strlen(text);
	text[n] = '\n';
	int r = write_file_atomic(path, text, n + 1);
	free(text);
	return r;
}

int job_map(const char *path, const char *dir, int full, long fallback)
{
	struct model *m = analysis_run((char **)&path, 1);
	if (!m)
		return -1;
	cJSON *rs = job_rank_summary(m, path);
	int r = rs ? 0 : -1;
	char stem[64];
	if (m->traces[0].rank >= 0)
		snprintf(stem, sizeof(stem), "rank-%ld", m->traces[0].rank);
	else
		snprintf(stem, sizeof(stem), "trace-%ld", fallback);
	if (r == 0)
		r = mkdir_p(dir);
	if (r == 0 && full) {
		char name[96];
		snprintf(name, sizeof(name), "%s.summary.json", stem);
		char *p = path_join(dir, name);
		r = summary_write(m, p);
		free(p);
	}
	if (r == 0) {
		char name[96];
		snprintf(name, sizeof(name), "%s.json", stem);
		char *p = path_join(dir, name);
		r = write_json(p, rs);
		free(p);
	}
	cJSON_Delete(rs);
	model_free(m);
	return r;
}
