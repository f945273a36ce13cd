/*
 * emit-bench.c - writes a group's checks: the standalone bench harness (<name>_bench.cu), the
 * CPU check (<name>_cpucheck.cu), the machine-readable description (<name>.meta.json), and
 * fusion_write_group(), which writes all of a group's files.
 *
 * The harness is one CUDA C++ main. It fills the inputs with fresh random values from a host
 * RNG (seeded from the clock unless --seed is given), runs the unfused reference (one kernel per
 * op, each writing its result to device memory in its storage type, as PyTorch eager does; 4
 * elements per thread where aligned, like PyTorch's vectorised elementwise kernels) and the
 * fused kernel. Before every run the writes are poisoned (all bytes 0xFF, a NaN in every float
 * type) and afterwards every element is checked to be written and compared on the device:
 * relative L2 error against the reference, fp32 < 1e-5, bf16/fp16 < 1e-2; dropout uses the same
 * element-to-random mapping in both, so the masks agree exactly. Each launch configuration
 * (block 128/256/512, vector width 1/2/4/8 up to 16 bytes, elements per thread 1/2/4 for chains)
 * is checked and timed (CUDA events around one launch after an L2 flush, warm-up, median of
 * samples); the fastest correct one wins. Chains without broadcast inputs are also checked at a
 * misaligned offset (scalar fallback and tail). The device's peak is a large device-to-device
 * cudaMemcpy timed in the same run; copy_us is a copy of the fused kernel's own bytes (half of
 * them read, half written), the faster of cudaMemcpyAsync and a copy kernel, timed as the kernel
 * is: the floor at the group's size, where a small group's launch and ramp are a large share. The
 * last stdout line is one JSON object, read by `aicprof bench`.
 *
 * The CPU check is host code (built with nvcc, run anywhere): it evaluates the group's fused
 * math functions from <name>_math.h on random inputs and compares them with a plain op-by-op
 * evaluation in double, written from the op table's ref expressions.
 */
#include "fusion/fusion.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Inputs read directly by an op that wants positive values get a positive range. */
static int wants_positive(const struct fgroup *g, int v)
{
	for (int i = 0; i < g->nops; i++) {
		const struct fopnode *n = &g->ops[i];
		const char *op = n->op->name;
		for (int k = 0; k < n->nargs; k++)
			if (n->arg[k] == v &&
			    (!strcmp(op, "log") || !strcmp(op, "sqrt") || !strcmp(op, "rsqrt") ||
			     (!strcmp(op, "div") && k == 1)))
				return 1;
	}
	return 0;
}

/* The host fill call for input i into a buffer named buf. */
static void add_fill(struct strbuf *sb, const struct fgroup *g, int i, const char *buf)
{
	const struct fvalue *v = &g->values[i];
	if (v->dtype == FD_BOOL)
		strbuf_addf(sb, "fill_mask(%s, %ld, rng)", buf, v->numel);
	else if (wants_positive(g, i))
		strbuf_addf(sb, "fill<%s>(%s, %ld, 0.5f, 2.f, rng)", fdtype_ctype(v->dtype), buf,
		            v->numel);
	else
		strbuf_addf(sb, "fill<%s>(%s, %ld, -3.f, 3.f, rng)", fdtype_ctype(v->dtype), buf,
		            v->numel);
}

/* Whether an input is read at other offsets than the element's own: a broadcast, an index
 * map (both fixed to the recorded sizes, so no misaligned run of one element fewer). */
static int has_bcast(const struct fgroup *g)
{
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[i].numel != g->numel || g->values[i].map.dims)
			return 1;
	return 0;
}

static int uses_causal(const struct fopnode *n)
{
	return n->causal;
}

/* Is argument a of n the first to name its value (mul(x, x) declares v<x> once)? */
static int first_use(const struct fopnode *n, int a)
{
	for (int b = 0; b < a; b++)
		if (n->arg[b] == n->arg[a])
			return 0;
	return 1;
}

/* The reference kernel of elementwise op k: vectors of V elements, i % m for each argument. */
static void emit_ref_ew(struct strbuf *sb, const struct fgroup *g, int k)
{
	const struct fopnode *n = &g->ops[k];
	const struct fvalue *out = &g->values[n->out];
	strbuf_addf(sb, "\n/* ops[%d]: %s = %s(", k, out->name, n->op->name);
	for (int a = 0; a < n->nargs; a++)
		strbuf_addf(sb, "%s%s", a ? ", " : "", g->values[n->arg[a]].name);
	strbuf_adds(sb, ") */\ntemplate <int V>\n__device__ __forceinline__ void ");
	strbuf_addf(sb, "ref%d_do(long i, %s *out", k, fdtype_ctype(out->dtype));
	for (int a = 0; a < n->nargs; a++)
		strbuf_addf(sb, ", const %s *a%d, long m%d",
		            fdtype_ctype(g->values[n->arg[a]].dtype), a, a);
	strbuf_adds(sb, ", unsigned long long seed, unsigned long long offset)\n{\n");
	strbuf_adds(sb, "\t(void)seed; (void)offset;\n");
	for (int a = 0; a < n->nargs; a++)
		if (g->values[n->arg[a]].per_row) /* one value a row: element-wise loads */
			strbuf_addf(sb,
			            "\tfloat x%d[V];\n\t(void)m%d;\n#pragma unroll\n"
			            "\tfor (int j = 0; j < V; j++)\n"
			            "\t\tx%d[j] = aic_to_float(a%d[(i + j) / COLS]);\n",
			            a, a, a, a);
		else
			strbuf_addf(sb, "\tfloat x%d[V];\n\taic_ld<V>(a%d + i %% m%d, x%d);\n", a,
			            a, a, a);
	strbuf_adds(sb, "\tfloat y[V];\n");
	if (n->drop >= 0)
		strbuf_addf(sb, "\tfloat ud[V];\n\taic_uniforms<V>(seed, offset + %dull, i, ud);\n",
		            4 * n->drop);
	strbuf_adds(sb, "#pragma unroll\n\tfor (int j = 0; j < V; j++) {\n");
	if (uses_causal(n))
		strbuf_adds(sb, "\t\tconst long row = (i + j) / COLS, col = (i + j) % COLS;\n");
	for (int a = 0; a < n->nargs; a++)
		if (first_use(n, a)) /* mul(x, x): one declaration */
			strbuf_addf(sb, "\t\tconst float v%d = x%d[j];\n", n->arg[a], a);
	if (n->drop >= 0)
		strbuf_addf(sb, "\t\tfloat u[%d];\n\t\tu[%d] = ud[j];\n", n->drop + 1, n->drop);
	strbuf_adds(sb, "\t\ty[j] = ");
	emit_expr(sb, g, n, 0, "v%d", "u[%d]");
	strbuf_adds(sb, ";\n\t}\n\taic_st<V>(out + i, y);\n}\n");

	strbuf_addf(sb, "template <int V>\n__global__ void ref%d(long n, %s *out", k,
	            fdtype_ctype(out->dtype));
	for (int a = 0; a < n->nargs; a++)
		strbuf_addf(sb, ", const %s *a%d, long m%d",
		            fdtype_ctype(g->values[n->arg[a]].dtype), a, a);
	strbuf_adds(sb, ", unsigned long long seed, unsigned long long offset)\n{\n"
	                "\tconst long nv = n / V;\n"
	                "\tfor (long v = (long)blockIdx.x * blockDim.x + threadIdx.x; v < nv;\n"
	                "\t     v += (long)gridDim.x * blockDim.x)\n");
	strbuf_addf(sb, "\t\tref%d_do<V>(v * V, out", k);
	for (int a = 0; a < n->nargs; a++)
		strbuf_addf(sb, ", a%d, m%d", a, a);
	strbuf_adds(sb, ", seed, offset);\n"
	                "\tif (V > 1 && blockIdx.x == 0)\n"
	                "\t\tfor (long i = nv * V + threadIdx.x; i < n; i += blockDim.x)\n");
	strbuf_addf(sb, "\t\t\tref%d_do<1>(i, out", k);
	for (int a = 0; a < n->nargs; a++)
		strbuf_addf(sb, ", a%d, m%d", a, a);
	strbuf_adds(sb, ", seed, offset);\n}\n");
}

/* The reference kernel of the row reduction: one block per row, three passes over global. */
static void emit_ref_red(struct strbuf *sb, const struct fgroup *g, int k)
{
	const struct fopnode *n = &g->ops[k];
	const char *rn = n->op->name;
	int softmax = !strcmp(rn, "softmax") || !strcmp(rn, "log_softmax");
	int ln = !strcmp(rn, "layer_norm"), lsb = !strcmp(rn, "log_softmax_backward");
	strbuf_addf(sb, "\n/* ops[%d]: %s = %s, one block per row */\n", k, g->values[n->out].name,
	            rn);
	strbuf_addf(sb, "__global__ void ref%d(long rows, %s *out", k,
	            fdtype_ctype(g->values[n->out].dtype));
	for (int a = 0; a < n->nargs; a++)
		strbuf_addf(sb, ", const %s *a%d", fdtype_ctype(g->values[n->arg[a]].dtype), a);
	strbuf_adds(sb, ")\n{\n\t__shared__ float red[32];\n"
	                "\tfor (long row = blockIdx.x; row < rows; row += gridDim.x) {\n"
	                "\t\tconst long rb = row * COLS;\n");
	if (!strcmp(rn, "layer_norm_backward")) {
		/* a0 dy, a1 x per element, a2 mean and a3 rstd per row, a4 gamma per column */
		const char *gm = n->nargs > 4 ? "aic_to_float(a4[c])" : "1.f";
		strbuf_addf(
		    sb,
		    "\t\tfloat acc = 0.f, acc1 = 0.f;\n"
		    "\t\tconst float mu = aic_to_float(a2[row]), rs = aic_to_float(a3[row]);\n"
		    "\t\tfor (long c = threadIdx.x; c < COLS; c += blockDim.x) {\n"
		    "\t\t\tconst float g_ = aic_to_float(a0[rb + c]) * %s;\n"
		    "\t\t\tacc += g_;\n"
		    "\t\t\tacc1 += g_ * (aic_to_float(a1[rb + c]) - mu) * rs;\n\t\t}\n"
		    "\t\tconst float s0 = aic_block_reduce<false>(acc, red) / (float)COLS;\n"
		    "\t\tconst float s1 = aic_block_reduce<false>(acc1, red) / (float)COLS;\n"
		    "\t\tfor (long c = threadIdx.x; c < COLS; c += blockDim.x) {\n"
		    "\t\t\tconst float g_ = aic_to_float(a0[rb + c]) * %s;\n"
		    "\t\t\tconst float xh = (aic_to_float(a1[rb + c]) - mu) * rs;\n"
		    "\t\t\tout[rb + c] = aic_from_float<%s>(rs * (g_ - s0 - xh * s1));\n"
		    "\t\t}\n\t\t__syncthreads();\n\t}\n}\n",
		    gm, gm, fdtype_ctype(g->values[n->out].dtype));
		return;
	}
	strbuf_addf(sb, "\t\tfloat acc = %s;\n", softmax ? "-INFINITY" : "0.f");
	strbuf_addf(sb,
	            "\t\tfor (long c = threadIdx.x; c < COLS; c += blockDim.x) {\n"
	            "\t\t\tconst float v = aic_to_float(a0[rb + c]);\n"
	            "\t\t\tacc = %s;\n\t\t}\n",
	            softmax ? "fmaxf(acc, v)" : (ln || lsb ? "acc + v" : "acc + v * v"));
	if (softmax)
		strbuf_adds(sb, "\t\tconst float s0 = aic_block_reduce<true>(acc, red);\n"
		                "\t\tfloat acc2 = 0.f;\n"
		                "\t\tfor (long c = threadIdx.x; c < COLS; c += blockDim.x)\n"
		                "\t\t\tacc2 += expf(aic_to_float(a0[rb + c]) - s0);\n"
		                "\t\tacc2 = aic_block_reduce<false>(acc2, red);\n");
	else if (ln)
		strbuf_adds(sb, "\t\tconst float s0 = aic_block_reduce<false>(acc, red) / "
		                "(float)COLS;\n"
		                "\t\tfloat acc2 = 0.f;\n"
		                "\t\tfor (long c = threadIdx.x; c < COLS; c += blockDim.x) {\n"
		                "\t\t\tconst float d = aic_to_float(a0[rb + c]) - s0;\n"
		                "\t\t\tacc2 += d * d;\n\t\t}\n"
		                "\t\tacc2 = aic_block_reduce<false>(acc2, red);\n");
	else if (lsb)
		strbuf_adds(sb, "\t\tconst float s0 = aic_block_reduce<false>(acc, red);\n");
	else
		strbuf_adds(sb, "\t\tconst float s0 = 0.f;\n"
		                "\t\tconst float acc2 = aic_block_reduce<false>(acc, red);\n");
	if (!strcmp(rn, "softmax"))
		strbuf_adds(sb, "\t\tconst float s1 = 1.f / acc2;\n");
	else if (!strcmp(rn, "log_softmax"))
		strbuf_adds(sb, "\t\tconst float s1 = logf(acc2);\n");
	else if (lsb)
		strbuf_adds(sb, "\t\tconst float s1 = 0.f;\n");
	else {
		strbuf_adds(sb, "\t\tconst float s1 = aic_rsqrt(acc2 / (float)COLS + ");
		emit_lit(sb, n->num);
		strbuf_adds(sb, ");\n");
	}
	strbuf_adds(sb, "\t\t(void)s0;\n\t\t(void)s1;\n"
	                "\t\tfor (long c = threadIdx.x; c < COLS; c += blockDim.x) {\n");
	strbuf_addf(sb, "\t\t\tconst float v%d = aic_to_float(a0[rb + c]);\n", n->arg[0]);
	/* the norms' weight and bias per column; log_softmax_backward's y per element */
	for (int a = 1; a < n->nargs; a++)
		if (first_use(n, a))
			strbuf_addf(sb, "\t\t\tconst float v%d = aic_to_float(a%d[%s]);\n",
			            n->arg[a], a, lsb ? "rb + c" : "c");
	strbuf_addf(sb, "\t\t\tout[rb + c] = aic_from_float<%s>(",
	            fdtype_ctype(g->values[n->out].dtype));
	emit_apply(sb, g, "v%d");
	strbuf_adds(sb, ");\n\t\t}\n\t\t__syncthreads();\n\t}\n}\n");
}

/* The reference kernel of col_sum k, as ATen's GammaBetaBackward sums: 32 columns a block,
 * its 32 rows of threads take every 32nd row, their partials added in shared memory. */
static void emit_ref_colsum(struct strbuf *sb, const struct fgroup *g, int k)
{
	const struct fopnode *n = &g->ops[k];
	strbuf_addf(sb,
	            "\n/* ops[%d]: %s = col_sum(%s), 32 columns a block */\n"
	            "__global__ void ref%d(long rows, %s *out, const %s *a0)\n{\n"
	            "\t__shared__ float part[32][33];\n"
	            "\tconst long c = (long)blockIdx.x * 32 + threadIdx.x;\n"
	            "\tfloat acc = 0.f;\n"
	            "\tif (c < COLS)\n"
	            "\t\tfor (long r = threadIdx.y; r < rows; r += 32)\n"
	            "\t\t\tacc += aic_to_float(a0[r * COLS + c]);\n"
	            "\tpart[threadIdx.y][threadIdx.x] = acc;\n"
	            "\t__syncthreads();\n"
	            "\tif (threadIdx.y == 0 && c < COLS) {\n"
	            "\t\tfloat t = 0.f;\n"
	            "\t\tfor (int y = 0; y < 32; y++)\n\t\t\tt += part[y][threadIdx.x];\n"
	            "\t\tout[c] = aic_from_float<%s>(t);\n\t}\n}\n",
	            k, g->values[n->out].name, g->values[n->arg[0]].name, k,
	            fdtype_ctype(g->values[n->out].dtype), fdtype_ctype(g->values[n->arg[0]].dtype),
	            fdtype_ctype(g->values[n->out].dtype));
}

static double tol_of(enum fdtype t)
{
	return t == FD_F32 ? 1e-5 : 1e-2;
}

static const char bench_support[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n"
    "#include <algorithm>\n#include <vector>\n\n"
    "#define CK(x)                                                                   \\\n"
    "\tdo {                                                                    \\\n"
    "\t\tcudaError_t e_ = (x);                                           \\\n"
    "\t\tif (e_ != cudaSuccess) {                                        \\\n"
    "\t\t\tfprintf(stderr, \"%s: %s: %s\\n\", prog, #x, cudaGetErrorString(e_)); \\\n"
    "\t\t\texit(2);                                                \\\n"
    "\t\t}                                                               \\\n"
    "\t} while (0)\n"
    "static const char *prog = \"bench\";\n\n"
    "static unsigned long long rng_next(unsigned long long &s)\n"
    "{\n\ts ^= s << 13;\n\ts ^= s >> 7;\n\ts ^= s << 17;\n\treturn s;\n}\n"
    "static float rng_uniform(unsigned long long &s)\n"
    "{\n\treturn (float)((rng_next(s) >> 40) + 1) / 16777216.f;\n}\n"
    "template <typename T> static void *fill(void *d, long n, float lo, float hi, "
    "unsigned long long &s)\n"
    "{\n"
    "\tstd::vector<T> h(n);\n"
    "\tfor (long i = 0; i < n; i++)\n"
    "\t\th[i] = aic_from_float<T>(lo + (hi - lo) * rng_uniform(s));\n"
    "\tCK(cudaMemcpy(d, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));\n"
    "\treturn d;\n"
    "}\n"
    "static __attribute__((unused)) void *fill_mask(void *d, long n, unsigned long long &s)\n"
    "{\n"
    "\tstd::vector<unsigned char> h(n);\n"
    "\tfor (long i = 0; i < n; i++)\n"
    "\t\th[i] = rng_uniform(s) < 0.3f;\n"
    "\tCK(cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice));\n"
    "\treturn d;\n"
    "}\n"
    "static void *dalloc(size_t bytes)\n{\n\tvoid *p;\n\tCK(cudaMalloc(&p, bytes));\n"
    "\treturn p;\n}\n"
    "template <typename T> __device__ __forceinline__ bool aic_poisoned(T v)\n"
    "{\n"
    "\tconst unsigned char *p = (const unsigned char *)&v;\n"
    "\tfor (unsigned k = 0; k < sizeof(T); k++)\n\t\tif (p[k] != 0xFF)\n\t\t\treturn false;\n"
    "\treturn true;\n"
    "}\n"
    "/* acc[0] += sum (f - r)^2, acc[1] += sum r^2; cnt[0]: unwritten (poison), cnt[1]: "
    "non-finite mismatches */\n"
    "template <typename TF, typename TR>\n"
    "__global__ void aic_cmp(const TF *f, const TR *r, long n, double *acc, unsigned long long "
    "*cnt)\n"
    "{\n"
    "\tdouble d2 = 0, r2 = 0;\n\tunsigned long long pois = 0, bad = 0;\n"
    "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "\t     i += (long)gridDim.x * blockDim.x) {\n"
    "\t\tif (aic_poisoned(f[i]) || aic_poisoned(r[i])) {\n\t\t\tpois++;\n\t\t\tcontinue;\n\t\t}\n"
    "\t\tconst float a = aic_to_float(f[i]), b = aic_to_float(r[i]);\n"
    "\t\tif (!isfinite(a) || !isfinite(b)) {\n"
    "\t\t\tif (!(a == b || (isnan(a) && isnan(b))))\n\t\t\t\tbad++;\n"
    "\t\t\tcontinue;\n\t\t}\n"
    "\t\td2 += (double)(a - b) * (a - b);\n\t\tr2 += (double)b * b;\n"
    "\t}\n"
    "\tatomicAdd(&acc[0], d2);\n\tatomicAdd(&acc[1], r2);\n"
    "\tif (pois)\n\t\tatomicAdd(&cnt[0], pois);\n\tif (bad)\n\t\tatomicAdd(&cnt[1], bad);\n"
    "}\n"
    "struct cmp_result {\n\tdouble rel;\n\tunsigned long long unwritten, bad;\n};\n"
    "template <typename TF, typename TR> static cmp_result compare(const void *f, const void *r, "
    "long n)\n"
    "{\n"
    "\tstatic double *acc;\n\tstatic unsigned long long *cnt;\n"
    "\tif (!acc) {\n\t\tCK(cudaMalloc(&acc, 2 * sizeof(double)));\n"
    "\t\tCK(cudaMalloc(&cnt, 2 * sizeof(unsigned long long)));\n\t}\n"
    "\tCK(cudaMemset(acc, 0, 2 * sizeof(double)));\n"
    "\tCK(cudaMemset(cnt, 0, 2 * sizeof(unsigned long long)));\n"
    "\taic_cmp<TF, TR><<<1024, 256>>>((const TF *)f, (const TR *)r, n, acc, cnt);\n"
    "\tCK(cudaGetLastError());\n"
    "\tdouble h[2];\n\tunsigned long long c[2];\n"
    "\tCK(cudaMemcpy(h, acc, sizeof(h), cudaMemcpyDeviceToHost));\n"
    "\tCK(cudaMemcpy(c, cnt, sizeof(c), cudaMemcpyDeviceToHost));\n"
    "\tcmp_result res;\n"
    "\tres.rel = sqrt(h[0] / (h[1] > 1e-30 ? h[1] : 1e-30));\n"
    "\tres.unwritten = c[0];\n\tres.bad = c[1];\n"
    "\treturn res;\n"
    "}\n"
    "static void *l2_scratch;\nstatic size_t l2_bytes;\n"
    "/* reads a buffer twice the L2's size: evicts the data under test without leaving dirty\n"
    " * lines whose write-back would be charged to the kernel timed next */\n"
    "__global__ void aic_l2_read(const int4 *p, long n, int *sink)\n"
    "{\n"
    "\tint acc = 0;\n"
    "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "\t     i += (long)gridDim.x * blockDim.x) {\n"
    "\t\tconst int4 v = p[i];\n\t\tacc ^= v.x ^ v.y ^ v.z ^ v.w;\n"
    "\t}\n"
    "\tif (acc == 0x7fffffff)\n\t\t*sink = acc;\n"
    "}\n"
    "static void l2_flush(void)\n{\n"
    "\taic_l2_read<<<aic_sm_count() * 8, 512>>>((const int4 *)l2_scratch, (long)(l2_bytes / 16),\n"
    "\t\t\t\t\t\t (int *)l2_scratch);\n"
    "}\n"
    "/* median in microseconds of one run of f, each after an L2 flush */\n"
    "template <typename F> static double median_us(F f, int samples)\n"
    "{\n"
    "\tcudaEvent_t a, b;\n\tCK(cudaEventCreate(&a));\n\tCK(cudaEventCreate(&b));\n"
    "\tfor (int w = 0; w < 3; w++)\n\t\tf();\n"
    "\tstd::vector<double> t;\n"
    "\tfor (int k = 0; k < samples; k++) {\n"
    "\t\tl2_flush();\n\t\tCK(cudaEventRecord(a));\n\t\tf();\n\t\tCK(cudaEventRecord(b));\n"
    "\t\tCK(cudaEventSynchronize(b));\n\t\tfloat ms;\n"
    "\t\tCK(cudaEventElapsedTime(&ms, a, b));\n\t\tt.push_back(ms * 1e3);\n"
    "\t}\n"
    "\tCK(cudaEventDestroy(a));\n\tCK(cudaEventDestroy(b));\n"
    "\tstd::sort(t.begin(), t.end());\n\treturn t[t.size() / 2];\n"
    "}\n"
    "/* device peak: a large device-to-device copy (reads and writes), in GB/s */\n"
    "static double peak_gbs(void)\n"
    "{\n"
    "\tsize_t fr, tot;\n\tCK(cudaMemGetInfo(&fr, &tot));\n"
    "\tsize_t bytes = (size_t)1 << 30;\n\twhile (bytes > fr / 4)\n\t\tbytes /= 2;\n"
    "\tvoid *a = dalloc(bytes), *b = dalloc(bytes);\n"
    "\tCK(cudaMemset(a, 1, bytes));\n"
    "\tconst double us = median_us([&] { CK(cudaMemcpyAsync(b, a, bytes, "
    "cudaMemcpyDeviceToDevice)); }, 7);\n"
    "\tCK(cudaFree(a));\n\tCK(cudaFree(b));\n"
    "\treturn 2.0 * bytes / us / 1e3;\n"
    "}\n"
    "/* a copy kernel: 16 bytes a thread an iteration, grid-stride */\n"
    "__global__ void aic_copy16(const int4 *__restrict__ a, int4 *__restrict__ b, long n)\n"
    "{\n"
    "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "\t     i += (long)gridDim.x * blockDim.x)\n"
    "\t\tb[i] = a[i];\n"
    "}\n"
    "/* a device-to-device copy of as many bytes as the fused kernel moves (half read, half\n"
    " * written), timed as the kernels are, the faster of cudaMemcpyAsync and a copy kernel:\n"
    " * the floor at this size, launch and ramp included, which a 1 GiB copy's peak leaves\n"
    " * out */\n"
    "static double copy_us(double moved, int samples)\n"
    "{\n"
    "\tsize_t bytes = (size_t)(moved / 2);\n"
    "\tbytes = bytes < 256 ? 256 : (bytes + 255) / 256 * 256;\n"
    "\tvoid *a = dalloc(bytes), *b = dalloc(bytes);\n"
    "\tCK(cudaMemset(a, 1, bytes));\n"
    "\tconst double mc = median_us([&] { CK(cudaMemcpyAsync(b, a, bytes, "
    "cudaMemcpyDeviceToDevice)); }, samples);\n"
    "\tconst long n = (long)(bytes / 16), most = (long)aic_sm_count() * 8;\n"
    "\tconst unsigned grid = (unsigned)((n + 255) / 256 < most ? (n + 255) / 256 : most);\n"
    "\tconst double kc = median_us([&] {\n"
    "\t\taic_copy16<<<grid, 256>>>((const int4 *)a, (int4 *)b, n);\n"
    "\t\tCK(cudaGetLastError());\n"
    "\t}, samples);\n"
    "\tCK(cudaFree(a));\n\tCK(cudaFree(b));\n"
    "\treturn mc < kc ? mc : kc;\n"
    "}\n"
    "static int ref_vec(const void *p, size_t esize, long m)\n"
    "{\n\treturn aic_aligned(p, 4 * esize) && m % 4 == 0 ? 4 : 1;\n}\n"
    "static unsigned ref_grid(long n, int v)\n"
    "{\n"
    "\tlong g = (n / v + 255) / 256;\n\tconst long cap = (long)aic_sm_count() * 16;\n"
    "\treturn (unsigned)(g < 1 ? 1 : g > cap ? cap : g);\n"
    "}\n";

/* The group's kind as the description spells it. */
static const char *fgroup_kind_name(const struct fgroup *g)
{
	return g->kind == FG_CHAIN ? "elementwise-chain"
	       : g->kind == FG_ROW ? "reduction-epilogue"
	                           : "column-reduction";
}

void emit_bench(struct strbuf *sb, const struct fgroup *g)
{
	const char *nm = g->name;
	int chain = g->kind == FG_CHAIN;
	int maxv = fgroup_max_vec(g);
	strbuf_addf(sb,
	            "/*\n * %s_bench.cu - generated by aicprof fuse: the bench harness of group "
	            "'%s'.\n *\n * Builds with: nvcc -O3 -arch=sm_90 -o %s_bench %s_bench.cu\n"
	            " * Runs the unfused reference (one kernel per op) and the fused kernel on "
	            "fresh random\n * inputs, checks every written element against the reference, "
	            "tunes the launch\n * parameters, times both, and prints one JSON line.\n"
	            " *   %s_bench [--info] [--config BLOCK,VEC,EPT] [--samples N] [--seed S]\n"
	            " */\n",
	            nm, nm, nm, nm, nm);
	strbuf_addf(sb, "#include \"%s_kernel.cu\"\n", nm);
	strbuf_adds(sb, bench_support);
	strbuf_addf(sb, "\nstatic const long N = %ldL, ROWS = %ldL, COLS = %ldL;\n", g->numel,
	            g->rows, g->cols);
	strbuf_addf(sb, "static const double BYTES_FUSED = %.0f, BYTES_UNFUSED = %.0f;\n",
	            fgroup_bytes_fused(g), fgroup_bytes_unfused(g));
	for (int k = 0; k < g->nops; k++) {
		if (g->ops[k].op->kind == FOP_REDUCE)
			emit_ref_red(sb, g, k);
		else if (g->ops[k].op->kind == FOP_COLSUM)
			emit_ref_colsum(sb, g, k);
		else
			emit_ref_ew(sb, g, k);
	}
	/* buffers: d[v] for every value (inputs and reference results), w[k] for fused writes;
	 * dg[i] an input read through an index map, gathered into N elements once */
	strbuf_addf(sb, "\nstatic void *d[%d], *w[%d];\n", g->nvalues, g->nwrites);
	if (fgroup_mapped(g))
		strbuf_addf(sb, "static void *dg[%d];\n", g->ninputs);
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[i].map.dims)
			strbuf_addf(
			    sb,
			    "\n/* %s through its index map, dense: what the unfused program's "
			    "strided loops\n * read from it, element by element, for the "
			    "reference to read */\n"
			    "__global__ void gather_%s(const %s *src, %s *dst)\n{\n"
			    "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < "
			    "N;\n\t     i += (long)gridDim.x * blockDim.x)\n"
			    "\t\tdst[i] = src[%s_map_%s(i)];\n}\n",
			    g->values[i].name, g->values[i].name, fdtype_ctype(g->values[i].dtype),
			    fdtype_ctype(g->values[i].dtype), g->name, g->values[i].name);
	strbuf_adds(sb,
	            "static const unsigned long long SEED = 0x5eed0123456789ull, OFFSET = 8;\n");
	strbuf_adds(sb,
	            "\n/* the unfused sequence on elements off .. N-1 */\n"
	            "static void run_ref(long off)\n{\n\tconst long n = N - off;\n\t(void)n;\n");
	for (int k = 0; k < g->nops; k++) {
		const struct fopnode *n = &g->ops[k];
		const struct fvalue *out = &g->values[n->out];
		if (n->op->kind == FOP_REDUCE) {
			strbuf_addf(sb,
			            "\tref%d<<<ref_grid(ROWS * 256, 1), 256>>>(ROWS, (%s *)d[%d]",
			            k, fdtype_ctype(out->dtype), n->out);
			for (int a = 0; a < n->nargs; a++)
				strbuf_addf(sb, ", (const %s *)d[%d]",
				            fdtype_ctype(g->values[n->arg[a]].dtype), n->arg[a]);
			strbuf_adds(sb, ");\n");
			continue;
		}
		if (n->op->kind == FOP_COLSUM) {
			strbuf_addf(
			    sb,
			    "\tref%d<<<(unsigned)((COLS + 31) / 32), dim3(32, 32)>>>(ROWS, (%s "
			    "*)d[%d], (const %s *)d[%d]);\n",
			    k, fdtype_ctype(out->dtype), n->out,
			    fdtype_ctype(g->values[n->arg[0]].dtype), n->arg[0]);
			continue;
		}
		/* an op on column sums runs over the cols of them */
		strbuf_adds(sb, out->per_col ? "\t{\n\t\tconst long n = COLS;\n\t\tint v = 4;\n"
		                             : "\t{\n\t\tint v = 4;\n");
		strbuf_addf(sb, "\t\tv = std::min(v, ref_vec((%s *)d[%d] + off, %d, n));\n",
		            fdtype_ctype(out->dtype), n->out, fdtype_size(out->dtype));
		for (int a = 0; a < n->nargs; a++) {
			const struct fvalue *av = &g->values[n->arg[a]];
			strbuf_addf(sb, "\t\tconst %s *a%d = (const %s *)%s[%d] + off;\n",
			            fdtype_ctype(av->dtype), a, fdtype_ctype(av->dtype),
			            av->map.dims ? "dg" : "d", n->arg[a]);
			if (av->numel == g->numel || av->per_col || av->map.dims)
				strbuf_addf(sb, "\t\tconst long m%d = n;\n", a);
			else
				strbuf_addf(sb, "\t\tconst long m%d = %ldL;\n", a, av->numel);
			strbuf_addf(sb, "\t\tv = std::min(v, ref_vec(a%d, %d, m%d));\n", a,
			            fdtype_size(av->dtype), a);
		}
		strbuf_adds(sb, "\t\tif (v == 4)\n");
		for (int pass = 0; pass < 2; pass++) {
			strbuf_addf(
			    sb, "\t\t\tref%d<%d><<<ref_grid(n, %d), 256>>>(n, (%s *)d[%d] + off", k,
			    pass ? 1 : 4, pass ? 1 : 4, fdtype_ctype(out->dtype), n->out);
			for (int a = 0; a < n->nargs; a++)
				strbuf_addf(sb, ", a%d, m%d", a, a);
			strbuf_adds(sb, ", SEED, OFFSET);\n");
			if (!pass)
				strbuf_adds(sb, "\t\telse\n");
		}
		strbuf_adds(sb, "\t}\n");
	}
	strbuf_adds(sb, "}\n");

	strbuf_addf(sb, "\nstatic %s_args fused_args(long off)\n{\n\t%s_args a{};\n", nm, nm);
	for (int i = 0; i < g->ninputs; i++) {
		strbuf_addf(sb, "\ta.in_%s = (const %s *)d[%d] + off;\n", g->values[i].name,
		            fdtype_ctype(g->values[i].dtype), i);
		if (emit_bcast(g, i))
			strbuf_addf(sb, "\ta.m_%s = %ldL;\n", g->values[i].name,
			            g->values[i].numel);
	}
	for (int k = 0; k < g->nwrites; k++)
		strbuf_addf(sb, "\ta.w_%s = (%s *)w[%d] + off;\n",
		            g->values[g->writes[k].value].name, fdtype_ctype(g->writes[k].dtype),
		            k);
	strbuf_adds(sb, "\ta.n = N - off;\n\ta.rows = ROWS;\n\ta.cols = COLS;\n"
	                "\ta.seed = SEED;\n\ta.offset = OFFSET;\n\treturn a;\n}\n");

	/* poison and check */
	strbuf_adds(sb, "\nstatic void poison_writes(void)\n{\n");
	for (int k = 0; k < g->nwrites; k++)
		strbuf_addf(sb, "\tCK(cudaMemset(w[%d], 0xFF, %ldL * %d));\n", k,
		            fgroup_write_numel(g, k), fdtype_size(g->writes[k].dtype));
	strbuf_adds(sb, "}\nstatic void poison_refs(void)\n{\n");
	for (int k = 0; k < g->nops; k++) {
		int v = g->ops[k].out;
		strbuf_addf(sb, "\tCK(cudaMemset(d[%d], 0xFF, %ldL * %d));\n", v,
		            g->values[v].numel, fdtype_size(g->values[v].dtype));
	}
	strbuf_adds(sb, "}\n");
	strbuf_addf(sb, "static const char *WNAME[%d] = {", g->nwrites);
	for (int k = 0; k < g->nwrites; k++)
		strbuf_addf(sb, "%s\"%s\"", k ? ", " : "", g->values[g->writes[k].value].name);
	strbuf_adds(sb, "};\n");
	strbuf_addf(sb, "static const double TOL[%d] = {", g->nwrites);
	for (int k = 0; k < g->nwrites; k++) {
		double t1 = tol_of(g->writes[k].dtype),
		       t2 = tol_of(g->values[g->writes[k].value].dtype);
		strbuf_addf(sb, "%s%g", k ? ", " : "", t1 > t2 ? t1 : t2);
	}
	strbuf_adds(sb, "};\n");
	strbuf_addf(sb, "/* compares every write from element off; fills err[], returns 1 when "
	                "all pass */\nstatic int check(long off, double *err, unsigned long long "
	                "*unwritten)\n{\n\tint ok = 1;\n\tcmp_result r;\n\t*unwritten = 0;\n");
	for (int k = 0; k < g->nwrites; k++) {
		int v = g->writes[k].value;
		strbuf_addf(
		    sb,
		    "\tr = compare<%s, %s>((%s *)w[%d] + off, (%s *)d[%d] + off, %ldL - off);\n"
		    "\terr[%d] = r.rel;\n\t*unwritten += r.unwritten;\n"
		    "\tif (r.unwritten || r.bad || !(r.rel < TOL[%d]))\n\t\tok = 0;\n",
		    fdtype_ctype(g->writes[k].dtype), fdtype_ctype(g->values[v].dtype),
		    fdtype_ctype(g->writes[k].dtype), k, fdtype_ctype(g->values[v].dtype), v,
		    fgroup_write_numel(g, k), k, k);
	}
	strbuf_adds(sb, "\treturn ok;\n}\n");

	/* main */
	strbuf_addf(sb, "\nint main(int argc, char **argv)\n{\n\tprog = \"%s_bench\";\n", nm);
	strbuf_adds(
	    sb, "\tint info = 0, samples = 30, cb = 0, cv = 0, ce = 0;\n"
	        "\tunsigned long long seed = (unsigned long long)time(NULL) * 2654435761ull | 1;\n"
	        "\tfor (int i = 1; i < argc; i++) {\n"
	        "\t\tif (!strcmp(argv[i], \"--info\"))\n\t\t\tinfo = 1;\n"
	        "\t\telse if (!strcmp(argv[i], \"--config\") && i + 1 < argc) {\n"
	        "\t\t\tif (sscanf(argv[++i], \"%d,%d,%d\", &cb, &cv, &ce) != 3) {\n"
	        "\t\t\t\tfprintf(stderr, \"%s: --config wants BLOCK,VEC,EPT\\n\", prog);\n"
	        "\t\t\t\treturn 2;\n\t\t\t}\n"
	        "\t\t} else if (!strcmp(argv[i], \"--samples\") && i + 1 < argc)\n"
	        "\t\t\tsamples = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 30;\n"
	        "\t\telse if (!strcmp(argv[i], \"--seed\") && i + 1 < argc)\n"
	        "\t\t\tseed = strtoull(argv[++i], NULL, 0) | 1;\n"
	        "\t\telse {\n\t\t\tfprintf(stderr, \"usage: %s [--info] [--config BLOCK,VEC,EPT] "
	        "[--samples N] [--seed S]\\n\", prog);\n\t\t\treturn 2;\n\t\t}\n"
	        "\t}\n"
	        "\tint ndev = 0;\n"
	        "\tcudaError_t e = cudaGetDeviceCount(&ndev);\n"
	        "\tif (e != cudaSuccess || ndev == 0) {\n"
	        "\t\tfprintf(stderr, \"%s: no CUDA device: %s\\n\", prog,\n"
	        "\t\t\te != cudaSuccess ? cudaGetErrorString(e) : \"none found\");\n"
	        "\t\treturn 3;\n\t}\n"
	        "\tcudaDeviceProp prop;\n\tCK(cudaGetDeviceProperties(&prop, 0));\n"
	        "\tif (info) {\n"
	        "\t\tprintf(\"{\\\"device\\\":\\\"%s\\\",\\\"cc\\\":\\\"%d.%d\\\",\\\"sms\\\":%d}"
	        "\\n\", "
	        "prop.name, prop.major,\n\t\t       prop.minor, prop.multiProcessorCount);\n"
	        "\t\treturn 0;\n\t}\n"
	        "\tl2_bytes = (size_t)(prop.l2CacheSize > 0 ? prop.l2CacheSize : 1 << 24) * 2;\n"
	        "\tl2_scratch = dalloc(l2_bytes);\n"
	        "\tCK(cudaMemset(l2_scratch, 0, l2_bytes));\n"
	        "\tunsigned long long rng = seed;\n");
	for (int i = 0; i < g->nvalues; i++) {
		const struct fvalue *v = &g->values[i];
		strbuf_addf(sb, "\td[%d] = dalloc((size_t)%ld * %d); /* %s */\n", i, v->numel,
		            fdtype_size(v->dtype), v->name);
		if (i < g->ninputs) {
			strbuf_adds(sb, "\t");
			char buf[16];
			snprintf(buf, sizeof(buf), "d[%d]", i);
			add_fill(sb, g, i, buf);
			strbuf_adds(sb, ";\n");
		}
	}
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[i].map.dims)
			strbuf_addf(sb,
			            "\tdg[%d] = dalloc((size_t)N * %d);\n"
			            "\tgather_%s<<<ref_grid(N, 1), 256>>>((const %s *)d[%d], (%s "
			            "*)dg[%d]);\n",
			            i, fdtype_size(g->values[i].dtype), g->values[i].name,
			            fdtype_ctype(g->values[i].dtype), i,
			            fdtype_ctype(g->values[i].dtype), i);
	for (int k = 0; k < g->nwrites; k++)
		strbuf_addf(sb, "\tw[%d] = dalloc((size_t)%ldL * %d);\n", k,
		            fgroup_write_numel(g, k), fdtype_size(g->writes[k].dtype));
	strbuf_addf(sb, "\tdouble err[%d], best_err[%d];\n\tunsigned long long unwritten = 0;\n",
	            g->nwrites, g->nwrites);
	strbuf_addf(
	    sb,
	    "\t/* the reference, then every configuration: check, then time */\n"
	    "\tpoison_refs();\n\trun_ref(0);\n\tCK(cudaDeviceSynchronize());\n"
	    "\tstruct cfg {\n\t\tint b, v, e, ok;\n\t\tdouble us;\n\t};\n"
	    "\tstd::vector<cfg> cfgs;\n"
	    "\tif (cb)\n\t\tcfgs.push_back({cb, cv, ce, 0, 0});\n"
	    "\telse\n"
	    "\t\tfor (int b = 128; b <= 512; b *= 2)\n"
	    "\t\t\tfor (int v = 1; v <= %s_MAX_VEC; v *= 2)\n"
	    "\t\t\t\tfor (int e2 = 1; e2 <= %d; e2 *= 2)\n"
	    "\t\t\t\t\tcfgs.push_back({b, v, e2, 0, 0});\n"
	    "\tconst %s_args a = fused_args(0);\n"
	    "\tint best = -1, all_ok = 1;\n"
	    "\tfor (size_t k = 0; k < cfgs.size(); k++) {\n"
	    "\t\tcfg &c = cfgs[k];\n"
	    "\t\tpoison_writes();\n"
	    "\t\tCK(%s_launch(a, c.b, c.v, c.e, 0));\n"
	    "\t\tCK(cudaDeviceSynchronize());\n"
	    "\t\tc.ok = check(0, err, &unwritten);\n"
	    "\t\tif (!c.ok) {\n"
	    "\t\t\tall_ok = 0;\n"
	    "\t\t\tfprintf(stderr, \"%%s: block %%d vec %%d ept %%d: FAILED (%%llu unwritten",
	    nm, g->kind != FG_ROW ? 4 : 1, nm, nm); /* as the launcher reads ept */
	strbuf_adds(sb, ")");
	for (int k = 0; k < g->nwrites; k++)
		strbuf_adds(sb, " %s rel_l2 %g");
	strbuf_adds(sb, "\\n\", prog, c.b, c.v, c.e, unwritten");
	for (int k = 0; k < g->nwrites; k++)
		strbuf_addf(sb, ", WNAME[%d], err[%d]", k, k);
	strbuf_addf(
	    sb,
	    ");\n\t\t\tcontinue;\n\t\t}\n"
	    "\t\tc.us = median_us([&] { CK(%s_launch(a, c.b, c.v, c.e, 0)); }, cb ? samples "
	    ": 10);\n"
	    "\t\tif (best < 0 || c.us < cfgs[best].us) {\n\t\t\tbest = (int)k;\n"
	    "\t\t\tmemcpy(best_err, err, sizeof(err));\n\t\t}\n"
	    "\t}\n",
	    nm);
	/* misaligned check */
	if (chain && !has_bcast(g))
		strbuf_addf(
		    sb,
		    "\t/* misaligned by one element, odd length: the scalar fallback and "
		    "the tail */\n"
		    "\tint mis_ok = 1;\n"
		    "\tif (N > 1) {\n"
		    "\t\tpoison_refs();\n\t\trun_ref(1);\n\t\tpoison_writes();\n"
		    "\t\tCK(%s_launch(fused_args(1), 256, %d, 2, 0));\n"
		    "\t\tCK(cudaDeviceSynchronize());\n"
		    "\t\tmis_ok = check(1, err, &unwritten);\n"
		    "\t\tif (!mis_ok)\n\t\t\tfprintf(stderr, \"%%s: misaligned run FAILED "
		    "(%%llu unwritten)\\n\", prog, unwritten);\n"
		    "\t\tpoison_refs();\n\t\trun_ref(0);\n\t\tCK(cudaDeviceSynchronize());\n"
		    "\t}\n",
		    nm, maxv);
	else
		strbuf_adds(sb, "\tconst int mis_ok = 1;\n");
	strbuf_addf(sb,
	            "\tdouble before = median_us([&] { run_ref(0); }, samples);\n"
	            "\tdouble after = 0;\n"
	            "\tif (best >= 0 && !cb)\n"
	            "\t\tafter = cfgs[best].us = median_us([&] { CK(%s_launch(a, cfgs[best].b, "
	            "cfgs[best].v, cfgs[best].e, 0)); }, samples);\n"
	            "\telse if (best >= 0)\n\t\tafter = cfgs[best].us;\n"
	            "\tconst double peak = peak_gbs();\n"
	            "\tconst double same = copy_us(BYTES_FUSED, samples);\n"
	            "\tconst int ok = all_ok && mis_ok && best >= 0;\n",
	            nm);
	strbuf_addf(
	    sb,
	    "\tprintf(\"{\\\"group\\\":\\\"%s\\\",\\\"kind\\\":\\\"%s\\\",\\\"dtype\\\":"
	    "\\\"%s\\\",\\\"numel\\\":%%ld,\\\"rows\\\":%%ld,\\\"cols\\\":%%ld,\", N, ROWS, "
	    "COLS);\n",
	    nm, fgroup_kind_name(g), fdtype_name(g->dtype));
	strbuf_adds(
	    sb,
	    "\tprintf(\"\\\"device\\\":\\\"%s\\\",\\\"cc\\\":\\\"%d.%d\\\",\\\"seed\\\":%llu,"
	    "\\\"ok\\\":%s,\\\"misaligned_ok\\\":%s,\", prop.name,\n"
	    "\t       prop.major, prop.minor, seed, ok ? \"true\" : \"false\", mis_ok ? \"true\" : "
	    "\"false\");\n"
	    "\tprintf(\"\\\"errors\\\":{\");\n"
	    "\tfor (int k = 0; k < (int)(sizeof(WNAME) / sizeof(WNAME[0])); k++)\n"
	    "\t\tprintf(\"%s\\\"%s\\\":{\\\"rel_l2\\\":%.3g,\\\"tol\\\":%g}\", k ? \",\" : \"\", "
	    "WNAME[k],\n\t\t       best >= 0 ? best_err[k] : err[k], TOL[k]);\n"
	    "\tprintf(\"},\\\"before_us\\\":%.3f,\\\"after_us\\\":%.3f,\\\"speedup\\\":%.3f,\", "
	    "before, after,\n\t       after > 0 ? before / after : 0.0);\n"
	    "\tprintf(\"\\\"bytes_before\\\":%.0f,\\\"bytes_after\\\":%.0f,\\\"gbs_before\\\":%.1f,"
	    "\\\"gbs_after\\\":%.1f,\\\"peak_gbs\\\":%.1f,\\\"copy_us\\\":%.3f,\",\n"
	    "\t       BYTES_UNFUSED, BYTES_FUSED, BYTES_UNFUSED / before / 1e3,\n"
	    "\t       after > 0 ? BYTES_FUSED / after / 1e3 : 0.0, peak, same);\n"
	    "\tif (best >= 0)\n"
	    "\t\tprintf(\"\\\"config\\\":{\\\"block\\\":%d,\\\"vec\\\":%d,\\\"ept\\\":%d},\", "
	    "cfgs[best].b,\n\t\t       cfgs[best].v, cfgs[best].e);\n"
	    "\tprintf(\"\\\"tuned\\\":%s,\\\"timings\\\":[\", cb ? \"false\" : \"true\");\n"
	    "\tfor (size_t k = 0; k < cfgs.size(); k++)\n"
	    "\t\tprintf(\"%s{\\\"block\\\":%d,\\\"vec\\\":%d,\\\"ept\\\":%d,\\\"us\\\":%.3f,"
	    "\\\"ok\\\":%s}\", k ? \",\" : \"\",\n"
	    "\t\t       cfgs[k].b, cfgs[k].v, cfgs[k].e, cfgs[k].us, cfgs[k].ok ? \"true\" : "
	    "\"false\");\n"
	    "\tprintf(\"]}\\n\");\n"
	    "\treturn ok ? 0 : 1;\n}\n");
}

/* Smallest size for the CPU check that keeps every broadcast input dividing it. */
static long cpu_rows(const struct fgroup *g)
{
	/* a column group sums 64 rows, a row group takes 6 */
	long rmax = g->kind == FG_COL ? 64 : 6;
	int flat = !fgroup_rowed(g); /* a chain of one row: any count of elements */
	long r0 = flat ? 1 : (g->rows < rmax ? g->rows : rmax);
	long unit = flat ? 1 : g->cols;
	long target = flat ? 4099 : r0;
	if (flat)
		r0 = target < g->numel ? target : g->numel;
	for (long r = r0; r <= g->numel / unit; r++) {
		int ok = 1;
		for (int i = 0; i < g->ninputs; i++)
			if (g->values[i].numel != g->numel && !g->values[i].per_row &&
			    (r * unit) % g->values[i].numel)
				ok = 0;
		if (ok)
			return r;
	}
	return g->numel / unit;
}

/* The op-by-op evaluation of g in double: statements that fill r[v] (N elements; a column
 * group's per-column values COLS) from the inputs r[0 .. ninputs - 1], already N elements. */
static void emit_ref_ops(struct strbuf *sb, const struct fgroup *g)
{
	for (int k = 0; k < g->nops; k++) {
		const struct fopnode *op = &g->ops[k];
		strbuf_addf(sb, "\tr[%d].resize(N); /* %s = %s */\n", op->out,
		            g->values[op->out].name, op->op->name);
		if (op->op->kind == FOP_COLSUM) {
			/* the sum over the rows of each column, in double */
			strbuf_addf(sb,
			            "\tfor (long c = 0; c < COLS; c++) {\n\t\tdouble t = 0;\n"
			            "\t\tfor (long row = 0; row < ROWS; row++)\n"
			            "\t\t\tt += r[%d][row * COLS + c];\n\t\tr[%d][c] = t;\n\t}\n",
			            op->arg[0], op->out);
			continue;
		}
		if (op->op->kind == FOP_EW) {
			/* an op on column sums: over the cols of them */
			strbuf_addf(sb, "\tfor (long i = 0; i < %s; i++) {\n",
			            g->values[op->out].per_col ? "COLS" : "N");
			strbuf_adds(sb, "\t\tconst long row = i / COLS, col = i % COLS;\n"
			                "\t\t(void)row; (void)col;\n");
			for (int a = 0; a < op->nargs; a++) {
				int seen = 0; /* mul(x, x): one declaration */
				for (int b = 0; b < a; b++)
					seen |= op->arg[b] == op->arg[a];
				if (!seen)
					strbuf_addf(sb, "\t\tconst double v%d = r[%d][i];\n",
					            op->arg[a], op->arg[a]);
			}
			if (op->drop >= 0)
				strbuf_addf(sb, "\t\tfloat u[%d];\n\t\tu[%d] = ud[%d][i];\n",
				            op->drop + 1, op->drop, op->drop);
			strbuf_addf(sb, "\t\tr[%d][i] = ", op->out);
			emit_expr(sb, g, op, 1, "v%d", "u[%d]");
			strbuf_adds(sb, ";\n\t}\n");
			continue;
		}
		const char *rn = op->op->name;
		int x = op->arg[0];
		strbuf_addf(sb,
		            "\tfor (long row = 0; row < ROWS; row++) {\n"
		            "\t\tconst double *x = &r[%d][row * COLS];\n"
		            "\t\tdouble *y = &r[%d][row * COLS];\n"
		            "\t\tdouble m = -INFINITY, s = 0, s2 = 0;\n"
		            "\t\tfor (long c = 0; c < COLS; c++) {\n"
		            "\t\t\tm = x[c] > m ? x[c] : m;\n\t\t\ts += x[c];\n\t\t\ts2 += x[c] * "
		            "x[c];\n\t\t}\n",
		            x, op->out);
		if (!strcmp(rn, "layer_norm_backward")) {
			/* rstd * (g - mean(g) - xh * mean(g * xh)), g = dy * gamma, xh = (x - mean)
			 * * rstd; mean and rstd the inputs (per row), not recomputed */
			char gmr[48] = "1.0";
			if (op->nargs > 4)
				snprintf(gmr, sizeof(gmr), "r[%d][row * COLS + c]", op->arg[4]);
			strbuf_addf(
			    sb,
			    "\t\t(void)m; (void)s; (void)s2;\n"
			    "\t\tdouble sg = 0, sgx = 0;\n"
			    "\t\tfor (long c = 0; c < COLS; c++) {\n"
			    "\t\t\tconst double g_ = x[c] * %s;\n"
			    "\t\t\tconst double xh = (r[%d][row * COLS + c] - r[%d][row * COLS + "
			    "c]) * r[%d][row * COLS + c];\n"
			    "\t\t\tsg += g_;\n\t\t\tsgx += g_ * xh;\n\t\t}\n"
			    "\t\tfor (long c = 0; c < COLS; c++) {\n"
			    "\t\t\tconst double g_ = x[c] * %s;\n"
			    "\t\t\tconst double rs = r[%d][row * COLS + c];\n"
			    "\t\t\tconst double xh = (r[%d][row * COLS + c] - r[%d][row * COLS + "
			    "c]) * rs;\n"
			    "\t\t\ty[c] = rs * (g_ - sg / COLS - xh * sgx / COLS);\n\t\t}\n",
			    gmr, op->arg[1], op->arg[2], op->arg[3], gmr, op->arg[3], op->arg[1],
			    op->arg[2]);
		} else if (!strcmp(rn, "rms_norm_backward")) {
			/* dx = r * (gw - x * r^2 * mean(gw * x)), r = 1 / sqrt(mean(x^2) + eps),
			 * gw the gradient of x * r (times the weight) */
			strbuf_addf(
			    sb,
			    "\t\t(void)m; (void)s;\n"
			    "\t\tconst double *gw = &r[%d][row * COLS];\n"
			    "\t\tdouble sgx = 0;\n"
			    "\t\tfor (long c = 0; c < COLS; c++)\n\t\t\tsgx += gw[c] * x[c];\n"
			    "\t\tconst double rr = 1.0 / sqrt(s2 / COLS + (double)",
			    op->arg[1]);
			emit_lit(sb, op->num);
			strbuf_adds(
			    sb, ");\n\t\tfor (long c = 0; c < COLS; c++)\n"
			        "\t\t\ty[c] = rr * gw[c] - x[c] * rr * rr * rr * sgx / COLS;\n");
		} else if (!strcmp(rn, "log_softmax_backward")) {
			/* dx = dy - exp(y) * sum(dy), y the forward's log-probabilities */
			strbuf_addf(sb,
			            "\t\t(void)m; (void)s2;\n\t\tfor (long c = 0; c < COLS; c++)\n"
			            "\t\t\ty[c] = x[c] - exp(r[%d][row * COLS + c]) * s;\n",
			            op->arg[1]);
		} else if (!strcmp(rn, "softmax") || !strcmp(rn, "log_softmax")) {
			strbuf_adds(sb, "\t\tdouble e = 0;\n\t\tfor (long c = 0; c < COLS; c++)\n"
			                "\t\t\te += exp(x[c] - m);\n"
			                "\t\tfor (long c = 0; c < COLS; c++)\n");
			strbuf_adds(sb, !strcmp(rn, "softmax")
			                    ? "\t\t\ty[c] = exp(x[c] - m) / e;\n"
			                    : "\t\t\ty[c] = x[c] - m - log(e);\n");
		} else {
			int ln = !strcmp(rn, "layer_norm");
			if (ln)
				strbuf_adds(
				    sb, "\t\tconst double mean = s / COLS;\n\t\tdouble var = 0;\n"
				        "\t\tfor (long c = 0; c < COLS; c++)\n"
				        "\t\t\tvar += (x[c] - mean) * (x[c] - mean);\n"
				        "\t\tvar /= COLS;\n");
			else
				strbuf_adds(sb, "\t\tconst double mean = 0, var = s2 / COLS;\n");
			strbuf_adds(
			    sb, "\t\tfor (long c = 0; c < COLS; c++)\n\t\t\ty[c] = (x[c] - mean) "
			        "/ sqrt(var + ");
			strbuf_addf(sb, "(double)");
			emit_lit(sb, op->num);
			strbuf_adds(sb, ")");
			if (op->nargs > 1)
				strbuf_addf(sb, " * r[%d][c]", op->arg[1]);
			if (op->nargs > 2)
				strbuf_addf(sb, " + r[%d][c]", op->arg[2]);
			strbuf_adds(sb, ";\n");
		}
		strbuf_adds(sb, "\t}\n");
	}
}

/*
 * The gradient check of a row backward g (fusion/backward.c) of forward group fw, inside the
 * CPU check's main after its own comparisons: the fused gradients (g's writes: grad_of[i] as
 * fgroup_row_backward gives it, a row vector's summands added over the rows in double)
 * against directional derivatives of L = sum(gy * y), the forward evaluated op by op in
 * double (central differences), in three random directions. Independent of the derivation:
 * a wrong rule fails it. Skipped where fw rounds to 16 bits inside (a step function).
 */
static void emit_grad_check(struct strbuf *sb, const struct fgroup *g, const struct fgroup *fw,
                            const int *grad_of)
{
	int nin = fw->ninputs, r16 = 0, nfull = 0;
	for (int k = 0; k < fw->nops; k++)
		r16 |= !strcmp(fw->ops[k].op->name, "cast") && fw->ops[k].to != FD_F32 &&
		       fw->ops[k].to != FD_BOOL;
	for (int w = 0; w < g->nwrites; w++)
		nfull += !g->writes[w].kept;
	if (r16) {
		strbuf_addf(sb,
		            "\tprintf(\"ok - %s: gradients vs the forward's directional "
		            "derivatives # skip: the forward rounds to 16 bits\\n\");\n",
		            g->name);
		return;
	}
	strbuf_addf(sb,
	            "\t/* the gradients against directional derivatives of the forward (%s), op "
	            "by op in double */\n\t{\n\t\tstd::vector<double> gf[%d];\n",
	            fw->name, nin);
	for (int i = 0; i < nin; i++) {
		if (grad_of[i] < 0)
			continue;
		if (grad_of[i] < FGROUP_GRAD_COL)
			strbuf_addf(sb, "\t\tgf[%d].assign(f[%d].begin(), f[%d].end());\n", i,
			            grad_of[i], grad_of[i]);
		else
			strbuf_addf(sb,
			            "\t\tgf[%d].assign(COLS, 0.0);\n"
			            "\t\tfor (long i = 0; i < N; i++)\n\t\t\tgf[%d][i %% COLS] += "
			            "f[%d][i];\n",
			            i, i, nfull + grad_of[i] - FGROUP_GRAD_COL);
	}
	strbuf_addf(sb, "\t\tauto fwd = [&](std::vector<double> *r) {\n");
	emit_ref_ops(sb, fw);
	strbuf_addf(sb,
	            "\t\t};\n"
	            "\t\tauto loss = [&](const std::vector<double> *p) {\n"
	            "\t\t\tstd::vector<double> r[%d];\n"
	            "\t\t\tfor (int k = 0; k < %d; k++) {\n"
	            "\t\t\t\tr[k].resize(N);\n"
	            "\t\t\t\tfor (long i = 0; i < N; i++)\n"
	            "\t\t\t\t\tr[k][i] = p[k][i %% (long)p[k].size()];\n"
	            "\t\t\t}\n\t\t\tfwd(r);\n\t\t\tdouble L = 0;\n",
	            fw->nvalues, nin);
	for (int w = 0; w < fw->nwrites; w++)
		strbuf_addf(sb,
		            "\t\t\tfor (long i = 0; i < N; i++)\n"
		            "\t\t\t\tL += (double)in%d[i] * r[%d][i]; /* gy_%s * %s */\n",
		            nin + w, fw->writes[w].value, fw->values[fw->writes[w].value].name,
		            fw->values[fw->writes[w].value].name);
	strbuf_addf(sb, "\t\t\treturn L;\n\t\t};\n"
	                "\t\tconst double h = 1e-4;\n"
	                "\t\tfor (int t = 0; t < 3; t++) {\n");
	strbuf_addf(sb, "\t\t\tstd::vector<double> pp[%d], pm[%d];\n\t\t\tdouble ana = 0;\n", nin,
	            nin);
	for (int i = 0; i < nin; i++) {
		strbuf_addf(sb,
		            "\t\t\tfor (size_t e = 0; e < in%d.size(); e++) { /* %s */\n"
		            "\t\t\t\tconst double d = %s;\n"
		            "\t\t\t\tpp[%d].push_back(in%d[e] + h * d);\n"
		            "\t\t\t\tpm[%d].push_back(in%d[e] - h * d);\n",
		            i, fw->values[i].name,
		            fw->values[i].dtype == FD_BOOL ? "0.0" : "-1.0 + 2.0 * uni()", i, i, i,
		            i);
		if (grad_of[i] >= 0)
			strbuf_addf(sb, "\t\t\t\tana += gf[%d][e] * d;\n", i);
		else
			strbuf_adds(sb, "\t\t\t\t(void)d;\n");
		strbuf_adds(sb, "\t\t\t}\n");
	}
	strbuf_addf(sb,
	            "\t\t\tconst double num = (loss(pp) - loss(pm)) / (2 * h);\n"
	            "\t\t\tconst double big = fmax(fmax(fabs(num), fabs(ana)), 1e-12);\n"
	            "\t\t\tconst double rel = fabs(num - ana) / big;\n"
	            "\t\t\tconst int ok = rel < 1e-3;\n\t\t\tfails += !ok;\n"
	            "\t\t\tprintf(\"%%s - %s: gradients vs the forward's directional derivative "
	            "%%d: %%.9g vs %%.9g, rel %%.3g\\n\",\n"
	            "\t\t\t       ok ? \"ok\" : \"not ok\", t, ana, num, rel);\n"
	            "\t\t}\n\t}\n",
	            g->name);
}

static void cpucheck(struct strbuf *sb, const struct fgroup *g, const struct fgroup *fw,
                     const int *grad_of);

void emit_cpucheck(struct strbuf *sb, const struct fgroup *g)
{
	cpucheck(sb, g, NULL, NULL);
}

/* See fusion.h. */
void emit_bwd_cpucheck(struct strbuf *sb, const struct fgroup *g, const struct fgroup *fw,
                       const int *grad_of)
{
	cpucheck(sb, g, fw, grad_of);
}

static void cpucheck(struct strbuf *sb, const struct fgroup *g, const struct fgroup *fw,
                     const int *grad_of)
{
	const char *nm = g->name;
	int chain = g->kind == FG_CHAIN, flat = !fgroup_rowed(g);
	long r = cpu_rows(g);
	long n = flat ? r : r * g->cols;
	if (fgroup_mapped(g)) /* index maps hold the recorded sizes */
		n = g->numel;
	strbuf_addf(sb,
	            "/*\n * %s_cpucheck.cu - generated by aicprof fuse: evaluates group '%s''s "
	            "fused math\n * (%s_math.h) on the CPU and compares it with a plain op-by-op "
	            "evaluation in double,\n * on random inputs. Host code only: nvcc -o "
	            "%s_cpucheck %s_cpucheck.cu && ./%s_cpucheck\n * Prints TAP lines; exits 1 on "
	            "a mismatch.\n */\n",
	            nm, nm, nm, nm, nm, nm);
	strbuf_addf(sb,
	            "#include \"%s_math.h\"\n#include <stdio.h>\n#include <stdlib.h>\n"
	            "#include <math.h>\n#include <vector>\n\n",
	            nm);
	strbuf_addf(sb, "static const long N = %ldL, ROWS = %ldL, COLS = %ldL;\n", n, flat ? 1 : r,
	            flat ? n : g->cols);
	strbuf_adds(sb,
	            "static unsigned long long rng = 0x9e3779b97f4a7c15ull;\n"
	            "static float uni(void)\n{\n\trng ^= rng << 13;\n\trng ^= rng >> 7;\n"
	            "\trng ^= rng << 17;\n\treturn (float)((rng >> 40) + 1) / 16777216.f;\n}\n");
	strbuf_adds(sb, "\nint main(void)\n{\n\t(void)ROWS;\n");
	for (int i = 0; i < g->ninputs; i++) {
		const struct fvalue *v = &g->values[i];
		long m = v->numel == g->numel ? n : v->numel;
		strbuf_addf(sb,
		            "\tstd::vector<float> in%d(%ld); /* %s */\n\tfor (auto &x : in%d)\n", i,
		            m, v->name, i);
		if (v->dtype == FD_BOOL)
			strbuf_adds(sb, "\t\tx = uni() < 0.3f;\n");
		else if (wants_positive(g, i))
			strbuf_adds(sb, "\t\tx = 0.5f + 1.5f * uni();\n");
		else
			strbuf_adds(sb, "\t\tx = -3.f + 6.f * uni();\n");
	}
	strbuf_addf(sb,
	            "\tstd::vector<float> ud[%d];\n\tfor (auto &u : ud) {\n"
	            "\t\tu.resize(N);\n\t\tfor (auto &x : u)\n\t\t\tx = uni();\n\t}\n",
	            g->ndrop ? g->ndrop : 1);
	strbuf_addf(sb, "\tstd::vector<float> f[%d];\n\tfor (auto &x : f)\n\t\tx.resize(N);\n",
	            g->nwrites);
	/* gather helper as a lambda */
	strbuf_addf(sb, "\tauto gather = [&](long i, float *in, float *u) {\n");
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[i].per_row)
			strbuf_addf(sb, "\t\tin[%d] = in%d[i / COLS];\n", i, i);
		else if (g->values[i].map.dims)
			strbuf_addf(sb, "\t\tin[%d] = in%d[%s_map_%s(i)];\n", i, i, nm,
			            g->values[i].name);
		else
			strbuf_addf(sb, "\t\tin[%d] = in%d[i %% (long)in%d.size()];\n", i, i, i);
	strbuf_addf(sb, "\t\tfor (int d = 0; d < %d; d++)\n\t\t\tu[d] = ud[d][i];\n\t};\n",
	            g->ndrop ? g->ndrop : 1);
	strbuf_addf(sb, "\t/* fused: the math of %s_math.h */\n", nm);
	if (chain) {
		strbuf_addf(sb,
		            "\tfor (long i = 0; i < N; i++) {\n\t\tfloat in[%d], u[%d], o[%d];\n"
		            "\t\tgather(i, in, u);\n\t\t%s_elem(in, u, o);\n"
		            "\t\tfor (int k = 0; k < %d; k++)\n\t\t\tf[k][i] = o[k];\n\t}\n",
		            g->ninputs, g->ndrop ? g->ndrop : 1, g->nwrites, nm, g->nwrites);
	} else if (g->kind == FG_COL) {
		/* the column sums in float, row after row; then the per-column math */
		int ns = g->ncolsum, nd = g->ndrop ? g->ndrop : 1;
		strbuf_addf(sb,
		            "\tstd::vector<float> cs[%d];\n\tfor (auto &x : cs)\n"
		            "\t\tx.assign(COLS, 0.f);\n"
		            "\tfor (long row = 0; row < ROWS; row++)\n"
		            "\t\tfor (long c = 0; c < COLS; c++) {\n"
		            "\t\t\tconst long i = row * COLS + c;\n"
		            "\t\t\tfloat in[%d], u[%d], s[%d], o[%d] = {};\n"
		            "\t\t\tgather(i, in, u);\n"
		            "\t\t\t%s_col(in, u, row, c, s, o);\n"
		            "\t\t\tfor (int k = 0; k < %d; k++)\n\t\t\t\tcs[k][c] += s[k];\n"
		            "\t\t\tfor (int k = 0; k < %d; k++)\n\t\t\t\tf[k][i] = o[k];\n"
		            "\t\t}\n"
		            "\tfor (long c = 0; c < COLS; c++) {\n"
		            "\t\tfloat in[%d], u[%d], s[%d], o[%d] = {};\n"
		            "\t\tfor (int k = 0; k < %d; k++)\n\t\t\ts[k] = cs[k][c];\n"
		            "\t\tgather(c, in, u); /* the inputs of cols elements at column c */\n"
		            "\t\t%s_fin(s, in, o);\n",
		            ns, g->ninputs, nd, ns, g->nwrites, nm, ns, g->nwrites, g->ninputs, nd,
		            ns, g->nwrites, ns, nm);
		for (int w = 0; w < g->nwrites; w++)
			if (g->values[g->writes[w].value].per_col)
				strbuf_addf(sb, "\t\tf[%d][c] = o[%d];\n", w, w);
		strbuf_adds(sb, "\t}\n");
	} else {
		const struct fopnode *rd = &g->ops[g->red];
		const char *rn = rd->op->name;
		int softmax = !strcmp(rn, "softmax") || !strcmp(rn, "log_softmax");
		int ln = !strcmp(rn, "layer_norm"), lsb = !strcmp(rn, "log_softmax_backward");
		int lnb = !strcmp(rn, "layer_norm_backward");
		int rmsb = !strcmp(rn, "rms_norm_backward");
		char upd[256];
		emit_red_update(upd, sizeof(upd), g, "acc2");
		strbuf_addf(sb,
		            "\tstd::vector<float> xs(COLS);\n"
		            "\tfor (long row = 0; row < ROWS; row++) {\n"
		            "\t\tfloat acc = %s, acc2 = 0.f;\n"
		            "\t\tfor (long c = 0; c < COLS; c++) {\n"
		            "\t\t\tconst long i = row * COLS + c;\n"
		            "\t\t\tfloat in[%d], u[%d], o[%d];\n"
		            "\t\t\tfor (int k = 0; k < %d; k++)\n\t\t\t\to[k] = f[k][i];\n"
		            "\t\t\tgather(i, in, u);\n"
		            "\t\t\tconst float v = %s_pro(in, u, row, c, o);\n"
		            "\t\t\tfor (int k = 0; k < %d; k++)\n\t\t\t\tf[k][i] = o[k];\n"
		            "\t\t\txs[c] = v;\n\t\t\t%s;\n\t\t}\n",
		            softmax ? "-INFINITY" : "0.f", g->ninputs, g->ndrop ? g->ndrop : 1,
		            g->nwrites + rmsb, g->nwrites, nm, g->nwrites, upd);
		if (rmsb) {
			strbuf_adds(sb, "\t\tconst float s0 = 1.f / sqrtf(acc / (float)COLS + ");
			emit_lit(sb, rd->num);
			strbuf_adds(sb, "), s1 = acc2 / (float)COLS;\n");
		} else if (lnb)
			strbuf_adds(
			    sb,
			    "\t\tconst float s0 = acc / (float)COLS, s1 = acc2 / (float)COLS;\n");
		else if (softmax)
			strbuf_adds(sb, "\t\tconst float s0 = acc;\n\t\tfor (long c = 0; c < COLS; "
			                "c++)\n\t\t\tacc2 += expf(xs[c] - s0);\n");
		else if (lsb)
			strbuf_adds(sb, "\t\tacc2 = acc;\n\t\tconst float s0 = acc2;\n");
		else if (ln)
			strbuf_adds(sb,
			            "\t\tconst float s0 = acc / (float)COLS;\n\t\tfor (long c = 0; "
			            "c < COLS; c++)\n\t\t\tacc2 += (xs[c] - s0) * (xs[c] - s0);\n");
		else
			strbuf_adds(sb, "\t\tconst float s0 = 0.f;\n\t\tacc2 = acc;\n");
		if (!strcmp(rn, "softmax"))
			strbuf_adds(sb, "\t\tconst float s1 = 1.f / acc2;\n");
		else if (!strcmp(rn, "log_softmax"))
			strbuf_adds(sb, "\t\tconst float s1 = logf(acc2);\n");
		else if (lsb)
			strbuf_adds(sb, "\t\tconst float s1 = 0.f;\n");
		else if (lnb || rmsb)
			;
		else {
			strbuf_adds(sb, "\t\tconst float s1 = 1.f / sqrtf(acc2 / (float)COLS + ");
			emit_lit(sb, rd->num);
			strbuf_adds(sb, ");\n");
		}
		strbuf_addf(sb,
		            "\t\tfor (long c = 0; c < COLS; c++) {\n"
		            "\t\t\tconst long i = row * COLS + c;\n"
		            "\t\t\tfloat in[%d], u[%d], o[%d];\n"
		            "\t\t\tfor (int k = 0; k < %d; k++)\n\t\t\t\to[k] = f[k][i];\n"
		            "\t\t\tgather(i, in, u);\n"
		            "\t\t\t%s_epi(xs[c], s0, s1, in, u, row, c, o);\n"
		            "\t\t\tfor (int k = 0; k < %d; k++)\n\t\t\t\tf[k][i] = o[k];\n"
		            "\t\t}\n\t}\n",
		            g->ninputs, g->ndrop ? g->ndrop : 1, g->nwrites, g->nwrites, nm,
		            g->nwrites);
	}
	/* op by op, double */
	strbuf_adds(sb, "\t/* op by op, double */\n");
	strbuf_addf(sb, "\tstd::vector<double> r[%d];\n", g->nvalues);
	for (int i = 0; i < g->ninputs; i++) {
		const struct fvalue *iv = &g->values[i];
		const struct fmap *mp = &iv->map;
		if (mp->dims && iv->nvia) {
			/* through the strided loops' own layouts, one after the other, not the map
			 * fitted to them */
			strbuf_addf(sb, "\tr[%d].resize(N);\n\t{ /* %s via the loops' layouts */\n",
			            i, iv->name);
			for (int k = 0; k < iv->nvia; k++) {
				const struct fmap *l = &iv->via[k];
				strbuf_addf(sb, "\t\tstatic const long vz%d[%d] = {", k, l->dims);
				for (int d = 0; d < l->dims; d++)
					strbuf_addf(sb, "%s%ldL", d ? ", " : "", l->size[d]);
				strbuf_addf(sb, "}, vt%d[%d] = {", k, l->dims);
				for (int d = 0; d < l->dims; d++)
					strbuf_addf(sb, "%s%ldL", d ? ", " : "", l->stride[d]);
				strbuf_adds(sb, "};\n");
			}
			strbuf_adds(sb, "\t\tfor (long i = 0; i < N; i++) {\n\t\t\tlong o = i;\n");
			for (int k = 0; k < iv->nvia; k++)
				strbuf_addf(sb,
				            "\t\t\t{\n\t\t\t\tlong q = o;\n\t\t\t\to = %ldL;\n"
				            "\t\t\t\tfor (int d = 0; d < %d; d++) {\n"
				            "\t\t\t\t\to += (q %% vz%d[d]) * vt%d[d];\n"
				            "\t\t\t\t\tq /= vz%d[d];\n\t\t\t\t}\n\t\t\t}\n",
				            iv->via[k].offset, iv->via[k].dims, k, k, k);
			strbuf_addf(sb, "\t\t\tr[%d][i] = in%d[o];\n\t\t}\n\t}\n", i, i);
			continue;
		}
		if (mp->dims) {
			/* through the map as an odometer over its dimensions, not its div/mod
			 * function: a second form of the same offsets */
			strbuf_addf(sb, "\tr[%d].resize(N);\n\t{\n\t\tstatic const long sz[%d] = {",
			            i, mp->dims);
			for (int d = 0; d < mp->dims; d++)
				strbuf_addf(sb, "%s%ldL", d ? ", " : "", mp->size[d]);
			strbuf_addf(sb, "}, st[%d] = {", mp->dims);
			for (int d = 0; d < mp->dims; d++)
				strbuf_addf(sb, "%s%ldL", d ? ", " : "", mp->stride[d]);
			strbuf_addf(
			    sb,
			    "};\n\t\tlong c[%d] = {0};\n"
			    "\t\tfor (long i = 0; i < N; i++) {\n\t\t\tlong o = %ldL;\n"
			    "\t\t\tfor (int d = 0; d < %d; d++)\n\t\t\t\to += c[d] * st[d];\n"
			    "\t\t\tr[%d][i] = in%d[o];\n"
			    "\t\t\tfor (int d = 0; d < %d && ++c[d] == sz[d]; d++)\n"
			    "\t\t\t\tc[d] = 0;\n\t\t}\n\t}\n",
			    mp->dims, mp->offset, mp->dims, i, i, mp->dims);
			continue;
		}
		strbuf_addf(sb, "\tr[%d].resize(N);\n\tfor (long i = 0; i < N; i++)\n", i);
		if (g->values[i].per_row) /* one value a row */
			strbuf_addf(sb, "\t\tr[%d][i] = in%d[i / COLS];\n", i, i);
		else
			strbuf_addf(sb, "\t\tr[%d][i] = in%d[i %% (long)in%d.size()];\n", i, i, i);
	}
	emit_ref_ops(sb, g);
	/* a cast to 16 bits inside the group rounds fp32 and double apart by one ulp of that
	 * type where a value lies near a rounding boundary: its tolerance, as the harness's */
	const char *tol = "1e-5";
	for (int k = 0; k < g->nops; k++)
		if (!strcmp(g->ops[k].op->name, "cast") && g->ops[k].to == FD_BF16)
			tol = "1e-2";
		else if (!strcmp(g->ops[k].op->name, "cast") && g->ops[k].to == FD_F16 &&
		         strcmp(tol, "1e-2"))
			tol = "2e-3";
	strbuf_adds(sb, "\tint fails = 0;\n");
	for (int k = 0; k < g->nwrites; k++) {
		int v = g->writes[k].value;
		strbuf_addf(
		    sb,
		    "\t{\n\t\tdouble d2 = 0, r2 = 0;\n\t\tlong bad = 0;\n"
		    "\t\tconst long NW = %s;\n"
		    "\t\tfor (long i = 0; i < NW; i++) {\n"
		    "\t\t\tconst double a = f[%d][i], b = r[%d][i];\n"
		    "\t\t\tif (!isfinite(a) || !isfinite(b)) {\n"
		    "\t\t\t\tbad += !(a == b || (isnan(a) && isnan(b)));\n"
		    "\t\t\t\tcontinue;\n\t\t\t}\n"
		    "\t\t\td2 += (a - b) * (a - b);\n\t\t\tr2 += b * b;\n\t\t}\n"
		    "\t\tconst double rel = sqrt(d2 / (r2 > 1e-30 ? r2 : 1e-30));\n"
		    "\t\tconst int ok = !bad && rel < %s;\n\t\tfails += !ok;\n"
		    "\t\tprintf(\"%%s - %s: %s fused math vs op-by-op double: rel_l2 %%.3g, "
		    "%%ld non-finite mismatches, %%ld elements\\n\",\n"
		    "\t\t       ok ? \"ok\" : \"not ok\", rel, bad, NW);\n\t}\n",
		    g->values[v].per_col ? "COLS" : "N", k, v, tol, nm, g->values[v].name);
	}
	if (fw)
		emit_grad_check(sb, g, fw, grad_of);
	strbuf_adds(sb, "\treturn fails ? 1 : 0;\n}\n");
}

void emit_meta(struct strbuf *sb, const struct fgroup *g)
{
	char *key = fgroup_key(g);
	strbuf_adds(sb, "{\"name\": ");
	strbuf_add_json(sb, g->name);
	strbuf_addf(sb,
	            ", \"kind\": \"%s\", \"dtype\": \"%s\", \"numel\": %ld, \"rows\": %ld, "
	            "\"cols\": %ld, ",
	            fgroup_kind_name(g), fdtype_name(g->dtype), g->numel, g->rows, g->cols);
	strbuf_adds(sb, "\"key\": ");
	strbuf_add_json(sb, key);
	strbuf_addf(sb, ", \"ops\": [");
	for (int i = 0; i < g->nops; i++)
		strbuf_addf(sb, "%s\"%s\"", i ? ", " : "", g->ops[i].op->name);
	strbuf_addf(sb,
	            "], \"dropouts\": %d, \"max_vec\": %d, \"bytes_fused\": %.0f, "
	            "\"bytes_unfused\": %.0f",
	            g->ndrop, fgroup_max_vec(g), fgroup_bytes_fused(g), fgroup_bytes_unfused(g));
	if (g->recorded_before_us > 0)
		strbuf_addf(sb, ", \"recorded_before_us\": %.3f", g->recorded_before_us);
	strbuf_addf(sb,
	            ", \"files\": {\"math\": \"%s_math.h\", \"kernel\": \"%s_kernel.cu\", "
	            "\"binding\": \"%s_binding.cu\", \"module\": \"%s.py\", \"bench\": "
	            "\"%s_bench.cu\", \"cpucheck\": \"%s_cpucheck.cu\"}}\n",
	            g->name, g->name, g->name, g->name, g->name, g->name);
	free(key);
}

int fusion_write_group(const char *dir, const struct fgroup *g)
{
	static const struct {
		const char *suffix;
		void (*emit)(struct strbuf *, const struct fgroup *);
	} files[] = {
	    {"_math.h", emit_math},    {"_kernel.cu", emit_kernel}, {"_binding.cu", emit_binding},
	    {".py", emit_module},      {"_bench.cu", emit_bench},   {"_cpucheck.cu", emit_cpucheck},
	    {".meta.json", emit_meta}, {"_capi.h", emit_capi_h},    {"_capi.cu", emit_capi},
	};
	static const struct {
		const char *suffix;
		void (*emit)(struct strbuf *, const struct fgroup *);
	} bfiles[] = {
	    {"_math.h", emit_math}, {"_kernel.cu", emit_kernel}, {"_cpucheck.cu", emit_cpucheck}};
	char *gdir = path_join(dir, g->name);
	int rc = mkdir_nofollow(gdir);
	struct fgroup b;
	struct strbuf err = STRBUF_INIT;
	int grad_of[64];
	if (!rc && g->ninputs <= 64 && !fgroup_backward(g, &b, grad_of, &err)) {
		/* the fused backward: its math, kernel and CPU check beside the forward's */
		for (size_t i = 0; !rc && i < ARRAY_SIZE(bfiles); i++) {
			struct strbuf sb = STRBUF_INIT, fn = STRBUF_INIT;
			bfiles[i].emit(&sb, &b);
			strbuf_addf(&fn, "%s/%s%s", gdir, b.name, bfiles[i].suffix);
			rc = write_file_atomic(fn.buf, sb.buf, sb.len);
			strbuf_release(&sb);
			strbuf_release(&fn);
		}
		fgroup_release(&b);
	}
	struct fgroup c;
	if (!rc && g->kind == FG_ROW && !fgroup_row_backward(g, &b, &c, grad_of, &err)) {
		/* a row group's fused backward: the row group <name>_bwd (its CPU check also
		 * checks the gradients against the forward's) and the column group <name>_bwdc */
		for (int k = 0; !rc && k < 2 * (int)ARRAY_SIZE(bfiles); k++) {
			const struct fgroup *x = k < (int)ARRAY_SIZE(bfiles) ? &b : &c;
			size_t i = k % ARRAY_SIZE(bfiles);
			if (!x->nops)
				continue;
			struct strbuf sb = STRBUF_INIT, fn = STRBUF_INIT;
			if (x == &b && bfiles[i].emit == emit_cpucheck)
				emit_bwd_cpucheck(&sb, &b, g, grad_of);
			else
				bfiles[i].emit(&sb, x);
			strbuf_addf(&fn, "%s/%s%s", gdir, x->name, bfiles[i].suffix);
			rc = write_file_atomic(fn.buf, sb.buf, sb.len);
			strbuf_release(&sb);
			strbuf_release(&fn);
		}
		fgroup_release(&b);
		fgroup_release(&c);
	}
	strbuf_release(&err);
	for (size_t i = 0; !rc && i < ARRAY_SIZE(files); i++) {
		struct strbuf sb = STRBUF_INIT, fn = STRBUF_INIT;
		files[i].emit(&sb, g);
		strbuf_addf(&fn, "%s/%s%s", gdir, g->name, files[i].suffix);
		rc = write_file_atomic(fn.buf, sb.buf, sb.len);
		strbuf_release(&sb);
		strbuf_release(&fn);
	}
	if (!rc) { /* the CuPy form, where the group has one */
		struct strbuf sb = STRBUF_INIT, fn = STRBUF_INIT;
		if (!emit_cupy(&sb, g)) {
			strbuf_addf(&fn, "%s/%s_cupy.py", gdir, g->name);
			rc = write_file_atomic(fn.buf, sb.buf, sb.len);
		}
		strbuf_release(&sb);
		strbuf_release(&fn);
	}
	free(gdir);
	return rc;
}
