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
 * the data flow: among the values it reads, the latest forward writer (not autograd) with a
 * model line gives it; else the latest backward writer already attributed; the line is then
 * marked derived. A backward kernel reading nothing written in the step (the first ones of a
 * step that starts inside the backward pass) keeps its own line. own_site keeps the line of
 * the node's own frames (the pattern key uses it, so every occurrence folds alike).
 */
#include "analyzer/model.h"
#include "lib/hmap.h"
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

/* The node's attribution from the forward writers of what it reads (see the header). */
static void derive(struct model *m, struct node *n)
{
	int fwd = -1, bwd = -1;
	for (int k = 0; k < n->nreads; k++) {
		int v = n->reads[k];
		if (v < 0 || v >= m->nvalues)
			continue;
		int w = m->values[v].writer;
		if (w < 0 || w >= m->nnodes || w == n->id)
			continue;
		const struct node *wn = &m->nodes[w];
		if (!wn->autograd && wn->model_site.file && w > fwd)
			fwd = w;
		if (wn->autograd && wn->model_derived && w > bwd)
			bwd = w;
	}
	int from = fwd >= 0 ? fwd : bwd;
	if (from < 0)
		return;
	line_copy(&n->model_site, &m->nodes[from].model_site);
	n->model_derived = 1;
}

struct lines_sites {
	struct hmap byid; /* trace site id -> index in recs */
	struct site_rec *recs;
	long nrecs, arecs;
};

struct lines_sites *lines_sites_new(void)
{
	struct lines_sites *ls = xcalloc(1, sizeof(*ls));
	hmap_init(&ls->byid);
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

struct trace_consumer lines_consumer(struct lines_sites *ls)
{
	return (struct trace_consumer){site_record, ls, TRACE_BIT(TRACE_SITE)};
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
	for (int i = 0; i < m->nnodes; i++)
		if (m->nodes[i].autograd)
			derive(m, &m->nodes[i]);
	return 0;
}
