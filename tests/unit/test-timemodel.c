/*
 * test-timemodel.c - the step's time model (analyzer/timemodel.c) on synthetic timelines:
 * busy time is the union over streams (overlap counted once); a GPU-bound chain of kernels is
 * all on the critical path and a finding's saving is capped by its kernels' share of it; in a
 * launch-bound step (kernels separated by gaps the host was late to fill) a kernel before a
 * launch gap saves nothing of the step; a blocking device-to-host copy saves the GPU idle it
 * causes, at most its stall, and never counts as GPU time; an unproven finding ranks after the
 * proven ones and stays out of the headline, which never exceeds the step; a summary's
 * candidates are ranked, numbered and their groups renamed by timemodel_renumber().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analyzer/model.h"
#include "analyzer/timemodel.h"

#include <cJSON.h>
#include <math.h>
#include <string.h>

#define NN 6

static struct node nodes[NN];
static struct tl_event tl[NN];
static struct candidate cands[4];
static struct pattern pats[4];
static int cand_nodes[4][NN], pat_cands[4][1];
static double steps_us[1];

/* a model of n nodes with node i running [start[i], start[i] + dur[i]) on stream[i] */
static void timeline(struct model *m, int n, const double *start, const double *dur,
                     const int *stream, double step)
{
	memset(m, 0, sizeof(*m));
	memset(nodes, 0, sizeof(nodes));
	for (int i = 0; i < n; i++) {
		nodes[i].id = i;
		nodes[i].kind = NK_KERNEL;
		nodes[i].median_us = dur[i];
		tl[i] = (struct tl_event){.node = i,
		                          .stream = stream ? stream[i] : 7,
		                          .start_us = start[i],
		                          .dur_us = dur[i]};
	}
	m->nodes = nodes;
	m->nnodes = n;
	m->tl = tl;
	m->ntl = n;
	steps_us[0] = step;
	m->step_us = steps_us;
	m->nsteps = 1;
	m->tl_step = 0;
	m->step_median_us = step;
}

/* finding k: a candidate of kind over nodes, saving saved us of kernel time, one pattern */
static struct candidate *finding(struct model *m, int k, const char *kind, const int *ns, int nn,
                                 double saved)
{
	struct candidate *c = &cands[k];
	memset(c, 0, sizeof(*c));
	c->id = k;
	c->kind = kind;
	memcpy(cand_nodes[k], ns, sizeof(int) * (size_t)nn);
	c->nodes = cand_nodes[k];
	c->nnodes = nn;
	c->saved_us = c->before_us = saved;
	c->bytes_saved = 1000;
	m->cands = cands;
	m->ncands = k + 1;
	pat_cands[k][0] = k;
	pats[k] = (struct pattern){
	    .cands = pat_cands[k], .ncands = 1, .saved_us = saved, .bytes_saved = c->bytes_saved};
	m->pats = pats;
	m->npats = k + 1;
	return c;
}

static void done(struct model *m)
{
	for (int k = 0; k < m->ncands; k++)
		cJSON_Delete(cands[k].evidence);
	timemodel_free(m->tm);
}

static int close_to(double a, double b)
{
	return fabs(a - b) < 1e-6;
}

static void test_union_over_streams(void **state)
{
	struct model m;
	/* two streams: 0-10 and 5-15 overlap by 5; then 16-20 */
	double s[] = {0, 5, 16}, d[] = {10, 10, 4};
	int st[] = {7, 8, 7};
	timeline(&m, 3, s, d, st, 20);
	int n0[] = {0};
	finding(&m, 0, "elementwise-chain", n0, 1, 10);
	timemodel_compute(&m);
	assert_non_null(m.tm);
	assert_true(close_to(m.tm->kernel_sum_us, 24));
	assert_true(close_to(m.tm->busy_us, 19));
	assert_true(close_to(m.tm->overlap_us, 5));
	assert_true(close_to(m.tm->idle_us, 1));
	/* node 0 has 5 us alone and 5 us shared with node 1: its share is 7.5 */
	assert_true(close_to(m.tm->on_path[0], 7.5));
	assert_true(close_to(m.tm->step_saved[0], 7.5));
	assert_true(close_to(m.tm->kernel_saved[0], 10));
	assert_true(m.tm->promised_us <= m.tm->busy_us + 1e-9);
	done(&m);
}

static void test_gpu_bound_chain(void **state)
{
	struct model m;
	double s[] = {0, 11, 22, 33}, d[] = {10, 10, 10, 10};
	timeline(&m, 4, s, d, NULL, 43);
	int n01[] = {0, 1}, n23[] = {2, 3};
	finding(&m, 0, "elementwise-chain", n01, 2, 15);
	finding(&m, 1, "elementwise-chain", n23, 2, 30); /* more than its kernels' time */
	timemodel_compute(&m);
	assert_true(close_to(m.tm->on_path_us, 40));
	assert_true(close_to(m.tm->launch_gap_us, 0));
	/* ranked by step time: the capped 20 us first, then 15 */
	assert_int_equal(m.pats[0].cands[0], 1);
	assert_true(close_to(m.tm->step_saved[0], 20));
	assert_true(close_to(m.tm->step_saved[1], 15));
	assert_true(close_to(m.tm->promised_us, 35));
	assert_true(m.tm->promised_us <= m.step_median_us);
	done(&m);
}

static void test_launch_bound(void **state)
{
	struct model m;
	/* short kernels with 20 us gaps the host was late to fill */
	double s[] = {0, 22, 44}, d[] = {2, 2, 2};
	timeline(&m, 3, s, d, NULL, 46);
	int n0[] = {0}, n2[] = {2};
	finding(&m, 0, "dead", n0, 1, 2);
	cands[0].evidence = cJSON_Parse("{\"verdict\": \"dead\"}");
	finding(&m, 1, "dead", n2, 1, 2);
	cands[1].evidence = cJSON_Parse("{\"verdict\": \"dead\"}");
	timemodel_compute(&m);
	assert_int_equal(m.tm->ngaps, 2);
	assert_true(close_to(m.tm->gap_median_us, 20));
	assert_true(close_to(m.tm->launch_gap_us, 40));
	assert_true(close_to(m.tm->host_blocked_us, 0));
	/* only the last kernel ends the step: the first saves nothing of it */
	assert_int_equal(m.pats[0].cands[0], 1);
	assert_true(close_to(m.tm->step_saved[0], 2));
	assert_true(close_to(m.tm->step_saved[1], 0));
	assert_true(close_to(m.tm->kernel_saved[1], 2));
	done(&m);
}

static void test_host_copy(void **state)
{
	struct model m;
	/* kernel 0-50, a DtoH copy 51-52 the host waited 52 us for, then the next launch at 70 */
	double s[] = {0, 51, 70}, d[] = {50, 1, 5};
	timeline(&m, 3, s, d, NULL, 75);
	int n1[] = {1}, n0[] = {0};
	struct candidate *h = finding(&m, 0, "invariant", n1, 1, 52);
	h->evidence = cJSON_Parse("{\"what\": \"host-copy\", \"stall_us\": 52}");
	struct candidate *u = finding(&m, 1, "invariant", n0, 1, 50);
	u->evidence = cJSON_Parse("{\"confirmed\": false}");
	timemodel_compute(&m);
	/* the proven host finding first, though the unproven one saves more */
	assert_int_equal(m.pats[0].cands[0], 0);
	assert_true(m.tm->host[0]);
	assert_false(m.tm->host[1]);
	assert_true(m.tm->proven[0]);
	assert_false(m.tm->proven[1]);
	/* the GPU idles 18 us after the copy: that, not the 52 us stall, is the saving */
	assert_true(close_to(m.tm->host_blocked_us, 18));
	assert_true(close_to(m.tm->step_saved[0], 18));
	assert_true(close_to(m.tm->kernel_saved[0], 52));
	/* the kernel the host waited on is on the critical path */
	assert_true(close_to(m.tm->on_path[0], 50));
	assert_true(m.tm->counted[0]);
	assert_false(m.tm->counted[1]);
	assert_true(close_to(m.tm->promised_us, 18));
	assert_true(close_to(m.tm->promised_gpu_us, 0));
	done(&m);
}

static void test_renumber(void **state)
{
	cJSON *root = cJSON_Parse(
	    "{\"candidates\": ["
	    "{\"id\": 4, \"kind\": \"dead\", \"proven\": false, \"time_saved_us_per_step\": 90},"
	    "{\"id\": 7, \"kind\": \"elementwise-chain\", \"time_saved_us_per_step\": 5,"
	    " \"group\": {\"name\": \"c7_gelu_dropout\"}},"
	    "{\"id\": 9, \"kind\": \"comm-overlap\", \"time_saved_us_per_step\": 50}]}");
	assert_non_null(root);
	timemodel_renumber(root);
	cJSON *c = cJSON_GetObjectItem(root, "candidates");
	int want_id[] = {9, 7, 4};
	for (int i = 0; i < 3; i++) {
		cJSON *x = cJSON_GetArrayItem(c, i);
		assert_int_equal(cJSON_GetObjectItem(x, "id")->valueint, want_id[i]);
		assert_int_equal(cJSON_GetObjectItem(x, "number")->valueint, i + 1);
	}
	cJSON *g = cJSON_GetObjectItem(cJSON_GetArrayItem(c, 1), "group");
	assert_string_equal(cJSON_GetObjectItem(g, "name")->valuestring, "c2_gelu_dropout");
	cJSON_Delete(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_union_over_streams), cmocka_unit_test(test_gpu_bound_chain),
	    cmocka_unit_test(test_launch_bound),       cmocka_unit_test(test_host_copy),
	    cmocka_unit_test(test_renumber),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
