/*
 * test-steps.c - the NVTX-step rule of analyzer/steps.h: keys (digit runs folded, blank texts
 * none, control characters), the choice of the step key (lowest depth before most closed, final
 * at depth 0 or at 3 ranges, the best so far at the end), nvtx_step_accept(); and the two views
 * that use it agreeing on one trace: a single-trace analysis (analysis_run) and the job view's
 * map (job_map) of a trace whose "step N" ranges (depth 0) hold one "layer N" range (depth 1)
 * in the first two steps and three in the others, then an empty "step 5": the single-trace
 * view's steps are the five steps (the step key is final at the second step, at depth 0), where
 * the job view used to take the layers (closed most) as its steps and count the empty one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analyzer/job.h"
#include "analyzer/model.h"
#include "analyzer/steps.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_keys(void **state)
{
	(void)state;
	struct nvtx_rule r;
	nvtx_rule_init(&r);
	int a = nvtx_rule_key(&r, "step 3");
	assert_true(a >= 0);
	assert_int_equal(nvtx_rule_key(&r, "step 14"), a);
	assert_string_equal(nvtx_rule_text(&r, a), "step #");
	int b = nvtx_rule_key(&r, "fwd 1.25 x\001");
	assert_true(b >= 0 && b != a);
	assert_string_equal(nvtx_rule_text(&r, b), "fwd #.# x?");
	assert_int_equal(nvtx_rule_key(&r, ""), -1);
	assert_int_equal(nvtx_rule_key(&r, "   "), -1);
	assert_int_equal(nvtx_rule_key(&r, NULL), -1);
	assert_null(nvtx_rule_text(&r, -1));
	assert_null(nvtx_rule_text(&r, 7));
	/* a tab is a control character: '?', a key */
	assert_true(nvtx_rule_key(&r, "\t") >= 0);
	nvtx_rule_release(&r);
	assert_int_equal(r.nkeys, 0);
	/* keys beyond NVTX_MAX_KEYS: none */
	nvtx_rule_init(&r);
	char t[32];
	for (int i = 0; i < NVTX_MAX_KEYS; i++) {
		snprintf(t, sizeof(t), "k%c%c%c", 'a' + i % 26, 'a' + i / 26 % 26, 'a' + i / 676);
		assert_int_equal(nvtx_rule_key(&r, t), i);
	}
	assert_int_equal(nvtx_rule_key(&r, "one more"), -1);
	assert_int_equal(nvtx_rule_key(&r, "kaaa"), 0);
	nvtx_rule_release(&r);
}

static void test_choice(void **state)
{
	(void)state;
	struct nvtx_rule r;
	nvtx_rule_init(&r);
	int step = nvtx_rule_key(&r, "step 0"), layer = nvtx_rule_key(&r, "layer 0");
	/* layers (depth 1) close before their step; not final at 2, final at 3 unless a step
	 * at depth 0 repeats first */
	assert_int_equal(nvtx_rule_closed(&r, layer, 1), -1);
	assert_int_equal(nvtx_rule_closed(&r, layer, 1), -1);
	assert_int_equal(nvtx_rule_best(&r), layer);
	assert_int_equal(nvtx_rule_closed(&r, step, 0), -1);
	assert_int_equal(nvtx_rule_best(&r), layer); /* step seen once: not repeated */
	assert_int_equal(nvtx_rule_closed(&r, -1, 0), -1);
	assert_int_equal(nvtx_rule_closed(&r, step, 0), step);  /* depth 0, twice: final */
	assert_int_equal(nvtx_rule_closed(&r, layer, 1), step); /* no longer tallied */
	assert_int_equal(r.count[layer], 2);
	assert_int_equal(nvtx_rule_best(&r), step);
	nvtx_rule_release(&r);
	/* only deeper ranges: final at the third; more closed wins at equal depth */
	nvtx_rule_init(&r);
	int x = nvtx_rule_key(&r, "x"), y = nvtx_rule_key(&r, "y");
	assert_int_equal(nvtx_rule_closed(&r, y, 2), -1);
	assert_int_equal(nvtx_rule_closed(&r, x, 2), -1);
	assert_int_equal(nvtx_rule_closed(&r, x, 2), -1);
	assert_int_equal(nvtx_rule_best(&r), x);
	assert_int_equal(nvtx_rule_closed(&r, y, 1), -1);
	assert_int_equal(nvtx_rule_best(&r), y); /* lower depth beats more closed */
	/* x's third range: the best is y, at depth 1 and closed twice, not yet final */
	assert_int_equal(nvtx_rule_closed(&r, x, 2), -1);
	assert_int_equal(nvtx_rule_best(&r), y);
	assert_int_equal(nvtx_rule_closed(&r, y, 3), y); /* y's third: final */
	nvtx_rule_release(&r);
	/* nvtx_step_accept: non-empty, not before the last end */
	long last = 0;
	assert_int_equal(nvtx_step_accept(&last, 0, 0), 0);
	assert_int_equal(nvtx_step_accept(&last, 0, 5), 1);
	assert_int_equal(last, 5);
	assert_int_equal(nvtx_step_accept(&last, 3, 9), 0); /* overlaps */
	assert_int_equal(nvtx_step_accept(&last, 1, 2), 0); /* nested in the last */
	assert_int_equal(nvtx_step_accept(&last, 5, 7), 1);
	assert_int_equal(last, 7);
}

#define T0 1764430000000000000L
static FILE *tf;
static long seq, corr;

static void launch_kernel(int fn, long *us, long dur)
{
	long c = ++corr, s = ++seq;
	fprintf(tf,
	        "{\"t\":\"launch\",\"seq\":%ld,\"ts\":%ld,\"tid\":1,\"c\":%ld,\"fn\":%d,"
	        "\"stream\":\"0x1\",\"args\":[]}\n",
	        s, T0 + *us * 1000, c, fn);
	fprintf(tf,
	        "{\"t\":\"kernel\",\"c\":%ld,\"name\":%d,\"stream\":7,\"dev\":0,\"start\":%ld,"
	        "\"end\":%ld}\n",
	        c, fn, T0 + *us * 1000, T0 + (*us + dur) * 1000);
	*us += dur + 5;
}

static void nvtx(int push, const char *text, long us)
{
	fprintf(tf, "{\"t\":\"%s\",\"seq\":%ld,\"ts\":%ld,\"tid\":1%s%s%s}\n",
	        push ? "push" : "pop", ++seq, T0 + us * 1000, text ? ",\"text\":\"" : "",
	        text ? text : "", text ? "\"" : "");
}

static cJSON *load(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	cJSON *j = cJSON_Parse(buf);
	assert_non_null(j);
	return j;
}

static void test_views_agree(void **state)
{
	(void)state;
	char dir[] = "/tmp/aicprof-test-steps-XXXXXX", path[512], out[512], cmd[1200];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/aicprof.rank0.aicp.jsonl", dir);
	tf = fopen(path, "w");
	assert_non_null(tf);
	seq = corr = 0;
	fprintf(tf, "{\"t\":\"header\",\"format\":1,\"pid\":1,\"rank\":0,\"world_size\":1,"
	            "\"argv\":[\"./a.out\"],\"devices\":[{\"id\":0,\"name\":\"NVIDIA H200\","
	            "\"cc\":\"9.0\",\"peak_bw_gbs\":4000}]}\n"
	            "{\"t\":\"str\",\"id\":1,\"s\":\"layer_kernel\"}\n"
	            "{\"t\":\"str\",\"id\":2,\"s\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL("
	            "ncclDevKernelArgsStorage<4096ul>)\"}\n");
	long us = 0;
	char t[32];
	for (int s = 0; s < 5; s++) {
		snprintf(t, sizeof(t), "step %d", s);
		nvtx(1, t, us);
		for (int l = 0; l < (s < 2 ? 1 : 3); l++) {
			snprintf(t, sizeof(t), "layer %d", l);
			nvtx(1, t, us);
			launch_kernel(1, &us, 40);
			nvtx(0, NULL, us);
		}
		nvtx(1, NULL, us); /* NCCL's blank range around its call: never a step */
		launch_kernel(2, &us, 100);
		nvtx(0, NULL, us);
		nvtx(0, NULL, us);
		us += 1000;
	}
	nvtx(1, "step 5", us); /* holds no op: never a step */
	nvtx(0, NULL, us + 10);
	assert_int_equal(fclose(tf), 0);

	char *paths[1] = {path};
	struct model *m = analysis_run(paths, 1);
	assert_non_null(m);
	assert_string_equal(m->steps_how, "nvtx");
	assert_non_null(m->step_key);
	assert_string_equal(m->step_key, "step #");
	assert_int_equal(m->nsteps, 5);

	snprintf(out, sizeof(out), "%s/map", dir);
	assert_int_equal(job_map(path, out, 0, 0), 0);
	snprintf(cmd, sizeof(cmd), "%s/rank-0.json", out);
	cJSON *j = load(cmd);
	const cJSON *from = cJSON_GetObjectItem(j, "steps_from");
	const cJSON *st = cJSON_GetObjectItem(j, "steps");
	assert_true(cJSON_IsString(from));
	assert_string_equal(from->valuestring, "nvtx");
	const cJSON *text = cJSON_GetObjectItem(st, "text"),
	            *count = cJSON_GetObjectItem(st, "count");
	assert_true(cJSON_IsString(text) && cJSON_IsNumber(count));
	assert_string_equal(text->valuestring, m->step_key);
	assert_int_equal((int)count->valuedouble, m->nsteps);
	cJSON_Delete(j);
	model_free(m);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_choice),
	    cmocka_unit_test(test_views_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
