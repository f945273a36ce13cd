/*
 * model.h - the analyzer's model of one program's run, in memory: the step graph (one node per
 * kernel/copy/set position in a steady step, with duration statistics over all steps), its
 * edges and values (buffer versions), the VRAM ledger, the fusion candidates and the rejected
 * groups, and one representative step's timeline. summary.c writes it as summary.json (see
 * docs/summary-format.md, which is the contract); report/ and fusion/ may also link against it.
 *
 * Building: analysis_run() reads each trace once with trace_read() (lib/trace.c), which streams
 * records into a graph builder (builder.h: parse, flow, steps, fold) and the memory plan's
 * log (memplan.c); ledger_compute() (ledger.c)
 * and candidates_find() (candidates.c) fill in the rest. Everything a model holds is owned by
 * it and released by model_free().
 */
#ifndef AICPROF_MODEL_H
#define AICPROF_MODEL_H

#include "analyzer/offcalc.h"
#include "analyzer/semantics.h"

#include <stdint.h>

enum node_kind { NK_KERNEL, NK_COPY, NK_SET };

/* How an edge (or a pointer role) was inferred; names as in summary.json. */
enum edge_how { HOW_FRESH, HOW_SEMANTICS, HOW_CALIBRATED, HOW_CONSERVATIVE, HOW_STREAM, HOW_EVENT };
const char *edge_how_name(enum edge_how h);
const char *node_kind_name(enum node_kind k);

#define NODE_FP 8 /* pointer entries per node whose fingerprints are kept */

/* A source line: file and function owned (file NULL: none). */
struct lineref {
	char *file, *func;
	int line;
};

/* One position of the step graph. Durations are in microseconds. */
#define NODE_PARAM_TAIL 255 /* the 8 bytes after a large parameter's last device pointer */
#define NODE_PARAM_HIGH 254 /* bytes 8..11 of a parameter of 9 to 12 bytes */

struct node {
	int id;
	enum node_kind kind;
	char *name, *full_name; /* short demangled, demangled; owned */
	struct op_sem sem;      /* family, op, dtype (static strings) */
	int stream;             /* CUPTI stream id, -1 unknown */
	int grid[3], block[3];
	char *source;                /* "train.py:13" or NULL; owned */
	char *site_file, *site_func; /* innermost user frame, owned, may be NULL */
	int site_line;
	long numel; /* first scalar argument (elementwise N), -1 unknown */
	long count; /* steps in which the node ran (its duration samples) */
	double median_us, min_us, max_us;
	uint64_t bytes_read, bytes_written;
	double flops;          /* 0 when unknown */
	const char *flops_how; /* static: "numel", "operand extents"; NULL unknown (ledger.c) */
	double achieved_gbs, intensity, roofline_us;
	const char *bound; /* "memory", "compute" or "latency" */
	int claimed;       /* candidate id that holds it, -1 none (candidates.c) */
	/* the captured launch's scalar parameters (at most 8 bytes, as the trace's "v"), in
	 * parameter order: what fusegroup.c reads a dropout's keep probability or a layer norm's
	 * N and eps from; and, of a large one, the 8 bytes after its last device pointer (the
	 * trace's "a", size NODE_PARAM_TAIL): in a legacy elementwise loop's closure, the
	 * functor with its scalars */
	struct node_param {
		short arg;          /* kernel parameter index */
		unsigned char size; /* bytes, or NODE_PARAM_TAIL */
		uint64_t raw;       /* the bytes, little-endian */
	} params[8];
	int nparams;
	int reads[8]; /* values it reads, in the order of its pointer arguments (first 8) */
	/* ATen's strided loop: its offset calculator, read from the closure bytes the trace
	 * kept ("x"; offcalc.c), when has_oc */
	int has_oc;
	struct offcalc oc;
	int nreads;
	uint64_t seq; /* trace `seq` of the captured step's op (memplan.c's window) */
	int site_id;  /* the trace's site id of the captured op, -1 none (lines.c) */
	/* launched inside autograd: an inherited site ("inh": an autograd thread's launch) or a
	 * site whose frames pass through torch/autograd/ (backward()'s seed gradient) */
	int autograd;
	/* calibration fingerprints (probe records) of the allocations its first NODE_FP pointer
	 * entries fall in, read after the launch, over the steps of its class: fp_buffer[k] the
	 * allocation in the captured step, fp_steps[k] the steps with a fingerprint, fp_differ[k]
	 * 1 when two of them differ; invariant.c confirms with them */
	long fp_buffer[NODE_FP];
	unsigned short fp_steps[NODE_FP];
	unsigned char fp_differ[NODE_FP];
	int nfp;
	/* lines.c: the model's own line (innermost frame outside torch), the user's line
	 * (innermost "user" frame) and the torch op it went through; model_derived 1 when the
	 * model line was taken from the forward node (a value's writer or its one other
	 * function's reader) of a value a backward kernel reads */
	struct lineref model_site, user_site;
	struct lineref own_site; /* the model line of the node's own frames (before derivation) */
	char *torch_op;          /* owned, NULL unknown */
	int model_derived;
};

struct edge {
	int from, to, value; /* node ids; value id or -1 (stream order, event) */
	uint64_t bytes;
	enum edge_how how;
};

struct value {
	int id;
	long buffer;     /* allocation id */
	uint64_t offset; /* where it starts in that allocation */
	uint64_t size;   /* bytes of the allocation from the written offset */
	int writer;      /* node id, -1: written before the step (or never seen written) */
	int *readers;    /* node ids inside the step, in order; owned */
	int nreaders;
	uint64_t bytes_written, bytes_read; /* per step */
	int intermediate;    /* written and read inside the step, not read after it */
	int live_after_step; /* read after the step ended */
	int dead_in_step;    /* freed or overwritten before the step ended */
	enum edge_how how;   /* how its writer was found to write it */
	long written_ago;    /* inputs (writer -1): ops from its last write to the step's first
	                      * op; -1 never seen written (from before the trace, or a fill) */
};

struct candidate {
	int id;
	const char *kind; /* static: "elementwise-chain", ... */
	int *nodes, nnodes;
	int *removed, nremoved;
	int *kept, nkept;
	uint64_t bytes_saved;
	double before_us, after_us, saved_us;
	const char *library_form; /* static or NULL */
	char *why;                /* owned */
	void *group;              /* cJSON object (owned), the fusion group description */
	char *group_why;          /* owned: why group is NULL, or NULL */
	void *evidence;           /* cJSON object (owned) or NULL: dead/invariant/memory proof */
};

/*
 * A finding as a pattern (pattern.c): candidates with the same kind, ops, dtypes, shape class
 * and model line folded into one; totals are sums over the occurrences (one step's).
 */
struct pattern {
	char *key;  /* owned */
	int *cands; /* candidate indices (m->cands), in step order; owned */
	int ncands; /* occurrences per step */
	int rep;    /* the representative occurrence (largest bytes saved, then earliest) */
	uint64_t bytes_saved;
	double before_us, after_us, saved_us;
};

struct rejected {
	int *nodes, nnodes;
	const char *kind;
	char *reason; /* owned */
};

struct tl_event {
	int node;
	int stream;
	double start_us, dur_us;
};

struct trace_info {
	char *path;
	long pid, rank; /* rank -1 when absent */
	char *program;  /* argv joined by spaces; owned */
	char *cwd;      /* the program's working directory (header "cwd"), or NULL; owned */
	int truncated;
	char end_reason[24]; /* the end line's reason ("cap", "duration", ...), "" without one */
	long end_dropped;    /* the end line's dropped records, -1 when unknown */
	long capture_ranges; /* ranges recorded between cudaProfilerStart and Stop (0: none) */
	long records, kernels;
	char **warnings;
	int nwarnings;
	int steps, warmup;
	double step_median_us;
};

struct device_info {
	char *name, cc[16];
	int sm_count;
	double peak_bw_gbs;
	double tflops_fp32, tflops_bf16, tflops_fp16, tflops_tf32;
};

struct model {
	struct trace_info *traces;
	int ntraces;
	struct device_info dev;

	/* steps */
	int nsteps, warmup, period;
	const char *steps_how; /* "nvtx", "periodic", "whole" */
	char *step_key;        /* NVTX text pattern of the step range, or NULL */
	double step_median_us, step_p10_us, step_p90_us;
	double *step_us;                /* every step's time, in order; owned */
	int64_t *step_t0_ns;            /* every step's GPU start (INT64_MAX none); owned */
	long outside_ops;               /* ops that ran outside every step */
	double steps_confidence;        /* how sure the steps are, in [0, 1] (NVTX: 1, whole: 0) */
	char steps_reason[256];         /* how they were found, in words */
	long prelude_ops, epilogue_ops; /* periodic: ops before the first, after the last step */

	struct node *nodes;
	int nnodes;
	struct edge *edges;
	int nedges;
	struct value *values;
	int nvalues;

	/* ledger (ledger.c) */
	struct {
		uint64_t bytes_read, bytes_written, roundtrip_bytes;
		double kernel_us, copy_us;
	} per_step;

	struct candidate *cands;
	int ncands;
	struct pattern *pats; /* the candidates folded, ranked by bytes saved (pattern.c) */
	int npats;
	struct rejected *rejs;
	int nrejs;

	int tl_step;
	int64_t tl_t0_ns;
	struct tl_event *tl;
	int ntl;
	struct runtl *run; /* the whole run's timeline (runtl.h); owned, NULL none */

	/* beyond fusion (deadwork.c, invariant.c, memplan.c) */
	uint64_t cap_seq_end; /* seq of the first op after the captured step; UINT64_MAX none */
	struct memplan *mem;  /* owned, NULL when not computed */
	struct timemodel *tm; /* owned, NULL when not computed (timemodel.c) */
};

/*
 * Analyses the traces (ranks of one job) and returns a new model the caller frees with
 * model_free(); the model is that of the first trace (lowest rank), the others are analysed
 * and listed in traces[]. Returns NULL after error_at() naming file and line when a trace is
 * bad (unreadable, malformed record, format too new). Warnings (a cut-short last line) are
 * printed and kept in traces[].warnings.
 */
struct model *analysis_run(char **paths, int npaths);

/* Fills per node bytes, bandwidth, roofline, and the model's per_step ledger. */
void ledger_compute(struct model *m);

/* Finds fusion candidates and rejected groups in the step graph. Needs ledger_compute(). */
void candidates_find(struct model *m);

/*
 * The fusion group description of candidate c (fusegroup.c), a new cJSON object the caller
 * deletes; or NULL with *why a new string (caller frees): why the candidate has none.
 */
struct cJSON *fusegroup_build(const struct model *m, const struct candidate *c, char **why);

/* Helpers of group building that funcgroup.c shares (fusegroup.c): a scalar parameter's raw
 * bytes by parameter index and size (returns 0 when the trace has none); the float with those
 * bits; node n's result, the largest value it writes (dropout's output over its mask, layer
 * norm's Y over mean and rstd), -1 when it writes none. */
int fusegroup_param(const struct node *n, int arg, int size, uint64_t *raw);
/* The same lookup over any array of parameters (a node's, or flow.c's launch record's). */
int node_param_find(const struct node_param *p, int np, int arg, int size, uint64_t *raw);
float fusegroup_f32(uint32_t bits);
int fusegroup_result(const struct model *m, int n);
/* Whether a value of size bytes, its extent bounded by its allocation, can hold a tensor of
 * bytes bytes: the same size, or a block of PyTorch's caching allocator rounded up from it (to
 * 512 bytes; above 1 MiB by up to 1 MiB more, a rest the allocator does not split off). */
int fusegroup_block_holds(uint64_t size, uint64_t bytes);
/* The element size (1, 2 or 4) of a tensor of n elements that a value of size bytes holds,
 * exactly or as such a block; 0 when none or two fit. */
int fusegroup_elem_size(uint64_t size, uint64_t n);

/* Writes the model as JSON (summary.json) to path, whole or not at all. Returns 0 or -1. */
int summary_write(const struct model *m, const char *path);

/* The summary as a new cJSON object the caller deletes (cJSON_Delete). */
struct cJSON *summary_json(const struct model *m);

void model_free(struct model *m);

/*
 * The site records of a trace, collected by lines_consumer() during the one read of the trace
 * (summary.c), each reduced to its model line, user line and torch op (lines_pick()).
 */
struct lines_sites;
struct lines_sites *lines_sites_new(void);
void lines_sites_free(struct lines_sites *ls);
struct trace_consumer lines_consumer(struct lines_sites *ls);

/*
 * Fills each node's model_site, user_site, own_site and torch_op from the site of its captured
 * op (node->site_id) in ls, then attributes backward kernels through the data flow (lines.c's
 * header). Returns 0; never reads the trace again.
 */
int lines_resolve(struct model *m, const struct lines_sites *ls);

/*
 * The lines of one site record's frames (innermost first): into *model the innermost frame
 * outside torch's own modules, into *user the innermost frame with "user": true, into *op a
 * new string, the innermost torch frame's function (NULL when none). Fields left empty
 * (file NULL) when no frame qualifies. The caller frees the strings (lineref_free()).
 */
void lines_pick(const struct cJSON *frames, struct lineref *model, struct lineref *user, char **op);
/* Frees a line's strings and empties it. */
void lineref_free(struct lineref *l);
/* 1 when file is one of torch's own modules (under site-packages/torch/ or torch/). */
int lines_is_torch(const char *file);

/*
 * Patterns (pattern.c): folds m->cands into m->pats, ranked by total bytes saved per step
 * (then time saved, then the first occurrence). The key of a candidate (a new string, the
 * caller frees) is its kind, each member's op, dtype and size class (numel, else bytes,
 * rounded up to a power of two), and the distinct own model lines of its members.
 */
void patterns_fold(struct model *m);
char *pattern_key(const struct model *m, const struct candidate *c);

/*
 * Beyond fusion. Each appends candidates of its kind to m->cands (ids continue), with the
 * evidence (value ids, node ids, steps, bytes) in candidate.evidence; none claims nodes.
 * deadwork_find(): kind "dead", values written and never read, kernels and copies whose every
 * output is such. invariant_find(): kind "invariant", nodes whose inputs do not change across
 * steps, and host-device traffic repeated every step. memplan_compute(): takes the captured
 * step's alloc/free/sync/memcpy records from ml, the memory log filled while the trace was read
 * (analyzer/trace.h; the trace is never read again), fills m->mem and appends kind "memory";
 * returns 0 (nothing when the graph is empty or ml is NULL). Call them after candidates_find(),
 * in this order.
 */
void deadwork_find(struct model *m);
void invariant_find(struct model *m);
struct memlog;
int memplan_compute(struct model *m, const struct memlog *ml);
/* The memory plan as JSON (summary.json "memory"), a new object; cJSON null when none. */
struct cJSON *memplan_json(const struct model *m);
void memplan_free(struct memplan *mp);

/*
 * Peak compute of a device in TFLOP/s, looked up by name and compute capability in a small
 * table (dense, no sparsity); fills dev->tflops_*; leaves 0 where the device is unknown.
 */
void device_peaks(struct device_info *dev);

/* A node's roofline time in us: max(bytes / peak bandwidth, flops / peak compute). */
double node_floor_us(const struct model *m, const struct node *n);

#endif
