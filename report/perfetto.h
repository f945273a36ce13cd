/*
 * perfetto.h - the representative step's timeline (summary.timeline) in the Chrome trace event
 * format, which ui.perfetto.dev and chrome://tracing load.
 */
#ifndef AICPROF_REPORT_PERFETTO_H
#define AICPROF_REPORT_PERFETTO_H

#include "report/model.h"

/*
 * Appends to out a JSON object {"traceEvents": [...], "displayTimeUnit": "ns", ...}: "M"
 * metadata events naming the process (the program) and one thread per stream ("stream 7"),
 * then one "X" complete event per timeline event, ts and dur in microseconds from the step's
 * start, tid the stream, args holding the node id, kind, family, bytes and source. Events
 * without a start are skipped; a missing timeline gives an empty traceEvents with the process
 * name only. Never fails.
 */
void perfetto_write(const struct rmodel *m, struct strbuf *out);

#endif
