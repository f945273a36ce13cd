/*
 * test-source-paths.c - the report's reader of source lines (report/source.c) against hostile
 * names a trace may carry: a file inside the traced program's directory is read; "..", an
 * absolute path outside it, a symbolic link inside it that points outside, a name that is not
 * a source file (/etc/passwd), devices (/dev/zero, /proc/self/mem, as names and behind links),
 * a FIFO named like a source file (which must not block), a file over the 8 MiB bound, and a
 * very long name are all absent, never read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util.h"
#include "report/source.h"

static char root[256];

static void put(const char *rel, const char *text)
{
	char *p = path_join(root, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "%s/aicprof-src.XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return -1;
	char *p = path_join(root, "cwd");
	mkdir(p, 0700);
	free(p);
	put("cwd/train.py", "import torch\n    y = f(x)  \n");
	put("secret.py", "TOKEN = 1\n");
	char buf[512];
	snprintf(buf, sizeof(buf), "%s/secret.py", root);
	p = path_join(root, "cwd/link.py");
	assert_int_equal(symlink(buf, p), 0);
	free(p);
	p = path_join(root, "cwd/zero.py");
	assert_int_equal(symlink("/dev/zero", p), 0);
	free(p);
	p = path_join(root, "cwd/mem.py");
	assert_int_equal(symlink("/proc/self/mem", p), 0);
	free(p);
	p = path_join(root, "cwd/fifo.py");
	assert_int_equal(mkfifo(p, 0600), 0);
	free(p);
	/* over 8 MiB: a sparse file */
	p = path_join(root, "cwd/big.py");
	int fd = open(p, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (9 << 20)), 0);
	close(fd);
	free(p);
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = {"cwd/train.py", "cwd/link.py", "cwd/zero.py",
	                                    "cwd/mem.py",   "cwd/fifo.py", "cwd/big.py",
	                                    "secret.py",    "cwd"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char *p = path_join(root, names[i]);
		if (remove(p) < 0)
			rmdir(p);
		free(p);
	}
	rmdir(root);
	return 0;
}

static struct srccache *cache(void)
{
	static struct srccache c;
	srccache_release(&c);
	srccache_init(&c);
	char *p = path_join(root, "cwd");
	srccache_add_dir(&c, p);
	free(p);
	return &c;
}

static void test_inside_is_read(void **state)
{
	struct srccache *c = cache();
	assert_string_equal(source_line(c, "train.py", 2), "y = f(x)");
	char *abs = path_join(root, "cwd/train.py");
	assert_string_equal(source_line(c, abs, 1), "import torch");
	free(abs);
	assert_null(source_line(c, "train.py", 3));
	srccache_release(c);
}

static void test_outside_is_absent(void **state)
{
	struct srccache *c = cache();
	assert_null(source_line(c, "../secret.py", 1));
	assert_null(source_line(c, "./../cwd/../secret.py", 1));
	char *abs = path_join(root, "secret.py");
	assert_null(source_line(c, abs, 1));
	free(abs);
	assert_null(source_line(c, "link.py", 1)); /* a link inside to a file outside */
	assert_null(source_line(c, "/etc/passwd", 1));
	assert_null(source_line(c, "../../../../../../../../etc/passwd", 1));
	srccache_release(c);
}

static void test_devices_are_absent(void **state)
{
	struct srccache *c = cache();
	assert_null(source_line(c, "/dev/zero", 1));
	assert_null(source_line(c, "/proc/self/mem", 1));
	assert_null(source_line(c, "zero.py", 1));
	assert_null(source_line(c, "mem.py", 1));
	assert_null(source_line(c, "fifo.py", 1)); /* returns at once: nothing opens it blocking */
	assert_null(source_line(c, "big.py", 1));
	srccache_release(c);
}

static void test_long_names(void **state)
{
	struct srccache *c = cache();
	char *name = xmalloc(70000);
	memset(name, 'a', 69990);
	strcpy(name + 69990, ".py");
	assert_null(source_line(c, name, 1));
	for (int i = 0; i < 69990; i += 3)
		memcpy(name + i, "../", 3);
	assert_null(source_line(c, name, 1));
	free(name);
	srccache_release(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inside_is_read),
	    cmocka_unit_test(test_outside_is_absent),
	    cmocka_unit_test(test_devices_are_absent),
	    cmocka_unit_test(test_long_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
