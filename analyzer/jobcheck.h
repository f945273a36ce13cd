/*
 * jobcheck.h - whether traces given together are the ranks of one job, before any is analysed.
 */
#ifndef AICPROF_JOBCHECK_H
#define AICPROF_JOBCHECK_H

/*
 * Reads the header (first line) of each of paths[0..n) and compares it with the first trace's:
 * the same argv and cwd, the same world_size (both absent counts as the same), and no rank that
 * another trace already has. Returns 0, or -1 after error() naming both files and what differs:
 * "'b' is not a rank of the same job as 'a' (argv differs: 'python3 x.py' vs 'python3 y.py')".
 * A trace that cannot be opened or whose first line is not a JSON header is left to the
 * analysis, which names its line; it is not compared. Allocates nothing that outlives the call.
 */
int job_check(char **paths, int n);

#endif
