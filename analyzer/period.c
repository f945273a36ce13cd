/*
 * period.c - the repeating unit of a launch sequence (period.h), found without NVTX.
 *
 * 1. Keys are made dense (0..K-1, by first appearance) and each key's occurrences listed
 *    (counting sort, O(n)).
 * 2. Candidate periods come from anchors: a key that occurs once a step (the loss kernel, an
 *    optimizer kernel, every kernel of a CuPy loop) has near-equal gaps between its
 *    occurrences. For each key: P = the median gap (quickselect), its regular gaps (within
 *    P/8 of P) and the longest run of them; its score is the ops its regular gaps span. The
 *    best 16 keys are kept, one per period and region (keys once a step share both; a key
 *    occurring twice a step at uneven spacing has no regular gaps and drops out by itself).
 * 3. Each candidate is verified: its template is, of 8 windows between consecutive anchors of
 *    its run, the one most others equal exactly; the run's windows (at most 32) are compared
 *    with it by a banded LCS (O(len x band)); value = score x mean similarity. The choice:
 *    among candidates with windows alike (>= 0.85, and some exactly equal if any candidate
 *    has that), of value at least a tenth of the best, the loop that runs last (a program
 *    sets up, autotunes, compiles, then loops until it exits: XLA's autotuner repeats its
 *    timing runs identically long before the steps), within two periods of it the best value,
 *    within 3 % of that the smaller period (a key once every two steps gives 2P with the same
 *    value). Then the same without exact windows, then with similarity >= 0.5; else none.
 * 4. The winner's run is extended both ways over anchors whose windows are up to 4 P long and
 *    hold at least 60 % of the template's ops (a histogram test: step 0 may hold a hundred
 *    lazy optimizer-state memsets, beyond any band); anchors closer than P/2 are skipped, up
 *    to two bad windows are bridged when a good one follows, and a window of k >= 2 steps
 *    whose ops hold 80 % of k templates (the anchor missing) is split in k.
 * 5. Phase: the step does not start at the anchor. The ops before the first anchor are
 *    aligned backward against the ops before a steady anchor (a banded X-drop extension, the
 *    band up to P/2 for step 0's lazy ops; a match +1, an op left unmatched -2); where it
 *    stops is the start of the first step, and how far it reached into the template is the
 *    anchor's offset j in the step. Every other step starts where the template's j ops
 *    before the anchor align best (exact compare first, else semi-global), and the last step
 *    ends where the template's rest, aligned forward from the last anchor, stops matching.
 *    Before the first step: the prelude; after the last: the epilogue.
 * 6. Each step's similarity to the steady step (of 8 steps, the one most others equal; exact
 *    compare, else banded LCS over the larger length, else, when the lengths differ too much
 *    or the step is too long, the histogram overlap, capped by the LCS of the first and last
 *    512 ops) gives the confidence: mean similarity x a factor for few steps
 *    (2: 0.6, 3: 0.8) x a factor for low coverage (min(1, 0.7 + covered fraction)).
 * Work: O(n) for steps 1, 2, 4 (the median by quickselect); the DPs cost len x (2 band + 1)
 * cells, band = clamp(P/8, 8, 64), identical steps take the exact-compare path, and past a
 * budget of 3e7 cells the rest falls back to exact compare and histograms: a 1M-op sequence
 * takes about 0.15 s (-O2), whatever its period.
 */
#include "analyzer/period.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

#define NEG          (-(1 << 28))
#define MAXCAND      16
#define MAXSAMPLE    32
#define GLOBAL_CELLS 4000000    /* above this a global alignment falls back to the histogram */
#define CELL_BUDGET  30000000LL /* DP cells for the steps (and as much for all candidates) */
#define PHASE_CELLS  4000000    /* the first step's alignment may use a wider band, up to this */

struct ctx {
	uint32_t *k;          /* dense keys */
	const uint32_t *orig; /* the caller's keys */
	size_t n, nkeys;
	size_t *off, *pos; /* occurrences of key x: pos[off[x] .. off[x+1]) */
	int32_t *r0, *r1;  /* DP rows */
	size_t rowcap;
	uint32_t *ba, *bb; /* reversed copies */
	size_t capa, capb;
	uint32_t *hist;   /* nkeys counters, zero between uses */
	long long cells;  /* DP cells spent (an upper bound) in this stage */
	long long budget; /* ... and allowed: then exact compare or histograms */
	int verifying;    /* step 3: at most 32 windows, heads and tails always aligned */
};

/* Dense ids in order of first appearance; direct map when the keys are small, else sorted. */
static int cmp_pair(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void densify(struct ctx *c, const uint32_t *keys, size_t n)
{
	uint32_t max = 0;
	for (size_t i = 0; i < n; i++)
		if (keys[i] > max)
			max = keys[i];
	c->k = xmalloc(sizeof(*c->k) * (n ? n : 1));
	c->nkeys = 0;
	if ((size_t)max < 4 * n + 1024) {
		uint32_t *map = xmalloc(sizeof(*map) * ((size_t)max + 1));
		memset(map, 0xff, sizeof(*map) * ((size_t)max + 1));
		for (size_t i = 0; i < n; i++) {
			if (map[keys[i]] == UINT32_MAX)
				map[keys[i]] = (uint32_t)c->nkeys++;
			c->k[i] = map[keys[i]];
		}
		free(map);
		return;
	}
	uint64_t *p = xmalloc(sizeof(*p) * n);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint64_t)keys[i] << 32 | (uint64_t)i; /* n < 2^32 assumed by the caller */
	qsort(p, n, sizeof(*p), cmp_pair);
	for (size_t i = 0; i < n; i++) {
		if (i && p[i] >> 32 != p[i - 1] >> 32)
			c->nkeys++;
		c->k[p[i] & 0xffffffffu] = (uint32_t)c->nkeys;
	}
	c->nkeys++;
	free(p);
}

static void occurrences(struct ctx *c)
{
	c->off = xcalloc(c->nkeys + 1, sizeof(*c->off));
	c->pos = xmalloc(sizeof(*c->pos) * (c->n ? c->n : 1));
	for (size_t i = 0; i < c->n; i++)
		c->off[c->k[i] + 1]++;
	for (size_t x = 0; x < c->nkeys; x++)
		c->off[x + 1] += c->off[x];
	size_t *fill = xmalloc(sizeof(*fill) * (c->nkeys ? c->nkeys : 1));
	memcpy(fill, c->off, sizeof(*fill) * c->nkeys);
	for (size_t i = 0; i < c->n; i++)
		c->pos[fill[c->k[i]]++] = i;
	free(fill);
}

/* The k-th smallest of a[0..n) (a is reordered). */
static size_t select_kth(size_t *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t pivot = a[lo + (hi - lo) / 2], i = lo, j = hi;
		while (i <= j) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j) {
				size_t t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return a[k];
	}
	return a[k];
}

static size_t tol_of(size_t p)
{
	return p / 8 > 1 ? p / 8 : 1;
}

static size_t band_of(size_t p)
{
	size_t b = p / 8;
	return b < 8 ? 8 : b > 64 ? 64 : b;
}

static void rows(struct ctx *c, size_t w)
{
	if (2 * w + 4 > c->rowcap) {
		c->rowcap = 2 * w + 4;
		c->r0 = xrealloc(c->r0, sizeof(int32_t) * c->rowcap);
		c->r1 = xrealloc(c->r1, sizeof(int32_t) * c->rowcap);
	}
}

enum { DP_GLOBAL, DP_SEMI, DP_EXTEND };

/*
 * Banded LCS of a[0..la) (index i) and b[0..lb) (index j, the rows), cells |i - j| <= w.
 * DP_GLOBAL: returns LCS(la, lb) (needs |la - lb| <= w). DP_SEMI: the smallest i with the
 * largest LCS(i, lb) in *oi, returns that LCS. DP_EXTEND: the cell maximising
 * 5 LCS - 2 (i + j) (a match +1, an op left out -2) in *oi, *oj (X-drop: stops when a row's best
 * falls w + 8 below), returns it.
 */
static long band_dp(struct ctx *c, const uint32_t *a, size_t la, const uint32_t *b, size_t lb,
                    size_t w, int mode, size_t *oi, size_t *oj)
{
	rows(c, w);
	int32_t *prev = c->r0, *cur = c->r1;
	const size_t width = 2 * w + 1;
	long best = 0;
	size_t bi = 0, bj = 0;
	/*
	 * row j = 0: LCS(i, 0) = 0 for i <= w; slot s = i - j + w + 1. Row j reads only slots of
	 * row j-1 inside its range, its own left neighbour and the guards at 0 and width+1, which
	 * are never written: the rows need no clearing between rows.
	 */
	for (size_t s = 0; s < width + 2; s++)
		prev[s] = cur[s] = NEG;
	for (size_t i = 0; i <= la && i <= w; i++)
		prev[i + w + 1] = 0;
	c->cells += (long long)(width * lb);
	for (size_t j = 1; j <= lb; j++) {
		size_t lo = j > w ? j - w : 0, hi = j + w < la ? j + w : la;
		long rowbest = NEG;
		for (size_t i = lo; i <= hi; i++) {
			size_t s = i + w + 1 - j;
			int32_t v;
			if (i == 0) {
				v = 0;
			} else {
				v = prev[s + 1]; /* (i, j-1) */
				if (cur[s - 1] > v)
					v = cur[s - 1]; /* (i-1, j) */
				int32_t d = prev[s] + (a[i - 1] == b[j - 1]);
				if (d > v)
					v = d;
			}
			cur[s] = v;
			if (mode == DP_EXTEND && v >= 0) {
				long sc = 5L * v - 2 * (long)i - 2 * (long)j;
				if (sc > best) {
					best = sc;
					bi = i;
					bj = j;
				}
				if (sc > rowbest)
					rowbest = sc;
			}
		}
		int32_t *t = prev;
		prev = cur;
		cur = t;
		if (mode == DP_EXTEND && rowbest < best - (long)w - 8)
			break;
		if (lo > la)
			break;
	}
	if (mode == DP_EXTEND) {
		*oi = bi;
		*oj = bj;
		return best;
	}
	if (mode == DP_GLOBAL)
		return prev[la + w + 1 - lb] > 0 ? prev[la + w + 1 - lb] : 0;
	long l = -1;
	size_t at = 0;
	for (size_t i = lb > w ? lb - w : 0; i <= la && i <= lb + w; i++) {
		int32_t v = prev[i + w + 1 - lb];
		if (v > l) {
			l = v;
			at = i;
		}
	}
	*oi = at;
	return l < 0 ? 0 : l;
}

/* Common ops of a and k copies of b, as multisets. */
static size_t hist_common_k(struct ctx *c, const uint32_t *a, size_t la, const uint32_t *b,
                            size_t lb, size_t k)
{
	size_t m = 0;
	for (size_t i = 0; i < la; i++)
		c->hist[a[i]]++;
	for (size_t r = 0; r < k; r++)
		for (size_t j = 0; j < lb; j++)
			if (c->hist[b[j]]) {
				c->hist[b[j]]--;
				m++;
			}
	for (size_t i = 0; i < la; i++)
		c->hist[a[i]] = 0;
	return m;
}

/* Similarity in [0, 1] of keys[a, a+la) and keys[b, b+lb): LCS / longer, or the histogram. */
static double window_sim(struct ctx *c, size_t a, size_t la, size_t b, size_t lb, size_t band)
{
	const uint32_t *x = c->k + a, *y = c->k + b;
	size_t mx = la > lb ? la : lb, diff = la > lb ? la - lb : lb - la;
	if (!mx)
		return 1;
	if (la == lb && !memcmp(x, y, la * sizeof(*x)))
		return 1;
	size_t w = band + diff;
	if (diff * 2 > mx || (double)(2 * w + 1) * (double)lb > GLOBAL_CELLS ||
	    c->cells > c->budget) {
		double h = (double)hist_common_k(c, x, la, y, lb, 1) / (double)mx;
		/* the histogram ignores order: the heads and tails (512 ops) must align too */
		size_t l = la < lb ? la : lb;
		l = l < 512 ? l : 512;
		if (l < 64 || (c->cells > c->budget && !c->verifying))
			return h;
		double e =
		    (double)(band_dp(c, x, l, y, l, 32, DP_GLOBAL, NULL, NULL) +
		             band_dp(c, x + la - l, l, y + lb - l, l, 32, DP_GLOBAL, NULL, NULL)) /
		    (double)(2 * l);
		return e < h ? e : h;
	}
	return (double)band_dp(c, x, la, y, lb, w, DP_GLOBAL, NULL, NULL) / (double)mx;
}

/* keys[from, from+len) reversed, into buffer which (0 or 1: the other stays valid). */
static uint32_t *reversed(struct ctx *c, int which, size_t from, size_t len)
{
	uint32_t **d = which ? &c->bb : &c->ba;
	size_t *cap = which ? &c->capb : &c->capa;
	if (len > *cap) {
		*cap = len + len / 2;
		*d = xrealloc(*d, sizeof(uint32_t) * *cap);
	}
	for (size_t i = 0; i < len; i++)
		(*d)[i] = c->k[from + len - 1 - i];
	return *d;
}

struct cand {
	uint32_t key;
	size_t p, r0, run; /* run gaps starting at the key's occurrence r0 */
	size_t tm;         /* the template: the window [o[tm], o[tm+1]) */
	size_t exact;      /* sampled windows equal to the template, op for op */
	size_t score;      /* ops spanned by all its regular gaps */
	size_t from, to;   /* the run's first anchor .. the last regular gap's end + p */
	double sim, value;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* Step 2: one candidate per key with a regular run; returns how many, best first. */
static size_t candidates(struct ctx *c, struct cand **out)
{
	struct cand *cs = xmalloc(sizeof(*cs) * (c->nkeys ? c->nkeys : 1));
	size_t nc = 0, *gaps = xmalloc(sizeof(*gaps) * (c->n ? c->n : 1));
	for (size_t x = 0; x < c->nkeys; x++) {
		const size_t *o = c->pos + c->off[x], cnt = c->off[x + 1] - c->off[x];
		if (cnt < 2 || cnt > c->n / 2 + 1)
			continue;
		for (size_t i = 0; i + 1 < cnt; i++)
			gaps[i] = o[i + 1] - o[i];
		size_t p = select_kth(gaps, cnt - 1, (cnt - 1) / 2), tol = tol_of(p);
		if (p < 2)
			continue;
		size_t best = 0, bstart = 0, len = 0, cover = 0, last = 0;
		for (size_t i = 0; i + 1 < cnt; i++) {
			size_t g = o[i + 1] - o[i];
			if (g + tol >= p && g <= p + tol) {
				cover += g;
				last = o[i + 1];
				if (++len > best) {
					best = len;
					bstart = i + 1 - len;
				}
			} else {
				len = 0;
			}
		}
		if (!best)
			continue;
		cs[nc++] = (struct cand){.key = (uint32_t)x,
		                         .p = p,
		                         .r0 = bstart,
		                         .run = best,
		                         .score = cover,
		                         .from = o[bstart],
		                         .to = last + p};
	}
	free(gaps);
	qsort(cs, nc, sizeof(*cs), cmp_cand);
	/* keep the best of each distinct period and region (keys once a step share both) */
	size_t kept = 0;
	for (size_t i = 0; i < nc && kept < MAXCAND; i++) {
		int dup = 0;
		for (size_t j = 0; j < kept; j++) {
			size_t a = cs[i].p, b = cs[j].p;
			if ((a > b ? a - b : b - a) <= tol_of(a > b ? a : b) &&
			    cs[i].from < cs[j].to && cs[j].from < cs[i].to)
				dup = 1;
		}
		if (!dup)
			cs[kept++] = cs[i];
	}
	*out = cs;
	return kept;
}

/*
 * The template: of up to 8 windows spread over the run, the one that most others equal
 * exactly (a window with a stray op must not be the model), the middle one on a tie.
 */
static size_t pick_template(const struct ctx *c, struct cand *cd)
{
	const size_t *o = c->pos + c->off[cd->key];
	size_t ns = cd->run < 8 ? cd->run : 8, w[8], best = cd->r0 + cd->run / 2, bn = 0;
	for (size_t s = 0; s < ns; s++)
		w[s] = cd->r0 + (ns > 1 ? s * (cd->run - 1) / (ns - 1) : 0);
	for (size_t s = 0; s < ns; s++) {
		size_t len = o[w[s] + 1] - o[w[s]], eq = 0;
		for (size_t t = 0; t < ns; t++)
			eq += t != s && o[w[t] + 1] - o[w[t]] == len &&
			      !memcmp(c->k + o[w[s]], c->k + o[w[t]], len * sizeof(*c->k));
		size_t mid = cd->r0 + cd->run / 2;
		size_t dn = w[s] > mid ? w[s] - mid : mid - w[s];
		size_t db = best > mid ? best - mid : mid - best;
		if (eq > bn || (eq == bn && dn < db)) {
			bn = eq;
			best = w[s];
		}
	}
	cd->exact = bn;
	return best;
}

/* Step 3: mean similarity of the run's windows to the template. */
static void verify(struct ctx *c, struct cand *cd)
{
	const size_t *o = c->pos + c->off[cd->key];
	size_t tm = cd->tm = pick_template(c, cd), band = band_of(cd->p);
	size_t tb = o[tm], tl = o[tm + 1] - o[tm];
	size_t ns = cd->run < MAXSAMPLE ? cd->run : MAXSAMPLE;
	double sum = 0;
	if (cd->run == 1) {
		/* one window: compared with what follows its end (a second step), not itself */
		size_t nb = tb + tl, nl = c->n - nb < tl ? c->n - nb : tl;
		cd->sim = window_sim(c, nb, nl, tb, tl, band);
		cd->value = cd->sim * (double)cd->score;
		return;
	}
	size_t used = 0;
	for (size_t s = 0; s < ns; s++) {
		size_t w = cd->r0 + (ns > 1 ? s * (cd->run - 1) / (ns - 1) : 0);
		if (w == tm)
			continue; /* not the template with itself */
		sum += window_sim(c, o[w], o[w + 1] - o[w], tb, tl, band);
		used++;
	}
	cd->sim = used ? sum / (double)used : 0;
	cd->value = cd->sim * (double)cd->score;
}

/* Where the candidate's regular repeats end: its last regular gap plus a period. */
static size_t run_end(const struct cand *cd)
{
	return cd->to;
}

/*
 * Step 3's choice among candidates whose windows are alike (mean similarity >= minsim; with
 * exact, some window equal to the template op for op) and whose value is at least a tenth of
 * the best's: the loop that runs last (a program sets up, warms up, autotunes, then loops
 * until it exits; XLA's autotuner repeats its timing runs identically long before the
 * steps), within two periods of the latest end the best value, within 3 % of it the smaller
 * period. Returns the index in cs, SIZE_MAX when none qualifies.
 */
static int eligible(const struct cand *cd, double minsim, int exact)
{
	return cd->sim >= minsim && (!exact || cd->exact);
}

static size_t choose(const struct cand *cs, size_t nc, double minsim, int exact)
{
	double top = 0;
	for (size_t i = 0; i < nc; i++)
		if (eligible(&cs[i], minsim, exact) && cs[i].value > top)
			top = cs[i].value;
	size_t latest = 0, win = SIZE_MAX;
	for (size_t i = 0; i < nc; i++)
		if (eligible(&cs[i], minsim, exact) && cs[i].value >= 0.1 * top &&
		    run_end(&cs[i]) > latest)
			latest = run_end(&cs[i]);
	for (size_t i = 0; i < nc; i++) {
		if (!eligible(&cs[i], minsim, exact) || cs[i].value < 0.1 * top ||
		    run_end(&cs[i]) + 2 * cs[i].p < latest)
			continue;
		if (win == SIZE_MAX || cs[i].value > 1.03 * cs[win].value ||
		    (cs[i].value >= 0.97 * cs[win].value && cs[i].p < cs[win].p))
			win = i;
	}
	return win;
}

static void none(struct period_result *r, size_t n, const char *why)
{
	r->steps = xmalloc(sizeof(*r->steps));
	r->similarity = xmalloc(sizeof(*r->similarity));
	r->nsteps = n ? 1 : 0;
	r->steps[0] = (struct period_range){0, n};
	r->similarity[0] = 1;
	r->prelude = (struct period_range){0, 0};
	r->epilogue = (struct period_range){n, n};
	r->period = n;
	r->method = "none";
	r->confidence = n ? 0.1 : 0;
	r->coverage = n ? 1 : 0;
	r->mean_similarity = 1;
	r->steady = r->nsteps;
	snprintf(r->reason, sizeof(r->reason), "%s: the whole sequence as one step", why);
}

/*
 * A loop of one op: no key repeats at a spacing of 2 or more (candidates() keeps none), but
 * one key makes 90 % of the ops (a `while True: x = x * a`, a CuPy loop of one kernel). Each of
 * its occurrences starts a step of its own, up to the next; before the first is the prelude,
 * after the last the epilogue. Without this the whole run was one step, which on a 400,000-op
 * run cut short by a kill took the analyzer past two minutes and a gigabyte. Returns 0 when
 * no key is that common.
 */
static int one_op_loop(const struct ctx *c, struct period_result *r)
{
	size_t best = 0, cnt = 0;
	for (size_t x = 0; x < c->nkeys; x++)
		if (c->off[x + 1] - c->off[x] > cnt) {
			cnt = c->off[x + 1] - c->off[x];
			best = x;
		}
	if (c->n < 64 || cnt * 10 < c->n * 9)
		return 0;
	const size_t *o = c->pos + c->off[best];
	r->steps = xmalloc(sizeof(*r->steps) * cnt);
	r->similarity = xmalloc(sizeof(*r->similarity) * cnt);
	size_t alike = 0;
	for (size_t i = 0; i < cnt; i++) {
		r->steps[i] = (struct period_range){o[i], i + 1 < cnt ? o[i + 1] : o[i] + 1};
		r->similarity[i] = r->steps[i].end - r->steps[i].start == 1 ? 1.0 : 0.5;
		alike += r->similarity[i] >= 0.9;
	}
	r->nsteps = cnt;
	r->prelude = (struct period_range){0, o[0]};
	r->epilogue = (struct period_range){o[cnt - 1] + 1, c->n};
	r->period = 1;
	r->method = "periodic";
	r->anchor = c->orig[o[0]];
	r->steady = alike;
	r->mean_similarity = (double)(alike + (cnt - alike) / 2.0) / (double)cnt;
	r->coverage = (double)(o[cnt - 1] + 1 - o[0]) / (double)c->n;
	r->confidence = r->mean_similarity * (0.7 + r->coverage < 1 ? 0.7 + r->coverage : 1);
	snprintf(r->reason, sizeof(r->reason),
	         "a loop of one op: %zu steps of 1 op, one key makes %.0f%% of %zu ops (%zu steps "
	         "with another op between)",
	         cnt, 100.0 * (double)cnt / (double)c->n, c->n, cnt - alike);
	return 1;
}

/* Nearest occurrence index from anchor occurrence cur going dir (+1/-1), at least p/2 away. */
static long next_anchor(const size_t *o, size_t cnt, size_t cur, int dir, size_t p)
{
	long q = (long)cur + dir;
	while (q >= 0 && (size_t)q < cnt) {
		size_t g = dir > 0 ? o[q] - o[cur] : o[cur] - o[q];
		if (2 * g >= p)
			return g <= 4 * p ? q : -1;
		q += dir;
	}
	return -1;
}

/* Does keys[from, from+len) hold at least 60 % of the template's ops (and is not too long)? */
static int window_ok(struct ctx *c, size_t from, size_t len, size_t tb, size_t tl)
{
	if (len > 4 * tl)
		return 0;
	return 10 * hist_common_k(c, c->k + from, len, c->k + tb, tl, 1) >= 6 * tl;
}

/* The window between anchors x and y (occurrence indices, either order). */
static int between_ok(struct ctx *c, const size_t *o, size_t x, size_t y, size_t tb, size_t tl)
{
	size_t a = x < y ? x : y, b = x < y ? y : x;
	return window_ok(c, o[a], o[b] - o[a], tb, tl);
}

/*
 * Step 4: extends the run from anchor cur in direction dir while windows pass window_ok; up
 * to two bad windows are taken when a good one follows them (a step with a glitch: noise,
 * a missing anchor), not at the ends. Returns the last anchor taken.
 */
static size_t extend(struct ctx *c, const size_t *o, size_t cnt, size_t cur, int dir, size_t p,
                     size_t tb, size_t tl)
{
	for (;;) {
		long q = next_anchor(o, cnt, cur, dir, p);
		if (q < 0)
			break;
		if (between_ok(c, o, cur, (size_t)q, tb, tl)) {
			cur = (size_t)q;
			continue;
		}
		long q2 = q, ok = -1;
		for (int t = 0; t < 2 && ok < 0; t++) {
			long q3 = next_anchor(o, cnt, (size_t)q2, dir, p);
			if (q3 < 0)
				break;
			if (between_ok(c, o, (size_t)q2, (size_t)q3, tb, tl))
				ok = q3;
			q2 = q3;
		}
		if (ok < 0)
			break;
		cur = (size_t)ok;
	}
	return cur;
}

/* Steps 4-6 for the winning candidate. */
static void segment(struct ctx *c, const struct cand *cd, struct period_result *r)
{
	const size_t *o = c->pos + c->off[cd->key], cnt = c->off[cd->key + 1] - c->off[cd->key];
	const size_t n = c->n, p = cd->p, band = band_of(p);
	size_t tm = cd->tm, tb = o[tm], tl = o[tm + 1] - o[tm];
	/* anchors: occurrence indices, extended both ways */
	size_t *an = xmalloc(sizeof(*an) * 4 * cnt), na = 0, first = cd->r0,
	       last = cd->r0 + cd->run;
	first = extend(c, o, cnt, first, -1, p, tb, tl);
	last = extend(c, o, cnt, last, 1, p, tb, tl);
	for (size_t q = first; q <= last;) {
		an[na++] = o[q];
		long nx = q == last ? -1 : next_anchor(o, cnt, q, 1, p);
		if (nx < 0)
			break;
		/* a window of k >= 2 steps (the anchor kernel missing k-1 times): split it */
		size_t g = o[nx] - o[q], k = (g + tl / 2) / tl;
		k = k > 4 ? 4 : k; /* an has room for 4 entries an anchor */
		if (k >= 2 && 10 * hist_common_k(c, c->k + o[q], g, c->k + tb, tl, k) >= 8 * k * tl)
			for (size_t v = 1; v < k; v++)
				an[na++] = o[q] + v * g / k;
		q = (size_t)nx;
	}
	/* phase: how far before its anchor a step starts (the template's window ends at o[tm+1]) */
	size_t tend = o[tm + 1], ly = tl - 1, i0 = 0, jph = 0;
	/* step 0 may hold hundreds of lazy ops (optimizer state): a band up to ly/2 */
	size_t wp = ly / 2 < 512 ? ly / 2 : 512;
	if (ly && wp * ly > PHASE_CELLS)
		wp = PHASE_CELLS / ly;
	if (wp < band)
		wp = band;
	size_t lx = an[0] < ly + wp ? an[0] : ly + wp;
	if (ly && lx) {
		uint32_t *y = reversed(c, 1, tend - ly, ly);
		uint32_t *x = reversed(c, 0, an[0] - lx, lx);
		band_dp(c, x, lx, y, ly, wp, DP_EXTEND, &i0, &jph);
		if (jph > tb)
			jph = tb;
	}
	const size_t pre_b = tend - jph; /* template's ops before the anchor: [pre_b, tend) */
	struct period_range *st = xmalloc(sizeof(*st) * na);
	st[0].start = an[0] - i0;
	for (size_t s = 1; s < na; s++) {
		size_t a = an[s], room = a - an[s - 1], start = a;
		if (jph && jph <= room && !memcmp(c->k + a - jph, c->k + pre_b, jph * 4)) {
			start = a - jph;
		} else if (jph && c->cells > c->budget) {
			start = a - (jph < room ? jph : room);
		} else if (jph) {
			size_t lxs = jph + band < room ? jph + band : room, ii = 0;
			uint32_t *y = reversed(c, 1, pre_b, jph);
			uint32_t *x = reversed(c, 0, a - lxs, lxs);
			band_dp(c, x, lxs, y, jph, band, DP_SEMI, &ii, NULL);
			start = a - ii;
		}
		if (start <= st[s - 1].start)
			start = st[s - 1].start + 1;
		st[s - 1].end = start;
		st[s].start = start;
	}
	/* end of the last step: the template's rest aligned forward from the last anchor */
	size_t a = an[na - 1], rest = tl - jph, end = a;
	if (a + rest <= n && !memcmp(c->k + a, c->k + tb, rest * 4)) {
		end = a + rest;
	} else if (rest) {
		size_t lxe = n - a < rest + band ? n - a : rest + band, ii = 0, jj = 0;
		band_dp(c, c->k + a, lxe, c->k + tb, rest, band, DP_EXTEND, &ii, &jj);
		end = a + ii;
	}
	if (end <= st[na - 1].start)
		end = st[na - 1].start + 1 <= n ? st[na - 1].start + 1 : n;
	st[na - 1].end = end;
	/*
	 * similarity to the steady step: of up to 8 steps spread over them, the one most others
	 * equal exactly, the latest on a tie (the template rotated to the phase, [tb - jph,
	 * tend - jph), may be step 0 when the anchor follows step 0's odd part)
	 */
	size_t ref = 0, refeq = 0, ns = na < 8 ? na : 8, smp[8];
	for (size_t s = 0; s < ns; s++)
		smp[s] = ns > 1 ? s * (na - 1) / (ns - 1) : 0;
	for (size_t s = 0; s < ns; s++) {
		size_t len = st[smp[s]].end - st[smp[s]].start, eq = 0;
		for (size_t t = 0; t < ns; t++)
			eq += t != s && st[smp[t]].end - st[smp[t]].start == len &&
			      !memcmp(c->k + st[smp[s]].start, c->k + st[smp[t]].start,
			              len * sizeof(*c->k));
		if (eq >= refeq) {
			refeq = eq;
			ref = smp[s];
		}
	}
	if (!refeq) /* no two alike: the template itself */
		for (size_t s = 0; s < na; s++)
			if (st[s].start == tb - jph)
				ref = s;
	const size_t tr = st[ref].start;
	tl = st[ref].end - st[ref].start;
	r->similarity = xmalloc(sizeof(*r->similarity) * na);
	double sum = 0;
	size_t steady = 0;
	for (size_t s = 0; s < na; s++) {
		double v = window_sim(c, st[s].start, st[s].end - st[s].start, tr, tl, band);
		r->similarity[s] = v;
		sum += v;
		steady += v >= 0.9;
	}
	r->steps = st;
	r->nsteps = na;
	r->prelude = (struct period_range){0, st[0].start};
	r->epilogue = (struct period_range){end, n};
	r->period = tl;
	r->method = "periodic";
	r->anchor = c->orig[o[cd->r0]];
	r->steady = steady;
	r->mean_similarity = sum / (double)na;
	r->coverage = (double)(end - st[0].start) / (double)n;
	double few = na >= 4 ? 1 : na == 3 ? 0.8 : 0.6;
	double cov = 0.7 + r->coverage < 1 ? 0.7 + r->coverage : 1;
	r->confidence = r->mean_similarity * few * cov;
	snprintf(r->reason, sizeof(r->reason),
	         "%zu steps of %zu ops, found by the regular repeats of one key: %zu of %zu alike "
	         "(similarity >= 0.9), mean similarity %.2f; steps cover %.0f%% of %zu ops "
	         "(prelude %zu, epilogue %zu)",
	         na, tl, steady, na, r->mean_similarity, 100 * r->coverage, n, st[0].start,
	         n - end);
	free(an);
}

void period_find(const uint32_t *keys, size_t n, struct period_result *out)
{
	memset(out, 0, sizeof(*out));
	if (n < 4) {
		none(out, n, n ? "too few ops" : "no ops");
		return;
	}
	struct ctx c = {.n = n, .orig = keys};
	densify(&c, keys, n);
	occurrences(&c);
	c.hist = xcalloc(c.nkeys, sizeof(*c.hist));
	struct cand *cs;
	size_t nc = candidates(&c, &cs);
	c.verifying = 1;
	for (size_t i = 0; i < nc; i++) {
		c.cells = 0;
		c.budget = CELL_BUDGET / MAXCAND;
		verify(&c, &cs[i]);
	}
	c.verifying = 0;
	c.cells = 0;
	c.budget = CELL_BUDGET;
	size_t win = choose(cs, nc, 0.85, 1);
	if (win == SIZE_MAX)
		win = choose(cs, nc, 0.85, 0);
	if (win == SIZE_MAX)
		win = choose(cs, nc, 0.5, 0);
	if (win != SIZE_MAX)
		segment(&c, &cs[win], out);
	else if (nc || !one_op_loop(&c, out))
		none(out, n,
		     nc ? "no regular repeats with steps alike" : "no key repeats regularly");
	free(cs);
	free(c.k);
	free(c.off);
	free(c.pos);
	free(c.r0);
	free(c.r1);
	free(c.ba);
	free(c.bb);
	free(c.hist);
}

void period_result_free(struct period_result *r)
{
	free(r->steps);
	free(r->similarity);
	memset(r, 0, sizeof(*r));
}
