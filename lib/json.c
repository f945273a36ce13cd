/*
 * json.c - typed field access on cJSON objects and the bounded whole-file parse (json.h).
 *
 * Parsing: the text is read with file_read() and parsed with cJSON_ParseWithLengthOpts; on a
 * syntax error cJSON gives the byte where it stopped, turned into a line number by counting
 * the newlines before it. cJSON stops after the first value; anything but white space after
 * it (a second record of a JSON-lines trace) is an error at its line too.
 */
#include "lib/json.h"
#include "lib/file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *json_type_name(const cJSON *v)
{
	return !v                  ? "nothing"
	       : cJSON_IsString(v) ? "a string"
	       : cJSON_IsBool(v)   ? "a boolean"
	       : cJSON_IsArray(v)  ? "an array"
	       : cJSON_IsObject(v) ? "an object"
	       : cJSON_IsNull(v)   ? "null"
	                           : "a number";
}

const cJSON *json_get(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

enum json_status json_get_number(const cJSON *o, const char *key, double *out)
{
	const cJSON *v = json_get(o, key);
	if (!v)
		return JSON_MISSING;
	if (!cJSON_IsNumber(v) || isnan(v->valuedouble))
		return JSON_WRONG_TYPE;
	*out = v->valuedouble;
	return JSON_OK;
}

int json_int_in(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
	if (!cJSON_IsNumber(v))
		return 0;
	double d = v->valuedouble;
	/* the comparisons are false for NaN; +-inf and 1e300 fail them too */
	if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
		return 0;
	/* (double)hi may round up past hi (INT64_MAX): refuse what does not fit */
	if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
		return 0;
	int64_t i = (int64_t)d;
	if (i < lo || i > hi)
		return 0;
	*out = i;
	return 1;
}

enum json_status json_get_int64(const cJSON *o, const char *key, int64_t lo, int64_t hi,
                                int64_t *out)
{
	const cJSON *v = json_get(o, key);
	if (!v)
		return JSON_MISSING;
	if (!cJSON_IsNumber(v))
		return JSON_WRONG_TYPE;
	return json_int_in(v, lo, hi, out) ? JSON_OK : JSON_OUT_OF_RANGE;
}

enum json_status json_get_string(const cJSON *o, const char *key, const char **out)
{
	const cJSON *v = json_get(o, key);
	if (!v)
		return JSON_MISSING;
	if (!cJSON_IsString(v) || !v->valuestring)
		return JSON_WRONG_TYPE;
	*out = v->valuestring;
	return JSON_OK;
}

enum json_status json_get_bool(const cJSON *o, const char *key, int *out)
{
	const cJSON *v = json_get(o, key);
	if (!v)
		return JSON_MISSING;
	if (!cJSON_IsBool(v))
		return JSON_WRONG_TYPE;
	*out = cJSON_IsTrue(v);
	return JSON_OK;
}

enum json_status json_get_object(const cJSON *o, const char *key, const cJSON **out)
{
	const cJSON *v = json_get(o, key);
	if (!v)
		return JSON_MISSING;
	if (!cJSON_IsObject(v))
		return JSON_WRONG_TYPE;
	*out = v;
	return JSON_OK;
}

enum json_status json_get_array(const cJSON *o, const char *key, const cJSON **out)
{
	const cJSON *v = json_get(o, key);
	if (!v)
		return JSON_MISSING;
	if (!cJSON_IsArray(v))
		return JSON_WRONG_TYPE;
	*out = v;
	return JSON_OK;
}

int jnum(const cJSON *o, const char *key, double *out)
{
	return json_get_number(o, key, out) == JSON_OK;
}

double jnumd(const cJSON *o, const char *key, double dflt)
{
	double d;
	return jnum(o, key, &d) ? d : dflt;
}

const char *jstr(const cJSON *o, const char *key)
{
	const char *s = NULL;
	return json_get_string(o, key, &s) == JSON_OK ? s : NULL;
}

const char *jstrd(const cJSON *o, const char *key, const char *dflt)
{
	const char *s = jstr(o, key);
	return s ? s : dflt;
}

const cJSON *jarr(const cJSON *o, const char *key)
{
	const cJSON *v = NULL;
	return json_get_array(o, key, &v) == JSON_OK ? v : NULL;
}

const cJSON *jobj(const cJSON *o, const char *key)
{
	const cJSON *v = NULL;
	return json_get_object(o, key, &v) == JSON_OK ? v : NULL;
}

double json_clamp(const cJSON *o, const char *key, double dflt, double lo, double hi)
{
	double v;
	if (!jnum(o, key, &v))
		return dflt;
	return v < lo ? lo : v > hi ? hi : v;
}

cJSON *json_parse_text(const char *path, const char *text, size_t len, struct strbuf *err)
{
	if (!len) {
		error_into(err, "%s: empty file", path);
		return NULL;
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	const char *at = end;
	if (root) {
		/* one value and white space: cJSON stops after the first value */
		while (at && at < text + len && strchr(" \t\r\n", *at) && *at)
			at++;
		if (at && (at == text + len || !*at))
			return root;
		cJSON_Delete(root);
	} else if (!at)
		at = cJSON_GetErrorPtr();
	long line = 1;
	if (at && at >= text && at <= text + len)
		for (const char *p = text; p < at; p++)
			line += *p == '\n';
	error_into(err, "%s:%ld: not valid JSON", path, line);
	return NULL;
}

cJSON *json_parse_file(const char *path, size_t max, struct strbuf *err)
{
	size_t len;
	char *text = file_read(path, max, &len, err);
	if (!text)
		return NULL;
	cJSON *root = json_parse_text(path, text, len, err);
	free(text);
	return root;
}
