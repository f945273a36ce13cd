/*
 * summary.h - THE reader of summary.json (docs/summary-format.md) and of the job view's rank
 * summaries (rank-R.json): one bounded parse, then a check against the schema table in
 * summary.c before any consumer sees the tree.
 *
 * The check refuses, by name and with the JSON path: a top level that is not an object, a
 * trace given as a summary (records with "t"), a missing or non-integer "format", a format
 * newer than this aicprof's ("'X': summary format 2 is newer than this aicprof (1)"), a
 * required key that is absent, a key of the wrong type, and a number out of its range (a
 * negative count, 1e300 as an id) before anything converts it to an integer. Keys the table
 * does not name are not checked (fields may be added without a version change).
 */
#ifndef AICPROF_SUMMARY_H
#define AICPROF_SUMMARY_H

#include "lib/util.h"

#include <cJSON.h>

/* The summary format this aicprof writes and the newest it reads. */
#define SUMMARY_FORMAT 1

enum summary_kind {
	SUMMARY_RUN,  /* summary.json of `aicprof analyze` (a job's included) */
	SUMMARY_RANK, /* ranks/rank-R.json, the map's output of a multi-rank job */
};

/*
 * Checks root against kind's schema; path names the file in the message. Returns 0, or -1 with
 * one message ("'path': candidates[3].id must be an integer in [0, 2147483647], not 1e+300")
 * appended to err when err is not NULL, else printed with error().
 */
int summary_check(const cJSON *root, const char *path, enum summary_kind kind, struct strbuf *err);

/*
 * Reads, parses and checks the file at path. Returns the tree (the caller frees it with
 * cJSON_Delete), or NULL with the message (the file's, json_parse_file's or summary_check's)
 * in err when err is not NULL, else printed with error().
 */
cJSON *summary_read_kind(const char *path, enum summary_kind kind, struct strbuf *err);

/* summary_read_kind(path, SUMMARY_RUN, NULL): NULL after error(). */
cJSON *summary_read(const char *path);

/* The candidate kinds that are findings but no fusion (the report's, not fuse's): dead,
 * invariant and memory, in that order. */
extern const char *const summary_notfusion_kinds[3];

/*
 * What the summary's fusion findings take off the GPU's own busy time a step, as fuse's
 * host-bound note and the report's lead both say it: the kernel_saved_us of each candidate
 * whose time_kind is "gpu" and whose kind is a fusion (not dead, invariant, memory, nor
 * comm-overlap, a change of schedule), in the candidates' order, skipping one that shares a
 * node with a candidate already counted (the headline's rule), the sum at most busy_us.
 * *lib_us (when not NULL) gets the part of it with a library_form, at most the sum. each
 * (when not NULL, at least as long as the candidates array) gets at each candidate's index
 * what it counted (its kernel_saved_us, up to 1e12), else 0. root: a checked summary; missing
 * or bad fields count nothing. Returns the sum, 0 when none; allocates only while it runs.
 */
double summary_gpu_saved(const cJSON *root, double busy_us, double *lib_us, double *each);

#endif
