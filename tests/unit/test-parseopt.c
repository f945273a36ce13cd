/*
 * test-parseopt.c - the option parser (lib/parseopt.c): every kind of option in its short,
 * attached, long and long=value forms, bundled short flags, options mixed with positional
 * arguments, "--", a lone "-", stopping at the first positional argument, every error message
 * (unknown option, a number out of range or not a number, a missing value, a value given to a
 * flag, an empty path), -h/--help, and the generated usage text, line by line. The exiting
 * wrappers (parse_options, usage_with_options) are run in a forked child for their status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/parseopt.h"

struct vars {
	int flag, quiet, report, jobs;
	const char *str, *path;
	struct parseopt_list list;
};

static void table(struct vars *v, struct parseopt opts[8])
{
	struct parseopt t[] = {
	    OPT_FLAG('f', "flag", &v->flag, "a flag"),
	    OPT_FLAG('q', NULL, &v->quiet, "quiet"),
	    OPT_SET_INT(0, "no-report", &v->report, 0, "no report"),
	    OPT_INT('j', "jobs", &v->jobs, "N", 1, 1024, "at most N at once"),
	    OPT_STRING('s', "str", &v->str, "TEXT", "any text"),
	    OPT_PATH('o', "output", &v->path, "DIR", "write into DIR\nand nowhere else"),
	    OPT_PATH_LIST(0, "group", &v->list, "G.json", "a group (repeatable)"),
	    OPT_END(),
	};
	memcpy(opts, t, sizeof(t));
	memset(v, 0, sizeof(*v));
	v->report = 1;
}

/* Parses a copy of the words (argv[0] "cmd" added); the result in *argv_out. */
static int run(struct vars *v, int flags, struct strbuf *err, char ***argv_out, int nw, ...)
{
	static char *argv[32];
	static struct parseopt opts[8];
	va_list ap;
	table(v, opts);
	argv[0] = "cmd";
	va_start(ap, nw);
	for (int i = 0; i < nw; i++)
		argv[i + 1] = va_arg(ap, char *);
	va_end(ap);
	argv[nw + 1] = NULL;
	*argv_out = argv;
	strbuf_reset(err);
	return parse_options_gently(nw + 1, argv, opts, flags, err);
}

static void test_kinds(void **state)
{
	struct vars v;
	struct strbuf err = STRBUF_INIT;
	char **av;
	int n = run(&v, 0, &err, &av, 9, "-f", "-q", "--no-report", "-j", "8", "--str=", "-o",
	            "out", "--group=a.json");
	assert_int_equal(n, 0);
	assert_null(av[0]);
	assert_int_equal(v.flag, 1);
	assert_int_equal(v.quiet, 1);
	assert_int_equal(v.report, 0);
	assert_int_equal(v.jobs, 8);
	assert_string_equal(v.str, "");
	assert_string_equal(v.path, "out");
	assert_int_equal(v.list.nr, 1);
	assert_string_equal(v.list.v[0], "a.json");
	parseopt_list_release(&v.list);

	/* long forms, attached short values, the last of a repeated option wins */
	n = run(&v, 0, &err, &av, 8, "--flag", "--jobs", "1024", "-j1", "-sabc", "--output=x",
	        "--output", "y");
	assert_int_equal(n, 0);
	assert_int_equal(v.flag, 1);
	assert_int_equal(v.jobs, 1);
	assert_string_equal(v.str, "abc");
	assert_string_equal(v.path, "y");
	assert_int_equal(v.report, 1);

	/* bundled short flags, then a value: the rest of the word; a value that looks like an
	 * option is still the value */
	n = run(&v, 0, &err, &av, 3, "-fqj16", "-o", "-q");
	assert_int_equal(n, 0);
	assert_int_equal(v.flag + v.quiet, 2);
	assert_int_equal(v.jobs, 16);
	assert_string_equal(v.path, "-q");

	/* a list keeps every value in order */
	n = run(&v, 0, &err, &av, 4, "--group", "a", "--group", "b");
	assert_int_equal(n, 0);
	assert_int_equal(v.list.nr, 2);
	assert_string_equal(v.list.v[0], "a");
	assert_string_equal(v.list.v[1], "b");
	parseopt_list_release(&v.list);
	assert_null(v.list.v);
	strbuf_release(&err);
}

static void test_positional(void **state)
{
	struct vars v;
	struct strbuf err = STRBUF_INIT;
	char **av;
	/* mixed in any order; "-" is positional; "--" ends the options and is consumed */
	int n = run(&v, 0, &err, &av, 8, "a", "-q", "-", "-o", "d", "b", "--", "-f");
	assert_int_equal(n, 4);
	assert_string_equal(av[0], "a");
	assert_string_equal(av[1], "-");
	assert_string_equal(av[2], "b");
	assert_string_equal(av[3], "-f");
	assert_null(av[4]);
	assert_int_equal(v.quiet, 1);
	assert_int_equal(v.flag, 0);
	assert_string_equal(v.path, "d");

	/* stop at the first positional: the rest is someone else's argv */
	n = run(&v, PARSEOPT_STOP_AT_NON_OPTION, &err, &av, 5, "-o", "t", "prog", "-q", "--");
	assert_int_equal(n, 3);
	assert_string_equal(av[0], "prog");
	assert_string_equal(av[1], "-q");
	assert_string_equal(av[2], "--");
	assert_int_equal(v.quiet, 0);
	assert_string_equal(v.path, "t");

	n = run(&v, PARSEOPT_STOP_AT_NON_OPTION, &err, &av, 3, "-q", "--", "-f");
	assert_int_equal(n, 1);
	assert_string_equal(av[0], "-f");
	assert_int_equal(v.quiet, 1);
	assert_int_equal(v.flag, 0);

	n = run(&v, 0, &err, &av, 0);
	assert_int_equal(n, 0);
	strbuf_release(&err);
}

static void expect_error(int nw, const char *a1, const char *a2, const char *msg)
{
	struct vars v;
	struct strbuf err = STRBUF_INIT;
	char **av;
	int n = nw == 1 ? run(&v, 0, &err, &av, 1, a1) : run(&v, 0, &err, &av, 2, a1, a2);
	assert_int_equal(n, PARSEOPT_ERROR);
	assert_non_null(err.buf);
	assert_string_equal(err.buf, msg);
	parseopt_list_release(&v.list);
	strbuf_release(&err);
}

static void test_errors(void **state)
{
	expect_error(1, "--nope", NULL, "unknown option '--nope'");
	expect_error(1, "--nope=3", NULL, "unknown option '--nope'");
	expect_error(1, "-x", NULL, "unknown option '-x'");
	expect_error(1, "-fx", NULL, "unknown option '-x'");
	expect_error(2, "-j", "abc", "option '-j' expects a number from 1 to 1024, not 'abc'");
	expect_error(1, "--jobs=0", NULL,
	             "option '--jobs' expects a number from 1 to 1024, not '0'");
	expect_error(2, "-j", "1025", "option '-j' expects a number from 1 to 1024, not '1025'");
	expect_error(2, "-j", "4x", "option '-j' expects a number from 1 to 1024, not '4x'");
	expect_error(2, "-j", " 4", "option '-j' expects a number from 1 to 1024, not ' 4'");
	expect_error(2, "-j", "", "option '-j' expects a number from 1 to 1024, not ''");
	expect_error(2, "-j", "99999999999999999999",
	             "option '-j' expects a number from 1 to 1024, not '99999999999999999999'");
	expect_error(1, "-j", NULL, "option '-j' requires a value");
	expect_error(1, "--output", NULL, "option '--output' requires a value");
	expect_error(1, "--flag=1", NULL, "option '--flag' takes no value");
	expect_error(1, "--no-report=yes", NULL, "option '--no-report' takes no value");
	expect_error(2, "-o", "", "option '-o' expects a path, not ''");
	expect_error(1, "--group=", NULL, "option '--group' expects a path, not ''");

	/* -h and --help are built in, anywhere among the options, but not after "--" */
	struct vars v;
	struct strbuf err = STRBUF_INIT;
	char **av;
	assert_int_equal(run(&v, 0, &err, &av, 2, "a", "-h"), PARSEOPT_HELP);
	assert_int_equal(run(&v, 0, &err, &av, 2, "-q", "--help"), PARSEOPT_HELP);
	assert_int_equal(run(&v, 0, &err, &av, 1, "-qh"), PARSEOPT_HELP);
	assert_int_equal(run(&v, 0, &err, &av, 2, "--", "-h"), 1);
	assert_int_equal(run(&v, PARSEOPT_STOP_AT_NON_OPTION, &err, &av, 2, "p", "-h"), 2);
	strbuf_release(&err);
}

static const char *const usage[] = {
    "cmd [-f] [-j N] ARG...", "cmd --group G.json...", "", "Does things.", NULL,
};

static const char want_help[] = "usage: cmd [-f] [-j N] ARG...\n"
                                "   or: cmd --group G.json...\n"
                                "\n"
                                "Does things.\n"
                                "\n"
                                "    -f, --flag            a flag\n"
                                "    -q                    quiet\n"
                                "    --no-report           no report\n"
                                "    -j, --jobs N          at most N at once\n"
                                "    -s, --str TEXT        any text\n"
                                "    -o, --output DIR      write into DIR\n"
                                "                          and nowhere else\n"
                                "    --group G.json        a group (repeatable)\n";

static void test_usage_text(void **state)
{
	struct vars v;
	struct parseopt opts[8];
	table(&v, opts);
	struct strbuf sb = STRBUF_INIT;
	parseopt_usage(&sb, usage, opts);
	assert_string_equal(sb.buf, want_help);
	strbuf_release(&sb);

	/* no options, no description; an option wider than the column gets a line of its own */
	static const char *const u1[] = {"cmd DIR", NULL};
	int x = 0;
	struct parseopt wide[] = {
	    OPT_INT(0, "a-very-long-option-name", &x, "COUNT", 0, 9, "help"),
	    OPT_END(),
	};
	parseopt_usage(&sb, u1, wide + 1);
	assert_string_equal(sb.buf, "usage: cmd DIR\n");
	strbuf_reset(&sb);
	parseopt_usage(&sb, u1, wide);
	assert_string_equal(sb.buf, "usage: cmd DIR\n\n"
	                            "    --a-very-long-option-name COUNT\n"
	                            "                          help\n");
	strbuf_release(&sb);
}

/* Runs parse_options on the words in a child; returns its exit status (-1: it returned). The
 * child's stdout and stderr go to out and err. */
static int child(const char *const *words, int nw, FILE *out, FILE *err)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		struct vars v;
		struct parseopt opts[8];
		table(&v, opts);
		char *argv[16] = {"cmd"};
		for (int i = 0; i < nw; i++)
			argv[i + 1] = (char *)words[i];
		parse_options(nw + 1, argv, opts, usage, 0);
		_exit(v.jobs == 3 ? 42 : 43);
	}
	int st;
	assert_true(waitpid(pid, &st, 0) == pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static char *contents(FILE *f)
{
	static char buf[4096];
	fflush(f);
	rewind(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	rewind(f);
	assert_int_equal(ftruncate(fileno(f), 0), 0);
	return buf;
}

static void test_exits(void **state)
{
	FILE *out = tmpfile(), *err = tmpfile();
	assert_non_null(out);
	assert_non_null(err);
	const char *help[] = {"--help"};
	assert_int_equal(child(help, 1, out, err), 0);
	assert_string_equal(contents(out), want_help);
	assert_string_equal(contents(err), "");

	const char *bad[] = {"-j", "abc"};
	assert_int_equal(child(bad, 2, out, err), 129);
	assert_string_equal(contents(out), "");
	char *e = contents(err);
	const char *msg = "error: option '-j' expects a number from 1 to 1024, not 'abc'\n";
	assert_non_null(strstr(e, msg));
	assert_string_equal(strstr(e, msg) + strlen(msg), want_help);

	const char *good[] = {"x", "-j3"};
	assert_int_equal(child(good, 2, out, err), 42);
	assert_string_equal(contents(err), "");

	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(fileno(err), 2);
		struct parseopt none[] = {OPT_END()};
		usage_with_options(usage, none);
	}
	int st;
	assert_true(waitpid(pid, &st, 0) == pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 129);
	assert_string_equal(contents(err), "usage: cmd [-f] [-j N] ARG...\n"
	                                   "   or: cmd --group G.json...\n\nDoes things.\n");
	fclose(out);
	fclose(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kinds),  cmocka_unit_test(test_positional),
	    cmocka_unit_test(test_errors), cmocka_unit_test(test_usage_text),
	    cmocka_unit_test(test_exits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
