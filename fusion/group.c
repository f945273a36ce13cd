/*
 * group.c - reads and checks a fusion group description (docs/summary-format.md, "The fusion
 * group description") into struct fgroup.
 *
 * The description is checked whole before anything is generated: the kind and dtype are known,
 * sizes are positive integers that agree (a broadcast input's numel divides the total), every op
 * is in the op table with the fields it needs and the right number of arguments, every argument
 * names an input or the output of an earlier op (a name defined later is reported as a cycle or
 * out-of-order use, a name defined nowhere as undefined), names are defined once, outputs and
 * kept values name op results. A row group has exactly one reduction, and its epilogue may use
 * only inputs, the reduction's input and result, and epilogue values (the kernel keeps nothing
 * else of the prologue per element). A column group has one to FGROUP_MAX_COLSUM col_sum ops
 * over full-size values; an op reading a col_sum's result (or a value computed from one) is
 * per column, and may read only such values and inputs of cols elements; it writes at least
 * one per-column value. Every message names the file and the JSON path.
 */
#include "fusion/fusion.h"
#include "lib/json.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define FGROUP_FILE_MAX (16UL << 20) /* a group description is a few KiB */
#include <string.h>

struct pctx {
	const char *where;
	struct strbuf *err;
};

__attribute__((format(printf, 2, 3))) static int perr(struct pctx *c, const char *fmt, ...)
{
	va_list ap;
	if (c->err->len)
		return -1;
	strbuf_addf(c->err, "%s: ", c->where);
	char buf[512];
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	strbuf_adds(c->err, buf);
	return -1;
}

static int valid_name(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

/* A non-negative integer field; absent is -2 when optional, an error when required. */
static int get_long(struct pctx *c, const cJSON *o, const char *path, const char *key, int required,
                    long *out)
{
	const cJSON *f = json_get(o, key);
	int64_t v;
	switch (json_get_int64(o, key, 1, (int64_t)9e15, &v)) {
	case JSON_OK:
		*out = (long)v;
		return 0;
	case JSON_MISSING:
		if (required)
			return perr(c, "%smissing field '%s'", path, key);
		*out = -2;
		return 0;
	case JSON_WRONG_TYPE:
		return perr(c, "%sfield '%s' must be a number, not %s", path, key,
		            json_type_name(f));
	default:
		return perr(c, "%sfield '%s' must be a positive integer, not %g", path, key,
		            f->valuedouble);
	}
}

static int get_number(struct pctx *c, const cJSON *o, const char *path, const char *key,
                      int allow_special, double *out)
{
	const cJSON *f = json_get(o, key);
	enum json_status st = json_get_number(o, key, out);
	if (st == JSON_MISSING)
		return perr(c, "%smissing field '%s'", path, key);
	if (st == JSON_OK)
		return 0;
	if (allow_special && cJSON_IsString(f)) {
		const char *s = f->valuestring;
		if (!strcmp(s, "-inf"))
			*out = -INFINITY;
		else if (!strcmp(s, "inf"))
			*out = INFINITY;
		else if (!strcmp(s, "nan"))
			*out = NAN;
		else
			return perr(c,
			            "%sfield '%s' must be a number, \"inf\", \"-inf\" or \"nan\", "
			            "not \"%s\"",
			            path, key, s);
		return 0;
	}
	return perr(c, "%sfield '%s' must be a number, not %s", path, key, json_type_name(f));
}

static const char *get_string(struct pctx *c, const cJSON *o, const char *path, const char *key,
                              int required)
{
	const char *s = NULL;
	switch (json_get_string(o, key, &s)) {
	case JSON_OK:
		return s;
	case JSON_MISSING:
		if (required)
			perr(c, "%smissing field '%s'", path, key);
		return NULL;
	default:
		perr(c, "%sfield '%s' must be a string, not %s", path, key,
		     json_type_name(json_get(o, key)));
		return NULL;
	}
}

static int get_dtype(struct pctx *c, const cJSON *o, const char *path, const char *key,
                     enum fdtype def, enum fdtype *out)
{
	if (!json_get(o, key)) {
		*out = def;
		return 0;
	}
	const char *s = get_string(c, o, path, key, 1);
	if (!s)
		return -1;
	if (fdtype_parse(s, out))
		return perr(c, "%sunknown dtype '%s' (expected f32, f16, bf16 or bool)", path, s);
	return 0;
}

static int find_value(const struct fgroup *g, const char *name)
{
	for (int i = 0; i < g->nvalues; i++)
		if (!strcmp(g->values[i].name, name))
			return i;
	return -1;
}

static int add_value(struct pctx *c, struct fgroup *g, const char *path, const char *name, long id,
                     enum fdtype t, long numel, int op)
{
	if (!valid_name(name))
		return perr(c, "%s'%s' is not a valid name (letters, digits, '_')", path, name);
	if (find_value(g, name) >= 0)
		return perr(c, "%s'%s' is defined twice", path, name);
	struct fvalue *v = &g->values[g->nvalues++];
	v->name = xstrdup(name);
	v->id = id;
	v->dtype = t;
	v->numel = numel;
	v->op = op;
	return 0;
}

/* The analyzer's value id, informational: -1 when absent or not an integer id (a huge or
 * negative number, NaN), so nothing converts an out-of-range double to long. */
static long get_id(const cJSON *o)
{
	int64_t v;
	return json_get_int64(o, "value", 0, (int64_t)9e15, &v) == JSON_OK ? (long)v : -1;
}

static const cJSON *get_array(struct pctx *c, const cJSON *o, const char *path, const char *key,
                              int required)
{
	const cJSON *f = NULL;
	switch (json_get_array(o, key, &f)) {
	case JSON_OK:
		return f;
	case JSON_MISSING:
		if (required)
			perr(c, "%smissing field '%s'", path, key);
		return NULL;
	default:
		perr(c, "%sfield '%s' must be an array, not %s", path, key,
		     json_type_name(json_get(o, key)));
		return NULL;
	}
}

int fgroup_mapped(const struct fgroup *g)
{
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[i].map.dims)
			return 1;
	return 0;
}

/* An integer of a map's array (any sign, at most 2^40 in size), into *out. */
static int map_int(struct pctx *c, const cJSON *x, const char *path, const char *key, int k,
                   long *out)
{
	if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) ||
	    fabs(x->valuedouble) > 1099511627776.0)
		return perr(c, "%smap: %s[%d] must be an integer of at most 2^40", path, key, k);
	*out = (long)x->valuedouble;
	return 0;
}

/*
 * One strided layout mp (an object: "offset" an integer >= 0, "sizes" 1 to FMAP_DIMS positive
 * integers multiplying to the group's numel, "strides" as many integers) of input `name` into
 * *m; what names it in messages ("map", "via[1]"); every offset it gives must lie in [0, limit).
 */
static int parse_layout(struct pctx *c, const cJSON *mp, const char *path, const char *name,
                        const char *what, const struct fgroup *g, long limit, struct fmap *m)
{
	memset(m, 0, sizeof(*m));
	if (!cJSON_IsObject(mp))
		return perr(c, "%s'%s': %s must be an object", path, name, what);
	const cJSON *of = json_get(mp, "offset");
	const cJSON *sz = json_get(mp, "sizes"), *st = json_get(mp, "strides");
	if (!cJSON_IsArray(sz) || !cJSON_IsArray(st) || cJSON_GetArraySize(sz) < 1 ||
	    cJSON_GetArraySize(sz) > FMAP_DIMS || cJSON_GetArraySize(st) != cJSON_GetArraySize(sz))
		return perr(c,
		            "%s'%s': %s: 'sizes' and 'strides' must be arrays of one length, 1 to "
		            "%d",
		            path, name, what, FMAP_DIMS);
	if (of && map_int(c, of, path, "offset", 0, &m->offset))
		return -1;
	if (m->offset < 0)
		return perr(c, "%s'%s': %s: 'offset' must not be negative", path, name, what);
	m->dims = cJSON_GetArraySize(sz);
	long prod = 1;
	__int128 lo = m->offset, hi = m->offset; /* sizes up to 9e15 times strides up to 2^40 */
	for (int d = 0; d < m->dims; d++) {
		if (map_int(c, cJSON_GetArrayItem(sz, d), path, "sizes", d, &m->size[d]) ||
		    map_int(c, cJSON_GetArrayItem(st, d), path, "strides", d, &m->stride[d]))
			return -1;
		if (m->size[d] < 1 || prod > g->numel / m->size[d])
			return perr(c,
			            "%s'%s': %s: sizes[%d] must be positive, the sizes at most the "
			            "group's %ld elements",
			            path, name, what, d, g->numel);
		prod *= m->size[d];
		__int128 span = (__int128)(m->size[d] - 1) * m->stride[d];
		if (span < 0)
			lo += span;
		else
			hi += span;
	}
	if (prod != g->numel)
		return perr(c, "%s'%s': %s: its sizes hold %ld elements, not the group's %ld", path,
		            name, what, prod, g->numel);
	if (lo < 0 || hi >= limit)
		return perr(c, "%s'%s': %s: it reads offsets %.0f to %.0f, outside [0, %ld)", path,
		            name, what, (double)lo, (double)hi, limit);
	return 0;
}

/*
 * Input `name`'s "map" (in, at path) into v->map, for an input of numel elements of group g
 * (parse_layout(): its offsets in [0, numel)), and its optional "via": 1 to FVIA_MAX layouts
 * applied one after the other to the group's index (each offset the next one's index, in [0,
 * numel of the group), the last's in [0, numel)), the strided loops' own, which the CPU
 * check's reference reads through.
 */
static int parse_map(struct pctx *c, const cJSON *in, const char *path, const char *name,
                     const struct fgroup *g, long numel, struct fvalue *v)
{
	const cJSON *mp = json_get(in, "map"), *via = json_get(in, "via");
	memset(&v->map, 0, sizeof(v->map));
	v->nvia = 0;
	if (!mp) {
		if (via)
			return perr(c, "%s'%s': 'via' needs a 'map'", path, name);
		return 0;
	}
	if (g->kind != FG_CHAIN || fgroup_rowed(g))
		return perr(c, "%s'%s': an index map is for an elementwise chain without rows",
		            path, name);
	if (numel < 1)
		return perr(c,
		            "%s'%s': an input with a map needs its 'numel' (the elements it holds)",
		            path, name);
	if (parse_layout(c, mp, path, name, "map", g, numel, &v->map))
		return -1;
	if (!via)
		return 0;
	int nv = cJSON_IsArray(via) ? cJSON_GetArraySize(via) : -1;
	if (nv < 1 || nv > FVIA_MAX)
		return perr(c, "%s'%s': 'via' must be an array of 1 to %d layouts", path, name,
		            FVIA_MAX);
	for (int k = 0; k < nv; k++) {
		char what[24];
		snprintf(what, sizeof(what), "via[%d]", k);
		if (parse_layout(c, cJSON_GetArrayItem(via, k), path, name, what, g,
		                 k + 1 < nv ? g->numel : numel, &v->via[k]))
			return -1;
	}
	v->nvia = nv;
	return 0;
}

static int parse_inputs(struct pctx *c, const cJSON *j, struct fgroup *g)
{
	const cJSON *arr = get_array(c, j, "", "inputs", 1);
	if (!arr)
		return -1;
	int i = 0;
	const cJSON *in;
	cJSON_ArrayForEach(in, arr)
	{
		char path[64];
		snprintf(path, sizeof(path), "inputs[%d]: ", i);
		if (!cJSON_IsObject(in))
			return perr(c, "%smust be an object", path);
		const char *name = get_string(c, in, path, "name", 1);
		enum fdtype t;
		long numel;
		if (!name || get_dtype(c, in, path, "dtype", g->dtype, &t) ||
		    get_long(c, in, path, "numel", 0, &numel))
			return -1;
		const cJSON *pr = json_get(in, "per_row");
		int per_row = cJSON_IsTrue(pr);
		if (per_row && !fgroup_rowed(g))
			return perr(c,
			            "%s'%s': per_row needs rows: a row group, a column group, or a "
			            "chain with \"cols\"",
			            path, name);
		struct fvalue mv; /* its map and via */
		if (parse_map(c, in, path, name, g, numel, &mv))
			return -1;
		if (mv.map.dims && per_row)
			return perr(c, "%s'%s': an input with a map is not per_row", path, name);
		if (numel == -2)
			numel = per_row ? g->rows : g->numel;
		if (per_row && numel != g->rows)
			return perr(c, "%s'%s' is per_row: %ld elements, not the group's %ld rows",
			            path, name, numel, g->rows);
		if (!mv.map.dims && (numel > g->numel || g->numel % numel))
			return perr(
			    c,
			    "%s'%s' has %ld elements, which does not divide the group's %ld "
			    "(inputs broadcast over leading dimensions)",
			    path, name, numel, g->numel);
		if (i == 64) /* the emitters keep per-input flags in arrays of 64 */
			return perr(c, "more than 64 inputs");
		if (add_value(c, g, path, name, get_id(in), t, numel, -1))
			return -1;
		g->values[g->nvalues - 1].per_row = per_row;
		g->values[g->nvalues - 1].map = mv.map;
		g->values[g->nvalues - 1].nvia = mv.nvia;
		memcpy(g->values[g->nvalues - 1].via, mv.via, sizeof(mv.via));
		i++;
	}
	if (!i)
		return perr(c, "'inputs' is empty: a group reads at least one tensor (one of "
		               "constants only, fill ops, has nothing to fuse)");
	g->ninputs = i;
	return 0;
}

/* An argument: defined earlier, or a cycle / out-of-order use, or undefined. */
static int resolve_arg(struct pctx *c, const struct fgroup *g, const cJSON *ops, const char *path,
                       int opi, const char *name)
{
	int v = find_value(g, name);
	if (v >= 0)
		return v;
	int k = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, ops)
	{
		const cJSON *out = json_get(o, "out");
		if (cJSON_IsString(out) && !strcmp(out->valuestring, name)) {
			if (k == opi)
				perr(c, "%sop uses its own result '%s' (cycle)", path, name);
			else
				perr(
				    c,
				    "%s'%s' is defined by a later op, ops[%d] (cycle or ops out of "
				    "order: each op may use only inputs and earlier results)",
				    path, name, k);
			return -1;
		}
		k++;
	}
	perr(c, "%sundefined name '%s' (not an input nor an earlier op's result)", path, name);
	return -1;
}

/*
 * In a column group: whether op n's result is per column (a col_sum, or an op reading a
 * per-column value), 0 when it is per element, -1 after perr() when the op mixes the two or
 * breaks a rule of col_sum.
 */
static int col_phase(struct pctx *c, struct fgroup *g, const struct fopnode *n, const char *path)
{
	if (n->op->kind == FOP_COLSUM) {
		const struct fvalue *x = &g->values[n->arg[0]];
		if (x->per_col || x->per_row || x->numel != g->numel)
			return perr(
			    c,
			    "%sthe input of col_sum must have all %ld elements (rows x cols), "
			    "not %ld",
			    path, g->numel, x->numel);
		if (++g->ncolsum > FGROUP_MAX_COLSUM)
			return perr(c, "%smore than %d col_sum ops in one group", path,
			            FGROUP_MAX_COLSUM);
		return 1;
	}
	int pc = 0;
	for (int k = 0; k < n->nargs; k++)
		pc |= g->values[n->arg[k]].per_col;
	if (!pc)
		return 0;
	for (int k = 0; k < n->nargs; k++) {
		const struct fvalue *a = &g->values[n->arg[k]];
		if (!(a->per_col || (a->op < 0 && !a->per_row && a->numel == g->cols)))
			return perr(
			    c,
			    "%sargs[%d] '%s': after a col_sum an op may read only per-column "
			    "values and inputs of %ld elements (cols)",
			    path, k, a->name, g->cols);
	}
	if (n->drop >= 0)
		return perr(c, "%sdropout on per-column values is not supported", path);
	return 1;
}

static int parse_op(struct pctx *c, const cJSON *ops, const cJSON *o, int i, struct fgroup *g)
{
	char path[64];
	snprintf(path, sizeof(path), "ops[%d]: ", i);
	if (!cJSON_IsObject(o))
		return perr(c, "%smust be an object", path);
	struct fopnode *n = &g->ops[i];
	memset(n, 0, sizeof(*n));
	n->drop = -1;
	const char *opname = get_string(c, o, path, "op", 1);
	if (!opname)
		return -1;
	snprintf(path, sizeof(path), "ops[%d] (%s): ", i, opname);
	n->op = fop_lookup(opname);
	if (!n->op)
		return perr(c, "%sunknown op '%s'", path, opname);
	const cJSON *args = get_array(c, o, path, "args", 1);
	const char *out = get_string(c, o, path, "out", 1);
	if (!args || !out)
		return -1;
	const cJSON *causal = json_get(o, "causal");
	if (causal && !cJSON_IsBool(causal))
		return perr(c, "%sfield 'causal' must be true or false", path);
	n->causal = cJSON_IsTrue(causal);
	if (n->causal && strcmp(opname, "masked_fill"))
		return perr(c, "%s'causal' applies to masked_fill only", path);
	int nargs = cJSON_GetArraySize(args);
	int min = n->op->min_args, max = n->op->max_args;
	if (!strcmp(opname, "masked_fill"))
		min = max = n->causal ? 1 : 2;
	if (nargs < min || nargs > max) {
		if (min == max)
			return perr(c, "%s'%s' takes %d argument%s, not %d", path, opname, min,
			            min == 1 ? "" : "s", nargs);
		return perr(c, "%s'%s' takes %d to %d arguments, not %d", path, opname, min, max,
		            nargs);
	}
	n->nargs = nargs;
	for (int k = 0; k < nargs; k++) {
		const cJSON *a = cJSON_GetArrayItem(args, k);
		if (!cJSON_IsString(a))
			return perr(c, "%sargs[%d] must be a string (a value's name)", path, k);
		n->arg[k] = resolve_arg(c, g, ops, path, i, a->valuestring);
		if (n->arg[k] < 0)
			return -1;
		if (g->values[n->arg[k]].dtype == FD_BOOL &&
		    !((k == 0 && !strcmp(opname, "where")) ||
		      (k == 1 && !strcmp(opname, "masked_fill")) || !strcmp(opname, "mul")))
			return perr(c,
			            "%sargs[%d] '%s' is a bool mask; only where's condition, mul's "
			            "factors and "
			            "masked_fill's mask may be",
			            path, k, a->valuestring);
	}
	unsigned need = n->op->need;
	if ((need & FOP_NEED_SCALAR) && get_number(c, o, path, "scalar", 0, &n->num))
		return -1;
	if ((need & FOP_NEED_VALUE) && get_number(c, o, path, "value", 1, &n->num))
		return -1;
	if (need & FOP_NEED_EPS) {
		if (get_number(c, o, path, "eps", 0, &n->num))
			return -1;
		if (!(n->num > 0))
			return perr(c, "%s'eps' must be positive", path);
	}
	if (need & FOP_NEED_P) {
		if (get_number(c, o, path, "p", 0, &n->p))
			return -1;
		if (!(n->p >= 0 && n->p < 1))
			return perr(c, "%s'p' must be in [0, 1), not %g", path, n->p);
		n->drop = g->ndrop++;
	}
	enum fdtype t = g->dtype;
	if (need & FOP_NEED_TO) {
		const char *to = get_string(c, o, path, "to", 1);
		if (!to)
			return -1;
		if (fdtype_parse(to, &n->to) || n->to == FD_BOOL)
			return perr(c, "%sunknown cast target '%s' (expected f32, f16 or bf16)",
			            path, to);
		t = n->to;
	}
	if (n->op->kind == FOP_COLSUM && g->kind != FG_COL)
		return perr(c,
		            "%s'%s' sums over the rows; the group's kind must be "
		            "\"column-reduction\"",
		            path, opname);
	if (n->op->kind == FOP_REDUCE) {
		if (!strcmp(opname, "rms_norm_backward"))
			return perr(
			    c,
			    "%s'rms_norm_backward' belongs to a fused backward, which aicprof "
			    "derives (from a group with rms_norm)",
			    path);
		if (g->kind != FG_ROW)
			return perr(c,
			            "%s'%s' is a row reduction; the group's kind must be "
			            "\"reduction-epilogue\"",
			            path, opname);
		if (g->red >= 0)
			return perr(
			    c, "%sa second reduction; a group holds one (ops[%d] is the first)",
			    path, g->red);
		g->red = i;
		if (g->values[n->arg[0]].numel != g->numel)
			return perr(c,
			            "%sthe input of '%s' must have all %ld elements, not a "
			            "broadcast %ld",
			            path, opname, g->numel, g->values[n->arg[0]].numel);
		/* log_softmax_backward reads its forward's result per element; the norms' weight
		 * and bias are per column; layer_norm_backward reads x per element, mean and rstd
		 * per row, gamma per column */
		int whole = !strcmp(opname, "log_softmax_backward");
		int lnb = !strcmp(opname, "layer_norm_backward");
		if (lnb) {
			for (int k = 1; k < nargs; k++) {
				const struct fvalue *a = &g->values[n->arg[k]];
				int ok =
				    a->op < 0 && (k == 1   ? a->numel == g->numel && !a->per_row
				                  : k <= 3 ? a->per_row
				                           : a->numel == g->cols && !a->per_row);
				if (!ok)
					return perr(
					    c,
					    "%sargs[%d] of layer_norm_backward must be an input: "
					    "x of all %ld elements, mean and rstd per_row, gamma "
					    "of %ld (cols)",
					    path, k, g->numel, g->cols);
			}
		}
		for (int k = 1; k < nargs && !lnb; k++)
			if (g->values[n->arg[k]].op >= 0 ||
			    g->values[n->arg[k]].numel != (whole ? g->numel : g->cols))
				return perr(c,
				            whole
				                ? "%sargs[%d] (the forward's result) must be an "
				                  "input of all %ld elements"
				                : "%sargs[%d] (weight or bias) must be an input of "
				                  "%ld elements (cols)",
				            path, k, whole ? g->numel : g->cols);
	}
	if (n->causal && g->kind != FG_ROW)
		return perr(c, "%s'causal' needs a row group (kind \"reduction-epilogue\")", path);
	int per_col = g->kind == FG_COL && col_phase(c, g, n, path);
	if (per_col < 0)
		return -1;
	if (add_value(c, g, path, out, get_id(o), t, per_col ? g->cols : g->numel, i))
		return -1;
	g->values[g->nvalues - 1].per_col = per_col;
	n->out = g->nvalues - 1;
	return 0;
}

static int parse_writes(struct pctx *c, const cJSON *j, const char *key, int kept, struct fgroup *g)
{
	const cJSON *arr = get_array(c, j, "", key, !kept);
	if (!arr)
		return c->err->len ? -1 : 0;
	int i = 0;
	const cJSON *w;
	cJSON_ArrayForEach(w, arr)
	{
		char path[64];
		snprintf(path, sizeof(path), "%s[%d]: ", key, i++);
		if (!cJSON_IsObject(w))
			return perr(c, "%smust be an object", path);
		const char *name = get_string(c, w, path, "name", 1);
		if (!name)
			return -1;
		int v = find_value(g, name);
		if (v < 0)
			return perr(c, "%sundefined name '%s'", path, name);
		if (g->values[v].op < 0)
			return perr(c, "%s'%s' is an input, not a result of the group", path, name);
		for (int k = 0; k < g->nwrites; k++)
			if (g->writes[k].value == v)
				return perr(c, "%s'%s' is listed twice in outputs and kept", path,
				            name);
		struct fwrite *fw = &g->writes[g->nwrites];
		if (get_dtype(c, w, path, "dtype", g->values[v].dtype, &fw->dtype))
			return -1;
		if (fw->dtype == FD_BOOL)
			return perr(c, "%s'%s': a bool output is not supported", path, name);
		fw->value = v;
		fw->kept = kept;
		g->nwrites++;
	}
	if (!kept && !i)
		return perr(c, "'outputs' is empty");
	return 0;
}

/* Row groups: the epilogue may use inputs, the reduction's input and result, epilogue values. */
static int check_row(struct pctx *c, struct fgroup *g)
{
	if (g->red < 0)
		return perr(c, "a \"reduction-epilogue\" group needs one of softmax, log_softmax, "
		               "log_softmax_backward, layer_norm, layer_norm_backward, rms_norm");
	int x = g->ops[g->red].arg[0];
	for (int i = g->red + 1; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nargs; k++) {
			int v = g->ops[i].arg[k];
			int op = g->values[v].op;
			if (op >= 0 && op < g->red && v != x)
				return perr(c,
				            "ops[%d] (%s): uses prologue value '%s' after the "
				            "reduction; only its input '%s' is kept per element",
				            i, g->ops[i].op->name, g->values[v].name,
				            g->values[x].name);
		}
	if (g->cols > 49152)
		return perr(c,
		            "cols %ld too large: a row is staged in shared memory (at most 49152 "
		            "fp32 values)",
		            g->cols);
	return 0;
}

/* Column groups: a col_sum, and a per-column value written. */
static int check_col(struct pctx *c, struct fgroup *g)
{
	if (!g->ncolsum)
		return perr(c, "a \"column-reduction\" group needs a col_sum op");
	for (int w = 0; w < g->nwrites; w++)
		if (g->values[g->writes[w].value].per_col)
			return 0;
	return perr(c, "a \"column-reduction\" group writes at least one per-column value (a "
	               "col_sum's result, or an op on it)");
}

int fgroup_parse(const struct cJSON *j, const char *where, const char *name, struct fgroup *g,
                 struct strbuf *err)
{
	struct pctx c = {where, err};
	memset(g, 0, sizeof(*g));
	g->red = -1;
	strbuf_reset(err);
	if (!cJSON_IsObject(j)) {
		perr(&c, "the group description must be a JSON object");
		goto fail;
	}
	const char *kind = get_string(&c, j, "", "kind", 1);
	if (!kind)
		goto fail;
	if (!strcmp(kind, "elementwise-chain"))
		g->kind = FG_CHAIN;
	else if (!strcmp(kind, "reduction-epilogue"))
		g->kind = FG_ROW;
	else if (!strcmp(kind, "column-reduction"))
		g->kind = FG_COL;
	else {
		perr(&c,
		     "unsupported kind '%s' (expected \"elementwise-chain\", "
		     "\"reduction-epilogue\" or \"column-reduction\")",
		     kind);
		goto fail;
	}
	const char *dt = get_string(&c, j, "", "dtype", 1);
	if (!dt)
		goto fail;
	if (fdtype_parse(dt, &g->dtype) || g->dtype == FD_BOOL) {
		perr(&c, "unknown dtype '%s' (expected f32, f16 or bf16)", dt);
		goto fail;
	}
	const char *nm = get_string(&c, j, "", "name", 0);
	if (c.err->len)
		goto fail;
	nm = nm ? nm : name;
	if (!valid_name(nm)) {
		perr(&c, "group name '%s' must be letters, digits and '_'", nm);
		goto fail;
	}
	g->name = xstrdup(nm);
	if (g->kind == FG_CHAIN) {
		long cols = 0;
		if (get_long(&c, j, "", "numel", 1, &g->numel) ||
		    get_long(&c, j, "", "cols", 0, &cols))
			goto fail;
		if (cols == -2) /* absent: one row */
			cols = g->numel;
		if (g->numel % cols) {
			perr(&c, "cols %ld does not divide the chain's %ld elements", cols,
			     g->numel);
			goto fail;
		}
		g->cols = cols;
		g->rows = g->numel / cols;
	} else {
		if (get_long(&c, j, "", "rows", 1, &g->rows) ||
		    get_long(&c, j, "", "cols", 1, &g->cols))
			goto fail;
		if (g->rows >
		    (1L << 53) / g->cols) { /* found by fuzz-fuse: the product overflowed */
			perr(&c, "rows x cols (%ld x %ld) is more elements than any tensor holds",
			     g->rows, g->cols);
			goto fail;
		}
		g->numel = g->rows * g->cols;
	}
	const cJSON *ops = get_array(&c, j, "", "ops", 1);
	if (!ops)
		goto fail;
	g->nops = cJSON_GetArraySize(ops);
	if (!g->nops) {
		perr(&c, "'ops' is empty");
		goto fail;
	}
	const cJSON *ins = json_get(j, "inputs");
	int nin = cJSON_IsArray(ins) ? cJSON_GetArraySize(ins) : 0;
	g->values = xcalloc(nin + g->nops, sizeof(*g->values));
	g->ops = xcalloc(g->nops, sizeof(*g->ops));
	if (parse_inputs(&c, j, g))
		goto fail;
	for (int i = 0; i < g->nops; i++)
		if (parse_op(&c, ops, cJSON_GetArrayItem(ops, i), i, g))
			goto fail;
	const cJSON *outs = json_get(j, "outputs");
	const cJSON *kept = json_get(j, "kept");
	g->writes =
	    xcalloc(cJSON_GetArraySize(outs) + cJSON_GetArraySize(kept) + 1, sizeof(*g->writes));
	if (parse_writes(&c, j, "outputs", 0, g) || parse_writes(&c, j, "kept", 1, g))
		goto fail;
	if (g->kind == FG_ROW && check_row(&c, g))
		goto fail;
	if (g->kind == FG_COL && check_col(&c, g))
		goto fail;
	const cJSON *tb = json_get(j, "time_before_us");
	if (cJSON_IsNumber(tb))
		g->recorded_before_us = tb->valuedouble;
	return 0;
fail:
	fgroup_release(g);
	return -1;
}

int fgroup_parse_file(const char *path, struct fgroup *g, struct strbuf *err)
{
	memset(g, 0, sizeof(*g));
	strbuf_reset(err);
	cJSON *j = json_parse_file(path, FGROUP_FILE_MAX, err);
	if (!j)
		return -1;
	/* default name: the file's base name without .json, made name-safe */
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	char *name = xstrdup(base);
	char *dot = strstr(name, ".json");
	if (dot)
		*dot = 0;
	for (char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p))
			*p = '_';
	if (!isalpha((unsigned char)name[0])) {
		char *n2 = xmalloc(strlen(name) + 3);
		sprintf(n2, "g_%s", name);
		free(name);
		name = n2;
	}
	int rc = fgroup_parse(j, path, name, g, err);
	free(name);
	cJSON_Delete(j);
	return rc;
}

void fgroup_release(struct fgroup *g)
{
	for (int i = 0; i < g->nvalues; i++)
		free(g->values[i].name);
	free(g->values);
	free(g->ops);
	free(g->writes);
	free(g->name);
	memset(g, 0, sizeof(*g));
	g->red = -1;
}

int fgroup_max_vec(const struct fgroup *g)
{
	int w = 1;
	if (g->kind == FG_ROW) { /* the row kernels' register budget assumes this rule */
		for (int i = 0; i < g->nvalues; i++)
			if (fdtype_size(g->values[i].dtype) > w)
				w = fdtype_size(g->values[i].dtype);
		for (int i = 0; i < g->nwrites; i++)
			if (fdtype_size(g->writes[i].dtype) > w)
				w = fdtype_size(g->writes[i].dtype);
		return 16 / w;
	}
	/* chain and column kernels: only what streams through memory at full size; a broadcast
	 * or per-column input (a batch norm's f32 scale beside bf16 activations) stays in the
	 * cache and is read as two 16-byte words where V elements of it are 32 bytes */
	for (int i = 0; i < g->ninputs; i++) {
		const struct fvalue *v = &g->values[i];
		if (!v->per_row && !v->per_col && !v->map.dims && v->numel == g->numel &&
		    fdtype_size(v->dtype) > w)
			w = fdtype_size(v->dtype);
	}
	for (int i = 0; i < g->nwrites; i++)
		if (!g->values[g->writes[i].value].per_col &&
		    fgroup_write_numel(g, i) == g->numel && fdtype_size(g->writes[i].dtype) > w)
			w = fdtype_size(g->writes[i].dtype);
	return 16 / w;
}

/* Does any op read value v? */
static int value_used(const struct fgroup *g, int v)
{
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nargs; k++)
			if (g->ops[i].arg[k] == v)
				return 1;
	return 0;
}

double fgroup_bytes_fused(const struct fgroup *g)
{
	double b = 0;
	for (int i = 0; i < g->ninputs; i++)
		if (value_used(g, i))
			b += (double)g->values[i].numel * fdtype_size(g->values[i].dtype);
	for (int i = 0; i < g->nwrites; i++)
		b += (double)fgroup_write_numel(g, i) * fdtype_size(g->writes[i].dtype);
	return b;
}

long fgroup_write_numel(const struct fgroup *g, int w)
{
	return g->values[g->writes[w].value].per_col ? g->cols : g->numel;
}

double fgroup_bytes_unfused(const struct fgroup *g)
{
	double b = 0;
	for (int i = 0; i < g->nops; i++) {
		const struct fopnode *n = &g->ops[i];
		for (int k = 0; k < n->nargs; k++)
			b += (double)g->values[n->arg[k]].numel *
			     fdtype_size(g->values[n->arg[k]].dtype);
		b += (double)g->values[n->out].numel * fdtype_size(g->values[n->out].dtype);
	}
	return b;
}

char *fgroup_key(const struct fgroup *g)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s:%s:%ldx%ld:",
	            g->kind == FG_CHAIN ? "ew"
	            : g->kind == FG_ROW ? "row"
	                                : "col",
	            fdtype_name(g->dtype), g->rows, g->cols);
	for (int i = 0; i < g->ninputs; i++)
		strbuf_addf(&sb, "%s%s/%ld", i ? "," : "", fdtype_name(g->values[i].dtype),
		            g->values[i].numel);
	strbuf_adds(&sb, ":");
	for (int i = 0; i < g->nops; i++) {
		const struct fopnode *n = &g->ops[i];
		strbuf_addf(&sb, "%s%s(", i ? "," : "", n->op->name);
		for (int k = 0; k < n->nargs; k++)
			strbuf_addf(&sb, "%s%d", k ? " " : "", n->arg[k]);
		strbuf_adds(&sb, ")");
	}
	strbuf_adds(&sb, ":w");
	for (int i = 0; i < g->nwrites; i++)
		strbuf_addf(&sb, "%s%d", i ? "," : "", g->writes[i].value);
	return sb.buf;
}
