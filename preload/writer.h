/*
 * writer.h - the trace writer: one thread that drains the per-thread rings, formats each
 * binary record as one JSON line, and writes whole lines to the trace file.
 *
 * The file is opened at the first drain that has something to write, so a process that
 * never records writes nothing. Its first line is the header, built by the callback given to
 * writer_init. Rare records (strings, sites, notes) are handed over already formatted through
 * writer_meta(); the writer writes them before any ring record that could refer to them.
 * Any write error stops the trace (one "aicprof:" line) and never touches the program.
 */
#ifndef AICPROF_WRITER_H
#define AICPROF_WRITER_H

#include "preload/jbuf.h"

#include <stddef.h>
#include <stdint.h>

/* Sets the output path (already expanded), the size cap in bytes (0: none), the header
 * callback (appends the header's fields after {"t":"header"), and the API name table. */
void writer_init(const char *path, uint64_t cap_bytes, void (*header)(struct jbuf *),
                 const char *(*api_name)(unsigned));

/* Queues one formatted line (without the newline); copies it. Safe from any thread. */
void writer_meta(const char *line, size_t len);

/* Starts the writer thread if it is not running. Returns 0 or -1. */
int writer_start(void);

/*
 * Drains everything recorded so far and writes it. final: also writes the end line
 * ({"t":"end",...,"reason":reason}) and closes the file; later calls do nothing. Safe to call
 * from the exit path while other threads still record (their later records are dropped).
 */
void writer_flush(int final, const char *reason);

/*
 * For signal handlers: asks the writer thread to run before_final() (CUPTI's flush), drain and
 * close the trace with reason, and waits for it at most timeout_ms. Async-signal-safe: it only
 * sets a flag and waits on a semaphore, so a signal that lands on a thread holding any lock
 * (ours, CUPTI's, the driver's) cannot deadlock the handler. Returns 0 when the trace was closed.
 */
int writer_request_final(const char *reason, int timeout_ms);
void writer_set_before_final(void (*fn)(void));

/*
 * The recording window: once the trace holds soft_cap bytes (0: no such limit) or the clock
 * (shim_now_ns) passes end_ns (0: never), the writer thread calls stop(why) (which ends every
 * source of records: CUPTI's callbacks and activity, the allocator's hook) and then closes the
 * trace with reason "cap" or "duration", so that the program runs on without the shim's
 * costs. The step window (stepwin.h, armed by stepwin_init) closes it the same way, with reason
 * "steps" and a note line before the end. Checked after every drain of the writer thread (at least
 * every 50 ms). Safe from any thread, before or after writer_start(); a later call moves the
 * window.
 */
void writer_set_window(uint64_t soft_cap, uint64_t end_ns, void (*stop)(const char *why));

/* Drains without the thread (used by tests). Returns the number of lines written. */
long writer_drain(void);

/* Counters for the end line and for tests. */
struct writer_stats {
	uint64_t lines, bytes, kernels, capped, dropped_activity;
	uint64_t deferred; /* launch records whose parameters were scanned here (argscan.c) */
	int failed, opened;
};
void writer_stats(struct writer_stats *s);
void writer_count_activity_drop(uint64_t n);

/* In a forked child: no file, no thread, counters cleared. */
void writer_reset_after_fork(void);

#endif
