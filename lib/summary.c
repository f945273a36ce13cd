/*
 * summary.c - the summary.json reader (summary.h).
 *
 * The schema is the table below, one row a field: a path ("steps.median_us", "nodes[].id":
 * "[]" is every element of an array), the type, whether it is required, and for numbers the
 * range [lo, hi]. Of a run summary only "format" is required at the top: a summary of a
 * program that ran no kernel, or one written by hand for a test, may lack the rest, and each
 * consumer says what it misses; what is there must have its type, and an element of a list
 * must have the keys that identify it (a node's id, an edge's ends, a candidate's id and
 * kind). A row is checked wherever its parent exists and has the parent's type; an
 * absent or mistyped parent is its own row's business, so one row a fact. Integer rows refuse
 * a fraction, NaN, +-inf and anything outside [lo, hi], which is what lets every consumer
 * convert them to int without further care. A T_INTN row takes null as absent (the
 * consumers read a null so): the ints the report prints (a pid, a value's writer, the memory
 * plan's nodes, a timeline event's stream and node) came in after fuzzing found each
 * converted unchecked (tests/fuzz/regress/summary/).
 *
 * Before the table: the top level must be an object, not a trace record (a trace's lines have
 * "t"; a whole trace is not one JSON value, so on a parse error the first line is tried as a
 * trace record too, for the better message), and "format" must be an integer not newer than
 * SUMMARY_FORMAT.
 */
#include "lib/summary.h"
#include "lib/file.h"
#include "lib/hmap.h"
#include "lib/json.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum stype { T_NUM, T_INT, T_STR, T_BOOL, T_OBJ, T_ARR, T_INTN /* T_INT or null */ };

struct field {
	const char *path;
	enum stype type;
	int required;
	double lo, hi; /* T_NUM, T_INT and T_INTN */
};

#define IMAX 2147483647.0    /* ids and indices become int */
#define IMIN (-2147483648.0) /* ints that may be -1 or another sentinel */
#define CMAX 1e15            /* counts and sizes: exact in a double */
#define UMAX 1e15            /* times in microseconds */

static const struct field run_schema[] = {
    {"format", T_INT, 1, 1, IMAX},
    {"tool", T_STR, 0, 0, 0},
    {"program", T_STR, 0, 0, 0},
    {"traces", T_ARR, 0, 0, 0},
    {"traces[]", T_OBJ, 0, 0, 0},
    {"traces[].pid", T_INTN, 0, IMIN, IMAX}, /* the Perfetto trace's pid */
    {"device", T_OBJ, 0, 0, 0},
    {"device.sm_count", T_INT, 0, 0, IMAX},
    {"steps", T_OBJ, 0, 0, 0},
    {"steps.count", T_INT, 0, 0, CMAX},
    {"steps.warmup", T_INT, 0, 0, CMAX},
    {"steps.period", T_INT, 0, 0, CMAX},
    {"steps.median_us", T_NUM, 0, 0, UMAX},
    {"nodes", T_ARR, 0, 0, 0},
    {"nodes[]", T_OBJ, 0, 0, 0},
    {"nodes[].id", T_INT, 1, 0, IMAX},
    {"nodes[].count", T_INT, 0, 0, CMAX},
    {"nodes[].stream", T_INT, 0, -1, IMAX},
    {"nodes[].median_us", T_NUM, 0, 0, UMAX},
    {"edges", T_ARR, 0, 0, 0},
    {"edges[]", T_OBJ, 0, 0, 0},
    {"edges[].from", T_INT, 1, 0, IMAX},
    {"edges[].to", T_INT, 1, 0, IMAX},
    {"ledger", T_OBJ, 0, 0, 0},
    {"ledger.by_family", T_ARR, 0, 0, 0},
    {"ledger.by_family[]", T_OBJ, 0, 0, 0},
    {"ledger.by_family[].count", T_INTN, 0, 0, IMAX},
    {"ledger.values", T_ARR, 0, 0, 0},
    {"ledger.values[]", T_OBJ, 0, 0, 0},
    {"ledger.values[].writer", T_INTN, 0, IMIN, IMAX},
    {"candidates", T_ARR, 0, 0, 0},
    {"candidates[]", T_OBJ, 0, 0, 0},
    {"candidates[].id", T_INT, 1, 0, IMAX},
    {"candidates[].kind", T_STR, 1, 0, 0},
    {"candidates[].nodes", T_ARR, 0, 0, 0},
    {"candidates[].nodes[]", T_INT, 0, 0, IMAX},
    {"candidates[].number", T_INT, 0, 1, IMAX},
    {"candidates[].kernel_saved_us", T_NUM, 0, 0, UMAX},
    {"candidates[].time_kind", T_STR, 0, 0, 0},
    {"candidates[].proven", T_BOOL, 0, 0, 0},
    {"candidates[].in_headline", T_BOOL, 0, 0, 0},
    {"rejected", T_ARR, 0, 0, 0},
    {"memory", T_OBJ, 0, 0, 0},
    {"memory.step", T_INTN, 0, IMIN, IMAX},
    {"memory.ideal_peak_after_node", T_INTN, 0, IMIN, IMAX},
    {"memory.at_peak", T_ARR, 0, 0, 0},
    {"memory.at_peak[]", T_OBJ, 0, 0, 0},
    {"memory.at_peak[].value", T_INTN, 0, IMIN, IMAX},
    {"memory.at_peak[].writer", T_INTN, 0, IMIN, IMAX},
    {"memory.freed_by_candidate", T_ARR, 0, 0, 0},
    {"memory.freed_by_candidate[]", T_OBJ, 0, 0, 0},
    {"memory.freed_by_candidate[].candidate", T_INTN, 0, IMIN, IMAX},
    {"timeline", T_OBJ, 0, 0, 0},
    {"timeline.events", T_ARR, 0, 0, 0},
    {"timeline.events[]", T_OBJ, 0, 0, 0},
    {"timeline.events[].stream", T_INTN, 0, IMIN, IMAX},
    {"timeline.events[].node", T_INTN, 0, IMIN, IMAX},
    {"time_model", T_OBJ, 0, 0, 0},
    {"time_model.step_us", T_NUM, 0, 0, UMAX},
    {"time_model.kernel_sum_us", T_NUM, 0, 0, UMAX},
    {"time_model.busy_us", T_NUM, 0, 0, UMAX},
    {"time_model.overlap_us", T_NUM, 0, 0, UMAX},
    {"time_model.idle_us", T_NUM, 0, 0, UMAX},
    {"time_model.host_blocked_us", T_NUM, 0, 0, UMAX},
    {"time_model.launch_gap_us", T_NUM, 0, 0, UMAX},
    {"time_model.gaps", T_INT, 0, 0, CMAX},
    {"time_model.gap_median_us", T_NUM, 0, 0, UMAX},
    {"time_model.on_path_us", T_NUM, 0, 0, UMAX},
    {"time_model.promised_us", T_NUM, 0, 0, UMAX},
    {"time_model.promised_gpu_us", T_NUM, 0, 0, UMAX},
    {"time_model.promised_host_us", T_NUM, 0, 0, UMAX},
    {"time_model.promised_findings", T_INT, 0, 0, CMAX},
    {"job", T_OBJ, 0, 0, 0},
};

static const struct field rank_schema[] = {
    {"format", T_INT, 1, 1, IMAX},    {"trace", T_OBJ, 0, 0, 0},
    {"host", T_STR, 0, 0, 0},         {"clock", T_STR, 0, 0, 0},
    {"steps", T_OBJ, 1, 0, 0},        {"steps.median_us", T_NUM, 0, 0, UMAX},
    {"kernels", T_ARR, 0, 0, 0},      {"kernels[]", T_OBJ, 0, 0, 0},
    {"timeline", T_OBJ, 0, 0, 0},     {"rounds", T_INT, 0, 0, CMAX},
    {"per_round", T_INT, 0, 0, CMAX}, {"colls", T_ARR, 1, 0, 0},
    {"colls[]", T_OBJ, 0, 0, 0},      {"colls[].key", T_STR, 1, 0, 0},
};

static const char *const type_names[] = {"a number",          "an integer", "a string",
                                         "a boolean",         "an object",  "an array",
                                         "an integer or null"};

struct ck {
	const char *file;
	struct strbuf *err;
	struct strbuf where; /* JSON path of the value at hand */
	int failed;
};

__attribute__((format(printf, 2, 3))) static int fail(struct ck *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (c->err)
		strbuf_addf(c->err, "'%s': %s", c->file, buf);
	else
		error("'%s': %s", c->file, buf);
	c->failed = 1;
	return -1;
}

static void describe(const cJSON *v, char *buf, size_t n)
{
	if (cJSON_IsNumber(v))
		snprintf(buf, n, "%g", v->valuedouble);
	else
		snprintf(buf, n, "%s", json_type_name(v));
}

/* v, present, against f's type and range */
static int check_value(struct ck *c, const struct field *f, const cJSON *v)
{
	char got[64];
	int ok;
	struct field as_int;
	if (f->type == T_INTN) { /* null is taken as absent, as the consumers read it */
		if (cJSON_IsNull(v))
			return 0;
		as_int = *f;
		as_int.type = T_INT;
		f = &as_int;
	}
	switch (f->type) {
	case T_NUM:
		ok = cJSON_IsNumber(v) && v->valuedouble == v->valuedouble;
		if (ok && !(v->valuedouble >= f->lo && v->valuedouble <= f->hi)) {
			describe(v, got, sizeof(got));
			return fail(c, "%s must be a number in [%g, %g], not %s", c->where.buf,
			            f->lo, f->hi, got);
		}
		break;
	case T_INT: {
		ok = cJSON_IsNumber(v);
		int64_t i;
		if (ok && !json_int_in(v, (int64_t)f->lo, (int64_t)f->hi, &i)) {
			describe(v, got, sizeof(got));
			return fail(c, "%s must be an integer in [%.0f, %.0f], not %s",
			            c->where.buf, f->lo, f->hi, got);
		}
		break;
	}
	case T_STR:
		ok = cJSON_IsString(v) && v->valuestring;
		break;
	case T_BOOL:
		ok = cJSON_IsBool(v);
		break;
	case T_OBJ:
		ok = cJSON_IsObject(v);
		break;
	default:
		ok = cJSON_IsArray(v);
		break;
	}
	if (!ok)
		return fail(c, "%s must be %s, not %s", c->where.buf, type_names[f->type],
		            cJSON_IsNumber(v) && isnan(v->valuedouble) ? "NaN" : json_type_name(v));
	return 0;
}

/* the rest p of f's path below o (an object), o's own path in c->where */
static void check_path(struct ck *c, const struct field *f, const cJSON *o, const char *p)
{
	size_t n = strcspn(p, ".[");
	char key[64];
	if (n >= sizeof(key))
		BUG("schema path '%s' too long", f->path);
	memcpy(key, p, n);
	key[n] = 0;
	size_t mark = c->where.len;
	strbuf_addf(&c->where, "%s%s", mark ? "." : "", key);
	const cJSON *v = json_get(o, key);
	const char *rest = p + n;
	if (!*rest) {
		if (!v) {
			if (f->required)
				fail(c, "required key %s is missing", c->where.buf);
		} else
			check_value(c, f, v);
	} else if (*rest == '.') {
		if (cJSON_IsObject(v))
			check_path(c, f, v, rest + 1);
	} else if (!strncmp(rest, "[]", 2) && cJSON_IsArray(v)) {
		int i = 0;
		const cJSON *e;
		size_t at = c->where.len;
		cJSON_ArrayForEach(e, v)
		{
			if (c->failed)
				break;
			c->where.len = at;
			strbuf_addf(&c->where, "[%d]", i++);
			if (!rest[2])
				check_value(c, f, e);
			else if (rest[2] == '.' && cJSON_IsObject(e))
				check_path(c, f, e, rest + 3);
		}
	}
	c->where.len = mark;
	if (c->where.buf)
		c->where.buf[mark] = 0;
}

int summary_check(const cJSON *root, const char *path, enum summary_kind kind, struct strbuf *err)
{
	struct ck c = {path, err, STRBUF_INIT, 0};
	if (!cJSON_IsObject(root))
		return fail(&c, "not a summary: its top level is %s, not an object",
		            json_type_name(root));
	if (cJSON_IsString(json_get(root, "t")))
		return fail(&c,
		            "not a summary but a trace record (\"t\": \"%s\"); run 'aicprof "
		            "analyze' on the trace",
		            json_get(root, "t")->valuestring);
	int64_t fmt;
	switch (json_get_int64(root, "format", 1, INT_MAX, &fmt)) {
	case JSON_OK:
		break;
	case JSON_MISSING:
		return fail(&c, "not a summary: no \"format\"");
	default: {
		char got[64];
		describe(json_get(root, "format"), got, sizeof(got));
		return fail(&c, "not a summary: \"format\" must be a positive integer, not %s",
		            got);
	}
	}
	if (fmt > SUMMARY_FORMAT)
		return fail(&c, "summary format %lld is newer than this aicprof (%d)",
		            (long long)fmt, SUMMARY_FORMAT);
	const struct field *t = kind == SUMMARY_RANK ? rank_schema : run_schema;
	size_t n = kind == SUMMARY_RANK ? ARRAY_SIZE(rank_schema) : ARRAY_SIZE(run_schema);
	for (size_t i = 0; i < n && !c.failed; i++) {
		strbuf_reset(&c.where);
		check_path(&c, &t[i], root, t[i].path);
	}
	strbuf_release(&c.where);
	return c.failed ? -1 : 0;
}

/* 1 when the first line of text is a JSON object with "t": a trace's record */
static int looks_like_trace(const char *text, size_t len)
{
	const char *nl = memchr(text, '\n', len);
	size_t n = nl ? (size_t)(nl - text) : len;
	cJSON *j = cJSON_ParseWithLength(text, n);
	int r = cJSON_IsString(json_get(j, "t"));
	cJSON_Delete(j);
	return r;
}

cJSON *summary_read_kind(const char *path, enum summary_kind kind, struct strbuf *err)
{
	size_t len;
	char *text = file_read(path, JSON_FILE_MAX, &len, err);
	if (!text)
		return NULL;
	struct strbuf perr = STRBUF_INIT;
	cJSON *root = json_parse_text(path, text, len, &perr);
	if (!root) {
		struct ck c = {path, err, STRBUF_INIT, 0};
		if (len && looks_like_trace(text, len))
			fail(&c, "not a summary but a trace (its records have \"t\"); run "
			         "'aicprof analyze' on it");
		else if (err)
			strbuf_adds(err, perr.buf);
		else
			error("%s", perr.buf);
		strbuf_release(&perr);
		free(text);
		return NULL;
	}
	strbuf_release(&perr);
	free(text);
	if (summary_check(root, path, kind, err)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

cJSON *summary_read(const char *path)
{
	return summary_read_kind(path, SUMMARY_RUN, NULL);
}

const char *const summary_notfusion_kinds[3] = {"dead", "invariant", "memory"};

/* A candidate's node id, or -1 when it is no integer in [0, 2^53] (never cast out of range). */
static int64_t node_id(const cJSON *n)
{
	if (!cJSON_IsNumber(n) || !(n->valuedouble >= 0) || n->valuedouble > 9007199254740992.0 ||
	    n->valuedouble != floor(n->valuedouble))
		return -1;
	return (int64_t)n->valuedouble;
}

double summary_gpu_saved(const cJSON *root, double busy_us, double *lib_us, double *each)
{
	const cJSON *cands = cJSON_GetObjectItemCaseSensitive(root, "candidates"), *c;
	struct hmap taken;
	double sum = 0, lib = 0;
	int i = 0;
	hmap_init(&taken);
	cJSON_ArrayForEach(c, cands)
	{
		int at = i++;
		if (each)
			each[at] = 0;
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(c, "kind");
		const cJSON *tk = cJSON_GetObjectItemCaseSensitive(c, "time_kind");
		const cJSON *ks = cJSON_GetObjectItemCaseSensitive(c, "kernel_saved_us");
		if (!cJSON_IsString(k) || !cJSON_IsString(tk) || strcmp(tk->valuestring, "gpu") ||
		    !cJSON_IsNumber(ks) || !(ks->valuedouble > 0) || !isfinite(ks->valuedouble))
			continue;
		int other = !strcmp(k->valuestring, "comm-overlap"); /* a change of schedule */
		for (int j = 0; j < 3; j++)
			other |= !strcmp(k->valuestring, summary_notfusion_kinds[j]);
		const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(c, "nodes"), *n;
		uint64_t v;
		cJSON_ArrayForEach(n, nodes)
		{
			int64_t id = node_id(n);
			other |= id >= 0 && hmap_get(&taken, (uint64_t)id, &v);
		}
		if (other)
			continue;
		cJSON_ArrayForEach(n, nodes)
		{
			int64_t id = node_id(n);
			if (id >= 0)
				hmap_put(&taken, (uint64_t)id, 1);
		}
		double s = ks->valuedouble < 1e12 ? ks->valuedouble : 1e12;
		sum += s;
		const cJSON *lf = cJSON_GetObjectItemCaseSensitive(c, "library_form");
		if (cJSON_IsString(lf) && *lf->valuestring)
			lib += s;
		if (each)
			each[at] = s;
	}
	hmap_release(&taken);
	sum = sum < busy_us ? sum : busy_us > 0 ? busy_us : 0;
	if (lib_us)
		*lib_us = lib < sum ? lib : sum;
	return sum;
}
