/*
 * fusion.h - the fused-kernel generator: the op table, the fusion group description (parsed
 * from summary.json's candidates[].group or from a file of its own) and the emitters that turn
 * a group into CUDA C (kernel, per-element math, PyTorch binding, bench harness, CPU check).
 *
 * A group is a straight-line program over values: the group's inputs come first (values
 * 0..ninputs-1), then one value per op, in order. Every op reads earlier values only, so the
 * program is acyclic by construction, and the emitters walk it once. Two shapes are supported:
 * an elementwise chain over numel elements, and a row group (kind "reduction-epilogue") of
 * rows x cols elements with exactly one reduction op (softmax, log_softmax, layer_norm,
 * rms_norm, log_softmax_backward, layer_norm_backward; rms_norm_backward only in a derived
 * fused backward) that splits it into a prologue (before) and an epilogue (after). Inputs may be
 * broadcast over leading dimensions: an input of m elements is read at index i % m; in a row group
 * an input marked per_row holds one element a row, read at i / cols. A third shape, the column
 * group (kind "column-reduction"), is rows x cols elements whose col_sum ops sum a full-size value
 * over the rows for each column (a layer norm's dgamma and dbeta, a channels-last batch norm's
 * per-channel sums): the ops before a col_sum run per element, those after it per column on the
 * sums (and inputs of cols elements); its writes are per-column values (cols elements) or kept
 * full-size values.
 */
#ifndef AICPROF_FUSION_H
#define AICPROF_FUSION_H

#include "lib/util.h"

/* Storage type of a tensor. FD_BOOL is one byte (a mask); compute is always fp32. */
enum fdtype { FD_F32 = 0, FD_F16, FD_BF16, FD_BOOL };

/* Kinds of op: elementwise, the one row reduction of a row group, or a column group's sum
 * over the rows (col_sum). */
enum fop_kind { FOP_EW, FOP_REDUCE, FOP_COLSUM };

/* Fields an op requires besides "op", "args" and "out". */
enum {
	FOP_NEED_SCALAR = 1, /* "scalar": number (scale, add_scalar) */
	FOP_NEED_P = 2,      /* "p": number in [0, 1) (dropout) */
	FOP_NEED_TO = 4,     /* "to": dtype name (cast) */
	FOP_NEED_VALUE = 8,  /* "value": number or "inf"/"-inf"/"nan" (masked_fill, fill) */
	FOP_NEED_EPS = 16,   /* "eps": positive number (layer_norm, rms_norm) */
};

/*
 * One row of the op table. expr is the fp32 C expression the fused kernel and the unfused
 * reference evaluate: $0 $1 $2 stand for the arguments, $s for the op's number (scalar, value,
 * eps), $k for the keep probability 1-p and $i for 1/(1-p) (dropout), $u for the op's uniform
 * random number, $t for the cast's rounding to "to", $f for "_fast" in a group whose writes
 * are all 16-bit (aic_sigmoid_fast, aic_silu_fast: the GPU's fast exponential and division,
 * emit-kernel.c's prelude), else nothing. ref is the same op written plainly in
 * double for the CPU op-by-op reference. Reduction ops have neither (the emitters know them).
 */
struct fop {
	const char *name;
	int min_args, max_args;
	enum fop_kind kind;
	unsigned need;
	const char *expr;
	const char *ref;
};

extern const struct fop fop_table[];
extern const size_t fop_count;

/* The table row named name, or NULL when the op is not in the vocabulary. */
const struct fop *fop_lookup(const char *name);

/* dtype by name ("f32", "fp32", "float32", "float", "bf16", "bfloat16", "f16", "fp16",
 * "float16", "half", "bool"); returns 0 and sets *out, or -1 when unknown. */
int fdtype_parse(const char *s, enum fdtype *out);
const char *fdtype_name(enum fdtype t);  /* "f32", "f16", "bf16", "bool" */
const char *fdtype_ctype(enum fdtype t); /* "float", "__half", "__nv_bfloat16", "unsigned char" */
int fdtype_size(enum fdtype t);

/* An input's index map ("map"): element i of the group reads the input's element offset +
 * sum over d of ((i / (size[0] * ... * size[d-1])) % size[d]) * stride[d], dimension 0 the
 * fastest (a transpose, a slice, a broadcast over any dimensions; analyzer/indexmap.h). Only in
 * an elementwise chain without per-row inputs; its sizes multiply to the group's numel, so the
 * kernels that read through one run at that numel only. */
#define FMAP_DIMS 8
#define FVIA_MAX  4
struct fmap {
	int dims; /* 0: no map */
	long offset;
	long size[FMAP_DIMS], stride[FMAP_DIMS];
};

/* A named tensor of the group: an input, or a value an op defines. */
struct fvalue {
	char *name;
	long id;           /* the analyzer's value id ("value"), -1 when absent */
	enum fdtype dtype; /* storage type */
	long numel;        /* elements; < group total only for broadcast inputs and, in a
	                    * column group, per-column values (cols) */
	int op;            /* defining op index, -1 for an input */
	int per_row;       /* an input of one element per row of a row or column group
	                    * ("per_row": a layer norm's mean and rstd), read at i / cols, not
	                    * i % numel */
	int per_col;       /* a column group's value after a col_sum: one element a column */
	struct fmap map;   /* an input read through an index map (map.dims > 0): numel is then
	                    * the elements it holds, one past the largest offset it reads */
	/* the strided loops' layouts the map was composed from ("via"), applied in order to
	 * the group's index (each offset the next one's index): the CPU check's reference
	 * reads through them, not through the map; nvia 0 when the description has none */
	int nvia;
	struct fmap via[FVIA_MAX];
};

struct fopnode {
	const struct fop *op;
	int nargs;
	int arg[5]; /* value indices (layer_norm_backward takes five) */
	int out;    /* value index */
	double num; /* scalar, value or eps */
	double p;   /* dropout probability */
	enum fdtype to;
	int causal; /* masked_fill with "causal": true: mask col > row % cols, no mask input */
	int drop;   /* dropout ordinal in the group (0, 1, ...), -1 otherwise */
};

/* A tensor the kernel writes: an output, or a kept intermediate ("kept"). */
struct fwrite {
	int value;
	enum fdtype dtype;
	int kept;
	/* a row vector's gradient summand (fgroup_row_backward): the warp row kernel adds it over
	 * its rows and writes one partial sum a block and column, rows [0, *nparts) of the buffer;
	 * the block row kernel stores it an element (*nparts = rows) */
	int summed;
};

enum fgroup_kind { FG_CHAIN, FG_ROW, FG_COL };

struct fgroup {
	char *name; /* file-name-safe: [A-Za-z0-9_] */
	enum fgroup_kind kind;
	enum fdtype dtype;
	long numel;      /* total elements (rows * cols for row groups) */
	long rows, cols; /* a chain: 1 and numel, or its "cols" when it has per-row inputs */
	int ninputs;
	struct fvalue *values; /* ninputs inputs, then one per op */
	int nvalues;
	struct fopnode *ops;
	int nops;
	struct fwrite *writes; /* outputs, then kept */
	int nwrites;
	int ndrop;                 /* dropout ops */
	int red;                   /* index of the reduction op in a row group, -1 in a chain */
	int ncolsum;               /* col_sum ops of a column group (1..FGROUP_MAX_COLSUM) */
	double recorded_before_us; /* candidate's time_before_us where known, else 0 */
};

/* Whether g's elements are rows of cols: a row or column group, or a chain with "cols" (one
 * whose per-row inputs hold one value a row; its kernels index them at i / cols). */
static inline int fgroup_rowed(const struct fgroup *g)
{
	return g->kind != FG_CHAIN || g->cols != g->numel;
}

/* Whether any input of g is read through an index map. */
int fgroup_mapped(const struct fgroup *g);

/* A column group holds at most this many col_sum ops (its partial sums sit in shared memory). */
#define FGROUP_MAX_COLSUM 4

/* The elements write w of g has: cols for a column group's per-column value, else numel. */
long fgroup_write_numel(const struct fgroup *g, int w);

struct cJSON;

/*
 * Parses and checks one group description j. where names it in messages ("g.json" or
 * "summary.json: candidates[3].group"); name is the fallback group name when j has no "name".
 * Returns 0 and fills *g (release with fgroup_release), or -1 with a one-line message in *err
 * ("g.json: ops[2]: unknown op 'frobnicate'") and *g released. Prints nothing.
 */
int fgroup_parse(const struct cJSON *j, const char *where, const char *name, struct fgroup *g,
                 struct strbuf *err);

/* Reads path and parses it as one group; as fgroup_parse, with file errors in *err too. */
int fgroup_parse_file(const char *path, struct fgroup *g, struct strbuf *err);

void fgroup_release(struct fgroup *g);

/* Vector width limit in elements: 16 bytes over the widest element size of the tensors that
 * stream at full size (chain and column groups; a broadcast or per-column input does not
 * count, its V elements may take two loads), or of every value (row groups). */
int fgroup_max_vec(const struct fgroup *g);

/* Bytes the fused kernel moves (inputs read once, writes once) and the unfused sequence moves
 * (every op reads its arguments and writes its result, intermediates in storage type). */
double fgroup_bytes_fused(const struct fgroup *g);
double fgroup_bytes_unfused(const struct fgroup *g);

/* A key naming the group's math and shapes for the tuning cache ("ew:bf16:33554432:gelu,..."),
 * as a new string the caller frees. */
char *fgroup_key(const struct fgroup *g);

/*
 * Emitters: each appends one whole file's text to sb. math: the per-element functions
 * (__host__ __device__); kernel: the fused kernel, its argument struct and launcher (includes
 * the math header by name); binding: a self-contained PyTorch extension source (math and
 * kernel inlined) with a torch::Tensor wrapper; module: the Python module that loads it;
 * bench: the standalone harness main (includes the kernel file); cpucheck: a host program
 * comparing the fused math against an op-by-op double evaluation; readme: one group's section.
 */
void emit_math(struct strbuf *sb, const struct fgroup *g);
/* The math header's index maps: AIC_HD long <name>_map_<input>(long i) for each input read
 * through one (the kernel, the CPU check and the bench's reference read it at that offset). */
void emit_index_maps(struct strbuf *sb, const struct fgroup *g);
void emit_kernel(struct strbuf *sb, const struct fgroup *g);
void emit_binding(struct strbuf *sb, const struct fgroup *g);
void emit_module(struct strbuf *sb, const struct fgroup *g);
void emit_bench(struct strbuf *sb, const struct fgroup *g);
void emit_cpucheck(struct strbuf *sb, const struct fgroup *g);
void emit_meta(struct strbuf *sb, const struct fgroup *g);
/* The CPU check of g, the row backward of fw (fgroup_row_backward, grad_of as it gives it):
 * emit_cpucheck's, then the fused gradients against directional derivatives of fw's double
 * evaluation. */
void emit_bwd_cpucheck(struct strbuf *sb, const struct fgroup *g, const struct fgroup *fw,
                       const int *grad_of);

/*
 * Helpers the emitters share (fusion/ only). emit_lit: an fp32 C literal ("1.5f",
 * "(-INFINITY)"). emit_expr: op n's expression, fp32 (ref == 0) or double (ref == 1), with
 * argument k written as argfmt applied to its value index and the dropout uniform as ufmt applied
 * to the dropout ordinal; a causal mask uses variables row and col. emit_apply: the row reduction's
 * normalisation of its input with statistics s0, s1 (fp32). emit_upper: g's name upper-cased
 * into buf.
 */
void emit_lit(struct strbuf *sb, double x);
/* A chain's per-element function <name>_elem(in, u, o) (AIC_HD, fp32), as in its math header;
 * g->ninputs <= 64. */
void emit_chain_elem(struct strbuf *sb, const struct fgroup *g);
/* The statement that adds one prologue value v (and the inputs in[]) to a row group's running
 * statistics acc and, for layer_norm_backward, acc2 (the named variable): the kernel and the
 * CPU check accumulate alike. */
void emit_red_update(char *buf, size_t n, const struct fgroup *g, const char *acc2);
/*
 * The group's CuPy form (fusion/emit-cupy.c): a Python module <name>_cupy.py with one
 * cupy.ElementwiseKernel computing <name>_elem, the function <name>(inputs...) a CuPy program
 * calls, and check(), which compares it with the ops run one by one through CuPy. Returns 0,
 * or -1 with nothing in sb when the group has no CuPy form: a row group, dropout, a bf16 value
 * (CuPy has no bfloat16), or an op CuPy's reference cannot spell.
 */
int emit_cupy(struct strbuf *sb, const struct fgroup *g);
void emit_expr(struct strbuf *sb, const struct fgroup *g, const struct fopnode *n, int ref,
               const char *argfmt, const char *ufmt);
void emit_apply(struct strbuf *sb, const struct fgroup *g, const char *argfmt);
const char *emit_upper(const struct fgroup *g, char *buf, size_t len);

/*
 * The fused backward of chain g (fusion/backward.c): fills *b with a chain group named
 * "<name>_bwd" whose inputs are g's inputs then one gradient per write of g, and whose writes
 * are the gradients of g's inputs; grad_of[i] (g->ninputs entries, caller's array) is the
 * index among b's writes of input i's gradient, or -1 when it has none (a bool mask). Returns
 * 0 (release *b with fgroup_release), or -1 with the reason in *err and *b empty.
 */
int fgroup_backward(const struct fgroup *g, struct fgroup *b, int *grad_of, struct strbuf *err);

/*
 * The fused backward of row group g (fusion/backward.c), where its reduction is rms_norm and
 * it has no dropout: *b, a row group "<name>_bwd" whose inputs are g's inputs then one
 * gradient per write of g, whose reduction is rms_norm_backward (the row's sums of x * x and
 * of gw * x in one pass), and whose writes are the gradients of g's full-size inputs, then,
 * kept in f32, the per-element summands of its row vectors' gradients (a weight's dw summed
 * over the rows); *c, the column group "<name>_bwdc" that sums them (col_sum, cast to the row
 * vector's type), or empty (c->nops 0) when no row vector takes a gradient. grad_of[i]
 * (g->ninputs entries): input i's gradient as b's write k (k), c's write k
 * (FGROUP_GRAD_COL + k), or none (-1). Returns 0 (release both), or -1 with the reason in
 * *err and both empty.
 */
#define FGROUP_GRAD_COL 1000
int fgroup_row_backward(const struct fgroup *g, struct fgroup *b, struct fgroup *c, int *grad_of,
                        struct strbuf *err);

/*
 * The plain C ABI (fusion/emit-module.c). emit_capi_h: the header declaring
 * int <name>_run(in[], in_numel[], out[], n, seed, offset, block, vec, ept, stream) and, where
 * the group has a fused backward, <name>_bwd_run with the same parameters (returns 0, a CUDA
 * error code, or -1 when a size does not fit the group); emit_capi: its definition, including
 * the kernel files (compile with nvcc -shared into lib<name>.so). emit_torch_type: at::kFloat...
 * emit_bcast: is input i broadcast (fewer elements than the group).
 */
void emit_capi_h(struct strbuf *sb, const struct fgroup *g);
void emit_capi(struct strbuf *sb, const struct fgroup *g);
const char *emit_torch_type(enum fdtype t);
int emit_bcast(const struct fgroup *g, int i);

/*
 * Writes every file of group g under dir/<g->name>/ (created): <name>_math.h,
 * <name>_kernel.cu, <name>_binding.cu, <name>.py, <name>_bench.cu, <name>_cpucheck.cu,
 * <name>.meta.json. Returns 0 or error() (already printed).
 */
int fusion_write_group(const char *dir, const struct fgroup *g);

/*
 * A library function the package aicprof_fused/ replaces at run time (fusion/emit-pkg.c),
 * from summary.json's "functions": form "fused" (g its generated group, kind[i] "arg" or
 * "param" for each of g's inputs), "gated" (g the group act(gate) * up, kind "gate" and "up",
 * act_class the activation module's class) or "sdpa" (g NULL). All pointers are the
 * caller's.
 */
struct pkg_func {
	const char *form;
	const char *module, *qualname, *file;
	int line, invocations;
	const struct fgroup *g;
	const char *const *kind;
	const char *act_class; /* "gated": the class its act_fn must be, else NULL */
};

/* aicprof_fused/__init__.py of the functions f[0..n-1] (apply(), applied(), counts()). */
void emit_pkg(struct strbuf *sb, const struct pkg_func *f, int n);

/* The rotary form's fixed files under aicprof_fused/_rotary/ (fusion/emit-rotary.c): their
 * contents and names for which = 0 (aic_rotary_math.h), 1 (aic_rotary.cu, the kernel and its C
 * ABI aic_rotary_run) and 2 (aic_rotary_cpucheck.cu, a host program); NULL for any other. */
const char *emit_rotary_file(int which);
const char *emit_rotary_name(int which);

/* One generated group offered to the patch (patch.c). */
struct patch_group {
	const struct fgroup *g;
	const struct cJSON *cand; /* its candidate in summary.json (nodes) */
	int rewritten;            /* out: its source lines were rewritten */
	char *where;              /* out (owned): "file.py:23-24" when rewritten */
	char *advice;             /* out (owned): why its lines were not rewritten */
};

/* A library form or a dead statement the patch rewrote, or advice (patch.c). */
struct patch_lib {
	long cand;
	char *form; /* the library form as the analyzer named it, or "dead statement" */
	char *what; /* the rewrite, or the call to make */
	int rewritten;
	char *where;  /* "file.py:29-35" when rewritten */
	char *advice; /* why not rewritten */
};

void patch_lib_release(struct patch_lib *l, int n);

/*
 * Writes fused/aicprof.patch (whole or not at all): a unified diff relative to the program's
 * working directory that adds aicprof_fused/<name>/ (module, binding, C ABI, kernels, math) of
 * every group in pg[0..n-1] and aicprof_fused/Makefile; where pkg has functions (npkg > 0), the
 * package (fused/aicprof_fused/__init__.py and its groups' files) beside the entry script
 * (summary.json's traces[0].program names it; a .py file inside the tree) and two lines in that
 * script after its imports: "import aicprof_fused" and "aicprof_fused.apply()" (*pkg_where: the
 * script's path, owned, NULL when not added; *pkg_advice: why not, owned); rewrites the user's
 * source lines of each group where that is safe, and applies the library forms of the summary's
 * candidates (attention -> scaled_dot_product_attention, fused=True on an Adam/AdamW constructor)
 * and removes dead statements where that is safe (see patch.c), reading the sources under srcdir
 * (NULL: "."). Fills pg[i].rewritten, .where and .advice (the caller frees them) and *libs
 * (*nlibs entries; free with patch_lib_release). Writes no file when there is nothing to
 * change. Returns 0 or error().
 */
int patch_write(const char *fused, const struct cJSON *summary, const char *srcdir,
                struct patch_group *pg, int n, const struct pkg_func *pkg, int npkg,
                char **pkg_where, char **pkg_advice, struct patch_lib **libs, int *nlibs);

#endif
