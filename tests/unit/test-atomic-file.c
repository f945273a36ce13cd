/* test-atomic-file.c - lib/util.c's atomic_open/atomic_write/atomic_commit (write_file_atomic
 * in pieces, which summary_write() streams summary.json through): the pieces make the file,
 * nothing is visible under the name before the commit, a link at the name is replaced and not
 * written through, and a failure leaves the name untouched and no temporary behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util.h"

static char dir[256];

static char *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	if (!f)
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sb, buf, n);
	fclose(f);
	*len = sb.len;
	return sb.buf ? sb.buf : xstrdup("");
}

static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "%s/aicp-atomic-XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_pieces(void **state)
{
	char *p = path_join(dir, "out.json");
	struct atomic_file af;
	assert_int_equal(atomic_open(&af, p), 0);
	struct strbuf want = STRBUF_INIT;
	for (int i = 0; i < 3000; i++) { /* about 50 KB in 3000 writes */
		char piece[32];
		int n = snprintf(piece, sizeof(piece), "piece %d\n", i);
		strbuf_add(&want, piece, (size_t)n);
		assert_int_equal(atomic_write(&af, piece, (size_t)n), 0);
	}
	assert_int_equal(access(p, F_OK), -1); /* nothing under the name before the commit */
	assert_int_equal(atomic_commit(&af), 0);
	size_t len;
	char *got = slurp(p, &len);
	assert_non_null(got);
	assert_int_equal(len, want.len);
	assert_memory_equal(got, want.buf, len);
	assert_int_equal(entries(), 1); /* no temporary left */
	free(got);
	strbuf_release(&want);
	unlink(p);
	free(p);
}

static void test_link_replaced(void **state)
{
	char *p = path_join(dir, "out.json"), *victim = path_join(dir, "victim");
	FILE *f = fopen(victim, "w");
	assert_non_null(f);
	fputs("keep", f);
	fclose(f);
	assert_int_equal(symlink(victim, p), 0);
	struct atomic_file af;
	assert_int_equal(atomic_open(&af, p), 0);
	atomic_write(&af, "new", 3);
	assert_int_equal(atomic_commit(&af), 0);
	size_t len;
	char *got = slurp(victim, &len);
	assert_string_equal(got, "keep");
	free(got);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(p);
	unlink(victim);
	free(p);
	free(victim);
}

static void test_failures(void **state)
{
	util_quiet = 1;
	char *p = path_join(dir, "missing/out.json");
	struct atomic_file af;
	assert_int_equal(atomic_open(&af, p), -1);
	assert_int_equal(atomic_write(&af, "x", 1), -1); /* does nothing after a failure */
	assert_int_equal(atomic_commit(&af), -1);
	assert_int_equal(entries(), 0);
	free(p);

	/* a write that fails (the file size limit: EFBIG after a short write, as a full disk)
	 * removes the temporary and keeps the old file */
	p = path_join(dir, "out.json");
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("old", f);
	fclose(f);
	assert_int_equal(atomic_open(&af, p), 0);
	char big[4096];
	memset(big, 'x', sizeof(big));
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = (struct rlimit){1000, old.rlim_max}; /* the soft limit only: it can be raised back */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int w = atomic_write(&af, big, sizeof(big));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(w, -1);
	assert_int_equal(atomic_write(&af, "more", 4), -1);
	assert_int_equal(atomic_commit(&af), -1);
	size_t len;
	char *got = slurp(p, &len);
	assert_string_equal(got, "old");
	free(got);
	assert_int_equal(entries(), 1);
	unlink(p);
	free(p);
	util_quiet = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_pieces, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_link_replaced, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
