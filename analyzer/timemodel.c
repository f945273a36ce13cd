/*
 * timemodel.c - the step's time model: a saving counts only where the step's timeline shrinks.
 *
 * From the captured step's timeline (m->tl: every kernel, copy and set with its start and
 * duration on the GPU, streams apart) and the step's time (steps.times_us of that step, at
 * least the last GPU end):
 *  - busy is the union of the events' intervals over streams; kernel_sum the plain sum, so
 *    overlap = kernel_sum - busy is the time two streams ran at once; idle = step - busy;
 *  - the busy time splits into stretches: events closer than TM_GAP_US (what a queued launch
 *    costs the GPU between kernels), or than 1% of the stretch so far (one step's noise after
 *    milliseconds of queued work), are one stretch. An idle gap after a stretch is
 *    host-blocked when a host sync or blocking copy finding sits in the stretch or its wait
 *    window (the host waited for the GPU to drain, then relaunched: that gap is the sync's
 *    cost), else a launch gap (the host was late with the next launch);
 *  - the critical path: the step ends when its last stretch ends, and a stretch that ends in a
 *    host-blocked gap is waited on by the host; a stretch that ends in a launch gap is not (the
 *    next launch comes when the host sends it, however early the GPU finishes). Each node's
 *    share of a critical stretch is its time there divided by the streams busy at once, so the
 *    shares sum to the critical busy time and never count overlap twice.
 * Per finding: GPU kinds save min(kernel-time saving, the on-path shares of its nodes);
 * host-blocked findings (memplan.c's host-sync/host-copy) save the host-blocked gap they
 * cause, at most their stall: never GPU time. Patterns sum their occurrences. The headline
 * (promised) takes the proven findings in rank order, skipping any that shares a node with
 * one already taken, GPU savings capped by the on-path busy time and host savings by the idle
 * time, the total by the step: it never exceeds the step. Unproven findings (an invariant no
 * fingerprint confirmed, a write dead only unless its reader reads it) are listed, not summed.
 */
#include "analyzer/timemodel.h"
#include "analyzer/model.h"
#include "lib/util.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TM_GAP_US    5.0  /* a gap the GPU's queue explains; longer: the host was late */
#define TM_GAP_SHARE 0.01 /* ... or one under this share of the busy stretch before it */

struct tev {
	double s, e;
	int node;
};

static int tev_cmp(const void *a, const void *b)
{
	const struct tev *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->e < y->e ? -1 : x->e > y->e;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char *ev_str(const struct candidate *c, const char *name)
{
	const cJSON *e = c->evidence ? cJSON_GetObjectItemCaseSensitive(c->evidence, name) : NULL;
	return cJSON_IsString(e) ? e->valuestring : NULL;
}

/* 1 for memplan.c's host-sync and host-copy findings. */
static int cand_host(const struct candidate *c)
{
	const char *w = ev_str(c, "what");
	return !strcmp(c->kind, "invariant") && w &&
	       (!strcmp(w, "host-sync") || !strcmp(w, "host-copy"));
}

/* 1 when the finding's claim is proven (dead: every value dead; invariant: confirmed). */
static int cand_proven(const struct candidate *c)
{
	if (cand_host(c))
		return 1;
	if (!strcmp(c->kind, "dead")) {
		const char *v = ev_str(c, "verdict");
		return v && !strcmp(v, "dead");
	}
	if (!strcmp(c->kind, "invariant")) {
		const cJSON *e =
		    c->evidence ? cJSON_GetObjectItemCaseSensitive(c->evidence, "confirmed") : NULL;
		return cJSON_IsTrue(e);
	}
	if (!strcmp(c->kind, "memory"))
		return 0;
	return 1;
}

struct pat_sort {
	struct pattern p;
	double ks, ss;
	char host, proven;
};

static int pat_cmp(const void *a, const void *b)
{
	const struct pat_sort *x = a, *y = b;
	if (x->proven != y->proven)
		return x->proven ? -1 : 1;
	if (x->ss != y->ss)
		return x->ss > y->ss ? -1 : 1;
	if (x->p.bytes_saved != y->p.bytes_saved)
		return x->p.bytes_saved > y->p.bytes_saved ? -1 : 1;
	return x->p.cands[0] - y->p.cands[0];
}

void timemodel_compute(struct model *m)
{
	if (!m->ntl || !m->nnodes)
		return;
	struct timemodel *tm = xcalloc(1, sizeof(*tm));
	int n = m->ntl;
	struct tev *ev = xmalloc(sizeof(*ev) * (size_t)n);
	for (int i = 0; i < n; i++) {
		ev[i].s = m->tl[i].start_us;
		ev[i].e = m->tl[i].start_us + (m->tl[i].dur_us > 0 ? m->tl[i].dur_us : 0);
		ev[i].node = m->tl[i].node;
		tm->kernel_sum_us += ev[i].e - ev[i].s;
	}
	qsort(ev, (size_t)n, sizeof(*ev), tev_cmp);
	double t0 = ev[0].s, last = ev[0].e;
	for (int i = 0; i < n; i++)
		last = fmax(last, ev[i].e);
	double step = m->tl_step >= 0 && m->tl_step < m->nsteps && m->step_us
	                  ? m->step_us[m->tl_step]
	                  : m->step_median_us;
	tm->step_us = fmax(step, last - t0);

	/* stretches: [bs[k], be[k]) with events sb[k] .. sb[k+1]-1; busy inside is the union */
	int *sb = xmalloc(sizeof(int) * (size_t)(n + 1));
	double *be = xmalloc(sizeof(double) * (size_t)(n + 1));
	double *gaps = xmalloc(sizeof(double) * (size_t)(n + 1));
	int ns = 0;
	double uend = -1e300;
	for (int i = 0; i < n; i++) {
		/* a gap longer than the queue explains ends the stretch, unless it is small beside
		 * the stretch (one captured step's noise after milliseconds of queued work) */
		if (i == 0 ||
		    ev[i].s > uend + fmax(TM_GAP_US, TM_GAP_SHARE * (uend - ev[sb[ns - 1]].s))) {
			sb[ns] = i;
			be[ns++] = ev[i].e;
		}
		if (ev[i].s > uend)
			tm->busy_us += ev[i].e - ev[i].s;
		else if (ev[i].e > uend)
			tm->busy_us += ev[i].e - uend;
		uend = fmax(uend, ev[i].e);
		be[ns - 1] = fmax(be[ns - 1], ev[i].e);
	}
	sb[ns] = n;
	tm->busy_us = fmin(tm->busy_us, tm->step_us);
	tm->overlap_us = fmax(0, tm->kernel_sum_us - tm->busy_us);
	tm->idle_us = tm->step_us - tm->busy_us;

	/* which stretches end in a host wait: a host finding's node is in it */
	char *isnode = xcalloc((size_t)m->nnodes + 1, 1);
	int *stretch_of = xmalloc(sizeof(int) * (size_t)m->nnodes);
	for (int i = 0; i < m->nnodes; i++)
		stretch_of[i] = -1;
	for (int k = 0; k < ns; k++)
		for (int i = sb[k]; i < sb[k + 1]; i++)
			if (ev[i].node >= 0 && ev[i].node < m->nnodes)
				stretch_of[ev[i].node] = k;
	char *waited = xcalloc((size_t)ns + 1, 1), *hostw = xcalloc((size_t)ns + 1, 1);
	double *gap_after = xcalloc((size_t)ns + 1, sizeof(double));
	for (int k = 0; k < ns; k++) {
		double next = k + 1 < ns ? ev[sb[k + 1]].s : t0 + tm->step_us;
		gap_after[k] = fmax(0, next - be[k]);
	}
	/* host windows: [end - stall, end] on the GPU clock, the time the host sat blocked */
	double *node_end = xcalloc((size_t)m->nnodes + 1, sizeof(double));
	for (int i = 0; i < n; i++)
		if (ev[i].node >= 0 && ev[i].node < m->nnodes)
			node_end[ev[i].node] = ev[i].e;
	double *ws = xcalloc((size_t)m->ncands + 1, sizeof(double));
	double *we = xcalloc((size_t)m->ncands + 1, sizeof(double));
	int *wk = xmalloc(sizeof(int) * (size_t)(m->ncands + 1));
	for (int c = 0; c < m->ncands; c++) {
		const struct candidate *cd = &m->cands[c];
		wk[c] = -1;
		if (!cand_host(cd) || !cd->nnodes || cd->nodes[0] < 0 ||
		    cd->nodes[0] >= m->nnodes || stretch_of[cd->nodes[0]] < 0)
			continue;
		int k = stretch_of[cd->nodes[0]];
		const char *w = ev_str(cd, "what");
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(cd->evidence, "stall_us");
		double stall = cJSON_IsNumber(st) ? st->valuedouble : 0;
		we[c] = !strcmp(w, "host-copy") ? node_end[cd->nodes[0]] : be[k];
		ws[c] = we[c] - stall;
		wk[c] = k;
		waited[k] = hostw[k] = 1;
		for (int j = 0; j < ns; j++)
			if (be[j] > ws[c] && ev[sb[j]].s < we[c])
				waited[j] = 1;
	}
	waited[ns - 1] = 1; /* the step ends with its last stretch */
	/* a gap is host-blocked when it follows a host wait's stretch or lies inside its window */
	char *gap_host = xcalloc((size_t)ns + 1, 1);
	for (int k = 0; k < ns; k++) {
		gap_host[k] = hostw[k];
		double next = be[k] + gap_after[k];
		for (int c = 0; c < m->ncands && !gap_host[k]; c++)
			gap_host[k] = wk[c] >= 0 && be[k] >= ws[c] && next <= we[c] + TM_GAP_US;
	}
	int ng = 0;
	for (int k = 0; k < ns; k++) {
		if (k == ns - 1 && gap_after[k] <= TM_GAP_US) /* the step's end, not a gap */
			continue;
		if (gap_host[k])
			tm->host_blocked_us += gap_after[k];
		else
			tm->launch_gap_us += gap_after[k];
		if (gap_after[k] > TM_GAP_US)
			gaps[ng++] = gap_after[k];
	}
	tm->ngaps = ng;
	if (ng) {
		qsort(gaps, (size_t)ng, sizeof(double), dbl_cmp);
		tm->gap_median_us = ng % 2 ? gaps[ng / 2] : (gaps[ng / 2 - 1] + gaps[ng / 2]) / 2;
	}

	/* each node's share of the critical stretches: time / streams busy at once */
	tm->nnodes = m->nnodes;
	tm->on_path = xcalloc((size_t)m->nnodes + 1, sizeof(double));
	double *pt = xmalloc(sizeof(double) * (size_t)(2 * n + 1));
	for (int k = 0; k < ns; k++) {
		if (!waited[k])
			continue;
		int a = sb[k], b = sb[k + 1], np = 0;
		for (int i = a; i < b; i++) {
			pt[np++] = ev[i].s;
			pt[np++] = ev[i].e;
		}
		qsort(pt, (size_t)np, sizeof(double), dbl_cmp);
		for (int j = 0; j + 1 < np; j++) {
			double lo = pt[j], hi = pt[j + 1];
			if (hi <= lo)
				continue;
			int cov = 0;
			for (int i = a; i < b; i++)
				cov += ev[i].s <= lo && ev[i].e >= hi;
			if (!cov)
				continue;
			for (int i = a; i < b; i++)
				if (ev[i].s <= lo && ev[i].e >= hi && ev[i].node >= 0 &&
				    ev[i].node < m->nnodes)
					tm->on_path[ev[i].node] += (hi - lo) / cov;
			tm->on_path_us += hi - lo;
		}
	}
	free(pt);

	/* per pattern */
	struct pat_sort *ps = xcalloc((size_t)m->npats + 1, sizeof(*ps));
	char *gap_used = xcalloc((size_t)ns + 1, 1);
	for (int p = 0; p < m->npats; p++) {
		ps[p].p = m->pats[p];
		ps[p].ks = m->pats[p].saved_us;
		ps[p].host = 1;
		ps[p].proven = 1;
		memset(gap_used, 0, (size_t)ns);
		for (int o = 0; o < m->pats[p].ncands; o++) {
			const struct candidate *cd = &m->cands[m->pats[p].cands[o]];
			double lim = 0;
			if (cand_host(cd)) {
				/* the GPU idle it causes: the gaps in its window and the one after;
				 * occurrences share no gap */
				int c = m->pats[p].cands[o];
				for (int k = 0; k < ns && wk[c] >= 0; k++) {
					int in = k == wk[c] ||
					         (be[k] >= ws[c] &&
					          be[k] + gap_after[k] <= we[c] + TM_GAP_US);
					if (in && !gap_used[k]) {
						gap_used[k] = 1;
						lim += gap_after[k];
					}
				}
			} else {
				ps[p].host = 0;
				memset(isnode, 0, (size_t)m->nnodes);
				for (int j = 0; j < cd->nnodes; j++)
					if (cd->nodes[j] >= 0 && cd->nodes[j] < m->nnodes &&
					    !isnode[cd->nodes[j]]) {
						isnode[cd->nodes[j]] = 1;
						lim += tm->on_path[cd->nodes[j]];
					}
			}
			ps[p].ss += fmax(0, fmin(cd->saved_us, lim));
			ps[p].proven &= cand_proven(cd);
		}
	}
	qsort(ps, (size_t)m->npats, sizeof(*ps), pat_cmp);
	tm->npats = m->npats;
	tm->kernel_saved = xcalloc((size_t)m->npats + 1, sizeof(double));
	tm->step_saved = xcalloc((size_t)m->npats + 1, sizeof(double));
	tm->host = xcalloc((size_t)m->npats + 1, 1);
	tm->proven = xcalloc((size_t)m->npats + 1, 1);
	tm->counted = xcalloc((size_t)m->npats + 1, 1);
	memset(isnode, 0, (size_t)m->nnodes);
	char *hostnode = xcalloc((size_t)m->nnodes + 1, 1);
	for (int p = 0; p < m->npats; p++) {
		m->pats[p] = ps[p].p;
		m->pats[p].saved_us = ps[p].ss;
		tm->kernel_saved[p] = ps[p].ks;
		tm->step_saved[p] = ps[p].ss;
		tm->host[p] = ps[p].host;
		tm->proven[p] = ps[p].proven;
		if (!ps[p].proven || ps[p].ss <= 0)
			continue;
		char *used = ps[p].host ? hostnode : isnode;
		int clash = 0;
		for (int o = 0; o < m->pats[p].ncands && !clash; o++) {
			const struct candidate *cd = &m->cands[m->pats[p].cands[o]];
			for (int j = 0; j < cd->nnodes; j++)
				clash |= cd->nodes[j] >= 0 && cd->nodes[j] < m->nnodes &&
				         used[cd->nodes[j]];
		}
		if (clash)
			continue;
		for (int o = 0; o < m->pats[p].ncands; o++) {
			const struct candidate *cd = &m->cands[m->pats[p].cands[o]];
			for (int j = 0; j < cd->nnodes; j++)
				if (cd->nodes[j] >= 0 && cd->nodes[j] < m->nnodes)
					used[cd->nodes[j]] = 1;
		}
		tm->counted[p] = 1;
		tm->npromised++;
		if (ps[p].host)
			tm->promised_host_us += ps[p].ss;
		else
			tm->promised_gpu_us += ps[p].ss;
	}
	tm->promised_gpu_us = fmin(tm->promised_gpu_us, tm->on_path_us);
	tm->promised_host_us = fmin(tm->promised_host_us, tm->idle_us);
	tm->promised_us = fmin(tm->promised_gpu_us + tm->promised_host_us, tm->step_us);
	if (m->step_median_us > 0)
		tm->promised_us = fmin(tm->promised_us, m->step_median_us);
	free(hostnode);
	free(gap_used);
	free(ps);
	free(isnode);
	free(stretch_of);
	free(waited);
	free(hostw);
	free(gap_host);
	free(node_end);
	free(ws);
	free(we);
	free(wk);
	free(gap_after);
	free(gaps);
	free(be);
	free(sb);
	free(ev);
	m->tm = tm;
}

static double r3(double v)
{
	return round(v * 1000) / 1000;
}

cJSON *timemodel_json(const struct model *m)
{
	const struct timemodel *tm = m->tm;
	if (!tm)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "step_us", r3(tm->step_us));
	cJSON_AddNumberToObject(o, "kernel_sum_us", r3(tm->kernel_sum_us));
	cJSON_AddNumberToObject(o, "busy_us", r3(tm->busy_us));
	cJSON_AddNumberToObject(o, "overlap_us", r3(tm->overlap_us));
	cJSON_AddNumberToObject(o, "idle_us", r3(tm->idle_us));
	cJSON_AddNumberToObject(o, "host_blocked_us", r3(tm->host_blocked_us));
	cJSON_AddNumberToObject(o, "launch_gap_us", r3(tm->launch_gap_us));
	cJSON_AddNumberToObject(o, "gaps", tm->ngaps);
	cJSON_AddNumberToObject(o, "gap_median_us", r3(tm->gap_median_us));
	cJSON_AddNumberToObject(o, "on_path_us", r3(tm->on_path_us));
	cJSON_AddNumberToObject(o, "promised_us", r3(tm->promised_us));
	cJSON_AddNumberToObject(o, "promised_gpu_us", r3(tm->promised_gpu_us));
	cJSON_AddNumberToObject(o, "promised_host_us", r3(tm->promised_host_us));
	cJSON_AddNumberToObject(o, "promised_findings", tm->npromised);
	return o;
}

char *fmt_us(double us, char *buf)
{
	if (us >= 1000)
		snprintf(buf, 32, "%.2f ms", us / 1000);
	else
		snprintf(buf, 32, "%.1f µs", us);
	return buf;
}

void timemodel_free(struct timemodel *tm)
{
	if (!tm)
		return;
	free(tm->kernel_saved);
	free(tm->step_saved);
	free(tm->host);
	free(tm->proven);
	free(tm->counted);
	free(tm->on_path);
	free(tm);
}

int timemodel_rank_cmp(const void *a, const void *b)
{
	const struct tm_rank *x = a, *y = b;
	if (x->proven != y->proven)
		return x->proven ? -1 : 1;
	if (x->saved != y->saved)
		return x->saved > y->saved ? -1 : 1;
	return x->at - y->at;
}

void timemodel_rank_key(const cJSON *c, int at, struct tm_rank *k)
{
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(c, "proven");
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(c, "time_saved_us_per_step");
	*k = (struct tm_rank){!cJSON_IsFalse(pv), at, cJSON_IsNumber(sv) ? sv->valuedouble : 0};
}

void timemodel_set_number(cJSON *c, int number)
{
	cJSON *num = cJSON_CreateNumber(number);
	if (cJSON_GetObjectItemCaseSensitive(c, "number"))
		cJSON_ReplaceItemInObjectCaseSensitive(c, "number", num);
	else
		cJSON_AddItemToObject(c, "number", num);
	/* the group's name (fusegroup.c: "c<id>_ops"): fuse's directory, by number */
	cJSON *grp = cJSON_GetObjectItemCaseSensitive(c, "group");
	if (cJSON_IsObject(grp) && (grp->type & cJSON_IsReference)) {
		/* the streaming writer's reference to the model's own group: rename a copy */
		cJSON *cp = cJSON_Duplicate(grp, 1);
		cJSON_ReplaceItemInObjectCaseSensitive(c, "group", cp);
		grp = cp;
	}
	cJSON *nm = cJSON_IsObject(grp) ? cJSON_GetObjectItemCaseSensitive(grp, "name") : NULL;
	if (cJSON_IsString(nm) && nm->valuestring[0] == 'c' && nm->valuestring[1] >= '0' &&
	    nm->valuestring[1] <= '9') {
		const char *rest = nm->valuestring + 1;
		while (*rest >= '0' && *rest <= '9')
			rest++;
		if (!*rest || *rest == '_') {
			struct strbuf sb = STRBUF_INIT;
			strbuf_addf(&sb, "c%d%s", number, rest);
			cJSON_ReplaceItemInObjectCaseSensitive(grp, "name",
			                                       cJSON_CreateString(sb.buf));
			strbuf_release(&sb);
		}
	}
}

void timemodel_renumber(cJSON *root)
{
	cJSON *cands = cJSON_GetObjectItemCaseSensitive(root, "candidates");
	int n = cJSON_IsArray(cands) ? cJSON_GetArraySize(cands) : 0;
	if (!n)
		return;
	struct tm_rank *r = xcalloc((size_t)n, sizeof(*r));
	cJSON **obj = xcalloc((size_t)n, sizeof(*obj));
	for (int i = 0; i < n; i++) {
		obj[i] = cJSON_DetachItemFromArray(cands, 0);
		timemodel_rank_key(obj[i], i, &r[i]);
	}
	qsort(r, (size_t)n, sizeof(*r), timemodel_rank_cmp);
	for (int i = 0; i < n; i++) {
		timemodel_set_number(obj[r[i].at], i + 1);
		cJSON_AddItemToArray(cands, obj[r[i].at]);
	}
	free(obj);
	free(r);
}
