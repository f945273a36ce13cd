/*
 * findings.h - per-finding text of the report: number, collapsed or full, what to do
 * (report/findings.c).
 */
#ifndef AICPROF_REPORT_FINDINGS_H
#define AICPROF_REPORT_FINDINGS_H

#include "lib/util.h"
#include "report/model.h"

/*
 * Why finding c (a candidates[] entry) goes to the collapsed table: a static string (unproven,
 * not actionable, too small, a memory finding), or NULL when it is shown in full.
 */
const char *finding_minor(const struct cJSON *c);

/* Finding c's number: its summary "number", else k + 1 (its place in the report). */
int finding_number(const struct cJSON *c, int k);

/*
 * Appends to o (HTML, every summary string escaped) what to do about finding c, numbered num,
 * as `aicprof fuse` will act on it. Never fails.
 */
void finding_todo(struct strbuf *o, const struct cJSON *c, int num);

#endif
