/*
 * candidates.c - fusion candidates in the step graph: groups of nodes that could be one
 * kernel, because an intermediate value makes a round trip through VRAM between them.
 *
 * Patterns, tried in this order; a node joins at most one candidate:
 *  1. attention: gemm -> [elementwise scale/mask, or copy]* -> softmax -> [dropout] -> gemm,
 *     each step following a value from writer to reader (library: SDPA);
 *  2. elementwise chain: an elementwise node, then repeatedly the earliest elementwise reader of
 *     a value it wrote, while the readers are on the same stream and agree on numel; kernels
 *     of unknown semantics count as elementwise when their buffers' sizes say so (infer_ew());
 *     the chain then grows into the connected elementwise region around it (grow_region()),
 *     as long as no outside node sits between two members (convex());
 *  3. reduction with prologue/epilogue: a norm/softmax node with the elementwise node writing
 *     its input (prologue) and the elementwise chain reading its output (epilogue);
 *  4. GEMM epilogue: a GEMM and the bias/activation/residual nodes reading its output
 *     (library: a cuBLASLt epilogue);
 *  5. optimizer horizontal fusion: the optimizer's multi_tensor_apply kernels, or a run of 4 or
 *     more same-named elementwise kernels in the last third of the step (library: a fused
 *     optimizer); the per-parameter Adam/AdamW step (find_single_optimizer(): every elementwise
 *     kernel of the lines that launched ATen's addcdiv outside autograd) is taken before the
 *     chains.
 * A chain that stops at a kernel of unknown semantics, another stream, or another numel is
 * written to rejected[] with the reason, and so is an elementwise chain that would remove no
 * value (every intermediate is read later, so only re-reads would be saved).
 *
 * Values: a value written and read inside the group and needed nowhere else is removed; one
 * also read after the group (saved for backward, read next step) is kept: still written, only
 * its re-reads inside the group are saved.
 *
 * Time model (docs/summary-format.md): before = sum of the members' median times. After = the
 * larger of the roofline of the fused kernel (remaining bytes / peak bandwidth, sum of FLOPs /
 * peak compute) and the measured-ratio estimate: GEMM/attention members keep their measured
 * time, and the remaining bytes of the others move at the best bandwidth that any memory-bound
 * member achieved (half the peak when none did); and never less than the fastest member's
 * time (a fused kernel still pays one launch and its tail). Saved = before - after, >= 0.
 */
#include "analyzer/model.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

struct cctx {
	struct model *m;
	char *ew; /* per node: 1 elementwise by semantics, 2 inferred from its buffers' sizes */
	int **wv, *nwv; /* values written by each node */
	int **rv, *nrv; /* values read by each node */
};

static void push_int(int **a, int *n, int v)
{
	*a = xrealloc(*a, sizeof(int) * (*n + 1));
	(*a)[(*n)++] = v;
}

static int has_int(const int *a, int n, int v)
{
	for (int i = 0; i < n; i++)
		if (a[i] == v)
			return 1;
	return 0;
}

static int is_ew_sem(const struct node *n)
{
	return n->kind == NK_KERNEL &&
	       (n->sem.family == FAM_ELEMENTWISE || n->sem.elementwise_fusible);
}

/*
 * A kernel of unknown semantics is taken as elementwise when its buffers' sizes say so: it
 * writes one value, of size S, and every value it reads is of size S too, apart from small
 * ones (under S / 64: a bias, a scale), at least one being of size S. A reduction (S in, a few
 * bytes out), a GEMM (different shapes) or a gather does not pass.
 */
static int infer_ew(const struct cctx *x, int n)
{
	const struct model *m = x->m;
	const struct node *nd = &m->nodes[n];
	if (nd->kind != NK_KERNEL || nd->sem.family != FAM_OTHER || x->nwv[n] != 1)
		return 0;
	uint64_t S = m->values[x->wv[n][0]].size;
	int same = 0;
	if (S < 1024)
		return 0;
	for (int k = 0; k < x->nrv[n]; k++) {
		uint64_t z = m->values[x->rv[n][k]].size;
		if (z == S)
			same++;
		else if (z >= S / 64)
			return 0;
	}
	return same > 0;
}

#define is_ew(n) (x->ew[(n)->id] != 0)

/* The earliest reader after node n of a value n wrote, with the value; -1 when none. */
static int next_reader(struct cctx *x, int n, int *val)
{
	int best = -1;
	for (int i = 0; i < x->nwv[n]; i++) {
		const struct value *v = &x->m->values[x->wv[n][i]];
		for (int r = 0; r < v->nreaders; r++)
			if (v->readers[r] > n && (best < 0 || v->readers[r] < best)) {
				best = v->readers[r];
				*val = v->id;
			}
	}
	return best;
}

static void reject(struct model *m, const char *kind, int a, int b, const char *fmt, int arg)
{
	for (int i = 0; i < m->nrejs; i++)
		if (m->rejs[i].nodes[0] == a && m->rejs[i].nodes[1] == b)
			return;
	m->rejs = xrealloc(m->rejs, sizeof(*m->rejs) * (m->nrejs + 1));
	struct rejected *r = &m->rejs[m->nrejs++];
	r->kind = kind;
	r->nodes = xmalloc(sizeof(int) * 2);
	r->nodes[0] = a;
	r->nodes[1] = b;
	r->nnodes = 2;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, fmt, arg);
	r->reason = sb.buf;
}

/*
 * Extends chain (nodes in order) along elementwise readers, to CHAIN_MAX members at most;
 * returns the new length. The bound keeps a long run of one op (a loop of `x = x * a` that a
 * SIGKILL cut before any step could be told: 400,000 launches, one chain) linear: each member
 * is checked against the chain's others, and so is each value's reader after (classify_values).
 */
#define CHAIN_MAX 64
static int extend_ew(struct cctx *x, int *chain, int len, const char *kind, int only_epilogue_ops)
{
	struct model *m = x->m;
	for (; len < CHAIN_MAX;) {
		int cur = chain[len - 1], val = -1;
		int r = next_reader(x, cur, &val);
		if (r < 0)
			return len;
		struct node *a = &m->nodes[cur], *b = &m->nodes[r];
		if (b->claimed >= 0)
			return len;
		if (b->kind == NK_KERNEL && b->sem.family == FAM_OTHER && !is_ew(b)) {
			reject(m, kind, cur, r, "unknown kernel: node %d has no known semantics",
			       r);
			return len;
		}
		if (!is_ew(b))
			return len;
		if (only_epilogue_ops && strcmp(b->sem.op, "add") && strcmp(b->sem.op, "gelu") &&
		    strcmp(b->sem.op, "gelu_tanh") && strcmp(b->sem.op, "relu") &&
		    strcmp(b->sem.op, "bias"))
			return len;
		if (a->stream != b->stream) {
			reject(m, kind, cur, r,
			       "cross-stream dependency: node %d runs on another stream", r);
			return len;
		}
		if (is_ew(a) && a->numel > 0 && b->numel > 0 && a->numel != b->numel) {
			reject(m, kind, cur, r, "shape mismatch: node %d has another numel", r);
			return len;
		}
		if (has_int(chain, len, r))
			return len;
		chain[len++] = r;
	}
	return len;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static const char *short_op(const struct node *n)
{
	return n->sem.op && strcmp(n->sem.op, "unknown") ? n->sem.op : n->name;
}

/* Builds the candidate from its nodes: values, bytes, times, sources, group. */
/*
 * The values written by a member of nodes[0..nn) and read by a member: removed (into
 * c->removed) when no reader is outside and the value is an intermediate, else kept (c->kept).
 * Returns the bytes that keeping them on chip saves: a removed value's write and its reads
 * inside, a kept one's reads inside.
 */
static uint64_t classify_values(const struct cctx *x, const int *nodes, int nn, struct candidate *c)
{
	const struct model *m = x->m;
	uint64_t saved = 0;
	for (int i = 0; i < nn; i++) {
		int w = nodes[i];
		for (int k = 0; k < x->nwv[w]; k++) {
			const struct value *v = &m->values[x->wv[w][k]];
			int inside = 0, outside = 0;
			uint64_t rb_inside = 0;
			for (int r = 0; r < v->nreaders; r++) {
				if (has_int(nodes, nn, v->readers[r])) {
					inside++;
					rb_inside += v->bytes_read / (uint64_t)v->nreaders;
				} else {
					outside++;
				}
			}
			if (!inside)
				continue;
			if (!outside && v->intermediate) {
				push_int(&c->removed, &c->nremoved, v->id);
				saved += v->bytes_written + rb_inside;
			} else {
				push_int(&c->kept, &c->nkept, v->id);
				saved += rb_inside;
			}
		}
	}
	return saved;
}

/*
 * A chain whose only members of unknown semantics are at its ends (a user's ElementwiseKernel
 * or RawKernel first, CuPy's named ufuncs after it) still has a describable middle: the group
 * is made of that run alone when it has two members or more. Its values are classified
 * against the run (a value a left-out member reads is an output, still written), its bytes
 * saved are the run's (bytes_saved_per_step in the group, never more than the finding's), and
 * the group names its members and those left out, so that fuse and the patch use the run's
 * nodes, not the finding's. group_why says what was left out and why.
 */
static void trim_unknown(struct cctx *x, struct candidate *c)
{
	struct model *m = x->m;
	int h = 0, t = 0, nn = c->nnodes;
	while (h < nn && m->nodes[c->nodes[h]].sem.family == FAM_OTHER)
		h++;
	while (t < nn - h && m->nodes[c->nodes[nn - 1 - t]].sem.family == FAM_OTHER)
		t++;
	if (!h && !t)
		return;
	int len = nn - h - t;
	if (len < 2)
		return;
	const int *run = c->nodes + h;
	for (int i = 0; i < len; i++)
		if (m->nodes[run[i]].sem.family == FAM_OTHER)
			return;
	struct candidate tc = {0};
	tc.id = c->id;
	tc.kind = c->kind;
	tc.nodes = (int *)run;
	tc.nnodes = len;
	for (int i = 0; i < len; i++)
		tc.before_us += m->nodes[run[i]].median_us;
	uint64_t saved = classify_values(x, run, len, &tc);
	char *why = NULL;
	cJSON *g = tc.nremoved ? fusegroup_build(m, &tc, &why) : NULL;
	free(tc.removed);
	free(tc.kept);
	if (!g) {
		free(why);
		return;
	}
	if (saved > c->bytes_saved)
		saved = c->bytes_saved;
	cJSON_AddItemToObject(g, "members", cJSON_CreateIntArray(run, len));
	cJSON *lo = cJSON_AddArrayToObject(g, "left_out");
	for (int i = 0; i < nn; i++)
		if (i < h || i >= h + len)
			cJSON_AddItemToArray(lo, cJSON_CreateNumber(c->nodes[i]));
	cJSON_AddNumberToObject(g, "bytes_saved_per_step", (double)saved);
	struct strbuf sb = STRBUF_INIT;
	const struct node *u = &m->nodes[c->nodes[h ? 0 : nn - 1]];
	char b1[32], b2[32];
	strbuf_addf(&sb,
	            "node %d ('%s')%s of unknown semantics: left out; the group fuses the other "
	            "%d members (%s of the finding's %s a step); fuse the rest by hand",
	            u->id, u->name, h + t > 1 ? " and the other ends are kernels" : " is a kernel",
	            len, fmt_bytes((double)saved, b1), fmt_bytes((double)c->bytes_saved, b2));
	free(c->group_why);
	c->group_why = sb.buf;
	c->group = g;
}

static void add_candidate(struct cctx *x, const char *kind, int *nodes, int nn, const char *lib)
{
	struct model *m = x->m;
	qsort(nodes, nn, sizeof(int), cmp_int);
	m->cands = xrealloc(m->cands, sizeof(*m->cands) * (m->ncands + 1));
	struct candidate *c = &m->cands[m->ncands];
	memset(c, 0, sizeof(*c));
	c->id = m->ncands++;
	c->kind = kind;
	c->library_form = lib;
	c->nodes = xmalloc(sizeof(int) * nn);
	memcpy(c->nodes, nodes, sizeof(int) * nn);
	c->nnodes = nn;
	for (int i = 0; i < nn; i++)
		m->nodes[nodes[i]].claimed = c->id;

	uint64_t bytes_before = 0, saved = 0;
	double before = 0, flops = 0, keep_us = 0, best_bw = 0, min_us = -1;
	uint64_t keep_bytes = 0;
	for (int i = 0; i < nn; i++) {
		const struct node *n = &m->nodes[nodes[i]];
		uint64_t nb = n->bytes_read + n->bytes_written;
		bytes_before += nb;
		before += n->median_us;
		if (min_us < 0 || n->median_us < min_us)
			min_us = n->median_us;
		flops += n->flops;
		if (n->sem.family == FAM_GEMM || n->sem.family == FAM_ATTENTION) {
			keep_us += n->median_us;
			keep_bytes += nb;
		} else if (n->bound && !strcmp(n->bound, "memory") && n->achieved_gbs > best_bw) {
			best_bw = n->achieved_gbs;
		}
	}
	saved = classify_values(x, nodes, nn, c);
	if (!c->nremoved && c->nkept && !strcmp(kind, "elementwise-chain")) {
		/* nothing would stop being written: only a re-read is saved; not worth a kernel */
		int later = -1;
		const struct value *v = &m->values[c->kept[0]];
		for (int r = 0; r < v->nreaders && later < 0; r++)
			if (!has_int(nodes, nn, v->readers[r]))
				later = v->readers[r];
		if (later >= 0)
			reject(
			    m, kind, nodes[0], nodes[nn - 1],
			    "intermediate read later by node %d: only its re-read would be saved",
			    later);
		else
			reject(m, kind, nodes[0], nodes[nn - 1],
			       "intermediate read after the step (live across steps)", 0);
		for (int i = 0; i < nn; i++)
			m->nodes[nodes[i]].claimed = -1;
		free(c->nodes);
		free(c->kept);
		m->ncands--;
		return;
	}
	if (saved > bytes_before)
		saved = bytes_before;
	c->bytes_saved = saved;
	uint64_t fused = bytes_before - saved;
	double pk_bw = m->dev.peak_bw_gbs;
	double pk = m->dev.tflops_bf16 > 0 ? m->dev.tflops_bf16 : m->dev.tflops_fp32;
	double roof = pk_bw > 0 ? (double)fused / (pk_bw * 1e3) : 0;
	double tc = pk > 0 ? flops / (pk * 1e6) : 0;
	if (tc > roof)
		roof = tc;
	double bw = best_bw > 0 ? best_bw : pk_bw * 0.5;
	uint64_t rest = fused > keep_bytes ? fused - keep_bytes : 0;
	double ratio = keep_us + (bw > 0 ? (double)rest / (bw * 1e3) : 0);
	double after = roof > ratio ? roof : ratio;
	if (after < min_us) /* one kernel still costs its launch and tail: the fastest member */
		after = min_us;
	if (after > before)
		after = before;
	c->before_us = before;
	c->after_us = after;
	c->saved_us = before - after;

	/* why, in one sentence */
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < nn; i++)
		strbuf_addf(&sb, "%s%s", i ? " -> " : "", short_op(&m->nodes[nodes[i]]));
	char b1[32];
	if (c->nremoved || c->nkept)
		strbuf_addf(&sb,
		            ": %d intermediate%s (%s a step) round-trip through VRAM between them",
		            c->nremoved + c->nkept, c->nremoved + c->nkept == 1 ? "" : "s",
		            fmt_bytes((double)saved, b1));
	else
		strbuf_addf(&sb, ": %d launches could be one", nn);
	if (c->nkept)
		strbuf_addf(&sb, "; %d still needed later stay written", c->nkept);
	for (int i = 0; i < nn; i++)
		if (x->ew[nodes[i]] == 2) {
			strbuf_adds(&sb,
			            " (kernels of unknown semantics taken as elementwise: each "
			            "writes one buffer the size of the one it reads)");
			break;
		}
	c->why = sb.buf;

	/* the group description for fusion/ (fusegroup.c) */
	c->group = fusegroup_build(m, c, &c->group_why);
	if (!c->group && !strcmp(kind, "elementwise-chain"))
		trim_unknown(x, c);
}

static void find_attention(struct cctx *x)
{
	struct model *m = x->m;
	for (int g1 = 0; g1 < m->nnodes; g1++) {
		if (m->nodes[g1].sem.family != FAM_GEMM || m->nodes[g1].claimed >= 0)
			continue;
		int grp[64], n = 0, cur = g1, val;
		grp[n++] = g1;
		int r = next_reader(x, cur, &val);
		/* scale and mask, and the clone an out-of-place masked_fill makes first */
		while (r >= 0 && n < 60 && m->nodes[r].claimed < 0 &&
		       (is_ew(&m->nodes[r]) || m->nodes[r].kind == NK_COPY ||
		        m->nodes[r].sem.family == FAM_COPY)) {
			grp[n++] = r;
			cur = r;
			r = next_reader(x, cur, &val);
		}
		if (r < 0 || m->nodes[r].sem.family != FAM_SOFTMAX || m->nodes[r].claimed >= 0)
			continue;
		grp[n++] = r;
		cur = r;
		r = next_reader(x, cur, &val);
		/* under autocast the softmax runs in float and its result is cast back */
		if (r >= 0 && m->nodes[r].claimed < 0 && m->nodes[r].sem.family == FAM_COPY &&
		    !strcmp(m->nodes[r].sem.op, "cast")) {
			grp[n++] = r;
			cur = r;
			r = next_reader(x, cur, &val);
		}
		if (r >= 0 && is_ew(&m->nodes[r]) && !strcmp(m->nodes[r].sem.op, "dropout") &&
		    m->nodes[r].claimed < 0) {
			grp[n++] = r;
			cur = r;
			r = next_reader(x, cur, &val);
		}
		if (r < 0 || m->nodes[r].sem.family != FAM_GEMM || m->nodes[r].claimed >= 0)
			continue;
		grp[n++] = r;
		add_candidate(x, "attention", grp, n,
		              "torch.nn.functional.scaled_dot_product_attention");
	}
}

/*
 * Whether nodes grp[0..n) (any order) stay one kernel's worth of work: no node outside the
 * group both depends on a member and feeds one (else the fused kernel would need that node's
 * result before it could run, and that node its output). Node ids are launch order, so one
 * pass over the group's span in order finds every path out and back in. tmp has m->nnodes
 * bytes, zero on entry and on return.
 */
static int convex(const struct cctx *x, const int *grp, int n, char *tmp)
{
	const struct model *m = x->m;
	int lo = grp[0], hi = grp[0], ok = 1;
	for (int i = 0; i < n; i++) {
		lo = grp[i] < lo ? grp[i] : lo;
		hi = grp[i] > hi ? grp[i] : hi;
		tmp[grp[i]] = 1; /* 1 member, 2 a non-member reached from a member */
	}
	for (int v = lo; v <= hi && ok; v++) {
		int reached = 0;
		for (int k = 0; k < x->nrv[v] && !reached; k++) {
			int w = m->values[x->rv[v][k]].writer;
			if (w >= lo && w < v && tmp[w])
				reached = tmp[w] == 2 || (tmp[w] == 1 && !tmp[v]);
		}
		if (tmp[v] == 1 && reached)
			ok = 0; /* a member fed by a non-member that a member feeds */
		else if (!tmp[v] && reached)
			tmp[v] = 2;
	}
	memset(tmp + lo, 0, (size_t)(hi - lo + 1));
	return ok;
}

/* Whether node r may join the elementwise group whose first member is seed. */
static int joinable(const struct cctx *x, int seed, int r)
{
	const struct node *a = &x->m->nodes[seed], *b = &x->m->nodes[r];
	return is_ew(b) && b->claimed < 0 && b->stream == a->stream && b->autograd == a->autograd &&
	       (a->numel <= 0 || b->numel <= 0 || a->numel == b->numel);
}

/*
 * Grows an elementwise chain into the connected elementwise region around it: a node joins
 * when it reads a value a member wrote, or writes a value a member reads, on the same stream
 * and with the same element count, on the same side of autograd (forward and backward are
 * different functions to replace, and a loss's backward is launched next to its forward),
 * launched within GROW_NEAR nodes of the group's first and
 * last member (so a backward op that reads a saved forward value stays with the backward), and
 * the group stays convex (convex()). A chain follows one reader at each step, so an op whose
 * input is read twice (tanh-GELU: x * 0.5 and x ** 3 both read x, and their results meet in
 * the last multiply) came out as several chains, each keeping the other's values written;
 * grown, it is one group that removes them all. First the whole region is taken at once (one
 * node at a time would fail where two branches meet again); when that is not convex, nodes
 * are added one by one where each keeps it convex. Size and span are bounded (GROW_MAX,
 * GROW_SPAN), which keeps this linear in the step's nodes. Returns the new length.
 */
#define GROW_MAX  64
#define GROW_SPAN 128
#define GROW_NEAR 8
static int grow_pass(struct cctx *x, int *grp, int len, char *tmp, int check)
{
	const struct model *m = x->m;
	for (int changed = 1; changed && len < GROW_MAX;) {
		changed = 0;
		for (int i = 0; i < len && len < GROW_MAX; i++) {
			int a = grp[i];
			/* readers of what a writes, and writers of what a reads */
			for (int dir = 0; dir < 2 && len < GROW_MAX; dir++) {
				int nv = dir ? x->nrv[a] : x->nwv[a];
				for (int k = 0; k < nv && len < GROW_MAX; k++) {
					const struct value *v =
					    &m->values[dir ? x->rv[a][k] : x->wv[a][k]];
					int nc = dir ? 1 : v->nreaders;
					for (int c = 0; c < nc && len < GROW_MAX; c++) {
						int r = dir ? v->writer : v->readers[c];
						if (r < 0 || r >= m->nnodes ||
						    has_int(grp, len, r) || !joinable(x, grp[0], r))
							continue;
						int lo = grp[0], hi = grp[0];
						for (int j = 1; j < len; j++) {
							lo = grp[j] < lo ? grp[j] : lo;
							hi = grp[j] > hi ? grp[j] : hi;
						}
						if (r < lo - GROW_NEAR || r > hi + GROW_NEAR ||
						    (r > hi ? r - lo : hi - r) >= GROW_SPAN)
							continue;
						grp[len] = r;
						if (!check || convex(x, grp, len + 1, tmp)) {
							len++;
							changed = 1;
						}
					}
				}
			}
		}
	}
	return len;
}

static int grow_region(struct cctx *x, int *grp, int len, char *tmp)
{
	int *all = xmalloc(sizeof(int) * (GROW_MAX + 1));
	memcpy(all, grp, sizeof(int) * len);
	int n = grow_pass(x, all, len, tmp, 0);
	if (n > len && convex(x, all, n, tmp)) {
		memcpy(grp, all, sizeof(int) * n);
		len = n;
	} else if (convex(x, grp, len, tmp)) {
		len = grow_pass(x, grp, len, tmp, 1);
	} /* else the chain as it was (its one reader at a time crossed a branch) */
	free(all);
	return len;
}

static void find_chains(struct cctx *x)
{
	struct model *m = x->m;
	int *chain = xmalloc(sizeof(int) * (m->nnodes + GROW_MAX + 1));
	char *tmp = xcalloc(m->nnodes ? m->nnodes : 1, 1);
	for (int i = 0; i < m->nnodes; i++) {
		if (!is_ew(&m->nodes[i]) || m->nodes[i].claimed >= 0)
			continue;
		chain[0] = i;
		int len = extend_ew(x, chain, 1, "elementwise-chain", 0);
		if (len >= 2 && len < GROW_MAX)
			len = grow_region(x, chain, len, tmp);
		if (len >= 2)
			add_candidate(x, "elementwise-chain", chain, len, NULL);
	}
	free(tmp);
	free(chain);
}

static void find_reductions(struct cctx *x)
{
	struct model *m = x->m;
	int *grp = xmalloc(sizeof(int) * (m->nnodes + 2));
	for (int i = 0; i < m->nnodes; i++) {
		const struct node *n = &m->nodes[i];
		if ((n->sem.family != FAM_NORM && n->sem.family != FAM_SOFTMAX) || n->claimed >= 0)
			continue;
		int len = 0;
		/* prologue: the elementwise writer of an intermediate it reads */
		for (int k = 0; k < x->nrv[i]; k++) {
			const struct value *v = &m->values[x->rv[i][k]];
			if (v->writer >= 0 && v->intermediate && is_ew(&m->nodes[v->writer]) &&
			    m->nodes[v->writer].claimed < 0 &&
			    m->nodes[v->writer].stream == n->stream) {
				grp[len++] = v->writer;
				break;
			}
		}
		grp[len++] = i;
		len = extend_ew(x, grp, len, "reduction-epilogue", 0);
		if (len >= 2)
			add_candidate(x, "reduction-epilogue", grp, len, NULL);
	}
	free(grp);
}

static void find_gemm_epilogues(struct cctx *x)
{
	struct model *m = x->m;
	int *grp = xmalloc(sizeof(int) * (m->nnodes + 1));
	for (int i = 0; i < m->nnodes; i++) {
		if (m->nodes[i].sem.family != FAM_GEMM || m->nodes[i].claimed >= 0)
			continue;
		grp[0] = i;
		int len = extend_ew(x, grp, 1, "gemm-epilogue", 1);
		if (len >= 2)
			add_candidate(x, "gemm-epilogue", grp, len, "cuBLASLt epilogue");
	}
	free(grp);
}

/*
 * The library form for the program's own optimizer, from its kernels' names: PyTorch's fused
 * and foreach kernels name SGD or Adam, or betray Adam by a square root, lerp or addcdiv (the
 * per-parameter step's lerp_scalar_kernel and addcdiv_cuda_kernel too);
 * foreach kernels that only add and multiply are SGD's (momentum). Unknown: Adam/AdamW/SGD.
 */
static const char *optimizer_form(const struct model *m, const int *grp, int n)
{
	int sgd = 0, adam = 0;
	for (int k = 0; k < n; k++) {
		const struct node *nd = &m->nodes[grp[k]];
		const char *name = nd->full_name ? nd->full_name : nd->name ? nd->name : "";
		if (strcasestr(name, "sgd"))
			sgd++;
		else if (strcasestr(name, "adam") || strstr(name, "Sqrt") || strstr(name, "Lerp") ||
		         strstr(name, "PointwiseOpScalarListFunctor") ||
		         strstr(name, "addcdiv_cuda_kernel") || strstr(name, "lerp_scalar_kernel"))
			adam++;
	}
	if (adam && !sgd)
		return "torch.optim.AdamW(fused=True)";
	if (sgd && !adam)
		return "torch.optim.SGD(fused=True)";
	if (!adam && !sgd) {
		/* foreach kernels that only add and multiply: SGD with momentum */
		int ew = 0;
		for (int k = 0; k < n; k++)
			ew += strstr(m->nodes[grp[k]].full_name ? m->nodes[grp[k]].full_name : "",
			             "multi_tensor_apply") != NULL;
		if (ew == n)
			return "torch.optim.SGD(fused=True)";
	}
	return "the optimizer's fused=True (torch.optim.AdamW/Adam/SGD)";
}

/* Whether n is a kernel of torch.optim's per-parameter Adam/AdamW step (torch/optim/adam.py's
 * _single_tensor_adam: exp_avg.lerp_, exp_avg_sq.addcmul_, param.addcdiv_); *final: the
 * parameter's update, addcdiv, which an EMA's lerp_ alone never has. */
static int single_adam_kernel(const struct node *n, int *final)
{
	const char *s = n->full_name ? n->full_name : n->name ? n->name : "";
	*final = strstr(s, "addcdiv_cuda_kernel") != NULL;
	return !n->sem.backward && !n->autograd &&
	       (*final || strstr(s, "lerp_scalar_kernel") || strstr(s, "addcmul_cuda_kernel"));
}

/*
 * torch.optim's per-parameter Adam/AdamW (foreach off, or a parameter type foreach refuses): each
 * parameter's update is a chain of ATen's own kernels (mul, lerp, addcmul, sqrt, div, add,
 * addcdiv) that find_chains() would take as elementwise chains with no rule for lerp and
 * addcmul. The program lines that launched an addcdiv kernel outside autograd are the
 * optimizer's step(); every unclaimed forward elementwise kernel of those lines is one
 * optimizer-horizontal candidate, whose library form is fused=True on that optimizer. Runs
 * before find_chains().
 */
static void find_single_optimizer(struct cctx *x)
{
	struct model *m = x->m;
	const struct lineref **steps = NULL;
	int nsteps = 0;
	for (int i = 0; i < m->nnodes; i++) {
		int final;
		const struct node *n = &m->nodes[i];
		if (!single_adam_kernel(n, &final) || !final || !n->user_site.file)
			continue;
		int seen = 0;
		for (int k = 0; k < nsteps && !seen; k++)
			seen = steps[k]->line == n->user_site.line &&
			       !strcmp(steps[k]->file, n->user_site.file);
		if (!seen) {
			steps = xrealloc(steps, sizeof(*steps) * (size_t)(nsteps + 1));
			steps[nsteps++] = &n->user_site;
		}
	}
	int *grp = xmalloc(sizeof(int) * (m->nnodes + 1)), n = 0;
	for (int i = 0; i < m->nnodes && nsteps; i++) {
		const struct node *d = &m->nodes[i];
		if (d->claimed >= 0 || !is_ew(d) || d->sem.backward || d->autograd ||
		    !d->user_site.file)
			continue;
		for (int k = 0; k < nsteps; k++)
			if (steps[k]->line == d->user_site.line &&
			    !strcmp(steps[k]->file, d->user_site.file)) {
				grp[n++] = i;
				break;
			}
	}
	if (n >= 2)
		add_candidate(x, "optimizer-horizontal", grp, n, optimizer_form(m, grp, n));
	free(grp);
	free(steps);
}

static void find_optimizer(struct cctx *x)
{
	struct model *m = x->m;
	int *grp = xmalloc(sizeof(int) * (m->nnodes + 1)), n = 0;
	for (int i = 0; i < m->nnodes; i++)
		if (m->nodes[i].sem.family == FAM_OPTIMIZER && m->nodes[i].claimed < 0)
			grp[n++] = i;
	if (n < 2)
		n = 0;
	/* runs of same-named elementwise kernels in the last third */
	for (int i = m->nnodes * 2 / 3; i < m->nnodes;) {
		int j = i;
		while (j < m->nnodes && is_ew(&m->nodes[j]) && m->nodes[j].claimed < 0 &&
		       !strcmp(m->nodes[j].name, m->nodes[i].name))
			j++;
		if (j - i >= 4)
			for (int k = i; k < j; k++)
				grp[n++] = k;
		i = j > i ? j : i + 1;
	}
	if (n >= 2)
		add_candidate(x, "optimizer-horizontal", grp, n, optimizer_form(m, grp, n));
	free(grp);
}

void candidates_find(struct model *m)
{
	struct cctx x = {m, NULL, NULL, NULL, NULL, NULL};
	int nn = m->nnodes ? m->nnodes : 1;
	x.wv = xcalloc(nn, sizeof(int *));
	x.rv = xcalloc(nn, sizeof(int *));
	x.nwv = xcalloc(nn, sizeof(int));
	x.nrv = xcalloc(nn, sizeof(int));
	for (int i = 0; i < m->nnodes; i++)
		m->nodes[i].claimed = -1;
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		if (v->writer >= 0 && v->writer < m->nnodes)
			push_int(&x.wv[v->writer], &x.nwv[v->writer], i);
		for (int r = 0; r < v->nreaders; r++)
			if (v->readers[r] >= 0 && v->readers[r] < m->nnodes &&
			    !has_int(x.rv[v->readers[r]], x.nrv[v->readers[r]], i))
				push_int(&x.rv[v->readers[r]], &x.nrv[v->readers[r]], i);
	}
	x.ew = xcalloc(nn, 1);
	for (int i = 0; i < m->nnodes; i++)
		x.ew[i] = is_ew_sem(&m->nodes[i]) ? 1 : infer_ew(&x, i) ? 2 : 0;
	find_attention(&x);
	find_single_optimizer(&x);
	find_chains(&x);
	find_reductions(&x);
	find_gemm_epilogues(&x);
	find_optimizer(&x);
	for (int i = 0; i < m->nnodes; i++) {
		free(x.wv[i]);
		free(x.rv[i]);
	}
	free(x.wv);
	free(x.rv);
	free(x.nwv);
	free(x.nrv);
	free(x.ew);
}
