/*
 * findings.c - what the report says of each finding beside its figures: its number (the one
 * summary.json, the report and `aicprof fuse` share), whether it is shown in full or in the
 * collapsed table and why, and what to do about it, said exactly as `aicprof fuse` will act:
 * a generated kernel only where the group parses as fuse parses it (fgroup_parse(),
 * fusion/group.c, the same check), a library form, or advice with the reason; host syncs,
 * dead and unchanging work get their own remedies, never "generate with aicprof fuse".
 */
#include "report/findings.h"
#include "fusion/fusion.h"

#include <stdio.h>
#include <string.h>

#define H(o, s) strbuf_add_html((o), (s))

/*
 * Why finding c is listed only in the collapsed table, or NULL when it is shown in full: its
 * claim is unproven (summary "proven" false), it is not actionable from the source, or it
 * saves under 1 µs (kernel time and step time) and under 1 MiB of traffic a step.
 */
const char *finding_minor(const cJSON *c)
{
	const char *kind = jstr(c, "kind");
	if (kind && !strcmp(kind, "memory"))
		return "the memory plan (Beyond fusion) has it";
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "proven")))
		return "unproven: see its evidence";
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(jobj(c, "evidence"), "actionable")))
		return "not actionable from the source";
	double ks = jnumd(c, "kernel_saved_us", jnumd(c, "time_saved_us_per_step", 0));
	double ss = jnumd(c, "time_saved_us_per_step", 0), b = jnumd(c, "bytes_saved_per_step", 0);
	if (ks < 1 && ss < 1 && b < 1048576)
		return "under 1 µs and 1 MiB a step";
	return NULL;
}

/* The finding's number: summary.json's "number" (its rank there), else its place here. */
int finding_number(const cJSON *c, int k)
{
	double d;
	return jnum(c, "number", &d) && d >= 1 ? (int)d : k + 1;
}

/*
 * What `aicprof fuse` does for finding c, said exactly: a generated kernel only where the
 * group parses as fuse parses it (fgroup_parse(), fusion/group.c), else advice with the reason.
 */
void finding_todo(struct strbuf *o, const cJSON *c, int num)
{
	const char *kind = jstr(c, "kind"), *tk = jstr(c, "time_kind");
	const cJSON *ev = jobj(c, "evidence");
	if (tk && !strcmp(tk, "host-blocked")) {
		strbuf_adds(o, "remove or defer the host sync at ");
		H(o, cJSON_IsString(cJSON_GetArrayItem(jarr(c, "sources"), 0))
		         ? cJSON_GetArrayItem(jarr(c, "sources"), 0)->valuestring
		         : "its line");
		if (jnumd(c, "time_saved_us_per_step", 0) < 1)
			strbuf_adds(
			    o, " only if the host has other work: the GPU stays busy through "
			       "it (the host waits on queued work), so the step does not "
			       "shrink; advice only: <code>aicprof fuse</code> generates nothing "
			       "for it");
		else
			strbuf_adds(
			    o, " (read the value every N steps, or copy it asynchronously to "
			       "pinned memory and read it later) so the GPU keeps working; "
			       "advice only: <code>aicprof fuse</code> generates nothing for it");
		return;
	}
	if (kind &&
	    (!strcmp(kind, "dead") || !strcmp(kind, "invariant") || !strcmp(kind, "memory"))) {
		if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(ev, "actionable"))) {
			strbuf_adds(o, "nothing to change in the source");
			if (jstr(ev, "not_actionable")) {
				strbuf_adds(o, " (");
				H(o, jstr(ev, "not_actionable"));
				strbuf_adds(o, ")");
			}
			strbuf_adds(o, "; <code>aicprof fuse</code> generates nothing for it");
			return;
		}
		if (!strcmp(kind, "dead"))
			strbuf_adds(o, "remove the write at its source line");
		else if (!strcmp(kind, "invariant"))
			strbuf_adds(o, "compute it once before the loop and keep it");
		else
			strbuf_adds(o, "free the values at their last use");
		if (ev && strcmp(kind, "memory") &&
		    cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "proven")))
			strbuf_adds(o, ", once its evidence (Beyond fusion) is confirmed");
		if (!strcmp(kind, "dead"))
			strbuf_adds(o,
			            "; <code>aicprof fuse</code> generates no kernel for it (its "
			            "patch removes the statement where the line is a one-line "
			            "assignment whose name is not used elsewhere)");
		else
			strbuf_adds(o, "; advice only: <code>aicprof fuse</code> generates nothing "
			               "for it");
		return;
	}
	const cJSON *grp = cJSON_GetObjectItemCaseSensitive(c, "group");
	if (!grp || cJSON_IsNull(grp)) {
		strbuf_adds(o, "advice only: <code>aicprof fuse</code> does not generate it");
		if (jstr(c, "group_why")) {
			strbuf_adds(o, ": ");
			H(o, jstr(c, "group_why"));
		}
		return;
	}
	struct fgroup g;
	struct strbuf err = STRBUF_INIT;
	char name[32];
	snprintf(name, sizeof(name), "c%d", num);
	if (fgroup_parse(grp, "summary.json", name, &g, &err)) {
		strbuf_adds(o, "advice only: <code>aicprof fuse</code> refuses the group: ");
		H(o, err.buf);
	} else {
		fgroup_release(&g);
		strbuf_addf(o,
		            "<code>aicprof fuse</code> generates a fused kernel for it "
		            "(finding #%d), checked against the unfused sequence",
		            num);
	}
	strbuf_release(&err);
}

void finding_package(struct strbuf *o, const cJSON *functions, const cJSON *c)
{
	const cJSON *ms = jobj(c, "model_site");
	const char *file = jstr(ms, "file"), *func = jstr(ms, "func");
	if (!cJSON_IsArray(functions) || !file || !func)
		return;
	const cJSON *f;
	cJSON_ArrayForEach(f, functions)
	{
		const char *ff = jstr(f, "file"), *fn = jstr(f, "func");
		if (!ff || !fn || strcmp(ff, file) || strcmp(fn, func))
			continue;
		const cJSON *b = jobj(f, "binding");
		const char *mod = jstr(b, "module"), *qn = jstr(b, "qualname");
		const char *form = jstr(f, "form");
		strbuf_adds(o, "; the whole function <code>");
		if (mod && qn) {
			H(o, mod);
			strbuf_adds(o, ".");
			H(o, qn);
		} else {
			H(o, fn);
		}
		strbuf_adds(
		    o, "</code> is replaced at run time by <code>aicprof_fused.apply()</code> (");
		if (form && !strcmp(form, "sdpa"))
			strbuf_adds(o, "the library's scaled_dot_product_attention form");
		else if (form && !strcmp(form, "rotary"))
			strbuf_adds(o,
			            "the package's rotary kernel, q and k in one launch and their "
			            "backward in one more");
		else if (form && !strcmp(form, "gated"))
			strbuf_adds(o,
			            "its projections as they are, the activation and the product "
			            "in one generated kernel, with its backward");
		else
			strbuf_adds(o, "one generated kernel for every call, with its backward");
		strbuf_adds(o, ", checked against the original on first use), the two lines "
		               "<code>aicprof.patch</code> adds to the program's script");
		return;
	}
}
