/*
 * fuzz-fuse.c - fuzz target for fusion's group parser and code generation: the input is one
 * group description (JSON, as in summary.json's candidates[].group or a group file); when
 * fgroup_parse() accepts it, every emitter runs on it into memory (math, kernel, binding,
 * module, bench, CPU check, meta) with the key and byte counts. A group the parser accepts
 * must be one every emitter can handle: a BUG() there is a finding.
 */
#include "tests/fuzz/fuzz.h"
#include "fusion/fusion.h"

#include <cJSON.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *j = cJSON_ParseWithLength((const char *)data, size);
	if (!j)
		return 0;
	struct fgroup g;
	struct strbuf err = STRBUF_INIT, sb = STRBUF_INIT;
	if (fgroup_parse(j, "fuzz.json", "fuzz", &g, &err) == 0) {
		void (*emit[])(struct strbuf *, const struct fgroup *) = {
		    emit_math,  emit_kernel,   emit_binding, emit_module,
		    emit_bench, emit_cpucheck, emit_meta};
		for (size_t i = 0; i < ARRAY_SIZE(emit); i++) {
			strbuf_reset(&sb);
			emit[i](&sb, &g);
		}
		free(fgroup_key(&g));
		(void)fgroup_max_vec(&g);
		(void)fgroup_bytes_fused(&g);
		(void)fgroup_bytes_unfused(&g);
		fgroup_release(&g);
	}
	strbuf_release(&sb);
	strbuf_release(&err);
	cJSON_Delete(j);
	return 0;
}
