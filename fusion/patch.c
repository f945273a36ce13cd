/*
 * patch.c - FUSEDDIR/aicprof.patch: a unified diff, relative to the program's working
 * directory (summary.json's traces[0].cwd), that `git apply` accepts. It adds the generated
 * groups' kernel sources and bindings under aicprof_fused/<name>/ and rewrites the user's own
 * source lines that the trace attributed to a generated group's members.
 *
 * A group's lines are rewritten only when the pattern is safe: every member was launched from
 * its own line, the lines are consecutive in one Python file inside the program's tree (a
 * relative path without "..", never site-packages, whose real path with links resolved stays
 * inside the tree; only regular files of at most 8 MiB are read), each line is a simple
 * assignment of one call of torch.nn.functional (gelu, dropout, relu, silu, sigmoid, tanh; as
 * F., nn.functional., torch.nn.functional. or torch.) whose tensor argument is the previous
 * line's target, and the group has one input and one write. The lines become
 *
 *     _aicprof_r = _aicprof_call("c0_gelu_dropout", "torch.bfloat16", h) if GUARD else None
 *     if _aicprof_r is not None:
 *         h = _aicprof_r[0]
 *     else:
 *         <the original lines>
 *
 * where GUARD holds dropout's training flag and p as written (p must equal the group's). The
 * helper _aicprof_call, added once after the file's imports, loads aicprof_fused/<name>/<name>.py
 * by path and returns None (so the original lines run) when the module or its extension cannot
 * load, a tensor is not a contiguous CUDA tensor of the group's dtype, or autograd will need
 * the inputs' gradient (the fused kernels have no backward, and dropout's mask is not written).
 * Anything else is not rewritten: the reason comes back as advice for FUSEDDIR/README.md.
 */
#include "fusion/fusion.h"
#include "lib/file.h"

#include <cJSON.h>
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct lines {
	char **l; /* without their newline */
	int n;
	int last_nl; /* the file ends with a newline */
};

#define SOURCE_MAX (8u << 20)

/* Reads a regular file of at most SOURCE_MAX bytes into lines; -1 for anything else (a FIFO or
 * a device named by a trace must neither block nor stream). */
static int lines_read(const char *path, struct lines *L)
{
	memset(L, 0, sizeof(*L));
	struct strbuf why = STRBUF_INIT; /* the caller says what it could not read */
	size_t size;
	char *s = file_read(path, SOURCE_MAX, &size, &why);
	strbuf_release(&why);
	if (!s)
		return -1;
	L->last_nl = size && s[size - 1] == '\n';
	for (char *p = s; *p;) {
		char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		L->l = xrealloc(L->l, sizeof(char *) * (L->n + 1));
		L->l[L->n] = xmalloc(len + 1);
		memcpy(L->l[L->n], p, len);
		L->l[L->n++][len] = 0;
		p += len + (e ? 1 : 0);
	}
	free(s);
	return 0;
}

static void lines_release(struct lines *L)
{
	for (int i = 0; i < L->n; i++)
		free(L->l[i]);
	free(L->l);
}

/* One edit of a file: old lines [a, a + nold) become the new lines. */
struct edit {
	int a, nold;
	char **nl;
	int nnew;
};

struct pfile {
	char *rel; /* path relative to cwd */
	struct lines L;
	struct edit *e;
	int ne;
	int helper; /* the helper was added */
};

static void edit_add(struct pfile *f, int a, int nold, char **nl, int nnew)
{
	f->e = xrealloc(f->e, sizeof(*f->e) * (f->ne + 1));
	f->e[f->ne++] = (struct edit){a, nold, nl, nnew};
}

static int cmp_edit(const void *x, const void *y)
{
	return ((const struct edit *)x)->a - ((const struct edit *)y)->a;
}

/* Unified diff hunks of f's edits (3 lines of context) into sb. */
static void diff_file(struct strbuf *sb, struct pfile *f)
{
	qsort(f->e, f->ne, sizeof(*f->e), cmp_edit);
	strbuf_addf(sb, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", f->rel, f->rel, f->rel,
	            f->rel);
	int delta = 0;
	for (int i = 0; i < f->ne;) {
		int j = i;
		while (j + 1 < f->ne && f->e[j + 1].a - (f->e[j].a + f->e[j].nold) <= 6)
			j++;
		int os = f->e[i].a - 3 < 0 ? 0 : f->e[i].a - 3;
		int oe = f->e[j].a + f->e[j].nold + 3;
		if (oe > f->L.n)
			oe = f->L.n;
		int nnew = oe - os;
		for (int k = i; k <= j; k++)
			nnew += f->e[k].nnew - f->e[k].nold;
		strbuf_addf(sb, "@@ -%d,%d +%d,%d @@\n", os + 1, oe - os, os + 1 + delta, nnew);
		int at = os;
		for (int k = i; k <= j; k++) {
			for (; at < f->e[k].a; at++)
				strbuf_addf(sb, " %s\n", f->L.l[at]);
			for (int q = 0; q < f->e[k].nold; q++, at++)
				strbuf_addf(sb, "-%s\n", f->L.l[at]);
			for (int q = 0; q < f->e[k].nnew; q++)
				strbuf_addf(sb, "+%s\n", f->e[k].nl[q]);
			delta += f->e[k].nnew - f->e[k].nold;
		}
		for (; at < oe; at++)
			strbuf_addf(sb, " %s\n", f->L.l[at]);
		if (oe == f->L.n && !f->L.last_nl)
			strbuf_adds(sb, "\\ No newline at end of file\n");
		i = j + 1;
	}
}

/* The diff adding file rel (contents text) as a new file. */
static void diff_new(struct strbuf *sb, const char *rel, const char *text)
{
	int n = 0;
	size_t len = strlen(text);
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	int tail = len && text[len - 1] != '\n';
	strbuf_addf(sb, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n",
	            rel, rel, rel);
	if (!len)
		return;
	strbuf_addf(sb, "@@ -0,0 +1,%d @@\n", n + tail);
	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		strbuf_adds(sb, "+");
		strbuf_add(sb, p, k);
		strbuf_adds(sb, "\n");
		p += k + (e ? 1 : 0);
	}
	if (tail)
		strbuf_adds(sb, "\\ No newline at end of file\n");
}

static char *slurp(const char *path)
{
	struct lines L;
	if (lines_read(path, &L))
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < L.n; i++)
		strbuf_addf(&sb, "%s%s", L.l[i], i + 1 < L.n || L.last_nl ? "\n" : "");
	lines_release(&L);
	return sb.buf ? sb.buf : xstrdup("");
}

/* ---- the Python line patterns ---- */

static const char *const prefixes[] = {"torch.nn.functional.", "nn.functional.", "F.", "torch."};

struct pyline {
	char indent[64];
	char target[64];
	char func[32]; /* gelu, dropout, ... */
	char *args[4]; /* positional/keyword arguments as written, owned */
	char *kw[4];   /* keyword name or NULL */
	int nargs;
};

static void pyline_release(struct pyline *p)
{
	for (int i = 0; i < p->nargs; i++) {
		free(p->args[i]);
		free(p->kw[i]);
	}
}

static int is_ident(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

static char *trimdup(const char *a, const char *b)
{
	while (a < b && isspace((unsigned char)*a))
		a++;
	while (b > a && isspace((unsigned char)b[-1]))
		b--;
	char *s = xmalloc(b - a + 1);
	memcpy(s, a, b - a);
	s[b - a] = 0;
	return s;
}

/*
 * Parses "INDENT TARGET = PREFIX.FUNC(ARGS)" with balanced brackets, no strings, comments,
 * semicolons or continuation. Returns 0, or -1 when the line is no such statement.
 */
static int pyline_parse(const char *s, struct pyline *p)
{
	memset(p, 0, sizeof(*p));
	size_t ind = strspn(s, " \t");
	if (ind >= sizeof(p->indent) || strpbrk(s, "#;'\"\\"))
		return -1;
	memcpy(p->indent, s, ind);
	const char *q = s + ind, *eq = strchr(q, '=');
	if (!eq || eq[1] == '=')
		return -1;
	char *t = trimdup(q, eq);
	int ok = is_ident(t) && strlen(t) < sizeof(p->target);
	if (ok)
		strcpy(p->target, t);
	free(t);
	if (!ok)
		return -1;
	q = eq + 1;
	while (isspace((unsigned char)*q))
		q++;
	const char *pre = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes) && !pre; i++)
		if (!strncmp(q, prefixes[i], strlen(prefixes[i])))
			pre = prefixes[i];
	if (!pre)
		return -1;
	q += strlen(pre);
	const char *lp = strchr(q, '(');
	if (!lp || lp - q >= (long)sizeof(p->func))
		return -1;
	memcpy(p->func, q, lp - q);
	p->func[lp - q] = 0;
	if (!is_ident(p->func))
		return -1;
	int depth = 0;
	const char *a = lp + 1, *c;
	for (c = lp + 1; *c; c++) {
		if (*c == '(' || *c == '[' || *c == '{')
			depth++;
		else if ((*c == ')' || *c == ']' || *c == '}') && depth)
			depth--;
		else if ((*c == ',' || *c == ')') && !depth) {
			if (p->nargs == 4)
				return -1;
			char *arg = trimdup(a, c);
			char *e = strchr(arg, '=');
			if (e && e[1] != '=' && e > arg) {
				p->kw[p->nargs] = trimdup(arg, e);
				p->args[p->nargs] = trimdup(e + 1, arg + strlen(arg));
				free(arg);
			} else {
				p->args[p->nargs] = arg;
			}
			if (*p->args[p->nargs] || p->kw[p->nargs])
				p->nargs++;
			else
				free(p->args[p->nargs]);
			a = c + 1;
			if (*c == ')')
				break;
		}
	}
	if (*c != ')')
		return -1;
	for (c++; *c; c++)
		if (!isspace((unsigned char)*c))
			return -1;
	return 0;
}

/* Argument by position pos or keyword kw; NULL when absent. */
static const char *pyarg(const struct pyline *p, int pos, const char *kw)
{
	for (int i = 0; i < p->nargs; i++)
		if (p->kw[i] && !strcmp(p->kw[i], kw))
			return p->args[i];
	if (pos < p->nargs && !p->kw[pos])
		return p->args[pos];
	return NULL;
}

/* The torch dtype spelling of a storage type. */
static const char *torch_dtype(enum fdtype t)
{
	return t == FD_BF16 ? "torch.bfloat16" : t == FD_F16 ? "torch.float16" : "torch.float32";
}

static const char helper_fmt[] =
    "\n\n"
    "# aicprof: fused kernels generated by `aicprof fuse` (aicprof_fused/). _aicprof_call runs\n"
    "# one and returns its writes, or None where it cannot run (the module or its extension\n"
    "# does not load, a tensor is not a contiguous CUDA tensor of its dtype, or autograd needs\n"
    "# a gradient and the group has no backward): then the original code runs. Build the\n"
    "# kernels once with `make -C aicprof_fused` (else each builds with nvcc on first use).\n"
    "_AICPROF = {}\n"
    "\n"
    "\n"
    "def _aicprof_call(name, dtype, *xs):\n"
    "    import importlib.util\n"
    "    import os\n"
    "    import warnings\n"
    "\n"
    "    import torch\n"
    "\n"
    "    f = _AICPROF.get(name, False)\n"
    "    if f is False:\n"
    "        f = None\n"
    "        try:\n"
    "            d = os.path.join(os.path.dirname(os.path.abspath(__file__)), \"%s\",\n"
    "                             \"aicprof_fused\", name)\n"
    "            spec = importlib.util.spec_from_file_location(name, os.path.join(d, name + "
    "\".py\"))\n"
    "            mod = importlib.util.module_from_spec(spec)\n"
    "            spec.loader.exec_module(mod)\n"
    "            f = (getattr(mod, name), getattr(mod, \"HAS_BACKWARD\", False))\n"
    "        except Exception as e:  # noqa: BLE001\n"
    "            warnings.warn(\"aicprof: %%s unavailable (%%s); the original code runs\" %% "
    "(name, e))\n"
    "        _AICPROF[name] = f\n"
    "    if f is None or (torch.is_grad_enabled() and any(x.requires_grad for x in xs)\n"
    "                     and not f[1]):\n"
    "        return None\n"
    "    if any(not x.is_cuda or not x.is_contiguous() or str(x.dtype) != dtype for x in "
    "xs):\n"
    "        return None\n"
    "    try:\n"
    "        return f[0](*xs)\n"
    "    except Exception as e:  # noqa: BLE001\n"
    "        _AICPROF[name] = None\n"
    "        warnings.warn(\"aicprof: %%s failed (%%s); the original code runs\" %% (name, "
    "e))\n"
    "        return None\n";

/* Adds the helper after the file's last top-level import (before its first def or class). */
static int add_helper(struct pfile *f)
{
	if (f->helper)
		return 0;
	int last = -1;
	for (int i = 0; i < f->L.n; i++) {
		const char *s = f->L.l[i];
		if (!strncmp(s, "def ", 4) || !strncmp(s, "class ", 6) || !strncmp(s, "@", 1))
			break;
		if (!strncmp(s, "import ", 7) || !strncmp(s, "from ", 5)) {
			if (strchr(s, '(') || strchr(s, '\\'))
				return -1; /* a multi-line import: not placed safely */
			last = i;
		}
	}
	if (last < 0)
		return -1;
	/* from the file's directory up to cwd */
	struct strbuf up = STRBUF_INIT;
	for (const char *c = f->rel; (c = strchr(c, '/')); c++)
		strbuf_adds(&up, up.len ? "/.." : "..");
	struct strbuf h = STRBUF_INIT;
	strbuf_addf(&h, helper_fmt, up.len ? up.buf : ".");
	strbuf_release(&up);
	int n = 0;
	char **nl = NULL;
	for (char *p = h.buf; *p;) {
		char *e = strchr(p, '\n');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		nl = xrealloc(nl, sizeof(char *) * (n + 1));
		nl[n] = xmalloc(k + 1);
		memcpy(nl[n], p, k);
		nl[n++][k] = 0;
		p += k + (e ? 1 : 0);
	}
	strbuf_release(&h);
	edit_add(f, last + 1, 0, nl, n); /* inserted after the import */
	f->helper = 1;
	return 0;
}

/* ---- one group ---- */

struct pctx {
	const cJSON *nodes; /* summary.json's nodes */
	const char *root;   /* directory the sources are read from */
	const char *cwd;    /* the program's cwd as recorded, or NULL */
	struct pfile *files;
	int nfiles;
};

/* Whether root/rel, links resolved, lies inside root (links resolved). */
static int inside_tree(const char *root, const char *rel)
{
	char *path = path_join(root, rel), rr[PATH_MAX], rp[PATH_MAX];
	int ok = realpath(root, rr) && realpath(path, rp);
	free(path);
	size_t n = ok ? strlen(rr) : 0;
	return ok && !strncmp(rp, rr, n) && (rp[n] == '/' || (n == 1 && rr[0] == '/'));
}

/* The file rel of the program's tree, read once; NULL when it cannot be read or its path
 * (links resolved) leaves the tree: every rewrite, fusion or library form, goes through here. */
static struct pfile *file_get(struct pctx *x, const char *rel)
{
	for (int i = 0; i < x->nfiles; i++)
		if (!strcmp(x->files[i].rel, rel))
			return &x->files[i];
	if (!inside_tree(x->root, rel))
		return NULL;
	char *path = path_join(x->root, rel);
	struct lines L;
	int r = lines_read(path, &L);
	free(path);
	if (r)
		return NULL;
	x->files = xrealloc(x->files, sizeof(*x->files) * (x->nfiles + 1));
	struct pfile *f = &x->files[x->nfiles++];
	memset(f, 0, sizeof(*f));
	f->rel = xstrdup(rel);
	f->L = L;
	return f;
}

/* A site's file as a path relative to cwd, or NULL when it is outside the user's tree. */
static char *user_rel(const struct pctx *x, const char *file)
{
	if (strstr(file, "site-packages") || strstr(file, "dist-packages") || strstr(file, "<"))
		return NULL;
	if (file[0] == '/') {
		size_t n = x->cwd ? strlen(x->cwd) : 0;
		if (!n || strncmp(file, x->cwd, n) || file[n] != '/')
			return NULL;
		file += n + 1;
	}
	if (!strncmp(file, "../", 3) || strstr(file, "/../") || !*file)
		return NULL;
	while (!strncmp(file, "./", 2))
		file += 2;
	return xstrdup(file);
}

static int fail(struct strbuf *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct strbuf *why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	strbuf_adds(why, buf);
	return -1;
}

static const char *const unary_ok[] = {"gelu", "relu", "silu", "sigmoid", "tanh", "dropout"};

/* Rewrites the lines of one generated group, or says why not in *why. */
static int rewrite_group(struct pctx *x, struct patch_group *pg, struct strbuf *why)
{
	const struct fgroup *g = pg->g;
	const cJSON *cn = cJSON_GetObjectItemCaseSensitive(pg->cand, "nodes"), *it;
	if (g->kind != FG_CHAIN)
		return fail(why, "row groups are not rewritten in the source (yet)");
	if (g->ninputs != 1 || g->nwrites != 1)
		return fail(why,
		            "the group has %d inputs and %d writes; only one-in one-out chains "
		            "are rewritten",
		            g->ninputs, g->nwrites);
	char *rel = NULL;
	int line0 = -1, nlines = 0;
	cJSON_ArrayForEach(it, cn)
	{
		/* numbers from summary.json: converted only within range */
		double nv = cJSON_IsNumber(it) ? it->valuedouble : -1;
		int ni = nv >= 0 && nv < INT_MAX ? (int)nv : -1;
		const cJSON *nd = ni >= 0 ? cJSON_GetArrayItem(x->nodes, ni) : NULL;
		const cJSON *site = nd ? cJSON_GetObjectItemCaseSensitive(nd, "site") : NULL;
		const cJSON *fl = site ? cJSON_GetObjectItemCaseSensitive(site, "file") : NULL;
		const cJSON *ln = site ? cJSON_GetObjectItemCaseSensitive(site, "line") : NULL;
		if (!cJSON_IsString(fl) || !cJSON_IsNumber(ln) ||
		    !(ln->valuedouble >= 1 && ln->valuedouble < INT_MAX)) {
			free(rel);
			return fail(why, "node %d has no source line", ni);
		}
		char *r = user_rel(x, fl->valuestring);
		if (!r) {
			free(rel);
			return fail(why, "'%s' is outside the program's tree", fl->valuestring);
		}
		if (rel && strcmp(rel, r)) {
			free(r);
			free(rel);
			return fail(why, "its members were launched from more than one file");
		}
		if (!rel)
			rel = r;
		else
			free(r);
		int l = (int)ln->valuedouble - 1;
		if (line0 < 0)
			line0 = l;
		if (l != line0 + nlines) {
			free(rel);
			return fail(why,
			            "its members' lines are not one consecutive statement each "
			            "(%s:%d)",
			            fl->valuestring, l + 1);
		}
		nlines++;
	}
	if (!rel || nlines < 1)
		return fail(why, "no member has a source line");
	size_t rl = strlen(rel);
	if (rl < 3 || strcmp(rel + rl - 3, ".py")) {
		fail(why, "'%s' is not Python source", rel);
		free(rel);
		return -1;
	}
	struct pfile *f = NULL;
	char *full = path_join(x->root, rel);
	int exists = access(full, F_OK) == 0;
	free(full);
	if (exists && !inside_tree(x->root, rel)) {
		fail(why, "'%s' leads outside the program's tree through a link", rel);
		free(rel);
		return -1;
	}
	f = file_get(x, rel);
	if (!f) {
		fail(why, "cannot read '%s' under '%s'", rel, x->root);
		free(rel);
		return -1;
	}
	free(rel);
	if (line0 + nlines > f->L.n)
		return fail(why, "%s has no line %d", f->rel, line0 + nlines);
	for (int e = 0; e < f->ne; e++)
		if (line0 < f->e[e].a + f->e[e].nold && f->e[e].a < line0 + nlines)
			return fail(why, "its lines overlap another rewrite");
	struct pyline pl[16];
	if (nlines > 16)
		return fail(why, "more than 16 lines");
	int np = 0, rc = 0;
	struct strbuf guard = STRBUF_INIT;
	const char *in = NULL;
	int ndrop = 0;
	for (int i = 0; i < nlines && !rc; i++) {
		const char *s = f->L.l[line0 + i];
		if (pyline_parse(s, &pl[np])) {
			rc =
			    fail(why, "%s:%d is not a simple assignment of one functional call: %s",
			         f->rel, line0 + i + 1, s);
			break;
		}
		struct pyline *p = &pl[np++];
		int known = 0;
		for (size_t k = 0; k < ARRAY_SIZE(unary_ok); k++)
			known |= !strcmp(p->func, unary_ok[k]);
		const char *a0 = pyarg(p, 0, "input");
		if (!known || !a0 || !is_ident(a0)) {
			rc = fail(why, "%s:%d: '%s(...)' is not a call the patch rewrites", f->rel,
			          line0 + i + 1, p->func);
			break;
		}
		if (i == 0)
			in = a0;
		else if (strcmp(a0, pl[i - 1].target))
			rc = fail(why, "%s:%d reads '%s', not the line before's '%s'", f->rel,
			          line0 + i + 1, a0, pl[i - 1].target);
		if (i && strcmp(p->indent, pl[0].indent))
			rc = fail(why, "%s:%d is indented otherwise", f->rel, line0 + i + 1);
		if (!strcmp(p->func, "gelu")) {
			const char *ap = pyarg(p, 1, "approximate");
			if (p->nargs > 1 && !(ap && !strcmp(ap, "'none'")))
				rc = fail(why, "%s:%d: gelu with another form", f->rel,
				          line0 + i + 1);
		} else if (!strcmp(p->func, "dropout")) {
			const char *pp = pyarg(p, 1, "p"), *tr = pyarg(p, 2, "training");
			const char *ip = pyarg(p, 3, "inplace");
			if (ip && strcmp(ip, "False"))
				rc = fail(why, "%s:%d: an in-place dropout", f->rel, line0 + i + 1);
			double gp = -1;
			for (int k = 0, d = 0; k < g->nops; k++)
				if (g->ops[k].drop >= 0 && d++ == ndrop)
					gp = g->ops[k].p;
			ndrop++;
			char lit[32];
			snprintf(lit, sizeof(lit), "%.7g", gp);
			strbuf_addf(&guard, " and (%s) and (%s) == %s", tr ? tr : "True",
			            pp ? pp : "0.5", lit);
		} else if (p->nargs != 1) {
			rc = fail(why, "%s:%d: '%s' with more arguments", f->rel, line0 + i + 1,
			          p->func);
		}
	}
	if (!rc && ndrop != g->ndrop)
		rc = fail(why, "the lines have %d dropouts, the group %d", ndrop, g->ndrop);
	if (!rc && add_helper(f))
		rc = fail(why, "%s: no top-level imports to place the helper after", f->rel);
	if (!rc) {
		const char *ind = pl[0].indent;
		const char *step = strchr(ind, '\t') ? "\t" : "    ";
		int n = 0;
		char **nl = xmalloc(sizeof(char *) * (nlines + 4));
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "%s_aicprof_r = _aicprof_call(\"%s\", \"%s\", %s)%s%s%s", ind,
		            g->name, torch_dtype(g->values[0].dtype), in, guard.len ? " if" : "",
		            guard.len ? guard.buf + 4 : "", guard.len ? " else None" : "");
		nl[n++] = sb.buf;
		sb = (struct strbuf)STRBUF_INIT;
		strbuf_addf(&sb, "%sif _aicprof_r is not None:", ind);
		nl[n++] = sb.buf;
		sb = (struct strbuf)STRBUF_INIT;
		strbuf_addf(&sb, "%s%s%s = _aicprof_r[0]", ind, step, pl[nlines - 1].target);
		nl[n++] = sb.buf;
		sb = (struct strbuf)STRBUF_INIT;
		strbuf_addf(&sb, "%selse:", ind);
		nl[n++] = sb.buf;
		for (int i = 0; i < nlines; i++) {
			sb = (struct strbuf)STRBUF_INIT;
			strbuf_addf(&sb, "%s%s%s", ind, step, f->L.l[line0 + i] + strlen(ind));
			nl[n++] = sb.buf;
		}
		edit_add(f, line0, nlines, nl, n);
		pg->rewritten = 1;
		pg->where = xmalloc(strlen(f->rel) + 32);
		sprintf(pg->where, "%s:%d-%d", f->rel, line0 + 1, line0 + nlines);
	}
	for (int i = 0; i < np; i++)
		pyline_release(&pl[i]);
	strbuf_release(&guard);
	return rc;
}

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
	return is_ident(s);
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
			rc = fail(why, "%s:%d is not a one-line assignment: %s", f->rel, i + 1, s);
			break;
		}
		if (ind < 0)
			ind = st.ind;
		if (st.ind != ind) {
			rc = fail(why, "%s:%d is indented otherwise", f->rel, i + 1);
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
				rc = fail(why, "%s:%d: a mask filled with another value than -inf",
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
				rc = fail(why,
				          "%s:%d: a mask of another form than ~mask or mask == 0",
				          f->rel, i + 1);
			free_args(args, 2);
		} else if (state == 1 && (na = call_split(r, sm, 1, args, 3)) >= 1) {
			int ok =
			    !strcmp(args[0], d->s_name) &&
			    ((na == 2 && (!strcmp(args[1], "dim=-1") || !strcmp(args[1], "-1"))));
			free_args(args, na);
			if (!ok)
				rc = fail(why,
				          "%s:%d: a softmax of another form than (scores, dim=-1)",
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
				rc = fail(why, "%s:%d: a dropout of another form", f->rel, i + 1);
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
				rc = fail(why, "%s:%d is not part of the attention pattern: %s",
				          f->rel, i + 1, s + st.ind);
			else if ((d->s_name[0] && count_word_in(r, d->s_name)) ||
			         (d->a_name[0] && count_word_in(r, d->a_name)))
				rc =
				    fail(why, "%s:%d reads the scores in the middle of the pattern",
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
		rc = fail(why, "the lines do not end in softmax(q @ k^T) @ v");
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
				return fail(why, "'%s' is read after the attention, at %s:%d",
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
	const cJSON *it, *cn = cJSON_GetObjectItemCaseSensitive(cand, "nodes");
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
			fail(why, "node %d has no source line", (int)it->valuedouble);
			return NULL;
		}
		char *r = user_rel(x, fl->valuestring);
		if (!r || (rel && strcmp(r, rel))) {
			fail(why, r ? "its members were launched from more than one file"
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
		fail(why, "no member has a source line");
		return NULL;
	}
	size_t rl = strlen(rel);
	struct pfile *f = rl > 3 && !strcmp(rel + rl - 3, ".py") ? file_get(x, rel) : NULL;
	if (!f)
		fail(why, "cannot read '%s' as Python source under '%s'", rel, x->root);
	else if (*hi >= f->L.n) {
		fail(why, "%s has no line %d", rel, *hi + 1);
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
		return fail(why, "its lines %d-%d are too far apart", lo + 1, hi + 1);
	struct sdpa d;
	int rc = sdpa_match(f, lo, hi, &d, why);
	if (!rc && overlaps(f, lo, hi - lo + 1))
		rc = fail(why, "its lines overlap another rewrite");
	const char *names[2] = {d.s_name, strcmp(d.a_name, d.s_name) ? d.a_name : ""};
	int ind = strspn(f->L.l[hi], " \t");
	if (!rc)
		rc = read_later(f, hi, ind, names, 2, why);
	if (!rc && count_word(&f->L, "torch") == 0)
		rc = fail(why, "%s does not import torch", f->rel);
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
			edit_add(f, i, 1, nl, nn);
		}
		if (drop_mask)
			edit_add(f, d.mask_def, 1, NULL, 0);
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
		         strstr(name, "PointwiseOpScalarListFunctor"))
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
		return fail(why, "%s has %d one-line %s constructors, not one", f->rel, n, label);
	if (at == -2)
		return fail(why, "the constructor already sets fused, foreach or **kwargs");
	struct strbuf wf = STRBUF_INIT;
	strbuf_addf(&wf,
	            "construct the optimizer with `fused=True` (torch.optim.%s: one kernel for "
	            "every parameter's update)",
	            found);
	free(pl->what);
	pl->what = wf.buf;
	if (overlaps(f, at, 1))
		return fail(why, "its line overlaps another rewrite");
	const char *s = f->L.l[at];
	const char *rp = strrchr(s, ')');
	struct strbuf sb = STRBUF_INIT;
	strbuf_add(&sb, s, rp - s);
	strbuf_addf(&sb, ", fused=True%s", rp);
	char **nl = xmalloc(sizeof(char *));
	nl[0] = sb.buf;
	edit_add(f, at, 1, nl, 1);
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
		return fail(why, "its kernels come from more than one line");
	struct stmt st;
	if (stmt_parse(f->L.l[lo], &st))
		return fail(why, "%s:%d is not a one-line assignment", f->rel, lo + 1);
	int n = count_word(&f->L, st.name);
	int inplace = 0; /* a method ending in _ (x.add_(...)) writes something that lives on */
	for (const char *c = strstr(st.rhs, "_("); c; c = strstr(c + 1, "_("))
		inplace |= c > st.rhs && is_word_char(c[-1]);
	free(st.rhs);
	if (inplace)
		return fail(why, "%s:%d calls an in-place method", f->rel, lo + 1);
	if (n != 1)
		return fail(why, "'%s' (%s:%d) is named elsewhere in the file", st.name, f->rel,
		            lo + 1);
	if (overlaps(f, lo, 1))
		return fail(why, "its line overlaps another rewrite");
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
		edit_add(f, lo, 1, nl, 1);
	} else {
		edit_add(f, lo, 1, NULL, 0);
	}
	pl->where = xmalloc(strlen(f->rel) + 32);
	sprintf(pl->where, "%s:%d", f->rel, lo + 1);
	return 0;
}

/* Library forms and dead statements of the summary's candidates, into *libs. */
static void lib_all(struct pctx *x, const cJSON *summary, struct patch_lib **libs, int *nlibs)
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
				rc = fail(&why, "a GEMM epilogue is not rewritten in the source");
			} else if (strstr(form, "fold")) {
				pl->what =
				    xstrdup("at inference, fold BatchNorm into the convolution: "
				            "`torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)`");
				rc = fail(&why, "folding is not rewritten in the source");
			} else {
				pl->what = xstrdup(form);
				rc = fail(&why, "no rewrite for this library form");
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

static const char *const group_files[] = {
    ".py",     "_binding.cu", "_kernel.cu",     "_math.h",
    "_capi.h", "_capi.cu",    "_bwd_kernel.cu", "_bwd_math.h"};

/* aicprof_fused/Makefile: every group's C ABI into one library the modules look for. */
static void add_makefile(struct strbuf *sb, const struct patch_group *pg, int n)
{
	struct strbuf mk = STRBUF_INIT;
	strbuf_adds(&mk, "# aicprof_fused/Makefile - generated by aicprof fuse: builds every fused "
	                 "group's C ABI into\n# libaicprof_fused.so, which each group's module "
	                 "loads (make -C aicprof_fused -j ARCH=sm_90).\n"
	                 "NVCC ?= nvcc\nARCH ?= sm_90\nSRC :=");
	for (int i = 0; i < n; i++)
		strbuf_addf(&mk, " %s/%s_capi.cu", pg[i].g->name, pg[i].g->name);
	strbuf_adds(&mk, "\nOBJ := $(SRC:.cu=.o)\n\nlibaicprof_fused.so: $(OBJ)\n"
	                 "\t$(NVCC) -shared -o $@ $(OBJ)\n\n"
	                 "%.o: %.cu\n\t$(NVCC) -O3 -arch=$(ARCH) -Xcompiler -fPIC -c -o $@ $<\n\n"
	                 "clean:\n\trm -f libaicprof_fused.so $(OBJ)\n");
	diff_new(sb, "aicprof_fused/Makefile", mk.buf);
	strbuf_release(&mk);
}

void patch_lib_release(struct patch_lib *l, int n)
{
	for (int i = 0; i < n; i++) {
		free(l[i].form);
		free(l[i].what);
		free(l[i].where);
		free(l[i].advice);
	}
	free(l);
}

int patch_write(const char *fused, const cJSON *summary, const char *srcdir, struct patch_group *pg,
                int n, struct patch_lib **libs, int *nlibs)
{
	const cJSON *tr =
	    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(summary, "traces"), 0);
	const cJSON *cwd = tr ? cJSON_GetObjectItemCaseSensitive(tr, "cwd") : NULL;
	struct pctx x = {0};
	x.nodes = cJSON_GetObjectItemCaseSensitive(summary, "nodes");
	x.cwd = cJSON_IsString(cwd) ? cwd->valuestring : NULL;
	x.root = srcdir ? srcdir : ".";
	struct strbuf sb = STRBUF_INIT;
	int rc = 0;
	lib_all(&x, summary, libs, nlibs);
	for (int i = 0; i < n; i++) {
		struct strbuf why = STRBUF_INIT;
		if (rewrite_group(&x, &pg[i], &why))
			pg[i].advice = why.buf;
		else
			strbuf_release(&why);
	}
	for (int i = 0; i < n && !rc; i++) {
		for (size_t k = 0; k < ARRAY_SIZE(group_files); k++) {
			struct strbuf src = STRBUF_INIT, rel = STRBUF_INIT;
			strbuf_addf(&src, "%s/%s/%s%s", fused, pg[i].g->name, pg[i].g->name,
			            group_files[k]);
			strbuf_addf(&rel, "aicprof_fused/%s/%s%s", pg[i].g->name, pg[i].g->name,
			            group_files[k]);
			char *text = slurp(src.buf);
			if (!text && !strstr(group_files[k], "_bwd_"))
				rc = error("cannot read '%s': %m", src.buf);
			else if (text)
				diff_new(&sb, rel.buf, text);
			free(text);
			strbuf_release(&src);
			strbuf_release(&rel);
		}
	}
	if (n && !rc)
		add_makefile(&sb, pg, n);
	for (int i = 0; i < x.nfiles && !rc; i++)
		if (x.files[i].ne)
			diff_file(&sb, &x.files[i]);
	if (!rc && sb.len) {
		char *path = path_join(fused, "aicprof.patch");
		rc = write_file_atomic(path, sb.buf, sb.len);
		free(path);
	}
	for (int i = 0; i < x.nfiles; i++) {
		for (int e = 0; e < x.files[i].ne; e++) {
			for (int q = 0; q < x.files[i].e[e].nnew; q++)
				free(x.files[i].e[e].nl[q]);
			free(x.files[i].e[e].nl);
		}
		free(x.files[i].e);
		free(x.files[i].rel);
		lines_release(&x.files[i].L);
	}
	free(x.files);
	strbuf_release(&sb);
	return rc ? -1 : 0;
}
