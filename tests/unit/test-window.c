/* test-window.c - the recording window's close through the shim's own CUPTI code (cupti.c,
 * cuptimux.c, the writer and the rings) on the mock CUPTI and mock driver of tests/mock, no GPU:
 * CUPTI's synchronous flush at the close delivers a buffer of kernel records on the writer
 * thread, several rings' worth; the trace must end whole, with reason "duration" and every
 * record, within seconds (before the writer drained its own ring, this waited 200 ms a record),
 * and afterwards aicprof's callbacks and activity kinds are off in the (mock) CUPTI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "preload/base.h"
#include "preload/config.h"
#include "preload/cupti.h"
#include "preload/jbuf.h"
#include "preload/ring.h"
#include "preload/sites.h"
#include "preload/writer.h"

static void *mock;
static int (*mock_cb_enabled)(CUpti_CallbackDomain, CUpti_CallbackId);
static int (*mock_kind_enabled)(CUpti_ActivityKind);
static int (*mock_record)(CUpti_ActivityKind, uint32_t);
static char path[256];

static const char *lookup(const char *k)
{
	return getenv(k);
}

static void header(struct jbuf *b)
{
	jb_s(b, ",\"format\":1,\"test\":true");
}

static int stops;
static void window_stop(const char *why)
{
	(void)why;
	stops++;
	shim_stop();
	cupti_detach();
}

static int setup(void **state)
{
	(void)state;
	const char *top = getenv("AICPROF_TOP");
	char p[4096];
	snprintf(p, sizeof(p), "%s/build/mock/libcuda.so.1", top ? top : ".");
	if (!dlopen(p, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "cannot open the mock driver '%s': %s\n", p, dlerror());
		return -1;
	}
	snprintf(p, sizeof(p), "%s/build/mock/libcupti.so.13", top ? top : ".");
	mock = dlopen(p, RTLD_NOW | RTLD_LOCAL);
	if (!mock) {
		fprintf(stderr, "cannot open the mock CUPTI '%s': %s\n", p, dlerror());
		return -1;
	}
	*(void **)&mock_cb_enabled = dlsym(mock, "mock_cb_enabled");
	*(void **)&mock_kind_enabled = dlsym(mock, "mock_kind_enabled");
	*(void **)&mock_record = dlsym(mock, "mock_record");
	if (!mock_cb_enabled || !mock_kind_enabled || !mock_record)
		return -1;
	setenv("AICPROF_QUIET", "1", 1);
	config_load(&shim_cfg, lookup, NULL);
	snprintf(path, sizeof(path), "/tmp/aicprof-test-window-%d.jsonl", (int)getpid());
	unlink(path);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

/* Counts the trace's kernel lines; the end line's reason into why (or ""). */
static long read_trace(char *why, size_t n, int *bad)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[8192];
	long kernels = 0;
	*bad = 0;
	why[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n'))
			(*bad)++;
		if (!strncmp(line, "{\"t\":\"kernel\"", 13))
			kernels++;
		const char *r = strstr(line, "\"reason\":\"");
		if (!strncmp(line, "{\"t\":\"end\"", 10) && r && strchr(line, '\n')) {
			r += 10;
			size_t k = strcspn(r, "\"");
			snprintf(why, n, "%.*s", (int)(k < n ? k : n - 1), r);
		}
	}
	fclose(f);
	return kernels;
}

static void test_close_flushes_on_the_writer_thread(void **state)
{
	(void)state;
	alarm(60); /* a hang fails the test instead of stalling the suite */
	writer_init(path, 0, header, cupti_api_name);
	sites_init(1);
	assert_int_equal(cupti_start(), 0);
	const CUpti_CallbackId launch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	assert_true(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_true(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	/* records that stay in CUPTI's buffer (8 MiB) until the close flushes it: their lines
	 * need about three writer rings */
	const int n = 25000;
	for (int i = 0; i < n; i++)
		assert_int_equal(
		    mock_record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, (uint32_t)i + 1), 1);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	writer_set_window(0, shim_now_ns() + 100 * 1000000ull, window_stop);
	assert_int_equal(writer_start(), 0);
	char why[32] = "";
	int bad = 0;
	long got = 0;
	for (int i = 0; i < 3000 && !why[0]; i++) {
		usleep(10000);
		if (access(path, R_OK) == 0)
			got = read_trace(why, sizeof(why), &bad);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	alarm(0);
	assert_string_equal(why, "duration");
	assert_int_equal(stops, 1);
	assert_int_equal(bad, 0);
	assert_int_equal(got, n);
	assert_true(secs < 20.0);
	/* aicprof's side is off in CUPTI: no callback, no kernel timing */
	assert_false(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_false(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	assert_int_equal(shim_recording(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_close_flushes_on_the_writer_thread, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
