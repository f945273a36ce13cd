/*
 * resolve.c - the allocation map replayed from the trace, for the pointers the shim did not
 * resolve.
 *
 * By default the shim records an allocation or a free without a lock and without a search
 * (preload/ptrmap.c, AICPROF_RESOLVE=offline): its allocations carry their ids, but its frees
 * and the pointer words of its launches and copies carry RESOLVE_OFFLINE and the address. Here
 * the records arrive one by one in seq order, the order in which the program's API calls
 * happened (parse.c's reorder buffer), and lib/rangemap.c, the shim's own structure, holds the
 * allocations live at that point: an alloc is added (a PyTorch caching allocator block,
 * "c10::CachingAllocator", inside its segment), a free is removed, and a pointer gets the
 * allocation that holds it then, exactly as the shim's map would have given it at the launch.
 * Traces the shim resolved (AICPROF_RESOLVE=shim, calibration) pass through unchanged; their
 * allocations still enter the map, which costs a search each.
 */
#include "analyzer/resolve.h"
#include "analyzer/builder.h"
#include "analyzer/offcalc.h"

#include <string.h>

static void resolve_ptrs(struct builder *b, struct rec *r)
{
	int k = 0;
	for (int i = 0; i < r->nptr; i++) {
		struct ptrarg pa = r->p[i];
		if (pa.alloc == RESOLVE_OFFLINE) {
			const struct rm_range *g = rangemap_find(&b->rmap, pa.off);
			if (!g) { /* in no live allocation: the shim drops such a word */
				b->unresolved++;
				continue;
			}
			pa.alloc = g->id;
			pa.off -= g->base;
			b->resolved++;
		}
		r->p[k++] = pa;
	}
	r->nptr = k;
}

static void resolve_end(struct builder *b, int64_t *alloc, uint64_t *off)
{
	if (*alloc != RESOLVE_OFFLINE)
		return;
	const struct rm_range *g = rangemap_find(&b->rmap, *off);
	*alloc = g ? g->id : -1;
	*off = g ? *off - g->base : 0;
	b->resolved += g != NULL;
	b->unresolved += g == NULL;
}

void resolve_record(struct builder *b, struct rec *r)
{
	switch (r->type) {
	case R_ALLOC:
		if (rangemap_count(&b->rmap) >= RESOLVE_MAX_LIVE ||
		    rangemap_add(&b->rmap, r->ptr, r->size, r->id, r->inner))
			b->not_entered++;
		break;
	case R_FREE: {
		int64_t id = rangemap_remove(&b->rmap, r->ptr, NULL);
		if (r->id == RESOLVE_OFFLINE)
			r->id = id;
		break;
	}
	case R_OP:
		if (!r->has_api)
			break;
		/* a strided loop's operands (parse.c copied them from its pointers, unresolved:
		 * the address in off) */
		for (int j = 0; r->oc && j < r->oc->nargs && j < OFFCALC_ARGS; j++)
			resolve_end(b, &r->oc->alloc[j], &r->oc->off[j]);
		resolve_ptrs(b, r);
		resolve_end(b, &r->dst_alloc, &r->dst_off);
		resolve_end(b, &r->src_alloc, &r->src_off);
		break;
	default:
		break;
	}
}

void resolve_finish(struct builder *b)
{
	if (b->not_entered) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb,
		            "%ld allocations were not entered in the replayed allocation map "
		            "(%d live at most): pointers into them are unresolved",
		            b->not_entered, RESOLVE_MAX_LIVE);
		warning("'%s': %s", b->file, sb.buf);
		b->ti->warnings =
		    xrealloc(b->ti->warnings, sizeof(char *) * (b->ti->nwarnings + 1));
		b->ti->warnings[b->ti->nwarnings++] = sb.buf;
	}
	rangemap_clear(&b->rmap);
}
