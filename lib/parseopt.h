/*
 * parseopt.h - the one option parser of the aicprof subcommands, after git's parse-options.
 *
 * A command describes its options in a table (an array of struct parseopt ending with
 * OPT_END()): each entry has a short name ('o'), a long name ("output"), a kind, the variable
 * it sets, the name of its argument in the help ("DIR") and one line of help. parse_options()
 * walks argv against the table and sets the variables; the usage text of `-h`/`--help` and of
 * every error is generated from the same table, so it cannot drift from what is accepted.
 *
 * Syntax: `-o VAL`, `-oVAL`, `--output VAL`, `--output=VAL`; short flags bundle (`-qj4` is
 * `-q -j 4`); an option that takes a value takes the next argument whatever it looks like;
 * `--` ends the options (it is consumed, everything after it is positional); a lone `-` is a
 * positional argument (stdin). Options and positional arguments mix in any order, unless
 * PARSEOPT_STOP_AT_NON_OPTION is given (record: the first positional argument starts the
 * program's own argv). `-h` and `--help` are built in.
 *
 * Errors: "unknown option '--foo'", "option '-j' expects a number from 1 to 1024, not 'abc'",
 * "option '-o' requires a value", "option '--retune' takes no value", "option '-o' expects a
 * path, not ''"; parse_options() prints the error and the usage to stderr and exits 129, as
 * git does; `-h` prints the usage to stdout and exits 0.
 */
#ifndef AICPROF_PARSEOPT_H
#define AICPROF_PARSEOPT_H

#include "lib/util.h"

enum parseopt_kind {
	PARSEOPT_END = 0,   /* the end of the table */
	PARSEOPT_FLAG,      /* no value: stores min into *(int *)value */
	PARSEOPT_INT,       /* a decimal number from min to max into *(int *)value */
	PARSEOPT_STRING,    /* any string (empty too) into *(const char **)value */
	PARSEOPT_PATH,      /* a non-empty string into *(const char **)value */
	PARSEOPT_PATH_LIST, /* repeatable: each non-empty value appended to a parseopt_list */
};

/* One entry of a command's table. Use the OPT_* macros below rather than filling it in. */
struct parseopt {
	enum parseopt_kind kind;
	int short_name;        /* 0: none */
	const char *long_name; /* NULL: none; without the leading "--" */
	void *value;           /* int *, const char ** or struct parseopt_list *, by kind */
	const char *argh;      /* the argument's name in the help ("DIR"); NULL for flags */
	const char *help;      /* one line; a '\n' continues it under the help column */
	long min, max;         /* PARSEOPT_INT: the range; PARSEOPT_FLAG: min is stored */
};

/* The values of a PARSEOPT_PATH_LIST option, in order. v points into argv (the strings are
 * not copied); release the array with parseopt_list_release(). Initialise with {0}. */
struct parseopt_list {
	const char **v;
	int nr, alloc;
};
void parseopt_list_release(struct parseopt_list *l);

/* clang-format off */
#define OPT_END()                      {PARSEOPT_END, 0, NULL, NULL, NULL, NULL, 0, 0}
#define OPT_FLAG(s, l, v, h)           {PARSEOPT_FLAG, (s), (l), (v), NULL, (h), 1, 0}
#define OPT_SET_INT(s, l, v, val, h)   {PARSEOPT_FLAG, (s), (l), (v), NULL, (h), (val), 0}
#define OPT_INT(s, l, v, a, lo, hi, h) {PARSEOPT_INT, (s), (l), (v), (a), (h), (lo), (hi)}
#define OPT_STRING(s, l, v, a, h)      {PARSEOPT_STRING, (s), (l), (v), (a), (h), 0, 0}
#define OPT_PATH(s, l, v, a, h)        {PARSEOPT_PATH, (s), (l), (v), (a), (h), 0, 0}
#define OPT_PATH_LIST(s, l, v, a, h)   {PARSEOPT_PATH_LIST, (s), (l), (v), (a), (h), 0, 0}
/* clang-format on */

/* flags of parse_options() */
#define PARSEOPT_STOP_AT_NON_OPTION 1 /* the first positional argument ends the options */

/* results of parse_options_gently() besides a count */
#define PARSEOPT_HELP  (-1)
#define PARSEOPT_ERROR (-2)

/*
 * Parses argv[1..argc) (argv[0] is the command's name) against opts, setting the variables the
 * entries name. The positional arguments, in order, are moved to argv[0..n) and argv[n] is set
 * to NULL; returns n. usage is a NULL-terminated array: the usage lines ("aicprof analyze
 * [-o DIR] TRACE..."), then optionally an empty string and lines of description. On -h/--help
 * it prints the usage to stdout and exits 0; on a bad option or value, the error and the usage
 * to stderr and exits 129. Never returns a negative number.
 */
int parse_options(int argc, char **argv, const struct parseopt *opts, const char *const *usage,
                  int flags);

/*
 * parse_options() without output or exit: returns the count of positional arguments as above,
 * PARSEOPT_HELP when -h/--help was given, or PARSEOPT_ERROR with the message (no "error: "
 * prefix) appended to err. After PARSEOPT_ERROR or PARSEOPT_HELP, argv's order and the
 * variables set so far are unspecified.
 */
int parse_options_gently(int argc, char **argv, const struct parseopt *opts, int flags,
                         struct strbuf *err);

/* Appends the usage text built from usage and opts to sb (what -h prints). */
void parseopt_usage(struct strbuf *sb, const char *const *usage, const struct parseopt *opts);

/* Prints the usage to stderr and exits 129: for the command's own checks of its positional
 * arguments, after error() has said what is wrong. */
__attribute__((noreturn)) void usage_with_options(const char *const *usage,
                                                  const struct parseopt *opts);

#endif
