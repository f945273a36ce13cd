"""Variants of a fused package's chain kernels, for measuring launch layouts side by side
(docs/perf.md, session 19): "nocap" removes the launcher's cap on the grid (a tree before
33d40c3 had one of 8 waves), "i32" also runs the grid-stride loop in 32-bit indices.
  python3 tests/gpu/kvariants.py SRC_FUSEDDIR DST_FUSEDDIR nocap|i32
then tests/gpu/gated_kbench.py llama base=SRC nocap=DST ...
The rotary kernel's (_rotary/aic_rotary.cu, session 24): "rsep" launches q's blocks, then k's
(no joint grid), "r256" takes 256 threads a block, "rc4" both (the kernel of session 22);
then tests/gpu/kbench.py --only rotary --large --forms fused --pkg-llama DST.
Cache hints (session 25): "cs" loads every chain and row kernel's inputs with __ldcs and stores
with __stcs (streaming: evict first), and the rotary kernel's x and y the same; "el" loads the
rotary kernel's cos and sin with an L2 evict_last policy (as Triton marks the loads a kernel
broadcasts); "csel" both. "rh2" and "rh8": the rotary kernel's thread takes 2 or 8 heads of a
row (AIC_RH; the generator's 4)."""
import os, re, shutil, sys
src, dst, var = sys.argv[1:4]
# loads and stores of a vector as its widest words (16, 8 or 4 bytes; a 2-byte one plain):
# aic_ldh<false> streaming (__ldcs), aic_ldh<true> under an L2 evict_last policy, aic_stcs
# streaming (__stcs)
HINTS = r"""
#ifndef AIC_HINTS
#define AIC_HINTS
#include <string.h>
#include <type_traits>
template <typename R>
using aic_word = typename std::conditional<
    sizeof(R) % 16 == 0, uint4,
    typename std::conditional<sizeof(R) % 8 == 0, uint2, unsigned>::type>::type;
#define AIC_EL_POLICY "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
__device__ __forceinline__ uint4 aic_el(const uint4 *p)
{
	uint4 u;
	asm("{\n\t.reg .b64 pol;\n\t" AIC_EL_POLICY
	    "ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], pol;\n\t}"
	    : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p));
	return u;
}
__device__ __forceinline__ uint2 aic_el(const uint2 *p)
{
	uint2 u;
	asm("{\n\t.reg .b64 pol;\n\t" AIC_EL_POLICY
	    "ld.global.L2::cache_hint.v2.u32 {%0, %1}, [%2], pol;\n\t}"
	    : "=r"(u.x), "=r"(u.y) : "l"(p));
	return u;
}
__device__ __forceinline__ unsigned aic_el(const unsigned *p)
{
	unsigned u;
	asm("{\n\t.reg .b64 pol;\n\t" AIC_EL_POLICY
	    "ld.global.L2::cache_hint.u32 %0, [%1], pol;\n\t}" : "=r"(u) : "l"(p));
	return u;
}
template <bool EL, typename R> __device__ __forceinline__ R aic_ldh(const R *p)
{
	if constexpr (sizeof(R) % 4 != 0) {
		return *p;
	} else {
		using W = aic_word<R>;
		R r;
		for (int i = 0; i < (int)(sizeof(R) / sizeof(W)); i++) {
			W w;
			if constexpr (EL)
				w = aic_el((const W *)p + i);
			else
				w = __ldcs((const W *)p + i);
			memcpy((char *)&r + sizeof(W) * i, &w, sizeof(W));
		}
		return r;
	}
}
template <typename R> __device__ __forceinline__ void aic_stcs(R *p, const R &r)
{
	if constexpr (sizeof(R) % 4 != 0) {
		*p = r;
	} else {
		using W = aic_word<R>;
		for (int i = 0; i < (int)(sizeof(R) / sizeof(W)); i++) {
			W w;
			memcpy(&w, (const char *)&r + sizeof(W) * i, sizeof(W));
			__stcs((W *)p + i, w);
		}
	}
}
#endif
"""
def hints(s):
    """the helpers after the file's first #include of cuda_runtime.h"""
    i = s.index("#include <cuda_runtime.h>\n") + len("#include <cuda_runtime.h>\n")
    return s[:i] + HINTS + s[i:]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
for root, _, files in os.walk(os.path.join(dst, "aicprof_fused")):
    for f in files:
        if f == "aic_rotary.cu" and (var.startswith("r") or var in ("cs", "el", "csel")):
            p = os.path.join(root, f)
            s = open(p).read()
            s2 = s
            if var in ("rsep", "rc4"):
                s2 = s2.replace("const bool joint = heads &&", "const bool joint = false &&")
            if var in ("r256", "rc4"):
                s2 = s2.replace("#define AIC_RB 128", "#define AIC_RB 256")
            if var in ("rh2", "rh8"):
                s2 = s2.replace("#define AIC_RH 4", "#define AIC_RH " + var[2:])
            if var in ("cs", "el", "csel"):
                s2 = hints(s2)
            if var in ("cs", "csel"):
                s2 = (s2.replace("x1[u] = *(const aic_rv<TX, V> *)x;", "x1[u] = aic_ldh<false>((const aic_rv<TX, V> *)x);")
                        .replace("x2[u] = *(const aic_rv<TX, V> *)(x + h);", "x2[u] = aic_ldh<false>((const aic_rv<TX, V> *)(x + h));")
                        .replace("*(aic_rv<TY, V> *)y = y1;", "aic_stcs((aic_rv<TY, V> *)y, y1);")
                        .replace("*(aic_rv<TY, V> *)(y + h) = y2;", "aic_stcs((aic_rv<TY, V> *)(y + h), y2);"))
            if var in ("el", "csel"):
                s2 = (s2.replace("c1 = *(const aic_rv<TC, V> *)c, c2 = *(const aic_rv<TC, V> *)(c + h);",
                                 "c1 = aic_ldh<true>((const aic_rv<TC, V> *)c), c2 = aic_ldh<true>((const aic_rv<TC, V> *)(c + h));")
                        .replace("s1 = *(const aic_rv<TC, V> *)sn;", "s1 = aic_ldh<true>((const aic_rv<TC, V> *)sn);")
                        .replace("s2 = *(const aic_rv<TC, V> *)(sn + h);", "s2 = aic_ldh<true>((const aic_rv<TC, V> *)(sn + h));"))
            assert s2 != s, "the rotary kernel's text changed: " + var
            open(p, "w").write(s2)
            print("edited", p)
            continue
        if not f.endswith("_kernel.cu"):
            continue
        p = os.path.join(root, f)
        s = open(p).read()
        s2 = s
        if var in ("nocap", "i32"):
            s2 = s2.replace("\tif (grid > cap)\n\t\tgrid = cap;\n", "\t(void)cap;\n")
        if var in ("cs", "csel"):
            s2 = hints(s2)
            s2 = (s2.replace("const aic_vec<T, V> a = *reinterpret_cast<const aic_vec<T, V> *>(p);",
                             "const aic_vec<T, V> a = aic_ldh<false>(reinterpret_cast<const aic_vec<T, V> *>(p));")
                    .replace("*reinterpret_cast<aic_vec<T, V> *>(p) = a;",
                             "aic_stcs(reinterpret_cast<aic_vec<T, V> *>(p), a);"))
            assert "aic_ldh<false>(reinterpret" in s2 and "aic_stcs(reinterpret" in s2, p
        if var == "i32":
            # the chain kernel's loop in 32-bit indices (valid below 2^31 elements)
            m = re.search(r"template <int V, int E>\n__global__ void __launch_bounds__\(512\) \w+_kernel\(.*?\n}\n", s2, re.S)
            if m:
                body = m.group(0)
                b2 = (body.replace("const long nvec = a.n / V;", "const int nvec = (int)(a.n / V);")
                          .replace("const long step = (long)gridDim.x * blockDim.x * E;", "const int step = (int)(gridDim.x * blockDim.x * E);")
                          .replace("for (long base = (long)blockIdx.x * blockDim.x * E + threadIdx.x;", "for (int base = (int)(blockIdx.x * blockDim.x * E + threadIdx.x);")
                          .replace("const long vi = base + (long)e * blockDim.x;", "const int vi = base + e * (int)blockDim.x;"))
                s2 = s2.replace(body, b2)
        if s2 != s:
            open(p, "w").write(s2)
            print("edited", p)
