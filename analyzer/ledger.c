/*
 * ledger.c - the VRAM ledger and the roofline: for each node of the step graph, the bytes it
 * moved (bytes_read + bytes_written, from the allocations its pointers fall in, bounded by
 * numel x element size where the trace gives N), its achieved bandwidth over its median time,
 * its arithmetic intensity where FLOPs are known, and where it sits against the device's peak
 * bandwidth (header devices[].peak_bw_gbs) and peak compute (a small table by device name and
 * compute capability, dense, no sparsity). Then the step totals: bytes read and written, the
 * round trip (bytes of intermediates: written by one node and read straight back by the next
 * ones, never needed after the step), kernel and copy time.
 *
 * FLOPs: one per element for elementwise kernels where N is known. For a matrix product (GEMM,
 * and a convolution as its implicit GEMM) from its operand extents: with A and B the two
 * largest values it reads and C the largest it writes, in elements (bytes / element size of
 * its dtype), a matmul has A = M*K, B = K*N, C = M*N, so FLOPs = 2*sqrt(A*B*C). That is exact
 * for a linear layer (a shared weight, whatever the leading dimensions of the activations).
 * For a batched matmul whose operands are both batched (b*M*K, b*K*N, b*M*N: attention's
 * Q.K^T and P.V) it gives 2*b^1.5*M*N*K, sqrt(b) times the true 2*b*M*N*K: so when both
 * operands were computed in the step (no weight among them) and the launch's grid has a z
 * extent, taken as the batch (cuBLAS's batched kernels put it there), the estimate is divided
 * by sqrt(gridDim.z); where the batch is elsewhere it stays an upper estimate. A
 * convolution's input is not its im2col matrix, so there too it is an estimate; the helpers
 * the libraries launch beside their products (split-K reduction, cuDNN's channel padding and
 * workspace initialisation: not_a_product()) get none. It never exceeds what the device can
 * do: at most the dtype's peak TFLOP/s x the node's median time. The node's flops_how says
 * which rule gave the FLOPs ("numel", "operand extents", "per element": flops_per_element()
 * for norms, softmax, reductions and the optimizer's kernels; NULL unknown).
 *
 * bound: "latency" when the roofline time is under a quarter of the measured time and the
 * kernel ran under 10 us (launch and tail effects dominate), else "memory" or "compute" by
 * whichever roofline term is larger.
 */
#include "analyzer/model.h"
#include "analyzer/vindex.h"
#include "lib/util.h"

#include <math.h>
#include <string.h>

static const struct {
	const char *name; /* substring of the device name */
	const char *cc;   /* or compute capability, when the name matches no row */
	double fp32, tf32, bf16, fp16;
} peaks[] = {
    {"H200", NULL, 67.0, 494.7, 989.4, 989.4},      {"H100", "9.0", 67.0, 494.7, 989.4, 989.4},
    {"H800", NULL, 67.0, 494.7, 989.4, 989.4},      {"GH200", NULL, 67.0, 494.7, 989.4, 989.4},
    {"B200", "10.0", 80.0, 1100.0, 2250.0, 2250.0}, {"A100", "8.0", 19.5, 156.0, 312.0, 312.0},
    {"L40S", NULL, 91.6, 183.0, 362.1, 362.1},      {"L4", "8.9", 30.3, 60.0, 121.0, 121.0},
    {"A10", "8.6", 31.2, 62.5, 125.0, 125.0},       {"V100", "7.0", 15.7, 0, 0, 125.0},
};

void device_peaks(struct device_info *dev)
{
	int hit = -1;
	for (size_t i = 0; i < ARRAY_SIZE(peaks) && hit < 0; i++)
		if (dev->name && strstr(dev->name, peaks[i].name))
			hit = (int)i;
	for (size_t i = 0; i < ARRAY_SIZE(peaks) && hit < 0; i++)
		if (peaks[i].cc && !strcmp(dev->cc, peaks[i].cc))
			hit = (int)i;
	if (hit < 0)
		return;
	dev->tflops_fp32 = peaks[hit].fp32;
	dev->tflops_tf32 = peaks[hit].tf32;
	dev->tflops_bf16 = peaks[hit].bf16;
	dev->tflops_fp16 = peaks[hit].fp16;
}

/* Peak TFLOP/s for a node: its dtype's tensor-core rate for GEMMs, else the fp32 rate. */
static double node_peak(const struct model *m, const struct node *n)
{
	const struct device_info *d = &m->dev;
	if (n->sem.family == FAM_GEMM || n->sem.family == FAM_ATTENTION ||
	    n->sem.family == FAM_CONV) {
		switch (n->sem.dtype) {
		case DT_BF16:
			return d->tflops_bf16;
		case DT_F16:
			return d->tflops_fp16;
		case DT_F32:
			return d->tflops_tf32 ? d->tflops_tf32 : d->tflops_fp32;
		default:
			return d->tflops_bf16;
		}
	}
	return d->tflops_fp32;
}

/* The node's lower bound in us: max(bytes / peak bandwidth, flops / peak compute). */
double node_floor_us(const struct model *m, const struct node *n)
{
	double bytes = (double)(n->bytes_read + n->bytes_written);
	double tb = m->dev.peak_bw_gbs > 0 ? bytes / (m->dev.peak_bw_gbs * 1e3) : 0;
	double pk = node_peak(m, n);
	double tc = pk > 0 ? n->flops / (pk * 1e6) : 0;
	return tb > tc ? tb : tc;
}

/* Bytes one reader of v reads: its share of the step's reads, at most the allocation. */
static double read_bytes(const struct value *v)
{
	double b = v->nreaders > 0 ? (double)v->bytes_read / v->nreaders : 0;
	if (b <= 0 || (v->size && b > (double)v->size))
		b = (double)v->size;
	return b;
}

/* Bytes its writer wrote to v in the step, at most the allocation. */
static double write_bytes(const struct value *v)
{
	double b = (double)v->bytes_written;
	if (b <= 0 || (v->size && b > (double)v->size))
		b = (double)v->size;
	return b;
}

/*
 * A matrix product's FLOPs from its operand extents (the header's rule), capped at its
 * dtype's peak x its median time; 0 when it reads fewer than two values or writes none.
 */
static double gemm_flops(const struct model *m, const struct vindex *x, const struct node *n,
                         int id)
{
	double a = 0, b = 0, c = 0;
	int wa = -1, wb = -1; /* the writers of A and B: >= 0 when written in the step */
	for (int k = x->rd_off[id]; k < x->rd_off[id + 1]; k++) {
		const struct value *v = &m->values[x->rd[k]];
		double r = read_bytes(v);
		if (r > a) {
			b = a, wb = wa;
			a = r, wa = v->writer;
		} else if (r > b) {
			b = r, wb = v->writer;
		}
	}
	for (int k = x->wr_off[id]; k < x->wr_off[id + 1]; k++) {
		double w = write_bytes(&m->values[x->wr[k]]);
		if (w > c)
			c = w;
	}
	size_t es = dtype_size(n->sem.dtype);
	if (!es)
		es = 4;
	if (a <= 0 || b <= 0 || c <= 0)
		return 0;
	a /= (double)es, b /= (double)es, c /= (double)es;
	double f = 2.0 * sqrt(a) * sqrt(b) * sqrt(c);
	/* both operands computed in the step (no weight) and a grid over z: a batched product
	 * whose batch cuBLAS puts on gridDim.z; take it out (2*sqrt(A*B*C/batch)) */
	if (wa >= 0 && wb >= 0 && n->grid[2] > 1)
		f /= sqrt((double)n->grid[2]);
	double cap = node_peak(m, n) * 1e6 * n->median_us; /* TFLOP/s x us */
	if (cap > 0 && f > cap)
		f = cap;
	return isfinite(f) && f > 0 ? f : 0;
}

/*
 * FLOPs per element for the families whose work follows their element count: the arithmetic
 * operations (an add, a multiply, an exp or rsqrt each count one, as in the elementwise rule)
 * of the usual formulation, per element of the tensor the op maps. A norm: mean and variance
 * (three), normalise (two), the affine (two); its backward about ten. Softmax: max, subtract,
 * exp, sum, divide; its backward four. A reduction: one per element it reads. The optimizer's
 * multi-tensor kernels by functor, per element they write: one (binary, unary, add), two
 * (pointwise: addcmul/addcdiv), three (lerp); Adam's fused step (about twelve per parameter,
 * written three times: parameter and both moments) four, SGD's (four per parameter, written
 * twice: parameter and momentum) two. 0 for what moves data without arithmetic
 * (casts, copies, fills, cat, gather): the plot shows those by their bandwidth.
 */
static double flops_per_element(const struct node *n)
{
	const char *op = n->sem.op ? n->sem.op : "";
	int bwd = strstr(op, "backward") != NULL;
	switch (n->sem.family) {
	case FAM_NORM:
		return bwd ? 10 : 7;
	case FAM_SOFTMAX:
		return bwd ? 4 : 5;
	case FAM_REDUCTION:
		return 1;
	case FAM_OPTIMIZER:
		if (strstr(op, "adam"))
			return 4;
		if (strstr(op, "sgd"))
			return 2;
		if (strstr(op, "lerp"))
			return 3;
		if (strstr(op, "pointwise"))
			return 2;
		return 1;
	default:
		return 0;
	}
}

/* The elements a per-element rule counts: the node's numel, else, in its dtype, what it reads
 * (a reduction's input) or writes (a multi-tensor kernel's lists). */
static double rule_elements(const struct node *n)
{
	if (n->numel > 0 && n->sem.family != FAM_REDUCTION && n->sem.family != FAM_OPTIMIZER)
		return (double)n->numel;
	size_t es = dtype_size(n->sem.dtype);
	if (!es)
		es = 4;
	return (double)(n->sem.family == FAM_OPTIMIZER ? n->bytes_written : n->bytes_read) /
	       (double)es;
}

/* The helper kernels cuBLAS and cuDNN launch beside their products: split-K reductions,
 * channel padding, workspace initialisation. They move data and get no product FLOPs. */
static int not_a_product(const char *name)
{
	static const char *const helpers[] = {"splitKreduce", "ReduceSplitK",
	                                      "AddPadding",   "init_device_workspace",
	                                      "nchwToNhwc",   "nhwcToNchw"};
	for (size_t i = 0; name && i < ARRAY_SIZE(helpers); i++)
		if (strstr(name, helpers[i]))
			return 1;
	return 0;
}

void ledger_compute(struct model *m)
{
	memset(&m->per_step, 0, sizeof(m->per_step));
	struct vindex x;
	int built = 0;
	for (int i = 0; i < m->nnodes; i++) {
		struct node *n = &m->nodes[i];
		double bytes = (double)(n->bytes_read + n->bytes_written);
		if (n->sem.family == FAM_ELEMENTWISE && n->numel > 0 && !n->flops) {
			n->flops = (double)n->numel;
			n->flops_how = "numel";
		}
		if (n->kind == NK_KERNEL && !n->flops && flops_per_element(n) > 0) {
			double f = flops_per_element(n) * rule_elements(n);
			double cap = node_peak(m, n) * 1e6 * n->median_us;
			if (cap > 0 && f > cap)
				f = cap;
			if (isfinite(f) && f > 0) {
				n->flops = f;
				n->flops_how = "per element";
			}
		}
		if ((n->sem.family == FAM_GEMM || n->sem.family == FAM_CONV) && !n->flops &&
		    !not_a_product(n->name)) {
			if (!built++)
				vindex_build(m, &x);
			n->flops = gemm_flops(m, &x, n, i);
			if (n->flops > 0)
				n->flops_how = "operand extents";
		}
		n->achieved_gbs = n->median_us > 0 ? bytes / (n->median_us * 1e3) : 0;
		n->intensity = bytes > 0 ? n->flops / bytes : 0;
		n->roofline_us = node_floor_us(m, n);
		double pk = node_peak(m, n);
		double tb = m->dev.peak_bw_gbs > 0 ? bytes / (m->dev.peak_bw_gbs * 1e3) : 0;
		double tc = pk > 0 ? n->flops / (pk * 1e6) : 0;
		if (n->median_us > 0 && n->median_us < 10 && n->roofline_us < 0.25 * n->median_us)
			n->bound = "latency";
		else
			n->bound = tc > tb ? "compute" : "memory";
		m->per_step.bytes_read += n->bytes_read;
		m->per_step.bytes_written += n->bytes_written;
		if (n->kind == NK_KERNEL)
			m->per_step.kernel_us += n->median_us;
		else
			m->per_step.copy_us += n->median_us;
	}
	if (built)
		vindex_free(&x);
	for (int i = 0; i < m->nvalues; i++) {
		const struct value *v = &m->values[i];
		if (v->intermediate)
			m->per_step.roundtrip_bytes += v->bytes_written + v->bytes_read;
	}
}
