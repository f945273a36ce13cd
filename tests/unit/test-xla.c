/*
 * test-xla.c - preload/xla.c: reading HLO instruction lines, setting XLA_FLAGS, and turning a
 * dump directory into "xla" records of the trace (then removing it).
 */
#include "preload/base.h"
#include "preload/writer.h"
#include "preload/xla.h"

#include <cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char tpath[256];

static int frame_id;
static int parse(const char *s, char *name, char *op, char *file, int *line, int *kernel)
{
	return xla_hlo_line(s, name, 128, op, 256, file, 256, line, kernel, &frame_id);
}

static void test_instruction_lines(void **state)
{
	(void)state;
	char name[128], op[256], file[256];
	int line = 0, k = -1;
	assert_int_equal(
	    parse("  %loop_subtract_fusion.1 = f32[256,512]{1,0} fusion(f32[256,512]{1,0} "
	          "%p.1, f32[512]{0} %p.2), kind=kLoop, calls=%fused_subtract, "
	          "metadata={op_name=\"jit(step)/jit(main)/sub\" "
	          "source_file=\"/w/samples/jax_train.py\" source_line=24}",
	          name, op, file, &line, &k),
	    1);
	assert_string_equal(name, "loop_subtract_fusion_1"); /* as XLA names the kernel */
	assert_string_equal(op, "jit(step)/jit(main)/sub");
	assert_string_equal(file, "/w/samples/jax_train.py");
	assert_int_equal(line, 24);
	assert_int_equal(k, 1);
	/* ROOT, no %, a tuple shape with parentheses, an escaped quote in op_name */
	assert_int_equal(
	    parse("  ROOT input_reduce_fusion = (f32[8]{0}, f32[8]{0}) fusion(f32[8,4]{1,0} "
	          "p), kind=kInput, metadata={op_name=\"jit(f)/reduce_sum\\\"x\" "
	          "source_file=\"t.py\" source_line=7}",
	          name, op, file, &line, &k),
	    1);
	assert_string_equal(name, "input_reduce_fusion");
	assert_string_equal(op, "jit(f)/reduce_sum\"x");
	assert_int_equal(k, 1);
	assert_int_equal(line, 7);
	/* a custom call launches (a cuBLAS GEMM); a plain op does not by itself */
	assert_int_equal(
	    parse("  %cublas-gemm.3 = (f32[4,4]{1,0}, s8[0]{0}) custom-call(f32[4,4]{1,0} "
	          "%a, f32[4,4]{1,0} %b), custom_call_target=\"__cublas$gemm\", "
	          "metadata={op_name=\"jit(f)/dot_general\" source_file=\"t.py\" "
	          "source_line=9}",
	          name, op, file, &line, &k),
	    1);
	assert_string_equal(name, "cublas_gemm_3");
	assert_int_equal(k, 1);
	assert_int_equal(
	    parse("  %add.2 = f32[4]{0} add(f32[4]{0} %a, f32[4]{0} %b), "
	          "metadata={op_name=\"jit(f)/add\" source_file=\"t.py\" source_line=3}",
	          name, op, file, &line, &k),
	    1);
	assert_int_equal(k, 0);
	/* newer XLA: a stack frame id instead of the source, resolved from the module's tables */
	assert_int_equal(parse("  %loop_add_fusion = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop, "
	                       "metadata={op_name=\"jit(f)/add\" stack_frame_id=12}",
	                       name, op, file, &line, &k),
	                 1);
	assert_int_equal(frame_id, 12);
	assert_string_equal(file, "");
	assert_int_equal(line, 0);
	/* no metadata, metadata without a source, not an instruction */
	assert_int_equal(parse("  %p.1 = f32[4]{0} parameter(0)", name, op, file, &line, &k), 0);
	assert_int_equal(
	    parse("  %c = f32[] constant(1), metadata={op_name=\"x\"}", name, op, file, &line, &k),
	    0);
	assert_int_equal(
	    parse("ENTRY %main.12 (p.1: f32[4]) -> f32[4] {", name, op, file, &line, &k), 0);
	assert_int_equal(parse("", name, op, file, &line, &k), 0);
	assert_int_equal(parse("   = ", name, op, file, &line, &k), 0);
}

static void test_flags(void **state)
{
	(void)state;
	char mark[64] = "", note[1024];
	shim_cfg.xla_lines = 1;
	unsetenv("XLA_FLAGS");
	xla_lines_setup("/tmp/t.aicp.jsonl", 0, mark, sizeof(mark), note, sizeof(note));
	assert_string_equal(getenv("XLA_FLAGS"),
	                    "--xla_dump_to=/tmp/t.aicp.jsonl.xla --xla_dump_hlo_as_text");
	assert_string_equal(mark, "xla_lines");
	assert_non_null(strstr(note, "set by aicprof"));
	/* the user's own flags stay, ours follow */
	setenv("XLA_FLAGS", "--xla_gpu_enable_command_buffer=", 1);
	mark[0] = 0;
	xla_lines_setup("/tmp/t.aicp.jsonl", 0, mark, sizeof(mark), note, sizeof(note));
	assert_string_equal(getenv("XLA_FLAGS"), "--xla_gpu_enable_command_buffer= "
	                                         "--xla_dump_to=/tmp/t.aicp.jsonl.xla "
	                                         "--xla_dump_hlo_as_text");
	/* a parent's dump flag (inherited) is replaced by this process's */
	setenv("XLA_FLAGS", "--a=1 --xla_dump_to=/tmp/parent.xla --xla_dump_hlo_as_text", 1);
	mark[0] = 0;
	xla_lines_setup("/tmp/child.aicp.jsonl", 1, mark, sizeof(mark), note, sizeof(note));
	assert_string_equal(getenv("XLA_FLAGS"),
	                    "--a=1 --xla_dump_to=/tmp/child.aicp.jsonl.xla --xla_dump_hlo_as_text");
	/* the user's dump: left alone, never read */
	setenv("XLA_FLAGS", "--xla_dump_to=/mine", 1);
	mark[0] = 0;
	xla_lines_setup("/tmp/t.aicp.jsonl", 0, mark, sizeof(mark), note, sizeof(note));
	assert_string_equal(getenv("XLA_FLAGS"), "--xla_dump_to=/mine");
	assert_string_equal(mark, "");
	assert_non_null(strstr(note, "user"));
	xla_lines_emit(1); /* nothing set up: nothing done */
	/* off */
	unsetenv("XLA_FLAGS");
	shim_cfg.xla_lines = 0;
	xla_lines_setup("/tmp/t.aicp.jsonl", 0, mark, sizeof(mark), note, sizeof(note));
	assert_null(getenv("XLA_FLAGS"));
	assert_non_null(strstr(note, "AICPROF_XLA_LINES=0"));
	shim_cfg.xla_lines = 1;
	/* a path too long for the buffer: off, with the reason */
	char big[1200];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	xla_lines_setup(big, 0, mark, sizeof(mark), note, sizeof(note));
	assert_null(getenv("XLA_FLAGS"));
	assert_non_null(strstr(note, "too long"));
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_emit(void **state)
{
	(void)state;
	char note[1024], mark[64] = "", dir[300], p1[400], p2[400];
	unsetenv("XLA_FLAGS");
	xla_lines_setup(tpath, 0, mark, sizeof(mark), note, sizeof(note));
	snprintf(dir, sizeof(dir), "%s.xla", tpath);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(p1, sizeof(p1), "%s/module_0001.jit_step.sm_9.0_gpu_after_optimizations.txt", dir);
	snprintf(p2, sizeof(p2), "%s/module_0001.jit_step.before_optimizations.txt", dir);
	char cwd[256], text[2048];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(text, sizeof(text),
	         "HloModule jit_step\n"
	         "%%fused_tanh (p: f32[4]) -> f32[4] {\n"
	         "  %%t = f32[4]{0} tanh(f32[4]{0} %%p), metadata={op_name=\"inner\" "
	         "source_file=\"x.py\" source_line=1}\n"
	         "}\n"
	         "ENTRY %%main (a: f32[4]) -> f32[4] {\n"
	         "  %%loop_tanh_fusion = f32[4]{0} fusion(f32[4]{0} %%a), kind=kLoop, "
	         "metadata={op_name=\"jit(step)/tanh\" source_file=\"%s/samples/j.py\" "
	         "source_line=20}\n"
	         "  ROOT %%copy.1 = f32[4]{0} copy(f32[4]{0} %%loop_tanh_fusion), "
	         "metadata={op_name=\"jit(step)/copy\" source_file=\"/abs/j.py\" source_line=21}\n"
	         "}\n",
	         cwd);
	put(p1, text);
	put(p2, "HloModule jit_step\n  %x = f32[] add(a, b), metadata={op_name=\"no\" "
	        "source_file=\"no.py\" source_line=99}\n");
	/* a module in a subdirectory, and a link out of the tree (removed, never followed) */
	char sub[400], p3[500], keep[300], lnk[400];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(p3, sizeof(p3), "%s/module_0002.jit_g.sm_9.0_gpu_after_optimizations.txt", sub);
	/* in newer XLA's form: stack_frame_id and the module's tables (an unknown id: no record) */
	put(p3, "HloModule jit_g\n\nFileNames\n1 \"g.py\"\n2 \"other.py\"\n\nFunctionNames\n"
	        "1 \"<module>\"\n2 \"loss_fn\"\n\nFileLocations\n"
	        "1 {file_name_id=2 function_name_id=1 line=80 end_line=80 column=1 end_column=9}\n"
	        "2 {file_name_id=1 function_name_id=2 line=5 end_line=5 column=4 end_column=20}\n"
	        "\nStackFrames\n1 {file_location_id=1 parent_frame_id=1}\n"
	        "2 {file_location_id=2 parent_frame_id=1}\n\n"
	        /* a fusion XLA merged: no source of its own, its callee's instructions have one */
	        "%fused_mul (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n"
	        "  ROOT %m = f32[4]{0} multiply(%p, %p), metadata={op_name=\"jit(g)/mul\" "
	        "stack_frame_id=2}\n}\n\n"
	        "ENTRY %main {\n  %input_reduce_fusion = f32[] fusion(f32[4]{0} %a), "
	        "kind=kInput, metadata={op_name=\"jit(g)/reduce_sum\" stack_frame_id=2}\n"
	        "  %loop_x_fusion = f32[] fusion(f32[4]{0} %a), kind=kLoop, "
	        "metadata={op_name=\"jit(g)/x\" stack_frame_id=9}\n"
	        "  %fusion_34 = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop, calls=%fused_mul, "
	        "metadata={scheduling_name=\"fusion_34\"}\n"
	        "  %fusion_35 = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop, calls=%fused_mul\n"
	        "  %fusion_36 = f32[4]{0} fusion(f32[4]{0} %a), kind=kLoop, calls=%nowhere\n}\n");
	snprintf(keep, sizeof(keep), "%s.keep", tpath);
	put(keep, "the user's\n");
	snprintf(lnk, sizeof(lnk), "%s/link", dir);
	assert_int_equal(symlink(keep, lnk), 0);
	xla_lines_emit(1);
	writer_drain();
	struct stat st;
	assert_int_not_equal(stat(dir, &st), 0); /* removed, files and all */
	FILE *f = fopen(tpath, "r");
	assert_non_null(f);
	char line[4096];
	int n = 0, fusion = 0, copy = 0, sub_rec = 0, noted = 0, merged = 0;
	while (fgets(line, sizeof(line), f)) {
		cJSON *j = cJSON_Parse(line);
		const cJSON *t = cJSON_GetObjectItem(j, "t");
		if (cJSON_IsString(t) && !strcmp(t->valuestring, "xla")) {
			n++;
			const char *nm = cJSON_GetObjectItem(j, "name")->valuestring;
			const char *file = cJSON_GetObjectItem(j, "file")->valuestring;
			if (!strcmp(nm, "loop_tanh_fusion")) {
				fusion = 1;
				assert_string_equal(file, "samples/j.py"); /* relative to the cwd */
				assert_int_equal(cJSON_GetObjectItem(j, "line")->valueint, 20);
				assert_int_equal(cJSON_GetObjectItem(j, "k")->valueint, 1);
			}
			if (!strcmp(nm, "input_reduce_fusion"))
				sub_rec =
				    !strcmp(cJSON_GetObjectItem(j, "mod")->valuestring, "jit_g") &&
				    !strcmp(file, "g.py") &&
				    cJSON_GetObjectItem(j, "line")->valueint == 5 &&
				    !strcmp(cJSON_GetObjectItem(j, "func")->valuestring, "loss_fn");
			if (!strcmp(nm, "fusion_34") || !strcmp(nm, "fusion_35"))
				merged += !strcmp(file, "g.py") &&
				          cJSON_GetObjectItem(j, "line")->valueint == 5 &&
				          !strcmp(cJSON_GetObjectItem(j, "op")->valuestring,
				                  "jit(g)/mul") &&
				          cJSON_GetObjectItem(j, "k")->valueint == 1;
			if (!strcmp(nm, "copy_1")) {
				copy = 1; /* in ENTRY: launches by itself */
				assert_string_equal(file, "/abs/j.py");
				assert_int_equal(cJSON_GetObjectItem(j, "k")->valueint, 0);
			}
		}
		if (cJSON_IsString(t) && !strcmp(t->valuestring, "note") &&
		    strstr(cJSON_GetObjectItem(j, "text")->valuestring, "xla_lines: 3 files"))
			noted =
			    strstr(cJSON_GetObjectItem(j, "text")->valuestring,
			           "2 optimized modules read, 5 xla records, 0 entries") != NULL &&
			    strstr(cJSON_GetObjectItem(j, "text")->valuestring,
			           "metadata without a source: metadata={op_name=\"jit(g)/x\"") !=
			        NULL &&
			    strstr(cJSON_GetObjectItem(j, "text")->valuestring, "files: ") != NULL;
		cJSON_Delete(j);
	}
	fclose(f);
	/* the fused computation's inner op and the unoptimized module are not records */
	assert_int_equal(n, 5);
	assert_true(fusion && copy && sub_rec);
	assert_int_equal(merged, 2); /* fusion_36's callee is unknown: no record */
	assert_true(noted);
	assert_int_equal(stat(keep, &st), 0); /* the link's target is untouched */
	unlink(keep);
	/* a directory there before the program: not used */
	char note2[1024], mark2[64] = "";
	assert_int_equal(mkdir(dir, 0700), 0);
	unsetenv("XLA_FLAGS");
	xla_lines_setup(tpath, 0, mark2, sizeof(mark2), note2, sizeof(note2));
	assert_null(getenv("XLA_FLAGS"));
	assert_non_null(strstr(note2, "exists"));
	xla_lines_emit(1);
	assert_int_equal(stat(dir, &st), 0); /* left alone */
	rmdir(dir);
}

int main(void)
{
	snprintf(tpath, sizeof(tpath), "/tmp/aicprof-xla-%d.aicp.jsonl", (int)getpid());
	writer_init(tpath, 0, NULL, NULL);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_instruction_lines),
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_emit),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	writer_flush(1, "exit");
	unlink(tpath);
	return r;
}
