/*
 * runtl.h - the whole run's timeline (runtl.c): every kernel, copy and memset with its GPU
 * times, NVTX ranges and host API spans, gathered in the analyzer's one pass over the trace and
 * written as summary.json's timeline.run for the Perfetto export (report/perfetto.c).
 */
#ifndef AICPROF_RUNTL_H
#define AICPROF_RUNTL_H

#include "lib/trace.h"

#include <cJSON.h>
#include <stdint.h>

/* Events kept, all kinds together; later ones are counted as dropped (docs/report.md). */
#define RUNTL_CAP 100000

struct runtl;

/* A new, empty run timeline (free with runtl_free(); NULL is allowed there). Never fails. */
struct runtl *runtl_new(void);
/* The trace reader's consumer that fills rt (it never fails: bad fields skip the record). */
struct trace_consumer runtl_consumer(struct runtl *rt);
/*
 * The object {"cap", "dropped": {...}, "names": [...], "gpu": [[kind, stream, start_us, dur_us,
 * name], ...], "host": [[tid, start_us, dur_us, name], ...], "nvtx": [[tid, start_us, dur_us,
 * name, depth], ...]} with times in microseconds from t0_ns (GPU clock; host times moved onto
 * it by the header's clock_sync), kind 0 kernel, 1 copy, 2 memset, name an index into names.
 * New cJSON tree owned by the caller. Never fails.
 */
cJSON *runtl_json(const struct runtl *rt, int64_t t0_ns);
void runtl_free(struct runtl *rt);

#endif
