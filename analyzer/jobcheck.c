/*
 * jobcheck.c - the check that traces given as one job are ranks of one job (jobcheck.h).
 *
 * Only the header line of each trace is read (cJSON on the first line; a 10 MB first line costs
 * one getline). The first trace is the reference: every other is compared with it on argv
 * (element by element), cwd and world_size, and every rank with all ranks before it. These are
 * the fields every rank of one launch shares (torchrun, mpirun and srun start the same command
 * in the same directory with one world size); a trace of another program, another directory or
 * another job size is refused before any analysis runs, so nothing is written for it. Values
 * quoted in the message are cut at 120 bytes, control characters shown as '?'.
 */
#include "analyzer/jobcheck.h"
#include "lib/util.h"

#include "lib/json.h"
#include "lib/trace.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps a copy of the first record's line when it is a header. */
static int take_header(void *ctx, const struct trace_record *rec)
{
	if (rec->type == TRACE_HEADER)
		*(char **)ctx = xstrdup(rec->raw);
	return 1; /* the first record is all it needs */
}

/* The header of the trace at path (through the one trace reader), or NULL when it cannot be
 * read as one. The caller frees it with cJSON_Delete. */
static cJSON *read_header(const char *path)
{
	char *line = NULL;
	struct trace_consumer c = {take_header, &line, TRACE_ALL};
	trace_read(path, &c, 1, NULL, TRACE_QUIET);
	if (!line)
		return NULL;
	struct strbuf err = STRBUF_INIT;
	cJSON *h = json_parse_text(path, line, strlen(line), &err);
	strbuf_release(&err);
	free(line);
	return h;
}

/* Appends v for a message: argv's strings joined by spaces, a string, a number or "none". */
static void add_value(struct strbuf *sb, const cJSON *v)
{
	struct strbuf t = STRBUF_INIT;
	if (cJSON_IsArray(v)) {
		const cJSON *a;
		cJSON_ArrayForEach(a, v)
		{
			if (t.len)
				strbuf_adds(&t, " ");
			if (cJSON_IsString(a))
				strbuf_adds(&t, a->valuestring);
			else
				strbuf_adds(&t, "?");
		}
	} else if (cJSON_IsString(v)) {
		strbuf_adds(&t, v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		strbuf_addf(&t, "%.0f", v->valuedouble);
	}
	if (!v) {
		strbuf_adds(sb, "none");
	} else {
		strbuf_adds(sb, "'");
		for (size_t i = 0; t.buf && i < t.len && i < 120; i++)
			strbuf_addf(
			    sb, "%c",
			    ((unsigned char)t.buf[i] < 0x20 || t.buf[i] == 0x7f) ? '?' : t.buf[i]);
		strbuf_adds(sb, t.len > 120 ? "...'" : "'");
	}
	strbuf_release(&t);
}

/* Whether field k of a and b is the same (both absent counts as the same). */
static int same(const cJSON *a, const cJSON *b, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, k);
	const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, k);
	if (!x || !y)
		return !x && !y;
	return cJSON_Compare(x, y, 1);
}

int job_check(char **paths, int n)
{
	if (n < 2)
		return 0;
	cJSON **h = xcalloc((size_t)n, sizeof(cJSON *));
	int ret = 0, ref = -1;
	for (int i = 0; i < n && !ret; i++) {
		h[i] = read_header(paths[i]);
		if (!h[i])
			continue;
		if (ref < 0) {
			ref = i;
			continue;
		}
		static const char *const keys[] = {"argv", "cwd", "world_size"};
		struct strbuf why = STRBUF_INIT;
		for (size_t k = 0; k < ARRAY_SIZE(keys) && !why.len; k++) {
			if (same(h[ref], h[i], keys[k]))
				continue;
			strbuf_addf(&why, "%s differs: ", keys[k]);
			add_value(&why, cJSON_GetObjectItemCaseSensitive(h[ref], keys[k]));
			strbuf_adds(&why, " vs ");
			add_value(&why, cJSON_GetObjectItemCaseSensitive(h[i], keys[k]));
		}
		int other = ref;
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(h[i], "rank");
		for (int k = 0; k < i && !why.len && cJSON_IsNumber(r); k++) {
			const cJSON *rk = cJSON_GetObjectItemCaseSensitive(h[k], "rank");
			if (cJSON_IsNumber(rk) && rk->valuedouble == r->valuedouble) {
				other = k;
				strbuf_addf(&why, "both rank %.0f", r->valuedouble);
			}
		}
		if (why.len) {
			error("'%s' is not a rank of the same job as '%s' (%s)", paths[i],
			      paths[other], why.buf);
			ret = -1;
		}
		strbuf_release(&why);
	}
	for (int i = 0; i < n; i++)
		cJSON_Delete(h[i]);
	free(h);
	return ret;
}
