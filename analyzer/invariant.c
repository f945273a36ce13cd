/*
 * invariant.c - work that never changes: kernels that compute the same value every step
 * (a causal mask rebuilt from torch.ones(t, t).tril() in every forward, a positional table, a
 * cast of a frozen weight), found from the step graph alone.
 *
 * The rule, applied until nothing changes:
 *  - an input of the step graph (a value written before the step) is unchanging when no node
 *    of the step writes its buffer, its first read was not of a fresh allocation, and its last
 *    write happened at least one step period before the step began (or was never seen: a
 *    constant from before the trace); a parameter the optimizer updates fails the first test;
 *  - a node is invariant when it is a kernel, a set, or a device-to-device copy, is not a
 *    random op (dropout, rand, normal, bernoulli), everything it reads is unchanging or written
 *    by an invariant node, and no node outside the invariant set writes a buffer it writes
 *    later in the step (a memset of a reduction's semaphore is consumed, not kept);
 *  - the values an invariant node writes are unchanging.
 * A node with no pointer reads (a fill, a memset) thus starts a chain. Invariant nodes joined
 * by values form one `invariant` candidate: compute once, keep the values that non-invariant
 * nodes read (`values_kept`, whose bytes stay allocated: `evidence.kept_bytes`), and save the
 * chain's time and bytes every step. Scalar arguments are not in the model: a fill whose value
 * changes per step (a learning-rate tensor) would be taken for a constant; the evidence says
 * which nodes start the chain so that a reader can check them.
 *
 * Confirmation: a probe trace's `cal` flags say whether an allocation changed across one
 * launch, not what it holds, and each step writes the mask into a fresh allocation, so the
 * flags cannot show that two steps' outputs are equal. `evidence.confirmed` is therefore
 * false, `evidence.roles` names the weakest way the chain's reads and writes were inferred
 * (calibrated roles rule out a missed write), and docs/summary-format.md proposes the trace
 * field (a per-launch fingerprint of each written allocation) that would confirm it.
 */
#include "analyzer/beyond.h"
#include "analyzer/util.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

static int is_random(const struct node *n)
{
	static const char *words[] = {"dropout", "rand",   "normal", "bernoulli",
	                              "uniform", "philox", "curand"};
	for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++)
		if ((n->sem.op && strstr(n->sem.op, words[i])) ||
		    (n->full_name && strstr(n->full_name, words[i])))
			return 1;
	return 0;
}

/* Copies: only device-to-device ones (a value read and one written) can be invariant. */
static int eligible(const struct model *m, const struct node *n)
{
	if (is_random(n))
		return 0;
	if (n->kind != NK_COPY)
		return 1;
	int reads = 0;
	for (int i = 0; i < m->nvalues; i++)
		for (int r = 0; r < m->values[i].nreaders; r++)
			if (m->values[i].readers[r] == n->id)
				reads = 1;
	return reads;
}

static int input_unchanging(const struct model *m, const struct value *v)
{
	if (v->writer >= 0 || v->how == HOW_FRESH)
		return 0;
	for (int i = 0; i < m->nvalues; i++)
		if (m->values[i].writer >= 0 && m->values[i].buffer == v->buffer)
			return 0;
	return v->written_ago < 0 || v->written_ago >= m->period;
}

static const char *weaker(const char *a, enum edge_how h)
{
	/* weakest first */
	static const char *order[] = {"conservative", "fresh-alloc", "semantics", "calibrated"};
	const char *b = edge_how_name(h);
	int ia = 4, ib = 4;
	for (int i = 0; i < 4; i++) {
		if (a && !strcmp(a, order[i]))
			ia = i;
		if (!strcmp(b, order[i]))
			ib = i;
	}
	return ib < ia ? order[ib] : (a ? a : b);
}

void invariant_find(struct model *m)
{
	if (!m->nnodes)
		return;
	char *inv = xcalloc(m->nnodes, 1), *vun = xcalloc(m->nvalues ? m->nvalues : 1, 1);
	for (int i = 0; i < m->nvalues; i++)
		vun[i] = (char)input_unchanging(m, &m->values[i]);
	for (int changed = 1; changed;) {
		changed = 0;
		for (int n = 0; n < m->nnodes; n++) {
			if (inv[n] || !eligible(m, &m->nodes[n]))
				continue;
			int ok = 1, writes = 0;
			for (int i = 0; i < m->nvalues && ok; i++) {
				const struct value *v = &m->values[i];
				if (v->writer == n)
					writes = 1;
				for (int r = 0; r < v->nreaders; r++)
					if (v->readers[r] == n && !vun[i])
						ok = 0;
			}
			if (!ok || !writes)
				continue;
			/* no other node writes a buffer this one writes, later in the step */
			for (int i = 0; i < m->nvalues && ok; i++) {
				const struct value *v = &m->values[i];
				if (v->writer != n)
					continue;
				for (int j = 0; j < m->nvalues; j++) {
					const struct value *w = &m->values[j];
					if (w->buffer == v->buffer && w->writer > n &&
					    !inv[w->writer])
						ok = 0;
				}
			}
			if (!ok)
				continue;
			inv[n] = 1;
			changed = 1;
			for (int i = 0; i < m->nvalues; i++)
				if (m->values[i].writer == n)
					vun[i] = 1;
		}
	}
	/* groups: invariant nodes joined by values (union-find over node ids) */
	int *par = xmalloc(sizeof(int) * m->nnodes);
	for (int n = 0; n < m->nnodes; n++)
		par[n] = n;
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		if (v->writer < 0 || !inv[v->writer])
			continue;
		for (int r = 0; r < v->nreaders; r++) {
			int a = v->writer, b = v->readers[r];
			if (!inv[b])
				continue;
			while (par[a] != a)
				a = par[a];
			while (par[b] != b)
				b = par[b];
			if (a != b)
				par[b < a ? a : b] = b < a ? b : a;
		}
	}
	int *grp = xmalloc(sizeof(int) * m->nnodes);
	for (int n = 0; n < m->nnodes; n++) {
		int a = n;
		while (par[a] != a)
			a = par[a];
		grp[n] = inv[n] ? a : -1;
	}
	int *nodes = xmalloc(sizeof(int) * m->nnodes);
	int *vals = xmalloc(sizeof(int) * (m->nvalues ? m->nvalues : 1));
	for (int root = 0; root < m->nnodes; root++) {
		if (!inv[root] || grp[root] != root)
			continue;
		int nn = 0;
		for (int n = 0; n < m->nnodes; n++)
			if (grp[n] == root)
				nodes[nn++] = n;
		struct candidate *c = beyond_add(m, "invariant", nodes, nn);
		cJSON *ev = c->evidence;
		int nk = 0;
		uint64_t kept_bytes = 0;
		const char *roles = NULL;
		cJSON *inputs = cJSON_AddArrayToObject(ev, "inputs");
		for (int i = 0; i < m->nvalues; i++) {
			const struct value *v = &m->values[i];
			int in = v->writer >= 0 && grp[v->writer] == root;
			int read_in = 0, read_out = 0;
			for (int r = 0; r < v->nreaders; r++) {
				if (grp[v->readers[r]] == root)
					read_in = 1;
				else
					read_out = 1;
			}
			if (in) {
				roles = weaker(roles, v->how);
				if (read_out || v->live_after_step) {
					vals[nk++] = v->id;
					kept_bytes += v->size;
				}
			} else if (read_in) {
				cJSON *o = cJSON_CreateObject();
				cJSON_AddNumberToObject(o, "value", v->id);
				cJSON_AddNumberToObject(o, "buffer", (double)v->buffer);
				cJSON_AddNumberToObject(o, "bytes", (double)v->size);
				if (v->written_ago >= 0)
					cJSON_AddNumberToObject(o, "written_ops_before_step",
					                        (double)v->written_ago);
				else
					cJSON_AddNullToObject(o, "written_ops_before_step");
				cJSON_AddItemToArray(inputs, o);
				roles = weaker(roles, v->how);
			}
		}
		c->kept = xmalloc(sizeof(int) * (nk ? nk : 1));
		memcpy(c->kept, vals, sizeof(int) * nk);
		c->nkept = nk;
		double us = 0;
		uint64_t bytes = 0;
		int starts[64], ns = 0;
		for (int k = 0; k < nn; k++) {
			const struct node *nd = &m->nodes[nodes[k]];
			us += nd->median_us;
			bytes += nd->bytes_read + nd->bytes_written;
			int reads = 0;
			for (int i = 0; i < m->nvalues && !reads; i++)
				for (int r = 0; r < m->values[i].nreaders; r++)
					if (m->values[i].readers[r] == nd->id)
						reads = 1;
			if (!reads && ns < 64)
				starts[ns++] = nd->id;
		}
		c->before_us = us;
		c->after_us = 0;
		c->saved_us = us;
		c->bytes_saved = bytes;
		cJSON_AddItemToObject(ev, "starts", beyond_ints(starts, ns));
		cJSON_AddNumberToObject(ev, "kept_bytes", (double)kept_bytes);
		cJSON_AddNumberToObject(ev, "period", m->period);
		cJSON_AddNumberToObject(ev, "steps_seen", (double)m->nodes[nodes[0]].count);
		cJSON_AddBoolToObject(ev, "confirmed", 0);
		cJSON_AddStringToObject(ev, "roles", roles ? roles : "semantics");
		cJSON_AddStringToObject(
		    ev, "confirmation",
		    "not confirmable from this trace: calibration flags say whether an allocation "
		    "changed across a launch, not its contents; a per-launch fingerprint of each "
		    "written allocation would confirm the same bytes every step");
		struct strbuf sb = STRBUF_INIT;
		const struct node *first = &m->nodes[nodes[0]], *last = &m->nodes[nodes[nn - 1]];
		char b1[32];
		strbuf_addf(&sb,
		            "%d node%s (%s%s%s) compute the same %s every step from inputs that do "
		            "not change between steps: compute once before the loop and keep it "
		            "(saves %.1f us and %s of traffic per step)",
		            nn, nn == 1 ? "" : "s", first->name, nn > 1 ? " .. " : "",
		            nn > 1 ? last->name : "", nk == 1 ? "value" : "values", us,
		            fmt_bytes((double)bytes, b1));
		c->why = sb.buf;
	}
	free(nodes);
	free(vals);
	free(par);
	free(grp);
	free(inv);
	free(vun);
}
