/*
 * perfetto.c - Chrome trace event export of the whole run (summary.timeline.run, written by
 * analyzer/runtl.c), with the representative step's graph drawn as flow arrows.
 *
 * The document is built as a cJSON tree and printed by cJSON, so every name from the trace is
 * quoted and escaped by the same code that parses it back. Four processes, pid P + 0..3 where
 * P is the traced program's pid (summary.traces[0].pid, else 1), each named by an "M" event
 * and sorted in this order: "steps" (one thread, one "X" slice per step), "GPU" (one thread
 * per stream, tid the stream number: every kernel, copy and memset with its GPU start and
 * duration), "NVTX" (one thread per OS thread: the closed ranges) and "host" (one thread per
 * OS thread: launch calls as zero-length slices, syncs and blocking copies with their
 * duration). Times are microseconds shifted so that the earliest event is at 0: the
 * summary's t0 (the representative step's start) lies at metadata.t0_shift_us.
 *
 * The representative step's kernels are matched to the run's GPU slices by stream and start
 * (both from the same nanoseconds): a matched slice gets the node's args (node, family, bytes,
 * source, candidate), and each edge of the step graph (a value one kernel writes and another
 * reads back) becomes a flow: an "s" event inside the writer's slice and an "f" event ("bp":
 * "e") inside the reader's, one id each, at most PERFETTO_FLOWS of them; in the representative
 * step and in every step whose GPU slices have the same names in the same order (matched by
 * position, write_flows()). Slices of one thread that overlap without nesting get lanes of
 * their own (place()). The run itself is capped by the analyzer (RUNTL_CAP events); what was
 * dropped is in metadata.dropped and said in one warning on stderr. A summary without
 * timeline.run (one written before it existed) gives the representative step alone, as before.
 * A job's summary (rank 0's run) adds one process per rank (report/job.c), each rank's
 * representative step from its own start.
 */
#include "report/perfetto.h"
#include "report/job.h"
#include "report/tevent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PERFETTO_FLOWS 20000

enum { P_STEPS, P_GPU, P_NVTX, P_HOST };

/* the threads already named, per process */
struct named {
	struct {
		int proc, tid;
	} * a;
	int n, alloc;
};

static void name_thread(cJSON *events, struct named *nt, int pid, int proc, int tid,
                        const char *label)
{
	for (int i = 0; i < nt->n; i++)
		if (nt->a[i].proc == proc && nt->a[i].tid == tid)
			return;
	ALLOC_GROW(nt->a, nt->n, nt->alloc);
	nt->a[nt->n].proc = proc;
	nt->a[nt->n].tid = tid;
	nt->n++;
	perfetto_meta(events, "thread_name", pid + proc, tid, "name", label, 0);
	perfetto_meta(events, "thread_sort_index", pid + proc, tid, "sort_index", NULL, nt->n);
}

/* a slice waiting for its lane: where it is and its event */
struct pend {
	int proc, tid;
	double ts, end;
	cJSON *e;
};

static int pend_cmp(const void *a, const void *b)
{
	const struct pend *x = a, *y = b;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end; /* the longer first: it holds the other */
}

#define LANES       8
#define LANE_STRIDE (1 << 24) /* a lane's tid: the thread's + k x this (OS tids are < 2^22) */

/*
 * Moves the slices of pending into events, each on the first lane of its thread where it
 * nests (after every slice there, or inside the last open one): slices that overlap without
 * nesting (kernels of one stream overlapping under programmatic dependent launch, a copy beside
 * a kernel) go on the thread's next lane, "stream 7 (overlap 1)", which the viewers need (they
 * drop misnested slices). Names each lane's thread as it is first used.
 */
static void place(cJSON *events, cJSON *pending, struct named *nt, int pid)
{
	static const char *const fmt[] = {"steps", "stream %d", "thread %d", "thread %d"};
	int n = cJSON_GetArraySize(pending), k = 0;
	struct pend *v = xcalloc(n ? n : 1, sizeof(*v));
	cJSON *e;
	while ((e = cJSON_DetachItemFromArray(pending, 0)) != NULL) {
		double ts = jnumd(e, "ts", 0), dur = jnumd(e, "dur", 0);
		v[k++] = (struct pend){(int)jnumd(e, "pid", pid) - pid, (int)jnumd(e, "tid", 0), ts,
		                       ts + dur, e};
	}
	qsort(v, k, sizeof(*v), pend_cmp);
	double open[LANES][64];
	int nopen[LANES];
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < k; i++) {
		if (!i || v[i].proc != v[i - 1].proc || v[i].tid != v[i - 1].tid)
			memset(nopen, 0, sizeof(nopen));
		int lane = LANES - 1;
		for (int l = 0; l < LANES; l++) {
			while (nopen[l] && open[l][nopen[l] - 1] <= v[i].ts)
				nopen[l]--;
			if (!nopen[l] || v[i].end <= open[l][nopen[l] - 1]) {
				lane = l;
				break;
			}
		}
		if (nopen[lane] < 64)
			open[lane][nopen[lane]++] = v[i].end;
		int tid = v[i].tid + lane * LANE_STRIDE;
		cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(v[i].e, "tid"), tid);
		strbuf_reset(&sb);
		strbuf_addf(&sb, fmt[v[i].proc & 3], v[i].tid);
		if (lane)
			strbuf_addf(&sb, " (overlap %d)", lane);
		name_thread(events, nt, pid, v[i].proc, tid, sb.buf);
		cJSON_AddItemToArray(events, v[i].e);
	}
	strbuf_release(&sb);
	free(v);
}

static cJSON *slice(cJSON *events, const char *name, const char *cat, int pid, int tid, double ts,
                    double dur)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", name);
	cJSON_AddStringToObject(e, "cat", cat);
	cJSON_AddStringToObject(e, "ph", "X");
	cJSON_AddNumberToObject(e, "ts", ts);
	cJSON_AddNumberToObject(e, "dur", dur > 0 ? dur : 0);
	cJSON_AddNumberToObject(e, "pid", pid);
	cJSON_AddNumberToObject(e, "tid", tid);
	cJSON_AddObjectToObject(e, "args"); /* node_args() fills it */
	cJSON_AddItemToArray(events, e);
	return e;
}

static void node_args(const struct rmodel *m, const struct rnode *n, cJSON *e)
{
	cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
	cJSON_AddNumberToObject(args, "node", n->id);
	if (n->full_name)
		cJSON_AddStringToObject(args, "full_name", n->full_name);
	if (n->family)
		cJSON_AddStringToObject(args, "family", n->family);
	if (n->bytes_read >= 0)
		cJSON_AddNumberToObject(args, "bytes_read", n->bytes_read);
	if (n->bytes_written >= 0)
		cJSON_AddNumberToObject(args, "bytes_written", n->bytes_written);
	if (n->source)
		cJSON_AddStringToObject(args, "source", n->source);
	if (n->cand >= 0)
		cJSON_AddNumberToObject(args, "candidate", m->cand_rank[n->cand]);
}

/* a representative step's event: where it starts (ns from t0), on which stream, its node */
struct tlkey {
	long long ns;
	int stream, node;  /* node: index in m->nodes, -1 none */
	double start, dur; /* µs from t0 */
	cJSON *slice;      /* the run's slice it matched, NULL none */
};

static int tlkey_cmp(const void *a, const void *b)
{
	const struct tlkey *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* the i-th number of row, NAN when absent or beyond ±1e13 (µs: 115 days) */
static double cell(const cJSON *row, int i)
{
	const cJSON *c = cJSON_GetArrayItem(row, i);
	return cJSON_IsNumber(c) && fabs(c->valuedouble) <= 1e13 ? c->valuedouble : NAN;
}

/* the i-th number of row as an id in [0, LANE_STRIDE) (a stream, tid or index), else dflt */
static int icell(const cJSON *row, int i, int dflt)
{
	double v = cell(row, i);
	return v >= 0 && v < LANE_STRIDE ? (int)v : dflt;
}

static const char *name_of(const cJSON *names, double i, const char *dflt)
{
	const char *s = i >= 0 && i < LANE_STRIDE
	                    ? cJSON_GetStringValue(cJSON_GetArrayItem(names, (int)i))
	                    : NULL;
	return s ? s : dflt;
}

/* the smallest start (µs from t0) of the run's events, steps and rows [start at index k] */
static double earliest(const cJSON *tl, const cJSON *run)
{
	double lo = 0;
	const cJSON *row;
	cJSON_ArrayForEach(row, jarr(tl, "steps")) if (cell(row, 0) < lo) lo = cell(row, 0);
	static const struct {
		const char *key;
		int k;
	} cols[] = {{"gpu", 2}, {"host", 1}, {"nvtx", 1}};
	for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
		cJSON_ArrayForEach(row, jarr(run, cols[c].key)) if (cell(row, cols[c].k) < lo) lo =
		    cell(row, cols[c].k);
	return lo;
}

/* a GPU slice of the run: its start (µs from t0), name index and event */
struct gslice {
	double start;
	int name;
	cJSON *e;
};

static int gslice_cmp(const void *a, const void *b)
{
	const struct gslice *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* the first of v[0..n) (sorted) that starts at or after t */
static int first_at(const struct gslice *v, int n, double t)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (v[mid].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void flow_end(cJSON *events, int id, int end, const cJSON *slice, double bytes)
{
	double ts = jnumd(slice, "ts", 0), dur = jnumd(slice, "dur", 0);
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", "intermediate");
	cJSON_AddStringToObject(e, "cat", "dataflow");
	cJSON_AddStringToObject(e, "ph", end ? "f" : "s");
	if (end)
		cJSON_AddStringToObject(e, "bp", "e");
	cJSON_AddNumberToObject(e, "id", id);
	/* inside the slice: early in the writer, halfway through the reader */
	cJSON_AddNumberToObject(e, "ts", ts + dur * (end ? 0.5 : 0.01));
	cJSON_AddNumberToObject(e, "pid", jnumd(slice, "pid", 0));
	cJSON_AddNumberToObject(e, "tid", jnumd(slice, "tid", 0));
	if (!end && bytes >= 0)
		cJSON_AddNumberToObject(cJSON_AddObjectToObject(e, "args"), "bytes", bytes);
	cJSON_AddItemToArray(events, e);
}

/*
 * The step graph's edges (writer -> reader, one flow a pair) as flows in every step whose GPU
 * slices (those starting within it, in start order) have the names of the representative
 * step's, position by position: the representative step's slices are matched to nodes (keys),
 * the others by position. gv sorted here. Returns the flows written; *skipped counts those
 * over PERFETTO_FLOWS.
 */
static int write_flows(const struct rmodel *m, const cJSON *tl, const struct tlkey *keys, int nk,
                       struct gslice *gv, int ngv, cJSON *events, int *skipped)
{
	qsort(gv, ngv, sizeof(*gv), gslice_cmp);
	/* the representative step: the one starting at t0, else the timeline's own span */
	double rd = -1, end = 0;
	const cJSON *row;
	cJSON_ArrayForEach(row, jarr(tl, "steps")) if (fabs(cell(row, 0)) < 1e-9) rd = cell(row, 1);
	for (int i = 0; i < nk; i++)
		end = fmax(end, keys[i].start + keys[i].dur);
	if (!(rd >= 0))
		rd = end;
	int r0 = first_at(gv, ngv, 0), r1 = first_at(gv, ngv, rd + 1e-6), nr = r1 - r0;
	int *pos = xmalloc(sizeof(int) * (m->nr_nodes ? m->nr_nodes : 1));
	for (int i = 0; i < m->nr_nodes; i++)
		pos[i] = -1;
	for (int i = 0; i < nk; i++)
		for (int j = r0; keys[i].slice && keys[i].node >= 0 && j < r1; j++)
			if (gv[j].e == keys[i].slice && pos[keys[i].node] < 0)
				pos[keys[i].node] = j - r0;
	/* the pairs, once each */
	int(*pair)[2] = xmalloc(sizeof(*pair) * (m->nr_edges ? m->nr_edges : 1));
	double *bytes = xmalloc(sizeof(double) * (m->nr_edges ? m->nr_edges : 1));
	int np = 0;
	for (int i = 0; i < m->nr_edges; i++) {
		const struct redge *g = &m->edges[i];
		if (g->from < 0 || g->to < 0 || g->from == g->to || pos[g->from] < 0 ||
		    pos[g->to] < 0)
			continue;
		int dup = 0;
		for (int j = 0; j < np && !dup; j++)
			dup = pair[j][0] == pos[g->from] && pair[j][1] == pos[g->to];
		if (dup)
			continue;
		pair[np][0] = pos[g->from];
		pair[np][1] = pos[g->to];
		bytes[np++] = g->bytes;
	}
	int nflows = 0;
	cJSON_ArrayForEach(row, jarr(tl, "steps"))
	{
		double s0 = cell(row, 0), d = cell(row, 1);
		if (!isfinite(s0) || !isfinite(d) || !np)
			continue;
		int a = first_at(gv, ngv, s0), b = first_at(gv, ngv, s0 + d + 1e-6);
		int same = b - a == nr;
		for (int i = 0; same && i < nr; i++)
			same = gv[a + i].name == gv[r0 + i].name;
		for (int i = 0; same && i < np; i++) {
			const cJSON *w = gv[a + pair[i][0]].e, *r = gv[a + pair[i][1]].e;
			if (jnumd(w, "ts", 0) + 0.01 * jnumd(w, "dur", 0) >
			    jnumd(r, "ts", 0) + 0.5 * jnumd(r, "dur", 0))
				continue; /* the reader ran first (another stream): no arrow back */
			if (nflows >= PERFETTO_FLOWS) {
				(*skipped)++;
				continue;
			}
			nflows++;
			flow_end(events, nflows, 0, w, bytes[i]);
			flow_end(events, nflows, 1, r, -1);
		}
	}
	free(pair);
	free(bytes);
	free(pos);
	return nflows;
}

/* The run: steps, GPU, NVTX and host processes, flows of the step graph. */
static void write_run(const struct rmodel *m, const cJSON *tl, const cJSON *run, int pid,
                      const char *prog, cJSON *events, cJSON *meta)
{
	static const char *const proc_name[] = {"steps", "GPU", "NVTX", "host"};
	struct strbuf sb = STRBUF_INIT;
	for (int p = 0; p < 4; p++) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "%s: %s", prog, proc_name[p]);
		perfetto_meta(events, "process_name", pid + p, 0, "name", sb.buf, 0);
		perfetto_meta(events, "process_sort_index", pid + p, 0, "sort_index", NULL, p);
	}
	double shift = -earliest(tl, run);
	cJSON_AddNumberToObject(meta, "t0_shift_us", shift);
	struct named nt = {0};
	const cJSON *names = jarr(run, "names"), *row;
	cJSON *pending = cJSON_CreateArray(); /* the slices, until place() gives them lanes */

	/* steps */
	int si = 0;
	double step = -1;
	jnum(tl, "step", &step);
	cJSON_ArrayForEach(row, jarr(tl, "steps"))
	{
		strbuf_reset(&sb);
		strbuf_addf(&sb, "step %d%s", si, si == (int)step ? " (representative)" : "");
		double s = cell(row, 0), d = cell(row, 1);
		if (isfinite(s) && isfinite(d))
			slice(pending, sb.buf, "step", pid + P_STEPS, 1, s + shift, d);
		si++;
	}

	/* the representative step's events, sorted for matching */
	const cJSON *evs = jarr(tl, "events"), *ev;
	int nk = 0, ak = cJSON_GetArraySize(evs);
	struct tlkey *keys = xcalloc(ak ? ak : 1, sizeof(*keys));
	cJSON_ArrayForEach(ev, evs)
	{
		double s, d = 0, x;
		if (!jnum(ev, "start_us", &s))
			continue;
		jnum(ev, "dur_us", &d);
		keys[nk] = (struct tlkey){llround(s * 1e3),
		                          jnum(ev, "stream", &x) ? (int)x : 0,
		                          jnum(ev, "node", &x) ? rmodel_find(m, (int)x) : -1,
		                          s,
		                          d,
		                          NULL};
		nk++;
	}
	qsort(keys, nk, sizeof(*keys), tlkey_cmp);

	static const char *const gpu_cat[] = {"kernel", "copy", "memset"};
	int ngv = 0, agv = cJSON_GetArraySize(jarr(run, "gpu"));
	struct gslice *gv = xcalloc(agv ? agv : 1, sizeof(*gv));
	cJSON_ArrayForEach(row, jarr(run, "gpu"))
	{
		double kind = cell(row, 0), s = cell(row, 2), d = cell(row, 3);
		int stream = icell(row, 1, 0);
		if (!isfinite(s) || !isfinite(d))
			continue;
		const char *cat = kind >= 0 && kind <= 2 ? gpu_cat[(int)kind] : "kernel";
		cJSON *e = slice(pending, name_of(names, cell(row, 4), cat), cat, pid + P_GPU,
		                 stream, s + shift, d);
		gv[ngv++] = (struct gslice){s, icell(row, 4, -1), e};
		struct tlkey k = {llround(s * 1e3), stream, -1, 0, 0, NULL};
		struct tlkey *hit = nk ? bsearch(&k, keys, nk, sizeof(*keys), tlkey_cmp) : NULL;
		if (hit && hit->node >= 0) {
			hit->slice = e;
			node_args(m, &m->nodes[hit->node], e);
		}
	}
	cJSON_ArrayForEach(row, jarr(run, "nvtx"))
	{
		int tid = icell(row, 0, 0);
		double s = cell(row, 1), d = cell(row, 2);
		if (!isfinite(s) || !isfinite(d))
			continue;
		slice(pending, name_of(names, cell(row, 3), "range"), "nvtx", pid + P_NVTX, tid,
		      s + shift, d);
	}
	cJSON_ArrayForEach(row, jarr(run, "host"))
	{
		int tid = icell(row, 0, 0);
		double s = cell(row, 1), d = cell(row, 2);
		if (!isfinite(s) || !isfinite(d))
			continue;
		slice(pending, name_of(names, cell(row, 3), "api"), "api", pid + P_HOST, tid,
		      s + shift, d);
	}

	place(events, pending, &nt, pid);
	cJSON_Delete(pending);

	int skipped = 0;
	int nflows = write_flows(m, tl, keys, nk, gv, ngv, events, &skipped);
	free(gv);
	cJSON_AddNumberToObject(meta, "flows", nflows);

	/* what the cap dropped */
	const cJSON *dr = jobj(run, "dropped");
	double cap = 0, dg = 0, dh = 0, dn = 0;
	jnum(run, "cap", &cap);
	jnum(dr, "gpu", &dg);
	jnum(dr, "host", &dh);
	jnum(dr, "nvtx", &dn);
	cJSON *dm = cJSON_AddObjectToObject(meta, "dropped");
	cJSON_AddNumberToObject(dm, "cap", cap);
	cJSON_AddNumberToObject(dm, "gpu", dg);
	cJSON_AddNumberToObject(dm, "host", dh);
	cJSON_AddNumberToObject(dm, "nvtx", dn);
	cJSON_AddNumberToObject(dm, "flows", skipped);
	if (dg + dh + dn + skipped > 0)
		warning("trace.perfetto.json: the run has more than %.0f events: dropped the last "
		        "%.0f GPU, %.0f host API and %.0f NVTX events, %d flows",
		        cap, dg, dh, dn, skipped);
	free(keys);
	free(nt.a);
	strbuf_release(&sb);
}

/* The representative step alone (a summary without timeline.run). */
static void write_step(const struct rmodel *m, const cJSON *tl, int pid, const char *prog,
                       cJSON *events)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s (one step)", prog);
	perfetto_meta(events, "process_name", pid, 0, "name", sb.buf, 0);
	struct named nt = {0};
	const cJSON *ev;
	double d;
	cJSON_ArrayForEach(ev, jarr(tl, "events"))
	{
		double start, dur;
		if (!jnum(ev, "start_us", &start))
			continue;
		if (!jnum(ev, "dur_us", &dur) || dur < 0)
			dur = 0;
		int tid = jnum(ev, "stream", &d) ? (int)d : 0;
		strbuf_reset(&sb);
		strbuf_addf(&sb, "stream %d", tid);
		name_thread(events, &nt, pid, 0, tid, sb.buf);
		const char *kind = jstr(ev, "kind");
		int node = jnum(ev, "node", &d) ? rmodel_find(m, (int)d) : -1;
		const struct rnode *n = node >= 0 ? &m->nodes[node] : NULL;
		const char *name = jstr(ev, "name");
		if (!name)
			name = n ? n->name : kind ? kind : "event";
		cJSON *e = slice(events, name, kind ? kind : "kernel", pid, tid, start, dur);
		if (n)
			node_args(m, n, e);
	}
	free(nt.a);
	strbuf_release(&sb);
}

void perfetto_write(const struct rmodel *m, struct strbuf *out)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *events = cJSON_AddArrayToObject(doc, "traceEvents");
	const cJSON *tr0 = cJSON_GetArrayItem(jarr(m->root, "traces"), 0);
	double d;
	int pid = jnum(tr0, "pid", &d) && d > 0 && d < JOB_PID_BASE - 4 ? (int)d : 1;
	const char *prog = jstr(m->root, "program");
	if (!prog)
		prog = "program";
	const cJSON *tl = jobj(m->root, "timeline");
	const cJSON *run = jobj(tl, "run");
	cJSON *meta = cJSON_CreateObject();
	cJSON_AddStringToObject(meta, "source",
	                        run ? "aicprof summary.timeline.run" : "aicprof summary.timeline");
	if (run)
		write_run(m, tl, run, pid, prog, events, meta);
	else
		write_step(m, tl, pid, prog, events);
	report_job_perfetto(m, events); /* one process per rank of a job; nothing otherwise */
	cJSON_AddStringToObject(doc, "displayTimeUnit", "ns");
	if (jnum(tl, "step", &d))
		cJSON_AddNumberToObject(meta, "step", d);
	if (jnum(tl, "t0_ns", &d))
		cJSON_AddNumberToObject(meta, "t0_ns", d);
	cJSON_AddItemToObject(doc, "metadata", meta);
	char *text = cJSON_PrintUnformatted(doc);
	if (!text)
		die("out of memory printing the trace export");
	strbuf_adds(out, text);
	strbuf_adds(out, "\n");
	cJSON_free(text);
	cJSON_Delete(doc);
}
