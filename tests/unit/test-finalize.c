/* test-finalize.c - AICPROF_FINALIZE=1 through the shim's own cupti.c and cuptimux.c on the mock
 * CUPTI and driver of tests/mock, no GPU. When the recording window closes (cupti_detach, as the
 * writer thread calls it), CUPTI is not finalized there (not a callback) but at the program's
 * next driver API exit: an API entry changes nothing, the exit finalizes it, the mock then has
 * no subscriber and no activity kind on, and later calls of the shim (a second exit, the flush
 * at exit) do not touch CUPTI again. In a child process, another tool (as torch.profiler's
 * Kineto) is subscribed through the multiplexer's exported cuptiSubscribe when the window
 * closes: CUPTI stays (not finalized, the other tool's subscription and callback kept) and
 * aicprof's own callbacks are off, as without the setting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload/base.h"
#include "preload/config.h"
#include "preload/cupti.h"
#include "preload/cuptimux.h"
#include "preload/jbuf.h"
#include "preload/sites.h"
#include "preload/writer.h"
#include "tests/unit/mockenv.h"

static int (*mock_finalized)(void);
static int (*mock_subscribers)(void);

static int setup(void **state)
{
	(void)state;
	setenv("AICPROF_FINALIZE", "1", 1);
	if (mockenv_setup("test-finalize"))
		return -1;
	*(void **)&mock_finalized = dlsym(mock, "mock_finalized");
	*(void **)&mock_subscribers = dlsym(mock, "mock_subscribers");
	return mock_finalized && mock_subscribers ? 0 : -1;
}

static int other_calls;
static void CUPTIAPI other_cb(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
                              const void *data)
{
	(void)ud, (void)d, (void)id, (void)data;
	other_calls++;
}

static const CUpti_CallbackId launch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;

static void start(void)
{
	writer_init(mockenv_path, 0, mockenv_header, cupti_api_name);
	sites_init(1);
	assert_int_equal(cupti_start(), 0);
	assert_int_equal(writer_start(), 0);
}

/* the other tool subscribed when the window closes: CUPTI stays; exit status 0 when all held */
static int child_other_tool(void)
{
	start();
	CUpti_SubscriberHandle h = NULL;
	if (cuptiSubscribe(&h, other_cb, NULL) != CUPTI_SUCCESS ||
	    cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_DRIVER_API, launch) != CUPTI_SUCCESS)
		return 10;
	shim_stop();
	cupti_detach();
	mockenv_fire(launch, NULL);
	if (!cuptimux_active())
		return 0; /* no multiplexer on this CUPTI: the other tool would have made aicprof
		             yield */
	if (mock_finalized() != 0)
		return 11;
	if (mock_subscribers() != 1 || !mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch))
		return 12; /* the other tool's callback kept */
	if (mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2))
		return 13; /* aicprof's own are off */
	int before = other_calls;
	mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 0, NULL, NULL);
	return other_calls == before + 1 ? 0 : 14;
}

static void test_finalize(void **state)
{
	(void)state;
	assert_int_equal(shim_cfg.finalize, 1);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_other_tool());
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);

	start();
	assert_true(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	shim_stop();
	cupti_detach(); /* the window closes (the writer thread's call) */
	assert_int_equal(mock_finalized(), 0);
	assert_false(mock_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	assert_true(mock_cb_enabled(CUPTI_CB_DOMAIN_DRIVER_API, launch));  /* waits for an exit */
	mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 0, NULL, NULL); /* an entry: not yet */
	assert_int_equal(mock_finalized(), 0);
	mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 1, NULL, &mockenv_ok);
	assert_int_equal(mock_finalized(), 1);
	assert_int_equal(mock_subscribers(), 0);
	for (int k = 1; k < 64; k++)
		assert_false(mock_kind_enabled((CUpti_ActivityKind)k));
	/* nothing of aicprof's calls CUPTI again: no callback left to fire, the exit's flush skips
	 */
	assert_int_equal(mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, launch, 1, NULL, &mockenv_ok),
	                 0);
	cupti_flush();
	assert_int_equal(mock_finalized(), 1);
	assert_int_equal(mock_subscribers(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_finalize, setup, mockenv_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
