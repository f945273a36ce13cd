/*
 * test-semantics.c - the kernel classifier, pointer roles, demangling and short names.
 *
 * Each row of cases[] is one cmocka test: a kernel name as the trace holds it and what
 * sem_classify() must say about it. Mangled names were produced by compiling declarations
 * that mirror PyTorch 2.x's (same namespaces, templates, parameter lists and lambda nesting,
 * from the ATen file named in the comment) with g++ and reading the symbols back, so the
 * mangling is the compiler's, not typed by hand; nvcc uses the same Itanium ABI. Library names
 * (cuBLAS, cuDNN, NCCL, Triton) are written as those libraries print them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analyzer/semantics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kcase {
	const char *what;
	const char *name;
	enum op_family family;
	const char *op;
	enum dtype dtype;
	int backward;
	int fusible;
	const char *rule;
};

/* clang-format off */
static const struct kcase cases[] = {
	/* CUDALoops.cuh: vectorized_elementwise_kernel<4, GeluCUDAKernelImpl lambda, std::array<char*, 2>>
	 * (ActivationGeluKernel.cu: {lambda()#2} = the erf branch, inner {lambda()#2} = the float case) */
	{"gelu f32 vectorized",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "gelu", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	{"gelu bf16 vectorized",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_St5arrayIPcLm2EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "gelu", DT_BF16, 0, 1, "torch-vectorized-elementwise"},
	/* GeluBackwardCUDAKernelImpl's {lambda()#1} (UlvE_), the tanh form, nested bf16 lambda #4
	 * (UlvE2_), from the Gemma trace: not the erf form's gelu_backward (mlp_train's, below,
	 * is UlvE0_ then UlvE2_) */
	{"gelu tanh backward bf16",
	 "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_26GeluBackwardCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE_clEvENKUlvE2_clEvEUlN3c108BFloat16ES8_E_St5arrayIPcLm3EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "gelu_tanh_backward", DT_BF16, 1, 1, "torch-vectorized-elementwise"},
	/* {lambda()#1} of GeluCUDAKernelImpl = GeluType::Tanh branch */
	{"gelu tanh f16 vectorized",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE_clEvENKUlvE1_clEvEUlN3c104HalfEE_St5arrayIPcLm2EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "gelu_tanh", DT_F16, 0, 1, "torch-vectorized-elementwise"},
	/* CUDALoops.cuh: elementwise_kernel<128, 4, gpu_kernel_impl_nocast<...>::{lambda(int)#1}> */
	{"gelu bf16 strided (legacy loop)",
	 "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastIZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16EE0_EEvS4_RKT_EUliE_EEviT1_",
	 FAM_ELEMENTWISE, "gelu", DT_BF16, 0, 1, "torch-elementwise"},
	/* demangled form as a profiler prints it */
	{"gelu demangled",
	 "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)",
	 FAM_ELEMENTWISE, "gelu", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* BinaryAddSubKernel / ufunc add: CUDAFunctor_add<scalar_t> */
	{"add f32",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "add", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	{"add bf16",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIN3c108BFloat16EEESt5arrayIPcLm3EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "add", DT_BF16, 0, 1, "torch-vectorized-elementwise"},
	/* BinaryMulKernel.cu: AUnaryFunctor / BinaryFunctor around binary_internal::MulFunctor */
	{"mul by scalar (AUnaryFunctor)",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "mul", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	{"mul tensors (BinaryFunctor)",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "mul", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* FillKernel.cu: FillFunctor<scalar_t> */
	{"fill f32",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	 FAM_MEMSET, "fill", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	{"fill bool",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIbEESt5arrayIPcLm1EEEEviT0_T1_",
	 FAM_MEMSET, "fill", DT_BOOL, 0, 1, "torch-vectorized-elementwise"},
	/* Indexing.cu: masked_fill_kernel's lambda(scalar_t, bool) */
	{"masked_fill f32",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_12_GLOBAL__N_118masked_fill_kernelERNS_14TensorIteratorERKN3c106ScalarEENKUlvE_clEvENKUlvE_clEvEUlfbE_St5arrayIPcLm3EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "masked_fill", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* Copy.cu: direct_copy_kernel_cuda, plain and with LoadWithCast/StoreWithCast */
	{"copy f32",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE_clEvENKUlvE_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
	 FAM_COPY, "copy", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	{"cast (unrolled, LoadWithCast)",
	 "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE_clEvENKUlvE_clEvEUlfE_St5arrayIPcLm2EELi4EiiNS0_6memory12LoadWithCastILi1EEENSA_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_",
	 FAM_COPY, "cast", DT_F32, 0, 1, "torch-unrolled-elementwise"},
	{"cast (strided, gpu_kernel_impl)",
	 "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_15gpu_kernel_implIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE_clEvENKUlvE_clEvEUlfE_EEvS4_RKT_EUliE_EEviT1_",
	 FAM_COPY, "cast", DT_F32, 0, 1, "torch-elementwise"},
	/* Dropout.cu: fused_dropout_kernel_vec<scalar_t, accscalar_t, IndexType, ADims, VEC, mask_t> */
	{"dropout f32",
	 "_ZN2at6native12_GLOBAL__N_124fused_dropout_kernel_vecIffjLi1ELi4EbEEvNS_4cuda6detail10TensorInfoIKT_T1_EENS5_IS6_S8_EENS5_IT4_S8_EES8_T0_NS_15PhiloxCudaStateE",
	 FAM_ELEMENTWISE, "dropout", DT_F32, 0, 1, "torch-fused-dropout"},
	{"dropout bf16",
	 "_ZN2at6native12_GLOBAL__N_124fused_dropout_kernel_vecIN3c108BFloat16EfjLi1ELi4EbEEvNS_4cuda6detail10TensorInfoIKT_T1_EENS7_IS8_SA_EENS7_IT4_SA_EESA_T0_NS_15PhiloxCudaStateE",
	 FAM_ELEMENTWISE, "dropout", DT_BF16, 0, 1, "torch-fused-dropout"},
	/* layer_norm_kernel.cu */
	{"layer norm f32",
	 "_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIffLb0EEEviT0_PKT_S6_S6_PS3_S7_PS4_",
	 FAM_NORM, "layer_norm", DT_F32, 0, 0, "torch-vectorized-layer-norm"},
	{"rms norm bf16 (rms_norm = true)",
	 "_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIN3c108BFloat16EfLb1EEEviT0_PKT_S8_S8_PS5_S9_PS6_",
	 FAM_NORM, "rms_norm", DT_BF16, 0, 0, "torch-vectorized-rms-norm"},
	{"rowwise moments",
	 "_ZN2at6native12_GLOBAL__N_124RowwiseMomentsCUDAKernelIffEEvlT0_PKT_PS3_S7_",
	 FAM_NORM, "layer_norm", DT_F32, 0, 0, "torch-rowwise-moments"},
	{"layer norm forward (strided)",
	 "_ZN2at6native12_GLOBAL__N_126LayerNormForwardCUDAKernelIffEEvlPKT_PKT0_S8_S5_S5_PS3_",
	 FAM_NORM, "layer_norm", DT_F32, 0, 0, "torch-layer-norm-forward"},
	{"layer norm grad input",
	 "_ZN2at6native12_GLOBAL__N_139layer_norm_grad_input_kernel_vectorizedIffEEvPKT_S5_PKT0_S8_S5_PS3_i",
	 FAM_NORM, "layer_norm_backward", DT_F32, 1, 0, "torch-layer-norm-grad-input"},
	{"gamma beta backward",
	 "_ZN2at6native12_GLOBAL__N_133GammaBetaBackwardCUDAKernel_32x32IffEEvllPKT_S5_PKT0_S8_PS3_S9_",
	 FAM_NORM, "layer_norm_backward", DT_F32, 1, 0, "torch-gamma-beta-backward"},
	/* SoftMax.cu / PersistentSoftmax.cuh */
	{"softmax block",
	 "_ZN2at6native12_GLOBAL__N_119cunn_SoftMaxForwardILi4EfffNS1_22SoftMaxForwardEpilogueEEEvPT2_PKT0_i",
	 FAM_SOFTMAX, "softmax", DT_F32, 0, 0, "torch-softmax"},
	{"log softmax block",
	 "_ZN2at6native12_GLOBAL__N_119cunn_SoftMaxForwardILi4EfffNS1_25LogSoftMaxForwardEpilogueEEEvPT2_PKT0_i",
	 FAM_SOFTMAX, "log_softmax", DT_F32, 0, 0, "torch-log-softmax"},
	{"softmax backward block",
	 "_ZN2at6native12_GLOBAL__N_120cunn_SoftMaxBackwardILi4EfffNS1_23SoftMaxBackwardEpilogueEEEvPT0_PKT2_S8_l",
	 FAM_SOFTMAX, "softmax_backward", DT_F32, 1, 0, "torch-softmax-backward"},
	{"masked softmax warp bf16",
	 "_ZN2at6native20softmax_warp_forwardIN3c108BFloat16ES3_fLi7ELb0ELb1EEEvPT0_PKT_iiiPKbib",
	 FAM_SOFTMAX, "softmax", DT_BF16, 0, 0, "torch-softmax"},
	{"softmax warp backward",
	 "_ZN2at6native21softmax_warp_backwardIfffLi10ELb0ELb0EEEvPT0_PKT_S6_iiiPKb",
	 FAM_SOFTMAX, "softmax_backward", DT_F32, 1, 0, "torch-softmax-backward"},
	/* MultiTensorApply.cuh + FusedAdamWKernel.cu: FusedAdamMathFunctor<float, 4, ADAMW, false> */
	{"fused adamw",
	 "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataIfLi4EEENS1_20FusedAdamMathFunctorIfLi4ELNS0_9ADAM_MODEE1ELb0EEEJPddddddbPfS9_EEEvT_T0_DpT1_",
	 FAM_OPTIMIZER, "adamw", DT_F32, 0, 0, "torch-multi-tensor-apply"},
    /* MultiTensorApply.cuh as in 2.x: enable_if<...use_large_kernel_arg...>::type return type,
     * FusedOptimizerTensorListMetadata, the lr/grad_scale/found_inf pointers */
    {"fused adamw bf16 (enable_if return)",
     "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_32FusedOptimizerTensorListMetadataILi4EEENS1_20FusedAdamMathFunctorIN3c108BFloat16ELi4ELNS0_9ADAM_MODEE1ELb0EEEJPKfdddddbSB_SB_EEENSt9enable_ifIXntsrT0_20use_large_kernel_argEvE4typeET_SD_DpT1_",
     FAM_OPTIMIZER, "adamw", DT_BF16, 0, 0, "torch-multi-tensor-apply"},
    /* ForeachFunctors.cuh: foreach add_ (alpha) and addcmul_ as torch.optim's foreach path */
    {"foreach add",
     "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi3EEENS1_24BinaryOpListAlphaFunctorIfLi3ELi2ELi0EEEJSt4plusIfEfEEENSt9enable_ifIXntsrT0_20use_large_kernel_argEvE4typeET_SA_DpT1_",
     FAM_OPTIMIZER, "foreach_add", DT_F32, 0, 0, "torch-multi-tensor-apply"},
    {"foreach pointwise",
     "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi3EEENS1_24PointwiseOpScalarFunctorIfLi3ELi3ELi0EEEJSt10multipliesIfEdEEENSt9enable_ifIXntsrT0_20use_large_kernel_argEvE4typeET_SA_DpT1_",
     FAM_OPTIMIZER, "foreach_pointwise", DT_F32, 0, 0, "torch-multi-tensor-apply"},
    /* Reduce.cuh + ReduceSumProdKernel.cu / ReduceMomentKernel.cu */
    {"sum bf16",
     "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIN3c108BFloat16ENS0_14func_wrapper_tIS4_ZNS0_11sum_functorIS4_fS4_EclERNS_14TensorIteratorEEUlffE_EEjS4_Li4ELi4EEEEEvT1_",
     FAM_REDUCTION, "sum", DT_BF16, 0, 0, "torch-reduce"},
    {"mean f32", "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_",
     FAM_REDUCTION, "mean", DT_F32, 0, 0, "torch-reduce"},
    /* PersistentSoftmax.cuh, newest: <in, out, acc, log2_elements, is_log_softmax, is_masked,
     * WARP_SIZE> */
    {"log softmax warp (7 template args)",
     "_ZN2at6native20softmax_warp_forwardIfffLi10ELb1ELb0ELi32EEEvPT0_PKT_iiiPKbib", FAM_SOFTMAX,
     "log_softmax", DT_F32, 0, 0, "torch-log-softmax-warp"},
    {"softmax warp bf16 (7 template args)",
     "_ZN2at6native20softmax_warp_forwardIN3c108BFloat16ES3_fLi8ELb0ELb0ELi32EEEvPT0_PKT_iiiPKbib",
     FAM_SOFTMAX, "softmax", DT_BF16, 0, 0, "torch-softmax"},
    /* ActivationGeluKernel.cu, later form: GeluTanhFunctor<scalar_t> */
    {"gelu tanh functor bf16",
     "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_12_GLOBAL__N_115GeluTanhFunctorIN3c108BFloat16EEESt5arrayIPcLm2EEEEviT0_T1_",
     FAM_ELEMENTWISE, "gelu_tanh", DT_BF16, 0, 1, "torch-vectorized-elementwise"},
	/* TriangularOps.cu: triu_tril_kernel<scalar_t, IndexType, upper, elems, inplace> */
	{"tril",
	 "_ZN2at6native12_GLOBAL__N_116triu_tril_kernelIfiLb0ELi4ELb0EEEvNS_4cuda6detail10TensorInfoIT_T0_EENS5_IKS6_S7_EEllS7_",
	 FAM_ELEMENTWISE, "tril", DT_F32, 0, 1, "torch-tril"},
	{"triu in place",
	 "_ZN2at6native12_GLOBAL__N_116triu_tril_kernelIfiLb1ELi4ELb1EEEvNS_4cuda6detail10TensorInfoIT_T0_EENS5_IKS6_S7_EEllS7_",
	 FAM_ELEMENTWISE, "triu", DT_F32, 0, 1, "torch-triu"},
	/* cuBLAS / cuBLASLt, as the libraries name their kernels */
	{"nvjet bf16", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", FAM_GEMM, "gemm", DT_BF16, 0, 0,
	 "cublas-gemm"},
	{"nvjet f16", "nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT", FAM_GEMM, "gemm", DT_F16, 0, 0,
	 "cublas-gemm"},
	{"xmma gemm bf16",
	 "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_BF16, 0, 0, "cublas-gemm"},
	{"ampere sgemm", "ampere_sgemm_128x64_tn", FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* cuBLAS picks this "relu" CUTLASS kernel for plain bf16 matmuls: not an epilogue */
	{"cutlass gemm (relu family, no epilogue)",
	 "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
	 FAM_GEMM, "gemm", DT_BF16, 0, 0, "cublas-gemm"},
	/* a cuBLASLt kernel with a GELU+bias epilogue in its name: already fused (the name is
	 * shaped like cuBLASLt's xmma kernels with the epilogue word added; not from a trace) */
	{"gemm with gelu epilogue",
	 "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_gelu_aux_bias_execute_segment_k_off_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_BF16, 0, 0, "cublas-gemm-epilogue"},
	/* cuDNN */
	{"cudnn fprop",
	 "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
	 FAM_CONV, "conv", DT_BF16, 0, 0, "cudnn-conv"},
	{"cudnn dgrad",
	 "sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
	 FAM_CONV, "conv_backward", DT_BF16, 1, 0, "cudnn-conv-bwd"},
	/* attention: flash (transformers/cuda/flash_attn), mem-efficient, cuDNN */
	{"flash forward",
	 "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
	 FAM_ATTENTION, "flash_attention", DT_BF16, 0, 0, "flash-attention"},
	{"flash backward",
	 "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::half_t, Flash_kernel_traits<64, 128, 128, 8, cutlass::half_t> >, false, true, false, false, false, false>(pytorch_flash::Flash_bwd_params)",
	 FAM_ATTENTION, "flash_attention", DT_F16, 1, 0, "flash-attention-bwd"},
	{"mem-efficient forward",
	 "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
	 FAM_ATTENTION, "mem_efficient_attention", DT_F32, 0, 0, "mem-efficient-attention"},
	{"cudnn sdpa forward",
	 "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0",
	 FAM_ATTENTION, "cudnn_attention", DT_F16, 0, 0, "cudnn-sdpa"},
	/* Triton (Inductor) */
	{"triton pointwise", "triton_poi_fused_add_gelu_0", FAM_TRITON, "add_gelu", DT_UNKNOWN, 0, 1,
	 "triton-inductor"},
	{"triton reduction", "triton_red_fused_native_layer_norm_12", FAM_TRITON,
	 "native_layer_norm", DT_UNKNOWN, 0, 0, "triton-inductor"},
	{"triton persistent backward",
	 "triton_per_fused_gelu_gelu_backward_native_layer_norm_backward_3", FAM_TRITON,
	 "gelu_gelu_backward_native_layer_norm_backward", DT_UNKNOWN, 1, 0, "triton-inductor"},
	/* NCCL */
	{"nccl all-reduce bf16", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	 FAM_NCCL, "all_reduce", DT_BF16, 0, 0, "nccl"},
	{"nccl old all-gather", "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
	 FAM_NCCL, "all_gather", DT_I8, 0, 0, "nccl"},
	{"nccl reduce-scatter f32", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", FAM_NCCL,
	 "reduce_scatter", DT_F32, 0, 0, "nccl"},
	/* a plain CUDA C program's kernels: unknown */
	{"user kernel mangled", "_Z10add_kernelPfS_S_i", FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0,
	 "none"},
	{"user kernel extern C", "saxpy", FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	/* samples/cuda/chain.cu's kernels (scale, add_bias, relu, square, sum_reduce): user code,
	 * whatever their names say */
	{"chain.cu relu", "_Z4reluPfPKfi", FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	{"chain.cu add_bias", "_Z8add_biasPfPKfS1_ii", FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	{"chain.cu sum_reduce", "_Z10sum_reducePfPKfi", FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0,
	 "none"},
	{"user fill_kernel", "_Z11fill_kernelPffi", FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	/* a memset kernel of a library (illustrative name, not from a trace) */
	{"driver memset kernel", "memset32_aligned1D", FAM_MEMSET, "fill", DT_UNKNOWN, 0, 1,
	 "memset"},
	/* --- every kernel name in the samples' traces (the samples' *_train and chain traces, recorded
	 * on an H200 with PyTorch 2.11 + CUDA 13), exactly as the trace's "str" records hold them;
	 * the expected values are the ones docs/accuracy.md reviews --- */
	/* chain.aicp.jsonl: sum_reduce */
	{"chain.aicp.jsonl: sum_reduce",
	 "_Z10sum_reducePfPKfi",
	 FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	/* chain.aicp.jsonl: relu */
	{"chain.aicp.jsonl: relu",
	 "_Z4reluPfPKfi",
	 FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	/* chain.aicp.jsonl: scale */
	{"chain.aicp.jsonl: scale",
	 "_Z5scalePfPKffi",
	 FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	/* chain.aicp.jsonl: square */
	{"chain.aicp.jsonl: square",
	 "_Z6squarePfPKfi",
	 FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	/* chain.aicp.jsonl: add_bias */
	{"chain.aicp.jsonl: add_bias",
	 "_Z8add_biasPfPKfS1_ii",
	 FAM_OTHER, "unknown", DT_UNKNOWN, 0, 0, "none"},
	/* mlp_train.aicp.jsonl: reduce_kernel<128, 4, ReduceOp<…, sum_functor<BFloat16, float, BFloat16>, …>> */
	{"mlp_train.aicp.jsonl: reduce_kernel<128, 4, ReduceOp<…, sum_functor<BFloat16, float, BFloat16>, …>>",
	 "_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIN3c108BFloat16ENS0_14func_wrapper_tIS4_ZNS0_11sum_functorIS4_fS4_EclERNS_14TensorIteratorEEUlffE_EEjS4_Li4ELi8EEEEEvT1_",
	 FAM_REDUCTION, "sum", DT_BF16, 0, 0, "torch-reduce"},
	/* attention_train.aicp.jsonl: reduce_kernel<128, 4, ReduceOp<…, sum_functor<float, float, float>, …>> */
	{"attention_train.aicp.jsonl: reduce_kernel<128, 4, ReduceOp<…, sum_functor<float, float, float>, …>>",
	 "_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_",
	 FAM_REDUCTION, "sum", DT_F32, 0, 0, "torch-reduce"},
	/* attention_train.aicp.jsonl: reduce_kernel<512, 1, ReduceOp<…, MeanOps<float, float, float, float>, …>> */
	{"attention_train.aicp.jsonl: reduce_kernel<512, 1, ReduceOp<…, MeanOps<float, float, float, float>, …>>",
	 "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_",
	 FAM_REDUCTION, "mean", DT_F32, 0, 0, "torch-reduce"},
	/* attention_train.aicp.jsonl: triu_tril_kernel<bool, int, false, 8, false> */
	{"attention_train.aicp.jsonl: triu_tril_kernel<bool, int, false, 8, false>",
	 "_ZN2at6native16triu_tril_kernelIbiLb0ELi8ELb0EEEvNS_4cuda6detail10TensorInfoIT_T0_EENS4_IKS5_S6_EEllS6_",
	 FAM_ELEMENTWISE, "tril", DT_BOOL, 0, 1, "torch-tril"},
	/* attention_train.aicp.jsonl: elementwise_kernel<128, 2, gpu_kernel_impl_nocast<MulFunctor<float>>> */
	{"attention_train.aicp.jsonl: elementwise_kernel<128, 2, gpu_kernel_impl_nocast<MulFunctor<float>>>",
	 "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_13BUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
	 FAM_ELEMENTWISE, "mul", DT_F32, 0, 1, "torch-elementwise"},
	/* attention_train.aicp.jsonl: elementwise_kernel<128, 2, gpu_kernel_impl_nocast<direct_copy_kernel_cuda>> */
	{"attention_train.aicp.jsonl: elementwise_kernel<128, 2, gpu_kernel_impl_nocast<direct_copy_kernel_cuda>>",
	 "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_EEvS4_RKT_EUliE_EEviT1_",
	 FAM_COPY, "copy", DT_F32, 0, 1, "torch-elementwise"},
	/* mlp_train.aicp.jsonl: elementwise_kernel<128, 2, gpu_kernel_impl_nocast<mse_backward_cuda_kernel>> */
	{"mlp_train.aicp.jsonl: elementwise_kernel<128, 2, gpu_kernel_impl_nocast<mse_backward_cuda_kernel>>",
	 "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_24mse_backward_cuda_kernelERNS_14TensorIteratorERKN3c106ScalarEENKUlvE_clEvENKUlvE0_clEvEUlfffE_EEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
	 FAM_ELEMENTWISE, "mse_loss_backward", DT_F32, 1, 1, "torch-elementwise"},
	/* attention_train.aicp.jsonl: elementwise_kernel<128, 2, gpu_kernel_impl_nocast<masked_fill_kernel>> */
	{"attention_train.aicp.jsonl: elementwise_kernel<128, 2, gpu_kernel_impl_nocast<masked_fill_kernel>>",
	 "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_44_GLOBAL__N__50c743a2_11_Indexing_cu_89862edb18masked_fill_kernelERNS_14TensorIteratorERKN3c106ScalarEENKUlvE_clEvENKUlvE5_clEvEUlfbE_EEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
	 FAM_ELEMENTWISE, "masked_fill", DT_F32, 0, 1, "torch-elementwise"},
	/* mlp_train.aicp.jsonl: unrolled_elementwise_kernel<CUDAFunctor_add<float>, array<char*, 3>, 4, …> */
	{"mlp_train.aicp.jsonl: unrolled_elementwise_kernel<CUDAFunctor_add<float>, array<char*, 3>, 4, …>",
	 "_ZN2at6native27unrolled_elementwise_kernelINS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EELi4E23TrivialOffsetCalculatorILi2EjES7_ILi1EjENS0_6memory12LoadWithCastILi2EEENSA_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_",
	 FAM_ELEMENTWISE, "add", DT_F32, 0, 1, "torch-unrolled-elementwise"},
	/* mlp_train.aicp.jsonl: unrolled_elementwise_kernel<direct_copy_kernel_cuda, array<char*, 2>, 4, …> */
	{"mlp_train.aicp.jsonl: unrolled_elementwise_kernel<direct_copy_kernel_cuda, array<char*, 2>, 4, …>",
	 "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_",
	 FAM_COPY, "cast", DT_F32, 0, 1, "torch-unrolled-elementwise"},
	/* attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, FillFunctor<bool>, array<char*, 1>> */
	{"attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, FillFunctor<bool>, array<char*, 1>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIbEESt5arrayIPcLm1EEEEviT0_T1_",
	 FAM_MEMSET, "fill", DT_BOOL, 0, 1, "torch-vectorized-elementwise"},
	/* attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1>> */
	{"attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	 FAM_MEMSET, "fill", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, MulFunctor<float>, array<char*, 2>> */
	{"attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, MulFunctor<float>, array<char*, 2>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "mul", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, MulFunctor<float>, array<char*, 3>> */
	{"attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, MulFunctor<float>, array<char*, 3>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "mul", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, bitwise_not_kernel_cuda, array<char*, 2>> */
	{"attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, bitwise_not_kernel_cuda, array<char*, 2>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_23bitwise_not_kernel_cudaERNS_18TensorIteratorBaseEEUlbE_St5arrayIPcLm2EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "logical", DT_BOOL, 0, 1, "torch-vectorized-elementwise"},
	/* attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, masked_scale_kernel<bool, float, float>, …> */
	{"attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, masked_scale_kernel<bool, float, float>, …>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_43_GLOBAL__N__50f1b6c4_10_Dropout_cu_0e96ed3819masked_scale_kernelIbffEEvRNS_6TensorERKS4_S7_T1_EUlfbE_St5arrayIPcLm3EEEEviT0_S8_",
	 FAM_ELEMENTWISE, "dropout_backward", DT_F32, 1, 1, "torch-vectorized-elementwise"},
	/* attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, pow_tensor_scalar_kernel_impl<float, float>, …> */
	{"attention_train.aicp.jsonl: vectorized_elementwise_kernel<4, pow_tensor_scalar_kernel_impl<float, float>, …>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_51_GLOBAL__N__b1108092_12_PowKernel_cu_751192d7_2139629pow_tensor_scalar_kernel_implIffEEvRNS_18TensorIteratorBaseET0_EUlfE_St5arrayIPcLm2EEEEviS6_T1_",
	 FAM_ELEMENTWISE, "pow", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* mlp_train.aicp.jsonl: vectorized_elementwise_kernel<4, mse_kernel_cuda, array<char*, 3>> */
	{"mlp_train.aicp.jsonl: vectorized_elementwise_kernel<4, mse_kernel_cuda, array<char*, 3>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_15mse_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE_clEvENKUlvE0_clEvEUlffE_St5arrayIPcLm3EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "mse_loss", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* mlp_train.aicp.jsonl: vectorized_elementwise_kernel<8, bfloat16_copy_kernel_cuda, array<char*, 2>> */
	{"mlp_train.aicp.jsonl: vectorized_elementwise_kernel<8, bfloat16_copy_kernel_cuda, array<char*, 2>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_25bfloat16_copy_kernel_cudaERNS_18TensorIteratorBaseEEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
	 FAM_COPY, "cast", DT_F32, 0, 1, "torch-vectorized-elementwise"},
	/* mlp_train.aicp.jsonl: vectorized_elementwise_kernel<8, masked_scale_kernel<bool, BFloat16, float>, …> */
	{"mlp_train.aicp.jsonl: vectorized_elementwise_kernel<8, masked_scale_kernel<bool, BFloat16, float>, …>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_43_GLOBAL__N__50f1b6c4_10_Dropout_cu_0e96ed3819masked_scale_kernelIbN3c108BFloat16EfEEvRNS_6TensorERKS6_S9_T1_EUlS5_bE_St5arrayIPcLm3EEEEviT0_SA_",
	 FAM_ELEMENTWISE, "dropout_backward", DT_BF16, 1, 1, "torch-vectorized-elementwise"},
	/* mlp_train.aicp.jsonl: vectorized_elementwise_kernel<8, GeluCUDAKernelImpl, array<char*, 2>> */
	{"mlp_train.aicp.jsonl: vectorized_elementwise_kernel<8, GeluCUDAKernelImpl, array<char*, 2>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_St5arrayIPcLm2EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "gelu", DT_BF16, 0, 1, "torch-vectorized-elementwise"},
	/* mlp_train.aicp.jsonl: vectorized_elementwise_kernel<8, GeluBackwardCUDAKernelImpl, array<char*, 3>> */
	{"mlp_train.aicp.jsonl: vectorized_elementwise_kernel<8, GeluBackwardCUDAKernelImpl, array<char*, 3>>",
	 "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_26GeluBackwardCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16ES8_E_St5arrayIPcLm3EEEEviT0_T1_",
	 FAM_ELEMENTWISE, "gelu_backward", DT_BF16, 1, 1, "torch-vectorized-elementwise"},
	/* attention_train.aicp.jsonl: CatArrayBatchedCopy<4, unsigned int, 3, 64, 64> */
	{"attention_train.aicp.jsonl: CatArrayBatchedCopy<4, unsigned int, 3, 64, 64>",
	 "_ZN2at6native40_GLOBAL__N__0f1a8107_8_Shape_cu_49f7391c19CatArrayBatchedCopyINS1_10OpaqueTypeILj4EEEjLi3ELi64ELi64EEEvPT_NS1_25CatArrInputTensorMetadataIS5_T0_XT2_EXT3_EEENS1_16TensorSizeStrideIS8_Lj4EEEiS8_",
	 FAM_INDEX, "cat", DT_UNKNOWN, 0, 0, "torch-cat"},
	/* mlp_train.aicp.jsonl: fused_dropout_kernel_vec<BFloat16, float, unsigned int, 1, 8, bool> */
	{"mlp_train.aicp.jsonl: fused_dropout_kernel_vec<BFloat16, float, unsigned int, 1, 8, bool>",
	 "_ZN2at6native43_GLOBAL__N__50f1b6c4_10_Dropout_cu_0e96ed3824fused_dropout_kernel_vecIN3c108BFloat16EfjLi1ELi8EbEEvNS_4cuda6detail10TensorInfoIKT_T1_EENS7_IS8_SA_EENS7_IT4_SA_EESA_T0_NS_15PhiloxCudaStateE",
	 FAM_ELEMENTWISE, "dropout", DT_BF16, 0, 1, "torch-fused-dropout"},
	/* attention_train.aicp.jsonl: fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool> */
	{"attention_train.aicp.jsonl: fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>",
	 "_ZN2at6native43_GLOBAL__N__50f1b6c4_10_Dropout_cu_0e96ed3824fused_dropout_kernel_vecIffjLi1ELi4EbEEvNS_4cuda6detail10TensorInfoIKT_T1_EENS5_IS6_S8_EENS5_IT4_S8_EES8_T0_NS_15PhiloxCudaStateE",
	 FAM_ELEMENTWISE, "dropout", DT_F32, 0, 1, "torch-fused-dropout"},
	/* attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, UnaryOpFunctor<float, 2, 1, 1>, Sqrt<float>> */
	{"attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, UnaryOpFunctor<float, 2, 1, 1>, Sqrt<float>>",
	 "_ZN2at6native50_GLOBAL__N__b6ca21f8_17_ForeachUnaryOp_cu_77fe623d25multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_14UnaryOpFunctorIfLi2ELi1ELi1EEEJNS0_4SqrtIfEEEEEvT_T0_DpT1_",
	 FAM_OPTIMIZER, "foreach_unary", DT_F32, 0, 0, "torch-multi-tensor-apply"},
	/* attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, TernaryOpScalarFunctor, LerpFunctor, …> */
	{"attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, TernaryOpScalarFunctor, LerpFunctor, …>",
	 "_ZN2at6native52_GLOBAL__N__4671fab5_19_ForeachTernaryOp_cu_5285c63625multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_22TernaryOpScalarFunctorIfLi2ELi2ELi0EEEJNS0_11LerpFunctorIfEEfEEEvT_T0_DpT1_",
	 FAM_OPTIMIZER, "foreach_lerp", DT_F32, 0, 0, "torch-multi-tensor-apply"},
	/* mlp_train.aicp.jsonl: vectorized_layer_norm_kernel<float, float, false> */
	{"mlp_train.aicp.jsonl: vectorized_layer_norm_kernel<float, float, false>",
	 "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_kernelIffLb0EEEviT0_PKT_S6_S6_PS3_S7_PS4_",
	 FAM_NORM, "layer_norm", DT_F32, 0, 0, "torch-vectorized-layer-norm"},
	/* mlp_train.aicp.jsonl: GammaBetaBackwardCUDAKernelTemplate<float, float, 32, 32, 256, false, true, …> */
	{"mlp_train.aicp.jsonl: GammaBetaBackwardCUDAKernelTemplate<float, float, 32, 32, 256, false, true, …>",
	 "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a35GammaBetaBackwardCUDAKernelTemplateIffLj32ELj32ELj256ELb0ELb1ELb0EEEvllPKT_S5_PKT0_S8_PS3_S9_",
	 FAM_NORM, "layer_norm_backward", DT_F32, 1, 0, "torch-gamma-beta-backward"},
	/* resnet_train.aicp.jsonl: batch_norm_backward_{reduce,elemt}_channels_last_kernel<4,
	 * BFloat16, float, float> */
	{"resnet_train.aicp.jsonl: batch_norm_backward_reduce_channels_last_kernel<4, BFloat16, "
	 "float, float>",
	 "_ZN2at6native47batch_norm_backward_reduce_channels_last_kernelILi4EN3c108BFloat16EffEEvPKT0_S6_PKT1_S9_PS7_SA_PT2_SC_PVS7_Piii",
	 FAM_NORM, "norm_backward", DT_BF16, 1, 0, "torch-bn-backward-reduce-cl"},
	{"resnet_train.aicp.jsonl: batch_norm_backward_elemt_channels_last_kernel<4, BFloat16, "
	 "float, float>",
	 "_ZN2at6native46batch_norm_backward_elemt_channels_last_kernelILi4EN3c108BFloat16EffEEvPKT0_S6_PKT1_S9_PKT2_S9_S9_PS4_S7_ii",
	 FAM_NORM, "norm_backward", DT_BF16, 1, 0, "torch-bn-backward-elemt-cl"},
	/* attention_train.aicp.jsonl: distribution_elementwise_grid_stride_kernel<…, normal_and_transform, …> */
	{"attention_train.aicp.jsonl: distribution_elementwise_grid_stride_kernel<…, normal_and_transform, …>",
	 "_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_0c5b6e8543distribution_elementwise_grid_stride_kernelIfLi4EZNS0_9templates4cuda20normal_and_transformIffPNS_17CUDAGeneratorImplEZZZNS4_13normal_kernelIS7_EEvRKNS_10TensorBaseEddT_ENKUlvE_clEvENKUlvE0_clEvEUlfE_EEvRNS_18TensorIteratorBaseET1_T2_EUlP24curandStatePhilox4_32_10E0_ZNS1_27distribution_nullary_kernelIff6float4S7_SM_SF_EEvSH_SJ_RKT3_T4_EUlifE_EEvlNS_15PhiloxCudaStateESI_SJ_",
	 FAM_ELEMENTWISE, "random", DT_F32, 0, 1, "torch-random"},
	/* attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, PointwiseOpScalarFunctor<float, 3, 3, 0>, …, float> */
	{"attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, PointwiseOpScalarFunctor<float, 3, 3, 0>, …, float>",
	 "_ZN2at6native54_GLOBAL__N__f8a10d72_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_apply_kernelINS1_18TensorListMetadataILi3EEENS1_24PointwiseOpScalarFunctorIfLi3ELi3ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_",
	 FAM_OPTIMIZER, "foreach_pointwise", DT_F32, 0, 0, "torch-multi-tensor-apply"},
	/* attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, PointwiseOpScalarListFunctor<float, 3, 3, 0>, …> */
	{"attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, PointwiseOpScalarListFunctor<float, 3, 3, 0>, …>",
	 "_ZN2at6native54_GLOBAL__N__f8a10d72_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_apply_kernelINS1_28TensorListScalarListMetadataIfLi3EEENS1_28PointwiseOpScalarListFunctorIfLi3ELi3ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_",
	 FAM_OPTIMIZER, "foreach_pointwise", DT_F32, 0, 0, "torch-multi-tensor-apply"},
	/* attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, BinaryOpScalarFunctor<float, 1, 1, 0>, …, float> */
	{"attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, BinaryOpScalarFunctor<float, 1, 1, 0>, …, float>",
	 "_ZN2at6native57_GLOBAL__N__e658eeb9_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_",
	 FAM_OPTIMIZER, "foreach_binary", DT_F32, 0, 0, "torch-multi-tensor-apply"},
	/* attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, BinaryOpScalarFunctor<float, 1, 1, 0>, …> */
	{"attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, BinaryOpScalarFunctor<float, 1, 1, 0>, …>",
	 "_ZN2at6native57_GLOBAL__N__e658eeb9_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt4plusIfEfEEEvT_T0_DpT1_",
	 FAM_OPTIMIZER, "foreach_binary", DT_F32, 0, 0, "torch-multi-tensor-apply"},
	/* attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, BinaryOpScalarListFunctor<float, 1, 1, 0>, …> */
	{"attention_train.aicp.jsonl: multi_tensor_apply_kernel<…, BinaryOpScalarListFunctor<float, 1, 1, 0>, …>",
	 "_ZN2at6native61_GLOBAL__N__538ad94b_28_ForeachBinaryOpScalarList_cu_dda10a6925multi_tensor_apply_kernelINS1_28TensorListScalarListMetadataIfLi1EEENS1_25BinaryOpScalarListFunctorIfLi1ELi1ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_",
	 FAM_OPTIMIZER, "foreach_binary", DT_F32, 0, 0, "torch-multi-tensor-apply"},
	/* attention_train.aicp.jsonl: softmax_warp_forward<float, float, float, 8, false, false> */
	{"attention_train.aicp.jsonl: softmax_warp_forward<float, float, float, 8, false, false>",
	 "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIfffLi8ELb0ELb0EEEvPT0_PKT_iiiPKbib",
	 FAM_SOFTMAX, "softmax", DT_F32, 0, 0, "torch-softmax"},
	/* attention_train.aicp.jsonl: softmax_warp_backward<float, float, float, 8, false, false> */
	{"attention_train.aicp.jsonl: softmax_warp_backward<float, float, float, 8, false, false>",
	 "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6321softmax_warp_backwardIfffLi8ELb0ELb0EEEvPT0_PKT_S5_iiiPKb",
	 FAM_SOFTMAX, "softmax_backward", DT_F32, 1, 0, "torch-softmax-backward"},
	/* attention_train.aicp.jsonl: Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1> */
	{"attention_train.aicp.jsonl: Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1>",
	 "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nt_align1EEvNT_6ParamsE",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: Kernel2<cutlass_80_simt_sgemm_128x64_8x5_nt_align1> */
	{"attention_train.aicp.jsonl: Kernel2<cutlass_80_simt_sgemm_128x64_8x5_nt_align1>",
	 "_ZN7cutlass7Kernel2I42cutlass_80_simt_sgemm_128x64_8x5_nt_align1EEvNT_6ParamsE",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1> */
	{"attention_train.aicp.jsonl: Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>",
	 "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nt_align1EEvNT_6ParamsE",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, …> */
	{"attention_train.aicp.jsonl: splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, …>",
	 "_ZN8cublasLt19splitKreduce_kernelILi32ELi16EiffffLb0EfffLb1ELb0ELb0ELb0EEEvNS_18cublasSplitKParamsIT4_EEPKT2_PKT8_PT7_PT3_PKS2_SF_PKT9_S6_PSG_PvlPS2_PiSL_SL_SF_SF_SF_SF_SF_",
	 FAM_GEMM, "gemm_splitk_reduce", DT_F32, 0, 0, "cublas-splitk-reduce"},
	/* mlp_train.aicp.jsonl: nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN */
	{"mlp_train.aicp.jsonl: nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN",
	 "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN",
	 FAM_GEMM, "gemm", DT_BF16, 0, 0, "cublas-gemm"},
	/* mlp_train.aicp.jsonl: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT */
	{"mlp_train.aicp.jsonl: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
	 "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
	 FAM_GEMM, "gemm", DT_BF16, 0, 0, "cublas-gemm"},
	/* mlp_train.aicp.jsonl: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT */
	{"mlp_train.aicp.jsonl: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT",
	 "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT",
	 FAM_GEMM, "gemm", DT_BF16, 0, 0, "cublas-gemm-epilogue"},
	/* attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas */
	{"attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas */
	{"attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_split_k_kernel__5x_cublas */
	{"attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_split_k_kernel__5x_cublas",
	 "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_split_k_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas */
	{"attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x32x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas */
	{"attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x32x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x32x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas */
	{"attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
	/* attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas */
	{"attention_train.aicp.jsonl: sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
	 FAM_GEMM, "gemm", DT_F32, 0, 0, "cublas-gemm"},
};
/* clang-format on */

static void test_case(void **state)
{
	const struct kcase *c = *state;
	struct op_sem s;
	enum op_family f = sem_classify(c->name, &s);
	if (f != c->family || strcmp(s.op, c->op) || s.dtype != c->dtype ||
	    s.backward != c->backward || s.elementwise_fusible != c->fusible ||
	    strcmp(s.rule, c->rule))
		print_error("%s: got family %s op %s dtype %s backward %d fusible %d rule %s\n",
		            c->what, family_name(f), s.op, dtype_name(s.dtype), s.backward,
		            s.elementwise_fusible, s.rule);
	assert_int_equal(f, c->family);
	assert_int_equal(s.family, c->family);
	assert_string_equal(s.op, c->op);
	assert_int_equal(s.dtype, c->dtype);
	assert_int_equal(s.backward, c->backward);
	assert_int_equal(s.elementwise_fusible, c->fusible);
	assert_string_equal(s.rule, c->rule);
}

/* The name of the case described as what (the tests below reuse the table's names). */
static const char *K(const char *what)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(cases[i].what, what))
			return cases[i].name;
	fail_msg("no case '%s'", what);
	return NULL;
}

/* ---------------------------------------------------------------- library forms */

static void test_library_forms(void **state)
{
	struct op_sem s;
	sem_classify("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", &s);
	assert_non_null(s.library_form);
	assert_non_null(strstr(s.library_form, "cuBLASLt"));
	/* a GEMM that already has its epilogue has nothing left to offer */
	sem_classify(K("gemm with gelu epilogue"), &s);
	assert_null(s.library_form);
	sem_classify(K("dropout f32"), &s); /* dropout */
	assert_string_equal(s.op, "dropout");
	assert_null(s.library_form);
	/* foreach (not fused) Adam pieces point at the fused optimizer */
	sem_classify(
	    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
	    "(anonymous namespace)::TensorListMetadata<3>, at::native::(anonymous "
	    "namespace)::PointwiseOpScalarFunctor<float, 3, 2, 0>, std::multiplies<float>, "
	    "double>(at::native::(anonymous namespace)::TensorListMetadata<3>, ...)",
	    &s);
	assert_int_equal(s.family, FAM_OPTIMIZER);
	assert_string_equal(s.op, "foreach_pointwise");
	assert_string_equal(s.library_form, "torch.optim.AdamW(fused=True)");
}

/* ---------------------------------------------------------------- roles */

static int roles_of(const char *name, int nptrs, unsigned char *role, int named)
{
	struct op_sem s;
	sem_classify(name, &s);
	memset(role, 0xee, 16);
	int r = named ? sem_roles_named(name, &s, nptrs, role) : sem_roles(&s, nptrs, role);
	/* never writes past role[nptrs - 1] */
	for (int i = nptrs; i < 16; i++)
		assert_int_equal(role[i], 0xee);
	return r;
}

static void expect_roles(const unsigned char *got, const char *want)
{
	char buf[17];
	size_t n = strlen(want);
	for (size_t i = 0; i < n; i++)
		buf[i] = "?RWX"[got[i] & 3];
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_roles_elementwise(void **state)
{
	unsigned char r[16];
	/* add: std::array<char*, 3>: out, a, b */
	assert_int_equal(roles_of(K("add f32"), 3, r, 1), 1);
	expect_roles(r, "WRR");
	/* gelu: one pointer captured by the functor ahead of the 2-element data array */
	assert_int_equal(roles_of(K("gelu f32 vectorized"), 3, r, 1), 1);
	expect_roles(r, "RWR");
	/* without the name, the first pointer is the output */
	assert_int_equal(roles_of(K("gelu f32 vectorized"), 2, r, 0), 1);
	expect_roles(r, "WR");
	/* fewer pointers than the array holds: unknown */
	assert_int_equal(roles_of(K("add f32"), 2, r, 1), 0);
	expect_roles(r, "??");
	/* fill: the only pointer is written */
	assert_int_equal(roles_of(K("fill f32"), 1, r, 1), 1);
	expect_roles(r, "W");
	/* legacy loop: the functor's arity fixes the count (gelu: 1 input + 1 output) */
	assert_int_equal(roles_of(K("gelu bf16 strided (legacy loop)"), 2, r, 1), 1);
	expect_roles(r, "WR");
	assert_int_equal(roles_of(K("gelu bf16 strided (legacy loop)"), 3, r, 1), 0);
	/* masked_fill: lambda(float, bool) in a 3-array: out, self, mask */
	assert_int_equal(roles_of(K("masked_fill f32"), 3, r, 1), 1);
	expect_roles(r, "WRR");
}

static void test_roles_dropout(void **state)
{
	unsigned char r[16];
	/* (a = in, b = out, c = mask, n, p, philox) */
	assert_int_equal(roles_of(K("dropout f32"), 3, r, 1), 1);
	expect_roles(r, "RWW");
	/* philox seed and offset pointers under graph capture: read */
	assert_int_equal(roles_of(K("dropout f32"), 5, r, 1), 1);
	expect_roles(r, "RWWRR");
	assert_int_equal(roles_of(K("dropout f32"), 2, r, 1), 0);
}

static void test_roles_norm(void **state)
{
	unsigned char r[16];
	/* (N, eps, X, gamma, beta, mean, rstd, Y) */
	assert_int_equal(roles_of(K("layer norm f32"), 6, r, 1), 1);
	expect_roles(r, "RRRWWW");
	/* no affine: (X, mean, rstd, Y) */
	assert_int_equal(roles_of(K("layer norm f32"), 4, r, 1), 1);
	expect_roles(r, "RWWW");
	assert_int_equal(roles_of(K("layer norm f32"), 5, r, 1), 0);
	expect_roles(r, "?????");
	/* RowwiseMoments (N, eps, X, mean, rstd) */
	assert_int_equal(roles_of(K("rowwise moments"), 3, r, 1), 1);
	expect_roles(r, "RWW");
	/* grad input (dY, X, mean, rstd, gamma, dX, N) */
	assert_int_equal(roles_of(K("layer norm grad input"), 6, r, 1), 1);
	expect_roles(r, "RRRRRW");
	/* gamma/beta backward (M, N, dY, X, mean, rstd, dgamma, dbeta) */
	assert_int_equal(roles_of(K("gamma beta backward"), 6, r, 1), 1);
	expect_roles(r, "RRRRWW");
	/* batch norm backward reduce, channels last (input, grad_output, mean, inv_std, sum_dy,
	 * sum_dy_xmu, grad_weight, grad_bias, staging, semaphores): the scratch written, the
	 * semaphores (zeroed by a fill) counted up */
	const char *bnr = K("resnet_train.aicp.jsonl: batch_norm_backward_reduce_channels_last_"
	                    "kernel<4, BFloat16, float, float>");
	assert_int_equal(roles_of(bnr, 10, r, 1), 1);
	expect_roles(r, "RRRRWWWWWX");
	assert_int_equal(roles_of(bnr, 6, r, 0), 1); /* no weight, one row of blocks */
	expect_roles(r, "RRRRWW");
	/* eight: the weight's outputs or the scratch, not told by count */
	assert_int_equal(roles_of(bnr, 8, r, 1), 0);
	expect_roles(r, "????????");
	assert_int_equal(roles_of(bnr, 7, r, 1), 0);
	/* the elementwise half (grad_output, input, mean, inv_std, weight, sum_dy, sum_dy_xmu,
	 * grad_input, ...): grad_input last, with or without the weight */
	const char *bne = K("resnet_train.aicp.jsonl: batch_norm_backward_elemt_channels_last_"
	                    "kernel<4, BFloat16, float, float>");
	assert_int_equal(roles_of(bne, 8, r, 1), 1);
	expect_roles(r, "RRRRRRRW");
	assert_int_equal(roles_of(bne, 7, r, 1), 1);
	expect_roles(r, "RRRRRRW");
}

static void test_roles_softmax_reduce_optim(void **state)
{
	unsigned char r[16];
	assert_int_equal(roles_of(K("softmax block"), 2, r, 1), 1);
	expect_roles(r, "WR");
	assert_int_equal(roles_of(K("softmax warp backward"), 3, r, 1),
	                 1); /* (gradInput, grad, output) */
	expect_roles(r, "WRR");
	/* reduce_kernel: ReduceOp{..., src, dst[0], acc_buf}: src read, dst written */
	const char *sum = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
	                  "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
	                  "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
	                  "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, "
	                  "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
	                  "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
	                  "unsigned int, float, 4, 4>)";
	assert_int_equal(roles_of(sum, 2, r, 1), 1);
	expect_roles(r, "RW");
	assert_int_equal(roles_of(sum, 4, r, 1), 1);
	expect_roles(r, "RWXX");
	/* optimizer tensor lists: all read-write */
	assert_int_equal(roles_of(K("fused adamw"), 7, r, 1), 1);
	expect_roles(r, "XXXXXXX");
	/* tril: (result, self) */
	assert_int_equal(roles_of(K("tril"), 2, r, 1), 1);
	expect_roles(r, "WR");
}

/* Positions as the traces hold them: {"args"[].i, "p" offset, "args"[].n}. */
static int roles_at(const char *name, const struct sem_ptr *p, int n, unsigned char *role)
{
	struct op_sem s;
	sem_classify(name, &s);
	memset(role, 0xee, 16);
	int r = sem_roles_at(name, &s, n, p, role);
	for (int i = n; i < 16; i++)
		assert_int_equal(role[i], 0xee);
	return r;
}

static void test_roles_at(void **state)
{
	unsigned char r[16];
	/* attention_probe: reduce_kernel<MeanOps> whose ReduceOp (1048 bytes) holds a 32-bit
	 * stride pair at 160 that looks like an address; src at 984, dst[0], cta_buf, semaphores */
	const struct sem_ptr mean[] = {
	    {0, 160, 1048}, {0, 984, 1048}, {0, 992, 1048}, {0, 1016, 1048}, {0, 1024, 1048}};
	assert_int_equal(roles_at(K("mean f32"), mean, 5, r), 1);
	expect_roles(r, "?RWXX");
	/* attention_probe: legacy copy loop, lambda of 536 bytes: a stride at 224, data at 504 */
	const struct sem_ptr copy[] = {{1, 224, 536}, {1, 504, 536}, {1, 512, 536}};
	const char *legacy_copy = NULL, *legacy_mfill = NULL, *legacy_mse = NULL;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strstr(cases[i].what, "gpu_kernel_impl_nocast<direct_copy_kernel_cuda>"))
			legacy_copy = cases[i].name;
		if (strstr(cases[i].what, "gpu_kernel_impl_nocast<masked_fill_kernel>"))
			legacy_mfill = cases[i].name;
		if (strstr(cases[i].what, "gpu_kernel_impl_nocast<mse_backward_cuda_kernel>"))
			legacy_mse = cases[i].name;
	}
	assert_non_null(legacy_copy);
	assert_non_null(legacy_mfill);
	assert_non_null(legacy_mse);
	assert_int_equal(roles_at(legacy_copy, copy, 3, r), 1);
	expect_roles(r, "?WR");
	/* by count alone this one is not known (3 pointers, 2 tensors) */
	struct op_sem s;
	sem_classify(legacy_copy, &s);
	assert_int_equal(sem_roles_named(legacy_copy, &s, 3, r), 0);
	/* masked_fill (in place: data[0] == data[1]) and mse_backward, from the probes */
	const struct sem_ptr mf[] = {{1, 192, 656}, {1, 208, 656}, {1, 248, 656},
	                             {1, 608, 656}, {1, 616, 656}, {1, 624, 656}};
	assert_int_equal(roles_at(legacy_mfill, mf, 6, r), 1);
	expect_roles(r, "???WRR");
	const struct sem_ptr mse[] = {{1, 568, 760}, {1, 624, 760}, {1, 704, 760},
	                              {1, 712, 760}, {1, 720, 760}, {1, 728, 760}};
	assert_int_equal(roles_at(legacy_mse, mse, 6, r), 1);
	expect_roles(r, "??WRRR");
	/* Llama's rotary q * cos on the legacy loop over a BinaryFunctor (lambda(int)): stale
	 * words at 80 and 88 that point into live blocks, then the data array at 608 */
	const char *bin_mul =
	    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implINS0_13BinaryFunctor"
	    "IfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_"
	    "EEviT1_";
	const struct sem_ptr bm[] = {
	    {1, 80, 648}, {1, 88, 648}, {1, 608, 648}, {1, 616, 648}, {1, 624, 648}};
	assert_int_equal(roles_at(bin_mul, bm, 5, r), 1);
	expect_roles(r, "??WRR");
	/* no run of K consecutive words: not known */
	const struct sem_ptr gap[] = {{1, 608, 656}, {1, 624, 656}, {1, 640, 656}};
	assert_int_equal(roles_at(legacy_mfill, gap, 3, r), 0);
	expect_roles(r, "???");
	/* layer norm with and without gamma/beta: by parameter index */
	const struct sem_ptr ln[] = {{2, 0, 8}, {3, 0, 8}, {4, 0, 8},
	                             {5, 0, 8}, {6, 0, 8}, {7, 0, 8}};
	assert_int_equal(roles_at(K("layer norm f32"), ln, 6, r), 1);
	expect_roles(r, "RRRWWW");
	const struct sem_ptr ln4[] = {{2, 0, 8}, {5, 0, 8}, {6, 0, 8}, {7, 0, 8}};
	assert_int_equal(roles_at(K("layer norm f32"), ln4, 4, r), 1);
	expect_roles(r, "RWWW");
	/* dropout: TensorInfo data pointers first; a TensorInfo size pair is not a pointer; the
	 * philox state's seed pointer is read */
	const struct sem_ptr dr[] = {
	    {0, 0, 216}, {1, 0, 216}, {1, 96, 216}, {2, 0, 216}, {5, 0, 24}};
	assert_int_equal(roles_at(K("dropout f32"), dr, 5, r), 1);
	expect_roles(r, "RW?WR");
	/* vectorized loop: a pointer the functor captures, then data[0], data[1] */
	const struct sem_ptr ew[] = {{1, 0, 8}, {2, 0, 16}, {2, 8, 16}};
	assert_int_equal(roles_at(K("gelu f32 vectorized"), ew, 3, r), 1);
	expect_roles(r, "RWR");
	/* families without a positional layout fall back to the count rules */
	const struct sem_ptr g[] = {{0, 0, 8}, {1, 0, 8}, {2, 0, 8}};
	assert_int_equal(roles_at("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", g, 3, r), 0);
	expect_roles(r, "???");
	assert_int_equal(roles_at(K("fill f32"), NULL, 1, r), 1); /* no positions: by count */
	expect_roles(r, "W");
}

static void test_roles_unknown(void **state)
{
	unsigned char r[16];
	/* GEMM, attention, Triton, NCCL and unknown kernels: layout not known */
	assert_int_equal(roles_of("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", 3, r, 1), 0);
	expect_roles(r, "???");
	assert_int_equal(roles_of("triton_poi_fused_add_gelu_0", 3, r, 1), 0);
	assert_int_equal(roles_of("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 1, r, 1), 0);
	assert_int_equal(roles_of("_Z10add_kernelPfS_S_i", 3, r, 1), 0);
	expect_roles(r, "???");
	/* zero pointers, NULL sem */
	assert_int_equal(roles_of("_Z10add_kernelPfS_S_i", 0, r, 1), 0);
	assert_int_equal(sem_roles(NULL, 2, r), 0);
	expect_roles(r, "??");
}

/* ---------------------------------------------------------------- names */

static void expect_short(const char *name, const char *want)
{
	char *s = short_name(name);
	if (strcmp(s, want))
		print_error("short_name: got '%s'\n", s);
	assert_string_equal(s, want);
	assert_true(strlen(s) <= 90);
	free(s);
}

static void test_short_names(void **state)
{
	expect_short(K("gelu f32 vectorized"),
	             "vectorized_elementwise_kernel<4, GeluCUDAKernelImpl, array<char*, 2>>");
	expect_short(
	    K("add bf16"),
	    "vectorized_elementwise_kernel<4, CUDAFunctor_add<BFloat16>, array<char*, 3>>");
	expect_short(K("mul by scalar (AUnaryFunctor)"),
	             "vectorized_elementwise_kernel<4, MulFunctor<float>, "
	             "array<char*, 2>>");
	expect_short(K("gelu bf16 strided (legacy loop)"),
	             "elementwise_kernel<128, 4, gpu_kernel_impl_nocast<GeluCUDAKernelImpl>>");
	expect_short(K("layer norm f32"), "vectorized_layer_norm_kernel<float, float, false>");
	expect_short(K("fused adamw"), "multi_tensor_apply_kernel<…, FusedAdamMathFunctor, …>");
	expect_short("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
	             "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT");
	expect_short("triton_poi_fused_add_gelu_0", "triton_poi_fused_add_gelu_0");
	expect_short(
	    K("sum bf16"),
	    "reduce_kernel<512, 1, ReduceOp<…, sum_functor<BFloat16, float, BFloat16>, …>>");
	expect_short(K("fused adamw bf16 (enable_if return)"),
	             "multi_tensor_apply_kernel<…, FusedAdamMathFunctor, …>");
	expect_short("_Z10add_kernelPfS_S_i", "add_kernel");
	expect_short("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	             "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
	expect_short(K("flash forward"), "flash_fwd_kernel<Flash_fwd_kernel_traits, …>");
}

static void test_demangle(void **state)
{
	char *d = demangle("_Z10add_kernelPfS_S_i");
	assert_string_equal(d, "add_kernel(float*, float*, float*, int)");
	free(d);
	d = demangle(K("add f32"));
	assert_string_equal(d, "void at::native::vectorized_elementwise_kernel<4, "
	                       "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, "
	                       "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)");
	free(d);
	/* not mangled, or broken: a copy */
	d = demangle("triton_poi_fused_add_gelu_0");
	assert_string_equal(d, "triton_poi_fused_add_gelu_0");
	free(d);
	d = demangle("_ZN2at6native29vectorized_elem");
	assert_string_equal(d, "_ZN2at6native29vectorized_elem");
	free(d);
	d = demangle(NULL);
	assert_string_equal(d, "");
	free(d);
}

static void test_names_of_enums(void **state)
{
	assert_string_equal(dtype_name(DT_BF16), "bf16");
	assert_string_equal(dtype_name((enum dtype)99), "unknown");
	assert_int_equal(dtype_size(DT_BF16), 2);
	assert_int_equal(dtype_size(DT_F32), 4);
	assert_int_equal(dtype_size(DT_I64), 8);
	assert_int_equal(dtype_size(DT_FP8), 1);
	assert_int_equal(dtype_size(DT_UNKNOWN), 0);
	assert_string_equal(family_name(FAM_GEMM), "gemm");
	assert_string_equal(family_name(FAM_NCCL), "nccl");
	assert_string_equal(family_name((enum op_family)99), "other");
	for (int f = 0; f < FAM__COUNT; f++)
		assert_non_null(family_name((enum op_family)f));
}

/* ---------------------------------------------------------------- hostile input */

static void test_hostile_names(void **state)
{
	struct op_sem s;
	assert_int_equal(sem_classify(NULL, &s), FAM_OTHER);
	assert_string_equal(s.op, "unknown");
	assert_string_equal(s.rule, "none");
	assert_int_equal(sem_classify("", &s), FAM_OTHER);
	char *e = short_name("");
	assert_string_equal(e, "");
	free(e);
	e = short_name(NULL);
	assert_string_equal(e, "");
	free(e);

	/* 100 KB: unmatched brackets, a mangled-looking prefix, deep nesting */
	size_t n = 100 * 1024;
	char *big = malloc(n + 1);
	assert_non_null(big);
	const char *fills[] = {"<",        "(",    "_ZN",
	                       "a<b(c{d[", ">)}]", "vectorized_elementwise_kernel<"};
	for (size_t k = 0; k < sizeof(fills) / sizeof(fills[0]); k++) {
		size_t m = strlen(fills[k]);
		for (size_t i = 0; i < n; i++)
			big[i] = fills[k][i % m];
		big[n] = '\0';
		if (k == 2)
			memcpy(big, "_Z", 2);
		sem_classify(big, &s);
		assert_non_null(s.op);
		char *sh = short_name(big);
		assert_true(strlen(sh) < 200);
		free(sh);
		char *d = demangle(big);
		free(d);
		unsigned char r[4];
		sem_roles_named(big, &s, 4, r);
	}
	/* a long Triton name: op interned, bounded */
	memset(big, 'x', n);
	memcpy(big, "triton_poi_fused_", 17);
	big[n] = '\0';
	sem_classify(big, &s);
	assert_int_equal(s.family, FAM_TRITON);
	assert_true(strlen(s.op) <= 200);
	free(big);
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);
	struct CMUnitTest *t = calloc(n + 16, sizeof(*t));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		t[k].name = cases[i].what;
		t[k].test_func = test_case;
		t[k].initial_state = (void *)&cases[i];
		k++;
	}
	const struct CMUnitTest more[] = {
	    cmocka_unit_test(test_library_forms),
	    cmocka_unit_test(test_roles_elementwise),
	    cmocka_unit_test(test_roles_dropout),
	    cmocka_unit_test(test_roles_norm),
	    cmocka_unit_test(test_roles_softmax_reduce_optim),
	    cmocka_unit_test(test_roles_unknown),
	    cmocka_unit_test(test_roles_at),
	    cmocka_unit_test(test_short_names),
	    cmocka_unit_test(test_demangle),
	    cmocka_unit_test(test_names_of_enums),
	    cmocka_unit_test(test_hostile_names),
	};
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		t[k++] = more[i];
	int r = _cmocka_run_group_tests("semantics", t, k, NULL, NULL);
	free(t);
	return r;
}
