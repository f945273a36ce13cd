/*
 * job.h - one analysis for a whole multi-rank job, as a map and a reduce.
 *
 * The map (job.c) analyses one rank's trace on its own: the single-trace analysis
 * (analysis_run() on that one path, unchanged) plus a second streaming pass over the trace for
 * its collectives (the `comm` and `coll` records and NCCL's kernels) and the compute kernels
 * that ran beside them. It writes a small rank summary, DIR/rank-R.json, and, where asked, the
 * rank's full summary beside it (DIR/rank-R.summary.json).
 *
 * The reduce (jobmerge.c) reads rank summaries one at a time into compact arrays (never a
 * trace), matches collectives across ranks by communicator uid and sequence number, and writes
 * the job view into the lowest rank's full summary: summary.json's "job" object and
 * "comm-overlap" candidates (docs/summary-format.md, "The job view").
 *
 * job_run() drives both for `aicprof analyze A B ...`: the map in forked processes, at most
 * `jobs` at once (trace.c's per-line arena and cJSON's hooks are process-wide, so ranks are
 * analysed in processes, not threads: the same bound, and the same split a cluster's job runner
 * would make), then the reduce in the parent.
 */
#ifndef AICPROF_JOB_H
#define AICPROF_JOB_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct model;

/* Rounds (steps) of collectives a rank summary keeps: the last JOB_MAX_ROUNDS. */
#define JOB_MAX_ROUNDS 16

/*
 * The map: analyses the trace at path and writes DIR/<stem>.json (the rank summary) and, when
 * full is set, DIR/<stem>.summary.json (the single-trace summary.json of that rank), stem being
 * "rank-R" (R from the header) or, without a rank, "trace-<fallback>". Each file is written
 * whole or not at all. Returns 0, or -1 after error_at()/error() (a bad trace, an unwritable
 * DIR). A trace cut short is analysed up to the cut, with its warning kept.
 */
int job_map(const char *path, const char *dir, int full, long fallback);

/*
 * The rank summary of a model already built from the trace at path: re-reads the trace for its
 * collectives. Returns a new cJSON object the caller deletes, or NULL after error() when the
 * trace cannot be opened.
 */
struct cJSON *job_rank_summary(const struct model *m, const char *path);

/*
 * The reduce: reads the rank summaries (files written by job_map) and the full summary of the
 * lowest rank (the .summary.json beside its rank file), and writes outdir/summary.json with the
 * job view, whole or not at all. Returns 0, or -1 after error() naming the file at fault.
 */
int job_merge_files(char **rank_files, int n, const char *outdir);

/*
 * `aicprof analyze` of several traces: the map of each (processes, at most jobs at once; jobs
 * <= 0: one per online CPU) into outdir/ranks/, then the reduce into outdir/summary.json.
 * Returns 0 or -1 after an error naming the trace at fault.
 */
int job_run(char **paths, int n, const char *outdir, int jobs);

/* NCCL's bus-bandwidth factor for op (trace spelling, "AllReduce") over nranks: AllReduce
 * 2(n-1)/n, AllGather/ReduceScatter/AllToAll (n-1)/n, others 1. */
double job_busbw_factor(const char *op, int nranks);

/* The bytes algBw counts for op: AllGather and ReduceScatter move nranks x the per-rank bytes
 * the trace gives; others the trace's bytes. */
double job_alg_bytes(const char *op, double bytes, int nranks);

/*
 * Reads op ("AllReduce") and dtype ("bf16", or "" where the name has none) from an NCCL
 * kernel's name, mangled or not: ncclDevKernel_<Op>_<RedOp>_<type>_<algo>_<proto> (2.19+),
 * ncclKernel_<Op>_<algo>_<proto>_<RedOp>_<type> (older). Returns 1 for an NCCL kernel (op
 * "Collective" when the name says no operation), 0 for any other name.
 */
int job_nccl_name(const char *name, char *op, size_t opsz, char *dtype, size_t dtsz);

/*
 * The part of [s, e) covered by the union of the sorted, disjoint intervals us[2i]..us[2i+1]
 * (n intervals), in the intervals' unit.
 */
int64_t job_covered(int64_t s, int64_t e, const int64_t *us, long n);

#endif
