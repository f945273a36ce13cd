/*
 * test-writer-faults.c - output faults in the shim's trace writer, without a GPU: each case runs
 * in a forked child that stands in for the host program (it records, meets the fault, flushes
 * the trace at exit and exits 42), and the parent checks what the user would see: exit code 42
 * unchanged, exactly one "aicprof:" line on stderr, and a trace that the analyzer reads whole
 * (every line parses, the analysis runs) or no file at all.
 *
 * Faults: an output directory that does not exist or is a file; ENOSPC after a byte budget with
 * a short write first (as a filling disk does), injected by this program's own write(); the
 * kernel's file size limit (RLIMIT_FSIZE: EFBIG, a real short write); /dev/full; the trace
 * removed while the program runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analyzer/model.h"
#include "lib/util.h"
#include "preload/base.h"
#include "preload/ring.h"
#include "preload/writer.h"

static char dir[256], path[300], errpath[300];

/* ENOSPC injection: writes to the trace's file pass until budget bytes, then one short write,
 * then ENOSPC. Every other write goes straight to the kernel. */
static long budget = -1;

static int is_trace_fd(int fd)
{
	char link[64], target[512];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = 0;
	return strcmp(target, path) == 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (budget >= 0 && is_trace_fd(fd)) {
		if (budget == 0) {
			errno = ENOSPC;
			return -1;
		}
		if ((long)n > budget)
			n = (size_t)budget;
		budget -= (long)n;
	}
	return syscall(SYS_write, fd, buf, n);
}

static void header(struct jbuf *b)
{
	jb_s(b, ",\"format\":1,\"tool\":\"aicprof test\",\"pid\":1,\"argv\":[\"host\"],"
	        "\"devices\":[{\"id\":0,\"name\":\"test\",\"sm_count\":132,\"peak_bw_gbs\":4800}]");
}

static const char *api_name(unsigned a)
{
	(void)a;
	return "cuLaunchKernel";
}

/* Queues kernels [from, to) as launch + kernel lines, a str record first. */
static void record_kernels(int from, int to)
{
	char line[512];
	if (from == 0) {
		int n = snprintf(line, sizeof(line), "{\"t\":\"str\",\"id\":1,\"s\":\"k_add\"}");
		writer_meta(line, (size_t)n);
	}
	for (int i = from; i < to; i++) {
		int n =
		    snprintf(line, sizeof(line),
		             "{\"t\":\"launch\",\"seq\":%d,\"ts\":%d,\"tid\":1,\"c\":%d,\"api\":"
		             "\"cuLaunchKernel\",\"fn\":1,\"grid\":[1,1,1],\"block\":[32,1,1],"
		             "\"smem\":0,\"stream\":\"0x0\",\"args\":[]}",
		             i + 1, 1000 + i * 10, i + 1);
		writer_meta(line, (size_t)n);
		n = snprintf(
		    line, sizeof(line),
		    "{\"t\":\"kernel\",\"c\":%d,\"name\":1,\"dev\":0,\"ctx\":1,\"stream\":7,"
		    "\"start\":%d,\"end\":%d,\"grid\":[1,1,1],\"block\":[32,1,1]}",
		    i + 1, 5000 + i * 10, 5005 + i * 10);
		writer_meta(line, (size_t)n);
	}
}

enum fault { F_NODIR, F_NOTDIR, F_ENOSPC, F_FSIZE, F_DEVFULL, F_REMOVED };

/* The host program: records 2000 kernels in two drains with the fault between, exits 42. */
static void host(enum fault f)
{
	int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (e < 0 || dup2(e, 2) < 0)
		_exit(99);
	close(e);
	shim_cfg.quiet = 0;
	ring_reset_after_fork();
	writer_reset_after_fork();
	const char *out = path;
	if (f == F_NODIR)
		out = "/nonexistent-aicprof-dir/t.aicp.jsonl";
	if (f == F_DEVFULL)
		out = "/dev/full";
	if (f == F_NOTDIR) {
		char file[300];
		snprintf(file, sizeof(file), "%s/file", dir);
		close(open(file, O_WRONLY | O_CREAT, 0644));
		snprintf(path, sizeof(path), "%s/file/t.aicp.jsonl", dir);
	}
	if (f == F_FSIZE) {
		struct rlimit rl = {100000, 100000};
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	writer_init(out, 0, header, api_name);
	record_kernels(0, 1000);
	if (f == F_ENOSPC)
		budget = 60000 + 17; /* ends inside a line */
	writer_drain();
	if (f == F_REMOVED)
		unlink(path);
	record_kernels(1000, 2000);
	writer_drain();
	record_kernels(2000, 2100);
	writer_flush(1, "exit");
	exit(42);
}

/* Runs host(f) in a child; returns its exit code (or 128 + signal). */
static int run_host(enum fault f)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		host(f);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Counts the lines of the child's stderr that start with "aicprof:"; prints them all. */
static int aicprof_lines(void)
{
	FILE *f = fopen(errpath, "r");
	assert_non_null(f);
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		printf("# child stderr: %s", line);
		n += strncmp(line, "aicprof:", 8) == 0;
	}
	fclose(f);
	return n;
}

/* The trace must be whole lines of JSON, header first; returns the number of kernel lines, and
 * runs the analysis on it when it holds any. */
static int trace_kernels(void)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int nl = 0, kernels = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		assert_true(line[len - 1] == '\n'); /* cut back to the last whole line */
		cJSON *j = cJSON_Parse(line);
		assert_non_null(j);
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(j, "t"));
		assert_non_null(t);
		if (nl++ == 0)
			assert_string_equal(t, "header");
		kernels += strcmp(t, "kernel") == 0;
		cJSON_Delete(j);
	}
	free(line);
	fclose(f);
	assert_true(nl > 0);
	if (kernels) {
		util_quiet = 1;
		char *p = path;
		struct model *m = analysis_run(&p, 1);
		assert_non_null(m);
		assert_true(m->traces[0].kernels == kernels);
		model_free(m);
	}
	return kernels;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/aicprof-faults-%d", (int)getpid());
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/t.aicp.jsonl", dir);
	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_no_directory(void **state)
{
	(void)state;
	assert_int_equal(run_host(F_NODIR), 42);
	assert_int_equal(aicprof_lines(), 1);
}

static void test_directory_is_a_file(void **state)
{
	(void)state;
	assert_int_equal(run_host(F_NOTDIR), 42);
	assert_int_equal(aicprof_lines(), 1);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_enospc_mid_line(void **state)
{
	(void)state;
	assert_int_equal(run_host(F_ENOSPC), 42);
	assert_int_equal(aicprof_lines(), 1);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_true(sb.st_size > 50000 && sb.st_size <= 60017);
	int k = trace_kernels();
	printf("# ENOSPC after 60017 bytes: trace %ld bytes, %d kernels readable\n",
	       (long)sb.st_size, k);
	assert_true(k > 100 && k < 1000);
}

static void test_file_size_limit(void **state)
{
	(void)state;
	assert_int_equal(run_host(F_FSIZE), 42);
	assert_int_equal(aicprof_lines(), 1);
	int k = trace_kernels();
	printf("# RLIMIT_FSIZE 100000: %d kernels readable\n", k);
	assert_true(k > 100 && k < 2100);
}

static void test_dev_full(void **state)
{
	(void)state;
	assert_int_equal(run_host(F_DEVFULL), 42);
	assert_int_equal(aicprof_lines(), 1);
}

static void test_removed_mid_run(void **state)
{
	(void)state;
	assert_int_equal(run_host(F_REMOVED), 42);
	assert_int_equal(aicprof_lines(), 1);
	assert_int_equal(access(path, F_OK), -1); /* not re-created behind the user's back */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_no_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_directory_is_a_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_enospc_mid_line, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_size_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dev_full, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_removed_mid_run, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
