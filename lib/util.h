/*
 * util.h - helpers every stage of the aicprof command shares: fatal and recoverable errors in
 * git's style, checked allocation, a growable string buffer, and whole-or-nothing file output.
 *
 * Errors: die() prints "aicprof: fatal: ..." and exits 128; error() prints "aicprof: error: ..."
 * and returns -1; warning() prints and returns; BUG() is for the impossible and aborts.
 * error_at() names the input file and line ("run.aicp.jsonl:1042: kernel record has no 'end'").
 * Messages are lower-case, without a full stop, the subject quoted.
 */
#ifndef AICPROF_UTIL_H
#define AICPROF_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) int error(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void warning(const char *fmt, ...);
__attribute__((format(printf, 3, 4))) int error_at(const char *file, long line, const char *fmt,
                                                   ...);
__attribute__((format(printf, 3, 4))) void warning_at(const char *file, long line, const char *fmt,
                                                      ...);
struct strbuf;
/*
 * error() for a caller that may collect the message instead: appends it to err when err is
 * not NULL, else prints it as error() does. Returns -1.
 */
__attribute__((format(printf, 2, 3))) int error_into(struct strbuf *err, const char *fmt, ...);
__attribute__((noreturn)) void bug_fl(const char *file, int line, const char *fmt, ...);
#define BUG(...) bug_fl(__FILE__, __LINE__, __VA_ARGS__)

/* Quiet mode: warning() prints nothing when set (errors still print). */
extern int util_quiet;

/* Allocation that dies on failure; never returns NULL. xrealloc grows an array of n items. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
#define ALLOC_GROW(arr, nr, alloc)                                                                 \
	do {                                                                                       \
		if ((nr) >= (alloc)) {                                                             \
			(alloc) = (alloc) ? (alloc)*2 : 16;                                        \
			if ((alloc) <= (nr))                                                       \
				(alloc) = (nr) + 1;                                                \
			(arr) = xrealloc((arr), sizeof(*(arr)) * (alloc));                         \
		}                                                                                  \
	} while (0)

/* A growable, always NUL-terminated string. Initialise with STRBUF_INIT; release with
 * strbuf_release(). buf is owned by the strbuf. */
struct strbuf {
	char *buf;
	size_t len, alloc;
};
#define STRBUF_INIT                                                                                \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_adds(struct strbuf *sb, const char *s);
__attribute__((format(printf, 2, 3))) void strbuf_addf(struct strbuf *sb, const char *fmt, ...);
void strbuf_reset(struct strbuf *sb);
void strbuf_release(struct strbuf *sb);
/* Appends s with HTML's five special characters escaped. */
void strbuf_add_html(struct strbuf *sb, const char *s);
/* Appends s as a JSON string literal, quotes included. */
void strbuf_add_json(struct strbuf *sb, const char *s);
/* Appends s for a message on a terminal: control characters (ESC, CR, OSC's BEL, ...), DEL,
 * UTF-8's C1 controls and the backslash as \xNN escapes, everything else as is; at most max
 * bytes of s (to the end of a character), then "...". Text from a trace goes into a message only
 * through this. */
void strbuf_add_esc(struct strbuf *sb, const char *s, size_t max);

/*
 * Writes len bytes to path whole or not at all: to a temporary file beside it under a fresh
 * name created exclusively (mkostemp: nothing planted there is followed), fsync, then rename
 * over path (a symbolic link at path is replaced, never written through). The file gets
 * 0666 & ~umask. Returns 0, or error() (-1) naming the path; on failure path is untouched and
 * the temporary file removed.
 */
int write_file_atomic(const char *path, const void *data, size_t len);

/*
 * write_file_atomic() in pieces, for a file too large to hold in memory: atomic_open()
 * creates the temporary beside path (as write_file_atomic), atomic_write() appends to it,
 * atomic_commit() syncs it and renames it over path. Each returns 0, or error() (-1) naming
 * the path; after a failure later writes do nothing and atomic_commit() removes the
 * temporary and returns -1, leaving path untouched. atomic_commit() must always be called
 * (after a failed atomic_open() too): it releases *af.
 */
struct atomic_file {
	int fd;
	int failed;
	char *tmp, *path;
};
int atomic_open(struct atomic_file *af, const char *path);
int atomic_write(struct atomic_file *af, const void *data, size_t len);
int atomic_commit(struct atomic_file *af);

/*
 * Creates the directory path (its parent must exist) or accepts it when it is already a
 * directory; refuses, with error() (-1), when path is a symbolic link or another file, so a
 * link planted inside an output directory never redirects what is written under it.
 */
int mkdir_nofollow(const char *path);

/* mkdir -p. Returns 0 or error(). */
int mkdir_p(const char *path);

/* Joins dir and name with one '/' into a new string the caller frees. */
char *path_join(const char *dir, const char *name);

/* Human-readable byte count ("1.5 MiB") into buf (at least 32 bytes); returns buf. */
char *fmt_bytes(double bytes, char *buf);

#endif
