/*
 * cmd-analyze.c - `aicprof analyze TRACE... [-o DIR]`: analyses the traces (ranks of one job)
 * and writes DIR/summary.json (default DIR: aicprof-out), then the report beside it from that
 * file (report.html, graph.dot, graph.svg, trace.perfetto.json; --no-report skips them). Each
 * output is written whole or not at all, and only into DIR: nothing in a trace names a path.
 */
#include "aicprof.h"
#include "analyzer/model.h"
#include "analyzer/util.h"
#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] = "usage: aicprof analyze [-o DIR] [-q] TRACE...\n"
                                 "\n"
                                 "  -o DIR   write DIR/summary.json (default: aicprof-out)\n"
                                 "  -q       no warnings\n"
                                 "  --no-report  summary.json only\n";

int cmd_analyze(int argc, char **argv)
{
	const char *out = "aicprof-out";
	char **paths = xcalloc(argc, sizeof(char *));
	int npaths = 0, opts = 1, report = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (opts && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			fputs(usage_text, stdout);
			free(paths);
			return 0;
		} else if (opts && !strcmp(a, "-o")) {
			if (i + 1 >= argc) {
				error("option '-o' needs a directory");
				free(paths);
				return 129;
			}
			out = argv[++i];
		} else if (opts && !strncmp(a, "-o", 2)) {
			out = a + 2;
		} else if (opts && !strcmp(a, "--no-report")) {
			report = 0;
		} else if (opts && !strcmp(a, "-q")) {
			util_quiet = 1;
		} else if (opts && !strcmp(a, "--")) {
			opts = 0;
		} else if (opts && a[0] == '-' && a[1]) {
			error("unknown option '%s'", a);
			fputs(usage_text, stderr);
			free(paths);
			return 129;
		} else {
			paths[npaths++] = argv[i];
		}
	}
	if (!npaths) {
		fputs(usage_text, stderr);
		free(paths);
		return 129;
	}
	struct model *m = analysis_run(paths, npaths);
	free(paths);
	if (!m)
		return 1;
	int r = mkdir_p(out);
	if (r == 0) {
		char *p = path_join(out, "summary.json");
		r = summary_write(m, p);
		if (r == 0 && !util_quiet)
			fprintf(stderr, "aicprof: %d steps (%s), %d nodes, %d candidates -> %s\n",
			        m->nsteps, m->steps_how, m->nnodes, m->ncands, p);
		free(p);
	}
	model_free(m);
	if (r == 0 && report) {
		r = report_write_all(out);
		if (r == 0 && !util_quiet) {
			char *h = path_join(out, "report.html");
			fprintf(stderr, "aicprof: report -> %s\n", h);
			free(h);
		}
	}
	return r < 0 ? 1 : 0;
}
