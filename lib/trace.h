/*
 * trace.h - the analyzer's internal interfaces between the trace reader (trace.c), the graph
 * builder (graph.c) and the model (model.h). Not for other stages: they use model.h.
 */
#ifndef AICPROF_TRACE_H
#define AICPROF_TRACE_H

#include "analyzer/model.h"

struct cJSON;
struct builder;

/*
 * Reads the trace at path line by line, parsing each line with cJSON (on a per-line arena, so
 * nothing is allocated per record) and handing each record to builder_record(). A last line
 * that is cut short (no '\n', or not JSON) is a warning, recorded in *ti, and ends the read.
 * Returns 0, or -1 after error_at() for a bad line or record (the builder's errors included).
 * Memory: one line at a time plus what the builder keeps.
 */
int trace_read(const char *path, struct builder *b, struct trace_info *ti);

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

#endif
