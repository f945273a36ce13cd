/*
 * patch-int.h - what patch.c (the diff, the groups' rewrites) and patch-lib.c (the library
 * forms: scaled_dot_product_attention, the fused optimizer, dead statements) share: the
 * program's files as lines with their pending edits, the context of one patch, and the helpers
 * both use. Private to fusion/patch*.c.
 */
#ifndef AICPROF_FUSION_PATCH_INT_H
#define AICPROF_FUSION_PATCH_INT_H

#include "fusion/fusion.h"

#include <cJSON.h>

struct lines {
	char **l; /* without their newline */
	int n;
	int last_nl; /* the file ends with a newline */
};

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

struct pctx {
	const cJSON *nodes; /* summary.json's nodes */
	const char *root;   /* directory the sources are read from */
	const char *cwd;    /* the program's cwd as recorded, or NULL */
	struct pfile *files;
	int nfiles;
};

/* Records an edit of f: old lines [a, a + nold) become nl[0 .. nnew) (owned by f now). */
void patch_edit_add(struct pfile *f, int a, int nold, char **nl, int nnew);

/* The file rel of the program's tree, read once (owned by x); NULL when it cannot be read or
 * its path (links resolved) leaves the tree. */
struct pfile *patch_file_get(struct pctx *x, const char *rel);

/* Whether s is a Python identifier. */
int patch_is_ident(const char *s);

/* A site's file as a path relative to cwd (the caller frees it), or NULL when it is outside
 * the user's tree. */
char *patch_user_rel(const struct pctx *x, const char *file);

/* Appends the formatted reason to why; returns -1. */
int patch_fail(struct strbuf *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The library forms of summary's candidates (patch-lib.c): each candidate with a
 * library_form (scaled_dot_product_attention, fused=True on the optimizer) or a dead statement
 * becomes a patch_lib in *libs (grown; the caller releases them with patch_lib_release), its
 * lines rewritten through x's files where the pattern is safe, else its reason as advice.
 */
void patch_lib_all(struct pctx *x, const cJSON *summary, struct patch_lib **libs, int *nlibs);

#endif
