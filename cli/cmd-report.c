/*
 * cmd-report.c - "aicprof report DIR": writes report.html, graph.dot, graph.svg and
 * trace.perfetto.json into DIR from DIR/summary.json (see report.h), and prints the path of
 * report.html. `aicprof analyze` does the same after writing summary.json.
 */
#include "aicprof.h"
#include "lib/util.h"
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
    "usage: aicprof report DIR\n\n"
    "Writes report.html, graph.dot, graph.svg and trace.perfetto.json "
    "into DIR\nfrom DIR/summary.json (written by 'aicprof analyze').\n";

int cmd_report(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(report_usage, stdout);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fputs(report_usage, stderr);
		return 129;
	}
	if (report_write_all(argv[1]) < 0)
		return 1;
	char *path = path_join(argv[1], "report.html");
	printf("%s\n", path);
	free(path);
	return 0;
}
