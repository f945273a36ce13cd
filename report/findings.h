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

/*
 * Where finding c's model line is in a library function that summary.json's functions[]
 * (analyzer/funcgroup.c) lists, appends to o (HTML) how aicprof_fused.apply() replaces that
 * whole function at run time (its generated group, or the library's own form such as SDPA) and
 * that the patch adds the two lines to the program's script. functions may be NULL. Never fails.
 */
void finding_package(struct strbuf *o, const struct cJSON *functions, const struct cJSON *c);

#endif
