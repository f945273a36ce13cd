/* test-window.c - the shim's own CUPTI code (cupti.c, cuptimux.c, the writer and the rings) on
 * the mock CUPTI and mock driver of tests/mock, no GPU: an allocation and a launch go through
 * the callbacks into a launch record whose pointer parameter is resolved into the allocation;
 * then the recording window's close:
 * CUPTI's synchronous flush at the close delivers a buffer of kernel records on the writer
 * thread, several rings' worth; the trace must end whole, with reason "duration" and every
 * record, within seconds (before the writer drained its own ring, this waited 200 ms a record),
 * and afterwards aicprof's callbacks and activity kinds are off in the (mock) CUPTI.
 * A launch of ATen's strided loop (by name) keeps its closure's bytes whole ("x").
 * AICPROF_BENCH_LAUNCHES=N also times N launches through the callbacks (this binary is built
 * with the sanitizers, so the figure is a yardstick between versions, not the shim's cost). */
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
#include "tests/unit/mockenv.h"

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
	return mockenv_setup("test-window");
}

static char launch_line[8192]; /* the trace's first launch record */
static char legacy_line[8192]; /* the launch of ATen's strided loop (the mock's 0x7000) */

/* Counts the trace's kernel lines; the end line's reason into why (or ""); the first launch
 * line into launch_line. */
static long read_trace(char *why, size_t n, int *bad)
{
	launch_line[0] = legacy_line[0] = 0;
	FILE *f = fopen(mockenv_path, "r");
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
		if (!strncmp(line, "{\"t\":\"launch\"", 13) && strstr(line, "\"x\":\"") &&
		    !legacy_line[0])
			snprintf(legacy_line, sizeof(legacy_line), "%s", line);
		if (!strncmp(line, "{\"t\":\"launch\"", 13) && !launch_line[0])
			snprintf(launch_line, sizeof(launch_line), "%s", line);
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
	writer_init(mockenv_path, 0, mockenv_header, cupti_api_name);
	sites_init(1);
	assert_int_equal(cupti_start(), 0);
	writer_set_window(0, 0, window_stop); /* no window yet */
	assert_int_equal(writer_start(), 0);
	const CUpti_CallbackId launch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	assert_true(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_true(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	/* the launch path: a 1 MiB allocation, then a launch whose first parameter points
	 * 256 bytes into it (the second is a pointer-sized number outside every allocation) */
	const CUresult ok = CUDA_SUCCESS;
	CUdeviceptr base = 0x7f0000000000ull;
	cuMemAlloc_v2_params ap = {&base, 1 << 20};
	mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 0, &ap,
	               NULL);
	mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 1, &ap,
	               &ok);
	uint64_t a0 = base + 256, a1 = 0x1234;
	int a2 = 42;
	void *kp[3] = {&a0, &a1, &a2};
	cuLaunchKernel_params lp = {(CUfunction)0x5000, 4, 1, 1, 128, 1, 1, 0, NULL, kp, NULL};
	uint32_t c0 = mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 0, &lp, NULL);
	assert_int_not_equal(c0, 0);
	assert_int_equal(mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 1, &lp, &ok), c0);
	/* ATen's strided loop (by name): its 640-byte closure is kept whole, for the analyzer to
	 * read the offset calculator's sizes and strides; its pointers are still resolved */
	unsigned char closure[640];
	for (int i = 0; i < 640; i++)
		closure[i] = (unsigned char)(i * 7 + 3);
	uint64_t d0 = base + 512, d1 = base + 1024;
	memcpy(closure, &d0, 8);
	memcpy(closure + 8, &d1, 8);
	int numel = 4096;
	void *kl[2] = {&numel, closure};
	cuLaunchKernel_params ll = {(CUfunction)0x7000, 32, 1, 1, 128, 1, 1, 0, NULL, kl, NULL};
	assert_int_not_equal(mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 0, &ll, NULL), 0);
	mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 1, &ll, &ok);
	/* AICPROF_BENCH_LAUNCHES=N: the shim's own cost of a launch (both callbacks, the
	 * parameter scan, attribution by native stack, the record), timed here; not a test */
	const char *bench = getenv("AICPROF_BENCH_LAUNCHES");
	if (bench && atoi(bench) > 0) {
		int nb = atoi(bench);
		double ns = 0;
		for (int done = 0; done < nb; done += 1000) {
			/* batches that fit a ring, the writer draining between them (not timed):
			 * the producer's cost, not the writer's formatting */
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (int i = 0; i < 1000; i++) {
				mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 0, &lp, NULL);
				mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 1, &lp, &ok);
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			ns += (double)(t1.tv_sec - t0.tv_sec) * 1e9 +
			      (double)(t1.tv_nsec - t0.tv_nsec);
			usleep(60000);
		}
		ns /= nb;
		fprintf(stderr, "# bench: %d launches, %.0f ns each\n", nb, ns);
	}
	/* records that stay in CUPTI's buffer (8 MiB) until the close flushes it: their lines
	 * need about three writer rings; the first is the launch's kernel */
	const int n = 25000;
	for (int i = 0; i < n; i++)
		assert_int_equal(
		    mock_record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, c0 + (uint32_t)i), 1);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	writer_set_window(0, shim_now_ns() + 100 * 1000000ull, window_stop);
	char why[32] = "";
	int bad = 0;
	long got = 0;
	for (int i = 0; i < 3000 && !why[0]; i++) {
		usleep(10000);
		if (access(mockenv_path, R_OK) == 0)
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
	/* the launch: its correlation id, the kernel's name, the grid, the first parameter
	 * resolved into the allocation (id 0, offset 256), the second not a pointer, the int */
	char want[256];
	snprintf(want, sizeof(want), "\"c\":%u,", c0);
	assert_non_null(strstr(launch_line, want));
	assert_non_null(strstr(launch_line, "\"api\":\"cuLaunchKernel\""));
	assert_non_null(strstr(launch_line, "\"grid\":[4,1,1],\"block\":[128,1,1]"));
	assert_non_null(strstr(launch_line, "\"p\":[[0,\"0x7f0000000100\",0,256]]"));
	assert_non_null(strstr(launch_line, "{\"i\":1,\"o\":8,\"n\":8,\"v\":\"0x1234\"}"));
	assert_non_null(strstr(launch_line, "{\"i\":2,\"o\":16,\"n\":4,\"v\":\"0x2a\"}"));
	/* the strided loop's closure, every byte in order, and its two pointers resolved */
	char hex[1281];
	for (int i = 0; i < 640; i++)
		snprintf(hex + 2 * i, 3, "%02x", closure[i]);
	const char *x = strstr(legacy_line, "\"x\":\"");
	assert_non_null(x);
	assert_memory_equal(x + 5, hex, 1280);
	assert_int_equal(x[5 + 1280], '"');
	assert_non_null(strstr(
	    legacy_line, "\"p\":[[0,\"0x7f0000000200\",0,512],[8,\"0x7f0000000400\",0,1024]]"));
	assert_null(strstr(launch_line, "\"x\":")); /* other kernels keep only their scalars */
	/* aicprof's side is off in CUPTI: no callback, no kernel timing */
	assert_false(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));
	assert_false(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	assert_int_equal(shim_recording(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_close_flushes_on_the_writer_thread, setup,
	                                    mockenv_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
