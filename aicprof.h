/*
 * aicprof.h - the subcommands of the aicprof command. Each is one function, living in the
 * directory of the stage it drives, taking the arguments after its name (argv[0] is the
 * subcommand's name) and returning the process's exit code.
 */
#ifndef AICPROF_H
#define AICPROF_H

int cmd_record(int argc, char **argv);  /* cli/cmd-record.c */
int cmd_analyze(int argc, char **argv); /* cli/cmd-analyze.c */
int cmd_report(int argc, char **argv);  /* cli/cmd-report.c */
int cmd_fuse(int argc, char **argv);    /* cli/cmd-fuse.c */
int cmd_bench(int argc, char **argv);   /* cli/cmd-bench.c */
int cmd_compare(int argc, char **argv); /* cli/cmd-compare.c */

#endif
