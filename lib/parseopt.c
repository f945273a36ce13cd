/*
 * parseopt.c - the option parser of parseopt.h: one pass over argv against a command's table.
 *
 * Each argument is a positional one (moved down to argv[n++], in order), "--" (the rest are
 * positional), a long option ("--name" or "--name=value", matched whole, never abbreviated)
 * or a run of short options ("-qj4": each letter a flag until one takes a value, which is the
 * rest of the argument or else the next one). Values are checked by kind as they are stored;
 * the first bad one ends the parse with a message naming the option as it was typed. The
 * usage text puts each option on a line, git's layout: "    -o, --output DIR" padded to
 * column 26, then its help.
 */
#include "lib/parseopt.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define USAGE_OPTS_WIDTH 24
#define USAGE_GAP        2

void parseopt_list_release(struct parseopt_list *l)
{
	free(l->v);
	l->v = NULL;
	l->nr = l->alloc = 0;
}

static const struct parseopt *find_short(const struct parseopt *o, int c)
{
	for (; o->kind != PARSEOPT_END; o++)
		if (o->short_name && o->short_name == c)
			return o;
	return NULL;
}

static const struct parseopt *find_long(const struct parseopt *o, const char *name, size_t len)
{
	for (; o->kind != PARSEOPT_END; o++)
		if (o->long_name && strlen(o->long_name) == len &&
		    !strncmp(o->long_name, name, len))
			return o;
	return NULL;
}

/* Stores arg as o's value; name is the option as typed ("-j", "--jobs"). Returns 0 or
 * PARSEOPT_ERROR with the message in err. */
static int set_value(const struct parseopt *o, const char *name, const char *arg,
                     struct strbuf *err)
{
	switch (o->kind) {
	case PARSEOPT_INT: {
		char *end;
		errno = 0;
		long v = strtol(arg, &end, 10);
		int digits = isdigit((unsigned char)arg[0]) ||
		             ((arg[0] == '-' || arg[0] == '+') && isdigit((unsigned char)arg[1]));
		if (!digits || *end || errno || v < o->min || v > o->max) {
			strbuf_addf(err, "option '%s' expects a number from %ld to %ld, not '%s'",
			            name, o->min, o->max, arg);
			return PARSEOPT_ERROR;
		}
		*(int *)o->value = (int)v;
		return 0;
	}
	case PARSEOPT_STRING:
		*(const char **)o->value = arg;
		return 0;
	case PARSEOPT_PATH:
	case PARSEOPT_PATH_LIST:
		if (!*arg) {
			strbuf_addf(err, "option '%s' expects a path, not ''", name);
			return PARSEOPT_ERROR;
		}
		if (o->kind == PARSEOPT_PATH) {
			*(const char **)o->value = arg;
		} else {
			struct parseopt_list *l = o->value;
			ALLOC_GROW(l->v, l->nr, l->alloc);
			l->v[l->nr++] = arg;
		}
		return 0;
	case PARSEOPT_FLAG:
		*(int *)o->value = (int)o->min;
		return 0;
	case PARSEOPT_END:
		break;
	}
	BUG("option '%s' of kind %d", name, (int)o->kind);
}

/* One long option, argv[*i] = "--...". Returns 0, PARSEOPT_HELP or PARSEOPT_ERROR. */
static int parse_long(const struct parseopt *opts, int argc, char **argv, int *i,
                      struct strbuf *err)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct parseopt *o = find_long(opts, name, len);
	if (!o && !eq && !strcmp(name, "help"))
		return PARSEOPT_HELP;
	if (!o) {
		strbuf_addf(err, "unknown option '--%.*s'", (int)len, name);
		return PARSEOPT_ERROR;
	}
	struct strbuf typed = STRBUF_INIT;
	strbuf_addf(&typed, "--%s", o->long_name);
	int rc = 0;
	if (o->kind == PARSEOPT_FLAG && eq) {
		strbuf_addf(err, "option '%s' takes no value", typed.buf);
		rc = PARSEOPT_ERROR;
	} else if (o->kind == PARSEOPT_FLAG) {
		rc = set_value(o, typed.buf, NULL, err);
	} else if (!eq && *i + 1 >= argc) {
		strbuf_addf(err, "option '%s' requires a value", typed.buf);
		rc = PARSEOPT_ERROR;
	} else {
		rc = set_value(o, typed.buf, eq ? eq + 1 : argv[++*i], err);
	}
	strbuf_release(&typed);
	return rc;
}

/* A run of short options, argv[*i] = "-...". Returns 0, PARSEOPT_HELP or PARSEOPT_ERROR. */
static int parse_short(const struct parseopt *opts, int argc, char **argv, int *i,
                       struct strbuf *err)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		const struct parseopt *o = find_short(opts, (unsigned char)*p);
		char typed[3] = {'-', *p, 0};
		if (!o && *p == 'h')
			return PARSEOPT_HELP;
		if (!o) {
			strbuf_addf(err, "unknown option '%s'", typed);
			return PARSEOPT_ERROR;
		}
		if (o->kind == PARSEOPT_FLAG) {
			set_value(o, typed, NULL, err);
			continue;
		}
		if (p[1])
			return set_value(o, typed, p + 1, err);
		if (*i + 1 >= argc) {
			strbuf_addf(err, "option '%s' requires a value", typed);
			return PARSEOPT_ERROR;
		}
		return set_value(o, typed, argv[++*i], err);
	}
	return 0;
}

int parse_options_gently(int argc, char **argv, const struct parseopt *opts, int flags,
                         struct strbuf *err)
{
	int n = 0, i = 1;
	if (argc < 1)
		return 0;
	for (; i < argc; i++) {
		char *a = argv[i];
		if (a[0] != '-' || !a[1]) {
			if (flags & PARSEOPT_STOP_AT_NON_OPTION)
				break;
			argv[n++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		int rc = a[1] == '-' ? parse_long(opts, argc, argv, &i, err)
		                     : parse_short(opts, argc, argv, &i, err);
		if (rc)
			return rc;
	}
	while (i < argc)
		argv[n++] = argv[i++];
	argv[n] = NULL; /* n < argc: argv[0] is never positional */
	return n;
}

void parseopt_usage(struct strbuf *sb, const char *const *usage, const struct parseopt *opts)
{
	int k = 0;
	for (; usage[k] && *usage[k]; k++)
		strbuf_addf(sb, "%s%s\n", k ? "   or: " : "usage: ", usage[k]);
	if (usage[k]) {
		strbuf_adds(sb, "\n");
		for (k++; usage[k]; k++)
			strbuf_addf(sb, "%s\n", usage[k]);
	}
	if (opts->kind != PARSEOPT_END)
		strbuf_adds(sb, "\n");
	for (const struct parseopt *o = opts; o->kind != PARSEOPT_END; o++) {
		size_t start = sb->len;
		strbuf_adds(sb, "    ");
		if (o->short_name)
			strbuf_addf(sb, "-%c", o->short_name);
		if (o->short_name && o->long_name)
			strbuf_adds(sb, ", ");
		if (o->long_name)
			strbuf_addf(sb, "--%s", o->long_name);
		if (o->kind != PARSEOPT_FLAG)
			strbuf_addf(sb, " %s", o->argh ? o->argh : "VALUE");
		size_t pos = sb->len - start;
		if (pos > USAGE_OPTS_WIDTH) {
			strbuf_adds(sb, "\n");
			pos = 0;
		}
		strbuf_addf(sb, "%*s", (int)(USAGE_OPTS_WIDTH + USAGE_GAP - pos), "");
		for (const char *h = o->help ? o->help : ""; *h; h++) {
			strbuf_add(sb, h, 1);
			if (*h == '\n' && h[1])
				strbuf_addf(sb, "%*s", USAGE_OPTS_WIDTH + USAGE_GAP, "");
		}
		strbuf_adds(sb, "\n");
	}
}

void usage_with_options(const char *const *usage, const struct parseopt *opts)
{
	struct strbuf sb = STRBUF_INIT;
	parseopt_usage(&sb, usage, opts);
	fputs(sb.buf ? sb.buf : "", stderr);
	strbuf_release(&sb);
	exit(129);
}

int parse_options(int argc, char **argv, const struct parseopt *opts, const char *const *usage,
                  int flags)
{
	struct strbuf err = STRBUF_INIT;
	int n = parse_options_gently(argc, argv, opts, flags, &err);
	if (n == PARSEOPT_HELP) {
		struct strbuf sb = STRBUF_INIT;
		parseopt_usage(&sb, usage, opts);
		fputs(sb.buf ? sb.buf : "", stdout);
		strbuf_release(&sb);
		strbuf_release(&err);
		exit(0);
	}
	if (n == PARSEOPT_ERROR) {
		error("%s", err.buf);
		strbuf_release(&err);
		usage_with_options(usage, opts);
	}
	strbuf_release(&err);
	return n;
}
