/*
 * cmd-report.c - "aicprof report DIR": writes report.html, graph.dot, graph.svg and
 * trace.perfetto.json into DIR from DIR/summary.json (see report.h), and prints the path of
 * report.html. `aicprof analyze` does the same after writing summary.json.
 */
#include "aicprof.h"
#include "lib/parseopt.h"
#include "lib/util.h"
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

static const char *const report_usage[] = {
    "aicprof report DIR",
    "",
    "Writes report.html, graph.dot, graph.svg and trace.perfetto.json into DIR",
    "from DIR/summary.json (written by 'aicprof analyze').",
    NULL,
};

int cmd_report(int argc, char **argv)
{
	const struct parseopt options[] = {OPT_END()};
	argc = parse_options(argc, argv, options, report_usage, 0);
	if (argc != 1) {
		error(argc ? "report takes one directory" : "no directory to report on");
		usage_with_options(report_usage, options);
	}
	if (report_write_all(argv[0]) < 0)
		return 1;
	char *path = path_join(argv[0], "report.html");
	printf("%s\n", path);
	free(path);
	return 0;
}
