/*
 * util.c - errors, allocation, strbuf and atomic file output for the aicprof command.
 * See util.h for the contracts. Nothing here knows about traces or CUDA.
 */
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int util_quiet;

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "aicprof: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("fatal: ", fmt, ap);
	va_end(ap);
	exit(128);
}

int error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;
	if (util_quiet)
		return;
	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

int error_at(const char *file, long line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "aicprof: error: %s:%ld: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

void warning_at(const char *file, long line, const char *fmt, ...)
{
	va_list ap;
	if (util_quiet)
		return;
	fprintf(stderr, "aicprof: warning: %s:%ld: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void bug_fl(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "aicprof: BUG: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		die("out of memory");
	return d;
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	if (sb->len + extra + 1 <= sb->alloc)
		return;
	size_t want = sb->alloc ? sb->alloc : 64;
	while (want < sb->len + extra + 1)
		want *= 2;
	sb->buf = xrealloc(sb->buf, want);
	sb->alloc = want;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	strbuf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = 0;
}

void strbuf_adds(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	strbuf_grow(sb, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = 0;
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

void strbuf_add_html(struct strbuf *sb, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<':
			strbuf_adds(sb, "&lt;");
			break;
		case '>':
			strbuf_adds(sb, "&gt;");
			break;
		case '&':
			strbuf_adds(sb, "&amp;");
			break;
		case '"':
			strbuf_adds(sb, "&quot;");
			break;
		case '\'':
			strbuf_adds(sb, "&#39;");
			break;
		default:
			strbuf_add(sb, s, 1);
		}
	}
}

void strbuf_add_json(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"':
			strbuf_adds(sb, "\\\"");
			break;
		case '\\':
			strbuf_adds(sb, "\\\\");
			break;
		case '\n':
			strbuf_adds(sb, "\\n");
			break;
		case '\r':
			strbuf_adds(sb, "\\r");
			break;
		case '\t':
			strbuf_adds(sb, "\\t");
			break;
		case '<':
			strbuf_adds(sb, "\\u003c");
			break; /* safe inside <script> */
		case '>':
			strbuf_adds(sb, "\\u003e");
			break;
		case '&':
			strbuf_adds(sb, "\\u0026");
			break;
		default:
			if (*p < 0x20)
				strbuf_addf(sb, "\\u%04x", *p);
			else
				strbuf_add(sb, p, 1);
		}
	}
	strbuf_add(sb, "\"", 1);
}

void strbuf_add_esc(struct strbuf *sb, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	for (; p[i] && (i < max || (p[i] & 0xc0) == 0x80); i++) { /* ends a character */
		int c1 = p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;
		if (p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\' || c1) {
			strbuf_addf(sb, "\\x%02x", p[i]);
			if (c1)
				strbuf_addf(sb, "\\x%02x", p[++i]);
		} else {
			strbuf_add(sb, &p[i], 1);
		}
	}
	if (p[i])
		strbuf_adds(sb, "...");
}

int atomic_open(struct atomic_file *af, const char *path)
{
	/* mkostemp: a fresh name no one could have planted (O_EXCL; a link there is never
	 * followed), and rename() replaces a link at path itself instead of writing through it */
	memset(af, 0, sizeof(*af));
	af->path = xstrdup(path);
	struct strbuf tmp = STRBUF_INIT;
	strbuf_addf(&tmp, "%s.tmp.XXXXXX", path);
	af->tmp = xstrdup(tmp.buf);
	strbuf_release(&tmp);
	af->fd = mkostemp(af->tmp, O_CLOEXEC);
	if (af->fd < 0) {
		error("cannot create '%s': %s", af->tmp, strerror(errno));
		free(af->tmp);
		af->tmp = NULL; /* nothing to remove */
		af->failed = 1;
		return -1;
	}
	mode_t um = umask(0);
	umask(um);
	if (fchmod(af->fd, 0666 & ~um) < 0) {
		error("cannot set the mode of '%s': %s", af->tmp, strerror(errno));
		af->failed = 1;
		return -1;
	}
	return 0;
}

int atomic_write(struct atomic_file *af, const void *data, size_t len)
{
	const char *p = data;
	size_t left = len;
	while (left && !af->failed) {
		ssize_t w = write(af->fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			error("cannot write '%s': %s", af->path,
			      w < 0 ? strerror(errno) : "short write");
			af->failed = 1;
			break;
		}
		p += w;
		left -= (size_t)w;
	}
	return af->failed ? -1 : 0;
}

int atomic_commit(struct atomic_file *af)
{
	if (!af->failed && fsync(af->fd) < 0 && errno != EINVAL) {
		error("cannot sync '%s': %s", af->path, strerror(errno));
		af->failed = 1;
	}
	if (af->fd >= 0)
		close(af->fd);
	if (!af->failed && rename(af->tmp, af->path) < 0) {
		error("cannot rename '%s' to '%s': %s", af->tmp, af->path, strerror(errno));
		af->failed = 1;
	}
	if (af->failed && af->tmp)
		unlink(af->tmp);
	int r = af->failed ? -1 : 0;
	free(af->tmp);
	free(af->path);
	memset(af, 0, sizeof(*af));
	af->fd = -1;
	return r;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	struct atomic_file af;
	if (atomic_open(&af, path) == 0)
		atomic_write(&af, data, len);
	return atomic_commit(&af);
}

int error_into(struct strbuf *err, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (err)
		strbuf_adds(err, buf);
	else
		error("%s", buf);
	return -1;
}

int mkdir_nofollow(const char *path)
{
	if (mkdir(path, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return error("cannot create directory '%s': %s", path, strerror(errno));
	struct stat st;
	if (lstat(path, &st) < 0)
		return error("cannot stat '%s': %s", path, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return error("'%s' is a symbolic link: not writing through it", path);
	if (!S_ISDIR(st.st_mode))
		return error("'%s' exists and is not a directory", path);
	return 0;
}

int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			error("cannot create directory '%s': %s", p, strerror(errno));
			free(p);
			return -1;
		}
		*s = '/';
	}
	int r = 0;
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		r = error("cannot create directory '%s': %s", p, strerror(errno));
	free(p);
	return r;
}

char *path_join(const char *dir, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, dir);
	if (sb.len && sb.buf[sb.len - 1] != '/')
		strbuf_adds(&sb, "/");
	strbuf_adds(&sb, name);
	return sb.buf;
}

char *fmt_bytes(double b, char *buf)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, 32, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
	return buf;
}
