/*
 * cmd-record.c - "aicprof record [-o FILE] [--] PROGRAM [ARGS...]": runs a program under the
 * shim. It finds libaicprof.so beside the aicprof binary (build/) or in ../lib (installed),
 * prepends it to LD_PRELOAD, sets AICPROF_OUTPUT when -o is given, and runs the program in a
 * child (fork, exec, wait), so that it can say afterwards when no trace was written. Everything
 * else is configured by the AICPROF_* variables the README lists, which pass through unchanged.
 *
 * The program's exit code is the command's; a program killed by a signal kills aicprof by the
 * same signal (re-raised, core dumps off, so the shell sees what it would have seen without
 * aicprof). SIGINT, SIGTERM and SIGHUP sent to aicprof by a process (kill: si_code <= 0) are
 * forwarded to the child; one the terminal sent (Ctrl-C: si_code SI_KERNEL) reached the child
 * too, through the process group, and is not sent twice. A signal ignored when aicprof started
 * (SIGINT of a background job) stays ignored, as the program would have found it. A failed exec is
 * reported through a close-on-exec pipe: "cannot run", exit 127 or 126, and no word about traces.
 *
 * "No trace": the output pattern (AICPROF_OUTPUT, else the shim's default name, the rank one
 * under RANK), with %p, %r and %h as wildcards, matched by glob(3) in the working directory;
 * a trace is one matching file modified since just before the fork. Without one, one line says
 * that the program never initialised CUDA, or that the shim could not load.
 */
#include "aicprof.h"
#include "lib/parseopt.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Returns a new string naming the shim, or NULL when none is found. */
static char *find_shim(void)
{
	const char *env = getenv("AICPROF_SHIM");
	if (env && *env)
		return access(env, R_OK) == 0 ? xstrdup(env) : NULL;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	char *dir = dirname(exe);
	static const char *rel[] = {"libaicprof.so", "../lib/libaicprof.so"};
	for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
		char *p = path_join(dir, rel[i]);
		char real[PATH_MAX];
		if (access(p, R_OK) == 0 && realpath(p, real)) {
			free(p);
			return xstrdup(real);
		}
		free(p);
	}
	return NULL;
}

static volatile pid_t child_pid;

/* Forwards a signal another process sent us to the child (see the header). */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si && si->si_code <= 0)
		kill(child_pid, sig);
}

/*
 * Whether a file matching the output pattern pat was modified at or after since: %p, %r and %h
 * match anything, %% is a '%', glob's own special characters match themselves.
 */
static int trace_written(const char *pat, const struct timespec *since)
{
	struct strbuf g = STRBUF_INIT;
	for (const char *p = pat; *p; p++) {
		if (*p == '%' && (p[1] == 'p' || p[1] == 'r' || p[1] == 'h')) {
			strbuf_adds(&g, "*");
			p++;
		} else if (*p == '%' && p[1] == '%') {
			strbuf_adds(&g, "%");
			p++;
		} else {
			char one[3] = {'\\', *p, 0};
			strbuf_adds(&g, strchr("*?[]\\", *p) ? one : one + 1);
		}
	}
	glob_t gl;
	int found = 0;
	if (g.buf && glob(g.buf, GLOB_NOSORT, NULL, &gl) == 0) {
		for (size_t i = 0; i < gl.gl_pathc && !found; i++) {
			struct stat st;
			found = stat(gl.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode) &&
			        (st.st_mtim.tv_sec > since->tv_sec ||
			         (st.st_mtim.tv_sec == since->tv_sec &&
			          st.st_mtim.tv_nsec >= since->tv_nsec));
		}
		globfree(&gl);
	}
	strbuf_release(&g);
	return found;
}

/* Runs argv in a child with the signals forwarded; returns its exit code or dies as it did. */
static int run_child(char **argv)
{
	const char *pat = getenv("AICPROF_OUTPUT");
	const char *rk = getenv("RANK");
	if (!pat || !*pat)
		pat = rk && *rk ? "aicprof.rank%r.%p.aicp.jsonl" : "aicprof.%p.aicp.jsonl";
	struct timespec start;
	clock_gettime(CLOCK_REALTIME, &start);
	start.tv_sec -= 1; /* file times are coarser than this clock */
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("cannot make a pipe: %s", strerror(errno));
	static const int fwd[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa = {0}, old[ARRAY_SIZE(fwd)];
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(fwd); i++) {
		sigaction(fwd[i], NULL, &old[i]);
		if (old[i].sa_handler !=
		    SIG_IGN) /* ignored (a background job's SIGINT): stays so */
			sigaction(fwd[i], &sa, NULL);
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		die("cannot fork: %s", strerror(errno));
	if (pid == 0) {
		for (size_t i = 0; i < ARRAY_SIZE(fwd); i++)
			sigaction(fwd[i], &old[i], NULL);
		close(pfd[0]);
		execvp(argv[0], argv);
		int e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	close(pfd[1]);
	int e = 0;
	ssize_t n;
	while ((n = read(pfd[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("cannot wait for '%s': %s", argv[0], strerror(errno));
	child_pid = 0;
	for (size_t i = 0; i < ARRAY_SIZE(fwd); i++)
		sigaction(fwd[i], &old[i], NULL);
	if (n == (ssize_t)sizeof(e)) {
		error("cannot run '%s': %s", argv[0], strerror(e));
		return e == ENOENT ? 127 : 126;
	}
	if (!trace_written(pat, &start)) {
		if (WIFSIGNALED(st))
			fprintf(stderr, "aicprof: '%s' was killed by signal %d (%s)", argv[0],
			        WTERMSIG(st), strsignal(WTERMSIG(st)));
		else
			fprintf(stderr, "aicprof: '%s' exited with %d", argv[0], WEXITSTATUS(st));
		fprintf(stderr, " and wrote no trace: it never initialised CUDA (or the shim could "
		                "not load: see the aicprof: lines above)\n");
	}
	if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		struct rlimit nocore = {0, 0};
		setrlimit(RLIMIT_CORE, &nocore);
		fflush(stderr);
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		return 128 + sig;
	}
	return WEXITSTATUS(st);
}

static const char *const record_usage[] = {
    "aicprof record [-o FILE] [-d SECONDS] [-s STEPS] [--capture-range] [--] PROGRAM [ARGS...]",
    "",
    "Other settings come from AICPROF_* variables (see the README).",
    NULL,
};

int cmd_record(int argc, char **argv)
{
	const char *out = NULL;
	int duration = 0, capture_api = 0, steps = -1;
	const struct parseopt options[] = {
	    OPT_PATH('o', "output", &out, "FILE",
	             "write the trace to FILE (%p: pid, %r: rank; default\n"
	             "aicprof.%p.aicp.jsonl in the working directory)"),
	    OPT_INT('d', "duration", &duration, "SECONDS", 1, 10000000,
	            "record this many seconds, then let the program run on\n"
	            "unrecorded (AICPROF_DURATION)"),
	    OPT_INT('s', "steps", &steps, "N", 0, 1000000,
	            "stop recording once the program's loop has run N steps\n"
	            "alike (AICPROF_STEPS, default 100; 0: record the whole run)"),
	    OPT_FLAG(0, "capture-range", &capture_api,
	             "record only between the program's cudaProfilerStart and\n"
	             "cudaProfilerStop (AICPROF_CAPTURE=profiler-api)"),
	    OPT_END(),
	};
	argc = parse_options(argc, argv, options, record_usage, PARSEOPT_STOP_AT_NON_OPTION);
	if (!argc) {
		error("no program to record");
		usage_with_options(record_usage, options);
	}
	char *shim = find_shim();
	if (!shim)
		die("cannot find libaicprof.so beside the aicprof binary (set AICPROF_SHIM)");
	struct strbuf pre = STRBUF_INIT;
	strbuf_adds(&pre, shim);
	const char *old = getenv("LD_PRELOAD");
	if (old && *old) {
		strbuf_adds(&pre, ":");
		strbuf_adds(&pre, old);
	}
	setenv("LD_PRELOAD", pre.buf, 1);
	if (out)
		setenv("AICPROF_OUTPUT", out, 1);
	if (duration > 0) {
		char d[24];
		snprintf(d, sizeof(d), "%d", duration);
		setenv("AICPROF_DURATION", d, 1);
	}
	if (steps >= 0) {
		char n[24];
		snprintf(n, sizeof(n), "%d", steps);
		setenv("AICPROF_STEPS", n, 1);
	}
	if (capture_api)
		setenv("AICPROF_CAPTURE", "profiler-api", 1);
	strbuf_release(&pre);
	free(shim);
	return run_child(argv);
}
