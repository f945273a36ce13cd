/*
 * fuzz-analyze.c - fuzz target for the trace reader and the whole analysis: the input is a
 * trace file; it is written to a scratch file and given to analysis_run() (trace.c, graph.c,
 * ledger.c, candidates.c), and a model that comes back is turned into summary.json's cJSON tree
 * (summary.c) and written as summary.json by summary_write(), which streams it member by
 * member: the file must be, byte for byte, cJSON_Print of the tree and a newline (a BUG()
 * otherwise). Errors are the expected outcome for most inputs; crashes, sanitizer reports,
 * leaks, hangs and a streamed summary that differs from the tree are the findings.
 */
#include "tests/fuzz/fuzz.h"
#include "analyzer/model.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *path, *out;
	if (!path) {
		path = path_join(fuzz_dir(), "t.aicp.jsonl");
		out = path_join(fuzz_dir(), "summary.json");
	}
	util_quiet = 1;
	fuzz_write(path, data, size);
	struct model *m = analysis_run(&path, 1);
	if (m) {
		cJSON *j = summary_json(m);
		char *s = cJSON_Print(j);
		cJSON_Delete(j);
		if (summary_write(m, out) == 0) {
			FILE *f = fopen(out, "rb");
			struct strbuf sb = STRBUF_INIT;
			char buf[65536];
			size_t n;
			while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
				strbuf_add(&sb, buf, n);
			if (f)
				fclose(f);
			size_t len = strlen(s);
			if (sb.len != len + 1 || memcmp(sb.buf, s, len) || sb.buf[len] != '\n')
				BUG("summary_write's text differs from the tree's (%zu vs %zu "
				    "bytes)",
				    sb.len, len + 1);
			strbuf_release(&sb);
		}
		free(s);
		model_free(m);
	}
	return 0;
}
