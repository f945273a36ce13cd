/*
 * fuzz-summary.c - fuzz target for the one reader of summary.json (lib/summary.c) and what its
 * consumers do with a tree it accepted, without Graphviz (fuzz-report lays every input out and
 * so runs at a few dozen inputs a second; this target runs thousands). The input is written as
 * a scratch summary.json and read with summary_read_kind() as a run summary and as a rank
 * summary (the job view's rank-R.json). A run summary it accepts is then built into the
 * report's model, its step graphs (whole and folded, top-N), the page with no drawing and the
 * Perfetto trace, all into memory; and every candidate's "group" goes through fusion's parser,
 * as `aicprof fuse` does. The reader's promise is that whatever it accepts every consumer can
 * convert without undefined behaviour: a sanitizer report past the check is a finding in the
 * reader's table or in the consumer.
 */
#include "tests/fuzz/fuzz.h"
#include "fusion/fusion.h"
#include "lib/summary.h"
#include "lib/util.h"
#include "report/graph.h"
#include "report/html.h"
#include "report/model.h"
#include "report/perfetto.h"

#include <stdio.h>
#include <stdlib.h>

static void consume(cJSON *root, const char *dir)
{
	struct rmodel m;
	rmodel_init(&m, root);
	struct gview all, top;
	gview_build_folded(&all, &m, 0.01, 0, 1);
	gview_build(&top, &m, 0.01, 30);
	struct strbuf sb = STRBUF_INIT;
	struct html_input in = {.m = &m, .summary_dir = dir, .all = &all, .top = &top};
	html_write(&in, &sb);
	strbuf_reset(&sb);
	perfetto_write(&m, &sb);
	strbuf_release(&sb);
	gview_release(&top);
	gview_release(&all);
	rmodel_release(&m);

	const cJSON *cands = cJSON_GetObjectItemCaseSensitive(root, "candidates"), *c;
	int i = 0;
	cJSON_ArrayForEach(c, cands)
	{
		const cJSON *grp = cJSON_GetObjectItemCaseSensitive(c, "group");
		if (!cJSON_IsObject(grp) || i++ > 64)
			continue;
		struct fgroup g;
		struct strbuf err = STRBUF_INIT;
		char name[32];
		snprintf(name, sizeof(name), "g%d", i);
		if (fgroup_parse(grp, "summary.json", name, &g, &err) == 0) {
			free(fgroup_key(&g));
			(void)fgroup_bytes_fused(&g);
			fgroup_release(&g);
		}
		strbuf_release(&err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_dir(), *path = fuzz_summary(data, size);
	struct strbuf err = STRBUF_INIT;
	cJSON *rank = summary_read_kind(path, SUMMARY_RANK, &err);
	cJSON_Delete(rank);
	strbuf_reset(&err);
	cJSON *root = summary_read_kind(path, SUMMARY_RUN, &err);
	strbuf_release(&err);
	if (root)
		consume(root, dir);
	cJSON_Delete(root);
	return 0;
}
