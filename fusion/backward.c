/*
 * backward.c - the fused backward of an elementwise chain: a second chain group, derived from
 * the first by reverse-mode differentiation, which the binding registers as the autograd
 * backward of the group's custom op.
 *
 * The backward group's inputs are the forward group's inputs, in order, followed by one
 * gradient per write (gy_<value>, in the write's dtype). Its ops first recompute the forward
 * values that a derivative needs (the same ops; a dropout keeps its Philox ordinal, so that it
 * draws the same uniforms as in the forward launch), then walk the forward ops from the last
 * to the first and pass each value's gradient to the op's arguments by the rules below,
 * summing (add) where a value has several readers. Its outputs are the gradients of the
 * forward inputs that have a path to a write (a bool mask has none), each in its input's dtype;
 * fgroup_backward says which input each output belongs to. Rules (dy: the gradient of the op's
 * result y):
 *
 *   add(a, b): dy, dy          sub(a, b): dy, -dy        mul(a, b): dy * b, dy * a
 *   div(a, b): dy / b, -(dy * y) / b                     neg(a): -dy
 *   relu, silu, gelu(x): relu_backward, silu_backward, gelu_backward(dy, x)
 *   sigmoid, tanh: sigmoid_backward, tanh_backward(dy, y)
 *   exp: dy * y     log(x): dy / x     sqrt: (dy / y) * 0.5     rsqrt: dy * y * y * y * -0.5
 *   scale: dy * s   add_scalar, cast: dy                 masked_fill(x, m): masked_fill(dy, m, 0)
 *   dropout: dropout(dy) with the forward's uniforms (the same mask and 1 / (1 - p))
 *   pow(x, e): (dy * e) * pow(x, e - 1)   sin: dy * cos(x)   cos: -(dy * sin(x))
 *   gt, lt, ge, le, eq, ne: none (a comparison passes no gradient)
 *
 * No fused backward (the binding then recomputes through PyTorch's ops, or the patch falls back
 * under autograd): a row group, a broadcast input (its gradient is a sum), an op without a rule
 * (where, gelu_tanh, abs, the *_backward ops themselves).
 */
#include "fusion/fusion.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bctx {
	const struct fgroup *g;
	struct fgroup *b;
	int cap;
	int nd; /* derived value counter, for names */
};

static int add_val(struct bctx *x, const char *name, enum fdtype t, int op)
{
	struct fgroup *b = x->b;
	if (b->nvalues == x->cap)
		BUG("backward group of '%s' outgrew its %d values", x->g->name, x->cap);
	struct fvalue *v = &b->values[b->nvalues];
	v->name = xstrdup(name);
	v->id = -1;
	v->dtype = t;
	v->numel = x->g->numel;
	v->op = op;
	return b->nvalues++;
}

/* Appends op name(args) and returns its result's value index. */
static int add_op(struct bctx *x, const char *name, int nargs, const int *args,
                  const struct fopnode *like)
{
	struct fgroup *b = x->b;
	const struct fop *op = fop_lookup(name);
	if (!op)
		BUG("op '%s' missing from the op table", name);
	if (b->nops == x->cap)
		BUG("backward group of '%s' outgrew its %d ops", x->g->name, x->cap);
	struct fopnode *n = &b->ops[b->nops];
	memset(n, 0, sizeof(*n));
	if (like)
		*n = *like;
	else
		n->drop = -1;
	n->op = op;
	n->nargs = nargs;
	for (int k = 0; k < nargs; k++)
		n->arg[k] = args[k];
	char nm[32];
	snprintf(nm, sizeof(nm), "d%d", x->nd++);
	n->out = add_val(x, nm, x->g->dtype, b->nops);
	return b->nops++, n->out;
}

static int op1(struct bctx *x, const char *name, int a)
{
	return add_op(x, name, 1, &a, NULL);
}

static int op2(struct bctx *x, const char *name, int a, int c)
{
	int args[2] = {a, c};
	return add_op(x, name, 2, args, NULL);
}

static int scale(struct bctx *x, int a, double s)
{
	struct fopnode like = {.drop = -1, .num = s};
	return add_op(x, "scale", 1, &a, &like);
}

/* gv[v] += c */
static void acc(struct bctx *x, int *gv, int v, int c)
{
	if (x->g->values[v].dtype == FD_BOOL)
		return;
	gv[v] = gv[v] < 0 ? c : op2(x, "add", gv[v], c);
}

static int why(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int why(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char buf[256];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	strbuf_adds(sb, buf);
	return -1;
}

/* Which forward values the derivative of op n reads (besides dy): bit k = arg k, bit 3 = y. */
static int reads_of(const struct fopnode *n)
{
	const char *o = n->op->name;
	if (!strcmp(o, "mul"))
		return 3;
	if (!strcmp(o, "div"))
		return 2 | 8;
	if (!strcmp(o, "relu") || !strcmp(o, "silu") || !strcmp(o, "gelu") || !strcmp(o, "log") ||
	    !strcmp(o, "pow") || !strcmp(o, "sin") || !strcmp(o, "cos"))
		return 1;
	if (!strcmp(o, "sigmoid") || !strcmp(o, "tanh") || !strcmp(o, "exp") ||
	    !strcmp(o, "sqrt") || !strcmp(o, "rsqrt"))
		return 8;
	if (!strcmp(o, "masked_fill"))
		return n->nargs > 1 ? 2 : 0;
	return 0;
}

static int is_cmp(const char *o)
{
	return !strcmp(o, "gt") || !strcmp(o, "lt") || !strcmp(o, "ge") || !strcmp(o, "le") ||
	       !strcmp(o, "eq") || !strcmp(o, "ne");
}

static const char *const rules[] = {
    "add", "sub", "mul",  "div",   "neg",   "relu",       "silu", "gelu",        "sigmoid", "tanh",
    "exp", "log", "sqrt", "rsqrt", "scale", "add_scalar", "cast", "masked_fill", "dropout", "pow",
    "sin", "cos", "gt",   "lt",    "ge",    "le",         "eq",   "ne",          "fill"};

static int has_rule(const char *op)
{
	for (size_t r = 0; r < ARRAY_SIZE(rules); r++)
		if (!strcmp(op, rules[r]))
			return 1;
	return 0;
}

int fgroup_backward(const struct fgroup *g, struct fgroup *b, int *grad_of, struct strbuf *err)
{
	memset(b, 0, sizeof(*b));
	b->red = -1;
	if (g->kind == FG_COL)
		return why(err, "a column group has no fused backward (its writes are gradients)");
	if (g->kind != FG_CHAIN)
		return why(err, "a row group has no fused backward");
	if (g->ninputs + g->nwrites > 64)
		return why(err, "more than 64 inputs and gradients");
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[i].numel != g->numel)
			return why(err, "input '%s' is broadcast (its gradient is a sum)",
			           g->values[i].name);
	for (int k = 0; k < g->nops; k++)
		if (!has_rule(g->ops[k].op->name))
			return why(err, "op '%s' has no backward rule", g->ops[k].op->name);
	struct bctx x = {g, b, (g->nvalues + g->nwrites) * 8 + 16, 0};
	b->values = xcalloc(x.cap, sizeof(*b->values));
	b->ops = xcalloc(x.cap, sizeof(*b->ops));
	b->writes = xcalloc(g->ninputs + 1, sizeof(*b->writes));
	char nm[160];
	snprintf(nm, sizeof(nm), "%s_bwd", g->name);
	b->name = xstrdup(nm);
	b->kind = FG_CHAIN;
	b->dtype = g->dtype;
	b->numel = g->numel;
	b->rows = 1;
	b->cols = g->numel;
	b->ndrop = g->ndrop;
	for (int i = 0; i < g->ninputs; i++)
		add_val(&x, g->values[i].name, g->values[i].dtype, -1);
	for (int w = 0; w < g->nwrites; w++) {
		snprintf(nm, sizeof(nm), "gy_%s", g->values[g->writes[w].value].name);
		for (int v = 0; v < g->nvalues; v++)
			if (!strcmp(g->values[v].name, nm)) {
				fgroup_release(b);
				return why(err, "value name '%s' is taken", nm);
			}
		add_val(&x, nm, g->writes[w].dtype, -1);
	}
	b->ninputs = b->nvalues;

	/* the forward values the derivatives read, and what they are computed from */
	int *need = xcalloc(g->nvalues, sizeof(int));
	int *fv = xcalloc(g->nvalues, sizeof(int)); /* forward value -> backward value */
	int *gv = xcalloc(g->nvalues, sizeof(int)); /* forward value -> its gradient */
	for (int k = 0; k < g->nops; k++) {
		int r = reads_of(&g->ops[k]);
		for (int a = 0; a < g->ops[k].nargs; a++)
			if (r & (1 << a))
				need[g->ops[k].arg[a]] = 1;
		if (r & 8)
			need[g->ops[k].out] = 1;
	}
	for (int k = g->nops - 1; k >= 0; k--)
		if (need[g->ops[k].out])
			for (int a = 0; a < g->ops[k].nargs; a++)
				need[g->ops[k].arg[a]] = 1;
	for (int v = 0; v < g->nvalues; v++) {
		fv[v] = v < g->ninputs ? v : -1;
		gv[v] = -1;
	}
	for (int k = 0; k < g->nops; k++) {
		const struct fopnode *n = &g->ops[k];
		if (!need[n->out])
			continue;
		int args[5];
		for (int a = 0; a < n->nargs; a++)
			args[a] = fv[n->arg[a]];
		fv[n->out] = add_op(&x, n->op->name, n->nargs, args, n);
		free(b->values[fv[n->out]].name);
		b->values[fv[n->out]].name = xstrdup(g->values[n->out].name);
		b->values[fv[n->out]].dtype = g->values[n->out].dtype;
	}

	/* reverse mode */
	for (int w = 0; w < g->nwrites; w++)
		acc(&x, gv, g->writes[w].value, g->ninputs + w);
	for (int k = g->nops - 1; k >= 0; k--) {
		const struct fopnode *n = &g->ops[k];
		const char *o = n->op->name;
		int dy = gv[n->out];
		if (dy < 0)
			continue;
		int a0 = n->arg[0], a1 = n->nargs > 1 ? n->arg[1] : -1;
		if (!strcmp(o, "add")) {
			acc(&x, gv, a0, dy);
			acc(&x, gv, a1, dy);
		} else if (!strcmp(o, "sub")) {
			acc(&x, gv, a0, dy);
			if (g->values[a1].dtype != FD_BOOL)
				acc(&x, gv, a1, op1(&x, "neg", dy));
		} else if (!strcmp(o, "mul")) {
			if (g->values[a0].dtype != FD_BOOL)
				acc(&x, gv, a0, op2(&x, "mul", dy, fv[a1]));
			if (g->values[a1].dtype != FD_BOOL)
				acc(&x, gv, a1, op2(&x, "mul", dy, fv[a0]));
		} else if (!strcmp(o, "div")) {
			acc(&x, gv, a0, op2(&x, "div", dy, fv[a1]));
			if (g->values[a1].dtype != FD_BOOL)
				acc(&x, gv, a1,
				    op1(&x, "neg",
				        op2(&x, "div", op2(&x, "mul", dy, fv[n->out]), fv[a1])));
		} else if (!strcmp(o, "neg")) {
			acc(&x, gv, a0, op1(&x, "neg", dy));
		} else if (!strcmp(o, "relu") || !strcmp(o, "silu") || !strcmp(o, "gelu")) {
			snprintf(nm, sizeof(nm), "%s_backward", o);
			acc(&x, gv, a0, op2(&x, nm, dy, fv[a0]));
		} else if (!strcmp(o, "sigmoid") || !strcmp(o, "tanh")) {
			snprintf(nm, sizeof(nm), "%s_backward", o);
			acc(&x, gv, a0, op2(&x, nm, dy, fv[n->out]));
		} else if (!strcmp(o, "exp")) {
			acc(&x, gv, a0, op2(&x, "mul", dy, fv[n->out]));
		} else if (!strcmp(o, "log")) {
			acc(&x, gv, a0, op2(&x, "div", dy, fv[a0]));
		} else if (!strcmp(o, "sqrt")) {
			acc(&x, gv, a0, scale(&x, op2(&x, "div", dy, fv[n->out]), 0.5));
		} else if (!strcmp(o, "rsqrt")) {
			int y = fv[n->out];
			acc(&x, gv, a0,
			    scale(&x, op2(&x, "mul", op2(&x, "mul", op2(&x, "mul", dy, y), y), y),
			          -0.5));
		} else if (!strcmp(o, "pow")) {
			/* dy * e * x^(e-1) */
			struct fopnode like = {.drop = -1, .num = n->num - 1};
			int p = add_op(&x, "pow", 1, &fv[a0], &like);
			acc(&x, gv, a0, op2(&x, "mul", scale(&x, dy, n->num), p));
		} else if (!strcmp(o, "sin")) {
			acc(&x, gv, a0, op2(&x, "mul", dy, op1(&x, "cos", fv[a0])));
		} else if (!strcmp(o, "cos")) {
			acc(&x, gv, a0, op1(&x, "neg", op2(&x, "mul", dy, op1(&x, "sin", fv[a0]))));
		} else if (is_cmp(o) || !strcmp(o, "fill")) {
			/* no gradient through a comparison; a constant has none and no argument */
		} else if (!strcmp(o, "scale")) {
			acc(&x, gv, a0, scale(&x, dy, n->num));
		} else if (!strcmp(o, "add_scalar") || !strcmp(o, "cast")) {
			acc(&x, gv, a0, dy);
		} else if (!strcmp(o, "masked_fill")) {
			struct fopnode like = *n;
			like.num = 0;
			int args[2] = {dy, a1 >= 0 ? fv[a1] : 0};
			acc(&x, gv, a0, add_op(&x, "masked_fill", n->nargs, args, &like));
		} else if (!strcmp(o, "dropout")) {
			acc(&x, gv, a0, add_op(&x, "dropout", 1, &dy, n));
		} else {
			BUG("no backward rule for '%s'", o);
		}
	}
	for (int i = 0; i < g->ninputs; i++) {
		grad_of[i] = -1;
		if (gv[i] < 0)
			continue;
		int v = gv[i];
		int dup = v < b->ninputs; /* the gradient is an input as it came: copy it */
		for (int w = 0; w < b->nwrites; w++)
			dup |= b->writes[w].value == v; /* add(a, b): one value, two gradients */
		if (dup)
			v = scale(&x, v, 1.0);
		grad_of[i] = b->nwrites;
		b->writes[b->nwrites++] = (struct fwrite){v, g->values[i].dtype, 0};
	}
	free(need);
	free(fv);
	free(gv);
	if (!b->nwrites) {
		fgroup_release(b);
		return why(err, "no input has a gradient");
	}
	return 0;
}
