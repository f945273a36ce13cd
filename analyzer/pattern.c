/*
 * pattern.c - findings as patterns. On a real model the same candidate appears once per layer
 * (and a step holds every layer): the GPT-2 sample's tanh-GELU chain twelve times. A finding is
 * therefore a pattern: the candidates whose key is equal are folded into one entry, with the
 * occurrences (one step's), and totals summed over them.
 *
 * The key of a candidate (pattern_key()): its kind; for each member in step order its op
 * (semantics' op, else the kernel's short name), dtype and, only where some member has no line
 * of its own, size class (numel, else bytes read and written, rounded up to a power of two);
 * the distinct own model lines of the members (file:line of the innermost frame outside torch,
 * before any backward attribution: the same line for every layer, since a layer runs the same
 * code); and for beyond-fusion findings the evidence's "what". The per-layer index never
 * enters, so layers fold, also layers of other widths that run the same lines (ResNet's four
 * stages: one fix at that line, one shape-generic kernel); a different dtype or another line
 * does not. Without lines, the size class keeps unrelated chains of the same ops apart.
 *
 * patterns_fold() groups m->cands by key (in candidate order), picks each pattern's
 * representative (the occurrence with the most bytes saved, then the first), sums bytes and
 * times, and ranks the patterns by total bytes saved per step, then total time saved, then the
 * representative's id.
 */
#include "analyzer/model.h"
#include "lib/hmap.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

static uint64_t pow2_up(uint64_t x)
{
	uint64_t p = 1;
	while (p < x && p < (UINT64_C(1) << 62))
		p <<= 1;
	return x ? p : 0;
}

char *pattern_key(const struct model *m, const struct candidate *c)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, c->kind ? c->kind : "?");
	strbuf_adds(&sb, "|");
	int lines = c->nnodes > 0;
	for (int i = 0; i < c->nnodes && lines; i++)
		lines = m->nodes[c->nodes[i]].own_site.file != NULL;
	for (int i = 0; i < c->nnodes; i++) {
		const struct node *n = &m->nodes[c->nodes[i]];
		const char *op = n->sem.op && strcmp(n->sem.op, "unknown") ? n->sem.op : n->name;
		uint64_t size =
		    n->numel > 0 ? (uint64_t)n->numel : n->bytes_read + n->bytes_written;
		strbuf_addf(&sb, "%s%s:%s", i ? "," : "", op ? op : "?", dtype_name(n->sem.dtype));
		if (!lines)
			strbuf_addf(&sb, ":%llu", (unsigned long long)pow2_up(size));
	}
	strbuf_adds(&sb, "|");
	int first = 1;
	/* each (file, line) once, in member order: a hash of it -> the first member with it
	 * (distinct keys of one hash chained by rehashing); comparing each member with every
	 * earlier one took minutes for a 200k-member finding with a line each */
	struct hmap seen;
	hmap_init(&seen);
	for (int i = 0; i < c->nnodes; i++) {
		const struct node *n = &m->nodes[c->nodes[i]];
		const char *file = n->own_site.file ? n->own_site.file : n->source;
		int line = n->own_site.file ? n->own_site.line : -1;
		uint64_t h = 1469598103934665603ULL ^ (uint64_t)(int64_t)line, v;
		for (const char *q = file ? file : ""; *q; q++)
			h = (h ^ (unsigned char)*q) * 0x100000001b3ULL;
		int dup = 0;
		while (!dup && hmap_get(&seen, h, &v)) {
			const struct node *p = &m->nodes[c->nodes[v]];
			const char *pf = p->own_site.file ? p->own_site.file : p->source;
			int pl = p->own_site.file ? p->own_site.line : -1;
			dup = pl == line && ((!pf && !file) || (pf && file && !strcmp(pf, file)));
			h = h * 0x9e3779b97f4a7c15ULL + 1;
		}
		if (dup)
			continue;
		hmap_put(&seen, h, (uint64_t)i);
		strbuf_addf(&sb, "%s%s", first ? "" : ",", file ? file : "-");
		if (line >= 0)
			strbuf_addf(&sb, ":%d", line);
		first = 0;
	}
	hmap_release(&seen);
	if (c->evidence) {
		const cJSON *what = cJSON_GetObjectItemCaseSensitive(c->evidence, "what");
		if (cJSON_IsString(what))
			strbuf_addf(&sb, "|%s", what->valuestring);
	}
	return sb.buf;
}

static const struct model *sort_m;

static int cmp_occ(const void *a, const void *b)
{
	const struct candidate *p = &sort_m->cands[*(const int *)a];
	const struct candidate *q = &sort_m->cands[*(const int *)b];
	int x = p->nnodes ? p->nodes[0] : -1, y = q->nnodes ? q->nodes[0] : -1;
	return x != y ? x - y : p->id - q->id;
}

static int cmp_pat(const void *a, const void *b)
{
	const struct pattern *p = a, *q = b;
	if (p->bytes_saved != q->bytes_saved)
		return p->bytes_saved > q->bytes_saved ? -1 : 1;
	if (p->saved_us != q->saved_us)
		return p->saved_us > q->saved_us ? -1 : 1;
	return sort_m->cands[p->rep].id - sort_m->cands[q->rep].id;
}

void patterns_fold(struct model *m)
{
	char **keys = xcalloc(m->ncands ? m->ncands : 1, sizeof(char *));
	m->pats = xcalloc(m->ncands ? m->ncands : 1, sizeof(struct pattern));
	m->npats = 0;
	/* key hash -> the first pattern with it; chains through pnext (a hash map instead of a
	 * scan of every pattern per candidate: 200k candidates took minutes) */
	struct hmap byhash;
	hmap_init(&byhash);
	int *pnext = xmalloc(sizeof(int) * (size_t)(m->ncands ? m->ncands : 1));
	for (int i = 0; i < m->ncands; i++) {
		keys[i] = pattern_key(m, &m->cands[i]);
		uint64_t h = 1469598103934665603ull, first;
		for (const char *k = keys[i]; *k; k++)
			h = (h ^ (unsigned char)*k) * 1099511628211ull;
		int p = m->npats;
		if (hmap_get(&byhash, h, &first))
			for (int q = (int)first; q >= 0; q = pnext[q])
				if (!strcmp(m->pats[q].key, keys[i])) {
					p = q;
					break;
				}
		if (p == m->npats) {
			pnext[p] = hmap_get(&byhash, h, &first) ? (int)first : -1;
			hmap_put(&byhash, h, (uint64_t)p);
		}
		struct pattern *pt = &m->pats[p];
		if (p == m->npats) {
			m->npats++;
			pt->key = keys[i];
			keys[i] = NULL;
			pt->rep = i;
		}
		pt->cands = xrealloc(pt->cands, sizeof(int) * (pt->ncands + 1));
		pt->cands[pt->ncands++] = i;
		const struct candidate *c = &m->cands[i];
		pt->bytes_saved += c->bytes_saved;
		pt->before_us += c->before_us;
		pt->after_us += c->after_us;
		pt->saved_us += c->saved_us;
		if (c->bytes_saved > m->cands[pt->rep].bytes_saved)
			pt->rep = i;
	}
	for (int i = 0; i < m->ncands; i++)
		free(keys[i]);
	free(keys);
	free(pnext);
	hmap_release(&byhash);
	sort_m = m;
	for (int p = 0; p < m->npats; p++)
		qsort(m->pats[p].cands, m->pats[p].ncands, sizeof(int), cmp_occ);
	qsort(m->pats, m->npats, sizeof(*m->pats), cmp_pat);
	sort_m = NULL;
}
