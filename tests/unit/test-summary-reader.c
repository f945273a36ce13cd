/*
 * test-summary-reader.c - lib/json.c, lib/file.c, lib/stats.c and lib/summary.c: the getters'
 * three outcomes (ok, missing, wrong type) and int64's range check; the bounded file read and
 * parse with their messages; the median; and the summary reader, which passes the bundled
 * summaries (tests/report/small.json and hostile.json, hand-made minimal ones) and refuses, naming
 * the file and the JSON path, a missing key, a wrong type, a newer format, an out-of-range number,
 * a non-object and a trace given as a summary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/file.h"
#include "lib/json.h"
#include "lib/stats.h"
#include "lib/summary.h"

static char dir[] = "/tmp/aicprof-summary-XXXXXX";

static char *spit(const char *name, const char *text)
{
	char *p = path_join(dir, name);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static void test_getters(void **state)
{
	cJSON *o = cJSON_Parse("{\"n\": 2.5, \"i\": 42, \"big\": 1e300, \"neg\": -3, \"s\": \"x\","
	                       "\"b\": true, \"o\": {}, \"a\": [1]}");
	assert_non_null(o);
	double d = 0;
	int64_t i = 0;
	const char *s = NULL;
	const cJSON *v = NULL;
	int b = 0;
	assert_int_equal(json_get_number(o, "n", &d), JSON_OK);
	assert_true(d == 2.5);
	assert_int_equal(json_get_number(o, "zz", &d), JSON_MISSING);
	assert_int_equal(json_get_number(o, "s", &d), JSON_WRONG_TYPE);
	assert_int_equal(json_get_number(NULL, "n", &d), JSON_MISSING);
	assert_int_equal(json_get_int64(o, "i", 0, 100, &i), JSON_OK);
	assert_int_equal(i, 42);
	assert_int_equal(json_get_int64(o, "i", 0, 41, &i), JSON_OUT_OF_RANGE);
	assert_int_equal(json_get_int64(o, "n", 0, 100, &i), JSON_OUT_OF_RANGE); /* a fraction */
	assert_int_equal(json_get_int64(o, "big", 0, INT64_MAX, &i), JSON_OUT_OF_RANGE);
	assert_int_equal(json_get_int64(o, "neg", 0, 100, &i), JSON_OUT_OF_RANGE);
	assert_int_equal(json_get_int64(o, "s", 0, 100, &i), JSON_WRONG_TYPE);
	assert_int_equal(json_get_int64(o, "zz", 0, 100, &i), JSON_MISSING);
	assert_int_equal(json_get_string(o, "s", &s), JSON_OK);
	assert_string_equal(s, "x");
	assert_int_equal(json_get_string(o, "i", &s), JSON_WRONG_TYPE);
	assert_int_equal(json_get_bool(o, "b", &b), JSON_OK);
	assert_int_equal(b, 1);
	assert_int_equal(json_get_bool(o, "i", &b), JSON_WRONG_TYPE);
	assert_int_equal(json_get_object(o, "o", &v), JSON_OK);
	assert_int_equal(json_get_object(o, "a", &v), JSON_WRONG_TYPE);
	assert_int_equal(json_get_array(o, "a", &v), JSON_OK);
	assert_int_equal(json_get_array(o, "o", &v), JSON_WRONG_TYPE);
	assert_string_equal(json_type_name(json_get(o, "a")), "an array");
	assert_true(jnumd(o, "s", -7) == -7);
	assert_true(json_clamp(o, "big", 1, 0, 10) == 10);
	assert_string_equal(jstrd(o, "i", "none"), "none");
	/* a NaN put in the tree in-process is no number */
	cJSON_AddNumberToObject(o, "nan", 0.0 / 0.0);
	assert_int_equal(json_get_number(o, "nan", &d), JSON_WRONG_TYPE);
	assert_int_equal(json_get_int64(o, "nan", INT64_MIN, INT64_MAX, &i), JSON_OUT_OF_RANGE);
	cJSON_Delete(o);
}

static void test_file_and_parse(void **state)
{
	struct strbuf err = STRBUF_INIT;
	char *p = spit("two.json", "{\n\"a\": 1,\n\"b\": ,\n}\n");
	assert_null(json_parse_file(p, JSON_FILE_MAX, &err));
	char want[512];
	snprintf(want, sizeof(want), "%s:3: not valid JSON", p);
	assert_string_equal(err.buf, want);
	strbuf_reset(&err);
	assert_null(file_read(p, 4, NULL, &err)); /* over the limit */
	assert_non_null(strstr(err.buf, "is larger than 4 bytes"));
	assert_non_null(strstr(err.buf, p));
	strbuf_reset(&err);
	assert_null(file_read(dir, 100, NULL, &err)); /* a directory */
	assert_non_null(strstr(err.buf, "not a regular file"));
	strbuf_reset(&err);
	char *missing = path_join(dir, "none.json");
	assert_null(json_parse_file(missing, 100, &err));
	assert_non_null(strstr(err.buf, "cannot open '"));
	assert_non_null(strstr(err.buf, "none.json"));
	strbuf_reset(&err);
	char *e = spit("empty.json", "");
	size_t len = 99;
	char *text = file_read(e, 100, &len, &err);
	assert_non_null(text);
	assert_int_equal(len, 0);
	assert_int_equal(text[0], 0);
	free(text);
	assert_null(json_parse_file(e, 100, &err));
	assert_non_null(strstr(err.buf, "empty file"));
	unlink(p);
	unlink(e);
	free(p);
	free(e);
	free(missing);
	strbuf_release(&err);
}

static void test_median(void **state)
{
	double a[] = {5, 1, 4, 2, 3};
	assert_true(stats_median(a, 5) == 3);
	double b[] = {4, 1, 3, 2};
	assert_true(stats_median(b, 4) == 2.5);
	assert_true(stats_median(b, 0) == 0);
	double c[] = {10, 0, 20};
	assert_true(stats_quantile(c, 3, 0.5) == 10);
	assert_true(stats_quantile(c, 3, 0.75) == 15);
	assert_true(stats_quantile(c, 3, 2) == 20);
}

/* text as dir/summary.json through summary_read_kind: NULL for refused, the message in *msg */
static cJSON *read_text(const char *text, enum summary_kind kind, struct strbuf *msg)
{
	char *p = spit("summary.json", text);
	strbuf_reset(msg);
	cJSON *j = summary_read_kind(p, kind, msg);
	unlink(p);
	free(p);
	return j;
}

static void refused(const char *text, const char *want)
{
	struct strbuf msg = STRBUF_INIT;
	cJSON *j = read_text(text, SUMMARY_RUN, &msg);
	cJSON_Delete(j);
	if (j)
		strbuf_adds(&msg, " (but accepted)");
	char full[1024];
	snprintf(full, sizeof(full), "'%s/summary.json': %s", dir, want);
	int same = msg.buf && !strcmp(msg.buf, full);
	if (!same)
		print_error("for %s\n got: %s\nwant: %s", text, msg.buf ? msg.buf : "(nothing)",
		            full);
	strbuf_release(&msg);
	assert_true(same);
}

static void test_summary_valid(void **state)
{
	const char *top = getenv("AICPROF_TOP");
	char base[4096];
	snprintf(base, sizeof(base), "%s", top && *top ? top : ".");
	const char *files[] = {"tests/report/small.json", "tests/report/hostile.json"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char *p = path_join(base, files[i]);
		cJSON *j = summary_read(p);
		if (!j)
			fail_msg("'%s' refused", p);
		cJSON_Delete(j);
		free(p);
	}
	struct strbuf msg = STRBUF_INIT;
	cJSON *j = read_text("{\"format\": 1}", SUMMARY_RUN, &msg);
	assert_non_null(j);
	cJSON_Delete(j);
	j = read_text("{\"format\": 1, \"steps\": {\"count\": 3, \"median_us\": 10.5}, \"nodes\": "
	              "[{\"id\": 0, \"count\": 3, \"stream\": 7}], \"edges\": [], \"candidates\": "
	              "[{\"id\": 0, \"kind\": \"elementwise-chain\", \"nodes\": [0]}]}",
	              SUMMARY_RUN, &msg);
	assert_non_null(j);
	cJSON_Delete(j);
	j = read_text("{\"format\": 1, \"steps\": {}, \"colls\": [{\"key\": \"k\"}]}", SUMMARY_RANK,
	              &msg);
	assert_non_null(j);
	cJSON_Delete(j);
	/* a rank summary lacks what a rank summary needs */
	j = read_text("{\"format\": 1, \"steps\": {}}", SUMMARY_RANK, &msg);
	assert_null(j);
	assert_non_null(strstr(msg.buf, "required key colls is missing"));
	strbuf_release(&msg);
}

static void test_summary_refused(void **state)
{
	refused("[]", "not a summary: its top level is an array, not an object");
	refused("7", "not a summary: its top level is a number, not an object");
	refused("{}", "not a summary: no \"format\"");
	refused("{\"format\": \"1\"}",
	        "not a summary: \"format\" must be a positive integer, not a string");
	refused("{\"format\": 1.5}",
	        "not a summary: \"format\" must be a positive integer, not 1.5");
	refused("{\"format\": 99}", "summary format 99 is newer than this aicprof (1)");
	refused("{\"format\": 2, \"nodes\": 5}", "summary format 2 is newer than this aicprof (1)");
	refused("{\"format\": 1, \"nodes\": {}}", "nodes must be an array, not an object");
	refused("{\"format\": 1, \"nodes\": [7]}", "nodes[0] must be an object, not a number");
	refused("{\"format\": 1, \"nodes\": [{\"id\": 1e300}]}",
	        "nodes[0].id must be an integer in [0, 2147483647], not 1e+300");
	refused("{\"format\": 1, \"nodes\": [{\"id\": 0}, {\"id\": 1, \"count\": -3}]}",
	        "nodes[1].count must be an integer in [0, 1000000000000000], not -3");
	refused("{\"format\": 1, \"nodes\": [{\"id\": 0}, {}]}",
	        "required key nodes[1].id is missing");
	refused("{\"format\": 1, \"steps\": {\"median_us\": -1}}",
	        "steps.median_us must be a number in [0, 1e+15], not -1");
	refused("{\"format\": 1, \"steps\": {\"median_us\": \"slow\"}}",
	        "steps.median_us must be a number, not a string");
	refused(
	    "{\"format\": 1, \"candidates\": [{\"id\": 0, \"kind\": \"x\", \"nodes\": [0, 2.5]}]}",
	    "candidates[0].nodes[1] must be an integer in [0, 2147483647], not 2.5");
	refused("{\"format\": 1, \"candidates\": [{\"id\": 0}]}",
	        "required key candidates[0].kind is missing");
	refused("{\"format\": 1, \"edges\": [{\"from\": 0, \"to\": -1}]}",
	        "edges[0].to must be an integer in [0, 2147483647], not -1");
	/* a trace: one header line (valid JSON) and a whole trace (not one JSON value) */
	refused("{\"t\":\"header\",\"format\":1,\"tool\":\"aicprof 0.1.0\",\"pid\":7}\n",
	        "not a summary but a trace record (\"t\": \"header\"); run 'aicprof analyze' on "
	        "the trace");
	refused("{\"t\":\"header\",\"format\":1,\"pid\":7}\n{\"t\":\"kernel\",\"start\":1}\n",
	        "not a summary but a trace (its records have \"t\"); run 'aicprof analyze' on it");
	/* not JSON: the parser's message with the line */
	struct strbuf msg = STRBUF_INIT;
	assert_null(read_text("{\n\"format\": 1,\n,}", SUMMARY_RUN, &msg));
	char want[512];
	snprintf(want, sizeof(want), "%s/summary.json:3: not valid JSON", dir);
	assert_string_equal(msg.buf, want);
	/* one value only: a second after it is no summary */
	assert_null(read_text("{\"format\": 1}\n{\"format\": 1}\n", SUMMARY_RUN, &msg));
	snprintf(want, sizeof(want), "%s/summary.json:2: not valid JSON", dir);
	assert_string_equal(msg.buf, want);
	/* summary_check on a tree made in-process: a NaN is no number */
	cJSON *j = cJSON_Parse("{\"format\": 1, \"steps\": {}}");
	cJSON_AddNumberToObject(cJSON_GetObjectItem(j, "steps"), "median_us", 0.0 / 0.0);
	strbuf_reset(&msg);
	assert_int_equal(summary_check(j, "mem", SUMMARY_RUN, &msg), -1);
	assert_string_equal(msg.buf, "'mem': steps.median_us must be a number, not NaN");
	cJSON_Delete(j);
	strbuf_release(&msg);
}

/* summary_gpu_saved: the GPU findings' kernel savings, a shared node counted once, capped */
static void test_gpu_saved(void **state)
{
	cJSON *j = cJSON_Parse(
	    "{\"candidates\":["
	    "{\"kind\":\"elementwise-chain\",\"time_kind\":\"gpu\",\"kernel_saved_us\":10,"
	    "\"nodes\":[1,2]},"
	    /* shares node 2 with the first: not counted again */
	    "{\"kind\":\"reduction-epilogue\",\"time_kind\":\"gpu\",\"kernel_saved_us\":7,"
	    "\"nodes\":[2,3]},"
	    "{\"kind\":\"attention\",\"time_kind\":\"gpu\",\"kernel_saved_us\":4,"
	    "\"library_form\":\"sdpa\",\"nodes\":[4]},"
	    /* not fusion, a schedule change, host time, no number: none count */
	    "{\"kind\":\"dead\",\"time_kind\":\"gpu\",\"kernel_saved_us\":50,\"nodes\":[9]},"
	    "{\"kind\":\"comm-overlap\",\"time_kind\":\"gpu\",\"kernel_saved_us\":50},"
	    "{\"kind\":\"elementwise-chain\",\"time_kind\":\"host-blocked\","
	    "\"kernel_saved_us\":50},"
	    "{\"kind\":\"elementwise-chain\",\"time_kind\":\"gpu\",\"kernel_saved_us\":\"x\"},"
	    /* node ids out of any range are no node (and no cast out of range) */
	    "{\"kind\":\"elementwise-chain\",\"time_kind\":\"gpu\",\"kernel_saved_us\":1,"
	    "\"nodes\":[1e300,-1,0.5]}]}");
	assert_non_null(j);
	double each[8], lib = -1;
	assert_true(fabs(summary_gpu_saved(j, 1000, &lib, each) - 15) < 1e-9);
	assert_true(fabs(lib - 4) < 1e-9);
	const double want[8] = {10, 0, 4, 0, 0, 0, 0, 1};
	for (int k = 0; k < 8; k++)
		assert_true(each[k] == want[k]);
	/* at most the busy time, the library part at most the sum */
	assert_true(fabs(summary_gpu_saved(j, 3, &lib, NULL) - 3) < 1e-9);
	assert_true(fabs(lib - 3) < 1e-9);
	assert_true(summary_gpu_saved(j, 0, NULL, NULL) == 0);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"candidates\":7}");
	assert_true(summary_gpu_saved(j, 100, &lib, NULL) == 0 && lib == 0);
	cJSON_Delete(j);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_getters),         cmocka_unit_test(test_file_and_parse),
	    cmocka_unit_test(test_median),          cmocka_unit_test(test_summary_valid),
	    cmocka_unit_test(test_summary_refused), cmocka_unit_test(test_gpu_saved),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
