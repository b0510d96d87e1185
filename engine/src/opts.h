/* Command line of cnfperf-engine: parsed and validated here, before anything
 * is opened, so a mistake costs one line on stderr and exit code 2. Kept
 * apart from main.c so the unit tests can call it without running a role. */
#ifndef CNFPERF_OPTS_H
#define CNFPERF_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/conf.h"

enum opts_result { OPTS_RUN, OPTS_HELP, OPTS_VERSION, OPTS_DESCRIBE, OPTS_IDLE, OPTS_ERROR };

struct parse;

/* The names a value is one of (--api, --poll, --nf): the i-th, NULL past the last. */
typedef const char *(*opts_words_fn)(size_t i);

/* One option every role and api shares: a row of opts_table.c's table, from which
 * getopt's tables and --help are made. Adding an option is adding a row (and
 * a setter when none of those there fits). Each api's own options are its
 * own table (struct api_opt in api/api.h) and join these. */
struct opt {
	const char *name;          /* --name */
	char letter;               /* -letter, or 0 */
	const char *value;         /* the value's name in --help; NULL (and no words): a flag */
	opts_words_fn words;       /* or the words it is one of, shown a|b|c */
	const char *help;          /* for --help; '\n' starts another line */
	const char *def;           /* the value when not given, set at the start and shown by --help */
	/* Checks arg (NULL for a flag) and stores it in cf; false after one line
	 * in the parse's error naming the option. NULL: --help, --version. */
	bool (*set)(struct parse *p, struct conf *cf, const char *arg);
	size_t at;                 /* the field of conf the shared setters write (offsetof) */
	double min, max;           /* and for numbers, the range they take */
	enum opts_result ends;     /* --help, --version, --describe: what parsing returns once it sees it */
};

/* The table: the i-th row, NULL past the last. */
const struct opt *opts_at(size_t i);

/* A row's kind of value, from its setter: flag, word (one of its words),
 * integer or seconds (from min to max), rate (PPS, 500k: min to max), name,
 * mac, ipv4, bucket (RATE,BUCKET[,QUEUE]), route; NULL for a setter without one. */
const char *opt_type(const struct opt *o);
bool opt_ranged(const struct opt *o);   /* its value is a number from min to max */

/* --describe: the document on stream (describe.c). */
void opts_describe(void *stream);

/* Fills cf; on OPTS_ERROR, err holds one line (no newline) naming the option.
 * Later options override earlier ones. argv is not modified. After OPTS_RUN
 * the caller frees cf->api_own. */
enum opts_result opts_parse(int argc, char **argv, struct conf *cf, char *err, size_t errlen);
void opts_usage(void *stream);

#endif
