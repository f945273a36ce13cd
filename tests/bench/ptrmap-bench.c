/*
 * ptrmap-bench.c - CPU-only micro-benchmark of the shim's allocation map (preload/ptrmap.c):
 * ns per alloc+free pair and per lookup, with 1 and 8 threads. Each thread keeps LIVE
 * allocations of varied sizes in an address range of its own, frees the oldest and allocates
 * a new one (alloc+free), then looks up addresses inside its live allocations, half of them
 * bases and half interior (lookup), then a launch's batch as a cuBLAS GEMM passes it (18 words
 * into 4 allocations, its TMA descriptors among them: ptrmap_find_batch). Not a test: it prints
 * figures and asserts nothing.
 * Build and run: cc -O2 -pthread -I. tests/bench/ptrmap-bench.c preload/ptrmap.c -o /tmp/pb
 */
#include "preload/ptrmap.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LIVE  1000
#define ITERS 200000

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct job {
	int t;
	double alloc_ns, find_ns, batch_ns;
	long hits;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return *s;
}

static void *run(void *p)
{
	struct job *j = p;
	uint64_t seed = 88172645463325252ull + (uint64_t)j->t, base = (uint64_t)(j->t + 1) << 40;
	uint64_t ptr[LIVE], size[LIVE], next = base;
	for (int i = 0; i < LIVE; i++) {
		size[i] = 512ull << (rnd(&seed) % 14); /* 512 B .. 4 MiB */
		ptr[i] = next, next += size[i];
		ptrmap_add(ptr[i], size[i]);
	}
	double t0 = now();
	for (int k = 0; k < ITERS; k++) {
		int i = k % LIVE;
		ptrmap_remove(ptr[i], NULL);
		size[i] = 512ull << (rnd(&seed) % 14);
		ptr[i] = next, next += size[i];
		ptrmap_add(ptr[i], size[i]);
	}
	double t1 = now();
	long hits = 0;
	for (int k = 0; k < ITERS; k++) {
		int i = (int)(rnd(&seed) % LIVE);
		uint64_t off = k & 1 ? rnd(&seed) % size[i] : 0, o;
		hits += ptrmap_find(ptr[i] + off, &o) >= 0;
	}
	double t2 = now();
	enum { W = 18 };
	uint64_t words[W], offs[W];
	int64_t ids[W];
	for (int k = 0; k < ITERS / 10; k++) {
		int a4[4];
		for (int q = 0; q < 4; q++)
			a4[q] = (int)(rnd(&seed) % LIVE);
		for (int w = 0; w < W; w++) {
			int i = a4[w % 4];
			words[w] = ptr[i] + (w & 1 ? rnd(&seed) % size[i] : 0);
		}
		ptrmap_find_batch(words, W, ids, offs);
		hits += ids[0] >= 0;
	}
	double t3 = now();
	for (int i = 0; i < LIVE; i++)
		ptrmap_remove(ptr[i], NULL);
	j->alloc_ns = (t1 - t0) * 1e9 / ITERS;
	j->find_ns = (t2 - t1) * 1e9 / ITERS;
	j->batch_ns = (t3 - t2) * 1e9 / (ITERS / 10);
	j->hits = hits;
	return NULL;
}

int main(void)
{
	int counts[] = {1, 8};
	for (int c = 0; c < 2; c++) {
		int n = counts[c];
		pthread_t th[8];
		struct job jobs[8];
		for (int t = 0; t < n; t++) {
			jobs[t] = (struct job){.t = t};
			pthread_create(&th[t], NULL, run, &jobs[t]);
		}
		double a = 0, f = 0, b = 0;
		long hits = 0;
		for (int t = 0; t < n; t++) {
			pthread_join(th[t], NULL);
			a += jobs[t].alloc_ns, f += jobs[t].find_ns, b += jobs[t].batch_ns;
			hits += jobs[t].hits;
		}
		printf("threads %d: alloc+free %.1f ns, lookup %.1f ns, a GEMM's batch of 18 words "
		       "%.1f ns (per thread, mean); hits %ld/%ld\n",
		       n, a / n, f / n, b / n, hits, (long)n * ITERS + (long)n * (ITERS / 10));
	}
	return 0;
}
