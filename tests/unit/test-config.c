/* test-config.c - the shim's configuration: defaults, each variable, bad values, output paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "preload/config.h"

static const char *env[32][2];
static int nenv;

static const char *lookup(const char *name)
{
	for (int i = 0; i < nenv; i++)
		if (!strcmp(env[i][0], name))
			return env[i][1];
	return NULL;
}

static void set(const char *k, const char *v)
{
	env[nenv][0] = k;
	env[nenv][1] = v;
	nenv++;
}

static int setup(void **state)
{
	(void)state;
	nenv = 0;
	return 0;
}

static void test_defaults(void **state)
{
	(void)state;
	struct config c;
	struct config_msgs m;
	config_load(&c, lookup, &m);
	assert_int_equal(m.n, 0);
	assert_string_equal(c.output, "aicprof.%p.aicp.jsonl");
	assert_int_equal(c.attrib, 1);
	assert_int_equal(c.depth, 4);
	assert_int_equal(c.alloc_backend, -1);
	assert_int_equal(c.max_mb, 2048);
	assert_int_equal(c.writes, WRITES_INFER);
	assert_int_equal(c.args, 1);
	assert_int_equal(c.eager, 0);
	assert_int_equal(c.mux, 1);
	assert_int_equal(c.resolve_shim, 0); /* the analyzer resolves pointers */
	assert_int_equal(c.steps, 100);      /* the step window (stepwin.c) */
	assert_int_equal(c.finalize, 0);     /* CUPTI turned off, not finalized, at a window */
	assert_int_equal(c.pause_activity, 0);
	assert_true(c.steps_s > 1.99 && c.steps_s < 2.01);
}

/* AICPROF_RESOLVE: offline or shim; calibration needs the shim's map whatever it says */
static void test_resolve(void **state)
{
	(void)state;
	struct config c;
	struct config_msgs m;
	set("AICPROF_RESOLVE", "shim");
	config_load(&c, lookup, &m);
	assert_int_equal(m.n, 0);
	assert_int_equal(c.resolve_shim, 1);
	nenv = 0;
	set("AICPROF_RESOLVE", "offline");
	set("AICPROF_WRITES", "probe");
	config_load(&c, lookup, &m);
	assert_int_equal(m.n, 0);
	assert_int_equal(c.resolve_shim, 1);
	nenv = 0;
	set("AICPROF_RESOLVE", "later");
	config_load(&c, lookup, &m);
	assert_int_equal(m.n, 1);
	assert_non_null(strstr(m.msg[0], "AICPROF_RESOLVE"));
	assert_int_equal(c.resolve_shim, 0);
}

/* Under torchrun every worker gets RANK: the default name carries it; AICPROF_OUTPUT wins. */
static void test_rank_default_name(void **state)
{
	(void)state;
	struct config c;
	set("RANK", "3");
	config_load(&c, lookup, NULL);
	assert_string_equal(c.output, "aicprof.rank%r.%p.aicp.jsonl");
	char out[256];
	assert_int_equal(config_output_path(c.output, 42, "3", "h", out, sizeof(out)), 0);
	assert_string_equal(out, "aicprof.rank3.42.aicp.jsonl");
	set("AICPROF_OUTPUT", "mine.%p.jsonl");
	config_load(&c, lookup, NULL);
	assert_string_equal(c.output, "mine.%p.jsonl");
}

static void test_every_variable(void **state)
{
	(void)state;
	set("AICPROF_OUTPUT", "run.%r.jsonl");
	set("AICPROF_ATTRIB", "off");
	set("AICPROF_DEPTH", "7");
	set("AICPROF_ALLOC_BACKEND", "0");
	set("AICPROF_MAX_MB", "10");
	set("AICPROF_DELAY", "2.5");
	set("AICPROF_DURATION", "90");
	set("AICPROF_RANGE", "train");
	set("AICPROF_QUIET", "yes");
	set("AICPROF_WRITES", "probe");
	set("AICPROF_PROBE_COUNT", "5");
	set("AICPROF_EAGER", "true");
	set("AICPROF_ARGS", "0");
	set("AICPROF_CAPTURE", "profiler-api");
	set("AICPROF_PAUSE_BLOCKS", "1");
	set("AICPROF_PAUSE_ACTIVITY", "yes");
	set("AICPROF_FINALIZE", "1");
	set("AICPROF_STEPS", "0");
	set("AICPROF_STEPS_S", "30");
	struct config c;
	struct config_msgs m;
	config_load(&c, lookup, &m);
	assert_int_equal(m.n, 0);
	assert_string_equal(c.output, "run.%r.jsonl");
	assert_int_equal(c.attrib, 0);
	assert_int_equal(c.depth, 7);
	assert_int_equal(c.alloc_backend, 0);
	assert_int_equal(c.max_mb, 10);
	assert_true(c.delay_s > 2.49 && c.delay_s < 2.51);
	assert_true(c.duration_s > 89.9 && c.duration_s < 90.1);
	assert_string_equal(c.range, "train");
	assert_int_equal(c.quiet, 1);
	assert_int_equal(c.writes, WRITES_PROBE);
	assert_int_equal(c.probe_count, 5);
	assert_int_equal(c.eager, 1);
	assert_int_equal(c.args, 0);
	assert_int_equal(c.capture_api, 1);
	assert_int_equal(c.pause_blocks, 1);
	assert_int_equal(c.pause_activity, 1);
	assert_int_equal(c.finalize, 1);
	assert_int_equal(c.steps, 0);
	assert_true(c.steps_s > 29.9 && c.steps_s < 30.1);
}

/* The step window: on by default, in a job of several ranks too (each rank's own), off under
 * AICPROF_CAPTURE=profiler-api whatever AICPROF_STEPS says. */
static void test_step_window_defaults(void **state)
{
	(void)state;
	struct config c;
	set("WORLD_SIZE", "1");
	config_load(&c, lookup, NULL);
	assert_int_equal(c.steps, 100);
	nenv = 0;
	set("WORLD_SIZE", "8");
	config_load(&c, lookup, NULL);
	assert_int_equal(c.steps, 100);
	set("AICPROF_STEPS", "40");
	config_load(&c, lookup, NULL);
	assert_int_equal(c.steps, 40);
	nenv = 0;
	set("AICPROF_STEPS", "40");
	set("AICPROF_CAPTURE", "profiler-api");
	config_load(&c, lookup, NULL);
	assert_int_equal(c.steps, 0);
}

static void test_bad_values_keep_defaults(void **state)
{
	(void)state;
	set("AICPROF_DEPTH", "99");
	set("AICPROF_ATTRIB", "maybe");
	set("AICPROF_MAX_MB", "12abc");
	set("AICPROF_DELAY", "-1");
	set("AICPROF_DURATION", "soon");
	set("AICPROF_WRITES", "always");
	set("AICPROF_OUTPUT", "");
	set("AICPROF_CAPTURE", "cudaProfilerApi");
	set("AICPROF_STEPS", "-3");
	struct config c;
	struct config_msgs m;
	config_load(&c, lookup, &m);
	assert_int_equal(m.n, 9);
	assert_int_equal(c.steps, 100);
	assert_int_equal(c.capture_api, 0);
	assert_int_equal(c.depth, 4);
	assert_int_equal(c.attrib, 1);
	assert_int_equal(c.max_mb, 2048);
	assert_true(c.delay_s == 0);
	assert_true(c.duration_s == 0);
	assert_int_equal(c.writes, WRITES_INFER);
	assert_string_equal(c.output, "aicprof.%p.aicp.jsonl");
	int found = 0;
	for (int i = 0; i < m.n; i++)
		found += strstr(m.msg[i], "AICPROF_DEPTH='99'") && strstr(m.msg[i], "out of range");
	assert_int_equal(found, 1);
}

static void test_long_value_is_refused(void **state)
{
	(void)state;
	static char big[2000];
	memset(big, 'x', sizeof(big) - 1);
	set("AICPROF_OUTPUT", big);
	struct config c;
	struct config_msgs m;
	config_load(&c, lookup, &m);
	assert_int_equal(m.n, 1);
	assert_non_null(strstr(m.msg[0], "too long"));
	assert_string_equal(c.output, "aicprof.%p.aicp.jsonl");
}

static void test_output_path(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(config_output_path("a.%p.%r.%h.%%.%x", 42, "3", "gpu1", out, sizeof(out)),
	                 0);
	assert_string_equal(out, "a.42.3.gpu1.%.%x");
	assert_int_equal(config_output_path("%r", 1, NULL, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "0");
	assert_int_equal(config_output_path("0123456789%p", 123456, NULL, NULL, out, 12), -1);
	assert_int_equal(config_output_path("trailing%", 1, NULL, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "trailing%");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_defaults, setup),
	    cmocka_unit_test_setup(test_resolve, setup),
	    cmocka_unit_test_setup(test_rank_default_name, setup),
	    cmocka_unit_test_setup(test_every_variable, setup),
	    cmocka_unit_test_setup(test_step_window_defaults, setup),
	    cmocka_unit_test_setup(test_bad_values_keep_defaults, setup),
	    cmocka_unit_test_setup(test_long_value_is_refused, setup),
	    cmocka_unit_test_setup(test_output_path, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
