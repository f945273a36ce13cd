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
 * find_period() hands the launch sequence to the period finder (period.c), whose steps may
 * differ a little in length, with setup and warm-up left out; without a period the whole run
 * is one step (builder_finish()). add_step()
 * keeps steps non-empty, ordered and disjoint (nvtx_step_accept()).
 */
#include "analyzer/builder.h"
#include "analyzer/period.h"
#include "lib/stats.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
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

/*
 * Ranges that frameworks and libraries open around their own work, never a user's step: XLA's
 * compiler passes and thunks (JAX), Triton's and PyTorch's compile phases. Their texts repeat
 * and can hold launches (XLA autotunes inside its pass pipeline), so they get no key.
 */
static int framework_range(const char *text)
{
	static const char *const prefixes[] = {"Xla",      "Thunk:",        "TritonCompile",
	                                       "Inductor", "torch.compile", "CompiledFunction"};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(text, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

int nvtx_rule_key(struct nvtx_rule *r, const char *text)
{
	if (!text || framework_range(text))
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
	b->steps[b->nsteps++] = (struct step){s, e, -1, 0, INT64_MAX};
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
	if (key < 0 || e - s < NVTX_STEP_MIN_OPS)
		return; /* a range around one kernel or none (XLA's thunks, compile passes) */
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
 * Steps without NVTX: the ops held are handed to the period finder (period.c) as one key per
 * op (the kernel's name id; a copy or set by its kind), which returns the steps as op ranges
 * that may differ a little in length (lazy optimizer state in step 0, another GEMM), with the
 * prelude (setup, warm-up, compilation, autotuning) and epilogue left out of every step, and
 * how sure it is. Each found step becomes a step; while the trace still streams (more than
 * UNLOCKED_CAP ops before any step), the steady period continues uniformly from the last
 * step's end. Without a period the whole run is one step ("whole").
 */
/*
 * The phase of the steps: the finder knows the order of the ops, not the host's time. A step
 * begins after the host waited (a sync on the loss, data loading), so all boundaries are moved
 * by the one shift in (-period/2, period/2) that puts the largest median host gap (time between
 * consecutive launches, over the boundaries) at them; a boundary that cuts a step's work in two
 * costs its pattern an occurrence. Returns the shift (0 when none gains); the steps stay inside [0,
 * n).
 */
static long boundary_shift(struct builder *b, const struct period_result *r, long n)
{
	long P = (long)r->period, lo = -(P / 2), hi = P / 2;
	long first = (long)r->steps[0].start, last = (long)r->steps[r->nsteps - 1].end;
	if (lo < -first)
		lo = -first;
	if (hi > n - last)
		hi = n - last;
	long best = 0;
	double best_gap = -1;
	double *g = xmalloc(sizeof(double) * r->nsteps);
	for (long d = lo; d <= hi; d++) {
		size_t ng = 0;
		for (size_t k = 0; k < r->nsteps; k++) {
			long i = (long)r->steps[k].start + d;
			if (i <= 0 || i >= n)
				continue;
			const struct rec *o = DEQ_AT(b->ops, b->ops.base + i),
			                 *q = DEQ_AT(b->ops, b->ops.base + i - 1);
			g[ng++] = o->ts > q->ts ? (double)(o->ts - q->ts) : 0;
		}
		/* the median boundary's gap: step 0's warm-up stalls must not pull every boundary
		 */
		double med = ng ? stats_median(g, ng) : 0;
		if (med > best_gap || (med == best_gap && labs(d) < labs(best))) {
			best_gap = med;
			best = d;
		}
	}
	free(g);
	return best;
}

void find_period(struct builder *b, int at_end)
{
	long n = b->ops.n, base = b->ops.base;
	b->how = "whole";
	b->period = -1;
	if (n < 4)
		return;
	uint32_t *x = xmalloc(sizeof(uint32_t) * (size_t)n);
	for (long i = 0; i < n; i++) {
		struct rec *o = DEQ_AT(b->ops, base + i);
		/* a copy's key tells its direction: device or host on each side */
		x[i] = o->kind == NK_KERNEL ? (uint32_t)o->fn + 16u
		                            : (uint32_t)o->kind * 4u + (o->src_alloc >= 0) * 2u +
		                                  (o->dst_alloc >= 0);
	}
	struct period_result r;
	period_find(x, (size_t)n, &r);
	free(x);
	if (!strcmp(r.method, "periodic") && r.nsteps >= 2) {
		long d = boundary_shift(b, &r, n);
		for (size_t k = 0; k < r.nsteps; k++)
			add_step(b, base + (long)r.steps[k].start + d,
			         base + (long)r.steps[k].end + d);
		b->period = (long)r.period;
		b->phase = base + (long)r.steps[0].start + d;
		b->next_boundary =
		    at_end ? LONG_MAX / 2 : base + (long)r.steps[r.nsteps - 1].end + d;
		b->how = "periodic";
		b->steps_confidence = r.confidence;
		snprintf(b->steps_reason, sizeof(b->steps_reason), "%s", r.reason);
		b->prelude_ops = (long)(r.prelude.end - r.prelude.start);
		b->epilogue_ops = (long)(r.epilogue.end - r.epilogue.start);
	} else {
		b->steps_confidence = r.confidence;
		snprintf(b->steps_reason, sizeof(b->steps_reason), "%s", r.reason);
	}
	period_result_free(&r);
}

void periodic_extend(struct builder *b)
{
	while (b->period > 0 && b->next_boundary + b->period <= b->next_gi) {
		add_step(b, b->next_boundary, b->next_boundary + b->period);
		b->next_boundary += b->period;
	}
}
