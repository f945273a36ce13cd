/* test-capture-pause.c - AICPROF_CAPTURE=profiler-api with AICPROF_PAUSE_ACTIVITY=1 (for paired
 * benchmarks: a paused range costs no kernel timing either) through the shim's own cupti.c on
 * the mock CUPTI and driver of tests/mock, no GPU: the activity kinds are off from the start
 * until the program's cuProfilerStart, on inside the range, off again at cuProfilerStop; the
 * kernel made inside the range is in the trace, and the kinds on before the shim's start check
 * (CUPTI refusing them still means not recording). Without the setting, test-capture.c: the
 * kinds stay on and records are kept by correlation id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/base.h"
#include "preload/config.h"
#include "preload/cupti.h"
#include "preload/jbuf.h"
#include "preload/sites.h"
#include "preload/writer.h"
#include "tests/unit/mockenv.h"

static int setup(void **state)
{
	(void)state;
	setenv("AICPROF_CAPTURE", "profiler-api", 1);
	setenv("AICPROF_PAUSE_ACTIVITY", "1", 1);
	return mockenv_setup("test-capture-pause");
}

static void test_pause_activity(void **state)
{
	(void)state;
	assert_int_equal(shim_cfg.pause_activity, 1);
	writer_init(mockenv_path, 0, mockenv_header, cupti_api_name);
	sites_init(1);
	assert_int_equal(cupti_start(), 0);
	assert_int_equal(writer_start(), 0);
	mock_set_flush_every(1);
	const CUpti_CallbackId launch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	const CUpti_ActivityKind kk = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	/* paused from the start: no launch callback, no kernel timing, no copy or memset timing */
	assert_false(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_false(mock_kind_enabled(kk));
	assert_false(mock_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
	assert_false(mock_kind_enabled(CUPTI_ACTIVITY_KIND_MEMSET));
	assert_int_equal(mock_record(kk, 1), 0); /* CUPTI makes no record */

	uint64_t a0 = 0x1000, a1 = 0x5678; /* the mock kernel's parameters: 8, 8 and 4 bytes */
	int a2 = 42;
	void *kp[3] = {&a0, &a1, &a2};
	cuLaunchKernel_params lp = {(CUfunction)0x5000, 1, 1, 1, 32, 1, 1, 0, NULL, kp, NULL};
	uint32_t c_start = mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, NULL);
	assert_true(c_start > 0);
	assert_true(mock_kind_enabled(kk));
	assert_true(mock_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
	assert_true(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	uint32_t c_in = mockenv_fire(launch, &lp);
	assert_true(c_in > c_start);
	assert_int_equal(mock_record(kk, c_in), 1);

	mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, NULL);
	assert_false(mock_kind_enabled(kk));
	assert_false(mock_kind_enabled(CUPTI_ACTIVITY_KIND_MEMSET));
	assert_false(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_int_equal(mock_record(kk, c_in + 10), 0);
	/* a second range turns them on again */
	mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, NULL);
	assert_true(mock_kind_enabled(kk));
	mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, NULL);
	assert_false(mock_kind_enabled(kk));

	writer_flush(1, "exit");
	FILE *f = fopen(mockenv_path, "r");
	assert_non_null(f);
	char line[8192], want[32];
	snprintf(want, sizeof(want), "\"c\":%u,", c_in);
	int kernels = 0, launches = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "{\"t\":\"kernel\"", 13)) {
			kernels++;
			assert_non_null(strstr(line, want));
		}
		launches += !strncmp(line, "{\"t\":\"launch\"", 13);
	}
	fclose(f);
	assert_int_equal(launches, 1);
	assert_int_equal(kernels, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_pause_activity, setup, mockenv_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
