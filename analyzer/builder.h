/*
 * builder.h - the graph builder's private struct and the declarations its stages share; internal
 * to analyzer/ (the builder's public interface is trace.h: builder_new, builder_record,
 * builder_finish, builder_free).
 *
 * The builder turns a trace's records into the step graph, in bounded memory. A record travels
 * through five stages, one file each:
 *  1. parse.c: each record is copied into a pooled struct rec; API records go into a reorder
 *     buffer that releases them in exact `seq` order, activity records are joined to them by
 *     correlation id (fields.c: the lookup of the current record's fields);
 *  2. flow.c: the released records are processed in seq order (drain()); each op gets a global
 * index gi, its pointer arguments roles, and its reads and writes edges and new buffer versions
 * (values);
 *  3. steps.c: repeated NVTX ranges, else the period of the kernel-name sequence, cut the op
 *     stream into steps (struct step: [b, e) in gi);
 *  4. fold.c: a complete step is folded into its class (per position duration samples, one
 *     captured step graph) and its ops, values and edges are released;
 *  5. finish.c: at the end, the dominant class becomes the model's step graph.
 * All the functions below take the builder they work on; none fails unless it says so (memory
 * exhaustion ends the program in xmalloc()).
 */
#ifndef AICPROF_BUILDER_H
#define AICPROF_BUILDER_H

#include "analyzer/steps.h"
#include "analyzer/trace.h"
#include "lib/hmap.h"
#include "lib/rangemap.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdint.h>
#include <string.h>

#define REORDER 4096 /* records the reorder buffer gathers before it releases what is in order */
/* The reorder buffer's bound: records held waiting for a missing seq beyond this many, or this
 * many bytes, give that seq up (docs/trace-format.md; the real samples lag at most 2,622). */
#define REORDER_MAX       65536
#define REORDER_MAX_BYTES (64L << 20)
#define SAMPLE_CAP        4096       /* duration samples kept per node (reservoir beyond) */
#define MAX_ID            (1L << 20) /* str/site ids above this are refused (tables are indexed by id) */
#define UNLOCKED_CAP      1000000 /* ops held before steps are found: then decide with what is seen */
#define MAX_CLASSES       256
#define PIN               6

/* R_SKIP: a record with a seq that the builder does not use (sync, vmm, coll, ...): it holds its
 * seq's place in the reorder buffer and is dropped when released. */
enum rtype { R_OP, R_ALLOC, R_FREE, R_PUSH, R_POP, R_RSTART, R_REND, R_EVREC, R_SWAIT, R_SKIP };

struct ptrarg {
	int64_t alloc;
	uint64_t off;
	signed char cal;
	uint64_t fp;      /* calibration fingerprint after the launch (probe record), 0 none */
	short param;      /* kernel parameter index; -1 when the pointer is not a whole parameter */
	short arg;        /* index of the parameter that holds it */
	int word;         /* its byte offset inside that parameter */
	unsigned argsize; /* that parameter's size in bytes */
};

struct rec {
	struct rec *next_free;
	uint64_t seq, ord; /* ord: arrival order, breaks ties of seq */
	int type;
	/* ops */
	unsigned char kind, has_api, joined, inh;
	int64_t c, ts, start, end;
	long gi;
	int fn, site, stream;
	uint64_t stream_h, handle;
	int grid[3], block[3];
	long numel;
	long scalars[4]; /* the first scalar arguments, for numel */
	int nscalars;
	struct node_param sp[8]; /* every scalar parameter (first 8), for the group description */
	int nsp;
	struct offcalc *oc; /* a strided loop's offset calculator (owned), NULL none */
	uint64_t br, bw;
	int nptr, aptr;
	struct ptrarg *p, pin[PIN];
	uint64_t bytes; /* copies and sets */
	int64_t dst_alloc, src_alloc;
	uint64_t dst_off, src_off;
	/* alloc/free/ranges */
	int64_t id;
	uint64_t size;
	uint64_t ptr;        /* alloc/free: the address */
	unsigned char inner; /* alloc: a pool's block, inside its segment (resolve.c) */
	long tid;
	int key;
};

struct fninfo {
	char *name, *full, *shortn;
	struct op_sem sem;
	int classified;
	/* calibration: per pointer position, 1 changed, 0 unchanged, -1 unknown */
	signed char *cal;
	int ncal;
	/* from the demangled signature: per parameter 1 'T*', 2 'const T*', 0 not a pointer */
	signed char *sig;
	int nsig, sig_done;
	enum dtype sig_dtype; /* element type of the first pointer parameter */
};

struct siteinfo {
	char *source, *file, *func;
	int line;
	int defined;  /* a site record with this id was read */
	int autograd; /* a frame inside the user's line is torch's autograd (backward()) */
};

/* One written (or first-read) byte range of an allocation and the value it holds. */
struct slot {
	uint64_t off, end; /* [off, end) */
	long vid;          /* its value */
	long writer;       /* gi of the value's writer, -1 none */
	enum edge_how how;
};

/* An allocation: its ranges' current values, sorted by offset and disjoint (flow.c). */
struct buf {
	int64_t id;
	uint64_t size;
	struct slot *sl;
	int nsl, asl;
	int written;
};

struct val {
	long vid;
	long writer, created; /* writer gi (-1 external), gi at creation */
	int64_t buffer;
	uint64_t off; /* where in its buffer it starts */
	uint64_t size, bw;
	enum edge_how how;
	long dead;  /* gi of the op that overwrote it, or the next gi at free; -1 alive */
	int nslots; /* ranges of its buffer that still hold it (flow.c): dead when none do */
	long *readers;
	uint64_t *rbytes;
	int nr, ar;
};

struct iedge {
	long from, to, vid;
	uint64_t bytes, size, off; /* off: where the value starts in its buffer */
	int64_t buffer;
	enum edge_how how;
};

struct step {
	long b, e;
	int cls;
	double us;
	int64_t t0; /* its first op's GPU start, ns; INT64_MAX none (fold_step()) */
};

struct range {
	int key, depth;
	long b, e;
};

struct possamp {
	float *s;
	long n;
	float min, max;
};

/* A position's fingerprints of one pointer entry over the steps of its class (probe records) */
struct fpstate {
	uint64_t first;
	unsigned short steps;
	unsigned char differ;
};

struct cls {
	uint64_t hash;
	int len;
	int *fns;
	long nsteps, first_step;
	struct possamp *ps;
	struct fpstate *fp; /* len x NODE_FP, allocated at the first fingerprint */
	int captured;       /* 0 none, 1 first occurrence, 2 a steady one */
	long cap_step;
	struct node *nodes;
	struct value *values;
	int nvalues;
	struct edge *edges;
	int nedges;
	struct tl_event *tl;
	int ntl;
	int64_t tl_t0;
	uint64_t seq_end; /* seq of the first op after the captured step, UINT64_MAX none */
};

/* A growable ring of pointers/structs indexed by a monotonic number. */
#define DEQ(T)                                                                                     \
	struct {                                                                                   \
		T *a;                                                                              \
		long base, n, cap, head;                                                           \
	}
#define DEQ_AT(d, i) ((d).a[((d).head + ((i) - (d).base)) & ((d).cap - 1)])

struct builder {
	const char *file;
	struct trace_info *ti;
	struct device_info *dev;
	long line;
	int have_header;
	long allocs_block, allocs_async, allocs_plain; /* alloc records by api (finish.c) */
	long unknown_refs,
	    unknown_line; /* references to undefined str/site ids, the first's line */
	const char *raw;  /* the current line's text */
	size_t rawlen;

	struct rec *pool;
	struct rec **wait; /* the reorder buffer: a binary min-heap by (seq, arrival) */
	long nwait, await;
	long wait_bytes;          /* what its records hold (struct rec and pointer arrays) */
	struct rec **heap;        /* records released in seq order, for drain() (heap_pop()) */
	long nheap, aheap, hhead; /* a ring */
	uint64_t last_seq;        /* of the last record out of the heap */
	uint64_t max_seq;         /* the highest seq read */
	uint64_t arrivals;
	int seq_known;     /* next_seq is set (the lowest seq of the first release) */
	uint64_t next_seq; /* the lowest seq not yet released: every seq below it is out */
	long peak_heap;    /* the most records the buffer held */
	uint64_t gave_up, gave_up_first; /* seqs given up at the bound, the first of them */
	uint64_t missing, missing_first; /* seqs that never arrived, the first of them */
	long late;                       /* records that came after their seq was given up */
	uint64_t late_seq, late_after;   /* the first of them, and the seq it came after */

	struct rangemap rmap; /* the live allocations at the released seq (resolve.c) */
	long resolved, unresolved, not_entered;

	struct fninfo *fns;
	long nfns;
	struct siteinfo *sites;
	long nsites;

	struct hmap pending; /* c -> rec* (launch/memcpy/memset waiting for activity) */
	struct hmap orphans; /* c -> rec* (activity waiting for its API record) */
	struct hmap probes;  /* c -> uint64_t* (probe fingerprints, [0] the count) */
	struct hmap bufs;    /* alloc id -> buf* */
	struct hmap events;  /* event handle -> gi+1 of last op on its stream */
	struct hmap laststr; /* stream handle -> gi+1 of its last op */
	struct hmap waits;   /* stream handle -> gi+1 of the op its next op waits for */

	long next_gi, next_vid;
	DEQ(struct rec *) ops;
	DEQ(struct val) vals;
	DEQ(struct iedge) edges;
	long unjoined; /* ops with an API record and no activity yet */

	/* NVTX */
	struct nvtx_rule nvtx; /* the keys of range texts and their tally (steps.h) */
	struct hmap stacks;    /* tid -> depth */
	struct {
		long tid;
		int key;
		long b;
	} * open;
	int nopen, aopen;
	struct hmap rstarts; /* range id -> (key << 40 | b) */
	struct range *ranges;
	long nranges, aranges;
	int locked_key; /* -1 none */
	const char *how;
	long period, phase, next_boundary;
	double steps_confidence; /* find_period(): how sure, in [0, 1] (NVTX: 1) */
	char steps_reason[256];
	long prelude_ops, epilogue_ops; /* ops before the first and after the last step */

	struct step *steps;
	long nsteps, asteps, folded;
	long last_step_end;
	struct cls *classes;
	int nclasses;
	long outside;
	uint64_t rng;
};

/* Appends v to a DEQ (growing it by doubling); DEQ_POP drops its lowest number. */
#define DEQ_PUSH(d, v)                                                                             \
	do {                                                                                       \
		if ((d).n == (d).cap) {                                                            \
			long nc = (d).cap ? (d).cap * 2 : 1024;                                    \
			void *na = xmalloc(sizeof(*(d).a) * nc);                                   \
			for (long _i = 0; _i < (d).n; _i++)                                        \
				memcpy((char *)na + _i * sizeof(*(d).a),                           \
				       &(d).a[((d).head + _i) & ((d).cap - 1)], sizeof(*(d).a));   \
			free((d).a);                                                               \
			(d).a = na;                                                                \
			(d).cap = nc;                                                              \
			(d).head = 0;                                                              \
		}                                                                                  \
		(d).a[((d).head + (d).n) & ((d).cap - 1)] = (v);                                   \
		(d).n++;                                                                           \
	} while (0)
#define DEQ_POP(d)                                                                                 \
	do {                                                                                       \
		(d).head = ((d).head + 1) & ((d).cap - 1);                                         \
		(d).n--;                                                                           \
		(d).base++;                                                                        \
	} while (0)

/* ---------- fields.c: the current record's fields ---------- */

/* Indexes rec's top-level fields (first of duplicate keys wins); field() answers from it. */
void index_fields(const cJSON *rec);
/* o's member k (NULL when absent); from the index when o is the indexed record. */
const cJSON *field(const cJSON *o, const char *k);
/* Each of these sets *v and returns 1 when o's k is a number (in int64 range for get_i64), else
 * returns 0 and leaves *v. get_time() reads a ns time exactly from b's current line's text,
 * where pat ("\"start\":") is found, else from the double. */
int get_num(const cJSON *o, const char *k, double *v);
int get_i64(const cJSON *o, const char *k, int64_t *v);
int get_time(const struct builder *b, const cJSON *o, const char *key, const char *pat, int64_t *v);
/* o's k as a string (owned by the cJSON tree), NULL when absent or not a string. */
const char *get_str(const cJSON *o, const char *k);
/* o's k as hex text ("0x7f3a00000000") or a number; 0 when absent or not hex. */
uint64_t get_hex(const cJSON *o, const char *k);
/* An allocation id (-1 when not a number in range) and an offset (0 when not one, or < 0). */
int64_t num_id(const cJSON *x);
uint64_t num_off(const cJSON *x);
/* o's k as three ints (grid or block), 0 for what is absent. */
void get_dim3(const cJSON *o, const char *k, int *d);
/* The error for a required field key of a what record that is absent, of the wrong type or out
 * of range (at b's file and line); returns -1. */
int bad(struct builder *b, const char *what, const char *key);

/* ---------- parse.c: records, the record pool, the reorder buffer ---------- */

/* Gives r back to b's pool (its grown pointer array is kept for the next record). */
void rec_free(struct builder *b, struct rec *r);
/* Puts r into the reorder buffer, sorted by (seq, arrival). */
void heap_push(struct builder *b, struct rec *r);
/* Takes the lowest released record (reorder_release()); there must be one (b->nheap). */
struct rec *heap_pop(struct builder *b);
/* Releases the records of the reorder buffer that are in exact seq order, those up to the first
 * missing seq, and processes them (drain()). A missing seq is given up when the buffer is over
 * its bound (REORDER_MAX records or REORDER_MAX_BYTES), and at_end (everything left goes). */
void reorder_release(struct builder *b, int at_end);
/* The reorder buffer's warning, once, at the end: seqs given up at the bound, records that came
 * after, seqs that never arrived (also into b->ti->warnings). Nothing when all were in order. */
void reorder_warn(struct builder *b);

/* ---------- flow.c: sequencing and data flow ---------- */

/* The kernel name with string id `id`, classified and demangled at its first use; NULL when
 * no str record defined it. Owned by b. */
struct fninfo *fn_get(struct builder *b, int id);
/* The value vid while it is held, else NULL. */
struct val *val_get(struct builder *b, long vid);
/* Fills f->sig and f->sig_dtype from f's demangled C signature (nothing for unmangled names). */
void parse_signature(struct fninfo *f);
/* Processes the released records (heap_pop()) until keep are left, then folds the
 * steps that are complete (try_fold()). */
void drain(struct builder *b, long keep);

/* ---------- steps.c: the step finder ---------- */

/* Appends the step [s, e) when nvtx_step_accept() takes it (not empty, not overlapping). */
void add_step(struct builder *b, long s, long e);
/* Makes key the step key: its kept ranges become steps, the others are dropped. */
void lock_key(struct builder *b, int key);
/* A range of key at nesting depth, over the ops [s, e), has closed: a step, or tallied by the
 * NVTX-step rule (steps.h) and kept until the rule decides. */
void range_closed(struct builder *b, int key, int depth, long s, long e);
/*
 * Finds the steps of the ops held without NVTX (period.c) and adds them; sets b->period (the
 * steady step's ops), b->how ("periodic"), the confidence and reason, or period -1 ("whole").
 * at_end: no more ops will come (else later periods are cut uniformly by periodic_extend()).
 */
void find_period(struct builder *b, int at_end);
/* Appends the periodic steps that the ops seen so far complete. */
void periodic_extend(struct builder *b);

/* ---------- fold.c: folding ---------- */

/* Folds every step that can be: its ops all timed (or at_end), its successor ended. */
void try_fold(struct builder *b, int at_end);
/* Frees the ops before gi (counting those outside every step), their edges and values. */
void release_before(struct builder *b, long gi);

#endif
