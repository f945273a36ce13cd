/*
 * semantics.h - what a kernel does, from its name: the table-driven op semantics of known
 * kernel families (PyTorch's elementwise, reduction, norm, softmax, index, cat and copy
 * kernels; cuBLAS/cuBLASLt GEMMs; cuDNN convolutions; flash/efficient attention; Triton;
 * NCCL; memcpy/memset). The analyzer asks it which pointer arguments a kernel writes, what
 * its elements are, and how many FLOPs it does. Unknown kernels get FAM_OTHER and conservative
 * roles. CuPy's ufuncs and CUB's reductions, and XLA's fusions by their names (JAX), are rows
 * as well. Pure C, no CUDA headers; every rule is a row of the table in semantics.c with the
 * pattern it matches written above it.
 */
#ifndef AICPROF_SEMANTICS_H
#define AICPROF_SEMANTICS_H

#include <stddef.h>
#include <stdint.h>

enum op_family {
	FAM_OTHER = 0,
	FAM_ELEMENTWISE, /* one output element from the same-index input elements */
	FAM_REDUCTION,   /* sum/mean/max/... over some dimension */
	FAM_NORM,        /* layer norm, RMS norm, batch norm, group norm (and their backward) */
	FAM_SOFTMAX,     /* softmax / log-softmax (and backward) */
	FAM_GEMM,        /* cuBLAS / cuBLASLt / CUTLASS matrix products */
	FAM_CONV,        /* cuDNN convolutions */
	FAM_ATTENTION,   /* flash / memory-efficient / cuDNN attention */
	FAM_INDEX,       /* gather, scatter, index, embedding, cat */
	FAM_COPY,        /* copy kernels, memcpy */
	FAM_MEMSET,      /* fill kernels, memset */
	FAM_OPTIMIZER,   /* multi_tensor_apply (foreach / fused Adam, AdamW, SGD) */
	FAM_TRITON,      /* Triton kernels (torch.compile), op from the generated name */
	FAM_NCCL,        /* NCCL collectives */
	FAM__COUNT
};

enum dtype {
	DT_UNKNOWN = 0,
	DT_F32,
	DT_F16,
	DT_BF16,
	DT_F64,
	DT_I64,
	DT_I32,
	DT_I8,
	DT_U8,
	DT_BOOL,
	DT_FP8
};

/* Role of one pointer argument. */
enum arg_role { ROLE_UNKNOWN = 0, ROLE_READ = 1, ROLE_WRITE = 2, ROLE_READWRITE = 3 };

struct op_sem {
	enum op_family family;
	const char *op;   /* static string: "gelu", "add", "dropout", "layer_norm", "softmax",
	                     "gemm", "sum", "adamw", ...; "unknown" when not known */
	enum dtype dtype; /* element type where the name says (template arguments) */
	int backward;     /* 1 for backward kernels (names with "backward"/"grad") */
	int elementwise_fusible;  /* 1 when the op may join an elementwise chain */
	const char *rule;         /* static string naming the table row that matched
	                             ("torch-vectorized-elementwise") */
	const char *library_form; /* static: the library's fused form where one exists, else NULL */
};

/*
 * Classifies a kernel by its name, mangled (as the trace holds it) or demangled. Always fills
 * *out (FAM_OTHER / "unknown" / rule "none" when nothing matched) and returns its family.
 */
enum op_family sem_classify(const char *name, struct op_sem *out);

/*
 * Fills role[0..nptrs-1] for the nptrs device-pointer arguments of one launch of a kernel
 * classified as *s, in the order the trace lists them (parameter index, then word offset).
 * Returns 1 when the rule is known for this family and pointer count, 0 when the roles are a
 * conservative guess (every pointer ROLE_UNKNOWN). Never reads past role[nptrs-1].
 */
int sem_roles(const struct op_sem *s, int nptrs, unsigned char *role);

/*
 * sem_roles() told the kernel's name (mangled or not; NULL makes it sem_roles()). For ATen's
 * elementwise loops the name gives the size K of the data array ("std::array<char*, 3ul>"),
 * so the pointers a functor captures ahead of the array are told apart from the data; without
 * the name the first pointer is taken as the output. Prefer this where the name is at hand.
 */
int sem_roles_named(const char *name, const struct op_sem *s, int nptrs, unsigned char *role);

/* Where the trace found one pointer: "args"[].i, the "p" entry's offset, that argument's "n". */
struct sem_ptr {
	int arg;          /* index of the kernel parameter that held it */
	unsigned off;     /* its byte offset within that parameter */
	unsigned argsize; /* the parameter's size in bytes */
};

/*
 * sem_roles() by position, the exact form: for the families whose parameter lists are known
 * (ATen's elementwise loops, dropout, layer norm, softmax, reduce, multi_tensor_apply, index
 * select, cat, tril/triu) each pointer's role comes from the parameter that holds it and its
 * offset there, so pointers a functor captures and values that only look like addresses (a
 * pair of 32-bit strides inside a ReduceOp, seen in real traces) are told apart. Such a value
 * gets ROLE_UNKNOWN while the call still returns 1: treat it as no argument. Families without a
 * positional layout fall back to sem_roles_named(name, ...). Never reads past ptr[nptrs - 1]
 * or writes past role[nptrs - 1].
 */
int sem_roles_at(const char *name, const struct op_sem *s, int nptrs, const struct sem_ptr *ptr,
                 unsigned char *role);

/*
 * The most bytes one pointer argument (role: its ROLE_*) of a launch of a kernel classified as
 * *s can touch, from the launch alone: blocks and threads are the launch's totals (grid, and
 * grid x block), esize the element size (0 unknown: 4 is taken). It bounds kernels whose
 * parameters give no extent (CuPy, CUB, XLA fusions, GEMMs, kernels of unknown semantics) where the
 * allocation pointed into is a pool or arena; UINT64_MAX where the launch says nothing
 * (PyTorch's own kernels, whose extents come from their parameters).
 */
/*
 * The most bytes the idx-th pointer (of nptrs, in parameter order) of a launch of s can touch,
 * from the launch's grid and block, where the kernel's layout makes it smaller than its
 * allocation: ATen's reduce_kernel writes num_outputs <= grid.x * block.x * block.y * 4 values
 * through dst and uses grid.x * grid.y * block.x * 4 accumulator slots of its global-reduce
 * buffer, which PyTorch allocates num_outputs / grid.x times larger (ncu measured 0.26 of
 * 32 MiB). UINT64_MAX: no bound beyond the allocation.
 */
uint64_t sem_ptr_bound(const struct op_sem *s, int idx, int nptrs, const int grid[3],
                       const int block[3]);
uint64_t sem_launch_bound(const struct op_sem *s, int role, uint64_t blocks, uint64_t threads,
                          size_t esize);

/* Bytes per element of t (0 when unknown). Static name of t ("bf16"). Family name ("gemm"). */
size_t dtype_size(enum dtype t);
const char *dtype_name(enum dtype t);
const char *family_name(enum op_family f);

/*
 * Demangles an Itanium C++ name into a new string the caller frees; returns a copy of name
 * when it is not mangled or cannot be demangled. short_name() gives the readable short form
 * (function name with template arguments elided: "vectorized_elementwise_kernel<4,
 * GeluCUDAKernelImpl>") as a new string the caller frees.
 */
char *demangle(const char *name);
char *short_name(const char *name);

/*
 * The tensor count of a PyTorch elementwise kernel from its name: the K of
 * "at::detail::Array<char*, K>" when array, else 1 + the arity of the functor's first typed
 * lambda; 0 when unknown. (semantics.c; also used by layout.c)
 */
int elementwise_ntensors(const char *name, int array);

#endif
