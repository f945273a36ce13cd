/*
 * test-trace.c - the one trace reader (lib/trace.c) through its interface: each record's type
 * decoded once (known types, unknown ones, a `t` that is not a string), its raw text
 * '\0'-terminated and its line number; several consumers fed in one pass, each only the types
 * it wants, and the read ending once every consumer has had enough; lines wanted by nobody
 * skipped unparsed (a bad line of such a type is no error); the cut-short last line, NUL bytes
 * and invalid UTF-8; gzip input; and a line over TRACE_MAX_LINE refused naming its line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/trace.h"
#include "lib/util.h"

static char path[64];

static void put(const char *text, size_t n)
{
	snprintf(path, sizeof(path), "/tmp/test-trace.%d", (int)getpid());
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, n, f), n);
	fclose(f);
}

static void put_s(const char *text)
{
	put(text, strlen(text));
}

/* a consumer that logs "type:line:raw;" and stops after `stop` records (0: never) */
struct log {
	struct strbuf sb;
	int n, stop;
};

static int log_rec(void *ctx, const struct trace_record *r)
{
	struct log *l = ctx;
	assert_int_equal(r->raw[r->rawlen], '\0');
	assert_true(cJSON_IsObject(r->obj));
	strbuf_addf(&l->sb, "%s:%ld:%s;", trace_type_name(r->type), r->line, r->raw);
	l->n++;
	return l->stop && l->n >= l->stop ? 1 : 0;
}

static void test_types_and_lines(void **state)
{
	put_s("{\"t\":\"header\",\"format\":1}\n\n"
	      "{\"t\":\"kernel\",\"c\":1}\n"
	      "{ \"t\" : \"alloc\"}\n"
	      "{\"c\":2,\"t\":\"launch\"}\n"
	      "{\"t\":\"new_type\"}\n"
	      "{\"t\":7}\n");
	struct log l = {STRBUF_INIT, 0, 0};
	struct trace_consumer c = {log_rec, &l, TRACE_ALL};
	struct trace_stats st = {0};
	assert_int_equal(trace_read(path, &c, 1, &st, 0), 0);
	assert_string_equal(l.sb.buf, "header:1:{\"t\":\"header\",\"format\":1};"
	                              "kernel:3:{\"t\":\"kernel\",\"c\":1};"
	                              "alloc:4:{ \"t\" : \"alloc\"};"
	                              "launch:5:{\"c\":2,\"t\":\"launch\"};"
	                              "unknown:6:{\"t\":\"new_type\"};"
	                              "unknown:7:{\"t\":7};");
	assert_int_equal(st.records, 6);
	assert_int_equal(st.truncated, 0);
	assert_int_equal(st.nwarnings, 0);
	strbuf_release(&l.sb);
	assert_int_equal(trace_type_of("stream_wait"), TRACE_STREAM_WAIT);
	assert_int_equal(trace_type_of("kern"), TRACE_UNKNOWN);
	assert_int_equal(trace_type_of(NULL), TRACE_UNKNOWN);
	assert_string_equal(trace_type_name(TRACE_COLL), "coll");
	unlink(path);
}

static void test_consumers_masks_and_stop(void **state)
{
	/* line 4 does not parse, but it is an alloc that nobody wants: skipped, no error */
	put_s("{\"t\":\"header\"}\n{\"t\":\"kernel\"}\n{\"t\":\"free\"}\n{\"t\":\"alloc\",x}\n"
	      "{\"t\":\"kernel\"}\n{\"t\":\"push\"}\n");
	struct log a = {STRBUF_INIT, 0, 2}, b = {STRBUF_INIT, 0, 0};
	struct trace_consumer c[2] = {
	    {log_rec, &a, TRACE_BIT(TRACE_KERNEL) | TRACE_BIT(TRACE_HEADER)},
	    {log_rec, &b, TRACE_BIT(TRACE_FREE) | TRACE_BIT(TRACE_PUSH)}};
	assert_int_equal(trace_read(path, c, 2, NULL, TRACE_QUIET), 0);
	assert_string_equal(a.sb.buf, "header:1:{\"t\":\"header\"};kernel:2:{\"t\":\"kernel\"};");
	assert_string_equal(b.sb.buf, "free:3:{\"t\":\"free\"};push:6:{\"t\":\"push\"};");
	strbuf_release(&a.sb);
	strbuf_release(&b.sb);

	/* everyone done after the first record: the bad line 4 is never reached */
	struct log p = {STRBUF_INIT, 0, 1};
	struct trace_consumer one = {log_rec, &p, TRACE_ALL};
	assert_int_equal(trace_read(path, &one, 1, NULL, TRACE_QUIET), 0);
	assert_int_equal(p.n, 1);
	strbuf_release(&p.sb);

	/* with a consumer of every type, the same bad line is an error */
	struct log all = {STRBUF_INIT, 0, 0};
	struct trace_consumer every = {log_rec, &all, TRACE_ALL};
	assert_int_equal(trace_read(path, &every, 1, NULL, TRACE_QUIET), -1);
	assert_int_equal(all.n, 3);
	strbuf_release(&all.sb);
	unlink(path);
}

static int fail_rec(void *ctx, const struct trace_record *r)
{
	return r->type == TRACE_KERNEL ? -1 : 0;
}

static void test_consumer_error_ends_the_read(void **state)
{
	put_s("{\"t\":\"header\"}\n{\"t\":\"kernel\"}\n{\"t\":\"kernel\"}\n");
	struct log l = {STRBUF_INIT, 0, 0};
	struct trace_consumer c[2] = {{fail_rec, NULL, TRACE_ALL}, {log_rec, &l, TRACE_ALL}};
	assert_int_equal(trace_read(path, c, 2, NULL, TRACE_QUIET), -1);
	/* the second consumer saw the header only: the read ended at the first kernel */
	assert_int_equal(l.n, 1);
	strbuf_release(&l.sb);
	unlink(path);
}

static void test_cut_nul_utf8(void **state)
{
	struct log l = {STRBUF_INIT, 0, 0};
	struct trace_consumer c = {log_rec, &l, TRACE_ALL};
	struct trace_stats st = {0};
	/* a last line cut mid-record: a warning, the lines before it count */
	put_s("{\"t\":\"header\"}\n{\"t\":\"kernel\"}\n{\"t\":\"ker");
	assert_int_equal(trace_read(path, &c, 1, &st, TRACE_QUIET), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(st.nwarnings, 1);
	assert_non_null(strstr(st.warnings[0], "last line (3) cut short"));
	free(st.warnings[0]);
	free(st.warnings);

	/* a NUL byte in a middle line is an error, in the last line the cut */
	static const char mid[] = "{\"t\":\"header\"}\n{\"t\":\"ke\0nel\"}\n{\"t\":\"kernel\"}\n";
	put(mid, sizeof(mid) - 1);
	assert_int_equal(trace_read(path, &c, 1, NULL, TRACE_QUIET), -1);
	static const char last[] = "{\"t\":\"header\"}\n{\"t\":\"kernel\"}\0\0\0\n";
	put(last, sizeof(last) - 1);
	memset(&st, 0, sizeof(st));
	assert_int_equal(trace_read(path, &c, 1, &st, TRACE_QUIET), 0);
	assert_int_equal(st.truncated, 1);
	for (int i = 0; i < st.nwarnings; i++)
		free(st.warnings[i]);
	free(st.warnings);

	/* invalid UTF-8 becomes '?', one warning */
	strbuf_release(&l.sb);
	l = (struct log){STRBUF_INIT, 0, 0};
	put_s("{\"t\":\"header\",\"s\":\"a\xff\"}\n{\"t\":\"str\",\"s\":\"\xc0\xaf\"}\n");
	memset(&st, 0, sizeof(st));
	assert_int_equal(trace_read(path, &c, 1, &st, TRACE_QUIET), 0);
	assert_string_equal(l.sb.buf, "header:1:{\"t\":\"header\",\"s\":\"a?\"};"
	                              "str:2:{\"t\":\"str\",\"s\":\"??\"};");
	assert_int_equal(st.nwarnings, 1);
	free(st.warnings[0]);
	free(st.warnings);
	strbuf_release(&l.sb);
	unlink(path);
}

static void test_gzip(void **state)
{
	const char text[] = "{\"t\":\"header\"}\n{\"t\":\"kernel\",\"c\":5}\n";
	/* two members, as `cat a.gz b.gz` makes */
	unsigned char gz[512];
	size_t n = 0;
	for (int m = 0; m < 2; m++) {
		z_stream z = {0};
		assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
		                 Z_OK);
		z.next_in = (unsigned char *)text;
		z.avail_in = (uInt)strlen(text);
		z.next_out = gz + n;
		z.avail_out = (uInt)(sizeof(gz) - n);
		assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
		n = sizeof(gz) - z.avail_out;
		deflateEnd(&z);
	}
	assert_int_equal(gz[0], 0x1f);
	put((const char *)gz, n);
	struct log l = {STRBUF_INIT, 0, 0};
	struct trace_consumer c = {log_rec, &l, TRACE_ALL};
	assert_int_equal(trace_read(path, &c, 1, NULL, TRACE_QUIET), 0);
	assert_string_equal(l.sb.buf,
	                    "header:1:{\"t\":\"header\"};kernel:2:{\"t\":\"kernel\",\"c\":5};"
	                    "header:3:{\"t\":\"header\"};kernel:4:{\"t\":\"kernel\",\"c\":5};");
	strbuf_release(&l.sb);
	/* damaged: an error, not a crash */
	for (size_t i = 12; i < n / 2; i++)
		gz[i] ^= 0xa5;
	put((const char *)gz, n);
	l = (struct log){STRBUF_INIT, 0, 0};
	assert_int_equal(trace_read(path, &c, 1, NULL, TRACE_QUIET), -1);
	strbuf_release(&l.sb);
	unlink(path);
}

static void test_line_limit(void **state)
{
	/* line 2 is TRACE_MAX_LINE + 1 bytes of a JSON string: refused before it is parsed */
	size_t n = TRACE_MAX_LINE + 1;
	const char *head = "{\"t\":\"header\"}\n";
	size_t h = strlen(head);
	char *t = malloc(h + n + 1);
	memcpy(t, head, h);
	memset(t + h, 'a', n);
	memcpy(t + h, "{\"t\":\"note\",\"s\":\"", 17);
	memcpy(t + h + n - 2, "\"}", 2);
	t[h + n] = '\n';
	put(t, h + n + 1);
	struct log l = {STRBUF_INIT, 0, 0};
	struct trace_consumer c = {log_rec, &l, TRACE_ALL};
	assert_int_equal(trace_read(path, &c, 1, NULL, TRACE_QUIET), -1);
	assert_int_equal(l.n, 1);
	strbuf_release(&l.sb);
	/* one byte shorter: read */
	memcpy(t + h + n - 3, "\"}\n", 3);
	put(t, h + n);
	l = (struct log){STRBUF_INIT, 0, 0};
	assert_int_equal(trace_read(path, &c, 1, NULL, TRACE_QUIET), 0);
	assert_int_equal(l.n, 2);
	strbuf_release(&l.sb);
	free(t);
	unlink(path);
	/* a missing file: -1 */
	assert_int_equal(trace_read("/nonexistent/trace", &c, 1, NULL, TRACE_QUIET), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_types_and_lines),
	    cmocka_unit_test(test_consumers_masks_and_stop),
	    cmocka_unit_test(test_consumer_error_ends_the_read),
	    cmocka_unit_test(test_cut_nul_utf8),
	    cmocka_unit_test(test_gzip),
	    cmocka_unit_test(test_line_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
