/*
 * resolve.h - device pointers the shim left to the analyzer, resolved to their allocations
 * (analyzer/resolve.c). builder.h's struct builder holds the map.
 */
#ifndef AICPROF_RESOLVE_H
#define AICPROF_RESOLVE_H

struct builder;
struct rec;

/* the id the shim writes for a pointer or a free it did not resolve (trace-format.md) */
#define RESOLVE_OFFLINE (-2)
/* the most live allocations the replay keeps: past it an allocation is not entered (a warning
 * at the end counts them), so a hostile trace costs bounded memory */
#define RESOLVE_MAX_LIVE (1 << 22)

/* Called for every record as it leaves the reorder buffer, in seq order: an alloc enters the
 * map, a free leaves it (and takes its id where the shim wrote RESOLVE_OFFLINE), and a launch's
 * or a copy's unresolved pointers get their allocation and offset (a launch's pointers in no
 * live allocation are dropped, as the shim drops them; a copy's end gets -1). */
void resolve_record(struct builder *b, struct rec *r);
/* The warning of the replay, if any (allocations not entered), added to the trace's warnings;
 * then frees the map. */
void resolve_finish(struct builder *b);

#endif
