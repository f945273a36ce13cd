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
 * The candidates' library forms (scaled_dot_product_attention, fused=True on the optimizer,
 * dead statements) are rewritten by patch-lib.c through the same files and edits
 * (patch-int.h).
 *
 * Where the summary has function groups, the package aicprof_fused/ (fusion/emit-pkg.c: its
 * __init__.py and the function groups' files) goes beside the program's entry script (the
 * first .py argument of traces[0].program, inside the tree), and the script gets exactly two
 * lines after its last top-level import: "import aicprof_fused" and "aicprof_fused.apply()".
 * Beside the script because Python puts the script's directory first on sys.path; for a
 * script at the top of the tree that is cwd's aicprof_fused/, the candidates' directory, whose
 * Makefile then lists the function groups too. Nothing in a library is edited.
 */
#include "fusion/fusion.h"
#include "fusion/patch-int.h"
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

void patch_edit_add(struct pfile *f, int a, int nold, char **nl, int nnew)
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

int patch_is_ident(const char *s)
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
	int ok = patch_is_ident(t) && strlen(t) < sizeof(p->target);
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
	if (!patch_is_ident(p->func))
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

/* The index of f's last top-level import before its first def or class; -1 when there is
 * none or one spans lines (not placed after safely). */
static int last_import(const struct pfile *f)
{
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
	return last;
}

/* Adds the helper after the file's last top-level import (before its first def or class). */
static int add_helper(struct pfile *f)
{
	if (f->helper)
		return 0;
	int last = last_import(f);
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
	patch_edit_add(f, last + 1, 0, nl, n); /* inserted after the import */
	f->helper = 1;
	return 0;
}

/* ---- one group ---- */

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
struct pfile *patch_file_get(struct pctx *x, const char *rel)
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
char *patch_user_rel(const struct pctx *x, const char *file)
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

int patch_fail(struct strbuf *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int patch_fail(struct strbuf *why, const char *fmt, ...)
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
	/* the group's own members where it is a run of the finding (summary-format.md) */
	const cJSON *grp = cJSON_GetObjectItemCaseSensitive(pg->cand, "group");
	const cJSON *cn = cJSON_GetObjectItemCaseSensitive(grp, "members"), *it;
	if (!cJSON_IsArray(cn))
		cn = cJSON_GetObjectItemCaseSensitive(pg->cand, "nodes");
	if (fgroup_rowed(g))
		return patch_fail(why,
		                  "row groups and chains with per-row inputs are not rewritten "
		                  "in the source (yet)");
	if (fgroup_mapped(g))
		return patch_fail(why, "a group that reads an input through an index map (a "
		                       "transpose, a slice) is not rewritten in the source");
	if (g->ninputs != 1 || g->nwrites != 1)
		return patch_fail(
		    why,
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
			return patch_fail(why, "node %d has no source line", ni);
		}
		char *r = patch_user_rel(x, fl->valuestring);
		if (!r) {
			free(rel);
			return patch_fail(why, "'%s' is outside the program's tree",
			                  fl->valuestring);
		}
		if (rel && strcmp(rel, r)) {
			free(r);
			free(rel);
			return patch_fail(why, "its members were launched from more than one file");
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
			return patch_fail(
			    why,
			    "its members' lines are not one consecutive statement each "
			    "(%s:%d)",
			    fl->valuestring, l + 1);
		}
		nlines++;
	}
	if (!rel || nlines < 1)
		return patch_fail(why, "no member has a source line");
	size_t rl = strlen(rel);
	if (rl < 3 || strcmp(rel + rl - 3, ".py")) {
		patch_fail(why, "'%s' is not Python source", rel);
		free(rel);
		return -1;
	}
	struct pfile *f = NULL;
	char *full = path_join(x->root, rel);
	int exists = access(full, F_OK) == 0;
	free(full);
	if (exists && !inside_tree(x->root, rel)) {
		patch_fail(why, "'%s' leads outside the program's tree through a link", rel);
		free(rel);
		return -1;
	}
	f = patch_file_get(x, rel);
	if (!f) {
		patch_fail(why, "cannot read '%s' under '%s'", rel, x->root);
		free(rel);
		return -1;
	}
	free(rel);
	if (line0 + nlines > f->L.n)
		return patch_fail(why, "%s has no line %d", f->rel, line0 + nlines);
	for (int e = 0; e < f->ne; e++)
		if (line0 < f->e[e].a + f->e[e].nold && f->e[e].a < line0 + nlines)
			return patch_fail(why, "its lines overlap another rewrite");
	struct pyline pl[16];
	if (nlines > 16)
		return patch_fail(why, "more than 16 lines");
	int np = 0, rc = 0;
	struct strbuf guard = STRBUF_INIT;
	const char *in = NULL;
	int ndrop = 0;
	for (int i = 0; i < nlines && !rc; i++) {
		const char *s = f->L.l[line0 + i];
		if (pyline_parse(s, &pl[np])) {
			rc = patch_fail(
			    why, "%s:%d is not a simple assignment of one functional call: %s",
			    f->rel, line0 + i + 1, s);
			break;
		}
		struct pyline *p = &pl[np++];
		int known = 0;
		for (size_t k = 0; k < ARRAY_SIZE(unary_ok); k++)
			known |= !strcmp(p->func, unary_ok[k]);
		const char *a0 = pyarg(p, 0, "input");
		if (!known || !a0 || !patch_is_ident(a0)) {
			rc = patch_fail(why, "%s:%d: '%s(...)' is not a call the patch rewrites",
			                f->rel, line0 + i + 1, p->func);
			break;
		}
		if (i == 0)
			in = a0;
		else if (strcmp(a0, pl[i - 1].target))
			rc = patch_fail(why, "%s:%d reads '%s', not the line before's '%s'", f->rel,
			                line0 + i + 1, a0, pl[i - 1].target);
		if (i && strcmp(p->indent, pl[0].indent))
			rc = patch_fail(why, "%s:%d is indented otherwise", f->rel, line0 + i + 1);
		if (!strcmp(p->func, "gelu")) {
			const char *ap = pyarg(p, 1, "approximate");
			if (p->nargs > 1 && !(ap && !strcmp(ap, "'none'")))
				rc = patch_fail(why, "%s:%d: gelu with another form", f->rel,
				                line0 + i + 1);
		} else if (!strcmp(p->func, "dropout")) {
			const char *pp = pyarg(p, 1, "p"), *tr = pyarg(p, 2, "training");
			const char *ip = pyarg(p, 3, "inplace");
			if (ip && strcmp(ip, "False"))
				rc = patch_fail(why, "%s:%d: an in-place dropout", f->rel,
				                line0 + i + 1);
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
			rc = patch_fail(why, "%s:%d: '%s' with more arguments", f->rel,
			                line0 + i + 1, p->func);
		}
	}
	if (!rc && ndrop != g->ndrop)
		rc = patch_fail(why, "the lines have %d dropouts, the group %d", ndrop, g->ndrop);
	if (!rc && add_helper(f))
		rc = patch_fail(why, "%s: no top-level imports to place the helper after", f->rel);
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
		patch_edit_add(f, line0, nlines, nl, n);
		pg->rewritten = 1;
		pg->where = xmalloc(strlen(f->rel) + 32);
		sprintf(pg->where, "%s:%d-%d", f->rel, line0 + 1, line0 + nlines);
	}
	for (int i = 0; i < np; i++)
		pyline_release(&pl[i]);
	strbuf_release(&guard);
	return rc;
}

static const char *const group_files[] = {
    ".py",      "_binding.cu",    "_kernel.cu",  "_math.h",         "_capi.h",
    "_capi.cu", "_bwd_kernel.cu", "_bwd_math.h", "_bwdc_kernel.cu", "_bwdc_math.h"};

/* dir/Makefile (dir "aicprof_fused" or the package's): every group's C ABI (names[0..n-1])
 * into one library the modules look for. */
static void add_makefile(struct strbuf *sb, const char *dir, const char *const *names, int n)
{
	struct strbuf mk = STRBUF_INIT, rel = STRBUF_INIT;
	strbuf_addf(&mk,
	            "# %s/Makefile - generated by aicprof fuse: builds every fused "
	            "group's C ABI into\n# libaicprof_fused.so, which each group's module "
	            "loads (make -C %s -j ARCH=sm_90).\n"
	            "NVCC ?= nvcc\nARCH ?= sm_90\nSRC :=",
	            dir, dir);
	for (int i = 0; i < n; i++)
		strbuf_addf(&mk, " %s/%s_capi.cu", names[i], names[i]);
	strbuf_adds(&mk, "\nOBJ := $(SRC:.cu=.o)\n\nlibaicprof_fused.so: $(OBJ)\n"
	                 "\t$(NVCC) -shared -o $@ $(OBJ)\n\n"
	                 "%.o: %.cu\n\t$(NVCC) -O3 -arch=$(ARCH) -Xcompiler -fPIC -c -o $@ $<\n\n"
	                 "clean:\n\trm -f libaicprof_fused.so $(OBJ)\n");
	strbuf_addf(&rel, "%s/Makefile", dir);
	diff_new(sb, rel.buf, mk.buf);
	strbuf_release(&mk);
	strbuf_release(&rel);
}

/* Adds the files of group name from src/<name>/ as dst/<name>/; returns 0 or error(). */
static int add_group_files(struct strbuf *sb, const char *src, const char *dst, const char *name)
{
	int rc = 0;
	for (size_t k = 0; k < ARRAY_SIZE(group_files) && !rc; k++) {
		struct strbuf from = STRBUF_INIT, rel = STRBUF_INIT;
		strbuf_addf(&from, "%s/%s/%s%s", src, name, name, group_files[k]);
		strbuf_addf(&rel, "%s/%s/%s%s", dst, name, name, group_files[k]);
		char *text = slurp(from.buf);
		if (!text && !strstr(group_files[k], "_bwd")) /* a backward's, where there is one */
			rc = error("cannot read '%s': %m", from.buf);
		else if (text)
			diff_new(sb, rel.buf, text);
		free(text);
		strbuf_release(&from);
		strbuf_release(&rel);
	}
	return rc;
}

/*
 * The entry script of the summary's program (the first argument ending in .py, inside the
 * tree) with "import aicprof_fused" and "aicprof_fused.apply()" after its imports; *dir is
 * the package's directory relative to cwd (the script's: Python puts the script's directory
 * first on sys.path, so the import finds the package there), a new string. Returns the
 * script's path (owned by x), or NULL with the reason in why and *dir "aicprof_fused".
 */
static const char *add_apply_lines(struct pctx *x, const cJSON *summary, char **dir,
                                   struct strbuf *why)
{
	*dir = xstrdup("aicprof_fused");
	const cJSON *tr =
	    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(summary, "traces"), 0);
	const cJSON *prog = tr ? cJSON_GetObjectItemCaseSensitive(tr, "program") : NULL;
	if (!cJSON_IsString(prog)) {
		patch_fail(why, "the summary does not name the program");
		return NULL;
	}
	char *script = NULL;
	for (const char *p = prog->valuestring; *p && !script;) {
		while (*p == ' ')
			p++;
		const char *e = strchr(p, ' ');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		if (k > 3 && !strncmp(p + k - 3, ".py", 3)) {
			char *tok = xmalloc(k + 1);
			memcpy(tok, p, k);
			tok[k] = 0;
			script = patch_user_rel(x, tok);
			free(tok);
			if (!script) {
				patch_fail(why,
				           "the entry script '%.*s' is outside the program's tree",
				           (int)k, p);
				return NULL;
			}
		}
		p += k;
	}
	if (!script) {
		patch_fail(why, "the program ('%s') names no .py entry script", prog->valuestring);
		return NULL;
	}
	struct pfile *f = patch_file_get(x, script);
	if (!f) {
		patch_fail(why, "cannot read the entry script '%s' inside the tree", script);
		free(script);
		return NULL;
	}
	free(script);
	for (int i = 0; i < f->L.n; i++)
		if (!strcmp(f->L.l[i], "import aicprof_fused")) {
			patch_fail(why, "'%s' imports aicprof_fused already", f->rel);
			return NULL;
		}
	int last = last_import(f);
	if (last < 0) {
		patch_fail(why, "'%s' has no top-level import that the lines can follow", f->rel);
		return NULL;
	}
	char **nl = xmalloc(sizeof(char *) * 2);
	nl[0] = xstrdup("import aicprof_fused");
	nl[1] = xstrdup("aicprof_fused.apply()");
	patch_edit_add(f, last + 1, 0, nl, 2);
	const char *slash = strrchr(f->rel, '/');
	if (slash) {
		free(*dir);
		struct strbuf d = STRBUF_INIT;
		strbuf_addf(&d, "%.*s/aicprof_fused", (int)(slash - f->rel), f->rel);
		*dir = d.buf;
	}
	return f->rel;
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
                int n, const struct pkg_func *pkg, int npkg, char **pkg_where, char **pkg_advice,
                struct patch_lib **libs, int *nlibs)
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
	patch_lib_all(&x, summary, libs, nlibs);
	for (int i = 0; i < n; i++) {
		struct strbuf why = STRBUF_INIT;
		if (rewrite_group(&x, &pg[i], &why))
			pg[i].advice = why.buf;
		else
			strbuf_release(&why);
	}
	for (int i = 0; i < n && !rc; i++)
		rc = add_group_files(&sb, fused, "aicprof_fused", pg[i].g->name);
	/* the package: aicprof_fused/ beside the entry script, and its two lines there */
	char *pdir = NULL, *psrc = path_join(fused, "aicprof_fused");
	const char **names = xcalloc((size_t)(n + npkg + 1), sizeof(char *));
	int nnames = 0, same = 0;
	*pkg_where = *pkg_advice = NULL;
	if (npkg) {
		struct strbuf why = STRBUF_INIT;
		const char *where = add_apply_lines(&x, summary, &pdir, &why);
		if (where)
			*pkg_where = xstrdup(where);
		else
			*pkg_advice = why.buf ? why.buf : xstrdup("?");
		if (where)
			strbuf_release(&why);
		same = !strcmp(pdir, "aicprof_fused");
		char *init = path_join(psrc, "__init__.py"), *text = slurp(init);
		struct strbuf rel = STRBUF_INIT;
		strbuf_addf(&rel, "%s/__init__.py", pdir);
		if (!text && !rc)
			rc = error("cannot read '%s': %m", init);
		else if (text && !rc)
			diff_new(&sb, rel.buf, text);
		free(init);
		free(text);
		strbuf_release(&rel);
		for (int i = 0; i < npkg && !rc; i++)
			if (pkg[i].g)
				rc = add_group_files(&sb, psrc, pdir, pkg[i].g->name);
	}
	for (int i = 0; i < n; i++)
		names[nnames++] = pg[i].g->name;
	for (int i = 0; i < npkg && same; i++)
		if (pkg[i].g)
			names[nnames++] = pkg[i].g->name;
	if (nnames && !rc)
		add_makefile(&sb, "aicprof_fused", names, nnames);
	nnames = 0;
	for (int i = 0; i < npkg && !same; i++)
		if (pkg[i].g)
			names[nnames++] = pkg[i].g->name;
	if (nnames && !rc)
		add_makefile(&sb, pdir, names, nnames);
	free(names);
	free(pdir);
	free(psrc);
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
