/*
 * test-ledger.c - the roofline's FLOPs for matrix products (ledger_compute): a synthetic step
 * graph of one GEMM node with known M, N, K (bf16 X[M,K] and W[K,N] read, Y[M,N] written, plus
 * a small bias read) on an H200 gets 2*M*N*K FLOPs "from operand extents" and the compute or
 * memory bound its roofline terms say; an impossibly fast one is capped at the bf16 peak times
 * its median time; a GEMM reading one value gets none; an elementwise kernel keeps numel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analyzer/model.h"

#include <math.h>
#include <string.h>

static struct node nodes[4];
static struct value values[8];
static int readers[8][1];

/* value i of bytes, written by node w (-1 before the step), read by node r (-1 none) */
static void val(int i, uint64_t bytes, int w, int r)
{
	struct value *v = &values[i];
	memset(v, 0, sizeof(*v));
	v->id = i;
	v->buffer = i + 1;
	v->size = bytes;
	v->writer = w;
	if (w >= 0)
		v->bytes_written = bytes;
	if (r >= 0) {
		readers[i][0] = r;
		v->readers = readers[i];
		v->nreaders = 1;
		v->bytes_read = bytes;
	}
}

static void node(int i, enum op_family fam, enum dtype dt, double us)
{
	struct node *n = &nodes[i];
	memset(n, 0, sizeof(*n));
	n->id = i;
	n->kind = NK_KERNEL;
	n->name = "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT";
	n->sem.family = fam;
	n->sem.dtype = dt;
	n->numel = -1;
	n->median_us = us;
	n->claimed = -1;
}

/* one GEMM (node 0) of M x K times K x N in bf16, bias of N, taking us */
static void gemm_model(struct model *m, long M, long N, long K, double us)
{
	memset(m, 0, sizeof(*m));
	node(0, FAM_GEMM, DT_BF16, us);
	val(0, (uint64_t)(M * K * 2), -1, 0); /* X */
	val(1, (uint64_t)(K * N * 2), -1, 0); /* W */
	val(2, (uint64_t)(N * 2), -1, 0);     /* bias: smaller, never an operand */
	val(3, (uint64_t)(M * N * 2), 0, -1); /* Y */
	nodes[0].bytes_read = (uint64_t)((M * K + K * N + N) * 2);
	nodes[0].bytes_written = (uint64_t)(M * N * 2);
	m->nodes = nodes;
	m->nnodes = 1;
	m->values = values;
	m->nvalues = 4;
	m->dev.name = "NVIDIA H200";
	strcpy(m->dev.cc, "9.0");
	m->dev.peak_bw_gbs = 4800;
	device_peaks(&m->dev);
}

static void test_gemm_flops_exact(void **state)
{
	struct model m;
	long M = 4096, N = 3072, K = 768;
	gemm_model(&m, M, N, K, 100.0);
	ledger_compute(&m);
	double want = 2.0 * M * N * K;
	assert_true(fabs(nodes[0].flops - want) < 1e-6 * want);
	assert_non_null(nodes[0].flops_how);
	assert_string_equal(nodes[0].flops_how, "operand extents");
	/* 19.3 GFLOP at 989 TFLOP/s = 19.5 us against 31.5 MB at 4.8 TB/s = 6.6 us */
	assert_string_equal(nodes[0].bound, "compute");
	assert_true(nodes[0].roofline_us > 19 && nodes[0].roofline_us < 20);
	assert_true(nodes[0].intensity > 100);
}

static void test_gemm_skinny_is_memory_bound(void **state)
{
	struct model m;
	/* a matrix-vector-like product: M = 16 rows against a 8192 x 8192 weight */
	gemm_model(&m, 16, 8192, 8192, 40.0);
	ledger_compute(&m);
	double want = 2.0 * 16 * 8192 * 8192;
	assert_true(fabs(nodes[0].flops - want) < 1e-6 * want);
	assert_string_equal(nodes[0].bound, "memory");
}

static void test_gemm_flops_capped(void **state)
{
	struct model m;
	gemm_model(&m, 8192, 8192, 8192, 1.0); /* 1.1 TFLOP in 1 us: impossible */
	ledger_compute(&m);
	double cap = m.dev.tflops_bf16 * 1e6 * 1.0;
	assert_true(m.dev.tflops_bf16 > 0);
	assert_true(nodes[0].flops <= cap * (1 + 1e-9));
	assert_true(nodes[0].flops >= cap * (1 - 1e-9));
}

static void test_gemm_one_operand_unknown(void **state)
{
	struct model m;
	gemm_model(&m, 256, 256, 256, 5.0);
	values[1].readers = NULL, values[1].nreaders = 0; /* W no longer read: one operand left */
	values[2].readers = NULL, values[2].nreaders = 0;
	ledger_compute(&m);
	assert_true(nodes[0].flops == 0);
	assert_null(nodes[0].flops_how);
}

static void test_elementwise_numel(void **state)
{
	struct model m;
	gemm_model(&m, 256, 256, 256, 5.0);
	node(0, FAM_ELEMENTWISE, DT_F32, 5.0);
	nodes[0].numel = 1000;
	ledger_compute(&m);
	assert_true(nodes[0].flops == 1000);
	assert_string_equal(nodes[0].flops_how, "numel");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gemm_flops_exact),
	    cmocka_unit_test(test_gemm_skinny_is_memory_bound),
	    cmocka_unit_test(test_gemm_flops_capped),
	    cmocka_unit_test(test_gemm_one_operand_unknown),
	    cmocka_unit_test(test_elementwise_numel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
