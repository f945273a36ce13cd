/* test-writer.c - per-thread rings, the trace writer and the allocation map, without a GPU:
 * records made from several threads come out as whole, parseable lines in order, strings
 * before their users, the size cap holds, a bad output path costs nothing but the trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/base.h"
#include "preload/ptrmap.h"
#include "preload/record.h"
#include "preload/ring.h"
#include "preload/writer.h"

static char path[256];

static const char *api_name(unsigned a)
{
	return a == 7 ? "cuMemAllocAsync" : "?";
}

static void header(struct jbuf *b)
{
	jb_s(b, ",\"format\":1,\"test\":true");
}

static void put(int64_t id, uint64_t ptr)
{
	struct r_alloc *r = ring_reserve(sizeof(*r));
	assert_non_null(r);
	memset(r, 0, sizeof(*r));
	r->h = (struct rec_hdr){R_ALLOC, 0, sizeof(*r)};
	r->seq = shim_seq();
	r->id = id;
	r->ptr = ptr;
	r->size = 4096;
	r->api = 7;
	r->tid = shim_tid();
	ring_commit();
}

static int setup(void **state)
{
	(void)state;
	ring_reset_after_fork();
	writer_reset_after_fork();
	snprintf(path, sizeof(path), "/tmp/aicprof-test-%d.jsonl", (int)getpid());
	unlink(path);
	writer_init(path, 0, header, api_name);
	writer_set_window(0, 0, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

/* Reads the trace: returns the parsed lines (caller frees) and their count in *n. */
static cJSON **read_lines(int *n, int *bad)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	cJSON **v = NULL;
	*n = *bad = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] != '\n') {
			(*bad)++;
			continue;
		}
		cJSON *j = cJSON_Parse(line);
		if (!j) {
			(*bad)++;
			continue;
		}
		v = realloc(v, sizeof(*v) * (size_t)(*n + 1));
		v[(*n)++] = j;
	}
	free(line);
	fclose(f);
	return v;
}

static void free_lines(cJSON **v, int n)
{
	for (int i = 0; i < n; i++)
		cJSON_Delete(v[i]);
	free(v);
}

static const char *type(cJSON *j)
{
	cJSON *t = cJSON_GetObjectItem(j, "t");
	return cJSON_IsString(t) ? t->valuestring : "";
}

static void test_nothing_recorded_writes_nothing(void **state)
{
	(void)state;
	assert_int_equal(writer_drain(), 0);
	writer_flush(1, "exit");
	assert_int_equal(access(path, F_OK), -1);
}

static void *thread_main(void *arg)
{
	long t = (long)arg;
	for (int i = 0; i < 500; i++)
		put(t * 1000 + i, 0x700000000000ull + (uint64_t)i);
	return NULL;
}

static void test_threads_round_trip(void **state)
{
	(void)state;
	writer_meta("{\"t\":\"str\",\"id\":0,\"s\":\"k<a&b>\"}", 31);
	pthread_t th[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	writer_flush(1, "exit");
	int n, bad;
	cJSON **v = read_lines(&n, &bad);
	assert_int_equal(bad, 0);
	assert_int_equal(n, 1 + 1 + 2000 + 1);
	assert_string_equal(type(v[0]), "header");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(v[0], "test")));
	assert_string_equal(type(v[1]), "str");
	assert_string_equal(type(v[n - 1]), "end");
	assert_int_equal(cJSON_GetObjectItem(v[n - 1], "records")->valueint, n);
	assert_string_equal(cJSON_GetObjectItem(v[n - 1], "reason")->valuestring, "exit");
	/* each thread's records in its own order, every id once */
	int last[5] = {-1, -1, -1, -1, -1}, count = 0;
	for (int i = 2; i < n - 1; i++) {
		assert_string_equal(type(v[i]), "alloc");
		assert_string_equal(cJSON_GetObjectItem(v[i], "api")->valuestring,
		                    "cuMemAllocAsync");
		int id = cJSON_GetObjectItem(v[i], "id")->valueint;
		int t = id / 1000, k = id % 1000;
		assert_true(t >= 1 && t <= 4);
		assert_int_equal(k, last[t] + 1);
		last[t] = k;
		count++;
	}
	assert_int_equal(count, 2000);
	free_lines(v, n);
}

static void test_ring_wraps(void **state)
{
	(void)state;
	/* several times the ring's size, drained as it goes */
	int total = (int)(3 * RING_SIZE / sizeof(struct r_alloc));
	for (int i = 0; i < total; i++) {
		put(i, 0x1000);
		if (i % 5000 == 0)
			writer_drain();
	}
	writer_flush(1, "exit");
	int n, bad;
	cJSON **v = read_lines(&n, &bad);
	assert_int_equal(bad, 0);
	assert_int_equal(n, total + 2);
	for (int i = 1; i < n - 1; i++)
		assert_int_equal(cJSON_GetObjectItem(v[i], "id")->valueint, i - 1);
	free_lines(v, n);
}

/* After the final flush nothing reads the rings: a producer that outlives the trace (the
 * caching allocator's reports at teardown) must drop at once, not wait for a reader. Three
 * rings' worth of records, which would wait 200 ms each once the ring is full. */
static void test_after_close_drops_at_once(void **state)
{
	(void)state;
	writer_flush(1, "exit");
	uint64_t d0 = ring_dropped();
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int total = (int)(3 * RING_SIZE / sizeof(struct r_alloc)), got = 0;
	for (int i = 0; i < total; i++) {
		struct r_alloc *r = ring_reserve(sizeof(*r));
		if (r) {
			memset(r, 0, sizeof(*r));
			r->h = (struct rec_hdr){R_ALLOC, 0, sizeof(*r)};
			ring_commit();
			got++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	assert_int_equal(got, 0);
	assert_int_equal(ring_dropped() - d0, (uint64_t)total);
	assert_true(s < 2.0);
}

static void test_cap(void **state)
{
	(void)state;
	writer_init(path, 8192, header, api_name);
	for (int i = 0; i < 1000; i++)
		put(i, 0x2000);
	writer_flush(1, "exit");
	int n, bad;
	cJSON **v = read_lines(&n, &bad);
	assert_int_equal(bad, 0);
	assert_true(n > 3 && n < 200);
	cJSON *end = v[n - 1];
	assert_string_equal(type(end), "end");
	assert_string_equal(cJSON_GetObjectItem(end, "reason")->valuestring, "cap");
	cJSON *dropped = cJSON_GetObjectItem(cJSON_GetObjectItem(end, "dropped"), "records");
	assert_int_equal(dropped->valueint + (n - 2), 1000);
	free_lines(v, n);
}

static void test_unwritable_path(void **state)
{
	(void)state;
	writer_init("/nonexistent-dir/x/trace.jsonl", 0, header, api_name);
	put(1, 0x3000);
	writer_drain();
	put(2, 0x3000); /* still accepted: producers never block on a dead writer */
	writer_flush(1, "exit");
	struct writer_stats st;
	writer_stats(&st);
	assert_int_equal(st.failed, 1);
}

/* A full disk: the trace stops, one line, nothing else happens (the program runs on). */
static void test_disk_full(void **state)
{
	(void)state;
	if (access("/dev/full", W_OK) != 0) {
		fail_msg("/dev/full is not writable here");
		return;
	}
	writer_init("/dev/full", 0, header, api_name);
	for (int i = 0; i < 3000; i++)
		put(i, 0x5000);
	writer_drain();
	for (int i = 0; i < 10; i++)
		put(i, 0x5000);
	writer_flush(1, "exit");
	struct writer_stats st;
	writer_stats(&st);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.bytes, 0);
}

static int flushed_before;
static void before(void)
{
	flushed_before = 1;
}

/* The signal path: the writer thread closes the trace, the caller only waits. */
static void test_final_from_signal_path(void **state)
{
	(void)state;
	writer_set_before_final(before);
	assert_int_equal(writer_start(), 0);
	for (int i = 0; i < 100; i++)
		put(i, 0x4000);
	assert_int_equal(writer_request_final("signal", 2000), 0);
	assert_int_equal(flushed_before, 1);
	int n, bad;
	cJSON **v = read_lines(&n, &bad);
	assert_int_equal(bad, 0);
	assert_int_equal(n, 102);
	assert_string_equal(cJSON_GetObjectItem(v[n - 1], "reason")->valuestring, "signal");
	free_lines(v, n);
}

static _Atomic int stops;
static const char *stop_why;
static void window_stop(const char *why)
{
	stop_why = why;
	stops++;
}

/* Waits at most 5 s for the trace's end line; returns 1 when it is there. */
static int wait_end(void)
{
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		if (f) {
			char line[4096], last[4096] = "";
			if (fseek(f, -4096, SEEK_END)) /* the last lines only */
				rewind(f);
			while (fgets(line, sizeof(line), f))
				snprintf(last, sizeof(last), "%s", line);
			fclose(f);
			if (strstr(last, "\"t\":\"end\""))
				return 1;
		}
		usleep(10000);
	}
	return 0;
}

/* The window closes near the cap: the writer thread stops the sources once, and the trace
 * ends whole under the cap with nothing dropped, although the producer ran past it. */
static void test_window_closes_before_the_cap(void **state)
{
	(void)state;
	stops = 0;
	writer_init(path, 256 << 10, header, api_name);
	writer_set_window(64 << 10, 0, window_stop);
	assert_int_equal(writer_start(), 0);
	int made = 0;
	for (int i = 0; i < 100000 && !stops; i++, made++) {
		put(i, 0x2000);
		if (i % 8 == 7)
			usleep(
			    1000); /* ~8 records a ms: the margin holds 50 ms of them many times */
	}
	assert_true(wait_end());
	assert_int_equal(stops, 1);
	assert_string_equal(stop_why, "cap");
	int n, bad;
	cJSON **v = read_lines(&n, &bad);
	assert_int_equal(bad, 0);
	cJSON *end = v[n - 1];
	assert_string_equal(cJSON_GetObjectItem(end, "reason")->valuestring, "cap");
	cJSON *dropped = cJSON_GetObjectItem(cJSON_GetObjectItem(end, "dropped"), "records");
	assert_int_equal(dropped->valueint, 0);
	assert_int_equal(n - 2, made); /* every record made before the stop is in the trace */
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_true(sb.st_size >= (64 << 10) && sb.st_size < (256 << 10));
	free_lines(v, n);
}

/* AICPROF_DURATION: the window closes on the clock, with reason "duration". */
static void test_window_closes_on_the_clock(void **state)
{
	(void)state;
	stops = 0;
	writer_set_window(0, shim_now_ns() + 100 * 1000000ull, window_stop);
	assert_int_equal(writer_start(), 0);
	for (int i = 0; i < 10; i++)
		put(i, 0x2000);
	assert_true(wait_end());
	assert_int_equal(stops, 1);
	assert_string_equal(stop_why, "duration");
	int n, bad;
	cJSON **v = read_lines(&n, &bad);
	assert_int_equal(bad, 0);
	assert_int_equal(n, 12);
	assert_string_equal(cJSON_GetObjectItem(v[n - 1], "reason")->valuestring, "duration");
	free_lines(v, n);
}

/* What CUPTI's synchronous flush does at the window's close: two rings' worth of records
 * made on the writer thread itself, which is also their only reader. */
static _Atomic int flood_null;
static int flood_n;
static void window_stop_flood(const char *why)
{
	(void)why;
	for (int i = 0; i < flood_n; i++) {
		struct r_alloc *r = ring_reserve(sizeof(*r));
		if (!r) {
			flood_null++;
			continue;
		}
		memset(r, 0, sizeof(*r));
		r->h = (struct rec_hdr){R_ALLOC, 0, sizeof(*r)};
		r->seq = shim_seq();
		r->ptr = 0x3000;
		r->size = 64;
		r->api = 7;
		ring_commit();
	}
	stops++;
}

/* What CUPTI's flush did on the H200: the flush, on the writer thread, waits for CUPTI's own
 * worker thread to deliver the buffers, and the worker's ring fills with the records it
 * delivers. The stop function here starts such a worker (two rings' worth of records) and
 * waits for it to finish. Before ring_drain_here the worker waited RING_WAIT_MS a record for a
 * writer that was waiting for it: the close never ended. */
static void *flood_thread(void *arg)
{
	(void)arg;
	window_stop_flood("worker");
	return NULL;
}

static void window_stop_by_worker(const char *why)
{
	(void)why;
	pthread_t t;
	if (pthread_create(&t, NULL, flood_thread, NULL) == 0)
		pthread_join(t, NULL);
}

/* The window closes at once with stop as its stop function; every record of the flood must be
 * in the trace, in well under the 5 s that waiting RING_WAIT_MS a record for one ring's worth
 * alone would take. */
static void flood_window(void (*stop)(const char *))
{
	stops = flood_null = 0;
	flood_n = (int)(2 * RING_SIZE / sizeof(struct r_alloc));
	writer_set_window(0, shim_now_ns(), stop);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(writer_start(), 0);
	assert_true(wait_end());
	clock_gettime(CLOCK_MONOTONIC, &b);
	double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	assert_int_equal(stops, 1);
	assert_int_equal(flood_null, 0);
	int n, bad;
	cJSON **v = read_lines(&n, &bad);
	assert_int_equal(bad, 0);
	assert_int_equal(n, flood_n + 2);
	assert_true(secs < 4.0);
	free_lines(v, n);
}

/* The writer thread drains its own full ring instead of waiting for itself. */
static void test_window_flush_on_the_writer_thread(void **state)
{
	(void)state;
	flood_window(window_stop_flood);
}

static void test_window_flush_by_another_thread(void **state)
{
	(void)state;
	flood_window(window_stop_by_worker);
}

/* shim_stop() ends recording for good. */
static void test_stop(void **state)
{
	(void)state;
	assert_int_equal(shim_stopped(), 0);
	assert_int_equal(shim_recording(), 1);
	shim_stop();
	assert_int_equal(shim_stopped(), 1);
	assert_int_equal(shim_recording(), 0);
}

static void test_ptrmap(void **state)
{
	(void)state;
	ptrmap_clear();
	uint64_t off;
	int64_t a = ptrmap_add(0x10000, 0x1000);
	int64_t b = ptrmap_add(0x20000, 0x100);
	assert_int_not_equal(a, b);
	assert_int_equal(ptrmap_find(0x10000, &off), a);
	assert_int_equal(off, 0);
	assert_int_equal(ptrmap_find(0x10fff, &off), a);
	assert_int_equal(off, 0xfff);
	assert_int_equal(ptrmap_find(0x11000, &off), -1);
	assert_int_equal(ptrmap_find(0x200ff, &off), b);
	assert_int_equal(ptrmap_find(0xffff, &off), -1);
	uint64_t lo, hi;
	ptrmap_bounds(&lo, &hi);
	assert_int_equal(lo, 0x10000);
	assert_int_equal(hi, 0x20100);
	/* an overlapping allocation replaces the stale one */
	int64_t c = ptrmap_add(0x10800, 0x1000);
	assert_int_equal(ptrmap_find(0x10000, &off), -1);
	assert_int_equal(ptrmap_find(0x10900, &off), c);
	uint64_t size = 0;
	assert_int_equal(ptrmap_remove(0x10800, &size), c);
	assert_int_equal(size, 0x1000);
	assert_int_equal(ptrmap_remove(0x10800, &size), -1);
	assert_int_equal(ptrmap_count(), 1);
	/* many, in random order */
	ptrmap_clear();
	srand(7);
	for (int i = 0; i < 5000; i++)
		ptrmap_add(0x100000000ull + (uint64_t)((i * 7919) % 5000) * 0x1000, 0x800);
	assert_int_equal(ptrmap_count(), 5000);
	for (int i = 0; i < 5000; i++) {
		uint64_t base = 0x100000000ull + (uint64_t)i * 0x1000;
		assert_true(ptrmap_find(base + 0x7ff, &off) >= 0);
		assert_int_equal(ptrmap_find(base + 0x800, &off), -1);
	}
	ptrmap_clear();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_nothing_recorded_writes_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_threads_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ring_wraps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_after_close_drops_at_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unwritable_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
	    cmocka_unit_test(test_ptrmap),
	    cmocka_unit_test_setup_teardown(test_final_from_signal_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_window_closes_before_the_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_window_closes_on_the_clock, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_window_flush_on_the_writer_thread, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_window_flush_by_another_thread, setup, teardown),
	    cmocka_unit_test(test_stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
