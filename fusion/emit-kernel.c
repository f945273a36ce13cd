/*
 * emit-kernel.c - writes a group's CUDA C: the per-element math, the fused kernel with its
 * launcher, the PyTorch binding and the Python module that loads it.
 *
 * The math header holds __host__ __device__ functions only, so the same code runs in the
 * kernel and in the CPU check: <name>_elem (a chain: inputs in[], dropout uniforms u[], writes
 * o[]), or for a row group <name>_pro (prologue; returns the reduction's input and sets the
 * prologue's writes) and <name>_epi (normalise with the row statistics s0, s1, then the
 * epilogue). Each op becomes one fp32 statement `const float vN = <expr>;`, its expression
 * taken from the op table with the arguments substituted; storage rounding happens only at the
 * loads and stores around these functions.
 *
 * The kernel file adds the loads and stores. A chain is one grid-stride loop over vectors of
 * VEC elements (16 bytes at most per tensor), EPT vectors per thread per iteration with all
 * loads issued before the math, and a scalar tail for the last n % VEC elements; the launcher
 * gives it a block per tile (no cap of waves), and the package's default is one vector a thread:
 * two held a gated backward's 48 floats in 81 registers, a quarter of the SM's warps, and ran
 * 6% slower on an H100 than one at 32 registers (docs/perf.md, session 19). A row group has
 * two kernels, both compiled, the launcher choosing at run time from cols and the vector width
 * it settled on: a short row (cols <= 32 * VEC * <name>_WARP_K, 8 vectors a lane) takes one warp
 * (<name>_wkernel: blockDim.x / 32 rows a block, grid-stride over rows), each lane holding its
 * K vectors of the row in registers (K a template parameter, the fewest of 1, 2, 4, 8 that hold
 * the row: registers for what the row needs, not for the longest row), the statistics reduced
 * with warp shuffles (no shared memory,
 * no __syncthreads); a longer row takes one block (<name>_kernel, grid-stride over rows), the
 * prologue's results staged in shared memory as fp32. In both the first statistic (max, sum or
 * sum of squares) is reduced as the row is loaded, a second pass over the staged values gives
 * the other (sum of exp, or the centred sum of squares), and the epilogue writes; the order of
 * the additions is fixed by the launch configuration (block, VEC), so a run repeats its bits.
 * The warp kernel may load the row vectors only its epilogue reads once, before its rows (flag
 * H, set by the launcher when the launch is latency-bound), and it adds a backward's summed
 * writes over its rows into one row of partial sums a block (the warps' in order), which the
 * column group then adds; the block kernel stores those summands an element. Inputs both of the
 * warp kernel's passes read (a backward's dy and weight) stay in registers from the first pass
 * while they fit (K * V * n <= 32 floats), so the second loads only what the epilogue alone reads.
 * The epilogue may read prologue values besides the reduction's input only in a derived fused
 * backward (rms_norm_backward's gradient factor): _epi recomputes them from the inputs. A column
 * group is two kernels: the first tiles the columns (32 threads of V columns each, or fewer
 * where the columns are few, blockIdx.x) and chunks the rows (blockIdx.y); each thread adds the
 * summands of every col_sum over its rows of the chunk, the block adds its threads' partials in
 * shared memory in a fixed order (each thread of the block adding one column's rows of threads
 * for one col_sum) and writes one partial a chunk and column to a workspace
 * (aic_ws_alloc: stream-ordered on the launch's stream, from a pool that keeps it); the second
 * adds a column's chunk partials (8 rows of threads a tile of 32 columns, 32 past 64 chunks,
 * each taking every 8th or 32nd chunk, then those in order) and runs the ops on the sums. With one
 * chunk the first kernel runs the ops itself, one launch and no workspace. Past 1,024 rows a chunk
 * holds at least 64. No atomics: for a given device and launch configuration the result is the same
 * bits on every run. The launcher checks every pointer's alignment (and broadcast sizes) at run
 * time and halves VEC down to 1 where a vector access would be misaligned. Dropout's uniform for
 * element i is component i % 4 of curand_uniform4 after curand_init(seed, i / 4, offset + 4 * d)
 * for the d-th dropout of the group: a mapping independent of block size, VEC and EPT, which the
 * unfused reference reproduces exactly.
 */
#include "fusion/fusion.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

/* An fp32 literal for x: "1.5f", "(-INFINITY)", "NAN". */
void emit_lit(struct strbuf *sb, double x)
{
	if (isnan(x))
		strbuf_adds(sb, "NAN");
	else if (isinf(x))
		strbuf_adds(sb, x < 0 ? "(-INFINITY)" : "INFINITY");
	else {
		char buf[64];
		snprintf(buf, sizeof(buf), "%.9g", (float)x);
		strbuf_adds(sb, buf);
		if (!strpbrk(buf, ".eE"))
			strbuf_adds(sb, ".");
		strbuf_adds(sb, "f");
	}
}

/* Variable holding value v inside the math functions. */
static void add_var(struct strbuf *sb, int v)
{
	strbuf_addf(sb, "v%d", v);
}

/* Whether the group's transcendental ops may take their fast forms ($f): every write is
 * 16-bit, so a few ulp of fp32 are far below what the stored result keeps. */
static int fast_math(const struct fgroup *g)
{
	for (int k = 0; k < g->nwrites; k++)
		if (g->writes[k].dtype != FD_F16 && g->writes[k].dtype != FD_BF16)
			return 0;
	return g->nwrites > 0;
}

/* See fusion.h. */
void emit_expr(struct strbuf *sb, const struct fgroup *g, const struct fopnode *n, int ref,
               const char *argfmt, const char *ufmt)
{
	const char *t = ref ? n->op->ref : n->op->expr;
	for (const char *p = t; *p; p++) {
		if (*p != '$') {
			strbuf_add(sb, p, 1);
			continue;
		}
		char c = *++p;
		if (c >= '0' && c <= '2')
			strbuf_addf(sb, argfmt, n->arg[c - '0']);
		else if (c == 's')
			emit_lit(sb, n->num);
		else if (c == 'k')
			emit_lit(sb, 1.0 - n->p);
		else if (c == 'i')
			emit_lit(sb, 1.0 / (1.0 - n->p));
		else if (c == 'u')
			strbuf_addf(sb, ufmt, n->drop);
		else if (c == 't')
			strbuf_addf(sb, "aic_round_%s", fdtype_name(n->to));
		else if (c == 'f') {
			if (!ref && fast_math(g))
				strbuf_adds(sb, "_fast");
		} else if (c == 'm') {
			if (n->causal)
				strbuf_addf(sb, "(col > row %% %ldL)", g->cols);
			else {
				strbuf_adds(sb, "(");
				strbuf_addf(sb, argfmt, n->arg[1]);
				strbuf_adds(sb, ref ? " != 0.0)" : " != 0.f)");
			}
		} else
			BUG("bad placeholder '$%c' in op '%s'", c, n->op->name);
	}
}

/* The group's name in upper case, for macros. */
const char *emit_upper(const struct fgroup *g, char *buf, size_t len)
{
	size_t i;
	for (i = 0; g->name[i] && i + 1 < len; i++)
		buf[i] = toupper((unsigned char)g->name[i]);
	buf[i] = 0;
	return buf;
}

static const char prelude[] =
    "#ifndef AIC_PRELUDE\n"
    "#define AIC_PRELUDE\n"
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "#include <math.h>\n"
    "#define AIC_HD __host__ __device__ __forceinline__\n"
    "AIC_HD float aic_to_float(float x) { return x; }\n"
    "AIC_HD float aic_to_float(__half x) { return __half2float(x); }\n"
    "AIC_HD float aic_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }\n"
    "AIC_HD float aic_to_float(unsigned char x) { return x ? 1.f : 0.f; }\n"
    "template <typename T> AIC_HD T aic_from_float(float x);\n"
    "template <> AIC_HD float aic_from_float<float>(float x) { return x; }\n"
    "template <> AIC_HD __half aic_from_float<__half>(float x) { return __float2half_rn(x); }\n"
    "template <> AIC_HD __nv_bfloat16 aic_from_float<__nv_bfloat16>(float x)\n"
    "{\n\treturn __float2bfloat16_rn(x);\n}\n"
    "template <> AIC_HD unsigned char aic_from_float<unsigned char>(float x) { return x != 0.f; }\n"
    "AIC_HD float aic_round_f32(float x) { return x; }\n"
    "AIC_HD float aic_round_f16(float x) { return __half2float(__float2half_rn(x)); }\n"
    "AIC_HD float aic_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }\n"
    "AIC_HD float aic_rsqrt(float x)\n"
    "{\n"
    "#ifdef __CUDA_ARCH__\n"
    "\treturn rsqrtf(x);\n"
    "#else\n"
    "\treturn 1.f / sqrtf(x);\n"
    "#endif\n"
    "}\n"
    "AIC_HD float aic_pow(float x, float e)\n"
    "{\n"
    "\treturn e == 2.f ? x * x : e == 3.f ? x * x * x : e == -2.f ? 1.f / (x * x) : powf(x, e);\n"
    "}\n"
    "/* sigmoid and silu as PyTorch computes them (expf), and their _fast forms, which groups\n"
    " * whose writes are all 16-bit use (fusion.h, emit_expr's $f): on the GPU the fast\n"
    " * exponential and division (__expf, __fdividef: a few ulp of fp32, as torch.compile's\n"
    " * kernels compute them), exact on the CPU (the checks). tanh stays tanhf: a fast form\n"
    " * through __expf measured slower than CUDA's tanhf (docs/perf.md, session 18) */\n"
    "AIC_HD float aic_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }\n"
    "AIC_HD float aic_silu(float x) { return x / (1.f + expf(-x)); }\n"
    "AIC_HD float aic_sigmoid_fast(float x)\n"
    "{\n"
    "#ifdef __CUDA_ARCH__\n"
    "\treturn __fdividef(1.f, 1.f + __expf(-x));\n"
    "#else\n"
    "\treturn aic_sigmoid(x);\n"
    "#endif\n"
    "}\n"
    "AIC_HD float aic_silu_fast(float x) { return x * aic_sigmoid_fast(x); }\n"
    "#endif\n";

/* Whether value v is an argument of an op after op i, or written. */
static int read_later(const struct fgroup *g, int i, int v)
{
	for (int j = i + 1; j < g->nops; j++)
		for (int k = 0; k < g->ops[j].nargs; k++)
			if (g->ops[j].arg[k] == v)
				return 1;
	for (int w = 0; w < g->nwrites; w++)
		if (g->writes[w].value == v)
			return 1;
	return 0;
}

/* Emits "const float vN = expr;" for ops [from, to). A result that no later op reads and
 * nothing writes (a fused backward's gradient of a value that leads to no input, such as a
 * kept fill) is cast to void, so the generated code compiles without warnings; the compiler
 * drops its computation. */
static void emit_ops(struct strbuf *sb, const struct fgroup *g, int from, int to)
{
	for (int i = from; i < to; i++) {
		const struct fopnode *n = &g->ops[i];
		strbuf_adds(sb, "\tconst float ");
		add_var(sb, n->out);
		strbuf_adds(sb, " = ");
		if (n->op->kind == FOP_REDUCE) /* rms_norm in rms_norm_backward's epilogue */
			strbuf_addf(sb, n->nargs > 1 ? "(v%d * s0 * v%d)" : "(v%d * s0)", n->arg[0],
			            n->arg[1]);
		else
			emit_expr(sb, g, n, 0, "v%d", "u[%d]");
		strbuf_addf(sb, "; /* %s = %s */\n", g->values[n->out].name, n->op->name);
		if (!read_later(g, i, n->out)) {
			strbuf_adds(sb, "\t(void)");
			add_var(sb, n->out);
			strbuf_adds(sb, ";\n");
		}
	}
}

static void emit_inputs_decl(struct strbuf *sb, const struct fgroup *g, const int *use)
{
	for (int i = 0; i < g->ninputs; i++)
		if (!use || use[i])
			strbuf_addf(sb, "\tconst float v%d = in[%d]; /* %s */\n", i, i,
			            g->values[i].name);
}

/* Which inputs the ops [from, to) read (plus, when red, the reduction's weight and bias). */
static void inputs_used(const struct fgroup *g, int from, int to, int *use)
{
	memset(use, 0, sizeof(int) * g->ninputs);
	for (int i = from; i < to; i++)
		for (int k = 0; k < g->ops[i].nargs; k++)
			if (g->ops[i].arg[k] < g->ninputs)
				use[g->ops[i].arg[k]] = 1;
}

static int write_in_prologue(const struct fgroup *g, int w)
{
	return g->kind == FG_ROW && g->values[g->writes[w].value].op < g->red;
}

/* The reduction's normalisation, fp32, of x with statistics s0, s1. */
void emit_apply(struct strbuf *sb, const struct fgroup *g, const char *argfmt)
{
	const struct fopnode *n = &g->ops[g->red];
	const char *op = n->op->name;
	char x[32], w[32] = "", b[32] = "";
	snprintf(x, sizeof(x), argfmt, n->arg[0]);
	if (n->nargs > 1)
		snprintf(w, sizeof(w), argfmt, n->arg[1]);
	if (n->nargs > 2)
		snprintf(b, sizeof(b), argfmt, n->arg[2]);
	if (!strcmp(op, "softmax"))
		strbuf_addf(sb, "expf(%s - s0) * s1", x);
	else if (!strcmp(op, "log_softmax"))
		strbuf_addf(sb, "(%s - s0 - s1)", x);
	else if (!strcmp(op, "log_softmax_backward"))
		strbuf_addf(sb, "(%s - expf(%s) * s0)", x, w);
	else if (!strcmp(op, "layer_norm_backward")) {
		/* s0, s1: the row's means of g and of g * xh */
		char m[32], r[32], gm[32] = "1.f";
		snprintf(m, sizeof(m), argfmt, n->arg[2]);
		snprintf(r, sizeof(r), argfmt, n->arg[3]);
		if (n->nargs > 4)
			snprintf(gm, sizeof(gm), argfmt, n->arg[4]);
		strbuf_addf(sb, "(%s * (%s * %s - s0 - (%s - %s) * %s * s1))", r, x, gm, w, m, r);
	} else if (!strcmp(op, "rms_norm_backward")) {
		/* s0 = r, s1 = the row's mean of gw * x */
		strbuf_addf(sb, "(s0 * (%s - %s * s0 * s0 * s1))", w, x);
	} else if (!strcmp(op, "layer_norm"))
		strbuf_addf(sb, "((%s - s0) * s1%s%s%s%s)", x, *w ? " * " : "", w, *b ? " + " : "",
		            b);
	else
		strbuf_addf(sb, "(%s * s1%s%s)", x, *w ? " * " : "", w);
}

/* See fusion.h. */
void emit_chain_elem(struct strbuf *sb, const struct fgroup *g)
{
	strbuf_addf(sb, "\nAIC_HD void %s_elem(const float *in, const float *u, float *o)\n{\n",
	            g->name);
	strbuf_adds(sb, "\t(void)u;\n");
	int use[64];
	inputs_used(g, 0, g->nops, use);
	emit_inputs_decl(sb, g, use);
	emit_ops(sb, g, 0, g->nops);
	for (int w = 0; w < g->nwrites; w++)
		strbuf_addf(sb, "\to[%d] = v%d;\n", w, g->writes[w].value);
	strbuf_adds(sb, "}\n");
}

/* The prologue ops whose values the epilogue of row group g reads besides the reduction's
 * input (a fused backward's gradient factor): _epi recomputes them from the inputs. */
static void epi_recompute(const struct fgroup *g, int *need)
{
	memset(need, 0, sizeof(int) * g->nops);
	const struct fopnode *r = &g->ops[g->red];
	for (int i = g->red; i < g->nops; i++)
		for (int k = i == g->red ? 1 : 0; k < g->ops[i].nargs; k++) {
			int op = g->values[g->ops[i].arg[k]].op;
			if (op >= 0 && op < g->red && g->ops[i].arg[k] != r->arg[0])
				need[op] = 1;
		}
	for (int i = g->red - 1; i >= 0; i--)
		if (need[i])
			for (int k = 0; k < g->ops[i].nargs; k++) {
				int op = g->values[g->ops[i].arg[k]].op;
				if (op >= 0 && g->ops[i].arg[k] != r->arg[0])
					need[op] = 1;
			}
}

/* Which inputs the epilogue of row group g reads (its recomputed prologue values' too). */
static void epi_inputs_used(const struct fgroup *g, int *use)
{
	int need[256] = {0}, pre[64];
	inputs_used(g, g->red, g->nops, use);
	if (g->nops <= 256) {
		epi_recompute(g, need);
		for (int i = 0; i < g->red; i++)
			if (need[i]) {
				inputs_used(g, i, i + 1, pre);
				for (int k = 0; k < g->ninputs; k++)
					use[k] |= pre[k];
			}
	}
	if (g->ops[g->red].arg[0] < g->ninputs)
		use[g->ops[g->red].arg[0]] = 0;
}

/* Is op k of column group g per column (a col_sum, or after one)? */
static int col_op(const struct fgroup *g, int k)
{
	return g->values[g->ops[k].out].per_col;
}

/* Emits "const float vN = expr;" for the ops of column group g that are per column (pc) or per
 * element (!pc), col_sums left out. */
static void emit_col_ops(struct strbuf *sb, const struct fgroup *g, int pc)
{
	for (int i = 0; i < g->nops; i++) {
		const struct fopnode *n = &g->ops[i];
		if (col_op(g, i) != pc || n->op->kind == FOP_COLSUM)
			continue;
		strbuf_addf(sb, "\tconst float v%d = ", n->out);
		emit_expr(sb, g, n, 0, "v%d", "u[%d]");
		strbuf_addf(sb, "; /* %s = %s */\n", g->values[n->out].name, n->op->name);
	}
}

/* Which inputs the per-element (pc 0) or per-column (pc 1) ops of column group g read. */
static void col_inputs_used(const struct fgroup *g, int pc, int *use)
{
	memset(use, 0, sizeof(int) * g->ninputs);
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].op->kind == FOP_COLSUM ? !pc : col_op(g, i) == pc)
			for (int k = 0; k < g->ops[i].nargs; k++)
				if (g->ops[i].arg[k] < g->ninputs)
					use[g->ops[i].arg[k]] = 1;
}

/* A column group's math: <name>_col per element (the col_sums' summands into s[], the
 * full-size writes into o[]) and <name>_fin per column (the sums and the inputs of cols
 * elements to the per-column writes). */
static void emit_col_math(struct strbuf *sb, const struct fgroup *g)
{
	int use[64], k = 0;
	strbuf_addf(
	    sb,
	    "\n/* per element: s[] the summands of the col_sums, o[] the full-size writes */\n"
	    "AIC_HD void %s_col(const float *in, const float *u, long row, long col, "
	    "float *s, float *o)\n{\n\t(void)u; (void)row; (void)col; (void)o;\n",
	    g->name);
	col_inputs_used(g, 0, use);
	emit_inputs_decl(sb, g, use);
	emit_col_ops(sb, g, 0);
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].op->kind == FOP_COLSUM)
			strbuf_addf(sb, "\ts[%d] = v%d; /* col_sum -> %s */\n", k++,
			            g->ops[i].arg[0], g->values[g->ops[i].out].name);
	for (int w = 0; w < g->nwrites; w++)
		if (!g->values[g->writes[w].value].per_col)
			strbuf_addf(sb, "\to[%d] = v%d;\n", w, g->writes[w].value);
	strbuf_adds(sb, "}\n");
	strbuf_addf(sb,
	            "\n/* per column: s[] the column sums, in[] the inputs of cols elements at the "
	            "column;\n * o[] the per-column writes */\n"
	            "AIC_HD void %s_fin(const float *s, const float *in, float *o)\n{\n"
	            "\t(void)in;\n",
	            g->name);
	k = 0;
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].op->kind == FOP_COLSUM)
			strbuf_addf(sb, "\tconst float v%d = s[%d]; /* %s */\n", g->ops[i].out, k++,
			            g->values[g->ops[i].out].name);
	col_inputs_used(g, 1, use);
	emit_inputs_decl(sb, g, use);
	emit_col_ops(sb, g, 1);
	for (int w = 0; w < g->nwrites; w++)
		if (g->values[g->writes[w].value].per_col)
			strbuf_addf(sb, "\to[%d] = v%d;\n", w, g->writes[w].value);
	strbuf_adds(sb, "}\n");
}

/* See fusion.h. */
void emit_index_maps(struct strbuf *sb, const struct fgroup *g)
{
	for (int k = 0; k < g->ninputs; k++) {
		const struct fmap *m = &g->values[k].map;
		if (!m->dims)
			continue;
		strbuf_addf(
		    sb,
		    "\n/* %s's index map: element i of the group reads %s[%s_map_%s(i)] */\n"
		    "AIC_HD long %s_map_%s(long i)\n{\n\tlong o = %ldL;\n",
		    g->values[k].name, g->values[k].name, g->name, g->values[k].name, g->name,
		    g->values[k].name, m->offset);
		for (int d = 0; d < m->dims; d++) {
			if (m->stride[d])
				strbuf_addf(sb, "\to += (i %% %ldL) * %ldL;\n", m->size[d],
				            m->stride[d]);
			if (d + 1 < m->dims)
				strbuf_addf(sb, "\ti /= %ldL;\n", m->size[d]);
		}
		strbuf_adds(sb, "\treturn o;\n}\n");
	}
}

void emit_math(struct strbuf *sb, const struct fgroup *g)
{
	char up[128];
	emit_upper(g, up, sizeof(up));
	strbuf_addf(sb,
	            "/*\n * %s_math.h - generated by aicprof fuse: the per-element math of "
	            "group '%s'\n * (%s, %s), as __host__ __device__ functions shared by the "
	            "kernel and the CPU check.\n * Compute is fp32; inputs arrive converted to "
	            "float, writes leave as float.\n",
	            g->name, g->name,
	            g->kind == FG_CHAIN ? "elementwise chain"
	            : g->kind == FG_ROW ? "row group"
	                                : "column group",
	            fdtype_name(g->dtype));
	strbuf_adds(sb, " *\n * in[]:");
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(sb, " %d=%s", i, g->values[i].name);
	strbuf_adds(sb, "\n * o[]: ");
	for (int i = 0; i < g->nwrites; i++)
		strbuf_addf(sb, " %d=%s%s", i, g->values[g->writes[i].value].name,
		            g->writes[i].kept ? "(kept)" : "");
	strbuf_adds(sb, "\n * u[]:  uniform (0, 1] per dropout, in op order\n */\n");
	strbuf_addf(sb, "#ifndef %s_MATH_H\n#define %s_MATH_H\n", up, up);
	strbuf_adds(sb, prelude);
	strbuf_addf(sb, "#define %s_NIN %d\n#define %s_NW %d\n#define %s_NDROP %d\n", up,
	            g->ninputs, up, g->nwrites, up, g->ndrop ? g->ndrop : 1);
	strbuf_addf(sb, "#define %s_HAS_DROPOUT %d\n", up, g->ndrop > 0);
	if (g->kind == FG_CHAIN) {
		emit_index_maps(sb, g);
		emit_chain_elem(sb, g);
	} else if (g->kind == FG_COL) {
		emit_col_math(sb, g);
	} else {
		const struct fopnode *r = &g->ops[g->red];
		int x = r->arg[0];
		int use[64];
		strbuf_addf(sb, "\n/* prologue: returns %s, the input of %s */\n",
		            g->values[x].name, r->op->name);
		strbuf_addf(sb,
		            "AIC_HD float %s_pro(const float *in, const float *u, long row, "
		            "long col, float *o)\n{\n\t(void)u; (void)row; (void)col; (void)o;\n",
		            g->name);
		inputs_used(g, 0, g->red, use);
		if (x < g->ninputs)
			use[x] = 1;
		emit_inputs_decl(sb, g, use);
		emit_ops(sb, g, 0, g->red);
		for (int w = 0; w < g->nwrites; w++)
			if (write_in_prologue(g, w))
				strbuf_addf(sb, "\to[%d] = v%d;\n", w, g->writes[w].value);
		if (!strcmp(r->op->name, "rms_norm_backward")) /* the row sum's other factor */
			strbuf_addf(sb, "\to[%d] = v%d; /* %s */\n", g->nwrites, r->arg[1],
			            g->values[r->arg[1]].name);
		strbuf_addf(sb, "\treturn v%d;\n}\n", x);
		strbuf_addf(sb, "\n/* %s with row statistics s0, s1, then the epilogue */\n",
		            r->op->name);
		strbuf_addf(sb,
		            "AIC_HD void %s_epi(float x, float s0, float s1, const float *in, "
		            "const float *u, long row, long col, float *o)\n{\n"
		            "\t(void)s0; (void)s1; (void)u; (void)row; (void)col; (void)in;\n",
		            g->name);
		epi_inputs_used(g, use);
		emit_inputs_decl(sb, g, use);
		strbuf_addf(sb, "\tconst float v%d = x;\n", x);
		int need[256];
		if (g->nops <= 256) { /* prologue values the epilogue reads, recomputed */
			epi_recompute(g, need);
			for (int i = 0; i < g->red; i++)
				if (need[i])
					emit_ops(sb, g, i, i + 1);
		}
		strbuf_addf(sb, "\tconst float v%d = ", r->out);
		emit_apply(sb, g, "v%d");
		strbuf_addf(sb, "; /* %s = %s */\n", g->values[r->out].name, r->op->name);
		emit_ops(sb, g, g->red + 1, g->nops);
		for (int w = 0; w < g->nwrites; w++)
			if (!write_in_prologue(g, w))
				strbuf_addf(sb, "\to[%d] = v%d;\n", w, g->writes[w].value);
		strbuf_adds(sb, "}\n");
	}
	strbuf_adds(sb, "#endif\n");
}

static const char device_prelude[] =
    "#ifndef AIC_DEVICE_PRELUDE\n"
    "#define AIC_DEVICE_PRELUDE\n"
    "#include <cuda_runtime.h>\n"
    "#include <curand_kernel.h>\n"
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "#include <mutex>\n"
    "template <typename T, int V> struct alignas(sizeof(T) * V) aic_vec {\n\tT v[V];\n};\n"
    "template <int V, typename T> __device__ __forceinline__ void aic_ld(const T *p, float *f)\n"
    "{\n"
    "\tconst aic_vec<T, V> a = *reinterpret_cast<const aic_vec<T, V> *>(p);\n"
    "#pragma unroll\n"
    "\tfor (int j = 0; j < V; j++)\n"
    "\t\tf[j] = aic_to_float(a.v[j]);\n"
    "}\n"
    "template <int V, typename T> __device__ __forceinline__ void aic_st(T *p, const float *f)\n"
    "{\n"
    "\taic_vec<T, V> a;\n"
    "#pragma unroll\n"
    "\tfor (int j = 0; j < V; j++)\n"
    "\t\ta.v[j] = aic_from_float<T>(f[j]);\n"
    "\t*reinterpret_cast<aic_vec<T, V> *>(p) = a;\n"
    "}\n"
    "/* dropout: element i takes component i % 4 of curand_uniform4 after\n"
    " * curand_init(seed, i / 4, offset): independent of the launch geometry */\n"
    "__device__ __forceinline__ float4 aic_uniform4(unsigned long long seed,\n"
    "\t\t\t\t\t\tunsigned long long offset, unsigned long long grp)\n"
    "{\n"
    "\tcurandStatePhilox4_32_10_t st;\n"
    "\tcurand_init(seed, grp, offset, &st);\n"
    "\t/* = curand_uniform4(&st) when offset % 4 == 0, as PyTorch's offsets are; taking the\n"
    "\t * block curand_init computed skips the next one, which curand_uniform4 would compute\n"
    "\t * for a later call and the compiler does not drop */\n"
    "\treturn _curand_uniform4(st.output);\n"
    "}\n"
    "__device__ __forceinline__ float aic_uniform(unsigned long long seed, unsigned long long "
    "offset,\n\t\t\t\t\t    unsigned long long i)\n"
    "{\n"
    "\tconst float4 r = aic_uniform4(seed, offset, i >> 2);\n"
    "\tswitch (i & 3) {\n"
    "\tcase 0: return r.x;\n\tcase 1: return r.y;\n\tcase 2: return r.z;\n"
    "\tdefault: return r.w;\n\t}\n"
    "}\n"
    "/* V uniforms for elements i .. i+V-1 (i a multiple of V) */\n"
    "template <int V>\n"
    "__device__ __forceinline__ void aic_uniforms(unsigned long long seed, unsigned long long "
    "offset,\n\t\t\t\t\t     unsigned long long i, float *u)\n"
    "{\n"
    "\tif (V % 4 == 0) {\n"
    "#pragma unroll\n"
    "\t\tfor (int j = 0; j < V; j += 4) {\n"
    "\t\t\tconst float4 r = aic_uniform4(seed, offset, (i + j) >> 2);\n"
    "\t\t\tu[j] = r.x;\n\t\t\tu[(j + 1) % V] = r.y;\n"
    "\t\t\tu[(j + 2) % V] = r.z;\n\t\t\tu[(j + 3) % V] = r.w;\n"
    "\t\t}\n"
    "\t} else {\n"
    "#pragma unroll\n"
    "\t\tfor (int j = 0; j < V; j++)\n"
    "\t\t\tu[j] = aic_uniform(seed, offset, i + j);\n"
    "\t}\n"
    "}\n"
    "/* a warp-wide sum or max (butterfly: every lane gets the same bits) */\n"
    "template <bool MAX> __device__ __forceinline__ float aic_warp_reduce(float v)\n"
    "{\n"
    "#pragma unroll\n"
    "\tfor (int o = 16; o; o >>= 1) {\n"
    "\t\tconst float w = __shfl_xor_sync(0xffffffffu, v, o);\n"
    "\t\tv = MAX ? fmaxf(v, w) : v + w;\n"
    "\t}\n"
    "\treturn v;\n"
    "}\n"
    "/* a block-wide sum or max: the warps', then the warp of their results; every thread gets\n"
    " * the result; red holds 32 floats */\n"
    "template <bool MAX> __device__ __forceinline__ float aic_block_reduce(float v, float *red)\n"
    "{\n"
    "\tv = aic_warp_reduce<MAX>(v);\n"
    "\tconst int lane = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;\n"
    "\t__syncthreads();\n"
    "\tif (lane == 0)\n\t\tred[threadIdx.x >> 5] = v;\n"
    "\t__syncthreads();\n"
    "\treturn aic_warp_reduce<MAX>(lane < nw ? red[lane] : (MAX ? -INFINITY : 0.f));\n"
    "}\n"
    "static inline bool aic_aligned(const void *p, size_t bytes)\n"
    "{\n\treturn (uintptr_t)p % bytes == 0;\n}\n"
    "static inline __attribute__((unused)) int aic_sm_count(void)\n"
    "{\n"
    "\tstatic int sms;\n"
    "\tif (!sms) {\n"
    "\t\tint dev = 0;\n"
    "\t\tcudaGetDevice(&dev);\n"
    "\t\tcudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);\n"
    "\t\tif (sms <= 0)\n\t\t\tsms = 1;\n"
    "\t}\n"
    "\treturn sms;\n"
    "}\n"
    "/* a workspace, stream-ordered, from a pool of the device's own that keeps up to 64 MiB\n"
    " * across synchronizations; the default pool keeps nothing, so after each synchronization\n"
    " * the next launch mapped its workspace again on the host, between its kernels (session\n"
    " * 26). Where that pool cannot be made: the default pool. */\n"
    "static inline __attribute__((unused)) cudaError_t aic_ws_alloc(void **p, size_t bytes,\n"
    "\t\t\t\t\t\t\t\t cudaStream_t s)\n"
    "{\n"
    "\tstatic cudaMemPool_t pools[16];\n"
    "\tstatic int state[16]; /* 0 not tried, 1 made, 2 not possible */\n"
    "\tstatic std::mutex mu;\n"
    "\tint dev = -1;\n"
    "\tif (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 16)\n"
    "\t\treturn cudaMallocAsync(p, bytes, s);\n"
    "\tif (!__atomic_load_n(&state[dev], __ATOMIC_ACQUIRE)) {\n"
    "\t\tstd::lock_guard<std::mutex> lk(mu);\n"
    "\t\tif (!state[dev]) {\n"
    "\t\t\tcudaMemPoolProps pp;\n"
    "\t\t\tmemset(&pp, 0, sizeof(pp));\n"
    "\t\t\tpp.allocType = cudaMemAllocationTypePinned;\n"
    "\t\t\tpp.handleTypes = cudaMemHandleTypeNone;\n"
    "\t\t\tpp.location.type = cudaMemLocationTypeDevice;\n"
    "\t\t\tpp.location.id = dev;\n"
    "\t\t\tunsigned long long keep = 64ull << 20;\n"
    "\t\t\tint st = 2;\n"
    "\t\t\tif (cudaMemPoolCreate(&pools[dev], &pp) == cudaSuccess) {\n"
    "\t\t\t\tcudaMemPoolSetAttribute(pools[dev], cudaMemPoolAttrReleaseThreshold, &keep);\n"
    "\t\t\t\tst = 1;\n"
    "\t\t\t} else\n"
    "\t\t\t\t(void)cudaGetLastError(); /* not the launch's error */\n"
    "\t\t\t__atomic_store_n(&state[dev], st, __ATOMIC_RELEASE);\n"
    "\t\t}\n"
    "\t}\n"
    "\treturn state[dev] == 1 ? cudaMallocFromPoolAsync(p, bytes, pools[dev], s)\n"
    "\t\t\t       : cudaMallocAsync(p, bytes, s);\n"
    "}\n"
    "#endif\n";

/* Does input i need a modulo (broadcast)? */
int emit_bcast(const struct fgroup *g, int i)
{
	return !g->values[i].map.dims && g->values[i].numel != g->numel;
}

/* The summed writes of g (struct fwrite), their indices into w[] (at most 64). */
static int summed_writes(const struct fgroup *g, int *w)
{
	int n = 0;
	for (int k = 0; k < g->nwrites && n < 64; k++)
		if (g->writes[k].summed)
			w[n++] = k;
	return n;
}

/* Is input i of g a row vector (weight, bias: one value a column, read at column c)? */
static int row_vector(const struct fgroup *g, int i)
{
	return g->kind != FG_CHAIN && g->values[i].numel == g->cols && g->rows > 1;
}

static void emit_args_struct(struct strbuf *sb, const struct fgroup *g)
{
	strbuf_addf(sb, "\n/* pointers, sizes and dropout state of one launch of %s */\n", g->name);
	strbuf_addf(sb, "struct %s_args {\n", g->name);
	for (int i = 0; i < g->ninputs; i++) {
		strbuf_addf(sb, "\tconst %s *in_%s;\n", fdtype_ctype(g->values[i].dtype),
		            g->values[i].name);
		if (emit_bcast(g, i))
			strbuf_addf(sb, "\tlong m_%s; /* broadcast: read at i %% m */\n",
			            g->values[i].name);
	}
	for (int w = 0; w < g->nwrites; w++)
		strbuf_addf(sb, "\t%s *w_%s;%s\n", fdtype_ctype(g->writes[w].dtype),
		            g->values[g->writes[w].value].name,
		            g->writes[w].kept ? " /* kept */" : "");
	int sw[64];
	if (summed_writes(g, sw))
		strbuf_adds(sb, "\tlong *nparts; /* the launcher sets it: the rows of partial "
		                "sums the summed writes hold */\n");
	strbuf_adds(sb, "\tlong n, rows, cols;\n\tunsigned long long seed, offset;\n};\n");
}

/* Is input i loaded (use) at i % m: broadcast, not one value a row, not a row vector? */
static int read_mod(const struct fgroup *g, const int *use, int i)
{
	return use[i] && emit_bcast(g, i) && !g->values[i].per_row && !row_vector(g, i);
}

/* The first input before i that is read at i % m like i and had as many elements when recorded
 * (a batch norm's mean, scale, weight and bias), or -1. */
static int bcast_like(const struct fgroup *g, const int *use, int i)
{
	if (!read_mod(g, use, i))
		return -1;
	for (int k = 0; k < i; k++)
		if (read_mod(g, use, k) && g->values[k].numel == g->values[i].numel)
			return k;
	return -1;
}

/* Loads of the inputs flagged in use into x[k][0..V-1] at element i (a runtime expression).
 * Broadcast inputs of the same recorded length share one remainder where their m agree at run
 * time: a remainder is a 32-bit integer division (a few dozen instructions) a vector, and a
 * channels-last batch norm reads four such inputs an element (session 26). */
static void emit_loads(struct strbuf *sb, const struct fgroup *g, const int *use, const char *ind,
                       const char *xfmt)
{
	int share = 0;
	for (int i = 0; i < g->ninputs; i++)
		share |= bcast_like(g, use, i) >= 0;
	if (share) {
		strbuf_addf(sb, "%s{\n", ind);
		for (int i = 0; i < g->ninputs; i++)
			if (read_mod(g, use, i) && bcast_like(g, use, i) < 0)
				strbuf_addf(sb, "%sconst long r_%s = i %% a.m_%s;\n", ind,
				            g->values[i].name, g->values[i].name);
	}
	for (int i = 0; i < g->ninputs; i++) {
		if (!use[i])
			continue;
		if (g->values[i].per_row) { /* one value a row, the same for the V elements */
			strbuf_addf(sb, "%sfor (int j = 0; j < V; j++)\n%s\t", ind, ind);
			strbuf_addf(sb, xfmt, i);
			strbuf_addf(sb, "[j] = aic_to_float(a.in_%s[row]);\n", g->values[i].name);
			continue;
		}
		if (g->values[i].map.dims) { /* through its index map: one element at a time */
			strbuf_addf(sb, "%sfor (int j = 0; j < V; j++)\n%s\t", ind, ind);
			strbuf_addf(sb, xfmt, i);
			strbuf_addf(sb, "[j] = aic_to_float(a.in_%s[%s_map_%s(i + j)]);\n",
			            g->values[i].name, g->name, g->values[i].name);
			continue;
		}
		strbuf_addf(sb, "%saic_ld<V>(a.in_%s + ", ind, g->values[i].name);
		const char *nm = g->values[i].name;
		int like = share ? bcast_like(g, use, i) : -1;
		if (row_vector(g, i))
			strbuf_adds(sb, "c"); /* a row vector (weight, bias): no modulo */
		else if (like >= 0)
			strbuf_addf(sb, "(a.m_%s == a.m_%s ? r_%s : i %% a.m_%s)", nm,
			            g->values[like].name, g->values[like].name, nm);
		else if (share && read_mod(g, use, i))
			strbuf_addf(sb, "r_%s", nm);
		else if (emit_bcast(g, i))
			strbuf_addf(sb, "i %% a.m_%s", nm);
		else
			strbuf_adds(sb, "i");
		strbuf_adds(sb, ", ");
		strbuf_addf(sb, xfmt, i);
		strbuf_adds(sb, ");\n");
	}
	if (share)
		strbuf_addf(sb, "%s}\n", ind);
}

static void emit_uniforms(struct strbuf *sb, const struct fgroup *g, int from, int to,
                          const char *ind)
{
	for (int k = from; k < to; k++) {
		int seen = 0; /* a recomputed dropout and its backward share the uniforms */
		for (int e = from; e < k; e++)
			seen |= g->ops[e].drop == g->ops[k].drop;
		if (g->ops[k].drop >= 0 && !seen)
			strbuf_addf(sb, "%saic_uniforms<V>(a.seed, a.offset + %dull, i, u[%d]);\n",
			            ind, 4 * g->ops[k].drop, g->ops[k].drop);
	}
}

/* Per-element gather into in[] and uu[], for j in 0..V-1. */
static void emit_gather(struct strbuf *sb, const struct fgroup *g, const int *use, int from, int to,
                        const char *ind, const char *xfmt)
{
	strbuf_addf(sb, "%sfloat in[%d] = {", ind, g->ninputs);
	for (int i = 0; i < g->ninputs; i++) {
		if (i)
			strbuf_adds(sb, ", ");
		if (use[i]) {
			strbuf_addf(sb, xfmt, i);
			strbuf_adds(sb, "[j]");
		} else
			strbuf_adds(sb, "0.f");
	}
	strbuf_adds(sb, "};\n");
	strbuf_addf(sb, "%sfloat uu[%d] = {", ind, g->ndrop ? g->ndrop : 1);
	if (!g->ndrop)
		strbuf_adds(sb, "0.f");
	for (int d = 0; d < g->ndrop; d++) { /* uu[d]: the d-th dropout's (by ordinal) */
		int in_range = 0;
		for (int k = from; k < to; k++)
			in_range |= g->ops[k].drop == d;
		if (in_range)
			strbuf_addf(sb, "%su[%d][j]", d ? ", " : "", d);
		else
			strbuf_addf(sb, "%s0.f", d ? ", " : "");
	}
	strbuf_adds(sb, "};\n");
}

/* The writes of a phase (1 prologue, 3 epilogue, -1 all) at element i; summed writes only when
 * sum is 0 (the warp kernel adds them up instead: emit_row_kernel_one). */
static void emit_stores(struct strbuf *sb, const struct fgroup *g, int phase, int sum,
                        const char *ind)
{
	for (int w = 0; w < g->nwrites; w++) {
		if (phase >= 0 && write_in_prologue(g, w) != (phase == 1))
			continue;
		if (sum && g->writes[w].summed)
			continue;
		strbuf_addf(sb, "%saic_st<V>(a.w_%s + i, y[%d]);\n", ind,
		            g->values[g->writes[w].value].name, w);
	}
}

static void emit_chain_kernel(struct strbuf *sb, const struct fgroup *g)
{
	const char *nm = g->name;
	int use[64];
	inputs_used(g, 0, g->nops, use);
	strbuf_addf(sb,
	            "\n/* loads of V elements from element i */\n"
	            "template <int V>\n__device__ __forceinline__ void %s_load(const %s_args &a, "
	            "long i, float (&x)[%d][V])\n{\n",
	            nm, nm, g->ninputs);
	for (int i = 0; i < g->ninputs; i++)
		if (use[i] && g->values[i].per_row) { /* V divides cols: one row a vector */
			strbuf_adds(sb, "\tconst long row = i / a.cols;\n");
			break;
		}
	emit_loads(sb, g, use, "\t", "x[%d]");
	strbuf_adds(sb, "}\n");
	strbuf_addf(sb,
	            "\n/* math and stores of V elements from element i */\n"
	            "template <int V>\n__device__ __forceinline__ void %s_compute(const %s_args "
	            "&a, long i, const float (&x)[%d][V])\n{\n",
	            nm, nm, g->ninputs);
	strbuf_addf(sb, "\tfloat u[%d][V];\n\t(void)u;\n", g->ndrop ? g->ndrop : 1);
	emit_uniforms(sb, g, 0, g->nops, "\t");
	strbuf_addf(sb, "\tfloat y[%d][V];\n#pragma unroll\n\tfor (int j = 0; j < V; j++) {\n",
	            g->nwrites);
	emit_gather(sb, g, use, 0, g->nops, "\t\t", "x[%d]");
	strbuf_addf(sb, "\t\tfloat o[%d];\n\t\t%s_elem(in, uu, o);\n", g->nwrites, nm);
	strbuf_addf(sb,
	            "#pragma unroll\n\t\tfor (int k = 0; k < %d; k++)\n\t\t\ty[k][j] = o[k];\n"
	            "\t}\n",
	            g->nwrites);
	emit_stores(sb, g, -1, 0, "\t");
	strbuf_adds(sb, "}\n");
	strbuf_addf(
	    sb,
	    "\n/* grid-stride loop over vectors of V elements, E vectors per thread per step;\n"
	    " * block 0 also does the n %% V tail */\n"
	    "template <int V, int E>\n__global__ void __launch_bounds__(512) %s_kernel(const "
	    "%s_args a)\n{\n"
	    "\tconst long nvec = a.n / V;\n"
	    "\tconst long step = (long)gridDim.x * blockDim.x * E;\n"
	    "\tfor (long base = (long)blockIdx.x * blockDim.x * E + threadIdx.x; base < nvec;\n"
	    "\t     base += step) {\n"
	    "\t\tfloat x[E][%d][V];\n"
	    "#pragma unroll\n"
	    "\t\tfor (int e = 0; e < E; e++) {\n"
	    "\t\t\tconst long vi = base + (long)e * blockDim.x;\n"
	    "\t\t\tif (vi < nvec)\n"
	    "\t\t\t\t%s_load<V>(a, vi * V, x[e]);\n"
	    "\t\t}\n"
	    "#pragma unroll\n"
	    "\t\tfor (int e = 0; e < E; e++) {\n"
	    "\t\t\tconst long vi = base + (long)e * blockDim.x;\n"
	    "\t\t\tif (vi < nvec)\n"
	    "\t\t\t\t%s_compute<V>(a, vi * V, x[e]);\n"
	    "\t\t}\n"
	    "\t}\n"
	    "\tif (V > 1 && blockIdx.x == 0)\n"
	    "\t\tfor (long i = nvec * V + threadIdx.x; i < a.n; i += blockDim.x) {\n"
	    "\t\t\tfloat x1[%d][1];\n"
	    "\t\t\t%s_load<1>(a, i, x1);\n"
	    "\t\t\t%s_compute<1>(a, i, x1);\n"
	    "\t\t}\n"
	    "}\n",
	    nm, nm, g->ninputs, nm, nm, g->ninputs, nm, nm);
}

/* Vectors a lane in a row group's warp kernel: 8 of up to 16 bytes, so 32 (f32) or 64 (16-bit
 * types) staged floats in registers. */
#define ROW_WARP_K 8

static const char *red_name(const struct fgroup *g)
{
	return g->ops[g->red].op->name;
}

/* See fusion.h. */
void emit_red_update(char *buf, size_t n, const struct fgroup *g, const char *acc2)
{
	const struct fopnode *r = &g->ops[g->red];
	const char *rn = r->op->name;
	if (!strcmp(rn, "layer_norm_backward")) { /* g = dy * gamma, and g * xh, in one pass */
		char gm[32] = "1.f";
		if (r->nargs > 4)
			snprintf(gm, sizeof(gm), "in[%d]", r->arg[4]);
		snprintf(buf, n,
		         "{ const float g_ = v * %s; acc += g_; %s += g_ * (in[%d] - in[%d]) * "
		         "in[%d]; }",
		         gm, acc2, r->arg[1], r->arg[2], r->arg[3]);
	} else if (!strcmp(rn, "rms_norm_backward")) { /* x * x, and gw * x (o[nwrites]) */
		snprintf(buf, n, "{ acc += v * v; %s += o[%d] * v; }", acc2, g->nwrites);
	} else if (!strcmp(rn, "softmax") || !strcmp(rn, "log_softmax")) {
		snprintf(buf, n, "acc = fmaxf(acc, v)");
	} else if (!strcmp(rn, "rms_norm")) {
		snprintf(buf, n, "acc = acc + v * v");
	} else { /* layer_norm, log_softmax_backward: the sum */
		snprintf(buf, n, "acc = acc + v");
	}
}

/*
 * The row statistics s0, s1 from the running acc (and acc1) of a row: block-wide (warp 0,
 * aic_block_reduce over the block, the second pass over the row in shared memory aic_xs) or
 * warp-wide (warp 1: aic_warp_reduce, the second pass over the lane's values in registers
 * xs[q][j], q < K, column ((q * 32 + lane) * V + j)).
 */
static void emit_row_stats(struct strbuf *sb, const struct fgroup *g, int warp)
{
	const struct fopnode *r = &g->ops[g->red];
	const char *rn = red_name(g);
	int softmax = !strcmp(rn, "softmax") || !strcmp(rn, "log_softmax");
	int ln = !strcmp(rn, "layer_norm"), lsb = !strcmp(rn, "log_softmax_backward");
	int lnb = !strcmp(rn, "layer_norm_backward"), rmsb = !strcmp(rn, "rms_norm_backward");
	const char *sum = warp ? "aic_warp_reduce<false>(%s)" : "aic_block_reduce<false>(%s, red)";
	const char *max = warp ? "aic_warp_reduce<true>(%s)" : "aic_block_reduce<true>(%s, red)";
	/* the second pass: xv each staged value of the row */
	const char *pass = warp ? "\t\tfor (int q = 0; q < K; q++)\n"
	                          "\t\t\tfor (int j = 0; j < V; j++)\n"
	                          "\t\t\t\tif (((long)q * 32 + lane) * V < cols) {\n"
	                          "\t\t\t\t\tconst float xv = xs[q][j];\n"
	                        : "\t\tfor (long c = threadIdx.x; c < cols; c += blockDim.x) {\n"
	                          "\t\t\tconst float xv = aic_xs[c];\n";
	const char *in = warp ? "\t\t\t\t\t" : "\t\t\t";
	const char *end = warp ? "\t\t\t\t}\n" : "\t\t}\n";
	if (softmax || ln) {
		strbuf_adds(sb, "\t\tconst float s0 = ");
		strbuf_addf(sb, softmax ? max : sum, "acc");
		strbuf_adds(sb, ln ? " / (float)cols;\n" : ";\n");
		strbuf_addf(sb, "\t\tfloat acc2 = 0.f;\n%s", pass);
		if (softmax)
			strbuf_addf(sb, "%sacc2 += expf(xv - s0);\n", in);
		else
			strbuf_addf(sb, "%sconst float d = xv - s0;\n%sacc2 += d * d;\n", in, in);
		strbuf_addf(sb, "%s\t\tacc2 = ", end);
		strbuf_addf(sb, sum, "acc2");
		strbuf_adds(sb, ";\n");
	} else if (lsb) { /* the row's sum of dy */
		strbuf_adds(sb, "\t\tconst float s0 = ");
		strbuf_addf(sb, sum, "acc");
		strbuf_adds(sb, ";\n");
	} else if (lnb || rmsb) { /* the row's means of g and g * xh; of x * x and gw * x */
		strbuf_adds(sb, "\t\tconst float s0 = ");
		if (rmsb)
			strbuf_adds(sb, "aic_rsqrt(");
		strbuf_addf(sb, sum, "acc");
		strbuf_adds(sb, " / (float)cols");
		if (rmsb) {
			strbuf_adds(sb, " + ");
			emit_lit(sb, r->num);
			strbuf_adds(sb, ")");
		}
		strbuf_adds(sb, ";\n\t\tconst float s1 = ");
		strbuf_addf(sb, sum, "acc1");
		strbuf_adds(sb, " / (float)cols;\n");
	} else {
		strbuf_adds(sb, "\t\tconst float s0 = 0.f;\n\t\tconst float acc2 = ");
		strbuf_addf(sb, sum, "acc");
		strbuf_adds(sb, ";\n");
	}
	if (!strcmp(rn, "softmax"))
		strbuf_adds(sb, "\t\tconst float s1 = 1.f / acc2;\n");
	else if (!strcmp(rn, "log_softmax"))
		strbuf_adds(sb, "\t\tconst float s1 = logf(acc2);\n");
	else if (lsb)
		strbuf_adds(sb, "\t\tconst float s1 = 0.f;\n");
	else if (lnb || rmsb)
		;
	else {
		strbuf_adds(sb, "\t\tconst float s1 = aic_rsqrt(acc2 / (float)cols + ");
		emit_lit(sb, r->num);
		strbuf_adds(sb, ");\n");
	}
}

/* Slots of the prologue's o[]: the writes, and for rms_norm_backward the sum's second factor
 * at o[nwrites]. */
static int pro_slots(const struct fgroup *g)
{
	return g->nwrites + !strcmp(red_name(g), "rms_norm_backward");
}

/*
 * A row group's kernel: warp 0, <name>_kernel, one block per row (grid-stride over rows), the
 * row's reduction input staged in shared memory (cols floats, dynamic); warp 1,
 * <name>_wkernel, one warp per row (several rows a block, grid-stride over the warps), each
 * lane's K vectors of V columns (q * 32 + lane) * V held in registers, warp shuffles for the
 * statistics: no shared memory, no __syncthreads. The launcher picks the warp kernel when the
 * row fits (cols <= 32 * V * <name>_WARP_K).
 */
/* Row vectors (weight, bias: numel == cols, read at column c) the warp kernel's epilogue reads
 * and the prologue does not: loaded once a warp before its rows (they depend on the column
 * alone), so their latency overlaps the row's own loads instead of following the statistics.
 * Only while they fit beside the row in registers: K * V floats each, at most 64 in all. */
static int warp_hoisted(const struct fgroup *g, const int *pro, const int *epi, int *hoist)
{
	int n = 0;
	for (int i = 0; i < g->ninputs; i++) {
		hoist[i] = epi[i] && !pro[i] && !g->values[i].per_row && !g->values[i].map.dims &&
		           row_vector(g, i);
		n += hoist[i];
	}
	if (!n || n * ROW_WARP_K * fgroup_max_vec(g) > 64) {
		for (int i = 0; i < g->ninputs; i++)
			hoist[i] = 0;
		return 0;
	}
	return n;
}

/* The inputs a row group's prologue (pro) and epilogue (epi) read. */
static void row_inputs(const struct fgroup *g, int *pro, int *epi)
{
	const struct fopnode *r = &g->ops[g->red];
	inputs_used(g, 0, g->red, pro);
	if (r->arg[0] < g->ninputs)
		pro[r->arg[0]] = 1;
	if (!strcmp(red_name(g), "layer_norm_backward"))
		for (int k = 1; k < r->nargs; k++) /* its sums need x, mean, rstd, gamma */
			pro[r->arg[k]] = 1;
	epi_inputs_used(g, epi);
}

/* warp_hoisted for row group g: does its warp kernel take the template flag H? */
static int row_hoists(const struct fgroup *g, int *hoist)
{
	int pro[64], epi[64];
	row_inputs(g, pro, epi);
	return warp_hoisted(g, pro, epi, hoist);
}

/* The inputs of use[] for the epilogue's x[]: from registers, src[slot[i]], where the flag cond
 * holds, else loaded (the warp kernel's kept and hoisted inputs; at indent t). */
static void emit_regs_or_loads(struct strbuf *sb, const struct fgroup *g, const int *use,
                               const int *slot, const char *cond, const char *src, const char *t)
{
	strbuf_addf(sb, "%sif (%s) {\n", t, cond);
	for (int i = 0; i < g->ninputs; i++)
		if (use[i])
			strbuf_addf(
			    sb, "%s\tfor (int j = 0; j < V; j++)\n%s\t\tx[%d][j] = %s[%d][j];\n", t,
			    t, i, src, slot[i]);
	strbuf_addf(sb, "%s} else {\n", t);
	char t2[16];
	snprintf(t2, sizeof(t2), "%s\t", t);
	emit_loads(sb, g, use, t2, "x[%d]");
	strbuf_addf(sb, "%s}\n", t);
}

/*
 * One of a row group's two kernels (warp: the warp kernel). The warp kernel of a group with
 * hoisted row vectors (warp_hoisted) takes a flag H: with it, they are loaded once before the
 * rows; the launcher sets it when the launch is latency-bound (its threads fit in the GPU at
 * half occupancy), where their extra registers cost nothing. The warp kernel adds summed
 * writes (struct fwrite) over the rows its block takes: in registers a lane, then the block's
 * warps in order in shared memory. Each block writes its row of partial sums at blockIdx.x.
 * This is deterministic, and it writes and reads back n floats less than a summand an element.
 * The block kernel stores a summand an element, so its partial rows are the rows.
 */
static void emit_row_kernel_one(struct strbuf *sb, const struct fgroup *g, int warp)
{
	const char *nm = g->name;
	const char *rn = red_name(g);
	int softmax = !strcmp(rn, "softmax") || !strcmp(rn, "log_softmax");
	int pro[64], epi[64], slots = pro_slots(g);
	row_inputs(g, pro, epi);
	int hoist[64] = {0}, sw[64];
	/* the block kernel (long rows) stores a summand an element, as before the partial sums:
	 * its rows [0, rows) are then the column group's input; only the warp kernel's partial
	 * sums have run on a GPU (Llama's RMSNorm, tests/gpu/t-fused-apply.sh) */
	int ns = warp ? summed_writes(g, sw) : 0;
	struct strbuf wpre = STRBUF_INIT; /* the warp kernel's, before its rows */
	int nh = warp ? warp_hoisted(g, pro, epi, hoist) : 0;
	/* the warp kernel keeps in registers what both passes read (the backward's dy and
	 * weight): its second pass loads only the epilogue's own inputs */
	int keep[64] = {0}, nk = 0;
	for (int i = 0; warp && i < g->ninputs; i++)
		if (pro[i] && epi[i])
			keep[i] = ++nk; /* slot + 1 */
	if (nh) {
		strbuf_addf(&wpre,
		            "\tfloat xw[K][%d][V];\n\t(void)xw;\n\tif (H) {\n#pragma unroll\n"
		            "\t\tfor (int q = 0; q < K; q++) {\n"
		            "\t\t\tconst long c = ((long)q * 32 + lane) * V;\n"
		            "\t\t\tif (c >= cols)\n\t\t\t\tcontinue;\n",
		            g->ninputs);
		emit_loads(&wpre, g, hoist, "\t\t\t", "xw[q][%d]");
		strbuf_adds(&wpre, "\t\t}\n\t}\n");
	}
	if (ns) {
		strbuf_addf(&wpre,
		            "\textern __shared__ float aic_ps[]; /* the block's partial sums */\n"
		            "\tfloat cs[%d][K][V]; /* the lane's sums of the summed writes */\n"
		            "#pragma unroll\n\tfor (int k = 0; k < %d; k++)\n#pragma unroll\n"
		            "\t\tfor (int q = 0; q < K; q++)\n#pragma unroll\n"
		            "\t\t\tfor (int j = 0; j < V; j++)\n\t\t\t\tcs[k][q][j] = 0.f;\n",
		            ns, ns);
	}
	const char *t = warp ? "\t\t\t\t" : "\t\t\t"; /* the per-vector body's indent */
	const char *t1 = warp ? "\t\t\t\t\t" : "\t\t\t\t";
	if (warp)
		strbuf_addf(
		    sb,
		    "\n/* one warp per row (blockDim.x / 32 rows a block, grid-stride over rows);\n"
		    " * lane l holds columns (q * 32 + l) * V .. + V - 1, q < K, of the row's %s\n"
		    " * input in registers; the statistics are warp shuffles */\n"
		    "template <int V, int K%s>\n__global__ void __launch_bounds__(512) "
		    "%s_wkernel(const "
		    "%s_args a)\n{\n"
		    "\tconst long cols = a.cols;\n"
		    "\tconst int lane = threadIdx.x & 31;\n"
		    "\tconst long wpb = blockDim.x >> 5;\n"
		    "%s"
		    "\tfor (long row = (long)blockIdx.x * wpb + (threadIdx.x >> 5); row < a.rows;\n"
		    "\t     row += (long)gridDim.x * wpb) {\n"
		    "\t\tconst long rb = row * cols;\n"
		    "\t\tfloat xs[K][V];\n"
		    "\t\t/* inputs both passes read, while they fit in registers */\n"
		    "\t\tconstexpr bool KP = K * V * %d <= 32;\n"
		    "\t\tfloat xk[KP ? K : 1][%d][V];\n\t\t(void)xk;\n"
		    "\t\tfloat acc = %s, acc1 = 0.f;\n\t\t(void)acc1;\n"
		    "#pragma unroll\n"
		    "\t\tfor (int q = 0; q < K; q++) {\n"
		    "\t\t\tconst long c = ((long)q * 32 + lane) * V;\n"
		    "\t\t\tif (c >= cols)\n\t\t\t\tcontinue;\n"
		    "\t\t\t{\n"
		    "\t\t\t\tconst long i = rb + c;\n"
		    "\t\t\t\tfloat x[%d][V];\n\t\t\t\t(void)x;\n",
		    rn, nh ? ", bool H" : "", nm, nm, wpre.len ? wpre.buf : "", nk ? nk : 1,
		    nk ? nk : 1, softmax ? "-INFINITY" : "0.f", g->ninputs);
	else
		strbuf_addf(
		    sb,
		    "\n/* one block per row (grid-stride over rows); the row's %s input is staged\n"
		    " * in shared memory (cols floats, dynamic) */\n"
		    "template <int V>\n__global__ void __launch_bounds__(512) %s_kernel(const "
		    "%s_args a)\n{\n"
		    "\textern __shared__ float aic_xs[];\n"
		    "\t__shared__ float red[32];\n"
		    "\tconst long cols = a.cols;\n"
		    "\tfor (long row = blockIdx.x; row < a.rows; row += gridDim.x) {\n"
		    "\t\tconst long rb = row * cols;\n"
		    "\t\tfloat acc = %s, acc1 = 0.f;\n\t\t(void)acc1;\n"
		    "\t\tfor (long c = (long)threadIdx.x * V; c < cols; c += (long)blockDim.x * V) "
		    "{\n"
		    "\t\t\tconst long i = rb + c;\n"
		    "\t\t\tfloat x[%d][V];\n\t\t\t(void)x;\n",
		    rn, nm, nm, softmax ? "-INFINITY" : "0.f", g->ninputs);
	strbuf_release(&wpre);
	emit_loads(sb, g, pro, t, "x[%d]");
	for (int i = 0; i < g->ninputs; i++)
		if (keep[i])
			strbuf_addf(sb,
			            "%sif (KP)\n%s\tfor (int j = 0; j < V; j++)\n%s\t\txk[KP ? q : "
			            "0][%d][j] = x[%d][j];\n",
			            t, t, t, keep[i] - 1, i);
	strbuf_addf(sb, "%sfloat u[%d][V];\n%s(void)u;\n", t, g->ndrop ? g->ndrop : 1, t);
	emit_uniforms(sb, g, 0, g->red, t);
	strbuf_addf(sb, "%sfloat y[%d][V];\n#pragma unroll\n%sfor (int j = 0; j < V; j++) {\n", t,
	            g->nwrites, t);
	emit_gather(sb, g, pro, 0, g->red, t1, "x[%d]");
	char upd[256];
	emit_red_update(upd, sizeof(upd), g, "acc1");
	strbuf_addf(sb,
	            "%sfloat o[%d] = {};\n"
	            "%sconst float v = %s_pro(in, uu, row, c + j, o);\n"
	            "%s%s = v;\n"
	            "%s%s;\n"
	            "#pragma unroll\n%sfor (int k = 0; k < %d; k++)\n%s\ty[k][j] = o[k];\n"
	            "%s}\n",
	            t1, slots, t1, nm, t1, warp ? "xs[q][j]" : "aic_xs[c + j]", t1, upd, t1,
	            g->nwrites, t1, t);
	emit_stores(sb, g, 1, warp, t);
	strbuf_adds(sb, warp ? "\t\t\t}\n\t\t}\n" : "\t\t}\n");
	emit_row_stats(sb, g, warp);
	if (warp)
		strbuf_addf(sb,
		            "#pragma unroll\n"
		            "\t\tfor (int q = 0; q < K; q++) {\n"
		            "\t\t\tconst long c = ((long)q * 32 + lane) * V;\n"
		            "\t\t\tif (c >= cols)\n\t\t\t\tcontinue;\n"
		            "\t\t\t{\n"
		            "\t\t\t\tconst long i = rb + c;\n"
		            "\t\t\t\tfloat x[%d][V];\n\t\t\t\t(void)x;\n",
		            g->ninputs);
	else
		strbuf_addf(
		    sb,
		    "\t\tfor (long c = (long)threadIdx.x * V; c < cols; c += (long)blockDim.x "
		    "* V) {\n"
		    "\t\t\tconst long i = rb + c;\n"
		    "\t\t\tfloat x[%d][V];\n\t\t\t(void)x;\n",
		    g->ninputs);
	int rest[64];
	for (int i = 0; i < g->ninputs; i++)
		rest[i] = epi[i] && !hoist[i] && !keep[i];
	emit_loads(sb, g, rest, t, "x[%d]");
	int slot[64];
	for (int i = 0; i < g->ninputs; i++)
		slot[i] = keep[i] - 1;
	if (nk)
		emit_regs_or_loads(sb, g, keep, slot, "KP", "xk[KP ? q : 0]", t);
	if (nh) {
		for (int i = 0; i < g->ninputs; i++)
			slot[i] = i;
		emit_regs_or_loads(sb, g, hoist, slot, "H", "xw[q]", t);
	}
	strbuf_addf(sb, "%sfloat u[%d][V];\n%s(void)u;\n", t, g->ndrop ? g->ndrop : 1, t);
	emit_uniforms(sb, g, g->red + 1, g->nops, t);
	strbuf_addf(sb, "%sfloat y[%d][V];\n#pragma unroll\n%sfor (int j = 0; j < V; j++) {\n", t,
	            g->nwrites, t);
	emit_gather(sb, g, epi, g->red + 1, g->nops, t1, "x[%d]");
	strbuf_addf(sb,
	            "%sfloat o[%d] = {};\n"
	            "%s%s_epi(%s, s0, s1, in, uu, row, c + j, o);\n"
	            "#pragma unroll\n%sfor (int k = 0; k < %d; k++)\n%s\ty[k][j] = o[k];\n"
	            "%s}\n",
	            t1, g->nwrites, t1, nm, warp ? "xs[q][j]" : "aic_xs[c + j]", t1, g->nwrites, t1,
	            t);
	emit_stores(sb, g, 3, warp, t);
	for (int k = 0; k < ns; k++) /* warp kernel only (ns 0 in the block kernel) */
		strbuf_addf(sb, "%sfor (int j = 0; j < V; j++)\n%s\tcs[%d][q][j] += y[%d][j];\n", t,
		            t, k, sw[k]);
	strbuf_adds(sb, warp ? "\t\t\t}\n\t\t}\n\t}\n" : "\t\t}\n\t\t__syncthreads();\n\t}\n");
	if (ns) { /* the warps' sums in order, then the block's row of partials */
		strbuf_adds(sb, "\tfor (long w = 0; w < wpb; w++) {\n"
		                "\t\tif ((threadIdx.x >> 5) == w) {\n#pragma unroll\n"
		                "\t\t\tfor (int q = 0; q < K; q++) {\n"
		                "\t\t\t\tconst long c = ((long)q * 32 + lane) * V;\n"
		                "\t\t\t\tif (c >= cols)\n\t\t\t\t\tcontinue;\n"
		                "#pragma unroll\n\t\t\t\tfor (int j = 0; j < V; j++) {\n");
		for (int k = 0; k < ns; k++)
			strbuf_addf(sb,
			            "\t\t\t\t\tfloat *const p%d = &aic_ps[%d * cols + c + j];\n"
			            "\t\t\t\t\t*p%d = (w ? *p%d : 0.f) + cs[%d][q][j];\n",
			            k, k, k, k, k);
		strbuf_adds(sb, "\t\t\t\t}\n\t\t\t}\n\t\t}\n\t\t__syncthreads();\n\t}\n"
		                "\tfor (long c = threadIdx.x; c < cols; c += blockDim.x) {\n");
		for (int k = 0; k < ns; k++)
			strbuf_addf(
			    sb,
			    "\t\ta.w_%s[(long)blockIdx.x * cols + c] = aic_ps[%d * cols + c];\n",
			    g->values[g->writes[sw[k]].value].name, k);
		strbuf_adds(sb, "\t}\n");
	}
	strbuf_adds(sb, "}\n");
}

static void emit_row_kernel(struct strbuf *sb, const struct fgroup *g)
{
	strbuf_addf(sb,
	            "\n/* the warp kernel's vectors a lane: rows of up to 32 * V * %d columns */\n"
	            "#define %s_WARP_K %d\n",
	            ROW_WARP_K, g->name, ROW_WARP_K);
	emit_row_kernel_one(sb, g, 0);
	emit_row_kernel_one(sb, g, 1);
}

/* The per-column tail of a column group: s[k] holds column c's col_sum k; reads the per-column
 * inputs, runs the fin ops and writes the per-column writes (at indent ind). */
static void emit_col_fin(struct strbuf *sb, const struct fgroup *g, const int *fin, const char *c,
                         const char *ind)
{
	strbuf_addf(sb, "%sfloat in[%d] = {", ind, g->ninputs);
	for (int i = 0; i < g->ninputs; i++) {
		strbuf_adds(sb, i ? ", " : "");
		if (fin[i])
			strbuf_addf(sb, "aic_to_float(a.in_%s[%s])", g->values[i].name, c);
		else
			strbuf_adds(sb, "0.f");
	}
	strbuf_addf(sb, "};\n%s(void)in;\n%sfloat o[%d] = {};\n%s%s_fin(s, in, o);\n", ind, ind,
	            g->nwrites, ind, g->name);
	for (int w = 0; w < g->nwrites; w++)
		if (g->values[g->writes[w].value].per_col)
			strbuf_addf(sb, "%sa.w_%s[%s] = aic_from_float<%s>(o[%d]);\n", ind,
			            g->values[g->writes[w].value].name, c,
			            fdtype_ctype(g->writes[w].dtype), w);
}

/*
 * A column group's two kernels. <name>_kernel adds the rows of a chunk (blockIdx.y) for a tile
 * of 32 * V columns (blockIdx.x); with one chunk (gridDim.y == 1) it finishes the columns
 * itself, one launch in all. Otherwise <name>_finish adds the chunks: 8 rows of threads a tile
 * of 32 columns, or 32 past 64 chunks, each taking every 8th (32nd) chunk, then added in order in
 * shared memory. Both orders are fixed, so the sums are deterministic for a launch
 * configuration. (With 8 rows of threads, a batch norm's 64 columns took 2 blocks to add 528 to
 * 2,112 chunks, about 50 ns a chunk: 13 to 100 us beside a main kernel of about 50; session 26.
 * The RMS norm backward's 17 chunks, measured against compile, keep their 8.)
 */
static void emit_col_kernel(struct strbuf *sb, const struct fgroup *g)
{
	const char *nm = g->name;
	int use[64], fin[64];
	col_inputs_used(g, 0, use);
	col_inputs_used(g, 1, fin);
	int ns = g->ncolsum;
	strbuf_addf(
	    sb,
	    "\n/* column tiles of blockDim.x * V columns (blockIdx.x) by chunks of rows "
	    "(blockIdx.y):\n"
	    " * thread (x, y) adds the summands of its V columns over rows y, y + blockDim.y, ...\n"
	    " * of the chunk. blockDim.x is 32, or fewer where the columns are fewer than 32 * V, "
	    "so\n"
	    " * that a warp reads several whole rows instead of leaving lanes idle; the block "
	    "adds\n"
	    " * the partials of its rows of threads in order in shared memory\n"
	    " * (%d * blockDim.y * blockDim.x * V floats, dynamic) and writes\n"
	    " * ws[(k * gridDim.y + chunk) * cols + col] for col_sum k, or with one chunk the\n"
	    " * columns' results (ws unused) */\n"
	    "template <int V>\n__global__ void __launch_bounds__(512) %s_kernel(const %s_args "
	    "a, float *ws, long chunk)\n{\n"
	    "\textern __shared__ float aic_cs[];\n"
	    "\tconst long cols = a.cols;\n"
	    "\tconst long c = ((long)blockIdx.x * blockDim.x + threadIdx.x) * V;\n"
	    "\tconst long r0 = (long)blockIdx.y * chunk;\n"
	    "\tconst long r1 = r0 + chunk < a.rows ? r0 + chunk : a.rows;\n"
	    "\tfloat acc[%d][V];\n"
	    "#pragma unroll\n\tfor (int k = 0; k < %d; k++)\n#pragma unroll\n"
	    "\t\tfor (int j = 0; j < V; j++)\n\t\t\tacc[k][j] = 0.f;\n"
	    "\tif (c < cols) {\n",
	    ns, nm, nm, ns, ns);
	/* Row vectors (one value a column: a batch norm's mean) are read once, before the rows;
	 * the loop read them again every row, since the store between could alias them. The row
	 * loop stays unrolled 4 times: where the group stores nothing a row (an RMS norm
	 * backward's short column) that puts 4 rows of loads in flight (3b7c0f1 measured it);
	 * where it stores, each row's loads wait behind the previous row's store (the pointers may
	 * alias). Not unrolling (53 registers a thread at 8 columns for ResNet's group, from 62)
	 * and loading 2 to 8 rows before the first store were timed on groups that store (session
	 * 28): neither was faster, the second's registers costing as many threads. */
	int rows_use[64] = {0}, once[64] = {0};
	for (int i = 0; i < g->ninputs; i++) {
		const struct fvalue *v = &g->values[i];
		once[i] = use[i] && row_vector(g, i) && !v->per_row && !v->map.dims;
		rows_use[i] = use[i] && !once[i];
	}
	strbuf_addf(sb, "\t\tfloat x[%d][V];\n\t\t(void)x;\n", g->ninputs);
	emit_loads(sb, g, once, "\t\t", "x[%d]");
	strbuf_adds(sb, "#pragma unroll 4\n"
	                "\t\tfor (long row = r0 + threadIdx.y; row < r1; row += blockDim.y) {\n"
	                "\t\t\tconst long i = row * cols + c;\n");
	emit_loads(sb, g, rows_use, "\t\t\t", "x[%d]");
	strbuf_addf(sb, "\t\t\tfloat u[%d][V];\n\t\t\t(void)u;\n", g->ndrop ? g->ndrop : 1);
	emit_uniforms(sb, g, 0, g->nops, "\t\t\t");
	strbuf_addf(sb,
	            "\t\t\tfloat y[%d][V];\n\t\t\t(void)y;\n#pragma unroll\n"
	            "\t\t\tfor (int j = 0; j < V; j++) {\n",
	            g->nwrites);
	emit_gather(sb, g, use, 0, g->nops, "\t\t\t\t", "x[%d]");
	strbuf_addf(sb,
	            "\t\t\t\tfloat s[%d], o[%d] = {};\n"
	            "\t\t\t\t%s_col(in, uu, row, c + j, s, o);\n"
	            "#pragma unroll\n\t\t\t\tfor (int k = 0; k < %d; k++)\n"
	            "\t\t\t\t\tacc[k][j] += s[k];\n"
	            "#pragma unroll\n\t\t\t\tfor (int k = 0; k < %d; k++)\n"
	            "\t\t\t\t\ty[k][j] = o[k];\n\t\t\t}\n",
	            ns, g->nwrites, nm, ns, g->nwrites);
	for (int w = 0; w < g->nwrites; w++)
		if (!g->values[g->writes[w].value].per_col)
			strbuf_addf(sb, "\t\t\taic_st<V>(a.w_%s + i, y[%d]);\n",
			            g->values[g->writes[w].value].name, w);
	strbuf_addf(
	    sb,
	    "\t\t}\n\t}\n"
	    "\t/* [k][y][j][x]: the threads of a row of threads hit as many banks */\n"
	    "#pragma unroll\n\tfor (int k = 0; k < %d; k++)\n#pragma unroll\n"
	    "\t\tfor (int j = 0; j < V; j++)\n"
	    "\t\t\taic_cs[(((long)k * blockDim.y + threadIdx.y) * V + j) * blockDim.x + "
	    "threadIdx.x] = "
	    "acc[k][j];\n"
	    "\t__syncthreads();\n"
	    "\t/* the rows of threads added in order, one (k, j, x) a thread of the block, into\n"
	    "\t * row 0: blockDim.y additions each, where one row of threads made %d * V *\n"
	    "\t * blockDim.y (1,024 at 8 columns a thread and 64 rows of threads) */\n"
	    "\tfor (unsigned o = threadIdx.y * blockDim.x + threadIdx.x; o < %du * V * "
	    "blockDim.x;\n"
	    "\t     o += blockDim.x * blockDim.y) {\n"
	    "\t\tconst unsigned x = o %% blockDim.x, j = o / blockDim.x %% V, k = o / "
	    "blockDim.x / V;\n"
	    "\t\tfloat t = 0.f;\n"
	    "\t\tfor (unsigned y = 0; y < blockDim.y; y++)\n"
	    "\t\t\tt += aic_cs[(((long)k * blockDim.y + y) * V + j) * blockDim.x + x];\n"
	    "\t\taic_cs[((long)k * blockDim.y * V + j) * blockDim.x + x] = t;\n"
	    "\t}\n"
	    "\t__syncthreads();\n"
	    "\tif (threadIdx.y == 0 && c < cols)\n"
	    "#pragma unroll\n\t\tfor (int j = 0; j < V; j++) {\n"
	    "\t\t\tfloat s[%d];\n"
	    "#pragma unroll\n\t\t\tfor (int k = 0; k < %d; k++) {\n"
	    "\t\t\t\tconst float t = aic_cs[((long)k * blockDim.y * V + j) * blockDim.x + "
	    "threadIdx.x];\n"
	    "\t\t\t\ts[k] = t;\n"
	    "\t\t\t\tif (gridDim.y > 1)\n"
	    "\t\t\t\t\tws[((long)k * gridDim.y + blockIdx.y) * cols + c + j] = t;\n"
	    "\t\t\t}\n"
	    "\t\t\tif (gridDim.y == 1) {\n",
	    ns, ns, ns, ns, ns);
	emit_col_fin(sb, g, fin, "c + j", "\t\t\t\t");
	strbuf_adds(sb, "\t\t\t}\n\t\t}\n}\n");
	strbuf_addf(
	    sb,
	    "\n/* the column sums (the chunks' partials: row of threads y adds chunks y, y + "
	    "blockDim.y,\n * ..., then those in order), then the per-column ops and writes; blocks "
	    "of 32 x 8 threads,\n * or 32 x 32 past 64 chunks, one a tile of 32 columns, %d * "
	    "blockDim.y * 32 floats of\n * shared memory (dynamic) */\n"
	    "__global__ void __launch_bounds__(1024) %s_finish(const %s_args a, const float "
	    "*ws, long nchunk)\n{\n"
	    "\textern __shared__ float aic_fs[];\n"
	    "\tconst long c = (long)blockIdx.x * 32 + threadIdx.x;\n"
	    "#pragma unroll\n\tfor (int k = 0; k < %d; k++) {\n"
	    "\t\tfloat t = 0.f;\n"
	    "\t\tif (c < a.cols)\n"
	    "#pragma unroll 4\n"
	    "\t\t\tfor (long q = threadIdx.y; q < nchunk; q += blockDim.y)\n"
	    "\t\t\t\tt += ws[((long)k * nchunk + q) * a.cols + c];\n"
	    "\t\taic_fs[(k * blockDim.y + threadIdx.y) * 32 + threadIdx.x] = t;\n"
	    "\t}\n"
	    "\t__syncthreads();\n"
	    "\tif (threadIdx.y != 0 || c >= a.cols)\n\t\treturn;\n"
	    "\tfloat s[%d];\n"
	    "#pragma unroll\n\tfor (int k = 0; k < %d; k++) {\n"
	    "\t\tfloat t = 0.f;\n"
	    "\t\tfor (unsigned y = 0; y < blockDim.y; y++)\n"
	    "\t\t\tt += aic_fs[(k * blockDim.y + y) * 32 + threadIdx.x];\n"
	    "\t\ts[k] = t;\n\t}\n",
	    ns, nm, nm, ns, ns, ns);
	emit_col_fin(sb, g, fin, "c", "\t");
	strbuf_adds(sb, "}\n");
}

/* A column group's launch: the workspace, the two kernels, the workspace freed. */
static void emit_col_launch(struct strbuf *sb, const struct fgroup *g, int maxv)
{
	const char *nm = g->name;
	strbuf_addf(
	    sb,
	    "\tif (a.rows < 0 || a.cols <= 0)\n\t\treturn cudaErrorInvalidValue;\n"
	    "\tint tx = 32, by = block / 32;\n"
	    "\t/* a short column (a fused backward's partial rows): one chunk, one launch, one "
	    "column a\n\t * thread and 16 rows of threads, so that the tiles are 4 times as many "
	    "as with 4\n\t * columns a thread (docs/perf.md session 14; session 13: one chunk "
	    "of 128 rows, 4\n\t * columns a thread, took 4.4 us where 16 chunks and the finish "
	    "took 3.3) */\n"
	    "\tconst bool shortc = a.rows <= 512;\n"
	    "\tif (shortc) {\n\t\tvec = 1;\n\t\tby = 16;\n\t}\n"
	    "\t/* the partials' shared memory within the 48 KiB a launch gets by default */\n"
	    "\twhile (vec > 1 && (size_t)%d * by * 32 * vec * sizeof(float) > 48 * 1024)\n"
	    "\t\tvec /= 2;\n"
	    "\t/* narrow columns (a channels-last batch norm's 64): the smallest power of two of\n"
	    "\t * lanes a row that covers them, the block's threads kept; session 26: 64 columns\n"
	    "\t * as tiles of 32 lanes left half of each warp idle at 4 columns a thread */\n"
	    "\twhile (tx > 1 && (long)(tx / 2) * vec >= a.cols)\n\t\ttx /= 2;\n"
	    "\tby = by * 32 / tx;\n"
	    "\tconst long tiles = (a.cols / vec + tx - 1) / tx;\n"
	    "\t/* about one wave of blocks (ept 2 or 4: a half or a quarter of one, each chunk\n"
	    "\t * ept times the rows, fewer partials for the finish; the tuner chooses), at least\n"
	    "\t * one row a row of threads; past 1,024 rows at least 64 rows a chunk */\n"
	    "\tlong chunks = shortc ? 1 : ((long)aic_sm_count() * (2048 / block) + tiles - 1) / "
	    "tiles / ept;\n"
	    "\tlong most = (a.rows + by - 1) / by;\n"
	    "\tif (a.rows > 1024 && most > (a.rows + 63) / 64)\n\t\tmost = (a.rows + 63) / 64;\n"
	    "\tif (chunks > most)\n\t\tchunks = most;\n"
	    "\tif (chunks > 65535)\n\t\tchunks = 65535;\n"
	    "\tif (chunks < 1)\n\t\tchunks = 1;\n"
	    "\tlong chunk = (a.rows + chunks - 1) / chunks;\n"
	    "\tif (chunk < 1)\n\t\tchunk = 1;\n"
	    "\tchunks = (a.rows + chunk - 1) / chunk;\n"
	    "\tif (chunks < 1)\n\t\tchunks = 1;\n"
	    "\tfloat *ws = NULL;\n"
	    "\tcudaError_t e = chunks == 1 ? cudaSuccess\n"
	    "\t\t: aic_ws_alloc((void **)&ws, (size_t)%d * chunks * a.cols * "
	    "sizeof(float), s);\n"
	    "\tif (e != cudaSuccess)\n\t\treturn e;\n"
	    "\tconst size_t smem = (size_t)%d * by * tx * vec * sizeof(float);\n"
	    "\tconst dim3 grid((unsigned)tiles, (unsigned)chunks), threads(tx, by);\n"
	    "\tswitch (vec) {\n",
	    g->ncolsum, g->ncolsum, g->ncolsum);
	for (int v = 1; v <= maxv; v *= 2)
		strbuf_addf(sb,
		            "\tcase %d:\n\t\t%s_kernel<%d><<<grid, threads, smem, s>>>(a, ws, "
		            "chunk);\n\t\tbreak;\n",
		            v, nm, v);
	strbuf_addf(
	    sb,
	    "\tdefault:\n\t\tif (ws)\n\t\t\tcudaFreeAsync(ws, s);\n"
	    "\t\treturn cudaErrorInvalidValue;\n"
	    "\t}\n"
	    "\te = cudaGetLastError();\n"
	    "\tif (chunks == 1)\n\t\treturn e;\n"
	    "\tif (e == cudaSuccess) {\n"
	    "\t\tconst unsigned fy = chunks > 64 ? 32 : 8;\n"
	    "\t\t%s_finish<<<(unsigned)((a.cols + 31) / 32), dim3(32, fy), (size_t)%d * 32 * fy "
	    "* sizeof(float), s>>>(a, ws, chunks);\n"
	    "\t\te = cudaGetLastError();\n\t}\n"
	    "\tconst cudaError_t f = cudaFreeAsync(ws, s);\n"
	    "\treturn e != cudaSuccess ? e : f;\n}\n",
	    nm, g->ncolsum);
}

static void emit_launcher(struct strbuf *sb, const struct fgroup *g)
{
	const char *nm = g->name;
	int maxv = fgroup_max_vec(g);
	strbuf_addf(sb, "\n#define %s_MAX_VEC %d\n", nm, maxv);
	strbuf_addf(sb,
	            "\n/* can every tensor of a be accessed V elements at a time? */\n"
	            "inline bool %s_can_vec(const %s_args &a, int v)\n{\n",
	            nm, nm);
	for (int i = 0; i < g->ninputs; i++) {
		if ((g->kind == FG_COL && g->values[i].per_row) || g->values[i].map.dims)
			continue; /* read one value a row, or one element at a time */
		strbuf_addf(sb, "\tif (!aic_aligned(a.in_%s, (size_t)v * %d))\n\t\treturn false;\n",
		            g->values[i].name, fdtype_size(g->values[i].dtype));
		if (emit_bcast(g, i))
			strbuf_addf(sb, "\tif (a.m_%s %% v)\n\t\treturn false;\n",
			            g->values[i].name);
	}
	for (int w = 0; w < g->nwrites; w++)
		if (!g->values[g->writes[w].value].per_col) /* those are written one at a time */
			strbuf_addf(
			    sb, "\tif (!aic_aligned(a.w_%s, (size_t)v * %d))\n\t\treturn false;\n",
			    g->values[g->writes[w].value].name, fdtype_size(g->writes[w].dtype));
	if (fgroup_rowed(g))
		strbuf_adds(sb, "\tif (a.cols % v)\n\t\treturn false;\n");
	strbuf_adds(sb, "\treturn true;\n}\n");
	strbuf_addf(
	    sb,
	    "\n/*\n * Launches %s on stream s with block threads, vector width vec (halved "
	    "down to 1\n * where a tensor is misaligned) and ept (1, 2, 4: vectors per thread in "
	    "a chain, the\n * chunks' share of a wave in a column group; else 1); returns the "
	    "launch's error.\n */\n"
	    "inline cudaError_t %s_launch(const %s_args &a, int block, int vec, "
	    "int ept, cudaStream_t s)\n{\n"
	    "\tif (block < 32 || block > 512 || block %% 32)\n\t\treturn cudaErrorInvalidValue;\n"
	    "\tif (vec > %s_MAX_VEC)\n\t\tvec = %s_MAX_VEC;\n"
	    "\twhile (vec > 1 && ((vec & (vec - 1)) || !%s_can_vec(a, vec)))\n\t\tvec /= 2;\n"
	    "\tif (vec < 1)\n\t\tvec = 1;\n",
	    nm, nm, nm, nm, nm, nm);
	if (g->kind != FG_ROW)
		strbuf_adds(sb, "\tif (ept != 1 && ept != 2 && ept != 4)\n\t\tept = 1;\n");
	if (g->kind == FG_CHAIN) {
		if (fgroup_mapped(g)) /* the index maps hold the recorded sizes */
			strbuf_addf(sb, "\tif (a.n != %ldL)\n\t\treturn cudaErrorInvalidValue;\n",
			            g->numel);
		strbuf_adds(sb, "\tif (a.n <= 0)\n\t\treturn cudaSuccess;\n"
		                "\tconst long per = (long)block * vec * ept;\n"
		                "\tlong grid = (a.n + per - 1) / per;\n"
		                /* one block a tile, the hardware scheduling them: a cap of a few
		                 * waves, each block looping, measured 1% slower (docs/perf.md,
		                 * session 19); the loop stays for grids past gridDim.x's limit */
		                "\tif (grid > 0x7fffffffL)\n\t\tgrid = 0x7fffffffL;\n"
		                "\tif (grid < 1)\n\t\tgrid = 1;\n"
		                "\tswitch (vec * 10 + ept) {\n");
		for (int v = 1; v <= maxv; v *= 2)
			for (int e = 1; e <= 4; e *= 2)
				strbuf_addf(
				    sb,
				    "\tcase %d:\n\t\t%s_kernel<%d, %d><<<(unsigned)grid, block, "
				    "0, s>>>(a);\n\t\tbreak;\n",
				    v * 10 + e, nm, v, e);
		strbuf_adds(sb, "\tdefault:\n\t\treturn cudaErrorInvalidValue;\n\t}\n");
	} else if (g->kind == FG_COL) {
		emit_col_launch(sb, g, maxv);
		return;
	} else {
		int hoist[64], sw[64];
		int nh = row_hoists(g, hoist), ns = summed_writes(g, sw);
		/* summed writes: one wave of blocks, each adding up as many rows as it can */
		strbuf_addf(sb,
		            "\t(void)ept;\n"
		            "\tif (a.rows <= 0)\n\t\treturn cudaSuccess;\n"
		            "\t/* a short row: one warp a row, block / 32 rows a block */\n"
		            "\tif (a.cols <= 32L * vec * %s_WARP_K) {\n"
		            "\t\tconst long wpb = block / 32;\n"
		            "\t\tlong wgrid = (a.rows + wpb - 1) / wpb;\n"
		            "\t\tconst long wcap = (long)aic_sm_count() * (2048 / block)%s;\n"
		            "\t\tif (wgrid > wcap)\n\t\t\twgrid = wcap;\n"
		            "\t\t/* K vectors a lane: the fewest that hold the row */\n"
		            "\t\tint wk = 1;\n"
		            "\t\twhile (32L * vec * wk < a.cols)\n\t\t\twk *= 2;\n",
		            nm, ns ? "" : " * 8");
		if (nh) /* latency-bound: the whole launch fits at half occupancy */
			strbuf_adds(
			    sb,
			    "\t\tconst bool h = wgrid * block <= (long)aic_sm_count() * 1024;\n");
		if (ns)
			strbuf_addf(
			    sb,
			    "\t\tif (a.nparts)\n\t\t\t*a.nparts = wgrid;\n"
			    "\t\tconst size_t wsmem = (size_t)%d * a.cols * sizeof(float);\n",
			    ns);
		strbuf_adds(sb, "\t\tswitch (vec * 16 + wk) {\n");
		for (int v = 1; v <= maxv; v *= 2)
			for (int k = 1; k <= ROW_WARP_K; k *= 2) {
				strbuf_addf(sb, "\t\tcase %d:\n", v * 16 + k);
				for (int hv = nh ? 1 : 0; hv >= 0; hv--)
					strbuf_addf(sb,
					            "\t\t\t%s%s_wkernel<%d, "
					            "%d%s><<<(unsigned)wgrid, block, %s, "
					            "s>>>(a);\n",
					            !nh  ? ""
					            : hv ? "if (h)\n\t\t\t\t"
					                 : "else\n\t\t\t\t",
					            nm, v, k,
					            !nh  ? ""
					            : hv ? ", true"
					                 : ", false",
					            ns ? "wsmem" : "0");
				strbuf_adds(sb, "\t\t\tbreak;\n");
			}
		/* the block kernel stores a summand an element: a partial row a row */
		strbuf_addf(sb,
		            "\t\tdefault:\n\t\t\treturn cudaErrorInvalidValue;\n\t\t}\n"
		            "\t\treturn cudaGetLastError();\n\t}\n"
		            "\tconst size_t smem = (size_t)a.cols * sizeof(float);\n"
		            "\tlong grid = a.rows;\n"
		            "\tconst long cap = (long)aic_sm_count() * 64;\n"
		            "\tif (grid > cap)\n\t\tgrid = cap;\n%s"
		            "\tswitch (vec) {\n",
		            ns ? "\tif (a.nparts)\n\t\t*a.nparts = a.rows;\n" : "");
		for (int v = 1; v <= maxv; v *= 2)
			strbuf_addf(
			    sb,
			    "\tcase %d:\n"
			    "\t\tif (smem + 1024 > 48 * 1024) /* the static red[] counts too */\n"
			    "\t\t\tcudaFuncSetAttribute(%s_kernel<%d>, "
			    "cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);\n"
			    "\t\t%s_kernel<%d><<<(unsigned)grid, block, smem, s>>>(a);\n"
			    "\t\tbreak;\n",
			    v, nm, v, nm, v);
		strbuf_adds(sb, "\tdefault:\n\t\treturn cudaErrorInvalidValue;\n\t}\n");
	}
	strbuf_adds(sb, "\treturn cudaGetLastError();\n}\n");
}

/* The kernel file's body, without the include of the math header. */
static void emit_kernel_body(struct strbuf *sb, const struct fgroup *g)
{
	strbuf_adds(sb, device_prelude);
	emit_args_struct(sb, g);
	if (g->kind == FG_CHAIN)
		emit_chain_kernel(sb, g);
	else if (g->kind == FG_COL)
		emit_col_kernel(sb, g);
	else
		emit_row_kernel(sb, g);
	emit_launcher(sb, g);
}

void emit_kernel(struct strbuf *sb, const struct fgroup *g)
{
	char up[128];
	emit_upper(g, up, sizeof(up));
	strbuf_addf(
	    sb,
	    "/*\n * %s_kernel.cu - generated by aicprof fuse: the fused kernel of group "
	    "'%s' and its launcher\n * %s_launch(args, block, vec, ept, stream). %s\n"
	    " * Dropout: see aic_uniform4 (Philox, curand_init(seed, i / 4, offset)).\n */\n",
	    g->name, g->name, g->name,
	    g->kind == FG_CHAIN ? "Grid-stride loop, vectorised loads and stores (alignment "
	                          "checked at run time),\n * scalar tail."
	    : g->kind == FG_ROW
	        ? "Short rows: one warp per row, the row in registers, warp shuffles;\n"
	          " * longer rows: one block per row, the row staged in shared memory. Two passes "
	          "for the\n * statistics, then the epilogue."
	        : "Column sums: column tiles by row chunks, partials in a workspace "
	          "(aic_ws_alloc: stream-ordered, from a pool that keeps it),\n * added in a fixed "
	          "order by a second kernel: no "
	          "atomics, the same bits on every run.");
	strbuf_addf(sb, "#ifndef %s_KERNEL_CU\n#define %s_KERNEL_CU\n", up, up);
	strbuf_addf(sb, "#include \"%s_math.h\"\n", g->name);
	emit_kernel_body(sb, g);
	strbuf_adds(sb, "#endif\n");
}

const char *emit_torch_type(enum fdtype t)
{
	static const char *n[] = {"at::kFloat", "at::kHalf", "at::kBFloat16", "at::kBool"};
	return n[t];
}

/* The wrapper's parameter list, e.g. "torch::Tensor x, torch::Tensor res, int64_t seed, ...". */
static void add_params(struct strbuf *sb, const struct fgroup *g)
{
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(sb, "torch::Tensor %s, ", g->values[i].name);
	strbuf_adds(sb, "int64_t seed, int64_t offset, int64_t block, int64_t vec, int64_t ept");
}

void emit_binding(struct strbuf *sb, const struct fgroup *g)
{
	const char *nm = g->name;
	strbuf_addf(
	    sb,
	    "/*\n * %s_binding.cu - generated by aicprof fuse: a PyTorch C++/CUDA extension "
	    "for group '%s',\n * self-contained (math and kernel inlined) so that "
	    "torch.utils.cpp_extension.load_inline\n * can build it; %s.py does. "
	    "%s_forward(inputs..., seed, offset, block, vec, ept) returns\n * the "
	    "writes in order:",
	    nm, nm, nm, nm);
	for (int w = 0; w < g->nwrites; w++)
		strbuf_addf(sb, " %s%s", g->values[g->writes[w].value].name,
		            g->writes[w].kept ? " (kept)" : "");
	strbuf_adds(sb, ".\n * Inputs must be contiguous CUDA tensors of the recorded dtypes; "
	                "sizes may differ from the\n * recorded ones where broadcasting still "
	                "holds.\n */\n");
	strbuf_adds(sb, "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n"
	                "#include <c10/cuda/CUDAException.h>\n#include <c10/cuda/CUDAGuard.h>\n"
	                "#include <vector>\n\n");
	emit_math(sb, g);
	emit_kernel_body(sb, g);
	/* the full-size input whose shape the writes take */
	int shape_from = -1;
	for (int i = 0; i < g->ninputs && shape_from < 0; i++)
		if (!emit_bcast(g, i) && !g->values[i].map.dims)
			shape_from = i;
	strbuf_addf(sb, "\nstd::vector<torch::Tensor> %s_forward(", nm);
	add_params(sb, g);
	strbuf_adds(sb, ")\n{\n");
	for (int i = 0; i < g->ninputs; i++) {
		const char *in = g->values[i].name;
		strbuf_addf(
		    sb,
		    "\tTORCH_CHECK(%s.is_cuda() && %s.is_contiguous() && %s.scalar_type() == "
		    "%s,\n\t\t    \"%s: '%s' must be a contiguous CUDA %s tensor\");\n",
		    in, in, in, emit_torch_type(g->values[i].dtype), nm, in,
		    fdtype_name(g->values[i].dtype));
	}
	if (shape_from >= 0)
		strbuf_addf(sb,
		            "\tconst int64_t n = %s.numel();\n\tconst auto shape = %s.sizes();\n",
		            g->values[shape_from].name, g->values[shape_from].name);
	else
		strbuf_addf(sb,
		            "\tconst int64_t n = %ldL;\n\tconst std::vector<int64_t> shape{n};\n",
		            g->numel);
	for (int i = 0; i < g->ninputs; i++) {
		const char *in = g->values[i].name;
		if (g->values[i].map.dims)
			strbuf_addf(
			    sb,
			    "\tTORCH_CHECK(%s.numel() == %ldL, \"%s: '%s' must hold the %ld "
			    "elements its index map reads\");\n",
			    in, g->values[i].numel, nm, in, g->values[i].numel);
		else if (emit_bcast(g, i))
			strbuf_addf(sb,
			            "\tTORCH_CHECK(%s.numel() > 0 && n %% %s.numel() == 0, \"%s: "
			            "'%s' (%%ld elements) does not broadcast over %%ld\", "
			            "(long)%s.numel(), (long)n);\n",
			            in, in, nm, in, in);
		else
			strbuf_addf(sb,
			            "\tTORCH_CHECK(%s.numel() == n, \"%s: '%s' must have as many "
			            "elements as the others\");\n",
			            in, nm, in);
	}
	if (fgroup_mapped(g))
		strbuf_addf(sb,
		            "\tTORCH_CHECK(n == %ldL, \"%s: its index maps hold the recorded %ld "
		            "elements\");\n",
		            g->numel, nm, g->numel);
	if (fgroup_rowed(g))
		strbuf_addf(
		    sb,
		    "\tTORCH_CHECK(n %% %ldL == 0, \"%s: the element count must be a multiple "
		    "of the row length %ld\");\n",
		    g->cols, nm, g->cols);
	strbuf_addf(sb,
	            "\tTORCH_CHECK(offset %% 4 == 0, \"%s: the Philox offset must be a multiple of "
	            "4\");\n",
	            nm);
	strbuf_addf(sb, "\tconst c10::cuda::CUDAGuard guard(%s.device());\n", g->values[0].name);
	strbuf_addf(sb, "\t%s_args a{};\n", nm);
	for (int i = 0; i < g->ninputs; i++) {
		const char *in = g->values[i].name;
		strbuf_addf(sb, "\ta.in_%s = (const %s *)%s.data_ptr();\n", in,
		            fdtype_ctype(g->values[i].dtype), in);
		if (emit_bcast(g, i))
			strbuf_addf(sb, "\ta.m_%s = %s.numel();\n", in, in);
	}
	strbuf_adds(sb, "\tstd::vector<torch::Tensor> outs;\n");
	for (int w = 0; w < g->nwrites; w++) {
		const char *on = g->values[g->writes[w].value].name;
		char shp[48] = "shape"; /* a per-column write: one element a column */
		if (g->values[g->writes[w].value].per_col)
			snprintf(shp, sizeof(shp), "std::vector<int64_t>{%ldL}", g->cols);
		strbuf_addf(sb,
		            "\tauto t_%s = torch::empty(%s, %s.options().dtype(%s));\n"
		            "\ta.w_%s = (%s *)t_%s.data_ptr();\n\touts.push_back(t_%s);\n",
		            on, shp, g->values[0].name, emit_torch_type(g->writes[w].dtype), on,
		            fdtype_ctype(g->writes[w].dtype), on, on);
	}
	if (fgroup_rowed(g))
		strbuf_addf(sb, "\ta.n = n;\n\ta.cols = %ldL;\n\ta.rows = n / a.cols;\n", g->cols);
	else
		strbuf_adds(sb, "\ta.n = n;\n\ta.rows = 1;\n\ta.cols = n;\n");
	strbuf_adds(sb, "\ta.seed = (unsigned long long)seed;\n"
	                "\ta.offset = (unsigned long long)offset;\n");
	strbuf_addf(sb,
	            "\tC10_CUDA_CHECK(%s_launch(a, (int)block, (int)vec, (int)ept,\n"
	            "\t\t\t\t  at::cuda::getCurrentCUDAStream()));\n"
	            "\treturn outs;\n}\n",
	            nm);
}
