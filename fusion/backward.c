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
 *   relu, silu, gelu, gelu_tanh(x): relu_backward, silu_backward, gelu_backward,
 *                                   gelu_tanh_backward(dy, x)
 *   sigmoid, tanh: sigmoid_backward, tanh_backward(dy, y)
 *   exp: dy * y     log(x): dy / x     sqrt: (dy / y) * 0.5     rsqrt: dy * y * y * y * -0.5
 *   scale: dy * s   add_scalar, cast: dy                 masked_fill(x, m): masked_fill(dy, m, 0)
 *   dropout: dropout(dy) with the forward's uniforms (the same mask and 1 / (1 - p))
 *   pow(x, e): (dy * e) * pow(x, e - 1)   sin: dy * cos(x)   cos: -(dy * sin(x))
 *   gt, lt, ge, le, eq, ne: none (a comparison passes no gradient)
 *
 * No fused backward (the binding then recomputes through PyTorch's ops, or the patch falls back
 * under autograd): a broadcast input (its gradient is a sum), an op without a rule (where,
 * abs, the *_backward ops themselves).
 *
 * A row group whose reduction is rms_norm (no dropout; inputs full-size or row vectors of cols
 * elements) has one too, fgroup_row_backward: a row group <name>_bwd and a column group
 * <name>_bwdc. With h = x * r (* w), r = rsqrt(mean_row(x^2) + eps), the row group's prologue
 * recomputes the forward's prologue (x) and passes the writes' gradients back through the
 * epilogue to gh, the gradient of h (reverse mode over the epilogue where only the path to h
 * takes a gradient; it must not read h, i.e. the epilogue is linear in h, as a weight, a cast,
 * a residual are); its reduction rms_norm_backward(x, gw = gh * w) sums x * x and gw * x over
 * the row in one pass and gives dx = r * (gw - x * r^2 * mean_row(gw * x)); its epilogue
 * recomputes h from the statistic and the forward's epilogue, runs reverse mode over the
 * epilogue again for every other input (a row vector's gradient as a per-element summand, kept
 * in f32), adds rms_norm's own weight's summand gh * x * r, and passes dx back through the
 * prologue. The column group sums each summand over the rows (col_sum, deterministic) and casts
 * it to the row vector's type: a weight's dw.
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
	int nd;          /* derived value counter, for names */
	const int *want; /* forward values that take a gradient (NULL: all) */
	int bad;         /* a rule read a forward value that fv does not map (-1) */
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

/* Does forward value v take a gradient here? */
static int want(const struct bctx *x, int v)
{
	return v >= 0 && (!x->want || x->want[v]);
}

/* gv[v] += c */
static void acc(struct bctx *x, int *gv, int v, int c)
{
	if (x->g->values[v].dtype == FD_BOOL || !want(x, v))
		return;
	gv[v] = gv[v] < 0 ? c : op2(x, "add", gv[v], c);
}

/* The backward value of forward value v, which a rule reads; marks x bad when it has none. */
static int fwd(struct bctx *x, const int *fv, int v)
{
	if (fv[v] < 0) {
		x->bad = 1;
		return 0;
	}
	return fv[v];
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
	if (!strcmp(o, "relu") || !strcmp(o, "silu") || !strcmp(o, "gelu") ||
	    !strcmp(o, "gelu_tanh") || !strcmp(o, "log") || !strcmp(o, "pow") ||
	    !strcmp(o, "sin") || !strcmp(o, "cos"))
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
    "add",     "sub",         "mul",     "div", "neg",  "relu",     "silu",  "gelu",
    "sigmoid", "tanh",        "exp",     "log", "sqrt", "rsqrt",    "scale", "add_scalar",
    "cast",    "masked_fill", "dropout", "pow", "sin",  "cos",      "gt",    "lt",
    "ge",      "le",          "eq",      "ne",  "fill", "gelu_tanh"};

static int has_rule(const char *op)
{
	for (size_t r = 0; r < ARRAY_SIZE(rules); r++)
		if (!strcmp(op, rules[r]))
			return 1;
	return 0;
}

/*
 * Reverse mode over ops [from, to) of x->g, from the last to the first: passes each value's
 * gradient gv[] (-1: none) to the op's arguments by the rules in this file's header, reading
 * the forward values through fv[] (forward value -> backward value).
 */
static void reverse(struct bctx *x, int from, int to, const int *fv, int *gv)
{
	const struct fgroup *g = x->g;
	char nm[160];
	for (int k = to - 1; k >= from; k--) {
		const struct fopnode *n = &g->ops[k];
		const char *o = n->op->name;
		int dy = gv[n->out];
		if (dy < 0)
			continue;
		int a0 = n->arg[0], a1 = n->nargs > 1 ? n->arg[1] : -1;
		/* with a want set, no rule runs for an argument that takes no gradient */
		int w0 = !x->want || want(x, a0), w1 = !x->want || want(x, a1);
		if (!w0 && !w1)
			continue;
		if (!strcmp(o, "add")) {
			acc(x, gv, a0, dy);
			acc(x, gv, a1, dy);
		} else if (!strcmp(o, "sub")) {
			acc(x, gv, a0, dy);
			if (w1 && g->values[a1].dtype != FD_BOOL)
				acc(x, gv, a1, op1(x, "neg", dy));
		} else if (!strcmp(o, "mul")) {
			if (w0 && g->values[a0].dtype != FD_BOOL)
				acc(x, gv, a0, op2(x, "mul", dy, fwd(x, fv, a1)));
			if (w1 && g->values[a1].dtype != FD_BOOL)
				acc(x, gv, a1, op2(x, "mul", dy, fwd(x, fv, a0)));
		} else if (!strcmp(o, "div")) {
			if (w0)
				acc(x, gv, a0, op2(x, "div", dy, fwd(x, fv, a1)));
			if (w1 && g->values[a1].dtype != FD_BOOL)
				acc(x, gv, a1,
				    op1(x, "neg",
				        op2(x, "div", op2(x, "mul", dy, fwd(x, fv, n->out)),
				            fwd(x, fv, a1))));
		} else if (!strcmp(o, "neg")) {
			if (w0)
				acc(x, gv, a0, op1(x, "neg", dy));
		} else if (!strcmp(o, "relu") || !strcmp(o, "silu") || !strcmp(o, "gelu") ||
		           !strcmp(o, "gelu_tanh")) {
			snprintf(nm, sizeof(nm), "%s_backward", o);
			if (w0)
				acc(x, gv, a0, op2(x, nm, dy, fwd(x, fv, a0)));
		} else if (!strcmp(o, "sigmoid") || !strcmp(o, "tanh")) {
			snprintf(nm, sizeof(nm), "%s_backward", o);
			if (w0)
				acc(x, gv, a0, op2(x, nm, dy, fwd(x, fv, n->out)));
		} else if (!strcmp(o, "exp")) {
			if (w0)
				acc(x, gv, a0, op2(x, "mul", dy, fwd(x, fv, n->out)));
		} else if (!strcmp(o, "log")) {
			if (w0)
				acc(x, gv, a0, op2(x, "div", dy, fwd(x, fv, a0)));
		} else if (!strcmp(o, "sqrt")) {
			if (w0)
				acc(x, gv, a0,
				    scale(x, op2(x, "div", dy, fwd(x, fv, n->out)), 0.5));
		} else if (!strcmp(o, "rsqrt")) {
			int y = w0 ? fwd(x, fv, n->out) : 0;
			if (w0)
				acc(x, gv, a0,
				    scale(x,
				          op2(x, "mul", op2(x, "mul", op2(x, "mul", dy, y), y), y),
				          -0.5));
		} else if (!strcmp(o, "pow")) {
			/* dy * e * x^(e-1) */
			struct fopnode like = {.drop = -1, .num = n->num - 1};
			int p0 = fwd(x, fv, a0);
			int p = add_op(x, "pow", 1, &p0, &like);
			if (w0)
				acc(x, gv, a0, op2(x, "mul", scale(x, dy, n->num), p));
		} else if (!strcmp(o, "sin")) {
			if (w0)
				acc(x, gv, a0, op2(x, "mul", dy, op1(x, "cos", fwd(x, fv, a0))));
		} else if (!strcmp(o, "cos")) {
			if (w0)
				acc(x, gv, a0,
				    op1(x, "neg",
				        op2(x, "mul", dy, op1(x, "sin", fwd(x, fv, a0)))));
		} else if (is_cmp(o) || !strcmp(o, "fill")) {
			/* no gradient through a comparison; a constant has none and no argument */
		} else if (!strcmp(o, "scale")) {
			if (w0)
				acc(x, gv, a0, scale(x, dy, n->num));
		} else if (!strcmp(o, "add_scalar") || !strcmp(o, "cast")) {
			acc(x, gv, a0, dy);
		} else if (!strcmp(o, "masked_fill")) {
			struct fopnode like = *n;
			like.num = 0;
			int args[2] = {dy, a1 >= 0 ? fwd(x, fv, a1) : 0};
			if (w0)
				acc(x, gv, a0, add_op(x, "masked_fill", n->nargs, args, &like));
		} else if (!strcmp(o, "dropout")) {
			if (w0)
				acc(x, gv, a0, add_op(x, "dropout", 1, &dy, n));
		} else {
			BUG("no backward rule for '%s'", o);
		}
	}
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
		if (g->values[i].map.dims)
			return why(
			    err,
			    "input '%s' is read through an index map (its gradient would be a "
			    "scatter through that map)",
			    g->values[i].name);
		else if (g->values[i].numel != g->numel)
			return why(err, "input '%s' is broadcast (its gradient is a sum)",
			           g->values[i].name);
	for (int k = 0; k < g->nops; k++)
		if (!has_rule(g->ops[k].op->name))
			return why(err, "op '%s' has no backward rule", g->ops[k].op->name);
	struct bctx x = {g, b, (g->nvalues + g->nwrites) * 8 + 16, 0, NULL, 0};
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
	reverse(&x, 0, g->nops, fv, gv);
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
		b->writes[b->nwrites++] = (struct fwrite){v, g->values[i].dtype, 0, 0};
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

/* Does value v of row group g depend on the reduction's result (h)? dep[] has g->nvalues. */
static void depends_on_red(const struct fgroup *g, int *dep)
{
	memset(dep, 0, sizeof(int) * g->nvalues);
	dep[g->ops[g->red].out] = 1;
	for (int k = g->red + 1; k < g->nops; k++)
		for (int a = 0; a < g->ops[k].nargs; a++)
			dep[g->ops[k].out] |= dep[g->ops[k].arg[a]];
}

/* The row group's copy of op n (the forward's name and type for its result). */
static int copy_op(struct bctx *x, const struct fopnode *n, const int *fv)
{
	int args[5];
	for (int a = 0; a < n->nargs; a++)
		args[a] = fv[n->arg[a]];
	int v = add_op(x, n->op->name, n->nargs, args, n);
	free(x->b->values[v].name);
	x->b->values[v].name = xstrdup(x->g->values[n->out].name);
	x->b->values[v].dtype = x->g->values[n->out].dtype;
	return v;
}

/* A value as a write of its own: a copy where v is an input or already written. */
static int own(struct bctx *x, int v)
{
	int dup = v < x->b->ninputs;
	for (int w = 0; w < x->b->nwrites; w++)
		dup |= x->b->writes[w].value == v;
	return dup ? scale(x, v, 1.0) : v;
}

/* A group derived from g: its name with suffix, kind, and g's dtype, size and row shape; its
 * arrays of nvalues, nops and nwrites entries, empty. */
static void derive(const struct fgroup *g, struct fgroup *d, const char *suffix,
                   enum fgroup_kind kind, int nvalues, int nops, int nwrites)
{
	char nm[160];
	d->values = xcalloc(nvalues, sizeof(*d->values));
	d->ops = xcalloc(nops, sizeof(*d->ops));
	d->writes = xcalloc(nwrites, sizeof(*d->writes));
	snprintf(nm, sizeof(nm), "%s%s", g->name, suffix);
	d->name = xstrdup(nm);
	d->kind = kind;
	d->dtype = g->dtype;
	d->numel = g->numel;
	d->rows = g->rows;
	d->cols = g->cols;
}

/* The column group c of a row backward: the col_sum of each summand (inputs), cast to the
 * row vector's type; sum_of[k] the row group g's input whose gradient summand k is. */
static void col_backward(const struct fgroup *g, struct fgroup *c, const int *sum_of, int ns)
{
	char nm[160];
	derive(g, c, "_bwdc", FG_COL, 3 * ns, 2 * ns, ns);
	c->red = -1;
	c->ncolsum = ns;
	for (int k = 0; k < ns; k++) {
		struct fvalue *v = &c->values[c->nvalues++];
		snprintf(nm, sizeof(nm), "s_%s", g->values[sum_of[k]].name);
		*v = (struct fvalue){xstrdup(nm), -1, FD_F32, g->numel, -1, 0, 0, {0}, 0, {{0}}};
	}
	c->ninputs = ns;
	for (int k = 0; k < ns; k++) {
		const struct fvalue *in = &g->values[sum_of[k]];
		int cast = in->dtype != FD_F32;
		for (int s = 0; s <= cast; s++) {
			struct fopnode *n = &c->ops[c->nops];
			memset(n, 0, sizeof(*n));
			n->op = fop_lookup(s ? "cast" : "col_sum");
			n->nargs = 1;
			n->arg[0] = s ? c->nvalues - 1 : k;
			n->drop = -1;
			n->to = in->dtype;
			snprintf(nm, sizeof(nm), "%s%s", s || !cast ? "d" : "sum_", in->name);
			n->out = c->nvalues;
			c->values[c->nvalues++] = (struct fvalue){
			    xstrdup(nm), -1,   s ? in->dtype : FD_F32, g->cols, c->nops, 0, 1, {0},
			    0,           {{0}}};
			c->nops++;
		}
		c->writes[c->nwrites++] = (struct fwrite){c->nvalues - 1, in->dtype, 0, 0};
	}
}

int fgroup_row_backward(const struct fgroup *g, struct fgroup *b, struct fgroup *c, int *grad_of,
                        struct strbuf *err)
{
	memset(b, 0, sizeof(*b));
	memset(c, 0, sizeof(*c));
	b->red = c->red = -1;
	if (g->kind != FG_ROW)
		return why(err, "not a row group");
	const struct fopnode *r = &g->ops[g->red];
	if (strcmp(r->op->name, "rms_norm"))
		return why(err,
		           "a row group has no fused backward unless its reduction is rms_norm "
		           "(this one's is %s)",
		           r->op->name);
	if (g->ndrop)
		return why(err, "a row group with dropout has no fused backward");
	if (g->ninputs + g->nwrites > 64)
		return why(err, "more than 64 inputs and gradients");
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[i].per_row ||
		    (g->values[i].numel != g->numel && g->values[i].numel != g->cols))
			return why(err, "input '%s' is neither full-size nor a row vector",
			           g->values[i].name);
	for (int k = 0; k < g->nops; k++)
		if (k != g->red && !has_rule(g->ops[k].op->name))
			return why(err, "op '%s' has no backward rule", g->ops[k].op->name);
	char nm[160];
	for (int w = 0; w < g->nwrites; w++) {
		snprintf(nm, sizeof(nm), "gy_%s", g->values[g->writes[w].value].name);
		for (int v = 0; v < g->nvalues; v++)
			if (!strcmp(g->values[v].name, nm))
				return why(err, "value name '%s' is taken", nm);
	}
	struct bctx x = {g, b, (g->nvalues + g->nwrites) * 16 + 32, 0, NULL, 0};
	derive(g, b, "_bwd", FG_ROW, x.cap, x.cap, g->ninputs + 1);
	for (int i = 0; i < g->ninputs; i++) {
		int v = add_val(&x, g->values[i].name, g->values[i].dtype, -1);
		b->values[v].numel = g->values[i].numel;
	}
	for (int w = 0; w < g->nwrites; w++) {
		snprintf(nm, sizeof(nm), "gy_%s", g->values[g->writes[w].value].name);
		add_val(&x, nm, g->writes[w].dtype, -1);
	}
	b->ninputs = b->nvalues;
	int *fv = xcalloc(g->nvalues, sizeof(int)), *gv = xcalloc(g->nvalues, sizeof(int));
	int *dep = xcalloc(g->nvalues, sizeof(int));
	for (int v = 0; v < g->nvalues; v++)
		fv[v] = v < g->ninputs ? v : -1, gv[v] = -1;
	const int hx = r->out, x0 = r->arg[0], w1 = r->nargs > 1 ? r->arg[1] : -1;
	struct fopnode like = {.drop = -1, .num = r->num};
	int rc = 0;

	/* the prologue: the forward's, recomputed */
	for (int k = 0; k < g->red; k++)
		fv[g->ops[k].out] = copy_op(&x, &g->ops[k], fv);
	/* the normalised value's gradient gh through the epilogue, before the statistics: it
	 * may read the inputs, the writes' gradients and the prologue, not h */
	depends_on_red(g, dep);
	x.want = dep;
	for (int w = 0; w < g->nwrites; w++)
		if (dep[g->writes[w].value])
			acc(&x, gv, g->writes[w].value, g->ninputs + w);
	reverse(&x, g->red + 1, g->nops, fv, gv);
	int gh = gv[hx];
	if (x.bad || gh < 0) {
		rc = why(err, x.bad ? "the gradient of rms_norm's result reads that result (the "
		                      "epilogue is not linear in it)"
		                    : "no write depends on rms_norm's result");
		goto out;
	}
	x.want = NULL;
	int gw = w1 >= 0 ? op2(&x, "mul", gh, fv[w1]) : gh;
	/* the reduction: dx = r * (gw - x * r^2 * mean(gw * x)), r = rsqrt(mean(x^2) + eps) */
	int args[2] = {fv[x0], gw};
	int gx = add_op(&x, "rms_norm_backward", 2, args, &like);
	b->red = b->nops - 1;
	/* the epilogue: h from the row's statistic, the forward's epilogue, every gradient
	 * through it (the row vectors' as per-element summands) */
	args[1] = w1 >= 0 ? fv[w1] : 0;
	fv[hx] = add_op(&x, "rms_norm", r->nargs, args, &like);
	for (int k = g->red + 1; k < g->nops; k++)
		fv[g->ops[k].out] = copy_op(&x, &g->ops[k], fv);
	for (int v = 0; v < g->nvalues; v++)
		gv[v] = -1;
	for (int w = 0; w < g->nwrites; w++)
		if (g->values[g->writes[w].value].op >= g->red)
			acc(&x, gv, g->writes[w].value, g->ninputs + w);
	reverse(&x, g->red + 1, g->nops, fv, gv);
	if (w1 >= 0 && gv[hx] >= 0) /* rms_norm's own weight: gh * x * r */
		acc(&x, gv, w1, op2(&x, "mul", gv[hx], add_op(&x, "rms_norm", 1, args, &like)));
	acc(&x, gv, x0, gx);
	/* the prologue's writes and ops, from x's gradient */
	for (int w = 0; w < g->nwrites; w++)
		if (g->values[g->writes[w].value].op < g->red)
			acc(&x, gv, g->writes[w].value, g->ninputs + w);
	reverse(&x, 0, g->red, fv, gv);
	/* the writes: full-size inputs' gradients, then the row vectors' summands (kept, f32) */
	int sum_of[FGROUP_MAX_COLSUM], ns = 0;
	for (int i = 0; i < g->ninputs; i++) {
		grad_of[i] = -1;
		if (gv[i] >= 0 && g->values[i].numel == g->numel) {
			grad_of[i] = b->nwrites;
			b->writes[b->nwrites++] =
			    (struct fwrite){own(&x, gv[i]), g->values[i].dtype, 0, 0};
		}
	}
	for (int i = 0; i < g->ninputs; i++)
		if (gv[i] >= 0 && g->values[i].numel != g->numel) {
			if (ns == FGROUP_MAX_COLSUM) {
				rc = why(err, "more than %d row vectors take a gradient",
				         FGROUP_MAX_COLSUM);
				goto out;
			}
			grad_of[i] = FGROUP_GRAD_COL + ns;
			sum_of[ns++] = i;
			b->writes[b->nwrites++] = (struct fwrite){own(&x, gv[i]), FD_F32, 1, 1};
		}
	if (!b->nwrites) {
		rc = why(err, "no input has a gradient");
		goto out;
	}
	if (ns)
		col_backward(g, c, sum_of, ns);
out:
	free(fv);
	free(gv);
	free(dep);
	if (rc)
		fgroup_release(b);
	return rc;
}
