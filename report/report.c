/*
 * report.c - report_write_all(): load summary.json, build the model and the graph views, render
 * each output into memory, then write each file atomically.
 *
 * The graph: small kernels (under 1% of the step) are collapsed in every view; when more than
 * REPORT_TOP_MIN vertices remain, the page also gets a top-N view (the REPORT_TOP_N heaviest
 * vertices, their neighbours and the candidates' nodes), shown first. Above REPORT_FOLD_MIN
 * nodes, the drawings fold repeats (a layer's kernels drawn once for its N copies, boxed
 * "×N"), at the level of ops (the kernels of one op at one model line drawn as one box, and
 * layers folded by their sequence of ops); graph.dot always holds the whole collapsed graph,
 * unfolded, and graph.svg the folded drawing (the top view's when the whole one is not drawn).
 * When repeats were folded, graph-all.svg draws every op of the step, one box each, linked
 * from the page ("all N ops"); when that is too large for the layout budget, it draws the
 * step with small kernels collapsed, or else with repeats folded by kernel name, and the
 * page says so in one line (stderr does not: that drawing is extra).
 *
 * Time: every layout is bounded by gview_layout_budget() (AICPROF_LAYOUT_S, 10 s by default)
 * and sized by gview_render_budget(); a drawing left out costs one warning line, never the
 * report: the page then shows the top view alone, or says that nothing could be drawn.
 */
#include "report/report.h"
#include "lib/summary.h"
#include "report/graph.h"
#include "report/html.h"
#include "report/model.h"
#include "report/perfetto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPORT_SMALL_SHARE 0.01
#define REPORT_TOP_N       30
#define REPORT_TOP_MIN     60
#define REPORT_TOP_LEAST   8   /* the top view's N is never cut below this */
#define REPORT_FIT_PT      940 /* widest drawing whose 12 pt labels stay 11 px at fit (872 px) */
#define REPORT_FOLD_MIN    30  /* nodes above which the drawings are of ops, repeats folded */
#define REPORT_BOXES_MAX   60  /* boxes the drawing of ops aims at: small ones merge past it */

static int write_out(const char *dir, const char *name, const struct strbuf *sb)
{
	char *path = path_join(dir, name);
	int r = write_file_atomic(path, sb->buf ? sb->buf : "", sb->len);
	free(path);
	return r;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * The top view, built and drawn into top and svg: first with the REPORT_TOP_N heaviest, then,
 * while the drawing is wider than REPORT_FIT_PT (the page fits the drawing's width, so its
 * text would shrink below ~11 px) and time is left of budget, with two thirds as many. Returns
 * gview_render_budget()'s code of the last try; top is built in every case.
 */
static int draw_top(struct gview *top, const struct rmodel *m, int fold, double budget,
                    struct strbuf *svg, struct strbuf *why)
{
	double deadline = now_s() + budget;
	int n = REPORT_TOP_N, r;
	for (;;) {
		gview_build_folded(top, m, REPORT_SMALL_SHARE, n, fold);
		strbuf_reset(svg);
		strbuf_reset(why);
		r = gview_render_budget(top, m, NULL, svg, fmax(deadline - now_s(), 0.05), why);
		if (r || gview_svg_width(svg->buf) <= REPORT_FIT_PT || n <= REPORT_TOP_LEAST ||
		    now_s() >= deadline)
			return r;
		gview_release(top);
		n = n * 2 / 3;
	}
}

/*
 * graph-all.svg, the expanded step, into svg, with the page's line about it into note (HTML):
 * every op its own box when that can be laid out in time, else a simpler drawing (see the
 * header). Returns 0, or -1 when nothing could be drawn (note says so too).
 */
static int draw_expanded(const struct rmodel *m, const struct gview *whole, double budget,
                         struct strbuf *svg, struct strbuf *note)
{
	double deadline = now_s() + budget;
	struct strbuf why = STRBUF_INIT;
	struct gview each;
	gview_build(&each, m, 0, 0);
	gview_drop_far(&each);
	int r = gview_render_wide(&each, m, svg, budget, &why);
	int far = each.far;
	gview_release(&each);
	if (!r) {
		strbuf_addf(note,
		            "<span>the step drawn in full: <a href=\"graph-all.svg\">all %d "
		            "ops</a>, one box each, in step order (%d edges between ops far apart "
		            "in it left out; graph.dot has them)</span>",
		            m->nr_nodes, far);
		strbuf_release(&why);
		return 0;
	}
	strbuf_reset(svg);
	const char *how = "its small kernels collapsed";
	r = gview_render_budget(whole, m, NULL, svg, fmax(deadline - now_s(), 0.05), NULL);
	if (r) {
		struct gview named;
		gview_build_folded(&named, m, REPORT_SMALL_SHARE, 0, 1);
		strbuf_reset(svg);
		r = gview_render_budget(&named, m, NULL, svg, fmax(deadline - now_s(), 0.05), NULL);
		gview_release(&named);
		how = "its repeats folded by kernel name";
	}
	if (r)
		strbuf_addf(note,
		            "<span>the step's %d ops are too many to draw one box each (%s); "
		            "graph.dot has them all</span>",
		            m->nr_nodes, why.buf ? why.buf : "");
	else
		strbuf_addf(note,
		            "<span>the step's %d ops are too many to draw one box each (%s): "
		            "<a href=\"graph-all.svg\">graph-all.svg</a> draws it with %s; "
		            "graph.dot has them all</span>",
		            m->nr_nodes, why.buf ? why.buf : "", how);
	strbuf_release(&why);
	return r ? -1 : 0;
}

/* The one line said when a drawing is left out: what is drawn instead, and why. */
static void say_undrawn(const struct gview *all, const struct gview *top, const struct strbuf *why)
{
	if (top)
		warning("the whole step graph (%d boxes) is not drawn: %s; the "
		        "report draws the top %d view, graph.dot has the whole graph",
		        all->nr, why->buf, top->top_n);
	else
		warning("the step graph (%d boxes) is not drawn: %s; graph.dot "
		        "has it",
		        all->nr, why->buf);
}

int report_write_all(const char *dir)
{
	char *path = path_join(dir, "summary.json");
	cJSON *root = summary_read(path);
	free(path);
	if (!root)
		return -1;
	struct rmodel m;
	rmodel_init(&m, root);

	/* graph.dot: the whole graph, repeats not folded; the drawings: repeats folded. */
	int fold = m.nr_nodes > REPORT_FOLD_MIN ? GVIEW_FOLD_OPS : 0;
	struct gview whole, all, top;
	gview_build(&whole, &m, REPORT_SMALL_SHARE, 0);
	if (fold)
		gview_build_ops(&all, &m, REPORT_SMALL_SHARE, REPORT_BOXES_MAX);
	else
		gview_build_folded(&all, &m, REPORT_SMALL_SHARE, 0, 0);
	int want_top = all.nr > REPORT_TOP_MIN;

	struct strbuf dot = STRBUF_INIT, svg = STRBUF_INIT, top_svg = STRBUF_INIT;
	struct strbuf html = STRBUF_INIT, perfetto = STRBUF_INIT, why = STRBUF_INIT;
	struct strbuf top_why = STRBUF_INIT, each_svg = STRBUF_INIT, each_note = STRBUF_INIT;
	double budget = gview_layout_budget();
	int dot_ok = gview_render_budget(&whole, &m, &dot, NULL, budget, &why) == 0;
	strbuf_reset(&why);
	int top_ok = want_top && draw_top(&top, &m, fold, budget, &top_svg, &top_why) == 0;
	int graph_ok = gview_render_budget(&all, &m, NULL, &svg, budget, &why) == 0;
	if (graph_ok && gview_svg_width(svg.buf) > REPORT_FIT_PT) {
		/* too wide for its labels to stay legible at fit: one vertex a rank */
		struct strbuf narrow = STRBUF_INIT;
		all.column = 1;
		if (!gview_render_budget(&all, &m, NULL, &narrow, budget, NULL) &&
		    gview_svg_width(narrow.buf) < gview_svg_width(svg.buf)) {
			struct strbuf t = svg;
			svg = narrow;
			narrow = t;
		}
		strbuf_release(&narrow);
	}
	if (!graph_ok)
		say_undrawn(&all, top_ok ? &top : NULL, why.len ? &why : &top_why);
	else if (want_top && !top_ok)
		warning("the top %d view of the step graph is not drawn: %s", REPORT_TOP_N,
		        top_why.buf ? top_why.buf : "graphviz failed");
	if (all.ops)
		strbuf_addf(&each_note,
		            "<span>double border: the kernels of one op at one model line (or one "
		            "framework op), drawn as one box</span><span>#N: the kernel belongs to "
		            "finding #N; orange edge: a round trip through VRAM that the finding "
		            "saves</span><span>boxes in step order; %d edges between ops far apart "
		            "in it are not drawn</span>",
		            all.far);
	int each_ok = fold && (all.nr_folds || all.nr < whole.nr) &&
	              draw_expanded(&m, &whole, budget, &each_svg, &each_note) == 0;

	struct html_input in = {
	    .m = &m,
	    .summary_dir = dir,
	    .all = &all,
	    .all_svg = graph_ok ? svg.buf : NULL,
	    .top = top_ok ? &top : NULL,
	    .top_svg = top_ok ? top_svg.buf : NULL,
	    .graph_legend = each_note.len ? each_note.buf : NULL,
	};
	html_write(&in, &html);
	perfetto_write(&m, &perfetto);

	int r = write_out(dir, "report.html", &html);
	if (!r)
		r = write_out(dir, "trace.perfetto.json", &perfetto);
	if (!r && dot_ok)
		r = write_out(dir, "graph.dot", &dot);
	if (!r && (graph_ok || top_ok))
		r = write_out(dir, "graph.svg", graph_ok ? &svg : &top_svg);
	if (!r && each_ok)
		r = write_out(dir, "graph-all.svg", &each_svg);
	if (!r && !dot_ok)
		r = error("cannot write the step graph of '%s/summary.json' as DOT", dir);

	strbuf_release(&dot);
	strbuf_release(&svg);
	strbuf_release(&top_svg);
	strbuf_release(&html);
	strbuf_release(&perfetto);
	strbuf_release(&why);
	strbuf_release(&top_why);
	strbuf_release(&each_svg);
	strbuf_release(&each_note);
	if (want_top)
		gview_release(&top);
	gview_release(&all);
	gview_release(&whole);
	rmodel_release(&m);
	cJSON_Delete(root);
	return r;
}
