/*
 * aicprof.c - the aicprof command: a table of subcommands and the dispatch to them.
 *
 * Each subcommand is a function cmd_<name>(argc, argv) in the directory of the stage it
 * drives (see aicprof.h); this file knows only their names and one line of help each.
 */
#include "aicprof.h"
#include "lib/util.h"

#include <stdio.h>
#include <string.h>

struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
	const char *help;
};

static const struct subcommand commands[] = {
    {"record", cmd_record, "record [-o FILE] [--] PROGRAM [ARGS...]",
     "run a program under the shim and write its trace"},
    {"analyze", cmd_analyze, "analyze TRACE... [-o DIR]",
     "rebuild the op graph and VRAM ledger, find fusions, write DIR/summary.json"},
    {"report", cmd_report, "report DIR",
     "write report.html, graph.dot/.svg and trace.perfetto.json"},
    {"fuse", cmd_fuse, "fuse OUTDIR|--group G.json -o FUSEDDIR", "generate fused CUDA kernels"},
    {"bench", cmd_bench, "bench FUSEDDIR", "build, check, tune and time fused kernels on a GPU"},
    {"compare", cmd_compare, "compare BEFORE AFTER",
     "ledger and step time of two runs side by side"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: aicprof [--version] [--help] <command> [<args>]\n\ncommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-46s %s\n", commands[i].usage, commands[i].help);
	fprintf(f, "\nRun 'aicprof <command> --help' for a command's options.\n"
	           "To profile without the command: LD_PRELOAD=libaicprof.so PROGRAM [ARGS...]\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 129;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("aicprof %s (trace format 1)\n", AICPROF_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	error("'%s' is not an aicprof command; see 'aicprof --help'", cmd);
	return 129;
}
