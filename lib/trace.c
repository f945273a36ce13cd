/*
 * trace.c - THE streaming trace reader (trace.h): opens a path or standard input once, reads
 * it in blocks (through zlib's inflate when it starts with gzip's magic 1f 8b), cuts lines with
 * memchr, parses each with cJSON_ParseWithLengthOpts and hands the record to each consumer that
 * wants its type. cJSON's allocations during the read come from a bump arena that is rewound
 * after every line, so a million-line trace costs no malloc per record; the hooks are set back
 * to malloc/free before returning. Memory is one block (grown to hold the longest line, at most
 * TRACE_MAX_LINE + 2 bytes) and the arena; a line longer than that is an error, so an input
 * without newlines (/dev/zero) is refused after TRACE_MAX_LINE bytes. The search for '\n'
 * resumes where it stopped, so a long line costs one scan however small the reads.
 *
 * The cut: a process that was killed leaves a last line without '\n', or one that does not
 * parse. Such a last line is a warning ("line N cut short") and everything before it counts.
 * Any other line that does not parse is an error naming file and line. Whether a bad line is
 * the last is found by reading on (whitespace only up to the end: the last).
 *
 * Text: a trace is UTF-8. Bytes that are not (a file name in another encoding, damage) are
 * replaced by '?' in place before the line is parsed, with one warning naming the first such
 * line, so every string the outputs carry is valid UTF-8. A line with a NUL byte counts as one
 * that does not parse (cJSON would cut a string at it silently).
 *
 * Skipping: where no consumer wants every type, a line whose type shows in its first bytes
 * (`{"t":"NAME"`) and is wanted by none is skipped without being parsed (the job view's second
 * reader skips allocations and sites this way); any other line is parsed and its type taken
 * from the object.
 */
#include "lib/trace.h"
#include "lib/util.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* The per-line arena: chunks of at least ARENA_CHUNK bytes, rewound (not freed) per line. */
#define ARENA_CHUNK (256 * 1024)
struct chunk {
	struct chunk *next;
	size_t size, used;
	max_align_t data[];
};
static struct chunk *arena_head, *arena_cur;

static void *arena_malloc(size_t n)
{
	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	for (;;) {
		if (arena_cur && arena_cur->used + n <= arena_cur->size) {
			void *p = (char *)arena_cur->data + arena_cur->used;
			arena_cur->used += n;
			return p;
		}
		if (arena_cur && arena_cur->next) {
			arena_cur = arena_cur->next;
			arena_cur->used = 0;
			continue;
		}
		size_t sz = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		struct chunk *c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL; /* cJSON reports the failed parse */
		c->next = NULL;
		c->size = sz;
		c->used = 0;
		if (arena_cur)
			arena_cur->next = c;
		else
			arena_head = c;
		arena_cur = c;
	}
}

static void arena_free(void *p)
{
	(void)p;
}

static void arena_rewind(void)
{
	arena_cur = arena_head;
	if (arena_cur)
		arena_cur->used = 0;
}

static void arena_release(void)
{
	while (arena_head) {
		struct chunk *n = arena_head->next;
		free(arena_head);
		arena_head = n;
	}
	arena_cur = NULL;
}

/* ---------------------------------------------------------------- types */

static const char *const type_names[TRACE_NTYPES] = {
    [TRACE_UNKNOWN] = "unknown",
    [TRACE_HEADER] = "header",
    [TRACE_STR] = "str",
    [TRACE_SITE] = "site",
    [TRACE_LAUNCH] = "launch",
    [TRACE_PROBE] = "probe",
    [TRACE_KERNEL] = "kernel",
    [TRACE_MEMCPY] = "memcpy",
    [TRACE_MEMSET] = "memset",
    [TRACE_COPY] = "copy",
    [TRACE_SET] = "set",
    [TRACE_ALLOC] = "alloc",
    [TRACE_FREE] = "free",
    [TRACE_SYNC] = "sync",
    [TRACE_EVENT_RECORD] = "event_record",
    [TRACE_STREAM_WAIT] = "stream_wait",
    [TRACE_PUSH] = "push",
    [TRACE_POP] = "pop",
    [TRACE_RANGE_START] = "range_start",
    [TRACE_RANGE_END] = "range_end",
    [TRACE_MARK] = "mark",
    [TRACE_NOTE] = "note",
    [TRACE_END] = "end",
    [TRACE_COMM] = "comm",
    [TRACE_COLL] = "coll",
    [TRACE_XLA] = "xla",
    [TRACE_VMM] = "vmm",
    [TRACE_CAPTURE] = "capture",
};

const char *trace_type_name(enum trace_type type)
{
	return (unsigned)type < TRACE_NTYPES ? type_names[type] : type_names[TRACE_UNKNOWN];
}

/* the type named by s[0..n) */
static enum trace_type type_of_n(const char *s, size_t n)
{
	for (int i = 1; i < TRACE_NTYPES; i++)
		if (s[0] == type_names[i][0] && strlen(type_names[i]) == n &&
		    !memcmp(s, type_names[i], n))
			return (enum trace_type)i;
	return TRACE_UNKNOWN;
}

enum trace_type trace_type_of(const char *t)
{
	return t && t[0] ? type_of_n(t, strlen(t)) : TRACE_UNKNOWN;
}

/*
 * The type of a line from its first bytes, without parsing: `{"t":"NAME"` (spaces allowed).
 * Returns 1 and sets *type when the line starts so (NAME unknown: TRACE_UNKNOWN), 0 otherwise.
 */
static int prefix_type(const char *s, size_t n, enum trace_type *type)
{
	size_t i = 0;
#define SKIP_WS()                                                                                  \
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))                             \
	i++
	SKIP_WS();
	if (i >= n || s[i++] != '{')
		return 0;
	SKIP_WS();
	if (n - i < 3 || memcmp(s + i, "\"t\"", 3))
		return 0;
	i += 3;
	SKIP_WS();
	if (i >= n || s[i++] != ':')
		return 0;
	SKIP_WS();
	if (i >= n || s[i++] != '"')
		return 0;
#undef SKIP_WS
	size_t b = i;
	while (i < n && i - b < 32 && s[i] != '"' && s[i] != '\\')
		i++;
	if (i >= n || s[i] != '"')
		return 0; /* an escape, or a name longer than any type's: parse it */
	*type = i > b ? type_of_n(s + b, i - b) : TRACE_UNKNOWN;
	return 1;
}

/* ---------------------------------------------------------------- the byte source */

#define IN_BLOCK (256 * 1024)

struct src {
	const char *path; /* for messages */
	int fd, own_fd, gz, raw_eof;
	int zinit; /* 0: no inflate state; 1: between gzip members; 2: inside one */
	z_stream z;
	unsigned char *in; /* raw bytes: the peeked start, then gzip input */
	size_t inpos, inlen;
};

/* read(2) that retries on EINTR; -1 on error */
static ssize_t read_fd(int fd, void *p, size_t n)
{
	for (;;) {
		ssize_t r = read(fd, p, n);
		if (r >= 0 || errno != EINTR)
			return r;
	}
}

static int src_open(struct src *s, const char *path, const char *name, int quiet)
{
	memset(s, 0, sizeof(*s));
	s->path = name;
	if (!strcmp(path, "-")) {
		s->fd = 0;
	} else {
		s->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (s->fd < 0)
			return quiet ? -1 : error("cannot open '%s': %s", path, strerror(errno));
		s->own_fd = 1;
	}
	s->in = xmalloc(IN_BLOCK);
	/* peek at the first two bytes (a pipe may give one at a time) for gzip's magic */
	while (s->inlen < 2 && !s->raw_eof) {
		ssize_t r = read_fd(s->fd, s->in + s->inlen, IN_BLOCK - s->inlen);
		if (r < 0)
			return quiet ? -1 : error("cannot read '%s': %s", name, strerror(errno));
		if (r == 0)
			s->raw_eof = 1;
		s->inlen += (size_t)r;
	}
	if (s->inlen >= 2 && s->in[0] == 0x1f && s->in[1] == 0x8b) {
		s->gz = 1;
		if (inflateInit2(&s->z, 15 + 16) != Z_OK)
			return quiet ? -1 : error("cannot read '%s': zlib: out of memory", name);
		s->zinit = 1;
	}
	return 0;
}

static void src_close(struct src *s)
{
	if (s->zinit)
		inflateEnd(&s->z);
	if (s->own_fd)
		close(s->fd);
	free(s->in);
}

/* refills s->in when it is used up; -1 on a read error (errno set) */
static int src_fill(struct src *s)
{
	if (s->inpos < s->inlen || s->raw_eof)
		return 0;
	ssize_t r = read_fd(s->fd, s->in, IN_BLOCK);
	if (r < 0)
		return -1;
	s->inpos = 0;
	s->inlen = (size_t)r;
	if (r == 0)
		s->raw_eof = 1;
	return 0;
}

/*
 * Up to n bytes of the trace's text into dst. Returns how many, 0 at its end, or -1 with a
 * message in *why (a static string, or strerror's).
 */
static ssize_t src_read(struct src *s, char *dst, size_t n, const char **why, int *cut)
{
	if (!s->gz) {
		if (s->inpos < s->inlen) { /* the peeked bytes first */
			size_t k = s->inlen - s->inpos < n ? s->inlen - s->inpos : n;
			memcpy(dst, s->in + s->inpos, k);
			s->inpos += k;
			return (ssize_t)k;
		}
		if (s->raw_eof)
			return 0;
		ssize_t r = read_fd(s->fd, dst, n);
		if (r < 0)
			*why = strerror(errno);
		return r;
	}
	for (;;) {
		if (src_fill(s) < 0) {
			*why = strerror(errno);
			return -1;
		}
		if (s->inpos == s->inlen && s->raw_eof) {
			*cut = s->zinit == 2; /* inside a member: the file was cut */
			return 0;
		}
		s->z.next_in = s->in + s->inpos;
		s->z.avail_in = (uInt)(s->inlen - s->inpos);
		s->z.next_out = (unsigned char *)dst;
		s->z.avail_out = (uInt)(n > (1u << 30) ? 1u << 30 : n);
		if (s->zinit == 1 && s->z.avail_in)
			s->zinit = 2; /* inside a member */
		int zr = inflate(&s->z, Z_NO_FLUSH);
		size_t used = (size_t)(s->z.next_in - (s->in + s->inpos));
		size_t out = (size_t)((char *)s->z.next_out - dst);
		s->inpos += used;
		if (zr == Z_STREAM_END) {
			inflateReset(&s->z); /* another member may follow */
			s->zinit = 1;
		} else if (zr != Z_OK && zr != Z_BUF_ERROR) {
			*why = s->z.msg ? s->z.msg : "not a valid gzip stream";
			return -1;
		}
		if (out)
			return (ssize_t)out;
	}
}

/* ---------------------------------------------------------------- the reader */

struct reader {
	const char *name; /* the trace in messages */
	unsigned flags;
	struct trace_stats *st;
	struct src src;
	char *buf;
	size_t cap, len, pos, scan; /* scan: buf[pos..scan) holds no '\n' */
	int eof;
};

static void add_warning(struct reader *rd, const char *fmt, long line)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, fmt, line);
	if (!(rd->flags & TRACE_QUIET_WARNINGS))
		warning_at(rd->name, line, "%s", sb.buf);
	if (!rd->st) {
		strbuf_release(&sb);
		return;
	}
	struct trace_stats *st = rd->st;
	st->warnings = xrealloc(st->warnings, sizeof(char *) * (st->nwarnings + 1));
	st->warnings[st->nwarnings++] = sb.buf;
}

static int fail(struct reader *rd, long line, const char *what, const char *detail)
{
	if ((rd->flags & TRACE_QUIET) == TRACE_QUIET)
		return -1;
	if (detail)
		return error_at(rd->name, line, "%s: %s", what, detail);
	return error_at(rd->name, line, "%s", what);
}

/* reads more text to buf[len..cap-1), keeping a byte free for the line's '\0'; -1 on error */
static int refill(struct reader *rd, long line)
{
	const char *why = NULL;
	int cut = 0;
	ssize_t r = src_read(&rd->src, rd->buf + rd->len, rd->cap - 1 - rd->len, &why, &cut);
	if (r < 0)
		return fail(rd, line, "cannot read the trace", why);
	if (r == 0) {
		rd->eof = 1;
		if (cut && rd->st)
			rd->st->truncated = 1;
		if (cut)
			add_warning(rd, "the compressed trace ends inside a gzip member (line %ld)",
			            line);
	}
	rd->len += (size_t)r;
	return 0;
}

static int only_space(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return 0;
	return 1;
}

/* Whether nothing but whitespace follows buf[pos] to the end of the trace (reads on). */
static int rest_is_space(struct reader *rd, long line)
{
	for (;;) {
		if (!only_space(rd->buf + rd->pos, rd->len - rd->pos))
			return 0;
		if (rd->eof)
			return 1;
		rd->pos = rd->len = rd->scan = 0;
		if (refill(rd, line) < 0)
			return 0;
	}
}

/*
 * Replaces every byte of p[0..n) that is not part of a well-formed UTF-8 sequence (overlong
 * forms, surrogates and code points above U+10FFFF included) by '?'. Returns how many bytes it
 * replaced. ASCII lines cost one pass of a byte test.
 */
static size_t utf8_fix(char *p, size_t n)
{
	unsigned char *s = (unsigned char *)p;
	size_t i = 0, fixed = 0;
	/* ASCII eight bytes at a time, to the first byte with its high bit set */
	for (uint64_t w; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		if (w & 0x8080808080808080ull)
			break;
	}
	while (i < n) {
		unsigned c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t len = c >= 0xC2 && c <= 0xDF   ? 2
		             : c >= 0xE0 && c <= 0xEF ? 3
		             : c >= 0xF0 && c <= 0xF4 ? 4
		                                      : 0;
		int ok = len && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = (s[i + k] & 0xC0) == 0x80;
		if (ok && len == 3)
			ok = !(c == 0xE0 && s[i + 1] < 0xA0) && !(c == 0xED && s[i + 1] >= 0xA0);
		if (ok && len == 4)
			ok = !(c == 0xF0 && s[i + 1] < 0x90) && !(c == 0xF4 && s[i + 1] >= 0x90);
		if (ok) {
			i += len;
			continue;
		}
		s[i++] = '?';
		fixed++;
	}
	return fixed;
}

/*
 * The next line: *s, *n (its text, '\0'-terminated in place), *nl (whether it ended in '\n').
 * Returns 1, 0 at the end of the trace, -1 after an error.
 */
static int next_line(struct reader *rd, long line, char **s, size_t *n, int *nl)
{
	for (;;) {
		char *p = memchr(rd->buf + rd->scan, '\n', rd->len - rd->scan);
		if (p || rd->eof) {
			if (rd->pos == rd->len)
				return 0;
			*s = rd->buf + rd->pos;
			*n = p ? (size_t)(p - *s) : rd->len - rd->pos;
			*nl = p != NULL;
			if (*n > TRACE_MAX_LINE)
				break;
			rd->pos += *n + (p ? 1 : 0);
			rd->scan = rd->pos;
			(*s)[*n] = '\0'; /* the '\n', or the byte kept free after the text */
			return 1;
		}
		/* no '\n' in the block: move the partial line to the front, grow, read on */
		size_t part = rd->len - rd->pos;
		if (part > TRACE_MAX_LINE)
			break;
		memmove(rd->buf, rd->buf + rd->pos, part);
		rd->len = rd->scan = part;
		rd->pos = 0;
		if (rd->len + 1 >= rd->cap) {
			size_t cap = rd->cap * 2;
			if (cap > TRACE_MAX_LINE + 2)
				cap = TRACE_MAX_LINE + 2;
			rd->buf = xrealloc(rd->buf, cap);
			rd->cap = cap;
		}
		if (refill(rd, line) < 0)
			return -1;
	}
	char lim[32];
	snprintf(lim, sizeof(lim), "%zu MiB", TRACE_MAX_LINE >> 20);
	return fail(rd, line, "line longer than the limit of a trace line", lim);
}

int trace_read(const char *path, const struct trace_consumer *cons, int ncons,
               struct trace_stats *st, unsigned flags)
{
	struct reader rd = {.name = strcmp(path, "-") ? path : "<stdin>", .flags = flags, .st = st};
	if (src_open(&rd.src, path, rd.name, (flags & TRACE_QUIET) == TRACE_QUIET) < 0) {
		src_close(&rd.src);
		return -1;
	}
	cJSON_Hooks hooks = {arena_malloc, arena_free};
	cJSON_InitHooks(&hooks);
	rd.cap = 1 << 20;
	rd.buf = xmalloc(rd.cap);
	char *done = xcalloc(ncons ? (size_t)ncons : 1, 1);
	int live = ncons, ret = 0, warned_utf8 = 0;
	long line = 0;
	while (live > 0) {
		unsigned long long want = 0;
		for (int i = 0; i < ncons; i++)
			if (!done[i])
				want |= cons[i].want;
		char *s = NULL;
		size_t n = 0;
		int nl = 0;
		int got = next_line(&rd, line + 1, &s, &n, &nl);
		if (got <= 0) {
			ret = got;
			break;
		}
		line++;
		if (only_space(s, n)) {
			if (!nl)
				break;
			continue;
		}
		enum trace_type type;
		if (want != TRACE_ALL && prefix_type(s, n, &type) && !(want & TRACE_BIT(type))) {
			if (!nl)
				break;
			continue;
		}
		/* a NUL byte (cJSON would cut a string at it): as a line that does not parse */
		int nul = memchr(s, 0, n) != NULL;
		if (!nul && utf8_fix(s, n) && !warned_utf8) {
			warned_utf8 = 1;
			add_warning(&rd, "invalid UTF-8 replaced by '?' (line %ld is the first)",
			            line);
		}
		arena_rewind();
		const char *end = NULL;
		cJSON *rec = nul ? NULL : cJSON_ParseWithLengthOpts(s, n, &end, 0);
		/* one object a line: characters after it are as bad as a line that does not parse
		 */
		int trailing = rec && end && !only_space(end, (size_t)(s + n - end));
		if (!rec || !cJSON_IsObject(rec) || trailing) {
			/* is this the last line? read on to see whether anything follows */
			int last = !nl || rest_is_space(&rd, line + 1);
			if (last && line > 1) {
				if (st)
					st->truncated = 1;
				add_warning(&rd,
				            "last line (%ld) cut short; the trace ends before it",
				            line);
				break;
			}
			ret = fail(&rd, line,
			           nul        ? "NUL byte in the line"
			           : !rec     ? "not valid JSON"
			           : trailing ? "characters after the record's JSON object"
			                      : "record is not a JSON object",
			           NULL);
			break;
		}
		if (!nl && line > 1) {
			/* parses, but no '\n': the writer stopped mid-way; keep it, say so */
			if (st)
				st->truncated = 1;
			add_warning(&rd, "last line (%ld) has no newline; the trace was cut", line);
		}
		const cJSON *tv = cJSON_GetObjectItemCaseSensitive(rec, "t");
		struct trace_record r = {.t = cJSON_IsString(tv) ? tv->valuestring : NULL,
		                         .obj = rec,
		                         .raw = s,
		                         .rawlen = n,
		                         .line = line};
		r.type = trace_type_of(r.t);
		if (st && r.type == TRACE_CAPTURE &&
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "on")))
			st->capture_ranges++;
		if (st && r.type == TRACE_END) {
			const cJSON *why = cJSON_GetObjectItemCaseSensitive(rec, "reason");
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(
			    cJSON_GetObjectItemCaseSensitive(rec, "dropped"), "records");
			snprintf(st->end_reason, sizeof(st->end_reason), "%s",
			         cJSON_IsString(why) ? why->valuestring : "?");
			st->end_dropped =
			    cJSON_IsNumber(d) && d->valuedouble >= 0 && d->valuedouble < 9e15
			        ? (long)d->valuedouble
			        : -1;
		}
		if (want & TRACE_BIT(r.type)) {
			if (st)
				st->records++;
			for (int i = 0; i < ncons && ret == 0; i++) {
				if (done[i] || !(cons[i].want & TRACE_BIT(r.type)))
					continue;
				int c = cons[i].fn(cons[i].ctx, &r);
				if (c < 0)
					ret = -1;
				else if (c > 0)
					done[i] = 1, live--;
			}
		}
		if (ret < 0 || !nl)
			break;
	}
	free(done);
	free(rd.buf);
	src_close(&rd.src);
	cJSON_InitHooks(NULL);
	arena_release();
	return ret;
}
