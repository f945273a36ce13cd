/*
 * cupti.c - CUPTI subscription, callbacks and activity records.
 *
 * Every CUPTI and driver function the shim calls is listed once in CUPTI_FUNCS / CU_FUNCS and
 * resolved with dlsym from the library already in the process (so a program and the shim never
 * see two copies of CUPTI). Only the callback ids in the tables below are enabled; whole
 * domains cost microseconds per launch.
 *
 * Launches are recorded at the API's exit (the kernel is loaded then, and the result known):
 * the parameter layout comes from cuFuncGetParamInfo, or cuKernelGetParamInfo when the handle
 * is a library kernel, cached per handle; each parameter's 8-byte-aligned words that fall in
 * the range of device allocations are looked up in the allocation map. Activity records
 * (kernels, copies, sets) are converted on CUPTI's thread into ring records, joined offline by
 * correlation id. Calibration mode (AICPROF_WRITES=probe) fingerprints the allocations a
 * launch points into before and after it, for the first few launches of each kernel name.
 * Capture range (AICPROF_CAPTURE=profiler-api): recording starts paused and follows the
 * program's cuProfilerStart (at its exit) and cuProfilerStop (at its entry). Paused, only the
 * allocation callbacks (the map must stay true), the profiler's two and the resource ones stay
 * on; the launch, copy, sync and NVTX callbacks are off, so a paused program pays for no
 * launch. The activity kinds stay on (their records cost the program's threads nothing
 * measurable, docs/perf.md), and only the records whose correlation id falls inside a range
 * are kept: a range is the ids between its start's and its stop's, which CUPTI hands out in
 * the order of the calls. Turning the kinds on and off inside the profiler's callbacks lost
 * every kernel record of the range on the H200. Each change writes a `capture` line.
 */
#include "preload/cupti.h"
#include "preload/allocguard.h"
#include "preload/argscan.h"
#include "preload/poolhook.h"
#include "preload/base.h"
#include "preload/cuptimux.h"
#include "preload/nccl.h"
#include "preload/ptrmap.h"
#include "preload/record.h"
#include "preload/ring.h"
#include "preload/selftime.h"
#include "preload/sites.h"
#include "preload/writer.h"

#include <cuda.h>
#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- late-bound functions ---------------------------------------------------------------- */

#define CUPTI_FUNCS(X)                                                                             \
	X(cuptiSubscribe, CUptiResult, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))     \
	X(cuptiUnsubscribe, CUptiResult, (CUpti_SubscriberHandle))                                 \
	X(cuptiEnableCallback, CUptiResult,                                                        \
	  (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId))              \
	X(cuptiActivityEnable, CUptiResult, (CUpti_ActivityKind))                                  \
	X(cuptiActivityDisable, CUptiResult, (CUpti_ActivityKind))                                 \
	X(cuptiActivityRegisterCallbacks, CUptiResult,                                             \
	  (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                   \
	X(cuptiActivityGetNextRecord, CUptiResult, (uint8_t *, size_t, CUpti_Activity **))         \
	X(cuptiActivityGetNumDroppedRecords, CUptiResult, (CUcontext, uint32_t, size_t *))         \
	X(cuptiActivityFlushAll, CUptiResult, (uint32_t))                                          \
	X(cuptiGetVersion, CUptiResult, (uint32_t *))                                              \
	X(cuptiGetTimestamp, CUptiResult, (uint64_t *))                                            \
	X(cuptiGetResultString, CUptiResult, (CUptiResult, const char **))

#define CU_FUNCS(X)                                                                                \
	X(cuFuncGetParamInfo, "cuFuncGetParamInfo", CUresult,                                      \
	  (CUfunction, size_t, size_t *, size_t *))                                                \
	X(cuKernelGetParamInfo, "cuKernelGetParamInfo", CUresult,                                  \
	  (CUkernel, size_t, size_t *, size_t *))                                                  \
	X(cuFuncGetName, "cuFuncGetName", CUresult, (const char **, CUfunction))                   \
	X(cuKernelGetName, "cuKernelGetName", CUresult, (const char **, CUkernel))                 \
	X(cuFuncLoad, "cuFuncLoad", CUresult, (CUfunction))                                        \
	X(cuDeviceGetCount, "cuDeviceGetCount", CUresult, (int *))                                 \
	X(cuDeviceGet, "cuDeviceGet", CUresult, (CUdevice *, int))                                 \
	X(cuDeviceGetName, "cuDeviceGetName", CUresult, (char *, int, CUdevice))                   \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult,                                  \
	  (int *, CUdevice_attribute, CUdevice))                                                   \
	X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult, (size_t *, CUdevice))                 \
	X(cuDriverGetVersion, "cuDriverGetVersion", CUresult, (int *))                             \
	X(cuCtxSynchronize, "cuCtxSynchronize", CUresult, (void))                                  \
	X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void *, CUdeviceptr, size_t))                \
	X(cuStreamIsCapturing, "cuStreamIsCapturing", CUresult, (CUstream, CUstreamCaptureStatus *))

#define DECL_CUPTI(name, ret, args)    static ret(*p_##name) args;
#define DECL_CU(field, sym, ret, args) static ret(*p_##field) args;
CUPTI_FUNCS(DECL_CUPTI)
CU_FUNCS(DECL_CU)

static CUpti_SubscriberHandle subscriber;
static int started;

/* ---- API names (indexes stored in records) ---------------------------------------------- */

/* clang-format off */
#define APIS(X) \
	X(cuLaunchKernel) \
	X(cuLaunchKernel_ptsz) \
	X(cuLaunchKernelEx) \
	X(cuLaunchKernelEx_ptsz) \
	X(cuLaunchCooperativeKernel) \
	X(cuLaunchCooperativeKernel_ptsz) \
	X(cuGraphLaunch) \
	X(cuGraphLaunch_ptsz) \
	X(cuMemAlloc_v2) \
	X(cuMemAllocPitch_v2) \
	X(cuMemAllocManaged) \
	X(cuMemAllocAsync) \
	X(cuMemAllocAsync_ptsz) \
	X(cuMemAllocFromPoolAsync) \
	X(cuMemAllocFromPoolAsync_ptsz) \
	X(cuMemFree_v2) \
	X(cuMemFreeAsync) \
	X(cuMemFreeAsync_ptsz) \
	X(cuMemAddressReserve) \
	X(cuMemAddressFree) \
	X(cuMemMap) \
	X(cuMemUnmap) \
	X(cuMemcpy) \
	X(cuMemcpyAsync) \
	X(cuMemcpy_ptds) \
	X(cuMemcpyAsync_ptsz) \
	X(cuMemcpyHtoD_v2) \
	X(cuMemcpyDtoH_v2) \
	X(cuMemcpyDtoD_v2) \
	X(cuMemcpyHtoDAsync_v2) \
	X(cuMemcpyDtoHAsync_v2) \
	X(cuMemcpyDtoDAsync_v2) \
	X(cuMemcpyHtoDAsync_v2_ptsz) \
	X(cuMemcpyDtoHAsync_v2_ptsz) \
	X(cuMemcpyDtoDAsync_v2_ptsz) \
	X(cuMemcpyHtoD_v2_ptds) \
	X(cuMemcpyDtoH_v2_ptds) \
	X(cuMemcpyDtoD_v2_ptds) \
	X(cuMemcpyPeer) \
	X(cuMemcpyPeerAsync) \
	X(cuMemsetD8_v2) \
	X(cuMemsetD16_v2) \
	X(cuMemsetD32_v2) \
	X(cuMemsetD8Async) \
	X(cuMemsetD16Async) \
	X(cuMemsetD32Async) \
	X(cuMemsetD8Async_ptsz) \
	X(cuMemsetD16Async_ptsz) \
	X(cuMemsetD32Async_ptsz) \
	X(cuStreamSynchronize) \
	X(cuStreamSynchronize_ptsz) \
	X(cuCtxSynchronize) \
	X(cuEventSynchronize) \
	X(cuStreamWaitEvent) \
	X(cuStreamWaitEvent_ptsz) \
	X(cuEventRecord) \
	X(cuEventRecord_ptsz) \
	X(cuEventRecordWithFlags) \
	X(cuEventRecordWithFlags_ptsz) \
	X(cuProfilerStart) \
	X(cuProfilerStop)
/* clang-format on */

enum api_idx {
#define ENUM_API(n) A_##n,
	APIS(ENUM_API) A__COUNT
};
static const char *const api_names[] = {
#define NAME_API(n) #n,
    APIS(NAME_API)};
static const CUpti_CallbackId api_cbid[] = {
#define CBID_API(n) CUPTI_DRIVER_TRACE_CBID_##n,
    APIS(CBID_API)};
static int16_t cbid_to_api[1024];

/* the api of the caching allocator's blocks (poolhook.c), which no CUDA call makes */
#define API_C10_BLOCK A__COUNT

const char *cupti_api_name(unsigned a)
{
	return a < A__COUNT ? api_names[a] : a == API_C10_BLOCK ? "c10::CachingAllocator" : "?";
}

/* ---- interned strings (kernel names) ----------------------------------------------------- */

#define STR_TABLE (1u << 16)
struct str_ent {
	_Atomic uint64_t key; /* hash of the text, 0 = empty */
	uint32_t id;
};
static struct str_ent *strs;
static pthread_mutex_t str_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_str;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ? h : 1;
}

/* Returns the id of s, writing a "str" record the first time. Thread-safe. */
static uint32_t intern(const char *s)
{
	if (!s)
		s = "?";
	uint64_t h = hash_str(s);
	uint32_t i = (uint32_t)h & (STR_TABLE - 1);
	for (uint32_t n = 0; n < STR_TABLE; n++, i = (i + 1) & (STR_TABLE - 1)) {
		uint64_t k = atomic_load_explicit(&strs[i].key, memory_order_acquire);
		if (k == h)
			return strs[i].id;
		if (!k)
			break;
	}
	pthread_mutex_lock(&str_lock);
	i = (uint32_t)h & (STR_TABLE - 1);
	uint32_t id = 0;
	for (uint32_t n = 0; n < STR_TABLE; n++, i = (i + 1) & (STR_TABLE - 1)) {
		uint64_t k = atomic_load(&strs[i].key);
		if (k == h) {
			id = strs[i].id;
			break;
		}
		if (!k) {
			id = next_str++;
			size_t len = strlen(s);
			size_t cap = len * 6 + 64;
			char *buf = malloc(cap);
			if (buf) {
				struct jbuf b = {buf, 0, cap, 0};
				jb_s(&b, "{\"t\":\"str\",\"id\":");
				jb_u64(&b, id);
				jb_key(&b, "s"), jb_str(&b, s);
				jb_s(&b, "}");
				writer_meta(buf, b.len);
				free(buf);
			}
			strs[i].id = id;
			atomic_store_explicit(&strs[i].key, h, memory_order_release);
			break;
		}
	}
	pthread_mutex_unlock(&str_lock);
	return id;
}

/* ---- parameter layouts, per function handle --------------------------------------------- */

#define FN_TABLE (1u << 14)
/*
 * A function handle's layout. Immutable once published: a launch on another thread may be
 * reading it while a newer one replaces it, so a replaced layout is never freed (it stays on
 * the retired list; one per handle per module unload that preceded its next launch).
 */
struct fn_layout {
	uint32_t gen;  /* fn_gen when it was queried */
	uint32_t name; /* interned kernel name */
	int32_t err;   /* 0, or CUresult of the failed layout query */
	int nparams;
	uint32_t nraw;  /* bytes of the parameters a launch keeps whole (record.h), 0 none */
	uint32_t total; /* bytes of all the parameters (a deferred launch copies them) */
	struct fn_layout *retired;
	uint32_t *off, *size; /* nparams each, in the same allocation */
};
struct fn_ent {
	_Atomic(void *) f; /* published after lay */
	_Atomic(struct fn_layout *) lay;
	_Atomic int probes; /* calibrated launches so far */
};
static struct fn_ent *fns;
static pthread_mutex_t fn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fn_layout *fn_retired;
/*
 * Bumped when a module is unloaded or a context destroyed: the driver reuses the addresses of
 * freed function handles, so a layout cached under a handle is trusted only if no unload came
 * between its query and this launch. (JAX's autotuner loads and unloads modules by the hundred;
 * a stale layout with more parameters than the new kernel has made the pointer scan read past
 * the launch's kernelParams array: SIGSEGV in 16 of 19 runs on the H200.)
 */
static _Atomic uint32_t fn_gen;

void cupti_functions_unloaded(void)
{
	atomic_fetch_add_explicit(&fn_gen, 1, memory_order_acq_rel);
}

static int query_layout(CUfunction f, uint32_t *off, uint32_t *size, int max, int32_t *err)
{
	int n = 0;
	int use_kernel = 0;
	for (; n < max; n++) {
		size_t o, s;
		CUresult r = CUDA_ERROR_NOT_SUPPORTED;
		if (!use_kernel && p_cuFuncGetParamInfo)
			r = p_cuFuncGetParamInfo(f, (size_t)n, &o, &s);
		if (r != CUDA_SUCCESS && n == 0 && p_cuKernelGetParamInfo) {
			CUresult r2 = p_cuKernelGetParamInfo((CUkernel)f, 0, &o, &s);
			if (r2 == CUDA_SUCCESS) {
				use_kernel = 1;
				r = r2;
			}
		} else if (use_kernel) {
			r = p_cuKernelGetParamInfo((CUkernel)f, (size_t)n, &o, &s);
		}
		if (r == CUDA_ERROR_INVALID_VALUE && n > 0)
			break; /* past the last parameter */
		if (r != CUDA_SUCCESS) {
			*err = (int32_t)r;
			return n;
		}
		off[n] = (uint32_t)o;
		size[n] = (uint32_t)s;
	}
	*err = 0;
	return n;
}

/* Queries f's name and parameter layout; returns a new layout, or NULL when out of memory. */
static struct fn_layout *new_layout(CUfunction f, uint32_t gen)
{
	const char *name = NULL;
	if (!p_cuFuncGetName || p_cuFuncGetName(&name, f) != CUDA_SUCCESS || !name) {
		name = NULL;
		if (p_cuKernelGetName)
			p_cuKernelGetName(&name, (CUkernel)f);
	}
	uint32_t off[MAX_ARGS], size[MAX_ARGS];
	int32_t err = 0;
	int n = query_layout(f, off, size, MAX_ARGS, &err);
	if (n == 0 && err == CUDA_ERROR_INVALID_VALUE)
		err = 0; /* a kernel without parameters */
	struct fn_layout *L = malloc(sizeof(*L) + 2 * sizeof(uint32_t) * (size_t)n);
	if (!L)
		return NULL;
	L->gen = gen;
	L->name = intern(name ? name : "?");
	L->err = err;
	L->nparams = n;
	/* at::native::elementwise_kernel<nt, vt, func_t>: the loop ATen takes where its operands
	 * are not one contiguous array; func_t's closure holds the offset calculator. Its
	 * parameters of more than 12 bytes are kept whole, in order, while they fit RAW_MAX */
	int strided = name && !strncmp(name, "_ZN2at6native18elementwise_kernelI", 34);
	L->nraw = 0;
	for (int i = 0; strided && i < n && L->nraw + (size[i] > 12 ? size[i] : 0) <= RAW_MAX; i++)
		L->nraw += size[i] > 12 ? size[i] : 0;
	L->total = 0;
	for (int i = 0; i < n; i++)
		L->total += size[i] <= DEFER_MAX ? size[i] : DEFER_MAX + 1;
	L->retired = NULL;
	L->off = (uint32_t *)(L + 1);
	L->size = L->off + n;
	memcpy(L->off, off, sizeof(uint32_t) * (size_t)n);
	memcpy(L->size, size, sizeof(uint32_t) * (size_t)n);
	return L;
}

/*
 * Returns the entry of handle f and, in *lay, a layout valid for this launch; NULL when the
 * table is full or memory is out. Lock-free when f was seen since the last module unload.
 */
static struct fn_ent *fn_lookup(CUfunction f, const struct fn_layout **lay)
{
	uint64_t h = ((uint64_t)(uintptr_t)f * 0x9e3779b97f4a7c15ull) >> 40;
	uint32_t gen = atomic_load_explicit(&fn_gen, memory_order_acquire);
	uint32_t i = (uint32_t)h & (FN_TABLE - 1);
	for (uint32_t n = 0; n < FN_TABLE; n++, i = (i + 1) & (FN_TABLE - 1)) {
		void *k = atomic_load_explicit(&fns[i].f, memory_order_acquire);
		if (k == (void *)f) {
			struct fn_layout *L =
			    atomic_load_explicit(&fns[i].lay, memory_order_acquire);
			if (L && L->gen == gen) {
				*lay = L;
				return &fns[i];
			}
			break; /* stale: query again below */
		}
		if (!k)
			break;
	}
	pthread_mutex_lock(&fn_lock);
	struct fn_ent *e = NULL;
	i = (uint32_t)h & (FN_TABLE - 1);
	for (uint32_t n = 0; n < FN_TABLE / 2; n++, i = (i + 1) & (FN_TABLE - 1)) {
		void *k = atomic_load(&fns[i].f);
		if (k == (void *)f || !k) {
			struct fn_layout *old = atomic_load(&fns[i].lay);
			if (k && old && old->gen == gen) { /* another thread was first */
				e = &fns[i];
				*lay = old;
				break;
			}
			struct fn_layout *L = new_layout(f, gen);
			if (!L)
				break;
			if (old) {
				old->retired = fn_retired;
				fn_retired = old;
				atomic_store(&fns[i].probes, 0);
			}
			atomic_store_explicit(&fns[i].lay, L, memory_order_release);
			if (!k)
				atomic_store_explicit(&fns[i].f, (void *)f, memory_order_release);
			e = &fns[i];
			*lay = L;
			break;
		}
	}
	pthread_mutex_unlock(&fn_lock);
	return e;
}

/* ---- calibration ------------------------------------------------------------------------- */

#define PROBE_MAX_BYTES (64u << 20)
static __thread uint64_t probe_hash[MAX_PTRS];
static SHIM_TLS int probe_n;
static char *probe_buf;
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fingerprint(uint64_t addr)
{
	uint64_t base, size;
	if (ptrmap_find_range(addr, &base, &size) < 0)
		return 0;
	if (size > PROBE_MAX_BYTES)
		size = PROBE_MAX_BYTES;
	if (!probe_buf && !(probe_buf = malloc(PROBE_MAX_BYTES)))
		return 0;
	if (p_cuMemcpyDtoH(probe_buf, (CUdeviceptr)base, size) != CUDA_SUCCESS)
		return 0;
	uint64_t h = 1469598103934665603ull;
	const uint64_t *w = (const uint64_t *)probe_buf;
	for (size_t i = 0; i < size / 8; i++)
		h = (h ^ w[i]) * 1099511628211ull;
	for (size_t i = size & ~(size_t)7; i < size; i++)
		h = (h ^ (unsigned char)probe_buf[i]) * 1099511628211ull;
	return h | 1;
}

/* ---- launches ---------------------------------------------------------------------------- */

struct launch {
	CUfunction f;
	unsigned grid[3], block[3], smem;
	CUstream stream;
	void **kp, **extra;
};

static void *extra_buffer(void **extra)
{
	if (!extra)
		return NULL;
	for (int i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2)
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			return extra[i + 1];
	return NULL;
}

static int want_probe(struct fn_ent *e, CUstream s)
{
	if (shim_cfg.writes != WRITES_PROBE || !e)
		return 0;
	if (atomic_load(&e->probes) >= shim_cfg.probe_count)
		return 0;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (p_cuStreamIsCapturing && p_cuStreamIsCapturing(s, &cs) == CUDA_SUCCESS &&
	    cs != CU_STREAM_CAPTURE_STATUS_NONE)
		return 0;
	return 1;
}

/* Collects the pointers of a launch's parameters into ptrs, on the launching thread
 * (argscan.c); returns their count. */
static int scan_ptrs(const struct fn_layout *e, const struct launch *l, struct r_arg *args,
                     struct r_ptr *ptrs)
{
	uint64_t lo, hi;
	ptrmap_bounds(&lo, &hi);
	char *packed = l->kp ? NULL : extra_buffer(l->extra);
	const char *pp[MAX_ARGS];
	for (int i = 0; i < e->nparams; i++)
		pp[i] = l->kp ? (const char *)l->kp[i] : packed ? packed + e->off[i] : NULL;
	return argscan(e->nparams, e->off, e->size, pp, lo, hi, args, ptrs);
}

/* The fields an R_LAUNCH and an R_LAUNCH_DEFER record share. */
static void launch_head(struct r_launch *r, uint16_t type, size_t len, const CUpti_CallbackData *cb,
                        enum api_idx api, const struct launch *l, const struct fn_layout *L,
                        uint32_t site, int inh, int has_site)
{
	r->h = (struct rec_hdr){type, 0, (uint32_t)len};
	r->seq = shim_seq();
	r->ts = shim_now_ns();
	r->stream = (uint64_t)(uintptr_t)l->stream;
	r->tid = shim_tid();
	r->corr = cb->correlationId;
	r->fn = L->name;
	r->site = site;
	memcpy(r->grid, l->grid, sizeof(r->grid));
	memcpy(r->block, l->block, sizeof(r->block));
	r->smem = l->smem;
	r->result = cb->functionReturnValue ? (int32_t) * (CUresult *)cb->functionReturnValue : 0;
	r->api = (uint16_t)api;
	r->inherited = (uint8_t)inh;
	r->has_site = (uint8_t)has_site;
}

/*
 * The deferred form of a launch (record.h, R_LAUNCH_DEFER): the parameters' bytes and the
 * bounds, for the writer thread to scan. The caller has checked that it may be deferred
 * (resolved offline, no calibration, DEFER_MAX bytes at most). Returns 0 when the bytes cannot
 * be read: the launch is scanned here.
 */
static int record_deferred(const CUpti_CallbackData *cb, enum api_idx api, const struct launch *l,
                           const struct fn_layout *L, uint32_t site, int inh, int has_site,
                           const uint32_t *coll, int ncoll)
{
	char *packed = NULL;
	if (!l->kp && !(packed = extra_buffer(l->extra)))
		return 0;
	size_t len = REC_ALIGN(sizeof(struct r_launch) + sizeof(struct r_defer) +
	                       sizeof(uint32_t) * (size_t)ncoll + L->total);
	struct r_launch *r = ring_reserve(len);
	if (!r)
		return 1; /* dropped, as the scanned form would be */
	launch_head(r, R_LAUNCH_DEFER, len, cb, api, l, L, site, inh, has_site);
	r->argerr = L->err;
	r->nargs = (uint16_t)L->nparams;
	r->nptrs = 0;
	r->ncoll = (uint16_t)ncoll;
	r->nraw = (uint16_t)L->nraw;
	struct r_defer *d = (void *)(r + 1);
	d->off = (uint64_t)(uintptr_t)L->off;
	d->size = (uint64_t)(uintptr_t)L->size;
	ptrmap_bounds(&d->lo, &d->hi);
	char *tail = (char *)(d + 1);
	memcpy(tail, coll, sizeof(uint32_t) * (size_t)ncoll);
	tail += sizeof(uint32_t) * (size_t)ncoll;
	for (int i = 0; i < L->nparams; i++) {
		memcpy(tail, l->kp ? (const char *)l->kp[i] : packed + L->off[i], L->size[i]);
		tail += L->size[i];
	}
	ring_commit();
	return 1;
}

/* The R_LAUNCH record of a launch scanned on its own thread (args, ptrs: scan_ptrs). */
static void record_scanned(const CUpti_CallbackData *cb, enum api_idx api, const struct launch *l,
                           const struct fn_layout *L, const struct r_arg *args, int nargs,
                           const struct r_ptr *ptrs, int np, uint32_t site, int inh, int has_site,
                           const uint32_t *coll, int ncoll)
{
	/* the whole bytes of the larger parameters (new_layout chose them) */
	const char *packed = NULL;
	size_t nraw =
	    nargs && L->nraw && (l->kp || (packed = extra_buffer(l->extra))) ? L->nraw : 0;
	size_t len =
	    REC_ALIGN(sizeof(struct r_launch) + sizeof(struct r_arg) * (size_t)nargs +
	              sizeof(struct r_ptr) * (size_t)np + sizeof(uint32_t) * (size_t)ncoll + nraw);
	struct r_launch *r = ring_reserve(len);
	if (!r)
		return;
	launch_head(r, R_LAUNCH, len, cb, api, l, L, site, inh, has_site);
	r->argerr = shim_cfg.args ? L->err : 0;
	r->nargs = (uint16_t)nargs;
	r->nptrs = (uint16_t)np;
	r->ncoll = (uint16_t)ncoll;
	r->nraw = (uint16_t)nraw;
	char *tail = (char *)(r + 1); /* args, ptrs, coll, raw: record.h */
	memcpy(tail, args, sizeof(struct r_arg) * (size_t)nargs);
	tail += sizeof(struct r_arg) * (size_t)nargs;
	memcpy(tail, ptrs, sizeof(struct r_ptr) * (size_t)np);
	tail += sizeof(struct r_ptr) * (size_t)np;
	memcpy(tail, coll, sizeof(uint32_t) * (size_t)ncoll);
	tail += sizeof(uint32_t) * (size_t)ncoll;
	for (int i = 0; i < nargs && nraw; i++) {
		if (L->size[i] <= 12)
			continue;
		memcpy(tail, l->kp ? (const char *)l->kp[i] : packed + L->off[i], L->size[i]);
		tail += L->size[i];
		nraw -= L->size[i];
	}
	ring_commit();
}

/* A launch's source site (attribution, timed) and the NCCL collectives it carries; returns
 * whether it has a site. */
static int launch_context(uint32_t *site, int *inh, uint32_t *coll, int *ncoll)
{
	uint64_t t0 = selftime_start();
	int has_site = shim_cfg.attrib ? sites_current(site, inh) : 0;
	selftime_add(ST_SITES, t0);
	*ncoll = nccl_current(coll, NCCL_MAX_IDS);
	return has_site;
}

static void record_launch(const CUpti_CallbackData *cb, enum api_idx api, const struct launch *l)
{
	if (cb->callbackSite == CUPTI_API_ENTER && shim_cfg.writes != WRITES_PROBE)
		return;
	const struct fn_layout *L = NULL;
	struct fn_ent *e = fn_lookup(l->f, &L);
	if (!e)
		return;
	int nargs = shim_cfg.args ? L->nparams : 0;
	struct r_arg args[MAX_ARGS];
	struct r_ptr ptrs[MAX_PTRS];
	uint64_t t0;
	int np = 0;
	if (cb->callbackSite == CUPTI_API_EXIT && nargs && shim_cfg.defer && ptrmap_offline() &&
	    shim_cfg.writes != WRITES_PROBE && L->total <= DEFER_MAX) {
		uint32_t site = 0, coll[NCCL_MAX_IDS];
		int inh = 0, ncoll = 0;
		int has_site = launch_context(&site, &inh, coll, &ncoll);
		t0 = selftime_start();
		int done = record_deferred(cb, api, l, L, site, inh, has_site, coll, ncoll);
		selftime_add(ST_ARGS, t0);
		if (done)
			return;
		/* the bytes cannot be read: scanned here, with the site already found */
		np = scan_ptrs(L, l, args, ptrs);
		record_scanned(cb, api, l, L, args, nargs, ptrs, np, site, inh, has_site, coll,
		               ncoll);
		return;
	}
	t0 = selftime_start();
	np = nargs ? scan_ptrs(L, l, args, ptrs) : 0;
	selftime_add(ST_ARGS, t0);
	if (cb->callbackSite == CUPTI_API_ENTER) {
		/* calibration only: fingerprints before the launch */
		probe_n = 0;
		if (np && want_probe(e, l->stream)) {
			pthread_mutex_lock(&probe_lock);
			p_cuCtxSynchronize();
			for (int k = 0; k < np; k++)
				probe_hash[k] = fingerprint(ptrs[k].addr);
			pthread_mutex_unlock(&probe_lock);
			probe_n = np;
		}
		return;
	}
	if (probe_n == np && np) {
		uint64_t after[MAX_PTRS];
		pthread_mutex_lock(&probe_lock);
		p_cuCtxSynchronize();
		for (int k = 0; k < np; k++) {
			uint64_t h = fingerprint(ptrs[k].addr);
			ptrs[k].cal = h && probe_hash[k] ? h != probe_hash[k] : -1;
			after[k] = h;
		}
		pthread_mutex_unlock(&probe_lock);
		atomic_fetch_add(&e->probes, 1);
		/* the allocations' fingerprints after the launch: equal across steps means the
		 * launch produced the same bytes (the analyzer confirms invariants with them) */
		struct r_probe *pr = ring_reserve(REC_ALIGN(sizeof(*pr) + sizeof(uint64_t) * np));
		if (pr) {
			pr->h = (struct rec_hdr){
			    R_PROBE, 0, (uint32_t)REC_ALIGN(sizeof(*pr) + sizeof(uint64_t) * np)};
			pr->corr = cb->correlationId;
			pr->n = (uint32_t)np;
			memcpy(pr + 1, after, sizeof(uint64_t) * np);
			ring_commit();
		}
	}
	probe_n = 0;

	uint32_t site = 0, coll[NCCL_MAX_IDS];
	int inh = 0, ncoll = 0;
	int has_site = launch_context(&site, &inh, coll, &ncoll);
	record_scanned(cb, api, l, L, args, nargs, ptrs, np, site, inh, has_site, coll, ncoll);
}

static void on_launch(const CUpti_CallbackData *cb, enum api_idx api)
{
	struct launch l = {0};
	const void *p = cb->functionParams;
	switch (api) {
	case A_cuLaunchKernel:
	case A_cuLaunchKernel_ptsz:
	case A_cuLaunchCooperativeKernel:
	case A_cuLaunchCooperativeKernel_ptsz: {
		/* the cooperative form has the same leading fields, without extra */
		const cuLaunchKernel_params *q = p;
		l = (struct launch){
		    q->f,
		    {q->gridDimX, q->gridDimY, q->gridDimZ},
		    {q->blockDimX, q->blockDimY, q->blockDimZ},
		    q->sharedMemBytes,
		    q->hStream,
		    q->kernelParams,
		    (api == A_cuLaunchKernel || api == A_cuLaunchKernel_ptsz) ? q->extra : NULL};
		break;
	}
	case A_cuLaunchKernelEx:
	case A_cuLaunchKernelEx_ptsz: {
		const cuLaunchKernelEx_params *q = p;
		const CUlaunchConfig *c = q->config;
		if (!c)
			return;
		l = (struct launch){q->f,
		                    {c->gridDimX, c->gridDimY, c->gridDimZ},
		                    {c->blockDimX, c->blockDimY, c->blockDimZ},
		                    c->sharedMemBytes,
		                    c->hStream,
		                    q->kernelParams,
		                    q->extra};
		break;
	}
	default:
		return;
	}
	record_launch(cb, api, &l);
}

/* ---- allocations ------------------------------------------------------------------------- */

static void put_alloc(enum rec_type t, enum api_idx api, uint64_t ptr, uint64_t size, int64_t id,
                      CUstream s)
{
	struct r_alloc *r = ring_reserve(sizeof(*r));
	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	r->h = (struct rec_hdr){(uint16_t)t, 0, sizeof(*r)};
	r->seq = shim_seq();
	r->ts = shim_now_ns();
	r->ptr = ptr;
	r->size = size;
	r->stream = (uint64_t)(uintptr_t)s;
	r->id = id;
	r->tid = shim_tid();
	r->api = (uint16_t)api;
	ring_commit();
}

void cupti_record_alloc(int is_free, uint64_t ptr, uint64_t size, int64_t id)
{
	put_alloc(is_free ? R_FREE : R_ALLOC, (enum api_idx)API_C10_BLOCK, ptr, size, id, NULL);
}

static void on_alloc(const CUpti_CallbackData *cb, enum api_idx api)
{
	if (cb->callbackSite != CUPTI_API_EXIT)
		return;
	CUresult res =
	    cb->functionReturnValue ? *(CUresult *)cb->functionReturnValue : CUDA_SUCCESS;
	const void *p = cb->functionParams;
	if (res != CUDA_SUCCESS)
		return;
	CUdeviceptr ptr = 0;
	size_t size = 0;
	CUstream s = NULL;
	switch (api) {
	case A_cuMemAlloc_v2: {
		const cuMemAlloc_v2_params *q = p;
		ptr = *q->dptr, size = q->bytesize;
		break;
	}
	case A_cuMemAllocPitch_v2: {
		const cuMemAllocPitch_v2_params *q = p;
		ptr = *q->dptr, size = *q->pPitch * q->Height;
		break;
	}
	case A_cuMemAllocManaged: {
		const cuMemAllocManaged_params *q = p;
		ptr = *q->dptr, size = q->bytesize;
		break;
	}
	case A_cuMemAllocAsync:
	case A_cuMemAllocAsync_ptsz: {
		const cuMemAllocAsync_params *q = p;
		ptr = *q->dptr, size = q->bytesize, s = q->hStream;
		break;
	}
	case A_cuMemAllocFromPoolAsync:
	case A_cuMemAllocFromPoolAsync_ptsz: {
		const cuMemAllocFromPoolAsync_params *q = p;
		ptr = *q->dptr, size = q->bytesize, s = q->hStream;
		break;
	}
	case A_cuMemAddressReserve: {
		const cuMemAddressReserve_params *q = p;
		ptr = *q->ptr, size = q->size;
		break;
	}
	case A_cuMemFree_v2:
	case A_cuMemFreeAsync:
	case A_cuMemFreeAsync_ptsz:
	case A_cuMemAddressFree: {
		if (api == A_cuMemFree_v2)
			ptr = ((const cuMemFree_v2_params *)p)->dptr;
		else if (api == A_cuMemAddressFree)
			ptr = ((const cuMemAddressFree_params *)p)->ptr;
		else
			ptr = ((const cuMemFreeAsync_params *)p)->dptr,
			s = ((const cuMemFreeAsync_params *)p)->hStream;
		uint64_t sz = 0;
		int64_t id = ptrmap_remove(ptr, &sz);
		put_alloc(R_FREE, api, ptr, sz, id, s);
		return;
	}
	case A_cuMemMap:
	case A_cuMemUnmap: {
		if (api == A_cuMemMap)
			ptr = ((const cuMemMap_params *)p)->ptr,
			size = ((const cuMemMap_params *)p)->size;
		else
			ptr = ((const cuMemUnmap_params *)p)->ptr,
			size = ((const cuMemUnmap_params *)p)->size;
		put_alloc(R_VMM, api, ptr, size, -1, NULL);
		return;
	}
	default:
		return;
	}
	int64_t id = ptrmap_add(ptr, size);
	put_alloc(R_ALLOC, api, ptr, size, id, s);
	/* a device allocation: PyTorch's caching allocator may have been loaded since start */
	if (api == A_cuMemAlloc_v2 && !poolhook_armed())
		poolhook_try("at a cudaMalloc");
}

/* ---- copies and sets --------------------------------------------------------------------- */

static void on_mem(const CUpti_CallbackData *cb, enum api_idx api)
{
	if (cb->callbackSite != CUPTI_API_ENTER)
		return;
	const void *p = cb->functionParams;
	uint64_t dst = 0, src = 0, bytes = 0;
	uint32_t value = 0;
	CUstream s = NULL;
	enum rec_type t = R_MEMCPY;
	switch (api) {
	case A_cuMemcpy:
	case A_cuMemcpy_ptds: {
		const cuMemcpy_params *q = p;
		dst = q->dst, src = q->src, bytes = q->ByteCount;
		break;
	}
	case A_cuMemcpyAsync:
	case A_cuMemcpyAsync_ptsz: {
		const cuMemcpyAsync_params *q = p;
		dst = q->dst, src = q->src, bytes = q->ByteCount, s = q->hStream;
		break;
	}
	case A_cuMemcpyHtoD_v2:
	case A_cuMemcpyHtoD_v2_ptds: {
		const cuMemcpyHtoD_v2_params *q = p;
		dst = q->dstDevice, src = (uint64_t)(uintptr_t)q->srcHost, bytes = q->ByteCount;
		break;
	}
	case A_cuMemcpyDtoH_v2:
	case A_cuMemcpyDtoH_v2_ptds: {
		const cuMemcpyDtoH_v2_params *q = p;
		dst = (uint64_t)(uintptr_t)q->dstHost, src = q->srcDevice, bytes = q->ByteCount;
		break;
	}
	case A_cuMemcpyDtoD_v2:
	case A_cuMemcpyDtoD_v2_ptds: {
		const cuMemcpyDtoD_v2_params *q = p;
		dst = q->dstDevice, src = q->srcDevice, bytes = q->ByteCount;
		break;
	}
	case A_cuMemcpyHtoDAsync_v2:
	case A_cuMemcpyHtoDAsync_v2_ptsz: {
		const cuMemcpyHtoDAsync_v2_params *q = p;
		dst = q->dstDevice, src = (uint64_t)(uintptr_t)q->srcHost, bytes = q->ByteCount,
		s = q->hStream;
		break;
	}
	case A_cuMemcpyDtoHAsync_v2:
	case A_cuMemcpyDtoHAsync_v2_ptsz: {
		const cuMemcpyDtoHAsync_v2_params *q = p;
		dst = (uint64_t)(uintptr_t)q->dstHost, src = q->srcDevice, bytes = q->ByteCount,
		s = q->hStream;
		break;
	}
	case A_cuMemcpyDtoDAsync_v2:
	case A_cuMemcpyDtoDAsync_v2_ptsz: {
		const cuMemcpyDtoDAsync_v2_params *q = p;
		dst = q->dstDevice, src = q->srcDevice, bytes = q->ByteCount, s = q->hStream;
		break;
	}
	case A_cuMemcpyPeer: {
		const cuMemcpyPeer_params *q = p;
		dst = q->dstDevice, src = q->srcDevice, bytes = q->ByteCount;
		break;
	}
	case A_cuMemcpyPeerAsync: {
		const cuMemcpyPeerAsync_params *q = p;
		dst = q->dstDevice, src = q->srcDevice, bytes = q->ByteCount, s = q->hStream;
		break;
	}
	case A_cuMemsetD8_v2:
	case A_cuMemsetD16_v2:
	case A_cuMemsetD32_v2: {
		const cuMemsetD32_v2_params *q = p; /* same leading fields for D8/D16 */
		unsigned w = api == A_cuMemsetD8_v2 ? 1 : api == A_cuMemsetD16_v2 ? 2 : 4;
		t = R_MEMSET;
		dst = q->dstDevice, bytes = q->N * w;
		value = api == A_cuMemsetD32_v2   ? q->ui
		        : api == A_cuMemsetD16_v2 ? ((const cuMemsetD16_v2_params *)p)->us
		                                  : ((const cuMemsetD8_v2_params *)p)->uc;
		break;
	}
	case A_cuMemsetD8Async:
	case A_cuMemsetD16Async:
	case A_cuMemsetD32Async:
	case A_cuMemsetD8Async_ptsz:
	case A_cuMemsetD16Async_ptsz:
	case A_cuMemsetD32Async_ptsz: {
		unsigned w = (api == A_cuMemsetD8Async || api == A_cuMemsetD8Async_ptsz)     ? 1
		             : (api == A_cuMemsetD16Async || api == A_cuMemsetD16Async_ptsz) ? 2
		                                                                             : 4;
		t = R_MEMSET;
		if (w == 1) {
			const cuMemsetD8Async_params *q = p;
			dst = q->dstDevice, bytes = q->N, value = q->uc, s = q->hStream;
		} else if (w == 2) {
			const cuMemsetD16Async_params *q = p;
			dst = q->dstDevice, bytes = q->N * 2, value = q->us, s = q->hStream;
		} else {
			const cuMemsetD32Async_params *q = p;
			dst = q->dstDevice, bytes = q->N * 4, value = q->ui, s = q->hStream;
		}
		break;
	}
	default:
		return;
	}
	uint32_t site = 0;
	int inh = 0;
	uint64_t t0 = selftime_start();
	int has_site = shim_cfg.attrib ? sites_current(&site, &inh) : 0;
	selftime_add(ST_SITES, t0);
	struct r_mem *r = ring_reserve(sizeof(*r));
	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	r->h = (struct rec_hdr){(uint16_t)t, 0, sizeof(*r)};
	r->seq = shim_seq();
	r->ts = shim_now_ns();
	r->stream = (uint64_t)(uintptr_t)s;
	r->dst = dst, r->src = src, r->bytes = bytes, r->value = value;
	uint64_t off = 0;
	r->dst_alloc = ptrmap_find(dst, &off);
	r->dst_off = r->dst_alloc >= 0 ? (int64_t)off : 0;
	off = 0;
	r->src_alloc = t == R_MEMCPY ? ptrmap_find(src, &off) : -2;
	r->src_off = r->src_alloc >= 0 ? (int64_t)off : 0;
	r->tid = shim_tid();
	r->corr = cb->correlationId;
	r->site = site;
	r->has_site = (uint8_t)has_site;
	r->api = (uint16_t)api;
	ring_commit();
}

/* ---- synchronisation and events ---------------------------------------------------------- */

static SHIM_TLS uint64_t sync_t0;

static void on_sync(const CUpti_CallbackData *cb, enum api_idx api)
{
	const void *p = cb->functionParams;
	enum rec_type t;
	uint64_t stream = 0, event = 0;
	switch (api) {
	case A_cuStreamSynchronize:
	case A_cuStreamSynchronize_ptsz:
		t = R_SYNC,
		stream = (uint64_t)(uintptr_t)((const cuStreamSynchronize_params *)p)->hStream;
		break;
	case A_cuCtxSynchronize:
		t = R_SYNC;
		break;
	case A_cuEventSynchronize:
		t = R_SYNC,
		event = (uint64_t)(uintptr_t)((const cuEventSynchronize_params *)p)->hEvent;
		break;
	case A_cuStreamWaitEvent:
	case A_cuStreamWaitEvent_ptsz: {
		const cuStreamWaitEvent_params *q = p;
		t = R_WAIT, stream = (uint64_t)(uintptr_t)q->hStream,
		event = (uint64_t)(uintptr_t)q->hEvent;
		break;
	}
	case A_cuEventRecord:
	case A_cuEventRecord_ptsz: {
		const cuEventRecord_params *q = p;
		t = R_EVREC, stream = (uint64_t)(uintptr_t)q->hStream,
		event = (uint64_t)(uintptr_t)q->hEvent;
		break;
	}
	case A_cuEventRecordWithFlags:
	case A_cuEventRecordWithFlags_ptsz: {
		const cuEventRecordWithFlags_params *q = p;
		t = R_EVREC, stream = (uint64_t)(uintptr_t)q->hStream,
		event = (uint64_t)(uintptr_t)q->hEvent;
		break;
	}
	default:
		return;
	}
	if (cb->callbackSite == CUPTI_API_ENTER) {
		sync_t0 = shim_now_ns();
		if (t == R_SYNC)
			return;
	} else if (t != R_SYNC) {
		return;
	}
	struct r_sync *r = ring_reserve(sizeof(*r));
	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	r->h = (struct rec_hdr){(uint16_t)t, 0, sizeof(*r)};
	r->seq = shim_seq();
	r->ts = sync_t0;
	r->dur = t == R_SYNC ? shim_now_ns() - sync_t0 : 0;
	r->stream = stream;
	r->event = event;
	r->tid = shim_tid();
	r->corr = cb->correlationId;
	r->api = (uint16_t)api;
	ring_commit();
}

/* ---- NVTX -------------------------------------------------------------------------------- */

static void put_range(enum rec_type t, uint64_t id, const char *text)
{
	size_t n = text ? strnlen(text, 1024) : 0;
	size_t len = REC_ALIGN(sizeof(struct r_range) + n + 1);
	struct r_range *r = ring_reserve(len);
	if (!r)
		return;
	r->h = (struct rec_hdr){(uint16_t)t, 0, (uint32_t)len};
	r->seq = shim_seq();
	r->ts = shim_now_ns();
	r->id = id;
	r->tid = shim_tid();
	r->len = (uint32_t)n;
	memcpy(r + 1, text ? text : "", n);
	((char *)(r + 1))[n] = 0;
	ring_commit();
}

static const char *attr_text(const nvtxEventAttributes_t *a)
{
	if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII)
		return a->message.ascii;
	return NULL;
}

static void on_nvtx(CUpti_CallbackId id, const CUpti_NvtxData *d)
{
	const void *p = d->functionParams;
	const void *rv = d->functionReturnValue;
	switch (id) {
	case CUPTI_CBID_NVTX_nvtxRangePushA:
		put_range(R_PUSH, 0, ((const nvtxRangePushA_params *)p)->message);
		break;
	case CUPTI_CBID_NVTX_nvtxRangePushEx:
		put_range(R_PUSH, 0, attr_text(((const nvtxRangePushEx_params *)p)->eventAttrib));
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
		put_range(R_PUSH, 0,
		          attr_text(((const nvtxDomainRangePushEx_params *)p)->core.eventAttrib));
		break;
	case CUPTI_CBID_NVTX_nvtxRangePop:
	case CUPTI_CBID_NVTX_nvtxDomainRangePop:
		put_range(R_POP, 0, NULL);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartA:
		put_range(R_RSTART, rv ? *(const nvtxRangeId_t *)rv : 0,
		          ((const nvtxRangeStartA_params *)p)->message);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartEx:
		put_range(R_RSTART, rv ? *(const nvtxRangeId_t *)rv : 0,
		          attr_text(((const nvtxRangeStartEx_params *)p)->eventAttrib));
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
		put_range(R_RSTART, rv ? *(const nvtxRangeId_t *)rv : 0,
		          attr_text(((const nvtxDomainRangeStartEx_params *)p)->core.eventAttrib));
		break;
	case CUPTI_CBID_NVTX_nvtxRangeEnd:
		put_range(R_REND, ((const nvtxRangeEnd_params *)p)->id, NULL);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
		put_range(R_REND, ((const nvtxDomainRangeEnd_params *)p)->core.id, NULL);
		break;
	case CUPTI_CBID_NVTX_nvtxMarkA:
		put_range(R_MARK, 0, ((const nvtxMarkA_params *)p)->message);
		break;
	default:
		break;
	}
}

static const CUpti_CallbackId nvtx_cbids[] = {
    CUPTI_CBID_NVTX_nvtxRangePushA,
    CUPTI_CBID_NVTX_nvtxRangePushEx,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangePop,
    CUPTI_CBID_NVTX_nvtxRangeStartA,
    CUPTI_CBID_NVTX_nvtxRangeStartEx,
    CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
    CUPTI_CBID_NVTX_nvtxRangeEnd,
    CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
    CUPTI_CBID_NVTX_nvtxMarkA,
};

/* ---- the callback ------------------------------------------------------------------------ */

/* Set once a call returned an error that leaves the context unusable (a kernel faulted):
 * CUPTI's forced flush then aborts the process (seen on the H200: exit code 3 became SIGABRT),
 * so nothing of CUPTI's is called again and the trace closes with what it has. */
static volatile int ctx_dead;

static int sticky_error(CUresult r)
{
	return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED ||
	       r == CUDA_ERROR_HARDWARE_STACK_ERROR || r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
	       r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_INVALID_ADDRESS_SPACE ||
	       r == CUDA_ERROR_INVALID_PC || r == CUDA_ERROR_LAUNCH_TIMEOUT ||
	       r == CUDA_ERROR_ECC_UNCORRECTABLE || r == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

int cupti_context_dead(void)
{
	return ctx_dead;
}

static void activity_off(int flush);
static CUptiResult activity_on(void);
static void enable_set(uint32_t on, int rec);
static _Atomic int detached;
/* AICPROF_FINALIZE's course after the window closed: CUPTI to be finalized at the next driver API
 * exit (FIN_PENDING), being finalized or left to the other tool (FIN_KEPT), finalized (FIN_DONE:
 * the shim calls CUPTI no more); from FIN_PENDING on the callbacks return at once */
enum { FIN_NONE, FIN_PENDING, FIN_KEPT, FIN_DONE };
static _Atomic int fin_state;
static CUptiResult (*p_cuptiFinalize)(void);
static void finalize_now(void);

/* Capture ranges as correlation ids: range i holds the ids in (cap_lo[i], cap_hi[i]), the open
 * one's hi UINT32_MAX. Written by the profiler's callbacks, read on CUPTI's buffer thread. */
#define CAP_RANGES 4096
static uint32_t cap_lo[CAP_RANGES];
static _Atomic uint32_t cap_hi[CAP_RANGES];
static _Atomic int cap_n;

/* Whether an activity record of correlation id c belongs to a capture range (always, without
 * AICPROF_CAPTURE). Ranges come in id order, so the newest are looked at first. */
static int in_capture(uint32_t c)
{
	if (!shim_cfg.capture_api)
		return 1;
	for (int i = atomic_load_explicit(&cap_n, memory_order_acquire) - 1; i >= 0; i--) {
		if (c >= atomic_load_explicit(&cap_hi[i], memory_order_acquire))
			return 0; /* after range i and before range i + 1 */
		if (c > cap_lo[i])
			return 1;
	}
	return 0;
}

/* A capture range's start (on) or stop at correlation id corr, from the program's
 * cuProfilerStart or Stop: the callbacks of a recording shim or of a paused one, the range's
 * ids, and a capture line. */
static void capture(int on, enum api_idx api, uint32_t corr)
{
	static _Atomic int capturing;
	static int full;
	if (!shim_cfg.capture_api || atomic_load(&detached) ||
	    atomic_exchange(&capturing, on) == on)
		return;
	int n = atomic_load(&cap_n);
	if (on) {
		if (n == CAP_RANGES) {
			if (!full++)
				shim_say(
				    "more than %d capture ranges: the later ones are not recorded",
				    CAP_RANGES);
			atomic_store(&capturing, 0);
			return;
		}
		cap_lo[n] = corr;
		atomic_store(&cap_hi[n], UINT32_MAX);
		atomic_store_explicit(&cap_n, n + 1, memory_order_release);
		if (shim_cfg.pause_activity)
			activity_on();
		enable_set(1, 1);
		shim_pause(0);
	} else {
		shim_pause(1);
		enable_set(1, 0);
		if (shim_cfg.pause_activity) /* records already made are kept, and filtered */
			activity_off(0);
		if (n > 0)
			atomic_store_explicit(&cap_hi[n - 1], corr, memory_order_release);
	}
	char buf[160];
	struct jbuf b = {buf, 0, sizeof(buf), 0};
	jb_s(&b, "{\"t\":\"capture\",\"ts\":");
	jb_u64(&b, shim_now_ns());
	jb_key(&b, "on"), jb_s(&b, on ? "true" : "false");
	jb_key(&b, "api"), jb_str(&b, api_names[api]);
	jb_s(&b, "}");
	writer_meta(buf, b.len);
}

static void CUPTIAPI callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId id,
                              const void *data)
{
	(void)ud;
	if (__builtin_expect(atomic_load_explicit(&fin_state, memory_order_relaxed) != FIN_NONE,
	                     0)) {
		int pending = FIN_PENDING;
		if (dom == CUPTI_CB_DOMAIN_DRIVER_API &&
		    ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT &&
		    atomic_compare_exchange_strong(&fin_state, &pending, FIN_KEPT))
			finalize_now();
		return;
	}
	if (!shim_enter())
		return;
	uint64_t t0 = selftime_start();
	enum st_part part = ST_CB_OTHER;
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API && id < 1024 && cbid_to_api[id] >= 0) {
		const CUpti_CallbackData *cb = data;
		enum api_idx a = (enum api_idx)cbid_to_api[id];
		if (cb->callbackSite == CUPTI_API_EXIT && cb->functionReturnValue &&
		    sticky_error(*(const CUresult *)cb->functionReturnValue) && !ctx_dead) {
			ctx_dead = 1;
			allocguard_context_died();
			shim_say(
			    "the program's CUDA context failed (error %d); the trace keeps what "
			    "was recorded before",
			    (int)*(const CUresult *)cb->functionReturnValue);
		}
		if (a == A_cuProfilerStart || a == A_cuProfilerStop) {
			/* a range starts once the start returned, and stops before the stop runs */
			if (a == A_cuProfilerStart && cb->callbackSite == CUPTI_API_EXIT)
				capture(1, a, cb->correlationId);
			else if (a == A_cuProfilerStop && cb->callbackSite == CUPTI_API_ENTER)
				capture(0, a, cb->correlationId);
		} else if (a <= A_cuLaunchCooperativeKernel_ptsz) {
			part = ST_CB_LAUNCH;
			if (shim_recording())
				on_launch(cb, a);
		} else if (a <= A_cuMemUnmap) {
			part = ST_CB_ALLOC;
			if (a == A_cuGraphLaunch || a == A_cuGraphLaunch_ptsz)
				; /* its kernels come as activity records */
			else
				on_alloc(cb, a); /* always: the map must stay true */
		} else if (a <= A_cuMemsetD32Async_ptsz) {
			part = ST_CB_MEM;
			if (shim_recording())
				on_mem(cb, a);
		} else {
			part = ST_CB_SYNC;
			if (shim_recording())
				on_sync(cb, a);
		}
	} else if (dom == CUPTI_CB_DOMAIN_NVTX) {
		on_nvtx(id, data);
	} else if (dom == CUPTI_CB_DOMAIN_RESOURCE &&
	           id == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
		cupti_functions_unloaded();
	} else if (dom == CUPTI_CB_DOMAIN_RESOURCE &&
	           id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		cupti_functions_unloaded();
		if (p_cuptiActivityFlushAll && !ctx_dead)
			p_cuptiActivityFlushAll(1);
	}
	selftime_add(part, t0);
	shim_leave();
}

/* ---- activity ---------------------------------------------------------------------------- */

#define ACT_BUF (8u << 20)

static void CUPTIAPI buf_request(uint8_t **buf, size_t *size, size_t *max)
{
	*buf = aligned_alloc(8, ACT_BUF);
	*size = *buf ? ACT_BUF : 0;
	*max = 0;
}

static void put_kernel(const CUpti_ActivityKernel10 *k)
{
	struct r_kernel *r = ring_reserve(sizeof(*r));
	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	r->h = (struct rec_hdr){R_KERNEL, 0, sizeof(*r)};
	r->start = k->start, r->end = k->end;
	r->corr = k->correlationId;
	r->name = intern(k->name);
	r->dev = k->deviceId, r->ctx = k->contextId, r->stream = k->streamId;
	r->grid[0] = k->gridX, r->grid[1] = k->gridY, r->grid[2] = k->gridZ;
	r->block[0] = k->blockX, r->block[1] = k->blockY, r->block[2] = k->blockZ;
	r->regs = k->registersPerThread;
	r->ssmem = (uint32_t)k->staticSharedMemory;
	r->dsmem = (uint32_t)k->dynamicSharedMemory;
	r->graph = k->graphId;
	r->gnode = k->graphNodeId;
	ring_commit();
}

/* One R_COPY record; src_dev/dst_dev -1 except for a peer-to-peer copy. */
static void put_copy(uint64_t bytes, uint64_t start, uint64_t end, uint32_t corr, uint32_t dev,
                     uint32_t stream, uint8_t kind, uint8_t src_kind, uint8_t dst_kind, int src_dev,
                     int dst_dev)
{
	struct r_copy *r = ring_reserve(sizeof(*r));
	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	r->h = (struct rec_hdr){R_COPY, 0, sizeof(*r)};
	r->bytes = bytes, r->start = start, r->end = end;
	r->corr = corr, r->dev = dev, r->stream = stream;
	r->kind = kind, r->src_kind = src_kind, r->dst_kind = dst_kind;
	if (src_dev >= 0) {
		r->peer = 1;
		r->src_dev = (uint8_t)src_dev, r->dst_dev = (uint8_t)dst_dev;
	}
	ring_commit();
}

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                  size_t valid)
{
	(void)stream;
	shim_enter();
	uint64_t t0 = selftime_start();
	CUpti_Activity *rec = NULL;
	while (valid && p_cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			if (in_capture(((const CUpti_ActivityKernel10 *)rec)->correlationId))
				put_kernel((const CUpti_ActivityKernel10 *)rec);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY: {
			const CUpti_ActivityMemcpy6 *m = (const void *)rec;
			if (!in_capture(m->correlationId))
				break;
			put_copy(m->bytes, m->start, m->end, m->correlationId, m->deviceId,
			         m->streamId, m->copyKind, m->srcKind, m->dstKind, -1, -1);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMCPY2: {
			/* peer-to-peer copies come only as this kind, with both devices */
			const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
			if (!in_capture(m->correlationId))
				break;
			put_copy(m->bytes, m->start, m->end, m->correlationId, m->deviceId,
			         m->streamId, m->copyKind, m->srcKind, m->dstKind,
			         (int)m->srcDeviceId, (int)m->dstDeviceId);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMSET: {
			const CUpti_ActivityMemset4 *m = (const void *)rec;
			if (!in_capture(m->correlationId))
				break;
			struct r_copy *r = ring_reserve(sizeof(*r));
			if (!r)
				break;
			memset(r, 0, sizeof(*r));
			r->h = (struct rec_hdr){R_SET, 0, sizeof(*r)};
			r->bytes = m->bytes, r->start = m->start, r->end = m->end;
			r->corr = m->correlationId, r->dev = m->deviceId, r->stream = m->streamId;
			r->value = m->value;
			ring_commit();
			break;
		}
		default:
			break;
		}
	}
	size_t dropped = 0;
	if (p_cuptiActivityGetNumDroppedRecords &&
	    p_cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
		writer_count_activity_drop(dropped);
	free(buf);
	(void)size;
	selftime_add(ST_ACTIVITY, t0);
	shim_leave();
}

void cupti_flush(void)
{
	if (started && p_cuptiActivityFlushAll && !ctx_dead && atomic_load(&fin_state) != FIN_DONE)
		p_cuptiActivityFlushAll(1);
}

/* ---- loading ----------------------------------------------------------------------------- */

static char cupti_path[1024];

const char *cupti_find_library(void)
{
	if (cupti_path[0])
		return cupti_path;
	const char *env = getenv("AICPROF_CUPTI");
	if (env && *env && access(env, R_OK) == 0)
		return strncpy(cupti_path, env, sizeof(cupti_path) - 1);
	const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
	const char *subs[] = {"extras/CUPTI/lib64/libcupti.so",
	                      "targets/x86_64-linux/lib/libcupti.so", "lib64/libcupti.so",
	                      "targets/sbsa-linux/lib/libcupti.so"};
	for (size_t i = 0; i < 3; i++) {
		if (!homes[i] || !*homes[i])
			continue;
		for (size_t j = 0; j < 4; j++) {
			char p[1024];
			snprintf(p, sizeof(p), "%s/%s", homes[i], subs[j]);
			if (access(p, R_OK) == 0) {
				/* the real file, so that every loader opens the same one */
				char *real = realpath(p, NULL);
				snprintf(cupti_path, sizeof(cupti_path), "%s", real ? real : p);
				free(real);
				return cupti_path;
			}
		}
	}
	return NULL;
}

void *cupti_open(void)
{
	static const char *sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
	for (size_t i = 0; i < 3; i++) { /* a copy already in the process */
		void *h = dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD);
		if (h)
			return h;
	}
	const char *p = cupti_find_library();
	void *h = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
	for (size_t i = 0; !h && i < 3; i++)
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	return h;
}

static const char *cupti_err(CUptiResult r)
{
	const char *s = NULL;
	if (p_cuptiGetResultString)
		p_cuptiGetResultString(r, &s);
	return s ? s : "unknown error";
}

/* Whether api stays on while a capture range is paused: allocations (the map must stay true)
 * and the profiler's start and stop. */
static int kept_paused(int i)
{
	return (i > A_cuLaunchCooperativeKernel_ptsz && i <= A_cuMemUnmap && i != A_cuGraphLaunch &&
	        i != A_cuGraphLaunch_ptsz) ||
	       i == A_cuProfilerStart || i == A_cuProfilerStop;
}

/* Turns on (or off) every callback aicprof uses: the driver calls of its table, NVTX, and two
 * resource events; on and not rec: those of a paused capture range only. */
static void enable_set(uint32_t on, int rec)
{
	for (int i = 0; i < A__COUNT; i++)
		p_cuptiEnableCallback(on && (rec || kept_paused(i)), subscriber,
		                      CUPTI_CB_DOMAIN_DRIVER_API, api_cbid[i]);
	for (size_t i = 0; i < sizeof(nvtx_cbids) / sizeof(nvtx_cbids[0]); i++)
		p_cuptiEnableCallback(on && rec, subscriber, CUPTI_CB_DOMAIN_NVTX, nvtx_cbids[i]);
	p_cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
	                      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	p_cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
	                      CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
}

static void enable_callbacks(uint32_t on)
{
	enable_set(on, 1);
}

int cupti_start(void)
{
	if (started)
		return 0;
	void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cu) {
		shim_say("no CUDA driver (libcuda.so.1): not recording");
		return -1;
	}
#define LOAD_CU(field, sym, ret, args) p_##field = (ret(*) args)dlsym(cu, sym);
	CU_FUNCS(LOAD_CU)
	void *h = cupti_open();
	if (!h) {
		shim_say("cannot load CUPTI (set AICPROF_CUPTI or CUDA_HOME): not recording");
		return -1;
	}
#define LOAD_CUPTI(name, ret, args)                                                                \
	if (!(p_##name = (ret(*) args)dlsym(h, #name))) {                                          \
		shim_say("CUPTI lacks %s: not recording", #name);                                  \
		return -1;                                                                         \
	}
	CUPTI_FUNCS(LOAD_CUPTI)
	p_cuptiFinalize = (CUptiResult(*)(void))dlsym(h, "cuptiFinalize"); /* optional */
	if (cuptimux_init(h) == 1) { /* CUPTI shared with other tools: cuptimux.c */
		p_cuptiSubscribe = cuptimux_own_subscribe;
		p_cuptiUnsubscribe = cuptimux_own_unsubscribe;
		p_cuptiEnableCallback = cuptimux_own_enable_callback;
		p_cuptiActivityRegisterCallbacks = cuptimux_own_register_callbacks;
		p_cuptiActivityEnable = cuptimux_own_activity_enable;
		p_cuptiActivityDisable = cuptimux_own_activity_disable;
		p_cuptiActivityFlushAll = cuptimux_own_flush_all;
	}
	if (!strs)
		strs = calloc(STR_TABLE, sizeof(*strs));
	if (!fns)
		fns = calloc(FN_TABLE, sizeof(*fns));
	if (!strs || !fns)
		return -1;
	for (size_t i = 0; i < 1024; i++)
		cbid_to_api[i] = -1;
	for (int i = 0; i < A__COUNT; i++)
		if (api_cbid[i] < 1024)
			cbid_to_api[api_cbid[i]] = (int16_t)i;

	CUptiResult r = p_cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)callback, NULL);
	if (r != CUPTI_SUCCESS) {
		shim_say("cannot subscribe to CUPTI (%s): another tool holds it; not recording",
		         cupti_err(r));
		return -1;
	}
	/* a capture range starts paused: only what keeps the map true, and the profiler's calls */
	if (shim_cfg.capture_api)
		shim_pause(1);
	enable_set(1, !shim_cfg.capture_api);
	if ((r = p_cuptiActivityRegisterCallbacks(buf_request, buf_complete)) != CUPTI_SUCCESS ||
	    (r = activity_on()) != CUPTI_SUCCESS) {
		shim_say("cannot enable CUPTI activity records (%s): not recording", cupti_err(r));
		p_cuptiUnsubscribe(subscriber);
		return -1;
	}
	if (shim_cfg.capture_api && shim_cfg.pause_activity)
		activity_off(0); /* checked above; on again at the first range */
	started = 1;
	Dl_info di;
	if (dladdr((void *)p_cuptiGetVersion, &di) && di.dli_fname)
		snprintf(cupti_path, sizeof(cupti_path), "%s", di.dli_fname);
	shim_debug("subscribed to CUPTI (%s)", cupti_path);
	return 0;
}

void cupti_header_fields(struct jbuf *b)
{
	int drv = 0;
	uint32_t cv = 0;
	uint64_t cts = 0;
	if (p_cuDriverGetVersion)
		p_cuDriverGetVersion(&drv);
	if (p_cuptiGetVersion)
		p_cuptiGetVersion(&cv);
	if (p_cuptiGetTimestamp)
		p_cuptiGetTimestamp(&cts);
	uint64_t now = shim_now_ns();
	jb_s(b, ",\"versions\":{\"driver\":"), jb_i64(b, drv);
	jb_key(b, "cupti"), jb_u64(b, cv);
	jb_key(b, "cupti_path"), jb_str(b, cupti_path);
	jb_s(b, "},\"clock_sync\":{\"realtime\":"), jb_u64(b, now);
	jb_key(b, "cupti"), jb_u64(b, cts);
	jb_s(b, "},\"devices\":[");
	int n = 0;
	if (p_cuDeviceGetCount && p_cuDeviceGetCount(&n) != CUDA_SUCCESS)
		n = 0;
	for (int i = 0; i < n && i < 64; i++) {
		CUdevice d;
		if (p_cuDeviceGet(&d, i) != CUDA_SUCCESS)
			continue;
		char name[256] = "?";
		p_cuDeviceGetName(name, sizeof(name), d);
		int sm = 0, mclk = 0, bus = 0, l2 = 0, clk = 0, ma = 0, mi = 0;
		p_cuDeviceGetAttribute(&sm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
		p_cuDeviceGetAttribute(&mclk, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, d);
		p_cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, d);
		p_cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d);
		p_cuDeviceGetAttribute(&clk, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, d);
		p_cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
		p_cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
		size_t mem = 0;
		if (p_cuDeviceTotalMem)
			p_cuDeviceTotalMem(&mem, d);
		if (i)
			jb_s(b, ",");
		jb_s(b, "{\"id\":"), jb_i64(b, i);
		jb_key(b, "name"), jb_str(b, name);
		char cc[16];
		snprintf(cc, sizeof(cc), "%d.%d", ma, mi);
		jb_key(b, "cc"), jb_str(b, cc);
		jb_key(b, "sm_count"), jb_i64(b, sm);
		jb_key(b, "mem_clock_khz"), jb_i64(b, mclk);
		jb_key(b, "bus_width_bits"), jb_i64(b, bus);
		/* DDR: two transfers a clock */
		uint64_t bw =
		    (uint64_t)mclk * 1000ull * 2ull * (uint64_t)bus / 8ull / 1000000000ull;
		jb_key(b, "peak_bw_gbs"), jb_u64(b, bw);
		jb_key(b, "total_mem"), jb_u64(b, mem);
		jb_key(b, "l2_bytes"), jb_i64(b, l2);
		jb_key(b, "clock_khz"), jb_i64(b, clk);
		jb_s(b, "}");
	}
	jb_s(b, "]");
}

/* ---- another CUPTI user ------------------------------------------------------------------ */

static int yielded;

/* The activity kinds of a recording shim; the kernel kind's result (the others are best
 * effort: an older CUPTI lacks MEMCPY2). */
static CUptiResult activity_on(void)
{
	CUptiResult r = shim_cfg.activity
	                    ? p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
	                    : CUPTI_SUCCESS;
	p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
	p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
	return r;
}

/* Flushes the activity records into the rings (when flush) and disables every kind aicprof
 * enabled: the window's close, the yield to another tool, a capture range's pause. */
static void activity_off(int flush)
{
	if (flush)
		p_cuptiActivityFlushAll(1);
	p_cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	p_cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
	p_cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY2);
	p_cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
}

/*
 * The recording window closed (writer thread): every callback aicprof enabled is turned off,
 * so CUPTI stops calling into the shim on the program's threads, the activity records still
 * buffered are flushed (into the trace that is about to close), and the activity kinds are
 * disabled, so kernels run without CUPTI's timing. Through the multiplexer (cuptimux.c) this
 * changes only aicprof's side: another tool's callbacks and kinds stay as it set them. The
 * subscription itself stays, so a later profiler session is still shared as before.
 * With AICPROF_FINALIZE the callbacks stay on instead, returning at once, and the first driver
 * API exit on any thread finalizes CUPTI (finalize_now): disabled, CUPTI still costs a training
 * step (Kineto's experience: about 15% after a profiler session, until cuptiFinalize).
 */
void cupti_detach(void)
{
	if (!started || yielded || atomic_exchange(&detached, 1))
		return;
	if (shim_cfg.finalize && !ctx_dead && p_cuptiFinalize) {
		activity_off(1);
		atomic_store(&fin_state, FIN_PENDING);
		enable_callbacks(1); /* the driver API exits finalize_now waits for */
		return;
	}
	enable_callbacks(0);
	activity_off(!ctx_dead);
}

/*
 * CUPTI finalized, on a program thread inside a driver API exit callback (CUPTI's rule for
 * cuptiFinalize): through the multiplexer, which keeps CUPTI while the other tool uses it, or
 * directly. Where it stays, aicprof's callbacks are turned off as without AICPROF_FINALIZE.
 */
static void finalize_now(void)
{
	int done = cuptimux_active() ? cuptimux_own_finalize() : p_cuptiFinalize() == CUPTI_SUCCESS;
	if (done)
		atomic_store(&fin_state, FIN_DONE);
	else
		enable_callbacks(0);
	shim_debug("CUPTI %s after the recording window", done ? "finalized" : "kept (in use)");
}

/*
 * The fallback when CUPTI cannot be shared (cuptimux.c): another tool subscribes, and aicprof
 * hands CUPTI over: it flushes its activity records, closes its trace with reason "yielded" and
 * unsubscribes, so the other tool works exactly as it would without aicprof.
 */
void cupti_yield(void)
{
	if (!started || yielded || atomic_load(&fin_state) || !shim_enter())
		return;
	yielded = 1;
	shim_say("another tool subscribed to CUPTI (torch.profiler?): aicprof hands it over "
	         "and ends its trace here");
	activity_off(1);
	p_cuptiUnsubscribe(subscriber);
	writer_flush(1, "yielded");
	shim_leave();
}
