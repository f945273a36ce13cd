/*
 * trace.h - the analyzer's consumers of the trace reader (lib/trace.h): the graph builder
 * (builder.h) and the memory plan's log (memplan.c), both fed in the one pass that
 * analysis_run() (summary.c) makes over each trace. Not for other stages: they use model.h.
 */
#ifndef AICPROF_TRACE_H
#define AICPROF_TRACE_H

#include "analyzer/model.h"
#include "lib/trace.h"

struct cJSON;
struct builder;
struct memlog;

/* A builder for one trace; file names the trace in messages. Free with builder_free(). */
struct builder *builder_new(const char *file, struct trace_info *ti, struct device_info *dev);
/*
 * Takes one record, parsed from raw[0..rawlen) (the line's text, for exact integers), with its
 * line number for messages. Copies what it keeps. Returns 0 or -1 after error_at().
 */
int builder_record(struct builder *b, const struct cJSON *rec, const char *raw, size_t rawlen,
                   long line);
/*
 * Ends the trace: folds the remaining steps and fills m's steps, nodes, edges, values and
 * timeline from the dominant step class. Returns 0 or -1.
 */
int builder_finish(struct builder *b, struct model *m);
void builder_free(struct builder *b);

/*
 * The memory plan's log of one trace: the alloc, free, sync, memcpy and host-device copy
 * records memplan_compute() needs, kept compactly (about 40 bytes a record) while the trace is
 * read, since the captured step's window is known only once the graph is built. memlog_new()
 * returns an empty log (free with memlog_free()); memlog_consumer() is the reader's consumer
 * that fills it (it never fails).
 */
struct memlog *memlog_new(void);
struct trace_consumer memlog_consumer(struct memlog *ml);
void memlog_free(struct memlog *ml);

#endif
