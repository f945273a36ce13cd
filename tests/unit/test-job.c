/*
 * test-job.c - the job view's pure pieces (analyzer/job.c): NCCL kernel names as NCCL 2.19+
 * and older releases print them (demangled, and mangled as the shim may write them), NCCL's
 * bus-bandwidth factors and the bytes algBw counts, and the coverage of a collective's interval
 * by the union of compute kernels. The figures are NCCL's published formulas worked by hand.
 * test_map_merge runs the map (in this process and forked) and the reduce over four synthetic
 * ranks from tests/tools/mkjob.py under the sanitizers, and reads the straggler back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analyzer/job.h"
#include "report/report.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void name_is(const char *name, int nccl, const char *op, const char *dtype)
{
	char o[32], d[16];
	int r = job_nccl_name(name, o, sizeof(o), d, sizeof(d));
	if (r != nccl || strcmp(o, op) || strcmp(d, dtype))
		fail_msg("'%s': got %d '%s' '%s', want %d '%s' '%s'", name, r, o, d, nccl, op,
		         dtype);
}

static void test_names(void **state)
{
	(void)state;
	name_is("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1,
	        "AllReduce", "bf16");
	name_is("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE", 1,
	        "AllReduce", "f32");
	name_is("ncclDevKernel_ReduceScatter_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1,
	        "ReduceScatter", "f16");
	/* AllGather and Broadcast kernels carry no type */
	name_is("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1, "AllGather",
	        "");
	name_is("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1, "Broadcast",
	        "");
	name_is("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 1, "SendRecv", "");
	/* older: ncclKernel_<op>_<algo>_<proto>_<redop>_<type> */
	name_is("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ncclWorkElem)", 1,
	        "AllReduce", "f32");
	name_is("ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*, ncclWorkElem)", 1, "AllReduce",
	        "f16");
	/* the generic kernel of newer releases: a collective, operation unknown */
	name_is("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", 1, "Collective", "");
	name_is("void at::native::vectorized_elementwise_kernel<4>(int)", 0, "Collective", "");
	name_is(NULL, 0, "Collective", "");
	name_is("ncclDevKernel_", 1, "Collective", "");
}

static void test_busbw(void **state)
{
	(void)state;
	/* nccl-tests: AllReduce 2(n-1)/n, AllGather/ReduceScatter (n-1)/n, Broadcast/Reduce 1 */
	assert_true(job_busbw_factor("AllReduce", 8) == 2.0 * 7 / 8);
	assert_true(job_busbw_factor("AllReduce", 2) == 1.0);
	assert_true(job_busbw_factor("AllGather", 4) == 0.75);
	assert_true(job_busbw_factor("ReduceScatter", 64) == 63.0 / 64);
	assert_true(job_busbw_factor("Broadcast", 8) == 1.0);
	assert_true(job_busbw_factor("Reduce", 8) == 1.0);
	assert_true(job_busbw_factor("SendRecv", 8) == 1.0);
	assert_true(job_busbw_factor("AllReduce", 0) == 1.0);
	assert_true(job_busbw_factor(NULL, 8) == 1.0);
	/* AllGather's trace bytes are the per-rank input: algBw counts the gathered whole */
	assert_true(job_alg_bytes("AllGather", 1024, 8) == 8192);
	assert_true(job_alg_bytes("ReduceScatter", 1024, 4) == 4096);
	assert_true(job_alg_bytes("AllReduce", 1024, 8) == 1024);
}

static void test_covered(void **state)
{
	(void)state;
	const int64_t u[] = {0, 10, 20, 30, 40, 45};
	assert_int_equal(job_covered(0, 50, u, 3), 25);
	assert_int_equal(job_covered(5, 25, u, 3), 10);  /* 5..10 and 20..25 */
	assert_int_equal(job_covered(10, 20, u, 3), 0);  /* a gap: exposed */
	assert_int_equal(job_covered(42, 100, u, 3), 3); /* 42..45 */
	assert_int_equal(job_covered(50, 60, u, 3), 0);
	assert_int_equal(job_covered(30, 20, u, 3), 0); /* empty interval */
	assert_int_equal(job_covered(0, 50, u, 0), 0);
}

static void test_map_merge(void **state)
{
	(void)state;
	const char *top = getenv("AICPROF_TOP");
	if (!top)
		top = ".";
	char dir[] = "/tmp/aicprof-test-job-XXXXXX", cmd[4096], *paths[4], out[512];
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "python3 %s/tests/tools/mkjob.py -n 4 -s 5 --straggler 2 -o %s",
	         top, dir);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "# could not remove %s\n", dir);
		skip();
	}
	for (int i = 0; i < 4; i++) {
		paths[i] = malloc(600);
		snprintf(paths[i], 600, "%s/aicprof.rank%d.aicp.jsonl", dir, i);
	}
	/* the map of one rank in this process, then the whole job forked */
	snprintf(out, sizeof(out), "%s/map", dir);
	assert_int_equal(job_map(paths[1], out, 1, 1), 0);
	snprintf(out, sizeof(out), "%s/out", dir);
	assert_int_equal(job_run(paths, 4, out, 2), 0);
	snprintf(cmd, sizeof(cmd), "%s/out/summary.json", dir);
	FILE *f = fopen(cmd, "rb");
	assert_non_null(f);
	static char buf[1 << 22];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	cJSON *s = cJSON_Parse(buf);
	cJSON *slow = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(s, "job"), "slowest"), "rank");
	assert_true(cJSON_IsNumber(slow) && slow->valuedouble == 2);
	cJSON_Delete(s);
	for (int i = 0; i < 4; i++)
		free(paths[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void spit_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* One merge of two rank summaries (and the lowest's .summary.json): its return. */
static int merge_texts(const char *dir, const char *r0, const char *r1, const char *base)
{
	char p[600], *files[2];
	snprintf(p, sizeof(p), "%s/rank-0.json", dir);
	spit_file(p, r0);
	files[0] = strdup(p);
	snprintf(p, sizeof(p), "%s/rank-1.json", dir);
	spit_file(p, r1);
	files[1] = strdup(p);
	/* whichever sorts first needs its .summary.json: give both */
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/rank-%d.summary.json", dir, i);
		spit_file(p, base);
	}
	snprintf(p, sizeof(p), "%s/out", dir);
	int r = job_merge_files(files, 2, p);
	free(files[0]);
	free(files[1]);
	return r;
}

/* rank summaries with absurd values: what lib/summary.c's schema covers (its counts, the
 * lists' types, the required keys) is refused by name; the rest is merged and reported, never
 * a crash or undefined cast */
static void test_hostile_merge(void **state)
{
	(void)state;
	char dir[] = "/tmp/aicprof-test-jobh-XXXXXX", p[600];
	assert_non_null(mkdtemp(dir));
	static const char *rank0 =
	    "{\"format\":1,\"rank\":1e300,\"world_size\":-1e300,\"steps\":{},"
	    "\"trace\":{\"path\":7},\"kernels\":[{\"name\":1,\"count\":1e308}],"
	    "\"colls\":[{\"key\":\"a\",\"round\":1e300,\"pos\":-1e300,\"dur_us\":1e300,"
	    "\"overlap_us\":-1e300,\"bytes\":1e300,\"start_ns\":1e300,\"nranks\":1e300},"
	    "{\"key\":\"a\",\"round\":0,\"pos\":0,\"dur_us\":\"x\"}],"
	    "\"early\":[{\"pos\":1e300,\"node\":1e300}],"
	    "\"timeline\":{\"events\":[{\"stream\":1e300,\"start_us\":-1e300}]}}\n";
	static const char *rank1 =
	    "{\"format\":1,\"rank\":-7,\"steps\":{},\"colls\":[],\"kernels\":[]}\n";
	static const char *base = "{\"format\":1,\"candidates\":[],\"traces\":[{\"path\":7}]}\n";
	assert_int_equal(merge_texts(dir, rank0, rank1, base), 0);
	snprintf(p, sizeof(p), "%s/out", dir);
	assert_int_equal(report_write_all(p), 0);
	/* refused: a count out of range, a list of the wrong type, a base summary without format */
	assert_int_equal(
	    merge_texts(dir, "{\"format\":1,\"steps\":{},\"colls\":[],\"rounds\":-5}", rank1, base),
	    -1);
	assert_int_equal(merge_texts(dir, rank0, "{\"format\":1,\"steps\":{},\"colls\":{}}", base),
	                 -1);
	assert_int_equal(merge_texts(dir, rank0, rank1, "{\"candidates\":[{\"id\":1e300}]}"), -1);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),         cmocka_unit_test(test_busbw),
	    cmocka_unit_test(test_covered),       cmocka_unit_test(test_map_merge),
	    cmocka_unit_test(test_hostile_merge),
	};
	return cmocka_run_group_tests_name("job", tests, NULL, NULL);
}
