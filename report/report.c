/*
 * report.c - report_write_all(): load summary.json, build the model and the graph views, render
 * each output into memory, then write each file atomically.
 *
 * The graph: small kernels (under 1% of the step) are collapsed in every view; when more than
 * REPORT_TOP_MIN vertices remain, the page also gets a top-N view (the REPORT_TOP_N heaviest
 * vertices, their neighbours and the candidates' nodes), shown first. graph.dot and graph.svg
 * hold the full collapsed graph.
 */
#include "report/report.h"
#include "lib/summary.h"
#include "report/graph.h"
#include "report/html.h"
#include "report/model.h"
#include "report/perfetto.h"

#include <stdlib.h>
#include <string.h>

#define REPORT_SMALL_SHARE 0.01
#define REPORT_TOP_N       30
#define REPORT_TOP_MIN     60

static int write_out(const char *dir, const char *name, const struct strbuf *sb)
{
	char *path = path_join(dir, name);
	int r = write_file_atomic(path, sb->buf ? sb->buf : "", sb->len);
	free(path);
	return r;
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

	struct gview all, top;
	gview_build(&all, &m, REPORT_SMALL_SHARE, 0);
	int want_top = all.nr > REPORT_TOP_MIN;
	if (want_top)
		gview_build(&top, &m, REPORT_SMALL_SHARE, REPORT_TOP_N);

	struct strbuf dot = STRBUF_INIT, svg = STRBUF_INIT, top_svg = STRBUF_INIT;
	struct strbuf html = STRBUF_INIT, perfetto = STRBUF_INIT;
	int graph_ok = gview_render(&all, &m, &dot, &svg) == 0;
	int top_ok = want_top && graph_ok && gview_render(&top, &m, NULL, &top_svg) == 0;

	struct html_input in = {
	    .m = &m,
	    .summary_dir = dir,
	    .all = &all,
	    .all_svg = graph_ok ? svg.buf : NULL,
	    .top = top_ok ? &top : NULL,
	    .top_svg = top_ok ? top_svg.buf : NULL,
	};
	html_write(&in, &html);
	perfetto_write(&m, &perfetto);

	int r = write_out(dir, "report.html", &html);
	if (!r)
		r = write_out(dir, "trace.perfetto.json", &perfetto);
	if (!r && dot.len)
		r = write_out(dir, "graph.dot", &dot);
	if (!r && graph_ok)
		r = write_out(dir, "graph.svg", &svg);
	if (!r && (!graph_ok || !dot.len))
		r = error("cannot draw the step graph of '%s/summary.json': graph.svg not written",
		          dir);

	strbuf_release(&dot);
	strbuf_release(&svg);
	strbuf_release(&top_svg);
	strbuf_release(&html);
	strbuf_release(&perfetto);
	if (want_top)
		gview_release(&top);
	gview_release(&all);
	rmodel_release(&m);
	cJSON_Delete(root);
	return r;
}
