/*
 * fuzz-report.c - fuzz target for the report: the input is a summary.json; it is written into
 * a scratch directory and report_write_all() reads it and writes report.html, graph.dot,
 * graph.svg and trace.perfetto.json beside it (Graphviz's layout included). The target then
 * checks that nothing but those five names is in the directory: a summary must never make the
 * report write anywhere else.
 */
#include "tests/fuzz/fuzz.h"
#include "lib/util.h"
#include "report/report.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/*
 * Graphviz 2.42's layout and its pango/fontconfig text sizing leak memory of their own on every
 * layout (as tests/unit/test-report.c says); allocations made inside those libraries, and only
 * there, are not reported, so the report's own leaks still are.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libgvc.so\nleak:libgvplugin_dot_layout.so\nleak:libgvplugin_pango.so\n"
	       "leak:libfontconfig.so\n"
	       "leak:libpangoft2-1.0.so\nleak:libpango-1.0.so\nleak:libglib-2.0.so\n";
}

static const char *const allowed[] = {"summary.json", "report.html",   "graph.dot",
                                      "graph.svg",    "graph-all.svg", "trace.perfetto.json"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_dir();
	fuzz_summary(data, size);
	report_write_all(dir);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int ok = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
		for (size_t i = 0; i < ARRAY_SIZE(allowed) && !ok; i++)
			ok = !strcmp(e->d_name, allowed[i]);
		if (!ok)
			BUG("the report wrote '%s/%s'", dir, e->d_name);
	}
	if (d)
		closedir(d);
	return 0;
}
