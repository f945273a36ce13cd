/*
 * trace.c - the streaming trace reader: reads a .aicp.jsonl file in large blocks, cuts it into
 * lines with memchr, parses each line with cJSON_ParseWithLengthOpts and hands the record to the
 * graph builder. cJSON's allocations during the read come from a bump arena that is rewound
 * after every line, so a million-line trace costs no malloc per record; the hooks are set back
 * to malloc/free before returning. Memory is one block, the longest line and the arena.
 *
 * The cut: a process that was killed leaves a last line without '\n', or one that does not
 * parse. Such a last line is a warning ("line N cut short") and everything before it counts.
 * Any other line that does not parse is an error naming file and line.
 *
 * Text: a trace is UTF-8. Bytes that are not (a file name in another encoding, damage) are
 * replaced by '?' in place before the line is parsed, with one warning naming the first such
 * line, so every string the outputs carry is valid UTF-8. A line with a NUL byte counts as one
 * that does not parse (cJSON would cut a string at it silently).
 */
#include "analyzer/trace.h"
#include "lib/util.h"

#include <cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static void add_warning(struct trace_info *ti, const char *fmt, long line)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, fmt, line);
	warning_at(ti->path, line, "%s", sb.buf);
	ti->warnings = xrealloc(ti->warnings, sizeof(char *) * (ti->nwarnings + 1));
	ti->warnings[ti->nwarnings++] = sb.buf;
}

static int only_space(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return 0;
	return 1;
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

int trace_read(const char *path, struct builder *b, struct trace_info *ti)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return error("cannot open '%s': %s", path, strerror(errno));
	cJSON_Hooks hooks = {arena_malloc, arena_free};
	cJSON_InitHooks(&hooks);

	size_t cap = 1 << 20, len = 0, pos = 0;
	char *buf = xmalloc(cap);
	int eof = 0, ret = 0, warned_utf8 = 0;
	long line = 0;
	for (;;) {
		char *nl = memchr(buf + pos, '\n', len - pos);
		if (!nl && !eof) {
			/* move the partial line to the front, grow if one line fills the block */
			memmove(buf, buf + pos, len - pos);
			len -= pos;
			pos = 0;
			if (len == cap) {
				cap *= 2;
				buf = xrealloc(buf, cap);
			}
			size_t r = fread(buf + len, 1, cap - len, f);
			if (r == 0) {
				if (ferror(f)) {
					ret = error("cannot read '%s': %s", path, strerror(errno));
					break;
				}
				eof = 1;
			}
			len += r;
			continue;
		}
		if (pos == len)
			break;
		line++;
		char *s = buf + pos;
		size_t n = nl ? (size_t)(nl - s) : len - pos;
		pos += n + (nl ? 1 : 0);
		if (only_space(s, n)) {
			if (!nl)
				break;
			continue;
		}
		/* a NUL byte (cJSON would cut a string at it): as a line that does not parse */
		int nul = memchr(s, 0, n) != NULL;
		if (!nul && utf8_fix(s, n) && !warned_utf8) {
			warned_utf8 = 1;
			add_warning(ti, "invalid UTF-8 replaced by '?' (line %ld is the first)",
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
			int last = !nl;
			if (nl) {
				while (!eof && pos == len) {
					len = pos = 0;
					size_t r = fread(buf, 1, cap, f);
					if (r == 0)
						eof = 1;
					len = r;
				}
				last = eof && only_space(buf + pos, len - pos);
			}
			if (last && line > 1) {
				ti->truncated = 1;
				add_warning(ti,
				            "last line (%ld) cut short; the trace ends before it",
				            line);
				break;
			}
			ret = error_at(path, line,
			               nul        ? "NUL byte in the line"
			               : !rec     ? "not valid JSON"
			               : trailing ? "characters after the record's JSON object"
			                          : "record is not a JSON object");
			break;
		}
		if (!nl && line > 1) {
			/* parses, but no '\n': the writer stopped mid-way; keep it, say so */
			ti->truncated = 1;
			add_warning(ti, "last line (%ld) has no newline; the trace was cut", line);
		}
		ti->records++;
		if (builder_record(b, rec, s, n, line) < 0) {
			ret = -1;
			break;
		}
		if (!nl)
			break;
	}
	free(buf);
	fclose(f);
	cJSON_InitHooks(NULL);
	arena_release();
	return ret;
}
