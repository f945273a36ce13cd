/*
 * stepwin-sim.c - the shim's step window (preload/stepwin.c, the same code) run over a
 * recorded op sequence, as the writer thread would run it; tests/tools/stepwin-sim.py makes the
 * sequences from the sample traces and checks where the window closes.
 *
 * Input: one op a line, "KEY TS" (the key a non-negative integer, TS the op's CPU time in ns;
 * period-check.c's format, whose third field is read past). The ops are noted in order, and the
 * poll runs after every POLL_EVERY ops (the writer polls every 50 ms: about 2,000 of a
 * transformer's launches). Options: --steps N (default 100), --seconds S (default 2).
 * Output: {"n":..,"closed_at":N or null,"why":".."}: closed_at is the count of ops noted when
 * the poll first said close. A bad line is an error naming the file and line.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/stepwin.h"

#define POLL_EVERY 2000

/* the shim's base: its one message, unused here */
void shim_debug(const char *fmt, ...)
{
	(void)fmt;
}

int main(int argc, char **argv)
{
	int steps = 100;
	double secs = 2;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			secs = atof(argv[++i]);
		else
			path = argv[i];
	}
	if (!path) {
		fprintf(stderr, "usage: stepwin-sim [--steps N] [--seconds S] SEQFILE\n");
		return 2;
	}
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "stepwin-sim: cannot open '%s'\n", path);
		return 1;
	}
	stepwin_init(steps, secs);
	char line[256], why[512] = "";
	long ln = 0;
	uint64_t n = 0, closed = 0;
	while (fgets(line, sizeof(line), f)) {
		ln++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		char *end, *e2;
		unsigned long k = strtoul(line, &end, 10);
		double ts = strtod(end, &e2);
		if (end == line || e2 == end || k > UINT32_MAX) {
			fprintf(stderr, "stepwin-sim: %s:%ld: expected 'KEY TS'\n", path, ln);
			fclose(f);
			return 1;
		}
		stepwin_note(n, (uint32_t)k, (uint64_t)ts);
		n++;
		if (!closed && n % POLL_EVERY == 0 && stepwin_poll(why, sizeof(why)))
			closed = n;
	}
	fclose(f);
	if (!closed && stepwin_poll(why, sizeof(why)))
		closed = n;
	printf("{\"n\":%llu,\"closed_at\":", (unsigned long long)n);
	if (closed)
		printf("%llu", (unsigned long long)closed);
	else
		printf("null");
	printf(",\"why\":\"%s\"}\n", closed ? why : "");
	return 0;
}
