/*
 * base.c - the shim's base services (base.h): messages on stderr, the per-thread recursion
 * guard, clocks, the cached thread id, the record counter, the recording window and the lookup
 * of an interposed function's real definition. Plain
 * state and leaf functions: nothing here calls another part of preload/, so every part can
 * use them, and shim.c (the entry point) only sets them up.
 */
#include "preload/base.h"

#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct config shim_cfg;
static SHIM_TLS int inside;
static SHIM_TLS uint32_t tid_cache;
static _Atomic uint64_t seq;
static uint64_t rec_from;
static _Atomic int range_depth; /* AICPROF_RANGE: open matching ranges */

void shim_say(const char *fmt, ...)
{
	if (shim_cfg.quiet)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	char line[560];
	int m = snprintf(line, sizeof(line), "aicprof: %.*s\n", n, buf);
	if (m > 0 && write(2, line, (size_t)m) < 0) {
		/* nothing to do: stderr is the program's */
	}
}

void shim_debug(const char *fmt, ...)
{
	if (!shim_cfg.debug || shim_cfg.quiet)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	shim_say("%s", buf);
}

int shim_enter(void)
{
	if (inside)
		return 0;
	inside = 1;
	return 1;
}

void shim_leave(void)
{
	inside = 0;
}

void shim_enter_thread(void)
{
	inside = 1;
}

int shim_inside(void)
{
	return inside;
}

uint64_t shim_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t shim_tid(void)
{
	if (!tid_cache)
		tid_cache = (uint32_t)syscall(SYS_gettid);
	return tid_cache;
}

uint64_t shim_seq(void)
{
	return atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed);
}

static _Atomic int stopped;

void shim_stop(void)
{
	atomic_store(&stopped, 1);
}

int shim_stopped(void)
{
	return atomic_load_explicit(&stopped, memory_order_relaxed);
}

static _Atomic int paused; /* a capture range's pause (AICPROF_CAPTURE) */

void shim_pause(int on)
{
	atomic_store(&paused, on);
}

int shim_paused(void)
{
	return atomic_load_explicit(&paused, memory_order_relaxed);
}

int shim_recording(void)
{
	if (atomic_load_explicit(&stopped, memory_order_relaxed) ||
	    atomic_load_explicit(&paused, memory_order_relaxed))
		return 0;
	if (rec_from && shim_now_ns() < rec_from)
		return 0;
	if (shim_cfg.range[0] && atomic_load(&range_depth) <= 0)
		return 1; /* ranges are recorded; the analyzer windows on them (see README) */
	return 1;
}

void shim_record_from(uint64_t ns)
{
	rec_from = ns;
}

void shim_base_after_fork(void)
{
	inside = 0;
	tid_cache = 0;
}

struct find_ctx {
	const char *sym;
	void *self, *found;
};

static int find_in(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find_ctx *c = arg;
	if (!info->dlpi_name || !*info->dlpi_name)
		return 0;
	void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	void *f = dlsym(h, c->sym);
	dlclose(h);
	if (f && f != c->self) {
		c->found = f;
		return 1;
	}
	return 0;
}

void *shim_real_fn(const char *sym, void *self)
{
	void *f = dlsym(RTLD_NEXT, sym);
	if (f && f != self)
		return f;
	struct find_ctx c = {sym, self, NULL};
	dl_iterate_phdr(find_in, &c);
	return c.found;
}
