/*
 * cmd-record.c - "aicprof record [-o FILE] [--] PROGRAM [ARGS...]": runs a program under the
 * shim. It finds libaicprof.so beside the aicprof binary (build/) or in ../lib (installed),
 * prepends it to LD_PRELOAD, sets AICPROF_OUTPUT when -o is given, and execs the program, so
 * the program's exit code is the command's. Everything else is configured by the AICPROF_*
 * variables the README lists, which pass through unchanged.
 */
#include "aicprof.h"
#include "lib/parseopt.h"
#include "lib/util.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
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

static const char *const record_usage[] = {
    "aicprof record [-o FILE] [--] PROGRAM [ARGS...]",
    "",
    "Other settings come from AICPROF_* variables (see the README).",
    NULL,
};

int cmd_record(int argc, char **argv)
{
	const char *out = NULL;
	const struct parseopt options[] = {
	    OPT_PATH('o', "output", &out, "FILE",
	             "write the trace to FILE (%p: pid, %r: rank; default\n"
	             "aicprof.%p.aicp.jsonl in the working directory)"),
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
	execvp(argv[0], argv);
	int e = errno;
	error("cannot run '%s': %s", argv[0], strerror(e));
	return e == ENOENT ? 127 : 126;
}
