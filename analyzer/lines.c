/*
 * lines.c - the three lines a finding names: the model's own line, the torch op it went
 * through, and the user's line in their script.
 *
 * A node's site in the trace is a list of Python frames, innermost first, each with file,
 * line, func and "user" (the user's own files). The graph builder keeps only the innermost
 * user frame, so the site records (id -> frames) are collected here by a consumer of the one
 * read of the trace (lines_consumer(), fed beside the builder), each reduced at once to its
 * three lines; a node names its captured op's site id (node->site_id). From the frames
 * (lines_pick()):
 *  - model_site: the innermost frame outside torch's own modules (a file under
 *    site-packages/torch/ or dist-packages/torch/): transformers' modeling_gpt2.py in
 *    GPT2MLP.forward, or the user's script when the model is theirs;
 *  - user_site: the innermost "user": true frame;
 *  - torch_op: the innermost torch frame's function (functional.py's layer_norm, Linear.forward),
 *    else the kernel's op (its semantics' op, else its family).
 *
 * Backward kernels (launched inside autograd: an inherited site, or frames through
 * torch/autograd/) carry only backward()'s line. Each is attributed, in step order, through
 * the data flow: each value it reads that a forward node (not autograd, with a model line)
 * wrote points at that writer, or, where the value's forward readers outside the writer's
 * function all sit in one other function, at the latest of those readers (a saved input:
 * rotary's sin and cos are written by the embedding module and read only by
 * apply_rotary_pos_emb, whose backward reads them again); the latest such node gives the line;
 * else the latest backward writer already attributed; the line is then marked derived. A backward
 * kernel reading nothing written in the step (the first ones of a step that starts inside the
 * backward pass) keeps its own line. own_site keeps the line of the node's own frames (the pattern
 * key uses it, so every occurrence folds alike).
 *
 * XLA's kernels: their frames end at the line that called the jitted function. The shim's
 * "xla" records (preload/xla.c) name each fusion instruction of the optimized HLO with its
 * source file, line and op_name; a kernel whose name is such an instruction's gets that line as
 * its model line (func: the record's function, from newer XLA's stack-frame tables, else the
 * op_name's last component) and the op_name as its op, its user line
 * staying the call. A name found in several modules is taken from the module that holds the
 * most of the step's kernel names.
 */
#include "analyzer/model.h"
#include "lib/hmap.h"
#include "lib/json.h"
#include "lib/trace.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lines_is_torch(const char *file)
{
	if (!file)
		return 0;
	return strstr(file, "site-packages/torch/") != NULL ||
	       strstr(file, "dist-packages/torch/") != NULL || !strncmp(file, "torch/", 6);
}

void lineref_free(struct lineref *l)
{
	free(l->file);
	free(l->func);
	l->file = l->func = NULL;
	l->line = 0;
}

static void line_set(struct lineref *l, const cJSON *f)
{
	const cJSON *file = cJSON_GetObjectItemCaseSensitive(f, "file");
	const cJSON *func = cJSON_GetObjectItemCaseSensitive(f, "func");
	const cJSON *line = cJSON_GetObjectItemCaseSensitive(f, "line");
	l->file = xstrdup(file->valuestring);
	l->func = cJSON_IsString(func) ? xstrdup(func->valuestring) : NULL;
	l->line = cJSON_IsNumber(line) && line->valuedouble >= 0 && line->valuedouble < 1e9
	              ? (int)line->valuedouble
	              : 0;
}

static void line_copy(struct lineref *to, const struct lineref *from)
{
	lineref_free(to);
	to->file = from->file ? xstrdup(from->file) : NULL;
	to->func = from->func ? xstrdup(from->func) : NULL;
	to->line = from->line;
}

/* A frame of Python's standard library (contextlib, functools): never the model's line. */
static int is_stdlib(const char *file)
{
	return (strstr(file, "/lib/python3") || strstr(file, "/lib64/python3")) &&
	       !strstr(file, "/site-packages/") && !strstr(file, "/dist-packages/");
}

void lines_pick(const cJSON *frames, struct lineref *model, struct lineref *user, char **op)
{
	const cJSON *f;
	int have_model = 0, have_user = 0;
	*op = NULL;
	cJSON_ArrayForEach(f, frames)
	{
		const cJSON *file = cJSON_GetObjectItemCaseSensitive(f, "file");
		if (!cJSON_IsString(file))
			continue;
		int torch = lines_is_torch(file->valuestring);
		if (torch && !*op && !have_model) {
			const cJSON *func = cJSON_GetObjectItemCaseSensitive(f, "func");
			if (cJSON_IsString(func))
				*op = xstrdup(func->valuestring);
		}
		if (!torch && !have_model && !is_stdlib(file->valuestring)) {
			line_set(model, f);
			have_model = 1;
		}
		if (!have_user && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "user"))) {
			line_set(user, f);
			have_user = 1;
		}
	}
}

struct site_rec {
	struct lineref model, user;
	char *op;
};

/* Two sites in one function of one file (the line may differ). */
static int same_func(const struct lineref *a, const struct lineref *b)
{
	return a->file && b->file && !strcmp(a->file, b->file) &&
	       (a->func && b->func ? !strcmp(a->func, b->func) : a->line == b->line);
}

/* Which forward node a backward kernel's read of value v points at: v's forward writer, or,
 * where v's forward readers outside the writer's function all sit in one other function, the
 * latest of them (v is that function's saved input: cos and sin are LlamaRotaryEmbedding's
 * results, read only by apply_rotary_pos_emb, whose backward reads them again). -1: none. */
static int forward_of(const struct model *m, const struct value *v, int self)
{
	int w = v->writer;
	if (w < 0 || w >= m->nnodes || w == self)
		return -1;
	const struct node *wn = &m->nodes[w];
	if (wn->autograd || !wn->model_site.file)
		return -1;
	int pick = -1;
	for (int r = 0; r < v->nreaders; r++) {
		int x = v->readers[r];
		if (x < 0 || x >= m->nnodes || x == self || x < w)
			continue;
		const struct node *xn = &m->nodes[x];
		if (xn->autograd || !xn->model_site.file ||
		    same_func(&xn->model_site, &wn->model_site))
			continue;
		if (pick >= 0 && !same_func(&xn->model_site, &m->nodes[pick].model_site))
			return w; /* read by several other functions: no one of them owns it */
		if (x > pick)
			pick = x;
	}
	return pick >= 0 ? pick : w;
}

/* The node's attribution from the forward writers of what it reads (see the header). */
static void derive(struct model *m, struct node *n)
{
	int fwd = -1, bwd = -1;
	for (int k = 0; k < n->nreads; k++) {
		int v = n->reads[k];
		if (v < 0 || v >= m->nvalues)
			continue;
		int f = forward_of(m, &m->values[v], n->id);
		if (f > fwd)
			fwd = f;
		int w = m->values[v].writer;
		if (w < 0 || w >= m->nnodes || w == n->id)
			continue;
		const struct node *wn = &m->nodes[w];
		if (wn->autograd && wn->model_derived && w > bwd)
			bwd = w;
	}
	int from = fwd >= 0 ? fwd : bwd;
	if (from < 0)
		return;
	line_copy(&n->model_site, &m->nodes[from].model_site);
	n->model_derived = 1;
}

struct xla_rec {
	char *mod, *name, *op, *file, *func;
	int line;
	long next; /* the next record of the same name hash, -1 none */
};

struct lines_sites {
	struct hmap byid; /* trace site id -> index in recs */
	struct site_rec *recs;
	long nrecs, arecs;
	struct hmap xla_byname; /* fnv1a(name) -> first index in xla */
	struct xla_rec *xla;
	long nxla, axla;
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

struct lines_sites *lines_sites_new(void)
{
	struct lines_sites *ls = xcalloc(1, sizeof(*ls));
	hmap_init(&ls->byid);
	hmap_init(&ls->xla_byname);
	return ls;
}

void lines_sites_free(struct lines_sites *ls)
{
	if (!ls)
		return;
	for (long i = 0; i < ls->nrecs; i++) {
		lineref_free(&ls->recs[i].model);
		lineref_free(&ls->recs[i].user);
		free(ls->recs[i].op);
	}
	free(ls->recs);
	hmap_release(&ls->byid);
	for (long i = 0; i < ls->nxla; i++) {
		free(ls->xla[i].mod);
		free(ls->xla[i].name);
		free(ls->xla[i].op);
		free(ls->xla[i].file);
		free(ls->xla[i].func);
	}
	free(ls->xla);
	hmap_release(&ls->xla_byname);
	free(ls);
}

/* Strings out of the reader's arena: lines_pick() copies with xstrdup (malloc), never cJSON. */
static int site_record(void *ctx, const struct trace_record *rec)
{
	struct lines_sites *ls = ctx;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec->obj, "id");
	if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 1e9)
		return 0; /* the builder reports a bad site record */
	uint64_t key = (uint64_t)id->valuedouble, old;
	if (hmap_get(&ls->byid, key, &old))
		return 0;
	ALLOC_GROW(ls->recs, ls->nrecs, ls->arecs);
	struct site_rec *r = &ls->recs[ls->nrecs];
	memset(r, 0, sizeof(*r));
	lines_pick(cJSON_GetObjectItemCaseSensitive(rec->obj, "frames"), &r->model, &r->user,
	           &r->op);
	hmap_put(&ls->byid, key, (uint64_t)ls->nrecs);
	ls->nrecs++;
	return 0;
}

static const char *jstring(const cJSON *o, const char *k, size_t max)
{
	const char *v = jstr(o, k);
	return v && strlen(v) <= max ? v : NULL;
}

/* An "xla" record: {"t":"xla","mod","name","op","file","line","k"}; malformed ones are left
 * out (they only name lines). At most 1M are kept. */
static int xla_record(void *ctx, const struct trace_record *rec)
{
	struct lines_sites *ls = ctx;
	const char *name = jstring(rec->obj, "name", 512), *file = jstring(rec->obj, "file", 4096);
	const cJSON *line = cJSON_GetObjectItemCaseSensitive(rec->obj, "line");
	if (!name || !*name || !file || !*file || !cJSON_IsNumber(line) ||
	    !(line->valuedouble >= 1 && line->valuedouble < 1e9) || ls->nxla >= 1000000)
		return 0;
	const char *mod = jstring(rec->obj, "mod", 512), *op = jstring(rec->obj, "op", 4096);
	ALLOC_GROW(ls->xla, ls->nxla, ls->axla);
	struct xla_rec *x = &ls->xla[ls->nxla];
	x->mod = xstrdup(mod ? mod : "");
	x->name = xstrdup(name);
	x->op = xstrdup(op ? op : "");
	x->file = xstrdup(file);
	const char *func = jstring(rec->obj, "func", 512);
	x->func = func && *func ? xstrdup(func) : NULL;
	x->line = (int)line->valuedouble;
	uint64_t h = fnv1a(name), first;
	x->next = hmap_get(&ls->xla_byname, h, &first) ? (long)first : -1;
	hmap_put(&ls->xla_byname, h, (uint64_t)ls->nxla);
	ls->nxla++;
	return 0;
}

static int lines_record(void *ctx, const struct trace_record *rec)
{
	return rec->type == TRACE_XLA ? xla_record(ctx, rec) : site_record(ctx, rec);
}

struct trace_consumer lines_consumer(struct lines_sites *ls)
{
	return (struct trace_consumer){lines_record, ls,
	                               TRACE_BIT(TRACE_SITE) | TRACE_BIT(TRACE_XLA)};
}

/* The xla record named name, from module mod when it has one (NULL: the first found). */
static const struct xla_rec *xla_find(const struct lines_sites *ls, const char *name,
                                      const char *mod)
{
	uint64_t i;
	const struct xla_rec *any = NULL;
	if (!name || !hmap_get(&ls->xla_byname, fnv1a(name), &i))
		return NULL;
	for (long k = (long)i; k >= 0; k = ls->xla[k].next)
		if (!strcmp(ls->xla[k].name, name)) {
			if (!mod || !strcmp(ls->xla[k].mod, mod))
				return &ls->xla[k];
			if (!any)
				any = &ls->xla[k];
		}
	return any;
}

/* XLA kernels at their HLO instructions' lines (the header's last paragraph). */
static void xla_resolve(struct model *m, const struct lines_sites *ls)
{
	if (!ls->nxla)
		return;
	/* the module holding the most of the step's kernel names */
	const char *best = NULL;
	long best_n = 0;
	for (long k = 0; k < ls->nxla && k < 4096; k++) {
		const char *mod = ls->xla[k].mod;
		int seen = 0;
		for (long j = 0; j < k && !seen; j++)
			seen = !strcmp(ls->xla[j].mod, mod);
		if (seen)
			continue;
		long n = 0;
		for (int i = 0; i < m->nnodes; i++) {
			const struct xla_rec *x = xla_find(ls, m->nodes[i].name, mod);
			n += x && !strcmp(x->mod, mod);
		}
		if (n > best_n) {
			best_n = n;
			best = mod;
		}
	}
	for (int i = 0; i < m->nnodes; i++) {
		struct node *n = &m->nodes[i];
		const struct xla_rec *x = xla_find(ls, n->name, best);
		if (!x)
			continue;
		lineref_free(&n->model_site);
		n->model_site.file = xstrdup(x->file);
		const char *slash = strrchr(x->op, '/');
		n->model_site.func = xstrdup(x->func ? x->func : slash ? slash + 1 : x->op);
		n->model_site.line = x->line;
		line_copy(&n->own_site, &n->model_site);
		if (*x->op) {
			free(n->torch_op);
			n->torch_op = xstrdup(x->op);
		}
	}
}

int lines_resolve(struct model *m, const struct lines_sites *ls)
{
	if (!m->nnodes)
		return 0;
	for (int i = 0; i < m->nnodes; i++) {
		struct node *n = &m->nodes[i];
		uint64_t ri;
		if (ls && n->site_id >= 0 &&
		    hmap_get((struct hmap *)&ls->byid, (uint64_t)n->site_id, &ri)) {
			const struct site_rec *r = &ls->recs[ri];
			line_copy(&n->model_site, &r->model);
			line_copy(&n->own_site, &r->model);
			line_copy(&n->user_site, &r->user);
			if (r->op && !n->autograd) /* autograd's own frames name no op */
				n->torch_op = xstrdup(r->op);
		}
		if (!n->torch_op)
			n->torch_op = xstrdup(n->sem.op && strcmp(n->sem.op, "unknown")
			                          ? n->sem.op
			                          : family_name(n->sem.family));
	}
	if (ls)
		xla_resolve(m, ls);
	for (int i = 0; i < m->nnodes; i++)
		if (m->nodes[i].autograd)
			derive(m, &m->nodes[i]);
	return 0;
}
