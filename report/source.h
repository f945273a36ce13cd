/*
 * source.h - the text of the user's source lines, for the report: "train.py:13" becomes the
 * line's text when the file can be read. Files are looked up as given when absolute, else
 * relative to each directory the summary offers (traces[].cwd, then the summary's own
 * directory, then the current directory). Absence is normal: the report still shows file:line.
 * A directory counts only when it may be the program's tree: never "/", a home directory or one
 * above it, a system directory (/usr, /etc, /proc, ...) or a hidden one (see source.c). Only
 * source files (by extension) whose real path lies inside one of those trees are read, and only
 * regular files of at most 8 MiB: a trace cannot make the report read /etc/passwd,
 * ~/.ssh/config.py, ../secrets.py or /dev/zero.
 */
#ifndef AICPROF_REPORT_SOURCE_H
#define AICPROF_REPORT_SOURCE_H

struct srcfile;

struct srccache {
	struct srcfile *files;
	int nr, alloc;
	char **dirs; /* as given, for relative names */
	char **real; /* real[i]: the real path of dirs[i], NULL when it is no tree */
	int nr_dirs, alloc_dirs, nr_real, alloc_real;
};

/* An empty cache with no directories; release with srccache_release(). */
void srccache_init(struct srccache *c);
/*
 * Offers dir as a place to look names up and as a tree of the program; a dir that cannot be
 * the program's tree (see source.c) or cannot be resolved is remembered and never looked in.
 * NULL or "" is ignored.
 */
void srccache_add_dir(struct srccache *c, const char *dir);
void srccache_release(struct srccache *c);

/*
 * Splits "file:line" (at the last colon followed by digits) into a new string *file the caller
 * frees and *line. Returns 0, or -1 (nothing allocated) when loc has no line.
 */
int source_split(const char *loc, char **file, long *line);

/*
 * The text of line (1-based) of file, leading and trailing blanks trimmed, at most 240 bytes;
 * owned by the cache, valid until srccache_release(). NULL when the file cannot be read, is
 * not text, or is shorter, or is not a source file inside the cache's directories (see
 * source.c). Files over 8 MiB are not read. Never fails otherwise.
 */
const char *source_line(struct srccache *c, const char *file, long line);

#endif
