/*
 * libcuda_mock.c - the CUDA driver as far as the shim's start needs it on a machine without a
 * GPU (built as build/mock/libcuda.so.1, never into the shim or core.a): a driver version and
 * no devices. test-window loads it by path before the shim's cupti_start() opens
 * "libcuda.so.1", which then finds this copy by its soname. Every other entry point the shim
 * looks up is absent, as the shim allows.
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
