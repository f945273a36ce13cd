/*
 * lines.c - the three lines a finding names: the model's own line, the torch op it went
 * through, and the user's line in their script.
 *
 * A node's site in the trace is a list of Python frames, innermost first, each with file,
 * line, func and "user" (the user's own files). The graph builder keeps only the innermost
 * user frame, so the trace is read a second time here: the site records (id -> frames) and,
 * for each node, the site id of its captured op (the launch, memcpy or memset record whose
 * seq is the node's). From the frames (lines_pick()):
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
		if (!torch && !have_model) {
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

int lines_resolve(struct model *m, const char *path)
{
	if (!m->nnodes)
		return 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return error("cannot read '%s' again for the source lines", path);
	struct hmap byseq, sites;
	hmap_init(&byseq);
	hmap_init(&sites);
	for (int i = 0; i < m->nnodes; i++)
		hmap_put(&byseq, m->nodes[i].seq, (uint64_t)i);
	long *site_of = xmalloc(sizeof(long) * m->nnodes);
	for (int i = 0; i < m->nnodes; i++)
		site_of[i] = -1;
	struct site_rec *recs = NULL;
	long nrecs = 0, arecs = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		int is_site = !strncmp(line, "{\"t\":\"site\"", 11);
		if (!is_site && !strstr(line, "\"site\""))
			continue;
		cJSON *o = cJSON_ParseWithLength(line, (size_t)len);
		if (!o)
			continue; /* the first pass reported a cut line */
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "t");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
		const cJSON *seq = cJSON_GetObjectItemCaseSensitive(o, "seq");
		const cJSON *site = cJSON_GetObjectItemCaseSensitive(o, "site");
		if (cJSON_IsString(t) && !strcmp(t->valuestring, "site") && cJSON_IsNumber(id)) {
			if (arecs == nrecs) {
				arecs = arecs ? arecs * 2 : 64;
				recs = xrealloc(recs, sizeof(*recs) * arecs);
			}
			struct site_rec *r = &recs[nrecs];
			memset(r, 0, sizeof(*r));
			lines_pick(cJSON_GetObjectItemCaseSensitive(o, "frames"), &r->model,
			           &r->user, &r->op);
			hmap_put(&sites, (uint64_t)(int64_t)id->valuedouble, (uint64_t)nrecs);
			nrecs++;
		} else if (cJSON_IsNumber(seq) && cJSON_IsNumber(site) && seq->valuedouble >= 0) {
			uint64_t ni;
			if (hmap_get(&byseq, (uint64_t)seq->valuedouble, &ni))
				site_of[ni] = (long)site->valuedouble;
		}
		cJSON_Delete(o);
	}
	free(line);
	fclose(f);
	for (int i = 0; i < m->nnodes; i++) {
		struct node *n = &m->nodes[i];
		uint64_t ri;
		if (site_of[i] >= 0 && hmap_get(&sites, (uint64_t)site_of[i], &ri)) {
			const struct site_rec *r = &recs[ri];
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
	for (long i = 0; i < nrecs; i++) {
		lineref_free(&recs[i].model);
		lineref_free(&recs[i].user);
		free(recs[i].op);
	}
	free(recs);
	free(site_of);
	hmap_release(&byseq);
	hmap_release(&sites);
	return 0;
}
