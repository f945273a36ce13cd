/*
 * summary.c - the model as summary.json (docs/summary-format.md is the contract): made through
 * a sink (struct jsink below) that either builds one cJSON tree (summary_json()) or prints each
 * member as it is made and streams the text to the file (summary_write(), through lib/util.c's
 * atomic_open/atomic_write/atomic_commit), so a large step graph is never held as a tree and
 * its text at once; the text is cJSON_Print's of the tree, byte for byte. Also the ledger's
 * groupings (by family, by source), which are only ever needed for output, and
 * analysis_run()/model_free(), the model's lifecycle.
 */
#include "analyzer/model.h"
#include "analyzer/funcgroup.h"
#include "analyzer/runtl.h"
#include "analyzer/timemodel.h"
#include "analyzer/trace.h"
#include "lib/hmap.h"
#include "lib/util.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static cJSON *int_array(const int *a, int n)
{
	cJSON *arr = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(a[i]));
	return arr;
}

static double r3(double x)
{
	if (!(fabs(x) < 1e15)) /* already whole, or inf/NaN: no cast of it to an integer */
		return x;
	return (double)(long long)(x * 1000.0 + (x < 0 ? -0.5 : 0.5)) / 1000.0;
}

static uint64_t str_hash(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/*
 * The first item equal to item idx among those seen so far in set (idx itself when none, and
 * then it is added): hash is idx's key's hash, eq(a, b, ctx) compares two items' keys.
 * Distinct keys of one hash are chained by rehashing. This keeps the groupings of the summary
 * (sources of a finding, sources of the ledger, a finding's most frequent line) linear: each
 * compared every node with every earlier one, minutes for a 200k-kernel fan-out with lines.
 */
static int first_equal(struct hmap *set, uint64_t hash, int idx,
                       int (*eq)(int a, int b, const void *ctx), const void *ctx)
{
	uint64_t v;
	while (hmap_get(set, hash, &v)) {
		if (eq((int)v, idx, ctx))
			return (int)v;
		hash = hash * 0x9e3779b97f4a7c15ULL + 1;
	}
	hmap_put(set, hash, (uint64_t)idx);
	return idx;
}

static int same_source(int a, int b, const void *ctx)
{
	const struct model *m = ctx;
	return !strcmp(m->nodes[a].source, m->nodes[b].source);
}

static void add_sources(cJSON *o, const struct model *m, const int *nodes, int n)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "sources");
	struct hmap seen;
	hmap_init(&seen);
	for (int i = 0; i < n; i++) {
		const char *s = m->nodes[nodes[i]].source;
		if (!s)
			continue;
		if (first_equal(&seen, str_hash(s, 1469598103934665603ULL), nodes[i], same_source,
		                m) == nodes[i])
			cJSON_AddItemToArray(arr, cJSON_CreateString(s));
	}
	hmap_release(&seen);
}

/* {"file", "line", "func"[, "derived"]} or null */
static void add_line(cJSON *o, const char *name, const struct lineref *l, int derived)
{
	if (!l->file) {
		cJSON_AddNullToObject(o, name);
		return;
	}
	cJSON *s = cJSON_AddObjectToObject(o, name);
	cJSON_AddStringToObject(s, "file", l->file);
	cJSON_AddNumberToObject(s, "line", l->line);
	if (l->func)
		cJSON_AddStringToObject(s, "func", l->func);
	else
		cJSON_AddNullToObject(s, "func");
	if (derived >= 0)
		cJSON_AddBoolToObject(s, "derived", derived);
}

static cJSON *node_json(const struct model *m, const struct node *n)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", n->id);
	cJSON_AddStringToObject(o, "kind", node_kind_name(n->kind));
	cJSON_AddStringToObject(o, "name", n->name ? n->name : "");
	cJSON_AddStringToObject(o, "full_name", n->full_name ? n->full_name : "");
	cJSON_AddStringToObject(o, "family", family_name(n->sem.family));
	cJSON_AddStringToObject(o, "op", n->sem.op ? n->sem.op : "unknown");
	cJSON_AddStringToObject(o, "dtype", dtype_name(n->sem.dtype));
	cJSON_AddStringToObject(o, "rule", n->sem.rule ? n->sem.rule : "none");
	cJSON_AddBoolToObject(o, "backward", n->sem.backward);
	cJSON_AddNumberToObject(o, "count", (double)n->count);
	cJSON_AddNumberToObject(o, "median_us", r3(n->median_us));
	cJSON_AddNumberToObject(o, "min_us", r3(n->min_us));
	cJSON_AddNumberToObject(o, "max_us", r3(n->max_us));
	cJSON_AddNumberToObject(o, "stream", n->stream);
	cJSON_AddItemToObject(o, "grid", int_array(n->grid, 3));
	cJSON_AddItemToObject(o, "block", int_array(n->block, 3));
	if (n->numel > 0)
		cJSON_AddNumberToObject(o, "numel", (double)n->numel);
	else
		cJSON_AddNullToObject(o, "numel");
	cJSON_AddNumberToObject(o, "bytes_read", (double)n->bytes_read);
	cJSON_AddNumberToObject(o, "bytes_written", (double)n->bytes_written);
	cJSON_AddNumberToObject(o, "flops", n->flops);
	cJSON_AddStringToObject(o, "flops_how", n->flops_how ? n->flops_how : "unknown");
	cJSON_AddNumberToObject(o, "achieved_gbs", r3(n->achieved_gbs));
	cJSON_AddNumberToObject(o, "intensity", r3(n->intensity));
	cJSON_AddStringToObject(o, "bound", n->bound ? n->bound : "memory");
	cJSON_AddNumberToObject(o, "roofline_us", r3(n->roofline_us));
	cJSON *src = cJSON_AddArrayToObject(o, "sources");
	if (n->source)
		cJSON_AddItemToArray(src, cJSON_CreateString(n->source));
	if (n->site_file) {
		cJSON *s = cJSON_AddObjectToObject(o, "site");
		cJSON_AddStringToObject(s, "file", n->site_file);
		cJSON_AddNumberToObject(s, "line", n->site_line);
		if (n->site_func)
			cJSON_AddStringToObject(s, "func", n->site_func);
		else
			cJSON_AddNullToObject(s, "func");
		cJSON_AddNullToObject(s, "text");
	} else {
		cJSON_AddNullToObject(o, "site");
	}
	add_line(o, "model_site", &n->model_site, n->model_derived);
	add_line(o, "user_site", &n->user_site, -1);
	if (n->torch_op)
		cJSON_AddStringToObject(o, "torch_op", n->torch_op);
	else
		cJSON_AddNullToObject(o, "torch_op");
	return o;
}

static int same_line(const struct lineref *a, const struct lineref *b)
{
	return a->line == b->line &&
	       ((!a->file && !b->file) || (a->file && b->file && !strcmp(a->file, b->file)));
}

struct line_ctx {
	const struct model *m;
	int user;
};

static const struct lineref *line_of(const struct line_ctx *lc, int node)
{
	return lc->user ? &lc->m->nodes[node].user_site : &lc->m->nodes[node].model_site;
}

static int same_line_of(int a, int b, const void *ctx)
{
	return same_line(line_of(ctx, a), line_of(ctx, b));
}

/* The member whose line (user or model) is the most frequent among c's members, -1 none; of
 * members with equally frequent lines, the first. */
static int common_member(const struct model *m, const struct candidate *c, int user)
{
	struct line_ctx lc = {m, user};
	struct hmap first, count; /* a line's hash chain; its first member -> members with it */
	hmap_init(&first);
	hmap_init(&count);
	int *rep = xmalloc(sizeof(int) * (size_t)(c->nnodes ? c->nnodes : 1));
	for (int i = 0; i < c->nnodes; i++) {
		const struct lineref *la = line_of(&lc, c->nodes[i]);
		if (!la->file) {
			rep[i] = -1;
			continue;
		}
		uint64_t h = str_hash(la->file, 1469598103934665603ULL ^ (uint64_t)la->line), n = 0;
		rep[i] = first_equal(&first, h, c->nodes[i], same_line_of, &lc);
		hmap_get(&count, (uint64_t)rep[i], &n);
		hmap_put(&count, (uint64_t)rep[i], n + 1);
	}
	int best = -1;
	uint64_t bestn = 0;
	for (int i = 0; i < c->nnodes; i++) {
		uint64_t n = 0;
		if (rep[i] >= 0 && hmap_get(&count, (uint64_t)rep[i], &n) && n > bestn)
			best = c->nodes[i], bestn = n;
	}
	free(rep);
	hmap_release(&first);
	hmap_release(&count);
	return best;
}

/* A copy of x for the output tree, or (by_ref: the text sink, which prints the item and
 * deletes it at once) a reference to it, which cJSON_Delete leaves alone: the invariant
 * finding's evidence of a 200k-kernel fan-out is 200k entries. */
static cJSON *json_copy(const cJSON *x, int by_ref)
{
	if (by_ref && cJSON_IsObject(x))
		return cJSON_CreateObjectReference(x->child);
	if (by_ref && cJSON_IsArray(x))
		return cJSON_CreateArrayReference(x->child);
	return cJSON_Duplicate(x, 1);
}

static cJSON *cand_json(const struct model *m, const struct candidate *c, int by_ref)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", c->id);
	cJSON_AddStringToObject(o, "kind", c->kind);
	cJSON_AddItemToObject(o, "nodes", int_array(c->nodes, c->nnodes));
	cJSON_AddItemToObject(o, "values_removed", int_array(c->removed, c->nremoved));
	cJSON_AddItemToObject(o, "values_kept", int_array(c->kept, c->nkept));
	cJSON_AddNumberToObject(o, "bytes_saved_per_step", (double)c->bytes_saved);
	cJSON_AddNumberToObject(o, "time_before_us", r3(c->before_us));
	cJSON_AddNumberToObject(o, "time_after_us", r3(c->after_us));
	cJSON_AddNumberToObject(o, "time_saved_us_per_step", r3(c->saved_us));
	add_sources(o, m, c->nodes, c->nnodes);
	if (c->library_form)
		cJSON_AddStringToObject(o, "library_form", c->library_form);
	else
		cJSON_AddNullToObject(o, "library_form");
	cJSON_AddItemToObject(o, "group",
	                      c->group ? json_copy(c->group, by_ref) : cJSON_CreateNull());
	if (c->group_why)
		cJSON_AddStringToObject(o, "group_why", c->group_why);
	else
		cJSON_AddNullToObject(o, "group_why");
	cJSON_AddStringToObject(o, "why", c->why ? c->why : "");
	if (c->evidence)
		cJSON_AddItemToObject(o, "evidence", json_copy(c->evidence, by_ref));
	return o;
}

static void set_num(cJSON *o, const char *name, double v)
{
	cJSON_ReplaceItemInObjectCaseSensitive(o, name, cJSON_CreateNumber(v));
}

/*
 * One pattern: its representative occurrence's fields (nodes, values, group: what fusion/
 * generates from) with the totals over the occurrences, and the pattern's own fields.
 */
static cJSON *pattern_json(const struct model *m, const struct pattern *p, int by_ref)
{
	const struct candidate *rep = &m->cands[p->rep];
	cJSON *o = cand_json(m, rep, by_ref);
	set_num(o, "bytes_saved_per_step", (double)p->bytes_saved);
	set_num(o, "time_before_us", r3(p->before_us));
	set_num(o, "time_after_us", r3(p->after_us));
	set_num(o, "time_saved_us_per_step", r3(p->saved_us));
	if (p->ncands > 1) {
		char b1[32];
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "%s; the same pattern %d times a step (%s a step in all)",
		            rep->why ? rep->why : "", p->ncands,
		            fmt_bytes((double)p->bytes_saved, b1));
		cJSON_ReplaceItemInObjectCaseSensitive(o, "why", cJSON_CreateString(sb.buf));
		strbuf_release(&sb);
	}
	cJSON_AddStringToObject(o, "key", p->key);
	cJSON_AddNumberToObject(o, "count_per_step", p->ncands);
	int pi = (int)(p - m->pats);
	cJSON_AddNumberToObject(o, "number", pi + 1);
	if (m->tm && pi < m->tm->npats) {
		const struct timemodel *tm = m->tm;
		cJSON_AddNumberToObject(o, "kernel_saved_us", r3(tm->kernel_saved[pi]));
		cJSON_AddStringToObject(o, "time_kind",
		                        tm->host[pi]                   ? "host-blocked"
		                        : !strcmp(rep->kind, "memory") ? "none"
		                                                       : "gpu");
		cJSON_AddBoolToObject(o, "proven", tm->proven[pi]);
		cJSON_AddBoolToObject(o, "in_headline", tm->counted[pi]);
	}
	/* the line: the first occurrence whose members' common line is not backward()'s own */
	int mm = common_member(m, rep, 0), um = common_member(m, rep, 1);
	for (int k = 0;
	     k < p->ncands && mm >= 0 && m->nodes[mm].autograd && !m->nodes[mm].model_derived;
	     k++) {
		int x = common_member(m, &m->cands[p->cands[k]], 0);
		if (x >= 0 && (!m->nodes[x].autograd || m->nodes[x].model_derived))
			mm = x;
	}
	static const struct lineref none;
	add_line(o, "model_site", mm >= 0 ? &m->nodes[mm].model_site : &none,
	         mm >= 0 ? m->nodes[mm].model_derived : 0);
	add_line(o, "user_site", um >= 0 ? &m->nodes[um].user_site : &none, -1);
	int om = mm >= 0 ? mm : rep->nnodes ? rep->nodes[0] : -1;
	if (om >= 0 && m->nodes[om].torch_op)
		cJSON_AddStringToObject(o, "torch_op", m->nodes[om].torch_op);
	else
		cJSON_AddNullToObject(o, "torch_op");
	cJSON *occ = cJSON_AddArrayToObject(o, "occurrences");
	for (int k = 0; k < p->ncands; k++) {
		const struct candidate *c = &m->cands[p->cands[k]];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "id", c->id);
		cJSON_AddItemToObject(e, "nodes", int_array(c->nodes, c->nnodes));
		cJSON_AddNumberToObject(e, "bytes_saved_per_step", (double)c->bytes_saved);
		cJSON_AddNumberToObject(e, "time_saved_us_per_step", r3(c->saved_us));
		cJSON_AddItemToArray(occ, e);
	}
	return o;
}

/*
 * The summary is made through a sink, so that summary_write() never holds the whole tree: a
 * tree sink (out NULL) builds one cJSON tree; a text sink prints each member and each
 * element of the long arrays (nodes, edges, ledger values, candidates, timeline events) as
 * soon as it is made and frees it, giving exactly cJSON_Print's text of the whole tree (a
 * member printed alone gets one tab after each of its newlines for each open container: cJSON
 * escapes newlines inside strings, so every newline in its text is its own formatting).
 * Before, the tree of a 200k-kernel step held 12 KB a kernel (2.4 GB) besides the text.
 */
#define JS_DEPTH 8
struct jsink {
	struct strbuf *out;     /* text sink; NULL: tree sink */
	struct atomic_file *af; /* text sink: where out is flushed once past 1 MiB */
	cJSON *root;            /* tree sink: the tree, once the outermost object is closed */
	cJSON *open[JS_DEPTH];
	int nmembers[JS_DEPTH], is_array[JS_DEPTH];
	int depth;
};

static void js_member(struct jsink *s, const char *key)
{
	int i = s->depth - 1;
	if (s->is_array[i]) {
		if (s->nmembers[i])
			strbuf_adds(s->out, ", ");
	} else {
		strbuf_adds(s->out, s->nmembers[i] ? ",\n" : "");
		for (int k = 0; k < s->depth; k++)
			strbuf_add(s->out, "\t", 1);
		strbuf_addf(s->out, "\"%s\":\t", key); /* keys are this file's constants */
	}
	s->nmembers[i]++;
}

/* Adds item (taken over) as member key of the open object, or as the next element of the open
 * array (key unused). */
static void js_put(struct jsink *s, const char *key, cJSON *item)
{
	if (!s->out) {
		cJSON *top = s->open[s->depth - 1];
		if (s->is_array[s->depth - 1])
			cJSON_AddItemToArray(top, item);
		else
			cJSON_AddItemToObject(top, key, item);
		return;
	}
	js_member(s, key);
	char *text = cJSON_Print(item);
	if (!text)
		die("out of memory");
	for (const char *t = text; *t; t++) {
		strbuf_add(s->out, t, 1);
		if (*t == '\n')
			for (int k = 0; k < s->depth; k++)
				strbuf_add(s->out, "\t", 1);
	}
	free(text);
	cJSON_Delete(item);
	if (s->af && s->out->len > (1u << 20)) {
		atomic_write(s->af, s->out->buf, s->out->len);
		strbuf_reset(s->out);
	}
}

/* Opens an object (array when is_array) as member key of the open object, or the outermost. */
static void js_open(struct jsink *s, const char *key, int is_array)
{
	if (s->depth == JS_DEPTH)
		BUG("summary nested too deep");
	if (!s->out) {
		cJSON *o = is_array ? cJSON_CreateArray() : cJSON_CreateObject();
		if (s->depth)
			js_put(s, key, o);
		s->open[s->depth] = o;
	} else {
		if (s->depth)
			js_member(s, key);
		strbuf_adds(s->out, is_array ? "[" : "{\n");
	}
	s->nmembers[s->depth] = 0;
	s->is_array[s->depth] = is_array;
	s->depth++;
}

static void js_close(struct jsink *s)
{
	int i = --s->depth;
	if (!s->out) {
		if (!i)
			s->root = s->open[0];
		return;
	}
	if (s->is_array[i]) {
		strbuf_adds(s->out, "]");
		return;
	}
	if (s->nmembers[i])
		strbuf_adds(s->out, "\n");
	for (int k = 0; k < i; k++)
		strbuf_add(s->out, "\t", 1);
	strbuf_adds(s->out, "}");
}

static void add_ledger(struct jsink *sk, const struct model *m)
{
	js_open(sk, "ledger", 0);
	cJSON *ps = cJSON_CreateObject();
	uint64_t tot = m->per_step.bytes_read + m->per_step.bytes_written;
	cJSON_AddNumberToObject(ps, "bytes_read", (double)m->per_step.bytes_read);
	cJSON_AddNumberToObject(ps, "bytes_written", (double)m->per_step.bytes_written);
	cJSON_AddNumberToObject(ps, "bytes_total", (double)tot);
	cJSON_AddNumberToObject(ps, "roundtrip_bytes", (double)m->per_step.roundtrip_bytes);
	cJSON_AddNumberToObject(ps, "roundtrip_share",
	                        tot ? r3((double)m->per_step.roundtrip_bytes / (double)tot) : 0);
	cJSON_AddNumberToObject(ps, "kernel_us", r3(m->per_step.kernel_us));
	cJSON_AddNumberToObject(ps, "copy_us", r3(m->per_step.copy_us));
	js_put(sk, "per_step", ps);

	cJSON *bf = cJSON_CreateArray();
	for (int f = 0; f < FAM__COUNT; f++) {
		double us = 0, bytes = 0;
		int count = 0;
		for (int i = 0; i < m->nnodes; i++)
			if ((int)m->nodes[i].sem.family == f) {
				us += m->nodes[i].median_us;
				bytes +=
				    (double)(m->nodes[i].bytes_read + m->nodes[i].bytes_written);
				count++;
			}
		if (!count)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "family", family_name((enum op_family)f));
		cJSON_AddNumberToObject(o, "us", r3(us));
		cJSON_AddNumberToObject(o, "bytes", bytes);
		cJSON_AddNumberToObject(o, "count", count);
		cJSON_AddItemToArray(bf, o);
	}

	js_put(sk, "by_family", bf);

	/* one group a source, in the order of their first nodes: each node's first node of its
	 * source, then each group's nodes chained through next[] */
	cJSON *bs = cJSON_CreateArray();
	int *next = xmalloc(sizeof(int) * (size_t)(m->nnodes ? m->nnodes : 1));
	int *last = xmalloc(sizeof(int) * (size_t)(m->nnodes ? m->nnodes : 1));
	struct hmap seen;
	hmap_init(&seen);
	for (int i = 0; i < m->nnodes; i++) {
		next[i] = -1;
		last[i] = i;
		const char *s = m->nodes[i].source;
		if (!s)
			continue;
		int f = first_equal(&seen, str_hash(s, 1469598103934665603ULL), i, same_source, m);
		if (f != i) {
			next[last[f]] = i;
			last[f] = i;
		}
	}
	for (int i = 0; i < m->nnodes; i++) {
		const char *s = m->nodes[i].source;
		if (!s ||
		    first_equal(&seen, str_hash(s, 1469598103934665603ULL), i, same_source, m) != i)
			continue;
		double us = 0, bytes = 0;
		cJSON *o = cJSON_CreateObject(), *nl = cJSON_CreateArray();
		for (int j = i; j >= 0; j = next[j]) {
			us += m->nodes[j].median_us;
			bytes += (double)(m->nodes[j].bytes_read + m->nodes[j].bytes_written);
			cJSON_AddItemToArray(nl, cJSON_CreateNumber(j));
		}
		cJSON_AddStringToObject(o, "source", s);
		cJSON_AddNumberToObject(o, "us", r3(us));
		cJSON_AddNumberToObject(o, "bytes", bytes);
		cJSON_AddItemToObject(o, "nodes", nl);
		cJSON_AddItemToArray(bs, o);
	}
	hmap_release(&seen);
	free(next);
	free(last);

	js_put(sk, "by_source", bs);

	js_open(sk, "values", 1);
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", v->id);
		cJSON_AddNumberToObject(o, "buffer", (double)v->buffer);
		cJSON_AddNumberToObject(o, "size", (double)v->size);
		cJSON_AddNumberToObject(o, "writer", v->writer);
		cJSON_AddItemToObject(o, "readers", int_array(v->readers, v->nreaders));
		cJSON_AddNumberToObject(o, "bytes_written", (double)v->bytes_written);
		cJSON_AddNumberToObject(o, "bytes_read", (double)v->bytes_read);
		cJSON_AddBoolToObject(o, "intermediate", v->intermediate);
		cJSON_AddBoolToObject(o, "live_after_step", v->live_after_step);
		cJSON_AddBoolToObject(o, "dead_in_step", v->dead_in_step);
		cJSON_AddStringToObject(o, "how", edge_how_name(v->how));
		if (v->writer < 0 && v->written_ago >= 0)
			cJSON_AddNumberToObject(o, "written_ops_before_step",
			                        (double)v->written_ago);
		const char *src = v->writer >= 0 ? m->nodes[v->writer].source : NULL;
		if (src)
			cJSON_AddStringToObject(o, "source", src);
		else
			cJSON_AddNullToObject(o, "source");
		js_put(sk, NULL, o);
	}
	js_close(sk);
	js_close(sk);
}

static void summary_emit(struct jsink *s, const struct model *m)
{
	js_open(s, NULL, 0);
	js_put(s, "format", cJSON_CreateNumber(1));
	js_put(s, "tool", cJSON_CreateString("aicprof " AICPROF_VERSION));
	cJSON *tr = cJSON_CreateArray();
	for (int i = 0; i < m->ntraces; i++) {
		const struct trace_info *t = &m->traces[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", t->path);
		cJSON_AddNumberToObject(o, "pid", (double)t->pid);
		if (t->rank >= 0)
			cJSON_AddNumberToObject(o, "rank", (double)t->rank);
		else
			cJSON_AddNullToObject(o, "rank");
		cJSON_AddStringToObject(o, "program", t->program ? t->program : "");
		if (t->cwd)
			cJSON_AddStringToObject(o, "cwd", t->cwd);
		else
			cJSON_AddNullToObject(o, "cwd");
		cJSON_AddBoolToObject(o, "truncated", t->truncated);
		if (t->end_reason[0])
			cJSON_AddStringToObject(o, "end", t->end_reason);
		else
			cJSON_AddNullToObject(o, "end");
		if (t->end_reason[0] && t->end_dropped >= 0)
			cJSON_AddNumberToObject(o, "dropped_records", (double)t->end_dropped);
		else
			cJSON_AddNullToObject(o, "dropped_records");
		cJSON_AddNumberToObject(o, "capture_ranges", (double)t->capture_ranges);
		cJSON_AddNumberToObject(o, "records", (double)t->records);
		cJSON_AddNumberToObject(o, "kernels", (double)t->kernels);
		cJSON_AddNumberToObject(o, "steps", t->steps);
		cJSON_AddNumberToObject(o, "warmup", t->warmup);
		cJSON_AddNumberToObject(o, "step_median_us", r3(t->step_median_us));
		cJSON *w = cJSON_AddArrayToObject(o, "warnings");
		for (int k = 0; k < t->nwarnings; k++)
			cJSON_AddItemToArray(w, cJSON_CreateString(t->warnings[k]));
		cJSON_AddItemToArray(tr, o);
	}
	js_put(s, "traces", tr);
	js_put(s, "program",
	       cJSON_CreateString(m->ntraces && m->traces[0].program ? m->traces[0].program : ""));
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", m->dev.name ? m->dev.name : "unknown");
	cJSON_AddStringToObject(d, "cc", m->dev.cc);
	cJSON_AddNumberToObject(d, "sm_count", m->dev.sm_count);
	cJSON_AddNumberToObject(d, "peak_bw_gbs", r3(m->dev.peak_bw_gbs));
	cJSON *pk = cJSON_AddObjectToObject(d, "peak_tflops");
	cJSON_AddNumberToObject(pk, "fp32", m->dev.tflops_fp32);
	cJSON_AddNumberToObject(pk, "bf16", m->dev.tflops_bf16);
	cJSON_AddNumberToObject(pk, "fp16", m->dev.tflops_fp16);
	cJSON_AddNumberToObject(pk, "tf32", m->dev.tflops_tf32);
	js_put(s, "device", d);

	cJSON *st = cJSON_CreateObject();
	cJSON_AddNumberToObject(st, "count", m->nsteps);
	cJSON_AddNumberToObject(st, "warmup", m->warmup);
	cJSON_AddNumberToObject(st, "period", m->period);
	cJSON_AddStringToObject(st, "how", m->steps_how ? m->steps_how : "whole");
	if (m->step_key)
		cJSON_AddStringToObject(st, "range", m->step_key);
	else
		cJSON_AddNullToObject(st, "range");
	cJSON_AddNumberToObject(st, "median_us", r3(m->step_median_us));
	cJSON_AddNumberToObject(st, "p10_us", r3(m->step_p10_us));
	cJSON_AddNumberToObject(st, "p90_us", r3(m->step_p90_us));
	cJSON_AddNumberToObject(st, "outside_ops", (double)m->outside_ops);
	cJSON_AddNumberToObject(st, "confidence", r3(m->steps_confidence));
	cJSON_AddStringToObject(st, "reason", m->steps_reason);
	if (m->steps_how && !strcmp(m->steps_how, "periodic")) {
		cJSON_AddNumberToObject(st, "prelude_ops", (double)m->prelude_ops);
		cJSON_AddNumberToObject(st, "epilogue_ops", (double)m->epilogue_ops);
	}
	cJSON *tu = cJSON_AddArrayToObject(st, "times_us");
	for (int i = 0; i < m->nsteps; i++)
		cJSON_AddItemToArray(tu, cJSON_CreateNumber(r3(m->step_us[i])));
	js_put(s, "steps", st);

	js_open(s, "nodes", 1);
	for (int i = 0; i < m->nnodes; i++)
		js_put(s, NULL, node_json(m, &m->nodes[i]));
	js_close(s);
	js_open(s, "edges", 1);
	for (int i = 0; i < m->nedges; i++) {
		const struct edge *e = &m->edges[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "from", e->from);
		cJSON_AddNumberToObject(o, "to", e->to);
		if (e->value >= 0)
			cJSON_AddNumberToObject(o, "value", e->value);
		else
			cJSON_AddNullToObject(o, "value");
		cJSON_AddNumberToObject(o, "bytes", (double)e->bytes);
		cJSON_AddStringToObject(o, "how", edge_how_name(e->how));
		js_put(s, NULL, o);
	}
	js_close(s);
	add_ledger(s, m);

	/* candidates in the time model's order, numbered (timemodel_renumber()'s rule): the
	 * keys from a first pass, each object built again when it is written, so that a
	 * streamed summary never holds every candidate at once */
	js_open(s, "candidates", 1);
	int nc = m->pats ? m->npats : m->ncands;
	struct tm_rank *rk = xcalloc(nc ? (size_t)nc : 1, sizeof(*rk));
	for (int i = 0; i < nc; i++) {
		cJSON *c =
		    m->pats ? pattern_json(m, &m->pats[i], 1) : cand_json(m, &m->cands[i], 1);
		timemodel_rank_key(c, i, &rk[i]);
		cJSON_Delete(c);
	}
	qsort(rk, (size_t)nc, sizeof(*rk), timemodel_rank_cmp);
	for (int r = 0; r < nc; r++) {
		int i = rk[r].at;
		cJSON *c = m->pats ? pattern_json(m, &m->pats[i], s->out != NULL)
		                   : cand_json(m, &m->cands[i], s->out != NULL);
		timemodel_set_number(c, r + 1);
		js_put(s, NULL, c);
	}
	free(rk);
	js_close(s);
	cJSON *fg = funcgroups_json(m); /* function groups (funcgroup.c); absent when none */
	if (cJSON_GetArraySize(fg))
		js_put(s, "functions", fg);
	else
		cJSON_Delete(fg);
	cJSON *rej = cJSON_CreateArray();
	for (int i = 0; i < m->nrejs; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "nodes", int_array(m->rejs[i].nodes, m->rejs[i].nnodes));
		cJSON_AddStringToObject(o, "kind", m->rejs[i].kind);
		cJSON_AddStringToObject(o, "reason", m->rejs[i].reason);
		cJSON_AddItemToArray(rej, o);
	}
	js_put(s, "rejected", rej);
	js_put(s, "memory", memplan_json(m));
	if (m->tm) /* absent without a timeline (no kernel ran in the step) */
		js_put(s, "time_model", timemodel_json(m));
	js_open(s, "timeline", 0);
	js_put(s, "step", cJSON_CreateNumber(m->tl_step));
	js_put(s, "t0_ns", cJSON_CreateNumber((double)m->tl_t0_ns));
	js_open(s, "events", 1);
	for (int i = 0; i < m->ntl; i++) {
		const struct tl_event *e = &m->tl[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "node", e->node);
		cJSON_AddStringToObject(o, "kind", node_kind_name(m->nodes[e->node].kind));
		cJSON_AddNumberToObject(o, "stream", e->stream);
		cJSON_AddNumberToObject(o, "start_us", r3(e->start_us));
		cJSON_AddNumberToObject(o, "dur_us", r3(e->dur_us));
		cJSON_AddStringToObject(o, "name", m->nodes[e->node].name);
		js_put(s, NULL, o);
	}
	js_close(s);
	/* every step as [start_us, dur_us] from t0, and the whole run (runtl.h): the Perfetto
	 * export's */
	cJSON *tst = cJSON_CreateArray();
	for (int i = 0; m->step_t0_ns && i < m->nsteps; i++) {
		if (m->step_t0_ns[i] == INT64_MAX)
			continue;
		cJSON *o = cJSON_CreateArray();
		cJSON_AddItemToArray(
		    o, cJSON_CreateNumber(r3((double)(m->step_t0_ns[i] - m->tl_t0_ns) / 1e3)));
		cJSON_AddItemToArray(o, cJSON_CreateNumber(r3(m->step_us[i])));
		cJSON_AddItemToArray(tst, o);
	}
	js_put(s, "steps", tst);
	js_put(s, "run", runtl_json(m->run, m->tl_t0_ns));
	js_close(s);
	js_close(s);
}

cJSON *summary_json(const struct model *m)
{
	struct jsink s = {0};
	summary_emit(&s, m);
	return s.root;
}

int summary_write(const struct model *m, const char *path)
{
	struct atomic_file af;
	if (atomic_open(&af, path) < 0)
		return atomic_commit(&af);
	struct strbuf text = STRBUF_INIT;
	struct jsink s = {.out = &text, .af = &af};
	summary_emit(&s, m);
	strbuf_add(&text, "\n", 1); /* the file ends in a newline */
	atomic_write(&af, text.buf, text.len);
	strbuf_release(&text);
	return atomic_commit(&af);
}

void model_free(struct model *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->ntraces; i++) {
		free(m->traces[i].path);
		free(m->traces[i].program);
		free(m->traces[i].cwd);
		for (int k = 0; k < m->traces[i].nwarnings; k++)
			free(m->traces[i].warnings[k]);
		free(m->traces[i].warnings);
	}
	free(m->traces);
	free(m->dev.name);
	free(m->step_key);
	free(m->step_us);
	free(m->step_t0_ns);
	runtl_free(m->run);
	for (int i = 0; i < m->nnodes; i++) {
		free(m->nodes[i].name);
		free(m->nodes[i].full_name);
		free(m->nodes[i].source);
		free(m->nodes[i].site_file);
		free(m->nodes[i].site_func);
		lineref_free(&m->nodes[i].model_site);
		lineref_free(&m->nodes[i].user_site);
		lineref_free(&m->nodes[i].own_site);
		free(m->nodes[i].torch_op);
	}
	free(m->nodes);
	free(m->edges);
	for (int i = 0; i < m->nvalues; i++)
		free(m->values[i].readers);
	free(m->values);
	for (int i = 0; i < m->ncands; i++) {
		free(m->cands[i].nodes);
		free(m->cands[i].removed);
		free(m->cands[i].kept);
		free(m->cands[i].why);
		cJSON_Delete(m->cands[i].group);
		free(m->cands[i].group_why);
		cJSON_Delete(m->cands[i].evidence);
	}
	free(m->cands);
	for (int i = 0; i < m->npats; i++) {
		free(m->pats[i].key);
		free(m->pats[i].cands);
	}
	free(m->pats);
	for (int i = 0; i < m->nrejs; i++) {
		free(m->rejs[i].nodes);
		free(m->rejs[i].reason);
	}
	free(m->rejs);
	free(m->tl);
	memplan_free(m->mem);
	timemodel_free(m->tm);
	free(m);
}

static int feed_builder(void *ctx, const struct trace_record *r)
{
	return builder_record(ctx, r->obj, r->raw, r->rawlen, r->line);
}

/*
 * One trace into m (first) or into a scratch model whose graph is dropped (the others), in one
 * pass of the reader that feeds the graph builder, *ml, the memory plan's log, and *ls, the
 * site records for the source lines (both new, owned by the caller even on failure).
 */
static int analyse_one(const char *path, struct trace_info *ti, struct model *m, struct memlog **ml,
                       struct lines_sites **ls)
{
	/* messages name standard input as the reader's do */
	struct builder *b = builder_new(strcmp(path, "-") ? ti->path : "<stdin>", ti, &m->dev);
	*ml = memlog_new();
	*ls = lines_sites_new();
	m->run = runtl_new();
	struct trace_consumer cons[4] = {{feed_builder, b, TRACE_ALL},
	                                 memlog_consumer(*ml),
	                                 lines_consumer(*ls),
	                                 runtl_consumer(m->run)};
	struct trace_stats st = {0};
	int r = trace_read(path, cons, 4, &st, 0);
	ti->records += st.records;
	ti->truncated |= st.truncated;
	snprintf(ti->end_reason, sizeof(ti->end_reason), "%s", st.end_reason);
	ti->end_dropped = st.end_reason[0] ? st.end_dropped : -1;
	ti->capture_ranges += st.capture_ranges;
	for (int i = 0; i < st.nwarnings; i++) {
		ti->warnings = xrealloc(ti->warnings, sizeof(char *) * (ti->nwarnings + 1));
		ti->warnings[ti->nwarnings++] = st.warnings[i];
	}
	free(st.warnings);
	if (r == 0)
		r = builder_finish(b, m);
	builder_free(b);
	return r;
}

struct model *analysis_run(char **paths, int npaths)
{
	struct model *m = xcalloc(1, sizeof(*m));
	struct memlog *ml = NULL; /* m's */
	struct lines_sites *ls = NULL;
	m->traces = xcalloc(npaths ? npaths : 1, sizeof(struct trace_info));
	m->ntraces = npaths;
	for (int i = 0; i < npaths; i++) {
		m->traces[i].path = xstrdup(paths[i]);
		m->traces[i].rank = -1;
	}
	int first = 1;
	for (int i = 0; i < npaths; i++) {
		if (first) {
			if (analyse_one(paths[i], &m->traces[i], m, &ml, &ls) < 0)
				goto fail;
			first = 0;
			continue;
		}
		struct model *s = xcalloc(1, sizeof(*s));
		struct memlog *sml;
		struct lines_sites *sls;
		int r = analyse_one(paths[i], &m->traces[i], s, &sml, &sls);
		/* the model is that of the lowest rank */
		if (r == 0 && m->traces[i].rank >= 0 &&
		    (m->traces[0].rank < 0 || m->traces[i].rank < m->traces[0].rank)) {
			struct trace_info t = m->traces[0];
			m->traces[0] = m->traces[i];
			m->traces[i] = t;
			s->traces = m->traces;
			s->ntraces = m->ntraces;
			m->traces = NULL;
			m->ntraces = 0;
			struct model *tmp = m;
			m = s;
			s = tmp;
			struct memlog *tml = ml;
			ml = sml;
			sml = tml;
			struct lines_sites *tls = ls;
			ls = sls;
			sls = tls;
		}
		model_free(s);
		memlog_free(sml);
		lines_sites_free(sls);
		if (r < 0)
			goto fail;
	}
	ledger_compute(m);
	lines_resolve(m, ls);
	lines_sites_free(ls);
	ls = NULL;
	candidates_find(m);
	deadwork_find(m);
	invariant_find(m);
	if (memplan_compute(m, ml) < 0)
		goto fail;
	memlog_free(ml);
	patterns_fold(m);
	timemodel_compute(m);
	return m;
fail:
	memlog_free(ml);
	lines_sites_free(ls);
	model_free(m);
	return NULL;
}
