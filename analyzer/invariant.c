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
 * chain's time and bytes every step. A group of memsets only, each read by a kernel of the
 * step, is not reported (sets_only()): it zeroes an accumulator or semaphore the reader
 * updates in place, which must be redone every step. Scalar arguments are not in the model: a fill
 * whose value changes per step (a learning-rate tensor) would be taken for a constant; the evidence
 * says which nodes start the chain so that a reader can check them.
 *
 * Confirmation with the shim's calibration fingerprints (probe records: a hash of each
 * pointer's allocation after the launch, fold.c keeps them per node position over the steps
 * of its class). For each value the candidate keeps (or, when it keeps none, each it writes),
 * the fingerprints of its writer's pointer entry into the value's buffer are looked at:
 *  - equal in at least two steps: the value is the same bytes every step (confirmed);
 *  - two steps differ: it is not invariant (refuted);
 *  - fewer than two steps fingerprinted: unconfirmed.
 * The candidate is confirmed when every such value is, refuted when one is. A refuted
 * candidate stays in the list, marked (`evidence.refuted`, the value that differs), and saves
 * nothing: the graph rule was wrong for it (typically a fill whose scalar changes per step, a
 * learning-rate or step tensor, which the graph cannot see), and showing why is more useful
 * than silence; with a saving of 0 it ranks below every real finding. `evidence.roles` names
 * the weakest way the chain's reads and writes were inferred.
 *
 * Autograd: a candidate all of whose nodes autograd launched (the seed gradient of
 * loss.backward() is a fill of ones and a mul, every step) is marked not actionable from the
 * source (beyond_actionable()).
 */
#include "analyzer/beyond.h"
#include "analyzer/timemodel.h"
#include "analyzer/vindex.h"
#include "lib/util.h"

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
static int eligible(const struct model *m, const struct vindex *x, int n)
{
	if (is_random(&m->nodes[n]))
		return 0;
	if (m->nodes[n].kind != NK_COPY)
		return 1;
	return x->rd_off[n + 1] > x->rd_off[n];
}

static int input_unchanging(const struct model *m, const struct vindex *x, int i)
{
	const struct value *v = &m->values[i];
	if (v->writer >= 0 || v->how == HOW_FRESH)
		return 0;
	if (x->has_writer[x->grp_of[i]])
		return 0;
	return v->written_ago < 0 || v->written_ago >= m->period;
}

/* The latest writer of group g that is not invariant, or -1; moves the cursor past
 * invariant writers (each passed once). */
static int latest_live_writer(struct vindex *x, const char *inv, int g)
{
	while (x->gw_cur[g] < x->gw_off[g + 1] && inv[x->gw[x->gw_cur[g]]])
		x->gw_cur[g]++;
	return x->gw_cur[g] < x->gw_off[g + 1] ? x->gw[x->gw_cur[g]] : -1;
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

/*
 * Fingerprint verdict of value v (written by a node): 1 confirmed, -1 refuted, 0 unknown;
 * *steps the steps fingerprinted.
 */
static int value_fp(const struct model *m, const struct value *v, int *steps)
{
	const struct node *nd = &m->nodes[v->writer];
	int best = 0;
	*steps = 0;
	for (int k = 0; k < nd->nfp; k++) {
		if (nd->fp_buffer[k] != v->buffer || !nd->fp_steps[k])
			continue;
		if (nd->fp_steps[k] > *steps)
			*steps = nd->fp_steps[k];
		if (nd->fp_differ[k])
			return -1;
		if (nd->fp_steps[k] >= 2)
			best = 1;
	}
	return best;
}

/* Sets evidence.confirmed, .confirmation, .fingerprints; returns 1 when refuted. */
static int confirm(const struct model *m, const struct candidate *c, const int *grp, int root,
                   const int *rv, int nrv, cJSON *ev)
{
	int nconf = 0, nref = 0, nvals = 0, refuted_value = -1;
	cJSON *fps = cJSON_CreateArray();
	for (int q = 0; q < nrv; q++) {
		const struct value *v = &m->values[rv[q]];
		int kept = 0;
		for (int k = 0; k < c->nkept; k++)
			kept |= c->kept[k] == v->id;
		if (v->writer < 0 || grp[v->writer] != root || (c->nkept && !kept))
			continue;
		int steps, r = value_fp(m, v, &steps);
		nvals++;
		nconf += r == 1;
		if (r < 0 && !nref++)
			refuted_value = v->id;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "value", v->id);
		cJSON_AddNumberToObject(o, "writer", v->writer);
		cJSON_AddNumberToObject(o, "steps", steps);
		cJSON_AddStringToObject(o, "verdict",
		                        r > 0   ? "equal"
		                        : r < 0 ? "differ"
		                                : "unconfirmed");
		cJSON_AddItemToArray(fps, o);
	}
	cJSON_AddItemToObject(ev, "fingerprints", fps);
	int confirmed = nvals && nconf == nvals && !nref;
	cJSON_AddBoolToObject(ev, "confirmed", confirmed);
	cJSON_AddBoolToObject(ev, "refuted", nref > 0);
	struct strbuf sb = STRBUF_INIT;
	if (nref)
		strbuf_addf(
		    &sb,
		    "refuted: value %d's allocation has different fingerprints in two steps "
		    "after its writer ran: it changes, it is not invariant",
		    refuted_value);
	else if (confirmed)
		strbuf_addf(
		    &sb,
		    "confirmed: the kept value%s had equal fingerprints after %s writer ran "
		    "in at least two steps",
		    nvals == 1 ? "" : "s", nvals == 1 ? "its" : "their");
	else
		strbuf_adds(&sb, "unconfirmed: no calibration fingerprints (probe records) of the "
		                 "kept values in two steps; record with AICPROF_WRITES=probe and "
		                 "AICPROF_PROBE_COUNT above the launches per step of its kernels");
	cJSON_AddStringToObject(ev, "confirmation", sb.buf);
	strbuf_release(&sb);
	return nref > 0;
}

/*
 * The rule of the header as a worklist: a node is checked again only when something its
 * condition reads changes (a value it reads became unchanging, or the latest live writer of a
 * buffer it writes became invariant). The condition is monotone in the invariant set, so the
 * result is the same least fixpoint the pass-until-no-change loop found, in linear time.
 */
static int node_passes(const struct model *m, struct vindex *x, const char *inv, const char *vun,
                       int n)
{
	if (x->wr_off[n + 1] == x->wr_off[n])
		return 0;
	for (int k = x->rd_off[n]; k < x->rd_off[n + 1]; k++)
		if (!vun[x->rd[k]])
			return 0;
	for (int k = x->wr_off[n]; k < x->wr_off[n + 1]; k++) {
		int w = latest_live_writer(x, inv, x->grp_of[x->wr[k]]);
		if (w > n)
			return 0; /* another node writes this buffer later in the step */
	}
	return 1;
}

/*
 * 1 when every node of the group is a memset whose value some kernel of the step reads: the
 * zeroing of an accumulator or a semaphore (a reduction's partial sums, a split-K GEMM's
 * counters) that its reader updates in place, so it must be redone every step.
 */
static int sets_only(const struct model *m, const int *nodes, int nn)
{
	for (int k = 0; k < nn; k++) {
		if (m->nodes[nodes[k]].kind != NK_SET)
			return 0;
		int read = 0;
		for (int i = 0; i < m->nvalues && !read; i++)
			read = m->values[i].writer == nodes[k] && m->values[i].nreaders > 0;
		if (!read)
			return 0;
	}
	return nn > 0;
}

void invariant_find(struct model *m)
{
	if (!m->nnodes)
		return;
	int N = m->nnodes;
	struct vindex x;
	vindex_build(m, &x);
	char *inv = xcalloc(m->nnodes, 1), *vun = xcalloc(m->nvalues ? m->nvalues : 1, 1);
	char *queued = xcalloc(m->nnodes, 1), *elig = xcalloc(m->nnodes, 1);
	for (int i = 0; i < m->nvalues; i++)
		vun[i] = (char)input_unchanging(m, &x, i);
	int *q = xmalloc(sizeof(int) * (size_t)N), qh = 0, qn = 0; /* a ring of at most N */
	for (int n = 0; n < N; n++) {
		elig[n] = (char)eligible(m, &x, n);
		if (elig[n])
			q[qn++ % N] = n, queued[n] = 1;
	}
	while (qn > qh) {
		int n = q[qh++ % N];
		queued[n] = 0;
		if (inv[n] || !node_passes(m, &x, inv, vun, n))
			continue;
		/* the groups n writes: their latest live writer may move below nodes waiting */
		int old_latest[64], ng = 0;
		for (int k = x.wr_off[n]; k < x.wr_off[n + 1] && ng < 64; k++)
			old_latest[ng++] = latest_live_writer(&x, inv, x.grp_of[x.wr[k]]);
		inv[n] = 1;
		for (int k = x.wr_off[n], j = 0; k < x.wr_off[n + 1]; k++, j++) {
			int i = x.wr[k], g = x.grp_of[i];
			if (!vun[i]) {
				vun[i] = 1;
				for (int r = 0; r < m->values[i].nreaders; r++) {
					int rd = m->values[i].readers[r];
					if (rd >= 0 && rd < N && elig[rd] && !inv[rd] &&
					    !queued[rd])
						q[qn++ % N] = rd, queued[rd] = 1;
				}
			}
			int before = j < 64 ? old_latest[j] : N;
			int now = latest_live_writer(&x, inv, g);
			/* writers w with now <= w < before may pass now: wake them */
			for (int t = x.gw_off[g]; t < x.gw_off[g + 1]; t++) {
				int w = x.gw[t];
				if (w >= before)
					continue;
				if (w < now)
					break;
				if (elig[w] && !inv[w] && !queued[w])
					q[qn++ % N] = w, queued[w] = 1;
			}
		}
	}
	free(q);
	free(queued);
	free(elig);
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
	/* each root's nodes and the values it touches (written or read by a member), ascending,
	 * as bucket lists: one pass over nodes and one over values, not one per root */
	int *noff = xcalloc((size_t)N + 1, sizeof(int));
	for (int n = 0; n < N; n++)
		if (grp[n] >= 0)
			noff[grp[n] + 1]++;
	for (int n = 0; n < N; n++)
		noff[n + 1] += noff[n];
	int *nlist = xmalloc(sizeof(int) * (size_t)(noff[N] ? noff[N] : 1));
	int *np_ = xmalloc(sizeof(int) * ((size_t)N + 1));
	memcpy(np_, noff, sizeof(int) * ((size_t)N + 1));
	for (int n = 0; n < N; n++)
		if (grp[n] >= 0)
			nlist[np_[grp[n]]++] = n;
	int *voff = xcalloc((size_t)N + 1, sizeof(int)), *seen = xmalloc(sizeof(int) * (size_t)N);
	for (int n = 0; n < N; n++)
		seen[n] = -1;
	for (int i = 0; i < m->nvalues; i++) { /* count: each value once per root it touches */
		const struct value *v = &m->values[i];
		for (int r = -1; r < v->nreaders; r++) {
			int who = r < 0 ? v->writer : v->readers[r];
			int g = who >= 0 && who < N ? grp[who] : -1;
			if (g < 0 || seen[g] == i)
				continue;
			seen[g] = i;
			voff[g + 1]++;
		}
	}
	for (int n = 0; n < N; n++)
		voff[n + 1] += voff[n];
	int *vlist = xmalloc(sizeof(int) * (size_t)(voff[N] ? voff[N] : 1));
	memcpy(np_, voff, sizeof(int) * ((size_t)N + 1));
	for (int n = 0; n < N; n++)
		seen[n] = -1;
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		for (int r = -1; r < v->nreaders; r++) {
			int who = r < 0 ? v->writer : v->readers[r];
			int g = who >= 0 && who < N ? grp[who] : -1;
			if (g < 0 || seen[g] == i)
				continue;
			seen[g] = i;
			vlist[np_[g]++] = i;
		}
	}
	free(np_);
	free(seen);
	int *vals = xmalloc(sizeof(int) * (m->nvalues ? m->nvalues : 1));
	for (int root = 0; root < m->nnodes; root++) {
		if (!inv[root] || grp[root] != root)
			continue;
		int nn = noff[root + 1] - noff[root];
		int *nodes = nlist + noff[root];
		const int *rv = vlist + voff[root];
		int nrv = voff[root + 1] - voff[root];
		if (sets_only(m, nodes, nn))
			continue;
		struct candidate *c = beyond_add(m, "invariant", nodes, nn);
		cJSON *ev = c->evidence;
		int nk = 0;
		uint64_t kept_bytes = 0;
		const char *roles = NULL;
		cJSON *inputs = cJSON_AddArrayToObject(ev, "inputs");
		for (int qv = 0; qv < nrv; qv++) {
			const struct value *v = &m->values[rv[qv]];
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
			int reads = x.rd_off[nd->id + 1] > x.rd_off[nd->id];
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
		cJSON_AddStringToObject(ev, "roles", roles ? roles : "semantics");
		int refuted = confirm(m, c, grp, root, rv, nrv, ev);
		struct strbuf sb = STRBUF_INIT;
		const struct node *first = &m->nodes[nodes[0]], *last = &m->nodes[nodes[nn - 1]];
		char b1[32], b2[32];
		strbuf_addf(&sb,
		            "%d node%s (%s%s%s) compute the same %s every step from inputs that do "
		            "not change between steps: compute once before the loop and keep it "
		            "(%s of kernel time and %s of traffic per step)",
		            nn, nn == 1 ? "" : "s", first->name, nn > 1 ? " .. " : "",
		            nn > 1 ? last->name : "", nk == 1 ? "value" : "values", fmt_us(us, b2),
		            fmt_bytes((double)bytes, b1));
		c->why = sb.buf;
		if (beyond_actionable(m, c) && refuted)
			cJSON_AddNumberToObject(ev, "time_us", c->saved_us);
		if (refuted) {
			c->saved_us = 0;
			c->bytes_saved = 0;
			struct strbuf rb = STRBUF_INIT;
			strbuf_addf(&rb,
			            "%s; REFUTED by the calibration fingerprints: the kept value "
			            "differs between steps, so it is not invariant",
			            c->why);
			free(c->why);
			c->why = rb.buf;
		}
	}
	free(nlist);
	free(noff);
	free(vlist);
	free(voff);
	vindex_free(&x);
	free(vals);
	free(par);
	free(grp);
	free(inv);
	free(vun);
}
