/*
 * fusegroup.c - the fusion group description of a candidate (docs/summary-format.md, "The
 * fusion group description"): what fusion/ generates a kernel from, or why it cannot.
 *
 * The members are walked in step order. Each member's reads (its pointer arguments in order,
 * node.reads) name either an earlier member's result or a new group input; its op is turned
 * into one or more ops of fusion's vocabulary by the rule for its kernel below, with the
 * numbers the kernel took as scalar parameters (node.params): a dropout's keep probability, a
 * layer norm's N and eps, a softmax's row count and length. A value's storage type comes from
 * its size against the group's element count (4 bytes: f32, 2: the 16-bit type a member's
 * name gives, 1: bool); a smaller value whose element count divides the group's is broadcast.
 * An intermediate stored in 16 bits is rounded to that type again (a cast op) before the next
 * member reads it, as the unfused program did, so the fused kernel computes what the program
 * computed. A value a member also writes besides its result (dropout's mask, layer norm's
 * mean and rstd) that something reads is listed in "unwritten": the generated kernel does not
 * write it, so the fused form cannot replace the members where that reader runs (autograd).
 *
 * Layer norm's dgamma and dbeta (ATen's GammaBetaBackward kernels) are column sums: the group
 * is then a "column-reduction" of M rows x N columns (the kernel's two long parameters) whose
 * last member gives xh = (X - mean) * rstd (mean and rstd one float a row), dgamma =
 * col_sum(dY * xh) and dbeta = col_sum(dY), its two writes in parameter order. Batch norm's
 * channels-last backward reduce (batch_norm_backward_reduce_channels_last_kernel) is one too:
 * rows N x H x W and cols C (its int parameters reduction_size and stride), mean and inv_std
 * one float a channel, sum_dy = col_sum(dy), sum_dy_xmu = col_sum(dy * (x - mean)) and, with an
 * affine weight, grad_weight = sum_dy_xmu * inv_std and grad_bias = sum_dy.
 *
 * ATen's FillFunctor<T> (T float, BFloat16, Half) is the constant op fill, its value the
 * functor's sizeof(T) bytes; refused where a node outside the group writes into the filled
 * buffer before the group's last member (a slice's backward: the reader reads both).
 *
 * ATen's strided loop (elementwise_kernel<nt, vt, gpu_kernel_impl[_nocast]<...>>) runs only
 * where its TensorIterator is not contiguous. Where the trace kept its closure, its offset
 * calculator (offcalc.c) says each operand's layout, and the member is checked against it
 * (loop_layout_ok): a dense result; inputs dense, broadcast over outer dimensions (i % numel),
 * one value a row (which makes the chain one of rows: "cols", the input per_row) or a scalar.
 * Where that check refuses a chain (a transpose, a slice, a broadcast over a middle dimension),
 * the chain is built again with index maps (map_pass()): each input read through a strided map
 * of its own ("map"), its offsets at every element of the group composed from the calculators
 * of the strided loops between it and the group's writes and compared with the fitted map at
 * every element (indexmap.c); operands are bound to values by their data pointers, not by read
 * order. Where the trace did not keep the closure (older traces), a member that reads no
 * broadcast input is refused, and one that reads one is kept unconfirmed.
 *
 * Any member with no exact rule (a kernel of unknown semantics, a backward op fusion lacks, a
 * number the trace does not hold) makes the whole group undescribable: the result is NULL and
 * the reason is one sentence that `aicprof fuse` reports as advice.
 */
#include "analyzer/indexmap.h"
#include "analyzer/model.h"
#include "lib/util.h"

#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gb {
	const struct model *m;
	const struct candidate *c;
	cJSON *ins, *ops, *outs, *kept, *unwritten;
	char **vname; /* per value id: its name in the group, or NULL */
	int nin, nt, nout, nx;
	long numel;              /* elements per full tensor */
	enum dtype half;         /* the 16-bit type a member names, DT_UNKNOWN when none */
	long col_rows, col_cols; /* a column group's shape (its last member's), 0 when none */
	long red_cols;       /* a row group's row length, from its reduction's parameters, 0 none */
	int layouts_checked; /* strided loop members whose offset calculator was checked */
	long row_cols;       /* the row length of per-row inputs a strided loop showed, 0 none */
	/* index maps (map_pass()): the second attempt at a group a strided loop's layout
	 * refused, with each input read through its own map; layout_refused: that refusal */
	int maps, layout_refused;
	int *res_es; /* per member (candidate order): its result's element size */
	struct strbuf why;
};

static int fail(struct gb *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct gb *g, const char *fmt, ...)
{
	if (g->why.len)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	strbuf_adds(&g->why, buf);
	return -1;
}

static int in_group(const struct candidate *c, int n)
{
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i] == n)
			return 1;
	return 0;
}

static int has(const int *a, int n, int v)
{
	for (int i = 0; i < n; i++)
		if (a[i] == v)
			return 1;
	return 0;
}

int node_param_find(const struct node_param *p, int np, int arg, int size, uint64_t *raw)
{
	for (int i = 0; i < np; i++)
		if (p[i].arg == arg && p[i].size == size) {
			*raw = p[i].raw;
			return 1;
		}
	return 0;
}

int fusegroup_param(const struct node *n, int arg, int size, uint64_t *raw)
{
	return node_param_find(n->params, n->nparams, arg, size, raw);
}

/*
 * The bytes of an ATen loop's functor, as size bytes: the vectorized and unrolled loops pass it
 * as parameter 1; the legacy loop (rule torch-elementwise: elementwise_kernel<nt, vt,
 * lambda>(N, closure)) passes one closure of offset calculator, data array and functor, whose
 * bytes are then the trace's "a" (NODE_PARAM_TAIL) of parameter 1: the functor's own when it is
 * 8 bytes, starting with it when it is 4. Returns 0 when the trace has neither.
 */
static int functor_bytes(const struct node *n, int size, uint64_t *raw)
{
	int legacy = n->sem.rule && !strcmp(n->sem.rule, "torch-elementwise");
	return fusegroup_param(n, 1, legacy ? NODE_PARAM_TAIL : size, raw);
}

float fusegroup_f32(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* The 16-bit type the writer or a reader of v names (a GEMM's bf16 output cast to f32 by a
 * member whose own name hides its source type), DT_UNKNOWN when none does. */
static enum dtype neighbour_half(const struct model *m, const struct value *v)
{
	if (v->writer >= 0) {
		enum dtype t = m->nodes[v->writer].sem.dtype;
		if (t == DT_BF16 || t == DT_F16)
			return t;
		/* a writer whose own type is its accumulator's (cuBLASLt's splitKreduce_kernel<...,
		 * float, __nv_bfloat16, ...>) but whose signature names one 16-bit type: that one
		 */
		const char *f = m->nodes[v->writer].full_name;
		int bf = f && (strstr(f, "__nv_bfloat16") || strstr(f, "BFloat16"));
		int hf = f && (strstr(f, "__half") || strstr(f, "c10::Half"));
		if (bf != hf)
			return bf ? DT_BF16 : DT_F16;
	}
	for (int i = 0; i < v->nreaders; i++) {
		enum dtype t = m->nodes[v->readers[i]].sem.dtype;
		if (t == DT_BF16 || t == DT_F16)
			return t;
	}
	return DT_UNKNOWN;
}

int fusegroup_block_holds(uint64_t size, uint64_t bytes)
{
	if (size == bytes)
		return 1;
	uint64_t r = (bytes + 511) / 512 * 512;
	return size > bytes && size <= (r > (1u << 20) ? r + (1u << 20) : r);
}

int fusegroup_elem_size(uint64_t size, uint64_t n)
{
	uint64_t pick = 0;
	for (uint64_t k = 1; k <= 4 && n; k *= 2) {
		if (size == k * n)
			return (int)k;
		if (fusegroup_block_holds(size, k * n))
			pick = pick ? 3 : k;
	}
	return pick == 3 ? 0 : (int)pick;
}

/*
 * Storage type of value v in the group: by its size against the group's elements, then as a
 * broadcast input of the reading node's type. Sets *vnumel (elements). DT_UNKNOWN on a fault.
 */
static enum dtype value_dtype(struct gb *g, const struct value *v, const struct node *rd,
                              long *vnumel)
{
	uint64_t N = (uint64_t)g->numel;
	*vnumel = g->numel;
	uint64_t size = v->size;
	/* a value whose last write covered part of its tensor (two kernels write its halves)
	 * while a 16-bit reader reads it whole: the read says the size */
	if (size == N && rd && (rd->sem.dtype == DT_BF16 || rd->sem.dtype == DT_F16) &&
	    v->nreaders && v->bytes_read / (uint64_t)v->nreaders == 2 * N)
		size = 2 * N;
	/* a value whose extent its allocation bounded (an opaque writer such as a GEMM, a cast
	 * whose input's element size its name does not give) in a pool's block, larger than the
	 * tensor: the one element size whose tensor the block holds */
	int held = fusegroup_elem_size(size, N);
	if (held)
		size = (uint64_t)held * N;
	if (size == N * 4)
		return DT_F32;
	if (size == N) /* one byte an element: a mask */
		return DT_BOOL;
	if (size == N * 2) {
		if (g->half == DT_UNKNOWN)
			g->half = neighbour_half(g->m, v);
		if (g->half == DT_UNKNOWN)
			fail(g, "value %d holds 16-bit elements but no member says bf16 or f16",
			     v->id);
		return g->half;
	}
	enum dtype t = rd && dtype_size(rd->sem.dtype) ? rd->sem.dtype : DT_F32;
	if (t != DT_F32 && t != DT_BF16 && t != DT_F16)
		t = DT_F32;
	size_t es = dtype_size(t);
	if (v->size && v->size < N * es && v->size % es == 0 && N % (v->size / es) == 0) {
		*vnumel = (long)(v->size / es);
		return t;
	}
	fail(g, "value %d (%llu bytes) is no tensor of the group's %ld elements", v->id,
	     (unsigned long long)v->size, g->numel);
	return DT_UNKNOWN;
}

/* Names value vi the group's next input, of dtype t, numel elements (0: all of the group's),
 * one a row when per_row; returns its name. */
static const char *new_input(struct gb *g, int vi, const char *t, long numel, int per_row)
{
	char nm[32];
	snprintf(nm, sizeof(nm), "in%d", g->nin++);
	g->vname[vi] = xstrdup(nm);
	cJSON *in = cJSON_CreateObject();
	cJSON_AddStringToObject(in, "name", nm);
	cJSON_AddNumberToObject(in, "value", vi);
	cJSON_AddStringToObject(in, "dtype", t);
	if (numel)
		cJSON_AddNumberToObject(in, "numel", (double)numel);
	if (per_row)
		cJSON_AddBoolToObject(in, "per_row", 1);
	cJSON_AddItemToArray(g->ins, in);
	return g->vname[vi];
}

/* The name of value vi read by node rd: a member's result, or a new input. NULL on a fault. */
static const char *arg_name(struct gb *g, int vi, const struct node *rd)
{
	if (g->vname[vi])
		return g->vname[vi];
	const struct value *v = &g->m->values[vi];
	if (v->writer >= 0 && in_group(g->c, v->writer)) {
		fail(g, "node %d reads value %d, which member node %d writes besides its result",
		     rd->id, vi, v->writer);
		return NULL;
	}
	long vn;
	enum dtype t = value_dtype(g, v, rd, &vn);
	if (t == DT_UNKNOWN)
		return NULL;
	return new_input(g, vi, dtype_name(t), vn != g->numel ? vn : 0, 0);
}

/* The group input called name, or NULL. */
static cJSON *input_named(const struct gb *g, const char *name)
{
	cJSON *in;
	if (!name)
		return NULL;
	cJSON_ArrayForEach(in, g->ins)
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(in, "name");
		if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name))
			return in;
	}
	return NULL;
}

/*
 * Sets the storage type of group input `name` (value vi) to t, of esize bytes an element, where
 * the kernel's signature says what its size alone cannot (a bool mask, a per-channel float
 * vector in a bf16 group). Returns 0, or -1 after fail() when the value is no whole number of
 * such elements dividing the group's count.
 */
static int force_input(struct gb *g, const char *name, int vi, const char *t, uint64_t esize,
                       const struct node *n)
{
	const struct value *v = &g->m->values[vi];
	long cnt = (long)(v->size / esize);
	if (!cnt || v->size % esize || cnt > g->numel || g->numel % cnt)
		return fail(
		    g,
		    "node %d: value %d (%llu bytes) is no %s tensor dividing the group's %ld "
		    "elements",
		    n->id, vi, (unsigned long long)v->size, t, g->numel);
	cJSON *in = input_named(g, name);
	if (in) {
		cJSON_ReplaceItemInObjectCaseSensitive(in, "dtype", cJSON_CreateString(t));
		cJSON_DeleteItemFromObjectCaseSensitive(in, "numel");
		if (cnt != g->numel)
			cJSON_AddNumberToObject(in, "numel", (double)cnt);
	}
	return 0;
}

/*
 * Whether n is ATen's strided loop: elementwise_kernel<nt, vt, gpu_kernel_impl[_nocast]<...>
 * lambda>, which gpu_kernel launches only where its TensorIterator is not contiguous (its
 * contiguous path is the vectorized or unrolled kernel): an input broadcast, or operands laid
 * out differently (a transpose, a slice). n->has_oc when the trace kept its layout.
 */
static int strided_loop(const struct node *n)
{
	return n->sem.rule && !strcmp(n->sem.rule, "torch-elementwise") && n->full_name &&
	       strstr(n->full_name, "gpu_kernel_impl");
}

/* Why a strided loop that writes into a fill's buffer is no slice op of the group, for the
 * fill's refusal: its layout when the trace kept it, else that the trace lacks it. */
static const char *slice_why(const struct node *w, char *buf, size_t cap)
{
	if (!strided_loop(w))
		return "";
	if (!w->has_oc)
		return ", nor a slice: that copy is ATen's strided loop, whose sizes and strides "
		       "the trace does not hold";
	char d0[128], d1[128];
	offcalc_describe(&w->oc, 0, d0, sizeof(d0));
	offcalc_describe(&w->oc, 1, d1, sizeof(d1));
	snprintf(buf, cap,
	         ", nor a slice: that copy is ATen's strided loop (its result %s, its source %s), "
	         "which the group has no op for",
	         d0, d1);
	return buf;
}

/* Whether in (a group input, or NULL) is one; its "numel" (0: a whole tensor) and per_row. */
static int input_form(const cJSON *in, long *numel, int *per_row)
{
	if (!in)
		return 0;
	const cJSON *ne = cJSON_GetObjectItemCaseSensitive(in, "numel");
	*numel = cJSON_IsNumber(ne) ? (long)ne->valuedouble : 0;
	*per_row = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "per_row"));
	return 1;
}

/*
 * A strided loop member whose offset calculator the trace kept (n->oc): whether a kernel over
 * one flat index computes it as the group describes it. Its result must be dense at the
 * group's element size (out_es bytes); each input dense, broadcast over its outer dimensions
 * (read at i % inner), one value a row (read at i / inner) or one element. Where the loop's
 * inputs are the member's reads one to one, each read's value must hold the elements the
 * layout steps through (a slice reads every second element of a larger tensor), and its form
 * in the group must be the layout's: a broadcast input of inner elements, a per-row one of
 * rows. 0, or fail() naming the operand and its sizes and strides.
 */
static int loop_layout_ok(struct gb *g, const struct node *n, size_t out_es)
{
	const struct offcalc *oc = &n->oc;
	g->layout_refused = 1; /* any refusal below is the layout's */
	char d[256];
	long prod = 1;
	for (int i = 0; i < oc->dims; i++)
		prod *= (long)oc->size[i];
	if (prod != g->numel)
		return fail(g,
		            "node %d: its offset calculator's sizes hold %ld elements, not the "
		            "group's %ld",
		            n->id, prod, g->numel);
	int by_read = n->nreads == oc->nargs - 1;
	for (int j = 0; j < oc->nargs; j++) {
		uint32_t elem;
		long inner;
		enum offcalc_layout k = offcalc_kind(oc, j, &elem, &inner);
		offcalc_describe(oc, j, d, sizeof(d));
		if (j == 0 && (k != OC_DENSE || elem != out_es))
			return fail(g,
			            "node %d ('%s') writes a strided view (%s, %zu-byte elements): "
			            "no kernel over one flat index writes it",
			            n->id, n->name, d, out_es);
		if (k == OC_OTHER)
			return fail(g,
			            "node %d ('%s') reads its operand %d through a transpose or a "
			            "slice (%s): no kernel over one flat index reads it",
			            n->id, n->name, j, d);
		if (j == 0 || !by_read || k == OC_SCALAR)
			continue;
		int vi = n->reads[j - 1];
		const struct value *v = &g->m->values[vi];
		long count = k == OC_DENSE ? g->numel : k == OC_PER_ROW ? g->numel / inner : inner;
		int held = fusegroup_elem_size(v->size, (uint64_t)count);
		if (held && (uint32_t)held != elem)
			return fail(
			    g,
			    "node %d ('%s') reads its operand %d every %u bytes (%s) from value "
			    "%d, a tensor of %d-byte elements: a slice, which no kernel over one "
			    "flat index reads",
			    n->id, n->name, j, elem, d, v->id, held);
		long in_numel = 0;
		int per_row = 0;
		cJSON *in = input_named(g, g->vname[vi]);
		int known = input_form(in, &in_numel, &per_row);
		/* one value a row of inner elements, which the group took for a broadcast of
		 * a smaller tensor (its count is the rows): read once a row, the group's rows
		 * of inner elements (one row length for all) */
		if (known && k == OC_PER_ROW && !per_row && in_numel > 0 &&
		    in_numel * inner == g->numel && (!g->row_cols || g->row_cols == inner)) {
			cJSON_DeleteItemFromObjectCaseSensitive(in, "numel");
			cJSON_AddBoolToObject(in, "per_row", 1);
			g->row_cols = inner;
			per_row = 1;
		}
		if (known && k != OC_DENSE &&
		    (per_row != (k == OC_PER_ROW) || (k == OC_BROADCAST && in_numel != inner)))
			return fail(
			    g,
			    "node %d ('%s') reads its operand %d %s (%s), which the group would "
			    "read %s",
			    n->id, n->name, j,
			    k == OC_PER_ROW ? "once a row" : "as a broadcast of its inner part", d,
			    per_row ? "once a row" : "as a broadcast of a smaller tensor");
	}
	g->layout_refused = 0;
	return 0;
}

/* Whether one of the names a[0..na) is a group input smaller than the group (broadcast). */
static int reads_broadcast(const struct gb *g, const char *const *a, int na)
{
	long numel;
	int per_row;
	for (int k = 0; k < na; k++)
		if (input_form(input_named(g, a[k]), &numel, &per_row) && (numel || per_row))
			return 1;
	return 0;
}

/* Appends op {"op": name, "args": [...], "out": <fresh x#>}; returns the op for more fields. */
static cJSON *add_op(struct gb *g, const char *name, const char **args, int nargs, char *out,
                     size_t outsz)
{
	cJSON *op = cJSON_CreateObject();
	cJSON_AddStringToObject(op, "op", name);
	cJSON *a = cJSON_AddArrayToObject(op, "args");
	for (int i = 0; i < nargs; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(args[i]));
	snprintf(out, outsz, "x%d", g->nx++);
	cJSON_AddStringToObject(op, "out", out);
	cJSON_AddItemToArray(g->ops, op);
	return op;
}

/* The keep probability of a fused_dropout kernel (its float parameter after N), or -1. */
static double dropout_keep(const struct node *n)
{
	uint64_t raw;
	if (!n->full_name || !strstr(n->full_name, "fused_dropout_kernel") ||
	    !fusegroup_param(n, 4, 4, &raw))
		return -1;
	double k = fusegroup_f32((uint32_t)raw);
	return k > 0 && k <= 1 ? k : -1;
}

/* p = 1 - keep, to the float's precision (keep 0.9f gives 0.1). */
static double keep_to_p(double keep)
{
	char b[32];
	snprintf(b, sizeof(b), "%.7g", 1.0 - keep);
	return strtod(b, NULL);
}

/* GELU's form from ATen's lambda: the first lambda of GeluCUDAKernelImpl (or
 * GeluBackwardCUDAKernelImpl), {lambda()#1}, dispatches approximate='tanh', #2 'none' (the
 * lambdas nested in it number the dtypes: "{lambda()#1}::operator()() const::{lambda()#4}" is the
 * tanh form on bf16). NULL when the name says neither. */
static const char *gelu_form(const struct node *n, const char *impl, int backward)
{
	const char *s = n->full_name ? strstr(n->full_name, impl) : NULL;
	const char *k = s ? strstr(s, "GeluType)::{lambda()#") : NULL;
	if (!k)
		return NULL;
	k += strlen("GeluType)::{lambda()#");
	if (k[0] == '2' && k[1] == '}')
		return backward ? "gelu_backward" : "gelu";
	if (k[0] == '1' && k[1] == '}')
		return backward ? "gelu_tanh_backward" : "gelu_tanh";
	return NULL;
}

/* ATen's unary kernels whose math is the op of the same name in fusion's vocabulary. */
static const struct {
	const char *op, *kernel;
} unary_kernels[] = {
    {"tanh", "::tanh_kernel_cuda"}, {"sigmoid", "::sigmoid_kernel_cuda"},
    {"exp", "::exp_kernel_cuda"},   {"log", "::log_kernel_cuda"},
    {"sqrt", "::sqrt_kernel_cuda"}, {"rsqrt", "::rsqrt_kernel_cuda"},
    {"neg", "::neg_kernel_cuda"},   {"silu", "::silu_kernel"},
    {"abs", "::abs_kernel_cuda"},   {"sin", "::sin_kernel_cuda"},
    {"cos", "::cos_kernel_cuda"},
};

/* ATen's backward kernels (dy, y) or (dy, x), in ATen's argument order, as fusion's ops. */
static const struct {
	const char *op, *kernel;
} backward_kernels[] = {
    {"tanh_backward", "tanh_backward_kernel_cuda"},
    {"sigmoid_backward", "sigmoid_backward_kernel_cuda"},
    {"silu_backward", "silu_backward_kernel"},
};

/*
 * The rules for ATen's pointwise kernels whose numbers are in their functor (a 8-byte
 * parameter, recorded by value) or in their name: returns 1 with *r the rule's result (0, or
 * -1 after fail()) when one applies, 0 when none does.
 *   AUnaryFunctor/BUnaryFunctor<..., MulFunctor> (tensor * scalar): scale by the float in the
 *     functor's upper four bytes (its first member is the empty MulFunctor);
 *   CUDAFunctorOnSelf_add (tensor + scalar): add_scalar of other_ * alpha_ (two floats);
 *   pow_tensor_scalar_kernel_impl's lambdas #1, #2, #3 (exponent 2, 3, -2; ATen's
 *     PowKernel.cu computes them as products): pow with that exponent;
 *   threshold_kernel_impl reading (x, dy), named relu_backward by semantics (relu's backward,
 *     threshold_backward(dy, y, 0): x <= 0 ? 0 : dy): threshold_backward with threshold 0;
 *   the unary and backward kernels of the tables above.
 */
static int aten_rule(struct gb *g, const struct node *n, const char *op, const char *full,
                     const char **a, int na, char *res, size_t rsz, int *r)
{
	uint64_t raw;
	*r = 0;
	if (!strcmp(op, "mul") && na == 1 && strstr(full, "MulFunctor") &&
	    (strstr(full, "AUnaryFunctor") || strstr(full, "BUnaryFunctor"))) {
		if (!functor_bytes(n, 8, &raw)) {
			*r = fail(g, "node %d: the scalar of a tensor * scalar is not in the trace",
			          n->id);
			return 1;
		}
		cJSON *o = add_op(g, "scale", a, 1, res, rsz);
		cJSON_AddNumberToObject(o, "scalar", (double)fusegroup_f32((uint32_t)(raw >> 32)));
		return 1;
	}
	if (!strcmp(op, "add") && na == 1 && strstr(full, "CUDAFunctorOnSelf_add<float>")) {
		if (!functor_bytes(n, 8, &raw)) {
			*r = fail(g, "node %d: the scalar of a tensor + scalar is not in the trace",
			          n->id);
			return 1;
		}
		float other = fusegroup_f32((uint32_t)raw),
		      alpha = fusegroup_f32((uint32_t)(raw >> 32));
		cJSON *o = add_op(g, "add_scalar", a, 1, res, rsz);
		cJSON_AddNumberToObject(o, "scalar", (double)(float)(alpha * other));
		return 1;
	}
	if (!strcmp(op, "pow") && na == 1 && strstr(full, "pow_tensor_scalar_kernel_impl")) {
		static const char *lam[] = {"{lambda(float)#1}", "{lambda(float)#2}",
		                            "{lambda(float)#3}"};
		static const double ex[] = {2, 3, -2};
		for (int i = 0; i < 3; i++)
			if (strstr(full, lam[i])) {
				cJSON *o = add_op(g, "pow", a, 1, res, rsz);
				cJSON_AddNumberToObject(o, "scalar", ex[i]);
				return 1;
			}
		*r = fail(g, "node %d: pow's exponent is not in the trace", n->id);
		return 1;
	}
	if (!strcmp(op, "relu_backward") && na == 2 && strstr(full, "threshold_kernel_impl")) {
		cJSON *o = add_op(g, "threshold_backward", a, 2, res, rsz); /* (x, dy) */
		cJSON_AddNumberToObject(o, "scalar", 0);
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(unary_kernels); i++)
		if (na == 1 && strstr(full, unary_kernels[i].kernel) && !strstr(full, "backward")) {
			add_op(g, unary_kernels[i].op, a, 1, res, rsz);
			return 1;
		}
	for (size_t i = 0; i < ARRAY_SIZE(backward_kernels); i++)
		if (na == 2 && !strcmp(op, backward_kernels[i].op) &&
		    strstr(full, backward_kernels[i].kernel)) {
			add_op(g, backward_kernels[i].op, a, 2, res, rsz);
			return 1;
		}
	return 0;
}

/*
 * Emits the ops of member n reading args a[0..na-1]; the result's name goes to res. Returns
 * 0, or -1 after fail() when the member has no exact rule.
 */
/* ATen's log_softmax backward on float: cunn_SoftMaxBackward[Smem]<ILP, float, float, float,
 * LogSoftMaxBackwardEpilogue>(gradInput, output, gradOutput, long classes), one row a block:
 * gradInput = gradOutput - exp(output) * sum(gradOutput) over the row. */
static int lsb_kernel(const struct node *n)
{
	const char *full = n->full_name ? n->full_name : "";
	return n->sem.backward && n->sem.op && !strcmp(n->sem.op, "log_softmax_backward") &&
	       strstr(full, "cunn_SoftMaxBackward") && strstr(full, "LogSoftMaxBackwardEpilogue") &&
	       strstr(full, ", float, float, float, ");
}

/* ATen's log_softmax backward for rows of up to 1,024: softmax_warp_backward<input_t, output_t,
 * acc_t, log2_elements, is_log_softmax = true, is_masked = false>(gradInput, grad, output,
 * int batch_size, int stride, int element_count, mask), one row a warp (or two), in acc_t:
 * gradInput = grad - exp(output) * sum(grad) over the row, as the blockwise kernel. */
static int lsbw_kernel(const struct node *n)
{
	const char *full = n->full_name ? n->full_name : "";
	return n->sem.backward && n->sem.op && !strcmp(n->sem.op, "log_softmax_backward") &&
	       strstr(full, "softmax_warp_backward<") && strstr(full, ", true, false>");
}

/* ATen's layer norm input gradient on float: layer_norm_grad_input_kernel[_vectorized]<float,
 * float, ...>(dY, X, mean, rstd, gamma, dX, int N), one row a block; mean and rstd one float a
 * row, gamma (when not null) one a column. */
static int lnb_kernel(const struct node *n)
{
	const char *full = n->full_name ? n->full_name : "";
	return n->sem.backward && n->sem.op && !strcmp(n->sem.op, "layer_norm_backward") &&
	       strstr(full, "layer_norm_grad_input_kernel") && strstr(full, "<float, float");
}

/* Names value vi a per-row input of rows floats (a layer norm's mean or rstd), unless named. */
static int row_input(struct gb *g, int vi, long rows, const struct node *n)
{
	if (g->vname[vi])
		return 0;
	const struct value *v = &g->m->values[vi];
	if (v->writer >= 0 && in_group(g->c, v->writer))
		return fail(g, "node %d reads value %d, which a member writes besides its result",
		            n->id, vi);
	if (!fusegroup_block_holds(v->size, 4 * (uint64_t)rows))
		return fail(g, "node %d: value %d (%llu bytes) is not one float a row (%ld rows)",
		            n->id, vi, (unsigned long long)v->size, rows);
	new_input(g, vi, "f32", rows, 1);
	return 0;
}

/* ATen's layer norm dgamma and dbeta: GammaBetaBackward{SimpleCUDAKernel,CUDAKernel,
 * CUDAKernel_32x32,CUDAKernelTemplate}<T, float, ...>(long M, long N, dY, X, mean, rstd, dg, db)
 * with T float, BFloat16 or Half; the template's last flag (partial_reduction) false, else its
 * dg and db are partial sums that another kernel adds. */
static int gbb_kernel(const struct node *n)
{
	const char *full = n->full_name ? n->full_name : "";
	if (!n->sem.backward || !n->sem.op || strcmp(n->sem.op, "layer_norm_backward") ||
	    !strstr(full, "GammaBetaBackward"))
		return 0;
	if (!strstr(full, "<float, float") && !strstr(full, "<c10::BFloat16, float") &&
	    !strstr(full, "<c10::Half, float"))
		return 0;
	if (strstr(full, "GammaBetaBackwardCUDAKernelTemplate<"))
		return strstr(full, ", false>(") != NULL;
	return 1;
}

/* The values node id writes, in value order: their count, the first max of them in w. */
static int node_writes(const struct model *m, int id, int *w, int max)
{
	int nw = 0;
	for (int k = 0; k < m->nvalues; k++)
		if (m->values[k].writer == id && nw++ < max)
			w[nw - 1] = k;
	return nw;
}

/*
 * The ops of a GammaBetaBackward member n, the group's last: xh = (X - mean) * rstd, dgamma =
 * col_sum(dY * xh), dbeta = col_sum(dY), and both as the group's outputs. Its two writes are
 * dgamma and dbeta in that order: flow.c enters a kernel's writes in parameter order and values
 * are numbered as they are entered. Returns 0, or -1 after fail().
 */
static int gbb_member(struct gb *g, const struct node *n, int last)
{
	if (!last)
		return fail(
		    g, "node %d: layer norm's dgamma and dbeta (column sums) must end the group",
		    n->id);
	if (n->nreads != 4)
		return fail(g,
		            "node %d: GammaBetaBackward reads %d tensors, not dY, X, mean and rstd",
		            n->id, n->nreads);
	uint64_t mraw, nraw;
	if (!fusegroup_param(n, 0, 8, &mraw) || !fusegroup_param(n, 1, 8, &nraw) ||
	    (int64_t)mraw <= 0 || (int64_t)nraw <= 0 || (int64_t)mraw > g->numel / (int64_t)nraw ||
	    (int64_t)mraw * (int64_t)nraw != g->numel)
		return fail(
		    g,
		    "node %d: GammaBetaBackward's M and N are not in the trace, or M x N is "
		    "not the group's %ld elements",
		    n->id, g->numel);
	long rows = (long)mraw, cols = (long)nraw;
	const struct model *m = g->m;
	int w[2], nw = node_writes(m, n->id, w, 2);
	if (nw != 2)
		return fail(
		    g,
		    "node %d: GammaBetaBackward writes %d values; only dgamma and dbeta both "
		    "are generated",
		    n->id, nw);
	if (row_input(g, n->reads[2], rows, n) || row_input(g, n->reads[3], rows, n))
		return -1;
	const char *dy = arg_name(g, n->reads[0], n), *x = arg_name(g, n->reads[1], n);
	if (!dy || !x)
		return -1;
	long vn;
	enum dtype t = value_dtype(g, &m->values[n->reads[1]], n, &vn); /* T, X's type */
	if (t == DT_UNKNOWN)
		return -1;
	if (vn != g->numel)
		return fail(g, "node %d: X is not a whole tensor of the group", n->id);
	for (int k = 0; k < 2; k++)
		if (!fusegroup_block_holds(m->values[w[k]].size, dtype_size(t) * (uint64_t)cols))
			return fail(g, "node %d: value %d (%llu bytes) is not %ld %s, one a column",
			            n->id, w[k], (unsigned long long)m->values[w[k]].size, cols,
			            dtype_name(t));
	char xc[16], xh[16], p[16], out[2][16];
	const char *a1[2] = {x, g->vname[n->reads[2]]};
	add_op(g, "sub", a1, 2, xc, sizeof(xc));
	const char *a2[2] = {xc, g->vname[n->reads[3]]};
	add_op(g, "mul", a2, 2, xh, sizeof(xh));
	const char *a3[2] = {dy, xh};
	add_op(g, "mul", a3, 2, p, sizeof(p));
	const char *a4[1] = {p}, *a5[1] = {dy};
	add_op(g, "col_sum", a4, 1, out[0], sizeof(out[0]));
	add_op(g, "col_sum", a5, 1, out[1], sizeof(out[1]));
	for (int k = 0; k < 2; k++) {
		g->vname[w[k]] = xstrdup(out[k]);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", out[k]);
		cJSON_AddNumberToObject(o, "value", w[k]);
		cJSON_AddStringToObject(o, "dtype", dtype_name(t));
		cJSON_AddItemToArray(g->outs, o);
	}
	g->col_rows = rows;
	g->col_cols = cols;
	return 0;
}

/*
 * ATen's batch norm backward reduce, channels last: batch_norm_backward_reduce_channels_last_
 * kernel<PARALLEL_LOADS, T, float, L>(input, grad_output, mean, inv_std, sum_dy, sum_dy_xmu,
 * grad_weight, grad_bias, staging, semaphores, int reduction_size, int stride) with T float,
 * BFloat16 or Half and L (the weight's type) float or T. Returns L's dtype, DT_UNKNOWN when n
 * is no such kernel.
 */
static enum dtype bnr_kernel(const struct node *n)
{
	static const char k[] = "batch_norm_backward_reduce_channels_last_kernel<";
	const char *full = n->full_name ? n->full_name : "";
	const char *s = strstr(full, k);
	if (!n->sem.backward || !n->sem.op || strcmp(n->sem.op, "norm_backward") || !s)
		return DT_UNKNOWN;
	s = strchr(s + sizeof(k) - 1, ',');
	if (!s)
		return DT_UNKNOWN;
	static const struct {
		const char *args;
		enum dtype layer;
	} forms[] = {
	    {", c10::BFloat16, float, float>(", DT_F32},
	    {", c10::BFloat16, float, c10::BFloat16>(", DT_BF16},
	    {", c10::Half, float, float>(", DT_F32},
	    {", c10::Half, float, c10::Half>(", DT_F16},
	    {", float, float, float>(", DT_F32},
	};
	for (size_t i = 0; i < ARRAY_SIZE(forms); i++)
		if (!strncmp(s, forms[i].args, strlen(forms[i].args)))
			return forms[i].layer;
	return DT_UNKNOWN;
}

/* Names value vi a per-column input of cols floats (a batch norm's mean or inv_std), unless
 * named already as one. Returns its name, or NULL after fail(). */
static const char *col_input(struct gb *g, int vi, long cols, const struct node *n)
{
	const struct value *v = &g->m->values[vi];
	if (v->writer >= 0 && in_group(g->c, v->writer)) {
		fail(g, "node %d reads value %d, which a member writes besides its result", n->id,
		     vi);
		return NULL;
	}
	if (!fusegroup_block_holds(v->size, 4 * (uint64_t)cols)) {
		fail(g, "node %d: value %d (%llu bytes) is not one float a channel (%ld channels)",
		     n->id, vi, (unsigned long long)v->size, cols);
		return NULL;
	}
	if (g->vname[vi]) {
		const cJSON *in = input_named(g, g->vname[vi]);
		const cJSON *ne = cJSON_GetObjectItemCaseSensitive(in, "numel");
		const cJSON *dt = cJSON_GetObjectItemCaseSensitive(in, "dtype");
		if (cJSON_IsNumber(ne) && (long)ne->valuedouble == cols && cJSON_IsString(dt) &&
		    !strcmp(dt->valuestring, "f32"))
			return g->vname[vi];
		fail(g, "node %d: value %d is read per channel here and otherwise elsewhere", n->id,
		     vi);
		return NULL;
	}
	return new_input(g, vi, "f32", cols, 0);
}

/* Appends output `name` (value vi, of dtype t) to the group's writes. */
static void add_output(struct gb *g, const char *name, int vi, enum dtype t)
{
	g->vname[vi] = xstrdup(name);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddNumberToObject(o, "value", vi);
	cJSON_AddStringToObject(o, "dtype", dtype_name(t));
	cJSON_AddItemToArray(g->outs, o);
}

/*
 * The ops of a batch_norm_backward_reduce_channels_last_kernel member n (layer type lt), the
 * group's last: rows = reduction_size (N x H x W) and cols = stride (C), the channel innermost;
 * xmu = x - mean, sum_dy = col_sum(dy), sum_dy_xmu = col_sum(dy * xmu) and, where the kernel
 * had an affine weight's pointers, grad_weight = sum_dy_xmu * inv_std and grad_bias = sum_dy
 * (each in lt). Its reads in parameter order: input, grad_output, mean, inv_std (then the
 * semaphores, scratch). Its writes in parameter order (flow.c enters them so): sum_dy,
 * sum_dy_xmu[, grad_weight, grad_bias], then, when grid.y > 1, staging and semaphores, the
 * kernel's own scratch, which the fused kernel does not need. Returns 0, or -1 after fail().
 */
static int bnr_member(struct gb *g, const struct node *n, enum dtype lt, int last)
{
	if (!last)
		return fail(
		    g, "node %d: batch norm's per-channel sums (column sums) must end the group",
		    n->id);
	if (n->nreads != 4 && n->nreads != 5)
		return fail(g,
		            "node %d: batch norm backward reduce reads %d tensors, not input, "
		            "grad_output, mean and inv_std (and the semaphores)",
		            n->id, n->nreads);
	uint64_t rraw, craw;
	if (!fusegroup_param(n, 10, 4, &rraw) || !fusegroup_param(n, 11, 4, &craw) ||
	    (int32_t)rraw <= 0 || (int32_t)craw <= 0 ||
	    (long)(int32_t)rraw * (long)(int32_t)craw != g->numel)
		return fail(g,
		            "node %d: batch norm's reduction size and channel count are not in the "
		            "trace, or their product is not the group's %ld elements",
		            n->id, g->numel);
	long rows = (int32_t)rraw, cols = (int32_t)craw;
	const struct model *m = g->m;
	int w[6], nw = node_writes(m, n->id, w, 6);
	int scratch = n->grid[1] > 1 ? 2 : 0; /* staging and semaphores */
	int nout = nw - scratch;
	if (nw > 6 || (nout != 2 && nout != 4))
		return fail(g,
		            "node %d: batch norm backward reduce writes %d values, not sum_dy, "
		            "sum_dy_xmu[, grad_weight, grad_bias]%s",
		            n->id, nw, scratch ? " and its scratch" : "");
	if (n->nreads == 5 && (!scratch || m->values[n->reads[4]].size >= 4 * (uint64_t)cols))
		return fail(g, "node %d: a fifth read that is not the kernel's semaphores", n->id);
	for (int k = 0; k < nout; k++) {
		uint64_t es = k < 2 ? 4 : dtype_size(lt);
		if (!fusegroup_block_holds(m->values[w[k]].size, es * (uint64_t)cols))
			return fail(g,
			            "node %d: value %d (%llu bytes) is not %ld %s, one a channel",
			            n->id, w[k], (unsigned long long)m->values[w[k]].size, cols,
			            k < 2 ? "f32" : dtype_name(lt));
	}
	const char *x = arg_name(g, n->reads[0], n), *dy = arg_name(g, n->reads[1], n);
	if (!x || !dy)
		return -1;
	long vn;
	if (value_dtype(g, &m->values[n->reads[0]], n, &vn) == DT_UNKNOWN)
		return -1;
	if (vn != g->numel)
		return fail(g, "node %d: the input is not a whole tensor of the group", n->id);
	const char *mean = col_input(g, n->reads[2], cols, n);
	const char *invstd = mean ? col_input(g, n->reads[3], cols, n) : NULL;
	if (!invstd)
		return -1;
	char xmu[16], p[16], sdy[16], sdx[16];
	const char *a1[2] = {x, mean};
	add_op(g, "sub", a1, 2, xmu, sizeof(xmu));
	const char *a2[2] = {dy, xmu};
	add_op(g, "mul", a2, 2, p, sizeof(p));
	const char *a3[1] = {dy}, *a4[1] = {p};
	add_op(g, "col_sum", a3, 1, sdy, sizeof(sdy));
	add_op(g, "col_sum", a4, 1, sdx, sizeof(sdx));
	add_output(g, sdy, w[0], DT_F32);
	add_output(g, sdx, w[1], DT_F32);
	if (nout == 4) {
		char gw[16], gwc[16], gb[16];
		const char *a5[2] = {sdx, invstd};
		add_op(g, "mul", a5, 2, gw, sizeof(gw));
		const char *a6[1] = {gw}, *a7[1] = {sdy};
		const char *gwo = gw;
		if (lt != DT_F32) {
			cJSON *o = add_op(g, "cast", a6, 1, gwc, sizeof(gwc));
			cJSON_AddStringToObject(o, "to", dtype_name(lt));
			gwo = gwc;
		}
		/* grad_bias is sum_dy stored in the layer's type: a cast (a group writes each of
		 * its values once) */
		cJSON *o = add_op(g, "cast", a7, 1, gb, sizeof(gb));
		cJSON_AddStringToObject(o, "to", dtype_name(lt));
		add_output(g, gwo, w[2], lt);
		add_output(g, gb, w[3], lt);
	}
	g->col_rows = rows;
	g->col_cols = cols;
	return 0;
}

/* An IEEE half's bits as a float (a FillFunctor<c10::Half>'s value). */
static float half_to_f32(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float f = e == 31 ? (m ? NAN : INFINITY)
	          : e     ? ldexpf((float)(m | 1024), e - 25)
	                  : ldexpf((float)m, -24);
	return h & 0x8000 ? -f : f;
}

/* Adds "value" v to op o as the group format spells it: a number, or "inf", "-inf", "nan". */
static void add_value(cJSON *o, float v)
{
	if (v != v)
		cJSON_AddStringToObject(o, "value", "nan");
	else if (v > 3.4e38f || v < -3.4e38f)
		cJSON_AddStringToObject(o, "value", v < 0 ? "-inf" : "inf");
	else
		cJSON_AddNumberToObject(o, "value", (double)v);
}

static int member_ops(struct gb *g, const struct node *n, const char **a, int na, char *res,
                      size_t rsz, double *row_cols, double *row_rows)
{
	const char *op = n->sem.op ? n->sem.op : "unknown";
	const char *full = n->full_name ? n->full_name : "";
	int r;
	if (n->sem.family == FAM_OTHER || !strcmp(op, "unknown"))
		return fail(g,
		            "node %d ('%s') is a kernel of unknown semantics: its math cannot be "
		            "generated from its name; fuse such kernels by hand, or write the "
		            "group (docs/summary-format.md) and run aicprof fuse --group",
		            n->id, n->name);
	if ((!strcmp(op, "gelu") || !strcmp(op, "gelu_tanh")) && na == 1) {
		/* semantics names the tanh form gelu_tanh from the same lambda, or from ATen's
		 * later GeluTanhFunctor */
		const char *f = gelu_form(n, "GeluCUDAKernelImpl", 0);
		if (!f && strstr(full, "GeluTanhFunctor"))
			f = "gelu_tanh";
		else if (!f && strstr(full, "GeluErfFunctor"))
			f = "gelu";
		if (!f)
			return fail(g, "node %d: cannot tell GELU's form from '%s'", n->id,
			            n->name);
		add_op(g, f, a, 1, res, rsz);
		return 0;
	}
	if ((!strcmp(op, "gelu_backward") || !strcmp(op, "gelu_tanh_backward")) && na == 2) {
		const char *f = gelu_form(n, "GeluBackwardCUDAKernelImpl", 1);
		if (!f)
			return fail(g, "node %d: cannot tell GELU's form from '%s'", n->id,
			            n->name);
		add_op(g, f, a, 2, res, rsz); /* (dy, x), ATen's order */
		return 0;
	}
	if (!strcmp(op, "dropout") && na == 1) {
		double keep = dropout_keep(n);
		if (keep < 0)
			return fail(g, "node %d: dropout's keep probability is not in the trace",
			            n->id);
		cJSON *o = add_op(g, "dropout", a, 1, res, rsz);
		cJSON_AddNumberToObject(o, "p", keep_to_p(keep));
		return 0;
	}
	if (!strcmp(op, "dropout_backward") && na == 2 && strstr(full, "masked_scale_kernel")) {
		/* (grad, mask) * scale; the scale is 1/keep of the dropout that wrote the mask */
		const struct value *mask = &g->m->values[n->reads[1]];
		double keep = mask->writer >= 0 ? dropout_keep(&g->m->nodes[mask->writer]) : -1;
		if (keep < 0)
			return fail(g,
			            "node %d: dropout backward's scale is not in the trace (the "
			            "dropout that wrote its mask ran outside the step)",
			            n->id);
		char t[16];
		add_op(g, "mul", a, 2, t, sizeof(t));
		const char *ta[1] = {t};
		cJSON *o = add_op(g, "scale", ta, 1, res, rsz);
		cJSON_AddNumberToObject(o, "scalar", 1.0 / (1.0 - keep_to_p(keep)));
		return 0;
	}
	if (!strcmp(op, "add") && na == 2 && strstr(full, "CUDAFunctor_add")) {
		uint64_t raw; /* CUDAFunctor_add<T>{alpha} */
		if (!functor_bytes(n, 4, &raw))
			return fail(g, "node %d: add's alpha is not in the trace", n->id);
		float alpha = fusegroup_f32((uint32_t)raw);
		if (alpha == 1.0f) {
			add_op(g, "add", a, 2, res, rsz);
		} else { /* a + alpha * b */
			char t[16];
			const char *ta[1] = {a[1]};
			cJSON *o = add_op(g, "scale", ta, 1, t, sizeof(t));
			cJSON_AddNumberToObject(o, "scalar", (double)alpha);
			const char *tb[2] = {a[0], t};
			add_op(g, "add", tb, 2, res, rsz);
		}
		return 0;
	}
	if (!strcmp(op, "mul") && na == 2 && strstr(full, "MulFunctor") &&
	    !strstr(full, "UnaryFunctor")) {
		add_op(g, "mul", a, 2, res, rsz);
		return 0;
	}
	if (aten_rule(g, n, op, full, a, na, res, rsz, &r))
		return r;
	if (n->sem.rule && !strcmp(n->sem.rule, "cupy-ufunc")) {
		/* CuPy's ufuncs name their math; every operand a device array (a Python scalar
		 * operand is a by-value parameter the trace keeps no meaning of: na too small) */
		static const char *const un[] = {"tanh", "exp", "log", "sqrt",   "neg",
		                                 "abs",  "sin", "cos", "sigmoid"},
		                         *bin[] = {"add", "sub", "mul", "div"};
		for (size_t i = 0; i < ARRAY_SIZE(un) && na == 1; i++)
			if (!strcmp(op, un[i])) {
				add_op(g, op, a, 1, res, rsz);
				return 0;
			}
		for (size_t i = 0; i < ARRAY_SIZE(bin) && na == 2; i++)
			if (!strcmp(op, bin[i])) {
				add_op(g, op, a, 2, res, rsz);
				return 0;
			}
	}
	if (!strcmp(op, "fill") && na == 0 && strstr(full, "FillFunctor<")) {
		/* FillFunctor<T>{value}: T's bytes, the functor's parameter (the legacy loop's
		 * closure: the functor first in the tail after its data array) */
		int size = strstr(full, "FillFunctor<float>")           ? 4
		           : strstr(full, "FillFunctor<c10::BFloat16>") ? 2
		           : strstr(full, "FillFunctor<c10::Half>")     ? -2
		                                                        : 0;
		uint64_t raw;
		if (!size)
			return fail(g,
			            "node %d ('%s'): a fill of a type fusion does not store (only "
			            "float, BFloat16 and Half)",
			            n->id, n->name);
		if (!functor_bytes(n, size < 0 ? 2 : size, &raw))
			return fail(g, "node %d: fill's value is not in the trace", n->id);
		float v = size == 4   ? fusegroup_f32((uint32_t)raw)
		          : size == 2 ? fusegroup_f32((uint32_t)(raw & 0xffff) << 16)
		                      : half_to_f32((uint16_t)raw);
		char sw[400];
		/* a constant stands for the fill only where nothing outside the group writes
		 * into its buffer before the group's last member (a slice's backward fills zeros
		 * and copies the slice into them: its reader reads both) */
		int rv = fusegroup_result(g->m, n->id), last = g->c->nodes[g->c->nnodes - 1];
		for (int k = 0; rv >= 0 && k < g->m->nvalues; k++) {
			const struct value *w = &g->m->values[k];
			if (k != rv && w->buffer == g->m->values[rv].buffer && w->writer > n->id &&
			    w->writer <= last && !in_group(g->c, w->writer))
				return fail(g,
				            "node %d: its fill is partly overwritten by node %d, "
				            "outside the group, before the group reads it: no "
				            "constant stands for it%s",
				            n->id, w->writer,
				            slice_why(&g->m->nodes[w->writer], sw, sizeof(sw)));
		}
		cJSON *o = add_op(g, "fill", a, 0, res, rsz);
		add_value(o, v);
		return 0;
	}
	if (!strcmp(op, "mse_loss") && na == 2 && strstr(full, "mse_kernel_cuda")) {
		char t[16];
		add_op(g, "sub", a, 2, t, sizeof(t));
		const char *ta[2] = {t, t};
		add_op(g, "mul", ta, 2, res, rsz); /* (a - b) * (a - b) */
		return 0;
	}
	if ((!strcmp(op, "cast") || (!strcmp(op, "copy") && strstr(full, "direct_copy_kernel"))) &&
	    na == 1) {
		/* the storage type is the result's; the caller rounds to it */
		snprintf(res, rsz, "%s", a[0]);
		return 1;
	}
	if (!strcmp(op, "layer_norm") && !n->sem.backward &&
	    strstr(full, "vectorized_layer_norm_kernel") && na == 3) {
		uint64_t nraw, eraw;
		if (!fusegroup_param(n, 0, 4, &nraw) || !fusegroup_param(n, 1, 4, &eraw) ||
		    (int32_t)nraw <= 0)
			return fail(g, "node %d: layer norm's N and eps are not in the trace",
			            n->id);
		*row_cols = (double)(int32_t)nraw;
		cJSON *o = add_op(g, "layer_norm", a, 3, res, rsz);
		char b[32];
		snprintf(b, sizeof(b), "%.7g", (double)fusegroup_f32((uint32_t)eraw));
		cJSON_AddNumberToObject(o, "eps", strtod(b, NULL));
		return 0;
	}
	if ((!strcmp(op, "softmax") || !strcmp(op, "log_softmax")) && !n->sem.backward &&
	    strstr(full, "softmax_warp_forward") && na == 1) {
		uint64_t rows, len;
		int lg = strstr(full, ", true, false>") != NULL;
		if (!strstr(full, ", false, false>") && !lg)
			return fail(g, "node %d: a masked softmax kernel", n->id);
		if (!fusegroup_param(n, 2, 4, &rows) || !fusegroup_param(n, 4, 4, &len) ||
		    (int32_t)len <= 0)
			return fail(g, "node %d: softmax's rows and length are not in the trace",
			            n->id);
		*row_cols = (double)(int32_t)len;
		*row_rows = (double)(int32_t)rows;
		add_op(g, lg ? "log_softmax" : "softmax", a, 1, res, rsz);
		return 0;
	}
	if ((!strcmp(op, "softmax") || !strcmp(op, "log_softmax")) && !n->sem.backward &&
	    strstr(full, "cunn_SoftMaxForward") && na == 1) {
		/* cunn_SoftMaxForward<..., Epilogue, ...>(out, in, long classes): one row a block
		 */
		uint64_t len;
		int lg = strstr(full, "LogSoftMaxForwardEpilogue") != NULL;
		if (!lg && !strstr(full, "<float, float, float, SoftMaxForwardEpilogue"))
			return fail(g, "node %d: cannot tell the softmax's form from '%s'", n->id,
			            n->name);
		if (!fusegroup_param(n, 2, 8, &len) || (int64_t)len <= 0 || g->numel % (long)len)
			return fail(g, "node %d: softmax's row length is not in the trace", n->id);
		*row_cols = (double)(int64_t)len;
		*row_rows = (double)(g->numel / (long)len);
		add_op(g, lg ? "log_softmax" : "softmax", a, 1, res, rsz);
		return 0;
	}
	if (lnb_kernel(n) && (na == 4 || na == 5) && n->nreads == na) {
		/* reads in parameter order: dY, X, mean, rstd[, gamma] */
		uint64_t nraw;
		if (!fusegroup_param(n, 6, 4, &nraw) || (int32_t)nraw <= 0 ||
		    g->numel % (int32_t)nraw)
			return fail(g, "node %d: layer norm backward's N is not in the trace",
			            n->id);
		*row_cols = (double)(int32_t)nraw;
		*row_rows = (double)(g->numel / (int32_t)nraw);
		add_op(g, "layer_norm_backward", a, na, res, rsz);
		return 0;
	}
	if ((lsb_kernel(n) || lsbw_kernel(n)) && na == 2 && n->nreads == 2) {
		/* reads in parameter order: output (the forward's log-probabilities), then
		 * gradOutput (the warp kernel: grad, then output); the one a forward log_softmax
		 * wrote is the output, else the parameter order says it */
		int y = lsbw_kernel(n) ? 1 : 0;
		for (int k = 0; k < 2; k++) {
			int w = g->m->values[n->reads[k]].writer;
			if (w >= 0 && g->m->nodes[w].sem.family == FAM_SOFTMAX &&
			    !g->m->nodes[w].sem.backward)
				y = k;
		}
		uint64_t len, stride = 0;
		long cols = 0;
		if (lsbw_kernel(n)) { /* int element_count, its stride: one row after another */
			if (fusegroup_param(n, 5, 4, &len) && fusegroup_param(n, 4, 4, &stride) &&
			    (int32_t)stride == (int32_t)len)
				cols = (int32_t)len;
		} else if (fusegroup_param(n, 3, 8, &len)) {
			cols = (long)(int64_t)len;
		}
		if (cols <= 0 || g->numel % cols)
			return fail(
			    g, "node %d: log_softmax backward's row length is not in the trace",
			    n->id);
		*row_cols = (double)cols;
		*row_rows = (double)(g->numel / cols);
		const char *b[2] = {a[1 - y], a[y]}; /* dy, y */
		add_op(g, "log_softmax_backward", b, 2, res, rsz);
		return 0;
	}
	if (strstr(full, "launch_clamp_scalar") && na == 1 &&
	    strstr(full, "vectorized_elementwise_kernel")) {
		/* clamp_min(0), as ATen runs relu: the lambda captures the two limits and the
		 * mode (ClampLimits::Min is 0); 12 bytes all zero is relu, in whichever order they
		 * are laid out. Where the closure is larger than the trace keeps (24 bytes for
		 * bf16 in PyTorch 2.11), the op the program called says it: relu is at::relu's
		 * clamp_min(self, 0) */
		uint64_t lo, hi;
		int is_relu =
		    n->torch_op && (!strcmp(n->torch_op, "relu") || !strcmp(n->torch_op, "relu_"));
		if (is_relu ||
		    (fusegroup_param(n, 1, 8, &lo) && fusegroup_param(n, 1, NODE_PARAM_HIGH, &hi) &&
		     lo == 0 && hi == 0)) {
			add_op(g, "relu", a, 1, res, rsz);
			return 0;
		}
		return fail(g,
		            "node %d: a clamp other than clamp_min(0) (or its limits not recorded)",
		            n->id);
	}
	if (strstr(full, "batch_norm_transform_input_channels_last_kernel<") &&
	    (na == 5 || na == 6)) {
		/* (input, z, mean, inv_std, weight, shift, out, reduction_size, stride, fuse_relu):
		 * out = (x - mean[c]) * inv_std[c] * weight[c] + shift[c] (+ z) (relu), the channel
		 * innermost (channels last), so the per-channel vectors are broadcast inputs */
		uint64_t zr, cr, fr;
		if (!fusegroup_param(n, 8, 4, &cr) || !fusegroup_param(n, 9, 1, &fr) ||
		    (int32_t)cr <= 0)
			return fail(g, "node %d: batch norm's channel count is not in the trace",
			            n->id);
		int has_z = !fusegroup_param(n, 1, 8, &zr) || zr != 0;
		if (has_z != (na == 6))
			return fail(g, "node %d: batch norm's residual input is not the one read",
			            n->id);
		const char *x = a[0], *z = has_z ? a[1] : NULL;
		const char *const *v = a + (has_z ? 2 : 1); /* mean, inv_std, weight, shift */
		/* those four are float (the kernel's accscalar_t and layerscalar_t: <T, float,
		 * float, N>), C of them */
		if (!strstr(full, "_kernel<c10::BFloat16, float, float,") &&
		    !strstr(full, "_kernel<c10::Half, float, float,") &&
		    !strstr(full, "_kernel<float, float, float,"))
			return fail(g, "node %d: batch norm's statistics are not float", n->id);
		for (int k = 0; k < 4; k++) {
			int vi = n->reads[(has_z ? 2 : 1) + k];
			if (force_input(g, v[k], vi, "f32", 4, n))
				return -1;
			if (!fusegroup_block_holds(g->m->values[vi].size,
			                           4 * (uint64_t)(int32_t)cr))
				return fail(
				    g, "node %d: batch norm's per-channel vector is not %d floats",
				    n->id, (int)(int32_t)cr);
		}
		char t1[16], t2[16], t3[16], t4[16];
		const char *s1[2] = {x, v[0]};
		add_op(g, "sub", s1, 2, t1, sizeof(t1));
		const char *s2[2] = {t1, v[1]};
		add_op(g, "mul", s2, 2, t2, sizeof(t2));
		const char *s3[2] = {t2, v[2]};
		add_op(g, "mul", s3, 2, t3, sizeof(t3));
		const char *s4[2] = {t3, v[3]};
		int more = z || (fr & 1);
		add_op(g, "add", s4, 2, more ? t4 : res, more ? sizeof(t4) : rsz);
		if (z) {
			const char *s5[2] = {t4, z};
			add_op(g, "add", s5, 2, (fr & 1) ? t1 : res, (fr & 1) ? sizeof(t1) : rsz);
		}
		if (fr & 1) {
			const char *s6[1] = {z ? t1 : t4};
			add_op(g, "relu", s6, 1, res, rsz);
		}
		return 0;
	}
	if (!strcmp(op, "masked_fill") && na == 2 && strstr(full, "masked_fill_kernel") &&
	    strstr(full, "{lambda(float, bool)#1}")) {
		/* gpu_kernel(iter, [value](float self, bool mask) { return mask ? value : self; })
		 */
		uint64_t raw;
		if (!functor_bytes(n, 4, &raw))
			return fail(g, "node %d: masked_fill's value is not in the trace", n->id);
		float v = fusegroup_f32((uint32_t)raw);
		/* the mask is bool (the lambda says so), one byte an element, whatever its size
		 * would suggest as a broadcast float */
		if (force_input(g, a[1], n->reads[1], "bool", 1, n))
			return -1;
		cJSON *o = add_op(g, "masked_fill", a, 2, res, rsz);
		add_value(o, v);
		return 0;
	}
	if (!strcmp(op, "mse_loss_backward") && na == 3 &&
	    strstr(full, "mse_backward_cuda_kernel") &&
	    strstr(full, "{lambda(float, float, float)#1}")) {
		/* gpu_kernel(iter, [norm](a, b, c) { return norm * (a - b) * c; }) on (input,
		 * target, grad): norm (2/N for a mean, 2 for a sum), a float */
		uint64_t raw;
		if (functor_bytes(n, 4, &raw)) {
			float norm = fusegroup_f32((uint32_t)raw);
			if (norm > 0 && norm <= 2) {
				char t1[16], t2[16];
				add_op(g, "sub", a, 2, t1, sizeof(t1));
				const char *ta[2] = {t1, a[2]};
				add_op(g, "mul", ta, 2, t2, sizeof(t2));
				const char *tb[1] = {t2};
				cJSON *o = add_op(g, "scale", tb, 1, res, rsz);
				cJSON_AddNumberToObject(o, "scalar", (double)norm);
				return 0;
			}
		}
	}
	if (!strcmp(op, "mse_loss_backward"))
		return fail(
		    g,
		    "node %d: mse_loss backward's scale (2/N for a mean, 2 for a sum) is not "
		    "in the trace",
		    n->id);
	return fail(g, "node %d ('%s', op %s%s): fusion has no exact rule for it", n->id, n->name,
	            op, n->sem.backward ? ", a backward kernel" : "");
}

int fusegroup_result(const struct model *m, int n)
{
	int best = -1;
	for (int i = 0; i < m->nvalues; i++)
		if (m->values[i].writer == n &&
		    (best < 0 || m->values[i].size > m->values[best].size))
			best = i;
	return best;
}

/* Whether the group's ops hold a row reduction (a batch norm's transform is elementwise: its
 * statistics come from another kernel, so its "reduction-epilogue" group is a chain). */
static int group_has_reduction(const struct gb *g)
{
	static const char *const red[] = {
	    "layer_norm",           "rms_norm",           "softmax", "log_softmax",
	    "log_softmax_backward", "layer_norm_backward"};
	const cJSON *o;
	cJSON_ArrayForEach(o, g->ops)
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "op");
		for (size_t i = 0; cJSON_IsString(nm) && i < ARRAY_SIZE(red); i++)
			if (!strcmp(nm->valuestring, red[i]))
				return 1;
	}
	return 0;
}

static int build(struct gb *g)
{
	const struct model *m = g->m;
	const struct candidate *c = g->c;
	double cols = 0, rows = 0;
	for (int i = 0; i < c->nnodes; i++) {
		const struct node *n = &m->nodes[c->nodes[i]];
		const char *fn = n->full_name ? n->full_name : "";
		if ((n->sem.dtype == DT_BF16 || n->sem.dtype == DT_F16) && g->half == DT_UNKNOWN)
			g->half = n->sem.dtype;
		else if (g->half == DT_UNKNOWN &&
		         (strstr(fn, "bfloat16") || strstr(fn, "BFloat16")))
			g->half = DT_BF16; /* bfloat16_copy_kernel_cuda: a cast to bf16 */
		else if (g->half == DT_UNKNOWN && (strstr(fn, "Half") || strstr(fn, "half")))
			g->half = DT_F16;
		if (g->numel <= 0 && n->numel > 0 && n->sem.family != FAM_OTHER)
			g->numel = n->numel;
	}
	if (g->numel <= 0)
		for (int i = 0; i < c->nnodes; i++)
			if (m->nodes[c->nodes[i]].numel > 0)
				g->numel = m->nodes[c->nodes[i]].numel;
	for (int i = 0; i < c->nnodes && g->numel <= 0; i++) {
		/* a row group without elementwise members: the largest f32 tensor it reads */
		const struct node *n = &m->nodes[c->nodes[i]];
		if (n->nreads)
			g->numel =
			    (long)(m->values[n->reads[0]].size /
			           (dtype_size(n->sem.dtype) ? dtype_size(n->sem.dtype) : 4));
	}
	for (int i = 0; i < c->nnodes; i++) {
		/* members no rule covers, named before any fault of their values */
		const struct node *n = &m->nodes[c->nodes[i]];
		if (n->sem.backward &&
		    (n->sem.family == FAM_NORM || n->sem.family == FAM_SOFTMAX) && !lsb_kernel(n) &&
		    !lsbw_kernel(n) && !lnb_kernel(n) && !gbb_kernel(n) &&
		    bnr_kernel(n) == DT_UNKNOWN)
			return fail(g, "node %d (%s): fusion has no backward of a row reduction",
			            n->id, n->sem.op);
		if (n->sem.family == FAM_OTHER)
			return fail(
			    g,
			    "node %d ('%s') is a kernel of unknown semantics: its math cannot "
			    "be generated from its name; fuse such kernels by hand, or write "
			    "the group (docs/summary-format.md) and run aicprof fuse --group",
			    n->id, n->name);
	}
	if (g->numel <= 0)
		return fail(g, "the group's element count is not in the trace");
	enum dtype last = DT_UNKNOWN;
	for (int i = 0; i < c->nnodes; i++) {
		const struct node *n = &m->nodes[c->nodes[i]];
		const char *a[8];
		int na = 0;
		if (gbb_kernel(n)) {
			if (gbb_member(g, n, i == c->nnodes - 1))
				return -1;
			continue;
		}
		enum dtype bnl = bnr_kernel(n);
		if (bnl != DT_UNKNOWN) {
			if (bnr_member(g, n, bnl, i == c->nnodes - 1))
				return -1;
			continue;
		}
		uint64_t lnraw;
		if (lnb_kernel(n) && n->nreads >= 4 && fusegroup_param(n, 6, 4, &lnraw) &&
		    (int32_t)lnraw > 0 && g->numel % (int32_t)lnraw == 0)
			for (int k = 2; k < 4; k++) /* mean and rstd: one float a row */
				if (row_input(g, n->reads[k], g->numel / (int32_t)lnraw, n))
					return -1;
		for (int k = 0; k < n->nreads; k++) {
			const char *s = arg_name(g, n->reads[k], n);
			if (!s)
				return -1;
			int dup = 0;
			for (int j = 0; j < na; j++)
				dup |= a[j] == s;
			if (!dup)
				a[na++] = s;
		}
		char res[16];
		int r = member_ops(g, n, a, na, res, sizeof(res), &cols, &rows);
		if (r < 0)
			return -1;
		if (strided_loop(n) && !n->has_oc && !reads_broadcast(g, a, na))
			return fail(
			    g,
			    "node %d ('%s') is ATen's strided loop over tensors of one size: "
			    "their layouts differ (a transpose, a slice) and the trace does not "
			    "hold the loop's sizes and strides, so no kernel over one flat "
			    "index computes it",
			    n->id, n->name);
		int rv = fusegroup_result(m, n->id);
		if (rv < 0)
			return fail(g, "node %d writes nothing the trace saw", n->id);
		const struct value *v = &m->values[rv];
		long vn;
		enum dtype t = value_dtype(g, v, n, &vn);
		if (t == DT_UNKNOWN)
			return -1;
		if (vn != g->numel)
			return fail(g, "node %d's result is not a whole tensor", n->id);
		g->res_es[i] = (int)dtype_size(t);
		if (strided_loop(n) && n->has_oc) {
			if (!g->maps && loop_layout_ok(g, n, dtype_size(t)))
				return -1;
			g->layouts_checked++;
		}
		last = t;
		int internal = has(c->removed, c->nremoved, rv) || has(c->kept, c->nkept, rv);
		if (r == 1 || (internal && (t == DT_BF16 || t == DT_F16))) {
			/* a cast member, or an intermediate rounded to its storage type, as the
			 * member after it read it */
			const char *ra[1] = {res};
			char cr[16];
			cJSON *o = add_op(g, "cast", ra, 1, cr, sizeof(cr));
			cJSON_AddStringToObject(o, "to", dtype_name(t));
			snprintf(res, sizeof(res), "%s", cr);
		}
		g->vname[rv] = xstrdup(res);
		if (!internal || has(c->kept, c->nkept, rv)) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", res);
			cJSON_AddNumberToObject(o, "value", rv);
			cJSON_AddStringToObject(o, "dtype", dtype_name(t));
			cJSON_AddItemToArray(internal ? g->kept : g->outs, o);
		}
		/* what else it writes that something reads */
		for (int k = 0; k < m->nvalues; k++) {
			const struct value *w = &m->values[k];
			if (w->writer != n->id || k == rv || (!w->nreaders && !w->live_after_step))
				continue;
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "value", k);
			cJSON_AddNumberToObject(o, "writer", n->id);
			cJSON_AddNumberToObject(o, "bytes", (double)w->size);
			cJSON *rd = cJSON_AddArrayToObject(o, "readers");
			for (int q = 0; q < w->nreaders; q++)
				cJSON_AddItemToArray(rd, cJSON_CreateNumber(w->readers[q]));
			cJSON_AddBoolToObject(o, "live_after_step", w->live_after_step);
			cJSON_AddItemToArray(g->unwritten, o);
		}
	}
	(void)last;
	if (!g->nin)
		return fail(g, "the group reads no tensor: its members write constants (fill) and "
		               "what is computed from them only");
	if (!strcmp(c->kind, "reduction-epilogue") && group_has_reduction(g)) {
		if (cols <= 0)
			return fail(g, "the row length of the reduction is not in the trace");
		if (rows <= 0)
			rows = (double)(g->numel / (long)cols);
		if ((long)rows * (long)cols != g->numel)
			return fail(g, "rows x cols (%ld x %ld) is not the group's %ld elements",
			            (long)rows, (long)cols, g->numel);
		g->red_cols = (long)cols;
	}
	return 0;
}

/* The element size of a group dtype name. */
static int name_es(const char *t)
{
	return !strcmp(t, "f32") ? 4 : !strcmp(t, "bool") ? 1 : 2;
}

/*
 * A row group's per-column inputs (a norm's weight and bias) held in a caching allocator's
 * block: the block is rounded up to 512 bytes, so 192 floats (768 bytes) sit in 1,024 and
 * value_dtype() read 256 elements. Where the block holds exactly one row of the input's
 * dtype, the input is that row (the member rules check "cols" against it).
 */
static void trim_to_cols(struct gb *g, long cols)
{
	if (g->numel % cols)
		return;
	cJSON *in;
	cJSON_ArrayForEach(in, g->ins)
	{
		long numel;
		int per_row;
		const cJSON *vi = cJSON_GetObjectItemCaseSensitive(in, "value");
		const cJSON *dt = cJSON_GetObjectItemCaseSensitive(in, "dtype");
		if (!input_form(in, &numel, &per_row) || per_row || numel <= 0 || numel == cols ||
		    !cJSON_IsNumber(vi) || !cJSON_IsString(dt))
			continue;
		int v = (int)vi->valuedouble;
		if (v < 0 || v >= g->m->nvalues)
			continue;
		uint64_t es = (uint64_t)name_es(dt->valuestring);
		if (numel * (long)es != (long)g->m->values[v].size ||
		    !fusegroup_block_holds(g->m->values[v].size, (uint64_t)cols * es))
			continue;
		cJSON_ReplaceItemInObjectCaseSensitive(in, "numel",
		                                       cJSON_CreateNumber((double)cols));
	}
}

/* ---------- index maps ---------- */

/* Groups of more elements are not given index maps: each input's offsets are computed and
 * compared element by element. */
#define MAP_MAX_ELEMS (1L << 25)

/* The member (candidate order) whose result is value vi, or -1. */
static int member_of(const struct gb *g, int vi)
{
	int w = g->m->values[vi].writer;
	for (int i = 0; w >= 0 && i < g->c->nnodes; i++)
		if (g->c->nodes[i] == w && fusegroup_result(g->m, w) == vi)
			return i;
	return -1;
}

/* The group input of value vi and its index in g->ins, or NULL. */
static cJSON *input_of(const struct gb *g, int vi, int *k)
{
	cJSON *in;
	*k = 0;
	cJSON_ArrayForEach(in, g->ins)
	{
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, "value");
		if (cJSON_IsNumber(v) && (int)v->valuedouble == vi)
			return in;
		(*k)++;
	}
	return NULL;
}

/* Whether value vi is one the group writes (an output or a kept value). */
static int group_writes(const struct gb *g, int vi)
{
	const cJSON *lists[2] = {g->outs, g->kept}, *o;
	for (int l = 0; l < 2; l++)
		cJSON_ArrayForEach(o, lists[l])
		{
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "value");
			if (cJSON_IsNumber(v) && (int)v->valuedouble == vi)
				return 1;
		}
	return 0;
}

/* The loops' layouts an offset went through, from the group's index (for the CPU check's
 * reference, docs/summary-format.md "via"); over: more than VIA_MAX, or one of more than
 * INDEXMAP_DIMS dimensions (then none is written). */
#define VIA_MAX 4
struct via {
	int n, over;
	struct indexmap l[VIA_MAX];
};

/* Sets *slot (value vi's offsets at each group index) to f and *vs to its path vf, or checks
 * f against *slot. */
static int map_merge(struct gb *g, long **slot, const long *f, int vi, const struct node *n,
                     struct via *vs, const struct via *vf)
{
	size_t bytes = sizeof(long) * (size_t)g->numel;
	if (!*slot) {
		*slot = xmalloc(bytes);
		memcpy(*slot, f, bytes);
		*vs = *vf;
		return 0;
	}
	if (memcmp(*slot, f, bytes))
		return fail(g,
		            "node %d reads value %d through another layout than the group's "
		            "other reads of it: one index cannot give both",
		            n->id, vi);
	return 0;
}

/* The value an operand of strided loop n points into: one of its reads (its data pointer
 * in that value's range of its allocation), or -1 after fail(). */
static int operand_value(struct gb *g, const struct node *n, int k)
{
	int found = -1;
	for (int r = 0; r < n->nreads; r++) {
		const struct value *v = &g->m->values[n->reads[r]];
		if (v->buffer == n->oc.alloc[k] && n->oc.off[k] >= v->offset &&
		    n->oc.off[k] < v->offset + v->size) {
			if (found >= 0)
				return fail(g, "node %d: its operand %d points into two values",
				            n->id, k);
			found = n->reads[r];
		}
	}
	if (found < 0)
		return fail(g, "node %d: its operand %d points into no value it reads", n->id, k);
	return found;
}

/* Strided loop member i (node n, result rv, its loop index at each group index phi[i]):
 * each operand's offsets composed through its calculator, into phi (a member's result) or
 * fin (a group input). */
static int map_strided(struct gb *g, int i, const struct node *n, int rv, long **phi, long **fin,
                       long *tmp, struct via *pphi, struct via *pfin)
{
	const struct offcalc *oc = &n->oc;
	const struct value *res = &g->m->values[rv];
	long N = g->numel, prod = 1;
	char d[256];
	for (int k = 0; k < oc->dims; k++)
		prod *= (long)oc->size[k];
	uint32_t elem;
	long inner;
	offcalc_describe(oc, 0, d, sizeof(d));
	if (prod != N || offcalc_kind(oc, 0, &elem, &inner) != OC_DENSE ||
	    elem != (uint32_t)g->res_es[i] || oc->alloc[0] != res->buffer ||
	    oc->off[0] != res->offset)
		return fail(g,
		            "node %d ('%s') writes a strided view or another tensor than its "
		            "result (%s): no index map writes it",
		            n->id, n->name, d);
	/* every value it reads is an operand's */
	for (int r = 0; r < n->nreads; r++) {
		int claimed = 0;
		for (int k = 1; k < oc->nargs; k++)
			claimed |= operand_value(g, n, k) == n->reads[r];
		if (!claimed)
			return fail(g,
			            "node %d reads value %d, which no operand of its strided loop "
			            "points into (an operand spanning two values)",
			            n->id, n->reads[r]);
	}
	for (int k = 1; k < oc->nargs; k++) {
		int vi = operand_value(g, n, k), p, ki;
		if (vi < 0)
			return -1;
		const struct value *v = &g->m->values[vi];
		cJSON *in = (p = member_of(g, vi)) < 0 ? input_of(g, vi, &ki) : NULL;
		const cJSON *dt = in ? cJSON_GetObjectItemCaseSensitive(in, "dtype") : NULL;
		if (p < 0 && !cJSON_IsString(dt))
			return fail(g,
			            "node %d: value %d is neither a member's result nor an input",
			            n->id, vi);
		uint64_t es = p >= 0 ? (uint64_t)g->res_es[p] : (uint64_t)name_es(dt->valuestring);
		uint64_t base = oc->off[k] - v->offset;
		/* whole elements of the value's type, which one dimension that steps by one
		 * element confirms (a value's type comes from its size, or from the reader's
		 * type for a smaller one: a bf16 tensor read by a float loop that casts would
		 * step by 2 bytes); one element read everywhere: the value is that element */
		int whole = base % es == 0, unit = 0, any = 0;
		for (int dd = 0; dd < oc->dims; dd++) {
			whole &= oc->stride[dd][k] % es == 0;
			unit |= oc->size[dd] > 1 && oc->stride[dd][k] == es;
			any |= oc->size[dd] > 1 && oc->stride[dd][k];
		}
		offcalc_describe(oc, k, d, sizeof(d));
		if (!whole || (any ? !unit : v->size != es))
			return fail(
			    g,
			    "node %d reads its operand %d (%s) at offsets that are not "
			    "confirmed as whole %llu-byte elements of value %d (no dimension "
			    "steps by one element)",
			    n->id, k, d, (unsigned long long)es, vi);
		/* the type, where the kernel says it: a loop without casts reads its own type (a
		 * size alone can mislead: a bf16 tensor of twice the group's elements has the bytes
		 * of an f32 one) */
		size_t own = dtype_size(n->sem.dtype);
		if (n->full_name && strstr(n->full_name, "gpu_kernel_impl_nocast") && own &&
		    own != es)
			return fail(
			    g,
			    "node %d reads its operand %d (value %d) as %llu-byte elements, "
			    "not the %zu-byte ones its loop without casts reads",
			    n->id, k, vi, (unsigned long long)es, own);
		for (long x = 0; x < N; x++) {
			long j = phi[i][x];
			uint64_t b = base + offcalc_offset(oc, k, (uint64_t)j);
			if (j < 0 || j >= N || b + es > v->size)
				return fail(
				    g,
				    "node %d reads its operand %d (%s) past the end of value "
				    "%d (%llu bytes)",
				    n->id, k, d, vi, (unsigned long long)v->size);
			tmp[x] = (long)(b / es);
		}
		/* the path: the member's, then this operand's layout (element units) unless it is
		 * the identity */
		struct via path = pphi[i];
		struct indexmap l = {0};
		long want = 1;
		int ident = base == 0;
		l.base = (long)(base / es);
		for (int dd = 0; dd < oc->dims; dd++) {
			if (oc->size[dd] <= 1)
				continue;
			if (l.dims == INDEXMAP_DIMS) {
				path.over = 1;
				break;
			}
			l.size[l.dims] = oc->size[dd];
			l.stride[l.dims] = (long)(oc->stride[dd][k] / es);
			ident &= l.stride[l.dims] == want;
			want *= l.size[l.dims++];
		}
		if (!ident && !path.over && path.n < VIA_MAX)
			path.l[path.n++] = l;
		else if (!ident)
			path.over = 1;
		if (map_merge(g, p >= 0 ? &phi[p] : &fin[ki], tmp, vi, n,
		              p >= 0 ? &pphi[p] : &pfin[ki], &path))
			return -1;
	}
	return 0;
}

/* A member that is not a strided loop: ATen's contiguous loops (vectorized_elementwise_kernel,
 * unrolled_elementwise_kernel: gpu_kernel launches them only where every operand is
 * contiguous) read each value at their own index; any other kernel's layout is unknown. */
static int map_dense(struct gb *g, int i, const struct node *n, long **phi, long **fin,
                     struct via *pphi, struct via *pfin)
{
	const char *nm = n->name ? n->name : "";
	if (strncmp(nm, "vectorized_elementwise_kernel<", 30) &&
	    strncmp(nm, "unrolled_elementwise_kernel<", 28))
		return fail(g,
		            "node %d ('%s') is no contiguous loop of ATen's and keeps no offset "
		            "calculator: no index map for what it reads",
		            n->id, nm);
	for (int r = 0; r < n->nreads; r++) {
		int vi = n->reads[r], p = member_of(g, vi), ki;
		long numel;
		int per_row;
		cJSON *in = p < 0 ? input_of(g, vi, &ki) : NULL;
		if (p < 0 && (!input_form(in, &numel, &per_row) || numel || per_row))
			return fail(
			    g,
			    "node %d ('%s') reads value %d, not a whole tensor of the group's "
			    "%ld elements, with no offset calculator that says how",
			    n->id, n->name, vi, g->numel);
		if (map_merge(g, p >= 0 ? &phi[p] : &fin[ki], phi[i], vi, n,
		              p >= 0 ? &pphi[p] : &pfin[ki], &pphi[i]))
			return -1;
	}
	return 0;
}

/* The map of input in (offsets f over the group's index), into its description: "numel" the
 * elements it reads up to (its extent), "map" the strided map. */
static void add_layout(cJSON *o, const struct indexmap *im)
{
	cJSON_AddNumberToObject(o, "offset", (double)im->base);
	cJSON *sz = cJSON_AddArrayToObject(o, "sizes"), *st = cJSON_AddArrayToObject(o, "strides");
	for (int d = 0; d < im->dims; d++) {
		cJSON_AddItemToArray(sz, cJSON_CreateNumber((double)im->size[d]));
		cJSON_AddItemToArray(st, cJSON_CreateNumber((double)im->stride[d]));
	}
}

static int attach_map(struct gb *g, cJSON *in, const long *f, const struct via *via)
{
	struct indexmap im;
	const cJSON *nm = cJSON_GetObjectItemCaseSensitive(in, "name");
	if (indexmap_fit(f, g->numel, &im))
		return fail(g,
		            "input %s: its elements' offsets over the group follow no strided map "
		            "of at most %d dimensions",
		            cJSON_IsString(nm) ? nm->valuestring : "?", INDEXMAP_DIMS);
	long ext = 0;
	for (long x = 0; x < g->numel; x++)
		ext = f[x] + 1 > ext ? f[x] + 1 : ext;
	cJSON_DeleteItemFromObjectCaseSensitive(in, "numel");
	cJSON_AddNumberToObject(in, "numel", (double)ext);
	add_layout(cJSON_AddObjectToObject(in, "map"), &im);
	if (!via->over && via->n) { /* the loops' own layouts, for the CPU check's reference */
		cJSON *va = cJSON_AddArrayToObject(in, "via");
		for (int q = 0; q < via->n; q++) {
			cJSON *o = cJSON_CreateObject();
			add_layout(o, &via->l[q]);
			cJSON_AddItemToArray(va, o);
		}
	}
	return 0;
}

/*
 * The index maps of a chain whose strided loops read through transposes, slices or
 * broadcasts (loop_layout_ok() refused it): the group's index i is its writes' memory order
 * (each write is dense); walking the members from the last, a member's loop index at each i
 * (phi: the identity for a member whose result the group writes, else what its readers read
 * it at) gives, through its offset calculator, each operand's offset at each i; an operand
 * that is a member's result fixes that member's index, one that is a group input its offsets.
 * Two reads of one value at different offsets, a member whose index nothing fixes, an input
 * whose offsets no strided map gives: refused. 0, or -1 after fail().
 */
static int map_pass(struct gb *g)
{
	const struct model *m = g->m;
	const struct candidate *c = g->c;
	long N = g->numel;
	const cJSON *o;
	if (strcmp(c->kind, "elementwise-chain") || g->row_cols || g->col_cols ||
	    group_has_reduction(g))
		return fail(g, "index maps are for elementwise chains only");
	if (N > MAP_MAX_ELEMS)
		return fail(
		    g, "a chain of %ld elements is too large for its index maps to be checked", N);
	cJSON_ArrayForEach(o, g->ops)
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "op");
		if (cJSON_IsString(nm) && !strcmp(nm->valuestring, "dropout"))
			return fail(
			    g, "a dropout's random numbers follow its own index, which an index "
			       "map would reorder");
	}
	int nin = cJSON_GetArraySize(g->ins), rc = 0;
	long **phi = xcalloc((size_t)c->nnodes, sizeof(long *));
	long **fin = xcalloc((size_t)nin + 1, sizeof(long *));
	struct via *pphi = xcalloc((size_t)c->nnodes, sizeof(*pphi)), none = {0};
	struct via *pfin = xcalloc((size_t)nin + 1, sizeof(*pfin));
	long *tmp = xmalloc(sizeof(long) * (size_t)N);
	for (int i = c->nnodes - 1; i >= 0 && !rc; i--) {
		const struct node *n = &m->nodes[c->nodes[i]];
		int rv = fusegroup_result(m, n->id);
		if (n->numel > 0 && n->numel != N) {
			rc = fail(g, "node %d runs over %ld elements, not the group's %ld", n->id,
			          n->numel, N);
			break;
		}
		if (group_writes(g, rv)) {
			for (long x = 0; x < N; x++)
				tmp[x] = x;
			if ((rc = map_merge(g, &phi[i], tmp, rv, n, &pphi[i], &none)))
				break;
		}
		if (!phi[i]) {
			rc = fail(g, "node %d: no later member reads its result at a known index",
			          n->id);
			break;
		}
		if (strided_loop(n) && n->has_oc)
			rc = map_strided(g, i, n, rv, phi, fin, tmp, pphi, pfin);
		else if (strided_loop(n))
			rc = fail(
			    g,
			    "node %d ('%s') is ATen's strided loop whose sizes and strides the "
			    "trace does not hold",
			    n->id, n->name);
		else
			rc = map_dense(g, i, n, phi, fin, pphi, pfin);
	}
	cJSON *in;
	int k = 0;
	cJSON_ArrayForEach(in, g->ins)
	{
		long numel;
		int per_row;
		if (!rc && fin[k] && input_form(in, &numel, &per_row) &&
		    (numel || !indexmap_identity(fin[k], N)))
			rc = attach_map(g, in, fin[k], &pfin[k]);
		k++;
	}
	for (int i = 0; i < c->nnodes; i++)
		free(phi[i]);
	for (int i = 0; i < nin; i++)
		free(fin[i]);
	free(phi);
	free(fin);
	free(pphi);
	free(pfin);
	free(tmp);
	return rc;
}

/*
 * The group description of candidate c of model m, as a new cJSON object the caller deletes;
 * or NULL with *why set to a new string (the caller frees) saying in one sentence why the
 * candidate has none. Only "elementwise-chain" and "reduction-epilogue" candidates have one;
 * the others (attention, GEMM epilogues, optimizers) are the library's to fuse.
 */
static cJSON *attempt(const struct model *m, const struct candidate *c, int maps, char **why,
                      int *layout_refused);

struct cJSON *fusegroup_build(const struct model *m, const struct candidate *c, char **why)
{
	*why = NULL;
	if (strcmp(c->kind, "elementwise-chain") && strcmp(c->kind, "reduction-epilogue")) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "%s: GEMMs and multi-tensor kernels are not generated here%s%s",
		            c->kind, c->library_form ? "; the library's fused form: " : "",
		            c->library_form ? c->library_form : "");
		*why = sb.buf;
		return NULL;
	}
	int layout;
	cJSON *root = attempt(m, c, 0, why, &layout);
	if (root || !layout)
		return root;
	/* a strided loop's layout refused it: again, each input read through an index map */
	char *why2 = NULL;
	root = attempt(m, c, 1, &why2, &layout);
	if (root) {
		free(*why);
		*why = NULL;
		return root;
	}
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s; with index maps: %s", *why, why2);
	free(*why);
	free(why2);
	*why = sb.buf;
	return NULL;
}

/* fusegroup_build()'s one attempt, with index maps (map_pass()) when maps; *layout_refused
 * when a strided loop's layout refused it. */
static cJSON *attempt(const struct model *m, const struct candidate *c, int maps, char **why,
                      int *layout_refused)
{
	struct gb g = {0};
	g.m = m;
	g.c = c;
	g.maps = maps;
	g.res_es = xcalloc((size_t)c->nnodes + 1, sizeof(int));
	g.why = (struct strbuf)STRBUF_INIT;
	cJSON *root = cJSON_CreateObject();
	struct strbuf nm = STRBUF_INIT;
	strbuf_addf(&nm, "c%d", c->id);
	for (int i = 0; i < c->nnodes && nm.len < 40; i++) {
		const char *op = m->nodes[c->nodes[i]].sem.op;
		if (!op || !strcmp(op, "unknown"))
			continue;
		strbuf_adds(&nm, "_");
		for (const char *s = op; *s; s++)
			strbuf_addf(&nm, "%c",
			            (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ? *s
			                                                                 : '_');
	}
	cJSON_AddStringToObject(root, "name", nm.buf);
	strbuf_release(&nm);
	cJSON_AddItemToObject(root, "kind", cJSON_CreateString(c->kind));
	g.ins = cJSON_CreateArray();
	g.ops = cJSON_CreateArray();
	g.outs = cJSON_CreateArray();
	g.kept = cJSON_CreateArray();
	g.unwritten = cJSON_CreateArray();
	g.vname = xcalloc(m->nvalues ? m->nvalues : 1, sizeof(char *));
	int rc = build(&g);
	*layout_refused = rc && g.layout_refused;
	if (!rc && maps)
		rc = map_pass(&g);
	if (!rc) {
		/* dtype: the first output's; sizes */
		const cJSON *o0 = cJSON_GetArrayItem(g.outs, 0);
		const cJSON *dt = o0 ? cJSON_GetObjectItemCaseSensitive(o0, "dtype") : NULL;
		if (cJSON_IsString(dt))
			cJSON_AddStringToObject(root, "dtype", dt->valuestring);
		int row = !strcmp(c->kind, "reduction-epilogue") && group_has_reduction(&g);
		if (g.col_cols > 0) {
			cJSON_ReplaceItemInObjectCaseSensitive(
			    root, "kind", cJSON_CreateString("column-reduction"));
			cJSON_AddNumberToObject(root, "rows", (double)g.col_rows);
			cJSON_AddNumberToObject(root, "cols", (double)g.col_cols);
		} else if (!row)
			cJSON_ReplaceItemInObjectCaseSensitive(
			    root, "kind", cJSON_CreateString("elementwise-chain"));
		if (g.row_cols && (row || g.col_cols > 0))
			rc = fail(&g, "a per-row input (rows of %ld) in a row or column group",
			          g.row_cols);
		if (row && g.col_cols <= 0 && g.red_cols > 0) {
			/* the row length build() took from the reduction's own rule (a row group
			 * without one failed there) */
			const long cols = g.red_cols;
			cJSON_AddNumberToObject(root, "rows", (double)(g.numel / cols));
			cJSON_AddNumberToObject(root, "cols", (double)cols);
			trim_to_cols(&g, cols);
		} else if (g.col_cols <= 0) {
			cJSON_AddNumberToObject(root, "numel", (double)g.numel);
			if (g.row_cols) /* per-row inputs: read at i / cols */
				cJSON_AddNumberToObject(root, "cols", (double)g.row_cols);
		}
	}
	cJSON_AddItemToObject(root, "inputs", g.ins);
	cJSON_AddItemToObject(root, "ops", g.ops);
	cJSON_AddItemToObject(root, "outputs", g.outs);
	cJSON_AddItemToObject(root, "kept", g.kept);
	cJSON_AddItemToObject(root, "unwritten", g.unwritten);
	if (g.layouts_checked) /* strided loops confirmed by their offset calculators */
		cJSON_AddNumberToObject(root, "layouts_checked", g.layouts_checked);
	cJSON_AddNumberToObject(root, "time_before_us",
	                        (double)(long long)(c->before_us * 1000 + 0.5) / 1000);
	for (int i = 0; i < m->nvalues; i++)
		free(g.vname[i]);
	free(g.vname);
	free(g.res_es);
	if (rc) {
		cJSON_Delete(root);
		*why = g.why.buf ? g.why.buf : xstrdup("no exact rule for a member");
		return NULL;
	}
	strbuf_release(&g.why);
	return root;
}
