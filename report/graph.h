/*
 * graph.h - the step graph as the report draws it: a view over the model's nodes in which runs
 * of small kernels are collapsed into one vertex and, for big steps, only the top nodes by time
 * and their neighbours are kept; then laid out by Graphviz (cgraph builds, gvc lays out with
 * "dot" and renders SVG), and written as DOT.
 */
#ifndef AICPROF_REPORT_GRAPH_H
#define AICPROF_REPORT_GRAPH_H

#include "report/model.h"

struct gvert {
	int node;     /* index into rmodel.nodes of the vertex's (first) node */
	int count;    /* nodes it stands for: 1, or the length of a collapsed run */
	int *members; /* when count > 1: the nodes' indices, in chain order; owned */
	double us;    /* time of the nodes it stands for; -1 when unknown */
	int cand;     /* candidate cluster, or -1 */
};

struct gedge {
	int from, to; /* indices into gview.v */
	double bytes; /* -1 when unknown */
	int elided;   /* 1: stands for a path through vertices the top-N cut left out */
};

#define GVIEW_TOP_CANDS 5 /* candidates whose nodes the top-N view always keeps */

struct gview {
	struct gvert *v;
	int nr, alloc;
	struct gedge *e;
	int nr_e, alloc_e;
	int collapsed; /* model nodes folded into "N small kernels" vertices */
	int hidden;    /* model nodes left out by the top-N cut */
	int top_n;     /* the cut's N, or 0 when no cut was made */
};

/*
 * Builds a view of m's step graph. A node is small when its time is known and under
 * small_share of the step time (e.g. 0.01) and it belongs to no candidate; a chain of two or
 * more small nodes, each the only successor of the one before and it the only predecessor of
 * the next, becomes one vertex. When top_n > 0 and more than top_n vertices remain, only the
 * top_n vertices by time, their neighbours and the nodes of the best GVIEW_TOP_CANDS
 * candidates are kept (the others counted in hidden); two kept vertices joined through left-out
 * ones get an elided edge. Never fails; release with gview_release().
 */
void gview_build(struct gview *gv, const struct rmodel *m, double small_share, int top_n);
void gview_release(struct gview *gv);

/*
 * Builds the Graphviz graph of gv and appends its DOT text to dot and/or its SVG rendering
 * (gvc's "dot" layout, XML prolog and DOCTYPE kept) to svg; either may be NULL. Labels from
 * the trace are quoted by cgraph and escaped by gvc's SVG writer; backslashes are doubled so
 * that no name is read as a Graphviz escape (\N, \G). Returns 0, or error() when Graphviz
 * fails to lay out or render.
 */
int gview_render(const struct gview *gv, const struct rmodel *m, struct strbuf *dot,
                 struct strbuf *svg);

#endif
