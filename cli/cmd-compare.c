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
 * Sizes and times go through one formatter each (fmt_size(), fmt_time(): the unit chosen by
 * magnitude, three significant digits). When the two sides are of different programs (the
 * program's name, or its script for an interpreter, differs, or fewer than a fifth of the
 * kernel names are shared) the first line says so. With --reference REF (a third run, read the
 * same way: typically the program under torch.compile), a line after the step rows says which
 * share of REF's step-time reduction AFTER recovers, (before - after) / (before - ref) of the
 * step medians, and in words what a share under 0 or over 100% means; no share when REF is not
 * faster than BEFORE or a side has no step median. REF's kernels are another compiler's, so no
 * note compares its names. The table goes to stdout; the exit status is 0 when every side could
 * be read, else 1.
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

/* v with three significant digits (no fewer than its integer digits) and unit, into buf */
static void sig3(char *buf, size_t n, double v, const char *unit)
{
	double a = v < 0 ? -v : v;
	int dec = a >= 99.95 || a == 0 ? 0 : a >= 9.995 ? 1 : 2;
	snprintf(buf, n, "%.*f %s", dec, v, unit);
}

/* bytes as B, KiB, MiB or GiB (the largest unit that leaves at least 1), three digits */
static void fmt_size(char *buf, size_t n, double bytes)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	while (u < 4 && (bytes >= 1023.95 * (double)(1L << (10 * u)) ||
	                 bytes <= -1023.95 * (double)(1L << (10 * u))))
		u++;
	if (u == 0)
		snprintf(buf, n, "%.0f B", bytes);
	else
		sig3(buf, n, bytes / (double)(1L << (10 * u)), unit[u]);
}

/* microseconds as µs, ms or s, three digits */
static void fmt_time(char *buf, size_t n, double us)
{
	double a = us < 0 ? -us : us;
	if (a < 999.95)
		sig3(buf, n, us, "µs");
	else if (a < 999950)
		sig3(buf, n, us / 1e3, "ms");
	else
		sig3(buf, n, us / 1e6, "s");
}

enum cell { C_COUNT, C_SIZE, C_TIME, C_PCT };

static void fmt_cell(char *buf, size_t n, double v, enum cell kind)
{
	if (v < 0)
		snprintf(buf, n, "-");
	else if (kind == C_SIZE)
		fmt_size(buf, n, v);
	else if (kind == C_TIME)
		fmt_time(buf, n, v);
	else if (kind == C_PCT)
		snprintf(buf, n, "%.1f%%", v);
	else
		snprintf(buf, n, "%.0f", v);
}

/* One row: what, before, after, the change in percent. µs takes one column more in bytes. */
static void row(const char *what, double a, double b, enum cell kind)
{
	char sa[32], sb[32], sc[32] = "";
	fmt_cell(sa, sizeof(sa), a, kind);
	fmt_cell(sb, sizeof(sb), b, kind);
	if (a > 0 && b >= 0)
		snprintf(sc, sizeof(sc), "%+.1f%%", (b - a) / a * 100);
	printf("%-34s %*s %*s %9s\n", what, 14 + (strstr(sa, "µ") != NULL), sa,
	       14 + (strstr(sb, "µ") != NULL), sb, sc);
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
			char sz[32], tm[32];
			fmt_cell(sz, sizeof(sz), num(c, "bytes_saved_per_step", NULL, NULL),
			         C_SIZE);
			fmt_cell(tm, sizeof(tm), num(c, "time_saved_us_per_step", NULL, NULL),
			         C_TIME);
			printf("  %-70s %10s/step %*s/step\n", k, sz,
			       10 + (strstr(tm, "µ") != NULL), tm);
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

/*
 * What names a program in summary.program ("python3 -u train.py --lr 1": "train.py"): the
 * basename of the script after an interpreter's options (python, bash, sh, node, ruby, perl),
 * else of the executable; into buf.
 */
static void prog_id(const char *prog, char *buf, size_t n)
{
	char w[4][256];
	int nw = 0;
	const char *p = prog;
	while (nw < 4 && *p) {
		while (*p == ' ')
			p++;
		size_t l = strcspn(p, " ");
		if (!l)
			break;
		snprintf(w[nw++], sizeof(w[0]), "%.*s", (int)(l < 255 ? l : 255), p);
		p += l;
	}
	if (!nw) {
		snprintf(buf, n, "%s", prog);
		return;
	}
	const char *exe = strrchr(w[0], '/') ? strrchr(w[0], '/') + 1 : w[0];
	static const char *const interp[] = {"python", "bash", "sh", "node", "ruby", "perl"};
	const char *id = exe;
	for (size_t i = 0; i < sizeof(interp) / sizeof(interp[0]); i++)
		if (!strncmp(exe, interp[i], strlen(interp[i])))
			for (int k = 1; k < nw; k++)
				if (w[k][0] != '-' || !strcmp(w[k], "-m")) {
					id = strcmp(w[k], "-m") || k + 1 >= nw ? w[k] : w[k + 1];
					id = strrchr(id, '/') ? strrchr(id, '/') + 1 : id;
					i = sizeof(interp) / sizeof(interp[0]) - 1;
					break;
				}
	snprintf(buf, n, "%s", id);
}

static int has_name(const cJSON *s, const char *name)
{
	const cJSON *n;
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(s, "nodes"))
	{
		const char *m = jstr(n, "name");
		if (m && !strcmp(m, name))
			return 1;
	}
	return 0;
}

/* The note, on the first line, when a and b are of two programs; nothing when they are one. */
static void note_programs(const cJSON *a, const cJSON *b)
{
	const char *ga = jstr(a, "program"), *gb = jstr(b, "program");
	char ia[256] = "", ib[256] = "";
	if (ga && gb) {
		prog_id(ga, ia, sizeof(ia));
		prog_id(gb, ib, sizeof(ib));
	}
	/* kernel names: shared / in either (each side's distinct names) */
	int shared = 0, onlya = 0, onlyb = 0;
	const cJSON *sides[2] = {a, b}, *n, *m;
	for (int s = 0; s < 2; s++) {
		int i = 0;
		cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(sides[s], "nodes"))
		{
			const char *name = jstr(n, "name");
			int j = 0, dup = 0;
			cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(sides[s], "nodes"))
			{
				if (j++ >= i)
					break;
				dup |= name && jstr(m, "name") && !strcmp(jstr(m, "name"), name);
			}
			i++;
			if (!name || dup)
				continue;
			int other = has_name(sides[!s], name);
			if (s == 0)
				other ? shared++ : onlya++;
			else if (!other)
				onlyb++;
		}
	}
	int all = shared + onlya + onlyb;
	int differ = (ia[0] && ib[0] && strcmp(ia, ib)) || (all && shared * 5 < all);
	if (!differ)
		return;
	struct strbuf why = STRBUF_INIT;
	if (ia[0] && ib[0] && strcmp(ia, ib))
		strbuf_addf(&why, "%s vs %s; ", ia, ib);
	strbuf_addf(&why, "%d of %d kernel names shared", shared, all);
	printf("note: BEFORE and AFTER run different programs (%s): the comparison is of two "
	       "programs, not of a change\n",
	       why.buf);
	strbuf_release(&why);
}

/*
 * The share of the reference's step-time reduction that AFTER recovers, as one line: a, b, r
 * are the step medians (µs; < 0 unknown) of BEFORE, AFTER and the reference (path pr).
 */
static void print_share(double a, double b, double r, const char *pr)
{
	char sa[32], sb[32], sr[32], dab[32], dar[32];
	printf("\n%-34s %s\n", "reference", pr);
	if (a <= 0 || b <= 0 || r <= 0) {
		printf("share of the reference's gain: none (a side has no step median)\n");
		return;
	}
	fmt_time(sa, sizeof(sa), a);
	fmt_time(sb, sizeof(sb), b);
	fmt_time(sr, sizeof(sr), r);
	fmt_time(dab, sizeof(dab), a - b);
	fmt_time(dar, sizeof(dar), a - r);
	printf("%-34s %14s\n", "reference step median", sr);
	if (r >= a) {
		printf("share of the reference's gain: none (the reference, %s, is not faster than "
		       "before, %s); after is %+.1f%% against before\n",
		       sr, sa, (b - a) / a * 100);
		return;
	}
	double share = (a - b) / (a - r) * 100;
	printf("share of the reference's gain: %.0f%% (before - after %s, before - reference %s)",
	       share, dab, dar);
	if (share < 0)
		printf(": after is slower than before\n");
	else if (share > 100)
		printf(": after is faster than the reference\n");
	else
		printf("\n");
}

static void print_compare(const char *pa, const cJSON *a, const char *pb, const cJSON *b,
                          const char *pr, const cJSON *r)
{
	note_programs(a, b);
	printf("%-34s %14s %14s %9s\n", "", "before", "after", "change");
	const cJSON *ga = cJSON_GetObjectItemCaseSensitive(a, "program");
	const cJSON *gb = cJSON_GetObjectItemCaseSensitive(b, "program");
	printf("%-34s %s\n%-34s %s\n", "before", pa, "after", pb);
	if (cJSON_IsString(ga) && cJSON_IsString(gb))
		printf("%-34s %s | %s\n", "program", ga->valuestring, gb->valuestring);
	row("steps", num(a, "steps", "count", NULL), num(b, "steps", "count", NULL), C_COUNT);
	row("step median", num(a, "steps", "median_us", NULL), num(b, "steps", "median_us", NULL),
	    C_TIME);
	row("step p90", num(a, "steps", "p90_us", NULL), num(b, "steps", "p90_us", NULL), C_TIME);
	if (r)
		print_share(num(a, "steps", "median_us", NULL), num(b, "steps", "median_us", NULL),
		            num(r, "steps", "median_us", NULL), pr);
	row("bytes per step", num(a, "ledger", "per_step", "bytes_total"),
	    num(b, "ledger", "per_step", "bytes_total"), C_SIZE);
	row("round-trip bytes per step", num(a, "ledger", "per_step", "roundtrip_bytes"),
	    num(b, "ledger", "per_step", "roundtrip_bytes"), C_SIZE);
	double sa = num(a, "ledger", "per_step", "roundtrip_share");
	double sb = num(b, "ledger", "per_step", "roundtrip_share");
	row("round-trip share", sa >= 0 ? sa * 100 : -1, sb >= 0 ? sb * 100 : -1, C_PCT);
	row("kernel time per step", num(a, "ledger", "per_step", "kernel_us"),
	    num(b, "ledger", "per_step", "kernel_us"), C_TIME);
	row("nodes per step", num(a, "steps", "period", NULL), num(b, "steps", "period", NULL),
	    C_COUNT);
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
			    C_TIME);
		}
	int na = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "candidates"));
	int nb = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b, "candidates"));
	printf("\n");
	row("candidates", na, nb, C_COUNT);
	if (!cands_missing(a, b, "candidates gone after (present before)"))
		printf("\ncandidates gone after: none\n");
	if (!cands_missing(b, a, "candidates new after"))
		printf("candidates new after: none\n");
}

static const char *const compare_usage[] = {
    "aicprof compare BEFORE AFTER [--reference REF]",
    "",
    "BEFORE and AFTER are traces or directories that 'aicprof analyze' wrote. REF, of the same",
    "kind, is a run to measure AFTER's gain against (the program under torch.compile, say).",
    NULL,
};

int cmd_compare(int argc, char **argv)
{
	const char *ref = NULL;
	const struct parseopt options[] = {
	    OPT_PATH(0, "reference", &ref, "REF",
	             "say which share of REF's step-time reduction AFTER recovers"),
	    OPT_END()};
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
	cJSON *r = b && ref ? load_side(ref) : NULL;
	if (!a || !b || (ref && !r)) {
		cJSON_Delete(a);
		cJSON_Delete(b);
		return 1;
	}
	print_compare(side[0], a, side[1], b, ref, r);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(r);
	return 0;
}
