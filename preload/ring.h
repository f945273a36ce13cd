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
 * producer drains every ring itself when no one else is draining (ring_drain_here); after
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
 * A drain on the calling thread, set by the writer: every ring up to its head, when no other
 * thread is draining. Returns the lines written, RING_DRAIN_BUSY when another thread is
 * draining (room is coming), or RING_DRAIN_SELF when the calling thread is inside a drain
 * already (the record was made by the drain itself: no room will come). ring_reserve calls it
 * for two deadlocks that a wait for the writer would be:
 *   - the writer's own records (ring_set_reader() marks its thread): CUPTI's synchronous flush
 *     delivers up to 8 MiB of activity records on the thread that asks for it, the writer at
 *     the window's close and at a signal's final flush; its full ring is drained at once, and
 *     a record that still finds no room is dropped;
 *   - any other producer whose ring stays full for RING_HELP_US: the writer's flush may be
 *     waiting for CUPTI's worker thread to deliver its buffers, whose ring filled with the
 *     records it delivered (seen on the H200: a close that never ended).
 */
#define RING_DRAIN_BUSY (-1)
#define RING_DRAIN_SELF (-2)
extern long (*ring_drain_here)(void);
void ring_set_reader(void);

/* The trace is closed and the writer gone (a final flush: the tool yielded, the context died,
 * the process exits): from now on ring_reserve drops at once instead of waiting for a reader
 * that will not come; producers that outlive the trace (poolhook.c's allocator reports) cost
 * the program nothing. */
void ring_close(void);

/* In a forked child: forget the parent's records (they belong to the parent's trace). */
void ring_reset_after_fork(void);

#endif
