/*
 * steps.c - the graph builder's step finder: cuts the op stream (global indices gi) into steps
 * (builder.h has the stages and the shared struct builder).
 *
 * How it works: NVTX range texts are interned as keys with their digit runs made '#'
 * (key_intern(): "step 3" and "step 14" are one key). Each closed range (range_closed()) is
 * counted per key with its lowest nesting depth and kept; once a key repeats (the outermost
 * repeated key: lowest depth, then most seen; at depth 0 at its second range, deeper at its
 * third), lock_key() makes the kept ranges of that key steps and every later one too. Without
 * such ranges, after UNLOCKED_CAP ops or at the end, find_period() looks for the period of the
 * kernel-name sequence and periodic_extend() cuts steps at each period; without one the whole
 * run is one step (builder_finish()). add_step() keeps steps ordered and disjoint.
 */
#include "analyzer/builder.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int key_intern(struct builder *b, const char *text)
{
	/* a range without text names nothing (NCCL pushes such ranges around its calls, on the
	 * backward thread of a DDP job): never a step */
	const char *t = text;
	while (t && isspace((unsigned char)*t))
		t++;
	if (!t || !*t)
		return -1;
	/* digits runs become '#': "step 3" and "step 14" are one key */
	struct strbuf sb = STRBUF_INIT;
	for (const char *p = text; *p; p++) {
		if (isdigit((unsigned char)*p)) {
			strbuf_adds(&sb, "#");
			while (isdigit((unsigned char)p[1]))
				p++;
		} else {
			strbuf_add(&sb, p, 1);
		}
	}
	if (!sb.buf)
		strbuf_adds(&sb, "");
	for (int i = 0; i < b->nkeys; i++)
		if (!strcmp(b->keys[i], sb.buf)) {
			strbuf_release(&sb);
			return i;
		}
	if (b->nkeys >= 4096) {
		strbuf_release(&sb);
		return -1;
	}
	b->keys = xrealloc(b->keys, sizeof(char *) * (b->nkeys + 1));
	b->key_count = xrealloc(b->key_count, sizeof(long) * (b->nkeys + 1));
	b->key_depth = xrealloc(b->key_depth, sizeof(int) * (b->nkeys + 1));
	b->keys[b->nkeys] = sb.buf;
	b->key_count[b->nkeys] = 0;
	b->key_depth[b->nkeys] = 1 << 20;
	return b->nkeys++;
}

/* ---------- steps ---------- */

void add_step(struct builder *b, long s, long e)
{
	if (e <= s || s < b->last_step_end)
		return;
	ALLOC_GROW(b->steps, b->nsteps, b->asteps);
	b->steps[b->nsteps++] = (struct step){s, e, -1, 0};
	b->last_step_end = e;
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

/* The outermost repeated range: lowest depth among keys seen at least twice, then most seen. */
int best_key(struct builder *b)
{
	int best = -1;
	for (int k = 0; k < b->nkeys; k++) {
		if (b->key_count[k] < 2)
			continue;
		if (best < 0 || b->key_depth[k] < b->key_depth[best] ||
		    (b->key_depth[k] == b->key_depth[best] && b->key_count[k] > b->key_count[best]))
			best = k;
	}
	return best;
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
	b->key_count[key]++;
	if (depth < b->key_depth[key])
		b->key_depth[key] = depth;
	ALLOC_GROW(b->ranges, b->nranges, b->aranges);
	b->ranges[b->nranges++] = (struct range){key, depth, s, e};
	int best = best_key(b);
	if (best >= 0 && (b->key_depth[best] == 0 || b->key_count[best] >= 3))
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
