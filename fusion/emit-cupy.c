/*
 * emit-cupy.c - a group's CuPy form: the fused kernel as a cupy.ElementwiseKernel that a CuPy
 * program calls in place of its ufuncs.
 *
 * How it works: the kernel's body is the group's per-element function <name>_elem, the same
 * text as in its math header (emit_chain_elem), put in the ElementwiseKernel's preamble with the
 * few helpers it may call, written for NVRTC (which CuPy compiles with: no host code, no
 * <math.h>; CuPy's float16 class gives the f16 rounding). The operation loads every input as
 * float, calls <name>_elem and stores its writes; CuPy broadcasts the arguments by shape as its
 * ufuncs do, which is what the group's "an input of m elements is read at i % m" means for a
 * trailing-dimension broadcast. The module also spells the group op by op with CuPy's own
 * functions (cp.tanh, *, +, ...), and check() runs both on random inputs of the group's shape
 * and compares them: the check the user runs once on their GPU before using the form. Groups
 * without such a spelling, with dropout (its random numbers are PyTorch's Philox stream) or
 * with a bf16 value (CuPy has no bfloat16) get no CuPy form.
 */
#include "fusion/fusion.h"

#include <string.h>

/* The type's name in an ElementwiseKernel's parameter list ("float32"), NULL where CuPy has
 * none (bf16); cupy_attr: the same as an attribute of the cupy module ("bool_"). */
static const char *cupy_dtype(enum fdtype t)
{
	static const char *n[] = {"float32", "float16", NULL, "bool"};
	return n[t];
}

static const char *cupy_attr(enum fdtype t)
{
	return t == FD_BOOL ? "bool_" : cupy_dtype(t);
}

/* fmt into sb with each "%1$s", "%2$s", "%3$s" replaced by arg[0], [1], [2]. Not printf:
 * a fortified printf (Ubuntu's default) aborts on a format that skips an argument number. */
static void fill_form(struct strbuf *sb, const char *fmt, const char *const arg[3])
{
	for (const char *p = fmt; *p; p++) {
		if (p[0] == '%' && p[1] >= '1' && p[1] <= '3' && p[2] == '$' && p[3] == 's') {
			strbuf_adds(sb, arg[p[1] - '1']);
			p += 3;
		} else {
			strbuf_add(sb, p, 1);
		}
	}
}

/* op n through CuPy, arguments named a%d, into sb; -1 when CuPy cannot spell it. */
static int cupy_op(struct strbuf *sb, const struct fopnode *n)
{
	static const struct {
		const char *op, *fmt; /* %1$s, %2$s: the arguments; %3$s: the number */
	} forms[] = {
	    {"add", "(%1$s + %2$s)"},
	    {"sub", "(%1$s - %2$s)"},
	    {"mul", "(%1$s * %2$s)"},
	    {"div", "(%1$s / %2$s)"},
	    {"neg", "(-%1$s)"},
	    {"tanh", "cp.tanh(%1$s)"},
	    {"exp", "cp.exp(%1$s)"},
	    {"log", "cp.log(%1$s)"},
	    {"sqrt", "cp.sqrt(%1$s)"},
	    {"rsqrt", "(1 / cp.sqrt(%1$s))"},
	    {"abs", "cp.abs(%1$s)"},
	    {"sin", "cp.sin(%1$s)"},
	    {"cos", "cp.cos(%1$s)"},
	    {"sigmoid", "(1 / (1 + cp.exp(-%1$s)))"},
	    {"relu", "cp.maximum(%1$s, 0)"},
	    {"silu", "(%1$s / (1 + cp.exp(-%1$s)))"},
	    {"scale", "(%1$s * %3$s)"},
	    {"add_scalar", "(%1$s + %3$s)"},
	    {"pow", "(%1$s ** %3$s)"},
	    {"gt", "(%1$s > %2$s).astype(cp.float32)"},
	    {"lt", "(%1$s < %2$s).astype(cp.float32)"},
	    {"ge", "(%1$s >= %2$s).astype(cp.float32)"},
	    {"le", "(%1$s <= %2$s).astype(cp.float32)"},
	    {"eq", "(%1$s == %2$s).astype(cp.float32)"},
	    {"ne", "(%1$s != %2$s).astype(cp.float32)"},
	};
	char a[3][16] = {"", "", ""}, num[64];
	for (int k = 0; k < n->nargs && k < 3; k++)
		snprintf(a[k], sizeof(a[k]), "v%d", n->arg[k]);
	snprintf(num, sizeof(num), "%.9g", n->num);
	if (!strcmp(n->op->name, "cast")) {
		if (!cupy_dtype(n->to))
			return -1;
		strbuf_addf(sb, "%s.astype(cp.%s).astype(cp.float32)", a[0], cupy_attr(n->to));
		return 0;
	}
	if (!strcmp(n->op->name, "where")) {
		strbuf_addf(sb, "cp.where(%s != 0, %s, %s)", a[0], a[1], a[2]);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(forms); i++)
		if (!strcmp(n->op->name, forms[i].op)) {
			fill_form(sb, forms[i].fmt, (const char *const[3]){a[0], a[1], num});
			return 0;
		}
	return -1;
}

static const char preamble[] =
    "#define AIC_HD __device__ __forceinline__\n"
    "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
    "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"
    "AIC_HD float aic_round_f32(float x) { return x; }\n"
    "AIC_HD float aic_round_bool(float x) { return x != 0.f ? 1.f : 0.f; }\n"
    "AIC_HD float aic_rsqrt(float x) { return rsqrtf(x); }\n"
    "AIC_HD float aic_pow(float x, float e)\n"
    "{\n"
    "\treturn e == 2.f ? x * x : e == 3.f ? x * x * x : e == -2.f ? 1.f / (x * x) : powf(x, e);\n"
    "}\n"
    "/* as emit-kernel.c's prelude computes them on the GPU */\n"
    "AIC_HD float aic_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }\n"
    "AIC_HD float aic_silu(float x) { return x / (1.f + expf(-x)); }\n"
    "AIC_HD float aic_sigmoid_fast(float x) { return __fdividef(1.f, 1.f + __expf(-x)); }\n"
    "AIC_HD float aic_silu_fast(float x) { return x * aic_sigmoid_fast(x); }\n";

int emit_cupy(struct strbuf *sb, const struct fgroup *g)
{
	/* an input read through an index map: CuPy's ElementwiseKernel reads each argument at
	 * the element's own index (or broadcasts it); no form here */
	if (fgroup_rowed(g) || g->ndrop || g->ninputs > 64 || g->nwrites < 1 || fgroup_mapped(g))
		return -1;
	for (int i = 0; i < g->nvalues; i++)
		if (!cupy_dtype(g->values[i].dtype))
			return -1;
	int f16 = 0, f16_arg = 0;
	for (int w = 0; w < g->nwrites; w++) {
		if (!cupy_dtype(g->writes[w].dtype))
			return -1;
		f16_arg |= g->writes[w].dtype == FD_F16;
	}
	for (int i = 0; i < g->nvalues; i++) {
		f16 |= g->values[i].dtype == FD_F16;
		f16_arg |= i < g->ninputs && g->values[i].dtype == FD_F16;
	}
	if (f16 && !f16_arg) /* CuPy defines its float16 class for kernels with such arguments */
		return -1;
	struct strbuf ref = STRBUF_INIT;
	for (int i = 0; i < g->nops; i++) {
		const struct fopnode *n = &g->ops[i];
		strbuf_addf(&ref, "    v%d = ", n->out);
		if (n->causal || cupy_op(&ref, n)) {
			strbuf_release(&ref);
			return -1;
		}
		/* an intermediate rounded to its storage type, as the unfused program stored it */
		if (g->values[n->out].dtype == FD_F16)
			strbuf_adds(&ref, ".astype(cp.float16).astype(cp.float32)");
		strbuf_adds(&ref, "\n");
	}
	const char *nm = g->name;
	struct strbuf args = STRBUF_INIT, outs = STRBUF_INIT;
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(&args, "%s%s", i ? ", " : "", g->values[i].name);
	for (int w = 0; w < g->nwrites; w++)
		strbuf_addf(&outs, "%s%s", w ? ", " : "", g->values[g->writes[w].value].name);

	strbuf_addf(sb,
	            "\"\"\"%s_cupy: group '%s' fused into one CuPy kernel, generated by aicprof "
	            "fuse.\n\n"
	            "    from %s_cupy import %s\n"
	            "    %s = %s(%s)\n\n"
	            "Arguments are CuPy arrays (",
	            nm, nm, nm, nm, outs.buf, nm, args.buf);
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(sb, "%s%s %s", i ? ", " : "", g->values[i].name,
		            cupy_dtype(g->values[i].dtype));
	strbuf_addf(sb,
	            "), broadcast by\nshape as CuPy's ufuncs are; the result%s a new array (or "
	            "pass out=... as to any\nElementwiseKernel). One cupy.ElementwiseKernel, "
	            "compiled by CuPy with NVRTC on first call:\nno nvcc, no PyTorch. Its math is "
	            "%s_elem, the function of %s_math.h that the CUDA\nkernel and the CPU check "
	            "use. Run this file (python3 %s_cupy.py) or check() once on\nyour GPU: it "
	            "compares the fused kernel with the ops run one by one through CuPy.\n\"\"\"\n"
	            "import cupy as cp\n\n",
	            g->nwrites > 1 ? "s are" : " is", nm, nm, nm);
	strbuf_addf(sb, "NAME = \"%s\"\nNUMEL = %ld\n", nm, g->numel);
	strbuf_adds(sb, "_BROADCAST = {");
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[i].numel > 0 && g->values[i].numel < g->numel)
			strbuf_addf(sb, "%d: %ld, ", i, g->values[i].numel);
	strbuf_adds(sb, "}\n_PREAMBLE = r'''\n");
	strbuf_adds(sb, preamble);
	if (f16)
		strbuf_adds(sb,
		            "AIC_HD float aic_round_f16(float x) { return (float)float16(x); }\n");
	emit_chain_elem(sb, g);
	strbuf_adds(sb, "'''\n\n_KERNEL = cp.ElementwiseKernel(\n    \"");
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(sb, "%s%s %s", i ? ", " : "", cupy_dtype(g->values[i].dtype),
		            g->values[i].name);
	strbuf_adds(sb, "\",\n    \"");
	for (int w = 0; w < g->nwrites; w++)
		strbuf_addf(sb, "%s%s %s", w ? ", " : "", cupy_dtype(g->writes[w].dtype),
		            g->values[g->writes[w].value].name);
	strbuf_addf(sb, "\",\n    \"float in_[%d] = {", g->ninputs);
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(sb, "%s(float)%s", i ? ", " : "", g->values[i].name);
	strbuf_addf(sb, "}; float u_[1] = {0.f}; float o_[%d]; %s_elem(in_, u_, o_);", g->nwrites,
	            nm);
	for (int w = 0; w < g->nwrites; w++) {
		const char *on = g->values[g->writes[w].value].name;
		if (g->writes[w].dtype == FD_BOOL)
			strbuf_addf(sb, " %s = o_[%d] != 0.f;", on, w);
		else if (g->writes[w].dtype == FD_F16)
			strbuf_addf(sb, " %s = float16(o_[%d]);", on, w);
		else
			strbuf_addf(sb, " %s = o_[%d];", on, w);
	}
	strbuf_addf(sb, "\",\n    \"aicprof_%s\", preamble=_PREAMBLE)\n\n\n", nm);
	strbuf_addf(sb, "def %s(%s, **kw):\n", nm, args.buf);
	strbuf_addf(sb, "    \"\"\"The fused kernel: returns %s.\"\"\"\n", outs.buf);
	strbuf_addf(sb, "    return _KERNEL(%s, **kw)\n\n\n", args.buf);
	strbuf_adds(sb, "def _unfused(");
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(sb, "%sv%d", i ? ", " : "", i);
	strbuf_adds(sb, "):\n    \"\"\"The group op by op through CuPy, in float32.\"\"\"\n");
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(sb, "    v%d = v%d.astype(cp.float32)\n", i, i);
	strbuf_adds(sb, ref.buf);
	strbuf_adds(sb, "    return (");
	for (int w = 0; w < g->nwrites; w++)
		strbuf_addf(sb, "v%d, ", g->writes[w].value);
	strbuf_adds(sb, ")\n\n\n");
	struct strbuf dts = STRBUF_INIT;
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(&dts, "%scp.%s", i ? ", " : "", cupy_attr(g->values[i].dtype));
	strbuf_addf(
	    sb,
	    "def check(rows=None, seed=0):\n"
	    "    \"\"\"Runs the fused kernel and the ops one by one on random inputs (uniform "
	    "in\n    [0.5, 1.5), so that log, sqrt and division are defined) and compares "
	    "them. Returns\n    the largest relative error; raises AssertionError past "
	    "the tolerance.\"\"\"\n"
	    "    rs = cp.random.RandomState(seed)\n"
	    "    inner = max(_BROADCAST.values()) if _BROADCAST else 4096\n"
	    "    if rows is None:\n"
	    "        rows = max(1, min(NUMEL // inner, (1 << 20) // inner))\n"
	    "    dts = [%s]\n",
	    dts.buf);
	strbuf_release(&dts);
	strbuf_release(&ref);
	strbuf_addf(
	    sb,
	    "    ins = []\n"
	    "    for i, dt in enumerate(dts):\n"
	    "        shape = (_BROADCAST[i],) if i in _BROADCAST else (rows, inner)\n"
	    "        if dt == cp.bool_:\n"
	    "            ins.append(rs.random_sample(shape) < 0.5)\n"
	    "        else:\n"
	    "            ins.append((0.5 + rs.random_sample(shape)).astype(dt))\n"
	    "    got = %s(*ins)\n"
	    "    got = got if isinstance(got, tuple) else (got,)\n"
	    "    want = _unfused(*ins)\n"
	    "    worst = 0.0\n"
	    "    for g, w in zip(got, want):\n"
	    "        g = g.astype(cp.float32)\n"
	    "        w = cp.broadcast_to(w, g.shape).astype(cp.float32)\n"
	    "        tol = 1e-2 if any(d == cp.float16 for d in dts) else 1e-4\n"
	    "        err = float(cp.max(cp.abs(g - w) / (cp.abs(w) + 1e-6)))\n"
	    "        worst = max(worst, err)\n"
	    "        assert err <= tol, \"%%s: relative error %%.3g over %%g\" %% (NAME, err, "
	    "tol)\n"
	    "    return worst\n\n\n"
	    "if __name__ == \"__main__\":\n"
	    "    print(\"%%s: fused against op by op, largest relative error %%.3g\" %% "
	    "(NAME, check()))\n",
	    nm);
	strbuf_release(&args);
	strbuf_release(&outs);
	return 0;
}
