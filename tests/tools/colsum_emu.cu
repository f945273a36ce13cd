/*
 * colsum_emu.cu - a column group's kernels (fusion/emit-kernel.c's emit_col_kernel and
 * emit_col_launch: <name>_kernel<V>, <name>_finish and the launcher <name>_launch, as fuse writes
 * them) run on the CPU, thread by thread, against the group's own per-element math added up in
 * double, so that the launch plan (column tiles of blockDim.x lanes, narrower than 32 where the
 * columns are few, by chunks of rows) and the index arithmetic are checked where there is no GPU.
 *
 * tests/func/t-colsum-emu.sh writes the group's files with `aicprof fuse`, rewrites each launch
 * `K<<<grid, threads, smem, s>>>(a);` as aic_emu_launch("K", [&]() { K(a); }, grid, threads,
 * smem, s) and each `extern __shared__ float buf[];` as an aic_emu_shm (a view of the launch's
 * dynamic shared memory that checks every index against the smem argument), and writes a
 * header (AIC_EMU_CONF) naming the group, its inputs (per-column and per-row ones apart), its
 * writes, its number of column sums and the two kernels' __launch_bounds__. This file includes
 * it and the rewritten source (AIC_EMU_SRC) with __global__ functions made host functions,
 * __device__ ones host and device, and blockIdx, threadIdx, blockDim and gridDim host variables.
 * aic_emu_launch checks the launch (threads within the kernel's bounds, at most 48 KiB of
 * shared memory, gridDim.y within 65,535; else cudaGetLastError reports it) and runs its blocks
 * one after another, each block's threads as ucontext fibers on one thread: __syncthreads
 * switches back to the scheduler, which resumes every fiber once all have reached the barrier
 * (one that ends while others wait, or a different number of barriers per thread, is a fault).
 * Fibers run in index order in even blocks and in reverse in odd ones, and shared memory and the
 * workspace (cudaMallocAsync, here malloc with guard bytes checked at cudaFreeAsync) start as
 * NaN, so a read before the barrier, or of a partial sum no block wrote, shows in the results.
 * aic_sm_count sees AIC_EMU_SMS multiprocessors (132, an H100's, unless set when compiling), so
 * the chunks are as many as on that GPU.
 *
 * Each case fills the inputs (full-size, one value a column, or one a row), each inside NaN
 * margins, and the writes with a sentinel, runs the launcher and checks every element: the
 * full-size writes bit for bit against <name>_col, the per-column ones against <name>_fin of the
 * column sums added in double. The inputs of most cases are multiples of 1/4 from -2.25 to 2, so
 * that every order of adding the summands in float gives the exact sum: where the summands'
 * granularity and magnitude prove that, per-column results are compared bit for bit too, else
 * within the error a float sum of that many terms may have (one case of random data takes that
 * path). Nothing outside the writes' extents may change, nor any input. A few cases launch the
 * column kernel alone, as its comment describes it, with narrow tiles several to a row (a plan
 * the launcher does not make, where blockDim.x and 32 in its index differ). Each case prints one
 * TAP line with the plan its launches took (V, blockDim.x and .y, the column tiles, the chunks,
 * and the finish kernel's blocks); a crash prints the case's line before the run ends. A last
 * line fails unless the launcher's plans included V = 1, 2, 4 and 8 (up to the group's
 * MAX_VEC), narrow tiles (blockDim.x < 32) and full ones (32), and both one chunk and several
 * with the finish kernel. Exits 0 when all pass.
 */
#include <cuda_runtime.h>
#include <curand_kernel.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <type_traits>
#include <ucontext.h>
#include <unistd.h>
#include <vector>
#include AIC_EMU_CONF

#ifndef AIC_EMU_SMS
#define AIC_EMU_SMS 132
#endif

/* ---- the emulation ---- */
static uint3 aic_emu_bid, aic_emu_tid;
static dim3 aic_emu_bdim, aic_emu_gdim;
static cudaError_t aic_emu_err = cudaSuccess; /* cudaGetLastError's */
static long aic_emu_faults;                   /* the current case's */
static char aic_emu_fault1[256];              /* its first */

static void aic_emu_fault(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void aic_emu_fault(const char *fmt, ...)
{
	if (!aic_emu_faults++) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(aic_emu_fault1, sizeof aic_emu_fault1, fmt, ap);
		va_end(ap);
	}
}

/* dynamic shared memory: the current launch's, as many floats as its smem argument holds */
static std::vector<float> aic_emu_smem;
struct aic_emu_shm {
	float &operator[](long i) const
	{
		static float spill;
		if (i < 0 || i >= (long)aic_emu_smem.size()) {
			aic_emu_fault("shared memory index %ld outside the launch's %zu floats", i,
			              aic_emu_smem.size());
			return spill;
		}
		return aic_emu_smem[i];
	}
};

/* the workspace: malloc with guard bytes on both sides (after a header of its size), NaN
 * inside */
enum { AIC_EMU_HDR = 16, AIC_EMU_GUARD = 256 };
static long aic_emu_live; /* workspaces not freed */
static cudaError_t aic_emu_malloc(void **p, size_t n)
{
	unsigned char *b = (unsigned char *)malloc(AIC_EMU_HDR + 2 * AIC_EMU_GUARD + n);
	if (!b)
		return cudaErrorMemoryAllocation;
	memcpy(b, &n, sizeof n);
	unsigned char *const g = b + AIC_EMU_HDR;
	memset(g, 0x5a, AIC_EMU_GUARD);
	memset(g + AIC_EMU_GUARD, 0xff, n); /* float NaN */
	memset(g + AIC_EMU_GUARD + n, 0x5a, AIC_EMU_GUARD);
	*p = g + AIC_EMU_GUARD;
	aic_emu_live++;
	return cudaSuccess;
}
static cudaError_t aic_emu_free(void *p)
{
	if (!p)
		return cudaSuccess;
	unsigned char *const g = (unsigned char *)p - AIC_EMU_GUARD, *const b = g - AIC_EMU_HDR;
	size_t n;
	memcpy(&n, b, sizeof n);
	for (size_t k = 0; k < AIC_EMU_GUARD; k++)
		if (g[k] != 0x5a || g[AIC_EMU_GUARD + n + k] != 0x5a) {
			aic_emu_fault("a write outside the workspace's %zu bytes", n);
			break;
		}
	free(b);
	aic_emu_live--;
	return cudaSuccess;
}

/* one block's threads as fibers */
enum { AIC_EMU_STACK = 64 << 10, AIC_EMU_MAXT = 1024 };
struct aic_emu_fiber {
	ucontext_t uc;
	char *stack;
	int done;
	long syncs;
};
static aic_emu_fiber aic_emu_fb[AIC_EMU_MAXT];
static ucontext_t aic_emu_sched;
static int aic_emu_cur;
static void (*aic_emu_body)(void *);
static void *aic_emu_arg;
static void aic_emu_entry(void)
{
	aic_emu_body(aic_emu_arg);
	aic_emu_fb[aic_emu_cur].done = 1;
	setcontext(&aic_emu_sched);
}
static void aic_emu_sync(void)
{
	aic_emu_fb[aic_emu_cur].syncs++;
	swapcontext(&aic_emu_fb[aic_emu_cur].uc, &aic_emu_sched);
}
static void aic_emu_block(unsigned nt, int rev)
{
	const unsigned bx = aic_emu_bdim.x, by = aic_emu_bdim.y;
	for (unsigned t = 0; t < nt; t++) {
		aic_emu_fiber &f = aic_emu_fb[t];
		if (!f.stack) {
			f.stack = (char *)malloc(AIC_EMU_STACK);
			getcontext(&f.uc);
		}
		f.uc.uc_stack.ss_sp = f.stack;
		f.uc.uc_stack.ss_size = AIC_EMU_STACK;
		f.uc.uc_link = NULL;
		makecontext(&f.uc, aic_emu_entry, 0);
		f.done = 0;
		f.syncs = 0;
	}
	/* rounds: each fiber runs to its next barrier or its end; then all resume */
	for (;;) {
		for (unsigned q = 0; q < nt; q++) {
			const unsigned t = rev ? nt - 1 - q : q;
			if (aic_emu_fb[t].done)
				continue;
			aic_emu_cur = (int)t;
			aic_emu_tid = make_uint3(t % bx, t / bx % by, t / (bx * by));
			swapcontext(&aic_emu_sched, &aic_emu_fb[t].uc);
		}
		unsigned done = 0;
		for (unsigned t = 0; t < nt; t++)
			done += aic_emu_fb[t].done;
		if (done == nt)
			break;
		if (done)
			aic_emu_fault(
			    "block (%u, %u): %u of %u threads ended while the others wait "
			    "at __syncthreads",
			    aic_emu_bid.x, aic_emu_bid.y, done, nt);
	}
	for (unsigned t = 1; t < nt; t++)
		if (aic_emu_fb[t].syncs != aic_emu_fb[0].syncs) {
			aic_emu_fault("block (%u, %u): thread %u passed %ld barriers, thread 0 %ld",
			              aic_emu_bid.x, aic_emu_bid.y, t, aic_emu_fb[t].syncs,
			              aic_emu_fb[0].syncs);
			break;
		}
}

/* the launches of the current case */
struct aic_emu_rec {
	char name[160];
	dim3 grid, block;
	size_t smem;
};
static std::vector<aic_emu_rec> aic_emu_log;

static unsigned aic_emu_bound(const char *name)
{
	const size_t n = strlen(name);
	if (n > 7 && !strcmp(name + n - 7, "_finish"))
		return AIC_EMU_LB_FINISH;
	if (strstr(name, "_kernel<"))
		return AIC_EMU_LB_KERNEL;
	return 0;
}

template <typename F>
static void aic_emu_launch(const char *name, F f, dim3 grid, dim3 block, size_t smem = 0,
                           cudaStream_t s = 0)
{
	(void)s;
	aic_emu_rec r;
	snprintf(r.name, sizeof r.name, "%s", name);
	r.grid = grid, r.block = block, r.smem = smem;
	aic_emu_log.push_back(r);
	const unsigned long nt = (unsigned long)block.x * block.y * block.z;
	const unsigned lb = aic_emu_bound(name);
	if (!lb)
		aic_emu_fault("a launch of %s, a kernel the emulator does not know", name);
	if (nt < 1 || nt > lb || nt > AIC_EMU_MAXT || block.z > 64 || smem > 48 * 1024 || !grid.x ||
	    !grid.y || !grid.z || grid.y > 65535 || grid.z > 65535) {
		aic_emu_err = cudaErrorInvalidConfiguration;
		return;
	}
	if (smem % sizeof(float))
		aic_emu_fault("%s: smem %zu not whole floats", name, smem);
	aic_emu_gdim = grid, aic_emu_bdim = block;
	aic_emu_smem.resize(smem / sizeof(float));
	aic_emu_body = [](void *p) { (*(F *)p)(); };
	aic_emu_arg = &f;
	unsigned long b = 0;
	for (unsigned z = 0; z < grid.z; z++)
		for (unsigned y = 0; y < grid.y; y++)
			for (unsigned x = 0; x < grid.x; x++, b++) {
				aic_emu_bid = make_uint3(x, y, z);
				for (float &v : aic_emu_smem)
					v = NAN;
				aic_emu_block((unsigned)nt, (int)(b & 1));
			}
}
static cudaError_t aic_emu_last_error(void)
{
	const cudaError_t e = aic_emu_err;
	aic_emu_err = cudaSuccess;
	return e;
}

/* kernels become host functions; device helpers host and device (the ones a column kernel
 * never calls, dropout's Philox and warp shuffles, fail loudly if called) */
static void aic_emu_nodev(const char *what)
{
	fprintf(stderr, "colsum_emu: the kernel called %s, which the emulation lacks\n", what);
	abort();
}
#undef __global__
#define __global__ __host__
#undef __device__
#define __device__ __host__ __location__(device)
#undef __launch_bounds__
#define __launch_bounds__(...)
#define blockIdx                 aic_emu_bid
#define threadIdx                aic_emu_tid
#define blockDim                 aic_emu_bdim
#define gridDim                  aic_emu_gdim
#define __syncthreads()          aic_emu_sync()
#define __shfl_xor_sync(m, v, o) (aic_emu_nodev("__shfl_xor_sync"), (v))
#define curand_init(...)         aic_emu_nodev("curand_init")
#define _curand_uniform4(...)    (aic_emu_nodev("curand_uniform4"), make_float4(0, 0, 0, 0))
#define cudaGetLastError()       aic_emu_last_error()
#define cudaMallocAsync(p, n, s) aic_emu_malloc((void **)(p), (n))
#define cudaFreeAsync(p, s)      aic_emu_free(p)
#define cudaGetDevice(d)         (*(d) = 0, cudaSuccess)
#define cudaDeviceGetAttribute(v, at, d)                                                           \
	(*(v) = (at) == cudaDevAttrMultiProcessorCount ? AIC_EMU_SMS : 0, cudaSuccess)
#include AIC_EMU_SRC
#undef cudaGetLastError

/* ---- the group ---- */
#define AIC_P2(a, b) a##b
#define AIC_P(a, b)  AIC_P2(a, b)
#define G_ARGS       AIC_P(AIC_EMU_G, _args)
#define G_LAUNCH     AIC_P(AIC_EMU_G, _launch)
#define G_COL        AIC_P(AIC_EMU_G, _col)
#define G_FIN        AIC_P(AIC_EMU_G, _fin)
#define G_KERNEL     AIC_P(AIC_EMU_G, _kernel)
#define G_MAXV       AIC_P(AIC_EMU_G, _MAX_VEC)
#define AIC_S2(x)    #x
#define AIC_S(x)     AIC_S2(x)
#define X(n)         +1
enum { NIN = 0 AIC_EMU_INPUTS(X), NW = 0 AIC_EMU_WRITES(X), NS = AIC_EMU_NS };
#undef X
static_assert(NIN == AIC_P(AIC_EMU_GU, _NIN), "the inputs named are the math's");
static_assert(NW == AIC_P(AIC_EMU_GU, _NW), "the writes named are the math's");
static_assert(!AIC_P(AIC_EMU_GU, _HAS_DROPOUT), "dropout (Philox) is not emulated");

/* element types: 0 float, 1 __half, 2 __nv_bfloat16, 3 unsigned char (bool) */
template <typename T> static int dtc(void);
template <> int dtc<float>(void)
{
	return 0;
}
template <> int dtc<__half>(void)
{
	return 1;
}
template <> int dtc<__nv_bfloat16>(void)
{
	return 2;
}
template <> int dtc<unsigned char>(void)
{
	return 3;
}
template <typename P> static int dtp(void)
{
	return dtc<std::remove_cv_t<std::remove_pointer_t<P>>>();
}
#define X(n) #n,
static const char *const in_name[NIN] = {AIC_EMU_INPUTS(X)};
static const char *const w_name[NW] = {AIC_EMU_WRITES(X)};
#undef X
#define X(n) dtp<decltype(G_ARGS::in_##n)>(),
static const int in_dt[NIN] = {AIC_EMU_INPUTS(X)};
#undef X
#define X(n) dtp<decltype(G_ARGS::w_##n)>(),
static const int w_dt[NW] = {AIC_EMU_WRITES(X)};
#undef X
static int in_cls[NIN]; /* 0 full size, 1 one element a column, 2 one a row */
static int w_col[NW];   /* a per-column write (set by _fin) or a full-size one (by _col) */

static size_t dsz(int dt)
{
	return dt == 0 ? 4 : dt == 3 ? 1 : 2;
}
static float getf(int dt, const void *p, long i)
{
	switch (dt) {
	case 0:
		return ((const float *)p)[i];
	case 1:
		return aic_to_float(((const __half *)p)[i]);
	case 2:
		return aic_to_float(((const __nv_bfloat16 *)p)[i]);
	default:
		return aic_to_float(((const unsigned char *)p)[i]);
	}
}
static void putf(int dt, void *p, long i, float v)
{
	switch (dt) {
	case 0:
		((float *)p)[i] = v;
		break;
	case 1:
		((__half *)p)[i] = aic_from_float<__half>(v);
		break;
	case 2:
		((__nv_bfloat16 *)p)[i] = aic_from_float<__nv_bfloat16>(v);
		break;
	default:
		((unsigned char *)p)[i] = aic_from_float<unsigned char>(v);
	}
}
static uint32_t bitsat(int dt, const void *p, long i)
{
	uint32_t b = 0;
	memcpy(&b, (const char *)p + i * dsz(dt), dsz(dt));
	return b;
}
static uint32_t bitsof(int dt, float v)
{
	unsigned char t[4];
	putf(dt, t, 0, v);
	return bitsat(dt, t, 0);
}
/* the sentinel: a NaN in each float type */
static uint32_t sentinel(int dt)
{
	return dt == 0 ? 0x7fa5a5a5u : dt == 3 ? 0xa5u : 0x7fa5u;
}

/* a tensor: ext elements at pad (+ 1 where misaligned) inside margins of sentinels */
enum { PAD = 64 };
struct buf {
	int dt = 0;
	long ext = 0, off = PAD;
	size_t bytes = 0;
	unsigned char *mem = NULL;
	void init(int t, long n, int mis)
	{
		dt = t, ext = n, off = PAD + (mis ? 1 : 0);
		bytes = ((ext + 2 * PAD + 1) * dsz(dt) + 63) / 64 * 64;
		mem = (unsigned char *)aligned_alloc(64, bytes);
		const uint32_t m = sentinel(dt);
		for (size_t e = 0; e < bytes / dsz(dt); e++)
			memcpy(mem + e * dsz(dt), &m, dsz(dt));
	}
	void *at(void) const
	{
		return mem + off * dsz(dt);
	}
	buf() = default;
	buf(const buf &) = delete;
	~buf()
	{
		free(mem);
	}
};

static unsigned seed = 12345u;
static double rnd(void) /* [-1, 1) */
{
	seed = seed * 1664525u + 1013904223u;
	return (double)(seed >> 8) / (1u << 24) * 2.0 - 1.0;
}

struct cse {
	long rows, cols;
	int vec, block;
	int mis;     /* 0 none, 1 the first full-size input one element off, 2 the first
	              * full-size write */
	int rnddata; /* random values (per-column results within a tolerance) */
	int force1;  /* the case leaves the launcher V 1 only (else it keeps vec, up to
	              * MAX_VEC; a short column always takes V 1) */
	const char *why;
	unsigned tx, by; /* where set: not the launcher but the column kernel alone, V vec,
	                  * blockDim (tx, by), one chunk: a plan the launcher does not make */
	int ept;         /* the launcher's ept (0: 1): chunks of ept times the rows */
	unsigned chunks; /* where set: the chunks the launcher must make (with AIC_EMU_SMS) */
};

/* the column kernel launched as its comment describes it: tiles of blockDim.x * V columns, one
 * chunk (so it finishes the columns itself), NS * blockDim.y * blockDim.x * V floats shared */
template <int V> static cudaError_t direct(const G_ARGS &a, unsigned tx, unsigned by)
{
	const unsigned tiles = (unsigned)((a.cols / V + tx - 1) / tx);
	char nm[160];
	snprintf(nm, sizeof nm, "%s_kernel<%d>", AIC_S(AIC_EMU_G), V);
	aic_emu_launch(
	    nm, [&]() { G_KERNEL<V>(a, (float *)NULL, a.rows > 0 ? a.rows : 1); }, dim3(tiles, 1),
	    dim3(tx, by), (size_t)NS * by * tx * V * sizeof(float), 0);
	return aic_emu_last_error();
}
static cudaError_t direct(const G_ARGS &a, int v, unsigned tx, unsigned by)
{
	return v == 1   ? direct<1>(a, tx, by)
	       : v == 2 ? direct<2>(a, tx, by)
	       : v == 4 ? direct<4>(a, tx, by)
	       : v == 8 ? direct<8>(a, tx, by)
	                : cudaErrorInvalidValue;
}

/* a crash (a vector access off its alignment, an address outside every buffer) ends the run
 * with a TAP line saying in which case */
static int cur_num;
static char cur_tag[200];
static void on_crash(int sig)
{
	char m[400];
	const int n = snprintf(m, sizeof m,
	                       "not ok %d - %s: crashed with signal %d (an access off its "
	                       "alignment or outside the buffers)\n",
	                       cur_num, cur_tag, sig);
	if (write(1, m, n > 0 && n < (int)sizeof m ? n : 0) < 0)
		_exit(2);
	_exit(1);
}

static long seen_v[16], seen_narrow, seen_full, seen_finish, seen_one;

static int run_case(int num, const cse &c)
{
	const long rows = c.rows, cols = c.cols, n = rows * cols;
	char tag[160];
	if (c.tx)
		snprintf(tag, sizeof tag,
		         "cols %ld, rows %ld, the column kernel alone, V %d, %ux%u", cols, rows,
		         c.vec, c.tx, c.by);
	else
		snprintf(tag, sizeof tag, "cols %ld, rows %ld, block %d, vec %d%s%s%s", cols, rows,
		         c.block, c.vec, c.mis == 1 ? ", an input one element off" : "",
		         c.mis == 2 ? ", a write one element off" : "",
		         c.rnddata ? ", random data" : "");
	cur_num = num;
	snprintf(cur_tag, sizeof cur_tag, "%s", tag);
	int mi = -1, mw = -1; /* the misaligned input, write */
	for (int k = 0; k < NIN && mi < 0; k++)
		if (c.mis == 1 && in_cls[k] == 0)
			mi = k;
	for (int k = 0; k < NW && mw < 0; k++)
		if (c.mis == 2 && !w_col[k])
			mw = k;
	if ((c.mis == 1 && mi < 0) || (c.mis == 2 && mw < 0)) {
		printf("ok %d - %s # skip the group has no full-size %s\n", num, tag,
		       c.mis == 1 ? "input" : "write");
		return 1;
	}
	std::vector<buf> in(NIN), w(NW);
	std::vector<std::vector<unsigned char>> keep(NIN);
	for (int k = 0; k < NIN; k++) {
		const long ext = in_cls[k] == 1 ? cols : in_cls[k] == 2 ? rows : n;
		in[k].init(in_dt[k], ext, k == mi);
		for (long e = 0; e < ext; e++) {
			const double v =
			    c.rnddata ? rnd() : floor(rnd() * 9.0) / 4.0; /* -2.25 .. 2 */
			putf(in_dt[k], in[k].at(), e, (float)v);
		}
		keep[k].assign(in[k].mem, in[k].mem + in[k].bytes);
	}
	for (int k = 0; k < NW; k++)
		w[k].init(w_dt[k], w_col[k] ? cols : n, k == mw);
	G_ARGS a;
	memset(&a, 0, sizeof a);
	int k_ = 0;
#define X(nm) a.in_##nm = (decltype(a.in_##nm))in[k_++].at();
	AIC_EMU_INPUTS(X)
#undef X
	k_ = 0;
#define X(nm) a.w_##nm = (decltype(a.w_##nm))w[k_++].at();
	AIC_EMU_WRITES(X)
#undef X
#define X(nm) a.m_##nm = cols;
	AIC_EMU_PERCOL(X)
#undef X
#define X(nm) a.m_##nm = rows;
	AIC_EMU_PERROW(X)
#undef X
	(void)k_;
	a.n = n, a.rows = rows, a.cols = cols, a.seed = 1, a.offset = 0;

	aic_emu_log.clear();
	aic_emu_faults = 0;
	aic_emu_fault1[0] = 0;
	aic_emu_live = 0;
	const cudaError_t rc =
	    c.tx ? direct(a, c.vec, c.tx, c.by) : G_LAUNCH(a, c.block, c.vec, c.ept ? c.ept : 1, 0);

	/* the plan */
	long kl = 0, fl = 0;
	int V = 0;
	aic_emu_rec K = {}, F = {};
	for (const aic_emu_rec &r : aic_emu_log) {
		const char *lt = strstr(r.name, "_kernel<");
		if (lt) {
			kl++, K = r, V = atoi(lt + 8);
		} else {
			fl++, F = r;
		}
	}
	char plan[200];
	if (fl)
		snprintf(plan, sizeof plan,
		         "V %d, %ux%u threads, %u tiles x %u chunks, %u B shared; finish %u x "
		         "(%ux%u)",
		         V, K.block.x, K.block.y, K.grid.x, K.grid.y, (unsigned)K.smem, F.grid.x,
		         F.block.x, F.block.y);
	else
		snprintf(plan, sizeof plan,
		         "V %d, %ux%u threads, %u tiles x %u chunks, %u B shared", V, K.block.x,
		         K.block.y, K.grid.x, K.grid.y, (unsigned)K.smem);
	const int want = rows <= 512 || c.force1 ? 1 : c.vec < G_MAXV ? c.vec : G_MAXV;
	char why[256] = "";
	if (kl != 1)
		snprintf(why, sizeof why, "%ld column kernel launches", kl);
	else if (c.tx && fl)
		snprintf(why, sizeof why, "%ld finish launches", fl);
	else if (c.tx)
		;
	else if (fl != (K.grid.y > 1))
		snprintf(why, sizeof why, "%ld finish launches for %u chunks", fl, K.grid.y);
	else if (c.chunks && K.grid.y != c.chunks)
		snprintf(why, sizeof why, "%u chunks, want %u", K.grid.y, c.chunks);
	else if (rows <= 512 && K.grid.y != 1)
		snprintf(why, sizeof why, "a short column in %u chunks", K.grid.y);
	else if (V != want)
		snprintf(why, sizeof why, "V %d, want %d", V, want);
	else if ((unsigned long)K.block.x * V * K.grid.x < (unsigned long)cols)
		snprintf(why, sizeof why, "the tiles cover %lu of %ld columns",
		         (unsigned long)K.block.x * V * K.grid.x, cols);
	else if (K.block.x > 32 || (K.block.x & (K.block.x - 1)))
		snprintf(why, sizeof why, "blockDim.x %u", K.block.x);
	if (kl == 1 && !c.tx && V > 0 && V < 16)
		seen_v[V]++;
	if (kl == 1 && !c.tx) {
		seen_narrow += K.block.x < 32, seen_full += K.block.x == 32;
		seen_finish += fl > 0, seen_one += K.grid.y == 1;
	}

	/* the reference: _col an element, the column sums in double, _fin a column */
	std::vector<double> sum((size_t)NS * cols, 0.0), sabs(sum.size(), 0.0);
	std::vector<int> gran(sum.size(), 0); /* the summands are multiples of 2^-gran */
	long bad = 0, nchk = 0, exactc = 0, tolc = 0;
	char first[200] = "";
	float xin[NIN > 0 ? NIN : 1], u[64] = {0}, s[NS > 0 ? NS : 1], o[NW > 0 ? NW : 1];
	for (long r = 0; r < rows; r++)
		for (long cc = 0; cc < cols; cc++) {
			const long i = r * cols + cc;
			for (int k = 0; k < NIN; k++)
				xin[k] = getf(in_dt[k], in[k].at(),
				              in_cls[k] == 1   ? cc
				              : in_cls[k] == 2 ? r
				                               : i);
			for (int k = 0; k < NW; k++)
				o[k] = 0.f;
			G_COL(xin, u, r, cc, s, o);
			for (int k = 0; k < NS; k++) {
				const size_t q = (size_t)k * cols + cc;
				const double x = s[k];
				sum[q] += x, sabs[q] += fabs(x);
				while (gran[q] < 64 &&
				       ldexp(x, gran[q]) != floor(ldexp(x, gran[q])))
					gran[q]++;
			}
			for (int k = 0; k < NW; k++) {
				if (w_col[k])
					continue;
				const uint32_t want = bitsof(w_dt[k], o[k]),
				               got = bitsat(w_dt[k], w[k].at(), i);
				nchk++;
				if (want != got && !bad++)
					snprintf(first, sizeof first,
					         "%s[row %ld, col %ld] = %g, want %g", w_name[k], r,
					         cc, getf(w_dt[k], w[k].at(), i),
					         getf(w_dt[k], &want, 0));
			}
		}
	for (long cc = 0; cc < cols; cc++) {
		int exact = 1;
		for (int k = 0; k < NS; k++) {
			const size_t q = (size_t)k * cols + cc;
			s[k] = (float)sum[q];
			exact &= gran[q] < 64 && ldexp(sabs[q], gran[q]) < 16777216.0;
		}
		for (int k = 0; k < NIN; k++)
			xin[k] = in_cls[k] == 1 ? getf(in_dt[k], in[k].at(), cc) : 0.f;
		for (int k = 0; k < NW; k++)
			o[k] = 0.f;
		G_FIN(s, xin, o);
		/* the tolerance: how far each result moves when a column sum moves by the error a
		 * float sum of these summands may have (1e-4 of the sum of their magnitudes) */
		double tol[NW > 0 ? NW : 1] = {0};
		if (!exact)
			for (int k = 0; k < NS; k++) {
				float s2[NS > 0 ? NS : 1], o2[NW > 0 ? NW : 1] = {0};
				memcpy(s2, s, sizeof s2);
				s2[k] = (float)(sum[(size_t)k * cols + cc] +
				                1e-4 * sabs[(size_t)k * cols + cc]);
				G_FIN(s2, xin, o2);
				for (int q = 0; q < NW; q++)
					tol[q] += fabs((double)o2[q] - o[q]);
			}
		exactc += exact, tolc += !exact;
		for (int k = 0; k < NW; k++) {
			if (!w_col[k])
				continue;
			const uint32_t want = bitsof(w_dt[k], o[k]),
			               got = bitsat(w_dt[k], w[k].at(), cc);
			const double g = getf(w_dt[k], w[k].at(), cc), wv = getf(w_dt[k], &want, 0);
			const double rel = w_dt[k] == 0 ? 1e-6 : w_dt[k] == 1 ? 2e-3 : 1.6e-2;
			const int fine =
			    exact ? want == got : fabs(g - wv) <= tol[k] + rel * fabs(wv) + 1e-30;
			nchk++;
			if (!fine && !bad++)
				snprintf(first, sizeof first, "%s[col %ld] = %.9g, want %.9g (%s)",
				         w_name[k], cc, g, wv,
				         exact ? "exact" : "within tolerance");
		}
	}
	/* nothing outside the writes, no input written */
	long outside = 0;
	for (int k = 0; k < NW; k++) {
		const long e0 = w[k].off, e1 = w[k].off + w[k].ext;
		for (long e = 0; e < (long)(w[k].bytes / dsz(w_dt[k])); e++)
			if ((e < e0 || e >= e1) &&
			    bitsat(w_dt[k], w[k].mem, e) != sentinel(w_dt[k]))
				outside++;
	}
	for (int k = 0; k < NIN; k++)
		if (memcmp(keep[k].data(), in[k].mem, in[k].bytes))
			outside++;
	if (aic_emu_live)
		aic_emu_fault("%ld workspaces not freed", aic_emu_live);

	const int ok = rc == cudaSuccess && !bad && !outside && !aic_emu_faults && !why[0];
	printf("%s %d - %s (%s): %s; %ld elements checked, %ld off, %ld written outside, "
	       "%ld columns exact, %ld within tolerance, rc %d%s%s%s%s%s%s\n",
	       ok ? "ok" : "not ok", num, tag, c.why, plan, nchk, bad, outside, exactc, tolc,
	       (int)rc, first[0] ? "; first: " : "", first, aic_emu_faults ? "; fault: " : "",
	       aic_emu_fault1, why[0] ? "; plan: " : "", why);
	return ok;
}

/* which writes _col and _fin set, and how many column sums _col gives */
static int probe(void)
{
	const uint32_t mark = 0x7fa5a5a5u;
	float xin[NIN > 0 ? NIN : 1], u[64] = {0}, s[64], o[NW > 0 ? NW : 1], o2[NW > 0 ? NW : 1];
	for (int k = 0; k < NIN; k++)
		xin[k] = 0.75f;
	for (int k = 0; k < 64; k++)
		memcpy(&s[k], &mark, 4);
	for (int k = 0; k < NW; k++)
		memcpy(&o[k], &mark, 4), memcpy(&o2[k], &mark, 4);
	G_COL(xin, u, 3, 5, s, o);
	int ns = 0, ok = 1;
	while (ns < 64 && memcmp(&s[ns], &mark, 4))
		ns++;
	for (int k = ns; k < 64; k++)
		ok &= !memcmp(&s[k], &mark, 4);
	for (int k = 0; k < NS; k++)
		s[k] = 1.5f;
	G_FIN(s, xin, o2);
	for (int k = 0; k < NW; k++) {
		const int bycol = memcmp(&o[k], &mark, 4) != 0,
		          byfin = memcmp(&o2[k], &mark, 4) != 0;
		if (bycol == byfin) {
			printf("not ok - write %s is set by %s\n", w_name[k],
			       bycol ? "both _col and _fin" : "neither _col nor _fin");
			ok = 0;
		}
		w_col[k] = byfin;
	}
	if (ns != NS) {
		printf("not ok - _col gives %d column sums, the kernel adds %d\n", ns, NS);
		ok = 0;
	}
	for (int k = 0; k < NIN; k++)
		in_cls[k] = 0;
#define X(nm)                                                                                      \
	for (int k = 0; k < NIN; k++)                                                              \
		if (!strcmp(in_name[k], #nm))                                                      \
			in_cls[k] = CLS;
#define CLS 1
	AIC_EMU_PERCOL(X)
#undef CLS
#define CLS 2
	AIC_EMU_PERROW(X)
#undef CLS
#undef X
	return ok;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	static char alt[64 << 10];
	stack_t ss = {};
	ss.ss_sp = alt, ss.ss_size = sizeof alt;
	sigaltstack(&ss, NULL);
	struct sigaction sa = {};
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	if (!probe())
		return 1;
	printf("# %s: inputs", AIC_S(AIC_EMU_G));
	for (int k = 0; k < NIN; k++)
		printf(" %s%s", in_name[k],
		       in_cls[k] == 1   ? " (a column)"
		       : in_cls[k] == 2 ? " (a row)"
		                        : "");
	printf(", writes");
	for (int k = 0; k < NW; k++)
		printf(" %s%s", w_name[k], w_col[k] ? " (a column)" : "");
	printf(", %d column sums, MAX_VEC %d, %d SMs emulated\n", NS, G_MAXV, AIC_EMU_SMS);
	/* rows, cols, vec, block, misaligned, random data, forced V 1, what it is for */
	static const cse cases[] = {
	    /* short columns (<= 512 rows): one chunk, V 1, 16 rows of 32 lanes or as many
	     * threads in narrower rows, the columns finished in the column kernel */
	    {512, 64, 8, 512, 0, 0, 0, "the model's columns, short: 2 tiles of 32"},
	    {300, 8, 4, 128, 0, 0, 0, "8 columns: 8 lanes"},
	    {100, 3, 1, 128, 0, 0, 0, "3 columns: 4 lanes, one idle"},
	    {512, 768, 2, 128, 0, 0, 0, "768 columns: 24 tiles"},
	    {200, 96, 8, 512, 0, 0, 0, "96 columns: 3 tiles"},
	    {1, 32, 4, 512, 0, 0, 0, "one row"},
	    {0, 64, 4, 128, 0, 0, 0, "no rows: the sums are 0"},
	    /* long columns: chunks of rows, the finish kernel adds them */
	    {20000, 64, 8, 512, 0, 0, 0, "the model's columns: 8 lanes of 8"},
	    {20000, 64, 4, 128, 0, 0, 0, "16 lanes of 4"},
	    {4096, 64, 2, 128, 0, 0, 0, "32 lanes of 2"},
	    {4096, 64, 1, 512, 0, 0, 0, "2 tiles of 32 lanes"},
	    {4096, 32, 8, 512, 0, 0, 0, "4 lanes of 8"},
	    {4096, 96, 4, 128, 0, 0, 0, "24 of 32 lanes used"},
	    {4096, 96, 8, 512, 0, 0, 0, "12 of 16 lanes used"},
	    {4096, 40, 8, 128, 0, 0, 0, "5 of 8 lanes used"},
	    {4096, 768, 8, 512, 0, 0, 0, "3 tiles of 32 lanes of 8"},
	    {4096, 768, 2, 128, 0, 0, 0, "12 tiles"},
	    {20000, 8, 8, 128, 0, 0, 0, "1 lane of 8"},
	    {20000, 3, 8, 512, 0, 0, 1, "odd columns: V 1, 4 lanes"},
	    {600, 96, 2, 512, 0, 0, 0, "600 rows, under 1,024"},
	    {4096, 64, 8, 128, 1, 0, 1, "V 1 for the misaligned input"},
	    {4096, 64, 8, 512, 2, 0, 1, "V 1 for the misaligned write"},
	    {20000, 64, 4, 512, 0, 1, 0, "sums within a tolerance"},
	    {4096, 64, 16, 512, 0, 0, 0, "vec 16 lowered to MAX_VEC"},
	    {1000, 8, 8, 512, 0, 0, 0, "1 lane, 512 rows of threads, 2 chunks of 500 rows"},
	    /* ept 2 and 4: a half and a quarter of the wave's chunks, each ept times the rows
	     * (132 SMs: a wave of 2,112 blocks of 128 threads, 528 of 512) */
	    {60000, 64, 8, 128, 0, 0, 0, "ept 1: 938 chunks, the 64-row floor", 0, 0, 1, 938},
	    {60000, 64, 8, 128, 0, 0, 0, "ept 4: 527 chunks of 114 rows", 0, 0, 4, 527},
	    {60000, 64, 8, 512, 0, 1, 0, "ept 2: 264 chunks, random", 0, 0, 2, 264},
	    {4096, 768, 2, 128, 0, 0, 0, "ept 4, 12 tiles: 44 chunks", 0, 0, 4, 44},
	    {60000, 64, 8, 128, 0, 0, 0, "ept 3 taken as 1", 0, 0, 3, 938},
	    /* the column kernel alone: narrow tiles, several of them */
	    {300, 64, 4, 0, 0, 0, 0, "2 tiles of 8 lanes", 8, 16},
	    {300, 96, 2, 0, 0, 0, 0, "3 tiles of 16 lanes", 16, 8},
	    {100, 40, 1, 0, 0, 0, 0, "3 tiles of 16 lanes, 8 of the last used", 16, 32},
	    {50, 24, 8, 0, 0, 0, 0, "2 tiles of 2 lanes, 1 of the last used", 2, 64},
	};
	int ok = 1, num = 0;
	for (const cse &c : cases)
		ok &= run_case(++num, c);
	/* the paths the cases are built to take */
	char miss[200] = "";
	for (int v = 1; v <= G_MAXV && v < 16; v *= 2)
		if (!seen_v[v])
			snprintf(miss + strlen(miss), sizeof miss - strlen(miss), " V %d", v);
	if (!seen_narrow)
		strcat(miss, " blockDim.x < 32");
	if (!seen_full)
		strcat(miss, " blockDim.x 32");
	if (!seen_finish)
		strcat(miss, " several chunks and the finish");
	if (!seen_one)
		strcat(miss, " one chunk");
	printf("%s %d - the cases took every plan: V 1 %ld, 2 %ld, 4 %ld, 8 %ld; blockDim.x < 32 "
	       "%ld, 32 %ld; one chunk %ld, with the finish %ld%s%s\n",
	       miss[0] ? "not ok" : "ok", ++num, seen_v[1], seen_v[2], seen_v[4], seen_v[8],
	       seen_narrow, seen_full, seen_one, seen_finish, miss[0] ? "; none with" : "", miss);
	ok &= !miss[0];
	printf("# colsum_emu: %d cases, %s\n", num, ok ? "all ok" : "FAILED");
	return ok ? 0 : 1;
}
