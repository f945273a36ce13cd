/*
 * graph.c - the step graph view, its collapse of small nodes, its top-N cut, and its drawing by
 * Graphviz.
 *
 * Collapse: each node gets its unique successor and unique predecessor (or "none"/"several"),
 * counting distinct neighbours and ignoring self-edges. A chain starts at a small node that is
 * not the only successor of a small node whose only successor it is; it extends while the
 * current node has one successor, that successor has one predecessor, and it is small. Chains
 * are formed first, over all starts, so a chain's members never become singles; every node left
 * becomes a vertex of its own. A cycle of small nodes has no start and stays uncollapsed.
 * Edges are mapped onto vertices, self-edges dropped and parallel ones merged (bytes summed).
 *
 * Top-N: vertices ranked by time; the first N, every vertex adjacent to one of them, and the
 * nodes of the best GVIEW_TOP_CANDS candidates are kept. So that the cut graph still shows what
 * leads to what, a kept vertex that reached another kept vertex only through left-out ones gets
 * an "elided" edge to it (found by a depth-first walk through the left-out vertices).
 *
 * Ops (GVIEW_FOLD_OPS, the report's default drawing of a real step): the nodes are read in
 * step order as units, each a run of consecutive nodes of one op at one model line (op_key()),
 * and repeats are folded over the units' keys, so a layer folds even where its kernels differ
 * by shape or algorithm; a unit of several kernels is one vertex (op 1). Then runs of small
 * vertices that follow each other in step order merge whatever edges join them, edges between
 * vertices far apart in step order are dropped (they are what pulls a layout wide), and the
 * drawing ranks the vertices in step order (an invisible edge from each to the next). A
 * candidate's members are marked "#rank" rather than boxed, and an edge whose two ends lie in
 * one candidate (a round trip through VRAM that its fusion saves) is drawn orange.
 * gview_build_ops() coarsens this until about the number of boxes asked for is reached.
 *
 * Drawing: cgraph builds the graph (one subgraph "cluster_<rank>" per candidate, so dot draws a
 * box around it), agwrite gives the DOT text before layout, and gvc lays it out with "dot" and
 * renders SVG into memory. Nodes are filled on a pale-to-red scale by the square root of their
 * share of the largest node's time, so the few heavy kernels stand out.
 */
#include "report/graph.h"

#include <errno.h>
#include <fcntl.h>
#include <gvc.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MULTI           (-2)
#define TOP_NEIGHBOURS  3  /* neighbours kept on each side of each top vertex */
#define TOP_ELIDED      3  /* elided edges from one kept vertex, to the nearest kept ones */
#define GVIEW_LABEL_MAX 28 /* characters of a kernel name in its box; the tooltip has it all */
#define GVIEW_NEAR      4  /* vertices apart in step order beyond which an edge sets no rank */

/* The unique distinct neighbour, -1 when none, MULTI when several. */
static void note_neighbour(int *slot, int who)
{
	if (*slot == -1)
		*slot = who;
	else if (*slot != who)
		*slot = MULTI;
}

static int is_small(const struct rmodel *m, int i, double small_share)
{
	const struct rnode *n = &m->nodes[i];
	return n->us >= 0 && m->step_us > 0 && n->us < small_share * m->step_us && n->cand < 0;
}

static int gvert_add(struct gview *gv, int node, double us, int cand)
{
	ALLOC_GROW(gv->v, gv->nr, gv->alloc);
	struct gvert *v = &gv->v[gv->nr];
	memset(v, 0, sizeof(*v));
	v->node = node;
	v->count = 1;
	v->us = us;
	v->cand = cand;
	v->fold = -1;
	return gv->nr++;
}

static int gedge_cmp(const void *a, const void *b)
{
	const struct gedge *x = a, *y = b;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return x->elided - y->elided; /* a real edge before an elided one, which merges into it */
}

/* Sorts gv's edges, merging parallel ones. */
static void gview_merge_edges(struct gview *gv)
{
	if (!gv->nr_e)
		return;
	qsort(gv->e, (size_t)gv->nr_e, sizeof(*gv->e), gedge_cmp);
	int w = 0;
	for (int r = 0; r < gv->nr_e; r++) {
		if (w && gv->e[w - 1].from == gv->e[r].from && gv->e[w - 1].to == gv->e[r].to) {
			if (gv->e[r].bytes >= 0)
				gv->e[w - 1].bytes =
				    (gv->e[w - 1].bytes < 0 ? 0 : gv->e[w - 1].bytes) +
				    gv->e[r].bytes;
			if (gv->e[r].saved &&
			    (!gv->e[w - 1].saved || gv->e[r].saved < gv->e[w - 1].saved))
				gv->e[w - 1].saved = gv->e[r].saved;
			continue;
		}
		gv->e[w++] = gv->e[r];
	}
	gv->nr_e = w;
}

/*
 * The fold of the model's nodes (see gview_build_folded): rep[i] is the node drawn for node i
 * (i itself outside a repeat), fold[i] the gfold holding i or -1, copy[i] its copy's number
 * within that fold; us[i] the time a drawn node stands for (its copies' sum). A drawn node i
 * stands for the glen[i] nodes from i on (an op's run; 1 outside GVIEW_FOLD_OPS), cand[i] the
 * first candidate among them or -1.
 */
struct nodefold {
	int *rep, *fold, *copy, *glen, *cand;
	double *us;
};

/* The finding whose fusion saves edge e's round trip (both ends in one candidate): its rank,
 * or 0. */
static int saved_rank(const struct rmodel *m, const struct redge *e)
{
	int c = m->nodes[e->from].cand;
	return c >= 0 && c < m->nr_cands && c == m->nodes[e->to].cand ? m->cand_rank[c] : 0;
}

/* Drops edge e when it joins two different copies of one fold; else maps it onto the drawn
 * nodes (a, b). */
static int fold_edge(const struct nodefold *nf, const struct redge *e, int *a, int *b)
{
	if (nf->fold[e->from] >= 0 && nf->fold[e->from] == nf->fold[e->to] &&
	    nf->copy[e->from] != nf->copy[e->to])
		return 0;
	*a = nf->rep[e->from];
	*b = nf->rep[e->to];
	return *a != *b;
}

static void gview_collapse(struct gview *gv, const struct rmodel *m, double small_share,
                           const struct nodefold *nf)
{
	int n = m->nr_nodes;
	int *succ = xmalloc(sizeof(int) * (size_t)(n + 1));
	int *pred = xmalloc(sizeof(int) * (size_t)(n + 1));
	int *vert = xmalloc(sizeof(int) * (size_t)(n + 1));
	char *small = xcalloc((size_t)n + 1, 1);
	for (int i = 0; i < n; i++) {
		succ[i] = pred[i] = vert[i] = -1;
		small[i] = (char)(is_small(m, i, small_share) && nf->cand[i] < 0);
		if (nf->us[i] >= 0 && m->step_us > 0 && nf->us[i] >= small_share * m->step_us)
			small[i] = 0;
	}
	for (int k = 0; k < m->nr_edges; k++) {
		int a, b;
		if (!fold_edge(nf, &m->edges[k], &a, &b))
			continue;
		note_neighbour(&succ[a], b);
		note_neighbour(&pred[b], a);
	}
	/* Pass 1: chains, of drawn nodes, each within one fold or outside every fold. */
	for (int i = 0; i < n; i++) {
		if (!small[i] || vert[i] >= 0 || nf->rep[i] != i)
			continue;
		int p = pred[i];
		if (p >= 0 && small[p] && succ[p] == i && nf->fold[p] == nf->fold[i])
			continue; /* not a start: a chain through p will reach i */
		int len = 1, cur = i;
		while (succ[cur] >= 0 && pred[succ[cur]] == cur && small[succ[cur]] &&
		       vert[succ[cur]] == -1 && succ[cur] != i &&
		       nf->fold[succ[cur]] == nf->fold[i]) {
			cur = succ[cur];
			vert[cur] = -3; /* provisional, so a cycle cannot loop */
			len++;
		}
		if (len < 2) {
			continue;
		}
		int v = gvert_add(gv, i, 0, -1);
		struct gvert *gvv = &gv->v[v];
		gvv->fold = nf->fold[i];
		cur = i;
		int total = 0;
		for (int k = 0; k < len; k++, cur = succ[cur])
			total += nf->glen[cur];
		gvv->count = total;
		gvv->members = xmalloc(sizeof(int) * (size_t)total);
		cur = i;
		total = 0;
		for (int k = 0; k < len; k++) {
			for (int j = 0; j < nf->glen[cur]; j++)
				gvv->members[total++] = cur + j;
			gvv->us += nf->us[cur];
			vert[cur] = v;
			cur = succ[cur];
		}
		gv->collapsed += total;
	}
	/* Pass 2: every other drawn node is its own vertex, in the model's order. */
	for (int i = 0; i < n; i++)
		if (vert[i] < 0 && nf->rep[i] == i) {
			int v = gvert_add(gv, i, nf->us[i], nf->cand[i]);
			struct gvert *gvv = &gv->v[v];
			gvv->fold = nf->fold[i];
			if (nf->glen[i] > 1) {
				gvv->op = 1;
				gvv->count = nf->glen[i];
				gvv->members = xmalloc(sizeof(int) * (size_t)nf->glen[i]);
				for (int j = 0; j < nf->glen[i]; j++)
					gvv->members[j] = i + j;
			}
			vert[i] = v;
		}
	for (int i = 0; i < n; i++)
		if (nf->rep[i] != i)
			vert[i] = vert[nf->rep[i]];
	for (int k = 0; k < m->nr_edges; k++) {
		const struct redge *e = &m->edges[k];
		int a, b;
		if (!fold_edge(nf, e, &a, &b))
			continue;
		a = vert[a];
		b = vert[b];
		if (a == b)
			continue;
		ALLOC_GROW(gv->e, gv->nr_e, gv->alloc_e);
		gv->e[gv->nr_e++] = (struct gedge){a, b, e->bytes, 0, saved_rank(m, e)};
	}
	gview_merge_edges(gv);
	free(succ);
	free(pred);
	free(vert);
	free(small);
}

static const struct gview *sort_view;

/* By the step order of the vertices' first nodes. */
static int by_step_order(const void *a, const void *b)
{
	int x = sort_view->v[*(const int *)a].node, y = sort_view->v[*(const int *)b].node;
	return x < y ? -1 : x > y;
}

static int by_time_desc(const void *a, const void *b)
{
	double x = sort_view->v[*(const int *)a].us, y = sort_view->v[*(const int *)b].us;
	if (x != y)
		return x > y ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

/* Adds elided edges from kept vertex v to the (at most TOP_ELIDED) nearest kept vertices it
 * reaches through dropped ones, breadth first; stack is the queue. */
static void add_elided(const struct gview *gv, const char *keep, int v, int *first_out, int *stack,
                       char *seen, struct gedge **out, int *nr, int *alloc)
{
	int head = 0, tail = 0, added = 0;
	seen[v] = 1;
	for (int k = first_out[v]; k < first_out[v + 1]; k++)
		if (!keep[gv->e[k].to] && !seen[gv->e[k].to]) {
			seen[gv->e[k].to] = 1;
			stack[tail++] = gv->e[k].to;
		}
	while (head < tail && added < TOP_ELIDED) {
		int u = stack[head++];
		for (int k = first_out[u]; k < first_out[u + 1] && added < TOP_ELIDED; k++) {
			int w = gv->e[k].to;
			if (seen[w])
				continue;
			seen[w] = 1;
			if (keep[w]) {
				ALLOC_GROW(*out, *nr, *alloc);
				(*out)[(*nr)++] = (struct gedge){v, w, -1, 1, 0};
				added++;
			} else {
				stack[tail++] = w;
			}
		}
	}
}

/* A neighbour of a top vertex: side is 2 * vertex (+1 for a predecessor). */
struct nb {
	int side, who;
	double us;
};

static int nb_cmp(const void *a, const void *b)
{
	const struct nb *x = a, *y = b;
	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	if (x->us != y->us)
		return x->us > y->us ? -1 : 1;
	return x->who - y->who;
}

static void gview_top(struct gview *gv, const struct rmodel *m, int top_n)
{
	int *order = xmalloc(sizeof(int) * (size_t)gv->nr);
	char *keep = xcalloc((size_t)gv->nr, 1);
	for (int i = 0; i < gv->nr; i++)
		order[i] = i;
	sort_view = gv;
	qsort(order, (size_t)gv->nr, sizeof(int), by_time_desc);
	sort_view = NULL;
	for (int k = 0; k < top_n && k < gv->nr; k++)
		keep[order[k]] = 1;
	for (int i = 0; i < gv->nr; i++)
		if (gv->v[i].cand >= 0 && m->cand_rank[gv->v[i].cand] <= GVIEW_TOP_CANDS)
			keep[i] = 1;
	/* Neighbours of the kept (one step, from the kept set before this loop): the
	 * TOP_NEIGHBOURS heaviest on each side of each, so that a kernel read by hundreds (a
	 * memcpy feeding every layer) does not bring them all in. */
	char *core = xmalloc((size_t)gv->nr);
	memcpy(core, keep, (size_t)gv->nr);
	struct nb *nbs = xmalloc(sizeof(*nbs) * (size_t)(2 * gv->nr_e + 1));
	int nr_nb = 0;
	for (int k = 0; k < gv->nr_e; k++) {
		int a = gv->e[k].from, b = gv->e[k].to;
		if (core[a])
			nbs[nr_nb++] = (struct nb){2 * a, b, gv->v[b].us};
		if (core[b])
			nbs[nr_nb++] = (struct nb){2 * b + 1, a, gv->v[a].us};
	}
	qsort(nbs, (size_t)nr_nb, sizeof(*nbs), nb_cmp);
	for (int k = 0, run = 0; k < nr_nb; k++) {
		run = k && nbs[k].side == nbs[k - 1].side ? run + 1 : 0;
		if (run < TOP_NEIGHBOURS)
			keep[nbs[k].who] = 1;
	}
	free(nbs);
	/* Elided edges, over the edges sorted by source (gview_merge_edges sorted them). */
	int *first_out = xcalloc((size_t)gv->nr + 1, sizeof(int));
	for (int k = 0; k < gv->nr_e; k++)
		first_out[gv->e[k].from + 1]++;
	for (int i = 0; i < gv->nr; i++)
		first_out[i + 1] += first_out[i];
	int *stack = xmalloc(sizeof(int) * (size_t)(gv->nr + 1));
	char *seen = xmalloc((size_t)gv->nr + 1);
	struct gedge *extra = NULL;
	int nr_extra = 0, alloc_extra = 0;
	for (int i = 0; i < gv->nr; i++) {
		if (!keep[i])
			continue;
		memset(seen, 0, (size_t)gv->nr);
		add_elided(gv, keep, i, first_out, stack, seen, &extra, &nr_extra, &alloc_extra);
	}
	free(first_out);
	free(stack);
	free(seen);
	for (int k = 0; k < nr_extra; k++) {
		ALLOC_GROW(gv->e, gv->nr_e, gv->alloc_e);
		gv->e[gv->nr_e++] = extra[k];
	}
	free(extra);

	int *map = xmalloc(sizeof(int) * (size_t)gv->nr);
	int w = 0;
	for (int i = 0; i < gv->nr; i++) {
		if (keep[i]) {
			map[i] = w;
			gv->v[w++] = gv->v[i];
		} else {
			map[i] = -1;
			gv->hidden += gv->v[i].count;
			free(gv->v[i].members);
		}
	}
	gv->nr = w;
	int we = 0;
	for (int k = 0; k < gv->nr_e; k++) {
		int a = map[gv->e[k].from], b = map[gv->e[k].to];
		if (a < 0 || b < 0)
			continue;
		gv->e[we++] = (struct gedge){a, b, gv->e[k].bytes, gv->e[k].elided, gv->e[k].saved};
	}
	gv->nr_e = we;
	gview_merge_edges(gv);
	free(order);
	free(keep);
	free(core);
	free(map);
}

/* FNV-1a of s, continuing from h. */
static uint64_t fnv(uint64_t h, const char *s)
{
	for (const char *p = s ? s : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;
}

/*
 * The op key of node i (see gview_build_folded), into key: "L file:line" (" B" added for a line
 * derived from the forward) when the model's line is known and is not the user's own line,
 * else "O op" (" B" for a backward kernel) from torch_op or op; 0 (key empty) when neither
 * is known, or the op is "unknown"/"other".
 */
static int op_key(const struct rmodel *m, int i, struct strbuf *key)
{
	const cJSON *j = m->nodes[i].json;
	const cJSON *ms = jobj(j, "model_site"), *us = jobj(j, "user_site");
	const char *mf = jstr(ms, "file"), *uf = jstr(us, "file");
	double ml = -1, ul = -2;
	strbuf_reset(key);
	if (mf && jnum(ms, "line", &ml) &&
	    !(uf && jnum(us, "line", &ul) && ul == ml && !strcmp(uf, mf))) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(ms, "derived");
		strbuf_addf(key, "L %s:%.0f%s", mf, ml, cJSON_IsTrue(d) ? " B" : "");
		return 1;
	}
	const char *op = jstr(j, "torch_op");
	if (!op || !strcmp(op, "unknown") || !strcmp(op, "other"))
		op = m->nodes[i].op;
	if (!op || !strcmp(op, "unknown") || !strcmp(op, "other"))
		return 0;
	const cJSON *bw = cJSON_GetObjectItemCaseSensitive(j, "backward");
	strbuf_addf(key, "O %s%s", op, cJSON_IsTrue(bw) ? " B" : "");
	return 1;
}

/*
 * The units the fold compares, in step order: single nodes (fold 1), or ops' runs
 * (GVIEW_FOLD_OPS). Unit u is the len[u] nodes from first[u]; key[u] is what two units must
 * share to match (a node's name, or its op key), sym[u] its hash; owned.
 */
struct units {
	int n;
	int *first, *len;
	char **key;
	uint64_t *sym;
};

static void units_build(struct units *u, const struct rmodel *m, int ops)
{
	int n = m->nr_nodes;
	u->n = 0;
	u->first = xmalloc(sizeof(int) * (size_t)(n + 1));
	u->len = xmalloc(sizeof(int) * (size_t)(n + 1));
	u->key = xmalloc(sizeof(char *) * (size_t)(n + 1));
	u->sym = xmalloc(sizeof(uint64_t) * (size_t)(n + 1));
	struct strbuf key = STRBUF_INIT;
	for (int i = 0; i < n; i++) {
		int keyed = ops && op_key(m, i, &key);
		if (keyed && u->n && u->key[u->n - 1][0] != 'N' &&
		    u->first[u->n - 1] + u->len[u->n - 1] == i &&
		    !strcmp(u->key[u->n - 1], key.buf)) {
			u->len[u->n - 1]++;
			continue;
		}
		if (!keyed) {
			strbuf_reset(&key);
			strbuf_addf(&key, "N %s", m->nodes[i].name);
		}
		u->first[u->n] = i;
		u->len[u->n] = 1;
		u->key[u->n] = xstrdup(key.buf);
		u->sym[u->n] =
		    fnv(fnv(1469598103934665603ull, key.buf), ops ? "" : m->nodes[i].kind);
		u->n++;
	}
	strbuf_release(&key);
}

static void units_release(struct units *u)
{
	for (int k = 0; k < u->n; k++)
		free(u->key[k]);
	free(u->first);
	free(u->len);
	free(u->key);
	free(u->sym);
}

#define FOLD_PERIOD_MAX 2000 /* longest repeated sequence looked for */

/* 1 when the p units from a equal the p units from b (hash first, then the keys). */
static int same_run(const struct units *u, const uint64_t *pre, const uint64_t *pw, int a, int b,
                    int p)
{
	if (pre[a + p] - pre[a] * pw[p] != pre[b + p] - pre[b] * pw[p])
		return 0;
	for (int k = 0; k < p; k++)
		if (u->sym[a + k] != u->sym[b + k] || strcmp(u->key[a + k], u->key[b + k]))
			return 0;
	return 1;
}

/* Maps the nodes of unit x onto the head of unit r0 (fold f, copy c; f -1 outside folds). */
static void map_unit(struct gview *gv, const struct rmodel *m, const struct units *u,
                     struct nodefold *nf, int x, int r0, int f, int c)
{
	int head = u->first[r0];
	if (x == r0) {
		nf->glen[head] = u->len[r0];
		for (int j = 0; j < u->len[r0]; j++)
			if (nf->cand[head] < 0)
				nf->cand[head] = m->nodes[head + j].cand;
	}
	for (int j = 0; j < u->len[x]; j++) {
		int node = u->first[x] + j;
		double us = m->nodes[node].us;
		nf->rep[node] = head;
		nf->fold[node] = f;
		nf->copy[node] = c;
		if (f >= 0 && gv->folds[f].us >= 0)
			gv->folds[f].us = us < 0 ? -1 : gv->folds[f].us + us;
		if (node != head)
			nf->us[head] = nf->us[head] < 0 || us < 0 ? -1 : nf->us[head] + us;
		if (x != r0)
			gv->folded++;
	}
}

static void gview_fold(struct gview *gv, const struct rmodel *m, struct nodefold *nf, int fold)
{
	struct units u;
	units_build(&u, m, fold == GVIEW_FOLD_OPS);
	int n = u.n;
	uint64_t *pre = xmalloc(sizeof(*pre) * (size_t)(n + 1));
	uint64_t *pw = xmalloc(sizeof(*pw) * (size_t)(n + 1));
	pre[0] = 0;
	pw[0] = 1;
	for (int i = 0; i < n; i++) {
		pre[i + 1] = pre[i] * 1000003ull + u.sym[i];
		pw[i + 1] = pw[i] * 1000003ull;
	}
	for (int i = 0; i < n;) {
		int best_p = 0, best_r = 0;
		long best_cov = 0;
		for (int p = 1; p <= FOLD_PERIOD_MAX && 2L * p <= n - i; p++) {
			int r = 1;
			while ((long)(r + 1) * p <= n - i && same_run(&u, pre, pw, i, i + r * p, p))
				r++;
			if (r >= 2 && (long)r * p > best_cov) {
				best_cov = (long)r * p;
				best_p = p;
				best_r = r;
			}
		}
		if (!best_p) {
			map_unit(gv, m, &u, nf, i, i, -1, 0);
			i++;
			continue;
		}
		ALLOC_GROW(gv->folds, gv->nr_folds, gv->alloc_folds);
		int kernels = 0;
		for (int k = 0; k < best_p; k++)
			kernels += u.len[i + k];
		gv->folds[gv->nr_folds] = (struct gfold){u.first[i], best_p, best_r, kernels, 0};
		for (int k = 0; k < best_r * best_p; k++)
			map_unit(gv, m, &u, nf, i + k, i + k % best_p, gv->nr_folds, k / best_p);
		gv->nr_folds++;
		i += best_r * best_p;
	}
	units_release(&u);
	free(pre);
	free(pw);
}

/*
 * Drawing ops: every run of two or more vertices that follow each other in step order, are
 * each small (known time under small_share of the step, in no candidate) and lie in the same
 * fold (or none) becomes one "N small kernels" vertex, whatever edges join them.
 */
static void gview_merge_runs(struct gview *gv, const struct rmodel *m, double small_share,
                             int by_cand, int minor)
{
	int n = gv->nr;
	int *order = xmalloc(sizeof(int) * (size_t)(n + 1));
	int *map = xmalloc(sizeof(int) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		order[i] = i;
	sort_view = gv;
	qsort(order, (size_t)n, sizeof(int), by_step_order);
	sort_view = NULL;
	struct gvert *nv = xcalloc((size_t)n + 1, sizeof(*nv));
	int w = 0;
	for (int k = 0; k < n;) {
		int len = 1;
		const struct gvert *a = &gv->v[order[k]];
#define SMALL(v)                                                                                   \
	((v)->us >= 0 && m->step_us > 0 && (v)->us < small_share * m->step_us &&                   \
	 ((v)->cand < 0 || (minor && m->cand_rank[(v)->cand] > minor)))
#define RUN(v) (by_cand ? (v)->cand >= 0 && (v)->cand == a->cand : SMALL(v))
		if (RUN(a))
			while (k + len < n && RUN(&gv->v[order[k + len]]) &&
			       gv->v[order[k + len]].fold == a->fold)
				len++;
#undef RUN
#undef SMALL
		if (len < 2) {
			map[order[k]] = w;
			nv[w++] = gv->v[order[k]];
			k++;
			continue;
		}
		struct gvert *v = &nv[w];
		*v = *a;
		v->op = by_cand;
		v->count = 0;
		v->us = 0;
		for (int j = 0; j < len; j++)
			v->count += gv->v[order[k + j]].count;
		v->members = xmalloc(sizeof(int) * (size_t)v->count);
		int at = 0;
		for (int j = 0; j < len; j++) {
			struct gvert *x = &gv->v[order[k + j]];
			if (x->members)
				memcpy(v->members + at, x->members, sizeof(int) * (size_t)x->count);
			else
				v->members[at] = x->node;
			if (!by_cand && (x->count == 1 || x->op))
				gv->collapsed += x->count; /* a chain's were counted */
			at += x->count;
			v->us += x->us;
			free(x->members);
			map[order[k + j]] = w;
		}
		w++;
		k += len;
	}
	free(gv->v);
	gv->v = nv;
	gv->nr = w;
	gv->alloc = n + 1;
	int we = 0;
	for (int k = 0; k < gv->nr_e; k++) {
		struct gedge e = gv->e[k];
		e.from = map[e.from];
		e.to = map[e.to];
		if (e.from != e.to)
			gv->e[we++] = e;
	}
	gv->nr_e = we;
	gview_merge_edges(gv);
	free(order);
	free(map);
}

/* Each vertex's place in step order (by_step_order), as a new array of gv->nr ints; with
 * order, also the vertices in that order (a new array, the caller frees). */
static int *step_positions(const struct gview *gv, int **order_out)
{
	int *pos = xmalloc(sizeof(int) * (size_t)(gv->nr + 1));
	int *order = xmalloc(sizeof(int) * (size_t)(gv->nr + 1));
	for (int i = 0; i < gv->nr; i++)
		order[i] = i;
	sort_view = gv;
	qsort(order, (size_t)gv->nr, sizeof(int), by_step_order);
	sort_view = NULL;
	for (int k = 0; k < gv->nr; k++)
		pos[order[k]] = k;
	if (order_out)
		*order_out = order;
	else
		free(order);
	return pos;
}

void gview_drop_far(struct gview *gv)
{
	int *pos = step_positions(gv, NULL);
	int w = 0;
	for (int k = 0; k < gv->nr_e; k++) {
		const struct gedge *e = &gv->e[k];
		if (!e->saved && abs(pos[e->from] - pos[e->to]) > GVIEW_NEAR) {
			gv->far++;
			continue;
		}
		gv->e[w++] = *e;
	}
	gv->nr_e = w;
	gv->ops = 1;
	free(pos);
}

void gview_build_folded(struct gview *gv, const struct rmodel *m, double small_share, int top_n,
                        int fold)
{
	memset(gv, 0, sizeof(*gv));
	int n = m->nr_nodes;
	struct nodefold nf;
	nf.rep = xmalloc(sizeof(int) * (size_t)(n + 1));
	nf.fold = xmalloc(sizeof(int) * (size_t)(n + 1));
	nf.copy = xmalloc(sizeof(int) * (size_t)(n + 1));
	nf.glen = xmalloc(sizeof(int) * (size_t)(n + 1));
	nf.cand = xmalloc(sizeof(int) * (size_t)(n + 1));
	nf.us = xmalloc(sizeof(double) * (size_t)(n + 1));
	for (int i = 0; i < n; i++) {
		nf.rep[i] = i;
		nf.fold[i] = -1;
		nf.copy[i] = 0;
		nf.glen[i] = 1;
		nf.cand[i] = fold == GVIEW_FOLD_OPS ? -1 : m->nodes[i].cand;
		nf.us[i] = m->nodes[i].us;
	}
	if (fold)
		gview_fold(gv, m, &nf, fold);
	gview_collapse(gv, m, small_share, &nf);
	if (fold == GVIEW_FOLD_OPS) {
		if (top_n < 0)
			gview_merge_runs(gv, m, small_share, 1, 0);
		gview_merge_runs(gv, m, small_share, 0, top_n < -1 ? GVIEW_KEEP_CANDS : 0);
		gview_drop_far(gv);
	}
	free(nf.rep);
	free(nf.fold);
	free(nf.copy);
	free(nf.glen);
	free(nf.cand);
	free(nf.us);
	if (top_n > 0 && gv->nr > top_n) {
		gview_top(gv, m, top_n);
		gv->top_n = top_n;
	}
}

void gview_build_ops(struct gview *gv, const struct rmodel *m, double small_share, int max_boxes)
{
	gview_build_folded(gv, m, small_share, 0, GVIEW_FOLD_OPS);
	int grouped = gv->nr_folds > 0;
	for (int i = 0; i < gv->nr && !grouped; i++)
		grouped = gv->v[i].op;
	if (!grouped) { /* no op or layer to draw: the kernels, as gview_build_folded(1) */
		gview_release(gv);
		gview_build_folded(gv, m, small_share, 0, 1);
		return;
	}
	for (double share = 2 * small_share; gv->nr > max_boxes && share <= 0.08; share *= 2) {
		gview_release(gv);
		gview_build_folded(gv, m, share, 0, GVIEW_FOLD_OPS);
	}
	for (int level = -1; level >= -2 && gv->nr > max_boxes; level--) {
		gview_release(gv);
		gview_build_folded(gv, m, fmax(small_share, 0.08), level, GVIEW_FOLD_OPS);
	}
}

void gview_build(struct gview *gv, const struct rmodel *m, double small_share, int top_n)
{
	gview_build_folded(gv, m, small_share, top_n, 0);
}

void gview_release(struct gview *gv)
{
	for (int i = 0; i < gv->nr; i++)
		free(gv->v[i].members);
	free(gv->v);
	free(gv->e);
	free(gv->folds);
	memset(gv, 0, sizeof(*gv));
}

/* Appends s to sb with backslashes doubled, cut to at most max bytes on a UTF-8 boundary. */
static void add_gv_text(struct strbuf *sb, const char *s, size_t max)
{
	size_t n = strlen(s);
	int cut = 0;
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
		cut = 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\')
			strbuf_adds(sb, "\\\\");
		else if (s[i] == '\n' || s[i] == '\r')
			strbuf_adds(sb, " ");
		else
			strbuf_add(sb, s + i, 1);
	}
	if (cut)
		strbuf_adds(sb, "…");
}

/* Appends a kernel name for a label: when longer than max characters, its head and its tail
 * around a "…" (the tail is where templates say what differs), backslashes doubled. */
static void add_gv_name(struct strbuf *sb, const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max || max < 8) {
		add_gv_text(sb, s, max);
		return;
	}
	size_t head = max * 2 / 3, tail = max - head - 1;
	while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80)
		head--;
	size_t from = n - tail;
	while (from < n && ((unsigned char)s[from] & 0xC0) == 0x80)
		from++;
	struct strbuf t = STRBUF_INIT;
	strbuf_add(&t, s, head);
	strbuf_adds(&t, "…");
	strbuf_adds(&t, s + from);
	add_gv_text(sb, t.buf, t.len);
	strbuf_release(&t);
}

static void add_us(struct strbuf *sb, double us)
{
	if (us < 0)
		strbuf_adds(sb, "time unknown");
	else if (us >= 1000)
		strbuf_addf(sb, "%.2f ms", us / 1000);
	else
		strbuf_addf(sb, "%.1f µs", us);
}

/* Fill colour for a vertex taking us out of the largest node's max_us. */
static void fill_colour(char out[8], double us, double max_us, int *dark)
{
	if (us < 0 || max_us <= 0) {
		snprintf(out, 8, "#e8e8e8");
		*dark = 0;
		return;
	}
	double t = sqrt(fmin(us / max_us, 1.0));
	int r = (int)lround(255 + (215 - 255) * t), g = (int)lround(247 + (48 - 247) * t),
	    b = (int)lround(236 + (31 - 236) * t);
	snprintf(out, 8, "#%02x%02x%02x", r & 255, g & 255, b & 255);
	*dark = t > 0.62;
}

static void set(void *obj, const char *name, const char *value)
{
	agsafeset(obj, (char *)name, (char *)value, "");
}

static const char *cand_kind(const struct rmodel *m, int c)
{
	const char *k = jstr(cJSON_GetArrayItem(m->cands, c), "kind");
	return k ? k : "fusion";
}

/* Appends the model line of node n ("file.py:N", the file's last part) or its op, for a label. */
static void add_op_title(struct strbuf *sb, const struct rnode *n)
{
	const cJSON *ms = jobj(n->json, "model_site"), *us = jobj(n->json, "user_site");
	const char *f = jstr(ms, "file"), *uf = jstr(us, "file");
	double line, ul;
	if (f && jnum(ms, "line", &line) &&
	    !(uf && jnum(us, "line", &ul) && ul == line && !strcmp(uf, f))) {
		const char *slash = strrchr(f, '/');
		add_gv_text(sb, slash ? slash + 1 : f, 40);
		strbuf_addf(sb, ":%.0f", line);
		const char *fn = jstr(ms, "func");
		if (fn) {
			strbuf_adds(sb, " ");
			add_gv_name(sb, fn, 24);
		}
		return;
	}
	const char *op = jstr(n->json, "torch_op");
	if (!op || !strcmp(op, "unknown") || !strcmp(op, "other"))
		op = n->op ? n->op : "op";
	add_gv_name(sb, op, 32);
}

/*
 * Labels and styles node a for op vertex v: its model line (or op), its heaviest kernel's name
 * elided in the middle and how many others, the time and bytes of all its copies; the tooltip
 * (the SVG's hover title) has the full names, the heaviest first. reps > 0: "×reps" first.
 */
static void op_vertex(Agnode_t *a, const struct gvert *v, const struct rmodel *m, int reps,
                      struct strbuf *sb)
{
	int heavy = v->members[0];
	double bytes = 0;
	for (int k = 0; k < v->count; k++) {
		const struct rnode *x = &m->nodes[v->members[k]];
		if (x->us > m->nodes[heavy].us)
			heavy = v->members[k];
		if (bytes >= 0 && x->bytes_read >= 0 && x->bytes_written >= 0)
			bytes += x->bytes_read + x->bytes_written;
		else
			bytes = -1;
	}
	const struct rnode *h = &m->nodes[heavy];
	strbuf_reset(sb);
	if (reps)
		strbuf_addf(sb, "×%d  ", reps);
	add_op_title(sb, h);
	strbuf_adds(sb, "\\n");
	add_gv_name(sb, h->name, GVIEW_LABEL_MAX);
	strbuf_addf(sb, " +%d\\n", v->count - 1);
	add_us(sb, v->us);
	if (bytes >= 0) {
		char b[32];
		strbuf_addf(sb, " · %s", fmt_bytes(bytes, b));
	}
	if (v->cand >= 0 && v->cand < m->nr_cands)
		strbuf_addf(sb, " · #%d", m->cand_rank[v->cand]);
	set(a, "label", sb->buf);
	char colour[8];
	int dark;
	fill_colour(colour, v->us, m->max_node_us, &dark);
	set(a, "fillcolor", colour);
	if (dark)
		set(a, "fontcolor", "white");
	set(a, "peripheries", "2");
	strbuf_reset(sb);
	add_gv_text(sb, h->full_name ? h->full_name : h->name, 4000);
	strbuf_addf(sb, " (and %d more kernel%s of this op: ", v->count - 1,
	            v->count == 2 ? "" : "s");
	for (int k = 0, said = 0; k < v->count && said < 8; k++) {
		if (v->members[k] == heavy)
			continue;
		if (said++)
			strbuf_adds(sb, ", ");
		add_gv_text(sb, m->nodes[v->members[k]].name, 80);
	}
	if (v->count > 9)
		strbuf_addf(sb, " and %d more", v->count - 9);
	strbuf_adds(sb, ")");
	if (h->source) {
		strbuf_adds(sb, " @ ");
		add_gv_text(sb, h->source, 200);
	}
	set(a, "tooltip", sb->buf);
}

static Agraph_t *gview_graph(const struct gview *gv, const struct rmodel *m)
{
	Agraph_t *g = agopen("step", Agdirected, NULL);
	struct strbuf sb = STRBUF_INIT;
	set(g, "rankdir", "TB");
	set(g, "nodesep", "0.25");
	set(g, "ranksep", "0.35");
	set(g, "fontname", "Helvetica");
	set(g, "fontsize", "12");
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "style", "rounded,filled");
	agattr(g, AGNODE, "fontname", "Helvetica");
	agattr(g, AGNODE, "fontsize", "12");
	agattr(g, AGNODE, "penwidth", "0.8");
	agattr(g, AGEDGE, "fontname", "Helvetica");
	agattr(g, AGEDGE, "fontsize", "10");
	agattr(g, AGEDGE, "color", "#7a7a7a");
	agattr(g, AGEDGE, "fontcolor", "#555555");
	agattr(g, AGEDGE, "arrowsize", "0.6");

	Agraph_t **clusters = xcalloc((size_t)m->nr_cands + 1, sizeof(*clusters));
	Agraph_t **cand_home = xcalloc((size_t)m->nr_cands + 1, sizeof(*cand_home));
	Agraph_t **folds = xcalloc((size_t)gv->nr_folds + 1, sizeof(*folds));
	Agnode_t **an = xcalloc((size_t)gv->nr + 1, sizeof(*an));
	int *fold_nv = xcalloc((size_t)gv->nr_folds + 1, sizeof(*fold_nv));
	for (int i = 0; i < gv->nr; i++)
		if (gv->v[i].fold >= 0 && gv->v[i].fold < gv->nr_folds)
			fold_nv[gv->v[i].fold]++;
	for (int i = 0; i < gv->nr; i++) {
		const struct gvert *v = &gv->v[i];
		const struct rnode *n = &m->nodes[v->node];
		Agraph_t *home = g;
		/* a fold drawn as one box is labelled "×N" in the box, not boxed again */
		int alone = v->fold >= 0 && v->fold < gv->nr_folds && fold_nv[v->fold] == 1;
		if (v->fold >= 0 && v->fold < gv->nr_folds && !alone) {
			if (!folds[v->fold]) {
				const struct gfold *f = &gv->folds[v->fold];
				strbuf_reset(&sb);
				strbuf_addf(&sb, "cluster_x%d", v->fold + 1);
				Agraph_t *sub = agsubg(g, sb.buf, 1);
				strbuf_reset(&sb);
				strbuf_addf(&sb, "×%d  (%d kernel%s each, ", f->reps, f->kernels,
				            f->kernels == 1 ? "" : "s");
				add_us(&sb, f->us);
				strbuf_adds(&sb, " in all)");
				set(sub, "label", sb.buf);
				set(sub, "labeljust", "l");
				set(sub, "style", "rounded,filled");
				set(sub, "fillcolor", "#f4f7fb");
				set(sub, "color", "#6b7f99");
				set(sub, "fontcolor", "#33475b");
				set(sub, "penwidth", "1.2");
				strbuf_reset(&sb);
				strbuf_addf(&sb, "%d repeats of the same %d kernel%s, drawn once",
				            f->reps, f->kernels, f->kernels == 1 ? "" : "s");
				set(sub, "tooltip", sb.buf);
				folds[v->fold] = sub;
			}
			home = folds[v->fold];
		}
		/* the top view boxes only the candidates it keeps whole */
		/* drawing ops, a candidate's members are marked and its round trips highlighted
		 * instead: a box around members apart in step order would widen the drawing */
		int boxed = v->cand >= 0 && v->cand < m->nr_cands && !gv->ops &&
		            (!gv->top_n || m->cand_rank[v->cand] <= GVIEW_TOP_CANDS);
		if (boxed && (!clusters[v->cand] || cand_home[v->cand] == home)) {
			if (!clusters[v->cand]) {
				const cJSON *c = cJSON_GetArrayItem(m->cands, v->cand);
				cand_home[v->cand] = home;
				strbuf_reset(&sb);
				strbuf_addf(&sb, "cluster_%d", m->cand_rank[v->cand]);
				Agraph_t *sub = agsubg(home, sb.buf, 1);
				strbuf_reset(&sb);
				strbuf_addf(&sb, "candidate #%d: ", m->cand_rank[v->cand]);
				add_gv_text(&sb, cand_kind(m, v->cand), 40);
				double saved;
				if (jnum(c, "time_saved_us_per_step", &saved)) {
					strbuf_adds(&sb, ", saves ");
					add_us(&sb, saved);
				}
				set(sub, "label", sb.buf);
				set(sub, "style", "dashed,rounded");
				set(sub, "color", "#1f6fb2");
				set(sub, "fontcolor", "#1f6fb2");
				set(sub, "penwidth", "1.5");
				clusters[v->cand] = sub;
			}
			home = clusters[v->cand];
		}
		int cand_apart =
		    v->cand >= 0 && v->cand < m->nr_cands &&
		    (!boxed || (cand_home[v->cand] != home && home != clusters[v->cand]));
		strbuf_reset(&sb);
		if (v->count > 1)
			strbuf_addf(&sb, "g%d", n->id);
		else
			strbuf_addf(&sb, "n%d", n->id);
		Agnode_t *a = agnode(home, sb.buf, 1);
		an[i] = a;
		char colour[8];
		int dark;
		strbuf_reset(&sb);
		if (v->op) {
			op_vertex(a, v, m, alone ? gv->folds[v->fold].reps : 0, &sb);
			if (cand_apart) {
				set(a, "color", "#1f6fb2");
				set(a, "penwidth", "2");
			}
			continue;
		}
		if (v->count > 1) {
			strbuf_addf(&sb, "%d small kernels\\n", v->count);
			add_us(&sb, v->us);
			set(a, "label", sb.buf);
			set(a, "style", "rounded,filled,dashed");
			set(a, "fillcolor", "#f2f2f2");
			strbuf_reset(&sb);
			for (int k = 0; k < v->count && k < 8; k++) {
				if (k)
					strbuf_adds(&sb, ", ");
				add_gv_text(&sb, m->nodes[v->members[k]].name, 60);
			}
			if (v->count > 8)
				strbuf_addf(&sb, " and %d more", v->count - 8);
			set(a, "tooltip", sb.buf);
			continue;
		}
		if (alone)
			strbuf_addf(&sb, "×%d  ", gv->folds[v->fold].reps);
		add_gv_name(&sb, n->name, GVIEW_LABEL_MAX);
		strbuf_adds(&sb, "\\n");
		add_us(&sb, n->us);
		if (n->bytes_read >= 0 && n->bytes_written >= 0) {
			char b[32];
			strbuf_addf(&sb, " · %s", fmt_bytes(n->bytes_read + n->bytes_written, b));
		}
		if (gv->ops && v->cand >= 0 && v->cand < m->nr_cands)
			strbuf_addf(&sb, " · #%d", m->cand_rank[v->cand]);
		set(a, "label", sb.buf);
		fill_colour(colour, n->us, m->max_node_us, &dark);
		set(a, "fillcolor", colour);
		if (dark)
			set(a, "fontcolor", "white");
		if (n->kind && strcmp(n->kind, "kernel"))
			set(a, "shape", "cds");
		if (cand_apart) {
			set(a, "color", "#1f6fb2");
			set(a, "penwidth", "2");
		}
		strbuf_reset(&sb);
		add_gv_text(&sb, n->full_name ? n->full_name : n->name, 4000);
		if (n->source) {
			strbuf_adds(&sb, " @ ");
			add_gv_text(&sb, n->source, 200);
		}
		set(a, "tooltip", sb.buf);
	}
	/* Drawing ops, the step's order sets the ranks: each vertex an invisible edge to the next
	 * in step order, and an edge between vertices far apart in it does not pull the layout
	 * wide. */
	int *order;
	int *pos = step_positions(gv, &order);
	for (int k = 0; k < gv->nr_e; k++) {
		const struct gedge *e = &gv->e[k];
		Agedge_t *ae = agedge(g, an[e->from], an[e->to], NULL, 1);
		int apart = abs(pos[e->from] - pos[e->to]);
		if ((gv->ops && apart > GVIEW_NEAR) || (gv->column && apart > 1))
			set(ae, "constraint", "false");
		if (e->saved > 0) {
			char b[32];
			set(ae, "color", "#d9480f");
			set(ae, "fontcolor", "#d9480f");
			set(ae, "penwidth", "2.5");
			strbuf_reset(&sb);
			if (e->bytes > 0)
				strbuf_addf(&sb, "%s round trip", fmt_bytes(e->bytes, b));
			set(ae, "label", sb.buf);
			strbuf_reset(&sb);
			strbuf_addf(&sb, "a round trip through VRAM that finding #%d saves",
			            e->saved);
			set(ae, "tooltip", sb.buf);
		} else if (e->elided) {
			set(ae, "style", "dashed");
			set(ae, "color", "#b0b0b0");
			set(ae, "tooltip", "through kernels the top view leaves out");
		} else if (e->bytes > 0) {
			char b[32];
			set(ae, "label", fmt_bytes(e->bytes, b));
			double w = 0.6 + log10(1 + e->bytes / 65536.0);
			strbuf_reset(&sb);
			strbuf_addf(&sb, "%.2f", fmin(w, 4.0));
			set(ae, "penwidth", sb.buf);
		} else {
			set(ae, "style", "dotted");
		}
	}
	/* (not beside a real edge of the same pair: dot 2.42 asserts in merge_chain on some) */
	for (int k = 0; (gv->ops || gv->column) && k + 1 < gv->nr; k++) {
		Agnode_t *x = an[order[k]], *y = an[order[k + 1]];
		if (agedge(g, x, y, NULL, 0) || agedge(g, y, x, NULL, 0))
			continue;
		Agedge_t *ae = agedge(g, x, y, "step", 1);
		set(ae, "style", "invis");
		set(ae, "weight", "4");
	}
	free(pos);
	free(order);
	free(clusters);
	free(cand_home);
	free(folds);
	free(fold_nv);
	free(an);
	strbuf_release(&sb);
	return g;
}

/* cgraph's write callback into a strbuf, through a memory stream. */
static int graph_dot(Agraph_t *g, struct strbuf *dot)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return error("cannot open a memory stream for the graph");
	int r = agwrite(g, f);
	if (fclose(f) || r) {
		free(buf);
		return error("cannot write the step graph as DOT");
	}
	strbuf_add(dot, buf, len);
	free(buf);
	return 0;
}

/*
 * One Graphviz context for the process, made on first use and kept. Graphviz 2.42 keeps a
 * static cache of the last font name that outlives a context: laying out in a second context
 * after gvFreeContext() on the first reads freed memory (AddressSanitizer shows it in
 * textspan_size). And gvFreeContext() leaves fontconfig's and the text layout's caches
 * unreachable, so freeing it at exit only turns reachable memory into reported leaks. The
 * context therefore lives as long as the process, like the libraries' own caches.
 */
static GVC_t *report_gvc;

static GVC_t *gvc_get(void)
{
	if (!report_gvc)
		report_gvc = gvContext();
	return report_gvc;
}

/* Lays g out and renders it as SVG into svg, in this process; 0, or -1 with a message.
 * free_layout 0 leaves the layout for the process's exit to reclaim (the child below). */
static int render_here(Agraph_t *g, struct strbuf *svg, int free_layout)
{
	GVC_t *gvc = gvc_get();
	if (!gvc)
		return error("cannot start Graphviz");
	int r = 0;
	if (gvLayout(gvc, g, "dot")) {
		r = error("graphviz cannot lay out the step graph");
	} else {
		char *data = NULL;
		unsigned int len = 0;
		if (gvRenderData(gvc, g, "svg", &data, &len) || !data)
			r = error("graphviz cannot render the step graph as SVG");
		else
			strbuf_add(svg, data, len);
		if (data)
			gvFreeRenderData(data);
		if (free_layout)
			gvFreeLayout(gvc, g);
	}
	return r;
}

/* Seconds on the monotonic clock. */
static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Settings that make dot's layout cheap on a large graph: few network-simplex and
 * crossing-minimisation passes, and straight edges instead of splines. */
static void cheap_layout(Agraph_t *g)
{
	set(g, "nslimit", "2");
	set(g, "nslimit1", "2");
	set(g, "mclimit", "0.2");
	set(g, "searchsize", "10");
	set(g, "remincross", "false");
	set(g, "splines", "line");
}

/*
 * The layout runs in a child process: Graphviz 2.42's dot layout frees a block twice on some
 * graphs (seen on the two-rank DDP sample: "double free or corruption" in gvFreeLayout), it
 * overflows its stack on very long chains, and it may take minutes on a few thousand nodes;
 * a crash or a slow layout inside a library must cost the drawing, not the report. The child
 * writes the SVG to a pipe; the parent reads it with poll() until budget_s has passed, then
 * kills the child. Anything but a clean exit with the whole SVG is a failure here. Returns 0,
 * GVIEW_TIMEOUT or -1 (reason gets why).
 */
static int render_isolated(Agraph_t *g, struct strbuf *svg, int cheap, double budget_s,
                           struct strbuf *reason)
{
	int fds[2];
	if (pipe(fds)) {
		strbuf_addf(reason, "cannot make a pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		strbuf_addf(reason, "cannot fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2); /* a crash's glibc message would read as ours */
		if (cheap)
			cheap_layout(g);
		struct strbuf out = STRBUF_INIT;
		/* the crash seen is in gvFreeLayout: the child never frees, it exits */
		int rc = render_here(g, &out, 0) ? 1 : 0;
		for (size_t off = 0; !rc && off < out.len;) {
			ssize_t w = write(fds[1], out.buf + off, out.len - off);
			if (w <= 0) {
				rc = 1;
				break;
			}
			off += (size_t)w;
		}
		_exit(rc);
	}
	close(fds[1]);
	double deadline = now_s() + budget_s;
	int timed_out = 0;
	char buf[65536];
	for (;;) {
		double left = deadline - now_s();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		struct pollfd pfd = {fds[0], POLLIN, 0};
		int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue; /* the deadline check above ends it */
		if (pr < 0)
			break;
		ssize_t n = read(fds[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		strbuf_add(svg, buf, (size_t)n);
	}
	close(fds[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!timed_out && WIFEXITED(st) && WEXITSTATUS(st) == 0 && svg->len)
		return 0;
	strbuf_reset(svg);
	if (timed_out) {
		strbuf_addf(reason, "the layout took longer than %g s (AICPROF_LAYOUT_S)",
		            budget_s);
		return GVIEW_TIMEOUT;
	}
	if (WIFSIGNALED(st))
		strbuf_addf(reason, "graphviz crashed laying it out (signal %d)", WTERMSIG(st));
	else
		strbuf_adds(reason, "graphviz cannot lay it out");
	return -1;
}

int gview_svg_width(const char *svg)
{
	const char *s = svg ? strstr(svg, "<svg width=\"") : NULL;
	return s ? atoi(s + 12) : -1;
}

double gview_layout_budget(void)
{
	const char *e = getenv("AICPROF_LAYOUT_S");
	if (e && *e) {
		char *end;
		double d = strtod(e, &end);
		if (!*end && d > 0 && d < 1e6)
			return d;
		warning("AICPROF_LAYOUT_S='%s' is not a number of seconds above 0; using %g", e,
		        GVIEW_LAYOUT_S);
	}
	return GVIEW_LAYOUT_S;
}

static int render_sized(const struct gview *gv, const struct rmodel *m, struct strbuf *dot,
                        struct strbuf *svg, double budget_s, struct strbuf *reason, int max)
{
	struct strbuf why = STRBUF_INIT;
	int size = gv->nr + gv->nr_e, r = 0;
	Agraph_t *g = gview_graph(gv, m);
	if (dot && graph_dot(g, dot)) {
		strbuf_adds(&why, "cannot write it as DOT");
		r = -1;
	}
	if (!r && svg) {
		if (size > max) {
			strbuf_addf(&why, "%d vertices and edges are too many to lay out", size);
			r = GVIEW_TOO_LARGE;
		} else {
			r = render_isolated(g, svg, size > GVIEW_DOT_MAX, budget_s, &why);
		}
	}
	agclose(g);
	if (reason)
		strbuf_add(reason, why.buf ? why.buf : "", why.len);
	strbuf_release(&why);
	return r;
}

int gview_render_budget(const struct gview *gv, const struct rmodel *m, struct strbuf *dot,
                        struct strbuf *svg, double budget_s, struct strbuf *reason)
{
	return render_sized(gv, m, dot, svg, budget_s, reason, GVIEW_DRAW_MAX);
}

int gview_render_wide(const struct gview *gv, const struct rmodel *m, struct strbuf *svg,
                      double budget_s, struct strbuf *reason)
{
	return render_sized(gv, m, NULL, svg, budget_s, reason, GVIEW_WIDE_MAX);
}

int gview_render(const struct gview *gv, const struct rmodel *m, struct strbuf *dot,
                 struct strbuf *svg)
{
	struct strbuf why = STRBUF_INIT;
	int r = gview_render_budget(gv, m, dot, svg, gview_layout_budget(), &why);
	if (r)
		error("cannot draw the step graph: %s", why.len ? why.buf : "graphviz failed");
	strbuf_release(&why);
	return r ? -1 : 0;
}
