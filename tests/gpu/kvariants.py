"""Variants of a fused package's chain kernels, for measuring launch layouts side by side
(docs/perf.md, session 19): "nocap" removes the launcher's cap on the grid (a tree before
33d40c3 had one of 8 waves), "i32" also runs the grid-stride loop in 32-bit indices.
  python3 tests/gpu/kvariants.py SRC_FUSEDDIR DST_FUSEDDIR nocap|i32
then tests/gpu/gated_kbench.py llama base=SRC nocap=DST ...
The rotary kernel's (_rotary/aic_rotary.cu, session 24): "rsep" launches q's blocks, then k's
(no joint grid), "r256" takes 256 threads a block, "rc4" both (the kernel of session 22);
then tests/gpu/kbench.py --only rotary --large --forms fused --pkg-llama DST."""
import os, re, shutil, sys
src, dst, var = sys.argv[1:4]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
for root, _, files in os.walk(os.path.join(dst, "aicprof_fused")):
    for f in files:
        if f == "aic_rotary.cu" and var.startswith("r"):
            p = os.path.join(root, f)
            s = open(p).read()
            s2 = s
            if var in ("rsep", "rc4"):
                s2 = s2.replace("const bool joint = heads &&", "const bool joint = false &&")
            if var in ("r256", "rc4"):
                s2 = s2.replace("#define AIC_RB 128", "#define AIC_RB 256")
            assert s2 != s, "the rotary kernel's text changed: " + var
            open(p, "w").write(s2)
            print("edited", p)
            continue
        if not f.endswith("_kernel.cu"):
            continue
        p = os.path.join(root, f)
        s = open(p).read()
        s2 = s.replace("\tif (grid > cap)\n\t\tgrid = cap;\n", "\t(void)cap;\n")  # old trees
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
