/*
 * trace.h - THE streaming reader of a trace (.aicp.jsonl, docs/trace-format.md). Every consumer
 * of a trace (the graph builder, the memory plan, the job view's scan, the rank peek) reads it
 * through trace_read(), which hands each record to one or more consumers in one pass.
 *
 * Input: a path, or "-" for standard input; a pipe, a FIFO or a character device read as a
 * stream (the reader never seeks and opens the path once); gzip-compressed when the first two
 * bytes are 1f 8b (members concatenated as gzip(1) writes them). Memory: one block of at most
 * TRACE_MAX_LINE bytes plus the per-line parse arena, never the trace.
 */
#ifndef AICPROF_LIB_TRACE_H
#define AICPROF_LIB_TRACE_H

#include <stddef.h>

struct cJSON;

/* The longest line a trace may have (bytes, without its '\n'): a longer one is an error. */
#define TRACE_MAX_LINE ((size_t)64 << 20)

/* A record's type, from its `t` field, decoded once by the reader. */
enum trace_type {
	TRACE_UNKNOWN, /* no string `t`, or a type this reader does not know */
	TRACE_HEADER,
	TRACE_STR,
	TRACE_SITE,
	TRACE_LAUNCH,
	TRACE_PROBE,
	TRACE_KERNEL,
	TRACE_MEMCPY,
	TRACE_MEMSET,
	TRACE_COPY,
	TRACE_SET,
	TRACE_ALLOC,
	TRACE_FREE,
	TRACE_SYNC,
	TRACE_EVENT_RECORD,
	TRACE_STREAM_WAIT,
	TRACE_PUSH,
	TRACE_POP,
	TRACE_RANGE_START,
	TRACE_RANGE_END,
	TRACE_MARK,
	TRACE_NOTE,
	TRACE_END,
	TRACE_COMM,
	TRACE_COLL,
	TRACE_XLA,
	TRACE_VMM,
	TRACE_CAPTURE, /* a capture range started or stopped (AICPROF_CAPTURE=profiler-api) */
	TRACE_NTYPES
};
#define TRACE_BIT(type) (1ull << (type))
#define TRACE_ALL       (~0ull)

/* One record as a consumer sees it; valid only during the call. */
struct trace_record {
	enum trace_type type;
	const char *t;           /* the `t` string, NULL when absent or not a string */
	const struct cJSON *obj; /* the parsed object (on the reader's arena: copy what you keep) */
	const char *raw;         /* the line's text (invalid UTF-8 replaced by '?') */
	size_t rawlen;           /* raw[rawlen] is '\0' */
	long line;               /* 1-based line number */
};

/*
 * A consumer: fn is called for each record whose type is in want (a TRACE_BIT mask, TRACE_ALL
 * for every record, unknown types included). It returns 0 to go on, 1 when it needs no more
 * records (the read ends when every consumer has said so), or -1 after reporting an error,
 * which ends the read with -1. fn must not keep cJSON objects it creates while called: cJSON
 * allocates from the reader's arena during the read.
 */
struct trace_consumer {
	int (*fn)(void *ctx, const struct trace_record *rec);
	void *ctx;
	unsigned long long want;
};

/* What a read found. warnings: the messages of its warnings, owned by the caller (free each). */
struct trace_stats {
	long records; /* records handed to a consumer */
	int truncated;
	/* the end line, when the read parsed one: its reason ("exit", "cap", "duration", ...; ""
	 * when there was none) and its count of dropped records (dropped.records, -1 when absent)
	 */
	char end_reason[24];
	long end_dropped;
	long capture_ranges; /* capture lines that started a range (AICPROF_CAPTURE) */
	char **warnings;
	int nwarnings;
};

/* trace_read flags */
#define TRACE_QUIET_WARNINGS 1 /* print no warning (a second read of a trace already read) */
#define TRACE_QUIET          3 /* print neither warnings nor errors; still returns -1 on error */

/*
 * Reads the trace at path ("-": standard input) once, in blocks, cutting lines and parsing each
 * with cJSON on a bump arena rewound per line, and hands each record to the consumers in
 * cons[0..ncons) in that order. Lines whose type is wanted by no consumer are skipped, unparsed
 * where the type shows in the line's first bytes (`{"t":"kernel",...`, as the shim writes);
 * with a consumer of TRACE_ALL every line is parsed and checked.
 *
 * Rules (docs/trace-format.md): a line that is not one JSON object, or holds a NUL byte, is an
 * error naming file and line, except as the last line, where it is the cut: a warning, and the
 * read ends before it; a last line that parses but has no '\n' is kept, with a warning; bytes
 * that are not UTF-8 become '?' (one warning); a line longer than TRACE_MAX_LINE is an error.
 * st (may be NULL) receives the counts and warnings. Returns 0, or -1 after an error (printed
 * unless flags has TRACE_QUIET). cJSON's hooks are malloc/free again on return.
 */
int trace_read(const char *path, const struct trace_consumer *cons, int ncons,
               struct trace_stats *st, unsigned flags);

/* The name of a type ("kernel"), "unknown" for TRACE_UNKNOWN; a static string. */
const char *trace_type_name(enum trace_type type);
/* The type of a `t` string; TRACE_UNKNOWN for NULL or a type not in the enum. */
enum trace_type trace_type_of(const char *t);

#endif
