/*
 * fuzz-analyze.c - fuzz target for the trace reader and the whole analysis: the input is a
 * trace file; it is written to a scratch file and given to analysis_run() (trace.c, graph.c,
 * ledger.c, candidates.c), and a model that comes back is turned into summary.json's cJSON tree
 * (summary.c). Errors are the expected outcome for most inputs; crashes, sanitizer reports,
 * leaks and hangs are the findings.
 */
#include "tests/fuzz/fuzz.h"
#include "analyzer/model.h"
#include "lib/util.h"

#include <cJSON.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *path;
	if (!path)
		path = path_join(fuzz_dir(), "t.aicp.jsonl");
	util_quiet = 1;
	fuzz_write(path, data, size);
	struct model *m = analysis_run(&path, 1);
	if (m) {
		cJSON *j = summary_json(m);
		char *s = cJSON_PrintUnformatted(j);
		free(s);
		cJSON_Delete(j);
		model_free(m);
	}
	return 0;
}
