/*
 * steps.c - the graph builder's step finder: cuts the op stream (global indices gi) into steps
 * (builder.h has the stages and the shared struct builder).
 *
 * How it works: the NVTX-step rule (steps.h, shared with the job view) interns range texts as
 * keys with their digit runs made '#' (nvtx_rule_key(): "step 3" and "step 14" are one key) and
 * tallies each closed range (nvtx_rule_closed(): count and lowest nesting depth). The builder
 * keeps the closed ranges (range_closed()) until the rule's step key is final (the outermost
 * repeated key: lowest depth, then most seen; final at depth 0 at its second range, deeper at
 * its third); then lock_key() makes the kept ranges of that key steps and every later one too.
 * Without such ranges, after UNLOCKED_CAP ops or at the end, the best key so far is taken, else
 * find_period() looks for the period of the kernel-name sequence and periodic_extend() cuts
 * steps at each period; without one the whole run is one step (builder_finish()). add_step()
 * keeps steps non-empty, ordered and disjoint (nvtx_step_accept()).
 */
#include "analyzer/builder.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------- the NVTX-step rule (steps.h) ---------- */

#define KEY_TEXT_MAX 65536 /* as parse.c's text_dup(): longer texts are cut, "..." appended */

void nvtx_rule_init(struct nvtx_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->key = -1;
}

void nvtx_rule_release(struct nvtx_rule *r)
{
	for (int i = 0; i < r->nkeys; i++)
		free(r->text[i]);
	free(r->text);
	free(r->count);
	free(r->depth);
	nvtx_rule_init(r);
}

int nvtx_rule_key(struct nvtx_rule *r, const char *text)
{
	if (!text)
		return -1;
	size_t n = strlen(text);
	int cut = n > KEY_TEXT_MAX;
	if (cut) {
		n = KEY_TEXT_MAX;
		while (n && ((unsigned char)text[n] & 0xC0) == 0x80)
			n--;
	}
	/* digits runs become '#': "step 3" and "step 14" are one key; control characters '?' */
	struct strbuf sb = STRBUF_INIT;
	int blank = 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];
		if (isdigit(c)) {
			strbuf_adds(&sb, "#");
			while (i + 1 < n && isdigit((unsigned char)text[i + 1]))
				i++;
		} else {
			char x = c < 0x20 || c == 0x7f ? '?' : (char)c;
			strbuf_add(&sb, &x, 1);
		}
		blank &= c == ' ';
	}
	if (cut)
		strbuf_adds(&sb, "...");
	/* a range without text names nothing (NCCL pushes such ranges around its calls, on the
	 * backward thread of a DDP job): never a step */
	if (blank && !cut) {
		strbuf_release(&sb);
		return -1;
	}
	for (int i = 0; i < r->nkeys; i++)
		if (!strcmp(r->text[i], sb.buf)) {
			strbuf_release(&sb);
			return i;
		}
	if (r->nkeys >= NVTX_MAX_KEYS) {
		strbuf_release(&sb);
		return -1;
	}
	r->text = xrealloc(r->text, sizeof(char *) * (r->nkeys + 1));
	r->count = xrealloc(r->count, sizeof(long) * (r->nkeys + 1));
	r->depth = xrealloc(r->depth, sizeof(int) * (r->nkeys + 1));
	r->text[r->nkeys] = sb.buf;
	r->count[r->nkeys] = 0;
	r->depth[r->nkeys] = 1 << 20;
	return r->nkeys++;
}

int nvtx_rule_best(const struct nvtx_rule *r)
{
	if (r->key >= 0)
		return r->key;
	int best = -1;
	for (int k = 0; k < r->nkeys; k++) {
		if (r->count[k] < 2)
			continue;
		if (best < 0 || r->depth[k] < r->depth[best] ||
		    (r->depth[k] == r->depth[best] && r->count[k] > r->count[best]))
			best = k;
	}
	return best;
}

int nvtx_rule_closed(struct nvtx_rule *r, int key, int depth)
{
	if (r->key >= 0 || key < 0 || key >= r->nkeys)
		return r->key;
	r->count[key]++;
	if (depth < r->depth[key])
		r->depth[key] = depth;
	int best = nvtx_rule_best(r);
	if (best >= 0 && (r->depth[best] == 0 || r->count[best] >= 3))
		r->key = best;
	return r->key;
}

const char *nvtx_rule_text(const struct nvtx_rule *r, int key)
{
	return key >= 0 && key < r->nkeys ? r->text[key] : NULL;
}

int nvtx_step_accept(long *last_end, long s, long e)
{
	if (e <= s || s < *last_end)
		return 0;
	*last_end = e;
	return 1;
}

/* ---------- steps ---------- */

void add_step(struct builder *b, long s, long e)
{
	if (!nvtx_step_accept(&b->last_step_end, s, e))
		return;
	ALLOC_GROW(b->steps, b->nsteps, b->asteps);
	b->steps[b->nsteps++] = (struct step){s, e, -1, 0};
}

void lock_key(struct builder *b, int key)
{
	b->locked_key = key;
	b->how = "nvtx";
	for (long i = 0; i < b->nranges; i++)
		if (b->ranges[i].key == key)
			add_step(b, b->ranges[i].b, b->ranges[i].e);
	free(b->ranges);
	b->ranges = NULL;
	b->nranges = b->aranges = 0;
}

void range_closed(struct builder *b, int key, int depth, long s, long e)
{
	if (key < 0)
		return;
	if (b->locked_key >= 0) {
		if (key == b->locked_key)
			add_step(b, s, e);
		return;
	}
	if (b->period > 0)
		return;
	int best = nvtx_rule_closed(&b->nvtx, key, depth);
	ALLOC_GROW(b->ranges, b->nranges, b->aranges);
	b->ranges[b->nranges++] = (struct range){key, depth, s, e};
	if (best >= 0)
		lock_key(b, best);
}

/*
 * The period of the kernel-name sequence of the ops held, found from the gaps between
 * repeated occurrences of the rarest names that repeat, scored by the share of positions i
 * with name[i] == name[i + p]; the smallest period that repeats at least 3 times and scores
 * at least 0.8 wins; without one the run is one step ("whole"). The phase is the offset whose
 * boundaries have the largest CPU gaps between launches (steps are usually separated by data
 * loading, logging, a sync).
 */
void find_period(struct builder *b)
{
	long n = b->ops.n, base = b->ops.base;
	b->how = "whole";
	b->period = -1;
	if (n >= 4) {
		int *x = xmalloc(sizeof(int) * n);
		for (long i = 0; i < n; i++) {
			struct rec *o = DEQ_AT(b->ops, base + i);
			x[i] = o->kind == NK_KERNEL ? o->fn : -2 - o->kind;
		}
		struct hmap cnt, lastpos, gaps;
		hmap_init(&cnt);
		hmap_init(&lastpos);
		hmap_init(&gaps);
		for (long i = 0; i < n; i++) {
			uint64_t c = 0;
			hmap_get(&cnt, (uint64_t)(int64_t)x[i], &c);
			hmap_put(&cnt, (uint64_t)(int64_t)x[i], c + 1);
		}
		long minc = n + 1;
		for (size_t it = 0;;) {
			uint64_t k, c;
			if (!hmap_next(&cnt, &it, &k, &c))
				break;
			if (c >= 2 && (long)c < minc)
				minc = (long)c;
		}
		/* gaps of every name that occurs at most 2 * minc times */
		for (long i = 0; i < n; i++) {
			uint64_t c, lp;
			hmap_get(&cnt, (uint64_t)(int64_t)x[i], &c);
			if ((long)c > 2 * minc || c < 2)
				continue;
			if (hmap_get(&lastpos, (uint64_t)(int64_t)x[i], &lp)) {
				uint64_t g = i - lp, gc = 0;
				hmap_get(&gaps, g, &gc);
				hmap_put(&gaps, g, gc + 1);
			}
			hmap_put(&lastpos, (uint64_t)(int64_t)x[i], i);
		}
		long bestp = -1;
		for (size_t it = 0;;) {
			uint64_t p, gc;
			if (!hmap_next(&gaps, &it, &p, &gc))
				break;
			if (p < 1 || (long)p > n / 3 || (bestp > 0 && (long)p >= bestp))
				continue;
			long same = 0;
			for (long i = 0; i + (long)p < n; i++)
				same += x[i] == x[i + p];
			if ((double)same >= 0.8 * (double)(n - p))
				bestp = (long)p;
		}
		if (bestp > 0) {
			double *gap = xcalloc(bestp, sizeof(double));
			for (long i = 1; i < n; i++) {
				struct rec *o = DEQ_AT(b->ops, base + i),
				           *q = DEQ_AT(b->ops, base + i - 1);
				gap[i % bestp] += (double)(o->ts - q->ts);
			}
			long ph = 0;
			for (long r = 1; r < bestp; r++)
				if (gap[r] > gap[ph])
					ph = r;
			free(gap);
			b->period = bestp;
			b->phase = base + ph;
			b->next_boundary = b->phase;
			b->how = "periodic";
		}
		hmap_release(&cnt);
		hmap_release(&lastpos);
		hmap_release(&gaps);
		free(x);
	}
}

void periodic_extend(struct builder *b)
{
	while (b->period > 0 && b->next_boundary + b->period <= b->next_gi) {
		add_step(b, b->next_boundary, b->next_boundary + b->period);
		b->next_boundary += b->period;
	}
}
