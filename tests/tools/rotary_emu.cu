/*
 * rotary_emu.cu - the package's rotary kernel (fusion/emit-rotary.c, aic_rotary.cu as fuse
 * writes it) run on the CPU, thread by thread, against the pair formula in double, so that its
 * launch plan and index arithmetic are checked where there is no GPU.
 *
 * tests/func/t-rotary-emu.sh writes the kernel's files with `aicprof fuse`, rewrites each
 * launch `K<<<grid, block, 0, s>>>(a)` as aic_emu_launch(grid, block, ...) and compiles this
 * file with -DAIC_EMU_SRC naming the rewritten source. Here __global__ functions become host
 * functions and blockIdx, threadIdx and blockDim host variables; aic_emu_launch calls the
 * kernel once for each block and thread in turn (the rotary kernels share nothing between
 * threads, so any order is a valid schedule). Each case fills q and k (views with the layouts
 * models make: [B, S, H, D] projections transposed, contiguous, an odd offset with padded rows,
 * grouped-query k with fewer heads, cos varying over the heads or not), runs forward and
 * backward through aic_rotary_run, and checks every element of both results against the
 * formula in double, and that no element outside the results' views changed (each output
 * buffer is filled with a sentinel first). Which kernel a launch took (the scalar kernel, the
 * vector one with 1 head a thread, with AIC_RH heads, or with q and k in one joint grid) is
 * counted, and the run fails when a path the cases are built to take was not taken.
 * Prints one TAP line a case and exits 0 when all pass.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

/* the emulation: kernels are host functions, the built-in indices host variables */
static uint3 aic_emu_bid, aic_emu_tid;
static dim3 aic_emu_bdim;
static long aic_emu_paths[4]; /* launches: scalar, vector 1 head, AIC_RH heads, joint */
#undef __global__
#define __global__ __host__
#undef __launch_bounds__
#define __launch_bounds__(...)
#define blockIdx           aic_emu_bid
#define threadIdx          aic_emu_tid
#define blockDim           aic_emu_bdim
#define cudaGetLastError() cudaSuccess
template <typename F> static void aic_emu_launch(unsigned grid, unsigned block, F f)
{
	aic_emu_bdim = dim3(block, 1, 1);
	for (unsigned b = 0; b < grid; b++)
		for (unsigned t = 0; t < block; t++) {
			aic_emu_bid = make_uint3(b, 0, 0);
			aic_emu_tid = make_uint3(t, 0, 0);
			f();
		}
}
#include AIC_EMU_SRC

static double rd(float v)
{
	return v;
}
static double rd(__half v)
{
	return __half2float(v);
}
static double rd(__nv_bfloat16 v)
{
	return __bfloat162float(v);
}
template <typename T> static T wr(double v);
template <> float wr<float>(double v)
{
	return (float)v;
}
template <> __half wr<__half>(double v)
{
	return __float2half_rn((float)v);
}
template <> __nv_bfloat16 wr<__nv_bfloat16>(double v)
{
	return __float2bfloat16_rn((float)v);
}
template <typename T> static int dtcode();
template <> int dtcode<float>()
{
	return 0;
}
template <> int dtcode<__half>()
{
	return 1;
}
template <> int dtcode<__nv_bfloat16>()
{
	return 2;
}
/* the results' rounding, relative (to at least 0.05 in magnitude): f32 1e-5, f16 2^-10, bf16
 * 2^-7 (both twice their rounding's bound) */
template <typename T> static double eps()
{
	return dtcode<T>() == 0 ? 1e-5 : dtcode<T>() == 1 ? 9.8e-4 : 7.8e-3;
}

static unsigned seed = 12345u;
static double rnd(void)
{
	seed = seed * 1664525u + 1013904223u;
	return (double)(seed >> 8) / (1u << 24) * 2.0 - 1.0;
}

/* one tensor of the launch: a [B, H, S, D] view into its own buffer */
struct view {
	long long B, H, S, D, st[3], off, len;
};
/* the layouts: 0 contiguous [B, H, S, D]; 1 [B, S, H, D] transposed (the attention modules');
 * 2 contiguous with rows padded by 8 elements and an offset of 8 (vector-aligned);
 * 3 rows padded by 1 and an offset of 1 (the scalar kernel's) */
static view mkview(long long B, long long H, long long S, long long D, int lay)
{
	view v = {B, H, S, D, {0, 0, 0}, 0, 0};
	const long long rd_ = lay == 2 ? D + 8 : lay == 3 ? D + 1 : D;
	if (lay == 1) {
		v.st[2] = H * D, v.st[1] = D, v.st[0] = S * H * D;
	} else {
		v.st[2] = rd_, v.st[1] = S * rd_, v.st[0] = H * S * rd_;
	}
	v.off = lay == 2 ? 8 : lay == 3 ? 1 : 0;
	v.len = v.off + B * v.st[0] + 8;
	return v;
}

struct cse {
	const char *name;
	long long B, Hq, Hk, Sq, Sk, D;
	int lay;    /* of q, k and the results */
	int cheads; /* cos varies over the heads (its view's head stride not 0) */
	int cbatch; /* cos has a batch dimension of its own (else stride 0, one row set) */
	int want;   /* the path this case is built to take (aic_emu_paths' index) */
};

template <typename TX, typename TC, typename TY> static int run_case(const cse &c, int bwd)
{
	const long long Hm = c.Hq > c.Hk ? c.Hq : c.Hk, Sm = c.Sq > c.Sk ? c.Sq : c.Sk;
	view vx[2] = {mkview(c.B, c.Hq, c.Sq, c.D, c.lay), mkview(c.B, c.Hk, c.Sk, c.D, c.lay)};
	view vy[2] = {mkview(c.B, c.Hq, c.Sq, c.D, c.lay), mkview(c.B, c.Hk, c.Sk, c.D, c.lay)};
	/* cos and sin: [B or 1, Hm or 1, Sm, D] contiguous, broadcast by stride 0 */
	const long long cb = c.cbatch ? c.B : 1, chh = c.cheads ? Hm : 1;
	const long long cst[3] = {c.cbatch ? chh * Sm * c.D : 0, c.cheads ? Sm * c.D : 0, c.D};
	std::vector<TC> cosv(cb * chh * Sm * c.D), sinv(cosv.size());
	for (size_t i = 0; i < cosv.size(); i++) {
		const double th = rnd() * 3.0;
		cosv[i] = wr<TC>(cos(th)), sinv[i] = wr<TC>(sin(th));
	}
	std::vector<TX> xb[2];
	std::vector<TY> yb[2];
	const TY sent = wr<TY>(1234.0);
	for (int i = 0; i < 2; i++) {
		xb[i].resize(vx[i].len);
		for (auto &e : xb[i])
			e = wr<TX>(rnd());
		yb[i].assign(vy[i].len, sent);
	}
	const void *xp[2] = {xb[0].data() + vx[0].off, xb[1].data() + vx[1].off};
	void *yp[2] = {yb[0].data() + vy[0].off, yb[1].data() + vy[1].off};
	long long shape[8], xst[6], yst[6], cs[6];
	for (int i = 0; i < 2; i++) {
		shape[4 * i] = vx[i].B, shape[4 * i + 1] = vx[i].H, shape[4 * i + 2] = vx[i].S;
		shape[4 * i + 3] = vx[i].D;
		for (int k = 0; k < 3; k++)
			xst[3 * i + k] = vx[i].st[k], yst[3 * i + k] = vy[i].st[k],
			            cs[3 * i + k] = cst[k];
	}
	long before[4];
	memcpy(before, aic_emu_paths, sizeof before);
	const int rc = aic_rotary_run(xp, yp, shape, xst, yst, cs, cosv.data(), sinv.data(),
	                              dtcode<TX>(), dtcode<TC>(), dtcode<TY>(), bwd, NULL);
	int took = -1;
	for (int k = 0; k < 4; k++)
		if (aic_emu_paths[k] != before[k])
			took = k;
	long long bad = 0, outside = 0, n = 0;
	double worst = 0;
	for (int i = 0; i < 2; i++) {
		const view &X = vx[i], &Y = vy[i];
		const long long h = c.D / 2;
		std::vector<char> in(Y.len, 0);
		for (long long b = 0; b < X.B; b++)
			for (long long hh = 0; hh < X.H; hh++)
				for (long long s = 0; s < X.S; s++) {
					const TX *x = xb[i].data() + X.off + b * X.st[0] +
					              hh * X.st[1] + s * X.st[2];
					const long long yo =
					    Y.off + b * Y.st[0] + hh * Y.st[1] + s * Y.st[2];
					const long long co = b * cst[0] + hh * cst[1] + s * cst[2];
					for (long long j = 0; j < h; j++) {
						const double x1 = rd(x[j]), x2 = rd(x[j + h]);
						const double c1 = rd(cosv[co + j]),
						             c2 = rd(cosv[co + j + h]);
						const double s1 = rd(sinv[co + j]),
						             s2 = rd(sinv[co + j + h]);
						const double w1 =
						    bwd ? x1 * c1 + x2 * s2 : x1 * c1 - x2 * s1;
						const double w2 =
						    bwd ? x2 * c2 - x1 * s1 : x2 * c2 + x1 * s2;
						const double g1 = rd(yb[i][yo + j]),
						             g2 = rd(yb[i][yo + j + h]);
						in[yo + j] = in[yo + j + h] = 1;
						const double e1 =
						    fabs(g1 - w1) / fmax(fabs(w1), 0.05);
						const double e2 =
						    fabs(g2 - w2) / fmax(fabs(w2), 0.05);
						worst = fmax(worst, fmax(e1, e2));
						bad += (e1 > eps<TY>()) + (e2 > eps<TY>());
						n += 2;
					}
				}
		for (long long e = 0; e < Y.len; e++)
			if (!in[e] && rd(yb[i][e]) != rd(sent))
				outside++;
	}
	const int ok = rc == 0 && bad == 0 && outside == 0 && took == c.want;
	printf("%s - rotary kernel on the CPU: %s, %s: %lld elements, %lld off, worst rel %.2g, "
	       "%lld written outside, path %d (want %d), rc %d\n",
	       ok ? "ok" : "not ok", c.name, bwd ? "backward" : "forward", n, bad, worst, outside,
	       took, c.want, rc);
	return ok;
}

int main(void)
{
	/* name, B, Hq, Hk, Sq, Sk, D, layout, cos over heads, cos over batch, path */
	static const cse cases[] = {
	    {"q and k alike, transposed, bf16 (joint)", 2, 8, 8, 5, 5, 16, 1, 0, 1, 3},
	    {"grouped-query k of 2 heads, cos one row set (joint)", 2, 8, 2, 3, 3, 16, 1, 0, 0, 3},
	    {"6 and 3 heads, not a multiple of 4 (joint)", 3, 6, 3, 4, 4, 16, 0, 0, 1, 3},
	    {"head dimension 128, padded rows (joint)", 1, 5, 4, 3, 3, 128, 2, 0, 1, 3},
	    {"q and k of other lengths (4 heads a thread, apart)", 2, 8, 4, 5, 3, 16, 1, 0, 1, 2},
	    {"cos varying over the heads (vector, 1 head)", 2, 4, 4, 3, 3, 16, 1, 1, 1, 1},
	    {"odd offset and row stride (scalar)", 2, 3, 2, 3, 3, 12, 3, 0, 1, 0},
	};
	int ok = 1, total = 0;
	for (const cse &c : cases)
		for (int bwd = 0; bwd < 2; bwd++) {
			ok &= run_case<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(c, bwd);
			total++;
		}
	/* other types: f16 q and k with f32 cos (a vector of 8 halves, cos in 2 loads of 16 bytes),
	 * f32 throughout (V = 4) and bf16 results of f32 inputs */
	ok &= run_case<__half, float, __half>(cases[1], 0);
	ok &= run_case<float, float, float>(cases[0], 1);
	ok &= run_case<float, float, __nv_bfloat16>(cases[2], 0);
	ok &= run_case<__nv_bfloat16, float, __nv_bfloat16>(cases[6], 1);
	total += 4;
	printf("# rotary_emu: %d cases, %s\n", total, ok ? "all ok" : "FAILED");
	return ok ? 0 : 1;
}
