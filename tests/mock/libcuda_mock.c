/*
 * libcuda_mock.c - the CUDA driver as far as the shim's start needs it on a machine without a
 * GPU (built as build/mock/libcuda.so.1, never into the shim or core.a): a driver version and
 * no devices, and two kinds of kernel: every CUfunction is "mock_kernel(void *a, void *b, int n)"
 * (parameters at offsets 0, 8 and 16), but MOCK_LEGACY_FN, which is ATen's strided loop by name
 * (at::native::elementwise_kernel<128, 4, ...>(int N, closure)) with a 640-byte closure at 8;
 * the handles 0x6000 to 0x600f have mock_kernel's parameters under names of their own
 * ("mock_step_0" ...), for a loop of several kernels (the step window's test).
 * test-window loads it by path before the shim's cupti_start() opens "libcuda.so.1", which then
 * finds this copy by its soname. Every other entry point the shim looks up is absent, as the shim
 * allows.
 */
#include <cuda.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 13000;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = 0;
	return CUDA_SUCCESS;
}

#define MOCK_LEGACY_FN ((CUfunction)0x7000)

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
	if (!name || !f)
		return CUDA_ERROR_INVALID_VALUE;
	/* 0x6000 + k (k < 16): a kernel of its own name, for a loop of several kernels */
	static const char *const step[16] = {
	    "mock_step_0",  "mock_step_1",  "mock_step_2",  "mock_step_3",
	    "mock_step_4",  "mock_step_5",  "mock_step_6",  "mock_step_7",
	    "mock_step_8",  "mock_step_9",  "mock_step_10", "mock_step_11",
	    "mock_step_12", "mock_step_13", "mock_step_14", "mock_step_15"};
	uintptr_t u = (uintptr_t)f;
	if (u >= 0x6000 && u < 0x6000 + 16) {
		*name = step[u - 0x6000];
		return CUDA_SUCCESS;
	}
	*name = f == MOCK_LEGACY_FN
	            ? "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_"
	              "impl_nocastINS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunc"
	              "torIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_"
	            : "mock_kernel";
	return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
	static const size_t o[] = {0, 8, 16}, n[] = {8, 8, 4};
	static const size_t lo[] = {0, 8}, ln[] = {4, 640};
	if (!f || !off || !size || i >= (f == MOCK_LEGACY_FN ? 2u : 3u))
		return CUDA_ERROR_INVALID_VALUE;
	*off = f == MOCK_LEGACY_FN ? lo[i] : o[i];
	*size = f == MOCK_LEGACY_FN ? ln[i] : n[i];
	return CUDA_SUCCESS;
}
