/*
 * fold.c - the graph builder's fold: complete steps become per-class statistics and one
 * captured step graph, and their ops, values and edges are released (builder.h has the stages
 * and the shared struct builder).
 *
 * How it works: try_fold() folds a step once all its ops have their GPU times and its
 * successor has ended (or at the end of the trace). fold_step() hashes the step's kernel
 * sequence into its class (steps with the same sequence, at most MAX_CLASSES), adds each
 * position's duration to a reservoir sample (SAMPLE_CAP, grown by doubling) and tallies the
 * calibration fingerprints; for the class's first step, and again for its first steady one
 * (preceded by a step of the same class), capture() copies the step's nodes, values, edges and
 * timeline. release_before() then frees what lies before the next step: memory follows the step,
 * not the file.
 */
#include "analyzer/builder.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
	/* the sample grows by doubling up to SAMPLE_CAP: a position seen once (a step of 200k
	 * distinct kernels) holds 8 floats, not SAMPLE_CAP (16 KiB a position made 3.2 GB) */
	if (!ps->s)
		ps->s = xmalloc(sizeof(float) * (SAMPLE_CAP < 8 ? SAMPLE_CAP : 8));
	else if (ps->n >= 8 && ps->n < SAMPLE_CAP && !(ps->n & (ps->n - 1)))
		ps->s =
		    xrealloc(ps->s, sizeof(float) *
		                        (size_t)(2 * ps->n < SAMPLE_CAP ? 2 * ps->n : SAMPLE_CAP));
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
		if (o->oc) {
			nd->oc = *o->oc;
			nd->has_oc = 1;
		}
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
		nd->site_id = o->site;
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
		x->offset = v->off;
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
			x->offset = e->off;
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

void release_before(struct builder *b, long gi)
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
	st->t0 = t0;
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
void try_fold(struct builder *b, int at_end)
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
