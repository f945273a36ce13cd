/*
 * lead.h - the lead of the report page: before the findings, whether the GPU is busy or idle
 * for most of the step, the likely cause as the trace shows it, and the remedies with an
 * estimate (report/lead.c).
 */
#ifndef AICPROF_REPORT_LEAD_H
#define AICPROF_REPORT_LEAD_H

#include "lib/util.h"
#include "report/model.h"

/*
 * Appends the lead section (a <section id="lead">, every string from the summary escaped) to
 * o, from the summary's timeline (one captured step) and host-sync findings. Writes nothing
 * when the timeline has no events. Every figure is bounded: busy and idle never exceed the
 * step. Never fails.
 */
void report_lead_section(const struct rmodel *m, struct strbuf *o);

#endif
