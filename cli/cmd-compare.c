/*
 * cmd-compare.c - `aicprof compare BEFORE AFTER`: two runs side by side.
 *
 * Each side is a trace (analysed here, in-process, with analysis_run() and summary_json()) or
 * a directory holding summary.json that `aicprof analyze` wrote (read and checked by
 * summary_read(): a file that is not a summary is refused by name). Both end up as the same JSON
 * object, so the table is built from summary.json's fields only: step median and count, the
 * ledger per step (bytes, round-trip bytes and share, kernel time), the time per kernel
 * family (union of both sides' families), and the candidates: one present before and not
 * after (matched by kind and the ops of its nodes) is listed as gone, one new after as new.
 * The table goes to stdout; the exit status is 0 when both sides could be read, else 1.
 */
#include "aicprof.h"
#include "analyzer/model.h"
#include "lib/json.h"
#include "lib/parseopt.h"
#include "lib/summary.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The summary of a trace or an analysed directory, as a new cJSON; NULL after error(). */
static cJSON *load_side(const char *path)
{
	struct stat st;
	if (stat(path, &st)) {
		error("cannot read '%s': %m", path);
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		char *p = path_join(path, "summary.json");
		if (access(p, F_OK)) {
			error("cannot read '%s': %m (run aicprof analyze first)", p);
			free(p);
			return NULL;
		}
		cJSON *j = summary_read(p);
		free(p);
		return j;
	}
	char *paths[1] = {(char *)path};
	struct model *m = analysis_run(paths, 1);
	if (!m)
		return NULL;
	cJSON *j = summary_json(m);
	model_free(m);
	return j;
}

static double num(const cJSON *o, const char *a, const char *b, const char *c)
{
	const char *last = c ? c : b ? b : a;
	if (b)
		o = jobj(o, a);
	if (c)
		o = jobj(o, b);
	return jnumd(o, last, -1);
}

static void row(const char *what, double a, double b, const char *unit, double scale)
{
	char sa[32] = "-", sb[32] = "-", sc[32] = "";
	if (a >= 0)
		snprintf(sa, sizeof(sa), "%.1f", a / scale);
	if (b >= 0)
		snprintf(sb, sizeof(sb), "%.1f", b / scale);
	if (a > 0 && b >= 0)
		snprintf(sc, sizeof(sc), "%+.1f%%", (b - a) / a * 100);
	printf("%-34s %14s %14s %9s  %s\n", what, sa, sb, sc, unit);
}

/* "kind: op -> op -> op" of a candidate, a new string. */
static char *cand_key(const cJSON *s, const cJSON *c)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(s, "nodes"), *n;
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(c, "kind");
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s:", cJSON_IsString(kind) ? kind->valuestring : "?");
	int first = 1;
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(c, "nodes"))
	{
		const cJSON *nd = cJSON_GetArrayItem(nodes, (int)n->valuedouble);
		const cJSON *op = nd ? cJSON_GetObjectItemCaseSensitive(nd, "op") : NULL;
		const cJSON *nm = nd ? cJSON_GetObjectItemCaseSensitive(nd, "name") : NULL;
		const char *s1 = cJSON_IsString(op) && strcmp(op->valuestring, "unknown")
		                     ? op->valuestring
		                 : cJSON_IsString(nm) ? nm->valuestring
		                                      : "?";
		strbuf_addf(&sb, "%s%s", first ? " " : " -> ", s1);
		first = 0;
	}
	return sb.buf;
}

static int has_key(const cJSON *s, const char *key)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(s, "candidates"))
	{
		char *k = cand_key(s, c);
		int eq = !strcmp(k, key);
		free(k);
		if (eq)
			return 1;
	}
	return 0;
}

/* Candidates of a present in neither... of b: printed under title. Returns the count. */
static int cands_missing(const cJSON *a, const cJSON *b, const char *title)
{
	int n = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(a, "candidates"))
	{
		char *k = cand_key(a, c);
		if (!has_key(b, k)) {
			if (!n++)
				printf("\n%s\n", title);
			printf("  %-70s %10.1f KiB/step %8.1f us/step\n", k,
			       num(c, "bytes_saved_per_step", NULL, NULL) / 1024,
			       num(c, "time_saved_us_per_step", NULL, NULL));
		}
		free(k);
	}
	return n;
}

static double family_us(const cJSON *s, const char *fam)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
	                          cJSON_GetObjectItemCaseSensitive(s, "ledger"), "by_family"))
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(f, "family");
		if (cJSON_IsString(nm) && !strcmp(nm->valuestring, fam))
			return num(f, "us", NULL, NULL);
	}
	return -1;
}

static void print_compare(const char *pa, const cJSON *a, const char *pb, const cJSON *b)
{
	printf("%-34s %14s %14s %9s\n", "", "before", "after", "change");
	const cJSON *ga = cJSON_GetObjectItemCaseSensitive(a, "program");
	const cJSON *gb = cJSON_GetObjectItemCaseSensitive(b, "program");
	printf("%-34s %s\n%-34s %s\n", "before", pa, "after", pb);
	if (cJSON_IsString(ga) && cJSON_IsString(gb))
		printf("%-34s %s | %s\n", "program", ga->valuestring, gb->valuestring);
	row("steps", num(a, "steps", "count", NULL), num(b, "steps", "count", NULL), "", 1);
	row("step median", num(a, "steps", "median_us", NULL), num(b, "steps", "median_us", NULL),
	    "us", 1);
	row("step p90", num(a, "steps", "p90_us", NULL), num(b, "steps", "p90_us", NULL), "us", 1);
	row("bytes per step", num(a, "ledger", "per_step", "bytes_total"),
	    num(b, "ledger", "per_step", "bytes_total"), "MiB", 1048576);
	row("round-trip bytes per step", num(a, "ledger", "per_step", "roundtrip_bytes"),
	    num(b, "ledger", "per_step", "roundtrip_bytes"), "MiB", 1048576);
	double sa = num(a, "ledger", "per_step", "roundtrip_share");
	double sb = num(b, "ledger", "per_step", "roundtrip_share");
	row("round-trip share", sa >= 0 ? sa * 100 : -1, sb >= 0 ? sb * 100 : -1, "%", 1);
	row("kernel time per step", num(a, "ledger", "per_step", "kernel_us"),
	    num(b, "ledger", "per_step", "kernel_us"), "us", 1);
	row("nodes per step", num(a, "steps", "period", NULL), num(b, "steps", "period", NULL), "",
	    1);
	printf("\ntime per step by family\n");
	const cJSON *sides[2] = {a, b}, *f;
	for (int s = 0; s < 2; s++)
		cJSON_ArrayForEach(
		    f, cJSON_GetObjectItemCaseSensitive(
		           cJSON_GetObjectItemCaseSensitive(sides[s], "ledger"), "by_family"))
		{
			const cJSON *nm = cJSON_GetObjectItemCaseSensitive(f, "family");
			if (!cJSON_IsString(nm) || (s == 1 && family_us(a, nm->valuestring) >= 0))
				continue;
			char what[64];
			snprintf(what, sizeof(what), "  %s", nm->valuestring);
			row(what, family_us(a, nm->valuestring), family_us(b, nm->valuestring),
			    "us", 1);
		}
	int na = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "candidates"));
	int nb = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b, "candidates"));
	printf("\n");
	row("candidates", na, nb, "", 1);
	if (!cands_missing(a, b, "candidates gone after (present before)"))
		printf("\ncandidates gone after: none\n");
	if (!cands_missing(b, a, "candidates new after"))
		printf("candidates new after: none\n");
}

static const char *const compare_usage[] = {
    "aicprof compare BEFORE AFTER",
    "",
    "BEFORE and AFTER are traces or directories that 'aicprof analyze' wrote.",
    NULL,
};

int cmd_compare(int argc, char **argv)
{
	const struct parseopt options[] = {OPT_END()};
	argc = parse_options(argc, argv, options, compare_usage, 0);
	if (argc != 2) {
		if (argc > 2)
			error("compare: unexpected argument '%s'", argv[2]);
		else
			error("compare: needs two runs, BEFORE and AFTER");
		usage_with_options(compare_usage, options);
	}
	const char *side[2] = {argv[0], argv[1]};
	cJSON *a = load_side(side[0]);
	cJSON *b = a ? load_side(side[1]) : NULL;
	if (!a || !b) {
		cJSON_Delete(a);
		return 1;
	}
	print_compare(side[0], a, side[1], b);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return 0;
}
