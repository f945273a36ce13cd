/* test-capture.c - AICPROF_CAPTURE=profiler-api through the shim's own cupti.c on the mock
 * CUPTI and driver of tests/mock, no GPU: recording starts paused, with the launch callback and
 * the kernel activity kind off in CUPTI (a paused program pays for no launch) and the allocation
 * callbacks on; the program's cuProfilerStart turns recording on, cuProfilerStop off again; a
 * free while paused still leaves the allocation map; the trace has the one launch made inside
 * the range and a capture line at each change. */
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
#include "preload/ptrmap.h"
#include "preload/sites.h"
#include "preload/writer.h"
#include "tests/unit/mockenv.h"

static int setup(void **state)
{
	(void)state;
	setenv("AICPROF_CAPTURE", "profiler-api", 1);
	return mockenv_setup("test-capture");
}

static void test_capture_range(void **state)
{
	(void)state;
	assert_int_equal(shim_cfg.capture_api, 1);
	writer_init(mockenv_path, 0, mockenv_header, cupti_api_name);
	sites_init(1);
	assert_int_equal(cupti_start(), 0);
	assert_int_equal(writer_start(), 0);
	mock_set_flush_every(1); /* each activity record reaches the shim when made */
	const CUpti_CallbackId launch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	/* paused: no launch callback; allocations and the profiler's calls on; the kernel kind
	 * stays on (its records are kept by correlation id, below) */
	assert_false(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_true(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	assert_true(
	    mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
	assert_true(
	    mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart));
	assert_int_equal(shim_recording(), 0);

	CUdeviceptr base = 0x7f0000000000ull;
	cuMemAlloc_v2_params ap = {&base, 1 << 20};
	mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &ap);
	uint64_t off = 0;
	assert_true(ptrmap_find(base + 256, &off) >= 0); /* kept while paused */
	uint64_t a0 = base + 256, a1 = 0x1234;
	int a2 = 42;
	void *kp[3] = {&a0, &a1, &a2};
	cuLaunchKernel_params lp = {(CUfunction)0x5000, 4, 1, 1, 128, 1, 1, 0, NULL, kp, NULL};
	mockenv_fire(launch, &lp); /* paused: CUPTI does not even call the shim */

	uint32_t c_start = mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, NULL);
	assert_true(c_start > 0);
	assert_true(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_true(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	assert_int_equal(shim_recording(), 1);
	a1 = 0x5678;
	uint32_t c_in = mockenv_fire(launch, &lp); /* the one launch inside the range */
	assert_true(c_in > c_start);

	uint32_t c_stop = mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, NULL);
	assert_true(c_stop > c_in);
	assert_false(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_true(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	assert_int_equal(shim_recording(), 0);
	a1 = 0x9abc;
	mockenv_fire(launch, &lp);
	/* kernels of launches made before, inside and after the range: only the one inside is
	 * kept (CUPTI times every kernel; the shim keeps the range's ids) */
	assert_int_equal(mock_record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, c_start - 1), 1);
	assert_int_equal(mock_record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, c_start), 1);
	assert_int_equal(mock_record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, c_in), 1);
	assert_int_equal(mock_record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, c_stop), 1);
	assert_int_equal(mock_record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, c_stop + 5), 1);
	/* a second range: its kernel is kept too */
	uint32_t c_start2 = mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, NULL);
	assert_int_equal(mock_record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, c_start2 + 1), 1);
	mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, NULL);
	/* a free while paused still leaves the map */
	cuMemFree_v2_params fp = {base};
	mockenv_fire(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &fp);
	assert_true(ptrmap_find(base + 256, &off) < 0);

	writer_flush(1, "exit");
	FILE *f = fopen(mockenv_path, "r");
	assert_non_null(f);
	char line[8192];
	int launches = 0, on = 0, off_ = 0, bad = 0, kernels = 0;
	char want_in[32], want_2[32];
	snprintf(want_in, sizeof(want_in), "\"c\":%u,", c_in);
	snprintf(want_2, sizeof(want_2), "\"c\":%u,", c_start2 + 1);
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n'))
			bad++;
		if (!strncmp(line, "{\"t\":\"launch\"", 13)) {
			launches++;
			assert_non_null(strstr(line, "\"v\":\"0x5678\""));
			assert_non_null(strstr(line, "\"p\":[[0,\"0x7f0000000100\",0,256]]"));
		}
		if (!strncmp(line, "{\"t\":\"kernel\"", 13)) {
			kernels++;
			assert_true(strstr(line, want_in) || strstr(line, want_2));
		}
		if (!strncmp(line, "{\"t\":\"capture\"", 14)) {
			if (strstr(line, "\"on\":true") &&
			    strstr(line, "\"api\":\"cuProfilerStart\""))
				on++;
			if (strstr(line, "\"on\":false") &&
			    strstr(line, "\"api\":\"cuProfilerStop\""))
				off_++;
		}
	}
	fclose(f);
	assert_int_equal(bad, 0);
	assert_int_equal(launches, 1);
	assert_int_equal(kernels, 2);
	assert_int_equal(on, 2);
	assert_int_equal(off_, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_capture_range, setup, mockenv_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
