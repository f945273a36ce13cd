/*
 * test-analyzer-graph.c - the graph builder through analysis_run(): pointer-role precedence
 * (calibrated, semantics, fresh-alloc, conservative), records out of seq order, activity
 * before its launch, CUDA-graph kernels, warm-up by kernel sequence, range_start/range_end
 * steps, values freed inside the step, and the hash map under it.
 *
 * Each test writes a small trace to a temporary file with the lines given, analyses it, and
 * checks the model. K() writes one launch and its kernel record: correlation id, seq, str id
 * of the name, pointer alloc ids (up to 3, -2 for none), GPU start (us after T0), duration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/hmap.h"
#include "analyzer/model.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HDR                                                                                        \
	"{\"t\":\"header\",\"format\":1,\"pid\":1,\"argv\":[\"./a.out\"],\"devices\":[{\"id\":0,"  \
	"\"name\":\"NVIDIA H200\",\"cc\":\"9.0\",\"peak_bw_gbs\":4000}]}\n"
/* an ATen add (semantics: out, in, in), an extern "C" kernel (no signature), a C++ kernel
 * whose mangled signature says sum_reduce(float*, float const*, int) */
#define ADD_NAME                                                                                   \
	"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "   \
	"std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, "     \
	"3ul>)"
#define STRS                                                                                       \
	"{\"t\":\"str\",\"id\":1,\"s\":\"" ADD_NAME "\"}\n"                                        \
	"{\"t\":\"str\",\"id\":2,\"s\":\"my_kernel\"}\n"                                           \
	"{\"t\":\"str\",\"id\":3,\"s\":\"_Z10sum_reducePfPKfi\"}\n"

static struct strbuf tr = STRBUF_INIT;

static void add(const char *fmt, ...)
{
	va_list ap;
	char buf[2048];
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	strbuf_adds(&tr, buf);
}

static void alloc(long seq, int id, long size)
{
	add("{\"t\":\"alloc\",\"seq\":%ld,\"ts\":%ld,\"tid\":1,\"id\":%d,\"ptr\":\"0x%x00000\","
	    "\"size\":%ld}\n",
	    seq, 1000 + seq, id, id + 1, size);
}

/* One launch; each pointer is a whole 8-byte parameter, then the scalar N (as in C kernels). */
static void launch(long c, long seq, int fn, const int *p, int np, const char *cal)
{
	add("{\"t\":\"launch\",\"seq\":%ld,\"ts\":%ld,\"tid\":1,\"c\":%ld,\"fn\":%d,\"stream\":"
	    "\"0x1\","
	    "\"args\":[",
	    seq, 1000 + seq, c, fn);
	for (int i = 0; i < np; i++)
		add("{\"i\":%d,\"o\":%d,\"n\":8,\"p\":[[0,\"0x%x00000\",%d,0]]},", i, 8 * i,
		    p[i] + 1, p[i]);
	add("{\"i\":%d,\"o\":%d,\"n\":4,\"v\":\"0x64\"}]%s%s}\n", np, 8 * np,
	    cal ? ",\"cal\":" : "", cal ? cal : "");
}

static void kernel(long c, int fn, long start_us, long dur_us, int graph)
{
	add("{\"t\":\"kernel\",\"c\":%ld,\"name\":%d,\"stream\":7,\"start\":%ld,\"end\":%ld,"
	    "\"graph\":%d}\n",
	    c, fn, 1764430000000000000L + start_us * 1000,
	    1764430000000000000L + (start_us + dur_us) * 1000, graph);
}

/* An ATen loop's launch as PyTorch makes it: (int N, functor, std::array<char*, 3> data). */
static void aten_launch(long c, long seq, const int *p, const char *cal)
{
	add("{\"t\":\"launch\",\"seq\":%ld,\"ts\":%ld,\"tid\":1,\"c\":%ld,\"fn\":1,\"stream\":"
	    "\"0x1\","
	    "\"args\":[{\"i\":0,\"o\":0,\"n\":4,\"v\":\"0x64\"},{\"i\":1,\"o\":4,\"n\":1},"
	    "{\"i\":2,\"o\":8,\"n\":24,\"p\":[",
	    seq, 1000 + seq, c);
	for (int i = 0; i < 3; i++)
		add("%s[%d,\"0x%x00000\",%d,0]", i ? "," : "", 8 * i, p[i] + 1, p[i]);
	add("]}]%s%s}\n", cal ? ",\"cal\":" : "", cal ? cal : "");
}

static void K(long c, long seq, int fn, int a, int b, int d, long start, long dur)
{
	int p[3] = {a, b, d}, n = d >= 0 ? 3 : b >= 0 ? 2 : 1;
	if (fn == 1)
		aten_launch(c, seq, p, NULL);
	else
		launch(c, seq, fn, p, n, NULL);
	kernel(c, fn, start, dur, 0);
}

static struct model *run(void)
{
	char path[] = "/tmp/test-analyzer-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, tr.buf, tr.len), (ssize_t)tr.len);
	close(fd);
	char *paths[] = {path};
	util_quiet = 1;
	struct model *m = analysis_run(paths, 1);
	unlink(path);
	if (getenv("KEEP_TRACE"))
		fputs(tr.buf, stderr);
	strbuf_release(&tr);
	return m;
}

static const struct value *written_by(const struct model *m, int node, long buffer)
{
	for (int i = 0; i < m->nvalues; i++)
		if (m->values[i].writer == node && m->values[i].buffer == buffer)
			return &m->values[i];
	return NULL;
}

static const struct edge *edge(const struct model *m, int from, int to)
{
	for (int i = 0; i < m->nedges; i++)
		if (m->edges[i].from == from && m->edges[i].to == to && m->edges[i].value >= 0)
			return &m->edges[i];
	return NULL;
}

/* Semantics says add writes its first pointer; a fresh buffer is written by its first toucher. */
static void test_roles_semantics_and_fresh(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	alloc(2, 1, 400);
	alloc(3, 2, 400);
	K(10, 4, 2, 0, -1, -1, 0, 1); /* custom kernel on fresh buffer 0: fresh-alloc write */
	K(11, 5, 1, 1, 0, 0, 2, 1);   /* add: 1 = 0 + 0 (semantics) */
	K(12, 6, 2, 1, 2, -1, 4, 1);  /* custom: reads 1, writes fresh 2 */
	struct model *m = run();
	assert_non_null(m);
	assert_int_equal(m->nnodes, 3);
	assert_non_null(written_by(m, 0, 0));
	assert_int_equal(written_by(m, 0, 0)->how, HOW_FRESH);
	assert_non_null(written_by(m, 1, 1));
	assert_int_equal(written_by(m, 1, 1)->how, HOW_SEMANTICS);
	assert_non_null(edge(m, 0, 1));
	assert_non_null(edge(m, 1, 2));
	/* node 2 reads buffer 1 by the conservative rule: the edge is as weak as its read */
	assert_int_equal(edge(m, 1, 2)->how, HOW_CONSERVATIVE);
	assert_int_equal(written_by(m, 2, 2)->how, HOW_FRESH);
	assert_null(written_by(m, 2, 1)); /* buffer 1 is only read by node 2 */
	model_free(m);
}

/* An ATen add whose three pointers sit at byte offsets of their allocations (a, b, d: ids;
 * oa, ob, od: offsets), as under a caching allocator's segments. */
static void add_at(long c, long seq, int a, long oa, int b, long ob, int d, long od, long start)
{
	add("{\"t\":\"launch\",\"seq\":%ld,\"ts\":%ld,\"tid\":1,\"c\":%ld,\"fn\":1,\"stream\":"
	    "\"0x1\",\"args\":[{\"i\":0,\"o\":0,\"n\":4,\"v\":\"0x64\"},{\"i\":1,\"o\":4,\"n\":1},"
	    "{\"i\":2,\"o\":8,\"n\":24,\"p\":[[0,\"0x%lx\",%d,%ld],[8,\"0x%lx\",%d,%ld],[16,"
	    "\"0x%lx\",%d,%ld]]}]}\n",
	    seq, 1000 + seq, c, ((long)a + 1) * 0x100000 + oa, a, oa, ((long)b + 1) * 0x100000 + ob,
	    b, ob, ((long)d + 1) * 0x100000 + od, d, od);
	kernel(c, 1, start, 1, 0);
}

/* Two tensors in one allocation (a segment): each keeps its own value, so writing one does not
 * overwrite the other, and a reader of both reads each from its writer. */
static void test_values_in_ranges(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 1 << 20); /* the segment */
	alloc(2, 1, 400);
	alloc(3, 2, 400);
	alloc(4, 3, 400);
	add_at(10, 5, 0, 0, 1, 0, 2, 0, 0);    /* node 0: seg[0, 400) = 1 + 2 */
	add_at(11, 6, 0, 4096, 1, 0, 2, 0, 2); /* node 1: seg[4096, 4496) = 1 + 2 */
	add_at(12, 7, 3, 0, 0, 0, 0, 4096, 4); /* node 2: 3 = seg[0..] + seg[4096..] */
	add_at(13, 8, 0, 200, 1, 0, 2, 0, 6);  /* node 3: seg[200, 600): half of node 0's */
	add_at(14, 9, 3, 0, 0, 0, 0, 4096, 8); /* node 4: reads seg[0, 400) again */
	struct model *m = run();
	assert_non_null(m);
	assert_int_equal(m->nnodes, 5);
	const struct edge *e02 = edge(m, 0, 2), *e12 = edge(m, 1, 2);
	assert_non_null(e02); /* one value per range: node 1 did not overwrite node 0's */
	assert_non_null(e12);
	assert_int_equal(e02->bytes, 400);
	assert_int_equal(e12->bytes, 400);
	const struct value *v0 = written_by(m, 0, 0);
	assert_non_null(v0);
	assert_false(v0->dead_in_step && v0->nreaders == 0);
	/* node 3 overwrote [200, 400) of node 0's value: node 4 reads the first half from node
	 * 0 and the rest from node 3 */
	const struct edge *e04 = edge(m, 0, 4), *e34 = edge(m, 3, 4);
	assert_non_null(e04);
	assert_non_null(e34);
	assert_int_equal(e04->bytes, 200);
	assert_int_equal(e34->bytes, 200);
	model_free(m);
}

/* A block larger than the tensor written in it (a pool rounds up): a read whose extent runs
 * past the last value written there reads the tensor, not the never-written rest; a read of
 * a buffer no one wrote in the trace is an input, whole. */
static void test_read_tail_past_the_written_value(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 1024); /* X */
	alloc(2, 1, 1024); /* Z, an input from before the trace */
	alloc(3, 2, 1024); /* Y */
	alloc(4, 3, 1024);
	add_at(10, 5, 0, 0, 3, 0, 3, 0, 0); /* node 0: X[0, 400) = w + w (100 floats) */
	/* node 1: Y = X + Z over 200 floats: 800 bytes of X, of which 400 were written */
	add("{\"t\":\"launch\",\"seq\":6,\"ts\":1006,\"tid\":1,\"c\":11,\"fn\":1,"
	    "\"stream\":\"0x1\",\"args\":[{\"i\":0,\"o\":0,\"n\":4,\"v\":\"0xc8\"},{\"i\":1,"
	    "\"o\":4,\"n\":1},{\"i\":2,\"o\":8,\"n\":24,\"p\":[[0,\"0x300000\",2,0],[8,"
	    "\"0x100000\",0,0],[16,\"0x200000\",1,0]]}]}\n");
	kernel(11, 1, 2, 1, 0);
	struct model *m = run();
	assert_non_null(m);
	assert_int_equal(m->nnodes, 2);
	const struct edge *e01 = edge(m, 0, 1);
	assert_non_null(e01);
	assert_int_equal(e01->bytes, 400);
	assert_int_equal(m->nodes[1].bytes_read, 400 + 800);
	model_free(m);
}

/* A layer norm whose tensors sit in one segment: its parameters (N, the grid's M rows) bound
 * each pointer's bytes, not the segment's size past the pointer. */
static void test_norm_extents_in_a_segment(void **state)
{
	add(HDR);
	add("{\"t\":\"str\",\"id\":4,\"s\":\"void at::native::(anonymous "
	    "namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, "
	    "float const*, float const*, float*, float*, float*)\"}\n");
	alloc(1, 0, 16 << 20);
	long base = 0x100000;
	long off[6] = {0, 1 << 20, (1 << 20) + 1024, 2 << 20, (2 << 20) + 4096, 4 << 20};
	add("{\"t\":\"launch\",\"seq\":5,\"ts\":1005,\"tid\":1,\"c\":10,\"fn\":4,\"stream\":"
	    "\"0x1\",\"grid\":[64,1,1],\"block\":[32,4,1],\"args\":[{\"i\":0,\"o\":0,\"n\":4,"
	    "\"v\":\"0x100\"},{\"i\":1,\"o\":4,\"n\":4,\"v\":\"0x3727c5ac\"}");
	for (int i = 0; i < 6; i++)
		add(",{\"i\":%d,\"o\":%d,\"n\":8,\"p\":[[0,\"0x%lx\",0,%ld]]}", i + 2, 8 + 8 * i,
		    base + off[i], off[i]);
	add("]}\n");
	kernel(10, 4, 0, 5, 0);
	struct model *m = run();
	assert_non_null(m);
	assert_int_equal(m->nnodes, 1);
	/* X 64 x 256 floats, gamma and beta 256 each; Y 64 x 256, mean and rstd 64 each */
	assert_int_equal(m->nodes[0].bytes_read, 65536 + 1024 + 1024);
	assert_int_equal(m->nodes[0].bytes_written, 65536 + 256 + 256);
	model_free(m);
}

/* Unknown kernel, nothing fresh: reads everything, and its last pointer is read and written. */
static void test_roles_conservative(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	alloc(2, 1, 400);
	K(10, 3, 2, 0, -1, -1, 0, 1); /* writes fresh 0 */
	K(11, 4, 2, 1, -1, -1, 2, 1); /* writes fresh 1 */
	K(12, 5, 2, 0, 1, -1, 4, 1);  /* neither fresh: reads 0, reads+writes 1 */
	struct model *m = run();
	assert_non_null(m);
	const struct value *v = written_by(m, 2, 1);
	assert_non_null(v);
	assert_int_equal(v->how, HOW_CONSERVATIVE);
	assert_null(written_by(m, 2, 0));
	assert_non_null(edge(m, 0, 2));
	assert_non_null(edge(m, 1, 2));
	model_free(m);
}

/* Calibration beats semantics: the shim saw only the second pointer's allocation change. */
static void test_roles_calibrated(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	alloc(2, 1, 400);
	K(10, 3, 2, 0, -1, -1, 0, 1);
	K(11, 4, 2, 1, -1, -1, 2, 1);
	int p[3] = {0, 1, 0};
	aten_launch(12, 5, p, "[0,1,0]");
	kernel(12, 1, 4, 1, 0);
	aten_launch(13, 6, p, NULL); /* same name, no flags: the recorded flags apply */
	kernel(13, 1, 6, 1, 0);
	struct model *m = run();
	assert_non_null(m);
	assert_non_null(written_by(m, 2, 1));
	assert_int_equal(written_by(m, 2, 1)->how, HOW_CALIBRATED);
	assert_null(written_by(m, 2, 0));
	assert_non_null(written_by(m, 3, 1));
	assert_int_equal(written_by(m, 3, 1)->how, HOW_CALIBRATED);
	model_free(m);
}

/* A reader whose record comes first in the file but has the higher seq still reads the write. */
static void test_reorder_by_seq(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	alloc(2, 1, 400);
	K(11, 5, 2, 0, 1, -1, 2, 1);  /* seq 5: reads 0 (written at seq 4), writes fresh 1 */
	K(10, 4, 2, 0, -1, -1, 0, 1); /* seq 4: writes fresh 0 */
	struct model *m = run();
	assert_non_null(m);
	assert_int_equal(m->nnodes, 2);
	assert_non_null(written_by(m, 0, 0));
	assert_non_null(edge(m, 0, 1));
	model_free(m);
}

/* Activity before its launch joins; a CUDA-graph kernel without a launch becomes a node. */
static void test_orphans_and_graph_kernels(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	kernel(10, 2, 0, 5, 0);
	int p[1] = {0};
	launch(10, 2, 2, p, 1, NULL);
	kernel(99, 1, 10, 3, 1);
	struct model *m = run();
	assert_non_null(m);
	assert_int_equal(m->nnodes, 2);
	assert_true(m->nodes[0].median_us == 5.0);
	assert_true(m->nodes[1].median_us == 3.0);
	assert_int_equal(m->nodes[1].sem.family, FAM_ELEMENTWISE);
	model_free(m);
}

/* NVTX steps; a first step with another kernel sequence is warm-up; a freed value is dead. */
static void test_steps_warmup_and_free(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	long seq = 10, c = 100, t = 0;
	for (int s = 0; s < 4; s++) {
		add("{\"t\":\"push\",\"seq\":%ld,\"tid\":1,\"text\":\"step %d\"}\n", seq++, s);
		alloc(seq++, 10 + s, 800);
		K(c, seq++, 2, 10 + s, -1, -1, t, 2);
		c++, t += 3;
		if (s == 0) { /* an extra kernel in step 0 only */
			K(c, seq++, 2, 0, -1, -1, t, 2);
			c++, t += 3;
		}
		K(c, seq++, 1, 0, 10 + s, 10 + s, t, 4);
		c++, t += 10;
		add("{\"t\":\"free\",\"seq\":%ld,\"tid\":1,\"id\":%d}\n", seq++, 10 + s);
		add("{\"t\":\"pop\",\"seq\":%ld,\"tid\":1}\n", seq++);
	}
	struct model *m = run();
	assert_non_null(m);
	assert_string_equal(m->steps_how, "nvtx");
	assert_int_equal(m->nsteps, 4);
	assert_int_equal(m->warmup, 1);
	assert_int_equal(m->nnodes, 2);
	assert_int_equal(m->nodes[0].count, 3);
	/* the captured step is the first steady one: step 2, whose predecessor is of its class */
	const struct value *v = written_by(m, 0, 12);
	assert_non_null(v);
	assert_true(v->dead_in_step);
	assert_true(v->intermediate);
	assert_int_equal(v->nreaders, 1);
	assert_int_equal(v->readers[0], 1);
	assert_true(m->step_median_us == 7.0); /* 2 us, a 1 us gap, 4 us */
	model_free(m);
}

/* range_start/range_end ranges whose text repeats are steps too. */
static void test_range_start_end(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	long seq = 10;
	for (int s = 0; s < 3; s++) {
		add("{\"t\":\"range_start\",\"seq\":%ld,\"id\":%d,\"text\":\"iter %d\"}\n", seq++,
		    s + 1, s);
		K(100 + s, seq++, 2, 0, -1, -1, s * 10, 2);
		add("{\"t\":\"range_end\",\"seq\":%ld,\"id\":%d}\n", seq++, s + 1);
	}
	struct model *m = run();
	assert_non_null(m);
	assert_string_equal(m->steps_how, "nvtx");
	assert_string_equal(m->step_key, "iter #");
	assert_int_equal(m->nsteps, 3);
	model_free(m);
}

/* The signature: 'float const*' is read, 'float*' is read and written (not fresh here). */
static void test_roles_signature(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	alloc(2, 1, 4);
	K(10, 3, 2, 0, -1, -1, 0, 1); /* writes fresh 0 */
	K(11, 4, 2, 1, -1, -1, 2, 1); /* writes fresh 1 */
	K(12, 5, 3, 1, 0, -1, 4, 1);  /* sum_reduce(out = 1, in = 0) */
	struct model *m = run();
	assert_non_null(m);
	assert_non_null(written_by(m, 2, 1));
	assert_int_equal(written_by(m, 2, 1)->how, HOW_SEMANTICS);
	assert_null(written_by(m, 2, 0));
	assert_non_null(edge(m, 0, 2)); /* reads its input */
	assert_non_null(edge(m, 1, 2)); /* and the old value of its output (not fresh) */
	model_free(m);
}

/* A chain whose only intermediate is read later removes nothing: rejected, naming the reader. */
static void test_chain_rejected_when_nothing_removed(void **state)
{
	add(HDR STRS);
	alloc(1, 0, 400);
	alloc(2, 1, 400);
	alloc(3, 2, 400);
	alloc(4, 3, 400);
	K(10, 5, 2, 0, -1, -1, 0, 1); /* custom: writes fresh 0 */
	K(11, 6, 1, 1, 0, 0, 2, 1);   /* add: 1 = 0 + 0 */
	K(12, 7, 1, 2, 1, 1, 4, 1);   /* add: 2 = 1 + 1 */
	K(13, 8, 2, 1, 3, -1, 6, 1);  /* custom: reads 1 again, writes fresh 3 */
	struct model *m = run();
	assert_non_null(m);
	int fusion = 0; /* dead/invariant/memory findings are not fusion candidates */
	for (int i = 0; i < m->ncands; i++)
		fusion += strcmp(m->cands[i].kind, "dead") &&
		          strcmp(m->cands[i].kind, "invariant") &&
		          strcmp(m->cands[i].kind, "memory");
	assert_int_equal(fusion, 0);
	int found = 0;
	for (int i = 0; i < m->nrejs; i++)
		if (m->rejs[i].nodes[0] == 1 && m->rejs[i].nodes[1] == 2 &&
		    strstr(m->rejs[i].reason, "read later by node 3"))
			found = 1;
	assert_true(found);
	model_free(m);
}

static void test_bad_record(void **state)
{
	add(HDR STRS "{\"t\":\"launch\",\"seq\":1,\"fn\":1}\n");
	assert_null(run());
	add(HDR "{\"t\":\"str\",\"id\":-5,\"s\":\"x\"}\n");
	assert_null(run());
	add("{\"t\":\"launch\"}\n");
	assert_null(run());
}

/* strbuf_add_esc(): controls, DEL, C1 controls and '\\' escaped; cut at a character's end */
static void test_add_esc(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_esc(&sb, "a\x1b]0;t\x07\r\x7f\\ \xc2\x9b\xc3\xa9", 100);
	assert_string_equal(sb.buf, "a\\x1b]0;t\\x07\\x0d\\x7f\\x5c \\xc2\\x9b\xc3\xa9");
	strbuf_reset(&sb);
	/* the cut falls inside the 2-byte e-acute */
	strbuf_add_esc(&sb,
	               "ab\xc3\xa9"
	               "cd",
	               3);
	assert_string_equal(sb.buf, "ab\xc3\xa9...");
	strbuf_reset(&sb);
	strbuf_add_esc(&sb, "abc", 3);
	assert_string_equal(sb.buf, "abc");
	strbuf_release(&sb);
}

static void test_hmap(void **state)
{
	struct hmap m;
	hmap_init(&m);
	for (uint64_t k = 0; k < 5000; k++)
		hmap_put(&m, k * 7919, k);
	for (uint64_t k = 0; k < 5000; k += 2)
		assert_true(hmap_del(&m, k * 7919, NULL));
	assert_int_equal(hmap_size(&m), 2500);
	uint64_t v;
	for (uint64_t k = 0; k < 5000; k++)
		assert_int_equal(hmap_get(&m, k * 7919, &v), (int)(k & 1));
	assert_true(hmap_get(&m, 7919, &v));
	assert_int_equal(v, 1);
	hmap_put(&m, 7919, 42);
	assert_true(hmap_get(&m, 7919, &v));
	assert_int_equal(v, 42);
	size_t it = 0, n = 0;
	while (hmap_next(&m, &it, NULL, NULL))
		n++;
	assert_int_equal(n, 2500);
	hmap_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roles_semantics_and_fresh),
	    cmocka_unit_test(test_values_in_ranges),
	    cmocka_unit_test(test_norm_extents_in_a_segment),
	    cmocka_unit_test(test_read_tail_past_the_written_value),
	    cmocka_unit_test(test_roles_conservative),
	    cmocka_unit_test(test_roles_calibrated),
	    cmocka_unit_test(test_roles_signature),
	    cmocka_unit_test(test_reorder_by_seq),
	    cmocka_unit_test(test_orphans_and_graph_kernels),
	    cmocka_unit_test(test_steps_warmup_and_free),
	    cmocka_unit_test(test_range_start_end),
	    cmocka_unit_test(test_chain_rejected_when_nothing_removed),
	    cmocka_unit_test(test_bad_record),
	    cmocka_unit_test(test_hmap),
	    cmocka_unit_test(test_add_esc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
