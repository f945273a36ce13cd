/*
 * finish.c - the graph builder's last stage: the end of the trace, the model's steps and step
 * graph, and the builder's release (builder.h has the stages and the shared struct builder).
 *
 * How it works: builder_finish() empties the reorder buffer (reorder_release(): what is still
 * missing is given up, reorder_warn() says so), makes activity records that never
 * met their API record ops of their own, decides the steps if the step finder has not yet
 * (steps.c), folds what is left (fold.c), then takes the dominant class (most steps, then most
 * positions): its warm-up (leading steps of other classes, then leading time outliers above
 * 1.5 x the median), the step time quantiles over the steady steps, and its capture as the
 * model's nodes (with duration statistics), values, edges and timeline. builder_free() frees
 * everything the builder holds, whether or not builder_finish() ran.
 */
#include "analyzer/builder.h"
#include "analyzer/resolve.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	reorder_release(b, 1);
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
	/* a PyTorch program (ATen kernels) whose tensors the trace does not show one by one: its
	 * caching allocator's segments, no blocks (a trace from before the shim recorded them, or
	 * a PyTorch whose libc10_cuda.so does not report them) and no cudaMallocAsync */
	int aten = 0;
	for (int i = 0; i < b->nfns && !aten; i++)
		aten = b->fns[i].name && (!strncmp(b->fns[i].name, "_ZN2at6native", 13) ||
		                          strstr(b->fns[i].name, "at::native::"));
	if (aten && b->allocs_plain && !b->allocs_block && !b->allocs_async) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(
		    &sb,
		    "PyTorch's caching allocator's blocks are not in the trace (only its "
		    "cudaMalloc segments): tensors that share a segment are told apart by byte "
		    "ranges only, and extents a kernel's parameters do not give are bounded by "
		    "the segment (docs/accuracy.md section 4); record with "
		    "AICPROF_ALLOC_BACKEND=1 for one allocation per tensor");
		warning("'%s': %s", b->file, sb.buf);
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
	reorder_release(b, 1);
	reorder_warn(b);
	resolve_finish(b);
	if (b->locked_key < 0 && b->period == 0) {
		int key = nvtx_rule_best(&b->nvtx);
		if (key >= 0)
			lock_key(b, key);
		else
			find_period(b, 1);
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
	m->step_key = b->locked_key >= 0 ? xstrdup(nvtx_rule_text(&b->nvtx, b->locked_key)) : NULL;
	m->step_us = xcalloc(b->nsteps ? b->nsteps : 1, sizeof(double));
	m->step_t0_ns = xcalloc(b->nsteps ? b->nsteps : 1, sizeof(int64_t));
	for (long i = 0; i < b->nsteps; i++) {
		m->step_us[i] = b->steps[i].us;
		m->step_t0_ns[i] = b->steps[i].t0;
	}
	m->outside_ops = b->outside;
	m->prelude_ops = b->prelude_ops;
	m->epilogue_ops = b->epilogue_ops;
	if (b->locked_key >= 0) {
		m->steps_confidence = 1;
		snprintf(m->steps_reason, sizeof(m->steps_reason), "NVTX ranges '%s': exact",
		         nvtx_rule_text(&b->nvtx, b->locked_key));
	} else if (!strcmp(b->how, "periodic")) {
		m->steps_confidence = b->steps_confidence;
		snprintf(m->steps_reason, sizeof(m->steps_reason), "%s", b->steps_reason);
	} else {
		m->steps_confidence = 0;
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(&sb, "no NVTX step ranges and no repeating launch sequence: the whole "
		                 "run is one step");
		if (b->steps_reason[0])
			strbuf_addf(&sb, " (%s)", b->steps_reason);
		snprintf(m->steps_reason, sizeof(m->steps_reason), "%s", sb.buf);
		strbuf_release(&sb);
	}
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
	for (long i = 0; i < b->nwait; i++)
		rec_free(b, b->wait[i]);
	free(b->wait);
	rangemap_clear(&b->rmap);
	release_before(b, b->next_gi);
	size_t it = 0;
	uint64_t k, v;
	while (hmap_next(&b->orphans, &it, &k, &v))
		rec_free(b, (struct rec *)(uintptr_t)v);
	it = 0;
	while (hmap_next(&b->bufs, &it, &k, &v)) {
		struct buf *bf = (struct buf *)(uintptr_t)v;
		free(bf->sl);
		free(bf);
	}
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
	nvtx_rule_release(&b->nvtx);
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
