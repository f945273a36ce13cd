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

/* A new cJSON array of ints. */
struct cJSON *beyond_ints(const int *v, int n);

#endif
