/*
 * test-report-graph.c - the step graph view: collapse of runs of small kernels (chains, fan-out,
 * candidates, cycles, unknown times), the top-N cut with its elided edges, and the Graphviz
 * output (DOT parsed back by cgraph with its clusters and labels; SVG with names escaped), the
 * fold of repeats into one "×N" box, the drawing of ops (runs at one model line, layers folded
 * by their ops, round trips marked), and the layout budget (a killed layout, AICPROF_LAYOUT_S).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cgraph.h>
#include <stdlib.h>
#include <string.h>

#include "report/graph.h"

/* Nodes with the given times (negative: no median_us), edges as pairs, candidates' nodes. */
/*
 * Graphviz 2.42's dot layout (virtual edges in mincross) and its pango/fontconfig text sizing
 * leak memory of their own on every layout; LeakSanitizer is told to ignore allocations made
 * inside those libraries (and only there), so the report's own leaks still fail the test.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libgvc.so\nleak:libgvplugin_dot_layout.so\nleak:libgvplugin_pango.so\n"
	       "leak:libfontconfig.so\n"
	       "leak:libpangoft2-1.0.so\nleak:libpango-1.0.so\nleak:libglib-2.0.so\n";
}

static cJSON *summary(int n, const double *us, const int *edges, int nr_edges, const int *cand,
                      int nr_cand, double step_us)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, "{\"nodes\":[");
	for (int i = 0; i < n; i++) {
		strbuf_addf(&sb, "%s{\"id\":%d,\"name\":\"k%d\",\"kind\":\"kernel\"", i ? "," : "",
		            i, i);
		if (us[i] >= 0)
			strbuf_addf(&sb,
			            ",\"median_us\":%g,\"bytes_read\":1024,\"bytes_written\":1024",
			            us[i]);
		strbuf_adds(&sb, "}");
	}
	strbuf_adds(&sb, "],\"edges\":[");
	for (int k = 0; k < nr_edges; k++)
		strbuf_addf(&sb, "%s{\"from\":%d,\"to\":%d,\"bytes\":4096}", k ? "," : "",
		            edges[2 * k], edges[2 * k + 1]);
	strbuf_adds(&sb, "],\"candidates\":[");
	if (nr_cand) {
		strbuf_adds(&sb, "{\"kind\":\"elementwise-chain\",\"time_saved_us_per_step\":3,"
		                 "\"nodes\":[");
		for (int k = 0; k < nr_cand; k++)
			strbuf_addf(&sb, "%s%d", k ? "," : "", cand[k]);
		strbuf_adds(&sb, "]}");
	}
	strbuf_addf(&sb, "],\"steps\":{\"median_us\":%g}}", step_us);
	cJSON *j = cJSON_Parse(sb.buf);
	strbuf_release(&sb);
	assert_non_null(j);
	return j;
}

/* The vertex standing for model node i, or -1. */
static int vert_of(const struct gview *gv, int i)
{
	for (int v = 0; v < gv->nr; v++) {
		if (gv->v[v].count == 1 && gv->v[v].node == i)
			return v;
		for (int k = 0; k < gv->v[v].count && gv->v[v].members; k++)
			if (gv->v[v].members[k] == i)
				return v;
	}
	return -1;
}

static int has_edge(const struct gview *gv, int a, int b)
{
	for (int k = 0; k < gv->nr_e; k++)
		if (gv->e[k].from == a && gv->e[k].to == b)
			return 1 + gv->e[k].elided;
	return 0;
}

static void test_collapse_chain(void **state)
{
	double us[10] = {50, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 50, 0.1, 50};
	int e[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9};
	cJSON *j = summary(10, us, e, 9, NULL, 0, 200);
	struct rmodel m;
	rmodel_init(&m, j);
	struct gview gv;
	gview_build(&gv, &m, 0.01, 0);
	assert_int_equal(gv.nr, 5);
	assert_int_equal(gv.collapsed, 6);
	int g = vert_of(&gv, 1);
	assert_int_equal(gv.v[g].count, 6);
	for (int k = 0; k < 6; k++)
		assert_int_equal(gv.v[g].members[k], k + 1);
	assert_true(gv.v[g].us > 0.59 && gv.v[g].us < 0.61);
	assert_int_equal(vert_of(&gv, 6), g);
	assert_int_equal(gv.v[vert_of(&gv, 8)].count, 1); /* a lone small node stays */
	assert_int_equal(gv.nr_e, 4);
	assert_true(has_edge(&gv, vert_of(&gv, 0), g));
	assert_true(has_edge(&gv, g, vert_of(&gv, 7)));
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);
}

static void test_collapse_stops_at_fanout_and_candidates(void **state)
{
	/* 0 -> 1 -> {2, 3} -> 4: no chain of two passes a fork or a join. */
	double us[5] = {0.1, 0.1, 0.1, 0.1, 0.1};
	int e[] = {0, 1, 1, 2, 1, 3, 2, 4, 3, 4};
	cJSON *j = summary(5, us, e, 5, NULL, 0, 100);
	struct rmodel m;
	rmodel_init(&m, j);
	struct gview gv;
	gview_build(&gv, &m, 0.01, 0);
	/* Only 0 -> 1 is a chain (1 is 0's only successor and 0 is 1's only predecessor). */
	assert_int_equal(gv.nr, 4);
	assert_int_equal(gv.collapsed, 2);
	assert_int_equal(vert_of(&gv, 0), vert_of(&gv, 1));
	assert_int_not_equal(vert_of(&gv, 2), vert_of(&gv, 4));
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);

	/* A chain 0..5 with node 2 in a candidate splits around it. */
	double us2[6] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
	int e2[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5};
	int cand[] = {2};
	j = summary(6, us2, e2, 5, cand, 1, 100);
	rmodel_init(&m, j);
	gview_build(&gv, &m, 0.01, 0);
	assert_int_equal(gv.nr, 3);
	assert_int_equal(gv.v[vert_of(&gv, 2)].count, 1);
	assert_int_equal(gv.v[vert_of(&gv, 2)].cand, 0);
	assert_int_equal(vert_of(&gv, 0), vert_of(&gv, 1));
	assert_int_equal(vert_of(&gv, 3), vert_of(&gv, 5));
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);
}

static void test_collapse_cycle_and_unknown(void **state)
{
	/* A cycle of small nodes has no start: nothing collapses, nothing loops. */
	double us[4] = {0.1, 0.1, 0.1, -1};
	int e[] = {0, 1, 1, 2, 2, 0};
	cJSON *j = summary(4, us, e, 3, NULL, 0, 100);
	struct rmodel m;
	rmodel_init(&m, j);
	struct gview gv;
	gview_build(&gv, &m, 0.01, 0);
	assert_int_equal(gv.nr, 4);
	assert_int_equal(gv.collapsed, 0);
	assert_int_equal(gv.nr_e, 3);
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);

	/* A way out of the cycle (2 -> 3) makes 0 a start: 0 -> 1 -> 2 is a chain. */
	int e3[] = {0, 1, 1, 2, 2, 0, 2, 3};
	j = summary(4, us, e3, 4, NULL, 0, 100);
	rmodel_init(&m, j);
	gview_build(&gv, &m, 0.01, 0);
	assert_int_equal(gv.nr, 2);
	assert_int_equal(gv.collapsed, 3);
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);

	/* A node of unknown time is never small. */
	double us2[3] = {0.1, -1, 0.1};
	int e2[] = {0, 1, 1, 2};
	j = summary(3, us2, e2, 2, NULL, 0, 100);
	rmodel_init(&m, j);
	gview_build(&gv, &m, 0.01, 0);
	assert_int_equal(gv.nr, 3);
	assert_int_equal(m.nodes[1].us, -1);
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);
}

static void test_top_n(void **state)
{
	/* Two heavy nodes 0 and 51 joined by a chain of 50 light ones. */
	enum { N = 52 };
	double us[N];
	int e[2 * (N - 1)];
	for (int i = 0; i < N; i++)
		us[i] = i == 0 || i == N - 1 ? 1000 : 1 + i * 0.01;
	for (int i = 0; i + 1 < N; i++) {
		e[2 * i] = i;
		e[2 * i + 1] = i + 1;
	}
	cJSON *j = summary(N, us, e, N - 1, NULL, 0, 3000);
	struct rmodel m;
	rmodel_init(&m, j);
	struct gview gv;
	gview_build(&gv, &m, 0, 2); /* no collapse; keep the top 2 and their neighbours */
	assert_int_equal(gv.top_n, 2);
	assert_int_equal(gv.nr, 4);
	assert_int_equal(gv.hidden, N - 4);
	int a = vert_of(&gv, 1), b = vert_of(&gv, N - 2);
	assert_true(a >= 0 && b >= 0);
	assert_int_equal(has_edge(&gv, a, b), 2); /* elided: through the 48 left out */
	assert_int_equal(has_edge(&gv, vert_of(&gv, 0), a), 1);
	assert_int_equal(vert_of(&gv, 10), -1);
	gview_release(&gv);
	/* No cut when the graph is already small enough. */
	gview_build(&gv, &m, 0, 100);
	assert_int_equal(gv.nr, N);
	assert_int_equal(gv.top_n, 0);
	assert_int_equal(gv.hidden, 0);
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);
}

static void test_dot_and_svg(void **state)
{
	const char *text =
	    "{\"nodes\":[{\"id\":0,\"name\":\"<script>alert(1)</script>\",\"median_us\":10,"
	    "\"bytes_read\":1,\"bytes_written\":1,\"full_name\":\"a & b \\\"q\\\"\"},"
	    "{\"id\":1,\"name\":\"x\\\\Ny\",\"median_us\":5},{\"id\":2,\"name\":\"plain\","
	    "\"median_us\":5}],\"edges\":[{\"from\":0,\"to\":1,\"bytes\":1048576},"
	    "{\"from\":1,\"to\":2,\"bytes\":0}],\"candidates\":[{\"kind\":\"</text><injected>\","
	    "\"nodes\":[0,1],\"time_saved_us_per_step\":2}],\"steps\":{\"median_us\":20}}";
	cJSON *j = cJSON_Parse(text);
	assert_non_null(j);
	struct rmodel m;
	rmodel_init(&m, j);
	struct gview gv;
	gview_build(&gv, &m, 0.01, 0);
	struct strbuf dot = STRBUF_INIT, svg = STRBUF_INIT;
	assert_int_equal(gview_render(&gv, &m, &dot, &svg), 0);

	Agraph_t *g = agmemread(dot.buf);
	assert_non_null(g);
	assert_int_equal(agnnodes(g), 3);
	assert_int_equal(agnedges(g), 2);
	Agraph_t *c = agsubg(g, "cluster_1", 0);
	assert_non_null(c);
	assert_int_equal(agnnodes(c), 2);
	Agnode_t *n0 = agnode(g, "n0", 0), *n1 = agnode(g, "n1", 0);
	assert_non_null(n0);
	assert_non_null(n1);
	assert_non_null(strstr(agget(n0, "label"), "<script>alert(1)</script>"));
	assert_non_null(strstr(agget(n1, "label"), "x\\\\Ny")); /* \N is not Graphviz's \N */
	assert_non_null(strstr(agget(c, "label"), "</text><injected>"));
	agclose(g);

	assert_non_null(strstr(svg.buf, "<svg"));
	assert_null(strstr(svg.buf, "<script"));
	assert_null(strstr(svg.buf, "<injected"));
	assert_non_null(strstr(svg.buf, "&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_non_null(strstr(svg.buf, "x\\Ny")); /* drawn as written */
	assert_non_null(strstr(svg.buf, "class=\"cluster\""));
	assert_non_null(strstr(svg.buf, "1.0 MiB"));
	strbuf_release(&dot);
	strbuf_release(&svg);
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);
}

/* "in" A B C A B C A B C "out", a chain, with names repeated: one fold of 3 kernels ×3. */
static cJSON *repeated(void)
{
	static const char *names[] = {"in", "A", "B", "C", "A", "B", "C", "A", "B", "C", "out"};
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, "{\"nodes\":[");
	for (int i = 0; i < 11; i++)
		strbuf_addf(&sb,
		            "%s{\"id\":%d,\"name\":\"%s\",\"kind\":\"kernel\",\"median_us\":%d}",
		            i ? "," : "", i, names[i], 10 + i);
	strbuf_adds(&sb, "],\"edges\":[");
	for (int i = 0; i < 10; i++)
		strbuf_addf(&sb, "%s{\"from\":%d,\"to\":%d,\"bytes\":4096}", i ? "," : "", i,
		            i + 1);
	strbuf_adds(&sb, ",{\"from\":0,\"to\":7,\"bytes\":8}],\"candidates\":[],"
	                 "\"steps\":{\"median_us\":1000}}");
	cJSON *j = cJSON_Parse(sb.buf);
	strbuf_release(&sb);
	assert_non_null(j);
	return j;
}

static void test_fold(void **state)
{
	cJSON *j = repeated();
	struct rmodel m;
	rmodel_init(&m, j);
	struct gview gv;
	gview_build_folded(&gv, &m, 0, 0, 1);
	assert_int_equal(gv.nr_folds, 1);
	assert_int_equal(gv.folds[0].first, 1);
	assert_int_equal(gv.folds[0].period, 3);
	assert_int_equal(gv.folds[0].reps, 3);
	assert_int_equal(gv.folded, 6);
	assert_int_equal(gv.nr, 5); /* in, A, B, C, out */
	int a = vert_of(&gv, 1), c = vert_of(&gv, 3);
	assert_int_equal(gv.v[a].fold, 0);
	assert_int_equal(gv.v[vert_of(&gv, 0)].fold, -1);
	assert_int_equal(vert_of(&gv, 4), -1); /* drawn by node 1 */
	/* A's time: the three copies' (11 + 14 + 17) */
	assert_true(gv.v[a].us > 41.9 && gv.v[a].us < 42.1);
	/* C -> A between copies is dropped; in -> the third A maps onto in -> A */
	assert_false(has_edge(&gv, c, a));
	assert_true(has_edge(&gv, vert_of(&gv, 0), a));
	assert_true(has_edge(&gv, c, vert_of(&gv, 10)));
	assert_int_equal(gv.nr_e, 4);
	struct strbuf dot = STRBUF_INIT;
	assert_int_equal(gview_render(&gv, &m, &dot, NULL), 0);
	assert_non_null(strstr(dot.buf, "cluster_x1"));
	assert_non_null(strstr(dot.buf, "×3"));
	strbuf_release(&dot);
	gview_release(&gv);
	/* Not folded unless asked. */
	gview_build(&gv, &m, 0, 0);
	assert_int_equal(gv.nr_folds, 0);
	assert_int_equal(gv.nr, 11);
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);
}

/* in; three layers of [two kernels at m.py:5 (their names differ by layer), relu at m.py:6]; out.
 * A candidate holds the second kernel at m.py:5 and relu of the first layer. */
static cJSON *layered(void)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb,
	            "{\"nodes\":[{\"id\":0,\"name\":\"in\",\"kind\":\"kernel\",\"median_us\":10}");
	for (int r = 0; r < 3; r++)
		for (int k = 0; k < 3; k++) {
			int i = 1 + 3 * r + k;
			strbuf_addf(
			    &sb,
			    ",{\"id\":%d,\"name\":\"%s_%d\",\"kind\":\"kernel\",\"median_us\":100,"
			    "\"model_site\":{\"file\":\"m.py\",\"line\":%d},"
			    "\"user_site\":{\"file\":\"u.py\",\"line\":1}}",
			    i,
			    k == 2 ? "relu"
			    : k    ? "fix"
			           : "conv",
			    k == 2 ? 0 : r, k == 2 ? 6 : 5);
		}
	strbuf_adds(&sb, ",{\"id\":10,\"name\":\"out\",\"kind\":\"kernel\",\"median_us\":10}],"
	                 "\"edges\":[");
	for (int i = 0; i < 10; i++)
		strbuf_addf(&sb, "%s{\"from\":%d,\"to\":%d,\"bytes\":4096}", i ? "," : "", i,
		            i + 1);
	strbuf_adds(&sb,
	            "],\"candidates\":[{\"kind\":\"elementwise-chain\",\"time_saved_us_per_step\""
	            ":3,\"nodes\":[2,3]}],\"steps\":{\"median_us\":1000}}");
	cJSON *j = cJSON_Parse(sb.buf);
	strbuf_release(&sb);
	assert_non_null(j);
	return j;
}

static void test_ops(void **state)
{
	cJSON *j = layered();
	struct rmodel m;
	rmodel_init(&m, j);
	struct gview gv;
	gview_build_folded(&gv, &m, 0, 0, GVIEW_FOLD_OPS);
	assert_int_equal(gv.ops, 1);
	/* the layers fold by their lines although their kernels' names differ */
	assert_int_equal(gv.nr_folds, 1);
	assert_int_equal(gv.folds[0].first, 1);
	assert_int_equal(gv.folds[0].period, 2); /* two ops */
	assert_int_equal(gv.folds[0].reps, 3);
	assert_int_equal(gv.folds[0].kernels, 3);
	assert_int_equal(gv.nr, 4); /* in, the op at m.py:5, relu, out */
	int op = vert_of(&gv, 1), relu = vert_of(&gv, 3);
	assert_true(op >= 0 && relu >= 0 && op != relu);
	assert_int_equal(gv.v[op].op, 1);
	assert_int_equal(gv.v[op].count, 2);
	assert_int_equal(vert_of(&gv, 2), op);
	assert_int_equal(vert_of(&gv, 4), -1); /* the second layer's: drawn by the first's */
	assert_true(gv.v[op].us > 599.9 && gv.v[op].us < 600.1); /* 6 kernels of 100 */
	assert_int_equal(gv.v[op].cand, 0);
	/* the round trip inside the candidate is marked with its rank; relu -> the next layer
	 * is dropped (between copies), relu -> out kept */
	int saved = 0;
	for (int k = 0; k < gv.nr_e; k++)
		if (gv.e[k].from == op && gv.e[k].to == relu)
			saved = gv.e[k].saved;
	assert_int_equal(saved, 1);
	assert_false(has_edge(&gv, relu, op));
	assert_true(has_edge(&gv, relu, vert_of(&gv, 10)));
	struct strbuf dot = STRBUF_INIT;
	assert_int_equal(gview_render(&gv, &m, &dot, NULL), 0);
	assert_non_null(strstr(dot.buf, "×3"));
	assert_non_null(strstr(dot.buf, "m.py:5"));
	assert_non_null(strstr(dot.buf, "#d9480f")); /* the orange round trip */
	assert_null(strstr(dot.buf, "cluster_1"));   /* members marked, not boxed */
	strbuf_release(&dot);
	gview_release(&gv);

	/* two boxes asked: in and out are small but apart in step order, so what merges is the
	 * candidate's run (the op at m.py:5 and relu, one after the other): in, [op, relu], out */
	gview_build_ops(&gv, &m, 0.01, 2);
	assert_int_equal(gv.nr, 3);
	assert_int_equal(vert_of(&gv, 1), vert_of(&gv, 3));
	assert_int_equal(gv.v[vert_of(&gv, 3)].op, 1);
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);

	/* kernels without lines or ops fold by their names */
	j = repeated();
	rmodel_init(&m, j);
	gview_build_ops(&gv, &m, 0.01, 60);
	assert_int_equal(gv.nr_folds, 1);
	assert_int_equal(gv.nr, 5);
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);

	/* nothing groups or repeats: the plain drawing of the kernels (not one of ops) */
	double us[3] = {0.5, 0.5, 0.5};
	int e[] = {0, 1, 1, 2};
	j = summary(3, us, e, 2, NULL, 0, 100);
	rmodel_init(&m, j);
	gview_build_ops(&gv, &m, 0.01, 60);
	assert_int_equal(gv.ops, 0);
	assert_int_equal(gv.nr, 1); /* the three small kernels, one chain */
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);
}

static void test_budget(void **state)
{
	cJSON *j = repeated();
	struct rmodel m;
	rmodel_init(&m, j);
	struct gview gv;
	gview_build(&gv, &m, 0, 0);
	struct strbuf svg = STRBUF_INIT, why = STRBUF_INIT;
	/* A microsecond is too short for any layout: the child is killed. */
	assert_int_equal(gview_render_budget(&gv, &m, NULL, &svg, 1e-6, &why), GVIEW_TIMEOUT);
	assert_int_equal(svg.len, 0);
	assert_non_null(strstr(why.buf, "longer than"));
	strbuf_reset(&why);
	assert_int_equal(gview_render_budget(&gv, &m, NULL, &svg, 60, &why), 0);
	assert_non_null(strstr(svg.buf, "<svg width=\""));
	assert_true(gview_svg_width(svg.buf) > 0);
	assert_int_equal(gview_svg_width("no drawing"), -1);
	strbuf_release(&svg);
	strbuf_release(&why);
	setenv("AICPROF_LAYOUT_S", "2.5", 1);
	assert_true(gview_layout_budget() == 2.5);
	setenv("AICPROF_LAYOUT_S", "-1", 1);
	assert_true(gview_layout_budget() == GVIEW_LAYOUT_S);
	setenv("AICPROF_LAYOUT_S", "ten", 1);
	assert_true(gview_layout_budget() == GVIEW_LAYOUT_S);
	unsetenv("AICPROF_LAYOUT_S");
	gview_release(&gv);
	rmodel_release(&m);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_collapse_chain),
	    cmocka_unit_test(test_collapse_stops_at_fanout_and_candidates),
	    cmocka_unit_test(test_collapse_cycle_and_unknown),
	    cmocka_unit_test(test_top_n),
	    cmocka_unit_test(test_dot_and_svg),
	    cmocka_unit_test(test_fold),
	    cmocka_unit_test(test_ops),
	    cmocka_unit_test(test_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
