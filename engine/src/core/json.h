/* Minimal JSON-lines writer: one object per line, flushed at the end so a
 * reader on a pipe sees each record as soon as it is complete. Only used
 * outside the hot loops. */
#ifndef CNFPERF_JSON_H
#define CNFPERF_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH 8

struct json {
	FILE *f;
	int depth;
	bool first[JSON_DEPTH];
};

void json_begin(struct json *j, FILE *f);
void json_end(struct json *j);                 /* closes the record, newline, flush */
void json_key(struct json *j, const char *k);  /* for values written by the caller */
void json_str(struct json *j, const char *k, const char *v);  /* NULL -> null */
void json_u64(struct json *j, const char *k, uint64_t v);
void json_i64(struct json *j, const char *k, int64_t v);
void json_num(struct json *j, const char *k, double v, int decimals);
void json_bool(struct json *j, const char *k, bool v);
void json_null(struct json *j, const char *k);
void json_open(struct json *j, const char *k, char bracket);  /* '{' or '[' ; k may be NULL in arrays */
void json_close(struct json *j, char bracket);
void json_raw_item(struct json *j, const char *text);  /* an array element already formatted */

#endif
