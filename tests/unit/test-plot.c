/*
 * test-plot.c - the roofline and timeline SVGs (report/plot.c) on summaries built here: GEMMs
 * with FLOPs are points; the bf16 and fp16 ceilings of equal peak share one label naming the
 * tensor cores, the fp32 one does not claim them; kernels without FLOPs are counted in a note;
 * and numbers far outside any range (1e300, -1e300, 1e19 stream and node ids, a dur_us of
 * 1e308) give a plot without undefined behaviour (the test is built with UBSan; its options
 * here make the first float-cast overflow end it). And the page's lead (report/lead.c): a
 * step of short kernels with gaps says the GPU is idle first, with bounded figures; a busy
 * step says it is GPU-bound in one line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report/lead.h"
#include "report/plot.h"

#include <stdlib.h>
#include <string.h>

/* float-cast-overflow recovers by default: make the first report end the test */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static char *draw(const char *json, int timeline, int *n)
{
	cJSON *root = cJSON_Parse(json);
	assert_non_null(root);
	struct rmodel m;
	rmodel_init(&m, root);
	struct strbuf sb = STRBUF_INIT;
	*n = timeline ? plot_timeline(&m, &sb) : plot_roofline(&m, &sb);
	rmodel_release(&m);
	cJSON_Delete(root);
	return sb.buf ? sb.buf : strdup(""); /* the buffer is the caller's now */
}

static int count(const char *hay, const char *needle)
{
	int c = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		c++;
	return c;
}

#define DEV                                                                                        \
	"\"device\":{\"name\":\"NVIDIA H200\",\"peak_bw_gbs\":4800,\"peak_tflops\":{\"fp32\":67,"  \
	"\"bf16\":989.4,\"fp16\":989.4,\"tf32\":494.7}}"

static void test_roofline_ceilings_and_gemms(void **state)
{
	int n;
	char *svg =
	    draw("{" DEV ",\"nodes\":["
	         "{\"id\":0,\"name\":\"nvjet_gemm\",\"kind\":\"kernel\",\"family\":\"gemm\","
	         "\"median_us\":49,\"flops\":3.4e10,\"intensity\":680,\"bound\":\"compute\"},"
	         "{\"id\":1,\"name\":\"add\",\"kind\":\"kernel\",\"family\":\"elementwise\","
	         "\"median_us\":5,\"flops\":1e6,\"intensity\":0.08},"
	         "{\"id\":2,\"name\":\"cast\",\"kind\":\"kernel\",\"family\":\"copy\","
	         "\"median_us\":5,\"flops\":0,\"intensity\":0,\"achieved_gbs\":1200},"
	         "{\"id\":3,\"name\":\"fill\",\"kind\":\"kernel\",\"family\":\"memset\","
	         "\"median_us\":0,\"flops\":0,\"intensity\":0}]}",
	         0, &n);
	assert_int_equal(n, 2);
	/* two roofline points, and the cast in the strip under it at 1200 of 4800 GB/s */
	assert_int_equal(count(svg, "<circle"), 3);
	assert_int_equal(count(svg, "class=\"pt nf\""), 1);
	assert_non_null(strstr(svg, "1200 GB/s (25% of the peak)"));
	assert_non_null(strstr(svg, "1 kernel without FLOPs"));
	assert_non_null(strstr(svg, "1 with no time or bandwidth not drawn"));
	assert_non_null(strstr(svg, "data-node=\"0\""));
	assert_int_equal(count(svg, "bf16/fp16 tensor core 989 TFLOP/s"), 1);
	assert_int_equal(count(svg, "tf32 tensor core 495 TFLOP/s"), 1);
	assert_int_equal(count(svg, ">fp32 67 TFLOP/s"), 1);
	assert_int_equal(count(svg, "class=\"ceil\""), 3);
	free(svg);
}

static void test_roofline_close_labels_apart(void **state)
{
	int n;
	/* 990 and 1000: distinct ceilings a pixel apart; their labels must not share a line */
	char *svg = draw("{\"device\":{\"peak_bw_gbs\":4800,\"peak_tflops\":{\"bf16\":990,"
	                 "\"fp16\":1000}},\"nodes\":[{\"id\":0,\"name\":\"g\",\"median_us\":10,"
	                 "\"flops\":1e9,\"intensity\":100}]}",
	                 0, &n);
	assert_int_equal(n, 1);
	double y[2];
	int k = 0;
	for (const char *p = svg; k < 2 && (p = strstr(p, "class=\"rooflabel\" x=")); p++) {
		const char *q = strstr(p, "y=\"");
		assert_non_null(q);
		y[k++] = atof(q + 3);
	}
	assert_int_equal(k, 2);
	assert_true(y[1] - y[0] >= 12 || y[0] - y[1] >= 12);
	free(svg);
}

static void test_huge_numbers(void **state)
{
	int n;
	char *svg =
	    draw("{\"device\":{\"peak_bw_gbs\":1e300,\"peak_tflops\":{\"bf16\":1e300,"
	         "\"fp16\":-1e300,\"fp32\":1e-300}},\"kernel_us\":1e300,\"nodes\":["
	         "{\"id\":1e19,\"name\":\"a\",\"median_us\":1e-300,\"flops\":1e300,"
	         "\"intensity\":1e300},"
	         "{\"id\":-1e19,\"name\":\"b\",\"median_us\":1e300,\"flops\":1e-300,"
	         "\"intensity\":1e-300},"
	         "{\"id\":3,\"name\":\"c\",\"median_us\":1,\"flops\":1e9,\"intensity\":10}]}",
	         0, &n);
	assert_true(n >= 1);
	assert_non_null(strstr(svg, "</svg>"));
	free(svg);
	svg = draw(
	    "{\"timeline\":{\"events\":["
	    "{\"start_us\":0,\"dur_us\":1e308,\"stream\":1e19,\"node\":-1e19,\"kind\":\"kernel\"},"
	    "{\"start_us\":1e300,\"dur_us\":-1e300,\"stream\":-1e19,\"node\":1e19},"
	    "{\"start_us\":5,\"dur_us\":1,\"stream\":7,\"node\":3}]}}",
	    1, &n);
	assert_true(n >= 1);
	assert_non_null(strstr(svg, "</svg>"));
	free(svg);
}

static char *lead(const char *json)
{
	cJSON *root = cJSON_Parse(json);
	assert_non_null(root);
	struct rmodel m;
	rmodel_init(&m, root);
	struct strbuf sb = STRBUF_INIT;
	report_lead_section(&m, &sb);
	rmodel_release(&m);
	cJSON_Delete(root);
	return sb.buf ? sb.buf : strdup("");
}

static void test_lead_idle(void **state)
{
	/* 4 kernels of 5 us with 45 us gaps, overlapping streams, in a 1000 us step: busy 20 us */
	char *h = lead("{\"steps\":{\"times_us\":[1000]},\"timeline\":{\"step\":0,\"events\":["
	               "{\"kind\":\"kernel\",\"start_us\":0,\"dur_us\":5,\"name\":\"a\"},"
	               "{\"kind\":\"kernel\",\"start_us\":1,\"dur_us\":4,\"name\":\"a2\"},"
	               "{\"kind\":\"kernel\",\"start_us\":50,\"dur_us\":5,\"name\":\"b\"},"
	               "{\"kind\":\"kernel\",\"start_us\":100,\"dur_us\":5,\"name\":\"c\"},"
	               "{\"kind\":\"kernel\",\"start_us\":150,\"dur_us\":5,\"name\":\"<d>\"}]},"
	               "\"candidates\":[{\"kind\":\"invariant\",\"sources\":[\"train.py:42\"],"
	               "\"evidence\":{\"what\":\"host-sync\",\"stall_us\":1e300}}]}");
	assert_non_null(strstr(h, "The GPU is idle 98% of the step</strong> (kernels busy 20.0 µs "
	                          "of 1.00 ms)"));
	assert_non_null(strstr(h, "5 of 5 kernels run under 10 µs, with a median gap of 45.0 µs"));
	assert_non_null(strstr(h, "a sync at <code>train.py:42</code>"));
	assert_non_null(strstr(h, "reduce-overhead"));
	assert_non_null(strstr(h, "up to 129.0 µs (13% of the step)"));
	/* the huge stall: at most the step where it is said, at most the idle where it is saved */
	assert_non_null(strstr(h, "a sync at <code>train.py:42</code> (the host blocks 1.00 ms)"));
	assert_non_null(strstr(h, "up to 980.0 µs of GPU idle time (98.0% of the step)"));
	assert_null(strstr(h, "<d>"));
	free(h);
}

/* the same idle step with the findings given: what they take off the GPU's busy time */
static char *lead_with(const char *cands)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
	         "{\"steps\":{\"times_us\":[1000]},\"timeline\":{\"step\":0,\"events\":["
	         "{\"kind\":\"kernel\",\"start_us\":0,\"dur_us\":5,\"name\":\"a\"},"
	         "{\"kind\":\"kernel\",\"start_us\":50,\"dur_us\":5,\"name\":\"b\"},"
	         "{\"kind\":\"kernel\",\"start_us\":100,\"dur_us\":5,\"name\":\"c\"},"
	         "{\"kind\":\"kernel\",\"start_us\":150,\"dur_us\":5,\"name\":\"d\"}]},"
	         "\"candidates\":[%s]}",
	         cands);
	return lead(buf);
}

static void test_lead_gpu_share(void **state)
{
	/* two GPU findings count (5 + 8 of the 20 us busy); a schedule change, a report-only kind
	 * and a host-blocked finding do not */
	char *h = lead_with(
	    "{\"kind\":\"elementwise-chain\",\"time_kind\":\"gpu\",\"kernel_saved_us\":5},"
	    "{\"kind\":\"attention\",\"time_kind\":\"gpu\",\"kernel_saved_us\":8,"
	    "\"library_form\":\"sdpa\"},"
	    "{\"kind\":\"comm-overlap\",\"time_kind\":\"gpu\",\"kernel_saved_us\":100},"
	    "{\"kind\":\"dead\",\"time_kind\":\"gpu\",\"kernel_saved_us\":50},"
	    "{\"kind\":\"elementwise-chain\",\"time_kind\":\"host-blocked\","
	    "\"kernel_saved_us\":30}");
	assert_non_null(strstr(h, "Of the GPU's own 20.0 µs a step, the findings take off 13.0 µs "
	                          "(65%): that part shows end to end where the GPU bounds"));
	free(h);
	/* never above the busy time */
	h = lead_with(
	    "{\"kind\":\"elementwise-chain\",\"time_kind\":\"gpu\",\"kernel_saved_us\":1e300},"
	    "{\"kind\":\"elementwise-chain\",\"time_kind\":\"gpu\",\"kernel_saved_us\":-5}");
	assert_non_null(strstr(h, "the findings take off 20.0 µs (100%)"));
	free(h);
	/* no GPU finding: no such sentence */
	h = lead_with("{\"kind\":\"memory\",\"time_kind\":\"none\",\"kernel_saved_us\":0}");
	assert_non_null(strstr(h, "The GPU is idle"));
	assert_null(strstr(h, "the findings take off"));
	free(h);
}

static void test_lead_busy(void **state)
{
	char *h = lead("{\"timeline\":{\"step\":0,\"events\":["
	               "{\"kind\":\"kernel\",\"start_us\":0,\"dur_us\":800},"
	               "{\"kind\":\"kernel\",\"start_us\":810,\"dur_us\":1e300}]}}");
	assert_non_null(strstr(h, "GPU-bound"));
	assert_null(strstr(h, "idle"));
	free(h);
	h = lead("{\"timeline\":{\"events\":[]}}");
	assert_string_equal(h, "");
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roofline_ceilings_and_gemms),
	    cmocka_unit_test(test_roofline_close_labels_apart),
	    cmocka_unit_test(test_huge_numbers),
	    cmocka_unit_test(test_lead_idle),
	    cmocka_unit_test(test_lead_gpu_share),
	    cmocka_unit_test(test_lead_busy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
