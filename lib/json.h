/*
 * json.h - JSON field access shared by every stage, and the one bounded parse of a small JSON
 * file (summary.json, groups.json, a group description, a tuning cache).
 *
 * The getters read one key of a cJSON object (which may be NULL) and say which of three things
 * happened: JSON_OK (the value was stored in *out), JSON_MISSING (no such key, or o is not an
 * object), JSON_WRONG_TYPE (the key holds another type; json_type_name() names it for a
 * message). Numbers never hold NaN (cJSON cannot parse one; a NaN put there in-process counts
 * as the wrong type). json_get_int64() checks the range before converting, so no value of a
 * file reaches an undefined double-to-integer conversion: JSON_OUT_OF_RANGE when the number is
 * not an integer in [lo, hi].
 *
 * jnum()/jnumd()/jstr()/jarr()/jobj() are the short forms for readers that degrade to a
 * default; json_clamp() the form for readers that clamp.
 */
#ifndef AICPROF_JSON_H
#define AICPROF_JSON_H

#include "lib/util.h"

#include <cJSON.h>
#include <stdint.h>

enum json_status { JSON_OK = 0, JSON_MISSING, JSON_WRONG_TYPE, JSON_OUT_OF_RANGE };

/* "a string", "a number", "an array", "an object", "a boolean", "null", or "nothing" for NULL:
 * a static string for messages. */
const char *json_type_name(const cJSON *v);

/* The value of key in o, NULL when o is not an object or has no such key. */
const cJSON *json_get(const cJSON *o, const char *key);

enum json_status json_get_number(const cJSON *o, const char *key, double *out);
/* An integer number in [lo, hi] (checked before the conversion). */
enum json_status json_get_int64(const cJSON *o, const char *key, int64_t lo, int64_t hi,
                                int64_t *out);
/* *out points into o's tree; it lives as long as the tree. */
enum json_status json_get_string(const cJSON *o, const char *key, const char **out);
enum json_status json_get_bool(const cJSON *o, const char *key, int *out);
enum json_status json_get_object(const cJSON *o, const char *key, const cJSON **out);
enum json_status json_get_array(const cJSON *o, const char *key, const cJSON **out);

/* 1 when v is an integer number in [lo, hi], which it stores in *out; else 0. */
int json_int_in(const cJSON *v, int64_t lo, int64_t hi, int64_t *out);

/* Short forms on an object that may be NULL. None of them fail. */
int jnum(const cJSON *o, const char *key, double *out); /* 1 when key holds a number */
double jnumd(const cJSON *o, const char *key, double dflt);
const char *jstr(const cJSON *o, const char *key);                    /* NULL unless a string */
const char *jstrd(const cJSON *o, const char *key, const char *dflt); /* dflt unless a string */
const cJSON *jarr(const cJSON *o, const char *key);                   /* NULL unless an array */
const cJSON *jobj(const cJSON *o, const char *key);                   /* NULL unless an object */
/* The number at key clamped to [lo, hi]; dflt when absent or not a number. */
double json_clamp(const cJSON *o, const char *key, double dflt, double lo, double hi);

/* The default size limit of json_parse_file(): 1 GiB (a summary of a large model is tens of MiB).
 */
#define JSON_FILE_MAX (1UL << 30)

/*
 * Reads the file at path (at most max bytes, see file_read()) and parses it whole. Returns the
 * tree (the caller frees it with cJSON_Delete), or NULL with a message naming the file: "cannot
 * open 'p': ...", "'p' is larger than N bytes", "p: empty file", or "p:LINE: not valid JSON"
 * with the line where parsing stopped. The message goes to err when err is not NULL (appended,
 * no newline), else it is printed with error().
 */
cJSON *json_parse_file(const char *path, size_t max, struct strbuf *err);

/* As json_parse_file, on text[0..len) that came from path (path only names it in messages). */
cJSON *json_parse_text(const char *path, const char *text, size_t len, struct strbuf *err);

#endif
