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
	int fold;     /* index into gview.folds of the repeat it is drawn for, or -1 */
	int op;       /* 1: members are one op's kernels at one model line, drawn as one box */
};

struct gedge {
	int from, to; /* indices into gview.v */
	double bytes; /* -1 when unknown */
	int elided;   /* 1: stands for a path through vertices the top-N cut left out */
	int saved;    /* rank of the finding that saves this round trip through VRAM, or 0 */
};

#define GVIEW_TOP_CANDS 5 /* candidates whose nodes the top-N view always keeps */

/* A run of reps consecutive copies (reps >= 2) of the same sequence of period node names (or,
 * folding GVIEW_FOLD_OPS, of period ops), in step order (the model's node order), starting at
 * node first: drawn once, as a "×reps" box; kernels counts the first copy's nodes. */
struct gfold {
	int first, period, reps, kernels;
	double us; /* time of all its nodes, -1 when some is unknown */
};

struct gview {
	struct gvert *v;
	int nr, alloc;
	struct gedge *e;
	int nr_e, alloc_e;
	int collapsed;       /* model nodes folded into "N small kernels" vertices */
	int hidden;          /* model nodes left out by the top-N cut */
	int top_n;           /* the cut's N, or 0 when no cut was made */
	struct gfold *folds; /* repeats drawn once; owned */
	int nr_folds, alloc_folds;
	int folded; /* model nodes not drawn because a repeat's first copy stands for them */
	int ops;    /* 1: drawn at the level of ops (GVIEW_FOLD_OPS) */
	int far;    /* edges left out: they join vertices far apart in step order (ops only) */
	int column; /* set by the caller: draw one vertex a rank, in step order (a narrow drawing)
	             */
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

#define GVIEW_FOLD_OPS   2  /* gview_build_folded: ops at model lines, then repeats of them */
#define GVIEW_KEEP_CANDS 10 /* gview_build_ops, last resort: findings past this rank may merge */

/*
 * Like gview_build, but first folds repeats when fold is 1: the nodes are read in step order
 * (the model's order) as a sequence of names, and greedily, from the first node on, the
 * longest stretch made of two or more consecutive copies of one sequence (the shortest such
 * sequence on ties) becomes a gfold; only its first copy's nodes become vertices (their time
 * the sum over the copies, their fold set), every other copy's node is mapped onto the node
 * at the same place in the first copy, and edges between different copies of one fold are
 * dropped. Small-kernel chains never cross a fold's border.
 *
 * fold GVIEW_FOLD_OPS draws the step at the level of ops: first each run of consecutive nodes
 * of one op (the same model line when the model's code is known and is not the user's own line,
 * else the same framework op, forward and backward apart) becomes one unit, drawn as one vertex
 * (op 1, its nodes its members) when it has several nodes; then repeats are folded as above
 * over the sequence of units, compared by their model line or op (so that layers whose kernels
 * differ by shape or algorithm still fold); then runs of small vertices in step order merge
 * and edges between vertices far apart in step order are dropped (gview_drop_far). There,
 * top_n -1 also merges the runs of one candidate, and -2 besides lets the small vertices of
 * findings past the GVIEW_KEEP_CANDS-th merge (gview_build_ops's coarser levels; no cut).
 * Never fails.
 */
void gview_build_folded(struct gview *gv, const struct rmodel *m, double small_share, int top_n,
                        int fold);
/*
 * The step at the level of ops (gview_build_folded with GVIEW_FOLD_OPS, no top-N cut), made
 * to fit in about max_boxes vertices: while it has more, what counts as small doubles (up to
 * 8% of the step); when it still has more, the vertices that follow each other in step order
 * within one candidate are merged too (their round trips then inside one box); when it still
 * has more, small vertices of findings past the tenth merge with the small ones. When no op
 * has several kernels and no layer repeats, it is gview_build_folded(..., 1). Never fails.
 */
void gview_build_ops(struct gview *gv, const struct rmodel *m, double small_share, int max_boxes);
/*
 * Drops gv's edges between vertices more than GVIEW_NEAR apart in step order (the vertices'
 * first nodes), except round trips a finding saves, counting them in gv->far, and marks gv
 * drawn as ops (ops 1: ranks follow the step's order, findings marked, not boxed). Done by
 * GVIEW_FOLD_OPS; a caller may do it to a plain view to make its layout cheap. Never fails.
 */
void gview_drop_far(struct gview *gv);
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

#define GVIEW_LAYOUT_S  10.0 /* default wall-clock budget of one layout, in seconds */
#define GVIEW_DOT_MAX   400  /* vertices + edges above which dot runs with cheap settings */
#define GVIEW_DRAW_MAX  1500 /* vertices + edges above which no layout is tried at all */
#define GVIEW_WIDE_MAX  3000 /* gview_render_wide(): the same limit, for a drawing on its own */
#define GVIEW_TIMEOUT   (-2) /* gview_render_budget: the layout ran past its budget */
#define GVIEW_TOO_LARGE (-3) /* gview_render_budget: too large to try */

/* The width in points of a Graphviz SVG (its <svg width="Npt">), or -1. */
int gview_svg_width(const char *svg);

/*
 * The layout budget in seconds: AICPROF_LAYOUT_S when it holds a positive number, else
 * GVIEW_LAYOUT_S (a value that is not one gets a warning naming it). Never fails.
 */
double gview_layout_budget(void);

/*
 * Like gview_render, but quiet about the drawing's failures and bounded in time: the layout
 * runs in a child process killed after budget_s seconds of wall time. The engine is chosen
 * by size: dot; dot with cheap settings (few network-simplex and crossing passes, straight
 * edges) above GVIEW_DOT_MAX vertices plus edges; nothing above GVIEW_DRAW_MAX. Returns 0
 * with the SVG appended to svg, GVIEW_TIMEOUT, GVIEW_TOO_LARGE, or -1 when Graphviz failed
 * or crashed (reason, when not NULL, gets a few words why); svg is left empty on failure.
 * dot (when not NULL) gets the DOT text before layout in every case.
 */
int gview_render_budget(const struct gview *gv, const struct rmodel *m, struct strbuf *dot,
                        struct strbuf *svg, double budget_s, struct strbuf *reason);

/*
 * Like gview_render_budget with dot NULL, for a drawing shown on its own page (the expanded
 * step, every op): tried up to GVIEW_WIDE_MAX vertices plus edges, with cheap settings above
 * GVIEW_DOT_MAX. Same returns.
 */
int gview_render_wide(const struct gview *gv, const struct rmodel *m, struct strbuf *svg,
                      double budget_s, struct strbuf *reason);

#endif
