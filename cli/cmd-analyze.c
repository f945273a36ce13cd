/*
 * cmd-analyze.c - `aicprof analyze TRACE... [-o DIR]`: analyses the traces (ranks of one job)
 * and writes DIR/summary.json (default DIR: aicprof-out), then the report beside it from that
 * file (report.html, graph.dot, graph.svg, trace.perfetto.json; --no-report skips them). Each
 * output is written whole or not at all, and only into DIR: nothing in a trace names a path.
 *
 * Several traces are the ranks of one job (job.h): each is analysed on its own in a process of
 * its own (-j at once) into DIR/ranks/, then merged into DIR/summary.json with the job view.
 * --rank-summary runs only the map (DIR gets rank-R.json and rank-R.summary.json per trace);
 * --merge runs only the reduce over such rank files. One trace takes the single-trace path.
 *
 * A trace of "-" is standard input (a pipe, `zcat run.aicp.jsonl.gz | aicprof analyze -`): the
 * single-trace path reads it once; the job view reads each trace twice and in a process of its
 * own, so there "-" is refused.
 */
#include "aicprof.h"
#include "analyzer/job.h"
#include "analyzer/jobcheck.h"
#include "analyzer/model.h"
#include "lib/lock.h"
#include "lib/parseopt.h"
#include "lib/util.h"
#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const analyze_usage[] = {
    "aicprof analyze [-o DIR] [-q] [-j N] TRACE...",
    "aicprof analyze --rank-summary [-o DIR] TRACE...",
    "aicprof analyze --merge [-o DIR] RANKFILE...",
    NULL,
};

int cmd_analyze(int argc, char **argv)
{
	const char *out = "aicprof-out";
	int report = 1, map = 0, merge = 0, jobs = 0;
	const struct parseopt options[] = {
	    OPT_PATH('o', "output", &out, "DIR", "write DIR/summary.json (default: aicprof-out)"),
	    OPT_FLAG('q', "quiet", &util_quiet, "no warnings"),
	    OPT_INT('j', "jobs", &jobs, "N", 1, 1024,
	            "analyse at most N ranks at once (default: one per CPU)"),
	    OPT_SET_INT(0, "no-report", &report, 0, "summary.json only"),
	    OPT_FLAG(0, "rank-summary", &map,
	             "the map of a job: DIR/rank-R.json and rank-R.summary.json per trace"),
	    OPT_FLAG(0, "merge", &merge,
	             "the reduce of a job: rank-R.json files (rank-R.summary.json beside\n"
	             "the lowest)"),
	    OPT_END(),
	};
	int npaths = parse_options(argc, argv, options, analyze_usage, 0);
	if (!npaths) {
		error("no trace to analyse");
		usage_with_options(analyze_usage, options);
	}
	/* a copy: the code below owns it */
	char **paths = xcalloc(npaths, sizeof(char *));
	memcpy(paths, argv, npaths * sizeof(char *));
	for (int i = 0; i < npaths; i++)
		if (!strcmp(paths[i], "-") && (npaths > 1 || map || merge)) {
			error("'-' (standard input) can only be the one trace of a single-trace "
			      "analysis");
			free(paths);
			return 129;
		}
	if (map && merge) {
		free(paths);
		error("'--rank-summary' and '--merge' are the two halves of a job; give one");
		return 129;
	}
	/* one job's traces only; then one run at a time in DIR (lib/lock.h) */
	if ((!merge && npaths > 1 && job_check(paths, npaths) < 0) || mkdir_p(out) < 0 ||
	    outdir_lock(out) < 0) {
		free(paths);
		return 1;
	}
	if (map) {
		int r = 0;
		for (int i = 0; i < npaths && r == 0; i++)
			r = job_map(paths[i], out, 1, i);
		free(paths);
		return r < 0 ? 1 : 0;
	}
	if (merge || npaths > 1) {
		int r =
		    merge ? job_merge_files(paths, npaths, out) : job_run(paths, npaths, out, jobs);
		free(paths);
		if (r == 0 && !util_quiet) {
			char *p = path_join(out, "summary.json");
			fprintf(stderr, "aicprof: job of %d ranks -> %s\n", npaths, p);
			free(p);
		}
		if (r == 0 && report)
			r = report_write_all(out);
		return r < 0 ? 1 : 0;
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
			fprintf(stderr,
			        "aicprof: %d steps (%s), %d nodes, %d findings (patterns of %d "
			        "candidates) -> %s\n",
			        m->nsteps, m->steps_how, m->nnodes, m->npats ? m->npats : m->ncands,
			        m->ncands, p);
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
