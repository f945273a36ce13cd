/* mockenv.h - the mock driver and CUPTI of tests/mock (build/mock), loaded for the tests that
 * run the shim's own cupti.c without a GPU (test-window, test-capture): the driver global (the
 * shim resolves cu* from the process), CUPTI local with its test hooks. Header-only: each test
 * binary includes it once. mockenv_setup() opens them, loads shim_cfg from the environment
 * (AICPROF_QUIET=1) and names the test's trace in mockenv_path; mockenv_teardown() removes it. */
#ifndef AICPROF_TESTS_MOCKENV_H
#define AICPROF_TESTS_MOCKENV_H

#include <cupti.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>
#include <unistd.h>

#include "preload/base.h"
#include "preload/config.h"
#include "preload/jbuf.h"

static void *mock;
static int (*mock_cb_enabled)(CUpti_CallbackDomain, CUpti_CallbackId);
static int (*mock_kind_enabled)(CUpti_ActivityKind);
static int (*mock_record)(CUpti_ActivityKind, uint32_t);
static void (*mock_set_flush_every)(int);
static uint32_t (*mock_fire_call)(CUpti_CallbackDomain, CUpti_CallbackId, int, const void *,
                                  const void *);

/* config_load's lookup: the environment */
static const char *mockenv_lookup(const char *k)
{
	return getenv(k);
}

/* the trace header's fields for writer_init */
static void mockenv_header(struct jbuf *b)
{
	jb_s(b, ",\"format\":1,\"test\":true");
}

static char mockenv_path[256];

static int mockenv_open(void)
{
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
	*(void **)&mock_fire_call = dlsym(mock, "mock_fire_call");
	*(void **)&mock_set_flush_every = dlsym(mock, "mock_set_flush_every");
	return mock_cb_enabled && mock_kind_enabled && mock_record && mock_fire_call &&
	               mock_set_flush_every
	           ? 0
	           : -1;
}

/* cmocka setup and teardown: the mocks, shim_cfg, a fresh trace path for test (its name) */
static int mockenv_setup(const char *test)
{
	if (mockenv_open())
		return -1;
	setenv("AICPROF_QUIET", "1", 1);
	config_load(&shim_cfg, mockenv_lookup, NULL);
	snprintf(mockenv_path, sizeof(mockenv_path), "/tmp/aicprof-%s-%d.jsonl", test,
	         (int)getpid());
	unlink(mockenv_path);
	return 0;
}

/* A driver API call's entry and exit through the mock's callbacks, the exit returning
 * CUDA_SUCCESS; its correlation id (0 when the shim had the callback off). */
static const CUresult mockenv_ok = CUDA_SUCCESS;
static __attribute__((unused)) uint32_t mockenv_fire(CUpti_CallbackId id, const void *params)
{
	uint32_t c = mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, id, 0, params, NULL);
	mock_fire_call(CUPTI_CB_DOMAIN_DRIVER_API, id, 1, params, &mockenv_ok);
	return c;
}

static int mockenv_teardown(void **state)
{
	(void)state;
	unlink(mockenv_path);
	return 0;
}

#endif
