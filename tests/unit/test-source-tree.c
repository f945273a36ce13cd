/*
 * test-source-tree.c - which directories report/source.c takes as the program's tree: a
 * project directory is one; "/", the home directory ($HOME, pointed at a scratch one) and a
 * directory above it, system directories (/usr, /etc, /proc and below them), /tmp itself and a
 * hidden directory are not, so nothing under them is read; below an accepted tree, files under
 * a hidden directory or a site-packages directory are not read either.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

static void dir(const char *rel)
{
	char *p = path_join(root, rel);
	assert_int_equal(mkdir(p, 0700), 0);
	free(p);
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "%s/aicprof-tree.XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return -1;
	dir("home");
	dir("home/proj");
	dir("home/proj/.git");
	dir("home/proj/venv");
	dir("home/proj/venv/site-packages");
	dir("home/.ssh");
	put("home/proj/train.py", "x = 1\n");
	put("home/proj/.git/hook.py", "HIDDEN = 1\n");
	put("home/proj/venv/site-packages/lib.py", "LIB = 1\n");
	put("home/.ssh/keys.py", "KEY = 1\n");
	put("home/notes.py", "NOTE = 1\n");
	char *h = path_join(root, "home");
	setenv("HOME", h, 1);
	free(h);
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = {"home/proj/train.py",
	                                    "home/proj/.git/hook.py",
	                                    "home/proj/venv/site-packages/lib.py",
	                                    "home/.ssh/keys.py",
	                                    "home/notes.py",
	                                    "home/proj/.git",
	                                    "home/proj/venv/site-packages",
	                                    "home/proj/venv",
	                                    "home/proj",
	                                    "home/.ssh",
	                                    "home"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char *p = path_join(root, names[i]);
		if (remove(p) < 0)
			rmdir(p);
		free(p);
	}
	rmdir(root);
	return 0;
}

/* the text of line 1 of file with the cache's only directory rel ("" for root, or absolute) */
static const char *line1(struct srccache *c, const char *d, const char *file)
{
	srccache_release(c);
	srccache_init(c);
	char *p = d[0] == '/' ? xstrdup(d) : path_join(root, d);
	srccache_add_dir(c, p);
	free(p);
	return source_line(c, file, 1);
}

static void test_project_is_a_tree(void **state)
{
	struct srccache c = {0};
	assert_string_equal(line1(&c, "home/proj", "train.py"), "x = 1");
	char *abs = path_join(root, "home/proj/train.py");
	assert_string_equal(line1(&c, "home/proj", abs), "x = 1");
	free(abs);
	srccache_release(&c);
}

static void test_homes_are_not(void **state)
{
	struct srccache c = {0};
	assert_null(line1(&c, "home", "notes.py"));
	assert_null(line1(&c, "home", ".ssh/keys.py"));
	assert_null(line1(&c, "", "home/notes.py")); /* above the home */
	char *abs = path_join(root, "home/notes.py");
	assert_null(line1(&c, "/", abs));
	assert_null(line1(&c, "/", abs + 1));
	free(abs);
	assert_null(line1(&c, "home/.ssh", "keys.py")); /* hidden */
	srccache_release(&c);
}

static void test_system_dirs_are_not(void **state)
{
	struct srccache c = {0};
	static const char *const sys[] = {"/",          "/usr",  "/usr/lib", "/etc",  "/proc",
	                                  "/proc/self", "/sys",  "/dev",     "/tmp",  "/var",
	                                  "/var/lib",   "/boot", "/root",    "/home", "/opt"};
	for (size_t i = 0; i < ARRAY_SIZE(sys); i++) {
		srccache_release(&c);
		srccache_init(&c);
		srccache_add_dir(&c, sys[i]);
		assert_null(c.real[0]);
	}
	srccache_release(&c);
}

static void test_hidden_and_library_below(void **state)
{
	struct srccache c = {0};
	assert_null(line1(&c, "home/proj", ".git/hook.py"));
	assert_null(line1(&c, "home/proj", "venv/site-packages/lib.py"));
	assert_null(line1(&c, "home/proj", "../.ssh/keys.py"));
	srccache_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_project_is_a_tree),
	    cmocka_unit_test(test_homes_are_not),
	    cmocka_unit_test(test_system_dirs_are_not),
	    cmocka_unit_test(test_hidden_and_library_below),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
