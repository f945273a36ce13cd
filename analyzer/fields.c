/*
 * fields.c - the graph builder's field lookup in the current trace record (builder.h).
 *
 * How it works: cJSON finds a key by a linear scan with strcmp, ten times a record. Instead
 * index_fields() indexes the current record's top-level fields once, by a switch on the key,
 * and field() answers from that index; other objects (nested ones) fall back to cJSON's
 * lookup. The getters (get_num, get_i64, get_time, get_str, get_hex, get_dim3, num_id, num_off)
 * convert a field only when its type and range allow it, so a bad value is an error or a
 * default, never undefined behaviour; bad() words the error for a required field.
 */
#include "analyzer/builder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Field lookup: cJSON finds a key by a linear scan with strcmp, ten times a record. Instead the
 * current record's top-level fields are indexed once (index_fields()), by a switch on the key,
 * and field() answers from that index; other objects fall back to cJSON's lookup. The first of
 * duplicate keys wins, as with cJSON.
 */
enum fkey {
	F_T,
	F_SEQ,
	F_TS,
	F_TID,
	F_C,
	F_FN,
	F_GRID,
	F_BLOCK,
	F_STREAM,
	F_SITE,
	F_ARGS,
	F_CAL,
	F_START,
	F_END,
	F_NAME,
	F_BYTES,
	F_GRAPH,
	F_DST_ALLOC,
	F_SRC_ALLOC,
	F_ID,
	F_SIZE,
	F_TEXT,
	F_EVENT,
	F_S,
	F_FORMAT,
	F__N
};

static int key_id(const char *k)
{
	switch (k[0]) {
	case 't':
		return !k[1]                ? F_T
		       : !strcmp(k, "ts")   ? F_TS
		       : !strcmp(k, "tid")  ? F_TID
		       : !strcmp(k, "text") ? F_TEXT
		                            : -1;
	case 's':
		return !k[1]                     ? F_S
		       : !strcmp(k, "seq")       ? F_SEQ
		       : !strcmp(k, "stream")    ? F_STREAM
		       : !strcmp(k, "site")      ? F_SITE
		       : !strcmp(k, "start")     ? F_START
		       : !strcmp(k, "size")      ? F_SIZE
		       : !strcmp(k, "src_alloc") ? F_SRC_ALLOC
		                                 : -1;
	case 'c':
		return !k[1] ? F_C : !strcmp(k, "cal") ? F_CAL : -1;
	case 'f':
		return !strcmp(k, "fn") ? F_FN : !strcmp(k, "format") ? F_FORMAT : -1;
	case 'g':
		return !strcmp(k, "grid") ? F_GRID : !strcmp(k, "graph") ? F_GRAPH : -1;
	case 'b':
		return !strcmp(k, "block") ? F_BLOCK : !strcmp(k, "bytes") ? F_BYTES : -1;
	case 'a':
		return !strcmp(k, "args") ? F_ARGS : -1;
	case 'e':
		return !strcmp(k, "end") ? F_END : !strcmp(k, "event") ? F_EVENT : -1;
	case 'n':
		return !strcmp(k, "name") ? F_NAME : -1;
	case 'd':
		return !strcmp(k, "dst_alloc") ? F_DST_ALLOC : -1;
	case 'i':
		return !strcmp(k, "id") ? F_ID : -1;
	}
	return -1;
}

static const cJSON *idx_rec;
static const cJSON *fidx[F__N];

void index_fields(const cJSON *rec)
{
	memset(fidx, 0, sizeof(fidx));
	idx_rec = rec;
	for (const cJSON *it = rec->child; it; it = it->next) {
		if (!it->string)
			continue;
		int id = key_id(it->string);
		if (id >= 0 && !fidx[id])
			fidx[id] = it;
	}
}

const cJSON *field(const cJSON *o, const char *k)
{
	if (o == idx_rec && o) {
		int id = key_id(k);
		if (id >= 0)
			return fidx[id];
	}
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

int get_num(const cJSON *o, const char *k, double *v)
{
	const cJSON *x = field(o, k);
	if (!cJSON_IsNumber(x))
		return 0;
	*v = x->valuedouble;
	return 1;
}

int get_i64(const cJSON *o, const char *k, int64_t *v)
{
	const cJSON *x = field(o, k);
	if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || fabs(x->valuedouble) > 9.2e18)
		return 0;
	*v = (int64_t)x->valuedouble;
	return 1;
}

/*
 * cJSON keeps numbers as doubles, which round ns timestamps (~1.7e18) to 256 ns: GPU times are
 * read again, exactly, from the line's text. Falls back to the double when the key is not
 * found as written by the shim ("start":123).
 */
int get_time(const struct builder *b, const cJSON *o, const char *key, const char *pat, int64_t *v)
{
	if (!get_i64(o, key, v))
		return 0;
	const char *p = memmem(b->raw, b->rawlen, pat, strlen(pat));
	if (p) {
		p += strlen(pat);
		while (p < b->raw + b->rawlen && *p == ' ')
			p++;
		char *end;
		long long x = strtoll(p, &end, 10);
		/* the same number (no x - *v: it could overflow when the text is another field's)
		 */
		if (end > p && (*end == ',' || *end == '}' || *end == ' ') && x > *v - 4096 &&
		    x < *v + 4096)
			*v = x;
	}
	return 1;
}

const char *get_str(const cJSON *o, const char *k)
{
	const cJSON *x = field(o, k);
	return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* "0x7f3a00000000" -> number; 0 when absent or not hex. */
uint64_t get_hex(const cJSON *o, const char *k)
{
	const char *s = get_str(o, k);
	if (!s) {
		int64_t v;
		return get_i64(o, k, &v) ? (uint64_t)v : 0;
	}
	return strtoull(s, NULL, 16);
}

/*
 * An allocation id and an offset in it from a JSON number, converted only when in range (a
 * double outside int64's range converted to an integer is undefined behaviour): ids outside it
 * are -1 (no known allocation), offsets outside it or negative are 0.
 */
int64_t num_id(const cJSON *x)
{
	return cJSON_IsNumber(x) && fabs(x->valuedouble) <= 9e18 ? (int64_t)x->valuedouble : -1;
}

uint64_t num_off(const cJSON *x)
{
	return cJSON_IsNumber(x) && x->valuedouble > 0 && x->valuedouble <= 9e18
	           ? (uint64_t)x->valuedouble
	           : 0;
}

void get_dim3(const cJSON *o, const char *k, int *d)
{
	const cJSON *a = field(o, k);
	for (int i = 0; i < 3; i++) {
		const cJSON *x = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, i) : NULL;
		d[i] = cJSON_IsNumber(x) ? x->valueint : 0;
	}
}

/* A required field of the current record is absent, of the wrong type or out of range. */
int bad(struct builder *b, const char *what, const char *key)
{
	const cJSON *x = field(idx_rec, key);
	if (!x)
		return error_at(b->file, b->line, "%s record has no '%s'", what, key);
	if (!cJSON_IsNumber(x))
		return error_at(b->file, b->line, "%s record: '%s' must be a number, not %s", what,
		                key,
		                cJSON_IsString(x)   ? "a string"
		                : cJSON_IsArray(x)  ? "an array"
		                : cJSON_IsObject(x) ? "an object"
		                                    : "true, false or null");
	return error_at(b->file, b->line, "%s record: '%s' is out of range (%g)", what, key,
	                x->valuedouble);
}
