/*
 * cmd-fuse.c - `aicprof fuse`: generates the fused kernels of an analysis.
 *
 *   aicprof fuse OUTDIR -o FUSEDDIR            candidates of OUTDIR/summary.json
 *   aicprof fuse --group G.json... -o FUSEDDIR one or more group descriptions
 *
 * Every candidate ends up in FUSEDDIR/README.md, either generated (its files under
 * FUSEDDIR/<name>/, see fusion_write_group) or as advice: the library's fused form where the
 * analyzer named one, no group description, or a group the generator does not support (with
 * the parser's message). Nothing is skipped silently. FUSEDDIR/groups.json lists the generated
 * groups for `aicprof bench`. With --group, a bad description is an error and nothing is
 * written; from a summary, it is advice. OUTDIR/summary.json is read and checked by
 * summary_read(): a file that is not a summary is refused by name.
 *
 * The summary's function groups ("functions", analyzer/funcgroup.c) become the package
 * FUSEDDIR/aicprof_fused/: __init__.py (fusion/emit-pkg.c: apply(), applied(), counts()) and
 * each fused function's group files under aicprof_fused/<name>/; a function whose group does
 * not parse is advice. The patch adds the package and the two lines that call apply().
 *
 * Where the summary's time model says the captured step is host-bound (GPU busy under half of
 * it, as the report's lead decides), the output's `step` line and a README paragraph say that
 * the kernels' savings mostly do not shorten the step, with the model's busy, gap and
 * end-to-end figures, and what the GPU findings' kernel_saved_us take off the GPU's busy time
 * (capped at it): the part that shows where a larger batch makes the GPU bound the step. The
 * last line is the coverage figure.
 */
#include "aicprof.h"
#include "fusion/fusion.h"
#include "lib/json.h"
#include "lib/parseopt.h"
#include "lib/summary.h"

#include <ctype.h>
#include <math.h>
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "lib/lock.h"

struct fuse_entry {
	char *name;   /* generated group, or NULL for advice */
	long cand;    /* candidate id, -1 with --group */
	long num;     /* the finding's number (summary.json "number", the report's #), -1 */
	char *advice; /* why not generated */
	char *sources;
	struct fgroup g;
	struct patch_group pg; /* the patch's result for a generated group */
	double bytes;          /* the finding's bytes_saved_per_step */
	int cov;               /* an elementwise or reduction finding with no library form */
	int pos;               /* its index in the summary's candidates, -1 with --group */
	char *mfile, *mfunc;   /* its model line's file and function (owned), or NULL */
};

/* A function of the summary's "functions" for the package. */
struct fuse_fn {
	struct pkg_func pf; /* its strings point into spec */
	cJSON *spec;        /* its summary entry (owned) */
	struct fgroup g;    /* fused: the parsed group */
	const char **kind;  /* fused: per group input */
	char *advice;       /* why it is not in the package, or NULL */
};

struct fuse_run {
	struct fuse_entry *e;
	int nr, alloc;
	struct fuse_fn *fn;
	int nfn;
	char *pkg_where, *pkg_advice; /* the patch's two lines: where, or why not */
	struct patch_lib *libs;       /* library forms and dead statements the patch handled */
	int nlibs;
	int notfusion[3]; /* dead, invariant, memory candidates: the report's, not fuse's */
	long *ids, *nums; /* every candidate's id and number in the summary */
	int nids;
	/* the summary's time model: the captured step, the GPU's busy time in it, the launch
	 * gaps, and the findings' saving on the step's critical path (all µs; step 0: none) */
	double step_us, busy_us, gap_us, promised_us;
	/* what the findings take off the GPU's busy time (summary_gpu_saved()): all of it, the
	 * library forms' part and the generated kernels' part (µs) */
	double gpu_all_us, gpu_lib_us, gpu_gen_us;
};

static void add_entry(struct fuse_run *r, struct fuse_entry *e)
{
	ALLOC_GROW(r->e, r->nr, r->alloc);
	r->e[r->nr++] = *e;
}

/* The number of the finding whose candidate id is cand (its id where none is listed). */
static long num_of(const struct fuse_run *r, long cand)
{
	for (int i = 0; i < r->nids; i++)
		if (r->ids[i] == cand)
			return r->nums[i];
	return cand;
}

static char *join_sources(const cJSON *c)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "sources"), *x;
	struct strbuf sb = STRBUF_INIT;
	cJSON_ArrayForEach(x, s)
	{
		if (cJSON_IsString(x))
			strbuf_addf(&sb, "%s%s", sb.len ? ", " : "", x->valuestring);
	}
	strbuf_add(&sb, "", 0);
	return sb.buf;
}

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* Whether s is a Python identifier of at most 128 characters (a class name). */
static int valid_class(const char *s)
{
	if (!s || !*s || strlen(s) > 128 || isdigit((unsigned char)*s))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* The summary's function groups (j's "functions") into run->fn: each in the package, or
 * advice when its entry or group does not parse. */
static void functions_from(const cJSON *j, const char *path, struct fuse_run *run)
{
	const cJSON *fs = cJSON_GetObjectItemCaseSensitive(j, "functions"), *f;
	int i = 0;
	cJSON_ArrayForEach(f, fs)
	{
		run->fn = xrealloc(run->fn, sizeof(*run->fn) * (run->nfn + 1));
		struct fuse_fn *x = &run->fn[run->nfn++];
		memset(x, 0, sizeof(*x));
		x->spec = cJSON_Duplicate(f, 1);
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(x->spec, "binding");
		const cJSON *ln = cJSON_GetObjectItemCaseSensitive(x->spec, "line");
		const cJSON *inv = cJSON_GetObjectItemCaseSensitive(x->spec, "invocations");
		x->pf.form = str_of(x->spec, "form");
		x->pf.module = str_of(b, "module");
		x->pf.qualname = str_of(b, "qualname");
		x->pf.file = str_of(x->spec, "file");
		x->pf.line = cJSON_IsNumber(ln) ? ln->valueint : 0;
		x->pf.invocations = cJSON_IsNumber(inv) ? inv->valueint : 0;
		x->pf.act_class = str_of(b, "act_class");
		int gated = x->pf.form && !strcmp(x->pf.form, "gated");
		struct strbuf msg = STRBUF_INIT;
		if (!x->pf.form || !x->pf.module || !x->pf.qualname ||
		    (strcmp(x->pf.form, "fused") && strcmp(x->pf.form, "sdpa") &&
		     strcmp(x->pf.form, "rotary") && !gated)) {
			strbuf_addf(&msg, "%s: functions[%d]: no form, module or qualname", path,
			            i);
		} else if (gated && !valid_class(x->pf.act_class)) {
			strbuf_addf(&msg,
			            "%s: functions[%d].binding.act_class: not a Python class name",
			            path, i);
		} else if (strcmp(x->pf.form, "sdpa") && strcmp(x->pf.form, "rotary")) {
			char where[128], name[32];
			snprintf(where, sizeof(where), "%s: functions[%d].group", path, i);
			snprintf(name, sizeof(name), "f%d", i);
			struct strbuf err = STRBUF_INIT;
			const cJSON *grp = cJSON_GetObjectItemCaseSensitive(x->spec, "group");
			if (fgroup_parse(grp, where, name, &x->g, &err)) {
				strbuf_addf(&msg, "%s", err.buf);
			} else if (fgroup_mapped(&x->g)) {
				strbuf_addf(&msg,
				            "%s: an input is read through an index map, which the "
				            "package does not bind to a call's tensors",
				            where);
			} else {
				const cJSON *ins = cJSON_GetObjectItemCaseSensitive(b, "inputs");
				x->kind = xcalloc(x->g.ninputs ? x->g.ninputs : 1, sizeof(char *));
				for (int k = 0; k < x->g.ninputs && !msg.len; k++) {
					const char *kd = str_of(cJSON_GetArrayItem(ins, k), "kind");
					const char *want = gated ? (k ? "up" : "gate") : NULL;
					if (gated
					        ? !kd || strcmp(kd, want)
					        : !kd || (strcmp(kd, "arg") && strcmp(kd, "param")))
						strbuf_addf(&msg,
						            "%s: functions[%d].binding.inputs[%d]: "
						            "kind is not %s",
						            path, i, k,
						            gated ? (k ? "\"up\"" : "\"gate\"")
						                  : "\"arg\" or \"param\"");
					x->kind[k] = kd;
				}
				if (!msg.len && gated && (x->g.ninputs != 2 || x->g.nwrites != 1))
					strbuf_addf(
					    &msg,
					    "%s: functions[%d].group: the gated form takes two "
					    "inputs (gate, up) and writes one value",
					    path, i);
			}
			strbuf_release(&err);
		}
		if (msg.len)
			x->advice = msg.buf;
		i++;
	}
	for (int k = 0; k < run->nfn; k++) /* run->fn moved while it grew */
		if (run->fn[k].kind) {
			run->fn[k].pf.g = &run->fn[k].g;
			run->fn[k].pf.kind = run->fn[k].kind;
		}
}

/* Candidates of a summary: each generated or advice. Returns 0, or -1 when unreadable. */
static int from_summary(const char *outdir, struct fuse_run *run)
{
	char *path = path_join(outdir, "summary.json");
	cJSON *j = summary_read(path); /* candidates[] with integer ids and string kinds */
	if (!j) {
		free(path);
		return -1;
	}
	const cJSON *cands = jarr(j, "candidates"), *c;
	int i = 0, ncomm = 0, comm_seen = 0;
	cJSON_ArrayForEach(c, cands)
	{
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(c, "kind");
		ncomm += cJSON_IsString(k) && !strcmp(k->valuestring, "comm-overlap");
	}
	cJSON_ArrayForEach(c, cands)
	{
		struct fuse_entry e = {0};
		int64_t id;
		e.cand = json_get_int64(c, "id", 0, INT32_MAX, &id) == JSON_OK ? (long)id : i;
		e.num =
		    json_get_int64(c, "number", 1, INT32_MAX, &id) == JSON_OK ? (long)id : e.cand;
		run->ids = xrealloc(run->ids, sizeof(long) * (size_t)(run->nids + 1));
		run->nums = xrealloc(run->nums, sizeof(long) * (size_t)(run->nids + 1));
		run->ids[run->nids] = e.cand;
		run->nums[run->nids++] = e.num;
		e.sources = join_sources(c);
		const cJSON *lib = cJSON_GetObjectItemCaseSensitive(c, "library_form");
		const cJSON *grp = cJSON_GetObjectItemCaseSensitive(c, "group");
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(c, "kind");
		const char *ks = cJSON_IsString(kind) ? kind->valuestring : "?";
		const cJSON *bs = cJSON_GetObjectItemCaseSensitive(c, "bytes_saved_per_step");
		e.bytes = cJSON_IsNumber(bs) && bs->valuedouble > 0 ? bs->valuedouble : 0;
		e.pos = i;
		e.cov = (!strcmp(ks, "elementwise-chain") || !strcmp(ks, "reduction-epilogue")) &&
		        !(cJSON_IsString(lib) && *lib->valuestring);
		if (e.cov) {
			const cJSON *ms = cJSON_GetObjectItemCaseSensitive(c, "model_site");
			const char *mf = str_of(ms, "file"), *mu = str_of(ms, "func");
			if (mf && mu) {
				e.mfile = xstrdup(mf);
				e.mfunc = xstrdup(mu);
			}
		}
		struct strbuf msg = STRBUF_INIT;
		int nf = -1;
		for (int k = 0; k < 3; k++)
			if (!strcmp(ks, summary_notfusion_kinds[k]))
				nf = k;
		if (nf >= 0) {
			/* not a fusion group: counted once, the report has them */
			run->notfusion[nf]++;
			free(e.sources);
			i++;
			continue;
		}
		if (!strcmp(ks, "comm-overlap") && comm_seen++) {
			free(e.sources); /* communication overlap: listed once, at the first */
			i++;
			continue;
		} else if (!strcmp(ks, "comm-overlap")) {
			strbuf_addf(
			    &msg,
			    "comm-overlap: not fusion (%d candidates: a change of schedule, "
			    "each in the report's job section): %s",
			    ncomm, cJSON_IsString(lib) ? lib->valuestring : "");
		} else if (cJSON_IsString(lib) && *lib->valuestring) {
			strbuf_addf(&msg, "%s: use the library's fused form: %s", ks,
			            lib->valuestring);
		} else if ((!grp || cJSON_IsNull(grp)) &&
		           cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "group_why"))) {
			strbuf_addf(&msg, "%s: not generated: %s", ks,
			            cJSON_GetObjectItemCaseSensitive(c, "group_why")->valuestring);
		} else if (!grp || cJSON_IsNull(grp)) {
			strbuf_addf(&msg,
			            "%s: no group description in the summary; nothing to "
			            "generate from",
			            ks);
		} else {
			char where[96], name[32];
			snprintf(where, sizeof(where), "%s: candidates[%d].group", path, i);
			snprintf(name, sizeof(name), "c%ld", e.num);
			struct strbuf err = STRBUF_INIT;
			if (fgroup_parse(grp, where, name, &e.g, &err))
				strbuf_addf(&msg, "%s: not generated: %s", ks, err.buf);
			else {
				const cJSON *tb =
				    cJSON_GetObjectItemCaseSensitive(c, "time_before_us");
				if (cJSON_IsNumber(tb) && e.g.recorded_before_us <= 0)
					e.g.recorded_before_us = tb->valuedouble;
				e.name = xstrdup(e.g.name);
			}
			strbuf_release(&err);
		}
		if (msg.len)
			e.advice = msg.buf;
		add_entry(run, &e);
		i++;
	}
	functions_from(j, path, run);
	const cJSON *tm = cJSON_GetObjectItemCaseSensitive(j, "time_model");
	double st = 0, bu = 0, ga = 0, pr = 0;
	if (tm && json_get_number(tm, "step_us", &st) == JSON_OK && st > 0 && isfinite(st) &&
	    json_get_number(tm, "busy_us", &bu) == JSON_OK && bu >= 0 && isfinite(bu)) {
		if (json_get_number(tm, "launch_gap_us", &ga) != JSON_OK || !(ga >= 0) ||
		    !isfinite(ga))
			ga = 0;
		if (json_get_number(tm, "promised_us", &pr) != JSON_OK || !(pr >= 0) ||
		    !isfinite(pr))
			pr = 0;
		run->step_us = st;
		run->busy_us = bu < st ? bu : st; /* as the report's lead clamps it */
		run->gap_us = ga < st ? ga : st;
		run->promised_us = pr < st ? pr : st;
		double *each = xcalloc((size_t)i + 1, sizeof(double));
		run->gpu_all_us = summary_gpu_saved(j, run->busy_us, &run->gpu_lib_us, each);
		for (int k = 0; k < run->nr; k++) /* the generated groups' part */
			if (run->e[k].name && run->e[k].pos >= 0 && run->e[k].pos < i)
				run->gpu_gen_us += each[run->e[k].pos];
		if (run->gpu_gen_us > run->gpu_all_us)
			run->gpu_gen_us = run->gpu_all_us;
		free(each);
	}
	cJSON_Delete(j);
	free(path);
	return 0;
}

/* Whether the captured step waits on the host more than on the GPU (the GPU busy under half
 * of it, the report's lead's test): then the kernels' savings mostly do not shorten it. */
static int host_bound(const struct fuse_run *run)
{
	return run->step_us > 0 && run->busy_us < 0.5 * run->step_us;
}

/* The host-bound note, said by fuse's output and the README alike: what the trace says the
 * generated kernels can give end to end. */
static void host_bound_note(struct strbuf *o, const struct fuse_run *run)
{
	strbuf_addf(o,
	            "the GPU is busy %.1f%% of the captured step (%.2f of %.2f ms; launch gaps "
	            "%.2f ms): the step waits on the host, so the kernels' savings mostly do not "
	            "shorten it; the time model bounds what the proven findings save end to end "
	            "at %.1f µs a step (the report's lead). What shortens such a step is "
	            "fewer launches: the library forms (a fused optimizer, SDPA) or CUDA graphs",
	            100 * run->busy_us / run->step_us, run->busy_us / 1000, run->step_us / 1000,
	            run->gap_us / 1000, run->promised_us);
	/* what the findings take off the GPU's own time: the part of the step they shorten
	 * where the GPU bounds it (a larger batch or sequence, the same launches); the report's
	 * lead says the same figure (lib/summary.c) */
	double all = run->gpu_all_us, gen = run->gpu_gen_us, lib = run->gpu_lib_us;
	if (all > 0 && run->busy_us > 0) {
		strbuf_addf(o,
		            ". Of the GPU's own %.2f ms a step, the findings take off %.2f ms "
		            "(%.0f%%; the generated kernels %.2f ms, the library forms %.2f ms): "
		            "that part shows end to end where the GPU bounds the step, at a larger "
		            "batch or sequence with the same launches",
		            run->busy_us / 1000, all / 1000, 100 * all / run->busy_us, gen / 1000,
		            lib / 1000);
	}
}

/* The patch of the generated groups of a summary's candidates (patch.c). */
static int patch_run(const char *outdir, const char *fused, const char *srcdir,
                     struct fuse_run *run)
{
	char *path = path_join(outdir, "summary.json");
	cJSON *j = summary_read(path);
	if (!j) {
		free(path);
		return -1;
	}
	free(path);
	const cJSON *cands = cJSON_GetObjectItemCaseSensitive(j, "candidates");
	struct patch_group *pg = xcalloc(run->nr ? run->nr : 1, sizeof(*pg));
	int n = 0, *at = xcalloc(run->nr ? run->nr : 1, sizeof(int));
	for (int i = 0; i < run->nr; i++) {
		if (!run->e[i].name)
			continue;
		const cJSON *c;
		cJSON_ArrayForEach(c, cands)
		{
			int64_t id;
			if (json_get_int64(c, "id", 0, INT32_MAX, &id) == JSON_OK &&
			    (long)id == run->e[i].cand)
				break;
		}
		if (!c)
			continue;
		pg[n].g = &run->e[i].g;
		pg[n].cand = c;
		at[n++] = i;
	}
	struct pkg_func *pf = xcalloc(run->nfn ? run->nfn : 1, sizeof(*pf));
	int npf = 0;
	for (int i = 0; i < run->nfn; i++)
		if (!run->fn[i].advice)
			pf[npf++] = run->fn[i].pf;
	int rc = patch_write(fused, j, srcdir, pg, n, pf, npf, &run->pkg_where, &run->pkg_advice,
	                     &run->libs, &run->nlibs);
	free(pf);
	for (int k = 0; k < n; k++)
		run->e[at[k]].pg = pg[k];
	free(pg);
	free(at);
	cJSON_Delete(j);
	return rc;
}

static void add_readme_group(struct strbuf *sb, const struct fuse_entry *e)
{
	const struct fgroup *g = &e->g;
	char b1[32], b2[32];
	strbuf_addf(sb, "\n### %s", g->name);
	if (e->num >= 0)
		strbuf_addf(sb, " (finding #%ld)", e->num);
	strbuf_addf(sb, "\n\n- kind: %s, dtype %s, ",
	            g->kind == FG_CHAIN ? "elementwise chain"
	            : g->kind == FG_COL ? "column reduction (sums over the rows for each column)"
	                                : "reduction + epilogue",
	            fdtype_name(g->dtype));
	if (g->kind == FG_CHAIN)
		strbuf_addf(sb, "%ld elements\n", g->numel);
	else
		strbuf_addf(sb, "%ld rows x %ld cols\n", g->rows, g->cols);
	strbuf_adds(sb, "- ops: ");
	for (int i = 0; i < g->nops; i++)
		strbuf_addf(sb, "%s%s", i ? " -> " : "", g->ops[i].op->name);
	strbuf_adds(sb, "\n- writes:");
	for (int i = 0; i < g->nwrites; i++)
		strbuf_addf(sb, " `%s`%s", g->values[g->writes[i].value].name,
		            g->writes[i].kept ? " (kept: still read after the group)" : "");
	strbuf_addf(sb, "\n- bytes moved: %s unfused, %s fused\n",
	            fmt_bytes(fgroup_bytes_unfused(g), b1), fmt_bytes(fgroup_bytes_fused(g), b2));
	if (e->sources && *e->sources)
		strbuf_addf(sb, "- sources: %s\n", e->sources);
	strbuf_addf(sb,
	            "- files: `%s/%s_kernel.cu` (kernel and launcher), `%s/%s_math.h` (per-element "
	            "math), `%s/%s_binding.cu` + `%s/%s.py` (PyTorch binding), `%s/%s_bench.cu` "
	            "(bench harness), `%s/%s_cpucheck.cu` (CPU check)\n",
	            g->name, g->name, g->name, g->name, g->name, g->name, g->name, g->name, g->name,
	            g->name, g->name, g->name);
	if (g->ndrop)
		strbuf_addf(sb, "- dropout: %d op%s; see \"Dropout\" below\n", g->ndrop,
		            g->ndrop > 1 ? "s" : "");
}

static const char readme_dropout[] =
    "\n## Dropout\n\n"
    "A generated dropout keeps an element with probability 1-p and scales it by 1/(1-p), as\n"
    "`torch.nn.functional.dropout` does. Its random numbers come from Philox4x32-10 through\n"
    "curand (`curand_init(seed, subsequence, offset)`, `curand_uniform4`), the generator\n"
    "PyTorch's CUDA dropout uses; the Python module takes the seed and offset from PyTorch's\n"
    "CUDA generator and advances the offset by 4 per dropout, as PyTorch's kernels do.\n\n"
    "Identical to PyTorch: the keep probability, the scaling, the distribution, and determinism\n"
    "for a given generator state. Not identical: the mask itself. PyTorch gives thread t of its\n"
    "launch subsequence t and draws four numbers per grid-stride step, so which number an\n"
    "element gets depends on PyTorch's grid and block size and vector width. The generated\n"
    "kernel gives element i component i % 4 of subsequence i / 4, so that its mask does not\n"
    "depend on the tuned launch parameters (and the bench harness's reference reproduces it\n"
    "exactly). For the same generator state the masks differ from eager PyTorch's (they are\n"
    "statistically the same); with p = 0 the outputs agree with PyTorch up to rounding. The\n"
    "mask is not written: a backward pass must regenerate it from (seed, offset) with the same\n"
    "mapping (`aic_uniform` in the kernel file).\n";

static char *build_readme(const struct fuse_run *run, const char *origin)
{
	struct strbuf sb = STRBUF_INIT;
	int ngen = 0, nadv = 0, drop = 0;
	for (int i = 0; i < run->nr; i++) {
		ngen += run->e[i].name != NULL;
		nadv += run->e[i].advice != NULL;
		drop |= run->e[i].name && run->e[i].g.ndrop;
	}
	strbuf_addf(&sb,
	            "# Fused kernels generated by aicprof fuse\n\nFrom: %s. Generated: %d; "
	            "reported as advice: %d.\n",
	            origin, ngen, nadv);
	strbuf_adds(
	    &sb, "\nEach group's kernel computes in fp32 and stores in the recorded dtypes, with "
	         "16-byte\nvector loads and stores where the pointers are aligned (checked at "
	         "run time; otherwise\nnarrower, down to scalar), a grid-stride loop and a "
	         "scalar tail. Values still read after\nthe group (kept) are still written. "
	         "`aicprof bench` builds and runs each bench harness on\na GPU: it checks the "
	         "fused kernel against the unfused sequence, tunes block size, vector\nwidth and "
	         "elements per thread, and writes `tune.json` beside the kernel.\n\n"
	         "Use from PyTorch: `sys.path.insert(0, \"<group dir>\")`, `from <name> import "
	         "<name>`; the\nfunction takes the group's inputs in order and returns its writes "
	         "(outputs, then kept).\nIt runs as the custom op `torch.ops.aicprof.<name>` "
	         "through the plain C ABI of\n`<name>_capi.h` (`lib<name>.so`, built with nvcc on "
	         "first use), with a fused backward\nwhere the group is an elementwise chain "
	         "(`<name>_bwd_kernel.cu`) or an RMS norm (`<name>_bwd_kernel.cu`,\nthen the "
	         "weight's column sums in `<name>_bwdc_kernel.cu`). Rewriting the program's\n"
	         "source to call it is left to you (or the patch).\n");
	if (host_bound(run)) {
		strbuf_adds(&sb, "\n**What to expect end to end.** In the trace ");
		host_bound_note(&sb, run);
		strbuf_adds(&sb, ".\n");
	}
	if (ngen) {
		strbuf_adds(&sb, "\n## Generated\n");
		for (int i = 0; i < run->nr; i++)
			if (run->e[i].name)
				add_readme_group(&sb, &run->e[i]);
	}
	if (run->nlibs) {
		strbuf_adds(&sb,
		            "\n## Library forms and dead statements (aicprof.patch)\n\n"
		            "Where a library already has the fused form, the patch uses it "
		            "instead of a generated\nkernel; a statement whose result is never "
		            "read is removed. Where the source cannot be\nrewritten safely, the "
		            "call to make is given instead.\n\n");
		for (int i = 0; i < run->nlibs; i++) {
			const struct patch_lib *l = &run->libs[i];
			if (l->rewritten)
				strbuf_addf(&sb, "- finding #%ld (%s): rewritten at %s: %s\n",
				            num_of(run, l->cand), l->form, l->where, l->what);
			else
				strbuf_addf(&sb, "- finding #%ld (%s): not rewritten (%s); %s\n",
				            num_of(run, l->cand), l->form,
				            l->advice ? l->advice : "?", l->what);
		}
	}
	if (run->nfn) {
		strbuf_adds(&sb, "\n## The aicprof_fused package (library functions)\n\n"
		                 "`aicprof_fused/` holds fused forms of library functions; "
		                 "`import aicprof_fused` and\n`aicprof_fused.apply()` replace "
		                 "them at run time (no library file is edited), guarded\nand "
		                 "verified on first use; `aicprof_fused.applied()` says what was "
		                 "replaced and why\nanything was not. `AICPROF_FUSED=0` turns it "
		                 "off. See docs/fusion.md.\n\n");
		for (int i = 0; i < run->nfn; i++) {
			const struct fuse_fn *x = &run->fn[i];
			if (x->advice)
				strbuf_addf(&sb, "- %s: not in the package: %s\n",
				            x->pf.qualname ? x->pf.qualname : "?", x->advice);
			else if (x->pf.g)
				strbuf_addf(&sb,
				            "- `%s.%s` (%d a step): group `%s` "
				            "(`aicprof_fused/%s/`)%s%s%s\n",
				            x->pf.module, x->pf.qualname, x->pf.invocations,
				            x->pf.g->name, x->pf.g->name,
				            x->pf.act_class ? ": the gated MLP, `act_fn` (`" : "",
				            x->pf.act_class ? x->pf.act_class : "",
				            x->pf.act_class
				                ? "`) and the product in one kernel between "
				                  "`gate_proj`, `up_proj` and `down_proj`"
				                : "");
			else if (!strcmp(x->pf.form, "rotary"))
				strbuf_addf(&sb,
				            "- `%s.%s` (%d a step): the package's rotary kernel "
				            "(`aicprof_fused/_rotary/`), q and k in one launch and "
				            "their backward in one more\n",
				            x->pf.module, x->pf.qualname, x->pf.invocations);
			else
				strbuf_addf(&sb,
				            "- `%s.%s` (%d a step): transformers' "
				            "`sdpa_attention_forward`\n",
				            x->pf.module, x->pf.qualname, x->pf.invocations);
		}
		if (run->pkg_where)
			strbuf_addf(&sb, "\nThe patch adds the two lines to `%s`.\n",
			            run->pkg_where);
		else if (run->pkg_advice)
			strbuf_addf(&sb, "\nThe patch adds no lines (%s): add them by hand.\n",
			            run->pkg_advice);
	}
	int nnf = run->notfusion[0] + run->notfusion[1] + run->notfusion[2];
	if (nnf)
		strbuf_addf(&sb,
		            "\n## Not fusion\n\n%d candidate%s of the summary %s not fusion groups "
		            "(dead %d, invariant %d,\nmemory %d): see the report (`report.html`, "
		            "dead work, unchanging work and the memory plan).\n",
		            nnf, nnf > 1 ? "s" : "", nnf > 1 ? "are" : "is", run->notfusion[0],
		            run->notfusion[1], run->notfusion[2]);
	if (nadv) {
		strbuf_adds(&sb, "\n## Advice (not generated)\n\n");
		for (int i = 0; i < run->nr; i++) {
			const struct fuse_entry *e = &run->e[i];
			int lib = 0; /* listed with what the patch did, above */
			for (int k = 0; k < run->nlibs; k++)
				lib |= run->libs[k].cand == e->cand;
			if (!e->advice || lib)
				continue;
			strbuf_addf(&sb, "- finding #%ld: %s", e->num, e->advice);
			if (e->sources && *e->sources)
				strbuf_addf(&sb, " (sources: %s)", e->sources);
			strbuf_adds(&sb, "\n");
		}
	}
	int npatch = 0;
	for (int i = 0; i < run->nr; i++)
		npatch += run->e[i].pg.g != NULL;
	if (npatch) {
		strbuf_adds(&sb,
		            "\n## The patch (aicprof.patch)\n\n"
		            "`git apply aicprof.patch` in the program's working directory adds "
		            "the generated\nkernels under `aicprof_fused/` and rewrites the "
		            "source lines below to call them;\nthe original lines stay as the "
		            "fallback (no extension build, another dtype, autograd\nneeding a "
		            "gradient). Groups whose lines it cannot rewrite safely are advice: "
		            "call\nthe kernel yourself.\n\n");
		for (int i = 0; i < run->nr; i++) {
			const struct patch_group *p = &run->e[i].pg;
			if (!p->g)
				continue;
			if (p->rewritten)
				strbuf_addf(&sb, "- %s: rewritten at %s\n", p->g->name, p->where);
			else
				strbuf_addf(&sb,
				            "- %s: advice, not rewritten: %s; the kernel is in "
				            "`aicprof_fused/%s/`\n",
				            p->g->name, p->advice ? p->advice : "?", p->g->name);
		}
	}
	if (drop)
		strbuf_adds(&sb, readme_dropout);
	return sb.buf;
}

static char *build_index(const struct fuse_run *run)
{
	struct strbuf sb = STRBUF_INIT;
	int first = 1;
	strbuf_adds(&sb, "{\"groups\": [");
	for (int i = 0; i < run->nr; i++) {
		if (!run->e[i].name)
			continue;
		strbuf_addf(&sb, "%s\n  {\"name\": ", first ? "" : ",");
		strbuf_add_json(&sb, run->e[i].name);
		strbuf_addf(&sb, ", \"candidate\": %ld, \"number\": %ld}", run->e[i].cand,
		            run->e[i].num);
		first = 0;
	}
	strbuf_adds(&sb, "],\n \"advice\": [");
	first = 1;
	for (int i = 0; i < run->nr; i++) {
		if (!run->e[i].advice)
			continue;
		strbuf_addf(&sb, "%s\n  {\"candidate\": %ld, \"number\": %ld, \"why\": ",
		            first ? "" : ",", run->e[i].cand, run->e[i].num);
		strbuf_add_json(&sb, run->e[i].advice);
		strbuf_adds(&sb, "}");
		first = 0;
	}
	strbuf_adds(&sb, "]}\n");
	return sb.buf;
}

static void release_run(struct fuse_run *run)
{
	for (int i = 0; i < run->nr; i++) {
		free(run->e[i].name);
		free(run->e[i].advice);
		free(run->e[i].sources);
		free(run->e[i].pg.where);
		free(run->e[i].pg.advice);
		free(run->e[i].mfile);
		free(run->e[i].mfunc);
		fgroup_release(&run->e[i].g);
	}
	free(run->e);
	for (int i = 0; i < run->nfn; i++) {
		cJSON_Delete(run->fn[i].spec);
		fgroup_release(&run->fn[i].g);
		free(run->fn[i].kind);
		free(run->fn[i].advice);
	}
	free(run->fn);
	free(run->pkg_where);
	free(run->pkg_advice);
	patch_lib_release(run->libs, run->nlibs);
}

/* aicprof_fused/_rotary/ under dir: the rotary form's kernel files. Returns 0 or -1 (printed). */
static int write_rotary(const char *dir)
{
	char *rd = path_join(dir, "_rotary");
	int rc = mkdir_nofollow(rd) ? -1 : 0;
	for (int k = 0; !rc && emit_rotary_name(k); k++) {
		char *p = path_join(rd, emit_rotary_name(k));
		rc = write_file_atomic(p, emit_rotary_file(k), strlen(emit_rotary_file(k)));
		free(p);
	}
	free(rd);
	return rc;
}

/* FUSEDDIR/aicprof_fused/: its __init__.py and the fused functions' groups. Returns 0 or
 * error() (printed). */
static int write_package(const char *fused, struct fuse_run *run)
{
	char *dir = path_join(fused, "aicprof_fused");
	int rc = mkdir_nofollow(dir) ? -1 : 0; /* a planted link is refused, not written through */
	struct pkg_func *pf = xcalloc(run->nfn, sizeof(*pf));
	int n = 0, rotary = 0;
	for (int i = 0; i < run->nfn && !rc; i++) {
		if (run->fn[i].advice)
			continue;
		if (run->fn[i].pf.g && fusion_write_group(dir, run->fn[i].pf.g))
			rc = -1;
		if (!rc && !strcmp(run->fn[i].pf.form, "rotary") && !rotary++)
			rc = write_rotary(dir);
		pf[n++] = run->fn[i].pf;
	}
	if (!rc) {
		struct strbuf sb = STRBUF_INIT;
		emit_pkg(&sb, pf, n);
		char *init = path_join(dir, "__init__.py");
		rc = write_file_atomic(init, sb.buf, sb.len);
		free(init);
		strbuf_release(&sb);
	}
	free(pf);
	free(dir);
	return rc;
}

/* 100 * a / t, shown to one decimal: under 100 unless a is all of t. */
static double pct(double a, double t)
{
	double p = 100.0 * a / t;
	return a < t && p > 99.9 ? 99.9 : p;
}

/* The index in run->fn of the package function whose own kernels (a generated group, or the rotary
 * kernel: not SDPA, the library's) replace e's finding: e's model line is in that function's file
 * and function. Its backward findings have that line derived from the forward values they read
 * (analyzer/lines.c), and the package's autograd.Function runs forward and backward. -1:
 * none. */
static int covering_fn(const struct fuse_run *run, const struct fuse_entry *e)
{
	if (!e->mfile || !e->mfunc)
		return -1;
	for (int k = 0; k < run->nfn; k++) {
		const struct fuse_fn *f = &run->fn[k];
		const char *fu = str_of(f->spec, "func");
		if (f->advice || !f->pf.form || !strcmp(f->pf.form, "sdpa") || !f->pf.file || !fu)
			continue;
		if (!strcmp(f->pf.file, e->mfile) && !strcmp(fu, e->mfunc))
			return k;
	}
	return -1;
}

static const char *const fuse_usage[] = {
    "aicprof fuse OUTDIR -o FUSEDDIR [--src DIR]",
    "aicprof fuse --group G.json [--group G2.json...] -o FUSEDDIR",
    NULL,
};

int cmd_fuse(int argc, char **argv)
{
	const char *outdir = NULL, *fused = NULL, *srcdir = NULL;
	struct parseopt_list glist = {0};
	const struct parseopt options[] = {
	    OPT_PATH('o', "output", &fused, "FUSEDDIR", "write the fused kernels into FUSEDDIR"),
	    OPT_PATH(0, "src", &srcdir, "DIR",
	             "read the program's sources under DIR for the patch (default: .)"),
	    OPT_PATH_LIST(0, "group", &glist, "G.json",
	                  "a group description instead of OUTDIR (repeatable)"),
	    OPT_END(),
	};
	argc = parse_options(argc, argv, options, fuse_usage, 0);
	if (argc > 1) {
		free(glist.v);
		error("fuse: unexpected argument '%s'", argv[1]);
		usage_with_options(fuse_usage, options);
	}
	outdir = argc ? argv[0] : NULL;
	const char **groups = glist.v; /* owned here: freed below */
	int ngroups = glist.nr;
	if (!fused || (!outdir && !ngroups) || (outdir && ngroups)) {
		error(!fused    ? "fuse: no output directory (-o FUSEDDIR)"
		      : ngroups ? "fuse: OUTDIR and --group exclude each other"
		                : "fuse: nothing to fuse (OUTDIR or --group)");
		free(glist.v);
		usage_with_options(fuse_usage, options);
	}
	struct fuse_run run = {0};
	int rc = 0;
	if (ngroups) {
		for (int i = 0; i < ngroups && !rc; i++) {
			struct fuse_entry e = {0};
			struct strbuf err = STRBUF_INIT;
			e.cand = e.num = e.pos = -1;
			if (fgroup_parse_file(groups[i], &e.g, &err)) {
				rc = error("%s", err.buf);
			} else {
				for (int k = 0; k < run.nr; k++)
					if (!strcmp(run.e[k].name, e.g.name))
						rc =
						    error("%s: group name '%s' is also the name of "
						          "'%s'",
						          groups[i], e.g.name, groups[k]);
				e.name = xstrdup(e.g.name);
			}
			strbuf_release(&err);
			add_entry(&run, &e);
		}
	} else if (from_summary(outdir, &run))
		rc = -1;
	if (!rc && (mkdir_p(fused) || outdir_lock(fused)))
		rc = -1;
	for (int i = 0; !rc && i < run.nr; i++)
		if (run.e[i].name && fusion_write_group(fused, &run.e[i].g))
			rc = -1;
	if (!rc && run.nfn && write_package(fused, &run))
		rc = -1;
	if (!rc && outdir && patch_run(outdir, fused, srcdir, &run))
		rc = -1;
	if (!rc) {
		struct strbuf origin = STRBUF_INIT;
		if (outdir)
			strbuf_addf(&origin, "`%s/summary.json`", outdir);
		else
			for (int i = 0; i < ngroups; i++)
				strbuf_addf(&origin, "%s`%s`", i ? ", " : "", groups[i]);
		char *readme = build_readme(&run, origin.buf);
		char *index = build_index(&run);
		char *p1 = path_join(fused, "groups.json"), *p2 = path_join(fused, "README.md");
		if (write_file_atomic(p1, index, strlen(index)) ||
		    write_file_atomic(p2, readme, strlen(readme)))
			rc = -1;
		for (int i = 0; !rc && i < run.nr; i++) {
			if (run.e[i].name)
				printf("generated %s/%s\n", fused, run.e[i].name);
			else
				printf("advice    finding #%ld: %s\n", run.e[i].num,
				       run.e[i].advice);
		}
		for (int i = 0; !rc && i < run.nlibs; i++) {
			const struct patch_lib *l = &run.libs[i];
			if (l->rewritten)
				printf("library   finding #%ld: %s: rewritten at %s\n",
				       num_of(&run, l->cand), l->form, l->where);
			else
				printf("library   finding #%ld: %s: not rewritten: %s\n",
				       num_of(&run, l->cand), l->form, l->advice ? l->advice : "?");
		}
		for (int i = 0; !rc && i < run.nfn; i++) {
			const struct fuse_fn *x = &run.fn[i];
			if (x->advice)
				printf("package   %s: not in the package: %s\n",
				       x->pf.qualname ? x->pf.qualname : "?", x->advice);
			else
				printf("package   %s/aicprof_fused: %s.%s -> %s\n", fused,
				       x->pf.module, x->pf.qualname,
				       x->pf.g                         ? x->pf.g->name
				       : !strcmp(x->pf.form, "rotary") ? "_rotary/aic_rotary.cu"
				                                       : "sdpa_attention_forward");
		}
		if (!rc && run.pkg_where)
			printf("package   apply() added to %s\n", run.pkg_where);
		else if (!rc && run.pkg_advice)
			printf("package   apply() not added: %s; add 'import aicprof_fused' and "
			       "'aicprof_fused.apply()' by hand\n",
			       run.pkg_advice);
		int nnf = run.notfusion[0] + run.notfusion[1] + run.notfusion[2];
		if (!rc && nnf)
			printf(
			    "not fusion: %d candidates (dead %d, invariant %d, memory %d); see the "
			    "report\n",
			    nnf, run.notfusion[0], run.notfusion[1], run.notfusion[2]);
		/* the coverage figure: the elementwise and reduction findings' bytes (the
		 * optimizers, attention and epilogues are the library's) that got a kernel */
		double tot = 0, gen = 0, pkg = 0;
		int ncov = 0, ngen = 0, npkg = 0;
		char *hit = xcalloc(run.nfn + 1, 1); /* the functions whose forms cover the rest */
		for (int i = 0; i < run.nr; i++)
			if (run.e[i].cov) {
				ncov++;
				tot += run.e[i].bytes;
				if (run.e[i].name) {
					ngen++;
					gen += run.e[i].bytes;
					continue;
				}
				int f = covering_fn(&run, &run.e[i]);
				if (f >= 0) {
					npkg++;
					pkg += run.e[i].bytes;
					hit[f] = 1;
				}
			}
		struct strbuf fns = STRBUF_INIT;
		for (int k = 0; k < run.nfn; k++)
			if (hit[k])
				strbuf_addf(&fns, "%s%s", fns.len ? ", " : "",
				            str_of(run.fn[k].spec, "func"));
		free(hit);
		if (!rc && host_bound(&run)) {
			struct strbuf hb = STRBUF_INIT;
			host_bound_note(&hb, &run);
			printf("step      %s\n", hb.buf);
			strbuf_release(&hb);
		}
		if (!rc && ncov && tot > 0) {
			char b1[32], b2[32], b3[32];
			printf("coverage  %d of %d elementwise and reduction findings, %s of %s a "
			       "step "
			       "(%.1f%%), have a generated kernel (aicprof bench checks them on a "
			       "GPU)",
			       ngen, ncov, fmt_bytes(gen, b1), fmt_bytes(tot, b2), pct(gen, tot));
			if (npkg)
				printf(
				    "; %d more sit in functions the package replaces with its "
				    "own kernels, forward and backward (%s): %d of %d, %s (%.1f%%)",
				    npkg, fns.buf, ngen + npkg, ncov, fmt_bytes(gen + pkg, b3),
				    pct(gen + pkg, tot));
			printf("\n");
		}
		strbuf_release(&fns);
		free(p1);
		free(p2);
		free(readme);
		free(index);
		strbuf_release(&origin);
	}
	release_run(&run);
	free(groups);
	free(run.ids);
	free(run.nums);
	return rc ? 1 : 0;
}
