/*
 * test-gotpatch.c - preload/gotpatch.c: one library's imports redirected, nobody else's.
 * The victim is build/mock/libgotvictim.so (tests/mock/gotvictim.c), built without and
 * with lazy binding's PLT (the Makefile links it -z now, so its GOT is in RELRO, read-only).
 */
#include "preload/gotpatch.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

static void *victim;
static long (*v_ppid)(void), (*v_pgrp)(void), (*v_bump)(void);

static pid_t fake_ppid(void)
{
	return 424242;
}

static int setup(void **state)
{
	(void)state;
	char path[4096];
	const char *top = getenv("AICPROF_TOP");
	snprintf(path, sizeof(path), "%s/build/mock/libgotvictim.so", top ? top : ".");
	victim = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!victim) {
		fprintf(stderr, "%s\n", dlerror());
		return -1;
	}
	v_ppid = (long (*)(void))dlsym(victim, "victim_ppid");
	v_pgrp = (long (*)(void))dlsym(victim, "victim_pgrp");
	v_bump = (long (*)(void))dlsym(victim, "victim_bump");
	return v_ppid && v_pgrp && v_bump ? 0 : -1;
}

static void test_other_library_untouched_before(void **state)
{
	(void)state;
	assert_int_equal(v_ppid(), (long)getppid());
}

static void test_patch_one_import(void **state)
{
	(void)state;
	long pgrp = v_pgrp();
	int n = got_patch("libgotvictim.so", "getppid", (void *)fake_ppid);
	assert_true(n >= 1);
	/* the victim's call now reaches the replacement, its other import does not */
	assert_int_equal(v_ppid(), 424242);
	assert_int_equal(v_pgrp(), pgrp);
	/* the test's own calls, and libc's symbol, are unchanged */
	assert_int_not_equal((long)getppid(), 424242);
	pid_t (*real)(void) = (pid_t(*)(void))dlsym(RTLD_DEFAULT, "getppid");
	assert_non_null(real);
	assert_int_not_equal((long)real(), 424242);
	/* the victim's writable data (on the page the RELRO part may end on) stays writable */
	long c = v_bump();
	assert_int_equal(v_bump(), c + 1);
	/* patching again finds the same slots; the page is still usable afterwards */
	assert_int_equal(got_patch("libgotvictim.so", "getppid", (void *)fake_ppid), n);
	assert_int_equal(v_ppid(), 424242);
}

static void test_needed_sym(void **state)
{
	(void)state;
	/* the victim needs libc: its getppid is libc's, whatever the victim's slot says now */
	pid_t (*f)(void) = (pid_t(*)(void))got_needed_sym("libgotvictim.so", "libc.so", "getppid");
	assert_non_null(f);
	assert_int_equal((long)f(), (long)getppid());
	assert_null(got_needed_sym("libgotvictim.so", "libnot-needed.so", "getppid"));
	assert_null(got_needed_sym("libno-such-object.so", "libc.so", "getppid"));
	assert_null(got_needed_sym("libgotvictim.so", "libc.so", "no_such_symbol_here"));
}

static void test_no_such_object_or_symbol(void **state)
{
	(void)state;
	assert_int_equal(got_patch("libno-such-object.so", "getppid", (void *)fake_ppid), 0);
	assert_int_equal(got_patch("libgotvictim.so", "no_such_symbol", (void *)fake_ppid), 0);
	assert_int_equal(got_patch(NULL, "getppid", (void *)fake_ppid), 0);
	assert_int_equal(got_patch("libgotvictim.so", "getppid", NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_other_library_untouched_before),
	    cmocka_unit_test(test_patch_one_import),
	    cmocka_unit_test(test_needed_sym),
	    cmocka_unit_test(test_no_such_object_or_symbol),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
