/*
 * perfetto.h - the run's timeline (summary.timeline) in the Chrome trace event format, which
 * ui.perfetto.dev and chrome://tracing load.
 */
#ifndef AICPROF_REPORT_PERFETTO_H
#define AICPROF_REPORT_PERFETTO_H

#include "report/model.h"

/*
 * Appends to out a JSON object {"traceEvents": [...], "displayTimeUnit": "ns", "metadata":
 * {...}}: with summary.timeline.run, the whole run as four processes (steps, GPU streams, NVTX
 * ranges and host API calls per OS thread, "M" events naming each process and thread, "X"
 * slices, ts and dur in microseconds), and "s"/"f" flow pairs from each writer kernel of the
 * representative step to its readers; without it, the representative step alone as before.
 * metadata says what the event cap dropped (and a warning on stderr does, when anything was).
 * Never fails.
 */
void perfetto_write(const struct rmodel *m, struct strbuf *out);

#endif
