/*
 * patch-lib.c - the library forms of aicprof.patch (see patch.c for the diff and the groups'
 * rewrites): a hand-written attention becomes torch.nn.functional.scaled_dot_product_attention
 * (lib_sdpa: the matmul, scale, causal mask, softmax, dropout and matmul lines matched as one
 * pattern, never while its probabilities are read later), the optimizer's constructor gets
 * fused=True (lib_fused_optim: the program's own optimizer, SGD or Adam/AdamW, as the
 * candidate's kernels say), and a dead statement (NAME = EXPR whose NAME nothing reads) is
 * removed (lib_dead). Each works on the candidate's source lines through patch.c's files and
 * edits; a pattern it cannot prove safe is advice with the reason, never a rewrite.
 */
#include "fusion/patch-int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- library forms and dead statements ---- */

static char *dupn(const char *s, size_t n)
{
	char *r = xmalloc(n + 1);
	memcpy(r, s, n);
	r[n] = 0;
	return r;
}

/* s without spaces and tabs, as a new string. */
static char *compact(const char *s)
{
	char *r = xmalloc(strlen(s) + 1), *o = r;
	for (; *s; s++)
		if (*s != ' ' && *s != '\t')
			*o++ = *s;
	*o = 0;
	return r;
}

static int is_word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Occurrences of identifier w as a whole word in s (outside nothing: strings count too). */
static int count_word_in(const char *s, const char *w)
{
	int n = 0;
	size_t k = strlen(w);
	for (const char *p = s; (p = strstr(p, w)); p += k)
		if ((p == s || (!is_word_char(p[-1]) && p[-1] != '.')) && !is_word_char(p[k]))
			n++;
	return n;
}

static int count_word(const struct lines *L, const char *w)
{
	int n = 0;
	for (int i = 0; i < L->n; i++)
		n += count_word_in(L->l[i], w);
	return n;
}

/* Is line i of f inside a range an edit removes? */
static int removed(const struct pfile *f, int i)
{
	for (int e = 0; e < f->ne; e++)
		if (i >= f->e[e].a && i < f->e[e].a + f->e[e].nold)
			return 1;
	return 0;
}

static int overlaps(const struct pfile *f, int a, int n)
{
	for (int e = 0; e < f->ne; e++)
		if (a < f->e[e].a + f->e[e].nold && f->e[e].a < a + n)
			return 1;
	return 0;
}

/*
 * A statement "IND NAME = RHS" on one line: no comment, semicolon, continuation or unbalanced
 * bracket, not an augmented assignment. Fills ind (length), name and rhs (compact, owned).
 */
struct stmt {
	int ind;
	char name[64];
	char *rhs; /* compact */
	const char *raw_rhs;
};

static int stmt_parse(const char *s, struct stmt *st)
{
	memset(st, 0, sizeof(*st));
	st->ind = strspn(s, " \t");
	const char *q = s + st->ind;
	if (strpbrk(q, "#;\\"))
		return -1;
	int depth = 0;
	for (const char *c = q; *c; c++) {
		depth += *c == '(' || *c == '[' || *c == '{';
		depth -= *c == ')' || *c == ']' || *c == '}';
		if (depth < 0)
			return -1;
	}
	if (depth)
		return -1;
	size_t k = 0;
	while (is_word_char(q[k]))
		k++;
	if (!k || k >= sizeof(st->name) || isdigit((unsigned char)q[0]))
		return -1;
	const char *e = q + k;
	while (*e == ' ' || *e == '\t')
		e++;
	if (e[0] != '=' || e[1] == '=')
		return -1;
	memcpy(st->name, q, k);
	st->name[k] = 0;
	st->raw_rhs = e + 1;
	while (*st->raw_rhs == ' ')
		st->raw_rhs++;
	st->rhs = compact(e + 1);
	return *st->rhs ? 0 : -1;
}

/* Splits "f(a,b,...)" (compact) whose name is one of names (each tried with every prefix in
 * pre) into its top-level arguments (owned); returns the count, or -1. */
static int call_split(const char *s, const char *const *names, size_t nn, char **args, int max)
{
	static const char *const pre[] = {"torch.nn.functional.", "nn.functional.", "F.", "torch.",
	                                  ""};
	const char *p = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(pre) && !p; i++)
		for (size_t j = 0; j < nn && !p; j++) {
			size_t a = strlen(pre[i]), b = strlen(names[j]);
			if (!strncmp(s, pre[i], a) && !strncmp(s + a, names[j], b) &&
			    s[a + b] == '(')
				p = s + a + b + 1;
		}
	if (!p)
		return -1;
	int n = 0, depth = 0;
	const char *a = p;
	for (const char *c = p; *c; c++) {
		if (*c == '(' || *c == '[' || *c == '{')
			depth++;
		else if ((*c == ')' || *c == ']' || *c == '}') && depth)
			depth--;
		else if ((*c == ',' || *c == ')') && !depth) {
			if (n == max) {
				for (int i = 0; i < n; i++)
					free(args[i]);
				return -1;
			}
			if (c > a)
				args[n++] = dupn(a, c - a);
			a = c + 1;
			if (*c == ')') {
				if (c[1]) {
					for (int i = 0; i < n; i++)
						free(args[i]);
					return -1;
				}
				return n;
			}
		}
	}
	for (int i = 0; i < n; i++)
		free(args[i]);
	return -1;
}

static void free_args(char **a, int n)
{
	for (int i = 0; i < n; i++)
		free(a[i]);
}

/* Is s (compact) an identifier? */
static int ident(const char *s)
{
	return patch_is_ident(s);
}

/* "A@B" or "torch.matmul(A,B)" (compact): fills a and b (owned), returns 0 or -1. */
static int match_matmul(const char *s, char **a, char **b)
{
	static const char *const mm[] = {"matmul"};
	char *args[2];
	if (call_split(s, mm, 1, args, 2) == 2) {
		*a = args[0];
		*b = args[1];
		return 0;
	}
	const char *at = strchr(s, '@');
	if (!at || strchr(at + 1, '@'))
		return -1;
	*a = dupn(s, at - s);
	*b = xstrdup(at + 1);
	return 0;
}

/* "K.transpose(-2,-1)" / "K.transpose(-1,-2)" / "K.mT": K (owned), or NULL. */
static char *match_kt(const char *s)
{
	static const char *const suf[] = {".transpose(-2,-1)", ".transpose(-1,-2)", ".mT"};
	for (size_t i = 0; i < ARRAY_SIZE(suf); i++) {
		size_t n = strlen(s), k = strlen(suf[i]);
		if (n > k && !strcmp(s + n - k, suf[i])) {
			char *r = dupn(s, n - k);
			if (ident(r))
				return r;
			free(r);
		}
	}
	return NULL;
}

static int is_neg_inf(const char *s)
{
	return !strcmp(s, "float(\"-inf\")") || !strcmp(s, "float('-inf')") ||
	       !strcmp(s, "-float(\"inf\")") || !strcmp(s, "-float('inf')") ||
	       !strcmp(s, "-math.inf") || !strcmp(s, "-torch.inf");
}

/* A line "NAME = torch.ones(A,A,...).tril()" or "torch.tril(torch.ones(A,A,...))" of bool
 * dtype: a causal mask. */
static int is_causal_def(const char *rhs)
{
	char *t = xstrdup(rhs);
	int ok = 0;
	size_t n = strlen(t);
	if (n > 7 && !strcmp(t + n - 7, ".tril()"))
		t[n - 7] = 0;
	else if (!strncmp(t, "torch.tril(", 11) && t[n - 1] == ')') {
		memmove(t, t + 11, n - 11);
		t[n - 12] = 0;
	} else {
		free(t);
		return 0;
	}
	static const char *const ones[] = {"ones"};
	char *a[4];
	int na = call_split(t, ones, 1, a, 4);
	if (na >= 2 && ident(a[0]) && !strcmp(a[0], a[1]) && !strncmp(t, "torch.", 6)) {
		ok = 0;
		for (int i = 2; i < na; i++)
			ok |= !strcmp(a[i], "dtype=torch.bool");
	}
	if (na > 0)
		free_args(a, na);
	free(t);
	return ok;
}

struct sdpa {
	char *q, *k, *v, *scale, *mask, *dropout_p;
	int causal, mask_def; /* the mask's defining line, or -1 */
	int lines[8], nlines; /* the chain's lines */
	char s_name[64], a_name[64], y_name[64];
};

static void sdpa_release(struct sdpa *d)
{
	free(d->q);
	free(d->k);
	free(d->v);
	free(d->scale);
	free(d->mask);
	free(d->dropout_p);
}

/* The attention chain in lines [lo, hi] of f, or -1 with the reason. */
static int sdpa_match(struct pfile *f, int lo, int hi, struct sdpa *d, struct strbuf *why)
{
	memset(d, 0, sizeof(*d));
	d->mask_def = -1;
	int state = 0, ind = -1, rc = 0;
	for (int i = lo; i <= hi && !rc; i++) {
		struct stmt st;
		const char *s = f->L.l[i];
		if (!s[strspn(s, " \t")])
			continue;
		if (stmt_parse(s, &st)) {
			rc = patch_fail(why, "%s:%d is not a one-line assignment: %s", f->rel,
			                i + 1, s);
			break;
		}
		if (ind < 0)
			ind = st.ind;
		if (st.ind != ind) {
			rc = patch_fail(why, "%s:%d is indented otherwise", f->rel, i + 1);
			free(st.rhs);
			break;
		}
		char *a = NULL, *b = NULL, *args[4];
		int na, took = 1;
		const char *r = st.rhs;
		static const char *const sm[] = {"softmax"};
		static const char *const dr[] = {"dropout"};
		static const char *const mf[] = {"masked_fill"};
		if (state == 0 && !match_matmul(r, &a, &b) && ident(a) && (d->k = match_kt(b))) {
			d->q = a, a = NULL;
			strcpy(d->s_name, st.name);
			state = 1;
		} else if (state == 1 && (!strncmp(r, d->s_name, strlen(d->s_name))) &&
		           (r[strlen(d->s_name)] == '*' || r[strlen(d->s_name)] == '/') &&
		           !strchr("*/", r[strlen(d->s_name) + 1]) && !strcmp(st.name, d->s_name) &&
		           !d->scale && !d->mask) {
			const char *e = st.raw_rhs + strcspn(st.raw_rhs, "*/") + 1;
			struct strbuf sb = STRBUF_INIT;
			if (r[strlen(d->s_name)] == '*')
				strbuf_addf(&sb, "%s", e);
			else
				strbuf_addf(&sb, "1.0 / (%s)", e);
			while (*sb.buf == ' ')
				memmove(sb.buf, sb.buf + 1, strlen(sb.buf));
			d->scale = sb.buf;
		} else if (state == 1 && !strcmp(st.name, d->s_name) && !d->mask &&
		           !strncmp(r, d->s_name, strlen(d->s_name)) &&
		           r[strlen(d->s_name)] == '.' &&
		           call_split(r + strlen(d->s_name) + 1, mf, 1, args, 4) == 2) {
			if (!is_neg_inf(args[1]))
				rc = patch_fail(why,
				                "%s:%d: a mask filled with another value than -inf",
				                f->rel, i + 1);
			else if (args[0][0] == '~' && ident(args[0] + 1))
				d->mask = xstrdup(args[0] + 1);
			else if (strlen(args[0]) > 3 &&
			         !strcmp(args[0] + strlen(args[0]) - 3, "==0")) {
				args[0][strlen(args[0]) - 3] = 0;
				if (ident(args[0])) {
					struct strbuf sb = STRBUF_INIT;
					strbuf_addf(&sb, "%s != 0", args[0]);
					d->mask = sb.buf;
				}
			}
			if (!rc && !d->mask)
				rc = patch_fail(
				    why, "%s:%d: a mask of another form than ~mask or mask == 0",
				    f->rel, i + 1);
			free_args(args, 2);
		} else if (state == 1 && (na = call_split(r, sm, 1, args, 3)) >= 1) {
			int ok =
			    !strcmp(args[0], d->s_name) &&
			    ((na == 2 && (!strcmp(args[1], "dim=-1") || !strcmp(args[1], "-1"))));
			free_args(args, na);
			if (!ok)
				rc = patch_fail(
				    why, "%s:%d: a softmax of another form than (scores, dim=-1)",
				    f->rel, i + 1);
			strcpy(d->a_name, st.name);
			state = 2;
		} else if (state == 1 && !strncmp(r, d->s_name, strlen(d->s_name)) &&
		           (!strcmp(r + strlen(d->s_name), ".softmax(dim=-1)") ||
		            !strcmp(r + strlen(d->s_name), ".softmax(-1)"))) {
			strcpy(d->a_name, st.name);
			state = 2;
		} else if (state == 2 && !d->dropout_p &&
		           (na = call_split(r, dr, 1, args, 4)) >= 1) {
			const char *p = NULL, *tr = NULL;
			int ok = !strcmp(args[0], d->a_name) && !strcmp(st.name, d->a_name);
			for (int k = 1; k < na; k++) {
				if (!strncmp(args[k], "p=", 2))
					p = args[k] + 2;
				else if (!strncmp(args[k], "training=", 9))
					tr = args[k] + 9;
				else if (!strncmp(args[k], "inplace=", 8))
					ok &= !strcmp(args[k] + 8, "False");
				else if (strchr(args[k], '=') && !strstr(args[k], "=="))
					ok = 0;
				else if (k == 1)
					p = args[k];
				else if (k == 2)
					tr = args[k];
				else
					ok = 0;
			}
			struct strbuf sb = STRBUF_INIT;
			if (tr)
				strbuf_addf(&sb, "(%s if %s else 0.0)", p ? p : "0.5", tr);
			else
				strbuf_addf(&sb, "%s", p ? p : "0.5");
			d->dropout_p = sb.buf;
			free_args(args, na);
			if (!ok)
				rc = patch_fail(why, "%s:%d: a dropout of another form", f->rel,
				                i + 1);
		} else if (state == 2 && !match_matmul(r, &a, &b) && !strcmp(a, d->a_name) &&
		           ident(b)) {
			d->v = b, b = NULL;
			strcpy(d->y_name, st.name);
			state = 3;
		} else {
			took = 0;
			if (state == 1 && d->mask_def < 0 && is_causal_def(r))
				d->mask_def = i; /* checked against the mask's name below */
			else if (state == 0 || state == 3 ||
			         (d->s_name[0] && !strcmp(st.name, d->s_name)) ||
			         (d->a_name[0] && !strcmp(st.name, d->a_name)))
				rc = patch_fail(why,
				                "%s:%d is not part of the attention pattern: %s",
				                f->rel, i + 1, s + st.ind);
			else if ((d->s_name[0] && count_word_in(r, d->s_name)) ||
			         (d->a_name[0] && count_word_in(r, d->a_name)))
				rc = patch_fail(
				    why, "%s:%d reads the scores in the middle of the pattern",
				    f->rel, i + 1);
			/* else another statement between: kept where it is */
		}
		if (took && d->nlines < 8)
			d->lines[d->nlines++] = i;
		free(a);
		free(b);
		free(st.rhs);
	}
	if (!rc && state != 3)
		rc = patch_fail(why, "the lines do not end in softmax(q @ k^T) @ v");
	if (!rc && d->mask_def >= 0) {
		struct stmt st;
		stmt_parse(f->L.l[d->mask_def], &st);
		d->causal = d->mask && !strcmp(st.name, d->mask);
		if (!d->causal)
			d->mask_def = -1;
		free(st.rhs);
	}
	return rc;
}

/* Are names read after line hi (until the function ends or they are assigned again)? */
static int read_later(struct pfile *f, int hi, int ind, const char *const *names, int nn,
                      struct strbuf *why)
{
	int live[4] = {1, 1, 1, 1};
	for (int i = hi + 1; i < f->L.n; i++) {
		const char *s = f->L.l[i];
		int k = strspn(s, " \t");
		if (!s[k] || s[k] == '#')
			continue;
		if (k < ind)
			break;
		if (removed(f, i))
			continue;
		struct stmt st;
		int is_asg = !stmt_parse(s, &st);
		for (int j = 0; j < nn; j++) {
			if (!live[j] || !names[j][0])
				continue;
			int n = count_word_in(s, names[j]);
			if (is_asg && !strcmp(st.name, names[j]))
				n--;
			if (n > 0) {
				if (is_asg)
					free(st.rhs);
				return patch_fail(why, "'%s' is read after the attention, at %s:%d",
				                  names[j], f->rel, i + 1);
			}
			if (is_asg && !strcmp(st.name, names[j]) && k == ind)
				live[j] = 0;
		}
		if (is_asg)
			free(st.rhs);
	}
	return 0;
}

/* The lines of a candidate's nodes in one user file: [*lo, *hi]; returns the file or NULL. */
static struct pfile *cand_lines(struct pctx *x, const cJSON *cand, int *lo, int *hi,
                                struct strbuf *why)
{
	const cJSON *it, *grp = cJSON_GetObjectItemCaseSensitive(cand, "group");
	const cJSON *cn = cJSON_GetObjectItemCaseSensitive(grp, "members");
	if (!cJSON_IsArray(cn)) /* the group's own members where it is a run of the finding */
		cn = cJSON_GetObjectItemCaseSensitive(cand, "nodes");
	char *rel = NULL;
	*lo = -1;
	*hi = -1;
	cJSON_ArrayForEach(it, cn)
	{
		const cJSON *nd = cJSON_GetArrayItem(x->nodes, (int)it->valuedouble);
		const cJSON *site = nd ? cJSON_GetObjectItemCaseSensitive(nd, "site") : NULL;
		const cJSON *fl = site ? cJSON_GetObjectItemCaseSensitive(site, "file") : NULL;
		const cJSON *ln = site ? cJSON_GetObjectItemCaseSensitive(site, "line") : NULL;
		if (!cJSON_IsString(fl) || !cJSON_IsNumber(ln) || ln->valuedouble < 1 ||
		    ln->valuedouble > 1e7) {
			free(rel);
			patch_fail(why, "node %d has no source line", (int)it->valuedouble);
			return NULL;
		}
		char *r = patch_user_rel(x, fl->valuestring);
		if (!r || (rel && strcmp(r, rel))) {
			patch_fail(why, r ? "its members were launched from more than one file"
			                  : "a member was launched outside the program's tree");
			free(r);
			free(rel);
			return NULL;
		}
		if (!rel)
			rel = r;
		else
			free(r);
		int l = (int)ln->valuedouble - 1;
		if (*lo < 0 || l < *lo)
			*lo = l;
		if (l > *hi)
			*hi = l;
	}
	if (!rel) {
		patch_fail(why, "no member has a source line");
		return NULL;
	}
	size_t rl = strlen(rel);
	struct pfile *f = rl > 3 && !strcmp(rel + rl - 3, ".py") ? patch_file_get(x, rel) : NULL;
	if (!f)
		patch_fail(why, "cannot read '%s' as Python source under '%s'", rel, x->root);
	else if (*hi >= f->L.n) {
		patch_fail(why, "%s has no line %d", rel, *hi + 1);
		f = NULL;
	}
	free(rel);
	return f;
}

static char *line_dup(const char *ind_src, int ind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static char *line_dup(const char *ind_src, int ind, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_add(&sb, ind_src, ind);
	va_list ap;
	va_start(ap, fmt);
	char buf[2048];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	strbuf_adds(&sb, buf);
	return sb.buf;
}

/* Attention -> torch.nn.functional.scaled_dot_product_attention. */
static int lib_sdpa(struct pctx *x, const cJSON *cand, struct patch_lib *pl, struct strbuf *why)
{
	int lo, hi;
	struct pfile *f = cand_lines(x, cand, &lo, &hi, why);
	if (!f)
		return -1;
	if (hi - lo > 12)
		return patch_fail(why, "its lines %d-%d are too far apart", lo + 1, hi + 1);
	struct sdpa d;
	int rc = sdpa_match(f, lo, hi, &d, why);
	if (!rc && overlaps(f, lo, hi - lo + 1))
		rc = patch_fail(why, "its lines overlap another rewrite");
	const char *names[2] = {d.s_name, strcmp(d.a_name, d.s_name) ? d.a_name : ""};
	int ind = strspn(f->L.l[hi], " \t");
	if (!rc)
		rc = read_later(f, hi, ind, names, 2, why);
	if (!rc && count_word(&f->L, "torch") == 0)
		rc = patch_fail(why, "%s does not import torch", f->rel);
	if (!rc) {
		/* the mask's line goes too when nothing else in the function names it */
		int fa = lo, fb = hi;
		while (fa > 0 && (int)strspn(f->L.l[fa], " \t") >= ind)
			fa--;
		while (fb + 1 < f->L.n && (!f->L.l[fb + 1][strspn(f->L.l[fb + 1], " \t")] ||
		                           (int)strspn(f->L.l[fb + 1], " \t") >= ind))
			fb++;
		int uses = 0;
		for (int i = fa; i <= fb; i++)
			uses += count_word_in(f->L.l[i], d.mask);
		int drop_mask = d.causal && d.mask_def >= 0 && uses == 2;
		struct strbuf call = STRBUF_INIT;
		strbuf_addf(&call, "torch.nn.functional.scaled_dot_product_attention(%s, %s, %s",
		            d.q, d.k, d.v);
		if (d.causal)
			strbuf_adds(&call, ", is_causal=True");
		else if (d.mask)
			strbuf_addf(&call, ", attn_mask=%s", d.mask);
		if (d.dropout_p)
			strbuf_addf(&call, ", dropout_p=%s", d.dropout_p);
		if (d.scale)
			strbuf_addf(&call, ", scale=%s", d.scale);
		strbuf_adds(&call, ")");
		for (int k = 0; k < d.nlines; k++) {
			int i = d.lines[k];
			char **nl = NULL;
			int nn = 0;
			if (i == hi) {
				nl = xmalloc(sizeof(char *) * 2);
				nl[nn++] =
				    line_dup(f->L.l[i], ind,
				             "# aicprof: lines %d-%d (attention written out) "
				             "as one fused kernel",
				             lo + 1, hi + 1);
				nl[nn++] = line_dup(f->L.l[i], ind, "%s = %s", d.y_name, call.buf);
			}
			patch_edit_add(f, i, 1, nl, nn);
		}
		if (drop_mask)
			patch_edit_add(f, d.mask_def, 1, NULL, 0);
		pl->where = xmalloc(strlen(f->rel) + 32);
		sprintf(pl->where, "%s:%d-%d", f->rel, lo + 1, hi + 1);
		struct strbuf w = STRBUF_INIT;
		strbuf_addf(&w, "`%s = %s`%s", d.y_name, call.buf,
		            drop_mask ? " (the causal mask's line, now unread, removed)" : "");
		pl->what = w.buf;
		strbuf_release(&call);
	} else {
		struct strbuf w = STRBUF_INIT;
		strbuf_adds(&w, "call `torch.nn.functional.scaled_dot_product_attention(q, k, v, "
		                "attn_mask=..., dropout_p=..., scale=...)` in place of the lines");
		pl->what = w.buf;
	}
	sdpa_release(&d);
	return rc;
}

/*
 * The optimizer the candidate's kernels belong to, from their names: PyTorch's fused
 * optimizers name their functors (FusedSgdMathFunctor, FusedAdamMathFunctor, fused_adamw);
 * the foreach forms are generic functors, but only Adam's update takes a square root, a lerp
 * (exp_avg) or an addcdiv (PointwiseOpScalarList divides), and SGD's is adds and multiplies
 * alone. "SGD", "Adam" (Adam or AdamW: the source tells which) or NULL unknown.
 */
static const char *optim_of_kernels(const struct pctx *x, const cJSON *cand)
{
	int sgd = 0, adam = 0, generic = 0, n = 0;
	const cJSON *id;
	cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(cand, "nodes"))
	{
		if (!cJSON_IsNumber(id))
			continue;
		const cJSON *nd;
		const char *name = NULL;
		cJSON_ArrayForEach(nd, x->nodes)
		{
			const cJSON *i = cJSON_GetObjectItemCaseSensitive(nd, "id");
			if (cJSON_IsNumber(i) && i->valuedouble == id->valuedouble) {
				const cJSON *fn = cJSON_GetObjectItemCaseSensitive(nd, "full_name");
				const cJSON *sn = cJSON_GetObjectItemCaseSensitive(nd, "name");
				name = cJSON_IsString(fn)   ? fn->valuestring
				       : cJSON_IsString(sn) ? sn->valuestring
				                            : NULL;
				break;
			}
		}
		if (!name)
			continue;
		n++;
		if (strcasestr(name, "sgd"))
			sgd++;
		else if (strcasestr(name, "adam") || strstr(name, "Sqrt") || strstr(name, "Lerp") ||
		         strstr(name, "PointwiseOpScalarListFunctor") ||
		         strstr(name, "addcdiv_cuda_kernel") || strstr(name, "lerp_scalar_kernel"))
			adam++;
		else if (strstr(name, "multi_tensor_apply"))
			generic++;
	}
	if (sgd && !adam)
		return "SGD";
	if (adam && !sgd)
		return "Adam";
	if (n && generic == n) /* adds and multiplies only: SGD (momentum, weight decay) */
		return "SGD";
	return NULL;
}

/* A per-parameter optimizer -> fused=True on its constructor: the program's own optimizer, as
 * its kernels say (SGD or Adam/AdamW; any of them when the kernels do not tell). */
static int lib_fused_optim(struct pctx *x, const cJSON *cand, struct patch_lib *pl,
                           struct strbuf *why)
{
	int lo, hi;
	static const char *const adam[] = {"optim.AdamW", "optim.Adam", "AdamW", "Adam"};
	static const char *const sgd[] = {"optim.SGD", "SGD"};
	static const char *const any[] = {"optim.AdamW", "optim.Adam", "optim.SGD",
	                                  "AdamW",       "Adam",       "SGD"};
	const char *fam = optim_of_kernels(x, cand);
	const char *const *opt = !fam ? any : !strcmp(fam, "SGD") ? sgd : adam;
	size_t nopt = !fam                  ? ARRAY_SIZE(any)
	              : !strcmp(fam, "SGD") ? ARRAY_SIZE(sgd)
	                                    : ARRAY_SIZE(adam);
	const char *label = !fam ? "Adam/AdamW/SGD" : !strcmp(fam, "SGD") ? "SGD" : "Adam/AdamW";
	struct strbuf w = STRBUF_INIT;
	strbuf_addf(&w,
	            "construct the optimizer with `fused=True` (torch.optim.%s: one kernel for "
	            "every parameter's update)",
	            !fam                  ? "AdamW/Adam/SGD"
	            : !strcmp(fam, "SGD") ? "SGD"
	                                  : "AdamW/Adam");
	pl->what = w.buf;
	struct pfile *f = cand_lines(x, cand, &lo, &hi, why);
	if (!f)
		return -1;
	int at = -1, n = 0;
	char found[16] = "";
	for (int i = 0; i < f->L.n; i++) {
		struct stmt st;
		if (stmt_parse(f->L.l[i], &st))
			continue;
		char *a[8];
		int na = call_split(st.rhs, opt, nopt, a, 8);
		if (na >= 1) {
			n++;
			at = i;
			snprintf(found, sizeof(found), "%s",
			         strstr(st.rhs, "AdamW(")  ? "AdamW"
			         : strstr(st.rhs, "Adam(") ? "Adam"
			                                   : "SGD");
			for (int k = 0; k < na; k++)
				if (!strncmp(a[k], "fused=", 6) || !strncmp(a[k], "foreach=", 8) ||
				    !strncmp(a[k], "**", 2))
					at = -2;
			free_args(a, na);
		}
		free(st.rhs);
	}
	if (n != 1)
		return patch_fail(why, "%s has %d one-line %s constructors, not one", f->rel, n,
		                  label);
	if (at == -2)
		return patch_fail(why, "the constructor already sets fused, foreach or **kwargs");
	struct strbuf wf = STRBUF_INIT;
	strbuf_addf(&wf,
	            "construct the optimizer with `fused=True` (torch.optim.%s: one kernel for "
	            "every parameter's update)",
	            found);
	free(pl->what);
	pl->what = wf.buf;
	if (overlaps(f, at, 1))
		return patch_fail(why, "its line overlaps another rewrite");
	const char *s = f->L.l[at];
	const char *rp = strrchr(s, ')');
	struct strbuf sb = STRBUF_INIT;
	strbuf_add(&sb, s, rp - s);
	strbuf_addf(&sb, ", fused=True%s", rp);
	char **nl = xmalloc(sizeof(char *));
	nl[0] = sb.buf;
	patch_edit_add(f, at, 1, nl, 1);
	pl->where = xmalloc(strlen(f->rel) + 32);
	sprintf(pl->where, "%s:%d", f->rel, at + 1);
	return 0;
}

/* A dead statement: "NAME = EXPR" whose NAME nothing else in the file names -> removed. */
static int lib_dead(struct pctx *x, const cJSON *cand, struct patch_lib *pl, struct strbuf *why)
{
	int lo, hi;
	pl->what = xstrdup("remove the statement: what it computes is never read");
	struct pfile *f = cand_lines(x, cand, &lo, &hi, why);
	if (!f)
		return -1;
	if (lo != hi)
		return patch_fail(why, "its kernels come from more than one line");
	struct stmt st;
	if (stmt_parse(f->L.l[lo], &st))
		return patch_fail(why, "%s:%d is not a one-line assignment", f->rel, lo + 1);
	int n = count_word(&f->L, st.name);
	int inplace = 0; /* a method ending in _ (x.add_(...)) writes something that lives on */
	for (const char *c = strstr(st.rhs, "_("); c; c = strstr(c + 1, "_("))
		inplace |= c > st.rhs && is_word_char(c[-1]);
	free(st.rhs);
	if (inplace)
		return patch_fail(why, "%s:%d calls an in-place method", f->rel, lo + 1);
	if (n != 1)
		return patch_fail(why, "'%s' (%s:%d) is named elsewhere in the file", st.name,
		                  f->rel, lo + 1);
	if (overlaps(f, lo, 1))
		return patch_fail(why, "its line overlaps another rewrite");
	/* a block's only statement becomes pass */
	int prev = lo - 1;
	while (prev >= 0 && (!f->L.l[prev][strspn(f->L.l[prev], " \t")] ||
	                     f->L.l[prev][strspn(f->L.l[prev], " \t")] == '#'))
		prev--;
	const char *p = prev >= 0 ? f->L.l[prev] : "";
	size_t pl_len = strlen(p);
	while (pl_len && isspace((unsigned char)p[pl_len - 1]))
		pl_len--;
	if (pl_len && p[pl_len - 1] == ':') {
		char **nl = xmalloc(sizeof(char *));
		nl[0] = line_dup(f->L.l[lo], strspn(f->L.l[lo], " \t"), "pass");
		patch_edit_add(f, lo, 1, nl, 1);
	} else {
		patch_edit_add(f, lo, 1, NULL, 0);
	}
	pl->where = xmalloc(strlen(f->rel) + 32);
	sprintf(pl->where, "%s:%d", f->rel, lo + 1);
	return 0;
}

/* Library forms and dead statements of the summary's candidates, into *libs. */
void patch_lib_all(struct pctx *x, const cJSON *summary, struct patch_lib **libs, int *nlibs)
{
	const cJSON *c, *cands = cJSON_GetObjectItemCaseSensitive(summary, "candidates");
	*libs = NULL;
	*nlibs = 0;
	for (int pass = 0; pass < 2; pass++) {
		cJSON_ArrayForEach(c, cands)
		{
			const cJSON *kind = cJSON_GetObjectItemCaseSensitive(c, "kind");
			const cJSON *lf = cJSON_GetObjectItemCaseSensitive(c, "library_form");
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
			const char *k = cJSON_IsString(kind) ? kind->valuestring : "";
			const char *form = cJSON_IsString(lf) ? lf->valuestring : NULL;
			int dead = !strcmp(k, "dead");
			if ((pass == 0) != dead || (!dead && !form))
				continue;
			*libs = xrealloc(*libs, sizeof(**libs) * (*nlibs + 1));
			struct patch_lib *pl = &(*libs)[(*nlibs)++];
			memset(pl, 0, sizeof(*pl));
			pl->cand = cJSON_IsNumber(id) ? (long)id->valuedouble : -1;
			pl->form = xstrdup(dead ? "dead statement" : form);
			struct strbuf why = STRBUF_INIT;
			int rc;
			if (dead)
				rc = lib_dead(x, c, pl, &why);
			else if (strstr(form, "scaled_dot_product_attention"))
				rc = lib_sdpa(x, c, pl, &why);
			else if (strstr(form, "fused=True"))
				rc = lib_fused_optim(x, c, pl, &why);
			else if (strstr(form, "cuBLASLt")) {
				pl->what = xstrdup("for a 2-D input, "
				                   "`torch._addmm_activation(bias, x, weight.t(), "
				                   "use_gelu=True)` runs the GEMM with cuBLASLt's "
				                   "bias + GELU epilogue "
				                   "(ReLU: use_gelu=False); or keep `F.linear` and "
				                   "let the bias ride "
				                   "in cuBLASLt's epilogue");
				rc = patch_fail(&why,
				                "a GEMM epilogue is not rewritten in the source");
			} else if (strstr(form, "fold")) {
				pl->what =
				    xstrdup("at inference, fold BatchNorm into the convolution: "
				            "`torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)`");
				rc = patch_fail(&why, "folding is not rewritten in the source");
			} else {
				pl->what = xstrdup(form);
				rc = patch_fail(&why, "no rewrite for this library form");
			}
			if (rc)
				pl->advice = why.buf;
			else {
				pl->rewritten = 1;
				strbuf_release(&why);
			}
		}
	}
}
