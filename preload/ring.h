/*
 * ring.h - per-thread record rings between the threads that record and the writer thread.
 *
 * Each recording thread owns one single-producer, single-consumer byte ring: it copies a
 * fixed-layout binary record in (no formatting, no I/O, no allocation, no lock) and publishes
 * it by advancing head with a release store; the writer thread reads records up to head and
 * advances tail. A record never wraps: when it does not fit before the end of the buffer, a
 * padding record fills the rest. When a ring is full the producer wakes the writer and waits
 * briefly; when the writer has not drained it after RING_HELP_US (the writer is blocked
 * elsewhere, e.g. in CUPTI's flush, which waits for CUPTI's own thread to deliver), the
 * producer drains every ring itself when no one else is draining (ring_help_drain); after
 * RING_WAIT_MS it drops the record and counts it, so a stalled disk can slow but never hang
 * the program. Rings of exited threads are reused once drained.
 */
#ifndef AICPROF_RING_H
#define AICPROF_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RING_SIZE    (1u << 20) /* bytes per thread */
#define RING_WAIT_MS 200
#define RING_HELP_US 2000 /* a full ring's wait before its producer drains it itself */

struct rec_hdr {
	uint16_t type; /* enum rec_type (record.h); 0 = padding */
	uint16_t pad;
	uint32_t len; /* whole record in bytes, a multiple of 8 */
};

struct ring {
	_Atomic uint64_t head; /* bytes published by the producer */
	_Atomic uint64_t tail; /* bytes consumed by the writer */
	_Atomic int alive;     /* owned by a live thread */
	int tid;
	struct ring *next; /* registry list, never unlinked */
	char *buf;
};

/*
 * Returns a pointer to len bytes (len a multiple of 8, at most RING_SIZE/4) in the calling
 * thread's ring, to fill and then publish with ring_commit(); NULL when the record must be
 * dropped (ring full past the wait, or no memory for the thread's first ring).
 */
void *ring_reserve(size_t len);
/* Publishes the record last reserved by this thread. */
void ring_commit(void);

/* The first ring of the registry (for the writer), and records dropped so far. */
struct ring *ring_list(void);
uint64_t ring_dropped(void);

/* Called by producers when a ring fills; set by the writer to its wake-up function. */
extern void (*ring_wake)(void);
/*
 * The reader's own records: the writer thread also produces records (CUPTI's synchronous
 * flush delivers the activity buffers on the thread that asks for it, at the window's close
 * and at a signal's final flush: up to a buffer of 8 MiB at once). Waiting for a reader there
 * would wait for itself, RING_WAIT_MS a record once its ring is full. The writer sets
 * ring_self_drain to a drain it may call from inside ring_reserve (returns lines written, or
 * -1 when it cannot drain now) and marks its thread with ring_set_reader(): a full ring on
 * that thread is drained on the spot, and a record is dropped at once when that frees nothing.
 */
extern long (*ring_self_drain)(void);
void ring_set_reader(void);
/*
 * A drain any producer may call when its ring has stayed full for RING_HELP_US: the writer
 * sets it to a drain that runs only when no other thread is draining (returns lines written,
 * or -1 when someone else is). Why: the writer thread's flush of CUPTI (the window's close,
 * a final flush) waits for CUPTI's worker thread to deliver its buffers, and that thread's
 * ring fills with the records it delivers; waiting for the writer there is a deadlock that
 * only RING_WAIT_MS a record would break (seen on the H200: a close that never ended).
 */
extern long (*ring_help_drain)(void);

/* The trace is closed and the writer gone (a final flush: the tool yielded, the context died,
 * the process exits): from now on ring_reserve drops at once instead of waiting for a reader
 * that will not come; producers that outlive the trace (poolhook.c's allocator reports) cost
 * the program nothing. */
void ring_close(void);

/* In a forked child: forget the parent's records (they belong to the parent's trace). */
void ring_reset_after_fork(void);

#endif
