/*
 * model.c - builds the report's checked view of summary.json (see model.h); the file is read
 * and checked by lib/summary.c's summary_read(). Building walks nodes[], edges[] and candidates[]
 * once: every field is read through jnum()/jstr(), which accept only the right type, so a malformed
 * summary degrades to "unknown" and never crashes. Node ids are looked up directly when they equal
 * the index, else by bsearch over a sorted copy, since ids need not be dense.
 */
#include "report/model.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int rmodel_int(double d)
{
	return d > -2147483648.0 && d < 2147483648.0 ? (int)d : INT_MIN;
}

/* A number from summary.json as an int, or dflt when absent, not an integer or out of int's
 * range (summary_read() refused such ids and counts already; this keeps any tree safe). */
static int jint(const cJSON *o, const char *key, int dflt)
{
	int64_t v;
	return json_get_int64(o, key, INT_MIN + 1, INT_MAX, &v) == JSON_OK ? (int)v : dflt;
}

void rmodel_missing(struct rmodel *m, const char *what)
{
	for (int i = 0; i < m->nr_missing; i++)
		if (!strcmp(m->missing[i], what))
			return;
	ALLOC_GROW(m->missing, m->nr_missing, m->alloc_missing);
	m->missing[m->nr_missing++] = xstrdup(what);
}

/* A non-negative number field, or -1 (recording "nodes[].key" as missing when absent). */
static double node_num(struct rmodel *m, const cJSON *o, const char *key)
{
	double d;
	if (jnum(o, key, &d) && d >= 0)
		return d;
	char what[64];
	snprintf(what, sizeof(what), "nodes[].%s", key);
	rmodel_missing(m, what);
	return -1;
}

static void node_init(struct rmodel *m, struct rnode *n, const cJSON *o, int index)
{
	memset(n, 0, sizeof(*n));
	n->json = o;
	n->id = jint(o, "id", index);
	n->name = jstr(o, "name");
	n->full_name = jstr(o, "full_name");
	if (!n->name)
		n->name = n->full_name;
	if (!n->name) {
		rmodel_missing(m, "nodes[].name");
		n->name = "unnamed";
	}
	n->kind = jstr(o, "kind");
	n->family = jstr(o, "family");
	n->op = jstr(o, "op");
	n->dtype = jstr(o, "dtype");
	n->bound = jstr(o, "bound");
	n->us = node_num(m, o, "median_us");
	n->bytes_read = node_num(m, o, "bytes_read");
	n->bytes_written = node_num(m, o, "bytes_written");
	n->flops = jnumd(o, "flops", -1);
	n->gbs = jnumd(o, "achieved_gbs", -1);
	n->intensity = jnumd(o, "intensity", -1);
	n->roofline_us = jnumd(o, "roofline_us", -1);
	n->count = jint(o, "count", -1);
	n->stream = jint(o, "stream", -1);
	n->cand = -1;
	/* Derive what the analyzer left out but the report can compute from what it gave. */
	if (n->gbs < 0 && n->us > 0 && n->bytes_read >= 0 && n->bytes_written >= 0)
		n->gbs = (n->bytes_read + n->bytes_written) / (n->us * 1e3);
	if (n->intensity < 0 && n->flops >= 0 && n->bytes_read + n->bytes_written > 0 &&
	    n->bytes_read >= 0 && n->bytes_written >= 0)
		n->intensity = n->flops / (n->bytes_read + n->bytes_written);
	const cJSON *src = jarr(o, "sources");
	if (src && cJSON_IsString(cJSON_GetArrayItem(src, 0)))
		n->source = cJSON_GetArrayItem(src, 0)->valuestring;
	const cJSON *site = jobj(o, "site");
	if (!n->source && jstr(site, "file")) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(&sb, jstr(site, "file"));
		int line = jint(site, "line", -1);
		if (line >= 0)
			strbuf_addf(&sb, ":%d", line);
		n->source = n->source_buf = sb.buf;
	}
}

static int id_cmp(const void *a, const void *b)
{
	const struct rmodel_id *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

int rmodel_find(const struct rmodel *m, int id)
{
	if (id >= 0 && id < m->nr_nodes && m->nodes[id].id == id)
		return id;
	struct rmodel_id key = {id, 0};
	struct rmodel_id *p = bsearch(&key, m->ids, (size_t)m->nr_nodes, sizeof(*m->ids), id_cmp);
	return p ? p->index : -1;
}

void rmodel_init(struct rmodel *m, const cJSON *root)
{
	memset(m, 0, sizeof(*m));
	m->root = root;
	m->empty = cJSON_CreateArray();
	const cJSON *nodes = jarr(root, "nodes");
	if (!nodes)
		rmodel_missing(m, "nodes");
	int n = nodes ? cJSON_GetArraySize(nodes) : 0;
	m->nodes = xcalloc((size_t)n + 1, sizeof(*m->nodes));
	const cJSON *o;
	cJSON_ArrayForEach(o, nodes)
	{
		if (!cJSON_IsObject(o)) {
			rmodel_missing(m, "nodes[] (an entry is not an object)");
			continue;
		}
		node_init(m, &m->nodes[m->nr_nodes], o, m->nr_nodes);
		m->nr_nodes++;
	}
	m->ids = xcalloc((size_t)m->nr_nodes + 1, sizeof(*m->ids));
	for (int i = 0; i < m->nr_nodes; i++)
		m->ids[i] = (struct rmodel_id){m->nodes[i].id, i};
	qsort(m->ids, (size_t)m->nr_nodes, sizeof(*m->ids), id_cmp);
	for (int i = 0; i < m->nr_nodes; i++) {
		struct rnode *p = &m->nodes[i];
		if (p->us < 0)
			continue;
		m->kernel_us += p->us;
		if (p->us > m->max_node_us)
			m->max_node_us = p->us;
	}
	const cJSON *edges = jarr(root, "edges");
	if (!edges)
		rmodel_missing(m, "edges");
	cJSON_ArrayForEach(o, edges)
	{
		double f, t;
		if (!jnum(o, "from", &f) || !jnum(o, "to", &t)) {
			rmodel_missing(m, "edges[].from/to");
			continue;
		}
		int a = rmodel_find(m, rmodel_int(f)), b = rmodel_find(m, rmodel_int(t));
		if (a < 0 || b < 0)
			continue;
		ALLOC_GROW(m->edges, m->nr_edges, m->alloc_edges);
		struct redge *e = &m->edges[m->nr_edges++];
		e->from = a;
		e->to = b;
		e->bytes = jnumd(o, "bytes", -1);
		e->how = jstr(o, "how");
	}
	m->cands = jarr(root, "candidates");
	if (!m->cands) {
		rmodel_missing(m, "candidates");
		m->cands = m->empty;
	}
	m->nr_cands = cJSON_GetArraySize(m->cands);
	int ci = 0;
	cJSON_ArrayForEach(o, m->cands)
	{
		const cJSON *id;
		const char *kind = jstr(o, "kind");
		/* dead/invariant/memory findings are no fusion: no cluster, no node mark */
		if (kind && (!strcmp(kind, "dead") || !strcmp(kind, "invariant") ||
		             !strcmp(kind, "memory"))) {
			ci++;
			continue;
		}
		cJSON_ArrayForEach(id, jarr(o, "nodes"))
		{
			int k =
			    cJSON_IsNumber(id) ? rmodel_find(m, rmodel_int(id->valuedouble)) : -1;
			if (k >= 0 && m->nodes[k].cand < 0)
				m->nodes[k].cand = ci;
		}
		ci++;
	}
	m->cand_order = xcalloc((size_t)m->nr_cands + 1, sizeof(int));
	m->cand_rank = xcalloc((size_t)m->nr_cands + 1, sizeof(int));
	double *saved = xcalloc((size_t)m->nr_cands + 1, sizeof(double));
	for (int i = 0; i < m->nr_cands; i++) {
		m->cand_order[i] = i;
		/* summary.json's "number" (analyzer/timemodel.c's rank), else time saved */
		const cJSON *ci_ = cJSON_GetArrayItem(m->cands, i);
		double num;
		saved[i] = jnum(ci_, "number", &num) && num >= 1
		               ? -num
		               : jnumd(ci_, "time_saved_us_per_step", -1);
	}
	/* Insertion sort, stable: candidates are few. */
	for (int i = 1; i < m->nr_cands; i++)
		for (int j = i; j > 0 && saved[m->cand_order[j]] > saved[m->cand_order[j - 1]];
		     j--) {
			int t = m->cand_order[j];
			m->cand_order[j] = m->cand_order[j - 1];
			m->cand_order[j - 1] = t;
		}
	for (int k = 0; k < m->nr_cands; k++)
		m->cand_rank[m->cand_order[k]] = k + 1;
	free(saved);
	const cJSON *steps = jobj(root, "steps");
	if (jnum(steps, "median_us", &m->step_us) && m->step_us > 0) {
		m->step_us_known = 1;
	} else {
		rmodel_missing(m, "steps.median_us");
		m->step_us = m->kernel_us > 0 ? m->kernel_us : -1;
	}
}

void rmodel_release(struct rmodel *m)
{
	for (int i = 0; i < m->nr_nodes; i++)
		free(m->nodes[i].source_buf);
	free(m->nodes);
	free(m->edges);
	for (int i = 0; i < m->nr_missing; i++)
		free(m->missing[i]);
	free(m->missing);
	cJSON_Delete(m->empty);
	free(m->ids);
	free(m->cand_order);
	free(m->cand_rank);
	memset(m, 0, sizeof(*m));
}
