/*
 * html.h - report.html: one self-contained page (inline CSS, script, SVG; no fetch of any
 * kind) in six sections, biggest question first: overview, fusion candidates, step graph,
 * VRAM ledger with roofline, source lines, one step's timeline.
 */
#ifndef AICPROF_REPORT_HTML_H
#define AICPROF_REPORT_HTML_H

#include "report/graph.h"
#include "report/model.h"

struct html_input {
	struct rmodel *m;
	const char *summary_dir; /* where summary.json lives: a place to look for sources */
	const struct gview *all; /* the collapsed step graph */
	const char *all_svg;     /* its SVG from gview_render(), or NULL */
	const struct gview *top; /* the top-N view, or NULL when it would equal all */
	const char *top_svg;
	const char *graph_legend; /* HTML: <span>s added to the drawing's legend, or NULL */
};

/*
 * Appends the page to out. Every string from the summary is escaped (strbuf_add_html in markup,
 * strbuf_add_json in the JSON data block); the inline style and script are allowed by the
 * page's Content-Security-Policy through their SHA-256 hashes and nothing else is. Fields
 * the summary lacks show as "unknown" and are listed in a note at the top. Never fails.
 */
void html_write(const struct html_input *in, struct strbuf *out);

/* Appends the SVG text with everything before "<svg" (XML prolog, DOCTYPE, comments) removed. */
void html_add_svg_body(struct strbuf *out, const char *svg);

#endif
