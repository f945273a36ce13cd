/*
 * period-check.c - runs period_find (analyzer/period.c) on a key sequence and prints the
 * result as one JSON object; tests/tools/period-check.py extracts the sequences from traces.
 *
 * Input file: one op a line, "KEY [TS [SYNC]]" (KEY a non-negative integer; the rest, CPU time
 * and the sync flag, is read past: the finder uses the keys only). Lines starting with '#'
 * are comments. A bad line is an error naming the file and line.
 * Output: {"n":..,"method":..,"period":..,"steps":[[s,e],..],"similarity":[..],
 * "prelude":[s,e],"epilogue":[s,e],"confidence":..,"steady":..,"reason":".."}.
 * period-check --bench N P: times period_find on N ops of period P with 1 % noise (stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/period.h"
#include "lib/util.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void print(const struct period_result *r, size_t n)
{
	printf("{\"n\":%zu,\"method\":\"%s\",\"period\":%zu,\"steps\":[", n, r->method, r->period);
	for (size_t i = 0; i < r->nsteps; i++)
		printf("%s[%zu,%zu]", i ? "," : "", r->steps[i].start, r->steps[i].end);
	printf("],\"similarity\":[");
	for (size_t i = 0; i < r->nsteps; i++)
		printf("%s%.3f", i ? "," : "", r->similarity[i]);
	printf("],\"prelude\":[%zu,%zu],\"epilogue\":[%zu,%zu],\"confidence\":%.3f,\"steady\":%zu,"
	       "\"reason\":\"%s\"}\n",
	       r->prelude.start, r->prelude.end, r->epilogue.start, r->epilogue.end, r->confidence,
	       r->steady, r->reason);
}

static int bench(size_t n, size_t p)
{
	uint32_t *k = xmalloc(sizeof(*k) * n);
	unsigned s = 12345;
	for (size_t i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		k[i] = (s >> 16) % 100 == 0 ? 1000 + (s >> 8) % 50 : (uint32_t)(i % p);
	}
	struct period_result r;
	double t = now();
	period_find(k, n, &r);
	t = now() - t;
	fprintf(stderr, "period-check: %zu ops, period %zu: %zu steps of %zu in %.3f s\n", n, p,
	        r.nsteps, r.period, t);
	period_result_free(&r);
	free(k);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--bench"))
		return bench(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
	if (argc != 2)
		die("usage: period-check SEQFILE | --bench N P");
	FILE *f = fopen(argv[1], "r");
	if (!f)
		die("cannot open '%s': %m", argv[1]);
	uint32_t *k = NULL;
	size_t n = 0, cap = 0;
	char line[256];
	long ln = 0;
	while (fgets(line, sizeof(line), f)) {
		ln++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		char *end;
		unsigned long v = strtoul(line, &end, 10);
		if (end == line || v > UINT32_MAX)
			die("%s:%ld: bad key '%.*s'", argv[1], ln, (int)strcspn(line, "\n"), line);
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			k = xrealloc(k, sizeof(*k) * cap);
		}
		k[n++] = (uint32_t)v;
	}
	fclose(f);
	struct period_result r;
	period_find(k, n, &r);
	print(&r, n);
	period_result_free(&r);
	free(k);
	return 0;
}
