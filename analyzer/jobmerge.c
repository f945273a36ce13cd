/*
 * jobmerge.c - the reduce of the job view, and the fan-out that drives map and reduce (job.h).
 *
 * Rank summaries are read one at a time; each leaves a few numbers and its collective
 * instances in compact arrays (about 48 bytes an instance), and its cJSON is freed before the
 * next is read. Only the lowest rank's full summary, the slowest and the median rank's kernel
 * lists and a few ranks' timelines are read again at the end. Memory is O(ranks x kept rounds x
 * collectives per round), never a trace.
 *
 * Matching: instances with the same key (communicator uid and sequence number n, or the NCCL
 * kernel's ordinal where a trace has no `coll` records) are one collective. Its transfer time
 * is the fastest rank's kernel duration (the last rank to arrive waits for nobody); each
 * rank's waiting is its duration beyond that; bus bandwidth is NCCL's busBw over the transfer
 * time. Rows of the collectives table are positions in a round (the lowest rank's labels),
 * with medians over the kept rounds.
 *
 * The slowest rank is the one the others wait for: the most compute per step (the non-NCCL
 * kernels of its steps): in a synchronous job every rank's step takes as long as the slowest's,
 * and the others spend the difference waiting at collectives. Its extra kernels are the
 * difference of its kernels (by name: count and time per step) against the median rank's:
 * kernels of its own, or the same kernels running longer (`longer`), the "why" says which.
 *
 * Clocks: ranks on one host (header job.clock "realtime-shared-host", one host name) share
 * CLOCK_REALTIME; otherwise each rank's offset to the lowest rank is the median difference of
 * the end times of their matched collectives (a collective ends on all ranks together).
 *
 * Candidates of kind comm-overlap: a collective position whose median exposed time (its GPU
 * interval with no compute kernel running) is over JOB_EXPOSED_MIN_US; time saved per step is
 * that exposed time, at most the collective's transfer time (hiding a collective behind compute
 * cannot hide the wait for a late rank: that is the straggler's).
 */
#include "analyzer/job.h"
#include "analyzer/semantics.h"
#include "analyzer/timemodel.h"
#include "lib/json.h"
#include "lib/stats.h"
#include "lib/summary.h"
#include "lib/trace.h"
#include "lib/util.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JOB_EXPOSED_MIN_US 1.0
#define JOB_LANES          8  /* ranks with a timeline lane (plus the slowest) */
#define JOB_EXTRA_MAX      10 /* extra kernels listed */
#define JOB_CLOCK_SAMPLES  64

struct inst {
	uint64_t hash;
	int rank; /* index into ranks[] */
	short round, pos, op;
	short nranks;
	double dur_us, overlap_us;
	double bytes;
	int64_t end_ns;
	int dtype;
};

struct rankinfo {
	char *file;
	long rank; /* -1 none */
	int index; /* argument order */
	double step_us, compute_us, coll_us;
	long world_size;
	char *host, *clock;
	cJSON *trace; /* its traces[] entry, owned */
	int rounds, per_round;
	long ninst;
	double wait_med, exposed_med, overlap_med, collt_med;
	double offset_us;
	int nclk;
	double clk[JOB_CLOCK_SAMPLES];
};

struct merge {
	struct rankinfo *r;
	int n;
	struct inst *in;
	long nin, ain;
	char **ops, **dtypes;
	int nops, aops, ndt, adt;
};

static double r3(double x)
{
	return (double)(long long)(x * 1000 + (x < 0 ? -0.5 : 0.5)) / 1000;
}

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int intern(char ***tab, int *n, int *a, const char *s)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp((*tab)[i], s))
			return i;
	ALLOC_GROW(*tab, *n, *a);
	(*tab)[*n] = xstrdup(s);
	return (*n)++;
}

/* ---------------------------------------------------------------- reading rank summaries */

static int read_rank(struct merge *mg, int i)
{
	struct rankinfo *ri = &mg->r[i];
	cJSON *o = summary_read_kind(ri->file, SUMMARY_RANK, NULL);
	if (!o)
		return -1;
	const cJSON *rk = cJSON_GetObjectItemCaseSensitive(o, "rank");
	ri->rank = cJSON_IsNumber(rk) ? (long)json_clamp(o, "rank", -1, -1, 1e9) : -1;
	ri->world_size = (long)json_clamp(o, "world_size", -1, -1, 1e9);
	ri->host = xstrdup(jstrd(o, "host", ""));
	ri->clock = xstrdup(jstrd(o, "clock", ""));
	ri->step_us = jnumd(cJSON_GetObjectItemCaseSensitive(o, "steps"), "median_us", 0);
	ri->compute_us = jnumd(o, "compute_us", 0);
	ri->coll_us = jnumd(o, "coll_kernel_us", 0);
	ri->rounds = (int)json_clamp(o, "rounds", 0, 0, JOB_MAX_ROUNDS);
	ri->per_round = (int)json_clamp(o, "per_round", 0, 0, 4096);
	ri->trace = cJSON_DetachItemFromObjectCaseSensitive(o, "trace");
	if (!ri->trace)
		ri->trace = cJSON_CreateObject();
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(o, "colls"))
	{
		ALLOC_GROW(mg->in, mg->nin, mg->ain);
		struct inst *x = &mg->in[mg->nin++];
		x->hash = fnv(jstrd(c, "key", ""));
		x->rank = i;
		x->round = (short)json_clamp(c, "round", -1, -1, JOB_MAX_ROUNDS);
		x->pos = (short)json_clamp(c, "pos", 0, -1, 4096);
		x->op = (short)intern(&mg->ops, &mg->nops, &mg->aops, jstrd(c, "op", ""));
		x->dtype = intern(&mg->dtypes, &mg->ndt, &mg->adt, jstrd(c, "dtype", ""));
		x->nranks = (short)json_clamp(c, "nranks", 0, 0, 32767);
		/* exact nanoseconds where the map wrote them (rounding each instance to 1 ns
		 * keeps sums exact), else the rounded microseconds */
		x->dur_us =
		    json_clamp(c, "dur_ns", json_clamp(c, "dur_us", 0, 0, 1e12) * 1e3, 0, 1e15) /
		    1e3;
		x->overlap_us = json_clamp(c, "overlap_ns",
		                           json_clamp(c, "overlap_us", 0, 0, 1e12) * 1e3, 0, 1e15) /
		                1e3;
		x->bytes = json_clamp(c, "bytes", 0, 0, 1e18);
		x->end_ns = (int64_t)json_clamp(
		    c, "end_ns", json_clamp(c, "start_ns", 0, 0, 4e18) + x->dur_us * 1e3, 0, 4e18);
		ri->ninst++;
	}
	cJSON_Delete(o);
	return 0;
}

static int inst_cmp(const void *a, const void *b)
{
	const struct inst *x = a, *y = b;
	if (x->hash != y->hash)
		return (x->hash > y->hash) - (x->hash < y->hash);
	return (x->rank > y->rank) - (x->rank < y->rank);
}

static int rank_cmp(const void *a, const void *b)
{
	const struct rankinfo *x = a, *y = b;
	long rx = x->rank < 0 ? 1L << 40 : x->rank, ry = y->rank < 0 ? 1L << 40 : y->rank;
	if (rx != ry)
		return (rx > ry) - (rx < ry);
	return (x->index > y->index) - (x->index < y->index);
}

/* ---------------------------------------------------------------- the job view */

struct posrow {
	int op, dtype, nranks, node;
	double bytes;
	long rounds, matched;
	double *dur, *bw, *wait, *exposed, *overlap; /* per round */
	int *late;                                   /* per rank: times it arrived last */
};

/* per rank per round: collective time, waiting, exposed, overlapped */
struct rr {
	double coll, wait, exposed, overlap;
};

static const char *advice_for(const char *op, int last)
{
	if (!strcmp(op, "AllReduce"))
		return last
		           ? "the step's last gradient bucket is reduced after the backward pass: "
		             "overlap it with the optimizer (DDP comm hook, "
		             "ZeroRedundancyOptimizer(overlap_with_ddp=True), or step the "
		             "optimizer per "
		             "bucket) and make buckets smaller (DDP bucket_cap_mb) so the last one "
		             "is "
		             "short; gradient_as_bucket_view=True saves the copy into the bucket"
		           : "start the reduction earlier: smaller DDP buckets (bucket_cap_mb) are "
		             "launched as soon as their gradients are ready; "
		             "gradient_as_bucket_view="
		             "True removes the copy into the bucket";
	if (!strcmp(op, "AllGather"))
		return "prefetch the next parameters: FSDP forward_prefetch=True and "
		       "backward_prefetch=BACKWARD_PRE, so the all-gather runs under the current "
		       "layer";
	if (!strcmp(op, "ReduceScatter"))
		return "overlap the gradient reduce-scatter with the next layer's backward: FSDP "
		       "backward_prefetch=BACKWARD_PRE, smaller FSDP units";
	return "issue the collective on its own stream as early as its input is ready, and give "
	       "the "
	       "GPU independent compute to run meanwhile";
}

static cJSON *rank_row(const struct rankinfo *ri)
{
	cJSON *o = cJSON_CreateObject();
	if (ri->rank >= 0)
		cJSON_AddNumberToObject(o, "rank", (double)ri->rank);
	else
		cJSON_AddNullToObject(o, "rank");
	cJSON_AddStringToObject(o, "path", jstrd(ri->trace, "path", ""));
	cJSON_AddStringToObject(o, "host", ri->host);
	cJSON_AddNumberToObject(o, "step_median_us", r3(ri->step_us));
	cJSON_AddNumberToObject(o, "compute_us", r3(ri->compute_us));
	cJSON_AddNumberToObject(o, "collective_us", r3(ri->collt_med));
	cJSON_AddNumberToObject(o, "wait_us", r3(ri->wait_med));
	cJSON_AddNumberToObject(o, "exposed_us", r3(ri->exposed_med));
	cJSON_AddNumberToObject(o, "overlapped_us", r3(ri->overlap_med));
	cJSON_AddNumberToObject(o, "clock_offset_us", r3(ri->offset_us));
	cJSON_AddBoolToObject(o, "truncated",
	                      cJSON_IsTrue(cJSON_GetObjectItem(ri->trace, "truncated")));
	return o;
}

/* the slowest rank's kernels beyond the median rank's, by name */
static cJSON *extra_kernels(const struct rankinfo *slow, const struct rankinfo *med)
{
	cJSON *arr = cJSON_CreateArray();
	cJSON *a = summary_read_kind(slow->file, SUMMARY_RANK, NULL),
	      *b = summary_read_kind(med->file, SUMMARY_RANK, NULL);
	if (!a || !b)
		goto out;
	const cJSON *ka = cJSON_GetObjectItemCaseSensitive(a, "kernels");
	const cJSON *kb = cJSON_GetObjectItemCaseSensitive(b, "kernels");
	const cJSON *x;
	cJSON_ArrayForEach(x, ka)
	{
		double cnt = jnumd(x, "count", 0), us = jnumd(x, "us", 0), mc = 0, mu = 0;
		const cJSON *y;
		cJSON_ArrayForEach(y, kb) if (!strcmp(jstrd(y, "name", ""), jstrd(x, "name", "")))
		{
			mc = jnumd(y, "count", 0);
			mu = jnumd(y, "us", 0);
		}
		double extra = us - mu;
		if (cnt <= mc && !(extra > 1.0 && extra > 0.05 * (mu > 0 ? mu : 1)))
			continue;
		if (extra <= 0)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", jstrd(x, "name", ""));
		cJSON_AddNumberToObject(o, "count", cnt);
		cJSON_AddNumberToObject(o, "median_rank_count", mc);
		cJSON_AddNumberToObject(o, "us", r3(us));
		cJSON_AddNumberToObject(o, "median_rank_us", r3(mu));
		cJSON_AddNumberToObject(o, "extra_us", r3(extra));
		cJSON_AddBoolToObject(o, "longer", mc > 0);
		/* sorted by extra_us, largest first */
		int at = 0;
		const cJSON *z;
		cJSON_ArrayForEach(z, arr)
		{
			if (jnumd(z, "extra_us", 0) < extra)
				break;
			at++;
		}
		if (at >= cJSON_GetArraySize(arr))
			cJSON_AddItemToArray(arr, o);
		else
			cJSON_InsertItemInArray(arr, at, o);
	}
	while (cJSON_GetArraySize(arr) > JOB_EXTRA_MAX)
		cJSON_DeleteItemFromArray(arr, JOB_EXTRA_MAX);
out:
	cJSON_Delete(a);
	cJSON_Delete(b);
	return arr;
}

static char *sibling_summary(const char *rank_file)
{
	size_t n = strlen(rank_file);
	struct strbuf sb = STRBUF_INIT;
	if (n > 5 && !strcmp(rank_file + n - 5, ".json"))
		n -= 5;
	strbuf_add(&sb, rank_file, n);
	strbuf_adds(&sb, ".summary.json");
	return sb.buf;
}

static void add_lanes(cJSON *job, struct merge *mg, int slow)
{
	cJSON *lanes = cJSON_AddArrayToObject(job, "lanes");
	for (int i = 0; i < mg->n; i++) {
		if (i >= JOB_LANES && i != slow)
			continue;
		cJSON *o = summary_read_kind(mg->r[i].file, SUMMARY_RANK, NULL);
		if (!o)
			continue;
		cJSON *tl = cJSON_DetachItemFromObjectCaseSensitive(o, "timeline");
		cJSON_Delete(o);
		if (!tl)
			continue;
		if (mg->r[i].rank >= 0)
			cJSON_AddNumberToObject(tl, "rank", (double)mg->r[i].rank);
		else
			cJSON_AddNullToObject(tl, "rank");
		cJSON_AddItemToArray(lanes, tl);
	}
}

static void clock_align(struct merge *mg, cJSON *job)
{
	/* one host: its CLOCK_REALTIME is every rank's clock, whether or not the header says so */
	int shared = mg->r[0].host[0] != 0;
	for (int i = 0; i < mg->n; i++)
		if ((mg->r[i].clock[0] && strcmp(mg->r[i].clock, "realtime-shared-host")) ||
		    strcmp(mg->r[i].host, mg->r[0].host))
			shared = 0;
	cJSON *c = cJSON_AddObjectToObject(job, "clock");
	if (shared) {
		cJSON_AddStringToObject(c, "method", "shared-host");
		return;
	}
	/* offsets from matched collectives' end times against rank index 0 */
	for (long i = 0; i < mg->nin;) {
		long j = i;
		while (j < mg->nin && mg->in[j].hash == mg->in[i].hash)
			j++;
		if (mg->in[i].rank == 0)
			for (long k = i + 1; k < j; k++) {
				struct rankinfo *ri = &mg->r[mg->in[k].rank];
				if (ri->nclk < JOB_CLOCK_SAMPLES)
					ri->clk[ri->nclk++] =
					    (double)(mg->in[i].end_ns - mg->in[k].end_ns) / 1e3;
			}
		i = j;
	}
	int any = 0;
	for (int i = 1; i < mg->n; i++)
		if (mg->r[i].nclk) {
			mg->r[i].offset_us = stats_median(mg->r[i].clk, (size_t)(mg->r[i].nclk));
			any = 1;
		}
	cJSON_AddStringToObject(c, "method", any ? "aligned-by-collectives" : "unaligned");
}

static void comm_candidates(cJSON *base, cJSON *rows, const cJSON *early, int per_round)
{
	cJSON *cands = cJSON_GetObjectItemCaseSensitive(base, "candidates");
	if (!cJSON_IsArray(cands)) {
		cands = cJSON_CreateArray();
		cJSON_AddItemToObject(base, "candidates", cands);
	}
	int id = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cands) if (json_clamp(c, "id", -1, -1, 1e9) >= id) id =
	    (int)json_clamp(c, "id", 0, 0, 1e9) + 1;
	const cJSON *row;
	cJSON_ArrayForEach(row, rows)
	{
		double exposed = jnumd(row, "exposed_us", 0);
		if (exposed < JOB_EXPOSED_MIN_US)
			continue;
		int pos = (int)json_clamp(row, "pos", 0, -1, 4096);
		const char *op = jstrd(row, "op", "");
		const cJSON *e = NULL, *x;
		cJSON_ArrayForEach(x, early) if ((int)json_clamp(x, "pos", -1, -1, 4096) == pos) e =
		    x;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", id++);
		cJSON_AddStringToObject(o, "kind", "comm-overlap");
		cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
		if (e && cJSON_IsNumber(cJSON_GetObjectItem(e, "node")))
			cJSON_AddItemToArray(nodes, cJSON_CreateNumber(jnumd(e, "node", 0)));
		cJSON_AddArrayToObject(o, "values_removed");
		cJSON_AddArrayToObject(o, "values_kept");
		cJSON_AddNumberToObject(o, "bytes_saved_per_step", 0);
		/* hiding a collective hides at most its transfer; waiting for a late rank is the
		 * straggler's, listed there */
		double dur = jnumd(row, "duration_us", 0);
		double saved = exposed < dur ? exposed : dur;
		cJSON_AddNumberToObject(o, "time_before_us", r3(exposed));
		cJSON_AddNumberToObject(o, "time_after_us", r3(exposed - saved));
		cJSON_AddNumberToObject(o, "time_saved_us_per_step", r3(saved));
		cJSON *src = cJSON_AddArrayToObject(o, "sources");
		if (e && cJSON_IsString(cJSON_GetObjectItem(e, "writer_source")))
			cJSON_AddItemToArray(src,
			                     cJSON_CreateString(jstrd(e, "writer_source", "")));
		int last = pos == per_round - 1;
		cJSON_AddStringToObject(o, "library_form", advice_for(op, last));
		cJSON_AddNullToObject(o, "group");
		cJSON_AddStringToObject(
		    o, "group_why", "communication overlap is a change of schedule, not a kernel");
		char why[512];
		double slack = e ? jnumd(e, "slack_us", -1) : -1;
		if (slack > 0)
			snprintf(why, sizeof(why),
			         "%s #%d of the step (%.0f bytes) runs %.1f us with no compute "
			         "beside it; "
			         "its input was ready %.1f us before it started",
			         op, pos, jnumd(row, "bytes", 0), exposed, slack);
		else
			snprintf(why, sizeof(why),
			         "%s #%d of the step (%.0f bytes) runs %.1f us with no compute "
			         "beside it",
			         op, pos, jnumd(row, "bytes", 0), exposed);
		cJSON_AddStringToObject(o, "why", why);
		cJSON *ev = cJSON_AddObjectToObject(o, "evidence");
		cJSON_AddNumberToObject(ev, "pos", pos);
		cJSON_AddStringToObject(ev, "op", op);
		cJSON_AddNumberToObject(ev, "bytes", jnumd(row, "bytes", 0));
		cJSON_AddNumberToObject(ev, "duration_us", r3(dur));
		cJSON_AddNumberToObject(ev, "wait_us", r3(jnumd(row, "wait_us", 0)));
		cJSON_AddNumberToObject(ev, "exposed_us", r3(exposed));
		cJSON_AddNumberToObject(ev, "overlapped_us", r3(jnumd(row, "overlapped_us", 0)));
		if (slack > 0)
			cJSON_AddNumberToObject(ev, "slack_us", r3(slack));
		else
			cJSON_AddNullToObject(ev, "slack_us");
		cJSON_AddItemToArray(cands, o);
	}
}

static void build_view(struct merge *mg, cJSON *base)
{
	int n = mg->n;
	int R = JOB_MAX_ROUNDS;
	struct rr *rr = xcalloc((size_t)n * R, sizeof(*rr));
	/* the labels (step, position) come from the lowest rank whose trace is whole: a trace cut
	 * short counts its steps back from a partial last step */
	int lr = 0;
	while (lr < n - 1 && cJSON_IsTrue(cJSON_GetObjectItem(mg->r[lr].trace, "truncated")))
		lr++;
	if (cJSON_IsTrue(cJSON_GetObjectItem(mg->r[lr].trace, "truncated")))
		lr = 0;
	int per_round = mg->r[lr].per_round > 0 ? mg->r[lr].per_round : 1;
	struct posrow *rows = xcalloc((size_t)per_round, sizeof(*rows));
	for (int p = 0; p < per_round; p++) {
		rows[p].op = -1;
		rows[p].node = -1;
		rows[p].dur = xcalloc(R, sizeof(double));
		rows[p].bw = xcalloc(R, sizeof(double));
		rows[p].wait = xcalloc(R, sizeof(double));
		rows[p].exposed = xcalloc(R, sizeof(double));
		rows[p].overlap = xcalloc(R, sizeof(double));
		rows[p].late = xcalloc(n, sizeof(int));
	}
	qsort(mg->in, (size_t)mg->nin, sizeof(*mg->in), inst_cmp);
	cJSON *job = cJSON_CreateObject();
	clock_align(mg, job);
	long matched = 0, keys = 0;
	for (long i = 0; i < mg->nin;) {
		long j = i;
		double mn = 1e300, mx = 0;
		int fastest = -1;
		while (j < mg->nin && mg->in[j].hash == mg->in[i].hash) {
			if (mg->in[j].dur_us < mn) {
				mn = mg->in[j].dur_us;
				fastest = mg->in[j].rank;
			}
			if (mg->in[j].dur_us > mx)
				mx = mg->in[j].dur_us;
			j++;
		}
		keys++;
		const struct inst *lab = &mg->in[i]; /* lowest rank present: sorted by rank */
		for (long k = i; k < j; k++)
			if (mg->in[k].rank == lr)
				lab = &mg->in[k];
		int want = lab->nranks > 0 ? lab->nranks : n;
		int full = j - i >= want;
		matched += full;
		double maxwait = 0, exp_sum = 0, ov_sum = 0;
		for (long k = i; k < j; k++) {
			const struct inst *x = &mg->in[k];
			double w = x->dur_us - mn;
			if (w > maxwait)
				maxwait = w;
			double ov = x->overlap_us, ex = x->dur_us - ov;
			exp_sum += ex;
			ov_sum += ov;
			if (x->round >= 0 && x->round < R) {
				struct rr *q = &rr[(size_t)x->rank * R + x->round];
				q->coll += x->dur_us;
				q->wait += w;
				q->exposed += ex;
				q->overlap += ov;
			}
		}
		if (lab->round >= 0 && lab->round < R && lab->pos >= 0 && lab->pos < per_round) {
			struct posrow *p = &rows[lab->pos];
			long r = lab->round;
			if (p->op < 0) {
				p->op = lab->op;
				p->dtype = lab->dtype;
				p->nranks = want;
				p->bytes = lab->bytes;
			}
			p->rounds++;
			p->matched += full;
			p->dur[r] = mn;
			p->bw[r] = mn > 0
			               ? job_alg_bytes(mg->ops[lab->op], lab->bytes, want) /
			                     (mn * 1e3) * job_busbw_factor(mg->ops[lab->op], want)
			               : 0;
			p->wait[r] = maxwait;
			p->exposed[r] = exp_sum / (double)(j - i);
			p->overlap[r] = ov_sum / (double)(j - i);
			if (fastest >= 0 && j - i > 1)
				p->late[fastest]++;
		}
		i = j;
	}
	/* per rank: medians over its rounds */
	double *tmp = xmalloc(sizeof(double) * (R + n + 1));
	for (int i = 0; i < n; i++) {
		struct rankinfo *ri = &mg->r[i];
		int nr = ri->rounds < R ? ri->rounds : R;
		double *a = tmp;
		for (int k = 0; k < nr; k++)
			a[k] = rr[(size_t)i * R + k].wait;
		ri->wait_med = stats_median(a, (size_t)(nr));
		for (int k = 0; k < nr; k++)
			a[k] = rr[(size_t)i * R + k].exposed;
		ri->exposed_med = stats_median(a, (size_t)(nr));
		for (int k = 0; k < nr; k++)
			a[k] = rr[(size_t)i * R + k].overlap;
		ri->overlap_med = stats_median(a, (size_t)(nr));
		for (int k = 0; k < nr; k++)
			a[k] = rr[(size_t)i * R + k].coll;
		ri->collt_med = stats_median(a, (size_t)(nr));
	}
	/* the slowest rank and the median rank by compute per step */
	int slow = 0;
	for (int i = 1; i < n; i++)
		if (mg->r[i].compute_us > mg->r[slow].compute_us)
			slow = i;
	for (int i = 0; i < n; i++)
		tmp[i] = mg->r[i].compute_us;
	double medc = stats_median(tmp, (size_t)(n));
	int med = -1;
	for (int i = 0; i < n; i++)
		if (i != slow && (med < 0 || fabs(mg->r[i].compute_us - medc) <
		                                 fabs(mg->r[med].compute_us - medc)))
			med = i;
	if (med < 0)
		med = slow;

	cJSON_AddNumberToObject(job, "ranks", n);
	cJSON_AddNumberToObject(job, "world_size", (double)mg->r[0].world_size);
	cJSON *hosts = cJSON_AddArrayToObject(job, "hosts");
	for (int i = 0; i < n; i++) {
		int seen = 0;
		const cJSON *h;
		cJSON_ArrayForEach(h, hosts) if (!strcmp(h->valuestring, mg->r[i].host)) seen = 1;
		if (!seen && cJSON_GetArraySize(hosts) < 64)
			cJSON_AddItemToArray(hosts, cJSON_CreateString(mg->r[i].host));
	}
	cJSON_AddNumberToObject(job, "collectives_per_step", per_round);
	cJSON_AddNumberToObject(job, "collectives_seen", (double)keys);
	cJSON_AddNumberToObject(job, "collectives_matched", (double)matched);
	cJSON *pr = cJSON_AddArrayToObject(job, "per_rank");
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(pr, rank_row(&mg->r[i]));

	cJSON *sl = cJSON_AddObjectToObject(job, "slowest");
	const struct rankinfo *S = &mg->r[slow], *M = &mg->r[med];
	if (S->rank >= 0)
		cJSON_AddNumberToObject(sl, "rank", (double)S->rank);
	else
		cJSON_AddNullToObject(sl, "rank");
	if (M->rank >= 0)
		cJSON_AddNumberToObject(sl, "median_rank", (double)M->rank);
	else
		cJSON_AddNullToObject(sl, "median_rank");
	cJSON_AddNumberToObject(sl, "compute_us", r3(S->compute_us));
	cJSON_AddNumberToObject(sl, "median_compute_us", r3(M->compute_us));
	cJSON_AddNumberToObject(sl, "behind_us", r3(S->compute_us - M->compute_us));
	cJSON_AddNumberToObject(sl, "wait_us", r3(S->wait_med));
	for (int i = 0; i < n; i++)
		tmp[i] = mg->r[i].wait_med;
	cJSON_AddNumberToObject(sl, "median_wait_us", r3(stats_median(tmp, (size_t)(n))));
	cJSON_AddItemToObject(sl, "extra_kernels",
	                      n > 1 ? extra_kernels(S, M) : cJSON_CreateArray());
	/* what the extra time is: the same kernels running longer, or kernels of its own */
	double longer = 0, own = 0;
	const cJSON *ek, *top = NULL;
	cJSON_ArrayForEach(ek, cJSON_GetObjectItemCaseSensitive(sl, "extra_kernels"))
	{
		if (cJSON_IsTrue(cJSON_GetObjectItem(ek, "longer"))) {
			longer += jnumd(ek, "extra_us", 0);
			if (!top)
				top = ek;
		} else {
			own += jnumd(ek, "extra_us", 0);
		}
	}
	cJSON_AddNumberToObject(sl, "longer_us", r3(longer));
	cJSON_AddNumberToObject(sl, "own_kernels_us", r3(own));
	char *topname = top ? short_name(jstrd(top, "name", "")) : NULL;
	char what[300] = "";
	if (longer > 0 && topname)
		snprintf(what, sizeof(what),
		         ": the same kernels run longer there (+%.1f us, most %s +%.1f us)%s",
		         longer, topname, jnumd(top, "extra_us", 0),
		         own > 0 ? ", and kernels of its own" : "");
	else if (own > 0)
		snprintf(what, sizeof(what), ": kernels the median rank does not run (+%.1f us)",
		         own);
	free(topname);
	char why[700];
	snprintf(why, sizeof(why),
	         "rank %ld computes %.1f us per step, %.1f us more than the median rank %ld%s; the "
	         "others wait for it at collectives (median %.1f us per step, it waits %.1f us)",
	         S->rank, S->compute_us, S->compute_us - M->compute_us, M->rank, what,
	         jnumd(sl, "median_wait_us", 0), S->wait_med);
	cJSON_AddStringToObject(sl, "why", why);

	cJSON *rows_j = cJSON_AddArrayToObject(job, "collectives");
	for (int p = 0; p < per_round; p++) {
		struct posrow *q = &rows[p];
		if (q->op < 0)
			continue;
		long nr = 0;
		for (int r = 0; r < R; r++)
			nr += q->dur[r] > 0 || q->exposed[r] > 0 || q->bw[r] > 0;
		double *a = tmp;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pos", p);
		cJSON_AddStringToObject(o, "op", mg->ops[q->op]);
		cJSON_AddStringToObject(o, "dtype", mg->dtypes[q->dtype]);
		cJSON_AddNumberToObject(o, "bytes", q->bytes);
		cJSON_AddNumberToObject(o, "nranks", q->nranks);
		cJSON_AddNumberToObject(o, "rounds", (double)q->rounds);
		cJSON_AddNumberToObject(o, "matched", (double)q->matched);
#define MED(field, name)                                                                           \
	do {                                                                                       \
		long kk = 0;                                                                       \
		for (int r = 0; r < R; r++)                                                        \
			if (q->dur[r] > 0)                                                         \
				a[kk++] = q->field[r];                                             \
		cJSON_AddNumberToObject(o, name, r3(stats_median(a, (size_t)(kk))));               \
	} while (0)
		MED(dur, "duration_us");
		long k = 0;
		for (int r = 0; r < R; r++)
			if (q->dur[r] > 0 && q->bytes > 0)
				a[k++] = q->bw[r];
		if (k)
			cJSON_AddNumberToObject(o, "busbw_gbs", r3(stats_median(a, (size_t)(k))));
		else
			cJSON_AddNullToObject(o, "busbw_gbs");
		MED(wait, "wait_us");
		MED(exposed, "exposed_us");
		MED(overlap, "overlapped_us");
#undef MED
		int late = -1;
		for (int i = 0; i < n; i++)
			if (q->late[i] && (late < 0 || q->late[i] > q->late[late]))
				late = i;
		if (late >= 0 && mg->r[late].rank >= 0)
			cJSON_AddNumberToObject(o, "last_to_arrive", (double)mg->r[late].rank);
		else
			cJSON_AddNullToObject(o, "last_to_arrive");
		(void)nr;
		cJSON_AddItemToArray(rows_j, o);
	}
	/* overlap per step (round): medians across ranks */
	cJSON *steps = cJSON_AddArrayToObject(job, "overlap_steps");
	int nrounds = mg->r[lr].rounds < R ? mg->r[lr].rounds : R;
	for (int r = 0; r < nrounds; r++) {
		double *a = tmp;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "round", r);
#define ACROSS(field, name)                                                                        \
	do {                                                                                       \
		for (int i = 0; i < n; i++)                                                        \
			a[i] = rr[(size_t)i * R + r].field;                                        \
		cJSON_AddNumberToObject(o, name, r3(stats_median(a, (size_t)(n))));                \
	} while (0)
		ACROSS(coll, "collective_us");
		ACROSS(overlap, "overlapped_us");
		ACROSS(exposed, "exposed_us");
		ACROSS(wait, "wait_us");
#undef ACROSS
		cJSON_AddItemToArray(steps, o);
	}
	/* early start, from the lowest rank's graph */
	cJSON *early = NULL;
	cJSON *r0 = summary_read_kind(mg->r[0].file, SUMMARY_RANK, NULL);
	if (r0)
		early = cJSON_DetachItemFromObjectCaseSensitive(r0, "early");
	cJSON_Delete(r0);
	if (!early)
		early = cJSON_CreateArray();
	cJSON_AddItemToObject(job, "early_start", early);
	for (int i = 0; i < n; i++)
		tmp[i] = mg->r[i].exposed_med;
	cJSON_AddNumberToObject(job, "exposed_us_per_step", r3(stats_median(tmp, (size_t)(n))));
	for (int i = 0; i < n; i++)
		tmp[i] = mg->r[i].overlap_med;
	cJSON_AddNumberToObject(job, "overlapped_us_per_step", r3(stats_median(tmp, (size_t)(n))));
	add_lanes(job, mg, slow);
	comm_candidates(base, rows_j, early, per_round);
	timemodel_renumber(base);

	/* traces[]: every rank's entry, in rank order */
	cJSON *tr = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		cJSON_AddItemToArray(tr, mg->r[i].trace);
		mg->r[i].trace = NULL;
	}
	cJSON_ReplaceItemInObjectCaseSensitive(base, "traces", tr);
	cJSON_AddItemToObject(base, "job", job);

	free(tmp);
	for (int p = 0; p < per_round; p++) {
		free(rows[p].dur);
		free(rows[p].bw);
		free(rows[p].wait);
		free(rows[p].exposed);
		free(rows[p].overlap);
		free(rows[p].late);
	}
	free(rows);
	free(rr);
}

static void merge_release(struct merge *mg)
{
	for (int i = 0; i < mg->n; i++) {
		free(mg->r[i].file);
		free(mg->r[i].host);
		free(mg->r[i].clock);
		cJSON_Delete(mg->r[i].trace);
	}
	free(mg->r);
	free(mg->in);
	for (int i = 0; i < mg->nops; i++)
		free(mg->ops[i]);
	free(mg->ops);
	for (int i = 0; i < mg->ndt; i++)
		free(mg->dtypes[i]);
	free(mg->dtypes);
}

int job_merge_files(char **rank_files, int n, const char *outdir)
{
	if (n <= 0)
		return error("no rank summaries to merge");
	struct merge mg;
	memset(&mg, 0, sizeof(mg));
	mg.r = xcalloc((size_t)n, sizeof(*mg.r));
	mg.n = n;
	int ret = -1;
	for (int i = 0; i < n; i++) {
		mg.r[i].file = xstrdup(rank_files[i]);
		mg.r[i].index = i;
	}
	for (int i = 0; i < n; i++)
		if (read_rank(&mg, i) < 0)
			goto out;
	/* rank order; instances point at indices, so renumber them */
	int *order = xmalloc(sizeof(int) * n);
	for (int i = 0; i < n; i++)
		mg.r[i].index = i;
	qsort(mg.r, (size_t)n, sizeof(*mg.r), rank_cmp);
	for (int i = 0; i < n; i++)
		order[mg.r[i].index] = i;
	for (long k = 0; k < mg.nin; k++)
		mg.in[k].rank = order[mg.in[k].rank];
	free(order);
	for (int i = 1; i < n; i++)
		if (mg.r[i].rank >= 0 && mg.r[i].rank == mg.r[i - 1].rank) {
			error("'%s' and '%s' are both rank %ld", mg.r[i - 1].file, mg.r[i].file,
			      mg.r[i].rank);
			goto out;
		}
	char *bpath = sibling_summary(mg.r[0].file);
	cJSON *base = summary_read(bpath);
	if (!base) {
		error("the lowest rank's full summary '%s' is needed for the merge", bpath);
		free(bpath);
		goto out;
	}
	free(bpath);
	build_view(&mg, base);
	char *text = cJSON_Print(base);
	cJSON_Delete(base);
	if (mkdir_p(outdir) == 0 && text) {
		char *p = path_join(outdir, "summary.json");
		size_t len = strlen(text);
		text[len] = '\n';
		ret = write_file_atomic(p, text, len + 1);
		free(p);
	}
	free(text);
out:
	merge_release(&mg);
	return ret;
}

/* ---------------------------------------------------------------- the fan-out */

static int peek_header(void *ctx, const struct trace_record *rec)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec->obj, "rank");
	if (rec->type == TRACE_HEADER && cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble < 1e9)
		*(long *)ctx = (long)v->valuedouble;
	return 1; /* the first record is all it needs */
}

/* the header's rank of the trace at path, -1 without one or when it cannot be read */
static long peek_rank(const char *path)
{
	long r = -1;
	struct trace_consumer c = {peek_header, &r, TRACE_ALL};
	trace_read(path, &c, 1, NULL, TRACE_QUIET);
	return r;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int job_run(char **paths, int n, const char *outdir, int jobs)
{
	if (jobs <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = c > 0 ? (int)c : 1;
	}
	char *dir = path_join(outdir, "ranks");
	if (mkdir_p(dir) < 0) {
		free(dir);
		return -1;
	}
	long *rank = xmalloc(sizeof(long) * n);
	int low = 0;
	for (int i = 0; i < n; i++) {
		rank[i] = peek_rank(paths[i]);
		for (int k = 0; k < i; k++)
			if (rank[i] >= 0 && rank[k] == rank[i]) {
				error("'%s' and '%s' are both rank %ld", paths[k], paths[i],
				      rank[i]);
				free(rank);
				free(dir);
				return -1;
			}
		if (rank[i] >= 0 && (rank[low] < 0 || rank[i] < rank[low]))
			low = i;
	}
	double t0 = now_s();
	pid_t *pids = xcalloc((size_t)n, sizeof(pid_t));
	int running = 0, failed = -1, next = 0;
	fflush(stdout);
	fflush(stderr);
	while (next < n || running) {
		if (next < n && running < jobs && failed < 0) {
			pid_t p = fork();
			if (p < 0) {
				failed = next;
				error("cannot fork: %s", strerror(errno));
				continue;
			}
			if (p == 0) {
				int r = job_map(paths[next], dir, next == low, next);
				fflush(stderr);
				_exit(r < 0 ? 1 : 0);
			}
			pids[next++] = p;
			running++;
			continue;
		}
		if (!running)
			break;
		int st;
		pid_t p = wait(&st);
		if (p < 0)
			break;
		running--;
		for (int i = 0; i < n; i++)
			if (pids[i] == p && !(WIFEXITED(st) && WEXITSTATUS(st) == 0) &&
			    failed < 0) {
				failed = i;
				if (!WIFEXITED(st))
					error("analysis of '%s' was killed by signal %d", paths[i],
					      WTERMSIG(st));
			}
	}
	free(pids);
	double t1 = now_s();
	int ret = -1;
	if (failed >= 0) {
		error("'%s' could not be analysed; nothing written", paths[failed]);
		goto out;
	}
	char **files = xmalloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++) {
		char name[96];
		if (rank[i] >= 0)
			snprintf(name, sizeof(name), "rank-%ld.json", rank[i]);
		else
			snprintf(name, sizeof(name), "trace-%d.json", i);
		files[i] = path_join(dir, name);
	}
	ret = job_merge_files(files, n, outdir);
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	if (getenv("AICPROF_STATS")) {
		struct rusage self, kids;
		getrusage(RUSAGE_SELF, &self);
		getrusage(RUSAGE_CHILDREN, &kids);
		fprintf(stderr,
		        "aicprof: job stats: ranks %d jobs %d map_s %.3f merge_s %.3f "
		        "map_max_rss_kib %ld merge_rss_kib %ld\n",
		        n, jobs, t1 - t0, now_s() - t1, kids.ru_maxrss, self.ru_maxrss);
	}
out:
	free(rank);
	free(dir);
	return ret;
}
