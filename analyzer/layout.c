/*
 * layout.c - which pointer parameters a kernel reads and writes, from where each pointer sits
 * in the kernel's parameter layout (the offsets the shim recorded with cuFuncGetParamInfo):
 * per kernel family of semantics.c, a string that says what each parameter is, and the
 * rules for the parameters that hold several pointers (PyTorch's legacy elementwise lambdas,
 * its multi-tensor-apply lists). Split from semantics.c, which owns the families; the roles
 * by name alone stay there (sem_roles_named(), the fallback used here).
 */
#include "analyzer/semantics.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * Positional layouts: for the rows whose kernels' parameter lists are known, one character per
 * parameter, in order (parameters past the string's end hold no pointers):
 *
 *	'.'	no pointer expected: one found there is a value that only looks like an address
 *	'R' 'W' 'X'	a pointer or a TensorInfo (data pointer first) read / written / both: the
 *		pointer at byte offset 0; anything else in the parameter is not a pointer
 *	'r' 'x'	a struct whose pointers, at any offset, are read / read and written
 *	'A'	the elementwise loops' std::array<char*, K> data: offset 0 written, others read
 *	'L'	the legacy loop's lambda, which holds the offset calculator (strides, whose
 *		32-bit pairs can look like addresses: seen in real traces), the functor and the
 *		std::array<char*, K> data: the last run of K pointers at consecutive words is the
 *		data (first written, the rest read), with K from the name ("{lambda(float,
 *		bool)#1}": 3); anything else is not a pointer. K unknown: the last run of two or
 *		more, when there is just one such run
 *	'O'	Reduce.cuh's ReduceOp, whose last fields are src, dst[0], dst[1], acc_buf,
 *		cta_buf, semaphores, base_idx, accumulate, final_output, noutputs: src is 64
 *		bytes from its end, then dst[0], dst[1] (written), the scratch buffers (both)
 */
static const struct {
	const char *rule;
	const char *params;
} param_layouts[] = {
    /* CUDALoops.cuh: (int N, func_t f, array_t data, [calculators, loader, storer]) */
    {"torch-vectorized-elementwise", ".rA"},
    {"torch-unrolled-elementwise", ".rA"},
    /* elementwise_kernel<nt, vt, lambda>(int N, lambda) */
    {"torch-elementwise", ".L"},
    /* Dropout.cu: (TensorInfo a, TensorInfo b, TensorInfo c, n, p, PhiloxCudaState) */
    {"torch-fused-dropout", "RWW..r"},
    /* layer_norm_kernel.cu */
    {"torch-vectorized-rms-norm", "..RRRWWW"},
    {"torch-vectorized-layer-norm", "..RRRWWW"},
    {"torch-rowwise-moments", "..RWW"},
    {"torch-layer-norm-forward", ".RRRRRW"},
    {"torch-layer-norm-grad-input", "RRRRRW"},
    {"torch-gamma-beta-backward", "..RRRRWW"},
    /* SoftMax.cu / PersistentSoftmax.cuh: (out, in, ..., mask at 5) and (gradInput, grad,
     * output, ..., mask at 6) */
    {"torch-log-softmax", "WR...R"},
    {"torch-log-softmax-warp", "WR...R"},
    {"torch-softmax", "WR...R"},
    {"torch-log-softmax-backward", "WRR...R"},
    {"torch-log-softmax-warp-backward", "WRR...R"},
    {"torch-softmax-backward", "WRR...R"},
    {"torch-spatial-softmax-backward", "WRR"},
    /* Reduce.cuh: reduce_kernel(ReduceOp) */
    {"torch-reduce", "O"},
    /* MultiTensorApply.cuh: (TensorListMetadata, callable, args...: lr, grad_scale and
     * found_inf pointers are read) */
    {"torch-multi-tensor-apply", "xrrrrrrrrrrrrrrr"},
    /* Indexing.cu: (TensorInfo dst, src, indices, ...); Shape.cu: (T* out, inputs, ...) */
    {"torch-index-select", "WRR"},
    {"torch-cat", "Wr"},
    /* TriangularOps.cu: (TensorInfo result, TensorInfo self, ...) */
    {"torch-triu", "WR"},
    {"torch-tril", "WR"},
};

static const char *params_of(const struct op_sem *s)
{
	if (!s || !s->rule)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(param_layouts); i++)
		if (!strcmp(s->rule, param_layouts[i].rule))
			return param_layouts[i].params;
	return NULL;
}

/* Role of a pointer at byte offset off of a parameter of size size laid out as c. */
static unsigned char role_at(char c, unsigned off, unsigned size)
{
	switch (c) {
	case 'R':
		return off == 0 ? ROLE_READ : ROLE_UNKNOWN;
	case 'W':
		return off == 0 ? ROLE_WRITE : ROLE_UNKNOWN;
	case 'X':
		return off == 0 ? ROLE_READWRITE : ROLE_UNKNOWN;
	case 'r':
		return ROLE_READ;
	case 'x':
		return ROLE_READWRITE;
	case 'A':
		return off == 0 ? ROLE_WRITE : (off % 8 == 0 ? ROLE_READ : ROLE_UNKNOWN);
	case 'O':
		if (size < 64 || off < size - 64 || off % 8)
			return ROLE_UNKNOWN;
		switch ((off - (size - 64)) / 8) {
		case 0:
			return ROLE_READ; /* src */
		case 1:
		case 2:
			return ROLE_WRITE; /* dst[0], dst[1] */
		case 3:
		case 4:
		case 5:
			return ROLE_READWRITE; /* acc_buf, cta_buf, semaphores */
		}
		return ROLE_UNKNOWN;
	}
	return ROLE_UNKNOWN;
}

/*
 * The 'L' parameter: find the data array (see above) among the pointers in it. Returns 0 (all
 * of its pointers ROLE_UNKNOWN) when it cannot be told.
 */
static int legacy_data_roles(const char *name, int nptrs, const struct sem_ptr *ptr,
                             const char *params, unsigned char *role)
{
	char *d = name ? demangle(name) : NULL;
	int k = elementwise_ntensors(d, 0);
	free(d);
	size_t np = strlen(params);
	int start = -1, runs = 0;
	/* runs of pointers of the 'L' parameter at consecutive 8-byte words, in trace order */
	for (int i = 0; i < nptrs;) {
		int a = ptr[i].arg;
		if (a < 0 || (size_t)a >= np || params[a] != 'L') {
			i++;
			continue;
		}
		int j = i + 1;
		while (j < nptrs && ptr[j].arg == a && ptr[j].off == ptr[j - 1].off + 8)
			j++;
		int len = j - i;
		if (k > 0 ? len >= k : len >= 2) {
			start = k > 0 ? j - k : i;
			runs++;
		}
		i = j;
	}
	if (start < 0 || (k <= 0 && runs != 1))
		return 0;
	int len = k > 0 ? k : 0;
	if (!len)
		while (start + len < nptrs && ptr[start + len].arg == ptr[start].arg &&
		       (len == 0 || ptr[start + len].off == ptr[start + len - 1].off + 8))
			len++;
	role[start] = ROLE_WRITE;
	for (int i = start + 1; i < start + len; i++)
		role[i] = ROLE_READ;
	return 1;
}

/*
 * MultiTensorApply.cuh: the first parameter is TensorListMetadata<depth>, whose first member is
 * `const void *addresses[depth][depth_to_max_tensors[depth - 1]]` (110, 64, 48, 36, 30 for depth
 * 1..5): list d's tensors are the words d*max .. d*max+max-1. The foreach functors are
 * templates <T, depth, r_args_depth, res_arg_index>: list res_arg_index is written (read too when
 * the op is in place, i.e. depth == r_args_depth), the other lists are read. The fused Adam and
 * AdamW functor (<T, depth, mode, amsgrad>) writes params, exp_avg, exp_avg_sq (and
 * max_exp_avg_sq): every list but the gradients (list 1). Slots of a list past the tensors of
 * this launch are stale (not arguments). Returns 1 when it could tell, filling
 * role[] for the pointers of parameter 0 (the others are left as they are).
 */
static int multi_tensor_roles(const char *name, int nptrs, const struct sem_ptr *ptr,
                              unsigned char *role)
{
	static const int max_tensors[] = {110, 64, 48, 36, 30};
	char *d = demangle(name);
	const char *f = d ? strstr(d, "Functor<") : NULL;
	int fused_adam = d && strstr(d, "FusedAdamMathFunctor<") != NULL;
	int v[3] = {-1, -1, -1};
	if (f) {
		const char *q = strchr(f, ',');
		for (int k = 0; k < 3 && q; k++) {
			while (*q == ',' || *q == ' ')
				q++;
			char *end;
			long x = strtol(q, &end, 10);
			v[k] = end != q ? (int)x : -1;
			q = strchr(q, ',');
		}
	}
	free(d);
	int depth = v[0];
	if (depth < 1 || depth > 5 || (!fused_adam && (v[1] < 1 || v[2] < 0 || v[2] >= depth)))
		return 0;
	int max = max_tensors[depth - 1];
	/* tensors in this launch: every list's slots are filled from 0 up, one per tensor; slots
	 * past them hold addresses left over from an earlier use of the struct, which the kernel
	 * never reads. A stale run can follow one list and not another (the MLP's AdamW lerp: 8
	 * exp_avg slots, 6 gradients; ncu read 64 MiB where 8 slots made 80), so the count is the
	 * shortest list's. */
	int used = max;
	for (int li = 0; li < depth; li++) {
		int run = 0;
		for (int k = 0; k < max; k++) {
			int found = 0;
			for (int i = 0; i < nptrs && !found; i++)
				found =
				    ptr[i].arg == 0 && ptr[i].off == (unsigned)(li * max + k) * 8;
			if (!found)
				break;
			run++;
		}
		if (run < used)
			used = run;
	}
	for (int i = 0; i < nptrs; i++) {
		if (ptr[i].arg != 0)
			continue;
		unsigned slot = ptr[i].off / 8;
		int list = ptr[i].off % 8 ? depth : (int)(slot / (unsigned)max);
		if (list < depth && (int)(slot % (unsigned)max) >= used)
			list = depth; /* a stale slot */
		if (list >= depth)
			role[i] = ROLE_UNKNOWN; /* numel, block tables: not an address */
		else if (fused_adam)
			role[i] = list == 1 ? ROLE_READ : ROLE_READWRITE;
		else if (list == v[2])
			role[i] = depth == v[1] ? ROLE_READWRITE : ROLE_WRITE;
		else
			role[i] = ROLE_READ;
	}
	return 1;
}

int sem_roles_at(const char *name, const struct op_sem *s, int nptrs, const struct sem_ptr *ptr,
                 unsigned char *role)
{
	if (nptrs <= 0 || !role)
		return 0;
	const char *params = params_of(s);
	if (!params || !ptr)
		return sem_roles_named(name, s, nptrs, role);
	size_t np = strlen(params);
	int legacy = 0;
	for (int i = 0; i < nptrs; i++) {
		int a = ptr[i].arg;
		char c = a >= 0 && (size_t)a < np ? params[a] : '.';
		role[i] = role_at(c, ptr[i].off, ptr[i].argsize);
		legacy |= c == 'L';
	}
	if (legacy)
		return legacy_data_roles(name, nptrs, ptr, params, role);
	if (!strcmp(s->rule, "torch-multi-tensor-apply"))
		multi_tensor_roles(name, nptrs, ptr, role);
	return 1;
}
