/*
 * job.h - the report's view of a multi-rank job (report/job.c): summary.json's "job" object as
 * a section of report.html and as one Perfetto process per rank.
 */
#ifndef AICPROF_REPORT_JOB_H
#define AICPROF_REPORT_JOB_H

#include "lib/util.h"
#include "report/model.h"

/* 1 when the summary holds a job view ("job" object), else 0. */
int report_has_job(const struct rmodel *m);

/*
 * Appends the job section's body (HTML, every string from the summary escaped) to o: the
 * verdict (slowest rank and why, exposed communication per step), the straggler table, the
 * slowest rank's extra kernels, the collectives table, the overlap chart per step and the
 * per-rank lanes (inline SVG), and the early-start table. Missing parts are said to be
 * missing. Never fails.
 */
void report_job_section(const struct rmodel *m, struct strbuf *o);

/*
 * Adds to the Chrome trace event array events one process per rank lane of job.lanes
 * (pid JOB_PID_BASE + rank, named "rank R (one step)", sorted by rank; one thread per stream),
 * each rank's representative step from its own start. Nothing without a job view.
 */
#define JOB_PID_BASE 1000000
void report_job_perfetto(const struct rmodel *m, struct cJSON *events);

#endif
