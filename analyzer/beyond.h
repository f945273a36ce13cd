/*
 * beyond.h - helpers shared by the analyses beyond fusion (deadwork.c, invariant.c, memplan.c):
 * appending a candidate of a new kind to the model, and small lookups on the step graph.
 * Internal to analyzer/; other stages read the results through summary.json.
 */
#ifndef AICPROF_BEYOND_H
#define AICPROF_BEYOND_H

#include "analyzer/model.h"

struct cJSON;

/*
 * Appends a zeroed candidate of the given kind (a static string) to m->cands with the next id
 * and a new, empty evidence object; nodes are copied. Returns the candidate, owned by m (valid
 * until the next append). Never fails (dies when out of memory).
 */
struct candidate *beyond_add(struct model *m, const char *kind, const int *nodes, int nnodes);

/* 1 when node n writes a value of buffer `buffer` in the step (any of its outputs). */
int beyond_node_writes(const struct model *m, int n, long buffer);

/* 1 when node n reads a value of buffer `buffer` in the step. */
int beyond_node_reads(const struct model *m, int n, long buffer);

/*
 * Says whether candidate c can be acted on from the user's source: sets evidence.actionable.
 * A candidate all of whose nodes were launched inside autograd (model.h node.autograd:
 * backward()'s seed gradient, a backward formula's temporaries) is not: the user cannot hoist
 * or remove it from their source. Such a candidate keeps its cost in evidence.time_us and
 * evidence.bytes, saves 0 us and 0 bytes (so it ranks below every actionable finding) and its `why`
 * says so. Returns 1 when actionable.
 */
int beyond_actionable(struct model *m, struct candidate *c);

/* A new cJSON array of ints. */
struct cJSON *beyond_ints(const int *v, int n);

#endif
