/*
 * optable.c - the op vocabulary of fusion groups and the storage types.
 *
 * One row per op: its name as the group description spells it, how many arguments it takes,
 * whether it is elementwise or the row reduction, which extra fields it needs, and two
 * spellings of its math: the fp32 expression the generated kernels evaluate, and a plain double
 * expression for the CPU op-by-op reference the generated check compares against. The
 * emitters substitute the placeholders ($0 $1 $2 arguments, $s number, $k keep probability,
 * $i its inverse, $u uniform random, $t the cast target, $m the mask condition); see fusion.h.
 * fill, a constant, has no arguments at all: its expression is the literal of its "value".
 * Reductions (softmax, log_softmax, its backward, layer_norm, rms_norm and the backward ops of
 * the norms) carry no expression: their two-pass row statistics are written by the emitters; so
 * does col_sum, a column group's sum over the rows.
 */
#include "fusion/fusion.h"

#include <string.h>

#define EW  FOP_EW
#define RED FOP_REDUCE

const struct fop fop_table[] = {
    {"add", 2, 2, EW, 0, "($0 + $1)", "($0 + $1)"},
    {"sub", 2, 2, EW, 0, "($0 - $1)", "($0 - $1)"},
    {"mul", 2, 2, EW, 0, "($0 * $1)", "($0 * $1)"},
    {"div", 2, 2, EW, 0, "($0 / $1)", "($0 / $1)"},
    {"neg", 1, 1, EW, 0, "(-$0)", "(-$0)"},
    {"relu", 1, 1, EW, 0, "fmaxf($0, 0.f)", "($0 > 0.0 ? $0 : 0.0)"},
    /* erf form, as torch.nn.functional.gelu(approximate='none') */
    {"gelu", 1, 1, EW, 0, "(0.5f * $0 * (1.f + erff($0 * 0.707106781f)))",
     "(0.5 * $0 * (1.0 + erf($0 / sqrt(2.0))))"},
    /* tanh form, as gelu(approximate='tanh') */
    {"gelu_tanh", 1, 1, EW, 0,
     "(0.5f * $0 * (1.f + tanhf(0.797884561f * ($0 + 0.044715f * $0 * $0 * $0))))",
     "(0.5 * $0 * (1.0 + tanh(sqrt(2.0 / M_PI) * ($0 + 0.044715 * $0 * $0 * $0))))"},
    /* gelu_backward(dy, x) of the erf form, as ATen's GeluBackwardCUDAKernelImpl computes it:
     * dy * (cdf + x * pdf), cdf = 0.5 (1 + erf(x / sqrt 2)), pdf = exp(-x^2 / 2) / sqrt(2 pi) */
    {"gelu_backward", 2, 2, EW, 0,
     "($0 * (0.5f * (1.f + erff($1 * 0.707106781f)) + $1 * (expf(-0.5f * $1 * $1) * "
     "0.398942280f)))",
     "($0 * (0.5 * (1.0 + erf($1 / sqrt(2.0))) + $1 * exp(-0.5 * $1 * $1) / sqrt(2.0 * M_PI)))"},
    /* gelu_tanh_backward(dy, x): dy * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)),
     * t = tanh(k (x + c x^3)), k = sqrt(2 / pi), c = 0.044715 */
    {"gelu_tanh_backward", 2, 2, EW, 0,
     "($0 * (0.5f * (1.f + tanhf(0.797884561f * ($1 + 0.044715f * $1 * $1 * $1))) + 0.5f * $1 * "
     "(1.f - tanhf(0.797884561f * ($1 + 0.044715f * $1 * $1 * $1)) * tanhf(0.797884561f * ($1 + "
     "0.044715f * $1 * $1 * $1))) * 0.797884561f * (1.f + 0.134145f * $1 * $1)))",
     "($0 * (0.5 * (1.0 + tanh(sqrt(2.0 / M_PI) * ($1 + 0.044715 * $1 * $1 * $1))) + 0.5 * $1 * "
     "(1.0 - pow(tanh(sqrt(2.0 / M_PI) * ($1 + 0.044715 * $1 * $1 * $1)), 2.0)) * sqrt(2.0 / "
     "M_PI) * (1.0 + 3.0 * 0.044715 * $1 * $1)))"},
    {"silu", 1, 1, EW, 0, "aic_silu$f($0)", "($0 / (1.0 + exp(-$0)))"},
    /* the backward ops of the fused backward (fusion/backward.c): (dy, x) or (dy, y) */
    {"relu_backward", 2, 2, EW, 0, "($1 > 0.f ? $0 : 0.f)", "($1 > 0.0 ? $0 : 0.0)"},
    {"silu_backward", 2, 2, EW, 0,
     "($0 * aic_sigmoid$f($1) * (1.f + $1 * (1.f - aic_sigmoid$f($1))))",
     "($0 * (1.0 / (1.0 + exp(-$1))) * (1.0 + $1 * (1.0 - 1.0 / (1.0 + exp(-$1)))))"},
    {"sigmoid_backward", 2, 2, EW, 0, "($0 * $1 * (1.f - $1))", "($0 * $1 * (1.0 - $1))"},
    {"tanh_backward", 2, 2, EW, 0, "($0 * (1.f - $1 * $1))", "($0 * (1.0 - $1 * $1))"},
    {"sigmoid", 1, 1, EW, 0, "aic_sigmoid$f($0)", "(1.0 / (1.0 + exp(-$0)))"},
    {"tanh", 1, 1, EW, 0, "tanhf($0)", "tanh($0)"},
    {"exp", 1, 1, EW, 0, "expf($0)", "exp($0)"},
    {"log", 1, 1, EW, 0, "logf($0)", "log($0)"},
    {"sqrt", 1, 1, EW, 0, "sqrtf($0)", "sqrt($0)"},
    {"rsqrt", 1, 1, EW, 0, "aic_rsqrt($0)", "(1.0 / sqrt($0))"},
    {"abs", 1, 1, EW, 0, "fabsf($0)", "fabs($0)"},
    {"sin", 1, 1, EW, 0, "sinf($0)", "sin($0)"},
    {"cos", 1, 1, EW, 0, "cosf($0)", "cos($0)"},
    /* pow(x, scalar exponent): ATen's products for 2, 3 and -2, powf otherwise (aic_pow) */
    {"pow", 1, 1, EW, FOP_NEED_SCALAR, "aic_pow($0, $s)", "pow($0, (double)$s)"},
    /* threshold_backward(x, dy) with threshold $s, as ATen's threshold_kernel_impl for
     * relu's backward (value 0): x <= threshold ? 0 : dy */
    {"threshold_backward", 2, 2, EW, FOP_NEED_SCALAR, "($0 <= $s ? 0.f : $1)",
     "($0 <= (double)$s ? 0.0 : $1)"},
    /* comparisons: 1 or 0 (a bool when stored) */
    {"gt", 2, 2, EW, 0, "($0 > $1 ? 1.f : 0.f)", "($0 > $1 ? 1.0 : 0.0)"},
    {"lt", 2, 2, EW, 0, "($0 < $1 ? 1.f : 0.f)", "($0 < $1 ? 1.0 : 0.0)"},
    {"ge", 2, 2, EW, 0, "($0 >= $1 ? 1.f : 0.f)", "($0 >= $1 ? 1.0 : 0.0)"},
    {"le", 2, 2, EW, 0, "($0 <= $1 ? 1.f : 0.f)", "($0 <= $1 ? 1.0 : 0.0)"},
    {"eq", 2, 2, EW, 0, "($0 == $1 ? 1.f : 0.f)", "($0 == $1 ? 1.0 : 0.0)"},
    {"ne", 2, 2, EW, 0, "($0 != $1 ? 1.f : 0.f)", "($0 != $1 ? 1.0 : 0.0)"},
    /* a constant, "value" (ATen's FillFunctor<T>, T's value read from the launch): no tensor
     * arguments; the group's other tensors size it */
    {"fill", 0, 0, EW, FOP_NEED_VALUE, "$s", "(double)$s"},
    {"scale", 1, 1, EW, FOP_NEED_SCALAR, "($0 * $s)", "($0 * (double)$s)"},
    {"add_scalar", 1, 1, EW, FOP_NEED_SCALAR, "($0 + $s)", "($0 + (double)$s)"},
    /* rounds to the target type and back: compute stays fp32 */
    {"cast", 1, 1, EW, FOP_NEED_TO, "$t($0)", "(double)$t((float)$0)"},
    /* where(cond, a, b) */
    {"where", 3, 3, EW, 0, "($0 != 0.f ? $1 : $2)", "($0 != 0.0 ? $1 : $2)"},
    /* masked_fill(x, mask) or masked_fill(x) with "causal": true */
    {"masked_fill", 1, 2, EW, FOP_NEED_VALUE, "($m ? $s : $0)", "($m ? (double)$s : $0)"},
    /* keep with probability 1-p, scaled by 1/(1-p); $u uniform in (0, 1] */
    {"dropout", 1, 1, EW, FOP_NEED_P, "($u < $k ? $0 * $i : 0.f)",
     "((double)$u < (double)$k ? $0 * (double)$i : 0.0)"},
    {"layer_norm", 1, 3, RED, FOP_NEED_EPS, NULL, NULL},
    {"rms_norm", 1, 2, RED, FOP_NEED_EPS, NULL, NULL},
    {"softmax", 1, 1, RED, 0, NULL, NULL},
    {"log_softmax", 1, 1, RED, 0, NULL, NULL},
    /* log_softmax's backward (dy, y): dy - exp(y) * sum(dy) over the row, y the forward's
     * result, an input of all the group's elements */
    {"log_softmax_backward", 2, 2, RED, 0, NULL, NULL},
    /* layer_norm's input gradient (dy, x, mean, rstd[, gamma]), mean and rstd per row:
     * rstd * (g - mean_row(g) - xh * mean_row(g * xh)), g = dy * gamma, xh = (x - mean) * rstd */
    {"layer_norm_backward", 4, 5, RED, 0, NULL, NULL},
    /* rms_norm's input gradient (x, gw), gw the gradient of x * r times the weight, r =
     * rsqrt(mean_row(x^2) + eps): r * (gw - x * r^2 * mean_row(gw * x)); only in a fused
     * backward (fusion/backward.c), which recomputes r */
    {"rms_norm_backward", 2, 2, RED, FOP_NEED_EPS, NULL, NULL},
    /* a column group's sum over the rows, one result a column: sum_row x[row * cols + col]
     * (layer norm's dgamma and dbeta, a channels-last batch norm's per-channel sums) */
    {"col_sum", 1, 1, FOP_COLSUM, 0, NULL, NULL},
};
const size_t fop_count = ARRAY_SIZE(fop_table);

const struct fop *fop_lookup(const char *name)
{
	for (size_t i = 0; i < fop_count; i++)
		if (!strcmp(fop_table[i].name, name))
			return &fop_table[i];
	return NULL;
}

static const struct {
	const char *name;
	enum fdtype t;
} dtype_names[] = {
    {"f32", FD_F32},     {"fp32", FD_F32},      {"float32", FD_F32}, {"float", FD_F32},
    {"bf16", FD_BF16},   {"bfloat16", FD_BF16}, {"f16", FD_F16},     {"fp16", FD_F16},
    {"float16", FD_F16}, {"half", FD_F16},      {"bool", FD_BOOL},
};

int fdtype_parse(const char *s, enum fdtype *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(dtype_names); i++)
		if (!strcmp(dtype_names[i].name, s)) {
			*out = dtype_names[i].t;
			return 0;
		}
	return -1;
}

const char *fdtype_name(enum fdtype t)
{
	static const char *n[] = {"f32", "f16", "bf16", "bool"};
	return n[t];
}

const char *fdtype_ctype(enum fdtype t)
{
	static const char *n[] = {"float", "__half", "__nv_bfloat16", "unsigned char"};
	return n[t];
}

int fdtype_size(enum fdtype t)
{
	static const int n[] = {4, 2, 2, 1};
	return n[t];
}
