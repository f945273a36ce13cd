/*
 * test-report.c - the report stage end to end on the fixtures under tests/report/: the four
 * files written; the page's sections, candidates and source-line text; the CSP hashes matching
 * the inline style and script; the Perfetto export parsed back with cJSON; the hostile fixture
 * leaving no markup of its own in the page; summaries with missing or wrong-typed fields; a
 * summary that does not parse (an error, nothing written). Also the escaping helpers the page
 * relies on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util.h"
#include "report/html.h"
#include "report/report.h"
#include "report/sha256.h"

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

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sb, buf, n);
	fclose(f);
	return sb.buf ? sb.buf : xstrdup("");
}

static void spit(const char *path, const char *text)
{
	assert_int_equal(write_file_atomic(path, text, strlen(text)), 0);
}

/* A fresh directory holding fixture as summary.json (and train.py beside it when asked). */
static char *setup_dir(const char *fixture, int with_source)
{
	const char *top = getenv("AICPROF_TOP");
	char tmpl[] = "/tmp/aicprof-report-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	dir = xstrdup(dir);
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/tests/report/%s", top ? top : ".", fixture);
	char *text = slurp(p.buf);
	assert_non_null(text);
	char *dst = path_join(dir, "summary.json");
	spit(dst, text);
	free(dst);
	free(text);
	if (with_source) {
		strbuf_reset(&p);
		strbuf_addf(&p, "%s/tests/report/train.py", top ? top : ".");
		text = slurp(p.buf);
		assert_non_null(text);
		dst = path_join(dir, "train.py");
		spit(dst, text);
		free(dst);
		free(text);
	}
	strbuf_release(&p);
	return dir;
}

static void cleanup_dir(char *dir)
{
	static const char *names[] = {"summary.json", "train.py",  "report.html",
	                              "graph.dot",    "graph.svg", "trace.perfetto.json"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char *p = path_join(dir, names[i]);
		unlink(p);
		free(p);
	}
	rmdir(dir);
	free(dir);
}

static char *read_out(const char *dir, const char *name)
{
	char *p = path_join(dir, name);
	char *t = slurp(p);
	free(p);
	return t;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The text between open (the first after from) and close, as a new string. */
static char *between(const char *hay, const char *open, const char *close)
{
	const char *a = strstr(hay, open);
	if (!a)
		return NULL;
	a += strlen(open);
	const char *b = strstr(a, close);
	if (!b)
		return NULL;
	char *s = xmalloc((size_t)(b - a) + 1);
	memcpy(s, a, (size_t)(b - a));
	s[b - a] = 0;
	return s;
}

/*
 * Scans every tag of html (the page writes no raw '<' in text, so each '<' opens a tag) and
 * returns 1 when one has an event-handler attribute (on...), a href/src with a javascript: URL,
 * or an attribute named bad; comments and the doctype are skipped.
 */
static int bad_tag(const char *html, const char *bad)
{
	for (const char *p = strchr(html, '<'); p; p = strchr(p, '<')) {
		p++;
		if (*p == '!' || *p == '?' || *p == '/') {
			continue;
		}
		while (*p && *p != '>' && *p != ' ' && *p != '\n')
			p++;
		while (*p && *p != '>') {
			while (*p == ' ' || *p == '\n' || *p == '/')
				p++;
			const char *name = p;
			while (*p && *p != '=' && *p != ' ' && *p != '>' && *p != '\n')
				p++;
			size_t nlen = (size_t)(p - name);
			const char *val = "";
			size_t vlen = 0;
			if (*p == '=') {
				char q = *++p;
				if (q == '"' || q == '\'') {
					val = ++p;
					while (*p && *p != q)
						p++;
					vlen = (size_t)(p - val);
					if (*p)
						p++;
				} else {
					val = p;
					while (*p && *p != ' ' && *p != '>')
						p++;
					vlen = (size_t)(p - val);
				}
			}
			if (nlen >= 2 && !strncmp(name, "on", 2))
				return 1;
			if (nlen == strlen(bad) && !strncmp(name, bad, nlen))
				return 1;
			int url = (nlen >= 4 && !strncmp(name + nlen - 4, "href", 4)) ||
			          (nlen == 3 && !strncmp(name, "src", 3));
			char v[64] = "";
			memcpy(v, val, vlen < 63 ? vlen : 63);
			if (url && strstr(v, "javascript"))
				return 1;
		}
	}
	return 0;
}

static void test_escaping(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_html(&sb, "<a href=\"x\">'&'</a>");
	assert_string_equal(sb.buf, "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
	strbuf_reset(&sb);
	strbuf_add_json(&sb, "</script><b>&\"\\\n\x01");
	assert_string_equal(sb.buf,
	                    "\"\\u003c/script\\u003e\\u003cb\\u003e\\u0026\\\"\\\\\\n\\u0001\"");
	cJSON *j = cJSON_Parse(sb.buf);
	assert_non_null(j);
	assert_string_equal(j->valuestring, "</script><b>&\"\\\n\x01");
	cJSON_Delete(j);
	strbuf_reset(&sb);
	html_add_svg_body(&sb, "<?xml version=\"1.0\"?>\n<!DOCTYPE svg PUBLIC \"x\">\n<!-- c -->"
	                       "<svg width=\"1\"></svg>\n");
	assert_string_equal(sb.buf, "<svg width=\"1\"></svg>\n");
	strbuf_release(&sb);
}

static void test_small(void **state)
{
	char *dir = setup_dir("small.json", 1);
	assert_int_equal(report_write_all(dir), 0);
	char *html = read_out(dir, "report.html");
	assert_non_null(html);
	static const char *sections[] = {"id=\"overview\"", "id=\"candidates\"", "id=\"graph\"",
	                                 "id=\"ledger\"",   "id=\"sources\"",    "id=\"timeline\""};
	const char *last = html;
	for (size_t i = 0; i < ARRAY_SIZE(sections); i++) {
		const char *at = strstr(html, sections[i]);
		assert_non_null(at);
		assert_true(at > last); /* in the order of the issue */
		last = at;
	}
	/* Two candidates, ranked by time saved, and one rejected. */
	assert_non_null(strstr(html, "id=\"cand-1\""));
	assert_non_null(strstr(html, "id=\"cand-2\""));
	assert_null(strstr(html, "id=\"cand-3\""));
	assert_true(strstr(html, "gemm-epilogue") < strstr(html, "reduction-epilogue"));
	assert_non_null(strstr(html, "Rejected candidates (1)"));
	assert_non_null(strstr(html, "saved for backward"));
	assert_non_null(strstr(html, "cuBLASLt epilogue GELU_AUX_BIAS"));
	assert_non_null(strstr(html, "<code>aicprof fuse</code>"));
	/* Source text read from train.py beside the summary. */
	assert_non_null(strstr(html, "h = F.gelu(self.fc1(x))"));
	assert_non_null(strstr(html, "y = self.norm(x + self.fc2(h))"));
	/* Graph inlined without its prolog; clusters drawn. */
	assert_null(strstr(html, "<?xml"));
	assert_null(strstr(html, "<!DOCTYPE svg"));
	assert_non_null(strstr(html, "candidate #1: gemm&#45;epilogue"));
	/* The headline figure: 46.7 us saved = 41.6 + 5.1. */
	assert_non_null(strstr(html, "46.7 µs"));
	/* No missing-field note for a complete summary. */
	assert_null(strstr(html, "id=\"missing\""));

	/* CSP: the hashes are those of the one style and the one script. */
	char *css = between(html, "<style>", "</style>");
	char *js = between(html, "<script>", "</script>");
	assert_non_null(css);
	assert_non_null(js);
	char h[45];
	struct strbuf want = STRBUF_INIT;
	sha256_base64(css, strlen(css), h);
	strbuf_addf(&want, "style-src 'sha256-%s'", h);
	assert_non_null(strstr(html, want.buf));
	strbuf_reset(&want);
	sha256_base64(js, strlen(js), h);
	strbuf_addf(&want, "script-src 'sha256-%s'", h);
	assert_non_null(strstr(html, want.buf));
	assert_non_null(strstr(html, "default-src 'none'"));
	assert_int_equal(count(html, "<script"), 2);
	assert_null(strstr(html, "http://") == NULL ? NULL : strstr(html, "src=\"http"));
	strbuf_release(&want);
	free(css);
	free(js);

	/* The JSON block parses and holds every node. */
	char *data =
	    between(html, "<script type=\"application/json\" id=\"aicprof-data\">", "</script>");
	assert_non_null(data);
	cJSON *d = cJSON_Parse(data);
	assert_non_null(d);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "nodes")), 18);
	cJSON_Delete(d);
	free(data);

	char *dot = read_out(dir, "graph.dot");
	assert_non_null(dot);
	assert_non_null(strstr(dot, "digraph"));
	assert_non_null(strstr(dot, "cluster_1"));
	assert_non_null(strstr(dot, "cluster_2"));
	char *svg = read_out(dir, "graph.svg");
	assert_non_null(svg);
	assert_non_null(strstr(svg, "<svg"));
	free(dot);
	free(svg);
	free(html);
	cleanup_dir(dir);
}

static void test_perfetto(void **state)
{
	char *dir = setup_dir("small.json", 0);
	assert_int_equal(report_write_all(dir), 0);
	char *text = read_out(dir, "trace.perfetto.json");
	char *sum = read_out(dir, "summary.json");
	cJSON *doc = cJSON_Parse(text), *s = cJSON_Parse(sum);
	assert_non_null(doc);
	assert_non_null(s);
	const cJSON *evs = cJSON_GetObjectItem(doc, "traceEvents"), *e;
	assert_true(cJSON_IsArray(evs));
	int x = 0, threads = 0, procs = 0;
	double last_end = 0;
	cJSON_ArrayForEach(e, evs)
	{
		const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
		assert_true(cJSON_IsNumber(cJSON_GetObjectItem(e, "pid")));
		assert_true(cJSON_IsNumber(cJSON_GetObjectItem(e, "tid")));
		assert_true(cJSON_IsString(cJSON_GetObjectItem(e, "name")));
		if (!strcmp(ph, "X")) {
			double ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
			double dur = cJSON_GetObjectItem(e, "dur")->valuedouble;
			assert_true(ts >= 0 && dur >= 0);
			last_end = ts + dur > last_end ? ts + dur : last_end;
			assert_true(cJSON_IsObject(cJSON_GetObjectItem(e, "args")));
			x++;
		} else if (!strcmp(ph, "M")) {
			const char *n = cJSON_GetObjectItem(e, "name")->valuestring;
			threads += !strcmp(n, "thread_name");
			procs += !strcmp(n, "process_name");
		}
	}
	const cJSON *tl = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "timeline"), "events");
	assert_int_equal(x, cJSON_GetArraySize(tl));
	assert_int_equal(threads, 2); /* streams 7 and 13 */
	assert_int_equal(procs, 1);
	assert_true(last_end > 500 && last_end < 700); /* microseconds, one step */
	assert_int_equal(cJSON_GetObjectItem(evs->child, "pid")->valueint, 48213);
	cJSON_Delete(doc);
	cJSON_Delete(s);
	free(text);
	free(sum);
	cleanup_dir(dir);
}

static void test_hostile(void **state)
{
	char *dir = setup_dir("hostile.json", 0);
	assert_int_equal(report_write_all(dir), 0);
	char *html = read_out(dir, "report.html");
	assert_non_null(html);
	/* The page's own two script elements, no other; nothing the data tried to add. */
	assert_int_equal(count(html, "<script"), 2);
	assert_int_equal(count(html, "</script"), 2);
	assert_int_equal(count(html, "<style"), 1);
	assert_int_equal(count(html, "</style"), 1);
	assert_null(strstr(html, "<injected"));
	assert_null(strstr(html, "<img"));
	assert_null(strstr(html, "<a href=\"javascript"));
	assert_null(strstr(html, "href=\"javascript"));
	assert_false(bad_tag(html, "data-pwned"));
	assert_true(bad_tag("<p>ok</p><img src=x onerror=alert(1)>", "none")); /* can fail */
	assert_true(bad_tag("<a href=\"javascript:alert(1)\">", "none"));
	assert_true(bad_tag("<b data-pwned=\"1\">", "data-pwned"));
	assert_false(bad_tag("<a title=\"javascript: onerror=\" href=\"#x\">", "none"));
	assert_non_null(strstr(html, "&lt;injected-el&gt;"));
	/* The data block: no raw <, > or & inside it. */
	char *data = between(html, "id=\"aicprof-data\">", "</script>");
	assert_non_null(data);
	assert_null(strpbrk(data, "<>&"));
	cJSON *d = cJSON_Parse(data);
	assert_non_null(d);
	cJSON_Delete(d);
	free(data);
	/* The graph: labels escaped by Graphviz. */
	char *svg = read_out(dir, "graph.svg");
	assert_null(strstr(svg, "<script"));
	assert_null(strstr(svg, "<injected"));
	assert_null(strstr(svg, "<style"));
	/* The Perfetto export stays valid JSON and keeps the names as data. */
	char *pf = read_out(dir, "trace.perfetto.json");
	cJSON *p = cJSON_Parse(pf);
	assert_non_null(p);
	assert_non_null(strstr(pf, "</script><injected-el>copy"));
	cJSON_Delete(p);
	free(pf);
	free(svg);
	free(html);
	cleanup_dir(dir);
}

/* Summaries that lib/summary.c accepts but that lack what the report draws, or hold the wrong
 * types where its schema does not look: the report says "unknown" and never crashes. What the
 * schema covers (ids, counts, the lists' types) is refused before the report sees it. */
static void test_missing_and_wrong_types(void **state)
{
	static const char *refused[] = {
	    "{}",
	    "{\"nodes\": []}",
	    "{\"format\":1,\"nodes\":[1,\"x\"],\"edges\":\"no\",\"candidates\":{}}",
	    "{\"format\":1,\"nodes\":[{\"median_us\":\"slow\",\"id\":\"7\"}]}",
	    "{\"format\":1,\"nodes\":[{\"id\":0,\"median_us\":1e308}]}",
	    "{\"format\":1,\"candidates\":[{\"nodes\":[0,\"a\"]},7]}",
	    /* the lists whose elements the report converts (fuzz-summary found the report
	     * converting unchecked fields): a list of the wrong elements is refused */
	    "{\"format\":1,\"nodes\":[],\"timeline\":{\"events\":[7]}}",
	    "{\"format\":1,\"nodes\":[],\"ledger\":{\"values\":[1]}}",
	    "{\"format\":1,\"nodes\":[],\"ledger\":{\"by_family\":[5]}}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		char tmpl[] = "/tmp/aicprof-report-XXXXXX";
		char *dir = mkdtemp(tmpl);
		assert_non_null(dir);
		char *p = path_join(dir, "summary.json");
		spit(p, refused[i]);
		free(p);
		assert_int_equal(report_write_all(dir), -1);
		char *html = path_join(dir, "report.html");
		assert_int_equal(access(html, F_OK), -1); /* nothing written */
		free(html);
		cleanup_dir(xstrdup(dir));
	}
	static const char *cases[] = {
	    "{\"format\": 1}",
	    "{\"format\": 1, \"nodes\": []}",
	    "{\"format\":1,\"nodes\":[{\"name\":5,\"id\":7},"
	    "{\"id\":3,\"sources\":[1],\"site\":\"no\"}],\"edges\":[],\"candidates\":[],"
	    "\"rejected\":[7],\"steps\":{},\"device\":{\"peak_tflops\":[1,2]},"
	    "\"ledger\":{\"values\":[{\"readers\":\"x\"}],\"by_source\":[{\"source\":3}],"
	    "\"by_family\":[{\"family\":5}]},\"timeline\":{\"events\":[{\"start_us\":\"x\"},"
	    "{\"start_us\":1,\"dur_us\":-5,\"node\":99}]},\"traces\":[{\"warnings\":[1]}]}",
	    "{\"format\":1,\"nodes\":[{\"id\":0,\"median_us\":1e14,\"bytes_read\":-1},{\"id\":0}],"
	    "\"edges\":[{\"from\":0,\"to\":0},{\"from\":0,\"to\":99}],"
	    "\"candidates\":[{\"id\":0,\"kind\":\"x\",\"nodes\":[0,0,5],"
	    "\"time_saved_us_per_step\":-3}],"
	    "\"steps\":{\"median_us\":0}}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char tmpl[] = "/tmp/aicprof-report-XXXXXX";
		char *dir = mkdtemp(tmpl);
		assert_non_null(dir);
		char *p = path_join(dir, "summary.json");
		spit(p, cases[i]);
		free(p);
		assert_int_equal(report_write_all(dir), 0);
		char *html = read_out(dir, "report.html");
		assert_non_null(html);
		assert_non_null(strstr(html, "</html>"));
		assert_non_null(strstr(html, "class=\"unk\">unknown"));
		if (i < 3)
			assert_non_null(strstr(html, "This summary.json does not give"));
		char *pf = read_out(dir, "trace.perfetto.json");
		cJSON *j = cJSON_Parse(pf);
		assert_non_null(j);
		cJSON_Delete(j);
		free(pf);
		free(html);
		cleanup_dir(xstrdup(dir));
	}
}

static void test_bad_json(void **state)
{
	char tmpl[] = "/tmp/aicprof-report-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	char *p = path_join(dir, "summary.json");
	spit(p, "{\n \"format\": 1,\n \"nodes\": [ {\"id\": 0,,} ]\n}\n");
	/* The error names the file and the line; capture stderr to check. */
	char *errpath = path_join(dir, "err.txt");
	fflush(stderr);
	int saved = dup(2);
	FILE *ef = freopen(errpath, "w", stderr);
	assert_non_null(ef);
	int r = report_write_all(dir);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	assert_int_equal(r, -1);
	char *err = slurp(errpath);
	assert_non_null(err);
	assert_non_null(strstr(err, "summary.json:3:"));
	free(err);
	unlink(errpath);
	free(errpath);
	char *html = path_join(dir, "report.html");
	assert_int_equal(access(html, F_OK), -1); /* nothing written */
	free(html);
	free(p);
	/* No summary at all. */
	cleanup_dir(xstrdup(dir));
	assert_int_equal(report_write_all("/nonexistent-aicprof-dir"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escaping),
	    cmocka_unit_test(test_small),
	    cmocka_unit_test(test_perfetto),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_missing_and_wrong_types),
	    cmocka_unit_test(test_bad_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
