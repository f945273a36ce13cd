/*
 * semantics.c - the op semantics of known kernel families, as tables.
 *
 * sem_classify() demangles the name and walks rules[] top to bottom; the first row whose
 * pattern matches wins, so specific rows come before general ones (attention before GEMM,
 * convolution before GEMM, the PyTorch kernels by their own names before the catch-all
 * library rows). A pattern is a small conjunction of substring tests on the demangled name:
 *
 *	"a|b & c & !d"	(a or b) and c and not d: terms separated by " & ", alternatives by '|'
 *	"^x"		x at the start of the base name (the kernel's own name: no return
 *			type, no namespace prefix)
 *	"@N=v"		the kernel's N-th template argument (from 0) is v ("@4=true")
 *
 * Rows flagged R_FUNCTOR (ATen's elementwise loops, reductions, multi_tensor_apply) take
 * their family and op from the second table, functors[], matched the same way (first row
 * wins): the functor names the op, the loop only says how the elements are walked.
 *
 * The element type comes from the name: the functor's first template argument
 * ("CUDAFunctor_add<c10::BFloat16>"), else the first typed lambda ("{lambda(float)#1}"), else
 * the first type among the kernel's own template arguments ("vectorized_layer_norm_kernel<
 * float, float>"); for GEMM, Triton-less library kernels and NCCL, from the dtype tokens
 * vendors put in their names ("bf16", "h" in nvjet_hsh, "_float_").
 *
 * Pointer roles (sem_roles) are a property of the row: each row names a role layout, from the
 * kernel's parameter list in PyTorch's source, written above the layout's code.
 */
#include "analyzer/semantics.h"
#include "lib/util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* row flags */
#define R_BWD     0x01  /* a backward kernel */
#define R_FUSIBLE 0x02  /* may join an elementwise chain */
#define R_FUNCTOR 0x04  /* family and op from functors[] */
#define R_VENDOR  0x08  /* dtype from vendor tokens (GEMM, conv, attention, NCCL) */
#define R_TRITON  0x10  /* op from the Triton kernel name */
#define R_NCCL    0x20  /* op from the NCCL collective's name */
#define R_CUPY    0x40  /* op and dtype from the CuPy ufunc's name */
#define R_XLA     0x80  /* op from the XLA fusion's name */
#define R_CUB     0x100 /* op from the CUB reduction's operator */

/* How the pointer arguments of a row's kernels are used; see sem_roles(). */
enum role_layout {
	RL_NONE = 0,      /* unknown: every pointer ROLE_UNKNOWN, sem_roles returns 0 */
	RL_EW_ARRAY,      /* (N, functor, Array<char*, K> data, ...): data[0] out, data[1..] in */
	RL_EW_LEGACY,     /* elementwise_kernel<nt, vt, lambda>(N, lambda{data, ...}) */
	RL_FIRST_W,       /* first pointer written, the rest read */
	RL_LAST_W,        /* last pointer written, the rest read */
	RL_ALL_W,         /* every pointer written (memset-like) */
	RL_ALL_RW,        /* every pointer read and written (optimizer tensor lists) */
	RL_DROPOUT,       /* (in, out, mask, n, p, philox): R W W, philox pointers R */
	RL_LN_FWD,        /* (N, eps, X, gamma, beta, mean, rstd, Y) */
	RL_LN_MOMENTS,    /* (N, eps, X, mean, rstd) */
	RL_LN_GAMMA_BETA, /* (M, N, dY, X, mean, rstd, dgamma, dbeta) */
	RL_REDUCE,        /* reduce_kernel(ReduceOp{..., src, dst[2], acc_buf, semaphores}) */
	RL_BN_BWD_REDUCE, /* (input, dy, mean, invstd, sum_dy, sum_dy_xmu, dw, db, staging, sem) */
};

struct sem_rule {
	const char *rule; /* the row's name, reported in op_sem.rule */
	const char *pat;  /* pattern on the demangled name (syntax above) */
	enum op_family family;
	const char *op;
	unsigned flags;
	enum role_layout roles;
	const char *library_form;
};

#define LF_GEMM  "cuBLASLt epilogue (bias/GELU/ReLU)"
#define LF_ADAMW "torch.optim.AdamW(fused=True)"
#define LF_SDPA  "torch.nn.functional.scaled_dot_product_attention"

/*
 * The kernel table. Order matters: first match wins.
 */
static const struct sem_rule rules[] = {
    /* --- Triton (torch.compile / Inductor): triton_{poi,red,per,tem}_fused_<ops>_<n> --- */
    {"triton-inductor", "^triton_|^triton__", FAM_TRITON, NULL, R_TRITON, RL_NONE, NULL},

    /* --- NCCL: ncclDevKernel_AllReduce_Sum_bf16_RING_LL (2.19+), ncclKernel_* (older) --- */
    {"nccl", "^ncclDevKernel_|^ncclKernel_|ncclDevKernel_|ncclKernel_", FAM_NCCL, NULL,
     R_NCCL | R_VENDOR, RL_NONE, NULL},

    /* --- CuPy's ufuncs (cupy/_core/_kernel.pyx): extern "C" cupy_<ufunc>__<in types>_<out
     * types>(CArray in..., CArray out..., CIndexer): outputs last ("cupy_tanh__float32_float32",
     * "cupy_multiply__float32_float32_float32") --- */
    {"cupy-ufunc", "^cupy_", FAM_ELEMENTWISE, NULL, R_CUPY | R_FUSIBLE, RL_LAST_W, NULL},
    /* --- CUB's device reductions (cub/device/dispatch/dispatch_reduce.cuh):
     * DeviceReduceKernel<...>(d_in, d_out, num_items, even_share, op, init): one partial per
     * block into d_out; DeviceReduceSingleTileKernel<...>(d_in, d_out, num_items, op, init):
     * the partials to the result. CuPy's cp.sum and Thrust use them --- */
    {"cub-device-reduce", "cub:: & DeviceReduceKernel|DeviceReduceSingleTileKernel", FAM_REDUCTION,
     NULL, R_CUB, RL_LAST_W, NULL},
    /* --- XLA (JAX, TensorFlow) fusions, named by their fusion kind and root op
     * (xla/service/gpu: loop_<op>_fusion[_N], input_<op>_fusion[_N], wrapped_<op>,
     * fusion[_N]); gemm_fusion_dot* are its Triton GEMMs. cuBLAS/CUTLASS GEMMs it calls keep
     * their library rows below --- */
    {"xla-gemm-fusion", "^gemm_fusion_dot|^gemm_fusion", FAM_GEMM, "gemm", R_VENDOR, RL_NONE, NULL},
    {"xla-concatenate-fusion", "^input_concatenate|^loop_concatenate & fusion", FAM_INDEX,
     "xla_concatenate_fusion", 0, RL_NONE, NULL},
    {"xla-reduce-fusion", "^input_|^loop_ & reduce & fusion", FAM_REDUCTION, NULL, R_XLA, RL_NONE,
     NULL},
    {"xla-loop-fusion", "^loop_ & fusion", FAM_ELEMENTWISE, NULL, R_XLA | R_FUSIBLE, RL_NONE, NULL},
    {"xla-wrapped", "^wrapped_", FAM_ELEMENTWISE, NULL, R_XLA | R_FUSIBLE, RL_NONE, NULL},
    {"xla-input-fusion", "^input_ & fusion", FAM_OTHER, NULL, R_XLA, RL_NONE, NULL},
    {"xla-fusion", "^fusion", FAM_OTHER, "xla_fusion", 0, RL_NONE, NULL},
    /* XLA's autotuner (stream_executor/gpu/redzone_allocator_kernel_cuda.cc):
     * RedzoneAllocatorKernelImpl(uint8* redzone, uint8 pattern, uint64 size, uint32* count)
     * checks one byte a thread */
    {"xla-redzone-check", "RedzoneAllocatorKernel", FAM_OTHER, "xla_redzone_check", 0, RL_NONE,
     NULL},
    /* buffer_comparator_kernel.cu: xla_fp_comparison<T>(T* a, T* b, float tol, uint64 n,
     * int* mismatches): one element a thread */
    {"xla-fp-comparison", "xla_fp_comparison", FAM_OTHER, "xla_fp_comparison", 0, RL_NONE, NULL},

    /* --- attention: aten/src/ATen/native/transformers/cuda/flash_attn (pytorch_flash::) --- */
    {"flash-attention-bwd", "pytorch_flash::|flash_ & _bwd_|bwd_kernel", FAM_ATTENTION,
     "flash_attention", R_BWD | R_VENDOR, RL_NONE, NULL},
    {"flash-attention", "pytorch_flash::|flash_fwd|flash::", FAM_ATTENTION, "flash_attention",
     R_VENDOR, RL_NONE, NULL},
    /* transformers/cuda/mem_eff_attention: fmha_cutlassF_* / fmha_cutlassB_*, AttentionKernel */
    {"mem-efficient-attention-bwd", "fmha_cutlassB|AttentionBackwardKernel", FAM_ATTENTION,
     "mem_efficient_attention", R_BWD | R_VENDOR, RL_NONE, NULL},
    {"mem-efficient-attention", "fmha_cutlassF|PyTorchMemEffAttention|fmha_", FAM_ATTENTION,
     "mem_efficient_attention", R_VENDOR, RL_NONE, NULL},
    /* cuDNN's SDPA (cudnn_generated_fort_native_sdpa_*_flash_{f,b}prop_*) */
    {"cudnn-sdpa-bwd", "sdpa|flash_bprop & bprop", FAM_ATTENTION, "cudnn_attention",
     R_BWD | R_VENDOR, RL_NONE, NULL},
    {"cudnn-sdpa", "sdpa|flash_fprop", FAM_ATTENTION, "cudnn_attention", R_VENDOR, RL_NONE, NULL},

    /* --- PyTorch elementwise loops (aten/src/ATen/native/cuda/CUDALoops.cuh, Loops.cuh):
     * vectorized_elementwise_kernel<vec, func_t, array_t>(int N, func_t f, array_t data),
     * unrolled_elementwise_kernel<func_t, array_t, ...>(int N, func_t f, array_t data, ...),
     * vectorized_templated_elementwise_kernel<...> (casting copies),
     * elementwise_kernel<nt, vt, func_t>(int N, func_t f), f a lambda over OffsetCalculator --- */
    {"torch-vectorized-elementwise",
     "vectorized_elementwise_kernel<|vectorized_templated_elementwise_kernel<", FAM_ELEMENTWISE,
     NULL, R_FUNCTOR, RL_EW_ARRAY, NULL},
    {"torch-unrolled-elementwise", "unrolled_elementwise_kernel<", FAM_ELEMENTWISE, NULL, R_FUNCTOR,
     RL_EW_ARRAY, NULL},
    {"torch-elementwise", "^elementwise_kernel<", FAM_ELEMENTWISE, NULL, R_FUNCTOR, RL_EW_LEGACY,
     NULL},

    /* --- Dropout.cu: fused_dropout_kernel_vec<scalar_t, accscalar_t, IndexType, ADims, VEC,
     * mask_t>(TensorInfo a (in), TensorInfo b (out), TensorInfo c (mask), n, p, philox) --- */
    {"torch-fused-dropout", "fused_dropout_kernel", FAM_ELEMENTWISE, "dropout", R_FUSIBLE,
     RL_DROPOUT, NULL},

    /* --- layer_norm_kernel.cu --- */
    /* vectorized_layer_norm_kernel<T, T_ACC[, rms_norm]>(N, eps, X, gamma, beta, mean, rstd, Y) */
    {"torch-vectorized-rms-norm", "vectorized_layer_norm_kernel< & @2=true", FAM_NORM, "rms_norm",
     0, RL_LN_FWD, NULL},
    {"torch-vectorized-layer-norm", "vectorized_layer_norm_kernel<", FAM_NORM, "layer_norm", 0,
     RL_LN_FWD, NULL},
    /* RowwiseMomentsCUDAKernel<T, T_ACC>(N, eps, X, mean, rstd) (also group_norm_kernel.cu) */
    {"torch-rowwise-moments", "RowwiseMomentsCUDAKernel", FAM_NORM, "layer_norm", 0, RL_LN_MOMENTS,
     NULL},
    /* LayerNormForwardCUDAKernel<T, T_ACC>(N, X, mean, rstd, gamma, beta, Y) */
    {"torch-layer-norm-forward", "LayerNormForwardCUDAKernel", FAM_NORM, "layer_norm", 0, RL_LAST_W,
     NULL},
    /* layer_norm_grad_input_kernel[_vectorized]<T, T_ACC>(dY, X, mean, rstd, gamma, dX, N) */
    {"torch-layer-norm-grad-input", "layer_norm_grad_input_kernel", FAM_NORM, "layer_norm_backward",
     R_BWD, RL_LAST_W, NULL},
    /* GammaBetaBackward{Simple,}CUDAKernel{_32x32,Template}<T, T_ACC>(M, N, dY, X, mean, rstd,
     * dgamma, dbeta) */
    {"torch-gamma-beta-backward", "GammaBetaBackward", FAM_NORM, "layer_norm_backward", R_BWD,
     RL_LN_GAMMA_BETA, NULL},
    /* Normalization.cuh, channels last: batch_norm_backward_reduce_channels_last_kernel<
     * PARALLEL_LOADS, T, T_ACC, T_LAYER>(input, grad_output, mean, inv_std, sum_dy,
     * sum_dy_xmu, grad_weight, grad_bias, staging_data, semaphores, int reduction_size, int
     * stride); batch_norm_backward_elemt_channels_last_kernel<...>(grad_output, input, mean,
     * inv_std, weight, sum_dy, sum_dy_xmu[, numel], grad_input, ...): grad_input last */
    {"torch-bn-backward-reduce-cl", "batch_norm_backward_reduce_channels_last_kernel", FAM_NORM,
     "norm_backward", R_BWD, RL_BN_BWD_REDUCE, NULL},
    {"torch-bn-backward-elemt-cl", "batch_norm_backward_elemt_channels_last_kernel", FAM_NORM,
     "norm_backward", R_BWD, RL_LAST_W, NULL},
    /* the rest of layer/group/batch norm's kernels: roles not tabulated */
    {"torch-norm-backward",
     "LayerNormBackward|ComputeInternalGradients|ComputeGradientFusedParams|"
     "batch_norm_backward|GroupNormBackward|Compute1dBackward|layer_norm_grad",
     FAM_NORM, "norm_backward", R_BWD, RL_NONE, NULL},
    {"torch-batch-norm", "batch_norm_|bn_fw_|bn_bw_", FAM_NORM, "batch_norm", 0, RL_NONE, NULL},
    {"torch-group-norm", "GroupNorm|ComputeFusedParamsCUDAKernel", FAM_NORM, "group_norm", 0,
     RL_NONE, NULL},
    /* apex / fused RMS and layer norm (cuApplyLayerNorm, cuApplyRMSNorm) */
    {"apex-rms-norm", "cuApplyRMSNorm|rms_norm|RMSNorm|rmsnorm", FAM_NORM, "rms_norm", 0, RL_NONE,
     NULL},
    {"apex-layer-norm", "cuApplyLayerNorm|cuComputeGradInput|cuComputePartGradGammaBeta", FAM_NORM,
     "layer_norm", 0, RL_NONE, NULL},

    /* --- SoftMax.cu / PersistentSoftmax.cuh: output pointer first in every signature:
     * cunn_SoftMaxForward<ILP, scalar_t, acc_t, out_t, Epilogue>(out, in, classes),
     * softmax_warp_forward<in_t, out_t, acc_t, log2_elements, is_log_softmax, is_masked>(dst,
     * src, ...), cunn_SoftMaxBackward<...>(gradInput, output, gradOutput, classes),
     * softmax_warp_backward<...>(gradInput, grad, output, ...) --- */
    {"torch-log-softmax-backward", "LogSoftMaxBackwardEpilogue", FAM_SOFTMAX,
     "log_softmax_backward", R_BWD, RL_FIRST_W, NULL},
    {"torch-log-softmax-warp-backward", "softmax_warp_backward< & @4=true", FAM_SOFTMAX,
     "log_softmax_backward", R_BWD, RL_FIRST_W, NULL},
    {"torch-softmax-backward", "cunn_SoftMaxBackward|softmax_warp_backward|SoftMaxBackward",
     FAM_SOFTMAX, "softmax_backward", R_BWD, RL_FIRST_W, NULL},
    {"torch-log-softmax", "LogSoftMaxForwardEpilogue", FAM_SOFTMAX, "log_softmax", 0, RL_FIRST_W,
     NULL},
    {"torch-log-softmax-warp", "softmax_warp_forward< & @4=true", FAM_SOFTMAX, "log_softmax", 0,
     RL_FIRST_W, NULL},
    {"torch-softmax", "cunn_SoftMaxForward|softmax_warp_forward|cunn_SpatialSoftMaxForward",
     FAM_SOFTMAX, "softmax", 0, RL_FIRST_W, NULL},
    {"torch-spatial-softmax-backward", "cunn_SpatialSoftMaxBackward", FAM_SOFTMAX,
     "softmax_backward", R_BWD, RL_FIRST_W, NULL},

    /* --- Reduce.cuh: reduce_kernel<nt, output_vec_size, ReduceOp<scalar_t, ops_t, index_t,
     * out_scalar_t, vt0>>(ReduceOp op) --- */
    {"torch-reduce", "^reduce_kernel<", FAM_REDUCTION, NULL, R_FUNCTOR, RL_REDUCE, NULL},
    /* Loss.cu / NLLLoss2d: nll_loss_{forward,backward}_reduce_cuda_kernel_2d */
    {"torch-nll-loss-backward", "nll_loss_backward", FAM_REDUCTION, "nll_loss", R_BWD, RL_NONE,
     NULL},
    {"torch-nll-loss", "nll_loss_forward", FAM_REDUCTION, "nll_loss", 0, RL_NONE, NULL},

    /* --- MultiTensorApply.cuh: multi_tensor_apply_kernel<TensorListMetadata<N>, callable,
     * args...>(TensorListMetadata tl, callable, args...) (fused and foreach optimizers) --- */
    {"torch-multi-tensor-apply", "multi_tensor_apply_kernel", FAM_OPTIMIZER, NULL, R_FUNCTOR,
     RL_ALL_RW, NULL},
    /* ForeachReduceOp.cu: lpnorm_cleanup (grad-norm clipping's second pass) */
    {"torch-foreach-norm", "lpnorm_cleanup", FAM_REDUCTION, "foreach_norm", 0, RL_NONE, NULL},
    /* apex's multi-tensor Adam */
    {"apex-multi-tensor", "multi_tensor_apply|AdamFunctor", FAM_OPTIMIZER, "adam", 0, RL_ALL_RW,
     LF_ADAMW},

    /* --- Indexing.cu, Embedding.cu, Shape.cu --- */
    /* indexSelect{Small,Large}Index<T, IndexType, ...>(TensorInfo dst, src, indices, ...):
     * the embedding forward */
    {"torch-index-select", "indexSelectLargeIndex|indexSelectSmallIndex", FAM_INDEX, "index_select",
     0, RL_FIRST_W, NULL},
    {"torch-embedding-backward",
     "embedding_backward|compute_grad_weight|sum_and_scatter|krn_partials_per_segment|"
     "krn_partial_segment_offset|compute_num_of_partial_segments|renorm_kernel",
     FAM_INDEX, "embedding_backward", R_BWD, RL_NONE, NULL},
    {"torch-embedding", "embedding", FAM_INDEX, "embedding", 0, RL_NONE, NULL},
    /* CatArrayBatchedCopy[_contig|_aligned16_contig|_vectorized]<T, ...>(output, inputs, ...) */
    {"torch-cat", "CatArrayBatchedCopy", FAM_INDEX, "cat", 0, RL_FIRST_W, NULL},
    /* index_elementwise_kernel<nt, vt, gpu_index_kernel lambda>: index, index_put */
    {"torch-index-put", "index_elementwise_kernel & index_put|put_kernel", FAM_INDEX, "index_put",
     0, RL_NONE, NULL},
    {"torch-index",
     "index_elementwise_kernel|indexFuncLargeIndex|indexFuncSmallIndex|"
     "index_add|scatter_gather_elementwise_kernel|_scatter_gather",
     FAM_INDEX, "index", 0, RL_NONE, NULL},
    /* TriangularOps.cu: triu_tril_kernel<scalar_t, IndexType, upper, elements_per_thread,
     * inplace>(TensorInfo result, TensorInfo self, k, N, ...) */
    {"torch-triu", "triu_tril_kernel< & @2=true", FAM_ELEMENTWISE, "triu", R_FUSIBLE, RL_FIRST_W,
     NULL},
    {"torch-tril", "triu_tril_kernel<", FAM_ELEMENTWISE, "tril", R_FUSIBLE, RL_FIRST_W, NULL},

    /* --- random numbers (DistributionTemplates.h): distribution_elementwise_grid_stride_kernel,
     * distribution_nullary_kernel; bernoulli_tensor_cuda_kernel --- */
    {"torch-random",
     "distribution_elementwise_grid_stride_kernel|distribution_nullary_kernel|"
     "bernoulli_tensor_cuda_kernel|randperm",
     FAM_ELEMENTWISE, "random", R_FUSIBLE, RL_NONE, NULL},

    /* --- the old copy/apply templates (CUDAApplyUtils.cuh): kernelPointwiseApply2 --- */
    {"torch-pointwise-apply", "kernelPointwiseApply", FAM_ELEMENTWISE, NULL, R_FUNCTOR, RL_NONE,
     NULL},

    /* --- cuDNN convolutions (before GEMM: their implicit GEMMs say "gemm") --- */
    {"cudnn-conv-bwd", "dgrad|wgrad|convolve_dgrad|convolve_wgrad|bprop", FAM_CONV, "conv_backward",
     R_BWD | R_VENDOR, RL_NONE, NULL},
    {"cudnn-conv",
     "fprop|implicit_convolve|implicit_gemm|winograd|conv2d|conv1d|conv3d|convolve|"
     "xmma_cudnn|cudnn::|cutlass_cudnn|depthwise|scudnn",
     FAM_CONV, "conv", R_VENDOR, RL_NONE, NULL},
    {"cudnn-layout", "nchwToNhwcKernel|nhwcToNchwKernel|nchwToNchw", FAM_COPY, "layout", 0, RL_NONE,
     NULL},

    /* --- cuBLAS / cuBLASLt / CUTLASS GEMMs (names from the libraries, not from PyTorch):
     * sm90_xmma_gemm_*, nvjet_*, cutlass*gemm*, ampere_*gemm*, gemv*, splitKreduce --- */
    /* the second pass of a split-K GEMM (cublasLt::splitKreduce_kernel<...>): before the GEMM
     * rows, whose "cublas" it also contains */
    {"cublas-splitk-reduce", "splitKreduce_kernel|reduce_1Block_kernel", FAM_GEMM,
     "gemm_splitk_reduce", R_VENDOR, RL_NONE, NULL},
    /* a GEMM whose name says it applies a GELU or bias epilogue (cuBLASLt's *_gelu_*,
     * *_bias_* kernels). Not "relu": cuBLAS picks cutlass_80_tensorop_*_s16816gemm_relu_*
     * kernels for plain matmuls (pytorch/pytorch#181718 lists them), so "relu" in a CUTLASS
     * name is the kernel family, not an applied epilogue */
    {"cublas-gemm-epilogue", "gemm|nvjet_|cutlass|gemv|xmma & gelu|bias|Gelu|Bias|GELU|BIAS",
     FAM_GEMM, "gemm", R_VENDOR, RL_NONE, NULL},
    {"cublas-gemm",
     "gemm|nvjet_|sgemm|hgemm|gemv|gemmk1|gemmSN|xmma_|cutlass::Kernel|"
     "cutlass_|cublas|dot_kernel",
     FAM_GEMM, "gemm", R_VENDOR, RL_NONE, LF_GEMM},

    /* --- libraries' own memset kernels (names starting "memset"): their only pointer is the
     * one they write. A user kernel named "fill_kernel" is not assumed to be one --- */
    {"memset", "^memset", FAM_MEMSET, "fill", R_FUSIBLE, RL_ALL_W, NULL},
};

/* Functor table row: pattern on the demangled name, the family and op it gives. */
struct functor_rule {
	const char *pat;
	enum op_family family;
	const char *op;
	unsigned flags;  /* R_BWD, R_FUSIBLE */
	const char *key; /* where the dtype is read: key '<' first template argument; NULL: none */
};

#define EW  FAM_ELEMENTWISE
#define EWF R_FUSIBLE

/*
 * Functors, lambdas' enclosing functions and reduction ops, first match wins. Each comes from
 * the ATen file named above it (aten/src/ATen/native/cuda/).
 */
static const struct functor_rule functors[] = {
    /* ActivationGeluKernel.cu: GeluBackwardCUDAKernelImpl, GeluCUDAKernelImpl; the first
     * dispatch lambda ({lambda()#1}) is GeluType::Tanh, the second the erf form (the lambdas
     * nested in it number the dtypes) */
    {"GeluBackwardCUDAKernelImpl & GeluType)::{lambda()#1}", EW, "gelu_tanh_backward", EWF | R_BWD,
     NULL},
    {"GeluBackwardCUDAKernelImpl", EW, "gelu_backward", EWF | R_BWD, NULL},
    {"GeluCUDAKernelImpl & GeluType)::{lambda()#1}", EW, "gelu_tanh", EWF, NULL},
    /* later versions name the two forms as functors: GeluTanhFunctor, GeluErfFunctor */
    {"GeluTanhFunctor", EW, "gelu_tanh", EWF, "GeluTanhFunctor"},
    {"GeluErfFunctor", EW, "gelu", EWF, "GeluErfFunctor"},
    {"GeluCUDAKernelImpl", EW, "gelu", EWF, NULL},
    /* ActivationSiluKernel.cu, ActivationThresholdKernel.cu (relu's backward),
     * UnarySignKernels.cu, UnaryOpsKernel.cu, UnarySpecialOpsKernel.cu, UnaryGeometric... */
    {"silu_backward_kernel", EW, "silu_backward", EWF | R_BWD, NULL},
    {"::silu_kernel", EW, "silu", EWF, NULL},
    {"::threshold_kernel", EW, "relu_backward", EWF | R_BWD, NULL},
    {"clamp_min_scalar_kernel|::relu_kernel", EW, "relu", EWF, NULL},
    {"clamp_scalar_kernel|::clamp_kernel|clamp_max_scalar|clamp_min_kernel|clamp_max_kernel", EW,
     "clamp", EWF, NULL},
    {"sigmoid_backward", EW, "sigmoid_backward", EWF | R_BWD, NULL},
    {"::sigmoid_kernel", EW, "sigmoid", EWF, NULL},
    {"tanh_backward", EW, "tanh_backward", EWF | R_BWD, NULL},
    {"::tanh_kernel", EW, "tanh", EWF, NULL},
    {"::exp_kernel", EW, "exp", EWF, NULL},
    {"::log_kernel", EW, "log", EWF, NULL},
    {"::neg_kernel", EW, "neg", EWF, NULL},
    {"::rsqrt_kernel", EW, "rsqrt", EWF, NULL},
    {"::sqrt_kernel", EW, "sqrt", EWF, NULL},
    {"::reciprocal_kernel", EW, "reciprocal", EWF, NULL},
    {"::abs_kernel", EW, "abs", EWF, NULL},
    {"pow_tensor_scalar_kernel|pow_tensor_tensor_kernel|pow_kernel", EW, "pow", EWF, NULL},
    {"hardswish|hardsigmoid|hardtanh|leaky_relu|::elu_kernel|softplus|::mish_kernel", EW,
     "activation", EWF, NULL},
    /* Dropout.cu: masked_scale_kernel (dropout's backward; old fallback forward) */
    {"masked_scale_kernel", EW, "dropout_backward", EWF | R_BWD, NULL},
    /* BinaryAddSubKernel / ufunc: CUDAFunctor_add, CUDAFunctorOnSelf_add, CUDAFunctorOnOther_add
     * (sub is add with alpha -1) */
    {"CUDAFunctor_add|CUDAFunctorOnSelf_add|CUDAFunctorOnOther_add", EW, "add", EWF, "Functor"},
    /* BinaryMulKernel.cu / BinaryInternal.h: binary_internal::MulFunctor, DivFunctor */
    {"MulFunctor", EW, "mul", EWF, "MulFunctor"},
    {"DivFunctor|div_true_kernel|div_trunc_kernel|div_floor_kernel", EW, "div", EWF, "DivFunctor"},
    {"::sub_kernel|SubFunctor", EW, "sub", EWF, NULL},
    {"::maximum_kernel|::minimum_kernel|::fmax_kernel|::fmin_kernel", EW, "max", EWF, NULL},
    {"mse_backward", EW, "mse_loss_backward", EWF | R_BWD, NULL},
    {"::mse_kernel", EW, "mse_loss", EWF, NULL},
    {"smooth_l1|::huber_kernel|::l1_kernel", EW, "loss", EWF, NULL},
    {"lerp_kernel|addcmul_cuda_kernel|addcdiv_cuda_kernel", EW, "pointwise", EWF, NULL},
    /* where / masked_fill (TensorCompare.cu, Indexing.cu) */
    {"::masked_fill_kernel", EW, "masked_fill", EWF, NULL},
    {"::where_kernel", EW, "where", EWF, NULL},
    {"::eq_kernel|::ne_kernel|::lt_kernel|::le_kernel|::gt_kernel|::ge_kernel|"
     "CompareFunctor|CompareEqFunctor|::compare_",
     EW, "compare", EWF, NULL},
    {"::logical_not|::logical_and|::logical_or|::bitwise_", EW, "logical", EWF, NULL},
    /* FillKernel.cu: FillFunctor<scalar_t> */
    {"FillFunctor", FAM_MEMSET, "fill", EWF, "FillFunctor"},
    /* Copy.cu: direct_copy_kernel_cuda; the dedicated casting copies; a copy whose loader or
     * storer casts (LoadWithCast, StoreWithCast, vectorized_templated, gpu_kernel_impl<...>) */
    {"bfloat16_copy_kernel_cuda|float16_copy_kernel_cuda|float8_copy_kernel_cuda|"
     "reduced_float_copy",
     FAM_COPY, "cast", EWF, NULL},
    {"direct_copy_kernel_cuda|::copy_kernel & WithCast|vectorized_templated", FAM_COPY, "cast", EWF,
     NULL},
    {"direct_copy_kernel_cuda|::copy_kernel & gpu_kernel_impl<", FAM_COPY, "cast", EWF, NULL},
    {"direct_copy_kernel_cuda|::copy_kernel", FAM_COPY, "copy", EWF, NULL},

    /* ReduceSumProdKernel.cu, ReduceMomentKernel.cu, ReduceMaxValuesKernel.cu, ...: the
     * reduction's ops type in ReduceOp<scalar_t, ops_t, ...> */
    {"MeanOps", FAM_REDUCTION, "mean", 0, "ReduceOp"},
    {"sum_functor|SumOps|::sum_kernel", FAM_REDUCTION, "sum", 0, "ReduceOp"},
    {"prod_functor|::prod_kernel", FAM_REDUCTION, "prod", 0, "ReduceOp"},
    {"WelfordOps|std_var|var_mean", FAM_REDUCTION, "var", 0, "ReduceOp"},
    {"NormOps|NormZeroOps|NormOneOps|NormTwoOps|AbsMaxOps|::norm_kernel", FAM_REDUCTION, "norm", 0,
     "ReduceOp"},
    {"ArgMaxOps|::argmax", FAM_REDUCTION, "argmax", 0, "ReduceOp"},
    {"ArgMinOps|::argmin", FAM_REDUCTION, "argmin", 0, "ReduceOp"},
    {"MaxNanFunctor|MaxOps|::max_values|::max_kernel|::max_all", FAM_REDUCTION, "max", 0,
     "ReduceOp"},
    {"MinNanFunctor|MinOps|::min_values|::min_kernel|::min_all", FAM_REDUCTION, "min", 0,
     "ReduceOp"},
    {"::and_kernel|::or_kernel|LogicalAnd|LogicalOr", FAM_REDUCTION, "all_any", 0, "ReduceOp"},

    /* FusedAdamWKernel.cu / fused_adam_impl.cu: FusedAdamMathFunctor<scalar_t, depth,
     * ADAM_MODE mode, amsgrad>, mode 1 = ADAMW; FusedSgdKernel.cu: FusedSgdMathFunctor */
    {"FusedAdamMathFunctor & ADAM_MODE)1|ADAMW", FAM_OPTIMIZER, "adamw", 0, "FusedAdamMathFunctor"},
    {"FusedAdamMathFunctor", FAM_OPTIMIZER, "adam", 0, "FusedAdamMathFunctor"},
    {"FusedSgdMathFunctor", FAM_OPTIMIZER, "sgd", 0, "FusedSgdMathFunctor"},
    /* AmpKernels.cu: _amp_foreach_non_finite_check_and_unscale_cuda_ */
    {"amp_foreach_non_finite_check|amp_non_finite_check", FAM_OPTIMIZER, "amp_unscale", 0, NULL},
    /* ForeachFunctors.cuh: the foreach ops torch.optim uses (foreach=True, the default) */
    {"LpNormFunctor|lpnorm", FAM_REDUCTION, "foreach_norm", 0, "LpNormFunctor"},
    {"PointwiseOpScalarFunctor|PointwiseOpScalarListFunctor|PointwiseOpListFunctor", FAM_OPTIMIZER,
     "foreach_pointwise", 0, "Functor"},
    {"TernaryOpScalarFunctor|TernaryOpListFunctor|LerpFunctor", FAM_OPTIMIZER, "foreach_lerp", 0,
     "Functor"},
    {"BinaryOpListAlphaFunctor|BinaryOpScalarTensorFunctor", FAM_OPTIMIZER, "foreach_add", 0,
     "Functor"},
    {"BinaryOpScalarFunctor|BinaryOpScalarListFunctor|BinaryOpListFunctor", FAM_OPTIMIZER,
     "foreach_binary", 0, "Functor"},
    {"UnaryOpFunctor", FAM_OPTIMIZER, "foreach_unary", 0, "UnaryOpFunctor"},
    {"ZeroFunctor", FAM_OPTIMIZER, "foreach_zero", 0, "ZeroFunctor"},
    {"CopyFunctor", FAM_OPTIMIZER, "foreach_copy", 0, "CopyFunctor"},
};

/* ---------------------------------------------------------------- patterns */

static int has_sub(const char *hay, const char *needle, size_t n)
{
	if (!n)
		return 1;
	for (const char *p = hay; (p = strchr(p, needle[0])); p++)
		if (!strncmp(p, needle, n))
			return 1;
	return 0;
}

/* Whether the idx-th depth-0 template argument of the kernel named at base is v[0..n). */
static int template_arg_is(const char *base, int idx, const char *v, size_t n)
{
	const char *p = base;
	while (*p && *p != '<' && *p != '(')
		p++;
	if (*p != '<')
		return 0;
	int depth = 0, i = 0;
	const char *arg = p + 1;
	for (; *p; p++) {
		if (*p == '<' || *p == '(' || *p == '{' || *p == '[') {
			depth++;
		} else if (*p == '>' || *p == ')' || *p == '}' || *p == ']') {
			depth--;
		} else if (*p == ',' && depth == 1) {
			if (i == idx)
				break;
			i++;
			arg = p + 1;
			continue;
		}
		if (depth == 0)
			break;
	}
	if (i != idx || !*p)
		return 0;
	while (*arg == ' ')
		arg++;
	const char *end = p;
	while (end > arg && end[-1] == ' ')
		end--;
	return (size_t)(end - arg) == n && !strncmp(arg, v, n);
}

/* One alternative: "^x" (prefix of base), "@N=v" (template argument) or "x" (substring). */
static int alt_match(const char *a, size_t n, const char *name, const char *base)
{
	while (n && *a == ' ')
		a++, n--;
	while (n && a[n - 1] == ' ')
		n--;
	if (!n)
		return 0;
	if (*a == '^')
		return !strncmp(base, a + 1, n - 1);
	if (*a == '@' && n > 3 && isdigit((unsigned char)a[1]) && a[2] == '=')
		return template_arg_is(base, a[1] - '0', a + 3, n - 3);
	return has_sub(name, a, n);
}

/* A term: alternatives separated by '|', optionally negated by a leading '!'. */
static int term_match(const char *t, size_t n, const char *name, const char *base)
{
	while (n && *t == ' ')
		t++, n--;
	int neg = n && *t == '!';
	if (neg)
		t++, n--;
	int any = 0;
	while (n && !any) {
		const char *bar = memchr(t, '|', n);
		size_t k = bar ? (size_t)(bar - t) : n;
		any = alt_match(t, k, name, base);
		t += k;
		n -= k;
		if (n)
			t++, n--;
	}
	return neg ? !any : any;
}

/*
 * Pattern match: every '&'-separated term must hold. A literal ' & ' inside an alternative is
 * not supported (no kernel name needs it); "& " with no space before is a term separator too.
 */
static int pat_match(const char *pat, const char *name, const char *base)
{
	const char *p = pat;
	for (;;) {
		const char *amp = strstr(p, " & ");
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		if (!term_match(p, n, name, base))
			return 0;
		if (!amp)
			return 1;
		p = amp + 3;
	}
}

/* ---------------------------------------------------------------- dtypes */

struct dtype_word {
	const char *word;
	enum dtype t;
};

/* C++ spellings, longest first where one is a prefix of another */
static const struct dtype_word cxx_types[] = {
    {"c10::BFloat16", DT_BF16},
    {"c10::Half", DT_F16},
    {"c10::Float8_e4m3fn", DT_FP8},
    {"c10::Float8_e5m2", DT_FP8},
    {"c10::Float8", DT_FP8},
    {"BFloat16", DT_BF16},
    {"__nv_bfloat16", DT_BF16},
    {"Half", DT_F16},
    {"__half", DT_F16},
    {"float", DT_F32},
    {"double", DT_F64},
    {"unsigned char", DT_U8},
    {"signed char", DT_I8},
    {"long long", DT_I64},
    {"long", DT_I64},
    {"int", DT_I32},
    {"bool", DT_BOOL},
};

/* The dtype a C++ type spelled at s starts with (a whole word), or DT_UNKNOWN. */
static enum dtype cxx_dtype_at(const char *s)
{
	while (*s == ' ')
		s++;
	if (!strncmp(s, "const ", 6))
		s += 6;
	for (size_t i = 0; i < ARRAY_SIZE(cxx_types); i++) {
		size_t n = strlen(cxx_types[i].word);
		if (!strncmp(s, cxx_types[i].word, n) && !isalnum((unsigned char)s[n]) &&
		    s[n] != '_' && s[n] != ':')
			return cxx_types[i].t;
	}
	return DT_UNKNOWN;
}

/* First dtype among the depth-0 template arguments starting at lt (pointing at '<'). */
static enum dtype first_type_arg(const char *lt)
{
	int depth = 0;
	const char *arg = lt + 1;
	for (const char *p = lt; *p; p++) {
		if (*p == '<' || *p == '(' || *p == '{' || *p == '[') {
			depth++;
		} else if (*p == '>' || *p == ')' || *p == '}' || *p == ']') {
			if (--depth == 0) {
				return cxx_dtype_at(arg);
			}
		} else if (*p == ',' && depth == 1) {
			enum dtype t = cxx_dtype_at(arg);
			if (t != DT_UNKNOWN)
				return t;
			arg = p + 1;
		}
	}
	return DT_UNKNOWN;
}

/* dtype from the first "{lambda(TYPE" with a typed parameter; the loop's "(int)" index
 * lambda of gpu_kernel_impl is skipped */
static enum dtype lambda_dtype(const char *name)
{
	for (const char *p = name; (p = strstr(p, "{lambda(")); p++) {
		const char *a = p + 8;
		if (*a == ')' || !strncmp(a, "int)", 4))
			continue;
		enum dtype t = cxx_dtype_at(a);
		if (t != DT_UNKNOWN)
			return t;
	}
	return DT_UNKNOWN;
}

/* The kernel's own template arguments: the first '<' of the base name. */
static enum dtype kernel_template_dtype(const char *base)
{
	const char *lt = strchr(base, '<');
	const char *paren = strchr(base, '(');
	if (!lt || (paren && paren < lt && strncmp(paren, "(anonymous", 10)))
		return DT_UNKNOWN;
	return first_type_arg(lt);
}

/* Vendor tokens in library kernel names, matched on a lower-cased copy. */
static const struct dtype_word vendor_types[] = {
    {"e4m3", DT_FP8},      {"e5m2", DT_FP8},   {"fp8", DT_FP8},       {"bf16", DT_BF16},
    {"bfloat16", DT_BF16}, {"tf32", DT_F32},   {"fp16", DT_F16},      {"f16", DT_F16},
    {"half", DT_F16},      {"h16816", DT_F16}, {"h1688", DT_F16},     {"hgemm", DT_F16},
    {"f64", DT_F64},       {"double", DT_F64}, {"dgemm", DT_F64},     {"f32", DT_F32},
    {"float", DT_F32},     {"sgemm", DT_F32},  {"s1688gemm", DT_F32}, {"int8", DT_I8},
    {"i8", DT_I8},         {"_u8", DT_U8},     {"uint8", DT_U8},      {"int32", DT_I32},
    {"i32", DT_I32},       {"int64", DT_I64},  {"i64", DT_I64},
};

/*
 * nvjet_[smNN_]<a><c><d>_...: a = A/B element type (h half, t bfloat16, s single, q fp8, d
 * double); CUDA 13's cuBLAS puts the architecture first ("nvjet_sm90_tst_...", recorded with a
 * bf16 model on an H200)
 */
static enum dtype nvjet_dtype(const char *base)
{
	const char *p = strstr(base, "nvjet_");
	if (!p)
		return DT_UNKNOWN;
	p += 6;
	if (p[0] == 's' && p[1] == 'm' && isdigit((unsigned char)p[2])) {
		p += 2;
		while (isalnum((unsigned char)*p))
			p++;
		if (*p == '_')
			p++;
	}
	switch (*p) {
	case 'h':
		return DT_F16;
	case 't':
		return DT_BF16;
	case 's':
		return DT_F32;
	case 'q':
	case 'e':
		return DT_FP8;
	case 'd':
		return DT_F64;
	case 'i':
		return DT_I8;
	}
	return DT_UNKNOWN;
}

static enum dtype vendor_dtype(const char *name)
{
	enum dtype t = nvjet_dtype(name);
	if (t != DT_UNKNOWN)
		return t;
	size_t n = strlen(name);
	if (n > 4096)
		n = 4096;
	char low[4097];
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	low[n] = '\0';
	const char *best = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(vendor_types); i++) {
		const char *p = strstr(low, vendor_types[i].word);
		if (p && (!best || p < best)) {
			best = p;
			t = vendor_types[i].t;
		}
	}
	return best ? t : DT_UNKNOWN;
}

/* ---------------------------------------------------------------- interned op names */

/* Ops built from a name (Triton's fused op lists) live here for the life of the process. */
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static char **interned;
static size_t nr_interned, alloc_interned;

static const char *intern(const char *s, size_t n)
{
	const char *r = NULL;
	pthread_mutex_lock(&intern_lock);
	for (size_t i = 0; i < nr_interned && !r; i++)
		if (strlen(interned[i]) == n && !strncmp(interned[i], s, n))
			r = interned[i];
	if (!r) {
		ALLOC_GROW(interned, nr_interned + 1, alloc_interned);
		char *c = xmalloc(n + 1);
		memcpy(c, s, n);
		c[n] = '\0';
		interned[nr_interned++] = c;
		r = c;
	}
	pthread_mutex_unlock(&intern_lock);
	return r;
}

/*
 * Triton (Inductor) names: triton_<kind>_fused_<op>_<op>..._<n>, kind poi (pointwise), red
 * (reduction), per (persistent reduction), tem (template: GEMM, attention), "triton_" + other
 * for hand-written ones. The op is the fused list ("add_gelu"), without the kernel number.
 */
static void classify_triton(const char *base, struct op_sem *out)
{
	const char *p = base + 7; /* after "triton_" */
	if (*p == '_')
		p++;
	size_t n = strcspn(p, "(<");
	const char *kind = p;
	int poi = !strncmp(kind, "poi_", 4),
	    red = !strncmp(kind, "red_", 4) || !strncmp(kind, "per_", 4),
	    tem = !strncmp(kind, "tem_", 4);
	if (poi || red || tem) {
		p += 4;
		n -= 4;
	}
	if (!strncmp(p, "fused_", 6)) {
		p += 6;
		n -= 6;
	}
	/* drop the trailing kernel number */
	size_t e = n;
	while (e && isdigit((unsigned char)p[e - 1]))
		e--;
	if (e && e < n && p[e - 1] == '_')
		n = e - 1;
	if (n == 0 || n > 200)
		out->op = "fused";
	else
		out->op = intern(p, n);
	out->elementwise_fusible = poi;
	if (has_sub(base, "backward", 8))
		out->backward = 1;
	if (tem && (has_sub(base, "mm", 2) || has_sub(base, "addmm", 5)))
		out->library_form = NULL;
}

/*
 * CuPy ufunc names: cupy_<ufunc>__<dtype>_<dtype>...; the op is the ufunc in the analyzer's
 * words where they differ (multiply: mul), else the ufunc's own name; the element type is the
 * first dtype token.
 */
static const struct {
	const char *ufunc, *op;
} cupy_ops[] = {
    {"multiply", "mul"}, {"subtract", "sub"}, {"true_divide", "div"}, {"divide", "div"},
    {"negative", "neg"}, {"maximum", "max"},  {"minimum", "min"},     {"power", "pow"},
    {"absolute", "abs"}, {"copy", "copy"},
};

static const struct dtype_word cupy_types[] = {
    {"float32", DT_F32},   {"float16", DT_F16}, {"float64", DT_F64},
    {"bfloat16", DT_BF16}, {"int64", DT_I64},   {"int32", DT_I32},
    {"int8", DT_I8},       {"uint8", DT_U8},    {"bool", DT_BOOL},
};

static void classify_cupy(const char *base, struct op_sem *out)
{
	const char *p = base + 5; /* after "cupy_" */
	const char *sep = strstr(p, "__");
	size_t n = sep ? (size_t)(sep - p) : strcspn(p, "(<");
	out->op = n && n < 100 ? intern(p, n) : "elementwise";
	for (size_t i = 0; i < ARRAY_SIZE(cupy_ops); i++)
		if (strlen(cupy_ops[i].ufunc) == n && !strncmp(p, cupy_ops[i].ufunc, n))
			out->op = cupy_ops[i].op;
	if (!strcmp(out->op, "copy"))
		out->family = FAM_COPY;
	if (sep)
		for (size_t i = 0; i < ARRAY_SIZE(cupy_types); i++) {
			size_t w = strlen(cupy_types[i].word);
			if (!strncmp(sep + 2, cupy_types[i].word, w) &&
			    (sep[2 + w] == '_' || sep[2 + w] == '\0')) {
				out->dtype = cupy_types[i].t;
				break;
			}
		}
}

/*
 * XLA fusion names: <kind>_<root op>[_<op>...]_fusion[_N]; the op is "xla_" + the name
 * without its number ("xla_loop_multiply_fusion"), so findings name XLA's own fusions.
 */
static void classify_xla(const char *base, struct op_sem *out)
{
	size_t n = strcspn(base, "(<");
	size_t e = n;
	while (e && isdigit((unsigned char)base[e - 1]))
		e--;
	if (e && e < n && base[e - 1] == '_')
		n = e - 1;
	char buf[128];
	if (n == 0 || n + 5 > sizeof(buf)) {
		out->op = "xla_fusion";
		return;
	}
	memcpy(buf, "xla_", 4);
	memcpy(buf + 4, base, n);
	out->op = intern(buf, n + 4);
}

/* CUB reductions: the operator in the template arguments (cuda::std::plus: sum) */
static const char *cub_op(const char *name)
{
	if (strstr(name, "plus<") || strstr(name, "Sum"))
		return "sum";
	if (strstr(name, "maximum<") || strstr(name, "Max"))
		return "max";
	if (strstr(name, "minimum<") || strstr(name, "Min"))
		return "min";
	if (strstr(name, "multiplies<"))
		return "prod";
	return "reduce";
}

/* NCCL: ncclDevKernel_<Coll>_<RedOp>_<type>_<algo>_<proto>, ncclKernel_<Coll>_... */
static const struct {
	const char *word;
	const char *op;
} nccl_ops[] = {
    {"AllReduce", "all_reduce"},
    {"ReduceScatter", "reduce_scatter"},
    {"AllGather", "all_gather"},
    {"Broadcast", "broadcast"},
    {"SendRecv", "send_recv"},
    {"AllToAll", "all_to_all"},
    {"Reduce", "reduce"},
    {"Send", "send"},
    {"Recv", "recv"},
};

static const char *nccl_op(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(nccl_ops); i++)
		if (strstr(name, nccl_ops[i].word))
			return nccl_ops[i].op;
	return "collective";
}

/* ---------------------------------------------------------------- classification */

/*
 * The kernel's own name within the demangled d: after the return type ("void ",
 * "std::enable_if<...>::type ") and the namespaces, up to the end. Scans to the parameter
 * list (the first depth-0 '(' that is not "(anonymous namespace)").
 */
static const char *base_of(const char *d)
{
	static const char anon[] = "(anonymous namespace)";
	const char *base = d;
	int depth = 0;
	for (const char *p = d; *p; p++) {
		if (depth == 0 && *p == '(' && !strncmp(p, anon, sizeof(anon) - 1)) {
			p += sizeof(anon) - 2;
			continue;
		}
		if (depth == 0 && *p == '(')
			break;
		if (*p == '<' || *p == '(' || *p == '{' || *p == '[')
			depth++;
		else if ((*p == '>' || *p == ')' || *p == '}' || *p == ']') && depth > 0)
			depth--;
		else if (depth == 0 && *p == ':' && p[1] == ':')
			base = p + 2;
		else if (depth == 0 && *p == ' ')
			base = p + 1;
	}
	return base;
}

/* Global backward markers, for rows that do not say. */
static int looks_backward(const char *name)
{
	return has_sub(name, "backward", 8) || has_sub(name, "Backward", 8) ||
	       has_sub(name, "_bwd", 4) || has_sub(name, "bprop", 5) || has_sub(name, "dgrad", 5) ||
	       has_sub(name, "wgrad", 5) || has_sub(name, "_grad_", 6) || has_sub(name, "Grad", 4);
}

static void sem_clear(struct op_sem *out)
{
	out->family = FAM_OTHER;
	out->op = "unknown";
	out->dtype = DT_UNKNOWN;
	out->backward = 0;
	out->elementwise_fusible = 0;
	out->rule = "none";
	out->library_form = NULL;
}

/* dtype of a functor-loop kernel: the functor's own type argument, a lambda's, the loop's */
static enum dtype functor_dtype(const struct functor_rule *f, const char *name, const char *base)
{
	enum dtype t = DT_UNKNOWN;
	if (f && f->key) {
		const char *k = strstr(name, f->key);
		if (k) {
			const char *lt = k + strcspn(k, "< ,>()");
			if (*lt == '<')
				t = first_type_arg(lt);
		}
	}
	if (t == DT_UNKNOWN)
		t = lambda_dtype(name);
	if (t == DT_UNKNOWN) {
		/* functor structs: "...Functor<float>" anywhere */
		for (const char *p = name; (p = strstr(p, "Functor")); p++) {
			const char *q = p + 7;
			while (*q == '_' || isalnum((unsigned char)*q))
				q++;
			if (*q == '<' && (t = first_type_arg(q)) != DT_UNKNOWN)
				break;
		}
	}
	if (t == DT_UNKNOWN)
		t = kernel_template_dtype(base);
	return t;
}

/* Whether a functor row may name the op of a loop of family loop (first pass). */
static int functor_fits(enum op_family loop, enum op_family f)
{
	if (loop == FAM_ELEMENTWISE)
		return f == FAM_ELEMENTWISE || f == FAM_MEMSET || f == FAM_COPY;
	return f == loop;
}

/*
 * The functor row for a loop kernel: searched in the kernel's own name and template arguments
 * (base: the return type, which may repeat a functor as in "std::enable_if<!Functor::...>",
 * is not looked at), first among the rows of the loop's own family, then among all.
 */
static const struct functor_rule *find_functor(enum op_family loop, const char *base)
{
	for (int pass = 0; pass < 2; pass++)
		for (size_t j = 0; j < ARRAY_SIZE(functors); j++)
			if ((pass || functor_fits(loop, functors[j].family)) &&
			    pat_match(functors[j].pat, base, base))
				return &functors[j];
	return NULL;
}

static void classify_demangled(const char *name, struct op_sem *out)
{
	const char *base = base_of(name);
	for (size_t i = 0; i < ARRAY_SIZE(rules); i++) {
		const struct sem_rule *r = &rules[i];
		if (!pat_match(r->pat, name, base))
			continue;
		out->family = r->family;
		out->op = r->op ? r->op : "unknown";
		out->rule = r->rule;
		out->library_form = r->library_form;
		out->backward = !!(r->flags & R_BWD);
		out->elementwise_fusible = !!(r->flags & R_FUSIBLE);
		if (r->flags & R_TRITON) {
			classify_triton(base, out);
			return;
		}
		if (r->flags & R_CUPY) {
			classify_cupy(base, out);
			return;
		}
		if (r->flags & R_XLA) {
			classify_xla(base, out);
			return;
		}
		if (r->flags & R_CUB) {
			out->op = cub_op(name);
			out->dtype = kernel_template_dtype(base);
			return;
		}
		if (r->flags & R_NCCL)
			out->op = nccl_op(base);
		if (r->flags & R_VENDOR) {
			out->dtype = vendor_dtype(base);
			if (out->family != FAM_NCCL && looks_backward(base))
				out->backward = 1;
			return;
		}
		const struct functor_rule *f = NULL;
		if (r->flags & R_FUNCTOR) {
			f = find_functor(r->family, base);
			if (f) {
				out->family = f->family;
				out->op = f->op;
				out->backward = !!(f->flags & R_BWD);
				out->elementwise_fusible = !!(f->flags & R_FUSIBLE);
			} else if (r->family == FAM_ELEMENTWISE) {
				/* an elementwise loop over a functor we do not know */
				out->op = "elementwise";
				out->elementwise_fusible = 1;
			} else if (r->family == FAM_REDUCTION) {
				out->op = "reduce";
			} else if (r->family == FAM_OPTIMIZER) {
				out->op = "foreach";
			}
			if (out->family == FAM_OPTIMIZER && out->op &&
			    (!strncmp(out->op, "foreach", 7) || !strcmp(out->op, "adam")))
				out->library_form = LF_ADAMW;
			out->dtype = functor_dtype(f, base, base);
		} else {
			out->dtype = functor_dtype(NULL, name, base);
		}
		if (!out->backward && looks_backward(base) && out->family != FAM_OPTIMIZER)
			out->backward = 1;
		return;
	}
}

enum op_family sem_classify(const char *name, struct op_sem *out)
{
	sem_clear(out);
	if (!name || !*name)
		return FAM_OTHER;
	char *d = demangle(name);
	classify_demangled(d, out);
	free(d);
	return out->family;
}

/* ---------------------------------------------------------------- roles */

static const struct sem_rule *rule_of(const struct op_sem *s)
{
	if (!s || !s->rule)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
		if (s->rule == rules[i].rule || !strcmp(s->rule, rules[i].rule))
			return &rules[i];
	return NULL;
}

static void fill(unsigned char *role, int from, int to, unsigned char v)
{
	for (int i = from; i < to; i++)
		role[i] = v;
}

/*
 * Size K of an elementwise loop's data array from its name: "std::array<char*, 3ul>" or
 * "at::detail::Array<char*, 3>" (vectorized/unrolled loops); for the legacy loop, 1 + the
 * arity of the functor's first typed lambda ("{lambda(float, float)#1}" gives 3). 0: unknown.
 */
int elementwise_ntensors(const char *name, int array)
{
	if (!name)
		return 0;
	if (array) {
		const char *p = strstr(name, "rray<char*, ");
		if (!p)
			return 0;
		return atoi(p + 12);
	}
	for (const char *p = name; (p = strstr(p, "{lambda(")); p++) {
		const char *a = p + 8;
		if (*a == ')' || !strncmp(a, "int)", 4))
			continue;
		int k = 2, depth = 0;
		for (; *a && !(depth == 0 && *a == ')'); a++) {
			if (*a == '<' || *a == '(')
				depth++;
			else if (*a == '>' || *a == ')')
				depth--;
			else if (*a == ',' && depth == 0)
				k++;
		}
		return k;
	}
	/* the legacy loop over a functor object, whose lambda is (int): BinaryFunctor<a, b, out,
	 * op> reads two tensors and writes one; the A/BUnaryFunctor (one operand a scalar) one
	 * and one. Without k two runs of pointer-like words (stale bytes before the data array)
	 * would leave the roles unknown. */
	if (strstr(name, "AUnaryFunctor<") || strstr(name, "BUnaryFunctor<"))
		return 2;
	if (strstr(name, "BinaryFunctor<"))
		return 3;
	return 0;
}

int sem_roles(const struct op_sem *s, int nptrs, unsigned char *role)
{
	return sem_roles_named(NULL, s, nptrs, role);
}

int sem_roles_named(const char *name, const struct op_sem *s, int nptrs, unsigned char *role)
{
	if (nptrs <= 0 || !role)
		return 0;
	fill(role, 0, nptrs, ROLE_UNKNOWN);
	const struct sem_rule *r = rule_of(s);
	if (!r)
		return 0;
	switch (r->roles) {
	case RL_NONE:
		return 0;
	case RL_EW_ARRAY:
	case RL_EW_LEGACY: {
		/*
		 * CUDALoops.cuh: vectorized/unrolled_elementwise_kernel(int N, func_t f, array_t
		 * data, ...): data[0] is the output, data[1..] the inputs. Pointers come in
		 * parameter order, so those the functor captures (parameter 1) come before the
		 * data array (parameter 2): with K = the array's size from the name
		 * ("std::array<char*, 3ul>"), the last K pointers are the data and the ones before
		 * them captured by the functor, which ATen's functors only read (values mostly; a
		 * philox seed pointer under graph capture). Fewer than K pointers: unknown.
		 * The legacy elementwise_kernel<nt, vt, lambda>(N, lambda) holds the data array in
		 * its lambda next to an offset calculator whose strides can look like addresses
		 * (real traces show it): by count alone it is known only when K, from the
		 * functor's arity, equals nptrs; sem_roles_at() finds the array by position.
		 */
		char *d = name ? demangle(name) : NULL;
		int k = elementwise_ntensors(d, r->roles == RL_EW_ARRAY);
		free(d);
		if (nptrs > 64 || (k > 0 && nptrs < k) ||
		    (r->roles == RL_EW_LEGACY && (k <= 0 || nptrs != k)))
			return 0;
		int first = k > 0 ? nptrs - k : 0;
		fill(role, 0, nptrs, ROLE_READ);
		role[first] = ROLE_WRITE;
		return 1;
	}
	case RL_FIRST_W:
		fill(role, 0, nptrs, ROLE_READ);
		role[0] = ROLE_WRITE;
		return 1;
	case RL_LAST_W:
		fill(role, 0, nptrs, ROLE_READ);
		role[nptrs - 1] = ROLE_WRITE;
		return 1;
	case RL_ALL_W:
		fill(role, 0, nptrs, ROLE_WRITE);
		return 1;
	case RL_ALL_RW:
		fill(role, 0, nptrs, ROLE_READWRITE);
		return 1;
	case RL_DROPOUT:
		/* (TensorInfo a = in, TensorInfo b = out, TensorInfo c = mask, n, p,
		 * PhiloxCudaState); TensorInfo's data pointer is its first word; the philox state
		 * holds seed and offset pointers only under CUDA graph capture (read) */
		if (nptrs < 3 || nptrs > 5)
			return 0;
		fill(role, 0, nptrs, ROLE_READ);
		role[1] = role[2] = ROLE_WRITE;
		return 1;
	case RL_LN_FWD:
		/* (N, eps, X, gamma, beta, mean, rstd, Y); gamma/beta absent (null) without affine
		 */
		if (nptrs == 6) {
			fill(role, 0, 3, ROLE_READ);
			fill(role, 3, 6, ROLE_WRITE);
			return 1;
		}
		if (nptrs == 4) {
			role[0] = ROLE_READ;
			fill(role, 1, 4, ROLE_WRITE);
			return 1;
		}
		return 0;
	case RL_LN_MOMENTS:
		/* (N, eps, X, mean, rstd) */
		if (nptrs != 3)
			return 0;
		role[0] = ROLE_READ;
		role[1] = role[2] = ROLE_WRITE;
		return 1;
	case RL_LN_GAMMA_BETA:
		/* (M, N, dY, X, mean, rstd, dgamma, dbeta); one of dgamma/dbeta may be null */
		if (nptrs == 6) {
			fill(role, 0, 4, ROLE_READ);
			role[4] = role[5] = ROLE_WRITE;
			return 1;
		}
		if (nptrs == 5) {
			fill(role, 0, 4, ROLE_READ);
			role[4] = ROLE_WRITE;
			return 1;
		}
		return 0;
	case RL_BN_BWD_REDUCE:
		/* (input, grad_output, mean, inv_std, sum_dy, sum_dy_xmu, grad_weight, grad_bias,
		 * staging_data, semaphores): grad_weight and grad_bias null without an affine
		 * weight, staging_data and semaphores null when grid.y is 1. Ten: all four outputs
		 * and the scratch, whose staging the kernel writes before it reads it back (its
		 * last block), while semaphores, zeroed by a fill, are counted up (read and
		 * written). Six: no weight, one row of blocks. Eight is either the outputs of an
		 * affine batch norm on one row of blocks or a plain one's two with the scratch:
		 * unknown by count (the kernel's C signature decides) */
		if (nptrs == 10) {
			fill(role, 0, 4, ROLE_READ);
			fill(role, 4, 9, ROLE_WRITE);
			role[9] = ROLE_READWRITE;
			return 1;
		}
		if (nptrs == 6) {
			fill(role, 0, 4, ROLE_READ);
			fill(role, 4, 6, ROLE_WRITE);
			return 1;
		}
		return 0;
	case RL_REDUCE:
		/* ReduceOp: ops, config, input_calc, output_calc (values), then src, dst[2],
		 * acc_buf, cta_buf, semaphores: src read, dst[0] written; a second output or the
		 * global-reduce scratch buffers are read and written */
		if (nptrs < 2)
			return 0;
		role[0] = ROLE_READ;
		role[1] = ROLE_WRITE;
		fill(role, 2, nptrs, ROLE_READWRITE);
		return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------- extents */

uint64_t sem_ptr_bound(const struct op_sem *s, int idx, int nptrs, const int grid[3],
                       const int block[3])
{
	if (!s || s->family != FAM_REDUCTION || idx < 1 || idx >= nptrs)
		return UINT64_MAX; /* before the rule table's scan: this runs for every pointer */
	const struct sem_rule *r = rule_of(s);
	if (!r || r->roles != RL_REDUCE)
		return UINT64_MAX;
	uint64_t gx = grid[0] > 0 ? (uint64_t)grid[0] : 1, gy = grid[1] > 0 ? (uint64_t)grid[1] : 1;
	uint64_t bx = block[0] > 0 ? (uint64_t)block[0] : 1;
	uint64_t by = block[1] > 0 ? (uint64_t)block[1] : 1;
	if (gx > (1u << 31) || gy > 65535 || bx > 1024 || by > 1024)
		return UINT64_MAX;
	/* dst[0]: outputs of at most 8 bytes; the rest (dst[1], acc_buf, cta_buf, semaphores):
	 * accumulators of at most 8 bytes, output_vec_size <= 4 */
	return idx == 1 ? gx * bx * by * 4 * 8 : gx * gy * bx * 4 * 8;
}

/*
 * Elements one thread touches at most, per pointer, by row: CuPy launches one thread per
 * element (linear_launch: grid = ceil(size / block)); XLA's loop emitter unrolls at most 4 and
 * its reductions walk a row tile per thread; CUTLASS/cuBLAS/Triton GEMM threads stream their
 * A and B panels over K. Generous on purpose: the bound only has to stop an arena's size
 * (JAX preallocates 75% of the device) from standing for a kernel's bytes.
 */
uint64_t sem_launch_bound(const struct op_sem *s, int role, uint64_t blocks, uint64_t threads,
                          size_t esize)
{
	if (!s || !s->rule || !threads)
		return UINT64_MAX;
	if (!esize)
		esize = 4;
	uint64_t per;
	if (!strcmp(s->rule, "cub-device-reduce"))
		/* d_out: one partial per block (the single-tile pass: blocks = 1) */
		return role == ROLE_WRITE ? blocks * esize : UINT64_MAX;
	if (!strcmp(s->rule, "xla-redzone-check"))
		return threads; /* one byte a thread */
	if (!strcmp(s->rule, "cupy-ufunc") || !strcmp(s->rule, "xla-fp-comparison"))
		per = 1;
	else if (!strcmp(s->rule, "xla-loop-fusion") || !strcmp(s->rule, "xla-wrapped"))
		per = 16;
	else if (!strcmp(s->rule, "xla-gemm-fusion") || !strcmp(s->rule, "xla-fusion"))
		per = 64; /* Triton's tiles (XLA's GEMM fusions): BLOCK_M x BLOCK_N over 32-256
		           * threads, K in steps */
	else if (s->family == FAM_GEMM)
		per = 1024;
	else if (!strncmp(s->rule, "xla-", 4) || s->family == FAM_OTHER)
		per = 1024; /* XLA's other fusions, a kernel of unknown semantics */
	else
		return UINT64_MAX; /* PyTorch's kernels: their parameters say */
	if (threads > UINT64_MAX / per / esize)
		return UINT64_MAX;
	return threads * per * esize;
}

/* ---------------------------------------------------------------- names */

size_t dtype_size(enum dtype t)
{
	switch (t) {
	case DT_F32:
	case DT_I32:
		return 4;
	case DT_F16:
	case DT_BF16:
		return 2;
	case DT_F64:
	case DT_I64:
		return 8;
	case DT_I8:
	case DT_U8:
	case DT_BOOL:
	case DT_FP8:
		return 1;
	case DT_UNKNOWN:
		break;
	}
	return 0;
}

const char *dtype_name(enum dtype t)
{
	static const char *const names[] = {
	    [DT_UNKNOWN] = "unknown", [DT_F32] = "f32",   [DT_F16] = "f16", [DT_BF16] = "bf16",
	    [DT_F64] = "f64",         [DT_I64] = "i64",   [DT_I32] = "i32", [DT_I8] = "i8",
	    [DT_U8] = "u8",           [DT_BOOL] = "bool", [DT_FP8] = "fp8",
	};
	if ((unsigned)t >= ARRAY_SIZE(names) || !names[t])
		return "unknown";
	return names[t];
}

const char *family_name(enum op_family f)
{
	static const char *const names[FAM__COUNT] = {
	    [FAM_OTHER] = "other",         [FAM_ELEMENTWISE] = "elementwise",
	    [FAM_REDUCTION] = "reduction", [FAM_NORM] = "norm",
	    [FAM_SOFTMAX] = "softmax",     [FAM_GEMM] = "gemm",
	    [FAM_CONV] = "conv",           [FAM_ATTENTION] = "attention",
	    [FAM_INDEX] = "index",         [FAM_COPY] = "copy",
	    [FAM_MEMSET] = "memset",       [FAM_OPTIMIZER] = "optimizer",
	    [FAM_TRITON] = "triton",       [FAM_NCCL] = "nccl",
	};
	if ((unsigned)f >= FAM__COUNT)
		return "other";
	return names[f];
}
