/*
 * vindex.c - the value indexes of vindex.h, built with counting sorts (CSR arrays): one pass
 * over the values counts each node's reads and writes, a second fills them, so each node's
 * lists are in ascending value order; groups come from sorting the value ids by buffer.
 */
#include "analyzer/vindex.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>

static int cmp_buffer(const void *a, const void *b, void *ctx)
{
	const struct model *m = ctx;
	const struct value *x = &m->values[*(const int *)a], *y = &m->values[*(const int *)b];
	if (x->buffer != y->buffer)
		return x->buffer < y->buffer ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

static int cmp_desc(const void *a, const void *b)
{
	return *(const int *)b - *(const int *)a;
}

/* Prefix sums of off[0..n] in place. */
static void prefix(int *off, int n)
{
	for (int i = 0; i < n; i++)
		off[i + 1] += off[i];
}

void vindex_build(const struct model *m, struct vindex *x)
{
	int N = m->nnodes, V = m->nvalues;
	x->rd_off = xcalloc((size_t)N + 1, sizeof(int));
	x->wr_off = xcalloc((size_t)N + 1, sizeof(int));
	for (int i = 0; i < V; i++) {
		const struct value *v = &m->values[i];
		if (v->writer >= 0 && v->writer < N)
			x->wr_off[v->writer + 1]++;
		for (int r = 0; r < v->nreaders; r++)
			if (v->readers[r] >= 0 && v->readers[r] < N)
				x->rd_off[v->readers[r] + 1]++;
	}
	prefix(x->rd_off, N);
	prefix(x->wr_off, N);
	x->rd = xmalloc(sizeof(int) * (size_t)(x->rd_off[N] ? x->rd_off[N] : 1));
	x->wr = xmalloc(sizeof(int) * (size_t)(x->wr_off[N] ? x->wr_off[N] : 1));
	int *rp = xmalloc(sizeof(int) * ((size_t)N + 1)),
	    *wp = xmalloc(sizeof(int) * ((size_t)N + 1));
	memcpy(rp, x->rd_off, sizeof(int) * ((size_t)N + 1));
	memcpy(wp, x->wr_off, sizeof(int) * ((size_t)N + 1));
	for (int i = 0; i < V; i++) {
		const struct value *v = &m->values[i];
		if (v->writer >= 0 && v->writer < N)
			x->wr[wp[v->writer]++] = i;
		for (int r = 0; r < v->nreaders; r++)
			if (v->readers[r] >= 0 && v->readers[r] < N)
				x->rd[rp[v->readers[r]]++] = i;
	}
	free(rp);
	free(wp);

	int *ord = xmalloc(sizeof(int) * (size_t)(V ? V : 1));
	for (int i = 0; i < V; i++)
		ord[i] = i;
	qsort_r(ord, (size_t)V, sizeof(int), cmp_buffer, (void *)m);
	x->grp_of = xmalloc(sizeof(int) * (size_t)(V ? V : 1));
	x->ngroups = 0;
	for (int k = 0; k < V; k++) {
		if (k && m->values[ord[k]].buffer != m->values[ord[k - 1]].buffer)
			x->ngroups++;
		x->grp_of[ord[k]] = x->ngroups;
	}
	if (V)
		x->ngroups++;
	free(ord);
	int G = x->ngroups;
	x->gw_off = xcalloc((size_t)G + 1, sizeof(int));
	x->gw_cur = xcalloc((size_t)G + 1, sizeof(int));
	x->has_writer = xcalloc((size_t)G + 1, 1);
	for (int i = 0; i < V; i++)
		if (m->values[i].writer >= 0) {
			x->gw_off[x->grp_of[i] + 1]++;
			x->has_writer[x->grp_of[i]] = 1;
		}
	prefix(x->gw_off, G);
	x->gw = xmalloc(sizeof(int) * (size_t)(x->gw_off[G] ? x->gw_off[G] : 1));
	int *gp = xmalloc(sizeof(int) * ((size_t)G + 1));
	memcpy(gp, x->gw_off, sizeof(int) * ((size_t)G + 1));
	for (int i = 0; i < V; i++)
		if (m->values[i].writer >= 0)
			x->gw[gp[x->grp_of[i]]++] = m->values[i].writer;
	free(gp);
	for (int g = 0; g < G; g++) {
		qsort(x->gw + x->gw_off[g], (size_t)(x->gw_off[g + 1] - x->gw_off[g]), sizeof(int),
		      cmp_desc);
		x->gw_cur[g] = x->gw_off[g];
	}
}

void vindex_free(struct vindex *x)
{
	free(x->rd_off), free(x->rd), free(x->wr_off), free(x->wr), free(x->grp_of);
	free(x->gw_off), free(x->gw), free(x->gw_cur), free(x->has_writer);
	memset(x, 0, sizeof(*x));
}
