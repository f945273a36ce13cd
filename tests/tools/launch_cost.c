/*
 * launch_cost.c - the launcher of tests/tools/launch-cost.sh: fires n launches of the mock
 * driver's kernel through the (mock) CUPTI callbacks, enter and exit, as the driver would, so
 * that the shim's launch path (parameter scan, attribution, the record) runs on a CPU-only
 * machine. Loaded by Python with ctypes, which releases the GIL around the call, as PyTorch's
 * bindings do around an op. lc_blocks fires PyTorch's caching-allocator reports instead (the
 * mock libc10_cuda.so's mock_block, through its GOT, as the real allocator reports a block
 * handed out and taken back), for the shim's allocation path. lc_launch_cold makes each launch
 * find the caches as a real program's does: a sweep of a buffer before it (the op's own host
 * work evicts the shim's lines and the interpreter's frames from L1 and L2), a short spin between
 * its entry and its exit (the driver's work a launch, which evicts little).
 */
#include <cupti.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t (*fire)(CUpti_CallbackDomain, CUpti_CallbackId, int, const void *, const void *);
static uint64_t a0, a1 = 0x1234;
static int a2 = 42;
static void *kp[3] = {&a0, &a1, &a2};
/* the mock's ATen strided loop (0x7000): numel and a 640-byte closure with two pointers */
static int numel = 4096;
static unsigned char closure[640];
static void *kl[2] = {&numel, closure};

int lc_init(const char *mock_cupti, uint64_t base)
{
	void *h = dlopen(mock_cupti, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen(mock_cupti, RTLD_NOW);
	if (!h)
		return -1;
	*(void **)&fire = dlsym(h, "mock_fire_call");
	a0 = base + 256;
	for (int i = 0; i < 640; i++)
		closure[i] = (unsigned char)(i * 7 + 3);
	uint64_t d0 = base + 512, d1 = base + 1024, out = 0x1234; /* out: in no allocation */
	memcpy(closure, &d0, 8);
	memcpy(closure + 8, &d1, 8);
	memcpy(closure + 16, &out, 8);
	return fire ? 0 : -1;
}

/* an allocation of 1 MiB at base, so that the first parameter resolves into it */
void lc_alloc(uint64_t base)
{
	static CUdeviceptr b;
	static const CUresult ok = CUDA_SUCCESS;
	b = base;
	cuMemAlloc_v2_params ap = {&b, 1 << 20};
	fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 0, &ap, NULL);
	fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 1, &ap, &ok);
}

void lc_launch(int n)
{
	static const CUresult ok = CUDA_SUCCESS;
	cuLaunchKernel_params lp = {(CUfunction)0x5000, 4, 1, 1, 128, 1, 1, 0, NULL, kp, NULL};
	for (int i = 0; i < n; i++) {
		fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, &lp,
		     NULL);
		fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1, &lp,
		     &ok);
	}
}

/* n launches, each after writing one byte a cache line of a sweep_kb KiB buffer, and with a spin
 * of about spin_ns between its entry and exit callbacks; 0, or -1 when the buffer cannot be had */
int lc_launch_cold(int n, int sweep_kb, int spin_ns)
{
	static const CUresult ok = CUDA_SUCCESS;
	static volatile unsigned char *buf;
	static size_t have;
	size_t bytes = (size_t)(sweep_kb > 0 ? sweep_kb : 1) << 10;
	if (have < bytes) {
		free((void *)buf);
		if (!(buf = malloc(bytes)))
			return -1;
		have = bytes;
	}
	cuLaunchKernel_params lp = {(CUfunction)0x5000, 4, 1, 1, 128, 1, 1, 0, NULL, kp, NULL};
	for (int i = 0; i < n; i++) {
		for (size_t k = 0; k < bytes; k += 64)
			buf[k]++;
		fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, &lp,
		     NULL);
		for (volatile int s = 0; s < spin_ns / 2; s++)
			;
		fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1, &lp,
		     &ok);
	}
	return 0;
}

/* n launches alternating the mock kernel and the strided loop (its closure kept whole) */
void lc_launch_mixed(int n)
{
	static const CUresult ok = CUDA_SUCCESS;
	cuLaunchKernel_params lp = {(CUfunction)0x5000, 4, 1, 1, 128, 1, 1, 0, NULL, kp, NULL};
	cuLaunchKernel_params ll = {(CUfunction)0x7000, 32, 1, 1, 128, 1, 1, 0, NULL, kl, NULL};
	for (int i = 0; i < n; i++) {
		const cuLaunchKernel_params *q = i % 2 ? &ll : &lp;
		fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, q,
		     NULL);
		fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1, q, &ok);
	}
}

/* a loop's step: n launches over k kernels of their own names (the mock's 0x6000 + j, k <= 16)
 * in an order with no period shorter than the step's, as a training step launches its kernels */
void lc_launch_step(int n, int k)
{
	static const CUresult ok = CUDA_SUCCESS;
	for (int i = 0; i < n; i++) {
		static const unsigned char order[64] = {
		    10, 4, 12, 1,  2,  3,  11, 1,  6,  1,  2,  13, 13, 2,  7,  2,
		    13, 1, 3,  7,  1,  12, 1,  7,  1,  4,  9,  13, 4,  3,  9,  5,
		    3,  6, 11, 3,  2,  1,  6,  15, 13, 10, 14, 14, 11, 9,  7,  5,
		    7,  2, 9,  15, 10, 14, 9,  2,  3,  13, 5,  10, 4,  15, 13, 1}; /* random */
		int j = order[i % 64] % (k > 0 && k <= 16 ? k : 1);
		cuLaunchKernel_params lp = {
		    (CUfunction)(uintptr_t)(0x6000 + j), 4, 1, 1, 128, 1, 1, 0, NULL, kp, NULL};
		fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, &lp,
		     NULL);
		fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1, &lp,
		     &ok);
	}
}

/* n blocks handed out and taken back, through the mock allocator's report (loaded by the
 * caller); 0, or -1 when mock_block is not in the process */
int lc_blocks(int n, uint64_t base)
{
	static void (*block)(void *, int64_t, int, int);
	if (!block)
		*(void **)&block = dlsym(RTLD_DEFAULT, "mock_block");
	if (!block)
		return -1;
	for (int i = 0; i < n; i++) {
		void *p = (void *)(uintptr_t)(base + 4096 + (uint64_t)(i % 64) * 512);
		block(p, 512, 1, 0);
		block(p, -512, 1, 0);
	}
	return 0;
}
