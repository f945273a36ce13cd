/*
 * beyond.c - helpers for the analyses beyond fusion: a candidate of a new kind appended to the
 * model (ids continue after the fusion candidates; nothing is claimed, so fusion is untouched)
 * lookups of who reads and writes a buffer inside the step graph, and the verdict whether a
 * finding can be acted on from the user's source (not when autograd launched all of it).
 * Linear scans: a step graph has hundreds of values, and each analysis asks a few questions
 * per node.
 */
#include "analyzer/beyond.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

struct candidate *beyond_add(struct model *m, const char *kind, const int *nodes, int nnodes)
{
	m->cands = xrealloc(m->cands, sizeof(struct candidate) * (m->ncands + 1));
	struct candidate *c = &m->cands[m->ncands];
	memset(c, 0, sizeof(*c));
	c->id = m->ncands++;
	c->kind = kind;
	c->nodes = xmalloc(sizeof(int) * (nnodes ? nnodes : 1));
	if (nnodes)
		memcpy(c->nodes, nodes, sizeof(int) * nnodes);
	c->nnodes = nnodes;
	c->evidence = cJSON_CreateObject();
	return c;
}

int beyond_node_writes(const struct model *m, int n, long buffer)
{
	for (int i = 0; i < m->nvalues; i++)
		if (m->values[i].writer == n && m->values[i].buffer == buffer)
			return 1;
	return 0;
}

int beyond_node_reads(const struct model *m, int n, long buffer)
{
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		if (v->buffer != buffer)
			continue;
		for (int r = 0; r < v->nreaders; r++)
			if (v->readers[r] == n)
				return 1;
	}
	return 0;
}

int beyond_actionable(struct model *m, struct candidate *c)
{
	int inside = c->nnodes > 0;
	for (int k = 0; k < c->nnodes; k++)
		if (!m->nodes[c->nodes[k]].autograd)
			inside = 0;
	cJSON_AddBoolToObject(c->evidence, "actionable", !inside);
	if (!inside)
		return 1;
	cJSON_AddNumberToObject(c->evidence, "time_us", c->saved_us);
	cJSON_AddNumberToObject(c->evidence, "bytes", (double)c->bytes_saved);
	c->bytes_saved = 0;
	cJSON_AddStringToObject(c->evidence, "not_actionable",
	                        "inside autograd: not actionable from the source");
	c->saved_us = 0;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb,
	            "%s; inside autograd (launched by backward()): not actionable from the "
	            "source",
	            c->why ? c->why : "");
	free(c->why);
	c->why = sb.buf;
	return 0;
}

struct cJSON *beyond_ints(const int *v, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
	return a;
}
