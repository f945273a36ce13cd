/*
 * deadwork.c - dead work: values written in the step and never read, and the kernels, copies
 * and sets whose every output is such a value.
 *
 * A value (one version of a buffer, written by node W) with no reader inside the step and not
 * read after it is given one verdict, the first that applies:
 *  - workspace: W also reads the buffer (a reduction's staging area or semaphore): the kernel
 *    uses it itself; not dead work, not reported.
 *  - dead: freed or overwritten inside the step, unread.
 *  - kept-alive: it survives the step without being read in it or after it (freed in a later
 *    step, or alive when the trace ended). It only looks dead: the program may read it after
 *    the trace (on the host through a copy, a later `.item()`, or a checkpoint).
 * A value whose only readers overwrite the whole buffer, where those readers' read is inferred
 * (a kernel of unknown semantics with a non-const `T*` parameter), is `dead-unless-read`: dead
 * if the overwriting kernel does not read it first, which the trace cannot show.
 * Values read by a copy (to the host too) or by a collective (another rank reads it) have a
 * reader and are never dead here.
 *
 * A node whose outputs are all dead, dead-unless-read, kept-alive or workspace (at least one
 * not workspace) is one `dead` candidate: its time per step (median) and bytes (read +
 * written) are what removing it saves; `evidence.verdict` is the weakest of its outputs'
 * verdicts, and `evidence.values` lists each output with its buffer, bytes and verdict.
 * A dead node that autograd launched (a backward formula's temporary: ATen's mse_loss_backward
 * fills grad_input with zeros_like and then overwrites all of it) is real dead work but not
 * actionable from the user's source: beyond_actionable() marks it and it saves 0 us.
 * Not reported at all: a reduction whose outputs are only kept-alive or workspace (its
 * result, a loss the host reads after the step, and its partial buffers). Findings whose
 * verdict is not `dead` stay unproven (timemodel.c keeps them out of the headline).
 */
#include "analyzer/beyond.h"
#include "analyzer/vindex.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum verdict { V_LIVE, V_WORKSPACE, V_DEAD, V_DEAD_UNLESS, V_KEPT };

static const char *verdict_name(enum verdict v)
{
	static const char *n[] = {"live", "workspace", "dead", "dead-unless-read", "kept-alive"};
	return n[v];
}

/* Every reader of v overwrites v's whole buffer, and its read is only inferred. */
static int readers_overwrite(const struct model *m, const struct vindex *x, const struct value *v)
{
	if (!v->nreaders)
		return 0;
	for (int r = 0; r < v->nreaders; r++) {
		const struct node *n = &m->nodes[v->readers[r]];
		if (n->kind != NK_KERNEL || n->sem.family != FAM_OTHER)
			return 0;
		int covers = 0;
		for (int k = x->wr_off[n->id]; k < x->wr_off[n->id + 1]; k++) {
			const struct value *w = &m->values[x->wr[k]];
			if (w->buffer == v->buffer && w->size >= v->size)
				covers = 1;
		}
		if (!covers)
			return 0;
	}
	return 1;
}

static enum verdict value_verdict(const struct model *m, const struct vindex *x, int vi)
{
	const struct value *v = &m->values[vi];
	if (v->writer < 0 || v->live_after_step)
		return V_LIVE;
	if (v->nreaders) {
		if (v->dead_in_step && readers_overwrite(m, x, v))
			return V_DEAD_UNLESS;
		return V_LIVE;
	}
	/* the writer's own read of the buffer (an earlier version) makes it a workspace */
	if (v->writer < m->nnodes)
		for (int k = x->rd_off[v->writer]; k < x->rd_off[v->writer + 1]; k++) {
			const struct value *u = &m->values[x->rd[k]];
			if (u != v && u->buffer == v->buffer)
				return V_WORKSPACE;
		}
	return v->dead_in_step ? V_DEAD : V_KEPT;
}

void deadwork_find(struct model *m)
{
	if (!m->nnodes)
		return;
	struct vindex x;
	vindex_build(m, &x);
	enum verdict *vv = xcalloc(m->nvalues ? m->nvalues : 1, sizeof(*vv));
	for (int i = 0; i < m->nvalues; i++)
		vv[i] = value_verdict(m, &x, i);
	for (int n = 0; n < m->nnodes; n++) {
		const struct node *nd = &m->nodes[n];
		int outs = 0, live = 0, real = 0;
		enum verdict worst = V_DEAD;
		for (int k = x.wr_off[n]; k < x.wr_off[n + 1]; k++) {
			int i = x.wr[k];
			outs++;
			if (vv[i] == V_LIVE)
				live++;
			else if (vv[i] != V_WORKSPACE) {
				real++;
				if (vv[i] > worst)
					worst = vv[i];
			}
		}
		if (!outs || live || !real)
			continue;
		/* not dead work: a reduction's result kept past the step (a loss the host reads
		 * later) with its partial buffers */
		if (worst != V_DEAD && nd->sem.family == FAM_REDUCTION)
			continue;
		struct candidate *c = beyond_add(m, "dead", &n, 1);
		cJSON *ev = c->evidence;
		cJSON_AddStringToObject(ev, "verdict", verdict_name(worst));
		cJSON_AddStringToObject(ev, "what",
		                        nd->kind == NK_COPY  ? "dead copy"
		                        : nd->kind == NK_SET ? "dead set"
		                                             : "dead kernel");
		cJSON *vals = cJSON_AddArrayToObject(ev, "values");
		int rm[64], nrm = 0;
		uint64_t wbytes = 0;
		for (int k = x.wr_off[n]; k < x.wr_off[n + 1]; k++) {
			int i = x.wr[k];
			const struct value *v = &m->values[i];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "value", v->id);
			cJSON_AddNumberToObject(o, "buffer", (double)v->buffer);
			cJSON_AddNumberToObject(o, "bytes", (double)v->bytes_written);
			cJSON_AddStringToObject(o, "verdict", verdict_name(vv[i]));
			cJSON_AddItemToObject(o, "readers", beyond_ints(v->readers, v->nreaders));
			cJSON_AddBoolToObject(o, "freed_or_overwritten_in_step", v->dead_in_step);
			cJSON_AddItemToArray(vals, o);
			if (vv[i] != V_WORKSPACE && nrm < 64)
				rm[nrm++] = v->id;
			wbytes += v->bytes_written;
		}
		c->removed = xmalloc(sizeof(int) * (nrm ? nrm : 1));
		memcpy(c->removed, rm, sizeof(int) * nrm);
		c->nremoved = nrm;
		c->bytes_saved = nd->bytes_read + nd->bytes_written;
		c->before_us = nd->median_us;
		c->after_us = 0;
		c->saved_us = worst == V_KEPT ? 0 : nd->median_us;
		cJSON_AddNumberToObject(ev, "steps_seen", (double)nd->count);
		struct strbuf sb = STRBUF_INIT;
		char b1[32];
		const char *src = nd->source ? nd->source : "an unattributed line";
		if (worst == V_DEAD)
			strbuf_addf(&sb,
			            "%s (node %d, %s) writes %s every step that nothing reads "
			            "before they are freed or overwritten: remove it",
			            nd->name, n, src, fmt_bytes((double)wbytes, b1));
		else if (worst == V_DEAD_UNLESS)
			strbuf_addf(
			    &sb,
			    "%s (node %d, %s) writes %s that the next writer of the same "
			    "buffer overwrites whole; dead unless that kernel reads them first "
			    "(its read is only inferred from a non-const pointer)",
			    nd->name, n, src, fmt_bytes((double)wbytes, b1));
		else
			strbuf_addf(
			    &sb,
			    "%s (node %d, %s) writes %s that nothing in the step reads; "
			    "they stay allocated past the step, so the program may read them "
			    "later (on the host, after the loop): looks dead, check before "
			    "removing",
			    nd->name, n, src, fmt_bytes((double)wbytes, b1));
		c->why = sb.buf;
		beyond_actionable(m, c);
	}
	free(vv);
	vindex_free(&x);
}
