#include "json.h"

#include <math.h>

static void sep(struct json *j)
{
	if (!j->first[j->depth])
		fputs(", ", j->f);
	j->first[j->depth] = false;
}

static void quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void json_key(struct json *j, const char *k)
{
	sep(j);
	if (k) {
		quoted(j->f, k);
		fputs(": ", j->f);
	}
}

/* A record holds the stream's lock from its first byte to its flush: two
 * threads' records (a client's sender and receiver) never interleave. */
void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	flockfile(f);
	fputc('{', f);
}

void json_end(struct json *j)
{
	fputs("}\n", j->f);
	fflush(j->f);
	funlockfile(j->f);
}

void json_str(struct json *j, const char *k, const char *v)
{
	json_key(j, k);
	if (v)
		quoted(j->f, v);
	else
		fputs("null", j->f);
}

void json_u64(struct json *j, const char *k, uint64_t v)
{
	json_key(j, k);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_i64(struct json *j, const char *k, int64_t v)
{
	json_key(j, k);
	fprintf(j->f, "%lld", (long long)v);
}

void json_num(struct json *j, const char *k, double v, int decimals)
{
	json_key(j, k);
	if (isfinite(v))
		fprintf(j->f, "%.*f", decimals, v);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *k, bool v)
{
	json_key(j, k);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *k)
{
	json_key(j, k);
	fputs("null", j->f);
}

void json_open(struct json *j, const char *k, char bracket)
{
	json_key(j, k);
	fputc(bracket, j->f);
	if (j->depth + 1 < JSON_DEPTH)
		j->first[++j->depth] = true;
}

void json_close(struct json *j, char bracket)
{
	fputc(bracket == '{' ? '}' : ']', j->f);
	if (j->depth > 0)
		j->depth--;
}

void json_raw_item(struct json *j, const char *text)
{
	sep(j);
	fputs(text, j->f);
}
