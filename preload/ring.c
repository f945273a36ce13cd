/*
 * ring.c - the per-thread rings (see ring.h). A thread's ring is found through a TLS pointer;
 * its first record allocates it (or reuses a drained ring of a thread that exited), which is
 * the only allocation a thread ever makes here. A pthread key's destructor marks the ring free
 * when its thread exits. After ring_close() (the trace's final flush) a reserve drops at once:
 * no reader is left to wait for.
 */
#include "preload/ring.h"
#include "preload/base.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic(struct ring *) rings;
static _Atomic uint64_t dropped;
static pthread_key_t ring_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static SHIM_TLS struct ring *my_ring;
static SHIM_TLS uint64_t my_pending; /* head after the reserved record */
void (*ring_wake)(void);
long (*ring_drain_here)(void);
static SHIM_TLS int is_reader;

void ring_set_reader(void)
{
	is_reader = 1;
}
static _Atomic int closed;

void ring_close(void)
{
	atomic_store(&closed, 1);
}

static void ring_thread_exit(void *p)
{
	struct ring *r = p;
	if (r) {
		atomic_store_explicit(&r->alive, 0, memory_order_release);
		my_ring = NULL;
	}
}

static void make_key(void)
{
	pthread_key_create(&ring_key, ring_thread_exit);
}

static struct ring *ring_get(void)
{
	if (my_ring)
		return my_ring;
	pthread_once(&key_once, make_key);
	int tid = (int)syscall(SYS_gettid);
	/* reuse a drained ring whose thread has exited */
	for (struct ring *r = atomic_load(&rings); r; r = r->next) {
		int zero = 0;
		if (atomic_load(&r->head) == atomic_load(&r->tail) &&
		    atomic_compare_exchange_strong(&r->alive, &zero, 1)) {
			r->tid = tid;
			my_ring = r;
			pthread_setspecific(ring_key, r);
			return r;
		}
	}
	struct ring *r = calloc(1, sizeof(*r));
	char *buf = r ? malloc(RING_SIZE) : NULL;
	if (!buf) {
		free(r);
		return NULL;
	}
	r->buf = buf;
	r->tid = tid;
	atomic_store(&r->alive, 1);
	struct ring *old = atomic_load(&rings);
	do
		r->next = old;
	while (!atomic_compare_exchange_weak(&rings, &old, r));
	my_ring = r;
	pthread_setspecific(ring_key, r);
	return r;
}

void *ring_reserve(size_t len)
{
	struct ring *r = atomic_load_explicit(&closed, memory_order_relaxed) ? NULL : ring_get();
	if (!r || len > RING_SIZE / 4) {
		atomic_fetch_add(&dropped, 1);
		return NULL;
	}
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t pos = head % RING_SIZE, room = RING_SIZE - pos;
	size_t need = len <= room ? len : room + len;
	int drained = 0;
	for (int waited = 0;; waited++) {
		uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (RING_SIZE - (head - tail) >= need)
			break;
		/* the reader's own ring at once (again while another thread drains); any other
		 * after RING_HELP_US without the writer, which may be waiting for this very thread
		 * (ring.h) */
		if (ring_drain_here &&
		    (is_reader ? !drained : waited && waited % (RING_HELP_US / 100) == 0)) {
			long d = ring_drain_here();
			if (d ==
			    RING_DRAIN_SELF) { /* made by the drain itself: no room will come */
				atomic_fetch_add(&dropped, 1);
				return NULL;
			}
			drained = is_reader && d >= 0;
			if (d > 0 || drained)
				continue;
		} else if (is_reader && drained) { /* drained it, and still no room */
			atomic_fetch_add(&dropped, 1);
			return NULL;
		}
		if (waited == 0 && ring_wake)
			ring_wake();
		if (waited >= RING_WAIT_MS * 10) {
			atomic_fetch_add(&dropped, 1);
			return NULL;
		}
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	if (len > room) { /* pad to the end, start the record at 0 */
		struct rec_hdr *p = (struct rec_hdr *)(r->buf + pos);
		p->type = 0;
		p->len = (uint32_t)room;
		head += room;
		pos = 0;
	}
	my_pending = head + len;
	if (!(len <= room))
		atomic_store_explicit(&r->head, head, memory_order_release);
	return r->buf + pos;
}

void ring_commit(void)
{
	if (my_ring)
		atomic_store_explicit(&my_ring->head, my_pending, memory_order_release);
}

struct ring *ring_list(void)
{
	return atomic_load(&rings);
}

uint64_t ring_dropped(void)
{
	return atomic_load(&dropped);
}

void ring_reset_after_fork(void)
{
	for (struct ring *r = atomic_load(&rings); r; r = r->next) {
		atomic_store(&r->tail, atomic_load(&r->head));
		if (r != my_ring)
			atomic_store(&r->alive, 0);
	}
	atomic_store(&dropped, 0);
	atomic_store(&closed, 0);
}
