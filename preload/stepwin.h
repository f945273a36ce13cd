/*
 * stepwin.h - the step window: recording stops by itself once the program's training loop has
 * run long enough to be analysed (AICPROF_STEPS), so that the rest of a long job runs at its
 * own speed and the trace stays small.
 *
 * The writer thread hands every launch, copy and memset it writes to stepwin_note() (under its
 * write lock), and asks stepwin_poll() after each drain, without the lock, whether the window
 * should close. stepwin.c says how the loop is found and when it is long enough.
 */
#ifndef AICPROF_STEPWIN_H
#define AICPROF_STEPWIN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Arms the window: it closes once a loop of at least `steps` steps alike has run for at least
 * `min_s` seconds and is still running. steps == 0 turns the window off (every later call is
 * a no-op). Call before the writer thread starts, or in a forked child before its writer
 * thread starts (the lock is made anew: no other thread may note or poll meanwhile).
 */
void stepwin_init(int steps, double min_s);

/*
 * One op the host issued: its global sequence number (the order across threads), a key that
 * is equal for equal kernels (the function's index; copies and memsets by their API), and its
 * CPU time in ns. Safe from any thread; costs a lock and a store. Notes past the window's
 * bound of ops (STEPWIN_MAX_OPS) turn the window off.
 */
void stepwin_note(uint64_t seq, uint32_t key, uint64_t ts);

/*
 * The writer thread's check, with no lock of the writer held: takes the notes since the last
 * call and, once enough ops have come since the last search, runs the step finder on all of
 * them. Returns 1 when the window should close, and then writes into why (size n) one line
 * that says what was found; 0 otherwise (also when the window is off, or gave up). The search
 * costs about 0.15 s a million ops; searches come at every 25 % more ops.
 */
int stepwin_poll(char *why, size_t n);

/* What the window holds, for tests: ops noted and searches run. */
void stepwin_counts(uint64_t *ops, uint64_t *searches);

#define STEPWIN_MAX_OPS (1u << 19)

#endif
