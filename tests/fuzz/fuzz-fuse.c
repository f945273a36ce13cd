/*
 * fuzz-fuse.c - fuzz target for fusion's group parser and code generation: the input is one
 * group description (JSON, as in summary.json's candidates[].group or a group file); when
 * fgroup_parse() accepts it, every emitter runs on it into memory (math, kernel, binding,
 * module, bench, CPU check, meta, the C ABI) with the key and byte counts, and, where a row
 * group has a fused backward (fgroup_row_backward), on its row and column groups too (math,
 * kernel, CPU checks). A group the parser accepts must be one every emitter can handle: a
 * BUG() there is a finding.
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
		    emit_math,     emit_kernel, emit_binding, emit_module, emit_bench,
		    emit_cpucheck, emit_meta,   emit_capi_h,  emit_capi};
		for (size_t i = 0; i < ARRAY_SIZE(emit); i++) {
			strbuf_reset(&sb);
			emit[i](&sb, &g);
		}
		struct fgroup b, c;
		int grad_of[64];
		if (g.kind == FG_ROW && !fgroup_row_backward(&g, &b, &c, grad_of, &err)) {
			void (*bemit[])(struct strbuf *, const struct fgroup *) = {
			    emit_math, emit_kernel, emit_cpucheck};
			for (size_t i = 0; i < ARRAY_SIZE(bemit); i++) {
				strbuf_reset(&sb);
				bemit[i](&sb, &b);
				if (c.nops) {
					strbuf_reset(&sb);
					bemit[i](&sb, &c);
				}
			}
			strbuf_reset(&sb);
			emit_bwd_cpucheck(&sb, &b, &g, grad_of);
			fgroup_release(&b);
			fgroup_release(&c);
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
