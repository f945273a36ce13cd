/*
 * libcuda_mock.c - the CUDA driver as far as the shim's start needs it on a machine without a
 * GPU (built as build/mock/libcuda.so.1, never into the shim or core.a): a driver version and
 * no devices, and one kind of kernel: every CUfunction is "mock_kernel(void *a, void *b, int n)"
 * (parameters at offsets 0, 8 and 16). test-window loads it by path before the shim's
 * cupti_start() opens "libcuda.so.1", which then finds this copy by its soname. Every other
 * entry point the shim looks up is absent, as the shim allows.
 */
#include <cuda.h>

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

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
	if (!name || !f)
		return CUDA_ERROR_INVALID_VALUE;
	*name = "mock_kernel";
	return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
	static const size_t o[] = {0, 8, 16}, n[] = {8, 8, 4};
	if (!f || !off || !size || i >= 3)
		return CUDA_ERROR_INVALID_VALUE;
	*off = o[i];
	*size = n[i];
	return CUDA_SUCCESS;
}
