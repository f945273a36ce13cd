/*
 * funcgroup.c - function-level fusion groups: summary.json's "functions"
 * (docs/summary-format.md, "Function groups"), what `aicprof fuse` turns into the package
 * aicprof_fused/ whose apply() replaces a library function at run time (docs/fusion.md).
 *
 * The candidates (candidates.c) are chains the analyzer cuts where an intermediate is kept or a
 * kernel has no rule; a library function (transformers' NewGELUActivation.forward,
 * LlamaRMSNorm.forward) is what a user can replace without editing the library. So here the
 * step's forward kernels (not autograd's, model line not derived) are grouped by their model
 * line's function (file and function; the file under site-packages/ or dist-packages/: outside
 * the program's tree). An invocation is a maximal run of consecutive kernels of one function.
 * A function qualifies when all its runs are alike (the same ops, dtypes and element counts in
 * the same order) and the first run, as one group, is describable:
 *  - its outputs are the values its members write that a forward kernel after the run reads;
 *    there must be exactly one, the last member's result (what the function returns); every
 *    other value a member writes is internal (saved-for-backward tensors included: the
 *    replacement's custom op has its own backward);
 *  - the group is either the RMS norm rule below, or what fusegroup_build() makes of the run as
 *    a candidate (an elementwise chain, or a reduction with its epilogue).
 * The RMS norm rule: pow(x, 2) -> mean over the last dimension -> + eps -> rsqrt -> x * r ->
 * (a cast) -> w * h, casts allowed before the pow, becomes rms_norm(x) [-> cast] -> mul by w.
 * Each group input is "param" when no kernel before the run writes its buffer but the
 * optimizer's multi-tensor kernels (a weight: written before the step, or by a foreach/fused
 * optimizer at the step's start), else "arg" (a tensor the caller passes). One kernel gains
 * nothing from fusion: a function needs two or more in a run. Runs must also come from the same
 * lines (a function whose kernels sit between its callees' comes out as runs of different
 * lines, e.g. a decoder layer's two residual adds, and is not taken).
 * The gated-MLP rule (transformers' LlamaMLP, MistralMLP, Qwen2MLP, GemmaMLP:
 * down_proj(act_fn(gate_proj(x)) * up_proj(x))): a run may take one kernel of another library
 * function between two of its own when that kernel is an activation (silu, gelu, gelu_tanh,
 * relu: act_fn's module). A method whose run is then three GEMMs, that activation reading the
 * first GEMM's result, one mul of the activation's result and the second GEMM's read by the
 * third GEMM, and casts (autocast's weight copies), is listed as the form "gated": its group is
 * the activation and the mul alone (fusegroup_build(), the activation's result removed: the
 * replacement's custom op recomputes it in its own backward), its inputs "gate" and "up", and
 * the binding names the activation's class (act_class) for apply() to check act_fn against. The
 * GEMMs stay the module's own.
 * A function named eager_attention_forward whose runs hold a softmax and two GEMMs is listed as
 * the library form "sdpa" (no group): apply() calls transformers' sdpa_attention_forward. Its
 * run also takes the kernels of the program's own line between two of its kernels: softmax and
 * dropout reach the trace through torch's functional frames only, so they show the user's line.
 * A function named apply_rotary_pos_emb (transformers' rotary position embedding of q and k,
 * q * cos + rotate_half(q) * sin and the same of k) whose runs hold two muls and an add for each
 * of its two results, with rotate_half's neg and cat between them, is listed as the form
 * "rotary" (no group): apply() runs the package's rotary kernel, both tensors in one launch and
 * its backward in one more. Its run also takes the kernels of rotate_half between two of its
 * own (rotate_half is a function of its own, so its kernels show that name). The trace cannot
 * give the slices rotate_half takes (session 9, docs/fusion.md), so no group is generated from
 * the kernels: the form is the function's, checked on first use against the original.
 * Functions that do not qualify are not listed (their kernels stay in the candidates).
 */
#include "analyzer/funcgroup.h"
#include "lib/util.h"

#include <cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *funcgroup_module(const char *file)
{
	const char *s = NULL;
	for (const char *p = file; (p = strstr(p, "-packages/")); p++)
		if ((p - file >= 4 && !strncmp(p - 4, "site", 4)) ||
		    (p - file >= 4 && !strncmp(p - 4, "dist", 4)))
			s = p + strlen("-packages/");
	size_t n = s ? strlen(s) : 0;
	if (!s || n < 4 || strcmp(s + n - 3, ".py"))
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	for (const char *c = s; c < s + n - 3;) {
		const char *e = memchr(c, '/', (size_t)(s + n - 3 - c));
		size_t k = e ? (size_t)(e - c) : (size_t)(s + n - 3 - c);
		int ok = k > 0 && (isalpha((unsigned char)*c) || *c == '_');
		for (size_t i = 0; i < k && ok; i++)
			ok = isalnum((unsigned char)c[i]) || c[i] == '_';
		if (!ok) {
			strbuf_release(&sb);
			return NULL;
		}
		if (!(k == 8 && !strncmp(c, "__init__", 8) && !e)) {
			if (sb.len)
				strbuf_adds(&sb, ".");
			strbuf_add(&sb, c, k);
		}
		c += k + (e ? 1 : 0);
	}
	if (!sb.len) {
		strbuf_release(&sb);
		return NULL;
	}
	return sb.buf;
}

/* A forward kernel of a library function (its model line its own, outside the tree). */
static int lib_forward(const struct node *n)
{
	const char *f = n->model_site.file;
	return f && n->model_site.func && !n->autograd && !n->sem.backward && !n->model_derived &&
	       (strstr(f, "site-packages/") || strstr(f, "dist-packages/"));
}

static int same_func(const struct node *a, const struct node *b)
{
	return !strcmp(a->model_site.file, b->model_site.file) &&
	       !strcmp(a->model_site.func, b->model_site.func);
}

/* Whether two kernels' bytes are the same work: equal, or apart by what a pool's blocks add
 * to extents bounded by them (a GEMM's output in a block 1 MiB larger in one layer than in
 * the next, a bf16 copy of a 1.4 MB weight in a 2 MiB block: a few pointers each, at most
 * 4 MiB and never more than half the larger figure). */
static int same_bytes(uint64_t x, uint64_t y)
{
	uint64_t d = x > y ? x - y : y - x, hi = x > y ? x : y;
	return d == 0 || (d <= 4 * ((1u << 20) + 512) && d <= hi / 2);
}

/* Whether the runs [a, a + len) and [b, b + len) are alike. */
static int alike(const struct model *m, int a, int b, int len)
{
	for (int i = 0; i < len; i++) {
		const struct node *x = &m->nodes[a + i], *y = &m->nodes[b + i];
		if (x->sem.op != y->sem.op || x->model_site.line != y->model_site.line ||
		    x->sem.dtype != y->sem.dtype || x->numel != y->numel ||
		    !same_bytes(x->bytes_read, y->bytes_read) ||
		    !same_bytes(x->bytes_written, y->bytes_written))
			return 0;
	}
	return 1;
}

static int in_run(int n, int a, int len)
{
	return n >= a && n < a + len;
}

/* The run's one output (the last member's result, read by a forward kernel after the run or
 * live after the step), or -1 with why set. */
static int run_output(const struct model *m, int a, int len, const char **why)
{
	int last = fusegroup_result(m, a + len - 1), out = -1;
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		if (v->writer < 0 || !in_run(v->writer, a, len))
			continue;
		int after = v->live_after_step && i == last;
		for (int r = 0; r < v->nreaders && !after; r++) {
			const struct node *rd = &m->nodes[v->readers[r]];
			after = !in_run(rd->id, a, len) && !rd->autograd && !rd->sem.backward;
		}
		if (!after)
			continue;
		if (out >= 0 || i != last) {
			*why = "more than one value, or not its last kernel's result, is read "
			       "after it";
			return -1;
		}
		out = i;
	}
	if (out < 0)
		*why = "nothing after it reads what it writes";
	return out;
}

static const char *op_of(const struct node *n)
{
	return n->sem.op ? n->sem.op : "unknown";
}

static int is_cast(const struct node *n)
{
	const char *op = op_of(n);
	return !strcmp(op, "cast") ||
	       (!strcmp(op, "copy") && n->full_name && strstr(n->full_name, "direct_copy_kernel"));
}

/* The storage type of a tensor of bytes over elems elements ("f32", "bf16"/"f16" by the
 * node's name, "bool"), NULL when none fits or two do (a pool's rounded-up block). */
static const char *storage(uint64_t bytes, uint64_t elems, const struct node *n)
{
	if (!elems)
		return NULL;
	int es = fusegroup_elem_size(bytes, elems);
	const char *fn = n->full_name ? n->full_name : "";
	if (es == 4)
		return "f32";
	if (es == 1)
		return "bool";
	if (es == 2)
		return strstr(fn, "Half") || strstr(fn, "half") ? "f16" : "bf16";
	return NULL;
}

static cJSON *tensor(const char *name, int value, const char *dtype, long numel)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddNumberToObject(o, "value", value);
	cJSON_AddStringToObject(o, "dtype", dtype);
	if (numel > 0)
		cJSON_AddNumberToObject(o, "numel", (double)numel);
	return o;
}

/* The RMS norm rule (the file's header), as a group; NULL when the run is not one. */
static cJSON *rms_group(const struct model *m, int a, int len, int out)
{
	int k[8], nk = 0, cast_after = -1;
	for (int i = a; i < a + len; i++) {
		if (is_cast(&m->nodes[i])) {
			if (nk == 5)
				cast_after = i;
			else if (nk)
				return NULL;
			continue;
		}
		if (nk == 8)
			return NULL;
		k[nk++] = i;
	}
	static const char *want[] = {"pow", "mean", "add", "rsqrt", "mul", "mul"};
	if (nk != 6)
		return NULL;
	for (int i = 0; i < 6; i++)
		if (strcmp(op_of(&m->nodes[k[i]]), want[i]))
			return NULL;
	const struct node *pw = &m->nodes[k[0]], *mean = &m->nodes[k[1]], *add = &m->nodes[k[2]];
	const struct node *mx = &m->nodes[k[4]], *mw = &m->nodes[k[5]];
	if (!pw->full_name || !strstr(pw->full_name, "pow_tensor_scalar_kernel_impl") ||
	    !strstr(pw->full_name, "{lambda(float)#1}") || pw->numel <= 0 || !pw->nreads ||
	    !mean->nreads || !add->full_name || !strstr(add->full_name, "CUDAFunctorOnSelf_add"))
		return NULL;
	long N = pw->numel;
	int pv = fusegroup_result(m, pw->id), mv = fusegroup_result(m, mean->id);
	if (pv < 0 || mv < 0 || mean->reads[0] != pv || m->values[mv].size % 4)
		return NULL;
	long rows = (long)(m->values[mv].size / 4);
	if (rows <= 0 || N % rows)
		return NULL;
	long cols = N / rows;
	uint64_t raw;
	if (!fusegroup_param(add, 1, 8, &raw))
		return NULL;
	char eb[32];
	snprintf(eb, sizeof(eb), "%.7g",
	         (double)(fusegroup_f32((uint32_t)raw) * fusegroup_f32((uint32_t)(raw >> 32))));
	double eps = strtod(eb, NULL);
	/* x: what the pow read, before any cast at the front */
	int x = pw->reads[0];
	if (k[0] > a && is_cast(&m->nodes[a]) && m->nodes[a].nreads)
		x = m->nodes[a].reads[0];
	/* the weight: mw's read that is not the running tensor, cols elements */
	int w = -1;
	for (int r = 0; r < mw->nreads; r++) {
		const struct value *v = &m->values[mw->reads[r]];
		if (v->writer < 0 || !in_run(v->writer, a, len))
			w = mw->reads[r];
	}
	if (w < 0 || fusegroup_result(m, mx->id) < 0)
		return NULL;
	const char *xt = storage(m->values[x].size, (uint64_t)N, pw);
	const char *wt = storage(m->values[w].size, (uint64_t)cols, mw);
	const char *ot = storage(m->values[out].size, (uint64_t)N, mw);
	const char *ct = cast_after >= 0 ? storage(m->values[fusegroup_result(m, cast_after)].size,
	                                           (uint64_t)N, &m->nodes[cast_after])
	                                 : NULL;
	if (!xt || !wt || !ot || !strcmp(xt, "bool") || !strcmp(wt, "bool") ||
	    (cast_after >= 0 && !ct))
		return NULL;
	cJSON *g = cJSON_CreateObject();
	cJSON_AddStringToObject(g, "kind", "reduction-epilogue");
	cJSON_AddStringToObject(g, "dtype", ot);
	cJSON_AddNumberToObject(g, "rows", (double)rows);
	cJSON_AddNumberToObject(g, "cols", (double)cols);
	cJSON *ins = cJSON_AddArrayToObject(g, "inputs");
	cJSON_AddItemToArray(ins, tensor("in0", x, xt, 0));
	cJSON_AddItemToArray(ins, tensor("in1", w, wt, cols));
	cJSON *ops = cJSON_AddArrayToObject(g, "ops");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", "rms_norm");
	cJSON *args = cJSON_AddArrayToObject(o, "args");
	cJSON_AddItemToArray(args, cJSON_CreateString("in0"));
	cJSON_AddStringToObject(o, "out", "x0");
	cJSON_AddNumberToObject(o, "eps", eps);
	cJSON_AddItemToArray(ops, o);
	const char *last = "x0";
	if (ct) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "op", "cast");
		args = cJSON_AddArrayToObject(o, "args");
		cJSON_AddItemToArray(args, cJSON_CreateString("x0"));
		cJSON_AddStringToObject(o, "out", "x1");
		cJSON_AddStringToObject(o, "to", ct);
		cJSON_AddItemToArray(ops, o);
		last = "x1";
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", "mul");
	args = cJSON_AddArrayToObject(o, "args");
	cJSON_AddItemToArray(args, cJSON_CreateString("in1"));
	cJSON_AddItemToArray(args, cJSON_CreateString(last));
	cJSON_AddStringToObject(o, "out", "y");
	cJSON_AddItemToArray(ops, o);
	cJSON *outs = cJSON_AddArrayToObject(g, "outputs");
	cJSON_AddItemToArray(outs, tensor("y", out, ot, 0));
	cJSON_AddArrayToObject(g, "kept");
	cJSON_AddArrayToObject(g, "unwritten");
	return g;
}

/* An activation kernel a gated MLP calls through a module of its own (act_fn). */
static int is_act(const struct node *n)
{
	static const char *acts[] = {"silu", "gelu", "gelu_tanh", "relu"};
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
		if (!strcmp(op_of(n), acts[i]))
			return 1;
	return 0;
}

/* Whether value v is one that node n reads. */
static int reads_value(const struct node *n, int v)
{
	for (int r = 0; r < n->nreads; r++)
		if (n->reads[r] == v)
			return 1;
	return 0;
}

/* The gated-MLP rule (the file's header): the group act(gate) * up of a run whose kernels are
 * three GEMMs, one activation of another library module, one mul and casts, wired
 * down(act(gate(x)) * up(x)); NULL when the run is not one. *cls: the activation's class
 * (a new string). */
static cJSON *gated_group(const struct model *m, int a, int len, char **cls)
{
	int gm[3], ng = 0, act = -1, mul = -1;
	for (int i = a; i < a + len; i++) {
		const struct node *n = &m->nodes[i];
		if (n->sem.family == FAM_GEMM) {
			if (ng == 3)
				return NULL;
			gm[ng++] = i;
		} else if (!same_func(n, &m->nodes[a])) {
			if (act >= 0 || !is_act(n))
				return NULL;
			act = i;
		} else if (!strcmp(op_of(n), "mul")) {
			if (mul >= 0)
				return NULL;
			mul = i;
		} else if (!is_cast(n)) {
			return NULL;
		}
	}
	if (ng != 3 || act < 0 || mul < 0 ||
	    !(gm[0] < act && act < gm[1] && gm[1] < mul && mul < gm[2]))
		return NULL;
	const struct node *an = &m->nodes[act], *mn = &m->nodes[mul];
	int g0 = fusegroup_result(m, gm[0]), g1 = fusegroup_result(m, gm[1]);
	int av = fusegroup_result(m, act), mv = fusegroup_result(m, mul);
	if (g0 < 0 || g1 < 0 || av < 0 || mv < 0 || an->nreads != 1 || an->reads[0] != g0 ||
	    mn->nreads != 2 || !reads_value(mn, av) || !reads_value(mn, g1) ||
	    !reads_value(&m->nodes[gm[2]], mv))
		return NULL;
	/* act_fn is a module: its function is "<class>.forward" */
	const char *f = an->model_site.func, *dot = strrchr(f, '.');
	if (!dot || strcmp(dot, ".forward") || dot == f)
		return NULL;
	struct candidate c;
	memset(&c, 0, sizeof(c));
	c.kind = "elementwise-chain";
	int nodes[2] = {act, mul}, removed[1] = {av};
	c.nodes = nodes;
	c.nnodes = 2;
	c.removed = removed;
	c.nremoved = 1;
	c.before_us = an->median_us + mn->median_us;
	char *why = NULL;
	cJSON *g = fusegroup_build(m, &c, &why);
	free(why);
	if (!g)
		return NULL;
	/* in0 the gate (what the activation reads), in1 up; one write, the product */
	const cJSON *ins = cJSON_GetObjectItemCaseSensitive(g, "inputs");
	const cJSON *outs = cJSON_GetObjectItemCaseSensitive(g, "outputs");
	const cJSON *v0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ins, 0), "value");
	const cJSON *v1 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ins, 1), "value");
	if (cJSON_GetArraySize(ins) != 2 || cJSON_GetArraySize(outs) != 1 || !cJSON_IsNumber(v0) ||
	    !cJSON_IsNumber(v1) || v0->valueint != g0 || v1->valueint != g1) {
		cJSON_Delete(g);
		return NULL;
	}
	struct strbuf sb = STRBUF_INIT;
	strbuf_add(&sb, f, (size_t)(dot - f));
	*cls = sb.buf;
	return g;
}

/* The run as a candidate for fusegroup_build(): every value a member writes but out is
 * internal. NULL with *why (a new string) when it has no description. */
static cJSON *chain_group(const struct model *m, int a, int len, int out, char **why)
{
	struct candidate c;
	memset(&c, 0, sizeof(c));
	c.kind = "elementwise-chain";
	c.nodes = xmalloc(sizeof(int) * len);
	c.nnodes = len;
	for (int i = 0; i < len; i++) {
		const struct node *n = &m->nodes[a + i];
		c.nodes[i] = a + i;
		c.before_us += n->median_us;
		if (n->sem.family == FAM_NORM || n->sem.family == FAM_SOFTMAX)
			c.kind = "reduction-epilogue";
	}
	c.removed = xmalloc(sizeof(int) * (m->nvalues ? m->nvalues : 1));
	for (int i = 0; i < m->nvalues; i++)
		if (i != out && m->values[i].writer >= 0 && in_run(m->values[i].writer, a, len))
			c.removed[c.nremoved++] = i;
	cJSON *g = fusegroup_build(m, &c, why);
	free(c.nodes);
	free(c.removed);
	return g;
}

/* "param" or "arg" for group input value vi of the run starting at a (the file's header). */
static const char *input_kind(const struct model *m, int vi, int a)
{
	const struct value *v = &m->values[vi];
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *w = &m->values[i];
		if (w->buffer == v->buffer && w->writer >= 0 && w->writer < a &&
		    m->nodes[w->writer].sem.family != FAM_OPTIMIZER)
			return "arg";
	}
	return "param";
}

/* A name for the group: f<k>_<function, non-identifier characters as '_'>. */
static char *group_name(int k, const char *func)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "f%d_", k);
	for (const char *s = func; *s && sb.len < 48; s++)
		strbuf_addf(&sb, "%c", isalnum((unsigned char)*s) ? *s : '_');
	return sb.buf;
}

static int has_family(const struct model *m, int a, int len, enum op_family f)
{
	int k = 0;
	for (int i = a; i < a + len; i++)
		k += m->nodes[i].sem.family == f;
	return k;
}

/* Whether the run is the rotary embedding of q and k (the file's header): per result a mul,
 * rotate_half's neg and cat, a mul and an add, twice, and nothing else. */
static int rotary_run(const struct model *m, int a, int len)
{
	static const char *want[] = {"mul", "neg", "cat", "mul", "add"};
	if (len != 10)
		return 0;
	for (int i = 0; i < len; i++)
		if (strcmp(op_of(&m->nodes[a + i]), want[i % 5]))
			return 0;
	return 1;
}

static cJSON *function_json(const struct model *m, int a, int len, int nruns, int k)
{
	const struct node *n0 = &m->nodes[a];
	char *mod = funcgroup_module(n0->model_site.file);
	const char *func = n0->model_site.func;
	if (!mod)
		return NULL;
	int dot_ok = 1;
	for (const char *s = func; *s; s++)
		dot_ok &= isalnum((unsigned char)*s) || *s == '_' || *s == '.';
	if (!dot_ok) { /* "<lambda>", "f.<locals>.g": not reachable by name */
		free(mod);
		return NULL;
	}
	cJSON *g = NULL;
	char *act_cls = NULL;
	const char *form = "fused";
	const char *base = strrchr(func, '.') ? strrchr(func, '.') + 1 : func;
	if (!strcmp(base, "eager_attention_forward") && !strchr(func, '.')) {
		if (!has_family(m, a, len, FAM_SOFTMAX) || has_family(m, a, len, FAM_GEMM) < 2) {
			free(mod);
			return NULL;
		}
		form = "sdpa";
	} else if (!strcmp(func, "apply_rotary_pos_emb")) {
		if (!rotary_run(m, a, len)) {
			free(mod);
			return NULL;
		}
		form = "rotary";
	} else if (strchr(func, '.') && (g = gated_group(m, a, len, &act_cls))) {
		form = "gated";
	} else {
		const char *w = NULL;
		int out = run_output(m, a, len, &w);
		if (out < 0) {
			free(mod);
			return NULL;
		}
		g = rms_group(m, a, len, out);
		if (!g) {
			char *why = NULL;
			g = chain_group(m, a, len, out, &why);
			free(why);
		}
		if (!g) {
			free(mod);
			return NULL;
		}
	}
	if (g) {
		char *nm = group_name(k, func);
		cJSON_DeleteItemFromObjectCaseSensitive(g, "name");
		cJSON_AddStringToObject(g, "name", nm);
		free(nm);
		if (!cJSON_GetObjectItemCaseSensitive(g, "time_before_us")) {
			double t = 0;
			for (int i = a; i < a + len; i++)
				t += m->nodes[i].median_us;
			cJSON_AddNumberToObject(g, "time_before_us",
			                        (double)(long long)(t * 1000 + 0.5) / 1000);
		}
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "form", form);
	cJSON_AddStringToObject(o, "file", n0->model_site.file);
	cJSON_AddNumberToObject(o, "line", n0->model_site.line);
	cJSON_AddStringToObject(o, "func", func);
	cJSON_AddNumberToObject(o, "invocations", nruns);
	cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
	for (int i = a; i < a + len; i++)
		cJSON_AddItemToArray(nodes, cJSON_CreateNumber(i));
	cJSON *b = cJSON_AddObjectToObject(o, "binding");
	cJSON_AddStringToObject(b, "module", mod);
	cJSON_AddStringToObject(b, "qualname", func);
	if (act_cls) /* the gated form: the class its act_fn must be */
		cJSON_AddStringToObject(b, "act_class", act_cls);
	cJSON *bi = cJSON_AddArrayToObject(b, "inputs");
	cJSON *bo = cJSON_AddArrayToObject(b, "outputs");
	if (g) {
		const cJSON *x;
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(g, "inputs"))
		{
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, "value");
			const cJSON *nm = cJSON_GetObjectItemCaseSensitive(x, "name");
			const cJSON *dt = cJSON_GetObjectItemCaseSensitive(x, "dtype");
			const cJSON *ne = cJSON_GetObjectItemCaseSensitive(x, "numel");
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "name",
			                        cJSON_IsString(nm) ? nm->valuestring : "");
			const char *kd = cJSON_IsNumber(v) ? input_kind(m, v->valueint, a) : "arg";
			if (act_cls) /* the gated form: computed by gate_proj and up_proj */
				kd = cJSON_GetArraySize(bi) ? "up" : "gate";
			cJSON_AddStringToObject(e, "kind", kd);
			cJSON_AddStringToObject(e, "dtype",
			                        cJSON_IsString(dt) ? dt->valuestring : "");
			if (cJSON_IsNumber(ne))
				cJSON_AddNumberToObject(e, "numel", ne->valuedouble);
			cJSON_AddItemToArray(bi, e);
		}
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(g, "outputs"))
		{
			const cJSON *nm = cJSON_GetObjectItemCaseSensitive(x, "name");
			const cJSON *dt = cJSON_GetObjectItemCaseSensitive(x, "dtype");
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "name",
			                        cJSON_IsString(nm) ? nm->valuestring : "");
			cJSON_AddStringToObject(e, "dtype",
			                        cJSON_IsString(dt) ? dt->valuestring : "");
			cJSON_AddItemToArray(bo, e);
		}
		cJSON_AddItemToObject(o, "group", g);
	} else {
		cJSON_AddNullToObject(o, "group");
	}
	free(act_cls);
	free(mod);
	return o;
}

/* Whether n is a forward kernel whose model line is the program's own (torch's functional
 * calls whose frames were cut show as the user's line: softmax, dropout inside a library). */
static int user_forward(const struct node *n)
{
	return !n->autograd && !n->sem.backward && !n->model_derived && !lib_forward(n);
}

static int is_eager_attention(const struct node *n)
{
	return !strcmp(n->model_site.func, "eager_attention_forward");
}

static int is_rotary(const struct node *n)
{
	return !strcmp(n->model_site.func, "apply_rotary_pos_emb");
}

/* x is a kernel of rotate_half from the same file as the rotary function n */
static int in_rotate_half(const struct node *n, const struct node *x)
{
	return is_rotary(n) && lib_forward(x) && !strcmp(x->model_site.func, "rotate_half") &&
	       !strcmp(x->model_site.file, n->model_site.file);
}

/* The run of the function of node a from a: its consecutive kernels; for eager attention also
 * the user-line kernels between two of them. */
static int run_len(const struct model *m, int a)
{
	const struct node *n = &m->nodes[a];
	int len = 1, end = 1;
	while (a + len < m->nnodes) {
		const struct node *x = &m->nodes[a + len];
		const struct node *y = a + len + 1 < m->nnodes ? &m->nodes[a + len + 1] : NULL;
		if (lib_forward(x) && same_func(n, x))
			end = ++len;
		else if ((is_eager_attention(n) && user_forward(x)) || in_rotate_half(n, x))
			len++;
		else if (lib_forward(x) && is_act(x) && y && lib_forward(y) && same_func(n, y))
			len++; /* an activation module's one kernel between two of its caller's */
		else
			break;
	}
	return end;
}

struct run {
	int a, len, nruns; /* nruns: a function's runs (its first run's entry) */
};

static const struct model *sort_model; /* qsort's context (the analyzer is single-threaded) */

/* By function (file, name), then start. */
static int cmp_run(const void *x, const void *y)
{
	const struct run *p = x, *q = y;
	const struct node *a = &sort_model->nodes[p->a], *b = &sort_model->nodes[q->a];
	int c = strcmp(a->model_site.file, b->model_site.file);
	if (!c)
		c = strcmp(a->model_site.func, b->model_site.func);
	return c ? c : p->a - q->a;
}

static int cmp_first(const void *x, const void *y)
{
	return ((const struct run *)x)->a - ((const struct run *)y)->a;
}

cJSON *funcgroups_json(const struct model *m)
{
	cJSON *arr = cJSON_CreateArray();
	int nn = m->nnodes, nr = 0;
	struct run *runs = xmalloc(sizeof(*runs) * (nn ? nn : 1));
	for (int a = 0; a < nn;) {
		if (!lib_forward(&m->nodes[a])) {
			a++;
			continue;
		}
		int len = run_len(m, a);
		runs[nr++] = (struct run){a, len, 0};
		a += len;
	}
	sort_model = m;
	qsort(runs, nr, sizeof(*runs), cmp_run);
	/* per function, in the order of its first run: that run, when all its runs are alike */
	struct run *first = xmalloc(sizeof(*first) * (nr ? nr : 1));
	int nf = 0;
	for (int i = 0; i < nr;) {
		const struct lineref *l = &m->nodes[runs[i].a].model_site;
		int j = i + 1, ok = 1;
		while (j < nr && !strcmp(m->nodes[runs[j].a].model_site.file, l->file) &&
		       !strcmp(m->nodes[runs[j].a].model_site.func, l->func)) {
			ok &= runs[j].len == runs[i].len &&
			      alike(m, runs[i].a, runs[j].a, runs[i].len);
			j++;
		}
		if (ok && runs[i].len >= 2) {
			first[nf] = runs[i];
			first[nf++].nruns = j - i;
		}
		i = j;
	}
	qsort(first, nf, sizeof(*first), cmp_first);
	int k = 0;
	for (int i = 0; i < nf; i++) {
		cJSON *o = function_json(m, first[i].a, first[i].len, first[i].nruns, k);
		if (o) {
			cJSON_AddItemToArray(arr, o);
			k++;
		}
	}
	free(first);
	free(runs);
	return arr;
}
