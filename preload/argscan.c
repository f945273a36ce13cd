/*
 * argscan.c - a launch's parameters: the words in them that may be device pointers.
 *
 * Each parameter's 8-byte-aligned words (parameters are at least as aligned as their largest
 * member) that fall within the bounds of every address allocated so far are candidates; they
 * are looked up in the allocation map in one batch, in parameter order, and those in no
 * allocation dropped (resolved offline, the map answers PTRMAP_OFFLINE for each and the analyzer
 * drops them: analyzer/resolve.c). A parameter of 8 bytes or less keeps its value, one of 9 to
 * 12 its bytes, and one of TAIL_MIN or more the 8 bytes after its last candidate (record.h).
 *
 * Where this runs. Resolved at the launch (AICPROF_RESOLVE=shim, or calibration), the launching
 * thread scans, since the map must be the launch's. Resolved offline (the default), nothing
 * about the scan depends on the moment but the bounds, so the launching thread only copies the
 * parameters' bytes and the bounds into an R_LAUNCH_DEFER record, and the writer thread scans
 * them when it drains the ring (argscan_expand), writing the same trace line. That takes the
 * scan off the program's thread: on GPT-2 it was 0.42 us of a launch's 1.8 (docs/perf.md,
 * session 11), where a copy of a launch's few hundred bytes is a few memcpy calls.
 */
#include "preload/argscan.h"
#include "preload/ptrmap.h"

#include <string.h>

int argscan(int nparams, const uint32_t *off, const uint32_t *size, const char *const *pp,
            uint64_t lo, uint64_t hi, struct r_arg *args, struct r_ptr *ptrs)
{
	uint64_t cand[MAX_PTRS];
	uint32_t cand_w[MAX_PTRS];
	uint16_t cand_arg[MAX_PTRS];
	int nc = 0;
	for (int i = 0; i < nparams; i++) {
		const char *p = pp[i];
		struct r_arg *a = &args[i];
		a->off = off[i];
		a->size = size[i];
		a->val = 0;
		a->first_ptr = 0;
		a->nptr = 0;
		a->pad = 0;
		if (!p)
			continue;
		if (a->size <= 8) {
			memcpy(&a->val, p, a->size);
		} else if (a->size <= 12) { /* a small closure: two floats and a flag */
			memcpy(&a->val, p, 8);
			memcpy(&a->pad, p + 8, a->size - 8);
		}
		for (uint32_t w = 0; w + 8 <= a->size && nc < MAX_PTRS; w += 8) {
			uint64_t v;
			memcpy(&v, p + w, 8);
			if (v < lo || v >= hi)
				continue;
			cand[nc] = v;
			cand_w[nc] = w;
			cand_arg[nc] = (uint16_t)i;
			nc++;
		}
	}
	int64_t ids[MAX_PTRS];
	uint64_t offs[MAX_PTRS];
	if (nc)
		ptrmap_find_batch(cand, nc, ids, offs);
	/* the pointers in parameter order (candidates are in that order), each parameter's
	 * run contiguous from first_ptr */
	int np = 0, k = 0;
	for (int i = 0; i < nparams; i++) {
		args[i].first_ptr = (uint16_t)np;
		int64_t last = -1;
		for (; k < nc && cand_arg[k] == i; k++) {
			if (ids[k] < 0 && ids[k] != PTRMAP_OFFLINE) /* in no allocation */
				continue;
			ptrs[np++] = (struct r_ptr){cand_w[k], -1, cand[k], ids[k], offs[k]};
			args[i].nptr++;
			last = cand_w[k];
		}
		/* a large parameter: the 8 bytes after its last device pointer (ATen's legacy
		 * loop's closure holds the offset calculator, the data array, then the functor) */
		if (last < 0 || args[i].size < TAIL_MIN || (uint64_t)last + 16 > args[i].size)
			continue;
		if (pp[i])
			memcpy(&args[i].val, pp[i] + last + 8, 8);
	}
	return np;
}

const struct r_launch *argscan_expand(const struct r_launch *d, void *buf, size_t cap)
{
	const size_t head = sizeof(struct r_launch) + sizeof(struct r_defer);
	if (d->h.len < head || d->nargs > MAX_ARGS || d->nraw > RAW_MAX ||
	    cap < ARGSCAN_EXPAND_MAX || d->ncoll > 64)
		return NULL;
	const struct r_defer *x = (const void *)(d + 1);
	const uint32_t *coll = (const void *)(x + 1);
	const char *bytes = (const char *)(coll + d->ncoll);
	const uint32_t *off = (const uint32_t *)(uintptr_t)x->off;
	const uint32_t *size = (const uint32_t *)(uintptr_t)x->size;
	const int n = d->nargs;
	if (n && (!off || !size))
		return NULL;
	const char *pp[MAX_ARGS];
	size_t have = d->h.len - head - sizeof(uint32_t) * d->ncoll, used = 0;
	for (int i = 0; i < n; i++) {
		if (size[i] > DEFER_MAX || used + size[i] > have)
			return NULL;
		pp[i] = bytes + used;
		used += size[i];
	}
	struct r_launch *r = buf;
	*r = *d;
	r->h.type = R_LAUNCH;
	struct r_arg *args = (void *)(r + 1);
	struct r_ptr ptrs[MAX_PTRS];
	int np = argscan(n, off, size, pp, x->lo, x->hi, args, ptrs);
	char *tail = (char *)(args + n); /* args, ptrs, coll, raw: record.h */
	memcpy(tail, ptrs, sizeof(struct r_ptr) * (size_t)np);
	tail += sizeof(struct r_ptr) * (size_t)np;
	memcpy(tail, coll, sizeof(uint32_t) * d->ncoll);
	tail += sizeof(uint32_t) * d->ncoll;
	size_t nraw = d->nraw;
	for (int i = 0; i < n && nraw; i++) {
		if (size[i] <= 12)
			continue;
		if (size[i] > nraw)
			break;
		memcpy(tail, pp[i], size[i]);
		tail += size[i];
		nraw -= size[i];
	}
	r->nptrs = (uint16_t)np;
	r->nraw = (uint16_t)(d->nraw - nraw);
	r->h.len = (uint32_t)REC_ALIGN((size_t)(tail - (char *)r));
	return r;
}
