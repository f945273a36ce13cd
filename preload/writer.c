/*
 * writer.c - drains the rings (ring.h) and writes the trace (docs/trace-format.md).
 *
 * Ordering: before draining, the writer notes each ring's head; it then writes the queued
 * meta lines, then each ring up to the noted head. A string or site is queued before any
 * record that names it is published, so it is always written first.
 * Output goes through a 1 MiB buffer and write(2) of whole lines. The recording window
 * (writer_set_window) closes a little before the size cap, after AICPROF_DURATION, or when the
 * step window (stepwin.h), which sees every launch, copy and memset written here, says the loop
 * has run long enough: the writer thread stops every source of records and closes the trace.
 * Records past the cap itself (what was in flight) are counted and dropped, and the end line says
 * so. A failed write (disk full, file size limit) cuts the file back to its last whole line, prints
 * one line and turns the writer into a counter; an output file that was removed while the program
 * ran (its link count is 0 at a drain) is the same failure, said once. The program is never
 * affected.
 */
#include "preload/writer.h"
#include "preload/argscan.h"
#include "preload/base.h"
#include "preload/nccl.h"
#include "preload/record.h"
#include "preload/ring.h"
#include "preload/stepwin.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char out_path[1024];
static uint64_t cap;
static void (*header_fn)(struct jbuf *);
static const char *(*api_fn)(unsigned);

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static char *meta;
static size_t meta_len, meta_cap;

static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static int closed;
static struct writer_stats st;
static _Atomic uint64_t activity_drops;

static pthread_t thread;
static int thread_running;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static int wake_flag, stop_flag;
static volatile sig_atomic_t final_req;
static const char *volatile final_reason;
static sem_t final_done;
static void (*before_final)(void);
static _Atomic uint64_t win_soft_cap, win_end_ns;
static void (*_Atomic win_stop)(const char *);

#define OUTBUF (1u << 20)
static char outbuf[OUTBUF];
static size_t outlen;

void writer_init(const char *path, uint64_t cap_bytes, void (*header)(struct jbuf *),
                 const char *(*api_name)(unsigned))
{
	snprintf(out_path, sizeof(out_path), "%s", path);
	cap = cap_bytes;
	header_fn = header;
	api_fn = api_name;
}

void writer_meta(const char *line, size_t len)
{
	pthread_mutex_lock(&meta_lock);
	if (meta_len + len + 1 > meta_cap) {
		size_t want = meta_cap ? meta_cap * 2 : 65536;
		while (want < meta_len + len + 1)
			want *= 2;
		char *n = realloc(meta, want);
		if (!n) {
			pthread_mutex_unlock(&meta_lock);
			return;
		}
		meta = n;
		meta_cap = want;
	}
	memcpy(meta + meta_len, line, len);
	meta_len += len;
	meta[meta_len++] = '\n';
	pthread_mutex_unlock(&meta_lock);
}

static void fail(const char *what, int err)
{
	if (!st.failed)
		shim_say(
		    "cannot write trace '%s' (%s: %s); the program continues, the trace ends here",
		    out_path, what, strerror(err));
	st.failed = 1;
	if (fd >= 0)
		close(fd);
	fd = -1;
}

/*
 * Writes n bytes that start at a line boundary. On a short or failed write (ENOSPC, EFBIG) the
 * file is cut back to the last '\n' written, so the trace stays whole lines, and the writer
 * fails once.
 */
static void raw_write(const char *p, size_t n)
{
	const char *start = p;
	uint64_t at = st.bytes;
	while (n && !st.failed) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? errno : ENOSPC;
			size_t done = (size_t)(p - start);
			while (done && start[done - 1] != '\n')
				done--;
			if (fd >= 0 && ftruncate(fd, (off_t)(at + done)) == 0)
				st.bytes = at + done;
			fail("write", err);
			return;
		}
		p += w;
		n -= (size_t)w;
		st.bytes += (uint64_t)w;
	}
}

/* A trace whose file was removed (rm, a cleaned directory) is lost: say so once and stop. */
static void check_removed(void)
{
	struct stat sb;
	if (fd >= 0 && !st.failed && fstat(fd, &sb) == 0 && sb.st_nlink == 0) {
		fail("file removed while the program ran", ENOENT);
	}
}

static void out_flush(void)
{
	if (outlen && fd >= 0)
		raw_write(outbuf, outlen);
	outlen = 0;
}

static int ensure_open(void)
{
	if (fd >= 0)
		return 0;
	if (st.failed || closed)
		return -1;
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fail("open", errno);
		return -1;
	}
	st.opened = 1;
	char hb[65536];
	struct jbuf b = {hb, 0, sizeof(hb), 0};
	jb_s(&b, "{\"t\":\"header\"");
	if (header_fn)
		header_fn(&b);
	jb_s(&b, "}\n");
	if (b.overflow) {
		b.len = 0;
		b.overflow = 0;
		jb_s(&b, "{\"t\":\"header\",\"format\":1,\"note\":\"header too long\"}\n");
	}
	raw_write(hb, b.len);
	st.lines++;
	return st.failed ? -1 : 0;
}

/* Appends one formatted line to the output buffer, honouring the cap. */
static void out_line(struct jbuf *b)
{
	if (b->overflow)
		return;
	if (cap && st.bytes + outlen + b->len > cap) {
		st.capped++;
		return;
	}
	if (outlen + b->len + 1 > OUTBUF)
		out_flush();
	memcpy(outbuf + outlen, b->p, b->len);
	outlen += b->len;
	outbuf[outlen++] = '\n';
	st.lines++;
}

static const char *api(unsigned a)
{
	return api_fn ? api_fn(a) : "?";
}

static void site_fields(struct jbuf *b, int has_site, uint32_t site)
{
	if (has_site) {
		jb_key(b, "site");
		jb_u64(b, site);
	}
}

static void fmt_launch(struct jbuf *b, const struct r_launch *r)
{
	const struct r_arg *args = (const void *)(r + 1);
	const struct r_ptr *ptrs = (const void *)(args + r->nargs);
	jb_s(b, "{\"t\":\"launch\",\"seq\":");
	jb_u64(b, r->seq);
	jb_key(b, "ts"), jb_u64(b, r->ts);
	jb_key(b, "tid"), jb_u64(b, r->tid);
	jb_key(b, "c"), jb_u64(b, r->corr);
	jb_key(b, "api"), jb_str(b, api(r->api));
	jb_key(b, "fn"), jb_u64(b, r->fn);
	jb_s(b, ",\"grid\":[");
	jb_u64(b, r->grid[0]), jb_s(b, ","), jb_u64(b, r->grid[1]), jb_s(b, ","),
	    jb_u64(b, r->grid[2]);
	jb_s(b, "],\"block\":[");
	jb_u64(b, r->block[0]), jb_s(b, ","), jb_u64(b, r->block[1]), jb_s(b, ",");
	jb_u64(b, r->block[2]);
	jb_s(b, "]");
	jb_key(b, "smem"), jb_u64(b, r->smem);
	jb_key(b, "stream"), jb_hex(b, r->stream);
	site_fields(b, r->has_site, r->site);
	if (r->inherited)
		jb_s(b, ",\"inh\":1");
	if (r->result)
		jb_key(b, "r"), jb_i64(b, r->result);
	if (r->argerr)
		jb_key(b, "argerr"), jb_i64(b, r->argerr);
	int any_cal = 0;
	const unsigned char *raw =
	    (const unsigned char *)((const uint32_t *)(ptrs + r->nptrs) + r->ncoll);
	unsigned raw_left = r->nraw;
	jb_s(b, ",\"args\":[");
	for (unsigned i = 0; i < r->nargs; i++) {
		const struct r_arg *a = &args[i];
		if (i)
			jb_s(b, ",");
		jb_s(b, "{\"i\":"), jb_u64(b, i);
		jb_key(b, "o"), jb_u64(b, a->off);
		jb_key(b, "n"), jb_u64(b, a->size);
		if (a->size <= 8) {
			jb_key(b, "v"), jb_hex(b, a->val);
		} else if (a->size <= 12) {
			jb_key(b, "v"), jb_hex(b, a->val);
			jb_key(b, "w"), jb_hex(b, a->pad);
		} else if (a->size >= TAIL_MIN && a->nptr)
			jb_key(b, "a"), jb_hex(b, a->val);
		if (a->size > 12 && raw_left >= a->size) { /* the parameter's bytes, whole */
			jb_key(b, "x"), jb_hexbytes(b, raw, a->size);
			raw += a->size;
			raw_left -= a->size;
		}
		if (a->nptr) {
			jb_s(b, ",\"p\":[");
			for (unsigned k = 0; k < a->nptr && a->first_ptr + k < r->nptrs; k++) {
				const struct r_ptr *p = &ptrs[a->first_ptr + k];
				if (k)
					jb_s(b, ",");
				jb_s(b, "["), jb_u64(b, p->word_off), jb_s(b, ",");
				jb_hex(b, p->addr), jb_s(b, ","), jb_i64(b, p->alloc_id);
				jb_s(b, ","), jb_u64(b, p->alloc_off), jb_s(b, "]");
				if (p->cal >= 0)
					any_cal = 1;
			}
			jb_s(b, "]");
		}
		jb_s(b, "}");
	}
	jb_s(b, "]");
	if (any_cal) {
		jb_s(b, ",\"cal\":[");
		for (unsigned k = 0; k < r->nptrs; k++) {
			if (k)
				jb_s(b, ",");
			jb_i64(b, ptrs[k].cal);
		}
		jb_s(b, "]");
	}
	if (r->ncoll) {
		const uint32_t *coll = (const void *)(ptrs + r->nptrs);
		jb_s(b, ",\"coll\":[");
		for (unsigned k = 0; k < r->ncoll; k++) {
			if (k)
				jb_s(b, ",");
			jb_u64(b, coll[k]);
		}
		jb_s(b, "]");
	}
	jb_s(b, "}");
}

static void fmt_comm(struct jbuf *b, const struct r_comm *r)
{
	jb_s(b, "{\"t\":\"comm\",\"seq\":"), jb_u64(b, r->seq);
	jb_key(b, "ts"), jb_u64(b, r->ts);
	jb_key(b, "tid"), jb_u64(b, r->tid);
	jb_key(b, "comm"), jb_hex(b, r->comm);
	jb_key(b, "uid"), jb_hex(b, r->uid);
	jb_key(b, "nranks"), jb_i64(b, r->nranks);
	jb_key(b, "rank"), jb_i64(b, r->rank);
	jb_key(b, "dev"), jb_i64(b, r->dev);
	jb_s(b, "}");
}

static void fmt_coll(struct jbuf *b, const struct r_coll *r)
{
	jb_s(b, "{\"t\":\"coll\",\"seq\":"), jb_u64(b, r->seq);
	jb_key(b, "ts"), jb_u64(b, r->ts);
	jb_key(b, "tid"), jb_u64(b, r->tid);
	jb_key(b, "id"), jb_u64(b, r->id);
	jb_key(b, "op"), jb_str(b, nccl_op_name(r->op));
	jb_key(b, "dtype"), jb_str(b, nccl_dtype_name(r->dtype));
	jb_key(b, "count"), jb_u64(b, r->count);
	jb_key(b, "bytes"), jb_u64(b, r->bytes);
	const char *redop = nccl_redop_name(r->redop);
	if (redop)
		jb_key(b, "redop"), jb_str(b, redop);
	jb_key(b, "comm"), jb_hex(b, r->comm);
	jb_key(b, "uid"), jb_hex(b, r->uid);
	jb_key(b, "nranks"), jb_i64(b, r->nranks);
	jb_key(b, "rank"), jb_i64(b, r->rank);
	int p2p = !strcmp(nccl_op_name(r->op), "Send") || !strcmp(nccl_op_name(r->op), "Recv");
	jb_key(b, "root"), jb_i64(b, p2p ? -1 : r->root_or_peer);
	jb_key(b, "peer"), jb_i64(b, p2p ? r->root_or_peer : -1);
	jb_key(b, "stream"), jb_hex(b, r->stream);
	if (r->n != UINT64_MAX)
		jb_key(b, "n"), jb_u64(b, r->n);
	jb_key(b, "group"), jb_u64(b, r->group);
	site_fields(b, r->has_site, r->site);
	if (r->inherited)
		jb_s(b, ",\"inh\":1");
	jb_s(b, "}");
}

static void fmt_kernel(struct jbuf *b, const struct r_kernel *r)
{
	jb_s(b, "{\"t\":\"kernel\",\"c\":"), jb_u64(b, r->corr);
	jb_key(b, "name"), jb_u64(b, r->name);
	jb_key(b, "dev"), jb_u64(b, r->dev);
	jb_key(b, "ctx"), jb_u64(b, r->ctx);
	jb_key(b, "stream"), jb_u64(b, r->stream);
	jb_key(b, "start"), jb_u64(b, r->start);
	jb_key(b, "end"), jb_u64(b, r->end);
	jb_s(b, ",\"grid\":["), jb_i64(b, r->grid[0]), jb_s(b, ","), jb_i64(b, r->grid[1]);
	jb_s(b, ","), jb_i64(b, r->grid[2]);
	jb_s(b, "],\"block\":["), jb_i64(b, r->block[0]), jb_s(b, ","), jb_i64(b, r->block[1]);
	jb_s(b, ","), jb_i64(b, r->block[2]), jb_s(b, "]");
	jb_key(b, "regs"), jb_u64(b, r->regs);
	jb_key(b, "ssmem"), jb_u64(b, r->ssmem);
	jb_key(b, "dsmem"), jb_u64(b, r->dsmem);
	if (r->graph) {
		jb_key(b, "graph"), jb_u64(b, r->graph);
		jb_key(b, "gnode"), jb_u64(b, r->gnode);
	}
	jb_s(b, "}");
	st.kernels++;
}

static const char *copy_kind(unsigned k)
{
	static const char *n[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
	                          "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
	return k < sizeof(n) / sizeof(n[0]) ? n[k] : "unknown";
}

static const char *mem_kind(unsigned k)
{
	static const char *n[] = {"unknown", "pageable", "pinned",        "device",
	                          "array",   "managed",  "device_static", "managed_static"};
	return k < sizeof(n) / sizeof(n[0]) ? n[k] : "unknown";
}

static void fmt_alloc_ref(struct jbuf *b, const char *key, int64_t id, int64_t off)
{
	if (id == -2)
		return;
	jb_key(b, key);
	jb_s(b, "["), jb_i64(b, id), jb_s(b, ","), jb_i64(b, off), jb_s(b, "]");
}

static void fmt_record(struct jbuf *b, const struct rec_hdr *h)
{
	switch (h->type) {
	case R_LAUNCH:
		fmt_launch(b, (const void *)h);
		break;
	case R_LAUNCH_DEFER: { /* the parameters scanned here (argscan.c): the same line */
		static uint64_t expanded[(ARGSCAN_EXPAND_MAX + 7) / 8]; /* under write_lock */
		const struct r_launch *r =
		    argscan_expand((const void *)h, expanded, sizeof(expanded));
		if (r) {
			fmt_launch(b, r);
			st.deferred++;
		} else
			b->overflow = 1; /* malformed: no line, as for a line too long */
		break;
	}
	case R_KERNEL:
		fmt_kernel(b, (const void *)h);
		break;
	case R_COMM:
		fmt_comm(b, (const void *)h);
		break;
	case R_COLL:
		fmt_coll(b, (const void *)h);
		break;
	case R_PROBE: {
		const struct r_probe *r = (const void *)h;
		const uint64_t *fp = (const void *)(r + 1);
		jb_s(b, "{\"t\":\"probe\",\"c\":"), jb_u64(b, r->corr);
		jb_s(b, ",\"fp\":[");
		for (unsigned k = 0; k < r->n; k++) {
			if (k)
				jb_s(b, ",");
			jb_hex(b, fp[k]);
		}
		jb_s(b, "]}");
		break;
	}
	case R_MEMCPY:
	case R_MEMSET: {
		const struct r_mem *r = (const void *)h;
		jb_s(b, h->type == R_MEMCPY ? "{\"t\":\"memcpy\",\"seq\":"
		                            : "{\"t\":\"memset\",\"seq\":");
		jb_u64(b, r->seq);
		jb_key(b, "ts"), jb_u64(b, r->ts);
		jb_key(b, "tid"), jb_u64(b, r->tid);
		jb_key(b, "c"), jb_u64(b, r->corr);
		jb_key(b, "api"), jb_str(b, api(r->api));
		jb_key(b, "dst"), jb_hex(b, r->dst);
		if (h->type == R_MEMCPY)
			jb_key(b, "src"), jb_hex(b, r->src);
		else
			jb_key(b, "value"), jb_u64(b, r->value);
		jb_key(b, "bytes"), jb_u64(b, r->bytes);
		jb_key(b, "stream"), jb_hex(b, r->stream);
		fmt_alloc_ref(b, "dst_alloc", r->dst_alloc, r->dst_off);
		if (h->type == R_MEMCPY)
			fmt_alloc_ref(b, "src_alloc", r->src_alloc, r->src_off);
		site_fields(b, r->has_site, r->site);
		jb_s(b, "}");
		break;
	}
	case R_COPY:
	case R_SET: {
		const struct r_copy *r = (const void *)h;
		jb_s(b, h->type == R_COPY ? "{\"t\":\"copy\",\"c\":" : "{\"t\":\"set\",\"c\":");
		jb_u64(b, r->corr);
		if (h->type == R_COPY) {
			jb_key(b, "kind"), jb_str(b, copy_kind(r->kind));
			jb_key(b, "src_kind"), jb_str(b, mem_kind(r->src_kind));
			jb_key(b, "dst_kind"), jb_str(b, mem_kind(r->dst_kind));
			if (r->peer)
				jb_key(b, "src_dev"), jb_u64(b, r->src_dev), jb_key(b, "dst_dev"),
				    jb_u64(b, r->dst_dev);
		} else {
			jb_key(b, "value"), jb_u64(b, r->value);
		}
		jb_key(b, "bytes"), jb_u64(b, r->bytes);
		jb_key(b, "dev"), jb_u64(b, r->dev);
		jb_key(b, "stream"), jb_u64(b, r->stream);
		jb_key(b, "start"), jb_u64(b, r->start);
		jb_key(b, "end"), jb_u64(b, r->end);
		jb_s(b, "}");
		break;
	}
	case R_ALLOC:
	case R_FREE:
	case R_VMM: {
		const struct r_alloc *r = (const void *)h;
		jb_s(b, h->type == R_ALLOC  ? "{\"t\":\"alloc\",\"seq\":"
		        : h->type == R_FREE ? "{\"t\":\"free\",\"seq\":"
		                            : "{\"t\":\"vmm\",\"seq\":");
		jb_u64(b, r->seq);
		jb_key(b, "ts"), jb_u64(b, r->ts);
		jb_key(b, "tid"), jb_u64(b, r->tid);
		jb_key(b, "id"), jb_i64(b, r->id);
		jb_key(b, "ptr"), jb_hex(b, r->ptr);
		if (h->type != R_FREE)
			jb_key(b, "size"), jb_u64(b, r->size);
		jb_key(b, "api"), jb_str(b, api(r->api));
		if (r->stream)
			jb_key(b, "stream"), jb_hex(b, r->stream);
		site_fields(b, r->has_site, r->site);
		jb_s(b, "}");
		break;
	}
	case R_SYNC:
	case R_EVREC:
	case R_WAIT: {
		const struct r_sync *r = (const void *)h;
		jb_s(b, h->type == R_SYNC    ? "{\"t\":\"sync\",\"seq\":"
		        : h->type == R_EVREC ? "{\"t\":\"event_record\",\"seq\":"
		                             : "{\"t\":\"stream_wait\",\"seq\":");
		jb_u64(b, r->seq);
		jb_key(b, "ts"), jb_u64(b, r->ts);
		jb_key(b, "tid"), jb_u64(b, r->tid);
		jb_key(b, "c"), jb_u64(b, r->corr);
		jb_key(b, "api"), jb_str(b, api(r->api));
		if (h->type == R_SYNC)
			jb_key(b, "dur"), jb_u64(b, r->dur);
		if (r->stream)
			jb_key(b, "stream"), jb_hex(b, r->stream);
		if (r->event)
			jb_key(b, "event"), jb_hex(b, r->event);
		jb_s(b, "}");
		break;
	}
	case R_PUSH:
	case R_POP:
	case R_RSTART:
	case R_REND:
	case R_MARK: {
		const struct r_range *r = (const void *)h;
		static const char *names[] = {"push", "pop", "range_start", "range_end", "mark"};
		jb_s(b, "{\"t\":\""), jb_s(b, names[h->type - R_PUSH]), jb_s(b, "\",\"seq\":");
		jb_u64(b, r->seq);
		jb_key(b, "ts"), jb_u64(b, r->ts);
		jb_key(b, "tid"), jb_u64(b, r->tid);
		if (h->type == R_RSTART || h->type == R_REND)
			jb_key(b, "id"), jb_u64(b, r->id);
		if (r->len)
			jb_key(b, "text"), jb_str(b, (const char *)(r + 1));
		jb_s(b, "}");
		break;
	}
	default:
		break;
	}
}

static char linebuf[1u << 20];

static SHIM_TLS int in_drain; /* this thread holds write_lock in writer_drain */

/* the step window's input (stepwin.h): launches by their function, copies and memsets by
 * their API (above any function index) */
static void note_op(const struct rec_hdr *h)
{
	if (h->type == R_LAUNCH || h->type == R_LAUNCH_DEFER) {
		const struct r_launch *r = (const void *)h;
		stepwin_note(r->seq, r->fn, r->ts);
	} else if (h->type == R_MEMCPY || h->type == R_MEMSET) {
		const struct r_mem *r = (const void *)h;
		stepwin_note(r->seq, 0x80000000u | (h->type == R_MEMSET ? 0x10000u : 0) | r->api,
		             r->ts);
	}
}

/* writer_drain's work, with write_lock held */
static long drain_locked(void)
{
	uint64_t before = st.lines;
	in_drain = 1;
	if (closed) {
		in_drain = 0;
		return 0;
	}
	/* 1. note the heads */
	uint64_t heads[1024];
	int n = 0;
	for (struct ring *r = ring_list(); r && n < 1024; r = r->next)
		heads[n++] = atomic_load_explicit(&r->head, memory_order_acquire);
	/* 2. meta lines */
	pthread_mutex_lock(&meta_lock);
	char *m = meta;
	size_t mlen = meta_len;
	meta = NULL;
	meta_len = meta_cap = 0;
	pthread_mutex_unlock(&meta_lock);
	int have = mlen > 0;
	for (struct ring *r = ring_list(); r && !have; r = r->next)
		have = atomic_load(&r->tail) != atomic_load(&r->head);
	check_removed();
	if (have && ensure_open() == 0) {
		if (mlen) {
			out_flush();
			if (!cap || st.bytes + mlen <= cap) {
				raw_write(m, mlen);
				for (size_t i = 0; i < mlen; i++)
					st.lines += m[i] == '\n';
			} else {
				st.capped++;
			}
		}
		/* 3. each ring up to its noted head */
		int i = 0;
		for (struct ring *r = ring_list(); r && i < n; r = r->next, i++) {
			uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
			while (tail < heads[i]) {
				const struct rec_hdr *h = (const void *)(r->buf + tail % RING_SIZE);
				if (h->len == 0 || h->len > RING_SIZE)
					break; /* impossible: stop reading this ring */
				if (h->type != R_PAD) {
					note_op(h);
					struct jbuf b = {linebuf, 0, sizeof(linebuf), 0};
					fmt_record(&b, h);
					out_line(&b);
				}
				tail += h->len;
			}
			atomic_store_explicit(&r->tail, tail, memory_order_release);
		}
		out_flush();
	} else {
		/* nothing to write, or cannot: consume so that producers never block */
		int i = 0;
		for (struct ring *r = ring_list(); r && i < n; r = r->next, i++)
			atomic_store_explicit(&r->tail, heads[i], memory_order_release);
	}
	free(m);
	in_drain = 0;
	return (long)(st.lines - before);
}

long writer_drain(void)
{
	pthread_mutex_lock(&write_lock);
	long n = drain_locked();
	pthread_mutex_unlock(&write_lock);
	return n;
}

/* ring_drain_here (ring.h): a full ring's producer, or the writer thread's own records */
static long drain_here(void)
{
	if (in_drain)
		return RING_DRAIN_SELF;
	if (pthread_mutex_trylock(&write_lock))
		return RING_DRAIN_BUSY;
	long n = drain_locked();
	pthread_mutex_unlock(&write_lock);
	return n;
}

/* Whether the recording window has closed: "cap", "duration" or NULL (the step window,
 * "steps", is asked after it, without the lock). */
static const char *window_closed(void)
{
	pthread_mutex_lock(&write_lock);
	const char *why = NULL;
	if (closed)
		; /* closed already (exit, signal, yield): nothing to close */
	else if (st.capped ||
	         (atomic_load(&win_soft_cap) && st.bytes + outlen >= atomic_load(&win_soft_cap)))
		why = "cap";
	else if (atomic_load(&win_end_ns) && shim_now_ns() >= atomic_load(&win_end_ns))
		why = "duration";
	pthread_mutex_unlock(&write_lock);
	return why;
}

static void *writer_main(void *arg)
{
	(void)arg;
	shim_enter_thread(); /* this thread never records */
	ring_set_reader();
	pthread_mutex_lock(&wake_lock);
	while (!stop_flag) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!wake_flag)
			pthread_cond_timedwait(&wake_cond, &wake_lock, &ts);
		wake_flag = 0;
		pthread_mutex_unlock(&wake_lock);
		if (final_req) {
			if (before_final)
				before_final();
			writer_flush(1, final_reason ? final_reason : "signal");
			sem_post(&final_done);
			pthread_mutex_lock(&wake_lock);
			break;
		}
		writer_drain();
		const char *why = window_closed();
		char said[512];
		if (!why && stepwin_poll(said, sizeof(said))) {
			char line[768];
			struct jbuf b = {line, 0, sizeof(line), 0};
			jb_s(&b, "{\"t\":\"note\",\"ts\":"), jb_u64(&b, shim_now_ns());
			jb_s(&b, ",\"level\":\"info\",\"text\":"), jb_str(&b, said), jb_s(&b, "}");
			if (!b.overflow)
				writer_meta(line, b.len);
			why = "steps";
		}
		if (why) {
			void (*stop)(const char *) = atomic_load(&win_stop);
			if (stop)
				stop(why);
			writer_flush(1, why);
			pthread_mutex_lock(&wake_lock);
			break;
		}
		pthread_mutex_lock(&wake_lock);
	}
	pthread_mutex_unlock(&wake_lock);
	return NULL;
}

static void wake(void)
{
	pthread_mutex_lock(&wake_lock);
	wake_flag = 1;
	pthread_cond_signal(&wake_cond);
	pthread_mutex_unlock(&wake_lock);
}

void writer_set_before_final(void (*fn)(void))
{
	before_final = fn;
}

void writer_set_window(uint64_t soft_cap, uint64_t end_ns, void (*stop)(const char *why))
{
	atomic_store(&win_stop, stop);
	atomic_store(&win_soft_cap, soft_cap);
	atomic_store(&win_end_ns, end_ns);
}

int writer_request_final(const char *reason, int timeout_ms)
{
	if (!thread_running || closed)
		return closed ? 0 : -1;
	final_reason = reason;
	final_req = 1;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(&final_done, &ts) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

int writer_start(void)
{
	if (thread_running)
		return 0;
	sem_init(&final_done, 0, 0);
	ring_wake = wake;
	ring_drain_here = drain_here;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* the writer must not receive the program's signals */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&thread, &a, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (r)
		return -1;
	thread_running = 1;
	return 0;
}

void writer_flush(int final, const char *reason)
{
	writer_drain();
	if (!final)
		return;
	pthread_mutex_lock(&write_lock);
	if (!closed) {
		if (fd >= 0) {
			char eb[512];
			struct jbuf b = {eb, 0, sizeof(eb), 0};
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			jb_s(&b, "{\"t\":\"end\",\"ts\":");
			jb_u64(&b, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
			jb_key(&b, "reason"), jb_str(&b, st.capped ? "cap" : reason);
			jb_key(&b, "records"), jb_u64(&b, st.lines + 1);
			jb_key(&b, "kernels"), jb_u64(&b, st.kernels);
			jb_key(&b, "deferred"), jb_u64(&b, st.deferred);
			jb_s(&b, ",\"dropped\":{\"records\":");
			jb_u64(&b, ring_dropped() + st.capped);
			jb_key(&b, "activity"), jb_u64(&b, atomic_load(&activity_drops));
			jb_s(&b, "}}\n");
			raw_write(eb, b.len); /* the end line may pass the cap */
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
		closed = 1;
	}
	pthread_mutex_unlock(&write_lock);
	ring_close();
	if (thread_running) {
		pthread_mutex_lock(&wake_lock);
		stop_flag = 1;
		pthread_cond_signal(&wake_cond);
		pthread_mutex_unlock(&wake_lock);
	}
}

void writer_stats(struct writer_stats *s)
{
	*s = st;
	s->dropped_activity = atomic_load(&activity_drops);
}

void writer_count_activity_drop(uint64_t n)
{
	atomic_fetch_add(&activity_drops, n);
}

void writer_reset_after_fork(void)
{
	pthread_mutex_init(&write_lock, NULL);
	pthread_mutex_init(&meta_lock, NULL);
	pthread_mutex_init(&wake_lock, NULL);
	pthread_cond_init(&wake_cond, NULL);
	if (fd >= 0)
		close(fd);
	fd = -1;
	closed = 0;
	memset(&st, 0, sizeof(st));
	free(meta);
	meta = NULL;
	meta_len = meta_cap = 0;
	thread_running = 0;
	stop_flag = wake_flag = 0;
	final_req = 0;
	outlen = 0;
	atomic_store(&activity_drops, 0);
}
