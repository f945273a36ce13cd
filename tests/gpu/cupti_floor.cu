/*
 * cupti_floor.cu - what CUPTI itself costs a kernel launch, before any tool's work.
 *
 * The overhead issue's question: of the shim's added microseconds a launch, how many are
 * CUPTI's callback dispatch and activity records (a floor no tool code can go under while it
 * uses them), and what would the ways around them cost. One process per mode (argv[1]); each
 * times batches of 1,000 launches of an empty kernel through the dynamic runtime's
 * cudaLaunchKernel (as PyTorch launches), CPU time of the launch calls only (the batch is
 * synchronised outside the timing, so the queue never fills), and prints the median
 * nanoseconds a launch as one JSON line.
 *   bare      nothing
 *   cb        CUPTI subscribed, the driver's cuLaunchKernel callback on, the callback empty
 *   cbrt      as cb, on the runtime's cudaLaunchKernel callback instead
 *   act       kernel activity records on (CONCURRENT_KERNEL), no callback
 *   cbact     cb and act
 *   actext    act, and an external correlation id pushed and popped around every launch
 *   actgf     act, and cudaGetFuncBySymbol on every launch (mapping a stub to its CUfunction)
 *   interp    act, and the work an interposed launch would add: the stub's CUfunction
 *             from a one-entry cache and an external id pushed and popped
 *   pcb, pact, pext  paired, within one process: batches alternate between off and on (the
 *             cuLaunchKernel callback, the kernel activity kind, an external id pushed and
 *             popped with kernel activity on), switched outside the timing; prints the
 *             medians of both and the median of the paired differences (on - off), which
 *             process-to-process noise does not reach
 *   pgpu, pgpucb  the GPU's side, paired: batches of 1,000 launches of a kernel that spins
 *             about 8 µs on 132 blocks (longer than a launch takes the host, so the queue
 *             stays ahead and the GPU runs them back to back), the GPU time of a batch from
 *             events around it, alternating between kernel activity records off and on
 *             (pgpucb: and the cuLaunchKernel callback with them). What kernel timing costs
 *             the GPU a kernel (ns_added: on - off, a kernel), which the CPU-time modes cannot
 *             see and which a host-bound step hides until the GPU bounds it
 * Build and run: tests/gpu/cupti-floor.sh.
 */
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

__global__ void empty_kernel(int x)
{
	(void)x;
}

/* spins about ns nanoseconds of the SM's clock (a real kernel's length, without its memory) */
__global__ void spin_kernel(long long cycles)
{
	const long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

static void CUPTIAPI on_cb(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *)
{
}

static size_t nrec;

static void CUPTIAPI buf_req(uint8_t **b, size_t *size, size_t *max)
{
	*size = 8u << 20;
	*b = (uint8_t *)aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid)
{
	CUpti_Activity *r = NULL;
	while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
		nrec++;
	free(b);
}

#define CK(x)                                                                                      \
	do {                                                                                       \
		int r_ = (int)(x);                                                                 \
		if (r_) {                                                                          \
			fprintf(stderr, "%s: %d\n", #x, r_);                                       \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}


/* What a batch does around each launch: an external id pushed and popped (ext), the stub's
 * CUfunction looked up every time (gf), or through a one-entry cache (cache, non-NULL). */
struct around {
	int ext, gf;
	cudaFunction_t *cache;
	uint64_t id;
};

/* CPU nanoseconds a launch over 1,000 launches; the batch is synchronised after the timing. */
static double batch_ns(const void *stub, void **args, struct around *w)
{
	static const void *cached_stub;
	double t0 = now_ns();
	for (int i = 0; i < 1000; i++) {
		if (w->gf || (w->cache && cached_stub != stub)) {
			cudaFunction_t f;
			cudaGetFuncBySymbol(&f, stub);
			if (w->cache)
				*w->cache = f, cached_stub = stub;
		}
		if (w->ext)
			cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
			                                       w->id++);
		cudaLaunchKernel(stub, dim3(1), dim3(1), args, 0, 0);
		if (w->ext) {
			uint64_t last;
			cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
			                                      &last);
		}
	}
	double t1 = now_ns();
	cudaDeviceSynchronize();
	return (t1 - t0) / 1000.0;
}

/* A paired mode: batches + warm pairs, each a batch in the state off and one in the state on
 * (set(st) switches it, outside the timing; measure() times a batch), which goes first
 * alternating, so that neither is always warmer; the first warm pairs are left out. Prints one
 * JSON line: the medians of both states (under off_key and on_key) and of the paired
 * differences, with the differences' quartiles. */
template <typename Set, typename Measure>
static void run_pairs(const char *m, int batches, int warm, const char *off_key,
                      const char *on_key, Set set, Measure measure)
{
	std::vector<double> off, on, diff;
	for (int b = 0; b < batches + warm; b++) {
		double t[2];
		for (int k = 0; k < 2; k++) {
			int st = (b & 1) ? !k : k;
			set(st);
			t[st] = measure();
		}
		if (b >= warm) {
			off.push_back(t[0]);
			on.push_back(t[1]);
			diff.push_back(t[1] - t[0]);
		}
	}
	cuptiActivityFlushAll(1);
	std::sort(off.begin(), off.end());
	std::sort(on.begin(), on.end());
	std::sort(diff.begin(), diff.end());
	size_t h = diff.size() / 2;
	printf("{\"mode\":\"%s\",\"%s\":%.1f,\"%s\":%.1f,\"ns_added\":%.1f,"
	       "\"added_p25\":%.1f,\"added_p75\":%.1f,\"records\":%zu}\n",
	       m, off_key, off[h], on_key, on[h], diff[h], diff[diff.size() / 4],
	       diff[diff.size() * 3 / 4], nrec);
}

/* GPU nanoseconds a kernel over 1,000 back-to-back spin kernels (events around the batch) */
static double batch_gpu_ns(long long cycles, cudaEvent_t e0, cudaEvent_t e1)
{
	cudaEventRecord(e0, 0);
	for (int i = 0; i < 1000; i++)
		spin_kernel<<<132, 128>>>(cycles);
	cudaEventRecord(e1, 0);
	cudaEventSynchronize(e1);
	float ms = 0;
	cudaEventElapsedTime(&ms, e0, e1);
	return ms * 1e6 / 1000.0;
}

static int run_paired_gpu(const char *m, int batches)
{
	CUpti_SubscriberHandle sub;
	int cb = !strcmp(m, "pgpucb");
	CK(cuptiActivityRegisterCallbacks(buf_req, buf_done));
	if (cb)
		CK(cuptiSubscribe(&sub, on_cb, NULL));
	int khz = 0;
	CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
	const long long cycles = (long long)khz * 8 / 1000; /* about 8 µs at the rated clock */
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	run_pairs(
	    m, batches, 5, "gpu_ns_off", "gpu_ns_on",
	    [&](int st) {
		    if (st)
			    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		    else
			    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		    if (cb)
			    cuptiEnableCallback((uint32_t)st, sub, CUPTI_CB_DOMAIN_DRIVER_API,
			                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
	    },
	    [&] { return batch_gpu_ns(cycles, e0, e1); });
	return 0;
}

static int run_paired(const char *m, int batches)
{
	CUpti_SubscriberHandle sub;
	int x = 1;
	void *args[] = {&x};
	const void *stub = (const void *)empty_kernel;
	struct around w = {0, 0, NULL, 1};
	if (!strcmp(m, "pcb"))
		CK(cuptiSubscribe(&sub, on_cb, NULL));
	else {
		CK(cuptiActivityRegisterCallbacks(buf_req, buf_done));
		if (!strcmp(m, "pext")) {
			CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
			CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
		}
	}
	run_pairs(
	    m, batches, 20, "ns_off", "ns_on",
	    [&](int st) {
		    if (!strcmp(m, "pcb"))
			    cuptiEnableCallback((uint32_t)st, sub, CUPTI_CB_DOMAIN_DRIVER_API,
			                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
		    else if (!strcmp(m, "pact")) {
			    if (st)
				    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
			    else
				    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		    }
		    w.ext = !strcmp(m, "pext") && st;
	    },
	    [&] { return batch_ns(stub, args, &w); });
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "bare";
	int batches = argc > 2 ? atoi(argv[2]) : 200;
	CK(cudaFree(0));
	CUpti_SubscriberHandle sub;
	int cb = !strcmp(m, "cb") || !strcmp(m, "cbact") || !strcmp(m, "cbrt");
	int act = !strncmp(m, "act", 3) || !strcmp(m, "cbact") || !strcmp(m, "interp");
	int ext = !strcmp(m, "actext") || !strcmp(m, "interp");
	int gf = !strcmp(m, "actgf");
	int interp = !strcmp(m, "interp");
	int paired = m[0] == 'p' && strcmp(m, "interp") != 0;
	if (!strncmp(m, "pgpu", 4))
		return run_paired_gpu(m, batches < 60 ? batches : 60);
	if (paired)
		return run_paired(m, batches);
	if (cb) {
		CK(cuptiSubscribe(&sub, on_cb, NULL));
		if (!strcmp(m, "cbrt"))
			CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
			                       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
		else
			CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
			                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
	}
	if (act) {
		CK(cuptiActivityRegisterCallbacks(buf_req, buf_done));
		CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
		if (ext)
			CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
	}
	int x = 1;
	void *args[] = {&x};
	cudaFunction_t cached_fn = NULL;
	struct around w = {ext, gf, interp ? &cached_fn : NULL, 1};
	std::vector<double> per;
	for (int b = 0; b < batches + 20; b++) {
		double ns = batch_ns((const void *)empty_kernel, args, &w);
		if (b >= 20)
			per.push_back(ns);
	}
	if (interp && !cached_fn)
		fprintf(stderr, "no CUfunction for the stub\n");
	if (act)
		cuptiActivityFlushAll(1);
	std::sort(per.begin(), per.end());
	printf("{\"mode\":\"%s\",\"ns_per_launch\":%.1f,\"p10\":%.1f,\"p90\":%.1f,\"records\":%zu}\n",
	       m, per[per.size() / 2], per[per.size() / 10], per[per.size() * 9 / 10], nrec);
	return 0;
}
